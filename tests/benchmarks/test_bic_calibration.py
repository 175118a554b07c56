"""benchmarks/bic_calibration.py: the BIC path's temperature, fitted on one draw and checked on a fresh one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def test_bic_calibration_fits_a_temperature_on_the_first_draw_and_reports_both(tmp_path):
    from benchmarks.bic_calibration import main, summary
    from model.k_ranker import fit_temperature

    out = tmp_path / "bic-calibration"
    main(["--tasks", "3", "--workers", "1", "--fresh-offset", "500", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert set(df["draw"]) == {0, 500} and set(df["set"]) <= {"low-d", "shapes"} and "shapes" in set(df["set"])
    scores = df[[c for c in df.columns if c.startswith("score_")]].to_numpy(float)
    assert np.all(np.nanmax(scores, axis=1) == scores[np.arange(len(df)), df["k"].to_numpy() - 2])  # k: best score
    fit = df[df["draw"] == 0]
    temperature = fit_temperature(fit[[c for c in df.columns if c.startswith("score_")]].to_numpy(float),
                                  fit["K"].to_numpy())
    report = (tmp_path / "bic-calibration.md").read_text()
    assert f"Fitted temperature (the fit draw's labelled K): {temperature:.4g}." in report
    assert "| fresh (offset 500) | all |" in report and "Command: " in report
    with pytest.raises(SystemExit):
        main(["--fresh-offset", "0", "--out", str(out)])


def test_the_summary_scores_the_top_choice_against_the_labelled_k():
    from benchmarks.bic_calibration import summary

    df = pd.DataFrame({"K": [2, 3], "k": [2, 2], "score_2": [0.0, 0.0], "score_3": [-np.inf, -1.0]})
    s = summary(df, temperature=1.0)
    assert s["tables"] == 2 and s["top K right"] == 0.5
    p_second = 1.0 / (1.0 + np.exp(-1.0))  # the second table: p(K = 2) at temperature 1
    assert s["its mean probability"] == pytest.approx((1.0 + p_second) / 2)
    assert s["mean log p(labelled K)"] == pytest.approx((0.0 + np.log(1.0 - p_second)) / 2)
