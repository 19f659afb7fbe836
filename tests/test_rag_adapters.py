"""Adapters: one sample in each of the RAGAS, RAGChecker, KILT and BERGEN shapes (written from their documented
formats), read and diagnosed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stagewise.errors import ConventionError, InputError
from stagewise.rag import evaluate_rag, load_records
from stagewise.rag.adapters import content_id, from_bergen, from_kilt, from_ragas

# RAGAS >= 0.2 SingleTurnSample fields, with ids (as for IDBasedContextPrecision/Recall)
RAGAS_V2 = [
    {
        "user_input": "Where is the Eiffel Tower located?",
        "retrieved_contexts": ["The Brandenburg Gate is in Berlin.", "The Eiffel Tower is located in Paris."],
        "retrieved_context_ids": ["doc_12", "doc_7"],
        "reference_contexts": ["The Eiffel Tower is located in Paris."],
        "reference_context_ids": ["doc_7"],
        "response": "The Eiffel Tower is located in Paris [2].",
        "reference": "Paris",
    },
    {
        "user_input": "Who painted the Mona Lisa?",
        "retrieved_contexts": ["The Louvre is a museum."],
        "retrieved_context_ids": ["doc_3"],
        "reference_context_ids": ["doc_9"],
        "response": "Michelangelo",
        "reference": "Leonardo da Vinci",
    },
]

# RAGAS 0.1 dataset columns (texts only), as a dict of columns (Dataset.to_dict())
RAGAS_V1_COLUMNS = {
    "question": ["When was the first Super Bowl?"],
    "answer": ["The first Super Bowl was held on January 15, 1967."],
    "contexts": [["The First AFL-NFL World Championship Game was played on January 15, 1967.", "Unrelated text."]],
    "ground_truth": ["January 15, 1967"],
    "reference_contexts": [["The First AFL-NFL World Championship Game was played on January 15, 1967."]],
}

# RAGChecker input/output JSON
RAGCHECKER = {
    "results": [
        {
            "query_id": "000",
            "query": "What's the longest river in the world?",
            "gt_answer": "The Nile is the longest river in the world.",
            "response": "The longest river in the world is the Nile.",
            "retrieved_context": [
                {"doc_id": "004", "text": "Scientists debate whether the Amazon or the Nile is longer."},
                {"doc_id": "019", "text": "The Nile River is the longest river in the world, about 6,650 km."},
            ],
        }
    ]
}

# KILT gold (nq-dev-kilt.jsonl style) and guess files
KILT_GOLD = [
    {
        "id": "-2510",
        "input": "who wrote the novel emma",
        "output": [
            {"answer": "Jane Austen", "provenance": [{"wikipedia_id": "15574", "title": "Emma (novel)"}]},
            {"answer": "Austen"},
            {"provenance": [{"wikipedia_id": "14377"}, {"wikipedia_id": "15574"}]},
        ],
    },
    {
        "id": "-77",
        "input": "where is hogwarts",
        "output": [{"answer": "Scotland", "provenance": [{"wikipedia_id": "1"}]}],
    },
]
KILT_GUESS = [
    {"id": "-77", "output": [{"answer": "Scotland", "provenance": [{"wikipedia_id": "9"}, {"wikipedia_id": "8"}]}]},
    {
        "id": "-2510",
        "output": [{"answer": "Jane Austen", "provenance": [{"wikipedia_id": "15574"}, {"wikipedia_id": "3"}]}],
    },
]

# BERGEN eval_dev_out.json and its TREC run
BERGEN_OUT = [
    {
        "q_id": "126502",
        "response": "\nRestive means restless or unsettled.",
        "instruction": "<|system|> ... Question: define restive",
        "label": ["restless", "unsettled"],
        "question": "define restive",
        "ranking_label": [["6479607"]],
    },
    {
        "q_id": "300902",
        "response": "I cannot answer this question.",
        "instruction": "...",
        "label": "20 years",
        "question": "how many years for a bond to mature",
        "ranking_label": [["512553", "4510955"]],
    },
]
BERGEN_RUN = (
    "126502\tq0\t6479607\t1\t3.0079\trun\n"
    "300902\tq0\t4510955\t1\t7.7976\trun\n300902\tq0\t512553\t2\t4.9324\trun\n300902\tq0\t4941337\t3\t2.9491\trun\n"
)


def test_ragas_v2_with_ids() -> None:
    records = from_ragas(RAGAS_V2)
    first = records[0]
    assert (first.id, first.retrieved, first.context, first.gold_evidence) == (
        "1",
        ("doc_12", "doc_7"),
        ("doc_12", "doc_7"),
        (("doc_7",),),
    )
    rows = evaluate_rag(records).rows
    assert (rows[0].label, rows[0].citations, rows[0].citation_precision) == ("ok", ["doc_7"], 1.0)
    assert (rows[1].label, rows[1].reason) == ("retrieval_failure", "not_retrieved")


def test_ragas_v1_columns_with_content_ids(tmp_path: Path) -> None:
    path = tmp_path / "ragas.json"
    path.write_text(json.dumps(RAGAS_V1_COLUMNS))
    (record,) = load_records(path, "ragas")
    gold_text = RAGAS_V1_COLUMNS["reference_contexts"][0][0]
    assert record.gold_evidence == ((content_id(gold_text),),)
    assert record.retrieved[0] == content_id(gold_text)  # same text, same id
    assert record.passages[record.retrieved[1]] == "Unrelated text."
    row = evaluate_rag([record]).rows[0]
    assert (row.label, row.answer_correct) == ("ok", True)


def test_ragas_needed_together_and_errors() -> None:
    (record,) = from_ragas([{**RAGAS_V2[0], "reference_context_ids": ["doc_7", "doc_12"]}], needed_together=True)
    assert record.gold_evidence == (("doc_7", "doc_12"),)
    with pytest.raises(InputError, match="RAGAS record lacks 'reference'"):
        from_ragas([{"user_input": "q", "response": "a", "retrieved_contexts": []}])


def test_ragchecker(tmp_path: Path) -> None:
    path = tmp_path / "checker.json"
    path.write_text(json.dumps(RAGCHECKER))
    (record,) = load_records(path, "ragchecker")
    assert (record.id, record.retrieved, record.gold_evidence) == ("000", ("004", "019"), None)
    assert record.gold_answers == ("The Nile is the longest river in the world.",)
    row = evaluate_rag([record], correct="f1:0.5", evidence="answers").rows[0]
    # DPR has_answer: no passage holds the whole long gold answer, so evidence stays empty
    assert row.answer_correct is True and row.gold_evidence == []


def test_kilt(tmp_path: Path) -> None:
    gold, guess = tmp_path / "gold.jsonl", tmp_path / "guess.jsonl"
    gold.write_text("".join(json.dumps(g) + "\n" for g in KILT_GOLD))
    guess.write_text("".join(json.dumps(g) + "\n" for g in KILT_GUESS))
    records = from_kilt(gold, guess)
    assert [r.id for r in records] == ["-2510", "-77"]  # the gold file's order
    emma = records[0]
    assert emma.gold_answers == ("Jane Austen", "Austen")
    assert emma.gold_evidence == (("15574",), ("14377", "15574"))
    assert emma.retrieved == ("15574", "3")
    rows = evaluate_rag(records, correct="em").rows
    assert (rows[0].label, rows[0].rprec, rows[0].kilt_em) == ("ok", 1.0, 1.0)
    assert (rows[1].label, rows[1].kilt_em) == ("lucky", 0.0)


def test_kilt_mismatched_ids() -> None:
    with pytest.raises(InputError, match="no prediction for id '-77'"):
        from_kilt(KILT_GOLD, KILT_GUESS[1:])
    with pytest.raises(InputError, match="has no gold record"):
        from_kilt(KILT_GOLD[:1], KILT_GUESS)


def test_bergen(tmp_path: Path) -> None:
    out, run = tmp_path / "eval_dev_out.json", tmp_path / "run.retrieve.top_5.kilt_nq.dev.bm25.trec"
    out.write_text(json.dumps(BERGEN_OUT, indent=2))
    run.write_text(BERGEN_RUN)
    records = from_bergen(out, run)
    assert records[0].gold_answers == ("restless", "unsettled")
    assert records[1].gold_evidence == (("512553", "4510955"),)
    assert records[1].retrieved == ("4510955", "512553", "4941337")
    rows = evaluate_rag(records).rows
    assert (rows[0].label, rows[0].reason) == ("ok", "correct_answer")
    assert (rows[1].label, rows[1].reason) == ("generation_failure", "false_abstention")
    without_run = evaluate_rag(from_bergen(out)).rows
    assert without_run[0].reason == "not_retrieved"


def test_unknown_shape() -> None:
    with pytest.raises(ConventionError, match="'shape' parameter"):
        load_records([], "langchain")
