"""Calibration of the CIN posterior p(K | X) (paper App. C.6): coverage of the smallest high-mass set of K.

For a nominal level alpha, the prediction set holds the most probable K values, in decreasing order of
posterior mass, until their mass reaches alpha; the empirical coverage is the share of held-out GMM datasets
whose true K lies in that set.
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
    est = load_estimator(checkpoint, None, seed, n_estimators=n_estimators)
    for s in seeds:
        ds = sample_dataset(int(s), kind="gmm")
        frame = prior_frame(np.asarray(ds.X), ds.categorical)
        est.fit(frame)
        out.append((int(s), int(ds.n_clusters), {int(k): float(v) for k, v in est.k_posterior_.items()}))
    return out

