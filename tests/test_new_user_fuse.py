"""fuse --optimize with a step so fine that the search would never end (--step 1e-9: a list of a billion weights,
a billion evaluations per weight) is refused up front, naming the limit; so is an explicit grid too large."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stagewise.cli import app
from stagewise.errors import ConventionError
from stagewise.fusion.optimize import MAX_GRID_POINTS, grid_weights

SAMPLE = Path(__file__).parents[1] / "src" / "stagewise" / "_bundled" / "trec_eval_sample"
QRELS, RUN, TRUNC = (str(SAMPLE / name) for name in ("qrels.test", "results.test", "results.trunc"))


def test_a_step_too_fine_is_refused_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "tuned.run"
    args = ["fuse", RUN, TRUNC, "--method", "wsum", "--optimize", "--qrels", QRELS, "--step", "1e-9", "-o", str(out)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2
    assert done.output == (
        "stagewise: error: The 'step' parameter of the weight grid must be at least 0.0001 (each multiple of it is"
        " a weight to evaluate). Got 1e-09 instead.\n"
    )
    assert not out.exists()


def test_the_grid_size_check_counts_as_stars_and_bars() -> None:
    # 3 runs at step 0.1: C(10 + 2, 2) = 66 points, as grid_weights enumerates them
    assert len(grid_weights(3, 0.1)) == math.comb(12, 2) == 66
    # 3 runs at step 0.001: C(1002, 2) = 501,501 points, refused with the count
    assert math.comb(1002, 2) > MAX_GRID_POINTS
    with pytest.raises(ConventionError, match=r"the weight grid of 3 runs at step 0\.001 has 501,501 points"):
        grid_weights(3, 0.001)


def test_weights_that_overflow_are_one_line_in_plain_words(tmp_path: Path) -> None:
    # 1e308 + 1e308 overflows: the message used to show numpy's reprs (np.float64(inf), np.str_('301')) after a
    # RuntimeWarning with a source line
    out = tmp_path / "f.run"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning on the way would be a traceback here
        done = CliRunner().invoke(app, ["fuse", RUN, TRUNC, "--method", "wsum", "-w", "1e308,1e308", "-o", str(out)])
    assert done.exit_code == 2
    assert done.output == (
        "stagewise: error: fusion gave a non-finite score (inf) to document 'FBIS4-50478' of query '301'; "
        "check the weights and parameters\n"
    )
    assert list(tmp_path.iterdir()) == []
