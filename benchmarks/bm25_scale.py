"""BM25 at scale: index time, peak memory, index size and single-thread queries per second as the corpus grows,
stagewise beside bm25s and tantivy (the PyPI package, Rust's tantivy), on the same corpora, in one run.

The corpus is ../shared/bench/gen_zipf_corpus.py's (documents of --doc-len 55 words from a Zipf(1) vocabulary
of 50,000 words; 1,000 queries of 5 words), generated once at the largest size into --data (default
bench-data/zipf8m/, git-ignored); each smaller size is the first N documents of it (written beside it).

Every measurement runs in its own fresh process with one thread (``NUMBA_NUM_THREADS=1``...; bm25s
``n_threads=1``; tantivy's writer ``num_threads=1``), so the peak resident set (``ru_maxrss``) is that step's:

* index: from the corpus file on disk to a saved index. stagewise: ``build_on_disk(iter_corpus(...))``, what
  ``stagewise index`` runs (streamed, batches of 250,000 spilled and merged). bm25s: the file read into memory
  (its API takes lists), ``bm25s.tokenize`` + ``index`` + ``save``. tantivy: documents streamed into an index
  writer (heap 256 MB), one commit.
* size: the index folder's bytes on disk.
* load: opening the saved index (stagewise maps it and checks every array's CRC-32; bm25s ``mmap=True``).
* search: the 1,000 queries, top 10, from query text to results, one thread: stagewise ``topk`` (results as
  arrays, no Run), bm25s ``tokenize`` + ``retrieve``, tantivy ``parse_query`` + ``search`` per query.

Analysis is the same for stagewise and bm25s (lowercase, Lucene's English stopwords, Snowball English);
tantivy's ``en_stem`` tokenizer lowercases and stems but keeps stopwords (the Zipf words are random letters,
so this matters little). bm25s holds the corpus and its tokens in memory, so it only runs up to
--bm25s-up-to documents (default 1M); tantivy's index time is linear in the corpus and runs up to
--tantivy-up-to (default 2M), to keep each run on a shared 2-core machine under 15 minutes. Runs on a
shared machine are noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from _child import emit, run_child  # benchmarks/_child.py: the script's folder is on sys.path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "bench-data" / "zipf8m"
GENERATOR = REPO.parent / "shared" / "bench" / "gen_zipf_corpus.py"
K = 10


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _queries(data: Path) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in (data / "queries.jsonl").open(encoding="utf-8")]
    return [r["_id"] for r in rows], [r["text"] for r in rows]


# ------------------------------------------------------------------------------------------------- children


def child_index(tool: str, data: Path, out: Path) -> dict:
    started = time.perf_counter()
    if tool == "stagewise":
        from stagewise.data.collections import iter_corpus
        from stagewise.retrieval.ondisk import build_on_disk

        build_on_disk(iter_corpus(data / "corpus.jsonl"), out, k1=1.2, b=0.75)
    elif tool == "bm25s":
        import bm25s
        import Stemmer

        rows = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
        texts = [f"{r.get('title', '')} {r['text']}".strip() for r in rows]
        del rows
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False)
        del texts
        retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, backend="numba")
        retriever.index(tokens, show_progress=False)
        retriever.save(str(out), show_progress=False)
    else:
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("text", tokenizer_name="en_stem")
        out.mkdir(parents=True)
        index = tantivy.Index(builder.build(), path=str(out))
        writer = index.writer(heap_size=256_000_000, num_threads=1)
        with (data / "corpus.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                writer.add_document(tantivy.Document(id=row["_id"], text=f"{row.get('title', '')} {row['text']}"))
        writer.commit()
        writer.wait_merging_threads()
    return {"index_s": time.perf_counter() - started, "index_peak_mb": _peak_mb()}


def child_search(tool: str, data: Path, index_dir: Path) -> dict:
    query_ids, texts = _queries(data)
    if tool == "stagewise":
        from stagewise.retrieval.index import BM25Index

        started = time.perf_counter()
        index = BM25Index.load(index_dir)
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        top = index.topk(texts, query_ids, k=K)
        search_s = time.perf_counter() - started
        first = [float(s) for s in top.scores[top.offsets[0] : top.offsets[1]]]
    elif tool == "bm25s":
        import bm25s
        import Stemmer

        started = time.perf_counter()
        retriever = bm25s.BM25.load(str(index_dir), mmap=True)
        load_s = time.perf_counter() - started
        stemmer = Stemmer.Stemmer("english")
        tokens = bm25s.tokenize(texts[:5], stopwords="en", stemmer=stemmer, show_progress=False)
        retriever.retrieve(tokens, k=K, show_progress=False, n_threads=1)  # numba compiles outside the timing
        started = time.perf_counter()
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        _, scores = retriever.retrieve(tokens, k=K, show_progress=False, n_threads=1)
        search_s = time.perf_counter() - started
        first = [float(s) for s in scores[0]]
    else:
        import tantivy

        started = time.perf_counter()
        index = tantivy.Index.open(str(index_dir))
        index.reload()
        searcher = index.searcher()
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        results = []
        for text in texts:
            results.append(searcher.search(index.parse_query(text, ["text"]), K).hits)
        search_s = time.perf_counter() - started
        first = [float(s) for s, _ in results[0]]
    return {
        "load_s": load_s,
        "search_s": search_s,
        "qps": len(texts) / search_s,
        "search_peak_mb": _peak_mb(),
        "first_scores": first,
    }


# --------------------------------------------------------------------------------------------------- parent


def _run_child(args: list[str]) -> dict:
    return run_child(__file__, args, REPO)


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _prefix(data: Path, n: int, total: int) -> Path:
    """The first ``n`` documents of the corpus, with the same queries (written once)."""
    if n >= total:
        return data
    folder = data.parent / f"{data.name}-first{n}"
    if not (folder / "corpus.jsonl").is_file():
        folder.mkdir(exist_ok=True)
        with (data / "corpus.jsonl").open("rb") as src, (folder / "partial.jsonl").open("wb") as dst:
            for _ in range(n):
                dst.write(src.readline())
        (folder / "partial.jsonl").rename(folder / "corpus.jsonl")
        (folder / "queries.jsonl").write_bytes((data / "queries.jsonl").read_bytes())
    return folder


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 24), b""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs=3, metavar=("STEP", "TOOL", "DATA"), help=argparse.SUPPRESS)
    parser.add_argument("--index-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="corpus folder (generated if absent)")
    parser.add_argument("--docs", type=int, default=8_800_000, help="documents to generate when --data is absent")
    parser.add_argument("--sizes", default="100000,1000000,0", help="corpus sizes, comma-separated; 0: all")
    parser.add_argument("--tools", default="stagewise,bm25s,tantivy")
    parser.add_argument("--bm25s-up-to", type=int, default=1_000_000, help="largest size given to bm25s")
    parser.add_argument(
        "--tantivy-up-to", type=int, default=2_000_000, help="largest size given to tantivy (time: ~linear)"
    )
    parser.add_argument("--work", type=Path, default=REPO / "bench-data" / "bm25-scale-indexes")
    parser.add_argument("--keep", action="store_true", help="keep the indexes (default: delete each after use)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    if args.child:
        step, tool, data = args.child
        if step == "index":
            result = child_index(tool, Path(data), args.index_dir)
        else:
            result = child_search(tool, Path(data), args.index_dir)
        emit(result)
        return 0

    import shutil

    if not (args.data / "corpus.jsonl").is_file():
        print(f"generating {args.docs:,} documents into {args.data} ...", flush=True)
        subprocess.run(
            [sys.executable, str(GENERATOR), "--docs", str(args.docs), "--doc-len", "55", "--out", str(args.data)],
            check=True,
        )
    total = _count_lines(args.data / "corpus.jsonl")
    sizes = [total if s in (0, total) else s for s in (int(x) for x in args.sizes.split(","))]
    tools = args.tools.split(",")
    rows = []
    print(f"{'docs':>10} {'tool':<10} {'index s':>9} {'peak MB':>9} {'size MB':>9} {'load s':>8} {'qps':>8}")
    for n in sizes:
        data = _prefix(args.data, n, total)
        for tool in tools:
            if (tool == "bm25s" and n > args.bm25s_up_to) or (tool == "tantivy" and n > args.tantivy_up_to):
                continue
            out = args.work / f"{tool}-{n}"
            if out.exists():
                shutil.rmtree(out)
            out.parent.mkdir(parents=True, exist_ok=True)
            built = _run_child(["--child", "index", tool, str(data), "--index-dir", str(out)])
            size = _folder_bytes(out)
            searched = _run_child(["--child", "search", tool, str(data), "--index-dir", str(out)])
            row = {"docs": n, "tool": tool, **built, "index_mb": size / 2**20, **searched}
            rows.append(row)
            print(
                f"{n:>10,} {tool:<10} {row['index_s']:>9.1f} {row['index_peak_mb']:>9.0f} {row['index_mb']:>9.0f} "
                f"{row['load_s']:>8.3f} {row['qps']:>8.0f}",
                flush=True,
            )
            if not args.keep:
                shutil.rmtree(out)
            if args.json:  # after each row, so that an interrupted run keeps what it measured
                args.json.write_text(json.dumps(rows, indent=2) + "\n")
    by = {(r["tool"], r["docs"]): r for r in rows}
    ours = [r for r in rows if r["tool"] == "stagewise"]
    if len(ours) >= 2:
        a, b = ours[-2], ours[-1]
        growth = (b["index_s"] / a["index_s"]) / (b["docs"] / a["docs"])
        print(f"stagewise index time per document, {a['docs']:,} -> {b['docs']:,}: x{growth:.2f}")
    for r in rows:
        if r["tool"] != "stagewise" and ("stagewise", r["docs"]) in by:
            mine = by[("stagewise", r["docs"])]
            print(
                f"{r['docs']:>10,} stagewise / {r['tool']}: index time x{mine['index_s'] / r['index_s']:.2f}, "
                f"peak x{mine['index_peak_mb'] / r['index_peak_mb']:.2f}, qps x{mine['qps'] / r['qps']:.2f}"
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
