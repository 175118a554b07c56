"""jobs/graft_cin.py: one checkpoint's partition network with another's CIN, its lineage, and refusals."""

from __future__ import annotations

import torch

from model.checkpoint import load_checkpoint, save_checkpoint, weights_sha256
from tests.job_scripts import load_job
from tests.model.conftest import make_tiny_net


def _meta(run: str, tasks: int) -> dict:
    lineage = [{"phase": 1, "run": "gpu", "tasks": 1000}, {"phase": 2, "run": run, "tasks": tasks}]
    return {"step": 5, "tasks_seen": tasks, "lineage": lineage, "hardware": "cpu",
            "total_tasks_seen": 1000 + tasks, "train_config": {"seed": 1}}


def test_graft_keeps_the_partition_network_and_copies_the_cin_with_its_source_in_the_lineage(tmp_path):
    job = load_job("graft_cin")
    parts, donor = make_tiny_net(1), make_tiny_net(2)
    p_parts = save_checkpoint(tmp_path / "parts.pt", parts, _meta("continued", 30))
    p_donor = save_checkpoint(tmp_path / "donor.pt", donor, _meta("cin-refit", 7))
    out = tmp_path / "graft" / "model.pt"
    assert job.main([str(p_parts), str(p_donor), "--out", str(out), "--note", "why"]) == 0

    net, meta = load_checkpoint(out)
    state, parts_state, donor_state = net.state_dict(), parts.state_dict(), donor.state_dict()
    cin_keys = [k for k in state if k.startswith("cin.")]
    assert cin_keys and len(cin_keys) < len(state)
    for key, value in state.items():
        expected = donor_state[key] if key.startswith("cin.") else parts_state[key]
        assert torch.equal(value, expected), key
    # the two random nets differ, so the graft is neither input
    assert any(not torch.equal(parts_state[k], donor_state[k]) for k in cin_keys)

    last = meta["lineage"][-1]
    assert [p["run"] for p in meta["lineage"]] == ["gpu", "continued", "graft-cin"]
    assert last["phase"] == 3 and last["tasks"] == 0 and last["what"] == "why"
    assert last["sources"] == [str(p_parts), str(p_donor)]
    assert last["cin_sha256"] == weights_sha256(donor.cin.state_dict())
    assert last["cin_source_last_phase"]["run"] == "cin-refit"
    assert meta["total_tasks_seen"] == 1030 and meta["tasks_seen"] == 0


def test_a_graft_keeps_the_seeds_its_cin_donor_trained_with(tmp_path):
    """A later run on the graft must not replay the donor CIN's records: its seeds stay in ``seeds_used``."""
    from pipeline.config import seeds_used

    job = load_job("graft_cin")
    parts_meta, donor_meta = _meta("continued", 30), _meta("cin-refit", 7)
    parts_meta["lineage"][1]["seed"] = 121
    donor_meta["lineage"][1]["seed"] = 204
    donor_meta["lineage"].append({"phase": 3, "run": "average", "tasks": 0,
                                  "branches": [[{"run": "a", "seed": 31}], [{"run": "b", "seed": 32}]]})
    p_parts = save_checkpoint(tmp_path / "parts.pt", make_tiny_net(1), parts_meta)
    p_donor = save_checkpoint(tmp_path / "donor.pt", make_tiny_net(2), donor_meta)
    out = tmp_path / "graft.pt"
    assert job.main([str(p_parts), str(p_donor), "--out", str(out)]) == 0
    _, meta = load_checkpoint(out)
    assert {121, 204, 31, 32} <= seeds_used(meta)
    assert meta["lineage"][-1]["cin_lineage"] == donor_meta["lineage"]
    assert meta["total_tasks_seen"] == 1030  # the donor's tasks trained the CIN, not the partitions


def test_graft_exits_1_naming_the_config_difference(tmp_path, capsys):
    job = load_job("graft_cin")
    p_parts = save_checkpoint(tmp_path / "parts.pt", make_tiny_net(1), _meta("a", 1))
    p_other = save_checkpoint(tmp_path / "other.pt", make_tiny_net(1, n_cls=1), {})
    out = tmp_path / "graft.pt"
    assert job.main([str(p_parts), str(p_other), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "model configs differ" in err and "n_cls" in err
    assert not out.exists()


def test_graft_exits_1_on_a_missing_file(tmp_path, capsys):
    job = load_job("graft_cin")
    p_parts = save_checkpoint(tmp_path / "parts.pt", make_tiny_net(1), _meta("a", 1))
    assert job.main([str(p_parts), str(tmp_path / "nope.pt"), "--out", str(tmp_path / "g.pt")]) == 1
    assert "nope.pt" in capsys.readouterr().err
