"""What the default noise screening (``screen_noise="auto"``) costs in time, against the estimator without it.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_screening.py --out docs/results/bench-screening

Every table of the development suite and of the test suites (``dev``, ``real``, ``openml``, ``synthetic``; as
``jobs/evaluate.py`` loads them) is clustered by ``TabClustPFN(random_state=0)`` with ``screen_noise=False`` and with
``"auto"``, alternating (so load drift on a shared machine hits both alike), ``--repeats`` times each; a table's
time is the fastest of its repeats, after one warm-up fit that loads the network. Printed per suite: the median
time of each, the median of the per-table ratio auto / off with its quartiles, how many tables the screening
dropped columns from (before the put-back, and after) and in how many it set kept categories or flags aside (they
only split the clusters found without them). Answers are not compared here: the evaluation reports do.
Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

SUITES = ("dev", "real", "openml", "synthetic")


def _time(est, frame) -> float:
    start = time.perf_counter()
    est.fit(frame)
    return time.perf_counter() - start


def measure(suites: tuple[str, ...], repeats: int) -> pd.DataFrame:
    import warnings

    from model.estimator import TabClustPFN
    from pipeline.evaluation import suites as eval_suites

    off, auto = TabClustPFN(random_state=0, screen_noise=False), TabClustPFN(random_state=0, screen_noise="auto")
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for suite in suites:
            data = getattr(eval_suites, f"{suite}_suite")()
            off.fit(data[0].features)  # loads the network
            auto.fit(data[0].features)
            for d in data:
                t_off, t_auto = [], []
                for _ in range(repeats):
                    t_off.append(_time(off, d.features))
                    t_auto.append(_time(auto, d.features))
                first = auto.preprocessor().fit(d.features).screened_  # the fit's own settings, before put-back
                out = auto.preprocessor_.screened_
                rows.append({"suite": suite, "table": d.name, "rows": d.features.shape[0],
                             "columns": d.features.shape[1], "off_s": min(t_off), "auto_s": min(t_auto),
                             "screened": len(first), "kept_out": len(set(out) & set(first)),
                             "set_aside": len(set(out) - set(first))})
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, command: str) -> list[str]:
    from model.estimator import default_checkpoint_path
    from pipeline.evaluation.report import checkpoint_line, machine_lines

    lines = ["# The default noise screening's cost in time (`screen_noise=\"auto\"` against `False`)", "",
             "| suite | tables | median s, off | median s, auto | auto / off per table: median [quartiles] | "
             "tables screened (after the put-back) | tables with kept columns set aside |",
             "|---|---|---|---|---|---|---|"]
    for suite, g in df.groupby("suite", sort=False):
        ratio = g["auto_s"] / g["off_s"]
        q1, q2, q3 = np.percentile(ratio, [25, 50, 75])
        lines.append(f"| {suite} | {len(g)} | {g['off_s'].median():.3f} | {g['auto_s'].median():.3f} | "
                     f"{q2:.3f} [{q1:.3f}, {q3:.3f}] | {int((g['screened'] > 0).sum())} "
                     f"({int((g['kept_out'] > 0).sum())}) | {int((g['set_aside'] > 0).sum())} |")
    return [*lines, "", f"Command: `{command}`", checkpoint_line(str(default_checkpoint_path())), *machine_lines()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", nargs="+", default=list(SUITES), choices=SUITES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="write OUT.md and OUT.csv (default: print only)")
    args = ap.parse_args(argv)
    df = measure(tuple(args.suite), args.repeats)
    given = sys.argv[1:] if argv is None else list(argv)
    text = "\n".join(report(df, "python benchmarks/bench_screening.py " + " ".join(given))) + "\n"
    print(text)
    if args.out:
        df.to_csv(args.out + ".csv", index=False)
        with open(args.out + ".md", "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
