"""Run the paper's clustering benchmark: TabClustPFN against the scikit-learn baselines, with statistics and plots.

    python jobs/evaluate.py --quick                      # CI-sized: few datasets and methods
    python jobs/evaluate.py                              # synthetic + real suites, all methods, 3,200-set calibration
    python jobs/evaluate.py --data my_tables/ --methods TabClustPFN KMeans+ --calibration-size 0
    python jobs/evaluate.py --suite cluster-pfn --methods TabClustPFN KMeans+ GMM+ --calibration-size 0
"""

from __future__ import annotations

import argparse
import logging
import sys

from model.power import power_transform_setting
from model.refinement import REFINES
from model.screening import screen_noise_setting
from model.selection import ESTIMATOR_K_SELECTIONS
from pipeline.evaluation import EvalConfig, run_evaluation
from pipeline.evaluation.methods import METHODS
from pipeline.evaluation.runner import SUITES

EPILOG = f"""methods: {' '.join(m.name for m in METHODS)}
(* true K, + K in 2..10 by silhouette, -BIC K in 2..10 by BIC, no suffix: K inferred). Outputs in --output: results.csv (every
method x dataset), datasets.csv, results.md, PNG plots, calibration.csv; all logged to one MLflow run.
A method that fails or times out on a dataset is recorded as failed; the exit status is 0 when the
benchmark ran, 1 when it could not run (missing checkpoint or benchmark folder, unknown method)."""


def _true_false(word: str) -> bool:
    if word.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {word!r}")
    return word.lower() == "true"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", action="append", choices=list(SUITES), default=None,
                   help="suite to run, repeatable (default: synthetic and real, or none when --data is given); "
                        "dev is the development suite that choices are made on, the others are test suites; "
                        "amortized (160 2-D GMM sets) and cluster-pfn (320 GMM sets at each D = 2..5, groups "
                        "d2..d5) are the paper's controlled regimes, drawn from priors.regimes")
    p.add_argument("--data", default=None, help="also evaluate every Parquet file (with a 'target' column) here")
    p.add_argument("--benchmarks-dir", default=None, help="shared benchmarks folder (default: <repo>/../shared/"
                                                          "benchmarks)")
    p.add_argument("--methods", nargs="+", default=None, help="methods to run (default: all; --quick: a few)")
    p.add_argument("--checkpoint", default=None, help="model checkpoint (default: the shipped one)")
    p.add_argument("--k-selection", choices=ESTIMATOR_K_SELECTIONS, default=None,
                   help="TabClustPFN's rule for choosing K (default: the estimator's, auto)")
    p.add_argument("--n-estimators", type=int, default=None,
                   help="TabClustPFN's column orderings averaged per table (default: the estimator's, 4; 1 is the "
                        "paper's single pass)")
    p.add_argument("--refine", choices=REFINES, default=None,
                   help="TabClustPFN's test-time refinement (default: the estimator's, gmm)")
    p.add_argument("--allow-single-cluster", action="store_true",
                   help="TabClustPFN may answer one cluster for a table without structure (default: K >= 2)")
    p.add_argument("--screen-noise", type=screen_noise_setting, default=None, metavar="{auto,true,false}",
                   help="TabClustPFN's dropping of pure-noise columns (default: the estimator's, auto)")
    p.add_argument("--dequantize", type=_true_false, default=None, metavar="{true,false}",
                   help="TabClustPFN's spreading of few-level numeric columns (default: the estimator's, false)")
    p.add_argument("--power-transform", type=power_transform_setting, default=None, metavar="{true,false}",
                   help="TabClustPFN's Yeo-Johnson transform of skewed numeric columns (default: the estimator's)")
    p.add_argument("--output", default="outputs/evaluation", help="output folder (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="CI mode: 2 GMM + 2 ZEUS / 3 UCI datasets / 4 tasks "
                                                        "per regime group, 6 methods, 16 calibration datasets")
    p.add_argument("--calibration-size", type=int, default=3200, help="held-out GMM datasets for the CIN "
                                                                      "calibration (0 skips it)")
    p.add_argument("--tasks-per-group", type=int, default=None,
                   help="regime suites only: keep the first N tasks of each group (amortized: of 160; cluster-pfn: "
                        "of 320 per D); default: all, or 4 with --quick")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per method x dataset run")
    p.add_argument("--seed", type=int, default=0, help="random_state of every method (default: %(default)s)")
    p.add_argument("--num-workers", type=int, default=None,
                   help="parallel Ray tasks (default: one per CPU, on one node at most one per core: each run is "
                        "timed on a core of its own)")
    p.add_argument("--tracking-uri", default=None, help="MLflow tracking URI (default: sqlite:///mlruns.db)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    suites = tuple(args.suite) if args.suite else (() if args.data else ("synthetic", "real"))
    try:
        cfg = EvalConfig(suites=suites, data_dir=args.data, benchmarks_dir=args.benchmarks_dir,
                         methods=tuple(args.methods) if args.methods else None, checkpoint=args.checkpoint,
                         k_selection=args.k_selection, n_estimators=args.n_estimators, refine=args.refine,
                         allow_single_cluster=args.allow_single_cluster, screen_noise=args.screen_noise,
                         dequantize=args.dequantize, power_transform=args.power_transform,
                         output_dir=args.output,
                         quick=args.quick,
                         calibration_size=args.calibration_size, tasks_per_group=args.tasks_per_group,
                         timeout_s=args.timeout, seed=args.seed, num_workers=args.num_workers,
                         tracking_uri=args.tracking_uri, progress=not args.no_progress)
        results, report_path = run_evaluation(cfg)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(report_path.read_text())
    n_failed = int((results["status"] != "ok").sum())
    print(f"{len(results)} runs ({n_failed} failed); report: {report_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
