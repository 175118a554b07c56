"""benchmarks/figures.py: the calibration numbers behave as their definitions say, and a tiny run writes every file."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from benchmarks.figures import (ALPHA, expected_calibration_error, k_calibration, main, match_labels,
                                posterior_mode, reliability_bins)
from pipeline.evaluation.calibration import prediction_set


def _posteriors(rng: np.random.Generator, n: int, ks=range(2, 11)) -> list[dict[int, float]]:
    out = []
    for _ in range(n):
        p = rng.dirichlet(np.full(len(ks), 0.5))
        out.append({int(k): float(v) for k, v in zip(ks, p)})
    return out


def test_ece_is_zero_when_right_at_certainty_and_one_when_wrong_at_certainty():
    conf = np.ones(7)
    assert expected_calibration_error(conf, np.ones(7)) == pytest.approx(0.0)
    assert expected_calibration_error(conf, np.zeros(7)) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    conf, hit = rng.uniform(0.1, 1.0, 200), rng.integers(0, 2, 200).astype(float)
    bins = reliability_bins(conf, hit)
    assert bins["n"].sum() == 200 and (bins["lo"] < bins["hi"]).all()
    full = bins[bins["n"] > 0]
    assert ((full["mean_conf"] >= full["lo"]) & (full["mean_conf"] <= full["hi"])).all()
    assert 0.0 <= expected_calibration_error(conf, hit) <= 1.0


def test_k_calibration_agrees_with_its_definitions():
    rng = np.random.default_rng(1)
    posts = _posteriors(rng, 60)
    k_true = [int(k) for k in rng.integers(2, 11, 60)]
    cal = k_calibration("synthetic", [f"t{i}" for i in range(60)], posts, k_true, n_boot=100)
    top = [posterior_mode(p) for p in posts]
    assert cal.accuracy == pytest.approx(np.mean(np.array(top) == np.array(k_true)))
    assert cal.mean_conf == pytest.approx(np.mean([max(p.values()) for p in posts]))
    assert cal.coverage == pytest.approx(np.mean([k in prediction_set(p, ALPHA) for p, k in zip(posts, k_true)]))
    assert 0.0 <= cal.ece <= 1.0 and 0.0 <= cal.ece_ci[0] <= cal.ece_ci[1] <= 1.0
    assert cal.accuracy_ci[0] <= cal.accuracy <= cal.accuracy_ci[1]
    assert int(cal.confusion.to_numpy().sum()) == 60
    assert np.trace(cal.confusion.to_numpy()) == round(cal.accuracy * 60)
    share = cal.confusion_normalised()
    has = cal.confusion.sum(axis=1) > 0
    np.testing.assert_allclose(share[has].sum(axis=1), 1.0)
    assert share[~has].isna().all().all()


def test_mode_ties_go_to_the_smaller_k_and_matched_labels_keep_the_partition():
    assert posterior_mode({2: 0.25, 3: 0.375, 4: 0.375}) == 3
    y = np.array([0, 0, 1, 1, 2, 2])
    pred = np.array([5, 5, 3, 3, 3, 9])
    matched = match_labels(y, pred)
    assert matched[0] == 0 and matched[2] == 1  # the cluster sharing most rows takes the true cluster's number
    assert len(np.unique(matched)) == len(np.unique(pred))
    assert (pd.crosstab(matched, pred) > 0).sum().max() == 1  # a renumbering, not a merge


@pytest.mark.timeout(120)
def test_a_tiny_run_writes_every_figure_and_sane_numbers(tmp_path):
    rng = np.random.default_rng(0)
    dev = tmp_path / "bench" / "dev"
    dev.mkdir(parents=True)
    for name, k in (("blobs_a", 3), ("blobs_b", 2)):
        y = np.repeat(np.arange(k), 20)
        X = rng.normal(size=(len(y), 3)) + 6.0 * y[:, None]
        pd.DataFrame({**{f"f{j}": X[:, j] for j in range(3)}, "target": y}).to_parquet(dev / f"{name}.parquet")
    out = tmp_path / "figures"
    assert main(["--tasks", "3", "--bootstrap", "50", "--benchmarks-dir", str(tmp_path / "bench"),
                 "--rep-dev", "blobs_a", "--rep-prior", "1", "--out", str(out)]) == 0
    for name in ("cin-calibration.png", "cin-confusion.png", "representations.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    tasks = pd.read_csv(out / "cin-posteriors.csv")
    assert tasks.groupby("tables").size().to_dict() == {"Held-out prior tasks": 3, "Development tables": 2}
    assert tasks["p_top"].between(0, 1).all() and (tasks["p_true"] <= tasks["p_top"] + 1e-9).all()
    right = tasks["k_top"] == tasks["k_true"]
    np.testing.assert_allclose(tasks.loc[right, "p_true"], tasks.loc[right, "p_top"])
    text = (out / "figures.md").read_text()
    assert "benchmarks/figures.py --tasks 3" in text and "weights sha256 `" in text and "Date: " in text
    for label, n in (("Held-out prior tasks", 3), ("Development tables", 2)):
        row = re.search(rf"\| {label} \| {n} \| ([\d.]+) \[([\d.]+), ([\d.]+)\] \| ([\d.]+) \[", text)
        assert row, label
        ece, lo, hi, acc = map(float, row.groups())
        assert 0 <= lo <= hi <= 1 and 0 <= ece <= 1 and 0 <= acc <= 1
        part = tasks[tasks["tables"] == label]
        assert acc == pytest.approx((part["k_top"] == part["k_true"]).mean(), abs=5e-4)
    assert "amortized_" in text and "blobs_a" in text


@pytest.mark.timeout(60)
def test_a_wrong_benchmarks_folder_or_table_is_an_error_message_before_any_scoring(tmp_path, capsys):
    dev = tmp_path / "bench" / "dev"
    dev.mkdir(parents=True)
    y = np.repeat(np.arange(2), 10)
    pd.DataFrame({"f0": np.arange(20.0), "f1": np.ones(20) * y, "target": y}).to_parquet(dev / "only.parquet")
    for extra, message in ((["--benchmarks-dir", str(tmp_path / "nowhere")], "benchmark folder not found"),
                           (["--benchmarks-dir", str(tmp_path / "bench"), "--rep-dev", "nope"], "'nope'"),
                           (["--tasks", "0"], "--tasks must be at least 1")):
        assert main(["--tasks", "2", "--out", str(tmp_path / "figures"), *extra]) == 1
        assert message in capsys.readouterr().err
    assert not (tmp_path / "figures").exists()
