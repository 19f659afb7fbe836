"""Inputs the users of peer tools bring (issue 21): MS MARCO / Pyserini 3-column runs, 2-column qrels,
ir_datasets' and ir_measures' namedtuples, ranx's Qrels and Run objects and .lz4 files, comma lists of metrics
in the Python API, and fusion ranks that follow the ``ties`` convention.

Every reader is checked against an oracle on the same data converted by hand: pytrec_eval (trec_eval 9's code)
or ranx's own evaluate and fuse, per query, to 1e-9. Bad input is a one-line error naming the file and line.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stagewise
from stagewise.errors import InputError
from stagewise.fusion import FusionOptions, fuse

pytrec_eval = pytest.importorskip("pytrec_eval")
ranx = pytest.importorskip("ranx")
ir_measures = pytest.importorskip("ir_measures")
ir_datasets = pytest.importorskip("ir_datasets")
lz4_frame = pytest.importorskip("lz4.frame")
pytestmark = pytest.mark.filterwarnings("ignore::Warning")

TOL = 1e-9
TREC = {"map": "map", "ndcg_cut_10": "ndcg@10", "P_5": "P@5", "recip_rank": "mrr", "recall_100": "recall@100"}
STAGEWISE = str(Path(sys.executable).with_name("stagewise"))


def random_data(seed: int, queries: int = 6, ties: bool = True) -> tuple[dict, dict]:
    """(qrels, run) as dicts: graded and negative labels, unjudged documents, tied scores where ``ties``."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(queries):
        pool = [f"d{i}" for i in rng.choice(60, size=30, replace=False)]
        judged = rng.choice(30, size=15, replace=False)
        qrels[f"q{q}"] = {pool[i]: int(rng.integers(-1, 4)) for i in judged}
        qrels[f"q{q}"][pool[judged[0]]] = 2  # a relevant document in every query
        size = int(rng.integers(5, 25))
        scores = rng.integers(0, 6, size=size) / 2 if ties else rng.normal(size=size)
        run[f"q{q}"] = {
            pool[i]: float(s) for i, s in zip(rng.choice(30, size=size, replace=False), scores, strict=True)
        }
    return qrels, run


def ranked(run: dict) -> dict[str, list[str]]:
    """Each query's documents in a fixed order (score descending, doc id descending): the ranks written out."""
    return {q: sorted(docs, key=lambda d: (docs[d], d.encode()), reverse=True) for q, docs in run.items()}


def pytrec(qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    return pytrec_eval.RelevanceEvaluator(qrels, set(TREC)).evaluate(run)


def assert_per_query(result: stagewise.EvalResult, oracle: dict[str, dict[str, float]], run_name: str) -> None:
    values = result.per_query(run_name)
    for trec_name, ours in TREC.items():
        for q, measures in oracle.items():
            assert values[ours][q] == pytest.approx(measures[trec_name], abs=TOL), (ours, q)


# ---------------------------------------------------------------- MS MARCO / Pyserini 3-column runs


@pytest.mark.parametrize("separator", ["\t", " "])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_three_column_run_equals_pytrec_eval_on_the_ranks(tmp_path, seed, separator):
    qrels, run = random_data(seed)
    order = ranked(run)
    path = tmp_path / "run.dev.small.txt"
    lines = [separator.join((q, d, str(i + 1))) for q, docs in order.items() for i, d in enumerate(docs)]
    rng = np.random.default_rng(seed)
    path.write_text("\n".join(lines[i] for i in rng.permutation(len(lines))) + "\n")  # ranks, not file order
    read = stagewise.read_run(path)
    assert read.score_from == "rank"
    assert read.rankings() == order
    # the oracle: pytrec_eval on scores that only order as the ranks do
    by_rank = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in order.items()}
    result = stagewise.evaluate(qrels, path, list(TREC.values()))
    assert_per_query(result, pytrec(qrels, by_rank), "run.dev.small.txt")
    assert any("ranks only" in note and "score = -rank" in note for note in result.notes())


