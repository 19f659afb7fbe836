"""Slow, deliberately simple reference implementation of trec_eval 10 (``-m all_trec``).

This module is a *test oracle*: every measure is written as directly as possible from its
definition (see ``docs/trec_eval_semantics.md``), recomputing prefix counts from scratch instead of
sharing state.  Speed is irrelevant; clarity and fidelity to trec_eval's observable behaviour are
the only goals.  Standard library only.

Main entry points
-----------------
* :func:`read_qrels`, :func:`read_run`, :func:`read_run_id` - parse TREC files like trec_eval does.
* :func:`evaluate_naive` - per-topic values (``qid -> output name -> value``).
* :func:`summarize_naive` - the ``all`` values, aggregated the way trec_eval does.
* :func:`format_trec_eval` - the exact text trec_eval prints (for byte-for-byte comparisons).

Measures are requested with the strings trec_eval accepts after ``-m``: nicknames (``official``,
``all_trec``, ``set``) or ``name`` / ``name.params`` (``P.5,7,3``, ``ndcg.1=3,2=9``).
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

Qrels = dict[str, dict[str, int]]
Run = dict[str, list[tuple[str, float]]]
Value = float | str
PerQuery = dict[str, dict[str, Value]]

MIN_GEO_MEAN = 0.00001
INFAP_EPSILON = 0.00001
NONPOOL = -1  # retrieved doc absent from the topic's qrels
UNJUDGED = -2  # retrieved doc present in qrels with a negative label
BOGUS_DOCNO = "ceci_nest_pas_un_docno"

# Printing / computing order of trec_eval's measure table (prefs & qrels_jg measures omitted).
MEASURE_ORDER: tuple[str, ...] = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref",
    "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel",
    "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P",
    "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "yaap", "rbp", "rbp_resid", "unj",
)  # fmt: skip

NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
        "bpref", "recip_rank", "iprec_at_recall", "P",
    ),
    "all_trec": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
        "bpref", "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp",
        "rbp_resid", "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P",
        "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G",
        "set_P", "set_recall", "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret",
    ),
    "set": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
        "set_relative_P", "set_map", "set_F",
    ),
}  # fmt: skip

STANDARD_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
ELEVEN_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

# Parameter styles.
INT_CUTOFF_DEFAULTS: dict[str, tuple[int, ...]] = {
    "P": STANDARD_CUTOFFS,
    "recall": STANDARD_CUTOFFS,
    "ndcg_cut": STANDARD_CUTOFFS,
    "map_cut": STANDARD_CUTOFFS,
    "relative_P": STANDARD_CUTOFFS,
    "success": (1, 5, 10),
    "unj": (5, 10, 20),
}
FLOAT_CUTOFF_DEFAULTS: dict[str, tuple[float, ...]] = {
    "iprec_at_recall": ELEVEN_POINTS,
    "Rprec_mult": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
}
FLOAT_PARAM_DEFAULTS: dict[str, tuple[float, ...]] = {
    "utility": (1.0, -1.0, 0.0, 0.0),
    "11pt_avg": ELEVEN_POINTS,
    "set_F": (1.0,),
    "relstring": (10.0,),
}
PAIR_PARAM_MEASURES = frozenset({"G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "rbp", "rbp_resid"})
COUNT_MEASURES = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})
GEOMETRIC_MEASURES = frozenset({"gm_map", "gm_bpref"})
NOT_PRINTED_PER_QUERY = frozenset({"runid", "num_q", "gm_map", "gm_bpref"})


# --------------------------------------------------------------------------------------------
# C-like number parsing helpers
# --------------------------------------------------------------------------------------------

_INT_PREFIX = re.compile(r"\s*([+-]?\d+)")
_FLOAT_PREFIX = re.compile(r"\s*([+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))", re.I)


def c_atol(text: str) -> int:
    """``atol``: value of the leading integer prefix, 0 if there is none."""
    match = _INT_PREFIX.match(text)
    return int(match.group(1)) if match else 0


def c_atof(text: str) -> float:
    """``atof``: value of the leading floating point prefix, 0.0 if there is none."""
    match = _FLOAT_PREFIX.match(text)
    return float(match.group(1)) if match else 0.0


def c_lround(x: float) -> int:
    """C ``lround``: nearest integer, halves rounded away from zero."""
    if x < 0:
        return -c_lround(-x)
    base = math.floor(x)
    return base + 1 if x - base >= 0.5 else base


def c_trunc(x: float) -> int:
    """C cast of a double to ``long`` (truncation toward zero)."""
    return int(x)


def c_div(num: float, den: float) -> float:
    """IEEE division as C does it (x/0 gives inf or nan instead of raising)."""
    if den == 0:
        if num == 0 or math.isnan(num):
            return math.nan
        return math.copysign(math.inf, num) * math.copysign(1.0, den)
    return num / den


# --------------------------------------------------------------------------------------------
# File parsing
# --------------------------------------------------------------------------------------------


def read_qrels(path: str | Path) -> Qrels:
    """Parse a 4-column qrels file (``qid iter docno rel``); lines starting with ``#`` are comments."""
    qrels: Qrels = {}
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, 1):
            if line.startswith("#"):
                continue
            fields = line.split()
            if len(fields) != 4:
                raise ValueError(f"{path}:{number}: malformed qrels line")
            qid, _iteration, docno, rel = fields
            topic = qrels.setdefault(qid, {})
            if docno in topic:
                raise ValueError(f"{path}:{number}: duplicate qrels entry {qid} {docno}")
            topic[docno] = c_atol(rel)
    return qrels


