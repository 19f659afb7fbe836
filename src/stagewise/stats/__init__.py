"""Comparing systems: paired significance tests, multiple-comparison corrections, effect sizes and tables.

>>> from stagewise.stats import compare_scores
>>> scores = {"bm25": {"ndcg@10": [0.2, 0.4, 0.1, 0.5, 0.3]},
...           "dense": {"ndcg@10": [0.3, 0.6, 0.2, 0.7, 0.6]}}
>>> result = compare_scores(scores, test="randomization", seed=7)
>>> pair = result.pairs[0]
>>> pair.a, pair.b, round(pair.mean_diff, 2), pair.p_value, pair.test
('bm25', 'dense', 0.18, 0.0625, 'randomization')

Only numpy is imported here; scipy loads when a test that needs it runs.
"""

from stagewise.stats.compare import CompareOptions, compare, compare_scores
from stagewise.stats.corrections import CORRECTIONS, adjust
from stagewise.stats.paired import (
    TESTS,
    TestResult,
    bootstrap_test,
    randomization_test,
    sign_test,
    t_test,
    wilcoxon_test,
)
from stagewise.stats.result import Comparison, PairResult

__all__ = [
    "CORRECTIONS",
    "TESTS",
    "CompareOptions",
    "Comparison",
    "PairResult",
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
