"""How K is chosen among the refined candidates, chosen on development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/k_rule_records.py --out outputs/k-rule
    PYTHONPATH=. .venv/bin/python benchmarks/choose_k_rule.py runs/k-ranker/s0.pt runs/k-ranker/s1.pt \
        --records outputs/k-rule --out docs/results/choice-k-rule

From the development sets' records (``benchmarks/k_rule_records.py``: each table's candidates K = 2..k_hi with
their features and ARI, computed once by the network), every rule picks one candidate per table:

- ``expected_ari``: the rule of the shipped estimator before the ranker (highest expected ARI under CIN's
  posterior), the baseline;
- ``silhouette``: the candidate of highest silhouette (the KMeans+ peer's rule, on the network's candidates);
- ``expected_ari+silhouette``: the sum of the two;
- ``mix_bic``: the candidate whose diagonal mixture (``refine="gmm"``'s) has the best penalised likelihood (BIC);
- each checkpoint given: the K ranker it carries (``jobs/fit_k_ranker.py``), on the features of the candidates it
  was fitted on (the Lloyd-refined ones or their diagonal mixtures), which must sit on the network the records
  were computed with (its weights' sha256 is checked);
- with ``--cross-fit FULL FOLD0 FOLD1``, a ranker fitted with tables derived from the dev suite
  (``--extra-tables dev-derived=N``): FULL's picks on the generated sets, and on ``dev`` cross-fitted, each table
  picked by the ranker fitted on the other fold's derived tables (``dev-derived-0`` / ``-1``), since FULL saw them.

A rule's pick scores the ARI of the partition the estimator's default refine returns at that K (the records'
``ari``). Per development set (``prior``, ``noisy``, ``one-informative``, ``coarse``, ``dev``, ``shapes``; ``--sets``;
``dev-derived`` where asked for, its standard errors over its source tables)
each rule against ``expected_ari`` (or ``--baseline RULE``, one of the rules above, e.g. the shipped checkpoint given
as one of the checkpoints; or, with ``--baseline-from CSV RULE``, RULE's picks in an earlier choice on the same
records) table by table: paired mean ARI difference +- standard error, tables better / worse, mean |K^ - K|. The
protocol (docs/DESIGN.md): a rule qualifies when it gains beyond two standard errors on a set and loses beyond one
on none; of those that qualify the one with the largest mean gain over the sets (each weighted equally) is chosen.
Writes ``OUT.md`` and ``OUT.csv`` (one row per table: each rule's K and ARI).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from model.k_features import FEATURES, features_key
from pipeline.evaluation.protocol import LOSS, RULE, gains_and_losses

SETS = ("prior", "noisy", "one-informative", "coarse", "dev", "shapes")
#: Sets compared on only where asked for (``--sets``).
OPTIONAL_SETS = ("dev-derived",)
BASELINE = "expected_ari"


def argmax_rule(score: np.ndarray) -> np.ndarray:
    """Index of the best admissible candidate per table (NaN: not admissible; ties: the smallest K)."""
    return np.argmax(np.where(np.isnan(score), -np.inf, score), axis=1)


def load_records(root: str, sets: list[str]) -> tuple[dict[str, dict[str, np.ndarray]], str]:
    """``benchmarks/k_rule_records.py``'s records of ``sets`` under ``root`` and the sha256 of the network that wrote
    them all (refused where one is missing or they come from different networks)."""
    recs = {}
    for which in sets:
        path = Path(root) / f"{which}.npz"
        if not path.exists():
            raise SystemExit(f"error: no records {path}: run benchmarks/k_rule_records.py --out {root}")
        with np.load(path) as d:
            recs[which] = {k: d[k] for k in d.files}
    shas = {str(r["weights_sha256"]) for r in recs.values()}
    if len(shas) != 1:
        raise SystemExit(f"error: the sets' records come from different networks {sorted(shas)}")
    return recs, shas.pop()


def load_rankers(paths: list[str], weights_sha: str) -> dict[str, object]:
    from model.checkpoint import load_checkpoint, weights_sha256

    rankers = {}
    for path in paths:
        net, _ = load_checkpoint(path)
        if net.k_ranker is None:
            raise SystemExit(f"error: {path} carries no K ranker (fit one with jobs/fit_k_ranker.py)")
        sha = weights_sha256(net.without_k_ranker().state_dict())
        if sha != weights_sha:
            raise SystemExit(f"error: {path} sits on network {sha[:12]}, the records were computed with "
                             f"{weights_sha[:12]}: recompute them with benchmarks/k_rule_records.py --checkpoint")
        rankers[Path(path).stem] = (net.k_ranker, net.cfg.k_ranker_candidates)
    return rankers


def picks(rec: dict[str, np.ndarray], rankers: dict[str, object]) -> dict[str, np.ndarray]:
    from model.k_ranker import record_scores

    f = rec["features"]
    col = {name: f[..., i] for i, name in enumerate(FEATURES)}
    out = {BASELINE: argmax_rule(col["exp_ari"]), "silhouette": argmax_rule(col["silhouette"]),
           "expected_ari+silhouette": argmax_rule(col["exp_ari"] + col["silhouette"]),
           "mix_bic": argmax_rule(col["mix_bic"])}
    for name, (ranker, stage) in rankers.items():  # each on the features of the candidates it was fitted on
        if features_key(stage) not in rec:
            raise SystemExit(f"error: the records hold no {features_key(stage)!r} for {name}: recompute them with "
                             "benchmarks/k_rule_records.py")
        out[name] = record_scores(ranker, rec[features_key(stage)], rec["ari"]).argmax(-1)
    return out


def cross_fit_picks(which: str, rec: dict[str, np.ndarray], full, fold0, fold1, name: str) -> dict[str, np.ndarray]:
    """``{name: picks}``: ``full``'s picks, but on the dev suite's tables and those derived from them the picks of
    the ranker whose fit saw none of the table's fold (:func:`pipeline.k_ranker_fit.dev_suite_folds`): ``fold1``'s
    on fold 0, ``fold0``'s on fold 1."""
    from pipeline.k_ranker_fit import dev_derived_origin, dev_suite_folds

    if which == "dev":
        fold = dev_suite_folds()
    elif which == "dev-derived":
        fold = {str(n): dev_derived_origin(str(n))[0] for n in rec["names"]}
    else:
        return {name: picks(rec, {name: full})[name]}
    by_fold = [picks(rec, {name: ranker})[name] for ranker in (fold1, fold0)]
    return {name: np.array([by_fold[fold[str(n)]][j] for j, n in enumerate(rec["names"])])}


