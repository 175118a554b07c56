"""Easy tables: isotropic Gaussian blobs (``sklearn.datasets.make_blobs``), TabClustPFN against KMeans + silhouette.

A sanity check the suites do not make: well-separated spherical clusters are k-means' home ground and the case a
user tries first. For each N, D, K and seed: the K each method chooses (2..10) and its ARI, summarised per N and
per true K (how often K is right, the median and mean ARI, the K each picked).

Run from the repository root: ``PYTHONPATH=. .venv/bin/python benchmarks/blobs_sanity.py [--n 240 600]
[--d 2 4 8] [--k 2 3 4 6] [--seeds 3]`` (about 2 minutes with the defaults on 2 cores).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from model.estimator import TabClustPFN
from pipeline.evaluation.methods import silhouette_select


def run(ns, ds, ks, seeds: int, checkpoint: str | None = None) -> list[dict]:
    est = TabClustPFN(checkpoint=checkpoint, random_state=0)
    rows = []
    for n in ns:
        for d in ds:
            for k in ks:
                for seed in range(seeds):
                    X, y = make_blobs(n_samples=n, n_features=d, centers=k, cluster_std=1.0,
                                      center_box=(-10.0, 10.0), random_state=seed)
                    est.fit(X)
                    labels_km, k_km = silhouette_select("KMeans", X, seed=0)  # the suites' KMeans+
                    rows.append({"n": n, "d": d, "k": k, "seed": seed,
                                 "pfn_k": int(est.n_clusters_), "pfn_ari": adjusted_rand_score(y, est.labels_),
                                 "km_k": k_km, "km_ari": adjusted_rand_score(y, labels_km)})
    return rows


def report(rows: list[dict]) -> list[str]:
    lines = []
    for n in sorted({r["n"] for r in rows}):
        part = [r for r in rows if r["n"] == n]
        lines.append(
            f"N={n} ({len(part)} tables): TabClustPFN K right {np.mean([r['pfn_k'] == r['k'] for r in part]):.2f}, "
            f"ARI median {np.median([r['pfn_ari'] for r in part]):.3f} mean {np.mean([r['pfn_ari'] for r in part]):.3f}"
            f" | KMeans+ K right {np.mean([r['km_k'] == r['k'] for r in part]):.2f}, "
            f"ARI median {np.median([r['km_ari'] for r in part]):.3f} mean {np.mean([r['km_ari'] for r in part]):.3f}")
        for k in sorted({r["k"] for r in part}):
            at_k = [r for r in part if r["k"] == k]
            lines.append(f"  K={k}: TabClustPFN picks {[r['pfn_k'] for r in at_k]} | KMeans+ "
                         f"{[r['km_k'] for r in at_k]}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[240, 600])
    parser.add_argument("--d", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--k", type=int, nargs="+", default=[2, 3, 4, 6])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--checkpoint", default=None, help="default: the shipped weights")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    print("\n".join(report(run(args.n, args.d, args.k, args.seeds, args.checkpoint))))


if __name__ == "__main__":
    main()
