"""The compiled-or-fallback facades (_native/parsing.py, _native/rowops.py): switched off, every job answers
None (or False) so that its caller takes the numpy/polars path; switched on, the compiled answers agree with
those paths where both compute the same thing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from stagewise import read_qrels, read_run
from stagewise._native import parsing, rowops
from stagewise.data.order import evaluation_order
from stagewise.data.strings import StringColumn, StringSources
from stagewise.metrics import context

RUN = {"q1": {"d1": 2.0, "d2": 2.0, "d3": 1.0}, "q2": {"d1": 0.5, "d4": 0.5}}
QRELS = {"q1": {"d2": 1, "d9": 1}, "q2": {"d4": 2}}


def test_switched_off_every_job_declines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "native", None)
    monkeypatch.setattr(rowops, "native", None)
    column = StringColumn.from_strings(["a", "b"])
    codes, keys = np.zeros(2, dtype=np.int32), np.arange(2, dtype=np.uint64)
    assert not parsing.available() and not rowops.available()
    assert parsing.parse(b"q 0 d 1\n", 1) is None
    assert parsing.hash_pairs(column.offsets, column.data, column.offsets, column.data) is None
    assert parsing.first_duplicate(codes, keys, 1) is None
    assert parsing.rewrite_rows(column.offsets, bytearray(column.data), np.arange(2), np.arange(2)) is False
    assert rowops.trec_order(codes, 1, np.ones(2), column.buffers(), np.arange(2), True) is None
    assert rowops.gather_strings(column.buffers(), np.arange(2), None) is None
    assert rowops.match_pairs(codes, keys, column.buffers(), codes, keys, column.buffers()) is None
    assert rowops.join_pairs([(codes, keys, None, 0)], column.buffers(), 2) is None


@pytest.mark.skipif(not (parsing.available() and rowops.available()), reason="the C extensions are not built")
def test_switched_on_the_answers_agree_with_the_fallbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    run, qrels = read_run(RUN), read_qrels(QRELS)
    compiled_join = sorted(zip(*(a.tolist() for a in context._join(qrels, run)), strict=True))
    compiled_order = evaluation_order(run.query_codes, run.scores, run.docs, np.arange(len(run))).tolist()
    column = StringSources([run.docs, qrels.docs])
    compiled_take = column.take(np.array([4, 0, 6])).values()
    assert parsing.first_duplicate(run.query_codes, run.pair_keys, len(run.query_ids)) is False
    with monkeypatch.context() as patch:
        patch.setattr(rowops, "native", None)
        assert sorted(zip(*(a.tolist() for a in context._join(qrels, run)), strict=True)) == compiled_join
        assert evaluation_order(run.query_codes, run.scores, run.docs, np.arange(len(run))).tolist() == compiled_order
        assert column.take(np.array([4, 0, 6])).values() == compiled_take
    every = [*run.docs.values(), *qrels.docs.values()]
    assert len(compiled_join) == 2 and compiled_take == [every[4], every[0], every[6]]


# A score as runs write it: a sign or none, digits with a point anywhere or none, leading zeros, and lengths on
# both sides of the parser's short-decimal path (at most 15 digits) and of its exact range (17 and more).
_digits = st.text(alphabet="0123456789", min_size=1, max_size=19)
_scores = st.builds(
    lambda sign, digits, point: sign + (digits[:point] + "." + digits[point:] if point is not None else digits),
    st.sampled_from(["", "-", "+"]),
    _digits,
    st.one_of(st.none(), st.integers(min_value=0, max_value=19)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_scores, min_size=1, max_size=20))
@example(["999999999999999", "9999999999999999", "0.000000000000000000001", "-0.0", "+.5", "7.", "123456789.012345"])
def test_the_compiled_parser_reads_every_decimal_score_as_python_does(scores: list[str]) -> None:
    if not parsing.available():
        pytest.skip("the compiled parser is not built")
    lines = "".join(f"q Q0 d{i} {i + 1} {score} t\n" for i, score in enumerate(scores))
    out = parsing.parse(lines.encode(), 0)
    values = np.frombuffer(out["values"], dtype=np.float64)
    assert [v.hex() for v in values.tolist()] == [float(s).hex() for s in scores]
