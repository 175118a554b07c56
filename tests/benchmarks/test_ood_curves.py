"""benchmarks/ood_curves.py: a tiny grid end to end (issue 31 item 4)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def oc():
    spec = importlib.util.spec_from_file_location("ood_curves", REPO / "benchmarks" / "ood_curves.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run(oc, tmp_path_factory):
    out = tmp_path_factory.mktemp("ood")
    # N = 1200 > n_context (context subsampling) and > --silhouette-rows (sampled silhouette); D = 70 > 64 (PCA)
    argv = ["--out", str(out), "--n-values", "60", "1200", "--d-values", "2", "70", "--n-fixed", "80",
            "--d-fixed", "3", "--tasks", "3", "--tasks-large", "2", "--large-from", "1000",
            "--silhouette-rows", "500", "--bootstrap", "200", "--date", "2026-11-28", "--machine-note", "test box",
            "--partial", str(out / "partial.csv")]
    assert oc.main(argv) == 0
    return out, argv


def test_files_and_columns(oc, run):
    out, _ = run
    for name in ("ood-curves.csv", "ood-curves-tasks.csv", "ood-curves.md", "ood-curves-n.png",
                 "ood-curves-d.png", "partial.csv"):
        assert (out / name).stat().st_size > 0, name
    cells = pd.read_csv(out / "ood-curves.csv")
    tasks = pd.read_csv(out / "ood-curves-tasks.csv")
    assert list(cells.columns) == list(oc.CELL_COLUMNS) and list(tasks.columns) == list(oc.TASK_COLUMNS)
    assert set(zip(cells["axis"], cells["n_rows"], cells["n_features"])) == {
        ("N", 60, 3), ("N", 1200, 3), ("D", 80, 2), ("D", 80, 70)}
    assert set(cells["method"]) == set(oc.METHODS)
    n_tasks = tasks.groupby(["n_rows", "method"])["task"].count()
    assert n_tasks[(1200, "TabClustPFN")] == 2 and n_tasks[(60, "TabClustPFN")] == 3  # fewer at large N
    assert pd.read_csv(out / "partial.csv").shape == tasks.shape
    md = (out / "ood-curves.md").read_text()
    from model.checkpoint import load_checkpoint, weights_sha256
    from model.estimator import default_checkpoint_path

    shipped = weights_sha256(load_checkpoint(default_checkpoint_path())[0].state_dict())[:12]
    assert "2026-11-28" in md and "test box" in md and "--silhouette-rows 500" in md and shipped in md


def test_values_are_computed(oc, run):
    out, _ = run
    cells = pd.read_csv(out / "ood-curves.csv")
    tasks = pd.read_csv(out / "ood-curves-tasks.csv")
    assert tasks["ari"].between(-1, 1).all() and (tasks["seconds"] > 0).all() and (tasks["cpu_seconds"] >= 0).all()
    assert tasks["k_pred"].between(2, 10).all() and (tasks["k_true"] == 4).all()
    assert tasks.groupby("method")["ari"].nunique().min() > 1  # not one constant
    for _, row in cells.iterrows():
        sub = tasks[(tasks["n_rows"] == row["n_rows"]) & (tasks["n_features"] == row["n_features"])
                    & (tasks["method"] == row["method"])]
        assert row["ari"] == pytest.approx(sub["ari"].median(), rel=1e-5)  # the files keep 6 digits
        assert row["seconds"] == pytest.approx(sub["seconds"].median(), rel=1e-5)
        assert row["cpu_seconds"] == pytest.approx(sub["cpu_seconds"].median(), rel=1e-5, abs=1e-6)
        assert row["ari_lo"] <= row["ari"] <= row["ari_hi"]
        if row["method"] in ("TabClustPFN", "TabClustPFN*"):
            assert 0 <= row["win_rate"] <= 1 and row["win_rate"] + row["tie_rate"] <= 1
    # the network sees the principal components past 64 columns, every column below
    pfn = tasks[tasks["method"] == "TabClustPFN"]
    assert (pfn.loc[pfn["n_features"] == 70, "d_model"] <= 64).all()
    assert (pfn.loc[pfn["n_features"] == 3, "d_model"] == 3).all()
    # one task's KMeans* ARI again, from its seed
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    row = tasks[(tasks["method"] == "KMeans*") & (tasks["n_rows"] == 60)].iloc[1]
    ds = oc.draw_task(60, 3, 4, int(row["task"]), "gmm")
    assert oc.task_seed(60, 3, int(row["task"])) == row["seed"]
    labels = KMeans(4, random_state=int(row["task"])).fit_predict(np.asarray(ds.X, dtype=np.float64))
    assert row["ari"] == pytest.approx(adjusted_rand_score(ds.y, labels), rel=1e-5)


def test_sampled_silhouette_matches_the_evaluation_when_it_covers_the_table(oc):
    from pipeline.evaluation.methods import silhouette_select

    X = np.asarray(oc.draw_task(300, 4, 4, 0, "gmm").X, dtype=np.float64)
    full, k_full = silhouette_select("KMeans", X, 0)
    same, k_same = oc.kmeans_plus(X, 0, silhouette_rows=300)
    sampled, k_sampled = oc.kmeans_plus(X, 0, silhouette_rows=299)
    assert k_full == k_same and np.array_equal(full, same) and 2 <= k_sampled <= 10


def test_from_tasks_rewrites_the_same_summary(oc, run, tmp_path):
    out, argv = run
    again = tmp_path / "again"
    argv = [a for a in argv if a != str(out)]
    argv[argv.index("--out") + 1:argv.index("--out") + 1] = [str(again)]
    argv = argv[:argv.index("--partial")]
    assert oc.main(argv + ["--from-tasks", str(out / "ood-curves-tasks.csv")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(again / "ood-curves.csv"), pd.read_csv(out / "ood-curves.csv"),
                                  check_exact=False, rtol=1e-4, atol=1e-5)


def test_from_tasks_states_the_files_task_counts_not_the_defaults(oc, run, tmp_path, capsys):
    out, _ = run
    again = tmp_path / "plain"
    assert oc.main(["--from-tasks", str(out / "ood-curves-tasks.csv"), "--large-from", "1000", "--out",
                    str(again)]) == 0
    md = (again / "ood-curves.md").read_text()
    assert "K = 4 fixed" in md and "; 3 tasks per cell, 2 from N = 1000 on." in md  # not the default 30
    assert "True K (TabClustPFN*, KMeans*): the same methods given K." in md
    for bad, message in ((["--from-tasks", str(tmp_path / "missing.csv")], "no such file"),
                         (["--bootstrap", "0"], "--bootstrap must be at least 1")):
        with pytest.raises(SystemExit) as exc:
            oc.main(bad + ["--out", str(tmp_path / "x")])
        assert exc.value.code == 2 and message in capsys.readouterr().err
