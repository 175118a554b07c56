"""Throughput of the synthetic priors and the GMM generator's speed against the original R MixSim.

    python benchmarks/bench_priors.py [--datasets 40] [--seeds 5] [--skip-mixsim]

1. Datasets per second per core (CPU time of this single-threaded process) for the mix, GMM and ZEUS priors at
   the median settings (N=750, D=33, K=6) and the largest (N=1000, D=64, K=10). Goal: >= 20 for the mix prior at
   the median settings, so that a 16-core node keeps a GPU busy.
2. For each of the 144 settings of the reference file's ``generator_timing`` (R MixSim 1.1-8, 20 seeds each,
   single-threaded R on a 2-core VM) the mean CPU seconds of :func:`priors.gmm.sample_mixture` over ``--seeds``
   seeds and the ratio ours / R. Settings where R takes >= 0.3 s per call are where we must not be slower.

Wall-clock figures are printed too; on a shared machine CPU time is the fairer per-core measure.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from priors import PriorConfig, sample_dataset
from priors.config import GMMConfig
from priors.gmm import InfeasibleTargetError, sample_mixture

REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "priors" / "data" / "mixsim_reference.json"
SETTINGS = {"median": (750, 33, 6), "largest": (1000, 64, 10)}
R_SLOW = 0.3  # seconds per call


def throughput(kind: str, n_rows: int, n_features: int, n_clusters: int, n_datasets: int) -> tuple[float, float]:
    """Datasets per CPU second and per wall second for fixed N, D, K."""
    config = replace(
        PriorConfig(), n_rows=(n_rows, n_rows), n_features=(n_features, n_features), n_clusters=(n_clusters, n_clusters)
    )
    sample_dataset(10**6, kind=kind, config=config)  # warm-up (imports, LAPACK initialisation)
    cpu, wall = time.process_time(), time.perf_counter()
    for seed in range(n_datasets):
        sample_dataset(seed, kind=kind, config=config)
    return n_datasets / (time.process_time() - cpu), n_datasets / (time.perf_counter() - wall)


def mixsim_comparison(n_seeds: int) -> list[dict]:
    """Mean CPU seconds of sample_mixture per reference setting, next to R's mean."""
    rows = []
    cfg = GMMConfig()  # max_redraws = 100 = MixSim's resN of the reference runs
    for ref in json.loads(REFERENCE.read_text())["generator_timing"]:
        times, failures = [], 0
        for seed in range(n_seeds):
            rng = np.random.default_rng(seed)
            start = time.process_time()
            try:
                sample_mixture(
                    rng, ref["p"], ref["K"], ref["MaxOmega_target"], cfg, spherical=ref["sph"], homoscedastic=ref["hom"]
                )
            except InfeasibleTargetError:
                failures += 1
            times.append(time.process_time() - start)
        ours = float(np.mean(times))
        ratio = ours / max(ref["seconds_mean"], 1e-3)
        rows.append({**ref, "ours": ours, "ours_success": 1.0 - failures / n_seeds, "ratio": ratio})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=40, help="datasets per throughput measurement")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per MixSim setting")
    parser.add_argument("--skip-mixsim", action="store_true", help="only the throughput part")
    args = parser.parse_args()
    with threadpool_limits(limits=1):
        print("datasets/s/core (CPU time; wall clock in brackets)")
        for name, (n, d, k) in SETTINGS.items():
            for kind in ("mix", "gmm", "zeus"):
                per_cpu, per_wall = throughput(kind, n, d, k, args.datasets)
                print(f"  {name:8s} N={n:4d} D={d:2d} K={k:2d}  {kind:4s}: {per_cpu:7.1f}  ({per_wall:7.1f} wall)")
                if name == "median" and kind == "mix":
                    print(f"  goal >= 20 datasets/s/core for the mix prior at median settings: {per_cpu:.1f} "
                          f"({'met' if per_cpu >= 20 else 'NOT met'})")
        if args.skip_mixsim:
            return 0
        rows = mixsim_comparison(args.seeds)
    print("\nGMM generator vs R MixSim (mean seconds per call; ratio = ours / R, R floored at 1 ms)")
    print("   K   p  target sph hom      R [s]   ours [s]   ratio  R ok  ours ok")
    for r in rows:
        flag = "  <- R slow" if r["seconds_mean"] >= R_SLOW else ""
        print(
            f"  {r['K']:2d}  {r['p']:2d}  {r['MaxOmega_target']:.2f}  {int(r['sph'])}   {int(r['hom'])}  "
            f"{r['seconds_mean']:9.4f}  {r['ours']:9.4f}  {r['ratio']:6.2f}  {r['success_rate']:4.2f}  "
            f"{r['ours_success']:4.2f}{flag}"
        )
    ratios = np.array([r["ratio"] for r in rows])
    slow = [r for r in rows if r["seconds_mean"] >= R_SLOW]
    print(f"\n  geometric mean ratio over all {len(rows)} settings: {np.exp(np.mean(np.log(ratios))):.3f}")
    total_r, total_ours = sum(r["seconds_mean"] for r in rows), sum(r["ours"] for r in rows)
    print(f"  total seconds, all settings: R {total_r:.2f}  ours {total_ours:.2f}")
    print(f"  settings where R is slow (>= {R_SLOW} s): {len(slow)}; worst ratio there "
          f"{max(r['ratio'] for r in slow):.2f}; slower than R in {sum(r['ratio'] > 1 for r in slow)} of them")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
