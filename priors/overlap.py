"""Exact pairwise overlap of Gaussian mixture components (the misclassification probabilities of MixSim).

For components i and j, ``o_{j|i} = P(pi_i phi(X; mu_i, S_i) < pi_j phi(X; mu_j, S_j) | X ~ N(mu_i, S_i))``:
the probability that a point of component i is assigned to j by the two-component Bayes rule. Whitening by
``S_i`` and rotating onto the eigenvectors of ``S_i^{1/2} S_j^{-1} S_i^{1/2}`` (eigenvalues ``lambda_k``, whitened
mean difference ``delta``) turns the event into a Gaussian quadratic form,

    sum_k (lambda_k - 1) w_k^2 + 2 lambda_k delta_k w_k
        <  log(pi_j^2 |S_i| / (pi_i^2 |S_j|)) - sum_k lambda_k delta_k^2,

with ``w ~ N(0, I)``, whose distribution function :func:`priors._quadform.quad_form_cdf` evaluates exactly.
Unlike the original MixSim code, every pair is treated on its own: pairs with equal covariances get the normal
closed form, eigenvalues equal to 1 give normal terms, and very distant pairs give 0.

Multiplying every covariance by one scale ``c`` leaves ``lambda`` unchanged and divides ``delta`` by ``sqrt(c)``;
:class:`PairForms` keeps the decomposition so that overlaps at any scale cost no further linear algebra.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from priors._quadform import quad_form_cdf, quad_form_upper_bound

__all__ = ["PairForms", "pair_forms", "pairwise_overlap", "max_overlap"]


@dataclass(frozen=True)
class PairForms:
    """Quadratic forms of all ordered pairs (i, j), i != j, at covariance scale 1.

    Attributes
    ----------
    true, assigned : ndarray, shape (P,)
        Component a point comes from (i) and the one it is wrongly assigned to (j); P = K (K - 1). The first
        P/2 entries are the pairs i < j in row-major order, the last P/2 the same pairs reversed.
    curvature : ndarray, shape (P, M)
        ``lambda_k - 1`` per group of equal eigenvalues (M = D, or M = 1 for spherical mixtures).
    linear_sq : ndarray, shape (P, M)
        Sum over the group of ``(2 lambda_k delta_k)^2`` at scale 1 (scales as ``1 / c``).
    multiplicity : ndarray, shape (P, M)
        Number of eigenvalues in each group.
    offset : ndarray, shape (P,)
        ``log(pi_j^2 |S_i| / (pi_i^2 |S_j|))`` (scale free).
    mahalanobis : ndarray, shape (P,)
        ``sum_k lambda_k delta_k^2`` at scale 1 (scales as ``1 / c``).
    equal_cov : ndarray of bool, shape (P,)
        Pairs whose covariance matrices are identical.
    n_components : int
        K.
    """

    true: np.ndarray
    assigned: np.ndarray
    curvature: np.ndarray
    linear_sq: np.ndarray
    multiplicity: np.ndarray
    offset: np.ndarray
    mahalanobis: np.ndarray
    equal_cov: np.ndarray
    n_components: int

    def overlaps(self, scale: float = 1.0, *, tol: float = 1e-9) -> np.ndarray:
        """``o_{j|i}`` of every ordered pair with all covariances multiplied by ``scale``; shape (P,)."""
        if not scale > 0.0:
            raise ValueError(f"covariance scale must be positive, got {scale}")
        return quad_form_cdf(
            self.curvature,
            self.linear_sq / scale,
            self.offset - self.mahalanobis / scale,
            self.multiplicity,
            tol=tol,
        )

    def pair_overlaps(self, scale: float = 1.0, *, tol: float = 1e-9) -> np.ndarray:
        """``omega_ij = o_{j|i} + o_{i|j}`` of every unordered pair (i < j, row-major order); shape (P/2,)."""
        o = self.overlaps(scale, tol=tol)
        half = o.size // 2
        return o[:half] + o[half:]

    def limit_overlaps(self, *, tol: float = 1e-9, bound: bool = False) -> np.ndarray:
        """``o_{j|i}`` as the covariance scale goes to infinity (means no longer matter); shape (P,).

        Equal-covariance pairs tend to 1 or 0 (to 1/2 each with equal weights). With ``bound=True`` a cheap
        Chernoff upper bound is returned instead of the exact value.
        """
        args = (self.curvature, np.zeros_like(self.linear_sq), self.offset, self.multiplicity)
        out = quad_form_upper_bound(*args) if bound else quad_form_cdf(*args, tol=tol)
        return np.where(self.equal_cov & (self.offset == 0.0), 0.5, out)

    def select(self, pairs: np.ndarray) -> PairForms:
        """The forms of a subset of unordered pairs (indices into the i < j row-major order), both directions."""
        pairs = np.asarray(pairs, dtype=np.int64)
        rows = np.concatenate([pairs, pairs + self.true.size // 2])
        return PairForms(
            true=self.true[rows],
            assigned=self.assigned[rows],
            curvature=self.curvature[rows],
            linear_sq=self.linear_sq[rows],
            multiplicity=self.multiplicity[rows],
            offset=self.offset[rows],
            mahalanobis=self.mahalanobis[rows],
            equal_cov=self.equal_cov[rows],
            n_components=self.n_components,
        )

    def to_matrix(self, values: np.ndarray) -> np.ndarray:
        """Scatter per-pair values into a (K, K) map with entry [i, j] = value of pair (i -> j), zero diagonal."""
        out = np.zeros((self.n_components, self.n_components))
        out[self.true, self.assigned] = values
        return out


def _validate(weights, means, covariances) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    weights = np.asarray(weights, dtype=np.float64)
    means = np.asarray(means, dtype=np.float64)
    covariances = np.asarray(covariances, dtype=np.float64)
    if weights.ndim != 1 or weights.size < 2:
        raise ValueError(f"weights must be a vector of K >= 2 mixing proportions, got shape {weights.shape}")
    k = weights.size
    if means.ndim != 2 or means.shape[0] != k:
        raise ValueError(f"means must have shape (K, D) = ({k}, D), got {means.shape}")
    d = means.shape[1]
    if covariances.shape != (k, d, d):
        raise ValueError(f"covariances must have shape (K, D, D) = ({k}, {d}, {d}), got {covariances.shape}")
    if not (np.all(weights > 0) and np.isfinite(means).all() and np.isfinite(covariances).all()):
        raise ValueError("weights must be positive and means/covariances finite")
    transposed = np.swapaxes(covariances, 1, 2)
    if not (np.array_equal(covariances, transposed) or np.allclose(covariances, transposed, rtol=1e-10, atol=0.0)):
        raise ValueError("covariance matrices must be symmetric")
    return weights, means, covariances


def _is_spherical(covariances: np.ndarray) -> bool:
    """True when every covariance is a multiple of the identity."""
    d = covariances.shape[1]
    diag = np.diagonal(covariances, axis1=1, axis2=2)
    return bool(np.all(covariances == diag[:, :1, None] * np.eye(d)[None]))


def _cholesky(covariances: np.ndarray) -> np.ndarray:
    """Lower Cholesky factors (K, D, D); LinAlgError naming the components that are not positive definite."""
    try:
        return np.linalg.cholesky(covariances)
    except np.linalg.LinAlgError:
        bad = []
        for k, cov in enumerate(covariances):
            try:
                np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:
                bad.append(k)
        raise np.linalg.LinAlgError(f"covariance matrices of components {bad} are not positive definite") from None


def pair_forms(weights, means, covariances) -> PairForms:
    """Decompose every ordered pair of a Gaussian mixture into its quadratic form.

    Parameters
    ----------
    weights : array_like, shape (K,)
        Mixing proportions (positive; they need not sum to 1 exactly).
    means : array_like, shape (K, D)
    covariances : array_like, shape (K, D, D)
        Symmetric positive definite.

    Returns
    -------
    PairForms
    """
    weights, means, covariances = _validate(weights, means, covariances)
    k, d = means.shape
    iu, ju = np.triu_indices(k, 1)  # unordered pairs, i < j
    chol = _cholesky(covariances)
    logdet = 2.0 * np.sum(np.log(np.diagonal(chol, axis1=1, axis2=2)), axis=1)
    diff = means[iu] - means[ju]  # mu_i - mu_j, (Q, D)
    equal = np.all(covariances[iu] == covariances[ju], axis=(1, 2))

    if _is_spherical(covariances):  # one group of D equal eigenvalues var_i / var_j per pair
        var = covariances[:, 0, 0]
        lam_f = (var[iu] / var[ju])[:, None]
        lam_b = 1.0 / lam_f
        delta_f = np.sqrt(np.sum(diff**2, axis=1) / var[iu])[:, None]  # only |delta| matters
        delta_b = np.sqrt(np.sum(diff**2, axis=1) / var[ju])[:, None]
        mult = np.full((2 * iu.size, 1), float(d))
    else:
        lam_f = np.ones((iu.size, d))
        lam_b = np.ones((iu.size, d))
        chol_inv = np.linalg.inv(chol)
        delta_f = np.einsum("qab,qb->qa", chol_inv[iu], diff)  # L_i^{-1} (mu_i - mu_j)
        delta_b = -np.einsum("qab,qb->qa", chol_inv[ju], diff)  # L_j^{-1} (mu_j - mu_i)
        general = np.flatnonzero(~equal)
        if general.size:
            # B = L_j^{-1} L_i = U diag(s) R^T: lambda(i -> j) = s^2 on R, lambda(j -> i) = s^-2 on U
            u, s, rt = np.linalg.svd(chol_inv[ju[general]] @ chol[iu[general]])
            lam_f[general] = s**2
            lam_b[general] = s**-2
            delta_f[general] = np.einsum("qab,qb->qa", rt, delta_f[general])
            delta_b[general] = np.einsum("qba,qb->qa", u, delta_b[general])
        mult = np.ones((2 * iu.size, d))

    true = np.concatenate([iu, ju])
    assigned = np.concatenate([ju, iu])
    lam = np.concatenate([lam_f, lam_b])
    delta = np.concatenate([delta_f, delta_b])
    eq = np.concatenate([equal, equal])
    curvature = np.where(eq[:, None], 0.0, lam - 1.0)
    offset = 2.0 * (np.log(weights[assigned]) - np.log(weights[true])) + logdet[true] - logdet[assigned]
    return PairForms(
        true=true,
        assigned=assigned,
        curvature=curvature,
        linear_sq=(2.0 * lam * delta) ** 2,
        multiplicity=mult,
        offset=offset,
        mahalanobis=np.sum(lam * delta**2, axis=1),
        equal_cov=eq,
        n_components=k,
    )


def pairwise_overlap(weights, means, covariances, *, tol: float = 1e-9) -> np.ndarray:
    """Misclassification probabilities of all ordered pairs of a Gaussian mixture, computed exactly.

    Parameters
    ----------
    weights : array_like, shape (K,)
        Mixing proportions.
    means : array_like, shape (K, D)
        Component means.
    covariances : array_like, shape (K, D, D)
        Component covariance matrices (symmetric positive definite).
    tol : float
        Accuracy of the numerical inversion (absolute, per entry).

    Returns
    -------
    ndarray, shape (K, K)
        Entry [i, j] is ``o_{j|i}``, the probability that a point drawn from component i is assigned to
        component j by the Bayes rule of the pair; the diagonal is 0. The pair overlap is
        ``omega_ij = out[i, j] + out[j, i]``.

    Examples
    --------
    >>> import numpy as np
    >>> omap = pairwise_overlap([0.5, 0.5], [[0.0, 0.0], [2.0, 0.0]], np.stack([np.eye(2)] * 2))
    >>> round(float(omap[0, 1]), 6)  # Phi(-Delta / 2) with Delta = 2
    0.158655
    """
    forms = pair_forms(weights, means, covariances)
    return forms.to_matrix(forms.overlaps(1.0, tol=tol))


def max_overlap(omega_map: np.ndarray) -> tuple[float, tuple[int, int]]:
    """Largest pair overlap ``max_{i<j} omega_map[i, j] + omega_map[j, i]`` and the pair (i, j) attaining it."""
    omega_map = np.asarray(omega_map, dtype=np.float64)
    pair = omega_map + omega_map.T
    iu, ju = np.triu_indices(pair.shape[0], 1)
    best = int(np.argmax(pair[iu, ju]))
    return float(pair[iu[best], ju[best]]), (int(iu[best]), int(ju[best]))
