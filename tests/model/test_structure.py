"""The structure test (model.structure) and the estimator's one-cluster answer (allow_single_cluster)."""

import pickle

import numpy as np
import pytest

from model.estimator import TabClustPFN
from model.structure import DEFAULT_SINGLE_CLUSTER_Z, _spectrum, null_scales, structure_test


def _blobs(n=400, d=3, shift=8.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[: n // 2, 0] += shift
    return X


def test_two_separated_groups_score_far_below_one_gaussian():
    assert structure_test(_blobs()).z < -10


@pytest.mark.parametrize("n, d", [(300, 2), (600, 8), (200, 64)])
def test_one_gaussian_is_not_called_clustered(n, d):
    scores = [structure_test(np.random.default_rng(s).normal(size=(n, d)) * np.exp(-np.arange(d) / d)).z
              for s in range(5)]
    assert min(scores) > -2.5  # a Gaussian's score is near 0 (null standard deviations), never far below
    assert abs(np.mean(scores)) < 2.0


def test_the_null_undoes_the_spread_of_a_samples_principal_variances():
    X = np.random.default_rng(0).normal(size=(300, 60))  # population: every variance 1
    seen = _spectrum(X - X.mean(0))
    scales = null_scales(seen, len(X), np.random.default_rng(1))
    assert seen.max() / seen.min() > 3  # the sample spreads them ...
    assert (scales**2).max() / (scales**2).min() < seen.max() / seen.min() / 2  # ... the null far less


def test_a_second_start_can_only_lower_the_index_and_the_score_is_deterministic():
    X = _blobs(shift=2.5, seed=3)
    good = (np.arange(len(X)) < len(X) // 2).astype(int)
    assert structure_test(X, good).index <= structure_test(X).index
    assert structure_test(X, good) == structure_test(X, good)


def test_degenerate_tables():
    assert structure_test(np.ones((5, 3))).z == np.inf  # every row the same: nothing but one mode
    with pytest.raises(ValueError, match="at least 3 rows"):
        structure_test(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="n_null"):
        structure_test(_blobs(), n_null=1)


def test_one_gaussian_gets_one_cluster_when_allowed(tiny_checkpoint):
    X = np.random.default_rng(0).normal(size=(300, 3))
    est = TabClustPFN(checkpoint=tiny_checkpoint, allow_single_cluster=True, single_cluster_z=-1.0).fit(X)
    assert est.structure_score_ > -1.0
    assert est.n_clusters_ == 1 and (est.labels_ == 0).all()
    assert est.probabilities_.shape == (300, 1) and np.allclose(est.probabilities_, 1.0)
    new = np.random.default_rng(1).normal(size=(7, 3))
    assert (est.predict(new) == 0).all() and np.allclose(est.predict_proba(new), 1.0)
    again = pickle.loads(pickle.dumps(est))
    assert (again.predict(new) == 0).all()


def test_separated_groups_keep_the_networks_partition(tiny_checkpoint):
    X = _blobs()
    est = TabClustPFN(checkpoint=tiny_checkpoint, allow_single_cluster=True).fit(X)
    assert est.structure_score_ < DEFAULT_SINGLE_CLUSTER_Z and est.n_clusters_ >= 2
    plain = TabClustPFN(checkpoint=tiny_checkpoint).fit(X)
    assert np.isnan(plain.structure_score_)  # not tested unless allowed
    np.testing.assert_array_equal(plain.labels_, est.labels_)


def test_a_given_n_clusters_is_never_replaced_by_one(tiny_checkpoint):
    X = np.random.default_rng(0).normal(size=(300, 3))
    est = TabClustPFN(checkpoint=tiny_checkpoint, n_clusters=3, allow_single_cluster=True,
                      single_cluster_z=-np.inf).fit(X)
    assert est.n_clusters_ == 3 and np.isnan(est.structure_score_)
