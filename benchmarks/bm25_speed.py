"""BM25 speed: stagewise beside bm25s (numba backend), one thread each, on SciFact and on a Zipf corpus.

The four cells of issue 26, each PASS when stagewise answers >= 1.5x bm25s's queries/s:

* SciFact (../shared/data/scifact: 5,183 abstracts, 300 claim queries of about 10 terms) at top 10 and top 100;
* the Zipf corpus (100,000 documents of 60 words from a Zipf(1) vocabulary of 50,000 words; 1,000 queries of 5
  words), generated once by ../shared/bench/gen_zipf_corpus.py into --data (default bench-data/zipf/,
  git-ignored), at top 10 and top 1000.

Both tools get the same analysis (lowercase, runs of >= 2 word characters, Lucene's 33 English stopwords,
Snowball English stemming) and Lucene BM25 with k1 = 1.2, b = 0.75, and run in fresh processes with one
thread (NUMBA_NUM_THREADS=1, POLARS_MAX_THREADS=1, bm25s ``n_threads=1``). Measured, in CPU seconds of the
searching process (``time.process_time``: the load other processes put on a shared machine matters less than
in wall time), from query text to results: bm25s ``tokenize`` + ``retrieve``; stagewise ``search``, which also
builds a Run. bm25s's numba functions are compiled before timing (a warm-up call). Each search is repeated
--repeat times per process and the processes run in turn, stagewise, bm25s, then bm25s, stagewise (--rounds), so a
change in load falls on both; the median is compared. "kernel" is retrieval alone, from analysed queries.

Also shown for stagewise, kernel only: the per-query cost model ("auto") against always pruning ("maxscore")
and always accumulating ("exhaustive"); all three give the same results. On the Zipf corpus, indexing and
loading are timed too (issue 5's targets, for information). The script always exits 0 (it is a benchmark, not
a test). Timings on a shared machine are noisy: compare within one run; the load average is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _child import emit, run_child  # benchmarks/_child.py: the script's folder is on sys.path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO / "bench-data" / "zipf"
SHARED_DATA = REPO.parent / "shared" / "data"
GENERATOR = REPO.parent / "shared" / "bench" / "gen_zipf_corpus.py"
TARGET_QPS_RATIO = 1.5
TARGET_INDEX_RATIO = 0.5
TARGET_LOAD_S = 0.05
CELLS = {"scifact": (10, 100), "zipf": (10, 1000)}
STRATEGIES = ("auto", "maxscore", "exhaustive")


# ------------------------------------------------------------------------------------------------- children


def _read(corpus: str, where: Path, documents: bool = True) -> tuple[list[str], list[str], list[str], list[str]]:
    """(doc ids, doc texts, query ids, query texts); the documents only when asked for."""
    if corpus == "scifact":
        from stagewise.retrieval import read_scifact

        collection = read_scifact(where)
        queries = collection.queries
        return list(collection.documents.ids), list(collection.documents.texts), list(queries.ids), list(queries.texts)
    docs = [json.loads(line) for line in (where / "corpus.jsonl").open(encoding="utf-8")] if documents else []
    queries = [json.loads(line) for line in (where / "queries.jsonl").open(encoding="utf-8")]
    texts = [f"{d.get('title', '')} {d['text']}".strip() for d in docs]
    return [d["_id"] for d in docs], texts, [q["_id"] for q in queries], [q["text"] for q in queries]


def child_index(tool: str, corpus: str, where: Path, out: Path) -> dict:
    started = time.perf_counter()
    doc_ids, texts, _, _ = _read(corpus, where)
    read_s = time.perf_counter() - started
    if tool == "stagewise":
        from stagewise.retrieval import BM25Index

        started = time.perf_counter()
        index = BM25Index.build(texts, doc_ids, k1=1.2, b=0.75)
        index_s = time.perf_counter() - started
        started = time.perf_counter()
        index.save(out)
        save_s = time.perf_counter() - started
        return {"read_s": read_s, "index_s": index_s, "tokenize_s": None, "save_s": save_s}
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    started = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    tokenize_s = time.perf_counter() - started
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, backend="numba")
    retriever.index(tokens, show_progress=False)
    index_s = time.perf_counter() - started
    started = time.perf_counter()
    retriever.save(str(out), show_progress=False)
    save_s = time.perf_counter() - started
    return {"read_s": read_s, "index_s": index_s, "tokenize_s": tokenize_s, "save_s": save_s}


def _timed(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return times


def _search_stagewise(index_dir: Path, query_ids: list[str], texts: list[str], ks: list[int], repeat: int) -> dict:
    from stagewise.retrieval.index import BM25Index

    started = time.perf_counter()
    index = BM25Index.load(index_dir)
    result: dict = {"load_s": time.perf_counter() - started, "cells": {}}
    import polars  # noqa: F401  (the Run builder's import, outside the timing)

    analysed = [index.analyser.analyse(q) for q in texts]
    started = time.process_time()
    # the first search fills the weight cache and the doc id rank (and imports pyarrow): shown apart
    index.search(texts, query_ids, k=ks[0])
    result["first_s"] = time.process_time() - started
    for k in ks:
        cell: dict = {"search_s": _timed(lambda k=k: index.search(texts, query_ids, k=k), repeat)}
        for strategy in STRATEGIES:
            cell[f"kernel_{strategy}_s"] = _timed(
                lambda k=k, s=strategy: index.topk(analysed, query_ids, k=k, strategy=s), repeat
            )
        cell["kernel_s"] = cell["kernel_auto_s"]
        top = index.search(texts, query_ids, k=k).to_polars()
        cell["top"] = {q: group["score"].to_list() for (q,), group in top.group_by("query_id")}
        result["cells"][str(k)] = cell
    return result


def _bm25s_text_to_results(bm25s, retriever, stemmer, texts: list[str], k: int):
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    return tokens, retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)[1]


def _search_bm25s(index_dir: Path, query_ids: list[str], texts: list[str], ks: list[int], repeat: int) -> dict:
    import bm25s
    import numpy as np
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    started = time.perf_counter()
    retriever = bm25s.BM25.load(str(index_dir), mmap=True)
    result: dict = {"load_s": time.perf_counter() - started, "cells": {}}
    retriever.backend = "numba"
    started = time.perf_counter()
    warm = bm25s.tokenize(texts[:8], stopwords="en", stemmer=stemmer, show_progress=False)
    retriever.retrieve(warm, k=min(ks), show_progress=False, n_threads=1)
    result["compile_s"] = time.perf_counter() - started
    for k in ks:
        cell = {"search_s": _timed(lambda k=k: _bm25s_text_to_results(bm25s, retriever, stemmer, texts, k), repeat)}
        tokens, scores = _bm25s_text_to_results(bm25s, retriever, stemmer, texts, k)
        cell["kernel_s"] = _timed(
            lambda k=k, tokens=tokens: retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1), repeat
        )
        # bm25s's Lucene scores lack the constant factor k1 + 1 (here 2.2)
        top = (np.asarray(scores, dtype=np.float64) * 2.2).tolist()
        cell["top"] = dict(zip(query_ids, top, strict=True))
        result["cells"][str(k)] = cell
    return result


def child_search(tool: str, corpus: str, where: Path, index_dir: Path, ks: list[int], repeat: int) -> dict:
    _, _, query_ids, texts = _read(corpus, where, documents=False)
    search = _search_stagewise if tool == "stagewise" else _search_bm25s
    result = search(index_dir, query_ids, texts, ks, repeat)
    result["queries"] = len(texts)
    return result


# ------------------------------------------------------------------------------------------------- parent


def _run_child(args: list[str]) -> dict:
    return run_child(__file__, args, REPO)


def _ensure_zipf(data: Path, generator: Path) -> None:
    if (data / "corpus.jsonl").is_file() and (data / "queries.jsonl").is_file():
        return
    if not generator.is_file():
        raise SystemExit(f"no corpus in {data} and no generator at {generator} (../shared/bench is absent)")
    print(f"generating the corpus into {data} (once) ...", file=sys.stderr)
    subprocess.run([sys.executable, str(generator), "--out", str(data)], check=True)


def _same_scores(ours: list[float], theirs: list[float]) -> bool:
    """Our top scores against bm25s's (float32, padded with zeros for unmatched documents)."""
    ours = sorted(ours, reverse=True)
    theirs = sorted(theirs, reverse=True)
    if any(t > 1e-6 for t in theirs[len(ours) :]):
        return False
    return all(abs(a - b) <= 1e-5 * max(abs(a), 1e-9) for a, b in zip(ours, theirs, strict=False))


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _measure(corpus: str, where: Path, tools: list[str], ks: list[int], args: argparse.Namespace) -> dict:
    """Index with each tool, then search in turn (A B A B ...), merging each tool's repetitions."""
    results: dict[str, dict] = {tool: {} for tool in tools}
    with tempfile.TemporaryDirectory(prefix="bm25-speed-") as tmp:
        for tool in tools:
            print(f"{corpus}: {tool} indexing ...", file=sys.stderr, flush=True)
            common = ["--corpus", corpus, "--where", str(where), "--index-dir", str(Path(tmp) / tool)]
            results[tool].update(_run_child(["--child", "index", "--tool", tool, *common]))
        for round_ in range(args.rounds):
            for tool in tools if round_ % 2 == 0 else tools[::-1]:
                print(f"{corpus}: {tool} searching (round {round_ + 1}) ...", file=sys.stderr, flush=True)
                common = ["--corpus", corpus, "--where", str(where), "--index-dir", str(Path(tmp) / tool)]
                ks_arg = ["--ks", *map(str, ks), "--repeat", str(args.repeat)]
                got = _run_child(["--child", "search", "--tool", tool, *common, *ks_arg])
                merged = results[tool]
                for key, value in got.items():
                    if key != "cells":
                        merged.setdefault(key, value)
                        continue
                    for k, cell in value.items():
                        into = merged.setdefault("cells", {}).setdefault(k, {})
                        for name, figure in cell.items():
                            into[name] = into.get(name, []) + figure if name.endswith("_s") else figure
    return results


