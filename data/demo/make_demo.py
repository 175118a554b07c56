"""Regenerate the demo tables clustered by ``python jobs/cluster.py`` with no arguments.

Each table is small (a few KB) and has a ground-truth column ``target`` that the demo run scores against and
keeps out of the features. Run from anywhere: ``python data/demo/make_demo.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SEED = 20240601


def blobs(rng: np.random.Generator) -> pd.DataFrame:
    """Three well-separated Gaussian blobs in 4 numeric columns (240 rows)."""
    centres = np.array([[0.0, 0.0, 0.0, 0.0], [4.0, 4.0, 0.0, 1.0], [0.0, 4.0, 4.0, -1.0]])
    y = rng.integers(0, 3, size=240)
    X = centres[y] + rng.normal(scale=0.8, size=(240, 4))
    df = pd.DataFrame(X.round(3), columns=["x1", "x2", "x3", "x4"])
    df["target"] = y
    return df


def customers(rng: np.random.Generator) -> pd.DataFrame:
    """Four customer segments: three numeric columns and a categorical ``region`` (300 rows)."""
    n, k = 300, 4
    y = rng.integers(0, k, size=n)
    age = np.array([25.0, 40.0, 55.0, 70.0])[y] + rng.normal(scale=4.0, size=n)
    income = np.array([30.0, 60.0, 90.0, 45.0])[y] + rng.normal(scale=8.0, size=n)
    visits = rng.poisson(np.array([2.0, 6.0, 3.0, 10.0])[y])
    regions = np.array(["north", "south", "east", "west"])
    prefs = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.7, 0.1], [0.1, 0.1, 0.1, 0.7]])
    region = np.array([rng.choice(regions, p=prefs[c]) for c in y])
    return pd.DataFrame({
        "age": age.round(1),
        "income_k": income.round(1),
        "visits_per_month": visits,
        "region": pd.Categorical(region, categories=list(regions)),
        "target": y,
    })


def elongated(rng: np.random.Generator) -> pd.DataFrame:
    """Two elongated, correlated clusters in 6 numeric columns (200 rows)."""
    n, d = 200, 6
    y = rng.integers(0, 2, size=n)
    A = rng.normal(size=(d, d)) * np.array([3.0, 1.0, 0.5, 0.5, 0.3, 0.3])
    X = rng.normal(size=(n, d)) @ A.T * 0.5 + np.where(y[:, None] == 1, 3.0, -3.0) * np.eye(d)[1]
    df = pd.DataFrame(X.round(3), columns=[f"f{j}" for j in range(d)])
    df["target"] = y
    return df


def main() -> None:
    """Write ``blobs.csv``, ``customers.parquet`` and ``elongated.csv`` next to this script."""
    rng = np.random.default_rng(SEED)
    blobs(rng).to_csv(HERE / "blobs.csv", index=False)
    customers(rng).to_parquet(HERE / "customers.parquet", index=False)
    elongated(rng).to_csv(HERE / "elongated.csv", index=False)


if __name__ == "__main__":
    main()
