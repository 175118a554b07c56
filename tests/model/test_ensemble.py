"""model/ensemble.py and TabClustPFN(n_estimators=): the same table in several column orderings, one answer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from model.ensemble import average_matched, column_orderings, combine_members, match_clusters
from model.estimator import TabClustPFN


def _blobs(n_per: int = 40, d: int = 5, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=4.0, size=(3, d))
    return np.concatenate([rng.normal(c, 0.5, size=(n_per, d)) for c in centers])


def test_orderings_start_with_the_identity_are_distinct_and_deterministic():
    orders = column_orderings(7, 6)
    assert orders.shape == (6, 7)
    np.testing.assert_array_equal(orders[0], np.arange(7))
    assert all(sorted(o) == list(range(7)) for o in orders)
    assert len({tuple(o) for o in orders}) == 6
    np.testing.assert_array_equal(column_orderings(7, 6), orders)
    np.testing.assert_array_equal(column_orderings(7, 9)[:6], orders)  # a larger ensemble extends a smaller one


@pytest.mark.parametrize("d, m, expected", [(1, 4, 1), (2, 4, 2), (3, 8, 6), (3, 6, 6), (20, 8, 8)])
def test_a_table_with_fewer_orderings_uses_all_of_them(d, m, expected):
    orders = column_orderings(d, m)
    assert len(orders) == expected == min(m, math.factorial(d))
    assert len({tuple(o) for o in orders}) == expected


@pytest.mark.parametrize("bad", [(0, 4), (3, 0)])
def test_orderings_refuse_empty_arguments(bad):
    with pytest.raises(ValueError, match="must be >= 1"):
        column_orderings(*bad)


def test_clusters_are_matched_by_their_overlap():
    rng = np.random.default_rng(0)
    reference = rng.dirichlet(np.full(4, 0.2), size=200)
    shuffle = np.array([2, 0, 3, 1])
    noisy = reference[:, shuffle] + rng.uniform(0, 0.05, size=reference.shape)
    perm = match_clusters(reference, noisy)
    np.testing.assert_array_equal(shuffle[perm], np.arange(4))


def test_members_that_agree_up_to_their_cluster_names_average_to_the_first():
    rng = np.random.default_rng(1)
    k_max, n = 4, 50
    first = np.zeros((k_max - 1, n, k_max))
    for c in range(k_max - 1):
        first[c, :, : c + 2] = rng.dirichlet(np.full(c + 2, 0.3), size=n)
    members = [first]
    for _ in range(2):
        other = np.zeros_like(first)
        for c in range(k_max - 1):
            other[c, :, : c + 2] = first[c][:, rng.permutation(c + 2)]
        members.append(other)
    posteriors = rng.dirichlet(np.ones(k_max - 1), size=3)
    probs, posterior, perms = combine_members(np.stack(members), posteriors)
    np.testing.assert_allclose(probs, first, atol=1e-12)
    np.testing.assert_allclose(posterior, posteriors.mean(0))
    assert perms.shape == (3, k_max - 1, k_max)
    for j in range(3):
        for c in range(k_max - 1):
            np.testing.assert_array_equal(members[j][c][:, perms[j, c, : c + 2]], first[c][:, : c + 2])
            np.testing.assert_array_equal(perms[j, c, c + 2 :], np.arange(c + 2, k_max))  # untouched beyond K
    # other rows of those members, with the same relabelling, land in the same clusters
    rows = np.stack([first[1][:5, :3]] + [members[j][1][:5, :3] for j in (1, 2)])
    np.testing.assert_allclose(average_matched(rows, perms[:, 1, :3]), first[1][:5, :3])


def test_one_ordering_is_the_single_pass(tiny_checkpoint):
    from model.checkpoint import load_checkpoint
    import torch

    X = _blobs()
    est = TabClustPFN(refine="none", checkpoint=tiny_checkpoint, n_estimators=1).fit(X)
    assert est.n_estimators_ == 1
    net, _ = load_checkpoint(tiny_checkpoint)
    Z = (X - X.mean(0)) / X.std(0)
    n, d = Z.shape
    with torch.inference_mode():
        out = net.infer(torch.as_tensor(Z[None], dtype=torch.float32), torch.ones(1, n, dtype=torch.bool),
                        torch.ones(1, d, dtype=torch.bool), torch.zeros(1, d, dtype=torch.bool))
    posterior = torch.softmax(out.k_logits[0].double(), -1).numpy()
    np.testing.assert_allclose(list(est.k_posterior_.values()), posterior, atol=1e-5)
    k = est.k_chosen_
    assert adjusted_rand_score(out.probs[0, k - 2, :, :k].argmax(-1).numpy(), est.labels_) == 1.0


def test_the_posterior_is_the_average_over_the_orderings(tiny_checkpoint):
    X = _blobs(d=4)  # K by expected ARI: with "auto" the network is not run on a 4-column table (model.low_dim)
    est = TabClustPFN(checkpoint=tiny_checkpoint, n_estimators=3, k_selection="expected_ari").fit(X)
    assert est.n_estimators_ == 3
    singles = [TabClustPFN(checkpoint=tiny_checkpoint, n_estimators=1, k_selection="expected_ari")
               .fit(X[:, order]).k_posterior_
               for order in column_orderings(4, 3)]
    for k in est.k_posterior_:
        assert est.k_posterior_[k] == pytest.approx(np.mean([s[k] for s in singles]), abs=1e-6)


def test_all_orderings_make_the_posterior_independent_of_the_column_order(tiny_checkpoint):
    X = _blobs(d=3)
    shuffled = X[:, [2, 0, 1]]
    one = [TabClustPFN(checkpoint=tiny_checkpoint, n_estimators=1, k_selection="expected_ari").fit(t).k_posterior_
           for t in (X, shuffled)]
    assert max(abs(one[0][k] - one[1][k]) for k in one[0]) > 1e-4  # the network alone depends on the order
    every = [TabClustPFN(checkpoint=tiny_checkpoint, n_estimators=6, k_selection="expected_ari").fit(t).k_posterior_
             for t in (X, shuffled)]
    assert every[0] == pytest.approx(every[1], abs=1e-6)


def test_large_tables_and_predict_use_the_same_matched_members(tiny_checkpoint):
    X = _blobs(n_per=100, d=4)  # 300 rows, 120 of them context, the others assigned in chunks
    est = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint, n_context=120, batch_rows=50, random_state=0,
                      n_estimators=4).fit(X)
    assert est.n_estimators_ == 4
    np.testing.assert_allclose(est.probabilities_.sum(1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    rest = np.setdiff1d(np.arange(len(X)), est.context_indices_)
    again = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint, n_context=120, batch_rows=7, random_state=0,
                        n_estimators=4).fit(X)
    np.testing.assert_allclose(again.probabilities_[rest], est.probabilities_[rest], atol=1e-5)  # chunking


def test_n_estimators_must_be_a_positive_integer(tiny_checkpoint):
    with pytest.raises(ValueError, match="n_estimators"):
        TabClustPFN(checkpoint=tiny_checkpoint, n_estimators=0).fit(_blobs())


def test_expected_ari_scores_candidates_against_every_ordering_at_its_own_posterior(tiny_checkpoint):
    X = _blobs(d=4)
    est = TabClustPFN(refine="none", checkpoint=tiny_checkpoint, n_estimators=3).fit(X)
    candidates = {k: TabClustPFN(refine="none", n_clusters=k, checkpoint=tiny_checkpoint, n_estimators=3).fit(X).labels_
                  for k in range(2, 11)}
    members = []  # each ordering alone: its partition at every K and its posterior
    for order in column_orderings(4, 3):
        single = TabClustPFN(refine="none", checkpoint=tiny_checkpoint, n_estimators=1)
        posterior = single.fit(X[:, order]).k_posterior_
        labels = {k: TabClustPFN(refine="none", n_clusters=k, checkpoint=tiny_checkpoint, n_estimators=1).fit(X[:, order]).labels_
                  for k in range(2, 11)}
        members.append((posterior, labels))
    for k, score in est.k_scores_.items():
        expected = np.mean([sum(post[j] * adjusted_rand_score(candidates[k], labels[j]) for j in labels)
                            for post, labels in members])
        assert score == pytest.approx(expected, abs=1e-6)
    assert est.k_chosen_ == max(est.k_scores_, key=est.k_scores_.get)
