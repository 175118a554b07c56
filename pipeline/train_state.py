"""A pretraining run's state: the learning-rate schedule, the network and optimizer it starts from, and the training
state it saves and resumes from (``checkpoint_step*/train_state.pt``, loaded ``weights_only``).

Shared by the Ray Train workers and the single-process path of :mod:`pipeline.train_loop`, by export
(:mod:`pipeline.export`) and by the sweeps. :func:`restore` is the one place a (re)started attempt decides where
it begins: the newest complete state of the run directory (:func:`pipeline.prior_stream.resume_point`), which is
also where the prior stream starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from model import TabClustNet
from model.checkpoint import load_checkpoint
from model.decoder import CosineHead
from pipeline.config import OptimConfig, TrainConfig, config_from_dict, config_to_dict
from pipeline.prior_stream import STATE_FILE, resume_point

logger = logging.getLogger(__name__)

STATE_FORMAT = 1


def lr_at(step: int, optim: OptimConfig, max_steps: int) -> float:
    """Learning rate of 0-based step ``step``: linear warm-up to ``optim.lr``, then cosine to the floor."""
    return LrSchedule.fresh(optim, max_steps)(step)


@dataclass(frozen=True)
class LrSchedule:
    """The step schedule of a run: linear warm-up to ``peak``, then a cosine down to ``floor`` at ``max_steps``.

    Saved in every training state. A resume that changes ``max_steps`` or the optimiser's rates after the
    warm-up starts a new segment at the step it resumes from: a cosine from the rate the saved schedule had
    reached there (``start_lr``) down to the new floor at the new ``max_steps``. The rate never jumps (without
    this, doubling ``max_steps`` of a nearly decayed run would put it back near the peak), and warm-up happens
    only at the run's true start; so a run extended after it reached its floor stays there (for a fresh warm-up
    start a new run with ``--init-checkpoint``).
    """

    peak: float
    floor: float
    warmup_steps: int
    max_steps: int
    start: int = 0
    start_lr: float | None = None  # None: the original segment (warm-up, then cosine from ``peak``)

    @classmethod
    def fresh(cls, optim: OptimConfig, max_steps: int) -> LrSchedule:
        """The schedule of a run started at step 0."""
        return cls(optim.lr, optim.lr * optim.min_lr_ratio, optim.warmup_steps, max_steps)

    def __call__(self, step: int) -> float:
        if self.start_lr is None:
            if step < self.warmup_steps:
                return self.peak * (step + 1) / self.warmup_steps
            top, first = self.peak, self.warmup_steps
        else:
            top, first = self.start_lr, self.start
        progress = min(1.0, max(0.0, (step - first) / max(1, self.max_steps - first)))
        return self.floor + (top - self.floor) * 0.5 * (1.0 + math.cos(math.pi * progress))

    def resumed(self, step: int, optim: OptimConfig, max_steps: int) -> LrSchedule:
        """This schedule continued at ``step`` by a session configured with ``optim`` and ``max_steps``."""
        new = LrSchedule.fresh(optim, max_steps)
        if self.start_lr is None and step < min(self.warmup_steps, new.warmup_steps):
            return new  # still warming up: the warm-up does not depend on max_steps
        if (new.peak, new.floor, new.max_steps) == (self.peak, self.floor, self.max_steps):
            return self
        cont = LrSchedule(new.peak, new.floor, new.warmup_steps, max_steps, start=step, start_lr=self(step))
        logger.info("schedule changed at step %d (max_steps %d -> %d): the learning rate decays from %.3g to %.3g "
                    "over the remaining steps", step, self.max_steps, max_steps, cont.start_lr, cont.floor)
        return cont


def cosine_lr(optim: OptimConfig, progress: float) -> float:
    """The cosine part of the schedule at ``progress`` in [0, 1] (clipped): ``optim.lr`` down to the floor."""
    progress = min(1.0, max(0.0, progress))
    floor = optim.lr * optim.min_lr_ratio
    return floor + (optim.lr - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def build_model(cfg: TrainConfig, load_init: bool = True) -> TabClustNet:
    """A fresh network whose initial weights depend on ``cfg.seed`` only (global RNG state is restored), or those
    of ``cfg.init_checkpoint``. ``load_init=False`` skips that file: a resumed run restores its own training state
    over it, and the file may be gone by then."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        net = TabClustNet(cfg.model)
    if cfg.init_checkpoint and load_init:
        init = load_checkpoint(cfg.init_checkpoint)[0].without_k_ranker()  # training never trains a ranker
        if init.cfg != cfg.model:
            raise ValueError(f"--init-checkpoint {cfg.init_checkpoint} has model config {init.cfg}, but the run "
                             f"uses {cfg.model}; build the run's model config from the checkpoint")
        net.load_state_dict(init.state_dict())
    return net


