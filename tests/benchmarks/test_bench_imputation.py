import numpy as np
import pandas as pd
import pytest

from benchmarks.bench_imputation import gappy_table, main


def test_gappy_tables_miss_cells_at_the_rate_asked_and_are_seeded():
    a, b = gappy_table(2000, 6, 0.2), gappy_table(2000, 6, 0.2)
    pd.testing.assert_frame_equal(a, b)
    assert a.shape == (2000, 6) and a.isna().to_numpy().mean() == pytest.approx(0.2, abs=0.02)


def test_bench_imputation_times_the_three_fills_and_checks_the_neighbours_against_knn_imputer(tmp_path):
    out = tmp_path / "bench-imputation"
    df = main(["--sizes", "300x4", "2500x3", "--repeats", "1", "--rate", "0.15", "--out", str(out)])
    assert df[["N", "D"]].values.tolist() == [[300, 4], [2500, 3]]
    assert df["donors"].tolist() == [300, 2000]  # a table past IMPUTE_DONORS rows donates a subsample
    assert (df["max_abs_difference"] < 1e-5).all()  # the estimator's fill is KNNImputer's on a numeric table
    for name in ("neighbors", "knn", "median"):
        assert (df[f"{name}_s"] > 0).all()
    np.testing.assert_allclose(df["neighbors_over_knn"], df["neighbors_s"] / df["knn_s"])
    text = out.with_suffix(".md").read_text()
    assert "| 2500 | 3 |" in text and "Command: `python benchmarks/bench_imputation.py --sizes 300x4 2500x3" in text
    assert pd.read_csv(f"{out}.csv").shape[0] == 2
