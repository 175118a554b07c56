"""Checkpoints side by side on the evaluation suites, TabClustPFN only (minutes, not the full benchmark's hour).

    PYTHONPATH=. .venv/bin/python benchmarks/compare_checkpoints.py model/weights/tabclustpfn-small.pt runs/x/model.pt
    PYTHONPATH=. .venv/bin/python benchmarks/compare_checkpoints.py A B --suite prior --prior-tasks 200

For each checkpoint and suite (the 49 held-out synthetic datasets and the 22 UCI datasets of ``jobs/evaluate.py``):
median ARI with K inferred and with the true K, and median |K^ - K|, the mean ARIs, and each later checkpoint
against the first table by table (the surplus-K checkpoint of 2026-11-26: its synthetic median rose 0.59 ->
0.68 while, table by table, it gained +0.016 +- 0.023). The same datasets, seed and code path as
``jobs/evaluate.py`` (``tune.evaluate.real_rows`` runs ``pipeline.evaluation.methods.run_method`` on any list
of datasets), in one process, so it is the quick check of whether a new checkpoint is worth the full evaluation.
``--suite prior`` scores held-out tasks of the paper's prior (N 500-1000, or ``--prior-rows LOW HIGH``; both
mechanisms; the validation seeds, which no training stream reaches): the set to choose between checkpoints on,
since the synthetic and real suites are the test sets that the model card reports. It also compares every
checkpoint with the first task by task (mean difference +- its standard error): use 400 tasks and the paired
line, not the medians alone, to choose.
``--k-selection RULE`` (repeatable) scores the inferred K under each of the estimator's rules (default: its
default rule only), e.g. ``--k-selection expected_ari --k-selection posterior_mode``; ``--n-estimators M``
(repeatable) each number of column orderings (default: the estimator's), e.g. ``--n-estimators 1
--n-estimators 4``: every (rule, M) of every checkpoint is paired with the first.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from model.checkpoint import load_checkpoint  # noqa: E402
from model.ensemble import DEFAULT_N_ESTIMATORS  # noqa: E402
from model.selection import DEFAULT_K_SELECTION, K_SELECTIONS  # noqa: E402
from pipeline.config import StreamConfig  # noqa: E402
from pipeline.evaluation.suites import real_suite, synthetic_suite  # noqa: E402
from tune.evaluate import (fixed_synthetic_tasks, real_rows, score_tasks, summarize_real,  # noqa: E402
                           summarize_synthetic)

SHOWN = {"real_ari": "ARI", "real_ari_known_k": "ARI known K", "real_k_medae": "k-MedAE"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--suite", choices=["synthetic", "real", "prior"], action="append",
                   help="default: synthetic and real")
    p.add_argument("--prior-tasks", type=int, default=200, help="held-out prior tasks of --suite prior")
    p.add_argument("--prior-rows", type=int, nargs=2, default=[500, 1000], metavar=("LOW", "HIGH"),
                   help="N of the --suite prior tasks (default: %(default)s, the paper's); the same seeds at "
                        "another N are still held out, e.g. 100 300 for small tables")
    p.add_argument("--k-selection", choices=K_SELECTIONS, action="append", help="default: the estimator's")
    p.add_argument("--n-estimators", type=int, action="append", help="column orderings; default: the estimator's")
    args = p.parse_args()
    variants = [(rule, m) for rule in args.k_selection or [None] for m in args.n_estimators or [None]]
    suites = {"synthetic": synthetic_suite, "real": real_suite}
    for name in args.suite or ["synthetic", "real"]:
        if name == "prior":
            compare_on_prior(args.checkpoints, args.prior_tasks, variants, tuple(args.prior_rows))
            continue
        compare_on_suite(name, suites[name](), args.checkpoints, variants)


def variant_name(ckpt: str, rule: str | None, n_estimators: int | None) -> str:
    tags = [t for t in (rule, None if n_estimators is None else f"n_estimators={n_estimators}") if t]
    return ckpt if not tags else f"{ckpt} [{', '.join(tags)}]"


def compare_on_prior(checkpoints: list[str], n_tasks: int, variants: list[tuple],
                     n_rows: tuple[int, int] = (500, 1000)) -> None:
    """Median and mean ARI with K inferred / the true K and the mean |K^ - K| on held-out tasks of the paper's
    prior; every later (checkpoint, rule, column orderings) is also compared with the first, task by task (the
    same tasks). ``variants``: (K rule, orderings) pairs, None for the estimator's default; ``n_rows``: the
    tasks' N (the validation seeds, drawn at that N)."""
    stream = StreamConfig()
    stream = dataclasses.replace(stream, prior=dataclasses.replace(stream.prior, n_rows=n_rows))
    tasks = fixed_synthetic_tasks(stream, n_tasks)
    print(f"prior ({n_tasks} held-out tasks, N {n_rows[0]}-{n_rows[1]})")
    first: tuple[str, np.ndarray] | None = None
    for ckpt in checkpoints:
        net = load_checkpoint(ckpt)[0]
        for rule, m in variants:
            scores = score_tasks(net, tasks, rule=rule or DEFAULT_K_SELECTION, n_estimators=m or DEFAULT_N_ESTIMATORS)
            s = summarize_synthetic(scores)
            per_task = np.array([[x["ari"], x["ari_known_k"]] for x in scores])
            name = variant_name(ckpt, rule, m)
            print(f"  {name:48s} ARI {s['syn_ari']:.3f}  ARI known K {s['syn_ari_known_k']:.3f}  "
                  f"k-MAE {s['syn_k_mae']:.2f}  (GMM {s['syn_ari_gmm']:.3f}, ZEUS {s['syn_ari_zeus']:.3f}; "
                  f"means {per_task[:, 0].mean():.3f} / {per_task[:, 1].mean():.3f})", flush=True)
            if first is None:
                first = (name, per_task)
                continue
            print("    " + paired_line(per_task, first[1], first[0]), flush=True)


