"""One name, one number: every spelling of ir_measures' registry and of ranx's metric list either parses to a
stagewise measure that gives that tool's number, per query to 1e-9 on random qrels and runs (graded labels 0-4,
tied scores), or is refused with a message that says what to write instead.

The tools are the oracles: ir_measures' own providers (pytrec_eval, gdeval, trectools, cwl_eval, its accuracy,
compat, judged and msmarco providers) and ranx 0.3.21. Where a provider orders tied scores its own way, the
stagewise measure is checked under the convention that orders them the same way (stated per case below).
"""

from __future__ import annotations

import random
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stagewise
from stagewise.errors import MetricError
from stagewise.metrics.measures import PEER_NAMES, Measure

ir_measures = pytest.importorskip("ir_measures")
ranx = pytest.importorskip("ranx")

SEEDS = (1, 2, 3)


def make_data(seed: int, ties: bool, *, negative: bool = False) -> tuple[dict, dict]:
    """Qrels (labels 0-4, and -1 when ``negative``) and a run of 3 to 30 results per query; with ``ties``
    scores have one decimal, so many collide. Query ids are numbers (gdeval reads only those); each run
    query is judged and each judged query is in the run, so every tool reports the same queries."""
    rng = random.Random(seed)
    labels = [0, 0, 0, 1, 1, 2, 3, 4] + ([-1] if negative else [])
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(1, 11):
        docs = [f"d{i:02d}" for i in range(40)]
        # both in doc id order: ties="input" then breaks ties by doc id, as several providers do
        qrels[str(q)] = {d: rng.choice(labels) for d in sorted(rng.sample(docs, rng.randint(3, 25)))}
        returned = sorted(rng.sample(docs, rng.randint(3, 30)))
        # scores above 0: Compat ranks unretrieved relevant documents as if scored 0.0
        run[str(q)] = {d: (round(rng.uniform(0.1, 1.0), 1) if ties else rng.uniform(0.1, 1.0)) for d in returned}
    return qrels, run


def stagewise_per_query(qrels: dict, run: dict, spelling: str, ties: str = "docid") -> dict[str, float]:
    result = stagewise.evaluate(qrels, run, [spelling], ties=ties, missing="skip")
    scores = result.runs[0]
    return {str(q): float(v) for q, v in zip(scores.query_ids.tolist(), scores.values[spelling], strict=True)}


def assert_same(theirs: dict[str, float], ours: dict[str, float], tol: float = 1e-9) -> None:
    assert theirs, "the tool reported no query"
    for query, value in theirs.items():
        assert query in ours, query
        assert ours[query] == pytest.approx(value, abs=tol), (query, value, ours[query])


# -- ir_measures ------------------------------------------------------------------------------------------------

# How each ir_measures provider orders tied scores, as a stagewise tie convention (the run dicts list their
# documents in doc id order, so "input" is score descending, then doc id ascending):
#   pytrec_eval: trec_eval's single-precision order, doc id descending ("docid");
#   cwl_eval (RBP with rel): the run as given, by score ("input");
#   gdeval: scores as doubles, doc id descending ("docid-double");
#   msmarco (RR@k), judged (Judged), compat (Compat): score, then doc id ascending ("input");
#   accuracy (Accuracy): a stable sort of the run as given ("input");
#   trectools (RBP without rel) averages the discount over tied scores: checked on untied runs only.
TIES_OF_PROVIDER = {
    "pytrec_eval": "docid",
    "cwl_eval": "input",
    "gdeval": "docid-double",
    "msmarco": "input",
    "judged": "input",
    "compat": "input",
    "accuracy": "input",
    "trectools": None,
}
# gdeval prints 5 decimals.
TOLERANCE_OF_PROVIDER = {"gdeval": 6e-6}


def ir_measures_spellings() -> list[str]:
    """Every measure in ir_measures' registry, with its default parameters, with and without a cutoff."""
    out: list[str] = []
    for name, measure in sorted(ir_measures.measures.registry.items()):
        params = measure.SUPPORTED_PARAMS
        if "recall" in params:
            out += [f"{name}@0.2", f"{name}@0.5"]
        elif "cutoff" in params:
            out += [f"{name}@5", f"{name}@20", name]
        else:
            out.append(name)
    return out


