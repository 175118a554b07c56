"""From the long results table to the paper's tables: ranks, difficulty split, oracle, significance, Markdown.

Methods are compared within their information setting, as in the paper: the methods that infer or select K
(TabClustPFN, the ``+`` variants and the automatic baselines) are ranked among themselves, and the methods given
the true K (``*``) among themselves. Win rates and the time-vs-rank scatter cover all methods together.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.evaluation import metrics, stats
from pipeline.evaluation.calibration import k_probability_table
from pipeline.evaluation.methods import REFERENCE_AUTO, REFERENCE_TRUE

logger = logging.getLogger(__name__)

SETTINGS = {"auto": ("silhouette", "bic", "auto"), "true": ("true",)}
SETTING_TITLES = {"auto": "methods that infer or select K", "true": "methods given the true K"}
REFERENCES = {"auto": REFERENCE_AUTO, "true": REFERENCE_TRUE}
# the header lines that say where a results file came from, by field; pipeline.evaluation.doc_tables reads them
PROVENANCE_PREFIXES = {"command": "Command: ", "checkpoint": "Checkpoint: ", "settings": "TabClustPFN: ",
                       "sha256": "Checkpoint sha256: ", "machine": "Machine: ", "date": "Date: "}


def _cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_lines(now: dt.datetime | None = None) -> list[str]:
    """``Machine:`` (OS, CPU model, CPU count, Python and torch versions) and ``Date:`` (UTC) header lines."""
    import torch

    now = now or dt.datetime.now(dt.timezone.utc)
    return [f"{PROVENANCE_PREFIXES['machine']}{platform.system()} {platform.machine()}, {_cpu_model()}, "
            f"{os.cpu_count()} CPUs; Python {platform.python_version()}, torch {torch.__version__}.",
            f"{PROVENANCE_PREFIXES['date']}{now.strftime('%Y-%m-%d %H:%M')} UTC."]


def checkpoint_line(checkpoint: str | os.PathLike | None) -> str:
    """``Checkpoint sha256:`` of the weights (``model.checkpoint.weights_sha256`` of the loaded state dict, as
    stored in and checked against the file) and of the file's bytes; ``checkpoint=None`` is the shipped file."""
    from model.checkpoint import CheckpointError, read_checkpoint
    from model.estimator import default_checkpoint_path

    path = Path(checkpoint) if checkpoint is not None else default_checkpoint_path()
    prefix = PROVENANCE_PREFIXES["sha256"]
    try:
        weights = read_checkpoint(path)["sha256"]  # verified equal to weights_sha256(state_dict) on reading
    except CheckpointError as exc:
        return f"{prefix}unreadable ({exc})."
    file_digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return (f"{prefix}`{weights}` (weights: model.checkpoint.weights_sha256 of the state dict; the file "
            f"`{path.name}` itself: `{file_digest}`).")


def provenance_lines(checkpoint: str | os.PathLike | None, *, uses_model: bool = True,
                     now: dt.datetime | None = None) -> list[str]:
    """The header lines naming the checkpoint's sha256 (when the model ran), the machine and the date.

    The ``Command:`` line is the caller's (``runner.command_line``)."""
    return ([checkpoint_line(checkpoint)] if uses_model else []) + machine_lines(now)


@dataclass
class SuiteAnalysis:
    """Every derived table of one suite (see :func:`analyse_suite`)."""

    suite: str
    n_datasets: int
    rank_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    ranks: dict[str, pd.DataFrame] = field(default_factory=dict)
    wide_ari: dict[str, pd.DataFrame] = field(default_factory=dict)
    significance: dict[str, dict] = field(default_factory=dict)
    difficulty: pd.Series | None = None
    difficulty_table: pd.DataFrame | None = None
    oracle: pd.DataFrame | None = None
    win_rate: pd.DataFrame | None = None
    median_seconds: pd.Series | None = None
    median_rank_all: pd.Series | None = None
    k_probabilities: pd.DataFrame | None = None


def _order(methods: list[str], order: list[str]) -> list[str]:
    return [m for m in order if m in methods] + sorted(m for m in methods if m not in order)


