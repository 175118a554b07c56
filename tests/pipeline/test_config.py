"""Run configuration: presets, dict round trip, dotted overrides and invariants."""

from __future__ import annotations

import json
import re

import pytest

from pipeline.config import TrainConfig, apply_overrides, config_from_dict, config_to_dict, flatten, train_preset


@pytest.mark.parametrize("preset", ["paper", "small", "tiny"])
@pytest.mark.parametrize("smoke", [False, True])
def test_presets_round_trip_through_json(preset, smoke):
    cfg = train_preset(preset, smoke=smoke)
    assert config_from_dict(TrainConfig, json.loads(json.dumps(config_to_dict(cfg)))) == cfg


def test_paper_preset_matches_the_paper_schedule():
    cfg = train_preset("paper")
    assert (cfg.global_batch, cfg.max_steps, cfg.optim.warmup_steps, cfg.optim.lr) == (512, 10_000, 2000, 1e-4)
    assert (cfg.optim.betas, cfg.optim.weight_decay, cfg.optim.eps, cfg.optim.grad_clip) == ((0.9, 0.95), 0.01,
                                                                                            1e-6, 1.0)
    assert cfg.stream.prior.n_rows == (500, 1000) and cfg.stream.prior.n_features == (2, 64)


def test_overrides_from_strings_and_dicts_are_typed_and_validated():
    cfg = apply_overrides(train_preset("tiny"), ["optim.lr=0.002", "stream.kind=gmm", "stream.prior.n_rows=[60, 80]"])
    assert cfg.optim.lr == 0.002 and cfg.stream.kind == "gmm" and cfg.stream.prior.n_rows == (60, 80)
    assert apply_overrides(cfg, {"max_steps": 7}).max_steps == 7
    with pytest.raises(ValueError, match="unknown key 'lrr'"):
        apply_overrides(cfg, ["optim.lrr=1"])
    with pytest.raises(ValueError, match="not one of"):
        apply_overrides(cfg, {"stream.kind": "nope"})
    with pytest.raises(ValueError, match="multiple of micro_batch"):
        apply_overrides(cfg, {"num_workers": 3})



def test_the_priors_nuisances_are_set_from_the_command_line_and_reach_every_steps_prior():
    from pipeline.prior_stream import step_prior_config

    cfg = apply_overrides(train_preset("tiny"), ["stream.prior.nuisance.p_noise_features=0.3",
                                                 "stream.prior.nuisance.contamination_scale=[2, 4]"])
    nuisance = cfg.stream.prior.nuisance
    assert nuisance.p_noise_features == 0.3 and nuisance.contamination_scale == (2.0, 4.0)
    assert config_from_dict(TrainConfig, json.loads(json.dumps(config_to_dict(cfg)))) == cfg
    assert step_prior_config(cfg.stream, run_seed=3, step=5).nuisance == nuisance
    with pytest.raises(ValueError, match="p_contamination"):
        apply_overrides(cfg, ["stream.prior.nuisance.p_contamination=2"])

def test_flat_params_name_every_leaf():
    flat = flatten(config_to_dict(train_preset("small")))
    assert {"max_steps", "optim.lr", "model.col_dim", "stream.prior.n_rows", "stream.prior.gmm.omega_min"} <= set(flat)
    assert all(not isinstance(v, dict) for v in flat.values())


@pytest.mark.parametrize("override, path", [
    ("max_steps=1.5", "max_steps"), ("checkpoint_every=1.9", "checkpoint_every"), ("max_steps=true", "max_steps"),
    ("use_gpu=2", "use_gpu"), ("optim.betas=[0.9,0.95,0.99]", "optim.betas"), ("optim.betas=[0.9]", "optim.betas"),
    ("stream.prior.n_rows=100", "stream.prior.n_rows"), ("stream.prior.n_rows=[100]", "stream.prior.n_rows"),
    ("optim.lr=null", "optim.lr"), ("optim.lr=abc", "optim.lr"), ("optim.lr=nan", "optim.lr"),
    ("optim.grad_clip=Infinity", "optim.grad_clip"), ("model=3", "model"), ("init_checkpoint=5", "init_checkpoint"),
])
def test_overrides_of_the_wrong_type_are_refused_naming_the_key(override, path):
    with pytest.raises(ValueError, match=re.escape(path)):
        apply_overrides(train_preset("tiny"), [override])


def test_integral_numbers_and_json_values_still_coerce():
    cfg = apply_overrides(train_preset("tiny"), ["max_steps=1e2", "optim.lr=1", "use_gpu=true",
                                                  "stream.curriculum_n_start=null"])
    assert (cfg.max_steps, cfg.optim.lr, cfg.use_gpu) == (100, 1.0, True)
    assert type(cfg.max_steps) is int and type(cfg.optim.lr) is float
    assert config_from_dict(TrainConfig, config_to_dict(cfg)) == cfg
