"""Collating datasets of different N, D and K into one padded batch (the format of docs/DESIGN.md)."""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np
import torch

BATCH_KEYS = ("X", "row_mask", "col_mask", "cat_mask", "y", "n_clusters", "seed")


class TaskLike(Protocol):
    X: np.ndarray
    y: np.ndarray
    n_clusters: int
    categorical: Sequence[int]


def collate(
    tasks: Sequence[TaskLike],
    *,
    remap_categories: int | None = None,
    rng: np.random.Generator | None = None,
) -> dict[str, np.ndarray]:
    """Pad ``tasks`` to the largest N and D among them.

    ``remap_categories=M`` (training only) maps each categorical column's codes through a random injective map
    into 0..M-1, drawn from ``rng``, so every category embedding of the model gets trained.
    """
    if not tasks:
        raise ValueError("collate needs at least one task")
    b = len(tasks)
    n = max(t.X.shape[0] for t in tasks)
    d = max(t.X.shape[1] for t in tasks)
    out = {
        "X": np.zeros((b, n, d), np.float32),
        "row_mask": np.zeros((b, n), bool),
        "col_mask": np.zeros((b, d), bool),
        "cat_mask": np.zeros((b, d), bool),
        "y": np.full((b, n), -1, np.int64),
        "n_clusters": np.array([t.n_clusters for t in tasks], np.int64),
        "seed": np.array([int(getattr(t, "seed", getattr(t, "meta", {}).get("seed", -1))) for t in tasks],
                         np.int64),
    }
    for i, t in enumerate(tasks):
        ni, di = t.X.shape
        x = np.asarray(t.X, np.float32).copy()
        cats = list(t.categorical)
        if remap_categories is not None and cats:
            if rng is None:
                raise ValueError("remap_categories needs an explicit rng")
            for j in cats:
                codes = x[:, j].astype(np.int64)
                lut = rng.permutation(remap_categories)
                x[:, j] = lut[codes % remap_categories]
        out["X"][i, :ni, :di] = x
        out["row_mask"][i, :ni] = True
        out["col_mask"][i, :di] = True
        out["cat_mask"][i, cats] = True
        out["y"][i, :ni] = t.y
    return out


def to_torch(batch: dict[str, Any], device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """numpy batch -> torch tensors on ``device`` (keys outside the batch format are dropped)."""
    return {k: torch.as_tensor(np.asarray(batch[k])).to(device) for k in BATCH_KEYS if k in batch}
