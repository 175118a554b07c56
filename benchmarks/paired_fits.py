"""Paired fit times of two checkouts of this repository: is a code change faster, on a machine whose speed drifts?

On the shared 2-core VM the same fit takes 10-30 % more or less from one minute to the next, more than most
changes to the inference path save; two runs of ``bench_inference.py`` one after the other cannot tell them
apart. Here two long-lived worker processes, one per checkout (``PYTHONPATH`` set to it), fit the same table in
turn, alternating which goes first, so that drift hits both alike; the figure is the median over pairs of the
ratio B / A, with its quartiles.

Run from the repository root: ``.venv/bin/python benchmarks/paired_fits.py --a /path/to/old/checkout --b .``
(e.g. ``git worktree add --detach /tmp/old HEAD~1`` for A). Both load the same checkpoint (``--checkpoint``,
default the shipped file of B), so the comparison is of code, not weights. The table is
``bench_inference.py``'s (blobs, N 1000, D 32, K unknown, the estimator's defaults).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def worker(checkpoint: str, rows: int) -> None:
    """Fit the table once per line read from stdin; print each fit's seconds."""
    import numpy as np
    from sklearn.datasets import make_blobs

    from model.estimator import TabClustPFN

    X, _ = make_blobs(n_samples=rows, n_features=32, centers=5, cluster_std=2.0, random_state=0)
    X = X.astype(np.float32)
    est = TabClustPFN(checkpoint=checkpoint, device="cpu", random_state=0)
    for _ in range(3):  # loads the network, warms the allocator
        est.fit(X)
    print("ready", flush=True)
    for _ in sys.stdin:
        start = time.perf_counter()
        est.fit(X)
        print(time.perf_counter() - start, flush=True)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    return tuple(statistics.quantiles(values, n=4)) if len(values) > 1 else (values[0],) * 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", required=True, help="the reference checkout (e.g. the previous commit's worktree)")
    parser.add_argument("--b", default=".", help="the checkout to compare (default: this one)")
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--checkpoint", default=None, help="default: B's model/weights/tabclustpfn-small.pt")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    checkpoint = args.checkpoint or str(Path(args.b).resolve() / "model" / "weights" / "tabclustpfn-small.pt")
    if args.worker:
        worker(checkpoint, args.rows)
        return
    procs = {}
    for name, path in (("A", args.a), ("B", args.b)):
        root = Path(path).resolve()
        if not (root / "model" / "estimator.py").is_file():
            raise SystemExit(f"{path} is not a checkout of this repository (no model/estimator.py)")
        env = dict(os.environ, PYTHONPATH=str(root))
        procs[name] = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", "--a", args.a, "--rows", str(args.rows),
             "--checkpoint", checkpoint], cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        for name, proc in procs.items():
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit(f"worker {name} did not start (see its error above)")
        times: dict[str, list[float]] = {"A": [], "B": []}
        for i in range(args.pairs):
            for name in ("A", "B") if i % 2 == 0 else ("B", "A"):
                procs[name].stdin.write("fit\n")
                procs[name].stdin.flush()
                times[name].append(float(procs[name].stdout.readline()))
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()
    print(f"checkpoint {checkpoint}; {args.pairs} pairs of fits, N={args.rows}, D=32, K unknown")
    for name, path in (("A", args.a), ("B", args.b)):
        q = quartiles(times[name])
        print(f"{name} ({path}): min {min(times[name]):.3f} s, quartiles {q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f} s")
    q = quartiles([b / a for a, b in zip(times["A"], times["B"])])
    print(f"B / A per pair: quartiles {q[0]:.3f} / {q[1]:.3f} / {q[2]:.3f} (median < 1: B is faster)")


if __name__ == "__main__":
    main()
