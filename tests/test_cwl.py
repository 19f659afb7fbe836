"""cwl_eval's C/W/L user models (INST, INSQ, BPM, NERR8-11, SDCG) against the tools that define them.

Oracles: ir_measures 0.4.3's ``cwl_eval`` provider (which builds cwl_eval's rankings and calls its metric
classes), and cwl_eval 1.0.12's classes driven directly with rankings ordered here as trec_eval orders them (so
the default tie convention and the ``depth`` option are checked too), and the ``cwl-eval`` program on files
(binary qrels; it prints 4 decimals). Inputs are random, with tied scores,
graded labels 0-4 and negative labels; agreement is per query, to 1e-9. Hand-worked values check the formulas'
reading of the paper-level definitions.
"""

from __future__ import annotations

import logging
import random
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagewise
from stagewise.errors import MetricError
from stagewise.metrics.measures import FAMILIES, Measure, measure_notes

ir_measures = pytest.importorskip("ir_measures")
cwl_ruler = pytest.importorskip("cwl.ruler.cwl_ruler")
cwl_ranking = pytest.importorskip("cwl.ruler.ranking")
cwl_qrels = pytest.importorskip("cwl.seeker.trec_qrel_handler")

logging.getLogger("ir_measures.cwl_eval").disabled = True  # its gain-range warnings are expected here
logging.getLogger("cwl").disabled = True

SEEDS = (11, 12, 13)

# Every family, in ir_measures' spelling, with parameters off their defaults too.
SPELLINGS = [
    "INST(max_rel=4)",
    "INST(T=2.0,max_rel=4)",
    "INST(T=0.5,max_rel=3)",
    "INSQ(max_rel=4)",
    "INSQ(T=3.0,max_rel=2)",
    "BPM(max_rel=4)@5",
    "BPM(T=2.0,max_rel=4)@20",
    "BPM(T=0.5,max_rel=2)@1000",
    "NERR8(max_rel=4)@5",
    "NERR8(max_rel=2)@20",
    "NERR9(max_rel=4)@10",
    "NERR10(max_rel=4)",
    "NERR10(p=0.5,max_rel=3)",
    "NERR11(max_rel=4)",
    "NERR11(T=2.0,max_rel=4)",
    "SDCG(max_rel=4)@10",
    "SDCG(dcg='log2',max_rel=3)@5",
    "INST(min_rel=1,max_rel=3)",
    "NERR10(min_rel=1,max_rel=4)",
    "BPM(min_rel=2,max_rel=4,T=1.0)@10",
]


def make_data(seed: int, ties: bool) -> tuple[dict, dict]:
    """Qrels with labels -1..4 and a run of 1 to 40 results per query, its documents in a random input order;
    with ``ties`` scores have one decimal, so many collide. Every judged query is in the run."""
    rng = random.Random(seed)
    labels = [-1, 0, 0, 0, 1, 1, 2, 3, 4]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(1, 13):
        docs = [f"d{i:02d}" for i in range(50)]
        qrels[f"q{q}"] = {d: rng.choice(labels) for d in rng.sample(docs, rng.randint(1, 30))}
        returned = rng.sample(docs, rng.randint(1, 40))
        run[f"q{q}"] = {d: (round(rng.uniform(0, 1), 1) if ties else rng.uniform(0, 1)) for d in returned}
    return qrels, run


def ours(qrels: dict, run: dict, spelling: str, **conventions) -> dict[str, float]:
    result = stagewise.evaluate(qrels, run, [spelling], **conventions)
    scores = result.runs[0]
    return {str(q): float(v) for q, v in zip(scores.query_ids.tolist(), scores.values[spelling], strict=True)}


