"""The method registry and the silhouette selection of K."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.evaluation.methods import (METHODS, QUICK_METHODS, bic_select, run_method, select_methods,
                                         silhouette_select)
from pipeline.evaluation.suites import EvalDataset


def _blobs(k: int, n: int = 150, seed: int = 0) -> EvalDataset:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    X = rng.normal(scale=0.3, size=(n, 2)) + 5.0 * np.stack([np.cos(y), np.sin(y)], axis=1) * (1 + y[:, None])
    features = pd.DataFrame(X, columns=["a", "b"]).assign(c=pd.Categorical(y % 2))
    return EvalDataset("blobs", "data", "data", features, y.astype(np.int64), k)


def test_registry_has_the_papers_methods():
    names = [m.name for m in METHODS]
    # 2 TabClustPFN + AP + 5 x (true K, silhouette K) + GMM-BIC + 4 automatic
    assert len(names) == len(set(names)) == 18
    assert next(m for m in METHODS if m.name == "GMM-BIC").k_mode == "bic"
    for fam in ("Agg", "Birch", "GMM", "KMeans", "Spectral"):
        assert f"{fam}*" in names and f"{fam}+" in names
    assert {"TabClustPFN*", "TabClustPFN", "AP", "DBSCAN", "HDBSCAN", "OPTICS", "MeanShift"} <= set(names)
    assert "AP*" not in names and "AP+" not in names  # AP takes no K: defaults only, as in the paper
    assert [m.name for m in select_methods(["KMeans+", "AP"])] == ["AP", "KMeans+"]  # report order
    assert set(QUICK_METHODS) <= set(names)
    with pytest.raises(ValueError, match="unknown method"):
        select_methods(["KMeans"])


def test_silhouette_selection_finds_well_separated_k():
    ds = _blobs(4)
    labels, k = silhouette_select("KMeans", ds.baseline_matrix()[:, :2], seed=0)
    assert k == 4 and len(np.unique(labels)) == 4


def test_bic_selection_finds_well_separated_k_and_skips_k_at_or_above_n():
    ds = _blobs(3)
    X = ds.baseline_matrix()[:, :2]
    labels, k = bic_select(X, seed=0)
    assert k == 3 and len(np.unique(labels)) == 3
    out = run_method(next(m for m in METHODS if m.name == "GMM-BIC"), ds, seed=0)
    assert out["k_pred"] == len(np.unique(out["labels"])) and out["labels"].shape == (150,)
    _, k_small = bic_select(X[:4], seed=0)  # K in 2..3 only: K >= N is never fitted
    assert k_small in (2, 3)


def test_baselines_get_one_hot_categoricals_and_true_k():
    ds = _blobs(3)
    assert ds.baseline_matrix().shape == (150, 2 + 2)
    spec = next(m for m in METHODS if m.name == "KMeans*")
    out = run_method(spec, ds, seed=0)
    assert out["k_pred"] == 3 and out["labels"].shape == (150,) and out["seconds"] > 0
    auto = run_method(next(m for m in METHODS if m.name == "DBSCAN"), ds, seed=0)
    assert auto["k_pred"] == len(set(auto["labels"]) - {-1})


def test_tabclustpfn_loads_once_per_process_and_clusters_as_a_fresh_estimator(tiny_checkpoint):
    from pipeline.batch_cluster import load_estimator
    from pipeline.evaluation import methods

    given, inferred = (next(m for m in METHODS if m.name == n) for n in ("TabClustPFN*", "TabClustPFN"))
    methods._tabclustpfn.cache_clear()
    runs = [(spec, _blobs(k, seed=k)) for k in (3, 4) for spec in (given, inferred)]
    outs = [run_method(spec, ds, checkpoint=tiny_checkpoint, seed=0, n_estimators=2) for spec, ds in runs]
    assert methods._tabclustpfn.cache_info().misses == 1  # one warm-up load served all four tables
    for (spec, ds), out in zip(runs, outs):  # a reused estimator keeps nothing of the table before
        fresh = load_estimator(tiny_checkpoint, ds.n_clusters if spec.k_mode == "true" else None, 0,
                               n_estimators=2).fit(ds.features)
        assert np.array_equal(out["labels"], fresh.labels_) and out["k_pred"] == fresh.n_clusters_
        if spec.k_mode == "true":
            assert out["k_pred"] == ds.n_clusters
    run_method(inferred, runs[0][1], checkpoint=tiny_checkpoint, seed=0, n_estimators=1)
    info = methods._tabclustpfn.cache_info()  # other settings: a new load, and only it is kept
    assert info.misses == 2 and info.currsize == 1
