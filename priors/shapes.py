"""Low-dimensional tables whose clusters are shapes, not Gaussian blobs: for fitting the K ranker on them.

Public clustering batteries are mostly tables of 2-3 columns whose clusters are arcs, rings, sheared or stretched
blobs of unequal spread. The paper's prior draws Gaussian mixtures (and ZEUS's smoothly warped ones) in 2-64
columns, so the K ranker (:mod:`model.k_ranker`), fitted on prior tables only, has never seen a curved cluster:
the network's partition of two interleaved arcs into four or five convex pieces then looks to it like a good
partition (compact pieces, a high silhouette). These tables are a documented superset of the prior used only to fit
the ranker (:mod:`pipeline.k_ranker_fit`, ``shape_tables``); the network is not trained on them.

Draw, from the seed's own stream (``SeedSequence(seed, spawn_key=(4,))``, so no seed of the paper's prior, of the
nuisances or of the one-mode tables is reused):

* N ~ U{n_rows}; a kind from :data:`KINDS`, uniformly:

  - ``arcs``: two interleaved half circles (the "moons"), K = 2, their gap and thickness drawn;
  - ``rings``: 2-3 concentric rings, K = 2-3, radii 1 < r_2 < r_3 apart by 0.8-2, thickness drawn;
  - ``sheared``: K = 2-6 Gaussian blobs, then one random linear map of condition number 2-10;
  - ``unequal``: K = 2-6 isotropic blobs whose spreads differ by a factor of up to 6;
  - ``bars``: K = 2-5 parallel bars, 5-20 times longer than wide;
  - ``blobs``: K = 2-8 isotropic blobs of equal spread;

  blob centres are drawn in a box, rejected until every two are 2.5-4 spreads apart (drawn), so clusters touch
  but are there to be found; clusters take weights ~ Dirichlet(4) (at least 5 % of the rows each);
* w.p. ``P_THIRD`` a third column: pure noise (Gaussian), or for blobs-like kinds a third coordinate of the
  centres;
* a random rotation of the plane, every column z-normalised.
"""

from __future__ import annotations

import numpy as np

from priors._common import assign_labels, random_rotation, standardize
from priors.config import _check_range
from priors.sample import PriorDataset

KINDS = ("arcs", "rings", "sheared", "unequal", "bars", "blobs")
#: P(a table has a third column).
P_THIRD = 0.3
#: The mechanism name in ``meta``.
MECHANISM = "shapes"
#: The generator's version: raise it whenever a seed's table changes (the ranker's records are kept by it).
SHAPES_VERSION = 1


def _weights(rng: np.random.Generator, k: int) -> np.ndarray:
    w = rng.dirichlet(np.full(k, 4.0))
    w = np.maximum(w, 0.05)
    return w / w.sum()


def _centres(rng: np.random.Generator, k: int, d: int, spreads: np.ndarray) -> np.ndarray:
    """k centres in d dimensions, every two at least ``gap`` times their larger spread apart."""
    gap = rng.uniform(2.5, 4.0)
    box = gap * spreads.max() * k ** (1.0 / d) * 1.5
    for _ in range(1000):
        c = rng.uniform(-box, box, size=(k, d))
        far = np.linalg.norm(c[:, None] - c[None], axis=-1) >= gap * np.maximum(spreads[:, None], spreads[None])
        if far[~np.eye(k, dtype=bool)].all():
            return c
        box *= 1.05
    raise RuntimeError("no centres found")  # unreachable: the box grows until they fit


def _blobs(rng, y, k, d, spreads):
    c = _centres(rng, k, d, spreads)
    return c[y] + rng.standard_normal((len(y), d)) * spreads[y, None]


def _draw(rng: np.random.Generator, kind: str, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    if kind == "arcs":
        y = assign_labels(rng, _weights(rng, 2), n, max(2, n // 20))
        t = rng.uniform(0.0, np.pi, n)
        gap, width = rng.uniform(-0.3, 0.3), rng.uniform(0.04, 0.15)
        X = np.where(y[:, None] == 0, np.c_[np.cos(t), np.sin(t)],
                     np.c_[1.0 - np.cos(t), 0.5 - gap - np.sin(t)])
        return X + rng.standard_normal((n, 2)) * width, y
    if kind == "rings":
        k = int(rng.integers(2, 4))
        y = assign_labels(rng, _weights(rng, k), n, max(2, n // 20))
        radii = np.cumsum(np.r_[1.0, rng.uniform(0.8, 2.0, k - 1)])
        t = rng.uniform(0.0, 2.0 * np.pi, n)
        r = radii[y] + rng.standard_normal(n) * rng.uniform(0.05, 0.2)
        return np.c_[r * np.cos(t), r * np.sin(t)], y
    k = {"sheared": (2, 6), "unequal": (2, 6), "bars": (2, 5), "blobs": (2, 8)}[kind]
    k = int(rng.integers(k[0], k[1] + 1))
    y = assign_labels(rng, _weights(rng, k), n, max(2, n // 20))
    if kind == "bars":
        length = rng.uniform(5.0, 20.0)
        offsets = np.cumsum(np.r_[0.0, rng.uniform(2.5, 4.0, k - 1)])
        X = np.c_[rng.standard_normal(n) * length / 4.0, offsets[y] + rng.standard_normal(n) * 0.5]
        return X, y
    spreads = np.exp(rng.uniform(0.0, np.log(6.0), k)) if kind == "unequal" else np.ones(k)
    X = _blobs(rng, y, k, d, spreads)
    if kind == "sheared":
        u, v = random_rotation(rng, d), random_rotation(rng, d)
        s = np.exp(np.linspace(0.0, -np.log(rng.uniform(2.0, 10.0)), d))
        X = X @ (u * s) @ v
    return X, y


def sample_shapes(seed: int, n_rows: tuple[int, int] = (100, 1000)) -> PriorDataset:
    """One table of a kind in :data:`KINDS` and its labels (module docstring); deterministic in ``seed``."""
    _check_range("n_rows", tuple(n_rows), 40, integer=True)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(4,)))
    n = int(rng.integers(n_rows[0], n_rows[1] + 1))
    kind = KINDS[int(rng.integers(len(KINDS)))]
    third = bool(rng.random() < P_THIRD)
    planar = kind in ("arcs", "rings", "bars")
    X, y = _draw(rng, kind, n, 3 if third and not planar else 2)
    X = X @ random_rotation(rng, X.shape[1])
    if third and planar:
        X = np.c_[X, rng.standard_normal(n) * X.std(0).mean()]
    X = standardize(X)[0]
    meta = {"seed": int(seed), "mechanism": MECHANISM, "n_continuous": X.shape[1], "kind": kind,
            "version": SHAPES_VERSION}
    return PriorDataset(X=X.astype(np.float32), y=y.astype(np.int64), n_clusters=int(y.max()) + 1, categorical=(),
                        meta=meta)
