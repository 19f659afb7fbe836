"""One grammar for names with parameters (stagewise.spec): round trips, every documented spelling, one error template.

The documented spellings are collected from README.md, docs/*.md and the sources (--help texts, docstrings), so
a spelling added to the docs is checked without editing this file.
"""

from __future__ import annotations

import itertools
import math
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from stagewise.errors import ConventionError, MetricError, StagewiseError
from stagewise.fusion import METHODS, FusionMethod, FusionOptions, Normalization, method_names, normalization_names
from stagewise.metrics.evaluate import split_metrics
from stagewise.metrics.measures import FAMILIES, TREC_EVAL_NAMES, GainMap, Measure, known_names
from stagewise.rag.answers import CRITERIA, Criterion, parse_criterion
from stagewise.retrieval.variants import VARIANTS, Scoring
from stagewise.spec import Param, Registry, canonical, format_value, parse_call, parse_value
from stagewise.trec_eval import measures as T

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = re.compile(r"^The '\w+' parameter of .+ must be .+\. Got .+ instead\.$")

# ------------------------------------------------------------------------------------ value strategies


def values_of(param: Param) -> st.SearchStrategy[Any]:
    """Valid values of ``param``, drawn from its type, choices and check (what the registry says, nothing else)."""
    if param.choices is not None:
        return st.sampled_from(param.choices)
    if param.type is int:
        base: st.SearchStrategy[Any] = st.integers(-5, 10_000)
    elif param.type is float:
        base = st.floats(-1e6, 1e6, allow_nan=False) | st.floats(0, 1) | st.integers(-100, 100).map(float)
    elif param.type is bool:
        base = st.booleans()
    elif param.type is dict:  # a label -> gain map (ndcg's gains=), held as GainMap, printed {0:0,1:1,2:3}
        gains = st.dictionaries(st.integers(-2, 4), st.integers(0, 20).map(float) | st.floats(0, 100), min_size=1)
        base = gains.map(GainMap.of)
    elif param.type is tuple:
        base = st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=5).map(tuple)
        base = base.filter(any)
    else:
        base = st.sampled_from(["exp", "linear", "word"])
    return base.filter(param.check) if param.check is not None else base


@st.composite
def measures(draw: st.DrawFn) -> tuple[Measure, str]:
    """A measure built from random valid parts, and the same measure written in ir_measures' order."""
    name = draw(st.sampled_from(known_names()))
    fam = FAMILIES[name]
    cutoff = None
    if fam.cutoff == "required" or (fam.cutoff == "optional" and draw(st.booleans())):
        cutoff = draw(values_of(fam.cutoff_param))
    chosen = draw(st.lists(st.sampled_from(sorted(fam.options)), unique=True)) if fam.options else []
    options = {key: draw(values_of(fam.options[key])) for key in chosen}
    options = {k: v for k, v in options.items() if v is not None}
    inner = ",".join(f"{k}={format_value(v)}" for k, v in options.items())
    at = "" if cutoff is None else f"@{format_value(cutoff)}"
    ours = f"{name}{at}({inner})" if inner else f"{name}{at}"
    theirs = f"{name}({inner}){at}" if inner else f"{name}{at}"
    return Measure.parse(ours), theirs


@given(measures())
def test_every_measure_round_trips_in_both_orders(pair: tuple[Measure, str]) -> None:
    measure, ir_measures_order = pair
    again = Measure.parse(str(measure))
    assert again == measure and hash(again) == hash(measure)
    assert str(again) == str(measure)
    assert Measure.parse(ir_measures_order) == measure


@st.composite
def fusion_methods(draw: st.DrawFn) -> FusionMethod:
    name = draw(st.sampled_from(method_names()))
    info = METHODS[name]
    given = {key: draw(values_of(p)) for key, p in info.params.items() if draw(st.booleans())}
    return FusionMethod.parse(name, **given)


@given(fusion_methods())
def test_every_fusion_method_round_trips(method: FusionMethod) -> None:
    again = FusionMethod.parse(str(method))
    assert again == method and hash(again) == hash(method)
    text = str(method)
    shouted = method.name.upper().replace("_", "-") + text[len(method.name) :]
    assert FusionMethod.parse(shouted) == method  # case and - in the name are not meaning


