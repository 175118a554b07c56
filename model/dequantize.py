"""Columns of a few levels spread over their cells: ordinal scores, rounded measurements and counts made continuous.

A numeric column that takes only a few values (a 1-5 score, a count, a length rounded to the centimetre, a 0/1
flag coded as a number) puts its rows on a few points; several such columns put them on a lattice, and the
network, trained on continuous columns, reads the lattice's points as clusters of their own (a 4-column table of
1-5 levels with 3 classes came out K = 6-7). :func:`dequantize` replaces each value by a uniform draw over its
level's cell (half-way to the next level on either side; an end level's cell as wide as its one neighbour's gap),
the standard dequantisation of discrete data: the column's order and its levels' frequencies stay, the lattice
and the gaps between levels go. It runs on the table as given, before the preprocessing (so the noise screening
sees the spread columns too). The draws come from a fixed seed: the same table gives the same answer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: A numeric column with 2 to this many distinct values (and at most ``MAX_LEVEL_SHARE`` of its rows) is spread.
MAX_LEVELS = 20
MAX_LEVEL_SHARE = 0.2
#: The draws' seed: fixed, so that a table's answer does not depend on ``random_state``.
SEED = 0
#: ``TabClustPFN(dequantize=)``'s default: off. Chosen on development data and confirmed on a fresh draw of it
#: (``docs/results/choice-dequantize*.md``), it lost on the real and OpenML test suites in its one report
#: (``docs/results/evaluation-test-dequantize.md``); docs/DESIGN.md says why it is not shipped.
DEFAULT_DEQUANTIZE = False


def _numeric(series: pd.Series) -> bool:
    return (not isinstance(series.dtype, pd.CategoricalDtype) and pd.api.types.is_numeric_dtype(series.dtype)
            and not pd.api.types.is_bool_dtype(series.dtype))


def spread_values(values: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """``values`` (one column, NaN missing) with each present value drawn uniformly over its level's cell, or None
    where the column is not one of few levels (2..``MAX_LEVELS`` distinct values, at most ``MAX_LEVEL_SHARE`` of its
    present rows)."""
    present = np.isfinite(values)
    levels, index = np.unique(values[present], return_inverse=True)
    if not 2 <= len(levels) <= min(MAX_LEVELS, MAX_LEVEL_SHARE * present.sum()):
        return None
    gaps = np.diff(levels)
    below = np.r_[gaps[0], gaps] / 2.0
    above = np.r_[gaps, gaps[-1]] / 2.0
    new = values.copy()
    new[present] += rng.uniform(-below[index], above[index])
    return new


def dequantize(frame: pd.DataFrame) -> tuple[pd.DataFrame, list]:
    """``frame`` with every numeric column of 2..``MAX_LEVELS`` distinct values (at most ``MAX_LEVEL_SHARE`` of its
    non-missing rows) spread over its levels' cells, missing values left missing -> (new frame, those columns'
    names). Other columns (categorical, bool, text, continuous) are returned as they are."""
    rng = np.random.default_rng(SEED)
    out, spread = frame, []
    for name in frame.columns:
        series = frame[name]
        if not _numeric(series):
            continue
        new = spread_values(series.to_numpy(dtype=np.float64, na_value=np.nan), rng)
        if new is None:
            continue
        if not spread:
            out = frame.copy()
        out[name] = new
        spread.append(name)
    return out, spread


def dequantize_rows(X: np.ndarray, columns: np.ndarray, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``X`` (n, P) with each of ``columns`` (bool (P,): numeric design columns, not one-hot codes) that
    has few levels spread over its levels' cells, as :func:`dequantize` spreads a frame's -> (new rows, bool (P,):
    the columns spread). The same rows and ``seed`` always get the same draws."""
    rng = np.random.default_rng(seed)
    out, spread = np.array(X, dtype=np.float64), np.zeros(X.shape[1], bool)
    for j in np.flatnonzero(columns):
        new = spread_values(out[:, j], rng)
        if new is not None:
            out[:, j], spread[j] = new, True
    return out, spread
