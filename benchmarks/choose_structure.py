"""Whether and where TabClustPFN answers "one cluster", chosen on development data (docs/DESIGN.md protocol).

    PYTHONPATH=. .venv/bin/python benchmarks/choose_structure.py --out docs/results/choice-structure

``TabClustPFN(allow_single_cluster=True)`` answers K = 1 when the table's ``structure_score_`` (a SigClust-style
z-score of its best two-way split against one Gaussian with its covariance, :mod:`model.structure`) is above
``single_cluster_z``. Every table is clustered once with the estimator's other defaults (K inferred) and its score
is recorded; the answer at each threshold of ``THRESHOLDS`` follows from them (a table above it gets every row in
one cluster), so all thresholds are compared on the same fits.

The development sets: those of ``benchmarks/choose_checkpoint.py`` (``prior``, ``noisy``, ``one-informative``: held
-out prior tasks, N 500-1000; ``dev``: the 23 tables of ``../shared/benchmarks/dev``), whose every table has K >= 2,
and ``one-mode``: tables with a single mode (:mod:`priors.onemode`: one Gaussian or Student-t cloud, possibly skewed
or partly in ordinal levels; seeds ``ONE_MODE_SEED + i``, none of which the CIN refit drew), whose truth is one
cluster (ARI 1 for a one-cluster answer, 0 for any split). The test suites are not touched.

The rule, written before measuring: per set, each threshold against the network's answer (no single-cluster
answer) table by table as a paired mean ARI difference +- its standard error. ``allow_single_cluster`` becomes the
default when a threshold qualifies by the protocol (gains beyond two standard errors on a set, loses beyond one on
none; the qualifying one with the largest mean gain over the five sets, each weighted equally), and its threshold
becomes ``model.structure.DEFAULT_SINGLE_CLUSTER_Z``. When none qualifies, the option stays off by default and its
threshold is the one with the largest mean gain over the five sets: the best trade-off for a user who says that one
cluster is a possible answer.
"""

from __future__ import annotations

import argparse
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from benchmarks.choose_checkpoint import paired, tables, verdict  # noqa: E402
from model.estimator import TabClustPFN, default_checkpoint_path  # noqa: E402
from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines  # noqa: E402
from pipeline.evaluation.suites import prior_frame  # noqa: E402
from priors.onemode import sample_one_mode  # noqa: E402

SETS = ("prior", "noisy", "one-informative", "dev", "one-mode")
THRESHOLDS = (0.0, 1.0, 2.0, 3.0)
#: First seed of the one-mode set (the CIN refit drew run_seed * 2**40 + i, far above).
ONE_MODE_SEED = 7_000_000


def set_tables(which: str, n_tasks: int):
    """(name, frame, labels) of one development set; one-mode tables are labelled one cluster (all 0)."""
    if which != "one-mode":
        yield from tables(which, n_tasks)
        return
    for i in range(n_tasks):
        ds = sample_one_mode(ONE_MODE_SEED + i)
        yield f"one-mode_{i}", prior_frame(ds.X, np.zeros(ds.X.shape[1], bool)), np.zeros(len(ds.X), np.int64)


def score(checkpoint: str, sets: list[str], n_tasks: dict[str, int]) -> pd.DataFrame:
    """One fit per table: the network's answer, its ARI and the table's structure score."""
    est = TabClustPFN(checkpoint=checkpoint, random_state=0, allow_single_cluster=True, single_cluster_z=np.inf)
    rows = []
    for which in sets:
        for name, frame, y in set_tables(which, n_tasks.get(which, 0)):
            est.fit(frame)
            rows.append({"set": which, "table": name, "N": len(y), "D": frame.shape[1], "K": len(np.unique(y)),
                         "ari": adjusted_rand_score(y, est.labels_), "k_pred": int(est.n_clusters_),
                         "z": float(est.structure_score_),
                         "ari_one": adjusted_rand_score(y, np.zeros_like(y))})
        print(f"{which}: {sum(r['set'] == which for r in rows)} tables", flush=True)
    return pd.DataFrame(rows)


