"""model/lineage.py: weight averages and CIN grafts, and the lineage each records."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from model.checkpoint import CheckpointError, save_checkpoint, weights_sha256
from model.lineage import (
    average_checkpoints,
    averaged_metadata,
    graft_cin,
    grafted_metadata,
    inherited_lineage,
    phase_tasks,
)
from tests.model.conftest import make_tiny_net


def _meta(branch: list[dict]) -> dict:
    parent = [{"phase": 1, "run": "gpu", "tasks": 1000}, {"phase": 2, "run": "cpu", "tasks": 100}]
    lineage = parent + branch
    return {"step": 5, "tasks_seen": branch[-1]["tasks"], "lineage": lineage, "hardware": "cpu",
            "total_tasks_seen": sum(p["tasks"] for p in lineage), "train_config": {"seed": 1}}


def test_an_average_phase_counts_the_tasks_of_its_branches_and_their_averages():
    inner = {"run": "average", "tasks": 0, "branches": [[{"tasks": 3}], [{"tasks": 4}, {"tasks": 5}]]}
    assert phase_tasks({"run": "a", "tasks": 7}) == 7
    assert phase_tasks(inner) == 12
    assert phase_tasks({"run": "average", "tasks": 0, "branches": [[inner], [{"tasks": 1}]]}) == 13


def test_a_continued_run_inherits_the_recorded_phases_and_total_tasks():
    meta = _meta([{"phase": 3, "run": "a", "tasks": 30}])
    assert inherited_lineage(meta) == (meta["lineage"], 1130)
    assert inherited_lineage({"tasks_seen": 64}) == ([], 64)  # written before lineages were recorded
    assert inherited_lineage({}) == ([], 0)


def test_averaged_metadata_keeps_the_parent_once_and_the_runs_as_branches():
    a = _meta([{"phase": 3, "run": "a", "tasks": 30}])
    b = _meta([{"phase": 3, "run": "b", "tasks": 50}])
    meta = averaged_metadata([a, b], ["ra.pt", "rb.pt"], [1.0, 3.0], note="soup")
    assert [p["run"] for p in meta["lineage"]] == ["gpu", "cpu", "average"]
    last = meta["lineage"][-1]
    assert last["phase"] == 3 and last["what"] == "soup" and last["weights"] == [0.25, 0.75]
    assert last["branches"] == [a["lineage"][2:], b["lineage"][2:]] and last["sources"] == ["ra.pt", "rb.pt"]
    assert meta["total_tasks_seen"] == 1000 + 100 + 30 + 50 and meta["tasks_seen"] == 80


def test_averaged_metadata_counts_the_tasks_of_averages_inside_the_lineage():
    # a soup in the shared parent, and a soup of soups: their runs' tasks sit in "branches", not in "tasks"
    inner = averaged_metadata([_meta([{"phase": 3, "run": "x", "tasks": 7}]),
                               _meta([{"phase": 3, "run": "y", "tasks": 11}])], ["x.pt", "y.pt"], [1.0, 1.0])
    assert inner["total_tasks_seen"] == 1000 + 100 + 7 + 11
    later = {**inner, "lineage": [*inner["lineage"], {"phase": 4, "run": "z", "tasks": 5}]}
    other = {**inner, "lineage": [*inner["lineage"], {"phase": 4, "run": "w", "tasks": 3}]}
    meta = averaged_metadata([later, other], ["z.pt", "w.pt"], [1.0, 1.0])
    assert meta["total_tasks_seen"] == 1000 + 100 + 7 + 11 + 5 + 3 and meta["tasks_seen"] == 8
    nested = averaged_metadata([later, _meta([{"phase": 3, "run": "v", "tasks": 2}])], ["z.pt", "v.pt"], [1, 1])
    assert nested["tasks_seen"] == 7 + 11 + 5 + 2  # the first branch holds the inner soup and its runs
    assert nested["total_tasks_seen"] == 1000 + 100 + 7 + 11 + 5 + 2


def test_grafted_metadata_adds_one_phase_with_the_donor_and_keeps_the_partition_network_s_tasks():
    parts, donor = _meta([{"phase": 3, "run": "a", "tasks": 30}]), _meta([{"phase": 3, "run": "refit", "tasks": 9}])
    meta = grafted_metadata(parts, donor, "p.pt", "d.pt", "abc", note="why")
    assert meta["lineage"][:3] == parts["lineage"]
    last = meta["lineage"][-1]
    assert (last["phase"], last["run"], last["tasks"], last["what"]) == (4, "graft-cin", 0, "why")
    assert last["sources"] == ["p.pt", "d.pt"] and last["cin_sha256"] == "abc"
    assert last["cin_lineage"] == donor["lineage"] and last["cin_source_last_phase"]["run"] == "refit"
    assert meta["total_tasks_seen"] == 1130 and meta["tasks_seen"] == 0


def test_average_of_checkpoints_is_the_weighted_mean_of_every_weight_with_its_lineage(tmp_path):
    a, b = make_tiny_net(1), make_tiny_net(2)
    pa = save_checkpoint(tmp_path / "a.pt", a, _meta([{"phase": 3, "run": "a", "tasks": 30}]))
    pb = save_checkpoint(tmp_path / "b.pt", b, _meta([{"phase": 3, "run": "b", "tasks": 50}]))
    net, meta = average_checkpoints([pa, pb], [3.0, 1.0], note="soup")
    assert net.cfg == a.cfg and not net.training
    sa, sb = a.state_dict(), b.state_dict()
    for key, value in net.state_dict().items():
        torch.testing.assert_close(value, 0.75 * sa[key] + 0.25 * sb[key], rtol=1e-6, atol=1e-7)
    last = meta["lineage"][-1]
    assert (last["run"], last["what"], last["weights"], last["sources"]) == ("average", "soup", [0.75, 0.25],
                                                                             [str(pa), str(pb)])
    assert meta["total_tasks_seen"] == 1180
    same, _ = average_checkpoints([pa, pa])  # the mean of one network with itself is that network
    assert weights_sha256(same.state_dict()) == weights_sha256(a.state_dict())


def test_huge_finite_weights_are_recorded_as_their_normalised_mix(tmp_path):
    pa = save_checkpoint(tmp_path / "a.pt", make_tiny_net(1), {})
    pb = save_checkpoint(tmp_path / "b.pt", make_tiny_net(2), {})
    _, meta = average_checkpoints([pa, pb], [1e308, 1e308])  # their sum overflows to inf
    assert meta["lineage"][-1]["weights"] == [0.5, 0.5]


def test_average_refuses_one_file_other_architectures_and_bad_weights(tmp_path):
    pa = save_checkpoint(tmp_path / "a.pt", make_tiny_net(1), {})
    pb = save_checkpoint(tmp_path / "b.pt", make_tiny_net(1, dec_blocks=2), {})
    with pytest.raises(CheckpointError, match="at least two"):
        average_checkpoints([pa])
    with pytest.raises(CheckpointError, match=r"model configs differ in \{'dec_blocks'"):
        average_checkpoints([pa, pb])
    with pytest.raises(ValueError, match="non-negative"):
        average_checkpoints([pa, pa], [1.0, -1.0])
    with pytest.raises(CheckpointError, match="no checkpoint file"):
        average_checkpoints([pa, tmp_path / "missing.pt"])


def test_graft_copies_only_the_cin_and_records_the_sha256_of_what_it_copied(tmp_path):
    parts, donor = make_tiny_net(1), make_tiny_net(2)
    pp = save_checkpoint(tmp_path / "p.pt", parts, _meta([{"phase": 3, "run": "a", "tasks": 30}]))
    pd = save_checkpoint(tmp_path / "d.pt", donor, _meta([{"phase": 3, "run": "refit", "tasks": 9}]))
    net, meta = graft_cin(pp, pd, note="why")
    for key, value in net.state_dict().items():
        source = donor if key.startswith("cin.") else parts
        assert torch.equal(value, source.state_dict()[key]), key
    last = meta["lineage"][-1]
    assert last["cin_sha256"] == weights_sha256(donor.cin.state_dict())
    assert last["sources"] == [str(pp), str(pd)] and last["what"] == "why" and not net.training
    with pytest.raises(CheckpointError, match="model configs differ"):
        graft_cin(pp, save_checkpoint(tmp_path / "o.pt", make_tiny_net(1, n_cls=1), {}))


def test_lineage_never_imports_ray_mlflow_or_the_pipeline():
    code = ("import sys, model.lineage\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('ray', 'mlflow', 'pipeline'))\n"
            "assert not bad, bad\n")
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
