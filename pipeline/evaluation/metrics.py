"""Per-run scores and per-dataset aggregates of the evaluation benchmark.

Results live in a long table with one row per (method, dataset) and at least the columns ``dataset``,
``method``, ``ari``, ``nmi``, ``k_true`` and ``k_pred``; a failed run (error or timeout) has NaN scores.
"Wide" tables are ``datasets x methods`` pivots of one metric.

Failed runs are handled the same way everywhere:

* ranks: a failed run is ranked below every successful run of that dataset; several failed runs share the
  remaining places (their average), like any other tie. A method that crashes or times out therefore loses
  rank instead of silently dropping a hard dataset from its record.
* medians and IQRs of raw scores: failed runs are left out (the number of failures is reported separately).
* win rates: a failed run loses to every successful one; two failed runs are a tie (no win for either).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import rankdata
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

#: Difficulty thresholds on the best ARI any method reaches on a dataset (paper App. C.1).
LOW_DIFFICULTY_MIN_ARI = 0.4
HIGH_DIFFICULTY_MIN_ARI = 0.1


def clustering_scores(y_true: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """ARI and NMI of a partition ``labels`` (N,) against ground truth ``y_true`` (N,).

    Noise labels (-1, from DBSCAN/HDBSCAN/OPTICS) count as one more cluster, as in scikit-learn.
    """
    y_true = np.asarray(y_true)
    labels = np.asarray(labels)
    if y_true.shape != labels.shape:
        raise ValueError(f"y_true has shape {y_true.shape} but labels has shape {labels.shape}")
    return {
        "ari": float(adjusted_rand_score(y_true, labels)),
        "nmi": float(normalized_mutual_info_score(y_true, labels)),
    }


def n_found_clusters(labels: np.ndarray) -> int:
    """Number of clusters in a partition, not counting the noise label -1."""
    found = np.unique(np.asarray(labels))
    return int(np.count_nonzero(found != -1))


def to_wide(results: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Pivot the long results to a ``datasets x methods`` table of ``metric`` (NaN where a run failed)."""
    wide = results.set_index(["dataset", "method"])[metric].astype(float).unstack("method")
    wide.columns.name = None
    return wide


def rank_rows(wide: pd.DataFrame, *, higher_is_better: bool = True) -> pd.DataFrame:
    """Rank the methods within each dataset (row): 1 is best, ties share their average rank.

    NaN (a failed run) ranks below every finite value of its row; several NaNs tie with each other.
    """
    values = wide.to_numpy(dtype=float)
    signed = -values if higher_is_better else values.copy()
    signed[np.isnan(signed)] = np.inf
    ranks = rankdata(signed, method="average", axis=1)
    return pd.DataFrame(ranks, index=wide.index, columns=wide.columns)


def median_iqr(values: pd.Series | np.ndarray) -> tuple[float, float]:
    """Median and interquartile range (Q3 - Q1) of the finite entries; (nan, nan) when there are none."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return float("nan"), float("nan")
    q1, med, q3 = np.percentile(arr, [25, 50, 75])
    return float(med), float(q3 - q1)


def _short_number(value: float) -> str:
    """A rank or a count: whole numbers as integers, anything else with at most 2 decimals (4.5, 3.38)."""
    return f"{round(value, 2) + 0.0:.15g}"


def format_median_iqr(values: pd.Series | np.ndarray, digits: int = 4) -> str:
    """``"median [IQR]"`` with ``digits`` decimals, ``"-"`` when nothing is finite.

    ``digits=0`` is for ranks and counts: whole values print as integers, and a value between two (the median
    of an even number of datasets, tied ranks) keeps up to 2 decimals instead of being rounded away.
    """
    med, iqr = median_iqr(values)
    if np.isnan(med):
        return "-"
    if digits == 0:
        return f"{_short_number(med)} [{_short_number(iqr)}]"
    return f"{med:.{digits}f} [{iqr:.2f}]"


def k_abs_error(results: pd.DataFrame) -> pd.Series:
    """|K_pred - K_true| per run (NaN for a failed run or one without a predicted K)."""
    return (results["k_pred"].astype(float) - results["k_true"].astype(float)).abs()


def difficulty_levels(wide_ari: pd.DataFrame) -> pd.Series:
    """Difficulty of each dataset from the best ARI over methods: ``"low"`` (>= 0.4), ``"high"`` (0.1-0.4)
    or ``"excluded"`` (< 0.1, or every run failed)."""
    best = wide_ari.max(axis=1, skipna=True)
    level = np.where(
        best >= LOW_DIFFICULTY_MIN_ARI,
        "low",
        np.where(best >= HIGH_DIFFICULTY_MIN_ARI, "high", "excluded"),
    )
    return pd.Series(level, index=wide_ari.index, name="difficulty")


def win_rate_matrix(wide: pd.DataFrame, *, higher_is_better: bool = True) -> pd.DataFrame:
    """Share of datasets on which the row method scores strictly better than the column method.

    The diagonal is NaN. A failed run (NaN) loses to every finite score; two failed runs are a tie.
    """
    values = wide.to_numpy(dtype=float)
    signed = values if higher_is_better else -values
    signed = np.where(np.isnan(signed), -np.inf, signed)
    wins = (signed[:, :, None] > signed[:, None, :]).mean(axis=0)  # (methods, methods)
    np.fill_diagonal(wins, np.nan)
    return pd.DataFrame(wins, index=wide.columns, columns=wide.columns)
