"""An offline relevance judge: how much of the query does the passage cover, binned to a 0-3 grade.

:class:`QueryCoverageJudge` (``query-coverage`` in :data:`stagewise.rag.judges.JUDGES`) answers the relevance
task of the graded judge protocol (:func:`stagewise.rag.verdicts.relevance_verdicts`)::

    coverage = |content(query) & content(passage)| / |content(query)|

with ``content()`` the lexical support judge's content words (SQuAD normalisation, stop words dropped, a plural
``s`` stripped). The grade is the number of thresholds the coverage reaches, the thresholds fixed at quarters
(0.25, 0.5, 0.75) before any data was looked at, so no figure reported for it was tuned on: coverage < 0.25 is
grade 0, < 0.5 grade 1, < 0.75 grade 2, else 3. The verdict's score is the coverage itself (finer than the
grade). A query with no content word gets grade 0, score 0.

It is a word-overlap baseline: it cannot see synonyms or paraphrase, and it rewards a passage that merely
repeats the query's words. ``docs/judges.md`` reports its agreement with Cranfield's graded qrels.

>>> judge = QueryCoverageJudge()
>>> [v.label for v in judge.relevance_verdicts([("boundary layer flow", Passage("d1", "flow in a boundary layer")),
...                                              ("boundary layer flow", Passage("d2", "supersonic wings"))])]
['3', '0']
>>> judge.name, QueryCoverageJudge(thresholds=(0.3, 0.6, 0.9)).name
('query-coverage', 'query-coverage(thresholds=(0.3,0.6,0.9))')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stagewise.errors import ConventionError
from stagewise.rag.judges import Passage, _content_tokens
from stagewise.rag.verdicts import Verdict
from stagewise.spec import canonical

__all__ = ["DEFAULT_THRESHOLDS", "Passage", "QueryCoverageJudge", "query_coverage"]

#: The coverage each grade 1, 2, 3 needs: quarters, fixed before looking at any qrels.
DEFAULT_THRESHOLDS: tuple[float, float, float] = (0.25, 0.5, 0.75)


def query_coverage(query: str, passage: str) -> float:
    """The share of the query's content words found in the passage (0 for a query with none).

    >>> query_coverage("Emma novel Austen", "Jane Austen wrote Emma")
    0.666...
    """
    wanted = _content_tokens(query)
    return len(wanted & _content_tokens(passage)) / len(wanted) if wanted else 0.0


def increasing_cuts(cuts: Sequence[float]) -> bool:
    """Whether ``cuts`` are three strictly increasing numbers in [0, 1]."""
    return len(cuts) == 3 and 0 <= cuts[0] < cuts[1] < cuts[2] <= 1


def _thresholds(value: Any) -> tuple[float, float, float]:
    try:
        cuts = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        cuts = ()
    if not increasing_cuts(cuts):
        raise ConventionError(
            "The 'thresholds' parameter of query-coverage must be three increasing numbers in [0, 1] (the coverage "
            f"grades 1, 2 and 3 need). Got {value!r} instead."
        )
    return cuts  # type: ignore[return-value]


@dataclass(frozen=True)
class QueryCoverageJudge:
    """Relevance by query-term coverage, graded 0-3 at ``thresholds`` (see the module's docstring)."""

    thresholds: tuple[float, float, float] = DEFAULT_THRESHOLDS
    version = "1"  # the binning rule; a change of rule is a new version (it keys caches)

    def __post_init__(self) -> None:
        object.__setattr__(self, "thresholds", _thresholds(self.thresholds))

    @property
    def name(self) -> str:
        changed = self.thresholds != DEFAULT_THRESHOLDS
        return canonical("query-coverage", None, [("thresholds", self.thresholds)] if changed else [])

    def grade(self, coverage: float) -> int:
        return sum(coverage >= cut for cut in self.thresholds)

    def relevance_verdicts(self, items: Sequence[tuple[str, Any]]) -> list[Verdict]:
        """One 0-3 verdict per ``(query, passage)``; the passage a :class:`Passage` or a text."""
        out = []
        for query, passage in items:
            text = passage.text if isinstance(passage, Passage) else str(passage)
            coverage = query_coverage(str(query), text)
            out.append(Verdict(str(self.grade(coverage)), round(coverage, 6)))
        return out
