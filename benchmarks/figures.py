"""Figures of the shipped model a reader would rather look at than read (issue 31 item 5).

One command writes, under ``--out`` (default ``docs/results/figures/``):

- ``cin-calibration.png``: reliability curve of CIN's posterior p(K | X) (``TabClustPFN.k_posterior_``): its top
  probability, binned, against how often its top K is the true K; counts per bin, 95 % Wilson intervals, the
  diagonal. One panel for held-out prior tasks (the reserved calibration seeds of
  :mod:`pipeline.evaluation.calibration`, the datasets ``jobs/evaluate.py --calibration-size`` scores), one for
  the labelled development tables (:func:`pipeline.evaluation.suites.dev_suite`).
- ``cin-confusion.png``: the posterior's top K against the true K, rows normalised, counts in the cells; the same
  two panels.
- ``representations.png``: for two held-out 2-D prior tasks (the amortized regime) and two development tables,
  PCA to 2-D of the raw features, of the encoder's row representations R (coloured by the true clusters, then by
  the estimator's clusters, matched to the true ones) and of the rows in the cosine head's space (what the
  prototypes are compared with; the paper's R^L); read by :func:`benchmarks.probe_representation.table_stages`.
- ``figures.md``: command, date, checkpoint, task counts, expected calibration error (ECE) with a bootstrap
  interval, top-K accuracy, coverage of the 80 % prediction set, and what each figure shows.
- ``cin-posteriors.csv``: every task's true K, top K, top probability and the probability of the true K.

The estimator is ``TabClustPFN`` with K by expected ARI, which runs the network on every table (the defaults' BIC
path on designs of <= 4 columns does not), and otherwise its defaults (4 column orderings; its posterior is the
orderings' average). Its chosen K (``n_clusters_``) is not the posterior's top K scored here.

    PYTHONPATH=. .venv/bin/python benchmarks/figures.py      # 400 held-out tasks: ~2 min on 2 idle cores, 1 thread
    PYTHONPATH=. .venv/bin/python benchmarks/figures.py --tasks 40 --out /tmp/figures   # a quick look
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from matplotlib.figure import Figure
from scipy.optimize import linear_sum_assignment
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score, silhouette_score

if __package__ in (None, ""):  # run as a script: the repository root on the path, like `python -m`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.probe_representation import table_stages  # noqa: E402
from pipeline.evaluation import calibration as calib  # noqa: E402
from pipeline.evaluation.suites import EvalDataset, dev_suite  # noqa: E402

logger = logging.getLogger(__name__)

DEFAULT_OUT = Path("docs/results/figures")
DEFAULT_TASKS = 400  # the held-out calibration datasets of docs/results/evaluation-test.md (--calibration-size 400)
N_BINS = 10
ALPHA = 0.8  # the prediction set's nominal mass reported with the figures
REP_DEV_TABLES = ("hawks", "crabs")  # one table the model clusters well (ARI 0.61), one it does not (0.03)
REP_PRIOR_TABLES = 2
REP_PRIOR_K = (3, 6)  # the representation figure's prior tasks: the first held-out amortized tasks with K here
_DPI = 130


# --------------------------------------------------------------------------------------------- calibration
def posterior_mode(posterior: dict[int, float]) -> int:
    """The most probable K (ties to the smaller K, as :func:`calibration.prediction_set` orders them)."""
    return int(min(posterior.items(), key=lambda kv: (-kv[1], kv[0]))[0])


def reliability_bins(conf: np.ndarray, hit: np.ndarray, n_bins: int = N_BINS) -> pd.DataFrame:
    """Equal-width bins of the top probability on [0, 1]: ``lo``, ``hi``, ``n``, ``mean_conf`` (mean top
    probability) and ``freq`` (share whose top K is right); empty bins have NaN means."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.clip(np.digitize(conf, edges[1:-1], right=True), 0, n_bins - 1)  # bin i holds (lo, hi], bin 0 [0, hi]
    rows = []
    for i in range(n_bins):
        sel = idx == i
        rows.append({"lo": edges[i], "hi": edges[i + 1], "n": int(sel.sum()),
                     "mean_conf": float(conf[sel].mean()) if sel.any() else np.nan,
                     "freq": float(hit[sel].mean()) if sel.any() else np.nan})
    return pd.DataFrame(rows)


