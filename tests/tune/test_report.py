"""The ablation table: per-variant means over seeds, failed trials left out, paper columns, Markdown columns."""

from __future__ import annotations

import math

import pytest

from pipeline.config import train_preset
from tune.report import ablation_table, markdown, trial_frame, write_tables
from tune.spaces import study_space, with_seeds


def _rec(trial_id, overrides, status="finished", **metrics):
    return {"trial_id": trial_id, "overrides": overrides, "status": status, "metrics": {"step": 10, **metrics}}


@pytest.fixture()
def decoder_study():
    return with_seeds(study_space("decoder", train_preset("small"), 10), 0, 2)


def test_grid_rows_follow_the_paper_order_and_average_finished_seeds(decoder_study):
    key = "model.decoder"
    records = [
        _rec("a", {key: "iterative", "seed": 0}, syn_ari=0.5, ms_per_step=10.0),
        _rec("b", {key: "iterative", "seed": 1}, syn_ari=0.7, ms_per_step=30.0),
        _rec("c", {key: "naive", "seed": 0}, syn_ari=0.2),
        _rec("d", {key: "naive", "seed": 1}, status="failed", syn_ari=0.9),
        _rec("e", {key: "transformer", "seed": 0}, status="failed"),
    ]
    trials = trial_frame(records, decoder_study)
    table = ablation_table(trials, decoder_study)
    assert list(table["variant"]) == ["Naive (SA+MLP)", "Non-iterative (Transformer)", "Iterative"]
    assert list(table["n"]) == [1, 0, 2]
    assert table["syn_ari"].tolist()[0] == 0.2 and math.isnan(table["syn_ari"].tolist()[1])
    assert table["syn_ari"].tolist()[2] == pytest.approx(0.6)
    assert table["ms_per_step"].tolist()[2] == pytest.approx(20.0)
    assert table["paper_syn_ari"].tolist() == [0.8137, 0.8229, 0.8308]


def test_markdown_leaves_out_unmeasured_columns_but_keeps_the_papers(decoder_study):
    records = [_rec("a", {"model.decoder": "iterative", "seed": 0}, syn_ari=0.5, syn_nmi=0.4, syn_k_mae=1.0)]
    text = markdown(ablation_table(trial_frame(records, decoder_study), decoder_study), decoder_study, ["note"])
    header = next(line for line in text.splitlines() if line.startswith("| Variant"))
    assert header == ("| Variant | n | Syn ARI | Syn NMI | Syn k-MAE | Paper Syn ARI | Paper Syn NMI | "
                      "Paper Real ARI | Paper Real NMI |")
    assert "| Iterative | 1 | 0.5000 | 0.4000 | 1.0000 | 0.8308 |" in text
    assert "note" in text and "| Naive (SA+MLP) | 0 | n/a |" in text


def test_prior_and_cin_tables_show_their_own_columns():
    prior = study_space("prior", train_preset("small"), 10)
    records = [_rec("a", {"stream.kind": "gmm"}, syn_ari=0.5, syn_ari_gmm=0.6, syn_ari_zeus=0.3)]
    text = markdown(ablation_table(trial_frame(records, prior), prior), prior)
    assert "Syn ARI (GMM) | Syn ARI (ZEUS)" in text and "Paper Syn ARI (GMM)" in text
    cin = study_space("cin-loss", train_preset("small"), 10)
    records = [_rec("a", {"model.cin_head": "ordinal"}, syn_ari=0.5, syn_k_medae=1.0)]
    text = markdown(ablation_table(trial_frame(records, cin), cin), cin)
    assert "| Order-aware | 1 |" in text and "Syn k-MedAE" in text and "Paper Real k-MedAE" in text


def test_random_search_lists_trials_best_first_with_their_values(tmp_path):
    study = study_space("hparams", train_preset("small"), 100)
    records = [_rec("a", {"optim.lr": 1e-4, "optim.warmup_steps": 0, "model.col_dim": 32}, syn_ari=0.1),
               _rec("b", {"optim.lr": 1e-3, "optim.warmup_steps": 5, "model.col_dim": 64}, syn_ari=0.4),
               _rec("c", {"optim.lr": 3e-4, "optim.warmup_steps": 20, "model.col_dim": 16}, status="stopped",
                    val_ari=0.05)]
    trials = trial_frame(records, study)
    table = ablation_table(trials, study)
    assert list(table["trial_id"]) == ["b", "a", "c"]
    paths = write_tables(tmp_path, study, trials, table)
    text = paths["markdown"].read_text()
    assert "| lr=0.001, warmup_steps=5, col_dim=64 | finished |" in text and "| stopped |" in text
    assert "In-loop val ARI" in text and sorted(p.name for p in tmp_path.iterdir()) == [
        "ablation_hparams.csv", "ablation_hparams.md", "trials_hparams.csv"]
