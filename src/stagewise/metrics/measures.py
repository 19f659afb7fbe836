"""Measures as values: ``ndcg@10(gain=exp)`` parses to a :class:`Measure` whose ``str`` parses back.

A measure is a family (``ndcg``), an optional cutoff (``@10``) and keyword options in parentheses, read by the
one grammar of :mod:`stagewise.spec` (which lists every spelling it accepts, ir_measures' ``P(rel=2)@10`` and
``nDCG(dcg='exp-log2')@10`` included). Two measures that print the same are the same (equal and hash equal), so
a list of them de-duplicates itself. trec_eval's spellings are accepted too: ``P_10``, ``ndcg_cut_10``,
``ndcg_cut.10``, ``recip_rank``, and its lists of cutoffs (``ndcg_cut.10,20``) through
:func:`expand_cutoff_lists`; :data:`TREC_EVAL_NAMES` is the one table from trec_eval's names to families.
A name spelt as ir_measures or ranx spells it gives that tool's number or is refused (:data:`PEER_NAMES`, read on
the exact spelling before the case-insensitive registry: ``ERR@10`` is gdeval's, ``err@10`` ours; docs/names.md).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from stagewise.errors import MetricError
from stagewise.metrics import kernels as K
from stagewise.metrics import walks as W
from stagewise.metrics.context import EvalContext
from stagewise.spec import Param, Registry, canonical, format_value, parse_call

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.data.qrels import Qrels

Better = Literal["higher", "lower"] | None


@dataclass(frozen=True)
class Family:
    """What a measure is: its name, cutoff rule, options, kernel and how per-query values are averaged, and
    what the stages that use it need to know of it.

    ``better`` says which way is better: ``"higher"`` (most), ``"lower"`` (the unjudged share, the RBP residual)
    or None (a plain count such as ``num_ret``: no run is best on it); reports mark the best run and the
    significant wins by it. ``prefix_safe`` is True where the value depends only on the ranks of the relevant
    documents and the judgements, never on non-relevant documents ranked after the last relevant one: a list
    cut after its last relevant document gives the same value (RAG diagnosis cuts its lists so). ``resolve``
    fixes a default that depends on the data (ERR's ``max_label``, the highest label of the judgements): it
    takes the measure, the qrels and the evaluated query ids (None: all) and returns the measure with the
    option stated; the engines call it once per evaluation (:meth:`Measure.resolve`), before any part of a run
    is measured, so every part sees the same value. ``stated`` holds conventions fixed by the family itself
    (no option changes them, such as the C/W/L gain rule), written beside the options in every output.
    """

    name: str
    summary: str
    compute: Callable[[EvalContext, Any, dict[str, Any]], np.ndarray]
    cutoff: str = "none"  # "none" | "optional" | "required"
    cutoff_kind: type = int
    options: dict[str, Param] = field(default_factory=dict)
    aggregate: str = "mean"  # "mean" | "sum" | "geometric"
    aliases: tuple[str, ...] = ()
    binary: bool = True  # uses the relevance level
    better: Better = "higher"
    prefix_safe: bool = False
    resolve: Callable[[Measure, Qrels, np.ndarray | None], Measure] | None = None
    stated: dict[str, str] = field(default_factory=dict)
    cutoff_max: float | None = None  # the largest @x that means something (a recall level: 1)

    @property
    def cutoff_param(self) -> Param:
        """The ``@k`` part as a parameter: an int >= 1, or a number >= 0 for recall levels and multipliers (at
        most ``cutoff_max`` where the family sets one)."""
        if self.cutoff_max is not None:
            top = self.cutoff_max
            return Param(float, None, "recall level", f"a number in [0, {top:g}]", lambda v: 0 <= v <= top)
        return _INT_CUTOFF if self.cutoff_kind is int else _FLOAT_CUTOFF


_INT_CUTOFF = Param(int, None, "cutoff: only the top k results count", "an int >= 1", lambda v: v >= 1)
_FLOAT_CUTOFF = Param(float, None, "recall level or multiplier", "a number >= 0", lambda v: v >= 0)


REL = Param(int, None, "relevance level: a label >= rel counts as relevant (default: the evaluation's, 1)")
GAIN = Param(str, "linear", "gain of a label: linear (label) or exp (2**label - 1)", choices=("linear", "exp"))
PERSISTENCE = Param(float, 0.9, "persistence, in (0, 1)", "a float in (0, 1)", lambda v: 0 < v < 1)


JUDGED_ONLY = Param(
    bool,
    False,
    "drop the unjudged results before measuring, closing the gaps (ir_measures' judged_only; one "
    "measure's trec_eval -J)",
)
GAINS_MAP = Param(
    dict,
    None,
    "a gain per label, as {0:0,1:1,2:3}: listed labels take that gain, the others their gain as "
    "`gain` says (trec_eval's ndcg.L=G, ir_measures' gains=)",
)


@dataclass(frozen=True)
class GainMap:
    """A label -> gain mapping as a measure holds it: sorted ``(label, gain)`` pairs (hashable), printed as
    ``{0:0,1:1,2:3}`` so that the measure's name parses back.

    >>> str(GainMap.of({2: 3, 0: 0, 1: 1.0}))
    '{0:0,1:1,2:3}'
    """

    pairs: tuple[tuple[int, float], ...]

    @classmethod
    def of(cls, value: Any, owner: str = "ndcg") -> GainMap:
        if isinstance(value, GainMap):
            return value
        try:
            items = value.items() if isinstance(value, dict) else value
            pairs = [(_int_label(label), float(gain)) for label, gain in items]
        except (TypeError, ValueError, AttributeError):
            raise MetricError(
                f"The 'gains' parameter of {owner} must be a mapping of int labels to gains, as "
                f"{{0:0,1:1,2:3}}. Got {value!r} instead."
            ) from None
        return cls(tuple(sorted(pairs)))

    def items(self) -> tuple[tuple[int, float], ...]:
        return self.pairs

    def __str__(self) -> str:
        return "{" + ",".join(f"{label}:{format_value(gain)}" for label, gain in self.pairs) + "}"


def _int_label(label: Any) -> int:
    if isinstance(label, bool) or not float(label).is_integer():
        raise ValueError(label)
    return int(label)


def _gain(opts: dict[str, Any]) -> K.GainFunction:
    base = K.GAINS[opts["gain"]]
    return base if not opts.get("gains") else K.mapped_gain(dict(opts["gains"].pairs), base)


def _gain_key(opts: dict[str, Any]) -> object:
    """What names the gain function, for the ideal ranking's cache."""
    return (opts["gain"], opts.get("gains"))


def _rbp_gain(opts: dict[str, Any]) -> K.GainFunction:
    """RBP's gain: 1 for a label >= rel (binary, with ``rel``), else the label's gain (``gains`` over linear)."""
    if opts["rel"] is not None:
        level = opts["rel"]
        return lambda labels: (labels >= level).astype(np.float64)
    return K.linear_gain if not opts["gains"] else K.mapped_gain(dict(opts["gains"].pairs))


def top_label(qrels: Qrels, query_ids: np.ndarray | None = None) -> int:
    """The highest label among the judgements of ``query_ids`` (None: every judged query), 1 when there are
    none."""
    labels = qrels.labels
    if query_ids is not None:
        wanted = np.zeros(len(qrels.query_ids), dtype=bool)  # by query code
        at = np.searchsorted(qrels.query_ids, query_ids)
        hit = at < len(qrels.query_ids)
        hit[hit] = qrels.query_ids[at[hit]] == np.asarray(query_ids)[hit]
        wanted[at[hit]] = True
        labels = labels[wanted[qrels.query_codes]]
    return int(labels.max()) if len(labels) else 1


def _stated(opts: dict[str, Any], family: str, name: str) -> Any:
    """An option whose default comes from the data, which the family's ``resolve`` hook states first."""
    if opts[name] is None:
        raise MetricError(
            f"{family}'s {name} comes from the judgements: resolve the measure first (Measure.resolve; "
            "stagewise.evaluate does)"
        )
    return opts[name]


def _err_max_label(measure: Measure, qrels: Qrels, query_ids: np.ndarray | None) -> Measure:
    """ERR's scale: ``max_label`` as given, else the highest label of the evaluated queries' judgements."""
    if measure.option("max_label") is not None:
        return measure
    return measure.with_options(max_label=max(top_label(qrels, query_ids), 0))  # all labels < 0: every stop is 0


# The one table from trec_eval's measure names to families: Measure.parse reads trec_eval's spellings through it
# (recip_rank, ndcg_cut_10, map_cut.100) and the trec_eval drop-in computes through it every measure whose
# trec_eval form with its default parameters is the family's (stagewise.trec_eval.measures.SAME_AS_FAMILY).
TREC_EVAL_NAMES: dict[str, str] = {
    "num_ret": "num_ret", "num_rel": "num_rel", "num_rel_ret": "num_rel_ret", "map": "map", "gm_map": "gm_map",
    "Rprec": "Rprec", "bpref": "bpref", "recip_rank": "mrr", "iprec_at_recall": "iprec_at_recall", "P": "P",
    "recall": "recall", "infAP": "infAP", "gm_bpref": "gm_bpref", "Rprec_mult": "Rprec_mult", "utility": "utility",
    "11pt_avg": "11pt_avg", "binG": "binG", "G": "G", "dcg": "dcg", "ideal_dcg": "idcg", "ndcg": "ndcg",
    "ndcg_rel": "ndcg_rel", "Rndcg": "Rndcg", "ndcg_cut": "ndcg", "map_cut": "map", "relative_P": "relative_P",
    "success": "success", "set_P": "set_P", "set_relative_P": "set_relative_P", "set_recall": "set_recall",
    "set_map": "set_map", "set_F": "set_F", "num_nonrel_judged_ret": "num_nonrel_judged_ret", "rbp": "rbp",
    "rbp_resid": "rbp_resid", "unj": "unj",
}  # fmt: skip

FAMILIES: Registry[Family] = Registry(
    "metric",
    Family(
        "map",
        "mean average precision; map@k counts relevant results in the top k only (trec_eval map_cut)",
        lambda c, k, o: K.average_precision(c, k),
        cutoff="optional",
        options={"rel": REL},
        aliases=("ap",),
        prefix_safe=True,
    ),
    Family(
        "P",
        "precision at k: rels(k) / k",
        lambda c, k, o: K.precision(c, k),
        cutoff="required",
        options={"rel": REL},
        aliases=("precision", "p_at"),
        prefix_safe=True,
    ),
    Family(
        "recall",
        "recall at k: rels(k) / R",
        lambda c, k, o: K.recall(c, k),
        cutoff="required",
        options={"rel": REL},
        aliases=("r",),
        prefix_safe=True,
    ),
    Family(
        "Rprec",
        "R-precision: rels(R) / R",
        lambda c, k, o: K.r_precision(c),
        options={"rel": REL},
        aliases=("r-prec", "r_prec", "rprecision"),
        prefix_safe=True,
    ),
    Family("bpref", "binary preference (Buckley and Voorhees)", lambda c, k, o: K.bpref(c), options={"rel": REL}),
    Family(
        "mrr",
        "reciprocal rank of the first relevant result, within the top k if given",
        lambda c, k, o: K.reciprocal_rank(c, k),
        cutoff="optional",
        options={"rel": REL},
        aliases=("rr", "mrr_cut"),
        prefix_safe=True,
    ),
    Family(
        "ndcg",
        "normalised DCG, ideal from all judged documents; ndcg@k cuts both at k (trec_eval ndcg_cut)",
        lambda c, k, o: K.ndcg(c, _gain(o), k, key=_gain_key(o)),
        cutoff="optional",
        options={"gain": GAIN, "gains": GAINS_MAP},
        binary=False,
        prefix_safe=True,
    ),
    Family(
        "dcg",
        "discounted cumulative gain, log2(rank + 1) discount",
        lambda c, k, o: K.dcg(c, _gain(o), k),
        cutoff="optional",
        options={"gain": GAIN, "gains": GAINS_MAP},
        binary=False,
    ),
    Family(
        "idcg",
        "ideal DCG from all judged documents",
        lambda c, k, o: K.ideal_dcg(c, _gain(o), k, key=_gain_key(o)),
        cutoff="optional",
        options={"gain": GAIN, "gains": GAINS_MAP},
        binary=False,
    ),
    Family(
        "success",
        "1 if a relevant result is in the top k",
        lambda c, k, o: K.success(c, k),
        cutoff="required",
        options={"rel": REL},
        prefix_safe=True,
    ),
    Family(
        "judged",
        "share of the top k with a judgement (labels below 0 count as unjudged)",
        lambda c, k, o: K.judged(c, k),
        cutoff="required",
        binary=False,
    ),
    Family(
        "unj",
        "unjudged results in the top k, over k; ranks past the end of the run count as judged (trec_eval unj)",
        lambda c, k, o: K.unjudged(c, k),
        cutoff="required",
        binary=False,
        better="lower",
    ),
    Family(
        "unjudged",
        "1 - judged@k: ranks past the end of the run count as unjudged (the report's judgement plot)",
        lambda c, k, o: K.unjudged_at(c, k),
        cutoff="required",
        binary=False,
        better="lower",
    ),
    Family(
        "judged_retrieved",
        "judged results among the retrieved top k, over min(k, ret) (ir_measures Judged@k)",
        lambda c, k, o: K.judged_retrieved(c, k),
        cutoff="optional",
        binary=False,
    ),
    Family(
        "rbp",
        "rank-biased precision with persistence p, gains scaled to [0, 1] per query (trec_eval); rel=N: binary, "
        "label >= N gains 1; scale=False: gains as they are (ranx rbp.95); rbp@k: the top k only",
        lambda c, k, o: K.rbp(c, o["p"], _rbp_gain(o), scale=o["scale"], k=k),
        cutoff="optional",
        options={
            "p": PERSISTENCE,
            "rel": Param(int, None, "binary relevance: a label >= rel gains 1, others 0 (default: graded gains)"),
            "gains": GAINS_MAP,
            "scale": Param(bool, True, "scale each query's gains into [0, 1] (trec_eval); False keeps them"),
        },
        binary=False,
    ),
    Family(
        "rbp_resid",
        "RBP residual: the mass left open by unjudged results",
        lambda c, k, o: K.rbp_residual(c, o["p"]),
        options={"p": PERSISTENCE},
        binary=False,
        better="lower",
    ),
    Family(
        "err",
        "expected reciprocal rank (Chapelle et al.), stop probability (2**label - 1) / 2**max_label",
        lambda c, k, o: K.err(c, k, _stated(o, "err", "max_label")),
        cutoff="optional",
        options={
            "max_label": Param(
                int,
                None,
                "highest label of the scale (default: highest in the qrels)",
                "an int >= 0",
                lambda v: v >= 0,
            )
        },
        binary=False,
        resolve=_err_max_label,
    ),
    Family(
        "infAP",
        "inferred AP (Yilmaz and Aslam); labels below 0 mark sampled-out documents",
        lambda c, k, o: K.inferred_ap(c),
        options={"rel": REL},
        aliases=("infap",),
    ),
    Family(
        "gm_map",
        "geometric mean of AP, each floored at 1e-5",
        lambda c, k, o: K.average_precision(c),
        options={"rel": REL},
        aggregate="geometric",
    ),
    Family(
        "gm_bpref",
        "geometric mean of bpref, each floored at 1e-5",
        lambda c, k, o: K.bpref(c),
        options={"rel": REL},
        aggregate="geometric",
    ),
    Family("binG", "binary G (trec_eval)", lambda c, k, o: K.bin_g(c), options={"rel": REL}, aliases=("bing",)),
    Family(
        "G",
        "gain-based G (trec_eval)",
        lambda c, k, o: K.g_measure(c, _gain(o), key=_gain_key(o)),
        options={"gain": GAIN},
        binary=False,
    ),
    Family(
        "ndcg_rel",
        "mean nDCG at the rank of each relevant document (trec_eval ndcg_rel)",
        lambda c, k, o: W.ndcg_rel(c, _gain(o)),
        options={"gain": GAIN},
        binary=False,
    ),
    Family(
        "Rndcg",
        "mean nDCG where the ideal gain steps down (trec_eval Rndcg)",
        lambda c, k, o: W.rndcg(c, _gain(o)),
        options={"gain": GAIN},
        binary=False,
        aliases=("rndcg",),
    ),
    Family(
        "utility",
        "a * rel_ret + b * nonrel_ret + c * rel_missed + d * nonrel_missed (trec_eval utility, collection size 0)",
        lambda c, k, o: K.utility(c, o["a"], o["b"], o["c"], o["d"]),
        options={
            "rel": REL,
            "a": Param(float, 1.0, "gain per relevant result retrieved"),
            "b": Param(float, -1.0, "gain per non-relevant result retrieved"),
            "c": Param(float, 0.0, "gain per relevant document missed"),
            "d": Param(float, 0.0, "gain per non-relevant document not retrieved"),
        },
    ),
    Family(
        "relative_P",
        "rels(k) / min(k, R)",
        lambda c, k, o: K.relative_precision(c, k),
        cutoff="required",
        options={"rel": REL},
    ),
    Family(
        "iprec_at_recall",
        "interpolated precision at recall level x (0..1)",
        lambda c, k, o: K.iprec_at_recall(c, k, o["rounding"]),
        cutoff="required",
        cutoff_kind=float,
        cutoff_max=1.0,  # no ranking reaches a recall above 1: a level of 2 gave a silent 0
        options={
            "rel": REL,
            "rounding": Param(
                float,
                0.5,
                "relevant results needed: floor(x * R + rounding); 0.5 trec_eval 10, 0.9 trec_eval 9 (ir_measures)",
                "a number in [0, 1)",
                lambda v: 0 <= v < 1,
            ),
        },
        aliases=("iprec",),
    ),
    Family(
        "Rprec_mult",
        "precision at x * R results",
        lambda c, k, o: K.r_precision_mult(c, k),
        cutoff="required",
        cutoff_kind=float,
        options={"rel": REL},
    ),
    Family(
        "11pt_avg",
        "mean interpolated precision at recall 0.0, 0.1, ..., 1.0",
        lambda c, k, o: K.eleven_point_average(c, tuple(i / 10 for i in range(11))),
        options={"rel": REL},
    ),
    Family(
        "set_P",
        "precision of the whole retrieved set",
        lambda c, k, o: K.set_precision(c),
        options={"rel": REL},
        aliases=("setp",),
    ),
    Family(
        "set_recall",
        "recall of the whole retrieved set",
        lambda c, k, o: K.set_recall(c),
        options={"rel": REL},
        aliases=("setr",),
    ),
    Family(
        "set_relative_P",
        "rel_ret / min(ret, R)",
        lambda c, k, o: K.set_relative_precision(c),
        options={"rel": REL},
    ),
    Family(
        "set_map",
        "rel_ret**2 / (ret * R)",
        lambda c, k, o: K.set_map(c),
        options={"rel": REL},
        aliases=("setap",),
    ),
    Family(
        "set_F",
        "F-measure of the retrieved set",
        lambda c, k, o: K.set_f(c, o["beta"]),
        options={
            "rel": REL,
            # a negative beta gives F values below 0 or above 1 (or a division by zero where beta P = -R)
            "beta": Param(float, 1.0, "weight of recall (trec_eval's parameter)", "a number >= 0", lambda v: v >= 0),
        },
        aliases=("setf",),
    ),
    Family(
        "num_ret",
        "results retrieved",
        lambda c, k, o: K.num_ret(c),
        aggregate="sum",
        binary=False,
        aliases=("numret",),
        better=None,
    ),
    Family(
        "num_rel",
        "relevant judgements",
        lambda c, k, o: K.num_rel(c),
        options={"rel": REL},
        aggregate="sum",
        aliases=("numrel",),
        better=None,
    ),
    Family(
        "num_rel_ret",
        "relevant results retrieved",
        lambda c, k, o: K.num_rel_ret(c),
        options={"rel": REL},
        aggregate="sum",
        aliases=("numrelret",),
    ),
    Family(
        "num_nonrel_judged_ret",
        "judged non-relevant results retrieved",
        lambda c, k, o: K.num_nonrel_judged_ret(c),
        options={"rel": REL},
        aggregate="sum",
    ),
    Family(
        "hits",
        "relevant results in the top k, a count (ranx hits@k)",
        lambda c, k, o: K.hits(c, k),
        cutoff="optional",
        options={"rel": REL},
        prefix_safe=True,
    ),
    Family(
        "f1",
        "2PR / (P + R) of the top k, P = hits/k, R = hits/R (ranx f1@k; the whole list without k)",
        lambda c, k, o: K.f1(c, k),
        cutoff="optional",
        options={"rel": REL},
    ),
    Family(
        "accuracy",
        "chance that a relevant result of the top k is above a non-relevant one (ir_measures Accuracy)",
        lambda c, k, o: K.accuracy(c, k),
        cutoff="optional",
        options={"rel": REL},
    ),
    Family(
        "compat",
        "compatibility (Clarke et al. 2020): rank-biased overlap with the ideal ranking (ir_measures Compat)",
        lambda c, k, o: K.compat(c, o["p"], o["normalize"]),
        options={
            "p": Param(float, 0.95, "persistence, in (0, 1)", "a float in (0, 1)", lambda v: 0 < v < 1),
            "normalize": Param(bool, True, "divide by the ideal ranking's overlap with itself"),
        },
        binary=False,
    ),
    aliases=TREC_EVAL_NAMES,
    error=MetricError,
)

# trec_eval spells cutoffs with "_" or "." after the family name: P_10, ndcg_cut.10, iprec_at_recall_0.10.
_TREC_STYLE = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_]*?)[_.](?P<cutoff>\d+(?:\.\d+)?)$")
# trec_eval's list of cutoffs, "ndcg_cut.10,20": the head before the first comma, then bare cutoffs.
_TREC_LIST_HEAD = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_]*?)\.(?P<cutoff>\d+(?:\.\d+)?)$")
_BARE_CUTOFF = re.compile(r"^\d+(?:\.\d+)?$")
_EXAMPLES = "ndcg@10, P@5(rel=2), P(rel=2)@10 or map"
# ranx's relevance level suffix, "map@100-l2", and its RBP spelling with the persistence's digits, "rbp.95".
_RANX_LEVEL = re.compile(r"^(?P<rest>[^()]+?)-l(?P<level>\d+)$")
# (ranx reads rbp@95 so too, but @k is a cutoff in this grammar and in ir_measures' RBP@k: rbp@10 is the top 10)
_RANX_RBP = re.compile(r"^rbp\.(?P<digits>\d+)$")


