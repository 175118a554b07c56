"""Test-time refinement (model/refinement.py): guarded Lloyd steps from the network's partition, the diagonal
mixture of ``refine="gmm"`` and the full-covariance mixture."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from model.refinement import (Centroids, design, diagonal_em, full_em, lloyd, one_hot_widths,
                              refine_candidates)
from model.selection import select_k


def _two_blobs(n=200, gap=6.0, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    return rng.normal(size=(n, 3)) + gap * y[:, None], y


def _soft(labels, k, noise=0.0):
    P = np.full((len(labels), k), noise / max(k - 1, 1))
    P[np.arange(len(labels)), labels] = 1.0 - noise
    return P


def test_two_steps_move_misassigned_border_rows_to_the_nearest_mean():
    X, y = _two_blobs()
    wrong = y.copy()
    wrong[:15] = 1  # 15 rows of blob 0 put in blob 1
    labels, centroids = lloyd(X, _soft(wrong, 2, noise=0.1), steps=2)
    assert adjusted_rand_score(y, labels) == 1.0
    assert adjusted_rand_score(y, wrong) < 0.9


def test_labels_are_the_nearest_of_the_returned_centroids_and_the_argmax_of_their_probabilities():
    X, y = _two_blobs(seed=1)
    start = np.random.default_rng(0).integers(0, 3, len(y))  # a poor start: the steps do not converge
    labels, centroids = lloyd(X, _soft(start, 3, noise=0.2), steps=2)
    np.testing.assert_array_equal(centroids.labels(X), labels)
    P = centroids.probabilities(X)
    np.testing.assert_allclose(P.sum(1), 1.0)
    np.testing.assert_array_equal(P.argmax(1), labels)


def test_with_min_agreement_a_refinement_that_disagrees_with_the_network_is_not_kept():
    """Two concentric rings, the network's partition right: k-means from it cuts across the rings (both means sit
    near the centre), so with ``min_agreement`` the network's partition stays, and without it the refinement
    replaces it; two blobs: the refinement is kept."""
    rng = np.random.default_rng(2)
    angle = rng.uniform(0, 2 * np.pi, 400)
    y = np.repeat([0, 1], 200)
    radius = np.where(y == 0, 1.0, 4.0) + 0.05 * rng.normal(size=400)
    rings = np.c_[radius * np.cos(angle), radius * np.sin(angle)]
    probs = np.zeros((2, 400, 3))
    probs[0, :, :2] = _soft(y, 2)
    probs[1, :, :3] = _soft(np.where(y == 0, 0, 1 + (angle > np.pi)), 3)
    labels, kept = refine_candidates(rings, probs, n_candidates=2, min_agreement=0.6)
    assert kept[0] is None and adjusted_rand_score(y, labels[0]) == 1.0
    labels, kept = refine_candidates(rings, probs, n_candidates=2)
    assert kept[0] is not None and adjusted_rand_score(y, labels[0]) < 0.6
    X, yb = _two_blobs()
    blob_probs = np.zeros((1, len(yb), 2))
    blob_probs[0] = _soft(yb, 2, noise=0.3)
    labels, kept = refine_candidates(X, blob_probs, n_candidates=1, min_agreement=0.6)
    assert isinstance(kept[0], Centroids) and adjusted_rand_score(yb, labels[0]) == 1.0


def test_candidates_beyond_n_candidates_keep_the_networks_partition():
    X, y = _two_blobs()
    probs = np.zeros((3, len(y), 4))
    for c in range(3):
        probs[c, :, : c + 2] = _soft(np.minimum(y, c + 1), c + 2, noise=0.2)
    labels, kept = refine_candidates(X, probs, n_candidates=1)
    assert kept[1] is None and kept[2] is None
    np.testing.assert_array_equal(labels[1:], probs[1:].argmax(-1))


def test_design_one_hot_encodes_categorical_codes_with_the_fitted_widths():
    Z = np.array([[0.5, 0, 2], [-0.5, 1, 0], [0.0, 0, 1]], np.float32)
    cat = np.array([False, True, True])
    widths = one_hot_widths(Z, cat)
    np.testing.assert_array_equal(widths, [2, 3])
    X = design(Z, cat, widths)
    assert X.shape == (3, 1 + 2 + 3)
    np.testing.assert_array_equal(X[0], [0.5, 1, 0, 0, 0, 1])
    unseen = design(np.array([[0.0, 5, 0]], np.float32), cat, widths)  # a code past the fitted ones is clipped
    np.testing.assert_array_equal(unseen[0], [0.0, 0, 1, 1, 0, 0])


def test_lloyd_refuses_zero_steps():
    X, y = _two_blobs()
    with pytest.raises(ValueError, match="steps must be >= 1"):
        lloyd(X, _soft(y, 2), steps=0)


def test_select_k_chooses_among_the_given_candidates_scored_against_the_networks_partitions():
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2], 30)
    probs = np.zeros((2, 90, 3))
    probs[0, :, :2] = _soft(np.minimum(y, 1), 2)
    probs[1, :, :3] = _soft(y, 3)
    posterior = np.array([0.2, 0.8])
    k, scores = select_k(probs, posterior, k_hi=3)
    assert k == 3
    noisy = probs.argmax(-1)
    noisy[1] = rng.integers(0, 3, 90)  # the K = 3 candidate replaced by noise: K = 2 now scores higher
    k, scores_c = select_k(probs, posterior, k_hi=3, candidates=noisy)
    assert k == 2 and scores_c[1] < scores[1] and scores_c[0] == pytest.approx(scores[0])


def _one_informative_column(n_noise=12, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], 200)
    X = np.c_[6.0 * y + rng.normal(size=400), rng.normal(size=(400, n_noise))]
    return (X - X.mean(0)) / X.std(0), y


def test_the_shared_mixture_weighs_a_column_by_its_within_cluster_precision():
    """Groups 6 SD apart in column 0 beside 12 noise columns, started from a partition with 30 % of its rows
    flipped: with one shared covariance the fitted variance of column 0 is a fraction of the noise columns' (near
    1), so the noise columns count less than in k-means' metric, and the partition is recovered."""
    X, y = _one_informative_column()
    rng = np.random.default_rng(1)
    start = np.where(rng.random(len(y)) < 0.3, 1 - y, y)
    labels, mixture = diagonal_em(X, start, 2, steps=10, floor=0.1, shared=True)
    assert np.all(mixture.variances == mixture.variances[0])  # one covariance for both components
    assert mixture.variances[0, 0] < 0.3 and np.all(mixture.variances[0, 1:] > 0.8)
    assert adjusted_rand_score(y, start) < 0.3
    assert adjusted_rand_score(y, labels) >= 0.97


