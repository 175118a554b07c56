"""``jobs/serve.py``: the real HTTP server, started on 127.0.0.1 at a free port with no ``.venv/bin`` on PATH,
asked over HTTP, and stopped."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import requests

from model import TabClustPFN
from pipeline.batch_cluster import cluster_table, load_estimator

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``python jobs/serve.py ARGS`` on a free port of 127.0.0.1; :meth:`stop` sends Ctrl-C and waits."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        # the venv's interpreter, but none of its executables on PATH (no uvicorn, no mlflow)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI")}
        env["PATH"] = "/usr/bin:/bin"
        with open(log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "jobs/serve.py", "--port", str(self.port), *args],
                                         cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"the server exited with {self.proc.returncode}:\n{self.output()}"
            try:
                if requests.get(f"{self.url}/ping", timeout=5).status_code == 200:
                    return
            except requests.ConnectionError:
                time.sleep(0.5)
        self.stop()
        raise AssertionError(f"the server did not answer /ping within {START_TIMEOUT_S} s:\n{self.output()}")

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-5000:]

    def invoke(self, table: pd.DataFrame, params: dict | None = None) -> requests.Response:
        body = {"dataframe_split": json.loads(table.to_json(orient="split", index=False))}
        if params is not None:
            body["params"] = params
        return requests.post(f"{self.url}/invocations", json=body, timeout=120)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        return self.proc.returncode


def _blobs(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    return pd.DataFrame(rng.normal(size=(n, 3)) + 4.0 * y[:, None], columns=["a", "b", "c"])


@pytest.fixture(scope="module")
def shipped_server(tmp_path_factory):
    server = Server([], tmp_path_factory.mktemp("serve") / "server.log")
    yield server
    assert server.stop() == 0, server.output()


def _batch_job_refusal(table: pd.DataFrame, tmp_path: Path) -> str:
    """The error the batch job writes in ``summary.csv`` for ``table`` (as a CSV file)."""
    path = tmp_path / "table.csv"
    table.to_csv(path, index=False)
    row, out = cluster_table(load_estimator(None, None, 0), path, "table")
    assert row["status"] == "failed" and out is None
    return row["error"]


def _assert_refused(response: requests.Response, message: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["message"] == message and body["error_code"] == "INVALID_PARAMETER_VALUE"
    assert "stack_trace" not in body and "Traceback" not in response.text


@pytest.mark.slow
def test_the_shipped_checkpoint_is_served_on_localhost_without_path_set_up(shipped_server):
    table = _blobs()
    response = shipped_server.invoke(table)
    assert response.status_code == 200, response.text
    assert response.json()["predictions"] == TabClustPFN(random_state=0).fit_predict(table).tolist()
    fixed = shipped_server.invoke(table, {"n_clusters": 3, "n_estimators": 1})
    expected = TabClustPFN(n_clusters=3, n_estimators=1, random_state=0).fit_predict(table)
    assert fixed.json()["predictions"] == expected.tolist()
    assert f"Uvicorn running on http://127.0.0.1:{shipped_server.port}" in shipped_server.output()


@pytest.mark.slow
def test_a_request_for_details_gets_the_probability_of_each_k_and_the_next_ks_partition(shipped_server):
    table = _blobs(90, seed=5)
    response = shipped_server.invoke(table, {"output": "details"})
    assert response.status_code == 200, response.text
    answer = response.json()["predictions"]
    fitted = TabClustPFN(random_state=0).fit(table)
    assert answer["labels"] == fitted.labels_.tolist() and answer["n_clusters"] == fitted.n_clusters_
    assert answer["k_probabilities"] == pytest.approx({str(k): p for k, p in fitted.k_probabilities_.items()},
                                                      abs=1e-6)
    assert answer["labels_next"] == fitted.predict(table, n_clusters=answer["k_next"]).tolist()
    np.testing.assert_allclose(answer["probabilities"], fitted.probabilities_, atol=1e-6)


@pytest.mark.slow
def test_a_table_with_gaps_or_named_codes_is_served_filled_as_the_estimator_fills_them(shipped_server):
    table = _blobs(90, seed=3)
    table = table.mask(np.random.default_rng(3).random(table.shape) < 0.2)  # JSON nulls on the wire
    response = shipped_server.invoke(table)
    assert response.status_code == 200, response.text
    assert response.json()["predictions"] == TabClustPFN(random_state=0).fit_predict(table).tolist()
    by_median = shipped_server.invoke(table, {"impute": "median"})
    assert by_median.json()["predictions"] == TabClustPFN(random_state=0, impute="median").fit_predict(table).tolist()
    coded = shipped_server.invoke(table.fillna(-999.0), {"missing_values": ["-999"]})  # an array param on the wire
    assert coded.status_code == 200, coded.text
    assert coded.json()["predictions"] == response.json()["predictions"]


@pytest.mark.slow
def test_bad_requests_get_400_with_the_refusal_and_the_next_request_is_served(shipped_server, tmp_path):
    one_row = _blobs().head(1)
    free_text = pd.DataFrame({"a": [0.1, 2.0, 3.5], "name": ["alice", "bob", "carol"]})
    for table in (one_row, free_text):  # the batch job refuses these tables with these words
        _assert_refused(shipped_server.invoke(table), _batch_job_refusal(table, tmp_path))
    for params in ({"n_clusters": 99}, {"n_clusters": 4, "max_clusters": 3}, {"max_clusters": 11}):
        with pytest.raises(ValueError) as refused:  # the estimator's own words
            TabClustPFN(**params).fit(_blobs())
        _assert_refused(shipped_server.invoke(_blobs(), params), str(refused.value))
    response = shipped_server.invoke(_blobs())
    assert response.status_code == 200 and len(response.json()["predictions"]) == 60


@pytest.fixture(scope="module")
def registered_tiny(tiny_checkpoint, tmp_path_factory):
    """The tiny checkpoint logged with :func:`log_pyfunc_model` and registered as ``tabclustpfn`` version 1 in a
    throwaway SQLite store; returns the store's URI."""
    import mlflow

    from pipeline.pyfunc import log_pyfunc_model
    from pipeline.tracking import setup_tracking

    uri = f"sqlite:///{tmp_path_factory.mktemp('registry') / 'mlruns.db'}"
    setup_tracking(uri, experiment="serve")
    with mlflow.start_run():
        log_pyfunc_model(tiny_checkpoint)
    return uri


@pytest.mark.slow
def test_a_registered_model_is_served(registered_tiny, tiny_checkpoint, tmp_path):
    server = Server(["--model-uri", "models:/tabclustpfn/1", "--tracking-uri", registered_tiny],
                    tmp_path / "server.log")
    try:
        table = _blobs(80, seed=1)
        response = server.invoke(table, {"max_clusters": 3, "n_estimators": 1})
        expected = TabClustPFN(checkpoint=tiny_checkpoint, max_clusters=3, n_estimators=1, random_state=0)
        assert response.status_code == 200, response.text
        assert response.json()["predictions"] == expected.fit_predict(table).tolist()
    finally:
        assert server.stop() == 0, server.output()


@pytest.mark.slow
def test_a_model_that_cannot_be_loaded_is_exit_status_1(registered_tiny, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    proc = subprocess.run([sys.executable, "jobs/serve.py", "--port", str(free_port()), "--model-uri",
                           "models:/tabclustpfn/7", "--tracking-uri", registered_tiny], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "error: cannot load the model 'models:/tabclustpfn/7'" in proc.stderr and "Traceback" not in proc.stderr
