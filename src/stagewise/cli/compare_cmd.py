"""``stagewise compare QRELS RUN RUN... -m METRIC... [--test NAME] [--correction NAME]``

The command builds one :class:`~stagewise.stats.CompareOptions` and one :class:`~stagewise.Conventions` from its
options and hands them to :func:`stagewise.stats.compare`. The choices of ``--test`` and ``--correction``, their
help and their errors come from the registries :data:`stagewise.stats.TESTS` and :data:`stagewise.stats.CORRECTIONS`
(read when the command runs or shows help), so a test or correction registered there is offered here with no edit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from stagewise.cli.command import RegistryChoice
from stagewise.cli.common import (
    DEFAULT_METRICS_TEXT,
    MAX_PERMUTATIONS,
    METRIC_SPELLINGS,
    Duplicates,
    DuplicatesOption,
    EngineChoice,
    EngineOption,
    IgnoreSelfOption,
    JudgedOnlyOption,
    Loaded,
    MaxRetOption,
    Missing,
    QrelsFormatOption,
    RelevanceLevelOption,
    SchedulerOption,
    Ties,
    TiesOption,
    baseline_label,
    check_output,
    emit,
    engine_for,
    engine_progress,
    float_option,
    format_option,
    int_option,
    output_format,
    read_qrels_as,
    read_runs_with_progress,
    resampling_estimate,
    run_labels,
    show_table,
    split_metrics,
    stage_progress,
    user_errors,
    warn_from_checks,
)
from stagewise.stats.catalogue import ALTERNATIVES, CI_METHODS, FAMILY_SCOPES

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.metrics.context import Conventions
    from stagewise.stats import CompareOptions, Comparison

_CATALOGUE = "stagewise.stats.catalogue"


def _choices(name: str, values: tuple[str, ...]) -> type[StrEnum]:
    """A choice enum of the library's own tuple of values (never a copy of it)."""
    return StrEnum(name, {value: value for value in values})  # type: ignore[return-value]


Alternative = _choices("Alternative", ALTERNATIVES)
Interval = _choices("Interval", CI_METHODS)
Family = _choices("Family", FAMILY_SCOPES)


class Exact(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


EXACT_VALUES = {Exact.auto: None, Exact.always: True, Exact.never: False}

# The options of the comparison, one type each (the signature below stays a list of names).
MetricOption = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        "-m",
        help=f"Metric, repeatable or comma-separated. {METRIC_SPELLINGS} Default: {DEFAULT_METRICS_TEXT}.",
    ),
]
TestOption = Annotated[
    str,
    typer.Option(
        "--test",
        "-t",
        parser=RegistryChoice(_CATALOGUE, "TESTS"),
        metavar="TEST",
        help=f"Test: {{names:{_CATALOGUE}:TESTS}} (aliases such as fisher and student taken too). anova, tukey-hsd "
        "and maxt test every pair of runs at once (family-wise; no --correction on top) and add the two-way ANOVA "
        "table, each run's interval from its residual variance and group letters.",
    ),
]
BaselineOption = Annotated[
    str | None,
    typer.Option("--baseline", "-b", help="Test every run against this run (its name or path) instead of all pairs."),
]
CorrectionOption = Annotated[
    str,
    typer.Option(
        "--correction",
        "-c",
        parser=RegistryChoice(_CATALOGUE, "CORRECTIONS"),
        metavar="CORRECTION",
        help=f"Multiple-comparison correction per family: {{names:{_CATALOGUE}:CORRECTIONS}}.",
    ),
]
AlphaOption = Annotated[float, typer.Option(**float_option(), help="Significance level for the adjusted p-values.")]
AlternativeOption = Annotated[
    Alternative, typer.Option(help="two-sided, or one-sided: greater (b > a) or less; a is the earlier run.")
]
ResamplesOption = Annotated[
    int,
    typer.Option(
        "--resamples",
        "-B",
        "--permutations",
        **int_option(1, MAX_PERMUTATIONS),
        help="Random sign flips (randomization) or resamples (bootstrap); --permutations is its old name.",
    ),
]
SeedOption = Annotated[
    int, typer.Option(**int_option(0), help="Seed of the randomization and bootstrap: same seed, same p-values.")
]
ExactOption = Annotated[
    Exact,
    typer.Option(
        help="Randomization: enumerate all 2^n sign assignments always (n <= 24), never, or auto (when 2^n <= B)."
    ),
]
TieToleranceOption = Annotated[
    float,
    typer.Option(
        **float_option(), help="A per-query difference within this is a tie (win/tie/loss and the sign test)."
    ),
]
IntervalOption = Annotated[
    Interval, typer.Option("--ci", help="Interval of the mean difference: t (Student) or bootstrap (percentile).")
]
LevelOption = Annotated[float, typer.Option(**float_option(), help="Confidence level of the interval.")]
FamilyOption = Annotated[
    Family, typer.Option(help="Correct within each metric's pairs (metric) or over all metrics' pairs (all).")
]
PairsOption = Annotated[
    bool | None,
    typer.Option(
        "--pairs/--no-pairs",
        help="Show every pair's difference, CI, d_z, W/T/L and p-values (default: when at most 10 pairs per metric).",
    ),
]
PerQueryOption = Annotated[
    bool, typer.Option("--per-query", "-q", help="Also show each pair's per-query deltas (b - a), sorted.")
]
TopOption = Annotated[
    int | None, typer.Option(**int_option(1), help="With --per-query: only the N largest gains and N largest losses.")
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write to this file (atomically) instead of stdout.")
]
MissingOption = Annotated[
    Missing,
    typer.Option(
        help="A judged query absent from a run: zero (scores 0, trec_eval -c), skip (pairs use the queries both runs "
        "have) or error."
    ),
]
StandardiseOption = Annotated[
    str,
    typer.Option(
        "--standardise",
        "--standardize",
        parser=RegistryChoice(_CATALOGUE, "STANDARDISATIONS"),
        metavar="HOW",
        help=f"Standardise each topic's scores by reference runs before testing: {{entries:{_CATALOGUE}:"
        "STANDARDISATIONS}.",
    ),
]
ReferenceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--reference", help="A reference run of --standardise (its name or path; repeatable). Default: every run."
    ),
]
DigitsOption = Annotated[
    int, typer.Option(**int_option(0, 20), help="Decimals of the means in table, markdown and LaTeX output.")
]


