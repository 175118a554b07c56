"""Refit a checkpoint's cardinality network (CIN) to its frozen partition network on fresh prior tables.

    python jobs/refit_cin.py                                         # the shipped weights -> runs/cin-refit
    python jobs/refit_cin.py --checkpoint runs/g7/model.pt --out runs/g7-cin --tasks 8000 --run-seed 202
    ray job submit --working-dir . -- python jobs/refit_cin.py --out /shared/runs/cin-refit

The tables are computed as Ray tasks and kept under OUT/records, so a rerun with the same settings (after an
interruption, or with other --epochs/--lr) only fits again. What it does and why: pipeline/cin_refit.py. The new
checkpoint is OUT/model.pt; compare it with its parent before shipping it, on held-out prior tasks
(``benchmarks/compare_checkpoints.py PARENT OUT/model.pt --suite prior --prior-tasks 400``, and with
``--prior-rows 100 300``) and then on the full evaluation (``jobs/evaluate.py --checkpoint OUT/model.pt``). The
defaults (10,000 prior tables and 2,500 one-mode ones of N 100-1000, run seed 200) are the recipe of the shipped
CIN, which ran with ``--run-seed 201`` (docs/DESIGN.md, "CIN refit"); ``--one-mode-tasks 0`` refits on the
paper's prior alone, and ``--one-mode-tasks 0 --n-rows 500 1000`` as the first refit (``cin-refit-s200c``,
2026-11-27) did; ``--nuisance p_noise_features=0.5 min_informative=1 p_contamination=0.2 p_discrete=0.3`` draws
the prior tables as ``make gpu-continue`` trains on them.
Exit status 1 with a message when the checkpoint or the settings are unusable.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from model.checkpoint import CheckpointError
from model.estimator import default_checkpoint_path
from pipeline.cin_refit import RefitConfig, nuisance_config, refit_cin


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    d = RefitConfig(checkpoint="", out_dir="")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None, help="checkpoint to refit (default: the shipped weights)")
    p.add_argument("--out", default="runs/cin-refit", help="output folder (default: %(default)s)")
    p.add_argument("--tasks", type=int, default=d.tasks, help="prior tables in all (default: %(default)s)")
    p.add_argument("--val-tasks", type=int, default=d.val_tasks,
                   help="of which held out to pick the epoch and compare (default: %(default)s)")
    p.add_argument("--run-seed", type=int, default=d.run_seed,
                   help="the tables' run seed; one that trained the checkpoint is refused (default: %(default)s)")
    p.add_argument("--n-estimators", type=int, default=d.n_estimators,
                   help="column orderings per table, as the estimator uses (default: %(default)s)")
    p.add_argument("--chunk-size", type=int, default=d.chunk_size, help="tables per Ray task (default: %(default)s)")
    p.add_argument("--epochs", type=int, default=d.epochs, help="(default: %(default)s)")
    p.add_argument("--lr", type=float, default=d.lr, help="(default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=d.batch_size, help="(default: %(default)s)")
    p.add_argument("--n-rows", type=int, nargs=2, default=list(d.n_rows), metavar=("LOW", "HIGH"),
                   help="table sizes N (default: %(default)s, the contexts the estimator meets)")
    p.add_argument("--one-mode-tasks", type=int, default=d.one_mode_tasks,
                   help="one-mode tables (priors.onemode, K = 2) besides the prior's (default: %(default)s)")
    p.add_argument("--one-mode-val-tasks", type=int, default=None,
                   help=f"of which held out (default: {d.one_mode_val_tasks}, or 0 with --one-mode-tasks 0)")
    p.add_argument("--nuisance", nargs="+", default=[], metavar="KEY=VALUE",
                   help="the prior tables' nuisance (priors.config.NuisanceConfig fields), e.g. p_noise_features=0.5 "
                        "min_informative=1 p_discrete=0.3 (default: none, the paper's prior)")
    p.add_argument("--num-workers", type=int, default=None, help="Ray tasks at once (default: the CPUs)")
    p.add_argument("--tracking-uri", default=None, help="MLflow store (default: sqlite:///mlruns.db)")
    p.add_argument("--run-name", default=None, help="MLflow run name and lineage label (default: the out folder)")
    return p.parse_args(argv)


def one_mode_val_tasks(args: argparse.Namespace) -> int:
    """The held-out one-mode tables: as given, else the default, or none when there are no one-mode tables."""
    if args.one_mode_val_tasks is not None:
        return args.one_mode_val_tasks
    return RefitConfig.one_mode_val_tasks if args.one_mode_tasks else 0  # the field's default


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        cfg = RefitConfig(checkpoint=args.checkpoint or str(default_checkpoint_path()), out_dir=args.out,
                          tasks=args.tasks, val_tasks=args.val_tasks, run_seed=args.run_seed,
                          n_estimators=args.n_estimators, chunk_size=args.chunk_size, epochs=args.epochs,
                          lr=args.lr, batch_size=args.batch_size, n_rows=tuple(args.n_rows),
                          one_mode_tasks=args.one_mode_tasks, one_mode_val_tasks=one_mode_val_tasks(args),
                          nuisance=nuisance_config(args.nuisance), num_workers=args.num_workers,
                          tracking_uri=args.tracking_uri, run_name=args.run_name)
        summary = refit_cin(cfg)
    except (CheckpointError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    before, after, paired = summary["held_out_before"], summary["held_out_after"], summary["paired_ari"]
    print(json.dumps({"held_out_before": before, "held_out_after": after, "paired_ari": paired}, indent=1))
    print(f"wrote {args.out}/model.pt: on {args.val_tasks} held-out tables the refit CIN's cross-entropy "
          f"{before['cross_entropy']:.3f} -> {after['cross_entropy']:.3f}, ARI of the chosen partition "
          f"{paired['mean']:+.4f} +- {paired['se']:.4f} per table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
