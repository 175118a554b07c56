"""model/selection.py: choosing K from the candidate partitions and CIN's posterior."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from model.selection import cross_ari, expected_ari, expected_ari_members, next_k, pairwise_ari, select_k


def _one_hot_probs(labels: np.ndarray, k_max: int) -> np.ndarray:
    """(C, N) hard labels -> (C, N, K_max) probabilities with all mass on each label."""
    return np.eye(k_max)[labels]


def test_pairwise_ari_equals_sklearn_for_every_pair():
    rng = np.random.default_rng(0)
    labels = np.stack([rng.integers(0, k, size=200) for k in (2, 3, 5, 7)]
                      + [np.zeros(200, int), np.arange(200) % 4])
    m = pairwise_ari(labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            assert m[i, j] == pytest.approx(adjusted_rand_score(labels[i], labels[j]), abs=1e-12)


def test_pairwise_ari_treats_two_trivial_partitions_as_sklearn_does():
    same = np.zeros((2, 5), int)
    assert pairwise_ari(same)[0, 1] == adjusted_rand_score(same[0], same[1]) == 1.0


def test_pairwise_ari_refuses_bad_labels():
    with pytest.raises(ValueError, match="non-negative"):
        pairwise_ari(np.array([[0, -1, 1]]))
    with pytest.raises(ValueError, match=r"\(C, N\)"):
        pairwise_ari(np.array([0, 1, 1]))


def test_expected_ari_is_the_posterior_weighted_agreement():
    rng = np.random.default_rng(1)
    labels = np.stack([rng.integers(0, k, size=50) for k in (2, 3, 4)])
    post = np.array([0.2, 0.5, 0.3])
    scores = expected_ari(labels, post)
    for i in range(3):
        want = sum(post[j] * adjusted_rand_score(labels[i], labels[j]) for j in range(3))
        assert scores[i] == pytest.approx(want, abs=1e-12)
    with pytest.raises(ValueError, match="one entry per candidate"):
        expected_ari(labels, post[:2])


def test_a_confident_posterior_picks_its_k_under_both_rules():
    rng = np.random.default_rng(2)
    labels = np.stack([rng.integers(0, k, size=300) for k in range(2, 11)])  # distinct random partitions
    post = np.full(9, 0.001)
    post[4] = 1 - 0.008  # K = 6
    for rule in ("posterior_mode", "expected_ari"):
        k, _ = select_k(_one_hot_probs(labels, 10), post, k_hi=10, rule=rule)
        assert k == 6


def test_a_flat_posterior_picks_the_central_partition_not_the_mode():
    # Nested partitions of 8 blobs: K=2 merges four blobs at a time, K=8 is the blobs, K=4 pairs them. With a
    # posterior leaning to K=2, the mode answers 2; the expected ARI favours a partition that agrees with many.
    blobs = np.repeat(np.arange(8), 40)
    by_k = {2: blobs // 4, 3: np.minimum(blobs // 3, 2), 4: blobs // 2, 5: np.minimum(blobs // 2, 4) + (blobs == 7),
            6: np.where(blobs < 4, blobs // 2, blobs - 2), 7: np.minimum(blobs, 6), 8: blobs, 9: blobs, 10: blobs}
    labels = np.stack([by_k[k] for k in range(2, 11)])
    post = np.array([0.2] + [0.1] * 8)
    k_mode, _ = select_k(_one_hot_probs(labels, 10), post, k_hi=10, rule="posterior_mode")
    k_ari, scores = select_k(_one_hot_probs(labels, 10), post, k_hi=10, rule="expected_ari")
    assert k_mode == 2
    assert k_ari != 2 and scores[k_ari - 2] > scores[0]
    np.testing.assert_allclose(scores, pairwise_ari(labels) @ post)


def test_candidates_above_k_hi_are_never_chosen_and_score_minus_inf():
    rng = np.random.default_rng(3)
    labels = np.stack([rng.integers(0, k, size=5) for k in range(2, 11)])
    post = np.zeros(9)
    post[-1] = 1.0  # all mass on K = 10, which 4 rows cannot have
    for rule in ("posterior_mode", "expected_ari"):
        k, scores = select_k(_one_hot_probs(labels, 10), post, k_hi=3, rule=rule)
        assert k in (2, 3)
        assert np.isneginf(scores[2:]).all() and np.isfinite(scores[:2]).all()


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="unknown K selection rule 'silhouette'"):
        select_k(np.zeros((9, 4, 10)), np.full(9, 1 / 9), k_hi=3, rule="silhouette")


@pytest.mark.parametrize("rule", ["expected_ari", "posterior_mode"])
def test_ties_go_to_the_smallest_k(rule):
    """Every candidate K returned the same 3-cluster partition (e.g. a table of 3 distinct rows repeated): the
    scores tie, and the smallest K wins even where a larger one is more probable, so the reported K leaves the
    fewest clusters without rows."""
    labels = np.tile(np.repeat([0, 1, 2], 10), (9, 1))
    post = np.full(9, 0.1)
    post[3] = 0.2  # K = 5 is the most probable
    if rule == "posterior_mode":
        post[:] = 1.0  # the mode's scores tie only when the posterior does
    k, scores = select_k(_one_hot_probs(labels, 10), post / post.sum(), k_hi=10, rule=rule)
    assert k == 2
    np.testing.assert_allclose(scores, 1.0 if rule == "expected_ari" else 1 / 9)



def test_a_tie_among_larger_k_goes_to_the_smallest_of_them():
    labels = np.tile(np.repeat([0, 1, 2], 10), (9, 1))  # K = 3..10: the same 3 clusters
    labels[0] = np.repeat([0, 1], 15)  # K = 2: another partition
    post = np.full(9, 0.1)
    post[3] = 0.2  # K = 5 is the most probable
    k, scores = select_k(_one_hot_probs(labels, 10), post / post.sum(), k_hi=10, rule="expected_ari")
    assert scores[1] == pytest.approx(scores[3]) and scores[1] > scores[0]
    assert k == 3


def test_cross_ari_equals_sklearn_for_every_pair():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, size=(3, 60))
    b = np.concatenate([rng.integers(0, 6, size=(2, 60)), np.zeros((1, 60), dtype=int)])
    got = cross_ari(a, b)
    assert got.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            assert got[i, j] == pytest.approx(adjusted_rand_score(a[i], b[j]), abs=1e-12)
    with pytest.raises(ValueError, match="different rows"):
        cross_ari(a, b[:, :59])


def test_cross_ari_in_slices_of_partitions_equals_one_piece(monkeypatch):
    """The contingency tables of every pair come from one bincount per slice of ``a``; small slices (one
    partition at a time) give exactly the one-piece result."""
    import model.selection as selection

    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 5, size=(4, 70)), rng.integers(0, 7, size=(3, 70))
    whole = cross_ari(a, b)
    monkeypatch.setattr(selection, "_CROSS_CODES", 1)
    np.testing.assert_array_equal(cross_ari(a, b), whole)
    for i in range(4):
        for j in range(3):
            assert whole[i, j] == pytest.approx(adjusted_rand_score(a[i], b[j]), abs=1e-12)


def test_expected_ari_over_one_member_is_the_plain_rule():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 5, size=(4, 80))
    posterior = rng.dirichlet(np.ones(4))
    np.testing.assert_allclose(expected_ari_members(labels, labels[None], posterior[None]),
                               expected_ari(labels, posterior))


def test_expected_ari_over_members_averages_each_members_own_posterior():
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, size=(3, 50))
    members = rng.integers(0, 3, size=(2, 3, 50))
    posteriors = rng.dirichlet(np.ones(3), size=2)
    want = [np.mean([sum(posteriors[j, k] * adjusted_rand_score(labels[c], members[j, k]) for k in range(3))
                     for j in range(2)]) for c in range(3)]
    np.testing.assert_allclose(expected_ari_members(labels, members, posteriors), want)
    with pytest.raises(ValueError, match="member_labels must be"):
        expected_ari_members(labels, members[:, :2], posteriors)


def test_auto_resolves_to_the_ranker_only_with_one_and_refined_candidates():
    from model.selection import DEFAULT_K_SELECTION, resolve_k_selection

    assert resolve_k_selection("auto", True, "kmeans") == "ranker"
    assert resolve_k_selection("auto", True, "gmm") == "ranker"  # the same candidates, the chosen one refined again
    assert resolve_k_selection("auto", False, "kmeans") == DEFAULT_K_SELECTION
    assert resolve_k_selection("auto", True, "none") == DEFAULT_K_SELECTION
    assert resolve_k_selection("posterior_mode", True, "kmeans") == "posterior_mode"


@pytest.mark.parametrize(("probabilities", "chosen", "expected"), [
    ({2: 0.2, 3: 0.5, 4: 0.3}, 3, 4),  # the runner-up
    ({2: 0.25, 3: 0.5, 4: 0.25}, 3, 2),  # a tie: the smaller K
    ({2: 0.6, 3: 0.4, 4: 0.0}, 3, 2),  # the chosen K need not be the most probable (a one-cluster answer: 1)
    ({2: 1.0, 3: 0.0, 4: 0.0}, 2, None),  # no other K was admissible
    (None, 3, None),  # K given: no probabilities
])
def test_next_k_is_the_most_probable_admissible_k_besides_the_chosen_one(probabilities, chosen, expected):
    assert next_k(probabilities, chosen) == expected
