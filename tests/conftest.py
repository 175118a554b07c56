"""Shared fixtures: one in-process Ray per test session, bound to 127.0.0.1, stopped at the end."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def ray_local():
    """A private local Ray (4 logical CPUs: a Train worker plus Ray Data actors need more than 2)."""
    import ray

    if ray.is_initialized():
        yield ray
        return
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    ray.init(
        address="local",
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
    )
    yield ray
    ray.shutdown()


@pytest.fixture()
def tracking_uri(tmp_path):
    """A throwaway MLflow store (SQLite file + artifact dir) for one test."""
    return f"sqlite:///{tmp_path / 'mlruns.db'}"


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> str:
    """Path of a checkpoint holding a random ``tiny`` network (shared by the whole session: read-only)."""
    import torch

    from model import ModelConfig, TabClustNet
    from model.checkpoint import save_checkpoint

    with torch.random.fork_rng(devices=[]):  # the global RNG state is restored on exit
        torch.manual_seed(0)
        net = TabClustNet(ModelConfig.preset("tiny"))
    path = tmp_path_factory.mktemp("ckpt") / "tiny.pt"
    save_checkpoint(path, net, {"steps": 0, "note": "random weights for tests"})
    return str(path)


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """A real MLflow tracking server (``mlflow server``: SQLite backend store, local artifact root served over
    HTTP) on a free port of 127.0.0.1; yields its URL (``http://127.0.0.1:PORT``) and stops it at the end."""
    import signal
    import socket
    import subprocess
    import sys
    import time

    import requests

    root = tmp_path_factory.mktemp("mlflow-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    log = root / "server.log"
    with open(log, "wb") as out:  # its own process group: the server runs uvicorn in a child process
        proc = subprocess.Popen([sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
                                 "--workers", "1", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
                                 "--artifacts-destination", str(root / "artifacts")],
                                cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, f"mlflow server exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"mlflow server did not answer in 180 s:\n{log.read_text()[-3000:]}"
            try:
                if requests.get(f"{url}/health", timeout=5).status_code == 200:
                    break
            except (requests.ConnectionError, requests.Timeout):  # not listening yet, or too busy starting
                time.sleep(0.5)
        yield url
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)  # the group this fixture started: the server and its uvicorn child
                proc.wait(timeout=30)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
