"""benchmarks/bench_full_mixture.py: the batched full-covariance EM against one component at a time and scikit-learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def test_the_per_component_reference_is_full_ems_em_step_for_step():
    from benchmarks.bench_full_mixture import per_component_em, table
    from model.refinement import full_em

    for n, p, k, steps in ((120, 2, 3, 1), (200, 3, 5, 4), (300, 4, 4, 12)):
        X, start = table(n, p, k, seed=n)
        start[start == k - 1] = 0  # one component starts empty and must stay at weight 0 in both
        np.testing.assert_array_equal(per_component_em(X, start, k, steps, 0.01),
                                      full_em(X, start, k, steps=steps, floor=0.01)[0])


def test_bench_full_mixture_times_the_three_per_thread_setting_and_writes_its_report(tmp_path):
    from benchmarks.bench_full_mixture import SHAPES, main

    out = tmp_path / "bench"
    main(["--repeats", "1", "--steps", "2", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["BLAS threads"].astype(str)) == ["default"] * len(SHAPES) + ["1"] * len(SHAPES)
    assert (df[["full_em_s", "per-component_s", "sklearn_s"]] > 0).all().all()
    assert df["same labels as per-component"].all()
    np.testing.assert_allclose(df["per-component / full_em"], df["per-component_s"] / df["full_em_s"])
    report = (tmp_path / "bench.md").read_text()
    assert "BLAS threads 1: per-component / full_em median" in report and "Command: " in report
    with pytest.raises(SystemExit):
        main(["--repeats", "0"])
