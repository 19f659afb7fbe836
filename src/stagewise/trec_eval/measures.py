"""What the trec_eval drop-in adds to the measures: printing order, nicknames, ``-m name[.params]`` and names.

Each requested measure turns into output names (``P_5``, ``ndcg_cut_10``) and per-query value arrays. A measure
whose trec_eval form with its default parameters is a stagewise family (:data:`SAME_AS_FAMILY`: ``P``,
``recip_rank``, ``ndcg_cut``, ``map``...) is computed by that family, found through the one table
:data:`stagewise.metrics.measures.TREC_EVAL_NAMES`. Only what trec_eval parameterises its own way stays here:
``level=gain`` tables (``ndcg``, ``dcg``, ``G``, ``rbp``...), ``utility`` with the collection size of ``-N``,
``11pt_avg`` and ``set_F`` with their values, ``yaap`` (no family) and ``relstring`` (a string, not a number).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stagewise.errors import MetricError
from stagewise.metrics import kernels as K
from stagewise.metrics import walks as W
from stagewise.metrics.context import EvalContext
from stagewise.metrics.measures import TREC_EVAL_NAMES, Measure
from stagewise.metrics.measures import compute as family_values

ORDER: tuple[str, ...] = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref",
    "Rprec_mult", "utility", "11pt_avg", "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel",
    "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P",
    "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "yaap", "rbp", "rbp_resid", "unj",
)  # fmt: skip

# The measures of -R prefs / -R qrels_prefs (stagewise.trec_eval.prefs_measures) and of -R qrels_jg
# (stagewise.trec_eval.judgement_groups). They need those inputs; ORDER's measures need -R qrels (the default).
PREFS_MEASURES: tuple[str, ...] = (
    "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair",
    "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp",
)  # fmt: skip
JG_MEASURES: tuple[str, ...] = ("map_avgjg", "P_avgjg", "Rprec_mult_avgjg")
# trec_eval's whole measure table, in its printing order (measures.c).
TABLE_ORDER: tuple[str, ...] = (
    ORDER[: ORDER.index("yaap")] + PREFS_MEASURES + JG_MEASURES + ORDER[ORDER.index("yaap") :]
)
# Which measures each -R format can compute (runid and num_q need no judgements).
FORMAT_MEASURES: dict[str, frozenset[str]] = {
    "qrels": frozenset(ORDER),
    "prefs": frozenset({"runid", "num_q", *PREFS_MEASURES}),
    "qrels_prefs": frozenset({"runid", "num_q", *PREFS_MEASURES}),
    "qrels_jg": frozenset({"runid", "num_q", *JG_MEASURES}),
}

NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ORDER[:12],
    "all_trec": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
        "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP",
        "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
        "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
        "set_F", "num_nonrel_judged_ret",
    ),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
    "all_prefs": ("runid", "num_q", *PREFS_MEASURES),
    "prefs": ("runid", "num_q", *PREFS_MEASURES[:6]),
    "qrels_jg": ("runid", "num_q", *JG_MEASURES),
}  # fmt: skip
NICKNAMES["trec"] = NICKNAMES["official"]

# One line per measure for `stagewise trec_eval -h` (trec_eval's own -h text is paragraphs; these are its gist).
# tests/test_trec_eval_help.py checks that every name of ORDER has one and that there is none besides.
DESCRIPTIONS: dict[str, str] = {
    "runid": "the run's tag, from the results file",
    "num_q": "number of topics the results are averaged over",
    "num_ret": "documents retrieved, summed over topics",
    "num_rel": "relevant documents in the qrels, summed over topics",
    "num_rel_ret": "relevant documents retrieved, summed over topics",
    "map": "mean average precision: precision at each relevant document's rank, averaged over R",
    "gm_map": "geometric mean over topics of average precision, each floored at 0.00001",
    "Rprec": "precision after R documents, R = the topic's relevant documents",
    "bpref": "binary preference: relevant documents not outranked by judged non-relevant ones",
    "recip_rank": "reciprocal rank of the first relevant document",
    "iprec_at_recall": "interpolated precision (the best precision at any recall >= x) at recall levels x",
    "P": "precision at cutoffs k: relevant documents in the top k, over k",
    "relstring": "the labels of the top N documents as a string (per topic only)",
    "recall": "recall at cutoffs k: relevant documents in the top k, over R",
    "infAP": "inferred AP (Yilmaz and Aslam) from sampled judgements; label -1 marks an unsampled document",
    "gm_bpref": "geometric mean over topics of bpref, each floored at 0.00001",
    "Rprec_mult": "precision after x * R documents, for multipliers x",
    "utility": "a*rel_ret + b*nonrel_ret + c*rel_missed + d*nonrel_missed (params a,b,c,d; -N sets the collection)",
    "11pt_avg": "mean interpolated precision at recall 0.0, 0.1, ..., 1.0 (or the levels given)",
    "binG": "binary G: each relevant document over log2(2 + non-relevant documents above it), over R",
    "G": "gain-based G: each document's gain over log2(2 + ideal gain so far - gain so far), over the ideal",
    "dcg": "discounted cumulative gain, gain / log2(rank + 1); params level=gain map labels to gains",
    "ideal_dcg": "DCG of the ideal ranking of all judged documents",
    "ndcg": "normalised DCG over the whole ranking; params level=gain map labels to gains",
    "ndcg_rel": "mean over the relevant documents of nDCG at each one's rank",
    "Rndcg": "mean nDCG sampled where the ideal gain steps down",
    "ndcg_cut": "nDCG at cutoffs k, the ideal cut at k too",
    "map_cut": "average precision counting only the top k, at cutoffs k",
    "relative_P": "relevant documents in the top k, over min(k, R), at cutoffs k",
    "success": "1 if a relevant document is in the top k, at cutoffs k",
    "set_P": "precision of the whole retrieved set",
    "set_relative_P": "relevant retrieved over min(retrieved, R)",
    "set_recall": "recall of the whole retrieved set",
    "set_map": "rel_ret^2 / (retrieved * R): set precision times set recall",
    "set_F": "F-measure of the retrieved set, (beta + 1) P R / (beta P + R); param beta",
    "num_nonrel_judged_ret": "judged non-relevant documents retrieved, summed over topics",
    "yaap": "yet another AP: log((1 + s) / (1 + R - s)), s the sum of precisions at relevant documents",
    "rbp": "rank-biased precision (Moffat and Zobel), persistence p (param p=0.9; level=gain too)",
    "rbp_resid": "RBP's residual: the weight still open because of unjudged documents (param p)",
    "unj": "share of the top k that is unjudged, at cutoffs k",
}
# The -R prefs / qrels_prefs and -R qrels_jg measures, placed where trec_eval's table puts them (before yaap).
_ELSEWHERE = {
    "prefs_num_prefs_poss": "preferences judged, summed over topics (-R prefs or qrels_prefs)",
    "prefs_num_prefs_ful": "preferences the ranking fulfils (one of the pair unretrieved: the retrieved one wins)",
    "prefs_num_prefs_ful_ret": "preferences fulfilled between two retrieved documents",
    "prefs_simp": "preferences fulfilled / judged; a pair neither retrieved counts as failed",
    "prefs_pair": "mean over document pairs of the share of judgement groups whose preference is kept",
    "prefs_avgjg": "mean over judgement groups (users) of fulfilled / judged",
    "prefs_avgjg_Rnonrel": "prefs_avgjg with each group's non-relevant documents cut or padded to its R",
    "prefs_simp_ret": "prefs_simp over preferences between two retrieved documents only",
    "prefs_pair_ret": "prefs_pair over pairs of two retrieved documents only",
    "prefs_avgjg_ret": "prefs_avgjg over preferences between two retrieved documents only",
    "prefs_avgjg_Rnonrel_ret": "prefs_avgjg_Rnonrel over retrieved documents only",
    "prefs_simp_imp": "prefs_simp leaving out preferences between two unretrieved documents",
    "prefs_pair_imp": "prefs_pair leaving out pairs of two unretrieved documents",
    "prefs_avgjg_imp": "prefs_avgjg leaving out preferences between two unretrieved documents",
    "map_avgjg": "AP per judgement group (-R qrels_jg: qrels whose iteration column names the group), averaged",
    "P_avgjg": "precision at cutoffs k per judgement group, averaged over the topic's groups",
    "Rprec_mult_avgjg": "precision after x * R documents per judgement group, averaged, for multipliers x",
}
DESCRIPTIONS = {name: DESCRIPTIONS.get(name) or _ELSEWHERE[name] for name in TABLE_ORDER}

STANDARD_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
ELEVEN_POINTS = tuple(i / 10 for i in range(11))
INT_CUTOFFS: dict[str, tuple[int, ...]] = {
    "P": STANDARD_CUTOFFS, "recall": STANDARD_CUTOFFS, "ndcg_cut": STANDARD_CUTOFFS, "map_cut": STANDARD_CUTOFFS,
    "P_avgjg": STANDARD_CUTOFFS,
    "relative_P": STANDARD_CUTOFFS, "success": (1, 5, 10), "unj": (5, 10, 20),
}  # fmt: skip
FLOAT_CUTOFFS: dict[str, tuple[float, ...]] = {
    "iprec_at_recall": ELEVEN_POINTS,
    "Rprec_mult": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
    "Rprec_mult_avgjg": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
}
FLOAT_PARAMS: dict[str, tuple[float, ...]] = {
    "utility": (1.0, -1.0, 0.0, 0.0), "11pt_avg": ELEVEN_POINTS, "set_F": (1.0,), "relstring": (10.0,),
}  # fmt: skip
PAIR_PARAMS = frozenset({"G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "rbp", "rbp_resid"})
COUNTS = frozenset(
    {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", *PREFS_MEASURES[:3]}
)  # summed over topics, printed as integers
GEOMETRIC = frozenset({"gm_map", "gm_bpref"})
SUMMARY_ONLY = frozenset({"runid", "num_q", "gm_map", "gm_bpref"})

_INT_PREFIX = re.compile(r"\s*([+-]?\d+)")
_FLOAT_PREFIX = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def c_atol(text: str) -> int:
    """C's atol: the leading integer of ``text``, 0 if none (``23.4`` -> 23)."""
    match = _INT_PREFIX.match(text)
    return int(match.group(1)) if match else 0


