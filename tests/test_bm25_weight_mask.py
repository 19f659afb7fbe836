"""bm25s' ``weight_mask``: each document's score multiplied by its weight before the top k; bm25s is the oracle."""

from __future__ import annotations

import numpy as np
import pytest

from stagewise.errors import ConventionError, StagewiseError
from stagewise.retrieval import BM25Index

bm25s = pytest.importorskip("bm25s")


def _corpus(seed: int, n_docs: int = 80) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[f"w{t}" for t in rng.zipf(1.4, size=rng.integers(3, 30)) % 60] for _ in range(n_docs)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_top_k_equals_bm25s_with_the_same_mask(seed: int) -> None:
    docs = _corpus(seed)
    rng = np.random.default_rng(100 + seed)
    mask = rng.random(len(docs)) * (rng.random(len(docs)) > 0.3)  # 30% filtered out, the rest re-weighted
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    retriever.index(docs, show_progress=False)
    index = BM25Index.from_tokens(docs, variant="lucene", k1=1.5, b=0.75)
    queries = [[f"w{t}" for t in rng.integers(0, 20, size=3)] for _ in range(12)]
    k = 10
    theirs_docs, theirs_scores = retriever.retrieve(queries, k=k, weight_mask=mask, show_progress=False)
    top = index.topk(queries, k=k, weight_mask=mask)
    for i in range(len(queries)):
        ours = slice(top.offsets[i], top.offsets[i + 1])
        positive = theirs_scores[i] > 0  # bm25s fills a short list with score-0 documents; stagewise leaves them out
        assert top.docs[ours].tolist() == theirs_docs[i][positive].tolist()
        np.testing.assert_allclose(top.scores[ours] / 2.5, theirs_scores[i][positive], rtol=1e-5)  # (k1 + 1)
        assert not (mask[top.docs[ours]] == 0).any()


def test_a_mask_of_ones_changes_nothing_and_the_run_reads_back() -> None:
    docs = _corpus(7)
    index = BM25Index.from_tokens(docs)
    queries = [["w1", "w2"], ["w3"]]
    plain, masked = index.topk(queries, k=5), index.topk(queries, k=5, weight_mask=np.ones(len(docs)))
    assert plain.docs.tolist() == masked.docs.tolist() and np.allclose(plain.scores, masked.scores)
    run = index.search(queries, k=5, weight_mask=np.ones(len(docs)))
    assert len(run) == len(plain.docs)


@pytest.mark.parametrize(
    ("mask", "match"),
    [(np.ones(3), "one per indexed document"), (np.array([["x"]]), "1-D array"), ("nan", "finite numbers")],
)
def test_a_wrong_mask_is_a_clear_error(mask, match) -> None:
    docs = _corpus(9, n_docs=5)
    index = BM25Index.from_tokens(docs)
    if isinstance(mask, str):
        mask = np.full(len(docs), np.nan)
    with pytest.raises((ConventionError, StagewiseError), match=match):
        index.topk([["w1"]], k=3, weight_mask=mask)
