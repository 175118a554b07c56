"""benchmarks/bench_stages.py: a default fit's time split by stage, beside the KMeans sweep of the same run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.shared_data import needs_dev_suite


def _table(n_cols: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, 120)
    return pd.DataFrame(rng.normal(size=(120, n_cols)) + 4.0 * y[:, None], columns=[f"c{j}" for j in range(n_cols)])


@pytest.mark.parametrize("n_cols, network", [(8, True), (2, False)])
def test_the_stages_add_up_to_the_fit_and_the_network_runs_only_off_the_bic_path(tiny_checkpoint, n_cols, network):
    from benchmarks.bench_stages import STAGES, profile_fit, stage_timers
    from model.estimator import TabClustPFN
    from model.network import ContextInference

    est = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0)
    est.fit(_table(n_cols, 0))  # loads the network
    times = profile_fit(est, _table(n_cols, 1))
    assert set(times) == {"total", *STAGES} and all(v >= 0 for v in times.values())
    assert sum(times[s] for s in STAGES) == pytest.approx(times["total"], rel=1e-6)
    assert times["preprocess"] > 0
    assert (times["encoder"] > 0 and times["decoder"] > 0) == network  # <= 4 design columns: BIC, no network
    assert (times["bic_path"] > 0) != network
    original = ContextInference.__dict__["_infer"]
    with stage_timers():
        assert ContextInference.__dict__["_infer"] is not original
    assert ContextInference.__dict__["_infer"] is original  # the timers are taken off again


@needs_dev_suite
def test_a_one_repeat_run_on_the_dev_suite_writes_every_table_and_the_ratio(tmp_path):
    from benchmarks.bench_stages import main

    out = tmp_path / "stages"
    main(["--suite", "dev", "--repeats", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 23 and (df["total"] > 0).all() and (df["kmeans_sweep"] > 0).all()
    text = (tmp_path / "stages.md").read_text()
    assert "## `dev` (23 tables" in text and "per table fit / sweep" in text and "| encoder |" in text