def c_atof(text: str) -> float:
    """C's atof: the leading decimal number of ``text``, 0.0 if none."""
    match = _FLOAT_PREFIX.match(text)
    return float(match.group(1)) if match else 0.0


@dataclass
class Requested:
    """One measure of the table as requested: its parameters and the names it prints."""

    base: str
    params: str | None
    names: list[str] = field(default_factory=list)
    cutoffs: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    pairs: list[tuple[str, float]] = field(default_factory=list)


# trec_eval's measure with a cutoff list, for a family evaluated at a cutoff (ndcg@10 is ndcg_cut.10)
_CUT_NAMES = {"ndcg": "ndcg_cut", "map": "map_cut"}


def _spelling_hint(argument: str) -> str:
    """For a name trec_eval does not know but stagewise eval does (ir_measures' ``nDCG@10``, ranx's ``ndcg@10``):
    ``; trec_eval writes it ndcg_cut.10 (stagewise eval -m takes 'nDCG@10' as written)``; else nothing.

    >>> _spelling_hint("nDCG@10")
    "; trec_eval writes it ndcg_cut.10 (stagewise eval -m takes 'nDCG@10' as written)"
    """
    from stagewise.errors import StagewiseError

    try:
        measure = Measure.parse(argument)
    except StagewiseError:
        return ""
    family = measure.family
    names = [name for name, target in TREC_EVAL_NAMES.items() if target == family and name not in _CUT_NAMES.values()]
    theirs = None
    if not measure.options and names:
        if measure.cutoff is None:
            theirs = names[0]
        elif isinstance(measure.cutoff, int) and (family in _CUT_NAMES or names[0] in INT_CUTOFFS):
            theirs = f"{_CUT_NAMES.get(family, names[0])}.{measure.cutoff}"
    said = f"trec_eval writes it {theirs}" if theirs else "trec_eval has no spelling of it"
    return f"; {said} (stagewise eval -m takes {argument!r} as written)"


