"""Fixed tables the shipped weights' answers are pinned on (tests/model/test_shipped_answers.py).

    PYTHONPATH=. .venv/bin/python -m tests.model.shipped_cases --write

rewrites ``tests/model/shipped_answers.json`` from today's estimator with its defaults: run it only when a change
to the shipped model's answers is intended (new weights or a new default chosen under docs/DESIGN.md's decision
protocol), and commit the new file with that change, so the diff shows which answers moved.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import adjusted_rand_score

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"
ANSWERS = Path(__file__).resolve().parent / "shipped_answers.json"


def _separated_groups(n_features: int, shift: float, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """600 rows in two groups of 300, every feature shifted by ``shift`` between them."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], 300)
    return pd.DataFrame(rng.normal(size=(600, n_features)) + shift * y[:, None]).add_prefix("x"), y


def _one_informative(n_noise: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Two groups 6 SD apart in feature 0, ``n_noise`` pure-noise features beside it, 600 rows."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], 300)
    X = np.c_[6.0 * y + rng.normal(size=600), rng.normal(size=(600, n_noise))]
    return pd.DataFrame(X).add_prefix("x"), y


def _mixed(seed: int = 3) -> tuple[pd.DataFrame, np.ndarray]:
    """Three groups in 3 numeric and 2 categorical columns, 450 rows, a few missing values."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], 150)
    centres = np.array([[0, 0, 0], [3, -3, 0], [0, 3, 3]], float)
    frame = pd.DataFrame(centres[y] + rng.normal(size=(450, 3)), columns=["a", "b", "c"])
    levels = np.array([["p", "q"], ["q", "r"], ["r", "p"]])
    frame["cat1"] = pd.Categorical(levels[y, rng.integers(0, 2, 450)])
    frame["cat2"] = pd.Categorical(rng.choice(["u", "v", "w"], 450))
    frame.loc[rng.choice(450, 10, replace=False), "a"] = np.nan
    return frame, y


def _categorical_noise(seed: int = 5) -> tuple[pd.DataFrame, np.ndarray]:
    """Three groups 4 SD apart in 3 numeric columns, 300 rows, and a 3-level categorical column of pure noise."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], 100)
    frame = pd.DataFrame(4.0 * y[:, None] + rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    frame["region"] = pd.Categorical(rng.choice(["north", "south", "east"], 300))
    return frame, y


def _ratings(seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Issue 28's questionnaire: 4 columns of integer ratings 1-5, 3 classes of 200 rows, each class's mean rating
    per column uniform in 1.5-4.5, within-class spread 0.8, rounded and clipped (it came out K = 9 once)."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], 200)
    centres = rng.uniform(1.5, 4.5, (3, 4))
    X = np.clip(np.round(centres[y] + rng.normal(0, 0.8, (600, 4))), 1, 5).astype(np.int64)
    return pd.DataFrame(X, columns=list("abcd")), y


def _large(seed: int = 4) -> tuple[pd.DataFrame, np.ndarray]:
    """1,500 rows in four groups, more than the 1,000-row context: the chunked path."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, 1500)
    centres = rng.normal(scale=4.0, size=(4, 6))
    return pd.DataFrame(centres[y] + rng.normal(size=(1500, 6))).add_prefix("x"), y


def _demo(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    path = DEMO / name
    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    return frame.drop(columns="target"), frame["target"].to_numpy()


def cases() -> dict[str, tuple[pd.DataFrame, np.ndarray]]:
    """name -> (table, true labels)."""
    return {
        "demo_blobs": _demo("blobs.csv"),
        "demo_customers": _demo("customers.parquet"),
        "demo_elongated": _demo("elongated.csv"),
        "blobs_d65": _separated_groups(65, 1.0, seed=1),
        "blobs_d128": _separated_groups(128, 1.0, seed=2),
        "one_informative_1_noise": _one_informative(1),
        "one_informative_3_noise": _one_informative(3),
        "one_informative_7_noise": _one_informative(7),
        "mixed_categorical": _mixed(),
        "categorical_noise": _categorical_noise(),
        "large_chunked": _large(),
        "ratings_4_columns_3_classes": _ratings(),
    }


def labels_digest(labels: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(labels, dtype=np.int64).tobytes()).hexdigest()[:16]


def answer(estimator, frame: pd.DataFrame, y: np.ndarray) -> dict:
    """What is pinned for one table: K, the labels' digest and the ARI against the true labels."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the PCA warning of the wide tables
        labels = estimator.fit_predict(frame)
    return {"k": int(estimator.n_clusters_), "labels_sha256": labels_digest(labels),
            "ari": round(float(adjusted_rand_score(y, labels)), 4)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {ANSWERS.name}")
    args = ap.parse_args(argv)
    from model.checkpoint import load_checkpoint, weights_sha256
    from model.estimator import TabClustPFN, default_checkpoint_path

    net, _ = load_checkpoint(default_checkpoint_path())
    pinned = {"weights_sha256": weights_sha256(net.state_dict()),
              "cases": {name: answer(TabClustPFN(random_state=0), frame, y)
                        for name, (frame, y) in cases().items()}}
    print(json.dumps(pinned, indent=2))
    if args.write:
        ANSWERS.write_text(json.dumps(pinned, indent=2) + "\n")


if __name__ == "__main__":
    main()
