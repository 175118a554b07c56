"""Ablation sweeps: a Ray Tune function per trial that drives one ``TorchTrainer``, tracked as nested MLflow runs.

What a sweep computes and how many trials run at once are :mod:`tune.config` (which also names the sweep folder's
files); its MLflow parent and child runs are :mod:`tune.tracking`. This module runs the trials and writes the tables.

Each trial trains ``budget_steps`` steps of the base config with the study's overrides (the base schedule's
warm-ups are scaled by ``budget_steps / base.max_steps``), then scores the final network on the sweep's fixed
held-out synthetic tasks (and the real suite with ``real=True``). Train reports reach Tune through
``TuneReportCallback`` (so ASHA can stop trials early), all but the last: the trial reports that one itself,
with its scores, so a scheduler cannot stop a trial between its last step and its scoring.
``run_sweep(..., SweepOptions(resume=True, name=...))`` continues a sweep whose driver died with
``Tuner.restore``: finished trials are kept, unfinished and failed ones rerun, and a rerun trial resumes its
Ray Train run from its newest checkpoint and its MLflow child run. A driver killed while Tune was writing its
experiment state leaves that file torn; :mod:`tune.state` keeps a complete copy and puts it back before the restore.
The restore starts every failed trial at once, whatever the concurrency limit (ray-project/ray#40652), so each trial
trains and scores in one of the sweep's slots (:mod:`tune.slots`); ``max_concurrent_trials`` given on resume is
the new number of slots. A sweep whose trials do not fit the cluster together is refused, not left waiting.
:func:`rescore_sweep` scores a finished sweep's saved models again (the real suite added afterwards, or a metric
added since the sweep ran) and rewrites its tables, without training anything.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import mlflow
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from pipeline.config import TrainConfig, config_to_dict
from pipeline.pretrain import absolute_tracking_uri
from tune import report, slots
from tune.config import (SLOTS_DIR, SWEEP_FILE, TASK_SCORES_FILE, TRIAL_ACTOR_CPUS, TRIAL_FILE, TRIALS_DIR,
                         SweepConfig, SweepOptions, SweepResult, check_real_datasets, max_concurrent_trials,
                         scoring_kind, sweep_from_dict, sweep_to_dict, trial_config)
from tune.spaces import Study, to_tune
from tune.tracking import close_child_runs, end_child_run, median_step_ms, open_child_run, open_parent_run

logger = logging.getLogger(__name__)


def _score(cfg: TrainConfig, sweep: SweepConfig, net, checkpoint: Path) -> dict[str, float]:
    """Fixed synthetic tasks, then the real suite when asked. The per-task synthetic scores are written to
    ``task_scores.json`` beside ``checkpoint`` (what the study table's paired tests read)."""
    from tune.evaluate import evaluate_real, fixed_synthetic_tasks, score_tasks, summarize_synthetic

    t0 = time.perf_counter()
    tasks = fixed_synthetic_tasks(sweep.base.stream, sweep.eval_tasks, kind=scoring_kind(sweep))
    t1 = time.perf_counter()
    per_task = score_tasks(net, tasks)
    ms_per_task = 1000 * (time.perf_counter() - t1) / len(tasks)
    Path(checkpoint).with_name(TASK_SCORES_FILE).write_text(json.dumps(per_task))
    metrics = {**summarize_synthetic(per_task), "syn_ms_per_task": ms_per_task}
    if sweep.real:
        from pipeline.evaluation.suites import real_suite

        datasets = real_suite(sweep.benchmarks_dir, list(sweep.real_datasets) if sweep.real_datasets else None)
        metrics.update(evaluate_real(checkpoint, datasets, seed=cfg.seed))
    metrics["eval_s"] = time.perf_counter() - t0
    return metrics


def _intermediate_reports(final_step: int):
    """Tune's ``TuneReportCallback`` for the Train reports before ``final_step`` only."""
    from ray.tune.integration.ray_train import TuneReportCallback

    class IntermediateReports(TuneReportCallback):
        def after_report(self, run_context, metrics, checkpoint):
            if metrics and metrics[0].get("step", 0) < final_step:
                super().after_report(run_context, metrics, checkpoint)

    return IntermediateReports()


def _train_and_score(cfg: TrainConfig, sweep: SweepConfig, trial_dir: Path, tracking_uri: str,
                     run_id: str) -> tuple[dict[str, float], dict[str, float]]:
    """Fit one ``TorchTrainer`` (Train reports go on to Tune), save the final model, score it.

    Returns the last Train report and the trial's scores (also logged to the child run at the final step).
    """
    from model import TabClustNet
    from model.checkpoint import save_checkpoint
    from pipeline.pretrain import build_trainer
    from pipeline.train_state import load_train_state

    t0 = time.time()
    callbacks = [_intermediate_reports(cfg.max_steps)]
    result = build_trainer(cfg, trial_dir / "train", tracking_uri, run_id, callbacks=callbacks).fit()
    if result.error is not None:
        raise result.error
    with result.checkpoint.as_directory() as directory:
        state = load_train_state(directory)
    net = TabClustNet(cfg.model)
    net.load_state_dict(state["model"])
    train_wall = time.time() - t0
    model_path = save_checkpoint(trial_dir / "model.pt", net, {"train_config": config_to_dict(cfg),
                                                              "mlflow_run_id": run_id, "step": cfg.max_steps})
    client = MlflowClient(tracking_uri)
    ms_step, ms_wall = median_step_ms(client, run_id)
    metrics = {**_score(cfg, sweep, net, Path(model_path)), "ms_per_step": ms_step, "ms_per_step_wall": ms_wall,
               "train_wall_s": train_wall}
    metrics = {k: v for k, v in metrics.items() if math.isfinite(v)}
    now = int(time.time() * 1000)
    client.log_batch(run_id, metrics=[Metric(k, v, now, cfg.max_steps) for k, v in metrics.items()])
    client.set_tag(run_id, "model_checkpoint", str(model_path))
    last = {k: v for k, v in (result.metrics or {}).items() if isinstance(v, (int, float))}
    return last, metrics


def run_trial(config: dict[str, Any], *, sweep: dict[str, Any], sweep_dir: str, tracking_uri: str,
              experiment_id: str, parent_run_id: str, max_concurrent: int) -> None:
    """Ray Tune function trainable: one short pretraining (one ``TorchTrainer``) and its scores.

    ``config`` holds the trial's values of the study's keys; the keyword arguments come through
    ``tune.with_parameters`` and are the same for every trial of the sweep. ``trial.json`` counts the
    attempts (a trial rerun after a failure or a dead driver is one more). The trial trains and scores in one of
    the sweep's ``max_concurrent`` slots (:mod:`tune.slots`), waiting for one if Tune started more trials.
    """
    import ray.tune

    sweep_cfg = sweep_from_dict(sweep)
    study = sweep_cfg.study_spec()
    overrides = {k: config[k] for k in study.space}
    cfg = trial_config(sweep_cfg, overrides)
    trial_id = ray.tune.get_context().get_trial_id()
    trial_dir = Path(sweep_dir) / TRIALS_DIR / trial_id
    trial_dir.mkdir(parents=True, exist_ok=True)
    record_path = trial_dir / TRIAL_FILE
    record = json.loads(record_path.read_text()) if record_path.is_file() else {"trial_id": trial_id}
    if record.get("status") == "finished" and "report" in record:
        # Tune resumed from an experiment state saved before this trial finished (see tune.state): its work is
        # done, so it reports the saved scores again instead of training a second time.
        logger.info("trial %s finished before the driver died; reporting its saved scores", trial_id)
        ray.tune.report(record["report"])
        return
    with slots.slot(Path(sweep_dir) / SLOTS_DIR, max_concurrent, who=f"trial {trial_id}"):
        _attempt(record, record_path, overrides, cfg, sweep_cfg, study, trial_dir, tracking_uri=tracking_uri,
                 experiment_id=experiment_id, parent_run_id=parent_run_id, trial_id=trial_id)


def _attempt(record: dict[str, Any], record_path: Path, overrides: dict[str, Any], cfg: TrainConfig,
             sweep_cfg: SweepConfig, study: Study, trial_dir: Path, *, tracking_uri: str, experiment_id: str,
             parent_run_id: str, trial_id: str) -> None:
    """One attempt of a trial: its record and child run, training, scoring and the final Tune report."""
    import ray.tune

    record.update(attempts=record.get("attempts", 0) + 1, overrides=overrides, status="running")
    record_path.write_text(json.dumps(record, indent=1))
    run_id = open_child_run(overrides, cfg, study, tracking_uri=tracking_uri, experiment_id=experiment_id,
                             parent_run_id=parent_run_id, trial_id=trial_id)
    record["mlflow_run_id"] = run_id
    record_path.write_text(json.dumps(record, indent=1))
    logger.info("trial %s (%s), attempt %d", trial_id, study.variant(overrides), record["attempts"])
    try:
        last, metrics = _train_and_score(cfg, sweep_cfg, trial_dir, tracking_uri, run_id)
    except BaseException as exc:  # SystemExit: Tune stopped the trial (e.g. ASHA)
        stopped = isinstance(exc, SystemExit)
        record["status"] = "stopped" if stopped else "failed"
        record_path.write_text(json.dumps(record, indent=1))
        end_child_run(tracking_uri, run_id, "KILLED" if stopped else "FAILED")
        raise
    end_child_run(tracking_uri, run_id, "FINISHED")
    final = {**last, **metrics, "step": cfg.max_steps}
    record.update(status="finished", metrics=metrics, report=final)
    record_path.write_text(json.dumps(record, indent=1))
    ray.tune.report(final)


def _trial_records(grid, study: Study, sweep_dir: Path) -> list[dict[str, Any]]:
    """One record per Tune trial: status (finished/failed/stopped), overrides and metrics, from ``trial.json``
    where the trial got that far and from Tune's last result otherwise (e.g. a trial ASHA stopped)."""
    records = []
    for result in grid:
        metrics = dict(result.metrics or {})
        trial_id = metrics.get("trial_id") or Path(result.path).name.removeprefix("trial_")
        path = sweep_dir / TRIALS_DIR / str(trial_id) / TRIAL_FILE
        saved = json.loads(path.read_text()) if path.is_file() else {}
        overrides = {k: result.config.get(k) for k in study.space}
        if saved.get("status") == "finished":
            rec = {"status": "finished", "metrics": {**metrics, **saved["metrics"]}}
        elif result.error is not None:
            rec = {"status": "failed", "metrics": metrics, "error": str(result.error).splitlines()[0][:200]}
        else:
            rec = {"status": "stopped", "metrics": metrics}
        records.append({"trial_id": str(trial_id), "overrides": overrides, "mlflow_run_id": saved.get("mlflow_run_id"),
                        "attempts": saved.get("attempts", 0), **rec,
                        "task_scores": _task_scores(path.parent) if rec["status"] == "finished" else None})
    return records


def _task_scores(trial_dir: Path) -> list[dict[str, Any]] | None:
    """A trial's per-task synthetic scores (``task_scores.json``), or None for a trial scored before they were kept."""
    path = trial_dir / TASK_SCORES_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _one_record_per_trial(trials_dir: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Each trial's ``trial.json`` and record, one per trial configuration (its overrides, run seed included).

    A resume whose Tune state could not be restored (:func:`_build_tuner` then starts the trials again), or was
    restored from a copy older than some trial, runs a configuration again as a new Tune trial with a new id, and
    the old trial's folder stays: counting both would score the trial twice and weight it twice in the means and
    the paired tests. The finished record is kept, the newest (last written) of several, as in :func:`run_sweep`'s
    own table; the others are left out.
    """
    chosen: dict[str, tuple[tuple, Path, dict[str, Any]]] = {}
    for path in sorted(trials_dir.glob(f"*/{TRIAL_FILE}")):
        rec = json.loads(path.read_text())
        key = (json.dumps(rec["overrides"], sort_keys=True, default=str) if "overrides" in rec
               else f"trial {rec.get('trial_id', path.parent.name)}")
        candidate = ((rec.get("status") == "finished", path.stat().st_mtime_ns, rec.get("attempts", 0)), path, rec)
        if key not in chosen:
            chosen[key] = candidate
            continue
        kept, dropped = (candidate, chosen[key]) if candidate[0] > chosen[key][0] else (chosen[key], candidate)
        chosen[key] = kept
        logger.info("trial %s (%s) and trial %s (%s) ran the same configuration; counting trial %s only",
                    dropped[1].parent.name, dropped[2].get("status"), kept[1].parent.name, kept[2].get("status"),
                    kept[1].parent.name)
    return sorted(((path, rec) for _, path, rec in chosen.values()), key=lambda item: item[0])


def _trial_dirname(trial) -> str:
    """Tune's folder of a trial: ``trial_<trial id>`` (so a trial that never reported is still identified)."""
    return f"trial_{trial.trial_id}"


def _build_tuner(sweep: SweepConfig, study: Study, options: SweepOptions, sweep_dir: Path, trainable, limit: int):
    """A fresh ``Tuner`` running at most ``limit`` trials at once, or the restored one when resuming a sweep whose
    Tune state exists (its trials then keep to ``limit`` through the slots that ``run_trial`` takes)."""
    from ray import tune
    from ray.tune.search import BasicVariantGenerator

    from tune import state

    if options.resume and tune.Tuner.can_restore(str(sweep_dir)):
        try:
            for line in state.repair(sweep_dir):
                logger.warning("Tune state of sweep %s: %s", sweep_dir.name, line)
        except FileNotFoundError:
            logger.warning("sweep %s: Tune's experiment state was cut short when its driver died and no complete "
                           "copy exists (it died within its first steps); running its trials again", sweep_dir.name)
        else:
            logger.info("restoring the Tune experiment at %s (finished trials are kept)", sweep_dir)
            return tune.Tuner.restore(str(sweep_dir), trainable, resume_unfinished=True, restart_errored=True)
    probe = trial_config(sweep, {})
    scheduler = None
    if sweep.scheduler == "asha":
        every = probe.checkpoint_every
        scheduler = tune.schedulers.ASHAScheduler(time_attr="step", metric="val_ari", mode="max",
                                                  max_t=sweep.budget_steps, grace_period=every, reduction_factor=2)
    logger.info("sweep %s: study %s, %d-step trials, at most %d at once", sweep_dir.name, sweep.study,
                sweep.budget_steps, limit)
    return tune.Tuner(
        trainable, param_space=to_tune(study.space),
        # The random search draws from the sweep's seed, so the same command samples the same configurations.
        tune_config=tune.TuneConfig(num_samples=1 if study.is_grid else sweep.num_samples, scheduler=scheduler,
                                    search_alg=BasicVariantGenerator(max_concurrent=limit,
                                                                     random_state=sweep.base.seed),
                                    trial_dirname_creator=_trial_dirname),
        run_config=tune.RunConfig(name=sweep_dir.name, storage_path=str(sweep_dir.parent), verbose=options.verbose,
                                  failure_config=tune.FailureConfig(max_failures=0),
                                  callbacks=[state.StateSnapshots()]),
    )


def _table_header(sweep: SweepConfig, name: str, parent_id: str) -> list[str]:
    return [f"Budget: {sweep.budget_steps} steps of {sweep.base.global_batch} tasks per trial; model "
            f"col_dim={sweep.base.model.col_dim}, dec_blocks={sweep.base.model.dec_blocks}; "
            f"{sweep.num_samples} sample(s); scheduler {sweep.scheduler}.",
            f"Synthetic: {sweep.eval_tasks} fixed held-out prior tasks ({_scoring_set(sweep)}); real: "
            + (f"{len(sweep.real_datasets) if sweep.real_datasets else 22} UCI datasets." if sweep.real
               else "not evaluated (--real).") + f" Sweep `{name}`, MLflow parent run `{parent_id}`."]


def _scoring_set(sweep: SweepConfig) -> str:
    mechanisms = {"mix": "GMM+ZEUS", "gmm": "GMM", "zeus": "ZEUS"}[scoring_kind(sweep)]
    if sweep.regime is None:
        return mechanisms
    p = sweep.base.stream.prior
    return (f"{mechanisms} of the {sweep.regime} regime: N {p.n_rows[0]}-{p.n_rows[1]}, "
            f"D {p.n_features[0]}-{p.n_features[1]}, K {p.n_clusters[0]}-{p.n_clusters[1]}")


def run_sweep(sweep: SweepConfig | None, options: SweepOptions = SweepOptions()) -> SweepResult:
    """Run (or resume) an ablation sweep on the connected Ray cluster and write its table.

    Parameters
    ----------
    sweep : SweepConfig or None
        What to run; ignored (may be None) when ``options.resume`` (the saved one is used).
    options : SweepOptions
        Storage, sweep name, resume, tracking, table folder (default: the sweep folder), concurrency.

    Returns
    -------
    SweepResult
        Failed trials are rows with status ``failed`` (rerun them with ``resume=True``); nothing raises for them.
    """
    import ray
    from ray import tune

    if options.resume and not options.name:
        raise ValueError("resume needs the sweep's name (--name)")
    if not options.resume:
        if sweep is None:
            raise ValueError("a new sweep needs a SweepConfig (or resume=True and the name of a saved sweep)")
        if sweep.real and sweep.real_datasets:
            check_real_datasets(sweep.real_datasets, sweep.benchmarks_dir)  # before a trial trains for nothing
        max_concurrent_trials(sweep, options.max_concurrent_trials, ray.cluster_resources())  # before recording it
    name = options.name or f"{sweep.study}-{datetime.now():%Y%m%d-%H%M%S}"
    sweep_dir = Path(options.storage_path).resolve() / name
    sweep, uri, exp_id, parent_id = open_parent_run(sweep, options, sweep_dir)
    try:
        study = sweep.study_spec()
        limit = max_concurrent_trials(sweep, options.max_concurrent_trials, ray.cluster_resources())
        trainable = tune.with_resources(
            tune.with_parameters(run_trial, sweep=sweep_to_dict(sweep), sweep_dir=str(sweep_dir), tracking_uri=uri,
                                 experiment_id=exp_id, parent_run_id=parent_id, max_concurrent=limit),
            {"cpu": TRIAL_ACTOR_CPUS})
        grid = _build_tuner(sweep, study, options, sweep_dir, trainable, limit).fit()
        records = _trial_records(grid, study, sweep_dir)
        close_child_runs(MlflowClient(uri), exp_id, parent_id)
        trials = report.trial_frame(records, study)
        table = report.ablation_table(trials, study)
        files = report.write_tables(options.output or sweep_dir, study, trials, table,
                                    _table_header(sweep, name, parent_id), records=records,
                                    base_seed=sweep.base.seed)
        for path in files.values():
            mlflow.log_artifact(str(path), artifact_path="ablation")
        mlflow.log_metrics({"trials_finished": float((trials["status"] == "finished").sum()),
                            "trials_total": float(len(trials))})
        mlflow.end_run()
    except BaseException:
        mlflow.end_run(status="FAILED")
        raise
    return SweepResult(sweep_dir=sweep_dir, parent_run_id=parent_id, trials=trials, table=table, files=files)


def rescore_sweep(name: str, *, storage_path: str = "runs/sweeps", real: bool | None = None,
                  real_datasets: tuple[str, ...] | None = None, tracking_uri: str | None = None,
                  output: str | None = None, score: bool = True) -> SweepResult:
    """Score the finished trials of sweep ``name`` again from their saved ``model.pt`` and rewrite its tables
    (``score=False``: only rewrite the tables from the saved scores, e.g. after the report changed).

    Nothing is trained and Ray is not needed. Each finished trial's new scores replace its old ones in
    ``trial.json`` (training figures such as ``ms_per_step`` are kept) and are logged to its MLflow child run at
    its last step; the rewritten tables go to ``output`` (default: the sweep folder) and to the parent run's
    ``ablation`` artifacts. Trials that did not finish keep their status and are left out of the means, as in
    :func:`run_sweep`.

    Parameters
    ----------
    name : the sweep's folder under ``storage_path``.
    real : also score on the real suite (None: as the sweep was run).
    real_datasets : a subset of the real suite (None: as the sweep was run, or all 22).
    tracking_uri : MLflow store (default: the one the sweep recorded).

    Raises
    ------
    FileNotFoundError
        No sweep called ``name`` under ``storage_path``, or a finished trial whose ``model.pt`` is missing.
    """
    from model.checkpoint import load_checkpoint

    sweep_dir = Path(storage_path).resolve() / name
    record_path = sweep_dir / SWEEP_FILE
    if not record_path.is_file():
        raise FileNotFoundError(f"cannot rescore: no {SWEEP_FILE} in {sweep_dir}; check --storage-path and --name")
    saved = json.loads(record_path.read_text())
    sweep = sweep_from_dict(saved["sweep"])
    if real is not None or real_datasets is not None:
        sweep = dataclasses.replace(sweep, real=sweep.real if real is None else real,
                                    real_datasets=real_datasets or sweep.real_datasets)
    if score and sweep.real and sweep.real_datasets:
        check_real_datasets(sweep.real_datasets, sweep.benchmarks_dir)  # before the first trial is rescored
    study = sweep.study_spec()
    uri = absolute_tracking_uri(tracking_uri or saved["tracking_uri"])
    client = MlflowClient(uri)
    records = []
    for path, rec in _one_record_per_trial(sweep_dir / TRIALS_DIR):
        if rec.get("status") == "finished" and score:
            model_path = path.parent / "model.pt"
            if not model_path.is_file():
                raise FileNotFoundError(f"trial {rec['trial_id']} finished but its model {model_path} is missing")
            net, _ = load_checkpoint(model_path)
            cfg = trial_config(sweep, rec["overrides"])
            scores = {k: v for k, v in _score(cfg, sweep, net, model_path).items() if math.isfinite(v)}
            rec["metrics"] = {**rec.get("metrics", {}), **scores}
            path.write_text(json.dumps(rec, indent=1))
            if rec.get("mlflow_run_id"):
                now = int(time.time() * 1000)
                client.log_batch(rec["mlflow_run_id"],
                                 metrics=[Metric(k, v, now, cfg.max_steps) for k, v in scores.items()])
            logger.info("trial %s (%s) rescored: syn_ari %.4f, known-K %.4f", rec["trial_id"],
                        study.variant(rec["overrides"]), scores.get("syn_ari", math.nan),
                        scores.get("syn_ari_known_k", math.nan))
        records.append({"trial_id": rec["trial_id"], "overrides": rec.get("overrides", {}),
                        "status": rec.get("status", "failed"), "metrics": rec.get("metrics", {}),
                        "attempts": rec.get("attempts", 0), "mlflow_run_id": rec.get("mlflow_run_id"),
                        "task_scores": _task_scores(path.parent) if rec.get("status") == "finished" else None})
    if not records:
        raise FileNotFoundError(f"sweep {name!r} has no trial records under {sweep_dir / TRIALS_DIR}")
    trials = report.trial_frame(records, study)
    table = report.ablation_table(trials, study)
    parent_id = saved["parent_run_id"]
    files = report.write_tables(output or sweep_dir, study, trials, table, _table_header(sweep, name, parent_id),
                                records=records, base_seed=sweep.base.seed)
    for file in files.values():
        client.log_artifact(parent_id, str(file), artifact_path="ablation")
    client.set_tag(parent_id, "rescored_at", datetime.now().isoformat(timespec="seconds"))
    return SweepResult(sweep_dir=sweep_dir, parent_run_id=parent_id, trials=trials, table=table, files=files)
