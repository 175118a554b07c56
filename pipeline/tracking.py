"""MLflow tracking defaults shared by every job: a local SQLite store unless a URI is given."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import mlflow

logger = logging.getLogger(__name__)

DEFAULT_TRACKING_URI = "sqlite:///mlruns.db"
DEFAULT_ARTIFACT_DIR = "mlartifacts"


def setup_tracking(tracking_uri: str | None = None, experiment: str = "tabclustpfn") -> str:
    """Point MLflow at ``tracking_uri`` (default: local SQLite) and select ``experiment``; return its id.

    With the default store, artifacts go to ``./mlartifacts`` next to ``mlruns.db``. ``MLFLOW_TRACKING_URI`` in
    the environment wins over the default but not over an explicit argument.
    """
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
    mlflow.set_tracking_uri(uri)
    found = mlflow.get_experiment_by_name(experiment)
    if found is not None:
        exp_id = found.experiment_id
    else:
        artifact_location = None
        if uri.startswith("sqlite:///"):
            db = Path(uri[len("sqlite:///"):]).resolve()
            artifact_location = (db.parent / DEFAULT_ARTIFACT_DIR).as_uri()
        exp_id = mlflow.create_experiment(experiment, artifact_location=artifact_location)
    mlflow.set_experiment(experiment_id=exp_id)
    logger.info("MLflow tracking at %s, experiment %r", uri, experiment)
    return exp_id


def log_budget_run(out_dir: str | Path, tracking_uri: str | None = None, run_name: str | None = None,
                   register_as: str | None = None) -> str:
    """Record a finished ``jobs/pretrain_budget.py`` output folder as one MLflow run; return its id.

    Budgeted runs train where MLflow may not be installed (a lent GPU machine); this logs them afterwards:
    the flattened training config as params, every line of ``history.jsonl`` as step metrics, the summary's
    scalars as tags, and ``model.pt``/``summary.json`` as artifacts (plus a registered pyfunc model with
    ``register_as``).
    """
    import json

    from mlflow.entities import Metric

    from pipeline.budget import HISTORY_FILE, MODEL_FILE, SUMMARY_FILE
    from pipeline.config import flatten

    out = Path(out_dir)
    missing = [f for f in (HISTORY_FILE, MODEL_FILE, SUMMARY_FILE) if not (out / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{out} is not a finished budgeted run: {missing} missing")
    summary = json.loads((out / SUMMARY_FILE).read_text())
    setup_tracking(tracking_uri)
    client = mlflow.tracking.MlflowClient()
    with mlflow.start_run(run_name=run_name or out.name) as run:
        params = {k: str(v)[:500] for k, v in flatten(summary.get("train_config", {})).items()}
        keys = sorted(params)
        for i in range(0, len(keys), 100):
            mlflow.log_params({k: params[k] for k in keys[i:i + 100]})
        mlflow.set_tags({"backend": "budget", "source": str(out.resolve()),
                         **{k: v for k, v in summary.items() if isinstance(v, (int, float, str))}})
        metrics = []
        for line in (out / HISTORY_FILE).read_text().splitlines():
            row = json.loads(line)
            step = int(row.pop("step"))
            metrics += [Metric(k, float(v), 0, step) for k, v in row.items() if v == v and abs(v) != float("inf")]
        for i in range(0, len(metrics), 1000):
            client.log_batch(run.info.run_id, metrics=metrics[i:i + 1000])
        mlflow.log_artifact(str(out / MODEL_FILE))
        mlflow.log_artifact(str(out / SUMMARY_FILE))
        if register_as:
            from pipeline.pyfunc import log_pyfunc_model

            log_pyfunc_model(out / MODEL_FILE, registered_model_name=register_as)
        return run.info.run_id