def _run_lines(path: str | Path) -> Iterable[list[str]]:
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            fields = stripped.split()
            if len(fields) < 6:
                raise ValueError(f"{path}:{number}: malformed run line")
            yield fields


def read_run(path: str | Path) -> Run:
    """Parse a TREC run (``qid iter docno rank sim run_id [ignored...]``).

    The rank column is ignored.  Docnos are kept in file order; duplicates are kept (trec_eval
    rejects them at evaluation time, and so does :func:`evaluate_naive`).
    """
    run: Run = {}
    for fields in _run_lines(path):
        run.setdefault(fields[0], []).append((fields[2], c_atof(fields[4])))
    return run


def read_run_id(path: str | Path) -> str | None:
    """The run id trec_eval prints: the 6th field of the last non-comment line."""
    runid: str | None = None
    for fields in _run_lines(path):
        runid = fields[5]
    return runid


# --------------------------------------------------------------------------------------------
# Measure requests
# --------------------------------------------------------------------------------------------


@dataclass
class MeasureSpec:
    """One requested measure with its parsed parameters and output names."""

    base: str
    param_text: str | None
    names: list[str]
    int_cutoffs: list[int] = field(default_factory=list)
    float_cutoffs: list[float] = field(default_factory=list)
    float_params: list[float] = field(default_factory=list)
    pairs: list[tuple[str, float]] = field(default_factory=list)


def _parse_int_cutoffs(text: str) -> list[int]:
    values = sorted(c_atol(part) for part in text.split(","))
    if values[0] <= 0 or len(set(values)) != len(values):
        raise ValueError(f"bad cutoffs {text!r}")
    return values


def _parse_float_cutoffs(text: str) -> list[float]:
    values = sorted(c_atof(part) for part in text.split(","))
    if len(set(values)) != len(values):
        raise ValueError(f"duplicate cutoffs {text!r}")
    return values


def _parse_pairs(text: str) -> list[tuple[str, float]]:
    pairs = []
    for part in text.split(","):
        if part.count("=") != 1:
            raise ValueError(f"malformed pair parameters {text!r}")
        name, value = part.split("=")
        pairs.append((name, c_atof(value)))
    return pairs


