"""How to fuse, as one value: :class:`FusionOptions`, which :func:`~stagewise.fusion.fuse`,
:func:`~stagewise.fusion.optimize`, :func:`~stagewise.fusion.fuse_to` and ``stagewise fuse`` all take.

A front door takes ``options=`` plus keyword overrides; the overrides are checked, then applied with
:func:`dataclasses.replace`, so a value is built once (by the CLI, a pipeline, a notebook) and passed down,
never re-listed keyword by keyword.

>>> options = FusionOptions("rrf", depth=100)
>>> options.replace(rrf_k=20).fusion_method
FusionMethod(name='rrf', params=(('rrf_k', 20.0), ('weights', None)))
>>> options.replace(depht=10)
Traceback (most recent call last):
...
stagewise.errors.ConventionError: unknown fusion option 'depht'; the options are method, norm, depth, queries, \
missing, weights, params, ties, and the parameters of rrf: rrf_k, weights
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stagewise.errors import ConventionError

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.fusion.methods import FusionMethod, MethodInfo
    from stagewise.fusion.normalize import Normalization

# The vocabularies of the options, here (no numpy) so that the command line offers them at start-up.
QUERY_POLICIES: dict[str, str] = {
    "union": "a query is fused when at least one run has it; runs without it contribute nothing",
    "intersection": "only queries that every run has are fused",
    "error": "every run must have the same queries (an error names the differences)",
}
MISSING_DOCUMENT_POLICIES: dict[str, str] = {
    "zero": "a run that did not return the document contributes 0",
    "min": "a run that did not return the document contributes its smallest contribution for the query",
    "ignore": "a run that did not return the document is left out of its reduction",
    "native": "a run that did not return the document contributes the value the method or normalisation defines",
}
#: How :func:`~stagewise.fusion.optimize` searches weights: every point of the grid, coordinate ascent, or the
#: grid up to GRID_LIMIT points and coordinate ascent beyond.
SEARCHES = ("auto", "grid", "coordinate")
#: How equal scores order a run's list, and so the ranks fusion reads (the evaluation's tie conventions,
#: :data:`stagewise.metrics.defaults.TIE_POLICIES`): what each one says in a fused run's statement.
FUSION_TIES: dict[str, str] = {
    "docid": "score descending compared in single precision (C float, as trec_eval 9 and pytrec_eval hold "
    "scores), then doc id descending (trec_eval)",
    "docid-double": "score descending compared in double precision (as ranx and trec_eval 10), then doc id descending",
    "input": "score descending (double precision), then the order of the run's input",
    "rank": "the run's own rank column (ascending), then the order of the run's input",
}


@dataclass(frozen=True, eq=False)
class FusionOptions:
    """How runs are fused: the method and every policy, checked when the value is made.

    Parameters
    ----------
    method : str or FusionMethod, default="rrf"
        A name from :data:`stagewise.fusion.METHODS`, optionally with parameters: ``rrf``, ``rrf(rrf_k=20)``,
        ``wsum(weights=(0.7,0.3))``.
    norm : str or Normalization, optional
        Score normalisation per run and query (:data:`stagewise.fusion.NORMALIZATIONS`). Default: minmax for
        methods that use scores, none for rank-based methods.
    depth : int, optional
        Each run contributes its first ``depth`` results per query (default: all of them).
    queries : {"union", "intersection", "error"}, default="union"
        Queries only some runs have (:data:`stagewise.fusion.QUERY_POLICIES`).
    missing : {"zero", "min", "ignore", "native"}, optional
        What a run contributes for a document it did not return
        (:data:`stagewise.fusion.MISSING_DOCUMENT_POLICIES`); default: the method's own.
    weights : sequence of float, optional
        One weight per run, in run order, for the weighted methods; default all equal.
    params : mapping, optional
        The method's hyperparameters (``rrf_k``, ``gamma``, ``phi``...) and trained parameters (``probs``,
        ``map_scores``, ``log_odds``).
    ties : {"docid", "docid-double", "input", "rank"}, default="docid"
        How equal scores order each input run's list, so which rank (and which depth cut) a document gets
        (:data:`FUSION_TIES`): ``docid`` compares scores in single precision as trec_eval 9 reads a run;
        ``docid-double`` compares doubles, as ranx does (scores that collide only in single precision then keep
        their order). The fused run itself is always stored in trec_eval's order.

    Examples
    --------
    >>> FusionOptions("wsum", weights=[0.7, 0.3]).fusion_method.params
    (('weights', (0.7, 0.3)),)
    >>> FusionOptions(queries="some")
    Traceback (most recent call last):
    ...
    stagewise.errors.ConventionError: unknown query policy 'some'; choose one of union, intersection, error
    """

    method: str | FusionMethod = "rrf"
    norm: str | Normalization | None = None
    depth: int | None = None
    queries: str = "union"
    missing: str | None = None
    weights: Any = None
    params: Mapping[str, Any] = field(default_factory=dict)
    ties: str = "docid"
    _method: FusionMethod = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from stagewise.fusion.methods import FusionMethod
        from stagewise.fusion.normalize import Normalization

        if not isinstance(self.method, str | FusionMethod):
            raise ConventionError(
                f"method must be a name such as 'rrf' or a FusionMethod, not {type(self.method).__name__}"
            )
        base = FusionMethod.parse(self.method)
        params = dict(self.params)
        hyper = {k: v for k, v in params.items() if k not in base.info.trained}
        object.__setattr__(self, "params", params)
        if self.weights is not None:
            hyper["weights"] = self.weights  # the field wins over a weights given among the parameters
        object.__setattr__(self, "_method", FusionMethod.parse(base, **hyper))
        if self.norm is not None:
            object.__setattr__(self, "norm", Normalization.parse(self.norm))
        depth = self.depth
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
            raise ConventionError(
                f"The 'depth' parameter of fuse must be an int >= 1 or None. Got {self.depth!r} instead."
            )
        queries = str(self.queries)
        if queries not in QUERY_POLICIES:
            raise ConventionError(f"unknown query policy {queries!r}; choose one of {', '.join(QUERY_POLICIES)}")
        object.__setattr__(self, "queries", queries)
        if self.missing is not None:
            missing = str(self.missing)
            if missing not in MISSING_DOCUMENT_POLICIES:
                choices = ", ".join(MISSING_DOCUMENT_POLICIES)
                raise ConventionError(f"unknown missing-document policy {missing!r}; choose one of {choices}")
            object.__setattr__(self, "missing", missing)
        if str(self.ties) not in FUSION_TIES:
            raise ConventionError(f"unknown tie convention {self.ties!r}; choose one of {', '.join(FUSION_TIES)}")
        object.__setattr__(self, "ties", str(self.ties))

    @classmethod
    def parse(cls, text: str | FusionOptions) -> FusionOptions:
        """Read the options written as one call of the spec grammar: the method's name, its parameters and the
        options that are not their defaults (``norm``, ``depth``, ``queries``, ``missing``, ``ties``), as :func:`str`
        writes them.

        >>> options = FusionOptions.parse("wsum(weights=(0.3,0.7),norm=zscore,depth=100)")
        >>> options.norm.name, options.depth, str(options) == "wsum(weights=(0.3,0.7),norm=zscore,depth=100)"
        ('zscore', 100, True)
        """
        if isinstance(text, FusionOptions):
            return text
        from stagewise.spec import parse_call

        call = parse_call(str(text), "fusion", _EXAMPLES)
        if call.at is not None:
            raise ConventionError(f"fusion {call.text!r} takes no @ part; expected a form like {_EXAMPLES}")
        given = {k: call.params.pop(k) for k in _SHOWN if k in call.params}
        return cls(call.name, params=call.params, **given)

    def __str__(self) -> str:
        """The method with its parameters, then each option that is not its default, in the spec grammar
        (trained parameters are data, not spelling: they are left out); :meth:`parse` reads it back."""
        from stagewise.spec import canonical

        method = self._method
        shown = {k: getattr(self, k) for k in _SHOWN}
        shown["queries"] = None if self.queries == "union" else self.queries
        shown["ties"] = None if self.ties == "docid" else self.ties
        shown["norm"] = None if self.norm is None else str(self.norm)
        return canonical(method.name, None, (*method.params, *shown.items()))

    def __eq__(self, other: object) -> bool:
        """Options are equal when they fuse the same way: the same canonical spelling (``RRF`` is ``rrf(rrf_k=60)``)
        and the same trained parameters."""
        if not isinstance(other, FusionOptions):
            return NotImplemented
        return str(self) == str(other) and _plain(self.trained) == _plain(other.trained)

    def __hash__(self) -> int:
        return hash(str(self))

    @property
    def fusion_method(self) -> FusionMethod:
        """The method with its hyperparameters and weights folded in (its trained parameters are in
        :attr:`trained`)."""
        return self._method

    @property
    def info(self) -> MethodInfo:
        """The method's registry entry."""
        return self._method.info

    @property
    def trained(self) -> dict[str, Any]:
        """The trained parameters given (``probs``, ``map_scores``, ``log_odds``), those set to None left out."""
        return {k: v for k, v in self.params.items() if k in self.info.trained and v is not None}

    @classmethod
    def fields(cls) -> list[str]:
        """The names of the options, in order."""
        return [f.name for f in dataclasses.fields(cls) if f.init]

    def replace(self, **overrides: Any) -> FusionOptions:
        """A copy with ``overrides`` applied (:func:`dataclasses.replace`): a field by its name, a parameter of the
        method (``rrf_k=20``, ``probs=...``) into :attr:`params`. Any other key is an error that lists the
        fields and the method's parameters."""
        if not overrides:
            return self
        names = self.fields()
        given = {k: v for k, v in overrides.items() if k in names}
        extra = {k: v for k, v in overrides.items() if k not in names}
        if extra:
            from stagewise.fusion.methods import FusionMethod, not_k

            info = FusionMethod.parse(given.get("method", self.method)).info
            known = [*info.params, *info.trained]
            unknown = [k for k in extra if k not in known]
            if unknown:
                not_k(info, unknown)
                raise ConventionError(
                    f"unknown fusion option {unknown[0]!r}; the options are {', '.join(names)}, and the parameters "
                    f"of {info.name}: {', '.join(known) or 'none'}"
                )
            given["params"] = {**given.get("params", self.params), **extra}
        return dataclasses.replace(self, **given)


_SHOWN = ("norm", "depth", "queries", "missing", "ties")  # the options a canonical spelling shows beside the method's
_EXAMPLES = "rrf, rrf(rrf_k=20), wsum(weights=(0.7,0.3),norm=zscore) or combmnz(depth=100)"


def _plain(trained: dict[str, Any]) -> dict[str, Any]:
    """Trained parameters as nested lists, to compare (arrays compare element-wise)."""
    if not trained:
        return trained
    from stagewise.fusion.train import describe_trained

    return describe_trained(trained)


def resolve_options(
    options: FusionOptions | None, method: Any = None, default_method: str = "rrf", **overrides: Any
) -> FusionOptions:
    """The options a front door works with: ``options`` (else the defaults, with ``default_method``), the
    ``method`` given positionally and the keyword ``overrides`` applied."""
    if options is not None and not isinstance(options, FusionOptions):
        raise ConventionError(f"options must be a FusionOptions, not {type(options).__name__}")
    if method is not None:
        overrides["method"] = method
    if options is None:
        options = FusionOptions(overrides.pop("method", default_method))
    return options.replace(**overrides)
