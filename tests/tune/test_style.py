"""Layout checks of the sweep code that need no linter installed (pycodestyle's E303 and the 120-column limit)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FILES = sorted([*(REPO / "tune").glob("*.py"), REPO / "jobs" / "sweep.py"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_more_than_two_blank_lines_in_a_row(path: Path):
    """E303: at most two blank lines between top-level definitions."""
    lines = path.read_text().splitlines()
    runs = [i + 1 for i in range(len(lines) - 2) if not any(line.strip() for line in lines[i:i + 3])]
    assert runs == [], f"{path.name}: three or more blank lines in a row from line(s) {runs}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_lines_fit_in_120_columns(path: Path):
    long = [i + 1 for i, line in enumerate(path.read_text().splitlines()) if len(line) > 120]
    assert long == [], f"{path.name}: lines longer than 120 characters: {long}"