def test_per_cluster_covariances_fit_a_tight_and_a_wide_cluster():
    """The default (one diagonal covariance per cluster): a tight cluster beside a wide one gets its own small
    variances, and the border moves towards the tight cluster, as a Gaussian mixture puts it."""
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 300)
    X = np.where(y[:, None] == 0, 0.3, 1.5) * rng.normal(size=(600, 2)) + 3.0 * y[:, None]
    labels, mixture = diagonal_em(X, y, 2)
    assert np.all(mixture.variances[0] < 0.2) and np.all(mixture.variances[1] > 1.5)
    lloyd_labels, _ = lloyd(X, _soft(y, 2), steps=2)
    assert adjusted_rand_score(y, labels) > adjusted_rand_score(y, lloyd_labels)


def test_mixture_labels_are_the_argmax_of_its_probabilities_for_the_rows_it_was_fitted_on_and_new_ones():
    X, y = _one_informative_column(n_noise=3, seed=2)
    start = np.random.default_rng(0).integers(0, 3, len(y))  # a poor start, 3 components
    for shared in (False, True):
        labels, mixture = diagonal_em(X, start, 3, steps=2, shared=shared)
        np.testing.assert_array_equal(mixture.labels(X), labels)
        P = mixture.probabilities(X)
        np.testing.assert_allclose(P.sum(1), 1.0)
        np.testing.assert_array_equal(P.argmax(1), labels)
        new = np.random.default_rng(3).normal(size=(50, X.shape[1]))
        np.testing.assert_array_equal(mixture.probabilities(new).argmax(1), mixture.labels(new))


