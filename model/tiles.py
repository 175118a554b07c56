"""Gaussian components that tile one cluster, merged into it.

On a few columns BIC fits a cluster that is not Gaussian (a crescent, a ring, a curved band) with several
full-covariance components, and the partition cuts it into tiles. Two neighbouring tiles of one cluster meet without
a valley in the rows' density between them, while their two fitted Gaussians, each falling off towards the other,
put one there; two clusters leave a valley in the rows about as deep as their Gaussians predict, and a narrow
cluster inside a wide one, which the fitted pair itself shows without a valley, is kept apart.

So for each pair of components the rows of both are projected onto the pair's discriminant direction, and between
the two projected means the valley is measured twice (:func:`valley_ratios`): in the rows' kernel density and in the
pair's fitted mixture smoothed by the same kernel, each as the lowest density between the means over the lower of
the densities at the means (1: no valley). A pair qualifies where the rows' ratio is at least :data:`MIN_RATIO` and
exceeds the fitted pair's by at least :data:`MIN_FILL`. A cluster cut into tiles gives a chain of such pairs (each
tile and its neighbours); among Gaussian clusters a pair qualifies now and then by chance, alone
(``docs/results/tile-pairs.md``). So components merge only where at least :data:`MIN_PAIRS` pairs qualify, and
then transitively, strongest fill first, never into fewer than two clusters (:func:`tile_groups`); only where BIC
chose at least :data:`MIN_COMPONENTS` components (on 2-3-column prior tables BIC's K is mostly below the labelled K,
so a merge there costs, while the shapes it tiles take many components).

Chosen on development data (``benchmarks/choose_low_dim.py``, ``docs/results/choice-low-dim-tiles*.md``), on the
first draw and two fresh ones each: the chain rule at thresholds 0.85 / 0.05, against merging any qualifying pair at
stricter ones (0.95 / 0.1): shapes +0.095 +- 0.023, +0.079 +- 0.022, +0.084 +- 0.024, no set lost, no blobs merged
on 7-10 Gaussian blobs in 2-3 columns (``many-blobs``) or, a check added then, tilted ones (``many-ellipses``);
then these looser thresholds, the best of four on the first draw (``-looser*.md``): shapes +0.030 +- 0.012, +0.040
+- 0.014, +0.042 +- 0.014, no set lost (one tilted-blobs table of 300 joined). Designs with a column of few levels
never merge (coarse 2-4 columns lost, -0.002 +- 0.001).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from model.refinement import FullMixture, _Mixture

#: :func:`tile_groups` merges only where the mixture has at least this many live components.
MIN_COMPONENTS = 7
#: the least valley ratio of a pair's rows (lowest density between the means over the lower at the means)
MIN_RATIO = 0.8
#: the least amount by which the rows' valley ratio exceeds the fitted pair's
MIN_FILL = 0.03
#: :func:`tile_groups` merges only where at least this many pairs qualify
MIN_PAIRS = 3
#: a pair of fewer rows than this is never merged (no density to read)
MIN_ROWS = 10
#: points between the two projected means at which both densities are read
GRID = 101


def valley_ratios(rows: np.ndarray, mixture: FullMixture, a: int, b: int) -> tuple[float, float]:
    """(rows' valley ratio, fitted pair's valley ratio) of components ``a`` and ``b`` of ``mixture``: ``rows`` (m, P)
    are the rows assigned to either, projected onto the pair's discriminant direction (Sigma_a + Sigma_b)^-1
    (mu_a - mu_b); each ratio is the lowest density between the two projected means over the lower of the densities
    at them, at most 1. The rows' density is a Gaussian kernel density (Silverman's bandwidth h); the pair's is its
    two projected Gaussians, weighted by their mixing proportions, each widened by h^2 as the kernel widens the rows."""
    chol = mixture.cholesky[[a, b]]
    cov = dict(zip((a, b), chol @ np.swapaxes(chol, 1, 2)))  # the pair's covariances only
    direction = np.linalg.solve(cov[a] + cov[b], mixture.means[a] - mixture.means[b])
    if not np.linalg.norm(direction) > 0:  # one mean: no direction to read a valley along
        return 1.0, 1.0
    direction /= np.linalg.norm(direction)
    t = rows @ direction
    centres = mixture.means[[a, b]] @ direction
    grid = np.linspace(centres.min(), centres.max(), GRID)
    h = max(1.06 * float(t.std()) * len(t) ** -0.2, 1e-12)
    data = np.exp(-0.5 * ((grid[:, None] - t[None]) / h) ** 2).sum(1)
    weights = np.exp(mixture.log_weights[[a, b]] - np.max(mixture.log_weights[[a, b]]))
    spread = np.array([direction @ cov[c] @ direction for c in (a, b)]) + h * h
    fitted = (weights[None] * np.exp(-0.5 * (grid[:, None] - centres[None]) ** 2 / spread[None])
              / np.sqrt(spread[None])).sum(1)

    def ratio(g: np.ndarray) -> float:
        low = min(g[0], g[-1])
        return 1.0 if low <= 0 else float(min(1.0, g.min() / low))

    return ratio(data), ratio(fitted)


def live_components(mixture: FullMixture, labels: np.ndarray) -> list[int]:
    """The mixture's components that keep a weight and take at least one of the rows (``labels``, their components)."""
    return [c for c in range(len(mixture.means)) if np.isfinite(mixture.log_weights[c]) and (labels == c).any()]


