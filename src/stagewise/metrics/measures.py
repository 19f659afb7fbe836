"""Measures as values: ``ndcg@10(gain=exp)`` parses to a :class:`Measure` whose ``str`` parses back.

A measure is a family (``ndcg``), an optional cutoff (``@10``) and keyword options in parentheses. Two
measures that print the same are the same (equal and hash equal), so a list of them de-duplicates itself.
trec_eval's spellings are accepted too: ``P_10``, ``ndcg_cut_10``, ``ndcg_cut.10``, ``recip_rank``, and its
lists of cutoffs (``ndcg_cut.10,20``) through :func:`expand_cutoff_lists`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stagewise.errors import MetricError
from stagewise.metrics import kernels as K
from stagewise.metrics import walks as W
from stagewise.metrics.context import EvalContext


@dataclass(frozen=True)
class Option:
    """A keyword option of a measure family: its type, default and a sentence of meaning."""

    kind: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class Family:
    """What a measure is: its name, cutoff rule, options, kernel and how per-query values are averaged."""

    name: str
    summary: str
    compute: Callable[[EvalContext, Any, dict[str, Any]], np.ndarray]
    cutoff: str = "none"  # "none" | "optional" | "required"
    cutoff_kind: type = int
    options: dict[str, Option] = field(default_factory=dict)
    aggregate: str = "mean"  # "mean" | "sum" | "geometric"
    aliases: tuple[str, ...] = ()
    binary: bool = True  # uses the relevance level


REL = Option(int, None, "relevance level: a label >= rel counts as relevant (default: the evaluation's, 1)")
GAIN = Option(str, "linear", "gain of a label: linear (label) or exp (2**label - 1)", ("linear", "exp"))


def _gain(opts: dict[str, Any]) -> K.GainFunction:
    return K.GAINS[opts["gain"]]


def _register(*families: Family) -> dict[str, Family]:
    table: dict[str, Family] = {}
    for fam in families:
        for name in (fam.name, *fam.aliases):
            table[name.lower()] = fam
    return table


FAMILIES: dict[str, Family] = _register(
    Family(
        "map",
        "mean average precision; map@k counts relevant results in the top k only (trec_eval map_cut)",
        lambda c, k, o: K.average_precision(c, k),
        cutoff="optional",
        options={"rel": REL},
        aliases=("ap", "map_cut"),
    ),
    Family(
        "P",
        "precision at k: rels(k) / k",
        lambda c, k, o: K.precision(c, k),
        cutoff="required",
        options={"rel": REL},
        aliases=("precision", "p_at"),
    ),
    Family(
        "recall",
        "recall at k: rels(k) / R",
        lambda c, k, o: K.recall(c, k),
        cutoff="required",
        options={"rel": REL},
        aliases=("r",),
    ),
    Family(
        "Rprec",
        "R-precision: rels(R) / R",
        lambda c, k, o: K.r_precision(c),
        options={"rel": REL},
        aliases=("r-prec", "r_prec", "rprecision"),
    ),
    Family("bpref", "binary preference (Buckley and Voorhees)", lambda c, k, o: K.bpref(c), options={"rel": REL}),
    Family(
        "mrr",
        "reciprocal rank of the first relevant result, within the top k if given",
        lambda c, k, o: K.reciprocal_rank(c, k),
        cutoff="optional",
        options={"rel": REL},
        aliases=("recip_rank", "rr", "mrr_cut"),
    ),
    Family(
        "ndcg",
        "normalised DCG, ideal from all judged documents; ndcg@k cuts both at k (trec_eval ndcg_cut)",
        lambda c, k, o: K.ndcg(c, _gain(o), k, key=o["gain"]),
        cutoff="optional",
        options={"gain": GAIN},
        binary=False,
        aliases=("ndcg_cut",),
    ),
    Family(
        "dcg",
        "discounted cumulative gain, log2(rank + 1) discount",
        lambda c, k, o: K.dcg(c, _gain(o), k),
        cutoff="optional",
        options={"gain": GAIN},
        binary=False,
    ),
    Family(
        "idcg",
        "ideal DCG from all judged documents",
        lambda c, k, o: K.ideal_dcg(c, _gain(o), k, key=o["gain"]),
        cutoff="optional",
        options={"gain": GAIN},
        binary=False,
        aliases=("ideal_dcg",),
    ),
    Family(
        "success",
        "1 if a relevant result is in the top k",
        lambda c, k, o: K.success(c, k),
        cutoff="required",
        options={"rel": REL},
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
        "share of the top k without a judgement (trec_eval unj)",
        lambda c, k, o: K.unjudged(c, k),
        cutoff="required",
        binary=False,
    ),
    Family(
        "rbp",
        "rank-biased precision with persistence p, gains scaled to [0, 1] per query (trec_eval)",
        lambda c, k, o: K.rbp(c, o["p"]),
        options={"p": Option(float, 0.9, "persistence, in (0, 1)")},
        binary=False,
    ),
    Family(
        "rbp_resid",
        "RBP residual: the mass left open by unjudged results",
        lambda c, k, o: K.rbp_residual(c, o["p"]),
        options={"p": Option(float, 0.9, "persistence, in (0, 1)")},
        binary=False,
    ),
    Family(
        "err",
        "expected reciprocal rank (Chapelle et al.), stop probability (2**label - 1) / 2**max_label",
        lambda c, k, o: K.err(c, k, o["max_label"]),
        cutoff="optional",
        options={"max_label": Option(int, None, "highest label of the scale (default: highest in the qrels)")},
        binary=False,
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
        lambda c, k, o: K.g_measure(c, _gain(o), key=o["gain"]),
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
            "a": Option(float, 1.0, "gain per relevant result retrieved"),
            "b": Option(float, -1.0, "gain per non-relevant result retrieved"),
            "c": Option(float, 0.0, "gain per relevant document missed"),
            "d": Option(float, 0.0, "gain per non-relevant document not retrieved"),
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
        lambda c, k, o: K.iprec_at_recall(c, k),
        cutoff="required",
        cutoff_kind=float,
        options={"rel": REL},
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
    ),
    Family(
        "set_recall",
        "recall of the whole retrieved set",
        lambda c, k, o: K.set_recall(c),
        options={"rel": REL},
    ),
    Family(
        "set_relative_P",
        "rel_ret / min(ret, R)",
        lambda c, k, o: K.set_relative_precision(c),
        options={"rel": REL},
    ),
    Family("set_map", "rel_ret**2 / (ret * R)", lambda c, k, o: K.set_map(c), options={"rel": REL}),
    Family(
        "set_F",
        "F-measure of the retrieved set",
        lambda c, k, o: K.set_f(c, o["beta"]),
        options={"rel": REL, "beta": Option(float, 1.0, "weight of recall (trec_eval's parameter)")},
    ),
    Family("num_ret", "results retrieved", lambda c, k, o: K.num_ret(c), aggregate="sum", binary=False),
    Family("num_rel", "relevant judgements", lambda c, k, o: K.num_rel(c), options={"rel": REL}, aggregate="sum"),
    Family(
        "num_rel_ret",
        "relevant results retrieved",
        lambda c, k, o: K.num_rel_ret(c),
        options={"rel": REL},
        aggregate="sum",
    ),
    Family(
        "num_nonrel_judged_ret",
        "judged non-relevant results retrieved",
        lambda c, k, o: K.num_nonrel_judged_ret(c),
        options={"rel": REL},
        aggregate="sum",
    ),
)

# trec_eval spells cutoffs with "_" or "." after the family name: P_10, ndcg_cut.10, iprec_at_recall_0.10.
_TREC_STYLE = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_]*?)[_.](?P<cutoff>\d+(?:\.\d+)?)$")
# trec_eval's list of cutoffs, "ndcg_cut.10,20": the head before the first comma, then bare cutoffs.
_TREC_LIST_HEAD = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_]*?)\.(?P<cutoff>\d+(?:\.\d+)?)$")
_BARE_CUTOFF = re.compile(r"^\d+(?:\.\d+)?$")
_OUR_STYLE = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+?)(?:@(?P<cutoff>[^()\s]+))?(?:\((?P<options>.*)\))?$")


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
        text = text.strip()
        match = _OUR_STYLE.match(text)
        if match is None:
            raise MetricError(f"cannot read metric {text!r}; expected a form like ndcg@10, P@5(rel=2) or map")
        name, cutoff_text, options_text = match.group("name"), match.group("cutoff"), match.group("options")
        fam = FAMILIES.get(name.lower())
        if fam is None and cutoff_text is None:
            trec = _TREC_STYLE.match(name)
            if trec and trec.group("name").lower() in FAMILIES:
                fam, cutoff_text = FAMILIES[trec.group("name").lower()], trec.group("cutoff")
        if fam is None:
            raise MetricError(f"unknown metric {name!r} in {text!r}; known metrics: {', '.join(known_names())}")
        cutoff = _parse_cutoff(fam, cutoff_text, text)
        options = _parse_options(fam, options_text or "", text)
        return cls(fam.name, cutoff, options)

    @property
    def spec(self) -> Family:
        return FAMILIES[self.family.lower()]

    def option(self, name: str) -> Any:
        return dict(self.options).get(name, self.spec.options[name].default)

    def resolved_options(self) -> dict[str, Any]:
        return {name: self.option(name) for name in self.spec.options}

    def __str__(self) -> str:
        text = self.family
        if self.cutoff is not None:
            text += f"@{self.cutoff:g}" if isinstance(self.cutoff, float) else f"@{self.cutoff}"
        if self.options:
            text += "(" + ",".join(f"{k}={v}" for k, v in self.options) + ")"
        return text

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
            if name not in ("rel", "gain"):
                out[name] = value
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
    try:
        value = fam.cutoff_kind(text)
    except ValueError:
        raise MetricError(
            f"The cutoff of {fam.name} must be {'an int >= 1' if fam.cutoff_kind is int else 'a number'}. "
            f"Got {text!r} instead."
        ) from None
    if fam.cutoff_kind is int and value < 1:
        raise MetricError(f"The cutoff of {fam.name} must be an int >= 1. Got {text!r} instead.")
    if fam.cutoff_kind is float and value < 0:
        raise MetricError(f"The cutoff of {fam.name} must be a number >= 0. Got {text!r} instead.")
    return value


def _parse_options(fam: Family, text: str, whole: str) -> tuple[tuple[str, Any], ...]:
    if not text.strip():
        return ()
    try:
        call = ast.parse(f"f({text})", mode="eval").body
    except SyntaxError:
        raise MetricError(f"cannot read the options of {whole!r}; expected key=value pairs such as gain=exp") from None
    if not isinstance(call, ast.Call) or call.args:
        raise MetricError(f"options of {whole!r} must be key=value pairs, such as gain=exp")
    parsed: dict[str, Any] = {}
    for kw in call.keywords:
        name = kw.arg
        if name not in fam.options:
            known = ", ".join(fam.options) or "none"
            raise MetricError(f"metric {fam.name!r} has no option {name!r}; its options: {known}")
        opt = fam.options[name]
        if isinstance(kw.value, ast.Name):
            raw: Any = kw.value.id
        else:
            try:
                raw = ast.literal_eval(kw.value)
            except ValueError:
                raise MetricError(f"cannot read the value of option {name!r} in {whole!r}") from None
        try:
            value = opt.kind(raw)
            if opt.kind is int and value != raw:
                raise ValueError
        except (TypeError, ValueError):
            raise MetricError(
                f"The {name!r} option of {fam.name} must be a {opt.kind.__name__}. Got {raw!r} instead."
            ) from None
        if opt.choices is not None and value not in opt.choices:
            raise MetricError(f"The {name!r} option of {fam.name} must be one of {opt.choices}. Got {raw!r} instead.")
        if name == "p" and not 0 < value < 1:
            raise MetricError(f"The 'p' option of {fam.name} must be a float in (0, 1). Got {raw!r} instead.")
        if value != opt.default:
            parsed[name] = value
    return tuple(sorted(parsed.items()))


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


def known_names() -> list[str]:
    seen: list[str] = []
    for fam in FAMILIES.values():
        if fam.name not in seen:
            seen.append(fam.name)
    return seen


def compute(measure: Measure, ctx: EvalContext) -> np.ndarray:
    """Per-query values of ``measure`` on ``ctx`` (whose relevance level must match the measure's)."""
    opts = measure.resolved_options()
    if measure.family == "err" and opts.get("max_label") is None:
        opts["max_label"] = int(ctx.judgement_label.max()) if len(ctx.judgement_label) else 1
    return measure.spec.compute(ctx, measure.cutoff, opts)


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
