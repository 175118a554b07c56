"""The paper-style ablation table from a sweep's trials (pandas only).

One row per variant (a grid study's value, averaged over seeds) or per trial (random search), with the measured
columns and, where the paper reports them, the paper's numbers as ``Paper ...`` columns. Written as Markdown
(for the README) and CSV (every column, for analysis).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from tune.spaces import Grid, Study

logger = logging.getLogger(__name__)

#: Measured columns, in table order, and their headers.
COLUMNS: dict[str, str] = {
    "syn_ari": "Syn ARI", "syn_nmi": "Syn NMI", "syn_k_mae": "Syn k-MAE", "syn_ari_known_k": "Syn ARI (known K)",
    "syn_k_medae": "Syn k-MedAE",
    "syn_ari_gmm": "Syn ARI (GMM)", "syn_ari_zeus": "Syn ARI (ZEUS)",
    "real_ari": "Real ARI", "real_nmi": "Real NMI", "real_k_mae": "Real k-MAE",
    "real_ari_known_k": "Real ARI (known K)", "real_k_medae": "Real k-MedAE",
    "ms_per_step": "ms/step", "val_ari": "In-loop val ARI",
}
#: Columns shown in every Markdown table; the others only where the study is about them.
CORE = ("syn_ari", "syn_nmi", "syn_k_mae", "syn_ari_known_k", "real_ari", "real_nmi", "real_k_mae",
        "real_ari_known_k", "ms_per_step")
EXTRA = {"prior": ("syn_ari_gmm", "syn_ari_zeus"), "cin-loss": ("syn_k_medae", "real_k_medae"),
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
                 header: Sequence[str] = ()) -> dict[str, Path]:
    """Write ``ablation_<study>.md``, ``ablation_<study>.csv`` and ``trials_<study>.csv``; return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / f"ablation_{study.name}.md", "csv": out / f"ablation_{study.name}.csv",
             "trials": out / f"trials_{study.name}.csv"}
    paths["markdown"].write_text(markdown(table, study, header))
    table.to_csv(paths["csv"], index=False)
    trials.to_csv(paths["trials"], index=False)
    logger.info("ablation table written to %s", paths["markdown"])
    return paths
