"""The pretraining loop: one step function shared by the Ray Train workers and the single-process path.

``train_step`` does one optimisation step (gradient accumulation over micro-batches, DDP ``no_sync`` on all but
the last, bf16 autocast on GPU, clipping, AdamW with the learning rate of :func:`pipeline.train_state.lr_at`).
``run_steps`` drives it from an iterator of stream rows and calls back for logging, validation and checkpoints.
``train_loop_per_worker`` is the Ray Train entry point; :func:`run_local` runs the same loop in this process
with an in-process prior generator (debugging, CPU training). What a run starts from and saves (schedule,
optimizer, training state, resume) is :mod:`pipeline.train_state`.

Step numbering: ``step`` counts completed optimisation steps. The step being computed has stream index
``step`` (0-based); metrics and checkpoints are labelled with the count after it, ``step + 1``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch
from torch import nn

from model import TabClustNet
from model.batching import to_torch
from model.objective import compute_losses
from pipeline.config import TrainConfig
from pipeline.prior_stream import CHECKPOINT_PREFIX, StreamLayout, checkpoint_dir_name, iter_local_rows, unpack_rows
from pipeline.train_state import (bound_temperature, build_optimizer, lr_at, restore, restore_optimizer,
                                  save_train_state)

logger = logging.getLogger(__name__)

FAULT_MARKER = "fault_injected"


class InjectedFault(RuntimeError):
    """The test-only crash of ``TrainConfig.fault_step``."""


def ddp_kwargs(cfg: TrainConfig) -> dict[str, Any]:
    """DDP options of a run: with ``cin_weight`` or ``pin_weight`` 0 that part's parameters get no gradient, which
    DDP refuses at the next step unless it searches for unused parameters (a cost per step, so only then)."""
    head_off = cfg.objective.cin_weight == 0 or cfg.objective.pin_weight == 0
    return {"find_unused_parameters": True} if head_off else {}


def autocast_for(device: torch.device, precision: str = "bf16") -> contextlib.AbstractContextManager:
    """bf16 autocast on CUDA when ``precision == "bf16"``; nothing otherwise (CPU, or fp32 on CUDA)."""
    if device.type == "cuda" and precision == "bf16":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, micro_batches: Sequence[dict[str, torch.Tensor]],
               step: int, cfg: TrainConfig, device: torch.device, lr: float | None = None) -> dict[str, float]:
    """One optimisation step over this worker's micro-batches; returns metrics averaged over all workers.

    The loss of each micro-batch (a mean over its tasks) is divided by their number, so with DDP averaging the
    gradient is the mean over the global batch however it is split into workers and micro-batches. ``lr``
    overrides the step schedule :func:`pipeline.train_state.lr_at` (e.g. a schedule driven by a time budget).
    """
    lr = lr_at(step, cfg.optim, cfg.max_steps) if lr is None else lr
    for group in optimizer.param_groups:
        group["lr"] = lr
    net = getattr(model, "module", model)  # DDP wraps the network
    bound_temperature(net, cfg.optim.max_temperature)  # also bounds the weights a run starts from
    optimizer.zero_grad(set_to_none=True)
    sums: dict[str, float] = {}
    last = len(micro_batches) - 1
    for i, batch in enumerate(micro_batches):
        sync = contextlib.nullcontext() if i == last or not hasattr(model, "no_sync") else model.no_sync()
        with sync:
            with autocast_for(device, cfg.precision):
                out = compute_losses(model, batch, cfg.objective, step)
            (out["loss"] / len(micro_batches)).backward()
        for key, value in out.items():
            sums[key] = sums.get(key, 0.0) + float(value.detach())
    norms = [torch.nn.utils.clip_grad_norm_(group, cfg.optim.grad_clip) for group in clip_groups(model, cfg)]
    grad_norm = torch.linalg.vector_norm(torch.stack(norms)) if len(norms) > 1 else norms[0]
    finite = bool(torch.isfinite(grad_norm))  # the same on every rank: gradients are all-reduced
    if finite:
        optimizer.step()
        bound_temperature(net, cfg.optim.max_temperature)  # the saved weights stay within the bound
    else:  # one bad batch (or a bf16 overflow) must not turn every weight into NaN
        logger.warning("step %d: non-finite gradient norm, update skipped", step)
        optimizer.zero_grad(set_to_none=True)
    keys = sorted(sums)
    vec = torch.tensor([sums[k] / len(micro_batches) for k in keys], dtype=torch.float64)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        vec = vec.to(device)
        torch.distributed.all_reduce(vec)
        vec = vec.cpu() / torch.distributed.get_world_size()
    metrics = dict(zip(keys, vec.tolist()))
    metrics.update(lr=lr, grad_norm=float(grad_norm), skipped=float(not finite))
    if len(norms) > 1:
        metrics["grad_norm_cin"] = float(norms[1])
    return metrics


def clip_groups(model: nn.Module, cfg: TrainConfig) -> list[list[nn.Parameter]]:
    """Parameter groups whose gradients are clipped separately: with the decoupled objective the partition network
    and CIN, so that CIN's gradient cannot shrink the PIN's step through a shared norm (the CIN already sees only
    detached partitions); with the additive objective one group, as the two losses are one objective there."""
    net = getattr(model, "module", model)  # DDP wraps the network
    params = [p for p in net.parameters() if p.requires_grad]
    if cfg.objective.coupling != "decoupled" or not hasattr(net, "cin"):
        return [params]
    cin = {id(p) for p in net.cin.parameters()}
    return [[p for p in params if id(p) not in cin], [p for p in params if id(p) in cin]]


@dataclass
class LoopHooks:
    """Callbacks of :func:`run_steps`. ``log`` and ``validate`` run on rank 0 only; ``checkpoint`` on every rank."""

    log: Callable[[int, dict[str, float]], None] = lambda step, metrics: None
    validate: Callable[[int], dict[str, float]] | None = None
    checkpoint: Callable[[int, dict[str, float]], None] = lambda step, metrics: None
    fault_marker: Path | None = None
    history: list[dict[str, float]] = field(default_factory=list)
    #: ``time.monotonic()`` after which the loop stops early (checkpointing the last finished step); None: never.
    deadline: float | None = None
    #: ``lr(step)`` replacing the step schedule (e.g. :class:`pipeline.budget.TimeCosine`); None: the step schedule.
    lr: Callable[[int], float] | None = None


def _next_step_batches(rows: Iterator[dict[str, np.ndarray]], accum: int, rank: int,
                       device: torch.device) -> tuple[list[dict[str, torch.Tensor]], int, float]:
    """Pull ``accum`` rows -> (torch micro-batches, stream step of the first, seconds spent waiting)."""
    batches, wait, first_step = [], 0.0, -1
    for a in range(accum):
        t0 = time.perf_counter()
        try:
            row = next(rows)
        except StopIteration:
            raise RuntimeError("the prior stream ended before max_steps; it was built for fewer steps") from None
        wait += time.perf_counter() - t0
        if int(row["rank"]) != rank or int(row["accum_index"]) != a:
            raise RuntimeError(f"stream row for rank {int(row['rank'])}/micro-batch {int(row['accum_index'])} "
                               f"reached rank {rank} at micro-batch {a}: the stream layout was not preserved")
        if a == 0:
            first_step = int(row["step"])
        batches.append(to_torch(row, device))
    return batches, first_step, wait


def run_steps(model: nn.Module, net: TabClustNet, optimizer: torch.optim.Optimizer,
              rows: Iterator[dict[str, np.ndarray]], cfg: TrainConfig, start_step: int, device: torch.device,
              rank: int = 0, world_size: int = 1, hooks: LoopHooks | None = None) -> dict[str, float]:
    """Train from ``start_step`` to ``cfg.max_steps`` (or ``hooks.deadline``); returns the last step's metrics.

    ``model`` is what the forward pass goes through (a DDP wrapper or ``net`` itself), ``net`` the unwrapped
    network. Rows must arrive as the stream layout deals them to ``rank``.
    """
    hooks = hooks or LoopHooks()
    accum = cfg.global_batch // (cfg.micro_batch * world_size)
    model.train()
    metrics: dict[str, float] = {}
    t_run = time.perf_counter()
    for step in range(start_step, cfg.max_steps):
        if (cfg.fault_step == step + 1 and rank == world_size - 1 and hooks.fault_marker is not None
                and not hooks.fault_marker.exists()):
            hooks.fault_marker.touch()
            raise InjectedFault(f"injected fault before step {step + 1} (test hook TrainConfig.fault_step)")
        t0 = time.perf_counter()
        batches, data_step, wait = _next_step_batches(rows, accum, rank, device)
        if data_step != step:  # the weights would train on another step's tasks (skipped or replayed data)
            raise RuntimeError(
                f"stream row of step {data_step} arrived at training step {step}: the prior stream and the restored "
                "weights disagree (both must start at pipeline.prior_stream.resume_point of the run directory)"
                if step == start_step else f"stream row of step {data_step} arrived at step {step}: rows out of order")
        metrics = train_step(model, optimizer, batches, step, cfg, device,
                             lr=hooks.lr(step) if hooks.lr is not None else None)
        elapsed = time.perf_counter() - t0
        metrics.update(tasks_per_s=cfg.global_batch / elapsed, data_wait_fraction=wait / elapsed,
                       step_time_s=elapsed)
        done = step + 1
        out_of_time = hooks.deadline is not None and time.monotonic() >= hooks.deadline and done < cfg.max_steps
        if rank == 0:
            if hooks.validate is not None and (done % cfg.val_every == 0 or done == cfg.max_steps or out_of_time):
                metrics.update(hooks.validate(done))
            if done % cfg.log_every == 0 or done == cfg.max_steps or out_of_time:
                hooks.log(done, metrics)
            hooks.history.append({"step": done, **metrics})
            if done % cfg.progress_every == 0 or done == cfg.max_steps:
                rate = (done - start_step) / (time.perf_counter() - t_run)
                eta = (cfg.max_steps - done) / max(rate, 1e-9)
                if hooks.deadline is not None:  # a budgeted run ends at its deadline, not at the step cap
                    eta = min(eta, max(0.0, hooks.deadline - time.monotonic()))
                logger.info("step %d/%d  pin_loss %.4f  soft_ari %.3f  k_acc %.2f  lr %.2e  %.1f tasks/s  "
                            "wait %.1f%%  eta %.0fs", done, cfg.max_steps, metrics["pin_loss"], metrics["soft_ari"],
                            metrics["k_acc"], metrics["lr"], metrics["tasks_per_s"],
                            100 * metrics["data_wait_fraction"], eta)
        if done % cfg.checkpoint_every == 0 or done == cfg.max_steps or out_of_time:
            hooks.checkpoint(done, metrics)
        if out_of_time:
            logger.warning("time budget reached: stopping at step %d of %d", done, cfg.max_steps)
            break
    return metrics


class MlflowSink:
    """Logs step metrics to an existing MLflow run, each step at most once.

    Steps up to the largest one already in the run's ``pin_loss`` history are skipped: after a crash, the steps
    redone since the last checkpoint keep the values logged the first time, so the history stays complete and
    free of duplicates.
    """

    def __init__(self, tracking_uri: str, run_id: str) -> None:
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri)
        self.run_id = run_id
        self.last_step = max((m.step for m in self.client.get_metric_history(run_id, "pin_loss")), default=0)

    def __call__(self, step: int, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        if step <= self.last_step:
            return
        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, float(v), now, step) for k, v in metrics.items()
                                                    if math.isfinite(float(v))])
        self.last_step = step


def tag_worker_node(tracking_uri: str, run_id: str, rank: int) -> None:
    """Tag the MLflow run with the Ray node this worker runs on (``ray.node_id.rank<rank>``): where each DDP rank
    ran, e.g. to check a ``SPREAD`` placement. A later attempt (restart, resume) overwrites it. A tracking failure is
    only a warning: it is a record, not part of the training."""
    import ray
    from mlflow.tracking import MlflowClient

    node_id = ray.get_runtime_context().get_node_id()
    try:
        MlflowClient(tracking_uri).set_tag(run_id, f"ray.node_id.rank{rank}", node_id)
    except Exception as exc:  # noqa: BLE001 - e.g. a busy SQLite store
        logger.warning("rank %d could not tag its node %s in MLflow: %s", rank, node_id, exc)


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """Ray Train entry point. ``config``: ``train_config`` (TrainConfig), ``run_dir``, ``tracking_uri``, ``run_id``.

    Resumes (model, optimizer, step, schedule) from :func:`pipeline.prior_stream.resume_point` of ``run_dir``,
    the newest complete checkpoint on disk, which is also where the prior stream starts; it includes checkpoints of
    other sessions or of ``run_local`` that Ray Train never recorded. Rank 0 logs to MLflow, validates and writes
    the checkpoints; every rank reports at checkpoint steps (a barrier in Ray Train). Every rank records its Ray
    node in the MLflow run (tag ``ray.node_id.rank<i>``, see :func:`tag_worker_node`).
    """
    import tempfile

    import ray.train
    import ray.train.torch

    cfg: TrainConfig = config["train_config"]
    run_dir = Path(config["run_dir"])
    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    if config.get("run_id"):
        tag_worker_node(config["tracking_uri"], config["run_id"], rank)
    device = ray.train.torch.get_device()
    resumed = restore(cfg, run_dir)
    net, start = resumed.net, resumed.start
    model = ray.train.torch.prepare_model(net, parallel_strategy_kwargs=ddp_kwargs(cfg))
    optimizer = build_optimizer(net, cfg.optim)
    if resumed.state is not None:
        restore_optimizer(optimizer, resumed.state["optimizer"], cfg.optim)
    logger.info("rank %d/%d starts at step %d on %s", rank, world, start, device)
    shard = ray.train.get_dataset_shard("train")
    rows = (r for b in shard.iter_batches(batch_size=None, prefetch_batches=cfg.stream.prefetch_batches)
            for r in unpack_rows(b))
    hooks = LoopHooks(fault_marker=run_dir / FAULT_MARKER, lr=resumed.schedule)
    if rank == 0:
        if config.get("run_id"):
            hooks.log = MlflowSink(config["tracking_uri"], config["run_id"])
        if cfg.val_tasks:
            from pipeline.validation import Validator

            validator = Validator(cfg.stream, cfg.val_tasks)
            hooks.validate = lambda step: validator.evaluate(net, device, cfg.precision)
    t_start = time.time()

    def checkpoint(step: int, metrics: dict[str, float]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            saved = None
            if rank == 0:
                meta = {"attempt_start_step": start, "world_size": world, "device": str(device),
                        "attempt_wall_time_s": time.time() - t_start, "tasks_seen": step * cfg.global_batch}
                save_train_state(tmp, net, optimizer, step, cfg, meta, resumed.schedule)
                saved = ray.train.Checkpoint.from_directory(tmp)
            ray.train.report({"step": step, **metrics}, checkpoint=saved, checkpoint_dir_name=checkpoint_dir_name(step))

    hooks.checkpoint = checkpoint
    run_steps(model, net, optimizer, rows, cfg, start, device, rank, world, hooks)


@dataclass
class LocalResult:
    """What :func:`run_local` returns: the trained network, its optimizer, the final step and per-step metrics."""

    net: TabClustNet
    optimizer: torch.optim.Optimizer
    step: int
    history: list[dict[str, float]]


def run_local(cfg: TrainConfig, *, run_dir: str | Path | None = None, log: Callable | None = None,
              prefetch_workers: int = 0, device: str | torch.device = "cpu", threads: int | None = 1,
              deadline: float | None = None, on_checkpoint: Callable | None = None,
              lr_schedule: Callable[[int], float] | None = None) -> LocalResult:
    """Pretrain in this process, without Ray: the same step function and data as one Ray Train worker.

    Parameters
    ----------
    cfg : TrainConfig
        ``num_workers`` must be 1 (the global batch is ``micro_batch * accum_steps``).
    run_dir : path, optional
        Where checkpoints go (``checkpoint_step*/train_state.pt``, the newest two kept); training resumes
        from the newest one there that loads (:func:`pipeline.prior_stream.resume_point`). None: no checkpoints.
    log : callable, optional
        ``log(step, metrics)``, e.g. an :class:`MlflowSink`.
    prefetch_workers : int
        Processes generating prior data ahead of the trainer (0: generate inline).
    device : str or torch.device
    threads : int or None
        Torch intra-op threads while training (restored afterwards), 1 like a Ray worker with one CPU; None
        keeps torch's setting. On a busy machine several threads can be many times slower than one.
    deadline : float, optional
        ``time.monotonic()`` at which to stop early; the last finished step is checkpointed (with ``run_dir``)
        and ``LocalResult.step`` says where training stopped.
    on_checkpoint : callable, optional
        ``on_checkpoint(step, net, history)`` after each training state is written (needs ``run_dir``).
    lr_schedule : callable, optional
        ``lr_schedule(step)`` -> learning rate, replacing the step schedule of ``cfg.optim``.

    Returns
    -------
    LocalResult
    """
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        return _run_local(cfg, run_dir, log, prefetch_workers, torch.device(device), deadline, on_checkpoint,
                          lr_schedule)
    finally:
        torch.set_num_threads(previous)


def _run_local(cfg: TrainConfig, run_dir: str | Path | None, log: Callable | None, prefetch_workers: int,
               device: torch.device, deadline: float | None = None,
               on_checkpoint: Callable | None = None, lr_schedule: Callable | None = None) -> LocalResult:
    """The body of :func:`run_local`."""
    from pipeline.validation import Validator

    if cfg.num_workers != 1:
        raise ValueError(f"run_local trains on one process; got num_workers={cfg.num_workers}")
    resumed = restore(cfg, run_dir)
    net, start = resumed.net, resumed.start
    net.to(device)
    optimizer = build_optimizer(net, cfg.optim)
    if resumed.state is not None:
        restore_optimizer(optimizer, resumed.state["optimizer"], cfg.optim)
    layout = StreamLayout(cfg.micro_batch, cfg.accum_steps, 1, start, cfg.max_steps)
    rows = iter_local_rows(cfg.stream, cfg.seed, layout, 0, cfg.model.max_categories, prefetch_workers)
    hooks = LoopHooks(log=log or (lambda step, metrics: None), deadline=deadline,
                      lr=lr_schedule or resumed.schedule)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True  # what is left in float32 runs on tensor cores
        torch.backends.cudnn.allow_tf32 = True
    if cfg.val_tasks:
        validator = Validator(cfg.stream, cfg.val_tasks)
        hooks.validate = lambda step: validator.evaluate(net, device, cfg.precision)
    if run_dir is not None:
        hooks.fault_marker = Path(run_dir) / FAULT_MARKER

        def checkpoint(step: int, metrics: dict[str, float]) -> None:
            target = Path(run_dir) / checkpoint_dir_name(step)
            target.mkdir(parents=True, exist_ok=True)
            save_train_state(target, net, optimizer, step, cfg, {"attempt_start_step": start, "world_size": 1,
                                                                 "device": str(device)}, resumed.schedule)
            for old in sorted(Path(run_dir).glob(f"{CHECKPOINT_PREFIX}*"))[:-2]:
                for f in old.iterdir():
                    f.unlink()
                old.rmdir()
            if on_checkpoint is not None:
                on_checkpoint(step, net, hooks.history)

        hooks.checkpoint = checkpoint
    run_steps(net, net, optimizer, rows, cfg, start, device, 0, 1, hooks)
    step = int(hooks.history[-1]["step"]) if hooks.history else start
    return LocalResult(net=net, optimizer=optimizer, step=step, history=hooks.history)
