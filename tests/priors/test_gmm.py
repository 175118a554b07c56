"""priors.gmm: MixSim-style mixtures scaled to a target Omega_max, points and Bayes labels."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from priors import PriorConfig, sample_dataset
from priors.config import GMMConfig
from priors.gmm import InfeasibleTargetError, bayes_labels, sample_mixture, sample_points
from priors.overlap import max_overlap, pairwise_overlap

SHAPES = [(True, True), (True, False), (False, True), (False, False)]  # (spherical, homoscedastic)


@pytest.mark.parametrize("k", [2, 5, 10])
@pytest.mark.parametrize("d", [2, 10, 64])
def test_achieved_omega_max_hits_the_target(k, d):
    cfg = GMMConfig()
    rng = np.random.default_rng(100 * k + d)
    for spherical, homoscedastic in SHAPES:
        target = float(rng.uniform(cfg.omega_min, cfg.omega_upper(d)))
        params, omega, _ = sample_mixture(
            rng, d, k, target, cfg, spherical=spherical, homoscedastic=homoscedastic
        )
        # recomputed from the returned parameters, not taken from the generator
        recomputed = max_overlap(pairwise_overlap(params.weights, params.means, params.covariances))[0]
        assert abs(recomputed - target) <= 1e-4, (spherical, homoscedastic, recomputed, target)
        assert abs(omega - recomputed) <= 1e-8


def test_mixture_follows_the_mixsim_recipe():
    cfg = GMMConfig()
    rng = np.random.default_rng(5)
    for spherical, homoscedastic in SHAPES:
        params, _, _ = sample_mixture(rng, 6, 4, 0.05, cfg, spherical=spherical, homoscedastic=homoscedastic)
        assert params.weights.sum() == pytest.approx(1.0)
        assert np.all(params.weights >= cfg.min_weight - 1e-12)
        assert np.all((params.means >= -1.0) & (params.means <= 1.0))
        covs = params.covariances
        if homoscedastic:
            assert all(np.array_equal(covs[0], c) for c in covs)
        if spherical:
            for c in covs:
                assert np.array_equal(c, c[0, 0] * np.eye(6))
        else:
            lam = np.linalg.eigvalsh(covs)
            ecc = np.sqrt(1.0 - lam[:, 0] / lam[:, -1])
            assert np.all(ecc <= cfg.max_eccentricity + 1e-9)


def test_equal_weights_when_k_times_pilow_is_one():
    params, _, _ = sample_mixture(
        np.random.default_rng(0), 3, 10, 0.05, GMMConfig(), spherical=True, homoscedastic=False
    )
    assert np.allclose(params.weights, 0.1)


def test_unreachable_target_is_never_returned_off_target():
    cfg = replace(GMMConfig(), max_redraws=3)
    with pytest.raises(InfeasibleTargetError, match="lower the target"):
        sample_mixture(np.random.default_rng(0), 64, 5, 0.6, cfg, spherical=False, homoscedastic=False)


def test_bayes_labels_are_the_posterior_argmax():
    params, _, _ = sample_mixture(
        np.random.default_rng(2), 3, 4, 0.3, GMMConfig(), spherical=False, homoscedastic=False
    )
    x, _ = sample_points(np.random.default_rng(3), params, 300, 1)
    components = zip(params.weights, params.means, params.covariances)
    dens = np.stack([w * stats.multivariate_normal(m, c).pdf(x) for w, m, c in components], axis=1)
    assert np.array_equal(bayes_labels(x, params), np.argmax(dens, axis=1))


def test_points_come_from_the_mixture():
    params, _, _ = sample_mixture(
        np.random.default_rng(4), 2, 3, 0.05, GMMConfig(), spherical=False, homoscedastic=False
    )
    x, y = sample_points(np.random.default_rng(5), params, 6000, 1)
    for k in range(3):
        rows = x[y == k]
        sd_of_mean = np.sqrt(params.covariances[k].max() / len(rows))
        assert np.allclose(rows.mean(axis=0), params.means[k], atol=6 * sd_of_mean)
        assert np.allclose(np.cov(rows.T), params.covariances[k], atol=0.15 * np.abs(params.covariances[k]).max())
    counts = np.bincount(y, minlength=3)
    assert stats.chisquare(counts, params.weights * 6000).pvalue > 1e-3


def test_bayes_labels_beat_kmeans_with_the_true_k():
    """Over 200 small GMM datasets the Bayes-optimal labels have a higher mean ARI than k-means given K."""
    config = replace(PriorConfig(), n_rows=(120, 160), n_features=(2, 8), min_cluster_size=2)
    bayes, kmeans = [], []
    for seed in range(200):
        ds = sample_dataset(seed, kind="gmm", config=config)
        bayes.append(adjusted_rand_score(ds.y, ds.meta["bayes_labels"]))
        pred = KMeans(n_clusters=ds.n_clusters, n_init=3, random_state=seed).fit_predict(ds.X)
        kmeans.append(adjusted_rand_score(ds.y, pred))
    assert np.mean(bayes) > np.mean(kmeans) + 0.01
    assert np.mean(np.array(bayes) >= np.array(kmeans) - 0.02) > 0.8