def expand_measures(measures: Sequence[str] | None) -> list[MeasureSpec]:
    """Turn ``-m`` arguments into measure specs, in trec_eval's table (printing) order."""
    requested: set[str] = set()
    params: dict[str, str] = {}
    for arg in measures if measures else ["official"]:
        name, dot, param = arg.partition(".")
        if dot:
            if not param:
                raise ValueError(f"empty parameter in {arg!r}")
            params.setdefault(name, param)  # the first occurrence wins
        if name in NICKNAMES:
            requested.update(NICKNAMES[name])
        elif name in MEASURE_ORDER:
            requested.add(name)
        else:
            raise ValueError(f"unknown measure {name!r}")

    specs = []
    for base in MEASURE_ORDER:
        if base not in requested:
            continue
        text = params.get(base)
        spec = MeasureSpec(base=base, param_text=text, names=[])
        if base in INT_CUTOFF_DEFAULTS:
            spec.int_cutoffs = _parse_int_cutoffs(text) if text else list(INT_CUTOFF_DEFAULTS[base])
            spec.names = [f"{base}_{cut}" for cut in spec.int_cutoffs]
        elif base in FLOAT_CUTOFF_DEFAULTS:
            spec.float_cutoffs = _parse_float_cutoffs(text) if text else list(FLOAT_CUTOFF_DEFAULTS[base])
            spec.names = [f"{base}_{cut:3.2f}" for cut in spec.float_cutoffs]
        elif base in FLOAT_PARAM_DEFAULTS:
            spec.float_params = [c_atof(p) for p in text.split(",")] if text else list(FLOAT_PARAM_DEFAULTS[base])
            spec.names = [f"{base}_{text}" if text else base]
        elif base in PAIR_PARAM_MEASURES:
            spec.pairs = _parse_pairs(text) if text else []
            spec.names = [f"{base}_{text}" if text else base]
        else:
            spec.names = [base]
        specs.append(spec)
    return specs


# --------------------------------------------------------------------------------------------
# Per-topic data
# --------------------------------------------------------------------------------------------


@dataclass
class Topic:
    """Everything a measure may look at for one topic."""

    labels: list[int]  # label of each ranked doc, rank order (NONPOOL / UNJUDGED for unknown)
    judgments: dict[str, int]  # the topic's qrels
    rel_level: int
    num_docs_in_coll: int

    @property
    def ret(self) -> int:
        return len(self.labels)

    def is_rel(self, label: int) -> bool:
        return label >= self.rel_level

    @property
    def num_rel(self) -> int:
        return sum(1 for label in self.judgments.values() if label >= 0 and label >= self.rel_level)

    @property
    def num_rel_ret(self) -> int:
        return sum(1 for label in self.labels if label >= 0 and self.is_rel(label))

    def rels_at(self, k: int) -> int:
        """Relevant docs among the first k ranked docs (k may exceed the ranking length)."""
        return sum(1 for label in self.labels[: max(k, 0)] if self.is_rel(label))

    def precision_at(self, k: int) -> float:
        return self.rels_at(k) / k

    def level_counts(self) -> dict[int, int]:
        """Qrels entries per non-negative label."""
        counts: dict[int, int] = {}
        for label in self.judgments.values():
            if label >= 0:
                counts[label] = counts.get(label, 0) + 1
        return counts

    def num_rel_levels(self) -> int:
        counts = self.level_counts()
        return max(counts) + 1 if counts else 0

    def relevant_ranks(self) -> list[int]:
        """1-based ranks of the relevant ranked docs."""
        return [i + 1 for i, label in enumerate(self.labels) if self.is_rel(label)]


def as_c_float(score: float) -> float:
    """A double rounded to a C ``float`` (by the struct module), as trec_eval 9 stores a score; past the float
    range's rounding threshold, infinity, as IEEE rounding gives."""
    if abs(score) >= 2.0**128 - 2.0**103:
        return math.copysign(math.inf, score)
    return struct.unpack("f", struct.pack("f", score))[0]


def rank_documents(docs: Sequence[tuple[str, float]], float_scores: bool = False) -> list[str]:
    """trec_eval order: score descending, ties by docno descending (byte order). trec_eval 10 compares the
    scores as doubles; with ``float_scores``, as C floats (trec_eval 9, pytrec_eval)."""
    as_bytes = [
        (docno, as_c_float(score) if float_scores else score, docno.encode("utf-8", "surrogateescape"))
        for docno, score in docs
    ]
    # Two stable passes: secondary key first (docno descending), then score descending.
    as_bytes.sort(key=lambda item: item[2], reverse=True)
    as_bytes.sort(key=lambda item: item[1], reverse=True)
    return [docno for docno, _score, _raw in as_bytes]


