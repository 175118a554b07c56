"""Scoring one trial's final network: the fixed held-out synthetic tasks and, optionally, the real suite.

The synthetic set is the pipeline's validation set (seeds ``2**62 + i``, :mod:`pipeline.validation`) drawn from
the sweep's base prior, whatever prior a trial trained on, so every trial of a study is scored on the same tasks:
with both mechanisms (``kind="mix"``) by default, with the regime's own mechanism for a sweep in a controlled
regime (:func:`tune.config.scoring_kind`). Per task: ARI/NMI at the inferred K, the absolute error of that
K and ARI at the true K (``pipeline.validation.task_scores``); summaries are medians (ARI, NMI, known-K ARI and the
paper's "median kMAE") and the mean absolute K error. Each task's mechanism gives the GMM/ZEUS columns of the prior
study. Known-K ARI separates the partition network from the cardinality network: at small budgets CIN often
predicts one K everywhere, and the inferred-K columns then mostly score partitions at a wrong K.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from model.batching import collate, to_torch
from model.ensemble import combine_members, infer_members
from model.selection import DEFAULT_K_SELECTION, KSelection
from pipeline.config import StreamConfig
from pipeline.validation import make_validation_tasks, task_scores
from priors import PriorDataset

logger = logging.getLogger(__name__)


def fixed_synthetic_tasks(stream: StreamConfig, n_tasks: int, kind: str = "mix", offset: int = 0
                          ) -> list[PriorDataset]:
    """The sweep's held-out tasks: the validation seeds under ``stream``'s prior, drawn with ``kind`` (default both
    mechanisms) whatever ``stream.kind`` is; ``offset``: from that validation seed on."""
    return make_validation_tasks(dataclasses.replace(stream, kind=kind), n_tasks, offset)


@torch.no_grad()
def score_tasks(net: torch.nn.Module, tasks: Sequence[PriorDataset], chunk: int = 8,
                rule: KSelection = DEFAULT_K_SELECTION, n_estimators: int = 1) -> list[dict[str, float | str]]:
    """Per-task scores of ``net`` (on CPU, eval mode) with each task's ``mechanism``, in the order of ``tasks``;
    ``rule``: how K is inferred (``model.selection``); ``n_estimators``: column orderings averaged per task as
    ``TabClustPFN(n_estimators=)`` does (:mod:`model.ensemble`; 1: the single pass that training validates)."""
    net.eval()
    if n_estimators > 1:
        return [_ensemble_scores(net, t, rule, n_estimators) for t in tasks]
    order = sorted(range(len(tasks)), key=lambda i: (tasks[i].X.shape[0], tasks[i].X.shape[1]))
    scores: dict[int, dict] = {}
    for start in range(0, len(order), chunk):
        idx = order[start:start + chunk]
        batch = collate([tasks[i] for i in idx])
        tb = to_torch(batch)
        out = net.infer(tb["X"], tb["row_mask"], tb["col_mask"], tb["cat_mask"])
        probs, k_logits = out.probs.float().numpy(), out.k_logits.float().numpy()
        for b, i in enumerate(idx):
            n = int(batch["row_mask"][b].sum())
            s = task_scores(probs[b, :, :n], k_logits[b], batch["y"][b, :n], int(batch["n_clusters"][b]), rule)
            scores[i] = {**s, "mechanism": str(tasks[i].meta.get("mechanism"))}
    return [scores[i] for i in range(len(tasks))]


def _ensemble_scores(net: torch.nn.Module, task: PriorDataset, rule: KSelection, n_estimators: int) -> dict:
    """One task's scores with its columns in ``n_estimators`` orderings, the members combined."""
    member_probs, posteriors = infer_members(net, task.X, task.categorical, n_estimators)  # as TabClustPFN does
    probs, posterior, _ = combine_members(member_probs, posteriors)
    scores = task_scores(probs, np.log(np.maximum(posterior, 1e-300)), task.y, int(task.n_clusters), rule,
                         members=(member_probs, posteriors))
    return {**scores, "mechanism": str(task.meta.get("mechanism"))}


