"""The input formats the readers take, as registries: one entry per format, with its aliases, the file extensions
that name it and a line of help.

The command line builds its ``--qrels-format`` and ``--input-format`` choices and help from these registries
(no hand-kept copy), and the readers take their names and extensions from them. This module imports nothing
heavy (no numpy, no polars), so ``stagewise --help`` can read it.

>>> QRELS_FORMATS.lookup("JSONL").name, RUN_FORMATS.names()
('jsonl', ['trec', 'json', 'jsonl', 'csv', 'tsv', 'parquet'])
>>> format_of_extension("run.ndjson.gz", RUN_FORMATS)
'jsonl'

Adding a format is an entry here and its reader (``data/readers.py`` for a run or qrels layout,
``data/collections.py`` for a corpus): the command line lists and accepts it with no edit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from stagewise.errors import ConventionError
from stagewise.spec import Registry


@dataclass(frozen=True)
class InputFormat:
    """A format a reader takes: its ``name``, other ``aliases``, the file ``extensions`` that name it (without
    the dot, before any ``.gz`` or ``.lz4``) and a line of ``help``."""

    name: str
    help: str
    extensions: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()


_TABLES = (
    InputFormat(
        "trec",
        "whitespace-separated columns, trec_eval's layout, or a 3-column 'qid docid rank' run (ordered by rank) and "
        "2-column 'qid docid' qrels (each pair relevant); any other extension, .gz or .lz4 too",
        ("trec", "txt"),
    ),
    InputFormat("json", "one JSON document: {query: {doc: value}} or a list of records", ("json",)),
    InputFormat("jsonl", "one JSON record a line", ("jsonl", "ndjson")),
    InputFormat("csv", "comma-separated columns with a header", ("csv",)),
    InputFormat("tsv", "tab-separated columns with a header", ("tsv",)),
    InputFormat("parquet", "a Parquet table", ("parquet", "pq")),
)

#: What :func:`stagewise.data.read_run` reads.
RUN_FORMATS: Registry[InputFormat] = Registry("run format", *_TABLES, error=ConventionError)

#: What :func:`stagewise.data.read_qrels` reads: the run formats and the classic collections' qrels layouts.
QRELS_FORMATS: Registry[InputFormat] = Registry(
    "qrels format",
    *_TABLES,
    InputFormat("cranfield", "'qid docid grade' with grade 1 best (-> label 4) and -1 not relevant (-> 0)"),
    InputFormat("cisi", "'qid docid ...' pairs, each relevant (CISI, CACM, ADI)"),
    InputFormat(
        "subtopics",
        "ndeval's 'qid subtopic docid label': the iteration column is the subtopic (diversity measures)",
        aliases=("ndeval",),
    ),
    error=ConventionError,
)

#: What :func:`stagewise.data.collections.read_corpus` and ``read_queries`` read; ``auto`` tells it from the name.
CORPUS_FORMATS: Registry[InputFormat] = Registry(
    "corpus format",
    InputFormat("auto", "from the name: a folder is BEIR, .jsonl JSONL, .tsv TSV, .I records SMART"),
    InputFormat("beir", "a BEIR folder (corpus.jsonl, queries.jsonl)"),
    InputFormat("jsonl", "one JSON record a line (_id/id and title/text/contents)", ("jsonl", "ndjson", "json")),
    InputFormat("tsv", "id<TAB>text a line", ("tsv", "txt", "csv")),
    InputFormat("smart", "SMART records (.I, .T, .W), as the classic collections"),
    error=ConventionError,
)


#: What a document listed twice for one query of a run does (``read_run(duplicates=...)``): an error naming the
#: line, or the first or the best-scored listing kept.
DUPLICATE_POLICIES: tuple[str, ...] = ("error", "first", "best")


def format_of_extension(path: str | os.PathLike[str], formats: Registry[InputFormat], default: str = "trec") -> str:
    """The format whose extensions name ``path`` (a ``.gz`` or ``.lz4`` looked through), else ``default``."""
    name = os.fspath(path).lower().removesuffix(".gz").removesuffix(".lz4")
    suffix = os.path.splitext(name)[1].lstrip(".")
    for entry in dict.fromkeys(formats.values()):
        if suffix in entry.extensions:
            return entry.name
    return default


__all__ = [
    "CORPUS_FORMATS",
    "DUPLICATE_POLICIES",
    "QRELS_FORMATS",
    "RUN_FORMATS",
    "InputFormat",
    "format_of_extension",
]
