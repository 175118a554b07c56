"""The pretraining driver: one MLflow run, a ``TorchTrainer`` fed by the prior stream, the final model.

A run lives in ``<storage_path>/<run_name>/``: Ray Train's checkpoints (``checkpoint_step*/``), ``pretrain.json``
(the MLflow run id and the full TrainConfig) and, by default, the final model checkpoint ``model.pt`` in the
``model`` package's format. ``pretrain(..., RunOptions(resume=True, run_name=...))`` continues the same run and
the same MLflow run from the newest checkpoint, in this process or a later one.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import mlflow
from mlflow.tracking import MlflowClient

from model import TabClustNet
from model.checkpoint import read_checkpoint, save_checkpoint
from model.lineage import inherited_lineage
from pipeline.config import TrainConfig, adopt_init_checkpoint, config_from_dict, config_to_dict, flatten
from pipeline.prior_stream import READ_CPUS, StreamFactory, resume_point, stream_execution_options
from pipeline.tracking import setup_tracking
from pipeline.train_loop import MlflowSink, run_local, train_loop_per_worker
from pipeline.train_state import load_train_state

logger = logging.getLogger(__name__)

RUN_FILE = "pretrain.json"


@dataclass(frozen=True)
class RunOptions:
    """Where a run writes and how it is driven (not part of what it computes).

    ``backend="local"`` trains in this process without Ray (same step code, see ``train_loop.run_local``).
    ``placement_strategy`` places the Ray Train workers: ``"PACK"`` (Ray's default: as few nodes as fit them) or
    ``"SPREAD"`` (over as many nodes as possible); each worker's node is an MLflow tag ``ray.node_id.rank<i>``.
    """

    storage_path: str = "runs"
    run_name: str | None = None
    resume: bool = False
    tracking_uri: str | None = None
    experiment: str = "tabclustpfn"
    output: str | None = None
    registered_model_name: str | None = "tabclustpfn"  # None or "": log the model without registering it
    backend: Literal["ray", "local"] = "ray"
    progress_interval_s: float = 30.0
    placement_strategy: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "PACK"


@dataclass
class PretrainResult:
    """Outcome of :func:`pretrain`."""

    run_dir: Path
    run_id: str
    checkpoint: Path
    model_uri: str
    metrics: dict[str, float]


def absolute_tracking_uri(uri: str) -> str:
    """Make a relative ``sqlite:///file`` absolute, so Ray workers (other working directories) reach the same file."""
    if uri.startswith("sqlite:///") and not uri.startswith("sqlite:////"):
        return "sqlite:///" + str(Path(uri[len("sqlite:///"):]).resolve())
    return uri


def load_run_config(storage_path: str, run_name: str) -> TrainConfig:
    """The TrainConfig a run was started with (from its ``pretrain.json``)."""
    path = Path(storage_path).resolve() / run_name / RUN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no run to resume at {path.parent}: check --storage-path and the run name")
    return config_from_dict(TrainConfig, json.loads(path.read_text())["config"])


def check_cpu_budget(cfg: TrainConfig, cluster_cpus: float) -> None:
    """Refuse a run whose Train workers and prior actors need more CPUs than the cluster has (it would hang)."""
    need = cfg.num_workers + cfg.stream.num_actors * cfg.stream.actor_cpus + READ_CPUS
    if need > cluster_cpus:
        raise ValueError(
            f"{cfg.num_workers} Train worker(s) (1 CPU each) + {cfg.stream.num_actors} prior actor(s) x "
            f"{cfg.stream.actor_cpus} CPU need {need:g} CPUs but the Ray cluster has {cluster_cpus:g}; use fewer "
            "workers or actors (--set stream.num_actors=1) or fractional actors (--set stream.actor_cpus=0.5)")


def build_trainer(cfg: TrainConfig, run_dir: Path, tracking_uri: str | None, run_id: str | None,
                  callbacks: list | None = None, placement_strategy: str = "PACK"):
    """The ``TorchTrainer`` of a run (DDP workers, prior stream, checkpoints and failure handling).

    ``callbacks``: Ray Train ``UserCallback``s, e.g. Tune's ``TuneReportCallback`` when a Tune trial drives it.
    ``placement_strategy``: ``ScalingConfig.placement_strategy`` of the workers (see :class:`RunOptions`).
    """
    import ray
    from ray.train import CheckpointConfig, DataConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    check_cpu_budget(cfg, ray.cluster_resources().get("CPU", 0.0))
    return TorchTrainer(
        train_loop_per_worker,
        train_loop_config={"train_config": cfg, "run_dir": str(run_dir), "tracking_uri": tracking_uri,
                           "run_id": run_id},
        scaling_config=ScalingConfig(num_workers=cfg.num_workers, use_gpu=cfg.use_gpu,
                                     placement_strategy=placement_strategy),
        datasets={"train": StreamFactory(cfg, str(run_dir))},
        dataset_config=DataConfig(execution_options=stream_execution_options(cfg.stream), enable_shard_locality=False),
        run_config=RunConfig(
            name=run_dir.name, storage_path=str(run_dir.parent),
            failure_config=FailureConfig(max_failures=cfg.max_failures),
            checkpoint_config=CheckpointConfig(num_to_keep=2), callbacks=callbacks,
        ),
    )


class _Progress(threading.Thread):
    """Logs a progress line from the MLflow run every ``interval`` seconds while workers train."""

    def __init__(self, client: MlflowClient, run_id: str, max_steps: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.client, self.run_id, self.max_steps, self.interval = client, run_id, max_steps, interval
        self.stop = threading.Event()

    def run(self) -> None:
        t0 = time.time()
        while not self.stop.wait(self.interval):
            try:
                hist = self.client.get_metric_history(self.run_id, "pin_loss")
                metrics = self.client.get_run(self.run_id).data.metrics
            except Exception as exc:  # a busy SQLite store: try again next time
                logger.debug("progress poll failed: %s", exc)
                continue
            if hist:
                logger.info("progress: step %d/%d  pin_loss %.4f  soft_ari %.3f  %.1f tasks/s  data wait %.1f%%  "
                            "(%.0fs)", max(m.step for m in hist), self.max_steps, metrics.get("pin_loss", float("nan")),
                            metrics.get("soft_ari", float("nan")), metrics.get("tasks_per_s", float("nan")),
                            100 * metrics.get("data_wait_fraction", float("nan")), time.time() - t0)


def _open_run(cfg: TrainConfig, options: RunOptions, run_dir: Path) -> tuple[TrainConfig, str, str]:
    """Create or reopen the run directory and its MLflow run -> (config, tracking uri, run id)."""
    record = run_dir / RUN_FILE
    if options.resume:
        saved = json.loads(record.read_text()) if record.is_file() else None
        if saved is None:
            raise FileNotFoundError(f"cannot resume: no {RUN_FILE} in {run_dir} (check --storage-path/run name)")
        uri = absolute_tracking_uri(options.tracking_uri or saved["tracking_uri"])
        setup_tracking(uri, options.experiment)
        old = config_from_dict(TrainConfig, saved["config"])
        data = lambda c: (c.model, c.seed, c.stream.kind, c.stream.prior, c.stream.size_buckets,  # noqa: E731
                          c.stream.curriculum_steps, c.stream.curriculum_n_start)
        if data(cfg) != data(old):
            raise ValueError("resume must keep the model, seed and prior of the run; change only the schedule "
                             "(e.g. max_steps) or the resources (workers, actors)")
        mlflow.start_run(run_id=saved["run_id"])
        # params are immutable in MLflow: record what this launch changed (e.g. max_steps) as tags
        new, before = flatten(config_to_dict(cfg)), flatten(saved["config"])
        mlflow.set_tags({"resumed_at": datetime.now().isoformat(timespec="seconds"),
                         **{f"resume.{k}": str(v) for k, v in new.items() if before.get(k) != v}})
        run_id = saved["run_id"]
    else:
        if record.exists():
            raise FileExistsError(f"run {run_dir.name!r} already exists in {run_dir.parent}: pass --resume to "
                                  "continue it or choose another run name")
        setup_tracking(options.tracking_uri, options.experiment)
        uri = absolute_tracking_uri(mlflow.get_tracking_uri())
        mlflow.set_tracking_uri(uri)
        run = mlflow.start_run(run_name=run_dir.name)
        run_id = run.info.run_id
        params = {k: str(v) for k, v in flatten(config_to_dict(cfg)).items()}
        keys = sorted(params)
        for i in range(0, len(keys), 100):
            mlflow.log_params({k: params[k] for k in keys[i:i + 100]})
        mlflow.set_tags({"global_batch": cfg.global_batch, "accum_steps": cfg.accum_steps, "backend": options.backend,
                         "run_dir": str(run_dir)})
    run_dir.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"run_id": run_id, "tracking_uri": uri, "config": config_to_dict(cfg)}, indent=1))
    return cfg, uri, run_id


