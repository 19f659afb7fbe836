"""Encoders: text in, one float32 vector per text out, behind one small protocol.

An :class:`Encoder` has a ``name``, a ``dimension``, a ``normalized`` flag (vectors of unit length, so inner
product is cosine) and ``encode(texts) -> float32 matrix``. A test double is ten lines::

    class Letters:
        name, dimension, normalized = "letters", 26, False
        def encode(self, texts):
            return np.array([[t.count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], np.float32)

Two real ones share one fast path (:class:`TransformerEncoder`): every text is tokenised once (Rust
``tokenizers``), texts longer than the model's ``max_length`` tokens are truncated *and counted*, texts are
sorted by token length so a batch is padded only to its own longest text, and the vectors come back in input
order. :class:`SentenceTransformerEncoder` runs the sentence-transformers modules in torch (the reference);
:class:`OnnxEncoder` runs an ONNX export with onnxruntime and pools in numpy (starts in a fraction of a second;
no torch needed once the export exists).

Precision: the torch encoder's matrix products run in bfloat16 (torch's CPU autocast: weights and activations
rounded to bfloat16 for the products and attention, float32 sums, layer norms, pooling and normalisation) when
the CPU multiplies bfloat16 natively (AVX512-BF16 or AMX), and in float32 otherwise; ``precision="float32"``
asks for float32 everywhere. On SciFact the bfloat16 vectors agree with sentence-transformers' float32 ones to
cosine >= 0.9999 per text (docs/dense.md has the figures). onnxruntime's CPU kernels are float32 only.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from stagewise.dense._deps import require, resolve_model
from stagewise.dense.backends import BACKENDS, PRECISIONS
from stagewise.errors import ConventionError, InputError

Progress = Callable[[int, int], None]
ONNX_FILE = "model.onnx"


@runtime_checkable
class Encoder(Protocol):
    """What the dense stage needs from an encoder."""

    name: str
    dimension: int
    normalized: bool

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 row of length ``dimension`` per text, in input order."""
        ...


@dataclass(frozen=True)
class EncodeReport:
    """What the last :meth:`TransformerEncoder.encode` call did."""

    texts: int
    truncated: int
    """Texts longer than ``max_length`` tokens (special tokens included), cut to ``max_length``."""
    max_length: int
    tokens: int
    """Tokens encoded, after truncation."""
    padded: int
    """Padding tokens added to fill batches (length-sorted batches keep this small)."""
    batches: int
    seconds: float
    backend: str = ""
    """What ran the model (``torch`` or ``onnx``)."""
    precision: str = "float32"
    """What the matrix products were computed in: ``float32`` or ``bfloat16`` (see :data:`PRECISIONS`)."""

    def __str__(self) -> str:
        rate = self.texts / self.seconds if self.seconds > 0 else float("inf")
        ran = f" ({self.backend}, {self.precision})" if self.backend else f" ({self.precision})"
        return (
            f"encoded {self.texts:,} texts{ran} in {self.seconds:.2f} s ({rate:,.0f}/s); {self.truncated:,} truncated "
            f"to {self.max_length} tokens; {self.tokens:,} tokens, {self.padded:,} padding, {self.batches:,} batches"
        )


# ------------------------------------------------------------------------------------------ model folder


@dataclass(frozen=True)
class Pooling:
    """How token vectors become one vector: ``mean``, ``cls`` or ``max``, then unit length or not."""

    mode: str
    normalize: bool


