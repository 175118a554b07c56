"""benchmarks/bench_blas_threads.py: a fit with BLAS held to one thread against the pools' defaults, in processes."""

from __future__ import annotations

import pandas as pd
import pytest


def _rows(table: str, one: list[float], as_is: list[float], sweep: float, labels: tuple[str, str]) -> list[dict]:
    """Two processes per setting: fastest fits ``one`` and ``as_is``, their median repeats 2x and 4x those."""
    rows = []
    for r, (a, b) in enumerate(zip(one, as_is)):
        common = {"suite": "dev", "table": table, "kmeans_sweep": sweep + r, "k": 3, "round": r}
        rows.append({**common, "setting": "one", "fit": a, "fit_median": 2 * a, "labels": labels[0]})
        rows.append({**common, "setting": "as-is", "fit": b, "fit_median": 4 * b, "labels": labels[1]})
    return rows


def test_the_report_takes_each_tables_fastest_process_and_counts_faster_tables_and_equal_labels():
    from benchmarks.bench_blas_threads import report

    df = pd.DataFrame(_rows("a", [0.5, 0.2], [0.4, 0.6], 0.1, ("x", "x"))  # one 0.2, as-is 0.4: 0.5
                      + _rows("b", [0.3, 0.9], [0.3, 0.3], 0.3, ("y", "z"))  # 0.3 / 0.3 = 1.0; labels differ
                      + _rows("c", [0.8, 0.8], [0.9, 0.7], 0.7, ("w", "w")))  # 0.8 / 0.7
    text = "\n".join(report(df, "cmd"))
    assert "## `dev` (3 tables, 2 processes per setting)" in text
    ratio = pd.Series([0.2 / 0.4, 1.0, 0.8 / 0.7]).median()
    assert f"Per table one / as-is: {ratio:.2f} [" in text
    assert "faster on 1 of 3 tables" in text
    # per table and setting the median process's median repeat: a 0.7 / 2.0, b 1.2 / 1.2, c 1.6 / 3.2
    typical = pd.Series([0.7 / 2.0, 1.2 / 1.2, 1.6 / 3.2]).median()
    assert f"of a typical fit (each process's median repeat, their median) {typical:.2f} [" in text
    assert "The same labels in every process on 2 of 3 tables" in text
    per_sweep = pd.Series([0.2 / 0.1, 0.3 / 0.3, 0.8 / 0.7]).median()  # the sweep's fastest process
    assert f"| one | {0.3:.4f} | {per_sweep:.2f} [" in text and "| 1 of 3 |" in text


def test_bad_rounds_are_refused():
    from benchmarks.bench_blas_threads import main

    with pytest.raises(SystemExit):
        main(["--rounds", "0"])
