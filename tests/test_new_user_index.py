"""`stagewise index --stopwords` takes a list name, @FILE or words: a misspelt list name (englsh), a capitalised
one (English) or a file without its @ used to become a stoplist of that one word, silently."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app

DOCS = [
    {"_id": "d1", "text": "the cat sat on the mat"},
    {"_id": "d2", "text": "a dog and the cat"},
    {"_id": "d3", "text": "of mice and men"},
]


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    return path


def _meta(folder: str) -> dict:
    return json.loads(Path(folder, "meta.json").read_text())


def _index(corpus: Path, out: str, stopwords: str):
    return CliRunner().invoke(app, ["index", str(corpus), "-o", out, "--stopwords", stopwords])


@pytest.mark.parametrize(("typed", "meant"), [("englsh", "english"), ("nnoe", "none")])
def test_a_misspelt_list_name_is_refused(corpus: Path, typed: str, meant: str) -> None:
    done = _index(corpus, "idx", typed)
    assert done.exit_code == 2
    assert done.output == (
        f"stagewise: error: --stopwords: {typed!r} would be a list of that one word (did you mean {meant!r}? "
        f"for the one word, write it with a comma: {typed},)\n"
    )
    assert not Path("idx").exists()


def test_a_capitalised_list_name_is_the_list(corpus: Path) -> None:
    assert _index(corpus, "lower", "english").exit_code == 0
    assert _index(corpus, "upper", "English").exit_code == 0
    lower, upper = _meta("lower"), _meta("upper")
    # the same analyser, hence the same index: 33 Lucene stopwords, not the one word 'english'
    assert upper["analyser"] == lower["analyser"]
    assert upper["analyser"]["stopwords"] == "english" and upper["terms"] == lower["terms"]


def test_a_file_without_its_at_sign_says_to_add_it(corpus: Path) -> None:
    Path("stop.txt").write_text("the\nof\n")
    done = _index(corpus, "idx", "stop.txt")
    assert (
        done.output
        == "stagewise: error: --stopwords: 'stop.txt' is a file (write @stop.txt to read a word a line from it)\n"
    )
    assert _index(corpus, "idx", "@stop.txt").exit_code == 0


def test_one_word_with_a_comma_is_that_word(corpus: Path) -> None:
    done = _index(corpus, "idx", "englsh,")
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_searching_with_a_file_of_no_queries_names_that_file(corpus: Path, content: str) -> None:
    # it said "no query matched any document (0 queries, ...)", which reads as a fault of the index
    assert _index(corpus, "idx", "english").exit_code == 0
    Path("queries.tsv").write_text(content)
    done = CliRunner().invoke(app, ["search", "idx", "queries.tsv", "-o", "out.run"])
    assert done.exit_code == 2
    assert done.output == "stagewise: error: queries.tsv: has no queries; expected one query a line or record\n"
    assert not Path("out.run").exists()


@pytest.mark.parametrize("k1", ["1e308", "-1"])
def test_a_k1_whose_scores_would_overflow_or_that_is_negative_is_refused(corpus: Path, k1: str) -> None:
    # k1 = 1e308 made tf * (k1 + 1) infinite: the run held inf scores after a numpy overflow warning
    done = CliRunner().invoke(app, ["index", str(corpus), "-o", "ix", "--k1", k1])
    assert done.exit_code == 2, done.output
    assert "'k1'" in done.output and "[0, 1e9]" in done.output
    assert not Path("ix").exists()


def test_the_largest_k1_allowed_still_gives_finite_scores(corpus: Path) -> None:
    from stagewise.retrieval import BM25Index

    index = BM25Index.build({d["_id"]: d["text"] for d in DOCS}, k1=1e9)
    scores = list(index.search({"q": "cat mat"}, k=3).to_dict()["q"].values())
    assert len(scores) == 2 and all(map(math.isfinite, scores))
