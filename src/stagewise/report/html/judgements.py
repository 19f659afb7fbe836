"""Judgement health: how the labels are spread, how much of each run's top k was never judged, and which
judged queries each run left out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stagewise.report.html.page import esc, figure, legend, pyplot, style, table


def section(qrels: Any, curves: Any, cutoffs: Sequence[int], relevance_level: int, policy: str = "zero") -> str:
    """``qrels`` is the study's :class:`~stagewise.study.value.QrelsSummary` (label counts, judged queries);
    ``curves`` holds judged@k for each cutoff, measured on the runs as given (never judged-only); ``policy`` is
    the evaluation's missing-query policy."""
    plt = pyplot()
    hist = dict(qrels.labels)
    labels = sorted(hist)
    fig, ax = plt.subplots(figsize=(5.0, 2.8))
    colours = ["#D55E00" if lab < relevance_level else "#0072B2" for lab in labels]
    bars = ax.bar([str(lab) for lab in labels], [hist[lab] for lab in labels], color=colours)
    ax.bar_label(bars, [f"{hist[lab]:,}" for lab in labels], fontsize=8)
    ax.set_xlabel(f"relevance label (relevant when ≥ {relevance_level})")
    ax.set_ylabel("judgements (count)")
    ax.set_title("Relevance labels in the qrels")
    total = sum(hist.values())
    desc = f"{total} judgements over {qrels.n_queries} queries; " + ", ".join(
        f"label {lab}: {hist[lab]}" for lab in labels
    )
    out = [
        figure(
            fig,
            "Relevance labels in the qrels",
            desc,
            ["label", "judgements", "share"],
            [[lab, hist[lab], round(hist[lab] / total, 4) if total else 0.0] for lab in labels],
        )
    ]
    runs = [r.name for r in curves.runs]
    means = curves.means
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    for i, run in enumerate(runs):
        ax.plot(cutoffs, [1 - means[run][f"judged@{k}"] for k in cutoffs], label=run, markersize=3, **style(i))
    ax.set_xscale("log")
    ax.set_xlabel("cutoff k (documents, log scale)")
    ax.set_ylabel("unjudged@k = 1 − judged@k (0 to 1)")
    ax.set_title("Unjudged documents in each run's top k")
    legend(ax, len(runs))
    out.append(
        figure(
            fig,
            "Unjudged documents in each run's top k",
            "unjudged@k = 1 − judged@k (mean over queries) for each run: the share of the top k with no judgement, "
            "which every metric counts as non-relevant; ranks past the end of a run shorter than k count as "
            "unjudged (stagewise validate also prints trec_eval's unj@k, which counts them as judged).",
            ["run", *(f"k={k}" for k in cutoffs)],
            [[run, *(round(1 - means[run][f"judged@{k}"], 4) for k in cutoffs)] for run in runs],
        )
    )
    rows = []
    for r in curves.runs:
        missing = list(r.missing_queries)
        extra = list(r.run_only_queries)
        rows.append(
            [r.name, len(missing), ", ".join(map(str, missing[:20])) + (" …" if len(missing) > 20 else ""), len(extra)]
        )
    out.append(
        table(
            ["run", "judged queries missing", "which (first 20)", "run queries without judgements"],
            rows,
            numeric={1, 3},
            caption="Queries missing from each run ("
            + {
                "zero": "scored 0 in every mean: missing=zero, trec_eval -c",
                "skip": "left out of the means: missing=skip",
                "error": "an error: missing=error",
            }.get(policy, f"missing={policy}")
            + ")",
            table_id="missing-table",
        )
    )
    return f'<div style="max-width:560px">{out[0]}</div>{out[1]}{out[2]}<p>{esc(qrels.n_queries)} judged queries.</p>'
