"""The BIC path's probabilities over K (``model.low_dim``), fitted on development data and checked on a fresh draw.

    PYTHONPATH=. .venv/bin/python benchmarks/bic_calibration.py --out docs/results/bic-calibration
    PYTHONPATH=. .venv/bin/python benchmarks/bic_calibration.py --criterion aic3 --fresh-offset 25000

(the second for K by AIC3, a design switch of the path, ``TabClustPFN._low_dim_criterion``:
``docs/results/bic-calibration-aic3``; ``model.low_dim.CALIBRATION`` holds each criterion's constants).

On the tables of at most ``model.low_dim.MAX_WIDTH`` design columns of the development sets ``low-d`` (the paper's
prior with 2-3 columns) and ``shapes`` (``benchmarks/shapes.py``), in ``TabClustPFN``'s design space
(``pipeline.k_ranker_fit.table_design``; no network runs), the BIC of every candidate K as the estimator's
defaults compute it (:func:`model.low_dim.choose` from :func:`model.low_dim.kmeans_starts`). Two models of the
probabilities over K, each fitted by maximum likelihood on the first draw (validation seeds from 0):

- ``softmax``: a softmax of the per-row score -BIC / (2N) at a temperature (:func:`model.k_ranker.k_probabilities`;
  1 / N is Schwarz's approximation to the posterior over K), fitted to the labelled K
  (:func:`model.k_ranker.fit_temperature`);
- ``top + softmax`` (:func:`model.low_dim.bic_probabilities`): the K of lowest BIC gets a logistic curve in the
  log of its margin over the runner-up (half the BIC gap), fitted to whether it was the labelled K
  (:func:`model.low_dim.fit_top_calibration`); the other K share the rest as the softmax at today's temperature
  does, or (``fitted, its own temperature``) at the temperature that, with the fitted curve, maximises the
  likelihood of the labelled K (:func:`model.low_dim.fit_rest_temperature`).

Each is reported with today's constants (``model.low_dim``: ``TEMPERATURE``, ``TOP_INTERCEPT``, ``TOP_SLOPE``) and
with those fitted here, on that draw and on a fresh one (``--fresh-offset``): how often the chosen K is the labelled
one, the mean probability given to it, the expected calibration error of that top choice (10 bins), the mean
log-likelihood of the labelled K, how often the smallest set of K holding 80 % of the probability holds the labelled
K, and its size. The estimator's answers merge the tiles of one cluster (:func:`model.low_dim.merge_tiles`), whose
K takes the probability of the criterion's K: ``top + softmax, tiles merged`` reports those answers (today's
constants). Writes ``OUT.md`` and ``OUT.csv`` (one row per table: its draw, set, rows, labelled K, chosen K, the
answer's K with tiles merged and -BIC / (2N) per K).

    PYTHONPATH=. .venv/bin/python benchmarks/bic_calibration.py --path latent-class --fresh-offset 21000

does the same for the latent class path of tables of categories only (:mod:`model.latent_class`, its constants), on
the ``all-cat`` development set, each table clustered by the estimator's defaults (its ``k_scores_``), and writes
``docs/results/latent-class-calibration``.
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

SIZES = {"low-d": 200, "shapes": 54}
#: ``--path latent-class``: the latent class path's probabilities (:mod:`model.latent_class`) on the ``all-cat``
#: development set (tables of categories only), as the estimator's defaults compute them (``k_scores_``)
LATENT_SIZES = {"all-cat": 200}


def _work(criterion: str, args: tuple[str, str, int, int, int, int]) -> list[dict]:
    checkpoint, which, n, start, stop, offset = args
    from benchmarks.choose_checkpoint import tables
    from model.checkpoint import load_checkpoint
    from model.low_dim import MAX_WIDTH, choose, kmeans_starts, merged_where
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
        # the criterion's own K, the one its constants are about; the estimator's answer merges its tiles
        choice = choose(X, kmeans_starts(X, k_hi), k_hi, criterion=criterion, merge=None)
        merged = merged_where(X, choice)
        scores = np.full(c_max, -np.inf)
        scores[choice.ks - 2] = choice.scores
        rows.append({"draw": offset, "set": which, "table": name, "rows": X.shape[0], "K": int(len(np.unique(y))),
                     "k": choice.k, "k_merged": merged.k,
                     **{f"score_{k}": float(scores[k - 2]) for k in range(2, c_max + 2)}})
    return rows


def _work_latent(args: tuple[str, str, int, int, int, int]) -> list[dict]:
    checkpoint, which, n, start, stop, offset = args
    import warnings

    import torch

    from benchmarks.choose_checkpoint import tables
    from model.estimator import TabClustPFN

    torch.set_num_threads(1)
    est, rows = TabClustPFN(checkpoint=checkpoint, random_state=0), []
    for i, (name, frame, y) in enumerate(tables(which, n, offset)):
        if not start <= i < stop:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(frame)
        if est.k_selection_ != "latent-class":
            continue
        rows.append({"draw": offset, "set": which, "table": name, "rows": len(est.context_indices_),
                     "K": int(len(np.unique(y))), "k": est.k_chosen_,
                     **{f"score_{k}": float(v) for k, v in est.k_scores_.items()}})
    return rows


def score_matrix(df: pd.DataFrame) -> np.ndarray:
    """The per-row scores -BIC / (2N) of ``df``'s tables, (T, C) for K = 2..C+1."""
    return df[[c for c in df.columns if c.startswith("score_")]].to_numpy(float)


