"""priors.zeus: the label-conditioned iResNet, separated latent clusters and categorical columns."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import linalg, stats

from priors.config import ZeusConfig
from priors.zeus import _n_blocks, build_iresnet, sample_zeus


def _network(seed: int, d: int, k: int, blocks: int, lip: float):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((400, d))
    y = rng.integers(0, k, size=400)
    net, z = build_iresnet(rng, x, y, k, blocks, lip)
    return net, x, y, z


@pytest.mark.parametrize("d,k,blocks,lip", [(2, 3, 3, 0.9), (7, 5, 6, 0.5), (33, 10, 11, 0.85), (64, 2, 4, 0.1)])
def test_iresnet_fixed_point_inverse_recovers_inputs(d, k, blocks, lip):
    net, x, y, z = _network(d, d, k, blocks, lip)
    assert np.allclose(net.forward(x, y), z)
    assert np.max(np.abs(net.inverse(z, y) - x)) < 1e-4
    assert net.n_blocks == blocks


@pytest.mark.parametrize("lip", [0.1, 0.5, 0.9])
def test_iresnet_residual_branches_are_contractions(lip):
    net, x, y, _ = _network(11, 5, 4, 5, lip)
    bounds = net.residual_lipschitz_bound()
    assert np.all(bounds <= lip + 1e-9) and np.all(bounds < 1.0)
    rng = np.random.default_rng(0)
    for b in range(net.n_blocks):
        x1 = rng.standard_normal((2000, 5)) * 2.0
        x2 = x1 + rng.standard_normal((2000, 5)) * rng.uniform(1e-3, 2.0, size=(2000, 1))
        labels = rng.integers(0, 4, size=2000)
        ratio = np.linalg.norm(net.residual(b, x1, labels) - net.residual(b, x2, labels), axis=1) / np.linalg.norm(
            x1 - x2, axis=1
        )
        assert ratio.max() <= bounds[b] + 1e-9


def test_iresnet_rejects_non_contractive_branches():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="lipschitz"):
        build_iresnet(rng, rng.standard_normal((10, 2)), np.zeros(10, dtype=int), 1, 3, 1.0)


def test_block_counts_follow_the_truncated_normal_rule():
    cfg = ZeusConfig()
    rng = np.random.default_rng(1)
    counts = np.array([_n_blocks(rng, cfg) for _ in range(3000)])
    assert counts.min() >= cfg.blocks_base
    # b~ has mean mu in [3, 8] and sigma <= 1: b = 3 + round(b~) stays within [3 + 3 - 5, 3 + 8 + 5]
    assert counts.max() <= cfg.blocks_base + 8 + 5
    # log mu ~ U(log 3, log 8): E[mu] = 5 / log(8/3) = 5.10, so the mean count is close to 8.1
    assert counts.mean() == pytest.approx(cfg.blocks_base + 5.0 / np.log(8 / 3), abs=0.15)


def test_sample_zeus_layout_cardinalities_and_cluster_dependence():
    cfg = ZeusConfig()
    for seed in range(12):
        rng = np.random.default_rng(seed)
        s = sample_zeus(rng, 600, 20, 4, cfg, min_cluster_size=5)
        d = s.n_continuous
        assert cfg.min_cont_features <= d <= 20
        assert s.x.shape == (600, 20) and np.isfinite(s.x).all()
        assert np.bincount(s.y, minlength=4).min() >= 5
        assert np.allclose(s.x[:, :d].mean(axis=0), 0.0, atol=1e-9)
        assert np.allclose(s.x[:, :d].std(axis=0), 1.0)
        codes = s.x[:, d:]
        assert len(s.cardinalities) == 20 - d
        for col, card in zip(codes.T, s.cardinalities):
            assert cfg.cardinality_range[0] <= card <= cfg.cardinality_range[1]
            assert np.array_equal(np.unique(col), np.arange(card))  # dense codes 0..C-1
        if codes.shape[1]:
            pvalues = [stats.chi2_contingency(_table(s.y, col))[1] for col in codes.T]
            assert min(pvalues) < 1e-6  # clusters prefer different categories


def _table(y: np.ndarray, col: np.ndarray) -> np.ndarray:
    return np.array([[np.sum((y == k) & (col == c)) for c in np.unique(col)] for k in np.unique(y)])


def test_continuous_feature_count_is_uniform():
    cfg = replace(ZeusConfig(), p_iresnet=0.0)
    counts = np.zeros(9, dtype=int)
    for seed in range(900):
        counts[sample_zeus(np.random.default_rng(seed), 30, 10, 2, cfg).n_continuous - 2] += 1
    assert stats.chisquare(counts).pvalue > 1e-3


def test_latent_clusters_keep_the_wasserstein_separation():
    cfg = replace(ZeusConfig(), p_iresnet=0.0)
    for seed in range(5):
        s = sample_zeus(np.random.default_rng(seed), 200, 6, 5, cfg)
        roots = [linalg.sqrtm(c).real for c in s.covariances]
        for i in range(5):
            for j in range(i):
                cross = linalg.sqrtm(roots[i] @ s.covariances[j] @ roots[i]).real
                w2 = np.sum((s.means[i] - s.means[j]) ** 2) + np.trace(
                    s.covariances[i] + s.covariances[j] - 2 * cross
                )
                assert w2 >= cfg.w2_range[0] - 1e-8


def test_iresnet_is_applied_with_the_configured_probability():
    cfg = ZeusConfig()
    used = [sample_zeus(np.random.default_rng(s), 40, 3, 2, cfg).iresnet is not None for s in range(400)]
    assert stats.binomtest(sum(used), 400, cfg.p_iresnet).pvalue > 1e-3
    net = next(sample_zeus(np.random.default_rng(s), 40, 3, 2, cfg).iresnet for s in range(400) if used[s])
    assert cfg.lipschitz_range[0] <= net.lipschitz <= cfg.lipschitz_range[1]
