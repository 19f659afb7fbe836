"""What the subcommands share: failing cleanly, writing output atomically, splitting metric lists."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.command import RegistryChoice
from stagewise.data.formats import CORPUS_FORMATS, DUPLICATE_POLICIES, QRELS_FORMATS, RUN_FORMATS
from stagewise.engines.catalogue import ENGINES
from stagewise.metrics.defaults import DEFAULT_METRICS, MISSING_QUERY_POLICIES, TIE_POLICIES

# For --help, which must not import the metrics engine (numpy, polars): the same tuple evaluate() uses.
DEFAULT_METRICS_TEXT = ", ".join(DEFAULT_METRICS)
#: How a metric may be spelt, for every command's --metric help: one text, so no command lists fewer.
METRIC_SPELLINGS = (
    "Spellings: stagewise's (map, ndcg@10(gain=exp), P@5(rel=2), err@20, rbp(p=0.8), judged@10), trec_eval's "
    "(ndcg_cut_10; ndcg_cut.10,20 gives both), ir_measures' (nDCG@10, AP, RBP, ERR@10, INST(T=2), alpha_nDCG@20) "
    "and ranx's (hit_rate@10, map@100-l2), each giving that tool's number; your own measure as module:attr "
    "(stagewise.define). docs/names.md lists them all."
)


def _choices(name: str, vocabulary: Any, doc: str) -> type[StrEnum]:
    """A CLI choice enum of a light vocabulary's names (a registry's canonical names, or a tuple), so the
    command line's choices are the library's, never a copy; a member is named as its value with ``-`` read as
    ``_`` (``Ties.docid_double``)."""
    names = vocabulary.names() if hasattr(vocabulary, "names") else vocabulary
    choices = StrEnum(name, {value.replace("-", "_"): value for value in names})  # type: ignore[misc]
    choices.__doc__ = doc
    return choices


Ties = _choices("Ties", TIE_POLICIES, "The evaluation's tie conventions (stagewise.metrics.context.Conventions).")
Missing = _choices("Missing", MISSING_QUERY_POLICIES, "What happens to a judged query absent from a run.")
Duplicates = _choices("Duplicates", DUPLICATE_POLICIES, "What a document listed twice for one query of a run does.")
QrelsFormat = _choices(
    "QrelsFormat", QRELS_FORMATS, "How a qrels file is laid out (stagewise.data.formats.QRELS_FORMATS)."
)
CorpusFormat = _choices(
    "CorpusFormat", CORPUS_FORMATS, "Corpus and query set formats (stagewise.data.formats.CORPUS_FORMATS)."
)


QrelsFormatOption = Annotated[
    QrelsFormat | None,
    typer.Option(
        "--qrels-format",
        metavar="FORMAT",  # the choices are in the help: as a metavar they would squeeze every help column
        help="Layout of the qrels file (default: from its extension, else TREC): "
        + ", ".join(e.name for e in dict.fromkeys(QRELS_FORMATS.values()))
        + "; "
        + "; ".join(f"{e.name}: {e.help}" for e in dict.fromkeys(QRELS_FORMATS.values()) if e.name not in RUN_FORMATS)
        + ".",
    ),
]
DuplicatesOption = Annotated[
    Duplicates,
    typer.Option(
        help="A document listed twice for one query of a run: error (naming the line), or keep the first or the "
        "best-scored listing."
    ),
]


def read_qrels_as(path: str, qrels_format: QrelsFormat | None):
    """The qrels argument, read with its stated format (or by its extension when none is stated)."""
    from stagewise.data.readers import read_qrels

    return read_qrels(path, format=None if qrels_format is None else qrels_format.value)


class Backend(StrEnum):
    """Encoder backends of the dense stage, as CLI choices (checked before any work)."""

    torch = "torch"
    onnx = "onnx"


# The engines' names when this module loaded: for a default (EngineChoice.local) and comparisons; the --engine
# choice itself reads the registry when the command runs, so an engine registered later is taken too.
EngineChoice = _choices("EngineChoice", ENGINES, "Where the per-query work runs (stagewise.engines.ENGINES).")

EngineOption = Annotated[
    str,
    typer.Option(
        "--engine",
        parser=RegistryChoice("stagewise.engines", "ENGINES", canonical=True),
        metavar="ENGINE",
        help="Where the per-query work runs: {entries:stagewise.engines:ENGINES}. Same numbers on every engine.",
    ),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Address of a running Dask scheduler (tcp://host:8786) for --engine dask; without it a local cluster "
        "is started for the command.",
    ),
]


def engine_for(engine: str, scheduler: str | None):
    """The engine the options ask for, by name (a --scheduler without --engine dask is an error)."""
    from stagewise.engines import get_engine

    return get_engine(str(getattr(engine, "value", engine)), scheduler=scheduler)


@contextlib.contextmanager
def engine_progress(chosen: Any) -> Iterator[None]:
    """While the block runs, a progress bar of the Dask engine's tasks as the cluster reports them done (on a
    terminal only); nothing for the other engines."""
    if getattr(chosen, "name", None) != "dask":
        yield
        return
    with stage_progress("starting the Dask cluster", "Dask tasks", "tasks") as report:
        chosen.progress = report
        yield


# The largest value every integer option accepts: what numpy's int64 (and trec_eval's long) can hold. A larger
# number would reach the library as an OverflowError deep inside numpy instead of a line naming the option.
INT64_MAX = 2**63 - 1
# compare's and report's -B: a billion sign flips or resamples already takes hours on a few hundred queries.
MAX_PERMUTATIONS = 10**9


class _NotAnInteger(str):
    """A value the integer parser could not read, carried to the range check, which names the option."""


def _parse_integer(value: Any) -> Any:
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip(), 10)
    except ValueError:
        return _NotAnInteger(value)


def usage_error(message: str) -> typer.Exit:
    """Print ``message`` as the CLI's one-line error and return the exit (code 2) to raise; for checks that run
    while typer parses the command line, where a StagewiseError would end in typer's traceback."""
    typer.echo(f"stagewise: error: {message}", err=True)
    return typer.Exit(2)


