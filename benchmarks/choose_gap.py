"""The gap statistic as a check on a large K, chosen on development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/k_rule_records.py --out outputs/k-rule
    PYTHONPATH=. .venv/bin/python benchmarks/choose_gap.py --records outputs/k-rule --out docs/results/choice-gap

The defaults answer K >= 8 on many tables without clusters (``docs/results/no-structure.md``). The gap statistic
(Tibshirani, Walther and Hastie, 2001) is the classical answer that also knows "one cluster": the log within-cluster
sum of squares of k-means at each K, against its mean over reference tables without clusters,

    gap(K) = mean_b log W_b(K) - log W(K),   s(K) = sd_b log W_b(K) sqrt(1 + 1 / B),

for K = 1..10. Two references, B = 8 tables each: ``gaussian``, one Gaussian with the table's own covariance (its
principal variances; SigClust's null, as :mod:`model.structure`); ``box``, uniform over the range of the table's
principal components (the reference Tibshirani et al. recommend). Two ways to read a K off the curve:
``tibshirani``, the smallest K with gap(K) >= gap(K + 1) - s(K + 1); ``argmax``, the K of the largest gap. Each
rule only steps down: where the defaults' K ranker picks K >= ``--from-k``, the answer becomes min(that K, the
gap's K), at least 2 (the network's smallest candidate); elsewhere it keeps the ranker's pick. Tables are the
estimator's preprocessed ones (``TabClustPFN().preprocessor()``; categorical codes one-hot), at most 1,000 rows as
its context.

From the development sets' records (``benchmarks/k_rule_records.py``), each rule against the shipped ranker
(``ranker``), table by table: the ARI of the default refine's partition at the K it answers. Verdict by the
protocol (docs/DESIGN.md). Also, for what the check is for: the K answered on the tables without clusters of
``benchmarks/no_structure.py`` (the defaults' K read from its committed CSV). Writes ``OUT.md`` and ``OUT.csv`` (per
table the ranker's and each rule's K and ARI, and ``<rule>_gap``, the gap's own K: 0 where the rule did not look).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from benchmarks.choose_k_rule import SETS  # noqa: E402  (the sets k_rule_records.py records)

K_MAX = 10
NULLS = ("gaussian", "box")
READINGS = ("tibshirani", "argmax")
RULES = tuple(f"gap-{null}-{reading}" for null in NULLS for reading in READINGS)
CONTEXT_ROWS = 1000


def within_log(X: np.ndarray, k: int, seed: int) -> float:
    """log of k-means' within-cluster sum of squares at K = k (K = 1: about the mean)."""
    from sklearn.cluster import KMeans

    if k == 1:
        return float(np.log(((X - X.mean(0)) ** 2).sum()))
    return float(np.log(KMeans(k, n_init=2, random_state=seed).fit(X).inertia_))


