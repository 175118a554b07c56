"""How far a user can trust the probabilities over K: the calibrated K ranker's (``TabClustPFN.k_probabilities_``)
against CIN's posterior (``k_posterior_``), on the development sets.

    PYTHONPATH=. .venv/bin/python benchmarks/k_rule_records.py --out outputs/k-rule-v4     # ~4 min, once
    PYTHONPATH=. .venv/bin/python benchmarks/k_calibration.py --records outputs/k-rule-v4

Per set (``prior``: 400 held-out tasks of the paper's prior, ``noisy``: 200 with noise columns and contaminated
rows, ``one-informative``: 200 with one informative column among noise columns, ``dev``: the 23 tables of
``../shared/benchmarks/dev``; records of the checkpoint's network by ``benchmarks/k_rule_records.py``) and for
each distribution over K (:func:`model.k_ranker.reliability`): how often its most probable K is the labelled one
against the mean probability it gives that K, the expected calibration error of that top choice (10 bins), and
how often the smallest set of K holding 80 % of it contains the labelled K, with the set's mean size. The
ranker's temperature was fitted on other tables (the prior tables its fit held out); these sets only report it.
Writes ``OUT.md`` and ``OUT.csv``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SETS = ("prior", "noisy", "one-informative", "dev")


def distinct_fractions(net, which: str, names: np.ndarray) -> np.ndarray:
    """Each recorded table's :func:`model.k_ranker.distinct_fraction`, preprocessed as the records were."""
    from benchmarks.choose_checkpoint import tables
    from pipeline.k_ranker_fit import frame_distinct_fraction

    values = {name: frame_distinct_fraction(net.cfg, frame) for name, frame, _ in tables(which, len(names))}
    return np.array([values[str(n)] for n in names])


def distributions(net, rec: dict[str, np.ndarray], distinct: np.ndarray) -> dict[str, np.ndarray]:
    """Records of one set and each table's fraction of distinct values -> ``ranker`` (the calibrated ranker's
    probabilities, each table at its own temperature) and ``cin`` (CIN's posterior over the admissible K), each
    (T, C)."""
    from model.k_features import FEATURES, features_key
    from model.k_ranker import k_probabilities, record_scores, table_temperature

    features = rec[features_key(net.cfg.k_ranker_candidates)]
    scores = record_scores(net.k_ranker, features, rec["ari"])
    log_post = rec["features"][..., FEATURES.index("log_post")]
    cin = np.where(np.isnan(log_post), 0.0, np.exp(np.nan_to_num(log_post, nan=-np.inf)))
    ranker = np.stack([k_probabilities(s, table_temperature(net.cfg.k_ranker_temperature,
                                                            net.cfg.k_ranker_temperature_slope, d))
                       for s, d in zip(scores, distinct)])
    return {"ranker": ranker, "cin": cin / cin.sum(1, keepdims=True)}


