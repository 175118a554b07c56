"""Export a pretraining run's newest (or a chosen) training state as a model-format checkpoint.

    python jobs/export_model.py runs/small-1 model/weights/tabclustpfn-small.pt
    python jobs/export_model.py runs/small-1 phase1.pt --step 400     # then: pretrain.py --init-checkpoint phase1.pt
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from pipeline.export import export_run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a run directory of jobs/pretrain.py (holds checkpoint_step* folders)")
    p.add_argument("output", help="model checkpoint file to write")
    p.add_argument("--step", type=int, help="checkpoint step to export (default: the newest)")
    p.add_argument("--metadata", default="{}", help="JSON object merged into the checkpoint's metadata")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        path = export_run(args.run_dir, args.output, step=args.step, metadata=json.loads(args.metadata))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