def test_ms_marco_tsv_has_no_header_and_is_read_as_ranks(tmp_path):
    qrels, run = random_data(7, ties=False)
    order = ranked(run)
    (tmp_path / "run.tsv").write_text(
        "".join(f"{q}\t{d}\t{i + 1}\n" for q, ds in order.items() for i, d in enumerate(ds))
    )
    # MS MARCO's qrels.dev.tsv: 'qid 0 docid label', tab separated, no header
    (tmp_path / "qrels.tsv").write_text(
        "".join(f"{q}\t0\t{d}\t{v}\n" for q, ds in qrels.items() for d, v in ds.items())
    )
    result = stagewise.evaluate(tmp_path / "qrels.tsv", tmp_path / "run.tsv", list(TREC.values()))
    assert_per_query(result, pytrec(qrels, run), "run.tsv")
    # ranx on the same run, read by ranx itself from its own TREC writer
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), ["ndcg@10", "map"])
    assert result.means["run.tsv"]["ndcg@10"] == pytest.approx(theirs["ndcg@10"], abs=TOL)


def test_a_three_column_run_under_ties_rank_gives_the_same_numbers(tmp_path):
    qrels, run = random_data(4, ties=False)
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{q} {d} {i + 1}\n" for q, ds in ranked(run).items() for i, d in enumerate(ds)))
    default = stagewise.evaluate(qrels, path, "map,ndcg@10")
    by_rank = stagewise.evaluate(qrels, path, "map,ndcg@10", ties="rank")
    assert default.means == by_rank.means


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        ("q1\td1\t1\nq1\td2\tsecond\n", 2, "rank 'second' is not an integer"),
        ("q1 d1 1\nq1 d2 2.5\n", 2, "rank '2.5' is not an integer"),
        ("q1 d1 1\nq1 d2 2\nq1 Q0 d3 3 0.5 tag\n", 3, "found 6 field(s)"),
        ("q1 d1 1\nq1 d2\n", 2, "found 2 field(s)"),
        ("q1 d1 1\nq1 d2 0\nq1 d3 1\nq2 d1 1\n", 3, "rank 1 is given twice for query 'q1'"),  # qrels as a run
    ],
)
def test_a_bad_three_column_run_is_one_line_naming_file_and_line(tmp_path, text, line, said):
    path = tmp_path / "bad.run"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        stagewise.read_run(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: ") and said in message and "\n" not in message
    assert "query_id doc_id rank" in message  # what was expected


def test_a_bad_three_column_run_on_the_command_line_is_one_line(tmp_path):
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run.tsv").write_text("q1\td1\t1\nq1\td2\tx\n")
    done = subprocess.run(
        [STAGEWISE, "eval", "qrels", "run.tsv"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "run.tsv:2" in done.stderr and "rank 'x' is not an integer" in done.stderr


def test_the_trec_eval_drop_in_refuses_a_run_without_scores(tmp_path):
    """trec_eval itself refuses a 3-column run; the drop-in says so instead of printing numbers trec_eval never
    would (stagewise eval reads it, by rank)."""
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text("q1 d1 1\nq1 d2 2\n")
    done = subprocess.run(
        [STAGEWISE, "trec_eval", "qrels", "run"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "run:1" in done.stderr and "qid Q0 docid rank score tag" in done.stderr


# ---------------------------------------------------------------- 2-column qrels


@pytest.mark.parametrize("seed", [5, 6])
def test_two_column_qrels_are_every_pair_relevant(tmp_path, seed):
    qrels, run = random_data(seed)
    pairs = {q: {d: 1 for d, v in docs.items() if v > 0} for q, docs in qrels.items()}
    path = tmp_path / "qrels.pairs"
    path.write_text("".join(f"{q}\t{d}\n" for q, docs in pairs.items() for d in docs))
    read = stagewise.read_qrels(path)
    assert read.label_histogram() == {1: sum(len(d) for d in pairs.values())}
    result = stagewise.evaluate(path, run, list(TREC.values()))
    assert_per_query(result, pytrec(pairs, run), "run")


def test_bad_two_column_qrels_name_the_line(tmp_path):
    path = tmp_path / "qrels"
    path.write_text("q1 d1\nq1 d2\nq2 0 d3 1\n")
    with pytest.raises(InputError, match=r"qrels:3: found 4 field\(s\); expected 2 fields 'query_id doc_id'"):
        stagewise.read_qrels(path)


# ---------------------------------------------------------------- namedtuples and ranx objects


def test_ir_datasets_trec_qrels_and_ir_measures_scored_docs(tmp_path):
    from ir_datasets.formats import TrecQrel

    qrels, run = random_data(8)
    qrels_iter = (TrecQrel(q, d, v, "0") for q, docs in qrels.items() for d, v in docs.items())  # a generator
    scored = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    result = stagewise.evaluate(qrels_iter, scored, list(TREC.values()))
    assert_per_query(result, pytrec(qrels, run), "run")
    measured = [ir_measures.Qrel(q, d, v) for q, docs in qrels.items() for d, v in docs.items()]
    again = stagewise.evaluate(measured, iter(scored), list(TREC.values()))
    assert again.means == result.means
    # ir_measures' own numbers on its own records
    theirs = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, ir_measures.AP], measured, scored)
    assert again.means["run"]["ndcg@10"] == pytest.approx(theirs[ir_measures.nDCG @ 10], abs=TOL)
    assert again.means["run"]["map"] == pytest.approx(theirs[ir_measures.AP], abs=TOL)


def test_ranx_objects_equal_ranx_evaluate():
    qrels, run = random_data(9, ties=False)
    rq, rr = ranx.Qrels(qrels), ranx.Run(run, name="bm25")
    result = stagewise.evaluate(rq, rr, "ndcg@10,map,recall@100")
    assert list(result.means) == ["bm25"]  # the Run's own name
    theirs = ranx.evaluate(rq, rr, ["ndcg@10", "map", "recall@100"])
    for metric, value in theirs.items():
        assert result.means["bm25"][metric] == pytest.approx(value, abs=TOL)
    assert stagewise.read_run(rr).to_dict() == run
    assert stagewise.read_qrels(rq).label_histogram() == stagewise.read_qrels(qrels).label_histogram()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from("abc"), st.text("xyz019", min_size=1, max_size=3), st.integers(-2, 3)),
        min_size=1,
        max_size=30,
        unique_by=lambda t: (t[0], t[1]),
    )
)
def test_namedtuples_read_as_the_dict_of_the_same_judgements(rows):
    from ir_datasets.formats import TrecQrel

    as_dict: dict[str, dict[str, int]] = {}
    for q, d, v in rows:
        as_dict.setdefault(q, {})[d] = v
    read = stagewise.read_qrels([TrecQrel(q, d, v, "0") for q, d, v in rows])
    other = stagewise.read_qrels(as_dict)
    assert read.label_histogram() == other.label_histogram()
    assert list(read.query_ids) == list(other.query_ids)


