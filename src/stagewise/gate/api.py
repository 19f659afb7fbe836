"""``gate(qrels, run, baseline, ...)``: a regression gate for CI, on the library's own comparison and diagnosis.

A run passes when every check passes:

* a **margin** per metric (non-inferiority): the confidence interval of ``mean(run - baseline)`` from
  :func:`stagewise.compare` (Student t or percentile bootstrap, at ``ci_level``) must not reach below
  ``-max_drop`` (nor above ``+max_drop`` for a measure where lower is better);
* a **floor** per metric: the run's mean must be at least the floor;
* a **ceiling** per RAG label: the share of samples :func:`stagewise.evaluate_rag` gives that label must be at
  most the ceiling.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from stagewise.errors import ConventionError, InputError, MetricError
from stagewise.gate.options import GATE_FIELDS, GateOptions, gate_options, split_gate
from stagewise.gate.result import Check, GateResult

__all__ = ["gate"]


def gate(
    qrels: Any,
    run: Any,
    baseline: Any,
    options: GateOptions | None = None,
    *,
    rag: Any = None,
    rag_options: Any = None,
    conventions: Any = None,
    compare: Any = None,
    engine: Any = None,
    **overrides: Any,
) -> GateResult:
    """Check ``run`` against ``baseline`` (margins), floors and RAG ceilings; :attr:`GateResult.passed` says
    whether all pass.

    Parameters
    ----------
    qrels, run, baseline
        As :func:`stagewise.compare` takes them (paths, :class:`~stagewise.Run` values, dicts; a function given
        for ``qrels`` is called after the cheap checks). ``baseline`` must not be the same file as ``run``.
    options : GateOptions, optional
        What is checked: ``metrics`` held to the margin ``max_drop``, ``floors`` and ``ceilings`` (see
        :class:`~stagewise.gate.GateOptions`); its fields may be given as keywords.
    rag, rag_options
        RAG records (a JSONL path or records) diagnosed by :func:`stagewise.evaluate_rag` with ``rag_options``
        (a :class:`~stagewise.rag.RagOptions` or a mapping of its fields), for the ``ceilings``.
    conventions, compare, engine
        The evaluation's :class:`~stagewise.Conventions`, the :class:`~stagewise.stats.CompareOptions` of the
        comparison (``test``, ``alternative``, ``ci``, ``ci_level``, ``resamples``, ``seed``; its ``baseline``
        is set here) and the engine, as :func:`stagewise.compare` takes them.
    **overrides
        Fields of :class:`GateOptions`, :class:`~stagewise.stats.CompareOptions` or
        :class:`~stagewise.Conventions`; another keyword is a :class:`~stagewise.errors.ConventionError`.

    Returns
    -------
    GateResult
        One :class:`Check` per margin, floor and ceiling, in that order, the one-line ``verdict()`` and the
        conventions; deterministic (the resampling tests and the bootstrap interval are seeded).

    Examples
    --------
    >>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
    >>> old = {"q1": {"d1": 2, "x": 1}, "q2": {"d2": 2, "x": 1}, "q3": {"x": 2, "d3": 1}}
    >>> new = {"q1": {"d1": 2, "x": 1}, "q2": {"x": 2, "d2": 1}, "q3": {"x": 2, "d3": 1}}
    >>> gate(qrels, dict(old), old, metrics="mrr").passed  # the same run, as two objects
    True
    >>> result = gate(qrels, new, old, metrics="mrr", max_drop=0.05)
    >>> result.passed, round(result.checks[0].mean_diff, 4)
    (False, -0.1667)
    """
    from stagewise.stats.compare import split_options

    mine, rest = split_gate(overrides)
    _check_keywords(rest)
    opts = gate_options(options, mine)
    copts, conv = split_options(compare, conventions, rest, "gate")
    directions = _check_cheap(opts, run, baseline, rag)
    _check_test(copts.test)
    from stagewise.stats.compare import compare as compare_runs

    runs = dict(zip(_labels(baseline, run), (baseline, run), strict=True))
    comparison = compare_runs(
        qrels, runs, list(opts.measured), conventions=conv, options=replace(copts, baseline=0), engine=engine
    )
    base_name, run_name = comparison.runs
    checks = [_margin(comparison, m, directions[m], opts.max_drop) for m in opts.metrics]
    checks += [_floor(comparison, name, floor) for name, floor in opts.floors]
    report = None
    if opts.ceilings:
        from stagewise.rag import evaluate_rag

        report = _diagnose(evaluate_rag, rag, rag_options)
        checks += [_ceiling(report, label, rate) for label, rate in opts.ceilings]
    return GateResult(
        run=run_name,
        baseline=base_name,
        checks=tuple(checks),
        conventions=_conventions(opts, comparison, report),
        comparison=comparison,
        rag=report,
    )


def _check_cheap(opts: GateOptions, run: Any, baseline: Any, rag: Any) -> dict[str, str]:
    """Every argument checked before a file is read; each margin metric's better direction."""
    from stagewise.metrics.measures import Measure
    from stagewise.rag.labels import LABELS

    if not opts.measured:
        raise ConventionError("the gate needs a metric: one held to the margin (metrics=, -m) or a floor")
    measures = {name: Measure.parse(name) for name in opts.measured}  # a misspelt metric fails here
    directions = {}
    for name in opts.metrics:
        better = measures[name].better
        if better is None:
            raise MetricError(f"{name} has no better direction (a plain count): it cannot be held to a margin")
        directions[name] = better
    for label, _ in opts.ceilings:
        if label not in LABELS:
            raise ConventionError(f"unknown RAG label {label!r} for a ceiling; choose one of {', '.join(LABELS)}")
    if opts.ceilings and rag is None:
        raise ConventionError("a ceiling on a RAG label needs RAG records: give rag= (--rag RECORDS)")
    if rag is not None and not opts.ceilings:
        raise ConventionError("RAG records are given but no ceiling: add one (--max retrieval_failure=0.05)")
    if _same_file(run, baseline):
        raise InputError(
            str(run), "is also the baseline", hint="give the run to gate and the run it must not fall behind"
        )
    return directions


