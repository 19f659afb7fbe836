"""How far the qrels can be trusted: leave-one-run-out (or group-out) pooling, score bounds over the unjudged
documents, and how much a ranking of systems moves between two qrels.

**Leave one out** (Zobel, SIGIR 1998; Buckley and Voorhees, SIGIR 2004). The pool of depth ``k`` is every
(query, document) pair in the first ``k`` results of any run. The pairs that only one run (or one group of
runs) put there are its *unique contribution*; removing their judgements from the qrels gives the qrels that
run would have met had it not been pooled. Each run is scored again on its reduced qrels while the others keep
their full-qrels scores, which gives its score change and its rank change among all runs. A new system, never
pooled, is in that position: a large change says its number is not to be trusted with these qrels.

**Score bounds.** Every unjudged document in a run's first ``k`` results is labelled non-relevant (label 0)
and then relevant (a stated label), and the run scored both ways. For precision, DCG and RBP with binary or
unscaled gains the two are the least and the most any labelling with labels up to that label gives; for
measures normalised by the number of relevant documents (AP, recall, nDCG, R-precision) more relevant documents
can also lower the score, and RBP's default gains and ERR are scaled by each query's top label, so for them the
two are the extreme fillings, not a bound over every labelling.

**Ranking agreement.** Kendall's tau-b, tau_ap, Spearman's rho and RBO between the ranking of the systems by
their full-qrels scores and by their left-out scores (and between two qrels files, when a second is given).

Conventions: a run's first ``k`` results follow the evaluation's tie convention; pairs are matched by their
64-bit (query, document) key, as the evaluation joins them; a query left with no judgement is dropped from the
reduced qrels (and so from that run's mean). Scores are computed by :func:`stagewise.evaluate` with the
conventions given.

Example
-------
>>> from stagewise.assess.qrels_trust import trust
>>> qrels = {"q1": {"a": 1, "b": 1, "c": 0, "x": 1}}
>>> runs = {"one": {"q1": {"a": 3, "x": 2, "c": 1}}, "two": {"q1": {"b": 3, "a": 2, "c": 1}}}
>>> report = trust(qrels, runs, metric="P@2", depth=2)
>>> [(r.run, r.unique_pairs, r.score, r.reduced_score) for r in report.left_out]
[('one', 1, 1.0, 0.5), ('two', 1, 1.0, 0.5)]
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from stagewise.errors import ConventionError, InputError

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.assess.correlation import RBO
    from stagewise.data import Qrels, Run
    from stagewise.metrics.context import Conventions

__all__ = [
    "LeftOut",
    "RankingAgreement",
    "ScoreBounds",
    "TrustOptions",
    "TrustReport",
    "read_groups",
    "run_groups",
    "trust",
]


@dataclass(frozen=True)
class TrustOptions:
    """What :func:`trust` measures, as one value.

    Parameters
    ----------
    metric : str, default="map"
        One metric (any name :func:`stagewise.evaluate` takes: ``map``, ``ndcg@10``, ``P@10(rel=2)``...).
    depth : int, default=100
        Pool depth ``k``: the first ``k`` results of every run form the pool.
    group_by : None, "run", "prefix", "prefix:N" or {run: group}, default=None
        The unit left out: each run (None, ``"run"``); runs whose tag (else name) starts with the same letters
        (``"prefix"``: ``UAmsT03RDesc`` is group ``UAmsT``) or the same ``N`` characters (``"prefix:N"``); or a
        mapping of every run name to its group (how a team's runs are named in a TREC track).
    bound_depth : int or None, default=None
        How deep the score bounds look for unjudged documents; None: ``depth``.
    bound_label : int, default=1
        The label an unjudged document gets in the "relevant" filling of the bounds.
    rbo_p : float, default=0.9
        RBO's persistence for the ranking agreement.
    """

    metric: str = "map"
    depth: int = 100
    group_by: str | Mapping[str, str] | None = None
    bound_depth: int | None = None
    bound_label: int = 1
    rbo_p: float = 0.9

    def __post_init__(self) -> None:
        for name in ("depth", "bound_depth"):
            value = getattr(self, name)
            if value is None and name == "bound_depth":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConventionError(f"The '{name}' parameter of trust must be an int >= 1. Got {value!r} instead.")
        if not isinstance(self.bound_label, int) or isinstance(self.bound_label, bool) or self.bound_label < 1:
            raise ConventionError(
                f"The 'bound_label' parameter of trust must be an int >= 1. Got {self.bound_label!r} instead."
            )
        if not isinstance(self.metric, str) or not self.metric.strip():
            raise ConventionError(f"The 'metric' parameter of trust must be one metric name. Got {self.metric!r}.")
        if not (isinstance(self.rbo_p, int | float) and 0.0 < self.rbo_p < 1.0):
            raise ConventionError(f"The 'rbo_p' parameter of trust must be a float in (0, 1). Got {self.rbo_p!r}.")
        if isinstance(self.group_by, str) and _prefix_length(self.group_by) is None and self.group_by != "run":
            raise ConventionError(
                f"The 'group_by' parameter of trust must be 'run', 'prefix', 'prefix:N' or a {{run: group}} "
                f"mapping. Got {self.group_by!r} instead."
            )

    @property
    def bounds_at(self) -> int:
        """The depth the bounds look at: ``bound_depth``, else ``depth``."""
        return self.depth if self.bound_depth is None else self.bound_depth

    @property
    def unit(self) -> str:
        """What is left out, in words: ``run``, ``group (prefix)``, ``group (prefix:3)`` or ``group (mapping)``."""
        if self.group_by is None or self.group_by == "run":
            return "run"
        return f"group ({self.group_by if isinstance(self.group_by, str) else 'mapping'})"


OPTION_FIELDS = tuple(f.name for f in fields(TrustOptions))


def _prefix_length(spec: str) -> int | None:
    """0 for ``prefix`` (the leading letters), N for ``prefix:N``, None for anything else."""
    match = re.fullmatch(r"\s*prefix\s*(?::\s*(\d+))?\s*", spec, flags=re.IGNORECASE)
    if match is None:
        return None
    n = int(match.group(1) or 0)
    return n if n >= 1 or match.group(1) is None else None


@dataclass(frozen=True)
class LeftOut:
    """One run scored on the qrels without the pool documents its unit (itself, or its group) alone contributed.

    ``unique_pairs``: (query, document) pairs of the depth-k pool only this unit put there; ``judged_removed``
    and ``relevant_removed``: the judgements among them removed from the qrels (relevant: label >= the
    relevance level). ``change`` is ``reduced_score - score``; ``rank_change`` is ``reduced_rank - rank``
    (positive: the run falls). Ranks are 1 for the best, ties sharing the better rank.
    """

    run: str
    group: str
    unique_pairs: int
    judged_removed: int
    relevant_removed: int
    score: float
    reduced_score: float
    rank: int
    reduced_rank: int

    @property
    def change(self) -> float:
        return self.reduced_score - self.score

    @property
    def rank_change(self) -> int:
        return self.reduced_rank - self.rank


@dataclass(frozen=True)
class ScoreBounds:
    """A run's score with its ``unjudged`` documents (in its first ``depth`` results, on judged queries) labelled
    non-relevant (``if_nonrelevant``) and relevant at ``label`` (``if_relevant``); ``score`` leaves them unjudged,
    which is the same number for every measure that reads unjudged as non-relevant (not bpref)."""

    run: str
    score: float
    unjudged: int
    retrieved: int
    if_nonrelevant: float
    if_relevant: float
    depth: int
    label: int

    @property
    def low(self) -> float:
        return min(self.if_nonrelevant, self.if_relevant)

    @property
    def high(self) -> float:
        return max(self.if_nonrelevant, self.if_relevant)

    @property
    def unjudged_share(self) -> float:
        return self.unjudged / self.retrieved if self.retrieved else 0.0


@dataclass(frozen=True)
class RankingAgreement:
    """How alike two rankings of the same systems are: ``first`` (the reference, tau_ap's truth) and ``second``.
    tau_ap and RBO are ``nan`` when scores tie (they are defined for orderings without ties)."""

    first: str
    second: str
    systems: int
    kendall_tau: float
    tau_ap: float
    spearman: float
    rbo: RBO | None


@dataclass(frozen=True)
class TrustReport:
    """What :func:`trust` found: every left-out run, every run's bounds, the ranking agreements."""

    options: TrustOptions
    conventions: Conventions
    qrels_name: str
    judgements: int
    pool_pairs: int
    pool_judged: int
    scores: Mapping[str, float]
    left_out: tuple[LeftOut, ...]
    bounds: tuple[ScoreBounds, ...]
    agreements: tuple[RankingAgreement, ...]
    other_scores: Mapping[str, float] | None = None

    @property
    def rank_changes(self) -> int:
        """How many runs change rank when their unit's unique documents are removed."""
        return sum(1 for r in self.left_out if r.rank_change != 0)

    @property
    def largest_change(self) -> LeftOut:
        """The left-out run whose score moved most (in absolute value)."""
        return max(self.left_out, key=lambda r: -1.0 if math.isnan(r.change) else abs(r.change))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the options, conventions, pool, every row and the summary figures."""
        from dataclasses import asdict

        opts = asdict(self.options)
        opts["group_by"] = self.options.group_by if not isinstance(self.options.group_by, Mapping) else dict(
            self.options.group_by
        )  # fmt: skip
        big = self.largest_change
        return _json_ready(
            {
                "metric": self.options.metric,
                "options": opts,
                "left_out_unit": self.options.unit,
                "conventions": self.conventions.describe(),
                "qrels": {"name": self.qrels_name, "judgements": self.judgements},
                "pool": {"depth": self.options.depth, "pairs": self.pool_pairs, "judged": self.pool_judged},
                "summary": {
                    "runs": len(self.left_out),
                    "runs_changing_rank": self.rank_changes,
                    "largest_change": {"run": big.run, "change": big.change},
                    "largest_rank_change": max(abs(r.rank_change) for r in self.left_out),
                },
                "left_out": [{**asdict(r), "change": r.change, "rank_change": r.rank_change} for r in self.left_out],
                "bounds": [{**asdict(b), "low": b.low, "high": b.high} for b in self.bounds],
                "agreements": [_agreement_dict(a) for a in self.agreements],
                **({"other_scores": dict(self.other_scores)} if self.other_scores is not None else {}),
            }
        )


def _json_ready(value: Any) -> Any:
    """``value`` with every NaN float as None (JSON has no NaN: an undefined tau_ap is ``null``)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    return value


def _agreement_dict(a: RankingAgreement) -> dict[str, Any]:
    rbo = None if a.rbo is None else {"min": a.rbo.min, "max": a.rbo.max, "ext": a.rbo.ext, "p": a.rbo.p}
    return {
        "first": a.first,
        "second": a.second,
        "systems": a.systems,
        "kendall_tau": a.kendall_tau,
        "tau_ap": a.tau_ap,
        "spearman": a.spearman,
        "rbo": rbo,
    }


# -- groups ---------------------------------------------------------------------------------------------------


def run_groups(runs: Sequence[Run], group_by: str | Mapping[str, str] | None) -> list[str]:
    """Each run's group: its own name (``None``, ``"run"``), the leading letters of its tag (else its name;
    ``"prefix"``), its first N characters (``"prefix:N"``), or its entry in a ``{run: group}`` mapping, keyed
    by the run's name or its tag (every run must have one: a run missing from it is an :class:`InputError`).

    >>> from stagewise import read_run
    >>> runs = [read_run({"q": {"d": 1.0}}, name=n) for n in ("UAmsT03RDesc", "UAmsT03RTitle", "pircRBa1")]
    >>> run_groups(runs, "prefix"), run_groups(runs, "prefix:2")
    (['UAmsT', 'UAmsT', 'pircRBa'], ['UA', 'UA', 'pi'])
    """
    if group_by is None or group_by == "run":
        return [r.name for r in runs]
    if isinstance(group_by, Mapping):
        missing = [r.name for r in runs if r.name not in group_by and r.tag not in group_by]
        if missing:
            raise InputError(
                "group mapping", f"has no group for run(s) {', '.join(missing[:5])}", expected="a group for every run"
            )
        return [str(group_by[r.name] if r.name in group_by else group_by[r.tag]) for r in runs]
    n = _prefix_length(group_by)
    if n is None:
        raise ConventionError(f"unknown grouping {group_by!r}; choose run, prefix, prefix:N or a mapping")
    out = []
    for r in runs:
        label = r.tag or r.name
        out.append(label[:n] if n else (re.match(r"[^\W\d_]*", label).group(0) or label))  # type: ignore[union-attr]
    return out


def read_groups(path: str | os.PathLike[str]) -> dict[str, str]:
    """A ``{run: group}`` mapping from a file: a JSON object, or one ``run group`` pair a line (whitespace
    between them; blank lines and lines starting with ``#`` skipped). A malformed line is an
    :class:`InputError` naming it."""
    import json
    from pathlib import Path

    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(source, f"cannot be read ({exc.__class__.__name__})", expected="a run-to-group file") from None
    if text.lstrip().startswith("{"):
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(source, f"is not JSON: {exc.msg}", line=exc.lineno, expected="{run: group}") from None
        if not all(isinstance(v, str | int) for v in mapping.values()):
            raise InputError(source, "maps a run to something other than a name", expected="{run: group}")
        return {str(k): str(v) for k, v in mapping.items()}
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields_ = line.split()
        if not fields_ or fields_[0].startswith("#"):
            continue
        if len(fields_) != 2:
            raise InputError(source, f"has {len(fields_)} fields", line=number, expected="a run name and its group")
        out[fields_[0]] = fields_[1]
    if not out:
        raise InputError(source, "names no run", expected="one 'run group' pair a line, or a JSON object")
    return out


# -- pooling --------------------------------------------------------------------------------------------------


def _top_keys(run: Run, depth: int, conventions: Conventions) -> np.ndarray:
    """The (query, document) keys of the run's first ``depth`` results under the tie convention."""
    from stagewise.metrics.context import _ranks  # the evaluation's own ranks, so the pool is what it measures

    ranks = _ranks(run, conventions, np.arange(len(run), dtype=np.int64))
    return run.pair_keys[ranks <= depth]


def _owners(top: list[np.ndarray], units: np.ndarray, qrels_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """For each qrels row, the unit that alone pooled it (-1: none, or several); the unique pool pairs per unit;
    the pool's size. ``top[i]`` are run i's pooled keys and ``units[i]`` its unit."""
    keys = np.concatenate(top) if top else np.array([], dtype=np.uint64)
    unit_of_row = np.repeat(units, [len(t) for t in top])
    pairs = np.unique(np.stack([keys.astype(np.uint64), unit_of_row.astype(np.uint64)], axis=1), axis=0)
    pool, first, count = np.unique(pairs[:, 0], return_index=True, return_counts=True)
    only = count == 1
    unique_keys, unique_unit = pool[only], pairs[first[only], 1].astype(np.int64)
    per_unit = np.bincount(unique_unit, minlength=int(units.max()) + 1 if len(units) else 0)
    owner = np.full(len(qrels_keys), -1, dtype=np.int64)
    if len(unique_keys):
        at = np.minimum(np.searchsorted(unique_keys, qrels_keys.astype(np.uint64)), len(unique_keys) - 1)
        hit = unique_keys[at] == qrels_keys.astype(np.uint64)
        owner[hit] = unique_unit[at[hit]]
    return owner, per_unit, len(pool)


def _subset(qrels: Qrels, keep: np.ndarray) -> Qrels:
    """The qrels with only the rows ``keep`` (stored order kept); a query left without a row is dropped."""
    from stagewise.data import Qrels

    rows = np.flatnonzero(keep)
    codes = qrels.query_codes[rows]
    present = np.bincount(codes, minlength=len(qrels.query_ids)) > 0
    recode = (np.cumsum(present) - 1).astype(np.int32)
    return Qrels(
        qrels.query_ids[present],
        recode[codes],
        qrels.docs.take(rows),
        qrels.labels[rows],
        qrels.pair_keys[rows],
        name=f"{qrels.name} (reduced)",
        source=qrels.source,
    )


def _with_labels(qrels: Qrels, run: Run, rows: np.ndarray, label: int) -> Qrels:
    """The qrels plus the run's ``rows`` (unjudged, on judged queries: no pair twice) judged at ``label``."""
    from stagewise.data import Qrels
    from stagewise.data.strings import StringSources

    if len(rows) == 0:
        return qrels
    code = np.searchsorted(qrels.query_ids, run.query_ids[run.query_codes[rows]]).astype(qrels.query_codes.dtype)
    codes = np.concatenate([qrels.query_codes, code])
    labels = np.concatenate([qrels.labels, np.full(len(rows), label, dtype=qrels.labels.dtype)])
    order = np.lexsort((-labels.astype(np.int64), codes))  # the stored order: query, then label descending
    docs = StringSources([qrels.docs, run.docs.take(rows)]).take(order)
    keys = np.concatenate([qrels.pair_keys, run.pair_keys[rows]])[order]
    name = f"{qrels.name} (+{len(rows)} at {label})"
    return Qrels(qrels.query_ids, codes[order], docs, labels[order], keys, name=name, source=qrels.source)


def _member(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Whether each of ``keys`` is in ``sorted_keys`` (a binary search: faster than ``np.isin`` here)."""
    if len(sorted_keys) == 0:
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys


# -- scoring --------------------------------------------------------------------------------------------------


def _scores(qrels: Qrels, runs: Sequence[Run], metric: str, conventions: Conventions) -> dict[str, float]:
    from stagewise.engines import evaluate

    result = evaluate(qrels, list(runs), [metric], conventions=conventions)
    return {r.name: float(r.means[metric]) for r in result.runs}


def _rank(value: float, others: Sequence[float], sign: float) -> int:
    """1 + how many of ``others`` are strictly better than ``value`` (``sign`` -1 when lower is better)."""
    return 1 + sum(1 for o in others if sign * o > sign * value)


def _reduced_scores(
    qrels: Qrels, removed: np.ndarray, members: list[Run], full: dict[str, float], metric: str, conv: Conventions
) -> dict[str, float]:
    """The members' scores on the qrels without the ``removed`` rows: their full scores when nothing is removed,
    ``nan`` when nothing is left (every judgement was theirs alone)."""
    if not removed.any():
        return {r.name: full[r.name] for r in members}
    if removed.all():
        return {r.name: float("nan") for r in members}
    return _scores(_subset(qrels, ~removed), members, metric, conv)


def _leave_out(
    qrels: Qrels,
    runs: Sequence[Run],
    groups: list[str],
    full: dict[str, float],
    opts: TrustOptions,
    conventions: Conventions,
    sign: float,
) -> tuple[list[LeftOut], int, int]:
    names = list(dict.fromkeys(groups))
    units = np.array([names.index(g) for g in groups], dtype=np.int64)
    top = [_top_keys(r, opts.depth, conventions) for r in runs]
    owner, per_unit, pool_size = _owners(top, units, qrels.pair_keys)
    pooled = _member(np.sort(np.concatenate(top)), qrels.pair_keys)
    relevant = qrels.labels >= conventions.relevance_level
    rows: list[LeftOut] = []
    for u, group in enumerate(names):
        members = [r for r, g in zip(runs, groups, strict=True) if g == group]
        removed = owner == u
        reduced = _reduced_scores(qrels, removed, members, full, opts.metric, conventions)
        mixed = {**full, **reduced}
        for r in members:
            others = [v for name, v in mixed.items() if name != r.name]
            full_others = [v for name, v in full.items() if name != r.name]
            rows.append(
                LeftOut(
                    run=r.name,
                    group=group,
                    unique_pairs=int(per_unit[u]) if u < len(per_unit) else 0,
                    judged_removed=int(removed.sum()),
                    relevant_removed=int((removed & relevant).sum()),
                    score=full[r.name],
                    reduced_score=reduced[r.name],
                    rank=(rank := _rank(full[r.name], full_others, sign)),
                    reduced_rank=rank if math.isnan(reduced[r.name]) else _rank(reduced[r.name], others, sign),
                )
            )
    order = {r.name: i for i, r in enumerate(runs)}
    return sorted(rows, key=lambda x: order[x.run]), pool_size, int(pooled.sum())


def _bounds(
    qrels: Qrels, judged_keys: np.ndarray, run: Run, score: float, opts: TrustOptions, conventions: Conventions
) -> ScoreBounds:
    from stagewise.metrics.context import _ranks

    depth = opts.bounds_at
    top = _ranks(run, conventions, np.arange(len(run), dtype=np.int64)) <= depth
    judged_query = np.isin(run.query_ids, qrels.query_ids)[run.query_codes]
    candidate = np.flatnonzero(top & judged_query)
    unjudged = candidate[~_member(judged_keys, run.pair_keys[candidate])]
    low = _scores(_with_labels(qrels, run, unjudged, 0), [run], opts.metric, conventions)[run.name]
    high = _scores(_with_labels(qrels, run, unjudged, opts.bound_label), [run], opts.metric, conventions)[run.name]
    return ScoreBounds(
        run=run.name,
        score=score,
        unjudged=len(unjudged),
        retrieved=len(candidate),
        if_nonrelevant=low,
        if_relevant=high,
        depth=depth,
        label=opts.bound_label,
    )


def _agreement(first: str, second: str, a: Mapping[str, float], b: Mapping[str, float], p: float) -> RankingAgreement:
    from stagewise.assess.correlation import kendall_tau, rbo, spearman_rho, tau_ap

    def tied(scores: Mapping[str, float]) -> bool:
        return len(set(scores.values())) != len(scores)

    if any(math.isnan(v) for v in (*a.values(), *b.values())):
        nan = float("nan")  # a run scored on no judgement at all: no ranking to compare
        return RankingAgreement(first, second, len(a), nan, nan, nan, None)
    untied = not tied(a) and not tied(b)
    return RankingAgreement(
        first=first,
        second=second,
        systems=len(a),
        kendall_tau=kendall_tau(dict(a), dict(b)),
        tau_ap=tau_ap(dict(a), dict(b)) if untied else float("nan"),
        spearman=spearman_rho(dict(a), dict(b)),
        rbo=rbo(dict(a), dict(b), p=p) if untied else None,
    )


# -- the front door -------------------------------------------------------------------------------------------


def split_options(
    options: TrustOptions | None, conventions: Any, overrides: dict[str, Any]
) -> tuple[TrustOptions, Conventions]:
    """``overrides`` split between :class:`TrustOptions` and the conventions' fields, applied over both; an
    unknown keyword is a :class:`ConventionError` naming the fields there are."""
    from stagewise.metrics.context import CONVENTION_FIELDS, conventions_from, split_conventions

    convention_keys, rest = split_conventions(dict(overrides))
    unknown = sorted(set(rest) - set(OPTION_FIELDS))
    if unknown:
        raise ConventionError(
            f"trust() got unknown keyword(s) {', '.join(map(repr, unknown))}; the options are "
            f"{', '.join(OPTION_FIELDS)}; the conventions are {', '.join(CONVENTION_FIELDS)}"
        )
    base = TrustOptions() if options is None else options
    if not isinstance(base, TrustOptions):
        raise ConventionError(f"options must be a TrustOptions value, not {type(base).__name__}")
    return (replace(base, **rest) if rest else base), conventions_from(conventions, **convention_keys)


def trust(
    qrels: Any,
    runs: Any,
    options: TrustOptions | None = None,
    *,
    conventions: Conventions | None = None,
    other_qrels: Any = None,
    **overrides: Any,
) -> TrustReport:
    """How far ``qrels`` can be trusted to score a system that was not pooled: leave-one-run-out (or
    group-out) scores and ranks, score bounds over the unjudged documents, ranking agreement.

    Parameters
    ----------
    qrels : Qrels or anything :func:`stagewise.read_qrels` takes, or a function that returns one
        A function is called once the options are checked (the command line reads the file this way).
    runs : runs as :func:`stagewise.read_runs` takes them (at least two)
    options : TrustOptions, optional
        The metric, pool depth, grouping and bounds (see :class:`TrustOptions`); keyword ``overrides`` replace
        its fields (``metric="ndcg@10"``, ``depth=50``) or the conventions' (``relevance_level=2``).
    conventions : Conventions, optional
        How every score is computed (see :func:`stagewise.evaluate`).
    other_qrels : Qrels or path, optional
        A second qrels: the runs are also scored on it and the two rankings compared.

    Returns
    -------
    TrustReport
        ``left_out`` (one :class:`LeftOut` per run), ``bounds`` (one :class:`ScoreBounds` per run),
        ``agreements`` (full vs left-out ranking; full vs ``other_qrels``), ``rank_changes``, ``largest_change``.

    References
    ----------
    J. Zobel, "How reliable are the results of large-scale information retrieval experiments?", SIGIR 1998.
    C. Buckley and E. M. Voorhees, "Retrieval evaluation with incomplete information", SIGIR 2004.
    """
    from stagewise.data.readers import read_qrels, read_runs
    from stagewise.metrics.measures import Measure

    opts, conv = split_options(options, conventions, overrides)
    measure = Measure.parse(opts.metric)  # a misspelt metric fails before any file is read
    sign = -1.0 if measure.better == "lower" else 1.0
    judged = read_qrels(qrels() if callable(qrels) else qrels)
    loaded = read_runs(runs)
    groups = run_groups(loaded, opts.group_by)
    if len(loaded) < 2 or len(set(groups)) < 2:
        raise InputError(
            "runs", f"form {len(set(groups))} unit(s) to leave out", expected="at least two runs or groups"
        )
    full = _scores(judged, loaded, opts.metric, conv)
    left_out, pool_pairs, pool_judged = _leave_out(judged, loaded, groups, full, opts, conv, sign)
    judged_keys = np.sort(judged.pair_keys)
    bounds = tuple(_bounds(judged, judged_keys, r, full[r.name], opts, conv) for r in loaded)
    reduced = {r.run: r.reduced_score for r in left_out}
    unit = "left-out" if opts.unit == "run" else "group left out"
    agreements = [_agreement(f"{judged.name} (full)", f"{judged.name} ({unit})", full, reduced, opts.rbo_p)]
    other = None
    if other_qrels is not None:
        second = read_qrels(other_qrels)
        other = _scores(second, loaded, opts.metric, conv)
        agreements.append(_agreement(judged.name, second.name, full, other, opts.rbo_p))
    return TrustReport(
        options=opts,
        conventions=conv,
        qrels_name=judged.name,
        judgements=len(judged),
        pool_pairs=pool_pairs,
        pool_judged=pool_judged,
        scores=full,
        left_out=tuple(left_out),
        bounds=bounds,
        agreements=tuple(agreements),
        other_scores=other,
    )
