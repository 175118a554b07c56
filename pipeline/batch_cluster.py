"""Cluster many tables at once: one Ray actor per worker loads the model once and clusters table after table.

Every input table (CSV or Parquet) goes through :func:`cluster_table`, the same per-table function whether it
runs in an actor or in a plain loop. A bad table (unreadable, empty, one row, free-text column, all missing,
more columns than :data:`pipeline.tables.MAX_COLUMNS`; :mod:`pipeline.tables` finds, reads and checks them) gives
a failed summary row with the reason and never stops the batch. A table whose worker process dies (killed, out of
memory, its node lost) is tried again on another worker, ``max_retries`` times; only one that kills its worker on
every try is a failed row, saying so.

Outputs in ``output_dir``: ``<table>.parquet`` (the input rows plus ``cluster``, ``prob_0..prob_{K-1}`` and, where K
was chosen, ``cluster_next``: the partition at the next most probable K, ``k_next`` in the summary) and
``summary.csv`` with one row per table (see :data:`SUMMARY_COLUMNS`; ``node_id`` is the Ray node whose worker
clustered the table, empty for a table that failed before any worker finished it). The driver writes every file,
so with ``ray job submit`` they land on the head node; the input paths must be readable by the workers. The
workers are spread over the cluster's nodes (Ray's ``SPREAD`` scheduling), one model load per worker. MLflow tracking is
a record of the run, not its result: a tracking problem is logged as a warning and never loses the outputs.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from model.cells import checked_codes
from model.ensemble import DEFAULT_N_ESTIMATORS
from model.power import DEFAULT_POWER_TRANSFORM, power_transform_setting
from model.preprocessing import DEFAULT_IMPUTE, IMPUTE
from model.refinement import DEFAULT_REFINE, REFINES
from model.screening import DEFAULT_SCREEN_NOISE, screen_noise_setting
from model.selection import DEFAULT_ESTIMATOR_K_SELECTION, ESTIMATOR_K_SELECTIONS
from pipeline.tables import MAX_COLUMNS, TableError, discover_tables, prepare_features, read_table, table_names

logger = logging.getLogger(__name__)

#: Repository root and the demo tables clustered when no input is given.
REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_DIR = REPO_ROOT / "data" / "demo"
DEMO_LABEL_COLUMN = "target"
OUTPUT_CLUSTER_COLUMN = "cluster"
#: The output's partition at the next most probable K (``k_next`` in the summary), where K was chosen
OUTPUT_NEXT_COLUMN = "cluster_next"
SUMMARY_COLUMNS = ["table", "status", "rows", "columns", "n_clusters", "k_at_top", "k_probability", "k_next",
                   "k_next_probability", "k_posterior", "structure_score", "ignored_columns", "empty_rows",
                   "fenced_values", "likely_codes", "missing_markers", "seconds", "ari", "nmi", "error", "path",
                   "node_id"]
#: Seconds the driver waits for a Ray worker to load the model while no worker is ready and tables are waiting;
#: past it the job fails instead of waiting forever for CPUs the cluster does not free.
ACTOR_START_TIMEOUT_S = 300.0
#: Times a table whose worker died is tried again on another worker (``--max-retries``).
DEFAULT_MAX_RETRIES = 2
#: Characters of a table name kept in its MLflow metric keys (the full name is in ``summary.csv``).
METRIC_NAME_CHARS = 60


@dataclass(frozen=True)
class ClusterJobConfig:
    """Settings of one batch clustering run.

    Parameters
    ----------
    inputs : tuple of str
        CSV/Parquet/Excel files, directories (their ``*.csv``/``*.parquet``/``*.xlsx`` files) or glob patterns; empty
        means the demo tables in ``data/demo`` with ground-truth column ``target``.
    output_dir : str
        Where ``<table>.parquet`` and ``summary.csv`` go.
    n_clusters : int, optional
        Fixed K for every table; None lets the model infer K per table.
    k_selection : str, optional
        How the model infers K (``TabClustPFN(k_selection=...)``: ``"auto"``, ``"ranker"``, ``"expected_ari"`` or
        ``"posterior_mode"``); None keeps the estimator's default.
    max_clusters : int, optional
        Largest K the model may infer for any table (``TabClustPFN(max_clusters=...)``); None: the checkpoint's
        K_max.
    n_estimators : int, optional
        Column orderings averaged per table (``TabClustPFN(n_estimators=...)``); None keeps the estimator's
        default.
    refine : str, optional
        ``TabClustPFN(refine=...)``: ``"gmm"`` (two Lloyd steps from the network's partitions, then the chosen one
        by a diagonal Gaussian mixture), ``"kmeans"`` (the Lloyd steps only) or ``"none"``; None keeps the
        estimator's default.
    allow_single_cluster : bool
        ``TabClustPFN(allow_single_cluster=...)``: a table that looks like one Gaussian mode gets one cluster
        (``n_clusters`` 1) instead of the network's K >= 2 (off by default).
    screen_noise : {"auto", True, False}, optional
        ``TabClustPFN(screen_noise=...)``: drop the continuous columns that show no cluster structure where some
        continuous column has two modes ("auto") or any column shows structure (True) (:mod:`model.screening`);
        None keeps the estimator's default ("auto"). The columns each table was clustered without are in
        ``summary.csv``'s ``ignored_columns``.
    power_transform : bool, optional
        ``TabClustPFN(power_transform=...)``: Yeo-Johnson transform highly skewed one-mode numeric columns of tables
        wider than 4 design columns (:mod:`model.power`); None keeps the estimator's default (True).
    impute : {"neighbors", "median"}, optional
        ``TabClustPFN(impute=...)``: a missing cell is filled from the 5 nearest rows or by the column's median
        (most frequent category) (:mod:`model.preprocessing`); None keeps the estimator's default ("neighbors").
    label_column : str, optional
        Ground-truth column scored with ARI/NMI and kept out of the features.
    ignore_columns : tuple of str
        Columns kept out of the features where a table has them (ids, names, free text), and in its output; listed
        in ``summary.csv``'s ``ignored_columns``. A name no clustered table holds draws a warning (a typo?).
    missing_values : tuple of numbers and strings
        ``TabClustPFN(missing_values=...)``: codes for a missing value (-999, "unknown") in every table.
    checkpoint : str, optional
        Model checkpoint; None uses the one shipped with the package.
    num_workers : int, optional
        Ray actors (each loads the model once and takes 1 CPU); default: one per free CPU. At most one per table
        and one per CPU of the cluster (see :func:`worker_count`).
    seed : int
        ``random_state`` of the estimator, the same for every table; in 0..2**32 - 1 (numpy's seed range).
    max_columns : int
        Tables with more feature columns fail with a clear reason (see :data:`pipeline.tables.MAX_COLUMNS`).
    max_retries : int
        Times a table whose worker dies (killed, out of memory, node lost) is tried again on another worker
        before it is reported as failed.
    tracking_uri : str, optional
        MLflow store; default ``sqlite:///mlruns.db``.
    """

    inputs: tuple[str, ...] = ()
    output_dir: str = "outputs/cluster"
    n_clusters: int | None = None
    k_selection: str | None = None
    max_clusters: int | None = None
    n_estimators: int | None = None
    refine: str | None = None
    allow_single_cluster: bool = False
    screen_noise: bool | str | None = None
    power_transform: bool | None = None
    impute: str | None = None
    label_column: str | None = None
    ignore_columns: tuple[str, ...] = ()
    missing_values: tuple = ()
    checkpoint: str | None = None
    num_workers: int | None = None
    seed: int = 0
    max_columns: int = MAX_COLUMNS
    max_retries: int = DEFAULT_MAX_RETRIES
    tracking_uri: str | None = None
    experiment: str = "cluster"
    progress: bool = True

    def __post_init__(self) -> None:
        if self.n_clusters is not None and self.n_clusters < 2:
            raise ValueError(f"n_clusters must be >= 2 or None, got {self.n_clusters}")
        if self.k_selection is not None and self.k_selection not in ESTIMATOR_K_SELECTIONS:
            raise ValueError(f"unknown k_selection {self.k_selection!r}: use one of {ESTIMATOR_K_SELECTIONS}")
        if self.max_clusters is not None and self.max_clusters < 2:
            raise ValueError(f"max_clusters must be >= 2 or None, got {self.max_clusters}")
        if None not in (self.n_clusters, self.max_clusters) and self.n_clusters > self.max_clusters:
            raise ValueError(f"n_clusters={self.n_clusters} is larger than max_clusters={self.max_clusters}: "
                             "give one of them")
        if self.n_estimators is not None and self.n_estimators < 1:
            raise ValueError(f"n_estimators must be >= 1 or None, got {self.n_estimators}")
        if isinstance(self.ignore_columns, str):
            raise ValueError(f"ignore_columns must be a sequence of column names, e.g. ({self.ignore_columns!r},), "
                             f"got the string {self.ignore_columns!r}")
        object.__setattr__(self, "ignore_columns", tuple(self.ignore_columns))
        object.__setattr__(self, "missing_values", checked_codes(self.missing_values))
        if self.refine is not None and self.refine not in REFINES:
            raise ValueError(f"unknown refine {self.refine!r}: use one of {REFINES}")
        if self.screen_noise is not None:
            object.__setattr__(self, "screen_noise", screen_noise_setting(self.screen_noise))
        if self.power_transform is not None:
            object.__setattr__(self, "power_transform", power_transform_setting(self.power_transform))
        if self.impute is not None and self.impute not in IMPUTE:
            raise ValueError(f"unknown impute {self.impute!r}: use one of {IMPUTE}")
        if self.num_workers is not None and self.num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {self.num_workers}")
        if self.max_columns < 1:
            raise ValueError(f"max_columns must be >= 1, got {self.max_columns}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be in 0..{2**32 - 1} (numpy's seed range), got {self.seed}")


class UsageError(ValueError):
    """A setting that cannot work (e.g. an output folder that would overwrite the inputs), found before any work;
    ``jobs/cluster.py`` reports it as a usage error, like argparse."""


def _failed_row(name: str, path: Path, error: str, seconds: float, rows: Any = None, columns: Any = None) -> dict:
    return {"table": name, "status": "failed", "rows": rows, "columns": columns, "n_clusters": None,
            "k_at_top": None, "k_probability": None, "k_next": None, "k_next_probability": None, "k_posterior": None,
            "structure_score": None, "ignored_columns": None,
            "empty_rows": None, "fenced_values": None, "likely_codes": None, "missing_markers": None,
            "seconds": round(seconds, 4), "ari": None, "nmi": None, "error": error, "path": str(path), "node_id": None}


def cluster_table(estimator, path: Path, name: str, *, label_column: str | None = None,
                  ignore_columns: tuple[str, ...] = (), max_columns: int = MAX_COLUMNS
                  ) -> tuple[dict, pd.DataFrame | None]:
    """Cluster one table; never raises for a bad table.

    Parameters
    ----------
    estimator : TabClustPFN
        Refit on this table (``fit`` sets ``labels_``, ``n_clusters_``, ``probabilities_`` (N, K) and
        ``k_posterior_``, None where BIC chose K without the network: the summary's ``k_posterior`` is then
        ``{}``); reusing one instance keeps its loaded network, and ``fit`` is deterministic for a
        given ``random_state``, so the result equals that of a fresh estimator.
    path : Path
        CSV or Parquet file.
    name : str
        The table's name in the summary.
    label_column : str, optional
        Ground-truth column: scored, not clustered.
    ignore_columns : tuple of str
        Columns not clustered where the table has them; kept in the output.
    max_columns : int
        Feature-column limit.

    Returns
    -------
    (dict, DataFrame or None)
        The summary row and, on success, the input rows plus ``cluster`` and ``prob_0..prob_{K-1}``.
    """
    start = time.perf_counter()
    rows = columns = None
    try:
        frame = read_table(path)
        rows, columns = frame.shape
        features, truth = prepare_features(frame, label_column=label_column, ignore_columns=ignore_columns,
                                           max_columns=max_columns)
        taken = [c for c in frame.columns if c in (OUTPUT_CLUSTER_COLUMN, OUTPUT_NEXT_COLUMN)
                 or str(c).startswith("prob_")]
        if taken:
            raise TableError(f"the table already has column(s) {taken[:3]} that the output adds (cluster, "
                             "cluster_next, prob_<k>); rename or drop them")
        est = estimator.fit(features)
    except (TableError, ValueError, TypeError) as exc:
        return _failed_row(name, path, str(exc), time.perf_counter() - start, rows, columns), None
    except MemoryError:
        return _failed_row(name, path, "out of memory while clustering: use fewer rows or columns",
                           time.perf_counter() - start, rows, columns), None
    labels = np.asarray(est.labels_)
    probs = np.asarray(est.probabilities_)
    try:  # an extra: the table's own partition is not lost if it fails
        k_next, next_labels = _next_partition(est, features)
    except (ValueError, MemoryError) as exc:
        logger.warning("table %s: no partition at the next most probable K (%s)", name, exc)
        k_next = next_labels = None
    # the columns it was clustered without: those the estimator dropped (below), and those the job was told to ignore
    ignored = [f"column {c!r}" for c in frame.columns if c not in features.columns and c != label_column]
    out = frame.copy()
    out[OUTPUT_CLUSTER_COLUMN] = labels
    for k in range(probs.shape[1]):
        out[f"prob_{k}"] = probs[:, k].astype(np.float32)
    if next_labels is not None:
        out[OUTPUT_NEXT_COLUMN] = next_labels
    posterior = getattr(est, "k_posterior_", None) or {}
    score = float(getattr(est, "structure_score_", np.nan))  # NaN unless allow_single_cluster tested the table
    k_probs = getattr(est, "k_probabilities_", None) or {}  # a calibrated ranker's
    chosen = k_probs.get(int(est.k_chosen_))
    row = {"table": name, "status": "ok", "rows": rows, "columns": columns, "n_clusters": int(est.n_clusters_),
           "k_at_top": bool(est.k_at_top_),  # K chosen at the top of the range it had: more clusters, or none?
           "k_probability": None if chosen is None else round(float(chosen), 6),
           "k_next": k_next, "k_next_probability": None if k_next is None else round(float(k_probs[k_next]), 6),
           "k_posterior": json.dumps({str(k): round(float(v), 6) for k, v in posterior.items()}),
           "structure_score": round(score, 4) if np.isfinite(score) else None,
           "ignored_columns": json.dumps(sorted([*est.preprocessor_.dropped_, *ignored])),
           "empty_rows": len(getattr(est, "empty_rows_", ())),  # rows with no value in any usable column
           "fenced_values": json.dumps(est.preprocessor_.fenced_),  # gross values read at a fence, per column
           "likely_codes": json.dumps(est.preprocessor_.likely_codes_),  # -999 and the like, read as values
           "missing_markers": json.dumps(est.preprocessor_.missing_markers_),  # "?" among numbers, read as missing
           "seconds": round(time.perf_counter() - start, 4), "ari": None, "nmi": None, "error": "",
           "path": str(path), "node_id": None}
    if truth is not None:
        row.update(_score(truth, labels))
    return row, out


def _next_partition(est, features: pd.DataFrame) -> tuple[int | None, np.ndarray | None]:
    """The next most probable K after the chosen one (:func:`model.selection.next_k`) and the table's partition at
    it (``predict(n_clusters=)``: the candidate the fit weighed), or (None, None) where there is none. After a
    one-cluster answer (``allow_single_cluster``), the most probable K."""
    from model.selection import next_k

    k = next_k(getattr(est, "k_probabilities_", None), int(est.k_chosen_))
    return (None, None) if k is None else (k, est.predict(features, n_clusters=k))


def _score(truth: pd.Series, labels: np.ndarray) -> dict:
    """ARI/NMI on the rows whose ground truth is known."""
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    known = truth.notna().to_numpy()
    if known.sum() < 2:
        return {"ari": None, "nmi": None}
    t = truth[known].astype(str).to_numpy()
    return {"ari": round(float(adjusted_rand_score(t, labels[known])), 6),
            "nmi": round(float(normalized_mutual_info_score(t, labels[known])), 6)}


def load_estimator(checkpoint: str | None, n_clusters: int | None, seed: int, k_selection: str | None = None,
                   max_clusters: int | None = None, n_estimators: int | None = None, refine: str | None = None,
                   allow_single_cluster: bool = False, screen_noise: bool | str | None = None,
                   dequantize: bool | None = None, power_transform: bool | None = None,
                   impute: str | None = None, missing_values: tuple = ()):
    """A TabClustPFN whose network is loaded now (it caches it across ``fit`` calls): one load per worker.
    ``k_selection``, ``n_estimators``, ``refine``, ``screen_noise``, ``dequantize``, ``power_transform`` and
    ``impute`` None keep the estimator's defaults;
    ``max_clusters`` bounds the inferred K.

    A tiny warm-up fit loads the network and checks that the checkpoint and ``n_clusters`` are usable, so a
    bad setting fails once at start-up instead of on every table.
    """
    from model import TabClustPFN

    est = TabClustPFN(n_clusters, checkpoint=checkpoint, random_state=seed, max_clusters=max_clusters,
                      missing_values=list(missing_values) or None)
    if k_selection is not None:
        est.set_params(k_selection=k_selection)
    if n_estimators is not None:
        est.set_params(n_estimators=n_estimators)
    if refine is not None:
        est.set_params(refine=refine)
    if screen_noise is not None:
        est.set_params(screen_noise=screen_noise)
    if dequantize is not None:
        est.set_params(dequantize=dequantize)
    if power_transform is not None:
        est.set_params(power_transform=power_transform)
    if impute is not None:
        est.set_params(impute=impute)
    est.set_params(allow_single_cluster=allow_single_cluster)
    est.fit(np.random.default_rng(0).normal(size=(32, 2)))
    return est


class TableClusterer:
    """Ray actor body: loads the model once in ``__init__``, then clusters one table per :meth:`run` call."""

    def __init__(self, checkpoint: str | None, n_clusters: int | None, seed: int, label_column: str | None,
                 max_columns: int, k_selection: str | None = None, max_clusters: int | None = None,
                 n_estimators: int | None = None, refine: str | None = None,
                 allow_single_cluster: bool = False, screen_noise: bool | str | None = None,
                 power_transform: bool | None = None, impute: str | None = None,
                 ignore_columns: tuple[str, ...] = (), missing_values: tuple = ()) -> None:
        self._estimator = load_estimator(checkpoint, n_clusters, seed, k_selection, max_clusters, n_estimators,
                                         refine, allow_single_cluster, screen_noise,
                                         power_transform=power_transform, impute=impute,
                                         missing_values=missing_values)
        self._label_column, self._ignore_columns = label_column, tuple(ignore_columns)
        self._max_columns = max_columns

    def ready(self) -> bool:
        """Return once the model is loaded (raises here if loading failed)."""
        return True

    def run(self, path: str, name: str) -> tuple[dict, pd.DataFrame | None]:
        """Cluster one table with :func:`cluster_table`; the row's ``node_id`` is this worker's Ray node."""
        import ray

        row, out = cluster_table(self._estimator, Path(path), name, label_column=self._label_column,
                                 ignore_columns=self._ignore_columns, max_columns=self._max_columns)
        row["node_id"] = ray.get_runtime_context().get_node_id()
        return row, out


def _run_on_actors(cfg: ClusterJobConfig, jobs: list[tuple[Path, str]], num_workers: int, on_result, *,
                   start_timeout: float = ACTOR_START_TIMEOUT_S, body: type = TableClusterer) -> float:
    """Feed the tables to a pool of actors, one table in flight per actor, replacing any actor that dies.

    Each actor gets tables as soon as it has loaded the model, so an actor that the cluster cannot schedule (no
    free CPU) never holds up the others. A table whose actor dies (its process killed, out of memory, its node
    lost) goes back to the front of the queue for another actor, up to ``cfg.max_retries`` times; only a table
    that kills its worker on every try becomes a failed row, saying so. ``on_result`` is called exactly once per
    table, as soon as its result is in, and nothing of a table is kept here after that. When no actor is ready and
    none has a table in flight for ``start_timeout`` seconds, the job fails with the reason instead of waiting
    forever. ``body`` is the actor class (:class:`TableClusterer`). The actors are placed with Ray's ``SPREAD``
    strategy, so on a cluster of several nodes they spread over the nodes instead of filling the head first.

    Returns the seconds until the first actor had loaded the model.

    Raises
    ------
    RuntimeError
        An actor could not load the model, actors kept dying while they loaded it, or no actor started within
        ``start_timeout`` seconds.
    """
    import ray

    start = time.perf_counter()
    actor_cls = ray.remote(num_cpus=1, max_restarts=0, scheduling_strategy="SPREAD")(body)
    args = (cfg.checkpoint, cfg.n_clusters, cfg.seed, cfg.label_column, cfg.max_columns, cfg.k_selection,
            cfg.max_clusters, cfg.n_estimators, cfg.refine, cfg.allow_single_cluster, cfg.screen_noise,
            cfg.power_transform, cfg.impute, cfg.ignore_columns, cfg.missing_values)

    def launch() -> None:
        actor = actor_cls.remote(*args)
        starting[actor.ready.remote()] = actor

    starting: dict = {}
    for _ in range(num_workers):
        launch()
    startup = None
    deaths: dict[str, int] = {}  # table -> workers that died while clustering it
    start_deaths, max_start_deaths = 0, num_workers * (cfg.max_retries + 1)
    idle, queue, pending = [], deque(jobs), {}
    while queue or pending:
        while queue and idle:
            actor, (path, name) = idle.pop(), queue.popleft()
            pending[actor.run.remote(str(path), name)] = (actor, path, name)
        waiting = list(pending) + list(starting) if queue else list(pending)
        done, _ = ray.wait(waiting, num_returns=1, timeout=None if pending else start_timeout)
        if not done:
            free = ray.available_resources().get("CPU", 0)
            raise RuntimeError(f"no Ray worker started within {start_timeout:.0f} s: {len(starting)} wait for 1 "
                               f"CPU each and the cluster has {free:g} free; free CPUs or pass a smaller "
                               "--num-workers")
        ref = done[0]
        if ref in starting:
            actor = starting.pop(ref)
            try:
                ray.get(ref)
            except ray.exceptions.RayActorError as exc:
                if exc.actor_init_failed:  # loading the model raised: every actor would fail alike
                    raise RuntimeError(f"the Ray workers could not load the model: {exc}") from None
                start_deaths += 1  # killed or its node lost while it loaded the model: start another
                if start_deaths > max_start_deaths:
                    raise RuntimeError(f"{start_deaths} Ray workers died while loading the model (out of memory? "
                                       f"nodes lost?); the last: {exc}") from None
                logger.warning("a worker died while loading the model; starting another (%s)", exc)
                launch()
                continue
            startup = time.perf_counter() - start if startup is None else startup
            idle.append(actor)
            continue
        actor, path, name = pending.pop(ref)
        try:
            row, out = ray.get(ref)
            idle.append(actor)
        except ray.exceptions.RayActorError as exc:
            deaths[name] = deaths.get(name, 0) + 1
            launch()
            if deaths[name] <= cfg.max_retries:
                logger.warning("the worker died while clustering %s (try %d of %d); retrying it on another worker: "
                               "%s", name, deaths[name], cfg.max_retries + 1, exc)
                queue.appendleft((path, name))
                continue
            logger.warning("the worker died while clustering %s, %d times; giving it up: %s", name, deaths[name],
                           exc)
            row, out = _failed_row(name, path, f"the worker process died {deaths[name]} times while clustering "
                                   "this table (out of memory?); try it alone or with fewer rows/columns", 0.0), None
        except ray.exceptions.RayTaskError as exc:
            row, out = _failed_row(name, path, f"unexpected error: {exc.cause!r}", 0.0), None
            idle.append(actor)
        on_result(row, out)
    for actor in list(starting.values()) + idle:
        ray.kill(actor)
    return startup if startup is not None else time.perf_counter() - start


def run_batch(cfg: ClusterJobConfig) -> pd.DataFrame:
    """Cluster every table of ``cfg.inputs`` on Ray actors, write the outputs and log one MLflow run.

    MLflow is set up before any table is clustered, so a bad store or a deleted experiment shows at once; either
    way a tracking failure is only a logged warning: the outputs and the summary stand.

    Returns
    -------
    DataFrame
        The summary (also written to ``output_dir/summary.csv``), one row per table in input order. Its
        ``attrs`` hold ``num_workers``, ``startup_seconds`` (until the first actor had loaded the model),
        ``clustering_seconds`` (from then to the last result) and ``mlflow_run_id`` (None when not tracked).

    Raises
    ------
    UsageError
        The output folder is an existing file, or an output would overwrite an input.
    """
    from tqdm.auto import tqdm

    from pipeline.ray_env import init_ray

    label_column = cfg.label_column
    inputs = cfg.inputs
    if not inputs:
        inputs, label_column = (str(DEMO_DIR),), cfg.label_column or DEMO_LABEL_COLUMN
    cfg = dataclasses.replace(cfg, inputs=tuple(inputs), label_column=label_column)
    paths = discover_tables(cfg.inputs)
    names = table_names(paths)
    out_dir = Path(cfg.output_dir)
    check_outputs(out_dir, cfg.inputs, paths, names)
    check_checkpoint(cfg.checkpoint, cfg.n_clusters, cfg.max_clusters)
    experiment_id = _start_tracking(cfg)
    out_dir.mkdir(parents=True, exist_ok=True)

    init_ray()
    import ray

    num_workers = worker_count(cfg.num_workers, len(paths), ray.available_resources().get("CPU", 0),
                               ray.cluster_resources().get("CPU", 0))
    logger.info("clustering %d tables on %d Ray workers", len(paths), num_workers)
    rows: dict[str, dict] = {}
    start = time.perf_counter()
    with tqdm(total=len(paths), desc="tables", unit="table", disable=not cfg.progress) as bar:

        def on_result(row: dict, out: pd.DataFrame | None) -> None:
            _write_output(out_dir, row, out)
            rows[row["table"]] = row
            bar.update(1)

        startup = _run_on_actors(cfg, list(zip(paths, names)), num_workers, on_result)
    summary = pd.DataFrame([rows[n] for n in names], columns=SUMMARY_COLUMNS)
    summary.attrs = {"num_workers": num_workers, "startup_seconds": startup,
                     "clustering_seconds": time.perf_counter() - start - startup, "mlflow_run_id": None}
    # CRLF line ends (RFC 4180): the csv writer then quotes a field holding a bare "\r" (a table named so), which
    # it leaves unquoted under "\n" line ends, splitting the row when the file is read back
    summary.to_csv(out_dir / "summary.csv", index=False, lineterminator="\r\n")
    _warn_unmatched_ignores(cfg, summary)
    if experiment_id is not None:
        summary.attrs["mlflow_run_id"] = _log_mlflow(cfg, summary, out_dir / "summary.csv", experiment_id)
    return summary


def _warn_unmatched_ignores(cfg: ClusterJobConfig, summary: pd.DataFrame) -> None:
    """A warning naming each ``ignore_columns`` entry that no clustered table held (a typo?)."""
    held = {label for cell in summary.loc[summary["status"] == "ok", "ignored_columns"] for label in json.loads(cell)}
    unmatched = [c for c in cfg.ignore_columns if f"column {c!r}" not in held]
    if unmatched and (summary["status"] == "ok").any():
        logger.warning("--ignore-columns %s: no clustered table has such a column (column names are case-sensitive)",
                       ", ".join(map(repr, unmatched)))


def worker_count(requested: int | None, tables: int, free_cpus: float, total_cpus: float) -> int:
    """Actors to start: ``requested`` (default: one per free CPU), at most one per table and at least 1.

    Each actor takes 1 CPU, so more actors than the cluster has CPUs could never all start: they are capped, with
    a warning. Actors beyond the free CPUs start as CPUs free up; meanwhile the others cluster (see
    :func:`_run_on_actors`).
    """
    total = max(1, int(total_cpus))
    wanted = max(1, min(tables, requested or int(free_cpus)))
    if wanted > total:
        logger.warning("%d Ray workers requested, but the cluster has %d CPUs (each worker takes 1): starting %d; "
                       "pass --num-workers %d or less", wanted, total, total, total)
        wanted = total
    elif wanted > free_cpus:
        logger.info("%d Ray workers requested, %g of the cluster's %d CPUs free: the others start as CPUs free up",
                    wanted, free_cpus, total)
    return wanted


def check_outputs(out_dir: Path, inputs: tuple[str, ...], paths: list[Path], names: list[str]) -> None:
    """Refuse an output folder that is a file, that is an input folder, or whose files would overwrite an input.

    Writing into an input folder would also make the next run read ``summary.csv`` and the outputs as tables.

    Raises
    ------
    UsageError
        With the clashing path and what to do.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"output {str(out_dir)!r} is an existing file, not a folder: give a folder (created if "
                         "missing) with --output")
    target = out_dir.resolve()
    for item in inputs:
        if Path(item).is_dir() and Path(item).resolve() == target:
            raise UsageError(f"output folder {str(out_dir)!r} is the input folder {item!r}: the outputs would "
                             "overwrite the tables and be read as tables next time; give another --output")
    taken = {p.resolve() for p in paths}
    for out in [target / f"{n}.parquet" for n in names] + [target / "summary.csv"]:
        if out in taken:
            raise UsageError(f"output {str(out)!r} would overwrite the input table of the same path; give an "
                             "--output folder outside the inputs")


