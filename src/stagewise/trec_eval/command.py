"""``stagewise trec_eval [FLAGS] QRELS RUN``: trec_eval 10's command line and byte-identical output.

Supported flags: ``-q`` per-query lines, ``-c`` average over all judged topics (missing ones score 0),
``-n`` no summary, ``-J`` judged documents only, ``-M N`` at most N results per topic, ``-l N`` relevance
level, ``-N N`` collection size (for utility), ``-m MEASURE[.PARAMS]`` (repeatable; sets such as
``all_trec``), ``-R FORMAT`` the judgements' form (``qrels``; ``prefs`` and ``qrels_prefs`` for the preference
measures, :mod:`.prefs`; ``qrels_jg`` for the judgement-group averages, :mod:`.judgement_groups`), ``-Z FILE``
z-scores against per-topic means (:mod:`.zscores`), ``-h`` (or ``--help``) the flags and every measure with a line
of description (``-h -m P``: that measure's only), built from the measure table. Differences from trec_eval 10,
all where trec_eval's behaviour is undefined or where it would print a number it cannot stand behind:

- ``rbp`` scales graded gains by the topic's real gain range; trec_eval reads its range variables
  uninitialised (the same numbers on its own test files).
- A judged topic absent from the run, without ``-c``, is skipped (trec_eval 10 repeats the previous topic).
- Gains given as ``ndcg.L=G`` are ordered exactly; trec_eval's comparator truncates gain differences
  below 1.0 to equal.
- Labels below -1 are read as "judged but unjudged" as trec_eval intends; trec_eval 10 crashes on them.
- Contradictory preferences in one judgement group are an error naming them; trec_eval aborts (core dump).
- A topic absent from the -Z file is an error; trec_eval prints -1000000 for all its values.
"""

from __future__ import annotations

import getopt
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stagewise.data.readers import read_qrels, read_run
from stagewise.data.run import Run
from stagewise.errors import InputError, MetricError, StagewiseError
from stagewise.metrics import kernels as K
from stagewise.metrics.context import Conventions, EvalContext, build_context
from stagewise.trec_eval import judgement_groups as JG
from stagewise.trec_eval import measures as M
from stagewise.trec_eval.prefs import prefs_rankings, read_prefs, topic_counts
from stagewise.trec_eval.prefs_measures import topic_values
from stagewise.trec_eval.zscores import ZScores, read_zscores

USAGE = """Usage: stagewise trec_eval [-h] [-q] [-c] [-n] [-J] [-l LEVEL] [-M MAX] [-N NUM_DOCS] \
[-m MEASURE[.PARAMS]]... [-R FORMAT] [-Z ZSCORES] [--ties docid|docid-double] QRELS RUN

A drop-in for trec_eval with byte-identical output.
  -q              print per-topic values as well as the summary ("all")
  -c              average over every topic in QRELS; topics missing from RUN score 0
  -n              no summary lines
  -J              judged documents only: drop unjudged results and close the gaps
  -l LEVEL        a label >= LEVEL is relevant (default 1)
  -M MAX          use at most MAX results per topic
  -N NUM_DOCS     number of documents in the collection (for utility)
  -m MEASURE      a measure or set: official (default), all_trec, set, or e.g. P.5,10 ndcg_cut.10
  -R FORMAT       how QRELS is read: qrels (default); prefs (qid jg jsg docno level) or qrels_prefs (a qrels
                  file, iteration = judgement group) for -m all_prefs; qrels_jg (iteration = judgement
                  group) for -m qrels_jg
  -Z ZSCORES      print z-scores: (value - mean) / stddev per topic, from lines "qid measure mean stddev"
  --ties docid    scores compared as C floats, as trec_eval 9, pytrec_eval and ir_measures store them
                  (the default: scores equal in single precision tie, ordered by doc id descending;
                  ascending with -R prefs and qrels_prefs, as trec_eval orders them there)
  --ties docid-double
                  scores compared as doubles, as trec_eval 10.0 stores them
  -h, --help      this help; with -m, only the measures asked for

Example: stagewise trec_eval -q -m all_prefs -R prefs prefs.test prefs.results.test
"""


