"""``stagewise report``: one self-contained HTML file with the comparison table, metric-at-k curves, per-query
differences, judgement health, the RAG diagnosis and the fusion statements, with every convention stated.

Plots are drawn by matplotlib and embedded as inline SVG (about 10 KB a plot, no script needed to draw them);
tables sort and filter with a few lines of inline JavaScript. Nothing is fetched: no CDN, no font, no network,
so the file opens from disk, offline, and can be mailed or attached to a paper's artefact (docs/report.md says
why matplotlib rather than Vega, Bokeh or Plotly).

>>> from stagewise.report.html import build
>>> page = build({"q1": {"d1": 1}, "q2": {"d2": 1}},
...              {"A": {"q1": {"d1": 2, "x": 1}, "q2": {"x": 2, "d2": 1}},
...               "B": {"q1": {"d1": 2, "x": 1}, "q2": {"d2": 2, "x": 1}}}, ["mrr"], cutoffs=(1, 10))
>>> page.startswith("<!DOCTYPE html>"), "http://" in page.replace("http://www.w3.org", "")
(True, False)
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from stagewise.report.html.curves import CUTOFFS

__all__ = ["CUTOFFS", "build", "write"]


def build(
    qrels: Any = None,
    runs: Any = None,
    metrics: str | Iterable[str] | None = None,
    *,
    baseline: str | int | None = None,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    permutations: int = 10_000,
    seed: int = 0,
    tie_tolerance: float = 1e-9,
    rag: Any = None,
    rag_options: dict[str, Any] | None = None,
    rag_answers: dict[str, str] | None = None,
    relevance_level: int = 1,
    ties: str = "docid",
    missing: str = "zero",
    max_ret: int | None = None,
    judged_only: bool = False,
    cutoffs: Sequence[int] = CUTOFFS,
    title: str | None = None,
    digits: int = 4,
    progress: Callable[[str], None] | None = None,
    sources: Sequence[Any] | None = None,
    lead: Sequence[tuple[str, str, str]] = (),
    comparison: Any = None,
) -> str:
    """The report as one HTML page (a string).

    Parameters
    ----------
    qrels, runs
        As :func:`stagewise.compare` (a function that returns them is called after the cheap checks). With one
        run there is no comparison; with none, ``rag`` must be given.
    metrics : default=("map", "ndcg@10", "recall@100", "mrr@10", "P@10")
        The comparison's metrics; the first one is the metric of the per-query difference plots.
    baseline
        The run every other run is tested and plotted against (its name, path or index); default: all pairs are
        tested and the first run is the baseline of the plots.
    test, correction, alpha, permutations, seed, tie_tolerance
        The paired tests, as :func:`stagewise.compare`.
    rag : path, records or RagReport, optional
        RAG records (JSONL, as ``stagewise rag`` reads) diagnosed with :func:`stagewise.evaluate_rag`
        (``rag_options`` its keywords), or a report already made.
    rag_answers : mapping, optional
        Each RAG sample's answer text by id, for the samples table, when ``rag`` is a report already made (a
        report's rows hold the labels, not the texts); records given are read for their own answers.
    relevance_level, ties, missing, max_ret, judged_only
        The evaluation's conventions, as :func:`stagewise.evaluate`.
    cutoffs
        The k of the metric-at-k curves (default 18 values from 1 to 1000, even on a log axis).
    title, digits, progress, sources
        The page's title; decimals of the means; a function told each step (``progress("drawing")``); the
        inputs to name at the top of the page (default: the paths among ``qrels``, ``runs`` and ``rag``).
    comparison : Comparison, optional
        The comparison of these runs already made (:func:`stagewise.compare` or ``compare_scores``), shown as
        it is instead of testing again (``test`` and the other test options are then its own).
    lead
        Sections to put first, each ``(id, title, inner HTML)`` (the caller escapes its text): a pipeline's
        verdict, say (``stagewise demo`` puts its own there).
    """
    from stagewise import __version__
    from stagewise.errors import StagewiseError
    from stagewise.report.html import comparison as comparison_section
    from stagewise.report.html import curves, fusion, judgements, page, perquery
    from stagewise.report.html import rag as rag_section

    say = progress or (lambda _msg: None)
    page.pyplot()  # an optional dependency missing fails before any file is read
    page.reset_ids()
    cutoffs = tuple(int(k) for k in cutoffs)
    if not cutoffs or min(cutoffs) < 1:
        raise StagewiseError(f"the curves' cutoffs must be integers >= 1; got {cutoffs}")
    has_runs = runs is not None and not (isinstance(runs, list | tuple) and not runs)
    if not has_runs and rag is None:
        raise StagewiseError("a report needs runs (with their qrels) or RAG records: give RUN... or --rag")
    if has_runs and qrels is None:
        raise StagewiseError("runs need their qrels: give QRELS before the runs")
    sections: list[tuple[str, str, str]] = list(lead)
    conv = dict(relevance_level=relevance_level, ties=ties, missing=missing, max_ret=max_ret, judged_only=judged_only)
    heading = title
    if has_runs:
        from stagewise.data.readers import read_qrels, read_runs
        from stagewise.metrics.evaluate import DEFAULT_METRICS, evaluate

        metric_list = [metrics] if isinstance(metrics, str) else list(metrics or DEFAULT_METRICS)
        loaded: dict[str, Any] = {}

        def load_qrels() -> Any:
            say("reading the qrels")
            loaded["qrels"] = read_qrels(qrels() if callable(qrels) else qrels)
            return loaded["qrels"]

        def load_runs() -> Any:
            say("reading the runs")
            given = runs() if callable(runs) else runs
            loaded["fusion"] = _fusion_statements(given)
            loaded["runs"] = read_runs(given)
            return loaded["runs"]

        run_count = None if callable(runs) else (len(runs) if isinstance(runs, list | tuple | dict) else 1)
        comp = comparison
        if comp is not None:
            load_qrels()
            names = [r.name for r in load_runs()]
            if names != list(comp.runs) or list(comp.metrics) != metric_list:
                raise StagewiseError(
                    f"the comparison given is of runs {list(comp.runs)} on {list(comp.metrics)}, not of runs "
                    f"{names} on {metric_list}"
                )
            main = comp.scores
        elif run_count is None or run_count >= 2:
            from stagewise.stats import compare

            comp = compare(
                load_qrels,
                load_runs,
                metric_list,
                baseline=baseline,
                test=test,
                correction=correction,
                alpha=alpha,
                permutations=permutations,
                seed=seed,
                tie_tolerance=tie_tolerance,
                **conv,
            )
            main = comp.scores
        else:
            main = evaluate(load_qrels, load_runs, metric_list, **conv)
        say("evaluating the curves")
        at_k = evaluate(loaded["qrels"], loaded["runs"], curves.metric_names(cutoffs), **conv)
        names = [r.name for r in at_k.runs]
        plot_baseline = comp.baseline if comp is not None and comp.baseline else (names[0] if len(names) > 1 else None)
        say("drawing")
        if comp is not None:
            sections.append(("comparison", "Comparison", comparison_section.section(comp, digits)))
        if loaded["fusion"]:
            sections.append(("fusion", "Fused runs", fusion.section(loaded["fusion"])))
        sections.append(("curves", "Metrics at k", curves.section(at_k, cutoffs)))
        tolerance = comp.conventions.get("tie_tolerance", tie_tolerance) if comp is not None else tie_tolerance
        sections.append(("per-query", "Per query", perquery.section(main, metric_list, plot_baseline, tolerance)))
        health = at_k
        if judged_only:  # judged@k of a judged-only evaluation is 1 by construction: measure the runs as given
            health = evaluate(
                loaded["qrels"], loaded["runs"], [f"judged@{k}" for k in cutoffs], **{**conv, "judged_only": False}
            )
        sections.append(
            (
                "judgements",
                "Judgement health",
                judgements.section(loaded["qrels"], health, cutoffs, relevance_level, missing),
            )
        )
        heading = heading or f"stagewise report: {len(names)} run{'s' if len(names) != 1 else ''}"
    if rag is not None:
        say("diagnosing the RAG records")
        if type(rag).__name__ == "RagReport":
            report, answers = rag, dict(rag_answers or {})
        else:
            report, answers = _rag(rag, rag_options or {})
        sections.append(("rag", "RAG diagnosis", rag_section.section(report, digits, answers)))
        heading = heading or f"stagewise report: {report.n} RAG samples"
    sources = list(sources) if sources is not None else _paths(qrels, runs, rag)
    named = ", ".join(page.esc(_name(s)) for s in sources[:25]) + (" …" if len(sources) > 25 else "")
    intro = (
        f'<p class="count">Made by stagewise {page.esc(__version__)}'
        + (f" from {named}" if named else "")
        + ". Every plot has its numbers in a table under it; every table states the conventions that produced it."
        "</p>"
    )
    return page.document(heading or "stagewise report", sections, intro)


def write(output: str | os.PathLike, *args: Any, **kwargs: Any) -> Path:
    """:func:`build` the report and write it to ``output`` atomically (a reader never sees half a file); the path
    is checked before any work (not a folder, not one of the inputs, writable)."""
    return written(output, *args, **kwargs)[0]


def written(output: str | os.PathLike, *args: Any, **kwargs: Any) -> tuple[Path, str]:
    """:func:`write`, returning the path written and the page too (so a caller that wants it need not read the
    file back)."""
    from stagewise._io import atomic_write, check_output

    given = dict(zip(("qrels", "runs", "metrics"), args, strict=False))
    given.update(kwargs)
    paths = _paths(given.get("qrels"), given.get("runs"), given.get("rag")) + list(given.get("sources") or [])
    target = check_output(output, inputs=[p for p in paths if isinstance(p, str | os.PathLike)])
    text = build(*args, **kwargs)
    with atomic_write(output) as fh:
        fh.write(text)
    return target, text


def _paths(qrels: Any, runs: Any, rag: Any) -> list[Any]:
    """The file paths among the inputs (a run mapping's values, a list's items)."""
    items = [qrels, rag]
    if isinstance(runs, dict):
        items += list(runs.values())
    elif isinstance(runs, list | tuple):
        items += list(runs)
    else:
        items.append(runs)
    return [x for x in items if isinstance(x, str | os.PathLike)]


def _name(source: Any) -> str:
    return os.path.basename(os.fspath(source)) if isinstance(source, str | os.PathLike) else type(source).__name__


def _rag(records: Any, options: dict[str, Any]) -> tuple[Any, dict[str, str]]:
    """The diagnosis of ``records`` and their answers by id (the samples table shows them; the report's rows
    do not hold them)."""
    from stagewise.rag.diagnose import evaluate_rag
    from stagewise.rag.records import read_records

    read = read_records(records)
    return evaluate_rag(read, **options), {rec.id: rec.answer for rec in read}


def _fusion_statements(runs: Any) -> dict[str, dict[str, Any]]:
    """The fusion statement of each fused run: a FusedRun's own, or the ``<run>.meta.json`` beside a file."""
    from stagewise.data.readers import path_labels

    items = list(runs.items()) if isinstance(runs, dict) else None
    if items is None:
        given = list(runs) if isinstance(runs, list | tuple) else [runs]
        paths = [g for g in given if isinstance(g, str | os.PathLike)]
        labels = iter(path_labels(paths)) if paths else iter(())
        items = [(next(labels) if isinstance(g, str | os.PathLike) else getattr(g, "name", f"run{i}"), g)
                 for i, g in enumerate(given)]  # fmt: skip
    out = {}
    for name, run in items:
        info = getattr(run, "fusion", None)
        if info is None and isinstance(run, str | os.PathLike):
            meta = Path(os.fspath(run) + ".meta.json")
            if meta.is_file():
                try:
                    info = json.loads(meta.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    info = None  # a damaged statement is not the run's fault; the report goes on without it
        if isinstance(info, dict) and "fusion" in info and isinstance(info["fusion"], dict):
            info = info["fusion"]
        if isinstance(info, dict) and "method" in info:
            out[str(name)] = info
    return out