def ir_measures_values(qrels: dict, run: dict, spelling: str) -> dict[str, float]:
    measure = ir_measures.parse_measure(spelling)
    provider = ir_measures.providers.registry["cwl_eval"]
    assert provider.supports(measure), spelling
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {m.query_id: float(m.value) for m in provider.iter_calc([measure], qrels, run)}


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_ir_measures_spellings_give_ir_measures_numbers(spelling: str) -> None:
    """ir_measures' provider sorts each query's results by score (doubles), keeping the input order of equal
    scores: stagewise's ties="input"."""
    for seed in SEEDS:
        for tied in (False, True):
            qrels, run = make_data(seed, tied)
            theirs = ir_measures_values(qrels, run, spelling)
            got = ours(qrels, run, spelling, ties="input")
            assert set(theirs) == set(got)
            for q, value in theirs.items():
                assert got[q] == pytest.approx(value, abs=1e-9, rel=0), (spelling, seed, tied, q)


# -- cwl_eval's classes, driven directly ----------------------------------------------------------------------


class _Gains(cwl_qrels.TrecQrelHandler):
    """cwl_eval's gain handler holding gains given here (its file reader is not used)."""

    def __init__(self, gains: dict[str, dict[str, float]]) -> None:
        super().__init__(None)
        for q, docs in gains.items():
            for d, g in docs.items():
                self.put_value(q, d, g)


def trec_eval_order(scores: dict[str, float]) -> list[str]:
    """trec_eval's order: score descending compared as C floats, then doc id descending."""
    return sorted(scores, key=lambda d: (-float(np.float32(scores[d])), [-ord(c) for c in d]))


def cwl_metric(family: str, cutoff, options: dict):
    classes = {
        "inst": lambda: cwl_ruler.INSTCWLMetric(options.get("T", 1.0)),
        "insq": lambda: cwl_ruler.INSQCWLMetric(options.get("T", 1.0)),
        "bpm": lambda: cwl_ruler.BPMCWLMetric(options.get("T", 1.0), cutoff),
        "nerr8": lambda: cwl_ruler.NERReq8CWLMetric(cutoff),
        "nerr9": lambda: cwl_ruler.NERReq9CWLMetric(cutoff),
        "nerr10": lambda: cwl_ruler.NERReq10CWLMetric(options.get("p", 0.9)),
        "nerr11": lambda: cwl_ruler.NERReq11CWLMetric(options.get("T", 1.0)),
        "sdcg": lambda: cwl_ruler.NDCGCWLMetric(cutoff),
    }
    return classes[family]()


def cwl_direct(qrels: dict, run: dict, measure: Measure, max_rel: int) -> dict[str, float]:
    """cwl_eval on rankings in trec_eval's order, gains scaled as documented in stagewise.metrics.cwl, its
    depth (max_n) set to the measure's."""
    opts = dict(measure.options)
    low, depth = opts.get("min_rel", 0), opts.get("depth", 1000)
    gains = {
        q: {d: (min(max(max(label, 0), low), max_rel) - low) / (max_rel - low) for d, label in docs.items()}
        for q, docs in qrels.items()
    }
    handler = _Gains(gains)
    out = {}
    for q, scores in run.items():
        maker = cwl_ranking.RankingMaker(q, handler, max_n=depth)
        for d in trec_eval_order(scores):
            maker.add(d, "_")
        out[q] = float(cwl_metric(measure.family, measure.cutoff, opts).measure(maker.get_ranking()))
    return out


DIRECT = [
    "inst",
    "inst(T=3)",
    "insq(T=0.5,depth=7)",
    "inst(depth=3)",
    "bpm@4",
    "bpm(T=2,depth=6)@50",
    "nerr8@3",
    "nerr9@30(depth=12)",
    "nerr10(p=0.7)",
    "nerr11(T=2,depth=25)",
    "sdcg@10",
    "sdcg@5(min_rel=1)",
]


@pytest.mark.parametrize("name", DIRECT)
def test_stagewise_spellings_against_cwl_eval_in_trec_eval_order(name: str) -> None:
    """The default ties (trec_eval's, single precision), max_rel from the judgements, and depth cut or
    padded, each against cwl_eval's own classes."""
    for seed in SEEDS:
        qrels, run = make_data(seed, True)
        resolved = stagewise.evaluate(qrels, run, [name]).conventions_report()["metrics"][name]
        top = max(label for docs in qrels.values() for label in docs.values())
        assert resolved["max_rel"] == top  # the highest label of the judgements, stated in the JSON
        theirs = cwl_direct(qrels, run, Measure.parse(name), top)
        got = ours(qrels, run, name)
        for q, value in theirs.items():
            assert got[q] == pytest.approx(value, abs=1e-9, rel=0), (name, seed, q)


