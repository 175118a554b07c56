"""The pretrained model as an MLflow pyfunc: ``predict(DataFrame)`` clusters the table and returns its labels.

The artifact is the model-format checkpoint (``model.checkpoint.save_checkpoint``); the wrapper builds a
``model.TabClustPFN`` estimator on it. Clustering is transductive, so each ``predict`` call clusters the rows it is
given. ``params`` (see :data:`PARAMS`) set the estimator: ``n_clusters`` fixes K (0: CIN infers it),
``max_clusters`` bounds the inferred K, ``k_selection`` and ``n_estimators`` as in ``TabClustPFN``, and
``random_state`` (default 0) picks the context rows of a table over 1,000 rows, so the same call gives the same
labels. The logged model carries the ``model`` package and this module, so it loads where this project is not
installed.
"""

from __future__ import annotations

import numbers
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import mlflow
import numpy as np
import pandas as pd

from model.ensemble import DEFAULT_N_ESTIMATORS
from model.selection import DEFAULT_K_SELECTION, K_SELECTIONS

ARTIFACT_KEY = "checkpoint"
#: ``predict`` params: (name, MLflow type, default). 0 means "not set" for n_clusters and max_clusters.
PARAMS: tuple[tuple[str, str, Any], ...] = (
    ("n_clusters", "long", 0),
    ("max_clusters", "long", 0),
    ("k_selection", "string", DEFAULT_K_SELECTION),
    ("n_estimators", "long", DEFAULT_N_ESTIMATORS),
    ("random_state", "long", 0),
)
#: Packages the model needs, pinned to the installed versions when it is logged.
REQUIREMENTS = ("torch", "numpy", "pandas", "scikit-learn", "scipy", "mlflow")


class TabClustPFNPyfunc(mlflow.pyfunc.PythonModel):
    """MLflow wrapper around ``model.TabClustPFN`` (one table per ``predict`` call)."""

    def load_context(self, context: Any) -> None:
        self.checkpoint = context.artifacts[ARTIFACT_KEY]

    def predict(self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> np.ndarray:
        """Cluster ``model_input`` (rows = samples) with the estimator ``params`` set; returns int labels (N,)."""
        from model import TabClustPFN

        if not isinstance(model_input, pd.DataFrame):
            model_input = pd.DataFrame(model_input)
        estimator = TabClustPFN(checkpoint=self.checkpoint, **estimator_params(params))
        return np.asarray(estimator.fit_predict(model_input))


def estimator_params(params: dict[str, Any] | None) -> dict[str, Any]:
    """``TabClustPFN`` keyword arguments from pyfunc ``params`` (defaults from :data:`PARAMS`).

    Checked here, naming the param, so a client gets a 400 with the reason rather than an estimator traceback;
    the bounds that depend on the checkpoint (K_max) are left to the estimator.

    Raises
    ------
    mlflow.exceptions.MlflowException
        ``INVALID_PARAMETER_VALUE``: an unknown param, or a value of the wrong type or out of range.
    """
    given = dict(params or {})
    names = [name for name, _, _ in PARAMS]
    unknown = sorted(set(given) - set(names))
    if unknown:
        _refuse(f"unknown param(s) {unknown}: use {names}")
    values = {name: given.get(name, default) for name, _, default in PARAMS}
    for name, kind, _ in PARAMS:
        if kind == "long" and (isinstance(values[name], bool) or not isinstance(values[name], numbers.Integral)):
            _refuse(f"param {name!r} must be an integer, got {values[name]!r}")
    for name in ("n_clusters", "max_clusters"):
        if values[name] == 1 or values[name] < 0:
            _refuse(f"param {name!r} must be 0 (not set) or at least 2, got {values[name]}")
    if values["n_clusters"] and values["max_clusters"] and values["n_clusters"] > values["max_clusters"]:
        _refuse(f"param 'n_clusters'={values['n_clusters']} is larger than 'max_clusters'={values['max_clusters']}: "
                "give one of them")
    if values["k_selection"] not in K_SELECTIONS:
        _refuse(f"param 'k_selection' must be one of {list(K_SELECTIONS)}, got {values['k_selection']!r}")
    if values["n_estimators"] < 1:
        _refuse(f"param 'n_estimators' must be at least 1, got {values['n_estimators']}")
    if not 0 <= values["random_state"] < 2**32:
        _refuse(f"param 'random_state' must be in 0..{2**32 - 1}, got {values['random_state']}")
    return {"n_clusters": int(values["n_clusters"]) or None, "max_clusters": int(values["max_clusters"]) or None,
            "k_selection": values["k_selection"], "n_estimators": int(values["n_estimators"]),
            "random_state": int(values["random_state"])}


def _refuse(message: str) -> None:
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

    raise MlflowException(message, error_code=INVALID_PARAMETER_VALUE)


def pinned_requirements() -> list[str]:
    """:data:`REQUIREMENTS` at their installed versions, without a local label (``2.13.0+cpu`` -> ``2.13.0``) so
    pip can install the CPU or the CUDA build of torch."""
    from importlib.metadata import version

    return [f"{name}=={version(name).split('+')[0]}" for name in REQUIREMENTS]


def _copy_code(into: Path) -> list[str]:
    """Copy the ``model`` package (without its weights: the checkpoint is the artifact) and this module, inside a
    bare ``pipeline`` package, into ``into``; MLflow puts them on ``sys.path`` when it loads the model."""
    import model

    shutil.copytree(Path(model.__file__).parent, into / "model",
                    ignore=shutil.ignore_patterns("weights", "__pycache__", "*.pyc"))
    (into / "pipeline").mkdir()
    shutil.copyfile(Path(__file__).with_name("__init__.py"), into / "pipeline" / "__init__.py")
    shutil.copyfile(__file__, into / "pipeline" / "pyfunc.py")
    return [str(into / "model"), str(into / "pipeline")]


def log_pyfunc_model(checkpoint: str | os.PathLike, *, registered_model_name: str | None = "tabclustpfn",
                     name: str = "model"):
    """Log ``checkpoint`` as a pyfunc model in the active MLflow run and optionally register it.

    The model carries its code (``model`` and this module) and pins its requirements to the installed versions,
    so it loads and gives the same labels in a fresh environment.

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

    # Any table goes in (no column schema); out come the labels.
    signature = ModelSignature(inputs=None, outputs=Schema([ColSpec("long")]),
                               params=ParamSchema([ParamSpec(n, kind, default) for n, kind, default in PARAMS]))
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as code_dir:
        # an input example would make MLflow cluster a table while logging; the signature says enough
        warnings.filterwarnings("ignore", message=".*input example was not provided.*")
        return mlflow.pyfunc.log_model(
            name=name,
            python_model=TabClustPFNPyfunc(),
            artifacts={ARTIFACT_KEY: str(checkpoint)},
            registered_model_name=registered_model_name,
            signature=signature,
            code_paths=_copy_code(Path(code_dir)),
            pip_requirements=pinned_requirements(),
        )