def at_threshold(df: pd.DataFrame, z: float) -> pd.DataFrame:
    """ARI and K of every table when tables scoring above ``z`` are answered with one cluster."""
    one = df.z > z
    return df.assign(ari=np.where(one, df.ari_one, df.ari), k_pred=np.where(one, 1, df.k_pred), one=one)


def report(df: pd.DataFrame) -> tuple[list[str], float | None, float]:
    """The table, the threshold the protocol makes the default (None: off by default) and the option's."""
    lines = ["| set | tables | threshold | one cluster answered | median ARI | mean ARI | against no one-cluster "
             "answer (mean +- s.e.) | better / worse | mean abs K error |", "|---|---|---|---|---|---|---|---|---|"]
    diffs: dict[str, dict[str, dict[str, float]]] = {f"z > {t:g}": {} for t in THRESHOLDS}
    for which, part in df.groupby("set", sort=False):
        kerr = (part.k_pred - part.K).abs().mean()
        lines.append(f"| {which} | {len(part)} | off (the network's K >= 2) | 0 | {part.ari.median():.3f} | "
                     f"{part.ari.mean():.3f} | - | - | {kerr:.2f} |")
        for t in THRESHOLDS:
            gated = at_threshold(part, t)
            p = diffs[f"z > {t:g}"][which] = paired(part.ari.reset_index(drop=True),
                                                    gated.ari.reset_index(drop=True))
            lines.append(f"| {which} | {len(part)} | z > {t:g} | {int(gated.one.sum())} | {gated.ari.median():.3f} | "
                         f"{gated.ari.mean():.3f} | {p['mean']:+.4f} +- {p['se']:.4f} | {p['better']} / "
                         f"{p['worse']} | {(gated.k_pred - gated.K).abs().mean():.2f} |")
    chosen, reasons = verdict(diffs)
    mean_gain = {t: float(np.mean([p["mean"] for p in diffs[f"z > {t:g}"].values()])) for t in THRESHOLDS}
    default = None if chosen is None else float(chosen.split("> ")[1])
    option = default if default is not None else max(mean_gain, key=mean_gain.get)
    lines += ["", *[f"- {c}: {reasons[c]}." for c in diffs], "",
              (f"Default: allow_single_cluster=True at z > {default:g}." if default is not None else
               "Default: allow_single_cluster=False (no threshold qualifies)."),
              f"The option's threshold (mean gain over the sets {mean_gain[option]:+.4f}): z > {option:g}."]
    return lines, default, option


def main(argv=None) -> tuple[float | None, float]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()), help="default: the shipped weights")
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    ap.add_argument("--prior-tasks", type=int, default=400)
    ap.add_argument("--noisy-tasks", type=int, default=200)
    ap.add_argument("--one-informative-tasks", type=int, default=200)
    ap.add_argument("--one-mode-tasks", type=int, default=200)
    ap.add_argument("--out", default="docs/results/choice-structure")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.checkpoint):
        ap.error(f"no checkpoint at {args.checkpoint}: give the model.pt of a finished run")
    n_tasks = {"prior": args.prior_tasks, "noisy": args.noisy_tasks,
               "one-informative": args.one_informative_tasks, "one-mode": args.one_mode_tasks}
    df = score(args.checkpoint, args.sets, n_tasks)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    df.to_csv(args.out + ".csv", index=False)
    table, default, option = report(df)
    given = sys.argv[1:] if argv is None else list(argv)
    lines = ["# One cluster or a partition: the structure test's threshold on development data (K inferred)", "",
             *table, "", PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_structure.py " + " ".join(given)
             + "`", checkpoint_line(args.checkpoint), *machine_lines()]
    with open(args.out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return default, option


if __name__ == "__main__":
    main()
