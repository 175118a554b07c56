"""Ablation sweeps with Ray Tune: each trial a short pretraining (one TorchTrainer), one MLflow parent run per sweep.

    python jobs/sweep.py --study coupling --smoke                         # two tiny trials, a few minutes on CPU
    python jobs/sweep.py --study pin-loss --budget-steps 2000 --num-samples 2 --real --name pin-2k
    python jobs/sweep.py --name pin-2k --resume                           # after the driver died
    python jobs/sweep.py --study hparams --num-samples 16 --scheduler asha --budget-steps 1000
    python jobs/sweep.py --name pin-2k --rescore --real                   # score the saved models again
    python jobs/sweep.py --study coupling --regime amortized --smoke      # in the paper's 2-D amortized regime
Writes ablation_<study>.md/.csv and trials_<study>.csv to --output (default: the sweep folder).
"""

from __future__ import annotations

import argparse
import logging
import sys

from pipeline.config import apply_overrides, train_preset
from pipeline.ray_env import init_ray
from priors.regimes import REGIMES
from tune.config import SweepConfig, SweepOptions, check_real_datasets, regime_base
from tune.driver import rescore_sweep, run_sweep
from tune.spaces import STUDY_NAMES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--study", choices=STUDY_NAMES, help="which ablation (required unless --resume)")
    p.add_argument("--preset", choices=["small", "paper", "tiny"], help="base run (default: small; tiny with --smoke)")
    p.add_argument("--budget-steps", type=int, help="optimisation steps per trial (default: the preset's max_steps)")
    p.add_argument("--num-samples", type=int, help="seeds per variant (grid studies) or random configurations "
                   "(hparams) (default: 1)")
    p.add_argument("--smoke", action="store_true", help="tiny model, tiny data, a few steps (checks, CI)")
    p.add_argument("--regime", choices=sorted(REGIMES), help="train and score in a controlled regime of the paper "
                   "(priors.regimes): the base prior becomes the regime's, the held-out tasks are drawn from it")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override the base TrainConfig")
    p.add_argument("--scheduler", choices=["fifo", "asha"], help="asha stops weak trials early (default: fifo)")
    p.add_argument("--eval-tasks", type=int, help="fixed held-out synthetic tasks (default: 64; 8 with --smoke)")
    p.add_argument("--real", action="store_true", help="also score each trial on the 22 UCI datasets")
    p.add_argument("--real-datasets", help="comma-separated subset of the real suite, e.g. iris,wine (an unknown "
                   "name is refused before Ray starts)")
    p.add_argument("--max-concurrent-trials", type=int, help="default: as many as the cluster's CPUs/GPUs fit")
    p.add_argument("--name", help="sweep folder under --storage-path (default: <study>-<date>-<time>)")
    p.add_argument("--resume", action="store_true", help="continue sweep --name: finished trials are kept")
    p.add_argument("--rescore", action="store_true", help="score sweep --name's saved models again (with --real: "
                   "add the real suite) and rewrite its tables; trains nothing, needs no Ray")
    p.add_argument("--tables", action="store_true", help="with --rescore: rewrite the tables from the saved scores "
                   "(no scoring)")
    p.add_argument("--storage-path", default="runs/sweeps", help="default: %(default)s")
    p.add_argument("--output", help="folder of the tables (default: the sweep folder)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: sqlite:///mlruns.db)")
    p.add_argument("--address", help="Ray cluster address (default: the job's cluster, else a local Ray)")
    args = p.parse_args(argv)
    if args.real_datasets is not None:
        names = tuple(name.strip() for name in args.real_datasets.split(",") if name.strip())
        if args.real:  # checked here, before Ray starts or a trial trains (without --real, main refuses the flag)
            try:
                check_real_datasets(names)
            except ValueError as exc:
                p.error(f"--real-datasets: {exc}")
        args.real_datasets = names or None
    elif args.real:  # the whole suite: its folder must be there before a trial trains
        try:
            check_real_datasets(None)
        except ValueError as exc:
            p.error(f"--real: {exc}; give --real-datasets only for a subset, or drop --real to score on the "
                    "synthetic tasks alone")
    return args


def _defining_flags(args: argparse.Namespace) -> list[str]:
    """The flags given that define what a new sweep computes (a saved sweep cannot change them)."""
    given = {"--study": args.study, "--preset": args.preset, "--budget-steps": args.budget_steps,
             "--num-samples": args.num_samples, "--smoke": args.smoke or None, "--set": args.set or None,
             "--scheduler": args.scheduler, "--eval-tasks": args.eval_tasks, "--regime": args.regime}
    return [flag for flag, value in given.items() if value is not None]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        sweep = None
        if args.resume and not args.name:
            raise ValueError("--resume needs --name (the sweep folder under --storage-path)")
        if args.real_datasets and not args.real:
            raise ValueError("--real-datasets needs --real (it picks the datasets of the real suite to score on)")
        if args.tables and (not args.rescore or args.real):
            raise ValueError("--tables goes with --rescore and without --real (it rewrites the tables, scoring "
                             "nothing)")
        if args.rescore:
            if not args.name or args.resume or args.study:
                raise ValueError("--rescore needs --name (a sweep folder under --storage-path) and no --study/--resume")
            if _defining_flags(args):
                raise ValueError(f"--rescore scores sweep {args.name!r} as it was trained; drop "
                                 f"{', '.join(_defining_flags(args))} (only --real/--real-datasets can be added)")
            result = rescore_sweep(args.name, storage_path=args.storage_path, real=args.real or None,
                                   real_datasets=args.real_datasets,
                                   tracking_uri=args.tracking_uri, output=args.output, score=not args.tables)
            print(result.files["markdown"].read_text())
            return 0
        if args.resume and (_defining_flags(args) or args.real):
            raise ValueError(f"--resume continues sweep {args.name!r} as it was started; drop "
                             f"{', '.join(_defining_flags(args) + (['--real'] if args.real else []))} (to score a "
                             "finished sweep on the real suite, use --rescore --real)")
        if not args.resume:
            if args.study is None:
                raise ValueError("--study is required for a new sweep")
            base = train_preset(args.preset or ("tiny" if args.smoke else "small"), smoke=args.smoke)
            if args.regime:
                base = regime_base(base, args.regime, args.study)
            base = apply_overrides(base, args.set)
            eval_tasks = args.eval_tasks if args.eval_tasks is not None else (8 if args.smoke else 64)
            sweep = SweepConfig(study=args.study, base=base,
                                budget_steps=base.max_steps if args.budget_steps is None else args.budget_steps,
                                num_samples=1 if args.num_samples is None else args.num_samples,
                                scheduler=args.scheduler or "fifo", real=args.real,
                                eval_tasks=eval_tasks, regime=args.regime,
                                real_datasets=args.real_datasets)
        options = SweepOptions(storage_path=args.storage_path, name=args.name, resume=args.resume,
                               tracking_uri=args.tracking_uri, output=args.output,
                               max_concurrent_trials=args.max_concurrent_trials)
        init_ray(args.address, dashboard=True)  # Ray Train frees stopped trials' CPUs through the State API
        result = run_sweep(sweep, options)
    except (ValueError, FileNotFoundError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(result.files["markdown"].read_text())
    print(f"sweep folder: {result.sweep_dir}\nMLflow parent run: {result.parent_run_id}")
    if result.n_failed:
        print(f"{result.n_failed} trial(s) failed; rerun them with --name {result.sweep_dir.name} --resume",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