def test_mixture_keeps_a_component_without_rows_and_refuses_bad_settings():
    X, _ = _one_informative_column(n_noise=2)
    for mixing in (True, False):
        labels, mixture = diagonal_em(X, np.zeros(len(X), np.int64), 3, mixing=mixing)  # 1 and 2 start empty
        assert mixture.means.shape == (3, X.shape[1]) and np.all(np.isfinite(mixture.means))
        assert set(np.unique(labels)) == {0} and np.all(mixture.log_weights[1:] == -np.inf)
    with pytest.raises(ValueError, match="steps must be >= 1"):
        diagonal_em(X, labels, 3, steps=0)
    with pytest.raises(ValueError, match="floor must be > 0"):
        diagonal_em(X, labels, 3, floor=0.0)


def test_with_equal_proportions_rows_go_to_the_nearest_mean_in_the_rescaled_metric():
    """shared=True, mixing=False: the components weigh alike, so each row goes to the mean nearest in the metric
    that divides each column by the shared within-cluster variance; with mixing a large component takes border
    rows of a small one."""
    rng = np.random.default_rng(4)
    y = np.r_[np.zeros(900, np.int64), np.ones(100, np.int64)]
    X = rng.normal(size=(1000, 2)) + 2.5 * y[:, None]
    labels, mixture = diagonal_em(X, y, 2, shared=True, mixing=False)
    np.testing.assert_allclose(mixture.log_weights, np.log(0.5))
    nearest = (((X[:, None, :] - mixture.means[None]) ** 2) / mixture.variances[0]).sum(-1).argmin(1)
    np.testing.assert_array_equal(labels, nearest)
    weighted, _ = diagonal_em(X, y, 2, shared=True, mixing=True)
    assert (weighted == 1).sum() < (labels == 1).sum()


