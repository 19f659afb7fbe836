"""``stagewise index CORPUS -o INDEX_DIR``"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any

import typer

from stagewise.cli.common import (
    CorpusFormat,
    ForceOption,
    ParentsOption,
    float_option,
    int_option,
    progress_bar,
    stdin_as_file,
    user_errors,
)


def stopwords_option(value: str):
    """``english`` / ``none``, ``@FILE`` (one word a line) or ``word,word,...``."""
    from stagewise.errors import InputError
    from stagewise.retrieval.analysis import STOPWORD_LISTS

    if value in STOPWORD_LISTS:
        return value
    if value.strip().lower() in STOPWORD_LISTS:  # English, NONE: the list, not a one-word list
        return value.strip().lower()
    if "," not in value and not value.startswith("@"):
        _refuse_lookalike(value.strip(), list(STOPWORD_LISTS))
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            words = path.read_text(encoding="utf-8").split()
        except OSError as exc:
            raise InputError(path, f"cannot read the stopword file ({exc.strerror})") from None
        return tuple(w.lower() for w in words)
    return tuple(w.strip().lower() for w in value.split(",") if w.strip())


def _refuse_lookalike(word: str, lists: list[str]) -> None:
    """A one-word --stopwords that is a misspelt list name (englsh) or a file without its @ would silently be a
    list of that one word: refused, saying what to write."""
    import difflib
    import os

    from stagewise.errors import InputError

    if os.path.isfile(word):
        raise InputError("--stopwords", f"{word!r} is a file", hint=f"write @{word} to read a word a line from it")
    close = difflib.get_close_matches(word.lower(), lists, n=1, cutoff=0.6)
    if close:
        raise InputError(
            "--stopwords",
            f"{word!r} would be a list of that one word",
            hint=f"did you mean {close[0]!r}? for the one word, write it with a comma: {word},",
        )


VariantOption = Annotated[
    str, typer.Option(help="BM25 variant: lucene, robertson, atire, bm25l, bm25+, okapi-rank_bm25.")
]
StopwordsOption = Annotated[
    str, typer.Option(help="english (Lucene's 33 words), none, @FILE (a word a line) or a,b,c.")
]
AddOption = Annotated[
    bool,
    typer.Option(
        "--add",
        help="Append the corpus to the index at --output; only the new documents are analysed, with the "
        "index's own analyser and scoring.",
    ),
]
BatchSizeOption = Annotated[
    int,
    typer.Option(
        "--batch-size",
        **int_option(1),
        help="Documents analysed at a time; each batch's postings are written to disk and merged at the end "
        "(memory grows with this, not with the corpus).",
    ),
]


def index_command(
    corpus: Annotated[
        Path,
        typer.Argument(
            help="Documents: a BEIR folder (corpus.jsonl), JSONL (_id/id + title/text/contents), "
            "TSV (id<TAB>text) or a SMART file (.I records); .gz accepted; - reads standard input."
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            help="Index folder to write: new, empty, or an index (replaced in one step); never the current "
            "folder or one holding the corpus.",
        ),
    ],
    fmt: Annotated[
        CorpusFormat, typer.Option("--input-format", "-f", "--format", help="Corpus format.")
    ] = CorpusFormat.auto,
    variant: VariantOption = "lucene",
    k1: Annotated[
        float | None, typer.Option(**float_option(), help="Default k1 (variant's default: 1.2; 1.5 for okapi).")
    ] = None,
    b: Annotated[float | None, typer.Option(**float_option(), help="Default b (0.75).")] = None,
    delta: Annotated[
        float | None, typer.Option(**float_option(), help="Default delta of bm25l (0.5) and bm25+ (1.0).")
    ] = None,
    epsilon: Annotated[
        float | None, typer.Option(**float_option(), help="IDF floor factor of okapi-rank_bm25 (0.25).")
    ] = None,
    stemmer: Annotated[str, typer.Option(help="english (Snowball), porter or none.")] = "english",
    stopwords: StopwordsOption = "english",
    min_length: Annotated[int, typer.Option(**int_option(1), help="Shortest token kept, in characters.")] = 2,
    lowercase: Annotated[bool, typer.Option("--lowercase/--keep-case", help="Lowercase before tokenising.")] = True,
    add: AddOption = False,
    id_field: Annotated[str | None, typer.Option(help="JSONL field holding the document id.")] = None,
    text_field: Annotated[
        list[str] | None, typer.Option(help="JSONL field(s) joined into the text (repeatable).")
    ] = None,
    force: ForceOption = False,
    parents: ParentsOption = False,
    batch_size: BatchSizeOption = 250_000,
) -> None:
    """Build a BM25 index: term statistics saved to a directory, memory-mapped by `stagewise search`.

    The variant and parameters given here are the index's defaults; `stagewise search` can change k1, b,
    delta and even the variant without re-indexing. The analyser settings are stored and applied to queries.

    Examples:

      stagewise index corpus.jsonl -o bm25-index

      stagewise index ../shared/data/cranfield/cran.all.1400 -o cran-index --k1 0.9 --b 0.4 --stemmer porter

      stagewise index more-docs.jsonl -o bm25-index --add

      gunzip -c corpus.jsonl.gz | stagewise index - -o bm25-index
    """
    import time

    with user_errors():
        from stagewise import folders
        from stagewise.retrieval.index import INDEX_FILES, foreign_meta

        started = time.perf_counter()
        inputs = [corpus] + ([Path(stopwords[1:])] if stopwords.startswith("@") else [])
        # before any work: a refusal after minutes of indexing would waste them
        folders.check_target(
            output, owned=INDEX_FILES, force=force, parents=parents, inputs=inputs, foreign_file=foreign_meta
        )
        fields = {"id_field": id_field, "text_fields": text_field or None}
        with contextlib.ExitStack() as stack:
            source = stack.enter_context(stdin_as_file("corpus", fmt.value)) if str(corpus) == "-" else corpus
            corpus_format = (
                source.suffix[1:] if source is not corpus else None if fmt is CorpusFormat.auto else fmt.value
            )
            progress, update = progress_bar("indexing" if not add else "analysing")
            stack.enter_context(progress)
            if add:
                if any(v is not None for v in (k1, b, delta, epsilon)) or variant != "lucene":
                    typer.echo(
                        "stagewise: note: --add keeps the index's own analyser, variant and parameters", err=True
                    )
                index, added = _add(source, corpus_format, fields, output, force, update)
            else:
                analyser = dict(stemmer=stemmer, stopwords=stopwords, lowercase=lowercase, min_length=min_length)
                scoring = dict(variant=variant, k1=k1, b=b, delta=delta, epsilon=epsilon)
                index = _build(source, corpus_format, fields, batch_size, output, analyser, scoring, force, update)
        elapsed = time.perf_counter() - started
        verb = f"added {added:,} documents; now" if add else "indexed"
        typer.echo(f"{verb} {index!r} in {elapsed:.2f} s -> {output}", err=True)


def _add(
    source: Path, corpus_format: str | None, fields: dict, output: Path, force: bool, update: Any
) -> tuple[Any, int]:
    """``--add``: the corpus read whole, analysed with the index's own analyser, appended and saved; the index
    and the number of documents added."""
    from stagewise.data.collections import read_corpus
    from stagewise.retrieval.index import BM25Index

    documents = read_corpus(source, format=corpus_format, **fields)
    index = BM25Index.load(output).add(documents, progress=update)
    index.save(output, force=force)
    return index, len(documents)


def _build(
    source: Path,
    corpus_format: str | None,
    fields: dict,
    batch_size: int,
    output: Path,
    analyser: dict,
    scoring: dict,
    force: bool,
    update: Any,
) -> Any:
    """A new index: the corpus read and analysed batch by batch, each batch's postings spilled to disk and
    merged at the end, so memory does not grow with the corpus beyond its ids and lengths."""
    from stagewise.data.collections import iter_corpus
    from stagewise.retrieval.analysis import Analyser
    from stagewise.retrieval.ondisk import build_on_disk

    words = stopwords_option(analyser.pop("stopwords"))
    batches = iter_corpus(source, format=corpus_format, batch_size=batch_size, **fields)
    return build_on_disk(
        batches, output, analyser=Analyser(stopwords=words, **analyser), force=force, progress=update, **scoring
    )