def run_lineage(cfg: TrainConfig, run_name: str, step: int, state_meta: dict[str, Any],
                mlflow_start_ms: int | None) -> dict[str, Any]:
    """The ``lineage`` and ``total_tasks_seen`` of a finished run's checkpoint: the phases of its
    ``init_checkpoint`` (none from scratch) and this run as the last phase, as every other way of making a
    checkpoint records them (:mod:`model.lineage`), so ``jobs/lineage.py`` and the seed check of later
    continuations see it. ``wall_s`` is the time since the run's MLflow run began (resumed attempts included)."""
    lineage, inherited = (inherited_lineage(read_checkpoint(cfg.init_checkpoint)["metadata"])
                          if cfg.init_checkpoint else ([], 0))
    tasks = step * cfg.global_batch
    prior = cfg.stream.prior
    what = (f"Ray Train run ({'from ' + Path(cfg.init_checkpoint).name if cfg.init_checkpoint else 'from scratch'}"
            f"): {cfg.stream.kind} prior, N {prior.n_rows[0]}-{prior.n_rows[1]}, D {prior.n_features[0]}-"
            f"{prior.n_features[1]}, K {prior.n_clusters[0]}-{prior.n_clusters[1]}, {cfg.global_batch} tasks/step, "
            f"lr {cfg.optim.lr:g}")
    workers = int(state_meta.get("world_size", cfg.num_workers))
    phase = {"phase": len(lineage) + 1, "run": run_name, "steps": step, "tasks": tasks, "seed": cfg.seed,
             "wall_s": round(time.time() - mlflow_start_ms / 1000) if mlflow_start_ms else 0,
             "device": f"{workers} Ray Train worker(s), {state_meta.get('device', 'cuda' if cfg.use_gpu else 'cpu')}",
             "what": what}
    return {"lineage": [*lineage, phase], "total_tasks_seen": inherited + tasks}