def _cell_lines(corpus: str, results: dict, ks: list[int]) -> tuple[list[str], list[tuple[str, bool]]]:
    tools = list(results)
    lines = [f"{'':<44}" + "".join(f"{tool:>14}" for tool in tools)]
    verdicts = []
    for k in ks:
        cells = {tool: results[tool]["cells"][str(k)] for tool in tools}
        n = results[tools[0]]["queries"]
        qps = {tool: n / statistics.median(cell["search_s"]) for tool, cell in cells.items()}
        kernel = {tool: n / statistics.median(cell["kernel_s"]) for tool, cell in cells.items()}
        lines.append(f"{f'top {k}: queries/s, text to results':<44}" + "".join(f"{qps[t]:>14,.0f}" for t in tools))
        lines.append(f"{f'top {k}: queries/s, kernel only':<44}" + "".join(f"{kernel[t]:>14,.0f}" for t in tools))
        if "stagewise" in cells:
            ours = cells["stagewise"]
            figures = ", ".join(
                f"{s} {n / statistics.median(ours[f'kernel_{s}_s']):,.0f}" for s in STRATEGIES
            )  # fmt: skip
            lines.append(f"  stagewise kernel by strategy (queries/s): {figures}")
        if "stagewise" in cells and "bm25s" in cells:
            ratio = qps["stagewise"] / qps["bm25s"]
            ok = ratio >= TARGET_QPS_RATIO
            verdicts.append((f"{corpus} top {k}", ok))
            theirs = cells["bm25s"]["top"]
            same = sum(_same_scores(cells["stagewise"]["top"].get(q, []), v) for q, v in theirs.items())
            lines.append(
                f"  ratio stagewise / bm25s: {ratio:.2f}x (kernel {kernel['stagewise'] / kernel['bm25s']:.2f}x), "
                f"target >= {TARGET_QPS_RATIO}x  {_verdict(ok)}; top-{k} scores equal to bm25s's x (k1 + 1) "
                f"to 1e-5: {same} of {len(theirs)} queries"
            )
    return lines, verdicts


