"""Fitting a K ranker to a frozen network (pipeline.k_ranker_fit, jobs/fit_k_ranker.py), and training that
continues a checkpoint carrying one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from model.checkpoint import load_checkpoint, save_checkpoint, weights_sha256
from model.estimator import TabClustPFN
from model.k_features import FEATURES
from model.refinement import DEFAULT_REFINE
from model.k_ranker import KRanker
from model.network import TabClustNet
from pipeline.k_ranker_fit import RankerFitConfig, calibrate_k_ranker, fit_k_ranker, train_table
from tests.shared_data import needs_dev_suite


def test_fit_writes_a_checkpoint_the_estimator_uses_and_reuses_records(tmp_path, tiny_checkpoint):
    records = tmp_path / "records"
    cfg = RankerFitConfig(checkpoint=tiny_checkpoint, out=str(tmp_path / "ranked.pt"), records_dir=str(records),
                          tables=8, val_tables=2, epochs=5, workers=1, dev_slope=False)
    summary = fit_k_ranker(cfg)
    net, meta = load_checkpoint(cfg.out)
    parent, parent_meta = load_checkpoint(tiny_checkpoint)
    assert net.k_ranker is not None and net.cfg.k_ranker
    assert net.cfg.k_ranker_features == 1 == net.k_ranker.feature_set  # the shipped ranker's set by default
    assert weights_sha256(net.without_k_ranker().state_dict()) == weights_sha256(parent.state_dict())
    phase = meta["lineage"][-1]
    assert phase["tasks"] == 8 and phase["steps"] == 0 and "K ranker" in phase["what"]
    assert phase["k_ranker"]["held_out"]["tables"] == 2 == summary["held_out"]["tables"]
    assert meta["total_tasks_seen"] == parent_meta.get("total_tasks_seen", 0) + 8
    (chunk,) = list(records.rglob("*.npz"))
    with np.load(chunk) as d:
        assert d["features"].shape == (8, net.cfg.k_max - 1, len(FEATURES))
        assert list(d["names"]) == [f"ranker_{i}" for i in range(8)]
        k_hi = d["k_hi"]
        assert all(np.isnan(d["ari"][t, k - 1:]).all() and not np.isnan(d["ari"][t, :k - 1]).any()
                   for t, k in enumerate(k_hi))
        # the ARI a ranker is fitted on is that of the partition the default refine returns at each K
        assert np.array_equal(d["ari"], d[f"ari_{DEFAULT_REFINE}"], equal_nan=True)
        assert not np.array_equal(d["ari_kmeans"], d["ari_gmm"], equal_nan=True)
        assert d["features_gmm"].shape == d["features"].shape  # the mixtures' partitions described as well
        assert not np.array_equal(d["features_gmm"], d["features"], equal_nan=True)
    # calibrated on the held-out records: a temperature, and how its probabilities fared there
    assert net.cfg.k_ranker_temperature > 0
    assert phase["k_ranker"]["calibration"]["temperature"] == net.cfg.k_ranker_temperature
    assert phase["k_ranker"]["calibration"]["tables"] == 2 == summary["calibration"]["tables"]
    assert net.cfg.k_ranker_temperature_slope == 0 and summary["dev"] is None  # dev_slope=False
    stamp = chunk.stat().st_mtime_ns
    fit_k_ranker(dataclasses.replace(cfg, seed=1, out=str(tmp_path / "ranked1.pt")))  # records read, not redone
    assert chunk.stat().st_mtime_ns == stamp
    X, _ = train_table(0)[1:]
    fitted = TabClustPFN(checkpoint=cfg.out).fit(X)
    assert fitted.k_selection_ == "ranker" and fitted.k_probabilities_ is not None
    # calibrating alone, as for a ranker fitted before calibration existed: the same temperature, same weights
    plain = TabClustNet(dataclasses.replace(net.cfg, k_ranker_temperature=0.0))
    plain.load_state_dict(net.state_dict())
    save_checkpoint(tmp_path / "plain.pt", plain, meta)
    out = calibrate_k_ranker(str(tmp_path / "plain.pt"), str(tmp_path / "recal.pt"), records_dir=str(records),
                             tables=8, val_tables=2, workers=1, dev_slope=False)
    recal, recal_meta = load_checkpoint(tmp_path / "recal.pt")
    assert chunk.stat().st_mtime_ns == stamp  # records read, not redone
    assert recal.cfg.k_ranker_temperature == pytest.approx(net.cfg.k_ranker_temperature) == out["temperature"]
    assert weights_sha256(recal.state_dict()) == weights_sha256(net.state_dict())
    assert recal_meta["lineage"][-1]["tasks"] == 0 and recal_meta["total_tasks_seen"] == meta["total_tasks_seen"]
    with pytest.raises(ValueError, match="carries no K ranker"):
        calibrate_k_ranker(tiny_checkpoint, str(tmp_path / "no.pt"), records_dir=str(records), tables=8,
                           val_tables=2, workers=1)
    second = dataclasses.replace(cfg, feature_set=2, out=str(tmp_path / "set2.pt"))
    fit_k_ranker(second)  # the mixture features too, from the same records
    assert load_checkpoint(second.out)[0].k_ranker.feature_set == 2
    assert "feature set 2" in load_checkpoint(second.out)[1]["lineage"][-1]["what"]
    lloyd = dataclasses.replace(cfg, target="kmeans", out=str(tmp_path / "lloyd.pt"))
    fit_k_ranker(lloyd)  # fitted on the Lloyd-refined partitions' ARI (the shipped ranker's target)
    assert 'the ARI of refine=kmeans' in load_checkpoint(lloyd.out)[1]["lineage"][-1]["what"]
    assert not torch.equal(load_checkpoint(lloyd.out)[0].k_ranker.mlp[0].weight, net.k_ranker.mlp[0].weight)
    mixture = dataclasses.replace(cfg, candidates="gmm", out=str(tmp_path / "gmm.pt"))
    fit_k_ranker(mixture)  # a ranker of the mixtures' partitions, from the same records
    assert load_checkpoint(mixture.out)[0].cfg.k_ranker_candidates == "gmm"
    assert TabClustPFN(checkpoint=mixture.out).fit(X).k_selection_ == "ranker"


def test_extra_tables_join_the_fit_with_a_tenth_held_out_and_their_own_records(tmp_path, tiny_checkpoint):
    records = tmp_path / "records"
    cfg = RankerFitConfig(checkpoint=tiny_checkpoint, out=str(tmp_path / "shaped.pt"), records_dir=str(records),
                          tables=6, val_tables=2, epochs=5, workers=1, dev_slope=False,
                          extra_tables=(("shapes", 20), ("coarse", 4)))
    summary = fit_k_ranker(cfg)
    chunks = sorted(p.name for p in records.rglob("*.npz"))
    assert chunks == ["coarse-v1-0000000-0000004.npz", "shapes-v1-0000000-0000020.npz", "tables-0000000-0000006.npz"]
    (shapes,) = records.rglob("shapes-*.npz")
    with np.load(shapes) as d:
        assert list(d["names"]) == [f"ranker_shapes_{i}" for i in range(20)]
        assert set(d["k_true"]) <= set(range(2, 9)) and np.isfinite(d["ari"][:, 0]).all()
    assert summary["extra_held_out"]["shapes"]["tables"] == 2 and summary["extra_held_out"]["coarse"]["tables"] == 1
    assert summary["held_out"]["tables"] == 2
    phase = load_checkpoint(cfg.out)[1]["lineage"][-1]
    assert "and 18 shapes tables (shapes-v1) and 3 coarse tables (coarse-v1)" in phase["what"]
    assert phase["k_ranker"]["extra_held_out"]["shapes"]["ranker_ari"] == summary["extra_held_out"]["shapes"][
        "ranker_ari"]
    plain = fit_k_ranker(dataclasses.replace(cfg, extra_tables=(), out=str(tmp_path / "plain.pt")))
    assert "extra_held_out" not in plain and "shapes tables" not in load_checkpoint(tmp_path / "plain.pt")[1][
        "lineage"][-1]["what"]
    # the extra records changed what the ranker learnt
    assert not torch.equal(load_checkpoint(cfg.out)[0].k_ranker.mlp[0].weight,
                           load_checkpoint(tmp_path / "plain.pt")[0].k_ranker.mlp[0].weight)
    heavy = fit_k_ranker(dataclasses.replace(cfg, extra_weight=3, out=str(tmp_path / "heavy.pt")))
    assert "(each counted 3 times)" in load_checkpoint(tmp_path / "heavy.pt")[1]["lineage"][-1]["what"]
    assert heavy["extra_held_out"]["shapes"]["tables"] == 2  # the held-out tables are not repeated
    assert not torch.equal(load_checkpoint(cfg.out)[0].k_ranker.mlp[0].weight,
                           load_checkpoint(tmp_path / "heavy.pt")[0].k_ranker.mlp[0].weight)
    for bad, match in (((("shapes", 1),), "at least 2"), ((("nope", 5),), "unknown table family"),
                       ((("shapes", 5), ("shapes", 6)), "given twice")):
        with pytest.raises(ValueError, match=match):
            dataclasses.replace(cfg, extra_tables=bad)
    with pytest.raises(ValueError, match="extra_weight must be >= 1"):
        dataclasses.replace(cfg, extra_weight=0)


def test_coarse_tables_are_the_mix_with_coarse_columns_on_seeds_of_their_own():
    from pipeline.k_ranker_fit import coarse_table

    name, frame, y = coarse_table(3)
    assert name == "ranker_coarse_3" and len(frame) == len(y)
    assert not train_table(3)[1].shape == frame.shape or not np.array_equal(train_table(3)[2], y)
    few = [frame[c].nunique() for c in frame.columns if frame[c].dtype.kind == "f"]
    assert min(few) <= 10  # at least one column read at a few levels or as small counts


@pytest.mark.parametrize("family", ["shapes", "coarse", "onemode"])
def test_each_extra_family_draws_its_own_labelled_tables_deterministically(family):
    from pipeline.k_ranker_fit import EXTRA_FAMILIES, FAMILIES

    assert family in EXTRA_FAMILIES
    table, prefix = FAMILIES[family]
    (name, frame, y), (_, again, y2) = table(2), table(2)
    assert name == f"ranker_{family}_2" and prefix.startswith(f"{family}-v")
    assert frame.equals(again) and np.array_equal(y, y2) and len(frame) == len(y) >= 100
    assert len(np.unique(y)) >= 2 and not frame.equals(table(3)[1])


def test_the_job_reads_extra_tables_as_family_equals_count(tmp_path):
    from jobs.fit_k_ranker import parse_args

    args = parse_args(["--out", "x.pt", "--extra-tables", "shapes=1500", "coarse=20"])
    assert args.extra_tables == (("shapes", 1500), ("coarse", 20)) and args.extra_weight == 1
    assert parse_args(["--out", "x.pt", "--extra-tables", "shapes=9", "--extra-weight", "3"]).extra_weight == 3
    with pytest.raises(SystemExit):
        parse_args(["--out", "x.pt", "--extra-tables", "shapes"])


def test_the_tables_mix_clean_noisy_and_one_informative_priors():
    names = [train_table(i)[0] for i in range(4)]
    assert names == ["ranker_0", "ranker_1", "ranker_2", "ranker_3"]
    a, b = train_table(5), train_table(5)
    assert a[1].equals(b[1]) and np.array_equal(a[2], b[2])  # deterministic by index


def test_the_job_refuses_an_unusable_checkpoint(tmp_path, capsys):
    from jobs.fit_k_ranker import main

    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    assert main(["--checkpoint", str(bad), "--out", str(tmp_path / "o.pt")]) == 1
    assert "corrupt or not a TabClustPFN checkpoint" in capsys.readouterr().err
    assert main(["--checkpoint", str(bad), "--out", str(tmp_path / "o.pt"), "--tables", "5",
                 "--val-tables", "5"]) == 1
    assert "val_tables" in capsys.readouterr().err
    assert main(["--checkpoint", str(bad), "--out", str(tmp_path / "o.pt"), "--feature-set", "7"]) == 1
    assert "unknown feature_set 7" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse refuses a refine that is none of the candidates' stages
        main(["--out", str(tmp_path / "o.pt"), "--target", "none"])
    assert not (tmp_path / "o.pt").exists()


def test_a_continuation_starts_without_the_ranker(tmp_path, tiny_checkpoint):
    from pipeline.config import TrainConfig, adopt_init_checkpoint
    from pipeline.train_state import build_model

    parent, _ = load_checkpoint(tiny_checkpoint)
    ranked = TabClustNet(dataclasses.replace(parent.cfg, k_ranker=True))
    ranked.load_state_dict({**parent.state_dict(), **{f"k_ranker.{k}": v for k, v in KRanker().state_dict().items()}})
    path = tmp_path / "ranked.pt"
    save_checkpoint(path, ranked, {"steps": 0})
    cfg = adopt_init_checkpoint(TrainConfig(init_checkpoint=str(path), seed=5))
    assert not cfg.model.k_ranker
    net = build_model(cfg)
    assert net.k_ranker is None
    assert weights_sha256(net.state_dict()) == weights_sha256(parent.state_dict())
    assert torch.equal(net.cin.mlp[0].weight, parent.cin.mlp[0].weight)


def test_prior_variants_are_the_development_sets_nuisances():
    import pytest

    from pipeline.config import StreamConfig
    from pipeline.evaluation.suites import prior_variant

    base = StreamConfig().prior
    assert prior_variant(base, "prior") is base
    noisy, one = prior_variant(base, "noisy").nuisance, prior_variant(base, "one-informative").nuisance
    assert (noisy.p_noise_features, noisy.p_contamination) == (0.5, 0.3)
    assert (one.p_noise_features, one.noise_fraction, one.min_informative) == (1.0, (0.5, 0.9), 1)
    coarse = prior_variant(base, "coarse").nuisance
    assert coarse.p_discrete == 1.0 and coarse.p_noise_features == coarse.p_contamination == 0.0
    with pytest.raises(ValueError, match="unknown prior variant 'dev'"):
        prior_variant(base, "dev")


@needs_dev_suite
def test_the_temperatures_growth_on_tables_with_few_distinct_values_is_fitted_on_the_dev_suite(tmp_path,
                                                                                               tiny_checkpoint):
    cfg = RankerFitConfig(checkpoint=tiny_checkpoint, out=str(tmp_path / "ranked.pt"),
                          records_dir=str(tmp_path / "records"), tables=8, val_tables=2, epochs=5, workers=1)
    summary = fit_k_ranker(cfg)
    net, meta = load_checkpoint(cfg.out)
    dev = meta["lineage"][-1]["k_ranker"]["dev_calibration"]
    assert dev["tables"] == 23 == summary["dev"]["tables"] and dev["distinct_median"] < 1.0  # rounded real tables
    assert net.cfg.k_ranker_temperature_slope == pytest.approx(dev["slope"]) and dev["slope"] >= 0
    assert set(dev["before"]) == set(dev["after"]) >= {"top_right", "ece", "set_covered"}
    out = calibrate_k_ranker(cfg.out, str(tmp_path / "recal.pt"), records_dir=cfg.records_dir, tables=8,
                             val_tables=2, workers=1)
    assert out["dev"]["slope"] == pytest.approx(dev["slope"])  # the same records, the same fit
    assert "development tables" in load_checkpoint(tmp_path / "recal.pt")[1]["lineage"][-1]["what"]


def test_the_dev_suite_splits_into_two_alternating_folds_in_name_order():
    from pipeline.k_ranker_fit import dev_folds

    assert dev_folds(["c", "a", "d", "b"]) == {"a": 0, "b": 1, "c": 0, "d": 1}


@needs_dev_suite
def test_the_dev_suites_folds_are_those_its_derived_families_draw_from():
    from pipeline.evaluation.suites import dev_suite
    from pipeline.k_ranker_fit import dev_derived_origin, dev_derived_table, dev_folds, dev_suite_folds

    folds = dev_suite_folds()
    assert folds == dev_folds([d.name for d in dev_suite()]) and len(folds) == 23
    for fold in (0, 1):
        assert {folds[dev_derived_origin(dev_derived_table(i, fold)[0])[1]] for i in range(10)} == {fold}


@needs_dev_suite
@pytest.mark.parametrize("fold", [0, 1, None])
def test_dev_derived_tables_are_real_rows_of_two_or_more_classes_of_one_folds_tables(fold):
    from pipeline.evaluation.suites import dev_suite
    from pipeline.k_ranker_fit import EXTRA_FAMILIES, FAMILIES, dev_derived_origin, dev_derived_table, dev_folds

    family = "dev-derived" if fold is None else f"dev-derived-{fold}"
    assert family in EXTRA_FAMILIES and FAMILIES[family][1].startswith(f"{family}-v")
    suite = dev_suite()
    folds = dev_folds([d.name for d in suite])
    sources = [d for d in suite if fold is None or folds[d.name] == fold]
    assert 11 <= len(sources) <= 23
    (name, frame, y), (_, again, y2) = dev_derived_table(4, fold), FAMILIES[family][0](4)
    assert frame.equals(again) and np.array_equal(y, y2) and name.startswith("dev_derived_")
    seen_k, subsets = set(), 0
    for i in range(12):
        name, frame, y = dev_derived_table(i, fold)
        k = len(np.unique(y))
        assert k >= 2 and np.array_equal(np.unique(y), np.arange(k)) and len(frame) == len(y) >= 20
        # the rows are one source table's (its columns or some of them), with k <= its number of classes
        owners = [d for d in sources if set(frame.columns) <= set(d.features.columns)
                  and any(d.features[frame.columns].iloc[j].equals(frame.iloc[0]) for j in range(len(d.y)))]
        assert owners, f"{name} is no table of the fold's"
        fold_named, source_name = dev_derived_origin(name)
        assert fold_named == fold and source_name in [d.name for d in owners]  # its name says where it came from
        source = next(d for d in owners if d.name == source_name)
        assert k <= len(np.unique(source.y)) and len(frame.columns) >= 2
        subsets += len(frame.columns) < len(source.features.columns)
        seen_k.add(k)
    assert subsets >= 1 and len(seen_k) >= 2  # columns dropped on some tables, K varies
