"""jobs/cluster.py: exit status, printed summary, the no-argument demo run and the script entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.job_scripts import load_job

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def job():
    return load_job("cluster")




def _good_table(path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 40)
    pd.DataFrame(rng.normal(size=(40, 3)) + 3.0 * y[:, None], columns=["a", "b", "c"]).to_csv(path, index=False)


def _args(tmp_path, checkpoint, tracking_uri, *inputs):
    return [*map(str, inputs), "--output", str(tmp_path / "out"), "--checkpoint", checkpoint,
            "--tracking-uri", tracking_uri, "--num-workers", "1", "--no-progress"]


def test_help_states_the_exit_status(job, capsys):
    with pytest.raises(SystemExit) as exc:
        job.parse_args(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "exit status: 0 when every table was clustered, 2 when any table failed" in text


@pytest.mark.slow
def test_exit_status_is_0_when_all_succeed_and_2_when_any_fails(ray_local, job, tmp_path, tiny_checkpoint,
                                                               tracking_uri, capsys):
    good = tmp_path / "in"
    good.mkdir()
    _good_table(good / "one.csv")
    _good_table(good / "two.csv", seed=1)
    assert job.main(_args(tmp_path, tiny_checkpoint, tracking_uri, good)) == 0
    assert "2 of 2 tables clustered" in capsys.readouterr().out

    (good / "broken.csv").write_text("a,b\n1,2\n")  # one row
    assert job.main(_args(tmp_path, tiny_checkpoint, tracking_uri, good)) == 2
    printed = capsys.readouterr().out
    assert "only 1 row" in printed and "2 of 3 tables clustered" in printed


def test_exit_status_is_1_when_no_table_is_found(job, tmp_path, tiny_checkpoint, tracking_uri, capsys):
    assert job.main(_args(tmp_path, tiny_checkpoint, tracking_uri, tmp_path / "missing" / "*.csv")) == 1
    assert "no CSV or Parquet tables found" in capsys.readouterr().err


def test_missing_checkpoint_is_a_clear_error(job, tmp_path, tracking_uri, capsys):
    assert job.main(_args(tmp_path, str(tmp_path / "nope.pt"), tracking_uri)) == 1
    assert "checkpoint not found" in capsys.readouterr().err


@pytest.mark.slow
def test_no_input_clusters_the_demo_tables_as_a_script(tmp_path, tiny_checkpoint, tracking_uri):
    # RAY_ADDRESS=local: a private Ray, not the test session's (bound to 127.0.0.1, which a driver in
    # another process cannot join).
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_ADDRESS": "local"}
    proc = subprocess.run(
        [sys.executable, str(REPO / "jobs" / "cluster.py"), "--output", str(tmp_path / "out"), "--checkpoint",
         tiny_checkpoint, "--tracking-uri", tracking_uri, "--num-workers", "2", "--no-progress"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    demo = sorted(p.stem for p in (REPO / "data" / "demo").iterdir() if p.suffix in (".csv", ".parquet"))
    assert sorted(summary["table"]) == demo
    assert (summary["status"] == "ok").all() and summary["ari"].notna().all()  # scored against 'target'
    assert "target" in pd.read_parquet(tmp_path / "out" / "customers.parquet").columns
    assert f"{len(demo)} of {len(demo)} tables clustered" in proc.stdout


def test_unusable_checkpoint_or_k_fails_before_any_table(job, tmp_path, tiny_checkpoint, tracking_uri, capsys):
    good = tmp_path / "in"
    good.mkdir()
    _good_table(good / "one.csv")
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    assert job.main(_args(tmp_path, str(broken), tracking_uri, good)) == 1
    assert "broken.pt" in capsys.readouterr().err
    assert job.main(_args(tmp_path, tiny_checkpoint, tracking_uri, good) + ["--n-clusters", "11"]) == 1
    assert "n_clusters=11 is outside 2..10" in capsys.readouterr().err
    assert job.main(_args(tmp_path, tiny_checkpoint, tracking_uri, good) + ["--max-clusters", "11"]) == 1
    assert "max_clusters=11 is outside 2..10" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # a usage error: argparse's message and exit status
        job.main(_args(tmp_path, tiny_checkpoint, tracking_uri, good) + ["--n-clusters", "4", "--max-clusters", "3"])
    assert exc.value.code == 2
    assert "n_clusters=4 is larger than max_clusters=3" in capsys.readouterr().err
    assert not (tmp_path / "out" / "summary.csv").exists()


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--seed", "-1"], "error: seed must be in 0..4294967295 (numpy's seed range), got -1"),
        (["--output", "{file}"], "is an existing file, not a folder: give a folder (created if missing)"),
        (["--output", "{input}"], "is the input folder"),
    ],
)
def test_unusable_options_are_usage_errors_with_exit_status_2(job, tmp_path, tiny_checkpoint, tracking_uri, capsys,
                                                              flags, match):
    good = tmp_path / "in"
    good.mkdir()
    _good_table(good / "one.csv")
    (tmp_path / "afile").write_text("not a folder")
    flags = [f.format(file=tmp_path / "afile", input=good) for f in flags]
    with pytest.raises(SystemExit) as exc:
        job.main(_args(tmp_path, tiny_checkpoint, tracking_uri, good) + flags)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage:") and match in err and "Traceback" not in err
    assert sorted(p.name for p in good.iterdir()) == ["one.csv"]


@pytest.mark.slow
def test_an_mlflow_failure_leaves_the_results_and_exit_status(ray_local, job, tmp_path, tiny_checkpoint, capsys,
                                                              caplog):
    good = tmp_path / "in"
    good.mkdir()
    _good_table(good / "one.csv")
    (tmp_path / "afile").write_text("a file, so no database can be created under it")
    broken_uri = f"sqlite:///{tmp_path / 'afile' / 'mlruns.db'}"
    assert job.main(_args(tmp_path, tiny_checkpoint, broken_uri, good)) == 0
    assert "1 of 1 tables clustered" in capsys.readouterr().out
    assert "MLflow tracking is off for this run" in caplog.text
    assert pd.read_csv(tmp_path / "out" / "summary.csv")["status"].tolist() == ["ok"]
    assert (tmp_path / "out" / "one.parquet").is_file()


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / "model" / "weights" / "tabclustpfn-small.pt").is_file(),
                    reason="the shipped checkpoint is not in model/weights yet")
def test_readme_first_command_with_the_shipped_checkpoint(ray_local, job, tmp_path, tracking_uri, capsys):
    code = job.main(["--output", str(tmp_path / "out"), "--tracking-uri", tracking_uri, "--no-progress"])
    assert code == 0, capsys.readouterr().out
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert (summary["status"] == "ok").all() and summary["ari"].notna().all()


def test_k_flags_reach_the_job_config(job, tmp_path, tiny_checkpoint, tracking_uri, monkeypatch, capsys):
    seen = {}

    def fake_run_batch(cfg):
        seen["cfg"] = cfg
        raise RuntimeError("stopped after the config was built")

    monkeypatch.setattr(job, "run_batch", fake_run_batch)
    argv = _args(tmp_path, tiny_checkpoint, tracking_uri, tmp_path) + [
        "--k-selection", "posterior_mode", "--max-clusters", "4", "--refine", "none", "--allow-single-cluster",
        "--screen-noise", "TRUE", "--ignore-columns", "id", "name", "--missing-values", "-999", "unknown", "99.5"]
    assert job.main(argv) == 1
    assert "stopped after the config was built" in capsys.readouterr().err
    assert seen["cfg"].k_selection == "posterior_mode" and seen["cfg"].max_clusters == 4
    assert seen["cfg"].refine == "none" and seen["cfg"].allow_single_cluster and seen["cfg"].screen_noise is True
    assert seen["cfg"].ignore_columns == ("id", "name") and job.parse_args([]).ignore_columns == []
    assert seen["cfg"].missing_values == (-999.0, "unknown", 99.5) and job.parse_args([]).missing_values == []
    assert not job.parse_args([]).allow_single_cluster and job.parse_args([]).screen_noise is None  # the default's
    assert job.parse_args(["--screen-noise", "false"]).screen_noise is False
    assert job.parse_args([]).power_transform is None  # the estimator's default
    assert job.parse_args(["--power-transform", "False"]).power_transform is False
    assert job.parse_args([]).impute is None and job.parse_args(["--impute", "median"]).impute == "median"
    with pytest.raises(SystemExit):
        job.parse_args(["--impute", "mean"])
    with pytest.raises(SystemExit):
        job.parse_args(["--power-transform", "no"])
    with pytest.raises(SystemExit):
        job.parse_args(["--k-selection", "silhouette"])


def test_the_printed_summary_leaves_out_the_columns_in_which_no_table_says_anything(job):
    summary = pd.DataFrame({"table": ["a", "b"], "status": ["ok", "failed"], "rows": [40, 1], "columns": [3, 2],
                            "n_clusters": [2, None], "k_at_top": [False, None], "k_probability": [0.6, None],
                            "ignored_columns": ["[]", None],
                            "empty_rows": [0, None], "fenced_values": ['{"column \'x\'": 2}', None],
                            "seconds": [0.1, 0.0], "ari": [0.0, None], "error": ["", "table has only 1 row"],
                            "path": ["a.csv", "b.csv"],
                            "k_posterior": ["{}", None], "node_id": ["n1", None]})
    shown = job.printed_summary(summary)
    assert list(shown.columns) == ["table", "status", "rows", "columns", "n_clusters", "k_probability",
                                   "fenced_values", "seconds", "ari", "error"]  # an ARI of 0 is a value
    assert shown.loc[1, "n_clusters"] == "" and shown.loc[1, "error"] == "table has only 1 row"
    everything_ok = job.printed_summary(summary.iloc[:1])
    assert "error" not in everything_ok and "n_clusters" in everything_ok  # nothing failed: no error column
    at_top = job.printed_summary(summary.assign(k_at_top=[True, None]))
    assert list(at_top.columns[4:7]) == ["n_clusters", "k_at_top", "k_probability"]  # a K at the top is news
