"""BM25 retrieval quality on real collections: stagewise beside bm25s, same tokens, variant and parameters.

For each collection (Cranfield, CISI, MEDLINE, CACM, NPL, SciFact from ../shared/data) and each setting
(Lucene BM25 at (k1, b) = (0.9, 0.4) and (1.2, 0.75), stemmed with Snowball English and unstemmed; Lucene's
33 English stopwords; tokens = runs of >= 2 word characters, lowercased), it indexes the documents, retrieves
the top 1000 for every judged query and prints nDCG@10 and MAP (trec_eval conventions: linear gain, relevance
level 1, judged queries with no result score 0).

bm25s gets the same analysis (its default token pattern (?u)\\b\\w\\w+\\b, the same stopword list and stemmer),
``method="lucene"`` and the same k1 and b. Its scores lack the constant factor (k1 + 1), which changes no
ranking; it also returns documents that match no query term (score 0) to fill k, which can only add relevant
documents at the very end of a ranking, so its MAP can be a little higher. The last column compares bm25s with
stagewise's ``all_documents=True`` search, which ranks those documents too; what remains (at most a few 1e-4)
comes from bm25s's float32 scores, which tie or swap documents whose exact scores differ in the 7th digit, and
from which score-0 documents fill the last places when the corpus is larger than k.

Run ``python benchmarks/bm25_quality.py --help`` for options; ``--markdown`` prints the README table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
COLLECTIONS = ("cranfield", "cisi", "medline", "cacm", "npl", "scifact")
SETTINGS = ((0.9, 0.4, "english"), (0.9, 0.4, "none"), (1.2, 0.75, "english"), (1.2, 0.75, "none"))
METRICS = ("ndcg@10", "map")
PUBLISHED = {"scifact": "BEIR BM25 (Anserini, multifield): 0.665 nDCG@10; Pyserini flat: 0.679"}


def _bm25s_run(collection, k1: float, b: float, stemmer: str, k: int):
    import bm25s
    import numpy as np
    import polars as pl
    import Stemmer

    from stagewise.data.run import Run

    stem = Stemmer.Stemmer("english") if stemmer == "english" else None
    corpus = bm25s.tokenize(collection.documents.texts, stopwords="en", stemmer=stem, show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=k1, b=b)
    retriever.index(corpus, show_progress=False)
    queries = bm25s.tokenize(collection.queries.texts, stopwords="en", stemmer=stem, show_progress=False)
    k = min(k, len(collection.documents))
    docs, scores = retriever.retrieve(queries, k=k, show_progress=False, n_threads=1)
    doc_ids = np.array(collection.documents.ids, dtype=object)
    frame = pl.DataFrame(
        {
            "query_id": np.repeat(np.array(collection.queries.ids, dtype=object), k).tolist(),
            "doc_id": doc_ids[docs.ravel()].tolist(),
            "score": scores.ravel().astype(np.float64),
        }
    )
    return Run.from_frame(frame, name=f"bm25s-lucene(k1={k1},b={b})")


def measure(names: list[str], k: int, with_bm25s: bool) -> list[dict]:
    from stagewise import evaluate
    from stagewise.data.collections import load_collection
    from stagewise.retrieval import Analyser, BM25Index

    rows = []
    for name in names:
        collection = load_collection(name)
        qrels = collection.read_qrels()
        for stemmer in ("english", "none"):
            started = time.perf_counter()
            index = BM25Index.build(collection.documents, analyser=Analyser(stemmer=stemmer))
            built = time.perf_counter() - started
            for k1, b, setting_stemmer in SETTINGS:
                if setting_stemmer != stemmer:
                    continue
                started = time.perf_counter()
                run = index.search(collection.queries, k=k, k1=k1, b=b)
                searched = time.perf_counter() - started
                ours = evaluate(qrels, run, list(METRICS)).means[run.name]
                row = {
                    "collection": name,
                    "k1": k1,
                    "b": b,
                    "stemmer": stemmer,
                    "documents": len(collection.documents),
                    "queries": len(collection.queries),
                    "stagewise": ours,
                    "index_s": built,
                    "search_s": searched,
                }
                if with_bm25s:
                    theirs_run = _bm25s_run(collection, k1, b, stemmer, k)
                    row["bm25s"] = evaluate(qrels, theirs_run, list(METRICS)).means[theirs_run.name]
                    # bm25s also ranks documents matching no query term (score 0); so does all_documents=True
                    filled = index.search(collection.queries, k=k, k1=k1, b=b, all_documents=True)
                    row["stagewise_all_documents"] = evaluate(qrels, filled, list(METRICS)).means[filled.name]
                rows.append(row)
                print(_line(row), file=sys.stderr, flush=True)
    return rows


def _line(row: dict) -> str:
    ours = row["stagewise"]
    text = (
        f"{row['collection']:<10} k1={row['k1']:<4} b={row['b']:<5} stem={row['stemmer']:<8} "
        f"nDCG@10 {ours['ndcg@10']:.4f}  MAP {ours['map']:.4f}"
    )
    if "bm25s" in row:
        theirs = row["bm25s"]
        text += f"   | bm25s nDCG@10 {theirs['ndcg@10']:.4f}  MAP {theirs['map']:.4f}"
    return text


def render(rows: list[dict], markdown: bool) -> str:
    with_bm25s = all("bm25s" in r for r in rows)
    head = ["collection", "docs", "queries", "k1", "b", "stemmer", "nDCG@10", "MAP"]
    if with_bm25s:
        head += ["bm25s nDCG@10", "bm25s MAP", "max abs diff", "max abs diff, all docs ranked"]
    lines = []
    for r in rows:
        ours = r["stagewise"]
        cells = [
            r["collection"],
            f"{r['documents']:,}",
            str(r["queries"]),
            str(r["k1"]),
            str(r["b"]),
            "Snowball English" if r["stemmer"] == "english" else "none",
            f"{ours['ndcg@10']:.4f}",
            f"{ours['map']:.4f}",
        ]
        if with_bm25s:
            theirs = r["bm25s"]
            diff = max(abs(ours[m] - theirs[m]) for m in METRICS)
            filled = max(abs(r["stagewise_all_documents"][m] - theirs[m]) for m in METRICS)
            cells += [f"{theirs['ndcg@10']:.4f}", f"{theirs['map']:.4f}", f"{diff:.4f}", f"{filled:.1e}"]
        lines.append(cells)
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        out += ["| " + " | ".join(c) + " |" for c in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head), fmt.format(*("-" * w for w in widths)), *(fmt.format(*c) for c in lines)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS), choices=[*COLLECTIONS, "adi"])
    parser.add_argument("-k", type=int, default=1000, help="results per query (default 1000)")
    parser.add_argument("--no-bm25s", action="store_true", help="skip the bm25s column")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown (for the README)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    args = parser.parse_args(argv)
    if not SHARED.is_dir():
        print(f"the collections are not at {SHARED} (../shared/data is absent)", file=sys.stderr)
        return 0
    with_bm25s = not args.no_bm25s
    if with_bm25s:
        try:
            import bm25s  # noqa: F401
        except ImportError:
            print("bm25s is not installed (pip install bm25s); its column is left out", file=sys.stderr)
            with_bm25s = False
    rows = measure(args.collections, args.k, with_bm25s)
    print(render(rows, args.markdown))
    print(
        "\nLucene BM25: idf = ln(1 + (N - df + 0.5) / (df + 0.5)); Lucene's 33 English stopwords; tokens = runs of "
        ">= 2 word characters, lowercased; top 1000; trec_eval conventions (linear gain, relevance >= 1)."
    )
    for name, figure in PUBLISHED.items():
        if name in args.collections:
            print(f"Published for {name}: {figure}.")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
