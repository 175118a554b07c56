"""Tables with one mode: no cluster structure, for teaching CIN that such a table holds few clusters.

The paper's prior draws 2 to 10 clusters and nothing else, so a table with a single mode (one Gaussian or
Student-t cloud, possibly skewed or partly discretised) is, to a network trained on it, most like a mixture of
many heavily overlapping clusters: the shipped CIN's posterior rises towards K = 10 on such tables and the
estimator answers K = 6-9. Real tables often look like that (classes that cut through one cloud), and k-means with
the silhouette answers 2 there. These tables are a documented superset of the prior used only to refit CIN
(:mod:`pipeline.cin_refit`, ``one_mode_tasks``): their answer is K = 2, the fewest clusters the network reports.
The labels cut the table at a quantile of its first principal component, the split that k-means at K = 2 makes
of such a cloud; only the K reaches CIN's loss.

Draw, from the seed's own stream (``SeedSequence(seed, spawn_key=(3,))``, so no seed of the paper's prior or of
the nuisances is reused):

* N ~ U{n_rows}, D ~ U{n_features};
* rows ``z @ diag(sqrt(lambda)) @ Q^T``: z Gaussian, or w.p. ``P_STUDENT`` multivariate Student-t with 3 degrees
  of freedom (one elliptical mode with heavy tails); lambda_i = exp(-c i / D), c ~ U(0, 6), from round to
  elongated; Q a random rotation;
* w.p. ``P_SKEW`` every column is z-normalised and skewed, x -> exp(a x), a ~ U(0.25, 1) per column;
* w.p. ``P_ORDINAL`` a fraction U(0.1, 0.5) of the columns (at least one) is cut into 2-6 ordinal levels at random
  quantiles (still numeric, as such columns reach the estimator);
* every column z-normalised (a column the cuts left constant stays 0); labels 1 above a quantile U(0.3, 0.7) of
  the first principal component, else 0.
"""

from __future__ import annotations

import numpy as np

from priors.config import _check_range
from priors.sample import PriorDataset

P_STUDENT = 0.25
P_SKEW = 0.5
P_ORDINAL = 0.3
#: The mechanism name in ``meta`` (and in CIN refit records: neither GMM nor ZEUS).
MECHANISM = "onemode"
#: The generator's version: CIN refit records of one-mode tables are reused only under the same version
#: (:mod:`pipeline.cin_refit`). Raise it whenever a seed's table changes.
ONE_MODE_VERSION = 1


def sample_one_mode(seed: int, n_rows: tuple[int, int] = (500, 1000),
                    n_features: tuple[int, int] = (2, 64)) -> PriorDataset:
    """One table with a single mode and its K = 2 labels (module docstring); deterministic in ``seed``."""
    _check_range("n_rows", tuple(n_rows), 4, integer=True)
    _check_range("n_features", tuple(n_features), 2, integer=True)  # one column cannot carry a cut of its cloud
    (n_lo, n_hi), (d_lo, d_hi) = n_rows, n_features
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(3,)))
    n = int(rng.integers(n_lo, n_hi + 1))
    d = int(rng.integers(d_lo, d_hi + 1))
    student = bool(rng.random() < P_STUDENT)
    scale = np.exp(-rng.uniform(0.0, 6.0) * np.arange(d) / d)
    rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
    z = rng.standard_normal((n, d))
    if student:  # multivariate t: one radial scale per row keeps the cloud elliptical
        z *= np.sqrt(3.0 / rng.chisquare(3.0, size=(n, 1)))
    X = (z * np.sqrt(scale)) @ rotation.T
    skewed = bool(rng.random() < P_SKEW)
    if skewed:
        X = _znorm(X)
        X = np.exp(rng.uniform(0.25, 1.0, size=d) * X)
    ordinal: list[int] = []
    if rng.random() < P_ORDINAL:
        ordinal = sorted(int(j) for j in rng.choice(d, max(1, int(rng.uniform(0.1, 0.5) * d)), replace=False))
        for j in ordinal:
            levels = int(rng.integers(2, 7))
            cuts = np.quantile(X[:, j], np.sort(rng.uniform(0.05, 0.95, size=levels - 1)))
            X[:, j] = np.digitize(X[:, j], cuts)
    X = _znorm(X)
    first_pc = np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
    score = X @ first_pc
    y = (score > np.quantile(score, rng.uniform(0.3, 0.7))).astype(np.int64)
    if y.min() == y.max():  # a table the cuts made nearly constant along its first component
        y[np.argsort(score)[n // 2:]] = 1 - y[0]
    meta = {"seed": int(seed), "mechanism": MECHANISM, "n_continuous": d, "student_t": student, "skewed": skewed,
            "ordinal_columns": ordinal}
    return PriorDataset(X=X.astype(np.float32), y=y, n_clusters=2, categorical=(), meta=meta)


def _znorm(X: np.ndarray) -> np.ndarray:
    std = X.std(0)
    return (X - X.mean(0)) / np.where(std > 0, std, 1.0)
