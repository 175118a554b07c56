"""benchmarks/blobs_sanity.py: both methods run on every blob table and the summary counts them right."""

from __future__ import annotations

from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from benchmarks.blobs_sanity import report, run
from pipeline.evaluation.methods import silhouette_select


def test_every_table_gets_both_methods_k_in_range_and_an_ari(tiny_checkpoint):
    rows = run([60], [2], [2, 3], seeds=2, checkpoint=tiny_checkpoint)
    assert [(r["k"], r["seed"]) for r in rows] == [(2, 0), (2, 1), (3, 0), (3, 1)]
    for r in rows:
        assert 2 <= r["pfn_k"] <= 10 and 2 <= r["km_k"] <= 10
        assert -1.0 <= r["pfn_ari"] <= 1.0 and -1.0 <= r["km_ari"] <= 1.0


def test_the_kmeans_column_is_the_suites_kmeans_plus(tiny_checkpoint):
    (row,) = run([80], [3], [4], seeds=1, checkpoint=tiny_checkpoint)
    X, y = make_blobs(n_samples=80, n_features=3, centers=4, cluster_std=1.0, center_box=(-10.0, 10.0),
                      random_state=0)
    labels, k = silhouette_select("KMeans", X, seed=0)
    assert (row["km_k"], row["km_ari"]) == (k, adjusted_rand_score(y, labels))


def test_the_report_counts_right_ks_and_lists_each_pick():
    rows = [{"n": 100, "d": 2, "k": 2, "seed": 0, "pfn_k": 2, "pfn_ari": 1.0, "km_k": 3, "km_ari": 0.5},
            {"n": 100, "d": 2, "k": 2, "seed": 1, "pfn_k": 4, "pfn_ari": 0.6, "km_k": 2, "km_ari": 1.0}]
    lines = report(rows)
    assert lines[0].startswith("N=100 (2 tables): TabClustPFN K right 0.50, ARI median 0.800 mean 0.800")
    assert "KMeans+ K right 0.50, ARI median 0.750 mean 0.750" in lines[0]
    assert lines[1] == "  K=2: TabClustPFN picks [2, 4] | KMeans+ [3, 2]"
