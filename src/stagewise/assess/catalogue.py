"""The assess stage's named choices, light (no numpy): pooling strategies, the rankings a pool reads a run in,
and merge policies. The command line reads these registries for its choices and help at start-up; the work is
in :mod:`stagewise.assess.pool` and :mod:`stagewise.assess.merge`, imported when a pool or a merge is made.

Every name is read by the one grammar (:mod:`stagewise.spec`): ``depth(k=100)``, ``depth@100``,
``take(n=50,order=rrf)``, ``mtf(n=20)``, ``adjudicator(name=boss)``, ``mean(threshold=1.5)``. The issue's
spellings ``depth:K``, ``take:N(rrf)`` and ``mtf:N`` read as the same values.

>>> str(parse_strategy("depth:10")), str(parse_strategy("take:50(rbp)")), str(parse_strategy("mtf"))
('depth(k=10)', 'take(n=50,order=rbp)', 'mtf(n=100)')
>>> str(parse_policy("adjudicator(name=boss)")), str(parse_policy("mean(threshold=1.5)"))
('adjudicator(name=boss)', 'mean(threshold=1.5)')
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stagewise.errors import ConventionError
from stagewise.spec import Param, Registry, canonical, parse_call

__all__ = [
    "MERGE_POLICIES",
    "POOL_RANKINGS",
    "STRATEGIES",
    "MergePolicyEntry",
    "Policy",
    "PoolRanking",
    "PoolStrategy",
    "Strategy",
    "merge",
    "parse_policy",
    "parse_strategy",
]


@dataclass(frozen=True)
class PoolStrategy:
    """A pooling strategy: its name, a line of help, its parameters (``spec.Param``) and the parameter that
    ``name@V`` and ``name:V`` set (``at``)."""

    name: str
    help: str
    params: Mapping[str, Param] = field(default_factory=dict)
    at: str | None = None
    aliases: tuple[str, ...] = ()


def _positive(what: str) -> Param:
    return Param(int, 100, what, "an int >= 1", lambda v: v >= 1)


#: Fused priorities a ``take`` pool may order documents by.
TAKE_ORDERS = ("rrf", "rbp", "combsum")

#: The pooling strategies by name: what ``stagewise pool --strategy`` and ``make_pool(strategy=...)`` take.
STRATEGIES: Registry[PoolStrategy] = Registry(
    "pool strategy",
    PoolStrategy(
        "depth",
        "the union of every run's first k documents per query (TREC's depth-k pool; trectools' topX)",
        {"k": _positive("documents taken from each run per query")},
        at="k",
        aliases=("topx",),
    ),
    PoolStrategy(
        "take",
        "the n documents per query of highest fused priority: rrf (sum of 1/(rrf_k + rank)), rbp (sum, or max, "
        "of (1 - p) p^(rank - 1)) or combsum (sum of min-max normalised scores); trectools' rrf and rbp pools",
        {
            "n": _positive("documents pooled per query"),
            "order": Param(str, "rrf", "the fused priority", choices=TAKE_ORDERS),
            "rrf_k": Param(float, 60.0, "RRF's constant", "a number >= 0", lambda v: v >= 0),
            "p": Param(float, 0.8, "RBP's persistence", "a number in (0, 1)", lambda v: 0 < v < 1),
            "rbp": Param(str, "sum", "how RBP weights of one document combine", choices=("sum", "max")),
        },
        at="n",
    ),
    PoolStrategy(
        "mtf",
        "move-to-front (Cormack et al., SIGIR 1998): take the next document of the run in front; a relevant "
        "one (by the qrels given) keeps the run in front, any other sends it to the back; n documents per query",
        {"n": _positive("documents pooled per query")},
        at="n",
        aliases=("move_to_front",),
    ),
)


@dataclass(frozen=True)
class PoolRanking:
    """How a pool reads a run's order: a name and the rule."""

    name: str
    help: str
    aliases: tuple[str, ...] = ()


#: The orders a pool may read a run in (the rank that depth, rrf and rbp use).
POOL_RANKINGS: Registry[PoolRanking] = Registry(
    "pool ranking",
    PoolRanking("trec_eval", "score descending in single precision, ties by doc id descending (trec_eval's order)"),
    PoolRanking("trectools", "score descending as doubles, ties by doc id ascending (trectools' TrecRun order)"),
    PoolRanking("rank", "the rank column as written (trectools' rrf and rbp pools read it: a rank of 0 counts as 0)"),
)


@dataclass(frozen=True)
class Strategy:
    """A strategy with its parameters; ``str()`` is its canonical spelling, which parses back."""

    name: str
    params: tuple[tuple[str, Any], ...]

    def __str__(self) -> str:
        return canonical(self.name, None, self.shown())

    def shown(self) -> list[tuple[str, Any]]:
        """The parameters a reader needs: the size, then each other one not at its default."""
        entry = STRATEGIES[self.name]
        first = next(iter(entry.params))
        values = dict(self.params)
        if self.name == "take":  # the order is what a take pool is; RBP's or RRF's knobs only with their order
            keep = {"n", "order", *(("rrf_k",) if values["order"] == "rrf" else ()),
                    *(("p", "rbp") if values["order"] == "rbp" else ())}  # fmt: skip
            return [
                (k, v) for k, v in self.params if k in ("n", "order") or (k in keep and v != entry.params[k].default)
            ]
        return [(k, v) for k, v in self.params if k == first or v != entry.params[k].default]

    def get(self, key: str) -> Any:
        return dict(self.params)[key]


