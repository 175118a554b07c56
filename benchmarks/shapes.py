"""Write a development set of low-dimensional cluster shapes as Parquet tables for ``jobs/evaluate.py --data``.

    PYTHONPATH=. .venv/bin/python benchmarks/shapes.py --out outputs/shapes
    PYTHONPATH=. .venv/bin/python jobs/evaluate.py --data outputs/shapes --output outputs/eval-shapes \\
        --calibration-size 0 --methods 'TabClustPFN' 'TabClustPFN*' 'KMeans+' 'KMeans*' 'GMM+' 'GMM*' 'GMM-BIC' 'Agg+'
    PYTHONPATH=. .venv/bin/python benchmarks/shapes.py --by-kind docs/results/evaluation-shapes.csv \\
        --out docs/results/shapes-by-kind.md

Public clustering batteries are mostly tables of 2-3 features: shapes that are not Gaussian blobs, which the
paper's prior (Gaussian mixtures, and ZEUS's iResNet-warped ones) does not aim at. This set asks how the shipped
model does on the classic kinds, generated (so it is development data: nothing here is a test suite):

- ``moons`` (2 interleaved half circles), ``circles`` (2 concentric rings): non-convex, K = 2;
- ``aniso`` (3 blobs sheared by one linear map), ``varied`` (3 blobs of standard deviation 1, 2.5 and 0.5),
  ``elongated`` (3 parallel bars, 10 times longer than wide): Gaussian but far from spherical, K = 3;
- ``blobs`` (K in 3..6 isotropic blobs, 2-3 features): the easy case.

Each kind at N in {300, 600, 1000}, ``--seeds`` seeds (default 3): 6 x 3 x 3 = 54 tables, each with a ``target``
column. Deterministic given the seed. ``--by-kind RESULTS.csv`` summarises an evaluation of the set per kind:
each method's median ARI and median K.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

KINDS = ("moons", "circles", "aniso", "varied", "elongated", "blobs")
SIZES = (300, 600, 1000)


def shape_table(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One table of ``kind`` (see the module docstring) -> X (n, D), labels (n,)."""
    from sklearn.datasets import make_blobs, make_circles, make_moons

    rng = np.random.default_rng(seed)
    if kind == "moons":
        return make_moons(n, noise=0.08, random_state=seed)
    if kind == "circles":
        return make_circles(n, noise=0.05, factor=0.5, random_state=seed)
    if kind == "aniso":
        X, y = make_blobs(n, centers=3, random_state=seed)
        return X @ np.array([[0.6, -0.6], [-0.4, 0.8]]), y
    if kind == "varied":
        return make_blobs(n, centers=3, cluster_std=[1.0, 2.5, 0.5], random_state=seed)
    if kind == "elongated":
        y = rng.integers(0, 3, n)
        return np.c_[rng.normal(scale=5.0, size=n), 3.0 * y + rng.normal(scale=0.5, size=n)], y
    if kind == "blobs":
        k, d = int(rng.integers(3, 7)), int(rng.integers(2, 4))
        return make_blobs(n, n_features=d, centers=k, random_state=seed)
    raise ValueError(f"unknown kind {kind!r}: use one of {KINDS}")


def shape_frame(kind: str, n: int, seed: int) -> tuple[str, pd.DataFrame, np.ndarray]:
    """One table as (name, frame of columns x0, x1, ..., labels)."""
    X, y = shape_table(kind, n, seed)
    return f"{kind}_n{n}_s{seed}", pd.DataFrame(np.asarray(X, np.float64)).add_prefix("x"), np.asarray(y, np.int64)


def many_blobs_frame(i: int) -> tuple[str, pd.DataFrame, np.ndarray]:
    """Table ``i`` of the ``many-blobs`` development set (``benchmarks/choose_checkpoint.py``): 7-10 isotropic Gaussian
    blobs of standard deviations U(0.5, 1.5) in 2-3 features, N in {300, 600, 1000}, seeded by ``i``; the many-cluster
    Gaussian tables of few columns (BIC fits them many components) that the shapes' ``blobs`` (3-6) lack."""
    from sklearn.datasets import make_blobs

    rng = np.random.default_rng(i)
    k, d, n = int(rng.integers(7, 11)), int(rng.integers(2, 4)), int(rng.choice(SIZES))
    X, y = make_blobs(n, n_features=d, centers=k, cluster_std=rng.uniform(0.5, 1.5, k), random_state=i)
    return f"many-blobs_{i}", pd.DataFrame(np.asarray(X, np.float64)).add_prefix("x"), np.asarray(y, np.int64)


