"""The compiled run layout pass and the O(n) move of query blocks (issue #26): a run grouped by query, whatever
its ids look like, is stored exactly as a full sort into trec_eval's order stores it.

Oracles: :func:`stagewise.data.order.evaluation_order` (the full sort, itself checked against trec_eval's
outputs elsewhere) on the same rows; numpy recomputations of the layout; pytrec_eval per query on files with
numeric query ids; the no-extension path of the same code.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise._native import parsing
from stagewise.data.columns import pair_keys
from stagewise.data.order import evaluation_order
from stagewise.data.readers import read_qrels, read_run
from stagewise.data.run import Run
from stagewise.data.strings import StringColumn
from stagewise.errors import InputError

needs_native = pytest.mark.skipif(not parsing.available(), reason="the compiled parser is not built")

# Scores chosen to tie: equal doubles, -0.0 and 0.0, and doubles equal only in single precision.
SCORES = [3.5, 2.0, 2.0000000001, 1.0, 0.0, -0.0, -1.25, 1e300]


@st.composite
def runs(draw):
    """Rows (query id, doc id, score) of a run: numeric ids (not in byte order), grouped or not, each query's
    scores descending or not."""
    ids = draw(st.lists(st.integers(0, 300).map(str), min_size=1, max_size=7, unique=True))
    rows = []
    for query in ids:
        docs = draw(st.lists(st.integers(0, 40), min_size=1, max_size=12, unique=True))
        scores = draw(st.lists(st.sampled_from(SCORES), min_size=len(docs), max_size=len(docs)))
        if draw(st.booleans()):
            scores.sort(reverse=True)
        rows += [(query, f"d{doc}", score) for doc, score in zip(docs, scores, strict=True)]
    if draw(st.booleans()):
        rows = draw(st.permutations(rows))
    return rows


@contextmanager
def native_off():
    """The compiled parser switched off, as a build without a compiler has it."""
    saved = parsing.native
    parsing.native = None
    try:
        yield
    finally:
        parsing.native = saved


def columns(rows, writable_strings: bool):
    first = list(dict.fromkeys(r[0] for r in rows))
    codes = np.array([first.index(r[0]) for r in rows], dtype=np.int32)
    docs = StringColumn.from_strings([r[1] for r in rows])
    if writable_strings:
        docs = StringColumn(docs.offsets.copy(), bytearray(docs.data))
    scores = np.array([r[2] for r in rows], dtype=np.float64)
    keys = pair_keys(StringColumn.from_strings([r[0] for r in rows]), docs)
    ranks = np.arange(1, len(rows) + 1, dtype=np.int32)
    return first, codes, docs, scores, ranks, keys


def full_sort(rows):
    """The reference: codes of byte-ordered ids, then one full sort into trec_eval's order."""
    vocabulary = sorted({r[0] for r in rows}, key=lambda q: q.encode())
    codes = np.array([vocabulary.index(r[0]) for r in rows], dtype=np.int32)
    docs = StringColumn.from_strings([r[1] for r in rows])
    scores = np.array([r[2] for r in rows], dtype=np.float64)
    return vocabulary, codes, evaluation_order(codes, scores, docs, np.arange(len(rows)))


def assert_stored_as_full_sort(run: Run, rows) -> None:
    vocabulary, codes, order = full_sort(rows)
    assert run.query_ids.tolist() == vocabulary
    assert run.query_codes.tolist() == codes[order].tolist()
    assert run.docs.values() == [rows[i][1] for i in order]
    assert run.scores.tolist() == [rows[i][2] for i in order]
    assert run.ranks.tolist() == (order + 1).tolist()
    assert run.input_position.tolist() == order.tolist()


@settings(max_examples=150, deadline=None)
@given(rows=runs(), writable=st.booleans())
def test_stored_order_equals_a_full_sort(rows, writable: bool) -> None:
    run = Run.from_columns(*columns(rows, writable), name="r")
    assert_stored_as_full_sort(run, rows)


@settings(max_examples=60, deadline=None)
@given(rows=runs())
def test_without_the_extension_the_same_rows(rows) -> None:
    run = Run.from_columns(*columns(rows, True), name="r")
    with native_off():
        plain = Run.from_columns(*columns(rows, True), name="r")
    assert run.docs.values() == plain.docs.values()
    assert run.input_position.tolist() == plain.input_position.tolist()
    assert run.scores.tolist() == plain.scores.tolist()


