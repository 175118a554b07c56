"""PIN decoders: the iterative prototype decoder (default) and the two ablation baselines of App. D.2.

Every decoder maps row representations R (S, N, d) to logits (S, N, K_max). Prototype/cluster slots beyond a
task's K are masked: they never act as keys, and their logits are -inf.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from model.config import ModelConfig
from model.layers import MAB, CompetitiveMAB, at_least_float32, full_precision


class CosineHead(nn.Module):
    """Shared MLP g on rows and prototypes, L2-normalised; logits = tau * cosine, tau learnable."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.g = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        self.log_tau = nn.Parameter(torch.tensor(math.log(10.0)))

    def forward(self, R: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
        """R: (S', N, d) rows, C: (S, K, d) prototypes, S = G S' (G sets of prototypes per set of rows, as in
        :meth:`IterativeDecoder.candidates`) -> logits (S, N, K)."""
        gr, gc = self.g(R), self.g(C)
        s, k, _ = C.shape
        g = s // R.shape[0]
        with full_precision(gr):  # bf16 cosines are off by ~1e-2, times tau ~10: noticeable logit noise
            r = F.normalize(at_least_float32(gr), dim=-1)
            c = F.normalize(at_least_float32(gc), dim=-1).reshape(R.shape[0], g * k, -1)
            logits = self.log_tau.exp() * r @ c.transpose(1, 2)  # (S', N, G*K)
        if g == 1:
            return logits
        return logits.view(R.shape[0], -1, g, k).transpose(1, 2).reshape(s, -1, k)


def farthest_point_seeds(R: torch.Tensor, ctx_mask: torch.Tensor, k: int) -> torch.Tensor:
    """Indices (S, k) of k context rows picked by farthest-point sampling: first the row farthest from the context
    mean, then each time the row farthest from those already picked. Deterministic and equivariant to the order of
    the rows (ties aside), like k-means++ seeding without its randomness; rows outside the context are never picked.
    """
    s, n, _ = R.shape
    R = at_least_float32(R)
    w = ctx_mask.to(R.dtype)
    mean = (R * w[..., None]).sum(1, keepdim=True) / w.sum(1).clamp(min=1)[:, None, None]
    dist = (R - mean).square().sum(-1)  # (S, N): distance to the nearest picked point (the mean at first)
    picks = []
    for _ in range(k):
        i = dist.masked_fill(~ctx_mask, -1.0).argmax(1)  # (S,)
        picks.append(i)
        picked = R[torch.arange(s, device=R.device), i]  # (S, d)
        new = (R - picked[:, None]).square().sum(-1)
        dist = new if len(picks) == 1 else torch.minimum(dist, new)
    return torch.stack(picks, 1)


class IterativeDecoder(nn.Module):
    """L blocks of [prototype SA, prototype<-data CA, data<-prototype CA] over the first K prototypes."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.prototypes = nn.Parameter(torch.randn(cfg.k_max, d) * d**-0.5)
        gather = CompetitiveMAB if cfg.proto_competition else MAB
        self.blocks = nn.ModuleList(
            nn.ModuleList([MAB(d, cfg.dec_heads, cfg.ff_factor), gather(d, cfg.dec_heads, cfg.ff_factor)]
                          + ([MAB(d, cfg.dec_heads, cfg.ff_factor)] if cfg.row_updates else []))
            for _ in range(cfg.dec_blocks)
        )
        self.head = CosineHead(d)
        self.seed_gain = nn.Parameter(torch.tensor(1.0)) if cfg.proto_seeding else None

    def forward(self, R, ctx_mask, k_mask, seeds=None):
        """R: (S, N, d), ctx_mask: (S, N), k_mask: (S, K_max) -> logits (S, N, K_max). ``seeds``: the rows'
        :func:`farthest_point_seeds` when the caller already has them (computed here otherwise)."""
        C = self._initial_prototypes(R, ctx_mask, seeds)
        for sa, ca_c, *ca_r in self.blocks:
            C = sa(C, C, k_mask)
            C = ca_c(C, R, ctx_mask, k_mask)
            if ca_r:
                R = ca_r[0](R, C, k_mask)
        return self.head(R, C)

    @property
    def fixed_rows(self) -> bool:
        """Whether the rows stay the encoder's (``row_updates=False``): then :meth:`candidates` applies."""
        return not any(ca_r for _, _, *ca_r in self.blocks)

    def candidates(self, R, ctx_mask, k_mask, seeds=None):
        """``forward`` for G candidate K per table at once: R (B, N, d), ctx_mask (B, N), k_mask (B*G, K_max)
        table-major (table b's candidates are rows b*G .. b*G+G-1), seeds (B, K_max) -> logits (B*G, N, K_max),
        as ``forward`` on R and ctx_mask repeated G times (``repeat_interleave``). Needs :attr:`fixed_rows`: the
        rows are then the same for every candidate, so their keys, values and head projection are computed once
        per table, not once per candidate: 9 times less of the decoder's largest cost at K_max = 10."""
        if not self.fixed_rows:
            raise ValueError("candidates needs a decoder that does not update the rows (row_updates=False)")
        g = k_mask.shape[0] // R.shape[0]
        C = self._initial_prototypes(R, ctx_mask, seeds).repeat_interleave(g, dim=0)  # (B*G, K_max, d)
        for sa, ca_c in self.blocks:
            C = sa(C, C, k_mask)
            C = ca_c(C, None, ctx_mask, k_mask, kv=ca_c.keys_values(R))
        return self.head(R, C)

    def _initial_prototypes(self, R, ctx_mask, seeds=None) -> torch.Tensor:
        """(S, K_max, d): the learned prototypes, plus (seeding) the gain times the farthest-point context rows."""
        C = self.prototypes.expand(R.shape[0], -1, -1)
        if self.seed_gain is not None:
            idx = farthest_point_seeds(R.detach(), ctx_mask, C.shape[1]) if seeds is None else seeds  # (S, K_max)
            C = C + self.seed_gain * R.gather(1, idx[..., None].expand(-1, -1, R.shape[-1]))
        return C

    def prototype_states(self, R, ctx_mask, k_mask, seeds=None) -> list[torch.Tensor]:
        """The prototypes each block's rows read, (S, K_max, d) per block, computed from the context rows of R
        (the rows outside ``ctx_mask`` shape nothing, so R may hold the context alone)."""
        C = self._initial_prototypes(R, ctx_mask, seeds)
        states = []
        for sa, ca_c, *ca_r in self.blocks:
            C = ca_c(sa(C, C, k_mask), R, ctx_mask, k_mask)
            states.append(C)
            if ca_r:
                R = ca_r[0](R, C, k_mask)
        return states

    def score_rows(self, R, states: list[torch.Tensor], k_mask) -> torch.Tensor:
        """Logits (S, N, K_max) of rows R that are not context, given the context's :meth:`prototype_states`:
        what ``forward`` gives them in one pass with the context."""
        for (_, _, *ca_r), C in zip(self.blocks, states):
            if ca_r:
                R = ca_r[0](R, C, k_mask)
        return self.head(R, states[-1])


class TransformerDecoder(nn.Module):
    """Non-iterative: L SA blocks on the rows, then L layers of prototype SA + prototype<-data CA."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.prototypes = nn.Parameter(torch.randn(cfg.k_max, d) * d**-0.5)
        self.row_blocks = nn.ModuleList(MAB(d, cfg.dec_heads, cfg.ff_factor) for _ in range(cfg.dec_blocks))
        self.proto_blocks = nn.ModuleList(
            nn.ModuleList(MAB(d, cfg.dec_heads, cfg.ff_factor) for _ in range(2)) for _ in range(cfg.dec_blocks)
        )
        self.head = CosineHead(d)

    def forward(self, R, ctx_mask, k_mask):
        for block in self.row_blocks:
            R = block(R, R, ctx_mask)
        C = self.prototypes.expand(R.shape[0], -1, -1)
        for sa, ca_c in self.proto_blocks:
            C = ca_c(sa(C, C, k_mask), R, ctx_mask)
        return self.head(R, C)


class NaiveDecoder(nn.Module):
    """SA+MLP: 2L SA blocks on the rows and a point-wise MLP to K_max logits (no prototypes)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.blocks = nn.ModuleList(MAB(d, cfg.dec_heads, cfg.ff_factor) for _ in range(2 * cfg.dec_blocks))
        self.mlp = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, cfg.k_max))

    def forward(self, R, ctx_mask, k_mask):
        for block in self.blocks:
            R = block(R, R, ctx_mask)
        return self.mlp(R)


DECODERS = {"iterative": IterativeDecoder, "transformer": TransformerDecoder, "naive": NaiveDecoder}


def build_decoder(cfg: ModelConfig) -> nn.Module:
    return DECODERS[cfg.decoder](cfg)
