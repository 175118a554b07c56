"""benchmarks/regime_report.py: the regime results files from an evaluation folder (issue 31)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.job_scripts import load_job

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rr():
    spec = importlib.util.spec_from_file_location("regime_report", REPO / "benchmarks" / "regime_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _long(rng, n: int, groups=("amortized",)) -> pd.DataFrame:
    rows = []
    for g in groups:
        for i in range(n):
            k = int(rng.integers(2, 11))
            for method in ("TabClustPFN", "KMeans+", "GMM+"):
                rows.append({"suite": "s", "group": g, "dataset": f"{g}_{i}", "method": method, "status": "ok",
                             "ari": rng.uniform(), "nmi": rng.uniform(), "k_pred": k + int(rng.integers(-2, 3)),
                             "k_true": k, "seconds": rng.uniform(0.01, 0.1), "bayes_ari": rng.uniform()})
    return pd.DataFrame(rows)


def test_intervals_cover_the_estimate_and_narrow_with_more_data(rr):
    rng = np.random.default_rng(0)
    small, large = rng.normal(size=30), rng.normal(size=3000)
    lo_s, hi_s = rr.bootstrap_median_ci(small, n_boot=500)
    lo_l, hi_l = rr.bootstrap_median_ci(large, n_boot=500)
    assert lo_s <= np.median(small) <= hi_s and lo_l <= np.median(large) <= hi_l
    assert hi_l - lo_l < hi_s - lo_s
    lo, hi = rr.wilson_ci(30, 100)
    assert lo < 0.3 < hi and 0.0 <= rr.wilson_ci(0, 20)[0] < rr.wilson_ci(0, 20)[1] < 0.2
    assert rr.bootstrap_median_ci(np.array([np.nan]), 10) != rr.bootstrap_median_ci(small, 10)


def test_summary_figures_match_their_definitions(rr):
    res = _long(np.random.default_rng(1), 40)
    res.loc[(res["method"] == "GMM+") & (res["dataset"] == "amortized_3"), ["status", "ari", "k_pred"]] = \
        ["failed", np.nan, np.nan]
    out = rr.summarise(res, n_boot=200).set_index("method")
    assert list(out.index) == ["TabClustPFN", "KMeans+", "GMM+"]  # the reference first
    for method, sub in res[res["status"] == "ok"].groupby("method"):
        err = (sub["k_pred"] - sub["k_true"]).abs()
        assert out.at[method, "ari"] == pytest.approx(sub["ari"].median())
        assert out.at[method, "k_mae"] == pytest.approx(err.median())
        assert out.at[method, "k_abs_mean"] == pytest.approx(err.mean())
        assert out.at[method, "k_acc"] == pytest.approx((err == 0).mean())
        assert out.at[method, "ms"] == pytest.approx(1000 * sub["seconds"].median())
        assert out.at[method, "ari_lo"] <= out.at[method, "ari"] <= out.at[method, "ari_hi"]
    assert out.at["GMM+", "n_failed"] == 1 and out.at["GMM+", "n_pairs"] == 39
    wide = res.pivot(index="dataset", columns="method", values="ari")
    diff = (wide["TabClustPFN"] - wide["KMeans+"]).dropna()
    assert out.at["KMeans+", "ref_win_rate"] == pytest.approx((diff > 0).mean())
    assert out.at["KMeans+", "ref_ari_diff"] == pytest.approx(diff.median())


def test_report_files_from_a_synthetic_run_folder(rr, tmp_path):
    rng = np.random.default_rng(2)
    run = tmp_path / "run"
    run.mkdir()
    res = _long(rng, 12, groups=("d2", "d3", "d4", "d5")).assign(suite="cluster-pfn")
    res.to_csv(run / "results.csv", index=False)
    (run / "results.md").write_text("# x\n\nCommand: `python jobs/evaluate.py --suite cluster-pfn`\n\n"
                                    "Date: 2026-11-28 16:00 UTC.\n")
    files = rr.cluster_pfn_report(run, tmp_path / "docs", n_boot=100, note="Fewer tasks.")
    md = files[0].read_text()
    assert md.splitlines()[2].startswith("Command: `python jobs/evaluate.py --suite cluster-pfn && "
                                         "python benchmarks/regime_report.py cluster-pfn ")
    assert "Date: 2026-11-28" in md and "Fewer tasks." in md and "## D = 5" in md
    table = pd.read_csv(files[1])
    assert sorted(table["D"].unique()) == [2, 3, 4, 5] and len(table) == 12
    assert (table["n_tasks"] == 12).all()
    assert files[2].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="no 'amortized' rows"):
        rr.amortized_report(run, tmp_path / "docs")


def test_another_checkpoints_run_fills_the_placeholder_row(rr, tmp_path):
    rng = np.random.default_rng(3)
    main, other = tmp_path / "main", tmp_path / "other"
    for folder in (main, other):
        folder.mkdir()
    base = _long(rng, 20).assign(suite="amortized")
    base.to_csv(main / "results.csv", index=False)
    trained = base[base["method"] == "TabClustPFN"].assign(ari=lambda f: f["ari"] * 0.5)
    trained.to_csv(other / "results.csv", index=False)
    (other / "results.md").write_text("Command: `python jobs/evaluate.py --checkpoint pfn.pt`\n\n"
                                      "Checkpoint sha256: `abc`.\n")
    spec = f"{rr.PLACEHOLDER}={other}"
    files = rr.amortized_report(main, tmp_path / "docs", n_boot=50, checkpoint_runs=[spec])
    table = pd.read_csv(files[1]).set_index("method")
    assert table.at[rr.PLACEHOLDER, "ari"] == pytest.approx(trained["ari"].median())
    assert table.at[rr.PLACEHOLDER, "n_tasks"] == 20 and table.at[rr.PLACEHOLDER, "n_pairs"] == 20
    assert table.at[rr.PLACEHOLDER, "ref_win_rate"] == 1.0  # the main run scores twice its ARI on every task
    md = files[0].read_text()
    assert "_pending_" not in md and "--checkpoint-run" in md.splitlines()[2] and "pfn.pt" in md
    # the main run names no shipped checkpoint: the text beside the paper must not call it the shipped one
    beside = md.split("## Beside the paper")[1]
    assert "shipped" not in beside and "this run's --checkpoint" in beside and "named above" in beside
    with pytest.raises(ValueError, match="LABEL=DIR"):
        rr.amortized_report(main, tmp_path / "docs", checkpoint_runs=[str(other)])
    (main / "results.md").write_text("Checkpoint: `shipped`; seed 0.\n")
    md = rr.amortized_report(main, tmp_path / "docs", n_boot=50)[0].read_text()
    beside = md.split("## Beside the paper")[1]
    assert "TabClustPFN with the shipped checkpoint" in beside and "TabClustPFN (shipped, zero-shot)" in beside


def test_cli_refuses_a_bootstrap_of_zero_without_a_traceback(rr, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    _long(np.random.default_rng(4), 5).assign(suite="amortized").to_csv(run / "results.csv", index=False)
    with pytest.raises(SystemExit) as exc:
        rr.main(["amortized", str(run), "--out", str(tmp_path / "docs"), "--bootstrap", "0"])
    assert exc.value.code == 2 and "--bootstrap must be at least 1" in capsys.readouterr().err


@pytest.mark.slow
def test_report_of_a_tiny_regime_evaluation(rr, ray_local, tmp_path, tiny_checkpoint, tracking_uri):
    job = load_job("evaluate")
    out = tmp_path / "eval"
    code = job.main(["--suite", "amortized", "--suite", "cluster-pfn", "--tasks-per-group", "2", "--methods",
                     "TabClustPFN", "KMeans+", "GMM+", "--checkpoint", tiny_checkpoint, "--calibration-size", "0",
                     "--output", str(out), "--tracking-uri", tracking_uri, "--num-workers", "2", "--no-progress"])
    assert code == 0
    results = pd.read_csv(out / "results.csv")
    assert results.groupby("suite")["dataset"].nunique().to_dict() == {"amortized": 2, "cluster-pfn": 8}
    assert set(results.loc[results["suite"] == "cluster-pfn", "group"]) == {"d2", "d3", "d4", "d5"}
    assert (results["status"] == "ok").all()

    docs = tmp_path / "docs"
    assert rr.main(["amortized", str(out), "--out", str(docs), "--bootstrap", "50"]) == 0
    assert rr.main(["cluster-pfn", str(out), "--out", str(docs), "--bootstrap", "50"]) == 0
    md = (docs / "regime-amortized.md").read_text()
    assert "--tasks-per-group 2" in md.splitlines()[2] and "--bootstrap 50" in md.splitlines()[2]
    assert "Checkpoint sha256: `" in md and rr.PLACEHOLDER in md and "| paper Tab. 3 | NCP | 0.6000" in md
    table = pd.read_csv(docs / "regime-amortized.csv")
    assert table.at[0, "method"] == "TabClustPFN (this run's --checkpoint)"  # not the shipped file
    assert table.at[3, "method"] == rr.PLACEHOLDER
    assert set(table["method"].tolist()[1:3]) == {"KMeans+", "GMM+"}
    assert (table.loc[:2, "n_tasks"] == 2).all() and table.loc[3, ["ari", "k_acc"]].isna().all()
    assert len(table) == 4 + len(rr.PAPER_AMORTIZED)
    cpfn = pd.read_csv(docs / "regime-cluster-pfn.csv")
    assert len(cpfn) == 4 * 3 and (cpfn["n_tasks"] == 2).all()
    assert (docs / "regime-cluster-pfn.png").stat().st_size > 0
    assert rr.main(["cluster-pfn", str(tmp_path / "missing"), "--out", str(docs)]) == 1
