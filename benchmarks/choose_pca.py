"""Which principal components the PCA path keeps (``TablePreprocessor(pca_components=...)``), chosen on held-out
prior tasks wider than the encoder's 64 columns.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_pca.py --tasks 60 --out docs/results/choice-pca

Draws ``--tasks`` tasks of the paper's prior (the validation seeds, which no training stream reaches; N 500-1000,
D 65-128, both mechanisms), preprocesses each with every rule of :data:`model.preprocessing.PCA_COMPONENTS` (and ``above_noise`` with
at least 2 components kept instead of 1, ``above_noise-min2``) and clusters it with the shipped weights as ``TabClustPFN`` does (4 column orderings, K by expected ARI): ARI with K
inferred and with the true K, task by task, and the second rule against the first (mean difference +- its
standard error, tasks better and worse, Wilcoxon signed-rank p). Writes ``OUT.csv`` (one row per task) and
``OUT.md`` (the summary, with the command, checkpoint sha256, machine and date).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import warnings

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.stats import wilcoxon  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from model.checkpoint import load_checkpoint  # noqa: E402
from model.ensemble import DEFAULT_N_ESTIMATORS, combine_members, infer_members  # noqa: E402
from model.estimator import default_checkpoint_path  # noqa: E402
from model import preprocessing  # noqa: E402
from model.preprocessing import TablePreprocessor  # noqa: E402
from model.selection import select_k  # noqa: E402
from pipeline.config import StreamConfig  # noqa: E402
from pipeline.evaluation.report import PROVENANCE_PREFIXES, provenance_lines  # noqa: E402
from pipeline.evaluation.suites import prior_frame  # noqa: E402
from pipeline.prior_stream import validation_seeds  # noqa: E402
from priors import sample_dataset  # noqa: E402


#: variant -> (pca_components, fewest components kept)
VARIANTS = {"max_features": ("max_features", 1), "above_noise": ("above_noise", 1),
            "above_noise-min2": ("above_noise", 2)}


def score(net, frame: pd.DataFrame, y: np.ndarray, k_true: int, rule: str) -> dict:
    pca_components, fewest = VARIANTS[rule]
    default_fewest = preprocessing._MIN_COMPONENTS
    preprocessing._MIN_COMPONENTS = fewest  # the variant's floor, for this table only
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # every table here is wide: the PCA warning is expected
            Z, cat = TablePreprocessor(max_features=net.cfg.max_features, max_categories=net.cfg.max_categories,
                                       pca_components=pca_components).fit_transform(frame)
    finally:
        preprocessing._MIN_COMPONENTS = default_fewest
    member_probs, member_post = infer_members(net, Z, np.flatnonzero(cat), DEFAULT_N_ESTIMATORS)
    probs, post, _ = combine_members(member_probs, member_post)
    k, _ = select_k(probs, post, k_hi=min(net.cfg.k_max, len(y) - 1), members=(member_probs, member_post))
    known = adjusted_rand_score(y, probs[k_true - 2].argmax(-1)) if k_true <= net.cfg.k_max else np.nan
    return {rule: adjusted_rand_score(y, probs[k - 2].argmax(-1)), f"{rule}_known": known, f"{rule}_k": k,
            f"{rule}_d": Z.shape[1]}


def paired_line(a: pd.Series, b: pd.Series) -> str:
    d = (b - a).dropna()
    p = wilcoxon(d).pvalue if (d != 0).any() else 1.0
    return (f"{d.mean():+.3f} +- {d.std(ddof=1) / np.sqrt(len(d)):.3f} (better on {(d > 1e-9).sum()}, worse on "
            f"{(d < -1e-9).sum()} of {len(d)}; Wilcoxon p = {p:.2g})")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=60)
    ap.add_argument("--rows", type=int, nargs=2, default=(500, 1000))
    ap.add_argument("--features", type=int, nargs=2, default=(65, 128))
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()))
    ap.add_argument("--out", default="docs/results/choice-pca")
    args = ap.parse_args(argv)
    net = load_checkpoint(args.checkpoint)[0].eval()
    prior = dataclasses.replace(StreamConfig().prior, n_rows=tuple(args.rows), n_features=tuple(args.features))
    rows = []
    for i, seed in enumerate(validation_seeds(args.tasks)):
        task = sample_dataset(seed, kind="mix", config=prior)
        y, k_true = np.asarray(task.y), int(task.n_clusters)
        row = dict(task=i, N=len(y), D=task.X.shape[1], K=k_true, mechanism=str(task.meta.get("mechanism")))
        for rule in VARIANTS:
            row.update(score(net, prior_frame(task.X, task.categorical), y, k_true, rule))
        rows.append(row)
        print(f"task {i}: " + "  ".join(f"{r} {row[r]:.3f} (D {row[r + '_d']})" for r in VARIANTS), flush=True)
    df = pd.DataFrame(rows)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    df.to_csv(args.out + ".csv", index=False)
    old = "max_features"
    lines = ["# PCA components kept for tables wider than 64 columns (held-out prior tasks)", "",
             f"{len(df)} tasks of the prior, validation seeds, N {args.rows[0]}-{args.rows[1]}, "
             f"D {args.features[0]}-{args.features[1]}; the shipped estimator's inference (4 orderings, K by "
             "expected ARI).", "",
             "| rule | median ARI, K inferred | median ARI, true K | median |K^ - K| | median columns kept |",
             "|---|---|---|---|---|"]
    for rule in VARIANTS:
        lines.append(f"| {rule} | {df[rule].median():.3f} | {df[rule + '_known'].median():.3f} | "
                     f"{(df[rule + '_k'] - df.K).abs().median():.1f} | {df[rule + '_d'].median():.0f} |")
    lines.append("")
    for new, base in (("above_noise", old), ("above_noise-min2", old), ("above_noise", "above_noise-min2")):
        lines += [f"- {new} against {base}, K inferred: {paired_line(df[base], df[new])}",
                  f"- {new} against {base}, true K: {paired_line(df[base + '_known'], df[new + '_known'])}"]
    lines.append("")
    given = sys.argv[1:] if argv is None else list(argv)
    lines += [PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_pca.py " + " ".join(given) + "`",
              *provenance_lines(args.checkpoint, uses_model=True)]
    with open(args.out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