def build_topic(
    judgments: Mapping[str, int],
    docs: Sequence[tuple[str, float]],
    rel_level: int,
    max_ret: int | None,
    judged_only: bool,
    num_docs_in_coll: int,
    float_scores: bool = False,
) -> Topic:
    ranked = rank_documents(docs, float_scores)
    if max_ret is not None:
        ranked = ranked[: max(max_ret, 0)]
    if len(set(ranked)) != len(ranked):
        raise ValueError("duplicate docs in a topic of the run")
    labels = []
    for docno in ranked:
        if docno not in judgments:
            labels.append(NONPOOL)
        elif judgments[docno] < 0:
            labels.append(UNJUDGED)
        else:
            labels.append(judgments[docno])
    if judged_only:
        labels = [label for label in labels if label >= 0]
    return Topic(labels, dict(judgments), rel_level, num_docs_in_coll)


# --------------------------------------------------------------------------------------------
# Gains (ndcg, ndcg_rel, Rndcg, G, rbp)
# --------------------------------------------------------------------------------------------


@dataclass
class GainEntry:
    level: int
    gain: float
    count: int


def _merge_sort(items: list[GainEntry], cmp: Callable[[GainEntry, GainEntry], int]) -> list[GainEntry]:
    """Top-down merge sort (first half n//2), taking from the left run on ties: glibc's msort."""
    if len(items) <= 1:
        return list(items)
    half = len(items) // 2
    left, right = _merge_sort(items[:half], cmp), _merge_sort(items[half:], cmp)
    merged = []
    while left and right:
        merged.append(left.pop(0) if cmp(left[0], right[0]) <= 0 else right.pop(0))
    return merged + left + right


def gain_table(topic: Topic, pairs: Sequence[tuple[str, float]]) -> list[GainEntry]:
    """Gain entries sorted the way trec_eval sorts them (ascending gain, truncating comparator)."""
    counts = topic.level_counts()
    entries = [GainEntry(int(name), value, 0) for name, value in pairs if re.fullmatch(r"[+-]?\d+", name)]
    for level in range(topic.num_rel_levels()):
        given = [entry for entry in entries if entry.level == level]
        if given:
            given[0].count = counts.get(level, 0)
        else:
            entries.append(GainEntry(level, float(level), counts.get(level, 0)))
    return _merge_sort(entries, lambda a, b: c_trunc(a.gain - b.gain))


def gain_of(label: int, table: Sequence[GainEntry]) -> float:
    for entry in table:
        if entry.level == label:
            return entry.gain
    return 0.0


def ideal_gains(table: Sequence[GainEntry]) -> list[float]:
    """Positive gains of the ideal ranking, from the highest-gain entry downward."""
    result: list[float] = []
    for entry in reversed(table):
        if entry.count == 0:
            continue
        if entry.gain <= 0:
            break
        result.extend([entry.gain] * entry.count)
    return result


def discount(rank: int) -> float:
    return math.log2(rank + 1)


def dcg_at(gains: Sequence[float], k: int) -> float:
    return sum(g / discount(i + 1) for i, g in enumerate(gains[:k]) if g != 0)


# --------------------------------------------------------------------------------------------
# Measures.  Each returns the values for spec.names, in order.
# --------------------------------------------------------------------------------------------


def _average_precision(topic: Topic, max_rank: int | None = None) -> float:
    if topic.num_rel == 0:
        return 0.0
    ranks = [r for r in topic.relevant_ranks() if max_rank is None or r <= max_rank]
    return sum((n + 1) / r for n, r in enumerate(ranks)) / topic.num_rel


def m_map(topic: Topic, spec: MeasureSpec) -> list[Value]:
    return [_average_precision(topic) if topic.num_rel_ret else 0.0]


def m_rprec(topic: Topic, spec: MeasureSpec) -> list[Value]:
    r = topic.num_rel
    if r == 0 or topic.ret == 0:
        return [0.0]
    return [topic.rels_at(r) / r]


def _bpref(topic: Topic) -> float:
    r = topic.num_rel
    if r == 0:
        return 0.0
    judged_nonrel_total = sum(1 for label in topic.judgments.values() if 0 <= label < topic.rel_level)
    total = 0.0
    for i, label in enumerate(topic.labels):
        if label < 0 or not topic.is_rel(label):
            continue
        nonrel_above = sum(1 for other in topic.labels[:i] if 0 <= other < topic.rel_level)
        if nonrel_above == 0:
            total += 1.0
        else:
            total += 1.0 - min(nonrel_above, r) / min(judged_nonrel_total, r)
    return total / r


