"""Reading qrels and runs from every supported source, and writing them back exactly and atomically.

Every reader must produce the same containers for the same content, whatever the format: TREC text
(plain, gzip, stdin, comments, ``#`` inside doc ids, any runs of spaces and tabs, extra trailing columns),
JSON (nested and a list of records), JSONL, CSV/TSV with aliased headers, Parquet, pandas and polars
DataFrames, and dict-of-dicts holding Python or numpy scalars. Writers (TREC, JSONL, Parquet) must give back
every score bit for bit and never leave a partial or temporary file behind.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import stagewise
from stagewise.errors import ConventionError, InputError, StagewiseError

# The content every "run" source below encodes, and what the reader must give back.
RUN_DICT = {
    "q1": {"d1": 3.0, "d2": 2.5, "doc#3": -1.25},
    "q2": {"d1": 0.5, "x-9": 1e-7},
}
QRELS_DICT = {
    "q1": {"d1": 2, "d2": 0, "doc#3": 1},
    "q2": {"x-9": 1, "d7": -1},
}

RUN_LINES = [
    ("q1", "d1", 1, "3.0"),
    ("q1", "d2", 2, "2.5"),
    ("q1", "doc#3", 3, "-1.25"),
    ("q2", "x-9", 1, "1e-07"),
    ("q2", "d1", 2, "0.5"),
]
QRELS_LINES = [("q1", "d1", 2), ("q1", "d2", 0), ("q1", "doc#3", 1), ("q2", "x-9", 1), ("q2", "d7", -1)]


def trec_run_text(sep: str = " ", extra: str = "", newline: str = "\n") -> str:
    return "".join(sep.join([q, "Q0", d, str(r), s, "tagA"]) + extra + newline for q, d, r, s in RUN_LINES)


def trec_qrels_text(sep: str = " ", extra: str = "", newline: str = "\n") -> str:
    return "".join(sep.join([q, "0", d, str(label)]) + extra + newline for q, d, label in QRELS_LINES)


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def assert_same_bits(got: dict[str, dict[str, float]], want: dict[str, dict[str, float]]) -> None:
    assert got.keys() == want.keys()
    for query, ranking in want.items():
        assert got[query].keys() == ranking.keys(), query
        for doc, value in ranking.items():
            assert bits(got[query][doc]) == bits(value), (query, doc, got[query][doc], value)


# ---------------------------------------------------------------------------------------------------------
# TREC text
# ---------------------------------------------------------------------------------------------------------

RUN_VARIANTS = {
    "spaces": trec_run_text(" "),
    "tabs": trec_run_text("\t"),
    "runs of spaces": trec_run_text("   "),
    "runs of tabs": trec_run_text("\t\t"),
    "mixed runs": "".join(
        f"{q} \t Q0\t\t{d}  {r}\t {s}   tagA\n" for q, d, r, s in RUN_LINES
    ),  # every separator a mixture
    "leading and trailing whitespace": "".join(f"  {q} Q0 {d} {r} {s} tagA \t\n" for q, d, r, s in RUN_LINES),
    "crlf": trec_run_text(" ", newline="\r\n"),
    "no final newline": trec_run_text(" ").rstrip("\n"),
    "extra trailing columns": trec_run_text(" ", extra=" extra1 extra2"),
    "extra trailing columns, tabs": trec_run_text("\t", extra="\tx\ty"),
    "comments and blank lines": "# a run\n\n# produced by hand\n"
    + "\n\n# between\n".join(trec_run_text(" ").splitlines())
    + "\n\n# trailing comment\n\n",
    "comment lines between data": "\n".join(
        line + "\n# note after a data line" for line in trec_run_text(" ").splitlines()
    )
    + "\n",
    # The first line decides nothing: a tab-separated file whose later lines use spaces, and the reverse.
    "tab first, then spaces": trec_run_text("\t").splitlines(keepends=True)[0]
    + "".join(trec_run_text(" ").splitlines(keepends=True)[1:]),
    "spaces first, then tabs": trec_run_text(" ").splitlines(keepends=True)[0]
    + "".join(trec_run_text("\t").splitlines(keepends=True)[1:]),
    # Mixed separators together with trailing columns trec_eval ignores.
    "tab first, then a line mixing tabs and spaces with extra columns": "q1\tQ0\td1\t1\t3.0\ttagA\n"
    "q1 Q0\td2\t2\t2.5\ttagA\textra\n"
    "q1\tQ0\tdoc#3\t3\t-1.25\ttagA\n"
    "q2\tQ0\tx-9\t1\t1e-07\ttagA\n"
    "q2\tQ0\td1\t2\t0.5\ttagA\n",
    "spaces first, then a line with a tab inside and extra columns": "q1 Q0 d1 1 3.0 tagA\n"
    "q1\tQ0 d2 2 2.5 tagA extra\n"
    "q1 Q0 doc#3 3 -1.25 tagA\n"
    "q2 Q0 x-9 1 1e-07 tagA\n"
    "q2 Q0 d1 2 0.5 tagA\n",
    "tabs, one field padded by a space, numeric extra columns": "q1\tQ0\td1\t1\t3.0\ttagA\n"
    "q1\tQ0\td2 2\t2.5\t99.5\ttagA\n"  # whitespace fields: q1 Q0 d2 2 2.5 99.5 tagA -> score 2.5
    "q1\tQ0\tdoc#3\t3\t-1.25\ttagA\n"
    "q2\tQ0\tx-9\t1\t1e-07\ttagA\n"
    "q2\tQ0\td1\t2\t0.5\ttagA\n",
}


@pytest.mark.parametrize("variant", list(RUN_VARIANTS))
def test_trec_run_whitespace_and_comment_variants(tmp_path: Path, variant: str) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(RUN_VARIANTS[variant].encode())
    run = stagewise.read_run(path)
    assert run.to_dict() == RUN_DICT
    assert len(run) == 5
    assert run.n_queries == 2


def _big_run_text(sep: str) -> str:
    return "".join(
        sep.join([f"q{i // 50}", "Q0", f"d{i}", str(i % 50 + 1), f"{1000 - i % 50}.25", "t"]) + "\n"
        for i in range(3000)
    )


@pytest.mark.parametrize(
    "odd_line",
    [
        "q999\tQ0 dz 1 1.5 t extra\n",  # spaces file, a later line with a tab and an extra column
        "q999 Q0 dz 1 1.5 t\textra\n",
    ],
)
def test_trec_run_large_file_with_one_mixed_whitespace_line(tmp_path: Path, odd_line: str) -> None:
    """A large regular file (the fast path) with one line using other whitespace reads like trec_eval reads it."""
    path = tmp_path / "big.run"
    path.write_text(_big_run_text(" ") + odd_line)
    run = stagewise.read_run(path)
    assert run.to_dict()["q999"] == {"dz": 1.5}
    assert len(run) == 3001


@pytest.mark.parametrize(
    "odd_line",
    [
        "q999 Q0\tdz\t1\t1.5\tt\textra\n",  # tab file, a line whose first field hides a space
        "q999\tQ0\tdz 1\t1.5\t7.5\tt\n",  # whitespace fields: q999 Q0 dz 1 1.5 7.5 t -> doc dz, score 1.5
    ],
)
def test_trec_run_large_tab_file_with_one_mixed_whitespace_line(tmp_path: Path, odd_line: str) -> None:
    path = tmp_path / "big.run"
    path.write_text(_big_run_text("\t") + odd_line)
    run = stagewise.read_run(path)
    assert run.to_dict()["q999"] == {"dz": 1.5}
    assert len(run) == 3001


QRELS_VARIANTS = {
    "spaces": trec_qrels_text(" "),
    "tabs": trec_qrels_text("\t"),
    "mixed runs": "".join(f"{q}\t 0  {d}\t\t{label}\n" for q, d, label in QRELS_LINES),
    "leading and trailing whitespace": "".join(f" \t{q} 0 {d} {label}  \n" for q, d, label in QRELS_LINES),
    "crlf": trec_qrels_text(" ", newline="\r\n"),
    "comments and blank lines": "# qrels\n\n" + trec_qrels_text(" ") + "\n# end\n",
    "tab first, then spaces": trec_qrels_text("\t").splitlines(keepends=True)[0]
    + "".join(trec_qrels_text(" ").splitlines(keepends=True)[1:]),
    "tab file, one line mixing tabs and spaces with an extra column": "q1\t0\td1\t2\n"
    "q1 0\td2\t0\t5\n"  # whitespace fields: q1 0 d2 0 5 -> label 0
    "q1\t0\tdoc#3\t1\n"
    "q2\t0\tx-9\t1\n"
    "q2\t0\td7\t-1\n",
}


@pytest.mark.parametrize("variant", list(QRELS_VARIANTS))
def test_trec_qrels_whitespace_and_comment_variants(tmp_path: Path, variant: str) -> None:
    path = tmp_path / "qrels.txt"
    path.write_bytes(QRELS_VARIANTS[variant].encode())
    qrels = stagewise.read_qrels(path)
    assert qrels.to_dict() == QRELS_DICT


def test_trec_doc_ids_containing_hash(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("# comment\nq1 Q0 #d 1 2.0 t\nq1 Q0 d#1 2 1.0 t\nq1 Q0 d# 3 0.5 t#tag\n")
    assert stagewise.read_run(path).to_dict() == {"q1": {"#d": 2.0, "d#1": 1.0, "d#": 0.5}}
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 #d 1\nq1 0 d#1 0\n")
    assert stagewise.read_qrels(qrels).to_dict() == {"q1": {"#d": 1, "d#1": 0}}


def test_trec_gzip(tmp_path: Path) -> None:
    run_path = tmp_path / "run.txt.gz"
    run_path.write_bytes(gzip.compress(trec_run_text().encode()))
    qrels_path = tmp_path / "qrels.gz"
    qrels_path.write_bytes(gzip.compress(trec_qrels_text("\t").encode()))
    assert stagewise.read_run(run_path).to_dict() == RUN_DICT
    assert stagewise.read_qrels(qrels_path).to_dict() == QRELS_DICT


def test_gzip_detected_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(gzip.compress(trec_run_text().encode()))
    assert stagewise.read_run(path).to_dict() == RUN_DICT


def _fake_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_trec_run_from_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_stdin(monkeypatch, trec_run_text().encode())
    run = stagewise.read_run("-")
    assert run.to_dict() == RUN_DICT


def test_trec_qrels_from_gzipped_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_stdin(monkeypatch, gzip.compress(trec_qrels_text().encode()))
    assert stagewise.read_qrels("-").to_dict() == QRELS_DICT


def test_trec_run_tag_and_given_ranks_kept(tmp_path: Path) -> None:
    path = tmp_path / "bm25.run"
    path.write_text(trec_run_text())
    run = stagewise.read_run(path)
    assert run.name == "bm25.run"
    assert run.tag == "tagA"
    assert stagewise.read_run(path, name="BM25").name == "BM25"


def test_large_trec_files_read_completely(tmp_path: Path) -> None:
    """Files big enough for the fast path read the same as the small ones."""
    n = 6000
    run_lines = ["# header comment", "# second"] + [
        f"q{i % 37}\tQ0\tdoc{i}\t{i // 37 + 1}\t{(n - i) / 7!r}\trunX\textra" for i in range(n)
    ]
    path = tmp_path / "big.run"
    path.write_text("\n".join(run_lines) + "\n")
    run = stagewise.read_run(path)
    assert len(run) == n
    assert run.n_queries == 37
    got = run.to_dict()
    for i in (0, 1, 36, 37, n - 1):
        assert bits(got[f"q{i % 37}"][f"doc{i}"]) == bits((n - i) / 7)

    qrels_lines = ["# c"] + [f"q{i % 37} 0 doc{i} {i % 4 - 1}" for i in range(n)]
    qpath = tmp_path / "big.qrels"
    qpath.write_text("\n".join(qrels_lines) + "\n")
    qrels = stagewise.read_qrels(qpath)
    assert len(qrels) == n
    assert qrels.label_histogram() == {-1: n // 4, 0: n // 4, 1: n // 4, 2: n // 4}


# ---------------------------------------------------------------------------------------------------------
# JSON, JSONL, CSV, TSV, Parquet
# ---------------------------------------------------------------------------------------------------------


def _run_records(qid: str = "query_id", docid: str = "doc_id", score: str = "score") -> list[dict]:
    return [{qid: q, docid: d, score: float(s)} for q, d, _, s in RUN_LINES]


def _qrels_records(qid: str = "query_id", docid: str = "doc_id", label: str = "relevance") -> list[dict]:
    return [{qid: q, docid: d, label: rel} for q, d, rel in QRELS_LINES]


def test_json_nested(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(RUN_DICT))
    assert stagewise.read_run(path).to_dict() == RUN_DICT
    qpath = tmp_path / "qrels.json"
    qpath.write_text(json.dumps(QRELS_DICT, indent=2))
    assert stagewise.read_qrels(qpath).to_dict() == QRELS_DICT


def test_json_list_of_records(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_run_records("qid", "docno", "score")))
    assert stagewise.read_run(path).to_dict() == RUN_DICT
    qpath = tmp_path / "qrels.json"
    qpath.write_text(json.dumps(_qrels_records("qid", "docid", "label")))
    assert stagewise.read_qrels(qpath).to_dict() == QRELS_DICT


def test_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _run_records()))
    assert stagewise.read_run(path).to_dict() == RUN_DICT
    qpath = tmp_path / "qrels.jsonl"
    qpath.write_text("".join(json.dumps(r) + "\n" for r in _qrels_records("query", "doc", "rel")))
    assert stagewise.read_qrels(qpath).to_dict() == QRELS_DICT


def test_jsonl_gzipped_with_blank_lines_and_integer_ids(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl.gz"
    lines = ['{"qid": 1, "docno": 10, "score": 2}', "", '{"qid": 1, "docno": 11, "score": 1.5}', ""]
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    assert stagewise.read_run(path).to_dict() == {"1": {"10": 2.0, "11": 1.5}}


@pytest.mark.parametrize(
    ("qid", "docid", "score"),
    [
        ("query_id", "doc_id", "score"),
        ("qid", "docno", "score"),
        ("qid", "docid", "sim"),
        ("query", "pid", "score"),
        ("QID", "DOCNO", "Score"),
        ("topic", "document_id", "similarity"),
    ],
)
@pytest.mark.parametrize("sep", [",", "\t"])
def test_csv_tsv_with_header_aliases(tmp_path: Path, qid: str, docid: str, score: str, sep: str) -> None:
    path = tmp_path / ("run.csv" if sep == "," else "run.tsv")
    body = "".join(sep.join([q, d, s]) + "\n" for q, d, _, s in RUN_LINES)
    path.write_text(sep.join([qid, docid, score]) + "\n" + body)
    assert stagewise.read_run(path).to_dict() == RUN_DICT


def test_csv_columns_in_any_order_with_extra_columns(tmp_path: Path) -> None:
    path = tmp_path / "run.csv"
    body = "".join(f"{r},{s},{d},x,{q}\n" for q, d, r, s in RUN_LINES)
    path.write_text("rank,score,docno,note,qid\n" + body)
    run = stagewise.read_run(path)
    assert run.to_dict() == RUN_DICT


@pytest.mark.parametrize(
    ("header", "sep"),
    [
        ("query_id,doc_id,relevance", ","),
        ("qid,docno,label", ","),
        ("query-id\tcorpus-id\tscore", "\t"),  # BEIR's qrels TSV
        ("qid\tdocid\trel", "\t"),
    ],
)
def test_csv_tsv_qrels_with_header_aliases(tmp_path: Path, header: str, sep: str) -> None:
    path = tmp_path / ("qrels.csv" if sep == "," else "qrels.tsv")
    path.write_text(header + "\n" + "".join(sep.join([q, d, str(label)]) + "\n" for q, d, label in QRELS_LINES))
    assert stagewise.read_qrels(path).to_dict() == QRELS_DICT


def test_format_argument_overrides_extension(tmp_path: Path) -> None:
    path = tmp_path / "scores.txt"
    path.write_text("qid,docno,score\n" + "".join(f"{q},{d},{s}\n" for q, d, _, s in RUN_LINES))
    assert stagewise.read_run(path, format="csv").to_dict() == RUN_DICT
    trec_named_csv = tmp_path / "run.csv"
    trec_named_csv.write_text(trec_run_text())
    assert stagewise.read_run(trec_named_csv, format="trec").to_dict() == RUN_DICT


def test_parquet(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pl.DataFrame(_run_records("qid", "docno", "score")).write_parquet(path)
    assert stagewise.read_run(path).to_dict() == RUN_DICT
    qpath = tmp_path / "qrels.parquet"
    pl.DataFrame(_qrels_records(), schema_overrides={"relevance": pl.Int8}).write_parquet(qpath)
    assert stagewise.read_qrels(qpath).to_dict() == QRELS_DICT


def test_parquet_float32_scores_and_integer_ids(tmp_path: Path) -> None:
    path = tmp_path / "run.pq"
    frame = pl.DataFrame(
        {"query_id": [1, 1, 2], "doc_id": [5, 6, 5], "score": [0.1, 0.2, 0.3]},
        schema_overrides={"score": pl.Float32},
    )
    frame.write_parquet(path)
    got = stagewise.read_run(path).to_dict()
    assert got == {"1": {"5": float(np.float32(0.1)), "6": float(np.float32(0.2))}, "2": {"5": float(np.float32(0.3))}}


# ---------------------------------------------------------------------------------------------------------
# In-memory objects
# ---------------------------------------------------------------------------------------------------------


def test_polars_frames() -> None:
    run = stagewise.read_run(pl.DataFrame(_run_records()))
    assert run.to_dict() == RUN_DICT
    qrels = stagewise.read_qrels(pl.DataFrame(_qrels_records("qid", "docno", "label")))
    assert qrels.to_dict() == QRELS_DICT


def test_pandas_frames() -> None:
    run = stagewise.read_run(pd.DataFrame(_run_records("qid", "docno", "score")))
    assert run.to_dict() == RUN_DICT
    qrels = stagewise.read_qrels(pd.DataFrame(_qrels_records()))
    assert qrels.to_dict() == QRELS_DICT


def test_pandas_frame_with_named_index_and_numpy_dtypes() -> None:
    frame = pd.DataFrame(_run_records("qid", "docno", "score")).set_index(["qid", "docno"])
    frame["score"] = frame["score"].astype(np.float64)
    assert stagewise.read_run(frame).to_dict() == RUN_DICT
    qframe = pd.DataFrame(_qrels_records()).astype({"relevance": np.int16}).set_index("query_id")
    assert stagewise.read_qrels(qframe).to_dict() == QRELS_DICT


def test_dict_of_dicts_with_python_scalars() -> None:
    assert stagewise.read_run(RUN_DICT).to_dict() == RUN_DICT
    assert stagewise.read_qrels(QRELS_DICT).to_dict() == QRELS_DICT
    mixed = {"q1": {"a": 1, "b": 0.5, "c": 2}}
    assert stagewise.read_run(mixed).to_dict() == {"q1": {"a": 1.0, "b": 0.5, "c": 2.0}}


def test_dict_of_dicts_with_numpy_scalars() -> None:
    run = stagewise.read_run(
        {
            "q1": {"a": np.float32(0.1), "b": np.float64(1 / 3), "c": np.int64(7)},
            np.str_("q2"): {"a": np.int32(-3), "b": np.float16(0.5)},
        }
    )
    assert_same_bits(
        run.to_dict(),
        {"q1": {"a": float(np.float32(0.1)), "b": 1 / 3, "c": 7.0}, "q2": {"a": -3.0, "b": 0.5}},
    )
    qrels = stagewise.read_qrels(
        {"q1": {"a": np.int64(2), "b": np.int32(0), "c": np.int8(-1)}, "q2": {"a": np.uint8(3)}}
    )
    assert qrels.to_dict() == {"q1": {"a": 2, "b": 0, "c": -1}, "q2": {"a": 3}}


def test_dict_keys_that_are_not_strings() -> None:
    run = stagewise.read_run({1: {10: 0.5, 11: 0.25}, np.int64(2): {"x": 1.0}})
    assert run.to_dict() == {"1": {"10": 0.5, "11": 0.25}, "2": {"x": 1.0}}


def test_existing_containers_pass_through() -> None:
    run = stagewise.read_run(RUN_DICT)
    assert stagewise.read_run(run) is run
    qrels = stagewise.read_qrels(QRELS_DICT)
    assert stagewise.read_qrels(qrels) is qrels


def test_every_source_gives_the_same_containers(tmp_path: Path) -> None:
    """One run, ten sources: the containers agree row for row."""
    (tmp_path / "r.trec").write_text(trec_run_text("\t"))
    (tmp_path / "r.trec.gz").write_bytes(gzip.compress(trec_run_text().encode()))
    (tmp_path / "r.json").write_text(json.dumps(RUN_DICT))
    (tmp_path / "records.json").write_text(json.dumps(_run_records()))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _run_records()))
    (tmp_path / "r.csv").write_text("qid,docno,score\n" + "".join(f"{q},{d},{s}\n" for q, d, _, s in RUN_LINES))
    (tmp_path / "r.tsv").write_text("qid\tdocno\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, _, s in RUN_LINES))
    pl.DataFrame(_run_records()).write_parquet(tmp_path / "r.parquet")
    sources = [p for p in sorted(tmp_path.iterdir())] + [
        pl.DataFrame(_run_records()),
        pd.DataFrame(_run_records()),
        RUN_DICT,
    ]
    frames = [stagewise.read_run(s).to_polars() for s in sources]
    for source, frame in zip(sources, frames, strict=True):
        assert frame.equals(frames[0]), source


# ---------------------------------------------------------------------------------------------------------
# Container views and duplicate policies
# ---------------------------------------------------------------------------------------------------------


def test_to_polars_is_in_evaluation_order_with_recomputed_ranks() -> None:
    run = stagewise.read_run({"q2": {"a": 1.0, "b": 3.0}, "q1": {"x": 0.5, "z": 0.5, "y": 2.0}})
    frame = run.to_polars()
    assert frame.columns[:4] == ["query_id", "doc_id", "score", "rank"]
    assert frame["query_id"].to_list() == ["q1", "q1", "q1", "q2", "q2"]
    # score descending, equal scores by doc id descending (trec_eval)
    assert frame["doc_id"].to_list() == ["y", "z", "x", "b", "a"]
    assert frame["rank"].to_list() == [1, 2, 3, 1, 2]
    assert frame["score"].dtype == pl.Float64


DUPLICATED_RUN = "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d1 3 3.0 t\nq2 Q0 d1 1 1.0 t\nq1 Q0 d1 4 2.0 t\n"


def test_duplicates_first_keeps_first_occurrence(tmp_path: Path) -> None:
    path = tmp_path / "dup.run"
    path.write_text(DUPLICATED_RUN)
    run = stagewise.read_run(path, duplicates="first")
    assert run.to_dict() == {"q1": {"d1": 1.0, "d2": 0.5}, "q2": {"d1": 1.0}}
    assert run.duplicates_dropped == 2


def test_duplicates_best_keeps_highest_score(tmp_path: Path) -> None:
    path = tmp_path / "dup.run"
    path.write_text(DUPLICATED_RUN)
    run = stagewise.read_run(path, duplicates="best")
    assert run.to_dict() == {"q1": {"d1": 3.0, "d2": 0.5}, "q2": {"d1": 1.0}}
    assert run.duplicates_dropped == 2


def test_duplicates_policies_on_frames() -> None:
    frame = pl.DataFrame({"qid": ["q", "q", "q"], "docno": ["a", "a", "b"], "score": [-2.0, -1.0, 0.0]})
    assert stagewise.read_run(frame, duplicates="first").to_dict() == {"q": {"a": -2.0, "b": 0.0}}
    assert stagewise.read_run(frame, duplicates="best").to_dict() == {"q": {"a": -1.0, "b": 0.0}}
    with pytest.raises(InputError, match="appears more than once"):
        stagewise.read_run(frame)


def test_same_doc_in_different_queries_is_not_a_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "run"
    path.write_text("q1 Q0 d 1 1.0 t\nq2 Q0 d 1 1.0 t\n")
    assert stagewise.read_run(path).to_dict() == {"q1": {"d": 1.0}, "q2": {"d": 1.0}}


# ---------------------------------------------------------------------------------------------------------
# Writing: exact round trips
# ---------------------------------------------------------------------------------------------------------

WRITE_FORMATS = [("trec", "out.run"), ("jsonl", "out.jsonl"), ("parquet", "out.parquet")]

ids = st.text(alphabet="abcdefxyz0123456789_-.", min_size=1, max_size=6)
doc_ids = st.text(alphabet="abcdefxyz0123456789_-.#:/", min_size=1, max_size=8)
finite = st.floats(allow_nan=False, allow_infinity=False)
runs = st.dictionaries(ids, st.dictionaries(doc_ids, finite, min_size=1, max_size=6), min_size=1, max_size=4)
labels = st.integers(min_value=-(2**31), max_value=2**31 - 1)
qrels_dicts = st.dictionaries(ids, st.dictionaries(doc_ids, labels, min_size=1, max_size=6), min_size=1, max_size=4)

EXTREMES = {
    "q": {
        "min_subnormal": 5e-324,
        "neg_min_subnormal": -5e-324,
        "subnormal": 1.2345e-310,
        "min_normal": 2.2250738585072014e-308,
        "max_subnormal": 2.225073858507201e-308,
        "max": 1.7976931348623157e308,
        "neg_max": -1.7976931348623157e308,
        "neg_zero": -0.0,
        "zero": 0.0,
        "third": 1 / 3,
        "tenth": 0.1,
        "2^53+2": 9007199254740994.0,
        "1e23": 1e23,
        "huge_negative": -9.87654321e300,
        "tiny_negative": -1e-300,
    }
}


@settings(max_examples=60, deadline=None)
@given(runs)
@example(EXTREMES)
@example({"q": {"a": 0.0, "b": -0.0}})
@example({"q": {"a": 1.7976931348623157e308, "b": -1.7976931348623157e308}})
def test_run_round_trip_is_bit_exact(scores: dict[str, dict[str, float]]) -> None:
    run = stagewise.read_run(scores)
    assert_same_bits(run.to_dict(), scores)
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, name in WRITE_FORMATS:
            path = Path(tmp) / name
            stagewise.write_run(run, path)
            back = stagewise.read_run(path)
            assert_same_bits(back.to_dict(), scores)
            assert back.to_polars()["doc_id"].equals(run.to_polars()["doc_id"]), fmt
            # An explicit format is honoured whatever the extension.
            other = Path(tmp) / f"explicit-{fmt}.dat"
            stagewise.write_run(run, other, format=fmt)
            assert_same_bits(stagewise.read_run(other, format=fmt).to_dict(), scores)
        assert sorted(os.listdir(tmp)) == sorted(
            [n for _, n in WRITE_FORMATS] + [f"explicit-{f}.dat" for f, _ in WRITE_FORMATS]
        )


@settings(max_examples=40, deadline=None)
@given(qrels_dicts)
@example({"q": {"a": -(2**31), "b": 2**31 - 1, "c": -5, "d": 0}})
def test_qrels_round_trip_is_exact(judgements: dict[str, dict[str, int]]) -> None:
    qrels = stagewise.read_qrels(judgements)
    assert qrels.to_dict() == judgements
    with tempfile.TemporaryDirectory() as tmp:
        for _fmt, name in WRITE_FORMATS:
            path = Path(tmp) / name
            stagewise.write_qrels(qrels, path)
            back = stagewise.read_qrels(path)
            assert back.to_dict() == judgements
            assert all(type(v) is int for ranking in back.to_dict().values() for v in ranking.values())


def test_round_trip_of_a_large_run_through_every_format(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n = 20_000
    raw = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    raw[:4] = [5e-324, -0.0, 1.7976931348623157e308, -2.2250738585072014e-308]
    frame = pl.DataFrame(
        {"query_id": [f"q{i % 101}" for i in range(n)], "doc_id": [f"D{i}" for i in range(n)], "score": raw}
    )
    run = stagewise.read_run(frame)
    want = run.to_polars()
    for _fmt, name in WRITE_FORMATS:
        stagewise.write_run(run, tmp_path / name)
        got = stagewise.read_run(tmp_path / name).to_polars()
        assert got["doc_id"].equals(want["doc_id"])
        assert np.array_equal(got["score"].to_numpy().view(np.uint64), want["score"].to_numpy().view(np.uint64))


def test_written_trec_run_is_trec_eval_form(tmp_path: Path) -> None:
    run = stagewise.read_run(RUN_DICT, name="mysys")
    stagewise.write_run(run, tmp_path / "out.run")
    lines = (tmp_path / "out.run").read_text().splitlines()
    assert len(lines) == 5
    for line in lines:
        fields = line.split()
        assert len(fields) == 6
        assert fields[1] == "Q0"
        assert float(fields[4]) == RUN_DICT[fields[0]][fields[2]]
    ranks = [(line.split()[0], int(line.split()[3])) for line in lines]
    assert ranks == [("q1", 1), ("q1", 2), ("q1", 3), ("q2", 1), ("q2", 2)]


def test_written_trec_qrels_is_trec_eval_form(tmp_path: Path) -> None:
    stagewise.write_qrels(stagewise.read_qrels(QRELS_DICT), tmp_path / "q.txt")
    rows = sorted(tuple(line.split()) for line in (tmp_path / "q.txt").read_text().splitlines())
    assert rows == sorted((q, "0", d, str(label)) for q, d, label in QRELS_LINES)


def test_write_to_new_directory_and_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "run.jsonl"
    stagewise.write_run(stagewise.read_run({"q": {"d": 1.0}}), target)
    stagewise.write_run(stagewise.read_run(RUN_DICT), target)
    assert stagewise.read_run(target).to_dict() == RUN_DICT
    assert os.listdir(target.parent) == ["run.jsonl"]


def test_unknown_write_format_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConventionError):
        stagewise.write_run(stagewise.read_run(RUN_DICT), tmp_path / "x.json", format="json")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------------------------------
# Writing: atomicity
# ---------------------------------------------------------------------------------------------------------

_FAILING_WRITER = textwrap.dedent(
    """
    import json, resource, signal, sys
    from pathlib import Path

    import numpy as np

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    import stagewise

    rng = np.random.default_rng(0)
    run = stagewise.read_run({f"q{i}": {f"d{j}": float(rng.random()) for j in range(100)} for i in range(50)})
    qrels = stagewise.read_qrels({f"q{i}": {f"d{j}": int(rng.integers(-1, 4)) for j in range(100)} for i in range(50)})
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))  # no file may grow past 4 KiB: the disk is "full"
    outcome = {}
    for directory in sys.argv[1:]:
        for fmt in ("trec", "jsonl", "parquet"):
            for what, write, obj in (("run", stagewise.write_run, run), ("qrels", stagewise.write_qrels, qrels)):
                target = Path(directory) / f"{what}.{fmt}"
                try:
                    write(obj, target, format=fmt)
                    outcome[str(target)] = None
                except Exception as exc:
                    outcome[str(target)] = type(exc).__name__
    print(json.dumps(outcome))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses RLIMIT_FSIZE")
