"""Readers for test collections: BEIR folders, JSONL and TSV corpora and queries, the SMART-format classics
(Cranfield, CISI, MEDLINE, CACM, ADI), NPL, and SciFact.

Every reader returns plain values: :class:`Documents` (ids and texts, for documents or queries) and
:class:`Collection` (documents, queries, qrels, and ``notes`` naming each convention the reader applied, such as
Cranfield's query renumbering). Malformed input raises :class:`stagewise.errors.InputError` naming the file and
line.

Files are read as the rest of ``data`` reads them: bytes (and gzip) through :func:`stagewise._io.read_bytes`,
UTF-8 through :func:`stagewise.data.trec.decode_text`, JSON lines through
:func:`stagewise.data.readers.json_records`, TREC qrels through :func:`stagewise.data.readers.read_qrels`.

Conventions, stated once:

* A document's text is its fields joined by one space: BEIR's ``title`` and ``text`` (as Pyserini indexes
  BEIR), a SMART document's ``.T`` (title) and ``.W`` (abstract), SciFact's title and abstract sentences.
* SMART ids are integers and are written without leading zeros (CACM's qrels say ``01``; the documents ``1``).
* Only queries with at least one judgement are kept by :func:`read_classic` and :func:`read_beir` by default
  (CISI judges 76 of its 112 queries, CACM 52 of 64); ``judged_only=False`` keeps all.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stagewise._io import PathLike, input_errors, open_input, read_bytes
from stagewise.data import classic
from stagewise.errors import ConventionError, InputError

ID_FIELDS = ("_id", "id", "docid", "doc_id", "docno", "pid", "qid", "query_id")
TEXT_FIELDS = ("title", "text", "contents", "body", "abstract", "query")
LINE_BLOCK_BYTES = 1 << 24  # a streamed corpus is read and decoded this many bytes at a time


@dataclass(frozen=True)
class Documents:
    """Ids and texts of documents (or queries), in order."""

    ids: list[str]
    texts: list[str]

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.texts):
            raise ValueError(f"{len(self.ids)} ids but {len(self.texts)} texts")

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(zip(self.ids, self.texts, strict=True))

    def to_dict(self) -> dict[str, str]:
        return dict(zip(self.ids, self.texts, strict=True))

    def subset(self, keep: set[str]) -> Documents:
        pairs = [(i, t) for i, t in zip(self.ids, self.texts, strict=True) if i in keep]
        return Documents([i for i, _ in pairs], [t for _, t in pairs])


@dataclass(frozen=True)
class Collection:
    """A test collection: documents, queries and judgements (``qrels``: query id -> doc id -> label)."""

    name: str
    documents: Documents
    queries: Documents
    qrels: dict[str, dict[str, int]]
    notes: tuple[str, ...] = field(default=())

    def __repr__(self) -> str:
        n_qrels = sum(len(v) for v in self.qrels.values())
        return (
            f"Collection({self.name!r}: {len(self.documents):,} documents, {len(self.queries):,} queries, "
            f"{n_qrels:,} judgements)"
        )

    def read_qrels(self):
        """The judgements as a :class:`stagewise.data.qrels.Qrels`."""
        from stagewise.data.readers import read_qrels

        return read_qrels(self.qrels, name=f"{self.name}-qrels")


# ----------------------------------------------------------------------------------------------- raw input


def _read_text(path: PathLike) -> str:
    """A (possibly gzipped) UTF-8 file's text with LF line ends."""
    from stagewise.data.trec import decode_text  # polars and numpy load with it: not at import

    text = decode_text(read_bytes(path), str(path))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _pick(record: dict, names: Sequence[str]) -> str | None:
    for name in names:
        if name in record:
            return name
    return None


def _text_of(record: dict, text_fields: Sequence[str] | None, source: Path, line: int) -> str:
    if text_fields is None:
        if "title" in record and "text" in record:
            text_fields = ("title", "text")
        else:
            found = _pick(record, TEXT_FIELDS)
            if found is None:
                raise InputError(
                    source, f"no text field in {sorted(record)}", line=line, expected=f"one of {TEXT_FIELDS}"
                )
            text_fields = (found,)
    parts = []
    for name in text_fields:
        value = record.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise InputError(source, f"field {name!r} is {type(value).__name__}", line=line, expected="a string")
        if value.strip():
            parts.append(value.strip())
    return " ".join(parts)