# Spellings with parameters, each a case this issue names.
IR_MEASURES_EXTRA = [
    "RBP(rel=1)",
    "RBP(rel=2)",
    "RBP(p=0.5,rel=3)",
    "nDCG(gains={0:0,1:1,2:3,3:5,4:6})@10",
    "nDCG(dcg='exp-log2')@10",
    "P(judged_only=True)@5",
    "AP(judged_only=True)",
    "nDCG(judged_only=True)@10",
    "RR(judged_only=True)",
    "P(rel=2)@5",
    "Accuracy(rel=2)@10",
    "Compat(p=0.8)",
    "Compat(normalize=False)",
    "IPrec(rel=2)@0.4",
    "SetP(relative=True)",
    "NumRet(rel=2)",
    "RBP(p=0.9)@10",
]


def _provider(measure) -> str | None:
    """The provider ir_measures would compute ``measure`` with (its default order), None when none can."""
    for name in ("pytrec_eval", "gdeval", "cwl_eval", "msmarco", "judged", "compat", "accuracy", "trectools"):
        provider = ir_measures.providers.registry[name]
        try:
            provider.initialize()
        except RuntimeError:
            continue
        try:
            supported = provider.supports(measure)
        except AssertionError:  # ir_measures' own check of a required parameter (INST without max_rel)
            return None
        if supported:
            return name
    return None


def _ir_measures_values(provider: str, measure, qrels: dict, run: dict) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = ir_measures.providers.registry[provider].iter_calc([measure], qrels, run)
        return {m.query_id: float(m.value) for m in found}


def _refusal_teaches(error: MetricError) -> bool:
    text = str(error)
    return any(words in text for words in ("as in", "no stagewise measure gives", "its options", "takes no", "write "))


@pytest.mark.parametrize("spelling", ir_measures_spellings() + IR_MEASURES_EXTRA)
def test_every_ir_measures_spelling_gives_its_number_or_is_refused(spelling: str) -> None:
    try:
        ours = Measure.parse(spelling)
    except MetricError as error:
        assert _refusal_teaches(error), str(error)
        return
    theirs = ir_measures.parse_measure(spelling)
    provider = _provider(theirs)
    if provider is None:  # no provider computes it (ERR without a cutoff): the stagewise measure stands alone
        pytest.skip(f"ir_measures computes {spelling} with none of its providers here ({ours})")
    ties = TIES_OF_PROVIDER[provider]
    compared = 0
    for seed in SEEDS:
        for tied in (False, True) if ties is not None else (False,):
            qrels, run = make_data(seed, tied)
            try:
                expected = _ir_measures_values(provider, theirs, qrels, run)
            except ZeroDivisionError:  # Accuracy when a query's top k is all relevant (stagewise: 1)
                continue
            got = stagewise_per_query(qrels, run, spelling, ties or "docid")
            assert_same(expected, got, TOLERANCE_OF_PROVIDER.get(provider, 1e-9))
            compared += 1
    assert compared >= 2, f"{spelling}: the tool computed too few of the data sets"


def test_a_collision_is_decided_by_the_spelling() -> None:
    """ERR and err, RBP and rbp, IPrec and iprec differ only in case; the peer's exact spelling means the
    peer's number, any other spelling stagewise's own."""
    assert str(Measure.parse("ERR@10")) == "err@10(max_label=4)"
    assert str(Measure.parse("err@10")) == "err@10"
    assert str(Measure.parse("RBP")) == "rbp(p=0.8,scale=False)"
    assert str(Measure.parse("rbp")) == "rbp"
    assert str(Measure.parse("IPrec@0.1")) == "iprec_at_recall@0.1(rounding=0.9)"
    assert str(Measure.parse("iprec@0.1")) == "iprec_at_recall@0.1"
    qrels, run = make_data(4, False)
    qrels = {q: {d: min(label, 3) for d, label in docs.items()} for q, docs in qrels.items()}  # highest grade 3
    values = stagewise.evaluate(qrels, run, ["ERR@10", "err@10", "RBP", "rbp"]).means["run"]
    assert values["ERR@10"] != values["err@10"] and values["RBP"] != values["rbp"]


