"""A small RAG pipeline on CLAP NQ dev, diagnosed stage by stage with ``stagewise rag``.

1. Corpus: the passages of CLAP NQ dev (the gold passages of the 300 answerable questions, the passages of the 300
   unanswerable ones), ids from ``question_dev_answerable.tsv`` (a content id for the others). Identical texts are
   one passage, and 4 gold ids that come with two slightly different texts keep the first: 593 passages.
2. Retrieval: BM25 (Lucene IDF, k1 = 1.2, b = 0.75) over title + text, top 20 per question. It uses
   ``stagewise.retrieval.BM25Index`` when that package is importable, else the small BM25 below (same formula,
   lowercase alphanumeric tokens, no stemming).
3. Generation: an extractive answerer. Over the top ``context_k`` passages, each sentence scores the IDF mass of
   the question's content words it holds; the best sentence is the answer, followed by ``[passage id]``, the
   passage it came from. If the best sentence holds less than 30% of the question's IDF mass, it declines
   ("I don't know."). Both thresholds were fixed before looking at the results.
4. Diagnosis: the answers file plus the run go through :func:`stagewise.rag.records_from_run` and
   :func:`stagewise.rag.evaluate_rag`, the same as ``stagewise rag answers.jsonl --run bm25.trec``.

Run it::

    python examples/clapnq_pipeline.py                     # ../shared/data/clapnq, prints a markdown report
    python examples/clapnq_pipeline.py --out /tmp/clapnq    # also writes answers.jsonl, bm25.trec, labels.jsonl

Caveat: the retrieval corpus is only the 600 dev passages (the 178k-passage CLAP NQ corpus is not in
../shared), so retrieval here is much easier than in the real benchmark.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "clapnq"
TOP_K = 20
CONTEXT_K = 3
ABSTAIN_BELOW = 0.30
_WORD = re.compile(r"[a-z0-9]+")
_STOP_TEXT = "a an the and or of in on at to for from by with is are was were be been "
_STOP_TEXT += "it its this that these those as what which who whom whose when where why how do does did not no"
_STOP = frozenset(_STOP_TEXT.split())


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


# -- data -------------------------------------------------------------------------------------------------------


def load_clapnq(data: Path = DEFAULT_DATA) -> tuple[dict[str, dict], list[dict]]:
    """(passages by id, questions). A passage is ``{"title", "text", "sentences"}``; a question is
    ``{"id", "question", "gold_answers", "gold_evidence"}`` (unanswerable: no answers, no evidence)."""
    csv.field_size_limit(1 << 24)
    with (data / "question_dev_answerable.tsv").open(encoding="utf-8", newline="") as fh:
        gold_doc = {row["id"]: row["doc-id-list"] for row in csv.DictReader(fh, delimiter="\t")}
    from stagewise.rag.adapters import content_id

    passages: dict[str, dict] = {}
    by_text: dict[str, str] = {}
    questions = []
    for name, answerable in (("clapnq_dev_answerable.jsonl", True), ("clapnq_dev_unanswerable.jsonl", False)):
        for line in (data / name).read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            passage = item["passages"][0]
            pid = by_text.get(passage["text"])
            if pid is None:
                pid = gold_doc[item["id"]] if answerable else content_id(passage["text"])
                by_text[passage["text"]] = pid
                passages.setdefault(pid, passage)  # 4 gold ids come with two text variants: keep the first
            answers = [o["answer"] for o in item["output"] if o["answer"].strip()]
            questions.append(
                {
                    "id": item["id"],
                    "question": item["input"],
                    "gold_answers": answers if answerable else [],
                    "gold_evidence": [pid] if answerable else [],
                }
            )
    return passages, questions


# -- retrieval --------------------------------------------------------------------------------------------------


class TinyBM25:
    """BM25 with Lucene's IDF log(1 + (N - df + 0.5) / (df + 0.5)), k1 = 1.2, b = 0.75."""

    name = "tiny BM25 (examples/clapnq_pipeline.py): Lucene IDF, k1=1.2, b=0.75, lowercase alphanumeric tokens"

    def __init__(self, docs: Mapping[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        self.ids = list(docs)
        self.tfs = [Counter(_words(docs[i])) for i in self.ids]
        lengths = [sum(tf.values()) for tf in self.tfs]
        avg = sum(lengths) / len(lengths)
        self.norm = [k1 * (1 - b + b * n / avg) for n in lengths]
        df = Counter(t for tf in self.tfs for t in tf)
        n = len(self.ids)
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.k1 = k1

    def search(self, queries: Mapping[str, str], k: int) -> dict[str, dict[str, float]]:
        out = {}
        for qid, text in queries.items():
            terms = [t for t in _words(text) if t in self.idf]
            scores = {}
            for doc, tf, norm in zip(self.ids, self.tfs, self.norm, strict=True):
                s = sum(self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in terms if t in tf)
                if s > 0:
                    scores[doc] = s
            best = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]
            out[qid] = dict(best)
        return out


def retrieve(
    passages: Mapping[str, dict], questions: Sequence[dict], k: int = TOP_K, retriever: str = "auto"
) -> tuple[Any, str]:
    """(run, retriever description): top ``k`` passages per question. ``retriever`` is ``auto`` (stagewise's BM25
    when importable, else the tiny one), ``stagewise`` or ``tiny``."""
    docs = {pid: f"{p['title']} {p['text']}" for pid, p in passages.items()}
    queries = {q["id"]: q["question"] for q in questions}
    if retriever != "tiny":
        try:
            from stagewise.retrieval import BM25Index
        except ImportError:
            if retriever == "stagewise":
                raise
        else:
            index = BM25Index.build(docs)
            return index.search(queries, k=k, name="bm25"), f"stagewise.retrieval: {index!r}"
    bm25 = TinyBM25(docs)
    return bm25.search(queries, k), bm25.name


# -- generation -------------------------------------------------------------------------------------------------


def answer(question: str, context: Sequence[str], passages: Mapping[str, dict], idf: Mapping[str, float]) -> str:
    """The context sentence holding the most IDF mass of the question's content words, cited; or a decline."""
    wanted = {t for t in _words(question) if t not in _STOP}
    total = sum(idf.get(t, 0.0) for t in wanted)
    best, best_score, best_pid = None, 0.0, None
    for pid in context:
        for sentence in passages[pid]["sentences"]:
            score = sum(idf.get(t, 0.0) for t in wanted & set(_words(sentence)))
            if score > best_score:
                best, best_score, best_pid = sentence, score, pid
    if best is None or total == 0 or best_score / total < ABSTAIN_BELOW:
        return "I don't know."
    return f"{best.strip()} [{best_pid}]"


def run_pipeline(
    data: Path = DEFAULT_DATA, context_k: int = CONTEXT_K, retriever: str = "auto"
) -> tuple[list[dict], Any, str]:
    """(answers records, run, retriever description)."""
    passages, questions = load_clapnq(data)
    run, description = retrieve(passages, questions, retriever=retriever)
    from stagewise.data.readers import read_run

    loaded = read_run(run)
    docs = loaded.docs.values()
    ranked = {str(q): docs[int(loaded.offsets[c]) : int(loaded.offsets[c + 1])] for c, q in enumerate(loaded.query_ids)}
    sentence_df = Counter(t for p in passages.values() for s in p["sentences"] for t in set(_words(s)))
    n_sent = sum(len(p["sentences"]) for p in passages.values())
    idf = {t: math.log(1 + (n_sent - d + 0.5) / (d + 0.5)) for t, d in sentence_df.items()}
    answers = []
    for q in questions:
        context = ranked.get(q["id"], [])[:context_k]
        answers.append(
            {
                "id": q["id"],
                "question": q["question"],
                "answer": answer(q["question"], context, passages, idf),
                "gold_answers": q["gold_answers"],
                "gold_evidence": q["gold_evidence"],
                "passages": {pid: passages[pid]["text"] for pid in context},
            }
        )
    return answers, run, description


def diagnose(data: Path = DEFAULT_DATA, correct: str = "f1:0.5", context_k: int = CONTEXT_K, retriever: str = "auto"):
    """(report, retriever description, answers, run)."""
    from stagewise.rag import evaluate_rag, records_from_run

    answers, run, retriever = run_pipeline(data, context_k, retriever)
    records = records_from_run(run, answers)
    report = evaluate_rag(records, context_k=context_k, correct=correct, judge="lexical")
    return report, retriever, answers, run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="BM25 + extractive answerer on CLAP NQ dev, diagnosed.")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=None, help="write answers.jsonl, bm25.trec and labels.jsonl here")
    parser.add_argument("--correct", default="f1:0.5")
    parser.add_argument("--retriever", choices=("auto", "stagewise", "tiny"), default="auto")
    args = parser.parse_args(argv)
    if not (args.data / "clapnq_dev_answerable.jsonl").is_file():
        sys.exit(f"CLAP NQ files not found in {args.data}")
    report, retriever, answers, run = diagnose(args.data, args.correct, retriever=args.retriever)
    from stagewise.report import render

    print(f"retriever: {retriever}\n")
    print(render(report, "markdown"))
    if args.out is not None:
        from stagewise.data.readers import read_run
        from stagewise.data.writers import write_run

        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
        write_run(read_run(run, name="bm25"), args.out / "bm25.trec")
        (args.out / "labels.jsonl").write_text(render(report, "jsonl"), encoding="utf-8")
        print(f"wrote {args.out}/answers.jsonl, bm25.trec, labels.jsonl", file=sys.stderr)


if __name__ == "__main__":
    main()
