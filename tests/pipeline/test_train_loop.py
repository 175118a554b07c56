"""The shared train step and the single-process loop: schedule, accumulation, checkpoints and exact resume."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from model.batching import collate, to_torch
from pipeline.config import OptimConfig, TrainConfig, train_preset
from pipeline.prior_stream import StreamLayout, generate_row, iter_local_rows, regenerate_task
from pipeline.train_loop import InjectedFault, run_local, train_step
from pipeline.train_state import build_model, build_optimizer, load_train_state, lr_at

REPO = Path(__file__).resolve().parents[2]
CFG = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=4, checkpoint_every=2, val_tasks=2,
                          val_every=2)


def test_lr_warms_up_linearly_then_decays_by_cosine_to_the_floor():
    optim = OptimConfig(lr=1e-3, warmup_steps=10, min_lr_ratio=0.1)
    lrs = [lr_at(s, optim, 110) for s in range(110)]
    assert lrs[0] == pytest.approx(1e-4) and lrs[4] == pytest.approx(5e-4) and lrs[9] == pytest.approx(1e-3)
    assert lrs[10] == pytest.approx(1e-3)
    assert lrs[60] == pytest.approx(1e-4 + 0.9e-3 * 0.5)  # half way through the cosine
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))
    assert lr_at(110, optim, 110) == pytest.approx(1e-4)


def test_model_init_depends_on_the_seed_only():
    a, b = build_model(CFG), build_model(CFG)
    c = build_model(dataclasses.replace(CFG, seed=1))
    assert all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    assert not all(torch.equal(a.state_dict()[k], c.state_dict()[k]) for k in a.state_dict())


def test_accumulating_two_micro_batches_equals_one_batch_of_both():
    cfg = dataclasses.replace(CFG, global_batch=4, micro_batch=2)
    tasks = [regenerate_task(cfg.stream, 0, 0, i) for i in range(4)]
    nets = [build_model(cfg) for _ in range(2)]
    opts = [build_optimizer(n, cfg.optim) for n in nets]
    halves = [to_torch(collate(tasks[:2])), to_torch(collate(tasks[2:]))]
    m_acc = train_step(nets[0], opts[0], halves, 0, cfg, torch.device("cpu"))
    m_one = train_step(nets[1], opts[1], [to_torch(collate(tasks))], 0, cfg, torch.device("cpu"))
    assert m_acc["pin_loss"] == pytest.approx(m_one["pin_loss"], rel=1e-5)
    assert m_acc["grad_norm"] == pytest.approx(m_one["grad_norm"], rel=1e-4)
    for (name, p), q in zip(nets[0].named_parameters(), nets[1].parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=name)


def test_local_rows_match_the_stream_layout():
    layout = StreamLayout(2, 2, 1, 3, 5)
    rows = list(iter_local_rows(CFG.stream, CFG.seed, layout))
    assert [(int(r["step"]), int(r["accum_index"])) for r in rows] == [(3, 0), (3, 1), (4, 0), (4, 1)]
    assert (rows[1]["seed"] == generate_row(CFG.stream, CFG.seed, layout, 1)["seed"]).all()


def test_decoupled_cin_loss_cannot_change_the_partition_networks_step_through_clipping():
    """Decoupled: CIN trains on detached partitions and is clipped apart, so the PIN's update is the same whatever
    CIN's loss; with a clip small enough to bind, a shared norm would shrink the PIN's step by CIN's gradient."""
    cfg = dataclasses.replace(CFG, optim=dataclasses.replace(CFG.optim, grad_clip=1e-3))
    batch = [to_torch(collate([regenerate_task(cfg.stream, 0, 0, i) for i in range(2)]))]
    after = {}
    for weight in (0.0, 1.0):
        run = dataclasses.replace(cfg, objective=dataclasses.replace(cfg.objective, cin_weight=weight))
        net = build_model(run)
        metrics = train_step(net, build_optimizer(net, run.optim), batch, 5, run, torch.device("cpu"))
        after[weight] = {k: v.detach().clone() for k, v in net.state_dict().items() if not k.startswith("cin.")}
        assert metrics["grad_norm"] > 1e-3  # the clip binds
    assert metrics["grad_norm_cin"] > 0
    for key, value in after[0.0].items():
        torch.testing.assert_close(after[1.0][key], value, rtol=0, atol=0, msg=key)


