"""Attention building blocks: the pre-norm multihead attention block (MAB) and the induced set block (ISAB)."""

from __future__ import annotations

from math import inf

import torch
import torch.nn.functional as F
from torch import nn


def full_precision(t: torch.Tensor):
    """Context that turns autocast off on ``t``'s device: reductions whose value matters (cosine logits, Gram
    matrices, losses) run in float32 even inside a bf16 training step."""
    return torch.autocast(t.device.type, enabled=False)


def at_least_float32(t: torch.Tensor) -> torch.Tensor:
    """``t`` in float32 if it is in a narrower float (bf16, fp16), else unchanged: float64 stays float64."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


#: CUDA's fused attention kernels put the batch in one grid dimension, at most 2**16 - 1 (pytorch#146704).
CUDA_ATTENTION_MAX_BATCH = 32768


#: On CPU, attention with at most this many queries per set over at least ``_FEW_QUERIES_MIN_KEYS`` keys (the row
#: interaction's last block: the CLS queries over the cells) is computed as two matrix products, which are faster
#: there than ``scaled_dot_product_attention``'s CPU kernel with several threads and level with it on one.
FEW_QUERIES = 8
_FEW_QUERIES_MIN_KEYS = 16


def _few_queries_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None
                           ) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v, ``mask`` (bool, True = may be attended) as ``scaled_dot_product_attention``'s;
    a query with no key to attend reads zeros, as that kernel's."""
    logits = (q * q.shape[-1] ** -0.5) @ k.transpose(-1, -2)
    if mask is None:
        return torch.softmax(logits, dim=-1) @ v
    attn = torch.softmax(logits.masked_fill(~mask, -inf), dim=-1)
    return torch.nan_to_num(attn, nan=0.0) @ v


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
               max_batch: int | None = None) -> torch.Tensor:
    """``scaled_dot_product_attention`` in slices of at most ``max_batch`` along the batch (default: on CUDA,
    the kernels' grid limit; elsewhere unsliced); on CPU, few queries over many keys as two matrix products."""
    if not q.is_cuda and q.shape[-2] <= FEW_QUERIES and k.shape[-2] >= _FEW_QUERIES_MIN_KEYS:
        return _few_queries_attention(q, k, v, mask)
    s = q.shape[0]
    step = max_batch or (CUDA_ATTENTION_MAX_BATCH if q.is_cuda else s)
    if s <= step:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return torch.cat([F.scaled_dot_product_attention(q[i:i + step], k[i:i + step], v[i:i + step],
                                                     attn_mask=None if mask is None else mask[i:i + step])
                      for i in range(0, s, step)])


