"""jobs/evaluate.py: the quick mode end to end (synthetic suite + a data folder + calibration), and refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from model.refinement import DEFAULT_REFINE
from tests.job_scripts import load_job


@pytest.fixture(scope="module")
def job():
    return load_job("evaluate")


def test_help_lists_the_methods(job, capsys):
    with pytest.raises(SystemExit):
        job.parse_args(["--help"])
    text = capsys.readouterr().out
    assert "TabClustPFN*" in text and "KMeans+" in text and "--calibration-size" in text


def test_the_one_cluster_answer_and_the_noise_screening_reach_the_config(job, monkeypatch):
    seen = {}

    def stop(cfg):
        seen["cfg"] = cfg
        raise ValueError("stopped after the config was built")

    monkeypatch.setattr(job, "run_evaluation", stop)
    assert job.main(["--suite", "real", "--allow-single-cluster", "--screen-noise", "false",
                     "--power-transform", "false"]) == 1
    assert seen["cfg"].allow_single_cluster and seen["cfg"].screen_noise is False
    assert seen["cfg"].power_transform is False and job.parse_args([]).power_transform is None
    assert not job.parse_args([]).allow_single_cluster and job.parse_args([]).screen_noise is None  # the default's
    with pytest.raises(SystemExit):
        job.parse_args(["--screen-noise", "yes"])


def test_unknown_method_and_missing_folder_exit_1(job, tmp_path, tiny_checkpoint, tracking_uri, capsys):
    common = ["--checkpoint", tiny_checkpoint, "--output", str(tmp_path / "out"), "--tracking-uri", tracking_uri]
    assert job.main(["--suite", "synthetic", "--methods", "KMeans", *common]) == 1
    assert "unknown method" in capsys.readouterr().err
    assert job.main(["--data", str(tmp_path / "nowhere"), "--methods", "KMeans*", *common]) == 1
    assert "benchmark folder not found" in capsys.readouterr().err


def test_bad_worker_count_exits_1_naming_the_flag(job, tmp_path, tracking_uri, capsys):
    args = ["--data", str(tmp_path / "nowhere"), "--methods", "KMeans*", "--output", str(tmp_path / "out"),
            "--tracking-uri", tracking_uri]
    assert job.main([*args, "--num-workers", "0"]) == 1
    assert "--num-workers" in capsys.readouterr().err


@pytest.mark.slow
def test_quick_mode_end_to_end(ray_local, job, tmp_path, tiny_checkpoint, tracking_uri, capsys):
    import mlflow

    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(1)
    y = np.arange(80) % 2
    pd.DataFrame(rng.normal(size=(80, 2)) + 3.0 * y[:, None], columns=["u", "v"]).assign(target=y).to_parquet(
        data / "mine.parquet")
    out = tmp_path / "out"
    code = job.main(["--quick", "--suite", "synthetic", "--data", str(data), "--checkpoint", tiny_checkpoint,
                     "--calibration-size", "6", "--output", str(out), "--tracking-uri", tracking_uri,
                     "--num-workers", "2", "--no-progress"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "# TabClustPFN evaluation" in printed and "Suite `synthetic`" in printed and "Suite `data`" in printed

    results = pd.read_csv(out / "results.csv")
    quick = ["TabClustPFN*", "TabClustPFN", "KMeans*", "KMeans+", "GMM*", "DBSCAN"]
    assert sorted(results["method"].unique()) == sorted(quick)
    assert results.groupby("suite")["dataset"].nunique().to_dict() == {"synthetic": 4, "data": 1}
    assert len(results) == 5 * len(quick)
    synth = pd.read_csv(out / "datasets.csv").set_index("dataset")
    assert synth.loc[["gmm_00", "gmm_01"], "bayes_ari"].notna().all()  # the oracle ceiling on GMM datasets
    assert synth.loc["gmm_00", "n_rows"] == 511 and synth.loc["gmm_00", "k_true"] == 8  # paper Tab. 6, ID 0

    calib = pd.read_csv(out / "calibration.csv")
    assert list(calib["alpha"]) == [0.8, 0.85, 0.9, 0.95, 0.99]
    assert (calib["n_datasets"] + calib["n_failed"] == 6).all()
    assert calib["coverage"].is_monotonic_increasing  # nested sets: coverage cannot drop as alpha grows
    text = (out / "results.md").read_text()
    assert "Bayes-oracle ARI" in text and "Calibration of the CIN posterior" in text
    assert "Checkpoint sha256: `" in text and "Machine: " in text and "Date: " in text  # provenance recorded
    assert f"refinement `{DEFAULT_REFINE}`" in text  # the estimator's default, named in the settings line
    assert (out / "calibration.png").is_file() and (out / "synthetic_auto_cd.png").is_file()

    client = mlflow.MlflowClient(tracking_uri)
    [run] = client.search_runs([client.get_experiment_by_name("evaluation").experiment_id])
    assert "calibration.coverage_0.9" in run.data.metrics and run.data.params["quick"] == "True"


def test_dequantize_takes_true_or_false(job):
    assert job.parse_args(["--dequantize", "TRUE"]).dequantize is True
    assert job.parse_args(["--dequantize", "false"]).dequantize is False and job.parse_args([]).dequantize is None
    with pytest.raises(SystemExit):
        job.parse_args(["--dequantize", "maybe"])
