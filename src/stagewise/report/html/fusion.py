"""The fusion statement of each fused run (method, normalisation, weights, policies), beside the runs."""

from __future__ import annotations

from typing import Any

from stagewise.report.html.page import conventions, esc

_KEYS = (
    "method", "method_formula", "parameters", "normalization", "normalization_formula", "depth", "queries_rule",
    "missing_rule", "ties", "input_ranks", "runs", "trained",
)  # fmt: skip


def section(statements: dict[str, dict[str, Any]]) -> str:
    out = ["<p>These runs were made by fusion (<code>stagewise fuse</code> or <code>stagewise.fuse</code>); each "
           "statement comes from the fused run itself, or from the <code>.meta.json</code> written beside its file."
           "</p>"]  # fmt: skip
    for run, info in statements.items():
        items = [(k, info[k]) for k in _KEYS if k in info]
        items += [(k, v) for k, v in info.items() if k not in _KEYS and k != "stagewise_version"]
        out.append(f"<h3>{esc(run)}</h3>" + conventions(items))
    return "".join(out)
