"""The Yeo-Johnson power transform: a skewed numeric column made near-symmetric before clustering.

Real tables measure many quantities on a multiplicative scale (prices, amounts, areas, concentrations, counts):
one cluster with a long right tail. A network pretrained on clusters that are Gaussian-like in every column reads
such a tail as further clusters. The Yeo-Johnson transform (Yeo & Johnson, 2000) is Box-Cox extended to
negative values; its exponent ``lambda`` is the maximum-likelihood one for a Gaussian column, so a symmetric
column stays nearly as it was (``lambda`` near 1) and a log-normal one comes out near its logarithm.

:func:`fit_lambda` finds ``lambda`` as ``scipy.stats.yeojohnson`` does (``fminbound`` within the bounds that keep
the transform finite, at brent's tolerance, on the same log-likelihood) but with the logarithms of the rows
computed once instead of at every step (scipy's per-call overhead made it 20 times slower). The estimator applies
it to z-scores (``TablePreprocessor(power_transform=True)``), so the result does not depend on the column's unit,
and only to highly skewed columns (:data:`MIN_SKEWNESS`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_POWER_TRANSFORM", "MIN_DISTINCT", "MIN_SKEWNESS", "fit_lambda", "power_transform_setting",
           "skewness", "transform", "yeo_johnson"]

#: Whether ``TabClustPFN`` transforms its numeric columns unless told otherwise (``power_transform``).
DEFAULT_POWER_TRANSFORM = True
#: Numeric columns with fewer distinct values (levels, codes, small counts) keep their spacing, which is their
#: information (the threshold of :data:`model.screening.MIN_DISTINCT`).
MIN_DISTINCT = 20
#: Only a column whose sample skewness exceeds this in magnitude is transformed: "highly skewed" by the usual rule
#: of thumb (Bulmer, 1979). Mixtures of Gaussian-like clusters rarely reach it (3 of 400 held-out tables of the
#: paper's prior had such a column: ``docs/results/choice-power.md``), so their asymmetry, the clusters, is kept.
MIN_SKEWNESS = 1.0
_EPS = np.finfo(np.float64).eps


def power_transform_setting(value) -> bool:
    """``power_transform`` as the estimator takes it, from a bool or the word "true" or "false" (any case), as a
    command line gives it."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"power_transform must be 'true' or 'false', got {value!r}")


def skewness(x: np.ndarray) -> float:
    """The sample skewness (third standardised moment, population form) of ``x``; 0 for a constant column."""
    x = np.asarray(x, np.float64)
    d = x - x.mean()
    var = float(np.mean(d**2))
    return float(np.mean(d**3) / var**1.5) if var > 0 else 0.0


def transform(x: np.ndarray, lam: float) -> np.ndarray:
    """The Yeo-Johnson transform of ``x`` (any finite reals) at exponent ``lam``, float64."""
    x = np.asarray(x, np.float64)
    pos = x >= 0
    return _transform(np.log1p(x[pos]), np.log1p(-x[~pos]), pos, lam)


def _transform(log_pos: np.ndarray, log_neg: np.ndarray, pos: np.ndarray, lam: float) -> np.ndarray:
    out = np.zeros(pos.shape, np.float64)
    with np.errstate(over="ignore"):  # a new row far outside the fitted column: +-inf, which the caller clips
        out[pos] = log_pos if abs(lam) < _EPS else np.expm1(lam * log_pos) / lam
        out[~pos] = -np.expm1((2 - lam) * log_neg) / (2 - lam) if abs(lam - 2) > _EPS else -log_neg
    return out


def fit_lambda(x: np.ndarray) -> float:
    """The maximum-likelihood Yeo-Johnson exponent of ``x`` (finite reals; all zeros: 1, the identity)."""
    from scipy.optimize import fminbound  # here: importing scipy.optimize costs 0.5 s at start-up

    x = np.asarray(x, np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("Yeo-Johnson input must be finite.")
    if np.all(x == 0):
        return 1.0
    pos = x >= 0
    log_pos, log_neg = np.log1p(x[pos]), np.log1p(-x[~pos])
    jacobian = float(np.sum(np.sign(x) * np.log1p(np.abs(x))))

    def neg_llf(lam: float) -> float:
        sigma = np.var(_transform(log_pos, log_neg, pos, lam))
        log_sigma = np.log(sigma) if sigma >= np.finfo(np.float64).smallest_normal else -np.inf
        llf = -len(x) / 2 * log_sigma + (lam - 1) * jacobian
        return np.inf if np.isinf(llf) else -llf

    log1p_max_x = np.log1p(20 * np.max(np.abs(x)))
    log_eps = np.log(_EPS)
    lb = (np.log(np.finfo(np.float64).tiny) - log_eps) / 2 / log1p_max_x
    ub = (np.log(np.finfo(np.float64).max) + log_eps) / 2 / log1p_max_x
    if np.all(x < 0):
        lb, ub = 2 - ub, 2 - lb
    elif np.any(x < 0):
        lb, ub = max(2 - ub, lb), min(2 - lb, ub)
    with np.errstate(invalid="ignore", over="ignore"):
        return float(fminbound(neg_llf, lb, ub, xtol=1.48e-08))


def yeo_johnson(x: np.ndarray) -> np.ndarray:
    """``scipy.stats.yeojohnson(x)[0]``: ``x`` transformed at its maximum-likelihood exponent."""
    return transform(x, fit_lambda(x))
