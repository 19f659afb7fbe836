"""Metric-at-k curves: precision, recall and nDCG at each cutoff, one line per run, on a log axis of k."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stagewise.report.html.page import esc, figure, legend, pyplot, style
from stagewise.study.value import CURVE_FAMILIES, CUTOFFS

_LABELS = {"P": "Precision", "recall": "Recall", "ndcg": "nDCG (linear gain, ideal from the qrels)"}
#: Each curve's measure (the study measured it at every cutoff) and how the plot names it.
FAMILIES = tuple((fam, _LABELS[fam]) for fam in CURVE_FAMILIES)

__all__ = ["CUTOFFS", "FAMILIES", "section"]


def _plot(means: dict[str, dict[str, float]], runs: list[str], fam: str, label: str, cutoffs: Sequence[int]) -> str:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    for i, run in enumerate(runs):
        ax.plot(
            cutoffs, [means[run][f"{fam}@{k}"] for k in cutoffs], label=run, markersize=3, linewidth=1.2, **style(i)
        )
    ax.set_xscale("log")
    ax.set_xlabel("cutoff k (documents, log scale)")
    ax.set_ylabel(f"{label.split(' ')[0]}@k (mean over queries, 0 to 1)")
    name = f"{label.split(' ')[0]} at k"
    ax.set_title(name)
    ax.grid(True, which="major", alpha=0.3)
    legend(ax, len(runs))
    desc = f"{label}@k for k from {cutoffs[0]} to {cutoffs[-1]}, one line per run ({len(runs)} runs)."
    rows = [[run, *(round(means[run][f"{fam}@{k}"], 4) for k in cutoffs)] for run in runs]
    return figure(fig, name, desc, ["run", *(f"k={k}" for k in cutoffs)], rows)


def section(result: Any, cutoffs: Sequence[int] = CUTOFFS) -> str:
    means = result.means
    runs = [r.name for r in result.runs]
    plots = "".join(_plot(means, runs, fam, label, cutoffs) for fam, label in FAMILIES)
    stated = "; ".join(note for note in result.notes() if not note.startswith("gain"))  # no gain in P or recall
    return (
        "<p>Each metric's mean over the judged queries at each cutoff k, from an evaluation with the table's "
        f"conventions (cutoffs {', '.join(map(str, cutoffs))}): {esc(stated)}.</p>" + plots
    )
