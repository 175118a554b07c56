"""Calibration of the probabilities over K: coverage of the smallest high-mass set of K.

CIN's posterior p(K | X) (paper App. C.6): for a nominal level alpha, the prediction set holds the most probable K
values, in decreasing order of posterior mass, until their mass reaches alpha; the empirical coverage is the share
of held-out GMM datasets whose true K lies in that set. The calibrated K ranker's probabilities
(``TabClustPFN.k_probabilities_``) are scored on every suite's datasets as TabClustPFN clusters them
(:func:`k_probability_scores`, :func:`k_probability_table`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.evaluation.suites import CALIBRATION_SEED_OFFSET, EVAL_SEED_BASE, prior_frame

logger = logging.getLogger(__name__)

ALPHAS: tuple[float, ...] = (0.8, 0.85, 0.9, 0.95, 0.99)
_MASS_TOL = 1e-9  # a float sum of 0.8999999999 reaches 0.9


def prediction_set(posterior: Mapping[int, float], alpha: float) -> set[int]:
    """The smallest set of K whose posterior mass reaches ``alpha`` (most probable first; ties to smaller K)."""
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1], got {alpha}")
    chosen: set[int] = set()
    mass = 0.0
    for k, p in sorted(posterior.items(), key=lambda kv: (-kv[1], kv[0])):
        chosen.add(int(k))
        mass += float(p)
        if mass >= alpha - _MASS_TOL:
            break
    return chosen


def coverage_table(posteriors: Sequence[Mapping[int, float]], k_true: Sequence[int],
                   alphas: Sequence[float] = ALPHAS) -> pd.DataFrame:
    """Empirical coverage and mean set size for each alpha over datasets with posteriors and true K."""
    if len(posteriors) != len(k_true):
        raise ValueError(f"{len(posteriors)} posteriors but {len(k_true)} true K values")
    rows = []
    for alpha in alphas:
        sets = [prediction_set(p, alpha) for p in posteriors]
        hits = [int(k) in s for s, k in zip(sets, k_true)]
        rows.append({"alpha": alpha, "coverage": float(np.mean(hits)) if hits else float("nan"),
                     "mean_set_size": float(np.mean([len(s) for s in sets])) if sets else float("nan"),
                     "n_datasets": len(sets)})
    return pd.DataFrame(rows)


#: the level of the K set the evaluation reports for ``k_probabilities_``
K_SET_LEVEL = 0.8
#: columns of one run's :func:`k_probability_scores` in the results
K_PROBABILITY_COLUMNS = ("k_top_probability", "k_true_probability", "k_set_holds", "k_set_size")


def k_probability_scores(probabilities: Mapping[int, float] | None, k_true: int) -> dict[str, float]:
    """One dataset's probabilities over K (``TabClustPFN.k_probabilities_``; None: none given) against its labelled
    K: the probability of the most probable K, that of the labelled K, whether the smallest set of K holding
    :data:`K_SET_LEVEL` of the probability contains it (1.0 / 0.0), and that set's size; NaN without
    probabilities."""
    if not probabilities:
        return dict.fromkeys(K_PROBABILITY_COLUMNS, float("nan"))
    chosen = prediction_set(probabilities, K_SET_LEVEL)
    return {"k_top_probability": float(max(probabilities.values())),
            "k_true_probability": float(probabilities.get(int(k_true), 0.0)),
            "k_set_holds": float(int(k_true) in chosen), "k_set_size": float(len(chosen))}


def k_probability_table(results: pd.DataFrame, method: str) -> pd.DataFrame | None:
    """How far ``method``'s probabilities over K can be trusted on one suite's results (rows with
    :func:`k_probability_scores`'s columns): how often its most probable K (the K it chose) is the labelled one,
    against the mean probability it gives that K, the expected calibration error of that top choice, and how often
    its 80 % set holds the labelled K, with the set's mean size. None where it gave no probabilities."""
    from model.k_ranker import top_choice_ece

    if "k_top_probability" not in results:
        return None
    rows = results[(results["method"] == method) & results["k_top_probability"].notna()]
    if rows.empty:
        return None
    right = (rows["k_pred"] == rows["k_true"]).to_numpy()
    conf = rows["k_top_probability"].to_numpy(float)
    return pd.DataFrame([{"datasets": len(rows), "top K right": float(right.mean()),
                          "its mean probability": float(conf.mean()), "ECE": top_choice_ece(conf, right),
                          "80 % set holds K": float(rows["k_set_holds"].mean()),
                          "80 % set size": float(rows["k_set_size"].mean())}])


def calibration_seeds(n: int) -> list[int]:
    """Reserved prior seeds of the ``n`` held-out calibration datasets."""
    return [EVAL_SEED_BASE + CALIBRATION_SEED_OFFSET + i for i in range(n)]


def posterior_chunk(seeds: Sequence[int], checkpoint: str | None, seed: int = 0,
                    n_estimators: int | None = None) -> list[tuple[int, int, dict[int, float]]]:
    """Draw a GMM dataset per prior seed (default prior ranges: N 500-1000, D 2-64, K 2-10) and return
    ``(prior seed, true K, p(K | X))`` for each, loading the model once for the whole chunk; ``n_estimators``:
    the estimator's column orderings (None: its default), whose averaged posterior is the one users get."""
    from pipeline.batch_cluster import load_estimator
    from priors import sample_dataset

    out = []
    # K by expected ARI: the posterior is the network's whatever rule chooses K, and this rule runs the network on
    # every table (the default's BIC path on designs of <= 4 columns does not, and reports no posterior)
    est = load_estimator(checkpoint, None, seed, "expected_ari", n_estimators=n_estimators)
    for s in seeds:
        ds = sample_dataset(int(s), kind="gmm")
        frame = prior_frame(np.asarray(ds.X), ds.categorical)
        est.fit(frame)
        out.append((int(s), int(ds.n_clusters), {int(k): float(v) for k, v in est.k_posterior_.items()}))
    return out

