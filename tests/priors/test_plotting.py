"""priors.plotting and jobs/draw_priors.py: grids of two-dimensional prior datasets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from priors import sample_dataset
from priors.plotting import plot_grid

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_draw_priors_job_writes_one_grid_per_prior(tmp_path):
    out = tmp_path / "grids"
    result = subprocess.run(
        [sys.executable, "jobs/draw_priors.py", "--out", str(out), "--n", "4"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"},
    )
    assert result.returncode == 0, result.stderr
    for kind in ("gmm", "zeus"):
        png = out / f"{kind}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC


def test_draw_priors_job_rejects_bad_arguments(tmp_path):
    result = subprocess.run(
        [sys.executable, "jobs/draw_priors.py", "--out", str(tmp_path), "--n", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode != 0 and "--n" in result.stderr


def test_plot_grid_needs_two_columns(tmp_path):
    with pytest.raises(ValueError, match="no datasets"):
        plot_grid([], tmp_path / "x.png")
    ds = sample_dataset(0, kind="gmm")
    with pytest.raises(ValueError, match="columns"):
        plot_grid([ds], tmp_path / "x.png", columns=0)
    path = plot_grid([ds, ds], tmp_path / "sub" / "two.png", title="t", columns=2)
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_plot_grid_leaves_the_callers_matplotlib_backend_alone(tmp_path):
    """A notebook's backend (here svg) is still selected after plotting; no global pyplot state is touched."""
    code = (
        "import sys, matplotlib\n"
        "matplotlib.use('svg')\n"
        "from priors import sample_dataset\n"
        "from priors.plotting import plot_grid\n"
        "path = plot_grid([sample_dataset(0, kind='gmm')], sys.argv[1], columns=1)\n"
        "assert path.read_bytes()[:8] == b'\\x89PNG\\r\\n\\x1a\\n'\n"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "one.png")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr
