"""End to end: `ray job submit` a smoke pretraining to a real local Ray head, then check MLflow and the model."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.ray_processes import alive, end, free_ports, matching

REPO = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))


def _env() -> dict[str, str]:
    """No PYTHONPATH: a submitted job must import the packages from its uploaded working directory."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(RAY_AUTH_MODE="token", RAY_ENABLE_UV_RUN_RUNTIME_ENV="0")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `python` is this venv's
    return env


def _of_head(cmd: str, temp_dir: str, gcs_port: int) -> bool:
    """A command line of the head's: it names the head's temp dir, or its GCS address at whatever IP Ray chose."""
    return temp_dir in cmd or re.search(rf":{gcs_port}(\s|$)", cmd) is not None


def _stop_head(temp_dir: str, gcs_port: int) -> None:
    """Stop only this head: the processes whose command line names its private temp dir or its GCS address (the
    Ray Client server names only the latter), and their children."""
    end(matching(lambda cmd: _of_head(cmd, temp_dir, gcs_port)))


@pytest.fixture()
def ray_head():
    """A Ray head on 127.0.0.1 with a dashboard (job server) on free ports and a private temp dir."""
    temp_dir = tempfile.mkdtemp(prefix="rayhead", dir="/tmp")  # short: Ray's socket paths have a length limit
    gcs, dash, client, agent, agent_grpc, metrics, rt_env = free_ports(7)
    cmd = [RAY, "start", "--head", "--port", str(gcs), "--node-ip-address", "127.0.0.1", "--num-cpus", "4",
           "--include-dashboard", "true", "--dashboard-host", "127.0.0.1", "--dashboard-port", str(dash),
           "--ray-client-server-port", str(client), "--dashboard-agent-listen-port", str(agent),
           "--dashboard-agent-grpc-port", str(agent_grpc), "--metrics-export-port", str(metrics),
           "--runtime-env-agent-port", str(rt_env), "--temp-dir", temp_dir, "--disable-usage-stats"]
    try:
        started = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=180)
        assert started.returncode == 0, started.stdout + started.stderr
        yield f"http://127.0.0.1:{dash}"
    finally:
        _stop_head(temp_dir, gcs)
        assert not [pid for pid in matching(lambda cmd: _of_head(cmd, temp_dir, gcs)) if alive(pid)], (
            "a process of the test's Ray head outlived it")
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_cli_help_documents_every_option():
    env = dict(_env(), PYTHONPATH=str(REPO))  # as `make` installs the repo
    out = subprocess.run([sys.executable, "jobs/pretrain.py", "--help"], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for flag in ("--preset", "--max-steps", "--batch-size", "--num-workers", "--use-gpu", "--prior", "--resume",
                 "--seed", "--smoke", "--tracking-uri", "--storage-path", "--output", "--init-checkpoint", "--lr",
                 "--warmup-steps", "--checkpoint-every", "--val-every"):
        assert flag in out.stdout, flag


def test_init_checkpoint_brings_its_model_config_and_an_absolute_path(tmp_path, monkeypatch):
    from model import ModelConfig, TabClustNet
    from model.checkpoint import save_checkpoint
    from pipeline.config import train_preset
    from pipeline.config import adopt_init_checkpoint

    other = ModelConfig.preset("tiny", n_cls=1)
    save_checkpoint(tmp_path / "init.pt", TabClustNet(other), {})
    monkeypatch.chdir(tmp_path)
    cfg = dataclasses.replace(train_preset("tiny"), init_checkpoint="init.pt")
    adopted = adopt_init_checkpoint(cfg)
    assert adopted.model == other and adopted.init_checkpoint == str(tmp_path / "init.pt")


@pytest.mark.slow
def test_submitted_smoke_pretraining_is_tracked_and_loads(ray_head, mlflow_server, tmp_path):
    """`ray job submit -- python jobs/pretrain.py --smoke` against a real MLflow tracking server: the run, its
    metric histories and the registered model are read back over HTTP, the model predicts as the exported
    checkpoint does and is served by jobs/serve.py straight from the registry."""
    import mlflow
    from mlflow.tracking import MlflowClient

    from model import TabClustPFN
    from tests.jobs.test_serve import Server

    uri = mlflow_server
    job_id = f"pretrain-e2e-{os.getpid()}-{int(time.time())}"
    submit = [RAY, "job", "submit", "--address", ray_head, "--submission-id", job_id, "--working-dir", str(REPO), "--",
              "python", "jobs/pretrain.py", "--smoke", "--run-name", "e2e", "--storage-path", str(tmp_path / "runs"),
              "--tracking-uri", uri, "--output", str(tmp_path / "model.pt")]
    job = subprocess.run(submit, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=600)
    status = subprocess.run([RAY, "job", "status", "--address", ray_head, job_id], env=_env(), capture_output=True,
                            text=True, timeout=120)
    assert job.returncode == 0 and f"job '{job_id}' succeeded" in status.stdout.lower(), job.stdout[-4000:]

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("tabclustpfn")
    (run,) = client.search_runs([exp.experiment_id], filter_string="attributes.run_name = 'e2e'")
    assert run.info.status == "FINISHED" and run.info.artifact_uri.startswith("mlflow-artifacts:")
    assert run.data.params["max_steps"] == "8" and run.data.params["model.col_dim"] == "8"
    assert run.data.params["stream.kind"] == "mix" and "optim.lr" in run.data.params
    for key in ("pin_loss", "soft_ari", "cin_loss", "k_acc", "lr", "tasks_per_s", "data_wait_fraction"):
        assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == list(range(1, 9)), key
    for key in ("val_ari", "val_nmi", "val_k_mae", "val_ari_known_k"):
        assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == [4, 8], key

    rng = np.random.default_rng(0)
    table = pd.DataFrame(np.concatenate([rng.normal(-3, 1, (40, 3)), rng.normal(3, 1, (40, 3))]),
                         columns=["a", "b", "c"])
    mlflow.set_tracking_uri(uri)
    (version,) = client.search_model_versions("name='tabclustpfn'")
    assert version.run_id == run.info.run_id and version.status == "READY"
    model_uri = f"models:/tabclustpfn/{version.version}"
    served = mlflow.pyfunc.load_model(model_uri)  # fetched over HTTP
    expected = TabClustPFN(checkpoint=tmp_path / "model.pt", random_state=0).fit_predict(table)
    np.testing.assert_array_equal(served.predict(table), expected)
    assert len(np.unique(served.predict(table, params={"n_clusters": 3}))) <= 3

    estimator = TabClustPFN(n_clusters=2, checkpoint=tmp_path / "model.pt").fit(table.to_numpy())
    assert estimator.labels_.shape == (80,)

    server = Server(["--model-uri", model_uri, "--tracking-uri", uri], tmp_path / "serve.log")
    try:  # and served by jobs/serve.py straight from the tracking server
        response = server.invoke(table)
        assert response.status_code == 200 and response.json()["predictions"] == expected.tolist(), response.text
    finally:
        assert server.stop() == 0, server.output()


def test_local_backend_trains_tracks_and_exports_without_ray(tmp_path, tracking_uri):
    from mlflow.tracking import MlflowClient

    from model.checkpoint import load_checkpoint
    from pipeline.config import train_preset
    from pipeline.pretrain import RunOptions, pretrain

    cfg = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=2, checkpoint_every=2, val_every=2)
    result = pretrain(cfg, RunOptions(storage_path=str(tmp_path), run_name="local", tracking_uri=tracking_uri,
                                      backend="local", registered_model_name=None))
    client = MlflowClient(tracking_uri)
    assert [m.step for m in client.get_metric_history(result.run_id, "pin_loss")] == [1, 2]
    assert [m.step for m in client.get_metric_history(result.run_id, "val_ari")] == [2]
    _, meta = load_checkpoint(result.checkpoint)
    assert meta["step"] == 2 and meta["mlflow_run_id"] == result.run_id
    assert client.get_run(result.run_id).data.tags["backend"] == "local"


def test_resume_continues_the_same_run_and_mlflow_history(tmp_path, tracking_uri):
    from mlflow.tracking import MlflowClient

    from pipeline.config import train_preset
    from pipeline.pretrain import RunOptions, load_run_config, pretrain

    cfg = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=2, checkpoint_every=2, val_tasks=0)
    options = RunOptions(storage_path=str(tmp_path), run_name="r", tracking_uri=tracking_uri, backend="local",
                         registered_model_name=None)
    first = pretrain(cfg, options)
    with pytest.raises(FileExistsError, match="--resume"):
        pretrain(cfg, options)
    longer = dataclasses.replace(load_run_config(str(tmp_path), "r"), max_steps=4)
    second = pretrain(longer, dataclasses.replace(options, resume=True, tracking_uri=None))
    assert second.run_id == first.run_id
    client = MlflowClient(tracking_uri)
    assert [m.step for m in client.get_metric_history(first.run_id, "pin_loss")] == [1, 2, 3, 4]
    assert client.get_run(first.run_id).data.tags["resume.max_steps"] == "4"