def _read_jsonl(path: PathLike, id_field: str | None, text_fields: Sequence[str] | None) -> Documents:
    source = Path(path)
    ids: list[str] = []
    texts: list[str] = []
    _parse_jsonl(_read_text(source), 1, source, id_field, text_fields, ids, texts)
    return Documents(ids, texts)


def _parse_jsonl(
    text: str,
    first: int,
    source: Path,
    id_field: str | None,
    text_fields: Sequence[str] | None,
    ids: list[str],
    texts: list[str],
) -> None:
    """Append the records of ``text`` (its lines numbered from ``first``) to ``ids`` and ``texts``."""
    from stagewise.data.readers import json_records

    for number, record in json_records(text, str(source), first_line=first):
        key = id_field or _pick(record, ID_FIELDS)
        if key is None or key not in record:
            raise InputError(source, f"no id field in {sorted(record)}", line=number, expected=f"one of {ID_FIELDS}")
        ids.append(str(record[key]))
        texts.append(_text_of(record, text_fields, source, number))


def _read_tsv(path: PathLike, header: bool | None) -> Documents:
    source = Path(path)
    ids: list[str] = []
    texts: list[str] = []
    lines = _read_text(source).split("\n")
    start = 1 if lines and _tsv_header(lines[0], header) else 0
    _parse_tsv(lines[start:], start + 1, source, ids, texts)
    return Documents(ids, texts)


def _tsv_header(line: str, header: bool | None) -> bool:
    return bool(header or (header is None and line.split("\t")[0].strip().lower() in ID_FIELDS))


def _parse_tsv(lines: Sequence[str], first: int, source: Path, ids: list[str], texts: list[str]) -> None:
    for number, line in enumerate(lines, first):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise InputError(source, "one field only", line=number, expected="id<TAB>text (more fields are joined)")
        ids.append(fields[0].strip())
        texts.append(" ".join(f.strip() for f in fields[1:] if f.strip()))


def _line_blocks(path: Path, block_bytes: int) -> Iterator[tuple[int, str]]:
    """The file's text (gzip decompressed on the fly, LF line ends) in blocks of whole lines of about
    ``block_bytes``, each with the number of its first line: :func:`_read_text` without holding the whole
    file, and its errors. A block is cut after a newline, so a CR LF pair is never split. A line longer than
    a block is kept as a list of pieces until its newline comes and joined once: linear on any line length
    (joining a growing carry to each piece was quadratic)."""
    number = 1  # of the block's first line
    with open_input(path) as fh, input_errors(path):
        pending: list[bytes] = []  # the pieces of a line not ended yet
        while True:
            chunk = fh.read(block_bytes)
            if chunk:
                cut = chunk.rfind(b"\n") + 1
                if cut == 0:  # no newline yet: read on (a file of CR-only line ends is read whole)
                    pending.append(chunk)
                    continue
                pending.append(chunk[:cut] if cut < len(chunk) else chunk)
                raw = b"".join(pending) if len(pending) > 1 else pending[0]
                pending = [chunk[cut:]] if cut < len(chunk) else []
            else:
                raw = b"".join(pending)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:  # trec.decode_text's message, numbered in the whole file
                line = number + raw[: exc.start].count(b"\n")
                raise InputError(str(path), "is not valid UTF-8 text", line=line) from None
            del raw
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            if chunk:
                text = text[:-1]  # the block's final newline (the next block starts a line)
            yield number, text
            number += text.count("\n") + 1
            if not chunk:
                return