def m_bpref(topic: Topic, spec: MeasureSpec) -> list[Value]:
    return [_bpref(topic)]


def m_recip_rank(topic: Topic, spec: MeasureSpec) -> list[Value]:
    ranks = topic.relevant_ranks()
    return [1.0 / ranks[0] if ranks else 0.0]


def _interpolated_precision(topic: Topic, k: int) -> float:
    """Max precision at ranks >= the rank of the k-th relevant doc (k=0: the first one)."""
    ranks = topic.relevant_ranks()
    if k > len(ranks):
        return 0.0
    if not ranks:
        return c_div(0.0, topic.ret)
    start = ranks[max(k, 1) - 1]
    return max(topic.precision_at(i) for i in range(start, topic.ret + 1))


def m_iprec_at_recall(topic: Topic, spec: MeasureSpec) -> list[Value]:
    r = topic.num_rel
    return [_interpolated_precision(topic, c_lround(x * r)) for x in spec.float_cutoffs]


def m_11pt_avg(topic: Topic, spec: MeasureSpec) -> list[Value]:
    r = topic.num_rel
    points = [_interpolated_precision(topic, c_lround(x * r)) for x in spec.float_params]
    return [sum(points) / len(points)]


def m_p(topic: Topic, spec: MeasureSpec) -> list[Value]:
    return [topic.precision_at(k) for k in spec.int_cutoffs]


def m_relstring(topic: Topic, spec: MeasureSpec) -> list[Value]:
    length = max(min(c_trunc(spec.float_params[0]), topic.ret), 0)
    chars = []
    for label in topic.labels[:length]:
        if label > 9:
            chars.append(">")
        elif label >= 0:
            chars.append(str(label))
        elif label == NONPOOL:
            chars.append("-")
        elif label == UNJUDGED:
            chars.append(".")
        else:
            chars.append("<")
    return ["".join(chars)]


def m_recall(topic: Topic, spec: MeasureSpec) -> list[Value]:
    r = topic.num_rel
    return [topic.rels_at(k) / r if r else 0.0 for k in spec.int_cutoffs]


def m_infap(topic: Topic, spec: MeasureSpec) -> list[Value]:
    total = 0.0
    for j, label in enumerate(topic.labels):
        if label < 0 or not topic.is_rel(label):
            continue
        above = topic.labels[:j]
        rel = sum(1 for x in above if x >= 0 and topic.is_rel(x))  # relevant above
        nonrel = sum(1 for x in above if 0 <= x < topic.rel_level)
        unjudged = sum(1 for x in above if x == UNJUDGED)
        if j == 0:
            total += 1.0
        else:
            total += 1.0 / (j + 1) + (j / (j + 1)) * ((rel + nonrel + unjudged) / j) * (
                (rel + INFAP_EPSILON) / (rel + nonrel + 2 * INFAP_EPSILON)
            )
    r = topic.num_rel
    return [total / r if r else total]


def m_rprec_mult(topic: Topic, spec: MeasureSpec) -> list[Value]:
    values: list[Value] = []
    for x in spec.float_cutoffs:
        cut = c_trunc(x * topic.num_rel + 0.9)
        values.append(topic.precision_at(cut) if cut > 0 else 0.0)
    return values


def m_utility(topic: Topic, spec: MeasureSpec) -> list[Value]:
    if len(spec.float_params) != 4:
        raise ValueError("utility needs exactly 4 coefficients")
    a, b, c, d = spec.float_params
    rr, ret, r = topic.num_rel_ret, topic.ret, topic.num_rel
    return [a * rr + b * (ret - rr) + c * (r - rr) + d * (topic.num_docs_in_coll + rr - ret - r)]


def m_bing(topic: Topic, spec: MeasureSpec) -> list[Value]:
    ranks = topic.relevant_ranks()
    if not ranks:
        return [0.0]
    total = sum(1.0 / math.log2(2 + (rank - (n + 1))) for n, rank in enumerate(ranks))
    return [total / topic.num_rel]


