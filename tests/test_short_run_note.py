"""A run shorter than a cutoff is said under the table, the same on every engine."""

from __future__ import annotations

from pathlib import Path

import pytest

import stagewise


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq2 0 b 1\nq3 0 c 1\n")
    run = tmp_path / "run.txt"
    lines = [f"q1 Q0 d{i} {i + 1} {100 - i} r\n" for i in range(12)]  # 12 results
    lines += [f"q2 Q0 e{i} {i + 1} {100 - i} r\n" for i in range(3)]  # 3 results; q3 absent
    run.write_text("".join(lines))
    return qrels, run


@pytest.mark.parametrize("engine", ["local", "stream"])
def test_queries_shorter_than_the_largest_cutoff_are_counted(files, engine: str) -> None:
    qrels, run = files
    result = stagewise.evaluate(qrels, run, ["P@5", "P@10", "map"], engine=engine)
    assert "run.txt: 1 of 2 queries have fewer than 10 results (shortest 3)" in " ".join(result.notes())
    assert result.runs[0].num_ret.tolist() == [12, 3, 0]  # q3 is absent: counted apart, not as short


def test_no_note_when_every_query_is_long_enough_or_no_cutoff(files) -> None:
    qrels, run = files
    assert not any("fewer than" in n for n in stagewise.evaluate(qrels, run, ["P@3", "map"]).notes())
    capped = stagewise.evaluate(qrels, run, ["P@10"], max_ret=2)
    assert "2 of 2 queries have fewer than 10 results (shortest 2)" in " ".join(capped.notes())
