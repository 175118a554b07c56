"""Draw 64 two-dimensional datasets of each prior (GMM and ZEUS) as 8x8 PNG grids, like the paper's App. A.1.

    python jobs/draw_priors.py --out outputs/priors [--seed 0] [--n 64]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from priors import PriorConfig, sample_dataset
from priors.plotting import plot_grid


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder for gmm.png and zeus.png")
    parser.add_argument("--seed", type=int, default=0, help="first dataset seed (default 0)")
    parser.add_argument("--n", type=int, default=64, help="datasets per prior (default 64, an 8x8 grid)")
    args = parser.parse_args(argv)
    if args.seed < 0 or args.n < 1:
        parser.error("--seed must be >= 0 and --n >= 1")
    config = replace(PriorConfig(), n_features=(2, 2))  # two continuous columns: ZEUS draws D_cont = 2
    for kind in ("gmm", "zeus"):
        datasets = [sample_dataset(args.seed + i, kind=kind, config=config) for i in range(args.n)]
        path = plot_grid(datasets, args.out / f"{kind}.png", title=f"{kind.upper()} prior, D = 2")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