def iter_corpus(
    path: PathLike,
    *,
    format: str | None = None,
    id_field: str | None = None,
    text_fields: Sequence[str] | None = None,
    header: bool | None = None,
    batch_size: int = 250_000,
) -> Iterator[Documents]:
    """:func:`read_corpus` in batches of ``batch_size`` documents, read as they are needed: a JSONL, TSV or
    BEIR corpus is never held whole (a SMART file is read whole, then cut into batches). The batches joined
    are exactly what :func:`read_corpus` returns, and malformed input raises the same errors."""
    p = Path(path)
    kind = format or _guess_format(p)
    for count, batch in enumerate(_corpus_batches(p, kind, id_field, text_fields, header, batch_size)):
        if count == 0 and len(batch) == 0:
            break
        yield batch
    else:
        return
    # read_corpus's refusal: an index of nothing would search "successfully" and find nothing
    raise InputError(path, "has no documents", expected=f"a {kind} corpus with at least one document")


def _corpus_batches(
    p: Path,
    kind: str,
    id_field: str | None,
    text_fields: Sequence[str] | None,
    header: bool | None,
    batch_size: int,
) -> Iterator[Documents]:
    """The batches of :func:`iter_corpus`, one empty batch for a corpus without documents."""
    if kind == "smart":
        whole = read_smart(p)
        for at in range(0, max(len(whole), 1), batch_size):
            yield Documents(whole.ids[at : at + batch_size], whole.texts[at : at + batch_size])
        return
    if kind not in ("beir", "jsonl", "tsv"):
        raise ConventionError(f"unknown corpus format {kind!r}; choose one of beir, jsonl, tsv, smart")
    source = _beir_file(p, "corpus.jsonl") if kind == "beir" else p
    ids: list[str] = []
    texts: list[str] = []
    sent = False
    for first, text in _line_blocks(source, LINE_BLOCK_BYTES):
        if kind == "tsv":
            lines = text.split("\n")
            if first == 1 and _tsv_header(lines[0], header):
                lines, first = lines[1:], 2
            _parse_tsv(lines, first, source, ids, texts)
        else:
            _parse_jsonl(text, first, source, id_field, text_fields, ids, texts)
        while len(ids) >= batch_size:
            yield Documents(ids[:batch_size], texts[:batch_size])
            sent = True
            ids, texts = ids[batch_size:], texts[batch_size:]
    if ids or not sent:
        yield Documents(ids, texts)


def read_corpus(
    path: PathLike,
    *,
    format: str | None = None,
    id_field: str | None = None,
    text_fields: Sequence[str] | None = None,
    header: bool | None = None,
) -> Documents:
    """Read documents from a BEIR folder (its ``corpus.jsonl``), a JSONL file or a TSV file (``.gz`` too).

    JSONL: one object a line; the id is the first of ``_id, id, docid, doc_id, docno, pid`` present (or
    ``id_field``); the text is ``title`` and ``text`` joined by a space when both exist, else the first of
    ``contents, body, abstract`` (or ``text_fields``). TSV: ``id<TAB>text``, further fields joined by a space; a
    first line whose first field is a known id name (``id``, ``docid``...) is a header (``header`` forces it).
    A SMART file (``.I`` records) is read with ``format="smart"``.
    """
    p = Path(path)
    kind = format or _guess_format(p)
    if kind == "beir":
        documents = _read_jsonl(_beir_file(p, "corpus.jsonl"), id_field, text_fields)
    elif kind == "jsonl":
        documents = _read_jsonl(p, id_field, text_fields)
    elif kind == "tsv":
        documents = _read_tsv(p, header)
    elif kind == "smart":
        documents = read_smart(p)
    else:
        raise ConventionError(f"unknown corpus format {kind!r}; choose one of beir, jsonl, tsv, smart")
    if len(documents.ids) == 0:  # an index of nothing would search "successfully" and find nothing
        raise InputError(path, "has no documents", expected=f"a {kind} corpus with at least one document")
    return documents


def read_queries(
    path: PathLike,
    *,
    format: str | None = None,
    id_field: str | None = None,
    text_fields: Sequence[str] | None = None,
    header: bool | None = None,
    renumber: bool = False,
) -> Documents:
    """Read queries: a BEIR folder (its ``queries.jsonl``), JSONL (``_id``/``id``/``qid`` and ``text``/``query``),
    TSV (``qid<TAB>text``, as Anserini's topic files), or a SMART query file (``format="smart"``).

    ``renumber=True`` numbers the queries 1..n in file order instead of using their ids (Cranfield's qrels
    number its queries that way, while ``cran.qry``'s ``.I`` numbers skip)."""
    queries = _read_queries(path, format, id_field, text_fields, header)
    if renumber:
        return Documents([str(n) for n in range(1, len(queries) + 1)], queries.texts)
    return queries