class MAB(nn.Module):
    """Pre-norm MAB: ``x + MHA(LN(x), LN(y), LN(y))`` then ``+ FFN(LN(.))`` with hidden width ``ff_factor * E``.

    No positional encodings: the block is equivariant to the order of ``x`` and invariant to the order of ``y``.
    """

    def __init__(self, dim: int, heads: int, ff_factor: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.ln_q = nn.LayerNorm(dim)
        self.ln_kv = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln_ff = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, ff_factor * dim), nn.GELU(), nn.Linear(ff_factor * dim, dim))

    def forward(self, x: torch.Tensor, y: torch.Tensor | None, key_mask: torch.Tensor | None = None,
                query_mask: torch.Tensor | None = None,
                kv: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """x: (S, Q, E) queries; y: (S, T, E) keys/values; key_mask: (S, T) bool, True = may be attended;
        query_mask: (S, Q) queries that exist (only :class:`CompetitiveMAB` needs it).

        ``kv``: ``keys_values(y)`` computed earlier (y is then ignored), for G = S / S' query sets per key set
        (S' sets of keys, key_mask (S', T)): query set s reads key set s // G, as if y had been repeated G times
        (``repeat_interleave``) but the keys and values projected once (:meth:`IterativeDecoder.candidates`).
        """
        s, nq, e = x.shape
        h = self.heads
        k, v = self.keys_values(y) if kv is None else kv
        sk = k.shape[0]
        g = s // sk
        if g * sk != s:
            raise ValueError(f"{s} query sets cannot share {sk} key sets evenly")
        q = self.q(self.ln_q(x)).view(s, nq, h, e // h).transpose(1, 2)  # (S, H, Q, E/H)
        if g > 1:  # the G query sets of one key set as one set of G*Q queries: one attention per key set
            q = q.reshape(sk, g, h, nq, -1).transpose(1, 2).reshape(sk, h, g * nq, -1)
        o = self.attend(q, k, v, key_mask, query_mask, g)  # (S', H, G*Q, E/H)
        if g > 1:
            o = o.view(sk, h, g, nq, -1).transpose(1, 2)  # (S', G, H, Q, E/H)
        o = o.reshape(s, h, nq, -1).transpose(1, 2).reshape(s, nq, e)
        o = self.out(o)
        if torch.is_grad_enabled() or o.dtype != x.dtype:  # (under autocast the sum must promote, not round)
            x = x + o
            return x + self.ff(self.ln_ff(x))
        # inference: the residual sums and the activation written into tensors just made for them (three fewer
        # allocations per block, which on CPU are fresh pages for the row interaction's 4.7 MB activations)
        x = o.add_(x)
        hidden, act, proj = self.ff
        h = hidden(self.ln_ff(x))
        h = torch.ops.aten.gelu_(h, approximate=act.approximate) if isinstance(act, nn.GELU) else act(h)
        f = proj(h)
        return f.add_(x) if f.dtype == x.dtype else x + f

    def keys_values(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """y: (S, T, E) -> keys and values, (S, H, T, E/H) each."""
        s, nk, e = y.shape
        k, v = self.kv(self.ln_kv(y)).view(s, nk, 2, self.heads, e // self.heads).permute(2, 0, 3, 1, 4)
        return k, v

    def attend(self, q, k, v, key_mask, query_mask, groups: int = 1) -> torch.Tensor:
        """Scaled dot-product attention, each query normalised over the keys (so queries are independent: the
        ``groups`` query sets sharing a key set need no separating)."""
        return _attention(q, k, v, None if key_mask is None else key_mask[:, None, None, :])


class ISAB(nn.Module):
    """Induced set attention: m inducing points summarise the context set, then every element reads them.

    Cost is O(N m) instead of O(N^2). Only context elements (``ctx_mask``) shape the summary, so the output of a
    non-context element depends on the context and on itself alone.
    """

    def __init__(self, dim: int, heads: int, n_inducing: int, ff_factor: int = 2) -> None:
        super().__init__()
        self.inducing = nn.Parameter(torch.randn(n_inducing, dim) * dim**-0.5)
        self.summarise = MAB(dim, heads, ff_factor)
        self.read = MAB(dim, heads, ff_factor)

    def forward(self, x: torch.Tensor, ctx_mask: torch.Tensor) -> torch.Tensor:
        """x: (S, N, E); ctx_mask: (S, N) bool -> (S, N, E)."""
        return self.read(x, self.summary(x, ctx_mask))

    def summary(self, x: torch.Tensor, ctx_mask: torch.Tensor) -> torch.Tensor:
        """The inducing points after reading the context elements of x: (S, m, E). ``read(y, summary)`` is then
        the output for any elements y of the same sets, in the context or not."""
        ind = self.inducing.unsqueeze(0).expand(x.shape[0], -1, -1)  # (S, m, E)
        return self.summarise(ind, x, ctx_mask)


class CompetitiveMAB(MAB):
    """Prototype <- data attention in which the prototypes compete for each row (slot-attention normalisation).

    Each row's attention is a softmax over the (unmasked) prototypes, then every prototype takes the weighted
    mean of its rows' values. Plain attention normalises over rows instead, so prototypes that start alike read
    alike: nothing breaks their symmetry until training has shaped the queries. Here a prototype that is
    slightly closer to some rows takes more of them at once, as one step of soft k-means does.
    """

    def attend(self, q, k, v, key_mask, query_mask, groups: int = 1) -> torch.Tensor:
        """q: (S, H, G*K, E/H): G = ``groups`` sets of K prototypes per set of rows; k/v: (S, H, T, E/H) rows;
        key_mask: (S, T); query_mask: (S*G, K). Each set's prototypes compete among themselves."""
        s, h, gk, _ = q.shape
        g = groups
        nk_proto = gk // g
        # the scale on the queries, not on the (rows times larger) logits; the same values up to float rounding
        logits = ((q * q.shape[-1] ** -0.5) @ k.transpose(-1, -2)).view(s, h, g, nk_proto, -1)  # (S, H, G, K, T)
        cpu_inference = not (torch.is_grad_enabled() or q.is_cuda)
        if query_mask is not None:
            mask = ~query_mask.view(s, g, nk_proto)[:, None, :, :, None]
            # without gradients the fresh logits are filled in place (no second tensor of their size)
            logits = logits.masked_fill(mask, -inf) if torch.is_grad_enabled() else logits.masked_fill_(mask, -inf)
        attn = torch.softmax(logits, dim=3).view(s, h, gk, -1)  # over each set's prototypes, per row
        if key_mask is not None and not (cpu_inference and bool(key_mask.all())):  # all rows present: nothing to do
            attn = attn * key_mask[:, None, None, :].to(attn.dtype)
        # weighted mean over rows: each prototype's sum of weighted values over its total weight (dividing the
        # small output, not the weights)
        return (attn @ v) / (attn.sum(-1, keepdim=True) + 1e-6)  # (S, H, G*K, E/H)