@needs_native
@settings(max_examples=150, deadline=None)
@given(rows=runs())
def test_layout_agrees_with_numpy(rows) -> None:
    first, codes, _, scores, _, keys = columns(rows, False)
    layout = parsing.run_layout(codes, scores, keys, len(first))
    change = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    block_codes = codes[np.r_[0, change]]
    assert layout.grouped == (len(set(block_codes.tolist())) == len(block_codes))
    with np.errstate(over="ignore"):
        single = scores.astype(np.float32)
    same = codes[1:] == codes[:-1]
    assert layout.ordered == bool(np.all(~same | (single[1:] <= single[:-1])))
    if layout.ordered:
        assert layout.tied.tolist() == np.flatnonzero(same & (single[1:] == single[:-1])).tolist()
    if layout.grouped:
        assert layout.starts.tolist() == [int(np.flatnonzero(codes == c)[0]) for c in range(len(first))]
    assert layout.repeat == (-1 if layout.grouped else -2)  # doc ids are unique per query here


@needs_native
def test_single_precision_beyond_float_range() -> None:
    """Scores beyond float range round as IEEE (numpy's astype) does: to FLT_MAX, or to infinity, so 1e300
    and 1e301 tie, and a score just above FLT_MAX ties FLT_MAX."""
    flt_max = float(np.finfo(np.float32).max)
    scores = np.array([1e301, 1e300, flt_max * (1 + 2**-26), flt_max, 1.0])
    codes = np.zeros(5, dtype=np.int32)
    keys = np.arange(5, dtype=np.uint64)
    layout = parsing.run_layout(codes, scores, keys, 1)
    assert layout.ordered and layout.tied.tolist() == [0, 2]


def test_repeated_document_in_a_numeric_id_run_names_its_line(tmp_path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("10 Q0 a 1 3 t\n10 Q0 b 2 2 t\n2 Q0 c 1 5 t\n2 Q0 d 2 4 t\n2 Q0 c 3 1 t\n")
    with pytest.raises(InputError) as raised:
        read_run(path)
    assert "run.txt:5: document 'c' appears more than once" in str(raised.value)
    kept = read_run(path, duplicates="first")
    assert kept.query_ids.tolist() == ["10", "2"] and kept.rankings() == {"10": ["a", "b"], "2": ["c", "d"]}
    assert kept.duplicates_dropped == 1


def test_numeric_ids_agree_with_pytrec_eval_per_query(tmp_path) -> None:
    """A file grouped by numeric query ids (MS MARCO's shape, not byte order), with ties: every per-query value
    equals pytrec_eval's."""
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("pytrec_eval's own extension aborts under the AddressSanitizer runtime (.ci/sanitize)")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    import stagewise

    rng = np.random.default_rng(26)
    run_lines, qrels_lines, run, qrels = [], [], {}, {}
    for query in [str(q) for q in (9, 10, 100, 2, 33, 1000, 1)]:
        docs = rng.choice(60, size=25, replace=False)
        scores = np.sort(rng.choice([0.5, 1.0, 1.5, 2.0], size=25))[::-1]
        for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), start=1):
            run_lines.append(f"{query} Q0 D{doc} {rank} {score} t\n")
            run.setdefault(query, {})[f"D{doc}"] = float(score)
        for doc in range(0, 60, 4):
            label = int(rng.integers(0, 3))
            qrels_lines.append(f"{query} 0 D{doc} {label}\n")
            qrels.setdefault(query, {})[f"D{doc}"] = label
    (tmp_path / "run.txt").write_text("".join(run_lines))
    (tmp_path / "qrels.txt").write_text("".join(qrels_lines))
    ours = stagewise.evaluate(
        read_qrels(tmp_path / "qrels.txt"), read_run(tmp_path / "run.txt"), ["map", "ndcg@10", "P@5"]
    )
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut.10", "P.5"}).evaluate(run)
    values = ours.per_query(ours.runs[0].name)
    for name, peer in (("map", "map"), ("ndcg@10", "ndcg_cut_10"), ("P@5", "P_5")):
        assert sorted(values[name]) == sorted(theirs)
        for query, value in values[name].items():
            assert value == pytest.approx(theirs[query][peer], abs=1e-12), (name, query)