def clustered_se(d: np.ndarray, clusters: np.ndarray) -> float:
    """Standard error of the mean of ``d`` whose values are alike within ``clusters`` (tables derived from one
    source): the spread of the clusters' summed deviations, not the tables'; one table per cluster: the usual
    ``std(ddof=1) / sqrt(n)``."""
    groups = pd.Series(d - d.mean()).groupby(clusters).sum().to_numpy()
    g = len(groups)
    return float(np.sqrt((groups ** 2).sum() * g / (g - 1)) / len(d)) if g > 1 else float("nan")


def table(df: pd.DataFrame, rules: list[str], baseline: str = BASELINE
          ) -> tuple[list[str], dict[str, dict[str, tuple[float, float]]]]:
    lines = [f"| set | tables | rule | median ARI | mean ARI | against {baseline} (mean +- s.e.) | better / worse "
             "| mean abs K error |", "|---|---|---|---|---|---|---|---|"]
    diffs: dict[str, dict[str, tuple[float, float]]] = {r: {} for r in rules}
    for which, part in df.groupby("set", sort=False):
        for rule in rules:
            d = part[rule] - part[baseline]
            se = clustered_se(d.to_numpy(), (part["source"] if "source" in part else part.index).to_numpy())
            diffs[rule][which] = (float(d.mean()), se)
            lines.append(f"| {which} | {len(part)} | {rule} | {part[rule].median():.3f} | {part[rule].mean():.3f} | "
                         f"{d.mean():+.4f} +- {se:.4f} | {(d > 1e-9).sum()} / {(d < -1e-9).sum()} | "
                         f"{(part[rule + '_k'] - part.K).abs().mean():.2f} |")
    return lines, diffs