@st.composite
def scorings(draw: st.DrawFn) -> Scoring:
    v = VARIANTS[draw(st.sampled_from(list(VARIANTS)))]
    params: dict[str, float] = {
        "k1": draw(st.floats(0, 100, allow_nan=False)),
        "b": draw(st.floats(0, 1)),
    }
    if v.delta is not None:
        params["delta"] = draw(st.floats(0, 10, allow_nan=False))
    if v.epsilon is not None:
        params["epsilon"] = draw(st.floats(-10, 10, allow_nan=False))
    return Scoring.of(v.name, **params)


@given(scorings())
def test_every_bm25_scoring_round_trips(scoring: Scoring) -> None:
    again = Scoring.parse(str(scoring))
    assert again == scoring and hash(again) == hash(scoring)


@given(st.sampled_from(["em", "contains", "judge", "f1"]), st.floats(0, 1))
def test_every_answer_criterion_round_trips(kind: str, threshold: float) -> None:
    criterion = parse_criterion(f"f1:{threshold!r}") if kind == "f1" else parse_criterion(kind)
    again = parse_criterion(criterion.name)
    assert again == criterion and hash(again) == hash(criterion)
    if kind == "f1":
        assert criterion.threshold == threshold
        assert parse_criterion(f"f1@{threshold!r}") == parse_criterion(f"f1(threshold={threshold!r})") == criterion


@given(
    st.recursive(
        st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.booleans()
        | st.none()
        | st.text(max_size=8),
        lambda inner: st.tuples(inner, inner),
        max_leaves=6,
    )
)
@example(value="0A")  # no Python token: printed bare, it did not read back (found by this test)
def test_values_print_back_to_themselves(value: Any) -> None:
    """format_value is parse_value's inverse, inside a name too, so a canonical name can carry any value (but
    infinities and NaN, which no parameter accepts)."""
    assert parse_value(format_value(value)) == value
    assert parse_call(canonical("x", None, [("v", value)]), "thing", "x").params.get("v", None) == value


# ------------------------------------------------------------------------------------ documented spellings

_COMMAND = re.compile(r"stagewise (eval|compare|trec_eval|fuse|rag|index|search)\b")


def _documents() -> list[tuple[str, str]]:
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "src").rglob("*.py"))]
    return [(str(path.relative_to(REPO)), path.read_text(encoding="utf-8")) for path in files]


def _command_lines(text: str) -> list[str]:
    """Every ``stagewise CMD ...`` in the text: inline code, code blocks and Examples sections of --help."""
    text = text.replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        for piece in re.findall(r"`([^`]*)`", line) or [line]:
            match = _COMMAND.search(piece)
            if match:
                found.append(piece[match.start() :].replace("[", " ").replace("]", " "))
    return found


