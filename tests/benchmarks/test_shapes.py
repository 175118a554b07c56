"""benchmarks/shapes.py: the generated development set of cluster shapes and its per-kind summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


@pytest.mark.parametrize("kind, k", [("moons", 2), ("circles", 2), ("aniso", 3), ("varied", 3), ("elongated", 3)])
def test_each_kind_has_its_clusters_and_is_deterministic(kind, k):
    from benchmarks.shapes import shape_table

    X, y = shape_table(kind, 300, 1)
    assert X.shape[0] == 300 and X.shape[1] == 2 and len(np.unique(y)) == k
    X2, y2 = shape_table(kind, 300, 1)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(shape_table(kind, 300, 2)[0], X)


def test_the_set_is_written_for_the_evaluation_and_summarised_per_kind(tmp_path):
    from benchmarks.shapes import KINDS, SIZES, by_kind_report, write_set
    from pipeline.evaluation.suites import load_parquet_dataset

    paths = write_set(tmp_path / "set", seeds=1)
    assert len(paths) == len(KINDS) * len(SIZES)
    ds = load_parquet_dataset(paths[0], "data", "data")  # as jobs/evaluate.py --data reads it
    assert ds.n_clusters == 2 and "target" not in ds.features.columns
    rows = [{"dataset": p.stem, "method": m, "status": "ok", "ari": a, "k_pred": 2, "k_true": 2}
            for p in paths[:3] for m, a in (("TabClustPFN", 0.5), ("KMeans+", 0.25))]
    pd.DataFrame(rows).to_csv(tmp_path / "results.csv", index=False)
    text = by_kind_report(str(tmp_path / "results.csv"))
    assert "| moons | 3 | 2 | 0.500 (2) | 0.250 (2) |" in text
