"""Test-time refinement: two Lloyd (k-means) steps started from the network's partition, then (``refine="gmm"``,
the default) a few EM steps of a diagonal Gaussian mixture started from the chosen partition.

The network's partition at a given K is often nearly right and a little off at the cluster borders; k-means
started from it moves those rows to the nearest cluster mean. Run to convergence, k-means also drags
non-convex clusters (the prior's transformed clusters, rings) towards Voronoi cells, which the network had
right; two steps (``DEFAULT_STEPS``) move the borders and stop. Every candidate K is refined, and K is then
chosen among the refined candidates (:func:`model.selection.select_k`'s ``candidates=``), each scored against
the network's own partitions. ``min_agreement`` keeps a refinement only where its ARI with the network's
partition reaches it (off by default).

Chosen on development data by ``benchmarks/choose_refinement.py`` (``docs/results/choice-refine.md``): against
no refinement, task by task (mean ARI difference +- standard error, K inferred), two steps gave -0.003 +- 0.005
on 300 held-out prior tasks, +0.030 +- 0.009 on 200 prior tasks with noise columns and contaminated rows and
+0.025 +- 0.019 on the 23 development tables; kept only at ARI >= 0.6 with the network's: +0.008 +- 0.003,
+0.007 +- 0.004, +0.008 +- 0.009; run to convergence: -0.023 +- 0.008 on the prior tasks.

``refine="gmm"`` (:func:`diagonal_em`): K is chosen among the Lloyd-refined candidates as above, then the chosen
partition gets ``DEFAULT_EM_STEPS`` EM steps of K Gaussians, each with its own diagonal covariance (variances at
least ``VARIANCE_FLOOR``) and mixing proportion: clusters may then differ in spread and in the columns they are
tight in. Chosen on development data by ``benchmarks/choose_mixture_refinement.py``
(``docs/results/choice-mixture-refine.md``; against the Lloyd-refined partition at the same K, mean ARI difference
+- standard error): +0.058 +- 0.004 on 400 held-out prior tasks, +0.031 +- 0.008 with noise columns and
contaminated rows, +0.003 +- 0.007 with one informative column among noise columns, +0.006 +- 0.002 on 200 with 2-3
columns, +0.016 +- 0.008 on the 23 development tables. One covariance shared by the clusters gained more with noise
columns (+0.06) but lost on the 2-3-column tables. On a design of at most ``FULL_COVARIANCE_MAX_WIDTH`` columns each
cluster gets its own full covariance instead (:func:`full_em`, :func:`mixture_refinement`): tilted, elongated
clusters, which the tables of a few columns are full of (``docs/results/choice-full-covariance*.md``).

The rows live in the *design space*: numeric columns as the preprocessing left them (z-normalised, or unit
principal components) and categorical codes one-hot (0/1), so that a mean is defined. Rows are assigned to the
nearest centroid; the soft assignment is a Gaussian with one shared spherical variance (the mean within-cluster
squared distance per design column), whose argmax is that nearest centroid. Under ``refine="gmm"`` they go to the
most probable component, and the soft assignment is the mixture's posterior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Lloyd steps from the network's partition (a step: assign rows to the nearest mean, then recompute the means).
DEFAULT_STEPS = 2
#: A refined partition replaces the network's only when their ARI is at least this (None: always).
DEFAULT_MIN_AGREEMENT: float | None = None
REFINES: tuple[str, ...] = ("kmeans", "gmm", "none")
#: The refinements whose candidates are the Lloyd-refined ones (the K ranker picks among them).
REFINED_CANDIDATES: tuple[str, ...] = ("kmeans", "gmm")
#: ``refine="gmm"``: the diagonal Gaussian mixture started from the chosen candidate (chosen on development data
#: among shared and per-cluster covariances, floors, steps and proportions: ``docs/results/choice-mixture-refine.md``):
#: EM steps, the smallest variance of a design column (numeric columns have unit variance), one covariance per
#: cluster (not shared) and estimated mixing proportions.
DEFAULT_EM_STEPS = 3
VARIANCE_FLOOR = 0.1
DEFAULT_SHARED = False
DEFAULT_MIXING = True
#: ``refine="gmm"`` on a design of at most this many columns: each cluster its own full covariance
#: (:func:`full_em`), else its own diagonal one. Chosen on development data among 2, 4, 8, every width and rules by
#: rows per covariance parameter (``docs/results/choice-full-covariance*.md``).
FULL_COVARIANCE_MAX_WIDTH = 4
#: ``TabClustPFN``'s ``refine`` unless told otherwise (chosen on development data, see the module docstring).
DEFAULT_REFINE = "gmm"


def one_hot_widths(Z: np.ndarray, cat_mask: np.ndarray) -> np.ndarray:
    """Codes per categorical column of a fitted table (the largest code seen + 1; every fitted category occurs)."""
    cat = np.flatnonzero(cat_mask)
    return (Z[:, cat].max(0).astype(np.int64) + 1) if len(cat) else np.zeros(0, np.int64)


def one_hot_blocks(cat_mask: np.ndarray, widths: np.ndarray) -> list[tuple[int, int]]:
    """Where :func:`design` puts each categorical column's one-hot codes: [(first, stop)] design columns."""
    blocks, start, c = [], 0, 0
    for is_cat in np.asarray(cat_mask, dtype=bool):
        width = int(widths[c]) if is_cat else 1
        if is_cat:
            blocks.append((start, start + width))
            c += 1
        start += width
    return blocks


