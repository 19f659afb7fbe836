"""The result of :func:`stagewise.evaluate`: means, per-query values and the conventions behind them. It holds
data and never renders itself: :mod:`stagewise.report` turns it into tables, markdown, LaTeX, CSV and JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stagewise._lazy import LazyModule
from stagewise.metrics.context import Conventions
from stagewise.metrics.measures import Measure, measure_notes

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl
else:  # polars on first use: `stagewise eval` reads TREC files and writes JSON without it
    pl = LazyModule(globals(), "pl", "polars")

#: How :meth:`EvalResult.stds` is computed, as the outputs that show it state it.
STD_NOTE = "std: population standard deviation (ddof 0) of the per-query scores the mean is taken over (ranx)"


@dataclass
class RunScores:
    """One run's values: ``values[metric]`` holds one value per query of ``query_ids``."""

    name: str
    query_ids: np.ndarray
    values: dict[str, np.ndarray]
    means: dict[str, float]
    missing_queries: list[str]
    run_only_queries: list[str]
    #: Where the run's scores came from when not its own: ``"rank"`` for a 3-column run (``Run.score_from``).
    score_from: str | None = None
    #: Results measured per query (after ``max_ret`` and ``judged_only``), aligned with ``query_ids``; 0 for a
    #: query absent from the run. None when unknown. The notes count the queries shorter than a cutoff from it.
    num_ret: np.ndarray | None = None


