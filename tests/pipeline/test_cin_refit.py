"""pipeline.cin_refit: records as Ray tasks kept for reruns, a checkpoint that differs from its parent in CIN
only, its lineage, MLflow, and the refusals."""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest
import torch

from model.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from model.cin_refit import CardinalityRecords
from pipeline.cin_refit import (ONE_MODE, PRIOR, RefitConfig, _chunk_records, _recorded_chunks, nuisance_config,
                                 refit_cin)
from pipeline.config import seeds_used
from tests.job_scripts import load_job
from tests.model.conftest import make_tiny_net


def _cfg(checkpoint, out, tracking_uri, **kw) -> RefitConfig:
    base = dict(tasks=9, val_tasks=3, chunk_size=4, epochs=3, lr=1e-3, n_rows=(50, 70), n_features=(2, 6),
                num_workers=2, tracking_uri=tracking_uri, run_seed=300, one_mode_tasks=0, one_mode_val_tasks=0)
    return RefitConfig(checkpoint=checkpoint, out_dir=str(out), **{**base, **kw})


@pytest.mark.slow
def test_refit_changes_only_cin_records_lineage_and_mlflow_and_reuses_records(ray_local, tmp_path, tracking_uri):
    parent = save_checkpoint(tmp_path / "parent.pt", make_tiny_net(5),
                             {"lineage": [{"phase": 1, "run": "pre", "tasks": 100, "seed": 7}],
                              "total_tasks_seen": 100, "step": 50, "tasks_seen": 100, "mlflow_run_id": "pre-run"})
    out = tmp_path / "refit"
    summary = refit_cin(_cfg(str(parent), out, tracking_uri))
    net, meta = load_checkpoint(out / "model.pt")
    old, _ = load_checkpoint(parent)
    changed = {k for k, v in net.state_dict().items() if not torch.equal(v, old.state_dict()[k])}
    assert changed and all(k.startswith("cin.") for k in changed)
    assert [p["run"] for p in meta["lineage"]] == ["pre", "refit"]
    assert meta["lineage"][-1]["seed"] == 300 and meta["total_tasks_seen"] == 109
    # the parent's session fields are not this checkpoint's
    assert meta["step"] == 0 and meta["tasks_seen"] == 9 and "mlflow_run_id" not in meta
    records = sorted((out / "records").glob("chunk-*.npz"))
    assert len(records) == 3  # 9 tables in chunks of 4
    seeds = np.concatenate([np.load(f)["seeds"] for f in records])
    assert list(seeds) == [300 * 2**40 + i for i in range(9)]
    assert json.loads((out / "summary.json").read_text())["best_epoch"] == summary["best_epoch"]
    assert len((out / "history.jsonl").read_text().splitlines()) == 3
    runs = mlflow.search_runs(experiment_names=["tabclustpfn-cin-refit"])
    assert len(runs) == 1 and "metrics.held_out_after_cross_entropy" in runs.columns

    # a rerun with other fit settings reuses the records (same files, untouched) and fits again
    stamps = [f.stat().st_mtime_ns for f in records]
    again = refit_cin(_cfg(str(parent), out, tracking_uri, epochs=1))
    assert [f.stat().st_mtime_ns for f in records] == stamps and again["best_epoch"] == 1
    # records of other settings are refused, not mixed in
    with pytest.raises(ValueError, match="other settings"):
        refit_cin(_cfg(str(parent), out, tracking_uri, n_estimators=2))


