"""benchmarks/bench_batch_scale.py: the committed command still runs and writes every figure of batch-scale.md."""

from __future__ import annotations

import re

import pandas as pd
import pytest


def test_mixed_tables_cover_the_stated_ranges_and_are_seeded(tmp_path):
    from benchmarks.bench_batch_scale import make_mixed_tables

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    meta = make_mixed_tables(tmp_path / "a", 40, seed=3, rows=(100, 400), columns=(2, 9))
    again = make_mixed_tables(tmp_path / "b", 40, seed=3, rows=(100, 400), columns=(2, 9))
    pd.testing.assert_frame_equal(meta.drop(columns="path"), again.drop(columns="path"))
    assert meta["rows"].between(100, 400).all() and meta["columns"].between(2, 9).all()
    assert meta["k_true"].between(2, 10).all() and meta["columns"].nunique() > 3
    first = pd.read_parquet(meta["path"].iloc[0])
    assert first.shape == (meta["rows"].iloc[0], meta["columns"].iloc[0] + 1)
    assert first["label"].nunique() <= meta["k_true"].iloc[0]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_tiny_run_writes_every_field(tmp_path, tiny_checkpoint):
    from benchmarks.bench_batch_scale import main

    out = tmp_path / "batch-scale"
    assert main(["--n-tables", "4", "--rows", "60", "200", "--columns", "2", "5", "--checkpoint", tiny_checkpoint,
                 "--out", str(out)]) == 0
    text = (tmp_path / "batch-scale.md").read_text()
    assert text.startswith("# Batch clustering at scale: 4 tables of mixed sizes")
    number = r"\d+(\.\d+)?"
    for run in ("TabClustPFN local", "KMeans+ loop"):
        # workers, tables, failed, wall s, tables/s, p50, p95, mean ARI, driver peak RSS
        assert re.search(rf"\| {re.escape(run)} \| [^|]+ \| 4 \| 0 \| {number} \| {number} \| {number} \| "
                         rf"{number} \| -?{number} \| \d+ \| {number} \|", text), run
    assert re.search(r"TabClustPFN batch / KMeans\+ loop, tables/s: \*\*\d+\.\d\dx\*\*", text)
    assert re.search(r"p50 seconds per table, TabClustPFN / KMeans\+: \*\*\d+\.\d\dx\*\*", text)
    assert "Cluster run: not measured" in text
    assert re.search(r"\| TabClustPFN local \| \d+ \| \d+ \(<= 1 tables\) \| \d+ \| \d+ \|", text)
    assert re.search(r"Load average \(1/5/15 min\) before: [\d.]+ / [\d.]+ / [\d.]+; after: ", text)
    for field in ("Command: `PYTHONPATH=. python benchmarks/bench_batch_scale.py --n-tables 4", "Checkpoint sha256: `",
                  "Machine: ", "Date: ", "Run time of the benchmark: "):
        assert field in text, field
    per_table = pd.read_csv(tmp_path / "batch-scale.csv")
    assert len(per_table) == 4 and per_table["rows"].between(60, 200).all()
    for col in ("TabClustPFN_local_seconds", "KMeansplus_loop_seconds", "TabClustPFN_local_k", "KMeansplus_loop_k"):
        assert per_table[col].notna().all() and (per_table[col] > 0).all(), col
