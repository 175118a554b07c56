"""The temperature of the probabilities over K that the BIC path gives (``model.low_dim``), fitted on development
data and checked on a fresh draw of it.

    PYTHONPATH=. .venv/bin/python benchmarks/bic_calibration.py --out docs/results/bic-calibration

On the tables of at most ``model.low_dim.MAX_WIDTH`` design columns of the development sets ``low-d`` (the paper's
prior with 2-3 columns) and ``shapes`` (``benchmarks/shapes.py``), in ``TabClustPFN``'s design space
(``pipeline.k_ranker_fit.table_design``; no network runs), the BIC of every candidate K as the estimator's
defaults compute it (:func:`model.low_dim.choose` from :func:`model.low_dim.kmeans_starts`; from the network's
candidates until 2026-12-03). The probabilities over K are a softmax of the per-row score -BIC / (2N) at a
temperature (:func:`model.k_ranker.k_probabilities`; 1 / N is Schwarz's approximation to the posterior over K); the
temperature that maximises the likelihood of the labelled K on the first draw (validation seeds from 0) is fitted
(:func:`model.k_ranker.fit_temperature`) and reported beside today's (``model.low_dim.TEMPERATURE``) on that draw
and on a fresh one (``--fresh-offset``): how often the chosen K is the labelled one, the mean probability given to
it, the expected calibration error of that top choice (10 bins), the mean log-likelihood of the labelled K. Writes
``OUT.md`` and ``OUT.csv`` (one row per table: its draw, set, labelled K, chosen K and -BIC / (2N) per K).
"""

from __future__ import annotations

import argparse
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

SIZES = {"low-d": 200, "shapes": 54}


def _work(args: tuple[str, str, int, int, int, int]) -> list[dict]:
    checkpoint, which, n, start, stop, offset = args
    from benchmarks.choose_checkpoint import tables
    from model.checkpoint import load_checkpoint
    from model.low_dim import MAX_WIDTH, choose, kmeans_starts
    from pipeline.k_ranker_fit import table_design

    cfg = load_checkpoint(checkpoint)[0].cfg
    c_max = cfg.k_max - 1
    rows = []
    for i, (name, frame, y) in enumerate(tables(which, n, offset)):
        if not start <= i < stop:
            continue
        X = table_design(cfg, frame)[3]
        if X.shape[1] > MAX_WIDTH:
            continue
        k_hi = min(cfg.k_max, len(y) - 1)
        choice = choose(X, kmeans_starts(X, k_hi), k_hi)
        scores = np.full(c_max, -np.inf)
        scores[choice.ks - 2] = choice.scores
        rows.append({"draw": offset, "set": which, "table": name, "K": int(len(np.unique(y))), "k": choice.k,
                     **{f"score_{k}": float(scores[k - 2]) for k in range(2, c_max + 2)}})
    return rows


def summary(df: pd.DataFrame, temperature: float) -> dict[str, float]:
    """The probabilities over K at ``temperature`` against the labelled K of ``df``'s tables."""
    from model.k_ranker import k_probabilities, top_choice_ece

    scores = df[[c for c in df.columns if c.startswith("score_")]].to_numpy(float)
    p = k_probabilities(scores, temperature)
    idx = df["K"].to_numpy() - 2
    inside = (idx >= 0) & (idx < p.shape[1])
    true_p = np.where(inside, p[np.arange(len(p)), np.clip(idx, 0, p.shape[1] - 1)], 0.0)
    right = (df["k"] == df["K"]).to_numpy()
    top = p.max(1)
    log_true = float(np.log(np.clip(true_p, 1e-300, 1.0)).mean())
    return {"tables": len(df), "top K right": float(right.mean()), "its mean probability": float(top.mean()),
            "ECE": top_choice_ece(top, right), "mean log p(labelled K)": log_true}


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import rows_per_set, write_results
    from model.estimator import default_checkpoint_path
    from model.k_ranker import fit_temperature
    from model.low_dim import TEMPERATURE
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()))
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tables per set (default: all)")
    ap.add_argument("--workers", type=int, default=2, help="processes (1: in this one)")
    ap.add_argument("--fresh-offset", type=int, default=1000, help="the fresh draw's first validation seed")
    ap.add_argument("--out", default="docs/results/bic-calibration")
    args = ap.parse_args(argv)
    if args.fresh_offset <= 0:
        ap.error("--fresh-offset must be > 0: the fit draw starts at 0")
    rows = []
    for offset in (0, args.fresh_offset):
        rows += rows_per_set(_work, args.checkpoint, list(SIZES), SIZES, args.tasks, args.workers, extra=(offset,))
    df = pd.DataFrame(rows)
    fit = df[df["draw"] == 0]
    scores = fit[[c for c in df.columns if c.startswith("score_")]].to_numpy(float)
    temperature = fit_temperature(scores, fit["K"].to_numpy())
    lines = ["| draw | set | temperature | tables | top K right | its mean probability | ECE "
             "| mean log p(labelled K) |", "|---|---|---|---|---|---|---|---|"]
    for offset, draw in df.groupby("draw", sort=True):
        label = "fit" if offset == 0 else f"fresh (offset {offset})"
        for which, part in [("all", draw), *draw.groupby("set", sort=False)]:
            for t in (TEMPERATURE, temperature):
                s = summary(part, t)
                lines.append(f"| {label} | {which} | {t:.3g} | {s['tables']} | {s['top K right']:.3f} | "
                             f"{s['its mean probability']:.3f} | {s['ECE']:.3f} | {s['mean log p(labelled K)']:.3f} |")
    given = sys.argv[1:] if argv is None else list(argv)
    out = ["# The BIC path's probabilities over K (development sets, tables of few columns)", "", *lines, "",
           f"Fitted temperature (the fit draw's labelled K): {temperature:.4g}.", "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/bic_calibration.py " + " ".join(given) + "`",
           checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df, out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
