"""How a p-value is printed: a resampled p of 0 says what it is, a bound, never 0."""

from __future__ import annotations

import math

from stagewise.report.compare import p_text


def test_p_values_print_as_decimals_scientific_or_a_bound() -> None:
    assert p_text(0.5) == "0.5000" and p_text(3e-7) == "3.0e-07" and p_text(math.nan) == "nan"
    assert p_text(0.0, resamples=10_000) == "<1e-04"  # none of 10,000 shuffles reached it
    assert p_text(0.0) == "0.0e+00"  # an exact test's p can be 0 in floating point: printed as it is
