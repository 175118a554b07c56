"""PNG figures of the benchmark, drawn on bare ``matplotlib.figure.Figure`` objects (no pyplot global state)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

logger = logging.getLogger(__name__)

_DPI = 130


def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=_DPI, bbox_inches="tight")
    logger.info("wrote %s", path)
    return path


def plot_cd_diagram(avg_ranks: pd.Series, cd: float, groups: list[list[str]], path: Path,
                    title: str = "") -> Path:
    """Critical-difference diagram: methods on an average-rank axis (1 = best, left), bars join methods whose
    ranks differ by less than the Nemenyi CD."""
    order = avg_ranks.sort_values()
    k = len(order)
    lo, hi = 1.0, max(float(np.ceil(order.max())), 2.0)
    fig = Figure(figsize=(8, 1.6 + 0.28 * k))
    ax = fig.add_subplot()
    ax.set_xlim(lo - 0.3, hi + 0.3)
    ax.set_ylim(-(k + len(groups)) * 0.5 - 1, 2.2)
    ax.axis("off")
    ax.hlines(0, lo, hi, color="black", lw=1)
    for tick in range(int(lo), int(hi) + 1):
        ax.vlines(tick, 0, 0.15, color="black", lw=1)
        ax.text(tick, 0.3, str(tick), ha="center", va="bottom", fontsize=8)
    if np.isfinite(cd):
        ax.hlines(1.5, lo, lo + cd, color="tab:red", lw=2)
        ax.text(lo + cd / 2, 1.65, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=8, color="tab:red")
    half = (k + 1) // 2
    for i, (name, rank) in enumerate(order.items()):
        left = i < half
        y = -0.6 - 0.45 * (i if left else k - 1 - i)
        x_text = lo - 0.2 if left else hi + 0.2
        ax.plot([rank, rank, x_text], [0, y, y], color="0.3", lw=0.8)
        ax.text(x_text, y, f"{name} ({rank:.2f})", ha="right" if left else "left", va="center", fontsize=8)
    for g, members in enumerate(groups):
        y = -0.35 - 0.12 * g
        ax.hlines(y, order[members[0]] - 0.03, order[members[-1]] + 0.03, color="black", lw=3)
    if title:
        ax.set_title(title, fontsize=10)
    return _save(fig, path)


def plot_win_rate(wins: pd.DataFrame, path: Path, title: str = "") -> Path:
    """Heatmap of pairwise win rates (%): row method beats column method on that share of datasets."""
    k = len(wins)
    fig = Figure(figsize=(1.2 + 0.45 * k, 1.0 + 0.4 * k))
    ax = fig.add_subplot()
    im = ax.imshow(100 * wins.to_numpy(dtype=float), cmap="RdBu", vmin=0, vmax=100)
    ax.set_xticks(range(k), wins.columns, rotation=90, fontsize=7)
    ax.set_yticks(range(k), wins.index, fontsize=7)
    for i in range(k):
        for j in range(k):
            v = wins.iat[i, j]
            if np.isfinite(v):
                ax.text(j, i, f"{100 * v:.0f}", ha="center", va="center", fontsize=6)
    fig.colorbar(im, ax=ax, label="win rate (%)")
    ax.set_title(title or "Pairwise win rate (ARI)", fontsize=10)
    return _save(fig, path)


def plot_time_vs_rank(median_seconds: pd.Series, median_rank: pd.Series, path: Path, title: str = "") -> Path:
    """Scatter of median wall time (log scale) against median ARI rank, one labelled point per method."""
    common = median_seconds.index.intersection(median_rank.index)
    fig = Figure(figsize=(6, 4.5))
    ax = fig.add_subplot()
    t = median_seconds[common].clip(lower=1e-4)
    ax.scatter(t, median_rank[common], color="tab:orange", edgecolor="black", zorder=3)
    for m in common:
        ax.annotate(m, (t[m], median_rank[m]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("median wall time per dataset (s)")
    ax.set_ylabel("median ARI rank (lower is better)")
    ax.grid(alpha=0.3)
    ax.set_title(title or "Time vs. median ARI rank", fontsize=10)
    return _save(fig, path)


def _p_colour(p: float) -> str:
    """Colour of a p-value: dark green < 0.001, green < 0.05, red otherwise, grey when undefined."""
    if not np.isfinite(p):
        return "0.7"
    return "darkgreen" if p < 1e-3 else "limegreen" if p < 0.05 else "tab:red"


def plot_paired_differences(wide: pd.DataFrame, paired: pd.DataFrame, reference: str, path: Path,
                            test: str = "t_p", title: str = "") -> Path:
    """Box plots of per-dataset ARI differences ``reference - baseline``, coloured by the one-sided p-value."""
    fig = Figure(figsize=(1.5 + 0.5 * max(len(paired), 1), 4))
    ax = fig.add_subplot()
    for i, row in enumerate(paired.itertuples()):
        diff = (wide[reference] - wide[row.baseline]).dropna().to_numpy()
        if diff.size == 0:
            continue
        p = getattr(row, test)
        box = ax.boxplot(diff, positions=[i], widths=0.6, patch_artist=True)
        box["boxes"][0].set_facecolor(_p_colour(p))
        ax.text(i, diff.max(), f"p={p:.1g}" if np.isfinite(p) else "p=n/a", ha="center", va="bottom", fontsize=6)
    ax.axhline(0, color="tab:red", ls="--", lw=1)
    ax.set_xticks(range(len(paired)), paired["baseline"], rotation=90, fontsize=7)
    ax.set_ylabel(f"ARI({reference}) - ARI(baseline)")
    label = "paired t-test" if test == "t_p" else "Wilcoxon signed-rank"
    ax.set_title(title or f"Per-dataset ARI differences, one-sided {label}", fontsize=10)
    return _save(fig, path)


def plot_calibration(coverage: pd.DataFrame, path: Path) -> Path:
    """Empirical coverage of the CIN prediction sets against the nominal level."""
    fig = Figure(figsize=(4, 4))
    ax = fig.add_subplot()
    low = min(0.75, float(np.nanmin(coverage["coverage"], initial=1.0)) - 0.02)
    ax.plot([low, 1.0], [low, 1.0], color="0.5", ls="--", lw=1, label="ideal")
    ax.plot(coverage["alpha"], coverage["coverage"], marker="o", color="tab:blue", label="TabClustPFN CIN")
    ax.set_xlabel("nominal level alpha")
    ax.set_ylabel("empirical coverage")
    ax.set_xlim(0.75, 1.0)
    ax.set_ylim(low, 1.005)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title("Calibration of p(K | X)", fontsize=10)
    return _save(fig, path)
