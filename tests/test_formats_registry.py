"""Formats as registries (issue 20): the input formats the readers take and the output formats the renderers
write are each a ``spec.Registry``; the command line's choices, help and errors come from them, so a format
added to a registry is listed and accepted with no edit to the command line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stagewise.data import classic
from stagewise.data.formats import CORPUS_FORMATS, QRELS_FORMATS, RUN_FORMATS, format_of_extension
from stagewise.data.readers import FORMATS
from stagewise.data.readers import QRELS_FORMATS as READ_QRELS_FORMATS
from stagewise.errors import ConventionError


def test_the_readers_take_the_registries_names() -> None:
    assert tuple(RUN_FORMATS.names()) == FORMATS
    assert tuple(QRELS_FORMATS.names()) == READ_QRELS_FORMATS
    # the classic collections' layouts, then ndeval's subtopic qrels (read by stagewise.data.subtopics)
    assert tuple(n for n in QRELS_FORMATS.names() if n not in RUN_FORMATS) == (*classic.QRELS_LAYOUTS, "subtopics")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("a.run", "trec"), ("a.JSONL", "jsonl"), ("a.ndjson.gz", "jsonl"), ("x/a.pq", "parquet"), ("a.csv", "csv")],
)
def test_a_file_extension_names_its_format(name: str, expected: str) -> None:
    assert format_of_extension(name, RUN_FORMATS) == expected


def test_an_unknown_input_format_lists_the_registry() -> None:
    with pytest.raises(ConventionError, match="choose one of auto, beir, jsonl, tsv, smart"):
        CORPUS_FORMATS.lookup("xml")


def test_the_cli_choices_are_the_registries() -> None:
    from stagewise.cli.common import CorpusFormat, QrelsFormat

    assert [c.value for c in QrelsFormat] == QRELS_FORMATS.names()
    assert [c.value for c in CorpusFormat] == CORPUS_FORMATS.names()


def test_the_format_catalogue_is_light() -> None:
    code = "import sys, stagewise.data.formats; print(sorted({'numpy', 'polars', 'scipy'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# ----------------------------------------------------------------------------------------- output formats


def render_toy(result, **options) -> str:
    """A new output format in a few lines: one 'run metric=value' line per run and metric."""
    return "".join(
        f"{run} {metric}={value:.3f}\n" for run, means in result.means.items() for metric, value in means.items()
    )


@pytest.fixture
def toy():
    """The toy format, registered the way docs/architecture.md says, and taken out again after the test."""
    from stagewise.report import FORMATS, OutputFormat

    entry = FORMATS.register(
        OutputFormat("toy", "one line a run and metric", ("toy",), renderers={"EvalResult": render_toy})
    )
    yield entry
    FORMATS.unregister("toy")


def _sample(name: str) -> str:
    from stagewise._bundled import sample_path

    return str(sample_path(name))


def test_a_registered_format_renders_through_the_library(toy) -> None:
    from stagewise import evaluate, report

    result = evaluate(_sample("qrels.test"), _sample("results.test"), ["map", "P@5"])
    assert "toy" in report.formats(result) and report.offered("EvalResult")[-1] == "toy"
    assert report.render(result, "TOY") == render_toy(result)
    assert report.render(result, "csv").startswith("run,map,P@5")  # the built-in formats are untouched


def test_a_registered_format_is_a_cli_choice_with_no_cli_edit(toy, tmp_path) -> None:
    from typer.testing import CliRunner

    from stagewise.cli import app

    runner = CliRunner()
    args = ["eval", _sample("qrels.test"), _sample("results.test"), "-m", "map"]
    done = runner.invoke(app, [*args, "--format", "toy"])
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("results.test map=0.")
    written = runner.invoke(app, [*args, "-o", str(tmp_path / "scores.toy")])  # the extension asks for it
    assert written.exit_code == 0, written.output
    assert (tmp_path / "scores.toy").read_text() == done.stdout
    help_text = runner.invoke(app, ["eval", "--help"], env={"COLUMNS": "250"}).stdout
    assert "table, json, csv, markdown, latex, beir, mteb, toy" in help_text
    refused = runner.invoke(app, ["validate", _sample("qrels.test"), _sample("results.test"), "--format", "toy"])
    assert (
        refused.exit_code == 2
        and refused.stderr == "stagewise: error: unknown format 'toy'; choose one of table, json\n"
    )


def test_an_unknown_output_format_is_one_line_listing_the_registry() -> None:
    from typer.testing import CliRunner

    from stagewise.cli import app

    done = CliRunner().invoke(app, ["eval", _sample("qrels.test"), _sample("results.test"), "--format", "xml"])
    assert done.exit_code == 2
    assert done.stderr == (
        "stagewise: error: unknown format 'xml'; choose one of table, json, csv, markdown, latex, beir, mteb\n"
    )


@pytest.mark.parametrize("kind", ["EvalResult", "Comparison", "RagReport", "FusionReport", "ValidationReport"])
def test_each_renderer_writes_what_the_registry_says(kind: str) -> None:
    from importlib import import_module

    from stagewise import report

    module = import_module(report._RENDERERS[kind])
    plugins = {e.name for e in report.FORMATS.values() if kind in e.renderers}  # beir, mteb: report/beir.py
    assert set(report.offered(kind)) == set(module.FORMATS) | plugins


def test_the_cli_policy_choices_are_the_librarys() -> None:
    from stagewise.cli.common import Duplicates, EngineChoice, Missing, Ties
    from stagewise.data.run import DUPLICATE_POLICIES
    from stagewise.engines import ENGINES
    from stagewise.metrics.context import MISSING_QUERY_POLICIES, TIE_POLICIES

    assert tuple(Ties) == TIE_POLICIES and Ties.docid_double == "docid-double"
    assert tuple(Missing) == MISSING_QUERY_POLICIES
    assert tuple(Duplicates) == DUPLICATE_POLICIES
    assert list(EngineChoice) == ENGINES.names()
