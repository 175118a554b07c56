"""The pretrained model as an MLflow pyfunc: ``predict(DataFrame)`` clusters the table and returns its labels (with
``params={"output": "details"}`` also its soft assignments, the probability of each K and the next K's partition).

The artifact is the model-format checkpoint (``model.checkpoint.save_checkpoint``); the wrapper builds a
``model.TabClustPFN`` estimator on it. Clustering is transductive, so each ``predict`` call clusters the rows it is
given. ``params`` (see :data:`PARAMS`) set the estimator: ``n_clusters`` fixes K (0: CIN infers it),
``max_clusters`` bounds the inferred K, ``k_selection`` and ``n_estimators`` as in ``TabClustPFN``, and
``random_state`` (default 0) picks the context rows of a table over 1,000 rows, so the same call gives the same
labels; ``missing_values``, a list of strings, names the codes read as missing (``["-999", "unknown"]``). A table
is refused as the batch job refuses it (:func:`pipeline.tables.prepare_features`).

The model is logged from code (:data:`MODEL_CODE`; nothing is pickled) and carries the ``model`` package and the
``pipeline`` modules it needs, so it loads where this project is not installed. :func:`serve` runs MLflow's
scoring server on it in-process (``jobs/serve.py``; see ``docs/serving.md``).
"""

from __future__ import annotations

import json
import logging
import numbers
import os
import re
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, NoReturn

import mlflow
import numpy as np
import pandas as pd

from model.ensemble import DEFAULT_N_ESTIMATORS
from model.screening import screen_noise_setting
from model.selection import DEFAULT_ESTIMATOR_K_SELECTION

logger = logging.getLogger(__name__)

ARTIFACT_KEY = "checkpoint"
#: ``predict`` params: (name, MLflow type, default). 0 means "not set" for n_clusters and max_clusters.
DECLARED_PARAMS: tuple[tuple[str, str, Any], ...] = (
    ("n_clusters", "long", 0),
    ("max_clusters", "long", 0),
    ("k_selection", "string", DEFAULT_ESTIMATOR_K_SELECTION),
    ("n_estimators", "long", DEFAULT_N_ESTIMATORS),
    ("random_state", "long", 0),
    ("missing_values", "string", []),  # an array param: the codes as strings ("-999" matches -999 too)
)
#: Estimator settings a request may not change: the weights, the device and the memory bounds are the server's.
SERVER_SETTINGS = ("checkpoint", "device", "n_context", "batch_rows")
_MLFLOW_KINDS = ((bool, "boolean"), (numbers.Integral, "long"), (numbers.Real, "double"), (str, "string"))


def _other_estimator_params() -> tuple[tuple[str, str, Any], ...]:
    """Any other ``TabClustPFN`` param with a plain default, served under its own name and default, so a param
    added to the estimator reaches requests without a change here (the estimator validates it)."""
    from model import TabClustPFN

    declared = {name for name, _, _ in DECLARED_PARAMS} | set(SERVER_SETTINGS)
    extra = []
    for name, default in sorted(TabClustPFN().get_params().items()):
        kind = next((k for t, k in _MLFLOW_KINDS if isinstance(default, t)), None)
        if name not in declared and kind is not None:
            extra.append((name, kind, default))
    return tuple(extra)


#: Every ``predict`` param that sets the estimator: :data:`DECLARED_PARAMS` plus the estimator's other plain params.
PARAMS: tuple[tuple[str, str, Any], ...] = DECLARED_PARAMS + _other_estimator_params()
#: What a response holds (the ``output`` param): the labels alone, or the labels with what the fit says of K
#: (:func:`details`)
OUTPUTS = ("labels", "details")
#: The ``predict`` params that shape the response rather than set the estimator
RESPONSE_PARAMS: tuple[tuple[str, str, Any], ...] = (("output", "string", OUTPUTS[0]),)
#: Packages the model needs, pinned to the installed versions when it is logged.
REQUIREMENTS = ("torch", "numpy", "pandas", "scikit-learn", "scipy", "mlflow")


