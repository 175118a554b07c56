"""The evaluation runner: timeouts and failures as records, and the benchmark end to end on a small folder."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from pipeline.evaluation.methods import METHODS
from pipeline.evaluation.runner import EvalConfig, TaskFailure, evaluate_pair, run_evaluation, run_with_timeouts
from pipeline.evaluation.suites import EvalDataset


def _sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "woke"


def _boom() -> None:
    raise RuntimeError("boom")




def test_a_slow_task_times_out_and_the_others_complete(ray_local):
    start = time.monotonic()
    calls = [("slow", _sleep, (120.0,)), ("fast", _sleep, (0.0,)), ("bad", _boom, ())]
    out = run_with_timeouts(calls, timeout_s=5.0, num_workers=2, progress=False)
    assert time.monotonic() - start < 110  # not the slow task's 120 s (92 s once under load)
    assert out["fast"] == "woke"
    assert isinstance(out["slow"], TaskFailure) and out["slow"].status == "timeout"
    assert isinstance(out["bad"], TaskFailure) and "boom" in out["bad"].error


def _thread_counts() -> dict:
    import torch
    from threadpoolctl import threadpool_info

    import model.estimator  # noqa: F401  (loads every pool a method's fit uses: scipy's BLAS too)

    return {"torch": torch.get_num_threads(), **{p["filepath"]: p["num_threads"] for p in threadpool_info()}}


def test_a_method_runs_with_one_thread_in_every_pool_as_the_timing_table_says(ray_local):
    # the evaluation's seconds are one-CPU figures: torch, OpenBLAS and OpenMP each at one thread in the task
    out = run_with_timeouts([("probe", _thread_counts, ())], timeout_s=60.0, num_workers=1, progress=False)
    counts = out["probe"]
    assert counts["torch"] == 1 and len(counts) >= 3, counts  # torch and at least numpy's and scipy's BLAS
    assert set(counts.values()) == {1}, counts


def test_the_deadline_counts_from_the_start_of_a_queued_task(ray_local):
    # 12 naps of 2 s on the session's 4 CPUs run in >= 3 waves: the last start >= 4 s after submission, so a
    # deadline of 5 s counted from submission would cancel them
    calls = [(i, _sleep, (2.0,)) for i in range(12)]
    out = run_with_timeouts(calls, timeout_s=5.0, num_workers=12, progress=False)
    assert all(v == "woke" for v in out.values()), out


def test_a_failing_method_is_a_failed_record_not_an_exception():
    ds = EvalDataset("one", "data", "data", pd.DataFrame({"a": [0.0]}), np.array([0]), 2)
    spec = next(m for m in METHODS if m.name == "KMeans*")  # 1 row cannot hold 2 clusters
    res = evaluate_pair(spec, ds, None, 0)
    assert res["status"] == "failed" and np.isnan(res["ari"]) and "ValueError" in res["error"]


def test_unknown_method_or_suite_is_refused_up_front():
    with pytest.raises(ValueError, match="unknown method"):
        EvalConfig(methods=("KMeans",))
    with pytest.raises(ValueError, match="unknown suite"):
        EvalConfig(suites=("toy",))
    with pytest.raises(ValueError, match="unknown k_selection 'silhouette'"):
        EvalConfig(k_selection="silhouette")


def test_bad_worker_count_timeout_calibration_or_empty_method_list_is_refused_up_front():
    # num_workers=-1 used to spin forever in run_with_timeouts (no task ever submitted) and 0 silently meant
    # "one per CPU"; an empty method list crashed with KeyError('method') after loading every dataset
    for n in (0, -1):
        with pytest.raises(ValueError, match=f"num_workers must be >= 1 .*got {n}"):
            EvalConfig(num_workers=n)
    with pytest.raises(ValueError, match=r"timeout_s must be > 0 \(seconds per run, --timeout\), got 0"):
        EvalConfig(timeout_s=0)
    with pytest.raises(ValueError, match="calibration_size must be >= 0 .*got -1"):
        EvalConfig(calibration_size=-1)
    with pytest.raises(ValueError, match="no method to run"):
        EvalConfig(methods=())
    with pytest.raises(ValueError, match="num_workers must be >= 1"):
        run_with_timeouts([("a", _sleep, (0.0,))], timeout_s=1.0, num_workers=0, progress=False)


@pytest.mark.parametrize("rule", ["posterior_mode", "expected_ari"])
def test_tabclustpfn_runs_with_the_chosen_k_selection_rule(tiny_checkpoint, rule):
    from model.estimator import TabClustPFN

    rng = np.random.default_rng(1)
    ds = EvalDataset("blobs", "data", "data", pd.DataFrame(rng.normal(size=(60, 3)), columns=list("abc")),
                     np.arange(60) % 3, 3)
    spec = next(m for m in METHODS if m.name == "TabClustPFN")
    res = evaluate_pair(spec, ds, tiny_checkpoint, 0, rule)
    direct = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, k_selection=rule).fit(ds.features)
    assert res["status"] == "ok" and res["k_pred"] == direct.n_clusters_


def test_the_shipped_models_probabilities_over_k_are_scored_against_the_labelled_k():
    """The shipped checkpoint's calibrated ranker gives k_probabilities_; each run records what the report needs."""
    from model.estimator import TabClustPFN, default_checkpoint_path

    rng = np.random.default_rng(4)
    y = np.arange(300) % 3
    table = pd.DataFrame(np.eye(3)[y] * 8.0 + rng.normal(size=(300, 3)), columns=list("abc"))
    ds = EvalDataset("blobs", "data", "data", table, y, 3)
    spec = next(m for m in METHODS if m.name == "TabClustPFN")
    res = evaluate_pair(spec, ds, None, 0)
    probs = TabClustPFN(checkpoint=default_checkpoint_path(), random_state=0).fit(table).k_probabilities_
    assert res["status"] == "ok" and res["k_top_probability"] == max(probs.values())
    assert res["k_true_probability"] == probs[3] and res["k_set_holds"] in (0.0, 1.0) and res["k_set_size"] >= 1
    baseline = evaluate_pair(next(m for m in METHODS if m.name == "KMeans+"), ds, None, 0)
    assert np.isnan(baseline["k_top_probability"])


