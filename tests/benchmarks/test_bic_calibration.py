"""benchmarks/bic_calibration.py: the BIC path's probabilities over K, fitted on one draw and checked on a fresh one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def test_bic_calibration_fits_its_models_on_the_first_draw_and_reports_both_draws(tmp_path):
    from benchmarks.bic_calibration import main
    from model.k_ranker import fit_temperature
    from model.low_dim import fit_top_calibration, top_margin

    out = tmp_path / "bic-calibration"
    main(["--tasks", "3", "--workers", "1", "--fresh-offset", "500", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert set(df["draw"]) == {0, 500} and set(df["set"]) <= {"low-d", "shapes"} and "shapes" in set(df["set"])
    scores = df[[c for c in df.columns if c.startswith("score_")]].to_numpy(float)
    assert np.all(np.nanmax(scores, axis=1) == scores[np.arange(len(df)), df["k"].to_numpy() - 2])  # k: best score
    fit = df[df["draw"] == 0]
    temperature = fit_temperature(fit[[c for c in df.columns if c.startswith("score_")]].to_numpy(float),
                                  fit["K"].to_numpy())
    margin = top_margin(scores[df["draw"] == 0], fit["rows"].to_numpy(float))
    finite = np.isfinite(margin)
    top = fit_top_calibration(margin[finite], (fit["k"] == fit["K"]).to_numpy()[finite])
    report = (tmp_path / "bic-calibration.md").read_text()
    assert f"Fitted on the fit draw: temperature {temperature:.4g} (the labelled K), top choice ({top[0]:.4g}, " \
           f"{top[1]:.4g})" in report
    for model in ("softmax", "top + softmax"):
        for constants in ("today's", "fitted"):
            assert f"| fresh (offset 500) | all | {model} | {constants} |" in report
    assert "Command: " in report
    with pytest.raises(SystemExit):
        main(["--fresh-offset", "0", "--out", str(out)])


def test_the_bic_path_is_calibrated_per_criterion_with_that_criterions_scores_and_constants(tmp_path):
    """``--criterion aic3``: the scores are -AIC3 / (2N) of the same mixtures (above BIC's by (log N - 3) per
    parameter / (2N)), reported against AIC3's constants (``model.low_dim.CALIBRATION``); the latent class path
    refuses the option."""
    from benchmarks.bic_calibration import main
    from model.low_dim import CALIBRATION, n_parameters

    tables = {}
    for criterion in ("bic", "aic3"):
        out = tmp_path / criterion
        main(["--criterion", criterion, "--tasks", "2", "--workers", "1", "--fresh-offset", "500", "--out", str(out)])
        tables[criterion] = pd.read_csv(f"{out}.csv")
    bic, aic3 = tables["bic"], tables["aic3"]
    assert list(bic["table"]) == list(aic3["table"])
    width = 2  # low-d's first tables have 2 or 3 columns: check the gap for the width that fits
    gaps = [(np.log(n) - 3.0) / (2 * n) * np.array([n_parameters(k, p) for k in range(2, 11)])
            for n in bic["rows"] for p in (width, width + 1)]
    diff = (aic3.filter(like="score_").to_numpy(float) - bic.filter(like="score_").to_numpy(float))
    for i, n in enumerate(bic["rows"]):
        finite = np.isfinite(diff[i])
        assert any(np.allclose(diff[i][finite], g[finite]) for g in gaps[2 * i: 2 * i + 2])
    temperature, intercept, slope = CALIBRATION["aic3"]
    report = (tmp_path / "aic3.md").read_text()
    assert report.startswith("# The BIC path's probabilities over K (K by AIC3)")
    assert (f"Today's constants (`model.low_dim`, aic3): temperature {temperature:.4g}, top choice (intercept, "
            f"slope) ({intercept:.4g}, {slope:.4g})") in report
    with pytest.raises(SystemExit):
        main(["--path", "latent-class", "--criterion", "aic3", "--out", str(tmp_path / "x")])


def test_the_latent_class_path_is_calibrated_on_tables_of_categories_only_with_its_own_constants(tmp_path):
    from benchmarks.bic_calibration import main
    from model import latent_class

    out = tmp_path / "latent"
    main(["--path", "latent-class", "--tasks", "2", "--workers", "1", "--fresh-offset", "500", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["all-cat"] * 4 and list(df["draw"]) == [0, 0, 500, 500]
    scores = df[[c for c in df.columns if c.startswith("score_")]].to_numpy(float)
    assert np.all(np.nanmax(scores, axis=1) == scores[np.arange(len(df)), df["k"].to_numpy() - 2])
    report = (tmp_path / "latent.md").read_text()
    assert report.startswith("# The latent class path's probabilities over K")
    assert (f"Today's constants (`model.latent_class`): temperature {latent_class.TEMPERATURE:.4g}, top choice "
            f"(intercept, slope) ({latent_class.TOP_INTERCEPT:.4g}, {latent_class.TOP_SLOPE:.4g})") in report


def test_the_summary_scores_the_top_choice_against_the_labelled_k():
    from benchmarks.bic_calibration import summary

    df = pd.DataFrame({"K": [2, 3], "k": [2, 2], "rows": [100, 100], "score_2": [0.0, 0.0],
                       "score_3": [-np.inf, -1.0]})
    s = summary(df, temperature=1.0)
    assert s["tables"] == 2 and s["top K right"] == 0.5
    p_second = 1.0 / (1.0 + np.exp(-1.0))  # the second table: p(K = 2) at temperature 1
    assert s["its mean probability"] == pytest.approx((1.0 + p_second) / 2)
    assert s["mean log p(labelled K)"] == pytest.approx((0.0 + np.log(1.0 - p_second)) / 2)
    assert s["80 % set size"] == pytest.approx(1.5) and s["80 % set holds K"] == 1.0  # the second: both K, its 3 in
    from model.low_dim import top_probability

    sure = summary(df, temperature=1.0, top=(-1.0, 0.0))  # the top choice given sigmoid(-1) at least: unchanged
    assert sure["its mean probability"] == pytest.approx(s["its mean probability"])
    surer = summary(df, temperature=1.0, top=(3.0, 0.0))
    assert surer["its mean probability"] == pytest.approx((1.0 + float(top_probability(0.0, 3.0, 0.0))) / 2)
