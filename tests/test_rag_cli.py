"""``stagewise rag``: formats, the JSONL contract, conventions in the output, errors with file and line.

The command is mounted on a local Typer app here (the lead registers it in ``stagewise.cli``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from stagewise.cli.rag_cmd import rag_command

app = typer.Typer()


@app.callback()
def _group() -> None:
    """Keep ``rag`` a subcommand."""


app.command("rag")(rag_command)
runner = CliRunner()

RECORDS = [
    {
        "id": "q1",
        "retrieved": ["p3", "p9", "p1"],
        "context": ["p3", "p9"],
        "gold_evidence": ["p9", ["p4", "p5"]],
        "answer": "Jane Austen wrote it [p9].",
        "gold_answers": ["Jane Austen"],
    },
    {"id": "q2", "retrieved": ["p1", "p2"], "gold_evidence": ["p8"], "answer": "Dickens", "gold_answers": ["Austen"]},
    {"id": "q3", "retrieved": ["p5"], "answer": "I don't know.", "gold_answers": []},
    {"id": "q4", "retrieved": ["p6"], "gold_evidence": ["p6"], "answer": "Persuasion [p6]", "gold_answers": ["Emma"]},
]
REQUIRED = {
    "id",
    "label",
    "reason",
    "evidence_in_context",
    "answer_correct",
    "first_gold_rank",
    "citation_precision",
    "citation_recall",
}


def invoke(*args: str):
    return runner.invoke(app, ["rag", *args], env={"COLUMNS": "200"})


@pytest.fixture
def records(tmp_path: Path) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


def test_jsonl_contract(records: Path) -> None:
    result = invoke(str(records), "--format", "jsonl")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in rows] == ["q1", "q2", "q3", "q4"]  # input order
    for row in rows:
        assert set(row) >= REQUIRED
    assert [(r["label"], r["reason"]) for r in rows] == [
        ("ok", "correct_answer"),
        ("retrieval_failure", "not_retrieved"),
        ("ok", "correct_abstention"),
        ("generation_failure", "wrong_answer"),
    ]
    assert rows[1]["first_gold_rank"] is None and rows[0]["first_gold_rank"] == 2


def test_json_summary_states_conventions(records: Path) -> None:
    result = invoke(str(records), "--format", "json", "--context-k", "2", "--correct", "f1:0.5", "--per-sample")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    conv = data["conventions"]
    assert conv["correct"] == "f1:0.5" and conv["context_k"] == 2
    assert "alternative" in conv["evidence_in_context"] and "label 1" in conv["alternatives_as_qrels"]
    assert conv["metrics_engine"]["metrics"]["ndcg@10"]["gain"] == "linear"
    summary = data["summary"]
    assert summary["counts"] == {"ok": 2, "generation_failure": 1, "retrieval_failure": 1, "lucky": 0}
    assert summary["table"]["evidence_in_context"]["answer_correct"]["count"] == 2
    assert summary["reasons"]["ok"] == {"correct_answer": 1, "correct_abstention": 1}
    assert len(data["samples"]) == 4


GOLDEN_TABLE = """\
stagewise rag · 4 samples · correct = contains
                     answer correct   answer wrong
evidence in context  ok 2 (50.00%)    generation_failure 1 (25.00%)
evidence missing     lucky 0 (0.00%)  retrieval_failure 1 (25.00%)

reasons
  ok                  correct_answer        1
  ok                  correct_abstention    1
  generation_failure  wrong_answer          1
  retrieval_failure   not_retrieved         1
"""


def test_table_golden(records: Path) -> None:
    result = invoke(str(records), "--judge", "gold")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(GOLDEN_TABLE)
    assert "# correct = contains:" in result.stdout
    assert "# context_k = 5:" in result.stdout
    assert "retrieval.recall@5" in result.stdout
    assert "# support judge gold: requests" in result.stdout


def test_markdown_to_file(records: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    result = invoke(str(records), "--format", "markdown", "-o", str(out), "-m", "recall@1,mrr")
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "| evidence in context | ok 2 (50.00%) | generation_failure 1 (25.00%) |" in text
    assert "| retrieval.recall@1 |" in text and "ndcg@10" not in text


def test_run_and_qrels(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"id": "q1", "answer": "Jane Austen", "gold_answers": ["Jane Austen"]}) + "\n")
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 a 1 3.0 x\nq1 Q0 b 2 2.0 x\n")
    qrels.write_text("q1 0 b 1\n")
    result = invoke(str(answers), "--run", str(run), "--qrels", str(qrels), "-f", "jsonl", "-k", "1")
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)
    assert (row["label"], row["reason"], row["first_gold_rank"]) == ("lucky", "ranked_too_low", 2)


def test_kilt_needs_gold(records: Path) -> None:
    result = invoke(str(records), "--from", "kilt")
    assert result.exit_code == 2
    assert "--from kilt needs --gold" in result.output


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "x", "answer": ""}', "records.jsonl:2: missing field gold_answers"),
        ("not json", "records.jsonl:2: invalid JSON"),
    ],
)
def test_bad_record_is_one_line_and_exit_2(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n" + line + "\n")
    result = invoke(str(path))
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_options_exit_2(records: Path) -> None:
    assert invoke(str(records), "--correct", "f1:9").exit_code == 2
    assert invoke(str(records), "-m", "nonsense@3").exit_code == 2
    assert invoke(str(records), "--context-k", "0").exit_code == 2
    assert invoke(str(records) + ".missing").exit_code == 2


def test_help_has_examples() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    assert "stagewise rag records.jsonl" in result.output
    assert "--context-k" in result.output and "--correct" in result.output
