"""jobs/lineage.py: a checkpoint's lineage as a table, averaged runs as numbered branches, refusals."""

from __future__ import annotations

from model.checkpoint import save_checkpoint, weights_sha256
from tests.job_scripts import load_job
from tests.model.conftest import make_tiny_net

LINEAGE = [
    {"phase": 1, "run": "gpu", "steps": 10, "tasks": 1280, "wall_s": 500, "device": "H100", "what": "from | scratch"},
    {"phase": 2, "run": "average", "steps": 0, "tasks": 0, "wall_s": 0, "device": "none", "what": "mean",
     "branches": [[{"phase": 2, "run": "twin-a", "tasks": 16, "seed": 5}],
                  [{"phase": 2, "run": "soup", "tasks": 0,
                    "branches": [[{"run": "x", "tasks": 1}], [{"run": "y", "tasks": 2}]]},
                   {"phase": 3, "run": "refit", "tasks": 7, "wall_s": 1200}]]},
]


def test_lineage_rows_number_the_branches_under_their_phase():
    job = load_job("lineage")
    rows = list(job.rows(LINEAGE))
    assert [(r["phase"], r["run"]) for r in rows] == [
        ("1", "gpu"), ("2", "average"), ("2.1", "twin-a"), ("2.2a", "soup"), ("2.2a.1", "x"), ("2.2a.2", "y"),
        ("2.2b", "refit")]
    assert rows[0]["tasks"] == "1,280" and rows[0]["wall"] == "500 s" and rows[0]["what"] == "from / scratch"
    assert rows[2]["seed"] == "5" and rows[6]["wall"] == "20 min" and rows[1]["wall"] == "-"


def test_lineage_job_prints_the_table_with_the_weights_sha256(tmp_path, capsys):
    job = load_job("lineage")
    net = make_tiny_net(1)
    path = save_checkpoint(tmp_path / "model.pt", net, {"lineage": LINEAGE, "total_tasks_seen": 1305})
    assert job.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert f"weights sha256 `{weights_sha256(net.state_dict())}`" in out and "1,305 tasks" in out
    assert "| 2.2a.1 | x |" in out and out.count("\n| ") == 1 + 7  # the header and seven phases

    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    assert job.main([str(tmp_path / "bad.pt")]) == 1
    assert "error:" in capsys.readouterr().err
