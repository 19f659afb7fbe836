"""The local engine's joined parse (``engines/_fast_eval.py``, ``parse_joined`` in ``_native/trecparse.c``) gives
what the general reader gives, bit for bit: per-query values, means, missing and run-only queries, errors and
warnings; and it reads only the runs it may.

The oracle is the general path (every run read whole, ``Run.from_columns``), itself checked against trec_eval,
pytrec_eval and ir_measures elsewhere; the real TREC 2003 Robust runs are also compared with pytrec_eval here.
Random runs mix numeric and other query ids (numeric ids are not in byte order), ties in double and only in
single precision, repeated documents, queries in pieces, rising scores, missing and run-only queries.
"""

from __future__ import annotations

import gzip
import math
import os
import random
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stagewise
from stagewise._native import parsing
from stagewise.data.readers import read_qrels
from stagewise.engines import _local
from stagewise.engines._fast_eval import joinable, read_joined
from stagewise.metrics.context import Conventions, JoinedRun

pytestmark = pytest.mark.skipif(not parsing.available(), reason="the compiled TREC parser is not built")

METRICS = ["map", "ndcg@10", "ndcg", "recall@5", "mrr@10", "P@3", "Rprec", "bpref", "judged@5", "num_ret",
           "num_rel_ret", "err@5", "success@1", "infAP", "P@2(rel=2)"]  # fmt: skip
ROBUST = Path(__file__).resolve().parents[2] / "shared" / "data" / "trec_robust03_runs"


def outcome(qrels: Path, run: Path, fast: bool, metrics: list[str] = METRICS, **conventions) -> tuple:
    """What evaluate gives (means, per-query values, query lists), or the error it raises, by either path."""
    try:
        with mock.patch.object(_local, "joinable", joinable if fast else (lambda *a: False)):
            result = stagewise.evaluate(str(qrels), {"run": str(run)}, metrics, **conventions)
    except Exception as error:  # the same error, word for word, is what is compared
        return type(error).__name__, str(error)
    scores = result.runs[0]
    values = {m: scores.values[m].tolist() for m in metrics}
    return (result.means, values, scores.query_ids.tolist(), scores.missing_queries, scores.run_only_queries,
            scores.num_ret.tolist())  # fmt: skip


def same(a: tuple, b: tuple) -> bool:
    """Equal outcomes, NaN equal to NaN (a mean over no query)."""
    if len(a) != len(b) or isinstance(a[0], str) or isinstance(b[0], str):
        return a == b
    flat = [(x, y) for m in a[1] for x, y in zip(a[1][m], b[1][m], strict=True)]
    flat += [(a[0]["run"][m], b[0]["run"][m]) for m in a[0]["run"]]
    return a[2:] == b[2:] and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in flat)


# Scores drawn so that ties are common: equal doubles, doubles equal only in single precision, -0.0 and 0.0.
SCORES = [3.25, 2.0, 1.0, 1.0 + 1e-12, 0.5, 0.0, -0.0, -1.5, 1e39, 7e38]


@st.composite
def worlds(draw: st.DrawFn) -> dict:
    numeric = draw(st.booleans())
    n_queries = draw(st.integers(1, 6))
    names = [str(i * 7 + 1) if numeric else f"q{i}" for i in range(n_queries + 2)]  # 8, 15, 22: not byte order
    pool = [f"d{i}" for i in range(12)] + ["D1", "d1x", "d"]
    lines, clean = [], True  # clean: a run the joined parse must take
    for query in draw(st.permutations(names[:n_queries])):
        unique = draw(st.integers(0, 9)) > 0
        docs = draw(st.lists(st.sampled_from(pool), max_size=9, unique=unique))
        scores = sorted((draw(st.sampled_from(SCORES)) for _ in docs), reverse=True)
        ranks = list(range(1, len(docs) + 1))
        if draw(st.integers(0, 5)) == 0:
            ranks.reverse()  # a rank column against the scores: the checks warn
        with np.errstate(over="ignore"):  # ties may put the ranks out of order: the checks would warn
            distinct = len(set(np.array(scores, dtype=np.float32).tolist())) == len(scores)
        clean &= len(set(docs)) == len(docs) and ranks == sorted(ranks) and distinct
        lines += [f"{query} Q0 {d} {r} {s!r} tag" for d, r, s in zip(docs, ranks, scores, strict=True)]
    if draw(st.integers(0, 6)) == 0:
        random.Random(draw(st.integers(0, 9))).shuffle(lines)  # queries in pieces, scores rising
        clean = False
    judged = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
    qrels = [
        f"{query} 0 {doc} {draw(st.sampled_from([-1, 0, 1, 2, 3]))}"
        for query in judged
        for doc in draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6, unique=True))
    ]
    conventions = {
        "missing": draw(st.sampled_from(["zero", "skip", "error"])),
        "relevance_level": draw(st.sampled_from([1, 2])),
        "judged_only": draw(st.booleans()),
        "max_ret": draw(st.sampled_from([None, 3])),
        "duplicates": draw(st.sampled_from(["error", "first", "best"])),  # read_run's policy, not a convention
    }
    return {"run": lines, "qrels": qrels, "conventions": conventions, "clean": clean and bool(lines)}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(world=worlds())