@pytest.mark.slow
def test_one_mode_tables_are_recorded_beside_the_priors_fitted_on_and_reported(ray_local, tmp_path, tracking_uri,
                                                                                tiny_checkpoint):
    out = tmp_path / "refit"
    summary = refit_cin(_cfg(tiny_checkpoint, out, tracking_uri, tasks=6, val_tasks=2, one_mode_tasks=5,
                             one_mode_val_tasks=2, run_seed=301))
    one_files = sorted((out / "records").glob("one-mode-*.npz"))
    assert [f.name for f in one_files] == ["one-mode-00000.npz", "one-mode-00001.npz"]  # 5 tables in chunks of 4
    one = CardinalityRecords.concat([CardinalityRecords.load(f) for f in one_files])
    assert list(one.seeds) == [301 * 2**40 + i for i in range(5)]
    assert set(one.n_clusters) == {2} and not one.is_gmm.any()
    assert len(sorted((out / "records").glob("chunk-*.npz"))) == 2  # the prior's 6 tables, as without them
    assert summary["one_mode"]["held_out"] == 2 and summary["one_mode"]["tables"] == 5
    assert set(summary["one_mode"]["held_out_after"]) == set(summary["held_out_after"])
    _, meta = load_checkpoint(out / "model.pt")
    assert meta["lineage"][-1]["tasks"] == 11 and "3 one-mode tables" in meta["lineage"][-1]["what"]
    assert meta["lineage"][-1]["cin_refit"]["one_mode"]["held_out"] == 2
    runs = mlflow.search_runs(experiment_names=["tabclustpfn-cin-refit"])
    assert "metrics.one_mode_held_out_after_cross_entropy" in runs.columns
    assert json.loads((out / "records" / "one-mode-manifest.json").read_text()) == {"one_mode_version": 1}
    # the records serve a rerun without the one-mode tables, and one with them: nothing is computed again
    files = sorted((out / "records").glob("*.npz"))
    stamps = [f.stat().st_mtime_ns for f in files]
    again = refit_cin(_cfg(tiny_checkpoint, out, tracking_uri, tasks=6, val_tasks=2, run_seed=301, epochs=1))
    assert "one_mode" not in again and again["best_epoch"] == 1
    again = refit_cin(_cfg(tiny_checkpoint, out, tracking_uri, tasks=6, val_tasks=2, one_mode_tasks=5,
                           one_mode_val_tasks=0, run_seed=301, epochs=1))
    assert again["one_mode"] == {"tables": 5, "held_out": 0}
    assert sorted((out / "records").glob("*.npz")) == files and [f.stat().st_mtime_ns for f in files] == stamps
    # one-mode records of another generator version are refused; the prior's alone stay usable
    (out / "records" / "one-mode-manifest.json").write_text(json.dumps({"one_mode_version": 0}))
    with pytest.raises(ValueError, match="one_mode_version"):
        refit_cin(_cfg(tiny_checkpoint, out, tracking_uri, tasks=6, val_tasks=2, one_mode_tasks=5, run_seed=301))
    refit_cin(_cfg(tiny_checkpoint, out, tracking_uri, tasks=6, val_tasks=2, run_seed=301, epochs=1))


def test_chunk_records_draw_the_kind_of_table_asked_for(tiny_checkpoint):
    from pathlib import Path

    from priors import PriorConfig

    prior = PriorConfig(n_rows=(50, 60), n_features=(2, 5))
    blob = Path(tiny_checkpoint).read_bytes()
    one = _chunk_records(blob, [3, 4, 5], 2, prior, ONE_MODE)
    paper = _chunk_records(blob, [3, 4, 5], 2, prior, PRIOR)
    assert list(one.n_clusters) == [2, 2, 2] and list(one.seeds) == [3, 4, 5] and not one.is_gmm.any()
    assert not np.array_equal(one.fingerprints, paper.fingerprints)
    with pytest.raises(ValueError, match="unknown kind"):
        _chunk_records(blob, [3], 2, prior, "one_mode")