# -- hand-worked values ---------------------------------------------------------------------------------------


def test_hand_worked_values() -> None:
    """Labels 2, 2, 4, 0 at ranks 1-4 on a scale 0-4: gains 0.5, 0.5, 1, 0.

    - BPM(T=1)@3: the gain reaches T at rank 2, so the user reads 2 results: (0.5 + 0.5) / 2 = 0.5.
    - SDCG@2: (0.5 / 1 + 0.5 / log2 3) / (1 + 1 / log2 3).
    - NERR8@2: C(1) = 1 - 0.5, so P = (1, 0.5): (0.5 + 0.5 * 0.5) / 1.5 = 0.5.
    - NERR10(p=0.5) at depth 2: P = (1, 0.25): (0.5 + 0.25 * 0.5) / 1.25 = 0.5.
    """
    qrels = {"q": {"a": 2, "b": 2, "c": 4, "d": 0}}
    run = {"q": {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6}}
    names = ["BPM(T=1)@3", "SDCG@2", "NERR8@2", "nerr10(p=0.5,depth=2)"]
    means = stagewise.evaluate(qrels, run, names).means["run"]
    assert means["BPM(T=1)@3"] == pytest.approx(0.5, abs=1e-15)
    third = 1 / np.log2(3)
    assert means["SDCG@2"] == pytest.approx((0.5 + 0.5 * third) / (1 + third), abs=1e-15)
    assert means["NERR8@2"] == pytest.approx(0.5, abs=1e-15)
    assert means["nerr10(p=0.5,depth=2)"] == pytest.approx(0.5, abs=1e-15)


def test_sdcg_is_dcg_over_an_all_gain_one_ranking() -> None:
    """SDCG@k = DCG@k (linear gains, label/max) / sum of 1/log2(i + 1) for i = 1..k, on any ranking."""
    qrels, run = make_data(21, False)
    sdcg = ours(qrels, run, "sdcg@10(max_rel=4)")
    dcg = ours({q: {d: max(label, 0) for d, label in docs.items()} for q, docs in qrels.items()}, run, "dcg@10")
    norm = sum(1 / np.log2(i + 1) for i in range(1, 11))
    for q in sdcg:
        assert sdcg[q] == pytest.approx(dcg[q] / 4 / norm, abs=1e-12)


# -- parsing, notes and errors ----------------------------------------------------------------------------------


def test_every_cwl_name_of_ir_measures_parses_to_its_family() -> None:
    for name in ("INST", "INSQ", "NERR10", "NERR11"):
        assert Measure.parse(name).family == name.lower()
        assert name.lower() in FAMILIES
    for name in ("BPM", "NERR8", "NERR9", "SDCG"):
        assert str(Measure.parse(f"{name}@10")) == f"{name.lower()}@10"
        with pytest.raises(MetricError, match="needs a cutoff"):
            Measure.parse(name)
    assert str(Measure.parse("INST(T=2,max_rel=3)")) == "inst(T=2,max_rel=3)"
    assert str(Measure.parse("NERR10(p=0.8)")) == "nerr10(p=0.8)"