def check_checkpoint(checkpoint: str | None, n_clusters: int | None = None, max_clusters: int | None = None
                     ) -> Path:
    """Resolve the checkpoint (given, or the shipped one) and load it once, before any Ray work starts.

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        The file is not a usable checkpoint (``model.checkpoint.CheckpointError``), or ``n_clusters`` or
        ``max_clusters`` is outside the checkpoint's 2..K_max.
    """
    from model.checkpoint import load_checkpoint
    from model.estimator import default_checkpoint_path

    path = Path(checkpoint) if checkpoint is not None else default_checkpoint_path()
    if not path.is_file():
        where = "checkpoint" if checkpoint is not None else "shipped checkpoint"
        raise FileNotFoundError(f"{where} not found: {path}; pass --checkpoint PATH (a file written by "
                                "model.checkpoint.save_checkpoint, e.g. by jobs/pretrain.py)")
    net, _ = load_checkpoint(path)
    if n_clusters is not None and not 2 <= n_clusters <= net.cfg.k_max:
        raise ValueError(f"n_clusters={n_clusters} is outside 2..{net.cfg.k_max} (K_max of the checkpoint); "
                         "leave it out to let the model choose K")
    if max_clusters is not None and not 2 <= max_clusters <= net.cfg.k_max:
        raise ValueError(f"max_clusters={max_clusters} is outside 2..{net.cfg.k_max} (K_max of the checkpoint); "
                         "leave it out to allow every K")
    return path


