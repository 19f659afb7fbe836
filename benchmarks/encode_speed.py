"""Encoding throughput, offline: stagewise's encoders against a plain sentence-transformers call on the same
texts, in one run, with the cosine agreement of their vectors.

- plain: ``SentenceTransformer(packaged all-MiniLM-L6-v2).encode(texts)`` (its defaults: batch 32, texts
  sorted by character length, tokenised batch by batch);
- stagewise torch: the same model and modules, texts tokenised once (Rust tokenizers), sorted by token
  length, batches padded only to their own longest text (``--batch-size``);
- stagewise onnx: the same fast path on an fp32 ONNX export run by onnxruntime, pooled in numpy (the export,
  made once, is timed apart).

Texts are SciFact's abstracts (title + abstract), the first ``--n``. Each encoder is warmed up on 16 texts
first. The machine's other load shows in the figures: compare the ratios, measured in the same run.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="texts to encode (SciFact has 5,183)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--root", type=Path, default=SHARED)
    parser.add_argument("--work", type=Path, default=Path("/tmp/stagewise-bench-dense"))
    args = parser.parse_args(argv)
    if not (args.root / "scifact").is_dir():
        print(f"no SciFact at {args.root / 'scifact'} (../shared is absent)", file=sys.stderr)
        return 2
    import numpy as np

    from stagewise.dense.encoders import OnnxEncoder, load_encoder
    from stagewise.retrieval import read_scifact

    texts = read_scifact(args.root / "scifact").documents.texts[: args.n]
    torch_encoder = load_encoder(batch_size=args.batch_size)
    plain_model = torch_encoder.model
    started = time.perf_counter()
    onnx_folder = args.work / "onnx"
    if not (onnx_folder / "model.onnx").is_file():
        OnnxEncoder.export(None, onnx_folder)
    export_seconds = time.perf_counter() - started
    onnx_encoder = load_encoder(onnx_folder, backend="onnx", batch_size=args.batch_size)
    warm = texts[:16]
    plain_model.encode(warm)
    torch_encoder.encode(warm)
    onnx_encoder.encode(warm)

    started = time.perf_counter()
    plain = plain_model.encode(texts, batch_size=args.batch_size)  # the same batch size: only the path differs
    plain_s = time.perf_counter() - started
    rows = [("plain SentenceTransformer.encode", plain_s, 1.0, "")]
    for label, encoder in (("stagewise torch", torch_encoder), ("stagewise onnx", onnx_encoder)):
        vectors = encoder.encode(texts)
        seconds = encoder.last_report.seconds
        cosine = (vectors * plain).sum(axis=1) / np.linalg.norm(vectors, axis=1) / np.linalg.norm(plain, axis=1)
        rows.append((label, seconds, float(cosine.min()), str(encoder.last_report)))
    print(f"{len(texts):,} SciFact abstracts; {rows[1][3].split(';')[1].strip()}; batch {args.batch_size}")
    print("| encoder | seconds | texts/s | speed-up | min cosine vs plain |")
    print("|---|---|---|---|---|")
    for label, seconds, cosine, _ in rows:
        print(f"| {label} | {seconds:.1f} | {len(texts) / seconds:.1f} | {plain_s / seconds:.2f}x | {cosine:.7f} |")
    print(f"onnx export (once): {export_seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
