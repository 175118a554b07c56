"""Cluster CSV/Parquet/Excel tables with TabClustPFN, one Ray task per table (the README's first command).

    python jobs/cluster.py                      # the demo tables in data/demo, shipped checkpoint
    python jobs/cluster.py data/*.csv more/ --output out --label-column species
    ray job submit --working-dir . -- python jobs/cluster.py /shared/tables --output /shared/out
"""

from __future__ import annotations

import argparse
import logging
import math
import sys

import pandas as pd

from model.power import power_transform_setting
from model.preprocessing import IMPUTE
from model.refinement import REFINES
from model.screening import screen_noise_setting
from model.selection import ESTIMATOR_K_SELECTIONS
from pipeline.batch_cluster import DEFAULT_MAX_RETRIES, ClusterJobConfig, UsageError, run_batch
from pipeline.tables import MAX_COLUMNS

EPILOG = f"""exit status: 0 when every table was clustered, 2 when any table failed (its reason is in
summary.csv and printed below) or an option is unusable (printed with the usage line, as argparse does),
1 when the job could not run at all (no tables found, checkpoint missing). An MLflow problem is only a warning.
Tables are refused when unreadable, empty, with one row, all missing, with a free-text or dates column, or with more
than --max-columns feature columns (default {MAX_COLUMNS}); the other tables still complete. A table whose worker
process dies (out of memory, node lost) is tried again on another worker, --max-retries times."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="CSV/Parquet/Excel (.xlsx) files, directories or glob patterns (default: the demo tables in "
                        "data/demo, scored against their 'target' column)")
    p.add_argument("--output", default="outputs/cluster", help="output folder (default: %(default)s)")
    p.add_argument("--n-clusters", type=int, default=None, help="fixed K for every table (default: inferred)")
    p.add_argument("--k-selection", choices=ESTIMATOR_K_SELECTIONS, default=None,
                   help="how K is inferred: auto (default: the checkpoint's K ranker, else expected_ari), ranker, "
                        "expected_ari or posterior_mode (the paper's rule)")
    p.add_argument("--max-clusters", type=int, default=None, help="largest K to infer for any table (default: 10)")
    p.add_argument("--n-estimators", type=int, default=None,
                   help="column orderings averaged per table (default: the estimator's, 4; 1 is fastest)")
    p.add_argument("--refine", choices=REFINES, default=None,
                   help="gmm (default): two k-means steps from the model's partitions, then the chosen one by a "
                        "diagonal Gaussian mixture; kmeans: the k-means steps only; none: the model's partitions as "
                        "they are")
    p.add_argument("--allow-single-cluster", action="store_true",
                   help="answer one cluster for a table that looks like a single Gaussian mode (default: always "
                        "K >= 2)")
    p.add_argument("--screen-noise", type=screen_noise_setting, default=None, metavar="{auto,true,false}",
                   help="drop the columns that show no cluster structure (no second mode, independent of the other "
                        "columns): auto (default) where some column has two modes, as for structure in few of many "
                        "columns; true where any column shows structure; false never (summary.csv lists each "
                        "table's ignored columns)")
    p.add_argument("--power-transform", type=power_transform_setting, default=None, metavar="{true,false}",
                   help="Yeo-Johnson transform long-tailed numeric columns of one mode (skewness > 1) in tables of "
                        "more than 4 columns: true (default) or false (keep the tails, e.g. lab values whose rare "
                        "group sits in the tail)")
    p.add_argument("--impute", choices=IMPUTE, default=None,
                   help="missing cells: filled from the 5 nearest rows (neighbors) or by the column's median or most "
                        "frequent category (default: the estimator's, neighbors)")
    p.add_argument("--label-column", default=None, help="ground-truth column: scored (ARI/NMI), not clustered")
    p.add_argument("--ignore-columns", nargs="+", default=[], metavar="NAME",
                   help="columns not clustered where a table has them (ids, names, free text); kept in the output")
    p.add_argument("--missing-values", nargs="+", type=code, default=[], metavar="CODE",
                   help="codes for a missing value in every table, numbers or text (-999 unknown): read as missing")
    p.add_argument("--checkpoint", default=None, help="model checkpoint (default: the shipped one)")
    p.add_argument("--num-workers", type=int, default=None, help="Ray workers (default: one per CPU)")
    p.add_argument("--seed", type=int, default=0, help="random_state of the estimator (default: %(default)s)")
    p.add_argument("--max-columns", type=int, default=MAX_COLUMNS, help="feature-column limit per table")
    p.add_argument("--max-retries", type=int, default=DEFAULT_MAX_RETRIES,
                   help="times a table whose worker process dies (out of memory, node lost) is tried again on "
                        "another worker before it is reported as failed (default: %(default)s)")
    p.add_argument("--tracking-uri", default=None, help="MLflow tracking URI (default: sqlite:///mlruns.db)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def code(text: str) -> float | str:
    """A ``--missing-values`` code: a number where the text reads as one (``-999``), else the text (``unknown``)."""
    try:
        value = float(text)
    except ValueError:
        return text
    return value if math.isfinite(value) else text


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


#: Columns printed for every table; the summary's others only where some table has something to say in them
ALWAYS_PRINTED = ("table", "status", "rows", "columns", "n_clusters", "seconds")
#: What a summary cell holds when there is nothing to say: no value, no column, no per-column reading
_NOTHING = ("", "[]", "{}")
#: Columns whose usual value says nothing either: no empty row, K not at the top of its range
_USUAL = {"empty_rows": 0, "k_at_top": False}


def printed_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary.csv``'s rows as printed: without the file paths, CIN's posterior and the node ids, and without
    the columns in which no table has anything (no ignored column, no value read at a fence, ...), so the table a
    first run prints fits a terminal; ``summary.csv`` keeps every column."""
    shown = summary.drop(columns=["path", "k_posterior", "node_id"]).astype(object).where(summary.notna(), "")

    def says_nothing(column: str) -> bool:
        return shown[column].map(lambda v: str(v) in _NOTHING or (column in _USUAL and v == _USUAL[column])).all()

    return shown[[c for c in shown.columns if c in ALWAYS_PRINTED or not says_nothing(c)]]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:  # an option the config refuses is a usage error: argparse's message and exit status 2
        cfg = ClusterJobConfig(inputs=tuple(args.inputs), output_dir=args.output, n_clusters=args.n_clusters,
                               k_selection=args.k_selection, max_clusters=args.max_clusters,
                               n_estimators=args.n_estimators, refine=args.refine,
                               allow_single_cluster=args.allow_single_cluster,
                               screen_noise=args.screen_noise, power_transform=args.power_transform,
                               impute=args.impute, label_column=args.label_column,
                               ignore_columns=tuple(args.ignore_columns),
                               missing_values=tuple(args.missing_values), checkpoint=args.checkpoint,
                               num_workers=args.num_workers, seed=args.seed, max_columns=args.max_columns,
                               max_retries=args.max_retries,
                               tracking_uri=args.tracking_uri, progress=not args.no_progress)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        summary = run_batch(cfg)
    except UsageError as exc:
        parser.error(str(exc))
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with pd.option_context("display.max_columns", None, "display.width", 160, "display.max_colwidth", 70):
        print(printed_summary(summary).to_string(index=False))
    n_failed = int((summary["status"] != "ok").sum())
    print(f"\n{len(summary) - n_failed} of {len(summary)} tables clustered; outputs and summary.csv in {args.output}")
    return 2 if n_failed else 0


if __name__ == "__main__":
    sys.exit(main())
