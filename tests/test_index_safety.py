"""A saved BM25 index is untrusted input, and writing one never destroys what it should not.

The tampered-index corpus is generated here from a small real index (Cranfield's first 400 documents, or a
generated corpus where ../shared is absent): each array truncated, padded, retyped, made negative, shuffled
or pointed past its end, checksums wrong, files missing, metadata garbage. Every case must end in one
``InputError`` that names the index file and says to rebuild (``stagewise search``: exit 2, one line, no
traceback), never in a crash; ``make sanitize`` runs this file under AddressSanitizer and UBSan.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import stagewise
from stagewise import folders
from stagewise.cli import app
from stagewise.errors import InputError
from stagewise.retrieval import _kernels
from stagewise.retrieval.index import _ARRAYS, CRC_BLOCK, INDEX_FILES, BM25Index
from tests.conftest import SHARED

REPO = Path(__file__).resolve().parents[1]
SRC = Path(stagewise.__file__).resolve().parents[1]  # build/sanitize/tree under `make sanitize`
CRANFIELD = SHARED / "data" / "cranfield" / "cran.all.1400"
QUERIES = {"q1": "lift of a wing in a slipstream", "q2": "heat transfer to a flat plate", "q3": "boundary layer"}
runner = CliRunner()


def _documents(n: int = 400) -> tuple[list[str], list[str]]:
    if CRANFIELD.is_file():
        from stagewise.data.collections import read_smart

        docs = read_smart(CRANFIELD)
        return list(docs.ids[:n]), list(docs.texts[:n])
    rng = random.Random(7)  # ../shared is absent: a generated corpus with the same shape of use
    words = ["lift", "wing", "heat", "plate", "flow", "boundary", "layer", "shock", "transfer", "slipstream"]
    words += [f"w{i}" for i in range(300)]
    return [str(i) for i in range(n)], [" ".join(rng.choices(words, k=40)) for _ in range(n)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    ids, texts = _documents()
    folder = tmp_path_factory.mktemp("real") / "index"
    index = BM25Index.build(texts, ids)
    index.save(folder)
    return folder, index.search(QUERIES, k=10).to_polars().rows()


@pytest.fixture
def copy(built: tuple[Path, list], tmp_path: Path) -> Path:
    target = tmp_path / "index"
    shutil.copytree(built[0], target)
    return target


# ------------------------------------------------------------------------------------------- tampering


def _meta(folder: Path) -> dict:
    return json.loads((folder / "meta.json").read_text())


def _write_meta(folder: Path, meta: dict) -> None:
    (folder / "meta.json").write_text(json.dumps(meta))


def _rewrite(folder: Path, name: str, array: np.ndarray, *, honest_meta: bool = True) -> None:
    """Replace one array; ``honest_meta`` also records its dtype, length and CRC-32, as a tamperer who knows
    the format would (so the structural checks, not the checksum, must catch it)."""
    np.save(folder / f"{name}.npy", array, allow_pickle=False)
    if honest_meta:
        meta = _meta(folder)
        meta["arrays"][name] = {
            "dtype": array.dtype.str,
            "length": len(array),
            "crc32": _crcs(array),
            "crc32_block": CRC_BLOCK,
        }
        _write_meta(folder, meta)


def _crcs(array: np.ndarray) -> list[str]:
    """zlib's CRC-32 of each 4 MiB block of the array's bytes, computed here without the index's code."""
    raw = np.ascontiguousarray(array).tobytes()
    return [f"{zlib.crc32(raw[at : at + CRC_BLOCK]):08x}" for at in range(0, len(raw), CRC_BLOCK)]


def _array(folder: Path, name: str) -> np.ndarray:
    return np.array(np.load(folder / f"{name}.npy"))


def _edit(name: str, change: Callable[[np.ndarray], np.ndarray], honest: bool = True) -> Callable[[Path], None]:
    return lambda folder: _rewrite(folder, name, change(_array(folder, name)), honest_meta=honest)


