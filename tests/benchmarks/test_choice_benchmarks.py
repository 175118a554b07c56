"""The benchmarks that chose today's defaults still run and write the results files DESIGN.md cites."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from model.estimator import default_checkpoint_path
from tests.shared_data import needs_dev_suite

pytestmark = pytest.mark.skipif(not default_checkpoint_path().is_file(), reason="no shipped checkpoint")


def test_choose_refinement_scores_every_variant_on_the_same_tables(tmp_path):
    from benchmarks.choose_refinement import VARIANTS, main, weakest_split

    out = tmp_path / "choice-refine"
    main(["--sets", "prior", "--prior-tasks", "2", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 2 and set(df["set"]) == {"prior"}
    for name in [*VARIANTS, "kmeans+silhouette", "kmeans+merge-gate"]:
        assert df[name].between(-1, 1).all() and df[f"{name}_k"].between(2, 10).all()
    report = (tmp_path / "choice-refine.md").read_text()
    assert "| prior | 2 | kmeans |" in report and "Checkpoint sha256:" in report
    assert "| prior | 2 | " in report.split("CIN's posterior over K")[1]  # the calibration table
    assert "Command: `python benchmarks/choose_refinement.py --sets prior --prior-tasks 2" in report
    # the merge gate's statistic: two far groups explain almost all the variance along their axis, one Gaussian
    # cut at its mean about 2/pi of it
    rng = np.random.default_rng(0)
    far = np.r_[rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + [10, 0]]
    assert weakest_split(far, np.repeat([0, 1], 200)) > 0.95
    one = rng.normal(size=(4000, 2))
    assert weakest_split(one, (one[:, 0] > 0).astype(int)) == pytest.approx(2 / np.pi, abs=0.03)


def test_choose_pca_compares_both_rules_on_wide_tasks(tmp_path):
    from benchmarks.choose_pca import main

    out = tmp_path / "choice-pca"
    main(["--tasks", "1", "--rows", "200", "300", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 1 and df["D"].iloc[0] >= 65
    assert df["max_features_d"].iloc[0] == 64 and 1 <= df["above_noise_d"].iloc[0] < 64
    assert "above_noise against max_features, K inferred" in (tmp_path / "choice-pca.md").read_text()


def test_the_choice_benchmarks_leave_autograd_on_in_the_calling_process(tmp_path):
    """Run in-process (as the tests above do), they must not switch gradients off for whoever runs next."""
    import torch

    from benchmarks.choose_pca import main

    main(["--tasks", "1", "--rows", "200", "300", "--out", str(tmp_path / "p")])
    assert torch.is_grad_enabled()


def test_choose_checkpoint_applies_the_protocols_rule():
    from benchmarks.choose_checkpoint import verdict

    def p(mean, se):
        return {"mean": mean, "se": se, "better": 0, "worse": 0}

    chosen, why = verdict({
        "gains-everywhere": {"prior": p(0.010, 0.004), "dev": p(0.001, 0.010)},
        "gains-more-but-loses": {"prior": p(0.050, 0.010), "dev": p(-0.020, 0.010)},
        "bigger-mean-gain": {"prior": p(0.009, 0.004), "dev": p(0.030, 0.020)},
        "within-noise": {"prior": p(0.003, 0.004), "dev": p(-0.003, 0.004)},
    })
    assert chosen == "bigger-mean-gain"  # both qualify (+0.0055 and +0.0195 mean gain); the larger wins
    assert why["gains-more-but-loses"].startswith("does not qualify: loses") and "dev" in why["gains-more-but-loses"]
    assert why["within-noise"] == "does not qualify: gains beyond two standard errors on no set"
    assert why["gains-everywhere"].startswith("qualifies")
    assert verdict({"only": {"prior": p(-0.001, 0.004)}})[0] is None


def test_choose_checkpoint_pairs_identical_weights_to_zero_and_keeps_the_baseline(tmp_path):
    import shutil

    from benchmarks.choose_checkpoint import main

    twin = tmp_path / "twin.pt"
    shutil.copy(default_checkpoint_path(), twin)
    out = tmp_path / "choice-checkpoint"
    chosen = main([str(twin), "--sets", "prior", "one-informative", "--prior-tasks", "2",
                   "--one-informative-tasks", "2", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 8 and set(df["set"]) == {"prior", "one-informative"}
    wide = df.pivot(index=["set", "table"], columns="checkpoint", values="ari")
    assert np.allclose(wide.iloc[:, 0], wide.iloc[:, 1])  # same weights, same tables: the same answers
    assert (df[df["set"] == "one-informative"]["D"] >= 2).all()
    assert chosen is None
    text = (tmp_path / "choice-checkpoint.md").read_text()
    assert "+0.0000 +- 0.0000 | 0 / 0" in text and "Chosen: none; the baseline stays." in text
    assert text.count("Checkpoint sha256:") == 2 and "Command: `python benchmarks/choose_checkpoint.py" in text
    assert "carries no K ranker" not in text  # the twin has the baseline's ranker
    main([str(twin), "--sets", "prior", "--prior-tasks", "2", "--offset", "1000", "--out", str(out) + "-fresh"])
    fresh = pd.read_csv(f"{out}-fresh.csv")
    assert set(fresh["table"]).isdisjoint(df["table"])  # a fresh draw: other tables than the first
    assert "on a fresh draw of the synthetic development sets" in (tmp_path / "choice-checkpoint-fresh.md").read_text()
    with pytest.raises(SystemExit):  # the dev suite has no fresh draw
        main([str(twin), "--sets", "dev", "--offset", "1000", "--out", str(out) + "-x"])


def test_choose_checkpoint_says_when_a_candidate_lacks_the_baselines_k_ranker(tmp_path):
    from benchmarks.choose_checkpoint import ranker_notes
    from model.checkpoint import load_checkpoint, save_checkpoint

    bare = tmp_path / "bare.pt"
    save_checkpoint(bare, load_checkpoint(default_checkpoint_path())[0].without_k_ranker(), {"steps": 0})
    (note,) = ranker_notes(str(default_checkpoint_path()), [str(bare)])
    assert "bare.pt" in note and "jobs/fit_k_ranker.py --checkpoint" in note
    assert ranker_notes(str(bare), [str(default_checkpoint_path())]) == []


def test_choose_checkpoint_refuses_a_missing_candidate_with_a_message(tmp_path, capsys):
    from benchmarks.choose_checkpoint import main

    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "nope.pt"), "--out", str(tmp_path / "o")])
    assert exc.value.code == 2 and "no checkpoint at" in capsys.readouterr().err


def test_choose_structure_answers_one_cluster_above_each_threshold_and_scores_it(tmp_path):
    from benchmarks.choose_structure import THRESHOLDS, at_threshold, main

    out = tmp_path / "choice-structure"
    default, option = main(["--sets", "prior", "one-mode", "--prior-tasks", "2", "--one-mode-tasks", "3",
                            "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["prior"] * 2 + ["one-mode"] * 3
    assert (df.loc[df["set"] == "one-mode", "K"] == 1).all() and (df.loc[df["set"] == "one-mode", "ari"] == 0).all()
    assert (df["k_pred"] >= 2).all() and np.isfinite(df["z"]).all()  # the fits themselves never answer 1
    for t in THRESHOLDS["one"]:
        gated = at_threshold(df, t)
        one = df["z"] > t
        assert (gated.loc[one, "k_pred"] == 1).all() and (gated.loc[~one, "ari"] == df.loc[~one, "ari"]).all()
        assert (gated.loc[one & (df["set"] == "one-mode"), "ari"] == 1.0).all()
    assert option in THRESHOLDS["one"] and (default is None or default == option)
    report = (tmp_path / "choice-structure.md").read_text()
    assert "| one-mode | 3 | off (the network's K >= 2) | 0 | 0.000 |" in report
    assert "Command: `python benchmarks/choose_structure.py --sets prior one-mode" in report


def test_choose_structure_answer_two_is_the_estimators_own_k2_fit_where_the_rule_chose_more(tmp_path):
    from benchmarks.choose_structure import THRESHOLDS, at_threshold, main
    from priors.onemode import sample_one_mode
    from benchmarks.choose_structure import ONE_MODE_SEED

    out = tmp_path / "choice-structure-two"
    main(["--answer", "two", "--sets", "prior", "one-mode", "--prior-tasks", "2", "--one-mode-tasks", "4",
          "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    one_mode = df[df["set"] == "one-mode"]
    # one-mode tables keep their module's labels (two halves of the cloud), not one cluster
    assert (one_mode["K"] == 2).all()
    assert one_mode["N"].tolist() == [len(sample_one_mode(ONE_MODE_SEED + i).y) for i in range(4)]
    lowest = min(THRESHOLDS["two"])
    refit = (df["z"] > lowest) & (df["k_chosen"] > 2) & (df["rule"] != "bic")
    assert (df.loc[refit, "k_alt"] == 2).all()  # the K = 2 fit (no component left empty at K = 2)
    assert (df.loc[~refit, "ari_alt"] == df.loc[~refit, "ari"]).all()  # elsewhere the answer does not change
    for t in THRESHOLDS["two"]:
        gated = at_threshold(df, t)
        assert gated["changed"].tolist() == ((df["z"] > t) & refit & (df["k_pred"] != 2)).tolist()
    report = out.with_suffix(".md").read_text()
    assert "| K = 2 answered |" in report and "Command: `python benchmarks/choose_structure.py --answer two" in report


def test_choose_structure_keeps_the_option_off_when_a_threshold_costs_partitioned_tables():
    from benchmarks.choose_structure import report

    rows = [{"set": "prior", "table": f"p{i}", "K": 3, "ari": 0.8, "k_pred": 3, "z": z, "ari_alt": 0.0, "k_alt": 1}
            for i, z in enumerate([-5.0, -4.0, 0.5, 1.5, 3.5, 3.6])]
    rows += [{"set": "one-mode", "table": f"o{i}", "K": 1, "ari": 0.0, "k_pred": 4, "z": z, "ari_alt": 1.0,
              "k_alt": 1} for i, z in enumerate([0.5, 1.5, 2.5, 3.5, 4.0, 5.0])]
    lines, default, option = report(pd.DataFrame(rows))
    # every threshold answers one cluster for at least two prior tables (a loss beyond one standard error)
    assert default is None
    assert "Default: allow_single_cluster=False (no threshold qualifies)." in lines
    # mean gain over the two sets: z > 0 (-0.533 + 1.0) / 2 = 0.233, z > 1 (-0.4 + 0.833) / 2 = 0.217,
    # z > 2 and z > 3 (-0.267 + 0.667 or 0.5) / 2: the option takes z > 0
    assert option == 0.0


def test_choose_structure_answer_two_qualifies_a_threshold_that_gains_and_costs_nothing():
    from benchmarks.choose_structure import report

    # prior tables above z = 1 lose nothing at K = 2 (their answer is already right there); one-mode tables gain
    rows = [{"set": "prior", "table": f"p{i}", "K": 3, "ari": 0.8, "k_pred": 3, "z": z,
             "ari_alt": 0.8 if z > 1 else 0.2, "k_alt": 2} for i, z in enumerate([-5.0, -4.0, -0.5, 0.5, 1.5, 3.6])]
    rows += [{"set": "one-mode", "table": f"o{i}", "K": 2, "ari": 0.1, "k_pred": 8, "z": z, "ari_alt": 0.6,
              "k_alt": 2} for i, z in enumerate([1.5, 1.6, 2.5, 3.5, 4.0, 5.0])]
    lines, default, _ = report(pd.DataFrame(rows), "two")
    assert default == 1.0  # z > -1 and z > 0 cost prior tables; z > 1 gains most among those that cost nothing
    assert any(line.startswith("Default: K = 2 above z > 1 ") for line in lines)


def _ranked(tmp_path, name: str, seed: int, candidates: str = "kmeans") -> str:
    """The shipped network with a K ranker of random weights (``seed``)."""
    import dataclasses

    import torch

    from model.checkpoint import load_checkpoint, save_checkpoint
    from model.k_ranker import KRanker
    from model.network import TabClustNet

    net = load_checkpoint(default_checkpoint_path())[0].without_k_ranker()
    ranked = TabClustNet(dataclasses.replace(net.cfg, k_ranker=True, k_ranker_candidates=candidates))
    torch.manual_seed(seed)
    ranked.load_state_dict({**net.state_dict(), **{f"k_ranker.{k}": v for k, v in KRanker().state_dict().items()}})
    path = tmp_path / f"{name}.pt"
    save_checkpoint(path, ranked, {"steps": 0})
    return str(path)


def test_choose_k_rule_scores_every_rule_on_the_records_of_the_same_network(tmp_path, capsys):
    from benchmarks.choose_k_rule import SETS, main
    from benchmarks.k_rule_records import main as records

    folder = tmp_path / "records"
    records(["--set", "prior", "--tasks", "3", "--workers", "1", "--out", str(folder)])
    with np.load(folder / "prior.npz") as d:
        prior = {k: d[k] for k in d.files}
    assert prior["features"].shape[0] == 3 and str(prior["weights_sha256"]) != ""
    for which in SETS[1:]:  # the other sets: the same records under their names
        np.savez(folder / f"{which}.npz", **prior)
    out = tmp_path / "choice"
    main([_ranked(tmp_path, "r0", 0), "--records", str(folder), "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 3 * len(SETS)
    for rule in ("expected_ari", "silhouette", "expected_ari+silhouette", "mix_bic", "r0"):
        assert df[rule].between(-1, 1).all() and df[f"{rule}_k"].between(2, 10).all()
    # a pick scores the ARI of the default refine's partition at that K
    t = np.arange(3)
    assert np.allclose(df[df.set == "prior"]["r0"], prior["ari"][t, df[df.set == "prior"]["r0_k"] - 2])
    assert np.array_equal(prior["ari"], prior["ari_gmm"], equal_nan=True)
    report = (tmp_path / "choice.md").read_text()
    assert "| prior | 3 | expected_ari | " in report and "+0.0000 +- 0.0000 | 0 / 0" in report
    assert "- `r0`: " in report and "Chosen: " in report and "Command: `python benchmarks/choose_k_rule.py" in report

    again = tmp_path / "again"  # the same ranker against its own earlier picks: no difference
    main([_ranked(tmp_path, "r0b", 0), "--records", str(folder), "--baseline-from", f"{out}.csv", "r0",
          "--out", str(again)])
    text = (tmp_path / "again.md").read_text()
    assert "against r0 (mean +- s.e.)" in text and "| prior | 3 | r0b | " in text
    assert "Chosen: none (the baseline `r0` stays)." in text
    assert pd.read_csv(f"{again}.csv")["r0b"].equals(pd.read_csv(f"{again}.csv")["r0"])

    given = tmp_path / "given"  # a checkpoint given beside the others as the baseline
    main([_ranked(tmp_path, "r0", 0), _ranked(tmp_path, "r1", 1), "--records", str(folder), "--baseline", "r0",
          "--out", str(given)])
    text = (tmp_path / "given.md").read_text()
    assert "against r0 (mean +- s.e.)" in text and "| prior | 3 | r0 | " in text and "- `r0`: " not in text
    assert "- `r1`: " in text and "- `expected_ari`: " in text
    mixed = tmp_path / "mixed"  # the same weights fitted on the mixtures' partitions read their features
    main([_ranked(tmp_path, "r0", 0), _ranked(tmp_path, "r0g", 0, candidates="gmm"), "--records", str(folder),
          "--out", str(mixed)])
    both = pd.read_csv(f"{mixed}.csv")
    import torch

    from model.checkpoint import load_checkpoint
    ranker = load_checkpoint(tmp_path / "r0g.pt")[0].k_ranker
    with torch.no_grad():
        pick = ranker(torch.as_tensor(np.nan_to_num(prior["features_gmm"], nan=0.0), dtype=torch.float32),
                      torch.as_tensor(~np.isnan(prior["ari"]))).argmax(-1).numpy()
    assert np.array_equal(both[both.set == "prior"]["r0g_k"].to_numpy(), pick + 2)
    with pytest.raises(SystemExit, match="--baseline 'nope' is none of the rules"):
        main([_ranked(tmp_path, "r0", 0), "--records", str(folder), "--baseline", "nope", "--out", str(given)])

    for which in SETS:  # records of another network are refused
        np.savez(folder / f"{which}.npz", **{**prior, "weights_sha256": np.array("0" * 64)})
    with pytest.raises(SystemExit, match="recompute them with benchmarks/k_rule_records.py"):
        main([_ranked(tmp_path, "r1", 1), "--records", str(folder), "--out", str(out)])


def test_clustered_standard_error_is_the_usual_one_for_single_tables_and_wider_for_alike_ones():
    from benchmarks.choose_k_rule import clustered_se

    d = np.array([0.1, -0.2, 0.05, 0.3, 0.0, -0.1])
    assert clustered_se(d, np.arange(6)) == pytest.approx(d.std(ddof=1) / np.sqrt(6))
    # two sources whose tables move together: the mean rests on two draws, not six
    alike = np.array([0.2, 0.2, 0.2, -0.1, -0.1, -0.1])
    assert clustered_se(alike, np.repeat(["a", "b"], 3)) > 2 * clustered_se(alike, np.arange(6))
    assert np.isnan(clustered_se(alike, np.repeat("a", 6)))


@needs_dev_suite
def test_the_dev_derived_set_takes_both_folds_in_turn_and_a_fresh_draw_from_an_offset():
    from benchmarks.choose_checkpoint import tables
    from pipeline.k_ranker_fit import dev_derived_origin, dev_derived_table

    names = [name for name, _, _ in tables("dev-derived", 4)]
    assert [dev_derived_origin(n)[0] for n in names] == [0, 1, 0, 1]
    assert names == [dev_derived_table(i // 2, i % 2)[0] for i in range(4)]
    assert [name for name, _, _ in tables("dev-derived", 2, offset=2)] == names[2:]


@needs_dev_suite
def test_choose_k_rule_cross_fits_a_dev_derived_ranker_on_the_dev_suite(tmp_path):
    from benchmarks.choose_k_rule import SETS, main
    from benchmarks.k_rule_records import main as records
    from pipeline.k_ranker_fit import dev_suite_folds

    folder = tmp_path / "records"
    records(["--set", "prior", "--tasks", "4", "--workers", "1", "--out", str(folder)])
    with np.load(folder / "prior.npz") as d:
        prior = {k: d[k] for k in d.files}
    folds = dev_suite_folds()
    dev = np.array(sorted(folds)[4:8])  # a few of the suite's tables: both folds, their folds the fit's
    derived = np.array(["dev_derived_0_0_x", "dev_derived_1_0_y", "dev_derived_0_1_x_z", "dev_derived_1_1_y"])
    for which in [*SETS[1:], "dev-derived"]:
        names = {"dev": dev, "dev-derived": derived}.get(which, prior["names"])
        np.savez(folder / f"{which}.npz", **{**prior, "names": names})
    full, fold0, fold1 = (_ranked(tmp_path, name, seed) for name, seed in (("full", 0), ("f0", 1), ("f1", 2)))
    plain, crossed = tmp_path / "plain", tmp_path / "crossed"
    sets = ["--sets", *SETS, "dev-derived"]
    main([full, fold0, fold1, "--records", str(folder), *sets, "--out", str(plain)])
    main(["--records", str(folder), "--cross-fit", full, fold0, fold1, *sets, "--out", str(crossed)])
    each, cross = pd.read_csv(f"{plain}.csv"), pd.read_csv(f"{crossed}.csv")
    assert "f0" not in cross.columns and "f1" not in cross.columns  # only the cross-fitted rule is judged
    off_dev = ~cross.set.isin(["dev", "dev-derived"])
    assert cross.loc[off_dev, "full_k"].equals(each.loc[off_dev, "full_k"])  # FULL's picks off the dev suite
    assert {folds[name] for name in dev} == {0, 1}
    folds = {**folds, **{name: int(name[12]) for name in derived}}
    for j, row in cross[~off_dev].iterrows():  # on it and its derived tables, the ranker that never saw the fold
        other = "f1" if folds[row.table] == 0 else "f0"
        assert row.full_k == each.loc[j, f"{other}_k"] and row.full == each.loc[j, other]
    assert list(cross.loc[cross.set == "dev-derived", "source"]) == ["x", "y", "x_z", "y"]
    text = (tmp_path / "crossed.md").read_text()
    assert "- `full`: " in text and "--cross-fit" in text and text.count("Checkpoint sha256") >= 3
    assert "Cross-fitted (`full`): " in text and "dev-derived: standard errors over its 3 source tables" in text
    with pytest.raises(SystemExit, match="three checkpoints of different names"):
        main(["--records", str(folder), "--cross-fit", full, full, fold1, "--out", str(crossed)])
    twice = tmp_path / "twice"  # one rule per triple, e.g. per fit seed
    main(["--records", str(folder), "--cross-fit", full, fold0, fold1, "--cross-fit", fold1, fold0, full, *sets,
          "--out", str(twice)])
    both = pd.read_csv(f"{twice}.csv")
    assert both["full_k"].equals(cross["full_k"]) and both.loc[off_dev, "f1_k"].equals(each.loc[off_dev, "f1_k"])
    with pytest.raises(SystemExit, match="a name of its own"):
        main([full, "--records", str(folder), "--cross-fit", full, fold0, fold1, "--out", str(twice)])


def test_choose_mixture_refinement_scores_every_variant_at_the_rankers_k(tmp_path):
    from benchmarks.choose_mixture_refinement import FIRST_VARIANTS, main, variant_labels

    out = tmp_path / "choice-mixture-refine"
    main(["--set", "prior", "one-informative", "--tasks", "1", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["prior", "one-informative"]
    for name in FIRST_VARIANTS:
        assert df[name].between(-1, 1).all() and (df[f"{name}_ms"] >= 0).all()
    report = (tmp_path / "choice-mixture-refine.md").read_text()
    assert "| prior | 1 | kmeans |" in report and "Chosen: " in report and "Checkpoint sha256:" in report
    # the baseline is the ranker's candidate itself; the shared-diagonal variants weigh out a noise column
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 150)
    X = np.c_[6.0 * y + rng.normal(size=300), 3.0 * rng.normal(size=300)]
    start = np.where(rng.random(300) < 0.25, 1 - y, y)
    np.testing.assert_array_equal(variant_labels("kmeans", X, start, 2), start)
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(y, variant_labels("shared-floor-0.3", X, start, 2)) > 0.95
    assert adjusted_rand_score(y, variant_labels("own-diagonal", X, start, 2)) > 0.95


def test_choose_mixture_refinement_judges_full_covariances_against_a_named_baseline(tmp_path):
    from benchmarks.choose_mixture_refinement import main, variant_labels
    from model.refinement import diagonal_em, full_em

    out = tmp_path / "choice-full-covariance"
    main(["--set", "low-d", "shapes", "--tasks", "1", "--workers", "1", "--offset", "7", "--variants",
          "own-diagonal", "own-full", "own-full-p2", "--baseline", "own-diagonal", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["low-d", "shapes"] and list(df["table"])[0] == "low-d_7"
    assert "shared-3-steps" not in df.columns and df["own-full"].between(-1, 1).all()
    report = (tmp_path / "choice-full-covariance.md").read_text()
    assert "against own-diagonal" in report and "| low-d | 1 | own-diagonal | " in report
    with pytest.raises(SystemExit):  # the baseline must be one of the variants
        main(["--variants", "own-full", "--baseline", "own-diagonal", "--out", str(out)])
    with pytest.raises(SystemExit):  # the dev suite has no fresh draw
        main(["--set", "dev", "--offset", "3", "--out", str(out)])
    # each rule picks the full or the diagonal mixture by the table's width P (and its rows per parameter)
    rng = np.random.default_rng(1)
    start = rng.integers(0, 2, 400)
    for p, name, full in ((2, "own-full-p2", True), (3, "own-full-p2", False), (9, "own-full", True),
                          (3, "own-full-rows-10", True), (9, "own-full-rows-10", False)):
        X = rng.normal(size=(400, p)) * rng.uniform(0.5, 2.0, size=p) @ rng.normal(size=(p, p))
        want = (full_em if full else diagonal_em)(X, start, 2)[0]
        np.testing.assert_array_equal(variant_labels(name, X, start, 2), want)


def test_choose_low_dim_changes_only_tables_of_few_columns_and_names_its_choice(tmp_path):
    from benchmarks.choose_low_dim import VARIANTS, main, variant_answer
    from model.low_dim import choose
    from model.refinement import FULL_COVARIANCE_MAX_WIDTH, full_em

    out = tmp_path / "choice-low-dim"
    main(["--set", "prior", "low-d", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["prior", "prior", "low-d", "low-d"]
    wide = df["width"] > FULL_COVARIANCE_MAX_WIDTH
    assert wide.any() and (~wide).any()
    for name in VARIANTS:
        assert df[name].between(-1, 1).all() and df[f"{name}_k"].between(2, 10).all()
        # a wide table keeps today's answer in every variant
        np.testing.assert_array_equal(df.loc[wide, name], df.loc[wide, "default"])
    report = (tmp_path / "choice-low-dim.md").read_text()
    assert "against default" in report and "Chosen: " in report and "low-d 2 of 2" in report
    # the baseline is today's refinement at the ranker's K; bic-net is what the estimator's path returns
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 100)
    X = rng.normal(size=(300, 2)) * 0.5 + np.array([[0, 0], [4, 0], [0, 4]])[y]
    candidates = np.stack([np.minimum(y, k - 1) for k in range(2, 11)])
    labels, k = variant_answer("default", X, candidates, 6, 2)
    np.testing.assert_array_equal(labels, full_em(X, candidates[0], 2)[0])
    assert k == 2
    labels, k = variant_answer("bic-net-floor-fine", X, candidates, 6, 2)  # the estimator's path
    chosen = choose(X, candidates, 6)
    assert k == chosen.k == 3
    np.testing.assert_array_equal(labels, chosen.labels)
    with pytest.raises(SystemExit):  # the dev suite has no fresh draw
        main(["--set", "dev", "--offset", "3", "--out", str(out)])


def test_choose_low_dim_compares_the_variants_asked_for_against_the_baseline_named(tmp_path):
    from benchmarks.choose_low_dim import main, variant_answer
    from model.low_dim import bic_choice

    out = tmp_path / "floor"
    main(["--set", "low-d", "--tasks", "2", "--workers", "1", "--variants", "bic-net", "bic-net-floor-fine",
          "--baseline", "bic-net", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert {"bic-net", "bic-net-floor-fine"} <= set(df.columns) and "default" not in df.columns
    report = (tmp_path / "floor.md").read_text()
    assert "against bic-net" in report and "`bic-net-floor-fine`:" in report and "--baseline bic-net" in report
    with pytest.raises(SystemExit):
        main(["--set", "low-d", "--variants", "bic-net-floor-fine", "--baseline", "bic-net", "--out", str(out)])
    # the floors: 0.1 (bic-net), 0.01 everywhere, or 0.01 only where every column has many values
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2, 3], 75)
    X = np.array([[-2, -2], [-1.4, -2], [2, 2], [2.6, 2]])[y] + rng.normal(size=(300, 2)) * 0.12
    X = (X - X.mean(0)) / X.std(0)
    candidates = np.stack([np.minimum(y, k - 1) for k in range(2, 11)])
    for name, floor in (("bic-net", 0.1), ("bic-net-floor-0.01", 0.01), ("bic-net-floor-fine", 0.01)):
        want = bic_choice(X, {k: [candidates[k - 2]] for k in range(2, 7)}, floor=floor)
        labels, k = variant_answer(name, X, candidates, 6, 2)
        assert k == want.k
        np.testing.assert_array_equal(labels, want.labels)
    coarse = np.column_stack([X, rng.integers(0, 2, len(X))])
    want = bic_choice(coarse, {k: [candidates[k - 2]] for k in range(2, 7)}, floor=0.1)
    assert variant_answer("bic-net-floor-fine", coarse, candidates, 6, 2)[1] == want.k


def test_choose_low_dim_aic3_variant_is_the_shipped_path_with_k_by_aic3():
    from benchmarks.choose_low_dim import variant_answer
    from model.low_dim import choose, kmeans_starts

    rng = np.random.default_rng(1)
    y = np.repeat([0, 1, 2], 100)
    X = np.array([[0.0, 0.0], [2.8, 0.0], [6.0, 0.0]])[y] + rng.normal(size=(300, 2)) * [0.7, 1.0]
    X = (X - X.mean(0)) / X.std(0)
    candidates = np.stack([np.minimum(y, k - 1) for k in range(2, 11)])  # ignored: both start from k-means++
    for name, criterion in (("bic-kmeans-floor-fine", "bic"), ("aic3-kmeans-floor-fine", "aic3")):
        want = choose(X, kmeans_starts(X, 6), 6, criterion=criterion, merge=None)
        labels, k = variant_answer(name, X, candidates, 6, 2)
        assert k == want.k
        np.testing.assert_array_equal(labels, want.labels)
    assert variant_answer("aic3-kmeans-floor-fine", X, candidates, 6, 2)[1] > \
        variant_answer("bic-kmeans-floor-fine", X, candidates, 6, 2)[1]


def test_choose_low_dim_tile_variants_merge_the_shipped_paths_components_where_they_say():
    """``-tiles`` merges the tiles of the BIC path's choice on any design, ``-tiles-fine`` only on a design of
    many-valued columns, both at the first thresholds and however few pairs qualify; ``-strict`` at stricter ones;
    ``-chain3-r80-f03`` is the shipped path (``model.low_dim.choose``)."""
    from sklearn.datasets import make_moons

    from benchmarks.choose_low_dim import variant_answer
    from model.low_dim import choose, kmeans_starts, merged_where

    X, _ = make_moons(800, noise=0.06, random_state=2)
    X = (X - X.mean(0)) / X.std(0)
    candidates = np.zeros((9, len(X)), np.int64)  # ignored: every variant here starts from k-means++
    coarse = X.copy()
    coarse[:, 1] = np.round(coarse[:, 1] * 4) / 4  # 15 levels
    base_k = variant_answer("bic-kmeans-floor-fine", X, candidates, 10, 2)[1]
    for design, modes in ((X, ("any", "fine")), (coarse, ("any", None))):
        for name, mode in zip(("bic-kmeans-floor-fine-tiles", "bic-kmeans-floor-fine-tiles-fine"), modes):
            bic = choose(design, kmeans_starts(design, 10), 10, merge=None)  # those two: the first thresholds
            want = merged_where(design, bic, mode, min_ratio=0.85, min_fill=0.05, min_pairs=1)
            labels, k = variant_answer(name, design, candidates, 10, 2)
            assert k == want.k
            np.testing.assert_array_equal(labels, want.labels)
    assert variant_answer("bic-kmeans-floor-fine-tiles-fine", X, candidates, 10, 2)[1] == 2 < base_k
    assert 2 < variant_answer("bic-kmeans-floor-fine-tiles-fine-strict", X, candidates, 10, 2)[1] < base_k
    assert variant_answer("bic-kmeans-floor-fine-tiles-fine-chain3", X, candidates, 10, 2)[1] == 2
    shipped = variant_answer("bic-kmeans-floor-fine-tiles-fine-chain3-r80-f03", X, candidates, 10, 2)
    want = choose(X, kmeans_starts(X, 10), 10)
    assert shipped[1] == want.k == 2
    np.testing.assert_array_equal(shipped[0], want.labels)


def test_the_many_blobs_set_draws_7_to_10_gaussian_blobs_in_2_to_3_columns_and_fresh_ones_from_an_offset():
    from benchmarks.choose_checkpoint import tables

    first = list(tables("many-blobs", 6))
    assert [name for name, _, _ in first] == [f"many-blobs_{i}" for i in range(6)]
    for _, frame, y in first:
        assert 2 <= frame.shape[1] <= 3 and len(frame) in (300, 600, 1000) and 7 <= len(np.unique(y)) <= 10
    again = list(tables("many-blobs", 2, offset=4))
    np.testing.assert_array_equal(again[0][1].to_numpy(), first[4][1].to_numpy())
    assert [name for name, _, _ in tables("many-blobs", 2, offset=31000)] == ["many-blobs_31000", "many-blobs_31001"]


def test_the_many_ellipses_set_draws_7_to_10_gaussian_clusters_of_unequal_tilted_covariances():
    from benchmarks.choose_checkpoint import tables

    first = list(tables("many-ellipses", 6))
    assert [name for name, _, _ in first] == [f"many-ellipses_{i}" for i in range(6)]
    for _, frame, y in first:
        assert 2 <= frame.shape[1] <= 3 and len(frame) in (300, 600, 1000) and 7 <= len(np.unique(y)) <= 10
        assert set(np.unique(y)) == set(range(len(np.unique(y))))
        covs = [np.cov(frame.to_numpy()[y == c].T) for c in np.unique(y)]
        corr = [abs(cv[0, 1]) / np.sqrt(cv[0, 0] * cv[1, 1]) for cv in covs]
        assert max(corr) > 0.5  # not round: some cluster is tilted against the axes
        assert max(np.trace(cv) for cv in covs) > 2 * min(np.trace(cv) for cv in covs)  # nor of one spread
    again = list(tables("many-ellipses", 2, offset=4))
    np.testing.assert_array_equal(again[0][1].to_numpy(), first[4][1].to_numpy())


def test_the_few_column_sets_draw_the_prior_at_their_widths_and_unknown_sets_are_refused():
    from benchmarks.choose_checkpoint import COARSE_FEW_COLUMNS, FEW_COLUMNS, tables

    for which, (lo, hi) in {**FEW_COLUMNS, **COARSE_FEW_COLUMNS}.items():
        frames = [frame for _, frame, _ in tables(which, 6)]
        assert all(lo <= frame.shape[1] <= hi for frame in frames)
    coarse = [frame for _, frame, _ in tables("coarse-low-d", 6)]  # the coarse prior: some columns of few levels
    assert any(frame[c].nunique() <= 20 for frame in coarse for c in frame.columns)
    assert {frame.shape[1] for _, frame, _ in tables("mid-d", 6)} != {6}  # the range, not its end
    with pytest.raises(ValueError, match="unknown set 'wide': choose from .*dev-derived.*many-ellipses"):
        next(tables("wide", 1))


def test_choose_low_dim_width_variants_take_the_bic_path_only_up_to_their_width():
    from benchmarks.choose_low_dim import variant_answer

    rng = np.random.default_rng(2)
    y = np.repeat([0, 1, 2], 100)
    for width in (2, 3, 4):
        X = rng.normal(size=(300, width)) * 0.5 + 4.0 * np.eye(3, width)[y]
        candidates = np.stack([np.minimum(y, k - 1) for k in range(2, 11)])
        bic = variant_answer("bic-net", X, candidates, 6, 2)
        ranker = variant_answer("default", X, candidates, 6, 2)
        for name, bound in (("bic-net-w2", 2), ("bic-net-w3", 3)):
            labels, k = variant_answer(name, X, candidates, 6, 2)
            want = bic if width <= bound else ranker
            assert k == want[1]
            np.testing.assert_array_equal(labels, want[0])


def test_choose_low_dim_wide_variants_take_the_shipped_path_on_designs_up_to_their_width_and_fine_rule():
    from benchmarks.choose_low_dim import WIDE_VARIANTS, variant_answer, wide_takes

    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2], 100)
    candidates = np.stack([np.minimum(y, k - 1) for k in range(2, 11)])
    fine = {p: rng.normal(size=(300, p)) * 0.5 + 4.0 * np.eye(3, p)[y] for p in (4, 6, 7, 8, 9)}
    coded = np.column_stack([fine[4], y == 0, rng.normal(size=300)])  # 6 columns, one a 0/1 code
    assert WIDE_VARIANTS["bic-net-floor-fine-w6-fine"] == (6, True)
    for name, (widest, fine_only) in WIDE_VARIANTS.items():
        for p, X in fine.items():
            assert wide_takes(name, X) == (p <= widest)
        assert wide_takes(name, coded) == (not fine_only)
        labels, k = variant_answer(name, fine[6], candidates, 6, 2)
        want = variant_answer("bic-net-floor-fine", fine[6], candidates, 6, 2)
        assert k == want[1] == 3
        np.testing.assert_array_equal(labels, want[0])
        with pytest.raises(ValueError, match="does not take a design of 9 columns"):
            variant_answer(name, fine[9], candidates, 6, 2)


def test_choose_low_dim_route_variants_send_designs_with_few_level_columns_to_the_rankers_k():
    from benchmarks.choose_low_dim import DEFAULT_SETS, SIZES, routed_to_ranker, variant_answer

    rng = np.random.default_rng(4)
    y = np.repeat([0, 1, 2], 100)
    X = rng.normal(size=(300, 2)) * 0.5 + 4.0 * np.eye(3, 2)[y]
    candidates = np.stack([np.minimum(y, k - 1) for k in range(2, 11)])
    levels = np.column_stack([X, rng.integers(1, 6, 300)])  # a column of 5 levels
    code = np.column_stack([X, y == 0])  # a 0/1 code
    for design_rows, (by_coarse, by_levels) in ((X, (False, False)), (levels, (True, True)), (code, (True, False))):
        assert routed_to_ranker("bic-fine-else-ranker", design_rows) == by_coarse
        assert routed_to_ranker("bic-else-ranker-on-levels", design_rows) == by_levels
        for name, routed in (("bic-fine-else-ranker", by_coarse), ("bic-else-ranker-on-levels", by_levels)):
            labels, k = variant_answer(name, design_rows, candidates, 6, 2)
            want = variant_answer("default" if routed else "bic-net-floor-fine", design_rows, candidates, 6, 2)
            assert k == want[1]
            np.testing.assert_array_equal(labels, want[0])
    assert "coarse-low-d" in SIZES and "coarse-low-d" not in DEFAULT_SETS
    for values, routed in ((3, False), (4, True), (7, True), (8, False)):  # rating scales only
        column = np.column_stack([X, rng.integers(0, values, 300)])
        assert routed_to_ranker("bic-else-ranker-on-4-7-levels", column) == routed


def test_choose_screening_fits_each_variant_only_where_it_drops_a_column(tmp_path):
    from benchmarks.choose_screening import VARIANTS, main

    out = tmp_path / "choice-screening"
    main(["--set", "prior", "one-informative", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["prior", "prior", "one-informative", "one-informative"]
    for name in VARIANTS:
        assert df[name].between(-1, 1).all()
        same = df[f"{name}_dropped"] == 0  # nothing dropped: keep's answer, not a second fit
        assert (df.loc[same, name] == df.loc[same, "keep"]).all()
    assert (df.loc[df["set"] == "one-informative", "screen-no-readmit_dropped"] > 0).all()  # noise columns go
    report = (tmp_path / "choice-screening.md").read_text()
    assert "| one-informative | 2 | screen |" in report and "Chosen: " in report
    assert "Command: `python benchmarks/choose_screening.py --set prior one-informative" in report


def test_choose_screening_modes_takes_screens_answer_only_where_a_column_has_two_modes_on_a_fresh_draw(tmp_path):
    from benchmarks.choose_checkpoint import tables
    from benchmarks.choose_screening import main

    out = tmp_path / "fresh"
    main(["--set", "one-informative", "--tasks", "3", "--workers", "1", "--offset", "1000",
          "--variants", "screen-modes", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["table"]) == ["one-informative_1000", "one-informative_1001", "one-informative_1002"]
    assert "screen-no-readmit" not in df  # only the variants asked for (keep and screen always)
    source = np.where(df["modes"], df["screen"], df["keep"])
    assert (df["screen-modes"] == source).all()
    first = [y for _, _, y in tables("one-informative", 3)]  # the first draw: other tables
    fresh = [y for _, _, y in tables("one-informative", 3, offset=1000)]
    assert any(len(a) != len(b) or (a != b).any() for a, b in zip(first, fresh))
    later = [y for _, _, y in tables("one-informative", 2, offset=1001)]  # the same seeds, the same tables
    assert all(np.array_equal(a, b) for a, b in zip(fresh[1:], later))
    with pytest.raises(SystemExit):
        main(["--set", "dev", "--offset", "5", "--out", str(tmp_path / "x")])


def test_paired_results_compares_one_method_table_by_table(tmp_path):
    from benchmarks.paired_results import main

    def results(aris):
        return pd.DataFrame([{"suite": "real", "dataset": f"t{i}", "method": m, "k_mode": "auto", "ari": a,
                              "k_pred": 2} for i, a in enumerate(aris) for m in ("TabClustPFN", "KMeans+")])

    results([0.5, 0.9, 0.2, 0.4]).to_csv(tmp_path / "a.csv", index=False)
    results([0.5, 0.6, 0.3, 0.2]).to_csv(tmp_path / "b.csv", index=False)
    out = tmp_path / "paired.md"
    main([str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--labels", "new", "old", "--out", str(out)])
    report = out.read_text()
    row = next(line for line in report.splitlines() if line.startswith("| real |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "4" and cells[4].startswith("+0.100")  # mean of 0, +0.3, -0.1, +0.2
    assert cells[5] == "0.62" and cells[7] == "2 / 1"  # a tie counts half
    assert "most lost: t2 0.30 -> 0.20; most gained: t1 0.60 -> 0.90, t3 0.20 -> 0.40" in report


def _calibrated_tiny_checkpoint(path, **calibration):
    """A tiny network with a random K ranker and the given calibration (ModelConfig fields) saved at ``path`` ->
    (its path, the network, the weights' sha256 its records carry)."""
    import dataclasses

    import torch

    from model.checkpoint import save_checkpoint, weights_sha256
    from model.network import TabClustNet
    from tests.model.conftest import make_tiny_net

    base = make_tiny_net(0)
    net = TabClustNet(dataclasses.replace(base.cfg, k_ranker=True, **calibration))
    torch.manual_seed(0)
    net.load_state_dict({**base.state_dict(), **{k: v for k, v in net.state_dict().items()
                                                   if k.startswith("k_ranker.")}})
    return save_checkpoint(path, net, {"steps": 0}), net, weights_sha256(base.state_dict())


def test_k_calibration_reports_both_distributions_per_set_and_refuses_another_networks_records(tmp_path):
    from benchmarks.k_calibration import SETS, main
    from model.k_features import FEATURES

    ckpt, net, sha = _calibrated_tiny_checkpoint(tmp_path / "calibrated.pt", k_ranker_temperature=2.0)
    rng = np.random.default_rng(0)
    records = tmp_path / "records"
    records.mkdir()
    c = net.cfg.k_max - 1
    for which in SETS:
        features = rng.normal(size=(6, c, len(FEATURES)))
        features[..., FEATURES.index("log_post")] = np.log(rng.dirichlet(np.ones(c), size=6))
        ari = rng.uniform(size=(6, c))
        ari[0, 5:] = np.nan  # a small table: fewer admissible K
        np.savez(records / f"{which}.npz", weights_sha256=sha, features=features,
                 ari=ari, k_true=rng.integers(2, 6, 6))
    out = tmp_path / "k-calibration"
    main(["--checkpoint", str(ckpt), "--records", str(records), "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(zip(df["set"], df["distribution"])) == [(s, d) for s in SETS for d in ("ranker", "cin")]
    assert df["top_right"].between(0, 1).all() and df["set_size"].between(1, c).all()
    assert "temperature 2.00" in (tmp_path / "k-calibration.md").read_text()
    np.savez(records / "dev.npz", weights_sha256="0" * 64, features=features, ari=ari, k_true=np.full(6, 3))
    with pytest.raises(SystemExit, match="another network"):
        main(["--checkpoint", str(ckpt), "--records", str(records), "--out", str(out)])


@needs_dev_suite
def test_k_calibration_reads_each_tables_temperature_and_leaves_the_slope_out_on_dev(tmp_path):
    """With a slope, each recorded table's temperature comes from its fraction of distinct values (the tables are
    found again by name), and the dev row the slope was fitted on is also given with each table left out."""
    from benchmarks.choose_checkpoint import tables
    from benchmarks.k_calibration import SETS, main
    from model.k_features import FEATURES

    ckpt, net, sha = _calibrated_tiny_checkpoint(tmp_path / "sloped.pt", k_ranker_temperature=2.0,
                                                 k_ranker_temperature_slope=3.0)
    rng = np.random.default_rng(1)
    records = tmp_path / "records"
    records.mkdir()
    c = net.cfg.k_max - 1
    for which in SETS:
        names = [name for name, _, _ in tables(which, 4)][:4]
        features = rng.normal(size=(4, c, len(FEATURES)))
        features[..., FEATURES.index("log_post")] = np.log(rng.dirichlet(np.ones(c), size=4))
        np.savez(records / f"{which}.npz", weights_sha256=sha, names=np.array(names),
                 features=features, ari=rng.uniform(size=(4, c)), k_true=rng.integers(2, 6, 4))
    out = tmp_path / "k-calibration"
    main(["--checkpoint", str(ckpt), "--records", str(records), "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df.loc[df["set"] == "dev", "distribution"]) == ["ranker", "cin", "ranker, slope left out"]
    assert "times exp(3.00 x (1 - the table's fraction of distinct values))" in (tmp_path / "k-calibration.md"
                                                                                  ).read_text()


def test_the_coarse_set_is_the_prior_sets_tables_read_coarsely():
    """Same validation seeds as ``prior``: the same rows, labels and untouched columns; only some continuous
    columns hold a few levels or counts, so the set isolates what coarse measurement costs."""
    from benchmarks.choose_checkpoint import tables

    for (name, frame, y), (_, plain, y0) in zip(tables("coarse", 3), tables("prior", 3)):
        assert name.startswith("coarse_") and frame.shape == plain.shape and np.array_equal(y, y0)
        changed = [c for c in frame.columns if not np.allclose(frame[c].to_numpy(float), plain[c].to_numpy(float))]
        assert changed and all(frame[c].nunique() < plain[c].nunique() for c in changed)


def test_choose_ensemble_fits_every_count_on_the_same_tables_and_applies_the_cost_rule(tmp_path):
    import math

    import torch

    from benchmarks.choose_ensemble import VARIANTS, main

    threads = torch.get_num_threads()
    out = tmp_path / "choice-ensemble"
    main(["--set", "low-d", "prior", "--tasks", "1", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 2 and list(df["set"]) == ["low-d", "prior"]
    bic = df["columns"] <= 4  # a low-d table: the BIC path, which runs no network (0 orderings); prior: 60 columns
    assert list(bic) == [True, False]
    for v in VARIANTS:
        # a table of D columns has D! orderings: a count past that uses all of them
        used = np.where(bic, 0, np.minimum(int(v), [math.factorial(d) for d in df["columns"]]))
        assert (df[f"{v}_members"] == used).all()
        assert df[v].between(-1, 1).all() and (df[f"{v}_s"] > 0).all()
    same = df["2_members"] == df["4_members"]  # no network: the same answer whatever the count
    assert same.any() and (df.loc[same, "2"] == df.loc[same, "4"]).all()
    assert (df.loc[same, "2_k"] == df.loc[same, "4_k"]).all()
    report = (tmp_path / "choice-ensemble.md").read_text()
    assert "| low-d | 1 | 1 |" in report and "| prior | 1 | 1 |" in report and "| 4 | " in report.split("Fit time")[1]
    assert "Chosen: " in report and "Command: `python benchmarks/choose_ensemble.py --set low-d" in report
    assert torch.get_num_threads() == threads  # run in-process, it timed on one thread and gave the others back


def test_choose_dequantize_keeps_the_answer_where_no_column_is_spread_and_refuses_a_fresh_dev(tmp_path):
    from benchmarks.choose_dequantize import main

    out = tmp_path / "choice-dequantize"
    main(["--set", "low-d", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 2 and set(df["set"]) == {"low-d"}
    kept = df["spread_columns"] == 0  # nothing to spread: keep's answer, not a second fit
    assert (df.loc[kept, "spread"] == df.loc[kept, "keep"]).all()
    report = (tmp_path / "choice-dequantize.md").read_text()
    assert "Command: `python benchmarks/choose_dequantize.py --set low-d" in report
    with pytest.raises(SystemExit):  # the dev suite has no fresh draw
        main(["--set", "dev", "--offset", "1000", "--out", str(out)])


def test_the_ratings_set_draws_integer_ratings_of_2_to_5_classes_on_a_1_5_or_1_7_scale():
    from benchmarks.choose_checkpoint import tables

    first = list(tables("ratings", 8))
    assert [name for name, _, _ in first] == [f"ratings_{i}" for i in range(8)]
    for _, frame, y in first:
        values = frame.to_numpy()
        assert 2 <= frame.shape[1] <= 4 and 300 <= len(frame) < 1000 and 2 <= len(np.unique(y)) <= 5
        assert frame.dtypes.map(pd.api.types.is_integer_dtype).all() and values.min() >= 1 and values.max() <= 7
        assert set(np.unique(y)) == set(range(len(np.unique(y))))
    assert {int(f.to_numpy().max()) for _, f, _ in first} <= {4, 5, 6, 7}
    again = list(tables("ratings", 2, offset=3))
    np.testing.assert_array_equal(again[0][1].to_numpy(), first[3][1].to_numpy())


def test_the_level_clusters_set_holds_integer_codes_of_the_clusters_beside_continuous_columns():
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_checkpoint import tables

    first = list(tables("level-clusters", 8))
    assert [name for name, _, _ in first] == [f"level-clusters_{i}" for i in range(8)]
    for _, frame, y in first:
        k = len(np.unique(y))
        assert 2 <= frame.shape[1] <= 4 and 300 <= len(frame) < 1000 and 2 <= k <= 5
        codes = [c for c in frame if c.startswith("code")]
        assert 1 <= len(codes) <= 2 and all(pd.api.types.is_integer_dtype(frame[c]) for c in codes)
        for c in codes:  # levels 1..K that follow the clusters (up to a shared level and some noise)
            assert set(frame[c]) <= set(range(1, k + 1)) and adjusted_rand_score(y, frame[c]) > 0.3
    again = list(tables("level-clusters", 2, offset=3))
    np.testing.assert_array_equal(again[0][1].to_numpy(), first[3][1].to_numpy())


def test_choose_low_dim_spread_fits_the_variants_only_on_the_bic_path(tmp_path):
    from benchmarks.choose_low_dim_spread import VARIANTS, main
    from model.estimator import TabClustPFN

    assert TabClustPFN._low_dim_spread is VARIANTS["levels"]  # neither ships: both lose on level-clusters
    assert VARIANTS["levels"] is None  # the baseline names its setting, not today's default
    out = tmp_path / "choice-low-dim-spread"
    main(["--set", "ratings", "prior", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 4 and list(df["set"]) == ["ratings", "ratings", "prior", "prior"]
    ratings, prior = df[df["set"] == "ratings"], df[df["set"] == "prior"]
    assert ratings["bic_path"].all() and ratings["few_levels"].all()
    assert not prior["bic_path"].any()  # wide prior tables: the network's path, every variant the baseline's answer
    for v in VARIANTS:
        assert (prior[v] == prior["levels"]).all() and (prior[f"{v}_k"] == prior["levels_k"]).all()
    report = (tmp_path / "choice-low-dim-spread.md").read_text()
    assert "| ratings | 2 | spread-unmerged |" in report and "Chosen: " in report
    assert "Command: `python benchmarks/choose_low_dim_spread.py --set ratings prior" in report


def test_choose_k_decision_takes_the_bayes_choice_only_where_the_ranker_chose(tmp_path, monkeypatch):
    import model.estimator as estimator_module
    from benchmarks.choose_k_decision import estimator_for, main
    from model.estimator import TabClustPFN

    out = tmp_path / "choice-k-decision"
    main(["--set", "prior", "--tasks", "3", "--workers", "1", "--variants", "expected_ari", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 3 and (df["top_rule"] == "ranker").all()
    assert "top_k" in df and "expected_ari_k" in df and "smallest-0.5_k" not in df  # only those asked for
    report = (tmp_path / "choice-k-decision.md").read_text()
    assert "| prior | 3 | expected_ari |" in report and "Chosen: " in report
    assert "Command: `python benchmarks/choose_k_decision.py --set prior" in report

    rng = np.random.default_rng(3)  # 6 columns: the ranker's path, not the BIC one
    X = np.vstack([rng.normal(m, 1.0, size=(60, 6)) for m in (0.0, 1.5, 3.0)])
    top, plain = estimator_for("top", None).fit(X), TabClustPFN(random_state=0).fit(X)
    assert top.k_selection_ == "ranker" and top.n_clusters_ == plain.n_clusters_
    assert np.array_equal(top.labels_, plain.labels_)  # the baseline is the estimator's default
    p = np.array(list(top.k_probabilities_.values()))
    assert top.k_chosen_ == int(np.argmax(p)) + 2  # its K: the most probable one

    seen = []  # the Bayes variant's K is the argmax of the expected ARI under the ranker's probabilities
    real = estimator_module.expected_ari
    monkeypatch.setattr(estimator_module, "expected_ari", lambda labels, q: seen.append((q, real(labels, q)))
                        or seen[-1][1])
    bayes = estimator_for("expected_ari", None).fit(X)
    assert len(seen) == 1 and bayes.k_selection_ == "ranker"
    q, scores = seen[0]
    assert np.allclose(q, p[: len(q)]) and bayes.k_chosen_ == int(np.argmax(scores)) + 2
    TabClustPFN(random_state=0).fit(X)
    assert len(seen) == 1  # the default never asks for it
    for share in (0.5, 0.8):  # parsimony: the smallest K at least `share` times as probable as the top one
        fewest = estimator_for(f"smallest-{share}", None).fit(X)
        assert fewest.k_chosen_ == int(np.flatnonzero(p >= share * p.max())[0]) + 2 <= top.k_chosen_
    flat = np.array([0.3, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.2, 0.4])  # a spread over K = 2 and K = 10
    monkeypatch.setattr(estimator_module, "k_probabilities", lambda scores, temperature: flat[: len(scores)])
    assert estimator_for("smallest-0.5", None).fit(X).k_chosen_ == 2  # 0.3 >= 0.5 * 0.4
    assert estimator_for("smallest-0.8", None).fit(X).k_chosen_ == 10  # 0.3 < 0.8 * 0.4: the top K
    with pytest.raises(ValueError, match="unknown variant"):
        estimator_for("median", None)


def test_choose_power_fits_each_table_with_and_without_the_transform(tmp_path):
    from benchmarks.choose_power import estimator_for, main
    from benchmarks.choose_checkpoint import tables
    from model.estimator import TabClustPFN

    out = tmp_path / "choice-power"
    main(["--set", "skewed", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["skewed", "skewed"] and (df["keep_transformed"] == 0).all()
    assert (df["yeo-johnson_transformed"] > 0).all()
    assert (df["yeo-johnson-all_transformed"] >= df["yeo-johnson_transformed"]).all()  # the gate only removes
    report = (tmp_path / "choice-power.md").read_text()
    assert "| skewed | 2 | yeo-johnson |" in report and "| skewed | 2 | yeo-johnson-all |" in report
    assert "Chosen: " in report
    assert "Command: `python benchmarks/choose_power.py --set skewed" in report

    name, frame, y = next(tables("skewed", 1))  # each variant is the estimator with that setting
    for variant, setting in (("keep", False), ("yeo-johnson", True)):
        est = estimator_for(variant, None).fit(frame)
        ref = TabClustPFN(random_state=0, power_transform=setting).fit(frame)
        assert np.array_equal(est.labels_, ref.labels_) and est.power_transform is setting
        assert df.loc[df.table == name, f"{variant}_k"].item() == ref.n_clusters_
    every = estimator_for("yeo-johnson-all", None).fit(frame)
    assert every.power_transform and set(every.preprocessor_.power_transformed_) == {
        c.name for c in every.preprocessor_.columns_ if not c.categorical and c.power is not None}
    assert len(every.preprocessor_.power_transformed_) > len(est.preprocessor_.power_transformed_)
    main(["--variants", "yeo-johnson", "--set", "skewed", "--tasks", "1", "--workers", "1", "--out", str(out)])
    some = pd.read_csv(f"{out}.csv")  # only the variants asked for, beside the baseline
    assert "yeo-johnson" in some and "keep" in some and "yeo-johnson-all" not in some
    with pytest.raises(ValueError, match="unknown variant"):
        estimator_for("box-cox", None)


def test_the_cat_noise_set_is_the_prior_sets_tables_with_categorical_noise_beside_them():
    """Same validation seeds as ``prior``: the same rows, labels and columns, and 1-3 categorical columns appended,
    the same in every run."""
    from benchmarks.choose_checkpoint import tables

    for (name, frame, y), (_, plain, y0) in zip(tables("cat-noise", 3), tables("prior", 3)):
        assert name.startswith("cat-noise_") and np.array_equal(y, y0)
        pd.testing.assert_frame_equal(frame[plain.columns], plain)
        extra = [c for c in frame.columns if c not in plain.columns]
        assert 1 <= len(extra) <= 3 and all(isinstance(frame[c].dtype, pd.CategoricalDtype) for c in extra)
    again = [frame for _, frame, _ in tables("cat-noise", 3)]
    assert all(a.equals(b) for a, b in zip(again, [frame for _, frame, _ in tables("cat-noise", 3)]))


def test_the_flag_noise_set_is_the_prior_sets_tables_with_random_numeric_flags_beside_them():
    """Same validation seeds as ``prior``: the same rows, labels and columns, and 1-3 numeric columns of 0s and 1s
    appended, the same in every run."""
    from benchmarks.choose_checkpoint import tables

    for (name, frame, y), (_, plain, y0) in zip(tables("flag-noise", 3), tables("prior", 3)):
        assert name.startswith("flag-noise_") and np.array_equal(y, y0)
        pd.testing.assert_frame_equal(frame[plain.columns], plain)
        extra = [c for c in frame.columns if c not in plain.columns]
        assert 1 <= len(extra) <= 3 and all(set(np.unique(frame[c])) == {0, 1} for c in extra)
        assert all(pd.api.types.is_integer_dtype(frame[c]) for c in extra)
    again = [frame for _, frame, _ in tables("flag-noise", 3)]
    assert all(a.equals(b) for a, b in zip(again, [frame for _, frame, _ in tables("flag-noise", 3)]))


@pytest.mark.parametrize("which, like, most", [("level-noise", "prior", 3), ("level-noise-low-d", "low-d", 2)])
def test_the_level_noise_sets_are_their_priors_tables_with_integer_columns_of_few_levels_beside_them(which, like,
                                                                                                      most):
    """Same validation seeds as ``prior`` / ``low-d``: the same rows, labels and columns, and 1 to 3 (low-d: 2)
    integer columns of 3-10 levels appended, the same in every run."""
    from benchmarks.choose_checkpoint import tables

    for (name, frame, y), (_, plain, y0) in zip(tables(which, 4), tables(like, 4)):
        assert name.startswith(f"{which}_") and np.array_equal(y, y0)
        pd.testing.assert_frame_equal(frame[plain.columns], plain)
        extra = [c for c in frame.columns if c not in plain.columns]
        assert 1 <= len(extra) <= most and all(pd.api.types.is_integer_dtype(frame[c]) for c in extra)
        assert all(3 <= frame[c].nunique() <= 10 and frame[c].min() in (0, 1) for c in extra)
    again = [frame for _, frame, _ in tables(which, 4)]
    assert all(a.equals(b) for a, b in zip(again, [frame for _, frame, _ in tables(which, 4)]))


def test_the_cat_cross_set_is_the_prior_sets_tables_with_factors_that_cross_the_clusters():
    """Same validation seeds as ``prior``: the same rows and labels, 1-2 factors appended (a category of 2-3 levels
    or a 0/1 flag), each shifting some of the continuous columns by its level, the same in every run."""
    from benchmarks.choose_checkpoint import tables

    shifted = 0
    for (name, frame, y), (_, plain, y0) in zip(tables("cat-cross", 6), tables("prior", 6)):
        assert name.startswith("cat-cross_") and np.array_equal(y, y0)
        extra = [c for c in frame.columns if c not in plain.columns]
        assert 1 <= len(extra) <= 2 and all(c.startswith("cross_") for c in extra)
        for c in extra:
            values = frame[c].astype(str) if isinstance(frame[c].dtype, pd.CategoricalDtype) else frame[c]
            assert 2 <= values.nunique() <= 3 and (isinstance(frame[c].dtype, pd.CategoricalDtype)
                                                   or set(np.unique(values)) == {0, 1})
        numeric = [c for c in plain.columns if pd.api.types.is_float_dtype(plain[c])]
        moved = [c for c in numeric if not np.allclose(frame[c], plain[c])]
        assert moved  # some columns shift, by the factors only:
        for c in moved:  # within a factor's level the shift is one constant
            code = frame[extra].astype(str).agg("|".join, axis=1)
            diff = (frame[c] - plain[c]).groupby(code).std().fillna(0.0)
            assert (diff < 1e-9).all()
        shifted += len(moved)
        assert [c for c in plain.columns if c not in numeric] == [c for c in frame.columns
                                                                  if c in plain.columns and c not in numeric]
    assert shifted > 0
    again = [frame for _, frame, _ in tables("cat-cross", 6)]
    assert all(a.equals(b) for a, b in zip(again, [frame for _, frame, _ in tables("cat-cross", 6)]))


def test_choose_categorical_screening_fits_each_variant_with_its_setting(tmp_path):
    from benchmarks.choose_categorical_screening import estimator_for, main
    from model.estimator import TabClustPFN

    out = tmp_path / "choice-cat"
    main(["--set", "cat-noise", "--tasks", "2", "--workers", "1", "--out", str(out)])  # against continuous
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["cat-noise", "cat-noise"] and (df["continuous_dropped_categorical"] == 0).all()
    assert (df["categorical-always_dropped_categorical"] >= df["categorical_dropped_categorical"]).all()
    assert (df["categorical-always_dropped_categorical"] > 0).all()  # the noise columns of both tables
    report = (tmp_path / "choice-cat.md").read_text()
    assert "| cat-noise | 2 | categorical-always |" in report and "Chosen: " in report
    assert "Command: `python benchmarks/choose_categorical_screening.py --set cat-noise" in report
    assert [estimator_for(v, None)._screen_categorical for v in ("continuous", "categorical", "categorical-always")
            ] == [False, True, "always"]
    lenient = estimator_for("categorical-always-0.2", None)
    assert (lenient._screen_categorical, lenient._screen_categorical_alpha) == ("always", 0.2)
    main(["--set", "cat-noise", "--tasks", "1", "--workers", "1", "--variants", "categorical-always-0.05",
          "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")  # only the variants asked for, beside the baseline
    assert "categorical-always-0.05_k" in df and "continuous_k" in df and "categorical_k" not in df
    main(["--set", "cat-noise", "--tasks", "1", "--workers", "1", "--baseline", "categorical-always-split-binary",
          "--variants", "categorical-always-split", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")  # judged against today's default
    assert "categorical-always-split-binary_k" in df and "categorical-always-split_k" in df and "continuous_k" not in df
    assert "against categorical-always-split-binary" in (tmp_path / "choice-cat.md").read_text()
    binary = estimator_for("categorical-always-split-binary", None)
    assert (binary._screen_categorical, binary._split_check, binary._screen_binary) == ("always", True, True)
    default = estimator_for("categorical-always-split-binary-crossing-levels-wide", None)
    assert all(getattr(default, a) == getattr(TabClustPFN, a)
               for a in ("_screen_categorical", "_screen_categorical_alpha", "_split_check", "_screen_binary",
                         "_split_check_kept", "_screen_levels", "_screen_levels_min_width"))
    kept = estimator_for("categorical-always-split-binary-kept", None)
    assert (kept._split_check, kept._screen_binary, kept._split_check_kept) == (True, True, "together")
    assert estimator_for("categorical-always-split-binary-crossing", None)._split_check_kept == "crossing"
    levels = [estimator_for(f"categorical-always-split-binary-crossing-levels{m}", None) for m in ("", "19")]
    assert [(e._split_check_kept, e._screen_levels) for e in levels] == [("crossing", 10), ("crossing", 19)]
    assert [e._screen_levels_min_width for e in levels] == [0, 0]  # every table
    assert (default._split_check_kept, default._screen_levels, default._screen_levels_min_width) == ("crossing", 10, 4)
    assert estimator_for("categorical-always-split-binary-crossing", None)._screen_levels == 0
    with pytest.raises(ValueError, match="unknown variant"):
        estimator_for("everything", None)


def test_the_all_cat_set_draws_latent_class_tables_of_text_categories_the_same_in_every_run():
    from benchmarks.choose_checkpoint import latent_class_table, tables

    drawn = list(tables("all-cat", 6))
    assert [name for name, _, _ in drawn] == [f"all-cat_{i}" for i in range(6)]
    for _, frame, y in drawn:
        assert 100 <= len(frame) <= 1000 and 4 <= frame.shape[1] <= 16 and len(y) == len(frame)
        assert all(isinstance(frame[c].dtype, pd.CategoricalDtype) for c in frame)
        assert all(2 <= frame[c].nunique() <= 5 for c in frame)
        k = len(np.unique(y))
        assert 2 <= k <= 10 and np.bincount(y).min() >= 5
    fresh = next(iter(tables("all-cat", 1, offset=20000)))
    assert fresh[0] == "all-cat_20000" and fresh[1].equals(latent_class_table(20000)[0])
    assert all(a.equals(b) for (_, a, _), (_, b, _) in zip(drawn, tables("all-cat", 6)))
    # the columns carry the classes: within a class a column's levels differ from the table's as a whole
    frame, y = latent_class_table(0)
    from scipy.stats import chi2_contingency

    assert min(chi2_contingency(pd.crosstab(frame[c], y)).pvalue for c in frame) < 1e-6


def test_the_all_cat_flags_set_is_the_all_cat_tables_with_their_two_level_columns_as_numbers():
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_checkpoint import tables

    for (name, frame, y), (_, text, y0) in zip(tables("all-cat-flags", 6), tables("all-cat", 6)):
        assert name.startswith("all-cat-flags_") and np.array_equal(y, y0) and list(frame) == list(text)
        for c in frame:
            if text[c].nunique() == 2:
                assert pd.api.types.is_integer_dtype(frame[c]) and set(frame[c]) == {0, 1}
                assert adjusted_rand_score(frame[c], text[c].cat.codes) == 1.0  # the same levels
            else:
                pd.testing.assert_series_equal(frame[c], text[c])
    assert any(pd.api.types.is_integer_dtype(frame[c]) for _, frame, _ in tables("all-cat-flags", 6) for c in frame)


def test_choose_categorical_path_fits_each_variant_with_its_setting_and_counts_the_tables_that_took_it(tmp_path):
    from benchmarks.choose_categorical_path import estimator_for, main
    from model.estimator import TabClustPFN

    out = tmp_path / "choice-categorical"
    main(["--set", "all-cat", "dev", "--tasks", "2", "--workers", "1", "--variants", "latent-network",
          "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["all-cat", "all-cat", "dev", "dev"]
    assert list(df["latent-network_latent"]) == [1, 1, 0, 0] and (df["network_latent"] == 0).all()
    dev = df[df["set"] == "dev"]  # no dev table is all categorical: the same answer
    assert (dev["network"] == dev["latent-network"]).all() and (dev["network_k"] == dev["latent-network_k"]).all()
    report = (tmp_path / "choice-categorical.md").read_text()
    assert "| all-cat | 2 | latent-network |" in report and "all-cat 2 of 2, dev 0 of 2" in report
    assert "Command: `python benchmarks/choose_categorical_path.py --set all-cat dev" in report
    assert [estimator_for(v, None)._categorical_path
            for v in ("network", "latent-kmeans", "latent-network", "latent-both")] == [None, "kmeans", "network",
                                                                                       "both"]
    assert estimator_for("latent-network", None)._categorical_path == TabClustPFN._categorical_path  # the default
    flags = estimator_for("latent-network-flags", None)
    assert (flags._categorical_path, flags._categorical_flags) == ("network", True)
    assert not estimator_for("latent-network", None)._categorical_flags
    aic3 = estimator_for("latent-network-flags-aic3", None)
    assert (aic3._categorical_flags, aic3._latent_criterion) == (True, "aic3") and flags._latent_criterion == "bic"
    assert all(getattr(aic3, a) == getattr(TabClustPFN, a)  # today's default
               for a in ("_categorical_path", "_categorical_flags", "_latent_criterion"))
    main(["--set", "all-cat-flags", "--tasks", "2", "--workers", "1", "--baseline", "latent-network",
          "--variants", "latent-network-flags", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")  # judged against the path without flags, which tables with a 0/1 column miss
    assert "latent-network_k" in df and "latent-network-flags_k" in df and "network_k" not in df
    assert (df["latent-network-flags_latent"] == 1).all()
    assert "against latent-network" in (tmp_path / "choice-categorical.md").read_text()
    with pytest.raises(ValueError, match="unknown variant"):
        estimator_for("everything", None)


def test_the_diagonal_floor_variants_floor_each_column_by_its_resolution_beyond_four_columns():
    from benchmarks.choose_mixture_refinement import column_floors, variant_labels
    from model.refinement import diagonal_em, full_em

    rng = np.random.default_rng(4)
    start = rng.integers(0, 3, 300)
    X = np.column_stack([rng.normal(size=(300, 5)) + start[:, None], rng.integers(0, 2, 300)])  # 5 + a one-hot code
    np.testing.assert_array_equal(column_floors(X), [0.01] * 5 + [0.1])
    np.testing.assert_array_equal(variant_labels("own-full-p4-floor-fine", X, start, 3),
                                  diagonal_em(X, start, 3, steps=3, floor=column_floors(X))[0])
    for floor in (0.01, 0.2, 0.3):
        np.testing.assert_array_equal(variant_labels(f"own-full-p4-floor-{floor}", X, start, 3),
                                      diagonal_em(X, start, 3, steps=3, floor=floor)[0])
    assert not np.array_equal(diagonal_em(X, start, 3, steps=3, floor=0.3)[1].variances,
                              diagonal_em(X, start, 3, steps=3, floor=0.1)[1].variances)  # the floor binds here
    narrow = X[:, :3]  # today's full covariances up to 4 columns, whatever the variant
    for name in ("own-full-p4-floor-fine", "own-full-p4-floor-0.01", "own-full-p4-floor-0.3"):
        np.testing.assert_array_equal(variant_labels(name, narrow, start, 3), full_em(narrow, start, 3)[0])


def test_the_step_variants_run_that_many_em_steps_of_the_diagonal_mixture_beyond_four_columns():
    from benchmarks.choose_mixture_refinement import DIAGONAL_STEPS, variant_labels
    from model.refinement import diagonal_em, full_em

    rng = np.random.default_rng(5)
    truth = rng.integers(0, 3, 300)
    X = rng.normal(size=(300, 6)) + 1.2 * truth[:, None]
    start = np.where(rng.random(300) < 0.3, rng.integers(0, 3, 300), truth)  # a partition EM still moves
    answers = {}
    for name, steps in DIAGONAL_STEPS.items():
        answers[name] = variant_labels(name, X, start, 3)
        np.testing.assert_array_equal(answers[name], diagonal_em(X, start, 3, steps=steps)[0])
        np.testing.assert_array_equal(variant_labels(name, X[:, :4], start, 3), full_em(X[:, :4], start, 3)[0])
    assert not np.array_equal(answers["own-full-p4-1-step"], answers["own-full-p4-30-steps"])


def test_the_trust_variants_stop_em_at_the_last_step_near_the_start():
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_mixture_refinement import TRUST_MAX_STEPS, variant_labels
    from model.refinement import diagonal_em

    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, 300)
    for sep, stop in ((0.9, 1), (6.0, TRUST_MAX_STEPS)):  # the partition leaves the start at once / never
        X = rng.normal(size=(300, 6)) + sep * truth[:, None]
        near = [adjusted_rand_score(truth, diagonal_em(X, truth, 3, steps=s)[0]) for s in (1, 2, TRUST_MAX_STEPS)]
        assert (near[1] < 0.8) if stop == 1 else (min(near) > 0.95)
        if stop == 1:  # where it stops, the answer differs from running every step
            first, every = (diagonal_em(X, truth, 3, steps=s)[0] for s in (1, TRUST_MAX_STEPS))
            assert not np.array_equal(first, every)
        for name in ("own-full-p4-trust-0.8", "own-full-p4-trust-0.95"):  # at least one step is always taken
            np.testing.assert_array_equal(variant_labels(name, X, truth, 3), diagonal_em(X, truth, 3, steps=stop)[0])


def test_the_bic_variant_shares_the_variances_where_the_clusters_differ_only_in_their_means():
    from benchmarks.choose_mixture_refinement import MIXTURES, diagonal_bic, variant_labels
    from model.refinement import diagonal_em, full_em

    rng = np.random.default_rng(7)
    truth = rng.integers(0, 3, 600)
    start = np.where(rng.random(600) < 0.2, rng.integers(0, 3, 600), truth)
    means = 1.5 * truth[:, None] * (np.arange(8) < 2)  # two informative columns, six of noise
    scales = {"same": np.ones((600, 8)), "own": np.where(truth[:, None] == 0, 0.3, 2.0) * np.ones((1, 8))}
    for kind, scale in scales.items():
        X = rng.normal(size=(600, 8)) * scale + means
        own, shared = (diagonal_em(X, start, 3, **MIXTURES[m]) for m in ("own-diagonal", "shared-3-steps"))
        bic_own, bic_shared = diagonal_bic(X, own[1], False), diagonal_bic(X, shared[1], True)
        assert (bic_shared < bic_own) == (kind == "same"), (kind, bic_own, bic_shared)
        assert not np.array_equal(own[0], shared[0])  # the choice changes the answer
        np.testing.assert_array_equal(variant_labels("own-full-p4-bic-shared", X, start, 3),
                                      (shared if kind == "same" else own)[0])
    narrow = X[:, :4]  # today's full covariances up to 4 columns
    np.testing.assert_array_equal(variant_labels("own-full-p4-bic-shared", narrow, start, 3),
                                  full_em(narrow, start, 3)[0])


def test_the_noise_step_variants_take_fewer_em_steps_only_where_most_columns_do_not_separate_the_clusters():
    from benchmarks.choose_mixture_refinement import NOISE_STEPS, between_share, variant_labels
    from model.refinement import diagonal_em

    rng = np.random.default_rng(8)
    truth = rng.integers(0, 3, 400)
    start = np.where(rng.random(400) < 0.25, rng.integers(0, 3, 400), truth)
    informative = {"most": 5, "few": 1}  # of 6 columns, those whose means differ between the clusters
    for kind, n_inf in informative.items():
        X = rng.normal(size=(400, 6)) + 2.0 * truth[:, None] * (np.arange(6) < n_inf)
        share = between_share(X, truth)
        assert (share[:n_inf] > 0.5).all() and (share[n_inf:] < 0.05).all()
        for name, (steps, _) in NOISE_STEPS.items():  # 5 of 6 columns noise: beyond 1/2 and 2/3
            want = diagonal_em(X, start, 3, steps=steps if kind == "few" else 3)[0]
            np.testing.assert_array_equal(variant_labels(name, X, start, 3), want)
    np.testing.assert_allclose(between_share(np.column_stack([truth, np.ones(400)]), truth), [1.0, 0.0])


def test_the_two_starts_variant_keeps_the_likelier_diagonal_mixture_beyond_four_columns():
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_mixture_refinement import variant_labels
    from model.low_dim import kmeans_start
    from model.refinement import diagonal_em, full_em

    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, 300)
    X = rng.normal(size=(300, 6)) + 3.0 * y[:, None]
    poor = rng.integers(0, 3, 300)  # a start that knows nothing of the groups
    fits = [diagonal_em(X, s, 3, steps=3, floor=0.1, shared=False) for s in (poor, kmeans_start(X, 3))]
    ll = [float(f[1].posterior(X)[1].sum()) for f in fits]
    assert ll[1] > ll[0]  # k-means++ finds the groups: the likelier fit, and the variant's answer
    np.testing.assert_array_equal(variant_labels("own-full-p4-kmeans-start", X, poor, 3), fits[1][0])
    assert adjusted_rand_score(y, variant_labels("own-full-p4-kmeans-start", X, y, 3)) > 0.99
    narrow = X[:, :3]  # today's full covariances up to 4 columns
    np.testing.assert_array_equal(variant_labels("own-full-p4-kmeans-start", narrow, poor, 3),
                                  full_em(narrow, poor, 3)[0])


def test_choose_context_fits_every_context_size_on_the_same_tables_and_applies_the_cost_rule(tmp_path):
    from benchmarks.choose_context import VARIANTS, main

    out = tmp_path / "choice-context"
    main(["--set", "prior", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 2 and set(df["set"]) == {"prior"} and (df["rows"] > 500).all()
    for v in VARIANTS:  # a table of more rows than the context clusters that many and assigns the rest
        assert (df[f"{v}_context"] == np.minimum(int(v), df["rows"])).all()
        assert df[v].between(-1, 1).all() and (df[f"{v}_s"] > 0).all()
    report = (tmp_path / "choice-context.md").read_text()
    assert "| prior | 2 | 1000 |" in report and "| 500 | " in report.split("Fit time")[1]
    assert "Chosen: " in report and "Command: `python benchmarks/choose_context.py --set prior" in report


def test_adaptive_orderings_answer_as_two_where_they_agree_and_as_four_elsewhere(tmp_path):
    from benchmarks.choose_adaptive_ensemble import THRESHOLDS, agreement, main

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(10), size=(2, 9, 50))
    probs[1] = probs[0][..., [1, 0, *range(2, 10)]]  # member 1: member 0 with clusters 0 and 1 swapped
    assert agreement(probs, 3) == 1.0  # the same partition under other cluster names
    other = probs.copy()
    other[1, 1] = 0.0
    other[1, 1, :, :3] = np.eye(3)[rng.integers(0, 3, 50)]  # member 1 at K = 3: clusters unrelated to member 0's
    assert agreement(other, 3) < 0.7 and agreement(other, 2) == 1.0
    with pytest.raises(ValueError, match="2 members"):
        agreement(probs[:1], 3)

    out = tmp_path / "choice-adaptive-ensemble"
    main(["--set", "low-d", "prior", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 4 and df["agreement"].between(0, 1).all()
    for t in THRESHOLDS:  # each table answered by exactly one of the two fits, as the agreement says
        two = df["agreement"] >= t
        for field in ("", "_k", "_s"):
            expected = np.where(two, df[f"2{field}"], df[f"4{field}"])
            np.testing.assert_array_equal(df[f"agree-{t}{field}"], expected)
        # upper bound: the 2-ordering fit, then on disagreement the 4-ordering fit from scratch
        np.testing.assert_allclose(df[f"agree-{t}_s_upper"], df["2_s"] + np.where(two, 0.0, df["4_s"]))
    bic = df["4_members"] == 0  # no network: nothing to disagree on
    assert (df.loc[bic, "agreement"] == 1.0).all() and (df.loc[~bic, "2_members"] == 2).all()
    report = out.with_suffix(".md").read_text()
    assert "Share of tables answered by 2 orderings" in report and "from the lower to the upper bound" in report
    assert "Chosen: " in report
    assert "Command: `python benchmarks/choose_adaptive_ensemble.py --set low-d" in report


def test_choose_quantized_runs_the_int8_copy_of_the_network_and_leaves_the_float_one_as_it_was(tmp_path):
    import torch

    from benchmarks.choose_quantized import VARIANTS, estimator_for, main

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 150)
    X = rng.normal(size=(150, 8)) + 5.0 * y[:, None]
    fits = {}
    for v in VARIANTS:
        est = estimator_for(v, None)
        est.fit(X)
        net, _ = est._network(est._checkpoint_path(), torch.device("cpu"))
        fits[v] = (est, net)
    float_net, int8_net = fits["float32"][1], fits["int8"][1]
    kinds = lambda net: {type(m).__module__ for m in net.modules() if "Linear" in type(m).__name__}  # noqa: E731
    assert kinds(float_net) == {"torch.nn.modules.linear"}
    assert kinds(int8_net) and all("quantized" in k for k in kinds(int8_net))  # every linear layer is int8
    assert fits["int8"][0]._network(fits["int8"][0]._checkpoint_path(), torch.device("cpu"))[0] is int8_net  # once
    assert fits["int8"][0].labels_.shape == (150,)
    with pytest.raises(ValueError, match="unknown variant"):
        estimator_for("int4", None)

    out = tmp_path / "choice-quantized"
    main(["--set", "prior", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 2 and all(df[v].between(-1, 1).all() and (df[f"{v}_s"] > 0).all() for v in VARIANTS)
    report = (tmp_path / "choice-quantized.md").read_text()
    assert "| prior | 2 | float32 |" in report and "| int8 | " in report.split("Fit time")[1]
    assert "Chosen: " in report and "Command: `python benchmarks/choose_quantized.py --set prior" in report


def test_peers_dev_compares_the_defaults_with_each_peer_table_by_table_and_names_where_a_peer_wins(tmp_path):
    from benchmarks.peers_dev import PEERS, REFERENCE, behind, main, report_lines

    out = tmp_path / "peers-dev"
    main(["--set", "low-d", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert len(df) == 2 and list(df.set) == ["low-d", "low-d"]
    for method in (REFERENCE, *PEERS):
        assert df[method].between(-1, 1).all() and (df[f"{method}_k"] >= 2).all() and (df[f"{method}_s"] > 0).all()
    report = (tmp_path / "peers-dev.md").read_text()
    assert all(f"| low-d | 2 | {peer} |" in report for peer in PEERS)
    assert "Command: `python benchmarks/peers_dev.py --set low-d" in report

    # a set where the peer wins every table by 0.2 is named; one where the reference wins is not
    rng = np.random.default_rng(0)
    base = rng.uniform(0.3, 0.6, 12)
    frame = pd.DataFrame({"set": ["a"] * 6 + ["b"] * 6, "K": 3, REFERENCE: base, "KMeans+": base,
                          f"{REFERENCE}_k": 3, "KMeans+_k": 4})
    frame.loc[frame.set == "a", "KMeans+"] += 0.2 + rng.uniform(0, 0.01, 6)
    frame.loc[frame.set == "b", "KMeans+"] -= 0.2
    assert behind(frame, ["KMeans+"]) == [f"a (KMeans+, {-(frame.loc[:5, 'KMeans+'] - base[:6]).mean():+.3f})"]
    lines = report_lines(frame, ["KMeans+"])
    assert "| a | 6 | KMeans+ |" in lines[2] and "| 0.00 | 0.00 / 1.00 |" in lines[2]
    assert "| b | 6 | KMeans+ |" in lines[3] and "| 1.00 |" in lines[3]


def test_choose_imputation_removes_the_same_cells_for_both_variants_and_fits_each_with_its_setting(tmp_path):
    from benchmarks.choose_checkpoint import tables
    from benchmarks.choose_imputation import MAX_COLUMN_RATE, main, missing_cells
    from sklearn.metrics import adjusted_rand_score
    from model.estimator import TabClustPFN

    name, frame, y = next(tables("prior", 1))
    gappy = missing_cells(frame, 0)
    pd.testing.assert_frame_equal(gappy, missing_cells(frame, 0))  # the seed fixes the cells
    assert not missing_cells(frame, 1).isna().equals(gappy.isna())
    share = gappy.isna().mean()
    assert 0 < share.mean() and (share <= MAX_COLUMN_RATE + 0.1).all()
    assert (gappy.notna().to_numpy() <= frame.notna().to_numpy()).all()  # cells are only removed
    held = gappy.notna()
    pd.testing.assert_frame_equal(gappy[held], frame[held])

    out = tmp_path / "choice-imputation"
    main(["--set", "prior", "--tasks", "2", "--workers", "1", "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["prior", "prior"] and (df["missing_share"] > 0).all()
    for variant in ("median", "neighbors"):  # each variant is the estimator with that setting on those cells
        ref = TabClustPFN(random_state=0, impute=variant).fit(gappy)
        row = df.loc[df.table == name]
        assert row[f"{variant}_k"].item() == ref.n_clusters_
        assert np.isclose(row[variant].item(), adjusted_rand_score(y, ref.labels_))
    report = (tmp_path / "choice-imputation.md").read_text()
    assert "| prior | 2 | neighbors |" in report and "Chosen: " in report
    assert "Command: `python benchmarks/choose_imputation.py --set prior" in report

    from benchmarks.choose_imputation import estimator_for

    mixed = estimator_for("neighbors-mixed", None)
    assert mixed.impute == "neighbors" and mixed._impute_categorical
    assert not estimator_for("neighbors", None)._impute_categorical
    mixed.fit(gappy)
    assert mixed.preprocessor_.impute_categorical
    with pytest.raises(ValueError, match="unknown variant"):
        estimator_for("mean", None)
    main(["--baseline", "neighbors", "--variants", "neighbors-mixed", "--set", "prior", "--tasks", "1", "--workers",
          "1", "--out", str(out)])
    some = pd.read_csv(f"{out}.csv")  # only the variants asked for, against the baseline named
    assert "neighbors-mixed" in some and "neighbors" in some and "median" not in some
    assert "against neighbors" in (tmp_path / "choice-imputation.md").read_text()


def test_missing_by_value_removes_one_side_of_each_column_and_categories_at_their_own_rates(tmp_path):
    from benchmarks.choose_imputation import missing_by_value, missing_cells

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{j}": rng.normal(size=3000) for j in range(12)})
    frame["c"] = pd.Categorical(rng.choice(["p", "q", "r", "s"], 3000))
    gappy = missing_by_value(frame, 4)
    pd.testing.assert_frame_equal(gappy, missing_by_value(frame, 4))  # the seed fixes the cells
    held = gappy.notna()
    pd.testing.assert_frame_equal(gappy[held], frame[held])  # cells are only removed
    # the mean rate matches completely-at-random removal's scale; the removed values sit to one side
    assert 0.02 < gappy.isna().to_numpy().mean() < 0.5
    sided = 0
    for j in range(12):
        gone = gappy[f"x{j}"].isna()
        if gone.sum() >= 30:
            shift = frame.loc[gone, f"x{j}"].mean() - frame.loc[~gone, f"x{j}"].mean()
            sided += abs(shift) > 0.5  # a uniform draw would give |shift| ~ 0.05 at these sizes
            assert abs(shift) > 0.3
    assert sided >= 3
    rates = gappy["c"].isna().groupby(frame["c"], observed=True).mean()
    assert rates.max() > 3 * rates.min() and rates.max() - rates.min() > 0.1  # categories at their own rates
    side = missing_cells(frame, 4)
    assert abs(frame["x0"][side["x0"].isna()].mean()) < 0.3  # at random: no side

    from benchmarks.choose_imputation import main

    out = tmp_path / "by-value"
    main(["--mechanism", "values", "--set", "prior", "--tasks", "1", "--workers", "1", "--out", str(out)])
    report = out.with_suffix(".md").read_text()
    assert "with cells removed by their values" in report and "--mechanism values" in report


@needs_dev_suite
def test_the_dev_gaps_set_is_the_dev_tables_with_gaps_of_their_own_as_read():
    from benchmarks.choose_checkpoint import tables
    from pipeline.evaluation.suites import benchmarks_dir

    gapped = sorted(p.stem for p in (benchmarks_dir() / "dev").glob("*.parquet")
                    if pd.read_parquet(p).drop(columns=["target"]).isna().to_numpy().any())
    read = list(tables("dev-gaps", 100))
    assert [name for name, _, _ in read] == gapped and gapped
    for name, frame, y in read:  # no imputation, no z-scores: the gaps and the units are the file's
        raw = pd.read_parquet(benchmarks_dir() / "dev" / f"{name}.parquet")
        assert frame.isna().to_numpy().any() and "target" not in frame and len(frame) == len(y) <= 1000
        if len(raw) <= 1000:
            pd.testing.assert_frame_equal(frame, raw.drop(columns=["target"]).reset_index(drop=True))
    with pytest.raises(ValueError, match="no fresh draw"):
        next(tables("dev-gaps", 6, offset=1000))


def test_gross_values_alter_a_few_numeric_cells_far_beyond_their_column_and_nothing_else():
    from benchmarks.choose_fences import MAGNITUDE, ROW_SHARE, gross_values

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=2000), "y": rng.exponential(size=2000),
                          "c": pd.Categorical(rng.choice(["a", "b"], 2000)), "flag": rng.random(2000) < 0.5})
    kinds = set()
    for seed in range(8):
        out = gross_values(frame, seed)
        pd.testing.assert_frame_equal(out, gross_values(frame, seed))  # the same seed, the same cells
        pd.testing.assert_frame_equal(out[["c", "flag"]], frame[["c", "flag"]])
        changed = (out[["x", "y"]] != frame[["x", "y"]]).to_numpy()
        assert (changed.sum(1) <= 1).all() and ROW_SHARE[0] / 2 < changed.any(1).mean() < ROW_SHARE[1] * 1.5
        for j, name in enumerate(["x", "y"]):
            q1, med, q3 = np.quantile(frame[name], [0.25, 0.5, 0.75])
            far = np.abs(out[name].to_numpy()[changed[:, j]] - med) / (q3 - q1)
            assert ((far >= MAGNITUDE[0] * 0.999) & (far <= MAGNITUDE[1] * 1.001)).all()
            kinds.add(len(np.unique(out[name].to_numpy()[changed[:, j]])) <= 1)  # a sentinel: one value
    assert kinds == {True, False}  # both entry errors and sentinel codes among the seeds


def test_choose_fences_fits_each_variant_with_its_fences_on_the_same_altered_tables(tmp_path):
    from benchmarks.choose_checkpoint import tables
    from benchmarks.choose_fences import estimator_for, gross_values, main
    from model.estimator import TabClustPFN

    out = tmp_path / "choice-fences"
    main(["--values", "gross", "--variants", "fences-5", "--set", "prior", "--tasks", "2", "--workers", "1",
          "--out", str(out)])
    df = pd.read_csv(f"{out}.csv")
    assert list(df["set"]) == ["prior", "prior"] and "fences-5" in df and "fences-10" not in df
    report = (tmp_path / "choice-fences.md").read_text()
    assert "with gross values written in" in report and "| prior | 2 | fences-5 |" in report
    assert "Command: `python benchmarks/choose_fences.py --values gross" in report
    name, frame, y = next(tables("prior", 1))
    est = estimator_for("fences-5", None)
    assert est._clip_fences == 5.0 and estimator_for("none", None)._clip_fences is None
    ref = TabClustPFN(random_state=0)
    ref._clip_fences = 5.0
    ref.fit(gross_values(frame, 0))
    assert df.loc[df.table == name, "fences-5_k"].item() == ref.n_clusters_
    with pytest.raises(ValueError, match="unknown variant"):
        estimator_for("fences-2", None)


def test_tile_pairs_counts_the_qualifying_pairs_of_tables_at_the_gate_and_which_lie_within_one_cluster(tmp_path):
    import pandas as pd

    from benchmarks.shapes import shape_frame
    from benchmarks.tile_pairs import main, table_pairs
    from model.tiles import MIN_FILL, MIN_RATIO

    _, frame, y = shape_frame("moons", 600, 0)  # tiled by BIC into >= 7 components
    pairs = table_pairs(frame, y, MIN_RATIO, MIN_FILL)
    assert len(pairs) >= 3 and all(p["data"] >= MIN_RATIO and p["data"] - p["fitted"] >= MIN_FILL for p in pairs)
    assert sum(p["within"] for p in pairs) >= len(pairs) - 1  # tiles of one crescent, a chain of them
    _, three, y3 = shape_frame("blobs", 300, 0)  # 3-6 blobs: below the gate
    assert table_pairs(three, y3, MIN_RATIO, MIN_FILL) is None
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.normal(size=(200, 6)))  # another path than the BIC one
    assert table_pairs(wide, rng.integers(0, 2, 200), MIN_RATIO, MIN_FILL) is None
    main(["--set", "shapes", "--n", "2", "--out", str(tmp_path / "pairs")])  # moons of 300 and of 600 rows
    df = pd.read_csv(tmp_path / "pairs.csv")
    assert set(df.columns) == {"set", "table", "pairs", "within"}
    assert (df.set == "shapes").all() and "moons_n600_s0" in set(df.table)
    assert int(df.loc[df.table == "moons_n600_s0", "pairs"].iloc[0]) == len(pairs)
    report = (tmp_path / "pairs.md").read_text()
    assert "| shapes |" in report and "Command: `python benchmarks/tile_pairs.py --set shapes --n 2" in report
