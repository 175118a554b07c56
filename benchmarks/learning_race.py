"""A short from-scratch learning race between model variants on the same data (an architecture check on a CPU).

Each variant trains the ``small`` network from random weights for ``--steps`` steps on the same prior tasks (same
run seed) with Matching+CE, then reports the median known-K ARI on held-out tasks at half-way and at the end, and
the Matching+CE loss by quarter. This is how ``value_skip``, ``proto_competition``, ``proto_seeding`` and
``row_updates`` were chosen (docs/DESIGN.md):

    PYTHONPATH=. .venv/bin/python benchmarks/learning_race.py \\
        --variant paper model.value_skip=false model.proto_competition=false \\
        --variant skip model.value_skip=true model.proto_competition=false \\
        --variant skip+competition --steps 300 --prior gmm

Variants run one after the other (one torch thread each); ~3 minutes per variant at the defaults on one core.
A ``--variant NAME`` with no overrides is the current ``small`` preset.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from pipeline.config import apply_overrides, train_preset
from pipeline.train_loop import run_local


def race_config(steps: int, prior: str, lr: float, seed: int, overrides: list[str]):
    """The training config of one variant: ``small`` with a short Matching+CE schedule on small tasks."""
    cfg = apply_overrides(train_preset("small"), {
        "max_steps": steps, "global_batch": 16, "micro_batch": 16, "optim.lr": lr, "optim.warmup_steps": 30,
        "objective.warmup_matching_steps": 10**6, "objective.cin_weight": 0, "val_tasks": 32,
        "val_every": max(1, steps // 2), "checkpoint_every": steps, "stream.prior.n_rows": [100, 200],
        "stream.prior.n_features": [2, 16], "stream.kind": prior, "seed": seed})
    return apply_overrides(cfg, overrides)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", nargs="+", action="append", required=True, metavar="NAME [KEY=VALUE ...]")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--prior", choices=["gmm", "zeus", "mix"], default="gmm")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(1)
    print(f"{'variant':24s} {'ARI half':>9s} {'ARI end':>8s}  Matching+CE by quarter            seconds")
    for name, *overrides in args.variant:
        cfg = race_config(args.steps, args.prior, args.lr, args.seed, overrides)
        t0 = time.perf_counter()
        result = run_local(cfg)
        vals = [h["val_ari_known_k"] for h in result.history if "val_ari_known_k" in h]
        q = max(1, args.steps // 4)
        quarters = [statistics.mean(h["pin_loss"] for h in result.history[i:i + q]) for i in range(0, args.steps, q)]
        print(f"{name:24s} {vals[0]:9.3f} {vals[-1]:8.3f}  {' '.join(f'{x:.3f}' for x in quarters):32s} "
              f"{time.perf_counter() - t0:7.0f}", flush=True)


if __name__ == "__main__":
    main()