def int_option(low: int, high: int = INT64_MAX, metavar: str = "N") -> dict[str, Any]:
    """The settings of an integer option (``typer.Option("--digits", **int_option(0, 20))``): every integer
    option of every command goes through this one check, so a value out of range, or no integer at all, is one
    line naming the option and its range, exit 2, never a traceback or typer's box."""

    def check(param: typer.CallbackParam, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, _NotAnInteger) or not low <= value <= high:
            flag = max(param.opts, key=len)
            raise usage_error(f"{flag} must be an integer from {low:,} to {high:,}; got {value}")
        return value

    return dict(parser=_parse_integer, callback=check, metavar=metavar)


class _NotANumber(str):
    """A value the number parser could not read, carried to the check, which names the option."""


def _parse_number(value: Any) -> Any:
    if isinstance(value, float):
        return value
    try:
        return float(str(value).strip())
    except ValueError:
        return _NotANumber(value)


def float_option(low: float | None = None, high: float | None = None, metavar: str = "X") -> dict[str, Any]:
    """The settings of a number option (``typer.Option("--alpha", **float_option())``): what is no number, or
    a number outside [``low``, ``high``] where given, is one line naming the option, exit 2, as for the integer
    options (typer would draw its box). Finer checks (open intervals, NaN) stay with the library, whose
    errors name the parameter."""

    def check(param: typer.CallbackParam, value: Any) -> Any:
        if value is None:
            return None
        flag = max(param.opts, key=len)
        if isinstance(value, _NotANumber):
            raise usage_error(f"{flag} must be a number; got {value}")
        if (low is not None and not value >= low) or (high is not None and not value <= high):
            bounds = f"from {low:g} to {high:g}" if low is not None and high is not None else ""
            bounds = bounds or (f">= {low:g}" if low is not None else f"<= {high:g}")
            raise usage_error(f"{flag} must be a number {bounds}; got {value:g}")
        return value

    return dict(parser=_parse_number, callback=check, metavar=metavar)


def format_option(kind: str, *flags: str, default: str = "table", from_output: bool = True) -> Any:
    """The ``--format`` option of a command whose result is of class ``kind`` (``"EvalResult"``): its choices and
    help are the output formats registered for that kind (:data:`stagewise.report.FORMATS`), read when the
    command runs or shows help, so a format registered later is offered with no edit here. The value is the
    format's canonical name, or None when not given (then :func:`output_format` decides, when the command
    has ``-o``: ``from_output``)."""
    fallback = f"the one -o's extension names, else {default}" if from_output else default
    return typer.Option(
        *(flags or ("--format", "-f")),
        parser=RegistryChoice("stagewise.report", "FORMATS", kind, canonical=True),
        metavar="FORMAT",
        help=f"Output format: {{names:stagewise.report:FORMATS:{kind}}} (default: {fallback}).",
    )