def test_max_temperature_bounds_the_cosine_heads_temperature_from_the_first_forward_to_the_saved_weights():
    import math

    from pipeline.config import apply_overrides

    batch = [to_torch(collate([regenerate_task(CFG.stream, 0, 0, i) for i in range(2)]))]
    taus = {}
    for bound in (None, 50.0):
        run = dataclasses.replace(CFG, optim=dataclasses.replace(CFG.optim, max_temperature=bound))
        net = build_model(run)
        net.decoder.head.log_tau.data.fill_(math.log(1000.0))  # a temperature that ran away
        seen = []
        net.decoder.head.register_forward_pre_hook(lambda mod, args: seen.append(float(mod.log_tau.exp())))
        train_step(net, build_optimizer(net, run.optim), batch, 5, run, torch.device("cpu"))
        taus[bound] = (max(seen), float(net.decoder.head.log_tau.exp()))
    assert taus[50.0][0] <= 50.0 * (1 + 1e-5) and taus[50.0][1] <= 50.0 * (1 + 1e-5)
    assert taus[None][0] == pytest.approx(1000.0, rel=1e-5) and taus[None][1] > 900.0  # unbounded: left alone
    assert apply_overrides(CFG, ["optim.max_temperature=100"]).optim.max_temperature == 100.0
    with pytest.raises(ValueError, match="max_temperature must be > 0"):
        OptimConfig(max_temperature=0.0)


def test_additive_coupling_clips_the_whole_network_as_one():
    from pipeline.train_loop import clip_groups

    net = build_model(CFG)
    additive = dataclasses.replace(CFG, objective=dataclasses.replace(CFG.objective, coupling="additive"))
    (one,) = clip_groups(net, additive)
    pin, cin = clip_groups(net, CFG)
    assert len(one) == len(pin) + len(cin) and {id(p) for p in cin} == {id(p) for p in net.cin.parameters()}


_ORPHAN_SCRIPT = """
import dataclasses, os, sys, time
from pipeline.config import train_preset
from pipeline.prior_stream import StreamLayout, iter_local_rows
cfg = train_preset("tiny", smoke=True)
rows = iter_local_rows(cfg.stream, cfg.seed, StreamLayout(2, 1, 1, 0, 10**6), workers=2)
next(rows)
me = str(os.getpid())
def parent(pid):
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]
kids = [p for p in os.listdir("/proc") if p.isdigit() and parent(p) == me]
print(" ".join(kids), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process parents from /proc (Linux)")
def test_prior_worker_processes_exit_when_the_trainer_is_killed():
    """A SIGKILLed trainer (a scheduler's kill, an out-of-memory kill) cannot shut its prior pool down: the
    workers must notice their parent is gone and exit instead of living on as orphans."""
    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN_SCRIPT], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        workers = [int(p) for p in proc.stdout.readline().split()]
    finally:
        proc.kill()
        proc.wait()
    assert len(workers) >= 2, "the pool's worker processes were not found"
    deadline = time.time() + 20
    while any(_alive(p) for p in workers) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in workers), "prior workers outlived the killed trainer"


def test_run_local_logs_every_step_and_keeps_the_newest_two_checkpoints(tmp_path):
    logged = []
    result = run_local(CFG, run_dir=tmp_path, log=lambda step, m: logged.append((step, m)))
    assert [s for s, _ in logged] == [1, 2, 3, 4]
    assert {"pin_loss", "soft_ari", "cin_loss", "k_acc", "lr", "tasks_per_s", "data_wait_fraction"} <= set(logged[0][1])
    assert {"val_ari", "val_nmi", "val_k_mae", "val_ari_known_k"} <= set(logged[1][1])
    assert "val_ari" not in logged[0][1]
    assert sorted(p.name for p in tmp_path.glob("checkpoint_step*")) == ["checkpoint_step000000002",
                                                                         "checkpoint_step000000004"]
    state = load_train_state(tmp_path / "checkpoint_step000000004")
    assert state["step"] == 4
    assert result.step == 4


def test_a_crashed_local_run_resumes_from_its_checkpoint_to_the_same_weights(tmp_path):
    cfg = dataclasses.replace(CFG, val_tasks=0)
    straight = run_local(cfg, run_dir=tmp_path / "straight").net
    faulty = dataclasses.replace(cfg, fault_step=4)
    with pytest.raises(InjectedFault):
        run_local(faulty, run_dir=tmp_path / "faulty")
    resumed = run_local(faulty, run_dir=tmp_path / "faulty")
    state = load_train_state(tmp_path / "faulty" / "checkpoint_step000000004")
    assert state["metadata"]["attempt_start_step"] == 2
    assert {int(s["step"]) for s in state["optimizer"]["state"].values()} == {4}  # AdamW continued, not restarted
    for (name, p), q in zip(straight.named_parameters(), resumed.net.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=name)


def test_bad_batch_split_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="multiple of micro_batch"):
        TrainConfig(global_batch=10, micro_batch=4)


def test_init_checkpoint_starts_from_its_weights(tmp_path):
    from model.checkpoint import save_checkpoint

    donor = build_model(dataclasses.replace(CFG, seed=5))
    save_checkpoint(tmp_path / "init.pt", donor, {})
    net = build_model(dataclasses.replace(CFG, init_checkpoint=str(tmp_path / "init.pt")))
    assert all(torch.equal(net.state_dict()[k], v) for k, v in donor.state_dict().items())
