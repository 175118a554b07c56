"""The GMM prior: MixSim (Melnykov, Chen & Maitra) re-implemented, with an exact overlap and a fast root finder.

A candidate mixture is drawn as MixSim does (proportions, means uniform in a box, spherical or ellipsoidal,
homo- or heteroscedastic covariances); then one common covariance scale ``c`` is found so that the largest pair
overlap ``Omega_max = max_{i<j} o_{j|i} + o_{i|j}`` equals the target. The pair decompositions are computed once
per candidate (:func:`priors.overlap.pair_forms`); each step of the root finder on ``log c`` (secant steps, then
Brent's method, on the few pairs that can set the maximum, confirmed on all pairs) only re-evaluates the
quadratic-form distribution functions. Candidates that cannot reach the target (heteroscedastic mixtures whose
overlap stays below it as ``c -> inf``) are redrawn, never returned off target.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular
from scipy.optimize import brentq
from scipy.special import ndtri

from priors._common import assign_labels
from priors.config import GMMConfig
from priors.overlap import PairForms, pair_forms

logger = logging.getLogger(__name__)

__all__ = ["GMMParams", "GMMSample", "InfeasibleTargetError", "sample_mixture", "sample_gmm", "bayes_labels"]


class InfeasibleTargetError(RuntimeError):
    """No candidate mixture reached the requested Omega_max within ``GMMConfig.max_redraws`` draws."""


@dataclass(frozen=True)
class GMMParams:
    """A Gaussian mixture: weights (K,), means (K, D), covariances (K, D, D), and how it was drawn."""

    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    spherical: bool
    homoscedastic: bool


@dataclass(frozen=True)
class GMMSample:
    """One GMM dataset before normalisation: X (N, D) float64, y (N,), the true mixture and its overlap."""

    x: np.ndarray
    y: np.ndarray
    params: GMMParams
    omega_target: float
    omega_achieved: float
    bayes_labels: np.ndarray
    candidate_draws: int
    target_draws: int


_FOCUS = 3  # pairs the root finder starts with
_MAX_STEP = 10.0  # largest secant step in log c
_LOG_C_RANGE = 300.0  # the covariance scale stays within exp(-+300)
_MAX_BRACKET_STEPS = 100
_LIMIT_TOL = 1e-7  # accuracy of the c -> inf overlaps (only compared with the target)


class _Hit(Exception):
    """Raised inside the root finder as soon as |Omega_max - target| <= tol (early exit)."""

    def __init__(self, log_scale: float, omega: float) -> None:
        super().__init__()
        self.log_scale, self.omega = log_scale, omega


def _weights(rng: np.random.Generator, k: int, cfg: GMMConfig) -> np.ndarray:
    """Dirichlet(alpha) proportions mapped to [min_weight, 1] (MixSim's PiLow); equal when K min_weight >= 1."""
    w = rng.dirichlet(np.full(k, cfg.dirichlet_alpha))
    if k * cfg.min_weight >= 1.0:
        return np.full(k, 1.0 / k)
    return cfg.min_weight + (1.0 - k * cfg.min_weight) * w


def _ellipsoid(rng: np.random.Generator, d: int, max_ecc: float) -> np.ndarray:
    """MixSim's ellipsoidal covariance: sample covariance of d + 1 normal vectors, flattened to ecc <= max_ecc."""
    s = np.cov(rng.standard_normal((d + 1, d)), rowvar=False).reshape(d, d)
    lam, vec = np.linalg.eigh(s)
    lam_min, lam_max = lam[0], lam[-1]
    if np.sqrt(1.0 - lam_min / lam_max) > max_ecc:  # map eigenvalues linearly: max stays, min -> max (1 - e^2)
        lam = lam_max - (lam_max - lam) * (lam_max * max_ecc**2) / (lam_max - lam_min)
    s = (vec * lam) @ vec.T
    return 0.5 * (s + s.T)


def _candidate(rng, k: int, d: int, spherical: bool, homoscedastic: bool, cfg: GMMConfig):
    """Weights, means and unscaled covariances of one candidate, in MixSim's order of draws."""
    weights = _weights(rng, k, cfg)
    means = rng.uniform(cfg.mean_range[0], cfg.mean_range[1], size=(k, d))
    n_cov = 1 if homoscedastic else k
    if spherical:
        covs = rng.uniform(0.0, 1.0, size=n_cov)[:, None, None] * np.eye(d)[None]
    else:
        covs = np.stack([_ellipsoid(rng, d, cfg.max_eccentricity) for _ in range(n_cov)])
    if homoscedastic:
        covs = np.repeat(covs, k, axis=0)
    return weights, means, covs


def _pair_limits(forms: PairForms, target: float) -> np.ndarray:
    """Pair overlaps as the covariance scale goes to infinity, exact where it matters; shape (P/2,).

    Chernoff upper bounds come first; exact values (to _LIMIT_TOL) are computed in order of decreasing bound,
    in growing chunks, until one pair reaches the target or no bound does. Equal covariances tend to 1.
    """
    half = forms.true.size // 2
    equal = forms.equal_cov[:half]
    bound = forms.limit_overlaps(bound=True)
    limits = np.where(equal, 1.0, np.minimum(bound[:half] + bound[half:], 1.0))
    order = np.argsort(-limits)
    start, size = 0, 1
    while start < half and limits[order[start]] > target and not (limits[order[:start]] > target).any():
        chunk = order[start : start + size]
        exact = forms.select(chunk).limit_overlaps(tol=_LIMIT_TOL)
        limits[chunk] = np.where(equal[chunk], 1.0, exact[: chunk.size] + exact[chunk.size :])
        start, size = start + size, 2 * size
    return limits


def _separation(omega: float) -> float:
    """log of the homoscedastic-equivalent half distance -Phi^-1(omega / 2): decreasing in omega, and linear in
    log c (slope -1/2) for a homoscedastic pair with equal weights; finite for every omega in [0, 2]."""
    return float(np.log(max(-ndtri(min(max(0.5 * omega, 1e-300), 0.5 - 1e-16)), 1e-300)))


def _solve_subset(forms: PairForms, target: float, log_c: float, tol: float, overlap_tol: float, omega0=None):
    """Root of Omega_max(c) = target over a few pairs; (log c, Omega) or None when the target is never reached.

    Secant steps on the transformed gap ``_separation(Omega) - _separation(target)`` (first slope -1/2, exact for
    homoscedastic pairs) until the root is bracketed, then Brent's method; stops as soon as |Omega - target|
    <= tol.
    """
    goal = _separation(target)

    def gap(x: float, omega: float | None = None) -> float:
        if omega is None:
            omega = float(forms.pair_overlaps(np.exp(x), tol=overlap_tol).max())
        if abs(omega - target) <= tol:
            raise _Hit(x, omega)
        return _separation(omega) - goal  # > 0: overlap too small, c must grow

    try:
        x0, g0 = log_c, gap(log_c, omega0)
        slope = -0.5
        for _ in range(_MAX_BRACKET_STEPS):
            x1 = float(np.clip(x0 + np.clip(-g0 / slope, -_MAX_STEP, _MAX_STEP), -_LOG_C_RANGE, _LOG_C_RANGE))
            if x1 == x0:  # pinned at the end of the scale range: the target is out of reach
                return None
            g1 = gap(x1)
            if np.sign(g1) != np.sign(g0):
                break
            secant = (g1 - g0) / (x1 - x0)
            slope = secant if secant < -1e-3 else slope
            x0, g0 = x1, g1
        else:
            return None
        root = brentq(gap, min(x0, x1), max(x0, x1), xtol=1e-13, rtol=1e-15, maxiter=200)
    except _Hit as hit:
        return hit.log_scale, hit.omega
    return root, float(forms.pair_overlaps(np.exp(root), tol=overlap_tol).max())


def find_scale(forms: PairForms, target: float, *, tol: float = 1e-6, overlap_tol: float = 1e-9):
    """Common covariance scale c with Omega_max(c) within tol of target, or None when unreachable.

    Brent's method runs on a few candidate pairs only (those with the largest overlaps); a full evaluation of
    all pairs at the root then confirms that no other pair exceeds the target, or adds the pairs that do and
    solves again. The returned Omega_max is always that of all pairs.

    Parameters
    ----------
    forms : PairForms
        The mixture's pair decomposition at scale 1.
    target : float
        Omega_max to reach, in (0, 1).
    tol, overlap_tol : float
        Tolerance on Omega_max and accuracy of each overlap.

    Returns
    -------
    tuple of (float, float) or None
        ``(c, Omega_max(c))``, or None when the overlap cannot reach the target for any c.
    """
    n_pairs = forms.true.size // 2
    # start where the closest pair would sit at the target if it were homoscedastic
    delta = -2.0 * ndtri(0.5 * target)
    log_c = float(np.log(max(forms.mahalanobis.min(), 1e-300)) - 2.0 * np.log(delta))
    limits = None
    if not forms.equal_cov.all():  # heteroscedastic: the target may be out of reach, check the c -> inf limit
        limits = _pair_limits(forms, target + tol)
        if limits.max() <= target + tol:
            return None
    omega = forms.pair_overlaps(np.exp(log_c), tol=overlap_tol)
    active = np.zeros(n_pairs, dtype=bool)
    active[np.argsort(omega)[-_FOCUS:]] = True
    for _ in range(n_pairs):
        if limits is not None:
            active &= limits > target - tol  # pairs that never reach the target cannot set Omega_max
            if not active.any():
                active[np.argsort(limits)[-_FOCUS:]] = True
        omega0 = float(omega[active].max())  # omega always holds the overlaps of every pair at log_c
        found = _solve_subset(forms.select(np.flatnonzero(active)), target, log_c, tol, overlap_tol, omega0)
        if found is None:
            if limits is None:
                limits = _pair_limits(forms, target + tol)
            if limits[~active].max(initial=0.0) <= target + tol:
                return None
            active |= limits > target + tol
            continue
        log_c, best = found
        if active.all():
            return float(np.exp(log_c)), best
        omega = forms.pair_overlaps(np.exp(log_c), tol=overlap_tol)
        if omega.max() <= target + tol and abs(omega.max() - target) <= tol:
            return float(np.exp(log_c)), float(omega.max())
        active |= omega > target + tol
    logger.debug("root finder did not settle for target %.4f", target)
    return None


def sample_mixture(
    rng: np.random.Generator,
    n_features: int,
    n_clusters: int,
    target: float,
    cfg: GMMConfig,
    *,
    spherical: bool,
    homoscedastic: bool,
) -> tuple[GMMParams, float, int]:
    """Draw candidates until one is scaled to Omega_max = target (within ``cfg.omega_tol``).

    Returns
    -------
    params : GMMParams
        The mixture, covariances already scaled.
    omega : float
        The achieved Omega_max.
    draws : int
        Candidates drawn.

    Raises
    ------
    InfeasibleTargetError
        After ``cfg.max_redraws`` candidates that cannot reach the target.
    """
    if not 0.0 < target < 1.0:
        raise ValueError(f"target Omega_max must be in (0, 1), got {target}")
    for draw in range(1, cfg.max_redraws + 1):
        weights, means, covs = _candidate(rng, n_clusters, n_features, spherical, homoscedastic, cfg)
        found = find_scale(pair_forms(weights, means, covs), target, tol=cfg.omega_tol, overlap_tol=cfg.overlap_tol)
        if found is not None:
            scale, omega = found
            params = GMMParams(weights, means, covs * scale, spherical, homoscedastic)
            return params, omega, draw
    raise InfeasibleTargetError(
        f"no candidate reached Omega_max = {target:.4f} (K={n_clusters}, D={n_features}, spherical={spherical}, "
        f"homoscedastic={homoscedastic}) in {cfg.max_redraws} draws; lower the target range"
    )


def bayes_labels(x: np.ndarray, params: GMMParams) -> np.ndarray:
    """Bayes-optimal labels: argmax_k log pi_k + log N(x; mu_k, S_k) for x of shape (N, D); shape (N,)."""
    chol = np.linalg.cholesky(params.covariances)
    logdet = 2.0 * np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), axis=1)
    scores = np.empty((x.shape[0], params.weights.size))
    for k in range(params.weights.size):
        z = solve_triangular(chol[k], (x - params.means[k]).T, lower=True, check_finite=False)
        scores[:, k] = np.log(params.weights[k]) - 0.5 * logdet[k] - 0.5 * np.sum(z**2, axis=0)
    return np.argmax(scores, axis=1)


