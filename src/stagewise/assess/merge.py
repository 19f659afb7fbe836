"""Merge policies: several assessors' labels into one qrels, with the policy and its parameters kept as a value.

The labels table is ``{assessor name: qrels}`` (each side a ``Qrels`` or anything ``read_qrels`` takes); the
merged qrels has every (query, document) pair that at least one assessor judged, and each policy looks only at
the labels that pair received.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stagewise.assess._tables import labels_table, split_key
from stagewise.errors import ConventionError

if TYPE_CHECKING:
    from stagewise.data.qrels import Qrels

__all__ = ["MergePolicy", "Merged", "merge_adjudicator", "merge_majority", "merge_max", "merge_mean"]

TIE_RULES = ("max", "min")


@dataclass(frozen=True)
class MergePolicy:
    """A merge policy's name and parameters; ``str()`` gives its canonical form, e.g. ``majority(ties=max)``."""

    name: str
    parameters: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        inner = ",".join(f"{key}={value}" for key, value in self.parameters)
        return f"{self.name}({inner})" if inner else self.name


@dataclass(frozen=True)
class Merged:
    """The merged qrels, the policy that made it and the assessors whose labels went in."""

    qrels: Qrels
    policy: MergePolicy
    assessors: tuple[str, ...]


def _build(keys: np.ndarray, labels: np.ndarray, policy: MergePolicy, assessors: list[str]) -> Merged:
    from stagewise.data.readers import read_qrels  # polars loads with it: not at import

    queries, docs = split_key(keys)
    nested: dict[str, dict[str, int]] = {}
    for query, doc, label in zip(queries, docs, labels.tolist(), strict=True):
        nested.setdefault(query, {})[doc] = int(label)
    return Merged(read_qrels(nested, name=f"merged-{policy}"), policy, tuple(assessors))


def _check_ties(ties: str) -> None:
    if ties not in TIE_RULES:
        raise ConventionError(
            f"The 'ties' parameter of merge_majority must be one of {list(TIE_RULES)}. Got {ties!r} instead."
        )


def _majority_of(matrix: np.ndarray, ties: str) -> np.ndarray:
    _check_ties(ties)
    categories = np.unique(matrix[~np.isnan(matrix)])
    votes = (matrix[:, :, None] == categories[None, None, :]).sum(axis=1)
    tied = votes == votes.max(axis=1, keepdims=True)
    # ties="max": the highest of the most-voted labels, the last True column; "min": the first
    last = tied.shape[1] - 1 - np.argmax(tied[:, ::-1], axis=1)
    return categories[last if ties == "max" else np.argmax(tied, axis=1)]


def merge_majority(labels: Mapping[str, Any], *, ties: str = "max") -> Merged:
    """Each pair gets the label most of its assessors gave; a tie goes to the highest (``ties="max"``) or the
    lowest (``ties="min"``) of the tied labels.

    Examples
    --------
    >>> m = merge_majority({"a": {"q": {"d1": 1, "d2": 0}}, "b": {"q": {"d1": 1, "d2": 2}}, "c": {"q": {"d1": 0}}})
    >>> m.qrels.to_dict(), str(m.policy)
    ({'q': {'d2': 2, 'd1': 1}}, 'majority(ties=max)')
    """
    keys, matrix, assessors = labels_table(labels)
    policy = MergePolicy("majority", (("ties", ties),))
    return _build(keys, _majority_of(matrix, ties), policy, assessors)


def merge_max(labels: Mapping[str, Any]) -> Merged:
    """Each pair gets the highest label any assessor gave (the lenient merge: relevant if anyone said so).

    Examples
    --------
    >>> merge_max({"a": {"q": {"d1": 1}}, "b": {"q": {"d1": 3, "d2": 0}}}).qrels.to_dict()
    {'q': {'d1': 3, 'd2': 0}}
    """
    keys, matrix, assessors = labels_table(labels)
    return _build(keys, np.nanmax(matrix, axis=1), MergePolicy("max"), assessors)


def merge_adjudicator(labels: Mapping[str, Any], adjudicator: str, *, ties: str = "max") -> Merged:
    """The named adjudicator's label wherever they judged the pair; elsewhere the majority of the others (a tie
    broken by ``ties``, as :func:`merge_majority`).

    Examples
    --------
    >>> table = {"a": {"q": {"d1": 1, "d2": 1}}, "b": {"q": {"d1": 0, "d2": 1}}, "boss": {"q": {"d1": 2}}}
    >>> m = merge_adjudicator(table, "boss")
    >>> m.qrels.to_dict(), str(m.policy)
    ({'q': {'d1': 2, 'd2': 1}}, 'adjudicator(name=boss,fallback=majority,ties=max)')
    """
    if adjudicator not in labels:
        raise ConventionError(
            f"The 'adjudicator' parameter of merge_adjudicator must be one of {sorted(labels)}. "
            f"Got {adjudicator!r} instead."
        )
    _check_ties(ties)  # even when the adjudicator judged every pair and no tie is ever broken
    keys, matrix, assessors = labels_table(labels)
    column = assessors.index(str(adjudicator))
    theirs = matrix[:, column]
    others = np.delete(matrix, column, axis=1)
    merged = theirs.copy()
    missing = np.isnan(theirs)
    if missing.any():
        merged[missing] = _majority_of(others[missing], ties)
    policy = MergePolicy("adjudicator", (("name", adjudicator), ("fallback", "majority"), ("ties", ties)))
    return _build(keys, merged, policy, assessors)


def merge_mean(labels: Mapping[str, Any], *, threshold: float) -> Merged:
    """Binary qrels: a pair is relevant (1) when the mean of its labels is at least ``threshold``, else 0.

    Examples
    --------
    >>> m = merge_mean({"a": {"q": {"d1": 1, "d2": 0}}, "b": {"q": {"d1": 2, "d2": 1}}}, threshold=1.0)
    >>> m.qrels.to_dict(), str(m.policy)
    ({'q': {'d1': 1, 'd2': 0}}, 'mean(threshold=1.0)')
    """
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or np.isnan(threshold):
        raise ConventionError(f"The 'threshold' parameter of merge_mean must be a number. Got {threshold!r} instead.")
    keys, matrix, assessors = labels_table(labels)
    relevant = (np.nanmean(matrix, axis=1) >= threshold).astype(np.int64)
    return _build(keys, relevant, MergePolicy("mean", (("threshold", float(threshold)),)), assessors)
