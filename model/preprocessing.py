"""Table preprocessing for TabClustPFN: a numpy array or DataFrame -> the model's ``X`` and ``cat_mask``.

Rules (fitted once on the table being clustered, then reused by ``transform`` for new rows):

* **Column types.** Numeric numpy dtypes and numeric pandas dtypes are numeric. ``bool``, ``category`` and
  pandas ``boolean`` columns are categorical. Object and string columns are inspected value by value: a column
  whose values are all numbers or numeric strings (``"1.5"``, or formatted: ``"$1,234.50"``, ``"12%"``,
  :func:`model.cells.formatted_number`, with a ``UserWarning``) is numeric; so is one whose other values are all
  missing-value markers (``"?"``, ``"NA"``, ``"-"``, ``"."``: :func:`model.cells.is_missing_marker`), those cells
  read as missing, with a ``UserWarning`` naming them (``missing_markers_``); a column of strings with any other
  non-numeric string is categorical; a column that mixes real numbers with such strings (``3.2`` and ``"low"``) is
  refused with a ``ValueError`` naming the column (cast it to ``category`` or turn the strings into NaN). Values
  that are neither numbers nor strings raise ``TypeError``; datetime and complex columns raise ``ValueError``.
* **Missing values** (NaN, None, pd.NA, the markers above, and the codes of ``missing_values``) are imputed: by the
  median of a numeric column and the most frequent category of a categorical one (``impute="median"``), or
  (``impute="neighbors"``) by the mean of that column over the ``IMPUTE_NEIGHBORS`` nearest rows of the fitted table
  that hold it, nearness measured on the z-scores of the numeric columns both rows hold (as scikit-learn's
  ``KNNImputer``; before any Yeo-Johnson transform, which then reads the completed table); with ``impute_categorical``
  (the estimator's default), in a table that has categorical columns, they count in the distance and get the nearest
  rows' most frequent category, and a column only one of two rows holds counts at its average difference instead of
  the rescaling (:func:`_neighbor_fill`). A row keeps the company of its cluster instead of joining a point mass at
  the median that can read as a cluster of its own. The fitted table's rows (a fixed subsample of at most
  ``IMPUTE_DONORS``) stay with the preprocessor, so ``transform`` imputes new rows from them. The column moments are
  those after median filling either way. ``inf`` is refused (``ValueError``).
* **Dropped columns.** Columns that are entirely missing or constant (one distinct value, or a numeric spread
  below 1e-12 of the column's largest magnitude, whatever its unit) carry no cluster information and are
  dropped, and so is a categorical column whose values are all distinct (at least ``IDENTIFIER_MIN_VALUES``: an
  identifier, such as names; with a ``UserWarning``), as no two rows share a value; if nothing remains,
  ``ValueError``.
* **Numeric columns** are z-normalised with the fitted mean and (population) standard deviation; z-scores
  beyond +-1e6 (a new row's extreme value) are clipped there. With ``clip_fences`` c (the estimator's default: 10,
  with ``fence_max_share`` 0.01), a value beyond Q1 - c IQR or Q3 + c IQR reads as that fence, in fit and
  transform, in the columns where at most that share of the fitted values lies beyond (a few gross values). A
  value written in nines (-99, 999, 999999) that two or more rows share more than ``CODE_IQRS`` IQRs beyond the
  column's quartiles (a code for a missing value?) is named in a ``UserWarning``; it is read as a value.
* **Categorical columns** become integer codes ``0..C-1`` in sorted order of the observed values (the category
  order for ``category`` columns). The encoder embeds at most ``max_categories`` codes, so a column with more
  categories keeps its ``max_categories - 1`` most frequent ones held by more than one row and pools the rest
  into an "other" code.
  In ``transform``, an unseen category maps to the "other" code when the column has one (as rare ones do), else
  to the most frequent code (the same code as a missing value) with a ``UserWarning`` naming column and values.
* **Skewed columns** (``power_transform``): each numeric column with at least ``model.power.MIN_DISTINCT``
  distinct values, a skewness beyond ``power_min_skewness`` in magnitude and one mode (``power_keep_modes``: a
  column with two modes keeps the shape its clusters give it, :func:`model.screening.multimodal`), in a table of
  more than ``power_min_width`` design columns, is Yeo-Johnson transformed at its maximum-likelihood exponent
  (:mod:`model.power`), applied to its z-scores (so the unit does not matter) and z-normalised again; the
  exponents are fitted once, and ``transform`` applies them to new rows. Columns with fewer values keep their
  spacing.
* **Pure-noise columns** (``screen_noise``): continuous columns that show no cluster structure, neither a
  second mode nor a dependence on any other column, are dropped too (listed in ``dropped_`` and ``screened_``)
  in a table where some continuous column has two modes (``"auto"``) or where any column shows structure
  (``True``) (:func:`model.screening.noise_columns`, trigger ``"modes"`` or ``"evidence"``). Tables
  with more than ``SCREEN_MAX_COLUMNS`` usable columns are not screened, and at most ``SCREEN_ROWS`` rows (a
  fixed subsample) are tested.
* **Too many features.** When more than ``max_features`` columns remain, the table is projected onto principal
  components (the paper's remedy for D > 64), with a ``UserWarning``: categorical columns are one-hot encoded,
  every column (numeric and one-hot) is z-normalised, the principal axes come from the eigendecomposition of the
  covariance (signs fixed, so the result is deterministic), and each component is scaled to unit variance, like
  the z-normalised columns seen in pretraining. The output is then all numeric. Which components:
  ``pca_components="above_noise"`` (default) keeps those whose eigenvalue exceeds the largest one that n rows of
  P independent unit-variance columns would show, (1 + sqrt(P/n))^2 (the Marchenko-Pastur edge), at least 1 and
  at most ``max_features``; ``"max_features"`` keeps the first ``max_features`` (the paper's). Scaling every kept
  component to unit variance makes the noise components as loud as the one that carries the clusters: on 200
  held-out prior tasks with D 65-128 (``benchmarks/choose_pca.py``, ``docs/results/choice-pca.md``), the default
  raised the median ARI with K inferred from 0.020 to 0.787 (+0.547 +- 0.028 task by task, better on 180); a
  floor of 2 components instead of 1 lost -0.028 +- 0.010 (a lone separating component beside a noise one).
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from model.cells import (checked_codes, classify_objects, each_distinct, is_missing_marker, read_numbers,
                         user_stacklevel, without_codes)

logger = logging.getLogger(__name__)

_CHUNK_ROWS = 65536  # rows per block in the PCA path (bounds its memory)
_MAX_Z = 1e6  # z-scores are clipped here, so that a new row's extreme value stays finite in float32
_MIN_COMPONENTS = 1  # the fewest columns the PCA path hands the network (2 lost: docs/results/choice-pca.md)
PCA_COMPONENTS = ("above_noise", "max_features")
SCREEN_MAX_COLUMNS = 128  # wider tables are not screened (0.8 s at 128 columns and 1,000 rows, 7 s at 256: the
#                          joint dependence test costs one eigendecomposition per column)
SCREEN_ROWS = 5000  # rows the screening tests, a fixed subsample of larger tables
IMPUTE = ("median", "neighbors")
CODE_IQRS = 10.0  # a value in nines several rows share this many IQRs beyond a quartile: a likely missing code
DEFAULT_IMPUTE = "neighbors"  # the estimator's default (docs/results/choice-imputation-*.md)
IMPUTE_NEIGHBORS = 5  # rows whose mean fills a missing numeric cell (impute="neighbors"; KNNImputer's default)
IMPUTE_DONORS = 2000  # rows of the fitted table kept to impute from (a fixed subsample of larger tables)
IDENTIFIER = "an identifier: every value distinct, so no two rows share one"  # a categorical column's drop reason
IDENTIFIER_MIN_VALUES = 3  # fewer distinct values: too few rows to call the column an identifier
_OTHER = object()  # a category no column holds: _encode reads it as the column's "other" code
_IMPUTE_CHUNK_ROWS = 2048  # rows with a gap imputed at once (their distances to the donors: 32 MB a matrix)


@dataclass(frozen=True)
class _Column:
    """Fitted statistics of one kept input column."""

    index: int
    name: str
    categorical: bool
    unit_center: float = 0.0  # numeric: mean after imputation, in units of ``unit``
    unit_scale: float = 1.0  # numeric: standard deviation after imputation, in units of ``unit``
    fill: float = 0.0  # numeric: median; categorical: most frequent code
    categories: tuple = ()  # categorical: kept values, code = position
    other_code: int | None = None  # categorical: code of pooled rare/unseen values, if any
    power: float | None = None  # numeric: Yeo-Johnson exponent applied to the z-scores (power_transform), if any
    power_center: float = 0.0  # numeric: mean of the transformed z-scores
    power_scale: float = 1.0  # numeric: their standard deviation
    # numeric: the column's largest magnitude. The moments are kept relative to it, so that neither a column near
    # the float64 range (x - mean overflows) nor one of subnormal numbers (mean * std underflows to 0) breaks z-scores
    unit: float = 1.0
    low: float = -np.inf  # numeric: values below are read as this (``clip_fences``), in the column's own units
    high: float = np.inf  # numeric: values above are read as this
    fenced: int = 0  # numeric: values of the fitted table read at a fence
    codes: tuple = ()  # numeric: values in nines shared far beyond the column, likely codes for a missing value
    markers: tuple = ()  # numeric: the strings among its numbers read as missing (``"?"``), as fitted
    decimal: str = "."  # numeric: the decimal mark of its numbers written as text (``"1.234,5"``: ","), as fitted

    @property
    def center(self) -> float:
        """Mean after imputation, in the column's own units."""
        return self.unit_center * self.unit

    @property
    def scale(self) -> float:
        """Standard deviation after imputation, in the column's own units (0.0 if it underflows float64)."""
        return self.unit_scale * self.unit