def expected_calibration_error(conf: np.ndarray, hit: np.ndarray, n_bins: int = N_BINS) -> float:
    """ECE: the bins' |observed frequency - mean top probability|, weighted by their share of the tasks."""
    bins = reliability_bins(conf, hit, n_bins)
    full = bins[bins["n"] > 0]
    return float((full["n"] * (full["freq"] - full["mean_conf"]).abs()).sum() / max(1, len(conf)))


def wilson_interval(hits: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a proportion ``hits / n`` (NaNs for n = 0)."""
    if n == 0:
        return np.nan, np.nan
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(centre - half), float(centre + half)


def bootstrap_interval(values: list[np.ndarray], statistic, n_boot: int, seed: int = 0,
                       level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of ``statistic(*values)`` over ``n_boot`` resamples of the tasks (with replacement)."""
    n = len(values[0])
    if n == 0 or n_boot < 1:
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    stats = np.array([statistic(*(v[idx] for v in values))
                      for idx in (rng.integers(0, n, n) for _ in range(n_boot))])
    tail = (1.0 - level) / 2.0
    return float(np.quantile(stats, tail)), float(np.quantile(stats, 1.0 - tail))


@dataclass
class KCalibration:
    """CIN's posterior against the true K on one set of tasks (see :func:`k_calibration`)."""

    label: str
    tasks: pd.DataFrame  # name, k_true, k_top, p_top, p_true, set80_size, in_set80
    bins: pd.DataFrame  # reliability_bins
    ece: float
    ece_ci: tuple[float, float]
    accuracy: float
    accuracy_ci: tuple[float, float]
    mean_conf: float
    coverage: float  # of the ALPHA prediction set
    coverage_ci: tuple[float, float]
    set_size: float
    confusion: pd.DataFrame  # counts, true K rows x top K columns

    @property
    def n(self) -> int:
        return len(self.tasks)

    def confusion_normalised(self) -> pd.DataFrame:
        """Rows of :attr:`confusion` divided by their sums (a true K without tasks: a row of NaN)."""
        sums = self.confusion.sum(axis=1).replace(0, np.nan)
        return self.confusion.div(sums, axis=0)


def k_calibration(label: str, names: list[str], posteriors: list[dict[int, float]], k_true: list[int],
                  n_bins: int = N_BINS, n_boot: int = 2000, seed: int = 0) -> KCalibration:
    """Reliability of the posterior's top K, its confusion with the true K, and the coverage of the ``ALPHA``
    prediction set (:func:`calibration.prediction_set`, :func:`calibration.coverage_table`)."""
    if not posteriors or len(posteriors) != len(k_true) or len(names) != len(k_true):
        raise ValueError(f"{label}: need one name and true K per posterior, got {len(names)}, {len(posteriors)}, "
                         f"{len(k_true)}")
    k_top = np.array([posterior_mode(p) for p in posteriors])
    truth = np.asarray(k_true, dtype=np.int64)
    conf = np.array([max(p.values()) for p in posteriors])
    hit = (k_top == truth).astype(np.float64)
    sets = [calib.prediction_set(p, ALPHA) for p in posteriors]
    in_set = np.array([int(k) in s for s, k in zip(sets, truth)], dtype=np.float64)
    table = calib.coverage_table(posteriors, list(truth), alphas=(ALPHA,)).iloc[0]
    tasks = pd.DataFrame({"name": names, "k_true": truth, "k_top": k_top, "p_top": conf,
                          "p_true": [p.get(int(k), 0.0) for p, k in zip(posteriors, truth)],
                          "set80_size": [len(s) for s in sets], "in_set80": in_set.astype(bool)})
    ks = sorted(posteriors[0])
    rows = list(range(min(ks), max(max(ks), int(truth.max())) + 1))
    confusion = pd.crosstab(pd.Categorical(truth, rows), pd.Categorical(k_top, ks), dropna=False)
    confusion.index.name, confusion.columns.name = "true K", "top K"
    return KCalibration(
        label=label, tasks=tasks, bins=reliability_bins(conf, hit, n_bins),
        ece=expected_calibration_error(conf, hit, n_bins),
        ece_ci=bootstrap_interval([conf, hit], lambda c, h: expected_calibration_error(c, h, n_bins), n_boot, seed),
        accuracy=float(hit.mean()), accuracy_ci=bootstrap_interval([hit], np.mean, n_boot, seed),
        mean_conf=float(conf.mean()), coverage=float(table["coverage"]),
        coverage_ci=bootstrap_interval([in_set], np.mean, n_boot, seed), set_size=float(table["mean_set_size"]),
        confusion=confusion)


def held_out_posteriors(n_tasks: int, checkpoint: str | None, seed: int = 0) -> tuple[list, list, list]:
    """(names, posteriors, true K) of the first ``n_tasks`` reserved calibration datasets (prior GMMs, N 500-1000,
    D 2-64, K 2-10), the estimator's defaults (:func:`calibration.posterior_chunk`)."""
    got = calib.posterior_chunk(calib.calibration_seeds(n_tasks), checkpoint, seed)
    return [f"seed {s}" for s, _, _ in got], [p for _, _, p in got], [k for _, k, _ in got]


def table_posteriors(datasets: list[EvalDataset], estimator) -> tuple[list, list, list]:
    """(names, posteriors, true K) of labelled tables, each fitted by ``estimator``."""
    names, posteriors, k_true = [], [], []
    for ds in datasets:
        estimator.fit(ds.features)
        names.append(ds.name)
        posteriors.append({int(k): float(v) for k, v in estimator.k_posterior_.items()})
        k_true.append(int(ds.n_clusters))
    return names, posteriors, k_true


# ------------------------------------------------------------------------------------------------- figures
def _save(fig: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=_DPI, bbox_inches="tight")
    return path


def plot_calibration(panels: list[KCalibration], path: Path) -> Path:
    """Reliability curves side by side: bin mean top probability vs observed frequency, Wilson bars, counts."""
    fig = Figure(figsize=(5.2 * len(panels), 5.0), layout="constrained")
    for i, cal in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        ax.plot([0, 1], [0, 1], ls="--", color="0.5", lw=1, label="perfect calibration")
        full = cal.bins[cal.bins["n"] > 0]
        lo_hi = np.array([wilson_interval(f * n, n) for f, n in zip(full["freq"], full["n"])]).reshape(-1, 2)
        yerr = np.vstack([full["freq"] - lo_hi[:, 0], lo_hi[:, 1] - full["freq"]])
        ax.errorbar(full["mean_conf"], full["freq"], yerr=yerr, fmt="o-", color="tab:blue", capsize=3,
                    label="observed (95 % Wilson)")
        hist = ax.twinx()
        centres = (cal.bins["lo"] + cal.bins["hi"]) / 2
        hist.bar(centres, cal.bins["n"], width=0.9 / len(cal.bins), color="0.85", zorder=0)
        for x, n in zip(centres, cal.bins["n"]):
            if n:
                hist.text(x, n, str(int(n)), ha="center", va="bottom", fontsize=7, color="0.35")
        hist.set_ylim(0, max(1, cal.bins["n"].max()) * 4)  # the bars in the lowest quarter
        hist.set_yticks([])
        ax.set_zorder(hist.get_zorder() + 1)
        ax.patch.set_visible(False)
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("posterior's top probability max_K p(K | X)")
        if i == 0:
            ax.set_ylabel("share whose top K is the true K")
        ax.set_title(f"{cal.label} ({cal.n} tables)\nECE {cal.ece:.3f} [{cal.ece_ci[0]:.3f}, {cal.ece_ci[1]:.3f}], "
                     f"top-K right {cal.accuracy:.2f} at mean p {cal.mean_conf:.2f}", fontsize=9)
        ax.legend(loc="upper left", fontsize=7, frameon=False)
    fig.suptitle("CIN posterior over K: reliability of its top K (grey bars: tables per bin, numbered)", fontsize=10)
    return _save(fig, path)


def plot_confusion(panels: list[KCalibration], path: Path) -> Path:
    """Heat maps of the top K against the true K, rows normalised, counts annotated (empty rows left blank)."""
    fig = Figure(figsize=(5.6 * len(panels), 5.0), layout="constrained")
    for i, cal in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        share, counts = cal.confusion_normalised(), cal.confusion
        im = ax.imshow(np.ma.masked_invalid(share.to_numpy(float)), cmap="Blues", vmin=0, vmax=1, aspect="auto")
        for r, c in zip(*np.nonzero(counts.to_numpy())):
            v = share.iat[r, c]
            ax.text(c, r, str(int(counts.iat[r, c])), ha="center", va="center", fontsize=7,
                    color="white" if v > 0.55 else "black")
        ax.set_xticks(range(counts.shape[1]), [str(k) for k in counts.columns])
        ax.set_yticks(range(counts.shape[0]), [f"{k} (n={int(s)})" for k, s in counts.sum(axis=1).items()])
        ax.set_xlabel("posterior's top K")
        ax.set_ylabel("true K")
        ax.set_title(f"{cal.label} ({cal.n} tables): top K right on {cal.accuracy:.2f}", fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8, label="share of the row")
    fig.suptitle("CIN posterior over K: top K against the true K (row-normalised; numbers are tables)", fontsize=10)
    return _save(fig, path)


@dataclass
class RepresentationRow:
    """One table of the representation figure: 2-D PCA coordinates of each stage, true and predicted labels."""

    name: str
    detail: str
    y: np.ndarray
    labels: np.ndarray  # the estimator's clusters, renumbered to match y where they overlap (Hungarian)
    k_hat: int
    ari: float
    coords: dict[str, np.ndarray]  # "raw", "R", "head" -> (N, 2)
    explained: dict[str, float]  # share of variance in the 2 components
    silhouette: dict[str, float]  # of the true clusters in each stage's full space (Euclidean)


def match_labels(y: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``labels`` renumbered so that each predicted cluster matched to a true one (most rows in common) takes its
    number; the others take numbers after the true clusters'."""
    t, p = np.unique(y, return_inverse=True), np.unique(labels, return_inverse=True)
    overlap = np.zeros((len(t[0]), len(p[0])), np.int64)
    np.add.at(overlap, (t[1], p[1]), 1)
    rows, cols = linear_sum_assignment(-overlap)
    new = dict(zip(cols, rows))
    extra = iter(range(len(t[0]), len(t[0]) + len(p[0])))
    mapping = np.array([new[j] if j in new else next(extra) for j in range(len(p[0]))])
    return mapping[p[1]]


def _pca2(Z: np.ndarray) -> tuple[np.ndarray, float]:
    pca = PCA(n_components=2, random_state=0)
    out = pca.fit_transform(np.asarray(Z, np.float64))
    return out, float(pca.explained_variance_ratio_.sum())


def representation_row(ds: EvalDataset, estimator, net) -> RepresentationRow:
    """Fit ``estimator`` on one table and read the encoder (the table in its own column order: the first of the
    estimator's orderings) and the cosine head at the true K."""
    estimator.fit(ds.features)
    Z, cat_mask = estimator.preprocessor_.transform(ds.features)
    stages = table_stages(net, Z, cat_mask, ds.n_clusters)
    coords, explained, silhouette = {}, {}, {}
    for key, M in (("raw", ds.baseline_matrix()), ("R", stages["R"]), ("head", stages.get("head"))):
        if M is None:
            continue
        silhouette[key] = float(silhouette_score(M, ds.y)) if 2 <= ds.n_clusters < len(ds.y) else np.nan
        if M.shape[1] >= 2:
            coords[key], explained[key] = _pca2(M)
    n, d = ds.features.shape
    return RepresentationRow(name=ds.name, detail=f"N={n}, D={d}, K={ds.n_clusters}", y=ds.y,
                             labels=match_labels(ds.y, estimator.labels_), k_hat=int(estimator.n_clusters_),
                             ari=float(adjusted_rand_score(ds.y, estimator.labels_)), coords=coords,
                             explained=explained, silhouette=silhouette)


def _colours(labels: np.ndarray) -> np.ndarray:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if labels.max() < 10 else "tab20"]
    return cmap(labels % cmap.N)


def plot_representations(rows: list[RepresentationRow], path: Path) -> Path:
    """One row per table: raw features (true), encoder R (true), encoder R (predicted), cosine-head space (true)."""
    columns = (("raw", "y", "raw features"), ("R", "y", "encoder R"), ("R", "labels", "encoder R"),
               ("head", "y", "cosine-head space"))
    fig = Figure(figsize=(3.3 * len(columns), 3.1 * len(rows)))
    for r, row in enumerate(rows):
        for c, (key, colour, title) in enumerate(columns):
            ax = fig.add_subplot(len(rows), len(columns), r * len(columns) + c + 1)
            ax.set_xticks([])
            ax.set_yticks([])
            if key not in row.coords:
                ax.text(0.5, 0.5, "one column: no 2-D PCA", ha="center", va="center", fontsize=8,
                        transform=ax.transAxes)
                continue
            xy = row.coords[key]
            labels = getattr(row, colour)
            ax.scatter(xy[:, 0], xy[:, 1], c=_colours(labels), s=6, linewidths=0, alpha=0.8)
            who = "true clusters" if colour == "y" else f"predicted, K^={row.k_hat}, ARI {row.ari:.2f}"
            ax.set_title(f"{title} ({row.explained[key]:.0%} var.)\n{who}", fontsize=8)
            if c == 0:
                ax.set_ylabel(f"{row.name}\n{row.detail}", fontsize=8)
    fig.suptitle("Row representations, PCA to 2-D (colours: true clusters; predicted ones matched to them)",
                 fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


# ------------------------------------------------------------------------------------------------ the report
def representation_tables(n_prior: int, bench_dir: str | None, dev_names: list[str]) -> list[EvalDataset]:
    """The first ``n_prior`` held-out amortized-regime tasks (2-D) with K in ``REP_PRIOR_K``, then ``dev_names``."""
    from pipeline.evaluation.suites import amortized_suite

    prior = [ds for ds in amortized_suite() if REP_PRIOR_K[0] <= ds.n_clusters <= REP_PRIOR_K[1]][:n_prior]
    return prior + (dev_suite(bench_dir, dev_names) if dev_names else [])


def _fmt_ci(v: float, ci: tuple[float, float]) -> str:
    return f"{v:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def write_markdown(path: Path, command: str, provenance: list[str], checkpoint_name: str, sha: str,
                   panels: list[KCalibration], reps: list[RepresentationRow], n_boot: int, seconds: float) -> Path:
    lines = [
        "# Figures: CIN's posterior over K, and the row representations",
        "",
        f"Command: `{command}`  ",
        f"Checkpoint: `{checkpoint_name}`, weights sha256 `{sha[:12]}`  ",
        *(f"{line}  " for line in provenance),
        f"Wall time: {seconds / 60:.1f} min.",
        "",
        "Estimator: `model.estimator.TabClustPFN` with its defaults (4 column orderings, k-means refinement,",
        "K by expected ARI); the posterior scored is `k_posterior_` (the orderings' average), its top K the most",
        "probable K. The estimator's own K (`n_clusters_`) is chosen by expected ARI, not as this top K.",
        "",
        "## CIN's posterior against the true K",
        "",
        f"Held-out prior tasks: the first {panels[0].n} reserved calibration seeds (`EVAL_SEED_BASE +",
        "CALIBRATION_SEED_OFFSET + i`, `pipeline.evaluation.calibration.calibration_seeds`; the default GMM prior,",
        "N 500-1000, D 2-64, K 2-10), never drawn in pretraining. Development tables: the labelled tables of",
        "`dev_suite()` (true K = the number of classes).",
        "",
        f"ECE: expected calibration error of the top probability, {N_BINS} equal bins on [0, 1]; intervals: 95 %",
        f"percentile bootstrap over the tables ({n_boot} resamples; ECE is biased upward on few tables per bin,",
        "more so on resamples, so its interval sits mostly above the estimate). Coverage: share of tables whose",
        f"true K lies in the smallest set of K holding {ALPHA:.0%} of the posterior",
        "(`pipeline.evaluation.calibration.prediction_set`).",
        "",
        "| tables | n | ECE [95 % CI] | top-K accuracy [95 % CI] | mean top probability | "
        f"{ALPHA:.0%}-set coverage [95 % CI] | mean {ALPHA:.0%}-set size |",
        "|---|---|---|---|---|---|---|",
    ]
    for cal in panels:
        lines.append(f"| {cal.label} | {cal.n} | {_fmt_ci(cal.ece, cal.ece_ci)} | "
                     f"{_fmt_ci(cal.accuracy, cal.accuracy_ci)} | {cal.mean_conf:.3f} | "
                     f"{_fmt_ci(cal.coverage, cal.coverage_ci)} | {cal.set_size:.2f} |")
    lines += ["", "![reliability](cin-calibration.png)", "", _calibration_reading(panels), "",
              "![confusion](cin-confusion.png)", "", _confusion_reading(panels), "",
              "## Row representations", "", "![representations](representations.png)", "",
              _representation_reading(reps), "",
              "| table | N, D, K | K chosen | ARI | true clusters' silhouette: raw / R / head | "
              "PCA variance: raw / R / head |", "|---|---|---|---|---|---|"]
    for row in reps:
        var = " / ".join(f"{row.explained[k]:.0%}" if k in row.explained else "-" for k in ("raw", "R", "head"))
        sil = " / ".join(f"{row.silhouette[k]:.2f}" if k in row.silhouette else "-" for k in ("raw", "R", "head"))
        lines.append(f"| {row.name} | {row.detail} | {row.k_hat} | {row.ari:.2f} | {sil} | {var} |")
    lines += ["", "Per-table posteriors: `cin-posteriors.csv`.", ""]
    path.write_text("\n".join(lines))
    return path


def _calibration_reading(panels: list[KCalibration]) -> str:
    parts = []
    for cal in panels:
        gap = cal.accuracy - cal.mean_conf
        verdict = ("close to the diagonal" if abs(gap) < 0.05 else
                   "overconfident (below the diagonal)" if gap < 0 else "underconfident (above the diagonal)")
        parts.append(f"On the {cal.label.lower()} the top K is right on {cal.accuracy:.2f} of the tables at a mean "
                     f"top probability of {cal.mean_conf:.2f}: {verdict}, ECE {cal.ece:.3f}; the {ALPHA:.0%} set "
                     f"holds the true K on {cal.coverage:.2f}.")
    return "**Reliability.** Each point is a bin of tables by the posterior's top probability; on the diagonal, " \
           "a top K given probability p is right on a share p of the tables. " + " ".join(parts)


def _confusion_reading(panels: list[KCalibration]) -> str:
    parts = []
    for cal in panels:
        t = cal.tasks
        under, over = float((t["k_top"] < t["k_true"]).mean()), float((t["k_top"] > t["k_true"]).mean())
        wrong = t[t["k_top"] != t["k_true"]]
        common = wrong["k_top"].value_counts()
        worst = (f"; the most frequent wrong top K is {int(common.index[0])} ({int(common.iloc[0])} of "
                 f"{len(wrong)} errors)") if len(wrong) else ""
        parts.append(f"{cal.label}: top K below the true K on {under:.2f} of the tables, above on {over:.2f}"
                     f"{worst}.")
    return "**Confusion.** Rows are the true K, columns the posterior's top K, shaded by the row's share. " + \
        " ".join(parts)


def _representation_reading(reps: list[RepresentationRow]) -> str:
    gain = [r.silhouette.get("R", np.nan) - r.silhouette.get("raw", np.nan) for r in reps]
    better, worse = sum(g > 0.02 for g in gain), sum(g < -0.02 for g in gain)
    return ("**Representations.** Each row is one table: PCA of the raw features (one-hot categoricals), of the "
            "encoder's row representations R (for the table in its own column order) coloured by the true "
            "clusters and by the estimator's clusters (matched to the true ones, so equal colours are matched "
            "clusters), and of the rows in the cosine head's space (R through the head's MLP, L2-normalised: what "
            "the prototypes are compared with). Where R separates the true clusters better than the raw "
            "features, the encoder has made them easier to find; where the true colours mix in R, no decoder "
            "can recover them. The table below gives the true clusters' silhouette in each stage's full space "
            f"(not the PCA): R separates them better than the raw features (by > 0.02) on {better} of "
            f"{len(reps)} tables, worse on {worse}. Tables: "
            + ", ".join(f"{r.name} ({r.detail}, K chosen {r.k_hat}, ARI {r.ari:.2f})" for r in reps) + ".")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tasks", type=int, default=DEFAULT_TASKS, help="held-out calibration tasks (%(default)s)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--checkpoint", default=None, help="default: the shipped model/weights/tabclustpfn-small.pt")
    p.add_argument("--benchmarks-dir", default=None, help="the benchmarks folder holding dev/ (default: "
                   "<repo>/../shared/benchmarks)")
    p.add_argument("--dev-names", nargs="*", default=None, help="only these dev tables (default: all)")
    p.add_argument("--rep-dev", nargs="*", default=list(REP_DEV_TABLES), help="dev tables of the representation "
                   "figure (%(default)s)")
    p.add_argument("--rep-prior", type=int, default=REP_PRIOR_TABLES, help="held-out 2-D prior tasks of the "
                   "representation figure (%(default)s)")
    p.add_argument("--bootstrap", type=int, default=2000)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return _run(args, argv)
    finally:
        torch.set_num_threads(threads)  # run in-process by the tests: leave the caller's setting as it was


def _run(args: argparse.Namespace, argv: list[str] | None) -> int:
    start = time.perf_counter()
    from model.checkpoint import load_checkpoint, read_checkpoint
    from model.estimator import default_checkpoint_path
    from pipeline.batch_cluster import load_estimator
    from pipeline.evaluation.report import provenance_lines

    if args.tasks < 1:
        print(f"error: --tasks must be at least 1, got {args.tasks}", file=sys.stderr)
        return 1
    try:  # the tables first: a wrong folder or name fails now, not after the held-out tasks' minutes
        dev = dev_suite(args.benchmarks_dir, args.dev_names)
        rep_tables = representation_tables(args.rep_prior, args.benchmarks_dir, list(args.rep_dev))
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    ckpt_path = Path(args.checkpoint) if args.checkpoint else default_checkpoint_path()
    sha = read_checkpoint(ckpt_path)["sha256"]
    estimator = load_estimator(args.checkpoint, None, 0, "expected_ari")  # runs the network on every table

    logger.info("held-out prior tasks: %d", args.tasks)
    held = k_calibration("Held-out prior tasks", *held_out_posteriors(args.tasks, args.checkpoint),
                         n_boot=args.bootstrap)
    logger.info("dev tables: %d", len(dev))
    dev_cal = k_calibration("Development tables", *table_posteriors(dev, estimator), n_boot=args.bootstrap)
    panels = [held, dev_cal]

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    plot_calibration(panels, out / "cin-calibration.png")
    plot_confusion(panels, out / "cin-confusion.png")
    pd.concat([c.tasks.assign(tables=c.label) for c in panels]).to_csv(out / "cin-posteriors.csv", index=False,
                                                                       float_format="%.5g")

    logger.info("representations")
    net = load_checkpoint(ckpt_path)[0]
    reps = [representation_row(ds, estimator, net) for ds in rep_tables]
    plot_representations(reps, out / "representations.png")

    command = "PYTHONPATH=. .venv/bin/python benchmarks/figures.py" + (
        " " + shlex.join(argv if argv is not None else sys.argv[1:]) if (argv or sys.argv[1:]) else "")
    write_markdown(out / "figures.md", command, provenance_lines(ckpt_path), ckpt_path.name, sha, panels, reps,
                   args.bootstrap, time.perf_counter() - start)
    for cal in panels:
        print(f"{cal.label}: n={cal.n} ECE {_fmt_ci(cal.ece, cal.ece_ci)} "
              f"top-K {_fmt_ci(cal.accuracy, cal.accuracy_ci)} mean p {cal.mean_conf:.3f} "
              f"{ALPHA:.0%}-set coverage {_fmt_ci(cal.coverage, cal.coverage_ci)}")
    print(f"wrote {out} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