def _zipf_index_lines(results: dict) -> list[str]:
    lines = []
    if "stagewise" in results and "bm25s" in results:
        ours, theirs = results["stagewise"], results["bm25s"]
        index_ratio = ours["index_s"] / theirs["index_s"]
        lines.append(
            f"tokenise + index: stagewise {ours['index_s']:.2f} s, bm25s {theirs['index_s']:.2f} s "
            f"(ratio {index_ratio:.2f}x, issue 5's target <= {TARGET_INDEX_RATIO}x {_verdict(index_ratio <= 0.5)})"
        )
    if "stagewise" in results:
        ours = results["stagewise"]
        lines.append(
            f"stagewise index load: {ours['load_s']:.4f} s (target <= {TARGET_LOAD_S} s "
            f"{_verdict(ours['load_s'] <= TARGET_LOAD_S)}); first search, filling the weight cache and doc id rank: "
            f"{ours['first_s'] * 1000:.0f} ms CPU"
        )
    return lines


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="Zipf corpus folder (generated when missing)")
    parser.add_argument("--scifact", type=Path, default=SHARED_DATA / "scifact", help="SciFact folder")
    parser.add_argument("--generator", type=Path, default=GENERATOR)
    parser.add_argument("--corpora", nargs="+", default=list(CELLS), choices=list(CELLS))
    parser.add_argument("--repeat", type=int, default=3, help="searches per process and k (default 3)")
    parser.add_argument("--rounds", type=int, default=2, help="search processes per tool, run in turn (default 2)")
    parser.add_argument("--tools", nargs="+", default=["stagewise", "bm25s"], choices=["stagewise", "bm25s"])
    parser.add_argument("--json", type=Path, help="also write the figures as JSON to this file")
    parser.add_argument("--child", choices=["index", "search"], help=argparse.SUPPRESS)
    parser.add_argument("--tool", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--where", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--index-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--ks", type=int, nargs="+", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.child == "index":
        emit(child_index(args.tool, args.corpus, args.where, args.index_dir))
        return 0
    if args.child == "search":
        emit(child_search(args.tool, args.corpus, args.where, args.index_dir, args.ks, args.repeat))
        return 0

    load_before = os.getloadavg()
    lines = [f"BM25 speed, one thread, CPU time, tools searched in turn ({args.rounds} rounds x {args.repeat})", ""]
    verdicts: list[tuple[str, bool]] = []
    everything: dict[str, dict] = {}
    for corpus in args.corpora:
        if corpus == "scifact":
            if not (args.scifact / "scifact.zip").is_file():
                lines += [f"SciFact: skipped, no {args.scifact / 'scifact.zip'} (../shared/data is absent)", ""]
                continue
            where, title = args.scifact, "SciFact: 5,183 abstracts, 300 claim queries"
        else:
            _ensure_zipf(args.data, args.generator)
            where, title = args.data, "Zipf: 100,000 docs x 60 words, 1,000 queries x 5 words"
        ks = list(CELLS[corpus])
        results = _measure(corpus, where, args.tools, ks, args)
        everything[corpus] = results
        cell_lines, cell_verdicts = _cell_lines(corpus, results, ks)
        lines += [title, *cell_lines]
        if corpus == "zipf":
            lines += _zipf_index_lines(results)
        lines.append("")
        verdicts += cell_verdicts
    load_after = os.getloadavg()
    if verdicts:
        passed = sum(ok for _, ok in verdicts)
        summary = ", ".join(f"{name} {_verdict(ok)}" for name, ok in verdicts)
        lines.append(f"issue 26 (stagewise >= {TARGET_QPS_RATIO}x bm25s): {passed} of {len(verdicts)} cells: {summary}")
    lines.append(
        f"machine load (1-minute average, {os.cpu_count()} CPUs): "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after"
    )
    print("\n".join(lines))
    if args.json:
        slim = {
            corpus: {
                tool: {
                    **{k: v for k, v in r.items() if k != "cells"},
                    "cells": {k: {n: f for n, f in c.items() if n != "top"} for k, c in r.get("cells", {}).items()},
                }
                for tool, r in results.items()
            }
            for corpus, results in everything.items()
        }
        args.json.write_text(json.dumps(slim, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