def test_one_mode_chunks_have_their_own_seeds_and_reuse(tmp_path, tiny_checkpoint):
    cfg = _cfg(tiny_checkpoint, tmp_path, None, tasks=9, one_mode_tasks=6, one_mode_val_tasks=2)
    assert cfg.n_chunks == 3 and cfg.n_one_mode_chunks == 2
    assert cfg.seeds(1, ONE_MODE) == [300 * 2**40 + 4, 300 * 2**40 + 5]  # chunks of 4: the last holds 2
    assert cfg.seeds(2, PRIOR) == [300 * 2**40 + 8]
    with pytest.raises(ValueError, match="unknown kind"):
        cfg.seeds(0, "onemode")
    files = [tmp_path / f"one-mode-{c:05d}.npz" for c in range(2)]
    for c, f in enumerate(files):
        _fake_chunk(cfg.seeds(c, ONE_MODE)).save(f)
    assert sorted(_recorded_chunks(cfg, files, ONE_MODE)) == [0, 1]
    more = _cfg(tiny_checkpoint, tmp_path, None, tasks=9, one_mode_tasks=8, one_mode_val_tasks=2)
    assert sorted(_recorded_chunks(more, files, ONE_MODE)) == [0]  # its second chunk now holds 4 tables


def test_refusals(tmp_path, tracking_uri, tiny_checkpoint):
    with pytest.raises(ValueError, match="val_tasks"):
        _cfg(tiny_checkpoint, tmp_path, tracking_uri, tasks=4, val_tasks=4)
    with pytest.raises(ValueError, match="run_seed"):
        _cfg(tiny_checkpoint, tmp_path, tracking_uri, run_seed=2**22)
    with pytest.raises(ValueError, match="chunk_size"):
        _cfg(tiny_checkpoint, tmp_path, tracking_uri, chunk_size=0)
    with pytest.raises(ValueError, match="n_rows"):
        _cfg(tiny_checkpoint, tmp_path, tracking_uri, n_rows=(10, 20))
    with pytest.raises(ValueError, match="one_mode_val_tasks"):
        _cfg(tiny_checkpoint, tmp_path, tracking_uri, one_mode_tasks=3, one_mode_val_tasks=3)
    with pytest.raises(ValueError, match="one_mode_val_tasks needs one_mode_tasks"):
        _cfg(tiny_checkpoint, tmp_path, tracking_uri, one_mode_val_tasks=1)
    with pytest.raises(ValueError, match="one_mode_tasks must be a non-negative integer"):
        _cfg(tiny_checkpoint, tmp_path, tracking_uri, one_mode_tasks=-1)
    with pytest.raises(ValueError, match="at most 64 columns"):
        refit_cin(_cfg(tiny_checkpoint, tmp_path / "x", tracking_uri, n_features=(2, 65)))
    small_k = save_checkpoint(tmp_path / "k5.pt", make_tiny_net(1, k_max=5), {})
    with pytest.raises(ValueError, match=r"up to K = 10 clusters.*K = 2\.\.5"):  # before any table is computed
        refit_cin(_cfg(str(small_k), tmp_path / "x", tracking_uri))
    used = save_checkpoint(tmp_path / "used.pt", make_tiny_net(1), {"lineage": [{"phase": 1, "seed": 300}]})
    with pytest.raises(ValueError, match="run_seed 300 trained"):
        refit_cin(_cfg(str(used), tmp_path / "x", tracking_uri))
    assert not (tmp_path / "x").exists()


def test_job_reports_unusable_input_with_exit_status_1(tmp_path, capsys):
    job = load_job("refit_cin")
    assert job.main(["--checkpoint", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "o")]) == 1
    assert "missing.pt" in capsys.readouterr().err
    assert job.main(["--tasks", "5", "--val-tasks", "5", "--out", str(tmp_path / "o")]) == 1
    assert "val_tasks" in capsys.readouterr().err
    assert job.main(["--one-mode-tasks", "3", "--one-mode-val-tasks", "3", "--out", str(tmp_path / "o")]) == 1
    assert "one_mode_val_tasks (3) must be smaller" in capsys.readouterr().err
    # --one-mode-tasks 0 alone refits on the prior alone: its held-out count follows
    assert job.one_mode_val_tasks(job.parse_args(["--one-mode-tasks", "0"])) == 0
    assert job.one_mode_val_tasks(job.parse_args([])) == RefitConfig("", "").one_mode_val_tasks > 0
    assert job.one_mode_val_tasks(job.parse_args(["--one-mode-val-tasks", "7"])) == 7
    # the shipped weights record the seeds that trained them: one of them is refused
    shipped = read_checkpoint(job.default_checkpoint_path())["metadata"]
    seed = min(seeds_used(shipped))
    assert job.main(["--run-seed", str(seed), "--out", str(tmp_path / "o")]) == 1
    assert f"run_seed {seed} trained" in capsys.readouterr().err


