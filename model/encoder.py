"""TabICL-style encoder: column-wise set embedding, then row-wise interaction through CLS tokens."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from model.config import ModelConfig
from model.layers import ISAB, MAB

#: Rows per slice of the row interaction in CPU inference, so that its activations (rows x (D + n_cls) x E) stay
#: in cache: 4 copies of a 1000 x 32 table took 0.29 s in one piece, 0.21 s in slices of 512 (one copy: 0.05 s
#: either way; 2-core VM, 2 threads).
ROW_CHUNK = 512
#: Numeric cells are clipped to this many standard deviations before embedding (robust to outliers).
VALUE_CLIP = 10.0


class ColumnEmbedding(nn.Module):
    """Embed every cell, then let each column's cells attend to an induced summary of that column's context.

    The cell embedding therefore knows its column's distribution (not just its own value).
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        e = cfg.col_dim
        self.max_categories = cfg.max_categories
        self.numeric = nn.Linear(1, e)
        self.categorical = nn.Embedding(cfg.max_categories, e)
        self.blocks = nn.ModuleList(
            ISAB(e, cfg.col_heads, cfg.col_inducing, cfg.ff_factor) for _ in range(cfg.col_blocks)
        )

    def forward(self, X: torch.Tensor, cat_mask: torch.Tensor, ctx_mask: torch.Tensor | None,
                summaries: list[torch.Tensor] | None = None,
                record: list[torch.Tensor] | None = None) -> torch.Tensor:
        """X: (B, N, D), cat_mask: (B, D), ctx_mask: (B, N) -> cells (B, N, D, E).

        ``summaries``: each block's column summaries recorded (``record``) on the context of the same columns:
        the rows of X are then read against them and none of them is context (``ctx_mask`` is ignored).
        """
        b, n, d = X.shape
        Xt = X.transpose(1, 2)  # (B, D, N): the cells come out column by column, as the blocks read them
        cols = self.numeric(Xt.clamp(-VALUE_CLIP, VALUE_CLIP).unsqueeze(-1))  # (B, D, N, E)
        if torch.is_grad_enabled() or bool(cat_mask.any()):  # (training always: every parameter in the graph)
            cat = self.categorical(Xt.round().clamp(min=0).long() % self.max_categories)  # (B, D, N, E)
            cols = torch.where(cat_mask[:, :, None, None], cat, cols)
        cols = cols.reshape(b * d, n, -1)  # (B*D, N, E)
        ctx = None if summaries is not None else ctx_mask.unsqueeze(1).expand(b, d, n).reshape(b * d, n)
        for i, block in enumerate(self.blocks):
            summary = block.summary(cols, ctx) if summaries is None else summaries[i]
            if record is not None:
                record.append(summary)
            cols = block.read(cols, summary)
        return cols.view(b, d, n, -1).permute(0, 2, 1, 3)  # (B, N, D, E)