def rank_table(results: pd.DataFrame, ranks_ari: pd.DataFrame, ranks_nmi: pd.DataFrame,
               with_k: bool) -> pd.DataFrame:
    """Median [IQR] of ARI rank and NMI rank (and k-MAE), failures and median time, one row per method."""
    rows = []
    for method in ranks_ari.columns:
        sub = results[results["method"] == method]
        row = {"method": method,
               "ARI rank": metrics.format_median_iqr(ranks_ari[method], 0),
               "NMI rank": metrics.format_median_iqr(ranks_nmi[method], 0)}
        if with_k:
            row["k-MAE"] = metrics.format_median_iqr(metrics.k_abs_error(sub), 0)
        row["mean ARI rank"] = f"{ranks_ari[method].mean():.2f}"
        row["failed"] = int((sub["status"] != "ok").sum())
        row["median time (s)"] = f"{sub['seconds'].median():.3g}"
        rows.append(row)
    return pd.DataFrame(rows)


def difficulty_table(results: pd.DataFrame, levels: pd.Series, order: list[str]) -> pd.DataFrame:
    """Median [IQR] ARI and NMI, and median k-MAE, per method within the low and high difficulty datasets."""
    res = results.assign(difficulty=results["dataset"].map(levels), k_err=metrics.k_abs_error(results))
    rows = []
    for method in _order(list(res["method"].unique()), order):
        sub = res[res["method"] == method]
        row = {"method": method}
        for level in ("low", "high"):
            part = sub[sub["difficulty"] == level]
            row[f"ARI {level}"] = metrics.format_median_iqr(part["ari"])
            row[f"NMI {level}"] = metrics.format_median_iqr(part["nmi"])
            auto = not method.endswith("*")
            row[f"k-MAE {level}"] = metrics.format_median_iqr(part["k_err"], 0).split(" ")[0] if auto else "-"
        rows.append(row)
    return pd.DataFrame(rows)


def oracle_table(results: pd.DataFrame) -> pd.DataFrame | None:
    """Bayes-oracle ARI (the ceiling on GMM datasets) next to TabClustPFN's ARI on the same datasets."""
    if "bayes_ari" not in results or results["bayes_ari"].notna().sum() == 0:
        return None
    per_ds = results.dropna(subset=["bayes_ari"]).groupby("dataset")["bayes_ari"].first()
    rows = [{"method": "Bayes oracle", "ARI": metrics.format_median_iqr(per_ds), "datasets": len(per_ds)}]
    for ref in (REFERENCE_TRUE, REFERENCE_AUTO):
        sub = results[(results["method"] == ref) & results["dataset"].isin(per_ds.index)]
        if len(sub):
            gap = per_ds.reindex(sub["dataset"]).to_numpy() - sub["ari"].to_numpy()
            rows.append({"method": ref, "ARI": metrics.format_median_iqr(sub["ari"]), "datasets": len(sub),
                         "median gap to oracle": f"{np.nanmedian(gap):.4f}" if np.isfinite(gap).any() else "-"})
    return pd.DataFrame(rows)


def analyse_suite(results: pd.DataFrame, suite: str, order: list[str]) -> SuiteAnalysis:
    """All tables of one suite from its long results (one row per method and dataset)."""
    out = SuiteAnalysis(suite=suite, n_datasets=results["dataset"].nunique())
    for setting, modes in SETTINGS.items():
        sub = results[results["k_mode"].isin(modes)]
        if sub.empty:
            continue
        cols = _order(list(sub["method"].unique()), order)
        wide_ari = metrics.to_wide(sub, "ari")[cols]
        ranks_ari = metrics.rank_rows(wide_ari)
        ranks_nmi = metrics.rank_rows(metrics.to_wide(sub, "nmi")[cols])
        out.wide_ari[setting], out.ranks[setting] = wide_ari, ranks_ari
        out.rank_tables[setting] = rank_table(sub, ranks_ari, ranks_nmi, with_k=setting == "auto")
        if REFERENCES[setting] in cols and len(cols) >= 2:
            out.significance[setting] = stats.significance_summary(wide_ari, ranks_ari, REFERENCES[setting])
    all_cols = _order(list(results["method"].unique()), order)
    wide_all = metrics.to_wide(results, "ari")[all_cols]
    out.difficulty = metrics.difficulty_levels(wide_all)
    out.difficulty_table = difficulty_table(results, out.difficulty, order)
    out.oracle = oracle_table(results)
    out.win_rate = metrics.win_rate_matrix(wide_all)
    out.median_seconds = results.groupby("method")["seconds"].median().reindex(all_cols)
    out.median_rank_all = metrics.rank_rows(wide_all).median(axis=0)
    out.k_probabilities = k_probability_table(results, REFERENCE_AUTO)
    return out


