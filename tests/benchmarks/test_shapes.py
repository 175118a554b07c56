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


def test_the_choice_benchmarks_read_the_written_set_and_a_fresh_draw_past_it(tmp_path):
    from benchmarks.choose_checkpoint import tables
    from benchmarks.shapes import KINDS, SIZES, write_set
    from pipeline.evaluation.suites import load_parquet_dataset

    per_seed = len(KINDS) * len(SIZES)
    first = list(tables("shapes", per_seed + 2))
    paths = {p.stem: p for p in write_set(tmp_path / "set", seeds=1)}
    assert len(first) == per_seed + 2 and {name for name, _, _ in first[:per_seed]} == set(paths)
    for name, frame, y in first[:4]:  # the table jobs/evaluate.py --data loads, preprocessed alike
        ds = load_parquet_dataset(paths[name], "data", "data")
        np.testing.assert_allclose(frame.to_numpy(), ds.features.to_numpy())
        np.testing.assert_array_equal(y, ds.y)
    fresh = list(tables("shapes", 2, offset=per_seed))  # seed 1: tables the first block never held
    assert [name for name, _, _ in fresh] == [name for name, _, _ in first[per_seed:]]
    assert all(name.endswith("_s1") for name, _, _ in fresh)
    assert not np.array_equal(fresh[0][1].to_numpy(), first[0][1].to_numpy())


def test_k_rule_records_draw_the_shapes_and_refuse_a_fresh_dev(tmp_path):
    from benchmarks.k_rule_records import main as records

    records(["--set", "shapes", "--tasks", "2", "--offset", "54", "--workers", "1", "--out", str(tmp_path)])
    with np.load(tmp_path / "shapes.npz") as d:
        assert list(d["names"]) == ["moons_n300_s3", "moons_n600_s3"] and d["features"].shape[0] == 2
    with pytest.raises(SystemExit):
        records(["--set", "dev", "--offset", "5", "--out", str(tmp_path)])
