"""The ablation search spaces map to config fields that exist and that training reads (no dead flags)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch

from pipeline.config import TrainConfig, config_to_dict, flatten, train_preset
from pipeline.train_loop import run_local
from pipeline.prior_stream import READ_CPUS
from tune.config import (SweepConfig, default_max_concurrent, max_concurrent_trials, sweep_from_dict, sweep_to_dict,
                         trial_config, trial_footprint)
from tune.spaces import (STUDY_NAMES, Choice, Grid, LogUniform, representative_values, study_space, to_tune,
                         with_seeds)

BUDGET = 6  # > the scaled matching warm-up (2 steps), so every PIN loss is really used


@pytest.fixture(scope="module")
def tiny_sweep_base() -> TrainConfig:
    """The smoke base with one micro-batch of two tasks per step and no in-loop validation."""
    return dataclasses.replace(train_preset("tiny", smoke=True), global_batch=2, micro_batch=2, val_tasks=0)


@pytest.fixture()
def one_thread():
    """Tiny CPU models run much faster on one thread on a busy machine; restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _studies(base: TrainConfig):
    for name in STUDY_NAMES:
        yield name, with_seeds(study_space(name, base, BUDGET), base.seed, 2)


def _get(cfg: TrainConfig, key: str):
    node = cfg
    for part in key.split("."):
        node = getattr(node, part)
    return node


@pytest.mark.parametrize("preset", ["tiny", "small", "paper"])
def test_every_value_of_every_space_sets_an_existing_field(preset):
    base = train_preset(preset)
    known = set(flatten(config_to_dict(base)))
    for name in STUDY_NAMES:
        study = with_seeds(study_space(name, base, 1000), base.seed, 2)
        assert study.space, name
        for key, domain in study.space.items():
            assert key in known, f"{name}: {key} is not a TrainConfig field"
            values = representative_values(domain)
            assert len(set(values)) >= 2, f"{name}: {key} has a single value {values}"
            for value in values:
                cfg = trial_config(SweepConfig(study=name, base=base, budget_steps=1000), {key: value})
                assert _get(cfg, key) == value


def test_every_grid_study_names_each_variant_and_the_paper_rows_match_the_names():
    base = train_preset("small")
    for name in STUDY_NAMES:
        study = study_space(name, base, 500)
        if not study.is_grid:
            continue
        (key, domain), = study.space.items()
        assert set(study.labels) == set(domain.values), name
        assert set(study.paper) <= set(study.labels.values()), name
        assert {study.variant({key: v}) for v in domain.values} == set(study.labels.values())


def _fingerprint(cfg: TrainConfig) -> tuple[np.ndarray, np.ndarray]:
    """Loss history and final weights of a few steps of in-process training."""
    result = run_local(cfg)
    losses = np.array([[h["loss"], h["pin_loss"], h["cin_loss"]] for h in result.history])
    weights = torch.cat([p.detach().flatten() for p in result.net.parameters()]).numpy()
    return losses, weights


def _same(a, b) -> bool:
    return all(x.shape == y.shape and np.allclose(x, y, rtol=0, atol=1e-7) for x, y in zip(a, b))


@pytest.mark.usefixtures("one_thread")
def test_training_is_deterministic_so_differences_come_from_the_flags(tiny_sweep_base):
    cfg = trial_config(SweepConfig(study="coupling", base=tiny_sweep_base, budget_steps=BUDGET), {})
    assert _same(_fingerprint(cfg), _fingerprint(cfg))


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("name", STUDY_NAMES)
def test_each_value_of_a_space_changes_what_training_computes(name, tiny_sweep_base):
    """No dead flag: changing any one key of a study's space changes the losses or the trained weights."""
    sweep = SweepConfig(study=name, base=tiny_sweep_base, budget_steps=BUDGET, num_samples=2)
    study = sweep.study_spec()
    first = {k: representative_values(d)[0] for k, d in study.space.items()}
    for key, domain in study.space.items():
        prints = [_fingerprint(trial_config(sweep, {**first, key: v})) for v in representative_values(domain)]
        for (i, a), (j, b) in itertools.combinations(enumerate(prints), 2):
            assert not _same(a, b), f"{name}: {key} values #{i} and #{j} train identically (a dead flag)"


def test_hparam_widths_fit_the_attention_heads_of_each_preset():
    for preset in ("tiny", "small", "paper"):
        base = train_preset(preset)
        widths = study_space("hparams", base, 1000).space["model.col_dim"].values
        assert base.model.col_dim in widths and len(widths) == 3, (preset, widths)


def test_tune_domains_keep_the_values():
    space = {"a": Grid((1, 2)), "b": Choice(("x", "y")), "c": LogUniform(1e-4, 1e-2)}
    out = to_tune(space)
    assert out["a"] == {"grid_search": [1, 2]}
    assert list(out["b"].categories) == ["x", "y"]
    assert (out["c"].lower, out["c"].upper) == (1e-4, 1e-2)


def test_seeds_become_a_grid_key_only_for_repeated_grid_studies():
    base = train_preset("small")
    assert "seed" not in with_seeds(study_space("decoder", base, 100), 0, 1).space
    assert with_seeds(study_space("decoder", base, 100), 5, 3).space["seed"] == Grid((5, 6, 7))
    assert "seed" not in with_seeds(study_space("hparams", base, 100), 0, 3).space


