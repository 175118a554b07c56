"""Nuisances of real tables that the paper's prior lacks: irrelevant columns and contaminated rows.

Off by default (:class:`priors.config.NuisanceConfig`), so the default prior stays the paper's, draw for draw.
When on, the prior is a documented superset of the paper's: every table it can draw without nuisances is still
drawn, and some tables also get

* **noise columns**: ``m`` of the table's D columns (D as the paper samples it) carry no cluster information:
  each is independent of the rows' clusters, drawn from one of four families (Gaussian, uniform, log-normal,
  discrete with 2-6 levels), then z-normalised like every continuous column. The other D - m columns are the
  paper's GMM or ZEUS table (at least 2 of them);
* **contaminated rows**: a fraction of the rows keep their cluster but lie far out in its direction: each
  continuous part of such a row moves from its cluster's centre by a factor ``lambda`` (Tukey's contaminated
  model, scaled: ``x <- c + lambda (x - c)``), and the continuous columns are z-normalised again afterwards, as
  the estimator would;
* **coarsely measured columns**: some of the continuous columns that carry the clusters are read as a survey or
  a lab sheet records them (:func:`discretise`): ordinal levels (cut at random quantiles), values rounded to an
  even grid, or counts (Poisson with a log-rate linear in the column), then z-normalised again. They keep their
  clusters' information, less of it, on a few distinct values: the rounded tables that real suites are full of;
* **skewed columns**: some of the continuous columns that carry the clusters are measured on a multiplicative
  scale (:func:`skew`: ``exp(a z)`` of the column's z-scores), as prices, amounts and concentrations are: every
  cluster gets a long right tail, then the column is z-normalised again. Monotone, so no information is lost.

Why: the shipped network lost 2-3 times what KMeans with silhouette loses when held-out tables of the paper's
prior get noise rows, irrelevant columns or stretched tails (``benchmarks/robustness.py``; figures in
docs/DESIGN.md, "Nuisances"). Both nuisances are common in real tables. The decisions (which tables, how many
columns and rows) and the nuisances' values come from one random stream of their own (``spawn_key=(2,)`` of the
seed; the coarse measurements another, ``spawn_key=(5,)``, and the skewed scales a third, ``spawn_key=(6,)``, so
turning one on changes no other nuisance's draws), so turning them on does not change the N, D, K and mechanism of
any seed, and a table whose plan draws no nuisance is the paper's table of that seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from priors._common import standardize
from priors.config import NuisanceConfig

__all__ = ["NuisancePlan", "plan_nuisance", "noise_columns", "contaminate", "discretise", "skew", "NOISE_FAMILIES",
           "MEASUREMENTS"]

NOISE_FAMILIES = ("gaussian", "uniform", "lognormal", "discrete")
#: How a coarsely measured column is read (:func:`discretise`).
MEASUREMENTS = ("ordinal", "rounded", "count")
_MIN_INFORMATIVE = 1  # the fewest columns of the paper's table that a table with noise columns can keep


@dataclass(frozen=True)
class NuisancePlan:
    """What one table gets: ``n_noise`` noise columns (of its D) and ``n_contaminated`` contaminated rows."""

    n_noise: int = 0
    n_contaminated: int = 0

    @property
    def active(self) -> bool:
        return self.n_noise > 0 or self.n_contaminated > 0


def nuisance_rng(seed: int) -> np.random.Generator:
    """The stream of a seed's nuisance draws, apart from the streams of its spec and its data."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(2,)))


def measurement_rng(seed: int) -> np.random.Generator:
    """The stream of a seed's coarse measurements (:func:`discretise`), apart from every other stream."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(5,)))


def scale_rng(seed: int) -> np.random.Generator:
    """The stream of a seed's multiplicative scales (:func:`skew`), apart from every other stream."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(6,)))


def plan_nuisance(rng: np.random.Generator, n_rows: int, n_features: int, cfg: NuisanceConfig,
                  min_informative: int = 2) -> NuisancePlan:
    """Draw whether the table gets noise columns and contaminated rows, and how many.

    Always consumes the same random numbers, whatever the table's size, so one seed's plan depends only on the
    seed and the config. ``min_informative``: columns of the paper's table that stay (a GMM table
    ``cfg.min_informative``, a ZEUS table ``zeus.min_cont_features``), so noise columns need D > min_informative."""
    u_noise, frac_noise, u_cont, frac_cont = rng.random(4)
    keep = max(_MIN_INFORMATIVE, int(min_informative))
    n_noise = 0
    if u_noise < cfg.p_noise_features and n_features > keep:
        lo, hi = cfg.noise_fraction
        share = lo + (hi - lo) * frac_noise
        n_noise = int(np.clip(round(share * n_features), 1, n_features - keep))
    n_cont = 0
    if u_cont < cfg.p_contamination:
        lo, hi = cfg.contamination_fraction
        n_cont = max(1, int(round((lo + (hi - lo) * frac_cont) * n_rows)))
    return NuisancePlan(n_noise, n_cont)