def m_g(topic: Topic, spec: MeasureSpec) -> list[Value]:
    table = gain_table(topic, spec.pairs)
    ideal = ideal_gains(table)
    total_ideal = sum(ideal)
    if total_ideal <= 0:
        return [0.0]
    result = 0.0
    for i in range(topic.ret):
        gain = gain_of(topic.labels[i], table)
        if gain == 0:
            continue
        gained = sum(gain_of(label, table) for label in topic.labels[: i + 1])
        cost = sum(max(ideal[j] if j < len(ideal) else 0.0, 1.0) for j in range(i + 1))
        result += gain / math.log2(2 + cost - gained)
    return [result / total_ideal]


def _run_gains(topic: Topic, table: Sequence[GainEntry]) -> list[float]:
    return [gain_of(label, table) for label in topic.labels]


def m_ndcg_family(topic: Topic, spec: MeasureSpec) -> list[Value]:
    table = gain_table(topic, spec.pairs)
    ideal = ideal_gains(table)
    dcg = dcg_at(_run_gains(topic, table), topic.ret)
    idcg = dcg_at(ideal, len(ideal))
    if spec.base == "dcg":
        return [dcg]
    if spec.base == "ideal_dcg":
        return [idcg]
    return [dcg / idcg if idcg > 0 else 0.0]


def m_ndcg_rel(topic: Topic, spec: MeasureSpec) -> list[Value]:
    table = gain_table(topic, spec.pairs)
    ideal = ideal_gains(table)
    gains = _run_gains(topic, table)
    num_ideal = len(ideal)
    total = 0.0
    positive_retrieved = 0
    for i, gain in enumerate(gains):
        if gain > 0:
            total += c_div(dcg_at(gains, i + 1), dcg_at(ideal, i + 1))
            positive_retrieved += 1
    total += (num_ideal - positive_retrieved) * c_div(dcg_at(gains, len(gains)), dcg_at(ideal, num_ideal))
    return [total / num_ideal if total > 0 else 0.0]


def m_rndcg(topic: Topic, spec: MeasureSpec) -> list[Value]:
    table = gain_table(topic, spec.pairs)
    if topic.num_rel == 0:
        return [0.0]
    ideal = ideal_gains(table)
    gains = _run_gains(topic, table)

    def ideal_at(i: int) -> float:  # 0-based position
        return ideal[i] if i < len(ideal) else 0.0

    # The ndcg values are sampled just before each position where the ideal gain changes value,
    # starting from the table's top gain; plus once at the end of the ranking if it is longer
    # than the ideal list.
    samples: list[float] = []
    previous = table[-1].gain if table else 0.0
    current = previous
    position = 0
    while position < topic.ret and current > 0:
        current = ideal_at(position)
        if current != previous:
            idcg = dcg_at(ideal, position)
            if idcg > 0:
                samples.append(dcg_at(gains, position) / idcg)
            previous = current
        position += 1
    if position < topic.ret:
        idcg = dcg_at(ideal, len(ideal))
        if idcg > 0:
            samples.append(dcg_at(gains, topic.ret) / idcg)
    while current > 0:
        current = ideal_at(position)
        if current != previous:
            idcg = dcg_at(ideal, position)
            if idcg > 0:
                samples.append(dcg_at(gains, topic.ret) / idcg)
            previous = current
        position += 1
    return [c_div(sum(samples), len(samples))]


def m_ndcg_cut(topic: Topic, spec: MeasureSpec) -> list[Value]:
    run_gains = [float(label) if label > 0 else 0.0 for label in topic.labels]
    ideal = sorted((float(v) for v in topic.judgments.values() if v > 0), reverse=True)
    values: list[Value] = []
    for k in spec.int_cutoffs:
        dcg = dcg_at(run_gains, k)
        idcg = dcg_at(ideal, k)
        values.append(dcg / idcg if idcg > 0 else dcg)
    return values


def m_map_cut(topic: Topic, spec: MeasureSpec) -> list[Value]:
    return [_average_precision(topic, k) for k in spec.int_cutoffs]


def m_relative_p(topic: Topic, spec: MeasureSpec) -> list[Value]:
    r = topic.num_rel
    return [topic.rels_at(k) / min(k, r) if r else 0.0 for k in spec.int_cutoffs]


def m_success(topic: Topic, spec: MeasureSpec) -> list[Value]:
    return [1.0 if topic.rels_at(k) > 0 else 0.0 for k in spec.int_cutoffs]


def m_set_p(topic: Topic, spec: MeasureSpec) -> list[Value]:
    return [topic.num_rel_ret / topic.ret if topic.ret else 0.0]