class TabClustPFNPyfunc(mlflow.pyfunc.PythonModel):
    """MLflow wrapper around ``model.TabClustPFN`` (one table per ``predict`` call).

    The network is loaded once, in :meth:`load_context`; requests are clustered one at a time on that estimator
    (``fit`` is deterministic for a given ``random_state``, so the labels equal a fresh estimator's).
    """

    def load_context(self, context: Any) -> None:
        from model import TabClustPFN

        self.checkpoint = context.artifacts[ARTIFACT_KEY]
        self._estimator = TabClustPFN(checkpoint=self.checkpoint)
        self._estimator.fit(np.random.default_rng(0).normal(size=(32, 2)))  # loads the network now, once
        self._lock = threading.Lock()

    def predict(self, context: Any, model_input: pd.DataFrame, params: dict[str, Any] | None = None
                ) -> np.ndarray | dict[str, Any]:
        """Cluster ``model_input`` (rows = samples) with the estimator ``params`` set; returns int labels (N,), or
        with ``params["output"] == "details"`` the labels and what the fit says of K (:func:`details`).

        Raises
        ------
        mlflow.exceptions.MlflowException
            ``INVALID_PARAMETER_VALUE`` (HTTP 400 when served) with the estimator's or the table check's message:
            a bad param, or a table the batch job refuses too (one row, free text, all missing, ...).
        """
        from pipeline.tables import prepare_features

        if not isinstance(model_input, pd.DataFrame):
            model_input = pd.DataFrame(model_input)
        given = dict(params or {})
        output = given.pop("output", RESPONSE_PARAMS[0][2])
        if output not in OUTPUTS:
            _refuse(f"param 'output' must be one of {list(OUTPUTS)}, got {output!r}")
        settings = estimator_params(given)
        try:
            features, _ = prepare_features(model_input)  # the batch job's refusals, word for word
            with self._lock:
                fitted = self._estimator.set_params(**settings).fit(features)
                return details(fitted, features) if output == "details" else np.asarray(fitted.labels_)
        except (ValueError, TypeError) as exc:  # TableError and the estimator's refusals are ValueErrors
            _refuse(str(exc))


def details(fitted: Any, features: pd.DataFrame) -> dict[str, Any]:
    """A fitted ``TabClustPFN``'s answer for the response ``output="details"``: ``labels``, ``n_clusters``,
    ``k_at_top`` (K chosen at the top of the range the fit had: ``KRangeWarning``), ``probabilities`` (N x K soft
    assignments), ``k_probabilities`` (``{"2": p, ...}``; ``{}`` where K was given), and the next most probable K
    with its partition from the same fit (``k_next``, ``labels_next``; None where there is none:
    :func:`model.selection.next_k`)."""
    from model.selection import next_k

    k_probs = fitted.k_probabilities_ or {}
    k, labels_next = next_k(k_probs, int(fitted.k_chosen_)), None
    if k is not None:
        try:  # an extra: the answer itself is not refused if it fails
            labels_next = fitted.predict(features, n_clusters=k).tolist()
        except ValueError as exc:
            logger.warning("no partition at the next most probable K = %d (%s)", k, exc)
            k = None
    return {"labels": np.asarray(fitted.labels_).tolist(), "n_clusters": int(fitted.n_clusters_),
            "k_at_top": bool(fitted.k_at_top_),
            "probabilities": np.round(np.asarray(fitted.probabilities_), 6).tolist(),
            "k_probabilities": {str(kk): round(float(p), 6) for kk, p in k_probs.items()},
            "k_next": k, "labels_next": labels_next}


def estimator_params(params: dict[str, Any] | None) -> dict[str, Any]:
    """``TabClustPFN`` keyword arguments from pyfunc ``params`` (defaults from :data:`PARAMS`).

    Only what is particular to params is checked here: the names, integer types and the 0-means-not-set
    convention of ``n_clusters`` and ``max_clusters``, and ``screen_noise``'s words ("auto", "true", "false").
    Every other bound (K_max of the checkpoint, the choices of ``k_selection``, ...) is the estimator's, so a
    client reads the estimator's own message.

    Raises
    ------
    mlflow.exceptions.MlflowException
        ``INVALID_PARAMETER_VALUE``: an unknown param, a non-integer where an integer goes, a count below 2
        other than 0, or a word ``screen_noise`` does not take.
    """
    given = dict(params or {})
    names = [name for name, _, _ in PARAMS]
    unknown = sorted(set(given) - set(names))
    if unknown:
        _refuse(f"unknown param(s) {unknown}: use {names + [name for name, _, _ in RESPONSE_PARAMS]}")
    values = {name: given.get(name, default) for name, _, default in PARAMS}
    for name, kind, _ in PARAMS:
        if kind == "long" and (isinstance(values[name], bool) or not isinstance(values[name], numbers.Integral)):
            _refuse(f"param {name!r} must be an integer, got {values[name]!r}")
    for name in ("n_clusters", "max_clusters"):
        if values[name] == 1 or values[name] < 0:
            _refuse(f"param {name!r} must be 0 (not set) or at least 2, got {values[name]}")
    settings = {name: int(v) if kind == "long" else v for (name, kind, _), v in zip(PARAMS, values.values())}
    settings.update(n_clusters=settings["n_clusters"] or None, max_clusters=settings["max_clusters"] or None)
    codes = [] if settings["missing_values"] is None else settings["missing_values"]
    if isinstance(codes, str) or np.ndim(codes) == 0:  # one code given bare; the estimator checks each
        codes = [codes]
    settings["missing_values"] = [c.item() if isinstance(c, np.generic) else c for c in codes] or None
    if "screen_noise" in settings:  # a word in a request: "auto", "true" or "false"
        try:
            settings["screen_noise"] = screen_noise_setting(settings["screen_noise"])
        except ValueError as exc:
            _refuse(str(exc))
    return settings