def test_tabclustpfn_may_answer_one_cluster_when_the_evaluation_allows_it(tiny_checkpoint):
    cloud = pd.DataFrame(np.random.default_rng(2).standard_t(3, size=(400, 3)), columns=list("abc"))
    ds = EvalDataset("cloud", "data", "data", cloud, np.arange(400) % 2, 2)
    spec = next(m for m in METHODS if m.name == "TabClustPFN")
    assert evaluate_pair(spec, ds, tiny_checkpoint, 0)["k_pred"] >= 2
    res = evaluate_pair(spec, ds, tiny_checkpoint, 0, allow_single_cluster=True)
    assert res["status"] == "ok" and res["k_pred"] == 1 and res["ari"] == 0.0


def test_tabclustpfn_drops_noise_columns_by_default_and_keeps_them_when_told(tiny_checkpoint):
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 150)
    table = pd.DataFrame({"signal": 6.0 * y + rng.normal(size=300), "n1": rng.normal(size=300),
                          "n2": rng.normal(size=300)})
    ds = EvalDataset("few", "data", "data", table, y, 2)
    spec = next(m for m in METHODS if m.name == "TabClustPFN*")  # the true K: only the columns differ
    screened = evaluate_pair(spec, ds, tiny_checkpoint, 0)  # by default ("auto": a two-mode column)
    alone = evaluate_pair(spec, EvalDataset("one", "data", "data", table[["signal"]], y, 2), tiny_checkpoint, 0)
    assert screened["status"] == "ok" and screened["ari"] == alone["ari"]
    assert evaluate_pair(spec, ds, tiny_checkpoint, 0, screen_noise=False)["ari"] != alone["ari"]


def test_tabclustpfn_spreads_few_level_columns_only_when_told(tiny_checkpoint):
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1, 2], 100)
    table = pd.DataFrame(np.clip(np.round(y[:, None] * 1.5 + 1 + rng.normal(0, 0.8, (300, 4))), 1, 5),
                         columns=list("abcd"))
    ds = EvalDataset("levels", "data", "data", table, y, 3)
    spec = next(m for m in METHODS if m.name == "TabClustPFN*")
    plain, spread = evaluate_pair(spec, ds, tiny_checkpoint, 0), evaluate_pair(spec, ds, tiny_checkpoint, 0,
                                                                               dequantize=True)
    assert plain["status"] == spread["status"] == "ok" and plain["ari"] != spread["ari"]


@pytest.mark.slow
def test_benchmark_on_a_data_folder_end_to_end(ray_local, tmp_path, tiny_checkpoint, tracking_uri):
    import mlflow

    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    for i, k in enumerate((2, 3, 4)):
        y = np.arange(90) % k
        X = rng.normal(size=(90, 3)) + 3.0 * y[:, None]
        frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(target=y)
        if i == 2:
            frame["colour"] = pd.Categorical(np.where(y % 2 == 0, "red", "blue"))
        frame.to_parquet(data / f"set{i}.parquet", index=False)
    methods = ("TabClustPFN*", "TabClustPFN", "KMeans*", "KMeans+", "DBSCAN")
    cfg = EvalConfig(suites=(), data_dir=str(data), methods=methods, checkpoint=tiny_checkpoint,
                     output_dir=str(tmp_path / "out"), calibration_size=0, timeout_s=300, num_workers=2,
                     tracking_uri=tracking_uri, progress=False)
    results, report_path = run_evaluation(cfg)

    assert len(results) == 3 * len(methods) and (results["status"] == "ok").all()
    assert set(results["method"]) == set(methods) and set(results["dataset"]) == {"set0", "set1", "set2"}
    on_disk = pd.read_csv(tmp_path / "out" / "results.csv")
    assert len(on_disk) == len(results) and {"ari", "nmi", "k_true", "k_pred", "seconds"} <= set(on_disk)
    kmeans = results[results["method"] == "KMeans*"].set_index("dataset")
    assert (kmeans["k_pred"] == kmeans["k_true"]).all()
    text = report_path.read_text()
    for heading in ("Ranks, methods that infer or select K", "Ranks, methods given the true K",
                    "by difficulty", "Significance"):
        assert heading in text
    for png in ("data_auto_cd.png", "data_true_cd.png", "data_win_rate.png", "data_time_vs_rank.png",
                "data_auto_ttest.png", "data_auto_wilcoxon.png"):
        assert (tmp_path / "out" / png).stat().st_size > 1000
    client = mlflow.MlflowClient(tracking_uri)
    [run] = client.search_runs([client.get_experiment_by_name("evaluation").experiment_id])
    assert "data.KMeans_trueK.median_ari" in run.data.metrics
    assert {"results.csv", "results.md", "data_auto_cd.png"} <= {a.path for a in client.list_artifacts(run.info.run_id)}


