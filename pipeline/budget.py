"""Pretraining for a wall-clock budget, in one process, without Ray or MLflow.

For a machine lent for minutes (a GPU box with neither Ray nor MLflow installed) the useful question is not "how
many steps" but "how much can I train in 8 minutes, with the learning rate fully decayed at the end". This
module answers it on the run's own data:

1. probe: a few steps of the real configuration (same model, batch, data pool and device) give the seconds per
   step, data waiting included, and one validation pass gives its cost;
2. size: the steps that fit the budget with their validations. With ``schedule="time"`` (the default) that is
   only an estimate: after the step warm-up, the cosine decays over the wall-clock time left (:class:`TimeCosine`)
   and training runs until the deadline, so the learning rate reaches its floor at the end however far off the
   probe was (on a shared CPU it can read twice the steady step time; ``max_steps`` is then a generous cap). With
   ``schedule="steps"``, ``max_steps`` is that estimate and the cosine of ``OptimConfig`` ends there;
3. train with :func:`pipeline.train_loop.run_local` (prefetching process pool, deadline), validate the final
   weights, then export the model checkpoint, the per-step history and a summary into ``out_dir``.

Continue in a later session with ``--init-checkpoint`` on the exported weights (a new run: fresh optimizer state
and warm-up) and a ``--seed`` no phase of its lineage used (each phase records its seed; a used one is refused,
as it would replay the same prior tasks), or with ``jobs/pretrain.py`` on Ray. The probe's steps are thrown away.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import platform
import time
from pathlib import Path
from typing import Any

import torch

from model.checkpoint import read_checkpoint, save_checkpoint
from model.lineage import inherited_lineage
from pipeline.config import TrainConfig, adopt_init_checkpoint, config_to_dict
from pipeline.train_loop import run_local
from pipeline.train_state import cosine_lr
from pipeline.validation import Validator

logger = logging.getLogger(__name__)

MODEL_FILE = "model.pt"
HISTORY_FILE = "history.jsonl"
SUMMARY_FILE = "summary.json"


def size_run(seconds: float, step_s: float, val_s: float, val_every: int, max_steps_cap: int | None = None) -> int:
    """Steps that fit ``seconds`` when each costs ``step_s`` and every ``val_every``-th adds ``val_s``."""
    if seconds <= 0 or step_s <= 0:
        return 0
    per_step = step_s + (val_s / val_every if val_s > 0 else 0.0)
    steps = int(math.floor(seconds / per_step))
    return min(steps, max_steps_cap) if max_steps_cap else steps


#: With the time schedule, ``max_steps`` (the prior stream's length) is this many times the probe's estimate.
TIME_SCHEDULE_STEP_SLACK = 10


class TimeCosine:
    """Learning rate by wall-clock time: linear warm-up over the first ``optim.warmup_steps`` steps, then a cosine
    from ``optim.lr`` to ``optim.lr * optim.min_lr_ratio`` over the time from the end of the warm-up to ``end``
    (a ``clock()`` value; the floor is held after it).

    Parameters
    ----------
    optim : OptimConfig
    end : float
        ``clock()`` at which the cosine reaches its floor.
    clock : callable
        Seconds, monotonic (default ``time.monotonic``).
    """

    def __init__(self, optim, end: float, clock=time.monotonic) -> None:
        self.optim, self.end, self.clock = optim, end, clock
        self.decay_start: float | None = None

    def __call__(self, step: int) -> float:
        o = self.optim
        if step < o.warmup_steps:
            return o.lr * (step + 1) / o.warmup_steps
        now = self.clock()
        if self.decay_start is None:
            self.decay_start = now
        return cosine_lr(o, (now - self.decay_start) / max(1e-9, self.end - self.decay_start))


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.machine()} CPU ({torch.get_num_threads()} torch threads)"


@dataclasses.dataclass(frozen=True)
class _StepCosts:
    """Seconds per training step and per validation pass, and the start-up the run adds before its first step."""

    step_s: float
    val_s: float
    startup_s: float


@dataclasses.dataclass(frozen=True)
class _Plan:
    """The sized run: its config, the probe's step estimate, the loop's deadline and the learning-rate schedule."""

    run_cfg: TrainConfig
    estimate: int
    deadline: float
    lr_schedule: TimeCosine | None
    left_s: float


def _fresh_run_dirs(out_dir: str | Path, state_dir: str | Path | None) -> tuple[Path, Path]:
    """``out_dir`` (created) and the training-state folder, which must not hold a run already."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state = Path(state_dir) if state_dir is not None else out / "state"
    if state.exists() and any(state.iterdir()):
        raise FileExistsError(f"{state} already holds a run; a budgeted run starts fresh: use an empty directory")
    return out, state


