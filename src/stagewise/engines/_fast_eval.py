"""The local engine's joined parse: a plain TREC run file read straight into what evaluation needs.

Evaluation needs, of each run row, its query, its rank in trec_eval's order and, for judged rows, the qrels row:
the document ids matter only to find the judgement and to order tied scores, and both are done while a line is
still in the read buffer (``parse_joined`` in ``_native/trecparse.c``). So the run is never held: memory is the
judged rows and one 16 MB buffer, and the time is the one pass over the file.

It takes the runs the general reader would store without sorting (each query's rows contiguous and in score
order, as nearly every run is written) under the conventions that need nothing else of the run (``ties`` is
``docid``, no ``ignore_self``), against ordinary qrels. Anything else, or anything odd in the file (a repeated
pair, a bad line, an id that is not ASCII, a rank column that runs against the scores), is read by the general
reader instead, which gives the same numbers (tests/test_eval_fastpath.py checks it), or the error that names
the line, or the warning.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from stagewise._io import display_name
from stagewise.data import trec
from stagewise.data.columns import byte_order
from stagewise.data.qrels import Qrels
from stagewise.data.readers import _format_of, _plain_file
from stagewise.metrics.context import Conventions, JoinedRun


def joinable(qrels: Qrels, source: Any, conventions: Conventions) -> bool:
    """Whether the joined parse may read ``source`` for these qrels and conventions (it may still decline the
    file's content)."""
    if type(qrels) is not Qrels or conventions.ties != "docid" or conventions.ignore_self:
        return False  # subtopic qrels, other tie orders and ignore_self need the run's document ids
    if not isinstance(source, str | os.PathLike) or str(source) == "-":
        return False
    return _format_of(source, None) == "trec" and _plain_file(source)


def read_joined(qrels: Qrels, source: str | os.PathLike, name: str) -> JoinedRun | str:
    """``source`` read joined to ``qrels``, or why the general reader must read it."""
    docs = qrels.docs.joined() if hasattr(qrels.docs, "joined") else qrels.docs
    out = trec.read_joined(Path(source), qrels.pair_keys, qrels.query_codes, qrels.offsets, docs, qrels.query_ids)
    if isinstance(out, str):
        return out
    if out["ranks_ok"] and out["down"] > out["up"]:
        return "the rank column rises as the scores fall (the general path warns of it)"
    query_ids, order = byte_order([query.decode("ascii") for query in out["qids"]])
    lengths = np.frombuffer(out["lengths"], dtype=np.int64)
    codes = np.frombuffer(out["judged_query"], dtype=np.int32)
    if order is not None:  # first-seen codes -> codes in byte order of the ids
        recode = np.empty(len(order), dtype=np.int32)
        recode[order] = np.arange(len(order), dtype=np.int32)
        codes, lengths = recode[codes], lengths[order]
    judged = (codes, np.frombuffer(out["judged_rank"], dtype=np.int32), np.frombuffer(out["judged_row"], np.int64))
    return JoinedRun(name, display_name(source), query_ids, lengths, judged, qrels, int(out["rows"]))
