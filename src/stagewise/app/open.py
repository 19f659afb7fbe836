"""What the web app serves, opened from files: a workspace (qrels, runs, label database, texts) and RAG samples."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["open_rag", "open_workspace", "rag_db"]


def open_workspace(qrels: Any, runs: Mapping[str, Any], db: Path, corpus: Any = None, queries: Any = None) -> Any:
    """Read the qrels and the runs (``{name: path or Run}``), open (or create) the label database, and compute
    every query's metrics. ``corpus`` and ``queries`` (BEIR folder, JSONL, TSV) give texts to show."""
    from stagewise.app.model import Workspace
    from stagewise.data.readers import read_qrels, read_run
    from stagewise.store.labels import LabelStore

    judged = read_qrels(qrels).to_dict()
    store = LabelStore(db, judged)
    if store.made_from(judged) is False:  # a --db started from other judgements would show their labels
        store.close()
        from stagewise.errors import InputError

        raise InputError(
            str(db),
            f"was started from other judgements than {qrels}",
            hint="give --db a new file to start from these judgements, or the --qrels it was started from",
        )
    loaded = {name: read_run(run, name=name).to_dict() for name, run in runs.items()}
    texts = topics = None
    if corpus is not None or queries is not None:
        from stagewise.data.collections import read_corpus, read_queries

        if corpus is not None:
            ranked = {d for run in loaded.values() for docs in run.values() for d in docs}
            texts = {d: t for d, t in read_corpus(corpus) if d in ranked}  # only what a page can show
        if queries is not None:
            topics = read_queries(queries).to_dict()
    return Workspace(store, loaded, texts=texts, queries=topics)


def rag_db(db: Path) -> Path:
    """Where the RAG samples' gold marks are kept: beside ``db`` (``labels.sqlite`` -> ``labels.rag.sqlite``)."""
    return db.with_name(f"{db.stem}.rag{db.suffix or '.sqlite'}")


def open_rag(path: Any, db: Path, corpus: Any = None) -> Any:
    """RAG records, their gold marks (kept in :func:`rag_db`) and each sample's stage label from evaluate_rag.

    ``corpus`` (BEIR folder, JSONL, TSV) gives the texts of passages no record holds (a gold passage outside
    every context); only the passages the samples name are kept."""
    from stagewise.app.rag import RagSamples
    from stagewise.rag.records import read_records
    from stagewise.store.labels import LabelStore

    records = read_records(path)
    texts = None
    if corpus is not None:
        from stagewise.data.collections import read_corpus

        named = {p for r in records for p in (*r.retrieved, *(r.context or ()), *RagSamples.gold_of(r))}
        texts = {d: t for d, t in read_corpus(corpus) if d in named}
    return RagSamples(records, LabelStore(rag_db(db), RagSamples.initial_marks(records)), texts=texts)
