"""Give a checkpoint's K ranker calibrated probabilities over K: the temperature of its scores' softmax.

    python jobs/calibrate_k_ranker.py --out runs/k-ranker/calibrated.pt     # the shipped checkpoint's ranker

The temperature is fitted to the labelled K of the prior tables the ranker's fit held out (their records are read
from --records-dir, computed again only where missing), and its growth on tables with few distinct values to the
development suite's real tables (../shared/benchmarks/dev; none without it), so the weights and the choice of K
stay as they are; ``TabClustPFN.k_probabilities_`` then reads both (pipeline/k_ranker_fit.py,
``calibrate_k_ranker``). A ranker fitted by jobs/fit_k_ranker.py is calibrated already. Exit status 1 with a
message when the checkpoint has no ranker or cannot be read.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from model.checkpoint import CheckpointError
from model.estimator import default_checkpoint_path
from pipeline.k_ranker_fit import RankerFitConfig, calibrate_k_ranker


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    d = RankerFitConfig(checkpoint="", out="")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None, help="a checkpoint with a K ranker (default: the shipped one)")
    p.add_argument("--out", required=True, help="the checkpoint to write")
    p.add_argument("--records-dir", default=d.records_dir, help="record cache (default: %(default)s)")
    p.add_argument("--tables", type=int, default=d.tables, help="the ranker fit's tables (default: %(default)s)")
    p.add_argument("--val-tables", type=int, default=d.val_tables,
                   help="the last of them, which its fit held out (default: %(default)s)")
    p.add_argument("--workers", type=int, default=d.workers, help="processes computing records (default: %(default)s)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = parse_args(argv)
    try:
        summary = calibrate_k_ranker(str(args.checkpoint or default_checkpoint_path()), args.out,
                                     records_dir=args.records_dir, tables=args.tables, val_tables=args.val_tables,
                                     workers=args.workers)
    except (CheckpointError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
