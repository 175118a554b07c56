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
