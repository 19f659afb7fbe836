"""Qrels in the layouts of the classic test collections, which a TREC reader would misread.

* ``cranfield``: ``qid docid grade`` (Cranfield's ``cranqrel``). Grades are Cleverdon's, 1 = complete answer
  ... 4 = minimum interest, mapped to labels 4..1 so that higher is better, as nDCG expects; ``-1`` ("no
  interest", one row per query) becomes 0. ``grading="ir_datasets"`` keeps the grades as labels.
* ``cisi``: ``qid docid ...`` pairs, every listed pair relevant (label 1), any further fields ignored (CISI's
  ``CISI.REL``, CACM's ``qrels.text``, ADI's ``ADI.REL``).

Ids are integers in these files, written without leading zeros here (CACM says ``01``, its documents ``1``).
:mod:`stagewise.data.collections` reads the collections' qrels through these functions.
"""

from __future__ import annotations

from pathlib import Path

from stagewise.errors import InputError

QRELS_LAYOUTS: tuple[str, ...] = ("cranfield", "cisi")
CRANFIELD_GRADINGS: tuple[str, ...] = ("cleverdon", "ir_datasets")


def int_id(value: str, source: str | Path, line: int | None = None) -> str:
    """An integer id without leading zeros; anything else is an error naming the line."""
    try:
        return str(int(value))
    except ValueError:
        raise InputError(source, f"id {value!r} is not an integer", line=line) from None


def pairs_qrels(text: str, source: str | Path, columns: int = 2) -> dict[str, dict[str, int]]:
    """``qid docid ...`` lines (at least ``columns`` fields), every pair relevant (label 1)."""
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(text.split("\n"), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) < columns:
            raise InputError(source, f"{len(fields)} fields", line=number, expected=f"{columns} fields: qid docid ...")
        qrels.setdefault(int_id(fields[0], source, number), {})[int_id(fields[1], source, number)] = 1
    return qrels


def cranfield_qrels(text: str, source: str | Path, grading: str = "cleverdon") -> dict[str, dict[str, int]]:
    """``qid docid grade`` lines, the grade read as ``grading`` says (see the module's docstring)."""
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(text.split("\n"), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 3:
            raise InputError(source, f"{len(fields)} fields", line=number, expected="qid docid grade")
        q, d = int_id(fields[0], source, number), int_id(fields[1], source, number)
        try:
            grade = int(fields[2])
        except ValueError:
            raise InputError(source, f"grade {fields[2]!r} is not an integer", line=number) from None
        if grade not in (-1, 1, 2, 3, 4):
            raise InputError(source, f"grade {grade}", line=number, expected="-1, 1, 2, 3 or 4")
        cleverdon = 0 if grade == -1 else 5 - grade
        qrels.setdefault(q, {})[d] = cleverdon if grading == "cleverdon" else grade
    return qrels


def read_layout(layout: str, text: str, source: str | Path) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: label}}`` from the text of a qrels file in one of :data:`QRELS_LAYOUTS`."""
    qrels = cranfield_qrels(text, source) if layout == "cranfield" else pairs_qrels(text, source, 2)
    if not qrels:
        raise InputError(
            source, "has no judgements", expected="qid docid grade" if layout == "cranfield" else "qid docid"
        )
    return qrels
