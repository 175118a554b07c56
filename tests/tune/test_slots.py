"""Concurrency slots: at most n holders at once, freed when a holder ends or dies."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tune.slots import slot

REPO = Path(__file__).resolve().parents[2]


def _take_in_thread(folder, got: threading.Event) -> threading.Thread:
    """A thread that waits for the one slot of ``folder``, sets ``got`` and keeps it (the test ends first)."""
    def take():
        with slot(folder, 1, poll_s=0.05):
            got.set()
            time.sleep(600)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread


def test_at_most_n_holders_at_once(tmp_path):
    """Six holders of two slots: never three inside, and two do get in together (the first holders wait for a
    second one, so the count does not depend on how the threads are scheduled)."""
    inside, most, lock, two_inside = [0], [0], threading.Lock(), threading.Event()

    def work():
        with slot(tmp_path, 2, poll_s=0.01):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                if inside[0] == 2:
                    two_inside.set()
            two_inside.wait(timeout=10)  # were there only one slot, each would time out here and most stay 1
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=work, daemon=True) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert most[0] == 2 and inside[0] == 0


def test_a_slot_is_free_again_after_its_block_even_when_it_raised(tmp_path):
    with pytest.raises(RuntimeError):
        with slot(tmp_path, 1):
            raise RuntimeError("trial failed")
    got = threading.Event()
    _take_in_thread(tmp_path, got)
    assert got.wait(timeout=60)  # returns when taken; the limit is for a loaded machine


def test_a_killed_holder_gives_its_slot_back(tmp_path):
    code = ("import runpy, sys, time; slot = runpy.run_path(sys.argv[2])['slot']\n"  # not the whole tune package
            "with slot(sys.argv[1], 1):\n    print('held', flush=True); time.sleep(600)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(REPO / "tune" / "slots.py")],
                              stdout=subprocess.PIPE, text=True)
    got = threading.Event()
    try:
        assert holder.stdout.readline().strip() == "held"
        _take_in_thread(tmp_path, got)
        assert not got.wait(timeout=0.5)  # taken while the holder lives
    finally:
        holder.send_signal(signal.SIGKILL)  # no clean-up code runs
        holder.wait()
    assert got.wait(timeout=60)  # returns when taken; the limit is for a loaded machine


def test_zero_slots_is_refused():
    with pytest.raises(ValueError, match="at least one slot"):
        with slot("unused", 0):
            pass


def test_a_trial_trains_only_once_it_holds_a_slot(tmp_path, monkeypatch):
    """``run_trial`` waits while the sweep's slots are all taken (a resumed sweep whose failed trials Tune restarts
    together) and neither counts an attempt nor opens its child run before it holds one."""
    import json
    from types import SimpleNamespace

    import ray.tune

    from pipeline.config import train_preset
    from tune import config, driver

    sweep = config.SweepConfig(study="coupling", base=train_preset("tiny", smoke=True), budget_steps=2)
    trained, reported = threading.Event(), []
    monkeypatch.setattr(ray.tune, "get_context", lambda: SimpleNamespace(get_trial_id=lambda: "t1"))
    monkeypatch.setattr(ray.tune, "report", reported.append)
    monkeypatch.setattr(driver, "open_child_run", lambda *a, **k: "run-1")
    monkeypatch.setattr(driver, "end_child_run", lambda *a, **k: None)
    monkeypatch.setattr(driver, "_train_and_score", lambda *a, **k: (trained.set(), ({}, {"syn_ari": 0.5}))[1])
    run = threading.Thread(target=driver.run_trial, args=({"objective.coupling": "additive"},), kwargs=dict(
        sweep=config.sweep_to_dict(sweep), sweep_dir=str(tmp_path), tracking_uri="sqlite:///unused.db",
        experiment_id="0", parent_run_id="p", max_concurrent=1))
    record = tmp_path / config.TRIALS_DIR / "t1" / config.TRIAL_FILE
    with slot(tmp_path / config.SLOTS_DIR, 1):  # another trial holds the only slot
        run.start()
        assert not trained.wait(timeout=1.0)
        assert not record.exists()
    run.join(timeout=10)
    assert trained.is_set() and reported == [{"syn_ari": 0.5, "step": 2}]
    assert json.loads(record.read_text())["attempts"] == 1
