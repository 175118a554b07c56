"""Components that tile one cluster, merged (model/tiles.py, model.low_dim.merge_tiles)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.metrics import adjusted_rand_score

from model.low_dim import (MERGE, bic_choice, choose, converged_em, kmeans_start, kmeans_starts, merge_tiles,
                           resolution_floor)
from model.refinement import full_em
from model.tiles import MIN_COMPONENTS, MIN_FILL, MIN_PAIRS, MIN_RATIO, MergedMixture, tile_groups, valley_ratios


def _z(X: np.ndarray) -> np.ndarray:
    return (X - X.mean(0)) / X.std(0)


def _pair(X: np.ndarray, labels: np.ndarray):
    """The two-component full mixture EM fits from ``labels`` on z-scored rows ``X``, and the valley ratios between
    its components."""
    labels, mixture = full_em(X, labels, 2, steps=50, tol=1e-4)
    return valley_ratios(X, mixture, 0, 1)


def test_a_band_cut_in_two_fills_the_valley_its_two_gaussians_put_between_them():
    """One uniform band cut at its middle: the rows have no valley there, the two fitted Gaussians do."""
    X = _z(np.random.default_rng(0).uniform([0.0, 0.0], [4.0, 0.5], size=(600, 2)))
    data, fitted = _pair(X, (X[:, 0] > 0.0).astype(np.int64))
    assert data >= MIN_RATIO and data - fitted >= MIN_FILL


def test_two_gaussian_clusters_leave_the_valley_their_gaussians_predict():
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1], 300)
    X = _z(np.array([[0.0, 0.0], [4.0, 0.0]])[y] + rng.normal(size=(600, 2)))
    data, fitted = _pair(X, y)
    assert data < 0.5 and abs(data - fitted) < MIN_FILL


def test_a_narrow_cluster_inside_a_wide_one_shows_no_valley_in_rows_or_fit_so_is_kept_apart():
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 300)
    X = _z(np.concatenate([rng.normal(size=(300, 2)) * 3.0, rng.normal(size=(300, 2)) * 0.3]))
    data, fitted = _pair(X, y)
    assert fitted == pytest.approx(1.0) and data - fitted < MIN_FILL


def _moons(seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_moons(800, noise=0.06, random_state=seed)
    return _z(X), y


def _tiled_moons(k: int):
    """Two crescents fitted as the BIC path fits each K: ``k`` full-covariance components run to convergence from a
    k-means++ partition, eigenvalues floored at the resolution floor -> (rows, labels, their components, mixture)."""
    X, y = _moons()
    labels, mixture, _ = converged_em(X, kmeans_start(X, k), k, floor=resolution_floor(X))
    return X, y, labels, mixture


#: stricter thresholds than the shipped ones (``choice-low-dim-tiles-blobs*.md``), any qualifying pair merging
STRICT = {"min_ratio": 0.95, "min_fill": 0.1, "min_pairs": 1}
#: the shipped thresholds, every qualifying pair merging however few qualify
LOOSE = {"min_ratio": MIN_RATIO, "min_fill": MIN_FILL, "min_pairs": 1}


def test_tiles_of_two_crescents_merge_transitively_into_the_two():
    X, y, labels, mixture = _tiled_moons(8)
    groups = tile_groups(X, mixture, labels)
    assert groups.shape == (8,) and groups.max() + 1 == 2
    assert adjusted_rand_score(y, groups[labels]) > 0.95


def test_at_stricter_thresholds_tiles_merge_part_way_and_only_within_a_crescent():
    X, y, labels, mixture = _tiled_moons(8)
    groups = tile_groups(X, mixture, labels, **STRICT)
    merged = groups[labels]
    assert 2 < groups.max() + 1 < 8
    assert adjusted_rand_score(y, merged) > adjusted_rand_score(y, labels) + 0.2
    for cluster in np.unique(merged):  # no cluster spans the two crescents
        assert len(np.unique(y[merged == cluster])) == 1


def _touching_blobs():
    """Ten Gaussian blobs of unequal spread in 2 columns, 300 rows (``benchmarks.shapes.many_blobs_frame(2)``),
    z-scored -> (rows, labels)."""
    from sklearn.datasets import make_blobs

    rng = np.random.default_rng(2)
    k, d, n = int(rng.integers(7, 11)), int(rng.integers(2, 4)), int(rng.choice((300, 600, 1000)))
    X, y = make_blobs(n, n_features=d, centers=k, cluster_std=rng.uniform(0.5, 1.5, k), random_state=2)
    return _z(X), y


def test_a_lone_pair_of_gaussian_blobs_that_fills_its_valley_by_chance_stays_apart():
    X, y = _touching_blobs()
    bic = choose(X, kmeans_starts(X, 10), 10, merge=None)
    assert bic.k >= MIN_COMPONENTS
    pairs = _qualifying_pairs(X, bic.labels, bic.mixture, MIN_RATIO, MIN_FILL)
    assert 1 <= pairs < MIN_PAIRS
    assert merge_tiles(X, bic) is bic  # the default: too few pairs to be tiles
    lone = merge_tiles(X, bic, min_pairs=1)  # merging them would join two blobs
    assert lone.k < bic.k and adjusted_rand_score(y, lone.labels) < adjusted_rand_score(y, bic.labels) - 0.1


def test_tiles_never_merge_into_fewer_than_two_clusters():
    X, _, labels, mixture = _tiled_moons(8)
    every_pair = tile_groups(X, mixture, labels, min_ratio=0.0, min_fill=-1.0)  # every pair qualifies
    assert every_pair.max() + 1 == 2 and set(every_pair[labels]) == {0, 1}


def test_fewer_components_than_the_gate_stay_each_a_cluster():
    X, y, labels, mixture = _tiled_moons(MIN_COMPONENTS - 1)
    np.testing.assert_array_equal(tile_groups(X, mixture, labels), np.arange(MIN_COMPONENTS - 1))
    ungated = tile_groups(X, mixture, labels, min_components=2)  # the gate alone kept them apart
    assert ungated.max() + 1 == 2 and adjusted_rand_score(y, ungated[labels]) > 0.95


def _qualifying_pairs(X, labels, mixture, min_ratio: float, min_fill: float) -> int:
    pairs = 0
    for a in range(len(mixture.means)):
        for b in range(a + 1, len(mixture.means)):
            data, fitted = valley_ratios(X[(labels == a) | (labels == b)], mixture, a, b)
            pairs += data >= min_ratio and data - fitted >= min_fill
    return pairs


def test_fewer_qualifying_pairs_than_asked_merge_nothing():
    """A cluster tiled by many components gives a chain of qualifying pairs; a lone pair among Gaussian clusters that
    fills its valley by chance does not reach ``min_pairs``."""
    X, _, labels, mixture = _tiled_moons(8)
    pairs = _qualifying_pairs(X, labels, mixture, MIN_RATIO, MIN_FILL)
    assert pairs >= MIN_PAIRS
    np.testing.assert_array_equal(tile_groups(X, mixture, labels, min_pairs=pairs + 1), np.arange(8))
    np.testing.assert_array_equal(tile_groups(X, mixture, labels, min_pairs=pairs),
                                  tile_groups(X, mixture, labels, min_pairs=1))


def test_a_component_that_takes_no_row_belongs_to_no_cluster():
    """As the estimator drops an emptied component, a merged mixture leaves one out: its posterior goes to none."""
    X, y, labels, mixture = _tiled_moons(8)
    emptied = labels.copy()
    emptied[emptied == 7] = 6  # component 7 keeps its weight but no row
    groups = tile_groups(X, mixture, emptied)
    clusters = int(groups.max()) + 1
    assert groups[7] == -1 and set(groups[:7]) == set(range(clusters)) and clusters >= 2
    merged = MergedMixture(mixture, groups)
    post = mixture.probabilities(X)[:, :7]
    want = np.stack([post[:, groups[:7] == g].sum(1) for g in range(clusters)], 1)
    np.testing.assert_allclose(merged.probabilities(X), want / want.sum(1, keepdims=True), atol=1e-10)
    assert merged.means.shape == (clusters, 2)


def test_a_merged_mixtures_clusters_hold_the_sum_of_their_components_posteriors():
    X, _, _, mixture = _tiled_moons(8)
    groups = np.array([0, 1, 1, 2, 0, 2, 1, 0])
    merged = MergedMixture(mixture, groups)
    post = mixture.probabilities(X)
    want = np.stack([post[:, groups == g].sum(1) for g in range(3)], 1)
    np.testing.assert_allclose(merged.probabilities(X), want, atol=1e-10)
    np.testing.assert_array_equal(merged.labels(X), want.argmax(1))
    w = np.exp(mixture.log_weights)
    np.testing.assert_allclose(merged.means[1], (w[groups == 1, None] * mixture.means[groups == 1]).sum(0)
                               / w[groups == 1].sum())


def test_bic_tiles_two_crescents_and_merging_gives_them_back():
    X, y = _moons()
    candidates = kmeans_starts(X, 10)
    bic, merged = choose(X, candidates, 10, merge=None), merge_tiles(X, choose(X, candidates, 10, merge=None), **LOOSE)
    assert bic.k >= MIN_COMPONENTS and adjusted_rand_score(y, bic.labels) < 0.4
    assert merged.k == 2 and adjusted_rand_score(y, merged.labels) > 0.95
    shipped = choose(X, candidates, 10, merge="any")  # the shipped thresholds
    assert shipped.k == 2 and np.array_equal(shipped.labels, merge_tiles(X, bic).labels)
    assert isinstance(merged.mixture, MergedMixture)
    np.testing.assert_array_equal(merged.mixture.mixture.means, bic.mixture.means)
    np.testing.assert_array_equal(merged.mixture.labels(X), merged.labels)  # new rows go as the fitted ones
    np.testing.assert_allclose(merged.bic, bic.bic)  # BIC's own record is kept: scores and every K's mixture
    assert merged.mixtures.keys() == bic.mixtures.keys()
    # the merged K takes the top choice's probability, BIC's K the merged one's
    assert merged.probabilities[0] == bic.probabilities[bic.k - 2]
    assert merged.probabilities[bic.k - 2] == bic.probabilities[0]
    assert merged.probabilities.sum() == pytest.approx(1.0) and merged.probabilities.argmax() == 0


def test_merge_tiles_leaves_a_choice_without_tiles_as_it_is():
    rng = np.random.default_rng(4)
    y = np.repeat(np.arange(3), 200)
    X = _z(np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])[y] + rng.normal(size=(600, 2)))
    choice = bic_choice(X, {k: [kmeans_start(X, k)] for k in range(2, 11)}, floor=resolution_floor(X))
    assert merge_tiles(X, choice) is choice and choice.k == 3


def test_by_default_only_designs_of_fine_columns_merge():
    """A column of few levels has no density to read a valley in: with one, the default keeps BIC's components."""
    X, _ = _moons()
    coarse = X.copy()
    coarse[:, 1] = np.round(coarse[:, 1] * 4) / 4  # 15 levels
    assert MERGE == "fine"
    fine_default = choose(X, kmeans_starts(X, 10), 10)
    assert fine_default.k < choose(X, kmeans_starts(X, 10), 10, merge=None).k
    assert fine_default.k == choose(X, kmeans_starts(X, 10), 10, merge="any").k
    candidates = kmeans_starts(coarse, 10)
    kept, bic = choose(coarse, candidates, 10), choose(coarse, candidates, 10, merge=None)
    assert kept.k == bic.k and not isinstance(kept.mixture, MergedMixture)
    np.testing.assert_array_equal(kept.labels, bic.labels)
    anyway = choose(coarse, candidates, 10, merge="any")  # "any" reads the coarse design's valleys too
    np.testing.assert_array_equal(anyway.labels, merge_tiles(coarse, bic).labels)
    with pytest.raises(ValueError, match="merge must be one of"):
        choose(X, kmeans_starts(X, 3), 3, merge=True)