def build_optimizer(net: nn.Module, optim: OptimConfig) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices and embeddings only (biases, norms and 1-d parameters are not decayed)."""
    decay = [p for p in net.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in net.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": optim.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=optim.lr, betas=tuple(optim.betas), eps=optim.eps)


def restore_optimizer(optimizer: torch.optim.Optimizer, saved: dict[str, Any], optim: OptimConfig) -> None:
    """Load a saved optimizer state, keeping this launch's betas, eps and weight decay.

    ``load_state_dict`` also restores the saved hyperparameters, which would silently ignore a resume that
    changes them (while the run is tagged as changed); the moments and step counts are what must carry over.
    The groups are those of :func:`build_optimizer` (decayed, then not decayed); the schedule sets the rate.
    """
    optimizer.load_state_dict(saved)
    for group, decay in zip(optimizer.param_groups, (optim.weight_decay, 0.0)):
        group.update(betas=tuple(optim.betas), eps=optim.eps, weight_decay=decay)


@torch.no_grad()
def bound_temperature(net: nn.Module, max_temperature: float | None) -> None:
    """Clamp every cosine head's learnable temperature to at most ``max_temperature`` (None: leave it)."""
    if max_temperature is None:
        return
    for module in net.modules():
        if isinstance(module, CosineHead):
            module.log_tau.clamp_(max=math.log(max_temperature))


def save_train_state(directory: str | Path, net: nn.Module, optimizer: torch.optim.Optimizer, step: int,
                     cfg: TrainConfig, metadata: dict[str, Any], schedule: LrSchedule | None = None) -> Path:
    """Write model (unwrapped), optimizer, step, config and LR schedule to ``directory/train_state.pt``
    (weights_only-safe).

    The bytes reach the disk (fsync) before the rename, so a power loss cannot leave a short file under the
    final name (a rename is atomic, but may reach the disk before the data it names).
    """
    path = Path(directory) / STATE_FILE
    tmp = path.with_name(f".{STATE_FILE}.tmp")
    schedule = schedule or LrSchedule.fresh(cfg.optim, cfg.max_steps)
    with open(tmp, "wb") as f:
        torch.save({"format": STATE_FORMAT, "step": step, "model": net.state_dict(),
                    "optimizer": optimizer.state_dict(), "model_config": cfg.model.to_dict(),
                    "train_config": config_to_dict(cfg), "metadata": metadata,
                    "schedule": dataclasses.asdict(schedule)}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # a crash never leaves a half-written state under the final name
    with contextlib.suppress(OSError):  # make the rename itself durable (directories cannot be opened everywhere)
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return path


def load_train_state(directory: str | Path) -> dict[str, Any]:
    """Read what :func:`save_train_state` wrote (on CPU)."""
    path = Path(directory) / STATE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"no {STATE_FILE} in checkpoint directory {directory}")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if state.get("format") != STATE_FORMAT:
        raise ValueError(f"{path}: training state format {state.get('format')!r}, expected {STATE_FORMAT}")
    return state


@dataclass
class Restored:
    """Where a (re)started training attempt begins: network, saved state (None: a fresh run), step, schedule."""

    net: TabClustNet
    state: dict[str, Any] | None
    start: int
    schedule: LrSchedule


def restore(cfg: TrainConfig, run_dir: str | Path | None) -> Restored:
    """Build the network and restore the newest complete training state of ``run_dir`` (the stream's start).

    The init checkpoint is read only by a fresh run: a resumed one restores its own weights (and the file may be
    gone by then).
    """
    _, directory = resume_point(run_dir)
    state = load_train_state(directory) if directory is not None else None
    net = build_model(cfg, load_init=state is None)
    if state is None:
        return Restored(net, None, 0, LrSchedule.fresh(cfg.optim, cfg.max_steps))
    if state["model_config"] != cfg.model.to_dict():
        raise ValueError("the checkpoint's model config differs from the run's; resume with the saved config")
    net.load_state_dict(state["model"])
    start = int(state["step"])
    if "schedule" in state:
        saved = LrSchedule(**state["schedule"])
    else:  # states written before the schedule was saved: the step schedule of their config
        old = state["train_config"]
        saved = LrSchedule.fresh(config_from_dict(OptimConfig, old["optim"]), int(old["max_steps"]))
    logger.info("resuming from %s (step %d)", directory, start)
    return Restored(net, state, start, saved.resumed(start, cfg.optim, cfg.max_steps))
