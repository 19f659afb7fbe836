"""Audit a judge against human labels: agreement with intervals, the confusion matrix, calibration, gullibility.

:func:`audit_support` asks a support judge about labelled claims (:mod:`stagewise.rag.judge_inputs`) and
:func:`audit_relevance` a relevance judge about graded (query, passage) pairs; each returns a :class:`JudgeAudit`
that :mod:`stagewise.report.judge_audit` renders. Conventions, stated in every audit's ``notes``:

- **Binary support** (support audits): people's ``supported`` (ExpertQA's Complete, or ``true``) against the
  judge's ``supported`` label; ``partial`` on either side is not supported.
- **Grades** (relevance audits): people's grades capped to 0-3 (a grade above 3 is 3, below 0 is 0) against the
  judge's 0-3 grade.
- **Agreement**: accuracy; macro-F1, the mean over the categories either side used of 2 TP / (2 TP + FP + FN)
  (scikit-learn's ``f1_score(average="macro")``); Cohen's kappa, unweighted and, for grades, linear and
  quadratic, the weights on category positions (scikit-learn's ``cohen_kappa_score``, and
  :func:`stagewise.assess.agreement.cohen_kappa`, which equal it). A kappa whose chance agreement is 1 is NaN.
- **Intervals**: the 95% percentile bootstrap: the judged items resampled with replacement ``resamples``
  times (default 1000) with numpy's ``default_rng(seed)``; the 2.5th and 97.5th percentiles of each figure
  (NaN draws left out).
- **Calibration**: the judge's scores in ``bins`` equal-width bins of [0, 1] (a score of 1 in the last): per bin
  the count, the mean score and the observed rate of (people's) support, or relevance at grade >= 1; expected
  calibration error ECE = sum over bins of count / n * |mean score - observed rate|.
- **Unjudged** answers (:meth:`~stagewise.rag.verdicts.Verdict.unjudged`) are left out of every figure and
  counted apart, never read as "not supported".

The bootstrap is vectorised: one confusion matrix per resample from a single ``bincount``, so B = 1000 over
a few thousand items takes well under a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stagewise.rag.judge_inputs import Claim, RelevancePair
from stagewise.rag.judges import judge_name, judge_version
from stagewise.rag.verdicts import RELEVANCE_LABELS, Verdict, relevance_verdicts, support_verdicts

__all__ = [
    "CalibrationBin",
    "Figure",
    "JudgeAudit",
    "agreement_figures",
    "audit_relevance",
    "audit_support",
    "bootstrap_figures",
    "calibration",
    "read_audit",
]

BINARY = ("not", "supported")
_CELLS_PER_CHUNK = 4_000_000  # resamples x items drawn at once (32 MB of int64)


@dataclass(frozen=True)
class Figure:
    """A figure and its 95% percentile bootstrap interval."""

    value: float
    low: float
    high: float

    def as_list(self) -> list[float | None]:
        return [None if np.isnan(x) else round(float(x), 6) for x in (self.value, self.low, self.high)]


@dataclass(frozen=True)
class CalibrationBin:
    """Scores in [low, high): how many, their mean, and the observed rate of people's positive label."""

    low: float
    high: float
    count: int
    mean_score: float
    observed: float


