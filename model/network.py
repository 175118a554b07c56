"""TabClustNet: PIN (encoder + decoder) and CIN in one module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

from model.cin import CIN, gram_fingerprint
from model.config import ModelConfig
from model.decoder import build_decoder, farthest_point_seeds
from model.encoder import Encoder, EncoderContext
from model.k_ranker import KRanker


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
        self.k_ranker = KRanker(cfg.k_ranker_features) if cfg.k_ranker else None

    def without_k_ranker(self) -> "TabClustNet":
        """This network without its K ranker (itself when it carries neither one nor its calibration), for anything
        that changes the weights the ranker was fitted to (training, averaging, a CIN refit or graft): the copy's
        config has no ranker and no calibration of one (:meth:`ModelConfig.without_k_ranker`)."""
        cfg = self.cfg.without_k_ranker()
        if self.k_ranker is None and cfg == self.cfg:
            return self
        net = TabClustNet(cfg)
        net.load_state_dict({k: v for k, v in self.state_dict().items() if not k.startswith("k_ranker.")})
        return net.train(self.training)

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
        (decoders whose non-context rows read only the prototypes: the iterative decoder); otherwise
        :class:`ContextInference` encodes the context again with every chunk of rows, under a context mask."""
        return hasattr(self.decoder, "prototype_states")

    def open_context(self, X_ctx: np.ndarray, cat_mask: np.ndarray, orders: np.ndarray | None = None
                     ) -> ContextInference:
        """One table's context rows (n_ctx, D), its categorical columns (D,) bool and the orderings of its columns
        to infer it in (M, D; None: the columns as given) -> :class:`ContextInference`: the partitions and the
        posterior over K of the context, and the assignment of further rows against it. The inference entry point
        of :class:`~model.estimator.TabClustPFN` and :func:`~model.ensemble.infer_members`."""
        return ContextInference(self, X_ctx, cat_mask, orders)

    def encode_context(self, X, row_mask, col_mask, cat_mask, orders: torch.Tensor | None = None
                       ) -> tuple[torch.Tensor, EncoderContext]:
        """A context (every valid row of X is context) -> its encoding ``(R, EncoderContext)``: R as :meth:`encode`
        gives it, and the context's share for :meth:`context_state`. ``orders`` (M, D): X is one table (B = 1),
        encoded in each ordering of its columns (B = M in R, as for the batch of ``X[:, :, order]``), its column
        embedding computed once (:meth:`Encoder.encode_context`)."""
        X = X.masked_fill(~(row_mask[:, :, None] & col_mask[:, None, :]), 0.0)
        return self.encoder.encode_context(X, col_mask, cat_mask, row_mask, orders)

    def context_state(self, X, row_mask, col_mask, cat_mask, n_clusters, encoded: tuple | None = None,
                      orders: torch.Tensor | None = None) -> ContextState:
        """Encode a context (every valid row of X is context) once, for assigning other rows at K = n_clusters.
        ``encoded``: the context's encoding from :meth:`encode_context` on the same X (skips encoding it again).
        ``orders`` (M, D): X is one table (B = 1), its context encoded in each ordering of its columns (as
        :meth:`encode_context` does; n_clusters (M,)), for :meth:`assign_rows` with the same orders."""
        R, encoder = self.encode_context(X, row_mask, col_mask, cat_mask, orders) if encoded is None else encoded
        if orders is not None:
            row_mask = row_mask.expand(orders.shape[0], -1)
        k_mask = candidate_k_mask(n_clusters, self.cfg.k_max)
        return ContextState(encoder, self.decoder.prototype_states(R, row_mask, k_mask), k_mask)

    def assign_rows(self, state: ContextState, X, row_mask, col_mask, cat_mask,
                    orders: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, N, K_max) of rows X (the same tables and columns as the context, none of them context),
        -inf beyond K: equal to their logits as non-context rows of one pass with the context, but the context
        is not encoded again. ``orders``: those of :meth:`encode_context`, whose encoding made ``state``; X is then
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


def _table_tensors(X: np.ndarray, cat_mask: np.ndarray, orders: np.ndarray | None, device: torch.device):
    """One table (N, D) -> the batch tensors X, row_mask, col_mask, cat_mask: one table per ordering of its columns
    (B = M; ``orders`` None: the table as it is, B = 1)."""
    orders = np.arange(X.shape[1])[None] if orders is None else orders
    m, (n, d) = len(orders), X.shape
    return (torch.as_tensor(np.stack([X[:, o] for o in orders]), dtype=torch.float32, device=device),
            torch.ones(m, n, dtype=torch.bool, device=device),
            torch.ones(m, d, dtype=torch.bool, device=device),
            torch.as_tensor(np.stack([cat_mask[o] for o in orders]), device=device))


