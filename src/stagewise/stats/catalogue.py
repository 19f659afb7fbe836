"""The statistical tests and multiple-comparison corrections :func:`stagewise.stats.compare` knows, as registries.

Each entry carries its behaviour: a test its batched kernel, the sentence the output states and the options it
reads (as :class:`stagewise.spec.Param`); a correction its adjust function and its labels. The command line's
``--test`` and ``--correction`` choices, their help and their errors are generated from :data:`TESTS` and
:data:`CORRECTIONS`, so there is no other list to keep in step.

This module imports neither numpy nor scipy (``stagewise compare --help`` reads it): the functions are given as
``"module:function"`` and imported the first time an entry runs. A plug-in may give the functions themselves.

Adding a test is one entry (and its test)::

    import numpy as np
    from stagewise.stats import TESTS, PairedTest
    from stagewise.stats.catalogue import ALTERNATIVE

    def mean_sign(a, b, opts):  # one row per comparison, one column per query; d = b - a
        d = b - a
        return d.mean(axis=1), np.where(d.mean(axis=1) == 0, 1.0, 0.5), "toy"

    TESTS.register(PairedTest("mean-sign", "mean-sign test", "a toy test", mean_sign,
                              params={"alternative": ALTERNATIVE}))

after which ``compare(..., test="mean-sign")`` and ``stagewise compare --test mean-sign`` run it, and
``stagewise compare --help`` lists it.

>>> TESTS.names()
['t', 'wilcoxon', 'randomization', 'bootstrap', 'sign', 'anova', 'tukey-hsd', 'maxt']
>>> [name for name in TESTS.names() if TESTS[name].kind == "many"]
['anova', 'tukey-hsd', 'maxt']
>>> TESTS.lookup("Fisher").name, CORRECTIONS.lookup("fdr_bh").name
('randomization', 'bh')
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stagewise.errors import ConventionError
from stagewise.spec import Param, Registry

__all__ = [
    "ALTERNATIVE",
    "ALTERNATIVES",
    "CI_METHODS",
    "CORRECTIONS",
    "EXACT",
    "FAMILY_SCOPES",
    "RESAMPLES",
    "SEED",
    "STANDARDISATIONS",
    "TESTS",
    "TIE_TOLERANCE",
    "Correction",
    "PairedTest",
    "Standardisation",
]

#: The sides a test may take: ``d = b - a`` differs from 0, is above it (b better) or below it.
ALTERNATIVES = ("two-sided", "greater", "less")
#: The intervals of the mean difference: Student's t, or the percentile bootstrap.
CI_METHODS = ("t", "bootstrap")
#: What one family of the correction is: the pairs of one metric, or all pairs of all metrics.
FAMILY_SCOPES = ("metric", "all")

# The options a test may read (its ``params``): one definition each, with the values they accept.
ALTERNATIVE = Param(str, "two-sided", "two-sided, or one-sided: greater (b > a) or less", choices=ALTERNATIVES)
RESAMPLES = Param(int, 10_000, "random sign flips or bootstrap resamples (B)", "an int >= 1", lambda v: v >= 1)
SEED = Param(int, 0, "seed of the random streams: same seed, same p-values", "an int >= 0", lambda v: v >= 0)
EXACT = Param(bool, None, "enumerate all 2^n sign assignments: always, never or auto", "True, False or None (auto)")
TIE_TOLERANCE = Param(
    float, 1e-9, "a per-query difference within this is a tie", "a finite float >= 0", lambda v: v >= 0
)


def resolve(ref: Any) -> Any:
    """A function given as ``"module:function"``, imported now; any other value as it is."""
    if not isinstance(ref, str):
        return ref
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class PairedTest:
    """A paired test, as :data:`TESTS` holds it.

    ``run(a, b, opts)`` is the batched kernel: ``a`` and ``b`` are ``(comparisons, queries)`` float arrays
    (``d = b - a``), ``opts`` a :class:`stagewise.stats.paired.TestOptions`; it returns the statistics, the
    p-values (one per row) and a few words on how they were computed. ``describe(opts)`` is the sentence the
    output states (``help`` when not given). ``params`` are the options the test reads, of ``alternative``,
    ``resamples``, ``seed``, ``exact`` and ``tie_tolerance``: a test with ``seed`` is seeded, and one with
    ``resamples`` has the number of resamples stated in the output. ``run`` and ``describe`` may be
    ``"module:function"``, imported on first use.

    ``kind`` is the shape of the kernel: ``"paired"`` (above: one pair of runs per row) or ``"many"``, a test of
    every run at once, whose ``run(x, opts)`` takes the ``(topics, runs)`` score matrix of one metric and
    returns each pair's statistic and family-wise p-value (pairs ``j < k`` in ``numpy.triu_indices`` order,
    ``d = x[:, k] - x[:, j]``) with its method; :func:`stagewise.stats.compare` then adds the two-way ANOVA
    table, each run's interval and the letter display (:mod:`stagewise.stats.many`).
    """

    name: str
    label: str
    help: str
    run: Callable[..., Any] | str
    describe: Callable[..., str] | str | None = None
    params: Mapping[str, Param] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    kind: str = "paired"

    __test__ = False  # not a pytest class

    @property
    def seeded(self) -> bool:
        """Whether the p-values depend on the seed."""
        return "seed" in self.params

    @property
    def resampling(self) -> bool:
        """Whether the test draws ``resamples`` random sign flips or resamples."""
        return "resamples" in self.params

    def kernel(self) -> Callable[..., Any]:
        """The batched function (imported now when given as a name)."""
        return resolve(self.run)

    def statement(self, opts: Any) -> str:
        """The sentence the output states about this test under ``opts``."""
        return self.help if self.describe is None else resolve(self.describe)(opts)


@dataclass(frozen=True)
class Correction:
    """A multiple-comparison correction, as :data:`CORRECTIONS` holds it: ``adjust(p)`` maps a family's raw
    p-values (a float array) to adjusted ones; ``label`` names it in a table's title, ``description`` in the
    notes and the JSON conventions. Calling the entry adjusts: ``CORRECTIONS["holm"]([0.01, 0.04])``."""

    name: str
    label: str
    description: str
    help: str
    adjust: Callable[[Any], Any] | str
    aliases: tuple[str, ...] = ()

    def __call__(self, p: Any) -> Any:
        return resolve(self.adjust)(p)


_PAIRED = "stagewise.stats.paired"
_MANY = "stagewise.stats.many"
_CORRECTIONS = "stagewise.stats.corrections"

#: The paired tests, by name and alias (``compare(test=...)``, ``stagewise compare --test``).
TESTS: Registry[PairedTest] = Registry(
    "statistical test",
    PairedTest(
        "t",
        "paired t-test",
        "paired Student's t-test (scipy.stats.ttest_rel)",
        f"{_PAIRED}:t_kernel",
        f"{_PAIRED}:describe_t",
        {"alternative": ALTERNATIVE},
        aliases=("student", "ttest", "t-test"),
    ),
    PairedTest(
        "wilcoxon",
        "Wilcoxon signed-rank test",
        "Wilcoxon signed-rank test (scipy.stats.wilcoxon defaults)",
        f"{_PAIRED}:wilcoxon_kernel",
        f"{_PAIRED}:describe_wilcoxon",
        {"alternative": ALTERNATIVE},
        aliases=("signed-rank", "wilcoxon-signed-rank"),
    ),
    PairedTest(
        "randomization",
        "randomization test",
        "Fisher's paired randomization test (seeded sign flips, or all 2^n when few queries)",
        f"{_PAIRED}:randomization_kernel",
        f"{_PAIRED}:describe_randomization",
        {"alternative": ALTERNATIVE, "resamples": RESAMPLES, "seed": SEED, "exact": EXACT},
        aliases=("fisher", "permutation", "random"),
    ),
    PairedTest(
        "bootstrap",
        "paired bootstrap test",
        "studentized paired bootstrap test (seeded resamples of the queries)",
        f"{_PAIRED}:bootstrap_kernel",
        f"{_PAIRED}:describe_bootstrap",
        {"alternative": ALTERNATIVE, "resamples": RESAMPLES, "seed": SEED},
        aliases=("bootstrap-t", "paired-bootstrap"),
    ),
    PairedTest(
        "sign",
        "sign test",
        "sign test (exact binomial on wins and losses)",
        f"{_PAIRED}:sign_kernel",
        f"{_PAIRED}:describe_sign",
        {"alternative": ALTERNATIVE, "tie_tolerance": TIE_TOLERANCE},
        aliases=("binomial",),
    ),
    PairedTest(
        "anova",
        "two-way ANOVA, Tukey HSD",
        "two-way ANOVA (topic x system) over all runs, pairs by Tukey's HSD from its residual variance",
        f"{_MANY}:anova_kernel",
        f"{_MANY}:describe_anova",
        {},
        aliases=("two-way-anova", "tukey-anova"),
        kind="many",
    ),
    PairedTest(
        "tukey-hsd",
        "randomised Tukey HSD",
        "randomised Tukey HSD over all runs (seeded within-topic shuffles; Carterette 2012)",
        f"{_MANY}:tukey_kernel",
        f"{_MANY}:describe_tukey",
        {"resamples": RESAMPLES, "seed": SEED},
        aliases=("tukey", "randomised-tukey", "randomized-tukey", "hsd"),
        kind="many",
    ),
    PairedTest(
        "maxt",
        "Westfall-Young MaxT",
        "Westfall-Young MaxT over all pairs (seeded sign flips, max |t|; Boytsov et al. 2013)",
        f"{_MANY}:maxt_kernel",
        f"{_MANY}:describe_maxt",
        {"resamples": RESAMPLES, "seed": SEED},
        aliases=("max-t", "westfall-young"),
        kind="many",
    ),
    error=ConventionError,
)

#: The multiple-comparison corrections, by name and alias (``compare(correction=...)``, ``--correction``).
CORRECTIONS: Registry[Correction] = Registry(
    "correction",
    Correction("none", "no correction", "none (raw p-values)", "raw p-values", f"{_CORRECTIONS}:none", ("no",)),
    Correction(
        "bonferroni",
        "Bonferroni",
        "Bonferroni (family-wise error rate)",
        "min(1, m p); family-wise error rate",
        f"{_CORRECTIONS}:bonferroni",
        ("bonf",),
    ),
    Correction(
        "holm",
        "Holm",
        "Holm step-down (family-wise error rate)",
        "Holm's step-down; family-wise error rate",
        f"{_CORRECTIONS}:holm",
        ("holm-bonferroni",),
    ),
    Correction(
        "bh",
        "Benjamini-Hochberg",
        "Benjamini-Hochberg (false discovery rate)",
        "Benjamini-Hochberg step-up; false discovery rate",
        f"{_CORRECTIONS}:benjamini_hochberg",
        ("fdr", "fdr_bh", "benjamini-hochberg"),
    ),
    Correction(
        "holm-sidak",
        "Holm-Sidak",
        "Holm-Sidak step-down (family-wise error rate)",
        "Holm's step-down with Sidak's bound; family-wise error rate",
        f"{_CORRECTIONS}:holm_sidak",
        ("sidak-holm",),
    ),
    Correction(
        "by",
        "Benjamini-Yekutieli",
        "Benjamini-Yekutieli (false discovery rate, any dependence)",
        "Benjamini-Yekutieli step-up; false discovery rate under any dependence",
        f"{_CORRECTIONS}:benjamini_yekutieli",
        ("fdr_by", "benjamini-yekutieli"),
    ),
    error=ConventionError,
)


@dataclass(frozen=True)
class Standardisation:
    """A per-topic score standardisation, as :data:`STANDARDISATIONS` holds it: ``apply(x, reference)`` maps a
    ``(topics, runs)`` score matrix to standardised scores, the per-topic mean and standard deviation taken from
    the reference runs' ``(topics, reference runs)`` matrix; ``description`` is what the outputs state."""

    name: str
    label: str
    description: str
    help: str
    apply: Callable[[Any, Any], Any] | str | None
    aliases: tuple[str, ...] = ()

    def __call__(self, x: Any, reference: Any) -> Any:
        return x if self.apply is None else resolve(self.apply)(x, reference)


