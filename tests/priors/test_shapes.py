"""Low-dimensional shape tables for fitting the K ranker (priors.shapes)."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from priors.shapes import KINDS, SHAPES_VERSION, sample_shapes


def test_deterministic_in_the_seed_and_sizes_in_range():
    a, b = sample_shapes(7, n_rows=(100, 300)), sample_shapes(7, n_rows=(100, 300))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and a.meta == b.meta
    for seed in range(30):
        t = sample_shapes(seed, n_rows=(100, 300))
        assert 100 <= t.X.shape[0] <= 300 and t.X.shape[1] in (2, 3) and t.X.dtype == np.float32
        assert t.categorical == () and t.meta["mechanism"] == "shapes" and t.meta["version"] == SHAPES_VERSION


def test_every_kind_occurs_with_its_ks_and_every_cluster_is_present():
    ks = collections.defaultdict(set)
    for seed in range(400):
        t = sample_shapes(seed, n_rows=(100, 200))
        assert np.array_equal(np.unique(t.y), np.arange(t.n_clusters))  # every cluster has rows
        assert np.bincount(t.y).min() >= 5  # at least 5 % of 100 rows
        np.testing.assert_allclose(t.X.mean(0), 0.0, atol=1e-5)
        np.testing.assert_allclose(t.X.std(0), 1.0, atol=1e-4)
        ks[t.meta["kind"]].add(t.n_clusters)
    assert set(ks) == set(KINDS)
    assert ks["arcs"] == {2} and ks["rings"] == {2, 3}
    assert ks["bars"] == {2, 3, 4, 5} and ks["blobs"] == set(range(2, 9))
    assert ks["sheared"] == ks["unequal"] == set(range(2, 7))


def _of_kind(kind: str, count: int = 5):
    found = (sample_shapes(s, n_rows=(300, 400)) for s in range(500))
    return [t for t in found if t.meta["kind"] == kind][:count]


def test_rings_are_concentric_and_arcs_are_not_convex():
    for t in _of_kind("rings"):
        X = t.X[:, :2].astype(np.float64) if t.X.shape[1] == 2 else None
        if X is None:
            continue  # a third, noise column: the rings are in a rotated plane
        radius = np.linalg.norm(X - X.mean(0), axis=1)
        means = [radius[t.y == c].mean() for c in range(t.n_clusters)]
        assert means == sorted(means)  # ring c lies outside ring c - 1, about one centre
    for t in _of_kind("arcs"):
        # an arc's own mean lies off the arc: few of its rows near it, against many near a typical row
        X = t.X[:, :2].astype(np.float64)
        for c in range(2):
            rows = X[t.y == c]
            near = (np.linalg.norm(rows[:, None] - rows[None], axis=-1) < 0.2).sum(1)
            at_mean = (np.linalg.norm(rows - rows.mean(0), axis=1) < 0.2).sum()
            assert at_mean < 0.25 * np.median(near)


def test_blob_clusters_are_apart_and_k_means_separable_where_spherical():
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    scores = [adjusted_rand_score(t.y, KMeans(t.n_clusters, n_init=10, random_state=0).fit_predict(t.X))
              for t in _of_kind("blobs", 10)]
    assert np.median(scores) > 0.8  # 2.5-4 spreads apart: there to be found


def test_a_seed_draws_from_its_own_stream():
    from priors.onemode import sample_one_mode

    sizes = [(sample_shapes(s, (100, 1000)).X.shape[0], sample_one_mode(s, (100, 1000)).X.shape[0])
             for s in range(40)]
    assert sum(a == b for a, b in sizes) < 8


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="n_rows"):
        sample_shapes(0, n_rows=(10, 100))
