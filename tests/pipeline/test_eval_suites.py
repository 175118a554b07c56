"""Benchmark suites: subsampling, standardisation, imputation, one-hot input of the baselines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.evaluation import suites
from tests.shared_data import needs_dev_suite, needs_openml_suite, needs_real_suite


def _write(folder, name, frame):
    folder.mkdir(exist_ok=True)
    frame.to_parquet(folder / f"{name}.parquet", index=False)


def test_large_tables_are_subsampled_with_seed_0_in_sorted_order(tmp_path):
    n = 1200
    frame = pd.DataFrame({"a": np.arange(n, dtype=float), "target": np.arange(n) % 3})
    _write(tmp_path, "big", frame)
    ds = suites.load_parquet_dataset(tmp_path / "big.parquet", "data", "data")
    idx = np.sort(np.random.default_rng(0).choice(n, 1000, replace=False))
    expected = frame["a"].to_numpy()[idx]
    np.testing.assert_allclose(ds.features["a"], (expected - expected.mean()) / expected.std())
    np.testing.assert_array_equal(ds.y, idx % 3)
    assert "subsampled 1200 -> 1000" in ds.notes and ds.n_clusters == 3


def test_preprocessing_standardises_guards_constants_and_imputes():
    frame = pd.DataFrame({"x": [1.0, 2.0, np.nan, 5.0], "const": [3.0] * 4,
                          "c": pd.Categorical(["u", None, "v", "v"])})
    out, notes = suites.preprocess_table(frame)
    filled = np.array([1.0, 2.0, 2.0, 5.0])  # median of 1, 2, 5
    np.testing.assert_allclose(out["x"], (filled - filled.mean()) / filled.std())
    np.testing.assert_array_equal(out["const"], 0.0)
    assert list(out["c"]) == ["u", "v", "v", "v"]
    assert any("x: 1 missing imputed with the median" in n for n in notes)
    assert any("const: constant" in n for n in notes)
    assert any("c: 1 missing imputed with the most frequent level" in n for n in notes)


def test_baseline_matrix_one_hot_encodes_categoricals(tmp_path):
    frame = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "c": pd.Categorical(["p", "q", "r", "p"]),
                          "target": [0, 1, 1, 0]})
    _write(tmp_path, "t", frame)
    ds = suites.load_parquet_dataset(tmp_path / "t.parquet", "data", "data")
    assert ds.categorical == [1]
    M = ds.baseline_matrix()
    assert M.shape == (4, 1 + 3)
    np.testing.assert_array_equal(M[:, 1:], [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]])


def test_folder_without_target_column_is_a_clear_error(tmp_path):
    _write(tmp_path, "t", pd.DataFrame({"a": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="no 'target' column"):
        suites.load_folder(tmp_path, "data", "data")
    with pytest.raises(FileNotFoundError, match="benchmark folder not found"):
        suites.load_folder(tmp_path / "missing", "data", "data")


def test_asking_for_a_dataset_the_folder_lacks_is_an_error_not_a_smaller_suite(tmp_path):
    _write(tmp_path, "iris", pd.DataFrame({"a": [1.0, 2.0], "target": [0, 1]}))
    assert [d.name for d in suites.load_folder(tmp_path, "data", "data", ["iris"])] == ["iris"]
    with pytest.raises(FileNotFoundError, match=r"no Parquet file for \['wine'\]"):
        suites.load_folder(tmp_path, "data", "data", ["iris", "wine"])


def test_paper_sizes_of_the_synthetic_suite():
    assert len(suites.GMM_SIZES) == 25 and len(suites.ZEUS_SIZES) == 24
    assert suites.GMM_SIZES[0] == (511, 55, 8) and suites.ZEUS_SIZES[2] == (948, 6, 43, 6)
    assert all(500 <= n <= 1000 and 2 <= k <= 10 for n, _, k in suites.GMM_SIZES)
    assert all(d_num + d_cat <= 64 for _, d_num, d_cat, _ in suites.ZEUS_SIZES)


@needs_real_suite
def test_real_suite_matches_the_benchmark_readme():
    data = {d.name: d for d in suites.real_suite()}
    assert len(data) == 22
    assert data["haberman"].baseline_matrix().shape[1] == 14
    assert data["dermatology"].baseline_matrix().shape[1] == 130
    for name in ("banknote", "segment", "landsat", "biodeg", "spambase"):
        assert len(data[name].y) == 1000 and "subsampled" in data[name].notes
    for name, k in (("iris", 3), ("ecoli", 8), ("glass", 6)):
        assert data[name].n_clusters == k
    assert "imputed" in data["wisc"].notes and "imputed" in data["dermatology"].notes
    assert all(np.isfinite(d.baseline_matrix()).all() for d in data.values())


@needs_dev_suite
def test_dev_suite_reads_every_manifest_table_with_its_classes():
    manifest = pd.read_csv(suites.benchmarks_dir() / "dev" / "manifest.csv").set_index("name")
    data = {d.name: d for d in suites.dev_suite()}
    assert set(data) == set(manifest.index)
    for name, ds in data.items():
        assert ds.suite == "dev" and ds.n_clusters == manifest.loc[name, "n_classes"]
        assert len(ds.y) == min(1000, manifest.loc[name, "n_instances"])
        assert np.isfinite(ds.baseline_matrix()).all()
    assert suites.SUITE_ROLES["dev"] == "development"
    assert {suites.SUITE_ROLES[s] for s in ("synthetic", "real", "openml")} == {"test"}


@needs_openml_suite
def test_openml_suite_is_a_test_suite_of_the_papers_tables():
    data = suites.openml_suite(names=["openml_42585_penguins"])
    assert [d.name for d in data] == ["openml_42585_penguins"] and data[0].suite == "openml"
    assert data[0].n_clusters == 3


def test_synthetic_datasets_have_the_papers_sizes_and_reserved_seeds():
    data = suites.synthetic_suite(n_gmm=2, n_zeus=2)
    expected = [(n, d, 0, k) for n, d, k in suites.GMM_SIZES[:2]] + list(suites.ZEUS_SIZES[:2])
    for ds, (n, d_num, d_cat, k) in zip(data, expected):
        assert len(ds.y) == n and ds.n_clusters == k and len(np.unique(ds.y)) == k
        assert ds.features.shape[1] - len(ds.categorical) == d_num and len(ds.categorical) == d_cat
        assert ds.meta["seed"] >= suites.EVAL_SEED_BASE
    assert [d.name for d in data] == ["gmm_00", "gmm_01", "zeus_00", "zeus_01"]
    assert all(d.bayes_labels is not None for d in data[:2]) and data[2].bayes_labels is None
    again = suites.synthetic_suite(n_gmm=1, n_zeus=0)[0]  # same seed, same data
    pd.testing.assert_frame_equal(again.features, data[0].features)