@dataclass(frozen=True)
class PeerName:
    """What a name spelt as another tool spells it means here: that tool's number, through a family and the
    options that give it (``family``; ``uncut`` when the name is given without a cutoff), or a refusal
    (``family`` None) that says what to write instead (``instead``)."""

    tool: str
    family: str | None
    options: tuple[tuple[str, Any], ...] = ()
    uncut: str | None = None
    instead: str = ""
    #: (parameter, the family it selects): ir_measures' SetP(relative=True) is set_relative_P, NumRet(rel=2)
    #: num_rel_ret(rel=2); the parameter is dropped (relative) or kept (rel) as the family takes it.
    switch: tuple[tuple[str, str], ...] = ()


#: Spellings of ir_measures and ranx whose number differs from what a case-insensitive lookup of the name would
#: give here, or that name a measure stagewise lacks. Matched on the exact spelling (case included, ``-`` read
#: as ``_``) before the registry: ``ERR@10`` is ir_measures' (gdeval's, highest grade 4) while ``err@10`` stays
#: stagewise's (highest grade from the qrels); ``RBP`` is ir_measures' (p = 0.8, the label as gain) while
#: ``rbp`` stays trec_eval's (p = 0.9, gains scaled into [0, 1]). Every other spelling of the two tools means
#: the same number here as there through the registry's names and aliases (tests/test_peer_names.py checks
#: each against the tool).
PEER_NAMES: dict[str, PeerName] = {
    "ERR": PeerName("ir_measures", "err", (("max_label", 4),)),
    "RBP": PeerName("ir_measures", "rbp", (("p", 0.8), ("scale", False))),
    "IPrec": PeerName("ir_measures", "iprec_at_recall", (("rounding", 0.9),)),
    "Judged": PeerName("ir_measures", "judged_retrieved"),
    "SetRelP": PeerName("ir_measures", "set_relative_P"),
    "SetP": PeerName("ir_measures", "set_P", switch=(("relative", "set_relative_P"),)),
    "NumRet": PeerName("ir_measures", "num_ret", switch=(("rel", "num_rel_ret"),)),
    "NumQ": PeerName("ir_measures", None, instead="the number of queries is in every result (num_queries)"),
    "hit_rate": PeerName("ranx", "success"),
    "precision": PeerName("ranx", "P", uncut="set_P"),
    "recall": PeerName("ranx", "recall", uncut="set_recall"),
    "r_precision": PeerName("ranx", "Rprec"),
    "ndcg_burges": PeerName("ranx", "ndcg", (("gain", "exp"),)),
    "dcg_burges": PeerName("ranx", "dcg", (("gain", "exp"),)),
    # ndeval's measures as ir_measures computes them (through pyndeval, whose runs break score ties by doc id
    # ascending): stagewise.metrics.diversity
    **{name: PeerName("ir_measures", family, (("ties", "docid-ascending"),)) for name, family in (
        ("AP_IA", "ap_ia"), ("MAP_IA", "ap_ia"), ("ERR_IA", "err_ia"), ("nERR_IA", "nerr_ia"), ("NRBP", "nrbp"),
        ("nNRBP", "nnrbp"), ("P_IA", "p_ia"), ("StRecall", "strec"), ("alpha_DCG", "alpha_dcg"),
        ("α_DCG", "alpha_dcg"), ("alpha_nDCG", "alpha_ndcg"), ("α_nDCG", "alpha_ndcg"))},
}  # fmt: skip


