"""Per-table records of the development sets for choosing how K is chosen: each candidate's features and ARI.

    PYTHONPATH=. .venv/bin/python benchmarks/k_rule_records.py --out outputs/k-rule

The development sets of ``benchmarks/choose_checkpoint.py`` (``prior``: 400 held-out tasks of the paper's prior,
``noisy``: 200 with noise columns and contaminated rows, ``one-informative``: 200 with one informative column among
noise columns, ``coarse``: 200 with columns read as levels, rounded values or counts, ``dev``: the 23 tables of
``../shared/benchmarks/dev``, ``shapes``: the 54 generated shape tables of ``benchmarks/shapes.py``; where asked
for, ``dev-derived``: 1,000 tables derived from the dev suite's, ``pipeline.k_ranker_fit.dev_derived_table``), each
clustered once by the shipped network (``--checkpoint``) as ``TabClustPFN`` does by default; the record of a table
keeps, per candidate K, the features of :mod:`model.k_features` and the ARI of what each refine returns at that K
(``pipeline.k_ranker_fit.table_record``). Writes
``OUT/<set>.npz`` with the network's weights sha256, which ``benchmarks/choose_k_rule.py`` checks. ``--offset``:
a fresh draw of the generated sets (their tables from that one on), to confirm a choice on tables it never read.
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "coarse": 200, "dev": 23, "shapes": 54}
#: Sets recorded only where asked for (``--set``): the dev suite's derived tables (``benchmarks.choose_checkpoint``).
OPTIONAL_SIZES = {"dev-derived": 1000}


def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)  # a worker process per core


def _work(args: tuple[str, str, int, int, int, int]) -> dict[str, np.ndarray]:
    checkpoint, which, n, offset, start, stop = args
    from benchmarks.choose_checkpoint import tables
    from model.checkpoint import load_checkpoint
    from pipeline.k_ranker_fit import records_for

    net = load_checkpoint(checkpoint)[0].without_k_ranker().eval()
    return records_for(net, (t for i, t in enumerate(tables(which, n, offset)) if start <= i < stop))


def main(argv=None) -> None:
    from model.checkpoint import load_checkpoint, weights_sha256
    from model.estimator import default_checkpoint_path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", nargs="+", default=list(SIZES), choices=[*SIZES, *OPTIONAL_SIZES])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()))
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tables per set (default: all)")
    ap.add_argument("--workers", type=int, default=2, help="processes (1: in this one)")
    ap.add_argument("--offset", type=int, default=0,
                    help="a fresh draw of the generated sets: their tables from this one on (not for dev)")
    ap.add_argument("--out", default="outputs/k-rule")
    args = ap.parse_args(argv)
    if args.offset and "dev" in args.set:
        ap.error("the dev suite has no fresh draw: leave it out of --set with --offset")
    os.makedirs(args.out, exist_ok=True)
    sha = weights_sha256(load_checkpoint(args.checkpoint)[0].without_k_ranker().state_dict())
    pool = ProcessPoolExecutor(args.workers, initializer=_one_thread) if args.workers > 1 else None
    try:
        for which in args.set:
            size = {**SIZES, **OPTIONAL_SIZES}[which]
            n = min(size, args.tasks or size)
            step = -(-n // args.workers)  # a set's generator draws the whole set: one chunk per worker
            jobs = [(args.checkpoint, which, n, args.offset, s, min(s + step, n)) for s in range(0, n, step)]
            parts = list(pool.map(_work, jobs) if pool else map(_work, jobs))
            rec = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
            np.savez(os.path.join(args.out, f"{which}.npz"), weights_sha256=np.array(sha), **rec)
            print(f"{which}: {len(rec['names'])} tables", flush=True)
    finally:
        if pool is not None:
            pool.shutdown()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
