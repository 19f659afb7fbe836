"""A pool (:class:`~stagewise.assess.pool.Pool`) as a summary table, JSON, JSONL or the TREC pool layout.

The TREC layout is trectools' pool export (``qid Q0 docid 0 0 trectools``, query id first, document id third)
with the two numbers filled in: ``qid Q0 docid ORDER PRIORITY STRATEGY``, ORDER the judging order within the
query (1 first) and PRIORITY the strategy's value; lines by query (byte order), then judging order.
"""

from __future__ import annotations

import json
import statistics
from typing import TYPE_CHECKING, Any

from stagewise.report import FORMATS as REGISTRY

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.assess.pool import Pool

FORMATS = tuple(name for name in REGISTRY.names() if "Pool" in REGISTRY[name].kinds)


def _record(entry: Any) -> dict[str, Any]:
    return {
        "query_id": entry.query_id,
        "doc_id": entry.doc_id,
        "order": entry.order,
        "priority": entry.priority,
        "runs": list(entry.runs),
    }


def summary_lines(pool: Pool) -> list[str]:
    """What the pool holds and what each run brought, as plain lines (the table, and the CLI's stderr)."""
    sizes = list(pool.sizes().values()) or [0]
    order = f"shuffled (seed {pool.seed})" if pool.shuffled else "by priority"
    lines = [
        f"pool {pool.strategy} of {len(pool.contributions)} runs (ranking {pool.ranking}): {len(pool):,} documents "
        f"to judge over {len(pool.queries)} queries (per query min {min(sizes)}, median "
        f"{statistics.median(sizes):g}, max {max(sizes)}); judging order {order}",
    ]
    if pool.judged_left_out:
        lines.append(f"  {pool.judged_left_out:,} documents already judged, left out")
    k = pool.contributions[0].k if pool.contributions else 10
    width = max([len("run"), *(len(c.run) for c in pool.contributions)])
    lines.append(f"  {'run':<{width}}  contributed  unique  coverage@{k}")
    for c in pool.contributions:
        lines.append(f"  {c.run:<{width}}  {c.contributed:>11,}  {c.unique:>6,}  {c.coverage_share:>10.3f}")
    lines.append(
        f"  (unique: pooled documents no other run contributed; coverage@{k}: the share of a run's first {k} "
        "documents per query that are pooled or judged, averaged over the pool's queries)"
    )
    return lines


def trec(pool: Pool) -> str:
    """The pool in the TREC layout (see the module's docstring)."""
    tag = pool.strategy.replace(" ", "")
    return "".join(f"{e.query_id} Q0 {e.doc_id} {e.order} {e.priority!r} {tag}\n" for e in pool.entries)


def render(pool: Pool, fmt: str = "table") -> str:
    """The pool as ``table`` (the summary), ``json`` (summary and entries), ``jsonl`` (an entry a line) or
    ``trec``."""
    if fmt == "trec":
        return trec(pool)
    if fmt == "jsonl":
        return "".join(json.dumps(_record(e)) + "\n" for e in pool.entries)
    if fmt == "json":
        document = {
            "strategy": pool.strategy,
            "ranking": pool.ranking,
            "queries": list(pool.queries),
            "judged_left_out": pool.judged_left_out,
            "shuffled": pool.shuffled,
            "seed": pool.seed,
            "contributions": [
                {"run": c.run, "contributed": c.contributed, "unique": c.unique, "coverage": c.coverage, "k": c.k}
                for c in pool.contributions
            ],
            "pool": [_record(e) for e in pool.entries],
        }
        return json.dumps(document, indent=2) + "\n"
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    return "\n".join(summary_lines(pool)) + "\n"
