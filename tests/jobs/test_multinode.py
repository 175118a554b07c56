"""A Ray cluster of two nodes on this machine, jobs sent with `ray job submit` (issue 30 items 3 and 4).

The module starts a head (`ray start --head`) and a second node (`ray start --address`) as two separate
`ray start` launches on 127.0.0.1, each with its own free ports and temp dir (two `ray start` share one host
fine; ``ray.cluster_utils.Cluster`` is not needed), 2 logical CPUs each. The jobs run through
`ray job submit --address http://127.0.0.1:<dashboard>` in subprocesses, so this test process never connects to
that cluster and the test run's own local Ray (``ray_local``) is untouched. Nothing is stopped with `ray stop`,
which stops every Ray of the machine: the fixture ends exactly the processes whose command line names one of its
temp dirs, and their children.

- The batch job (``jobs/cluster.py``, 2 workers) clusters tables on both nodes: its workers are placed with Ray's
  ``SPREAD`` strategy, and ``summary.csv`` names each table's node (``node_id``).
- ``jobs/pretrain.py --smoke --num-workers 2 --placement-strategy SPREAD`` trains with one Ray Train worker per
  node: each rank tags the MLflow run with its node (``ray.node_id.rank<i>``).
- The second node is killed (SIGKILL of its raylet and everything it started, as a lost machine) while its worker
  clusters a table of a 40-table batch: every table still has exactly one ``ok`` row and one output file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.ray_processes import end, free_ports, matching, processes

REPO = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))
CPUS_PER_NODE = 2

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    """The environment of `ray start` and `ray job submit`: the same RAY_AUTH_MODE for both (token auth), and no
    PYTHONPATH, so a submitted job imports the packages from its uploaded working directory."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    env.update(RAY_AUTH_MODE="token", RAY_ENABLE_UV_RUN_RUNTIME_ENV="0", RAY_USAGE_STATS_ENABLED="0")
    env.setdefault("OMP_NUM_THREADS", "1")  # the nodes share this machine's cores
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `python` is this venv's
    return env


def _node_processes(marker: str, procs: dict[int, tuple[int, str]] | None = None) -> set[int]:
    """The processes whose command line matches the regular expression ``marker`` (a node's temp dir: its raylet,
    GCS, agents, log monitor) and all their descendants (the Ray workers, the job drivers)."""
    return matching(lambda cmd: re.search(marker, cmd) is not None, procs)


def _run(cmd: list[str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout, cwd=REPO)


@dataclass
class TwoNodes:
    dashboard: str  # http://127.0.0.1:PORT, the job server
    head_id: str
    node_id: str  # the second node's Ray node id
    node_dir: str  # its temp dir (names its processes)

    def nodes(self) -> list[dict]:
        out = _run([RAY, "list", "nodes", "--address", self.dashboard, "--format", "json"], timeout=120)
        assert out.returncode == 0, out.stdout + out.stderr
        return json.loads(out.stdout)


@pytest.fixture(scope="module")
def two_nodes():
    """A head and one more node, both on 127.0.0.1 with private ports and temp dirs; stopped at the end."""
    base = tempfile.mkdtemp(prefix="raymn", dir="/tmp")  # short: Ray's socket paths have a length limit
    head_dir, node_dir = f"{base}/head", f"{base}/node2"
    gcs, dash, client, *head_ports = free_ports(7)
    node_ports = free_ports(4)
    agent_flags = ["--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--metrics-export-port",
                   "--runtime-env-agent-port"]
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", str(CPUS_PER_NODE), "--disable-usage-stats"]
    head = [RAY, "start", "--head", "--port", str(gcs), *common, "--include-dashboard", "true",
            "--dashboard-host", "127.0.0.1", "--dashboard-port", str(dash), "--ray-client-server-port", str(client),
            "--temp-dir", head_dir]
    node = [RAY, "start", "--address", f"127.0.0.1:{gcs}", *common, "--temp-dir", node_dir]
    for flag, port in zip(agent_flags, head_ports):
        head += [flag, str(port)]
    for flag, port in zip(agent_flags, node_ports):
        node += [flag, str(port)]
    try:
        started = _run(head)
        assert started.returncode == 0, started.stdout + started.stderr
        started = _run(node)
        assert started.returncode == 0, started.stdout + started.stderr
        cluster = TwoNodes(f"http://127.0.0.1:{dash}", "", "", node_dir)
        deadline = time.monotonic() + 120
        while True:
            alive = [n for n in cluster.nodes() if n["state"] == "ALIVE"]
            if len(alive) == 2:
                break
            assert time.monotonic() < deadline, f"both nodes not alive after 120 s: {alive}"
            time.sleep(1)
        cluster.head_id = next(n["node_id"] for n in alive if n["is_head_node"])
        cluster.node_id = next(n["node_id"] for n in alive if not n["is_head_node"])
        yield cluster
    finally:
        # the head's Ray Client server names neither temp dir and outlives `ray start`: found by the GCS port
        markers = (re.escape(node_dir), re.escape(head_dir), rf"--address=\S+:{gcs}(\s|$)")
        left = end(set().union(*(_node_processes(m) for m in markers)))
        shutil.rmtree(base, ignore_errors=True)
        assert not left, f"Ray processes of the test cluster still alive: {sorted(left)}"


def _tables(folder: Path, n: int, rows: int = 400, columns: int = 8) -> list[str]:
    folder.mkdir(parents=True)
    names = [f"t{i:02d}" for i in range(n)]
    for i, name in enumerate(names):
        rng = np.random.default_rng(i)
        y = rng.integers(0, 3, rows)
        frame = pd.DataFrame(rng.normal(size=(rows, columns)) + 4.0 * y[:, None],
                             columns=[f"x{j}" for j in range(columns)])
        frame.to_csv(folder / f"{name}.csv", index=False)
    return names


def _submit(cluster: TwoNodes, name: str, *args: str) -> list[str]:
    return [RAY, "job", "submit", "--address", cluster.dashboard, "--submission-id",
            f"{name}-{os.getpid()}-{int(time.time())}", "--working-dir", str(REPO), "--", "python", *args]


def _cluster_args(tmp_path: Path, checkpoint: str, n_estimators: int) -> list[str]:
    # many column orderings per table: each table takes a noticeable time, so the worker that loads the model
    # first cannot finish the whole batch before the other is ready
    return ["jobs/cluster.py", str(tmp_path / "in"), "--output", str(tmp_path / "out"), "--checkpoint", checkpoint,
            "--tracking-uri", f"sqlite:///{tmp_path / 'mlruns.db'}", "--num-workers", "2", "--n-estimators",
            str(n_estimators), "--no-progress"]


def test_the_batch_job_clusters_tables_on_both_nodes(two_nodes, tmp_path, tiny_checkpoint):
    names = _tables(tmp_path / "in", 12)
    job = subprocess.run(_submit(two_nodes, "batch", *_cluster_args(tmp_path, tiny_checkpoint, 64)), cwd=REPO,
                         env=_env(), capture_output=True, text=True, timeout=600)
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-2000:]
    assert "12 of 12 tables clustered" in job.stdout
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert sorted(summary["table"]) == names and (summary["status"] == "ok").all()
    assert set(summary["node_id"]) == {two_nodes.head_id, two_nodes.node_id}, summary["node_id"].value_counts()


