"""Tune's experiment state kept resumable across a driver killed mid-write: snapshots, repair, idempotent trials."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from types import SimpleNamespace

import pytest

from pipeline.config import train_preset
from tune import config, driver, state
from tune.state import SNAPSHOT_DIR, TORN_DIR, StateSnapshots, is_complete, repair, snapshot

S1, S2 = "2026-11-26_09-00-00", "2026-11-26_10-00-00"


def _state(trials: list[str]) -> bytes:
    return json.dumps({"trial_data": [[json.dumps({"trial_id": t, "status": "TERMINATED"}), "{}"] for t in trials],
                       "runner_data": {}, "stats": {}}).encode()


def _write_session(folder: Path, session: str, trials: list[str]) -> dict[str, bytes]:
    files = {f"experiment_state-{session}.json": _state(trials),
             f"basic-variant-state-{session}.json": pickle.dumps({"trials": trials})}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return files


def test_complete_means_json_that_parses_and_pickles_that_end_with_stop():
    whole = _state(["a"])
    assert is_complete("experiment_state-x.json", whole)
    assert not is_complete("experiment_state-x.json", whole[:-1])
    assert not is_complete("experiment_state-x.json", b"")
    blob = pickle.dumps({"k": list(range(50))})
    assert is_complete("basic-variant-state-x.json", blob)
    assert not is_complete("basic-variant-state-x.json", blob[:-3])


def test_snapshot_copies_the_newest_session_only_when_every_file_is_whole(tmp_path):
    _write_session(tmp_path, S1, ["a"])
    files = _write_session(tmp_path, S2, ["a", "b"])
    assert snapshot(tmp_path)
    copies = {p.name: p.read_bytes() for p in (tmp_path / SNAPSHOT_DIR).iterdir()}
    assert copies == files  # the older session is not copied

    live = tmp_path / f"experiment_state-{S2}.json"
    live.write_bytes(_state(["a", "b", "c"])[:40])  # being rewritten
    assert not snapshot(tmp_path)
    assert (tmp_path / SNAPSHOT_DIR / live.name).read_bytes() == files[live.name]  # the last whole copy stays


def test_repair_puts_the_last_complete_copy_back_and_keeps_the_torn_file(tmp_path):
    files = _write_session(tmp_path, S1, ["a", "b"])
    snapshot(tmp_path)
    live = tmp_path / f"experiment_state-{S1}.json"
    live.write_bytes(b"")
    done = repair(tmp_path)
    assert len(done) == 1 and live.name in done[0]
    assert live.read_bytes() == files[live.name]
    assert (tmp_path / SNAPSHOT_DIR / TORN_DIR / live.name).read_bytes() == b""
    assert repair(tmp_path) == []  # nothing more to do


def test_repair_replaces_a_torn_search_state_too(tmp_path):
    files = _write_session(tmp_path, S1, ["a"])
    snapshot(tmp_path)
    side = tmp_path / f"basic-variant-state-{S1}.json"
    side.write_bytes(files[side.name][:5])
    repair(tmp_path)
    assert side.read_bytes() == files[side.name]


def test_repair_falls_back_to_the_previous_session_when_the_newest_never_had_a_whole_copy(tmp_path):
    first = _write_session(tmp_path, S1, ["a"])
    snapshot(tmp_path)
    _write_session(tmp_path, S2, ["a", "b"])
    (tmp_path / f"experiment_state-{S2}.json").write_bytes(b'{"trial_da')
    done = repair(tmp_path)
    assert "moved aside" in done[-1]
    assert state.newest_state(tmp_path).name == f"experiment_state-{S1}.json"
    assert {p.name for p in tmp_path.iterdir() if p.is_file()} == set(first)
    assert {p.name for p in (tmp_path / SNAPSHOT_DIR / TORN_DIR).iterdir()} == {
        f"experiment_state-{S2}.json", f"basic-variant-state-{S2}.json"}


def test_repair_restores_the_copy_when_the_folder_lost_every_whole_state(tmp_path):
    files = _write_session(tmp_path, S1, ["a"])
    snapshot(tmp_path)
    for name in files:
        (tmp_path / name).unlink()
    (tmp_path / f"experiment_state-{S2}.json").write_bytes(b"")
    repair(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == files


def test_repair_says_so_when_nothing_whole_is_left(tmp_path):
    (tmp_path / f"experiment_state-{S1}.json").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="no complete Tune experiment state"):
        repair(tmp_path)


def test_callback_snapshots_on_change_only(tmp_path, monkeypatch):
    files = _write_session(tmp_path, S1, ["a"])
    trial = SimpleNamespace(storage=SimpleNamespace(experiment_fs_path=str(tmp_path)))
    calls = []
    monkeypatch.setattr(state, "snapshot", lambda folder: calls.append(folder) or snapshot(folder))
    callback = StateSnapshots()
    callback.on_step_end(iteration=1, trials=[trial])
    callback.on_step_end(iteration=2, trials=[trial])
    assert len(calls) == 1
    name = f"experiment_state-{S1}.json"
    assert (tmp_path / SNAPSHOT_DIR / name).read_bytes() == files[name]
    (tmp_path / f"experiment_state-{S1}.json").write_bytes(_state(["a", "b"]))
    callback.on_step_end(iteration=3, trials=[trial])
    assert len(calls) == 2
    assert json.loads((tmp_path / SNAPSHOT_DIR / f"experiment_state-{S1}.json").read_bytes())["trial_data"][1]
    callback.on_step_end(iteration=4, trials=[])  # no trials yet: nothing to look at


def test_a_finished_trial_resumed_from_an_older_state_reports_its_saved_scores_without_training(tmp_path,
                                                                                                  monkeypatch):
    import ray.tune

    sweep = config.SweepConfig(study="coupling", base=train_preset("tiny", smoke=True), budget_steps=2)
    trial_dir = tmp_path / config.TRIALS_DIR / "t1"
    trial_dir.mkdir(parents=True)
    saved = {"trial_id": "t1", "attempts": 1, "status": "finished", "mlflow_run_id": "r1",
             "metrics": {"syn_ari": 0.4}, "report": {"syn_ari": 0.4, "step": 2, "ms_per_step": 12.0}}
    (trial_dir / config.TRIAL_FILE).write_text(json.dumps(saved))
    reported = []
    monkeypatch.setattr(ray.tune, "get_context", lambda: SimpleNamespace(get_trial_id=lambda: "t1"))
    monkeypatch.setattr(ray.tune, "report", reported.append)
    monkeypatch.setattr(driver, "_train_and_score", lambda *a, **k: pytest.fail("trained again"))
    monkeypatch.setattr(driver, "open_child_run", lambda *a, **k: pytest.fail("opened another child run"))
    driver.run_trial({"objective.coupling": "decoupled"}, sweep=config.sweep_to_dict(sweep), sweep_dir=str(tmp_path),
                     tracking_uri="sqlite:///unused.db", experiment_id="0", parent_run_id="p", max_concurrent=1)
    assert reported == [saved["report"]]
    assert json.loads((trial_dir / config.TRIAL_FILE).read_text()) == saved  # not counted as another attempt
