"""``stagewise fuse RUN... --method M -o OUT`` and ``stagewise fuse RUN... --optimize --qrels Q``"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.command import RegistryChoice
from stagewise.cli.common import (
    INT64_MAX,
    SchedulerOption,
    Ties,
    check_output,
    engine_for,
    float_option,
    format_option,
    int_option,
    progress_bar,
    run_labels,
    user_errors,
)


def _parse_params(values: list[str]) -> dict[str, Any]:
    """``-p gamma=0.5 -p window=3`` -> ``{"gamma": 0.5, "window": 3}``: each VALUE read as a value inside
    ``name(key=value)`` is (:func:`stagewise.spec.parse_value`: numbers as numbers, other words as words)."""
    from stagewise.errors import ConventionError
    from stagewise.spec import parse_value

    out: dict[str, Any] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.strip():
            raise ConventionError(f"--param takes NAME=VALUE, such as gamma=0.5 (got {value!r})")
        out[key.strip()] = parse_value(text)
    return out


def _list_methods() -> str:
    from stagewise.fusion import METHODS, NORMALIZATIONS, method_names, normalization_names

    lines = ["methods (name: what it computes; parameters with defaults; [learns from --qrels]):"]
    for name in method_names():
        info = METHODS[name]
        params = ", ".join(f"{k}={'equal' if p.default is None else p.default}" for k, p in info.params.items())
        extra = f"; {params}" if params else ""
        learns = " [learns from --qrels]" if info.supervised else ""
        lines.append(f"  {name}: {info.summary}{extra}{learns}")
    lines.append("normalisations (--norm):")
    for name in normalization_names():
        lines.append(f"  {name}: {NORMALIZATIONS[name].summary}")
    return "\n".join(lines) + "\n"


# The options of `stagewise fuse`, one type each; choices and their help come from the library's catalogues
# ({names:...} is filled in when help is shown; a value is checked by the library, whose error lists the names).
RunsArgument = Annotated[
    list[str] | None, typer.Argument(help="Runs to fuse (TREC, or the tabular formats); weights follow this order.")
]
MethodOption = Annotated[
    str,
    typer.Option(
        "--method",
        "-m",
        help="Fusion method, optionally with parameters ('rrf(rrf_k=20)', 'wsum(weights=(0.7,0.3))'): "
        "{names:stagewise.fusion.methods:METHODS}. --list-methods says what each computes.",
    ),
]
RrfKOption = Annotated[
    float | None,
    typer.Option("--rrf-k", **float_option(), help="RRF's constant (default 60); not the cutoff k of recall@k."),
]
WeightsOption = Annotated[
    str | None, typer.Option("--weights", "-w", help="One weight per run, comma-separated: 0.7,0.3.")
]
ParamOption = Annotated[
    list[str] | None,
    typer.Option("--param", "-p", help="Method parameter NAME=VALUE, repeatable: gamma=0.5, phi=0.9, window=3."),
]
NormOption = Annotated[
    str | None,
    typer.Option(
        "--norm",
        "-n",
        parser=RegistryChoice("stagewise.fusion.normalize", "NORMALIZATIONS"),
        metavar="NORM",
        help="Score normalisation: {names:stagewise.fusion.normalize:NORMALIZATIONS} (default: minmax for score "
        "methods, none for rank methods).",
    ),
]
DepthOption = Annotated[
    int | None,
    typer.Option("--depth", "-d", **int_option(1), help="Each run contributes its first N results per query."),
]
OutputDepthOption = Annotated[
    int | None,
    typer.Option(
        "--output-depth",
        "-k",
        **int_option(1),
        help="Keep the first N fused results per query (default: all of them; the fused run can be deeper than "
        "any input, as each run adds documents the others did not return).",
    ),
]
QueriesOption = Annotated[
    str,
    typer.Option(
        metavar="POLICY",
        help="Queries only some runs have: {names:stagewise.fusion.options:QUERY_POLICIES} (union fuses what "
        "there is).",
    ),
]
MissingOption = Annotated[
    str | None,
    typer.Option(
        metavar="POLICY",
        help="What a run contributes for a document it did not return: "
        "{names:stagewise.fusion.options:MISSING_DOCUMENT_POLICIES} (min: its last result's; native: the "
        "method's own value). Default: the method's.",
    ),
]
OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the fused run here (atomically); else stdout.")
]
NameOption = Annotated[str | None, typer.Option(help="Name of the fused run, written as its TREC tag.")]
MetaOption = Annotated[
    Path | None, typer.Option(help="Write the fusion metadata (JSON) here; default OUTPUT.meta.json when -o is given.")
]
NoMetaOption = Annotated[bool, typer.Option("--no-meta", help="Do not write the metadata file.")]
QrelsOption = Annotated[
    str | None, typer.Option("--qrels", help="Training judgements: for --optimize and the supervised methods.")
]
OptimizeOption = Annotated[bool, typer.Option("--optimize", help="Tune the weights (or train the method) on --qrels.")]
MetricOption = Annotated[str, typer.Option(help="Objective for --optimize: any metric, e.g. ndcg@10, map.")]
StepOption = Annotated[float, typer.Option(**float_option(), help="Spacing of the weight grid; must divide 1.")]
SearchOption = Annotated[
    str,
    typer.Option(
        metavar="SEARCH",
        help="Weight search: {names:stagewise.fusion.options:SEARCHES} (grid: exact, every point; coordinate: "
        "ascent; auto: the grid up to 1001 points).",
    ),
]
FoldsOption = Annotated[
    int | None, typer.Option(**int_option(2), help="Cross-validate over K folds of the judged queries.")
]
SeedOption = Annotated[int, typer.Option(**int_option(0), help="Seed of the fold assignment.")]
TrainingLevelOption = Annotated[
    int,
    typer.Option(
        "--relevance-level", "-l", **int_option(-INT64_MAX - 1), help="A label >= this is relevant when training."
    ),
]
OptimizeTiesOption = Annotated[
    Ties,
    typer.Option(
        help="How equal scores order each input run, so the ranks fusion reads (docid: compared in single "
        "precision as trec_eval 9; docid-double: as doubles, as ranx) and the evaluation during --optimize (see "
        "stagewise eval --help); the fused run itself is always in trec_eval's order."
    ),
]
ReportFormatOption = Annotated[
    str | None,
    format_option("FusionReport", "--format", "-f", "--report-format", default="table", from_output=False),
]
ListMethodsOption = Annotated[
    bool, typer.Option("--list-methods", help="List every method and normalisation, then exit.")
]
FuseEngineOption = Annotated[
    str,
    typer.Option(
        "--engine",
        parser=RegistryChoice("stagewise.engines", "ENGINES", canonical=True),
        metavar="ENGINE",
        help="Where the runs are fused: {entries:stagewise.engines:ENGINES}. Off the local engine, runs are read "
        "side by side a group of queries at a time: each run must be sorted by query id (LC_ALL=C sort -k1,1 -s), "
        "and the fused run (the same) is written as TREC.",
    ),
]


def fuse_command(
    runs: RunsArgument = None,
    method: MethodOption = "rrf",
    rrf_k: RrfKOption = None,
    weights: WeightsOption = None,
    param: ParamOption = None,
    norm: NormOption = None,
    depth: DepthOption = None,
    output_depth: OutputDepthOption = None,
    queries: QueriesOption = "union",
    missing: MissingOption = None,
    output: OutputOption = None,
    name: NameOption = None,
    meta: MetaOption = None,
    no_meta: NoMetaOption = False,
    qrels: QrelsOption = None,
    optimize: OptimizeOption = False,
    metric: MetricOption = "ndcg@10",
    step: StepOption = 0.1,
    search: SearchOption = "auto",
    folds: FoldsOption = None,
    seed: SeedOption = 0,
    relevance_level: TrainingLevelOption = 1,
    ties: OptimizeTiesOption = Ties.docid,
    report_format: ReportFormatOption = None,
    list_methods: ListMethodsOption = False,
    engine: FuseEngineOption = "local",
    scheduler: SchedulerOption = None,
) -> None:
    """Fuse runs into one: RRF, the CombSUM family, Borda, Condorcet and the supervised methods.

    Fused scores are ordered as trec_eval reads a run: compared in single precision, ties to the higher doc id.
    Scores are written at full double precision; the metadata file records the method, its parameters, the
    normalisation and every policy.

    Examples:

      stagewise fuse bm25.run dense.run --method rrf --rrf-k 60 -o fused.run

      stagewise fuse bm25.run dense.run --method combmnz --norm minmax --depth 100 -o fused.run

      stagewise fuse a.run b.run c.run --method wsum --optimize --qrels train.qrels --metric ndcg@10 --folds 5 -o cv.run

      stagewise fuse 'runs/*.sorted' --method rrf --engine dask --scheduler tcp://scheduler:8786 -o fused.run
    """
    if list_methods:
        sys.stdout.write(_list_methods())
        return
    with user_errors():
        from stagewise.errors import StagewiseError

        if not runs:
            raise StagewiseError("give at least one run to fuse (stagewise fuse RUN... --method M -o OUT)")
        from stagewise.engines import expand_globs

        runs = expand_globs(runs)
        # Every file this command will write is checked now, before the runs are read and fused.
        check_output(output, [*runs, qrels], others={"--meta": None if no_meta else meta})
        meta_path = None if no_meta else meta if meta is not None else _default_meta(output)
        check_output(meta_path, [*runs, qrels], option="--meta", others={"--output": output})
        named = dict(zip(run_labels(runs), runs, strict=True))  # a/run.trec and b/run.trec keep their folders
        options = _options(method, rrf_k, weights, param, norm, depth, queries, missing).replace(ties=ties.value)
        if engine != "local" or scheduler is not None:
            if optimize or output_depth is not None:
                flag = "--optimize fits on every query at once" if optimize else "--output-depth cuts in memory"
                raise StagewiseError(f"{flag}: run it with --engine local")
            _fuse_on_engine(named, options, name, engine_for(engine, scheduler), output, meta_path)
            return
        report = None
        if optimize:
            if qrels is None:
                raise StagewiseError("--optimize needs training judgements: give --qrels")
            tuning = dict(metric=metric, step=step, search=search, folds=folds, seed=seed, ties=ties.value)
            report = _optimize(named, qrels, options, name, relevance_level, tuning)
            fused = report.run
        else:
            from stagewise.data.readers import read_runs
            from stagewise.fusion import fuse

            loaded = read_runs(named)
            blocks = output is not None and output_depth is None and qrels is None
            if blocks and _fused_in_blocks(loaded, options, name, output, meta_path):
                return
            fused = fuse(loaded, options=options, qrels=qrels, relevance_level=relevance_level, name=name)
        if output_depth is not None:
            from stagewise.fusion.api import keep_first

            fused = keep_first(fused, output_depth)
        _write(fused, output, False if no_meta else (meta if meta is not None else True), report)
        if report is not None:
            _show_report(report, report_format or "table", output)


class _Declined(Exception):
    """The fusion cannot be made block by block (supervised, intersection, another tie order)."""


def _fused_in_blocks(runs: list, options: Any, name: str | None, output: Path, meta_path: Path | None) -> bool:
    """Fuse a query block at a time into ``output`` (and its metadata), both written atomically: memory holds
    the runs and one block's fusion, not the whole fused run (issue 26). The bytes are those of the whole-run
    fusion; False (nothing written) when blocks cannot give them."""
    from stagewise._io import atomic_paths, write_errors
    from stagewise.fusion.engine import fuse_blocks_to
    from stagewise.fusion.writer import dump_metadata

    deepest = [0]

    def seen(block: Any) -> None:
        deepest[0] = max(deepest[0], _deepest(block))

    targets = [output] if meta_path is None else [output, meta_path]
    try:
        with write_errors(output), atomic_paths(targets) as tmps:
            with open(tmps[0], "wb") as fh:
                info = fuse_blocks_to(runs, fh, options=options, name=name, on_block=seen)
            if info is None:
                raise _Declined
            if meta_path is not None:
                with open(tmps[1], "w", encoding="utf-8", newline="") as fh:
                    dump_metadata(info, fh)
    except _Declined:
        return False
    said = f" (metadata: {meta_path})" if meta_path is not None else ""
    typer.echo(f"{_summary(info, None, deepest[0])} -> {output}{said}", err=True)
    return True


def _options(
    method: str, rrf_k: float | None, weights: str | None, param: list[str] | None, norm: str | None,
    depth: int | None, queries: str, missing: str | None,
) -> Any:  # fmt: skip
    """The one :class:`~stagewise.fusion.FusionOptions` the command passes down (every choice checked now)."""
    from stagewise.fusion import FusionOptions

    params = _parse_params(param or [])
    if rrf_k is not None:
        params["rrf_k"] = rrf_k
    return FusionOptions(
        method, norm=norm, depth=depth, queries=queries, missing=missing, weights=weights, params=params
    )


def _optimize(runs: dict, qrels: str, options: Any, name: str | None, relevance_level: int, tuning: dict) -> Any:
    from stagewise.fusion import optimize

    bar, progress = progress_bar(f"optimising {options.method}")
    with bar:
        return optimize(
            runs, qrels, options=options, name=name, relevance_level=relevance_level, progress=progress, **tuning
        )


def _show_report(report: Any, fmt: str, output: Path | None) -> None:
    """The --optimize report: to stdout when the run went to a file, else to stderr (stdout holds the run)."""
    from stagewise.report import render

    text = render(report, fmt)
    if output is None:
        typer.echo(text, err=True, nl=False)
    else:
        sys.stdout.write(text)


def _fuse_on_engine(runs, options, name, chosen, output: Path | None, meta_path: Path | None) -> None:
    """Fuse group by group on the engine, streaming TREC lines to ``output`` (atomically, with the metadata) or
    stdout, with the summary line the local path prints."""
    from stagewise._io import write_errors
    from stagewise.data.writers import format_for
    from stagewise.errors import StagewiseError
    from stagewise.fusion.engine import fuse_to
    from stagewise.fusion.writer import fuse_to_file, write_metadata

    if output is not None and format_for(output, None) != "trec":
        raise StagewiseError(f"--engine {chosen.name} writes TREC runs; write {output} with --engine local")
    from stagewise.cli.common import engine_progress

    with chosen, engine_progress(chosen):
        if output is None:
            info = fuse_to(runs, sys.stdout.buffer, options=options, engine=chosen, name=name)
            sys.stdout.flush()
            if meta_path is not None:
                with write_errors(meta_path):
                    write_metadata(info, meta_path)
            typer.echo(_summary(info), err=True)
            return
        with write_errors(output):
            info = fuse_to_file(runs, output, meta_path, options=options, engine=chosen, name=name)
    typer.echo(f"{_summary(info)} -> {output}" + (f" (metadata: {meta_path})" if meta_path else ""), err=True)


def _summary(info: dict, report: Any = None, deepest: int | None = None) -> str:
    """The line saying what was written: the method (or, cross-validated, what each fold was fused with), the
    queries and results, and how deep the run is per query."""
    how = f"with {info['method']}"
    folds = getattr(report, "folds", None)
    if folds:
        chosen = "; ".join(f"fold {fold.fold}: {fold.method}" for fold in folds)
        how = f"cross-validated over {len(folds)} folds, each fold's queries with what the others chose ({chosen})"
    depth = ""
    if deepest is not None:
        cut = info.get("output_depth")
        depth = f", the first {cut} per query" if cut else f", up to {deepest:,} per query (all fused; -k N keeps N)"
    return (
        f"fused {len(info['runs'])} run(s) {how}, norm {info['normalization']}: "
        f"{info['n_queries']} queries, {info['n_results']} results{depth}"
    )


def _deepest(run: Any) -> int:
    import numpy as np

    return int(np.diff(run.offsets).max()) if len(run) else 0


def _default_meta(output: Path | None) -> Path | None:
    return None if output is None else output.with_name(output.name + ".meta.json")


def _write(fused, output: Path | None, meta: Path | bool, report: Any = None) -> None:
    """The run to ``output`` (or stdout), the metadata to ``meta`` (``True``: beside ``output``), a summary
    line to stderr."""
    from stagewise._io import write_errors
    from stagewise.cli.common import emit_run
    from stagewise.fusion.writer import write_fused, write_metadata

    info = fused.fusion
    summary = _summary(info, report, _deepest(fused))
    if output is None:
        emit_run(fused, None)
        if isinstance(meta, Path):
            with write_errors(meta):
                write_metadata(info, meta)
        typer.echo(summary, err=True)
        return
    with write_errors(output):
        meta_path = write_fused(fused, output, metadata=meta)
    typer.echo(f"{summary} -> {output}" + (f" (metadata: {meta_path})" if meta_path else ""), err=True)