@dataclass
class EvalResult:
    """Scores of several runs on several metrics.

    ``means[run][metric]`` is the all-queries value; :meth:`per_query` gives the values behind it.
    Metric keys are the names as the caller wrote them.
    """

    conventions: Conventions
    measures: list[tuple[str, Measure]]
    runs: list[RunScores]
    qrels_name: str = "qrels"
    #: What :func:`stagewise.stats.standardise.standardise_result` did (method, reference runs, queries); None
    #: for raw scores. The notes and the JSON conventions state it.
    standardised: dict[str, Any] | None = None

    @property
    def means(self) -> dict[str, dict[str, float]]:
        return {run.name: dict(run.means) for run in self.runs}

    @property
    def metric_names(self) -> list[str]:
        return [name for name, _ in self.measures]

    def per_query(self, run: str | None = None) -> dict[str, Any]:
        """``{run: {metric: {query_id: value}}}``; with ``run``, that run's own ``{metric: {query_id: value}}``
        (not nested again under the name just given)."""
        if run is not None:
            return self._one_run(self._run(run))
        return {scores.name: self._one_run(scores) for scores in self.runs}

    @staticmethod
    def _one_run(scores: RunScores) -> dict[str, dict[str, float]]:
        ids = scores.query_ids.tolist()
        return {metric: dict(zip(ids, values.tolist(), strict=True)) for metric, values in scores.values.items()}

    def _run(self, name: str) -> RunScores:
        for scores in self.runs:
            if scores.name == name:
                return scores
        raise KeyError(f"no run {name!r}; the runs are {[r.name for r in self.runs]}")

    # -- notebooks: a short repr and a small table, never every per-query array --------------------------------
    def __repr__(self) -> str:
        queries = sorted({len(r.query_ids) for r in self.runs})
        n = str(queries[0]) if len(queries) == 1 else f"{queries[0]} to {queries[-1]}" if queries else "0"
        head = f"EvalResult({len(self.runs)} run{'s' if len(self.runs) != 1 else ''} x {len(self.measures)} metrics"
        lines = [f"{head}, {n} queries, qrels {self.qrels_name})"]
        width = max((len(r.name) for r in self.runs), default=3)
        lines.append("  " + "run".ljust(width) + "".join(f"  {m:>10}" for m in self.metric_names))
        for r in self.runs[:20]:
            lines.append("  " + r.name.ljust(width) + "".join(f"  {r.means[m]:>10.4f}" for m in self.metric_names))
        if len(self.runs) > 20:
            lines.append(f"  ... {len(self.runs) - 20} more runs")
        lines.append("  " + self._conventions_line())
        return "\n".join(lines)

    def _conventions_line(self) -> str:
        conv = self.conventions
        parts = [f"relevance level {conv.relevance_level}", f"ties {conv.ties}", f"missing queries {conv.missing}"]
        parts.append("all results" if conv.max_ret is None else f"first {conv.max_ret} results")
        if conv.judged_only:
            parts.append("judged only")
        if conv.ignore_self:
            parts.append("ignore self")
        if self.standardised is not None:
            parts.append(f"standardised {self.standardised['method']}")
        return "conventions: " + ", ".join(parts)

    def _repr_html_(self) -> str:
        from html import escape

        head = "".join(f"<th>{escape(m)}</th>" for m in self.metric_names)
        cells = ("".join(f"<td>{r.means[m]:.4f}</td>" for m in self.metric_names) for r in self.runs)
        body = "".join(f"<tr><td>{escape(r.name)}</td>{c}</tr>" for r, c in zip(self.runs, cells, strict=True))
        queries = sorted({len(r.query_ids) for r in self.runs})
        caption = escape(f"{queries[-1] if queries else 0} queries; {self._conventions_line()}")
        head = f"<thead><tr><th>run</th>{head}</tr></thead>"
        return f"<table><caption>{caption}</caption>{head}<tbody>{body}</tbody></table>"

    def conventions_report(self) -> dict[str, Any]:
        """Every convention behind the numbers, including each metric's own (gain, ideal, level)."""
        from stagewise._version import __version__

        report: dict[str, Any] = {"tool": f"stagewise {__version__}"}
        report.update(self.conventions.describe())
        report["metrics"] = {name: m.conventions(self.conventions.relevance_level) for name, m in self.measures}
        report["queries_missing_from_run"] = {r.name: len(r.missing_queries) for r in self.runs}
        report["queries_only_in_run"] = {r.name: len(r.run_only_queries) for r in self.runs}
        report["num_queries"] = {r.name: len(r.query_ids) for r in self.runs}
        ranked = [r.name for r in self.runs if r.score_from == "rank"]
        if ranked:  # 3-column 'qid docid rank' runs: no scores of their own
            report["ordered_by_rank_only"] = {name: "no scores in the input: score = -rank" for name in ranked}
        report["qrels"] = self.qrels_name
        if self.standardised is not None:
            report["standardised"] = dict(self.standardised)
        return report

    def stds(self) -> dict[str, dict[str, float]]:
        """``{run: {metric: sd}}``: the population standard deviation (ddof 0) of each run's per-query scores,
        as ranx's ``evaluate(..., return_std=True)`` gives it (over the queries the mean is taken over)."""
        return {r.name: {m: float(np.std(r.values[m])) if len(r.values[m]) else float("nan") for m in r.values}
                for r in self.runs}  # fmt: skip

    def to_dict(self, per_query: bool = False, std: bool = False) -> dict[str, Any]:
        """The stable JSON contract as a dict: ``{"conventions", "runs": {run: {metric: mean}}, "std"?,
        "per_query"?}``; ``std`` adds :meth:`stds` and states how it was computed in the conventions."""
        out: dict[str, Any] = {"conventions": self.conventions_report(), "runs": self.means}
        if std:
            out["conventions"]["std"] = STD_NOTE
            out["std"] = self.stds()
        if per_query:
            out["per_query"] = self.per_query()
        return out

    def to_json(self, per_query: bool = False, indent: int | None = 2, std: bool = False) -> str:
        """:meth:`to_dict` as JSON text (what ``stagewise eval --format json`` writes)."""
        import json

        return json.dumps(self.to_dict(per_query, std), indent=indent)

    def to_polars(self, per_query: bool = False) -> pl.DataFrame:
        """Wide frame: one row per run (or per run and query), one column per metric."""
        if not per_query:
            return pl.DataFrame(
                [{"run": r.name, **r.means} for r in self.runs],
                schema={"run": pl.String, **dict.fromkeys(self.metric_names, pl.Float64)},
            )
        frames = [
            pl.DataFrame(
                {
                    "run": [r.name] * len(r.query_ids),
                    "query_id": r.query_ids,
                    **{m: r.values[m] for m in self.metric_names},
                }
            )
            for r in self.runs
        ]
        return pl.concat(frames)

    def to_pandas(self, per_query: bool = False) -> Any:
        """:meth:`to_polars` as a pandas frame; needs the pandas extra (pandas and pyarrow)."""
        from stagewise.errors import StagewiseError

        for module in ("pandas", "pyarrow"):
            try:
                __import__(module)
            except ImportError as exc:  # polars' conversion would fail deep inside with a bare ModuleNotFoundError
                raise StagewiseError(
                    f".to_pandas() needs {module}, which is not installed: pip install 'stagewise[pandas]' "
                    "(or use .to_polars())"
                ) from exc
        return self.to_polars(per_query).to_pandas()

    def notes(self) -> list[str]:
        """The conventions and counts a reader needs beside the table, one sentence each."""
        conv = self.conventions
        gains = sorted({m.option("gain") for _, m in self.measures if "gain" in m.spec.options})
        notes = [
            f"qrels {self.qrels_name}",
            f"relevance level {conv.relevance_level} (label >= {conv.relevance_level} is relevant); "
            f"ties: {conv.describe()['ties']}",
        ]
        if gains:
            notes.append(f"gain: {', '.join(gains)}; ideal DCG from all judged documents; discount log2(rank+1)")
        if any(m.family == "rbp" and m.option("scale") and m.option("rel") is None for _, m in self.measures):
            notes.append("rbp: gains scaled into [0, 1] per query by the query's highest gain (trec_eval)")
        notes += measure_notes(self.measures)
        for r in self.runs:
            if r.missing_queries:
                action = {"zero": "scored 0", "skip": "left out", "error": "error"}[conv.missing]
                notes.append(
                    f"{r.name}: {len(r.missing_queries)} judged quer"
                    f"{'y' if len(r.missing_queries) == 1 else 'ies'} absent from the run, {action}"
                )
            if r.score_from == "rank":
                notes.append(f"{r.name}: no scores, ranks only (qid docid rank): ordered by rank, score = -rank")
            if r.run_only_queries:
                notes.append(
                    f"{r.name}: {len(r.run_only_queries)} quer"
                    f"{'y' if len(r.run_only_queries) == 1 else 'ies'} without judgements ignored"
                )
        notes += _short_run_notes(self)
        if conv.max_ret is not None:
            notes.append(f"only the first {conv.max_ret} results per query count")
        if conv.judged_only:
            notes.append("unjudged results removed before measuring (judged only)")
        if conv.ignore_self:
            notes.append(
                "ignore self: results whose document id is the query id removed before measuring, ranks closed up "
                "(BEIR ignore_identical_ids); qrels unchanged"
            )
        if self.standardised is not None:
            std = self.standardised
            notes.append(
                f"standardised: {std['method']} from reference runs [{', '.join(std['reference_runs'])}] "
                f"({std['description']}); {std['queries']} queries every run has; means are arithmetic means of the "
                "standardised values"
            )
        return notes


def _short_run_notes(result: EvalResult) -> list[str]:
    """A note per run with queries that have fewer results than the largest cutoff asked for: past a run's end
    every rank counts as a result that is not relevant (trec_eval), which a reader of P@k should know."""
    cutoffs = [m.cutoff for _, m in result.measures if isinstance(m.cutoff, int) and not isinstance(m.cutoff, bool)]
    if not cutoffs:
        return []
    k, notes = max(cutoffs), []
    for r in result.runs:
        if r.num_ret is None:
            continue
        answered = r.num_ret[r.num_ret > 0]
        short = answered[answered < k]
        if len(short):
            notes.append(
                f"{r.name}: {len(short)} of {len(answered)} queries have fewer than {k} results (shortest "
                f"{int(short.min())}); ranks past a run's end count as not relevant (trec_eval)"
            )
    return notes
