"""The jobs against a real MLflow tracking server (``mlflow server``, started by the ``mlflow_server`` fixture):
they log over HTTP with ``--tracking-uri http://127.0.0.1:PORT``, and the runs, metric histories, artifacts and the
registered model are read back through ``MlflowClient``. Pretraining against the server is tested in
tests/pipeline/test_pretrain_e2e.py (the submitted job), a sweep in tests/tune/test_sweep.py (the resumed one)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.job_scripts import load_job


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