def _write_output(out_dir: Path, row: dict, out: pd.DataFrame | None) -> None:
    """Write ``<table>.parquet`` for a clustered table; remove a stale one left for a table that failed.

    A Parquet input's own index (e.g. an ``id`` index) is written too and comes back on reading; the default
    0..N-1 index of a CSV is not stored as a column (``index=None``).
    """
    target = out_dir / f"{row['table']}.parquet"
    if out is None:
        target.unlink(missing_ok=True)
        return
    try:
        out.to_parquet(target, index=None)
    except Exception as exc:  # e.g. an input column Parquet cannot store
        target.unlink(missing_ok=True)
        row.update(status="failed", error=f"clustered, but writing {target.name} failed ({exc})")


def _metric_prefixes(names: list[str]) -> list[str]:
    """Valid, unique MLflow metric key prefixes: the table's position in ``summary.csv`` plus its name made safe.

    The position keeps names that clean up alike (``a+b`` and ``a_b``) apart; the name is cut to
    :data:`METRIC_NAME_CHARS` characters of ``[A-Za-z0-9_-]``, since MLflow refuses keys over 250 characters or
    with path parts such as ``..``. The full names are in the ``summary.csv`` artifact.
    """
    width = len(str(max(len(names) - 1, 0)))
    prefixes = []
    for i, name in enumerate(names):
        safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "_-") else "_" for ch in name)
        prefixes.append(f"{i:0{width}d}_{safe[:METRIC_NAME_CHARS]}")
    return prefixes