def _refuse(message: str) -> NoReturn:
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

    raise MlflowException(message, error_code=INVALID_PARAMETER_VALUE)


def pinned_requirements() -> list[str]:
    """:data:`REQUIREMENTS` at their installed versions, without a local label (``2.13.0+cpu`` -> ``2.13.0``) so
    pip can install the CPU or the CUDA build of torch."""
    from importlib.metadata import version

    return [f"{name}=={version(name).split('+')[0]}" for name in REQUIREMENTS]


#: The models-from-code script MLflow runs to build the model when it loads it: no pickled object is logged.
MODEL_CODE = '''"""TabClustPFN as an MLflow pyfunc, logged from code; the `model` and `pipeline` code travel with it."""
import mlflow

from pipeline.pyfunc import TabClustPFNPyfunc

mlflow.models.set_model(TabClustPFNPyfunc())
'''
MODEL_CODE_FILE = "tabclustpfn_model.py"


def _copy_code(into: Path) -> tuple[str, list[str]]:
    """Write :data:`MODEL_CODE` and copy the ``model`` package (without its weights: the checkpoint is the
    artifact) and this module with the table checks, inside a bare ``pipeline`` package, into ``into``; MLflow
    puts the packages on ``sys.path`` before it runs the script. Returns (script, code paths)."""
    import model

    shutil.copytree(Path(model.__file__).parent, into / "model",
                    ignore=shutil.ignore_patterns("weights", "__pycache__", "*.pyc"))
    (into / "pipeline").mkdir()
    for module in ("__init__.py", "pyfunc.py", "tables.py"):
        shutil.copyfile(Path(__file__).with_name(module), into / "pipeline" / module)
    script = into / MODEL_CODE_FILE
    script.write_text(MODEL_CODE)
    return str(script), [str(into / "model"), str(into / "pipeline")]


def _model_settings(checkpoint: str | os.PathLike, code_dir: Path) -> dict[str, Any]:
    """The arguments shared by :func:`log_pyfunc_model` and :func:`save_pyfunc_model`."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, ParamSchema, ParamSpec, Schema

    # Any table goes in (no column schema); out come the labels (with output="details" a dict, which MLflow passes
    # on unchecked: it checks params, not outputs). A list default makes an array param.
    specs = [ParamSpec(n, kind, default, (-1,) if isinstance(default, list) else None)
             for n, kind, default in PARAMS + RESPONSE_PARAMS]
    signature = ModelSignature(inputs=None, outputs=Schema([ColSpec("long")]), params=ParamSchema(specs))
    script, code_paths = _copy_code(code_dir)
    return {"python_model": script, "artifacts": {ARTIFACT_KEY: str(checkpoint)}, "signature": signature,
            "code_paths": code_paths, "pip_requirements": pinned_requirements()}


def log_pyfunc_model(checkpoint: str | os.PathLike, *, registered_model_name: str | None = "tabclustpfn",
                     name: str = "model"):
    """Log ``checkpoint`` as a pyfunc model in the active MLflow run and optionally register it.

    The model is logged from code (:data:`MODEL_CODE`), never pickled: loading it runs the script and the
    ``model`` and ``pipeline`` code it carries, and reads the weights with ``torch.load(weights_only=True)``. It
    pins its requirements to the installed versions, so it loads and gives the same labels in a fresh environment.

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
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as code_dir:
        # an input example would make MLflow cluster a table while logging; the signature says enough
        warnings.filterwarnings("ignore", message=".*input example was not provided.*")
        return mlflow.pyfunc.log_model(name=name, registered_model_name=registered_model_name,
                                       **_model_settings(checkpoint, Path(code_dir)))


