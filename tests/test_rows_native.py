"""The compiled row operations (``_native/rows.c``) against their numpy fallbacks and a plain Python reference:
trec_eval's order of rows, the join of runs on (query, document), and gathering strings through an order."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise import read_run
from stagewise._native import rowops
from stagewise._native import rows as native_rows
from stagewise.data import order as order_module
from stagewise.data.strings import StringColumn, StringSources
from stagewise.fusion import fuse
from stagewise.fusion import join as join_module
from stagewise.fusion.join import cut, join
from tests.reference.naive_trec_eval import as_c_float

pytestmark = pytest.mark.skipif(native_rows is None, reason="the C extension _rows was not built")

# Few distinct values, so that ties (and -0.0 against 0.0) are common; ids that share prefixes and lengths.
# 0.1 + 0.2 and 0.3, 16777216 and 16777217, 1e300 and 2e300, 1e-300 and 0.0 tie only in single precision.
SCORES = st.sampled_from(
    [0.0, -0.0, 1.0, 0.5, -2.0, 1e-300, 0.1 + 0.2, 0.3, 1e300, 2e300, -1e-300, 16777216.0, 16777217.0]
)
IDS = st.text(alphabet="ab\u00e9", min_size=0, max_size=10)


def reference_order(query, scores, docs: list[bytes], single: bool = True) -> list[int]:
    """trec_eval's order with plain Python: query ascending, score descending (compared as C floats with
    ``single``), doc id bytes descending."""

    def key(i):
        score = as_c_float(float(scores[i])) if single else float(scores[i])
        return (int(query[i]), -(score + 0.0), [-b for b in docs[i]] + [1])

    return sorted(range(len(query)), key=key)


@st.composite
def rows_to_order(draw):
    n = draw(st.integers(0, 60))
    query = np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.int32)
    if draw(st.booleans()):
        query.sort()
    scores = np.array(draw(st.lists(SCORES, min_size=n, max_size=n)), dtype=np.float64)
    # Distinct ids within a query, as in every run; rows point into a shuffled string column.
    ids = draw(st.lists(IDS, min_size=n, max_size=n, unique=True))
    column = StringColumn.from_strings(ids[::-1])
    rows = np.arange(n - 1, -1, -1, dtype=np.int64)
    return query, scores, column, rows, [i.encode() for i in ids]


@settings(max_examples=300, deadline=None)
@given(rows_to_order(), st.booleans())
def test_evaluation_order_compiled_and_numpy_equal_the_reference(case, single):
    query, scores, column, rows, docs = case
    expected = reference_order(query, scores, docs, single)
    assert order_module.evaluation_order(query, scores, column, rows, single=single).tolist() == expected
    if len(query):
        n_queries = int(query.max()) + 1
        assert rowops.trec_order(query, n_queries, scores, column.buffers(), rows, single).tolist() == expected
    if len(query) and np.all(np.diff(query) >= 0):
        offsets = order_module.segment_offsets(query, n_queries)
        compared = order_module.single_precision(scores) if single else scores
        assert order_module._numpy_order(query, offsets, compared, column, rows).tolist() == expected


def test_evaluation_order_separates_scores_equal_in_their_top_bits():
    """Scores that agree in the bits the packed key keeps are settled by the full score: as doubles they
    differ; as C floats (the default, trec_eval 9's order) all four tie and doc id descending decides."""
    base = 1.0
    close = [base, np.nextafter(base, 2.0), np.nextafter(np.nextafter(base, 2.0), 2.0), base]
    query = np.zeros(4, dtype=np.int32)
    column = StringColumn.from_strings(["a", "b", "c", "d"])
    order = order_module.evaluation_order(query, np.array(close), column, np.arange(4), single=False)
    assert order.tolist() == [2, 1, 3, 0]  # the two 1.0 rows tie: doc id descending puts d (row 3) first
    order = order_module.evaluation_order(query, np.array(close), column, np.arange(4))
    assert order.tolist() == [3, 2, 1, 0]


@st.composite
def runs_to_join(draw):
    def one_run():
        return draw(
            st.dictionaries(
                st.sampled_from(["q1", "q2", "q3"]),
                st.dictionaries(st.sampled_from(["a", "b", "c", "d", "ab", "é"]), SCORES, min_size=1, max_size=5),
                min_size=1,
                max_size=3,
            )
        )

    return [read_run(one_run(), name=f"r{i}") for i in range(draw(st.integers(1, 3)))], draw(
        st.one_of(st.none(), st.integers(1, 4))
    )


def _joined_pairs(parts, joined, strings):
    """Each part's rows as (query, doc) -> rank, read through the join's candidate mapping."""
    docs = strings.take(joined.home)
    out = []
    for part, cand in zip(parts, joined.cand_of, strict=True):
        out.append(
            {
                (int(joined.query[c]), docs.value(int(c))): int(rank)
                for c, rank in zip(np.asarray(cand, dtype=np.int64), join_module.ranks(part), strict=True)
            }
        )
    return out, sorted((int(q), docs.value(i)) for i, q in enumerate(joined.query))


@settings(max_examples=200, deadline=None)
@given(runs_to_join())
def test_hashed_join_equals_the_sorted_join(case):
    runs, depth = case
    query_ids = np.unique(np.concatenate([run.query_ids for run in runs]))
    parts = [cut(run, query_ids, depth) for run in runs]
    strings = StringSources([run.docs for run in runs])
    bases = strings.bases[:-1]
    hashed = join(parts, strings, bases)
    n, cand_of, query, keys, home = join_module._join_sorted(parts, strings, bases) if len(parts) > 1 else (None,) * 5
    if n is None:
        return
    sorted_join = join_module.Joined(cand_of, query, keys, home)
    assert len(hashed) == len(sorted_join)
    assert _joined_pairs(parts, hashed, strings) == _joined_pairs(parts, sorted_join, strings)
    # Candidates are grouped by query, ascending.
    assert np.all(np.diff(hashed.query) >= 0)


@pytest.mark.parametrize("compiled", [True, False])
def test_colliding_keys_stay_apart(monkeypatch, compiled):
    """Two different documents with the same pair key are two candidates, on both paths."""
    if not compiled:
        monkeypatch.setattr(rowops, "native", None)
    a, b = read_run({"q": {"a": 2.0, "b": 1.0}}), read_run({"q": {"c": 2.0, "a": 1.0, "b": 0.5}})
    key = dict(zip(a.docs.values(), a.pair_keys.tolist(), strict=True))
    b.pair_keys = np.array([key["b"], key["a"], key["b"]], dtype=np.uint64)  # c collides with b
    fused = fuse([a, b], "combsum", norm="none")
    assert fused.to_dict()["q"] == {"a": 3.0, "b": 1.5, "c": 2.0}


@pytest.mark.parametrize("compiled", [True, False])
def test_fusion_gives_the_same_run_on_both_paths(monkeypatch, compiled):
    runs = [
        {f"q{q}": {f"d{(q * 7 + i) % 23}": float((i * 5) % 4) for i in range(15)} for q in range(12)},
        {f"q{q}": {f"d{(q * 3 + i) % 29}": float(i % 3) for i in range(18)} for q in range(3, 15)},
    ]
    expected = fuse(runs, "rrf")
    if not compiled:
        monkeypatch.setattr(rowops, "native", None)
    fused = fuse(runs, "rrf")
    assert fused.doc_ids.to_list() == expected.doc_ids.to_list()
    assert fused.scores.tolist() == expected.scores.tolist()
    assert fused.query_codes.tolist() == expected.query_codes.tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(IDS, max_size=20), st.data())