def numeric_columns(p: int, blocks: list[tuple[int, int]]) -> np.ndarray:
    """bool (p,): which of a design's ``p`` columns are numeric, not in one of the one-hot ``blocks``
    (:func:`one_hot_blocks`)."""
    numeric = np.ones(p, dtype=bool)
    for start, stop in blocks:
        numeric[start:stop] = False
    return numeric


def design(Z: np.ndarray, cat_mask: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """(n, D) preprocessed rows -> (n, P) float64: numeric columns as they are, categorical codes one-hot
    (``widths`` codes each, from :func:`one_hot_widths` on the fitted table; larger codes clipped)."""
    parts, c = [], 0
    for j in range(Z.shape[1]):
        if cat_mask[j]:
            codes = np.clip(Z[:, j].astype(np.int64), 0, widths[c] - 1)
            parts.append(np.eye(int(widths[c]))[codes])
            c += 1
        else:
            parts.append(Z[:, j : j + 1].astype(np.float64))
    return np.concatenate(parts, axis=1)


@dataclass(frozen=True)
class Centroids:
    """A refined partition's model: rows go to the nearest of ``means`` (K, P) in the design space."""

    means: np.ndarray
    variance: float  # the shared spherical variance per design column

    def sq_distances(self, X: np.ndarray) -> np.ndarray:
        return np.maximum((X**2).sum(1)[:, None] - 2.0 * X @ self.means.T + (self.means**2).sum(1)[None], 0.0)

    def labels(self, X: np.ndarray) -> np.ndarray:
        return self.sq_distances(X).argmin(1)

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        """Soft assignment (n, K): a Gaussian per centroid with the shared variance, equal weights."""
        logits = -self.sq_distances(X) / (2.0 * self.variance)
        logits -= logits.max(1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(1, keepdims=True)


def lloyd(X: np.ndarray, probs: np.ndarray, steps: int = DEFAULT_STEPS) -> tuple[np.ndarray, Centroids]:
    """``steps`` Lloyd steps on ``X`` (n, P) from the means weighted by the soft partition ``probs`` (n, K).

    Returns the partition and the centroids it was assigned with (its labels are their nearest centroid, so new
    rows can be assigned the same way). A cluster that loses every row keeps its mean."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    weights = probs / np.maximum(probs.sum(0, keepdims=True), 1e-12)
    means = weights.T @ X
    labels = None
    for _ in range(steps):
        assigned_with = means.copy()
        new = Centroids(assigned_with, 1.0).labels(X)
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        for c in range(means.shape[0]):
            members = labels == c
            if members.any():
                means[c] = X[members].mean(0)
    within = float(((X - assigned_with[labels]) ** 2).sum()) / max(X.size, 1)
    return labels, Centroids(assigned_with, max(within, 1e-12))


def refine_candidates(X: np.ndarray, probs: np.ndarray, n_candidates: int, steps: int = DEFAULT_STEPS,
                      min_agreement: float | None = DEFAULT_MIN_AGREEMENT
                      ) -> tuple[np.ndarray, list[Centroids | None]]:
    """The network's candidate partitions, each replaced by its refinement (where the two agree, with
    ``min_agreement``).

    Parameters
    ----------
    X : (n, P) the rows in the design space (:func:`design`).
    probs : (K_max-1, n, K_max) the network's soft partitions for K = 2..K_max.
    n_candidates : how many candidates (K = 2..n_candidates+1) to refine; the others keep the network's.

    Returns
    -------
    labels : (K_max-1, n) every candidate's hard partition (refined or the network's argmax).
    centroids : per candidate, the :class:`Centroids` of its refinement, or None where the network's was kept.
    """
    from model.selection import cross_ari  # noqa: PLC0415  (selection imports this module)

    labels = probs.argmax(-1)
    kept: list[Centroids | None] = [None] * probs.shape[0]
    for c in range(min(n_candidates, probs.shape[0])):
        k = c + 2
        refined, centroids = lloyd(X, probs[c, :, :k], steps)
        if min_agreement is None or cross_ari(refined[None], labels[c][None])[0, 0] >= min_agreement:
            labels[c], kept[c] = refined, centroids
    return labels, kept


class _Mixture:
    """What a Gaussian mixture of this module does with rows, given its ``log_joint(X)`` (n, K): each row to its
    most probable component (``labels``), its posterior over the components (``probabilities``)."""

    def log_joint(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def labels(self, X: np.ndarray) -> np.ndarray:
        return self.log_joint(X).argmax(1)

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        """Soft assignment (n, K): each component's posterior probability given the row."""
        return self.posterior(X)[0]

    def posterior(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, K) posterior over the components and (n,) each row's log-likelihood up to the constant
        ``log_joint`` leaves out."""
        logits = self.log_joint(X)
        top = logits.max(1, keepdims=True)
        p = np.exp(logits - top)
        total = p.sum(1, keepdims=True)
        return p / total, top[:, 0] + np.log(total[:, 0])


@dataclass(frozen=True)
class DiagonalMixture(_Mixture):
    """A refined partition's model under ``refine="gmm"``: K Gaussians with diagonal covariances (``variances``, per
    component and design column; equal rows when shared) and mixing proportions. Rows go to the most probable
    component; the soft assignment is its posterior."""

    means: np.ndarray  # (K, P)
    variances: np.ndarray  # (K, P)
    log_weights: np.ndarray  # (K,), -inf for a component that takes no row

    def log_joint(self, X: np.ndarray) -> np.ndarray:
        """(n, K): log p(row, component) up to a constant shared by the components."""
        precision = 1.0 / self.variances
        quad = (X**2) @ precision.T - 2.0 * X @ (self.means * precision).T + (self.means**2 * precision).sum(1)[None]
        return -0.5 * (quad + np.log(self.variances).sum(1)[None]) + self.log_weights[None]


def diagonal_em(X: np.ndarray, labels: np.ndarray, k: int, steps: int = DEFAULT_EM_STEPS,
                floor: float | np.ndarray = VARIANCE_FLOOR, shared: bool = DEFAULT_SHARED,
                mixing: bool = DEFAULT_MIXING) -> tuple[np.ndarray, DiagonalMixture]:
    """``steps`` EM steps of a K-component Gaussian mixture with diagonal covariances (variances at least
    ``floor``, one for all columns or one per column (P,)) on ``X`` (n, P), started from the hard partition
    ``labels`` (values in 0..k-1).

    ``shared``: one diagonal covariance for all components (pooled within-cluster variances: k-means in a metric
    that divides each column by it), else one per component; ``mixing``: mixing proportions estimated, else equal.
    Returns the partition (each row's most probable component) and the mixture it was assigned with. A component
    that loses every row keeps its mean and variances and takes no row from then on (weight 0)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if np.any(np.asarray(floor) <= 0):
        raise ValueError(f"floor must be > 0, got {floor}")
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    if np.ndim(floor) and np.shape(floor) != (p,):
        raise ValueError(f"floor must be a number or one per column ({p},), got shape {np.shape(floor)}")
    resp = np.zeros((n, k))
    resp[np.arange(n), labels] = 1.0
    means, variances = np.zeros((k, p)), np.ones((k, p))
    for _ in range(steps):
        mass = resp.sum(0)
        kept = mass > 1e-12
        means[kept] = (resp.T @ X)[kept] / mass[kept, None]
        second = resp.T @ X**2 - mass[:, None] * means**2  # (K, P) within-cluster sums of squares
        if shared:
            variances = np.broadcast_to(second.sum(0) / n, (k, p)).copy()
        else:
            variances[kept] = second[kept] / mass[kept, None]
        log_weights = np.full(k, -np.inf)
        log_weights[kept] = np.log(mass[kept] / n) if mixing else -np.log(kept.sum())
        model = DiagonalMixture(means.copy(), np.maximum(variances, floor), log_weights)
        resp = model.probabilities(X)
    return resp.argmax(1), model


@dataclass(frozen=True)
class FullMixture(_Mixture):
    """A refined partition's model under a full-covariance mixture: K Gaussians, each with its own covariance (the
    lower Cholesky factor ``cholesky`` (K, P, P)), and mixing proportions. Rows go to the most probable component;
    the soft assignment is its posterior. Its ``log_joint`` is on the scale of :class:`DiagonalMixture`'s."""

    means: np.ndarray  # (K, P)
    cholesky: np.ndarray  # (K, P, P), lower triangular
    log_weights: np.ndarray  # (K,), -inf for a component that takes no row

    def log_joint(self, X: np.ndarray) -> np.ndarray:
        """(n, K): log p(row, component) up to a constant shared by the components (all components at once, through
        the inverses of their Cholesky factors)."""
        live = np.flatnonzero(np.isfinite(self.log_weights))
        out = np.full((X.shape[0], self.means.shape[0]), -np.inf)
        inverse = np.linalg.inv(self.cholesky[live])  # (L, P, P): L_c^-1, so z = L_c^-1 (x - mu_c)
        z = _batched_rows(inverse, X[:, None, :] - self.means[live][None])
        log_det = np.log(np.diagonal(self.cholesky[live], axis1=1, axis2=2)).sum(1)
        out[:, live] = -0.5 * (z**2).sum(2) - log_det[None] + self.log_weights[live][None]
        return out


def _batched_rows(matrices: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(n, L, P): per component c the rows ``rows[:, c]`` (n, L, P) multiplied by ``matrices[c]`` (L, P, P)."""
    return np.matmul(matrices, rows.transpose(1, 2, 0)).transpose(2, 0, 1)


def full_em(X: np.ndarray, labels: np.ndarray, k: int, steps: int = DEFAULT_EM_STEPS,
            floor: float = VARIANCE_FLOOR, tol: float | None = None) -> tuple[np.ndarray, FullMixture]:
    """``steps`` EM steps of a K-component Gaussian mixture, each component with its own full covariance (its
    eigenvalues at least ``floor``: :func:`diagonal_em`'s variance floor in every direction) and mixing proportion,
    on ``X`` (n, P), started from the hard partition ``labels`` (values in 0..k-1). Returns the partition (each
    row's most probable component) and the mixture it was assigned with. A component that loses every row keeps
    its mean and covariance and takes no row from then on (weight 0). ``tol``: stop before ``steps`` once a step
    raises the mean log-likelihood per row by less than it (EM run to convergence)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if floor <= 0:
        raise ValueError(f"floor must be > 0, got {floor}")
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    resp = np.zeros((n, k))
    resp[np.arange(n), labels] = 1.0
    means, chol = np.zeros((k, p)), np.broadcast_to(np.eye(p), (k, p, p)).copy()
    previous = -np.inf
    for _ in range(steps):
        mass = resp.sum(0)
        kept = mass > 1e-12
        live = np.flatnonzero(kept)
        means[live] = resp[:, live].T @ X / mass[live, None]
        diff = (X[:, None, :] - means[live][None]).transpose(1, 0, 2)  # (L, n, P)
        scatter = np.matmul((resp[:, live].T[:, :, None] * diff).transpose(0, 2, 1), diff) / mass[live, None, None]
        values, vectors = np.linalg.eigh(scatter)
        chol[live] = np.linalg.cholesky(np.matmul(vectors * np.maximum(values, floor)[:, None, :],
                                                  vectors.transpose(0, 2, 1)))
        log_weights = np.full(k, -np.inf)
        log_weights[kept] = np.log(mass[kept] / n)
        model = FullMixture(means.copy(), chol.copy(), log_weights)
        resp, row_ll = model.posterior(X)
        if tol is not None:  # the mean log-likelihood per row, up to a constant
            mean_ll = float(row_ll.mean())
            if mean_ll - previous < tol:
                break
            previous = mean_ll
    return resp.argmax(1), model


def mixture_refinement(X: np.ndarray, labels: np.ndarray, k: int,
                       diagonal: tuple[np.ndarray, DiagonalMixture] | None = None
                       ) -> tuple[np.ndarray, DiagonalMixture | FullMixture]:
    """``refine="gmm"``'s mixture started from the hard partition ``labels`` of ``X`` (n, P): full covariances
    (:func:`full_em`) where P <= :data:`FULL_COVARIANCE_MAX_WIDTH`, else diagonal ones (:func:`diagonal_em`; its
    result ``diagonal`` when already fitted from the same partition) -> (partition, mixture)."""
    if X.shape[1] <= FULL_COVARIANCE_MAX_WIDTH:
        return full_em(X, labels, k)
    return diagonal if diagonal is not None else diagonal_em(X, labels, k)

