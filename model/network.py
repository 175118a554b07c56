"""TabClustNet: PIN (encoder + decoder) and CIN in one module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from model.cin import CIN, gram_fingerprint
from model.config import ModelConfig
from model.decoder import build_decoder, farthest_point_seeds
from model.encoder import Encoder, EncoderContext


@dataclass
class InferenceOutput:
    """probs: (B, K_max-1, N, K_max) soft partitions for K = 2..K_max; k_logits: (B, K_max-1) CIN logits."""

    probs: torch.Tensor
    k_logits: torch.Tensor
    eta: torch.Tensor | None = None


@dataclass
class ContextState:
    """A context encoded once (:meth:`TabClustNet.context_state`): the encoder's share and the prototypes each
    decoder block's rows read, at one K (``k_mask``: (B, K_max))."""

    encoder: EncoderContext
    prototypes: list[torch.Tensor]
    k_mask: torch.Tensor


@dataclass
class TrainOutput:
    """logits: (B, N, K_max) at the true K (-inf beyond it); k_logits: (B, K_max-1) or None when CIN did not run;
    eta: ordinal logits or None; surplus_logits: (B, N, K_max) at the ``surplus_k`` asked of ``forward``, or None."""

    logits: torch.Tensor
    k_logits: torch.Tensor | None
    eta: torch.Tensor | None = None
    surplus_logits: torch.Tensor | None = None


def candidate_k_mask(n_clusters: torch.Tensor, k_max: int) -> torch.Tensor:
    """(S,) K per task -> (S, K_max) bool, True for the first K slots."""
    return torch.arange(k_max, device=n_clusters.device)[None, :] < n_clusters[:, None]