def expand(arguments: Sequence[str]) -> list[Requested]:
    """``-m`` arguments (``all_trec``, ``P.5,10``, ``ndcg.1=3,2=9``) to measures in printing order."""
    wanted: set[str] = set()
    params: dict[str, str] = {}
    for argument in arguments or ["official"]:
        name, dot, text = argument.partition(".")
        if dot:
            if not text:
                raise MetricError(f"trec_eval: empty parameter list in -m {argument!r}")
            params.setdefault(name, text)  # trec_eval keeps the first parameters given
        if name in NICKNAMES:
            wanted.update(NICKNAMES[name])
        elif name in TABLE_ORDER:
            wanted.add(name)
        else:
            raise MetricError(
                f"trec_eval: unknown measure {name!r}; known: {', '.join(TABLE_ORDER)}, "
                f"or a set: {', '.join(NICKNAMES)}{_spelling_hint(argument)}"
            )
    out = []
    for base in TABLE_ORDER:
        if base not in wanted:
            continue
        text = params.get(base)
        item = Requested(base, text)
        if base in INT_CUTOFFS:
            cuts = sorted(c_atol(part) for part in text.split(",")) if text else list(INT_CUTOFFS[base])
            if cuts[0] <= 0 or len(set(cuts)) != len(cuts):
                raise MetricError(f"trec_eval: cutoffs of {base} must be unique integers > 0, got {text!r}")
            item.cutoffs = [float(c) for c in cuts]
            item.names = [f"{base}_{c}" for c in cuts]
        elif base in FLOAT_CUTOFFS:
            cuts_f = sorted(c_atof(part) for part in text.split(",")) if text else list(FLOAT_CUTOFFS[base])
            if len(set(cuts_f)) != len(cuts_f):
                raise MetricError(f"trec_eval: duplicate cutoffs for {base} in {text!r}")
            item.cutoffs = cuts_f
            item.names = [f"{base}_{c:3.2f}" for c in cuts_f]
        elif base in FLOAT_PARAMS:
            item.values = [c_atof(p) for p in text.split(",")] if text else list(FLOAT_PARAMS[base])
            if base == "utility" and len(item.values) != 4:
                raise MetricError("trec_eval: utility takes exactly 4 parameters, as in -m utility.1,-1,0,0")
            item.names = [f"{base}_{text}" if text else base]
        elif base in PAIR_PARAMS:
            item.pairs = _pairs(text) if text else []
            item.names = [f"{base}_{text}" if text else base]
        else:
            item.names = [base]
        out.append(item)
    return out


