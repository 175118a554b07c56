"""One method's answers in two evaluation runs of the same tables, table by table: what a changed default did.

    PYTHONPATH=. .venv/bin/python benchmarks/paired_results.py docs/results/evaluation-test.csv \
        docs/results/evaluation-test-refine-kmeans.csv --out docs/results/evaluation-test-refine-change.md

For every suite both results files hold (``jobs/evaluate.py``'s ``results.csv``), the method's ARI with K inferred
in run A against run B on the tables both ran: median ARI of each, mean difference A - B with its 95 % t-interval,
win rate (a tie counts half), two-sided Wilcoxon p (``pipeline.evaluation.doc_tables.paired_comparison``, as the
README's tables), tables better / worse, and the tables that moved most either way. Writes a Markdown file.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

#: Tables listed per suite and direction among those that moved most.
MOVED = 4


def per_table(path: str, method: str) -> pd.DataFrame:
    results = pd.read_csv(path)
    rows = results[(results["method"] == method) & (results["k_mode"] == "auto")]
    if rows.empty:
        raise SystemExit(f"error: {path} has no rows of {method!r} with K inferred")
    return rows.set_index(["suite", "dataset"])[["ari", "k_pred"]]


def compare(a: pd.DataFrame, b: pd.DataFrame, label_a: str, label_b: str) -> list[str]:
    from pipeline.evaluation.doc_tables import paired_comparison, suites_in

    lines = [f"| suite | tables | median ARI {label_a} | median ARI {label_b} | mean diff [95% CI] | win rate | "
             "Wilcoxon p | better / worse |", "|---|---|---|---|---|---|---|---|"]
    moved = []
    for suite in suites_in(a.reset_index()):
        if suite not in b.index.get_level_values("suite"):
            continue
        ra, rb = a.loc[suite, "ari"], b.loc[suite, "ari"]
        p = paired_comparison(ra, rb)
        d = (ra - rb).dropna()
        lines.append(f"| {suite} | {p.n} | {ra.median():.3f} | {rb.median():.3f} | {p.mean_diff:+.3f} "
                     f"[{p.ci_low:+.3f}, {p.ci_high:+.3f}] | {p.win_rate:.2f} | {p.wilcoxon_p:.2g} | "
                     f"{(d > 1e-9).sum()} / {(d < -1e-9).sum()} |")
        order = d.sort_values()
        worst = [f"{t} {rb[t]:.2f} -> {ra[t]:.2f}" for t in order.index[:MOVED] if order[t] < -1e-9]
        best = [f"{t} {rb[t]:.2f} -> {ra[t]:.2f}" for t in order.index[::-1][:MOVED] if order[t] > 1e-9]
        moved.append(f"- {suite}: most lost: {', '.join(worst) or 'none'}; most gained: {', '.join(best) or 'none'}.")
    return [*lines, "", f"Tables that moved most ({label_b} -> {label_a}, ARI):", "", *moved]


def main(argv=None) -> None:
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, machine_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="results.csv of run A (e.g. the shipped defaults)")
    ap.add_argument("b", help="results.csv of run B, the same tables (e.g. one setting changed back)")
    ap.add_argument("--method", default="TabClustPFN")
    ap.add_argument("--labels", nargs=2, default=None, metavar=("A", "B"), help="names of the runs (default: files)")
    ap.add_argument("--out", required=True, help="the Markdown file to write")
    args = ap.parse_args(argv)
    label_a, label_b = args.labels or (Path(args.a).stem, Path(args.b).stem)
    lines = compare(per_table(args.a, args.method), per_table(args.b, args.method), label_a, label_b)
    given = sys.argv[1:] if argv is None else list(argv)
    out = [f"# {args.method}, K inferred: {label_a} against {label_b}, table by table", "",
           f"A = `{args.a}`, B = `{args.b}`; differences are A - B.", "", *lines, "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/paired_results.py " + " ".join(given) + "`",
           *machine_lines()]
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    Path(args.out).write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
