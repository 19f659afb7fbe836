"""Weight tuning: the exact grid, coordinate ascent, supervised training per fold, k-fold cross-validation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from stagewise import evaluate, read_qrels
from stagewise.errors import ConventionError, StagewiseError
from stagewise.fusion import build_table, fuse, grid_weights, optimize
from stagewise.fusion.train import judge, position_probs
from stagewise.report import render


# ------------------------------------------------------------------------------------------- the grid
@pytest.mark.parametrize(("runs", "step", "points"), [(2, 0.1, 11), (3, 0.1, 66), (4, 0.1, 286), (3, 0.05, 231)])
def test_grid_keeps_every_combination(runs, step, points):
    grid = grid_weights(runs, step)
    assert grid.shape == (points, runs)
    assert points == math.comb(round(1 / step) + runs - 1, runs - 1)
    counts = np.rint(grid / step).astype(int)
    assert (counts.sum(axis=1) == round(1 / step)).all()  # on the simplex, exactly in integers
    assert len({tuple(row) for row in counts.tolist()}) == points  # no duplicates
    everything = {c for c in itertools.product(range(round(1 / step) + 1), repeat=runs) if sum(c) == round(1 / step)}
    assert {tuple(row) for row in counts.tolist()} == everything


def test_ranx_float_grid_loses_points_ours_does_not():
    """The issue's numbers: a float-equality filter keeps 62 of 66 points for 3 runs and 256 of 286 for 4."""
    values = [round(x, 1) for x in np.arange(0, 1.1, 0.1)]
    for runs, expected, kept in ((3, 66, 62), (4, 286, 256)):
        float_grid = [c for c in itertools.product(values, repeat=runs) if sum(c) == 1.0]
        assert len(float_grid) == kept
        assert len(grid_weights(runs, 0.1)) == expected


@pytest.mark.parametrize("step", [0.3, 0, 1.5, -0.1])
def test_grid_step_must_divide_one(step):
    with pytest.raises(ConventionError, match="'step' parameter of the weight grid"):
        grid_weights(2, step)


# --------------------------------------------------------------------------------------- the search
def _data():
    """Three queries; run A finds the relevant document of q1 and q2, run B the one of q3."""
    a = {
        "q1": {"r1": 3.0, "x": 2.0, "y": 1.0},
        "q2": {"r2": 3.0, "x": 2.0, "y": 1.0},
        "q3": {"x": 3.0, "y": 2.0, "r3": 1.0},
        "q4": {"x": 3.0, "r4": 2.0},
    }
    b = {
        "q1": {"x": 3.0, "y": 2.0, "r1": 1.0},
        "q2": {"x": 3.0, "r2": 2.0, "y": 1.0},
        "q3": {"r3": 3.0, "x": 2.0, "y": 1.0},
        "q4": {"r4": 3.0, "x": 1.0},
    }
    qrels = {"q1": {"r1": 1}, "q2": {"r2": 1}, "q3": {"r3": 1}, "q4": {"r4": 1}}
    return [a, b], qrels


def test_grid_search_finds_the_best_weights_and_reports_every_trial():
    runs, qrels = _data()
    report = optimize(runs, qrels, "wsum", metric="mrr", step=0.1)
    assert len(report.trials) == 11
    best = max(score for _, score in report.trials)
    assert report.train_score == best
    # The chosen weights give the reported score when fused directly.
    direct = evaluate(qrels, fuse(runs, report.method), ["mrr"], missing="skip").means
    assert next(iter(direct.values()))["mrr"] == pytest.approx(best)
    assert report.run.fusion["optimization"]["search"].startswith("grid (step 0.1, 11 points)")


def test_ties_go_to_the_weights_closest_to_uniform():
    runs = [{"q": {"r": 2.0, "x": 1.0}}, {"q": {"r": 2.0, "x": 1.0}}]  # every weight vector is perfect
    report = optimize(runs, {"q": {"r": 1}}, "wsum", metric="mrr", step=0.25)
    assert report.method.param("weights") == (0.5, 0.5)


def test_coordinate_ascent_reaches_the_grid_optimum_on_a_small_case():
    runs, qrels = _data()
    grid = optimize(runs, qrels, "wsum", metric="mrr", step=0.1, search="grid")
    ascent = optimize(runs, qrels, "wsum", metric="mrr", step=0.1, search="coordinate")
    assert ascent.train_score == pytest.approx(grid.train_score)
    assert ascent.search.startswith("coordinate ascent")


def test_auto_search_switches_to_coordinate_ascent_for_many_runs():
    runs, qrels = _data()
    many = runs * 3  # six runs: C(15, 5) = 3003 grid points
    report = optimize(many, qrels, "rrf", metric="mrr", step=0.1, max_rounds=1)
    assert report.search.startswith("coordinate ascent")


