"""The texts of chosen documents from a collection: TREC SGML (``<DOC> <DOCNO>id</DOCNO> ... </DOC>``), one file or
a folder of them (as the TREC disks, Robust04 and the Washington Post ship: many files, gzipped or not, in
sub-folders), or anything :func:`stagewise.data.collections.read_corpus` reads (JSONL, TSV, a BEIR folder, SMART).

A TREC document's text is everything inside ``<DOC>`` but its ``<DOCNO>``, markup removed, entities read and white
space collapsed; ``<HEADLINE>``, ``<TEXT>`` and the rest keep their words. Files are read a document at a time and
only the wanted documents are kept, so a campaign over a pool reads a large collection without holding it. Text
is UTF-8; a line that is not (the older TREC disks hold Latin-1 bytes) is read as Latin-1, which never fails.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "docs.trec")
>>> _ = open(path, "w").write("<DOC>\\n<DOCNO> FT1 </DOCNO>\\n<TEXT>\\nGangs &amp; crime.\\n</TEXT>\\n</DOC>\\n")
>>> document_texts(path, {"FT1", "FT2"})
{'FT1': 'Gangs & crime.'}
"""

from __future__ import annotations

import html
import re
from collections.abc import Set
from pathlib import Path

from stagewise.errors import InputError

__all__ = ["document_texts"]

_DOC = re.compile(r"<DOC>(.*?)</DOC>", re.IGNORECASE | re.DOTALL)
_DOCNO = re.compile(r"<DOCNO>(.*?)</DOCNO>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^<>]{1,200}>")


def document_texts(path: str | Path, wanted: Set[str]) -> dict[str, str]:
    """``{doc_id: text}`` of the documents of ``wanted`` found in the collection at ``path`` (a document not in it
    is not in the result)."""
    source = Path(path)
    if not source.exists():
        raise InputError(source, "no such collection", hint="give --collection a TREC SGML, JSONL or TSV file")
    files = _trec_files(source)
    if files:
        found: dict[str, str] = {}
        for file in files:
            _trec(file, wanted, found)
        return found
    from stagewise.data.collections import read_corpus

    documents = read_corpus(source)
    return {d: t for d, t in zip(documents.ids, documents.texts, strict=True) if d in wanted}


def _trec_files(source: Path) -> list[Path]:
    """The TREC SGML files of ``source``: itself, or every file under a folder that is not a BEIR folder (sorted,
    so a document given twice is read from the same file every time); none when it is not TREC."""
    if source.is_file():
        return [source] if _is_trec(source) else []
    if (source / "corpus.jsonl").exists():
        return []
    files = sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith("."))
    trec = [p for p in files if _is_trec(p)]
    if not trec:
        raise InputError(source, "is a folder without TREC SGML files", expected="<DOC> files, or a BEIR folder")
    return trec


def _opener(source: Path):
    import gzip

    return gzip.open if source.name.lower().endswith(".gz") else open


def _is_trec(source: Path) -> bool:
    try:
        with _opener(source)(source, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise InputError(source, f"cannot be read ({exc})") from None
    return re.match(rb"\s*<DOC>", head, re.IGNORECASE) is not None


def _trec(source: Path, wanted: Set[str], found: dict[str, str]) -> None:
    """Add the wanted documents of one TREC file to ``found``, reading it a ``</DOC>`` at a time."""
    try:
        with _opener(source)(source, "rb") as fh:
            pending: list[str] = []
            first = 1
            for number, line in enumerate(fh, start=1):
                pending.append(_decoded(line))
                if b"</doc>" in line.lower():
                    _blocks("".join(pending), first, source, wanted, found)
                    pending, first = [], number + 1
    except (OSError, EOFError) as exc:
        raise InputError(source, f"cannot be read ({exc})") from None
    if "<doc>" in "".join(pending).lower():  # a file cut short: its last document would be lost without a word
        raise InputError(source, "a <DOC> is not closed before the end of the file", line=first, expected="</DOC>")


def _decoded(line: bytes) -> str:
    """A line as UTF-8, or as Latin-1 when it is not UTF-8 (the older TREC disks hold Latin-1 bytes)."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("latin-1")


def _blocks(text: str, first: int, source: Path, wanted: Set[str], found: dict[str, str]) -> None:
    for match in _DOC.finditer(text):
        body = match.group(1)
        number = _DOCNO.search(body)
        if number is None:
            line = first + text.count("\n", 0, match.start())
            raise InputError(source, "a <DOC> without <DOCNO>", line=line, expected="<DOCNO>id</DOCNO> in every <DOC>")
        doc_id = number.group(1).strip()
        if doc_id in wanted and doc_id not in found:
            rest = body[: number.start()] + " " + body[number.end() :]
            found[doc_id] = " ".join(html.unescape(_TAG.sub(" ", rest)).split())
