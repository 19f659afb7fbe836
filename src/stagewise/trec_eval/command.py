"""``stagewise trec_eval [FLAGS] QRELS RUN``: trec_eval 10's command line and byte-identical output.

Supported flags: ``-q`` per-query lines, ``-c`` average over all judged topics (missing ones score 0),
``-n`` no summary, ``-J`` judged documents only, ``-M N`` at most N results per topic, ``-l N`` relevance
level, ``-N N`` collection size (for utility), ``-m MEASURE[.PARAMS]`` (repeatable; sets such as
``all_trec``), ``-h`` (or ``--help``) the flags and every measure with a line of description (``-h -m P``:
that measure's only), built from the measure table. Differences from trec_eval 10, all where trec_eval's
behaviour is undefined:

- ``rbp`` scales graded gains by the topic's real gain range; trec_eval reads its range variables
  uninitialised (the same numbers on its own test files).
- A judged topic absent from the run, without ``-c``, is skipped (trec_eval 10 repeats the previous topic).
- Gains given as ``ndcg.L=G`` are ordered exactly; trec_eval's comparator truncates gain differences
  below 1.0 to equal.
- Labels below -1 are read as "judged but unjudged" as trec_eval intends; trec_eval 10 crashes on them.
"""

from __future__ import annotations

import getopt
import sys
from collections.abc import Sequence

import numpy as np

from stagewise.data.readers import read_qrels, read_run
from stagewise.errors import StagewiseError
from stagewise.metrics import kernels as K
from stagewise.metrics.context import Conventions, build_context
from stagewise.trec_eval import measures as M

USAGE = """Usage: stagewise trec_eval [-h] [-q] [-c] [-n] [-J] [-l LEVEL] [-M MAX] [-N NUM_DOCS] \
[-m MEASURE[.PARAMS]]... [--ties docid|docid-double] QRELS RUN

A drop-in for trec_eval with byte-identical output.
  -q              print per-topic values as well as the summary ("all")
  -c              average over every topic in QRELS; topics missing from RUN score 0
  -n              no summary lines
  -J              judged documents only: drop unjudged results and close the gaps
  -l LEVEL        a label >= LEVEL is relevant (default 1)
  -M MAX          use at most MAX results per topic
  -N NUM_DOCS     number of documents in the collection (for utility)
  -m MEASURE      a measure or set: official (default), all_trec, set, or e.g. P.5,10 ndcg_cut.10
  --ties docid    scores compared as C floats, as trec_eval 9, pytrec_eval and ir_measures store them
                  (the default: scores equal in single precision tie, ordered by doc id descending)
  --ties docid-double
                  scores compared as doubles, as trec_eval 10.0 stores them
  -h, --help      this help; with -m, only the measures asked for
"""


def help_text(requested: Sequence[str] = ()) -> str:
    """The usage, then each measure (all of them, or those ``-m`` asked for) in printing order with its
    default parameters and a line of description, then the sets, as trec_eval's ``-h -m all_trec`` does."""
    names = [item.base for item in M.expand(requested)] if requested else list(M.ORDER)
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


def _format(name: str, qid: str, value: float | str, integer: bool) -> str:
    if isinstance(value, str):
        return f"{name:<22}\t{qid}\t{value}"
    if integer:
        return f"{name:<22}\t{qid}\t{int(value)}"
    return f"{name:<22}\t{qid}\t{value:6.4f}"


def run_trec_eval(argv: Sequence[str]) -> str:
    """The text trec_eval would print for ``argv`` (flags and the two files)."""
    argv = ["-h" if a == "--help" else a for a in argv]  # trec_eval's long option for -h
    try:
        options, files = getopt.gnu_getopt(list(argv), "hqcnJl:M:N:m:D:R:T:Z:ov", ["ties="])
    except getopt.GetoptError as exc:
        raise StagewiseError(f"trec_eval: {exc.msg}; stagewise trec_eval -h lists the flags and measures") from None
    if any(flag == "-h" for flag, _ in options):
        return help_text([value for flag, value in options if flag == "-m"])
    per_query = complete = no_summary = judged_only = False
    level, max_ret, collection_size = 1, None, 0
    ties = "docid"
    requested: list[str] = []
    for flag, value in options:
        if flag == "--ties":
            if value not in ("docid", "docid-double"):
                raise StagewiseError(f"trec_eval: --ties takes docid or docid-double, not {value!r}")
            ties = value
        elif flag == "-q":
            per_query = True
        elif flag == "-c":
            complete = True
        elif flag == "-n":
            no_summary = True
        elif flag == "-J":
            judged_only = True
        elif flag == "-l":
            level = _integer(flag, value)
        elif flag == "-M":
            max_ret = _integer(flag, value)
            max_ret = max_ret if max_ret > 0 else None
        elif flag == "-N":
            collection_size = _integer(flag, value)
        elif flag == "-m":
            requested.append(value)
        elif (flag == "-R" and value == "qrels") or (flag == "-T" and value == "trec_results") or flag in ("-D", "-v"):
            continue
        else:
            raise StagewiseError(f"trec_eval: flag {flag} {value} is not supported by stagewise's trec_eval")
    if len(files) != 2:
        raise StagewiseError(
            f"trec_eval: expected two files, QRELS and RUN; got {len(files)} "
            "(stagewise trec_eval -h lists the flags and measures)"
        )
    items = M.expand(requested)
    qrels = read_qrels(files[0], format="trec")
    run = read_run(files[1], format="trec")
    conventions = Conventions(
        relevance_level=level,
        ties=ties,
        missing="zero" if complete else "skip",
        max_ret=max_ret,
        judged_only=judged_only,
    )
    ctx = build_context(qrels, run, conventions)
    missing = ~ctx.in_run

    columns: list[tuple[M.Requested, str, np.ndarray | list[str]]] = []
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

    lines: list[str] = []
    if per_query:
        for q, qid in enumerate(ctx.query_ids.tolist()):
            for item, name, values in columns:
                if item.base in M.SUMMARY_ONLY:
                    continue
                value = values[q]
                lines.append(_format(name, qid, value, item.base in M.COUNTS))
    if not no_summary:
        n = ctx.n_queries
        for item in items:
            if item.base == "runid":
                lines.append(_format("runid", "all", run.tag or "", False))
            elif item.base == "num_q":
                lines.append(_format("num_q", "all", float(n), True))
        summary_columns = [c for c in columns if c[0].base != "relstring"]
        # runid and num_q come first in the table order, so they precede every other summary line.
        for item, name, values in summary_columns:
            array = np.asarray(values, dtype=np.float64)
            if item.base in M.COUNTS:
                total = float(array.sum())
            elif item.base in M.GEOMETRIC:
                total = float(np.exp(K.geometric_log(array).mean()))
            else:
                total = float(array.sum() / n)
            lines.append(_format(name, "all", total, item.base in M.COUNTS))
    return "".join(line + "\n" for line in lines)


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
        sys.stdout.write(run_trec_eval(sys.argv[1:] if argv is None else argv))
    except StagewiseError as exc:
        sys.stderr.write(f"stagewise: error: {exc}\n")
        return 2
    return 0
