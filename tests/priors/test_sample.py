"""priors.sample: dataset-level distribution, normalisation, permutation, validity and determinism."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from priors import PriorConfig, sample_dataset, spec_for_seed
from priors.gmm import GMMParams, bayes_labels

N_SPECS = 6000


@pytest.fixture(scope="module")
def specs():
    return [spec_for_seed(seed) for seed in range(N_SPECS)]


def test_n_rows_is_uniform(specs):
    counts = np.bincount([s.n_rows - 500 for s in specs], minlength=501)
    assert counts.size == 501
    assert stats.chisquare(counts).pvalue > 1e-3


def test_n_features_is_uniform(specs):
    counts = np.bincount([s.n_features - 2 for s in specs], minlength=63)
    assert counts.size == 63
    assert stats.chisquare(counts).pvalue > 1e-3


def test_n_clusters_puts_0_3_on_two_and_spreads_the_rest(specs):
    counts = np.bincount([s.n_clusters for s in specs], minlength=11)[2:]
    expected = np.array([0.3] + [0.7 / 8] * 8) * N_SPECS
    assert counts.size == 9
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_mechanism_is_gmm_with_probability_0_4(specs):
    n_gmm = sum(s.mechanism == "gmm" for s in specs)
    assert stats.binomtest(n_gmm, N_SPECS, 0.4).pvalue > 1e-3


def test_kind_forces_the_mechanism_but_keeps_n_d_k():
    for seed in range(20):
        mix = spec_for_seed(seed)
        for kind in ("gmm", "zeus"):
            forced = spec_for_seed(seed, kind)
            assert forced.mechanism == kind
            assert (forced.n_rows, forced.n_features, forced.n_clusters) == (mix.n_rows, mix.n_features, mix.n_clusters)


@pytest.fixture(scope="module")
def datasets():
    config = replace(PriorConfig(), n_rows=(60, 200))
    return [(seed, sample_dataset(seed, config=config), config) for seed in range(60)]


def test_datasets_match_their_spec_and_are_well_formed(datasets):
    for seed, ds, config in datasets:
        spec = spec_for_seed(seed, config=config)
        assert ds.X.shape == (spec.n_rows, spec.n_features) and ds.X.dtype == np.float32
        assert ds.y.shape == (spec.n_rows,) and ds.y.dtype == np.int64
        assert ds.n_clusters == spec.n_clusters and ds.meta["mechanism"] == spec.mechanism
        assert np.array_equal(np.unique(ds.y), np.arange(ds.n_clusters))
        assert ds.meta["seed"] == seed


def test_no_nan_inf_or_constant_column(datasets):
    for _, ds, _ in datasets:
        assert np.isfinite(ds.X).all()
        assert np.all(np.ptp(ds.X, axis=0) > 0)


def test_continuous_columns_are_z_normalised_and_categorical_hold_codes(datasets):
    n_categorical = 0
    for _, ds, _ in datasets:
        cat = np.zeros(ds.X.shape[1], dtype=bool)
        cat[list(ds.categorical)] = True
        cont = ds.X[:, ~cat].astype(np.float64)
        assert np.allclose(cont.mean(axis=0), 0.0, atol=1e-5)
        assert np.allclose(cont.std(axis=0), 1.0, atol=1e-4)
        assert len(ds.meta["cardinalities"]) == len(ds.categorical)
        for j, card in zip(ds.categorical, ds.meta["cardinalities"]):
            assert 2 <= card <= 5
            assert np.array_equal(np.unique(ds.X[:, j]), np.arange(card, dtype=np.float32))
        n_categorical += len(ds.categorical)
        if ds.meta["mechanism"] == "gmm":
            assert ds.categorical == ()
    assert n_categorical > 0


def test_features_are_permuted():
    """Categorical columns of ZEUS datasets are not always the last ones."""
    last = []
    for seed in range(30):
        ds = sample_dataset(seed, kind="zeus", config=replace(PriorConfig(), n_rows=(50, 60), n_features=(8, 12)))
        if ds.categorical:
            last.append(ds.categorical == tuple(range(ds.X.shape[1] - len(ds.categorical), ds.X.shape[1])))
    assert last and not all(last)


def test_gmm_meta_parameters_live_in_the_coordinates_of_x(datasets):
    checked = 0
    for _, ds, config in datasets:
        if ds.meta["mechanism"] != "gmm":
            continue
        p = ds.meta["params"]
        assert abs(ds.meta["omega_achieved"] - ds.meta["omega_target"]) <= 1e-4
        params = GMMParams(p["weights"], p["means"], p["covariances"], False, False)
        again = bayes_labels(ds.X.astype(np.float64), params)
        assert np.mean(again == ds.meta["bayes_labels"]) > 0.99  # float32 rounding may flip a boundary point
        checked += 1
    assert checked > 5


def test_same_seed_gives_the_same_dataset_and_other_seeds_differ():
    for kind in ("mix", "gmm", "zeus"):
        a, b = sample_dataset(7, kind=kind), sample_dataset(7, kind=kind)
        assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y) and a.categorical == b.categorical
        assert a.meta.keys() == b.meta.keys()
        c = sample_dataset(8, kind=kind)
        assert a.X.shape != c.X.shape or not np.array_equal(a.X, c.X)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="seed"):
        sample_dataset(-1)
    with pytest.raises(ValueError, match="seed"):
        sample_dataset(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kind"):
        sample_dataset(0, kind="tabpfn")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="PriorConfig"):
        sample_dataset(0, config={"p_gmm": 1.0})  # type: ignore[arg-type]


def test_importing_priors_pulls_in_neither_ray_nor_mlflow():
    code = (
        "import sys, priors, priors.overlap, priors.gmm, priors.zeus, priors.sample, priors.plotting\n"
        "priors.sample_dataset(0)\n"
        "bad = [m for m in ('ray', 'mlflow', 'matplotlib') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2], timeout=120)
