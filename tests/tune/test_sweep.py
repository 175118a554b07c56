"""End to end on local Ray: smoke sweeps through Tune -> TorchTrainer, MLflow nesting, tables, resuming."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.shared_data import needs_real_suite
from tune.config import EXPERIMENT, TRIAL_FILE, TRIALS_DIR
from tune.state import SNAPSHOT_DIR, TORN_DIR

REPO = Path(__file__).resolve().parents[2]
BUDGET = 2  # steps per trial: the cost is Ray Train's start-up, not the steps


def _runs(tracking_uri: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    return client, parents, children


def _trial_records(sweep_dir: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (sweep_dir / TRIALS_DIR).glob(f"*/{TRIAL_FILE}")}


def _tune_last_results(sweep_dir: Path) -> list[dict]:
    """The last result each trial reported to Tune (Tune's own ``result.json`` in its trial folder)."""
    out = []
    for path in sweep_dir.glob("trial_*/result.json"):
        lines = path.read_text().strip().splitlines()
        out.append(json.loads(lines[-1]))
    return out


def _terminated_in_tune_state(folder: Path) -> int:
    """Trials Tune's saved experiment state in ``folder`` holds as TERMINATED (what ``Tuner.restore`` will keep)."""
    count = 0
    for path in glob.glob(str(folder / "experiment_state-*.json")):
        try:
            state = json.loads(Path(path).read_text())
        except (OSError, ValueError):  # being rewritten
            return 0
        count += sum(json.loads(t[0]).get("status") == "TERMINATED" for t in state["trial_data"])
    return count


def _second_trial_started(sweep_dir: Path) -> bool:
    """A trial other than the finished one has opened its MLflow child run (its TorchTrainer starts next)."""
    records = _trial_records(sweep_dir).values()
    return any(rec.get("mlflow_run_id") and rec["status"] == "running" for rec in records)


@pytest.mark.slow
def test_smoke_sweep_killed_after_one_trial_resumes_without_rerunning_it(ray_local, mlflow_server, tmp_path):
    """Two trials end to end through the CLI, tracked on a real MLflow server over HTTP. The driver is killed once
    the first trial has finished and the second has started, in the middle of writing Tune's experiment state
    (the file is left empty, as a kill during Tune's in-place rewrite leaves it); ``--resume`` reruns only the
    second (same MLflow child run), and the finished sweep is fully reported, tabulated and tracked: one parent
    run, a nested child run per trial with its metric history and its artifacts stored by the server."""
    tracking_uri = mlflow_server
    storage = tmp_path / "sweeps"
    sweep_dir = storage / "cut"
    address = ray_local.get_runtime_context().gcs_address
    common = ["--name", "cut", "--storage-path", str(storage), "--tracking-uri", tracking_uri, "--address", address,
              "--output", str(tmp_path / "tables")]
    env = dict(os.environ, PYTHONPATH=str(REPO), TUNE_GLOBAL_CHECKPOINT_S="0")  # Tune saves its state every step
    log = open(tmp_path / "first.log", "w")
    first = subprocess.Popen([sys.executable, "jobs/sweep.py", "--study", "coupling", "--smoke", "--budget-steps",
                              str(BUDGET), "--eval-tasks", "4", "--max-concurrent-trials", "1", *common],
                             cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 400
        while not (_terminated_in_tune_state(sweep_dir / SNAPSHOT_DIR) == 1 and _second_trial_started(sweep_dir)):
            assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            assert time.time() < deadline, "the first trial did not finish in time"
            time.sleep(0.2)
    finally:
        first.send_signal(signal.SIGKILL)  # the driver dies without any chance to clean up
        first.wait()
        log.close()
    before = _trial_records(sweep_dir)
    done_before = [t for t, rec in before.items() if rec["status"] == "finished"]
    assert len(done_before) == 1 and len(before) == 2, before
    cut = next(t for t in before if t not in done_before)  # killed while starting its TorchTrainer
    assert not (tmp_path / "tables").exists()
    (live,) = glob.glob(str(sweep_dir / "experiment_state-*.json"))
    Path(live).write_bytes(b"")  # torn: what ``Tuner.restore`` alone would answer by starting a new experiment

    resumed = subprocess.run([sys.executable, "jobs/sweep.py", "--resume", *common], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=500)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert (sweep_dir / SNAPSHOT_DIR / TORN_DIR / Path(live).name).read_bytes() == b""  # moved aside, kept

    after = _trial_records(sweep_dir)
    assert len(after) == 2 and all(rec["status"] == "finished" for rec in after.values())
    assert after[done_before[0]]["attempts"] == 1  # the finished trial was not run again
    assert after[done_before[0]]["metrics"] == before[done_before[0]]["metrics"]
    assert after[cut]["attempts"] == 2 and after[cut]["mlflow_run_id"] == before[cut]["mlflow_run_id"]
    reported = _tune_last_results(sweep_dir)
    assert len(reported) == 2
    for last in reported:  # each trial's final scores reached Tune with its last report
        assert last["step"] == BUDGET and 0 <= last["syn_nmi"] <= 1 and last["ms_per_step"] > 0

    table = pd.read_csv(tmp_path / "tables" / "ablation_coupling.csv")
    assert list(table["variant"]) == ["Additive", "Decoupled"] and list(table["n"]) == [1, 1]
    assert table["syn_ari"].notna().all() and table["paper_syn_ari"].tolist() == [0.8103, 0.8308]
    markdown = (tmp_path / "tables" / "ablation_coupling.md").read_text()
    assert "| Additive | 1 |" in markdown and "| Decoupled | 1 |" in markdown and "| Real ARI |" not in markdown
    assert markdown in resumed.stdout

    client, parents, children = _runs(tracking_uri)
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    parent_id = parents[0].info.run_id
    assert {a.path for a in client.list_artifacts(parent_id, "ablation")} == {
        "ablation/ablation_coupling.md", "ablation/ablation_coupling.csv", "ablation/trials_coupling.csv",
        "ablation/stats_coupling.csv"}
    for trial_id in after:  # each finished trial kept its per-task scores for the paired tests
        assert len(json.loads((sweep_dir / TRIALS_DIR / trial_id / "task_scores.json").read_text())) == 4
    assert len(children) == 2, "a rerun trial reopens its child run instead of adding one"
    for child in children:
        assert child.data.tags["mlflow.parentRunId"] == parent_id and child.info.status == "FINISHED"
        assert child.info.artifact_uri.startswith("mlflow-artifacts:")  # stored by the server, sent over HTTP
        assert child.data.params["objective.coupling"] == child.data.tags["variant"].lower()
        steps = [m.step for m in client.get_metric_history(child.info.run_id, "pin_loss")]
        assert sorted(steps) == list(range(1, BUDGET + 1))  # the Train worker logged each step once
        assert "syn_ari" in child.data.metrics and "ms_per_step" in child.data.metrics


@pytest.fixture()
def sweep_job():
    """jobs/sweep.py as a module (jobs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("sweep_job", REPO / "jobs" / "sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("argv, message", [
    (["--resume"], "--resume needs --name"),
    (["--smoke"], "--study is required"),
    (["--study", "prior", "--scheduler", "asha", "--smoke"], "prior study"),
    (["--study", "decoder", "--smoke", "--set", "model.decoder_kind=naive"], "unknown key"),
    (["--rescore"], "--rescore needs --name"),
    (["--rescore", "--name", "x", "--study", "prior"], "--rescore needs --name"),
    (["--study", "coupling", "--smoke", "--budget-steps", "0"], "budget_steps must be >= 1, got 0"),
    (["--study", "coupling", "--smoke", "--eval-tasks", "0"], "eval_tasks must be >= 1, got 0"),
    (["--study", "coupling", "--smoke", "--real-datasets", "iris"], "--real-datasets needs --real"),
    (["--resume", "--name", "x", "--study", "coupling"], "--resume continues sweep 'x' as it was started"),
    (["--resume", "--name", "x", "--real"], "use --rescore --real"),
    (["--resume", "--name", "x", "--set", "seed=3", "--budget-steps", "9"], "--budget-steps, --set"),
    (["--rescore", "--name", "x", "--smoke"], "--rescore scores sweep 'x' as it was trained"),
    (["--study", "coupling", "--smoke", "--max-concurrent-trials", "0"], "max_concurrent_trials must be >= 1, got 0"),
    (["--name", "x", "--tables"], "--tables goes with --rescore"),
])
def test_cli_refuses_bad_requests_before_starting_ray(sweep_job, argv, message, capsys, monkeypatch):
    monkeypatch.setattr(sweep_job, "init_ray", lambda address=None, **kw: pytest.fail("Ray started for a bad request"))
    assert sweep_job.main(argv) == 1
    assert message in capsys.readouterr().err


@pytest.fixture()
def real_suite_of_two(tmp_path, monkeypatch):
    """A benchmark folder whose real suite is iris and wine (empty files: only the names are listed)."""
    from pipeline.evaluation import suites

    (tmp_path / "bench" / "real").mkdir(parents=True)
    for name in ("iris", "wine"):
        (tmp_path / "bench" / "real" / f"{name}.parquet").write_bytes(b"")
    monkeypatch.setattr(suites, "benchmarks_dir", lambda override=None: Path(override or tmp_path / "bench"))
    return tmp_path / "bench"


@pytest.mark.parametrize("argv", [
    ["--study", "coupling", "--smoke", "--real", "--real-datasets", "iris,irsi"],
    ["--rescore", "--name", "x", "--real", "--real-datasets", "irsi"],
    ["--study", "coupling", "--smoke", "--real", "--real-datasets", ","],
])
def test_cli_refuses_unknown_real_datasets_before_anything_runs(sweep_job, real_suite_of_two, argv, capsys,
                                                                monkeypatch):
    for name in ("init_ray", "run_sweep", "rescore_sweep"):
        monkeypatch.setattr(sweep_job, name, lambda *a, _name=name, **kw: pytest.fail(f"{_name} ran"))
    with pytest.raises(SystemExit) as exit_info:
        sweep_job.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--real-datasets:" in err and "iris, wine" in err  # the valid names are listed
    assert ("'irsi'" in err and "'iris'" not in err) if "irsi" in argv[-1] else "no real dataset named" in err


def test_cli_refuses_the_whole_real_suite_when_its_folder_is_missing(sweep_job, tmp_path, capsys, monkeypatch):
    """--real without --real-datasets scores every table of ../shared/benchmarks/real: without that folder the
    job stops at its arguments, naming the folder, before Ray starts or a trial trains."""
    from pipeline.evaluation import suites

    monkeypatch.setattr(suites, "benchmarks_dir", lambda override=None: Path(override or tmp_path / "absent"))
    for name in ("init_ray", "run_sweep", "rescore_sweep"):
        monkeypatch.setattr(sweep_job, name, lambda *a, _name=name, **kw: pytest.fail(f"{_name} ran"))
    with pytest.raises(SystemExit) as exit_info:
        sweep_job.main(["--study", "coupling", "--smoke", "--real"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--real: real suite not found" in err and str(tmp_path / "absent" / "real") in err


def test_check_real_datasets_without_names_lists_the_whole_suite(real_suite_of_two):
    from tune.config import check_real_datasets

    assert check_real_datasets(None) == ("iris", "wine")
    with pytest.raises(ValueError, match="no real dataset named"):
        check_real_datasets(())


def test_cli_passes_known_real_datasets_on_as_names(sweep_job, real_suite_of_two, monkeypatch):
    seen = {}

    def fake_run_sweep(sweep, options):
        seen["datasets"] = sweep.real_datasets
        raise ValueError("stop here")

    monkeypatch.setattr(sweep_job, "init_ray", lambda address=None, **kw: None)
    monkeypatch.setattr(sweep_job, "run_sweep", fake_run_sweep)
    assert sweep_job.main(["--study", "coupling", "--smoke", "--real", "--real-datasets", "wine, iris"]) == 1
    assert seen["datasets"] == ("wine", "iris")


def test_a_sweep_with_an_unknown_real_dataset_is_refused_before_ray(real_suite_of_two, tmp_path, monkeypatch):
    import ray

    from pipeline.config import train_preset
    from tune.config import SweepConfig, SweepOptions
    from tune.driver import run_sweep

    monkeypatch.setattr(ray, "cluster_resources", lambda: pytest.fail("Ray asked before the datasets were checked"))
    sweep = SweepConfig(study="coupling", base=train_preset("tiny", smoke=True), budget_steps=2, real=True,
                        real_datasets=("iris", "nope"))
    with pytest.raises(ValueError, match=r"unknown real dataset\(s\) 'nope': .* has iris, wine"):
        run_sweep(sweep, SweepOptions(storage_path=str(tmp_path / "sweeps")))
    assert not (tmp_path / "sweeps").exists()  # nothing recorded


def test_cli_refuses_to_resume_a_sweep_that_does_not_exist(sweep_job, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweep_job, "init_ray", lambda address=None, **kw: False)
    assert sweep_job.main(["--resume", "--name", "nope", "--storage-path", str(tmp_path)]) == 1
    assert "cannot resume" in capsys.readouterr().err


def test_trial_records_tell_finished_failed_and_stopped_trials_apart(tmp_path):
    from types import SimpleNamespace

    from pipeline.config import train_preset
    from tune.driver import _trial_records
    from tune.spaces import study_space

    study = study_space("coupling", train_preset("tiny", smoke=True), 4)
    for trial_id, status in (("t1", "finished"), ("t2", "running")):
        (tmp_path / TRIALS_DIR / trial_id).mkdir(parents=True)
        (tmp_path / TRIALS_DIR / trial_id / TRIAL_FILE).write_text(json.dumps(
            {"status": status, "attempts": 1, "mlflow_run_id": f"run-{trial_id}", "metrics": {"syn_ari": 0.5}}))
    grid = [  # what Tune's ResultGrid yields: last reported metrics, config, error, trial folder
        SimpleNamespace(metrics={"trial_id": "t1", "step": 4}, config={"objective.coupling": "additive"}, error=None,
                        path=str(tmp_path / "trial_t1")),
        SimpleNamespace(metrics={"trial_id": "t2", "step": 2, "val_ari": 0.1}, error=None,
                        config={"objective.coupling": "decoupled"}, path=str(tmp_path / "trial_t2")),
        SimpleNamespace(metrics={}, config={"objective.coupling": "additive"}, error=RuntimeError("boom\nmore"),
                        path=str(tmp_path / "trial_t3")),
    ]
    records = {r["trial_id"]: r for r in _trial_records(grid, study, tmp_path)}
    assert records["t1"]["status"] == "finished" and records["t1"]["metrics"] == {"trial_id": "t1", "step": 4,
                                                                                 "syn_ari": 0.5}
    assert records["t2"]["status"] == "stopped" and records["t2"]["metrics"]["val_ari"] == 0.1
    assert records["t3"]["status"] == "failed" and records["t3"]["error"] == "boom"  # id from Tune's folder name
    assert records["t2"]["mlflow_run_id"] == "run-t2" and records["t3"]["mlflow_run_id"] is None


def _finished_sweep(tmp_path: Path, tiny_checkpoint: str, tracking_uri: str) -> tuple[Path, str, dict[str, str]]:
    """A sweep folder as run_sweep leaves it (two finished trials with models, one failed), without Ray:
    sweep.json, trial records with stale scores, an MLflow parent run and a child run per trial."""
    import shutil

    from mlflow.tracking import MlflowClient

    from pipeline.config import train_preset
    from tune.config import SWEEP_FILE, SweepConfig, sweep_to_dict

    sweep = SweepConfig(study="coupling", base=train_preset("tiny", smoke=True), budget_steps=4, eval_tasks=4)
    sweep_dir = tmp_path / "sweeps" / "old"
    client = MlflowClient(tracking_uri)
    exp = client.create_experiment(EXPERIMENT)
    parent = client.create_run(exp, run_name="sweep old").info.run_id
    client.set_terminated(parent)
    children = {}
    for trial_id, coupling, status in (("t1", "additive", "finished"), ("t2", "decoupled", "finished"),
                                       ("t3", "additive", "failed")):
        run = client.create_run(exp, tags={"mlflow.parentRunId": parent, "trial_id": trial_id}).info.run_id
        client.set_terminated(run)
        children[trial_id] = run
        folder = sweep_dir / TRIALS_DIR / trial_id
        folder.mkdir(parents=True)
        if status == "finished":
            shutil.copy(tiny_checkpoint, folder / "model.pt")
        (folder / TRIAL_FILE).write_text(json.dumps({
            "trial_id": trial_id, "status": status, "attempts": 1, "mlflow_run_id": run,
            "overrides": {"objective.coupling": coupling},
            "metrics": {"syn_ari": 9.0, "ms_per_step": 123.0} if status == "finished" else {}}))
    (sweep_dir / SWEEP_FILE).write_text(json.dumps({"parent_run_id": parent, "tracking_uri": tracking_uri,
                                                   "experiment": EXPERIMENT, "sweep": sweep_to_dict(sweep)}))
    return sweep_dir, parent, children


@needs_real_suite
def test_rescoring_a_sweep_replaces_its_scores_keeps_its_timings_and_rewrites_its_tables(tmp_path, tiny_checkpoint,
                                                                                       tracking_uri):
    from mlflow.tracking import MlflowClient

    from tune.driver import rescore_sweep

    sweep_dir, parent, children = _finished_sweep(tmp_path, tiny_checkpoint, tracking_uri)
    result = rescore_sweep("old", storage_path=str(tmp_path / "sweeps"), real=True, real_datasets=("iris",))
    records = _trial_records(sweep_dir)
    for trial_id in ("t1", "t2"):
        metrics = records[trial_id]["metrics"]
        assert metrics["syn_ari"] != 9.0 and -1 <= metrics["syn_ari"] <= 1  # the stale score was replaced
        assert metrics["ms_per_step"] == 123.0 and metrics["syn_tasks"] == 4  # training figures kept
        assert -1 <= metrics["syn_ari_known_k"] <= 1 and metrics["real_datasets"] == 1
        logged = MlflowClient(tracking_uri).get_run(children[trial_id]).data.metrics
        assert logged["syn_ari_known_k"] == pytest.approx(metrics["syn_ari_known_k"])
        assert logged["real_ari_known_k"] == pytest.approx(metrics["real_ari_known_k"])
    assert records["t3"] == {**records["t3"], "status": "failed", "metrics": {}}  # not rescored
    # the same tiny network in both trials: same scores, and the failed trial is not in the means
    assert list(result.table["n"]) == [1, 1]
    assert result.table["syn_ari_known_k"].nunique() == 1 and result.table["real_ari"].notna().all()
    markdown = (sweep_dir / "ablation_coupling.md").read_text()
    assert "| Syn ARI (known K) |" in markdown and "| Real ARI (known K) |" in markdown
    assert "real: 1 UCI datasets" in markdown
    client = MlflowClient(tracking_uri)
    assert {a.path for a in client.list_artifacts(parent, "ablation")} == {
        "ablation/ablation_coupling.md", "ablation/ablation_coupling.csv", "ablation/trials_coupling.csv",
        "ablation/stats_coupling.csv"}
    for trial_id in ("t1", "t2"):  # per-task scores kept for the paired tests, one per held-out task
        assert len(json.loads((sweep_dir / TRIALS_DIR / trial_id / "task_scores.json").read_text())) == 4
    assert "paired tests against the paper's choice (Decoupled)" in markdown
    assert "rescored_at" in client.get_run(parent).data.tags


def test_tables_only_rewrites_the_tables_from_the_saved_scores(tmp_path, tiny_checkpoint, tracking_uri):
    from tune.driver import rescore_sweep

    sweep_dir, _, _ = _finished_sweep(tmp_path, tiny_checkpoint, tracking_uri)
    result = rescore_sweep("old", storage_path=str(tmp_path / "sweeps"), score=False)
    assert _trial_records(sweep_dir)["t1"]["metrics"]["syn_ari"] == 9.0  # nothing scored
    assert list(result.table["syn_ari"]) == [9.0, 9.0] and (sweep_dir / "stats_coupling.csv").is_file()


def test_rescoring_counts_a_trial_run_again_under_a_new_id_once(tmp_path, tiny_checkpoint, tracking_uri):
    """A resume whose Tune state could not be restored (or was restored from a copy older than a trial) runs the
    same configuration again as a new Tune trial: the sweep folder then holds two records of one trial (here t1, and
    t3's failed attempt of the same configuration). Rescoring scores and counts the newest finished one only."""
    import os
    import shutil

    from tune.driver import rescore_sweep

    sweep_dir, _, _ = _finished_sweep(tmp_path, tiny_checkpoint, tracking_uri)
    old = json.loads((sweep_dir / TRIALS_DIR / "t1" / TRIAL_FILE).read_text())
    rerun = sweep_dir / TRIALS_DIR / "new_00000"
    shutil.copytree(sweep_dir / TRIALS_DIR / "t1", rerun)
    (rerun / TRIAL_FILE).write_text(json.dumps({**old, "trial_id": "new_00000", "mlflow_run_id": None,
                                                "metrics": {"syn_ari": 7.0, "ms_per_step": 99.0}}))
    stamp = (sweep_dir / TRIALS_DIR / "t1" / TRIAL_FILE).stat().st_mtime_ns
    os.utime(rerun / TRIAL_FILE, ns=(stamp + 10**9, stamp + 10**9))  # written after the old one

    tables = rescore_sweep("old", storage_path=str(tmp_path / "sweeps"), score=False)
    assert sorted(tables.trials["trial_id"]) == ["new_00000", "t2"]
    assert tables.table.set_index("variant")["n"].to_dict() == {"Additive": 1, "Decoupled": 1}
    assert tables.table.set_index("variant").loc["Additive", "syn_ari"] == 7.0  # the rerun's, not a mean of both
    assert list(pd.read_csv(sweep_dir / "stats_coupling.csv")["n"]) == [1, 1]

    rescored = rescore_sweep("old", storage_path=str(tmp_path / "sweeps"))
    records = _trial_records(sweep_dir)
    assert records["t1"]["metrics"]["syn_ari"] == 9.0  # the superseded record is not scored again
    assert records["new_00000"]["metrics"]["syn_ari"] != 7.0 and records["new_00000"]["metrics"]["ms_per_step"] == 99
    assert rescored.table.set_index("variant")["n"].to_dict() == {"Additive": 1, "Decoupled": 1}


def test_rescoring_refuses_a_finished_trial_without_its_model(tmp_path, tiny_checkpoint, tracking_uri):
    from tune.driver import rescore_sweep

    sweep_dir, _, _ = _finished_sweep(tmp_path, tiny_checkpoint, tracking_uri)
    (sweep_dir / TRIALS_DIR / "t2" / "model.pt").unlink()
    with pytest.raises(FileNotFoundError, match="t2 finished but its model"):
        rescore_sweep("old", storage_path=str(tmp_path / "sweeps"))
    with pytest.raises(FileNotFoundError, match="cannot rescore"):
        rescore_sweep("nope", storage_path=str(tmp_path / "sweeps"))


def test_rescoring_refuses_an_unknown_real_dataset_before_scoring_a_trial(tmp_path, tiny_checkpoint, tracking_uri,
                                                                          real_suite_of_two):
    from tune.driver import rescore_sweep

    sweep_dir, _, _ = _finished_sweep(tmp_path, tiny_checkpoint, tracking_uri)
    with pytest.raises(ValueError, match="unknown real dataset"):
        rescore_sweep("old", storage_path=str(tmp_path / "sweeps"), real=True, real_datasets=("nope",))
    assert _trial_records(sweep_dir)["t1"]["metrics"]["syn_ari"] == 9.0  # nothing scored


def test_child_runs_still_running_after_tune_are_closed_even_for_trials_tune_forgot(tracking_uri):
    """A resumed sweep whose Tune state predates a trial (or was lost) runs that variant as a new trial; the old
    trial's child run, left RUNNING by the dead driver, must not stay RUNNING under the finished parent."""
    from mlflow.tracking import MlflowClient

    from tune.tracking import close_child_runs

    client = MlflowClient(tracking_uri)
    exp = client.create_experiment(EXPERIMENT)
    parent, other_parent = (client.create_run(exp).info.run_id for _ in range(2))
    forgotten = client.create_run(exp, tags={"mlflow.parentRunId": parent, "trial_id": "old_00000"}).info.run_id
    done = client.create_run(exp, tags={"mlflow.parentRunId": parent, "trial_id": "new_00000"}).info.run_id
    client.set_terminated(done, status="FINISHED")
    elsewhere = client.create_run(exp, tags={"mlflow.parentRunId": other_parent}).info.run_id
    close_child_runs(client, exp, parent)
    status = {run: client.get_run(run).info.status for run in (forgotten, done, elsewhere, parent)}
    assert status == {forgotten: "KILLED", done: "FINISHED", elsewhere: "RUNNING", parent: "RUNNING"}


def test_a_new_sweep_without_a_config_is_refused_by_name(tmp_path):
    from tune.config import SweepOptions
    from tune.driver import run_sweep

    with pytest.raises(ValueError, match="a new sweep needs a SweepConfig"):
        run_sweep(None, SweepOptions(storage_path=str(tmp_path)))


def test_the_random_search_draws_the_same_configurations_from_the_same_seed(ray_local, tmp_path):
    """``--study hparams`` run twice samples the same learning rates, warm-ups and widths (the base's seed)."""
    import dataclasses

    from ray import tune

    from pipeline.config import train_preset
    from tune.config import TRIAL_ACTOR_CPUS, SweepConfig, SweepOptions
    from tune.driver import _build_tuner

    def trial(config):
        tune.report({"step": 1})

    def configs(name: str, seed: int) -> list:
        sweep = SweepConfig(study="hparams", base=dataclasses.replace(train_preset("tiny", smoke=True), seed=seed),
                            budget_steps=100, num_samples=3)
        options = SweepOptions(storage_path=str(tmp_path), name=name, verbose=0)
        grid = _build_tuner(sweep, sweep.study_spec(), options, tmp_path / name,
                            tune.with_resources(trial, {"cpu": TRIAL_ACTOR_CPUS}), 3).fit()
        return sorted(tuple(sorted(r.config.items())) for r in grid)

    first = configs("a", 0)
    assert len(set(first)) == 3 and configs("b", 0) == first


@pytest.mark.slow
def test_a_resumed_sweep_reruns_its_failed_trials_within_the_limit(ray_local, tmp_path):
    """Tune's restore puts every errored trial back at once, ignoring the concurrency limit (ray-project/ray#40652):
    four failed trials of a one-at-a-time sweep may all start together. The slot each trial takes before training
    (as ``run_trial`` does) keeps their training one at a time, and the trials waiting hold only TRIAL_ACTOR_CPUS.

    Asserted without clocks: each trial counts the trials training beside it (marker files) while it trains. When
    Tune starts the restored trials is upstream's scheduling and varies with load, so it is not asserted."""
    import dataclasses

    from ray import tune

    from pipeline.config import train_preset
    from tune import slots
    from tune.config import SLOTS_DIR, TRIAL_ACTOR_CPUS, SweepConfig, SweepOptions
    from tune.driver import _build_tuner

    sweep = SweepConfig(study="pin-loss", base=train_preset("tiny", smoke=True), budget_steps=2)  # 4 variants
    sweep_dir, fixed, training = tmp_path / "s", tmp_path / "fixed", tmp_path / "training"
    training.mkdir()

    def trial(config, max_concurrent):
        if not fixed.exists():
            raise RuntimeError("the first attempt fails")
        tid = tune.get_context().get_trial_id()
        with slots.slot(sweep_dir / SLOTS_DIR, max_concurrent, poll_s=0.1):
            (training / f"{tid}.now").touch()
            beside = set()
            for _ in range(20):  # 2 s training: any trial that enters meanwhile is seen, and sees this one
                beside |= {p.stem for p in training.glob("*.now")} - {tid}
                time.sleep(0.1)
            (training / f"{tid}.beside").write_text(",".join(sorted(beside)))
            (training / f"{tid}.now").unlink()
        tune.report({"step": 2})

    trainable = tune.with_resources(tune.with_parameters(trial, max_concurrent=1), {"cpu": TRIAL_ACTOR_CPUS})
    options = SweepOptions(storage_path=str(tmp_path), name="s", verbose=0)
    grid = _build_tuner(sweep, sweep.study_spec(), options, sweep_dir, trainable, 1).fit()
    assert [r.error is not None for r in grid] == [True] * 4
    fixed.touch()
    grid = _build_tuner(sweep, sweep.study_spec(), dataclasses.replace(options, resume=True), sweep_dir, trainable,
                        1).fit()
    assert [r.error for r in grid] == [None] * 4

    beside = {p.stem: p.read_text() for p in training.glob("*.beside")}
    assert len(beside) == 4  # every restored trial trained once
    assert beside == {tid: "" for tid in beside}  # and none while another did