def _peer(name: str, registered: bool) -> PeerName | None:
    """The peer spelling ``name`` is, if any; a refusal only where the registry has no such name (a family
    registered later under that name is taken)."""
    peer = PEER_NAMES.get(name.replace("-", "_"))
    if peer is None or (peer.family is None and registered):
        return None
    return peer


def _refuse(name: str, peer: PeerName) -> MetricError:
    return MetricError(f"{name!r} is a measure of {peer.tool} that no stagewise measure gives: {peer.instead}")


def _ranx_forms(text: str) -> tuple[str, int | None]:
    """ranx's ``rbp.95`` as ``rbp(p=0.95,scale=False)`` and its level suffix ``-l2`` split off."""
    level = _RANX_LEVEL.match(text.strip())
    if level:
        text = level.group("rest")
    rbp = _RANX_RBP.match(text.strip())
    if rbp:
        text = f"rbp(p=0.{rbp.group('digits')},scale=False)"
    return text, int(level.group("level")) if level else None


def _ranx_level(fam: Family, params: dict[str, Any], level: int, whole: str) -> dict[str, Any]:
    """ranx's ``-lN``: labels below N are not relevant, so binary measures take rel=N and graded ones gain 0
    for labels 1..N-1. ranx's bpref with a level above 1 is refused: it gives 0 where trec_eval's bpref at that
    level does not (ranx 0.3.21 on random qrels, tests/test_peer_names.py)."""
    if fam.name == "bpref" and level > 1:
        raise MetricError(
            f"{whole!r} is ranx's bpref at relevance level {level}, which gives 0 on queries where bpref does "
            f"not; write bpref(rel={level}) for trec_eval's bpref at that level"
        )
    if "rel" in fam.options and (fam.binary or fam.name == "rbp") and "gains" not in params:
        return {**params, "rel": level} if fam.binary else {**params, "gains": {g: 0 for g in range(level)}}
    if "gains" in fam.options:
        return {**params, "gains": {g: 0 for g in range(level)}}
    raise MetricError(f"metric {fam.name!r} has no relevance level, so {whole!r} has no meaning here")


