"""Pretraining throughput: tasks/s and the share of step time spent waiting on the prior stream.

Measures, in one run on this machine: the prior generator alone (tasks/s on one process), the single-process
loop (``run_local``, no Ray), and Ray Train with 1 and 2 workers fed by the Ray Data actor pool. Per-step figures
come from the metrics the loop logs (``tasks_per_s``, ``data_wait_fraction``); the first steps (start-up) are
dropped.

    python benchmarks/bench_train.py                       # small model, N 100-200, D 2-16, 16 tasks/step
    python benchmarks/bench_train.py --n-rows 500 1000 --n-features 2 64 --steps 4   # the paper's prior
    python benchmarks/bench_train.py --use-gpu --workers 1 --batch 64 --n-rows 500 1000 --n-features 2 64
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path

from pipeline.config import train_preset
from pipeline.prior_stream import StreamLayout, generate_row
from pipeline.ray_env import init_ray
from pipeline.train_loop import run_local


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="small", choices=["small", "paper", "tiny"])
    p.add_argument("--steps", type=int, default=6, help="steps per configuration (default: %(default)s)")
    p.add_argument("--skip", type=int, default=2, help="first steps not counted (default: %(default)s)")
    p.add_argument("--batch", type=int, default=16, help="tasks per step (default: %(default)s)")
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--n-rows", type=int, nargs=2, default=(100, 200))
    p.add_argument("--n-features", type=int, nargs=2, default=(2, 16))
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="Ray Train world sizes to measure")
    p.add_argument("--actors", type=int, default=2, help="prior actors (default: %(default)s)")
    p.add_argument("--actor-cpus", type=float, default=0.9, help="CPUs reserved per actor (default: %(default)s)")
    p.add_argument("--use-gpu", action="store_true")
    p.add_argument("--no-local", action="store_true", help="skip the single-process run")
    return p.parse_args()


def summarize(history: list[dict], skip: int) -> dict[str, float]:
    steps = history[skip:] or history
    return {"tasks_per_s": statistics.median(h["tasks_per_s"] for h in steps),
            "wait": statistics.mean(h["data_wait_fraction"] for h in steps),
            "step_s": statistics.median(h["step_time_s"] for h in steps), "n": len(steps)}


def ray_history(cfg, workdir: Path) -> list[dict]:
    from mlflow.tracking import MlflowClient

    from pipeline.pretrain import build_trainer

    uri = f"sqlite:///{workdir / 'bench.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment(f"bench-{time.time_ns()}", artifact_location=(workdir / "art").as_uri())
    run_id = client.create_run(exp).info.run_id
    build_trainer(cfg, workdir / f"run-{cfg.num_workers}", uri, run_id).fit()
    keys = ("tasks_per_s", "data_wait_fraction", "step_time_s")
    hist = {k: {m.step: m.value for m in client.get_metric_history(run_id, k)} for k in keys}
    return [{k: hist[k][s] for k in keys} for s in sorted(hist["tasks_per_s"])]


def main() -> None:
    args = parse_args()
    base = train_preset(args.preset)
    prior = dataclasses.replace(base.stream.prior, n_rows=tuple(args.n_rows), n_features=tuple(args.n_features))
    cfg = dataclasses.replace(base, max_steps=args.steps, global_batch=args.batch, micro_batch=args.micro_batch,
                              checkpoint_every=args.steps, val_tasks=0, use_gpu=args.use_gpu,
                              stream=dataclasses.replace(base.stream, prior=prior, num_actors=args.actors,
                                                                 actor_cpus=args.actor_cpus))
    print(f"preset {args.preset}: {args.batch} tasks/step, micro-batch {args.micro_batch}, N {args.n_rows}, "
          f"D {args.n_features}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    layout = StreamLayout(args.micro_batch, 1, 1, 0, 10**6)
    t0 = time.perf_counter()
    for row in range(3):
        generate_row(cfg.stream, 0, layout, row, cfg.model.max_categories)
    gen = 3 * args.micro_batch / (time.perf_counter() - t0)
    print(f"prior generation alone: {gen:.1f} tasks/s on one process")
    results = {}
    if not args.no_local:
        single = run_local(dataclasses.replace(cfg, num_workers=1), device="cuda" if args.use_gpu else "cpu")
        results["local (1 process, inline data)"] = summarize(single.history, args.skip)
    init_ray("local")
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workers:
            hist = ray_history(dataclasses.replace(cfg, num_workers=w, micro_batch=min(args.micro_batch,
                                                                                      args.batch // w)), Path(tmp))
            results[f"ray train, {w} worker{'s' * (w > 1)}"] = summarize(hist, args.skip)
    print(f"{'configuration':34s} {'tasks/s':>9s} {'step s':>8s} {'data wait':>10s} {'steps':>6s}")
    for name, r in results.items():
        print(f"{name:34s} {r['tasks_per_s']:9.2f} {r['step_s']:8.2f} {100 * r['wait']:9.1f}% {r['n']:6d}")
    one, two = results.get("ray train, 1 worker"), results.get("ray train, 2 workers")
    if one and two:
        print(f"2 workers / 1 worker: {two['tasks_per_s'] / one['tasks_per_s']:.2f}x")
    local = results.get("local (1 process, inline data)")
    if one and local:
        print(f"ray 1 worker / local: {one['tasks_per_s'] / local['tasks_per_s']:.2f}x")
    worst = max(r["wait"] for name, r in results.items() if name.startswith("ray"))
    print(f"largest data-wait share under Ray: {100 * worst:.1f}% (goal < 5%)")


if __name__ == "__main__":
    main()
