"""Adapters: RAG records from the output shapes of RAGAS, RAGChecker, KILT and BERGEN.

Each adapter returns a list of :class:`~stagewise.rag.records.RagRecord` and states how the other tool's fields
map onto ours. Passages that arrive as text without an id get a content id, ``c`` + the first 12 hex digits of
the SHA-1 of the whitespace-collapsed text, so the same text retrieved and referenced gets the same id.

=============  ===================================================================================================
shape          mapping
=============  ===================================================================================================
RAGAS          ``user_input``/``question`` -> question; ``response``/``answer`` -> answer; ``reference``/
               ``ground_truth``/``ground_truths`` -> gold_answers; ``retrieved_contexts``/``contexts`` -> retrieved
               and context (the generator saw them all), ids from ``retrieved_context_ids`` or content ids;
               ``reference_contexts`` (ids from ``reference_context_ids`` or content) -> gold evidence, each
               reference context one alternative (``needed_together=True``: one set of all of them)
RAGChecker     ``{"results": [...]}``: ``query_id`` -> id, ``query`` -> question, ``gt_answer`` -> gold_answers,
               ``response`` -> answer, ``retrieved_context[{doc_id, text}]`` -> retrieved, context and passages;
               RAGChecker has no gold evidence (use ``evidence="answers"`` for DPR's has_answer)
KILT           gold file ``{id, input, output[{answer, provenance[{wikipedia_id}]}]}``: non-empty answers ->
               gold_answers, each output's provenance -> one alternative (its pages needed together, as KILT's
               R-precision); guess file ``{id, output[{answer, provenance}]}``: answer, provenance order -> retrieved
BERGEN         ``eval_dev_out.json`` ``[{q_id, question, response, label, ranking_label}]``: ``label`` (a string
               or list) -> gold_answers, ``ranking_label`` (list of lists) -> alternatives, each inner list needed
               together; retrieved ids from BERGEN's TREC run file (``run.retrieve.top_*.trec`` or
               ``run.rerank.*.trec``)
=============  ===================================================================================================
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from stagewise.errors import InputError
from stagewise.rag.records import RagRecord, _check_unique, decode, loads, read_records, record_from_dict

__all__ = ["ADAPTERS", "content_id", "from_bergen", "from_kilt", "from_ragas", "from_ragchecker", "load_records"]


def content_id(text: str) -> str:
    """A stable id for a passage known only by its text.

    >>> content_id("Emma  is a novel.") == content_id("Emma is a novel.")
    True
    """
    return "c" + hashlib.sha1(" ".join(text.split()).encode("utf-8")).hexdigest()[:12]


def _objects(source: Any, unwrap: str | None = None) -> tuple[list[Any], str | None]:
    """A list of objects from a path (JSON list, JSON object with ``unwrap`` key, JSONL) or an in-memory value.
    A dict of equal-length columns (``Dataset.to_dict()``) becomes a list of rows."""
    where = None
    if isinstance(source, str | bytes) or hasattr(source, "__fspath__"):
        from stagewise._io import display_name, read_bytes

        where = display_name(source)
        text = decode(read_bytes(source), where)
        stripped = text.lstrip()
        if stripped.startswith(("[", "{")):
            try:  # records.loads: the same checks (nesting, long integers, half surrogate pairs) as JSONL lines
                source = loads(text, where, 1, column=False)
            except InputError:
                if not stripped.startswith("{"):
                    raise
                source = None  # JSONL: each line read, and any failure named, below
        else:
            source = None
        if source is None:  # JSONL
            items = []
            for number, raw in enumerate(text.split("\n"), start=1):
                if raw.strip():
                    items.append(loads(raw, where, number))
            source = items
    if isinstance(source, Mapping):
        if unwrap is not None and unwrap in source:
            source = source[unwrap]
        elif source and all(isinstance(v, list) for v in source.values()):
            lengths = {len(v) for v in source.values()}
            if len(lengths) != 1:
                raise InputError(where, "columns of different lengths", expected="a dict of equal-length columns")
            n = lengths.pop()
            source = [{k: v[i] for k, v in source.items()} for i in range(n)]
        else:
            source = [source]
    return list(source), where


def _need(obj: Any, keys: tuple[str, ...], what: str, where: str | None, line: int) -> Any:
    if not isinstance(obj, Mapping):
        raise InputError(where, f"a {what} record must be an object, not {type(obj).__name__}", line=line)
    for key in keys:
        if key in obj and obj[key] is not None:
            return obj[key]
    raise InputError(where, f"{what} record lacks {' or '.join(repr(k) for k in keys)}", line=line)


def _texts(value: Any, field: str, where: str | None, line: int) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise InputError(where, f"{field!r} must be a list of strings", line=line)
    return value


def from_ragas(source: Any, *, needed_together: bool = False) -> list[RagRecord]:
    """Records from RAGAS samples (``SingleTurnSample`` fields of ragas >= 0.2, or the 0.1 dataset columns).

    ``source`` is a path (JSON list, JSONL, or a JSON dict of columns), a list of dicts, or a dict of columns.
    Sample ids come from an ``id`` field when present, else the 1-based position (``"1"``, ``"2"``, ...).
    """
    items, where = _objects(source)
    out = []
    for line, obj in enumerate(items, start=1):
        answer = _need(obj, ("response", "answer"), "RAGAS", where, line)
        gold = _need(obj, ("reference", "ground_truth", "ground_truths"), "RAGAS", where, line)
        gold_answers = [gold] if isinstance(gold, str) else gold
        contexts = _texts(_need(obj, ("retrieved_contexts", "contexts"), "RAGAS", where, line), "contexts", where, line)
        ids = obj.get("retrieved_context_ids") or [content_id(t) for t in contexts]
        if len(ids) != len(contexts):
            raise InputError(where, "retrieved_context_ids and retrieved_contexts differ in length", line=line)
        ids = [str(i) for i in ids]
        passages = dict(zip(ids, contexts, strict=True))
        evidence = None
        ref_ids = obj.get("reference_context_ids")
        ref_texts = obj.get("reference_contexts")
        if ref_ids is None and ref_texts is not None:
            ref_texts = _texts(ref_texts, "reference_contexts", where, line)
            ref_ids = [content_id(t) for t in ref_texts]
            passages.update(zip(ref_ids, ref_texts, strict=True))
        if ref_ids is not None:
            ref_ids = [str(i) for i in ref_ids]
            evidence = [ref_ids] if needed_together and ref_ids else ref_ids
        record = {
            "id": obj.get("id", line),
            "question": obj.get("user_input", obj.get("question")),
            "retrieved": ids,
            "context": ids,
            "gold_evidence": evidence,
            "answer": answer,
            "gold_answers": gold_answers,
            "passages": passages,
        }
        out.append(record_from_dict(record, source=where, line=line))
    _check_unique(out, where)
    return out


def from_ragchecker(source: Any) -> list[RagRecord]:
    """Records from RAGChecker's input/output JSON (``{"results": [{query_id, query, gt_answer, response,
    retrieved_context: [{doc_id, text}]}]}``)."""
    items, where = _objects(source, unwrap="results")
    out = []
    for line, obj in enumerate(items, start=1):
        qid = _need(obj, ("query_id",), "RAGChecker", where, line)
        chunks = _need(obj, ("retrieved_context",), "RAGChecker", where, line)
        if not isinstance(chunks, list):
            raise InputError(where, "'retrieved_context' must be a list of {doc_id, text}", line=line)
        ids, passages = [], {}
        for chunk in chunks:
            if not isinstance(chunk, Mapping) or "text" not in chunk:
                raise InputError(where, "each retrieved_context item needs 'text' (and 'doc_id')", line=line)
            doc = str(chunk["doc_id"]) if chunk.get("doc_id") is not None else content_id(chunk["text"])
            ids.append(doc)
            passages.setdefault(doc, chunk["text"])
        gold = obj.get("gt_answer")
        record = {
            "id": qid,
            "question": obj.get("query"),
            "retrieved": ids,
            "context": ids,
            "answer": _need(obj, ("response",), "RAGChecker", where, line),
            "gold_answers": [] if gold is None else [gold] if isinstance(gold, str) else gold,
            "passages": passages,
        }
        out.append(record_from_dict(record, source=where, line=line))
    _check_unique(out, where)
    return out


def from_kilt(gold: Any, guess: Any, *, key: str = "wikipedia_id") -> list[RagRecord]:
    """Records from a KILT gold file and a KILT guess (prediction) file, matched by ``id``; the records follow the
    gold file's order. Every gold id needs a guess (as KILT's own evaluation requires) and vice versa."""
    gold_items, gold_where = _objects(gold)
    guess_items, guess_where = _objects(guess)
    guesses: dict[str, tuple[int, Any]] = {}
    for line, obj in enumerate(guess_items, start=1):
        gid = str(_need(obj, ("id",), "KILT guess", guess_where, line)).strip()
        if gid in guesses:
            raise InputError(guess_where, f"duplicate id {gid!r}", line=line)
        guesses[gid] = (line, obj)
    out = []
    for line, obj in enumerate(gold_items, start=1):
        gid = str(_need(obj, ("id",), "KILT gold", gold_where, line)).strip()
        if gid not in guesses:
            raise InputError(gold_where, f"no prediction for id {gid!r} in {guess_where or 'the guesses'}", line=line)
        guess_line, guess_obj = guesses.pop(gid)
        outputs = _need(obj, ("output",), "KILT gold", gold_where, line)
        answers, alternatives = [], []
        for item in outputs:
            text = item.get("answer")
            if isinstance(text, str) and text.strip() and text.strip() not in answers:
                answers.append(text.strip())
            prov = [str(p[key]).strip() for p in item.get("provenance") or [] if key in p]
            if prov:
                alternatives.append(prov)
        guess_out = _need(guess_obj, ("output",), "KILT guess", guess_where, guess_line)
        if not isinstance(guess_out, list) or len(guess_out) != 1:
            raise InputError(guess_where, "a KILT guess needs exactly one output", line=guess_line)
        first = guess_out[0]
        retrieved = [str(p[key]).strip() for p in first.get("provenance") or [] if key in p]
        record = {
            "id": gid,
            "question": obj.get("input"),
            "retrieved": retrieved,
            "gold_evidence": alternatives,
            "answer": str(first.get("answer", "")),
            "gold_answers": answers,
        }
        out.append(record_from_dict(record, source=gold_where, line=line))
    if guesses:
        extra = next(iter(guesses))
        raise InputError(guess_where, f"prediction for id {extra!r} has no gold record", line=guesses[extra][0])
    return out


def from_bergen(source: Any, run: Any = None) -> list[RagRecord]:
    """Records from BERGEN's ``eval_<split>_out.json`` and, optionally, its TREC run file (for ``retrieved``).

    Without a run, ``retrieved`` is empty and every sample with gold evidence is ``not_retrieved``.
    """
    items, where = _objects(source)
    ranked: dict[str, list[str]] = {}
    if run is not None:
        from stagewise.data.readers import read_run

        loaded = read_run(run, duplicates="first")
        ranked = loaded.rankings()
    out = []
    for line, obj in enumerate(items, start=1):
        qid = _need(obj, ("q_id", "id"), "BERGEN", where, line)
        label = obj.get("label")
        gold_answers = [] if label is None else [label] if isinstance(label, str) else list(label)
        ranking = obj.get("ranking_label")
        record = {
            "id": qid,
            "question": obj.get("question"),
            "retrieved": ranked.get(str(qid), []),
            "gold_evidence": None if ranking is None else [list(r) if isinstance(r, list) else r for r in ranking],
            "answer": _need(obj, ("response",), "BERGEN", where, line),
            "gold_answers": gold_answers,
        }
        out.append(record_from_dict(record, source=where, line=line))
    _check_unique(out, where)
    return out


ADAPTERS: dict[str, Callable[..., list[RagRecord]]] = {
    "native": read_records,
    "ragas": from_ragas,
    "ragchecker": from_ragchecker,
    "kilt": from_kilt,
    "bergen": from_bergen,
}


def load_records(source: Any, shape: str = "native", **kwargs: Any) -> list[RagRecord]:
    """Records from ``source`` in one of the shapes of :data:`ADAPTERS` (``native`` is our JSONL).

    >>> sorted(ADAPTERS)
    ['bergen', 'kilt', 'native', 'ragas', 'ragchecker']
    """
    if shape not in ADAPTERS:
        from stagewise.errors import parameter_error

        raise parameter_error("shape", "load_records", f"one of {', '.join(ADAPTERS)}", shape)
    return ADAPTERS[shape](source, **kwargs)
