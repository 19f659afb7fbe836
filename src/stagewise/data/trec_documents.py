"""The texts of chosen documents from a collection file: TREC SGML (``<DOC> <DOCNO>id</DOCNO> ... </DOC>``, as
the TREC disks, Robust04 and the Washington Post are distributed) or anything
:func:`stagewise.data.collections.read_corpus` reads (JSONL, TSV, a BEIR folder, SMART).

A TREC document's text is everything inside ``<DOC>`` but its ``<DOCNO>``, markup removed and white space
collapsed; ``<HEADLINE>``, ``<TEXT>`` and the rest keep their words. Only the wanted documents are kept, so an
assessment campaign over a pool reads a large collection once without holding it all.

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
    if source.is_file() and _is_trec(source):
        return _trec(source, wanted)
    from stagewise.data.collections import read_corpus

    documents = read_corpus(source)
    return {d: t for d, t in zip(documents.ids, documents.texts, strict=True) if d in wanted}


def _is_trec(source: Path) -> bool:
    import gzip

    opener = gzip.open if source.name.lower().endswith(".gz") else open
    try:
        with opener(source, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise InputError(source, f"cannot be read ({exc})") from None
    return re.match(rb"\s*<DOC>", head, re.IGNORECASE) is not None


def _trec(source: Path, wanted: Set[str]) -> dict[str, str]:
    from stagewise.data.collections import _read_text

    text = _read_text(source)
    found: dict[str, str] = {}
    for match in _DOC.finditer(text):
        body = match.group(1)
        number = _DOCNO.search(body)
        if number is None:
            line = text.count("\n", 0, match.start()) + 1
            raise InputError(source, "a <DOC> without <DOCNO>", line=line, expected="<DOCNO>id</DOCNO> in every <DOC>")
        doc_id = number.group(1).strip()
        if doc_id in wanted and doc_id not in found:
            rest = body[: number.start()] + " " + body[number.end() :]
            found[doc_id] = " ".join(html.unescape(_TAG.sub(" ", rest)).split())
    return found