def noise_columns(rng: np.random.Generator, n_rows: int, n_columns: int) -> np.ndarray:
    """(N, m) z-normalised columns independent of everything else, each of a family drawn uniformly from
    :data:`NOISE_FAMILIES`; a discrete draw that came out constant becomes Gaussian."""
    out = np.empty((n_rows, n_columns))
    for j in range(n_columns):
        family = NOISE_FAMILIES[int(rng.integers(len(NOISE_FAMILIES)))]
        if family == "gaussian":
            col = rng.standard_normal(n_rows)
        elif family == "uniform":
            col = rng.uniform(-1.0, 1.0, n_rows)
        elif family == "lognormal":
            col = np.exp(rng.uniform(0.5, 1.5) * rng.standard_normal(n_rows))
        else:
            levels = int(rng.integers(2, 7))
            col = rng.choice(levels, size=n_rows, p=rng.dirichlet(np.ones(levels))).astype(np.float64)
            if np.ptp(col) == 0.0:
                col = rng.standard_normal(n_rows)
        out[:, j] = standardize(col[:, None])[0][:, 0]
    return out


def contaminate(rng: np.random.Generator, x: np.ndarray, y: np.ndarray, n_rows: int,
                scale: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Move ``n_rows`` random rows of ``x`` (N, d) away from their cluster's centre (the mean of the cluster's
    rows) by a factor lambda ~ U(scale) each, then z-normalise the columns again -> (new x, the rows moved,
    sorted). Labels are unchanged. Only rows of clusters with two or more rows are drawn (a lone row is its
    cluster's centre and would not move), so fewer than ``n_rows`` may move."""
    sizes = np.bincount(y)
    movable = np.flatnonzero(sizes[y] >= 2)
    rows = np.sort(rng.choice(movable, size=min(n_rows, len(movable)), replace=False))
    lam = rng.uniform(scale[0], scale[1], size=len(rows))
    centres = np.stack([x[y == c].mean(axis=0) for c in range(int(y.max()) + 1)])
    moved = x.copy()
    c = centres[y[rows]]
    moved[rows] = c + lam[:, None] * (x[rows] - c)
    return standardize(moved)[0], rows


def _measured_columns(rng: np.random.Generator, d: int, p: float, fraction: tuple[float, float]) -> list[int]:
    """With probability ``p`` (drawn first, always), a share U(``fraction``) (at least one) of ``d`` columns, sorted;
    else (or with no columns) none."""
    if not rng.random() < p or d == 0:
        return []
    n = max(1, int(round(rng.uniform(*fraction) * d)))
    return sorted(int(j) for j in rng.choice(d, size=min(n, d), replace=False))


def discretise(rng: np.random.Generator, x: np.ndarray, cfg: NuisanceConfig) -> tuple[np.ndarray, list[int]]:
    """With probability ``cfg.p_discrete``, a share U(``cfg.discrete_fraction``) (at least one) of the continuous
    columns ``x`` (N, d) measured coarsely, each read one way of :data:`MEASUREMENTS` drawn uniformly, then
    z-normalised -> (new x, the columns changed, sorted). Always draws the decision first, so a table that is not
    measured coarsely consumes one number.

    - ``ordinal``: L ~ U{discrete_levels} levels, cut at L - 1 random quantiles (each in 0.05-0.95);
    - ``rounded``: L levels of an even grid over the column's 1st-99th percentile range (clipped at its ends);
    - ``count``: Poisson(exp(a z + b)) of the z-normalised column z, a ~ U(0.3, 1.2), b ~ U(-1, 2).

    A column that comes out constant stays as it was (a table must keep its columns distinct)."""
    columns = _measured_columns(rng, x.shape[1], cfg.p_discrete, cfg.discrete_fraction)
    if not columns:
        return x, []
    out = x.copy()
    changed = []
    for j in columns:
        z = standardize(x[:, j:j + 1])[0][:, 0]
        how = MEASUREMENTS[int(rng.integers(len(MEASUREMENTS)))]
        levels = int(rng.integers(cfg.discrete_levels[0], cfg.discrete_levels[1] + 1))
        if how == "ordinal":
            col = np.digitize(z, np.quantile(z, np.sort(rng.uniform(0.05, 0.95, levels - 1)))).astype(np.float64)
        elif how == "rounded":
            a, b = np.quantile(z, [0.01, 0.99])
            col = np.clip(np.round((z - a) / (b - a) * (levels - 1)), 0, levels - 1)
        else:
            col = rng.poisson(np.exp(rng.uniform(0.3, 1.2) * z + rng.uniform(-1.0, 2.0))).astype(np.float64)
        if np.ptp(col) > 0.0:
            out[:, j] = standardize(col[:, None])[0][:, 0]
            changed.append(j)
    return out, changed


def skew(rng: np.random.Generator, x: np.ndarray, cfg: NuisanceConfig) -> tuple[np.ndarray, list[int]]:
    """With probability ``cfg.p_skewed``, a share U(``cfg.skewed_fraction``) (at least one) of the continuous
    columns ``x`` (N, d) measured on a multiplicative scale: ``exp(a z)`` of the column's z-scores z,
    a ~ U(``cfg.skew_strength``), then z-normalised -> (new x, the columns changed, sorted). Always draws the
    decision first, so a table that is not skewed consumes one number."""
    columns = _measured_columns(rng, x.shape[1], cfg.p_skewed, cfg.skewed_fraction)
    if not columns:
        return x, []
    out = x.copy()
    for j in columns:
        z = standardize(x[:, j:j + 1])[0][:, 0]
        a = rng.uniform(*cfg.skew_strength)
        out[:, j] = standardize(np.exp(np.minimum(a * z, 50.0))[:, None])[0][:, 0]  # (a contaminated row: finite)
    return out, columns
