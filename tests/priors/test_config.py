"""priors.config: the paper's defaults and the validation of every field."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest

from priors import GMMConfig, PriorConfig, ZeusConfig


def test_defaults_are_the_papers():
    cfg = PriorConfig()
    assert (cfg.n_rows, cfg.n_features, cfg.n_clusters) == ((500, 1000), (2, 64), (2, 10))
    assert (cfg.p_k_min, cfg.p_gmm) == (0.3, 0.4)
    g = cfg.gmm
    assert (g.omega_min, g.omega_cap, g.dirichlet_alpha, g.min_weight, g.max_eccentricity) == (0.01, 0.8, 2.0, 0.1, 0.9)
    assert g.omega_upper(2) == 0.8 and g.omega_upper(64) == pytest.approx(1.5 / 64**0.82)
    z = cfg.zeus
    assert (z.p_iresnet, z.lipschitz_range, z.blocks_base, z.cardinality_range) == (0.5, (0.1, 0.9), 3, (2, 5))
    assert (z.blocks_mean_range, z.blocks_std_range, z.min_cont_features) == ((3.0, 8.0), (0.01, 1.0), 2)


def test_configs_are_frozen():
    with pytest.raises(FrozenInstanceError):
        PriorConfig().p_gmm = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "change",
    [
        {"n_rows": (10, 5)},
        {"n_features": (1, 64)},
        {"n_clusters": (1, 10)},
        {"n_rows": (500.0, 1000)},
        {"p_gmm": 1.5},
        {"p_k_min": -0.1},
        {"min_cluster_size": 0},
        {"n_rows": (20, 30), "min_cluster_size": 5},
        {"min_cluster_size": 2.5},
        {"min_cluster_size": True},
    ],
)
def test_bad_prior_config_is_rejected(change):
    with pytest.raises(ValueError):
        replace(PriorConfig(), **change)


@pytest.mark.parametrize(
    "change",
    [
        {"omega_min": 0.0},
        {"omega_cap": 1.0},
        {"p_spherical": 2.0},
        {"max_eccentricity": 1.0},
        {"mean_range": (1.0, 1.0)},
        {"dirichlet_alpha": 0.0},
        {"min_weight": 1.0},
        {"omega_tol": 1e-12},
        {"max_redraws": 0},
        {"max_redraws": 2.5},
        {"mean_range": (float("-inf"), 1.0)},
        {"dirichlet_alpha": float("inf")},
    ],
)
def test_bad_gmm_config_is_rejected(change):
    with pytest.raises(ValueError):
        replace(GMMConfig(), **change)


@pytest.mark.parametrize(
    "change",
    [
        {"lipschitz_range": (0.1, 1.0)},
        {"eigen_range": (0.0, 0.5)},
        {"cardinality_range": (1, 5)},
        {"cardinality_range": (2.0, 5.0)},
        {"p_iresnet": -0.5},
        {"hidden_factor": 0},
        {"min_cont_features": 0},
        {"blocks_mean_range": (0.0, 8.0)},
        {"blocks_base": 1.5},
        {"hidden_factor": 1.5},
        {"min_cont_features": 2.0},
        {"eigen_range": (0.1, float("inf"))},
        {"w2_range": (0.5, float("inf"))},
        {"dirichlet_alpha": float("nan")},
    ],
)
def test_bad_zeus_config_is_rejected(change):
    with pytest.raises(ValueError):
        replace(ZeusConfig(), **change)


def test_nested_configs_must_have_the_right_type():
    with pytest.raises(TypeError):
        PriorConfig(gmm=ZeusConfig())  # type: ignore[arg-type]
