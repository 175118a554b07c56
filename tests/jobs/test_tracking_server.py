"""The jobs against a real MLflow tracking server (``mlflow server``, started by the ``mlflow_server`` fixture):
they log over HTTP with ``--tracking-uri http://127.0.0.1:PORT``, and the runs, metric histories, artifacts and the
registered model are read back through ``MlflowClient``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.job_scripts import load_job
from tests.jobs.test_serve import Server

REPO = Path(__file__).resolve().parents[2]


def _blobs(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    return pd.DataFrame(rng.normal(size=(n, 2)) + 4.0 * y[:, None], columns=["a", "b"]).assign(target=y)


@pytest.mark.slow
def test_the_batch_job_logs_to_the_tracking_server(ray_local, mlflow_server, tiny_checkpoint, tmp_path, capsys):
    from mlflow import MlflowClient

    tables, out = tmp_path / "tables", tmp_path / "out"
    tables.mkdir()
    _blobs(50, 0).to_csv(tables / "first.csv", index=False)
    _blobs(70, 1).to_csv(tables / "second.csv", index=False)
    _blobs(1, 2).to_csv(tables / "one_row.csv", index=False)
    status = load_job("cluster").main([str(tables), "--output", str(out), "--label-column", "target",
                                       "--checkpoint", tiny_checkpoint, "--n-estimators", "1", "--no-progress",
                                       "--tracking-uri", mlflow_server])
    assert status == 2  # one table refused
    assert "MLflow" not in capsys.readouterr().err  # no tracking warning

    client = MlflowClient(mlflow_server)
    (run,) = client.search_runs([client.get_experiment_by_name("cluster").experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == "batch-cluster"
    assert run.info.artifact_uri.startswith("mlflow-artifacts:")  # stored by the server, sent over HTTP
    assert run.data.params["n_estimators"] == "1" and run.data.params["label_column"] == "target"
    assert [m.value for m in client.get_metric_history(run.info.run_id, "tables_ok")] == [2]
    assert [m.value for m in client.get_metric_history(run.info.run_id, "tables_failed")] == [1]
    summary = pd.read_csv(out / "summary.csv")
    for i, name in enumerate(summary["table"]):
        if name != "one_row":
            (ari,) = client.get_metric_history(run.info.run_id, f"{i}_{name}.ari")
            assert ari.value == pytest.approx(summary.at[i, "ari"])
    logged = client.download_artifacts(run.info.run_id, "summary.csv", str(tmp_path))
    pd.testing.assert_frame_equal(pd.read_csv(logged), summary)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_pretraining_logs_and_registers_on_the_tracking_server(mlflow_server, tmp_path):
    from mlflow import MlflowClient

    from model import TabClustPFN

    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["RAY_ADDRESS"] = "local"  # a private Ray, never a cluster someone else left running
    proc = subprocess.run([sys.executable, "jobs/pretrain.py", "--smoke", "--run-name", "served-store",
                           "--storage-path", str(tmp_path / "runs"), "--output", str(tmp_path / "model.pt"),
                           "--tracking-uri", mlflow_server, "--register-as", "tabclustpfn-server-test"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=800)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])

    client = MlflowClient(mlflow_server)
    (run,) = client.search_runs([client.get_experiment_by_name("tabclustpfn").experiment_id],
                                filter_string="attributes.run_name = 'served-store'")
    assert run.info.status == "FINISHED"
    steps = int(run.data.params["max_steps"])
    for key in ("pin_loss", "soft_ari", "lr"):
        assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == list(range(1, steps + 1)), key
    assert client.get_metric_history(run.info.run_id, "val_ari")
    (version,) = client.search_model_versions("name='tabclustpfn-server-test'")
    assert version.run_id == run.info.run_id and version.status == "READY"

    import mlflow

    mlflow.set_tracking_uri(mlflow_server)
    uri = f"models:/tabclustpfn-server-test/{version.version}"
    table = _blobs(60, 3).drop(columns="target")
    expected = TabClustPFN(checkpoint=tmp_path / "model.pt", random_state=0).fit_predict(table)
    np.testing.assert_array_equal(mlflow.pyfunc.load_model(uri).predict(table), expected)  # fetched over HTTP
    server = Server(["--model-uri", uri, "--tracking-uri", mlflow_server], tmp_path / "serve.log")
    try:  # and served by jobs/serve.py straight from the tracking server
        response = server.invoke(table)
        assert response.status_code == 200 and response.json()["predictions"] == expected.tolist(), response.text
    finally:
        assert server.stop() == 0, server.output()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_smoke_sweep_logs_its_parent_and_trial_runs_to_the_tracking_server(ray_local, mlflow_server, tmp_path):
    """`jobs/sweep.py --smoke` over HTTP: one parent run, a nested child run per trial, each with its metric
    history, read back through MlflowClient."""
    from mlflow import MlflowClient

    from tune.config import EXPERIMENT

    address = ray_local.get_runtime_context().gcs_address
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "jobs/sweep.py", "--study", "coupling", "--smoke", "--budget-steps", "2",
                           "--eval-tasks", "4", "--name", "served", "--storage-path", str(tmp_path / "sweeps"),
                           "--tracking-uri", mlflow_server, "--address", address, "--output",
                           str(tmp_path / "tables")], cwd=REPO, env=env, capture_output=True, text=True, timeout=850)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    client = MlflowClient(mlflow_server)
    runs = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and len(children) == 2
    assert all(c.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for c in children)
    assert all(c.info.status == "FINISHED" and c.info.artifact_uri.startswith("mlflow-artifacts:") for c in children)
    for child in children:
        assert child.data.metrics, child.info.run_name
        name = sorted(child.data.metrics)[0]
        assert client.get_metric_history(child.info.run_id, name)  # the history is on the server
