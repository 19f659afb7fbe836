"""Fusion's options as one value (:class:`FusionOptions`) and its methods as registry entries that carry their
behaviour: a method added with one function and one entry is fused by ``fuse``, ``optimize`` and ``stagewise
fuse``, listed by ``--list-methods`` and ``--help``, with no other edit."""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.errors import ConventionError
from stagewise.fusion import METHODS, FusionOptions, fuse, fuse_to, optimize
from stagewise.fusion.methods import MethodInfo
from stagewise.fusion.table import FusionTable
from stagewise.fusion.train import Judged

RUN_A = "q1 Q0 A 1 0.9 a\nq1 Q0 B 2 0.8 a\nq1 Q0 C 3 0.7 a\nq2 Q0 X 1 5 a\n"
RUN_B = "q1 Q0 B 1 12 b\nq1 Q0 D 2 11 b\nq1 Q0 A 3 10 b\nq2 Q0 Y 1 1 b\n"
QRELS = "q1 0 B 1\nq1 0 A 0\nq2 0 Y 1\n"
RUNS = [{"q": {"A": 3.0, "B": 2.0}}, {"q": {"B": 3.0, "C": 2.0, "A": 1.0}}]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "a.run").write_text(RUN_A)
    (tmp_path / "b.run").write_text(RUN_B)
    (tmp_path / "qrels.txt").write_text(QRELS)
    return tmp_path


def invoke(*args: object):
    return CliRunner().invoke(app, ["fuse", *map(str, args)], env={"COLUMNS": "200", "NO_COLOR": "1"})


# ------------------------------------------------------------------------------------------- the options value
def test_options_fuse_the_same_as_keywords():
    by_keywords = fuse(RUNS, "wsum", norm="zscore", depth=2, weights=(0.7, 0.3), missing="min")
    options = FusionOptions("wsum", norm="zscore", depth=2, weights=(0.7, 0.3), missing="min")
    by_value = fuse(RUNS, options=options)
    assert by_value.doc_ids.to_list() == by_keywords.doc_ids.to_list()
    assert by_value.scores.tolist() == by_keywords.scores.tolist()
    assert by_value.fusion == by_keywords.fusion


