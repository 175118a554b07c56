"""Pretrain TabClustPFN on Ray: prior actors -> Ray Data stream -> Ray Train DDP, tracked in MLflow.

    python jobs/pretrain.py --smoke                               # about a minute on a 2-core CPU
    python jobs/pretrain.py --preset small --num-workers 2 --run-name small-1
    python jobs/pretrain.py --resume small-1                      # after a crash: continue it (same MLflow run)
    python jobs/pretrain.py --regime amortized --max-steps 1000 --batch-size 16   # the paper's amortized regime
    python jobs/pretrain.py --init-checkpoint runs/small-1/model.pt --seed 1 --run-name small-2   # train on
    ray job submit --working-dir . -- python jobs/pretrain.py --preset paper --use-gpu --num-workers 4 \\
        --storage-path /shared/runs --tracking-uri http://mlflow:5000
Under `ray job submit`, give absolute (shared) --storage-path/--tracking-uri: the job runs in a copy of the repo.
"""

from __future__ import annotations

import argparse
import logging
import sys

from pipeline.config import apply_overrides, train_preset, with_regime
from pipeline.pretrain import RunOptions, load_run_config, pretrain
from pipeline.ray_env import init_ray
from priors.regimes import REGIMES

PRIORS = ["gmm", "zeus", "mix"]
FLAGS = {  # flag: (TrainConfig field, type, help); unset flags keep the preset's (or the resumed run's) value
    "max_steps": ("max_steps", int, "optimisation steps"),
    "batch_size": ("global_batch", int, "tasks per step = micro-batch x accumulation x workers"),
    "micro_batch": ("micro_batch", int, "tasks per forward pass on a worker"),
    "num_workers": ("num_workers", int, "Ray Train workers (DDP: gloo on CPU, NCCL on GPU)"),
    "seed": ("seed", int, "run seed: initial weights and every prior task's seed"),
    "prior": ("stream.kind", str, "synthetic prior"),
    "lr": ("optim.lr", float, "peak learning rate"),
    "warmup_steps": ("optim.warmup_steps", int, "linear warm-up steps before the cosine decay"),
    "checkpoint_every": ("checkpoint_every", int, "steps between checkpoints"),
    "val_every": ("val_every", int, "steps between validations on the held-out synthetic set"),
    "init_checkpoint": ("init_checkpoint", str, "start from these weights (model-format file), fresh optimizer"),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=["small", "paper", "tiny"],
                   help="model and schedule preset (default: small; tiny with --smoke)")
    for flag, (_, typ, text) in FLAGS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", type=typ, choices=PRIORS if flag == "prior" else None,
                       help=f"{text} (default: {'none' if flag == 'init_checkpoint' else 'from the preset'})")
    p.add_argument("--regime", choices=sorted(REGIMES),
                   help="train on a controlled regime of the paper instead of the preset's prior (amortized: 2-D "
                        "full-covariance GMMs, N 100-500, K 2..10; cluster-pfn: GMMs at D 2..5, N 500); --set and "
                        "--prior apply after it")
    p.add_argument("--use-gpu", action="store_true", help="one GPU per worker, bf16 autocast")
    p.add_argument("--smoke", action="store_true", help="a tiny run of about a minute (checks, CI)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any TrainConfig field: --set stream.prior.n_rows=[100,300] --set objective.pin_loss=soft_nmi")
    p.add_argument("--run-name", help="run directory under --storage-path (default: pretrain-<date>-<time>)")
    p.add_argument("--resume", metavar="RUN_NAME", help="continue this run and its MLflow run from its newest "
                   "checkpoint (the saved config; flags may change the schedule)")
    p.add_argument("--storage-path", default="runs", help="directory of the runs (default: %(default)s)")
    p.add_argument("--output", help="final model checkpoint file (default: <run dir>/model.pt)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: sqlite:///mlruns.db)")
    p.add_argument("--register-as", default="tabclustpfn",
                   help='MLflow registered model name (default: %(default)s; "" logs the model unregistered)')
    p.add_argument("--local", action="store_true", help="train in this process without Ray (same step code)")
    p.add_argument("--address", help="Ray cluster address (default: the job's cluster, else a local Ray)")
    p.add_argument("--placement-strategy", choices=["PACK", "SPREAD"], default="PACK",
                   help="where the Ray Train workers go: PACK (default) on as few nodes as fit them, SPREAD over "
                        "as many nodes as possible; each worker's node is an MLflow tag ray.node_id.rank<i>")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    given = {field: getattr(args, flag) for flag, (field, _, _) in FLAGS.items() if getattr(args, flag) is not None}
    if args.use_gpu:
        given["use_gpu"] = True
    try:
        base = (load_run_config(args.storage_path, args.resume) if args.resume
                else train_preset(args.preset or ("tiny" if args.smoke else "small"), smoke=args.smoke))
        if args.regime:
            if args.resume:
                raise ValueError("--regime sets a new run's prior; a resumed run keeps its saved one (drop --regime)")
            base = with_regime(base, args.regime)
        cfg = apply_overrides(apply_overrides(base, given), args.set)
        options = RunOptions(storage_path=args.storage_path, run_name=args.resume or args.run_name,
                             resume=bool(args.resume), tracking_uri=args.tracking_uri, output=args.output,
                             registered_model_name=args.register_as or None, backend="local" if args.local else "ray",
                             progress_interval_s=10.0 if args.smoke else 30.0,
                             placement_strategy=args.placement_strategy)
        if not args.local:
            init_ray(args.address)
        result = pretrain(cfg, options)
    except (ValueError, FileNotFoundError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"model checkpoint: {result.checkpoint}\nMLflow run: {result.run_id}  model: {result.model_uri}")
    print("final: " + "  ".join(f"{k} {v:.4g}" for k, v in sorted(result.metrics.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