def test_parameters_reach_the_notes_and_the_json() -> None:
    qrels, run = make_data(5, False)
    result = stagewise.evaluate(qrels, run, ["INST(T=2)", "BPM(max_rel=2)@10", "NERR10(p=0.5,depth=50)"])
    metrics = result.conventions_report()["metrics"]
    gain_rule = "(label clipped to [min_rel, max_rel] - min_rel) / (max_rel - min_rel), unjudged 0 (cwl_eval)"
    assert metrics["INST(T=2)"] == {
        "T": 2.0,
        "min_rel": 0,
        "max_rel": 4,
        "depth": 1000,
        "gain": gain_rule,
        "aggregate": "arithmetic mean",
    }
    assert all(m["gain"] == gain_rule for m in metrics.values())  # the gain rule is stated for every C/W/L measure
    assert metrics["BPM(max_rel=2)@10"]["max_rel"] == 2 and metrics["BPM(max_rel=2)@10"]["T"] == 1.0
    assert metrics["NERR10(p=0.5,depth=50)"]["p"] == 0.5 and metrics["NERR10(p=0.5,depth=50)"]["depth"] == 50
    notes = "\n".join(result.notes())
    assert "INST(T=2): max_rel=4 (from the judgements)" in notes
    assert "BPM(max_rel=2)@10: max_rel" not in notes  # given, not taken from the data
    assert measure_notes([("inst", Measure.parse("inst(max_rel=3)"))]) == ["inst: max_rel=3 (from the judgements)"]


@pytest.mark.parametrize(
    ("spelling", "words"),
    [
        ("INST(T=0)", "must be a number > 0"),
        ("NERR10(p=1.5)", "must be a number in (0, 1]"),
        ("inst(depth=0)", "must be an int >= 1"),
        ("SDCG(dcg='exp-log2')@10", "one of log2"),
        ("BPM(K=1000)@10", "has no option 'K'"),
        ("NERR8(p=0.8)@10", "has no option 'p'"),
    ],
)
def test_bad_parameters_are_refused_with_the_rule(spelling: str, words: str) -> None:
    with pytest.raises(MetricError) as error:
        Measure.parse(spelling)
    assert words in str(error.value)


def test_a_scale_without_room_is_refused_before_measuring() -> None:
    qrels, run = make_data(1, False)
    with pytest.raises(MetricError, match="min_rel < max_rel"):
        stagewise.evaluate(qrels, run, ["inst(min_rel=3,max_rel=3)"])
    zeros = {q: dict.fromkeys(docs, 0) for q, docs in qrels.items()}
    result = stagewise.evaluate(zeros, run, ["inst"])  # every label 0: the scale is 0..1, every gain 0
    assert result.conventions_report()["metrics"]["inst"]["max_rel"] == 1
    assert result.means["run"]["inst"] == 0.0


def test_blocks_give_the_same_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel walks queries in blocks of BLOCK_CELLS // depth: one query per block agrees with one block."""
    from stagewise.metrics import cwl

    qrels, run = make_data(3, True)
    names = ["inst", "bpm@10", "nerr11(T=2)"]
    whole = stagewise.evaluate(qrels, run, names).runs[0].values
    monkeypatch.setattr(cwl, "BLOCK_CELLS", 1000)
    split = stagewise.evaluate(qrels, run, names).runs[0].values
    for name in names:
        np.testing.assert_array_equal(whole[name], split[name])


# -- invariants ---------------------------------------------------------------------------------------------------

_LABELS = st.dictionaries(st.sampled_from([f"d{i}" for i in range(10)]), st.integers(-1, 3), min_size=1)
_SCORES = st.dictionaries(st.sampled_from([f"d{i}" for i in range(14)]), st.sampled_from([0.1, 0.5, 0.9]), min_size=1)


