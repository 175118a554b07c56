"""Pretrain for a wall-clock budget in this process: no Ray, no MLflow (e.g. on a GPU machine lent for minutes).

    python jobs/pretrain_budget.py --budget-s 480 --out out/gpu-1 --device cuda --workers 14 \\
        --init-checkpoint model/weights/tabclustpfn-small.pt
    python jobs/pretrain_budget.py --budget-s 60 --out /tmp/b --smoke      # a one-minute CPU check

Probes the step time on the run's own data, decays the cosine over the wall-clock time to the deadline (or, with
``--schedule steps``, over the steps the probe says fit), trains, and writes OUT/model.pt (model checkpoint with
its lineage), OUT/history.jsonl and OUT/summary.json. Record the run in MLflow afterwards with
``jobs/track_history.py OUT``. See ``pipeline/budget.py``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

# This script is meant to run where the package is not installed (a lent GPU machine with a bare checkout), so it
# puts its own checkout first on the path: `python3 jobs/pretrain_budget.py` then works from any directory.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # prior workers: one thread each
    os.environ.setdefault(_var, "1")

from pipeline.budget import pretrain_for_budget  # noqa: E402
from pipeline.config import apply_overrides, train_preset  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget-s", type=float, required=True, help="wall-clock seconds for probe, training and export")
    p.add_argument("--out", required=True, help="output directory (model.pt, history.jsonl, summary.json)")
    p.add_argument("--state-dir", help="training states (default: OUT/state)")
    p.add_argument("--preset", choices=["small", "paper", "tiny"], help="default: small (tiny with --smoke)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: %(default)s)")
    p.add_argument("--precision", choices=["bf16", "fp32"], help="GPU forward pass (default: bf16)")
    p.add_argument("--workers", type=int, default=0, help="prior-generating processes (default: 0, inline)")
    p.add_argument("--batch-size", type=int, help="tasks per step (default: the preset's)")
    p.add_argument("--micro-batch", type=int, help="tasks per forward pass (default: the preset's)")
    p.add_argument("--lr", type=float, help="peak learning rate")
    p.add_argument("--warmup-steps", type=int, help="linear warm-up (capped at a fifth of the sized run)")
    p.add_argument("--val-every", type=int, help="steps between validations")
    p.add_argument("--checkpoint-every", type=int, help="steps between checkpoints (and model.pt updates)")
    p.add_argument("--seed", type=int, help="run seed (pick one no earlier phase used: new prior tasks)")
    p.add_argument("--init-checkpoint", help="start from these weights (model-format file)")
    p.add_argument("--max-steps-cap", type=int, help="never plan more steps than this")
    p.add_argument("--probe-steps", type=int, default=8, help="throughput probe steps (default: %(default)s)")
    p.add_argument("--step-s", type=float, help="seconds per step from an earlier run here: skip the probe")
    p.add_argument("--schedule", choices=["time", "steps"], default="time", help="cosine over the wall-clock time "
                   "to the deadline (ends decayed however far off the step estimate was) or over the estimated "
                   "steps (default: %(default)s)")
    p.add_argument("--reserve-s", type=float, default=20.0, help="seconds kept back (default: %(default)s)")
    p.add_argument("--note", default="", help="what this phase does, for the checkpoint's lineage")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any TrainConfig field")
    p.add_argument("--smoke", action="store_true", help="tiny preset, tiny tasks")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    given = {"global_batch": args.batch_size, "micro_batch": args.micro_batch, "optim.lr": args.lr,
             "optim.warmup_steps": args.warmup_steps, "val_every": args.val_every, "seed": args.seed,
             "checkpoint_every": args.checkpoint_every, "init_checkpoint": args.init_checkpoint,
             "precision": args.precision, "use_gpu": args.device.startswith("cuda") or None}
    try:
        base = train_preset(args.preset or ("tiny" if args.smoke else "small"), smoke=args.smoke)
        cfg = apply_overrides(apply_overrides(base, {k: v for k, v in given.items() if v is not None}), args.set)
        summary = pretrain_for_budget(cfg, args.budget_s, args.out, device=args.device, workers=args.workers,
                                      probe_steps=args.probe_steps, reserve_s=args.reserve_s,
                                      state_dir=args.state_dir, max_steps_cap=args.max_steps_cap,
                                      phase_note=args.note, step_s=args.step_s, schedule=args.schedule)
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({k: v for k, v in summary.items() if k != "train_config"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
