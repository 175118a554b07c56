"""pipeline.evaluation.doc_tables and jobs/render_docs.py: the statistics on hand-made tables, the block
rewriting, and the committed README and model card against the committed results files."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.evaluation import doc_tables
from tests.job_scripts import REPO, load_job

DOCS = [REPO / "README.md", REPO / "model" / "weights" / "MODEL_CARD.md"]


def test_win_rate_counts_a_tie_as_half_a_win():
    assert doc_tables.win_rate(np.array([0.1, 0.0, -0.2, 0.3])) == pytest.approx(2.5 / 4)
    assert doc_tables.win_rate(np.array([0.0, 0.0])) == 0.5
    assert math.isnan(doc_tables.win_rate(np.array([])))


def test_mean_interval_is_the_95_percent_t_interval():
    mean, low, high = doc_tables.mean_interval(np.array([1.0, 2.0, 3.0, 4.0]))
    # sd = 1.29099, t(0.975, 3) = 3.18245: half width 3.18245 * 1.29099 / 2 = 2.05426
    assert mean == 2.5 and low == pytest.approx(0.44574, abs=1e-5) and high == pytest.approx(4.55426, abs=1e-5)
    assert doc_tables.mean_interval(np.array([0.3]))[0] == 0.3
    assert math.isnan(doc_tables.mean_interval(np.array([0.3]))[1])


def test_wilcoxon_p_is_two_sided_and_exact_on_small_tables():
    # 5 positive differences: the exact two-sided p is 2 / 2**5
    assert doc_tables.wilcoxon_p(np.array([0.1, 0.2, 0.3, 0.4, 0.5])) == pytest.approx(2 / 32)
    assert doc_tables.wilcoxon_p(-np.array([0.1, 0.2, 0.3, 0.4, 0.5])) == pytest.approx(2 / 32)
    assert doc_tables.wilcoxon_p(np.zeros(4)) == 1.0
    assert math.isnan(doc_tables.wilcoxon_p(np.array([])))


def _series(values) -> pd.Series:
    return pd.Series(values, index=[f"d{i}" for i in range(len(values))], dtype=float)


def test_reading_is_ahead_or_behind_only_with_p_below_alpha_and_an_interval_off_zero():
    up = np.linspace(0.05, 0.5, 10)  # 10 wins: exact p = 2 / 1024
    ahead = doc_tables.paired_comparison(_series(0.5 + up), _series(np.full(10, 0.5)))
    assert ahead.n == 10 and ahead.win_rate == 1.0 and ahead.wilcoxon_p < 0.01 and ahead.ci_low > 0
    assert ahead.reading == "ahead of"
    behind = doc_tables.paired_comparison(_series(np.full(10, 0.5)), _series(0.5 + up))
    assert behind.reading == "behind" and behind.ci_high < 0
    mixed = doc_tables.paired_comparison(_series([0.6, 0.4, 0.55, 0.45]), _series([0.5, 0.5, 0.5, 0.5]))
    assert mixed.reading == "on par with" and mixed.wilcoxon_p > 0.05 and mixed.win_rate == 0.5


def test_pairs_leave_out_tables_where_either_run_failed():
    ref = _series([0.9, np.nan, 0.5, 0.7])
    peer = _series([0.8, 0.1, np.nan, 0.7])
    paired = doc_tables.paired_comparison(ref, peer)
    assert paired.n == 2 and paired.mean_diff == pytest.approx(0.05) and paired.win_rate == 0.75


def _long(rows: dict[str, dict[str, tuple]]) -> pd.DataFrame:
    """dataset -> method -> (ari, k_pred, seconds[, status]) as the evaluation's long results (K true = 3)."""
    out = []
    for ds, methods in rows.items():
        for method, values in methods.items():
            ari, k_pred, seconds, *status = values
            out.append({"suite": "dev", "group": "g", "dataset": ds, "method": method,
                        "k_mode": "auto", "status": status[0] if status else "ok", "ari": ari, "nmi": ari,
                        "k_pred": k_pred, "seconds": seconds, "error": "", "k_true": 3, "bayes_ari": np.nan})
    return pd.DataFrame(out)


