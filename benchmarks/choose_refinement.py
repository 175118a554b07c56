"""Whether, and how, to refine the network's partition at test time (``TabClustPFN(refine=...)``), chosen on
development data only: held-out prior tasks, prior tasks with noise columns, and the development suite.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_refinement.py --out docs/results/choice-refine

Each table is preprocessed and clustered as ``TabClustPFN`` does (``TablePreprocessor``, 4 column orderings), once;
then every variant turns the same network outputs into an answer, K inferred:

- ``none``: the network's partitions, K by expected ARI (the estimator's ``refine="none"``);
- ``kmeans-guarded``: :func:`model.refinement.refine_candidates` with 2 Lloyd steps, each candidate's refinement kept
  where its ARI with the network's partition is >= 0.6, K by expected ARI among those candidates;
- ``kmeans-1step``: the same with 1 step;
- ``kmeans``: 2 steps, always kept (the defaults of ``refine_candidates``; the estimator's ``refine="kmeans"``);
- ``kmeans-converged``: run to convergence (up to 100 steps), always kept;
- ``kmeans+silhouette``: ``kmeans``'s candidates, K by expected ARI + the candidate's silhouette (a geometric
  check on the network's K);
- ``kmeans+merge-gate``: ``kmeans``'s answer, then K lowered while two of its clusters, split along the axis
  between their means, explain less than 0.6 of that axis's variance (a single Gaussian cut in two: 0.64).

The same run measures how far a user can trust CIN's posterior over K (``TabClustPFN.k_posterior_``), which the
refinement does not change: per set, how often its most probable K is the labelled one against its mean
probability, and how often the smallest set of K holding 80 % of it contains the labelled K, and its mean size.

Sets: ``prior`` (``--prior-tasks`` tasks of the paper's prior, validation seeds, N 500-1000), ``noisy`` (the same
prior with half of its tasks given pure-noise columns and 30 % with contaminated rows: ``priors/nuisance.py``),
``dev`` (the 23 tables of ``../shared/benchmarks/dev``). Writes ``OUT.csv`` (one row per table, ARI and K of every
variant) and ``OUT.md`` (per set: median ARI, each variant against ``none`` task by task as mean difference +-
standard error with tasks better/worse, and mean |K^ - K|; command, checkpoint sha256, machine, date).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.metrics import adjusted_rand_score, pairwise_distances, silhouette_score  # noqa: E402

from model.checkpoint import load_checkpoint  # noqa: E402
from model.ensemble import DEFAULT_N_ESTIMATORS, combine_members, infer_members  # noqa: E402
from model.estimator import default_checkpoint_path  # noqa: E402
from model.preprocessing import TablePreprocessor  # noqa: E402
from model.refinement import design, one_hot_widths, refine_candidates  # noqa: E402
from model.selection import select_k  # noqa: E402
from pipeline.config import StreamConfig  # noqa: E402
from pipeline.evaluation.report import PROVENANCE_PREFIXES, provenance_lines  # noqa: E402
from pipeline.evaluation.suites import dev_suite, prior_frame, prior_variant  # noqa: E402
from tune.evaluate import fixed_synthetic_tasks  # noqa: E402

#: variant -> (Lloyd steps, smallest agreement kept); None: no refinement.
VARIANTS: dict[str, tuple[int, float] | None] = {
    "none": None, "kmeans-guarded": (2, 0.6), "kmeans-1step": (1, 0.6), "kmeans": (2, None),
    "kmeans-converged": (100, None),
}


def tables(which: str, n_tasks: int):
    """(name, frame, labels, K) of one set."""
    if which == "dev":
        for ds in dev_suite():
            yield ds.name, ds.features, np.asarray(ds.y), int(ds.n_clusters)
        return
    stream = StreamConfig()
    prior = prior_variant(dataclasses.replace(stream.prior, n_rows=(500, 1000)), which)
    for i, task in enumerate(fixed_synthetic_tasks(dataclasses.replace(stream, prior=prior), n_tasks)):
        yield f"{which}_{i}", prior_frame(task.X, task.categorical), np.asarray(task.y), int(task.n_clusters)


def score_table(net, frame: pd.DataFrame, y: np.ndarray) -> dict:
    Z, cat = TablePreprocessor(max_features=net.cfg.max_features,
                               max_categories=net.cfg.max_categories).fit_transform(frame)
    member_probs, member_post = infer_members(net, Z, np.flatnonzero(cat), DEFAULT_N_ESTIMATORS)
    probs, post, _ = combine_members(member_probs, member_post)
    k_hi = min(net.cfg.k_max, len(y) - 1)
    order = np.argsort(post)[::-1]
    in_set = order[: int(np.searchsorted(np.cumsum(post[order]), 0.8) + 1)] + 2  # the 80 % set of K
    out = {"p_top": float(post[order[0]]), "k_top": int(order[0] + 2), "set80": " ".join(map(str, sorted(in_set)))}
    X = design(Z, cat, one_hot_widths(Z, cat))
    for name, setting in VARIANTS.items():
        candidates = None
        if setting is not None:
            candidates, _ = refine_candidates(X, probs, n_candidates=k_hi - 1, steps=setting[0],
                                              min_agreement=setting[1])
        k, scores = select_k(probs, post, k_hi=k_hi, members=(member_probs, member_post), candidates=candidates)
        labels = probs[k - 2].argmax(-1) if candidates is None else candidates[k - 2]
        out[name], out[f"{name}_k"] = adjusted_rand_score(y, labels), k
        if name == "kmeans":
            distances = pairwise_distances(X)
            sil = np.array([silhouette_score(distances, lab, metric="precomputed") if len(np.unique(lab)) > 1
                            else -1.0 for lab in candidates[: k_hi - 1]])
            j = int(np.argmax(scores[: k_hi - 1] + sil))
            out["kmeans+silhouette"], out["kmeans+silhouette_k"] = adjusted_rand_score(y, candidates[j]), j + 2
            gated = k
            while gated > 2 and weakest_split(X, candidates[gated - 2]) < 0.6:
                gated -= 1
            out["kmeans+merge-gate"] = adjusted_rand_score(y, candidates[gated - 2])
            out["kmeans+merge-gate_k"] = gated
    return out


def weakest_split(X: np.ndarray, labels: np.ndarray) -> float:
    """The smallest, over pairs of clusters, share of the variance along the axis between their means that the
    pair's split explains (1: far apart; about 0.64: one Gaussian cut at its mean)."""
    groups = np.unique(labels)
    means = {g: X[labels == g].mean(0) for g in groups}
    weakest = 1.0
    for a, ga in enumerate(groups):
        for gb in groups[a + 1 :]:
            axis = means[ga] - means[gb]
            norm = np.linalg.norm(axis)
            if norm < 1e-12:
                return 0.0
            rows = (labels == ga) | (labels == gb)
            t, side = X[rows] @ (axis / norm), labels[rows] == ga
            total = ((t - t.mean()) ** 2).sum()
            within = ((t[side] - t[side].mean()) ** 2).sum() + ((t[~side] - t[~side].mean()) ** 2).sum()
            weakest = min(weakest, 1.0 - within / max(total, 1e-300))
    return weakest