def output_format(fmt: str | None, output: Path | None, choices: tuple[str, ...], default: str = "table") -> str:
    """The format to write: --format when given, else the one -o's extension names (the registry's extensions,
    :func:`stagewise.report.extension_format`), else ``default``. A --format the extension contradicts, or an
    extension naming a format this command does not write, is refused before any work (a .json file holding a
    text table says one thing and holds another)."""
    from stagewise.errors import InputError
    from stagewise.report import extension_format

    suffixes = [] if output is None else [s.lower() for s in output.suffixes if s.lower() != ".gz"]
    named = extension_format(suffixes[-1]) if suffixes else None
    if named is not None and named not in choices:
        raise InputError(
            str(output), f"its extension asks for {named}, which this command does not write",
            expected=f"one of {', '.join(choices)}", hint="name the file for the format, or give --format",
        )  # fmt: skip
    if fmt is not None and named is not None and fmt != named:
        raise InputError(
            str(output), f"its extension asks for {named} but --format is {fmt}",
            hint=f"name the file for {fmt}, or leave out --format",
        )  # fmt: skip
    if fmt is None and named is None and suffixes and suffixes[-1] in (".html", ".htm"):
        # a text table in a file a browser opens as a page: one line of garbled text
        raise InputError(
            str(output), "is named as a web page, but this command writes no HTML",
            expected=f"one of {', '.join(choices)} (by --format or the file's extension)",
            hint="stagewise report writes one HTML page of runs and their comparison",
        )  # fmt: skip
    return fmt if fmt is not None else named if named is not None else default


# Options of the commands that write a whole folder (index, encode, hybrid).
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace --output even when it is a non-empty folder that is not this command's (its content is "
        "deleted); the current folder and a folder holding an input are refused even then.",
    ),
]
ParentsOption = Annotated[bool, typer.Option("--parents", help="Create the missing parent folders of --output.")]