def test_command_line_reproduces_the_non_default_settings():
    from pipeline.evaluation.runner import command_line

    assert command_line(EvalConfig()) == "python jobs/evaluate.py --suite synthetic --suite real"
    cfg = EvalConfig(suites=("real",), checkpoint="m.pt", timeout_s=30.0, methods=("KMeans+",), quick=True)
    assert command_line(cfg) == "python jobs/evaluate.py --suite real --checkpoint m.pt --timeout 30 " \
                                "--methods 'KMeans+' --quick"
    cfg = EvalConfig(suites=("real",), k_selection="posterior_mode")
    assert command_line(cfg) == "python jobs/evaluate.py --suite real --k-selection posterior_mode"
    cfg = EvalConfig(suites=("real",), n_estimators=2)
    assert command_line(cfg) == "python jobs/evaluate.py --suite real --n-estimators 2"
    cfg = EvalConfig(suites=("real",), allow_single_cluster=True, methods=("TabClustPFN",))
    assert command_line(cfg) == "python jobs/evaluate.py --suite real --allow-single-cluster --methods 'TabClustPFN'"
    assert command_line(EvalConfig(suites=("dev",), screen_noise="False")) == \
        "python jobs/evaluate.py --suite dev --screen-noise false"
    assert command_line(EvalConfig(suites=("dev",), dequantize=True)) == \
        "python jobs/evaluate.py --suite dev --dequantize true"


def test_report_header_names_the_estimator_settings():
    from model.ensemble import DEFAULT_N_ESTIMATORS
    from pipeline.evaluation.runner import _header

    assert ("TabClustPFN: K by `auto` (the checkpoint's K ranker; BIC on tables of <= 4 columns, tiles of one "
            "cluster merged, AIC3 of latent classes on tables of categories), "
            f"{DEFAULT_N_ESTIMATORS} column ordering(s) averaged"
            in "\n".join(_header(EvalConfig(), 3, 2, 1.0, 2)))  # the shipped checkpoint carries a ranker
    assert "K by `auto` (expected_ari), " in "\n".join(_header(EvalConfig(refine="none"), 3, 2, 1.0, 2))
    assert "K by `auto` (the checkpoint's K ranker), " in "\n".join(_header(EvalConfig(refine="kmeans"), 3, 2, 1.0, 2))
    text = "\n".join(_header(EvalConfig(k_selection="posterior_mode", n_estimators=1), 3, 2, 1.0, 2))
    assert "TabClustPFN: K by `posterior_mode`, 1 column ordering(s) averaged" in text
    assert "allow_single_cluster" not in text
    assert "one-cluster answer allowed" in "\n".join(_header(EvalConfig(allow_single_cluster=True), 3, 2, 1.0, 2))
    assert "pure-noise columns dropped by `screen_noise=auto`" in text  # the estimator's default
    assert "`screen_noise=True`" in "\n".join(_header(EvalConfig(screen_noise=True), 3, 2, 1.0, 2))
    assert "few-level columns spread by `dequantize=False`" in text  # the estimator's default
    assert "`dequantize=True`" in "\n".join(_header(EvalConfig(dequantize=True), 3, 2, 1.0, 2))
    assert "3 datasets x 2 methods in 1 s, 2 run(s) at a time." in text  # how the times were taken
    with pytest.raises(ValueError, match="n_estimators"):
        EvalConfig(n_estimators=0)


def test_runs_are_timed_one_per_core_by_default(ray_local, monkeypatch):
    """The session's local Ray has 4 logical CPUs (more than a 2-core machine has cores, for Train and Data);
    the evaluation keeps no more tasks in flight than this machine has cores, so no run is timed while another
    shares its core."""
    import ray

    from pipeline.evaluation import runner

    cpus = int(ray.available_resources().get("CPU", 1))
    assert cpus >= 2
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 1)
    assert runner.default_workers() == 1
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 64)
    assert runner.default_workers() == cpus  # never more than Ray offers