def _read_queries(
    path: PathLike,
    format: str | None,
    id_field: str | None,
    text_fields: Sequence[str] | None,
    header: bool | None,
) -> Documents:
    p = Path(path)
    kind = format or _guess_format(p)
    if kind == "beir":
        return _read_jsonl(_beir_file(p, "queries.jsonl"), id_field, text_fields or ("text",))
    if kind == "jsonl":
        return _read_jsonl(p, id_field, text_fields)
    if kind == "tsv":
        return _read_tsv(p, header)
    if kind == "smart":
        return read_smart(p, fields=("W",))
    raise ConventionError(f"unknown query format {kind!r}; choose one of beir, jsonl, tsv, smart")


def _guess_format(path: Path) -> str:
    if path.is_dir():
        return "beir"
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith((".tsv", ".txt", ".csv")) and not _looks_smart(path):
        return "tsv"
    if _looks_smart(path):
        return "smart"
    raise InputError(path, "cannot tell the format from the name", hint="pass format= (beir, jsonl, tsv, smart)")


def _looks_smart(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return head.lstrip().startswith(b".I ")


def _beir_file(folder: Path, name: str) -> Path:
    for candidate in (folder / name, folder / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    raise InputError(
        folder, f"no {name} in this folder", expected="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)"
    )


# --------------------------------------------------------------------------------------------------- BEIR


def read_qrels_tsv(path: PathLike) -> dict[str, dict[str, int]]:
    """BEIR qrels: ``query-id<TAB>corpus-id<TAB>score`` with a header line."""
    source = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    lines = _read_text(source).split("\n")
    start = 1 if lines and lines[0].lower().startswith(("query-id", "query_id", "qid")) else 0
    for number, line in enumerate(lines[start:], start + 1):
        if not line.strip():
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        if len(fields) < 3:
            raise InputError(source, f"{len(fields)} fields", line=number, expected="query-id<TAB>corpus-id<TAB>score")
        try:
            label = int(fields[2])
        except ValueError:
            raise InputError(source, f"score {fields[2]!r} is not an integer", line=number) from None
        qrels.setdefault(fields[0].strip(), {})[fields[1].strip()] = label
    return qrels


def read_trec_qrels(path: PathLike, *, normalise_ints: bool = False) -> dict[str, dict[str, int]]:
    """TREC qrels ``qid iter docid label`` as a nested dict, read by :func:`stagewise.data.readers.read_qrels`
    (``normalise_ints`` strips leading zeros)."""
    from stagewise.data.readers import read_qrels

    qrels = read_qrels(path, format="trec").to_dict()
    if not normalise_ints:
        return qrels
    source = Path(path)
    # read_qrels keeps no line numbers once read: an id that is not an integer is named without its line
    return {
        _int_id(q, source, None): {_int_id(d, source, None): label for d, label in judged.items()}
        for q, judged in qrels.items()
    }


def read_beir(folder: PathLike, split: str = "test", *, judged_only: bool = True) -> Collection:
    """A BEIR dataset folder: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError(root, "is not a folder", expected="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    documents = read_corpus(root, format="beir")
    queries = read_queries(root, format="beir")
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        raise InputError(root, f"no qrels/{split}.tsv", expected="a BEIR split (test, dev, train)")
    qrels = read_qrels_tsv(qrels_path)
    notes = ["document text = title + ' ' + text"]
    if judged_only:
        queries = queries.subset(set(qrels))
        notes.append(f"queries without {split} judgements dropped")
    return Collection(root.name, documents, queries, qrels, tuple(notes))


# -------------------------------------------------------------------------------------------------- SMART

_FIELD_MARK = re.compile(r"^\.([A-Z])(?:\s+(.*))?$")


def _int_id(value: str, source: Path, line: int | None) -> str:
    return classic.int_id(value, source, line)


def parse_smart(path: PathLike) -> list[tuple[str, dict[str, str], int]]:
    """Records of a SMART file: ``(id, {field letter: text}, line of .I)``. A record starts with ``.I <id>``;
    a line ``.X`` (a dot, one capital letter) starts field X; text lines join with a space."""
    source = Path(path)
    records: list[tuple[str, dict[str, str], int]] = []
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    record_id, record_line = None, 0
    seen: set[str] = set()

    def close() -> None:
        if record_id is not None:
            records.append((record_id, {k: " ".join(" ".join(v).split()) for k, v in fields.items()}, record_line))

    for number, line in enumerate(_read_text(source).split("\n"), 1):
        mark = _FIELD_MARK.match(line.rstrip())
        if mark and mark.group(1) == "I":
            close()
            if not mark.group(2):
                raise InputError(source, "'.I' without an id", line=number, expected=".I <integer id>")
            record_id, record_line = _int_id(mark.group(2).strip(), source, number), number
            if record_id in seen:
                raise InputError(source, f"record id {record_id} repeats", line=number)
            seen.add(record_id)
            fields, current = {}, None
        elif mark:
            if record_id is None:
                raise InputError(source, f"field .{mark.group(1)} before any .I", line=number)
            current = fields.setdefault(mark.group(1), [])
            if mark.group(2):
                current.append(mark.group(2))
        elif line.strip():
            if current is None:
                raise InputError(source, "text outside a field", line=number, expected="a .I record with .T/.W fields")
            current.append(line.strip())
    close()
    return records


def read_smart(path: PathLike, fields: Sequence[str] = ("T", "W")) -> Documents:
    """Documents of a SMART file, the text being ``fields`` (field letters) joined by a space."""
    ids, texts = [], []
    for record_id, record, _ in parse_smart(path):
        ids.append(record_id)
        texts.append(" ".join(record[f] for f in fields if record.get(f)))
    return Documents(ids, texts)


def _read_slash_records(path: PathLike) -> list[tuple[str, str, int]]:
    """NPL's format: an id line, text lines, then a line holding only ``/``."""
    source = Path(path)
    records: list[tuple[str, str, int]] = []
    head: tuple[str, int] | None = None
    body: list[str] = []
    for number, line in enumerate(_read_text(source).split("\n"), 1):
        stripped = line.strip()
        if stripped == "/":
            if head is None:
                raise InputError(source, "'/' with no record before it", line=number)
            records.append((head[0], " ".join(" ".join(body).split()), head[1]))
            head, body = None, []
        elif head is None:
            if not stripped:
                continue
            head = (stripped, number)
        else:
            body.append(stripped)
    if head is not None:
        raise InputError(source, "the last record has no closing '/'", line=head[1])
    return records


# ------------------------------------------------------------------------------------------- the classics


@dataclass(frozen=True)
class _Classic:
    folder: str
    documents: str
    queries: str
    qrels: str
    doc_fields: tuple[str, ...] = ("T", "W")
    query_fields: tuple[str, ...] = ("W",)


CLASSIC_COLLECTIONS: dict[str, _Classic] = {
    "cranfield": _Classic("cranfield", "cran.all.1400", "cran.qry", "cranqrel"),
    "cisi": _Classic("cisi", "CISI.ALL", "CISI.QRY", "CISI.REL", query_fields=("T", "W")),
    "medline": _Classic("medline", "MED.ALL", "MED.QRY", "MED.REL"),
    "cacm": _Classic("cacm", "cacm.all", "query.text", "qrels.text"),
    "adi": _Classic("adi", "ADI.ALL", "ADI.QRY", "ADI.REL"),
    "npl": _Classic("npl", "doc-text", "query-text", "rlv-ass"),
}
"""The classic collections :func:`read_classic` knows, with the file names of ../shared/data."""

CRANFIELD_GRADINGS = classic.CRANFIELD_GRADINGS


def _pairs_qrels(path: Path, columns: int) -> dict[str, dict[str, int]]:
    """``qid docid ...`` lines, every listed pair relevant (label 1): CISI, CACM and ADI."""
    return classic.pairs_qrels(_read_text(path), path, columns)


def _cranfield_qrels(path: Path, grading: str) -> dict[str, dict[str, int]]:
    return classic.cranfield_qrels(_read_text(path), path, grading)


def _npl_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for query, body, line in _read_slash_records(path):
        q = _int_id(query, path, line)
        for doc in body.split():
            qrels.setdefault(q, {})[_int_id(doc, path, line)] = 1
    return qrels


def read_classic(
    name: str,
    root: PathLike | None = None,
    *,
    judged_only: bool = True,
    doc_fields: Sequence[str] | None = None,
    query_fields: Sequence[str] | None = None,
    cranfield_grading: str = "cleverdon",
) -> Collection:
    """One of the classic collections in ``root`` (default ``../shared/data`` beside the repository), with
    each collection's known pitfalls handled (see each folder's SOURCE.md):

    * **Cranfield**: the queries' ``.I`` numbers skip (1, 2, 4, ..., 365) but ``cranqrel`` numbers them 1..225
      in file order, so the n-th query becomes query ``n``. ``cranfield_grading="cleverdon"`` (default) reads
      the grades as ``cranqrel.readme`` defines them, 1 = complete answer ... 4 = minimum interest, and maps
      them to labels 4..1 (higher is better, as nDCG expects); ``-1`` (one row per query, "no interest")
      becomes 0. ``"ir_datasets"`` keeps the grades as labels (4 best, -1 kept).
    * **CISI**: ``CISI.REL`` pairs are relevant; 36 of the 112 queries have none. Query text is ``.T`` + ``.W``.
    * **MEDLINE**: ``MED.REL`` is TREC format (``qid 0 docid 1``).
    * **CACM**: qrels ids are zero-padded (``01 0756``) and compared as integers; 1,617 documents have a title
      only; 12 of 64 queries have no judgement.
    * **ADI**: plain pairs.
    * **NPL**: id line, text, ``/``; ``rlv-ass`` lists each query's relevant documents.

    All files are read as UTF-8 with CRLF or LF line ends.
    """
    if name not in CLASSIC_COLLECTIONS:
        raise ConventionError(f"unknown collection {name!r}; choose one of {', '.join(CLASSIC_COLLECTIONS)}")
    if cranfield_grading not in CRANFIELD_GRADINGS:
        raise ConventionError(f"cranfield_grading must be one of {CRANFIELD_GRADINGS}, not {cranfield_grading!r}")
    spec = CLASSIC_COLLECTIONS[name]
    folder = Path(root) if root is not None else default_data_root() / spec.folder
    if root is not None and (Path(root) / spec.folder).is_dir():
        folder = Path(root) / spec.folder
    doc_fields = tuple(doc_fields or spec.doc_fields)
    query_fields = tuple(query_fields or spec.query_fields)
    notes: list[str] = []
    if name == "npl":
        docs = [(i, t) for i, t, _ in _read_slash_records(folder / spec.documents)]
        documents = Documents([str(int(i)) for i, _ in docs], [t for _, t in docs])
        query_records = _read_slash_records(folder / spec.queries)
        queries = Documents([str(int(i)) for i, _, _ in query_records], [t for _, t, _ in query_records])
        qrels = _npl_qrels(folder / spec.qrels)
        notes.append("documents and queries: id line, text, '/'")
    else:
        documents = read_smart(folder / spec.documents, doc_fields)
        notes.append(f"document text = fields {' + '.join('.' + f for f in doc_fields)}")
        records = parse_smart(folder / spec.queries)
        query_ids = [r[0] for r in records]
        if name == "cranfield":
            query_ids = [str(n) for n in range(1, len(records) + 1)]
            notes.append("queries renumbered 1..n in file order (cranqrel's numbering; the .I numbers skip)")
        queries = Documents(query_ids, [" ".join(r[1][f] for f in query_fields if r[1].get(f)) for r in records])
        notes.append(f"query text = fields {' + '.join('.' + f for f in query_fields)}")
        path = folder / spec.qrels
        if name == "cranfield":
            qrels = _cranfield_qrels(path, cranfield_grading)
            notes.append(
                "grades read as Cleverdon's (1 = complete answer) and mapped to labels 4..1; -1 -> 0"
                if cranfield_grading == "cleverdon"
                else "grades kept as labels (ir_datasets' reading: 4 = complete answer; -1 kept)"
            )
        elif name == "medline":
            qrels = read_trec_qrels(path, normalise_ints=True)
        else:
            qrels = _pairs_qrels(path, 2)
    known_docs = set(documents.ids)
    for q, judged in qrels.items():
        for d in judged:
            if d not in known_docs:
                raise InputError(folder / spec.qrels, f"query {q} judges document {d}, which is not in the collection")
    if judged_only:
        before = len(queries)
        queries = queries.subset(set(qrels))
        if len(queries) < before:
            notes.append(f"{before - len(queries)} queries without judgements dropped")
    return Collection(name, documents, queries, qrels, tuple(notes))


# ------------------------------------------------------------------------------------------------ SciFact

_PY_STRING = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\"""", re.S)


def _sentences(value: str, source: str, row: int) -> list[str]:
    """SciFact's ``abstract`` column: the numpy repr of a list of sentences (``['One.'\\n 'Two.']``)."""
    import ast

    found = _PY_STRING.findall(value)
    rest = _PY_STRING.sub("", value).strip()
    if not found or rest.strip("[] \n"):
        raise InputError(source, f"abstract {value[:60]!r} is not a list of string literals", line=row)
    return [ast.literal_eval(s) for s in found]


def read_scifact(root: PathLike | None = None, split: str = "test") -> Collection:
    """SciFact as BEIR's ``scifact`` test collection, from ../shared/data/scifact: the 5,183 abstracts of
    ``scifact.zip``'s ``corpus_train.csv`` (text = title + abstract sentences, joined by spaces, as BEIR's
    corpus), the 300 test claims (``topics...test.tsv.gz``) and their 339 judgements (``qrels...test.txt``)."""
    import csv
    import zipfile

    if split != "test":
        raise ConventionError("only SciFact's BEIR test split is available (its train qrels are not in the data)")
    folder = Path(root) if root is not None else default_data_root() / "scifact"
    if (folder / "scifact").is_dir():
        folder = folder / "scifact"
    archive = folder / "scifact.zip"
    try:
        with zipfile.ZipFile(archive) as z, z.open("corpus_train.csv") as raw:
            reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
            ids, texts = [], []
            for row_number, row in enumerate(reader, 2):
                sentences = _sentences(row["abstract"], f"{archive}:corpus_train.csv", row_number)
                ids.append(str(int(row["doc_id"])))
                texts.append(" ".join([row["title"].strip(), *(s.strip() for s in sentences)]))
    except FileNotFoundError:
        raise InputError(archive, "no such file", hint="SciFact lives in ../shared/data/scifact") from None
    except (zipfile.BadZipFile, KeyError) as exc:
        raise InputError(archive, f"not the expected archive ({exc})", expected="a zip with corpus_train.csv") from None
    queries = read_queries(folder / "topics.beir-v1.0.0-scifact.test.tsv.gz", format="tsv", header=False)
    qrels = read_trec_qrels(folder / "qrels.beir-v1.0.0-scifact.test.txt")
    notes = (
        "corpus: corpus_train.csv of scifact.zip (BEIR's scifact corpus), text = title + abstract sentences",
        "queries and qrels: BEIR test split (anserini-tools topics and qrels)",
    )
    return Collection("scifact", Documents(ids, texts), queries.subset(set(qrels)), qrels, notes)


def default_data_root() -> Path:
    """``../shared/data`` beside the repository (or ``$STAGEWISE_DATA`` when set)."""
    env = os.environ.get("STAGEWISE_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[4] / "shared" / "data"


def load_collection(name: str, root: PathLike | None = None, **options: Any) -> Collection:
    """A collection by name: a classic (:data:`CLASSIC_COLLECTIONS`), ``scifact``, or a BEIR folder path."""
    if name == "scifact":
        return read_scifact(root, **options)
    if name in CLASSIC_COLLECTIONS:
        return read_classic(name, root, **options)
    if Path(name).is_dir():
        return read_beir(name, **options)
    raise ConventionError(
        f"unknown collection {name!r}; choose one of {', '.join([*CLASSIC_COLLECTIONS, 'scifact'])} or a BEIR folder"
    )
