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
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state = Path(state_dir) if state_dir is not None else out / "state"
    if state.exists() and any(state.iterdir()):
        raise FileExistsError(f"{state} already holds a run; a budgeted run starts fresh: use an empty directory")
    dev = torch.device(device)
    if probe_steps < 2:
        raise ValueError("probe_steps must be >= 2")
    if schedule not in ("time", "steps"):
        raise ValueError(f"schedule must be 'time' or 'steps', got {schedule!r}")

    val_s = 0.0
    if step_s is None:
        probe_cfg = dataclasses.replace(cfg, max_steps=probe_steps, val_tasks=0, checkpoint_every=probe_steps,
                                        seed=(cfg.seed + 1) % 2**22)
        probe = run_local(probe_cfg, prefetch_workers=workers, device=dev)
        step_times = sorted(h["step_time_s"] for h in probe.history[probe_steps // 2:])
        step_s = step_times[len(step_times) // 2]
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
    else:
        if not step_s > 0:
            raise ValueError(f"step_s must be > 0, got {step_s}")
        val_s = 5.0 * step_s if cfg.val_tasks else 0.0  # a validation pass costs a few steps
        startup_s = min(30.0, 0.1 * budget_s)  # worker pool and validation set; more for long runs
    left = budget_s - (time.monotonic() - t0) - reserve_s
    max_steps = size_run(left - startup_s, step_s, val_s, cfg.val_every, max_steps_cap)
    if max_steps < 1:
        raise RuntimeError(f"budget {budget_s:.0f}s leaves no time to train (step {step_s:.2f}s, "
                           f"validation {val_s:.1f}s, {left:.0f}s left after the probe)")
    optim = dataclasses.replace(cfg.optim, warmup_steps=min(cfg.optim.warmup_steps, max_steps // 5))
    # the loop stops at the deadline; the final validation and the export come after it
    deadline = t0 + budget_s - reserve_s / 2 - val_s
    estimate, lr_schedule = max_steps, None
    if schedule == "time":
        lr_schedule = TimeCosine(optim, end=deadline)
        cap = estimate * TIME_SCHEDULE_STEP_SLACK
        max_steps = min(cap, max_steps_cap) if max_steps_cap else cap
    run_cfg = dataclasses.replace(cfg, max_steps=max_steps, optim=optim)
    logger.info("probe: %.3fs/step (%d tasks), validation %.1fs, %.0fs left -> %s", step_s, cfg.global_batch,
                val_s, left, f"~{estimate} steps, cosine over the time to the deadline (at most {max_steps} steps)"
                if schedule == "time" else f"{max_steps} steps")

    lineage, prior_tasks = (inherited_lineage(read_checkpoint(cfg.init_checkpoint)["metadata"])
                            if cfg.init_checkpoint else ([], 0))
    history_path = out / HISTORY_FILE
    history_path.write_text("")
    started = time.time()

    def log(step: int, metrics: dict[str, float]) -> None:
        with history_path.open("a") as f:
            f.write(json.dumps({"step": step, **{k: float(v) for k, v in metrics.items()}}) + "\n")

    def metadata(step: int, history: list[dict[str, float]]) -> dict[str, Any]:
        vals = {str(int(h["step"])): round(h["val_ari_known_k"], 4) for h in history if "val_ari_known_k" in h}
        phase = {"phase": len(lineage) + 1, "run": out.name, "steps": step, "tasks": step * cfg.global_batch,
                 "seed": cfg.seed,  # a continuation must pick another one (adopt_init_checkpoint checks)
                 "wall_s": round(time.time() - started), "device": _device_name(dev),
                 "what": phase_note or f"budgeted run, objective {config_to_dict(cfg.objective)}",
                 "val_ari_known_k": vals}
        return {"step": step, "tasks_seen": step * cfg.global_batch,
                "total_tasks_seen": prior_tasks + step * cfg.global_batch, "lineage": [*lineage, phase],
                "train_config": config_to_dict(run_cfg), "hardware": _device_name(dev)}

    history: list[dict[str, float]] = []

    def on_checkpoint(step: int, net: torch.nn.Module, hist: list[dict[str, float]]) -> None:
        history[:] = hist
        save_checkpoint(out / MODEL_FILE, net, metadata(step, hist))

    result = run_local(run_cfg, run_dir=state, log=log, prefetch_workers=workers, device=dev, deadline=deadline,
                       on_checkpoint=on_checkpoint, lr_schedule=lr_schedule)
    save_checkpoint(out / MODEL_FILE, result.net, metadata(result.step, result.history))
    last_val = next((h for h in reversed(result.history) if "val_ari_known_k" in h), {})
    summary = {
        "device": _device_name(dev), "probe_step_s": step_s, "validation_s": val_s, "schedule": schedule,
        "planned_steps": estimate,
        "final_lr": result.history[-1]["lr"] if result.history else math.nan,
        "steps": result.step, "tasks": result.step * cfg.global_batch, "train_wall_s": time.time() - started,
        "total_wall_s": time.monotonic() - t0, "budget_s": budget_s,
        "mean_tasks_per_s": (result.step * cfg.global_batch) / max(1e-9, time.time() - started),
        "mean_data_wait_fraction": (sum(h["data_wait_fraction"] for h in result.history)
                                    / max(1, len(result.history))),
        "final_validation": {k: v for k, v in last_val.items() if k.startswith("val_")},
        "train_config": config_to_dict(run_cfg),
    }
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2))
    return summary