class ContextInference:
    """A table's context, inferred in M orderings of its columns (:meth:`TabClustNet.open_context`).

    ``probs`` (M, K_max-1, n_ctx, K_max) and ``posterior`` (M, K_max-1): each ordering's soft partitions of the
    context for K = 2..K_max and its posterior over K (float64 numpy, computed on first use). :meth:`assign`: the
    soft assignment of further rows, as non-context rows: they shape nothing and do not affect one another.

    How the rows are assigned depends on the decoder. When its non-context rows read only the prototypes
    (:attr:`TabClustNet.assigns_from_context`), the context is encoded once (its column embedding once for every
    ordering) and shared by ``probs`` and by every :meth:`assign`, which encodes only the new rows. Otherwise the
    context is encoded again with every chunk of rows, the M orderings stacked in one batch and the new rows outside
    a context mask. Either way the rows get the outputs of one joint pass with the context under a context mask.
    """

    def __init__(self, net: TabClustNet, X_ctx: np.ndarray, cat_mask: np.ndarray, orders: np.ndarray | None = None):
        X_ctx = np.asarray(X_ctx)
        if X_ctx.ndim != 2:
            raise ValueError(f"X_ctx must be one table (n_ctx, D), got shape {X_ctx.shape}")
        self.net = net
        self.device = next(net.parameters()).device
        self.X_ctx = X_ctx
        self.cat_mask = np.asarray(cat_mask, dtype=bool)
        self.orders = np.arange(X_ctx.shape[1])[None] if orders is None else np.asarray(orders)
        self._encoded: tuple | None = None  # the context's encoding in every ordering (assigns_from_context)
        self._states: dict[int, ContextState] = {}  # the prototypes at each K asked of assign
        self._inferred: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n_members(self) -> int:
        """M, the orderings of the columns."""
        return len(self.orders)

    @property
    def probs(self) -> np.ndarray:
        """(M, K_max-1, n_ctx, K_max) each ordering's soft partitions of the context, K = 2..K_max."""
        return self._infer()[0]

    @property
    def posterior(self) -> np.ndarray:
        """(M, K_max-1) each ordering's posterior over K = 2..K_max (the softmax of CIN's logits)."""
        return self._infer()[1]

    def assign(self, X_rows: np.ndarray, k: int, batch_rows: int = 1024) -> np.ndarray:
        """Soft assignment (M, n_rows, k), float64, of rows (n_rows, D) of the same columns at K = k, per ordering
        (clusters as that ordering's; :func:`model.ensemble.average_matched` matches and averages them), as
        non-context rows, ``batch_rows`` rows per forward pass."""
        X_rows = np.asarray(X_rows)
        out = np.empty((self.n_members, len(X_rows), k), np.float64)
        with torch.inference_mode():
            for start in range(0, len(X_rows), batch_rows):
                logits = self._chunk_logits(X_rows[start : start + batch_rows], k)
                out[:, start : start + batch_rows] = torch.softmax(logits[..., :k].double(), dim=-1).cpu().numpy()
        return out

    # ------------------------------------------------------------------------------------------------ internals
    def _ordered(self) -> torch.Tensor:
        return torch.as_tensor(self.orders, device=self.device)

    def _encoding(self) -> tuple:
        """The context's encoding in every ordering, its column embedding once (assigns_from_context only)."""
        if self._encoded is None:
            self._encoded = self.net.encode_context(*_table_tensors(self.X_ctx, self.cat_mask, None, self.device),
                                                    self._ordered())
        return self._encoded

    def _infer(self) -> tuple[np.ndarray, np.ndarray]:
        if self._inferred is None:
            net = self.net
            with torch.inference_mode():
                if net.assigns_from_context:  # the encoding assign reuses
                    R, _ = self._encoding()
                    row_mask = torch.ones(self.n_members, len(self.X_ctx), dtype=torch.bool, device=self.device)
                    probs = net.all_partitions(R, row_mask)
                    k_logits, _ = net.cardinality(probs, row_mask)
                else:
                    out = net.infer(*_table_tensors(self.X_ctx, self.cat_mask, self.orders, self.device))
                    probs, k_logits = out.probs, out.k_logits
                posterior = torch.softmax(k_logits.double(), dim=-1)
            self._inferred = (probs.double().cpu().numpy(), posterior.cpu().numpy())
        return self._inferred

    def _chunk_logits(self, chunk: np.ndarray, k: int) -> torch.Tensor:
        """Logits (M, rows, K_max) of a chunk of non-context rows at K = k."""
        net, n_clusters = self.net, torch.full((self.n_members,), k, device=self.device)
        if net.assigns_from_context:  # the context encoded once; the chunk encodes its own rows only
            if k not in self._states:
                self._states[k] = net.context_state(
                    *_table_tensors(self.X_ctx, self.cat_mask, None, self.device), n_clusters, self._encoding(),
                    self._ordered())
            X, row_mask, col_mask, cat = _table_tensors(chunk, self.cat_mask, None, self.device)
            return net.assign_rows(self._states[k], X, row_mask, col_mask, cat, self._ordered())
        # the context again with the chunk, the chunk's rows outside the context mask
        X, row_mask, col_mask, cat = _table_tensors(np.concatenate([self.X_ctx, chunk]), self.cat_mask, self.orders,
                                                    self.device)
        n_ctx = len(self.X_ctx)
        ctx_mask = torch.zeros_like(row_mask)
        ctx_mask[:, :n_ctx] = True
        R = net.encode(X, row_mask, col_mask, cat, ctx_mask)
        return net.partition_logits(R, row_mask, n_clusters, ctx_mask)[:, n_ctx:]
