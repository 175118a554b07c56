"""Print how a checkpoint was trained: its lineage metadata as a Markdown table.

    python jobs/lineage.py                              # the shipped model/weights/tabclustpfn-small.pt
    python jobs/lineage.py runs/small-1/model.pt

One row per phase; the runs an averaged phase combines follow it as its branches (``8.1``, ``8.2``, ...; a branch
that is itself an average lists its own runs under it). The file is read with ``model.checkpoint.load_checkpoint``
(``torch.load(weights_only=True)``, sha256 checked). Exit status 1 when the checkpoint cannot be read.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any, Iterator

from model.checkpoint import CheckpointError, load_checkpoint, weights_sha256
from model.estimator import default_checkpoint_path

WHAT_CHARS = 110  # the rest of a long description stays in the file
COLUMNS = ("phase", "run", "device", "steps", "tasks", "wall", "seed", "what")


def _wall(seconds: float) -> str:
    return "-" if not seconds else f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 60:.0f} min"


def _phase_rows(phase: dict[str, Any], label: str) -> Iterator[dict[str, str]]:
    what = str(phase.get("what", "")).replace("|", "/")
    yield {"phase": label, "run": str(phase.get("run", "")), "device": str(phase.get("device", "")),
           "steps": f"{int(phase.get('steps', 0)):,}", "tasks": f"{int(phase.get('tasks', 0)):,}",
           "wall": _wall(float(phase.get("wall_s", 0))), "seed": str(phase.get("seed", "")),
           "what": what if len(what) <= WHAT_CHARS else what[: WHAT_CHARS - 3] + "..."}
    for b, branch in enumerate(phase.get("branches", []), 1):
        for i, sub in enumerate(branch):
            yield from _phase_rows(sub, f"{label}.{b}" + (chr(ord("a") + i) if len(branch) > 1 else ""))


def rows(lineage: list[dict[str, Any]]) -> Iterator[dict[str, str]]:
    """Table rows of ``lineage``, depth first: phase 8, then its branches 8.1, 8.2 (8.2a, 8.2b when a branch
    holds several phases in turn), and so on down."""
    for index, phase in enumerate(lineage, 1):
        yield from _phase_rows(phase, str(phase.get("phase", index)))


def lineage_table(path: str | Path) -> str:
    """The Markdown lines this job prints for the checkpoint at ``path``."""
    path = Path(path)
    net, meta = load_checkpoint(path)
    params = sum(p.numel() for p in net.parameters())
    lines = [f"Checkpoint `{path}`: weights sha256 `{weights_sha256(net.state_dict())}` (file sha256 "
             f"`{hashlib.sha256(path.read_bytes()).hexdigest()}`); {params / 1e6:.2f} M parameters; "
             f"{int(meta.get('total_tasks_seen', 0)):,} tasks seen in all.", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row[c] for c in COLUMNS) + " |" for row in rows(meta.get("lineage", []))]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", nargs="?", default=None, help="checkpoint file (default: the shipped one)")
    args = p.parse_args(argv)
    try:
        print(lineage_table(args.checkpoint or default_checkpoint_path()))
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
