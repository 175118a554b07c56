"""Losses against scikit-learn's metrics, permutation invariance, and the matching/ordinal variants."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from model import losses


def _one_hot_case(seed, n=200, k_pred=4, k_true=3):
    rng = np.random.default_rng(seed)
    pred = rng.integers(0, k_pred, n)
    true = rng.integers(0, k_true, n)
    true[: n // 2] = pred[: n // 2] % k_true  # some agreement
    probs = F.one_hot(torch.as_tensor(pred), k_pred).double()[None]
    return pred, true, probs, torch.as_tensor(true)[None], torch.ones(1, n, dtype=torch.bool)


@pytest.mark.parametrize("seed", range(5))
def test_soft_ari_equals_sklearn_ari_for_one_hot(seed):
    pred, true, probs, labels, mask = _one_hot_case(seed)
    got = losses.soft_ari(probs, labels, mask).item()
    assert got == pytest.approx(adjusted_rand_score(true, pred), abs=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_soft_nmi_equals_sklearn_nmi_for_one_hot(seed):
    pred, true, probs, labels, mask = _one_hot_case(seed)
    got = losses.soft_nmi(probs, labels, mask).item()
    assert got == pytest.approx(normalized_mutual_info_score(true, pred, average_method="arithmetic"), abs=1e-8)


def test_scores_are_invariant_to_permuting_cluster_columns():
    g = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(3, 50, 5, generator=g, dtype=torch.float64), -1)
    labels = torch.randint(0, 4, (3, 50), generator=g)
    mask = torch.ones(3, 50, dtype=torch.bool)
    perm = torch.tensor([3, 0, 4, 1, 2])
    for fn in (losses.soft_ari, losses.soft_nmi):
        assert torch.allclose(fn(probs, labels, mask), fn(probs[..., perm], labels, mask), atol=1e-12)


def test_padded_rows_do_not_change_the_scores():
    g = torch.Generator().manual_seed(1)
    probs = torch.softmax(torch.randn(1, 40, 3, generator=g, dtype=torch.float64), -1)
    labels = torch.randint(0, 3, (1, 40), generator=g)
    mask = torch.ones(1, 40, dtype=torch.bool)
    pad_probs = torch.cat([probs, torch.softmax(torch.randn(1, 10, 3, generator=g, dtype=torch.float64), -1)], 1)
    pad_labels = torch.cat([labels, torch.full((1, 10), -1)], 1)
    pad_mask = torch.cat([mask, torch.zeros(1, 10, dtype=torch.bool)], 1)
    for fn in (losses.soft_ari, losses.soft_nmi):
        assert torch.allclose(fn(probs, labels, mask), fn(pad_probs, pad_labels, pad_mask))


def test_uniform_assignments_are_a_stationary_point_of_soft_ari():
    """The stationary point that motivates the Matching+CE warm-up (see ObjectiveConfig)."""
    logits = torch.zeros(1, 30, 4, requires_grad=True)
    labels = torch.arange(30).remainder(3)[None]
    ari = losses.soft_ari(torch.softmax(logits, -1), labels, torch.ones(1, 30, dtype=torch.bool))
    ari.sum().backward()
    assert torch.allclose(logits.grad, torch.zeros_like(logits.grad), atol=1e-7)


def test_matching_ce_targets_follow_the_best_permutation():
    labels = torch.tensor([[0, 0, 1, 1, 2, 2]])
    pred = torch.tensor([[2, 2, 0, 0, 1, 1]])
    logits = F.one_hot(pred, 4).float() * 10
    logits[..., 3] = float("-inf")  # K=3 of K_max=4
    targets = losses.hungarian_targets(torch.softmax(logits, -1), labels, torch.ones(1, 6, dtype=torch.bool),
                                       active=torch.isfinite(logits[:, 0, :]))
    assert targets.tolist() == pred.tolist()
    loss = losses.matching_ce_loss(logits, labels, torch.ones(1, 6, dtype=torch.bool))
    assert torch.isfinite(loss) and loss.item() < 1e-3


def test_matching_softacc_is_near_zero_for_a_relabelled_perfect_partition():
    labels = torch.tensor([[0, 0, 1, 1, 2, 2]])
    probs = F.one_hot(torch.tensor([[1, 1, 2, 2, 0, 0]]), 3).double()
    loss = losses.matching_softacc_loss(probs, labels, torch.ones(1, 6, dtype=torch.bool), eps=0.01)
    assert loss.item() < 0.02
    wrong = F.one_hot(torch.tensor([[0, 1, 2, 0, 1, 2]]), 3).double()
    assert losses.matching_softacc_loss(wrong, labels, torch.ones(1, 6, dtype=torch.bool)).item() > 0.3


def test_cin_losses_prefer_the_true_k():
    k_true = torch.tensor([4])
    good = torch.full((1, 9), -5.0)
    good[0, 2] = 5.0
    bad = torch.full((1, 9), -5.0)
    bad[0, 6] = 5.0
    assert losses.cin_ce_loss(good, k_true) < losses.cin_ce_loss(bad, k_true)
    eta_good = torch.tensor([[5.0, 5.0, -5.0, -5.0, -5.0, -5.0, -5.0, -5.0]])  # K*>2, K*>3, not K*>4...
    assert losses.cin_ordinal_loss(eta_good, k_true) < losses.cin_ordinal_loss(-eta_good, k_true)