# Convention options shared by the commands that evaluate runs (eval, compare).
RelevanceLevelOption = Annotated[
    int,
    typer.Option(
        "--relevance-level",
        "-l",
        **int_option(-INT64_MAX - 1),
        help="A label >= this is relevant for binary metrics (trec_eval -l).",
    ),
]
TiesOption = Annotated[
    Ties,
    typer.Option(
        help="Order of results: docid (score descending in single precision, then doc id descending: trec_eval 9, "
        "pytrec_eval), docid-double (scores compared as doubles: trec_eval 10.0), input (equal scores in file "
        "order) or rank (the rank column)."
    ),
]
MaxRetOption = Annotated[
    int | None,
    typer.Option(
        "--max-ret", "-M", **int_option(1), help="Only the first N results of each query count (trec_eval -M)."
    ),
]
JudgedOnlyOption = Annotated[
    bool, typer.Option("--judged-only", "-J", help="Drop unjudged results before measuring (trec_eval -J).")
]
IgnoreSelfOption = Annotated[
    bool,
    typer.Option(
        "--ignore-self",
        help="Drop results whose document id is the query id, closing up the ranks (BEIR's ignore_identical_ids: "
        "ArguAna, Quora). Stated in the output.",
    ),
]


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn a :class:`StagewiseError` into one line on stderr and exit code 2 (no traceback)."""
    from stagewise.errors import StagewiseError

    try:
        yield
    except StagewiseError as exc:
        typer.echo(f"stagewise: error: {exc}", err=True)
        raise typer.Exit(2) from None


# Sign flips (or resamples) times queries a second, measured on 2 CPU cores: compare -t randomization on
# TREC Robust 2003 (100 queries, 5 metrics, 1 pair) took 0.41 s more for B = 200,000 than for 10,000 (2.3e8 a
# second; bootstrap 1.3e8). The estimate takes the slower, rounded down: a lower bound would mislead.
RESAMPLES_PER_SECOND = 1e8


def resampling_estimate(permutations: int, queries: int, metrics: int, pairs: int) -> str | None:
    """A note of how long -B resamples take, when that is more than ten seconds; else None."""
    seconds = permutations * queries * metrics * pairs / RESAMPLES_PER_SECOND
    if seconds < 10:
        return None
    shown = (
        f"{seconds:.0f} s"
        if seconds < 120
        else f"{seconds / 60:.0f} min"
        if seconds < 7200
        else f"{seconds / 3600:.1f} h"
    )
    return (
        f"stagewise: note: -B {permutations:,} on {queries:,} queries x {metrics} metric(s) x {pairs} pair(s) "
        f"takes roughly {shown} (a smaller -B answers sooner)"
    )


class Loaded:
    """What a command's loaders read (the library calls them once it has checked the options), kept for the
    checks made after: ``evaluate(seen.keep("qrels", read), ...)`` then ``seen.qrels``."""

    def __init__(self) -> None:
        self.qrels: Any = None
        self.runs: list = []

    def keep(self, what: str, load: Callable[[], Any]) -> Callable[[], Any]:
        def loader() -> Any:
            value = load()
            setattr(self, what, value)
            return value

        return loader


def warn_from_checks(qrels: Any, runs: list, paths: list[str] | None = None) -> None:
    """Print on stderr the warnings validate would give about ``runs`` (rank and score columns swapped, query
    numbers that match the judgements' in count but not in value), so eval and compare do not report a number
    from such a run in silence; the numbers are still given."""
    if qrels is None or not runs:
        return
    # the runs already read, not read again; their files' first lines let the rank and score check see the
    # columns as written (swapped columns look sound once the run is sorted by score)
    from stagewise.checks import qrels_warnings, run_warnings
    from stagewise.data.readers import read_qrels

    judged = read_qrels(qrels)
    for line in qrels_warnings(judged):
        typer.echo(f"stagewise: warning: {line}", err=True)
    for run, path in zip(runs, paths or [None] * len(runs), strict=True):
        for line in run_warnings(judged, run, path):
            typer.echo(f"stagewise: warning: {line}", err=True)


def check_output(
    output: Path | None,
    inputs: list[str | Path | None],
    *,
    option: str = "--output",
    others: dict | None = None,
    input_folders: tuple[Path, ...] = (),
) -> None:
    """Refuse a bad output path before any work starts (see :func:`stagewise._io.check_output`): a folder, a
    missing parent folder, a read-only file, an input, a device; ``None`` (stdout) passes."""
    if output is None:
        return
    from stagewise._io import check_output as check

    check(_as_typed(output), inputs=inputs, outputs=others, option=option, input_folders=input_folders)


# The command line as typed, kept by the console entry point (stagewise.cli.main): typer's Path drops a trailing
# '/', and that slash is the user saying "a folder".
RAW_ARGS: list[str] = []


def _as_typed(path: Path) -> str | Path:
    """The path as the user typed it (``-o out/`` with no folder ``out`` would otherwise write a file ``out``)."""
    for arg in RAW_ARGS:
        if arg.startswith("--") and "=" in arg:
            value = arg.split("=", 1)[1]
        elif arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
            value = arg[2:]  # a short option glued to its value: -oout/
        else:
            value = arg
        if value.endswith(("/", os.sep)) and value.strip("/" + os.sep) and Path(value) == path:
            return value  # Path("./out/") == Path("out"): the same path, typed as a folder
    return path


def score_cache(
    cache: Path | None, *, inputs: list[Any], output: Path | None, no_cache: bool = False, folder: bool = False
) -> Path | None:
    """The rerankers' score cache: None with --no-cache, the user's cache file without --cache, else --cache
    checked as the output it is (not an input, not the run being written, nor inside ``output`` when that is a
    folder replaced whole; its folder there)."""
    if no_cache:
        return None
    if cache is None:
        from stagewise._io import user_cache_folder

        return user_cache_folder() / "rerank-scores.sqlite"
    from stagewise._io import check_output as check
    from stagewise.errors import InputError

    if folder and output is not None and Path(os.path.realpath(cache)).is_relative_to(os.path.realpath(output)):
        raise InputError(str(cache), f"is inside --output {output}, which is replaced whole", hint="move --cache out")
    check(cache, inputs=inputs, outputs={"--output": output} if output is not None else None, option="--cache")
    return cache


def emit_run(run: Any, output: Path | None) -> None:
    """Write ``run`` as TREC to ``output`` atomically, or to stdout (text printed before it comes first)."""
    if output is None:
        from stagewise.data.writers import write_trec_run

        sys.stdout.flush()
        write_trec_run(run, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    from stagewise._io import write_errors
    from stagewise.data.writers import write_run

    with write_errors(output):
        write_run(run, output, format="trec")


def emit(text: str, output: Path | None, what: str = "") -> None:
    """Write ``text`` to ``output`` atomically, or to stdout; a file written is named on stderr with ``what``
    it holds (its format, its rows)."""
    if output is None:
        sys.stdout.write(text)
        return
    from stagewise._io import atomic_write, write_errors

    with write_errors(output), atomic_write(output, parents=False) as fh:
        fh.write(text)
    typer.echo(f"wrote {output}" + (f" ({what})" if what else ""), err=True)


def show_table(rich: Callable[[int], Any], plain: Callable[[], str]) -> None:
    """A table on stdout: rich (box drawing, bold best values) on a terminal; on a pipe or in a file, plain
    ASCII columns with the best values marked ``*``, which ``grep``, ``cut`` and diffs read. ``rich`` takes the
    terminal's width."""
    from rich.console import Console

    console = Console()
    if console.is_terminal:
        console.print(rich(console.width))
    else:
        sys.stdout.write(plain())


def split_metrics(values: list[str]) -> list[str]:
    """``-m map,ndcg@10 -m P@5(rel=2)`` -> each metric once, commas inside parentheses kept; trec_eval's cutoff
    lists expand (``ndcg_cut.10,20`` -> ``ndcg_cut_10``, ``ndcg_cut_20``, the names trec_eval prints)."""
    from stagewise.metrics.measures import expand_cutoff_lists

    out: list[str] = []
    for value in values:
        depth, start = 0, 0
        for i, ch in enumerate(value):
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                out.append(value[start:i])
                start = i + 1
        out.append(value[start:])
    return expand_cutoff_lists([m.strip() for m in out if m.strip()])


def run_labels(paths: list[str]) -> list[str]:
    """A name for each run file (see :func:`stagewise.data.readers.path_labels`)."""
    from stagewise.data.readers import path_labels

    return path_labels(paths)


def progress_bar(label: str, unit: str = "") -> tuple[Any, Callable[..., None]]:
    """The CLI's one progress bar: rich, on stderr, drawn only when stderr is a terminal and gone when done.

    Returns the bar (use it as a context manager) and its callback ``update(done, total, label=None)``; a total
    of 0 or None means "not known yet" (the bar pulses), and ``label`` replaces the text before the bar.
    """
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn()]
    if unit:
        columns.append(TextColumn(unit))
    bar = Progress(*columns, TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal)
    task = bar.add_task(label, total=None)

    def update(done: float, total: int | None, label: str | None = None) -> None:
        if label is None:
            bar.update(task, completed=done, total=total or None)
        else:
            bar.update(task, completed=done, total=total or None, description=label)

    return bar, update