def qualifying_pairs(X: np.ndarray, mixture: FullMixture, labels: np.ndarray, live: list[int],
                     min_ratio: float = MIN_RATIO, min_fill: float = MIN_FILL) -> list[tuple[int, int, float, float]]:
    """(a, b, rows' valley ratio, fitted pair's) of each pair of ``live`` components whose rows (of ``X``, assigned
    by ``labels``; at least :data:`MIN_ROWS`) reach ``min_ratio`` and exceed the fitted pair's ratio by ``min_fill``."""
    pairs = []
    for i, a in enumerate(live):
        for b in live[i + 1 :]:
            rows = X[(labels == a) | (labels == b)]
            if len(rows) < MIN_ROWS:
                continue
            data, fitted = valley_ratios(rows, mixture, a, b)
            if data >= min_ratio and data - fitted >= min_fill:
                pairs.append((a, b, data, fitted))
    return pairs


def tile_groups(X: np.ndarray, mixture: FullMixture, labels: np.ndarray, min_components: int = MIN_COMPONENTS,
                min_ratio: float = MIN_RATIO, min_fill: float = MIN_FILL, min_pairs: int = MIN_PAIRS) -> np.ndarray:
    """The cluster (0..G-1) of each of the mixture's components, components that tile one cluster merged (module
    docstring): ``X`` (n, P) the rows the mixture was fitted to, ``labels`` (n,) their components. A component that
    takes no row belongs to no cluster (-1), as the estimator drops an emptied component. Fewer than
    ``min_components`` components that take rows: each its own cluster."""
    live = live_components(mixture, labels)
    groups = np.arange(len(mixture.means))
    if len(live) < min_components:
        return _numbered(groups, live)
    edges = [(data - fitted, a, b) for a, b, data, fitted in qualifying_pairs(X, mixture, labels, live, min_ratio,
                                                                              min_fill)]
    if len(edges) < min_pairs:
        return _numbered(groups, live)
    parent = {c: c for c in live}

    def root(c: int) -> int:
        while parent[c] != c:
            c = parent[c]
        return c

    clusters = len(live)
    for _, a, b in sorted(edges, key=lambda e: (-e[0], e[1], e[2])):  # strongest fill first
        ra, rb = root(a), root(b)
        if ra != rb and clusters > 2:
            parent[max(ra, rb)] = min(ra, rb)
            clusters -= 1
    for c in live:
        groups[c] = root(c)
    return _numbered(groups, live)


def _numbered(groups: np.ndarray, live: list[int]) -> np.ndarray:
    """``groups`` renumbered 0..G-1 in the order of their smallest live component; components not in ``live``: -1."""
    roots = sorted({int(groups[c]) for c in live})
    number = {r: i for i, r in enumerate(roots)}
    return np.array([number[int(g)] if c in live else -1 for c, g in enumerate(groups)], dtype=np.int64)


@dataclass(frozen=True)
class MergedMixture(_Mixture):
    """A full-covariance mixture whose components are grouped into clusters (``groups`` (components,), values
    0..G-1; -1: a component of no cluster, left out): a row's probability of a cluster is the sum over its
    components, so rows go to the cluster of their most probable group, not component."""

    mixture: FullMixture
    groups: np.ndarray

    @property
    def means(self) -> np.ndarray:
        """(G, P): each cluster's mean, its components' means weighted by their mixing proportions."""
        w = np.exp(self.mixture.log_weights)  # 0 for a component that takes no row
        out = np.zeros((int(self.groups.max()) + 1, self.mixture.means.shape[1]))
        for g in range(len(out)):
            part = self.groups == g
            total = w[part].sum()
            out[g] = (w[part, None] * self.mixture.means[part]).sum(0) / total if total > 0 else \
                self.mixture.means[part].mean(0)
        return out

    def log_joint(self, X: np.ndarray) -> np.ndarray:
        """(n, G): log p(row, cluster), the components' joints summed within each cluster."""
        joint = self.mixture.log_joint(X)
        return np.stack([logsumexp(joint[:, self.groups == g], axis=1) for g in range(int(self.groups.max()) + 1)], 1)
