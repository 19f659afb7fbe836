"""The BM25 kernels' oracle for the tests: the numpy search path (``_kernels.search`` without the C extension,
every weight computed as it goes, ranked with ``np.lexsort``), and a bit-for-bit comparison of two top k."""

from __future__ import annotations

import numpy as np

from stagewise.retrieval import BM25Index, _kernels


def numpy_topk(index: BM25Index, queries, **kwargs):
    """``index.topk`` by the numpy path, the C extension switched off for the call."""
    saved = _kernels.native
    try:
        _kernels.native = None
        return index.topk(queries, **kwargs)
    finally:
        _kernels.native = saved


def assert_same_topk(a, b) -> None:
    """The same offsets, documents and scores, bit for bit (-0.0 too)."""
    assert np.array_equal(a.offsets, b.offsets)
    assert np.array_equal(a.docs, b.docs)
    assert np.array_equal(a.scores.view(np.uint64), b.scores.view(np.uint64))
