"""``stagewise ndeval [OPTIONS] QRELS RUN``: ndeval 4.5's command line and CSV output.

ndeval prints, for each topic of the run (in topic order), 21 measures at ndeval's fixed cutoffs 5, 10 and 20,
then their ``amean`` over the topics that are both judged and in the run (``-c``: over every judged topic,
missing ones counting 0). A topic of the run that has no judgements gets a row of zeros and is left out of
the mean's count. Values are printed as C's ``%.6f``; nNRBP of a judged topic with no relevant subtopic is 0/0,
which ndeval prints as ``-nan``, and so does this (the mean follows it).

Flags, as ndeval spells them: ``-alpha A`` (default 0.5), ``-beta B`` (0.5), ``-traditional`` (order each
topic's results by score, then doc id descending; by default ndeval orders them by the run's rank column),
``-c``, ``-M DEPTH`` (only the first DEPTH results), ``-baseline RUN`` with ``-riskAlpha A`` (risk-sensitive
differences: run - baseline where the run is at least as good, else (1 + A) times it), ``-a`` (accepted, as
ndeval does, with no effect), ``-version``, ``-help``.

Differences from ndeval, where it would stop or print what it cannot stand behind:

- Topic and subtopic ids may be any word (ndeval reads natural numbers; topics then print in number order when
  all are numbers, else in byte order); a run's topic keeps its spelling (ndeval strips a prefix such as
  ``wt09-``).
- A judgement may be negative (not relevant; ndeval stops with a syntax error), and a (topic, subtopic, doc)
  judged twice is an error naming the line (ndeval counts the document twice).
- A run with no judged topic is an error (ndeval prints ``-nan`` means).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stagewise.data.readers import read_run
from stagewise.data.run import Run
from stagewise.data.subtopics import SubtopicQrels, read_subtopic_qrels
from stagewise.errors import InputError, StagewiseError
from stagewise.metrics.context import Conventions
from stagewise.metrics.evaluate import measure_run
from stagewise.metrics.measures import Measure
from stagewise.ndeval.usage import HELP_FLAGS, USAGE, VERSION, VERSION_FLAGS

#: ndeval's columns, in its order, with the stagewise measure that gives each (alpha and beta added per call).
COLUMNS: tuple[tuple[str, str], ...] = (
    *((f"ERR-IA@{k}", f"err_ia@{k}") for k in (5, 10, 20)),
    *((f"nERR-IA@{k}", f"nerr_ia@{k}") for k in (5, 10, 20)),
    *((f"alpha-DCG@{k}", f"alpha_dcg@{k}") for k in (5, 10, 20)),
    *((f"alpha-nDCG@{k}", f"alpha_ndcg@{k}") for k in (5, 10, 20)),
    ("NRBP", "nrbp"),
    ("nNRBP", "nnrbp"),
    ("MAP-IA", "ap_ia"),
    *((f"P-IA@{k}", f"p_ia@{k}") for k in (5, 10, 20)),
    *((f"strec@{k}", f"strec@{k}") for k in (5, 10, 20)),
)
_USES_ALPHA = ("err_ia", "nerr_ia", "alpha_dcg", "alpha_ndcg", "nrbp", "nnrbp")


@dataclass(frozen=True)
class Options:
    """ndeval's flags, read."""

    qrels: str
    run: str
    alpha: float = 0.5
    beta: float = 0.5
    traditional: bool = False
    complete: bool = False
    depth: int | None = None
    baseline: str | None = None
    risk_alpha: float = 0.0
    risk_alpha_text: str = "0"


