"""The paper-style ablation table from a sweep's trials (pandas only).

One row per variant (a grid study's value, averaged over seeds) or per trial (random search), with the measured
columns and, where the paper reports them, the paper's numbers as ``Paper ...`` columns. Written as Markdown
(for the README) and CSV (every column, for analysis).

With several seeds per variant, :func:`study_stats` adds the statistics: per metric the mean over seeds and its 95 %
t interval, and paired tests of each variant against the paper's choice (``Study.choice``): on the held-out tasks
(each task's score averaged over a variant's seeds, Wilcoxon signed-rank over the tasks) and over seeds (paired t on
the trials' summary metric, trials paired by run seed). :func:`verdict` says in one sentence whether the paper's
ordering holds at the sweep's budget or the variants are not separated.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from tune.spaces import Grid, Study

logger = logging.getLogger(__name__)

#: Measured columns, in table order, and their headers.
COLUMNS: dict[str, str] = {
    "syn_ari": "Syn ARI", "syn_nmi": "Syn NMI", "syn_k_mae": "Syn k-MAE", "syn_ari_known_k": "Syn ARI (known K)",
    "syn_k_medae": "Syn k-MedAE",
    "syn_ari_gmm": "Syn ARI (GMM)", "syn_ari_zeus": "Syn ARI (ZEUS)",
    "real_ari": "Real ARI", "real_nmi": "Real NMI", "real_k_mae": "Real k-MAE",
    "real_ari_known_k": "Real ARI (known K)", "real_k_medae": "Real k-MedAE",
    "ms_per_step": "ms/step", "val_ari": "In-loop val ARI", "syn_k_acc": "Syn k-Acc",
    "syn_ms_per_task": "Syn ms/task",
}
#: Columns shown in every Markdown table; the others only where the study is about them.
CORE = ("syn_ari", "syn_nmi", "syn_k_mae", "syn_ari_known_k", "real_ari", "real_nmi", "real_k_mae",
        "real_ari_known_k", "ms_per_step")
EXTRA = {"prior": ("syn_ari_gmm", "syn_ari_zeus"), "cin-loss": ("syn_k_medae", "syn_k_acc", "real_k_medae"),
         "surplus-k": ("syn_k_medae", "real_k_medae"),
         "hparams": ("val_ari",)}


def trial_frame(records: Sequence[dict[str, Any]], study: Study) -> pd.DataFrame:
    """Per-trial rows: ``trial_id``, ``variant``, ``status``, the overridden keys and every metric column.

    Parameters
    ----------
    records : dicts with ``trial_id``, ``status``, ``overrides`` (dict) and ``metrics`` (dict).
    study : the sweep's study (names the variants).
    """
    rows = []
    for rec in records:
        overrides = rec.get("overrides", {})
        metrics = rec.get("metrics", {})
        row = {"trial_id": rec["trial_id"], "variant": study.variant(overrides), "status": rec["status"],
               **{k: overrides.get(k) for k in study.space},
               **{k: float(metrics[k]) if k in metrics else math.nan for k in COLUMNS},
               "steps": metrics.get("step", math.nan), "attempts": rec.get("attempts", 0),
               "error": rec.get("error", "")}
        rows.append(row)
    return pd.DataFrame(rows)


def _variant_order(study: Study) -> list[str]:
    keys = [k for k, d in study.space.items() if isinstance(d, Grid) and k != "seed"]
    if len(keys) != 1:
        return []
    return [study.labels.get(v, str(v)) for v in study.space[keys[0]].values]


def ablation_table(trials: pd.DataFrame, study: Study) -> pd.DataFrame:
    """The ablation table: per variant for grid studies (mean over seeds, ``n`` finished trials), else per trial.

    Only finished trials enter the means; a variant whose trials all failed keeps a row of NaN (``n = 0``).
    Paper numbers are added as ``paper_<metric>`` columns.
    """
    metric_cols = list(COLUMNS)
    done = trials[trials["status"] == "finished"]
    if study.is_grid:
        order = _variant_order(study) or list(dict.fromkeys(trials["variant"]))
        table = done.groupby("variant")[metric_cols].mean().reindex(order)
        table.insert(0, "n", done.groupby("variant").size().reindex(order).fillna(0).astype(int))
        table = table.reset_index()
    else:
        table = trials.drop(columns=["error"]).sort_values("syn_ari", ascending=False, na_position="last")
        table = table.reset_index(drop=True)
    keys = {k for row in study.paper.values() for k in row}
    for key in [k for k in COLUMNS if k in keys]:
        table[f"paper_{key}"] = [study.paper.get(v, {}).get(key, math.nan) for v in table["variant"]]
    return table


def _fmt(value: Any, digits: int = 4) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


#: What a p-value that underflowed to 0.0 is printed as (it is below the smallest normal double).
P_UNDERFLOW = "<1e-300"


def format_p(p: float | None, digits: int | None = 3) -> str:
    """A p-value as text that never reads 0: ``digits`` decimals (``0.011``), or with ``digits=None`` two
    significant digits (``0.0027``, the verdict's), in scientific notation where the decimals would round it to 0
    (``6.3e-05``); :data:`P_UNDERFLOW` for a p that underflowed to 0.0, ``n/a`` for NaN."""
    if p is None or not math.isfinite(p):
        return "n/a"
    if p <= 0:
        return P_UNDERFLOW
    if digits is None:
        return f"{p:.2g}"
    return f"{p:.{digits}f}" if p >= 10.0 ** -digits else f"{p:.1e}"


def _p_is(p: float) -> str:
    """``= 0.027`` or ``< 1e-300``: what follows ``p`` in a sentence."""
    text = format_p(p, None)
    return f"< {text[1:]}" if text.startswith("<") else f"= {text}"


def markdown(table: pd.DataFrame, study: Study, header: Sequence[str] = ()) -> str:
    """A Markdown table of the shown columns (measured, then paper), with ``header`` lines above it.

    Measured columns that are NaN for every row (e.g. real-suite columns of a sweep run without ``--real``)
    are left out; paper columns are kept.
    """
    shown = [c for c in CORE[:4] + EXTRA.get(study.name, ()) + CORE[4:] if c in table and table[c].notna().any()]
    lead = ["variant", "n"] if study.is_grid else ["variant", "status"]  # a trial's values are in its name
    paper = [c for c in table.columns if c.startswith("paper_")]
    names = {**{c: COLUMNS[c] for c in shown}, **{c: f"Paper {COLUMNS.get(c[6:], c[6:])}" for c in paper},
             "variant": "Variant", "n": "n", "status": "Status"}
    cols = lead + shown + paper
    digits = {c: 1 if c.endswith("ms_per_step") else 4 for c in cols}
    lines = [f"### {study.title}", "", *header] + ([""] if header else [])
    lines.append("| " + " | ".join(names.get(c, c) for c in cols) + " |")
    lines.append("|" + "|".join("---" if c in ("variant", "status") else "---:" for c in cols) + "|")
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(_fmt(row[c], digits[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def write_tables(out_dir: str | Path, study: Study, trials: pd.DataFrame, table: pd.DataFrame,
                 header: Sequence[str] = (), records: Sequence[dict[str, Any]] | None = None,
                 base_seed: int = 0) -> dict[str, Path]:
    """Write ``ablation_<study>.md``, ``ablation_<study>.csv`` and ``trials_<study>.csv``; return the paths.

    With the trial ``records`` of a grid study (each with ``task_scores`` where kept), also ``stats_<study>.csv``
    (:func:`study_stats`), whose intervals, tests and :func:`verdict` close the Markdown file.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / f"ablation_{study.name}.md", "csv": out / f"ablation_{study.name}.csv",
             "trials": out / f"trials_{study.name}.csv"}
    text = markdown(table, study, header)
    if records is not None and study.is_grid:
        stats = study_stats(records, study, base_seed)
        paths["stats"] = out / f"stats_{study.name}.csv"
        stats.to_csv(paths["stats"], index=False)
        text += "\n" + stats_markdown(stats, study)
    paths["markdown"].write_text(text)
    table.to_csv(paths["csv"], index=False)
    trials.to_csv(paths["trials"], index=False)
    logger.info("ablation table written to %s", paths["markdown"])
    return paths


