"""The assess stage: pools from runs, agreement between assessors and between qrels, a typed qrels diff, rank
correlations of system orderings and merge policies (issue 22).

Conventions are stated in each module's docstring and in docs/assess.md. The names load their modules on first
use: the catalogues the command line reads (:mod:`stagewise.assess.catalogue`: pooling strategies, merge
policies) import no numpy, so ``stagewise pool --help`` stays instant; numpy, polars and scipy load with the
functions that need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stagewise._lazy import lazy_exports

_AGREEMENT = "stagewise.assess.agreement"
_CORRELATION = "stagewise.assess.correlation"
_MERGE = "stagewise.assess.merge"
_CATALOGUE = "stagewise.assess.catalogue"
_POOL = "stagewise.assess.pool"
_SUMMARY = "stagewise.assess.summary"
_TRUST = "stagewise.assess.qrels_trust"
_EXPORTS = {
    "AssessorFigures": _AGREEMENT,
    "Confusion": _AGREEMENT,
    "QrelsAgreement": _AGREEMENT,
    "assessor_figures": _AGREEMENT,
    "cohen_kappa": _AGREEMENT,
    "confusion_matrix": _AGREEMENT,
    "fleiss_kappa": _AGREEMENT,
    "krippendorff_alpha": _AGREEMENT,
    "qrels_agreement": _AGREEMENT,
    "RBO": _CORRELATION,
    "kendall_tau": _CORRELATION,
    "rbo": _CORRELATION,
    "spearman_rho": _CORRELATION,
    "tau_ap": _CORRELATION,
    "Merged": _MERGE,
    "MergePolicy": _MERGE,
    "merge_adjudicator": _MERGE,
    "merge_majority": _MERGE,
    "merge_max": _MERGE,
    "merge_mean": _MERGE,
    "PairChange": "stagewise.assess.qrels_diff",
    "QrelsDiff": "stagewise.assess.qrels_diff",
    "QueryDiff": "stagewise.assess.qrels_diff",
    "qrels_diff": "stagewise.assess.qrels_diff",
    "MERGE_POLICIES": _CATALOGUE,
    "STRATEGIES": _CATALOGUE,
    "merge": _CATALOGUE,
    "Pool": _POOL,
    "PoolEntry": _POOL,
    "RunContribution": _POOL,
    "make_pool": _POOL,
    "AgreementReport": _SUMMARY,
    "PairAgreement": _SUMMARY,
    "agreement_report": _SUMMARY,
    "LeftOut": _TRUST,
    "RankingAgreement": _TRUST,
    "ScoreBounds": _TRUST,
    "TrustOptions": _TRUST,
    "TrustReport": _TRUST,
    "trust": _TRUST,
}

__all__ = [
    "MERGE_POLICIES",
    "RBO",
    "STRATEGIES",
    "AgreementReport",
    "AssessorFigures",
    "Confusion",
    "LeftOut",
    "MergePolicy",
    "Merged",
    "PairAgreement",
    "PairChange",
    "Pool",
    "PoolEntry",
    "QrelsAgreement",
    "QrelsDiff",
    "QueryDiff",
    "RankingAgreement",
    "RunContribution",
    "ScoreBounds",
    "TrustOptions",
    "TrustReport",
    "agreement_report",
    "assessor_figures",
    "cohen_kappa",
    "confusion_matrix",
    "fleiss_kappa",
    "kendall_tau",
    "krippendorff_alpha",
    "make_pool",
    "merge",
    "merge_adjudicator",
    "merge_majority",
    "merge_max",
    "merge_mean",
    "qrels_agreement",
    "qrels_diff",
    "rbo",
    "spearman_rho",
    "tau_ap",
    "trust",
]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)

if TYPE_CHECKING:  # pragma: no cover
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
    from stagewise.assess.catalogue import MERGE_POLICIES, STRATEGIES, merge
    from stagewise.assess.correlation import RBO, kendall_tau, rbo, spearman_rho, tau_ap
    from stagewise.assess.merge import Merged, MergePolicy, merge_adjudicator, merge_majority, merge_max, merge_mean
    from stagewise.assess.pool import Pool, PoolEntry, RunContribution, make_pool
    from stagewise.assess.qrels_diff import PairChange, QrelsDiff, QueryDiff, qrels_diff
    from stagewise.assess.qrels_trust import LeftOut, RankingAgreement, ScoreBounds, TrustOptions, TrustReport, trust
    from stagewise.assess.summary import AgreementReport, PairAgreement, agreement_report