class TabClustNet(nn.Module):
    """TabClustPFN's network. Batch format and shape letters: see the ``model`` package docstring.

    Rows outside ``ctx_mask`` (default: every valid row) are assigned but shape neither the column summaries nor
    the prototypes nor CIN's Gram matrices, so their outputs do not depend on each other.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.decoder = build_decoder(cfg)
        self.cin = CIN(cfg)

    def encode(self, X, row_mask, col_mask, cat_mask, ctx_mask=None) -> torch.Tensor:
        """X: (B, N, D) -> R: (B, N, d)."""
        if X.dim() != 3:
            raise ValueError(f"X must be (B, N, D), got shape {tuple(X.shape)}")
        ctx = row_mask if ctx_mask is None else ctx_mask & row_mask
        X = X.masked_fill(~(row_mask[:, :, None] & col_mask[:, None, :]), 0.0)
        return self.encoder(X, col_mask, cat_mask, ctx)

    def partition_logits(self, R, row_mask, n_clusters, ctx_mask=None, seeds=None) -> torch.Tensor:
        """R: (S, N, d), n_clusters: (S,) -> logits (S, N, K_max), -inf beyond each task's K. ``seeds``: the
        prototype seed rows of a seeding decoder, when already computed."""
        ctx = row_mask if ctx_mask is None else ctx_mask & row_mask
        k_mask = candidate_k_mask(n_clusters, self.cfg.k_max)
        logits = self.decoder(R, ctx, k_mask) if seeds is None else self.decoder(R, ctx, k_mask, seeds=seeds)
        return logits.masked_fill(~k_mask[:, None, :], float("-inf"))

    def all_partitions(self, R, row_mask, ctx_mask=None) -> torch.Tensor:
        """PIN for every K = 2..K_max in one batched decoder pass -> probs (B, K_max-1, N, K_max)."""
        b, n, d = R.shape
        c = self.cfg.n_candidates
        ks = torch.arange(2, self.cfg.k_max + 1, device=R.device).repeat(b)  # (B*C,)
        rep = lambda t: t.repeat_interleave(c, dim=0)  # noqa: E731  (B, ...) -> (B*C, ...)
        table_ctx = row_mask if ctx_mask is None else ctx_mask & row_mask
        seeds = None
        if getattr(self.decoder, "seed_gain", None) is not None:  # one seeding per table, not one per candidate K
            seeds = farthest_point_seeds(R.detach(), table_ctx, self.cfg.k_max)
        if getattr(self.decoder, "fixed_rows", False):  # the rows' share of the decoder once per table
            k_mask = candidate_k_mask(ks, self.cfg.k_max)
            logits = self.decoder.candidates(R, table_ctx, k_mask, seeds).masked_fill(~k_mask[:, None, :],
                                                                                       float("-inf"))
        else:
            ctx = None if ctx_mask is None else rep(ctx_mask)
            logits = self.partition_logits(rep(R), rep(row_mask), ks, ctx, None if seeds is None else rep(seeds))
        probs = torch.softmax(logits, dim=-1) * rep(row_mask)[:, :, None]
        return probs.view(b, c, n, self.cfg.k_max)

    @property
    def assigns_from_context(self) -> bool:
        """Whether :meth:`context_state` / :meth:`assign_rows` can assign rows without re-encoding the context
        (decoders whose non-context rows read only the prototypes: the iterative decoder)."""
        return hasattr(self.decoder, "prototype_states")

    def infer_context(self, X, row_mask, col_mask, cat_mask, orders: torch.Tensor | None = None
                      ) -> tuple[InferenceOutput, tuple]:
        """:meth:`infer` on a context (every valid row of X is context), plus its encoding ``(R, EncoderContext)``
        for :meth:`context_state`, so that assigning other rows afterwards does not encode the context again.
        ``orders`` (M, D): X is one table (B = 1), inferred in each ordering of its columns (B = M in the outputs,
        as for the batch of ``X[:, :, order]``), its column embedding computed once
        (:meth:`Encoder.encode_context`)."""
        X = X.masked_fill(~(row_mask[:, :, None] & col_mask[:, None, :]), 0.0)
        R, encoder = self.encoder.encode_context(X, col_mask, cat_mask, row_mask, orders)
        if orders is not None:
            row_mask = row_mask.expand(orders.shape[0], -1)
        probs = self.all_partitions(R, row_mask)
        k_logits, eta = self.cardinality(probs, row_mask)
        return InferenceOutput(probs=probs, k_logits=k_logits, eta=eta), (R, encoder)

    def context_state(self, X, row_mask, col_mask, cat_mask, n_clusters, encoded: tuple | None = None,
                      orders: torch.Tensor | None = None) -> ContextState:
        """Encode a context (every valid row of X is context) once, for assigning other rows at K = n_clusters.
        ``encoded``: the context's encoding from :meth:`infer_context` on the same X (skips encoding it again).
        ``orders`` (M, D): X is one table (B = 1), its context encoded in each ordering of its columns (as
        :meth:`infer_context` does; n_clusters (M,)), for :meth:`assign_rows` with the same orders."""
        if encoded is None:
            X = X.masked_fill(~(row_mask[:, :, None] & col_mask[:, None, :]), 0.0)
            R, encoder = self.encoder.encode_context(X, col_mask, cat_mask, row_mask, orders)
        else:
            R, encoder = encoded
        if orders is not None:
            row_mask = row_mask.expand(orders.shape[0], -1)
        k_mask = candidate_k_mask(n_clusters, self.cfg.k_max)
        return ContextState(encoder, self.decoder.prototype_states(R, row_mask, k_mask), k_mask)

    def assign_rows(self, state: ContextState, X, row_mask, col_mask, cat_mask,
                    orders: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, N, K_max) of rows X (the same tables and columns as the context, none of them context),
        -inf beyond K: equal to their logits as non-context rows of one pass with the context, but the context
        is not encoded again. ``orders``: those of :meth:`infer_context`, whose encoding made ``state``; X is then
        the one table, its columns as given (B = 1), and the logits come back per ordering (B = M)."""
        X = X.masked_fill(~(row_mask[:, :, None] & col_mask[:, None, :]), 0.0)
        R = self.encoder.encode_given(X, col_mask, cat_mask, state.encoder, orders)
        logits = self.decoder.score_rows(R, state.prototypes, state.k_mask)
        return logits.masked_fill(~state.k_mask[:, None, :], float("-inf"))

    def cardinality(self, probs, row_mask, ctx_mask=None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """CIN on (B, K_max-1, N, K_max) partitions -> (k_logits (B, K_max-1), ordinal eta or None)."""
        ctx = row_mask if ctx_mask is None else ctx_mask & row_mask
        return self.cin(gram_fingerprint(probs, ctx))

    def infer(self, X, row_mask, col_mask, cat_mask, ctx_mask=None) -> InferenceOutput:
        """Soft partitions for every K and the posterior over K, in one pass of the encoder."""
        R = self.encode(X, row_mask, col_mask, cat_mask, ctx_mask)
        probs = self.all_partitions(R, row_mask, ctx_mask)
        k_logits, eta = self.cardinality(probs, row_mask, ctx_mask)
        return InferenceOutput(probs=probs, k_logits=k_logits, eta=eta)

    def forward(self, X, row_mask, col_mask, cat_mask, ctx_mask=None, n_clusters=None, detach_cin: bool = True,
                heads: Literal["both", "pin", "cin"] = "both", surplus_k: torch.Tensor | None = None):
        """Inference (``n_clusters`` None) -> :class:`InferenceOutput`; training -> :class:`TrainOutput`.

        In training mode PIN runs at the true K with gradients, and CIN reads PIN's partitions for every K; with
        ``detach_cin`` (the paper's decoupled optimisation) those partitions are computed without a graph, so CIN's
        loss cannot reach PIN. ``heads`` trains only one part: ``"pin"`` skips the K_max-1 candidate passes
        (most of a step's cost), ``"cin"`` runs PIN without a graph and trains CIN alone on its partitions.
        ``surplus_k`` (B,): PIN also runs, with gradients, at these K (e.g. more clusters than the true K), in the
        same decoder pass as the true K; the logits come back as ``surplus_logits``.
        Training goes through ``forward`` so that DistributedDataParallel sees the call.
        """
        if n_clusters is None:
            return self.infer(X, row_mask, col_mask, cat_mask, ctx_mask)
        if heads not in ("both", "pin", "cin"):
            raise ValueError(f"heads must be 'both', 'pin' or 'cin', got {heads!r}")
        if heads == "cin":
            if surplus_k is not None:
                raise ValueError("surplus_k trains PIN: it cannot be combined with heads='cin'")
            with torch.no_grad():
                R = self.encode(X, row_mask, col_mask, cat_mask, ctx_mask)
                probs = self.all_partitions(R, row_mask, ctx_mask)
            k_logits, eta = self.cardinality(probs, row_mask, ctx_mask)
            idx = (n_clusters - 2).view(-1, 1, 1, 1).expand(-1, 1, *probs.shape[2:])
            true_k = probs.gather(1, idx).squeeze(1)  # (B, N, K_max) at the true K
            k_mask = candidate_k_mask(n_clusters, self.cfg.k_max)
            logits = torch.log(true_k.clamp(min=1e-30)).masked_fill(~k_mask[:, None, :], float("-inf"))
            return TrainOutput(logits=logits, k_logits=k_logits, eta=eta)
        R = self.encode(X, row_mask, col_mask, cat_mask, ctx_mask)
        surplus = None
        if surplus_k is None:
            logits = self.partition_logits(R, row_mask, n_clusters, ctx_mask)
        else:  # one decoder pass over both K: (2B, ...) then split
            two = lambda t: None if t is None else torch.cat([t, t])  # noqa: E731
            both = self.partition_logits(two(R), two(row_mask), torch.cat([n_clusters, surplus_k]), two(ctx_mask))
            logits, surplus = both.split(R.shape[0])
        if heads == "pin":
            return TrainOutput(logits=logits, k_logits=None, eta=None, surplus_logits=surplus)
        if detach_cin:
            with torch.no_grad():
                probs = self.all_partitions(R.detach(), row_mask, ctx_mask)
        else:
            probs = self.all_partitions(R, row_mask, ctx_mask)
        k_logits, eta = self.cardinality(probs, row_mask, ctx_mask)
        return TrainOutput(logits=logits, k_logits=k_logits, eta=eta, surplus_logits=surplus)