def read_pooling(folder: Path) -> Pooling:
    """The pooling a sentence-transformers folder declares (modules.json, 1_Pooling/config.json); a bare
    transformer folder (no modules.json) gets mean pooling without normalisation, as sentence-transformers
    gives it."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return Pooling("mean", False)
    try:
        modules = json.loads(modules_file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(modules_file, f"unreadable ({exc})") from None
    mode, normalize = "mean", False
    for module in modules:
        kind = str(module.get("type", ""))
        if kind.endswith("Pooling"):
            config = folder / module.get("path", "") / "config.json"
            settings = json.loads(config.read_text(encoding="utf-8")) if config.is_file() else {}
            if settings.get("pooling_mode_cls_token"):
                mode = "cls"
            elif settings.get("pooling_mode_max_tokens"):
                mode = "max"
            elif settings.get("pooling_mode_mean_sqrt_len_tokens"):
                mode = "mean_sqrt_len"
            elif settings.get("pooling_mode_lasttoken"):
                mode = "last"
        elif kind.endswith("Normalize"):
            normalize = True
    return Pooling(mode, normalize)


def read_max_length(folder: Path, tokenizer_limit: int | None) -> tuple[int, bool]:
    """``(max_length, lowercase)``: sentence-transformers' ``max_seq_length`` and ``do_lower_case``, else the
    tokenizer's own limit, else the model's position embeddings, else 512."""
    lowercase = False
    config = folder / "sentence_bert_config.json"
    if config.is_file():
        settings = json.loads(config.read_text(encoding="utf-8"))
        lowercase = bool(settings.get("do_lower_case", False))
        if settings.get("max_seq_length"):
            return int(settings["max_seq_length"]), lowercase
    if tokenizer_limit:
        return int(tokenizer_limit), lowercase
    model_config = folder / "config.json"
    if model_config.is_file():
        positions = json.loads(model_config.read_text(encoding="utf-8")).get("max_position_embeddings")
        if positions:
            return min(int(positions), 512), lowercase
    return 512, lowercase


def pool(hidden: np.ndarray, mask: np.ndarray, pooling: Pooling) -> np.ndarray:
    """Token vectors ``[batch, tokens, dim]`` pooled to ``[batch, dim]`` float32, as sentence-transformers does."""
    if pooling.mode == "cls":
        out = hidden[:, 0, :].astype(np.float32)
    elif pooling.mode == "last":
        last = mask.sum(axis=1).astype(np.int64) - 1
        out = hidden[np.arange(len(hidden)), last, :].astype(np.float32)
    elif pooling.mode == "max":
        masked = np.where(mask[:, :, None] > 0, hidden, -1e9)
        out = masked.max(axis=1).astype(np.float32)
    else:
        weights = mask.astype(np.float32)[:, :, None]
        summed = (hidden.astype(np.float32) * weights).sum(axis=1)
        counts = np.clip(weights.sum(axis=1), 1e-9, None)
        out = summed / (np.sqrt(counts) if pooling.mode == "mean_sqrt_len" else counts)
    if pooling.normalize:
        out = normalize_rows(out)
    return out


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero), float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


# ------------------------------------------------------------------------------------------- fast path


class TransformerEncoder:
    """Shared fast path: tokenise once, count truncation, length-sorted batches, input order restored.

    Subclasses set ``name``, ``dimension``, ``normalized``, ``backend``, ``folder`` and ``_tokenizer`` (a
    ``tokenizers.Tokenizer``) and implement ``_forward(ids, mask, types) -> float32 [batch, dimension]``.
    """

    name: str
    dimension: int
    normalized: bool
    backend: str
    folder: Path
    max_length: int
    lowercase: bool = False
    precision: str = "float32"
    batch_size: int = 64
    last_report: EncodeReport | None = None
    _tokenizer: Any
    _pad_id: int = 0

    def _setup_tokenizer(self, tokenizer: Any) -> None:
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_length)
        padding = tokenizer.padding
        self._pad_id = int(padding["pad_id"]) if padding else 0
        self._tokenizer = tokenizer

    def tokenize(self, texts: Sequence[str]) -> tuple[list[list[int]], int]:
        """Token ids of each text (special tokens added, truncated to ``max_length``) and how many were cut."""
        if isinstance(texts, str):
            raise ConventionError("encode takes a list of texts, not one string")
        items = [t.lower() for t in texts] if self.lowercase else [str(t) for t in texts]
        encodings = self._tokenizer.encode_batch(items)
        ids = [e.ids for e in encodings]
        truncated = sum(1 for e in encodings if e.overflowing)
        return ids, truncated

    def encode(
        self, texts: Sequence[str], *, batch_size: int | None = None, progress: Progress | None = None
    ) -> np.ndarray:
        """Vectors of ``texts`` (float32, ``[len(texts), dimension]``), in input order; ``last_report`` says
        how many were truncated and how long it took."""
        started = time.perf_counter()
        size = batch_size or self.batch_size
        if size < 1:
            raise ConventionError(f"The 'batch_size' parameter of encode must be an int >= 1. Got {size!r} instead.")
        ids, truncated = self.tokenize(texts)
        n = len(ids)
        out = np.zeros((n, self.dimension), dtype=np.float32)
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=n)
        # Longest first: the biggest batch comes first, so memory peaks at once and the progress bar is honest.
        order = np.argsort(-lengths, kind="stable")
        padded = batches = 0
        for start in range(0, n, size):
            rows = order[start : start + size]
            width = int(lengths[rows[0]])
            batch_ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for i, row in enumerate(rows.tolist()):
                length = int(lengths[row])
                batch_ids[i, :length] = ids[row]
                mask[i, :length] = 1
            padded += int(mask.size - mask.sum())
            out[rows] = self._forward(batch_ids, mask, np.zeros_like(batch_ids))
            batches += 1
            if progress is not None:
                progress(min(start + size, n), n)
        self.last_report = EncodeReport(
            texts=n,
            truncated=truncated,
            max_length=self.max_length,
            tokens=int(lengths.sum()),
            padded=padded,
            batches=batches,
            seconds=time.perf_counter() - started,
            backend=self.backend,
            precision=self.precision,
        )
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """The encoder as index metadata."""
        return {
            "model": self.name,
            "model_path": str(self.folder),
            "backend": self.backend,
            "precision": self.precision,
            "dimension": self.dimension,
            "normalized": self.normalized,
            "max_length": self.max_length,
            "lowercase": self.lowercase,
        }

    def __repr__(self) -> str:
        unit = ", normalized" if self.normalized else ""
        return (
            f"{type(self).__name__}({self.name!r}, {self.dimension} dims{unit}, max {self.max_length} tokens, "
            f"{self.precision})"
        )


class SentenceTransformerEncoder(TransformerEncoder):
    """A local sentence-transformers folder run in torch through its own modules (transformer, pooling,
    normalisation): the reference. ``model=None`` is the packaged all-MiniLM-L6-v2.

    ``precision`` (:data:`PRECISIONS`): ``auto`` computes the matrix products in bfloat16 where the CPU has
    native bfloat16 (about twice float32's speed, cosine >= 0.9999 to float32 on SciFact) and in float32
    elsewhere; ``float32`` is sentence-transformers' own arithmetic, ``bfloat16`` forces bfloat16 (emulated,
    so slow, on CPUs without it)."""

    backend = "torch"

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 64,
        threads: int | None = None,
        precision: str = "auto",
    ) -> None:
        self.name, self.folder = resolve_model(model)
        st = require("sentence_transformers")
        torch = require("torch")
        self.precision = _torch_precision(precision, torch)
        if threads:
            torch.set_num_threads(threads)
        try:
            self.model = st.SentenceTransformer(str(self.folder), device="cpu")
        except (OSError, ValueError) as exc:
            raise InputError(self.folder, f"cannot be loaded as a sentence-transformers model ({exc})") from None
        self.model.eval()
        self._torch = torch
        self.batch_size = batch_size
        self.max_length, self.lowercase = read_max_length(self.folder, self.model.max_seq_length)
        dimension = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dimension = int(dimension())
        self.normalized = read_pooling(self.folder).normalize
        self._setup_tokenizer(_copy_tokenizer(self.model.tokenizer.backend_tokenizer))

    def _forward(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        torch = self._torch
        features = {
            "input_ids": torch.from_numpy(ids),
            "attention_mask": torch.from_numpy(mask),
            "token_type_ids": torch.from_numpy(types),
        }
        # Autocast rounds to bfloat16 only what it deems safe (products, attention) and keeps layer norms,
        # softmax sums, pooling and normalisation in float32; enabled=False leaves sentence-transformers' float32.
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bfloat16"):
            out = self.model(features)["sentence_embedding"]
        return out.float().numpy()


class OnnxEncoder(TransformerEncoder):
    """An ONNX model folder (``model.onnx`` with ``tokenizer.json`` and the sentence-transformers pooling
    files) run with onnxruntime; pooling and normalisation in numpy. Build one from a sentence-transformers
    folder with :meth:`export` (done once; the CLI caches it beside the index)."""

    backend = "onnx"

    def __init__(
        self, folder: str | os.PathLike[str], *, name: str | None = None, batch_size: int = 64,
        threads: int | None = None, precision: str = "auto",
    ) -> None:  # fmt: skip
        self.precision = _onnx_precision(precision)
        ort = require("onnxruntime")
        tokenizers = require("tokenizers")
        self.folder = Path(folder)
        model_file = self.folder / ONNX_FILE
        if not model_file.is_file():
            raise InputError(
                self.folder, f"has no {ONNX_FILE}", expected="an ONNX model folder",
                hint="use --backend onnx with a sentence-transformers folder to export one",
            )  # fmt: skip
        tokenizer_file = self.folder / "tokenizer.json"
        if not tokenizer_file.is_file():
            raise InputError(self.folder, "has no tokenizer.json", expected="an ONNX model folder with its tokenizer")
        info = _read_json(self.folder / "stagewise_onnx.json")
        self.name = name or info.get("model") or self.folder.name
        self.source = info.get("source")  # the sentence-transformers folder this was exported from, if any
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        self.batch_size = batch_size
        self.pooling = read_pooling(self.folder)
        self.normalized = self.pooling.normalize
        tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
        limit = tokenizer.truncation["max_length"] if tokenizer.truncation else None
        self.max_length, self.lowercase = read_max_length(self.folder, limit)
        self._setup_tokenizer(tokenizer)
        self.dimension = int(info.get("dimension") or self._forward(*self._probe()).shape[1])

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        if self.source:
            out["model_path"] = self.source
            out["onnx_path"] = str(self.folder)
        return out

    def _probe(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ids = np.array([self._tokenizer.encode("dimension").ids], dtype=np.int64)
        return ids, np.ones_like(ids), np.zeros_like(ids)

    def _forward(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self.session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        return pool(hidden, mask, self.pooling)

    @staticmethod
    def export(model: str | os.PathLike[str] | None, target: str | os.PathLike[str], *, opset: int = 17) -> Path:
        """Export a sentence-transformers folder (default: the packaged MiniLM) to an ONNX folder ``target``:
        ``model.onnx`` (fp32, dynamic batch and length), the tokenizer and the pooling files. Needs torch and
        onnx once; written beside ``target`` and renamed, so a half-written export is never used."""
        name, folder = resolve_model(model)
        torch = require("torch")
        require("onnx")
        encoder = SentenceTransformerEncoder(folder, precision="float32")
        auto_model = encoder.model[0].auto_model
        with contextlib.suppress(AttributeError, ValueError, ImportError):
            # Plain matmul-softmax attention exports in the pattern onnxruntime fuses into one Attention node
            # (SDPA's export does not fuse); fp32 either way, so the vectors do not change.
            auto_model.set_attn_implementation("eager")

        class Transformer(torch.nn.Module):  # keyword call: positional order differs across transformers releases
            def __init__(self) -> None:
                super().__init__()
                self.inner = auto_model

            def forward(self, input_ids, attention_mask, token_type_ids):
                out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
                return out.last_hidden_state

        transformer = Transformer().eval()
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.stagewise-partial.", dir=target.parent))
        try:
            sample = encoder.tokenize(["an export sample", "a second, longer sample text for the export"])[0]
            width = max(len(s) for s in sample)
            ids = np.zeros((2, width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for i, s in enumerate(sample):
                ids[i, : len(s)] = s
                mask[i, : len(s)] = 1
            args = (torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(np.zeros_like(ids)))
            axes = {0: "batch", 1: "tokens"}
            with torch.inference_mode(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # tracer notes about shapes; the test checks cosine >= 0.9999
                torch.onnx.export(
                    transformer, args, str(tmp / "raw.onnx"), input_names=["input_ids", "attention_mask",
                    "token_type_ids"], output_names=["last_hidden_state"], dynamic_axes={"input_ids": axes,
                    "attention_mask": axes, "token_type_ids": axes, "last_hidden_state": axes},
                    opset_version=opset, dynamo=False,
                )  # fmt: skip
            fused = _optimize(tmp / "raw.onnx", tmp / ONNX_FILE, folder)
            tokenizer = _copy_tokenizer(encoder._tokenizer)
            tokenizer.no_truncation()
            tokenizer.save(str(tmp / "tokenizer.json"))
            for item in folder.iterdir():
                if item.name in ("modules.json", "sentence_bert_config.json", "config.json") or (
                    item.is_dir() and (item / "config.json").is_file() and item.name[:1].isdigit()
                ):
                    (shutil.copytree if item.is_dir() else shutil.copy2)(item, tmp / item.name)
            modules_file = folder / "modules.json"
            for module in json.loads(modules_file.read_text()) if modules_file.is_file() else []:
                (tmp / module.get("path", "")).mkdir(exist_ok=True)  # 2_Normalize has no files
            info = {"model": name, "source": str(folder), "stamp": model_stamp(model), "opset": opset,
                    "dimension": encoder.dimension, "exported_with": f"torch {torch.__version__}",
                    "fused_operators": fused}  # fmt: skip
            (tmp / "stagewise_onnx.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target


def _optimize(raw: Path, target: Path, folder: Path) -> dict[str, int] | None:
    """onnxruntime's transformer optimizer on a BERT-family export (fused attention, layer norms, GELU; fp32),
    else the export as it is. Returns the fused operators' counts, or None when not optimised."""
    config = _read_json(folder / "config.json")
    heads, hidden = config.get("num_attention_heads"), config.get("hidden_size")
    if config.get("model_type") in ("bert", "roberta", "xlm-roberta", "distilbert", "mpnet") and heads and hidden:
        try:
            from onnxruntime.transformers.optimizer import optimize_model

            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                model_type = (
                    "bert" if config["model_type"] in ("roberta", "xlm-roberta", "mpnet") else config["model_type"]
                )
                model = optimize_model(str(raw), model_type=model_type, num_heads=int(heads), hidden_size=int(hidden),
                                       opt_level=1, use_gpu=False)  # fmt: skip
                stats = {k: v for k, v in model.get_fused_operator_statistics().items() if v}
                model.save_model_to_file(str(target))
            raw.unlink()
            return stats
        except Exception as exc:  # any optimizer failure leaves the plain export, which is correct
            warnings.warn(f"onnxruntime's optimizer failed ({exc}); using the plain export", stacklevel=2)
            target.unlink(missing_ok=True)
    os.replace(raw, target)
    return None


