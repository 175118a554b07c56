r"""Which pairs of the BIC path's components qualify for merging, and whether they lie within one labelled cluster.

    PYTHONPATH=. .venv/bin/python benchmarks/tile_pairs.py --set shapes many-blobs many-ellipses \
        --out docs/results/tile-pairs

Each table of the development sets (``benchmarks.choose_checkpoint.tables``) is fitted as ``TabClustPFN`` fits it
by default, tiles not merged (the BIC path of few columns); on tables whose mixture reaches the gate
(:data:`model.tiles.MIN_COMPONENTS` components that take rows) every pair of components is read as
:func:`model.tiles.tile_groups` reads it (:func:`model.tiles.valley_ratios`) at the given thresholds, and a
qualifying pair counts as "within one cluster" where the two components' most frequent labels agree. The report
gives, per set, the qualifying pairs, those within one cluster, and how many tables have 1, 2, or 3 and more of
them: the evidence for merging only where several pairs qualify (:data:`model.tiles.MIN_PAIRS`).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def table_pairs(frame: pd.DataFrame, y: np.ndarray, min_ratio: float, min_fill: float) -> list[dict] | None:
    """The qualifying pairs of one table (each: the two components, their ratios, within one cluster or not); None
    where the table takes another path or its mixture stays below the gate."""
    from model.estimator import TabClustPFN
    from model.tiles import MIN_COMPONENTS, live_components, qualifying_pairs

    est = TabClustPFN()
    est._low_dim_merge = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(frame)
    candidates = est._candidates
    if candidates is None or candidates.bic is None or est.k_selection_ != "bic":
        return None
    X, mixture = candidates.rows, candidates.bic.mixture
    labels = mixture.labels(X)
    truth = np.asarray(y)[est.context_indices_]
    live = live_components(mixture, labels)
    if len(live) < MIN_COMPONENTS:
        return None
    major = {c: int(pd.Series(truth[labels == c]).mode()[0]) for c in live}
    return [{"a": a, "b": b, "data": data, "fitted": fitted, "within": major[a] == major[b]}
            for a, b, data, fitted in qualifying_pairs(X, mixture, labels, live, min_ratio, min_fill)]


def main(argv: list[str] | None = None) -> None:
    from benchmarks.choose_checkpoint import tables
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", nargs="+", default=["shapes", "many-blobs"])
    parser.add_argument("--n", type=int, nargs="+", default=None, help="tables per set (default: 54 shapes, 100 else)")
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--min-ratio", type=float, default=0.85)
    parser.add_argument("--min-fill", type=float, default=0.05)
    parser.add_argument("--out", required=True, help="path stem: writes STEM.csv and STEM.md")
    args = parser.parse_args(argv)
    sizes = args.n or [54 if s == "shapes" else 100 for s in args.set]
    if len(sizes) != len(args.set):
        parser.error("--n takes one size per --set")
    rows = []
    for which, n in zip(args.set, sizes):
        for name, frame, y in tables(which, n, args.offset):
            pairs = table_pairs(frame, y, args.min_ratio, args.min_fill)
            if pairs is None:
                continue
            rows.append({"set": which, "table": name, "pairs": len(pairs), "within": sum(p["within"] for p in pairs)})
        print(f"{which}: {n} tables", flush=True)
    df = pd.DataFrame(rows, columns=["set", "table", "pairs", "within"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out.with_suffix(".csv"), index=False)
    lines = ["# Qualifying pairs of the BIC path's components: within one cluster, and how many a table", "",
             f"Thresholds: rows' valley ratio >= {args.min_ratio}, fill >= {args.min_fill}; tables whose mixture "
             "reaches the gate of components.", "",
             "| set | tables at the gate | with a qualifying pair | pairs | within one cluster | tables with 1 / 2 / "
             ">= 3 pairs | pairs within one cluster on tables of >= 3 |", "|---|---|---|---|---|---|---|"]
    for which in args.set:
        d = df[df.set == which]
        hit = d[d.pairs > 0]
        many = d[d.pairs >= 3]
        lines.append(f"| {which} | {len(d)} | {len(hit)} | {int(d.pairs.sum())} | {int(d.within.sum())} | "
                     f"{int((d.pairs == 1).sum())} / {int((d.pairs == 2).sum())} / {len(many)} | "
                     f"{int(many.within.sum())} of {int(many.pairs.sum())} |")
    given = sys.argv[1:] if argv is None else list(argv)
    lines += ["", PROVENANCE_PREFIXES["command"] + "`python benchmarks/tile_pairs.py " + " ".join(given) + "`",
              checkpoint_line(None), *machine_lines()]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
