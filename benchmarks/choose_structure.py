"""Whether and where TabClustPFN answers "one cluster" or "two", chosen on development data (docs/DESIGN.md
protocol).

    PYTHONPATH=. .venv/bin/python benchmarks/choose_structure.py --out docs/results/choice-structure
    PYTHONPATH=. .venv/bin/python benchmarks/choose_structure.py --answer two --out docs/results/choice-structure-two

Every table is clustered once with the estimator's defaults (K inferred) and its ``structure_score_`` recorded (a
SigClust-style z-score of its best two-way split against one Gaussian with its covariance, :mod:`model.structure`);
the answer at each threshold follows from them, so all thresholds are compared on the same fits.

``--answer one``: ``TabClustPFN(allow_single_cluster=True)`` answers K = 1 above ``single_cluster_z`` (every row in
one cluster). ``--answer two``: above the threshold, a table whose K the network's rule chose (not BIC) and chose
above 2 gets K = 2, the fewest clusters the network reports, instead (``TabClustPFN._two_cluster_z``; those tables
are clustered a second time with it, so the answer is the estimator's own K = 2 partition). A table that looks like
one mode is then cut in two halves, as k-means would cut it, rather than into many pieces.

The development sets: those of ``benchmarks/choose_checkpoint.py`` (``prior``, ``noisy``, ``one-informative``,
``coarse``, ``skewed``: held-out prior tasks, N 500-1000; ``shapes``; ``dev``: the 23 tables of
``../shared/benchmarks/dev``), whose every table has K >= 2, and ``one-mode``: tables with a single mode
(:mod:`priors.onemode`: one Gaussian or Student-t cloud, possibly skewed or partly in ordinal levels; seeds
``ONE_MODE_SEED + i``, none of which the CIN refit or the K ranker drew). Their truth is one cluster for ``--answer
one`` (ARI 1 for a one-cluster answer, 0 for any split) and, for ``--answer two``, the table cut at a quantile of its
first principal component (the module's labels: a class that cuts through one cloud). ``--offset`` draws the
synthetic sets afresh from that seed on (one-mode: ``ONE_MODE_SEED + offset`` on). The test suites are not touched.

The rule, written before measuring: per set, each threshold against the network's answer table by table as a paired
mean ARI difference +- its standard error. The answer becomes the default when a threshold qualifies by the
protocol (gains beyond two standard errors on a set, loses beyond one on none; the qualifying one with the largest
mean gain over the sets, each weighted equally); for ``one`` its threshold becomes
``model.structure.DEFAULT_SINGLE_CLUSTER_Z``. When none qualifies, the answer stays off by default; for ``one`` the
option's threshold is the one with the largest mean gain over the sets: the best trade-off for a user who says that
one cluster is a possible answer.
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
#: ``--answer two`` changes K on many more kinds of table, so it is judged on every synthetic family too
SETS_TWO = ("prior", "noisy", "one-informative", "coarse", "skewed", "shapes", "dev", "one-mode")
ALL_SETS = tuple(dict.fromkeys(SETS + SETS_TWO))
THRESHOLDS = {"one": (0.0, 1.0, 2.0, 3.0), "two": (-1.0, 0.0, 1.0, 2.0, 3.0)}
#: First seed of the one-mode set (the CIN refit drew run_seed * 2**40 + i, far above).
ONE_MODE_SEED = 7_000_000


def set_tables(which: str, n_tasks: int, answer: str = "one", offset: int = 0):
    """(name, frame, labels) of one development set; one-mode tables are labelled one cluster (all 0) for ``answer
    = "one"``, by the cut of their first principal component for ``"two"``."""
    if which != "one-mode":
        yield from tables(which, n_tasks, offset)
        return
    for i in range(offset, offset + n_tasks):
        ds = sample_one_mode(ONE_MODE_SEED + i)
        y = np.zeros(len(ds.X), np.int64) if answer == "one" else np.asarray(ds.y)
        yield f"one-mode_{i}", prior_frame(ds.X, np.zeros(ds.X.shape[1], bool)), y


def score(checkpoint: str, sets: list[str], n_tasks: dict[str, int], answer: str = "one",
          offset: int = 0) -> pd.DataFrame:
    """One fit per table: the network's answer, its ARI, the table's structure score and the ARI and K of the
    alternative answer (``ari_alt``, ``k_alt``: one cluster; or the K = 2 fit where it would differ)."""
    est = TabClustPFN(checkpoint=checkpoint, random_state=0, allow_single_cluster=True, single_cluster_z=np.inf)
    two = TabClustPFN(checkpoint=checkpoint, random_state=0)
    two._two_cluster_z = -np.inf  # every table whose rule chose K > 2: K = 2
    lowest = min(THRESHOLDS[answer])
    rows = []
    for which in sets:
        for name, frame, y in set_tables(which, n_tasks.get(which, 0), answer, offset):
            est.fit(frame)
            row = {"set": which, "table": name, "N": len(y), "D": frame.shape[1], "K": len(np.unique(y)),
                   "ari": adjusted_rand_score(y, est.labels_), "k_pred": int(est.n_clusters_),
                   "k_chosen": int(est.k_chosen_), "rule": est.k_selection_, "z": float(est.structure_score_)}
            if answer == "one":
                row.update(ari_alt=adjusted_rand_score(y, np.zeros_like(y)), k_alt=1)
            elif row["z"] > lowest and row["k_chosen"] > 2 and row["rule"] != "bic":
                two.fit(frame)
                row.update(ari_alt=adjusted_rand_score(y, two.labels_), k_alt=int(two.n_clusters_))
            else:  # the answer would not change
                row.update(ari_alt=row["ari"], k_alt=row["k_pred"])
            rows.append(row)
        print(f"{which}: {sum(r['set'] == which for r in rows)} tables", flush=True)
    return pd.DataFrame(rows)


def at_threshold(df: pd.DataFrame, z: float) -> pd.DataFrame:
    """ARI and K of every table when tables scoring above ``z`` get the alternative answer (``changed``: the
    tables whose answer changed)."""
    alt = df.z > z
    return df.assign(ari=np.where(alt, df.ari_alt, df.ari), k_pred=np.where(alt, df.k_alt, df.k_pred),
                     changed=alt & (df.k_alt != df.k_pred))


def report(df: pd.DataFrame, answer: str = "one") -> tuple[list[str], float | None, float]:
    """The table, the threshold the protocol makes the default (None: off by default) and the option's (the one
    of largest mean gain over the sets)."""
    what = {"one": "one cluster", "two": "K = 2"}[answer]
    lines = [f"| set | tables | threshold | {what} answered | median ARI | mean ARI | against the network's answer "
             "(mean +- s.e.) | better / worse | mean abs K error |", "|---|---|---|---|---|---|---|---|---|"]
    thresholds = THRESHOLDS[answer]
    diffs: dict[str, dict[str, dict[str, float]]] = {f"z > {t:g}": {} for t in thresholds}
    for which, part in df.groupby("set", sort=False):
        kerr = (part.k_pred - part.K).abs().mean()
        lines.append(f"| {which} | {len(part)} | off (the network's K >= 2) | 0 | {part.ari.median():.3f} | "
                     f"{part.ari.mean():.3f} | - | - | {kerr:.2f} |")
        for t in thresholds:
            gated = at_threshold(part, t)
            p = diffs[f"z > {t:g}"][which] = paired(part.ari.reset_index(drop=True),
                                                    gated.ari.reset_index(drop=True))
            lines.append(f"| {which} | {len(part)} | z > {t:g} | {int(gated.changed.sum())} | "
                         f"{gated.ari.median():.3f} | {gated.ari.mean():.3f} | {p['mean']:+.4f} +- {p['se']:.4f} | "
                         f"{p['better']} / {p['worse']} | {(gated.k_pred - gated.K).abs().mean():.2f} |")
    chosen, reasons = verdict(diffs)
    mean_gain = {t: float(np.mean([p["mean"] for p in diffs[f"z > {t:g}"].values()])) for t in thresholds}
    default = None if chosen is None else float(chosen.split("> ")[1])
    option = default if default is not None else max(mean_gain, key=mean_gain.get)
    if answer == "one":
        verdict_lines = [f"Default: allow_single_cluster=True at z > {default:g}." if default is not None else
                         "Default: allow_single_cluster=False (no threshold qualifies).",
                         f"The option's threshold (mean gain over the sets {mean_gain[option]:+.4f}): z > {option:g}."]
    else:
        verdict_lines = [f"Default: K = 2 above z > {default:g} (mean gain over the sets {mean_gain[default]:+.4f})."
                         if default is not None else "Default: the network's K (no threshold qualifies)."]
    return [*lines, "", *[f"- {c}: {reasons[c]}." for c in diffs], "", *verdict_lines], default, option


def main(argv=None) -> tuple[float | None, float]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()), help="default: the shipped weights")
    ap.add_argument("--answer", choices=("one", "two"), default="one",
                    help="the answer above the threshold: one cluster, or K = 2 (default: %(default)s)")
    ap.add_argument("--sets", nargs="+", default=None, choices=ALL_SETS,
                    help=f"default: {' '.join(SETS)} (one); {' '.join(SETS_TWO)} (two)")
    for name, default in (("prior", 400), ("noisy", 200), ("one-informative", 200), ("coarse", 200),
                          ("skewed", 200), ("shapes", 54), ("one-mode", 200)):
        ap.add_argument(f"--{name}-tasks", type=int, default=default)
    ap.add_argument("--offset", type=int, default=0,
                    help="the synthetic sets' tables from this seed on: a fresh draw to confirm a choice")
    ap.add_argument("--out", default="docs/results/choice-structure")
    args = ap.parse_args(argv)
    if not os.path.isfile(args.checkpoint):
        ap.error(f"no checkpoint at {args.checkpoint}: give the model.pt of a finished run")
    sets = args.sets or list(SETS if args.answer == "one" else SETS_TWO)
    if args.offset and "dev" in sets:
        ap.error("--offset draws fresh synthetic tables; the dev suite has none: leave dev out of --sets")
    n_tasks = {name: getattr(args, name.replace("-", "_") + "_tasks") for name in
               ("prior", "noisy", "one-informative", "coarse", "skewed", "shapes", "one-mode")}
    df = score(args.checkpoint, sets, n_tasks, args.answer, args.offset)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    df.to_csv(args.out + ".csv", index=False)
    table, default, option = report(df, args.answer)
    given = sys.argv[1:] if argv is None else list(argv)
    title = {"one": "One cluster or a partition", "two": "K = 2 or the network's K on one-mode-looking tables"}
    data = "a fresh draw of the synthetic development sets" if args.offset else "development data"
    lines = [f"# {title[args.answer]}: the structure test's threshold on {data} (K inferred)", "",
             *table, "", PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_structure.py " + " ".join(given)
             + "`", checkpoint_line(args.checkpoint), *machine_lines()]
    with open(args.out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return default, option


if __name__ == "__main__":
    main()
