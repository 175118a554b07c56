"""The pretrained model as an MLflow pyfunc: ``predict(DataFrame)`` clusters the table and returns its labels.

The artifact is the model-format checkpoint (``model.checkpoint.save_checkpoint``); the wrapper builds a
``model.TabClustPFN`` estimator on it. Clustering is transductive, so each ``predict`` call clusters the rows it is
given. ``params={"n_clusters": K}`` fixes K; without it CIN infers K.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import mlflow
import numpy as np
import pandas as pd


ARTIFACT_KEY = "checkpoint"


class TabClustPFNPyfunc(mlflow.pyfunc.PythonModel):
    """MLflow wrapper around ``model.TabClustPFN`` (one table per ``predict`` call)."""

    def load_context(self, context: Any) -> None:
        self.checkpoint = context.artifacts[ARTIFACT_KEY]

    def predict(self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> np.ndarray:
        """Cluster ``model_input`` (rows = samples); returns int labels of shape (N,)."""
        from model import TabClustPFN

        if not isinstance(model_input, pd.DataFrame):
            model_input = pd.DataFrame(model_input)
        n_clusters = (params or {}).get("n_clusters")
        estimator = TabClustPFN(n_clusters=int(n_clusters) if n_clusters else None, checkpoint=self.checkpoint)
        return np.asarray(estimator.fit_predict(model_input))


def log_pyfunc_model(checkpoint: str | os.PathLike, *, registered_model_name: str | None = "tabclustpfn",
                     name: str = "model"):
    """Log ``checkpoint`` as a pyfunc model in the active MLflow run and optionally register it.

    Parameters
    ----------
    checkpoint : path
        A model-format checkpoint file.
    registered_model_name : str, optional
        Model-registry name; None skips registration.
    name : str
        Name of the logged model within the run.

    Returns
    -------
    mlflow.models.model.ModelInfo
    """
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, ParamSchema, ParamSpec, Schema

    # Any table goes in (no column schema); out come the labels; n_clusters=0 means "infer K".
    signature = ModelSignature(inputs=None, outputs=Schema([ColSpec("long")]),
                               params=ParamSchema([ParamSpec("n_clusters", "long", 0)]))
    with warnings.catch_warnings():
        # an input example would make MLflow cluster a table while logging; the signature says enough
        warnings.filterwarnings("ignore", message=".*input example was not provided.*")
        return mlflow.pyfunc.log_model(
            name=name,
            python_model=TabClustPFNPyfunc(),
            artifacts={ARTIFACT_KEY: str(checkpoint)},
            registered_model_name=registered_model_name,
            signature=signature,
            pip_requirements=["torch", "numpy", "pandas", "scikit-learn", "mlflow"],
        )
