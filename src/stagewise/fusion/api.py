"""``fuse(runs, method, options=...)``: the library's front door for rank fusion."""

from __future__ import annotations

from typing import Any

import numpy as np

from stagewise.data.qrels import Qrels
from stagewise.data.readers import read_qrels
from stagewise.data.run import Run
from stagewise.errors import ConventionError, StagewiseError
from stagewise.fusion.methods import MISSING_DOCUMENT_POLICIES, FusionMethod, MethodInfo
from stagewise.fusion.normalize import Normalization
from stagewise.fusion.options import FUSION_TIES, FusionOptions, resolve_options
from stagewise.fusion.table import QUERY_POLICIES, FusionTable, build_table, load_runs

TIES = (
    "fused score descending compared in single precision (C float, as trec_eval 9 and pytrec_eval hold scores), "
    "then doc id descending (byte order): the order trec_eval reads a run in"
)
INPUT_RANKS = (
    "a document's rank in a run is its position in the run's order, score descending (single precision) then "
    "doc id descending (trec_eval), after the depth cut; a normalisation that reverses the order "
    "(minmax_inverted) re-ranks"
)


class FusedRun(Run):
    """A :class:`~stagewise.data.run.Run` made by fusion. ``fusion`` states how: method and parameters,
    normalisation, depth, query and missing-document policies, tie order, inputs, training."""

    __slots__ = ("fusion",)


def resolve_norm(info: MethodInfo, norm: Any) -> Normalization:
    """The normalisation to apply: the one given, else min-max for methods that use scores, none otherwise."""
    if norm is None:
        return Normalization("minmax" if info.uses_scores else "none")
    return Normalization.parse(norm)


def resolve_missing(info: MethodInfo, normalization: Normalization, missing: str | None) -> str:
    """The missing-document policy: the one given, else the normalisation's own value for an unranked
    document (Borda) for methods that use scores, else the method's default. A method with its own rule
    (:attr:`MethodInfo.missing_rule`, Condorcet's) takes none."""
    if info.missing_rule is not None:
        if missing not in (None, "native"):
            raise ConventionError(
                f"{info.name} has its own rule for unranked documents ({info.missing_rule}); leave missing unset"
            )
        return "native"
    if missing is None:
        if info.uses_scores and normalization.info.unranked is not None:
            return "native"
        return info.missing
    return missing


def apply(method: FusionMethod, table: FusionTable, missing: str, trained: dict[str, Any] | None = None) -> np.ndarray:
    """The fused score of every candidate of ``table``."""
    info = method.info
    kwargs = dict(method.params)
    if info.supervised:
        given = trained or {}
        for key in info.trained:
            kwargs[key] = given.get(key)
    # overflow (weights near the float limit) gives inf, which the run's writer refuses by name: no warning first
    with np.errstate(over="ignore", invalid="ignore"):
        return info.function(table, missing=missing, **kwargs)


def describe(
    method: FusionMethod,
    normalization: Normalization,
    *,
    depth: int | None,
    queries: str,
    missing: str,
    table: FusionTable,
    trained: dict[str, Any] | None = None,
    training: dict[str, Any] | None = None,
    ties: str = "docid",
) -> dict[str, Any]:
    """A JSON-ready statement of how a fused run was made (``ties``: how equal scores ordered the inputs; a
    statement says it only when it is not the default, ``docid``)."""
    from stagewise._version import __version__
    from stagewise.fusion.train import describe_trained

    info = method.info
    parameters = {k: (list(v) if isinstance(v, tuple) else v) for k, v in method.params}
    out: dict[str, Any] = {
        "method": str(method),
        "method_name": info.name,
        "method_formula": info.summary,
        "parameters": parameters,
        "normalization": str(normalization),
        "normalization_formula": normalization.info.summary,
        "normalization_used": info.uses_scores or normalization.info.reverses,
        "depth": depth,
        "queries": queries,
        "queries_rule": QUERY_POLICIES[queries],
        "missing": missing,
        "missing_rule": MISSING_DOCUMENT_POLICIES[missing],
        "ties": TIES,
        "input_ranks": INPUT_RANKS,
        "runs": list(table.run_names),
        "n_queries": len(table.query_ids),
        "n_results": len(table),
        "stagewise_version": __version__,
    }
    if ties != "docid":
        out["input_ties"] = ties
        out["input_ranks"] = (
            f"a document's rank in a run is its position in the run's order, {FUSION_TIES[ties]}, after the depth "
            "cut; a normalisation that reverses the order (minmax_inverted) re-ranks"
        )
    if info.missing_rule is not None:
        out["missing_rule"] = info.missing_rule
    if trained is not None:
        out["trained"] = {**(training or {}), "parameters": describe_trained(trained)}
    return out