def test_the_peer_table_lists_no_spelling_twice_and_names_real_families() -> None:
    from stagewise.metrics.measures import FAMILIES

    for name, peer in PEER_NAMES.items():
        assert peer.family is None or peer.family in FAMILIES, name
        assert peer.uncut is None or peer.uncut in FAMILIES, name
        assert peer.family is not None or peer.instead, name


# -- ranx -----------------------------------------------------------------------------------------------------------

RANX_NAMES = ["hits", "hit_rate", "precision", "recall", "f1", "mrr", "map", "ndcg", "ndcg_burges", "dcg", "dcg_burges"]


def ranx_spellings() -> list[str]:
    """ranx's metric list (ranx.metrics.metric_switch), each with and without a cutoff and with a relevance
    level suffix, plus r-precision, bpref and rbp."""
    out: list[str] = []
    for name in RANX_NAMES:
        out += [name, f"{name}@5", f"{name}@20", f"{name}@10-l2"]
    return [*out, "r-precision", "r_precision", "r-precision-l2", "bpref", "bpref-l2", "rbp.95", "rbp.8", "rbp.8-l3"]


def _ranx_values(qrels: dict, run: dict, metric: str) -> dict[str, float]:
    qrels_obj = ranx.Qrels.from_dict(qrels)
    run_obj = ranx.Run.from_dict(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(qrels_obj, run_obj, metric.replace("r_precision", "r-precision"), return_mean=True)
    return {q: float(v) for q, v in run_obj.scores[metric.replace("r_precision", "r-precision")].items()}


@pytest.mark.parametrize("spelling", ranx_spellings())
def test_every_ranx_name_gives_ranx_number_or_is_refused(spelling: str) -> None:
    """ranx orders tied scores by its sort's whim, so its runs here have none; labels are 0-4 (ranx's bpref
    counts negative labels as judged non-relevant, trec_eval's ignores them)."""
    try:
        Measure.parse(spelling)
    except MetricError as error:
        assert _refusal_teaches(error), str(error)
        return
    for seed in SEEDS:
        qrels, run = make_data(seed, False)
        assert_same(_ranx_values(qrels, run, spelling), stagewise_per_query(qrels, run, spelling))


def test_hits_and_accuracy_and_compat_against_naive_references() -> None:
    """Slow per-query references written here, beside the tools: hits@k counts, Accuracy's pairs, Compat's
    rank-biased overlap walked rank by rank."""
    qrels, run = make_data(7, False)
    got_hits = stagewise_per_query(qrels, run, "hits@7")
    got_acc = stagewise_per_query(qrels, run, "accuracy")
    got_compat = stagewise_per_query(qrels, run, "compat(p=0.9)")
    for q, scores in run.items():
        ranking = sorted(scores, key=lambda d: -scores[d])
        rel = [qrels[q].get(d, 0) >= 1 for d in ranking]
        assert got_hits[q] == sum(rel[:7])
        pairs = [(i, j) for i in range(len(rel)) for j in range(len(rel)) if rel[i] and not rel[j]]
        if pairs and any(rel):
            assert got_acc[q] == pytest.approx(sum(i < j for i, j in pairs) / len(pairs), abs=1e-12)
        ideal = sorted((d for d in qrels[q] if qrels[q][d] > 0), key=lambda d: (-qrels[q][d], -scores.get(d, -1e9)))
        depth = max(len(ranking), len(ideal))

        def rbo(a: list[str], b: list[str], depth: int = depth, p: float = 0.9) -> float:
            return sum(p**i * len(set(a[: i + 1]) & set(b[: i + 1])) / (i + 1) for i in range(depth))

        best = rbo(ideal, ideal)
        expected = rbo(ranking, ideal) / best if best > 0 else 0.0
        assert got_compat[q] == pytest.approx(expected, abs=1e-9)


def test_judged_only_is_the_condensed_list() -> None:
    """P@5(judged_only=True) on a run equals P@5 on the run with its unjudged documents removed."""
    qrels, run = make_data(5, True, negative=True)
    condensed = {q: {d: s for d, s in docs.items() if qrels[q].get(d, -1) >= 0} for q, docs in run.items()}
    for name in ("P@5", "ndcg@10", "map", "rbp(p=0.8)", "err@5"):
        marked = name.replace("@", "@", 1)
        spelled = f"{marked}(judged_only=True)" if "(" not in marked else marked[:-1] + ",judged_only=True)"
        got = stagewise_per_query(qrels, run, spelled)
        kept = {q: d for q, d in condensed.items() if d}
        want = stagewise_per_query(qrels, kept, name)
        for q, value in want.items():
            assert got[q] == pytest.approx(value, abs=1e-12), (name, q)


def test_unjudged_names_say_how_missing_ranks_count() -> None:
    """unj@k (trec_eval) counts ranks past the end of a short run as judged; unjudged@k = 1 - judged@k as
    unjudged: on a run of at most 30 results the two differ by exactly (k - ret) / k."""
    qrels, run = make_data(6, False)
    unj = stagewise_per_query(qrels, run, "unj@100")
    unjudged = stagewise_per_query(qrels, run, "unjudged@100")
    judged = stagewise_per_query(qrels, run, "judged@100")
    for q, docs in run.items():
        assert unjudged[q] == pytest.approx(1 - judged[q], abs=1e-12)
        assert unjudged[q] - unj[q] == pytest.approx((100 - len(docs)) / 100, abs=1e-12)


def test_stated_parameters_reach_the_notes_and_the_json() -> None:
    qrels, run = make_data(8, False)
    result = stagewise.evaluate(qrels, run, ["ERR@10", "err@10", "RBP", "IPrec@0.1"])
    metrics = result.conventions_report()["metrics"]
    assert metrics["ERR@10"]["max_label"] == 4
    assert metrics["err@10"]["max_label"] == 4  # the highest label of these qrels, stated, not null
    assert metrics["RBP"]["p"] == 0.8 and metrics["RBP"]["scale"] is False
    assert metrics["IPrec@0.1"]["rounding"] == 0.9
    notes = "\n".join(result.notes())
    assert "ERR@10 = err@10(max_label=4)" in notes and "IPrec@0.1 = iprec_at_recall@0.1(rounding=0.9)" in notes
    assert "RBP = rbp(p=0.8,scale=False)" in notes and "err@10: max_label=4" in notes


# -- invariants -----------------------------------------------------------------------------------------------------

_LABELS = st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)]), st.integers(-1, 3), min_size=1, max_size=12)
_SCORES = st.dictionaries(
    st.sampled_from([f"d{i}" for i in range(16)]), st.sampled_from([0.1, 0.2, 0.5, 0.9]), min_size=1
)