def compare_command(
    qrels: Annotated[
        str,
        typer.Argument(help="Judgements: TREC qrels, JSON, JSONL, CSV, TSV or Parquet; '-' reads stdin; .gz accepted."),
    ],
    runs: Annotated[
        list[str], typer.Argument(help="Two or more runs (TREC or the tabular formats); each is a row of the table.")
    ],
    metric: MetricOption = None,
    test: TestOption = "t",
    baseline: BaselineOption = None,
    correction: CorrectionOption = "holm",
    alpha: AlphaOption = 0.05,
    alternative: AlternativeOption = Alternative["two-sided"],
    resamples: ResamplesOption = 10_000,
    seed: SeedOption = 0,
    exact: ExactOption = Exact.auto,
    tie_tolerance: TieToleranceOption = 1e-9,
    ci: IntervalOption = Interval["t"],
    ci_level: LevelOption = 0.95,
    family: FamilyOption = Family["metric"],
    standardise: StandardiseOption = "none",
    reference: ReferenceOption = None,
    pairs: PairsOption = None,
    per_query: PerQueryOption = False,
    top: TopOption = None,
    fmt: Annotated[str | None, format_option("Comparison")] = None,
    output: OutputOption = None,
    relevance_level: RelevanceLevelOption = 1,
    ties: TiesOption = Ties.docid,
    missing: MissingOption = Missing.zero,
    max_ret: MaxRetOption = None,
    judged_only: JudgedOnlyOption = False,
    ignore_self: IgnoreSelfOption = False,
    digits: DigitsOption = 4,
    qrels_format: QrelsFormatOption = None,
    duplicates: DuplicatesOption = Duplicates.error,
    engine: EngineOption = EngineChoice.local,
    scheduler: SchedulerOption = None,
) -> None:
    """Compare runs with paired significance tests, corrected for multiple comparisons, with effect sizes.

    The table has runs as rows and metrics as columns; the letters after a value name the runs it is
    significantly better than, and the best value is marked. Every convention is stated under it: test,
    sidedness, family, correction, number of queries, resamples and seed, tie tolerance.

    JSON (--format json) keeps every pair: metric, a, b, test, statistic, p_value, p_adjusted, correction,
    mean_diff (= mean(b) - mean(a)), ci_low, ci_high, effect_size (Cohen's d_z), wins, ties, losses.

    Examples:

      stagewise compare qrels.txt bm25.run dense.run hybrid.run -m map -m ndcg@10

      stagewise compare qrels.txt *.run -m ndcg@10 --baseline bm25.run --test randomization --seed 1

      stagewise compare qrels.txt bm25.run dense.run -m ndcg@10 --per-query --top 10

      stagewise compare qrels.txt a.run b.run c.run -c bh --format json -o comparison.json

      stagewise compare qrels.txt *.run -m ap --test tukey-hsd -B 10000 --standardise zscore
    """
    with user_errors():
        from stagewise.engines import expand_globs
        from stagewise.errors import StagewiseError
        from stagewise.metrics.defaults import DEFAULT_METRICS
        from stagewise.report import offered
        from stagewise.stats import CompareOptions

        runs = expand_globs(runs)
        check_output(output, [qrels, *runs])
        chosen_format = output_format(fmt, output, offered("Comparison"))
        if len(runs) < 2:
            raise StagewiseError(f"compare needs at least two runs; got {len(runs)}")
        label = lambda name: baseline_label(name, runs, run_labels(runs))  # noqa: E731  (a name or a path)
        options = CompareOptions(
            test=test,
            baseline=None if baseline is None else label(baseline),
            correction=correction,
            alpha=alpha,
            alternative=alternative.value,
            resamples=resamples,
            seed=seed,
            exact=EXACT_VALUES[exact],
            tie_tolerance=tie_tolerance,
            ci=ci.value,
            ci_level=ci_level,
            family=family.value,
            standardise=standardise,
            reference=None if reference is None else tuple(map(label, reference)),
        )
        conventions = _conventions(relevance_level, ties, missing, max_ret, judged_only, ignore_self)
        metrics = split_metrics(metric) if metric else list(DEFAULT_METRICS)
        read = lambda: read_qrels_as(qrels, qrels_format)  # noqa: E731
        result = _compare(read, runs, metrics, options, conventions, engine, scheduler, duplicates)
        shown = dict(digits=digits, show_pairs=pairs, per_query=per_query, top=top)
        _show(result, chosen_format, output, shown, f"{chosen_format}, {len(runs)} runs, {len(metrics)} metric(s)")


