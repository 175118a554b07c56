"""What starting the BIC path's mixtures from k-means++ partitions (no network) saves in time, against starting them
from the network's candidates, on the tables that take that path (designs of <= 4 columns with the defaults).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_low_dim_starts.py --out docs/results/bench-low-dim-starts

Every table of the development suite, the development ``shapes`` set and the test suites (``dev``, ``shapes``,
``real``, ``openml``, ``synthetic``) is clustered by ``TabClustPFN(random_state=0)`` with
``_low_dim_starts="network"`` and with ``"kmeans"`` (the default), alternating (so load drift on a shared machine hits
both alike), ``--repeats`` times each; a table's time is the fastest of its repeats, after one warm-up fit that loads
the network. Only tables where the default took K from BIC (``k_selection_ == "bic"``) are timed and reported; on the
others the two settings run the same code. Printed per suite: the tables timed, the median time of each, the median
of the per-table ratio kmeans / network with its quartiles, how close the two partitions are (their ARI against
each other) and on how many tables they have the same K. Whether the answers are as good:
``docs/results/choice-low-dim-kmeans-starts*.md`` (development sets) and the evaluation reports (test suites).
Writes ``OUT.md`` and ``OUT.csv`` (one row per timed table).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

SUITES = ("dev", "shapes", "real", "openml", "synthetic")


def _time(est, frame) -> float:
    start = time.perf_counter()
    est.fit(frame)
    return time.perf_counter() - start


def suite_tables(suite: str) -> list[tuple[str, pd.DataFrame]]:
    """(name, features) of every table of ``suite``: an evaluation suite, or the development ``shapes`` set."""
    if suite == "shapes":
        from benchmarks.choose_checkpoint import tables

        return [(name, frame) for name, frame, _ in tables("shapes", 54)]
    from pipeline.evaluation import suites as eval_suites

    return [(d.name, d.features) for d in getattr(eval_suites, f"{suite}_suite")()]


def measure(suites: tuple[str, ...], repeats: int, limit: int | None = None) -> pd.DataFrame:
    """One row per table of ``suites`` (its first ``limit`` tables) that the default sent to the BIC path."""
    import warnings

    from sklearn.metrics import adjusted_rand_score

    from model.estimator import TabClustPFN

    network, kmeans = TabClustPFN(random_state=0), TabClustPFN(random_state=0)
    network._low_dim_starts, kmeans._low_dim_starts = "network", "kmeans"
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for suite in suites:
            tables = suite_tables(suite)[:limit]
            network.fit(tables[0][1])  # loads the network
            kmeans.fit(tables[0][1])
            for name, frame in tables:
                kmeans.fit(frame)
                if kmeans.k_selection_ != "bic":
                    continue
                t_net, t_km = [], []
                for _ in range(repeats):
                    t_net.append(_time(network, frame))
                    t_km.append(_time(kmeans, frame))
                rows.append({"suite": suite, "table": name, "rows": frame.shape[0], "columns": frame.shape[1],
                             "network_s": min(t_net), "kmeans_s": min(t_km), "k_network": network.n_clusters_,
                             "k_kmeans": kmeans.n_clusters_,
                             "ari_between": adjusted_rand_score(network.labels_, kmeans.labels_)})
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, suites: tuple[str, ...], command: str) -> list[str]:
    from model.estimator import default_checkpoint_path
    from pipeline.evaluation.report import checkpoint_line, machine_lines

    lines = ["# The BIC path started from k-means++ partitions (no network) against the network's candidates", "",
             "Tables whose design has at most 4 columns, where the defaults take K from BIC; time of a whole `fit`.",
             "", "| suite | tables timed | median s, network | median s, kmeans | kmeans / network per table: median "
             "[quartiles] | ARI between the two: median [min] | same K |", "|---|---|---|---|---|---|---|"]
    for suite in suites:
        g = df[df["suite"] == suite] if len(df) else df
        if not len(g):
            lines.append(f"| {suite} | 0 | - | - | - | - | - |")
            continue
        ratio = g["kmeans_s"] / g["network_s"]
        q1, q2, q3 = np.percentile(ratio, [25, 50, 75])
        lines.append(f"| {suite} | {len(g)} | {g['network_s'].median():.3f} | {g['kmeans_s'].median():.3f} | "
                     f"{q2:.3f} [{q1:.3f}, {q3:.3f}] | {g['ari_between'].median():.3f} "
                     f"[{g['ari_between'].min():.3f}] | "
                     f"{int((g['k_network'] == g['k_kmeans']).sum())} |")
    return [*lines, "", f"Command: `{command}`", checkpoint_line(str(default_checkpoint_path())), *machine_lines()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", nargs="+", default=list(SUITES), choices=SUITES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None, help="only the first tables of each suite (quick runs)")
    ap.add_argument("--out", default=None, help="write OUT.md and OUT.csv (default: print only)")
    args = ap.parse_args(argv)
    df = measure(tuple(args.suite), args.repeats, args.limit)
    given = sys.argv[1:] if argv is None else list(argv)
    text = "\n".join(report(df, tuple(args.suite), "python benchmarks/bench_low_dim_starts.py " + " ".join(given)))
    print(text + "\n")
    if args.out:
        df.to_csv(args.out + ".csv", index=False)
        with open(args.out + ".md", "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