def test_pretraining_workers_spread_over_both_nodes(two_nodes, tmp_path):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    args = ["jobs/pretrain.py", "--smoke", "--num-workers", "2", "--placement-strategy", "SPREAD", "--max-steps",
            "2", "--set", "checkpoint_every=2", "--set", "val_tasks=0", "--run-name", "mn", "--storage-path",
            str(tmp_path / "runs"), "--tracking-uri", uri, "--register-as", ""]
    job = subprocess.run(_submit(two_nodes, "pretrain", *args), cwd=REPO, env=_env(), capture_output=True,
                         text=True, timeout=600)
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-2000:]
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("tabclustpfn").experiment_id])
    assert run.info.status == "FINISHED" and run.data.params["num_workers"] == "2"
    nodes = {k: v for k, v in run.data.tags.items() if k.startswith("ray.node_id.rank")}
    assert sorted(nodes) == ["ray.node_id.rank0", "ray.node_id.rank1"]
    assert set(nodes.values()) == {two_nodes.head_id, two_nodes.node_id}
    assert (tmp_path / "runs" / "mn" / "model.pt").is_file()


def test_a_node_lost_mid_batch_loses_and_repeats_no_table(two_nodes, tmp_path, tiny_checkpoint):
    """Last in the module: it kills the second node."""
    names = _tables(tmp_path / "in", 40)
    out_dir = tmp_path / "out"
    log = tmp_path / "submit.log"
    with open(log, "w") as out:  # a file, not a pipe: nobody reads the job's log until it ends
        job = subprocess.Popen(_submit(two_nodes, "nodeloss", *_cluster_args(tmp_path, tiny_checkpoint, 32)),
                               cwd=REPO, env=_env(), stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        killed, deadline = None, time.monotonic() + 300
        while killed is None and job.poll() is None and time.monotonic() < deadline:
            if len(list(out_dir.glob("*.parquet"))) >= 5:
                snapshot = processes()
                procs = _node_processes(re.escape(two_nodes.node_dir), snapshot)
                if any(snapshot[pid][1].startswith("ray::TableClusterer.run") for pid in procs):
                    # the second node's worker has a table in flight: the node goes, as a lost machine would
                    end(procs, signals=((signal.SIGKILL, 10.0),))
                    killed = len(list(out_dir.glob("*.parquet")))
                    continue
            time.sleep(0.01)
        job.wait(timeout=600)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    output = log.read_text()
    assert killed is not None, f"the second node's worker was never seen busy:\n{output[-4000:]}"
    assert job.returncode == 0, output[-4000:]
    assert "retrying it on another worker" in output  # the lost node's worker had a table in flight
    assert "40 of 40 tables clustered" in output
    summary = pd.read_csv(out_dir / "summary.csv")
    assert sorted(summary["table"]) == names and summary["table"].is_unique
    assert (summary["status"] == "ok").all(), summary[summary["status"] != "ok"]
    assert sorted(p.stem for p in out_dir.iterdir() if p.suffix == ".parquet") == names
    assert set(summary["node_id"]) <= {two_nodes.head_id, two_nodes.node_id}
    deadline = time.monotonic() + 90  # the head marks a node dead once its health checks fail
    while [n["state"] for n in two_nodes.nodes() if n["node_id"] == two_nodes.node_id] != ["DEAD"]:
        assert time.monotonic() < deadline, "the killed node is still listed as alive after 90 s"
        time.sleep(2)
    for name in names:
        assert len(pd.read_parquet(out_dir / f"{name}.parquet")) == 400
