"""The MLflow side of a sweep: its record (``sweep.json``) and parent run, one child run per trial, the step
times read back from a child run, and the child runs a sweep leaves RUNNING closed at its end.

A sweep is one parent run in its experiment (default ``tabclustpfn-ablations``); each trial is a child run tagged
with the parent run and its Tune trial id, which a rerun trial uses to reopen its child run instead of opening another.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping

import mlflow
import pandas as pd
from mlflow.tracking import MlflowClient

from pipeline.config import TrainConfig, config_to_dict
from pipeline.pretrain import absolute_tracking_uri
from pipeline.tracking import setup_tracking
from tune.config import SWEEP_FILE, SweepConfig, SweepOptions, sweep_from_dict, sweep_to_dict
from tune.spaces import Study


def open_parent_run(sweep: SweepConfig | None, options: SweepOptions,
                    sweep_dir: Path) -> tuple[SweepConfig, str, str, str]:
    """Create (or on resume, reopen) the sweep's record and MLflow parent run -> (sweep, uri, experiment, run)."""
    record_path = sweep_dir / SWEEP_FILE
    if options.resume:
        if not record_path.is_file():
            raise FileNotFoundError(f"cannot resume: no {SWEEP_FILE} in {sweep_dir}; check --storage-path and --name")
        saved = json.loads(record_path.read_text())
        sweep = sweep_from_dict(saved["sweep"])
        uri = absolute_tracking_uri(options.tracking_uri or saved["tracking_uri"])
        exp_id = setup_tracking(uri, saved["experiment"])
        mlflow.start_run(run_id=saved["parent_run_id"])
        mlflow.set_tag("resumed_at", datetime.now().isoformat(timespec="seconds"))
        return sweep, uri, exp_id, saved["parent_run_id"]
    if sweep is None:
        raise ValueError("a new sweep needs a SweepConfig")
    if record_path.exists():
        raise FileExistsError(f"sweep {sweep_dir.name!r} already exists in {sweep_dir.parent}: pass --resume to "
                              "continue it or choose another --name")
    exp_id = setup_tracking(options.tracking_uri, options.experiment)
    uri = absolute_tracking_uri(mlflow.get_tracking_uri())
    mlflow.set_tracking_uri(uri)
    run = mlflow.start_run(run_name=f"sweep {sweep_dir.name}")
    mlflow.log_params({"study": sweep.study, "budget_steps": sweep.budget_steps, "num_samples": sweep.num_samples,
                       "scheduler": sweep.scheduler, "eval_tasks": sweep.eval_tasks, "real": sweep.real})
    mlflow.log_dict(config_to_dict(sweep.base), "base_config.json")
    mlflow.set_tags({"sweep": sweep_dir.name, "study": sweep.study, "sweep_dir": str(sweep_dir)})
    sweep_dir.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps({"parent_run_id": run.info.run_id, "tracking_uri": uri,
                                       "experiment": options.experiment, "sweep": sweep_to_dict(sweep)}, indent=1))
    return sweep, uri, exp_id, run.info.run_id


def open_child_run(overrides: Mapping[str, Any], cfg: TrainConfig, study: Study, *, tracking_uri: str,
                   experiment_id: str, parent_run_id: str, trial_id: str) -> str:
    """The trial's MLflow child run: reopened when a rerun trial already has one, else created with Tune's
    ``setup_mlflow`` (tagged with the parent run and the trial id, which the lookup uses)."""
    client = MlflowClient(tracking_uri)
    found = client.search_runs([experiment_id], filter_string=f"tags.trial_id = '{trial_id}' and "
                               f"tags.`mlflow.parentRunId` = '{parent_run_id}'")
    if found:
        client.update_run(found[0].info.run_id, status="RUNNING")
        return found[0].info.run_id
    from ray.air.integrations.mlflow import setup_mlflow

    tags = {"mlflow.parentRunId": parent_run_id, "study": study.name, "trial_id": trial_id,
            "variant": study.variant(overrides)}
    ml = setup_mlflow(dict(overrides), tracking_uri=tracking_uri, experiment_id=experiment_id,
                      run_name=f"{study.variant(overrides)} [{trial_id}]", tags=tags)
    ml.log_dict(config_to_dict(cfg), "train_config.json")
    return ml.active_run().info.run_id


def end_child_run(tracking_uri: str, run_id: str, status: str) -> None:
    """End a trial's child run: the run ``setup_mlflow`` made active in this process, else through the client."""
    if mlflow.active_run() is not None:
        mlflow.end_run(status=status)
    else:
        MlflowClient(tracking_uri).set_terminated(run_id, status=status)


def close_child_runs(client: MlflowClient, experiment_id: str, parent_run_id: str) -> None:
    """Child runs of the sweep still RUNNING once Tune is done are marked KILLED: trials stopped early or killed,
    and those of trials a resumed Tune no longer knows (its state was older than they were, or was lost)."""
    running = client.search_runs([experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent_run_id}' "
                                 "and attributes.status = 'RUNNING'")
    for run in running:
        client.set_terminated(run.info.run_id, status="KILLED")


def median_step_ms(client: MlflowClient, run_id: str) -> tuple[float, float]:
    """Median compute time per step (step time minus data wait) and median wall time per step, in ms.

    The first step is left out when there are others (it includes the first forward's start-up costs).
    """
    times = {m.step: m.value for m in client.get_metric_history(run_id, "step_time_s")}
    waits = {m.step: m.value for m in client.get_metric_history(run_id, "data_wait_fraction")}
    steps = sorted(times)[1:] if len(times) > 1 else sorted(times)
    if not steps:
        return math.nan, math.nan
    wall = pd.Series([times[s] for s in steps])
    compute = pd.Series([times[s] * (1.0 - waits.get(s, 0.0)) for s in steps])
    return 1000 * float(compute.median()), 1000 * float(wall.median())
