"""The pretraining objective: PIN loss at the true K plus CIN loss, decoupled (default) or additive."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from model import losses
from model.layers import full_precision

PinLoss = Literal["soft_ari", "soft_nmi", "matching_ce", "matching_softacc"]


@dataclass(frozen=True)
class ObjectiveConfig:
    """How the losses are formed.

    ``warmup_matching_steps``: uniform assignments are a stationary point of SoftARI and SoftNMI (their gradient is
    the same for every cluster there), so from random initialisation the first steps use Matching+CE, which
    breaks the symmetry at once; then the chosen ``pin_loss`` takes over. 0 disables the warm-up.
    The CIN loss follows the network's CIN head: cross-entropy (categorical) or ordinal.

    ``pin_weight``/``cin_weight`` of 0 switch a part off entirely, which saves compute under the decoupled scheme:
    with ``cin_weight=0`` the K_max-1 candidate passes are skipped; with ``pin_weight=0`` PIN runs without a graph
    and only CIN learns (e.g. a final phase that fits CIN to the finished PIN).

    ``surplus_k_weight`` > 0 (not in the paper) adds, with this weight, -SoftARI of PIN run at a K' drawn uniformly
    from K+1..K_max for each task (tasks at K = K_max add nothing), from the first step after the warm-up. PIN
    trained at the true K only learns to fill every cluster it is given, so at K' > K its partitions look alike
    whatever the true K and CIN's Gram matrices carry little about K. ARI against the true labels is highest when
    the surplus clusters stay empty, so this term teaches PIN to leave them empty, which the Gram matrices show.
    """

    pin_loss: PinLoss = "soft_ari"
    coupling: Literal["decoupled", "additive"] = "decoupled"
    warmup_matching_steps: int = 400
    cin_weight: float = 1.0
    pin_weight: float = 1.0
    surplus_k_weight: float = 0.0

    def __post_init__(self) -> None:
        if self.pin_loss not in ("soft_ari", "soft_nmi", "matching_ce", "matching_softacc"):
            raise ValueError(f"unknown pin_loss {self.pin_loss!r}")
        if self.coupling not in ("decoupled", "additive"):
            raise ValueError(f"unknown coupling {self.coupling!r}: use 'decoupled' or 'additive'")
        if self.warmup_matching_steps < 0 or self.cin_weight < 0 or self.pin_weight < 0:
            raise ValueError("warmup_matching_steps, cin_weight and pin_weight must be >= 0")
        if not self.surplus_k_weight >= 0:
            raise ValueError(f"surplus_k_weight must be >= 0, got {self.surplus_k_weight}")
        if self.surplus_k_weight > 0 and self.pin_weight == 0:
            raise ValueError("surplus_k_weight trains PIN: it needs pin_weight > 0")
        if self.cin_weight == 0 and self.pin_weight == 0:
            raise ValueError("pin_weight and cin_weight cannot both be 0: nothing would be trained")
        if self.coupling == "additive" and (self.cin_weight == 0 or self.pin_weight == 0):
            raise ValueError("the additive coupling trains PIN and CIN together: both weights must be > 0")

    @property
    def heads(self) -> str:
        """Which parts a step trains: 'both', 'pin' or 'cin'."""
        if self.cin_weight == 0:
            return "pin"
        return "cin" if self.pin_weight == 0 else "both"


def pin_loss_value(name: PinLoss, logits: torch.Tensor, labels: torch.Tensor, row_mask: torch.Tensor):
    if name == "matching_ce":
        return losses.matching_ce_loss(logits, labels, row_mask)
    probs = torch.softmax(logits, dim=-1)
    if name == "soft_ari":
        return losses.soft_ari_loss(probs, labels, row_mask)
    if name == "soft_nmi":
        return losses.soft_nmi_loss(probs, labels, row_mask)
    return losses.matching_softacc_loss(probs, labels, row_mask)


def compute_losses(net: nn.Module, batch: dict[str, torch.Tensor], objective: ObjectiveConfig,
                   step: int = 0) -> dict[str, torch.Tensor]:
    """One forward pass on a torch batch; returns ``loss`` (to backpropagate) and detached scalars to log.

    ``net`` may be a TabClustNet or a DistributedDataParallel wrapper of one.
    """
    heads = objective.heads
    k_true = batch["n_clusters"]
    surplus_on = objective.surplus_k_weight > 0 and heads != "cin"
    surplus_k = None
    if surplus_on and step >= objective.warmup_matching_steps:
        surplus_k = draw_surplus_k(k_true, getattr(net, "module", net).cfg.k_max, step)
    out = net(batch["X"], batch["row_mask"], batch["col_mask"], batch["cat_mask"],
              n_clusters=k_true, detach_cin=objective.coupling == "decoupled", heads=heads, surplus_k=surplus_k)
    labels, row_mask = batch["y"], batch["row_mask"]
    with full_precision(out.logits):  # contingency sums over N rows lose too much in bf16
        result = _losses(out, labels, row_mask, k_true, heads, objective, step)
        if surplus_on:
            surplus = _surplus_soft_ari(out, surplus_k, k_true, labels, row_mask)
            result["loss"] = result["loss"] - objective.pin_weight * objective.surplus_k_weight * surplus
            result["surplus_soft_ari"] = surplus.detach()
        return result


def draw_surplus_k(k_true: torch.Tensor, k_max: int, step: int) -> torch.Tensor:
    """K' uniform on K+1..K_max for each task (K_max where K = K_max); reproducible from ``step``."""
    gen = torch.Generator().manual_seed(0x5EED + step)
    u = torch.rand(k_true.shape[0], generator=gen).to(k_true.device)
    span = (k_max - k_true).clamp(min=0)
    return (k_true + 1 + (u * span).long()).clamp(max=k_max)


def _surplus_soft_ari(out, surplus_k, k_true, labels, row_mask) -> torch.Tensor:
    """Mean SoftARI at the surplus K over the tasks that have one (0, without a graph, before the warm-up ends)."""
    if out.surplus_logits is None:
        return out.logits.new_zeros((), dtype=torch.float32)
    has = (surplus_k > k_true).float()
    scores = losses.soft_ari(torch.softmax(out.surplus_logits.float(), dim=-1), labels, row_mask)
    return (scores * has).sum() / has.sum().clamp(min=1.0)


def _losses(out, labels, row_mask, k_true, heads, objective: ObjectiveConfig, step: int) -> dict[str, torch.Tensor]:
    """The body of :func:`compute_losses` after the forward pass (called with autocast off)."""
    zero = out.logits.new_zeros((), dtype=torch.float32)
    pin = cin = zero
    if heads != "cin":
        name = objective.pin_loss
        if step < objective.warmup_matching_steps and name in ("soft_ari", "soft_nmi"):
            name = "matching_ce"
        pin = pin_loss_value(name, out.logits.float(), labels, row_mask)
    if heads != "pin":
        if out.eta is not None:
            cin = losses.cin_ordinal_loss(out.eta.float(), k_true)
        else:
            cin = losses.cin_ce_loss(out.k_logits.float(), k_true)
    with torch.no_grad():
        probs = torch.softmax(out.logits.float(), dim=-1)
        ari = losses.soft_ari(probs, labels, row_mask).mean()
        k_acc = (out.k_logits.argmax(-1) + 2 == k_true).float().mean() if out.k_logits is not None else zero
    return {
        "loss": objective.pin_weight * pin + objective.cin_weight * cin,
        "pin_loss": pin.detach(),
        "cin_loss": cin.detach(),
        "soft_ari": ari,
        "k_acc": k_acc,
    }
