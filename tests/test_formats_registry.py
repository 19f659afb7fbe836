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
    assert tuple(n for n in QRELS_FORMATS.names() if n not in RUN_FORMATS) == classic.QRELS_LAYOUTS


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