def test_failing_write_leaves_no_partial_or_temporary_file(tmp_path: Path) -> None:
    """A write that fails half way (the file-size limit is hit) leaves nothing new behind."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    existing = tmp_path / "existing"
    existing.mkdir()
    names = [f"{what}.{fmt}" for fmt in ("trec", "jsonl", "parquet") for what in ("run", "qrels")]
    for name in names:
        (existing / name).write_text("OLD CONTENT\n")
    proc = subprocess.run(
        [sys.executable, "-c", _FAILING_WRITER, str(fresh), str(existing)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert len(outcome) == 12
    assert all(error is not None for error in outcome.values()), outcome  # every write really failed
    assert os.listdir(fresh) == []  # no partial target, no temporary file
    assert sorted(os.listdir(existing)) == sorted(names)
    for name in names:
        assert (existing / name).read_text() == "OLD CONTENT\n", name


@pytest.mark.parametrize(("fmt", "name"), WRITE_FORMATS)
def test_failing_rename_leaves_no_temporary_file(tmp_path: Path, fmt: str, name: str) -> None:
    """The target is a directory: the write fails at the rename and the temporary file is removed."""
    (tmp_path / name).mkdir()
    with pytest.raises(OSError):
        stagewise.write_run(stagewise.read_run(RUN_DICT), tmp_path / name, format=fmt)
    with pytest.raises(OSError):
        stagewise.write_qrels(stagewise.read_qrels(QRELS_DICT), tmp_path / name, format=fmt)
    assert os.listdir(tmp_path) == [name]
    assert os.listdir(tmp_path / name) == []


@pytest.mark.parametrize(("fmt", "name"), WRITE_FORMATS)
def test_interrupt_before_rename_keeps_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, name: str
) -> None:
    """A KeyboardInterrupt after the data is written but before it is published leaves the old file, no temp."""
    target = tmp_path / name
    stagewise.write_run(stagewise.read_run({"old": {"d": 1.0}}), target)
    before = target.read_bytes()
    big = stagewise.read_run({f"q{i}": {f"d{j}": j / 3 for j in range(50)} for i in range(40)})

    calls = {"n": 0}
    real_replace = os.replace

    def interrupted_replace(src, dst, *args, **kwargs):
        # Fail only the rename that would publish the new file: everything has been written to the temp file.
        calls["n"] += 1
        raise KeyboardInterrupt("interrupted before the rename")

    monkeypatch.setattr(os, "replace", interrupted_replace)
    with pytest.raises(KeyboardInterrupt):
        stagewise.write_run(big, target, format=fmt)
    monkeypatch.setattr(os, "replace", real_replace)
    assert calls["n"] == 1
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == [name]


def test_successful_writes_leave_only_the_target(tmp_path: Path) -> None:
    run = stagewise.read_run(RUN_DICT)
    qrels = stagewise.read_qrels(QRELS_DICT)
    for fmt, name in WRITE_FORMATS:
        stagewise.write_run(run, tmp_path / f"run-{name}", format=fmt)
        stagewise.write_qrels(qrels, tmp_path / f"qrels-{name}", format=fmt)
    assert sorted(os.listdir(tmp_path)) == sorted(
        [f"run-{n}" for _, n in WRITE_FORMATS] + [f"qrels-{n}" for _, n in WRITE_FORMATS]
    )
    assert not any(name.startswith(".") or name.endswith(".tmp") for name in os.listdir(tmp_path))


def test_trec_labels_written_as_integral_decimals_read_as_integers(tmp_path: Path, trec_reader: str) -> None:
    """Some tools write qrels labels as 1.0; trec_eval's atol reads them as 1, and so does stagewise (on both
    readers). A fractional label stays an error (atol would truncate 2.5 to 2 without a word)."""
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 a 1.0\nq1 0 b 2.00\nq1 0 c -1.0\nq1 0 d 0.\nq1 0 e 3\n")
    assert stagewise.read_qrels(path).to_dict() == {"q1": {"a": 1, "b": 2, "c": -1, "d": 0, "e": 3}}
    path.write_text("q1 0 a 1.0\nq1 0 b 2.5\n")
    with pytest.raises(InputError, match=r"qrels.txt:2: relevance label '?2\.5'? is not an integer"):
        stagewise.read_qrels(path)


def test_a_file_larger_than_one_read_piece_whose_lines_grow_parses_whole(tmp_path: Path) -> None:
    """The C reader reads 16 MB pieces and sizes its columns from the first; later, longer lines must still
    fit (the columns grow) and every row must come through."""
    path = tmp_path / "big.run"
    short = [f"q{i // 1000:04d} Q0 d{i} {i % 1000 + 1} {1000 - i % 1000} r\n" for i in range(500_000)]
    long = [
        f"q{500 + i // 1000:04d} Q0 document-with-a-much-longer-identifier-{i:09d} {i % 1000 + 1} {1000 - i % 1000} r\n"
        for i in range(200_000)
    ]
    path.write_text("".join(short) + "".join(long))
    assert path.stat().st_size > 16 << 20
    run = stagewise.read_run(path)
    assert len(run) == 700_000 and run.n_queries == 700
    docs = run.doc_ids
    assert docs[0] == "d0" and docs[499_999] == "d499999"
    assert docs[500_000] == "document-with-a-much-longer-identifier-000000000"
    assert docs[699_999] == "document-with-a-much-longer-identifier-000199999"
    assert run.scores[699_999] == 1.0 and run.query_ids[run.query_codes[699_999]] == "q0699"


def test_reordering_tied_rows_keeps_the_source_and_the_input_positions(tmp_path: Path) -> None:
    """Ties are put in doc id order in place; the run still names its file, and each row its input line."""
    path = tmp_path / "ties.run"
    path.write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 1.0 t\nq1 Q0 c 3 0.5 t\nq2 Q0 x 1 2.0 t\n")
    run = stagewise.read_run(path)
    assert run.source == str(path) and isinstance(run.source, str)
    assert run.doc_ids.to_list() == ["b", "a", "c", "x"]
    assert run.input_position.tolist() == [1, 0, 2, 3]
    in_order = stagewise.read_run({"q1": {"a": 2.0, "b": 1.0}})
    assert in_order.input_position.tolist() == [0, 1]


def test_trec_qrels_writer_round_trips_and_refuses_white_space(tmp_path: Path) -> None:
    qrels = stagewise.read_qrels({"q1": {"b": 2, "a": 0}, "q10": {"é": -1}, "q2": {"x": 1}})
    stagewise.write_qrels(qrels, tmp_path / "q.txt")
    assert stagewise.read_qrels(tmp_path / "q.txt").to_dict() == qrels.to_dict()
    assert (tmp_path / "q.txt").read_text(encoding="utf-8").splitlines()[0].split() == ["q1", "0", "b", "2"]
    with pytest.raises(StagewiseError, match="a doc_id contains white space, which a TREC qrels file cannot hold"):
        stagewise.write_qrels(stagewise.read_qrels({"q": {"a b": 1}}), tmp_path / "bad.txt")
    assert not (tmp_path / "bad.txt").exists()


def test_runs_with_one_file_name_in_two_folders_keep_their_folders(tmp_path: Path) -> None:
    """evaluate()/read_runs() name files by the shortest path suffix that tells them apart, as the CLI does."""
    for folder, score in (("a", 1.0), ("b", 2.0)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "run.trec").write_text(f"q Q0 d 1 {score} t\n")
    a, b = str(tmp_path / "a" / "run.trec"), tmp_path / "b" / "run.trec"
    runs = stagewise.read_runs([a, b, a])
    assert [r.name for r in runs] == ["a/run.trec", "b/run.trec", "a/run.trec#2"]
    assert [r.scores.tolist() for r in runs] == [[1.0], [2.0], [1.0]]
