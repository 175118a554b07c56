"""Significance tests of the benchmark (paper App. C.5): paired tests against each baseline, Friedman and the
Nemenyi critical difference over average ranks (Demsar, 2006)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
from scipy import stats

logger = logging.getLogger(__name__)


def paired_tests(wide: pd.DataFrame, reference: str, baselines: list[str] | None = None) -> pd.DataFrame:
    """One-sided paired t-test and Wilcoxon signed-rank test of ``reference`` > each baseline.

    Parameters
    ----------
    wide : DataFrame
        ``datasets x methods`` scores (e.g. ARI), NaN where a run failed.
    reference : str
        The method tested for being better (TabClustPFN).
    baselines : list of str, optional
        Methods to compare against; default every other column.

    Returns
    -------
    DataFrame
        One row per baseline: ``n`` (datasets where both runs succeeded; the others are left out of the pair),
        ``mean_diff``, ``median_diff`` of ``reference - baseline``, ``win_rate`` (share of positive differences),
        ``t_stat``, ``t_p``, ``wilcoxon_stat``, ``wilcoxon_p``. A p-value is NaN when the test is undefined
        (fewer than 2 pairs, or every difference is zero).
    """
    if reference not in wide.columns:
        raise ValueError(f"reference method {reference!r} is not among the results ({list(wide.columns)})")
    baselines = [m for m in (baselines or list(wide.columns)) if m != reference]
    rows = []
    for base in baselines:
        pair = wide[[reference, base]].dropna()
        diff = (pair[reference] - pair[base]).to_numpy(dtype=float)
        row = {"baseline": base, "n": len(diff), "mean_diff": np.nan, "median_diff": np.nan, "win_rate": np.nan,
               "t_stat": np.nan, "t_p": np.nan, "wilcoxon_stat": np.nan, "wilcoxon_p": np.nan}
        if len(diff):
            row.update(mean_diff=float(diff.mean()), median_diff=float(np.median(diff)),
                       win_rate=float((diff > 0).mean()))
        if len(diff) >= 2 and np.any(diff != 0):
            t = stats.ttest_rel(pair[reference], pair[base], alternative="greater")
            row.update(t_stat=float(t.statistic), t_p=float(t.pvalue))
            w = stats.wilcoxon(diff, alternative="greater")
            row.update(wilcoxon_stat=float(w.statistic), wilcoxon_p=float(w.pvalue))
        rows.append(row)
    return pd.DataFrame(rows)


def friedman_test(ranks: pd.DataFrame) -> tuple[float, float]:
    """Friedman chi-square statistic and p-value over a ``datasets x methods`` rank table (>= 3 methods)."""
    if ranks.shape[1] < 3 or ranks.shape[0] < 2:
        return float("nan"), float("nan")
    res = stats.friedmanchisquare(*(ranks[c].to_numpy(dtype=float) for c in ranks.columns))
    return float(res.statistic), float(res.pvalue)


def nemenyi_q(n_methods: int, alpha: float = 0.05) -> float:
    """Critical value q_alpha of the Nemenyi test: the studentized range quantile over sqrt(2)."""
    if n_methods < 2:
        raise ValueError(f"the Nemenyi test needs at least 2 methods, got {n_methods}")
    return float(stats.studentized_range.ppf(1.0 - alpha, n_methods, np.inf) / math.sqrt(2.0))


def nemenyi_critical_difference(n_methods: int, n_datasets: int, alpha: float = 0.05) -> float:
    """Critical difference of average ranks, ``q_alpha * sqrt(k (k + 1) / (6 N))`` for k methods, N datasets."""
    if n_datasets < 1:
        raise ValueError("the critical difference needs at least one dataset")
    k = n_methods
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n_datasets))


def cd_groups(avg_ranks: pd.Series, cd: float) -> list[list[str]]:
    """Maximal groups of methods whose average ranks lie within ``cd`` of each other (the CD diagram's bars).

    Groups are listed best first; a method that differs significantly from all others appears in none.
    """
    order = avg_ranks.sort_values()
    names, values = list(order.index), order.to_numpy(dtype=float)
    groups: list[list[str]] = []
    last_end = -1
    for i in range(len(values)):
        j = i
        while j + 1 < len(values) and values[j + 1] - values[i] <= cd:
            j += 1
        if j > i and j > last_end:
            groups.append(names[i : j + 1])
            last_end = j
    return groups


def significance_summary(wide_ari: pd.DataFrame, ranks: pd.DataFrame, reference: str,
                         alpha: float = 0.05) -> dict:
    """Everything the report needs about significance: paired tests, average ranks, Friedman, Nemenyi CD."""
    avg = ranks.mean(axis=0).sort_values()
    cd = nemenyi_critical_difference(ranks.shape[1], ranks.shape[0], alpha) if ranks.shape[1] >= 2 else float("nan")
    chi2, p = friedman_test(ranks)
    return {
        "paired": paired_tests(wide_ari, reference) if reference in wide_ari.columns else pd.DataFrame(),
        "average_ranks": avg,
        "friedman_stat": chi2,
        "friedman_p": p,
        "cd": cd,
        "cd_groups": cd_groups(avg, cd) if np.isfinite(cd) else [],
        "alpha": alpha,
        "n_datasets": int(ranks.shape[0]),
    }