def test_trial_config_compresses_the_base_schedule_into_the_budget():
    base = train_preset("small")  # 2000 steps, 200 warm-up steps, 400 matching warm-up steps
    cfg = trial_config(SweepConfig(study="pin-loss", base=base, budget_steps=500),
                       {"objective.pin_loss": "soft_nmi"})
    assert (cfg.max_steps, cfg.optim.warmup_steps, cfg.objective.warmup_matching_steps) == (500, 50, 100)
    assert cfg.checkpoint_every == cfg.val_every == 125
    assert cfg.objective.pin_loss == "soft_nmi" and cfg.model == base.model


def test_bad_sweeps_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="unknown study"):
        SweepConfig(study="dropout")
    with pytest.raises(ValueError, match="prior study"):
        SweepConfig(study="prior", scheduler="asha")
    with pytest.raises(ValueError, match="unknown study"):
        study_space("dropout", train_preset("small"), 10)
    with pytest.raises(ValueError, match="unknown key"):
        trial_config(SweepConfig(study="decoder"), {"model.decoder_kind": "naive"})


def test_asha_sweeps_without_the_reports_asha_ranks_by_are_refused():
    """ASHA ranks trials by ``val_ari`` at each Train report; without in-loop validation every trial would error in
    Tune ("did not include the specified metric"), and a first rung past the budget fails ASHA's own assertion."""
    base = train_preset("tiny", smoke=True)
    with pytest.raises(ValueError, match="val_tasks=0 turns it off"):
        SweepConfig(study="hparams", base=dataclasses.replace(base, val_tasks=0), scheduler="asha")
    with pytest.raises(ValueError, match="report_every=12 is past the budget of 10 steps"):
        SweepConfig(study="hparams", base=base, scheduler="asha", budget_steps=10, report_every=12)
    SweepConfig(study="hparams", base=dataclasses.replace(base, val_tasks=0))  # fifo does not need it
    SweepConfig(study="hparams", base=base, scheduler="asha", budget_steps=10, report_every=10)


@pytest.mark.parametrize("field", ["budget_steps", "num_samples", "eval_tasks"])
def test_a_bad_count_is_refused_by_name(field):
    with pytest.raises(ValueError, match=f"^{field} must be >= 1, got 0$"):
        SweepConfig(study="decoder", **{field: 0})


def test_sweep_config_round_trips_through_json_dicts():
    sweep = SweepConfig(study="prior", base=train_preset("tiny", smoke=True), budget_steps=7, num_samples=2,
                        real=True, real_datasets=("iris", "wine"))
    assert sweep_from_dict(sweep_to_dict(sweep)) == sweep


def test_concurrency_default_counts_every_reservation_of_a_trial():
    smoke = train_preset("tiny", smoke=True)  # 1 worker + 1 prior actor of 0.5 CPU + a read task + the trial
    assert trial_footprint(smoke, 0.5) == {"CPU": 0.5 + 1 + 0.5 + READ_CPUS, "GPU": 0.0}
    assert default_max_concurrent(smoke, 0.5, {"CPU": 4.0}) == 1
    assert default_max_concurrent(smoke, 0.5, {"CPU": 16.0}) == 7  # 16 // 2.05
    gpu = dataclasses.replace(smoke, use_gpu=True, num_workers=2, global_batch=8)
    assert default_max_concurrent(gpu, 0.5, {"CPU": 16.0, "GPU": 4.0}) == 2


def test_a_trial_that_cannot_fit_the_cluster_is_refused_instead_of_waiting_for_ever():
    """4 logical CPUs (a 2-core machine): a Train worker and five prior actors of 0.5 CPU pass the pretraining's own
    check (3.55 CPUs), but with the trial's 0.5 CPU the read task finds no CPU left and the trial hangs (seen: no step
    in 240 s). The sweep refuses it and says what to lower; a GPU trial wanting more GPUs than there are too."""
    smoke = train_preset("tiny", smoke=True)
    crowded = dataclasses.replace(smoke, stream=dataclasses.replace(smoke.stream, num_actors=5, actor_cpus=0.5))
    with pytest.raises(ValueError, match=r"one trial needs 4.05 CPUs .* cluster has 4 CPUs .* stream.num_actors"):
        default_max_concurrent(crowded, 0.5, {"CPU": 4.0})
    gpu = dataclasses.replace(smoke, use_gpu=True, num_workers=2, global_batch=8)
    with pytest.raises(ValueError, match="and 2 GPUs, but the Ray cluster has 16 CPUs and 1 GPUs"):
        default_max_concurrent(gpu, 0.5, {"CPU": 16.0, "GPU": 1.0})


def test_more_trials_at_once_than_fit_are_refused_and_none_means_as_many_as_fit():
    sweep = SweepConfig(study="decoder", base=train_preset("tiny", smoke=True), budget_steps=4)
    assert max_concurrent_trials(sweep, None, {"CPU": 8.0}) == 3
    assert max_concurrent_trials(sweep, 2, {"CPU": 8.0}) == 2
    with pytest.raises(ValueError, match="4 trials at once need 8.2 CPUs .* at most 3 fit"):
        max_concurrent_trials(sweep, 4, {"CPU": 8.0})