def _check_keywords(rest: dict[str, Any]) -> None:
    """A keyword of none of the three values is an error listing all their fields."""
    from stagewise.metrics.context import CONVENTION_FIELDS
    from stagewise.stats.compare import OPTION_FIELDS

    unknown = sorted(set(rest) - {*OPTION_FIELDS, *CONVENTION_FIELDS, "permutations"})
    if unknown:
        raise ConventionError(
            f"gate() got unknown keyword(s) {', '.join(map(repr, unknown))}; what is checked: "
            f"{', '.join(GATE_FIELDS)}; the comparison's options: {', '.join(OPTION_FIELDS)}; the conventions: "
            f"{', '.join(CONVENTION_FIELDS)}"
        )


def _check_test(name: str) -> None:
    """The gate compares two runs: a test of many runs at once (``kind="many"``) is refused, naming the others."""
    from stagewise.stats.catalogue import TESTS

    if getattr(TESTS.lookup(name), "kind", "paired") != "paired":
        paired = [n for n in TESTS.names() if getattr(TESTS[n], "kind", "paired") == "paired"]
        raise ConventionError(
            f"test {name!r} compares many runs at once; the gate compares a run with its baseline: give one of "
            f"{', '.join(paired)}"
        )


def _labels(baseline: Any, run: Any) -> tuple[str, str]:
    """The two runs' names: their files' labels, their own names when they differ, else baseline and run."""
    if isinstance(run, str | os.PathLike) and isinstance(baseline, str | os.PathLike):
        from stagewise.data.readers import path_labels

        first, second = path_labels([os.fspath(baseline), os.fspath(run)])
        return first, second
    names = getattr(baseline, "name", None), getattr(run, "name", None)
    if all(isinstance(n, str) and n for n in names) and names[0] != names[1]:
        return names[0], names[1]
    return "baseline", "run"


def _same_file(run: Any, baseline: Any) -> bool:
    if run is baseline:
        return True
    if not (isinstance(run, str | os.PathLike) and isinstance(baseline, str | os.PathLike)):
        return False
    if os.path.normpath(run) == os.path.normpath(baseline):
        return True
    try:
        return os.path.samefile(run, baseline)
    except OSError:  # a missing file: the reader names it
        return False