def help_text(requested: Sequence[str] = ()) -> str:
    """The usage, then each measure (all of them, or those ``-m`` asked for) in printing order with its
    default parameters and a line of description, then the sets, as trec_eval's ``-h -m all_trec`` does."""
    names = [item.base for item in M.expand(requested)] if requested else list(M.TABLE_ORDER)
    lines = [USAGE, "Measures: -m NAME, or -m NAME.PARAMS (P.5,10 ndcg.1=0,2=3); printed in this order.", ""]
    for name in names:
        default = M.defaults(name)
        extra = f"; default {name}.{default}" if default else ""
        lines.append(f"  {name:<22} {M.DESCRIPTIONS[name]}{extra}")
    lines += ["", "Sets (-m SET):"]
    for nick, members in M.NICKNAMES.items():
        same = next((other for other, m in M.NICKNAMES.items() if m == members and other != nick), None)
        lines.append(f"  {nick:<22} " + (f"same as {same}" if same and same < nick else " ".join(members)))
    return "\n".join(lines) + "\n"


def _format(name: str, qid: str, value: float | str, integer: bool, z: bool = False) -> str:
    if isinstance(value, str):
        return f"{name:<22}\t{qid}\t{value}"
    if z:  # trec_eval prints every z-score, counts included, as "Z" + name and a decimal
        return f"Z{name:<22}\t{qid}\t{value:6.4f}"
    if integer:
        return f"{name:<22}\t{qid}\t{int(value)}"
    return f"{name:<22}\t{qid}\t{value:6.4f}"


@dataclass
class Flags:
    """trec_eval's flags as read from a command line (see :data:`USAGE`)."""

    per_query: bool = False  # -q
    complete: bool = False  # -c
    no_summary: bool = False  # -n
    judged_only: bool = False  # -J
    level: int = 1  # -l
    max_ret: int | None = None  # -M (0 or less: no limit)
    collection_size: int = 0  # -N
    ties: str = "docid"  # --ties
    requested: list[str] = field(default_factory=list)  # -m, in order
    rel_format: str = "qrels"  # -R
    zscores: str | None = None  # -Z

    def conventions(self) -> Conventions:
        """The evaluation's conventions these flags state (a judged topic missing from the run: 0 with -c,
        else skipped)."""
        return Conventions(
            relevance_level=self.level,
            ties=self.ties,
            missing="zero" if self.complete else "skip",
            max_ret=self.max_ret,
            judged_only=self.judged_only,
        )


_SWITCHES = {"-q": "per_query", "-c": "complete", "-n": "no_summary", "-J": "judged_only"}
_INTEGERS = {"-l": "level", "-N": "collection_size"}
_TIES = ("docid", "docid-double")


def _ignored(flag: str, value: str) -> bool:
    """trec_eval flags that change nothing here: -T trec_results names the only run format read, -D (debug)
    and -v (version) are accepted and ignored."""
    return (flag == "-T" and value == "trec_results") or flag in ("-D", "-v")


def read_flags(options: Sequence[tuple[str, str]]) -> Flags:
    """:class:`Flags` from getopt's ``(flag, value)`` pairs; the first unsupported flag or bad value is an
    error."""
    flags = Flags()
    for flag, value in options:
        if flag in _SWITCHES:
            setattr(flags, _SWITCHES[flag], True)
        elif flag in _INTEGERS:
            setattr(flags, _INTEGERS[flag], _integer(flag, value))
        elif flag == "-M":
            max_ret = _integer(flag, value)
            flags.max_ret = max_ret if max_ret > 0 else None
        elif flag == "-m":
            flags.requested.append(value)
        elif flag == "-R":
            if value not in M.FORMAT_MEASURES:
                raise StagewiseError(f"trec_eval: -R takes {', '.join(M.FORMAT_MEASURES)}, not {value!r}")
            flags.rel_format = value
        elif flag == "-Z":
            flags.zscores = value
        elif flag == "--ties":
            if value not in _TIES:
                raise StagewiseError(f"trec_eval: --ties takes docid or docid-double, not {value!r}")
            flags.ties = value
        elif not _ignored(flag, value):
            raise StagewiseError(f"trec_eval: flag {flag} {value} is not supported by stagewise's trec_eval")
    return flags


def run_trec_eval(argv: Sequence[str]) -> str:
    """The text trec_eval would print for ``argv`` (flags and the two files)."""
    return evaluate_command(argv)[0]


