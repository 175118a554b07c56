"""Turn a run's newest training state into a model-format checkpoint (what ``TabClustPFN`` loads).

A run writes model-format weights when it finishes; this exports any intermediate state too, e.g. to continue
training in a new phase (``--init-checkpoint``) or to ship the best weights of a run that was stopped.
"""

from __future__ import annotations

import logging
import pickle
from pathlib import Path
from typing import Any

from model import ModelConfig, TabClustNet
from model.checkpoint import save_checkpoint
from pipeline.prior_stream import CHECKPOINT_PREFIX, STATE_FILE, checkpoint_dir_name, checkpoint_steps
from pipeline.train_state import load_train_state

logger = logging.getLogger(__name__)


def export_run(run_dir: str | Path, output: str | Path, *, step: int | None = None,
               metadata: dict[str, Any] | None = None) -> Path:
    """Write the weights of ``run_dir``'s checkpoint at ``step`` (default: the newest) to ``output``.

    The checkpoint's metadata records the source run, its step, the tasks it had seen and its training config,
    merged with ``metadata``.

    Raises
    ------
    FileNotFoundError
        The run has no checkpoint, or none at ``step`` (the message lists the steps it has).
    ValueError
        ``step`` < 1, ``output`` is a directory, ``metadata`` is not a dict, or the training state cannot be
        read (e.g. truncated by a crash while it was written): export an earlier step.
    """
    run_dir, output = Path(run_dir), Path(output)
    if step is not None and step < 1:
        raise ValueError(f"step must be >= 1 (a checkpoint step of the run), got {step}; leave it out for the "
                         "newest")
    if output.is_dir():
        raise ValueError(f"output {str(output)!r} is a directory: give a file path, e.g. "
                         f"{str(output / 'model.pt')!r}")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(f"metadata must be a dict (a JSON object), got {type(metadata).__name__}")
    steps = checkpoint_steps(run_dir)
    if step is None:
        step = steps[-1] if steps else 0
    if not step:
        raise FileNotFoundError(f"no training checkpoint in {run_dir} (no {CHECKPOINT_PREFIX}*/{STATE_FILE}): give "
                                "a run directory of jobs/pretrain.py")
    if step not in steps:
        raise FileNotFoundError(f"no training checkpoint at step {step} in {run_dir}; it has steps {steps}")
    try:
        state = load_train_state(run_dir / checkpoint_dir_name(step))
    except (RuntimeError, EOFError, pickle.UnpicklingError) as exc:  # torch.load on a truncated or corrupt file
        earlier = [s for s in steps if s < step]
        hint = f"export an earlier step with --step {earlier[-1]}" if earlier else "the run has no earlier step"
        reason = str(exc).split(". ")[0]
        raise ValueError(f"the training state of step {step} ({run_dir / checkpoint_dir_name(step) / STATE_FILE}) "
                         f"is unreadable, probably truncated by a crash while it was written ({reason}); "
                         f"{hint}") from None
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