def summarize_synthetic(scores: Sequence[dict]) -> dict[str, float]:
    """``syn_ari``/``syn_nmi``/``syn_ari_known_k`` (medians), ``syn_k_mae`` (mean), ``syn_k_medae`` (median),
    ``syn_k_acc`` (share of tasks whose K was inferred exactly), per-mechanism ARI."""
    if not scores:
        return {}
    ari = np.array([s["ari"] for s in scores])
    k_err = np.array([s["k_abs_err"] for s in scores])
    out = {"syn_ari": float(np.median(ari)), "syn_nmi": float(np.median([s["nmi"] for s in scores])),
           "syn_k_mae": float(k_err.mean()), "syn_k_medae": float(np.median(k_err)), "syn_tasks": float(len(scores)),
           "syn_ari_known_k": float(np.median([s["ari_known_k"] for s in scores])),
           "syn_k_acc": float((k_err == 0).mean())}
    for mech in ("gmm", "zeus"):
        group = [s["ari"] for s in scores if s["mechanism"] == mech]
        out[f"syn_ari_{mech}"] = float(np.median(group)) if group else float("nan")
    return out


def evaluate_real(checkpoint: str | Path, datasets: Sequence, seed: int = 0,
                  k_selection: str | None = None, n_estimators: int | None = None) -> dict[str, float]:
    """Cluster each real dataset with the checkpoint, K inferred and K given -> median ARI/NMI at the inferred K,
    mean/median K error, median ARI at the true K (``real_ari_known_k``). ``k_selection``: the estimator's rule
    for K (None: its default).

    A dataset that fails is logged and left out; ``real_datasets`` counts those scored.
    """
    return summarize_real(real_rows(checkpoint, datasets, seed, k_selection, n_estimators))


def real_rows(checkpoint: str | Path, datasets: Sequence, seed: int = 0,
              k_selection: str | None = None, n_estimators: int | None = None) -> list[dict[str, Any]]:
    """One row per dataset scored (``name``, ``ari``, ``nmi``, ``k_pred``, ``k_err``, ``ari_known_k``): what
    :func:`evaluate_real` summarises, kept per dataset for comparing checkpoints table by table. A dataset that
    fails is logged and has no row."""
    from pipeline.evaluation.methods import MethodSpec, run_method
    from pipeline.evaluation.metrics import clustering_scores

    inferred = MethodSpec("TabClustPFN", "TabClustPFN", "auto")
    known = MethodSpec("TabClustPFN*", "TabClustPFN", "true")
    rows = []
    for ds in datasets:
        try:
            out = run_method(inferred, ds, checkpoint=str(checkpoint), seed=seed, k_selection=k_selection,
                             n_estimators=n_estimators)
            given = run_method(known, ds, checkpoint=str(checkpoint), seed=seed, k_selection=k_selection,
                               n_estimators=n_estimators)
        except Exception as exc:  # one bad dataset must not lose the trial's other scores
            logger.warning("real dataset %s failed: %s", ds.name, exc)
            continue
        rows.append({"name": ds.name, **clustering_scores(ds.y, out["labels"]), "k_pred": int(out["k_pred"]),
                     "k_err": abs(out["k_pred"] - ds.n_clusters),
                     "ari_known_k": clustering_scores(ds.y, given["labels"])["ari"]})
    return rows


def summarize_real(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Rows of :func:`real_rows` -> the medians and K errors of :func:`evaluate_real`."""
    if not rows:
        return {"real_datasets": 0.0}
    k_err = np.array([r["k_err"] for r in rows], dtype=float)
    return {"real_ari": float(np.median([r["ari"] for r in rows])),
            "real_nmi": float(np.median([r["nmi"] for r in rows])),
            "real_k_mae": float(k_err.mean()), "real_k_medae": float(np.median(k_err)),
            "real_ari_known_k": float(np.median([r["ari_known_k"] for r in rows])),
            "real_datasets": float(len(rows))}
