"""`stagewise power topics --variance V`: an error about V quotes the V the user typed (it quoted the design's
2 V: `--variance -1` said "the variance -2.0"), and a V whose 2 V overflows says so."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.errors import InputError
from stagewise.stats.power import topic_set_size


def _topics(*args: str):
    return CliRunner().invoke(app, ["power", "topics", "--min-diff", "0.05", *args])


@pytest.mark.parametrize("given", ["-1", "0", "-0.5"])
def test_a_bad_variance_is_quoted_as_given(given: str) -> None:
    done = _topics("--variance", given)
    assert done.exit_code == 2
    assert done.output == (
        f"stagewise: error: power: the variance {float(given)!r} is not a positive finite number"
        " (estimate it from runs)\n"
    )


def test_a_variance_whose_double_overflows_says_so() -> None:
    with pytest.raises(InputError, match=r"the variance 1e\+308 is too large: .* reads 2 V, which is no finite"):
        topic_set_size("t", 0.05, 1e308)


def test_a_good_variance_still_gives_the_statsmodels_topic_count() -> None:
    from statsmodels.stats.power import TTestPower

    # paired t-test: effect size minD / sqrt(2 V), the smallest n with power >= 0.8 (statsmodels solves for it)
    expected = math.ceil(TTestPower().solve_power(effect_size=0.05 / math.sqrt(2 * 0.01), alpha=0.05, power=0.8))
    assert topic_set_size("t", 0.05, 0.01).topics == expected
    assert _topics("--variance", "0.01").output.startswith(f"topics needed: {expected}\n")
