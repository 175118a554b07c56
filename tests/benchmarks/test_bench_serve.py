"""benchmarks/bench_serve.py: the committed command still runs and writes the figures docs/serving.md quotes."""

from __future__ import annotations

import re

import pytest

from benchmarks.bench_serve import main


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_small_run_writes_the_table_and_the_ratio(tmp_path, capsys):
    out = tmp_path / "serve.md"
    assert main(["--rows", "80", "--cols", "3", "--repeats", "1", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Served model latency (80 x 3 table)") and "labels are identical" in text
    for call in ("served (HTTP)", "local, network loaded", "local, fresh TabClustPFN()"):
        assert re.search(rf"\| {re.escape(call)} \| \d+\.\d{{3}} \|", text), call
    assert re.search(r"Served / local \(network loaded\): \*\*\d+\.\d\dx\*\*", text)
    assert text in capsys.readouterr().out
