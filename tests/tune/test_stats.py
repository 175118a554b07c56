"""Statistics of a study table: t intervals over seeds, paired tests against the paper's choice on the held-out
tasks and over seeds, the one-sentence verdict; the regime base config and its scoring tasks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from pipeline.config import train_preset
from priors.regimes import regime_prior
from tune.config import SweepConfig, regime_base, scoring_kind, sweep_from_dict, sweep_to_dict
from tune.evaluate import fixed_synthetic_tasks
from tune.report import (ablation_table, paired_seed_test, study_stats, t_interval, trial_frame, verdict,
                         write_tables)
from tune.spaces import study_space, with_seeds

KEY = "objective.coupling"
N_TASKS = 40


def _records(shift: float, noise: float = 0.05, seeds=(0, 1, 2)) -> list[dict]:
    """Coupling trials whose per-task ARIs are a shared task difficulty plus seed noise; the additive variant
    scores ``shift`` above the decoupled one on every task."""
    rng = np.random.default_rng(0)
    difficulty = rng.uniform(0.2, 0.8, N_TASKS)
    out = []
    for variant, offset in (("decoupled", 0.0), ("additive", shift)):
        for seed in seeds:
            ari = np.clip(difficulty + offset + rng.normal(0, noise, N_TASKS), -0.5, 1.0)
            k_err = rng.integers(0, 3, N_TASKS)
            tasks = [{"ari": float(a), "nmi": float(a), "k_abs_err": float(k), "ari_known_k": float(a),
                      "mechanism": "gmm"} for a, k in zip(ari, k_err)]
            metrics = {"syn_ari": float(np.median(ari)), "syn_k_medae": float(np.median(k_err)), "ms_per_step": 5.0}
            out.append({"trial_id": f"{variant}{seed}", "status": "finished", "overrides": {KEY: variant, "seed": seed},
                        "metrics": metrics, "task_scores": tasks})
    return out


@pytest.fixture()
def coupling():
    return with_seeds(study_space("coupling", train_preset("tiny"), 10), 0, 3)


def test_t_interval_is_the_textbook_one():
    mean, lo, hi = t_interval([0.1, 0.2, 0.3])
    half = sps.t.ppf(0.975, 2) * 0.1 / math.sqrt(3)
    assert mean == pytest.approx(0.2) and lo == pytest.approx(0.2 - half) and hi == pytest.approx(0.2 + half)
    assert math.isnan(t_interval([0.4])[1]) and t_interval([0.4])[0] == 0.4


def test_a_variant_built_to_be_worse_is_flagged_against_the_paper_choice(coupling):
    stats = study_stats(_records(shift=-0.1), coupling).set_index("variant")
    assert list(stats.index) == ["Additive", "Decoupled"] and list(stats["n"]) == [3, 3]
    assert stats.loc["Additive", "d_task_ari"] == pytest.approx(-0.1, abs=0.02)
    assert stats.loc["Additive", "p_task_ari"] < 1e-4
    assert stats.loc["Additive", "d_seed_ari"] < 0
    assert math.isnan(stats.loc["Decoupled", "p_task_ari"])  # the choice is not tested against itself
    lo, hi = stats.loc["Decoupled", "syn_ari_lo"], stats.loc["Decoupled", "syn_ari_hi"]
    assert lo < stats.loc["Decoupled", "syn_ari_mean"] < hi
    sentence = verdict(stats.reset_index(), coupling)
    assert "is better than Additive" in sentence and "holds at this budget" in sentence


def test_identical_variants_are_not_separated(coupling):
    records = _records(shift=0.0)
    for a, b in zip(records[:3], records[3:]):  # the additive trials score exactly as the decoupled ones
        b["task_scores"], b["metrics"] = a["task_scores"], a["metrics"]
    stats = study_stats(records, coupling).set_index("variant")
    assert stats.loc["Additive", "p_task_ari"] == 1.0 and stats.loc["Additive", "d_task_ari"] == 0.0
    assert stats.loc["Additive", "p_seed_ari"] == 1.0
    assert "not separated from Additive" in verdict(stats.reset_index(), coupling)
    assert "do not separate" in verdict(stats.reset_index(), coupling)


def test_a_better_variant_contradicts_the_paper_ordering(coupling):
    sentence = verdict(study_stats(_records(shift=0.1), coupling), coupling)
    assert "is worse than Additive" in sentence and "does not hold" in sentence


def test_a_separation_the_paper_agrees_with_keeps_its_ordering():
    """Pin-loss: the paper ranks Matching+CE above its choice SoftARI, so SoftARI losing to it confirms the paper;
    the verdict must not call an ordering it then quotes unchanged 'not held'."""
    study = with_seeds(study_space("pin-loss", train_preset("tiny"), 10), 0, 3)
    rng = np.random.default_rng(0)
    difficulty = rng.uniform(0.2, 0.8, N_TASKS)
    records = []
    for value, offset in (("soft_ari", 0.0), ("soft_nmi", -0.002), ("matching_ce", 0.1), ("matching_softacc", -0.001)):
        for seed in (0, 1, 2):
            ari = difficulty + offset + rng.normal(0, 0.05, N_TASKS)
            records.append({"trial_id": f"{value}{seed}", "status": "finished",
                            "overrides": {"objective.pin_loss": value, "seed": seed},
                            "metrics": {"syn_ari": float(np.median(ari))},
                            "task_scores": [{"ari": float(a), "k_abs_err": 0.0} for a in ari]})
    sentence = verdict(study_stats(records, study), study)
    assert "is worse than Matching+CE" in sentence and "does not hold" not in sentence
    assert "follows the paper's ordering (Matching+CE > SoftARI > Matching+SoftAcc > SoftNMI" in sentence


def test_means_in_the_paper_order_against_a_task_test_that_is_not_are_not_called_a_broken_ordering(coupling):
    records = _records(shift=0.1)  # additive better on every task ...
    for rec in records:  # ... but its trials' summary below the decoupled ones'
        rec["metrics"]["syn_ari"] = 0.3 if rec["overrides"][KEY] == "additive" else 0.4
    sentence = verdict(study_stats(records, coupling), coupling)
    assert "is worse than Additive" in sentence and "does not hold" not in sentence
    assert "the task test against Additive goes the other way, so the ordering is not confirmed" in sentence


def test_a_mean_and_a_signed_rank_test_that_disagree_in_direction_name_no_winner(coupling):
    """Additive loses a little on most tasks and wins big on a few: its mean difference is positive, the significant
    Wilcoxon test says it is lower on most tasks, so neither variant may be called the better one."""
    records = _records(shift=0.0)
    delta = np.where(np.arange(N_TASKS) < 34, -0.01, 0.3)
    for ref, rec in zip(records[:3], records[3:]):
        rec["task_scores"] = [{**t, "ari": t["ari"] + float(x)} for t, x in zip(ref["task_scores"], delta)]
    stats = study_stats(records, coupling).set_index("variant")
    assert stats.loc["Additive", "d_task_ari"] > 0 and stats.loc["Additive", "p_task_ari"] < 0.05
    assert stats.loc["Additive", "r_task_ari"] < 0
    sentence = verdict(stats.reset_index(), coupling)
    assert "is worse than" not in sentence and "is better than" not in sentence
    assert "not separated from Additive" in sentence and "opposite directions" in sentence


def test_the_task_test_averages_only_the_seeds_both_variants_finished(coupling):
    """Additive's seed 2 failed; decoupled's seed 2 scored far lower on every task. Paired on seeds 0 and 1 the
    variants are identical; averaging decoupled over all three seeds would call additive better."""
    records = _records(shift=0.0)
    for ref, rec in zip(records[:3], records[3:]):
        rec["task_scores"], rec["metrics"] = ref["task_scores"], dict(ref["metrics"])
    records[2]["task_scores"] = [{**t, "ari": t["ari"] - 0.3} for t in records[2]["task_scores"]]
    records[5]["status"] = "failed"
    stats = study_stats(records, coupling).set_index("variant")
    assert list(stats["n"]) == [2, 3]
    assert stats.loc["Additive", "d_task_ari"] == 0.0 and stats.loc["Additive", "p_task_ari"] == 1.0


def test_paired_seed_test_pairs_by_seed_only():
    d, p, n = paired_seed_test({0: 0.5, 1: 0.6, 2: 0.8, 7: 9.0}, {0: 0.4, 1: 0.4, 2: 0.5})
    assert n == 3 and d == pytest.approx(0.2) and p == pytest.approx(sps.ttest_rel([0.5, 0.6, 0.8],
                                                                                   [0.4, 0.4, 0.5]).pvalue)


def test_p_values_never_read_zero():
    from tune.report import format_p

    assert [format_p(p) for p in (0.4951, 0.011, 0.001, 0.00095, 6.3e-05, 5e-24)] == [
        "0.495", "0.011", "0.001", "9.5e-04", "6.3e-05", "5.0e-24"]
    assert [format_p(p, None) for p in (0.64, 0.0027, 5e-24)] == ["0.64", "0.0027", "5e-24"]
    assert format_p(0.0) == format_p(0.0, None) == "<1e-300"  # a p that underflowed
    assert format_p(math.nan) == "n/a"


def test_the_study_tables_print_tiny_p_values_without_zeros(coupling):
    from tune.report import stats_markdown

    stats = study_stats(_records(shift=-0.1), coupling)
    p_task = stats.set_index("variant").loc["Additive", "p_task_ari"]
    assert 0 < p_task < 5e-4  # would round to 0.000
    text = stats_markdown(stats, coupling)
    row = next(line for line in text.splitlines() if line.startswith("| Additive |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[-2] == f"{p_task:.1e}" and "0.000" not in cells[-3:]
    stats.loc[stats["variant"] == "Additive", ["p_task_ari", "p_seed_ari"]] = 0.0
    text = stats_markdown(stats, coupling)
    assert "| <1e-300 | <1e-300 |" in text
    assert "(tasks p < 1e-300, seeds p < 1e-300)" in text and "p = 0" not in text


def test_tables_keep_the_stats_and_old_trials_without_task_scores_still_get_intervals(coupling, tmp_path):
    records = _records(shift=-0.1)
    for rec in records:
        rec["task_scores"] = None
    trials = trial_frame(records, coupling)
    files = write_tables(tmp_path, coupling, trials, ablation_table(trials, coupling), records=records)
    text = files["markdown"].read_text()
    assert "95 % t interval" in text and "untested" in text
    assert files["stats"].is_file()


def test_the_regime_base_trains_and_scores_on_the_regime_prior():
    base = regime_base(train_preset("tiny"), "amortized", "coupling")
    assert base.stream.prior == regime_prior("amortized") and base.stream.kind == "gmm"
    sweep = SweepConfig(study="coupling", base=base, budget_steps=4, eval_tasks=6, regime="amortized")
    assert scoring_kind(sweep) == "gmm" and sweep_from_dict(sweep_to_dict(sweep)) == sweep
    tasks = fixed_synthetic_tasks(base.stream, 6, kind=scoring_kind(sweep))
    assert all(t.X.shape[1] == 2 and 100 <= t.X.shape[0] <= 500 and 2 <= t.n_clusters <= 10 for t in tasks)
    assert {t.meta["mechanism"] for t in tasks} == {"gmm"}
    assert scoring_kind(SweepConfig(study="coupling", budget_steps=4)) == "mix"  # the base prior: both, as before


def test_the_prior_study_in_a_regime_scores_every_trial_on_both_mechanisms_at_d2():
    base = regime_base(train_preset("tiny"), "amortized", "prior")
    sweep = SweepConfig(study="prior", base=base, budget_steps=4, eval_tasks=12, regime="amortized")
    assert scoring_kind(sweep) == "mix"
    tasks = fixed_synthetic_tasks(base.stream, 12, kind=scoring_kind(sweep))
    assert {t.meta["mechanism"] for t in tasks} == {"gmm", "zeus"}
    assert all(t.X.shape[1] == 2 for t in tasks)


def test_an_unknown_regime_is_refused():
    with pytest.raises(ValueError, match="unknown regime"):
        SweepConfig(study="coupling", regime="nope")
