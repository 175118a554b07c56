"""Resuming a run: one source of truth for data and weights, changed settings that take effect, a smooth
learning rate, damaged or missing files, and DDP with a part of the objective switched off."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pipeline.config import train_preset
from pipeline.prior_stream import StreamLayout, iter_local_rows, resume_point
from pipeline.train_loop import InjectedFault, ddp_kwargs, run_local, run_steps, train_step
from pipeline.train_state import (LrSchedule, build_model, build_optimizer, load_train_state, lr_at,
                                  save_train_state)

REPO = Path(__file__).resolve().parents[2]
CFG = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=4, checkpoint_every=2, val_tasks=0)


def _crash_at_step_3(run_dir: Path, cfg=CFG):
    """A run of ``cfg`` that crashed after its step-2 checkpoint (the injected fault fires before step 3)."""
    with pytest.raises(InjectedFault):
        run_local(dataclasses.replace(cfg, fault_step=3), run_dir=run_dir)


def test_a_stream_that_starts_elsewhere_than_the_restored_step_is_an_error():
    net = build_model(CFG)
    rows = iter_local_rows(CFG.stream, CFG.seed, StreamLayout(CFG.micro_batch, CFG.accum_steps, 1, 2, 4))
    with pytest.raises(RuntimeError, match="prior stream and the restored weights disagree"):
        run_steps(net, net, build_optimizer(net, CFG.optim), rows, CFG, 0, torch.device("cpu"))


def test_resume_point_is_the_newest_checkpoint_that_loads(tmp_path, caplog):
    run_local(CFG, run_dir=tmp_path)
    assert resume_point(tmp_path) == (4, tmp_path / "checkpoint_step000000004")
    state = tmp_path / "checkpoint_step000000004" / "train_state.pt"
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 2])  # what an interrupted copy leaves
    with caplog.at_level(logging.WARNING):
        assert resume_point(tmp_path) == (2, tmp_path / "checkpoint_step000000002")
    assert str(state) in caplog.text
    assert resume_point(tmp_path / "missing") == (0, None)


def test_a_truncated_newest_state_falls_back_to_the_older_one(tmp_path):
    run_local(CFG, run_dir=tmp_path)
    state = tmp_path / "checkpoint_step000000004" / "train_state.pt"
    state.write_bytes(state.read_bytes()[:1000])
    resumed = run_local(dataclasses.replace(CFG, max_steps=6), run_dir=tmp_path)
    assert resumed.step == 6 and [int(h["step"]) for h in resumed.history] == [3, 4, 5, 6]
    assert load_train_state(tmp_path / "checkpoint_step000000006")["metadata"]["attempt_start_step"] == 2


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names file descriptors through /proc (Linux)")
def test_a_training_state_reaches_the_disk_before_it_is_renamed(tmp_path, monkeypatch):
    synced, fsync = [], os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), fsync(fd)))
    net = build_model(CFG)
    save_train_state(tmp_path, net, build_optimizer(net, CFG.optim), 0, CFG, {})
    assert str(tmp_path / ".train_state.pt.tmp") in synced


def test_changed_optimizer_settings_apply_after_a_resume(tmp_path):
    run_local(dataclasses.replace(CFG, max_steps=2), run_dir=tmp_path)
    optim = dataclasses.replace(CFG.optim, weight_decay=0.5, betas=(0.8, 0.9), eps=1e-3)
    resumed = run_local(dataclasses.replace(CFG, max_steps=3, optim=optim), run_dir=tmp_path)
    decay, no_decay = resumed.optimizer.param_groups
    assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.5, 0.0)
    assert all(g["betas"] == (0.8, 0.9) and g["eps"] == 1e-3 for g in (decay, no_decay))
    state = load_train_state(tmp_path / "checkpoint_step000000003")
    assert {int(s["step"]) for s in state["optimizer"]["state"].values()} == {3}  # the moments carried over


def test_extending_max_steps_continues_the_decay_from_the_current_rate():
    optim = dataclasses.replace(CFG.optim, lr=1e-3, warmup_steps=2, min_lr_ratio=0.1)
    old = LrSchedule.fresh(optim, 10)
    new = old.resumed(6, optim, 20)
    assert new(6) == pytest.approx(old(6))  # no jump where the run resumes ...
    lrs = [new(s) for s in range(6, 21)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))  # ... then a monotone decay ...
    assert new(20) == pytest.approx(1e-4) and new(6) < lr_at(6, optim, 20)  # ... to the floor at the new end
    assert old.resumed(6, optim, 10) is old  # nothing changed: the same schedule
    assert old.resumed(1, optim, 20) == LrSchedule.fresh(optim, 20)  # during warm-up: warm up, then the new cosine


def test_a_resumed_run_with_more_steps_has_no_learning_rate_jump(tmp_path):
    cfg = dataclasses.replace(CFG, max_steps=6, optim=dataclasses.replace(CFG.optim, warmup_steps=1))
    _crash_at_step_3(tmp_path, cfg)
    resumed = run_local(dataclasses.replace(cfg, max_steps=12), run_dir=tmp_path)
    lrs = [h["lr"] for h in resumed.history]
    assert lrs[0] == pytest.approx(lr_at(2, cfg.optim, 6))  # step 3 (index 2) where the old schedule had it
    assert all(a >= b for a, b in zip(lrs, lrs[1:])) and lrs[-1] < lrs[0]
    # the segment is saved, so a further resume at the same max_steps continues the same curve
    state = load_train_state(tmp_path / "checkpoint_step000000012")
    assert state["schedule"]["start"] == 2 and state["schedule"]["max_steps"] == 12


def test_a_resumed_run_does_not_need_its_init_checkpoint_any_more(tmp_path, tiny_checkpoint):
    init = tmp_path / "parent.pt"
    shutil.copy(tiny_checkpoint, init)
    cfg = dataclasses.replace(CFG, max_steps=2, init_checkpoint=str(init))
    run_local(cfg, run_dir=tmp_path / "run")
    init.unlink()
    resumed = run_local(dataclasses.replace(cfg, max_steps=3), run_dir=tmp_path / "run")
    assert resumed.step == 3


_DDP_ONE_HEAD_OFF = """
import dataclasses, sys
import torch
from torch.nn.parallel import DistributedDataParallel
from model.batching import to_torch
from pipeline.config import train_preset
from pipeline.prior_stream import StreamLayout, iter_local_rows
from pipeline.train_loop import ddp_kwargs, train_step
from pipeline.train_state import build_model, build_optimizer

