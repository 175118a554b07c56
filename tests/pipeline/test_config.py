"""Run configuration: presets, dict round trip, dotted overrides and invariants."""

from __future__ import annotations

import json

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


def test_flat_params_name_every_leaf():
    flat = flatten(config_to_dict(train_preset("small")))
    assert {"max_steps", "optim.lr", "model.col_dim", "stream.prior.n_rows", "stream.prior.gmm.omega_min"} <= set(flat)
    assert all(not isinstance(v, dict) for v in flat.values())
