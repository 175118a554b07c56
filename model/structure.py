"""Is there any cluster structure? A SigClust-style test of the table against one Gaussian mode.

The network partitions a table into K = 2..K_max clusters and has no answer "one cluster": a table that is one
cloud gets split. This test gives that answer from the data alone (after Liu, Hayes, Nobel and Marron, 2008,
"Statistical significance of clustering for high-dimension, low-sample size data"): the *cluster index* of the
best split of the rows in two (within-cluster over total sum of squares, 2-means) is compared with the cluster
index of tables drawn from one Gaussian with the table's own covariance (its eigenvalues; the index does not
depend on the rotation), the same number of rows and the same split procedure. The score is

    z = (index of the table - mean of the null indices) / their standard deviation,

strongly negative where the rows split far better than one Gaussian allows (cluster structure), near 0 where
they look like one Gaussian mode. Heavy tails and coarse levels push it above 0 (their split is worse than a
Gaussian's); skew pulls it below 0, so a skewed single mode reads as structure.

The split: 2-means from the sign of the first principal component, and, for the table, also from the
network's own two-cluster partition where one is given (the better of the two counts). The null tables get
the first start only; on one Gaussian it finds the best split, along the largest axis, so the extra start makes
the table's index no worse than the null's procedure would, and errs towards reporting structure.

Everything is deterministic: the null tables come from a fixed seed. The cost is ``n_null`` 2-means runs on a
table of the context's size (a few milliseconds for 1,000 rows and 64 columns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Gaussian tables drawn for the null distribution of the cluster index.
DEFAULT_N_NULL = 20
#: Rounds of matching the null's principal variances to the table's (:func:`null_scales`).
DEBIAS_ROUNDS = 3
#: Gaussian tables drawn per round to average their principal variances.
DEBIAS_DRAWS = 8
#: Lloyd steps at most per 2-means run (it stops earlier once no row moves).
MAX_STEPS = 30
#: ``TabClustPFN(allow_single_cluster=True)`` answers one cluster above this score, chosen on development data
#: (``benchmarks/choose_structure.py``, ``docs/results/choice-structure.md``): the largest mean ARI gain over the
#: five sets of the thresholds 0, 1, 2, 3. It answers one cluster for 158 of 200 one-mode tables and for 80 of 400
#: held-out prior tables (K >= 2), which lose 0.058 +- 0.008 ARI on average; no threshold qualified as a default.
DEFAULT_SINGLE_CLUSTER_Z = 0.0


@dataclass(frozen=True)
class StructureTest:
    """The table's 2-means cluster index against its one-Gaussian null (module docstring)."""

    index: float  # within / total sum of squares of the table's best two-way split
    null_mean: float
    null_sd: float
    z: float  # (index - null_mean) / null_sd


def cluster_index(X: np.ndarray, labels: np.ndarray) -> float:
    """Within-cluster sum of squares of a two-way split of ``X`` (n, P) over its total sum of squares."""
    Xc = X - X.mean(0)
    total = float((Xc**2).sum())
    if total <= 0.0:
        return 1.0
    within = 0.0
    for side in (labels, ~labels):
        if side.any():
            part = X[side]
            within += float(((part - part.mean(0)) ** 2).sum())
    return within / total