#: Metrics given a mean and 95 % interval over seeds (those a sweep measured).
INTERVAL_METRICS = ("syn_ari", "syn_nmi", "syn_ari_known_k", "syn_k_mae", "syn_k_medae", "syn_k_acc",
                    "syn_ari_gmm", "syn_ari_zeus", "real_ari", "real_nmi", "real_k_mae", "ms_per_step",
                    "syn_ms_per_task")
#: Per-task score -> (the trials' summary metric of it, whether higher is better, short name, the paper's metric).
#: K errors are summarised by their mean (``syn_k_mae``): their median ties at small budgets.
PAIRED = {"ari": ("syn_ari", True, "ARI", "syn_ari"), "k_abs_err": ("syn_k_mae", False, "|K error|", "syn_k_medae")}
ALPHA = 0.05


def t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``values`` and its two-sided ``level`` t interval (NaN ends with fewer than two values)."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if len(x) < 2:
        return mean, math.nan, math.nan
    half = float(sps.t.ppf(0.5 + level / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return mean, mean - half, mean + half


def _seed(record: dict[str, Any], base_seed: int) -> int:
    return int(record.get("overrides", {}).get("seed", base_seed) or base_seed)


def _task_matrix(records: Sequence[dict[str, Any]], key: str) -> np.ndarray | None:
    """Per-task ``key`` averaged over the records (tasks in the sweep's fixed order); None if any lacks them."""
    rows = [rec.get("task_scores") for rec in records]
    if not rows or any(not r for r in rows) or len({len(r) for r in rows}) != 1:
        return None
    return np.mean([[float(t[key]) for t in r] for r in rows], axis=0)


def paired_task_test(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Mean of ``a - b`` over tasks, the two-sided Wilcoxon signed-rank p (1.0 when every pair is equal) and the
    rank-biserial ``(R+ - R-) / (R+ + R-)`` of the nonzero differences: the direction the test found, which the mean
    need not share (many small differences one way, a few large ones the other)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if not np.any(d != 0):
        return float(d.mean()) if len(d) else math.nan, 1.0, 0.0
    nonzero = d[d != 0]
    ranks = sps.rankdata(np.abs(nonzero))
    r = float((ranks[nonzero > 0].sum() - ranks[nonzero < 0].sum()) / ranks.sum())
    return float(d.mean()), float(sps.wilcoxon(d, zero_method="wilcox").pvalue), r


def paired_seed_test(a: dict[int, float], b: dict[int, float]) -> tuple[float, float, int]:
    """Mean difference over the run seeds both have, the paired t test's two-sided p (NaN with fewer than two
    pairs or constant differences) and the number of pairs."""
    common = sorted(set(a) & set(b))
    d = np.array([a[s] - b[s] for s in common], dtype=float)
    d = d[np.isfinite(d)]
    if len(d) == 0:
        return math.nan, math.nan, 0
    if len(d) < 2 or np.all(d == d[0]):
        return float(d.mean()), (1.0 if np.all(d == 0) else math.nan), len(d)
    return float(d.mean()), float(sps.ttest_rel(d, np.zeros_like(d)).pvalue), len(d)


def study_stats(records: Sequence[dict[str, Any]], study: Study, base_seed: int = 0) -> pd.DataFrame:
    """One row per variant of a grid study from its finished trials' records.

    Columns: ``variant``, ``n`` (finished seeds), ``<metric>_mean|_lo|_hi`` (95 % t interval over seeds) for each of
    :data:`INTERVAL_METRICS` measured, and against the paper's choice, per paired score ``s`` of :data:`PAIRED`
    (``ari``, ``k_abs_err``): ``d_task_<s>`` (mean over held-out tasks of the variant's minus the choice's score,
    each averaged over the seeds both finished), ``p_task_<s>`` (Wilcoxon signed-rank over the tasks),
    ``r_task_<s>`` (its direction, :func:`paired_task_test`), ``d_seed_<s>``/``p_seed_<s>`` (paired t over run seeds
    of the summary metric, e.g. ``syn_ari``). The choice's own row has NaN tests.
    """
    done = [r for r in records if r.get("status") == "finished"]
    order = _variant_order(study) or list(dict.fromkeys(study.variant(r.get("overrides", {})) for r in records))
    groups = {v: [r for r in done if study.variant(r.get("overrides", {})) == v] for v in order}
    ref = groups.get(study.choice, [])
    rows = []
    for variant, recs in groups.items():
        row: dict[str, Any] = {"variant": variant, "n": len(recs),
                               "seeds": " ".join(str(_seed(r, base_seed)) for r in recs)}
        for m in INTERVAL_METRICS:
            vals = [float(r["metrics"][m]) for r in recs if m in r.get("metrics", {})]
            if vals:
                row[f"{m}_mean"], row[f"{m}_lo"], row[f"{m}_hi"] = t_interval(vals)
        for key, (summary, _, _, _) in PAIRED.items():
            row[f"d_task_{key}"] = row[f"p_task_{key}"] = row[f"r_task_{key}"] = math.nan
            row[f"d_seed_{key}"] = row[f"p_seed_{key}"] = math.nan
            if variant == study.choice or not recs or not ref:
                continue
            # Seed means over the run seeds both finished, so a failed seed does not unpair the variants.
            both = {_seed(r, base_seed) for r in recs} & {_seed(r, base_seed) for r in ref}
            mine = _task_matrix([r for r in recs if _seed(r, base_seed) in both], key)
            theirs = _task_matrix([r for r in ref if _seed(r, base_seed) in both], key)
            if mine is not None and theirs is not None and len(mine) == len(theirs):
                row[f"d_task_{key}"], row[f"p_task_{key}"], row[f"r_task_{key}"] = paired_task_test(mine, theirs)
            by_seed = {_seed(r, base_seed): float(r["metrics"].get(summary, math.nan)) for r in recs}
            ref_seed = {_seed(r, base_seed): float(r["metrics"].get(summary, math.nan)) for r in ref}
            row[f"d_seed_{key}"], row[f"p_seed_{key}"], _ = paired_seed_test(by_seed, ref_seed)
        rows.append(row)
    return pd.DataFrame(rows)


def _ordering(values: dict[str, float], higher: bool) -> list[str]:
    known = {k: v for k, v in values.items() if v is not None and math.isfinite(v)}
    return sorted(known, key=lambda k: -known[k] if higher else known[k])


def verdict(stats: pd.DataFrame, study: Study, alpha: float = ALPHA) -> str:
    """One sentence (two at most): is the paper's choice separated from each other variant on the held-out tasks
    (Wilcoxon over tasks at ``alpha`` on the study's primary score; the paired t over seeds is quoted beside it, since
    the task test does not see the spread between training seeds), and does the paper's ordering hold?"""
    key = study.primary
    summary, higher, name, paper_key = PAIRED[key]
    if stats.empty or study.choice not in set(stats["variant"]) or \
            int(stats.loc[stats["variant"] == study.choice, "n"].iloc[0]) == 0:
        return f"No finished trial of the paper's choice ({study.choice or 'none'}): nothing to compare."
    others = stats[(stats["variant"] != study.choice) & (stats["n"] > 0)]
    better, worse, tied = [], [], []
    seed_agrees = []
    choice_better: dict[str, bool] = {}  # the separated variants: is the paper's choice the better one?
    for _, row in others.iterrows():
        d, p = row.get(f"d_task_{key}", math.nan), row.get(f"p_task_{key}", math.nan)
        ps = row.get(f"p_seed_{key}", math.nan)
        seeds = f", seeds p {_p_is(ps)}" if math.isfinite(ps) else ""
        r = row.get(f"r_task_{key}", math.nan)  # NaN in tables written before it was kept: the mean's sign decides
        if math.isfinite(p) and p < alpha and math.isfinite(r) and not r * d > 0:
            tied.append(f"{row['variant']} (tasks p {_p_is(p)}{seeds}, but the mean difference and the signed ranks "
                        "point in opposite directions)")
            continue
        if not math.isfinite(p) or p >= alpha:
            tied.append(f"{row['variant']} (tasks p {_p_is(p)}{seeds})" if math.isfinite(p)
                        else f"{row['variant']} (untested)")
            continue
        seed_agrees.append(math.isfinite(ps) and ps < alpha)
        choice_better[row["variant"]] = (d < 0) == higher
        (better if (d < 0) == higher else worse).append(f"{row['variant']} (tasks p {_p_is(p)}{seeds})")
    parts = []
    if better:
        parts.append("is better than " + ", ".join(better))
    if worse:
        parts.append("is worse than " + ", ".join(worse))
    if tied:
        parts.append("is not separated from " + ", ".join(tied))
    sentence = (f"On per-task {name} (seed means, Wilcoxon signed-rank over the held-out tasks, alpha {alpha:g}; "
                f"paired t over seeds beside it) the paper's choice {study.choice} " + "; ".join(parts) + ".")
    if seed_agrees and not all(seed_agrees):
        sentence += (" Where the seeds' paired t is not below alpha, the difference is consistent across tasks but "
                     "not resolved against the spread between training seeds.")
    measured = {r["variant"]: r.get(f"{summary}_mean", math.nan) for _, r in stats.iterrows() if r["n"] > 0}
    paper = {v: m.get(paper_key, math.nan) for v, m in study.paper.items() if v in measured}
    p_order, m_order = _ordering(paper, higher), _ordering(measured, higher)
    if len(p_order) >= 2:
        sep = " > " if higher else " < "
        shown = f"the paper's ordering ({sep.join(p_order)} by {COLUMNS.get(paper_key, paper_key)})"
        label = f"mean {COLUMNS.get(summary, summary)}"
        # A separation contradicts the paper when it puts the choice on the other side of a variant than the paper
        # does (the choice is not always the paper's best: pin-loss ranks Matching+CE above SoftARI).
        rank = {v: i for i, v in enumerate(p_order)}
        against = [v for v, b in choice_better.items()
                   if v in rank and study.choice in rank and b != (rank[study.choice] < rank[v])]
        follows = [v for v in m_order if v in p_order] == p_order
        if not better and not worse:
            sentence += (f" The tests do not separate the variants at this budget, so {shown} is neither confirmed "
                         "nor contradicted.")
        elif follows and not against:
            sentence += (f" The measured {label} follows {shown}" + (
                "; only the separations named above are significant." if tied else ", which holds at this budget."))
        elif follows:
            sentence += (f" The measured {label} follows {shown}, but the task test against "
                         f"{', '.join(against)} goes the other way, so the ordering is not confirmed.")
        else:
            sentence += f" {shown[0].upper() + shown[1:]} does not hold: measured {sep.join(m_order)} by {label}."
    return sentence


def stats_markdown(stats: pd.DataFrame, study: Study) -> str:
    """Mean [95 % t interval] over seeds per metric and the paired tests against the paper's choice, with
    :func:`verdict` below."""
    metrics = [m for m in ("syn_ari", "syn_nmi", "syn_ari_known_k", "syn_k_mae", "syn_k_medae", "syn_k_acc")
               + EXTRA.get(study.name, ()) + ("real_ari", "ms_per_step")
               if f"{m}_mean" in stats and stats[f"{m}_mean"].notna().any()]
    metrics = list(dict.fromkeys(metrics))
    key = study.primary
    name = PAIRED[key][2]
    cols = ["Variant", "n"] + [COLUMNS.get(m, m) for m in metrics] + [
        f"Δ task {name} vs {study.choice}", "p (Wilcoxon, tasks)", "p (paired t, seeds)"]
    lines = [f"#### Mean over seeds [95 % t interval]; paired tests against the paper's choice ({study.choice})", "",
             "| " + " | ".join(cols) + " |", "|---|" + "---:|" * (len(cols) - 1)]
    for _, r in stats.iterrows():
        cells = [str(r["variant"]), str(int(r["n"]))]
        for m in metrics:
            digits = 1 if m == "ms_per_step" else 3
            mean, lo, hi = (r.get(f"{m}_{s}", math.nan) for s in ("mean", "lo", "hi"))
            cell = _fmt(float(mean), digits)
            if isinstance(lo, float) and math.isfinite(lo):
                cell += f" [{lo:.{digits}f}, {hi:.{digits}f}]"
            cells.append(cell)
        if r["variant"] == study.choice:
            cells += ["(choice)", "", ""]
        else:
            cells += [_fmt(float(r.get(f"d_task_{key}", math.nan)), 3),
                      format_p(float(r.get(f"p_task_{key}", math.nan))),
                      format_p(float(r.get(f"p_seed_{key}", math.nan)))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", verdict(stats, study), ""])