def compare_on_suite(suite: str, datasets: list, checkpoints: list[str], variants: list[tuple]) -> None:
    """Medians on a suite, the mean ARIs, and every later (checkpoint, rule, column orderings) against the first,
    table by table (on the tables both scored): with 22 or 49 tables a median can move by 0.05-0.09 while the
    paired mean moves by a hundredth."""
    print(f"{suite} ({len(datasets)} datasets)")
    first: tuple[str, dict] | None = None
    for ckpt in checkpoints:
        for rule, m in variants:
            rows = real_rows(ckpt, datasets, k_selection=rule, n_estimators=m)
            s = summarize_real(rows)
            scored = f" ({int(s['real_datasets'])} scored)" if s["real_datasets"] < len(datasets) else ""
            name = variant_name(ckpt, rule, m)
            by_name = {r["name"]: (r["ari"], r["ari_known_k"]) for r in rows}
            means = np.array(list(by_name.values())).mean(0) if rows else (float("nan"),) * 2
            print(f"  {name:48s} " + "  ".join(f"{label} {s[k]:.3f}" for k, label in SHOWN.items() if k in s)
                  + f"  (means {means[0]:.3f} / {means[1]:.3f})" + scored, flush=True)
            if first is None:
                first = (name, by_name)
                continue
            common = [n for n in first[1] if n in by_name]
            if common:
                print("    " + paired_line(np.array([by_name[n] for n in common]),
                                           np.array([first[1][n] for n in common]), first[0]), flush=True)


def paired_line(b: np.ndarray, a: np.ndarray, a_name: str) -> str:
    """Task-by-task difference of (n_tasks, 2) scores ``b - a`` (K inferred, true K): the mean difference with its
    standard error and how many tasks got better / worse. Medians of a few hundred tasks move by a few hundredths
    between checkpoints that are equal task by task; the paired mean says whether a difference is there."""
    parts = []
    for j, label in enumerate(("K inferred", "true K")):
        d = b[:, j] - a[:, j]
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
        better, worse = int((d > 1e-9).sum()), int((d < -1e-9).sum())
        parts.append(f"{label} {d.mean():+.4f} +- {se:.4f} (better on {better}, worse on {worse})")
    return f"vs {a_name}: " + "; ".join(parts)


if __name__ == "__main__":
    main()