def _column_label(name: Any, j: int) -> str:
    return f"column {name!r}" if name != j else f"column {j}"


def as_frame(X: Any) -> pd.DataFrame:
    """Validate the shape of ``X`` (array-like or DataFrame) and view it as a DataFrame, without copying data."""
    if isinstance(X, pd.DataFrame):
        frame = X
    else:
        if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
            raise TypeError("sparse input is not supported by TabClustPFN; pass a dense array (X.toarray()).")
        if isinstance(X, pd.Series):
            raise ValueError("Expected 2D array, got a pandas Series instead. Reshape your data with "
                             "X.to_frame() if it is a single feature.")
        arr = np.asarray(X)
        if arr.dtype.kind in "US":  # a list mixing numbers and strings: keep the numbers as numbers
            arr = np.asarray(X, dtype=object)
        if arr.ndim != 2:
            if arr.ndim < 2:
                raise ValueError(f"Expected 2D array, got {arr.ndim}D array instead. Reshape your data either "
                                 "using array.reshape(-1, 1) if your data has a single feature or "
                                 "array.reshape(1, -1) if it contains a single sample.")
            raise ValueError(f"Expected a 2-D table (rows x features), got a {arr.ndim}-D array of shape "
                             f"{arr.shape}; reshape it to (n_samples, n_features).")
        if arr.dtype.kind == "c":
            raise ValueError("Complex data not supported; pass real-valued features.")
        frame = pd.DataFrame(arr, copy=False)
    if frame.shape[0] == 0:
        raise ValueError(f"empty table: X has 0 rows (shape={frame.shape}); pass at least one row (fit needs 2).")
    if frame.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s) (shape={frame.shape}) while a minimum of 1 is required.")
    return frame


def check_unique_names(X: Any) -> None:
    """Refuse a DataFrame whose column names repeat, naming them (a fitted model tells columns by name); checked
    after the table's shape, so a table too short to cluster says that first."""
    if isinstance(X, pd.DataFrame) and not X.columns.is_unique:
        twice = list(dict.fromkeys(X.columns[X.columns.duplicated()]))
        raise ValueError(f"column names {twice} occur more than once; a fitted model tells columns by name, so give "
                         "each its own (e.g. frame.columns = [f'{c}_{i}' for i, c in enumerate(frame.columns)]).")


def _finite(values: np.ndarray, label: str) -> np.ndarray:
    """A numeric column, refused if it holds inf (NaN is imputed later)."""
    if np.isinf(values).any():
        raise ValueError(f"{label} contains inf; replace infinite values with finite numbers or NaN "
                         "(NaN is imputed).")
    return values


def _numeric_block(frame: pd.DataFrame) -> np.ndarray | None:
    """The whole table as float64 (missing as NaN) when every column is plain numeric (not bool, complex or
    category), else None: such tables skip pandas' per-column access, most of the preprocessing's time."""
    for dtype in frame.dtypes:
        if (not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
                or pd.api.types.is_complex_dtype(dtype) or isinstance(dtype, pd.CategoricalDtype)):
            return None
    return frame.to_numpy(np.float64, na_value=np.nan)


