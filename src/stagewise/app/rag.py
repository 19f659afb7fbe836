"""RAG samples for the web app: each sample's stage label recomputed by ``evaluate_rag`` when a person marks a
passage as gold evidence or not. The gold marks live in a label store (passage id -> 1), so they have a history,
undo and survive restarts like relevance labels."""

from __future__ import annotations

import dataclasses
from typing import Any

from stagewise.rag.diagnose import evaluate_rag
from stagewise.rag.records import RagRecord
from stagewise.store.labels import LabelStore

__all__ = ["RagSamples"]


def _flat(record: RagRecord) -> set[str]:
    return {p for alt in record.gold_evidence or () for p in alt}


class RagSamples:
    """Records, their gold marks in ``store``, and the page data of each sample."""

    def __init__(self, records: list[RagRecord], store: LabelStore) -> None:
        self.records = {r.id: r for r in records}
        self.store = store
        self.order = [r.id for r in records]
        self.samples = {sid: self._sample(sid) for sid in self.order}

    @classmethod
    def initial_marks(cls, records: list[RagRecord]) -> dict[str, dict[str, int]]:
        return {r.id: dict.fromkeys(sorted(_flat(r)), 1) for r in records if _flat(r)}

    def _record(self, sid: str) -> RagRecord:
        record = self.records[sid]
        gold = set(self.store.labels(sid).get(sid, {}))
        if gold == _flat(record):
            return record  # unchanged: keep the record's own alternatives (several passages needed together)
        # changed by hand: each gold passage is evidence on its own
        return dataclasses.replace(record, gold_evidence=tuple((p,) for p in sorted(gold)) if gold else None)

    def _sample(self, sid: str) -> dict[str, Any]:
        record = self._record(sid)
        row = evaluate_rag([record]).rows[0]
        context = list(record.context if record.context is not None else row.get("context", record.retrieved))
        passages = record.passages or {}
        shown = list(dict.fromkeys([*context, *record.retrieved]))
        gold = sorted(_flat(record))
        return {
            "id": sid,
            "label": row.get("label"),
            "reason": f"{row.get('reason', '')}: {row.get('detail', '')}",
            "question": record.question or "",
            "answer": record.answer,
            "context": [{"id": p, "text": passages.get(p, ""), "in_context": p in context} for p in shown],
            "gold": gold,
            "cited": list(row.get("citations") or ()),
        }

    def known(self, sid: str, pid: str | None = None) -> bool:
        if sid not in self.records:
            return False
        return (
            pid is None or any(p["id"] == pid for p in self.samples[sid]["context"]) or pid in _flat(self.records[sid])
        )

    def mark(self, sid: str, pid: str, gold: bool, who: str = "") -> dict[str, Any]:
        self.store.set(sid, pid, 1 if gold else None, who=who)
        return self.refresh(sid)

    def refresh(self, sid: str) -> dict[str, Any]:
        self.samples[sid] = self._sample(sid)
        return self.samples[sid]

    def list(self) -> list[dict[str, Any]]:
        return [self.samples[sid] for sid in self.order]