def _margin(comparison: Any, metric: str, better: str, max_drop: float) -> Check:
    base_name, run_name = comparison.runs
    pair = comparison.pair(metric, base_name, run_name)  # a = baseline, b = run: mean_diff = run - baseline
    level = comparison.conventions["confidence_interval"].split(" interval", 1)[0]
    interval = f"{level} interval [{pair.ci_low:.4f}, {pair.ci_high:.4f}]"
    if better == "higher":
        observed, threshold, passed = pair.ci_low, -max_drop, not pair.ci_low < -max_drop
        side = "lower bound", "below" if not passed else "at or above"
    else:
        observed, threshold, passed = pair.ci_high, max_drop, not pair.ci_high > max_drop
        side = "upper bound (lower is better)", "above" if not passed else "at or below"
    statement = (
        f"mean(run - baseline) = {pair.mean_diff:+.4f}, {interval}: its {side[0]} {observed:+.4f} is {side[1]} "
        f"{threshold:+.4f}"
    )
    return Check(
        kind="margin",
        name=metric,
        observed=float(observed),
        threshold=float(threshold),
        passed=bool(passed),
        statement=statement,
        n=pair.n_queries,
        run_mean=comparison.means[run_name][metric],
        baseline_mean=comparison.means[base_name][metric],
        mean_diff=pair.mean_diff,
        ci_low=pair.ci_low,
        ci_high=pair.ci_high,
        p_value=pair.p_value,
    )


def _floor(comparison: Any, metric: str, floor: float) -> Check:
    run_name = comparison.runs[1]
    mean = float(comparison.means[run_name][metric])
    passed = mean >= floor
    n = len(comparison.scores.query_ids[1]) if comparison.scores is not None else 0
    word = "at or above" if passed else "below"
    return Check("floor", metric, mean, floor, passed, f"the run's mean {mean:.4f} is {word} {floor:.4f}", n, mean)


def _diagnose(evaluate_rag: Any, records: Any, rag_options: Any) -> Any:
    from collections.abc import Mapping

    if isinstance(rag_options, Mapping):
        report = evaluate_rag(records, **rag_options)
    else:
        report = evaluate_rag(records, options=rag_options)
    if report.n == 0:
        raise InputError(str(records), "holds no RAG sample", expected="one JSON record a line")
    return report


def _ceiling(report: Any, label: str, ceiling: float) -> Check:
    count = report.counts()[label]
    rate = count / report.n
    passed = rate <= ceiling
    word = "at or below" if passed else "above"
    statement = f"{count} of {report.n} samples ({rate:.2%}) are {label}, {word} the ceiling {ceiling:.2%}"
    return Check("ceiling", label, rate, ceiling, passed, statement, report.n)


def _conventions(opts: GateOptions, comparison: Any, report: Any) -> dict[str, Any]:
    """Every convention behind the verdict, in words (the outputs print them all)."""
    stated = comparison.conventions
    out: dict[str, Any] = {
        "margin": (
            "non-inferiority: a metric fails when the confidence interval of mean(run - baseline) (see interval) "
            f"reaches below -max_drop = {-opts.max_drop:+.4f} (above +max_drop for a measure where lower is "
            "better); each metric is checked on its own (no correction across metrics)"
        ),
        "max_drop": opts.max_drop,
        "interval": stated["confidence_interval"],
        "test": stated["test_description"],
        "p_value": f"{stated['alternative']} p-value of the {stated['test']} test of run against baseline, "
        "shown beside the interval; the interval decides",
        "seed": stated["seed"],
        "resamples": stated["permutations"],
        "n_queries": stated["n_queries"],
        "pairing": stated["pairing"],
        "floor": "a metric's floor passes when the run's mean is >= the floor",
        "ceiling": "a RAG label's ceiling passes when the share of samples with that label is <= the ceiling",
        "verdict": "pass when every check passes; stagewise gate exits 0 on pass, 1 on fail, 2 on bad input",
    }
    if "evaluation" in stated:
        out["evaluation"] = stated["evaluation"]
    if report is not None:
        out["rag"] = report.conventions()
    return out