class _Done(Exception):
    """-help or -version: the text to print."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def parse_args(argv: Sequence[str]) -> Options:
    """ndeval's flags before the two files, as ndeval reads them (a value follows its flag)."""
    args = list(argv)
    values: dict[str, object] = {}
    while len(args) != 2:
        if not args:
            raise StagewiseError("give QRELS and RUN, as in: stagewise ndeval qrels.txt run.txt (-help for more)")
        flag = args.pop(0)
        if flag in HELP_FLAGS:
            raise _Done(USAGE)
        if flag in VERSION_FLAGS:
            raise _Done(VERSION)
        if flag in ("-alpha", "-beta", "-M", "-baseline", "-riskAlpha"):
            if len(args) < 3:
                raise StagewiseError(f"{flag} needs a value, then QRELS and RUN (-help for usage)")
            values[flag] = args.pop(0)
        elif flag == "-traditional":
            values[flag] = True
        elif len(flag) > 1 and flag[0] == "-" and set(flag[1:]) <= {"c", "a"}:
            values["-c"] = values.get("-c", False) or "c" in flag
        else:
            raise StagewiseError(f"unknown option {flag!r} (-help lists ndeval's options)")
    return Options(
        qrels=args[0],
        run=args[1],
        alpha=_number(values, "-alpha", 0.5, 0.0, 1.0),
        beta=_number(values, "-beta", 0.5, 0.0, 1.0),
        traditional=bool(values.get("-traditional", False)),
        complete=bool(values.get("-c", False)),
        depth=_depth(values.get("-M")),
        baseline=values.get("-baseline"),  # type: ignore[arg-type]
        risk_alpha=_number(values, "-riskAlpha", 0.0, 0.0, math.inf),
        risk_alpha_text=str(values.get("-riskAlpha", "0")),
    )


def _number(values: dict, flag: str, default: float, low: float, high: float) -> float:
    text = values.get(flag)
    if text is None:
        return default
    try:
        value = float(text)  # type: ignore[arg-type]
    except ValueError:
        value = math.nan
    if not low <= value <= high:
        span = f"in [{low:g}, {high:g}]" if high != math.inf else f">= {low:g}"
        raise StagewiseError(f"{flag} must be a number {span}; got {text!r}")
    return value


def _depth(text: object) -> int | None:
    if text is None:
        return None
    if not str(text).isdigit() or int(str(text)) < 1:
        raise StagewiseError(f"-M must be a whole number >= 1; got {text!r}")
    return int(str(text))


@dataclass(frozen=True)
class RunValues:
    """One run's per-topic values (columns in ndeval's order), for the topics of the run."""

    runid: str
    topics: list[str]
    values: dict[str, np.ndarray]
    judged: int  # topics of the run that are judged


def run_values(qrels: SubtopicQrels, path: str, options: Options) -> RunValues:
    """ndeval's 21 values for each topic of the run at ``path``: judged topics measured, the others 0; a
    judged topic with no relevant subtopic gets nNRBP = NaN, as ndeval's 0/0."""
    run = read_run(path)
    if not options.traditional:
        _check_distinct_ranks(run, path)
    conventions = Conventions(
        ties="docid-double" if options.traditional else "rank", missing="skip", max_ret=options.depth
    )
    parsed = [(column, Measure.parse(_spelling(name, options))) for column, name in COLUMNS]
    topics = [str(t) for t in run.query_ids]
    values = {column: np.zeros(len(topics)) for column, _ in COLUMNS}
    judged = np.isin(run.query_ids, qrels.query_ids)
    if judged.any():
        scores = measure_run(qrels, run, parsed, conventions)
        at = np.searchsorted(run.query_ids, scores.query_ids)
        for column, _ in COLUMNS:
            values[column][at] = scores.values[column]
        has_relevant = np.zeros(len(qrels.query_ids), dtype=bool)
        has_relevant[qrels.slot_query[np.unique(qrels.subtopic_slots[qrels.subtopic_labels >= 1])]] = True
        none = ~has_relevant[np.searchsorted(qrels.query_ids, scores.query_ids)]
        values["nNRBP"][at[none]] = math.nan
    return RunValues(run.tag or run.name, topics, values, int(judged.sum()))


def _spelling(name: str, options: Options) -> str:
    family, _, cutoff = name.partition("@")
    params = [f"alpha={options.alpha!r}"] if family in _USES_ALPHA else []
    if family in ("nrbp", "nnrbp"):
        params.append(f"beta={options.beta!r}")
    return family + (f"({','.join(params)})" if params else "") + (f"@{cutoff}" if cutoff else "")