def _check_precision(precision: str) -> str:
    name = str(precision).strip().lower()
    aliases = {"fp32": "float32", "bf16": "bfloat16"}
    name = aliases.get(name, name)
    if name not in PRECISIONS:
        choices = ", ".join(PRECISIONS)
        raise ConventionError(
            f"The 'precision' parameter of the encoder must be one of {choices}. Got {precision!r} instead."
        )
    return name


def native_bfloat16(torch: Any) -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AVX512-BF16 or AMX), as torch's CPU probe says; False
    when the probe is missing (an older or newer torch): float32 is then the safe choice."""
    cpu = getattr(torch, "cpu", None)
    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        check = getattr(cpu, probe, None)
        with contextlib.suppress(Exception):
            if check is not None and check():
                return True
    return False


def _torch_precision(precision: str, torch: Any) -> str:
    name = _check_precision(precision)
    if name == "auto":
        return "bfloat16" if native_bfloat16(torch) else "float32"
    return name


def _onnx_precision(precision: str) -> str:
    name = _check_precision(precision)
    if name == "bfloat16":
        raise ConventionError(
            "the onnx backend computes in float32 only (onnxruntime's CPU kernels); "
            "use --backend torch for bfloat16, or --precision float32"
        )
    return "float32"


def _copy_tokenizer(tokenizer: Any) -> Any:
    tokenizers = require("tokenizers")
    return tokenizers.Tokenizer.from_str(tokenizer.to_str())


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def model_stamp(model: str | os.PathLike[str] | None) -> str:
    """What identifies a model's weights as they are now (:func:`folder_stamp` of its folder)."""
    return folder_stamp(resolve_model(model)[1])