@pytest.mark.parametrize(
    ("records", "said"),
    [
        ([], "is empty"),
        (["q1 d1 1"], "holds a str, not a record"),
        ([ir_measures.ScoredDoc("q", "d", 1.0), ("q", "e", 2.0)], "item 2 is a tuple"),
    ],
)
def test_bad_records_are_one_line(records, said):
    with pytest.raises(InputError, match=said) as info:
        stagewise.read_run(iter(records))
    assert "\n" not in str(info.value)


def test_records_without_the_columns_name_what_is_missing():
    from ir_datasets.formats import GenericDoc

    with pytest.raises(InputError, match=r"missing column\(s\) \['query_id', 'score'\]"):
        stagewise.read_run([GenericDoc("d1", "some text")])


# ---------------------------------------------------------------- lz4


def test_ranx_lz4_run_and_lz4_compressed_trec_files(tmp_path):
    qrels, run = random_data(10, ties=False)
    ranx.Run(run, name="dense").save(str(tmp_path / "dense.lz4"))
    assert (
        stagewise.read_run(tmp_path / "dense.lz4").to_dict()
        == ranx.Run.from_file(str(tmp_path / "dense.lz4")).to_dict()
    )
    text = "".join(f"{q} 0 {d} {v}\n" for q, docs in qrels.items() for d, v in docs.items())
    (tmp_path / "qrels.txt.lz4").write_bytes(lz4_frame.compress(text.encode()))
    records = "".join(
        json.dumps({"qid": q, "docid": d, "score": s}) + "\n" for q, ds in run.items() for d, s in ds.items()
    )
    (tmp_path / "run.jsonl.lz4").write_bytes(lz4_frame.compress(records.encode()))
    result = stagewise.evaluate(
        tmp_path / "qrels.txt.lz4", [tmp_path / "dense.lz4", tmp_path / "run.jsonl.lz4"], list(TREC.values())
    )
    assert_per_query(result, pytrec(qrels, run), "dense.lz4")
    assert result.means["dense.lz4"] == result.means["run.jsonl.lz4"]


