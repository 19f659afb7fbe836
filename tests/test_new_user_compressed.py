"""A run or qrels file compressed with something stagewise does not read (bzip2, xz, zstd, zip) is named as such,
with the command to decompress it: it was "holds NUL bytes: it looks like a binary file (check the path)".
gzip and LZ4 are read as before; a text file that merely starts with "BZh" is text."""

from __future__ import annotations

import bz2
import io
import lzma
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app

SAMPLE = Path(__file__).parents[1] / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
QRELS, RUN = SAMPLE / "qrels.test", SAMPLE / "results.test"


def _zipped(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results.test", data)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("suffix", "pack", "named", "tool"),
    [
        (".bz2", bz2.compress, "bzip2-compressed", "bunzip2 -k FILE"),
        (".xz", lzma.compress, "xz-compressed", "unxz -k FILE"),
        (".zip", _zipped, "a zip archive", "unzip FILE"),
    ],
)
@pytest.mark.parametrize("which", ["qrels", "run"])
def test_a_file_compressed_otherwise_is_named(tmp_path: Path, suffix: str, pack, named: str, tool: str, which: str):
    source = QRELS if which == "qrels" else RUN
    packed = tmp_path / (source.name + suffix)
    packed.write_bytes(pack(source.read_bytes()))
    args = ["eval", str(packed), str(RUN)] if which == "qrels" else ["eval", str(QRELS), str(packed)]
    done = CliRunner().invoke(app, [*args, "-m", "map"])
    assert done.exit_code == 2
    assert done.output == (
        f"stagewise: error: {packed}:1: is {named}, which stagewise does not decompress; expected text, gzip (.gz) "
        f"or LZ4 (.lz4) (decompress it first ({tool}), or recompress it with gzip)\n"
    )


def test_zstd_is_named_too(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    packed = tmp_path / "results.test.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(RUN.read_bytes()))
    done = CliRunner().invoke(app, ["eval", str(QRELS), str(packed), "-m", "map"])
    assert "is zstd-compressed, which stagewise does not decompress" in done.output


def test_a_text_that_starts_like_bzip2_is_still_text(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("BZh1 0 d1 1\n")
    run = tmp_path / "run.txt"
    run.write_text("BZh1 Q0 d1 1 1.0 tag\n")
    done = CliRunner().invoke(app, ["eval", str(qrels), str(run), "-m", "map", "-f", "csv"])
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[1] == "run.txt,1.0"
