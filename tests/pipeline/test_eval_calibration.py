"""Calibration of the probabilities over K: the smallest high-mass prediction set and its empirical coverage, and
how the calibrated K ranker's probabilities are scored on a suite."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.evaluation.calibration import (ALPHAS, calibration_seeds, coverage_table, k_probability_scores,
                                             k_probability_table, prediction_set)
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


def test_k_probability_scores_read_the_top_choice_the_labelled_k_and_the_80_percent_set():
    s = k_probability_scores({2: 0.5, 3: 0.25, 4: 0.15, 5: 0.1}, 4)
    assert s == {"k_top_probability": 0.5, "k_true_probability": 0.15, "k_set_holds": 1.0, "k_set_size": 3.0}
    assert k_probability_scores({2: 0.9, 3: 0.1}, 3)["k_set_holds"] == 0.0  # the 80 % set is {2}
    assert k_probability_scores({2: 0.9, 3: 0.1}, 12)["k_true_probability"] == 0.0  # a K it cannot give
    assert all(np.isnan(v) for v in k_probability_scores(None, 3).values())


def test_k_probability_table_scores_only_the_method_that_gave_probabilities():
    rows = pd.DataFrame({"method": ["TabClustPFN"] * 4 + ["KMeans+"],
                         "k_pred": [2, 3, 2, 5, 2], "k_true": [2, 3, 4, 4, 2],
                         "k_top_probability": [0.9, 0.7, 0.6, 0.4, np.nan],
                         "k_set_holds": [1.0, 1.0, 0.0, 1.0, np.nan], "k_set_size": [1.0, 2.0, 1.0, 3.0, np.nan]})
    t = k_probability_table(rows, "TabClustPFN").iloc[0]
    assert t["datasets"] == 4 and t["top K right"] == 0.5 and np.isclose(t["its mean probability"], 0.65)
    # bins: 0.9 right (0.1 off), 0.7 right (0.3 off), 0.6 wrong (0.6 off), 0.4 wrong (0.4 off), a quarter each
    assert np.isclose(t["ECE"], (0.1 + 0.3 + 0.6 + 0.4) / 4)
    assert t["80 % set holds K"] == 0.75 and t["80 % set size"] == 1.75
    assert k_probability_table(rows, "KMeans+") is None
    assert k_probability_table(rows.drop(columns="k_top_probability"), "TabClustPFN") is None
