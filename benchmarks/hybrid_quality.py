"""Hybrid retrieval quality, offline: BM25, dense (the packaged all-MiniLM-L6-v2), their fusion, tuned fusion
with cross-validation, and each reranker over the fused top 100, on SciFact (test) and Cranfield.

Every stage is measured on its own with trec_eval's conventions (linear gain, relevance level 1, judged
queries with no result score 0): nDCG@10 and recall@100.

- BM25: Lucene BM25 (k1 = 1.2, b = 0.75), Snowball stemming, Lucene's 33 stopwords; top 1000.
- dense: all-MiniLM-L6-v2 (packaged, 256 tokens, mean pooling, unit vectors), exact inner product, top 1000;
  documents are encoded with the onnx backend (cosine >= 0.9999 against torch; see encode_speed.py) and the
  index is kept in --work, so a rerun does not encode again.
- RRF: rrf_k = 60 over both top-1000 lists.
- tuned: wsum of min-max-normalised scores, weights from the exact grid (step 0.1) chosen on nDCG@10 with
  5-fold cross-validation (seed 0): every query is fused with weights chosen without it (held-out figures).
- rerankers over RRF's top 100 (results below 100 dropped): bm25-proximity (no extra), bi-encoder (the MiniLM
  cosine; document vectors taken from the dense index, which holds the same model's vectors). No
  cross-encoder is installable offline (no package ships one), so none is in the table; the cross-encoder path
  is tested with a tiny random model in tests/test_rerank.py.

Run ``python benchmarks/hybrid_quality.py --help``; ``--markdown`` prints the table of docs/dense.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
METRICS = ["ndcg@10", "recall@100"]


class Lookup:
    """The encoder, but texts whose vectors the dense index already holds are not encoded again."""

    def __init__(self, encoder, index, texts):
        self.encoder, self.name, self.dimension, self.normalized = encoder, encoder.name, encoder.dimension, True
        self.rows = {t: i for i, t in enumerate(texts)}
        self.index = index

    def encode(self, texts):
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        missing = [i for i, t in enumerate(texts) if t not in self.rows]
        known = [i for i, t in enumerate(texts) if t in self.rows]
        if known:
            out[known] = np.asarray(self.index.embeddings[[self.rows[texts[i]] for i in known]], dtype=np.float32)
        if missing:
            out[missing] = self.encoder.encode([texts[i] for i in missing])
        return out


def collection(name: str, root: Path):
    from stagewise.retrieval import read_classic, read_scifact

    return read_scifact(root / "scifact") if name == "scifact" else read_classic(name, root)


def run_one(name: str, root: Path, work: Path, backend: str, log) -> list[tuple[str, dict[str, float], str]]:
    import stagewise
    from stagewise.dense.encoders import load_encoder
    from stagewise.dense.index import DenseIndex, corpus_checksum
    from stagewise.fusion import fuse, optimize
    from stagewise.rerank import make_reranker
    from stagewise.retrieval import BM25Index

    coll = collection(name, root)
    qrels = coll.read_qrels()
    docs = coll.documents
    rows: list[tuple[str, dict[str, float], str]] = []

    def measure(label: str, run, note: str = "") -> None:
        means = stagewise.evaluate(qrels, run, METRICS).means
        rows.append((label, next(iter(means.values())), note))
        log(f"{name}: {label}: {rows[-1][1]}")

    started = time.perf_counter()
    bm25 = BM25Index.build(docs).search(coll.queries, k=1000, name="bm25")
    measure("BM25", bm25, f"{time.perf_counter() - started:.1f} s")
    encoder = load_encoder(backend=backend, onnx_cache=work / "onnx")
    folder = work / f"{name}-dense-{backend}"
    checksum = corpus_checksum(docs.ids, docs.texts)
    started = time.perf_counter()
    if folder.is_dir() and DenseIndex.load(folder).meta.get("checksum") == checksum:
        index = DenseIndex.load(folder)
        encoded = f"index reused from {folder}"
    else:
        index = DenseIndex.build(docs, encoder)
        index.save(folder)
        encoded = f"{encoder.last_report}"
    log(f"{name}: {encoded}")
    dense = index.search(coll.queries, k=1000, encoder=encoder, name="dense")
    measure(
        "dense (all-MiniLM-L6-v2)", dense, f"{time.perf_counter() - started:.1f} s; truncated {index.meta['truncated']}"
    )
    runs = {"bm25": bm25, "dense": dense}
    rrf = fuse(runs, "rrf")
    measure("RRF(BM25, dense)", rrf, "rrf_k=60")
    report = optimize(runs, qrels, "wsum", metric="ndcg@10", norm="minmax", folds=5, seed=0)
    chosen = ", ".join(str(f.method) for f in report.folds)
    measure("tuned wsum, 5-fold CV", report.run, f"held out; folds chose {chosen}")
    rrf_tuned = optimize(runs, qrels, "rrf", metric="ndcg@10", folds=5, seed=0)
    measure("tuned weighted RRF, 5-fold CV", rrf_tuned.run, "held out")
    for spec in ("bm25-proximity", "bi-encoder"):
        options = {"encoder": Lookup(encoder, index, docs.texts)} if spec == "bi-encoder" else {}
        reranker = make_reranker(spec, **options)
        started = time.perf_counter()
        reranked = reranker.rerank(coll.queries, rrf, docs, depth=100)
        measure(f"RRF top 100 -> {spec}", reranked, f"{time.perf_counter() - started:.1f} s")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collections", nargs="+", default=["scifact", "cranfield"])
    parser.add_argument("--root", type=Path, default=SHARED, help="folder with scifact/ and cranfield/")
    parser.add_argument("--work", type=Path, default=Path("/tmp/stagewise-bench-dense"), help="index cache folder")
    parser.add_argument("--backend", default="onnx", choices=["onnx", "torch"], help="document encoder backend")
    parser.add_argument("--markdown", action="store_true", help="print the docs/dense.md table")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        print(f"no data at {args.root} (../shared is absent)", file=sys.stderr)
        return 2
    args.work.mkdir(parents=True, exist_ok=True)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    results = {name: run_one(name, args.root, args.work, args.backend, log) for name in args.collections}
    header = "| stage | " + " | ".join(f"{c} nDCG@10 | {c} R@100" for c in args.collections) + " |"
    print(header)
    print("|" + "---|" * (1 + 2 * len(args.collections)))
    labels = [label for label, _, _ in results[args.collections[0]]]
    for i, label in enumerate(labels):
        cells = []
        for c in args.collections:
            means = results[c][i][1]
            cells += [f"{means['ndcg@10']:.4f}", f"{means['recall@100']:.4f}"]
        print(f"| {label} | " + " | ".join(cells) + " |")
    if not args.markdown:
        for c in args.collections:
            for label, _, note in results[c]:
                if note:
                    print(f"{c}: {label}: {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
