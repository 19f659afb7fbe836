"""``stagewise encode CORPUS -o DIR [--model PATH] [--backend torch|onnx]``, and dense search for
``stagewise search``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from stagewise.cli.command import RegistryChoice
from stagewise.cli.common import CorpusFormat, ForceOption, ParentsOption, int_option, user_errors


class Dtype(StrEnum):
    float32 = "float32"
    float16 = "float16"


class Precision(StrEnum):  # stagewise.dense.backends.PRECISIONS
    auto = "auto"
    float32 = "float32"
    bfloat16 = "bfloat16"


CorpusArgument = Annotated[
    Path,
    typer.Argument(
        help="Documents: a BEIR folder (corpus.jsonl), JSONL (_id/id + title/text/contents), "
        "TSV (id<TAB>text) or a SMART file (.I records); .gz accepted."
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        help="A local sentence-transformers (or ONNX) model folder; default the packaged all-MiniLM-L6-v2. "
        "Nothing is downloaded."
    ),
]
BackendOption = Annotated[
    str,
    typer.Option(
        parser=RegistryChoice("stagewise.dense.backends", "BACKENDS"),
        help="The encoder backend: {names:stagewise.dense.backends:BACKENDS} (torch is sentence-transformers; "
        "onnx is onnxruntime on an export made once and kept in DIR/onnx).",
    ),
]
InputFormatOption = Annotated[CorpusFormat, typer.Option("--input-format", "-f", "--format", help="Corpus format.")]
BatchOption = Annotated[int, typer.Option(**int_option(1), help="Texts per batch (texts are length-sorted first).")]
PrecisionOption = Annotated[
    Precision,
    typer.Option(
        help="What the model's matrix products are computed in: auto is bfloat16 on the torch backend where the "
        "CPU has it natively (about twice as fast; cosine >= 0.9999 to float32), else float32.",
    ),
]
ThreadsOption = Annotated[int | None, typer.Option(**int_option(1), help="CPU threads for the model (default: all).")]
HnswOption = Annotated[
    bool, typer.Option("--hnsw", help="Also build an approximate HNSW index (faiss) and report its recall@k.")
]
TextFieldOption = Annotated[list[str] | None, typer.Option(help="JSONL field(s) joined into the text (repeatable).")]


def encode_command(
    corpus: CorpusArgument,
    output: Annotated[Path, typer.Option("--output", "-o", help="Dense index directory to write (replaced whole).")],
    model: ModelOption = None,
    backend: BackendOption = "torch",
    dtype: Annotated[Dtype, typer.Option(help="Vectors on disk: float32, or float16 (half the size).")] = Dtype.float32,
    batch_size: BatchOption = 64,
    precision: PrecisionOption = Precision.auto,
    threads: ThreadsOption = None,
    hnsw: HnswOption = False,
    force: ForceOption = False,
    parents: ParentsOption = False,
    fmt: InputFormatOption = CorpusFormat.auto,
    id_field: Annotated[str | None, typer.Option(help="JSONL field holding the document id.")] = None,
    text_field: TextFieldOption = None,
) -> None:
    """Encode a corpus into a dense index: vectors memory-mapped by `stagewise search`, with the model, its
    dimension, normalisation and a corpus checksum in DIR/meta.json.

    Texts are tokenised once, sorted by length into batches, and those longer than the model's limit are
    truncated and counted.

    Examples:

      stagewise encode ../shared/data/scifact -o scifact-dense

      stagewise encode corpus.jsonl -o dense --backend onnx --dtype float16

      stagewise encode corpus.jsonl -o dense --precision float32   # sentence-transformers' own arithmetic

      stagewise search scifact-dense queries.jsonl -k 100 -o dense.run
    """
    import shutil
    import time

    with user_errors():
        from stagewise import folders
        from stagewise.dense.index import OWNED_FILES, foreign_meta

        # before any work: a refusal after minutes of encoding would waste them
        folders.check_target(
            output,
            owned=OWNED_FILES,
            force=force,
            parents=parents,
            inputs=[corpus] + ([Path(model)] if model else []),
            what="dense index",
            foreign_file=foreign_meta,
        )
        from stagewise.cli.common import progress_bar
        from stagewise.dense.encoders import load_encoder
        from stagewise.dense.index import DenseIndex
        from stagewise.retrieval.collections import read_corpus

        started = time.perf_counter()
        documents = read_corpus(
            corpus,
            format=None if fmt is CorpusFormat.auto else fmt.value,
            id_field=id_field,
            text_fields=text_field or None,
        )
        scratch, cache = _onnx_cache(model, backend, output)
        try:
            encoder = load_encoder(
                model, backend=backend, onnx_cache=cache, batch_size=batch_size, threads=threads,
                precision=precision.value,
            )  # fmt: skip
            progress, update = progress_bar("encoding")
            with progress:
                index = DenseIndex.build(documents, encoder, dtype=dtype.value, progress=update)
            index.save(output, force=force)
        finally:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
        typer.echo(f"{encoder.last_report}", err=True)
        if hnsw:
            from stagewise.dense.approx import HNSWIndex

            approx = HNSWIndex.build(index)
            approx.save(output)
            typer.echo(f"hnsw: {approx.report}", err=True)
        elapsed = time.perf_counter() - started
        typer.echo(f"encoded {index!r} in {elapsed:.2f} s -> {output}", err=True)


def _onnx_cache(model: str | None, backend: str, output: Path) -> tuple[Path | None, Path | None]:
    """``(scratch folder, ONNX export folder)`` for an encode with ``backend``: none for torch or a model that is
    an ONNX folder already; the index's own DIR/onnx when an earlier encode left one; else a scratch folder the
    export is made in (removed after the encode), announced on stderr."""
    import tempfile

    from stagewise.dense.backends import BACKENDS
    from stagewise.dense.encoders import ONNX_FILE

    if BACKENDS.lookup(backend).name != "onnx" or (model and (Path(model) / ONNX_FILE).is_file()):
        return None, None
    if (output / "onnx" / ONNX_FILE).is_file():
        return None, output / "onnx"
    scratch = Path(tempfile.mkdtemp(prefix=".stagewise-onnx-export."))
    typer.echo("exporting the model to ONNX (once; kept in DIR/onnx)", err=True)
    return scratch, scratch / "onnx"
