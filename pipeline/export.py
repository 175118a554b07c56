"""Turn a run's newest training state into a model-format checkpoint (what ``TabClustPFN`` loads).

A run writes model-format weights when it finishes; this exports any intermediate state too, e.g. to continue
training in a new phase (``--init-checkpoint``) or to ship the best weights of a run that was stopped.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from model import ModelConfig, TabClustNet
from model.checkpoint import save_checkpoint
from pipeline.prior_stream import checkpoint_dir_name, latest_checkpoint_step
from pipeline.train_loop import load_train_state

logger = logging.getLogger(__name__)


def export_run(run_dir: str | Path, output: str | Path, *, step: int | None = None,
               metadata: dict[str, Any] | None = None) -> Path:
    """Write the weights of ``run_dir``'s checkpoint at ``step`` (default: the newest) to ``output``.

    The checkpoint's metadata records the source run, its step, the tasks it had seen and its training config,
    merged with ``metadata``.
    """
    run_dir = Path(run_dir)
    step = latest_checkpoint_step(run_dir) if step is None else step
    if not step:
        raise FileNotFoundError(f"no training checkpoint in {run_dir}")
    state = load_train_state(run_dir / checkpoint_dir_name(step))
    net = TabClustNet(ModelConfig.from_dict(state["model_config"]))
    net.load_state_dict(state["model"])
    train_config = state["train_config"]
    meta = {
        "source_run": run_dir.name,
        "step": int(state["step"]),
        "tasks_seen": int(state["step"]) * int(train_config.get("global_batch", 0)),
        "train_config": train_config,
        **(metadata or {}),
    }
    path = save_checkpoint(output, net, meta)
    logger.info("exported %s step %d to %s", run_dir, step, path)
    return path
