"""Record a budgeted run (``jobs/pretrain_budget.py`` output folder) in MLflow, after the fact.

    python jobs/track_history.py runs/gpu1 --run-name gpu1 [--register-as tabclustpfn]

Budgeted runs train where MLflow may be missing (a lent GPU machine); this logs the config, the per-step
history, the summary and the checkpoint as one run.
"""

from __future__ import annotations

import argparse
import sys

from pipeline.tracking import log_budget_run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", help="the --out folder of jobs/pretrain_budget.py")
    p.add_argument("--run-name", help="MLflow run name (default: the folder's name)")
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: sqlite:///mlruns.db)")
    p.add_argument("--register-as", help="also register the checkpoint as this MLflow model")
    args = p.parse_args(argv)
    try:
        run_id = log_budget_run(args.out_dir, args.tracking_uri, args.run_name, args.register_as)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"MLflow run: {run_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
