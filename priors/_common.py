"""Small helpers shared by the GMM and ZEUS priors (private)."""

from __future__ import annotations

import operator

import numpy as np


def assign_labels(rng: np.random.Generator, weights: np.ndarray, n_rows: int, min_size: int) -> np.ndarray:
    """Cluster labels of n_rows points, counts ~ Multinomial(n_rows, weights), every cluster >= min_size.

    A cluster that falls short takes rows from the currently largest cluster (from the next largest once that
    one is down to min_size); the labels are then shuffled.
    """
    k = weights.size
    min_size, n_rows = operator.index(min_size), operator.index(n_rows)  # integers, or TypeError
    if k * min_size > n_rows:
        raise ValueError(f"{n_rows} rows cannot hold {k} clusters of at least {min_size} rows")
    counts = rng.multinomial(n_rows, weights / weights.sum())
    for j in np.flatnonzero(counts < min_size):
        while counts[j] < min_size:  # k * min_size <= n_rows: some other cluster has rows to spare
            donor = int(np.argmax(counts))
            moved = min(min_size - counts[j], counts[donor] - min_size)
            counts[donor] -= moved
            counts[j] += moved
    return rng.permutation(np.repeat(np.arange(k), counts))


def standardize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column-wise z-normalisation; returns (z, mean, std). A constant column raises ValueError."""
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    if not np.all(std > 1e-12 * np.maximum(1.0, np.abs(mean))):
        raise ValueError("constant column")
    return (x - mean) / std, mean, std


def random_rotation(rng: np.random.Generator, dim: int) -> np.ndarray:
    """A Haar-distributed orthogonal (dim, dim) matrix (QR of a Gaussian matrix with sign correction)."""
    q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
    return q * np.sign(np.diagonal(r))[None, :]
