"""Dataset-level sampling: N, D, K and the mechanism, then one GMM or ZEUS dataset, normalised and permuted
(and, only where the config turns them on, noise columns and contaminated rows: :mod:`priors.nuisance`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from priors._common import standardize
from priors.config import PriorConfig
from priors.gmm import sample_gmm
from priors.nuisance import (NuisancePlan, contaminate, discretise, measurement_rng, noise_columns, nuisance_rng,
                             plan_nuisance, scale_rng, skew)
from priors.zeus import sample_zeus

logger = logging.getLogger(__name__)

__all__ = ["PriorDataset", "TaskSpec", "sample_task_spec", "spec_for_seed", "sample_dataset"]

Kind = Literal["mix", "gmm", "zeus"]
_MAX_ATTEMPTS = 20  # redraws of a dataset that came out invalid (NaN, inf or a constant column)


@dataclass(frozen=True)
class TaskSpec:
    """Dataset-level parameters: N rows, D features, K clusters and the mechanism ("gmm" or "zeus")."""

    n_rows: int
    n_features: int
    n_clusters: int
    mechanism: Literal["gmm", "zeus"]


@dataclass(frozen=True)
class PriorDataset:
    """One synthetic clustering task.

    Attributes
    ----------
    X : ndarray of float32, shape (N, D)
        Continuous columns z-normalised; categorical columns hold integer codes 0..C-1. Columns are randomly
        permuted.
    y : ndarray of int64, shape (N,)
        True cluster labels 0..K-1 (every cluster is present).
    n_clusters : int
        K.
    categorical : tuple of int
        Indices of the categorical columns of X.
    meta : dict
        ``seed``, ``mechanism``, ``n_continuous``; GMM: ``omega_target``, ``omega_achieved``, ``bayes_labels``
        (N,), ``params`` (weights, means, covariances in the coordinates of X), ``spherical``,
        ``homoscedastic``; ZEUS: ``iresnet``, ``n_blocks``, ``lipschitz``, ``cardinalities`` (aligned with
        ``categorical``). Keys that do not apply to a mechanism hold None. ``noise_columns``,
        ``discrete_columns`` and ``skewed_columns`` (indices of X) and ``contaminated_rows`` (sorted row indices)
        are empty unless ``config.nuisance`` is on; a GMM table with any has ``params`` None (the mixture no
        longer describes X), and with contaminated rows, coarse or skewed columns ``bayes_labels`` None.
    """

    X: np.ndarray
    y: np.ndarray
    n_clusters: int
    categorical: tuple
    meta: dict[str, Any] = field(default_factory=dict)


def sample_task_spec(rng: np.random.Generator, config: PriorConfig) -> TaskSpec:
    """Draw N ~ U{n_rows}, D ~ U{n_features}, K (K_min w.p. p_k_min else U{K_min+1..K_max}) and the mechanism.

    Always consumes the same random numbers, whatever the probabilities, so one seed gives the same N, D, K
    under ``kind="mix"``, ``"gmm"`` and ``"zeus"``.
    """
    n_rows = int(rng.integers(config.n_rows[0], config.n_rows[1] + 1))
    n_features = int(rng.integers(config.n_features[0], config.n_features[1] + 1))
    k_min, k_max = config.n_clusters
    pick_min = rng.random() < config.p_k_min
    other = int(rng.integers(k_min + 1, k_max + 1)) if k_max > k_min else k_min
    n_clusters = k_min if (pick_min or k_max == k_min) else other
    mechanism = "gmm" if rng.random() < config.p_gmm else "zeus"
    return TaskSpec(n_rows, n_features, n_clusters, mechanism)


def _check(seed: int, kind: str, config: PriorConfig | None) -> PriorConfig:
    """Validate the arguments of sample_dataset; returns the effective config (p_gmm forced by kind)."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if kind not in ("mix", "gmm", "zeus"):
        raise ValueError(f"kind must be 'mix', 'gmm' or 'zeus', got {kind!r}")
    config = PriorConfig() if config is None else config
    if not isinstance(config, PriorConfig):
        raise TypeError(f"config must be a PriorConfig, got {type(config).__name__}")
    return config if kind == "mix" else replace(config, p_gmm=1.0 if kind == "gmm" else 0.0)


def spec_for_seed(seed: int, kind: Kind = "mix", config: PriorConfig | None = None) -> TaskSpec:
    """The N, D, K and mechanism that :func:`sample_dataset` uses for this seed, without generating data."""
    config = _check(seed, kind, config)
    spec_seq, _ = np.random.SeedSequence(int(seed)).spawn(2)
    return sample_task_spec(np.random.default_rng(spec_seq), config)