def reference(X: np.ndarray, null: str, rng: np.random.Generator) -> np.ndarray:
    """One table of X's size without clusters: ``gaussian`` (X's principal variances) or ``box`` (uniform over the
    range of X's principal components)."""
    centred = X - X.mean(0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    if null == "gaussian":
        return rng.standard_normal((len(X), len(s))) * (s / np.sqrt(len(X)))
    if null == "box":
        pcs = centred @ vt.T
        return rng.uniform(pcs.min(0), pcs.max(0), size=pcs.shape)
    raise ValueError(f"unknown null {null!r}: use one of {', '.join(NULLS)}")


def gap_curve(X: np.ndarray, null: str = "gaussian", k_max: int = K_MAX, n_ref: int = 8,
              seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """gap(K) and s(K) for K = 1..k_max (module docstring); deterministic in ``seed``."""
    own = np.array([within_log(X, k, seed) for k in range(1, k_max + 1)])
    rng = np.random.default_rng(seed)
    refs = []
    for b in range(n_ref):
        Z = reference(X, null, rng)
        refs.append([within_log(Z, k, seed + b) for k in range(1, k_max + 1)])
    refs = np.asarray(refs)
    return refs.mean(0) - own, refs.std(0) * np.sqrt(1.0 + 1.0 / n_ref)


def gap_k(gap: np.ndarray, s: np.ndarray, reading: str) -> int:
    """The K a gap curve (K = 1..len) answers: ``tibshirani`` (the smallest K within one s of the next) or
    ``argmax``."""
    if reading == "argmax":
        return int(np.argmax(gap)) + 1
    if reading != "tibshirani":
        raise ValueError(f"unknown reading {reading!r}: use one of {', '.join(READINGS)}")
    for k in range(1, len(gap)):
        if gap[k - 1] >= gap[k] - s[k]:
            return k
    return len(gap)


def stepped(k_ranker: int, k_gap: int, from_k: int) -> int:
    """The answer: the ranker's K below ``from_k``; else the smaller of it and the gap's K, at least 2."""
    return k_ranker if k_ranker < from_k else max(2, min(k_ranker, k_gap))


def design(frame) -> np.ndarray:
    """The estimator's preprocessed table, categorical codes one-hot, at most CONTEXT_ROWS rows (seed 0)."""
    from model.estimator import TabClustPFN
    from model.refinement import design as one_hot_design
    from model.refinement import one_hot_widths

    Z, cat = TabClustPFN().preprocessor().fit_transform(frame)
    X = one_hot_design(Z, cat, one_hot_widths(Z, cat))
    if len(X) > CONTEXT_ROWS:
        X = X[np.sort(np.random.default_rng(0).choice(len(X), CONTEXT_ROWS, replace=False))]
    return X


def gap_answers(X: np.ndarray) -> dict[str, int]:
    """The gap's K (1..K_MAX) by every rule of RULES on one table."""
    out = {}
    for null in NULLS:
        gap, s = gap_curve(X, null)
        for reading in READINGS:
            out[f"gap-{null}-{reading}"] = gap_k(gap, s, reading)
    return out


def _work(item):
    key, frame = item
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return key, gap_answers(design(frame))


def record_rows(recs: dict[str, dict], ranker, from_k: int, workers: int) -> pd.DataFrame:
    """One row per table of the records: the ranker's and every rule's K and ARI."""
    from benchmarks.choose_checkpoint import tables
    from benchmarks.choose_k_rule import picks

    rows, items = [], []
    for which, rec in recs.items():
        pick = picks(rec, {"ranker": ranker})["ranker"]
        fired = set(np.flatnonzero(pick + 2 >= from_k).tolist())
        items += [((which, j), frame) for j, (_, frame, _) in enumerate(tables(which, len(rec["ari"])))
                  if j in fired]
        for j, name in enumerate(rec["names"]):
            rows.append({"set": which, "index": j, "table": str(name), "K": int(rec["k_true"][j]),
                         "ranker_k": int(pick[j]) + 2, "ranker": float(rec["ari"][j, pick[j]])})
    with ProcessPoolExecutor(workers) as pool:
        answers = dict(pool.map(_work, items, chunksize=2))
    df = pd.DataFrame(rows)
    for rule in RULES:
        gap = [answers[(w, j)][rule] if (w, j) in answers else 0 for w, j in zip(df.set, df["index"])]
        ks = [k if g == 0 else stepped(k, g, from_k) for k, g in zip(df.ranker_k, gap)]
        df[rule + "_gap"], df[rule + "_k"] = gap, ks
        df[rule] = [float(recs[w]["ari"][j, k - 2]) for w, j, k in zip(df.set, df["index"], ks)]
    return df


def no_structure_rows(csv: str, from_k: int, workers: int) -> pd.DataFrame:
    """The tables of ``benchmarks/no_structure.py``: the defaults' K (its CSV) and every rule's answer (at least 2),
    with the gap's own K (1 = no clusters)."""
    from benchmarks import no_structure as ns

    answered = pd.read_csv(csv)
    answered = answered[answered.method == "TabClustPFN"].set_index(["kind", "N", "D"]).k
    keys = [(kind, n, d) for kind in ns.KINDS for n, d in ns.SIZES]
    items = [(key, ns.table(key[0], key[1], key[2], (ns.SEED, ns.KINDS.index(key[0]), ns.SIZES.index(key[1:]))))
             for key in keys]
    with ProcessPoolExecutor(workers) as pool:
        answers = dict(pool.map(_work, items, chunksize=2))
    rows = []
    for key in keys:
        k = int(answered[key])
        row = {"set": "no-structure", "table": "{}-{}-{}".format(*key), "K": 1, "ranker_k": k}
        for rule in RULES:
            row[rule + "_gap"], row[rule + "_k"] = answers[key][rule], stepped(k, answers[key][rule], from_k)
        rows.append(row)
    return pd.DataFrame(rows)


def no_structure_lines(ns: pd.DataFrame) -> list[str]:
    lines = ["| rule | tables | median K | K >= 8 | the gap's K = 1 |", "|---|---|---|---|---|",
             f"| ranker | {len(ns)} | {ns.ranker_k.median():g} | {(ns.ranker_k >= 8).mean():.2f} | - |"]
    for rule in RULES:
        lines.append(f"| {rule} | {len(ns)} | {ns[rule + '_k'].median():g} | {(ns[rule + '_k'] >= 8).mean():.2f} | "
                     f"{(ns[rule + '_gap'] == 1).mean():.2f} |")
    return lines


def one_cluster_lines(df: pd.DataFrame) -> list[str]:
    """Per set, of the tables the rules looked at: how many each reference reads as one cluster (Tibshirani's
    reading) and the labelled K of those."""
    lines = ["Tables the rules looked at that the gap reads as one cluster (Tibshirani's reading), their labelled K "
             "and the ARI of the ranker's answer on them:", "",
             "| set | looked at | reference | gap's K = 1 | their labelled K: median [min, max] | ranker's mean ARI |",
             "|---|---|---|---|---|---|"]
    for which, part in df.groupby("set", sort=False):
        for null in NULLS:
            gap = part[f"gap-{null}-tibshirani_gap"]
            one = part[gap == 1]
            span = f"{one.K.median():g} [{one.K.min()}, {one.K.max()}] | {one.ranker.mean():.3f}" if len(one) \
                else "- | -"
            lines.append(f"| {which} | {(gap > 0).sum()} | {null} | {len(one)} | {span} |")
    return lines


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import load_rankers, load_records, table, verdict, write_results
    from model.estimator import default_checkpoint_path
    from pipeline.evaluation.protocol import RULE
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, provenance_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", default="outputs/k-rule")
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    ap.add_argument("--from-k", type=int, default=6, help="the rules look at tables the ranker answers >= this K")
    ap.add_argument("--no-structure", default="docs/results/no-structure.csv",
                    help="benchmarks/no_structure.py's CSV ('' to skip)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="docs/results/choice-gap")
    args = ap.parse_args(argv)
    if not 3 <= args.from_k <= K_MAX:
        raise SystemExit(f"error: --from-k must lie in 3..{K_MAX}, got {args.from_k}")
    recs, sha = load_records(args.records, args.sets)
    checkpoint = str(default_checkpoint_path())
    ranker = load_rankers([checkpoint], sha)[Path(checkpoint).stem]
    df = record_rows(recs, ranker, args.from_k, args.workers)
    rules = ["ranker", *RULES]
    lines, diffs = table(df, rules, "ranker")
    chosen, verdicts = verdict(diffs, "ranker")
    fired = df[df[RULES[0] + "_gap"] > 0].groupby("set", sort=False).size()
    given = sys.argv[1:] if argv is None else list(argv)
    out = ["# The gap statistic as a check on a large K (development sets, K inferred)", "",
           f"Each rule steps down from the shipped K ranker's answer where it is >= {args.from_k} (tables: "
           + ", ".join(f"{w} {int(fired.get(w, 0))}" for w in recs) + "), to the gap's K if smaller (at least 2).",
           "", *lines, "", *one_cluster_lines(df), "", f"Protocol: {RULE.replace('candidate', 'rule')}.", "",
           *verdicts, "",
           f"Chosen: {'`' + chosen + '`' if chosen else 'none (the ranker stays)'}.", ""]
    if args.no_structure:
        ns = no_structure_rows(args.no_structure, args.from_k, args.workers)
        df = pd.concat([df, ns], ignore_index=True)
        out += ["On the tables without clusters of `benchmarks/no_structure.py` (one cluster each; the defaults' K "
                f"from `{args.no_structure}`):", "", *no_structure_lines(ns), ""]
    out += [PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_gap.py " + " ".join(given) + "`",
            *provenance_lines(checkpoint)]
    write_results(args.out, df, out)


if __name__ == "__main__":
    main()