off = sys.argv[1]
cfg = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=4, checkpoint_every=2, val_tasks=0)
cfg = dataclasses.replace(cfg, objective=dataclasses.replace(cfg.objective, **{off: 0.0}))
torch.distributed.init_process_group("gloo", store=torch.distributed.HashStore(), rank=0, world_size=1)
try:
    net = build_model(cfg)
    model = DistributedDataParallel(net, **ddp_kwargs(cfg))
    optimizer = build_optimizer(net, cfg.optim)
    rows = iter_local_rows(cfg.stream, cfg.seed, StreamLayout(cfg.micro_batch, cfg.accum_steps, 1, 0, 3))
    for step in range(3):  # DDP refuses unused parameters from the second step on
        batches = [to_torch(next(rows), "cpu") for _ in range(cfg.accum_steps)]
        metrics = train_step(model, optimizer, batches, step, cfg, torch.device("cpu"))
    print("skipped", metrics["skipped"])
finally:
    torch.distributed.destroy_process_group()
"""


@pytest.mark.parametrize("off", ["cin_weight", "pin_weight"])
def test_ddp_trains_with_one_part_of_the_objective_switched_off(off):
    # A process of its own, an in-memory store and the loopback device: CI once hung in this test until its
    # 90-minute limit (native code waiting inside the gloo group, where pytest-timeout's signal never lands),
    # with the group in the pytest process beside the session's Ray driver and a file store. Now a hang costs at
    # most the timeout below and fails this test alone.
    env = dict(os.environ, PYTHONPATH=str(REPO), GLOO_SOCKET_IFNAME="lo")
    try:
        done = subprocess.run([sys.executable, "-c", _DDP_ONE_HEAD_OFF, off], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"DDP with {off} = 0 did not finish in {exc.timeout} s:\n{(exc.stderr or b'')[-4000:]!r}")
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stderr[-4000:]}"
    assert done.stdout.split()[-2:] == ["skipped", "0.0"]


@pytest.mark.slow
def test_a_ray_resume_continues_a_local_runs_checkpoint(ray_local, tmp_path):
    """jobs/pretrain.py --local then --resume on Ray: the workers restore the step the stream starts at."""
    from pipeline.pretrain import build_trainer

    run_local(dataclasses.replace(CFG, max_steps=2), run_dir=tmp_path / "r3")
    cfg = dataclasses.replace(CFG, max_steps=3, checkpoint_every=3, max_failures=0)
    result = build_trainer(cfg, tmp_path / "r3", tracking_uri=None, run_id=None).fit()
    assert result.error is None
    state = load_train_state(tmp_path / "r3" / "checkpoint_step000000003")
    assert state["metadata"]["attempt_start_step"] == 2
    assert {int(s["step"]) for s in state["optimizer"]["state"].values()} == {3}