def rows_per_set(work, checkpoint: str, sets: list[str], sizes: dict[str, int], tasks: int | None,
                 workers: int, extra: tuple = ()) -> list[dict]:
    """``work((checkpoint, set, n, start, stop, *extra))`` -> rows of tables start..stop-1, for each set's first n
    tables (``sizes``, at most ``tasks``), split over ``workers`` processes (1: in this one)."""
    from concurrent.futures import ProcessPoolExecutor

    rows = []
    pool = ProcessPoolExecutor(workers) if workers > 1 else None
    try:
        for which in sets:
            n = min(sizes[which], tasks or sizes[which])
            step = -(-n // workers)
            jobs = [(checkpoint, which, n, s, min(s + step, n), *extra) for s in range(0, n, step)]
            for part in (pool.map(work, jobs) if pool else map(work, jobs)):
                rows.extend(part)
            print(f"{which}: {n} tables", flush=True)
    finally:
        if pool is not None:
            pool.shutdown()
    return rows


#: Every table of each development set, for the choices that fit the estimator once per variant
#: (``choose_dequantize.py``, ``choose_ensemble.py``).
ESTIMATOR_SET_SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "coarse": 200, "skewed": 200,
                       "low-d": 200, "dev": 23, "shapes": 54}


def fit_each(make, variants, checkpoint: str, which: str, n: int, start: int, stop: int, offset: int,
             extra=None, alter=None) -> list[dict]:
    """Tables start..stop-1 of the first ``n`` of development set ``which`` (from validation seed ``offset``), each
    fitted by ``make(variant, checkpoint)`` (an unfitted ``TabClustPFN``) for every variant, on one torch thread (as
    ``jobs/evaluate.py`` runs a method; the caller's threads are given back) -> a row per table: per variant its
    ARI, K (``VARIANT_k``), seconds (``VARIANT_s``) and ``extra(estimator)``'s fields (``VARIANT_FIELD``).
    ``alter(frame, seed)``: the table every variant is given instead (seed: the table's index in the set plus
    ``offset``); the row then holds its share of missing cells (``missing_share``)."""
    import time

    import torch
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_checkpoint import tables

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        estimators = {v: make(v, checkpoint) for v in variants}
        for est in estimators.values():  # each loads the network once, before any clock starts
            est.fit(np.random.default_rng(0).normal(size=(32, 2)))
        rows = []
        for i, (name, frame, y) in enumerate(tables(which, n, offset)):
            if not start <= i < stop:
                continue
            row = {"set": which, "table": name, "K": int(len(np.unique(y))), "rows": frame.shape[0],
                   "columns": frame.shape[1]}
            if alter is not None:
                frame = alter(frame, offset + i)
                row["missing_share"] = float(frame.isna().to_numpy().mean())
            for variant, est in estimators.items():
                started = time.perf_counter()
                est.fit(frame)
                row.update({variant: adjusted_rand_score(y, est.labels_), f"{variant}_k": est.n_clusters_,
                            f"{variant}_s": time.perf_counter() - started})
                row.update({f"{variant}_{key}": value for key, value in (extra(est) if extra else {}).items()})
            rows.append(row)
        return rows
    finally:
        torch.set_num_threads(threads)


def with_baseline(order: tuple[str, ...], variants: list[str], baseline: str) -> list[str]:
    """``variants`` in ``order``, the baseline first whether asked for or not."""
    return [baseline, *[v for v in order if v != baseline and v in variants]]


def variant_options(order: tuple[str, ...], default_variants: list[str], baseline: str) -> argparse.ArgumentParser:
    """The ``--variants`` and ``--baseline`` options of a choice among the estimator variants ``order`` (a parser
    without help, for :func:`estimator_variant_rows`'s ``parents``)."""
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--variants", nargs="+", default=list(default_variants), choices=order,
                     help="the variants fitted, the baseline always among them (default: %(default)s)")
    own.add_argument("--baseline", default=baseline, choices=order,
                     help="what the variants are judged against (default: %(default)s)")
    return own


