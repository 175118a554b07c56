"""One checkpoint's partition network with another checkpoint's CIN copied in (a graft, no training).

    python jobs/graft_cin.py runs/soup121/model.pt model/weights/tabclustpfn-small.pt --out runs/soup121-graft/model.pt

The two must share the model config. Use it when a network continued from the shipped weights should keep the
shipped CIN (fitted to the parent's partitions) instead of a refit; compare the result with
``benchmarks/compare_checkpoints.py`` before shipping it. The lineage is the partition network's plus one
``graft-cin`` phase naming the CIN's file and the sha256 of its weights. Exit status 1 with a message on unusable
or mismatched checkpoints.
"""

from __future__ import annotations

import argparse
import logging
import sys

from model.checkpoint import CheckpointError, save_checkpoint
from model.lineage import graft_cin


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("partitions", help="checkpoint whose weights outside the CIN are kept")
    p.add_argument("cin_source", help="checkpoint whose CIN weights are copied in")
    p.add_argument("--out", required=True, help="output checkpoint path")
    p.add_argument("--note", default="", help="what this graft is, for the lineage")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    try:
        net, metadata = graft_cin(args.partitions, args.cin_source, note=args.note)
    except CheckpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    save_checkpoint(args.out, net, metadata)
    return 0


if __name__ == "__main__":
    sys.exit(main())
