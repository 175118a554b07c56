"""A worker crash mid-run: Ray Train restarts the workers from the last checkpoint and the run completes."""

from __future__ import annotations

import dataclasses

import pytest
from mlflow.tracking import MlflowClient

from model.checkpoint import load_checkpoint
from pipeline.config import train_preset
from pipeline.pretrain import RunOptions, pretrain
from pipeline.train_loop import FAULT_MARKER
from pipeline.train_state import load_train_state


@pytest.mark.slow
def test_crashed_worker_resumes_from_checkpoint_and_keeps_the_metric_history(ray_local, tmp_path, tracking_uri):
    # checkpoints after steps 2 and 4; the worker crashes before step 4, after step 3 was logged
    cfg = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=4, checkpoint_every=2, val_every=2,
                              val_tasks=2, fault_step=4, max_failures=1)
    result = pretrain(cfg, RunOptions(storage_path=str(tmp_path / "runs"), run_name="faulty", tracking_uri=tracking_uri,
                                      registered_model_name=None, progress_interval_s=5))
    assert (result.run_dir / FAULT_MARKER).exists()  # the crash did happen
    state = load_train_state(result.run_dir / "checkpoint_step000000004")
    assert state["step"] == 4
    assert state["metadata"]["attempt_start_step"] == 2  # the last attempt started from the step-2 checkpoint
    # AdamW's per-parameter step counts continue across the crash: 4 = 2 before + 2 after (a restart would give 2)
    assert {int(s["step"]) for s in state["optimizer"]["state"].values()} == {4}

    client = MlflowClient(tracking_uri)
    run = client.get_run(result.run_id)
    assert run.info.status == "FINISHED"
    for key in ("pin_loss", "soft_ari", "cin_loss", "k_acc", "lr", "tasks_per_s", "data_wait_fraction"):
        assert [m.step for m in client.get_metric_history(result.run_id, key)] == [1, 2, 3, 4], key
    assert [m.step for m in client.get_metric_history(result.run_id, "val_ari")] == [2, 4]
    net, meta = load_checkpoint(result.checkpoint)
    assert meta["step"] == 4 and meta["mlflow_run_id"] == result.run_id