def test_lz4_bomb_and_truncated_lz4_are_refused(tmp_path):
    bomb = tmp_path / "bomb.run.lz4"
    bomb.write_bytes(lz4_frame.compress(bytes(64 * 2**20)))
    with pytest.raises(InputError, match=r"expands more than 100 times its compressed size .* of lz4 data"):
        stagewise.read_run(bomb)
    cut = tmp_path / "cut.run.lz4"
    cut.write_bytes(lz4_frame.compress(b"q1 Q0 d1 1 2.5 t\n" * 100)[:-6])
    with pytest.raises(InputError, match="corrupt LZ4 data"):
        stagewise.read_run(cut)
    junk = tmp_path / "junk.run.lz4"
    junk.write_bytes(lz4_frame.compress(b"q1 Q0 d1 1 2.5 t\n") + b"junk")
    with pytest.raises(InputError, match="trailing bytes after the last frame"):
        stagewise.read_run(junk)


def test_gzip_still_reads_as_before(tmp_path):
    (tmp_path / "run.gz").write_bytes(gzip.compress(b"q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\n"))
    assert stagewise.read_run(tmp_path / "run.gz").to_dict() == {"q1": {"d1": 2.5, "d2": 1.5}}


# ---------------------------------------------------------------- comma lists in the Python API


def test_comma_lists_as_the_command_line_reads_them(tmp_path):
    qrels, run = random_data(11)
    listed = stagewise.evaluate(qrels, run, "map,ndcg@10,P@5(rel=2),ndcg_cut.10,20")
    assert listed.metric_names == ["map", "ndcg@10", "P@5(rel=2)", "ndcg_cut_10", "ndcg_cut_20"]
    one_by_one = stagewise.evaluate(qrels, run, ["map", "ndcg@10", "P@5(rel=2)", "ndcg_cut_10", "ndcg_cut_20"])
    assert listed.means == one_by_one.means
    assert stagewise.evaluate(qrels, run, ["map,ndcg@10"]).means == stagewise.evaluate(qrels, run, "map,ndcg@10").means
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10,20"}).evaluate(run)
    for q, values in oracle.items():
        assert listed.per_query("run")["ndcg_cut_20"][q] == pytest.approx(values["ndcg_cut_20"], abs=TOL)


def test_comma_lists_name_a_bad_piece():
    with pytest.raises(stagewise.MetricError, match="bare number"):
        stagewise.evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, "map,10")


# ---------------------------------------------------------------- fusion ties


def colliding_runs(seed: int) -> list[dict]:
    """Runs in which pairs of documents' scores differ only beyond single precision."""
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(3):
        run = {}
        for q in range(8):
            docs = rng.choice(40, size=20, replace=False)
            base = rng.normal(size=20)
            base[1::2] = base[0::2] + rng.choice([1e-9, -1e-9, 3e-10], size=10)
            run[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, base, strict=True)}
        runs.append(run)
    return runs


