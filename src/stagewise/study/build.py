""":func:`study`: compute, in one call, everything a report shows, as a :class:`~stagewise.study.value.Study`.

The computations the HTML report used to make itself live here (reading the inputs, the comparison, the
curves' and the judgement health's evaluations, the RAG diagnosis, the fusion statements), so that
:mod:`stagewise.report` only renders (pyproject.toml's ``report-renders`` contract holds it to that)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stagewise.study.value import CUTOFFS, QrelsSummary, Study, curve_metrics, input_paths

if TYPE_CHECKING:
    from stagewise.metrics.context import Conventions
    from stagewise.stats.compare import CompareOptions
    from stagewise.stats.result import Comparison

__all__ = ["fusion_statements", "study"]


def study(
    qrels: Any = None,
    runs: Any = None,
    metrics: str | Iterable[str] | None = None,
    *,
    conventions: Conventions | None = None,
    compare: CompareOptions | None = None,
    comparison: Comparison | None = None,
    rag: Any = None,
    rag_options: Any = None,
    rag_answers: Mapping[str, str] | None = None,
    judge_audit: Any = None,
    trust: Any = None,
    fusion: Mapping[str, Mapping[str, Any]] | None = None,
    cutoffs: Sequence[int] = CUTOFFS,
    title: str | None = None,
    sources: Sequence[Any] | None = None,
    progress: Callable[[str], None] | None = None,
    **overrides: Any,
) -> Study:
    """Everything a report shows, computed: the evaluation and comparison of ``runs``, the metric-at-k curves,
    the judgement health, the fusion statements and the RAG diagnosis, in one :class:`Study`.

    Parameters
    ----------
    qrels, runs
        As :func:`stagewise.compare` (a function that returns them is called after the cheap checks). With one
        run there is no comparison; with none, ``rag`` must be given.
    metrics : default=("map", "ndcg@10", "recall@100", "mrr@10", "P@10")
        The comparison's metrics; the first one is the metric of the per-query difference plots.
    conventions : Conventions, optional
        The evaluation's conventions (:class:`stagewise.Conventions`); its fields may also be given as keywords.
    compare : CompareOptions, optional
        How two or more runs are compared (test, baseline, correction, alpha, alternative, resamples, seed,
        interval, family, ...); its fields may also be given as keywords, which override it. With no
        ``baseline``, every pair is tested and the first run is the baseline of the plots.
    comparison : Comparison, optional
        The comparison of these runs already made (:func:`stagewise.compare` or ``compare_scores``), kept as
        it is instead of testing again (its options are then its own).
    rag : path, records or RagReport, optional
        RAG records diagnosed with :func:`stagewise.evaluate_rag` (``rag_options``: its keywords, as a mapping,
        or its options value), or a report already made (``rag_answers``: each sample's answer text by id,
        since a report's rows hold the labels, not the texts).
    judge_audit : path, JudgeAudit, or a list of them, optional
        Judge audits (``stagewise judge audit --format json`` files, or JudgeAudit values) for the RAG section.
    trust : True, TrustOptions or mapping, optional
        Also compute how far the qrels can be trusted (:func:`stagewise.assess.qrels_trust.trust`: leave-one-run-
        out, score bounds, ranking agreement) for two or more runs; True takes the first metric and a depth-100
        pool, a mapping gives :class:`~stagewise.assess.qrels_trust.TrustOptions` fields.
    fusion : mapping, optional
        Fusion statements by run name, over the ones read from the runs (a ``FusedRun``'s own ``fusion``, or
        the ``<run>.meta.json`` beside a file): how a run made elsewhere was fused.
    cutoffs
        The k of the metric-at-k curves (default 18 values from 1 to 1000, even on a log axis).
    title, sources
        The page's title, and the inputs to name (default: the paths among ``qrels``, ``runs`` and ``rag``).
    progress
        A function told each step (``progress("evaluating the curves")``).
    **overrides
        Fields of :class:`~stagewise.metrics.context.Conventions` or of
        :class:`~stagewise.stats.compare.CompareOptions`.

    Examples
    --------
    >>> import stagewise
    >>> s = stagewise.study({"q1": {"d1": 1}, "q2": {"d2": 1}},
    ...                     {"A": {"q1": {"d1": 2, "x": 1}, "q2": {"x": 2, "d2": 1}},
    ...                      "B": {"q1": {"d1": 2, "x": 1}, "q2": {"d2": 2, "x": 1}}}, ["mrr"], cutoffs=(1, 10))
    >>> s.runs, s.comparison.metrics, round(s.at_k.means["B"]["P@1"], 2), s.plot_baseline
    (['A', 'B'], ['mrr'], 1.0, 'A')
    """
    from stagewise.errors import StagewiseError

    say = progress or (lambda _msg: None)
    from stagewise.stats.compare import split_options

    options, conv = split_options(compare, conventions, overrides, "study")
    cutoffs = tuple(int(k) for k in cutoffs)
    if not cutoffs or min(cutoffs) < 1:
        raise StagewiseError(f"the curves' cutoffs must be integers >= 1; got {cutoffs}")
    has_runs = runs is not None and not (isinstance(runs, list | tuple) and not runs)
    if not has_runs and rag is None:
        raise StagewiseError("a report needs runs (with their qrels) or RAG records: give RUN... or --rag")
    if has_runs and qrels is None:
        raise StagewiseError("runs need their qrels: give QRELS before the runs")
    parts: dict[str, Any] = {}
    if has_runs:
        studied, read = _study_runs(qrels, runs, metrics, conv, options, comparison, cutoffs, say)
        parts.update(studied)
        parts["trust"] = _trust(trust, parts["metrics"][0], read, conv, say)
        parts["fusion"] = {**parts["fusion"], **{str(k): dict(v) for k, v in (fusion or {}).items()}}
    if rag is not None:
        say("diagnosing the RAG records")
        parts["rag"], parts["answers"] = _rag(rag, rag_options, rag_answers)
    if judge_audit is not None:
        parts["judge_audits"] = _audits(judge_audit)
    given = list(sources) if sources is not None else input_paths(qrels, runs, rag) + _audit_paths(judge_audit)
    return Study(conventions=conv, cutoffs=cutoffs, title=title, sources=tuple(given), **parts)


def _trust(asked: Any, metric: str, read: tuple[Any, Any], conv: Conventions, say: Callable[[str], None]) -> Any:
    """The trust report of the study's runs on its qrels (read once, by :func:`_study_runs`); None unless asked."""
    from stagewise.assess.qrels_trust import TrustOptions, trust
    from stagewise.errors import StagewiseError

    if asked is None or asked is False:
        return None
    say("leaving each run out of the pool")
    if asked is True:
        options = TrustOptions(metric=metric)
    elif isinstance(asked, TrustOptions):
        options = asked
    elif isinstance(asked, Mapping):
        options = TrustOptions(**{"metric": metric, **asked})
    else:
        raise StagewiseError(f"trust must be True, a TrustOptions or a mapping of its fields; got {asked!r}")
    qrels_read, runs_read = read
    if len(runs_read) < 2:
        raise StagewiseError("how far the qrels can be trusted needs two or more runs (each is left out in turn)")
    return trust(qrels_read, runs_read, options, conventions=conv)


def _evaluate(qrels: Any, runs: Any, metrics: list[str], conv: Conventions) -> Any:
    """The one evaluation every part of a study makes (:func:`stagewise.evaluate`, the local engine)."""
    from stagewise.engines import evaluate

    return evaluate(qrels, runs, metrics, conventions=conv)


def _study_runs(
    qrels: Any,
    runs: Any,
    metrics: str | Iterable[str] | None,
    conv: Conventions,
    options: CompareOptions,
    comparison: Comparison | None,
    cutoffs: tuple[int, ...],
    say: Callable[[str], None],
) -> tuple[dict[str, Any], tuple[Any, Any]]:
    """The parts of a study of runs (scores, comparison, curves, judgement health, fusion statements), and the
    qrels and runs as read (for the parts computed after: the trust report)."""
    from stagewise.data.readers import read_qrels, read_runs
    from stagewise.metrics.defaults import DEFAULT_METRICS

    metric_list = [metrics] if isinstance(metrics, str) else list(metrics or DEFAULT_METRICS)
    loaded: dict[str, Any] = {}

    def load_qrels() -> Any:
        say("reading the qrels")
        loaded["qrels"] = read_qrels(qrels() if callable(qrels) else qrels)
        return loaded["qrels"]

    def load_runs() -> Any:
        say("reading the runs")
        given = runs() if callable(runs) else runs
        loaded["fusion"] = fusion_statements(given)
        loaded["runs"] = read_runs(given)
        return loaded["runs"]

    comp, scores = _compared(load_qrels, load_runs, runs, metric_list, conv, options, comparison)
    say("evaluating the curves")
    qrels_read, runs_read = loaded["qrels"], loaded["runs"]
    at_k = _evaluate(qrels_read, runs_read, curve_metrics(cutoffs), conv)
    health = at_k
    if conv.judged_only:  # judged@k of a judged-only evaluation is 1 by construction: measure the runs as given
        health = _evaluate(qrels_read, runs_read, [f"judged@{k}" for k in cutoffs], replace(conv, judged_only=False))
    names = [r.name for r in at_k.runs]
    tolerance = options.tie_tolerance if comp is None else comp.conventions.get("tie_tolerance", options.tie_tolerance)
    return {
        "metrics": tuple(metric_list),
        "scores": scores,
        "comparison": comp,
        "at_k": at_k,
        "health": health,
        "qrels": QrelsSummary(dict(qrels_read.label_histogram()), int(qrels_read.n_queries)),
        "plot_baseline": (comp.baseline if comp is not None else None) or (names[0] if len(names) > 1 else None),
        "tie_tolerance": tolerance,
        "fusion": loaded["fusion"],
    }, (qrels_read, runs_read)


def _compared(
    load_qrels: Callable[[], Any],
    load_runs: Callable[[], Any],
    runs: Any,
    metrics: list[str],
    conv: Conventions,
    options: CompareOptions,
    comparison: Comparison | None,
) -> tuple[Comparison | None, Any]:
    """The comparison (the one given, checked to be of these runs and metrics; or made, for two or more runs;
    or None for one) and the per-query scores of ``metrics``; the loaders read the inputs once."""
    from stagewise.errors import StagewiseError

    if comparison is not None:
        load_qrels()
        names = [r.name for r in load_runs()]
        if names != list(comparison.runs) or list(comparison.metrics) != metrics:
            raise StagewiseError(
                f"the comparison given is of runs {list(comparison.runs)} on {list(comparison.metrics)}, not of runs "
                f"{names} on {metrics}"
            )
        return comparison, comparison.scores
    run_count = None if callable(runs) else (len(runs) if isinstance(runs, list | tuple | dict) else 1)
    if run_count is None or run_count >= 2:
        from stagewise.stats.compare import compare

        made = compare(load_qrels, load_runs, metrics, conventions=conv, options=options)
        return made, made.scores
    return None, _evaluate(load_qrels, load_runs, metrics, conv)


def _audit_paths(given: Any) -> list[Any]:
    """The audit files among ``given``: inputs too, so no output may replace one."""
    items = [] if given is None else given if isinstance(given, list | tuple) else [given]
    return [a for a in items if isinstance(a, str | os.PathLike)]


def _audits(given: Any) -> tuple[Any, ...]:
    """Judge audits: each a JudgeAudit kept as it is, or a path read back (:func:`stagewise.rag.audit.read_audit`)."""
    from stagewise.rag.audit import JudgeAudit, read_audit

    items = given if isinstance(given, list | tuple) else [given]
    return tuple(a if isinstance(a, JudgeAudit) else read_audit(a) for a in items)


def _rag(rag: Any, options: Any, answers: Mapping[str, str] | None) -> tuple[Any, dict[str, str]]:
    """The diagnosis of ``rag`` (records, or a RagReport already made) and each sample's answer by id (the
    samples table shows them; a report's rows do not hold them)."""
    from stagewise.rag.diagnose import evaluate_rag
    from stagewise.rag.records import read_records
    from stagewise.rag.report import RagReport

    if isinstance(rag, RagReport):
        return rag, dict(answers or {})
    read = read_records(rag)
    if options is None or isinstance(options, Mapping):
        report = evaluate_rag(read, **dict(options or {}))
    else:
        report = evaluate_rag(read, options=options)
    return report, {rec.id: rec.answer for rec in read}


def fusion_statements(runs: Any) -> dict[str, dict[str, Any]]:
    """The fusion statement of each fused run among ``runs``, by run name: a FusedRun's own ``fusion``, or the
    ``<run>.meta.json`` that :func:`stagewise.fusion.write_fused` wrote beside a file (a damaged one is left
    out: it is not the run's fault, and the report goes on without it)."""
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
            info = _sidecar(Path(os.fspath(run) + ".meta.json"))
        if isinstance(info, dict) and "fusion" in info and isinstance(info["fusion"], dict):
            info = info["fusion"]
        if isinstance(info, dict) and "method" in info:
            out[str(name)] = info
    return out


def _sidecar(meta: Path) -> Any:
    if not meta.is_file():
        return None
    try:
        return json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
