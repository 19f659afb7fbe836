"""Encoder backends by name: what runs a dense encoder's model (light: names and help, no numpy, no torch).

>>> BACKENDS.names()
['torch', 'onnx']
>>> BACKENDS.lookup("ONNX").name
'onnx'

:func:`stagewise.dense.encoders.load_encoder` takes a backend's name; the command line's ``--backend`` choices and
help are read from :data:`BACKENDS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from stagewise.spec import Registry

__all__ = ["BACKENDS", "EncoderBackend"]


@dataclass(frozen=True)
class EncoderBackend:
    """A backend: its name, a sentence of help, and other names it answers to."""

    name: str
    help: str
    aliases: tuple[str, ...] = ()


BACKENDS: Registry[EncoderBackend] = Registry(
    "encoder backend",
    EncoderBackend("torch", "sentence-transformers in torch (the reference)"),
    EncoderBackend(
        "onnx", "onnxruntime on an ONNX export (exported once with torch and kept; starts in a fraction of a second)"
    ),
)
"""The encoder backends: ``torch`` (sentence-transformers) and ``onnx`` (onnxruntime)."""
