"""jobs/average_checkpoints.py: a soup of two runs from one parent, with its lineage, and refusals."""

from __future__ import annotations

import torch

from model.checkpoint import load_checkpoint, save_checkpoint
from pipeline.budget import averaged_metadata
from tests.job_scripts import load_job
from tests.model.conftest import make_tiny_net


def _job():
    return load_job("average_checkpoints")


def _meta(branch: list[dict]) -> dict:
    parent = [{"phase": 1, "run": "gpu", "tasks": 1000}, {"phase": 2, "run": "cpu", "tasks": 100}]
    lineage = parent + branch
    return {"step": 5, "tasks_seen": branch[-1]["tasks"], "lineage": lineage, "hardware": "cpu",
            "total_tasks_seen": sum(p["tasks"] for p in lineage), "train_config": {"seed": 1}}


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


def test_job_writes_the_average_and_exits_1_on_a_mismatch(tmp_path, capsys):
    job = _job()
    a, b = make_tiny_net(1), make_tiny_net(2)
    pa = save_checkpoint(tmp_path / "a.pt", a, _meta([{"phase": 3, "run": "a", "tasks": 30}]))
    pb = save_checkpoint(tmp_path / "b.pt", b, _meta([{"phase": 3, "run": "b", "tasks": 50}]))
    out = tmp_path / "soup" / "model.pt"
    assert job.main([str(pa), str(pb), "--out", str(out)]) == 0
    net, meta = load_checkpoint(out)
    key = next(iter(a.state_dict()))
    torch.testing.assert_close(net.state_dict()[key], (a.state_dict()[key] + b.state_dict()[key]) / 2)
    assert meta["lineage"][-1]["run"] == "average" and meta["total_tasks_seen"] == 1180
    other = save_checkpoint(tmp_path / "c.pt", make_tiny_net(1, n_cls=1), {})
    assert job.main([str(pa), str(other), "--out", str(tmp_path / "x.pt")]) == 1
    assert "model configs differ" in capsys.readouterr().err and not (tmp_path / "x.pt").exists()


def test_an_infinite_or_nan_weight_is_refused_instead_of_writing_a_nan_model(tmp_path, capsys):
    job = _job()
    pa = save_checkpoint(tmp_path / "a.pt", make_tiny_net(1), {})
    pb = save_checkpoint(tmp_path / "b.pt", make_tiny_net(2), {})
    for weights in (["inf", "1"], ["nan", "1"], ["0", "0"]):
        assert job.main([str(pa), str(pb), "--weights", *weights, "--out", str(tmp_path / "x.pt")]) == 1
        assert "finite non-negative" in capsys.readouterr().err and not (tmp_path / "x.pt").exists()
    assert job.main([str(pa), str(pb), "--weights", "1e308", "1e308", "--out", str(tmp_path / "y.pt")]) == 0
    net, _ = load_checkpoint(tmp_path / "y.pt")
    assert all(torch.isfinite(v).all() for v in net.state_dict().values() if v.is_floating_point())