# ir_measures' nDCG(dcg=...) names the gain and the discount together; both of its forms use log2(rank + 1).
_IR_MEASURES_DCG = {"log2": "linear", "exp-log2": "exp"}


@dataclass(frozen=True)
class Measure:
    """A parsed measure: family, cutoff and options. ``str(m)`` is canonical and parses back to ``m``.

    >>> m = Measure.parse("nDCG@10(gain=exp)")
    >>> str(m), m == Measure.parse("ndcg_cut_10(gain=exp)")
    ('ndcg@10(gain=exp)', True)
    """

    family: str
    cutoff: int | float | None = None
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, text: str) -> Measure:
        """A measure from its name in any accepted spelling (see the module's docstring and
        :data:`PEER_NAMES`); an unknown name, option or bad value is a :class:`MetricError`.

        >>> str(Measure.parse("ERR@10")), str(Measure.parse("err@10")), str(Measure.parse("map@100-l2"))
        ('err@10(max_label=4)', 'err@10', 'map@100(rel=2)')
        """
        if isinstance(text, str) and ":" in text.split("(", 1)[0]:  # a plug-in's module:attr (metrics/custom.py)
            from stagewise.metrics.custom import load_plugin

            text = load_plugin(text)
        source, level = _ranx_forms(text) if isinstance(text, str) else (text, None)
        call = parse_call(source, "metric", _EXAMPLES, error=MetricError)
        name, cutoff_text, params = call.name, call.at, dict(call.params)
        fam = FAMILIES.get(name)
        peer = _peer(name, fam is not None)
        if peer is not None:
            chosen = peer.uncut if cutoff_text is None and peer.uncut else peer.family
            if chosen is None:
                raise _refuse(name, peer)
            for key, other in peer.switch:
                if params.get(key) not in (None, False):
                    chosen = other
                    params = params if key in FAMILIES[other].options else {k: v for k, v in params.items() if k != key}
                elif key in params:
                    params = {k: v for k, v in params.items() if k != key}
            fam, params = FAMILIES[chosen], {**dict(peer.options), **params}
        if fam is None and cutoff_text is None:
            trec = _TREC_STYLE.match(name)
            if trec and trec.group("name") in FAMILIES:
                fam, cutoff_text = FAMILIES[trec.group("name")], trec.group("cutoff")
        if fam is None:
            fam = FAMILIES.lookup(name)
        if level is not None:
            params = _ranx_level(fam, params, level, text)
        cutoff = _parse_cutoff(fam, cutoff_text, call.text)
        options = _parse_options(fam, params)
        return cls(fam.name, cutoff, options)

    @property
    def spec(self) -> Family:
        return FAMILIES[self.family.lower()]

    def option(self, name: str) -> Any:
        default = JUDGED_ONLY.default if name == "judged_only" else self.spec.options[name].default
        return dict(self.options).get(name, default)

    @property
    def judged_only(self) -> bool:
        """Whether this measure drops unjudged results first (``judged_only=True``, any family)."""
        return bool(self.option("judged_only"))

    def resolved_options(self) -> dict[str, Any]:
        return {name: self.option(name) for name in self.spec.options}

    @property
    def better(self) -> Better:
        """Which way is better: ``"higher"``, ``"lower"`` (``unj``, ``rbp_resid``) or None (a plain count).

        >>> Measure.parse("ndcg@10").better, Measure.parse("unj@10").better, Measure.parse("num_ret").better
        ('higher', 'lower', None)
        """
        return self.spec.better

    @property
    def prefix_safe(self) -> bool:
        """Whether a ranked list cut after its last relevant document gives the same value (see :class:`Family`).

        >>> Measure.parse("ndcg@10").prefix_safe, Measure.parse("bpref").prefix_safe
        (True, False)
        """
        return self.spec.prefix_safe

    def with_options(self, **options: Any) -> Measure:
        """This measure with some options set (checked as the parser checks them).

        >>> str(Measure.parse("err@20").with_options(max_label=3))
        'err@20(max_label=3)'
        """
        merged = {**dict(self.options), **options}
        return dataclasses.replace(self, options=_parse_options(self.spec, merged))

    def resolve(self, qrels: Qrels, query_ids: np.ndarray | None = None) -> Measure:
        """This measure with its data-dependent defaults stated, from ``qrels`` restricted to ``query_ids`` (None:
        every judged query): the family's ``resolve`` hook; the measure itself when it has none.

        >>> from stagewise.data.readers import read_qrels
        >>> qrels = read_qrels({"q1": {"d1": 3, "d2": 1}, "q2": {"d3": 1}})
        >>> str(Measure.parse("err@20").resolve(qrels)), str(Measure.parse("err@20").resolve(qrels, ["q2"]))
        ('err@20(max_label=3)', 'err@20(max_label=1)')
        """
        hook = self.spec.resolve
        return self if hook is None else hook(self, qrels, query_ids)

    def __str__(self) -> str:
        return canonical(self.family, self.cutoff, self.options)

    def conventions(self, relevance_level: int) -> dict[str, Any]:
        """The conventions that produced this measure's values, for output metadata."""
        out: dict[str, Any] = {}
        if self.spec.binary:
            rel = self.option("rel") if "rel" in self.spec.options else None
            out["relevance_level"] = relevance_level if rel is None else rel
        if "gain" in self.spec.options:
            out["gain"] = self.option("gain")
            out["ideal"] = "all judged documents of the query (trec_eval)"
            out["discount"] = "log2(rank + 1)"
        for name, value in self.resolved_options().items():
            if name == "gains" and value is not None:
                out[name] = str(value)
            elif name == "rel" and not self.spec.binary:
                if value is not None:
                    out["relevance_level"] = value
            elif name not in ("rel", "gain", "gains"):
                out[name] = value
        out.update(self.spec.stated)
        if self.judged_only:
            out["judged_only"] = True
        out["aggregate"] = {
            "mean": "arithmetic mean",
            "sum": "sum",
            "geometric": "geometric mean, floor 1e-5",
        }[self.spec.aggregate]
        return out


