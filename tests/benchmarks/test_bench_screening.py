"""benchmarks/bench_screening.py: the default noise screening's time against none, table by table."""

from __future__ import annotations

import pandas as pd

from tests.shared_data import needs_dev_suite


@needs_dev_suite
def test_bench_screening_times_both_settings_on_every_table_and_writes_its_report(tmp_path):
    from benchmarks.bench_screening import main

    out = tmp_path / "bench"
    main(["--suite", "dev", "--repeats", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 23 and set(df["suite"]) == {"dev"}
    assert (df["off_s"] > 0).all() and (df["auto_s"] > 0).all()
    assert (df["kept_out"] <= df["screened"]).all()  # the put-back only brings columns back
    assert (df["kept_out"] + df["set_aside"] < df["columns"]).all()  # something is always left to cluster
    assert (df["set_aside"] > 0).any()  # kept flags that only split the clusters (caterpillars' on 2026-12-07)
    text = (tmp_path / "bench.md").read_text()
    assert "| dev | 23 |" in text and "Command: `python benchmarks/bench_screening.py --suite dev" in text