def many_ellipses_frame(i: int) -> tuple[str, pd.DataFrame, np.ndarray]:
    """Table ``i`` of the ``many-ellipses`` development set (``benchmarks/choose_checkpoint.py``): 7-10 Gaussian
    clusters in 2-3 features, each the image of a standard normal under its own random linear map (entries N(0, 1)
    times U(0.3, 1.2): elongated, tilted, of unequal spread), centres uniform in [-10, 10] per feature, rows assigned
    uniformly, N in {300, 600, 1000}, seeded by ``i``; ``many-blobs``' tables with the blobs no longer round."""
    rng = np.random.default_rng(i)
    k, d, n = int(rng.integers(7, 11)), int(rng.integers(2, 4)), int(rng.choice(SIZES))
    centres = rng.uniform(-10.0, 10.0, (k, d))
    maps = rng.normal(size=(k, d, d)) * rng.uniform(0.3, 1.2, (k, 1, 1))
    y = rng.integers(0, k, n)
    X = centres[y] + np.einsum("nij,nj->ni", maps[y], rng.normal(size=(n, d)))
    return f"many-ellipses_{i}", pd.DataFrame(X).add_prefix("x"), np.unique(y, return_inverse=True)[1].astype(np.int64)


def ratings_frame(i: int) -> tuple[str, pd.DataFrame, np.ndarray]:
    """Table ``i`` of the ``ratings`` development set (``benchmarks/choose_checkpoint.py``): 2-4 columns of integer
    ratings on a 1-5 or 1-7 scale, 2-5 classes of uniform shares, each class's mean rating per column uniform over the
    scale, within-class spread N(0, s) with s ~ U(0.4, 1.0), rounded and clipped to the scale; N uniform in 300-999,
    seeded by ``i``. The questionnaire tables of issue 28's named case (integer levels 1..5, 3 classes, K = 9)."""
    rng = np.random.default_rng(i)
    k, d, n = int(rng.integers(2, 6)), int(rng.integers(2, 5)), int(rng.integers(300, 1000))
    top = int(rng.choice([5, 7]))
    means, spread = rng.uniform(1, top, (k, d)), rng.uniform(0.4, 1.0)
    y = rng.integers(0, k, n)
    X = np.clip(np.rint(means[y] + spread * rng.standard_normal((n, d))), 1, top).astype(np.int64)
    return f"ratings_{i}", pd.DataFrame(X).add_prefix("q"), np.unique(y, return_inverse=True)[1].astype(np.int64)


def level_clusters_frame(i: int) -> tuple[str, pd.DataFrame, np.ndarray]:
    """Table ``i`` of the ``level-clusters`` development set (``benchmarks/choose_checkpoint.py``): 2-4 columns in
    which 1-2 integer columns are codes of the clusters themselves (a cylinder count beside fuel use, a grade beside a
    score): 2-5 clusters of uniform shares; per code column each cluster has its own level (1..K, shuffled), two of
    them sharing one with probability 0.3, and a share U(0, 0.2) of its rows get a random level; the other columns
    continuous, cluster means N(0, s^2) per column with s ~ U(0, 2) (0: noise) and unit spread; N uniform in
    300-999, seeded by ``i``. The few-level clusters that spreading levels over their cells can blur."""
    rng = np.random.default_rng(i)
    k, d, n = int(rng.integers(2, 6)), int(rng.integers(2, 5)), int(rng.integers(300, 1000))
    codes = int(rng.integers(1, min(2, d - 1) + 1)) if d > 2 else 1
    y = rng.integers(0, k, n)
    columns = {}
    for c in range(codes):
        level = rng.permutation(k) + 1
        if k > 2 and rng.random() < 0.3:  # two clusters share a level: the code alone does not tell them apart
            a, b = rng.choice(k, 2, replace=False)
            level[b] = level[a]
        values = level[y]
        noisy = rng.random(n) < rng.uniform(0.0, 0.2)
        values[noisy] = rng.integers(1, k + 1, int(noisy.sum()))
        columns[f"code{c}"] = values.astype(np.int64)
    for j in range(d - codes):
        means = rng.normal(0.0, rng.uniform(0.0, 2.0), k)
        columns[f"x{j}"] = means[y] + rng.standard_normal(n)
    return f"level-clusters_{i}", pd.DataFrame(columns), np.unique(y, return_inverse=True)[1].astype(np.int64)


