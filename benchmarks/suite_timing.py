"""What the timing benchmarks share: the evaluation's tables suite by suite, and the KMeans + silhouette sweep timed.

No thread setting here: each benchmark sets its own (``bench_stages.py`` one thread, ``bench_blas_threads.py`` a
user's process) before torch and numpy load.
"""

from __future__ import annotations

import time
from typing import Iterator

import numpy as np


def suite_tables(est, suites: tuple[str, ...]) -> Iterator[tuple[str, object]]:
    """(suite, dataset) for every table of ``suites`` as ``jobs/evaluate.py`` loads them, ``est`` fitted once on each
    suite's first table before (it loads the network); warnings are silenced meanwhile (the sweep's convergence
    chatter)."""
    import warnings

    from pipeline.evaluation import suites as eval_suites

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for suite in suites:
            data = getattr(eval_suites, f"{suite}_suite")()
            est.fit(data[0].features)
            for d in data:
                yield suite, d


def sweep_seconds(X: np.ndarray) -> float:
    """Seconds of the evaluation's ``KMeans+`` on ``X``: k-means for K = 2..10, the partition of best silhouette."""
    from pipeline.evaluation.methods import silhouette_select

    start = time.perf_counter()
    silhouette_select("KMeans", X, 0)
    return time.perf_counter() - start
