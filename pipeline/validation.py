"""A fixed held-out synthetic validation set and its clustering metrics.

The tasks use seeds ``2**62 + i`` (``prior_stream.validation_seeds``), a range the training stream never
reaches, drawn from the run's full prior (not the per-step size buckets). Metrics, per task then summarised:
ARI and NMI of the partition at the inferred K (chosen from CIN's posterior by the rule ``TabClustPFN`` uses,
``model.selection.DEFAULT_K_SELECTION``), the absolute error of that K, and ARI at the true K (known-K
clustering). Scores come from ``sklearn.metrics`` on hard labels.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Sequence

import numpy as np
import torch
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

from model.batching import collate, to_torch
from model.selection import DEFAULT_K_SELECTION, KSelection, select_k
from pipeline.config import StreamConfig
from pipeline.prior_stream import validation_seeds
from priors import PriorDataset, sample_dataset

logger = logging.getLogger(__name__)


def make_validation_tasks(stream: StreamConfig, n_tasks: int, offset: int = 0) -> list[PriorDataset]:
    """The ``n_tasks`` held-out tasks of a run's prior (same seeds for every run with this prior), from the
    ``offset``-th on: a later slice is a fresh draw that no choice made on the first tasks has seen."""
    seeds = validation_seeds(offset + n_tasks)[offset:]
    return [sample_dataset(seed, kind=stream.kind, config=stream.prior) for seed in seeds]


def task_scores(probs: np.ndarray, k_logits: np.ndarray, y: np.ndarray, n_clusters: int,
                rule: KSelection = DEFAULT_K_SELECTION, members: tuple | None = None) -> dict[str, float]:
    """Scores of one task.

    Parameters
    ----------
    probs : (K_max-1, N, K_max) soft partitions for K = 2..K_max, real rows only.
    k_logits : (K_max-1,) CIN logits over K = 2..K_max.
    y : (N,) true labels.
    n_clusters : int
        True K.
    rule : how the inferred K is chosen from the posterior (:func:`model.selection.select_k`).
    members : a column-order ensemble's (member probs, member posteriors) behind ``probs`` and ``k_logits``
        (:func:`model.selection.select_k`), or None.

    Returns
    -------
    dict
        ``ari``, ``nmi`` (at the inferred K), ``k_abs_err``, ``ari_known_k``.
    """
    logits = np.asarray(k_logits, dtype=np.float64)
    posterior = np.exp(logits - logits.max())
    posterior /= posterior.sum()
    k_hat, _ = select_k(probs, posterior, k_hi=min(probs.shape[0] + 1, max(2, len(y) - 1)), rule=rule,
                        members=members)
    labels = probs[k_hat - 2].argmax(-1)
    known = probs[n_clusters - 2].argmax(-1)
    return {
        "ari": float(adjusted_rand_score(y, labels)),
        "nmi": float(normalized_mutual_info_score(y, labels)),
        "k_abs_err": float(abs(k_hat - n_clusters)),
        "ari_known_k": float(adjusted_rand_score(y, known)),
    }


def summarize(scores: Sequence[dict[str, float]]) -> dict[str, float]:
    """Per-task scores -> ``val_ari`` (median), ``val_nmi`` (median), ``val_k_mae`` (mean), ``val_ari_known_k``."""
    if not scores:
        return {}
    col = {k: np.array([s[k] for s in scores]) for k in scores[0]}
    return {
        "val_ari": float(np.median(col["ari"])),
        "val_nmi": float(np.median(col["nmi"])),
        "val_k_mae": float(np.mean(col["k_abs_err"])),
        "val_ari_known_k": float(np.median(col["ari_known_k"])),
    }


class Validator:
    """Evaluates a network on the fixed validation tasks in padded chunks of similar size.

    Parameters
    ----------
    stream : StreamConfig
        The run's prior (kind and PriorConfig).
    n_tasks : int
        Number of held-out tasks.
    chunk : int
        Tasks per forward pass.
    """

    def __init__(self, stream: StreamConfig, n_tasks: int, chunk: int = 8) -> None:
        tasks = make_validation_tasks(stream, n_tasks)
        tasks.sort(key=lambda t: (t.X.shape[0], t.X.shape[1]))
        self.chunks = [collate(tasks[i:i + chunk]) for i in range(0, len(tasks), chunk)]
        self.n_tasks = n_tasks

    @torch.no_grad()
    def evaluate(self, net: torch.nn.Module, device: torch.device | str = "cpu",
                 precision: str = "bf16") -> dict[str, float]:
        """Run ``net.infer`` on every chunk and return the summarised metrics (empty dict for 0 tasks).

        On CUDA the forward pass runs under bf16 autocast unless ``precision == "fp32"``.
        """
        device = torch.device(device)
        was_training = net.training
        net.eval()
        autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" and precision == "bf16"
                    else contextlib.nullcontext())
        scores = []
        try:
            for batch in self.chunks:
                tb = to_torch(batch, device)
                with autocast:
                    out = net.infer(tb["X"], tb["row_mask"], tb["col_mask"], tb["cat_mask"])
                probs = out.probs.float().cpu().numpy()
                k_logits = out.k_logits.float().cpu().numpy()
                for b in range(len(batch["n_clusters"])):
                    n = int(batch["row_mask"][b].sum())
                    scores.append(task_scores(probs[b, :, :n], k_logits[b], batch["y"][b, :n],
                                              int(batch["n_clusters"][b])))
        finally:
            net.train(was_training)
        return summarize(scores)
