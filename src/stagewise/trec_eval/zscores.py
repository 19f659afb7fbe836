"""trec_eval's ``-Z FILE``: each topic's value as a z-score against a per-topic mean and standard deviation.

The file has lines ``qid measure mean stddev`` (``measure`` as printed, e.g. ``P_10``); a value becomes
``(value - mean) / stddev`` before it is averaged, so the "all" line is the mean z-score (trec_eval's
``convert_zscores.c``). Where the file has no line for a measure of a topic, or its stddev is 0 and the value is
not the mean, trec_eval prints -1000000 (``MISSING_ZSCORE_VALUE``) and averages it in; stagewise does the same,
byte for byte, and says on stderr which measures that hit. A topic with no line at all is refused (trec_eval
would print -1000000 for all its values).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stagewise._io import display_name
from stagewise.errors import InputError
from stagewise.trec_eval.text_files import decimal, fields_by_line

MISSING = -1000000.0


@dataclass
class ZScores:
    """A -Z file read: ``(qid, measure) -> (mean, stddev)``, and the measures found missing while converting."""

    source: str
    stats: dict[tuple[str, str], tuple[float, float]]
    queries: frozenset[str]
    missing: dict[str, list[str]] = field(default_factory=dict)  # measure -> topics left at MISSING

    def check_queries(self, query_ids: list[str]) -> None:
        """Every evaluated topic needs lines in the file."""
        absent = [q for q in query_ids if q not in self.queries]
        if absent:
            shown = ", ".join(absent[:5]) + (" ..." if len(absent) > 5 else "")
            raise InputError(
                self.source,
                f"has no line for topic{'s' if len(absent) > 1 else ''} {shown}",
                expected="qid measure mean stddev lines for every evaluated topic",
                hint="trec_eval would print -1000000 for every value of such a topic",
            )

    def convert(self, name: str, query_ids: list[str], values: np.ndarray) -> np.ndarray:
        """``values`` (one per topic) of measure ``name`` as z-scores."""
        out = np.empty(len(values))
        for i, (qid, value) in enumerate(zip(query_ids, np.asarray(values, dtype=np.float64).tolist(), strict=True)):
            mean, stddev = self.stats.get((qid, name), (None, None))
            if mean is None:
                out[i] = MISSING
            elif stddev:
                out[i] = (value - mean) / stddev
            else:
                out[i] = 0.0 if value == mean else MISSING
            if out[i] == MISSING:
                self.missing.setdefault(name, []).append(qid)
        return out

    def warnings(self) -> list[str]:
        """One line per measure that printed trec_eval's -1000000 mark for some topic."""
        return [
            f"{self.source}: no usable mean and stddev for {name} of topic{'s' if len(topics) > 1 else ''} "
            f"{', '.join(topics[:5])}{' ...' if len(topics) > 5 else ''}: its z-score is -1000000 there "
            "(trec_eval's mark for a missing one), and averaged in"
            for name, topics in self.missing.items()
        ]


def read_zscores(source: str) -> ZScores:
    """Read ``qid measure mean stddev`` lines; a (qid, measure) given twice is an error naming the line."""
    name = display_name(source)
    stats: dict[tuple[str, str], tuple[float, float]] = {}
    lines: dict[tuple[str, str], int] = {}
    for number, (qid, measure, mean, stddev) in fields_by_line(source, 4, "qid measure mean stddev", comments=False):
        key = (qid, measure)
        if key in stats:
            raise InputError(
                name, f"{measure} of topic {qid!r} is given twice (first on line {lines[key]})", line=number,
                expected="one line per topic and measure",
            )  # fmt: skip
        stats[key] = (decimal(mean, source, number, "mean"), decimal(stddev, source, number, "stddev"))
        lines[key] = number
    if not stats:
        raise InputError(name, "has no lines", expected="qid measure mean stddev lines")
    return ZScores(name, stats, frozenset(q for q, _ in stats))