def _neighbor_fill(Z: np.ndarray, absent: np.ndarray, donors: np.ndarray, codes: np.ndarray | None = None,
                   donor_codes: np.ndarray | None = None,
                   average_gaps: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Fill a table's gaps from its nearest donor rows -> (numeric, codes), copies with the gaps filled.

    ``Z`` (n, p) numeric z-scores (any value where ``absent``), ``donors`` (m, p) with NaN where missing; each absent
    cell becomes the mean of its column over the ``IMPUTE_NEIGHBORS`` donors that hold it and are nearest the row,
    by scikit-learn's ``nan_euclidean`` distance (on the columns both hold, scaled up by the number of columns over
    theirs), as its ``KNNImputer``, by matrix products over blocks of rows. With categorical ``codes`` (n, q) and
    ``donor_codes`` (m, q) (-1 where missing) the distance also counts 2 for each categorical column both hold in
    which they differ (the squared distance of two one-hot codes), a column only one of the two holds counts what
    two donors differ by there on average (instead of scaling up the columns both hold: a donor sharing one noise
    column with the row is not near it), and a missing code becomes the most frequent one among the nearest donors
    holding it (ties: the smallest code). A row sharing no column with any donor that holds the cell gets the
    donors' mean (numeric) or most frequent code; a column no donor holds keeps 0 (numeric: the fitted column's
    mean) or -1. ``average_gaps``: the average difference for a column only one row holds in a table of numeric
    columns alone too (a design alternative, ``TablePreprocessor(impute_average_gaps=)``)."""
    out = np.where(absent, 0.0, Z).astype(np.float64)
    held_d = ~np.isnan(donors)
    D0 = np.where(held_d, donors, 0.0).astype(np.float64)
    Hd, D0t, D0sq = held_d.T.astype(np.float64), np.ascontiguousarray(D0.T), np.ascontiguousarray((D0**2).T)
    given_codes = codes is not None
    if codes is None or donor_codes is None:
        codes, donor_codes = np.zeros((Z.shape[0], 0), np.int64), np.zeros((donors.shape[0], 0), np.int64)
    mixed = codes.shape[1] > 0 or average_gaps
    c_out = codes.copy()
    c_absent = codes < 0
    width = Z.shape[1] + c_absent.shape[1]
    if mixed:  # what two donors differ by in each column on average (squared; one-hot for categories)
        spread_num = 2.0 * np.nan_to_num(np.nanvar(np.where(held_d, donors, np.nan), axis=0))
        spread_cat = np.array([2.0 * (1.0 - ((np.bincount(c[c >= 0]) / max((c >= 0).sum(), 1)) ** 2).sum())
                               for c in donor_codes.T])
        total, Hd_spread = spread_num.sum() + spread_cat.sum(), Hd * spread_num[:, None]
    gappy = np.flatnonzero(absent.any(1) | c_absent.any(1))
    for start in range(0, gappy.size, _IMPUTE_CHUNK_ROWS):  # bounds the (rows x donors) distances' memory
        rows = gappy[start : start + _IMPUTE_CHUNK_ROWS]
        held_r = (~absent[rows]).astype(np.float64)
        R0 = out[rows] * held_r
        shared = held_r @ Hd  # (r, m) columns both hold
        dist = (R0**2) @ Hd + held_r @ D0sq - 2.0 * (R0 @ D0t)  # squared distance over those columns
        np.maximum(dist, 0.0, out=dist)
        if mixed:  # every column counts its average, traded for the actual difference where both hold it
            dist += total - held_r @ Hd_spread
            for j in range(c_absent.shape[1]):
                both = (codes[rows, j] >= 0)[:, None] & (donor_codes[:, j] >= 0)[None, :]
                dist += both * (2.0 * (codes[rows, j][:, None] != donor_codes[:, j][None, :]) - spread_cat[j])
        else:
            dist *= width / np.maximum(shared, 1.0)
            dist[shared == 0] = np.inf
        targets = [(c, False) for c in np.flatnonzero(absent[rows].any(0))]
        targets += [(j, True) for j in np.flatnonzero(c_absent[rows].any(0))]
        for c, categorical in targets:
            holds = donor_codes[:, c] >= 0 if categorical else held_d[:, c]
            donors_c = np.flatnonzero(holds)
            if donors_c.size == 0:
                continue
            need = np.flatnonzero(c_absent[rows, c] if categorical else absent[rows, c])
            d = dist[np.ix_(need, donors_c)]
            k = min(IMPUTE_NEIGHBORS, donors_c.size)
            nearest = np.argpartition(d, k - 1, axis=1)[:, :k] if k < donors_c.size else \
                np.broadcast_to(np.arange(donors_c.size), (need.size, k))
            counted = np.isfinite(np.take_along_axis(d, nearest, axis=1))  # a donor at no distance does not count
            if categorical:
                held_codes = donor_codes[donors_c, c]
                votes = np.zeros((need.size, int(held_codes.max()) + 1))
                np.add.at(votes, (np.repeat(np.arange(need.size), k), held_codes[nearest].ravel()),
                          counted.ravel().astype(np.float64))
                votes[counted.sum(1) == 0] = np.bincount(held_codes)  # no distance to any: the donors' mode
                c_out[rows[need], c] = votes.argmax(1)
                continue
            values = D0[donors_c, c]
            n_counted = counted.sum(1)
            out[rows[need], c] = np.where(n_counted > 0,
                                          (values[nearest] * counted).sum(1) / np.maximum(n_counted, 1),
                                          values.mean())
    return out, (c_out if given_codes else None)


def _likely_codes(present: np.ndarray, q1: float, q3: float, iqr: float, label: str) -> tuple[float, ...]:
    """The values written in nines (-99, 999, 999999) that several rows share far beyond the rest of their column
    (``CODE_IQRS`` IQRs past a quartile), named in a warning: codes for a missing value, read as values, gather their
    rows. (Far values in general are no sign: long-tailed columns of real tables have them.)"""
    far = present[(present < q1 - CODE_IQRS * iqr) | (present > q3 + CODE_IQRS * iqr)]
    if far.size < 2:
        return ()
    levels, counts = np.unique(far, return_counts=True)
    with np.errstate(invalid="ignore", over="ignore"):
        digits = [str(int(abs(v))) if float(v).is_integer() and abs(v) < 1e18 else "" for v in levels]
    shared = (counts >= 2) & np.array([len(d) >= 2 and set(d) == {"9"} for d in digits])
    if not shared.any():
        return ()
    codes = ", ".join(f"{v:g} ({c} rows)" for v, c in zip(levels[shared][:3], counts[shared][:3]))
    warnings.warn(f"{label}: {codes}{' and more' if shared.sum() > 3 else ''} lie more than {CODE_IQRS:g} IQRs "
                  "beyond the column's other values; if such a value codes a missing one, name it in missing_values "
                  "(or pass NaN instead): read as a value, it gathers its rows.", UserWarning,
                  stacklevel=user_stacklevel())
    return tuple(float(v) for v in levels[shared])


def _category_codes(categories, values: np.ndarray, missing: np.ndarray | None = None) -> np.ndarray:
    """(n,) int64: each value's position among ``categories``, -1 where it is none of them or missing (``missing``:
    ``pd.isna(values)`` where the caller has it). What ``pd.Index(categories, dtype=object).get_indexer(values)``
    gives, by a dictionary instead of an index built per call (a table of 30 categorical columns spent most of a
    transform building them)."""
    lookup = {c: i for i, c in enumerate(categories)}
    missing = pd.isna(values) if missing is None else missing
    return np.fromiter((-1 if m else lookup.get(v, -1) for v, m in zip(values, missing)), np.int64, len(values))


def _sorted_values(values: np.ndarray) -> list:
    uniq = list(pd.unique(values))
    try:
        return sorted(uniq)
    except TypeError:
        return sorted(uniq, key=repr)


def flag_cuts(Z: np.ndarray, cat_mask: np.ndarray) -> np.ndarray:
    """(D,) per numeric column of preprocessed rows ``Z`` (n, D) with exactly two values (a 0/1 flag, z-scored),
    the midpoint between them; NaN for every other column (categorical, or numeric of other than two values)."""
    cuts = np.full(Z.shape[1], np.nan)
    for j in np.flatnonzero(~np.asarray(cat_mask, bool)):
        values = np.unique(Z[:, j])
        if len(values) == 2:
            cuts[j] = float(values.mean())
    return cuts


def few_levels(Z: np.ndarray, cat_mask: np.ndarray, most: int) -> np.ndarray:
    """(D,) bool: the numeric columns of preprocessed rows ``Z`` (n, D) with 3 to ``most`` distinct values (counts,
    ratings, levels stored as numbers; a column of two is a flag, :func:`flag_cuts`). None where ``most`` < 3."""
    out = np.zeros(Z.shape[1], bool)
    if most >= 3:
        for j in np.flatnonzero(~np.asarray(cat_mask, bool)):
            out[j] = 3 <= len(np.unique(Z[:, j])) <= most
    return out


def levels_recoded(Z: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``Z`` with the columns ``columns`` (D,) bool read as codes 0..m-1 of their distinct values in order: numeric
    columns of few values as categories. ``Z`` itself where none is."""
    if not np.any(columns):
        return Z
    out = np.array(Z, np.float64, copy=True)
    for j in np.flatnonzero(columns):
        out[:, j] = np.unique(out[:, j], return_inverse=True)[1].ravel()
    return out