def _probe_step_costs(cfg: TrainConfig, probe_steps: int, workers: int, dev: torch.device,
                      t0: float) -> _StepCosts:
    """Time ``probe_steps`` steps of the real configuration (median of the second half) and one validation."""
    probe_cfg = dataclasses.replace(cfg, max_steps=probe_steps, val_tasks=0, checkpoint_every=probe_steps,
                                    seed=(cfg.seed + 1) % 2**22)
    probe = run_local(probe_cfg, prefetch_workers=workers, device=dev)
    step_times = sorted(h["step_time_s"] for h in probe.history[probe_steps // 2:])
    step_s = step_times[len(step_times) // 2]
    val_s = 0.0
    if cfg.val_tasks:
        validator = Validator(cfg.stream, cfg.val_tasks)
        t = time.monotonic()
        validator.evaluate(probe.net, dev, cfg.precision)
        val_s = time.monotonic() - t
    del probe
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    # the run spins up its own worker pool and validator again: one probe's worth of start-up
    startup_s = min(30.0, max(0.0, (time.monotonic() - t0) - probe_steps * step_s - val_s))
    return _StepCosts(step_s, val_s, startup_s)


def _given_step_costs(cfg: TrainConfig, step_s: float, budget_s: float) -> _StepCosts:
    """Costs from a step time measured by an earlier run, with estimates for validation and start-up."""
    if not step_s > 0:
        raise ValueError(f"step_s must be > 0, got {step_s}")
    val_s = 5.0 * step_s if cfg.val_tasks else 0.0  # a validation pass costs a few steps
    startup_s = min(30.0, 0.1 * budget_s)  # worker pool and validation set; more for long runs
    return _StepCosts(step_s, val_s, startup_s)


def _plan_run(cfg: TrainConfig, costs: _StepCosts, *, t0: float, budget_s: float, reserve_s: float,
              max_steps_cap: int | None, schedule: str) -> _Plan:
    """Size the run to the time left, shorten the warm-up to fit it and pick the learning-rate schedule."""
    left = budget_s - (time.monotonic() - t0) - reserve_s
    max_steps = size_run(left - costs.startup_s, costs.step_s, costs.val_s, cfg.val_every, max_steps_cap)
    if max_steps < 1:
        raise RuntimeError(f"budget {budget_s:.0f}s leaves no time to train (step {costs.step_s:.2f}s, "
                           f"validation {costs.val_s:.1f}s, {left:.0f}s left after the probe)")
    optim = dataclasses.replace(cfg.optim, warmup_steps=min(cfg.optim.warmup_steps, max_steps // 5))
    # the loop stops at the deadline; the final validation and the export come after it
    deadline = t0 + budget_s - reserve_s / 2 - costs.val_s
    estimate, lr_schedule = max_steps, None
    if schedule == "time":
        lr_schedule = TimeCosine(optim, end=deadline)
        cap = estimate * TIME_SCHEDULE_STEP_SLACK
        max_steps = min(cap, max_steps_cap) if max_steps_cap else cap
    run_cfg = dataclasses.replace(cfg, max_steps=max_steps, optim=optim)
    return _Plan(run_cfg, estimate, deadline, lr_schedule, left)


class _PhaseRecord:
    """This run's files in ``out``: the per-step history and the model checkpoint with its lineage phase."""

    def __init__(self, out: Path, cfg: TrainConfig, run_cfg: TrainConfig, dev: torch.device, note: str) -> None:
        self.out, self.cfg, self.run_cfg, self.dev, self.note = out, cfg, run_cfg, dev, note
        self.lineage, self.prior_tasks = (inherited_lineage(read_checkpoint(cfg.init_checkpoint)["metadata"])
                                          if cfg.init_checkpoint else ([], 0))
        self.history_path = out / HISTORY_FILE
        self.history_path.write_text("")
        self.started = time.time()

    def log(self, step: int, metrics: dict[str, float]) -> None:
        """Append one step's metrics to ``history.jsonl``."""
        with self.history_path.open("a") as f:
            f.write(json.dumps({"step": step, **{k: float(v) for k, v in metrics.items()}}) + "\n")

    def metadata(self, step: int, history: list[dict[str, float]]) -> dict[str, Any]:
        """Checkpoint metadata after ``step`` steps: the inherited lineage and this run as its last phase."""
        cfg, tasks = self.cfg, step * self.cfg.global_batch
        vals = {str(int(h["step"])): round(h["val_ari_known_k"], 4) for h in history if "val_ari_known_k" in h}
        phase = {"phase": len(self.lineage) + 1, "run": self.out.name, "steps": step, "tasks": tasks,
                 "seed": cfg.seed,  # a continuation must pick another one (adopt_init_checkpoint checks)
                 "wall_s": round(time.time() - self.started), "device": _device_name(self.dev),
                 "what": self.note or f"budgeted run, objective {config_to_dict(cfg.objective)}",
                 "val_ari_known_k": vals}
        return {"step": step, "tasks_seen": tasks, "total_tasks_seen": self.prior_tasks + tasks,
                "lineage": [*self.lineage, phase], "train_config": config_to_dict(self.run_cfg),
                "hardware": _device_name(self.dev)}

    def save(self, step: int, net: torch.nn.Module, history: list[dict[str, float]]) -> None:
        """Write the model checkpoint (at every training checkpoint, so a killed run still leaves weights)."""
        save_checkpoint(self.out / MODEL_FILE, net, self.metadata(step, history))


def _summary(result: Any, costs: _StepCosts, plan: _Plan, record: _PhaseRecord, *, schedule: str,
             budget_s: float, t0: float) -> dict[str, Any]:
    """What ``summary.json`` holds: costs, plan, steps and tasks, wall times, throughput, final validation."""
    batch, train_s = record.cfg.global_batch, time.time() - record.started
    last_val = next((h for h in reversed(result.history) if "val_ari_known_k" in h), {})
    return {
        "device": _device_name(record.dev), "probe_step_s": costs.step_s, "validation_s": costs.val_s,
        "schedule": schedule, "planned_steps": plan.estimate,
        "final_lr": result.history[-1]["lr"] if result.history else math.nan,
        "steps": result.step, "tasks": result.step * batch, "train_wall_s": train_s,
        "total_wall_s": time.monotonic() - t0, "budget_s": budget_s,
        "mean_tasks_per_s": (result.step * batch) / max(1e-9, train_s),
        "mean_data_wait_fraction": (sum(h["data_wait_fraction"] for h in result.history)
                                    / max(1, len(result.history))),
        "final_validation": {k: v for k, v in last_val.items() if k.startswith("val_")},
        "train_config": config_to_dict(plan.run_cfg),
    }


def pretrain_for_budget(cfg: TrainConfig, budget_s: float, out_dir: str | Path, *, device: str = "cpu",
                        workers: int = 0, probe_steps: int = 8, reserve_s: float = 20.0,
                        state_dir: str | Path | None = None, max_steps_cap: int | None = None,
                        phase_note: str = "", step_s: float | None = None,
                        schedule: str = "time") -> dict[str, Any]:
    """Probe, size and run a pretraining run that ends within ``budget_s`` seconds of this call.

    Parameters
    ----------
    cfg : TrainConfig
        The run; its ``max_steps`` is replaced by the sized value (``max_steps_cap`` bounds it).
    budget_s : float
        Wall-clock seconds for everything: probe, training, validations and export.
    out_dir : path
        Receives ``model.pt`` (model checkpoint, updated at every training checkpoint, so a killed run still
        leaves weights), ``history.jsonl`` and ``summary.json``.
    device : str
        ``"cuda"`` or ``"cpu"``.
    workers : int
        Prior-generating processes (0: inline).
    probe_steps : int
        Steps of the throughput probe; the median of the second half is the step time.
    reserve_s : float
        Seconds kept back for exporting and safety.
    state_dir : path, optional
        Where training states go (default ``out_dir/state``); a state can be larger than the model.
    step_s : float, optional
        Seconds per step measured by an earlier run of the same configuration on the same machine: skips the
        probe (whose steps share the CPUs with a worker pool that is still filling its queue, so it can read
        up to twice the steady-state step time).
    schedule : {"time", "steps"}
        ``time``: the cosine runs over the wall-clock time to the deadline (:class:`TimeCosine`) and training stops
        there; ``steps``: over the estimated number of steps (a misestimate ends early or is cut at the deadline
        before the learning rate has decayed).

    Returns
    -------
    dict
        The summary also written to ``summary.json``.
    """
    t0 = time.monotonic()
    cfg = adopt_init_checkpoint(cfg)  # the network it holds decides the model config
    out, state = _fresh_run_dirs(out_dir, state_dir)
    dev = torch.device(device)
    if probe_steps < 2:
        raise ValueError("probe_steps must be >= 2")
    if schedule not in ("time", "steps"):
        raise ValueError(f"schedule must be 'time' or 'steps', got {schedule!r}")

    costs = (_probe_step_costs(cfg, probe_steps, workers, dev, t0) if step_s is None
             else _given_step_costs(cfg, step_s, budget_s))
    plan = _plan_run(cfg, costs, t0=t0, budget_s=budget_s, reserve_s=reserve_s, max_steps_cap=max_steps_cap,
                     schedule=schedule)
    logger.info("probe: %.3fs/step (%d tasks), validation %.1fs, %.0fs left -> %s", costs.step_s, cfg.global_batch,
                costs.val_s, plan.left_s,
                f"~{plan.estimate} steps, cosine over the time to the deadline (at most {plan.run_cfg.max_steps} "
                "steps)" if schedule == "time" else f"{plan.run_cfg.max_steps} steps")

    record = _PhaseRecord(out, cfg, plan.run_cfg, dev, phase_note)
    result = run_local(plan.run_cfg, run_dir=state, log=record.log, prefetch_workers=workers, device=dev,
                       deadline=plan.deadline, on_checkpoint=record.save, lr_schedule=plan.lr_schedule)
    record.save(result.step, result.net, result.history)
    summary = _summary(result, costs, plan, record, schedule=schedule, budget_s=budget_s, t0=t0)
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
    return summary
