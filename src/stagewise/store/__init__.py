"""Relevance labels and their history in SQLite, for the web app (depends on ``data/`` only)."""

from stagewise.store.labels import LabelStore

__all__ = ["LabelStore"]