_COLON = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*:\s*([+-]?[\w.]+)\s*(?:\(\s*([A-Za-z_]\w*)\s*\))?\s*$")
_EXAMPLES = "depth(k=100), depth:100, take(n=50,order=rrf), take:50(rbp), mtf(n=20)"


def parse_strategy(text: str | Strategy) -> Strategy:
    """A pooling strategy from its spelling (the spec grammar, or the issue's ``depth:K`` and ``take:N(order)``).

    >>> str(parse_strategy("take(n=20,order=rbp,p=0.9)"))
    'take(n=20,order=rbp,p=0.9)'
    """
    if isinstance(text, Strategy):
        return text
    colon = _COLON.match(str(text))
    if colon:
        name, size, order = colon.groups()
        entry = STRATEGIES.lookup(name)
        given: dict[str, Any] = {entry.at or "n": size}
        if order is not None:
            given["order"] = order
    else:
        call = parse_call(str(text), "pool strategy", _EXAMPLES)
        entry = STRATEGIES.lookup(call.name)
        given = dict(call.params)
        if call.at is not None:
            if entry.at is None or entry.at in given:
                raise ConventionError(f"pool strategy {call.text!r}: give the size once")
            given[entry.at] = call.at
    values = STRATEGIES.check_params(entry.name, entry.params, given)
    return Strategy(entry.name, tuple(values.items()))


@dataclass(frozen=True)
class MergePolicyEntry:
    """A merge policy: its name, a line of help, its parameters and the library function (``module:function``,
    imported on use) that merges ``{assessor: qrels}`` with them."""

    name: str
    help: str
    function: str
    params: Mapping[str, Param] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()


_TIES = Param(str, "max", "which of the tied most-voted labels wins", choices=("max", "min"))

#: The merge policies by name: what ``stagewise merge --policy`` takes.
MERGE_POLICIES: Registry[MergePolicyEntry] = Registry(
    "merge policy",
    MergePolicyEntry(
        "majority",
        "the label most assessors gave (a tie: the highest, or ties=min the lowest)",
        "stagewise.assess.merge:merge_majority",
        {"ties": _TIES},
    ),
    MergePolicyEntry("max", "the highest label any assessor gave", "stagewise.assess.merge:merge_max"),
    MergePolicyEntry(
        "adjudicator",
        "the named assessor's label where they judged, else the majority of the others",
        "stagewise.assess.merge:merge_adjudicator",
        {"name": Param(str, None, "the adjudicator: one of the inputs' names"), "ties": _TIES},
    ),
    MergePolicyEntry(
        "mean",
        "relevant (1) when the mean label is >= threshold, else 0",
        "stagewise.assess.merge:merge_mean",
        {"threshold": Param(float, None, "the least mean label that is relevant", "a finite number")},
    ),
)


@dataclass(frozen=True)
class Policy:
    """A merge policy with its parameters as given; ``str()`` prints it in the spec grammar."""

    name: str
    params: tuple[tuple[str, Any], ...]

    def __str__(self) -> str:
        entry = MERGE_POLICIES[self.name]
        return canonical(
            self.name, None, [(k, v) for k, v in self.params if v != entry.params[k].default or k == "name"]
        )


def parse_policy(text: str) -> Policy:
    """A merge policy from its spelling: ``majority``, ``max``, ``adjudicator(name=B)``,
    ``mean(threshold=1.5)``; a policy's required parameter missing is an error naming it."""
    call = parse_call(str(text), "merge policy", "majority, max, adjudicator(name=B), mean(threshold=1.5)")
    entry = MERGE_POLICIES.lookup(call.name)
    values = MERGE_POLICIES.check_params(entry.name, entry.params, call.params)
    for key, param in entry.params.items():
        if param.default is None and values[key] is None:
            raise ConventionError(f"merge policy {entry.name!r} needs {key}=..., as in {entry.name}({key}=...)")
    return Policy(entry.name, tuple(values.items()))


def merge(labels: Mapping[str, Any], policy: str | Policy) -> Any:
    """``{assessor: qrels}`` merged by ``policy`` (a name of :data:`MERGE_POLICIES` in the spec grammar), as a
    :class:`~stagewise.assess.merge.Merged` whose ``policy`` states how.

    >>> m = merge({"a": {"q": {"d": 1}}, "b": {"q": {"d": 2}}, "c": {"q": {"d": 2}}}, "majority")
    >>> m.qrels.to_dict(), str(m.policy)
    ({'q': {'d': 2}}, 'majority(ties=max)')
    """
    import importlib

    chosen = parse_policy(policy) if not isinstance(policy, Policy) else policy
    module, _, function = MERGE_POLICIES[chosen.name].function.partition(":")
    values = dict(chosen.params)
    if chosen.name == "adjudicator":
        return getattr(importlib.import_module(module), function)(labels, values.pop("name"), **values)
    return getattr(importlib.import_module(module), function)(labels, **values)
