"""Significance tests and the Nemenyi critical difference on constructed examples with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pipeline.evaluation import stats
from pipeline.evaluation.metrics import rank_rows


def test_paired_tests_match_hand_computed_values():
    # differences ref - base = 1, 2, 3, 4, 5 (scaled by 0.01)
    base = np.array([0.10, 0.20, 0.30, 0.40, 0.50])
    wide = pd.DataFrame({"ref": base + 0.01 * np.arange(1, 6), "base": base})
    row = stats.paired_tests(wide, "ref").iloc[0]
    # t = mean / (sd / sqrt(n)) = 3 / (sqrt(2.5) / sqrt(5)) = 3 sqrt(2)
    assert row["t_stat"] == pytest.approx(3 * math.sqrt(2))
    # one-sided p of t = 4.2426 with 4 dof: 0.006600 (t-table)
    assert row["t_p"] == pytest.approx(0.0066, abs=5e-5)
    # Wilcoxon: all 5 differences positive, W+ = 15, exact one-sided p = 1 / 2^5
    assert row["wilcoxon_stat"] == 15.0
    assert row["wilcoxon_p"] == pytest.approx(1 / 32)
    assert row["n"] == 5 and row["win_rate"] == 1.0 and row["mean_diff"] == pytest.approx(0.03)


def test_paired_tests_drop_failed_pairs_and_handle_degenerate_cases():
    wide = pd.DataFrame({"ref": [0.5, 0.6, np.nan, 0.7], "same": [0.5, 0.6, 0.1, 0.7],
                         "b": [0.1, np.nan, 0.2, 0.3]})
    out = stats.paired_tests(wide, "ref").set_index("baseline")
    assert out.loc["same", "n"] == 3 and np.isnan(out.loc["same", "t_p"])  # all differences zero
    assert out.loc["b", "n"] == 2
    with pytest.raises(ValueError, match="reference method"):
        stats.paired_tests(wide, "missing")


def test_worse_reference_is_not_significant():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.9, 20)
    wide = pd.DataFrame({"ref": base - 0.1 + rng.normal(0, 0.02, 20), "base": base})
    row = stats.paired_tests(wide, "ref").iloc[0]
    assert row["t_p"] > 0.99 and row["wilcoxon_p"] > 0.99


def test_nemenyi_q_matches_demsar_table():
    # Demsar (2006), Table 5(a): q_0.05 for k = 2..10
    table = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
    for k, q in zip(range(2, 11), table):
        assert stats.nemenyi_q(k) == pytest.approx(q, abs=1e-3)
    assert stats.nemenyi_q(2, alpha=0.10) == pytest.approx(1.645, abs=1e-3)


def test_friedman_and_cd_on_a_constant_ordering():
    # 3 methods, 4 datasets, A always best, B second, C third
    wide = pd.DataFrame({"A": [0.9, 0.8, 0.7, 0.6], "B": [0.5, 0.4, 0.3, 0.2], "C": [0.1, 0.0, -0.1, -0.2]})
    ranks = rank_rows(wide)
    chi2, p = stats.friedman_test(ranks)
    # chi2_F = 12 N / (k (k+1)) * (sum R_j^2 - k (k+1)^2 / 4) = 4 * (14 - 12) = 8; p = exp(-4) for 2 dof
    assert chi2 == pytest.approx(8.0) and p == pytest.approx(math.exp(-4))
    cd = stats.nemenyi_critical_difference(3, 4)
    assert cd == pytest.approx(2.343 * math.sqrt(3 * 4 / 24), abs=1e-3)
    summary = stats.significance_summary(wide, ranks, "A")
    assert summary["average_ranks"].to_dict() == {"A": 1.0, "B": 2.0, "C": 3.0}
    assert summary["cd"] == pytest.approx(cd)
    assert summary["cd_groups"] == [["A", "B"], ["B", "C"]]  # 1.0 apart < CD 1.657, A-C 2.0 apart > CD


def test_cd_groups_are_maximal_and_skip_singletons():
    avg = pd.Series({"a": 1.0, "b": 1.2, "c": 1.4, "d": 3.0, "e": 5.0})
    assert stats.cd_groups(avg, 0.5) == [["a", "b", "c"]]
    assert stats.cd_groups(avg, 2.0) == [["a", "b", "c", "d"], ["d", "e"]]
    assert stats.cd_groups(avg, 0.1) == []