def max_gap(ours: dict, theirs: dict) -> float:
    assert {q: set(d) for q, d in ours.items()} == {q: set(d) for q, d in theirs.items()}
    return max(abs(ours[q][d] - theirs[q][d]) for q in theirs for d in theirs[q])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("method", "params"), [("rrf", {"rrf_k": 60}), ("isr", {}), ("bordafuse", {})])
def test_docid_double_reproduces_ranx_on_scores_that_collide_in_single_precision(seed, method, params):
    runs = colliding_runs(seed)
    theirs = ranx.fuse(
        [ranx.Run(r) for r in runs], method=method, params={("k" if k == "rrf_k" else k): v for k, v in params.items()}
    ).to_dict()
    ours = fuse(runs, method, ties="docid-double", **params)
    assert max_gap(ours.to_dict(), theirs) <= TOL
    assert ours.fusion["input_ties"] == "docid-double" and "double precision" in ours.fusion["input_ranks"]
    default = fuse(runs, method, **params)  # trec_eval's single-precision order: not ranx's on these runs
    assert max_gap(default.to_dict(), theirs) > 1e-6
    assert "input_ties" not in default.fusion


def test_default_ranks_are_the_single_precision_order():
    runs = colliding_runs(3)
    ours = fuse(runs, "rrf").to_dict()
    expected: dict[str, dict[str, float]] = {}
    for run in runs:  # a naive RRF over each list in trec_eval's order (float32 score desc, doc id desc)
        for q, docs in run.items():
            order = sorted(docs, key=lambda d: (np.float32(docs[d]), d.encode()), reverse=True)
            for i, d in enumerate(order):
                expected.setdefault(q, {}).setdefault(d, 0.0)
                expected[q][d] += 1 / (60 + i + 1)
    assert max_gap(ours, expected) <= TOL


def test_ties_rank_reads_the_rank_column_and_depth_follows_the_convention():
    runs = colliding_runs(4)
    rank_runs = []
    for run in runs:
        frame = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
        rank_runs.append(ir_runs := {"query_id": [], "doc_id": [], "score": [], "rank": []})
        for q, docs in run.items():
            for i, d in enumerate(sorted(docs, key=lambda d: -docs[d])):
                for key, value in zip(ir_runs, (q, d, docs[d], i + 1), strict=True):
                    ir_runs[key].append(value)
        assert len(frame) == len(ir_runs["doc_id"])
    import polars as pl

    frames = [pl.DataFrame(r) for r in rank_runs]
    by_rank = fuse(frames, "rrf", ties="rank", depth=5).to_dict()
    by_double = fuse(runs, "rrf", ties="docid-double", depth=5).to_dict()
    assert max_gap(by_rank, by_double) <= TOL
    with pytest.raises(stagewise.ConventionError, match="rank column"):
        fuse(runs, "rrf", ties="rank")


def test_fusion_options_carry_ties_in_their_spelling():
    options = FusionOptions("rrf", ties="docid-double")
    assert str(options) == "rrf(rrf_k=60,ties=docid-double)"
    assert FusionOptions.parse(str(options)) == options
    assert str(FusionOptions("rrf")) == "rrf(rrf_k=60)"
    with pytest.raises(stagewise.ConventionError, match="unknown tie convention 'float'"):
        FusionOptions("rrf", ties="float")


