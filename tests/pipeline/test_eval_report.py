"""Report tables from a hand-built results table: settings ranked apart, difficulty split, oracle, Markdown."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.evaluation import report

MODES = {"TabClustPFN*": "true", "KMeans*": "true", "TabClustPFN": "auto", "KMeans+": "silhouette",
         "DBSCAN": "auto"}
ARI = {  # dataset -> method -> ARI (NaN: failed run)
    "d1": {"TabClustPFN*": 0.9, "KMeans*": 0.8, "TabClustPFN": 0.85, "KMeans+": 0.7, "DBSCAN": 0.0},
    "d2": {"TabClustPFN*": 0.2, "KMeans*": 0.3, "TabClustPFN": 0.25, "KMeans+": 0.25, "DBSCAN": np.nan},
    "d3": {"TabClustPFN*": 0.05, "KMeans*": 0.01, "TabClustPFN": 0.02, "KMeans+": 0.0, "DBSCAN": 0.0},
}


def _results() -> pd.DataFrame:
    rows = []
    for ds, scores in ARI.items():
        for m, ari in scores.items():
            ok = not np.isnan(ari)
            rows.append({"dataset": ds, "method": m, "k_mode": MODES[m], "status": "ok" if ok else "timeout",
                         "ari": ari, "nmi": ari, "k_true": 3, "k_pred": 4 if ok else np.nan,
                         "seconds": 1.0 if ok else 600.0, "bayes_ari": 0.95 if ds == "d1" else np.nan})
    return pd.DataFrame(rows)


def test_settings_are_ranked_apart_with_failures_last():
    a = report.analyse_suite(_results(), "synthetic", list(MODES))
    auto = a.ranks["auto"]
    assert list(auto.columns) == ["TabClustPFN", "KMeans+", "DBSCAN"]
    assert auto.loc["d1"].tolist() == [1.0, 2.0, 3.0]
    assert auto.loc["d2"].tolist() == [1.5, 1.5, 3.0]  # tie; DBSCAN timed out -> last
    assert auto.loc["d3"].tolist() == [1.0, 2.5, 2.5]
    assert a.ranks["true"].loc["d2"].tolist() == [2.0, 1.0]
    table = a.rank_tables["auto"].set_index("method")
    assert table.loc["TabClustPFN", "ARI rank"] == "1 [0.25]"  # ranks 1, 1.5, 1 -> median 1, IQR 0.25
    assert table.loc["DBSCAN", "failed"] == 1 and table.loc["DBSCAN", "k-MAE"] == "1 [0]"
    assert "k-MAE" not in a.rank_tables["true"].columns
    assert set(a.significance) == {"auto", "true"}
    assert a.significance["auto"]["paired"]["baseline"].tolist() == ["KMeans+", "DBSCAN"]


def test_difficulty_and_oracle_tables():
    a = report.analyse_suite(_results(), "synthetic", list(MODES))
    assert a.difficulty.to_dict() == {"d1": "low", "d2": "high", "d3": "excluded"}
    diff = a.difficulty_table.set_index("method")
    assert diff.loc["KMeans*", "ARI low"] == "0.8000 [0.00]" and diff.loc["KMeans*", "ARI high"] == "0.3000 [0.00]"
    assert diff.loc["KMeans*", "k-MAE low"] == "-" and diff.loc["KMeans+", "k-MAE low"] == "1"
    oracle = a.oracle.set_index("method")
    assert oracle.loc["Bayes oracle", "datasets"] == 1 and oracle.loc["Bayes oracle", "ARI"] == "0.9500 [0.00]"
    assert oracle.loc["TabClustPFN*", "median gap to oracle"] == "0.0500"


def test_markdown_rendering():
    a = report.analyse_suite(_results(), "synthetic", list(MODES))
    failures = pd.DataFrame({"dataset": ["d2"], "method": ["DBSCAN"], "error": ["no result | cancelled"]})
    text = report.render_markdown([a], ["header line"], None, failures)
    assert text.startswith("# TabClustPFN evaluation\n\nheader line")
    assert "| TabClustPFN | 1 [0.25] |" in text
    assert "no result \\| cancelled" in text  # pipes escaped inside a cell
    assert report.markdown_table(pd.DataFrame({"x": [0.123456, np.nan]})).splitlines()[2:] == ["| 0.1235 |", "| - |"]


def test_provenance_names_the_checkpoint_weights_and_file_the_machine_and_the_date(tmp_path):
    import datetime as dt
    import hashlib
    import os

    from model.checkpoint import save_checkpoint, weights_sha256
    from tests.model.conftest import make_tiny_net

    net = make_tiny_net(3)
    path = save_checkpoint(tmp_path / "model.pt", net, {"lineage": []})
    now = dt.datetime(2026, 11, 28, 9, 30, tzinfo=dt.timezone.utc)
    lines = report.provenance_lines(path, now=now)
    sha, machine, date = lines
    assert sha.startswith(report.PROVENANCE_PREFIXES["sha256"])
    assert f"`{weights_sha256(net.state_dict())}`" in sha
    assert f"`{hashlib.sha256(path.read_bytes()).hexdigest()}`" in sha
    assert machine.startswith("Machine: ") and f"{os.cpu_count()} CPUs" in machine
    assert date == "Date: 2026-11-28 09:30 UTC."
    assert report.provenance_lines(path, uses_model=False, now=now) == [machine, date]
    assert "unreadable" in report.checkpoint_line(tmp_path / "missing.pt")

    a = report.analyse_suite(_results(), "synthetic", list(MODES))
    text = report.render_markdown([a], ["Command: `python jobs/evaluate.py`"], None, pd.DataFrame(), lines)
    assert text.startswith(f"# TabClustPFN evaluation\n\nCommand: `python jobs/evaluate.py`\n\n{sha}\n\n{machine}\n\n"
                           f"{date}\n")
    default = report.render_markdown([a], ["header line"], None, pd.DataFrame())
    assert "\nMachine: " in default and "\nDate: " in default and "Checkpoint sha256" not in default


def test_the_report_says_how_far_the_probabilities_over_k_can_be_trusted_where_they_were_given():
    results = _results()
    auto = results["method"] == "TabClustPFN"
    results.loc[auto, ["k_top_probability", "k_set_holds", "k_set_size"]] = [0.6, 1.0, 2.0]
    a = report.analyse_suite(results, "real", list(MODES))
    assert a.k_probabilities.iloc[0]["datasets"] == 3 and a.k_probabilities.iloc[0]["top K right"] == 0.0
    text = report.render_markdown([a], ["header line"], None, pd.DataFrame())
    assert "### Probabilities over K (TabClustPFN's `k_probabilities_`)" in text
    assert "| 3 | 0 | 0.6 | 0.6 | 1 | 2 |" in text
    plain = report.render_markdown([report.analyse_suite(_results(), "real", list(MODES))], ["h"], None,
                                   pd.DataFrame())
    assert "Probabilities over K" not in plain
