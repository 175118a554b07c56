"""Budgeted in-process pretraining: sizing, deadline, skipped non-finite updates, outputs and lineage."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest
import torch

from model.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from pipeline.budget import HISTORY_FILE, MODEL_FILE, SUMMARY_FILE, pretrain_for_budget, size_run
from pipeline.config import train_preset
from pipeline.prior_stream import StreamLayout, generate_row
from pipeline.train_loop import build_model, build_optimizer, run_local, train_step
from model.batching import to_torch

CFG = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=4, checkpoint_every=2, val_tasks=2,
                          val_every=2)


def test_size_run_fits_steps_and_validations_into_the_seconds():
    steps = size_run(100.0, step_s=0.5, val_s=5.0, val_every=10)
    assert steps * 0.5 + (steps / 10) * 5.0 <= 100.0 < (steps + 1) * 0.5 + ((steps + 1) / 10) * 5.0
    assert size_run(100.0, 0.5, 0.0, 10, max_steps_cap=7) == 7
    assert size_run(-1.0, 0.5, 0.0, 10) == 0


def test_run_local_stops_at_the_deadline_and_checkpoints_the_last_step(tmp_path):
    cfg = dataclasses.replace(CFG, max_steps=50, checkpoint_every=100, val_tasks=0)
    result = run_local(cfg, run_dir=tmp_path, deadline=time.monotonic())  # already passed: one step, then stop
    assert result.step == 1 and len(result.history) == 1
    assert (tmp_path / "checkpoint_step000000001" / "train_state.pt").is_file()


def test_a_non_finite_gradient_skips_the_update_instead_of_poisoning_the_weights():
    net = build_model(CFG)
    opt = build_optimizer(net, CFG.optim)
    layout = StreamLayout(CFG.micro_batch, CFG.accum_steps, 1, 0, 1)
    batch = to_torch(generate_row(CFG.stream, CFG.seed, layout, 0, CFG.model.max_categories), "cpu")
    batch["X"][0, 0, 0] = float("nan")
    before = {k: v.clone() for k, v in net.state_dict().items()}
    metrics = train_step(net, opt, [batch], 0, CFG, torch.device("cpu"))
    assert metrics["skipped"] == 1.0
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    batch["X"][0, 0, 0] = 0.0
    metrics = train_step(net, opt, [batch], 1, CFG, torch.device("cpu"))
    assert metrics["skipped"] == 0.0
    assert any(not torch.equal(before[k], v) for k, v in net.state_dict().items())


def test_budgeted_run_ends_inside_its_budget_and_records_its_lineage(tmp_path, tiny_checkpoint):
    init = tmp_path / "init.pt"
    net, _ = load_checkpoint(tiny_checkpoint)
    save_checkpoint(init, net, {"lineage": [{"phase": 1, "run": "earlier", "tasks": 100}], "total_tasks_seen": 100})
    cfg = dataclasses.replace(CFG, init_checkpoint=str(init), checkpoint_every=3)
    budget = 40.0
    t0 = time.monotonic()
    summary = pretrain_for_budget(cfg, budget, tmp_path / "out", probe_steps=2, reserve_s=5.0, step_s=0.2,
                                  phase_note="test phase")
    assert time.monotonic() - t0 <= budget
    assert summary["steps"] >= 1 and summary["steps"] <= summary["planned_steps"]
    out = tmp_path / "out"
    lines = [json.loads(line) for line in (out / HISTORY_FILE).read_text().splitlines()]
    assert [h["step"] for h in lines] == list(range(1, summary["steps"] + 1))
    assert json.loads((out / SUMMARY_FILE).read_text())["steps"] == summary["steps"]
    meta = read_checkpoint(out / MODEL_FILE)["metadata"]
    assert meta["step"] == summary["steps"]
    assert [p["run"] for p in meta["lineage"]] == ["earlier", "out"] and meta["lineage"][1]["what"] == "test phase"
    assert meta["total_tasks_seen"] == 100 + summary["steps"] * cfg.global_batch
    trained, _ = load_checkpoint(out / MODEL_FILE)
    assert any(not torch.equal(a, b) for a, b in zip(trained.state_dict().values(), net.state_dict().values()))


def test_a_budgeted_run_refuses_a_directory_that_already_holds_a_run(tmp_path):
    (tmp_path / "out" / "state" / "checkpoint_step000000001").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="already holds a run"):
        pretrain_for_budget(CFG, 30.0, tmp_path / "out", step_s=0.1)


def test_a_budgeted_run_is_recorded_in_mlflow_with_its_history(tmp_path, tracking_uri):
    from mlflow.tracking import MlflowClient

    from pipeline.tracking import log_budget_run

    pretrain_for_budget(dataclasses.replace(CFG, checkpoint_every=2), 30.0, tmp_path / "out", reserve_s=5.0,
                        step_s=0.2)
    steps = json.loads((tmp_path / "out" / SUMMARY_FILE).read_text())["steps"]
    run_id = log_budget_run(tmp_path / "out", tracking_uri, run_name="budget-test")
    client = MlflowClient(tracking_uri)
    run = client.get_run(run_id)
    assert run.data.tags["backend"] == "budget" and run.data.params["global_batch"] == str(CFG.global_batch)
    assert [m.step for m in client.get_metric_history(run_id, "pin_loss")] == list(range(1, steps + 1))
    assert {a.path for a in client.list_artifacts(run_id)} >= {MODEL_FILE, SUMMARY_FILE}


def test_recording_an_unfinished_folder_names_what_is_missing(tmp_path, tracking_uri):
    from pipeline.tracking import log_budget_run

    with pytest.raises(FileNotFoundError, match="history.jsonl"):
        log_budget_run(tmp_path, tracking_uri)
