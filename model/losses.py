"""PIN and CIN losses: pure functions of tensors (no config objects, no module state).

Conventions: ``probs`` (B, N, K) soft assignments (zero on padded rows is not required: ``row_mask`` decides),
``labels`` (B, N) int64 true clusters in 0..K_true-1 (-1 on padding), ``row_mask`` (B, N) bool.
Every score function returns one value per task, shape (B,).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment


def soft_confusion(probs: torch.Tensor, labels: torch.Tensor, row_mask: torch.Tensor) -> torch.Tensor:
    """M = P^T Z: (B, K, L) where L = max label + 1; M[k, l] = sum_i P_ik 1[z_i = l]."""
    n_true = int(labels.max().item()) + 1 if labels.numel() else 1
    z = F.one_hot(labels.clamp(min=0), max(n_true, 1)).to(probs.dtype) * row_mask[..., None]
    # where, not a product: NaN or inf on a padded row (softmax of all -inf logits) times 0 would still be NaN
    return torch.einsum("bnk,bnl->bkl", torch.where(row_mask[..., None], probs, 0.0), z)


def _comb2(x: torch.Tensor) -> torch.Tensor:
    return x * (x - 1) / 2


def soft_ari(probs: torch.Tensor, labels: torch.Tensor, row_mask: torch.Tensor) -> torch.Tensor:
    """SoftARI (the paper's Sec. 3.3): ARI of the soft contingency table; equals sklearn's ARI for one-hot P.

    A task of fewer than 2 rows has no pairs and scores 1, as in sklearn. NaN in a task's probabilities gives NaN,
    never a score (it used to read as a perfect 1 through the special case below).
    """
    m = soft_confusion(probs, labels, row_mask)
    n = row_mask.sum(-1).to(probs.dtype)
    index = _comb2(m).sum((-2, -1))
    rows = _comb2(m.sum(-1)).sum(-1)
    cols = _comb2(m.sum(-2)).sum(-1)
    expected = rows * cols / _comb2(n).clamp(min=1)
    maximum = (rows + cols) / 2
    denom = maximum - expected
    # Both partitions trivial (sklearn's special case), or no pairs at all: perfect agreement counts as 1.
    # Written as a test for "trivial" rather than for "safe" so that a NaN denominator stays NaN.
    trivial = (denom.abs() <= 1e-9) | (n < 2)
    return torch.where(trivial, torch.ones_like(denom),
                       (index - expected) / torch.where(trivial, torch.ones_like(denom), denom))


def soft_nmi(probs: torch.Tensor, labels: torch.Tensor, row_mask: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """SoftNMI with arithmetic normalisation 2I / (H_pred + H_true); equals sklearn's NMI for one-hot P."""
    m = soft_confusion(probs, labels, row_mask)
    n = row_mask.sum(-1).to(probs.dtype).clamp(min=1)
    p = m / n[:, None, None]
    pk, pl = p.sum(-1), p.sum(-2)
    mi = (p * (torch.log(p + eps) - torch.log(pk[:, :, None] * pl[:, None, :] + eps))).sum((-2, -1))
    hk = -(pk * torch.log(pk + eps)).sum(-1)
    hl = -(pl * torch.log(pl + eps)).sum(-1)
    denom = (hk + hl) / 2
    trivial = denom <= 1e-9  # both partitions one cluster: 1, as in sklearn (a NaN denominator stays NaN)
    return torch.where(trivial, torch.ones_like(denom), mi / torch.where(trivial, torch.ones_like(denom), denom))


def soft_ari_loss(probs, labels, row_mask) -> torch.Tensor:
    return -soft_ari(probs, labels, row_mask).mean()


def soft_nmi_loss(probs, labels, row_mask) -> torch.Tensor:
    return (1 - soft_nmi(probs, labels, row_mask)).mean()


def hungarian_targets(probs: torch.Tensor, labels: torch.Tensor, row_mask: torch.Tensor,
                      active: torch.Tensor | None = None) -> torch.Tensor:
    """Relabel the truth to the predicted cluster index of the best one-to-one matching (stop-gradient).

    ``active`` (B, K) bool restricts the matching to each task's live clusters; unmatched truths get -1.
    """
    m = soft_confusion(probs.detach(), labels, row_mask).cpu().numpy()  # (B, K, L)
    # NaN (a diverged step) would make scipy raise; that task's loss is NaN anyway, so the step is skipped
    m = np.nan_to_num(m, nan=0.0, posinf=0.0, neginf=0.0)
    live = None if active is None else active.cpu().numpy()
    out = labels.clone()
    for b in range(m.shape[0]):
        slots = np.arange(m.shape[1]) if live is None else np.flatnonzero(live[b])
        rows, cols = linear_sum_assignment(m[b][slots], maximize=True)
        mapping = np.full(m.shape[2], -1, dtype=np.int64)
        mapping[cols] = slots[rows]
        lut = torch.as_tensor(mapping, device=labels.device)
        valid = labels[b] >= 0
        out[b, valid] = lut[labels[b, valid]]
    return out


def matching_ce_loss(logits: torch.Tensor, labels: torch.Tensor, row_mask: torch.Tensor) -> torch.Tensor:
    """Matching+CE (App. D.1): Hungarian matching on M, then cross-entropy to the matched targets.

    ``logits`` (B, N, K) may hold -inf for inactive clusters.
    """
    active = torch.isfinite(logits[:, 0, :])
    logits = logits.masked_fill(~row_mask[..., None], 0.0)  # padded rows: no NaN from all -inf rows, no gradient
    probs = torch.softmax(logits, dim=-1)
    targets = hungarian_targets(probs, labels, row_mask, active=active)
    logp = torch.log_softmax(logits, dim=-1)
    valid = row_mask & (targets >= 0)
    picked = logp.gather(-1, targets.clamp(min=0)[..., None]).squeeze(-1)
    per_task = -torch.where(valid, picked, 0.0).sum(-1) / valid.sum(-1).clamp(min=1)
    return per_task.mean()


def sinkhorn(log_alpha: torch.Tensor, n_iters: int = 20) -> torch.Tensor:
    """Approximately doubly-stochastic matrix from log-affinities (B, K, L), in log space."""
    for _ in range(n_iters):
        log_alpha = log_alpha - torch.logsumexp(log_alpha, dim=-1, keepdim=True)
        log_alpha = log_alpha - torch.logsumexp(log_alpha, dim=-2, keepdim=True)
    return log_alpha.exp()


def matching_softacc_loss(probs, labels, row_mask, eps: float = 0.05, n_iters: int = 20) -> torch.Tensor:
    """Matching+SoftAcc (App. D.1): Sinkhorn soft permutation of log(M/N + eps) / eps, loss 1 - <Pi, M>/N."""
    m = soft_confusion(probs, labels, row_mask)
    n = row_mask.sum(-1).to(probs.dtype).clamp(min=1)
    mn = m / n[:, None, None]
    k, l_ = mn.shape[-2:]
    if k != l_:  # pad to square so a one-to-one matching exists
        s = max(k, l_)
        mn = F.pad(mn, (0, s - l_, 0, s - k))
    pi = sinkhorn(torch.log(mn + eps) / eps, n_iters)
    return (1 - (pi * mn).sum((-2, -1))).mean()


def cin_ce_loss(k_logits: torch.Tensor, n_clusters: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over K = 2..K_max; ``n_clusters`` (B,) holds the true K."""
    return F.cross_entropy(k_logits, n_clusters - 2)


def cin_ordinal_loss(eta: torch.Tensor, n_clusters: torch.Tensor) -> torch.Tensor:
    """Ordinal logistic loss (App. D.3): mean BCE of eta_K against 1[K* > K] for K = 2..K_max-1."""
    ks = torch.arange(2, eta.shape[1] + 2, device=eta.device)
    targets = (n_clusters[:, None] > ks[None, :]).to(eta.dtype)
    return F.binary_cross_entropy_with_logits(eta, targets)