def probabilities(df: pd.DataFrame, temperature: float, top: tuple[float, float] | None = None) -> np.ndarray:
    """The probabilities over K of ``df``'s tables: the softmax at ``temperature`` alone (``top`` None), or
    :func:`model.low_dim.bic_probabilities` with ``top`` = (intercept, slope)."""
    from model.k_ranker import k_probabilities
    from model.low_dim import bic_probabilities

    scores = score_matrix(df)
    if top is None:
        return k_probabilities(scores, temperature)
    return bic_probabilities(scores, df["rows"].to_numpy(float), temperature, *top)


def summary(df: pd.DataFrame, temperature: float, top: tuple[float, float] | None = None,
            merged: bool = False) -> dict[str, float]:
    """The probabilities over K (:func:`probabilities`) against the labelled K of ``df``'s tables; ``merged``: of
    the estimator's answers, whose K is ``k_merged`` (tiles of one cluster merged), which takes the probability of
    the criterion's K (:func:`model.low_dim.merge_tiles`)."""
    from model.k_ranker import top_choice_ece

    p = probabilities(df, temperature, top)
    k = (df["k_merged"] if merged else df["k"]).to_numpy()
    if merged:
        rows, own = np.arange(len(p)), df["k"].to_numpy() - 2
        p[rows, own], p[rows, k - 2] = p[rows, k - 2], p[rows, own].copy()
    idx = df["K"].to_numpy() - 2
    inside = (idx >= 0) & (idx < p.shape[1])
    true_p = np.where(inside, p[np.arange(len(p)), np.clip(idx, 0, p.shape[1] - 1)], 0.0)
    right = k == df["K"].to_numpy()
    top_p = p.max(1)
    log_true = float(np.log(np.clip(true_p, 1e-300, 1.0)).mean())
    order = np.argsort(-p, 1, kind="stable")
    size = (np.cumsum(np.take_along_axis(p, order, 1), 1) < 0.8 - 1e-12).sum(1) + 1
    holds = np.array([i in order[t, : size[t]] for t, i in enumerate(idx)])
    return {"tables": len(df), "top K right": float(right.mean()), "its mean probability": float(top_p.mean()),
            "ECE": top_choice_ece(top_p, right), "mean log p(labelled K)": log_true,
            "80 % set holds K": float(holds.mean()), "80 % set size": float(size.mean())}


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import rows_per_set, write_results
    from model.estimator import default_checkpoint_path
    from model import latent_class, low_dim
    from model.k_ranker import fit_temperature
    from model.low_dim import fit_rest_temperature, fit_top_calibration, top_margin
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()))
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tables per set (default: all)")
    ap.add_argument("--workers", type=int, default=2, help="processes (1: in this one)")
    ap.add_argument("--fresh-offset", type=int, default=1000, help="the fresh draw's first validation seed")
    ap.add_argument("--path", default="low-dim", choices=("low-dim", "latent-class"),
                    help="the BIC path of few numeric columns (model.low_dim) or the latent class path of tables of "
                         "categories only (model.latent_class)")
    ap.add_argument("--criterion", default="bic", choices=("bic", "aic3"),
                    help="the BIC path's criterion for K (model.low_dim.PENALTIES; default: %(default)s)")
    ap.add_argument("--out", default=None,
                    help="default: docs/results/bic-calibration (-aic3 for that criterion), or "
                         "latent-class-calibration for that path")
    args = ap.parse_args(argv)
    if args.fresh_offset <= 0:
        ap.error("--fresh-offset must be > 0: the fit draw starts at 0")
    latent = args.path == "latent-class"
    if latent and args.criterion != "bic":
        ap.error("--criterion is the BIC path's: the latent class path's is the estimator's (_latent_criterion)")
    module, sizes, work = ((latent_class, LATENT_SIZES, _work_latent) if latent
                           else (low_dim, SIZES, partial(_work, args.criterion)))
    TEMPERATURE, TOP_INTERCEPT, TOP_SLOPE = ((module.TEMPERATURE, module.TOP_INTERCEPT, module.TOP_SLOPE)  # noqa: N806
                                             if latent else low_dim.CALIBRATION[args.criterion])
    suffix = "" if args.criterion == "bic" else f"-{args.criterion}"
    out_path = args.out or ("docs/results/latent-class-calibration" if latent
                            else f"docs/results/bic-calibration{suffix}")
    rows = []
    for offset in (0, args.fresh_offset):
        rows += rows_per_set(work, args.checkpoint, list(sizes), sizes, args.tasks, args.workers, extra=(offset,))
    df = pd.DataFrame(rows)
    fit = df[df["draw"] == 0]
    temperature = fit_temperature(score_matrix(fit), fit["K"].to_numpy())
    finite = np.isfinite(top_margin(score_matrix(fit), fit["rows"].to_numpy(float)))
    fitted_top = fit_top_calibration(top_margin(score_matrix(fit), fit["rows"].to_numpy(float))[finite],
                                     (fit["k"] == fit["K"]).to_numpy()[finite])
    rest = fit_rest_temperature(score_matrix(fit), fit["rows"].to_numpy(float), fit["K"].to_numpy(), *fitted_top)
    models = [("softmax", "today's", TEMPERATURE, None), ("softmax", "fitted", temperature, None),
              ("top + softmax", "today's", TEMPERATURE, (TOP_INTERCEPT, TOP_SLOPE)),
              ("top + softmax", "fitted", TEMPERATURE, fitted_top),
              ("top + softmax", "fitted, its own temperature", rest, fitted_top)]
    if "k_merged" in df:  # the estimator's answers: tiles of one cluster merged, today's constants
        models.append(("top + softmax, tiles merged", "today's", TEMPERATURE, (TOP_INTERCEPT, TOP_SLOPE)))
    keys = ("tables", "top K right", "its mean probability", "ECE", "mean log p(labelled K)", "80 % set holds K",
            "80 % set size")
    lines = ["| draw | set | model | constants | " + " | ".join(keys) + " |", "|---|---|---|---|" + "---|" * len(keys)]
    for offset, draw in df.groupby("draw", sort=True):
        label = "fit" if offset == 0 else f"fresh (offset {offset})"
        for which, part in [("all", draw), *draw.groupby("set", sort=False)]:
            for model, which_constants, t, top in models:
                s = summary(part, t, top, merged=model.endswith("merged"))
                values = [f"{s[k]:.3f}" if k != "tables" else str(s[k]) for k in keys]
                lines.append(f"| {label} | {which} | {model} | {which_constants} | " + " | ".join(values) + " |")
    given = sys.argv[1:] if argv is None else list(argv)
    title = ("The latent class path's probabilities over K (development set, tables of categories only)" if latent
             else f"The BIC path's probabilities over K{' (K by AIC3)' if suffix else ''} (development sets, tables of "
                  "few columns)")
    out = [f"# {title}", "", *lines, "",
           f"Today's constants (`{module.__name__}`{'' if latent else f', {args.criterion}'}): temperature "
           f"{TEMPERATURE:.4g}, top choice (intercept, "
           f"slope) ({TOP_INTERCEPT:.4g}, "
           f"{TOP_SLOPE:.4g}). Fitted on the fit draw: temperature {temperature:.4g} (the labelled K), top choice "
           f"({fitted_top[0]:.4g}, {fitted_top[1]:.4g}) (whether the top K was the labelled one), and with that "
           f"curve the temperature of the rest {rest:.4g} (the labelled K under both).", "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/bic_calibration.py " + " ".join(given) + "`",
           checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(out_path, df, out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