def m_set_relative_p(topic: Topic, spec: MeasureSpec) -> list[Value]:
    ret, r = topic.ret, topic.num_rel
    return [topic.num_rel_ret / min(ret, r) if ret and r else 0.0]


def m_set_recall(topic: Topic, spec: MeasureSpec) -> list[Value]:
    r = topic.num_rel
    return [topic.num_rel_ret / r if r else 0.0]


def m_set_map(topic: Topic, spec: MeasureSpec) -> list[Value]:
    ret, r, rr = topic.ret, topic.num_rel, topic.num_rel_ret
    return [(rr * rr) / (ret * r) if ret and r else 0.0]


def m_set_f(topic: Topic, spec: MeasureSpec) -> list[Value]:
    rr = topic.num_rel_ret
    if rr == 0:
        return [0.0]
    precision, recall = rr / topic.ret, rr / topic.num_rel
    beta = spec.float_params[0]
    return [(beta + 1.0) * precision * recall / (beta * precision + recall)]


def m_num_nonrel_judged_ret(topic: Topic, spec: MeasureSpec) -> list[Value]:
    return [float(sum(1 for label in topic.labels if 0 <= label < topic.rel_level))]


def m_yaap(topic: Topic, spec: MeasureSpec) -> list[Value]:
    ranks = topic.relevant_ranks()
    s = sum((n + 1) / rank for n, rank in enumerate(ranks))
    return [math.log((1.0 + s) / (1.0 + topic.num_rel - s))]


def _persistence(spec: MeasureSpec) -> float:
    p = 0.9
    for name, value in spec.pairs:
        if name == "p":
            p = value
    return p


def m_rbp(topic: Topic, spec: MeasureSpec) -> list[Value]:
    p = _persistence(spec)
    table = gain_table(topic, spec.pairs)
    if table:
        low, high = min(e.gain for e in table), max(e.gain for e in table)
        if low < 0 or high > 1:
            for entry in table:
                entry.gain = (entry.gain - low) / (high - low)
    total = sum(gain_of(label, table) * p**i for i, label in enumerate(topic.labels))
    return [(1.0 - p) * total]


def m_rbp_resid(topic: Topic, spec: MeasureSpec) -> list[Value]:
    p = _persistence(spec)
    unjudged = [i for i, label in enumerate(topic.labels) if label < 0]
    if not unjudged:
        return [0.0]
    return [p**topic.ret + (1 - p) * sum(p**i for i in unjudged)]


def m_unj(topic: Topic, spec: MeasureSpec) -> list[Value]:
    return [sum(1 for label in topic.labels[:k] if label < 0) / k for k in spec.int_cutoffs]


MEASURE_FUNCTIONS: dict[str, Callable[[Topic, MeasureSpec], list[Value]]] = {
    "num_ret": lambda topic, spec: [float(topic.ret)],
    "num_rel": lambda topic, spec: [float(topic.num_rel)],
    "num_rel_ret": lambda topic, spec: [float(topic.num_rel_ret)],
    "map": m_map,
    "gm_map": m_map,  # geometric averaging happens in summarize_naive
    "Rprec": m_rprec,
    "bpref": m_bpref,
    "recip_rank": m_recip_rank,
    "iprec_at_recall": m_iprec_at_recall,
    "P": m_p,
    "relstring": m_relstring,
    "recall": m_recall,
    "infAP": m_infap,
    "gm_bpref": m_bpref,
    "Rprec_mult": m_rprec_mult,
    "utility": m_utility,
    "11pt_avg": m_11pt_avg,
    "binG": m_bing,
    "G": m_g,
    "dcg": m_ndcg_family,
    "ideal_dcg": m_ndcg_family,
    "ndcg": m_ndcg_family,
    "ndcg_rel": m_ndcg_rel,
    "Rndcg": m_rndcg,
    "ndcg_cut": m_ndcg_cut,
    "map_cut": m_map_cut,
    "relative_P": m_relative_p,
    "success": m_success,
    "set_P": m_set_p,
    "set_relative_P": m_set_relative_p,
    "set_recall": m_set_recall,
    "set_map": m_set_map,
    "set_F": m_set_f,
    "num_nonrel_judged_ret": m_num_nonrel_judged_ret,
    "yaap": m_yaap,
    "rbp": m_rbp,
    "rbp_resid": m_rbp_resid,
    "unj": m_unj,
}