def test_suite_comparison_takes_the_named_peers_and_any_gmm_bic_method():
    frame = _long({
        "a": {"TabClustPFN": (0.9, 3, 1.0), "KMeans+": (0.8, 4, 0.5), "GMM-BIC-full": (0.7, 3, 2.0),
              "Agg+": (0.1, 2, 0.1)},
        "b": {"TabClustPFN": (0.5, 5, 3.0), "KMeans+": (0.5, 3, 0.5), "GMM-BIC-full": (0.6, 3, 2.0),
              "Agg+": (0.1, 2, 0.1)},
        "c": {"TabClustPFN": (0.3, 3, 2.0), "KMeans+": (np.nan, np.nan, 600.0, "timeout"),
              "GMM-BIC-full": (0.1, 4, 2.0), "Agg+": (0.1, 2, 0.1)},
    })
    table = doc_tables.suite_comparison(frame).set_index("method")
    assert list(table.index) == ["TabClustPFN", "KMeans+", "GMM-BIC-full"]  # Agg+ is no peer here
    ref = table.loc["TabClustPFN"]
    assert ref["median_ari"] == 0.5 and ref["median_k_mae"] == 0 and ref["median_seconds"] == 2.0
    km = table.loc["KMeans+"]
    assert km["failed"] == 1 and km["n"] == 2 and km["median_seconds"] == 0.5  # the time-out is no time
    assert km["win_rate"] == 0.75 and km["mean_diff"] == pytest.approx(0.05)
    assert table.loc["GMM-BIC-full", "n"] == 3


def test_render_document_rewrites_only_between_matching_markers():
    text = ("intro 0.123\n<!-- results:begin a -->\nold table\n<!-- results:end a -->\nmiddle\n"
            "<!-- results:begin b -->\n<!-- results:end b -->\nend\n")
    new = doc_tables.render_document(text, {"a": "A\n", "b": "B\n"})
    assert new == ("intro 0.123\n<!-- results:begin a -->\nA\n<!-- results:end a -->\nmiddle\n"
                   "<!-- results:begin b -->\nB\n<!-- results:end b -->\nend\n")
    with pytest.raises(ValueError, match="name no results file"):
        doc_tables.render_document(text, {"a": "A\n"})
    with pytest.raises(ValueError, match="without their end marker"):
        doc_tables.render_document("<!-- results:begin a -->\nx\n", {"a": "A\n"})


def test_provenance_is_read_from_the_markdown_beside_the_csv(tmp_path):
    md = tmp_path / "evaluation-x.md"
    md.write_text("# TabClustPFN evaluation\n\nCommand: `python jobs/evaluate.py`\n\nMachine: Linux x86_64, 2 CPUs.\n")
    assert doc_tables.read_provenance(md) == {"command": "`python jobs/evaluate.py`",
                                             "machine": "Linux x86_64, 2 CPUs."}
    assert doc_tables.read_provenance(tmp_path / "missing.md") == {}


def test_check_fails_on_a_stale_block_and_the_rewrite_makes_it_pass(tmp_path):
    job = load_job("render_docs")
    results = tmp_path / "results"
    results.mkdir()
    csv = REPO / "docs" / "results" / "evaluation-test.csv"
    shutil.copy(csv, results / "evaluation-dev.csv")
    doc = tmp_path / "doc.md"
    doc.write_text("before\n<!-- results:begin evaluation-dev -->\nOUTDATED-TABLE\n"
                   "<!-- results:end evaluation-dev -->\n")
    args = ["--results-dir", str(results), "--documents", str(doc)]
    assert job.main([*args, "--check"]) == 1
    assert "OUTDATED-TABLE" in doc.read_text()  # --check changes nothing
    assert job.main(args) == 0
    text = doc.read_text()
    assert text.startswith("before\n") and "OUTDATED-TABLE" not in text and "| real (22 tables) | TabClustPFN |" in text
    assert "Checkpoint sha256: not recorded in `evaluation-dev.md`" in text
    assert job.main([*args, "--check"]) == 0
    doc.write_text("<!-- results:begin evaluation-nope -->\n<!-- results:end evaluation-nope -->\n")
    assert job.main(args) == 2


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_committed_document_tables_equal_what_the_results_files_give(doc: Path):
    names = doc_tables.block_names(doc.read_text())
    csvs = sorted((REPO / "docs" / "results").glob("evaluation-*.csv"))
    assert names, f"{doc.name} holds no generated results block"
    assert set(names) <= {p.stem for p in csvs}
    stale = doc_tables.update_documents([doc], csvs, check=True, root=REPO)
    assert stale == [], f"{doc.name} differs from docs/results; run `make results`"


def test_a_p_value_below_the_printed_precision_reads_p_below_not_p_equals():
    from pipeline.evaluation.doc_tables import _p_clause

    assert _p_clause(0.0002) == "p < 0.001"
    assert _p_clause(0.013) == "p = 0.013"
