"""Checkpoints side by side on the evaluation suites, TabClustPFN only (minutes, not the full benchmark's hour).

    PYTHONPATH=. .venv/bin/python benchmarks/compare_checkpoints.py model/weights/tabclustpfn-small.pt runs/x/model.pt

For each checkpoint and suite (the 49 held-out synthetic datasets and the 22 UCI datasets of ``jobs/evaluate.py``):
median ARI with K inferred and with the true K, and median |K^ - K|. The same datasets, seed and code path as
``jobs/evaluate.py`` (``pipeline.evaluation.methods.run_method``), in one process, so it is the quick check of
whether a new checkpoint is worth the full evaluation.
"""

from __future__ import annotations

import argparse
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from pipeline.evaluation.methods import MethodSpec, run_method  # noqa: E402
from pipeline.evaluation.metrics import clustering_scores  # noqa: E402
from pipeline.evaluation.suites import real_suite, synthetic_suite  # noqa: E402


def score(checkpoint: str, datasets) -> dict[str, float]:
    """Median ARI at the inferred and the true K, median K error, over ``datasets``."""
    auto, known = MethodSpec("TabClustPFN", "TabClustPFN", "auto"), MethodSpec("TabClustPFN*", "TabClustPFN", "true")
    ari, ari_k, k_err = [], [], []
    for ds in datasets:
        out = run_method(auto, ds, checkpoint=checkpoint)
        ari.append(clustering_scores(ds.y, out["labels"])["ari"])
        k_err.append(abs(out["k_pred"] - ds.n_clusters))
        ari_k.append(clustering_scores(ds.y, run_method(known, ds, checkpoint=checkpoint)["labels"])["ari"])
    return {"ARI": float(np.median(ari)), "ARI known K": float(np.median(ari_k)), "k-MedAE": float(np.median(k_err))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--suite", choices=["synthetic", "real"], action="append", help="default: both")
    args = p.parse_args()
    suites = {"synthetic": synthetic_suite, "real": real_suite}
    for name in args.suite or ["synthetic", "real"]:
        datasets = suites[name]()
        print(f"{name} ({len(datasets)} datasets)")
        for ckpt in args.checkpoints:
            s = score(ckpt, datasets)
            print(f"  {ckpt:48s} " + "  ".join(f"{k} {v:.3f}" for k, v in s.items()), flush=True)


if __name__ == "__main__":
    main()
