"""The ``jobs/`` scripts as modules, for tests that call their ``main`` (``jobs/`` is not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_job(script: str) -> ModuleType:
    """``jobs/<script>.py`` loaded as a fresh module, as ``python jobs/<script>.py`` would run it."""
    spec = importlib.util.spec_from_file_location(f"{script}_job", REPO / "jobs" / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