def _start_tracking(cfg: ClusterJobConfig) -> str | None:
    """Set up MLflow before any clustering and return the experiment id; None (with a warning) when it fails."""
    try:
        from pipeline.tracking import setup_tracking

        return setup_tracking(cfg.tracking_uri, experiment=cfg.experiment)
    except Exception as exc:  # any store or experiment problem: the clustering does not depend on it
        logger.warning("MLflow tracking is off for this run (%s: %s); the tables are still clustered. Check "
                       "--tracking-uri, or restore or delete the experiment %r", type(exc).__name__, exc,
                       cfg.experiment)
        return None


def _log_mlflow(cfg: ClusterJobConfig, summary: pd.DataFrame, summary_path: Path, experiment_id: str
                ) -> str | None:
    """One MLflow run: the settings, per-table metrics, totals and ``summary.csv`` as an artifact.

    Returns the run id, or None with a logged warning when MLflow fails: the outputs are already written.
    """
    import mlflow

    ok = summary[summary["status"] == "ok"]
    try:
        with mlflow.start_run(run_name="batch-cluster", experiment_id=experiment_id) as run:
            mlflow.log_params({"inputs": ",".join(cfg.inputs)[:500], "n_clusters": cfg.n_clusters,
                               "label_column": cfg.label_column, "checkpoint": cfg.checkpoint or "shipped",
                               "ignore_columns": ",".join(cfg.ignore_columns)[:500],
                               "missing_values": ",".join(map(str, cfg.missing_values))[:500],
                               "seed": cfg.seed, "num_workers": summary.attrs["num_workers"],
                               "max_columns": cfg.max_columns, "max_retries": cfg.max_retries,
                               "k_selection": cfg.k_selection or DEFAULT_ESTIMATOR_K_SELECTION,
                               "max_clusters": cfg.max_clusters,
                               "n_estimators": cfg.n_estimators or DEFAULT_N_ESTIMATORS,
                               "refine": cfg.refine or DEFAULT_REFINE,
                               "allow_single_cluster": cfg.allow_single_cluster,
                               "screen_noise": DEFAULT_SCREEN_NOISE if cfg.screen_noise is None else
                               cfg.screen_noise,
                               "power_transform": DEFAULT_POWER_TRANSFORM if cfg.power_transform is None else
                               cfg.power_transform, "impute": cfg.impute or DEFAULT_IMPUTE})
            busy = summary.attrs["clustering_seconds"]
            metrics = {"tables": len(summary), "tables_ok": len(ok), "tables_failed": len(summary) - len(ok),
                       "startup_seconds": summary.attrs["startup_seconds"], "clustering_seconds": busy,
                       "tables_per_minute": 60.0 * len(summary) / max(busy, 1e-9)}
            prefixes = dict(zip(summary.index, _metric_prefixes(list(summary["table"]))))
            for index, row in ok.iterrows():
                key = prefixes[index]
                metrics[f"{key}.n_clusters"] = float(row["n_clusters"])
                metrics[f"{key}.seconds"] = float(row["seconds"])
                for name in ("ari", "nmi"):
                    value = row[name]
                    if value is not None and not (isinstance(value, float) and math.isnan(value)):
                        metrics[f"{key}.{name}"] = float(value)
            mlflow.log_metrics(metrics)
            mlflow.log_artifact(str(summary_path))
            return run.info.run_id
    except Exception as exc:  # the outputs are written: a tracking failure must not fail the job
        logger.warning("MLflow logging failed (%s: %s); the outputs and %s are complete", type(exc).__name__, exc,
                       summary_path)
        return None