def test_take_through_an_order(ids, data):
    column = StringColumn.from_strings(ids)
    rows = np.array(
        data.draw(st.lists(st.integers(0, max(len(ids) - 1, 0)), max_size=15)) if ids else [], dtype=np.int64
    )
    through = np.array(
        data.draw(st.lists(st.integers(0, max(len(rows) - 1, 0)), max_size=15)) if len(rows) else [], dtype=np.int64
    )
    assert column.take(rows, through=through).values() == [ids[rows[i]] for i in through]


def test_take_through_refuses_rows_out_of_range():
    column = StringColumn.from_strings(["a", "b"])
    with pytest.raises(IndexError):
        column.take(np.array([0, 1]), through=np.array([2]))
    with pytest.raises(IndexError):
        column.take(np.array([0, 5]), through=np.array([1]))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["q1", "q10", "q2", "é"]), IDS.filter(bool), SCORES), min_size=1, max_size=40
    ).map(lambda rows: list({(q, d): (q, d, s) for q, d, s in rows}.values())),
    st.randoms(use_true_random=False),
)
def test_a_run_read_in_any_row_order_is_stored_in_trec_eval_order(rows, rnd):
    """Shuffled rows take the full sort; rows sorted by (query, double score) the path that settles ties only,
    where scores that tie in single precision only must still be ordered by doc id."""
    if rnd.random() < 0.5:
        rnd.shuffle(rows)
    else:
        rows.sort(key=lambda r: (r[0].encode(), -r[2]))
    frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "score"], orient="row")
    run = read_run(frame)
    expected = sorted(
        rows, key=lambda r: (r[0].encode(), -(as_c_float(r[2]) + 0.0), [-b for b in r[1].encode()] + [1])
    )
    stored = list(zip(run.query_ids[run.query_codes].tolist(), run.doc_ids.to_list(), run.scores.tolist(), strict=True))
    assert [(q, d) for q, d, _ in stored] == [(q, d) for q, d, _ in expected]
    assert [s + 0.0 for *_, s in stored] == [s + 0.0 for *_, s in expected]  # scores kept exactly, row by row
    # input_position still points at each row's line in the input
    assert [rows[p][:2] for p in run.input_position.tolist()] == [(q, d) for q, d, _ in stored]


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["q1", "q2", "q3", "q4"]),
        st.dictionaries(st.sampled_from(["a", "b", "c", "ab", "é", "d"]), st.integers(-1, 3), min_size=1, max_size=4),
        min_size=1,
        max_size=4,
    ),
    st.dictionaries(
        st.sampled_from(["q2", "q3", "q4", "q5"]),
        st.dictionaries(st.sampled_from(["a", "b", "c", "ab", "é", "e"]), SCORES, min_size=1, max_size=6),
        min_size=1,
        max_size=4,
    ),
)
def test_evaluation_join_compiled_equals_polars(monkeypatch_module, qrels_dict, run_dict):
    from stagewise import read_qrels
    from stagewise.metrics import context

    qrels, run = read_qrels(qrels_dict), read_run(run_dict)
    compiled = set(zip(*(a.tolist() for a in context._join(qrels, run)), strict=True))
    with monkeypatch_module.context() as patch:
        patch.setattr(rowops, "native", None)
        polars = set(zip(*(a.tolist() for a in context._join(qrels, run)), strict=True))
    assert compiled == polars
    expected = {
        (r, j)
        for r in range(len(run))
        for j in range(len(qrels))
        if run.query_ids[run.query_codes[r]] == qrels.query_ids[qrels.query_codes[j]]
        and run.docs.value(r) == qrels.docs.value(j)
    }
    assert compiled == expected