_STANDARDISE = "stagewise.stats.many"

#: Score standardisations per topic (Webber, Moffat and Zobel, SIGIR 2008; Sakai, ICTIR 2016), by name and alias
#: (``compare(standardise=...)``, ``stagewise compare --standardise``).
STANDARDISATIONS: Registry[Standardisation] = Registry(
    "standardisation",
    Standardisation("none", "raw scores", "none (raw scores)", "raw scores", None, ("raw", "no")),
    Standardisation(
        "zscore",
        "z-scores",
        "z-scores per topic: (x - mean) / sd of the reference runs on that topic (sd with n - 1)",
        "z = (x - mean) / sd per topic, from the reference runs",
        f"{_STANDARDISE}:zscore",
        ("z", "z-score"),
    ),
    Standardisation(
        "std-cdf",
        "standardised (normal CDF)",
        "Phi(z): the standard normal CDF of the per-topic z-score (Webber, Moffat and Zobel 2008)",
        "Phi(z), the normal CDF of the z-score, in (0, 1)",
        f"{_STANDARDISE}:std_cdf",
        ("webber", "cdf"),
    ),
    Standardisation(
        "std-ab",
        "std-AB",
        "std-AB: 0.5 + 0.15 z clipped to [0, 1] (Sakai 2016), z per topic from the reference runs",
        "0.5 + 0.15 z clipped to [0, 1] (Sakai's std-AB)",
        f"{_STANDARDISE}:std_ab",
        ("stdab",),
    ),
    error=ConventionError,
)
