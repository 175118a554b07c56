"""Validation metrics on the held-out synthetic set."""

from __future__ import annotations

import numpy as np
import pytest

from model.selection import DEFAULT_K_SELECTION

from pipeline.config import train_preset
from pipeline.prior_stream import VAL_SEED_BASE
from pipeline.train_state import build_model
from pipeline.validation import Validator, make_validation_tasks, summarize, task_scores


def _one_hot_partitions(labels: np.ndarray, k_max: int) -> np.ndarray:
    """The partition ``labels`` at every candidate K that can hold it; smaller K merge the last clusters (a
    network cannot use more than K clusters), larger K leave clusters empty."""
    probs = np.zeros((k_max - 1, len(labels), k_max))
    for i, k in enumerate(range(2, k_max + 1)):
        probs[i, np.arange(len(labels)), np.minimum(labels, k - 1)] = 1.0
    return probs


@pytest.mark.parametrize("rule", ["posterior_mode", "expected_ari"])
def test_perfect_partition_at_the_inferred_k_scores_one(rule):
    y = np.repeat([0, 1, 2], 10)
    k_logits = 20.0 * np.eye(9)[1]  # a confident posterior on K = 3
    s = task_scores(_one_hot_partitions(y, 10), k_logits, y, 3, rule=rule)
    assert s == {"ari": 1.0, "nmi": 1.0, "k_abs_err": 0.0, "ari_known_k": 1.0}
    # every candidate K fills K clusters, so the posterior's K = 5 is the one inferred, by either rule
    distinct = np.stack([np.eye(10)[np.arange(len(y)) % k] for k in range(2, 11)])
    wrong_k = task_scores(distinct, 20.0 * np.eye(9)[3], y, 3, rule=rule)
    assert wrong_k["k_abs_err"] == 2.0


def test_inferred_k_follows_the_rule_of_the_estimator():
    # Partitions that differ per K: with a flat posterior the mode falls on K = 2, the expected ARI elsewhere.
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(6), 20)
    probs = np.stack([np.eye(10)[np.minimum(y, k - 1) if k < 6 else y] for k in range(2, 11)])
    probs[5:] = np.eye(10)[rng.integers(0, 10, size=(4, len(y)))]  # K >= 7: noise
    flat = np.zeros(9)
    assert task_scores(probs, flat, y, 6, rule="posterior_mode")["k_abs_err"] == 4.0
    assert task_scores(probs, flat, y, 6, rule="expected_ari")["k_abs_err"] < 4.0
    assert task_scores(probs, flat, y, 6) == task_scores(probs, flat, y, 6, rule=DEFAULT_K_SELECTION)


def test_summary_takes_medians_and_mean_k_error():
    scores = [{"ari": a, "nmi": a, "k_abs_err": e, "ari_known_k": a} for a, e in [(0.1, 0), (0.5, 1), (0.9, 5)]]
    assert summarize(scores) == {"val_ari": 0.5, "val_nmi": 0.5, "val_k_mae": 2.0, "val_ari_known_k": 0.5}


def test_validation_set_is_fixed_and_outside_the_training_seeds():
    cfg = train_preset("tiny")
    a, b = make_validation_tasks(cfg.stream, 3), make_validation_tasks(cfg.stream, 3)
    assert all(np.array_equal(x.X, z.X) for x, z in zip(a, b))
    assert all(t.meta["seed"] >= VAL_SEED_BASE for t in a)
    metrics = Validator(cfg.stream, 3, chunk=2).evaluate(build_model(cfg))
    assert set(metrics) == {"val_ari", "val_nmi", "val_k_mae", "val_ari_known_k"}
    assert -1 <= metrics["val_ari"] <= 1 and 0 <= metrics["val_k_mae"] <= cfg.model.k_max - 2
