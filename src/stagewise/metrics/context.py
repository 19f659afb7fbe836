"""The evaluation context: a run joined to its qrels, reduced to the rows that measures need.

Every measure of trec_eval is a function of, per query, the number of documents retrieved and the
*judged* documents among them (their ranks and labels), plus the query's judgements. Unjudged documents
only matter through counts, which follow by subtraction. So the context keeps just the judged ranked rows,
a few thousand where the run has millions, and every kernel works on those.

Conventions applied here: the tie order of the run, the relevance level, the ``max_ret`` depth (trec_eval
``-M``), ``judged_only`` (trec_eval ``-J``) and the policy for judged queries absent from the run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from stagewise._lazy import LazyModule
from stagewise._native import rowops
from stagewise.data.columns import position_in_segment
from stagewise.data.order import evaluation_order
from stagewise.data.qrels import Qrels
from stagewise.data.run import Run
from stagewise.errors import ConventionError, StagewiseError
from stagewise.metrics.defaults import MISSING_QUERY_POLICIES, TIE_POLICIES  # light there, for the CLI's choices

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

MissingPolicy = Literal["zero", "skip", "error"]
TiePolicy = Literal["docid", "docid-double", "input", "rank"]


@dataclass(frozen=True)
class Conventions:
    """The choices that change a metric's value, stated with every result.

    Parameters
    ----------
    relevance_level : int, default=1
        A label >= this counts as relevant for binary measures (trec_eval ``-l``). Labels below 0 never do.
    ties : {"docid", "docid-double", "input", "rank"}, default="docid"
        Order of results: score descending compared in single precision, then doc id descending (trec_eval 9,
        pytrec_eval and ir_measures, which keep scores as C floats, so scores equal as floats tie); the same
        with scores compared as doubles (trec_eval 10.0); score descending (doubles), then input order; or
        by the run's rank column (scores ignored).
    missing : {"zero", "skip", "error"}, default="zero"
        A query that is judged but absent from the run scores 0 (trec_eval ``-c``), is left out of the
        means (trec_eval's default), or is an error.
    max_ret : int or None, default=None
        Only the first ``max_ret`` results of each query count (trec_eval ``-M``).
    judged_only : bool, default=False
        Drop unjudged results before measuring, closing the gaps (trec_eval ``-J``).
    ignore_self : bool, default=False
        Drop every result whose document id is its query's id before measuring, closing the gaps (BEIR's
        ``ignore_identical_ids``: in ArguAna or Quora a query is itself a document of the corpus). The qrels
        are left as they are.
    """

    relevance_level: int = 1
    ties: TiePolicy = "docid"
    missing: MissingPolicy = "zero"
    max_ret: int | None = None
    judged_only: bool = False
    ignore_self: bool = False

    def __post_init__(self) -> None:
        if self.ties not in TIE_POLICIES:
            raise ConventionError(f"unknown ties policy {self.ties!r}; choose one of {TIE_POLICIES}")
        if self.missing not in MISSING_QUERY_POLICIES:
            raise ConventionError(
                f"unknown missing-query policy {self.missing!r}; choose one of {MISSING_QUERY_POLICIES}"
            )
        if self.max_ret is not None and self.max_ret < 1:
            raise ConventionError(f"The 'max_ret' parameter must be an int >= 1 or None. Got {self.max_ret!r} instead.")

    def with_(self, **overrides: Any) -> Conventions:
        """These conventions with some fields replaced; an unknown field is a :class:`ConventionError`.

        >>> Conventions().with_(missing="skip", relevance_level=2)
        Conventions(relevance_level=2, ties='docid', missing='skip', max_ret=None, judged_only=False, ignore_self=False)
        """
        unknown = sorted(set(overrides) - set(CONVENTION_FIELDS))
        if unknown:
            raise ConventionError(
                f"unknown convention{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                f"the conventions are {', '.join(CONVENTION_FIELDS)}"
            )
        return dataclasses.replace(self, **overrides) if overrides else self

    def describe(self) -> dict[str, object]:
        """A JSON-ready statement of these conventions."""
        ties = {
            "docid": "score descending compared in single precision (C float), then doc id descending "
            "(trec_eval 9, pytrec_eval)",
            "docid-double": "score descending compared in double precision, then doc id descending (trec_eval 10.0)",
            "input": "score descending (double precision), then input order",
            "rank": "the run's rank column ascending",
        }[self.ties]
        missing = {
            "zero": "judged queries absent from the run score 0 (trec_eval -c)",
            "skip": "judged queries absent from the run are left out (trec_eval default)",
            "error": "judged queries absent from the run are an error",
        }[self.missing]
        return {
            "relevance_level": self.relevance_level,
            "negative_labels": "neither relevant nor judged non-relevant (trec_eval)",
            "ties": ties,
            "missing_queries": missing,
            "run_only_queries": "queries without judgements are ignored",
            "max_ret": self.max_ret,
            "judged_only": self.judged_only,
            "ignore_self": (
                "results whose document id is the query id are dropped, ranks closed up (BEIR ignore_identical_ids)"
                if self.ignore_self
                else False
            ),
        }


#: The fields of :class:`Conventions`, read from the dataclass: the one list of them.
CONVENTION_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Conventions))


def conventions_from(conventions: Conventions | None = None, **overrides: Any) -> Conventions:
    """The conventions a front door works under: ``conventions`` (default: :class:`Conventions`'s defaults)
    with ``overrides`` (keyword spellings of its fields) applied over it.

    Every function that takes ``conventions=`` also takes the fields as keywords; this is where the two meet,
    so no layer re-lists the fields. An unknown keyword is a :class:`ConventionError` naming the fields.

    >>> conventions_from(None, missing="skip").missing
    'skip'
    >>> conventions_from(Conventions(relevance_level=2), relevance_level=3).relevance_level
    3
    >>> try:
    ...     conventions_from(None, level=2)
    ... except ConventionError as error:
    ...     print(error)
    unknown convention 'level'; the conventions are relevance_level, ties, missing, max_ret, judged_only, ignore_self
    """
    base = Conventions() if conventions is None else conventions
    if not isinstance(base, Conventions):
        raise ConventionError(f"conventions must be a Conventions value, not {type(base).__name__}")
    return base.with_(**overrides)


def split_conventions(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``options`` split into (the :class:`Conventions` fields among them, the rest), for a front door whose
    keyword overrides mix conventions with options of its own.

    >>> split_conventions({"missing": "skip", "alpha": 0.01})
    ({'missing': 'skip'}, {'alpha': 0.01})
    """
    mine = {k: v for k, v in options.items() if k in CONVENTION_FIELDS}
    return mine, {k: v for k, v in options.items() if k not in CONVENTION_FIELDS}


@dataclass
class EvalContext:
    """A run joined to qrels for one set of conventions; the input of every kernel.

    Per evaluated query ``i`` (sorted ids): ``num_ret[i]``, ``num_rel[i]`` and the query's judgements.
    Judged ranked rows (``row_query``, ``row_rank``, ``row_label``) are sorted by query, then rank.
    """

    conventions: Conventions
    query_ids: np.ndarray
    in_run: np.ndarray
    num_ret: np.ndarray
    row_query: np.ndarray
    row_rank: np.ndarray
    row_label: np.ndarray
    judgement_query: np.ndarray
    judgement_label: np.ndarray
    missing_queries: list[str]
    run_only_queries: list[str]
    # The qrels and run joined here, for measures that need more than the judged rows (ndeval's subtopics,
    # stagewise.metrics.diversity); None in a context built by hand.
    judgements: Qrels | None = field(default=None, repr=False)
    run: Run | None = field(default=None, repr=False)
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def level(self) -> int:
        return self.conventions.relevance_level

    def cached(self, key: object, compute):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


@dataclass(frozen=True, eq=False)
class JoinedRun:
    """A run read joined to its qrels (the local engine's joined parse, ``stagewise.engines._fast_eval``):
    what evaluation needs of it, and no document id, so it takes a few bytes per judged result instead of
    forty per result. :func:`build_context` takes it as it takes a :class:`Run`, with the same numbers.

    ``lengths[c]`` is the number of results of query ``query_ids[c]`` (byte order); ``judged`` holds the
    (query code, 1-based rank in trec_eval 9's order, row of ``qrels``) of each judged result. ``ranks`` is
    ``None``: the joined parse takes only runs whose rank column does not run against their scores, so the
    checks of a run's rank column (``stagewise.checks``) have nothing to say of it."""

    name: str
    source: str | None
    query_ids: np.ndarray
    lengths: np.ndarray
    judged: tuple[np.ndarray, np.ndarray, np.ndarray]
    qrels: Qrels
    rows: int
    ranks: None = None
    score_from: str | None = None

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def __len__(self) -> int:
        return self.rows

    def __repr__(self) -> str:
        return f"JoinedRun(name={self.name!r}, queries={self.n_queries}, rows={self.rows})"


def build_context(qrels: Qrels, run: Run | JoinedRun, conventions: Conventions | None = None) -> EvalContext:
    """Join ``run`` to ``qrels`` under ``conventions`` (a :class:`JoinedRun` was joined to them as it was read)."""
    conv = conventions or Conventions()
    if isinstance(run, JoinedRun):
        if run.qrels is not qrels:
            raise StagewiseError(f"run {run.name!r} was read joined to other qrels than {qrels.name!r}")
        return joined_context(qrels, run.query_ids, run.name, run.lengths, run.judged, conv)
    queries = _QueryMap.of(qrels, run.query_ids, run.name, conv)
    run_len = np.diff(run.offsets)
    run_rows, judgement_rows = _join(qrels, run)
    row_rank = _ranks(run, conv, run_rows)
    if conv.ignore_self:
        run_len, run_rows, judgement_rows, row_rank = _drop_self(run, conv, run_len, run_rows, judgement_rows, row_rank)
    return _joined_context(qrels, queries, conv, run_len, run.query_codes[run_rows], row_rank, judgement_rows, run)


def joined_context(
    qrels: Qrels,
    run_query_ids: np.ndarray,
    run_name: str,
    run_len: np.ndarray,
    judged: tuple[np.ndarray, np.ndarray, np.ndarray],
    conventions: Conventions | None = None,
) -> EvalContext:
    """The context :func:`build_context` builds, from a run already joined to ``qrels`` (the joined parse,
    ``stagewise.engines._fast_eval``): the run's query ids (byte order), each one's number of results, and
    ``judged``, the (query code, 1-based rank in trec_eval's order, qrels row) of each judged result. The
    ``ties`` convention must be ``docid`` and ``ignore_self`` off (they need the document ids); the context
    holds no run (``run=None``)."""
    conv = conventions or Conventions()
    if conv.ties != "docid" or conv.ignore_self:
        raise ConventionError("a joined run is ranked by ties='docid' and keeps no doc ids for ignore_self")
    queries = _QueryMap.of(qrels, run_query_ids, run_name, conv)
    codes, ranks, rows = judged
    return _joined_context(qrels, queries, conv, run_len, codes, ranks.astype(np.int64), rows, None)


@dataclass(frozen=True)
class _QueryMap:
    """Which queries are evaluated, and where each judged and each run query goes among them."""

    query_ids: np.ndarray  # evaluated, sorted
    keep: np.ndarray  # judged query code -> evaluated?
    run_has: np.ndarray  # judged query code -> in the run?
    run_to_eval: np.ndarray  # run query code -> evaluated index (-1: not evaluated)
    found: np.ndarray  # run query code -> evaluated?
    missing: list[str]
    run_only: list[str]

    @classmethod
    def of(cls, qrels: Qrels, run_query_ids: np.ndarray, run_name: str, conv: Conventions) -> _QueryMap:
        judged_ids = qrels.query_ids
        run_has = _members(judged_ids, np.sort(run_query_ids))
        missing = [str(q) for q in judged_ids[~run_has]]
        run_only = [str(q) for q in run_query_ids[~_members(run_query_ids, judged_ids)]]
        if conv.missing == "error" and missing:
            shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
            raise StagewiseError(
                f"{len(missing)} judged quer{'y is' if len(missing) == 1 else 'ies are'} absent from run "
                f"{run_name!r}: {shown} (use --missing zero or skip to evaluate anyway)"
            )
        keep = run_has if conv.missing == "skip" else np.ones(len(judged_ids), dtype=bool)
        query_ids = judged_ids[keep]
        if len(query_ids) == 0:
            raise StagewiseError(
                f"no query has both results in run {run_name!r} and judgements in qrels {qrels.name!r}; "
                "check that the query ids of the two files match"
            )
        run_to_eval = np.full(len(run_query_ids), -1, dtype=np.int64)
        pos = np.searchsorted(query_ids, run_query_ids)
        pos_clipped = np.minimum(pos, len(query_ids) - 1)
        found = query_ids[pos_clipped] == run_query_ids
        run_to_eval[found] = pos_clipped[found]
        return cls(query_ids, keep, run_has, run_to_eval, found, missing, run_only)


def _members(values: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is in the sorted ``pool``: a binary search, where ``np.isin`` would sort both
    (and import numpy.ma, 5 ms of every evaluation's start)."""
    if len(pool) == 0:
        return np.zeros(len(values), dtype=bool)
    pos = np.minimum(np.searchsorted(pool, values), len(pool) - 1)
    return pool[pos] == values


def _joined_context(
    qrels: Qrels,
    queries: _QueryMap,
    conv: Conventions,
    run_len: np.ndarray,
    row_run_query: np.ndarray,
    row_rank: np.ndarray,
    judgement_rows: np.ndarray,
    run: Run | None,
) -> EvalContext:
    """The context from the judged results: each one's run query code, rank and qrels row."""
    query_ids, run_to_eval, found = queries.query_ids, queries.run_to_eval, queries.found
    # Judged query code -> evaluated index (-1 for dropped).
    eval_index_of_judged = np.full(len(qrels.query_ids), -1, dtype=np.int64)
    eval_index_of_judged[queries.keep] = np.arange(len(query_ids))
    num_ret = np.zeros(len(query_ids), dtype=np.int64)
    num_ret[run_to_eval[found]] = run_len[found]
    if conv.max_ret is not None:
        num_ret = np.minimum(num_ret, conv.max_ret)

    row_query = run_to_eval[row_run_query]
    row_label = qrels.labels[judgement_rows].astype(np.int64)
    kept = row_query >= 0
    if conv.max_ret is not None:
        kept &= row_rank <= conv.max_ret
    row_query, row_rank, row_label = row_query[kept], row_rank[kept], row_label[kept]
    order = np.lexsort((row_rank, row_query))
    row_query, row_rank, row_label = row_query[order], row_rank[order], row_label[order]

    if conv.judged_only:
        # trec_eval -J: unjudged results (absent from qrels, or labelled < 0) are removed, ranks closed up.
        judged = row_label >= 0
        row_query, row_rank, row_label = row_query[judged], row_rank[judged], row_label[judged]
        row_rank = position_in_segment(row_query) + 1
        num_ret = np.bincount(row_query, minlength=len(query_ids)).astype(np.int64)

    judgement_query = eval_index_of_judged[qrels.query_codes]
    judged_kept = judgement_query >= 0
    return EvalContext(
        conventions=conv,
        query_ids=query_ids,
        in_run=queries.run_has[queries.keep],
        num_ret=num_ret,
        row_query=row_query,
        row_rank=row_rank,
        row_label=row_label,
        judgement_query=judgement_query[judged_kept],
        judgement_label=qrels.labels[judged_kept].astype(np.int64),
        missing_queries=queries.missing,
        run_only_queries=queries.run_only,
        judgements=qrels,
        run=run,
    )


def self_rows(run: Run) -> np.ndarray:
    """The run's rows (stored order) whose document id is their query's id, byte for byte."""
    docs = run.docs.joined() if hasattr(run.docs, "joined") else run.docs
    query_bytes = pl.Series(run.query_ids.astype(str)).cast(pl.Binary).gather(run.query_codes)
    return np.flatnonzero((docs.binary_series() == query_bytes).to_numpy())


def _drop_self(
    run: Run, conv: Conventions, run_len: np.ndarray, run_rows: np.ndarray, judgement_rows: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``ignore_self``: the results whose document is the query itself removed, the ranks after them closed up.

    Returns each query's new length, and the judged rows (run row, qrels row, rank) without the removed ones.
    """
    dropped = self_rows(run)
    if len(dropped) == 0:
        return run_len, run_rows, judgement_rows, rank
    dropped_query = run.query_codes[dropped].astype(np.int64)
    width = int(run_len.max()) + 1
    dropped_key = np.sort(dropped_query * width + _ranks(run, conv, dropped))
    keep = ~np.isin(run_rows, dropped)
    run_rows, judgement_rows, rank = run_rows[keep], judgement_rows[keep], rank[keep]
    query = run.query_codes[run_rows].astype(np.int64)
    # each kept row moves up by the number of its query's removed results ranked above it
    above = np.searchsorted(dropped_key, query * width + rank) - np.searchsorted(dropped_key, query * width)
    lengths = run_len - np.bincount(dropped_query, minlength=len(run_len))
    return lengths, run_rows, judgement_rows, rank - above


def _ranks(run: Run, conv: Conventions, rows: np.ndarray) -> np.ndarray:
    """1-based rank of the run's ``rows`` (indices in its stored order) under the tie convention."""
    if conv.ties == "docid":  # the stored order: a row's rank is its place in its query (no array of every row)
        return rows - run.offsets[run.query_codes[rows]] + 1
    within = np.arange(len(run), dtype=np.int64) - np.repeat(run.offsets[:-1], np.diff(run.offsets))
    if conv.ties == "docid-double":
        ordered = evaluation_order(run.query_codes, run.scores, run.docs, np.arange(len(run)), single=False)
    elif conv.ties == "input":
        key = pl.DataFrame({"q": run.query_codes, "s": run.scores, "p": run.input_position}).with_row_index("i")
        ordered = key.sort(["q", "s", "p"], descending=[False, True, False])["i"].to_numpy()
    else:
        if run.ranks is None or np.isnan(np.asarray(run.ranks, dtype=float)).any():
            raise ConventionError("ties='rank' needs a run with an integer rank column on every row")
        key = pl.DataFrame({"q": run.query_codes, "r": run.ranks, "p": run.input_position}).with_row_index("i")
        ordered = key.sort(["q", "r", "p"])["i"].to_numpy()
    rank = np.empty(len(run), dtype=np.int64)
    rank[ordered] = within + 1  # ordered rows are grouped by query exactly like the stored rows
    return rank[rows]


def _join(qrels: Qrels, run: Run) -> tuple[np.ndarray, np.ndarray]:
    """(run row, qrels row) of every retrieved document that has a judgement."""
    if len(run.query_ids) and len(qrels.query_ids):
        # Each judgement's query as a code of the run's queries (-1: the run lacks it), so both sides share codes.
        pos = np.minimum(np.searchsorted(run.query_ids, qrels.query_ids), len(run.query_ids) - 1)
        run_code = np.where(run.query_ids[pos] == qrels.query_ids, pos, -1).astype(np.int32)
        matched = rowops.match_pairs(
            run_code[qrels.query_codes],
            qrels.pair_keys,
            qrels.docs.buffers(),
            run.query_codes,
            run.pair_keys,
            run.docs.buffers(),
        )
        if matched is not None:
            return matched
    judged = pl.DataFrame({"k": qrels.pair_keys, "j": np.arange(len(qrels), dtype=np.int64)})
    ranked = pl.DataFrame({"k": run.pair_keys}).with_row_index("i")
    pairs = judged.join(ranked, on="k", how="inner")
    run_rows = pairs["i"].to_numpy().astype(np.int64)
    judgement_rows = pairs["j"].to_numpy()
    # A 64-bit hash can collide: confirm each match by its strings.
    same_doc = np.fromiter(
        (a == b for a, b in zip(run.docs.raw(run_rows), qrels.docs.raw(judgement_rows), strict=True)),
        dtype=bool,
        count=len(run_rows),
    )
    same = same_doc & (run.query_ids[run.query_codes[run_rows]] == qrels.query_ids[qrels.query_codes[judgement_rows]])
    return run_rows[same], judgement_rows[same]
