"""Encoder backends by name: what runs a dense encoder's model (light: names and help, no numpy, no torch).

>>> BACKENDS.names()
['torch', 'onnx']
>>> BACKENDS.lookup("ONNX").name
'onnx'
>>> PRECISIONS
('auto', 'float32', 'bfloat16')

:func:`stagewise.dense.encoders.load_encoder` takes a backend's name; the command line's ``--backend`` choices and
help are read from :data:`BACKENDS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from stagewise.spec import Registry

__all__ = ["BACKENDS", "PRECISIONS", "EncoderBackend"]


@dataclass(frozen=True)
class EncoderBackend:
    """A backend: its name, a sentence of help, and other names it answers to."""

    name: str
    help: str
    aliases: tuple[str, ...] = ()


BACKENDS: Registry[EncoderBackend] = Registry(
    "encoder backend",
    EncoderBackend(
        "torch",
        "sentence-transformers in torch (the reference; the default, in bfloat16 where the CPU has it natively)",
    ),
    EncoderBackend(
        "onnx", "onnxruntime on an ONNX export (exported once with torch and kept; starts in a fraction of a second)"
    ),
)
"""The encoder backends: ``torch`` (sentence-transformers) and ``onnx`` (onnxruntime)."""

PRECISIONS = ("auto", "float32", "bfloat16")
"""What an encoder computes its matrix products in: ``float32``; ``bfloat16`` (torch backend only: torch's CPU
autocast, float32 sums, norms and pooling); ``auto``, bfloat16 where the CPU multiplies it natively (AVX512-BF16
or AMX) and the backend is torch, else float32."""