def test_fuse_command_ties_changes_the_fused_run(tmp_path):
    runs = colliding_runs(5)
    for i, run in enumerate(runs):
        stagewise.write_run(stagewise.read_run(run), tmp_path / f"r{i}.run")
    names = [f"r{i}.run" for i in range(len(runs))]
    for ties in ("docid", "docid-double"):
        done = subprocess.run(
            [STAGEWISE, "fuse", *names, "--method", "rrf", "--ties", ties, "-o", f"{ties}.run"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    theirs = ranx.fuse([ranx.Run(r) for r in runs], method="rrf", params={"k": 60}).to_dict()
    assert max_gap(stagewise.read_run(tmp_path / "docid-double.run").to_dict(), theirs) <= 1e-6  # %.6g-ish text
    assert (tmp_path / "docid.run").read_bytes() != (tmp_path / "docid-double.run").read_bytes()
    meta = json.loads((tmp_path / "docid-double.run.meta.json").read_text())
    assert meta["input_ties"] == "docid-double"


def test_a_table_with_ranks_and_no_scores_is_ordered_by_rank(tmp_path):
    import polars as pl

    qrels, run = random_data(12, ties=False)
    order = ranked(run)
    rows = [(q, d, i + 1) for q, docs in order.items() for i, d in enumerate(docs)]
    (tmp_path / "run.csv").write_text("qid,docid,rank\n" + "".join(f"{q},{d},{r}\n" for q, d, r in rows[::-1]))
    frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "rank"], orient="row")
    for source in (tmp_path / "run.csv", frame):
        read = stagewise.read_run(source)
        assert read.score_from == "rank" and read.rankings() == order
    result = stagewise.evaluate(qrels, frame, list(TREC.values()))
    assert_per_query(result, pytrec(qrels, run), "run")
    (tmp_path / "bad.csv").write_text("qid,docid,rank\nq1,d1,1\nq1,d2,two\n")
    with pytest.raises(InputError, match=r"bad.csv:3: rank 'two' is not an integer"):
        stagewise.read_run(tmp_path / "bad.csv")


@pytest.mark.parametrize("engine", ["local", "stream"])
def test_every_engine_notes_a_run_of_ranks_only(tmp_path, engine):
    qrels, run = random_data(13, ties=False)
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{q}\t{d}\t{i + 1}\n" for q, ds in ranked(run).items() for i, d in enumerate(ds)))
    result = stagewise.evaluate(qrels, path, list(TREC.values()), engine=engine)
    assert_per_query(result, pytrec(qrels, run), "run.txt")
    assert "run.txt: no scores, ranks only (qid docid rank): ordered by rank, score = -rank" in result.notes()


def test_the_json_of_an_evaluation_says_a_run_was_ordered_by_rank(tmp_path):
    (tmp_path / "run.txt").write_text("q1 d1 1\nq1 d2 2\n")
    report = stagewise.evaluate({"q1": {"d2": 1}}, [tmp_path / "run.txt", {"q1": {"d2": 1.0}}], "map").to_dict()
    assert report["conventions"]["ordered_by_rank_only"] == {"run.txt": "no scores in the input: score = -rank"}
    plain = stagewise.evaluate({"q1": {"d2": 1}}, {"q1": {"d2": 1.0}}, "map").to_dict()
    assert "ordered_by_rank_only" not in plain["conventions"]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    st.dictionaries(
        st.text("qrs01", min_size=1, max_size=3),
        st.lists(st.text("abcxyz0189", min_size=1, max_size=4), min_size=1, max_size=12, unique=True),
        min_size=1,
        max_size=5,
    ),
    st.randoms(use_true_random=False),
    st.sampled_from(["\t", " "]),
)
def test_a_three_column_run_ranks_as_written_in_any_line_order(tmp_path, rankings, shuffler, separator):
    lines = [f"{q}{separator}{d}{separator}{i + 1}\n" for q, docs in rankings.items() for i, d in enumerate(docs)]
    shuffler.shuffle(lines)
    path = tmp_path / "run.txt"
    path.write_text("".join(lines))
    read = stagewise.read_run(path)
    assert read.rankings() == rankings and read.score_from == "rank"


def test_a_trec_file_start_is_read_once_on_the_parse_path(tmp_path, monkeypatch):
    """The 3-column / 2-column check and the shape checks share one read of the file's start."""
    from stagewise.data import shape

    reads = []
    head_of = shape.head_of
    monkeypatch.setattr(shape, "head_of", lambda path: reads.append(path) or head_of(path))
    (tmp_path / "run").write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n")
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    stagewise.read_run(tmp_path / "run")
    stagewise.read_qrels(tmp_path / "qrels")
    assert len(reads) == 2
