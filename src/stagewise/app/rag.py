"""RAG samples for the web app: each sample's stage label recomputed by ``evaluate_rag`` when a person marks a
passage as gold evidence or not. The gold marks live in a label store (passage id -> 1), so they have a history,
undo and survive restarts like relevance labels."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from stagewise.app.audits import AUDITED_FIELDS, JudgeAudits
from stagewise.app.ids import to_segment
from stagewise.rag.diagnose import evaluate_rag
from stagewise.rag.records import RagRecord
from stagewise.store.labels import LabelStore

__all__ = ["RagSamples"]


def _flat(record: RagRecord) -> set[str]:
    return {p for alt in record.gold_evidence or () for p in alt}


class RagSamples:
    """Records, their gold marks in ``store``, and the page data of each sample.

    A passage's text is the one its own record gives; else one another record gives for the same id (records
    often carry texts for their context only, so a gold passage ranked lower has none of its own); else the
    corpus's (``texts``: passage id -> text).

    ``audits`` (:class:`~stagewise.app.audits.JudgeAudits`, none by default) are the judges' audits the pages
    show beside the labels those judges gave; each sample names its judges (``judges``: role -> name and version)
    and the labels each gave (``judged``)."""

    def __init__(
        self,
        records: list[RagRecord],
        store: LabelStore,
        texts: Mapping[str, str] | None = None,
        audits: JudgeAudits | None = None,
    ) -> None:
        self.records = {r.id: r for r in records}
        self.store = store
        self.audits = audits if audits is not None else JudgeAudits()
        self.texts: dict[str, tuple[str, str]] = {p: (t, "the corpus") for p, t in (texts or {}).items()}
        for record in reversed(records):  # the first record that gives a text wins
            for pid, text in (record.passages or {}).items():
                if text:
                    self.texts[pid] = (text, f"sample {record.id}")
        self.order = [r.id for r in records]
        self.samples = {sid: self._sample(sid) for sid in self.order}

    @staticmethod
    def gold_of(record: RagRecord) -> set[str]:
        """Every passage the record names as gold evidence, in any alternative."""
        return _flat(record)

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
        report = evaluate_rag([record])
        sample = report.rows[0]
        context = list(record.context if record.context is not None else sample.context)
        gold = sorted(_flat(record))
        # every passage a person may mark: the context, the rest retrieved, and the gold ones wherever they are
        shown = list(dict.fromkeys([*context, *record.retrieved, *sorted(_flat(self.records[sid])), *gold]))
        return {
            "id": sid,
            "key": to_segment(sid),  # the id as the page puts it in a URL
            "label": sample.label,
            "reason": f"{sample.reason}: {sample.detail}",
            "question": record.question or "",
            "answer": record.answer,
            "context": [self._passage(record, p, context) for p in shown],
            "gold": gold,
            "cited": list(sample.citations),
            # the judges of this sample's labels (the counts of calls left out), and the labels each gave
            "judges": {
                role: {k: v for k, v in info.items() if k in ("name", "version")}
                for role, info in report.judges.items()
                if role in AUDITED_FIELDS
            },
            "judged": {
                field: getattr(sample, field) for role in report.judges for field, _ in AUDITED_FIELDS.get(role, ())
            },
        }

    def _passage(self, record: RagRecord, pid: str, context: list[str]) -> dict[str, Any]:
        own = (record.passages or {}).get(pid)
        text, source = (own, "this sample") if own else self.texts.get(pid, ("", None))
        rank = record.retrieved.index(pid) + 1 if pid in record.retrieved else None
        if pid in context:
            where = "in the context" + (f" (retrieved at rank {rank})" if rank else "")
        elif rank is not None:
            where = f"retrieved only (rank {rank}), not in the context"
        else:
            where = "not retrieved"
        return {
            "id": pid,
            "key": to_segment(pid),
            "text": text,
            "text_from": source,  # None: no record and no corpus holds this passage's text
            "in_context": pid in context,
            "rank": rank,
            "where": where,
        }

    def known(self, sid: str, pid: str | None = None) -> bool:
        if sid not in self.records:
            return False
        return pid is None or any(p["id"] == pid for p in self.samples[sid]["context"])

    def mark(self, sid: str, pid: str, gold: bool, who: str = "") -> dict[str, Any]:
        self.store.set(sid, pid, 1 if gold else None, who=who)
        return self.refresh(sid)

    def refresh(self, sid: str) -> dict[str, Any]:
        self.samples[sid] = self._sample(sid)
        return self.samples[sid]

    def list(self) -> list[dict[str, Any]]:
        return [self.samples[sid] for sid in self.order]
