"""The results tables of README.md and the model card, generated from the committed evaluation files.

Each ``docs/results/<name>.csv`` written by ``jobs/evaluate.py`` (one row per suite, dataset and method; see
``docs/results/evaluation-test.csv``) renders as one Markdown block. A document holds such a block between

    <!-- results:begin NAME -->
    <!-- results:end NAME -->

where NAME is the CSV's stem (``evaluation-test``); :func:`render_document` replaces what lies between the two
markers and nothing else, so the prose around a table is written by hand and every figure inside it is not.

Per suite present in the CSV (synthetic, real, openml, dev, ...), TabClustPFN with K inferred is set against
the peers that also choose K: KMeans+ and GMM+ (K by silhouette) and any method named ``GMM-BIC...``. For each
peer, over the tables where both ran: TabClustPFN's win rate (ties count half), the mean ARI difference with a
95 % t-interval and the two-sided Wilcoxon signed-rank p-value; per method the median ARI, median |K^ - K| and
median seconds per table. The reading is "ahead of" or "behind" only when p < 0.05 and the interval excludes
0, otherwise "on par with".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from pipeline.evaluation.methods import REFERENCE_AUTO
from pipeline.evaluation.report import PROVENANCE_PREFIXES

REFERENCE = REFERENCE_AUTO
PEERS = ("KMeans+", "GMM+")
PEER_PREFIXES = ("GMM-BIC",)
SUITE_ORDER = ("synthetic", "real", "openml", "dev")
ALPHA = 0.05
RENDER_COMMAND = "python jobs/render_docs.py"  # what `make results` runs
REQUIRED_COLUMNS = ("suite", "dataset", "method", "status", "ari", "k_pred", "k_true", "seconds")
_BLOCK = re.compile(r"(<!-- results:begin (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- results:end (?P=name) -->)",
                    re.S)
_BEGIN = re.compile(r"<!-- results:begin ([\w.-]+) -->")


@dataclass(frozen=True)
class Paired:
    """TabClustPFN against one peer over the tables where both ran (differences are TabClustPFN - peer)."""

    n: int
    win_rate: float
    mean_diff: float
    ci_low: float
    ci_high: float
    wilcoxon_p: float

    @property
    def reading(self) -> str:
        """``"ahead of"``, ``"behind"`` or ``"on par with"`` (see the module docstring)."""
        if self.n == 0 or not np.isfinite(self.wilcoxon_p) or self.wilcoxon_p >= ALPHA:
            return "on par with"
        if self.ci_low > 0:
            return "ahead of"
        if self.ci_high < 0:
            return "behind"
        return "on par with"


def win_rate(diff: np.ndarray) -> float:
    """Share of tables won, a tie counting half; NaN without tables."""
    diff = np.asarray(diff, dtype=float)
    if diff.size == 0:
        return float("nan")
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def mean_interval(diff: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``diff`` and its two-sided t-interval ``(mean, low, high)``; the interval is NaN below 2 values."""
    diff = np.asarray(diff, dtype=float)
    if diff.size == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(diff.mean())
    if diff.size < 2:
        return mean, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + level / 2, diff.size - 1) * diff.std(ddof=1) / math.sqrt(diff.size))
    return mean, mean - half, mean + half


