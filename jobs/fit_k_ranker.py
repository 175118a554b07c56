"""Fit a checkpoint's K ranker (how K is chosen among the refined candidates) to its frozen network.

    python jobs/fit_k_ranker.py --out runs/k-ranker/model.pt                # a ranker for the shipped network
    python jobs/fit_k_ranker.py --checkpoint runs/g7/model.pt --out runs/g7-ranker/model.pt --seed 1
    python jobs/fit_k_ranker.py --out runs/k-ranker-v4/k-ranker-g2-s0.pt --feature-set 2 --candidates gmm

What it does and why: pipeline/k_ranker_fit.py (prior tables' records computed in local processes and kept under
--records-dir by the network's sha256, so a rerun computes only what is missing; then a small MLP fitted in a
minute). A checkpoint already carrying a ranker is refitted from its network alone. Choose the result against
its parent on development data before shipping it (``benchmarks/choose_k_rule.py``).
Exit status 1 with a message when the checkpoint or the settings are unusable.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from model.checkpoint import CheckpointError
from model.estimator import default_checkpoint_path
from model.k_features import CANDIDATE_STAGES
from pipeline.k_ranker_fit import EXTRA_FAMILIES, RankerFitConfig, fit_k_ranker


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    d = RankerFitConfig(checkpoint="", out="")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None, help="the network (default: the shipped weights)")
    p.add_argument("--out", required=True, help="the checkpoint to write")
    p.add_argument("--records-dir", default=d.records_dir, help="record cache (default: %(default)s)")
    p.add_argument("--tables", type=int, default=d.tables, help="prior tables in all (default: %(default)s)")
    p.add_argument("--val-tables", type=int, default=d.val_tables,
                   help="of which held out to compare with the expected-ARI rule (default: %(default)s)")
    p.add_argument("--epochs", type=int, default=d.epochs, help="(default: %(default)s)")
    p.add_argument("--seed", type=int, default=d.seed, help="the fit's seed (default: %(default)s)")
    p.add_argument("--workers", type=int, default=d.workers, help="processes computing records (default: %(default)s)")
    p.add_argument("--feature-set", type=int, default=d.feature_set,
                   help="the candidate features the ranker reads (model.k_features.FEATURE_SETS; default: "
                        "%(default)s)")
    p.add_argument("--candidates", default=d.candidates, choices=CANDIDATE_STAGES,
                   help="the partitions its features describe: the Lloyd-refined candidates or their diagonal "
                        "mixtures (default: %(default)s)")
    p.add_argument("--target", default=None, choices=CANDIDATE_STAGES,
                   help="maximise the ARI of what this refine returns at each K (default: the estimator's default "
                        "refine)")
    p.add_argument("--extra-tables", nargs="+", default=[], metavar="FAMILY=N",
                   help="tables of other families added to the prior tables, a tenth of each held out: "
                        f"{', '.join(EXTRA_FAMILIES)} (e.g. shapes=1500; default: none)")
    p.add_argument("--extra-weight", type=int, default=d.extra_weight,
                   help="how many times each extra table counts in the fit (default: %(default)s)")
    args = p.parse_args(argv)
    args.extra_tables = extra_tables(p, args.extra_tables)
    return args


def extra_tables(parser: argparse.ArgumentParser, given: list[str]) -> tuple[tuple[str, int], ...]:
    """``FAMILY=N`` words -> ((family, n), ...); a malformed word stops the job with what to write."""
    out = []
    for word in given:
        family, _, n = word.partition("=")
        if not n.isdigit():
            parser.error(f"--extra-tables takes FAMILY=N (e.g. shapes=1500), got {word!r}")
        out.append((family, int(n)))
    return tuple(out)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = parse_args(argv)
    try:
        cfg = RankerFitConfig(checkpoint=str(args.checkpoint or default_checkpoint_path()), out=args.out,
                              records_dir=args.records_dir, tables=args.tables, val_tables=args.val_tables,
                              epochs=args.epochs, seed=args.seed, workers=args.workers,
                              feature_set=args.feature_set, candidates=args.candidates,
                              target=args.target, extra_tables=args.extra_tables, extra_weight=args.extra_weight)
        summary = fit_k_ranker(cfg)
    except (CheckpointError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
