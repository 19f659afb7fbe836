"""The demo's data: CLAP NQ dev as bundled in ``stagewise/_bundled/clapnq`` (licences and changes in its
NOTICE.md): 592 Wikipedia passages, 600 questions (300 answerable, each with one gold passage and human answers;
300 unanswerable) and the qrels of the answerable ones.

>>> data = load()
>>> len(data.passages), len(data.questions), sum(q.answerable for q in data.questions)
(592, 600, 300)
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from stagewise._bundled import clapnq_path

__all__ = ["DemoData", "Passage", "Question", "load"]

SOURCE = "CLAP NQ dev (Rosenthal et al. 2024; Apache-2.0, passages from Wikipedia under CC BY-SA 3.0)"


@dataclass(frozen=True)
class Passage:
    """A Wikipedia passage: its id, the article's title, its text and the text's sentences."""

    id: str
    title: str
    text: str
    sentences: tuple[str, ...]

    @property
    def indexed_text(self) -> str:
        """What the retrievers see: the title, then the text."""
        return f"{self.title} {self.text}"


@dataclass(frozen=True)
class Question:
    """A question; an answerable one has human answers and one gold passage, an unanswerable one neither."""

    id: str
    text: str
    answerable: bool
    gold_answers: tuple[str, ...]
    gold_passage: str | None


@dataclass(frozen=True)
class DemoData:
    passages: dict[str, Passage]
    questions: list[Question]
    qrels_path: Path
    notice_path: Path

    @property
    def queries(self) -> dict[str, str]:
        return {q.id: q.text for q in self.questions}

    @property
    def documents(self) -> dict[str, str]:
        return {pid: p.indexed_text for pid, p in self.passages.items()}


def _jsonl_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def load() -> DemoData:
    """The bundled CLAP NQ dev passages, questions and qrels."""
    folder = clapnq_path()
    passages = {
        row["_id"]: Passage(row["_id"], row["title"], row["text"], tuple(row["sentences"]))
        for row in _jsonl_gz(folder / "corpus.jsonl.gz")
    }
    questions = [
        Question(row["_id"], row["text"], row["answerable"], tuple(row["gold_answers"]), row["gold_passage"])
        for row in _jsonl_gz(folder / "questions.jsonl.gz")
    ]
    return DemoData(passages, questions, folder / "qrels.txt", folder / "NOTICE.md")