def summary(df: pd.DataFrame) -> list[str]:
    lines = ["| set | tables | variant | median ARI | against none (mean +- s.e.) | better / worse | mean |K^ - K| |",
             "|---|---|---|---|---|---|---|"]
    for which, part in df.groupby("set", sort=False):
        for name in [*VARIANTS, "kmeans+silhouette", "kmeans+merge-gate"]:
            d = part[name] - part["none"]
            se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
            lines.append(f"| {which} | {len(part)} | {name} | {part[name].median():.3f} | "
                         f"{d.mean():+.3f} +- {se:.3f} | {(d > 1e-9).sum()} / {(d < -1e-9).sum()} | "
                         f"{(part[name + '_k'] - part.K).abs().mean():.2f} |")
    return lines


def calibration(df: pd.DataFrame) -> list[str]:
    """CIN's posterior against the labelled K, per set (tables whose K is in 2..10)."""
    lines = ["| set | tables | top K right | mean top probability | 80 % set holds K | mean 80 % set size |",
             "|---|---|---|---|---|---|"]
    for which, part in df[df.K.between(2, 10)].groupby("set", sort=False):
        sets = part["set80"].astype(str).str.split()
        covered = [str(k) in s for k, s in zip(part.K, sets)]
        lines.append(f"| {which} | {len(part)} | {(part.k_top == part.K).mean():.2f} | {part.p_top.mean():.2f} | "
                     f"{np.mean(covered):.2f} | {sets.map(len).mean():.1f} |")
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", default=["prior", "noisy", "dev"], choices=["prior", "noisy", "dev"])
    ap.add_argument("--prior-tasks", type=int, default=300)
    ap.add_argument("--noisy-tasks", type=int, default=200)
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()))
    ap.add_argument("--out", default="docs/results/choice-refine")
    args = ap.parse_args(argv)
    net = load_checkpoint(args.checkpoint)[0].eval()
    rows = []
    for which in args.sets:
        n_tasks = args.prior_tasks if which == "prior" else args.noisy_tasks
        for name, frame, y, k in tables(which, n_tasks):
            rows.append(dict(set=which, table=name, N=len(y), D=frame.shape[1], K=k, **score_table(net, frame, y)))
        print(f"{which}: {sum(r['set'] == which for r in rows)} tables", flush=True)
    df = pd.DataFrame(rows)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    df.to_csv(args.out + ".csv", index=False)
    given = sys.argv[1:] if argv is None else list(argv)
    lines = ["# Test-time refinement, chosen on development data (K inferred)", "", *summary(df), "",
             "## CIN's posterior over K against the labelled K", "", *calibration(df), "",
             PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_refinement.py " + " ".join(given) + "`",
             *provenance_lines(args.checkpoint, uses_model=True)]
    with open(args.out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
