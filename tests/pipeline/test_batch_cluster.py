"""Batch clustering: table discovery and validation, the per-table function, and the Ray run end to end."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pipeline.batch_cluster import (
    ClusterJobConfig,
    TableError,
    check_checkpoint,
    cluster_table,
    discover_tables,
    load_estimator,
    prepare_features,
    read_table,
    run_batch,
    table_names,
)




def _blobs(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 3)) + 4.0 * y[:, None]
    return pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=y)


@pytest.fixture()
def table_dir(tmp_path):
    """Two good tables and one of each kind of bad table."""
    d = tmp_path / "tables"
    d.mkdir()
    _blobs().to_csv(d / "good.csv", index=False)
    mixed = _blobs(seed=1).assign(colour=pd.Categorical(np.random.default_rng(1).choice(["r", "g"], 60)))
    mixed.to_parquet(d / "mixed.parquet", index=False)
    (d / "unreadable.parquet").write_bytes(b"this is not parquet")
    (d / "empty.csv").write_text("")
    (d / "header_only.csv").write_text("a,b,label\n")
    _blobs().head(1).to_csv(d / "one_row.csv", index=False)
    rng = np.random.default_rng(2)
    garbage = _blobs().assign(note=["".join(rng.choice(list("xyzqwk"), 8)) for _ in range(60)])
    garbage.to_csv(d / "garbage.csv", index=False)
    pd.DataFrame({"a": [np.nan] * 5, "b": [np.nan] * 5, "label": [0, 1, 0, 1, 0]}).to_csv(d / "all_missing.csv",
                                                                                         index=False)
    wide = pd.DataFrame(np.random.default_rng(3).normal(size=(10, 12)), columns=[f"w{j}" for j in range(12)])
    wide.assign(label=0).to_csv(d / "wide.csv", index=False)
    return d


BAD_REASONS = {
    "unreadable": "unreadable PARQUET",
    "empty": "empty",
    "header_only": "empty (no rows)",
    "one_row": "only 1 row",
    "garbage": "free text",
    "all_missing": "every feature value is missing",
    "wide": "exceed the limit of 10",
}


def test_discover_tables_expands_dirs_globs_and_files(tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.parquet").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("skip me")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "c.csv").write_text("x\n1\n")
    found = discover_tables([str(tmp_path), str(tmp_path / "sub" / "*.csv"), str(tmp_path / "a.csv")])
    assert [p.name for p in found] == ["a.csv", "b.parquet", "c.csv"]  # de-duplicated, .txt skipped
    with pytest.raises(ValueError, match="no CSV or Parquet tables"):
        discover_tables([str(tmp_path / "nothing*.csv")])


def test_table_names_are_unique_when_stems_collide(tmp_path):
    from pathlib import Path

    paths = [Path("x/t.csv"), Path("x/t.parquet"), Path("y/t.csv"), Path("y/u.csv")]
    assert table_names(paths) == ["t_csv", "t_parquet", "t_csv_2", "u"]


@pytest.mark.parametrize("name", sorted(BAD_REASONS))
def test_bad_tables_are_refused_with_the_reason(table_dir, name):
    path = next(table_dir.glob(f"{name}.*"))
    with pytest.raises(TableError, match=BAD_REASONS[name].replace("(", r"\(").replace(")", r"\)")):
        prepare_features(read_table(path), label_column="label", max_columns=10)


def test_prepare_features_keeps_columns_unchanged_and_splits_the_label():
    df = _blobs().assign(colour=pd.Categorical(["r", "g"] * 30), code=["1", "2.5"] * 30)
    features, truth = prepare_features(df, label_column="label")
    pd.testing.assert_frame_equal(features, df.drop(columns=["label"]))
    pd.testing.assert_series_equal(truth, df["label"])
    with pytest.raises(TableError, match="label column 'nope' not found"):
        prepare_features(df, label_column="nope")


def test_a_table_with_output_column_names_is_refused(tmp_path, tiny_checkpoint):
    path = tmp_path / "again.csv"
    _blobs().assign(cluster=0).to_csv(path, index=False)
    row, out = cluster_table(load_estimator(tiny_checkpoint, None, 0), path, "again")
    assert out is None and row["status"] == "failed" and "already has column(s) ['cluster']" in row["error"]


def test_numeric_column_with_placeholder_strings_is_refused():
    df = pd.DataFrame({"x": ["1.0", "2.0", "?", "4.0", "5.0", "6.0"], "y": range(6)})
    with pytest.raises(TableError, match="numeric but holds non-numeric strings"):
        prepare_features(df)


def test_cluster_table_equals_a_fresh_estimator_with_the_same_seed(tmp_path, tiny_checkpoint):
    from model import TabClustPFN

    df = _blobs(80, seed=5)
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    est = load_estimator(tiny_checkpoint, None, 7)
    _blobs(40, seed=9).drop(columns="label").pipe(est.fit)  # a previous table on the same (reused) estimator
    row, out = cluster_table(est, path, "t", label_column="label")
    fresh = TabClustPFN(checkpoint=tiny_checkpoint, random_state=7).fit(pd.read_csv(path).drop(columns="label"))
    assert row["status"] == "ok" and row["error"] == ""
    np.testing.assert_array_equal(out["cluster"].to_numpy(), fresh.labels_)
    probs = out[[f"prob_{k}" for k in range(fresh.n_clusters_)]].to_numpy()
    np.testing.assert_allclose(probs, fresh.probabilities_, rtol=1e-5, atol=1e-6)
    assert row["n_clusters"] == fresh.n_clusters_
    assert json.loads(row["k_posterior"]) == pytest.approx({str(k): v for k, v in fresh.k_posterior_.items()},
                                                           abs=1e-6)
    pd.testing.assert_frame_equal(out[list(df.columns)], pd.read_csv(path))  # input rows kept, label included
    from sklearn.metrics import adjusted_rand_score

    assert row["ari"] == pytest.approx(adjusted_rand_score(df["label"], fresh.labels_), abs=1e-6)


def test_k_selection_and_max_clusters_reach_the_estimator(tmp_path, tiny_checkpoint):
    path = tmp_path / "t.csv"
    _blobs().to_csv(path, index=False)
    est = load_estimator(tiny_checkpoint, None, 0, k_selection="posterior_mode", max_clusters=2)
    assert est.k_selection == "posterior_mode" and est.max_clusters == 2
    row, out = cluster_table(est, path, "t", label_column="label")
    assert row["status"] == "ok" and row["n_clusters"] == 2 and out["cluster"].between(0, 1).all()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"k_selection": "silhouette"}, "unknown k_selection 'silhouette'"),
        ({"max_clusters": 1}, "max_clusters must be >= 2"),
        ({"n_clusters": 5, "max_clusters": 3}, "n_clusters=5 is larger than max_clusters=3"),
    ],
)
def test_bad_k_settings_are_refused_by_the_config(params, match):
    with pytest.raises(ValueError, match=match):
        ClusterJobConfig(**params)


def test_max_clusters_above_the_checkpoints_k_max_is_refused_before_any_work(tiny_checkpoint):
    with pytest.raises(ValueError, match=r"max_clusters=11 is outside 2\.\.10"):
        check_checkpoint(tiny_checkpoint, None, 11)


@pytest.mark.slow
def test_run_batch_reports_bad_tables_and_completes_the_rest(ray_local, table_dir, tmp_path, tiny_checkpoint,
                                                             tracking_uri):
    import mlflow

    out_dir = tmp_path / "out"
    (out_dir).mkdir()
    (out_dir / "wide.parquet").write_text("stale output of an earlier run")
    cfg = ClusterJobConfig(inputs=(str(table_dir),), output_dir=str(out_dir), label_column="label",
                           checkpoint=tiny_checkpoint, num_workers=2, seed=3, max_columns=10, max_clusters=3,
                           tracking_uri=tracking_uri, progress=False)
    summary = run_batch(cfg)
    on_disk = pd.read_csv(out_dir / "summary.csv")
    assert list(on_disk["table"]) == list(summary["table"])
    status = dict(zip(summary["table"], summary["status"]))
    assert {t for t, s in status.items() if s == "ok"} == {"good", "mixed"}
    errors = dict(zip(summary["table"], summary["error"]))
    for name, reason in BAD_REASONS.items():
        assert status[name] == "failed" and reason in errors[name], (name, errors[name])
        assert not (out_dir / f"{name}.parquet").exists()
    for name in ("good", "mixed"):
        out = pd.read_parquet(out_dir / f"{name}.parquet")
        k = int(summary.set_index("table").at[name, "n_clusters"])
        assert list(out.columns[-(k + 1):]) == ["cluster"] + [f"prob_{j}" for j in range(k)]
        assert len(out) == 60 and out["cluster"].between(0, k - 1).all()
        np.testing.assert_allclose(out[[f"prob_{j}" for j in range(k)]].sum(axis=1), 1.0, atol=1e-4)
    assert summary.set_index("table").loc[["good", "mixed"], "ari"].notna().all()
    assert summary.set_index("table").loc[["good", "mixed"], "n_clusters"].le(3).all()  # max_clusters reached them
    assert summary.attrs["num_workers"] == 2 and summary.attrs["clustering_seconds"] > 0

    client = mlflow.MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name("cluster").experiment_id])
    assert len(runs) == 1
    m = runs[0].data.metrics
    assert m["tables_ok"] == 2 and m["tables_failed"] == len(BAD_REASONS)
    assert {"good.ari", "good.nmi", "good.n_clusters", "mixed.seconds"} <= set(m)
    assert runs[0].data.params["max_clusters"] == "3" and runs[0].data.params["k_selection"] == "expected_ari"
    artifacts = [a.path for a in client.list_artifacts(runs[0].info.run_id)]
    assert "summary.csv" in artifacts