@settings(max_examples=40, deadline=None)
@given(labels=_LABELS, scores=_SCORES, k=st.integers(1, 15), t=st.sampled_from([0.5, 1.0, 2.5]))
def test_values_are_expected_gains_and_agree_with_ir_measures(labels: dict, scores: dict, k: int, t: float) -> None:
    """Each value is a weighted mean of gains in [0, 1], so it lies in [0, 1]; a ranking of only top-label
    results gains 1 on the truncated models; and every value is ir_measures' (ties="input")."""
    qrels, run = {"q": labels}, {"q": scores}
    names = [f"INST(T={t},max_rel=3)", f"BPM(T={t},max_rel=3)@{k}", f"NERR8(max_rel=3)@{k}", f"SDCG(max_rel=3)@{k}"]
    names += [f"NERR11(T={t},max_rel=3)", "INSQ(max_rel=3)", "NERR10(p=0.8,max_rel=3)"]
    result = stagewise.evaluate(qrels, run, names, ties="input")
    for name in names:
        value = float(result.runs[0].values[name][0])
        assert -1e-12 <= value <= 1 + 1e-12, name
        assert value == pytest.approx(ir_measures_values(qrels, run, name)["q"], abs=1e-9, rel=0), name
    perfect = {"q": {f"x{i}": 3 for i in range(k)}}
    best = {"q": {f"x{i}": 1.0 - i / 100 for i in range(k)}}
    values = stagewise.evaluate(perfect, best, [f"BPM(T={t})@{k}", f"NERR8@{k}", f"SDCG@{k}"]).means["run"]
    assert values[f"SDCG@{k}"] == pytest.approx(1.0, abs=1e-12)
    assert values[f"BPM(T={t})@{k}"] == pytest.approx(1.0, abs=1e-12)
    assert values[f"NERR8@{k}"] == pytest.approx(1.0, abs=1e-12)


# -- cwl_eval's own command line ----------------------------------------------------------------------------------

# (metrics file line, stagewise spelling); cwl_eval's command line reads each qrels label as the gain itself
# (labels in [0, 1]), so on binary qrels it is max_rel=1.
CLI_METRICS = [
    ("INSTCWLMetric(1.0)", "inst"),
    ("INSTCWLMetric(2.0)", "inst(T=2)"),
    ("INSQCWLMetric(1.0)", "insq"),
    ("BPMCWLMetric(1.0,10)", "bpm@10"),
    ("NERReq8CWLMetric(5)", "nerr8@5"),
    ("NERReq9CWLMetric(5)", "nerr9@5"),
    ("NERReq10CWLMetric(0.8)", "nerr10(p=0.8)"),
    ("NERReq11CWLMetric(2.0)", "nerr11(T=2)"),
    ("NDCGCWLMetric(10)", "sdcg@10"),
]


def test_cwl_eval_command_line_on_binary_qrels(tmp_path) -> None:
    """The ``cwl-eval`` program on files: binary qrels (its gain file), a run written in trec_eval's order (it
    reads a run's lines in file order); it prints 4 decimals, hence the tolerance."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    program = Path(sys.executable).with_name("cwl-eval")
    if not program.exists() and shutil.which("cwl-eval") is None:
        pytest.skip("the cwl-eval program is not installed")
    qrels, run = make_data(31, True)
    binary = {q: {d: int(label >= 2) for d, label in docs.items()} for q, docs in qrels.items()}
    (tmp_path / "gains.txt").write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in binary.items() for d, g in docs.items()), encoding="utf-8"
    )
    lines = [
        f"{q} Q0 {d} {rank} {scores[d]} r\n"
        for q, scores in run.items()
        for rank, d in enumerate(trec_eval_order(scores), start=1)
    ]
    (tmp_path / "run.txt").write_text("".join(lines), encoding="utf-8")
    (tmp_path / "metrics.txt").write_text("".join(line + "\n" for line, _ in CLI_METRICS), encoding="utf-8")
    done = subprocess.run(
        [str(program) if program.exists() else "cwl-eval", "gains.txt", "run.txt", "-m", "metrics.txt"],
        cwd=tmp_path,  # it writes cwl.log where it runs
        capture_output=True,
        text=True,
        check=True,
    )
    printed = [line.split("\t") for line in done.stdout.splitlines() if line.strip()]
    assert len(printed) == len(run) * len(CLI_METRICS)
    names = [name for _, name in CLI_METRICS]
    result = stagewise.evaluate(binary, run, names).runs[0]
    ours_by_query = {q: i for i, q in enumerate(result.query_ids.tolist())}
    for i, fields in enumerate(printed):
        name = names[i % len(CLI_METRICS)]
        value = float(result.values[name][ours_by_query[fields[0]]])
        assert value == pytest.approx(float(fields[2]), abs=5.1e-5), (name, fields)
