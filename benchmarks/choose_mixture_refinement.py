"""Whether the chosen partition is refined again by a Gaussian mixture (``TabClustPFN(refine="gmm")``), chosen on
development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_mixture_refinement.py --out docs/results/choice-mixture-refine

Each table of the development sets of ``benchmarks/choose_checkpoint.py`` (``prior``: 400 held-out tasks of the
paper's prior, ``noisy``: 200 with noise columns and contaminated rows, ``one-informative``: 200 with one informative
column among noise columns, ``low-d``: 200 with 2 or 3 columns, ``dev``: the 23 tables of
``../shared/benchmarks/dev``) is clustered once as
``TabClustPFN`` does by default (preprocessing, 4 column orderings, every candidate refined by two Lloyd steps, K by
the checkpoint's K ranker); then every variant turns that K's candidate into the answer:

- ``kmeans``: the candidate as it is (``refine="kmeans"``, the baseline);
- ``shared-10-steps``: :func:`model.refinement.diagonal_em`, 10 EM steps of K Gaussians sharing one diagonal
  covariance, variances >= 0.1: k-means in a metric that weighs each column by its within-cluster precision, so
  pure-noise columns count less;
- ``shared-floor-0.3``: the same with variances >= 0.3 (a column weighted at most 3.3x as k-means weighs it);
- ``shared-3-steps``: the same as the first with 3 EM steps;
- ``shared-equal-weights``: ``shared-floor-0.3`` with equal mixing proportions (k-means in the rescaled metric);
- ``own-diagonal``: 3 EM steps of a mixture in which each cluster has its own diagonal covariance (>= 0.1).

Each variant's mixing proportions are estimated except where named.

The ``low-d`` set was added (2026-11-29) after the first choice (``shared-floor-0.3``) lost to k-means on the
2-D tables of the test regimes (``regime-*.md``); ``shared-equal-weights`` with it.

K is the same for all of them. Per set each variant against ``kmeans`` table by table: paired mean ARI difference
+- standard error, tables better / worse. The protocol (docs/DESIGN.md): a variant qualifies when it gains beyond two
standard errors on a set and loses beyond one on none; of those that qualify the one with the largest mean gain over
the sets (each weighted equally) is chosen. Writes ``OUT.md`` and ``OUT.csv`` (one row per table: each variant's ARI).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "low-d": 200, "dev": 23}
BASELINE = "kmeans"
#: variant -> keyword arguments of model.refinement.diagonal_em (EM steps, variance floor, one covariance shared by
#: the clusters, mixing proportions estimated)
MIXTURES = {
    "shared-10-steps": dict(steps=10, floor=0.1, shared=True, mixing=True),
    "shared-floor-0.3": dict(steps=10, floor=0.3, shared=True, mixing=True),
    "shared-3-steps": dict(steps=3, floor=0.1, shared=True, mixing=True),
    "shared-equal-weights": dict(steps=10, floor=0.3, shared=True, mixing=False),
    "own-diagonal": dict(steps=3, floor=0.1, shared=False, mixing=True),
}
VARIANTS = ("kmeans", *MIXTURES)


def variant_labels(name: str, X: np.ndarray, candidate: np.ndarray, k: int) -> np.ndarray:
    from model.refinement import diagonal_em

    if name == "kmeans":
        return candidate
    if name in MIXTURES:
        return diagonal_em(X, candidate, k, **MIXTURES[name])[0]
    raise ValueError(f"unknown variant {name!r}")


def _work(args: tuple[str, str, int, int, int]) -> list[dict]:
    checkpoint, which, n, start, stop = args
    import torch
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_checkpoint import tables
    from model.checkpoint import load_checkpoint
    from pipeline.k_ranker_fit import table_candidates

    torch.set_num_threads(1)
    net = load_checkpoint(checkpoint)[0].eval()
    if net.k_ranker is None:
        raise SystemExit(f"error: {checkpoint} carries no K ranker: the variants refine the ranker's choice")
    rows = []
    for i, (name, frame, y) in enumerate(tables(which, n)):
        if not start <= i < stop:
            continue
        with torch.no_grad():
            table = table_candidates(net, frame, len(y), stages=(net.cfg.k_ranker_candidates,))
            X, candidates = table.X, table.candidates
            k, _ = net.k_ranker.choose(table.features[net.cfg.k_ranker_candidates])
        row = {"set": which, "table": name, "K": int(len(np.unique(y))), "k": k}
        for v in VARIANTS:
            t0 = time.perf_counter()
            labels = variant_labels(v, X, candidates[k - 2], k)
            row[v + "_ms"] = 1e3 * (time.perf_counter() - t0)
            row[v] = float(adjusted_rand_score(y, labels))
        rows.append(row)
    return rows


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import rows_per_set, table, verdict, write_results
    from model.estimator import default_checkpoint_path
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()), help="a checkpoint with a K ranker")
    ap.add_argument("--set", nargs="+", default=list(SIZES), choices=list(SIZES), help="default: all four")
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tables per set (default: all)")
    ap.add_argument("--workers", type=int, default=2, help="processes (1: in this one)")
    ap.add_argument("--out", default="docs/results/choice-mixture-refine")
    args = ap.parse_args(argv)
    df = pd.DataFrame(rows_per_set(_work, args.checkpoint, args.set, SIZES, args.tasks, args.workers))
    for v in VARIANTS:  # table() reports the mean |K^ - K|: K is the ranker's for every variant
        df[v + "_k"] = df["k"]
    lines, diffs = table(df, list(VARIANTS), BASELINE)
    chosen, verdicts = verdict(diffs, BASELINE)
    times = ", ".join(f"`{v}` {df[v + '_ms'].median():.1f}" for v in VARIANTS)
    given = sys.argv[1:] if argv is None else list(argv)
    out = ["# Refining the chosen partition by a Gaussian mixture (development sets, K by the K ranker)", "",
           *[line.replace("| rule |", "| variant |") for line in lines], "",
           f"Median time of the variant's step per table (ms): {times}.", "",
           "Protocol: a variant qualifies when it gains beyond two standard errors on a set and loses beyond one on "
           "none; the qualifying variant with the largest mean gain over the sets is chosen.", "",
           *[v.replace("rule", "variant") for v in verdicts], "",
           f"Chosen: {'`' + chosen + '`' if chosen else f'none (the baseline `{BASELINE}` stays)'}.", "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_mixture_refinement.py " + " ".join(given) + "`",
           checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df.drop(columns=[v + "_k" for v in VARIANTS]), out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
