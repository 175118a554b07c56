"""The full-covariance mixture's EM (``model.refinement.full_em``, the BIC path's and ``refine="gmm"``'s on tables of
few columns): its time against the same EM written one component at a time, and against scikit-learn's.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_full_mixture.py --out docs/results/bench-full-mixture

Per shape (rows N, design columns P, components K) a table of K Gaussian clusters is drawn and EM run from a
k-means++ partition with 20% of its rows relabelled at random, for a fixed number of steps (no stopping rule):

- ``full_em``: today's, every component at once (batched eigendecompositions, Cholesky factors and their inverses);
- ``per-component``: the same EM, one component at a time through scipy's triangular solve (the implementation
  ``full_em`` had until 2026-12-03), as the reference it must agree with: the labels are compared;
- ``sklearn``: ``GaussianMixture(covariance_type="full")`` for the same number of steps, its weights, means and
  precisions started at the partition's (``reg_covar`` 1e-6 instead of the eigenvalue floor, so its labels may
  differ), the peer users know.

Times are the minimum over ``--repeats`` runs (the three alternate), once with the BLAS thread pools at their
defaults (as a user's process runs) and once held to one thread (threadpoolctl; as ``jobs/evaluate.py`` runs a
method). Prints and, with ``--out``, writes ``OUT.md`` and ``OUT.csv``: per setting and shape the seconds, the ratios
to ``full_em`` and whether ``per-component`` gave the same labels."""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd

#: (N, P, K): the BIC path's tables (2-4 columns, up to 1,000 rows, K 2..10).
SHAPES = ((150, 2, 3), (300, 2, 6), (1000, 2, 10), (300, 3, 4), (500, 4, 6), (1000, 4, 10))
STEPS = 30
FLOOR = 0.01


def per_component_em(X: np.ndarray, labels: np.ndarray, k: int, steps: int, floor: float) -> np.ndarray:
    """The reference: ``full_em``'s EM (same floor, empty components kept at weight 0), one component at a time."""
    from scipy.linalg import solve_triangular

    n, p = X.shape
    resp = np.zeros((n, k))
    resp[np.arange(n), labels] = 1.0
    means, chol = np.zeros((k, p)), np.broadcast_to(np.eye(p), (k, p, p)).copy()
    for _ in range(steps):
        mass = resp.sum(0)
        kept = np.flatnonzero(mass > 1e-12)
        for c in kept:
            means[c] = resp[:, c] @ X / mass[c]
            diff = X - means[c]
            values, vectors = np.linalg.eigh((resp[:, c, None] * diff).T @ diff / mass[c])
            chol[c] = np.linalg.cholesky((vectors * np.maximum(values, floor)) @ vectors.T)
        logits = np.full((n, k), -np.inf)
        for c in kept:
            z = solve_triangular(chol[c], (X - means[c]).T, lower=True, check_finite=False)
            logits[:, c] = -0.5 * (z**2).sum(0) - np.log(np.diagonal(chol[c])).sum() + np.log(mass[c] / n)
        resp = np.exp(logits - logits.max(1, keepdims=True))
        resp /= resp.sum(1, keepdims=True)
    return resp.argmax(1)


