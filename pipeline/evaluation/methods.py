"""The compared methods (paper Sec. 4, App. B) and how one of them clusters one dataset.

Names follow the paper: ``X*`` is given the true K, ``X+`` picks K in 2..10 by the best silhouette score,
``GMM-BIC`` (not in the paper; the strongest classical peer on Gaussian-like tables) picks K in 2..10 by the lowest
BIC of a full-covariance Gaussian mixture, and a bare name infers K itself (TabClustPFN through its CIN posterior; AP, DBSCAN, HDBSCAN, OPTICS and MeanShift
with scikit-learn defaults; AP has no K argument, so, as in the paper, it runs with defaults only).
TabClustPFN takes the preprocessed table with its categorical columns; the baselines take
:meth:`EvalDataset.baseline_matrix` (categoricals one-hot).

The predicted K (for k-MAE) is the K a method chose: TabClustPFN's ``n_clusters_``, the silhouette winner, or
for the automatic baselines the number of clusters they return, not counting the noise label -1.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
from sklearn import cluster, mixture
from sklearn.metrics import silhouette_score

from pipeline.evaluation.metrics import n_found_clusters

logger = logging.getLogger(__name__)

KMode = Literal["true", "silhouette", "bic", "auto"]
SILHOUETTE_K_RANGE = range(2, 11)
REFERENCE_AUTO = "TabClustPFN"
REFERENCE_TRUE = "TabClustPFN*"


@dataclass(frozen=True)
class MethodSpec:
    """One compared method: a family (the algorithm) and how it gets K."""

    name: str
    family: str
    k_mode: KMode


def _specs() -> tuple[MethodSpec, ...]:
    specs = [MethodSpec("TabClustPFN*", "TabClustPFN", "true"), MethodSpec("TabClustPFN", "TabClustPFN", "auto"),
             MethodSpec("AP", "AP", "auto")]
    for fam in ("Agg", "Birch", "GMM", "KMeans", "Spectral"):
        specs += [MethodSpec(f"{fam}*", fam, "true"), MethodSpec(f"{fam}+", fam, "silhouette")]
        if fam == "GMM":
            specs.append(MethodSpec("GMM-BIC", fam, "bic"))
    specs += [MethodSpec(f, f, "auto") for f in ("DBSCAN", "HDBSCAN", "MeanShift", "OPTICS")]
    return tuple(specs)


#: Every method, in report order.
METHODS: tuple[MethodSpec, ...] = _specs()
#: The subset run by ``--quick``.
QUICK_METHODS: tuple[str, ...] = ("TabClustPFN*", "TabClustPFN", "KMeans*", "KMeans+", "GMM*", "DBSCAN")


def select_methods(names: list[str] | tuple[str, ...] | None) -> list[MethodSpec]:
    """The specs of ``names`` in report order (all methods for None); unknown names raise ValueError."""
    by_name = {m.name: m for m in METHODS}
    if names is None:
        return list(METHODS)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose from {list(by_name)}")
    keep = set(names)
    return [m for m in METHODS if m.name in keep]


def sklearn_estimator(family: str, k: int | None, seed: int):
    """A fresh scikit-learn clusterer of ``family`` (defaults as in the paper; K where it takes one)."""
    if family == "KMeans":
        return cluster.KMeans(n_clusters=k, random_state=seed)
    if family == "GMM":
        return mixture.GaussianMixture(n_components=k, covariance_type="full", random_state=seed)
    if family == "Agg":
        return cluster.AgglomerativeClustering(n_clusters=k)
    if family == "Birch":
        return cluster.Birch(n_clusters=k)
    if family == "Spectral":
        return cluster.SpectralClustering(n_clusters=k, random_state=seed)
    if family == "AP":
        return cluster.AffinityPropagation(random_state=seed)
    if family == "DBSCAN":
        return cluster.DBSCAN()
    if family == "HDBSCAN":
        return cluster.HDBSCAN()
    if family == "OPTICS":
        return cluster.OPTICS()
    if family == "MeanShift":
        return cluster.MeanShift()
    raise ValueError(f"unknown method family {family!r}")


def silhouette_select(family: str, X: np.ndarray, seed: int,
                      k_range: range = SILHOUETTE_K_RANGE) -> tuple[np.ndarray, int]:
    """Fit ``family`` for every K in ``k_range`` (below N) and keep the partition with the best silhouette.

    Partitions with a single cluster have no silhouette and are skipped; ties go to the smaller K.
    """
    best: tuple[float, np.ndarray, int] | None = None
    for k in k_range:
        if k >= X.shape[0]:
            break
        labels = np.asarray(sklearn_estimator(family, k, seed).fit_predict(X))
        if len(np.unique(labels)) < 2:
            continue
        score = float(silhouette_score(X, labels))
        if best is None or score > best[0]:
            best = (score, labels, k)
    if best is None:
        raise ValueError(f"{family}: no K in {k_range.start}..{k_range.stop - 1} gave two or more clusters")
    return best[1], best[2]


def bic_select(X: np.ndarray, seed: int, k_range: range = SILHOUETTE_K_RANGE) -> tuple[np.ndarray, int]:
    """A full-covariance Gaussian mixture for every K in ``k_range`` (below N); the partition of lowest BIC.

    Ties go to the smaller K; a K whose fit fails (too few rows for its covariances) is skipped.
    """
    best: tuple[float, np.ndarray, int] | None = None
    for k in k_range:
        if k >= X.shape[0]:
            break
        gmm = sklearn_estimator("GMM", k, seed)
        try:
            labels = np.asarray(gmm.fit_predict(X))
        except (ValueError, np.linalg.LinAlgError) as exc:
            logger.info("GMM-BIC: K=%d failed (%s); skipped", k, exc)
            continue
        bic = float(gmm.bic(X))
        if best is None or bic < best[0]:
            best = (bic, labels, k)
    if best is None:
        raise ValueError(f"GMM-BIC: no K in {k_range.start}..{k_range.stop - 1} could be fitted")
    return best[1], best[2]


@functools.lru_cache(maxsize=1)
def _tabclustpfn(checkpoint: str | None, seed: int, settings: tuple[tuple[str, object], ...]):
    """A TabClustPFN with ``settings`` (``load_estimator``'s keywords) and K inferred, its network loaded by a
    warm-up fit once per process and kept for every later table with the same settings; the caller sets
    ``n_clusters`` per table. Only the last settings are kept, so one process holds at most one network."""
    from pipeline.batch_cluster import load_estimator

    return load_estimator(checkpoint, None, seed, **dict(settings))


def run_method(spec: MethodSpec, dataset, *, checkpoint: str | None = None, seed: int = 0,
               k_selection: str | None = None, n_estimators: int | None = None, refine: str | None = None,
               allow_single_cluster: bool = False, screen_noise: bool | str | None = None,
               dequantize: bool | None = None, power_transform: bool | None = None) -> dict:
    """Cluster ``dataset`` with ``spec``; return labels, the chosen K and the wall time of the clustering.
    ``k_selection``, ``n_estimators``, ``refine``: TabClustPFN's rule for choosing K, its column orderings and its
    test-time refinement (None: the estimator's defaults); ``allow_single_cluster`` its one-cluster answer;
    ``screen_noise`` its dropping of pure-noise columns, ``dequantize`` its spreading of few-level columns,
    ``power_transform`` its Yeo-Johnson transform of skewed columns (None: the defaults).

    The time covers the clustering only: TabClustPFN's network is loaded (by a tiny warm-up fit) before the
    clock starts, as the baselines' libraries are imported before it; it is loaded once per process and
    setting, not per table (the checkpoint's file is read again only when it changes).

    Returns
    -------
    dict
        ``labels`` (N,), ``k_pred`` (int), ``seconds`` (float); TabClustPFN's also ``k_probabilities`` (its
        ``k_probabilities_``: a dict over K, or None).
    """
    if spec.family == "TabClustPFN":
        settings = (("k_selection", k_selection), ("n_estimators", n_estimators), ("refine", refine),
                    ("allow_single_cluster", allow_single_cluster), ("screen_noise", screen_noise),
                    ("dequantize", dequantize), ("power_transform", power_transform))
        est = _tabclustpfn(checkpoint, seed, settings)
        est.set_params(n_clusters=dataset.n_clusters if spec.k_mode == "true" else None)
        start = time.perf_counter()
        est.fit(dataset.features)
        seconds = time.perf_counter() - start
        return {"labels": np.asarray(est.labels_), "k_pred": int(est.n_clusters_), "seconds": seconds,
                "k_probabilities": est.k_probabilities_}
    X = dataset.baseline_matrix()
    start = time.perf_counter()
    if spec.k_mode == "silhouette":
        labels, k_pred = silhouette_select(spec.family, X, seed)
    elif spec.k_mode == "bic":
        labels, k_pred = bic_select(X, seed)
    else:
        k = dataset.n_clusters if spec.k_mode == "true" else None
        labels = np.asarray(sklearn_estimator(spec.family, k, seed).fit_predict(X))
        k_pred = n_found_clusters(labels)
    return {"labels": labels, "k_pred": k_pred, "seconds": time.perf_counter() - start}
