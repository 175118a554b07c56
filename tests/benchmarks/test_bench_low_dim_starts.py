"""benchmarks/bench_low_dim_starts.py: the BIC path from k-means++ starts (no network) against the network's
candidates, timed on the tables that take it."""

from __future__ import annotations

import pandas as pd


def test_bench_low_dim_starts_times_both_starts_on_bic_path_tables_and_writes_its_report(tmp_path):
    from benchmarks.bench_low_dim_starts import main

    out = tmp_path / "bench"
    main(["--suite", "shapes", "--limit", "4", "--repeats", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 4 and set(df["suite"]) == {"shapes"}  # 2-column tables: every one takes the BIC path
    assert (df["network_s"] > 0).all() and (df["kmeans_s"] > 0).all()
    assert df["ari_between"].between(-1, 1).all() and (df["k_kmeans"] >= 2).all()
    text = (tmp_path / "bench.md").read_text()
    assert "| shapes | 4 |" in text and "Command: `python benchmarks/bench_low_dim_starts.py --suite shapes" in text