def two_means(X: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Lloyd's 2-means on ``X`` (n, P) from the boolean split ``start``; returns the final split."""
    labels = np.asarray(start, bool).copy()
    for _ in range(MAX_STEPS):
        if labels.all() or not labels.any():
            break
        m1, m0 = X[labels].mean(0), X[~labels].mean(0)
        # |x - m1|^2 < |x - m0|^2  <=>  2 x.(m0 - m1) < |m0|^2 - |m1|^2 (no (n, P) temporaries)
        new = 2.0 * (X @ (m0 - m1)) < float(m0 @ m0 - m1 @ m1)
        if np.array_equal(new, labels):
            break
        labels = new
    return labels


def _pc1_split(X: np.ndarray) -> np.ndarray:
    Xc = X - X.mean(0)
    if Xc.shape[1] <= Xc.shape[0]:  # the P x P Gram matrix: cheaper than an SVD of the rows
        _, vecs = np.linalg.eigh(Xc.T @ Xc)
        axis = vecs[:, -1]
    else:
        axis = np.linalg.svd(Xc, full_matrices=False)[2][0]
    return (Xc @ axis) > 0


def _spectrum(Xc: np.ndarray) -> np.ndarray:
    """Variances along the principal axes of the centred rows ``Xc`` (n, P), largest first (min(n, P) of them)."""
    n, p = Xc.shape
    gram = Xc.T @ Xc if p <= n else Xc @ Xc.T  # the smaller Gram matrix: cheaper than an SVD of the rows
    return np.clip(np.linalg.eigvalsh(gram)[::-1], 0.0, None) / n


def null_scales(variances: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Standard deviations of a Gaussian whose samples of ``n`` rows show, on average, the principal ``variances``.

    A sample's largest variances overstate the population's and its smallest understate them (most where P is
    near n); a null drawn with the sample's own variances would spread them again, split more easily and make
    one Gaussian look clustered. Each of ``DEBIAS_ROUNDS`` rounds draws ``DEBIAS_DRAWS`` tables and rescales each
    variance by seen / drawn on average.
    """
    pop = variances.copy()
    for _ in range(DEBIAS_ROUNDS):
        drawn = np.mean([_spectrum(rng.standard_normal((n, pop.size)) * np.sqrt(pop))[: pop.size]
                         for _ in range(DEBIAS_DRAWS)], axis=0)
        pop = pop * variances / np.maximum(drawn, variances * 1e-6)
    return np.sqrt(pop)


def best_index(X: np.ndarray, starts: list[np.ndarray] = ()) -> float:
    """The lowest cluster index 2-means reaches on ``X`` from the first-principal-component split and ``starts``."""
    return min(cluster_index(X, two_means(X, s)) for s in [_pc1_split(X), *starts])


def structure_test(X: np.ndarray, labels: np.ndarray | None = None, *, n_null: int = DEFAULT_N_NULL,
                   seed: int = 0) -> StructureTest:
    """Score ``X`` (n, P) against one Gaussian mode (module docstring).

    Parameters
    ----------
    X : rows in the space the clusters live in (the estimator's design space: z-scores or principal
        components, categorical codes one-hot).
    labels : optional (n,) integer partition of the rows into two (the network's): a second start for the table.
    n_null : Gaussian tables for the null distribution (at least 2).
    seed : seeds the null tables.
    """
    X = np.asarray(X, np.float64)
    n = X.shape[0]
    if X.ndim != 2 or n < 3:
        raise ValueError(f"the structure test needs a 2-D table of at least 3 rows, got shape {X.shape}")
    if n_null < 2:
        raise ValueError(f"n_null={n_null}: the null distribution needs at least 2 tables")
    Xc = X - X.mean(0)
    variances = _spectrum(Xc)[: n - 1]  # n centred rows span at most n - 1 axes (so a null draw shows as many)
    if not variances.size or not variances[0] > 0:  # every row the same: no split at all, nothing but one mode
        return StructureTest(1.0, 1.0, 0.0, float("inf"))
    variances = variances[variances > variances[0] * 1e-12]
    starts = [] if labels is None else [np.asarray(labels) == np.asarray(labels)[0]]
    index = best_index(Xc, starts)
    rng = np.random.default_rng(seed)
    scales = null_scales(variances, n, rng)
    null = np.array([best_index(rng.standard_normal((n, scales.size)) * scales) for _ in range(n_null)])
    mean, sd = float(null.mean()), float(null.std(ddof=1))
    gap = index - mean
    z = gap / sd if sd > 0 else (0.0 if gap == 0 else float(np.copysign(np.inf, gap)))
    return StructureTest(float(index), mean, sd, float(z))
