"""Build the demo's bundled data, ``src/stagewise/_bundled/clapnq/``, from CLAP NQ dev in ``../shared/data/clapnq``.

The output is deterministic (sorted keys, gzip without a timestamp), so ``tests/test_demo.py`` rebuilds it
and compares bytes. What it does to the source is stated in the folder's NOTICE.md:

- Corpus: the passage of each of the 600 dev questions (the gold passage of the 300 answerable ones, the
  on-topic but non-answering passage of the 300 unanswerable ones). Identical texts (white space aside) are one
  passage; a gold passage keeps its CLAP NQ id (``question_dev_answerable.tsv``), any other gets a content id
  (:func:`stagewise.rag.adapters.content_id`). 4 gold ids come with two slightly different texts: the first is
  kept. 592 passages. The text is the passage's sentences joined by a space (the source's text, less its
  trailing space).
- Questions: id, text, the human answers (none for an unanswerable question) and the gold passage id.
- Qrels: the gold passage of each answerable question, relevance 1 (the only judgement CLAP NQ gives).

Run: ``python tools/bundle_clapnq.py [SOURCE] [DEST]``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT.parent / "shared" / "data" / "clapnq"
DEST = ROOT / "src" / "stagewise" / "_bundled" / "clapnq"
FILES = ("corpus.jsonl.gz", "questions.jsonl.gz", "qrels.txt")


def _content_id(text: str) -> str:
    if str(ROOT / "src") not in sys.path:  # run from a checkout without an install
        sys.path.insert(0, str(ROOT / "src"))
    from stagewise.rag.adapters import content_id

    return content_id(text)


def _gzip(text: str) -> bytes:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0, filename="") as fh:
        fh.write(text.encode("utf-8"))
    return buffer.getvalue()


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def build(source: Path = SOURCE) -> dict[str, bytes]:
    """``{file name: bytes}`` of the bundled data."""
    csv.field_size_limit(1 << 24)
    with (source / "question_dev_answerable.tsv").open(encoding="utf-8", newline="") as fh:
        gold_id = {row["id"]: row["doc-id-list"] for row in csv.DictReader(fh, delimiter="\t")}
    passages: dict[str, dict] = {}
    id_of_text: dict[str, str] = {}
    questions = []
    for name, answerable in (("clapnq_dev_answerable.jsonl", True), ("clapnq_dev_unanswerable.jsonl", False)):
        for line in (source / name).read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            (passage,) = item["passages"]
            same_text = " ".join(passage["text"].split())  # one passage can come with and without a final space
            pid = id_of_text.get(same_text)
            if pid is None:
                pid = gold_id[item["id"]] if answerable else _content_id(passage["text"])
                id_of_text[same_text] = pid
                sentences = [s.strip() for s in passage["sentences"]]
                passages.setdefault(
                    pid, {"_id": pid, "title": passage["title"], "text": " ".join(sentences), "sentences": sentences}
                )
            answers = [o["answer"].strip() for o in item["output"] if o["answer"].strip()] if answerable else []
            questions.append(
                {
                    "_id": item["id"],
                    "text": item["input"],
                    "answerable": answerable,
                    "gold_answers": answers,
                    "gold_passage": pid if answerable else None,
                }
            )
    qrels = "".join(f"{q['_id']} 0 {q['gold_passage']} 1\n" for q in questions if q["answerable"])
    return {
        "corpus.jsonl.gz": _gzip(_jsonl(list(passages.values()))),
        "questions.jsonl.gz": _gzip(_jsonl(questions)),
        "qrels.txt": qrels.encode("utf-8"),
    }


def main(argv: list[str]) -> None:
    source = Path(argv[0]) if argv else SOURCE
    dest = Path(argv[1]) if len(argv) > 1 else DEST
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in build(source).items():
        (dest / name).write_bytes(data)
        print(f"{dest / name}: {len(data):,} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