# Measures trec_eval forces to zero for a topic that is missing from the run (-c).
_RESET_FOR_MISSING = ("num_ret", "utility", "unj", "rbp_resid")


# --------------------------------------------------------------------------------------------
# Evaluation and aggregation
# --------------------------------------------------------------------------------------------


def evaluate_naive(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[tuple[str, float]]],
    measures: Sequence[str] | None = None,
    rel_level: int = 1,
    max_ret: int | None = None,
    complete: bool = False,
    judged_only: bool = False,
    num_docs_in_coll: int = 0,
    float_scores: bool = False,
) -> PerQuery:
    """Per-topic values, ``qid -> output name -> value``, topics in trec_eval's (strcmp) order.

    ``gm_map`` / ``gm_bpref`` hold the plain AP / bpref (trec_eval does not print them per topic);
    ``relstring`` holds a string; count measures hold floats with integral values.
    ``runid`` and ``num_q`` are summary-only and never appear here. ``float_scores`` orders the results
    as trec_eval 9 does, comparing scores as C floats.
    """
    specs = expand_measures(measures)
    results: PerQuery = {}
    for qid in sorted(qrels, key=lambda q: q.encode("utf-8", "surrogateescape")):
        missing = qid not in run
        if missing and not complete:
            continue
        docs = [(BOGUS_DOCNO, 1.0)] if missing else run[qid]
        topic = build_topic(qrels[qid], docs, rel_level, max_ret, judged_only, num_docs_in_coll, float_scores)
        values: dict[str, Value] = {}
        for spec in specs:
            if spec.base in ("runid", "num_q"):
                continue
            computed = MEASURE_FUNCTIONS[spec.base](topic, spec)
            if missing and spec.base in _RESET_FOR_MISSING:
                computed = [0.0] * len(computed)
            if missing and spec.base == "relstring":
                computed = [""]
            values.update(zip(spec.names, computed, strict=True))
        results[qid] = values
    if not results:
        raise ValueError("No queries with both results and relevance info")
    return results


def summarize_naive(
    per_query: PerQuery,
    measures: Sequence[str] | None = None,
    runid: str | None = None,
) -> dict[str, Value]:
    """The ``all`` values in printing order (no relstring), aggregated as trec_eval does."""
    specs = expand_measures(measures)
    n = len(per_query)
    summary: dict[str, Value] = {}
    for spec in specs:
        if spec.base == "runid":
            summary["runid"] = runid if runid is not None else ""
            continue
        if spec.base == "num_q":
            summary["num_q"] = float(n)
            continue
        if spec.base == "relstring":
            continue
        for name in spec.names:
            column = [float(values[name]) for values in per_query.values()]
            if spec.base in COUNT_MEASURES:
                summary[name] = sum(column)
            elif spec.base in GEOMETRIC_MEASURES:
                logs = [math.log(max(v, MIN_GEO_MEAN)) for v in column]
                summary[name] = math.exp(sum(logs) / n)
            else:
                summary[name] = sum(column) / n
    return summary


def _is_integer_measure(name: str) -> bool:
    return name in COUNT_MEASURES or name == "num_q"


def format_line(name: str, qid: str, value: Value) -> str:
    """One output line exactly as trec_eval prints it (without the newline)."""
    if name == "runid":
        return f"{name:<22}\t{qid}\t{value}"
    if isinstance(value, str):  # relstring
        return f"{name:<22}\t{qid}\t'{value}'"
    if _is_integer_measure(name):
        return f"{name:<22}\t{qid}\t{c_trunc(value)}"
    return f"{name:<22}\t{qid}\t{value:6.4f}"


def format_trec_eval(
    per_query: PerQuery,
    summary: Mapping[str, Value] | None,
    query_flag: bool = True,
) -> str:
    """The complete trec_eval output text for the given values."""
    lines = []
    if query_flag:
        for qid, values in per_query.items():
            for name, value in values.items():
                if name not in NOT_PRINTED_PER_QUERY:
                    lines.append(format_line(name, qid, value))
    if summary is not None:
        for name, value in summary.items():
            lines.append(format_line(name, "all", value))
    return "".join(line + "\n" for line in lines)
