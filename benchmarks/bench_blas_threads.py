r"""A fit in a plain Python process, its BLAS pools held to one thread (the default) or left at theirs, beside the
KMeans + silhouette sweep measured in the same processes.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_blas_threads.py --out docs/results/bench-blas-threads

What a user's process runs: no thread variable set, torch, numpy's and scipy's OpenBLAS and scikit-learn's OpenMP at
their own thread counts (the machine's cores). Each setting runs in processes of its own, ``--rounds`` of them, the
settings alternating (which goes first alternates too), since a pool's state outlives a fit: within one process the
settings would time each other's leftovers. In each process every table of the chosen suites (as ``jobs/evaluate.py``
loads them) is clustered by ``TabClustPFN(random_state=0)`` with every default on and by the evaluation's ``KMeans+``
(scikit-learn k-means for K = 2..10, the partition of best silhouette, on the baselines' matrix, its pools at their
defaults in both settings): per table one untimed fit, then ``--repeats`` timed fits, then as many sweeps. The
untimed fit keeps the sweep's leftovers out of the timed ones: OpenBLAS's idle threads spin for a while after a call,
and a sweep timed between the fits (the first run of this benchmark, ``bench-blas-threads-interleaved.md``) slowed
the next fit in both settings alike.

- ``one``: the estimator as shipped (``TabClustPFN._blas_threads = 1``, :mod:`model.blas_threads`);
- ``as-is``: the same fit with the BLAS pools left as they are (``_blas_threads = None``).

A table's time is its fastest fit over every repeat of every process of a setting. Printed per suite: the median
fit time per setting and the median per-table ratio one / as-is with its quartiles and how many tables got faster,
and that ratio for a typical fit (per process the median repeat, per setting the median process);
each setting's median per-table ratio to the sweep (its fastest time over all processes); and on how many tables the
two settings gave the same labels. Writes ``OUT.md`` and ``OUT.csv`` (one row per table and setting).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd

SUITES = ("dev", "real", "openml", "synthetic")
SETTINGS = {"one": 1, "as-is": None}


def child(suites: tuple[str, ...], setting: str, repeats: int) -> list[dict]:
    """One process's measurements of one setting: per table the fastest fit and sweep, K and the labels' digest."""
    from benchmarks.suite_timing import suite_tables, sweep_seconds
    from model.estimator import TabClustPFN

    TabClustPFN._blas_threads = SETTINGS[setting]
    est = TabClustPFN(random_state=0)
    rows = []
    for suite, d in suite_tables(est, suites):
        est.fit(d.features)  # untimed: what the sweep before left spinning stops meanwhile
        fits = []
        for _ in range(repeats):
            start = time.perf_counter()
            est.fit(d.features)
            fits.append(time.perf_counter() - start)
        sweeps = [sweep_seconds(d.baseline_matrix()) for _ in range(repeats)]
        labels = np.ascontiguousarray(est.labels_, dtype=np.int64)
        rows.append({"suite": suite, "table": d.name, "setting": setting, "fit": min(fits),
                     "fit_median": float(np.median(fits)), "kmeans_sweep": min(sweeps), "k": int(est.n_clusters_),
                     "labels": hashlib.sha256(labels.tobytes()).hexdigest()[:16]})
    return rows


def measure(suites: tuple[str, ...], rounds: int, repeats: int) -> pd.DataFrame:
    """Every setting in ``rounds`` fresh processes each, alternating; one row per table, setting and process."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                             "MKL_NUM_THREADS")}  # a user's process
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    rows = []
    for r in range(rounds):
        order = list(SETTINGS) if r % 2 == 0 else list(SETTINGS)[::-1]
        for setting in order:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", setting, "--suite", *suites,
                                  "--repeats", str(repeats)], env=env, cwd=root, check=True, capture_output=True,
                                 text=True)
            rows += [{**row, "round": r} for row in json.loads(out.stdout.strip().splitlines()[-1])]
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, command: str) -> list[str]:
    from model.estimator import default_checkpoint_path
    from pipeline.evaluation.report import checkpoint_line, machine_lines

    lines = ["# A fit with its BLAS pools held to one thread or left as they are, beside the KMeans + silhouette "
             "sweep (a user's process, same run)", ""]
    for suite, g in df.groupby("suite", sort=False):
        fit = g.pivot_table(index="table", columns="setting", values="fit", aggfunc="min")
        sweep = g.groupby("table")["kmeans_sweep"].min()
        ratio = fit["one"] / fit["as-is"]
        q1, q2, q3 = np.percentile(ratio, [25, 50, 75])
        typical = g.pivot_table(index="table", columns="setting", values="fit_median", aggfunc="median")
        t1, t2, t3 = np.percentile(typical["one"] / typical["as-is"], [25, 50, 75])
        labels = g.groupby("table")["labels"].nunique()
        lines += [f"## `{suite}` ({len(fit)} tables, {g['round'].nunique()} processes per setting)", "",
                  "| setting | median fit s | median fit / sweep [quartiles] | tables at or below the sweep |",
                  "|---|---|---|---|"]
        for setting in SETTINGS:
            per = fit[setting] / sweep
            s1, s2, s3 = np.percentile(per, [25, 50, 75])
            lines.append(f"| {setting} | {fit[setting].median():.4f} | {s2:.2f} [{s1:.2f}, {s3:.2f}] | "
                         f"{int((per <= 1).sum())} of {len(per)} |")
        lines += ["", f"Per table one / as-is: {q2:.2f} [{q1:.2f}, {q3:.2f}] (median [quartiles]); faster on "
                  f"{int((ratio < 1).sum())} of {len(ratio)} tables; of a typical fit (each process's median "
                  f"repeat, their median) {t2:.2f} [{t1:.2f}, {t3:.2f}]. The sweep's median {sweep.median():.4f} s. "
                  f"The same labels in every process on {int((labels == 1).sum())} of {len(labels)} tables.", ""]
    return [*lines, f"Command: `{command}`", checkpoint_line(str(default_checkpoint_path())), *machine_lines()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", nargs="+", default=["real", "dev"], choices=SUITES)
    ap.add_argument("--rounds", type=int, default=3, help="processes per setting")
    ap.add_argument("--repeats", type=int, default=3, help="timed fits per table and process")
    ap.add_argument("--out", default=None, help="write OUT.md and OUT.csv (default: print only)")
    ap.add_argument("--child", choices=SETTINGS, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.repeats < 1:
        ap.error(f"--rounds and --repeats must be >= 1, got {args.rounds} and {args.repeats}")
    if args.child is not None:
        print(json.dumps(child(tuple(args.suite), args.child, args.repeats)))
        return
    from benchmarks.choose_k_rule import write_results

    df = measure(tuple(args.suite), args.rounds, args.repeats)
    given = sys.argv[1:] if argv is None else list(argv)
    lines = report(df, "python benchmarks/bench_blas_threads.py " + " ".join(given))
    write_results(args.out, df, lines)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
