"""The regime results files: an evaluation folder of ``--suite amortized`` or ``--suite cluster-pfn`` -> Markdown,
CSV and (Cluster-PFN) a PNG figure, next to the paper's figures.

    python jobs/evaluate.py --suite amortized --methods TabClustPFN KMeans+ GMM+ --calibration-size 0 \\
        --num-workers 2 --output outputs/eval-amortized
    python benchmarks/regime_report.py amortized outputs/eval-amortized --out docs/results

    python jobs/evaluate.py --suite cluster-pfn --methods TabClustPFN KMeans+ GMM+ --calibration-size 0 \\
        --num-workers 2 --output outputs/eval-cluster-pfn
    python benchmarks/regime_report.py cluster-pfn outputs/eval-cluster-pfn --out docs/results

A checkpoint trained on the regime (e.g. the placeholder row "PFN (random-init, this regime)") is evaluated on the
same tasks with ``jobs/evaluate.py --suite amortized --methods TabClustPFN --checkpoint CKPT --output DIR`` and
added with ``--checkpoint-run "PFN (random-init, this regime)=DIR"``.

Writes ``regime-<suite>.md`` and ``.csv`` (and ``regime-cluster-pfn.png``) under ``--out``. Per method (and per D
for the Cluster-PFN regime): median ARI and NMI, k-MAE = the median over tasks of |K_pred - K_true| (the paper's
"k-MAE", whose values are whole numbers; the same quantity as ``report.py``'s k-MAE column), the mean of
|K_pred - K_true| beside it, k-Acc = the share of tasks with K_pred = K_true, and the median time per task (the
method's own fit, model loading excluded). Each median carries a percentile-bootstrap 95 % interval over tasks
(``--bootstrap`` resamples, seed 0); k-Acc a Wilson 95 % interval. Each peer is compared with TabClustPFN on the
same tasks: ARI win rate, median paired ARI difference (TabClustPFN - peer) with its bootstrap interval, and the
one-sided Wilcoxon signed-rank p-value of TabClustPFN > peer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

REFERENCE = "TabClustPFN"
REGIMES = ("amortized", "cluster-pfn")
N_BOOT = 2000
#: Paper Tab. 3 (Sec. 5, amortized-clustering regime): median ARI, k-MAE, k-Acc, time (ms) per method.
PAPER_AMORTIZED = (
    ("DAC (Anc)", 0.5665, 10.0, 0.00625, 257.20),
    ("DAC (Min)", 0.5209, 5.0, 0.0375, 235.48),
    ("NCP", 0.6000, 3.0, 0.08125, 1058.04),
    ("PFN (Random-init)", 0.4222, 1.0, 0.4250, 69.58),
    ("PFN (TabICL-init)", 0.6294, 1.0, 0.4250, 71.79),
    ("TabClustPFN", 0.7893, 1.0, 0.4250, 70.93),
)
#: The row another run fills in (a PFN trained from scratch on this regime's prior only).
PLACEHOLDER = "PFN (random-init, this regime)"
METRIC_COLUMNS = ("ari", "nmi", "k_mae", "k_abs_mean", "k_acc", "ms")


def bootstrap_median_ci(values: np.ndarray, n_boot: int = N_BOOT, seed: int = 0,
                        stat=np.median) -> tuple[float, float]:
    """Percentile-bootstrap 95 % interval of ``stat`` (default the median) of ``values`` (NaN dropped)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return np.nan, np.nan
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    boots = stat(values[idx], axis=1)
    return float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))


