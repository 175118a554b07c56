"""benchmarks/paired_fits.py: two checkouts' workers fit the same table in turn and the pairs are reported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "paired_fits.py"


def test_two_checkouts_fit_in_pairs_and_the_ratio_is_reported(tiny_checkpoint):
    out = subprocess.run([sys.executable, str(SCRIPT), "--a", str(REPO), "--b", str(REPO), "--pairs", "3",
                          "--rows", "60", "--checkpoint", tiny_checkpoint],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "3 pairs of fits, N=60" in lines[0]
    assert lines[1].startswith("A (") and lines[2].startswith("B (")
    ratios = [float(x) for x in lines[3].split("quartiles ")[1].split(" (")[0].split(" / ")]
    assert ratios == sorted(ratios) and all(r > 0 for r in ratios)


def test_a_folder_that_is_not_a_checkout_is_refused(tmp_path, tiny_checkpoint):
    out = subprocess.run([sys.executable, str(SCRIPT), "--a", str(tmp_path), "--pairs", "1",
                          "--checkpoint", tiny_checkpoint], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "not a checkout of this repository" in out.stderr
