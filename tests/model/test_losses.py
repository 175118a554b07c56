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


def test_non_finite_values_on_padded_rows_do_not_leak_into_the_losses():
    """``row_mask`` decides which rows count (module docstring): NaN probabilities or all -inf logits on padded rows
    must leave every loss, and its gradient, as on the unpadded task."""
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(1, 30, 4, generator=g, dtype=torch.float64)
    logits[..., 3] = float("-inf")  # K = 3 of K_max = 4
    labels = torch.randint(0, 3, (1, 30), generator=g)
    mask = torch.ones(1, 30, dtype=torch.bool)
    pad_logits = torch.cat([logits, torch.full((1, 5, 4), float("-inf"), dtype=torch.float64)], 1)
    pad_labels = torch.cat([labels, torch.full((1, 5), -1)], 1)
    pad_mask = torch.cat([mask, torch.zeros(1, 5, dtype=torch.bool)], 1)
    for fn in (losses.soft_ari, losses.soft_nmi, losses.matching_softacc_loss):
        probs = torch.softmax(logits, -1).requires_grad_(True)
        pad_probs = torch.softmax(pad_logits, -1).requires_grad_(True)  # NaN on the padded rows
        value, ref = fn(pad_probs, pad_labels, pad_mask), fn(probs, labels, mask)
        value.sum().backward()
        ref.sum().backward()
        assert torch.allclose(value, ref), fn.__name__
        assert torch.allclose(pad_probs.grad[:, :30], probs.grad) and (pad_probs.grad[:, 30:] == 0).all()
    pad = pad_logits.clone().requires_grad_(True)
    loss = losses.matching_ce_loss(pad, pad_labels, pad_mask)
    loss.backward()
    assert torch.allclose(loss, losses.matching_ce_loss(logits, labels, mask))
    assert torch.isfinite(pad.grad).all() and (pad.grad[:, 30:] == 0).all()


def test_soft_ari_of_a_single_row_is_one_as_in_sklearn():
    """One row has no pairs: sklearn's ARI is 1 (its empty/full-agreement case) whatever the partition; a soft
    partition used to give 2 (the pair count C(1, 2) = 0 replaced by 1)."""
    probs = torch.tensor([[[0.7, 0.2, 0.1]]], dtype=torch.float64)
    labels, mask = torch.zeros(1, 1, dtype=torch.long), torch.ones(1, 1, dtype=torch.bool)
    assert adjusted_rand_score([0], [0]) == 1.0
    assert losses.soft_ari(probs, labels, mask).item() == pytest.approx(1.0)


def test_nan_probabilities_give_a_nan_score_not_a_perfect_one():
    """A task whose probabilities hold NaN (a diverged step) used to score SoftARI = SoftNMI = 1, a finite loss of
    -1 that reads as perfect agreement in the logs; the score must be NaN, and the other tasks keep theirs."""
    g = torch.Generator().manual_seed(3)
    probs = torch.softmax(torch.randn(2, 20, 3, generator=g, dtype=torch.float64), -1)
    labels, mask = torch.randint(0, 3, (2, 20), generator=g), torch.ones(2, 20, dtype=torch.bool)
    broken = probs.clone()
    broken[0, 4] = float("nan")
    for fn in (losses.soft_ari, losses.soft_nmi):
        scores = fn(broken, labels, mask)
        assert torch.isnan(scores[0]), fn.__name__
        assert torch.allclose(scores[1], fn(probs, labels, mask)[1]), fn.__name__


def test_matching_ce_on_nan_logits_gives_a_nan_loss_instead_of_raising():
    """The training loop skips a step whose gradient is not finite (a bf16 overflow); under Matching+CE (the warm-up
    loss) NaN logits used to stop the run instead, scipy's matching raising "invalid numeric entries"."""
    logits = torch.randn(2, 12, 3, generator=torch.Generator().manual_seed(4))
    labels, mask = torch.arange(12).remainder(3).expand(2, -1), torch.ones(2, 12, dtype=torch.bool)
    broken = logits.clone()
    broken[0, 5] = float("nan")
    assert torch.isnan(losses.matching_ce_loss(broken, labels, mask))
    targets = losses.hungarian_targets(torch.softmax(broken, -1), labels, mask)
    assert torch.equal(targets[1], losses.hungarian_targets(torch.softmax(logits, -1), labels, mask)[1])
