"""How a checkpoint's known-K partition holds up across table sizes: median ARI by N and by D, beside KMeans*.

    PYTHONPATH=. .venv/bin/python benchmarks/size_generalization.py model/weights/tabclustpfn-small.pt runs/x/model.pt

For each (N, D) cell of the grid it draws ``--tasks`` prior tasks of exactly that size (seeds far from the training
and validation ranges), clusters each with the true K by k-means (``n_init=10``) and by every checkpoint, and prints
the median ARIs and each checkpoint's ratio to k-means. One row sweeps N at a fixed D and one sweeps D at a fixed
N, so the table says which of the two a checkpoint fails to generalise over (it decides where training compute
goes: a network that generalises over N can train on small tables). ~1 minute per checkpoint at the defaults.
The network gets ZEUS's categorical columns typed as categories; k-means sees their integer codes as numbers.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from model.estimator import TabClustPFN  # noqa: E402
from pipeline.evaluation.suites import prior_frame  # noqa: E402
from priors import PriorConfig, sample_dataset  # noqa: E402

SEED_BASE = 10**9  # training streams draw from small seeds, validation from 2**62 + i


def grid(n_values: list[int], d_values: list[int], n_fixed: int, d_fixed: int) -> list[tuple[int, int]]:
    """(N, D) cells: every N at ``d_fixed``, then every D at ``n_fixed`` (the shared cell once)."""
    cells = [(n, d_fixed) for n in n_values] + [(n_fixed, d) for d in d_values]
    return list(dict.fromkeys(cells))


def tasks_of_size(n: int, d: int, kind: str, count: int):
    cfg = dataclasses.replace(PriorConfig(), n_rows=(n, n), n_features=(d, d))
    return [sample_dataset(SEED_BASE + 100_000 * d + 1_000 * (n % 100) + n + i * 7919, kind=kind, config=cfg)
            for i in range(count)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--kind", choices=["gmm", "zeus", "mix"], default="gmm")
    p.add_argument("--tasks", type=int, default=20, help="tasks per cell")
    p.add_argument("--n-values", type=int, nargs="+", default=[150, 300, 600, 1000])
    p.add_argument("--d-values", type=int, nargs="+", default=[2, 8, 16, 32, 64])
    p.add_argument("--n-fixed", type=int, default=300)
    p.add_argument("--d-fixed", type=int, default=8)
    args = p.parse_args()
    torch.set_num_threads(1)
    models = [TabClustPFN(checkpoint=c, device="cpu") for c in args.checkpoints]
    print(f"{args.kind} prior, {args.tasks} tasks per cell, median ARI with the true K "
          f"(ratio to KMeans* in brackets)")
    print(f"{'N':>5s} {'D':>3s} {'KMeans*':>8s}  " + "  ".join(f"{c[-40:]:>40s}" for c in args.checkpoints))
    for n, d in grid(args.n_values, args.d_values, args.n_fixed, args.d_fixed):
        tasks = tasks_of_size(n, d, args.kind, args.tasks)
        km = np.median([adjusted_rand_score(t.y, KMeans(t.n_clusters, n_init=10, random_state=0).fit_predict(t.X))
                        for t in tasks])
        cells = []
        for model in models:
            ari = np.median([adjusted_rand_score(t.y, model.set_params(n_clusters=t.n_clusters)
                                                 .fit_predict(prior_frame(t.X, t.categorical))) for t in tasks])
            cells.append(f"{ari:.3f} ({ari / km:.2f})" if km > 0 else f"{ari:.3f}")
        print(f"{n:5d} {d:3d} {km:8.3f}  " + "  ".join(f"{c:>40s}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