@contextlib.contextmanager
def stage_progress(first: str, then: str, unit: str) -> Iterator[Callable[[float, int], None] | None]:
    """A :func:`progress_bar` while the block runs, reading ``first`` (pulsing) until the work first reports,
    then ``then`` with ``done/total unit``. Yields the ``(done, total)`` callback, or None when nothing is shown
    (stderr is no terminal), so the work need not report."""
    bar, update = progress_bar(first, unit)
    if bar.disable:
        yield None
        return
    with bar:
        yield lambda done, total: update(done, total, label=then)


def baseline_label(baseline: str, paths: list[str], labels: list[str]) -> str:
    """The label of the run ``--baseline`` names, by its label or by its path as given (spelt any way that
    names the same file: ``./b/run.trec``); anything else is returned as is, for the library's error."""
    import os.path

    if baseline in labels:
        return baseline
    wanted = os.path.normpath(baseline)
    matches = [label for path, label in zip(paths, labels, strict=True) if os.path.normpath(path) == wanted]
    return matches[0] if matches else baseline


def read_runs_with_progress(paths: list[str], duplicates: str = "error") -> list:
    """Read run files with a :func:`progress_bar`, each named by :func:`run_labels`; ``duplicates`` is
    read_run's policy for a document repeated in a query."""
    from stagewise.data.readers import read_run

    runs = []
    bar, update = progress_bar("reading runs")
    with bar:
        for done, (path, label) in enumerate(zip(paths, run_labels(paths), strict=True)):
            update(done, len(paths), label=f"reading {label}")
            runs.append(read_run(path, name=label, duplicates=duplicates))
        update(len(paths), len(paths))
    return runs


