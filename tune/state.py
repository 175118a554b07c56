"""Tune's experiment state, kept resumable when the sweep's driver dies in the middle of writing it.

Ray Tune (2.x) rewrites ``experiment_state-<session>.json`` in place (truncate, then write) in its driver staging
folder and copies it to the experiment folder from a background thread, as often as every controller step. A
driver killed during the write or the copy leaves a torn file in the experiment folder, and ``Tuner.restore``
then logs "Failed to restore the run state" and *starts a new experiment* from an empty search space (one trial
without a config) instead of resuming: the sweep's finished trials are forgotten.

:class:`StateSnapshots` (a Tune callback) keeps the last complete copy of the newest session's state files in
``<experiment>/.tune-state/``; :func:`repair` runs before a restore, moves torn state files aside and puts the
complete copies back. A copy can be a step or two older than what the trials did since: a trial that finished
meanwhile is resumed by Tune, finds its ``trial.json`` finished and reports its saved scores without training
(see ``tune.driver.run_trial``).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from ray.tune import Callback

logger = logging.getLogger(__name__)

SNAPSHOT_DIR = ".tune-state"
TORN_DIR = "torn"
STATE_PREFIX = "experiment_state-"
#: The search algorithm's and the callbacks' state files of a session (cloudpickles, whatever their suffix).
SIDE_TEMPLATES = ("basic-variant-state-{}.json", "search_gen_state-{}.json", "searcher-state-{}.pkl",
                  "callback-states-{}.pkl")


def is_complete(name: str, data: bytes) -> bool:
    """Whether a Tune state file was written out whole: the experiment state parses as JSON; the other files are
    pickles, which end with pickle's STOP opcode."""
    if not data:
        return False
    if name.startswith(STATE_PREFIX):
        try:
            json.loads(data)
        except ValueError:
            return False
        return True
    return data.endswith(b".")


def newest_state(folder: Path) -> Path | None:
    """The newest session's experiment state file in ``folder`` (the one ``Tuner.restore`` reads), or None."""
    files = sorted(folder.glob(f"{STATE_PREFIX}*.json"))
    return files[-1] if files else None


def session_files(folder: Path, state: Path) -> list[Path]:
    """The experiment state file and the side files of the same session that exist in ``folder``."""
    session = state.name[len(STATE_PREFIX):-len(".json")]
    return [state] + [folder / t.format(session) for t in SIDE_TEMPLATES if (folder / t.format(session)).is_file()]


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def snapshot(experiment_dir: Path) -> bool:
    """Copy the newest session's state files into ``.tune-state/`` if every one of them is complete.

    Returns whether a copy was made. The side files are written before the experiment state, each atomically,
    so a copy interrupted half way still holds a complete (if older) experiment state.
    """
    state = newest_state(experiment_dir)
    if state is None:
        return False
    contents = {}
    for path in session_files(experiment_dir, state):
        data = _read(path)
        if data is None or not is_complete(path.name, data):
            return False  # being rewritten: the next step sees it whole
        contents[path.name] = data
    folder = experiment_dir / SNAPSHOT_DIR
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():  # one session's copy at a time: the newest
        if old.is_file() and old.name not in contents:
            old.unlink()
    for name in sorted(contents, key=lambda n: n.startswith(STATE_PREFIX)):
        _write_atomic(folder / name, contents[name])
    return True


def repair(experiment_dir: Path) -> list[str]:
    """Make the experiment state that ``Tuner.restore`` will read complete; returns what was done (empty if nothing
    needed doing).

    Torn state files are moved to ``.tune-state/torn/``; a missing or torn file is replaced by its complete copy from
    ``.tune-state/``. If the newest session has no complete copy, its torn files are only moved aside, so the restore
    reads the previous launch's state (complete, or itself replaced by its copy). Raises ``FileNotFoundError`` when
    no complete experiment state is left: the sweep cannot be resumed through Tune.
    """
    done: list[str] = []
    folder = experiment_dir / SNAPSHOT_DIR
    while (state := newest_state(experiment_dir)) is not None:
        torn = [p for p in session_files(experiment_dir, state) if not is_complete(p.name, _read(p) or b"")]
        if not torn:
            break
        for path in torn:
            copy = folder / path.name
            data = _read(copy)
            if data is not None and is_complete(path.name, data):
                (folder / TORN_DIR).mkdir(parents=True, exist_ok=True)
                os.replace(path, folder / TORN_DIR / path.name)
                _write_atomic(path, data)
                done.append(f"{path.name}: torn, replaced by its last complete copy")
        if any(not is_complete(p.name, _read(p) or b"") for p in session_files(experiment_dir, state)):
            (folder / TORN_DIR).mkdir(parents=True, exist_ok=True)
            for path in session_files(experiment_dir, state):
                os.replace(path, folder / TORN_DIR / path.name)
            done.append(f"{state.name}: torn and no complete copy of its session; moved aside")
    # The previous launch's copy, when the newest launch never got one and the folder lost the previous file.
    if newest_state(experiment_dir) is None:
        copies = newest_state(folder) if folder.is_dir() else None
        if copies is None:
            raise FileNotFoundError(f"no complete Tune experiment state in {experiment_dir}")
        for path in session_files(folder, copies):
            _write_atomic(experiment_dir / path.name, path.read_bytes())
        done.append(f"{copies.name}: restored from its last complete copy")
    return done


class StateSnapshots(Callback):
    """Tune callback: after each controller step whose experiment state changed, keep a complete copy of it.

    The experiment folder comes from the trials (so a sweep folder that was moved before a restore is followed).
    Cheap when nothing changed: one ``stat`` per step.
    """

    def __init__(self) -> None:
        self._seen: Any = None

    def on_step_end(self, iteration: int, trials: list, **info) -> None:
        if not trials:
            return
        experiment_dir = Path(trials[0].storage.experiment_fs_path)
        state = newest_state(experiment_dir) if experiment_dir.is_dir() else None
        if state is None:
            return
        try:
            st = state.stat()
        except OSError:
            return
        key = (state.name, st.st_mtime_ns, st.st_size)
        if key != self._seen and snapshot(experiment_dir):
            self._seen = key
