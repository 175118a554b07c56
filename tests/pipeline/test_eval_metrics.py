"""Evaluation metrics and rankings against hand-computed small cases (ties, failed runs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.evaluation import metrics


def _long(table: dict[str, dict[str, float]], metric: str = "ari") -> pd.DataFrame:
    rows = [{"dataset": d, "method": m, metric: v} for m, col in table.items() for d, v in col.items()]
    return pd.DataFrame(rows)


def test_scores_match_sklearn_and_noise_is_a_cluster():
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    y = np.array([0, 0, 1, 1, 2, 2])
    pred = np.array([1, 1, 0, 0, -1, -1])
    s = metrics.clustering_scores(y, pred)
    assert s["ari"] == pytest.approx(1.0) and s["nmi"] == pytest.approx(1.0)
    pred2 = np.array([0, 0, 0, 1, 1, -1])
    assert metrics.clustering_scores(y, pred2)["ari"] == pytest.approx(adjusted_rand_score(y, pred2))
    assert metrics.clustering_scores(y, pred2)["nmi"] == pytest.approx(normalized_mutual_info_score(y, pred2))
    assert metrics.n_found_clusters(np.array([-1, -1, 0, 3, 3])) == 2
    with pytest.raises(ValueError, match="shape"):
        metrics.clustering_scores(y, pred[:3])


def test_ranks_average_ties_and_put_failed_runs_last():
    wide = metrics.to_wide(_long({"A": {"d1": 0.9, "d2": 0.5},
                                  "B": {"d1": 0.9, "d2": np.nan},
                                  "C": {"d1": 0.1, "d2": 0.7},
                                  "D": {"d1": np.nan, "d2": np.nan}}), "ari")
    ranks = metrics.rank_rows(wide)
    # d1: A and B tie for first (1.5 each), C third, D failed -> last (4)
    assert ranks.loc["d1"].to_dict() == {"A": 1.5, "B": 1.5, "C": 3.0, "D": 4.0}
    # d2: C first, A second, B and D both failed -> share places 3 and 4
    assert ranks.loc["d2"].to_dict() == {"A": 2.0, "B": 3.5, "C": 1.0, "D": 3.5}
    lower = metrics.rank_rows(wide, higher_is_better=False)
    assert lower.loc["d1"].to_dict() == {"A": 2.5, "B": 2.5, "C": 1.0, "D": 4.0}


def test_to_wide_refuses_duplicate_runs():
    df = pd.DataFrame({"dataset": ["d", "d"], "method": ["A", "A"], "ari": [0.1, 0.2]})
    with pytest.raises(ValueError):
        metrics.to_wide(df, "ari")


def test_median_iqr_skips_nan_and_formats():
    med, iqr = metrics.median_iqr([1.0, 2.0, 3.0, 4.0, np.nan])
    assert med == 2.5 and iqr == pytest.approx(3.25 - 1.75)
    assert np.isnan(metrics.median_iqr([np.nan])[0])
    assert metrics.format_median_iqr([1.0, 2.0, 3.0, 4.0, 5.0], 0) == "3 [2]"
    assert metrics.format_median_iqr([0.5, 0.25], 2) == "0.38 [0.12]"
    assert metrics.format_median_iqr([np.nan]) == "-"


def test_rank_median_between_two_ranks_is_shown_not_rounded():
    # an even number of datasets or tied ranks put the median (or IQR) between whole ranks; printing it with
    # "{:.0f}" rounded half to even: 4.5 -> "4" but 9.5 -> "10", and an IQR of 0.25 -> "0"
    assert metrics.format_median_iqr([4.0, 5.0], 0) == "4.5 [0.5]"
    assert metrics.format_median_iqr([9.0, 10.0], 0) == "9.5 [0.5]"
    assert metrics.format_median_iqr([1.0, 1.5, 1.0], 0) == "1 [0.25]"
    assert metrics.format_median_iqr([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], 0) == "4.5 [3.5]"
    assert metrics.format_median_iqr([0.0, 0.0, 0.0], 0) == "0 [0]"
    assert metrics.format_median_iqr([3.0, 3.375, 3.75], 0) == "3.38 [0.38]"  # 2 decimals at most


def test_k_abs_error_is_nan_for_failed_runs():
    df = pd.DataFrame({"k_true": [3, 3, 5], "k_pred": [5, np.nan, 2]})
    np.testing.assert_array_equal(metrics.k_abs_error(df).to_numpy(), [2.0, np.nan, 3.0])


def test_difficulty_uses_the_best_method_and_paper_thresholds():
    wide = pd.DataFrame({"A": [0.40, 0.39, 0.05, np.nan, 0.10], "B": [0.0, 0.2, 0.099, np.nan, np.nan]},
                        index=["d1", "d2", "d3", "d4", "d5"])
    assert metrics.difficulty_levels(wide).to_dict() == {
        "d1": "low", "d2": "high", "d3": "excluded", "d4": "excluded", "d5": "high"}


def test_win_rate_counts_strict_wins_and_failures_lose():
    wide = pd.DataFrame({"A": [0.9, 0.5, np.nan, 0.3], "B": [0.1, 0.5, 0.2, np.nan], "C": [np.nan] * 4})
    w = metrics.win_rate_matrix(wide)
    assert np.isnan(w.loc["A", "A"])
    assert w.loc["A", "B"] == pytest.approx(2 / 4)  # d1 win, d2 tie, d3 A failed, d4 B failed
    assert w.loc["B", "A"] == pytest.approx(1 / 4)
    assert w.loc["A", "C"] == pytest.approx(3 / 4) and w.loc["C", "A"] == 0.0