def _set(name: str, at: int, value: int, honest: bool = True) -> Callable[[Path], None]:
    def change(a: np.ndarray) -> np.ndarray:
        a[at] = value
        return a

    return _edit(name, change, honest)


def _truncate_file(name: str, keep: float) -> Callable[[Path], None]:
    def tamper(folder: Path) -> None:
        path = folder / f"{name}.npy"
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])

    return tamper


def _meta_edit(change: Callable[[dict], object]) -> Callable[[Path], None]:
    def tamper(folder: Path) -> None:
        meta = _meta(folder)
        change(meta)
        _write_meta(folder, meta)

    return tamper


def _swap_values(name: str) -> Callable[[Path], None]:
    def change(a: np.ndarray) -> np.ndarray:
        middle = len(a) // 2
        a[middle], a[middle + 1] = a[middle + 1] + 5, a[middle]  # now decreasing there
        return a

    return _edit(name, change)


def _shuffle(name: str) -> Callable[[Path], None]:
    return _edit(name, lambda a: np.random.default_rng(3).permutation(a))


def _raw_file(name: str, content: bytes) -> Callable[[Path], None]:
    return lambda folder: (folder / f"{name}.npy").write_bytes(content)


def _drop_crc(meta: dict) -> None:
    meta["arrays"]["post_docs"]["crc32"][0] = "00000000"


