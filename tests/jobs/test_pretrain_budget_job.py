"""``jobs/pretrain_budget.py`` runs from a bare checkout: the package need not be installed (a lent GPU machine)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.job_scripts import REPO


def test_the_script_imports_the_code_of_its_own_checkout(tmp_path):
    # a copy of the checkout; this test's interpreter has the package installed (editable) from REPO, so without
    # the script's own path entry `pipeline` would resolve to REPO, not to the copy the script lives in
    copy = tmp_path / "checkout"
    for part in ("jobs", "pipeline", "model", "priors"):
        shutil.copytree(REPO / part, copy / part, ignore=shutil.ignore_patterns("__pycache__", "weights"))
    # the script's module body runs (its imports included) but not main(): then where did `pipeline` come from?
    probe = (f"import runpy; runpy.run_path({str(copy / 'jobs' / 'pretrain_budget.py')!r}, run_name='imported'); "
             "import pipeline; print(pipeline.__file__)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(copy / "pipeline")), out.stdout


def test_help_runs_from_another_directory():
    out = subprocess.run([sys.executable, str(REPO / "jobs" / "pretrain_budget.py"), "--help"], cwd="/",
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "--budget-s" in out.stdout


@pytest.mark.slow
def test_the_prepared_gpu_run_trains_and_exports_with_its_prior_settings(tmp_path):
    """`make gpu-continue`, the command kept for a lent GPU, on the CPU with the tiny preset: its prior overrides
    (N 200-1000, noise columns beside one informative column, contaminated rows, coarse columns, a fifth of the
    tasks one-mode tables, as the shipped CIN was refitted on) are accepted,
    it trains the shipped weights' loss from the first step (no Matching+CE warm-up, which is for random
    weights) and writes a model whose lineage records the run. Capped at 3 steps (after a 2-step probe), so it
    ends well inside its 90-s budget (under load the start-up and probe alone took 44 s); filling a budget is
    tested in tests/pipeline/test_budget.py."""
    from model.checkpoint import load_checkpoint

    out = tmp_path / "gpu"
    done = subprocess.run(["make", "-s", "gpu-continue", "GPU_DEVICE=cpu", "GPU_BUDGET=90", "GPU_INIT=",
                           f"GPU_PYTHON={sys.executable}", f"GPU_OUT={out}",
                           "ARGS=--smoke --max-steps-cap 3 --probe-steps 2"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 3 and summary["total_wall_s"] <= summary["budget_s"] == 90
    _, meta = load_checkpoint(out / "model.pt")
    prior = meta["train_config"]["stream"]["prior"]
    assert prior["n_rows"] == [200, 1000] and prior["nuisance"]["min_informative"] == 1
    assert prior["nuisance"]["p_discrete"] == 0.3  # some columns read as levels, rounded values or counts
    assert meta["train_config"]["stream"]["p_one_mode"] == 0.2  # tables without clusters, answered K = 2
    assert meta["train_config"]["objective"]["warmup_matching_steps"] == 0  # SoftARI from the first step
    assert meta["lineage"][-1]["steps"] > 0 and "informative" in meta["lineage"][-1]["what"]