class RowInteraction(nn.Module):
    """Self-attention over the D cells of each row plus n_cls CLS tokens; the CLS outputs form the row vector.

    A learned per-column gain and offset let the row tell its features apart (the role of TabICL's rotary
    encoding); training sees randomly permuted features, so no column order is favoured.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        e = cfg.col_dim
        self.n_cls = cfg.n_cls
        # Per-column gain and offset: without a column-specific gain, attention's weighted sum of cells would mix
        # every column's value along one shared direction and lose which feature carried which value.
        self.column_gain = nn.Parameter(torch.randn(cfg.max_features, e))
        self.column_id = nn.Parameter(torch.randn(cfg.max_features, e) * 0.1)
        self.cls = nn.Parameter(torch.randn(cfg.n_cls, e) * e**-0.5)
        self.blocks = nn.ModuleList(MAB(e, cfg.row_heads, cfg.ff_factor) for _ in range(cfg.row_blocks))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.value_codes = None
        if cfg.value_skip:
            # orthonormal rows (max_features <= d_model) or columns: at init the skip is an isometry of the values
            self.value_codes = nn.Parameter(nn.init.orthogonal_(torch.empty(cfg.max_features, cfg.d_model)))
            # the CLS summary enters gated, starting small (as ReZero), so it does not drown the values' geometry
            self.cls_gate = nn.Parameter(torch.tensor(0.1))

    def forward(self, cells: torch.Tensor, col_mask: torch.Tensor, values: torch.Tensor | None = None,
                positions: torch.Tensor | None = None) -> torch.Tensor:
        """cells: (B, N, D, E), col_mask: (B, D), values: (B, N, D) numeric values (0 elsewhere), needed with
        ``value_skip`` -> rows (B, N, n_cls*E).

        ``positions`` (M, D): one table (B = 1), its columns as given, read in M orderings: in member m column c
        takes position ``positions[m, c]`` (its gain, offset and value code), which gives member m the rows of the
        table whose columns are permuted to that order (up to float rounding: the cells attend to each other in
        no order), without permuting the cells -> rows (M, N, n_cls*E).
        """
        b, n, d, e = cells.shape
        if d > self.column_id.shape[0]:
            raise ValueError(f"the encoder takes at most {self.column_id.shape[0]} features, got {d}")
        if positions is None:
            members, gain, ident = b, (1 + self.column_gain[:d])[None], self.column_id[:d][None]  # (1, D, E)
        else:
            if b != 1:
                raise ValueError(f"positions need one table (B = 1), got B = {b}")
            members, gain, ident = positions.shape[0], 1 + self.column_gain[positions], self.column_id[positions]
            col_mask = col_mask.expand(members, -1)
        width = self.n_cls + d
        cpu_inference = not (torch.is_grad_enabled() or cells.is_cuda)
        keys = None  # every column present (one table, as the estimator sends): attention needs no mask
        if not (cpu_inference and bool(col_mask.all())):
            keys = torch.cat([col_mask.new_ones(members, self.n_cls), col_mask], dim=1)  # (members, n_cls+D)
            keys = keys.unsqueeze(1).expand(members, n, -1).reshape(members * n, -1)
        last = len(self.blocks) - 1
        if cpu_inference:
            # slices of rows (rows attend within themselves only: the same result): each slice's tokens are built
            # in one buffer (CLS tokens, then the gained cells, no cat) and pass both blocks while in cache
            cls = cells.new_empty(members * n, self.n_cls, e)
            for start in range(0, members * n, ROW_CHUNK):
                stop = min(start + ROW_CHUNK, members * n)
                part = cells.new_empty(stop - start, width, e)
                part[:, : self.n_cls] = self.cls
                for i in range(start // n, (stop - 1) // n + 1):  # the members (tables) the slice holds rows of
                    lo, hi, t = max(start, i * n), min(stop, (i + 1) * n), 0 if positions is not None else i
                    g = i if gain.shape[0] > 1 else 0
                    torch.addcmul(ident[g], cells[t, lo - i * n : hi - i * n], gain[g],
                                  out=part[lo - start : hi - start, self.n_cls:])
                part_keys = None if keys is None else keys[start:stop]
                for j, block in enumerate(self.blocks):
                    # only the CLS outputs are kept, so the last block computes only theirs (the cells still serve
                    # as keys): the same values for (n_cls + D) / n_cls times less of that block's query-side work
                    part = block(part[:, : self.n_cls] if j == last else part, part, part_keys)
                cls[start:stop] = part
        else:  # out= does not differentiate
            tokens = cells * gain[:, None] + ident[:, None]  # (members, N, D, E)
            tokens = torch.cat([self.cls.expand(members, n, -1, -1), tokens], dim=2).reshape(members * n, width, e)
            for j, block in enumerate(self.blocks):
                tokens = block(tokens[:, : self.n_cls] if j == last else tokens, tokens, keys)
            cls = tokens
        rows = self.norm(cls.reshape(members, n, self.n_cls * e))  # (members, N, d)
        if self.value_codes is not None:
            if values is None:
                raise ValueError("value_skip needs the numeric values")
            codes = self.value_codes[:d] if positions is None else self.value_codes[positions]  # (D | M x D, d)
            rows = self.cls_gate * rows + values @ codes.to(values.dtype)
        return rows


class CategoricalSkip(nn.Module):
    """The row's categories straight into its representation: sum over categorical columns j of a code
    ``codes[j, c]`` for the row's category c, centred by its mean over the context rows (``ModelConfig.cat_skip``).

    The codes (one per column position and category, ``max_features * max_categories`` of them) start as random
    unit vectors, near-orthogonal in ``d_model`` dimensions, so two rows that differ in one categorical column
    start about sqrt(2) apart, as in the one-hot encoding; z-normalised numeric columns (the value skip) are on
    the same scale. Centring keeps the representation's origin at the context's mean, as the value skip's
    z-normalised values do, so the decoder's cosine head sees directions, not a shared offset.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.max_categories = cfg.max_categories
        codes = torch.randn(cfg.max_features * cfg.max_categories, cfg.d_model)
        self.codes = nn.Parameter(codes / codes.norm(dim=-1, keepdim=True))

    def forward(self, X: torch.Tensor, col_mask: torch.Tensor, cat_mask: torch.Tensor,
                ctx_mask: torch.Tensor | None, mean: torch.Tensor | None = None,
                positions: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """X: (B, N, D) with categorical codes in the ``cat_mask`` columns -> ((B, N, d_model), the context mean
        (B, 1, d_model) it was centred by). ``mean``: a context's mean, recorded earlier (``ctx_mask`` ignored).
        ``positions`` (M, D): one table read in M orderings, as :meth:`RowInteraction.forward` (B = M out)."""
        b, n, d = X.shape
        codes = X.round().clamp(min=0).long() % self.max_categories  # as the cell embedding reads them
        if positions is None:
            positions = torch.arange(d, device=X.device)[None]
        index = codes + positions[:, None, :] * self.max_categories  # (B | M, N, D): column position, category
        b = index.shape[0]
        weight = (cat_mask & col_mask)[:, None, :].expand(b, n, d).to(self.codes.dtype)
        out = nn.functional.embedding_bag(index.reshape(b * n, d), self.codes, mode="sum",
                                          per_sample_weights=weight.reshape(b * n, d)).view(b, n, -1)
        if mean is None:
            ctx = ctx_mask.to(out.dtype)[:, :, None]
            mean = (out * ctx).sum(1, keepdim=True) / ctx.sum(1, keepdim=True).clamp(min=1.0)
        return out - mean, mean


@dataclass
class EncoderContext:
    """What the context contributes to every row's encoding: each column block's summaries and the categorical
    skip's centre. Rows encoded against it (:meth:`Encoder.encode_given`) get exactly what they would get as
    non-context rows of one pass over the context and them."""

    summaries: list[torch.Tensor]  # per column block: (B*D, m, E)
    cat_mean: torch.Tensor | None  # (B, 1, d) or None without the categorical skip
    #: recorded with ``orders`` (:meth:`Encoder.encode_context`): the one table's summaries, its columns as given,
    #: so that further rows get their column embedding once for every ordering (``encode_given(orders=)``)
    table_summaries: list[torch.Tensor] | None = None  # per column block: (D, m, E)


class Encoder(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.columns = ColumnEmbedding(cfg)
        self.rows = RowInteraction(cfg)
        self.categories = CategoricalSkip(cfg) if cfg.cat_skip else None

    def forward(self, X, col_mask, cat_mask, ctx_mask) -> torch.Tensor:
        """X: (B, N, D) -> R(0): (B, N, d)."""
        return self._encode(X, col_mask, cat_mask, ctx_mask)[0]

    def encode_context(self, X, col_mask, cat_mask, ctx_mask, orders: torch.Tensor | None = None
                       ) -> tuple[torch.Tensor, EncoderContext]:
        """As ``forward``, and the context's contribution, for encoding further rows with :meth:`encode_given`.

        ``orders`` (M, D): X holds one table (B = 1), encoded once per ordering of its columns, as if the batch
        held ``X[:, :, order]`` for each (B = M in the outputs): the column embedding, which does not depend on
        the order of the columns, is computed once for all of them (a test-time ensemble, :mod:`model.ensemble`).
        """
        if orders is None:
            return self._encode(X, col_mask, cat_mask, ctx_mask)
        record: list[torch.Tensor] = []
        cells, positions = self._ordered_cells(X, cat_mask, ctx_mask, orders, record=record)
        m = orders.shape[0]
        rows, encoded = self._encode(X, col_mask, cat_mask, ctx_mask, cells=cells, positions=positions)
        summaries = [s[orders].reshape(m * orders.shape[1], *s.shape[1:]) for s in record]  # (M*D, m, E) each
        return rows, EncoderContext(summaries, encoded.cat_mean, table_summaries=record)

    def encode_given(self, X, col_mask, cat_mask, context: EncoderContext,
                     orders: torch.Tensor | None = None) -> torch.Tensor:
        """Rows (B, N, D) of the same B tables and columns as the recorded context, none of them context.

        ``orders``: the orderings the context was recorded with (``encode_context(orders=)``); X is then the one
        table (B = 1), its columns as given, and the rows come back once per ordering (B = M), their column
        embedding computed once for all of them.
        """
        if orders is None:
            return self._encode(X, col_mask, cat_mask, None, context)[0]
        if context.table_summaries is None:
            raise ValueError("orders need a context recorded with orders (encode_context(..., orders=))")
        cells, positions = self._ordered_cells(X, cat_mask, None, orders, summaries=context.table_summaries)
        return self._encode(X, col_mask, cat_mask, None, context, cells=cells, positions=positions)[0]

    def _ordered_cells(self, X, cat_mask, ctx_mask, orders, summaries=None, record=None):
        """One table X (B = 1) -> its column embedding, computed once (it does not depend on the order of the
        columns), and where each ordering puts each column: ``positions[m, orders[m, p]] = p`` (M, D). The row
        interaction then reads the columns as given, each at its position in each ordering."""
        if X.shape[0] != 1:
            raise ValueError(f"orders need one table (B = 1), got B = {X.shape[0]}")
        return self.columns(X, cat_mask, ctx_mask, summaries, record), torch.argsort(orders, dim=1)

    def _encode(self, X, col_mask, cat_mask, ctx_mask, context: EncoderContext | None = None,
                cells: torch.Tensor | None = None, positions: torch.Tensor | None = None):
        """``context``: rows read against a recorded context (none of them context); ``cells``: the column
        embedding, already computed (the summaries it recorded are then the caller's); ``positions``: one table
        in several orderings (:meth:`_ordered_cells`)."""
        values = None
        if self.rows.value_codes is not None:  # numeric columns only: categorical codes are not magnitudes
            keep = (col_mask & ~cat_mask)[:, None, :]
            values = X.clamp(-VALUE_CLIP, VALUE_CLIP).masked_fill(~keep, 0.0)
        summaries = None if context is None else context.summaries
        record: list[torch.Tensor] | None = [] if context is None else None
        if cells is None:
            cells = self.columns(X, cat_mask, ctx_mask, summaries, record)
        rows = self.rows(cells, col_mask, values, positions)
        cat_mean = None
        if context is not None:
            categorical = context.cat_mean is not None  # the context's table, so the same columns
        else:  # without a categorical column the skip adds zeros: inference skips it (training keeps the graph)
            categorical = torch.is_grad_enabled() or bool((cat_mask & col_mask).any())
        if self.categories is not None and categorical:
            skip, cat_mean = self.categories(X, col_mask, cat_mask, ctx_mask,
                                             None if context is None else context.cat_mean, positions)
            rows = rows + skip.to(rows.dtype)
        return rows, (context if context is not None else EncoderContext(record, cat_mean))
