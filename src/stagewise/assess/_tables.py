"""Shared input handling for the assess stage: label vectors, label tables and qrels as aligned pairs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from stagewise.errors import InputError

SEPARATOR = "\x1f"  # unit separator: never part of a whitespace-split TREC id, so "q" + SEP + "d" is unambiguous


def _as_float(values: Any, name: str, expected: str) -> np.ndarray:
    """A float array with NaN for a missing label; numbers convert without a Python loop, text is refused."""
    try:
        raw = np.asarray(values)
        if raw.dtype.kind in "US":
            raise ValueError(f"text, such as {str(raw.flat[0])!r}")
        return raw.astype(float)  # None in an object array becomes NaN here
    except (TypeError, ValueError) as err:
        raise InputError(name, f"holds a label that is not a number ({err})", expected=expected) from None


def as_labels(values: Any, name: str) -> np.ndarray:
    """A float vector with NaN for a missing label (None or NaN); refuses text and nested input."""
    array = _as_float(values, name, "numbers, None or NaN")
    if array.ndim != 1:
        raise InputError(name, f"is {array.ndim}-dimensional", expected="one label per item")
    return array


def as_table(table: Any, name: str = "table") -> np.ndarray:
    """An items x raters float matrix with NaN for a missing label."""
    array = _as_float(table, name, "a rectangular items x raters table of numbers, None or NaN")
    if array.ndim != 2 or array.size == 0:
        raise InputError(name, f"has shape {array.shape}", expected="a non-empty items x raters table")
    return array


def paired(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two label vectors of one length, kept where both are present."""
    x, y = as_labels(a, "first labels"), as_labels(b, "second labels")
    if len(x) != len(y):
        raise InputError(
            "labels", f"the two label vectors differ in length ({len(x)} and {len(y)})", expected="one label each"
        )
    if len(x) == 0:
        raise InputError("labels", "are empty", expected="at least one item labelled by both")
    keep = ~(np.isnan(x) | np.isnan(y))
    if not keep.any():
        raise InputError("labels", "share no item labelled by both", expected="at least one item labelled by both")
    return x[keep], y[keep]


def qrels_pairs(source: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, labels)`` of a qrels (anything ``read_qrels`` takes): keys are ``query SEP doc`` strings."""
    from stagewise.data.readers import read_qrels  # polars loads with it: not at import

    qrels = read_qrels(source, name=name) if not _is_qrels(source) else source
    queries = qrels.query_ids[qrels.query_codes].astype(str)
    docs = np.asarray(qrels.docs.values(), dtype=str)
    keys = np.char.add(np.char.add(queries, SEPARATOR), docs)
    return keys, np.asarray(qrels.labels, dtype=np.int64)


def _is_qrels(source: Any) -> bool:
    from stagewise.data.qrels import Qrels

    return isinstance(source, Qrels)


def split_key(keys: np.ndarray) -> tuple[list[str], list[str]]:
    """The query ids and document ids of ``query SEP doc`` keys."""
    parts = [str(key).split(SEPARATOR, 1) for key in keys]
    return [p[0] for p in parts], [p[1] for p in parts]


def labels_table(labels: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(keys, matrix, assessors)`` from ``{assessor: qrels}``: one row per pair any assessor judged, NaN where
    an assessor did not judge it."""
    if not isinstance(labels, Mapping) or len(labels) == 0:
        raise InputError("labels", "is empty or not a mapping", expected="{assessor name: qrels}")
    assessors = [str(name) for name in labels]
    pairs = [qrels_pairs(source, name) for name, source in zip(assessors, labels.values(), strict=True)]
    keys = np.unique(np.concatenate([k for k, _ in pairs]))
    matrix = np.full((len(keys), len(assessors)), np.nan)
    for column, (k, values) in enumerate(pairs):
        matrix[np.searchsorted(keys, k), column] = values
    return keys, matrix, assessors


def names_of(names: Sequence[str] | None, count: int) -> list[str]:
    """Rater names, ``rater0..`` when none are given."""
    if names is None:
        return [f"rater{i}" for i in range(count)]
    names = [str(n) for n in names]
    if len(names) != count:
        raise InputError("names", f"{len(names)} names for {count} raters", expected="one name per table column")
    return names