def _crossed_ellipses(n=300, seed=5):
    """Two long thin clusters in 2-D, one along the diagonal, one along the anti-diagonal, crossing off-centre:
    axis-aligned variances cannot tell them apart where they meet, full covariances can."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n)
    t, w = rng.normal(scale=3.0, size=2 * n), rng.normal(scale=0.2, size=2 * n)
    along = np.where(y[:, None] == 0, [1.0, 1.0], [1.0, -1.0]) / np.sqrt(2.0)
    across = np.where(y[:, None] == 0, [-1.0, 1.0], [1.0, 1.0]) / np.sqrt(2.0)
    return t[:, None] * along + w[:, None] * across + np.where(y[:, None] == 0, 0.0, [1.5, 0.0]), y


def test_full_covariances_separate_crossing_elongated_clusters_that_diagonal_ones_cannot():
    X, y = _crossed_ellipses()
    start = np.where(np.random.default_rng(6).random(len(y)) < 0.2, 1 - y, y)  # 20 % of the rows flipped
    full, mixture = full_em(X, start, 2, steps=5)
    diagonal, _ = diagonal_em(X, start, 2, steps=5)
    from_truth, _ = full_em(X, y, 2, steps=5)  # the clusters overlap where they cross: ARI 0.86 is their best
    assert adjusted_rand_score(y, full) >= adjusted_rand_score(y, from_truth) - 0.01 >= 0.8
    assert adjusted_rand_score(y, full) > adjusted_rand_score(y, diagonal) + 0.5
    for c, sign in ((0, 1.0), (1, -1.0)):  # each component's covariance tilted along its own cluster
        cov = mixture.cholesky[c] @ mixture.cholesky[c].T
        assert sign * cov[0, 1] > 0.5 * np.sqrt(cov[0, 0] * cov[1, 1])


def test_full_mixture_matches_the_diagonal_one_where_the_covariances_are_diagonal():
    """With one column the two mixtures are the same model: the same labels and posteriors, step for step."""
    X, y = _two_blobs(gap=2.0)
    start = np.where(np.random.default_rng(7).random(len(y)) < 0.3, 1 - y, y)
    full, f = full_em(X[:, :1], start, 2, steps=3)
    diagonal, d = diagonal_em(X[:, :1], start, 2, steps=3)
    np.testing.assert_array_equal(full, diagonal)
    np.testing.assert_allclose(f.probabilities(X[:, :1]), d.probabilities(X[:, :1]), atol=1e-6)


def test_full_mixture_labels_are_its_argmax_and_it_keeps_an_empty_component_and_refuses_bad_settings():
    X, _ = _one_informative_column(n_noise=3, seed=2)
    start = np.random.default_rng(0).integers(0, 3, len(X))
    labels, mixture = full_em(X, start, 3, steps=2)
    np.testing.assert_array_equal(mixture.labels(X), labels)
    P = mixture.probabilities(X)
    np.testing.assert_allclose(P.sum(1), 1.0)
    np.testing.assert_array_equal(P.argmax(1), labels)
    labels, mixture = full_em(X, np.zeros(len(X), np.int64), 3)  # components 1 and 2 start empty
    assert set(np.unique(labels)) == {0} and np.all(mixture.log_weights[1:] == -np.inf)
    assert np.all(np.isfinite(mixture.means))
    with pytest.raises(ValueError, match="steps must be >= 1"):
        full_em(X, labels, 3, steps=0)
    with pytest.raises(ValueError, match="floor must be > 0"):
        full_em(X, labels, 3, floor=0.0)


def test_the_diagonal_mixtures_variance_floor_may_be_given_per_column():
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], 100)
    X = np.column_stack([rng.normal(size=200) * 0.05 + 3 * labels, rng.normal(size=200)])  # column 0: tight
    _, one = diagonal_em(X, labels, 2, floor=0.1)
    _, same = diagonal_em(X, labels, 2, floor=np.array([0.1, 0.1]))
    np.testing.assert_array_equal(one.variances, same.variances)
    _, per = diagonal_em(X, labels, 2, floor=np.array([0.001, 0.1]))
    assert np.all(one.variances[:, 0] == 0.1) and np.all(per.variances[:, 0] < 0.01)  # the tight column's own
    np.testing.assert_allclose(per.variances[:, 1], one.variances[:, 1])
    with pytest.raises(ValueError, match="one per column"):
        diagonal_em(X, labels, 2, floor=np.array([0.1, 0.1, 0.1]))
    with pytest.raises(ValueError, match="floor must be > 0"):
        diagonal_em(X, labels, 2, floor=np.array([0.1, 0.0]))


def test_full_mixture_step_is_each_clusters_mean_and_floored_covariance_and_its_log_joint_their_gaussians():
    """All components at once (batched) compute what one component at a time would: a hard partition's first step
    gives each cluster its mean and its covariance with the eigenvalues floored, an empty cluster weight 0, and
    ``log_joint`` each live component's Gaussian log-density plus its log weight (up to one shared constant)."""
    from scipy.stats import multivariate_normal

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3)) @ rng.normal(size=(3, 3))
    X[:, 2] = 0.3 * rng.normal(size=len(X))  # variance 0.09: the floor binds in that direction
    labels = rng.integers(0, 3, len(X))  # components 0-2 hold rows, component 3 starts and stays empty
    floor = 0.2
    _, mixture = full_em(X, labels, 4, steps=1, floor=floor)
    assert mixture.log_weights[3] == -np.inf
    want = np.empty((len(X), 3))
    for c in range(3):
        rows = X[labels == c]
        np.testing.assert_allclose(mixture.means[c], rows.mean(0), atol=1e-12)
        values, vectors = np.linalg.eigh(np.cov(rows.T, bias=True))
        assert values.min() < floor
        cov = (vectors * np.maximum(values, floor)) @ vectors.T
        np.testing.assert_allclose(mixture.cholesky[c] @ mixture.cholesky[c].T, cov, atol=1e-10)
        np.testing.assert_allclose(mixture.log_weights[c], np.log(len(rows) / len(X)), atol=1e-12)
        want[:, c] = multivariate_normal(rows.mean(0), cov).logpdf(X) + mixture.log_weights[c]
    got = mixture.log_joint(X)
    assert np.all(got[:, 3] == -np.inf)
    shift = got[:, :3] - want  # the constant log_joint leaves out: P/2 log(2 pi)
    np.testing.assert_allclose(shift, 1.5 * np.log(2.0 * np.pi), atol=1e-9)