def _check_distinct_ranks(run: Run, path: str) -> None:
    """ndeval orders a topic's results by their rank column, which must not repeat within a topic."""
    if run.ranks is None:
        raise InputError(path, "has no rank column", expected="6 columns 'topic Q0 docno rank score runid'")
    key = run.query_codes.astype(np.int64) * (int(np.max(run.ranks)) + 1) + run.ranks.astype(np.int64)
    values, counts = np.unique(key, return_counts=True)
    if (counts > 1).any():
        twice = values[np.argmax(counts > 1)]
        rows = np.flatnonzero(key == twice)
        line = int(run.input_position[rows].max()) + 1
        topic = run.query_ids[run.query_codes[rows[0]]]
        raise InputError(
            path,
            f"rank {int(run.ranks[rows[0]])} appears twice for topic {topic}",
            line=line,
            expected="distinct ranks within a topic, which ndeval orders by (-traditional orders by score)",
        )


def _risk(run: float, base: float, risk_alpha: float) -> float:
    """ndeval's risk-based difference: run - base where run >= base, else (1 + alpha) (run - base)."""
    return run - base if run >= base else (risk_alpha + 1) * (run - base)


def _topic_key(topic: str) -> tuple[int, int | str]:
    return (0, int(topic)) if topic.isdigit() else (1, topic)


def _rows(run: RunValues, base: RunValues | None, options: Options) -> tuple[list[tuple[str, list[float]]], int]:
    """The printed rows, as ndeval walks the run's topics and the baseline's in topic order, and how many."""
    columns = [column for column, _ in COLUMNS]
    run_at = {t: i for i, t in enumerate(run.topics)}
    base_at = {t: i for i, t in enumerate(base.topics)} if base is not None else {}
    topics = sorted(set(run_at) | (set(base_at) if options.complete else set()), key=_topic_key)
    rows = []
    for topic in topics:
        mine = [float(run.values[c][run_at[topic]]) if topic in run_at else 0.0 for c in columns]
        theirs = [float(base.values[c][base_at[topic]]) if topic in base_at else 0.0 for c in columns]  # type: ignore[union-attr]
        rows.append((topic, [_risk(m, b, options.risk_alpha) for m, b in zip(mine, theirs, strict=True)]))
    return rows, len(rows)


def _format(value: float) -> str:
    return "-nan" if math.isnan(value) else f"{value:.6f}"


def evaluate_command(argv: Sequence[str]) -> str:
    """The text ndeval prints for ``argv`` (flags, QRELS, RUN)."""
    try:
        options = parse_args(argv)
    except _Done as done:
        return done.text
    qrels = read_subtopic_qrels(options.qrels)
    run = run_values(qrels, options.run, options)
    base = run_values(qrels, options.baseline, options) if options.baseline else None
    if run.judged == 0 and (base is None or base.judged == 0) and not options.complete:
        raise StagewiseError(
            f"no topic of run {options.run!r} is judged in {options.qrels!r}: check that the topic ids match"
        )
    rows, printed = _rows(run, base, options)
    count = qrels.n_queries if options.complete else run.judged
    label = run.runid
    if base is not None and base.topics:
        label = f"{run.runid} (rel to. {base.runid}; rs=1+a; a={options.risk_alpha_text})"
        count = max(count, printed)
    header = "runid,topic," + ",".join(column for column, _ in COLUMNS)
    lines = [header] + [f"{label},{topic}," + ",".join(map(_format, values)) for topic, values in rows]
    totals = [0.0] * len(COLUMNS)
    for _, values in rows:  # row by row, as ndeval adds them
        totals = [total + value for total, value in zip(totals, values, strict=True)]
    lines.append(f"{label},amean," + ",".join(_format(total / count) for total in totals))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point that prints to stdout and returns an exit code (2 for bad input)."""
    try:
        sys.stdout.write(evaluate_command(sys.argv[1:] if argv is None else argv))
    except StagewiseError as exc:
        sys.stderr.write(f"stagewise: error: {exc}\n")
        return 2
    return 0
