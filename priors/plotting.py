"""Grids of two-dimensional prior datasets (matplotlib is imported only when a function is called)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["plot_grid"]


def plot_grid(datasets: Sequence, path: str | Path, *, title: str = "", columns: int = 8) -> Path:
    """Scatter the first two columns of each dataset, coloured by cluster, in a grid saved as a PNG.

    Parameters
    ----------
    datasets : sequence of PriorDataset
        Each needs ``X`` with at least two columns and labels ``y``.
    path : str or Path
        Output file; parent folders are created.
    title : str
        Figure title.
    columns : int
        Panels per row.

    Returns
    -------
    Path
        The written file.
    """
    from matplotlib.figure import Figure  # not pyplot: no backend switch, no global figure registry

    if not datasets:
        raise ValueError("no datasets to plot")
    if not (isinstance(columns, int) and columns >= 1):
        raise ValueError(f"columns must be a positive integer, got {columns!r}")
    if any(ds.X.shape[1] < 2 for ds in datasets):
        raise ValueError("every dataset needs at least two columns to plot")
    rows = int(np.ceil(len(datasets) / columns))
    fig = Figure(figsize=(1.6 * columns, 1.6 * rows))
    axes = fig.subplots(rows, columns, squeeze=False)
    for ax in axes.ravel():
        ax.set_axis_off()
    for ax, ds in zip(axes.ravel(), datasets):
        ax.scatter(ds.X[:, 0], ds.X[:, 1], c=ds.y, cmap="tab10", vmin=0, vmax=9, s=1.5, linewidths=0)
        ax.set_title(f"K={ds.n_clusters}", fontsize=6, pad=1)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    return path
