"""The assess stage: agreement between assessors and between qrels, a typed qrels diff, rank correlations of
system orderings and merge policies (issue 22's library; its CLI and report sections wait for issue 20).

Conventions are stated in each module's docstring and in docs/assess.md. Importing this package loads numpy
only: scipy and polars load on the first call that needs them.
"""

from stagewise.assess.agreement import (
    AssessorFigures,
    Confusion,
    QrelsAgreement,
    assessor_figures,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    krippendorff_alpha,
    qrels_agreement,
)
from stagewise.assess.correlation import RBO, kendall_tau, rbo, spearman_rho, tau_ap
from stagewise.assess.merge import Merged, MergePolicy, merge_adjudicator, merge_majority, merge_max, merge_mean
from stagewise.assess.qrels_diff import PairChange, QrelsDiff, QueryDiff, qrels_diff

__all__ = [
    "RBO",
    "AssessorFigures",
    "Confusion",
    "MergePolicy",
    "Merged",
    "PairChange",
    "QrelsAgreement",
    "QrelsDiff",
    "QueryDiff",
    "assessor_figures",
    "cohen_kappa",
    "confusion_matrix",
    "fleiss_kappa",
    "kendall_tau",
    "krippendorff_alpha",
    "merge_adjudicator",
    "merge_majority",
    "merge_max",
    "merge_mean",
    "qrels_agreement",
    "qrels_diff",
    "rbo",
    "spearman_rho",
    "tau_ap",
]