def folder_stamp(folder: str | os.PathLike[str]) -> str:
    """A model folder's resolved path and each weights file's size and modification time, hashed (12 hex
    digits): a model saved again in place, or another model at the same path, gets a new stamp."""
    folder = Path(folder).resolve()
    stamp = hashlib.sha256(str(folder).encode())
    for weights in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.bin")):
        st = weights.stat()
        stamp.update(f"{weights.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return stamp.hexdigest()[:12]


def onnx_cache_folder(model: str | os.PathLike[str] | None) -> Path:
    """Where an export of ``model`` is cached when no index folder is given: the user's cache folder, one
    sub-folder per model and weights (:func:`model_stamp`)."""
    from stagewise._io import user_cache_folder

    _, folder = resolve_model(model)
    return user_cache_folder() / "onnx" / f"{folder.name}-{model_stamp(model)}"


def is_export_of(cache: Path, model: str | os.PathLike[str] | None) -> bool:
    """Whether ``cache`` holds an ONNX export of ``model`` as its weights are now (its stagewise_onnx.json names
    the source folder and the weights' stamp)."""
    if not (cache / ONNX_FILE).is_file():
        return False
    info = _read_json(cache / "stagewise_onnx.json")
    _, folder = resolve_model(model)
    return info.get("source") == str(folder) and info.get("stamp") == model_stamp(model)


def load_encoder(
    model: str | os.PathLike[str] | None = None,
    *,
    backend: str = "torch",
    onnx_cache: str | os.PathLike[str] | None = None,
    batch_size: int = 64,
    threads: int | None = None,
    precision: str = "auto",
) -> TransformerEncoder:
    """An encoder for ``model`` (default: the packaged all-MiniLM-L6-v2; else a local folder).

    ``backend="torch"`` (the default, and the fastest where the CPU has bfloat16) runs sentence-transformers;
    ``backend="onnx"`` runs onnxruntime on ``model`` itself when it is an ONNX folder, else on an export of it
    kept in ``onnx_cache`` (made once, with torch). ``precision`` is one of :data:`PRECISIONS`; the encoder's
    ``precision`` attribute says what was chosen.
    """
    backend = BACKENDS.lookup(backend).name  # a name of stagewise.dense.backends (case-insensitive), or its error
    if backend == "torch":
        return SentenceTransformerEncoder(model, batch_size=batch_size, threads=threads, precision=precision)
    _onnx_precision(precision)  # before an export: bfloat16 is refused at once
    if model is not None and (Path(model) / ONNX_FILE).is_file():
        return OnnxEncoder(model, batch_size=batch_size, threads=threads, precision=precision)
    cache = Path(onnx_cache) if onnx_cache is not None else onnx_cache_folder(model)
    if not is_export_of(cache, model):
        if (cache / ONNX_FILE).is_file():  # another model's export (or older weights'): leave it, use our own
            cache = onnx_cache_folder(model)
        if not is_export_of(cache, model):
            OnnxEncoder.export(model, cache)
    return OnnxEncoder(cache, batch_size=batch_size, threads=threads, precision=precision)