CASES: dict[str, Callable[[Path], None]] = {
    # every array: truncated, emptied, missing, one element short (honest metadata), wrong dtype
    **{f"truncated-{name}": _truncate_file(name, 0.6) for name in _ARRAYS},
    **{f"header-only-{name}": _truncate_file(name, 0.0) for name in _ARRAYS},
    **{f"missing-{name}": (lambda n: lambda folder: (folder / f"{n}.npy").unlink())(name) for name in _ARRAYS},
    **{f"short-{name}": _edit(name, lambda a: a[:-1]) for name in _ARRAYS},
    **{
        f"retyped-{name}": _edit(name, lambda a: a.astype(np.int32 if a.dtype == np.int64 else np.int64))
        for name in _ARRAYS
    },
    "float-term_ptr": _edit("term_ptr", lambda a: a.astype(np.float64)),
    "big-endian-post_docs": _edit("post_docs", lambda a: a.astype(">i4")),
    "2d-post_docs": _edit("post_docs", lambda a: a.reshape(-1, 1)),
    "padded-post_docs": lambda folder: (folder / "post_docs.npy").open("ab").write(b"\0" * 16),
    "not-npy-post_docs": _raw_file("post_docs", b"this is not an array\n" * 50),
    "pickle-post_docs": _raw_file(
        "post_docs",
        b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, "
        b"'shape': (3,), }" + b" " * 53 + b"\n" + b"\x80\x04" * 20,
    ),
    "npy-version-9": _edit("doc_len", lambda a: a, honest=False),  # replaced below with a version-9 header
    # checksums
    "changed-byte-post_tf": _edit("post_tf", lambda a: a + np.uint16(1), honest=False),
    "changed-byte-vocab_data": _set("vocab_data", 0, ord("~"), honest=False),
    "wrong-crc": _meta_edit(_drop_crc),
    # offsets and ids out of range (checksum recomputed, so the structural checks must catch them)
    "negative-doc-id": _set("post_docs", 5, -1),
    "doc-id-past-end": _set("post_docs", 7, 10**6),
    "doc-id-int32-max": _set("post_docs", 0, 2**31 - 1),
    "negative-term_ptr": _set("term_ptr", 3, -40),
    "term_ptr-past-end": _set("term_ptr", -1, 10**9),
    "term_ptr-not-from-0": _set("term_ptr", 0, 1),
    "decreasing-term_ptr": _swap_values("term_ptr"),
    "shuffled-term_ptr": _shuffle("term_ptr"),
    "decreasing-vocab_offsets": _swap_values("vocab_offsets"),
    "shuffled-vocab_offsets": _shuffle("vocab_offsets"),
    "vocab-offset-past-data": _set("vocab_offsets", 10, 10**12),
    "negative-vocab-offset": _set("vocab_offsets", 10, -7),
    "shuffled-doc_ids_offsets": _shuffle("doc_ids_offsets"),
    "doc-id-offset-past-data": _set("doc_ids_offsets", -1, 10**7),
    "negative-doc_len": _set("doc_len", 2, -3),
    "doc_len-total-off": _set("doc_len", 2, 10**6),
    "negative-max_tf": _set("max_tf", 2, -3),
    "negative-min_dl": _set("min_dl", 2, -3),
    "invalid-utf8-doc-ids": _set("doc_ids_data", 0, 0xFF),
    "tf-dtype-int32-as-uint16": _edit("post_tf", lambda a: a.astype(np.int32)),
    # metadata
    "meta-not-json": lambda folder: (folder / "meta.json").write_text("{"),
    "meta-not-utf8": lambda folder: (folder / "meta.json").write_bytes(b'{"format": "\xff"}'),
    "meta-list": lambda folder: (folder / "meta.json").write_text("[]"),
    "meta-null": lambda folder: (folder / "meta.json").write_text("null"),
    "meta-version-1": _meta_edit(lambda meta: meta.update(format_version=1)),
    "meta-version-str": _meta_edit(lambda meta: meta.update(format_version="2")),
    "meta-documents-str": _meta_edit(lambda meta: meta.update(documents="400")),
    "meta-documents-negative": _meta_edit(lambda meta: meta.update(documents=-1)),
    "meta-documents-more": _meta_edit(lambda meta: meta.update(documents=401)),
    "meta-terms-huge": _meta_edit(lambda meta: meta.update(terms=2**70)),
    "meta-postings-bool": _meta_edit(lambda meta: meta.update(postings=True)),
    "meta-no-arrays": _meta_edit(lambda meta: meta.pop("arrays")),
    "meta-arrays-list": _meta_edit(lambda meta: meta.update(arrays=[1, 2])),
    "meta-array-entry-str": _meta_edit(lambda meta: meta["arrays"].update(doc_len="x")),
    "meta-tf-dtype": _meta_edit(lambda meta: meta.update(tf_dtype="float64")),
    "meta-no-scoring": _meta_edit(lambda meta: meta.pop("scoring")),
    "meta-scoring-variant": _meta_edit(lambda meta: meta["scoring"].update(variant="bm26")),
    "meta-scoring-list": _meta_edit(lambda meta: meta.update(scoring=[1])),
    "meta-scoring-k1": _meta_edit(lambda meta: meta["scoring"].update(k1="fast")),
    "meta-analyser": _meta_edit(lambda meta: meta.update(analyser={"stemmer": 3})),
    "meta-analyser-list": _meta_edit(lambda meta: meta.update(analyser=[1])),
    "meta-checksum": _meta_edit(lambda meta: meta.update(checksum="stagewise-hash128-sum:zz")),
    "meta-crc-block": _meta_edit(lambda meta: meta["arrays"]["doc_len"].update(crc32_block=1024)),
    "meta-crc-str": _meta_edit(lambda meta: meta["arrays"]["doc_len"].update(crc32="abc")),
    "meta-checksum-int": _meta_edit(lambda meta: meta.update(checksum=5)),
    "meta-total-length": _meta_edit(lambda meta: meta.update(total_length=meta["total_length"] + 1)),
}


def _npy_version_9(folder: Path) -> None:
    path = folder / "doc_len.npy"
    data = bytearray(path.read_bytes())
    data[6] = 9
    path.write_bytes(bytes(data))


CASES["npy-version-9"] = _npy_version_9


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tampered_index_is_refused_with_a_rebuild_hint(copy: Path, case: str) -> None:
    CASES[case](copy)
    with pytest.raises(InputError) as caught:
        BM25Index.load(copy).search(QUERIES, k=10)
    message = str(caught.value)
    assert message.startswith(str(copy)), message  # names the index, and the file in it
    assert "rebuild it: stagewise index" in message, message
    assert "\n" not in message


