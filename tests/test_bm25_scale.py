"""BM25 at scale: the streamed corpus reader, the on-disk (bounded-memory) build, and search on Dask workers.

The on-disk build is checked against the in-memory build file by file, byte for byte; the Dask search against
the local search, array by array and as written runs."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stagewise.data import collections
from stagewise.data.collections import Documents, iter_corpus, read_corpus
from stagewise.errors import InputError
from stagewise.retrieval.analysis import Analyser
from stagewise.retrieval.index import BM25Index
from stagewise.retrieval.ondisk import build_on_disk

WORDS = ["wing", "lift", "plate", "heat", "flow", "shear", "slab", "the", "of", "zebra", "über", "naïve", "x"]


def _corpus(n: int, seed: int = 0, length: int = 12) -> Documents:
    rng = np.random.default_rng(seed)
    texts = [" ".join(WORDS[i] for i in rng.zipf(1.3, size=rng.integers(0, length)) % len(WORDS)) for _ in range(n)]
    return Documents([f"d{i}" for i in range(n)], texts)


def _batches(docs: Documents, size: int):
    for at in range(0, len(docs), size):
        yield Documents(docs.ids[at : at + size], docs.texts[at : at + size])


def _same_folders(a: Path, b: Path) -> None:
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


# ------------------------------------------------------------------------------------------ streamed reader


def _write_jsonl(path: Path, docs: Documents, newline: str = "\n") -> None:
    rows = [json.dumps({"_id": i, "title": "", "text": t}) for i, t in docs]
    path.write_bytes(newline.join(rows).encode() + newline.encode())


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("gz", [False, True])
def test_streamed_batches_join_to_what_read_corpus_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newline: str, gz: bool
) -> None:
    monkeypatch.setattr(collections, "LINE_BLOCK_BYTES", 97)  # many blocks, cut mid-line and mid-character
    docs = _corpus(300)
    path = tmp_path / "corpus.jsonl"
    _write_jsonl(path, docs, newline)
    if gz:
        path.write_bytes(gzip.compress(path.read_bytes()))
    batches = list(iter_corpus(path, batch_size=7))
    assert [len(b) for b in batches[:-1]] == [7] * (len(batches) - 1)
    assert [i for b in batches for i in b.ids] == read_corpus(path).ids == docs.ids
    assert [t for b in batches for t in b.texts] == read_corpus(path).texts


def test_streamed_tsv_with_header_and_beir_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collections, "LINE_BLOCK_BYTES", 50)
    docs = _corpus(60, seed=3)
    tsv = tmp_path / "corpus.tsv"
    tsv.write_text("docid\ttext\n" + "".join(f"{i}\t{t or 'x'}\n" for i, t in docs))
    joined = [d for b in iter_corpus(tsv, batch_size=8) for d in b]
    assert joined == list(read_corpus(tsv))
    (tmp_path / "beir").mkdir()
    _write_jsonl(tmp_path / "beir" / "corpus.jsonl", docs)
    assert [d for b in iter_corpus(tmp_path / "beir", batch_size=5) for d in b] == list(docs)


@pytest.mark.parametrize(
    "bad",
    [b'{"_id": "d9", "text": }\n', b"[1, 2]\n", b'{"text": "no id"}\n', b'{"_id": "d9", "text": "caf\xe9"}\n'],
)
def test_streamed_errors_are_read_corpus_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: bytes) -> None:
    """A malformed line deep in the file: the same message and line number as reading it whole."""
    monkeypatch.setattr(collections, "LINE_BLOCK_BYTES", 64)
    path = tmp_path / "corpus.jsonl"
    _write_jsonl(path, _corpus(40))
    path.write_bytes(path.read_bytes() + bad + b'{"_id": "last", "text": "end"}\n')
    with pytest.raises(InputError) as whole:
        read_corpus(path)
    with pytest.raises(InputError) as streamed:
        for _ in iter_corpus(path, batch_size=3):
            pass
    assert str(streamed.value) == str(whole.value)
    assert whole.value.line == 41


# ---------------------------------------------------------------------------------------- on-disk build


@pytest.mark.parametrize(("batch", "budget"), [(1, 1), (7, 5), (50, 64), (1000, 1 << 20)])
def test_on_disk_build_writes_the_in_memory_build_s_bytes(tmp_path: Path, batch: int, budget: int) -> None:
    docs = _corpus(400, seed=batch)
    BM25Index.build(docs).save(tmp_path / "memory")
    index = build_on_disk(_batches(docs, batch), tmp_path / "disk", merge_postings=budget)
    _same_folders(tmp_path / "memory", tmp_path / "disk")
    assert not [p for p in tmp_path.iterdir() if "runs" in p.name]  # the runs are gone
    assert isinstance(index.post_docs, np.memmap)  # searched where it lies


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.text(alphabet="ab cé\tZ", max_size=30), max_size=30),
    batch=st.integers(1, 12),
    budget=st.integers(1, 40),
    variant=st.sampled_from(["lucene", "bm25+", "okapi-rank_bm25"]),
)
def test_on_disk_build_is_byte_identical_on_random_corpora(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str], batch: int, budget: int, variant: str
) -> None:
    folder = tmp_path_factory.mktemp("random")
    analyser = Analyser(stemmer="none", stopwords=("a",), min_length=1)
    docs = Documents([f"d{i}" for i in range(len(texts))], texts)
    BM25Index.build(docs, analyser=analyser, variant=variant).save(folder / "memory")
    build_on_disk(_batches(docs, batch), folder / "disk", analyser=analyser, variant=variant, merge_postings=budget)
    _same_folders(folder / "memory", folder / "disk")


def test_on_disk_build_with_term_counts_beyond_uint16(tmp_path: Path) -> None:
    """A tf of 70,000 makes post_tf int32 in both builds, decided after every batch is seen."""
    docs = Documents(["a", "b", "c"], ["small text", "xy " * 70_000 + "wing", "wing lift"])
    BM25Index.build(docs).save(tmp_path / "memory")
    build_on_disk(_batches(docs, 1), tmp_path / "disk", merge_postings=2)
    _same_folders(tmp_path / "memory", tmp_path / "disk")
    assert json.loads((tmp_path / "disk" / "meta.json").read_text())["tf_dtype"] == "int32"


def test_on_disk_build_of_nothing_and_of_empty_documents(tmp_path: Path) -> None:
    for name, docs in [("none", Documents([], [])), ("blank", Documents(["a", "b"], ["", "the of"]))]:
        BM25Index.build(docs).save(tmp_path / f"{name}-memory")
        build_on_disk(_batches(docs, 1), tmp_path / f"{name}-disk")
        _same_folders(tmp_path / f"{name}-memory", tmp_path / f"{name}-disk")


def test_duplicate_ids_across_batches_are_the_in_memory_error(tmp_path: Path) -> None:
    docs = Documents(["a", "b", "c", "d", "b", "a"], ["x"] * 6)
    with pytest.raises(InputError) as memory:
        BM25Index.build(docs)
    with pytest.raises(InputError) as disk:
        build_on_disk(_batches(docs, 2), tmp_path / "disk")
    assert str(disk.value) == str(memory.value) == "documents: id 'b' appears twice (second at position 4)"
    assert not (tmp_path / "disk").exists()
    assert list(tmp_path.iterdir()) == []  # the runs are cleaned up after a failure too


def test_a_killed_build_s_runs_are_deleted_by_the_next_build(tmp_path: Path) -> None:
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    stale = tmp_path / f".idx.stagewise-index-runs-{pid}-abc_12"
    (stale / "run-00000").mkdir(parents=True)
    np.save(stale / "run-00000" / "docs.npy", np.arange(3))
    foreign = tmp_path / f".idx.stagewise-index-runs-{pid}-def"
    (foreign / "run-00000").mkdir(parents=True)
    (foreign / "run-00000" / "notes.txt").write_text("someone else's")
    build_on_disk(_batches(_corpus(20), 5), tmp_path / "idx")
    assert sorted(p.name for p in tmp_path.iterdir()) == [foreign.name, "idx"]


def test_cli_index_in_batches_is_the_same_index(tmp_path: Path) -> None:
    from tests.test_bm25_cli import invoke

    docs = _corpus(500, seed=9)
    _write_jsonl(tmp_path / "corpus.jsonl", docs)
    for name, size in [("one", "100000"), ("many", "13")]:
        result = invoke("index", str(tmp_path / "corpus.jsonl"), "-o", str(tmp_path / name), "--batch-size", size)
        assert result.exit_code == 0, result.output
    _same_folders(tmp_path / "one", tmp_path / "many")
    BM25Index.build(read_corpus(tmp_path / "corpus.jsonl")).save(tmp_path / "api")
    meta = json.loads((tmp_path / "api" / "meta.json").read_text())
    assert meta == json.loads((tmp_path / "many" / "meta.json").read_text())


def test_load_maps_the_arrays(tmp_path: Path) -> None:
    build_on_disk(_batches(_corpus(50), 10), tmp_path / "idx")
    index = BM25Index.load(tmp_path / "idx")
    for name in ("term_ptr", "post_docs", "post_tf", "doc_len", "vocab_data", "doc_ids_data"):
        array = getattr(index, name)
        assert isinstance(array, np.memmap) and not array.flags.writeable, name
        assert Path(array.filename).resolve() == (tmp_path / "idx" / f"{name}.npy").resolve()


# -------------------------------------------------------------------------------------------- dask search


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed", reason="the dask extra is not installed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def saved_index(tmp_path_factory: pytest.TempPathFactory) -> BM25Index:
    folder = tmp_path_factory.mktemp("dask") / "idx"
    return build_on_disk(_batches(_corpus(3000, seed=5, length=30), 700), folder)


OPTIONS = [
    {"k": 10},
    {"k": 1000, "variant": "bm25+", "delta": 0.7},
    {"k": 5, "k1": 0.9, "b": 0.4, "all_documents": True},
    {"k": 3, "variant": "okapi-rank_bm25", "epsilon": 0.5},
]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("partitions", [None, 1, 7])
def test_dask_search_is_the_local_search(client, saved_index: BM25Index, options: dict, partitions) -> None:
    from stagewise.retrieval.distributed import topk_dask

    queries = _corpus(120, seed=11, length=5)
    queries.texts[3] = "zzz qqq"  # no term in the index
    queries.texts[4] = ""
    local = saved_index.topk(queries, **options)
    seen: list[tuple[int, int]] = []
    remote = topk_dask(
        saved_index, queries, client=client, partitions=partitions, progress=lambda d, t: seen.append((d, t)),
        **options,
    )  # fmt: skip
    assert remote.query_ids == local.query_ids
    assert remote.empty_queries == local.empty_queries >= 2
    np.testing.assert_array_equal(remote.offsets, local.offsets)
    np.testing.assert_array_equal(remote.docs, local.docs)
    assert remote.scores.tobytes() == local.scores.tobytes()
    assert str(remote.scoring) == str(local.scoring)
    assert seen[-1] == (120, 120)


def test_search_dask_returns_the_local_run(client, saved_index: BM25Index) -> None:
    from stagewise.data.writers import write_trec_run
    from stagewise.retrieval.distributed import search_dask

    queries = _corpus(40, seed=4, length=6).to_dict()
    local, remote = saved_index.search(queries, k=50), search_dask(saved_index, queries, client=client, k=50)
    assert remote.name == local.name
    assert remote.to_polars().equals(local.to_polars())
    written = []
    for run in (local, remote):
        buffer = io.BytesIO()
        write_trec_run(run, buffer)
        written.append(buffer.getvalue())
    assert written[0] == written[1] and written[0].count(b"\n") > 500


def test_dask_search_checks_queries_before_the_cluster(client, saved_index: BM25Index) -> None:
    from stagewise.retrieval.distributed import topk_dask

    with pytest.raises(InputError, match="id 'q' appears twice"):
        topk_dask(saved_index, ["a", "b"], ["q", "q"], client=client)
    with pytest.raises(Exception, match="k"):
        topk_dask(saved_index, ["a"], client=client, k=0)


def test_cli_search_on_dask_writes_the_local_run(client, saved_index: BM25Index, tmp_path: Path) -> None:
    from tests.test_bm25_cli import invoke

    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"q{i}\t{t or 'x'}\n" for i, t in enumerate(_corpus(50, seed=2, length=6).texts)))
    address = client.scheduler.address
    common = ["search", str(saved_index.path), str(queries), "-k", "20"]
    result = invoke(*common, "-o", str(tmp_path / "local.run"))
    assert result.exit_code == 0, result.output
    result = invoke(*common, "-o", str(tmp_path / "dask.run"), "--engine", "dask", "--scheduler", address)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dask.run").read_bytes() == (tmp_path / "local.run").read_bytes()
    assert len((tmp_path / "local.run").read_text().splitlines()) > 100
    result = invoke(*common, "--scheduler", address)
    assert result.exit_code == 2 and "--scheduler: is only used with --engine dask" in result.stderr


@pytest.mark.parametrize(
    ("name", "text"), [("empty.jsonl", ""), ("empty.tsv", "docid\ttext\n"), ("blank.jsonl", "\n\n")]
)
def test_a_streamed_corpus_without_documents_is_read_corpus_s_refusal(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError) as whole:
        read_corpus(path)
    with pytest.raises(InputError) as streamed:
        list(iter_corpus(path, batch_size=2))
    assert str(streamed.value) == str(whole.value) and "has no documents" in str(whole.value)


def test_cli_search_with_an_unusable_scheduler_is_one_line(tmp_path: Path) -> None:
    dask = pytest.importorskip("dask", reason="the dask extra is not installed")
    from tests.test_bm25_cli import invoke

    build_on_disk(_batches(_corpus(20), 10), tmp_path / "idx")
    (tmp_path / "q.tsv").write_text("q1\twing\n")
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        for address in ("nonsense", "tcp://127.0.0.1:1"):
            result = invoke("search", str(tmp_path / "idx"), str(tmp_path / "q.tsv"), "--engine", "dask",
                            "--scheduler", address)  # fmt: skip
            assert result.exit_code == 2, result.output
            assert result.stderr.startswith("stagewise: error: --scheduler: cannot use the Dask scheduler at")
            assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_an_index_missing_on_a_worker_is_an_input_error(client, tmp_path: Path) -> None:
    from stagewise.retrieval.distributed import topk_dask

    build_on_disk(_batches(_corpus(20), 10), tmp_path / "idx")
    index = BM25Index.load(tmp_path / "idx")
    index.path = tmp_path / "elsewhere"  # as if the workers had no copy at the client's path
    with pytest.raises(InputError, match="on a Dask worker: no such index folder"):
        topk_dask(index, ["wing"], client=client)