def estimator_variant_rows(work, doc: str, out: str, argv=None, sizes: dict[str, int] | None = None,
                           parents: tuple[argparse.ArgumentParser, ...] = (), passed=None,
                           default_sets: list[str] | None = None) -> tuple[argparse.Namespace, pd.DataFrame]:
    """The command line those choices share (``--checkpoint``, ``--set``, ``--tasks``, ``--workers``, ``--offset``,
    ``--out``, default ``out``) parsed from ``argv``, and the rows of ``work`` over the sets asked for
    (:func:`rows_per_set`, the offset passed on); ``sizes``: the sets and their sizes (default
    :data:`ESTIMATOR_SET_SIZES`); ``default_sets``: those ``--set`` defaults to (default: all of them);
    ``parents``: parsers of the caller's own options (``add_help=False``), listed in ``--help`` and parsed with the
    rest; ``passed(args)``: a tuple passed on to ``work`` after the offset."""
    from model.estimator import default_checkpoint_path

    sizes = ESTIMATOR_SET_SIZES if sizes is None else sizes
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0], parents=list(parents))
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()))
    ap.add_argument("--set", nargs="+", default=list(default_sets or sizes), choices=list(sizes),
                    help="default: " + ("all of them" if default_sets is None else " ".join(default_sets)))
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tables per set (default: all)")
    ap.add_argument("--workers", type=int, default=2, help="processes (1: in this one)")
    ap.add_argument("--offset", type=int, default=0,
                    help="the synthetic sets' tables from this validation seed on: a fresh draw to confirm a choice")
    ap.add_argument("--out", default=out)
    args = ap.parse_args(argv)
    if args.offset and "dev" in args.set:
        ap.error("--offset draws fresh synthetic tables; the dev suite has none: leave dev out of --set")
    extra = (args.offset, *(passed(args) if passed else ()))
    rows = rows_per_set(work, args.checkpoint, args.set, sizes, args.tasks, args.workers, extra=extra)
    return args, pd.DataFrame(rows)


def write_variant_report(args: argparse.Namespace, df: pd.DataFrame, title: str, lines: list[str], notes: list[str],
                         verdicts: list[str], chosen: str | None, baseline: str, script: str, given: list[str],
                         protocol: str = "") -> None:
    """``OUT.md`` and ``OUT.csv`` of a choice among estimator variants (``choose_dequantize.py``,
    ``choose_imputation.py``, ``choose_power.py``, ``choose_screening.py``): ``title`` (with the sets: a fresh draw
    where ``args.offset``), the paired ``table`` as variants, each of ``notes`` as a paragraph, the protocol
    (``protocol``: what it adds), the ``verdict`` lines, the choice and the provenance (``script`` run with
    ``given``)."""
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    sets = "a fresh draw of the synthetic development sets" if args.offset else "development sets"
    out = [f"# {title.format(sets=sets)}", "", *[line.replace("| rule |", "| variant |") for line in lines], "",
           *[part for note in notes for part in (note, "")],
           f"Protocol: {RULE}{protocol}.", "",
           *[v.replace("rule", "variant") for v in verdicts], "",
           f"Chosen: {'`' + chosen + '`' if chosen else f'none (the baseline `{baseline}` stays)'}.", "",
           PROVENANCE_PREFIXES["command"] + f"`python benchmarks/{script} " + " ".join(given) + "`",
           checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df, out)