def shape_frames(n_tables: int, offset: int = 0):
    """Tables ``offset .. offset + n_tables - 1`` of the set in a fixed order: seed by seed, each seed every kind at
    every size (so the first ``3 * len(KINDS) * len(SIZES)`` are those ``write_set(seeds=3)`` writes; an offset
    past them is a fresh draw) -> (name, frame, labels) each, the frame z-normalised as ``jobs/evaluate.py`` loads
    the written set."""
    from pipeline.evaluation.suites import preprocess_table

    per_seed = len(KINDS) * len(SIZES)
    for j in range(offset, offset + n_tables):
        name, frame, y = shape_frame(KINDS[(j % per_seed) // len(SIZES)], SIZES[j % len(SIZES)], j // per_seed)
        yield name, preprocess_table(frame)[0], y


def write_set(out: Path, seeds: int) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind in KINDS:
        for n in SIZES:
            for seed in range(seeds):
                name, frame, y = shape_frame(kind, n, seed)
                frame["target"] = y
                path = out / f"{name}.parquet"
                frame.to_parquet(path, index=False)
                paths.append(path)
    return paths


def by_kind(results: pd.DataFrame) -> pd.DataFrame:
    """An evaluation's ``results.csv`` of this set -> per kind and method: tables, median ARI, median K chosen."""
    df = results[results["status"] == "ok"].assign(kind=results["dataset"].str.split("_").str[0])
    out = df.groupby(["kind", "method"]).agg(tables=("ari", "size"), median_ari=("ari", "median"),
                                             median_k=("k_pred", "median"), k_true=("k_true", "median"))
    return out.reset_index()


def by_kind_report(results_csv: str, out: str | None = None) -> str:
    table = by_kind(pd.read_csv(results_csv))
    methods = [m for m in ("TabClustPFN", "TabClustPFN*", "KMeans+", "GMM+", "GMM-BIC", "Agg+")
               if m in set(table["method"])]
    lines = ["# Cluster shapes by kind (development data, `benchmarks/shapes.py`): median ARI (median K chosen)", "",
             "| kind | tables | true K (median) | " + " | ".join(methods) + " |",
             "|---|---|---|" + "---|" * len(methods)]
    for kind in (k for k in KINDS if k in set(table["kind"])):
        part = table[table["kind"] == kind].set_index("method")
        cells = [f"{part.loc[m, 'median_ari']:.3f} ({part.loc[m, 'median_k']:g})" for m in methods]
        lines.append(f"| {kind} | {int(part['tables'].iloc[0])} | {part['k_true'].iloc[0]:g} | " + " | ".join(cells)
                     + " |")
    command = f"python benchmarks/shapes.py --by-kind {results_csv}" + (f" --out {out}" if out else "")
    return "\n".join([*lines, "", f"Command: `{command}`", ""])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="the set's folder (default: outputs/shapes), or with --by-kind the "
                                                "report's .md (default: print only)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--by-kind", default=None, metavar="RESULTS_CSV",
                    help="summarise an evaluation of the set per kind instead of writing the set")
    args = ap.parse_args(argv)
    if args.by_kind:
        text = by_kind_report(args.by_kind, args.out)
        print(text)
        if args.out:
            Path(args.out).write_text(text)
        return
    out = args.out or "outputs/shapes"
    paths = write_set(Path(out), args.seeds)
    print(f"{len(paths)} tables in {out}")


if __name__ == "__main__":
    main()