def evaluate_command(argv: Sequence[str]) -> tuple[str, list[str]]:
    """The text trec_eval would print for ``argv``, and the warnings to show on stderr."""
    argv = ["-h" if a == "--help" else a for a in argv]  # trec_eval's long option for -h
    try:
        options, files = getopt.gnu_getopt(list(argv), "hqcnJl:M:N:m:D:R:T:Z:ov", ["ties="])
    except getopt.GetoptError as exc:
        raise StagewiseError(f"trec_eval: {exc.msg}; stagewise trec_eval -h lists the flags and measures") from None
    if any(flag == "-h" for flag, _ in options):
        return help_text([value for flag, value in options if flag == "-m"]), []
    flags = read_flags(options)
    if len(files) != 2:
        raise StagewiseError(
            f"trec_eval: expected two files, QRELS and RUN; got {len(files)} "
            "(stagewise trec_eval -h lists the flags and measures)"
        )
    items = M.expand(flags.requested)
    _check_format(items, flags)
    zscores = read_zscores(flags.zscores) if flags.zscores else None
    table = _TABLES[flags.rel_format](files, items, flags)
    if zscores is not None:
        zscores.check_queries(table.query_ids)
        table.columns = [_standardised(column, table.query_ids, zscores) for column in table.columns]
    lines = _per_query_lines(table, zscores is not None) if flags.per_query else []
    if not flags.no_summary:
        lines += _summary_lines(items, table, zscores is not None)
    return "".join(line + "\n" for line in lines), zscores.warnings() if zscores else []


def _check_format(items: list[M.Requested], flags: Flags) -> None:
    """Each -R format computes its own measures: say which ones when others are asked for."""
    allowed = M.FORMAT_MEASURES[flags.rel_format]
    wrong = [item.base for item in items if item.base not in allowed]
    if not wrong:
        return
    sets = {"qrels": "official or all_trec", "prefs": "all_prefs or prefs", "qrels_jg": "qrels_jg"}
    fits = next(fmt for fmt, names in M.FORMAT_MEASURES.items() if wrong[0] in names)
    own = sets.get(flags.rel_format, sets["prefs"])
    asked = "" if flags.requested else " (no -m: the default set, official)"
    raise MetricError(
        f"trec_eval: {', '.join(wrong[:3])}{' ...' if len(wrong) > 3 else ''} need{'s' if len(wrong) == 1 else ''} "
        f"-R {fits}, not -R {flags.rel_format}{asked}; with -R {flags.rel_format} ask for -m {own}"
    )


def _read_trec_run(path: str) -> Run:
    run = read_run(path, format="trec")
    if run.score_from == "rank":  # trec_eval itself refuses a run without scores: a drop-in must not guess
        raise InputError(
            path, "a run without scores (qid docid rank) is not a trec_eval run", line=1,
            expected="qid Q0 docid rank score tag", hint="stagewise eval reads it, ordered by its rank column",
        )  # fmt: skip
    return run


Column = tuple[M.Requested, str, np.ndarray | list[str]]


@dataclass
class Table:
    """What trec_eval prints: the evaluated topics (byte order), each printed measure's per-topic values, the
    number of topics averaged over and the run's tag."""

    query_ids: list[str]
    columns: list[Column]
    n: int
    tag: str | None


def _qrels_table(files: Sequence[str], items: list[M.Requested], flags: Flags) -> Table:
    """-R qrels: the standard measures, on stagewise's kernels."""
    qrels = read_qrels(files[0], format="trec")
    run = _read_trec_run(files[1])
    ctx = build_context(qrels, run, flags.conventions())
    columns = _columns(items, ctx, flags.collection_size)
    return Table([str(q) for q in ctx.query_ids.tolist()], columns, ctx.n_queries, run.tag)


def _prefs_table(files: Sequence[str], items: list[M.Requested], flags: Flags) -> Table:
    """-R prefs and -R qrels_prefs: each topic's preferences counted against its ranking (none, under -c, for
    a topic absent from the run)."""
    prefs = read_prefs(files[0], sub_groups=flags.rel_format == "prefs")
    run = _read_trec_run(files[1])
    rankings = prefs_rankings(run, double=flags.ties == "docid-double", max_ret=flags.max_ret)
    topics = [q for q in prefs.topics if flags.complete or q in rankings]
    if not topics:
        raise StagewiseError(
            f"no query has both results in run {run.name!r} and judgements in {prefs.source!r}; "
            "check that the query ids of the two files match"
        )
    values = [topic_values(topic_counts(prefs.topics[q], rankings.get(q, []), prefs.source, q)) for q in topics]
    columns: list[Column] = [
        (item, item.base, np.array([v[item.base] for v in values])) for item in items if item.base in values[0]
    ]
    return Table(topics, columns, len(topics), run.tag)