@contextlib.contextmanager
def stdin_as_file(what: str, fmt: str) -> Iterator[Path]:
    """Standard input (``-``) as a temporary file for the path-based readers, its format told by ``fmt`` or
    sniffed (``{`` starts JSONL, ``.I`` a SMART file, anything else is TSV); messages about it name
    ``<stdin>``, not the temporary file."""
    import tempfile

    from stagewise._io import read_bytes
    from stagewise.errors import InputError

    if fmt == "beir":
        raise InputError("<stdin>", f"a BEIR {what} is a folder and cannot come from standard input")
    data = read_bytes("-")
    if fmt == "auto":
        head = data.lstrip()[:3]
        fmt = "jsonl" if head.startswith(b"{") else "smart" if head.startswith(b".I") else "tsv"
    with tempfile.TemporaryDirectory(prefix="stagewise-stdin-") as folder:
        path = Path(folder) / f"stdin.{fmt}"
        path.write_bytes(data)
        try:
            yield path
        except InputError as exc:
            if exc.source != str(path):
                raise
            raise InputError("<stdin>", exc.problem, line=exc.line, expected=exc.expected, hint=exc.hint) from None


def need_app() -> None:
    """Refuse, in one line with the pip command, to start the web app without its extra."""
    from stagewise.errors import StagewiseError

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise StagewiseError("the web app needs the app extra: pip install 'stagewise[app]'") from None


def check_serving(host: str, port: int, token: str | None) -> None:
    """Refuse, before any work, to serve where it is unsafe or impossible: an address other than loopback
    without a token, a token that is short or cannot travel in a header and a cookie, a port out of range or
    already taken (0 picks a free one); and without the app extra."""
    from stagewise.app.hosts import is_loopback
    from stagewise.errors import InputError

    if not is_loopback(host) and not token:
        raise InputError(
            "--host",
            f"binding {host} exposes the labels to the network",
            hint="add --token SECRET (every request must then carry it), or keep --host 127.0.0.1",
        )
    if not 0 <= port < 65536:
        raise InputError("--port", f"{port} is not a port", expected="1 to 65535, or 0 for a free one")
    if token is not None:
        check_token(token)
    need_app()
    if port:
        from stagewise.cli.serve_cmd import _bind

        _bind(host, port).close()


# What a token may hold: the characters of a cookie value (RFC 6265's cookie-octet), which are also valid in a
# header; anything else (white space, ; , " \, control or non-ASCII characters) broke the server after the first
# page (a 500, or a cookie that never matched).
_TOKEN_CHARS = frozenset(chr(c) for c in range(0x21, 0x7F)) - set('",;\\')


def check_token(token: str) -> None:
    """Refuse a --token that is short or cannot travel in an HTTP header and a cookie, in one line."""
    from stagewise.errors import InputError

    if len(token) < 8:
        raise InputError("--token", "too short to protect anything", expected="at least 8 characters")
    bad = next((c for c in token if c not in _TOKEN_CHARS), None)
    if bad is not None:
        raise InputError(
            "--token",
            f"holds {bad!r}, which cannot travel in an HTTP header and a cookie",
            expected="printable ASCII letters, digits and punctuation without space, quotes, comma, ; or \\",
        )


def serve_app(workspace: Any, records: Any, *, host: str, port: int, token: str | None, first: str) -> None:
    """Start the web app on ``workspace`` and/or RAG ``records`` and say where it listens (``first``: the page to
    open: playground, queries or rag); runs until a signal stops it, then checkpoints and closes the label
    stores (see :func:`stagewise.cli.serve_cmd.run_server`). Check the address first (:func:`check_serving`)."""
    from stagewise.app.server import create_app
    from stagewise.cli.serve_cmd import run_server

    app = create_app(workspace, token=token, rag=records)
    stores = [part.store for part in (workspace, records) if part is not None]
    run_server(app, stores, host=host, port=port, first=first, token=token)


def check_distinct(paths: list[str], expected: str) -> None:
    """Refuse a file given twice (under any spelling): it would agree with itself, or share every document."""
    from stagewise.errors import InputError

    seen: dict[Path, str] = {}
    for path in paths:
        key = Path(path).resolve()
        if key in seen:
            raise InputError(path, f"the same file as {seen[key]}", expected=expected)
        seen[key] = path
