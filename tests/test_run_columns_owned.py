"""``Run.from_columns`` leaves the caller's columns alone unless it is told they are handed over (``owned``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stagewise.data.columns import pair_keys
from stagewise.data.run import Run
from stagewise.data.strings import StringColumn


def _columns(query_order: list[int], ties: bool):
    """A run grouped by query (numeric ids, not in byte order, so blocks move) with tied scores."""
    first_seen = [str(q) for q in query_order]
    codes = np.repeat(np.arange(len(first_seen), dtype=np.int32), 4)
    docs = StringColumn.from_strings([f"d{(i * 7) % 10}" for i in range(len(codes))])
    scores = np.tile(np.array([3.0, 2.0, 2.0, 1.0] if ties else [4.0, 3.0, 2.0, 1.0]), len(first_seen))
    scores += np.repeat(np.arange(len(first_seen)) * 10.0, 4)  # each query's own scores: a moved block shows
    queries = StringColumn.from_strings([first_seen[c] for c in codes])
    return first_seen, codes, docs, scores, pair_keys(queries, docs)


@settings(max_examples=30, deadline=None)
@given(order=st.permutations([10, 9, 100, 2, 33]), ties=st.booleans())
def test_the_callers_columns_are_unchanged_and_owned_gives_the_same_run(order: list[int], ties: bool) -> None:
    first_seen, codes, docs, scores, keys = _columns(order, ties)
    before = (codes.copy(), docs.values(), scores.copy(), keys.copy())
    run = Run.from_columns(first_seen, codes, docs, scores, None, keys, name="r")
    assert (codes == before[0]).all() and docs.values() == before[1]
    assert (scores == before[2]).all() and (keys == before[3]).all()
    handed = Run.from_columns(*_columns(order, ties)[:4], None, _columns(order, ties)[4], name="r", owned=True)
    assert run.to_dict() == handed.to_dict() and list(run.query_ids) == sorted(map(str, order))