def write_results(out: str | None, df: pd.DataFrame, lines: list[str]) -> None:
    """``OUT.csv`` (the rows) and ``OUT.md`` (the report's lines), which is printed too; ``out`` None: printed only."""
    if out is not None:
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        df.to_csv(out + ".csv", index=False)
        Path(out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def cost_verdict(df: pd.DataFrame, diffs: dict, variants: list[str], baseline: str, setting: str,
                 subset: tuple[str, pd.Series], unit) -> tuple[str | None, list[str], list[str]]:
    """The protocol's rule for a choice made for cost on ``df``'s rows (``VARIANT_s``: seconds per table): a cheaper
    variant qualifies when it loses beyond one standard error on no set of ``diffs``, and the cheapest of those wins
    -> (the chosen variant or None, the lines of the time table, one verdict line per variant). ``setting`` heads
    the variants' column, ``subset`` (label, row mask) adds a column of median seconds over those rows only, and
    ``unit(variant)`` names a variant in the verdicts (``"3 orderings"``)."""
    from pipeline.evaluation.protocol import cheapest_holding

    cost = {v: float(df[f"{v}_s"].median()) for v in variants}
    chosen, losses = cheapest_holding({v: diffs[v] for v in variants if v != baseline},
                                      {"baseline": cost[baseline], **cost})
    label, mask = subset
    part = df[mask]
    times = [f"| {setting} | median s per table (all sets) | median s per table ({label}) | vs {baseline} (all sets) |",
             "|---|---|---|---|"]
    times += [f"| {v} | {cost[v]:.3f} | {part[f'{v}_s'].median() if len(part) else float('nan'):.3f} | "
              f"{cost[v] / cost[baseline]:.2f} |" for v in variants]
    verdicts = [f"- {unit(v)}: {'holds' if not losses[v] else 'does not hold'} (losses on "
                f"{', '.join(losses[v]) or 'no set'}; {cost[v] / cost[baseline]:.2f} of the baseline's time)"
                for v in variants if v != baseline]
    return chosen, times, verdicts


def cost_report(args, argv, title: str, column: str, lines: list[str], times: list[str], verdicts: list[str],
                what: str, chosen: str, script: str) -> list[str]:
    """The report of a choice made for cost (:func:`cost_verdict`) by ``benchmarks/SCRIPT``: ``title``, the paired
    table ``lines`` (its variants' column headed ``column``), the time table, the rule for a cheaper ``what``, the
    verdicts, the ``chosen`` line, then the command, checkpoint and machine."""
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    given = sys.argv[1:] if argv is None else list(argv)
    sets = "a fresh draw of the synthetic development sets" if args.offset else "development sets"
    return [f"# {title} ({sets}, K inferred)", "", *[line.replace("| rule |", f"| {column} |") for line in lines], "",
            f"Fit time (the network loaded before), one torch thread per process, {args.workers} process(es) at "
            "once:", "", *times, "",
            f"Protocol (a choice for cost): a cheaper {what} qualifies when it loses on no set ({LOSS}); the cheapest "
            "of those wins.", "", *verdicts, "", chosen, "",
            PROVENANCE_PREFIXES["command"] + f"`python benchmarks/{script} " + " ".join(given) + "`",
            checkpoint_line(args.checkpoint), *machine_lines()]


def cost_choice(work, doc: str, argv, *, out: str, variants, baseline: str, setting: str, subset, unit, title: str,
                column: str, what: str, script: str, sizes: dict[str, int] | None = None) -> None:
    """A whole choice made for cost by ``benchmarks/SCRIPT``: the rows of ``work`` (:func:`estimator_variant_rows`),
    the paired table, :func:`cost_verdict` (``subset(df)``: its extra time column) and :func:`cost_report`, written
    to ``--out`` (default ``out``); ``unit(variant)`` names a variant in the verdicts and the chosen line."""
    args, df = estimator_variant_rows(work, doc, out, argv, sizes=sizes)
    lines, diffs = table(df, list(variants), baseline)
    chosen, times, verdicts = cost_verdict(df, diffs, list(variants), baseline, setting, subset(df), unit)
    choice = f"Chosen: {unit(chosen) if chosen else f'none (the baseline, {unit(baseline)}, stays)'}."
    write_results(args.out, df, cost_report(args, argv, title, column, lines, times, verdicts, what, choice, script))


def verdict(diffs: dict[str, dict[str, tuple[float, float]]], baseline: str = BASELINE
            ) -> tuple[str | None, list[str]]:
    lines, qualified = [], {}
    for rule, per_set in diffs.items():
        if rule == baseline:
            continue
        gains, losses = gains_and_losses(per_set)
        ok = bool(gains) and not losses
        if ok:
            qualified[rule] = float(np.mean([m for m, _ in per_set.values()]))
        lines.append(f"- `{rule}`: {'qualifies' if ok else 'does not qualify'} (gains beyond 2 s.e. on "
                     f"{', '.join(gains) or 'no set'}; losses on {', '.join(losses) or 'no set'})")
    chosen = max(qualified, key=qualified.get) if qualified else None
    return chosen, lines


def main(argv=None) -> None:
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines
    from pipeline.k_ranker_fit import dev_derived_origin

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="*", help="checkpoints carrying a K ranker, on the records' network")
    ap.add_argument("--records", default="outputs/k-rule")
    ap.add_argument("--baseline", default=BASELINE,
                    help="the rule the others are compared with: one of the fixed rules or a checkpoint's stem "
                         "(default: %(default)s)")
    ap.add_argument("--baseline-from", nargs=2, metavar=("CSV", "RULE"), default=None,
                    help="the baseline: RULE's picks in an earlier choice's CSV on the same records (e.g. the shipped "
                         "ranker's), in place of expected_ari")
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=[*SETS, *OPTIONAL_SETS],
                    help="the development sets to compare on (default: all but dev-derived, which only a "
                         "--cross-fit ranker needs; a fresh draw has no dev)")
    ap.add_argument("--cross-fit", nargs=3, metavar=("FULL", "FOLD0", "FOLD1"), action="append", default=[],
                    help="a ranker fitted with tables derived from the dev suite (jobs/fit_k_ranker.py --extra-tables "
                         "dev-derived=N), judged on dev by cross-fitting: FULL's picks on every other set, on dev "
                         "those of FOLD0 (fitted with dev-derived-0) on fold 1's tables and FOLD1's on fold 0's; "
                         "once per ranker (e.g. per fit seed)")
    ap.add_argument("--out", default="docs/results/choice-k-rule")
    args = ap.parse_args(argv)
    recs, sha = load_records(args.records, args.sets)
    rankers = load_rankers(args.checkpoints, sha)
    crossed = {Path(paths[0]).stem: load_rankers(paths, sha) for paths in args.cross_fit}
    if len(crossed) < len(args.cross_fit) or set(crossed) & set(rankers):
        raise SystemExit("error: each --cross-fit FULL needs a name of its own among the rules")
    for paths, triple in zip(args.cross_fit, crossed.values()):
        if len(triple) != 3:
            raise SystemExit(f"error: --cross-fit needs three checkpoints of different names, got {paths}")
    rows = []
    for which, rec in recs.items():
        chosen = picks(rec, rankers)
        for name, triple in crossed.items():
            chosen.update(cross_fit_picks(which, rec, *triple.values(), name=name))
        t = np.arange(len(rec["ari"]))
        for j, name in enumerate(rec["names"]):
            row = {"set": which, "table": str(name), "K": int(rec["k_true"][j]), "k_hi": int(rec["k_hi"][j]),
                   "source": dev_derived_origin(str(name))[1] if which == "dev-derived" else str(name)}
            for rule, pick in chosen.items():
                row[rule] = float(rec["ari"][t, pick][j])
                row[rule + "_k"] = int(pick[j]) + 2
            rows.append(row)
    df = pd.DataFrame(rows)
    rules = [BASELINE, "silhouette", "expected_ari+silhouette", "mix_bic", *rankers, *crossed]
    if args.baseline not in rules:
        raise SystemExit(f"error: --baseline {args.baseline!r} is none of the rules {rules}")
    baseline = args.baseline
    if args.baseline_from:
        path, baseline = args.baseline_from
        earlier = pd.read_csv(path)
        if baseline not in earlier.columns:
            raise SystemExit(f"error: {path} has no rule {baseline!r}")
        df = df.merge(earlier[["set", "table", BASELINE, baseline, baseline + "_k"]],
                      on=["set", "table"], suffixes=("", "_earlier"), validate="one_to_one")
        if len(df) != len(rows) or not np.allclose(df[BASELINE], df[BASELINE + "_earlier"]):
            raise SystemExit(f"error: {path} was not written on these records (its tables or expected_ari picks "
                             "differ)")
        df = df.drop(columns=BASELINE + "_earlier")
        rules = [baseline, *rules]
    lines, diffs = table(df, rules, baseline)
    chosen, verdicts = verdict(diffs, baseline)
    given = sys.argv[1:] if argv is None else list(argv)
    out = ["# How K is chosen among the refined candidates (development sets, K inferred)", "", *lines, "",
           f"Protocol: {RULE.replace('candidate', 'rule')}; the qualifying rule with the largest mean gain over the "
           "sets is chosen.", "", *verdicts, "",
           f"Chosen: {'`' + chosen + '`' if chosen else f'none (the baseline `{baseline}` stays)'}.", "",
           *([f"Cross-fitted ({', '.join(f'`{n}`' for n in crossed)}): on dev and dev-derived each table is picked by "
              "the ranker fitted on the other fold's derived tables; elsewhere by the one fitted on all.", ""]
             if crossed else []),
           *([f"dev-derived: standard errors over its {df[df.set == 'dev-derived'].source.nunique()} source tables "
              "(tables derived from one table move together).", ""] if "dev-derived" in args.sets else []),
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_k_rule.py " + " ".join(given) + "`",
           *[checkpoint_line(p) + f" ({p})" for p in [*args.checkpoints, *sum(args.cross_fit, [])]],
           *machine_lines()]
    write_results(args.out, df, out)


if __name__ == "__main__":
    main()