def wilson_ci(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score 95 % interval of a proportion."""
    if n == 0:
        return np.nan, np.nan
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def summarise(results: pd.DataFrame, n_boot: int = N_BOOT) -> pd.DataFrame:
    """One row per method of ``results`` (long, one row per task and method): every figure with its interval,
    and the paired comparison with :data:`REFERENCE` on the same tasks."""
    from scipy import stats

    res = results.assign(k_err=(results["k_pred"].astype(float) - results["k_true"].astype(float)).abs(),
                         ms=results["seconds"].astype(float) * 1000.0)
    ok = res[res["status"] == "ok"]
    wide = ok.pivot(index="dataset", columns="method", values="ari")
    rows = []
    for method in _methods(res):
        sub, part = res[res["method"] == method], ok[ok["method"] == method]
        row = {"method": method, "n_tasks": len(sub), "n_failed": int((sub["status"] != "ok").sum())}
        for col, src in (("ari", "ari"), ("nmi", "nmi"), ("k_mae", "k_err"), ("ms", "ms")):
            vals = part[src].to_numpy(dtype=float)
            row[col] = float(np.median(vals)) if len(vals) else np.nan
            row[f"{col}_lo"], row[f"{col}_hi"] = bootstrap_median_ci(vals, n_boot)
        errs = part["k_err"].to_numpy(dtype=float)
        row["k_abs_mean"] = float(errs.mean()) if len(errs) else np.nan
        row["k_abs_mean_lo"], row["k_abs_mean_hi"] = bootstrap_median_ci(errs, n_boot, stat=np.mean)
        hits = int((errs == 0).sum())
        row["k_acc"] = hits / len(errs) if len(errs) else np.nan
        row["k_acc_lo"], row["k_acc_hi"] = wilson_ci(hits, len(errs))
        if method != REFERENCE and REFERENCE in wide.columns and method in wide.columns:
            pair = wide[[REFERENCE, method]].dropna()
            diff = (pair[REFERENCE] - pair[method]).to_numpy(dtype=float)
            row["n_pairs"] = len(diff)
            row["ref_win_rate"] = float((diff > 0).mean()) if len(diff) else np.nan
            row["ref_tie_rate"] = float((diff == 0).mean()) if len(diff) else np.nan
            row["ref_ari_diff"] = float(np.median(diff)) if len(diff) else np.nan
            row["ref_ari_diff_lo"], row["ref_ari_diff_hi"] = bootstrap_median_ci(diff, n_boot)
            defined = len(diff) >= 2 and np.any(diff != 0)
            row["wilcoxon_p"] = (float(stats.wilcoxon(diff, alternative="greater").pvalue) if defined
                                 else np.nan)
            row["wilcoxon_p_two_sided"] = float(stats.wilcoxon(diff).pvalue) if defined else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _methods(results: pd.DataFrame) -> list[str]:
    """The methods of ``results``, TabClustPFN first, the others in their order of appearance."""
    names = list(dict.fromkeys(results["method"]))
    return sorted(names, key=lambda m: m != REFERENCE)


def read_run(folder: str | Path, suite: str) -> tuple[pd.DataFrame, list[str]]:
    """``results.csv`` of an evaluation folder (rows of ``suite`` only) and its ``results.md`` header lines
    (command, checkpoint, settings, sha256, machine, date)."""
    folder = Path(folder)
    path = folder / "results.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; run jobs/evaluate.py --suite {suite} --output {folder} first")
    results = pd.read_csv(path)
    results = results[results["suite"] == suite]
    if results.empty:
        raise ValueError(f"{path} holds no {suite!r} rows; it is not an evaluation of --suite {suite}")
    header = []
    md = folder / "results.md"
    if md.is_file():
        from pipeline.evaluation.report import PROVENANCE_PREFIXES

        prefixes = tuple(PROVENANCE_PREFIXES.values())
        header = [line for line in md.read_text().splitlines() if line.startswith(prefixes)]
    return results, header


def task_profile(run_dir: str | Path, suite: str) -> str:
    """One sentence on the drawn tasks (N range, K counts, oracle ARI) from the run's ``datasets.csv``."""
    path = Path(run_dir) / "datasets.csv"
    if not path.is_file():
        return ""
    ds = pd.read_csv(path)
    ds = ds[ds["suite"] == suite]
    if ds.empty:
        return ""
    ks = ds["k_true"].value_counts().sort_index()
    lo, hi = ds["n_rows"].min(), ds["n_rows"].max()
    rows = f"N = {lo}" if lo == hi else f"N {lo}-{hi} (median {ds['n_rows'].median():g})"
    return f"The drawn tasks: {rows}; tasks per K: " + ", ".join(f"{k}: {c}" for k, c in ks.items()) + "."


def _oracle_line(results: pd.DataFrame, n_boot: int) -> str:
    """The Bayes oracle's median ARI [95 % interval] over the tasks of ``results`` ("" without oracle labels)."""
    if "bayes_ari" not in results:
        return ""
    bayes = results.groupby("dataset")["bayes_ari"].first().dropna()
    if bayes.empty:
        return ""
    lo, hi = bootstrap_median_ci(bayes.to_numpy(dtype=float), n_boot)
    return (f"Bayes oracle (the true mixture's Bayes classifier, the ceiling): median ARI {bayes.median():.4f} "
            f"[{lo:.4f}, {hi:.4f}].")


def _fmt(value: float, digits: int) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _interval(row, col: str, digits: int) -> str:
    return f"{_fmt(row[col], digits)} [{_fmt(row[f'{col}_lo'], digits)}, {_fmt(row[f'{col}_hi'], digits)}]"


def measured_table(summary: pd.DataFrame, *, with_nmi: bool) -> str:
    """Markdown table of :func:`summarise`'s rows: figure [95 % interval] per column."""
    head = ["method", "ARI", *(["NMI"] if with_nmi else []), "k-MAE (median)", "mean abs K error", "k-Acc",
            "ms per task", "failed"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in summary.iterrows():
        cells = [r["method"], _interval(r, "ari", 4), *([_interval(r, "nmi", 4)] if with_nmi else []),
                 _interval(r, "k_mae", 1), _interval(r, "k_abs_mean", 2), _interval(r, "k_acc", 4),
                 _interval(r, "ms", 1), str(int(r["n_failed"]))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def paired_table(summary: pd.DataFrame) -> str:
    """Markdown table of the paired ARI comparison of TabClustPFN with each peer."""
    head = ["peer", "tasks", "TabClustPFN wins", "ties", "median ARI diff (TabClustPFN - peer)",
            "Wilcoxon p (TabClustPFN > peer)", "Wilcoxon p (two-sided)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, r in summary[summary["method"] != REFERENCE].iterrows():
        if "n_pairs" not in r or not np.isfinite(r.get("n_pairs", np.nan)):
            continue
        ps = ["-" if not np.isfinite(r[c]) else f"{r[c]:.2g}" for c in ("wilcoxon_p", "wilcoxon_p_two_sided")]
        lines.append("| " + " | ".join([r["method"], str(int(r["n_pairs"])), _fmt(r["ref_win_rate"], 3),
                                        _fmt(r["ref_tie_rate"], 3), _interval(r, "ref_ari_diff", 4), *ps])
                     + " |")
    return "\n".join(lines)


def report_command(suite: str, run_dir: str | Path, out_dir: str | Path, n_boot: int = N_BOOT,
                   machine_note: str | None = None, note: str | None = None,
                   checkpoint_runs: list[str] | tuple[str, ...] = ()) -> str:
    """The command line of this script that writes the files again."""
    import shlex

    parts = ["python benchmarks/regime_report.py", suite, shlex.quote(str(run_dir)), "--out",
             shlex.quote(str(out_dir))]
    for spec in checkpoint_runs:
        parts += ["--checkpoint-run", shlex.quote(spec)]
    for flag, value in (("--bootstrap", None if n_boot == N_BOOT else n_boot), ("--machine-note", machine_note),
                        ("--note", note)):
        if value is not None:
            parts += [flag, shlex.quote(str(value))]
    return " ".join(parts)


def add_checkpoint_runs(results: pd.DataFrame, specs: list[str] | tuple[str, ...], suite: str
                        ) -> tuple[pd.DataFrame, list[str]]:
    """Append, for each ``LABEL=DIR`` of ``specs``, the TabClustPFN rows of the evaluation folder DIR (the same
    suite, run with another ``--checkpoint``) as method LABEL; also return a line per folder naming its command
    and checkpoint. The tasks are the suite's fixed seeds, so they pair with the main run's by name."""
    parts, lines = [results], []
    for spec in specs:
        label, sep, folder = spec.partition("=")
        if not sep or not label or not folder:
            raise ValueError(f"--checkpoint-run wants LABEL=DIR, got {spec!r}")
        if label in set(results["method"]):
            raise ValueError(f"--checkpoint-run label {label!r} is already a method of the main run")
        other, header = read_run(folder, suite)
        other = other[other["method"] == REFERENCE]
        if other.empty:
            raise ValueError(f"{folder} holds no {REFERENCE} rows of the {suite!r} suite")
        parts.append(other.assign(method=label))
        got = {h.split(":", 1)[0]: h for h in header}
        lines.append(f"`{label}`: the {REFERENCE} rows of `{folder}` ({len(other)} tasks); "
                     + " ".join(got.get(k, "") for k in ("Command", "Checkpoint sha256")).strip())
    return pd.concat(parts, ignore_index=True), lines


def _command(report: str, header: list[str]) -> list[str]:
    evaluate = next((h.split("`")[1] for h in header if h.startswith("Command: ") and "`" in h), None)
    cmd = f"{evaluate} && {report}" if evaluate else report
    return [f"Command: `{cmd}`", ""]


def _extra_md(lines: list[str]) -> list[str]:
    if not lines:
        return []
    return ["Rows from other evaluation folders of the same tasks:", "", *(f"- {x}" for x in lines), ""]


def _provenance(header: list[str], machine_note: str | None) -> list[str]:
    lines = []
    for h in header:
        if h.startswith("Command: "):
            continue
        if h.startswith("Machine: ") and machine_note:
            h = f"{h} {machine_note}"
        lines += [h, ""]
    return lines


def amortized_report(run_dir: str | Path, out_dir: str | Path, *, n_boot: int = N_BOOT,
                     machine_note: str | None = None, checkpoint_runs: list[str] | tuple[str, ...] = ()
                     ) -> list[Path]:
    """``regime-amortized.md`` and ``.csv`` from an evaluation folder of ``--suite amortized`` (and the
    TabClustPFN rows of other checkpoints' folders, ``checkpoint_runs``: ``LABEL=DIR``)."""
    results, header = read_run(run_dir, "amortized")
    results, extra_lines = add_checkpoint_runs(results, checkpoint_runs, "amortized")
    filled = PLACEHOLDER in set(results["method"])
    summary = summarise(results, n_boot)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paper = pd.DataFrame([{"source": "paper Tab. 3", "method": m, "ari": a, "k_mae": k, "k_acc": acc, "ms": ms}
                          for m, a, k, acc, ms in PAPER_AMORTIZED])
    shipped = any(h.startswith("Checkpoint: `shipped`") for h in header)
    tag = " (shipped, zero-shot)" if shipped else " (this run's --checkpoint)"
    measured = summary.assign(source="this repo", method=[
        f"{m}{tag}" if m == REFERENCE else m for m in summary["method"]])
    placeholder = pd.DataFrame([{"source": "to fill: training sweep", "method": PLACEHOLDER}])
    table = pd.concat([measured, *([] if filled else [placeholder]), paper], ignore_index=True)
    table.insert(0, "source", table.pop("source"))
    for col in ("n_tasks", "n_failed", "n_pairs"):
        table[col] = table[col].astype("Int64")
    table.to_csv(out_dir / "regime-amortized.csv", index=False)
    n = results["dataset"].nunique()
    lines = ["# Amortized-clustering regime (paper Sec. 5, Tab. 3)", "", *_command(
                 report_command("amortized", run_dir, out_dir, n_boot, machine_note,
                                checkpoint_runs=checkpoint_runs), header),
             *_provenance(header, machine_note), *_extra_md(extra_lines),
             f"{n} held-out tasks drawn from `priors.regimes.amortized_prior()` (2-D Gaussian mixtures with full, "
             "rotated covariances and controlled overlap; N 100-500, K uniform on 2..10), seeds "
             "`EVAL_SEED_BASE + AMORTIZED_SEED_OFFSET + i` of `pipeline/evaluation/suites.py`. Every method "
             "infers K: TabClustPFN through its CIN posterior, the `+` peers by the best silhouette over "
             "K = 2..10.", "", task_profile(run_dir, "amortized"), "",
             "Figures: median over tasks [percentile-bootstrap 95 % interval of the median, "
             f"{n_boot} resamples]; k-MAE is the median |K_pred - K_true| (as in the paper, and as the k-MAE "
             "column of `pipeline/evaluation/report.py`), the mean |K_pred - K_true| is beside it; k-Acc is "
             "the share of tasks with the exact K [Wilson 95 % interval]; time is the method's own fit per task "
             "(model loading excluded) on this machine.", "",
             "## Measured here", "", measured_table(summary, with_nmi=False), ""]
    oracle = _oracle_line(results, n_boot)
    lines += [oracle, ""] if oracle else []
    bayes = results.groupby("dataset")["bayes_ari"].first().dropna() if "bayes_ari" in results else None
    best_paper = max(a for _, a, _, _, _ in PAPER_AMORTIZED)
    if bayes is not None and len(bayes) and best_paper > bayes.median():
        lines += [f"The paper's best median ARI ({best_paper:.4f}) lies above the Bayes-oracle median of these draws "
                  f"({bayes.median():.4f}): these tasks overlap more than the paper's test sets did, so compare rows "
                  "within a source, not across sources.", ""]
    lines += ["Paired ARI comparison with TabClustPFN on the same tasks:", "", paired_table(summary), "",
              "## Beside the paper", "",
              "The paper's rows are its Tab. 3 (its own test draws, machine and timing); the measured rows "
              "are this repository's methods on this suite's tasks"
              + (", TabClustPFN with the shipped checkpoint" if shipped else ", TabClustPFN with this run's "
                 "--checkpoint") + (" (the other checkpoints' rows are named above)" if extra_lines else "")
              + ". The paper's DAC, NCP and PFN rows were trained on this regime"
              + ("; TabClustPFN (both here and in the paper) was not." if shipped else "."), "",
              "| source | method | ARI | k-MAE | k-Acc | ms per task |", "|---|---|---|---|---|---|"]
    for _, r in measured.iterrows():
        lines.append(f"| this repo | {r['method']} | {_fmt(r['ari'], 4)} | {_fmt(r['k_mae'], 1)} | "
                     f"{_fmt(r['k_acc'], 4)} | {_fmt(r['ms'], 2)} |")
    if not filled:
        lines.append(f"| to fill: training sweep | **{PLACEHOLDER}** | _pending_ | _pending_ | _pending_ | "
                     "_pending_ |")
    for m, a, k, acc, ms in PAPER_AMORTIZED:
        lines.append(f"| paper Tab. 3 | {m} | {a:.4f} | {k:.1f} | {acc:g} | {ms:.2f} |")
    (out_dir / "regime-amortized.md").write_text("\n".join(lines) + "\n")
    return [out_dir / "regime-amortized.md", out_dir / "regime-amortized.csv"]


def cluster_pfn_summary(results: pd.DataFrame, n_boot: int = N_BOOT) -> pd.DataFrame:
    """:func:`summarise` per D (groups ``d2``..``d5``), with a ``D`` column."""
    parts = []
    for group, sub in results.groupby("group", sort=False):
        parts.append(summarise(sub, n_boot).assign(D=int(str(group).lstrip("d"))))
    out = pd.concat(parts, ignore_index=True).sort_values(["D"], kind="stable").reset_index(drop=True)
    out.insert(0, "D", out.pop("D"))
    return out


def plot_cluster_pfn(summary: pd.DataFrame, path: Path) -> Path:
    """Three panels, ARI, NMI and k-MAE (median |K error|, and its mean dashed) against D, one line per method
    with 95 % bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = _methods(summary)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    width = 0.08
    for ax, (col, title) in zip(axes, (("ari", "ARI (median)"), ("nmi", "NMI (median)"),
                                       ("k_mae", "k-MAE (median |K error|; dashed: mean)"))):
        for i, method in enumerate(methods):
            sub = summary[summary["method"] == method].sort_values("D")
            x = sub["D"].to_numpy(dtype=float) + (i - (len(methods) - 1) / 2) * width
            y = sub[col].to_numpy(dtype=float)
            err = np.vstack([y - sub[f"{col}_lo"].to_numpy(dtype=float), sub[f"{col}_hi"].to_numpy(dtype=float) - y])
            line = ax.errorbar(x, y, yerr=np.clip(err, 0, None), marker="o", capsize=3, label=method)
            if col == "k_mae":  # the median is a whole number; the mean shows the differences it hides
                ax.plot(x, sub["k_abs_mean"].to_numpy(dtype=float), linestyle="--", marker=".", alpha=0.6,
                        color=line[0].get_color())
        ax.set_title(title)
        ax.set_xlabel("D (features)")
        ax.set_xticks(sorted(summary["D"].unique()))
        ax.grid(alpha=0.3)
    axes[2].set_ylim(bottom=0)
    axes[0].legend(fontsize=8)
    n = int(summary["n_tasks"].max())
    fig.suptitle(f"Cluster-PFN regime: {n} held-out GMM tasks per D (N = 500, K unknown, 2..10); "
                 "bars: bootstrap 95 % interval of the median", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def cluster_pfn_report(run_dir: str | Path, out_dir: str | Path, *, n_boot: int = N_BOOT,
                       machine_note: str | None = None, note: str | None = None,
                       checkpoint_runs: list[str] | tuple[str, ...] = ()) -> list[Path]:
    """``regime-cluster-pfn.md``, ``.csv`` and ``.png`` from an evaluation folder of ``--suite cluster-pfn`` (and
    the TabClustPFN rows of other checkpoints' folders, ``checkpoint_runs``: ``LABEL=DIR``)."""
    results, header = read_run(run_dir, "cluster-pfn")
    results, extra_lines = add_checkpoint_runs(results, checkpoint_runs, "cluster-pfn")
    summary = cluster_pfn_summary(results, n_boot)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out_dir / "regime-cluster-pfn.csv", index=False)
    png = plot_cluster_pfn(summary, out_dir / "regime-cluster-pfn.png")
    per_d = results.groupby("group")["dataset"].nunique()
    counts = ", ".join(f"D = {str(g).lstrip('d')}: {c}" for g, c in per_d.items())
    lines = ["# Cluster-PFN regime (paper App. \"Comparison with Cluster-PFN\")", "",
             *_command(report_command("cluster-pfn", run_dir, out_dir, n_boot, machine_note, note,
                                      checkpoint_runs), header),
             *_provenance(header, machine_note), *_extra_md(extra_lines),
             f"Held-out tasks from `priors.regimes.cluster_pfn_prior(D)` (the paper's GMM prior at D features, "
             f"N = 500, K uniform on 2..10, unknown to every method); tasks per D: {counts} (the paper: 320 per "
             "D). Seeds `EVAL_SEED_BASE + CLUSTER_PFN_SEED_OFFSET + 100_000 D + i` of "
             "`pipeline/evaluation/suites.py`.", "", task_profile(run_dir, "cluster-pfn"), ""]
    if note:
        lines += [note, ""]
    lines += ["Figures: median over tasks [percentile-bootstrap 95 % interval of the median, "
              f"{n_boot} resamples]; k-MAE is the median |K_pred - K_true| (the k-MAE of "
              "`pipeline/evaluation/report.py`), the mean |K_pred - K_true| is beside it; k-Acc is the share of "
              "tasks with the exact K [Wilson 95 % interval]; time is the method's own fit per task (model loading "
              "excluded). Cluster-PFN itself is not run here (no checkpoint in this repository); the paper's "
              "figure has no table of numbers to set beside these.", "",
              f"![ARI, NMI and k-MAE against D]({png.name})", ""]
    for d, sub in summary.groupby("D"):
        lines += [f"## D = {d}", "", measured_table(sub, with_nmi=True), ""]
        oracle = _oracle_line(results[results["group"] == f"d{d}"], n_boot)
        lines += [oracle, ""] if oracle else []
        lines += [paired_table(sub), ""]
    (out_dir / "regime-cluster-pfn.md").write_text("\n".join(lines) + "\n")
    return [out_dir / "regime-cluster-pfn.md", out_dir / "regime-cluster-pfn.csv", png]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("suite", choices=REGIMES, help="which regime the evaluation folder holds")
    p.add_argument("run_dir", help="the --output folder of jobs/evaluate.py --suite <suite>")
    p.add_argument("--out", default="docs/results", help="where the files go (default: %(default)s)")
    p.add_argument("--bootstrap", type=int, default=N_BOOT, help="bootstrap resamples (default: %(default)s)")
    p.add_argument("--machine-note", default=None, help="appended to the Machine: line (e.g. 'shared by 4 jobs')")
    p.add_argument("--note", default=None, help="cluster-pfn: a paragraph on the task count, if reduced")
    p.add_argument("--checkpoint-run", action="append", default=[], metavar="LABEL=DIR",
                   help="repeatable: add the TabClustPFN rows of another evaluation folder of the same suite (run "
                        f"with another --checkpoint) as method LABEL; the label {PLACEHOLDER!r} fills the "
                        "amortized table's placeholder row")
    args = p.parse_args(argv)
    if args.bootstrap < 1:
        p.error(f"--bootstrap must be at least 1, got {args.bootstrap}")
    try:
        if args.suite == "amortized":
            files = amortized_report(args.run_dir, args.out, n_boot=args.bootstrap, machine_note=args.machine_note,
                                     checkpoint_runs=args.checkpoint_run)
        else:
            files = cluster_pfn_report(args.run_dir, args.out, n_boot=args.bootstrap,
                                       machine_note=args.machine_note, note=args.note,
                                       checkpoint_runs=args.checkpoint_run)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for f in files:
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