def sklearn_em(X: np.ndarray, labels: np.ndarray, k: int, steps: int) -> np.ndarray:
    """scikit-learn's full-covariance EM for ``steps`` steps, its weights, means and precisions started at the
    partition's (every component must hold rows)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    weights = np.bincount(labels, minlength=k) / len(X)
    means = np.stack([X[labels == c].mean(0) for c in range(k)])
    precisions = np.stack([np.linalg.inv(np.cov(X[labels == c].T, bias=True).reshape(X.shape[1], X.shape[1])
                                         + 1e-6 * np.eye(X.shape[1])) for c in range(k)])
    gmm = GaussianMixture(k, covariance_type="full", max_iter=steps, tol=0.0, weights_init=weights,
                          means_init=means, precisions_init=precisions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return gmm.fit_predict(X)


def table(n: int, p: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """K Gaussian clusters in P columns (random covariances), z-normalised, and a start: k-means++ with 20 % of the
    rows relabelled at random."""
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = np.empty((n, p))
    for c in range(k):
        A = rng.normal(size=(p, p)) * rng.uniform(0.2, 1.0, p)
        X[y == c] = rng.normal(size=((y == c).sum(), p)) @ A.T + rng.normal(scale=3.0, size=p)
    X = (X - X.mean(0)) / X.std(0)
    start = KMeans(k, n_init=1, random_state=seed).fit_predict(X)
    flip = rng.random(n) < 0.2
    start[flip] = rng.integers(0, k, flip.sum())
    return X, start


def measure(shapes=SHAPES, repeats: int = 5, steps: int = STEPS, seed: int = 0) -> pd.DataFrame:
    from threadpoolctl import threadpool_limits

    rows = []
    for threads in ("default", 1):
        with threadpool_limits(None if threads == "default" else threads):
            rows += [{"BLAS threads": str(threads), **row} for row in _measure(shapes, repeats, steps, seed)]
    return pd.DataFrame(rows)


def _measure(shapes, repeats: int, steps: int, seed: int) -> list[dict]:
    from model.refinement import full_em

    rows = []
    for n, p, k in shapes:
        X, start = table(n, p, k, seed)
        runs = {"full_em": lambda: full_em(X, start, k, steps=steps, floor=FLOOR)[0],
                "per-component": lambda: per_component_em(X, start, k, steps, FLOOR),
                "sklearn": lambda: sklearn_em(X, start, k, steps)}
        times = {name: [] for name in runs}
        labels = {}
        for _ in range(repeats):
            for name, run in runs.items():
                t0 = time.perf_counter()
                labels[name] = run()
                times[name].append(time.perf_counter() - t0)
        best = {name: min(t) for name, t in times.items()}
        rows.append({"N": n, "P": p, "K": k, "steps": steps, **{f"{name}_s": s for name, s in best.items()},
                     "per-component / full_em": best["per-component"] / best["full_em"],
                     "sklearn / full_em": best["sklearn"] / best["full_em"],
                     "same labels as per-component": bool(np.array_equal(labels["full_em"], labels["per-component"]))})
    return rows


def report(df: pd.DataFrame, command: str) -> list[str]:
    from pipeline.evaluation.report import machine_lines

    lines = ["# The full-covariance mixture's EM: batched against one component at a time and scikit-learn", "",
             "| BLAS threads | N | P | K | steps | full_em (ms) | per-component (ms) | sklearn (ms) "
             "| per-component / full_em | sklearn / full_em | same labels as per-component |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in df.to_dict("records"):
        lines.append(f"| {r['BLAS threads']} | {r['N']} | {r['P']} | {r['K']} | {r['steps']} | "
                     f"{1e3 * r['full_em_s']:.1f} | {1e3 * r['per-component_s']:.1f} | {1e3 * r['sklearn_s']:.1f} | "
                     f"{r['per-component / full_em']:.2f} | {r['sklearn / full_em']:.2f} | "
                     f"{'yes' if r['same labels as per-component'] else 'no'} |")
    lines.append("")
    for threads, part in df.groupby("BLAS threads", sort=False):
        ratio, peer = part["per-component / full_em"], part["sklearn / full_em"]
        lines.append(f"BLAS threads {threads}: per-component / full_em median {ratio.median():.2f} (min "
                     f"{ratio.min():.2f}, max {ratio.max():.2f}), sklearn / full_em median {peer.median():.2f} over "
                     f"{len(part)} shapes; labels equal on {int(part['same labels as per-component'].sum())} of "
                     f"{len(part)}.")
    return [*lines, "", f"Command: `{command}`", *machine_lines()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--out", default=None, help="write OUT.md and OUT.csv (default: print only)")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.steps < 1:
        ap.error("--repeats and --steps must be >= 1")
    df = measure(repeats=args.repeats, steps=args.steps)
    given = sys.argv[1:] if argv is None else list(argv)
    lines = report(df, "python benchmarks/bench_full_mixture.py " + " ".join(given))
    print("\n".join(lines))
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        df.to_csv(args.out + ".csv", index=False)
        with open(args.out + ".md", "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