@dataclass(frozen=True)
class JudgeAudit:
    """A judge audited against people's labels (see the module's docstring for every convention)."""

    task: str
    judge: str
    version: str | None
    data: str
    n: int
    unjudged: int
    categories: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]  # rows: people, columns: the judge
    figures: dict[str, Figure]
    calibration: tuple[CalibrationBin, ...]
    ece: float
    resamples: int
    seed: int
    left_out: dict[str, int] = field(default_factory=dict)
    gullibility: tuple[Any, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def kappa(self) -> Figure:
        return self.figures["kappa"]


def _weights(size: int, weights: str | None) -> np.ndarray:
    distance = np.abs(np.arange(size)[:, None] - np.arange(size)[None, :]).astype(float)
    return (distance > 0).astype(float) if weights is None else distance if weights == "linear" else distance**2


def agreement_figures(counts: np.ndarray, weightings: Sequence[str | None] = (None,)) -> dict[str, np.ndarray]:
    """Accuracy, macro-F1 and Cohen's kappa (one per weighting) of confusion matrices ``counts`` (shape
    ``(..., K, K)``, rows one rater, columns the other); NaN where a figure is undefined.

    >>> out = agreement_figures(np.array([[2, 0], [1, 1]]))
    >>> float(out["accuracy"]), round(float(out["macro_f1"]), 4), round(float(out["kappa"]), 4)
    (0.75, 0.7333, 0.5)
    """
    counts = np.asarray(counts, dtype=float)
    total = counts.sum(axis=(-2, -1))
    diag = np.diagonal(counts, axis1=-2, axis2=-1)
    rows, cols = counts.sum(axis=-1), counts.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        used = (rows + cols) > 0
        f1 = np.where(used, 2 * diag / np.where(used, rows + cols, 1), 0.0)
        out = {"accuracy": diag.sum(axis=-1) / total, "macro_f1": f1.sum(axis=-1) / used.sum(axis=-1)}
        expected = rows[..., :, None] * cols[..., None, :] / total[..., None, None]
        for weighting in weightings:
            w = _weights(counts.shape[-1], weighting)
            chance = (w * expected).sum(axis=(-2, -1))
            kappa = 1 - (w * counts).sum(axis=(-2, -1)) / chance
            out["kappa" if weighting is None else f"kappa_{weighting}"] = np.where(chance > 0, kappa, np.nan)
    return out


def bootstrap_figures(
    people: np.ndarray, judge: np.ndarray, size: int, weightings: Sequence[str | None], resamples: int, seed: int
) -> dict[str, Figure]:
    """Each figure of :func:`agreement_figures` on the codes ``people`` and ``judge`` (integers in
    ``range(size)``) with its 95% percentile bootstrap interval (items resampled, ``default_rng(seed)``)."""
    cells = people.astype(np.int64) * size + judge
    n, per = len(cells), size * size
    point = agreement_figures(np.bincount(cells, minlength=per).reshape(size, size), weightings)
    rng = np.random.default_rng(seed)
    draws: dict[str, list[np.ndarray]] = {k: [] for k in point}
    step = max(1, _CELLS_PER_CHUNK // max(n, 1))
    for start in range(0, resamples, step):
        b = min(step, resamples - start)
        drawn = cells[rng.integers(0, n, size=(b, n))] + (np.arange(b) * per)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=b * per).reshape(b, size, size)
        for key, values in agreement_figures(counts, weightings).items():
            draws[key].append(values)
    out = {}
    for key, value in point.items():
        sample = np.concatenate(draws[key]) if resamples else np.array([])
        sample = sample[~np.isnan(sample)]
        low, high = np.percentile(sample, [2.5, 97.5]) if len(sample) else (np.nan, np.nan)
        out[key] = Figure(float(value), float(low), float(high))
    return out


def calibration(scores: np.ndarray, positive: np.ndarray, bins: int = 10) -> tuple[tuple[CalibrationBin, ...], float]:
    """The calibration table (non-empty bins only) and the expected calibration error.

    >>> table, ece = calibration(np.array([0.1, 0.15, 0.9, 0.95]), np.array([False, True, True, True]), bins=2)
    >>> [(b.count, b.mean_score, b.observed) for b in table], round(ece, 4)
    ([(2, 0.125, 0.5), (2, 0.925, 1.0)], 0.225)
    """
    scores = np.clip(np.asarray(scores, dtype=float), 0.0, 1.0)
    which = np.minimum((scores * bins).astype(int), bins - 1)
    table, ece = [], 0.0
    for b in range(bins):
        mask = which == b
        count = int(mask.sum())
        if not count:
            continue
        mean, rate = float(scores[mask].mean()), float(np.asarray(positive)[mask].mean())
        table.append(CalibrationBin(b / bins, (b + 1) / bins, count, mean, rate))
        ece += count / len(scores) * abs(mean - rate)
    return tuple(table), float(ece)


def _calibrated(
    verdicts: Sequence[Verdict], positive: np.ndarray, bins: int
) -> tuple[tuple[CalibrationBin, ...], float]:
    """The calibration of the judged verdicts that carry a score (``positive``: people's, per judged verdict)."""
    judged = [v for v in verdicts if v.judged]
    scored = np.array([v.score is not None for v in judged], dtype=bool)
    if not scored.any():
        return (), float("nan")
    scores = np.array([v.score for v in judged if v.score is not None], dtype=float)
    return calibration(scores, np.asarray(positive)[scored], bins)


def _judged(verdicts: Sequence[Verdict]) -> np.ndarray:
    return np.array([v.judged for v in verdicts], dtype=bool)


def audit_support(
    judge: Any,
    claims: Sequence[Claim],
    *,
    data: str,
    resamples: int = 1000,
    seed: int = 0,
    bins: int = 10,
    attacks: bool = True,
    left_out: dict[str, int] | None = None,
) -> JudgeAudit:
    """Audit a support judge on labelled claims (binary support; see the module's docstring); with ``attacks``,
    its gullibility on the claims people and the judge both call not supported
    (:func:`stagewise.rag.gullibility.gullibility`)."""
    from stagewise.rag.gullibility import gullibility

    verdicts = support_verdicts(judge, [(list(c.passages), c.claim) for c in claims])
    judged = _judged(verdicts)
    people = np.array([bool(c.supported) for c in claims])[judged].astype(np.int64)
    said = np.array([v.supported for v in verdicts])[judged].astype(np.int64)
    figures = bootstrap_figures(people, said, 2, (None,), resamples, seed)
    table, ece = _calibrated(verdicts, people.astype(bool), bins)
    confusion = np.bincount(people * 2 + said, minlength=4).reshape(2, 2)
    fooled: tuple[Any, ...] = ()
    if attacks:
        clean_not = [
            c for c, v in zip(claims, verdicts, strict=True) if not c.supported and v.judged and not v.supported
        ]
        fooled = tuple(
            gullibility(judge, [(list(c.passages), c.claim) for c in clean_not], resamples=resamples, seed=seed)
        )
    notes = (
        "binary support: people's supported (or true; ExpertQA's Complete) against the judge's supported; partial "
        "is not supported on either side",
        f"95% percentile bootstrap, {resamples} resamples of the judged claims, numpy default_rng({seed})",
        "Cohen's kappa unweighted (scikit-learn's cohen_kappa_score); macro-F1 over supported and not",
        f"calibration: scores in {bins} equal-width bins of [0, 1], observed = people's supported rate",
    )
    return JudgeAudit(
        "support", judge_name(judge), judge_version(judge), data, int(judged.sum()), int((~judged).sum()), BINARY,
        tuple(tuple(int(x) for x in row) for row in confusion), figures, table, ece, resamples, seed,
        dict(left_out or {}), fooled, notes,
    )  # fmt: skip


def audit_relevance(
    judge: Any,
    pairs: Sequence[RelevancePair],
    *,
    data: str,
    resamples: int = 1000,
    seed: int = 0,
    bins: int = 10,
    left_out: dict[str, int] | None = None,
) -> JudgeAudit:
    """Audit a relevance judge on graded pairs: people's grades capped to 0-3 against the judge's 0-3 grade,
    kappa unweighted, linear and quadratic; calibration against relevance at grade >= 1."""
    verdicts = relevance_verdicts(judge, [(p.query, p.passage) for p in pairs])
    judged = _judged(verdicts)
    people = np.clip(np.array([int(p.grade or 0) for p in pairs], dtype=np.int64), 0, 3)[judged]
    said = np.array([v.grade if v.judged else 0 for v in verdicts], dtype=np.int64)[judged]
    # positions over the grades either side used, as scikit-learn's and assess.agreement's kappa take them
    used = np.unique(np.concatenate([people, said]))
    position = np.full(4, -1, dtype=np.int64)
    position[used] = np.arange(len(used))
    figures = bootstrap_figures(
        position[people], position[said], max(len(used), 1), (None, "linear", "quadratic"), resamples, seed
    )
    table, ece = _calibrated(verdicts, people >= 1, bins)
    confusion = np.bincount(people * 4 + said, minlength=16).reshape(4, 4)
    notes = (
        "grades: people's capped to 0-3 against the judge's 0-3; kappa weights on the positions of the grades "
        "either side used (scikit-learn's cohen_kappa_score)",
        f"95% percentile bootstrap, {resamples} resamples of the judged pairs, numpy default_rng({seed})",
        f"calibration: scores in {bins} equal-width bins of [0, 1], observed = people's grade >= 1 rate",
    )
    return JudgeAudit(
        "relevance", judge_name(judge), judge_version(judge), data, int(judged.sum()), int((~judged).sum()),
        RELEVANCE_LABELS, tuple(tuple(int(x) for x in row) for row in confusion), figures, table, ece, resamples,
        seed, dict(left_out or {}), (), notes,
    )  # fmt: skip


def _nan(value: Any) -> float:
    return np.nan if value is None else float(value)


def read_audit(path: Any) -> JudgeAudit:
    """A :class:`JudgeAudit` read back from the JSON that ``stagewise judge audit --format json`` writes (what
    :func:`stagewise.study`'s ``judge_audit`` takes); a file of another shape is an error naming it."""
    import json
    from pathlib import Path

    from stagewise.errors import InputError
    from stagewise.rag.gullibility import FooledRate

    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        figures = {k: Figure(*map(_nan, v)) for k, v in doc["figures"].items()}
        bins = tuple(
            CalibrationBin(b["low"], b["high"], b["count"], _nan(b["mean_score"]), _nan(b["observed"]))
            for b in doc["calibration"]["bins"]
        )
        fooled = tuple(
            FooledRate(g["attack"], g["help"], g["n"], g["fooled"], *map(_nan, g["rate"]), g["unjudged"])
            for g in doc["gullibility"]
        )
        ece = doc["calibration"]["ece"]
        return JudgeAudit(
            doc["task"], doc["judge"], doc["judge_version"], doc["data"], doc["n"], doc["unjudged"],
            tuple(doc["confusion"]["categories"]), tuple(tuple(r) for r in doc["confusion"]["counts"]), figures,
            bins, _nan(ece), doc["bootstrap"]["resamples"], doc["bootstrap"]["seed"],
            dict(doc["left_out"]), fooled, tuple(doc["notes"]),
        )  # fmt: skip
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(
            path, f"is not a judge audit ({type(exc).__name__}: {exc})",
            expected="the JSON of stagewise judge audit --format json",
        ) from None  # fmt: skip
