"""Out-of-distribution curves: ARI and seconds per table against N and against D, TabClustPFN beside KMeans+.

    PYTHONPATH=. .venv/bin/python benchmarks/ood_curves.py --out docs/results

Prior tasks (``priors.sample_dataset``, GMM mechanism by default) at a fixed K are drawn for every N of
``--n-values`` at ``--d-fixed`` features and for every D of ``--d-values`` at ``--n-fixed`` rows, from seeds far
from the training streams (small seeds), the validation stream (2**62 + i) and the evaluation suites
(``EVAL_SEED_BASE + offset`` with offsets below 10**7): task i of the cell (N, D) has seed
``OOD_SEED_BASE + 1000 * (100_000 * D + N) + i``. Both methods infer K:

* **TabClustPFN**: the shipped estimator ``model.estimator.TabClustPFN`` with its defaults (K by its
  ``k_selection`` rule; past ``n_context`` rows it clusters a random context of ``n_context`` rows and assigns the
  rest; past the checkpoint's ``max_features`` columns its preprocessing projects onto principal components; the
  settings are printed in the output header). It gets ``prior_frame`` of the task, as ``jobs/evaluate.py`` does.
* **KMeans+**: ``pipeline.evaluation.methods``' definition, k-means (scikit-learn defaults, ``random_state``
  = the task's seed index) for K = 2..10, keeping the best silhouette. Up to ``--silhouette-rows`` rows this
  calls ``silhouette_select`` itself; on larger tables the full silhouette (quadratic in N) is replaced by the
  silhouette of a fixed random sample of ``--silhouette-rows`` rows (the same sample for every K), which the
  output header states.

With ``--true-k`` (default on) each method is also run at the true K (``TabClustPFN*``, ``KMeans*``).
Per cell and method: the median ARI with a percentile-bootstrap 95 % interval over tasks (``--bootstrap``
resamples, seed 0), the median seconds per table (the method's own fit; model loading excluded, the table
already built), the median chosen K and the share of tasks with K right, and, for TabClustPFN (TabClustPFN*),
the paired win rate over KMeans+ (KMeans*): the share of tasks with a strictly higher ARI, ties counted apart,
and the median paired ARI difference with its bootstrap interval.

Writes ``ood-curves.csv`` (per cell and method), ``ood-curves-tasks.csv`` (per task and method),
``ood-curves.md`` and the figures ``ood-curves-n.png`` and ``ood-curves-d.png`` under ``--out``.
``--from-tasks FILE`` rewrites them from a per-task file without clustering again.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import sys
import time
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pipeline.evaluation.methods import SILHOUETTE_K_RANGE, silhouette_select, sklearn_estimator  # noqa: E402
from pipeline.evaluation.suites import EVAL_SEED_BASE, fixed_size_config, prior_frame  # noqa: E402

OOD_SEED_BASE = EVAL_SEED_BASE + 10**10  # evaluation suites use EVAL_SEED_BASE + offsets below 10**7
N_VALUES = (100, 300, 1000, 3000, 10000, 20000)
D_VALUES = (2, 4, 8, 16, 32, 64, 96, 128, 256)
N_BOOT = 2000
PFN, PFN_TRUE, KM, KM_TRUE = "TabClustPFN", "TabClustPFN*", "KMeans+", "KMeans*"
METHODS = (PFN, KM, PFN_TRUE, KM_TRUE)
COLORS = {PFN: "tab:blue", KM: "tab:orange"}
TASK_COLUMNS = ("axis", "n_rows", "n_features", "k_true", "task", "seed", "method", "ari", "k_pred", "seconds",
                "cpu_seconds", "d_model")
CELL_COLUMNS = ("axis", "n_rows", "n_features", "k_true", "method", "n_tasks", "ari", "ari_lo", "ari_hi",
                "seconds", "seconds_lo", "seconds_hi", "cpu_seconds", "cpu_seconds_lo", "cpu_seconds_hi",
                "k_pred_median", "k_acc", "d_model_median",
                "paired_with", "win_rate", "tie_rate", "ari_diff", "ari_diff_lo",
                "ari_diff_hi")


def task_seed(n: int, d: int, i: int) -> int:
    """Seed of task ``i`` (< 1000) of the cell (N, D); distinct for every N < 100_000."""
    return OOD_SEED_BASE + 1000 * (100_000 * d + n) + i


def draw_task(n: int, d: int, k: int, i: int, kind: str):
    from priors import sample_dataset

    return sample_dataset(task_seed(n, d, i), kind=kind, config=fixed_size_config(kind, n, d, 0, k))


def grid(n_values, d_values, n_fixed: int, d_fixed: int) -> list[tuple[str, int, int]]:
    """(axis, N, D) cells: every N at ``d_fixed`` (axis "N"), then every D at ``n_fixed`` (axis "D")."""
    return [("N", int(n), d_fixed) for n in n_values] + [("D", n_fixed, int(d)) for d in d_values]


def tasks_per_cell(n: int, tasks: int, tasks_large: int, large_from: int) -> int:
    return tasks_large if n >= large_from else tasks


def kmeans_plus(X: np.ndarray, seed: int, silhouette_rows: int) -> tuple[np.ndarray, int]:
    """KMeans+ as the evaluation defines it; the silhouette on a fixed ``silhouette_rows``-row sample above that."""
    if X.shape[0] <= silhouette_rows:
        return silhouette_select("KMeans", X, seed)
    from sklearn.metrics import silhouette_score

    best = None
    for k in SILHOUETTE_K_RANGE:
        labels = np.asarray(sklearn_estimator("KMeans", k, seed).fit_predict(X))
        if len(np.unique(labels)) < 2:
            continue
        score = float(silhouette_score(X, labels, sample_size=silhouette_rows, random_state=seed))
        if best is None or score > best[0]:  # ties go to the smaller K, as silhouette_select
            best = (score, labels, k)
    if best is None:
        raise ValueError("KMeans+: no K gave two or more clusters")
    return best[1], best[2]


def run_cell(est, axis: str, n: int, d: int, k: int, count: int, kind: str, silhouette_rows: int,
             true_k: bool) -> list[dict]:
    """Cluster ``count`` tasks of the cell with every method; one row per task and method."""
    from sklearn.metrics import adjusted_rand_score

    rows = []
    for i in range(count):
        ds = draw_task(n, d, k, i, kind)
        frame = prior_frame(np.asarray(ds.X), ds.categorical)
        X = frame.to_numpy(dtype=np.float64)  # GMM tasks are all numeric: the baselines' matrix
        y = np.asarray(ds.y)
        base = {"axis": axis, "n_rows": n, "n_features": d, "k_true": int(ds.n_clusters), "task": i,
                "seed": task_seed(n, d, i)}
        runs = [(PFN, None), (KM, None)] + ([(PFN_TRUE, int(ds.n_clusters)), (KM_TRUE, int(ds.n_clusters))]
                                            if true_k else [])
        for method, k_given in runs:
            start, cpu = time.perf_counter(), time.process_time()
            d_model = np.nan
            if method in (PFN, PFN_TRUE):
                est.set_params(n_clusters=k_given).fit(frame)
                seconds = time.perf_counter() - start
                labels, k_pred = np.asarray(est.labels_), int(est.n_clusters_)
                comps = est.preprocessor_.components_
                d_model = float(len(est.preprocessor_.columns_) if comps is None else comps.shape[1])
            elif method == KM:
                labels, k_pred = kmeans_plus(X, i, silhouette_rows)
                seconds = time.perf_counter() - start
            else:
                labels = np.asarray(sklearn_estimator("KMeans", k_given, i).fit_predict(X))
                seconds = time.perf_counter() - start
                k_pred = int(len(np.unique(labels)))
            cpu_seconds = time.process_time() - cpu
            rows.append({**base, "method": method, "ari": float(adjusted_rand_score(y, labels)),
                         "k_pred": k_pred, "seconds": seconds, "cpu_seconds": cpu_seconds, "d_model": d_model})
    return rows


def bootstrap_ci(values, n_boot: int = N_BOOT, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap 95 % interval of the median of ``values`` (NaN dropped)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return np.nan, np.nan
    idx = np.random.default_rng(seed).integers(0, len(values), size=(n_boot, len(values)))
    boots = np.median(values[idx], axis=1)
    return float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))


def summarise(tasks: pd.DataFrame, n_boot: int = N_BOOT) -> pd.DataFrame:
    """One row per cell and method of the per-task table ``tasks``."""
    out = []
    for (axis, n, d), cell in tasks.groupby(["axis", "n_rows", "n_features"], sort=False):
        wide = cell.pivot(index="task", columns="method", values="ari")
        for method in [m for m in METHODS if m in set(cell["method"])]:
            sub = cell[cell["method"] == method]
            ari, sec = sub["ari"].to_numpy(float), sub["seconds"].to_numpy(float)
            row = {"axis": axis, "n_rows": int(n), "n_features": int(d), "k_true": int(sub["k_true"].median()),
                   "method": method, "n_tasks": len(sub), "ari": float(np.median(ari)),
                   "seconds": float(np.median(sec)), "k_pred_median": float(sub["k_pred"].median()),
                   "k_acc": float((sub["k_pred"] == sub["k_true"]).mean()),
                   "d_model_median": float(sub["d_model"].median()) if sub["d_model"].notna().any() else np.nan}
            row["ari_lo"], row["ari_hi"] = bootstrap_ci(ari, n_boot)
            row["seconds_lo"], row["seconds_hi"] = bootstrap_ci(sec, n_boot)
            cpu = sub["cpu_seconds"].to_numpy(float) if "cpu_seconds" in sub else np.full(len(sub), np.nan)
            row["cpu_seconds"] = float(np.median(cpu)) if np.isfinite(cpu).any() else np.nan
            row["cpu_seconds_lo"], row["cpu_seconds_hi"] = bootstrap_ci(cpu, n_boot)
            ref = {PFN: KM, PFN_TRUE: KM_TRUE}.get(method)
            if ref is not None and ref in wide.columns:
                pair = wide[[method, ref]].dropna()
                diff = (pair[method] - pair[ref]).to_numpy(float)
                row["paired_with"] = ref
                row["win_rate"] = float((diff > 0).mean())
                row["tie_rate"] = float((diff == 0).mean())
                row["ari_diff"] = float(np.median(diff))
                row["ari_diff_lo"], row["ari_diff_hi"] = bootstrap_ci(diff, n_boot)
            out.append(row)
    return pd.DataFrame(out).reindex(columns=list(CELL_COLUMNS))


# ---------------------------------------------------------------------------------------------- outputs
def _iv(row, col: str, digits: int = 3) -> str:
    return f"{row[col]:.{digits}f} [{row[col + '_lo']:.{digits}f}, {row[col + '_hi']:.{digits}f}]"


def markdown_table(summary: pd.DataFrame, axis: str) -> list[str]:
    part = summary[summary["axis"] == axis]
    lines = ["| N | D | tasks | TabClustPFN ARI | KMeans+ ARI | win rate (ties) | TabClustPFN - KMeans+ | "
             "TabClustPFN K / k-Acc | KMeans+ K / k-Acc | CPU s/table TabClustPFN | CPU s/table KMeans+ | "
             "wall s/table TabClustPFN | wall s/table KMeans+ | "
             "D seen by the network | TabClustPFN* ARI | KMeans* ARI |",
             "|" + "---|" * 16]
    for (n, d), cell in part.groupby(["n_rows", "n_features"], sort=False):
        m = cell.set_index("method")
        p, k = m.loc[PFN], m.loc[KM]
        star = (lambda name: _iv(m.loc[name], "ari") if name in m.index else "-")
        lines.append(
            f"| {n} | {d} | {int(p['n_tasks'])} | {_iv(p, 'ari')} | {_iv(k, 'ari')} | "
            f"{p['win_rate']:.2f} ({p['tie_rate']:.2f}) | "
            f"{p['ari_diff']:+.3f} [{p['ari_diff_lo']:+.3f}, {p['ari_diff_hi']:+.3f}] | "
            f"{p['k_pred_median']:g} / {p['k_acc']:.2f} | {k['k_pred_median']:g} / {k['k_acc']:.2f} | "
            f"{p['cpu_seconds']:.3f} | {k['cpu_seconds']:.3f} | "
            f"{p['seconds']:.3f} | {k['seconds']:.3f} | {p['d_model_median']:g} | {star(PFN_TRUE)} | "
            f"{star(KM_TRUE)} |")
    return lines


def plot_axis(summary: pd.DataFrame, axis: str, path: Path, marker: float, marker_label: str,
              train_range: tuple[float, float] | None, fixed_label: str,
              km_marker: float | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    col = "n_rows" if axis == "N" else "n_features"
    part = summary[summary["axis"] == axis]
    fig, (ax_ari, ax_sec) = plt.subplots(1, 2, figsize=(11, 4.2))
    for method, star in ((PFN, PFN_TRUE), (KM, KM_TRUE)):
        sub = part[part["method"] == method].sort_values(col)
        x = sub[col].to_numpy(float)
        ax_ari.plot(x, sub["ari"], "o-", color=COLORS[method], label=f"{method} (K inferred)")
        ax_ari.fill_between(x, sub["ari_lo"], sub["ari_hi"], color=COLORS[method], alpha=0.2)
        st = part[part["method"] == star].sort_values(col)
        if len(st):
            ax_ari.plot(st[col], st["ari"], "s--", color=COLORS[method], alpha=0.6, ms=4,
                        label=f"{star} (true K)")
        if sub["cpu_seconds"].notna().all():
            ax_sec.plot(x, sub["cpu_seconds"], "o-", color=COLORS[method], label=f"{method}, CPU time")
            ax_sec.fill_between(x, sub["cpu_seconds_lo"], sub["cpu_seconds_hi"], color=COLORS[method], alpha=0.2)
            ax_sec.plot(x, sub["seconds"], ":", color=COLORS[method], label=f"{method}, wall clock")
        else:
            ax_sec.plot(x, sub["seconds"], "o-", color=COLORS[method], label=f"{method}, wall clock")
            ax_sec.fill_between(x, sub["seconds_lo"], sub["seconds_hi"], color=COLORS[method], alpha=0.2)
    for ax in (ax_ari, ax_sec):
        ax.set_xscale("log", base=10 if axis == "N" else 2)
        ax.axvline(marker, color="k", ls=":", lw=1.2, label=marker_label)
        if km_marker is not None and part[col].max() > km_marker:
            ax.axvline(km_marker, color=COLORS[KM], ls="-.", lw=1.0,
                       label=f"KMeans+ silhouette on a {int(km_marker)}-row sample past here")
        if train_range is not None:
            ax.axvspan(*train_range, color="0.85", zorder=0,
                       label=f"training range ({axis} {train_range[0]}-{train_range[1]})")
        ax.set_xlabel(("N (rows)" if axis == "N" else "D (features)") + f", {fixed_label}")
        ax.grid(alpha=0.3, which="both")
    if axis == "D":
        ticks = sorted(part[col].unique())
        for ax in (ax_ari, ax_sec):
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(int(t)) for t in ticks], fontsize=8, rotation=45)
    ax_ari.set_ylabel("median ARI (band: bootstrap 95 % interval)")
    ax_ari.set_ylim(-0.02, 1.02)
    ax_sec.set_yscale("log")
    ax_sec.set_ylabel("median s per table (log; band: 95 % int.)")
    ax_ari.legend(fontsize=7, loc="best")
    ax_sec.legend(fontsize=7, loc="upper left")
    n_tasks = part.groupby(col)["n_tasks"].max()
    counts = (f"{int(n_tasks.min())}" if n_tasks.min() == n_tasks.max()
              else f"{int(n_tasks.min())}-{int(n_tasks.max())}")
    fig.suptitle(f"Prior tasks, K = {int(part['k_true'].median())}: ARI and time against {axis} "
                 f"({counts} tasks per point)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_outputs(tasks: pd.DataFrame, out: Path, header: list[str], n_boot: int, settings: dict) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(tasks, n_boot)
    paths = [out / "ood-curves.csv", out / "ood-curves-tasks.csv", out / "ood-curves.md"]
    summary.to_csv(paths[0], index=False, float_format="%.6g")
    tasks.reindex(columns=list(TASK_COLUMNS)).to_csv(paths[1], index=False, float_format="%.6g")
    n_ctx, max_feat = settings["n_context"], settings["max_features"]
    d_fixed = int(tasks.loc[tasks["axis"] == "N", "n_features"].iloc[0]) if (tasks["axis"] == "N").any() else None
    n_fixed = int(tasks.loc[tasks["axis"] == "D", "n_rows"].iloc[0]) if (tasks["axis"] == "D").any() else None
    lines = ["# Out-of-distribution curves: ARI and seconds per table against N and D", ""] + header + [
        "",
        "Figures: median over tasks [percentile-bootstrap 95 % interval of the median, "
        f"{n_boot} resamples, seed 0]. Win rate: share of tasks where TabClustPFN's ARI is strictly higher than "
        "KMeans+'s on the same task (ties in brackets); the paired difference is the median of TabClustPFN - "
        "KMeans+ over tasks with its bootstrap interval. K: median chosen K / share of tasks with K right. "
        "'D seen by the network': columns after preprocessing (principal components kept past "
        f"{max_feat} features). Seconds: the method's own fit on one table, model loading excluded, as the CPU "
        "time of the process (`time.process_time`, one thread: what the fit costs) and the wall clock "
        "(`time.perf_counter`, inflated by the other jobs on the machine by a varying factor). The tasks differ "
        "from cell to cell, so the medians move with the draw; the paired columns compare the two methods on the "
        "same tasks.", ""]
    if d_fixed is not None:
        lines += [f"## Against N (D = {d_fixed}; context subsampling past N = {n_ctx})", "",
                  *markdown_table(summary, "N"), "", "![ARI and seconds against N](ood-curves-n.png)", ""]
        plot_axis(summary, "N", out / "ood-curves-n.png", n_ctx, f"context subsampling (N > {n_ctx})",
                  settings.get("train_n"), f"D = {d_fixed}", settings.get("silhouette_rows"))
        paths.append(out / "ood-curves-n.png")
    if n_fixed is not None:
        lines += [f"## Against D (N = {n_fixed}; PCA past D = {max_feat})", "",
                  *markdown_table(summary, "D"), "", "![ARI and seconds against D](ood-curves-d.png)", ""]
        plot_axis(summary, "D", out / "ood-curves-d.png", max_feat, f"PCA (D > {max_feat})",
                  settings.get("train_d"), f"N = {n_fixed}")
        paths.append(out / "ood-curves-d.png")
    paths[2].write_text("\n".join(lines) + "\n")
    return paths


def _read_tasks(parser: argparse.ArgumentParser, args: argparse.Namespace) -> pd.DataFrame:
    """The per-task file of ``--from-tasks``; sets ``args.tasks``, ``args.tasks_large``, ``args.k`` and
    ``args.true_k`` to the file's, so that the header states the rendered run, not this call's defaults."""
    path = Path(args.from_tasks)
    if not path.is_file():
        parser.error(f"--from-tasks {path}: no such file")
    tasks = pd.read_csv(path)
    needed = {"axis", "n_rows", "n_features", "k_true", "task", "method", "ari", "k_pred", "seconds"}
    if tasks.empty or not needed <= set(tasks.columns):
        parser.error(f"--from-tasks {path}: not a per-task file of this script (columns {sorted(needed)})")
    counts = tasks.drop_duplicates(["axis", "n_rows", "n_features", "task"]).groupby(
        ["axis", "n_rows", "n_features"]).size()
    large = counts.index.get_level_values("n_rows") >= args.large_from
    small_n, large_n = set(counts[~large]), set(counts[large])
    if len(small_n) > 1 or len(large_n) > 1 or tasks["k_true"].nunique() > 1:
        parser.error(f"--from-tasks {path}: tasks per cell {sorted(small_n)} below N = {args.large_from} and "
                     f"{sorted(large_n)} from it, K {sorted(tasks['k_true'].unique())}; pass the run's --large-from")
    args.tasks = int(next(iter(small_n or large_n)))
    args.tasks_large = int(next(iter(large_n))) if large_n else args.tasks
    args.k = int(tasks["k_true"].iloc[0])
    args.true_k = bool({PFN_TRUE, KM_TRUE} & set(tasks["method"]))
    return tasks


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="docs/results", help="output folder (default: %(default)s)")
    p.add_argument("--checkpoint", default=None, help="default: the shipped checkpoint")
    p.add_argument("--kind", choices=["gmm", "zeus"], default="gmm")
    p.add_argument("--k", type=int, default=4, help="clusters of every task (default: %(default)s)")
    p.add_argument("--n-values", type=int, nargs="+", default=list(N_VALUES))
    p.add_argument("--d-values", type=int, nargs="+", default=list(D_VALUES))
    p.add_argument("--n-fixed", type=int, default=500)
    p.add_argument("--d-fixed", type=int, default=8)
    p.add_argument("--tasks", type=int, default=30, help="tasks per cell (default: %(default)s)")
    p.add_argument("--tasks-large", type=int, default=None,
                   help="tasks per cell from --large-from rows on (default: --tasks)")
    p.add_argument("--large-from", type=int, default=10000)
    p.add_argument("--silhouette-rows", type=int, default=3000,
                   help="KMeans+ uses the full silhouette up to this many rows, a fixed sample of them above")
    p.add_argument("--no-true-k", dest="true_k", action="store_false", help="skip TabClustPFN* and KMeans*")
    p.add_argument("--bootstrap", type=int, default=N_BOOT)
    p.add_argument("--date", default=time.strftime("%Y-%m-%d"))
    p.add_argument("--machine-note", default=None, help="the machine, e.g. '2 shared CPU cores'")
    p.add_argument("--from-tasks", default=None, help="rewrite the outputs from this per-task CSV")
    p.add_argument("--partial", default=None,
                   help="also write the per-task rows here after every cell (to render an interrupted run)")
    p.add_argument("--resume", default=None,
                   help="per-task CSV of an earlier run (e.g. its --partial): a cell whose first tasks it holds for "
                        "every method run is taken from it instead of clustered again (same seeds, same settings)")
    p.add_argument("--command", default=None, help="the command line written in the report (default: argv)")
    args = p.parse_args(argv)
    if args.bootstrap < 1:
        p.error(f"--bootstrap must be at least 1, got {args.bootstrap}")
    from_tasks = None
    if args.from_tasks:
        from_tasks = _read_tasks(p, args)

    import torch

    from model.checkpoint import load_checkpoint, weights_sha256
    from model.estimator import TabClustPFN, default_checkpoint_path

    torch.set_num_threads(1)
    ckpt = Path(args.checkpoint) if args.checkpoint else default_checkpoint_path()
    net, _ = load_checkpoint(ckpt)
    sha_w, sha_f = weights_sha256(net.state_dict()), file_sha256(ckpt)
    est = TabClustPFN(checkpoint=str(ckpt), device="cpu", random_state=0)
    if not args.from_tasks:
        for shape in ((32, 2), (300, 8)):  # loads the network (and warms its kernels) before any clock starts
            est.fit(np.random.default_rng(0).normal(size=shape))
    defaults = est.get_params()
    settings = {"n_context": int(defaults["n_context"]), "max_features": int(net.cfg.max_features),
                "train_n": (100, 200), "train_d": (2, 64), "silhouette_rows": args.silhouette_rows}
    tasks_large = args.tasks if args.tasks_large is None else args.tasks_large
    command = args.command or "PYTHONPATH=. .venv/bin/python benchmarks/ood_curves.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    load = os.getloadavg()
    header = [
        f"Written by: `{command}`  ",
        f"Date: {args.date}; machine: {args.machine_note or os.uname().nodename}; load average "
        f"{'when rendered' if args.from_tasks else 'at the end'} "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min); one process, one thread.  ",
        f"Checkpoint: `{ckpt.name}`, weights sha256 `{sha_w[:12]}...` (file sha256 `{sha_f[:12]}...`).  ",
        f"Tasks: `priors.sample_dataset(kind='{args.kind}')` with N, D and K = {args.k} fixed "
        f"(`pipeline.evaluation.suites.fixed_size_config`), seeds `OOD_SEED_BASE + 1000 (100000 D + N) + i` with "
        f"OOD_SEED_BASE = 10**12 + 10**10; {args.tasks} tasks per cell"
        + (f", {tasks_large} from N = {args.large_from} on" if tasks_large != args.tasks else "") + ".  ",
        f"TabClustPFN: `model.estimator.TabClustPFN` defaults, K inferred (k_selection="
        f"{defaults['k_selection']!r}, n_estimators={defaults['n_estimators']}, refine={defaults['refine']!r}, "
        f"n_context={defaults['n_context']}: past {defaults['n_context']} rows a random context of that many rows "
        f"(random_state=0) is clustered and the rest assigned, batch_rows={defaults['batch_rows']}; past "
        f"max_features={net.cfg.max_features} columns PCA with pca_components='above_noise'); input "
        "`prior_frame` of the task. The partition network was trained on N 100-200 and D 2..64 (model card).  ",
        f"KMeans+: k-means (scikit-learn defaults, random_state = task index) for K = 2..10, best silhouette "
        f"(`pipeline.evaluation.methods.silhouette_select`) up to N = {args.silhouette_rows}; above that the "
        f"silhouette of a fixed random sample of {args.silhouette_rows} rows (`silhouette_score(sample_size="
        f"{args.silhouette_rows}, random_state=task index)`, the same sample for every K), since the full one "
        "is quadratic in N.  ",
        "True K (TabClustPFN*, KMeans*): " + ("the same methods given K." if args.true_k else "not run.") + "  ",
    ]
    if args.from_tasks:
        tasks = from_tasks
        header.append(f"Tables and figures rendered from `{args.from_tasks}` by: `PYTHONPATH=. .venv/bin/python "
                      f"benchmarks/ood_curves.py {shlex.join(sys.argv[1:] if argv is None else argv)}`  ")
    else:
        rows, resumed = [], []
        prev = pd.read_csv(args.resume) if args.resume and Path(args.resume).exists() else None
        methods = [PFN, KM] + ([PFN_TRUE, KM_TRUE] if args.true_k else [])
        warnings.filterwarnings("ignore", category=UserWarning)  # the PCA warning past max_features columns
        for axis, n, d in grid(args.n_values, args.d_values, args.n_fixed, args.d_fixed):
            count = tasks_per_cell(n, args.tasks, tasks_large, args.large_from)
            start = time.perf_counter()
            cell = None
            if prev is not None:
                old = prev[(prev["axis"] == axis) & (prev["n_rows"] == n) & (prev["n_features"] == d)
                           & (prev["task"] < count) & prev["method"].isin(methods)]
                if len(old.drop_duplicates(["task", "method"])) == count * len(methods):
                    cell = old.drop_duplicates(["task", "method"]).to_dict("records")
                    resumed.append(f"{axis} N={n} D={d}")
            if cell is None:
                cell = run_cell(est, axis, n, d, args.k, count, args.kind, args.silhouette_rows, args.true_k)
            rows += cell
            if args.partial:
                pd.DataFrame(rows).reindex(columns=list(TASK_COLUMNS)).to_csv(args.partial, index=False)
            c = pd.DataFrame(cell)
            med = c.groupby("method")["ari"].median()
            print(f"[{time.strftime('%H:%M:%S')}] {axis} N={n} D={d}: {count} tasks "
                  f"{'taken from --resume' if resumed and resumed[-1] == f'{axis} N={n} D={d}' else 'in'} "
                  f"{time.perf_counter() - start:.0f}s; median ARI "
                  + ", ".join(f"{m} {med[m]:.3f}" for m in METHODS if m in med.index), flush=True)
        tasks = pd.DataFrame(rows)
        if resumed:
            header.append(f"Resumed: the cells {', '.join(resumed)} were taken from `{args.resume}`, an "
                          "earlier run of the same settings (same seeds and results; their seconds are that run's).")
    for path in write_outputs(tasks, Path(args.out), header, args.bootstrap, settings):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
