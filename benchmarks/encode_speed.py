"""Encoding throughput, offline: stagewise's encoders against a plain sentence-transformers call on the same
texts, taken in turn (A B C D, A B C D, ...) in one process, with wall and CPU time and the cosine agreement of
their vectors.

- plain: ``SentenceTransformer(packaged all-MiniLM-L6-v2).encode(texts, batch_size=B)`` (float32; texts
  sorted by character length, tokenised batch by batch);
- stagewise default: ``load_encoder()``, what ``stagewise encode`` and the dense retriever run: the torch
  backend with ``precision="auto"`` (bfloat16 products where the CPU has them natively), texts tokenised once
  (Rust tokenizers), sorted by token length, batches padded only to their own longest text;
- stagewise torch float32: the same path in sentence-transformers' own float32 arithmetic;
- stagewise onnx: the same path on an fp32 ONNX export (onnxruntime's transformer optimizer fuses attention,
  layer norms and GELU) run by onnxruntime, pooled in numpy (the export, made once, is timed apart).

Texts are SciFact's abstracts (title + abstract), the first ``--n``. Each encoder is warmed up on 16 texts
first. CPU time is the process's user + system time while that encoder ran (all its threads): on a machine
shared with other jobs it moves much less than wall time. PASS needs the default path at >= 2x plain in CPU
time and in wall time (sums over the rounds) and every text's vector at cosine >= 0.9999 to plain's.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TARGET_SPEEDUP = 2.0
TARGET_COSINE = 0.9999


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=256, help="texts to encode (SciFact has 5,183)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2, help="times each encoder runs, in turn with the others")
    parser.add_argument("--threads", type=int, default=None, help="torch and onnxruntime threads (default: all)")
    parser.add_argument("--root", type=Path, default=SHARED)
    parser.add_argument("--work", type=Path, default=Path("/tmp/stagewise-bench-dense"))
    args = parser.parse_args(argv)
    if not (args.root / "scifact").is_dir():
        print(f"no SciFact at {args.root / 'scifact'} (../shared is absent)", file=sys.stderr)
        return 2
    import numpy as np

    from stagewise.dense._deps import packaged_model_path, require

    torch = require("torch")  # with stagewise's OpenMP settings, which the plain encoder then shares
    from sentence_transformers import SentenceTransformer

    from stagewise.dense.encoders import OnnxEncoder, load_encoder
    from stagewise.retrieval import read_scifact

    if args.threads:
        torch.set_num_threads(args.threads)
    texts = read_scifact(args.root / "scifact").documents.texts[: args.n]
    plain_model = SentenceTransformer(str(packaged_model_path()), device="cpu")
    size, threads = args.batch_size, args.threads
    default = load_encoder(batch_size=size, threads=threads)
    float32 = load_encoder(batch_size=size, threads=threads, precision="float32")
    started = time.perf_counter()
    onnx_folder = args.work / "onnx"
    if not (onnx_folder / "model.onnx").is_file():
        OnnxEncoder.export(None, onnx_folder)
    export_seconds = time.perf_counter() - started
    onnx = load_encoder(onnx_folder, backend="onnx", batch_size=size, threads=threads)
    encoders = {
        "plain SentenceTransformer.encode (float32)": lambda t: plain_model.encode(t, batch_size=size),
        f"stagewise default ({default.backend}, {default.precision})": default.encode,
        "stagewise torch float32": float32.encode,
        "stagewise onnx float32": onnx.encode,
    }
    for encode in encoders.values():
        encode(texts[:16])
    wall = dict.fromkeys(encoders, 0.0)
    cpu = dict.fromkeys(encoders, 0.0)
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for label, encode in encoders.items():
            wall_start, cpu_start = time.perf_counter(), cpu_seconds()
            vectors[label] = np.asarray(encode(texts), dtype=np.float32)
            wall[label] += time.perf_counter() - wall_start
            cpu[label] += cpu_seconds() - cpu_start
    plain_label = next(iter(encoders))
    plain = vectors[plain_label]
    print(
        f"{len(texts):,} SciFact abstracts, batch {size}, {args.rounds} rounds taken in turn, "
        f"{torch.get_num_threads()} torch threads, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}; "
        f"{default.last_report}"
    )
    print("| encoder | wall s | CPU s | texts/s (wall) | speed-up wall | speed-up CPU | min cosine vs plain |")
    print("|---|---|---|---|---|---|---|")
    cosines = {}
    for label in encoders:
        v = vectors[label]
        cosine = (v * plain).sum(axis=1) / np.linalg.norm(v, axis=1) / np.linalg.norm(plain, axis=1)
        cosines[label] = float(cosine.min())
        print(
            f"| {label} | {wall[label]:.1f} | {cpu[label]:.1f} | {args.rounds * len(texts) / wall[label]:.1f} | "
            f"{wall[plain_label] / wall[label]:.2f}x | {cpu[plain_label] / cpu[label]:.2f}x | {cosines[label]:.7f} |"
        )
    print(f"onnx export (once, or found in {onnx_folder}): {export_seconds:.1f} s")
    label = list(encoders)[1]
    speed_wall, speed_cpu = wall[plain_label] / wall[label], cpu[plain_label] / cpu[label]
    ok = speed_wall >= TARGET_SPEEDUP and speed_cpu >= TARGET_SPEEDUP and cosines[label] >= TARGET_COSINE
    print(
        f"{'PASS' if ok else 'MISS'}: default path {speed_wall:.2f}x wall, {speed_cpu:.2f}x CPU "
        f"(target >= {TARGET_SPEEDUP:g}x both), min cosine {cosines[label]:.6f} (target >= {TARGET_COSINE}); "
        f"against onnx: {wall['stagewise onnx float32'] / wall[label]:.2f}x wall, "
        f"{cpu['stagewise onnx float32'] / cpu[label]:.2f}x CPU"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