def fuse(
    runs: Any,
    method: str | FusionMethod | None = None,
    *,
    options: FusionOptions | None = None,
    qrels: Any = None,
    relevance_level: int = 1,
    name: str | None = None,
    **overrides: Any,
) -> FusedRun:
    """Fuse several runs into one.

    Parameters
    ----------
    runs : list of Run, paths, DataFrames or dicts, or a ``{name: run}`` mapping
        The runs to fuse (anything :func:`stagewise.read_run` takes), in the order weights refer to.
    method : str or FusionMethod, optional
        A name from :data:`stagewise.fusion.METHODS`, optionally with parameters: ``rrf``,
        ``rrf(rrf_k=20)``, ``combmnz``, ``wsum(weights=(0.7,0.3))``, ``posfuse``... Default: ``options``'
        method, else ``rrf``.
    options : FusionOptions, optional
        How to fuse, as one value (method, normalisation, depth, query and missing-document policies, weights,
        method parameters); see :class:`~stagewise.fusion.options.FusionOptions` for each field.
    qrels : Qrels, path or dict, optional
        Training judgements for the supervised methods (posfuse, probfuse, segfuse, slidefuse, mapfuse,
        bayesfuse: those with a ``fit``). They are fitted on every judged query, so scores measured on the same
        qrels are in-sample; use :func:`stagewise.fusion.optimize` with ``folds`` for held-out numbers.
    relevance_level : int, default=1
        A label >= this counts as relevant when training.
    name : str, optional
        The fused run's name (and TREC tag); default the method's name.
    **overrides
        Fields of :class:`~stagewise.fusion.options.FusionOptions` (``norm``, ``depth``, ``queries``,
        ``missing``, ``weights``) and method parameters (``rrf_k=60``, ``gamma``, ``phi``, ``sigma``,
        ``window``, ``segments``) or trained parameters (``probs``, ``map_scores``, ``log_odds``), applied over
        ``options``.

    Returns
    -------
    FusedRun
        One row per (query, document) any run returned within ``depth``, ordered by fused score descending,
        then doc id descending. ``.fusion`` records the method, parameters, normalisation and policies.

    Examples
    --------
    The lesson's example: A is ranked 1 and 3, B is ranked 2 and 1.

    >>> fused = fuse([{"q": {"A": 3.0, "B": 2.0}}, {"q": {"B": 3.0, "C": 2.0, "A": 1.0}}], "rrf")
    >>> [(d, round(s, 7)) for d, s in zip(fused.doc_ids, fused.scores.tolist())]
    [('B', 0.0325225), ('A', 0.0322665), ('C', 0.016129)]
    >>> fused.fusion["method"], fused.fusion["missing"]
    ('rrf(rrf_k=60)', 'zero')

    The same options as one value, with an override:

    >>> runs = [{"q": {"A": 3.0, "B": 2.0}}, {"q": {"B": 3.0, "C": 2.0, "A": 1.0}}]
    >>> fuse(runs, options=FusionOptions("rrf", depth=2), rrf_k=0).doc_ids.to_list()
    ['B', 'A', 'C']
    """
    chosen = resolve_options(options, method, **overrides)
    loaded = load_runs(runs)
    info = chosen.info
    normalization = resolve_norm(info, chosen.norm)
    policy = resolve_missing(info, normalization, chosen.missing)
    table = build_table(loaded, norm=normalization, depth=chosen.depth, queries=chosen.queries, ties=chosen.ties)
    trained, training = train_on(chosen, table, qrels, relevance_level)
    statement = describe(
        chosen.fusion_method,
        normalization,
        depth=chosen.depth,
        queries=chosen.queries,
        missing=policy,
        table=table,
        trained=trained if info.supervised else None,
        training=training,
        ties=chosen.ties,
    )
    scores, rows = apply(chosen.fusion_method, table, policy, trained), table.output_rows()
    del table  # its per-run columns go before the run is built: a lower peak of memory
    fused = rows.to_run(scores, name=name or info.name, cls=FusedRun, consume=True)
    fused.fusion = statement
    return fused


def train_on(
    options: FusionOptions, table: FusionTable, qrels: Any, relevance_level: int
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(trained parameters, how they were trained) for a supervised method: those given in ``options``, else
    fitted on ``qrels`` (every judged query of ``table``) by the method's ``fit``; ``({}, None)`` otherwise."""
    info, trained = options.info, options.trained
    if not info.supervised or len(trained) == len(info.trained):
        return trained, None
    if qrels is None:
        raise StagewiseError(
            f"{info.name} learns from judgements: give qrels (--qrels) or its trained parameters "
            f"({', '.join(info.trained)})"
        )
    from stagewise.fusion.train import fit

    judgements: Qrels = read_qrels(qrels)
    fitted = fit(options.fusion_method, table, judgements, relevance_level=relevance_level)
    training = {
        "qrels": judgements.name,
        "relevance_level": relevance_level,
        "queries": int(np.isin(table.query_ids, judgements.query_ids).sum()),
        "in_sample": True,
    }
    return fitted, training


def keep_first(fused: FusedRun, depth: int) -> FusedRun:
    """``fused`` with only the first ``depth`` results of each query, its statement saying so (``output_depth``
    and the new ``n_results``). A fused run can be deeper than any input (each run adds documents the others did
    not return); this is the cut ``stagewise fuse --output-depth`` makes.

    >>> fused = fuse([{"q": {"A": 3.0, "B": 2.0}}, {"q": {"B": 3.0, "C": 2.0, "A": 1.0}}], "rrf")
    >>> cut = keep_first(fused, 2)
    >>> cut.doc_ids.to_list(), cut.fusion["n_results"], cut.fusion["output_depth"]
    (['B', 'A'], 2, 2)
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ConventionError(f"The 'depth' parameter of keep_first must be an int >= 1. Got {depth!r} instead.")
    keep = np.flatnonzero(fused.within_query_rank() <= depth)
    cut = type(fused)(
        fused.query_ids,
        fused.query_codes[keep],
        fused.docs.take(keep),
        fused.scores[keep],
        None if fused.ranks is None else fused.ranks[keep],
        None,
        fused.pair_keys[keep],
        name=fused.name,
        source=fused.source,
        tag=fused.tag,
    )
    cut.fusion = {**fused.fusion, "n_results": len(keep), "output_depth": depth}
    return cut