def test_the_joined_parse_gives_the_general_paths_outcome(world: dict, tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("\n".join(world["run"]) + "\n")
    qrels.write_text("\n".join(world["qrels"]) + "\n")
    fast = outcome(qrels, run, True, **world["conventions"])
    assert same(fast, outcome(qrels, run, False, **world["conventions"])), (fast, world)
    if world["clean"]:  # so the comparison above was not the general path against itself
        assert isinstance(read_joined(read_qrels(str(qrels)), run, "run"), JoinedRun)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(world=worlds(), parts=st.integers(2, 8))
def test_a_run_read_in_parts_by_threads_gives_the_general_paths_outcome(
    world: dict, parts: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # large files are mapped and read in parts cut where a query ends, each by its own thread; here even these
    # small ones are, in 2 to 8 parts (some empty), whatever the machine's cores
    monkeypatch.setattr(parsing, "JOINED_PART_BYTES", -parts)
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("\n".join(world["run"]) + "\n")
    qrels.write_text("\n".join(world["qrels"]) + "\n")
    fast = outcome(qrels, run, True, **world["conventions"])
    assert same(fast, outcome(qrels, run, False, **world["conventions"])), (fast, world)
    if world["clean"]:
        assert isinstance(read_joined(read_qrels(str(qrels)), run, "run"), JoinedRun)


@pytest.mark.parametrize("parts", [2, 3, 8])
def test_a_query_found_again_in_a_later_part_is_declined_at_its_line(
    tmp_path: Path, parts: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parsing, "JOINED_PART_BYTES", -parts)
    lines = [f"{q} Q0 d{i} {i} {100 - i} t" for q in ("1", "2", "3", "4") for i in range(1, 30)]
    lines.append("2 Q0 late 99 0.5 t")  # query 2 again, after 3 and 4: the rows of a query are not contiguous
    got = joined(tmp_path, "\n".join(lines) + "\n")
    assert got == f"the run's rows of a query are not contiguous (line {len(lines)})", got
    # comment lines inside a query do not cut it in two, wherever the parts fall
    commented = [line for k, line in enumerate(lines[:-1]) for line in ([line, "# note"] if k % 7 == 3 else [line])]
    got = joined(tmp_path, "\n".join(commented) + "\n")
    assert isinstance(got, JoinedRun) and got.lengths.tolist() == [29, 29, 29, 29]


def joined(tmp_path: Path, run_text: str, qrels_text: str = "1 0 a 1\n1 0 b 2\n2 0 c 1\n") -> JoinedRun | str:
    (tmp_path / "run.trec").write_text(run_text)
    (tmp_path / "qrels.txt").write_text(qrels_text)
    return read_joined(read_qrels(str(tmp_path / "qrels.txt")), tmp_path / "run.trec", "run")


def test_a_grouped_run_in_score_order_is_joined_keeping_only_the_judged_rows(tmp_path: Path) -> None:
    # query 10 comes before 2 in byte order; in query 1, b and a tie (in single precision) and go doc id descending
    got = joined(tmp_path, "2 Q0 x 1 5 t\n2 Q0 c 2 4 t\n10 Q0 y 1 1 t\n1 Q0 a 1 3.0 t\n1 Q0 b 2 3.0000000001 t\n")
    assert isinstance(got, JoinedRun)
    assert got.query_ids.tolist() == ["1", "10", "2"] and got.lengths.tolist() == [2, 1, 2] and len(got) == 5
    codes, ranks, rows = (column.tolist() for column in got.judged)
    qrels = got.qrels
    assert [(got.query_ids[c], r, qrels.docs.value(j)) for c, r, j in zip(codes, ranks, rows, strict=True)] == [
        ("2", 2, "c"),
        ("1", 1, "b"),
        ("1", 2, "a"),
    ]


@pytest.mark.parametrize(
    ("run_text", "reason"),
    [
        ("1 Q0 a 1 1 t\n2 Q0 c 1 1 t\n1 Q0 b 2 0.5 t\n", "not contiguous"),
        ("1 Q0 a 1 1 t\n1 Q0 b 2 2 t\n", "scores rise"),
        ("1 Q0 a 1 2 t\n1 Q0 a 2 1 t\n", "repeats"),
        ("1 Q0 a 1 2 t\n1 Q0 b 2 nan t\n", "not a finite number"),
        ("1 Q0 a 1 2 t\n1 Q0 b 2\n", "fewer than 6 fields"),
        ("1 Q0 a 1 2 t\n1 Q0 b\xe9 2 1 t\n", "non-ASCII"),
        ("1 Q0 a 3 3 t\n1 Q0 b 2 2 t\n1 Q0 c 1 1 t\n", "rank column rises"),
        ("1\ta\t1\n", "6-column"),
    ],
)
def test_what_the_joined_parse_declines(tmp_path: Path, run_text: str, reason: str) -> None:
    got = joined(tmp_path, run_text)
    assert isinstance(got, str) and reason in got, got
    # and the general path then gives the same as before: here, the same outcome with the joined parse allowed
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.trec"
    assert same(outcome(qrels, run, True, ["map", "P@1"]), outcome(qrels, run, False, ["map", "P@1"]))


def test_bad_lines_are_the_general_readers_errors_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("1 0 a 1\n")
    (tmp_path / "run.trec").write_text("1 Q0 a 1 2 t\n1 Q0 b 2 x t\n")
    fast = outcome(tmp_path / "qrels.txt", tmp_path / "run.trec", True, ["map"])
    assert fast[0] == "InputError" and "run.trec:2: score 'x'" in fast[1]
    assert fast == outcome(tmp_path / "qrels.txt", tmp_path / "run.trec", False, ["map"])


def test_only_plain_trec_files_under_conventions_that_need_nothing_else_are_joinable(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("1 0 a 1\n")
    (tmp_path / "run.trec").write_text("1 Q0 a 1 2 t\n")
    with gzip.open(tmp_path / "run.trec.gz", "wt") as fh:
        fh.write("1 Q0 a 1 2 t\n")
    qrels, plain = read_qrels(str(tmp_path / "qrels.txt")), str(tmp_path / "run.trec")
    assert joinable(qrels, plain, Conventions())
    assert not joinable(qrels, plain, Conventions(ties="input"))
    assert not joinable(qrels, plain, Conventions(ignore_self=True))
    assert not joinable(qrels, str(tmp_path / "run.trec.gz"), Conventions())
    assert not joinable(qrels, {"1": {"a": 2.0}}, Conventions())


def test_the_command_warns_the_same_either_way(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from stagewise.cli import app

    (tmp_path / "qrels.txt").write_text("1 0 a 1\n2 0 b 1\n")
    # scores rise with the rank in the file's first lines, and the queries match none of the qrels'
    (tmp_path / "run.trec").write_text("".join(f"{q} Q0 d{r} {r} {10 - r} t\n" for q in (7, 8) for r in (1, 2, 3)))
    args = ["eval", str(tmp_path / "qrels.txt"), str(tmp_path / "run.trec"), "-m", "map", "--format", "json"]
    runner = CliRunner()
    fast = runner.invoke(app, args)
    with mock.patch.object(_local, "joinable", lambda *a: False):
        general = runner.invoke(app, args)
    assert fast.exit_code == general.exit_code == 0
    assert fast.output == general.output


def robust_runs(tmp_path: Path) -> list[Path]:
    """The first four TREC 2003 Robust runs, unpacked (the joined parse reads plain files only)."""
    out = []
    for packed in sorted((ROBUST / "runs").glob("input.*.gz"))[:4]:
        out.append(tmp_path / packed.stem)
        out[-1].write_bytes(gzip.decompress(packed.read_bytes()))
    return out


@pytest.mark.skipif(not ROBUST.exists(), reason=f"the TREC 2003 Robust runs are not at {ROBUST}")
def test_real_robust03_runs_are_the_same_by_both_paths(tmp_path: Path) -> None:
    qrels = ROBUST / "robust03_qrels.txt"
    for run in robust_runs(tmp_path):
        assert isinstance(read_joined(read_qrels(str(qrels)), run, "run"), JoinedRun), run.name
        assert same(outcome(qrels, run, True, missing="skip"), outcome(qrels, run, False, missing="skip")), run.name


@pytest.mark.skipif(not ROBUST.exists(), reason=f"the TREC 2003 Robust runs are not at {ROBUST}")
def test_real_robust03_runs_by_the_joined_parse_agree_with_pytrec_eval(tmp_path: Path) -> None:
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("pytrec_eval's own extension aborts under the AddressSanitizer runtime (.ci/sanitize)")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = ROBUST / "robust03_qrels.txt"
    for run in robust_runs(tmp_path):
        fast = outcome(qrels, run, True, missing="skip")
        with qrels.open() as q, run.open() as r:
            judged, ranked = pytrec_eval.parse_qrel(q), pytrec_eval.parse_run(r)
        theirs = pytrec_eval.RelevanceEvaluator(judged, {"map", "ndcg_cut.10", "bpref"}).evaluate(ranked)
        for ours, name in (("map", "map"), ("ndcg@10", "ndcg_cut_10"), ("bpref", "bpref")):
            per_query = dict(zip(fast[2], fast[1][ours], strict=True))
            assert all(abs(per_query[q] - theirs[q][name]) < 1e-12 for q in theirs), (run.name, ours)


def test_eval_of_trec_files_to_json_imports_neither_polars_nor_pyarrow(tmp_path: Path) -> None:
    # their imports cost more CPU than the joined parse of a 250 MB run; the JSON path needs numpy only
    import subprocess
    import sys

    (tmp_path / "qrels.txt").write_text("1 0 a 1\n2 0 b 1\n")
    (tmp_path / "run.trec").write_text("1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n2 Q0 b 1 1 t\n")
    argv = [
        "stagewise",
        "eval",
        str(tmp_path / "qrels.txt"),
        str(tmp_path / "run.trec"),
        "-m",
        "map,ndcg@10",
        "--format",
        "json",
    ]
    script = (
        f"import sys; sys.argv = {argv!r}\n"
        "from stagewise.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('polars', 'pyarrow') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert '"map": 1.0' in done.stdout and done.stdout.strip().endswith("[]"), done.stdout + done.stderr


@pytest.mark.parametrize("length", [50, 51, 52, 53, 120])
def test_lines_near_and_past_the_64_byte_window_are_split_alike(tmp_path: Path, length: int) -> None:
    # a line's first 64 bytes are split with vector compares, a longer line byte by byte: both give the same
    long = ["a" * length, "b" * length, "a" * (length - 1) + "c"]  # lines of 12 + length bytes, all tied: b, a..c, a
    run = "".join(f"1 Q0 {doc} {rank} 2.5 t\n" for rank, doc in enumerate(long, 1)) + "1 Q0 z 4 1 t"  # no final \n
    got = joined(tmp_path, run, "".join(f"1 0 {doc} {label}\n" for label, doc in enumerate([*long, "z"], 1)))
    assert isinstance(got, JoinedRun) and len(got) == 4
    ranks = dict(zip(got.judged[2].tolist(), got.judged[1].tolist(), strict=True))
    qrels = got.qrels
    assert {qrels.docs.value(row): rank for row, rank in ranks.items()} == {long[1]: 1, long[2]: 2, long[0]: 3, "z": 4}
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.trec"
    assert same(outcome(qrels_path, run_path, True), outcome(qrels_path, run_path, False))


def test_a_run_large_enough_to_be_mapped_reads_as_the_same_run_held_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # files of 4 MB and more are mapped and read 16 MB at a time, their last lines copied into a padded buffer:
    # this one (~17 MB, no final newline) crosses a piece's end, inside a tie, and ends in a long line
    rng = random.Random(7)
    lines, run_dict = [], {}
    for q in range(1200):
        query = f"query-{q}"
        docs = rng.sample(range(10**6), 400)
        scores = sorted((round(rng.random() * 20, 2) for _ in docs), reverse=True)  # many ties
        run_dict[query] = {f"doc-{d:07d}": s for d, s in zip(docs, scores, strict=True)}
        lines += [f"{query} Q0 doc-{d:07d} {r} {s} tag" for r, (d, s) in enumerate(zip(docs, scores, strict=True), 1)]
        if q % 250 == 0:
            lines.append("# a comment line")
    last = lines.pop()
    long_doc = "x" * 90
    lines.append(last.replace("Q0 doc-", f"Q0 {long_doc}-"))
    run_dict["query-1199"] = {d.replace("doc-", f"{long_doc}-") if d == last.split()[2] else d: s
                              for d, s in run_dict["query-1199"].items()}  # fmt: skip
    text = "\n".join(lines)
    run = tmp_path / "run.trec"
    run.write_text(text)
    assert run.stat().st_size > 16 << 20
    qrels = tmp_path / "qrels.txt"
    judged = [(q, d) for q in rng.sample(sorted(run_dict), 300) for d in rng.sample(sorted(run_dict[q]), 5)]
    qrels.write_text("".join(f"{q} 0 {d} {rng.randint(0, 2)}\n" for q, d in judged) + f"query-1199 0 {long_doc}-x 1\n")

    # the compiled general parse, of the mapped file and of the same bytes in memory
    mapped, held = parsing.parse(str(run), 0), parsing.parse(text.encode(), 0)
    assert isinstance(mapped, dict) and mapped.keys() == held.keys()
    assert all(mapped[key] == held[key] for key in held)
    # the joined parse of the mapped file, in one part and in three (threads), against the run given as a dict
    metrics = ["map", "ndcg@10", "P@5", "recall@100", "mrr"]
    from_dict = stagewise.evaluate(str(qrels), {"run": run_dict}, metrics)
    for parts in (1, 3):
        monkeypatch.setattr(parsing, "JOINED_PART_BYTES", -parts)
        assert isinstance(read_joined(read_qrels(str(qrels)), run, "run"), JoinedRun)
        from_file = stagewise.evaluate(str(qrels), {"run": str(run)}, metrics)
        for metric in metrics:
            assert from_file.runs[0].values[metric].tolist() == from_dict.runs[0].values[metric].tolist(), metric


@pytest.mark.parametrize("repeat", [None, 3, 19_998])
def test_a_repeated_document_is_found_in_a_query_of_many_rows(tmp_path: Path, repeat: int | None) -> None:
    # the query's key table grows (an eighth full while small, half full past 65,536 slots) and is re-filled:
    # a repeat is still found wherever it falls, and a run without one is still joined
    docs = [f"d{i}" for i in range(20_000)]
    if repeat is not None:
        docs[-1] = docs[repeat]
    run = "".join(f"1 Q0 {doc} {rank} {20_000 - rank} t\n" for rank, doc in enumerate(docs, 1))
    got = joined(tmp_path, run, "1 0 d5 1\n1 0 d19998 1\n")
    if repeat is None:
        assert isinstance(got, JoinedRun) and len(got) == 20_000
        assert sorted(got.judged[1].tolist()) == [6, 19_999]
        assert len(stagewise.read_run(str(tmp_path / "run.trec"))) == 20_000  # the general reader's table too
    else:
        assert isinstance(got, str) and "repeats" in got, got
        with pytest.raises(stagewise.InputError, match=f"run.trec:20000: document 'd{repeat}' appears more than once"):
            stagewise.read_run(str(tmp_path / "run.trec"))
