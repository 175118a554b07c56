"""Scoring a trial: the fixed synthetic set agrees with the pipeline's Validator and ignores the trial's prior."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from model import ModelConfig, TabClustNet
from model.batching import collate, to_torch
from model.checkpoint import save_checkpoint
from model.selection import DEFAULT_K_SELECTION
from pipeline.config import train_preset
from pipeline.validation import Validator
from tests.shared_data import needs_real_suite
from tune.evaluate import (evaluate_real, fixed_synthetic_tasks, real_rows, score_tasks, summarize_real,
                           summarize_synthetic)


@pytest.fixture(scope="module")
def tiny_net():
    with torch.random.fork_rng(devices=[]):  # seeded weights; the global RNG of other tests is untouched
        torch.manual_seed(0)
        return TabClustNet(ModelConfig.preset("tiny")).eval()


def test_the_fixed_set_is_the_same_whatever_prior_a_trial_trains_on():
    stream = train_preset("tiny", smoke=True).stream
    tasks = {kind: fixed_synthetic_tasks(dataclasses.replace(stream, kind=kind), 6) for kind in ("gmm", "zeus", "mix")}
    for kind in ("gmm", "zeus"):
        for a, b in zip(tasks[kind], tasks["mix"]):
            np.testing.assert_array_equal(a.X, b.X)
    assert {t.meta["mechanism"] for t in tasks["mix"]} <= {"gmm", "zeus"}


def test_synthetic_scores_match_the_pipeline_validator(tiny_net):
    stream = dataclasses.replace(train_preset("tiny", smoke=True).stream, kind="mix")
    scores = score_tasks(tiny_net, fixed_synthetic_tasks(stream, 12), chunk=5)
    mine = summarize_synthetic(scores)
    theirs = Validator(stream, 12).evaluate(tiny_net)
    assert mine["syn_ari"] == pytest.approx(theirs["val_ari"], abs=1e-6)
    assert mine["syn_nmi"] == pytest.approx(theirs["val_nmi"], abs=1e-6)
    assert mine["syn_k_mae"] == pytest.approx(theirs["val_k_mae"], abs=1e-6)
    assert mine["syn_ari_known_k"] == pytest.approx(theirs["val_ari_known_k"], abs=1e-6)
    errors = [s["k_abs_err"] for s in scores]
    assert mine["syn_k_medae"] == np.median(errors) and mine["syn_tasks"] == 12
    for mech in ("gmm", "zeus"):
        group = [s["ari"] for s in scores if s["mechanism"] == mech]
        assert group and mine[f"syn_ari_{mech}"] == np.median(group)


def test_score_tasks_infers_k_by_the_rule_asked_for(tiny_net):
    stream = dataclasses.replace(train_preset("tiny", smoke=True).stream, kind="mix")
    tasks = fixed_synthetic_tasks(stream, 6)
    mode = score_tasks(tiny_net, tasks, rule="posterior_mode")
    with torch.no_grad():
        for task, s in zip(tasks, mode):  # the paper's rule: the argmax of CIN's logits
            b = to_torch(collate([task]))
            k_hat = int(tiny_net.infer(b["X"], b["row_mask"], b["col_mask"], b["cat_mask"]).k_logits[0].argmax()) + 2
            assert s["k_abs_err"] == abs(k_hat - task.n_clusters)
    default = score_tasks(tiny_net, tasks)
    assert default == score_tasks(tiny_net, tasks, rule=DEFAULT_K_SELECTION)
    assert [s["ari_known_k"] for s in default] == [s["ari_known_k"] for s in mode]  # the rule touches K only


@needs_real_suite
def test_real_suite_scores_are_medians_over_the_datasets(tiny_net, tmp_path):
    from pipeline.evaluation.suites import real_suite

    path = save_checkpoint(tmp_path / "tiny.pt", tiny_net, {})
    datasets = real_suite(names=["iris", "wine"])
    out = evaluate_real(path, datasets)
    assert out["real_datasets"] == 2
    assert -1 <= out["real_ari"] <= 1 and 0 <= out["real_nmi"] <= 1 and out["real_k_mae"] >= 0
    rows = real_rows(path, datasets)
    assert [r["name"] for r in rows] == ["iris", "wine"]
    assert out == summarize_real(rows)
    assert out["real_ari"] == pytest.approx(np.median([r["ari"] for r in rows]))
    assert out["real_ari_known_k"] == pytest.approx(np.median([r["ari_known_k"] for r in rows]))
    assert [r["k_err"] for r in rows] == [abs(r["k_pred"] - d.n_clusters) for r, d in zip(rows, datasets)]
    assert summarize_real([]) == {"real_datasets": 0.0}


@needs_real_suite
def test_real_known_k_score_clusters_with_the_true_k(tiny_net, tmp_path):
    from sklearn.metrics import adjusted_rand_score

    from model import TabClustPFN
    from pipeline.evaluation.suites import real_suite

    path = save_checkpoint(tmp_path / "tiny.pt", tiny_net, {})
    (iris,) = real_suite(names=["iris"])
    out = evaluate_real(path, [iris])
    given = TabClustPFN(iris.n_clusters, checkpoint=path, random_state=0).fit(iris.features)
    assert given.n_clusters_ == iris.n_clusters == 3
    assert out["real_ari_known_k"] == pytest.approx(adjusted_rand_score(iris.y, given.labels_))


@needs_real_suite
def test_checkpoint_comparison_pairs_the_suite_tables(tiny_net, tmp_path, capsys):
    from benchmarks.compare_checkpoints import compare_on_suite
    from pipeline.evaluation.suites import real_suite

    path = str(save_checkpoint(tmp_path / "tiny.pt", tiny_net, {}))
    datasets = real_suite(names=["iris", "wine"])
    compare_on_suite("real", datasets, [path, path], [(None, None), ("posterior_mode", None)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "real (2 datasets)"
    rows = real_rows(path, datasets)
    means = np.mean([[r["ari"], r["ari_known_k"]] for r in rows], axis=0)
    assert f"(means {means[0]:.3f} / {means[1]:.3f})" in lines[1]
    paired = [line.strip() for line in lines if line.strip().startswith("vs ")]
    assert len(paired) == 3  # every (checkpoint, rule) after the first
    assert paired[1] == (f"vs {path}: K inferred +0.0000 +- 0.0000 (better on 0, worse on 0); "
                         "true K +0.0000 +- 0.0000 (better on 0, worse on 0)")  # the same checkpoint and rule


def test_checkpoint_comparison_on_prior_tasks_pairs_them(tiny_net, tmp_path, capsys):
    from benchmarks.compare_checkpoints import compare_on_prior
    from pipeline.config import StreamConfig

    path = str(save_checkpoint(tmp_path / "tiny.pt", tiny_net, {}))
    compare_on_prior([path, path], 3, [(None, 1)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "prior (3 held-out tasks, N 500-1000)"
    assert lines[1].strip().startswith(f"{path} [n_estimators=1]")
    scores = score_tasks(tiny_net, fixed_synthetic_tasks(StreamConfig(), 3))
    assert f"ARI {np.median([s['ari'] for s in scores]):.3f}" in lines[1]
    assert lines[-1].strip() == (f"vs {path} [n_estimators=1]: K inferred +0.0000 +- 0.0000 (better on 0, worse "
                                 "on 0); true K +0.0000 +- 0.0000 (better on 0, worse on 0)")


def test_ensemble_scores_match_the_estimator_on_the_same_task(tiny_net, tmp_path):
    from model import TabClustPFN
    from pipeline.evaluation.suites import prior_frame
    from sklearn.metrics import adjusted_rand_score

    path = save_checkpoint(tmp_path / "tiny.pt", tiny_net, {})
    stream = dataclasses.replace(train_preset("tiny", smoke=True).stream, kind="mix")
    tasks = fixed_synthetic_tasks(stream, 4)
    scores = score_tasks(tiny_net, tasks, n_estimators=3)
    for task, s in zip(tasks, scores):
        frame = prior_frame(np.asarray(task.X), task.categorical)
        est = TabClustPFN(checkpoint=str(path), n_estimators=3, refine="none").fit(frame)
        assert s["ari"] == pytest.approx(adjusted_rand_score(task.y, est.labels_), abs=1e-9)
        # the K the rule chose (what training validates), before the estimator drops components left empty
        assert s["k_abs_err"] == abs(est.k_chosen_ - task.n_clusters)
