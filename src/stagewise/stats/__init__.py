"""Comparing systems: paired significance tests, multiple-comparison corrections, effect sizes and tables.

>>> from stagewise.stats import compare_scores
>>> scores = {"bm25": {"ndcg@10": [0.2, 0.4, 0.1, 0.5, 0.3]},
...           "dense": {"ndcg@10": [0.3, 0.6, 0.2, 0.7, 0.6]}}
>>> result = compare_scores(scores, test="randomization", seed=7)
>>> pair = result.pairs[0]
>>> pair.a, pair.b, round(pair.mean_diff, 2), pair.p_value, pair.test
('bm25', 'dense', 0.18, 0.0625, 'randomization')

The tests and corrections are the registries :data:`TESTS` and :data:`CORRECTIONS`
(:mod:`stagewise.stats.catalogue`, which imports no numpy, so the command line's help reads them cheaply); the
names load lazily, and scipy only when a test that needs it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import functions_over_submodules, lazy_exports

_EXPORTS = {
    "CORRECTIONS": "stagewise.stats.catalogue",
    "TESTS": "stagewise.stats.catalogue",
    "Correction": "stagewise.stats.catalogue",
    "PairedTest": "stagewise.stats.catalogue",
    "CompareOptions": "stagewise.stats.compare",
    "compare": "stagewise.stats.compare",
    "compare_scores": "stagewise.stats.compare",
    "Comparison": "stagewise.stats.result",
    "PairResult": "stagewise.stats.result",
    "adjust": "stagewise.stats.corrections",
    "TestResult": "stagewise.stats.paired",
    "bootstrap_test": "stagewise.stats.paired",
    "randomization_test": "stagewise.stats.paired",
    "sign_test": "stagewise.stats.paired",
    "t_test": "stagewise.stats.paired",
    "wilcoxon_test": "stagewise.stats.paired",
}

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "CompareOptions",
    "Comparison",
    "Correction",
    "PairResult",
    "PairedTest",
    "TestResult",
    "adjust",
    "bootstrap_test",
    "compare",
    "compare_scores",
    "randomization_test",
    "sign_test",
    "t_test",
    "wilcoxon_test",
]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


functions_over_submodules(__name__, "compare")

if TYPE_CHECKING:  # pragma: no cover
    from stagewise.stats.catalogue import CORRECTIONS, TESTS, Correction, PairedTest
    from stagewise.stats.compare import CompareOptions, compare, compare_scores
    from stagewise.stats.corrections import adjust
    from stagewise.stats.paired import (
        TestResult,
        bootstrap_test,
        randomization_test,
        sign_test,
        t_test,
        wilcoxon_test,
    )
    from stagewise.stats.result import Comparison, PairResult