def _fake_chunk(seeds: list[int]) -> CardinalityRecords:
    t = len(seeds)
    return CardinalityRecords(np.zeros((t, 2, 5), np.float32), np.full(t, 3), np.zeros((t, 9, 2, 9)),
                              np.zeros((t, 9)), np.zeros(t, bool), np.array(seeds))


def test_a_rerun_recomputes_chunks_of_another_length_and_unreadable_ones(tmp_path, tiny_checkpoint):
    first = _cfg(tiny_checkpoint, tmp_path, None, tasks=9)  # chunks of 4, 4 and 1 tables
    files = [tmp_path / f"chunk-{c:05d}.npz" for c in range(3)]
    for c, f in enumerate(files):
        _fake_chunk(first.seeds(c)).save(f)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f.name for f in files]  # no temporary file left
    assert sorted(_recorded_chunks(first, files)) == [0, 1, 2]
    more = _cfg(tiny_checkpoint, tmp_path, None, tasks=12)  # same manifest, but chunk 2 now has 4 tables
    assert more.manifest("x") == first.manifest("x") and sorted(_recorded_chunks(more, files)) == [0, 1]
    files[1].write_bytes(files[1].read_bytes()[:100])  # a write cut short
    assert sorted(_recorded_chunks(first, files)) == [0, 2]


def test_nuisance_reaches_the_prior_tables_the_manifest_and_the_job(tmp_path, tiny_checkpoint, capsys):
    from pathlib import Path

    from priors import sample_dataset
    from priors.config import NuisanceConfig

    noisy = _cfg(tiny_checkpoint, tmp_path, None, nuisance=NuisanceConfig(p_noise_features=1.0, min_informative=1,
                                                                           p_discrete=1.0))
    plain = _cfg(tiny_checkpoint, tmp_path, None)
    assert "nuisance" not in plain.manifest("sha")  # the paper's prior: manifests as before
    assert noisy.manifest("sha")["nuisance"] == {"p_noise_features": 1.0, "min_informative": 1, "p_discrete": 1.0}
    seeds = noisy.seeds(0)
    drawn = [sample_dataset(s, config=noisy.prior()) for s in seeds]
    assert any(t.meta["noise_columns"] for t in drawn) and any(t.meta["discrete_columns"] for t in drawn)
    blob = Path(tiny_checkpoint).read_bytes()
    a, b = (_chunk_records(blob, seeds, 2, c.prior(), PRIOR) for c in (noisy, plain))
    assert not np.array_equal(a.fingerprints, b.fingerprints)  # the records are of the nuisance tables
    job = load_job("refit_cin")
    args = job.parse_args(["--nuisance", "p_discrete=0.3", "discrete_levels=[2,5]"])
    assert nuisance_config(args.nuisance) == NuisanceConfig(p_discrete=0.3, discrete_levels=(2, 5))
    assert job.main(["--nuisance", "p_bogus=1", "--out", str(tmp_path / "o")]) == 1
    assert "--nuisance takes KEY=VALUE with KEY one of" in capsys.readouterr().err
    assert job.main(["--nuisance", "p_discrete=2", "--out", str(tmp_path / "o")]) == 1
    assert "p_discrete must be a probability" in capsys.readouterr().err