def _option_values(command: str) -> list[tuple[str, str, str]]:
    """(subcommand, option, value) for the options whose values are names with parameters."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return []
    sub = words[1]
    wanted = {
        "eval": {"-m": "metric", "--metric": "metric"},
        "compare": {"-m": "metric", "--metric": "metric"},
        "trec_eval": {"-m": "trec_eval"},
        "fuse": {"-m": "method", "--method": "method", "--metric": "metric", "--norm": "norm", "-n": "norm"},
        "rag": {"--correct": "criterion", "-c": "criterion", "-m": "metric", "--metric": "metric"},
        "index": {"--variant": "variant"},
        "search": {"--variant": "variant"},
    }[sub]
    out = []
    for option, value in itertools.pairwise(words):
        if option in wanted and not value.startswith("-") and value.isascii() and value.upper() != value:
            out.append((sub, wanted[option], value))
    return out


_PYTHON = re.compile(r"\b(Measure|FusionMethod|Scoring|Normalization)\.parse\(\s*\"([^\"]+)\"")
# A name written inline, in prose or a --help text: ndcg@10, P@5(rel=2), rrf(rrf_k=20), lucene(k1=0.9,b=0.4).
_HEAD = re.compile(r"(?<![\w.@])[A-Za-z][\w+\-]*(?=@\d|\(\w+=)")


def _inline_names(text: str) -> list[str]:
    """Every ``name@k``, ``name(key=value)`` and mix of both in ``text``, parentheses balanced."""
    found = []
    for match in _HEAD.finditer(text):
        end = match.end()
        for _ in range(2):
            if text.startswith("@", end):
                at = re.match(r"@\d+(?:\.\d+)?", text[end:])
                end += at.end() if at else 0
            if text.startswith("(", end):
                depth, i = 0, end
                for i in range(end, min(len(text), end + 200)):
                    depth += {"(": 1, ")": -1}.get(text[i], 0)
                    if depth == 0:
                        break
                if depth == 0:
                    end = i + 1
        name = text[match.start() : end]
        if "..." not in name:  # a placeholder (rbp(p=...)), not a spelling
            found.append(name)
    return found


# Spellings the docs show as errors, on purpose.
DOCUMENTED_ERRORS = {"rrf(k=60)"}
# Names the docs register in a worked example (docs/architecture.md: adding a measure, a fusion method; docs/names.md:
# a custom measure's module:attr, a user's module), so they exist only once the example has run.
DOCUMENTED_PLUGINS = {"votes", "top_hit", "my_measures:first_hit", "my_measures:first_hit_rr"}


def _inline_kind(name: str) -> str | None:
    head = re.split(r"[@(]", name, maxsplit=1)[0]
    if head in CRITERIA and ("threshold=" in name or re.search(r"@\d*\.\d", name)):
        return "criterion"  # f1@0.7, f1(threshold=0.7): the answer criterion, not ranx's f1@k measure
    if "@" in name or head in FAMILIES:
        return "metric" if head in FAMILIES else None
    if head in METHODS:
        return "method"
    if head.lower() in VARIANTS:
        return "variant"
    return None


def documented() -> list[tuple[str, str, str]]:
    """(where, kind, spelling) for every name with parameters that the docs and --help texts show."""
    out = []
    for where, text in _documents():
        for command in _command_lines(text):
            out += [(where, kind, value) for _, kind, value in _option_values(command)]
        kinds = {"Measure": "metric", "FusionMethod": "method", "Scoring": "variant", "Normalization": "norm"}
        out += [(where, kinds[cls], value) for cls, value in _PYTHON.findall(text)]
        out += [(where, "criterion", value) for value in re.findall(r"--correct[ =]([a-z][a-z0-9:.]*)", text)]
        inline_m = "trec_eval" if where.endswith("trec_eval_semantics.md") else "metric"
        out += [(where, inline_m, value) for value in re.findall(r"`-m ([^`\[\] ]+)`", text)]
        for name in _inline_names(text):
            kind = _inline_kind(name)
            if kind is not None and name not in DOCUMENTED_ERRORS:
                out.append((where, kind, name))
    return sorted({found for found in out if found[2] not in DOCUMENTED_PLUGINS and not _placeholder(found[2])})


def _placeholder(spelling: str) -> bool:
    """A form the text shows with a stand-in for the value (``-m METRIC``, ``rbp(rel=N)``) or one a message
    fills in (``bpref(rel={level})``): not a spelling to parse."""
    return spelling.isupper() or bool(re.search(r"=[A-Z]\b|\{[A-Za-z_]", spelling))


DOCUMENTED = documented()


def test_documented_errors_are_errors() -> None:
    for text in DOCUMENTED_ERRORS:
        with pytest.raises(StagewiseError):
            FusionMethod.parse(text)


def test_the_docs_were_read() -> None:
    kinds = {kind for _, kind, _ in DOCUMENTED}
    assert {"metric", "trec_eval", "method", "criterion", "variant"} <= kinds, kinds
    assert len(DOCUMENTED) >= 30


@pytest.mark.parametrize(("where", "kind", "spelling"), DOCUMENTED)
def test_every_documented_spelling_parses(where: str, kind: str, spelling: str) -> None:
    if kind == "metric":
        for piece in split_metrics(spelling):
            measure = Measure.parse(piece)
            assert Measure.parse(str(measure)) == measure
    elif kind == "trec_eval":
        assert T.expand([spelling])
    elif kind == "method":  # a method with its parameters, or a whole FusionOptions (norm=, depth=, ...)
        options = FusionOptions.parse(spelling)
        assert FusionOptions.parse(str(options)) == options
    elif kind == "norm":
        assert Normalization.parse(spelling).name in normalization_names()
    elif kind == "criterion":
        criterion = parse_criterion(spelling)
        assert parse_criterion(criterion.name) == criterion
    elif kind == "variant":
        scoring = Scoring.parse(spelling)
        assert Scoring.parse(str(scoring)) == scoring


@pytest.mark.parametrize(
    ("spelling", "same_as"),
    [
        # ir_measures' spellings, where they mean what ours mean
        ("P(rel=2)@10", "P@10(rel=2)"),
        ("nDCG@10", "ndcg@10"),
        ("nDCG(dcg='exp-log2')@10", "ndcg@10(gain=exp)"),
        ("nDCG(dcg='log2')@10", "ndcg@10"),
        ("AP", "map"),
        ("AP(rel=2)", "map(rel=2)"),
        ("AP@100", "map_cut_100"),
        ("RR", "recip_rank"),
        ("RR@10", "mrr@10"),
        ("R@100", "recall@100"),
        ("Judged@10", "judged_retrieved@10"),  # ir_measures divides by min(k, retrieved): docs/names.md
        ("Success@5", "success_5"),
        ("Bpref", "bpref"),
        ("Rprec", "Rprec"),
        ("infAP", "infAP"),
        ("IPrec@0.5", "iprec_at_recall@0.5(rounding=0.9)"),  # trec_eval 9's rounding, as ir_measures
        ("ERR@20", "err@20(max_label=4)"),  # gdeval's grade scale
        ("SetP", "set_P"),
        ("SetR", "set_recall"),
        ("SetF", "set_F"),
        ("SetAP", "set_map"),
        ("NumRet", "num_ret"),
        ("NumRel", "num_rel"),
        ("NumRelRet", "num_rel_ret"),
        # trec_eval's, through the one table
        ("ndcg_cut.10", "ndcg@10"),
        ("ndcg_cut_10", "ndcg@10"),
        ("map_cut_100", "map@100"),
        ("P_5", "P@5"),
        ("recip_rank", "mrr"),
        ("ideal_dcg", "idcg"),
        ("iprec_at_recall_0.10", "iprec_at_recall@0.1"),
        # the grammar's own freedoms
        ("ndcg@10(gain='exp')", "ndcg@10(gain=exp)"),
        ("ndcg(gain=exp)@10", "ndcg@10(gain=exp)"),
        (" ndcg @10 ( gain = exp ) ", "ndcg@10(gain=exp)"),
        ("ndcg(gain=exp) @ 10", "ndcg@10(gain=exp)"),
        ("rbp(p=0.9)", "rbp"),
    ],
)
def test_peer_spellings_mean_the_same(spelling: str, same_as: str) -> None:
    assert Measure.parse(spelling) == Measure.parse(same_as)


def test_one_table_maps_trec_eval_names_to_families() -> None:
    """Every name trec_eval prints (ORDER) is either in TREC_EVAL_NAMES or one the library has no family for."""
    no_family = {"runid", "num_q", "relstring", "yaap"}
    assert set(T.ORDER) - no_family == set(TREC_EVAL_NAMES)
    for trec_name, family in TREC_EVAL_NAMES.items():
        assert FAMILIES[trec_name].name == family
    assert set(TREC_EVAL_NAMES) >= T.SAME_AS_FAMILY


# ------------------------------------------------------------------------------------ the one error template


@pytest.mark.parametrize(
    ("parse", "text", "error"),
    [
        (Measure.parse, "ndcg@ten", MetricError),
        (Measure.parse, "P@0", MetricError),
        (Measure.parse, "P@10(rel=1.5)", MetricError),
        (Measure.parse, "P(rel=True)@10", MetricError),
        (Measure.parse, "ndcg(gain=cubic)@10", MetricError),
        (Measure.parse, "nDCG(dcg='exp-log10')@10", MetricError),
        (Measure.parse, "rbp(p=1)", MetricError),
        (Measure.parse, "iprec_at_recall@-0.5", MetricError),
        (FusionMethod.parse, "rrf(rrf_k=-1)", ConventionError),
        (FusionMethod.parse, "rrf(rrf_k='sixty')", ConventionError),
        (FusionMethod.parse, "wsum(weights=(0,0))", ConventionError),
        (FusionMethod.parse, "slidefuse(window=1.5)", ConventionError),
        (FusionMethod.parse, "rbc(phi=nan)", ConventionError),
        (Scoring.parse, "lucene(k1=-1)", ConventionError),
        (Scoring.parse, "lucene(b=abc)", ConventionError),
        (Scoring.parse, "bm25l(delta=inf)", ConventionError),
        (parse_criterion, "f1:1.5", ConventionError),
        (parse_criterion, "f1(threshold=2)", ConventionError),
        (parse_criterion, "exact", ConventionError),
    ],
)
def test_bad_values_get_the_one_template(parse, text: str, error: type[StagewiseError]) -> None:
    with pytest.raises(error) as caught:
        parse(text)
    assert TEMPLATE.match(str(caught.value)), str(caught.value)


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (Measure.parse, "ndcg@10(gain=exp", "cannot read metric 'ndcg@10(gain=exp'; expected a form like"),
        (Measure.parse, "ndcg@10@20", "cannot read metric"),
        (Measure.parse, "P(rel=1)(rel=2)@5", "cannot read metric"),
        (Measure.parse, "P@5(rel=1, rel=2)", "parameter 'rel' is given twice"),
        (Measure.parse, "P@5(2)", "must be key=value pairs"),
        (Measure.parse, "P@5(rel=__import__('os'))", "cannot read the value of parameter 'rel'"),
        (Measure.parse, "P@5(rel=" + "(" * 300 + "1" + ")" * 300 + ")", "cannot read the parameters"),
        (Measure.parse, "nosuch@10", "unknown metric 'nosuch'; choose one of map, P, recall"),
        (FusionMethod.parse, "rrf@10", "takes no @ part"),
        (FusionMethod.parse, "combsum(gamma=2)", "fusion method 'combsum' has no parameter 'gamma'"),
        (Scoring.parse, "lucene(k3=1)", "unknown BM25 parameter 'k3'"),
        (Scoring.parse, "bm26", "unknown BM25 variant 'bm26'; choose one of lucene, robertson"),
    ],
)
def test_bad_names_say_what_was_expected(parse, text: str, message: str) -> None:
    with pytest.raises(StagewiseError) as caught:
        parse(text)
    assert message in str(caught.value)


def test_no_eval_reaches_python() -> None:
    """A value is a literal or a word, never code: a call, an attribute chain or an operator is refused."""
    for text in ["P@5(rel=(lambda: 1)())", "P@5(rel=open('x'))", "P@5(rel=1+1)", "rrf(rrf_k=[i for i in ()])"]:
        with pytest.raises(StagewiseError):
            Measure.parse(text) if text.startswith("P") else FusionMethod.parse(text)


_GRAMMAR_CHARS = "PRndcgmaprf1lucene@()=,'\"0123456789.-_ []:+*"


@given(st.text(alphabet=_GRAMMAR_CHARS, max_size=30) | st.text(max_size=30))
def test_any_text_parses_or_fails_cleanly(text: str) -> None:
    """Whatever a user types, every reader returns a value or raises the library's error: never a traceback."""
    for parse in (Measure.parse, FusionMethod.parse, Scoring.parse, parse_criterion, Normalization.parse):
        try:
            value = parse(text)
        except StagewiseError:
            continue
        again = parse(str(value)) if parse is not parse_criterion else parse(value.name)
        assert again == value


