"""Checkpoints side by side on the evaluation suites, TabClustPFN only (minutes, not the full benchmark's hour).

    PYTHONPATH=. .venv/bin/python benchmarks/compare_checkpoints.py model/weights/tabclustpfn-small.pt runs/x/model.pt
    PYTHONPATH=. .venv/bin/python benchmarks/compare_checkpoints.py A B --suite prior --prior-tasks 200

For each checkpoint and suite (the 49 held-out synthetic datasets and the 22 UCI datasets of ``jobs/evaluate.py``):
median ARI with K inferred and with the true K, and median |K^ - K|. The same datasets, seed and code path as
``jobs/evaluate.py`` (``tune.evaluate.evaluate_real`` runs ``pipeline.evaluation.methods.run_method`` on any list
of datasets), in one process, so it is the quick check of whether a new checkpoint is worth the full evaluation.
``--suite prior`` scores held-out tasks of the paper's prior (N 500-1000, both mechanisms; the validation seeds,
which no training stream reaches): the set to choose between checkpoints on, since the synthetic and real suites
are the test sets that the model card reports. ``--k-selection RULE`` (repeatable) scores the inferred K under
each of the estimator's rules (default: its default rule only), e.g. ``--k-selection expected_ari
--k-selection posterior_mode``.
"""

from __future__ import annotations

import argparse
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from model.checkpoint import load_checkpoint  # noqa: E402
from model.selection import DEFAULT_K_SELECTION, K_SELECTIONS  # noqa: E402
from pipeline.config import StreamConfig  # noqa: E402
from pipeline.evaluation.suites import real_suite, synthetic_suite  # noqa: E402
from tune.evaluate import evaluate_real, fixed_synthetic_tasks, score_tasks, summarize_synthetic  # noqa: E402

SHOWN = {"real_ari": "ARI", "real_ari_known_k": "ARI known K", "real_k_medae": "k-MedAE"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--suite", choices=["synthetic", "real", "prior"], action="append",
                   help="default: synthetic and real")
    p.add_argument("--prior-tasks", type=int, default=200, help="held-out prior tasks of --suite prior")
    p.add_argument("--k-selection", choices=K_SELECTIONS, action="append", help="default: the estimator's")
    args = p.parse_args()
    suites = {"synthetic": synthetic_suite, "real": real_suite}
    for name in args.suite or ["synthetic", "real"]:
        if name == "prior":
            compare_on_prior(args.checkpoints, args.prior_tasks, args.k_selection or [None])
            continue
        datasets = suites[name]()
        print(f"{name} ({len(datasets)} datasets)")
        for ckpt in args.checkpoints:
            for rule in args.k_selection or [None]:
                s = evaluate_real(ckpt, datasets, k_selection=rule)
                scored = f" ({int(s['real_datasets'])} scored)" if s["real_datasets"] < len(datasets) else ""
                name = ckpt if rule is None else f"{ckpt} [{rule}]"
                print(f"  {name:48s} " + "  ".join(f"{label} {s[k]:.3f}" for k, label in SHOWN.items() if k in s)
                      + scored, flush=True)


def compare_on_prior(checkpoints: list[str], n_tasks: int, rules: list) -> None:
    """Median ARI with K inferred / the true K and the mean |K^ - K| on held-out tasks of the paper's prior."""
    tasks = fixed_synthetic_tasks(StreamConfig(), n_tasks)
    print(f"prior ({n_tasks} held-out tasks, N 500-1000)")
    for ckpt in checkpoints:
        net = load_checkpoint(ckpt)[0]
        for rule in rules:
            s = summarize_synthetic(score_tasks(net, tasks, rule=rule or DEFAULT_K_SELECTION))
            name = ckpt if rule is None else f"{ckpt} [{rule}]"
            print(f"  {name:48s} ARI {s['syn_ari']:.3f}  ARI known K {s['syn_ari_known_k']:.3f}  "
                  f"k-MAE {s['syn_k_mae']:.2f}  (GMM {s['syn_ari_gmm']:.3f}, ZEUS {s['syn_ari_zeus']:.3f})", flush=True)


if __name__ == "__main__":
    main()