def test_cross_validation_reports_each_fold_and_the_held_out_score():
    runs, qrels = _data()
    report = optimize(runs, qrels, "wsum", metric="mrr", step=0.1, folds=2, seed=3)
    assert len(report.folds) == 2
    assert sum(f.test_queries for f in report.folds) == 4
    assert all(f.train_queries == 2 for f in report.folds)
    # The held-out score is the metric of the cross-validated run.
    measured = evaluate(qrels, report.run, ["mrr"], missing="skip").runs[0].means["mrr"]
    assert report.held_out_score == pytest.approx(measured)
    # Each query was fused by the weights of the fold that held it out.
    text = render(report)
    assert "held-out mrr over all folds" in text and "fold" in text
    assert report.run.fusion["optimization"]["folds"][0]["weights"] is not None
    for fold in report.folds:
        fused = fuse(runs, fold.method).to_dict()
        held = report.run.to_dict()
        for q in held:
            if fused[q] == held[q]:
                break
        else:
            pytest.fail(f"no query carries the weights of fold {fold.fold}")


def test_each_folds_scores_are_means_over_that_folds_queries():
    """A fold's train and held-out scores average over its own queries (the others are not counted as 0)."""
    runs, qrels = _data()
    report = optimize(runs, qrels, "wsum", metric="mrr", step=0.1, folds=2, seed=3)
    per_query = evaluate(qrels, report.run, ["mrr"], missing="skip").per_query()[report.run.name]["mrr"]
    held_out = []
    for fold in report.folds:
        queries = [q for q in per_query if fuse(runs, fold.method).to_dict()[q] == report.run.to_dict()[q]]
        assert fold.test_queries == 2
        held_out.append(fold.test_score)
        assert 0.0 <= fold.train_score <= 1.0 and 0.0 <= fold.test_score <= 1.0
        assert queries  # the fold's weights fused some queries of the returned run
    # With folds of equal size, the held-out mean over all queries is the mean of the folds' held-out means.
    assert report.held_out_score == pytest.approx(sum(held_out) / len(held_out))
    # A fused run lists only the queries it has results for.
    fold_table = build_table(runs, norm="minmax").take(np.array([0, 1, 2]))
    fold_run = fold_table.to_run(np.array([3.0, 2.0, 1.0]), name="fold")
    assert list(fold_run.query_ids) == ["q1"]


def test_folds_are_seeded_and_deterministic():
    runs, qrels = _data()
    first = optimize(runs, qrels, "wsum", metric="mrr", step=0.5, folds=2, seed=1).describe()
    second = optimize(runs, qrels, "wsum", metric="mrr", step=0.5, folds=2, seed=1).describe()
    assert first == second


def test_supervised_method_is_trained_per_fold():
    runs, qrels = _data()
    report = optimize(runs, qrels, "posfuse", metric="mrr", folds=2)
    assert report.search == "trained"
    assert report.run.fusion["trained"]["parameters"]["probs"]
    assert len(report.folds) == 2


def test_position_probabilities_use_only_training_queries():
    runs, qrels = _data()
    table = build_table(runs, norm="none")
    judged = judge(table, read_qrels(qrels))
    only_q1 = table.query_ids == "q1"
    probs = position_probs(table, judged, only_q1)
    assert probs[0].tolist() == [1.0, 0.0, 0.0]  # run A has q1's relevant document at rank 1
    assert probs[1].tolist() == [0.0, 0.0, 1.0]


def test_optimize_refuses_what_it_cannot_tune():
    runs, qrels = _data()
    with pytest.raises(StagewiseError, match="has no weights to tune"):
        optimize(runs, qrels, "combsum")
    with pytest.raises(ConventionError, match="'folds' parameter of optimize must be at most the 4 judged"):
        optimize(runs, qrels, "wsum", folds=5)
    with pytest.raises(ConventionError, match="unknown search"):
        optimize(runs, qrels, "wsum", search="random")
    with pytest.raises(StagewiseError, match="no fused query has judgements"):
        optimize(runs, {"other": {"x": 1}}, "wsum")
    from stagewise.errors import MetricError

    with pytest.raises(MetricError):
        optimize(runs, qrels, "wsum", metric="ndcg@@")


def test_progress_is_reported():
    runs, qrels = _data()
    seen = []
    optimize(runs, qrels, "wsum", metric="mrr", step=0.5, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (3, 3)


def test_optimize_measures_under_the_chosen_tie_convention():
    """Fused scores 0.1 + 1e-12 and 0.1 tie as C floats (doc id "b" first: RR 0.5) and differ as doubles (RR 1)."""
    runs = [{"q": {"a": 0.1 + 1e-12, "b": 0.1}}, {"q": {"a": 0.1 + 1e-12, "b": 0.1}}]
    qrels = {"q": {"a": 1}}
    single = optimize(runs, qrels, "wsum", norm="none", metric="mrr", step=0.5)
    double = optimize(runs, qrels, "wsum", norm="none", metric="mrr", step=0.5, ties="docid-double")
    assert single.train_score == 0.5
    assert double.train_score == 1.0
    assert double.run.fusion["optimization"]["ties"] == "docid-double"
