"""CIN: the cardinality inference network, an MLP on sorted Gram-matrix fingerprints of PIN's partitions."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from model.config import ModelConfig
from model.layers import at_least_float32, full_precision


def gram_fingerprint(probs: torch.Tensor, ctx_mask: torch.Tensor) -> torch.Tensor:
    """Permutation-invariant summary of the soft partitions for every candidate K.

    Parameters
    ----------
    probs : (B, K_max-1, N, K_max) soft partitions for K = 2..K_max (zero beyond K and on padded rows).
    ctx_mask : (B, N) rows that count (the context).

    Returns
    -------
    (B, F) with F = sum_K K(K+1)/2: per K, diag(G_K) sorted descending then the strict upper triangle of G_K
    sorted descending, where G_K = P_K^T P_K / N.
    """
    b, n_cand, _, k_max = probs.shape
    with full_precision(probs):  # sums over N rows: float32 even under bf16 autocast (float64 stays float64)
        p = at_least_float32(probs) * ctx_mask[:, None, :, None]
        n = ctx_mask.sum(-1).clamp(min=1).to(p.dtype)
        gram = torch.einsum("bcnk,bcnl->bckl", p, p) / n[:, None, None, None]  # (B, K_max-1, K_max, K_max)
    parts = []
    for c in range(n_cand):
        k = c + 2
        g = gram[:, c, :k, :k]
        diag = torch.diagonal(g, dim1=-2, dim2=-1)
        iu = torch.triu_indices(k, k, offset=1, device=probs.device)
        off = g[:, iu[0], iu[1]]
        parts.append(diag.sort(dim=-1, descending=True).values)
        parts.append(off.sort(dim=-1, descending=True).values)
    return torch.cat(parts, dim=-1)


def fingerprint_width(k_max: int) -> int:
    return sum(k * (k + 1) // 2 for k in range(2, k_max + 1))


class CIN(nn.Module):
    """3-layer MLP from the fingerprint to logits over K = 2..K_max (categorical), or an ordinal head (App. D.3).

    ``forward`` returns ``(k_logits, eta)``: log-probabilities-compatible logits over K, and for the ordinal head
    the threshold logits eta (B, K_max-2) for P(K* > K), K = 2..K_max-1 (None for the categorical head).
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        h = cfg.cin_hidden
        self.ordinal = cfg.cin_head == "ordinal"
        out = 1 if self.ordinal else cfg.n_candidates
        self.mlp = nn.Sequential(
            nn.Linear(fingerprint_width(cfg.k_max), h), nn.GELU(), nn.Linear(h, h), nn.GELU(), nn.Linear(h, out)
        )
        if self.ordinal:
            self.deltas = nn.Parameter(torch.zeros(cfg.k_max - 2))
            self.raw_scale = nn.Parameter(torch.tensor(1.0))

    def forward(self, fingerprint: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        score = self.mlp(fingerprint)
        if not self.ordinal:
            return score, None
        thresholds = torch.cumsum(F.softplus(self.deltas), dim=0)  # b_2 <= ... <= b_{K_max-1}
        eta = F.softplus(self.raw_scale) * (score - thresholds)  # (B, K_max-2): logit of P(K* > K)
        above = torch.sigmoid(eta)
        ones = above.new_ones(above.shape[0], 1)
        zeros = above.new_zeros(above.shape[0], 1)
        upper = torch.cat([ones, above], dim=1)  # P(K* > K-1) for K = 2..K_max
        lower = torch.cat([above, zeros], dim=1)  # P(K* > K)
        return torch.log((upper - lower).clamp(min=1e-12)), eta