def test_evaluation_join_confirms_keys_by_strings():
    """A judgement whose pair key collides with another document's is not joined to it."""
    from stagewise import evaluate, read_qrels

    qrels, run = read_qrels({"q": {"a": 1, "b": 1}}), read_run({"q": {"c": 2.0, "a": 1.0}})
    key = dict(zip(run.docs.values(), run.pair_keys.tolist(), strict=True))
    qrels.pair_keys = np.array([key["a"], key["c"]], dtype=np.uint64)  # b's key is c's
    assert evaluate(qrels, run, ["P@1", "P@2", "num_rel_ret"]).means[run.name] == {
        "P@1": 0.0,
        "P@2": 0.5,
        "num_rel_ret": 1.0,
    }


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_long_groups_of_tied_scores_are_ordered_by_doc_id():
    """A deep list with one score (Boolean retrieval, say) is one long group of ties: ordered by doc id
    descending, in n log n (a merge sort), not an insertion sort's n squared."""
    n = 5_000
    ids = [f"doc{i:06d}" for i in np.random.default_rng(1).permutation(n)]
    column = StringColumn.from_strings(ids)
    scores = np.where(np.arange(n) % 3 == 0, 1.0, -0.0)
    scores[::7] = 0.0
    order = order_module.evaluation_order(np.zeros(n, dtype=np.int32), scores, column, np.arange(n))
    assert order.tolist() == reference_order(np.zeros(n, dtype=np.int32), scores, [i.encode() for i in ids])


def test_match_pairs_skips_rows_marked_minus_one_inside_a_query():
    """Judgement rows of queries the run lacks are marked -1; the others of a query still all match."""
    small = StringColumn.from_strings(["x", "y", "z"])
    large = StringColumn.from_strings(["x", "z"])
    keys = {d: np.uint64(i + 1) for i, d in enumerate("xyz")}
    large_rows, small_rows = native_rows.match_pairs(
        np.array([0, -1, 0], dtype=np.int32),
        np.array([keys["x"], keys["y"], keys["z"]], dtype=np.uint64),
        small.buffers(),
        np.array([0, 0], dtype=np.int32),
        np.array([keys["x"], keys["z"]], dtype=np.uint64),
        large.buffers(),
    )
    pairs = sorted(
        zip(np.frombuffer(large_rows, np.int64).tolist(), np.frombuffer(small_rows, np.int64).tolist(), strict=True)
    )
    assert pairs == [(0, 0), (1, 2)]
    one = StringColumn.from_strings(["x"]).buffers()
    with pytest.raises(ValueError, match="large side"):
        native_rows.match_pairs(
            np.array([0], np.int32),
            np.array([1], np.uint64),
            one,
            np.array([-1], np.int32),
            np.array([1], np.uint64),
            one,
        )