def sample_points(rng: np.random.Generator, params: GMMParams, n_rows: int, min_cluster_size: int):
    """Labels y (N,) and points X (N, D) of the mixture."""
    y = assign_labels(rng, params.weights, n_rows, min_cluster_size)
    z = rng.standard_normal((n_rows, params.means.shape[1]))
    chol = np.linalg.cholesky(params.covariances)
    x = np.empty_like(z)
    for k in range(params.weights.size):
        rows = y == k
        x[rows] = params.means[k] + z[rows] @ chol[k].T
    return x, y


def sample_gmm(
    rng: np.random.Generator, n_rows: int, n_features: int, n_clusters: int, cfg: GMMConfig, min_cluster_size: int = 1
) -> GMMSample:
    """One dataset of the GMM prior (target, covariance type and mixture drawn from ``rng``).

    The target ~ U[omega_min, omega_upper(D)] and the covariance type are redrawn together when no candidate
    reaches the target (rare: heteroscedastic ellipsoidal mixtures near the top of the range at large D).
    """
    for target_draw in range(1, 101):
        target = float(rng.uniform(cfg.omega_min, cfg.omega_upper(n_features)))
        spherical = bool(rng.random() < cfg.p_spherical)
        homoscedastic = bool(rng.random() < cfg.p_homoscedastic)
        try:
            params, omega, draws = sample_mixture(
                rng, n_features, n_clusters, target, cfg, spherical=spherical, homoscedastic=homoscedastic
            )
        except InfeasibleTargetError as err:
            logger.info("%s; drawing a new target", err)
            continue
        x, y = sample_points(rng, params, n_rows, min_cluster_size)
        return GMMSample(x, y, params, target, omega, bayes_labels(x, params), draws, target_draw)
    raise InfeasibleTargetError(f"100 targets in a row were unreachable for K={n_clusters}, D={n_features}")