def wilcoxon_p(diff: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of ``diff``; 1 when every difference is 0, NaN without tables."""
    diff = np.asarray(diff, dtype=float)
    if diff.size == 0:
        return float("nan")
    if np.all(diff == 0):
        return 1.0
    return float(stats.wilcoxon(diff, alternative="two-sided").pvalue)


def paired_comparison(reference: pd.Series, peer: pd.Series) -> Paired:
    """Compare two per-table ARI series (indexed by dataset, NaN for a failed run) on the tables both ran."""
    both = pd.concat([reference.rename("ref"), peer.rename("peer")], axis=1).dropna()
    diff = (both["ref"] - both["peer"]).to_numpy(dtype=float)
    mean, low, high = mean_interval(diff)
    return Paired(n=int(diff.size), win_rate=win_rate(diff), mean_diff=mean, ci_low=low, ci_high=high,
                  wilcoxon_p=wilcoxon_p(diff))


def peers_in(methods: list[str]) -> list[str]:
    """The peers present among ``methods``: :data:`PEERS` in their order, then the ``GMM-BIC...`` methods."""
    named = [m for m in PEERS if m in methods]
    return named + sorted(m for m in methods if m.startswith(PEER_PREFIXES) and m not in named)


def suites_in(results: pd.DataFrame) -> list[str]:
    """The suites of ``results``, those of :data:`SUITE_ORDER` first."""
    present = list(results["suite"].unique())
    return [s for s in SUITE_ORDER if s in present] + sorted(s for s in present if s not in SUITE_ORDER)


def _per_table(results: pd.DataFrame, method: str) -> pd.DataFrame:
    """One row per dataset of ``method``: ARI (NaN for a failed run), |K^ - K| and seconds."""
    sub = results[results["method"] == method].drop_duplicates("dataset").set_index("dataset")
    ok = sub["status"] == "ok"
    return pd.DataFrame({"ari": sub["ari"].astype(float).where(ok),
                         "k_err": (sub["k_pred"].astype(float) - sub["k_true"].astype(float)).abs().where(ok),
                         "seconds": sub["seconds"].astype(float).where(ok),
                         "failed": ~ok})


def suite_comparison(results: pd.DataFrame) -> pd.DataFrame:
    """TabClustPFN and each peer on one suite's results: one row per method (TabClustPFN first).

    Columns: ``method``, ``tables`` (datasets with a run), ``failed``, ``median_ari``, ``median_k_mae``,
    ``median_seconds`` and, for the peers, the :class:`Paired` fields (``n`` ... ``wilcoxon_p``) and ``reading``.
    """
    methods = list(results["method"].unique())
    if REFERENCE not in methods:
        raise ValueError(f"no {REFERENCE} rows in the results (methods: {methods})")
    ref = _per_table(results, REFERENCE)
    rows = []
    for method in [REFERENCE, *peers_in(methods)]:
        own = _per_table(results, method)
        row = {"method": method, "tables": len(own), "failed": int(own["failed"].sum()),
               "median_ari": float(own["ari"].median()), "median_k_mae": float(own["k_err"].median()),
               "median_seconds": float(own["seconds"].median())}
        if method != REFERENCE:
            paired = paired_comparison(ref["ari"], own["ari"])
            row.update(vars(paired), reading=paired.reading)
        rows.append(row)
    return pd.DataFrame(rows)


def read_results(path: str | Path) -> pd.DataFrame:
    """One evaluation CSV, checked for the columns the tables need."""
    frame = pd.read_csv(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    return frame


def read_provenance(md_path: str | Path) -> dict[str, str]:
    """The provenance lines of an evaluation's ``.md`` (``Command:``, ``Checkpoint:`` ...), by field.

    A field the file does not record is absent; a missing file gives ``{}``.
    """
    path = Path(md_path)
    if not path.is_file():
        return {}
    found = {}
    for line in path.read_text().splitlines():
        for field, prefix in PROVENANCE_PREFIXES.items():
            if field not in found and line.startswith(prefix):
                found[field] = line[len(prefix):].strip()
    return found


def _num(value: float, fmt: str) -> str:
    return "-" if value is None or not np.isfinite(value) else format(value, fmt)


def _p_clause(value: float) -> str:
    """``p = 0.013``, or ``p < 0.001``."""
    text = _p(value)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def _p(value: float) -> str:
    if not np.isfinite(value):
        return "-"
    return "< 0.001" if value < 0.001 else f"{value:.2g}"


def _interval(row: pd.Series) -> str:
    if not np.isfinite(row["mean_diff"]):
        return "-"
    if not np.isfinite(row["ci_low"]):
        return f"{row['mean_diff']:+.3f}"
    return f"{row['mean_diff']:+.3f} [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"


def _provenance_lines(csv_path: Path, provenance: dict[str, str]) -> list[str]:
    md = csv_path.with_suffix(".md")
    lines = [f"Generated by `{RENDER_COMMAND}` from `{csv_path.as_posix()}` (full tables: `{md.as_posix()}`)."]
    if "command" in provenance:
        lines.append(f"Written by: {provenance['command']}")
    for field, label in (("checkpoint", "Checkpoint"), ("settings", "TabClustPFN"), ("sha256", "Checkpoint sha256"),
                         ("machine", "Machine"), ("date", "Date")):
        lines.append(f"{label}: {provenance.get(field, f'not recorded in `{md.name}`')}")
    return [line + "  " for line in lines[:-1]] + lines[-1:]  # Markdown line breaks within one paragraph


def render_block(results: pd.DataFrame, csv_path: Path, provenance: dict[str, str]) -> str:
    """The Markdown between a block's markers: one table, a summary line per suite, notes and provenance."""
    table_lines = ["| suite | method | median ARI | median k-MAE | median s / table | TabClustPFN win rate | "
                   "mean ARI diff [95% CI] | Wilcoxon p |", "|---|---|---|---|---|---|---|---|"]
    summary = []
    for suite in suites_in(results):
        table = suite_comparison(results[results["suite"] == suite])
        n_tables = int(table.iloc[0]["tables"])
        for _, row in table.iterrows():
            peer = row["method"] != REFERENCE
            label = f"{suite} ({n_tables} tables)" if not peer else ""
            failed = f" ({row['failed']} failed)" if row["failed"] else ""
            table_lines.append(f"| {label} | {row['method']}{failed} | {_num(row['median_ari'], '.3f')} | "
                               f"{_num(row['median_k_mae'], 'g')} | {_num(row['median_seconds'], '.3f')} | "
                               + (f"{_num(row['win_rate'], '.2f')} | {_interval(row)} | {_p(row['wilcoxon_p'])} |"
                                  if peer else "- | - | - |"))
        parts = [f"{row['reading']} {row['method']} ({_p_clause(row['wilcoxon_p'])}, win rate "
                 f"{_num(row['win_rate'], '.2f')})" for _, row in table.iloc[1:].iterrows()]
        if parts:
            summary.append(f"- {suite}: TabClustPFN is " + "; ".join(parts) + ".")
    notes = ("ARI differences are TabClustPFN (K inferred) minus the peer, table by table over the tables both ran; "
             "a tie counts half a win; p is two-sided; \"ahead\" or \"behind\" only where p < "
             f"{ALPHA:g} and the interval excludes 0. Seconds are per table as the evaluation ran it (each run a "
             "Ray task of one CPU, at most one per core; loading the model excluded).")
    lines = [*table_lines, "", *summary, "", notes, "", *_provenance_lines(csv_path, provenance)]
    return "\n".join(lines) + "\n"


def render_blocks(csv_paths: list[Path], root: Path | None = None) -> dict[str, str]:
    """Every block the given CSVs make, by name (the CSV's stem); paths under ``root`` are shown relative to it."""
    blocks = {}
    for path in map(Path, csv_paths):
        shown = path
        if root is not None and path.resolve().is_relative_to(Path(root).resolve()):
            shown = path.resolve().relative_to(Path(root).resolve())
        blocks[path.stem] = render_block(read_results(path), shown, read_provenance(path.with_suffix(".md")))
    return blocks


def block_names(text: str) -> list[str]:
    """The names of the result blocks a document opens, in order."""
    return _BEGIN.findall(text)


def render_document(text: str, blocks: dict[str, str]) -> str:
    """``text`` with each result block's body replaced by ``blocks[name]``.

    Raises
    ------
    ValueError
        A block opened without its end marker, or named after no results file.
    """
    closed = [m.group("name") for m in _BLOCK.finditer(text)]
    unclosed = [n for n in block_names(text) if n not in closed]
    if unclosed:
        raise ValueError(f"result blocks without their end marker: {unclosed}")
    unknown = [n for n in closed if n not in blocks]
    if unknown:
        raise ValueError(f"result blocks {unknown} name no results file (have: {sorted(blocks)})")
    return _BLOCK.sub(lambda m: m.group(1) + blocks[m.group("name")] + m.group(4), text)


def update_documents(documents: list[Path], csv_paths: list[Path], *, check: bool, root: Path | None = None
                     ) -> list[Path]:
    """Render every block of ``documents`` from ``csv_paths``; write them unless ``check``.

    Returns the documents whose text changes (with ``check``: would change).
    """
    blocks = render_blocks(csv_paths, root)
    changed = []
    for doc in map(Path, documents):
        old = doc.read_text()
        new = render_document(old, blocks)
        if new != old:
            changed.append(doc)
            if not check:
                doc.write_text(new)
    return changed
