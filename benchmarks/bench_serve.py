"""Latency of the served model against a local ``TabClustPFN().fit_predict`` on the same table, in one run.

Starts ``jobs/serve.py`` (the shipped checkpoint) on a free port of 127.0.0.1, then alternates, ``--repeats``
times after one warm-up each:

- served: one ``POST /invocations`` of an N x D table (``dataframe_split`` JSON, default 1,000 x 32), timed at the
  client: JSON encoding, HTTP, clustering in the server and the decoded reply;
- local: ``TabClustPFN(random_state=0).fit_predict`` of the same table in this process, on an estimator that has
  loaded its network (as the server has), and on a fresh ``TabClustPFN()``, which loads the checkpoint first.

Medians are reported, with the ratio served / local (the price of HTTP and JSON). The labels of the served call
must equal the local ones, or the benchmark fails. Run from the repository root:

    .venv/bin/python benchmarks/bench_serve.py --out docs/results/serve.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import requests
import torch
from sklearn.datasets import make_blobs

from model import TabClustPFN

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, log) -> subprocess.Popen:
    """``jobs/serve.py`` on ``port``; returns once it answers ``/ping``."""
    proc = subprocess.Popen([sys.executable, "jobs/serve.py", "--port", str(port)], cwd=REPO, stdout=log,
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode}; see {log.name}")
        try:
            if requests.get(f"http://127.0.0.1:{port}/ping", timeout=5).status_code == 200:
                return proc
        except requests.ConnectionError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"the server did not answer within 300 s; see {log.name}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--cols", type=int, default=32)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--out", default=None, help="write the results as Markdown here (e.g. docs/results/serve.md)")
    args = p.parse_args(argv)

    X, _ = make_blobs(n_samples=args.rows, n_features=args.cols, centers=4, random_state=0)
    table = pd.DataFrame(X, columns=[f"x{j}" for j in range(args.cols)])
    body = {"dataframe_split": json.loads(table.to_json(orient="split", index=False))}
    port = free_port()
    url = f"http://127.0.0.1:{port}/invocations"
    warm = TabClustPFN(random_state=0)

    def served() -> list[int]:
        response = requests.post(url, json=body, timeout=600)
        response.raise_for_status()
        return response.json()["predictions"]

    def local() -> np.ndarray:
        return warm.fit_predict(table)

    def fresh() -> np.ndarray:
        return TabClustPFN(random_state=0).fit_predict(table)

    fns = {"served (HTTP)": served, "local, network loaded": local, "local, fresh TabClustPFN()": fresh}
    times: dict[str, list[float]] = {name: [] for name in fns}
    with tempfile.NamedTemporaryFile("w+b", prefix="bench-serve-", suffix=".log", delete=False) as log:
        proc = start_server(port, log)
        try:
            labels = {name: np.asarray(fn()) for name, fn in fns.items()}  # warm-up
            for name, got in labels.items():
                if not np.array_equal(got, labels["local, network loaded"]):
                    raise RuntimeError(f"{name} labels differ from the local estimator's")
            for _ in range(args.repeats):  # alternating, so load drift on a shared machine hits all alike
                for name, fn in fns.items():
                    start = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - start)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
    os.unlink(log.name)

    median = {name: statistics.median(t) for name, t in times.items()}
    ratio = median["served (HTTP)"] / median["local, network loaded"]
    ratio_fresh = median["served (HTTP)"] / median["local, fresh TabClustPFN()"]
    lines = [
        f"# Served model latency ({args.rows:,} x {args.cols} table)",
        "",
        f"Measured {date.today().isoformat()} by `python benchmarks/bench_serve.py --out docs/results/serve.md` on "
        f"{platform.machine()} with {os.cpu_count()} CPUs, torch {torch.__version__} ({torch.get_num_threads()} "
        f"threads), the shipped checkpoint and default settings (K inferred, {warm.n_estimators} column "
        f"orderings); medians of {args.repeats} alternating repeats after one warm-up each. Served and local "
        "labels are identical.",
        "",
        "| call | median s | min s | max s |",
        "|---|---:|---:|---:|",
        *[f"| {name} | {median[name]:.3f} | {min(t):.3f} | {max(t):.3f} |" for name, t in times.items()],
        "",
        f"Served / local (network loaded): **{ratio:.2f}x**; served / fresh `TabClustPFN().fit_predict`: "
        f"{ratio_fresh:.2f}x.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
