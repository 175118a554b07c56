"""Average the weights of runs continued from one parent into one checkpoint (a "model soup").

    python jobs/average_checkpoints.py runs/a/model.pt runs/b/model.pt --out runs/soup/model.pt
    python jobs/average_checkpoints.py A B --weights 2 1 --out C --note "why"

The runs must share the architecture (model config); averaging helps runs fine-tuned from the same weights on
different prior tasks, not unrelated runs, so compare the result (``benchmarks/compare_checkpoints.py``) before
shipping it. The output's lineage keeps the shared parent's phases once and records each run's phases as a
branch of one ``average`` phase. Exit status 1 with a message on unusable or mismatched checkpoints.
"""

from __future__ import annotations

import argparse
import logging
import sys

from model.checkpoint import CheckpointError, save_checkpoint
from model.lineage import average_checkpoints


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoints", nargs="+", help="two or more model checkpoints of one architecture")
    p.add_argument("--out", required=True, help="output checkpoint path")
    p.add_argument("--weights", type=float, nargs="+", default=None, help="mixing weights (default: equal)")
    p.add_argument("--note", default="", help="what this average is, for the lineage")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    weights = args.weights or [1.0] * len(args.checkpoints)
    try:
        net, metadata = average_checkpoints(args.checkpoints, weights, note=args.note)
    except (CheckpointError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    save_checkpoint(args.out, net, metadata)
    return 0


if __name__ == "__main__":
    sys.exit(main())
