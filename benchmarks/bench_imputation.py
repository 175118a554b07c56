"""What filling missing cells from the nearest rows costs on large tables, against scikit-learn's ``KNNImputer`` and
the median, measured in the same run.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_imputation.py --out docs/results/bench-imputation

Each table: four Gaussian groups (``make_blobs``) of N rows and D numeric columns, every cell missing with
probability ``--rate``, completely at random. Timed, fastest of ``--repeats`` (alternating, so load drift on a
shared machine hits each alike), one thread:

* ``neighbors``: ``TablePreprocessor(impute="neighbors").fit_transform`` (the estimator's default filling: the
  fitted table's rows, a fixed subsample of at most ``IMPUTE_DONORS``, donate to every gappy row, in blocks);
* ``knn``: ``KNNImputer(n_neighbors=5)`` fitted on the same donor rows, then ``transform`` of the whole table, both
  as the preprocessor's z-scores (computed beforehand, untimed): the same rule on a numeric table, so the same
  values up to float rounding (the largest difference is reported per table);
* ``median``: ``TablePreprocessor(impute="median").fit_transform`` (the old default).

Both preprocessors also z-normalise and check the table, so ``neighbors`` / ``median`` is the cost of the
neighbour filling in the estimator's preprocessing and ``neighbors`` / ``knn`` how the implementation compares
with the reference. Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

SIZES = ((1_000, 8), (10_000, 8), (10_000, 32), (50_000, 8), (50_000, 32))


def gappy_table(n: int, d: int, rate: float, seed: int = 0) -> pd.DataFrame:
    """Four Gaussian groups, ``n`` x ``d``, each cell missing with probability ``rate``."""
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n_samples=n, n_features=d, centers=4, random_state=seed)
    X[np.random.default_rng(seed).random(X.shape) < rate] = np.nan
    return pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])


def _fastest(fn, repeats: int) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def measure(sizes, rate: float, repeats: int) -> pd.DataFrame:
    import torch
    from sklearn.impute import KNNImputer

    from model.preprocessing import IMPUTE_DONORS, IMPUTE_NEIGHBORS, TablePreprocessor

    torch.set_num_threads(1)
    rows = []
    for n, d in sizes:
        table = gappy_table(n, d, rate)
        pre = TablePreprocessor(impute="neighbors")
        donors = np.arange(n) if n <= IMPUTE_DONORS else \
            np.sort(np.random.default_rng(0).choice(n, IMPUTE_DONORS, replace=False))  # the preprocessor's own

        pre.fit(table)
        scores = pre._z(pre._numeric_values(table))  # the table's z-scores, NaN kept: what the filling reads

        def knn():
            return KNNImputer(n_neighbors=IMPUTE_NEIGHBORS).fit(scores[donors]).transform(scores)

        times = {"neighbors": np.inf, "knn": np.inf, "median": np.inf}
        filled = reference = None
        for _ in range(repeats):  # alternating
            t, filled = _fastest(lambda: pre.fit_transform(table)[0], 1)
            times["neighbors"] = min(times["neighbors"], t)
            t, reference = _fastest(knn, 1)
            times["knn"] = min(times["knn"], t)
            t, _ = _fastest(lambda: TablePreprocessor(impute="median").fit_transform(table), 1)
            times["median"] = min(times["median"], t)
        agree = float(np.abs(reference - filled).max())  # the same rule on a numeric table: the same z-scores
        rows.append({"N": n, "D": d, "rate": rate, "gappy_rows": int(table.isna().any(axis=1).sum()),
                     "donors": len(donors), **{f"{k}_s": v for k, v in times.items()},
                     "neighbors_over_knn": times["neighbors"] / times["knn"],
                     "neighbors_over_median": times["neighbors"] / times["median"], "max_abs_difference": agree})
        print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, command: str) -> list[str]:
    from pipeline.evaluation.report import machine_lines

    lines = ["# Filling missing cells from the nearest rows: time against KNNImputer and the median (one thread)", "",
             f"Every cell missing with probability {df.rate.iloc[0]:g}, completely at random; fastest of the repeats.",
             "", "| N | D | gappy rows | donors | neighbors (s) | KNNImputer (s) | median (s) | "
             "neighbors / KNNImputer | neighbors / median | largest difference |", "|---" * 10 + "|"]
    for r in df.itertuples():
        lines.append(f"| {r.N} | {r.D} | {r.gappy_rows} | {r.donors} | {r.neighbors_s:.3f} | {r.knn_s:.3f} | "
                     f"{r.median_s:.3f} | {r.neighbors_over_knn:.2f} | {r.neighbors_over_median:.1f} | "
                     f"{r.max_abs_difference:.1e} |")
    return [*lines, "", f"Command: `{command}`", *machine_lines()]


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=0.1, help="share of cells missing (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", nargs="+", default=[f"{n}x{d}" for n, d in SIZES],
                    help="N x D of each table (default: %(default)s)")
    ap.add_argument("--out", default="docs/results/bench-imputation")
    args = ap.parse_args(argv)
    try:
        sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes]
    except ValueError:
        ap.error(f"--sizes takes N x D as e.g. 10000x8, got {args.sizes}")
    if not 0 < args.rate < 1:
        ap.error(f"--rate must be in (0, 1), got {args.rate}")
    df = measure(sizes, args.rate, args.repeats)
    given = sys.argv[1:] if argv is None else list(argv)
    from benchmarks.choose_k_rule import write_results

    write_results(args.out, df, report(df, "python benchmarks/bench_imputation.py " + " ".join(given)))
    return df


if __name__ == "__main__":
    main()
