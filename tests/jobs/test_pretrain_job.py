"""jobs/pretrain.py: clean errors for bad overrides, and a run that logs its model without registering it."""

from __future__ import annotations

import dataclasses

from tests.job_scripts import load_job


def _job():
    return load_job("pretrain")


def test_a_wrong_type_override_exits_1_with_a_message_naming_the_key(tmp_path, capsys):
    job = _job()
    for override, key in (("optim.lr=abc", "optim.lr"), ("model=3", "model"), ("optim.lr=null", "optim.lr"),
                          ("stream.prior.n_rows=100", "stream.prior.n_rows")):
        assert job.main(["--local", "--smoke", "--storage-path", str(tmp_path), "--set", override]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and key in err and "Traceback" not in err


def test_an_empty_register_as_logs_the_model_without_registering_it(tmp_path, tracking_uri, capsys):
    from mlflow.tracking import MlflowClient

    job = _job()
    rc = job.main(["--local", "--smoke", "--max-steps", "1", "--set", "val_tasks=0", "--run-name", "r",
                   "--storage-path", str(tmp_path), "--tracking-uri", tracking_uri, "--register-as", ""])
    assert rc == 0 and (tmp_path / "r" / "model.pt").is_file()
    assert MlflowClient(tracking_uri).search_registered_models() == []


def test_regime_trains_on_the_regime_prior_and_a_resume_keeps_the_saved_prior(tmp_path, tracking_uri, capsys):
    from pipeline.pretrain import load_run_config
    from priors.regimes import regime_prior

    job = _job()
    rc = job.main(["--local", "--smoke", "--regime", "amortized", "--max-steps", "1", "--set", "val_tasks=0",
                   "--set", "stream.prior.n_rows=[60,80]", "--run-name", "r", "--storage-path", str(tmp_path),
                   "--tracking-uri", tracking_uri, "--register-as", ""])
    assert rc == 0
    cfg = load_run_config(str(tmp_path), "r")
    assert cfg.stream.kind == "gmm"  # --set applies after the regime: its N, the regime's everything else
    assert cfg.stream.prior == dataclasses.replace(regime_prior("amortized"), n_rows=(60, 80))
    assert job.main(["--local", "--resume", "r", "--regime", "amortized", "--storage-path", str(tmp_path)]) == 1
    assert "--regime" in capsys.readouterr().err


def test_a_run_records_its_lineage_phase_and_a_continuation_inherits_the_parents(tmp_path, tracking_uri):
    from model.checkpoint import read_checkpoint
    from pipeline.config import seeds_used

    job = _job()
    common = ["--local", "--smoke", "--set", "val_tasks=0", "--storage-path", str(tmp_path),
              "--tracking-uri", tracking_uri, "--register-as", ""]
    assert job.main([*common, "--max-steps", "2", "--seed", "5", "--run-name", "parent"]) == 0
    parent = read_checkpoint(tmp_path / "parent" / "model.pt")["metadata"]
    (phase,) = parent["lineage"]
    assert (phase["run"], phase["steps"], phase["tasks"], phase["seed"]) == ("parent", 2, 8, 5)
    assert "from scratch" in phase["what"] and parent["total_tasks_seen"] == 8

    assert job.main([*common, "--max-steps", "1", "--seed", "6", "--run-name", "child",
                     "--init-checkpoint", str(tmp_path / "parent" / "model.pt")]) == 0
    child = read_checkpoint(tmp_path / "child" / "model.pt")["metadata"]
    assert [p["run"] for p in child["lineage"]] == ["parent", "child"] and child["lineage"][0] == phase
    assert child["total_tasks_seen"] == 8 + 4 and "from model.pt" in child["lineage"][1]["what"]
    assert seeds_used(child) == {5, 6}  # a third run may not reuse either seed