def _conventions(
    relevance_level: int, ties: Ties, missing: Missing, max_ret: int | None, judged: bool, ignore_self: bool = False
) -> Conventions:
    """The evaluation's conventions from the command's options."""
    from stagewise.metrics.context import Conventions

    return Conventions(
        relevance_level=relevance_level,
        ties=ties.value,  # type: ignore[arg-type]
        missing=missing.value,  # type: ignore[arg-type]
        max_ret=max_ret,
        judged_only=judged,
        ignore_self=ignore_self,
    )


class _Stages:
    """One live progress display at a time: each stage's bar takes the place of the one before."""

    def __init__(self) -> None:
        self.stack = contextlib.ExitStack()

    def show(self, bar: contextlib.AbstractContextManager[Any]) -> Any:
        self.stack.close()
        return self.stack.enter_context(bar)

    def __enter__(self) -> _Stages:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()


def _compare(
    read_qrels: Callable[[], Any],
    paths: list[str],
    metrics: list[str],
    options: CompareOptions,
    conventions: Conventions,
    engine: EngineChoice,
    scheduler: str | None,
    duplicates: Duplicates,
) -> Comparison:
    """:func:`stagewise.stats.compare` on the engine asked for, with progress bars and the checks' warnings.

    The local engine measures runs read whole, so the command reads them (a bar per file, a note when the
    resamples will take long, the checks' warnings after); the stream and Dask engines read their files
    themselves, in blocks or partitions. compare() checks the metrics and options before any file is read."""
    from stagewise.stats import compare

    seen = Loaded()
    with engine_for(engine, scheduler) as chosen, _Stages() as stages:
        stages.show(engine_progress(chosen))
        testing: list[Callable[[float, int], None] | None] = []

        def read_runs() -> list:
            loaded = read_runs_with_progress(paths, duplicates.value)
            _note_resampling(options, loaded, len(metrics))
            stages.show(stage_progress("evaluating the runs", "testing", "comparisons"))
            return loaded

        def report(done: float, total: int) -> None:
            if not testing:
                testing.append(stages.show(stage_progress("testing", "testing", "comparisons")))
            if testing[0] is not None:
                testing[0](done, total)

        labelled = dict(zip(run_labels(paths), paths, strict=True))
        sources = seen.keep("runs", read_runs) if chosen.name == "local" else labelled
        result = compare(
            seen.keep("qrels", read_qrels),
            sources,
            metrics,
            conventions=conventions,
            options=options,
            progress=report,
            engine=chosen,
            duplicates=duplicates.value,
        )
    warn_from_checks(seen.qrels, seen.runs, paths)
    return result


def _note_resampling(options: CompareOptions, loaded: list, metrics: int) -> None:
    """A note on stderr when the resamples asked for will take long (see :func:`resampling_estimate`)."""
    from stagewise.stats import TESTS

    if not (TESTS.lookup(options.test).resampling or options.ci == "bootstrap"):
        return
    n_pairs = len(loaded) - 1 if options.baseline is not None else len(loaded) * (len(loaded) - 1) // 2
    note = resampling_estimate(options.resamples, max(run.n_queries for run in loaded), metrics, n_pairs)
    if note is not None:
        typer.echo(note, err=True)


def _show(result: Comparison, chosen_format: str, output: Path | None, shown: dict[str, Any], what: str) -> None:
    """The comparison on a terminal (a rich table), or written in ``chosen_format`` to ``output`` or stdout."""
    from stagewise.report import compare as render_compare

    if chosen_format == "table" and output is None:
        show_table(
            lambda _width: render_compare.rich(result, **shown),
            lambda: render_compare.render(result, "table", **shown),
        )
        return
    what += f", {len(result.pairs)} pairs" if result.pairs else ""
    emit(render_compare.render(result, chosen_format, **shown), output, what)
