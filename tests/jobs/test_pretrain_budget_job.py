"""``jobs/pretrain_budget.py`` runs from a bare checkout: the package need not be installed (a lent GPU machine)."""

from __future__ import annotations

import shutil
import subprocess
import sys

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