def defaults(base: str) -> str:
    """The parameters ``base`` takes when ``-m`` gives none, as trec_eval spells them (empty: none)."""
    if base in INT_CUTOFFS:
        return ",".join(str(c) for c in INT_CUTOFFS[base])
    if base in FLOAT_CUTOFFS:
        return ",".join(f"{c:g}" for c in FLOAT_CUTOFFS[base])
    if base in FLOAT_PARAMS:
        return ",".join(f"{c:g}" for c in FLOAT_PARAMS[base])
    return ""


def _pairs(text: str) -> list[tuple[str, float]]:
    pairs = []
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or "=" in value:
            raise MetricError(f"trec_eval: parameters must be name=value pairs, got {text!r}")
        pairs.append((name, c_atof(value)))
    return pairs


@dataclass(frozen=True)
class GainTable:
    """trec_eval's ``level=gain`` parameters: integer levels take the given gain, other levels their own."""

    pairs: tuple[tuple[int, float], ...]

    @classmethod
    def of(cls, pairs: Sequence[tuple[str, float]]) -> GainTable:
        levels: dict[int, float] = {}
        for name, value in pairs:
            if re.fullmatch(r"[+-]?\d+", name):  # other names (rbp's p) are not levels
                levels.setdefault(int(name), value)
        return cls(tuple(levels.items()))

    def function(self) -> K.GainFunction:
        return K.mapped_gain(dict(self.pairs)) if self.pairs else K.linear_gain

    def persistence(self, pairs: Sequence[tuple[str, float]]) -> float:
        return next((value for name, value in pairs if name == "p"), 0.9)