def _jg_table(files: Sequence[str], items: list[M.Requested], flags: Flags) -> Table:
    """-R qrels_jg: map, P and Rprec_mult per judgement group, averaged over each topic's groups."""
    judgements = JG.read_qrels_jg(files[0])
    run = _read_trec_run(files[1])
    ctx = JG.group_context(judgements, run, flags.conventions())
    topics: list[str] = []
    columns: list[Column] = []
    for item in items:
        if item.base in M.JG_MEASURES:
            topics, arrays = JG.topic_values(item, ctx)
            columns += [(item, name, values) for name, values in zip(item.names, arrays, strict=True)]
    if not topics:  # only runid and num_q asked for
        topics = sorted({q.split("\t", 1)[0] for q in ctx.query_ids.tolist()})
    return Table(topics, columns, len(topics), run.tag)


_TABLES = {"qrels": _qrels_table, "prefs": _prefs_table, "qrels_prefs": _prefs_table, "qrels_jg": _jg_table}


def _standardised(column: Column, query_ids: list[str], zscores: ZScores) -> Column:
    """A column as z-scores (a gm_ measure's per-topic log, which trec_eval stores, is what is standardised);
    relstring stays as it is."""
    item, name, values = column
    if item.base == "relstring":
        return column
    array = np.asarray(values, dtype=np.float64)
    if item.base in M.GEOMETRIC:
        array = K.geometric_log(array)
    return item, name, zscores.convert(name, query_ids, array)


def _columns(items: list[M.Requested], ctx: EvalContext, collection_size: int) -> list[Column]:
    """Each printed measure's per-topic values in topic order (a topic missing from the run: 0, or '' for
    relstring); runid and num_q have no column (they are summary lines only)."""
    missing = ~ctx.in_run
    columns: list[Column] = []
    for item in items:
        if item.base in ("runid", "num_q"):
            continue
        if item.base == "relstring":
            strings = M.relstrings(ctx, int(item.values[0]))
            columns.append(
                (item, item.names[0], [f"'{s}'" if not m else "''" for s, m in zip(strings, missing, strict=True)])
            )
            continue
        for name, values in zip(item.names, M.compute(item, ctx, collection_size), strict=True):
            if missing.any() and item.base != "num_rel":
                values = np.where(missing, 0.0, values)
            columns.append((item, name, values))
    return columns


def _per_query_lines(table: Table, z: bool) -> list[str]:
    """-q's lines: every topic's value of every measure that has one, topic by topic."""
    lines: list[str] = []
    for q, qid in enumerate(table.query_ids):
        for item, name, values in table.columns:
            if item.base not in M.SUMMARY_ONLY:
                lines.append(_format(name, qid, values[q], item.base in M.COUNTS, z))
    return lines


def _summary_lines(items: list[M.Requested], table: Table, z: bool) -> list[str]:
    """The "all" lines: runid and num_q first (they come first in the table order), then each measure's sum
    (counts), geometric mean (gm_*; under -Z the columns already hold the standardised logs) or mean over the
    topics."""
    lines: list[str] = []
    n = table.n
    for item in items:
        if item.base == "runid":
            lines.append(_format("runid", "all", table.tag or "", False))
        elif item.base == "num_q":
            lines.append(_format("num_q", "all", float(n), True, z))
    for item, name, values in table.columns:
        if item.base == "relstring":
            continue
        array = np.asarray(values, dtype=np.float64)
        if item.base in M.COUNTS:
            total = float(array.sum())
        elif item.base in M.GEOMETRIC:
            total = float(np.exp((array if z else K.geometric_log(array)).mean()))
        else:
            total = float(array.sum() / n)
        lines.append(_format(name, "all", total, item.base in M.COUNTS, z))
    return lines


def _integer(flag: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise StagewiseError(f"trec_eval: {flag} needs an integer, got {value!r}") from None
    if not -(2**63) <= number < 2**63:  # trec_eval's C long; numpy would raise OverflowError deep inside
        raise StagewiseError(f"trec_eval: {flag} must be an integer from {-(2**63):,} to {2**63 - 1:,}; got {value}")
    return number


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point that prints to stdout and returns an exit code (2 for bad input)."""
    try:
        text, warnings = evaluate_command(sys.argv[1:] if argv is None else argv)
        sys.stdout.write(text)
        for warning in warnings:
            sys.stderr.write(f"stagewise: warning: {warning}\n")
    except StagewiseError as exc:
        sys.stderr.write(f"stagewise: error: {exc}\n")
        return 2
    return 0
