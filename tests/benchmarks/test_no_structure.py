"""benchmarks/no_structure.py: its tables hold one cluster, and its report counts the K each method answered."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import no_structure


@pytest.mark.parametrize("kind", no_structure.KINDS)
def test_each_kind_is_a_deterministic_z_normalised_table_of_its_size(kind):
    X = no_structure.table(kind, 120, 5, (1, 2, 3))
    assert X.shape == (120, 5)
    np.testing.assert_array_equal(X, no_structure.table(kind, 120, 5, (1, 2, 3)))
    assert not np.array_equal(X, no_structure.table(kind, 120, 5, (1, 2, 4)))
    np.testing.assert_allclose(X.mean(0), 0, atol=1e-9)
    np.testing.assert_allclose(X.std(0), 1, atol=1e-9)


def test_levels_are_five_integer_levels_and_the_round_cloud_has_no_favoured_direction():
    levels = no_structure.table("levels", 2000, 3, (0,))
    assert all(len(np.unique(col)) == 5 for col in levels.T)
    round_ = no_structure.table("round", 4000, 4, (0,))
    eig = np.linalg.eigvalsh(np.cov(round_.T))
    assert eig.max() / eig.min() < 1.3  # independent columns of equal spread
    elongated = no_structure.table("elongated", 4000, 4, (0,))
    eig = np.linalg.eigvalsh(np.cov(elongated.T))
    assert eig.max() / eig.min() > 3


def test_summary_counts_the_shares_per_kind_and_over_all_tables():
    frame = pd.DataFrame({"kind": ["a"] * 4 + ["b"] * 4, "N": 0, "D": 0,
                          "method": ["M", "M", "M", "M", "M", "M", "M", "M"], "k": [1, 2, 8, 10, 10, 10, 3, 3]})
    s = no_structure.summary(frame).set_index("kind")
    assert s.loc["a", "tables"] == 4 and s.loc["a", "median K"] == 5.0
    assert (s.loc["a", "K = 1"], s.loc["a", "K >= 8"], s.loc["a", "K = 10"]) == (0.25, 0.5, 0.25)
    assert (s.loc["b", "K >= 8"], s.loc["b", "K = 10"]) == (0.5, 0.5)
    assert (s.loc["all", "tables"], s.loc["all", "K >= 8"], s.loc["all", "K = 10"]) == (8, 0.5, 0.375)


def test_a_small_run_answers_every_method_on_every_table():
    frame = no_structure.measure(("round", "levels"), sizes=((150, 3), (150, 6)))
    assert len(frame) == 2 * 2 * len(no_structure.METHODS)
    assert set(frame["method"]) == set(no_structure.METHODS)
    assert frame["k"].between(1, 10).all()
    assert (frame.loc[frame["method"] != "TabClustPFN (allow_single_cluster)", "k"] >= 2).all()
    text = no_structure.report(frame, "python benchmarks/no_structure.py")
    assert "| round | TabClustPFN | 2 |" in text and "Checkpoint sha256:" in text


def test_paired_counts_more_and_fewer_clusters_table_by_table():
    k = {"TabClustPFN": [10, 8, 2, 3], "KMeans+": [2, 2, 2, 5]}
    frame = pd.DataFrame([{"kind": "a", "N": i, "D": 0, "method": m, "k": k[m][i]} for m in k for i in range(4)])
    (row,) = no_structure.paired(frame).to_dict("records")
    assert row["against"] == "KMeans+" and row["tables"] == 4
    assert (row["TabClustPFN more K"], row["fewer K"]) == (2, 1)
    assert row["sign test p"] == pytest.approx(1.0)  # 2 of 3 is no evidence either way


def test_a_candidate_checkpoint_answers_and_the_report_names_it(tiny_checkpoint, tmp_path, monkeypatch):
    measure = no_structure.measure
    monkeypatch.setattr(no_structure, "measure", lambda kinds, checkpoint: measure(kinds, ((150, 3), (150, 6)),
                                                                                  checkpoint))
    no_structure.main(["--kinds", "round", "--checkpoint", tiny_checkpoint, "--out", str(tmp_path / "ns")])
    frame = pd.read_csv(tmp_path / "ns.csv")
    assert len(frame) == 2 * len(no_structure.METHODS) and set(frame["kind"]) == {"round"}
    text = (tmp_path / "ns.md").read_text()
    assert f"--kinds round --checkpoint {tiny_checkpoint} --out" in text and "the file `tiny.pt` itself" in text