def markdown_table(df: pd.DataFrame, digits: int = 4) -> str:
    """A GitHub Markdown table of ``df`` (no index); floats with ``digits`` significant digits, NaN as ``-``."""
    def cell(v) -> str:
        if isinstance(v, float):
            return "-" if np.isnan(v) else f"{v:.{digits}g}"
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body])


def _significance_md(sig: dict) -> list[str]:
    paired = sig["paired"].copy()
    lines = [f"Friedman chi2 = {sig['friedman_stat']:.3f}, p = {sig['friedman_p']:.3g}; Nemenyi CD "
             f"(alpha = {sig['alpha']}) = {sig['cd']:.3f} over {sig['n_datasets']} datasets.", ""]
    if not paired.empty:
        lines += ["One-sided paired tests of ARI(reference) > ARI(baseline) (datasets where both ran):", "",
                  markdown_table(paired[["baseline", "n", "mean_diff", "median_diff", "win_rate", "t_p",
                                         "wilcoxon_p"]]), ""]
    return lines


def render_markdown(analyses: list[SuiteAnalysis], header: list[str], calibration: pd.DataFrame | None,
                    failures: pd.DataFrame, provenance: list[str] | None = None) -> str:
    """The whole ``results.md``: per suite the rank tables, difficulty split, oracle and significance.

    ``provenance`` (from :func:`provenance_lines`) follows the header, one line each; by default only the
    machine and the date (:func:`machine_lines`), since the checkpoint is the caller's to name.
    """
    provenance = machine_lines() if provenance is None else provenance
    lines = ["# TabClustPFN evaluation", "", *header, ""]
    for line in provenance:
        lines += [line, ""]
    for a in analyses:
        lines += [f"## Suite `{a.suite}` ({a.n_datasets} datasets)", ""]
        for setting, table in a.rank_tables.items():
            lines += [f"### Ranks, {SETTING_TITLES[setting]}", "",
                      "Median [IQR] over datasets of the per-dataset rank (1 = best; ties share the average; a "
                      "failed run ranks last).", "", markdown_table(table), ""]
        counts = a.difficulty.value_counts()
        lines += ["### Median [IQR] ARI / NMI by difficulty", "",
                  f"Difficulty from the best ARI of any method: low >= 0.4 ({counts.get('low', 0)} datasets), "
                  f"high 0.1-0.4 ({counts.get('high', 0)}), excluded < 0.1 ({counts.get('excluded', 0)}).", "",
                  markdown_table(a.difficulty_table), ""]
        if a.oracle is not None:
            lines += ["### Bayes-oracle ARI (GMM datasets)", "", markdown_table(a.oracle.fillna("-")), ""]
        for setting, sig in a.significance.items():
            lines += [f"### Significance, {SETTING_TITLES[setting]} (reference {REFERENCES[setting]})", "",
                      *_significance_md(sig)]
        if a.k_probabilities is not None:
            lines += [f"### Probabilities over K ({REFERENCE_AUTO}'s `k_probabilities_`)", "",
                      "How often the most probable K (the K chosen) is the labelled one, against the mean probability "
                      "given to it; the expected calibration error of that choice (10 bins); how often the smallest "
                      "set of K holding 80 % of the probability contains the labelled K, and its mean size.", "",
                      markdown_table(a.k_probabilities), ""]
    if calibration is not None:
        lines += ["## Calibration of the CIN posterior p(K | X)", "",
                  "Coverage of the smallest set of K with posterior mass >= alpha on held-out GMM datasets.", "",
                  markdown_table(calibration), ""]
    if not failures.empty:
        lines += ["## Failed runs", "", markdown_table(failures), ""]
    return "\n".join(lines) + "\n"