# ------------------------------------------------------------------------------------ the registry itself


def test_registry_folds_case_and_dashes_and_lists_canonical_names() -> None:
    reg = Registry("widget", _Named("a-b", ("alias",)), _Named("c", ()))
    assert reg["A_B"] is reg["a-b"] is reg["ALIAS"]
    assert reg.names() == ["a-b", "c"]
    with pytest.raises(ConventionError, match="unknown widget 'zz'; choose one of a-b, c"):
        reg.lookup("zz")
    assert reg.check_params("c", {"n": Param(int, 1, "n")}, {"n": 2.0}) == {"n": 2}
    with pytest.raises(ConventionError, match="widget 'c' has no parameter 'm'; its parameters: n"):
        reg.check_params("c", {"n": Param(int, 1, "n")}, {"m": 2})


class _Named:
    def __init__(self, name: str, aliases: tuple[str, ...]) -> None:
        self.name, self.aliases = name, aliases


def test_criterion_keeps_its_printed_form() -> None:
    """Outputs print f1:T as before the grammar; only the reader grew."""
    assert Criterion("f1", 0.5).name == "f1:0.5" and str(parse_criterion("F1")) == "f1:0.5"
    assert math.isclose(parse_criterion("f1: 0.25").threshold or 0, 0.25)