def save_pyfunc_model(checkpoint: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Save ``checkpoint`` as the same pyfunc model as :func:`log_pyfunc_model`, in the folder ``path`` (which
    must not exist), without a tracking store; returns ``path``."""
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as code_dir:
        warnings.filterwarnings("ignore", message=".*input example was not provided.*")
        mlflow.pyfunc.save_model(str(path), **_model_settings(checkpoint, Path(code_dir)))
    return Path(path)


#: The prefix MLflow's scoring server puts before a ``predict`` refusal: the whole input table, then the message.
_PREDICT_PREFIX = re.compile(r"^Failed to predict data '.*'\. \nError: ", re.DOTALL)


def plain_error(body: bytes) -> bytes:
    """An MLflow scoring-server error body as a client should see it: the refusal's own message (without the
    echoed input table) and no stack trace (logged by the server instead)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return body
    if not isinstance(payload, dict):
        return body
    trace = payload.pop("stack_trace", None)
    if trace:
        logger.warning("request failed:\n%s", trace)
    if isinstance(payload.get("message"), str):
        payload["message"] = _PREDICT_PREFIX.sub("", payload["message"])
    return json.dumps(payload).encode()


def serving_app(model_uri: str):
    """MLflow's scoring server for ``model_uri`` (the FastAPI app that ``mlflow models serve`` runs under
    uvicorn: ``/invocations``, ``/ping``, ``/health``, ``/version``), its error bodies passed through
    :func:`plain_error`.

    Raises
    ------
    ValueError
        The model cannot be loaded (unknown name or version, not a model folder, unreadable store).
    """
    from fastapi.responses import Response
    from mlflow.exceptions import MlflowException
    from mlflow.pyfunc import scoring_server

    try:
        model = mlflow.pyfunc.load_model(model_uri)
    except (MlflowException, OSError) as exc:
        raise ValueError(f"cannot load the model {model_uri!r} from {mlflow.get_tracking_uri()!r}: {exc}") from None
    app = scoring_server.init(model)

    @app.middleware("http")
    async def _plain_errors(request, call_next):
        response = await call_next(request)
        if response.status_code < 400 or not response.headers.get("content-type", "").startswith("application/json"):
            return response
        body = b"".join([chunk async for chunk in response.body_iterator])
        return Response(content=plain_error(body), status_code=response.status_code, media_type="application/json")

    return app


def serve(model_uri: str | None = None, *, checkpoint: str | os.PathLike | None = None, host: str = "127.0.0.1",
          port: int = 5001, tracking_uri: str | None = None) -> None:
    """Serve a model over HTTP in this process until interrupted.

    uvicorn runs in-process, as ``mlflow models serve`` runs it in a subprocess, so no ``uvicorn`` executable on
    ``PATH`` is needed.

    Parameters
    ----------
    model_uri : str, optional
        An MLflow model URI (``models:/NAME/VERSION``, ``runs:/ID/model``, a model folder); None serves
        ``checkpoint``, saved as this pyfunc model in a temporary folder.
    checkpoint : path, optional
        A model-format checkpoint; None: the shipped one.
    host, port
        Where to listen.
    tracking_uri : str, optional
        The store that ``models:/`` and ``runs:/`` URIs refer to (default as :func:`pipeline.tracking.setup_tracking`).

    Raises
    ------
    FileNotFoundError, ValueError
        The checkpoint or the model cannot be loaded.
    """
    import uvicorn

    from pipeline.tracking import DEFAULT_TRACKING_URI

    mlflow.set_tracking_uri(tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI)
    with tempfile.TemporaryDirectory(prefix="tabclustpfn-serve-") as tmp:
        if model_uri is None:
            from pipeline.batch_cluster import check_checkpoint

            model_uri = str(save_pyfunc_model(check_checkpoint(checkpoint), Path(tmp) / "model"))
        app = serving_app(model_uri)
        logger.info("serving %s at http://%s:%d/invocations", model_uri, host, port)
        uvicorn.run(app, host=host, port=port, log_level="info")