def left_out(net, rec: dict[str, np.ndarray], distinct: np.ndarray) -> np.ndarray:
    """The ranker's probabilities on each table at the slope fitted on the other tables (the checkpoint's
    temperature), as a table the slope was not fitted on would get them (T, C)."""
    from model.k_features import features_key
    from model.k_ranker import fit_temperature_slope, k_probabilities, record_scores, table_temperature

    scores = record_scores(net.k_ranker, rec[features_key(net.cfg.k_ranker_candidates)], rec["ari"])
    t0, out = net.cfg.k_ranker_temperature, []
    for i in range(len(scores)):
        rest = np.arange(len(scores)) != i
        slope = fit_temperature_slope(scores[rest], rec["k_true"][rest], distinct[rest], t0)
        out.append(k_probabilities(scores[i], table_temperature(t0, slope, distinct[i])))
    return np.stack(out)


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import write_results
    from model.checkpoint import load_checkpoint, weights_sha256
    from model.estimator import default_checkpoint_path
    from model.k_ranker import reliability
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()), help="with a calibrated K ranker")
    ap.add_argument("--records", default="outputs/k-rule", help="benchmarks/k_rule_records.py's --out")
    ap.add_argument("--out", default="docs/results/k-calibration")
    args = ap.parse_args(argv)
    net, meta = load_checkpoint(args.checkpoint)
    if net.k_ranker is None or not net.cfg.k_ranker_temperature > 0:
        raise SystemExit(f"error: {args.checkpoint} carries no calibrated K ranker: run jobs/calibrate_k_ranker.py")
    sha = weights_sha256(net.without_k_ranker().state_dict())
    rows = []
    for which in SETS:
        path = Path(args.records) / f"{which}.npz"
        if not path.is_file():
            raise SystemExit(f"error: no records {path}: run benchmarks/k_rule_records.py --out {args.records}")
        with np.load(path) as d:
            rec = {k: d[k] for k in d.files}
        if str(rec["weights_sha256"]) != sha:
            raise SystemExit(f"error: {path} holds records of another network ({str(rec['weights_sha256'])[:12]}), "
                             f"not {sha[:12]}: rerun benchmarks/k_rule_records.py --checkpoint {args.checkpoint}")
        distinct = (distinct_fractions(net, which, rec["names"]) if net.cfg.k_ranker_temperature_slope > 0
                    else np.ones(len(rec["k_true"])))  # one temperature for every table
        for name, probs in distributions(net, rec, distinct).items():
            rows.append({"set": which, "distribution": name, **reliability(probs, rec["k_true"])})
        if which == "dev" and net.cfg.k_ranker_temperature_slope > 0:  # the slope was fitted on these tables
            rows.append({"set": which, "distribution": "ranker, slope left out",
                         **reliability(left_out(net, rec, distinct), rec["k_true"])})
    df = pd.DataFrame(rows)
    fitted = next((p.get("k_ranker_calibration") for p in reversed(meta.get("lineage", []))
                   if "k_ranker_calibration" in p), None)
    lines = ["| set | tables | distribution | top K right | its mean probability | ECE | 80 % set holds K "
             "| 80 % set size |", "|---|---|---|---|---|---|---|---|"]
    for r in df.itertuples():
        lines.append(f"| {r.set} | {r.tables} | {r.distribution} | {r.top_right:.3f} | {r.top_probability:.3f} | "
                     f"{r.ece:.3f} | {r.set_covered:.3f} | {r.set_size:.2f} |")
    given = sys.argv[1:] if argv is None else list(argv)
    out = ["# Probabilities over K: the calibrated K ranker against CIN's posterior (development sets)", "",
           f"`ranker`: a softmax of the K ranker's scores at temperature {net.cfg.k_ranker_temperature:.2f} "
           "(`ModelConfig.k_ranker_temperature`, `TabClustPFN.k_probabilities_`)"
           + (f", fitted on {fitted['tables']} held-out prior tables of the ranker's fit (there: top K right "
              f"{fitted['top_right']:.3f} at a mean probability of {fitted['top_probability']:.3f}, ECE "
              f"{fitted['ece']:.3f})" if fitted else "")
           + (f", times exp({net.cfg.k_ranker_temperature_slope:.2f} x (1 - the table's fraction of distinct "
              "values)) (`k_ranker_temperature_slope`, fitted on the dev tables, so the dev row is in-sample; "
              "`ranker, slope left out`: each dev table at the slope fitted on the other 22)"
              if net.cfg.k_ranker_temperature_slope > 0 else "")
           + "; `cin`: CIN's posterior (`k_posterior_`) over the same admissible K. A well calibrated distribution "
           "has its top K right as often as its mean probability says, an ECE near 0, and its 80 % set holding "
           "the labelled K on about 0.8 of the tables.", "", *lines, "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/k_calibration.py " + " ".join(given) + "`",
           checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df, out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