@settings(max_examples=60, deadline=None)
@given(labels=_LABELS, scores=_SCORES, k=st.integers(1, 20))
def test_new_measures_stay_in_their_ranges(labels: dict, scores: dict, k: int) -> None:
    """hits@k <= min(k, ret, R); accuracy, compat, f1, judged_retrieved in [0, 1]; unjudged@k >= unj@k and they
    differ by exactly (k - ret)/k when ret < k; judged_only never changes a measure of a fully judged run."""
    qrels, run = {"q": labels}, {"q": scores}
    names = [f"hits@{k}", "accuracy", f"accuracy@{k}", "compat", f"f1@{k}", f"judged_retrieved@{k}", f"unj@{k}"]
    names += [f"unjudged@{k}", f"R@{k}", f"P@{k}(judged_only=True)", f"P@{k}"]
    v = {n: float(stagewise.evaluate(qrels, run, names).runs[0].values[n][0]) for n in names}
    relevant = sum(1 for label in labels.values() if label >= 1)
    assert 0 <= v[f"hits@{k}"] <= min(k, len(scores), relevant)
    for name in ("accuracy", f"accuracy@{k}", "compat", f"f1@{k}", f"judged_retrieved@{k}"):
        assert -1e-12 <= v[name] <= 1 + 1e-12, name
    assert v[f"unjudged@{k}"] >= v[f"unj@{k}"] - 1e-12
    assert v[f"unjudged@{k}"] - v[f"unj@{k}"] == pytest.approx(max(k - len(scores), 0) / k, abs=1e-12)
    if all(labels.get(d, -1) >= 0 for d in scores):
        assert v[f"P@{k}(judged_only=True)"] == pytest.approx(v[f"P@{k}"], abs=1e-12)
