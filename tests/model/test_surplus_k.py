"""The surplus-K term of the objective: PIN also trained, by SoftARI, at a K' above the true K."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model import ModelConfig, TabClustNet
from model.batching import collate, to_torch
from model.objective import ObjectiveConfig, compute_losses, draw_surplus_k
from tests.model.test_learning import _Blobs
from tests.model.test_network import _train_batch


@pytest.mark.parametrize("decoder", ["iterative", "transformer", "naive"])
def test_surplus_logits_equal_a_separate_pass_at_that_k_and_leave_the_true_k_alone(decoder):
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny", decoder=decoder)).eval()
    b = _train_batch()
    args = (b["X"], b["row_mask"], b["col_mask"], b["cat_mask"])
    surplus_k = torch.tensor([7, 10])
    with torch.no_grad():
        plain = net(*args, n_clusters=b["n_clusters"])
        both = net(*args, n_clusters=b["n_clusters"], surplus_k=surplus_k)
        alone = net.partition_logits(net.encode(*args), b["row_mask"], surplus_k)
    assert plain.surplus_logits is None
    torch.testing.assert_close(both.logits, plain.logits)
    torch.testing.assert_close(both.k_logits, plain.k_logits)
    torch.testing.assert_close(both.surplus_logits, alone)
    assert torch.isinf(both.surplus_logits[0, :, 7:]).all() and torch.isfinite(both.surplus_logits[0, :, :7]).all()


def test_surplus_k_is_above_the_true_k_covers_every_value_and_is_reproducible():
    k_true = torch.arange(2, 11).repeat(50)
    draws = torch.stack([draw_surplus_k(k_true, 10, step) for step in range(40)])  # (steps, tasks)
    below_max = k_true < 10
    assert (draws[:, below_max] > k_true[below_max]).all() and (draws <= 10).all()
    assert (draws[:, ~below_max] == 10).all()
    assert set(draws[:, k_true == 2].unique().tolist()) == set(range(3, 11))
    assert torch.equal(draw_surplus_k(k_true, 10, 7), draws[7])
    assert not torch.equal(draws[7], draws[8])


def test_surplus_term_adds_its_weighted_soft_ari_and_trains_pin_only():
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny"))
    b = _train_batch()
    base = compute_losses(net, b, ObjectiveConfig(warmup_matching_steps=0), step=3)
    with_term = compute_losses(net, b, ObjectiveConfig(warmup_matching_steps=0, surplus_k_weight=0.5), step=3)
    assert "surplus_soft_ari" not in base
    torch.testing.assert_close(with_term["loss"], base["loss"] - 0.5 * with_term["surplus_soft_ari"])
    torch.testing.assert_close(with_term["soft_ari"], base["soft_ari"])
    (with_term["loss"] - base["loss"]).backward()  # the gradient of the surplus term alone
    assert net.decoder.prototypes.grad.abs().sum() > 0
    assert all(p.grad is None or p.grad.abs().sum() == 0 for n, p in net.named_parameters() if n.startswith("cin."))


def test_surplus_term_waits_for_the_matching_warmup_and_refuses_bad_settings():
    torch.manual_seed(0)
    net = TabClustNet(ModelConfig.preset("tiny"))
    objective = ObjectiveConfig(warmup_matching_steps=10, surplus_k_weight=1.0)
    early = compute_losses(net, _train_batch(), objective, step=9)
    assert float(early["surplus_soft_ari"]) == 0.0 and not early["surplus_soft_ari"].requires_grad
    assert float(compute_losses(net, _train_batch(), objective, step=10)["surplus_soft_ari"]) != 0.0
    with pytest.raises(ValueError, match="surplus_k_weight must be >= 0"):
        ObjectiveConfig(surplus_k_weight=-0.1)
    with pytest.raises(ValueError, match="needs pin_weight > 0"):
        ObjectiveConfig(surplus_k_weight=0.5, pin_weight=0.0)
    b = _train_batch()
    with pytest.raises(ValueError, match="heads='cin'"):
        net(b["X"], b["row_mask"], b["col_mask"], b["cat_mask"], n_clusters=b["n_clusters"], heads="cin",
            surplus_k=torch.tensor([5, 6]))


def _train(surplus_k_weight: float, steps: int = 150) -> TabClustNet:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    net = TabClustNet(ModelConfig.preset("tiny", col_dim=16, dec_blocks=2))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    objective = ObjectiveConfig(warmup_matching_steps=50, surplus_k_weight=surplus_k_weight)
    for step in range(steps):
        loss = compute_losses(net, to_torch(collate([_Blobs(rng) for _ in range(8)])), objective, step)["loss"]
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
    return net.eval()


def test_trained_with_the_surplus_term_pin_leaves_surplus_clusters_empty():
    """Three blobs partitioned at K = K_max: trained at the true K only, PIN spreads a third of the probability mass
    over the surplus clusters; trained with the surplus term, it keeps (nearly) all of it in three clusters."""
    test = [_Blobs(np.random.default_rng(1000 + i)) for i in range(10)]
    t = to_torch(collate(test))
    in_three = {}
    for weight in (0.0, 1.0):
        net = _train(weight)
        with torch.no_grad():
            probs = net.infer(t["X"], t["row_mask"], t["col_mask"], t["cat_mask"]).probs[:, -1]  # K = K_max
        mass = probs.sum(1).sort(-1, descending=True).values  # (tasks, K_max): each cluster's share of the rows
        in_three[weight] = float((mass[:, :3].sum(-1) / mass.sum(-1)).mean())
    assert in_three[1.0] > 0.95 and in_three[0.0] < 0.85, in_three