def pretrain(cfg: TrainConfig, options: RunOptions = RunOptions()) -> PretrainResult:
    """Pretrain TabClustPFN, tracked in one MLflow run; return where the final model is.

    Parameters
    ----------
    cfg : TrainConfig
        What to train. When resuming, model, seed and stream must equal the saved ones (see
        :func:`load_run_config`); the schedule may change (e.g. a larger ``max_steps``): the learning rate then
        decays from where it is to the floor over the new remaining steps (``train_state.LrSchedule``), and changed
        optimizer settings (betas, eps, weight decay) apply from the resumed step on.
    options : RunOptions
        Storage, run name, resume, tracking, output and backend.

    Returns
    -------
    PretrainResult
        Run directory, MLflow run id, the final model checkpoint (loads in ``TabClustPFN(checkpoint=...)``), the
        registered pyfunc model's URI and the final metrics.
    """
    from pipeline.pyfunc import log_pyfunc_model

    name = options.run_name or f"pretrain-{datetime.now():%Y%m%d-%H%M%S}"
    run_dir = Path(options.storage_path).resolve() / name
    if not options.resume:
        cfg = adopt_init_checkpoint(cfg)
    cfg, uri, run_id = _open_run(cfg, options, run_dir)
    client = MlflowClient(uri)
    t0 = time.time()
    progress = None
    try:
        done, _ = resume_point(run_dir)
        if done >= cfg.max_steps:
            logger.info("run %s already trained to step %d; exporting the model only", name, done)
        elif options.backend == "local":
            run_local(cfg, run_dir=run_dir, log=MlflowSink(uri, run_id), device="cuda" if cfg.use_gpu else "cpu")
        else:
            progress = _Progress(client, run_id, cfg.max_steps, options.progress_interval_s)
            progress.start()
            result = build_trainer(cfg, run_dir, uri, run_id, placement_strategy=options.placement_strategy).fit()
            if result.error is not None:
                raise result.error
        done, directory = resume_point(run_dir)
        if directory is None:
            raise RuntimeError(f"training left no loadable checkpoint in {run_dir}; see the logs and rerun it")
        state = load_train_state(directory)
        if state["step"] < cfg.max_steps:
            raise RuntimeError(f"training stopped at step {state['step']} of {cfg.max_steps}; see the logs of "
                               f"{run_dir} and resume it with --resume {name}")
        net = TabClustNet(cfg.model)
        net.load_state_dict(state["model"])
        state_meta, metrics = state["metadata"], client.get_run(run_id).data.metrics
        output = Path(options.output).resolve() if options.output else run_dir / "model.pt"
        meta: dict[str, Any] = {
            **state_meta, "step": state["step"], "tasks_seen": state["step"] * cfg.global_batch,
            "mlflow_run_id": run_id, "session_wall_time_s": time.time() - t0, "train_config": config_to_dict(cfg),
            "final_metrics": {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))},
            **run_lineage(cfg, name, state["step"], state_meta, client.get_run(run_id).info.start_time),
        }
        save_checkpoint(output, net, meta)
        info = log_pyfunc_model(output, registered_model_name=options.registered_model_name or None)
        mlflow.set_tag("model_checkpoint", str(output))
        mlflow.end_run()
    except BaseException:
        mlflow.end_run(status="FAILED")
        raise
    finally:
        if progress is not None:
            progress.stop.set()
    logger.info("run %s finished: model %s, MLflow run %s", name, output, run_id)
    return PretrainResult(run_dir=run_dir, run_id=run_id, checkpoint=output, model_uri=info.model_uri,
                          metrics=meta["final_metrics"])

