"""Moved: the collection readers live in :mod:`stagewise.data.collections` (every reader belongs to ``data``).
This module re-exports them so that ``stagewise.retrieval.collections.read_corpus`` keeps working."""

from stagewise.data.collections import (
    CLASSIC_COLLECTIONS,
    CRANFIELD_GRADINGS,
    ID_FIELDS,
    TEXT_FIELDS,
    Collection,
    Documents,
    default_data_root,
    iter_corpus,
    load_collection,
    parse_smart,
    read_beir,
    read_classic,
    read_corpus,
    read_qrels_tsv,
    read_queries,
    read_scifact,
    read_smart,
    read_trec_qrels,
)

__all__ = [
    "CLASSIC_COLLECTIONS",
    "CRANFIELD_GRADINGS",
    "ID_FIELDS",
    "TEXT_FIELDS",
    "Collection",
    "Documents",
    "default_data_root",
    "iter_corpus",
    "load_collection",
    "parse_smart",
    "read_beir",
    "read_classic",
    "read_corpus",
    "read_qrels_tsv",
    "read_queries",
    "read_scifact",
    "read_smart",
    "read_trec_qrels",
]