def _parse_cutoff(fam: Family, text: str | None, whole: str) -> int | float | None:
    if text is None:
        if fam.cutoff == "required":
            raise MetricError(f"metric {fam.name!r} needs a cutoff, as in {fam.name}@10 (got {whole!r})")
        return None
    if fam.cutoff == "none":
        raise MetricError(f"metric {fam.name!r} takes no cutoff (got {whole!r})")
    return fam.cutoff_param.coerce(fam.name, "cutoff", text, error=MetricError)


def _parse_options(fam: Family, given: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The options that differ from their defaults, sorted, so that equal measures print (and hash) the same."""
    if not given:
        return ()
    if "dcg" in given and "gain" in fam.options and "gain" not in given:
        given = dict(given)
        dcg = given.pop("dcg")
        given["gain"] = _IR_MEASURES_DCG.get(dcg, dcg) if isinstance(dcg, str) else dcg
    params = {**fam.options, "judged_only": fam.options.get("judged_only", JUDGED_ONLY)}
    for name in given:
        if name not in params:
            known = ", ".join(params)
            raise MetricError(f"metric {fam.name!r} has no option {name!r}; its options: {known}")
    values = {
        name: _gains(fam, value)
        if params[name] is GAINS_MAP
        else params[name].coerce(fam.name, name, value, error=MetricError)
        for name, value in given.items()
    }
    return tuple(sorted((k, v) for k, v in values.items() if v != params[k].default))


def _gains(fam: Family, value: Any) -> GainMap | None:
    return None if value is None or value == {} else GainMap.of(value, fam.name)


def expand_cutoff_lists(pieces: list[str]) -> list[str]:
    """Metric names split at commas, with trec_eval's cutoff lists expanded to one name per cutoff, named as
    trec_eval prints them: ``["ndcg_cut.10", "20", "map"]`` (from ``ndcg_cut.10,20,map``) ->
    ``["ndcg_cut_10", "ndcg_cut_20", "map"]``. A lone ``ndcg_cut.10`` keeps its spelling; a bare number with no
    list before it is an error that shows stagewise's spelling.

    >>> expand_cutoff_lists(["P.5", "10", "ndcg@10"])
    ['P_5', 'P_10', 'ndcg@10']
    """
    out: list[str] = []
    head: tuple[str, str, int] | None = None  # (family as written, its first cutoff, where it sits in out)
    for piece in pieces:
        if _BARE_CUTOFF.match(piece):
            if head is None:
                before = out[-1] if out else ""
                raise MetricError(
                    f"metric {piece!r} (after {before!r}) is a bare number; give each cutoff its metric, as in "
                    f"ndcg@10,ndcg@20, or use trec_eval's list ndcg_cut.10,20"
                    if before
                    else f"metric {piece!r} is a bare number; give it a metric, as in ndcg@{piece} or P@{piece}"
                )
            name, first, at = head
            out[at] = f"{name}_{first}"
            out.append(f"{name}_{piece}")
            continue
        match = _TREC_LIST_HEAD.match(piece)
        head = (match.group("name"), match.group("cutoff"), len(out)) if match else None
        out.append(piece)
    return out


def measure_notes(measures: list[tuple[str, Measure]]) -> list[str]:
    """A note for each measure whose name as given hides a parameter that changes its number: a peer's
    spelling with its stagewise meaning (``ERR@10 = err@10(max_label=4)``), and a default taken from the
    judgements (``err@10: max_label=3 (from the judgements)``). ``measures`` are (name as given, the measure as
    evaluated, resolved).

    >>> measure_notes([("ERR@10", Measure.parse("ERR@10")), ("err@5", Measure.parse("err@5(max_label=2)"))])
    ['ERR@10 = err@10(max_label=4)', 'err@5: max_label=2 (from the judgements)']
    """
    notes: list[str] = []
    for name, measure in measures:
        try:
            given = Measure.parse(name)
        except MetricError:  # a measure built in code, its name free text
            given = dataclasses.replace(measure, options=())
        peer = PEER_NAMES.get(re.split(r"[@(]", name, maxsplit=1)[0].replace("-", "_"))
        renamed = peer is not None and peer.family is not None  # a peer's spelling of another number
        if str(given) != name and (any(key != "gain" for key, _ in given.options) or renamed):
            notes.append(f"{name} = {given}")
        stated = dict(given.options)
        added = [(key, value) for key, value in measure.options if key not in stated]
        if added:
            shown = ", ".join(f"{key}={format_value(value)}" for key, value in added)
            notes.append(f"{name}: {shown} (from the judgements)")
    return notes


def known_names() -> list[str]:
    return FAMILIES.names()


def compute(measure: Measure, ctx: EvalContext) -> np.ndarray:
    """Per-query values of ``measure`` on ``ctx`` (whose relevance level must match the measure's); a measure
    whose family has data-dependent defaults must be resolved first (:meth:`Measure.resolve`)."""
    if measure.judged_only:
        ctx = K.condensed(ctx)
    return measure.spec.compute(ctx, measure.cutoff, measure.resolved_options())


def aggregate(measure: Measure, values: np.ndarray) -> float:
    """The all-queries value: mean, sum or geometric mean, as the family says."""
    kind = measure.spec.aggregate
    if len(values) == 0:
        return 0.0
    if kind == "sum":
        return float(values.sum())
    if kind == "geometric":
        return float(np.exp(K.geometric_log(values).mean()))
    return float(values.mean())


# cwl_eval's user models (INST, INSQ, BPM, NERR8-11, SDCG) register their families from their own module; their
# ir_measures spellings reach them through the registry's case-insensitive names.
from stagewise.metrics import cwl as _cwl  # noqa: E402, F401

# ndeval's intent-aware and diversity measures (alpha-nDCG, ERR-IA, NRBP, ...) register theirs the same way.
from stagewise.metrics import diversity as _diversity  # noqa: E402, F401
