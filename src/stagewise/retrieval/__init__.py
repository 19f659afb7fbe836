"""The retrieval stage: BM25 with stated variants and analysers, and readers for test collections.

>>> from stagewise.retrieval import BM25Index
>>> index = BM25Index.build({"d1": "wing lift", "d2": "heat transfer"})
>>> index.search({"q1": "lifting wings"}).to_polars()["doc_id"].to_list()
['d1']

Names load lazily, so importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

_EXPORTS = {
    "BM25Index": "stagewise.retrieval.index",
    "TopK": "stagewise.retrieval.index",
    "Analyser": "stagewise.retrieval.analysis",
    "STOPWORD_LISTS": "stagewise.retrieval.analysis",
    "STEMMERS": "stagewise.retrieval.analysis",
    "Scoring": "stagewise.retrieval.variants",
    "Variant": "stagewise.retrieval.variants",
    "VARIANTS": "stagewise.retrieval.variants",
    "Collection": "stagewise.data.collections",
    "Documents": "stagewise.data.collections",
    "read_beir": "stagewise.data.collections",
    "read_corpus": "stagewise.data.collections",
    "read_queries": "stagewise.data.collections",
    "read_classic": "stagewise.data.collections",
    "read_scifact": "stagewise.data.collections",
    "CLASSIC_COLLECTIONS": "stagewise.data.collections",
}

__all__ = [
    "CLASSIC_COLLECTIONS",
    "STEMMERS",
    "STOPWORD_LISTS",
    "VARIANTS",
    "Analyser",
    "BM25Index",
    "Collection",
    "Documents",
    "Scoring",
    "TopK",
    "Variant",
    "read_beir",
    "read_classic",
    "read_corpus",
    "read_queries",
    "read_scifact",
]

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.data.collections import (
        CLASSIC_COLLECTIONS,
        Collection,
        Documents,
        read_beir,
        read_classic,
        read_corpus,
        read_queries,
        read_scifact,
    )
    from stagewise.retrieval.analysis import STEMMERS, STOPWORD_LISTS, Analyser
    from stagewise.retrieval.index import BM25Index, TopK
    from stagewise.retrieval.variants import VARIANTS, Scoring, Variant

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
