"""Export a pretraining run's newest (or a chosen) training state as a model-format checkpoint.

    python jobs/export_model.py runs/small-1 runs/small-1/export.pt
    python jobs/export_model.py runs/small-1 phase1.pt --step 400     # then: pretrain.py --init-checkpoint phase1.pt

A run keeps its two newest training states, so ``--step`` can name only those.

exit status: 0 when written, 2 for an unusable option (as argparse), 1 when the run cannot be exported.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from pipeline.export import export_run


def _step(text: str) -> int:
    """``--step``: a positive checkpoint step."""
    try:
        step = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a checkpoint step such as 400, got {text!r}") from None
    if step < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (a checkpoint step of the run), got {step}; leave --step "
                                         "out to export the newest")
    return step


def _json_object(text: str) -> dict:
    """``--metadata``: a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"is not valid JSON ({exc}); give an object such as "
                                         "'{\"note\": \"phase 1\"}'") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object such as '{{\"note\": \"phase 1\"}}', got "
                                         f"{type(value).__name__} {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a run directory of jobs/pretrain.py (holds checkpoint_step* folders)")
    p.add_argument("output", help="model checkpoint file to write")
    p.add_argument("--step", type=_step, help="checkpoint step to export (default: the newest)")
    p.add_argument("--metadata", type=_json_object, default={},
                   help="JSON object merged into the checkpoint's metadata")
    args = p.parse_args(argv)
    if Path(args.output).is_dir():
        p.error(f"output {args.output!r} is a directory: give a file path, e.g. {str(Path(args.output, 'model.pt'))!r}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        path = export_run(args.run_dir, args.output, step=args.step, metadata=args.metadata)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