def sample_dataset(seed: int, kind: Kind = "mix", config: PriorConfig | None = None) -> PriorDataset:
    """Generate the synthetic dataset of one seed.

    Parameters
    ----------
    seed : int
        Non-negative; the same seed, kind and config give the same dataset on any machine.
    kind : {"mix", "gmm", "zeus"}
        "mix" draws the mechanism with ``config.p_gmm``; "gmm" and "zeus" force it (N, D, K stay those of
        the seed under "mix").
    config : PriorConfig, optional
        Defaults to the paper's prior.

    Returns
    -------
    PriorDataset

    Examples
    --------
    >>> ds = sample_dataset(0, kind="gmm")
    >>> ds.X.dtype, ds.X.shape[0] == ds.y.shape[0], ds.meta["mechanism"]
    (dtype('float32'), True, 'gmm')
    """
    config = _check(seed, kind, config)
    spec = spec_for_seed(seed, "mix", config)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)).spawn(2)[1])
    plan, noise_rng = NuisancePlan(), None
    if config.nuisance.enabled:  # its own stream: the spec and the paper's draws stay those of the seed
        noise_rng = nuisance_rng(int(seed))
        keep = (config.zeus.min_cont_features if spec.mechanism == "zeus"  # what the mechanism needs
                else config.nuisance.min_informative)
        plan = plan_nuisance(noise_rng, spec.n_rows, spec.n_features, config.nuisance, min_informative=keep)
    coarse_rng = measurement_rng(int(seed)) if config.nuisance.p_discrete > 0.0 else None
    skew_rng = scale_rng(int(seed)) if config.nuisance.p_skewed > 0.0 else None
    for attempt in range(1, _MAX_ATTEMPTS + 1):
        try:
            return _assemble(rng, spec, config, int(seed), plan, noise_rng, coarse_rng, skew_rng)
        except ValueError as err:  # a constant or non-finite column: draw again from the same stream
            logger.info("seed %d attempt %d invalid (%s); redrawing", seed, attempt, err)
    raise RuntimeError(f"seed {seed}: {_MAX_ATTEMPTS} draws in a row gave an invalid dataset")


def _assemble(rng: np.random.Generator, spec: TaskSpec, config: PriorConfig, seed: int,
              plan: NuisancePlan = NuisancePlan(), noise_rng: np.random.Generator | None = None,
              coarse_rng: np.random.Generator | None = None, skew_rng: np.random.Generator | None = None
              ) -> PriorDataset:
    """Draw one dataset of the spec (its D less the plan's noise columns), add the plan's nuisances, normalise
    and permute it; ValueError when it is not usable."""
    meta: dict[str, Any] = dict.fromkeys(
        ("omega_target", "omega_achieved", "bayes_labels", "params", "spherical", "homoscedastic",
         "iresnet", "n_blocks", "lipschitz", "cardinalities"),
    )
    meta.update(seed=seed, mechanism=spec.mechanism, noise_columns=(), contaminated_rows=(), discrete_columns=(),
                skewed_columns=())
    d_table = spec.n_features - plan.n_noise  # the paper's table; noise columns fill the rest of D
    args = (rng, spec.n_rows, d_table, spec.n_clusters)
    if spec.mechanism == "gmm":
        gmm = sample_gmm(*args, config.gmm, config.min_cluster_size)
        x, mean, std = standardize(gmm.x)
        n_cont, cards = d_table, ()
        p = gmm.params
        params = {
            "weights": p.weights,
            "means": (p.means - mean) / std,
            "covariances": p.covariances / np.outer(std, std)[None],
        }
        meta.update(
            omega_target=gmm.omega_target,
            omega_achieved=gmm.omega_achieved,
            bayes_labels=gmm.bayes_labels.astype(np.int64),
            spherical=p.spherical,
            homoscedastic=p.homoscedastic,
        )
        y = gmm.y
    else:
        zeus = sample_zeus(*args, config.zeus, config.min_cluster_size)
        x, n_cont, cards, y, params = zeus.x, zeus.n_continuous, zeus.cardinalities, zeus.y, None
        standardize(x[:, :n_cont])  # raises on a constant continuous column
        meta.update(
            iresnet=zeus.iresnet is not None,
            n_blocks=zeus.iresnet.n_blocks if zeus.iresnet is not None else 0,
            lipschitz=zeus.iresnet.lipschitz if zeus.iresnet is not None else None,
        )
    if plan.n_contaminated:
        x = x.copy()
        x[:, :n_cont], rows = contaminate(noise_rng, x[:, :n_cont], y, plan.n_contaminated,
                                          config.nuisance.contamination_scale)
        meta["contaminated_rows"] = tuple(int(r) for r in rows)
        if len(rows):
            meta["bayes_labels"] = None
    skewed: list[int] = []
    if skew_rng is not None:  # a multiplicative scale, then (below) perhaps read coarsely on it
        x = x.copy()
        x[:, :n_cont], skewed = skew(skew_rng, x[:, :n_cont], config.nuisance)
        if skewed:
            meta["bayes_labels"] = None
    coarse: list[int] = []
    if coarse_rng is not None:  # measured after the rows moved: a contaminated value is read like any other
        x = x.copy()
        x[:, :n_cont], coarse = discretise(coarse_rng, x[:, :n_cont], config.nuisance)
        if coarse:
            meta["bayes_labels"] = None
    if plan.n_noise:
        x = np.hstack([x, noise_columns(noise_rng, spec.n_rows, plan.n_noise)])
    if plan.active or coarse or skewed:
        params = None
    perm = rng.permutation(spec.n_features)
    x = x[:, perm].astype(np.float32)
    if not np.isfinite(x).all():
        raise ValueError("non-finite value")
    if np.any(np.ptp(x, axis=0) == 0.0):
        raise ValueError("constant column")
    is_cat = (perm >= n_cont) & (perm < d_table)
    meta["noise_columns"] = tuple(int(i) for i in np.flatnonzero(perm >= d_table))
    meta["discrete_columns"] = tuple(int(i) for i in np.flatnonzero(np.isin(perm, coarse)))
    meta["skewed_columns"] = tuple(int(i) for i in np.flatnonzero(np.isin(perm, skewed)))
    categorical = tuple(int(i) for i in np.flatnonzero(is_cat))
    meta["cardinalities"] = tuple(cards[perm[i] - n_cont] for i in categorical) if cards else ()
    meta["n_continuous"] = n_cont + plan.n_noise  # noise columns are numeric
    if params is not None:
        params["means"] = params["means"][:, perm]
        params["covariances"] = params["covariances"][:, perm][:, :, perm]
        meta["params"] = params
    return PriorDataset(x, y.astype(np.int64), spec.n_clusters, categorical, meta)