def test_overrides_replace_fields_and_method_parameters():
    options = FusionOptions("rrf", depth=2)
    assert options.replace(rrf_k=20).fusion_method.param("rrf_k") == 20.0
    assert options.replace(depth=None).depth is None and options.depth == 2  # a value: the original is unchanged
    fused = fuse(RUNS, options=options, rrf_k=20)
    assert fused.fusion["method"] == "rrf(rrf_k=20)" and fused.fusion["depth"] == 2
    assert fuse(RUNS, "combsum", options=options).fusion["method"] == "combsum"  # the positional method wins
    assert dataclasses.replace(options, queries="intersection").queries == "intersection"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: FusionOptions().replace(depht=3), "unknown fusion option 'depht'; the options are method, norm"),
        (lambda: FusionOptions("combsum").replace(gamma=2), "and the parameters of combsum: none"),
        (lambda: FusionOptions().replace(k=10), "RRF's constant is called rrf_k, not k"),
        (lambda: FusionOptions(queries="some"), "unknown query policy 'some'; choose one of union, intersection"),
        (lambda: FusionOptions(missing="nan"), "unknown missing-document policy 'nan'; choose one of zero, min"),
        (lambda: FusionOptions(depth=0), "The 'depth' parameter of fuse must be an int >= 1 or None. Got 0"),
        (lambda: FusionOptions("combfoo"), "unknown fusion method 'combfoo'; choose one of rrf, combsum"),
        (lambda: FusionOptions(norm="l2"), "unknown normalisation 'l2'"),
        (lambda: FusionOptions("combsum", weights=(1, 2)), "fusion method 'combsum' has no parameter 'weights'"),
        (lambda: FusionOptions(5), "method must be a name such as 'rrf' or a FusionMethod, not int"),
        (lambda: fuse(RUNS, options={"method": "rrf"}), "options must be a FusionOptions, not dict"),
    ],
)
def test_bad_options_are_refused_when_made(make, message):
    with pytest.raises(ConventionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_bad_options_are_refused_before_the_runs_are_read(tmp_path):
    with pytest.raises(ConventionError, match="unknown query policy"):
        fuse([tmp_path / "absent.run"], queries="some")


def test_optimize_and_fuse_to_take_the_options(files):
    qrels = files / "qrels.txt"
    options = FusionOptions("wsum", norm="minmax")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        report = optimize([files / "a.run", files / "b.run"], qrels, options=options, metric="mrr", step=0.5)
        old = optimize([files / "a.run", files / "b.run"], qrels, "wsum", norm="minmax", metric="mrr", step=0.5)
    assert str(report.method) == str(old.method) and report.trials == old.trials
    assert report.run.fusion["normalization"] == "minmax"
    import io

    sink = io.BytesIO()
    statement = fuse_to([files / "a.run", files / "b.run"], sink, options=FusionOptions("rrf"), rrf_k=10)
    assert statement["method"] == "rrf(rrf_k=10)"
    local = fuse([files / "a.run", files / "b.run"], "rrf", rrf_k=10)
    assert sink.getvalue().decode().count("\n") == len(local)


# ------------------------------------------------------------------------------- behaviour on the method entry
def test_no_code_tests_a_method_name():
    """What a method does differently is an attribute of its entry (fit, missing_rule), not an if on its name."""
    import inspect

    from stagewise.fusion import api, engine, optimize, train

    for module in (api, train, optimize, engine):
        source = inspect.getsource(module)
        for name in ("condorcet", "posfuse", "probfuse", "segfuse", "slidefuse", "mapfuse", "bayesfuse"):
            assert f'"{name}"' not in source, (module.__name__, name)
    supervised = [name for name in METHODS.names() if METHODS[name].supervised]
    assert all(METHODS[name].fit is not None for name in supervised)
    assert [name for name in METHODS.names() if METHODS[name].missing_rule] == ["condorcet", "weighted_condorcet"]


def votes(t: FusionTable, *, missing: str = "zero") -> np.ndarray:
    """The number of runs that returned the document (a toy method: one function and one entry)."""
    return t.count.astype(np.float64)


def precision_weighted(t: FusionTable, *, share: object = None, missing: str = "zero") -> np.ndarray:
    """A toy supervised method: the sum, over the runs that returned the document, of the run's learned share
    of relevant results."""
    out = np.zeros(len(t))
    for r, cand in enumerate(t.cand_of):
        out[cand] += np.asarray(share)[r]
    return out


def fit_share(method, table: FusionTable, judged: Judged, train: np.ndarray) -> dict:
    """The toy's ``fit``: each run's share of relevant results over the training queries."""
    shares = []
    for r in range(table.n_runs):
        relevant = judged.relevant[table.cand_of[r][train[table.row_query(r)]]]
        shares.append(float(relevant.mean()) if len(relevant) else 0.0)
    return {"share": np.array(shares)}


@pytest.fixture
def toy_methods() -> Iterator[None]:
    """The two toy methods registered the way the docs say, and removed after the test."""
    METHODS.register(MethodInfo("votes", votes, "number of runs that returned the document", False, "zero"))
    METHODS.register(
        MethodInfo(
            "precision_weighted",
            precision_weighted,
            "sum of the runs' learned share of relevant results",
            False,
            "zero",
            trained=("share",),
            fit=fit_share,
            aliases=("pw",),
        )
    )
    yield
    METHODS.unregister("votes")
    METHODS.unregister("precision_weighted")


def test_a_registered_method_fuses_through_the_library(toy_methods, files):
    fused = fuse(RUNS, "votes")
    assert fused.doc_ids.to_list() == ["B", "A", "C"] and fused.scores.tolist() == [2.0, 2.0, 1.0]
    assert fused.fusion["method"] == "votes" and fused.fusion["method_formula"].startswith("number of runs")
    learned = fuse([files / "a.run", files / "b.run"], "PW", qrels=files / "qrels.txt")
    # a.run: 1 relevant (B) of 4 results; b.run: 2 relevant (B, Y) of 4: B 0.25 + 0.5, A the same, D and Y 0.5
    assert learned.fusion["trained"]["parameters"] == {"share": [0.25, 0.5]}
    assert learned.fusion["method"] == "precision_weighted"
    with pytest.raises(Exception, match="precision_weighted learns from judgements"):
        fuse(RUNS, "precision_weighted")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        report = optimize([files / "a.run", files / "b.run"], files / "qrels.txt", "pw", metric="mrr", folds=2)
    assert report.search == "trained" and len(report.folds) == 2


def test_a_registered_method_fuses_through_the_command_line(toy_methods, files):
    out = files / "v.run"
    result = invoke(files / "a.run", files / "b.run", "--method", "votes", "-o", out)
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines()[0] == "q1 Q0 B 1 2.0 votes"
    assert json.loads((files / "v.run.meta.json").read_text())["method"] == "votes"
    result = invoke(files / "a.run", files / "b.run", "--method", "pw", "--qrels", files / "qrels.txt")
    assert result.exit_code == 0, result.output
    listed = invoke("--list-methods").output
    assert "  votes: number of runs that returned the document\n" in listed
    assert "  precision_weighted: sum of the runs' learned share of relevant results [learns from --qrels]" in listed
    shown = " ".join(invoke("--help").output.split())
    assert "bayesfuse, votes, precision_weighted." in shown
    wrong = invoke(files / "a.run", "--method", "vote")
    assert wrong.exit_code == 2 and "choose one of rrf," in wrong.output
    assert ", votes, precision_weighted" in wrong.output


def test_help_lists_the_catalogues_and_no_hand_kept_copy():
    import inspect

    from stagewise.cli import fuse_cmd

    source = inspect.getsource(fuse_cmd)
    assert "combsum, combmnz" not in source and "minmax_inverted" not in source
    shown = " ".join(invoke("--help").output.split())
    for names in ("rrf, combsum, combmnz", "none, minmax, minmax_inverted", "union, intersection, error"):
        assert names in shown
    assert "zero, min, ignore, native" in shown and "auto, grid, coordinate" in shown


def test_report_format_is_format_and_the_old_spelling_still_works(files):
    base = [files / "a.run", files / "b.run", "-m", "wsum", "--optimize", "--qrels", files / "qrels.txt"]
    new = invoke(*base, "--metric", "mrr", "--step", "0.5", "-o", files / "n.run", "--format", "json")
    old = invoke(*base, "--metric", "mrr", "--step", "0.5", "-o", files / "o.run", "--report-format", "json")
    assert new.exit_code == old.exit_code == 0, old.output
    assert json.loads(new.stdout) == json.loads(old.stdout)
    assert "--report-format for --format is deprecated; use --format" in old.stderr
    assert "--report-format" not in new.stderr
    text = invoke(*base, "--metric", "mrr", "--step", "0.5", "-o", files / "t.run", "--format", "text")
    assert text.exit_code == 0 and text.stdout.startswith("metric: mrr; search: grid")


def test_help_reads_the_catalogues_without_numpy():
    """``stagewise fuse --help`` lists the methods, normalisations and policies from the registries, and the
    registries import numpy only when a method runs."""
    import subprocess
    import sys

    code = (
        "import sys; from typer.testing import CliRunner; from stagewise.cli import app; "
        "out = CliRunner().invoke(app, ['fuse', '--help']).output; "
        "print('bayesfuse' in out, [m for m in ('numpy', 'polars', 'scipy') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True []"


def test_optimize_takes_the_evaluation_conventions(files):
    from stagewise.metrics.context import Conventions

    runs, qrels = [files / "a.run", files / "b.run"], files / "qrels.txt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        by_value = optimize(runs, qrels, "wsum", metric="mrr", step=0.5, conventions=Conventions(ties="docid-double"))
        by_keyword = optimize(runs, qrels, "wsum", metric="mrr", step=0.5, ties="docid-double")
        overridden = optimize(runs, qrels, "wsum", metric="mrr", step=0.5, conventions=Conventions(), ties="input")
    assert by_value.ties == by_keyword.ties == "docid-double" and by_value.trials == by_keyword.trials
    assert overridden.ties == "input"
    with pytest.raises(ConventionError):
        optimize(runs, qrels, "wsum", conventions=Conventions(), ties="sideways")


@pytest.mark.parametrize(
    "text",
    [
        "rrf(rrf_k=60)",
        "rrf(rrf_k=20,depth=100)",
        "wsum(weights=(0.3,0.7),norm=zscore)",
        "combmnz(norm=minmax,depth=10,queries=intersection,missing=min)",
        "condorcet",
        "probfuse(segments=10,norm=rank)",
    ],
)
def test_options_print_in_the_spec_grammar_and_parse_back(text):
    options = FusionOptions.parse(text)
    assert str(options) == text and FusionOptions.parse(str(options)) == options


def test_options_spelling_is_the_same_value_as_the_keywords():
    assert FusionOptions.parse("WSUM(weights=[0.3, 0.7], norm=z-score)") == FusionOptions(
        "wsum", norm="zscore", weights=(0.3, 0.7)
    )
    assert str(FusionOptions("rrf", params={"weights": (1, 2)})) == "rrf(rrf_k=60,weights=(1,2))"
    with pytest.raises(ConventionError, match="fusion method 'combsum' has no parameter 'gamma'"):
        FusionOptions.parse("combsum(gamma=2)")
    with pytest.raises(ConventionError, match="takes no @ part"):
        FusionOptions.parse("rrf@10")


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"search": "random"}, "unknown search 'random'"),
        ({"metric": "ndcg@x"}, "The 'cutoff' parameter of ndcg must be an int >= 1"),
        ({"method": "combsum"}, "combsum has no weights to tune and learns nothing from judgements; optimise a "
         "weighted method (rrf, wsum, wmnz, mixed, weighted_bordafuse, weighted_condorcet) or a supervised one "
         "(posfuse, probfuse, segfuse, slidefuse, mapfuse, bayesfuse)"),
        ({"queries": "some"}, "unknown query policy 'some'"),
    ],
)  # fmt: skip
def test_optimize_checks_its_choices_before_reading_anything(tmp_path, keywords, message):
    absent = [tmp_path / "absent.run"]
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")):
        optimize(absent, tmp_path / "absent.qrels", **{"method": "wsum", **keywords})
