"""CIN calibration: the smallest high-mass prediction set and its empirical coverage."""

from __future__ import annotations

import pytest

from pipeline.evaluation.calibration import ALPHAS, calibration_seeds, coverage_table, prediction_set
from pipeline.evaluation.suites import EVAL_SEED_BASE


def test_prediction_set_takes_most_probable_k_until_mass_reaches_alpha():
    post = {2: 0.05, 3: 0.6, 4: 0.25, 5: 0.1}
    assert prediction_set(post, 0.5) == {3}
    assert prediction_set(post, 0.85) == {3, 4}  # 0.6 + 0.25 reaches 0.85 (float rounding tolerated)
    assert prediction_set(post, 0.9) == {3, 4, 5}
    assert prediction_set(post, 0.99) == {2, 3, 4, 5}
    assert prediction_set({2: 0.5, 3: 0.5}, 0.5) == {2}  # ties go to the smaller K
    with pytest.raises(ValueError, match="alpha"):
        prediction_set(post, 0.0)


def test_coverage_table_counts_hits_per_alpha():
    posts = [{2: 0.9, 3: 0.1}, {2: 0.5, 3: 0.3, 4: 0.2}, {2: 0.1, 3: 0.1, 4: 0.8}]
    k_true = [2, 3, 2]
    table = coverage_table(posts, k_true, alphas=(0.5, 0.8, 0.95)).set_index("alpha")
    # alpha 0.5: sets {2}, {2}, {4} -> hits 1, 0, 0
    assert table.loc[0.5, "coverage"] == pytest.approx(1 / 3)
    # alpha 0.8: {2}, {2, 3}, {4} -> hits 1, 1, 0
    assert table.loc[0.8, "coverage"] == pytest.approx(2 / 3)
    assert table.loc[0.8, "mean_set_size"] == pytest.approx(4 / 3)
    # alpha 0.95: {2, 3}, {2, 3, 4}, {4, 2} (0.8 + 0.1 + 0.1, ties to smaller K) -> all hit
    assert table.loc[0.95, "coverage"] == 1.0
    assert list(coverage_table(posts, k_true)["alpha"]) == list(ALPHAS)
    with pytest.raises(ValueError):
        coverage_table(posts, [2])


def test_calibration_seeds_are_reserved_and_distinct():
    seeds = calibration_seeds(3200)
    assert len(set(seeds)) == 3200 and min(seeds) >= EVAL_SEED_BASE