@pytest.mark.parametrize("case", sorted(CASES))
def test_search_cli_on_a_tampered_index_is_one_line_and_exit_2(copy: Path, tmp_path: Path, case: str) -> None:
    CASES[case](copy)
    queries = tmp_path / "q.tsv"
    queries.write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    result = runner.invoke(app, ["search", str(copy), str(queries)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"stagewise: error: {copy}") and result.stderr.count("\n") == 1
    assert "rebuild" in result.stderr and "Traceback" not in result.output


def test_search_in_a_subprocess_on_a_tampered_index_does_not_crash(copy: Path, tmp_path: Path) -> None:
    """The real entry point, in its own process: a crash would be a signal (negative return code)."""
    _set("post_docs", 3, 2**31 - 1)(copy)
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tlift of a wing\n")
    done = subprocess.run(
        [sys.executable, "-m", "stagewise", "search", str(copy), str(queries)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "post_docs.npy" in done.stderr


def test_an_intact_copy_loads_with_and_without_mmap(copy: Path, built: tuple[Path, list]) -> None:
    for mmap in (True, False):
        index = BM25Index.load(copy, mmap=mmap)
        assert isinstance(index.post_docs, np.memmap) == mmap
        assert index.search(QUERIES, k=10).to_polars().rows() == built[1]
    meta = _meta(copy)
    assert meta["format_version"] == 2 and set(meta["arrays"]) == set(_ARRAYS)
    for name in _ARRAYS:
        assert meta["arrays"][name]["crc32"] == _crcs(np.load(copy / f"{name}.npy")), name


# --------------------------------------------------------------------- the search kernels' own checks


def _damaged_in_memory(folder: Path, name: str, at: int, value: int) -> BM25Index:
    """An index whose arrays went bad after loading (the kernels cannot rely on the load's checks)."""
    index = BM25Index.load(folder, mmap=False)
    array = np.array(getattr(index, name))
    array[at] = value
    setattr(index, name, array)
    return index


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # idf of a negative df
@pytest.mark.parametrize("kernel", ["compiled", "numpy"])
@pytest.mark.parametrize(
    ("name", "value"),
    [("post_docs", -1), ("post_docs", 10**6), ("post_docs", 2**31 - 1), ("term_ptr", -5), ("term_ptr", 10**9)],
)
@pytest.mark.parametrize("exhaustive", [False, True])
def test_search_kernels_check_their_own_bounds(
    copy: Path, monkeypatch: pytest.MonkeyPatch, kernel: str, name: str, value: int, exhaustive: bool
) -> None:
    if kernel == "numpy":
        monkeypatch.setattr(_kernels, "native", None)
    elif _kernels.native is None:
        pytest.skip("the C extension was not built")
    index = BM25Index.load(copy, mmap=False)
    terms = index.terms()
    # damage every posting of the query's terms, so pruning cannot skip the bad one
    t = terms.index("wing") if "wing" in terms else 0
    lo, hi = int(index.term_ptr[t]), int(index.term_ptr[t + 1])
    if name == "post_docs":
        docs = np.array(index.post_docs)
        docs[lo:hi] = value
        index.post_docs = docs
    else:
        ptr = np.array(index.term_ptr)
        ptr[t + 1] = value
        index.term_ptr = ptr
    with pytest.raises(InputError, match="damaged index"):
        index.topk({"q": terms[t]}, k=3, exhaustive=exhaustive)


def test_vocabulary_lookup_checks_its_offsets(copy: Path) -> None:
    if _kernels.native is None:
        pytest.skip("the C extension was not built (the numpy lookup slices, and cannot read out of bounds)")
    n_terms = BM25Index.load(copy).n_terms
    index = _damaged_in_memory(copy, "vocab_offsets", n_terms // 2, 10**12)  # a binary search's first probe
    with pytest.raises(InputError, match="damaged index: vocabulary offset"):
        index.search({"q": "wing lift heat boundary layer"}, k=3)


def test_a_query_with_no_indexed_term_is_fine(copy: Path) -> None:
    index = BM25Index.load(copy)
    top = index.topk({"q1": "zzzqqq", "q2": "wing"}, k=5)
    assert top.empty_queries == 1 and top.offsets[1] == 0 and top.offsets[2] > 0
    assert index.topk({"q1": "zzzqqq"}, k=5).offsets.tolist() == [0, 0]


# -------------------------------------------------------------------------------- writing the folder


def test_folders_and_files_follow_the_umask(tmp_path: Path) -> None:
    index = BM25Index.build(["lift of a wing", "heat"], ["a", "b"])
    for mask, folder_mode, file_mode in ((0o022, 0o755, 0o644), (0o077, 0o700, 0o600), (0o002, 0o775, 0o664)):
        old = os.umask(mask)
        try:
            target = index.save(tmp_path / f"index-{mask:o}")
        finally:
            os.umask(old)
        assert stat.S_IMODE(target.stat().st_mode) == folder_mode
        assert {stat.S_IMODE(f.stat().st_mode) for f in target.iterdir()} == {file_mode}


def test_save_refuses_a_folder_that_is_not_an_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = BM25Index.build(["lift of a wing", "heat"], ["a", "b"])
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match=r"not a stagewise index \(it holds thesis\.tex\).*--force"):
        index.save(thesis)
    assert (thesis / "thesis.tex").read_text() == "years of work"
    monkeypatch.chdir(thesis)
    for target in (".", thesis, tmp_path):  # the current folder, or one holding it: even with force
        with pytest.raises(InputError, match="current folder"):
            index.save(target, force=True)
    assert (thesis / "thesis.tex").read_text() == "years of work"
    monkeypatch.chdir(tmp_path)
    index.save(thesis, force=True)  # asked for: replaced
    assert sorted(p.name for p in thesis.iterdir()) == sorted(INDEX_FILES)
    # an index folder that gained a foreign file is not "only an index" any more
    (thesis / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"notes\.txt"):
        index.save(thesis)
    # a folder holding only another tool's meta.json is not an index either; a garbled one is a damaged index
    other = tmp_path / "other"
    other.mkdir()
    (other / "meta.json").write_text('{"tool": "someone else"}')
    with pytest.raises(InputError, match=r"not a stagewise index \(it holds meta\.json\)"):
        index.save(other)
    (other / "meta.json").write_text("{garbled")
    index.save(other)
    assert BM25Index.load(other).doc_ids() == ["a", "b"]


def _cli(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"})


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "corpus.jsonl"
    rows = [("d1", "lift of a wing in a slipstream"), ("d2", "heat transfer to a plate"), ("d3", "wing flutter")]
    path.write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in rows))
    return path


def test_index_cli_refuses_unsafe_outputs_before_any_work(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "thesis.pdf").write_bytes(b"%PDF")
    (tmp_path / "link").symlink_to(tmp_path / "thesis")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    cases = [
        ([str(corpus.parent)], "holds an input"),  # the corpus's own folder
        ([str(tmp_path)], "holds the current folder"),
        ([str(corpus.parent), "--force"], "holds an input"),
        ([".", "--force"], "is the current folder"),
        ([str(tmp_path / "thesis")], "not a stagewise index (it holds thesis.pdf)"),
        ([str(tmp_path / "link")], "is a symbolic link"),
        ([str(tmp_path / "file")], "is a file, not a folder"),
        ([str(tmp_path / "file" / "index")], "which is a file, not a folder"),
        ([str(tmp_path / "a" / "b" / "index")], "pass --parents, or correct -o"),
    ]
    for extra, message in cases:
        result = _cli("index", str(corpus), "-o", *extra)
        assert result.exit_code == 2, (extra, result.output)
        assert result.stderr.startswith("stagewise: error: ") and message in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1
    assert (tmp_path / "thesis" / "thesis.pdf").read_bytes() == b"%PDF"
    assert sorted(p.name for p in corpus.parent.iterdir()) == ["corpus.jsonl"]
    # a stopword file is an input too
    (tmp_path / "stop").mkdir()
    (tmp_path / "stop" / "words.txt").write_text("of\n")
    result = _cli(
        "index", str(corpus), "-o", str(tmp_path / "stop"), "--stopwords", f"@{tmp_path / 'stop' / 'words.txt'}"
    )
    assert result.exit_code == 2 and "holds an input" in result.stderr
    # what is allowed: --parents, an existing index (replaced), --force on a foreign folder
    assert _cli("index", str(corpus), "-o", str(tmp_path / "a" / "b" / "index"), "--parents").exit_code == 0
    assert _cli("index", str(corpus), "-o", str(tmp_path / "a" / "b" / "index")).exit_code == 0
    assert _cli("index", str(corpus), "-o", str(tmp_path / "thesis"), "--force").exit_code == 0
    assert not (tmp_path / "thesis" / "thesis.pdf").exists()
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["index"]  # no temporary folder left


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write anywhere")
def test_index_cli_refuses_a_parent_it_cannot_write(corpus: Path, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = _cli("index", str(corpus), "-o", str(locked / "index"))
    finally:
        locked.chmod(0o700)
    assert result.exit_code == 2 and "permission denied" in result.stderr


def test_index_and_search_read_standard_input(corpus: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["index", "-", "-o", str(tmp_path / "i")], input=corpus.read_text())
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["search", str(tmp_path / "i"), "-", "-k", "2"], input="q1\twing lift\n")
    assert result.exit_code == 0, result.output
    assert [line.split()[2] for line in result.stdout.splitlines()] == ["d1", "d3"]
    result = runner.invoke(app, ["search", str(tmp_path / "i"), "-"], input='{"_id": "q1", "text": "heat"}\n')
    assert result.stdout.split()[2] == "d2"
    result = runner.invoke(app, ["index", "-", "-o", str(tmp_path / "j")], input='{"_id": "x"\n')
    assert result.exit_code == 2 and result.stderr.startswith("stagewise: error: <stdin>:1: ")
    result = runner.invoke(app, ["index", "-", "-o", str(tmp_path / "j"), "-f", "beir"], input="")
    assert result.exit_code == 2 and "standard input" in result.stderr


# ------------------------------------------------------------------------- a rebuild killed mid-way

_REBUILDER = """
import json, sys
from stagewise.retrieval import BM25Index
target, corpora = sys.argv[1], json.load(open(sys.argv[2]))
BM25Index.build(corpora[0], [f"0-{i}" for i in range(len(corpora[0]))]).save(target)
print("ready", flush=True)
n = 0
while True:  # rebuild and replace, alternating, until killed
    n += 1
    BM25Index.build(corpora[n % 2], [f"{n % 2}-{i}" for i in range(len(corpora[n % 2]))]).save(target)
"""


def test_a_rebuild_killed_at_any_moment_leaves_a_whole_index(tmp_path: Path) -> None:
    _, texts = _documents(300)
    corpora = [texts[:150], texts[150:]]
    expected = [BM25Index.build(c, [f"{n}-{i}" for i in range(len(c))]) for n, c in enumerate(corpora)]
    answers = [e.search(QUERIES, k=10).to_polars().rows() for e in expected]
    target = tmp_path / "index"
    corpora_file = tmp_path.parent / f"{tmp_path.name}-corpora.json"
    corpora_file.write_text(json.dumps(corpora))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    seen = set()
    rng = random.Random(5)
    for attempt in range(8):
        child = subprocess.Popen(
            [sys.executable, "-c", _REBUILDER, str(target), str(corpora_file)],
            stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.25) if attempt else 0.0)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        index = BM25Index.load(target)  # whole, and its checks pass
        rows = index.search(QUERIES, k=10).to_polars().rows()
        assert rows in answers
        seen.add(answers.index(rows))
        leftovers = [p.name for p in tmp_path.iterdir() if p.name != "index"]
        assert all(folders.PARTIAL in name or folders.PREVIOUS in name for name in leftovers), leftovers
    # the next build cleans what killed builds left behind (their processes are gone)
    expected[0].save(target)
    assert [p.name for p in tmp_path.iterdir()] == ["index"]
    assert seen  # at least one kill observed an index; which one is chance


def test_replacing_without_an_atomic_exchange_falls_back_to_two_renames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where renameat2(RENAME_EXCHANGE) is missing: old index renamed aside, new one in, old one deleted."""
    monkeypatch.setattr(folders, "_exchange", lambda a, b: False)
    first = BM25Index.build(["lift of a wing", "heat"], ["a", "b"])
    second = BM25Index.build(["heat transfer", "wing"], ["c", "d"])
    target = tmp_path / "index"
    first.save(target)
    second.save(target)
    assert BM25Index.load(target).doc_ids() == ["c", "d"]
    assert [p.name for p in tmp_path.iterdir()] == ["index"]
    # a crash between the two renames: the message on the missing folder says where the old index is
    previous = tmp_path / f".index.{folders.PREVIOUS}-1-abc"
    target.rename(previous)
    with pytest.raises(InputError, match=r"interrupted build left the previous index in .*stagewise-previous-index"):
        BM25Index.load(target)


def test_the_exchange_swaps_two_folders_in_one_step(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("from a")
    (b / "y").write_text("from b")
    if not folders._exchange(a, b):
        pytest.skip("this OS or file system has no renameat2(RENAME_EXCHANGE)")
    assert [p.name for p in a.iterdir()] == ["y"] and [p.name for p in b.iterdir()] == ["x"]


def test_crc_blocks_are_checked_in_parallel_and_each_counts(
    built: tuple[Path, list], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stagewise.retrieval import storage

    monkeypatch.setattr(storage, "CRC_BLOCK", 4096)  # many blocks per array, so the thread pool runs
    target = tmp_path / "index"
    ids, texts = _documents()
    BM25Index.build(texts, ids).save(target)
    entry = _meta(target)["arrays"]["post_docs"]
    assert entry["crc32_block"] == 4096 and len(entry["crc32"]) > 10
    assert BM25Index.load(target).search(QUERIES, k=10).to_polars().rows() == built[1]
    path = target / "post_docs.npy"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1  # one bit, in a middle block
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"post_docs\.npy: damaged index: its CRC-32 differs"):
        BM25Index.load(target)


def test_stagewise_index_killed_while_replacing_an_index_leaves_one(tmp_path: Path) -> None:
    """The command itself, in its own process, killed at moments spread over one uninterrupted run."""
    _, texts = _documents(300)
    old_corpus, new_corpus = tmp_path / "old.tsv", tmp_path / "new.tsv"
    old_corpus.write_text("".join(f"o{i}\t{t}\n" for i, t in enumerate(texts[:150])))
    new_corpus.write_text("".join(f"n{i}\t{t}\n" for i, t in enumerate(texts[150:])))
    target = tmp_path / "out" / "index"
    command = [sys.executable, "-m", "stagewise", "index", str(new_corpus), "-o", str(target)]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    assert _cli("index", str(old_corpus), "-o", str(target), "--parents").exit_code == 0
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=120)
    whole = time.perf_counter() - started
    for fraction in (0.5, 0.8, 0.9, 0.95, 1.0):
        assert _cli("index", str(old_corpus), "-o", str(target)).exit_code == 0
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(whole * fraction)
        child.send_signal(signal.SIGKILL)
        child.wait()
        ids = BM25Index.load(target).doc_ids()
        assert ids in (["o" + str(i) for i in range(150)], ["n" + str(i) for i in range(150)])
    assert _cli("index", str(new_corpus), "-o", str(target)).exit_code == 0
    assert [p.name for p in target.parent.iterdir()] == ["index"]
