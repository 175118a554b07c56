"""Where a checkpoint's cosine-head temperature leaves SoftARI's gradient, on held-out prior tasks (a diagnostic).

The partition logits are ``tau * cosine``. A large learned tau makes most rows' assignments nearly hard, and a row
whose softmax is saturated gets almost no gradient from SoftARI, whether it is assigned rightly or wrongly. For
each task (the true K) the probe rescales the network's logits to other temperatures and reports SoftARI, the
share of rows with p > 0.999, the share of rows that are both that confident and wrong (clusters matched to the
truth by the Hungarian algorithm), and the share of wrongly assigned rows whose SoftARI gradient is below 1e-6.

    PYTHONPATH=. .venv/bin/python benchmarks/temperature_probe.py [--checkpoint PATH] [--tasks 48] [--tau 100 30]

``docs/DESIGN.md``, "Temperature", holds what it found for the shipped weights and what was tried.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from model.batching import collate, to_torch
from model.checkpoint import load_checkpoint
from model.estimator import default_checkpoint_path
from model.losses import soft_ari
from pipeline.config import StreamConfig
from tune.evaluate import fixed_synthetic_tasks

CONFIDENT = 0.999
DEAD_GRADIENT = 1e-6


def task_rows(probs: np.ndarray, labels: np.ndarray, grad: np.ndarray) -> tuple[float, float, float]:
    """One task's (share of confident rows, share of confident and wrong rows, share of wrong rows without
    gradient); ``probs`` (N, K), ``labels`` (N,), ``grad`` (N,) the gradient's L1 norm per row."""
    overlap = probs.T @ np.eye(labels.max() + 1)[labels]  # (K, L): predicted cluster x true class
    rows, cols = linear_sum_assignment(-overlap)
    match = dict(zip(rows, cols))
    wrong = np.array([match.get(c, -1) for c in probs.argmax(1)]) != labels
    confident = probs.max(1) > CONFIDENT
    dead = float((grad[wrong] < DEAD_GRADIENT).mean()) if wrong.any() else float("nan")
    return float(confident.mean()), float((confident & wrong).mean()), dead


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(default_checkpoint_path()))
    parser.add_argument("--tasks", type=int, default=48, help="held-out prior tasks (N 500-1000)")
    parser.add_argument("--tau", type=float, nargs="*", default=[100.0, 30.0, 10.0],
                        help="temperatures to compare with the checkpoint's own")
    args = parser.parse_args()

    net, _ = load_checkpoint(args.checkpoint)
    net.eval()
    own = float(net.decoder.head.log_tau.detach().exp())
    taus = [own, *args.tau]
    rows: dict[float, list[tuple]] = {t: [] for t in taus}
    tasks = fixed_synthetic_tasks(StreamConfig(), args.tasks)
    for start in range(0, len(tasks), 8):
        batch = collate(tasks[start:start + 8])
        tb = to_torch(batch)
        with torch.no_grad():
            R = net.encode(tb["X"], tb["row_mask"], tb["col_mask"], tb["cat_mask"])
            logits = net.partition_logits(R, tb["row_mask"], tb["n_clusters"])
        for tau in taus:
            scaled = (logits * (tau / own)).requires_grad_(True)
            probs = torch.softmax(scaled, -1)
            ari = soft_ari(probs, tb["y"], tb["row_mask"])
            ari.sum().backward()
            grad = scaled.grad.nan_to_num(0.0).abs().sum(-1)
            for b in range(probs.shape[0]):
                n, k = int(tb["row_mask"][b].sum()), int(tb["n_clusters"][b])
                shares = task_rows(probs[b, :n, :k].detach().numpy(), tb["y"][b, :n].numpy(), grad[b, :n].numpy())
                rows[tau].append((float(ari[b].detach()), *shares))
    print(f"{args.checkpoint}: learned tau {own:.1f}; {len(tasks)} held-out prior tasks at the true K (means)")
    print("| tau | SoftARI | rows p > 0.999 | confident and wrong | wrong rows with gradient < 1e-6 |")
    print("|---|---|---|---|---|")
    for tau in taus:
        a = np.array(rows[tau])
        print(f"| {tau:.1f} | {np.nanmean(a[:, 0]):.3f} | {np.nanmean(a[:, 1]):.0%} | {np.nanmean(a[:, 2]):.1%} | "
              f"{np.nanmean(a[:, 3]):.0%} |")


if __name__ == "__main__":
    main()
