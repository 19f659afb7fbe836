"""Crafted inputs for the RAG readers and the BM25 index's metadata (issue 24: 8 of 386 crafted inputs ended in
a traceback): records nested thousands of levels deep, an integer id longer than Python reads from text,
invalid UTF-8 in a RAGAS JSON file, a deeply nested meta.json. Each runs through the console entry point as a
user would, and must exit 2 with one error line naming the file and the line, and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

STAGEWISE = str(Path(sys.executable).with_name("stagewise"))


def _fails_cleanly(args: list[str], path: Path, line: int, *words: str) -> str:
    done = subprocess.run([STAGEWISE, *args], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-2000:]
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stagewise: error:"), done.stderr[-2000:]
    assert f"{path}:{line}:" in lines[0], lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


GOOD = '{"id": "ok", "answer": "x", "gold_answers": ["x"]}\n'


@pytest.mark.parametrize("depth", [3000, 100_000])
def test_records_nested_thousands_deep(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.jsonl"
    deep = "[" * depth + "]" * depth
    path.write_text(GOOD + '{"id": "a", "answer": "x", "gold_answers": ' + deep + "}\n")
    _fails_cleanly(["rag", str(path)], path, 2, "nested too deeply")


def test_records_as_a_json_list_nested_deep_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('[\n{"id": "ok", "answer": "x", "gold_answers": []},\n{"id": "a", "answer": "x", "gold_answers": '
                    + "[" * 5000 + "]" * 5000 + "}\n]\n")  # fmt: skip
    _fails_cleanly(["rag", str(path)], path, 3, "nested too deeply")


def test_a_5000_digit_integer_id(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(GOOD + GOOD.replace('"ok"', "9" * 5000))
    _fails_cleanly(["rag", str(path)], path, 2, "5000 digits", "as a string")


def test_a_5000_digit_integer_in_a_ragas_file(tmp_path: Path) -> None:
    path = tmp_path / "ragas.json"
    path.write_text('[{"question": "q", "answer": "a", "contexts": [], "id": ' + "7" * 5000 + "}]")
    _fails_cleanly(["rag", str(path), "--from", "ragas"], path, 1, "5000 digits")


def test_invalid_utf8_in_a_ragas_json_file(tmp_path: Path) -> None:
    path = tmp_path / "ragas.json"
    path.write_bytes(b'[\n{"question": "q", "answer": "a", "contexts": []},\n{"question": "caf\xe9\xff"}\n]\n')
    _fails_cleanly(["rag", str(path), "--from", "ragas"], path, 3, "not valid UTF-8")


def test_deeply_nested_ragas_jsonl_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "ragas.jsonl"
    row = '{"question": "q", "answer": "a", "contexts": []}\n'
    path.write_text(row + '{"question": "q", "answer": ' + "[" * 5000 + "]" * 5000 + "}\n")
    _fails_cleanly(["rag", str(path), "--from", "ragas"], path, 2, "nested too deeply")


@pytest.fixture
def index(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "text": "hello world"}\n{"_id": "d2", "text": "foo bar"}\n')
    folder = tmp_path / "idx"
    subprocess.run([STAGEWISE, "index", str(corpus), "-o", str(folder)], check=True, capture_output=True)
    return folder


def test_a_bm25_index_whose_meta_json_is_deeply_nested(index: Path, tmp_path: Path) -> None:
    meta_path = index / "meta.json"
    meta = json.loads(meta_path.read_text())
    text = json.dumps(meta, indent=2)
    lines = text.count("\n") + 1
    meta_path.write_text(text[:-2] + ',\n  "deep": ' + "[" * 100_000 + "]" * 100_000 + "\n}\n")
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\thello\n")
    _fails_cleanly(["search", str(index), str(queries)], meta_path, lines, "nested too deeply", "rebuild")


@pytest.mark.parametrize("escape", ["\\ud800", "\\udc80", "x\\ud83d"])
def test_half_a_surrogate_pair_in_an_id(tmp_path: Path, escape: str) -> None:
    # valid JSON, but no character: the web app's label store and every text writer failed on it
    path = tmp_path / "surrogate.jsonl"
    path.write_text(GOOD + GOOD.replace('"ok"', f'"{escape}"'))
    _fails_cleanly(["rag", str(path)], path, 2, "half of a surrogate pair")


def test_a_whole_surrogate_pair_is_a_character(tmp_path: Path) -> None:
    path = tmp_path / "pair.jsonl"
    path.write_text(GOOD.replace('"ok"', '"\\ud83d\\ude00"'))
    done = subprocess.run([STAGEWISE, "rag", str(path), "-f", "jsonl"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["id"] == "\U0001f600"


def test_half_a_surrogate_pair_in_a_ragas_json_file(tmp_path: Path) -> None:
    # a whole-file JSON list went through json.loads directly, past the checks JSONL lines get
    path = tmp_path / "ragas.json"
    path.write_text('[{"question": "q\\ud800", "answer": "a", "contexts": []}]')
    _fails_cleanly(["rag", str(path), "--from", "ragas"], path, 1, "half of a surrogate pair")