Values = list[np.ndarray]


def compute(item: Requested, ctx: EvalContext, collection_size: int) -> Values:
    """One array of per-query values for each of ``item.names``."""
    base = item.base
    if base in SAME_AS_FAMILY:
        family = TREC_EVAL_NAMES[base]
        if base in INT_CUTOFFS:
            return [family_values(Measure(family, int(c)), ctx) for c in item.cutoffs]
        if base in FLOAT_CUTOFFS:
            return [family_values(Measure(family, c), ctx) for c in item.cutoffs]
        return [family_values(Measure(family), ctx)]
    if base == "utility":
        a, b, c, d = item.values
        return [K.utility(ctx, a, b, c, d, collection_size)]
    if base == "11pt_avg":
        return [K.eleven_point_average(ctx, tuple(item.values))]
    if base == "set_F":
        return [K.set_f(ctx, item.values[0])]
    if base in PAIR_PARAMS:
        table = GainTable.of(item.pairs)
        gain = table.function()
        p = table.persistence(item.pairs)
        if base == "rbp":
            return [K.rbp(ctx, p, gain, extra_gains=tuple(g for _, g in table.pairs))]
        if base == "rbp_resid":
            return [K.rbp_residual(ctx, p)]
        if base == "ndcg_rel":
            return [W.ndcg_rel(ctx, gain)]
        if base == "Rndcg":
            return [W.rndcg(ctx, gain)]
        kernel = {"G": K.g_measure, "dcg": K.dcg, "ideal_dcg": K.ideal_dcg, "ndcg": K.ndcg}[base]
        if base == "dcg":
            return [K.dcg(ctx, gain)]
        return [kernel(ctx, gain, key=table)]
    if base == "yaap":
        return [_yaap(ctx)]
    raise AssertionError(f"no computation for trec_eval measure {base!r}")  # a measure of ORDER left out: a bug


# Measures computed by their stagewise family (through TREC_EVAL_NAMES): trec_eval's form with its default
# parameters is the family's, cutoffs included. The others take trec_eval's own parameters (gain tables, -N).
SAME_AS_FAMILY = frozenset(
    {
        *(set(INT_CUTOFFS) | set(FLOAT_CUTOFFS)).difference(JG_MEASURES),
        "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
        "recip_rank", "infAP", "gm_bpref", "binG", "set_P", "set_relative_P", "set_recall", "set_map",
        "num_nonrel_judged_ret",
    }
)  # fmt: skip


def _yaap(ctx: EvalContext) -> np.ndarray:
    """ln((1 + s) / (1 + R - s)) with s the sum of precisions at relevant results."""
    s = K.average_precision(ctx) * K.num_rel(ctx)
    return np.log((1.0 + s) / (1.0 + K.num_rel(ctx) - s))


def relstrings(ctx: EvalContext, length: int) -> list[str]:
    """The first ``length`` labels of each ranking as characters: 0-9, '>' above 9, '-' unjudged (not in
    the qrels), '.' labelled below 0."""
    out = []
    row_bounds = np.searchsorted(ctx.row_query, np.arange(ctx.n_queries + 1))
    for q in range(ctx.n_queries):
        chars = ["-"] * min(length, int(ctx.num_ret[q]))
        lo, hi = row_bounds[q], row_bounds[q + 1]
        for rank, label in zip(ctx.row_rank[lo:hi].tolist(), ctx.row_label[lo:hi].tolist(), strict=True):
            if rank <= len(chars):
                chars[rank - 1] = "." if label < 0 else (">" if label > 9 else str(label))
        out.append("".join(chars))
    return out
