"""compare's progress callback: it reports every comparison once, in order, and changes no number."""

from __future__ import annotations

import numpy as np
import pytest

from stagewise.stats import compare_scores


def _scores(runs: int = 4, queries: int = 30) -> dict:
    rng = np.random.default_rng(7)
    return {
        f"r{i}": {m: {f"q{q}": float(v) for q, v in enumerate(rng.random(queries))} for m in ("map", "ndcg@10")}
        for i in range(runs)
    }


@pytest.mark.parametrize(
    ("options", "phases"),
    [
        ({"test": "randomization", "resamples": 3000}, 1),
        ({"test": "randomization", "exact": True}, 1),
        ({"test": "bootstrap", "resamples": 700, "ci": "bootstrap"}, 2),
        ({"test": "t"}, 1),
        ({"test": "wilcoxon"}, 1),
    ],
)
def test_progress_counts_every_comparison_and_changes_nothing(options: dict, phases: int) -> None:
    scores = _scores(queries=12 if options.get("exact") else 30)
    calls: list[tuple[float, int]] = []
    with_progress = compare_scores(scores, **options, progress=lambda done, total: calls.append((done, total)))
    without = compare_scores(scores, **options)
    assert with_progress.to_dict() == without.to_dict()
    comparisons = 6 * 2  # 6 pairs of 4 runs, 2 metrics
    assert calls and {total for _, total in calls} == {comparisons * phases}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == pytest.approx(comparisons * phases)


def test_resampling_reports_each_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    from stagewise.stats import resampling as R

    monkeypatch.setattr(R, "CHUNK_BYTES", 8 * 64 * 256)  # tiny chunks: one block of 256 sign vectors each
    heard: list[float] = []
    diffs = np.random.default_rng(1).normal(size=(3, 40))
    with R.reporting(heard.append):
        counts = R.randomization_counts(diffs, 2560, seed=0)
    assert len(heard) == 10 and sum(heard) == pytest.approx(3)
    assert np.array_equal(counts, R.randomization_counts(diffs, 2560, seed=0))  # no hook outside the block


def test_the_cli_shows_no_bar_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from stagewise.cli.common import stage_progress

    with stage_progress("evaluating", "testing", "comparisons") as report:
        assert report is None  # pytest's stderr is not a terminal: the work is not asked to report
    assert capsys.readouterr().err == ""