def flags_recoded(Z: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """``Z`` with every column that has a finite cut (:func:`flag_cuts`) read as the codes 0 / 1 (below / above its
    cut): a flag as a category of two levels. ``Z`` itself where no column has one."""
    flags = np.flatnonzero(np.isfinite(cuts))
    if not len(flags):
        return Z
    out = np.array(Z, np.float64, copy=True)
    out[:, flags] = out[:, flags] > cuts[flags]
    return out


class TablePreprocessor:
    """Fitted preprocessing from a raw table to the model's inputs (rules in the module docstring).

    Parameters
    ----------
    max_features : int, default=64
        Most columns the encoder takes; wider tables are reduced with PCA (with a warning).
    max_categories : int, default=16
        Most distinct codes per categorical column; rarer categories are pooled into an "other" code.
    pca_components : {"above_noise", "max_features"}, default="above_noise"
        Principal components kept when the table is reduced (see the module docstring).
    screen_noise : {"auto", True, False}, default=False
        Drop the continuous columns that show no cluster structure where some continuous column has two modes
        (``"auto"``) or where any column shows structure (``True``); see the module docstring.
    power_transform : bool, default=False
        Yeo-Johnson transform the skewed numeric columns of many distinct values before z-normalising them again;
        see the module docstring.
    power_min_skewness : float, default=model.power.MIN_SKEWNESS
        The skewness (in magnitude) a column must exceed to be transformed; 0: every column of many values.
    power_keep_modes : bool, default=True
        Leave a column with two modes (``model.screening.multimodal``) as it is: its asymmetry is clusters.
    power_min_width : int, default=0
        Transform only in a table of more than this many design columns (numeric columns plus categorical codes,
        before noise screening).
    screen_categorical : {False, True, "always"}, default=False
        With ``screen_noise``, drop the categorical columns independent of every other column too: where the
        continuous ones are screened (True) or wherever some column shows structure ("always");
        ``model.screening.noise_columns``'s ``categorical``.
    screen_categorical_alpha : float or None, default=None
        The level of the categorical columns' dependence tests there (None: the continuous columns').
    screen_binary : bool, default=False
        With ``screen_categorical``, a numeric column of two values (a 0/1 flag) is screened as a category too.
    screen_levels : int, default=0
        With ``screen_categorical``, a numeric column of 3 to this many distinct values (a count, a rating) is
        screened as a category too, its values the levels; 0: none.
    screen_levels_min_width : int, default=0
        Screen so (``screen_levels``) only in a table of more than this many design columns (numeric columns plus
        categorical codes, before noise screening).
    impute : {"median", "neighbors"}, default="median"
        How a missing numeric cell is filled: the column's median, or the mean over the nearest rows of the fitted
        table that hold it (see the module docstring).
    impute_categorical : bool, default=False
        With ``impute="neighbors"``, the categorical columns count in the distance too (2 per column in which two
        rows differ, as one-hot codes) and a missing category becomes the most frequent one among the nearest rows
        that hold it, instead of the column's most frequent one.
    impute_average_gaps : bool, default=False
        With ``impute="neighbors"``, a column only one of two rows holds counts at its average difference in a table
        of numeric columns too (as in one with categorical columns read), instead of ``KNNImputer``'s rescaling.
    clip_fences : float or None, default=None
        Read a numeric value beyond ``Q1 - c * IQR`` or ``Q3 + c * IQR`` of its column (c this number; the
        quartiles of the fitted table's values) as that fence, before the moments, any transform and imputation
        read it, so that a few gross values (a sentinel such as 999999, an entry error) do not set the column's
        scale; None: no fences. Columns with an IQR of 0 get none.
    fence_max_share : float or None, default=None
        With ``clip_fences``, fence only the columns where at most this share of the values (at least one value)
        lies beyond the fences: a few gross values, not a far group that may be a cluster; None: every column.
    missing_values : tuple of numbers and strings, default=()
        Codes for a missing value (``-999``, ``"unknown"``): a cell equal to one, in any column, is read as missing,
        in fit and transform (:func:`model.cells.without_codes`).

    Attributes
    ----------
    n_features_in_ : int
        Number of input columns seen in ``fit``.
    columns_ : list
        Fitted statistics of the kept columns, in input order.
    dropped_ : dict[str, str]
        Dropped input columns (label -> reason).
    screened_ : list[str]
        The columns of ``dropped_`` dropped as pure noise (``screen_noise``).
    fenced_ : dict[str, int]
        The kept numeric columns with fitted values read at a fence (``clip_fences``) -> how many.
    likely_codes_ : dict[str, list[float]]
        The kept numeric columns holding likely codes for a missing value (values in nines, see above) -> them.
    power_transformed_ : dict[str, float]
        The columns ``power_transform`` transformed -> their Yeo-Johnson exponents (empty without it).
    components_ : ndarray of shape (P, max_features) or None
        Principal axes when the PCA reduction is active (P = numeric + one-hot width), else None.
    cat_mask_ : ndarray of bool, shape (D,)
        True for output columns that hold categorical codes.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"x": [1.0, 2.0, None, 4.0], "c": ["a", "b", "a", "a"], "k": [7, 7, 7, 7]})
    >>> pre = TablePreprocessor().fit(df)
    >>> X, cat_mask = pre.transform(df)
    >>> X.shape, cat_mask.tolist(), sorted(pre.dropped_)
    ((4, 2), [False, True], ["column 'k'"])
    """

    def __init__(self, max_features: int = 64, max_categories: int = 16, pca_components: str = "above_noise",
                 screen_noise: bool | str = False, power_transform: bool = False,
                 power_min_skewness: float | None = None, power_keep_modes: bool = True,
                 power_min_width: int = 0, screen_categorical: bool | str = False,
                 screen_categorical_alpha: float | None = None, impute: str = "median",
                 impute_categorical: bool = False, impute_average_gaps: bool = False,
                 clip_fences: float | None = None, fence_max_share: float | None = None,
                 missing_values: tuple = (), screen_binary: bool = False, screen_levels: int = 0,
                 screen_levels_min_width: int = 0) -> None:
        if max_features < 1 or max_categories < 2:
            raise ValueError("max_features must be >= 1 and max_categories >= 2")
        if pca_components not in PCA_COMPONENTS:
            raise ValueError(f"pca_components must be one of {PCA_COMPONENTS}, got {pca_components!r}")
        self.max_features = max_features
        self.max_categories = max_categories
        self.pca_components = pca_components
        if not (isinstance(screen_noise, (bool, np.bool_)) or screen_noise == "auto"):
            raise ValueError(f"screen_noise must be 'auto', True or False, got {screen_noise!r}")
        self.screen_noise = screen_noise
        self.power_transform = bool(power_transform)
        if power_min_skewness is None:
            from model.power import MIN_SKEWNESS as power_min_skewness
        if not power_min_skewness >= 0:
            raise ValueError(f"power_min_skewness must be >= 0, got {power_min_skewness!r}")
        self.power_min_skewness = float(power_min_skewness)
        self.power_keep_modes = bool(power_keep_modes)
        if not (isinstance(power_min_width, (int, np.integer)) and power_min_width >= 0):
            raise ValueError(f"power_min_width must be an integer >= 0, got {power_min_width!r}")
        self.power_min_width = int(power_min_width)
        from model.screening import CATEGORICAL_SCREENING

        if screen_categorical not in CATEGORICAL_SCREENING:
            raise ValueError(f"screen_categorical must be one of {CATEGORICAL_SCREENING}, got {screen_categorical!r}")
        self.screen_categorical = screen_categorical
        self.screen_categorical_alpha = screen_categorical_alpha
        self.screen_binary = bool(screen_binary)
        if not (isinstance(screen_levels, (int, np.integer)) and screen_levels >= 0):
            raise ValueError(f"screen_levels must be an integer >= 0, got {screen_levels!r}")
        self.screen_levels = int(screen_levels)
        if not (isinstance(screen_levels_min_width, (int, np.integer)) and screen_levels_min_width >= 0):
            raise ValueError(f"screen_levels_min_width must be an integer >= 0, got {screen_levels_min_width!r}")
        self.screen_levels_min_width = int(screen_levels_min_width)
        if impute not in IMPUTE:
            raise ValueError(f"impute must be one of {IMPUTE}, got {impute!r}")
        self.impute = impute
        self.impute_categorical = bool(impute_categorical)
        self.impute_average_gaps = bool(impute_average_gaps)
        if clip_fences is not None and not clip_fences > 0:
            raise ValueError(f"clip_fences must be None or > 0, got {clip_fences!r}")
        self.clip_fences = clip_fences
        if fence_max_share is not None and not 0 <= fence_max_share <= 1:
            raise ValueError(f"fence_max_share must be None or in [0, 1], got {fence_max_share!r}")
        self.fence_max_share = fence_max_share
        self.missing_values = checked_codes(missing_values)

    def _frame(self, X: Any) -> pd.DataFrame:
        """``X`` as a DataFrame (:func:`as_frame`), its cells equal to a code of ``missing_values`` read as missing."""
        return without_codes(as_frame(X), getattr(self, "missing_values", ()))

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any) -> "TablePreprocessor":
        """Learn column types, imputation values, normalisation and (if needed) the PCA projection.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or DataFrame
            At least 2 rows.

        Returns
        -------
        self
        """
        self._fit(X)
        return self

    def _fit(self, X: Any) -> pd.DataFrame:
        """``fit``; returns the table as fitted (missing numeric cells filled where ``impute="neighbors"``)."""
        frame = self._frame(X)
        n = frame.shape[0]
        if n < 2:
            raise ValueError(f"TabClustPFN needs at least 2 rows to cluster, got n_samples={n}.")
        check_unique_names(frame)
        self.n_features_in_ = frame.shape[1]
        self.columns_: list[_Column] = []
        self.dropped_: dict[str, str] = {}
        block = _numeric_block(frame)
        for j, name in enumerate(frame.columns):
            label = _column_label(name, j)
            if block is None:
                col = self._fit_column(frame.iloc[:, j], j, label)
            else:
                col = self._fit_numeric(_finite(block[:, j], label), j, label, self.clip_fences,
                                        self.fence_max_share)
            if isinstance(col, str):
                self.dropped_[label] = col
            else:
                self.columns_.append(col)
        if self.dropped_:
            logger.info("dropped %d uninformative column(s): %s", len(self.dropped_), self.dropped_)
        if self.fenced_:
            logger.info("values read at a fence: %s", self.fenced_)
        if not self.columns_:
            raise ValueError("no usable column: every column is entirely missing, constant or an identifier "
                             f"({self.dropped_}); nothing to cluster.")
        self.components_ = None
        self.cat_mask_ = np.array([c.categorical for c in self.columns_], bool)
        # impute="neighbors": the numeric columns it reads and, as z-scores (NaN where missing), the fitted table's
        # rows it fills their missing cells from; the table is completed before anything else reads it
        neighbors = self.impute == "neighbors"
        self._imputed_columns = [c for c in self.columns_ if not c.categorical] if neighbors else []
        self._imputed_categorical = [c for c in self.columns_ if c.categorical] \
            if neighbors and self.impute_categorical else []
        self._donors = self._donor_codes = None
        if self._imputed_columns or self._imputed_categorical:
            rows = np.arange(n) if n <= IMPUTE_DONORS else \
                np.sort(np.random.default_rng(0).choice(n, IMPUTE_DONORS, replace=False))
            values, codes = self._numeric_values(frame), self._codes(frame)  # read once: donors and gaps
            self._donors, self._donor_codes = self._z(values[rows]), codes[rows]
            frame = self._complete(frame, values, codes)
        self.power_transformed_: dict[str, float] = {}
        if self.power_transform:
            self._fit_power(frame)
        self.screened_: list[str] = []
        self._screened_columns: list[_Column] = []
        self._screened_flags: set[str] = set()
        if self.screen_noise and 1 < len(self.columns_) <= SCREEN_MAX_COLUMNS:
            self._screen(frame)
        if len(self.columns_) > self.max_features:
            self._fit_pca(self._encode(frame))
        return frame

    def _fit_power(self, frame: pd.DataFrame) -> None:
        """The Yeo-Johnson exponent of every numeric column of at least ``MIN_DISTINCT`` distinct values, a
        skewness beyond ``power_min_skewness`` and (``power_keep_modes``) one mode, fitted on its z-scores, and the
        moments of the result (:mod:`model.power`)."""
        from model.power import MIN_DISTINCT, fit_lambda, skewness, transform
        from model.screening import multimodal

        z = self._encode(frame).astype(np.float64)
        if self._design_width(z) <= self.power_min_width:
            return
        for i, col in enumerate(self.columns_):
            if (col.categorical or np.unique(z[:, i]).size < MIN_DISTINCT
                    or not abs(skewness(z[:, i])) > self.power_min_skewness
                    or (self.power_keep_modes and multimodal(z[:, i]))):
                continue
            lam = fit_lambda(z[:, i])
            t = transform(z[:, i], lam)
            center, scale = float(t.mean()), float(t.std())
            if not (np.isfinite(center) and scale > 1e-12):  # nothing to standardise: the column stays as it is
                continue
            self.columns_[i] = dataclasses.replace(col, power=lam, power_center=center, power_scale=scale)
            self.power_transformed_[col.name] = lam
        if self.power_transformed_:
            logger.info("Yeo-Johnson transformed %d column(s)", len(self.power_transformed_))

    def _design_width(self, Z: np.ndarray) -> int:
        """The design columns of the encoded rows ``Z`` (the fitted columns): numeric columns plus categorical codes,
        as the estimator counts them for the BIC path."""
        from model.refinement import one_hot_widths

        return int((~self.cat_mask_).sum() + one_hot_widths(Z, self.cat_mask_).sum())

    def _screen(self, frame: pd.DataFrame) -> None:
        """Drop the pure-noise columns (:func:`model.screening.noise_columns`) from the fitted columns."""
        from model.screening import noise_columns

        if frame.shape[0] > SCREEN_ROWS:
            rows = np.sort(np.random.default_rng(0).choice(frame.shape[0], SCREEN_ROWS, replace=False))
            frame = frame.iloc[rows]
        trigger = "modes" if self.screen_noise == "auto" else "evidence"
        Z, as_category = self._encode(frame), self.cat_mask_
        if self.screen_binary and self.screen_categorical:  # a numeric flag of two values is screened as a category
            cuts = flag_cuts(Z, self.cat_mask_)
            Z, as_category = flags_recoded(Z, cuts), self.cat_mask_ | np.isfinite(cuts)
        if (self.screen_levels and self.screen_categorical  # so is a numeric column of few values, by its levels
                and self._design_width(Z) > self.screen_levels_min_width):
            levels = few_levels(Z, as_category, self.screen_levels)
            Z, as_category = levels_recoded(Z, levels), as_category | levels
        noise = noise_columns(Z, as_category, trigger=trigger,
                              categorical=self.screen_categorical, categorical_alpha=self.screen_categorical_alpha)
        if not noise.any():
            return
        self._screened_flags = {c.name for c, drop, cat, flag in zip(self.columns_, noise, self.cat_mask_, as_category)
                                if drop and flag and not cat}
        self._screened_columns = [c for c, drop in zip(self.columns_, noise) if drop]
        self.screened_ = [c.name for c in self._screened_columns]
        for name in self.screened_:
            self.dropped_[name] = "pure noise (no second mode, independent of every other column)"
        self.columns_ = [c for c, drop in zip(self.columns_, noise) if not drop]
        self.cat_mask_ = self.cat_mask_[~noise]
        logger.info("dropped %d pure-noise column(s): %s", len(self.screened_), self.screened_)

    @property
    def screened_categorical(self) -> np.ndarray:
        """(len(screened_),) bool: which screened columns are categorical (their values are category codes), or were
        screened as categories (numeric flags of two values, ``screen_binary``; of few values, ``screen_levels``)."""
        return np.array([c.categorical or c.name in self._screened_flags for c in self._screened_columns], bool)

    @property
    def fenced_(self) -> dict[str, int]:
        """The kept numeric columns with fitted values read at a fence -> how many (empty without fences)."""
        return {c.name: c.fenced for c in self.columns_ if c.fenced}

    @property
    def missing_markers_(self) -> dict[str, list[str]]:
        """The kept numeric columns whose strings among the numbers were read as missing (``"?"``, ``"NA"``, named in
        a warning at fit) -> those strings."""
        return {c.name: list(c.markers) for c in self.columns_ if c.markers}

    @property
    def likely_codes_(self) -> dict[str, list[float]]:
        """The kept numeric columns holding values in nines shared far beyond the rest (-999, 999999: codes for a
        missing value?, named in a warning at fit) -> those values."""
        return {c.name: list(c.codes) for c in self.columns_ if c.codes}

    def empty_rows(self, X: Any) -> np.ndarray:
        """(n,) bool: the rows of ``X`` with no value in any usable column (kept or screened; those dropped as
        entirely missing or constant do not count). Filling can only put such a row at the columns' centre, where
        it carries nothing about the clusters. A missing-value marker in a numeric column (``"?"``) counts as
        missing."""
        return self.absent_cells(X).all(axis=1)

    def absent_cells(self, X: Any) -> np.ndarray:
        """(n, usable columns) bool: the cells of ``X`` that filling supplies, in the usable columns (kept, then
        screened) as :meth:`empty_rows` counts them."""
        frame = self._frame(X)
        columns = [*self.columns_, *getattr(self, "_screened_columns", [])]
        absent = frame.iloc[:, [c.index for c in columns]].isna().to_numpy(copy=True)
        for i, col in enumerate(columns):
            if not col.categorical and not pd.api.types.is_numeric_dtype(frame.dtypes.iloc[col.index]):
                absent[:, i] |= each_distinct(is_missing_marker, frame.iloc[:, col.index].to_numpy(object)).astype(bool)
        return absent

    def screened_values(self, X: Any) -> np.ndarray:
        """(n, len(screened_)) float32: the screened columns of rows ``X``, z-normalised as if kept."""
        return self._encode(self._complete(self._frame(X)), self._screened_columns)

    def set_aside(self, X: Any, names: list[str], reason: str, flags: tuple[str, ...] = ()) -> "TablePreprocessor":
        """Move kept columns ``names`` among the screened ones (:meth:`readmit` puts them back), giving ``reason`` in
        ``dropped_``; ``flags``: those of them that are numeric 0/1 flags read as categories. The PCA decision is
        refitted on ``X`` (the fitted table)."""
        unknown = set(names) - {c.name for c in self.columns_}
        if unknown:
            raise ValueError(f"not kept columns: {sorted(unknown)}")
        if len(names) >= len(self.columns_):
            raise ValueError("set_aside would leave no column to cluster")
        aside = [c for c in self.columns_ if c.name in names]
        keep = np.array([c.name not in names for c in self.columns_], bool)
        self.columns_ = [c for c, k in zip(self.columns_, keep) if k]
        self.cat_mask_ = self.cat_mask_[keep]
        self._screened_columns = self._screened_columns + aside
        self._screened_flags = self._screened_flags | set(flags)
        self.screened_ = [c.name for c in self._screened_columns]
        for c in aside:
            self.dropped_[c.name] = reason
        return self._refit_pca(X)

    def readmit(self, X: Any, names: list[str]) -> "TablePreprocessor":
        """Put screened columns ``names`` back (in input order), refitting the PCA decision on ``X`` (the fitted
        table): e.g. the columns that differ between the clusters found without them
        (:func:`model.screening.associated_columns`)."""
        unknown = set(names) - set(self.screened_)
        if unknown:
            raise ValueError(f"not screened columns: {sorted(unknown)}")
        if not names:
            return self
        back = [c for c in self._screened_columns if c.name in names]
        self._screened_columns = [c for c in self._screened_columns if c.name not in names]
        self.screened_ = [c.name for c in self._screened_columns]
        for c in back:
            del self.dropped_[c.name]
        self.columns_ = sorted(self.columns_ + back, key=lambda c: c.index)
        self.cat_mask_ = np.array([c.categorical for c in self.columns_], bool)
        return self._refit_pca(X)

    def _refit_pca(self, X: Any) -> "TablePreprocessor":
        """The PCA decision made again for today's kept columns on ``X`` (the fitted table)."""
        self.components_ = None
        if len(self.columns_) > self.max_features:
            self._fit_pca(self._encode(self._complete(self._frame(X))))
        return self

    def _fit_column(self, series: pd.Series, j: int, label: str) -> _Column | str:
        categorical, values, markers, decimal = self._column_values(series, label, fitted=None)
        if categorical:
            return self._fit_categorical(series, values, j, label)
        col = self._fit_numeric(values, j, label, self.clip_fences, self.fence_max_share)
        return dataclasses.replace(col, markers=markers, decimal=decimal) if isinstance(col, _Column) else col

    @staticmethod
    def _fit_numeric(values: np.ndarray, j: int, label: str, fences: float | None = None,
                     max_share: float | None = None) -> _Column | str:
        present = values[~np.isnan(values)]
        if present.size == 0:
            return "entirely missing"
        low, high, fenced, codes = -np.inf, np.inf, 0, ()
        with np.errstate(over="ignore", invalid="ignore"):  # quartiles near the float64 range: no fences, no codes
            q1, q3 = (float(q) for q in np.quantile(present, [0.25, 0.75]))
            iqr = q3 - q1
            spread = bool(np.isfinite(iqr) and iqr > 0 and np.isfinite(CODE_IQRS * iqr))
        if spread:
            codes = _likely_codes(present, q1, q3, iqr, label)
        if fences is not None and spread and np.isfinite(fences * iqr):
            low, high = q1 - fences * iqr, q3 + fences * iqr
            beyond = int(((present < low) | (present > high)).sum())
            if max_share is not None and beyond > max(1.0, max_share * present.size):
                low, high = -np.inf, np.inf  # a far group, not a few gross values: no fences
            else:
                present = np.clip(present, low, high)
                values = np.clip(values, low, high)
                fenced = beyond
        median = float(np.median(present))
        filled = np.where(np.isnan(values), median, values).astype(np.float64)
        # the moments of the column divided by its largest magnitude: no overflow near the float64 range, and the
        # test for "constant" is relative to the column's own unit (a spread of 1e-13 in a column of 1e-13 counts)
        top = float(np.abs(filled).max())
        if not top > 0:
            return "constant"
        unit = filled / top
        mean, std = float(unit.mean()), float(unit.std())
        if not std > 1e-12:
            return "constant"
        return _Column(j, label, False, unit_center=mean, unit_scale=std, fill=median, unit=top, low=low, high=high,
                       fenced=fenced, codes=codes)

    def _fit_categorical(self, series: pd.Series, values: np.ndarray, j: int, label: str) -> _Column | str:
        missing = pd.isna(values)
        if missing.all():
            return "entirely missing"
        if isinstance(series.dtype, pd.CategoricalDtype):
            seen = set(pd.unique(values[~missing]))
            order = [c for c in series.cat.categories if c in seen]
        else:
            order = _sorted_values(values[~missing])
        if len(order) < 2:
            return "constant"
        counts = pd.Series(values[~missing]).value_counts()
        if len(order) >= IDENTIFIER_MIN_VALUES and int(counts.max()) == 1:
            warnings.warn(f"{label} is dropped: every one of its {len(order)} values is distinct (an identifier), so "
                          "it cannot group rows; drop it yourself to silence this.", UserWarning,
                          stacklevel=user_stacklevel())
            return IDENTIFIER
        other = None
        if len(order) > self.max_categories:  # keep the most frequent, pool the rest
            ranked = sorted(order, key=lambda v: -int(counts[v]))  # stable: ties keep sorted order
            # a category of one row groups no rows: it joins the pool rather than take a code of its own
            keep = {v for v in ranked[: self.max_categories - 1] if int(counts[v]) > 1}
            order = [v for v in order if v in keep]
            other = len(order)
            logger.info("%s has %d categories; pooling the rarest into one code", label, len(counts))
        codes = _category_codes(order, values, missing)
        codes = np.where((codes < 0) & ~missing, other if other is not None else -1, codes)
        fill = int(np.bincount(codes[codes >= 0]).argmax())
        return _Column(j, label, True, fill=fill, categories=tuple(order), other_code=other)

    def _column_values(self, series: pd.Series, label: str, fitted: _Column | None
                       ) -> tuple[bool, np.ndarray, tuple[str, ...], str]:
        """One input column -> (categorical?, values, markers, decimal): float64 for numeric (a missing-value marker
        among numbers as NaN, :func:`model.cells.is_missing_marker`), object array for categorical; ``markers``: the
        strings read as missing (found at fit only); ``decimal``: the decimal mark of numbers written as text.

        With ``fitted`` (transform), the fitted type and decimal mark are imposed instead of inferred.
        """
        dtype = series.dtype
        markers: tuple[str, ...] = ()
        decimal = "." if fitted is None else fitted.decimal
        if fitted is not None and fitted.categorical:
            return True, series.to_numpy(object), markers, decimal
        if pd.api.types.is_complex_dtype(dtype):
            raise ValueError(f"{label}: Complex data not supported; pass real-valued features.")
        if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype):
            if fitted is None:
                return True, series.to_numpy(object), markers, decimal
            values = self._parse_numeric(series.to_numpy(object), label, decimal)
        elif pd.api.types.is_numeric_dtype(dtype):
            values = series.to_numpy(np.float64, na_value=np.nan)
        elif pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
            values = series.to_numpy(object)
            if fitted is not None:
                values = self._parse_numeric(values, label, decimal)
            else:
                categorical, values, markers, decimal = classify_objects(values, label)
                if categorical:
                    return True, values, markers, decimal
        elif pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
            kind = "dates" if pd.api.types.is_datetime64_any_dtype(dtype) else "durations"
            raise ValueError(f"{label} holds {kind} ({dtype}), which have no scale to cluster on; drop it, or turn it "
                             f"into numbers of the unit that matters (e.g. days: (x - x.min()) / pd.Timedelta(days=1)) "
                             "or into a 'category' (e.g. x.dt.month).")
        else:
            raise ValueError(f"{label} has unsupported dtype {dtype}; convert it to numbers or 'category'.")
        return False, _finite(values, label), markers, decimal

    @staticmethod
    def _parse_numeric(values: np.ndarray, label: str, decimal: str = ".") -> np.ndarray:
        """A fitted numeric column's values as float64; formatted numbers (``"$1,234"``) read as numbers with the
        column's fitted decimal mark and missing-value markers (``"?"``) as NaN, as in fit."""
        parsed, _, _, failed, _ = read_numbers(values, decimal)
        if failed.any():
            raise ValueError(f"{label} is numeric but holds the non-numeric value "
                             f"{values[np.flatnonzero(failed)[0]]!r}; replace it with a number or NaN.")
        return parsed

    # ------------------------------------------------------------ transform
    def transform(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Apply the fitted preprocessing to rows of the same columns.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features_in_) or DataFrame

        Returns
        -------
        X_model : ndarray of float32, shape (n_samples, D)
            Z-normalised numeric columns and categorical codes (or unit-variance principal components).
        cat_mask : ndarray of bool, shape (D,)
        """
        if not hasattr(self, "columns_"):
            raise RuntimeError("TablePreprocessor.transform called before fit")
        frame = self._frame(X)
        if frame.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {frame.shape[1]} features, but the preprocessing was fitted on "
                             f"{self.n_features_in_}.")
        out = self._encode(self._complete(frame))
        if self.components_ is None:
            return out, self.cat_mask_.copy()
        return self._project(out), np.zeros(self.components_.shape[1], bool)

    def fit_transform(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """``fit(X)`` then ``transform(X)`` (missing cells imputed once)."""
        return self.transform(self._fit(X))

    def _encode(self, frame: pd.DataFrame, columns: list | None = None) -> np.ndarray:
        """Kept columns (or ``columns``) -> (n, n_kept) float32: z-scores and codes (before any PCA)."""
        columns = self.columns_ if columns is None else columns
        out = np.empty((frame.shape[0], len(columns)), np.float32)
        block = _numeric_block(frame)
        unseen_notes: list[str] = []
        for i, col in enumerate(columns):
            if block is None or col.categorical:
                categorical, values, *_ = self._column_values(frame.iloc[:, col.index], col.name, fitted=col)
            else:
                categorical, values = False, _finite(block[:, col.index], col.name)
            if categorical:
                missing = pd.isna(values)
                codes = _category_codes(col.categories, values, missing)
                unseen = (codes < 0) & ~missing
                if unseen.any() and col.other_code is None:  # with a pool, as rare categories are in fit
                    shown = list(dict.fromkeys(values[unseen].tolist()))
                    unseen_notes.append(f"{col.name}: {int(unseen.sum())} row(s) hold "
                                        f"{', '.join(map(repr, shown[:3]))}{' and more' if len(shown) > 3 else ''}, "
                                        f"read as its most frequent category {col.categories[int(col.fill)]!r}")
                codes[unseen] = col.fill if col.other_code is None else col.other_code
                codes[missing] = int(col.fill)
                out[:, i] = codes
            else:
                filled = np.clip(np.where(np.isnan(values), col.fill, values), col.low, col.high)
                with np.errstate(over="ignore"):  # a new row far outside the column's unit: +-inf, clipped below
                    z = (filled / col.unit - col.unit_center) / col.unit_scale
                if col.power is not None:
                    from model.power import transform

                    with np.errstate(invalid="ignore"):  # inf - inf: nan, read as the clip's side below
                        z = np.where(np.isfinite(z), (transform(np.nan_to_num(z), col.power) - col.power_center)
                                     / col.power_scale, z)
                out[:, i] = np.clip(z, -_MAX_Z, _MAX_Z)
        if unseen_notes:
            warnings.warn("Categories not seen in fit: " + "; ".join(unseen_notes) + ". Refit on rows that hold "
                          "them for the model to read them as categories of their own.", UserWarning,
                          stacklevel=user_stacklevel())
        return out

    def _numeric_values(self, frame: pd.DataFrame) -> np.ndarray:
        """(n, len(_imputed_columns)) float64: the numeric columns impute="neighbors" reads, as numbers, NaN where
        missing."""
        out = np.empty((frame.shape[0], len(self._imputed_columns)))
        block = _numeric_block(frame)
        for i, col in enumerate(self._imputed_columns):
            out[:, i] = (_finite(block[:, col.index], col.name) if block is not None
                         else self._column_values(frame.iloc[:, col.index], col.name, fitted=col)[1])
            out[:, i] = np.clip(out[:, i], col.low, col.high)  # NaN stays NaN
        return out

    def _complete(self, frame: pd.DataFrame, values: np.ndarray | None = None,
                  codes: np.ndarray | None = None) -> pd.DataFrame:
        """``frame`` with its missing numeric cells (and, ``impute_categorical``, categorical ones) filled from the
        fitted table's rows (``impute="neighbors"``; the frame itself where there is nothing to fill). ``values`` and
        ``codes``: the frame's ``_numeric_values`` and ``_codes`` where the caller has read them already."""
        if self.impute != "neighbors" or not (getattr(self, "_imputed_columns", None)
                                              or getattr(self, "_imputed_categorical", None)):
            return frame
        values = self._numeric_values(frame) if values is None else values
        absent = np.isnan(values)
        codes = self._codes(frame) if codes is None else codes
        if not (absent.any() or (codes < 0).any()):
            return frame
        filled, filled_codes = _neighbor_fill(self._z(values), absent, self._donors, codes, self._donor_codes,
                                              average_gaps=getattr(self, "impute_average_gaps", False))
        out = frame.copy()
        for i, col in enumerate(self._imputed_columns):
            if absent[:, i].any():
                imputed = (filled[:, i].astype(np.float64) * col.unit_scale + col.unit_center) * col.unit
                out.isetitem(col.index, np.where(absent[:, i], imputed, values[:, i]))
        for j, col in enumerate(self._imputed_categorical):
            gaps = codes[:, j] < 0
            if gaps.any() and (filled_codes[gaps, j] >= 0).any():
                levels = np.array(list(col.categories) + [_OTHER], dtype=object)  # code len(categories): "other"
                column = frame.iloc[:, col.index].to_numpy(object).copy()
                done = gaps & (filled_codes[:, j] >= 0)
                column[done] = levels[filled_codes[done, j]]
                out.isetitem(col.index, column)
        return out

    def _codes(self, frame: pd.DataFrame) -> np.ndarray:
        """(n, len(_imputed_categorical)) int64: the codes of the categorical columns impute_categorical reads, -1
        where missing (an unseen category: the "other" code, else the most frequent one, as ``_encode``)."""
        columns = getattr(self, "_imputed_categorical", [])
        out = np.empty((frame.shape[0], len(columns)), np.int64)
        for j, col in enumerate(columns):
            values = frame.iloc[:, col.index].to_numpy(object)
            missing = pd.isna(values)
            codes = _category_codes(col.categories, values, missing)
            codes[(codes < 0) & ~missing] = col.fill if col.other_code is None else col.other_code
            codes[missing] = -1
            out[:, j] = codes
        return out

    def _z(self, values: np.ndarray) -> np.ndarray:
        """``_numeric_values``' z-scores by the fitted moments (before any Yeo-Johnson transform), NaN kept."""
        unit = np.array([[c.unit for c in self._imputed_columns]])
        center = np.array([[c.unit_center for c in self._imputed_columns]])
        scale = np.array([[c.unit_scale for c in self._imputed_columns]])
        with np.errstate(over="ignore", invalid="ignore"):
            return np.clip((values / unit - center) / scale, -_MAX_Z, _MAX_Z)

    # ------------------------------------------------------------------ PCA
    def _design(self, block: np.ndarray) -> np.ndarray:
        """(n, n_kept) encoded rows -> (n, P) float64: numerics as they are, categoricals one-hot, z-normalised."""
        parts = []
        for i, col in enumerate(self.columns_):
            if not col.categorical:
                parts.append(block[:, i : i + 1].astype(np.float64))
                continue
            width = len(col.categories) + (col.other_code is not None)
            parts.append(np.eye(width)[block[:, i].astype(np.int64)])
        design = np.concatenate(parts, axis=1)
        return (design - self._design_mean) / self._design_scale

    def _fit_pca(self, encoded: np.ndarray) -> None:
        k = self.max_features
        which = f"its first {k}" if self.pca_components == "max_features" else \
            f"at most {k} (those above the noise level)"
        warnings.warn(f"{len(self.columns_)} usable features exceed the model's {k}: projecting the table "
                      f"onto {which} principal components (categorical columns one-hot encoded).",
                      UserWarning, stacklevel=user_stacklevel())
        self._design_mean, self._design_scale = 0.0, 1.0
        first = self._design(encoded[:1])
        total, sq, n = np.zeros(first.shape[1]), np.zeros(first.shape[1]), encoded.shape[0]
        for start in range(0, n, _CHUNK_ROWS):
            z = self._design(encoded[start : start + _CHUNK_ROWS])
            total += z.sum(0)
            sq += (z**2).sum(0)
        mean = total / n
        std = np.sqrt(np.maximum(sq / n - mean**2, 0.0))
        self._design_mean, self._design_scale = mean, np.where(std > 1e-12, std, 1.0)
        p = first.shape[1]
        if n < p:  # wide table: the same axes from the n x n Gram matrix, O(n^2 P) instead of O(P^3) and P^2 memory
            z = self._design(encoded)
            values, vectors = np.linalg.eigh(z @ z.T / n)
            total_var = float((z**2).sum()) / n
        else:
            cov = np.zeros((p, p))
            for start in range(0, n, _CHUNK_ROWS):
                z = self._design(encoded[start : start + _CHUNK_ROWS])
                cov += z.T @ z
            values, vectors = np.linalg.eigh(cov / n)
            total_var = float(np.trace(cov)) / n
        order = np.argsort(values)[::-1][:k]
        order = order[values[order] > 1e-10 * max(float(values[order[0]]), 1e-300)]  # drop null directions
        if self.pca_components == "above_noise":
            # the noise edge of the spectrum: the largest eigenvalue of the covariance of n rows of p independent
            # unit-variance columns (Marchenko-Pastur), below which a direction is indistinguishable from noise
            edge = (1.0 + np.sqrt(p / n)) ** 2
            above = int((values[order] > edge).sum())
            order = order[: max(above, min(_MIN_COMPONENTS, len(order)))]
        eigval = values[order]
        # the Gram route's unit axes are z^T u / sqrt(n * eigenvalue), the covariance's eigenvectors
        eigvec = z.T @ vectors[:, order] / np.sqrt(n * eigval) if n < p else vectors[:, order]
        signs = np.sign(eigvec[np.abs(eigvec).argmax(0), np.arange(eigvec.shape[1])])
        self.components_ = eigvec * signs / np.sqrt(eigval)  # unit-variance scores
        logger.info("PCA keeps %d components explaining %.1f%% of the variance", eigvec.shape[1],
                    100.0 * eigval.sum() / max(total_var, 1e-300))

    def _project(self, encoded: np.ndarray) -> np.ndarray:
        out = np.empty((encoded.shape[0], self.components_.shape[1]), np.float32)
        for start in range(0, encoded.shape[0], _CHUNK_ROWS):
            out[start : start + _CHUNK_ROWS] = self._design(encoded[start : start + _CHUNK_ROWS]) @ self.components_
        return out
