"""A saved dense index is untrusted input, as a BM25 index is (tests/test_index_safety.py).

The tampered-index corpus is made here from a small index of unit vectors (a letter-count encoder, so no
model is needed) and its HNSW file: rows of 1e38, infinity or NaN, zero rows under cosine, vectors retyped to
int8, bool, float64 or a structured dtype, truncated, padded or special files, ``doc_ids.json`` as integers,
a dict, with a lone surrogate, nested, duplicated, short or endless, metadata fields missing or wrong, an
HNSW file over other or fewer vectors or not an HNSW file at all. "Honest" cases also rewrite the recorded
checksums, as a tamperer who knows the format would, so the structural checks (not the checksum) must catch
them. Every case must end in one ``InputError`` naming the index folder and the file, with a hint to
re-encode (``stagewise search``: exit 2, one line, no traceback), never in a hang, a crash or a result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.dense.index import DenseIndex
from stagewise.errors import InputError, StagewiseError
from tests.dense_helpers import HAS_FAISS, Letters, needs_faiss, needs_model

N = 60
QUERIES = {"q1": "lift of a wing", "q2": "heat transfer", "q3": "boundary layer"}
STAGEWISE = Path(sys.executable).parent / "stagewise"  # the console entry point, as a user runs it
runner = CliRunner()


def _documents() -> dict[str, str]:
    words = ["lift", "wing", "heat", "plate", "flow", "boundary", "layer", "shock", "transfer", "cone", "jet"]
    return {f"d{i}": " ".join(words[(i * 7 + j) % len(words)] for j in range(3 + i % 5)) for i in range(N)}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dense") / "index"
    index = DenseIndex.build(_documents(), Letters(normalized=True))
    index.save(folder)
    if HAS_FAISS:
        from stagewise.dense.approx import HNSWIndex

        HNSWIndex.build(index, sample=20).save(folder)
    return folder


@pytest.fixture
def copy(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "index"
    shutil.copytree(built, target)
    return target


# ------------------------------------------------------------------------------------------- tampering


def _meta(folder: Path) -> dict:
    return json.loads((folder / "meta.json").read_text())


def _write_meta(folder: Path, meta: dict) -> None:
    (folder / "meta.json").write_text(json.dumps(meta))


def _block_crcs(raw: bytes, block: int) -> list[str]:
    """zlib's CRC-32 of each ``block`` bytes, computed here without the index's code."""
    return [f"{zlib.crc32(raw[at : at + block]):08x}" for at in range(0, len(raw), block)]


def _vectors(folder: Path) -> np.ndarray:
    return np.array(np.load(folder / "embeddings.npy"))


def _save_vectors(folder: Path, array: np.ndarray, *, honest: bool) -> None:
    """Replace the vectors; ``honest`` also records their CRC-32s (per the manifest's rows a block)."""
    np.save(folder / "embeddings.npy", array, allow_pickle=False)
    if honest:
        meta = _meta(folder)
        entry = meta["arrays"]["embeddings"]
        row_bytes = array.dtype.itemsize * (array.shape[1] if array.ndim == 2 else 1)
        entry["crc32"] = _block_crcs(np.ascontiguousarray(array).tobytes(), entry["crc32_rows"] * row_bytes)
        _write_meta(folder, meta)


def _edit_vectors(change: Callable[[np.ndarray], np.ndarray], honest: bool = True) -> Callable[[Path], None]:
    return lambda folder: _save_vectors(folder, change(_vectors(folder)), honest=honest)


def _set_row(row: int, value: float, honest: bool = True) -> Callable[[Path], None]:
    def change(a: np.ndarray) -> np.ndarray:
        a[row] = value
        return a

    return _edit_vectors(change, honest)


def _save_ids(folder: Path, content: object, *, honest: bool = True) -> None:
    """Replace doc_ids.json (bytes as they are, anything else as JSON); ``honest`` records its size and CRC."""
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    (folder / "doc_ids.json").write_bytes(data)
    if honest:
        meta = _meta(folder)
        meta["arrays"]["doc_ids"].update(bytes=len(data), crc32=f"{zlib.crc32(data):08x}")
        _write_meta(folder, meta)


def _ids(change: Callable[[list], object], honest: bool = True) -> Callable[[Path], None]:
    return lambda folder: _save_ids(folder, change(json.loads((folder / "doc_ids.json").read_text())), honest=honest)


def _meta_edit(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def tamper(folder: Path) -> None:
        meta = _meta(folder)
        change(meta)
        _write_meta(folder, meta)

    return tamper


def _truncate(name: str, keep: float) -> Callable[[Path], None]:
    def tamper(folder: Path) -> None:
        data = (folder / name).read_bytes()
        (folder / name).write_bytes(data[: int(len(data) * keep)])

    return tamper


def _header_only(folder: Path) -> None:
    data = (folder / "embeddings.npy").read_bytes()
    (folder / "embeddings.npy").write_bytes(data[: len(data) - N * 26 * 4])


def _special(name: str, kind: str) -> Callable[[Path], None]:
    def tamper(folder: Path) -> None:
        (folder / name).unlink()
        if kind == "fifo":
            os.mkfifo(folder / name)  # reading one blocks until a writer comes: forever
        elif kind == "dir":
            (folder / name).mkdir()
        else:
            (folder / name).symlink_to("/dev/zero")  # reading one never ends

    return tamper


def _structured(a: np.ndarray) -> np.ndarray:
    out = np.zeros(len(a), dtype=[("v", "<f4", (26,))])
    out["v"] = a
    return out


def _swap_rows(a: np.ndarray) -> np.ndarray:
    a[[4, 5]] = a[[5, 4]]  # every row still a unit vector: only the checksum tells
    return a


def _rename_id(ids: list) -> list:
    ids[7] = "dZ"  # the same length as "d7": only the checksum tells
    return ids


def _drop(key: str) -> Callable[[dict], object]:
    return lambda meta: meta.pop(key)


VECTOR_CASES: dict[str, Callable[[Path], None]] = {
    "row-1e38": _set_row(3, 1e38),
    "row-1e38-checksum-unchanged": _set_row(3, 1e38, honest=False),
    "row-inf": _set_row(3, np.inf),
    "row-minus-inf": _set_row(9, -np.inf),
    "row-nan": _set_row(11, np.nan),
    "row-nan-checksum-unchanged": _set_row(11, np.nan, honest=False),
    "row-zero-under-cosine": _set_row(2, 0.0),
    "all-zero-vectors": _edit_vectors(np.zeros_like),
    "row-half-length": _edit_vectors(lambda a: np.concatenate([a[:1] * 0.5, a[1:]])),
    "rows-swapped": _edit_vectors(_swap_rows, honest=False),
    "int8-vectors": _edit_vectors(lambda a: (a * 100).astype(np.int8)),
    "bool-vectors": _edit_vectors(lambda a: a > 0),
    "float64-vectors": _edit_vectors(lambda a: a.astype(np.float64)),
    "float16-vectors": _edit_vectors(lambda a: a.astype(np.float16)),
    "big-endian-vectors": _edit_vectors(lambda a: a.astype(">f4")),
    "structured-vectors": _edit_vectors(_structured),
    "transposed-vectors": _edit_vectors(lambda a: np.ascontiguousarray(a.T)),
    "fortran-vectors": _edit_vectors(np.asfortranarray),
    "fewer-rows": _edit_vectors(lambda a: a[:-1]),
    "one-dimensional": _edit_vectors(lambda a: a.ravel()),
    "empty-embeddings": lambda folder: (folder / "embeddings.npy").write_bytes(b""),
    "header-only-embeddings": _header_only,
    "truncated-embeddings": _truncate("embeddings.npy", 0.6),
    "padded-embeddings": lambda folder: (folder / "embeddings.npy").open("ab").write(b"\0" * 104),
    "not-npy-embeddings": lambda folder: (folder / "embeddings.npy").write_bytes(b"vectors, honest\n" * 100),
    "pickle-embeddings": lambda folder: (folder / "embeddings.npy").write_bytes(
        b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (60, 26), }"
        + b" " * 45
        + b"\n"
        + b"\x80\x04" * 20
    ),
    "missing-embeddings": lambda folder: (folder / "embeddings.npy").unlink(),
    "fifo-embeddings": _special("embeddings.npy", "fifo"),
    "folder-as-embeddings": _special("embeddings.npy", "dir"),
    "dev-zero-embeddings": _special("embeddings.npy", "zero"),
}

ID_CASES: dict[str, Callable[[Path], None]] = {
    "ids-integers": _ids(lambda ids: list(range(len(ids)))),
    "ids-dict": _ids(lambda ids: {i: i for i in ids}),
    "ids-lone-surrogate": lambda folder: _save_ids(
        folder, json.dumps([f"d{i}" for i in range(N - 1)] + ["\ud800"]).encode()
    ),
    "ids-deeply-nested": lambda folder: _save_ids(folder, b"[" * 200_000 + b"]" * 200_000),
    "ids-nested-lists": _ids(lambda ids: [[i] for i in ids]),
    "ids-duplicated": _ids(lambda ids: [*ids[:-1], ids[0]]),
    "ids-fewer": _ids(lambda ids: ids[:-1]),
    "ids-more": _ids(lambda ids: [*ids, "extra"]),
    "ids-null": _ids(lambda ids: None),
    "ids-not-json": lambda folder: _save_ids(folder, b'["d0", "d1"'),
    "ids-not-utf8": lambda folder: _save_ids(folder, b'["\xff"]'),
    "ids-renamed-checksum-unchanged": _ids(_rename_id, honest=False),
    "ids-grown-size-unchanged": _ids(lambda ids: [*ids, "x"], honest=False),
    "ids-size-huge": _meta_edit(lambda meta: meta["arrays"]["doc_ids"].update(bytes=2**50)),
    "missing-ids": lambda folder: (folder / "doc_ids.json").unlink(),
    "fifo-ids": _special("doc_ids.json", "fifo"),
    "dev-zero-ids": _special("doc_ids.json", "zero"),
}

META_CASES: dict[str, Callable[[Path], None]] = {
    **{f"meta-no-{key}": _meta_edit(_drop(key)) for key in ("documents", "dimension", "dtype", "normalized", "model")},
    "meta-no-arrays": _meta_edit(_drop("arrays")),
    "meta-version-1": _meta_edit(lambda meta: (meta.pop("arrays"), meta.update(format_version=1))),
    "meta-version-str": _meta_edit(lambda meta: meta.update(format_version="2")),
    "meta-dtype-int8": _meta_edit(lambda meta: meta.update(dtype="int8")),
    "meta-dtype-float16": _meta_edit(lambda meta: meta.update(dtype="float16")),
    "meta-documents-str": _meta_edit(lambda meta: meta.update(documents="60")),
    "meta-documents-more": _meta_edit(lambda meta: meta.update(documents=61)),
    "meta-documents-bool": _meta_edit(lambda meta: meta.update(documents=True)),
    "meta-dimension-zero": _meta_edit(lambda meta: meta.update(dimension=0)),
    "meta-dimension-huge": _meta_edit(lambda meta: meta.update(dimension=2**70)),
    "meta-normalized-str": _meta_edit(lambda meta: meta.update(normalized="yes")),
    "meta-model-path-int": _meta_edit(lambda meta: meta.update(model_path=3)),
    "meta-model-list": _meta_edit(lambda meta: meta.update(model=["letters"])),
    "meta-arrays-list": _meta_edit(lambda meta: meta.update(arrays=[1])),
    "meta-no-crc": _meta_edit(lambda meta: meta["arrays"]["embeddings"].pop("crc32")),
    "meta-crc-wrong": _meta_edit(lambda meta: meta["arrays"]["embeddings"]["crc32"].__setitem__(0, "00000000")),
    "meta-crc-rows": _meta_edit(lambda meta: meta["arrays"]["embeddings"].update(crc32_rows=7)),
    "meta-norm-range": _meta_edit(lambda meta: meta["arrays"]["embeddings"].update(norm_min=1.005, norm_max=1.009)),
    "meta-ids-crc-wrong": _meta_edit(lambda meta: meta["arrays"]["doc_ids"].update(crc32="00000000")),
    "meta-not-json": lambda folder: (folder / "meta.json").write_text("{"),
    "meta-not-utf8": lambda folder: (folder / "meta.json").write_bytes(b'{"format": "\xff"}'),
    "meta-deeply-nested": lambda folder: (folder / "meta.json").write_text("[" * 200_000 + "]" * 200_000),
    "meta-list": lambda folder: (folder / "meta.json").write_text("[]"),
}

CASES = {**VECTOR_CASES, **ID_CASES, **META_CASES}


def _file_named(case: str) -> str:
    if case in ID_CASES and case != "ids-size-huge":
        return "doc_ids.json"
    if case in VECTOR_CASES:
        return "embeddings.npy"
    return ""  # meta.json, or the file the metadata disagrees with


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tampered_dense_index_is_refused_with_a_rebuild_hint(copy: Path, case: str) -> None:
    CASES[case](copy)
    with pytest.raises(InputError) as caught:
        DenseIndex.load(copy).search(QUERIES, k=10, encoder=Letters(normalized=True))
    message = str(caught.value)
    assert message.startswith(str(copy)), message  # names the index, and the file in it
    assert _file_named(case) in message.split(":")[0], message
    assert f"rebuild it: stagewise encode CORPUS -o {copy}" in message, message
    assert "\n" not in message


@pytest.mark.parametrize("case", sorted(CASES))
def test_search_cli_on_a_tampered_dense_index_is_one_line_and_exit_2(copy: Path, tmp_path: Path, case: str) -> None:
    CASES[case](copy)
    queries = tmp_path / "q.tsv"
    queries.write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    result = runner.invoke(app, ["search", str(copy), str(queries), "-k", "10"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"stagewise: error: {copy}") and result.stderr.count("\n") == 1, result.stderr
    assert "rebuild it: stagewise encode" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("case", ["fifo-embeddings", "dev-zero-ids", "empty-embeddings", "row-nan", "ids-integers"])
def test_the_console_command_refuses_at_once(copy: Path, tmp_path: Path, case: str) -> None:
    """``stagewise search`` in its own process: a FIFO hung it forever, /dev/zero read until memory ran out, an
    empty file printed only "Aborted."; now each is one line and exit 2, at once."""
    CASES[case](copy)
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tlift of a wing\n")
    done = subprocess.run(
        [str(STAGEWISE), "search", str(copy), str(queries), "-k", "10"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"stagewise: error: {copy}") and done.stderr.count("\n") == 1, done.stderr
    assert _file_named(case) in done.stderr and "rebuild it: stagewise encode" in done.stderr


def test_an_intact_copy_loads_with_and_without_mmap(copy: Path) -> None:
    expected = DenseIndex.build(_documents(), Letters(normalized=True)).search(QUERIES, k=10).to_polars().rows()
    for mmap in (True, False):
        index = DenseIndex.load(copy, mmap=mmap)
        assert isinstance(index.embeddings, np.memmap) == mmap
        assert index.search(QUERIES, k=10, encoder=Letters(normalized=True)).to_polars().rows() == expected
    meta = _meta(copy)
    entry = meta["arrays"]["embeddings"]
    assert meta["format_version"] == 2 and entry["dtype"] == "<f4" and entry["shape"] == [N, 26]
    raw = (copy / "embeddings.npy").read_bytes()[-N * 26 * 4 :]
    assert entry["crc32"] == _block_crcs(raw, entry["crc32_rows"] * 26 * 4)
    assert abs(entry["norm_min"] - 1) < 1e-5 and abs(entry["norm_max"] - 1) < 1e-5
    data = (copy / "doc_ids.json").read_bytes()
    assert meta["arrays"]["doc_ids"] == {"file": "doc_ids.json", "bytes": len(data), "crc32": f"{zlib.crc32(data):08x}"}


def test_a_float16_index_checks_too(tmp_path: Path) -> None:
    folder = DenseIndex.build(_documents(), Letters(normalized=True), dtype="float16").save(tmp_path / "i")
    assert DenseIndex.load(folder).embeddings.dtype == np.float16
    _set_row(0, 0.0)(folder)
    with pytest.raises(InputError, match=r"embeddings\.npy: row 0 \(document 'd0'\) has norm 0"):
        DenseIndex.load(folder)


class _Bad(Letters):
    def __init__(self, value: float, normalized: bool) -> None:
        super().__init__(normalized=normalized)
        self.value = value

    def encode(self, texts):
        out = super().encode(texts)
        out[1] = self.value
        return out


@pytest.mark.parametrize(("value", "normalized", "problem"), [
    (np.nan, False, "is not finite"), (np.inf, False, "is not finite"), (1e38, False, "has a norm too large"),
    (0.0, True, "has norm 0"),
])  # fmt: skip
def test_build_refuses_the_vectors_load_would_refuse(value: float, normalized: bool, problem: str) -> None:
    with pytest.raises(StagewiseError, match=rf"document 'd1' \(row 1\) {problem}"):
        DenseIndex.build(_documents(), _Bad(value, normalized))


def test_a_nan_query_vector_is_an_error_not_a_ranking() -> None:
    index = DenseIndex.build(_documents(), Letters(normalized=True))
    query = np.full((1, 26), np.nan, dtype=np.float32)
    with pytest.raises(StagewiseError, match="query vector 0 is not finite"):
        index.topk(query, 10)


# ------------------------------------------------------------------------------------------- the HNSW file


def _other_hnsw(rows: slice | None = None, seed: int | None = None) -> Callable[[Path], None]:
    """An HNSW file (with its honest record) built over other vectors, or over only some of the index's."""

    def tamper(folder: Path) -> None:
        from stagewise.dense.approx import HNSWIndex

        index = DenseIndex.load(folder)
        vectors = np.array(index.embeddings)
        if seed is not None:
            vectors = np.random.default_rng(seed).permutation(vectors)
        if rows is not None:
            vectors = vectors[rows]
        other = DenseIndex(vectors, index.doc_ids[: len(vectors)], {**index.meta, "arrays": None})
        HNSWIndex.build(other, sample=10).save(folder)

    return tamper


def _record_file(folder: Path) -> None:
    """Record hnsw.faiss's present size and CRC in hnsw.json (so the checks past the checksum must catch it)."""
    record = json.loads((folder / "hnsw.json").read_text())
    data = (folder / "hnsw.faiss").read_bytes()
    record["file"].update(bytes=len(data), crc32=_block_crcs(data, 1 << 22))
    (folder / "hnsw.json").write_text(json.dumps(record))


def _swap_file_only(build: Callable[[Path], None], honest: bool) -> Callable[[Path], None]:
    """hnsw.faiss from ``build``, the record of the index's own vectors kept (and, ``honest``, the file's
    size and CRC-32 rewritten)."""

    def tamper(folder: Path) -> None:
        record = (folder / "hnsw.json").read_text()
        build(folder)
        (folder / "hnsw.json").write_text(record)
        if honest:
            _record_file(folder)

    return tamper


def _faiss_index(make: Callable[[object, np.ndarray], object]) -> Callable[[Path], None]:
    def tamper(folder: Path) -> None:
        import faiss

        faiss.write_index(make(faiss, np.array(DenseIndex.load(folder).embeddings)), str(folder / "hnsw.faiss"))
        _record_file(folder)

    return tamper


def _flat(faiss, vectors):
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index


def _bad_link(faiss, vectors):
    index = faiss.IndexHNSWFlat(vectors.shape[1], 8, faiss.METRIC_INNER_PRODUCT)
    index.add(vectors)
    neighbors = faiss.vector_to_array(index.hnsw.neighbors)
    neighbors[3] = 10**6  # a link past the last row: faiss would follow it out of bounds
    faiss.copy_array_to_vector(neighbors, index.hnsw.neighbors)
    return index


def _garbage(folder: Path) -> None:
    (folder / "hnsw.faiss").write_bytes(b"IHNf" + b"\x07" * 300)
    _record_file(folder)


def _record(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def tamper(folder: Path) -> None:
        record = json.loads((folder / "hnsw.json").read_text())
        change(record)
        (folder / "hnsw.json").write_text(json.dumps(record))

    return tamper


HNSW_CASES: dict[str, Callable[[Path], None]] = {
    "hnsw-over-other-vectors": _other_hnsw(seed=5),
    "hnsw-over-fewer-vectors": _other_hnsw(rows=slice(0, N - 1)),
    "hnsw-file-over-other-vectors": _swap_file_only(_other_hnsw(seed=5), honest=False),
    "hnsw-file-over-other-vectors-honest": _swap_file_only(_other_hnsw(seed=5), honest=True),
    "hnsw-file-over-fewer-vectors-honest": _swap_file_only(_other_hnsw(rows=slice(0, N - 1)), honest=True),
    "hnsw-garbage-file": _garbage,
    "hnsw-flat-index": _faiss_index(_flat),
    "hnsw-link-out-of-range": _faiss_index(_bad_link),
    "hnsw-no-record": lambda folder: (folder / "hnsw.json").unlink(),
    "hnsw-record-not-json": lambda folder: (folder / "hnsw.json").write_text("{"),
    "hnsw-record-nested": lambda folder: (folder / "hnsw.json").write_text("[" * 200_000 + "]" * 200_000),
    "hnsw-record-version": _record(lambda record: record.update(format_version=9)),
    "hnsw-record-no-vectors": _record(lambda record: record.pop("vectors")),
    "hnsw-truncated-file": _truncate("hnsw.faiss", 0.5),
    "hnsw-fifo-file": _special("hnsw.faiss", "fifo"),
    "hnsw-fifo-record": _special("hnsw.json", "fifo"),
}


@needs_faiss
@pytest.mark.parametrize("case", sorted(HNSW_CASES))
def test_an_hnsw_file_not_of_these_vectors_is_refused(copy: Path, case: str) -> None:
    HNSW_CASES[case](copy)
    index = DenseIndex.load(copy)
    with pytest.raises(InputError) as caught:
        index.search(QUERIES, k=10, encoder=Letters(normalized=True), approximate=True)
    message = str(caught.value)
    assert message.startswith(str(copy / "hnsw.")), message
    assert f"rebuild it: stagewise encode CORPUS -o {copy} --hnsw" in message and "\n" not in message, message


@needs_faiss
@pytest.mark.parametrize("case", ["hnsw-over-fewer-vectors", "hnsw-garbage-file", "hnsw-fifo-file"])
def test_search_cli_approximate_on_a_tampered_hnsw_file_is_exit_2(copy: Path, tmp_path: Path, case: str) -> None:
    HNSW_CASES[case](copy)
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tlift of a wing\n")
    result = runner.invoke(app, ["search", str(copy), str(queries), "--approximate"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"stagewise: error: {copy / 'hnsw.faiss'}") and result.stderr.count("\n") == 1


@needs_faiss
def test_an_intact_hnsw_file_searches_like_exact(copy: Path) -> None:
    index = DenseIndex.load(copy)
    approx = index.search(QUERIES, k=5, encoder=Letters(normalized=True), approximate=True)
    exact = index.search(QUERIES, k=5, encoder=Letters(normalized=True))
    assert approx.to_polars()["doc_id"].to_list()[:1] == exact.to_polars()["doc_id"].to_list()[:1]
    record = json.loads((copy / "hnsw.json").read_text())
    assert (
        record["vectors"]["shape"] == [N, 26]
        and record["vectors"]["crc32"] == _meta(copy)["arrays"]["embeddings"]["crc32"]
    )


# ------------------------------------------------------------------------------------------- a real model


@pytest.fixture(scope="module")
def minilm_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("minilm") / "index"
    DenseIndex.build(_documents()).save(folder)
    return folder


@needs_model
def test_a_nan_row_in_a_real_index_is_refused_at_any_k(minilm_index: Path, tmp_path: Path) -> None:
    """Before, a NaN row was never returned at ``-k 10`` (so the results looked fine) and failed at ``-k 400``."""
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tlift of a wing\nq2\theat transfer\n")
    intact = subprocess.run(
        [str(STAGEWISE), "search", str(minilm_index), str(queries), "-k", "10"], capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert intact.returncode == 0 and len(intact.stdout.splitlines()) == 20, intact.stderr
    for case in ("row-nan", "row-1e38"):
        target = tmp_path / case
        shutil.copytree(minilm_index, target)
        CASES[case](target)
        for k in ("10", "400"):
            done = subprocess.run(
                [str(STAGEWISE), "search", str(target), str(queries), "-k", k], capture_output=True, text=True,
                timeout=300,
            )  # fmt: skip
            assert done.returncode == 2 and done.stdout == "", (case, k, done.stderr)
            assert done.stderr.startswith(
                f"stagewise: error: {target / 'embeddings.npy'}: row 3"
            ) or done.stderr.startswith(f"stagewise: error: {target / 'embeddings.npy'}: row 11"), done.stderr
