"""At most ``n`` trials of a sweep train and score at once, however Tune started them.

Tune's ``max_concurrent_trials`` only limits the trials its search algorithm creates. ``Tuner.restore`` with
``restart_errored=True`` (how a sweep reruns its failed trials) puts every errored trial back as pending at once,
whatever that limit (ray-project/ray#40652), and Tune starts them all: on a small machine their Train workers, prior
actors and read tasks then each hold part of the CPUs and wait for the rest, for ever. So a trial takes a slot
before it builds its ``TorchTrainer`` and keeps it until it has scored.

A slot is an exclusive ``flock`` on ``<folder>/<i>.lock``: the kernel drops it when its holder's process ends, so a
trial that Tune stops or kills (ASHA, a dead driver) frees its slot without any clean-up code running.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from pathlib import Path
from typing import Iterator

logger = logging.getLogger(__name__)


def _try_lock(path: Path) -> int | None:
    """An open descriptor holding ``path``'s exclusive lock, or None if another holder has it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def slot(folder: str | Path, n: int, *, poll_s: float = 1.0, who: str = "") -> Iterator[int]:
    """Hold one of ``n`` slots in ``folder`` for the ``with`` block, waiting until one is free; yields its index.

    Parameters
    ----------
    folder : the sweep's slot folder (created if missing); every trial of the sweep must use the same one.
    n : how many holders at once (>= 1).
    poll_s : seconds between tries while every slot is taken.
    who : a name for the log line of a holder that has to wait.
    """
    if n < 1:
        raise ValueError(f"a sweep needs at least one slot, got n={n}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    waited = False
    while True:
        for index in range(n):
            fd = _try_lock(folder / f"{index}.lock")
            if fd is None:
                continue
            try:
                yield index
            finally:
                os.close(fd)  # closing the only descriptor releases the lock
            return
        if not waited:
            logger.info("%s waits: all %d slot(s) of the sweep are taken", who or "a trial", n)
            waited = True
        time.sleep(poll_s)
