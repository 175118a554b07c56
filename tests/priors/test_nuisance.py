"""priors.nuisance: noise columns and contaminated rows on top of the paper's prior (off by default)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from priors import PriorConfig, ZeusConfig, sample_dataset, spec_for_seed
from priors.config import NuisanceConfig
from priors.nuisance import noise_columns, nuisance_rng, plan_nuisance

SMALL = replace(PriorConfig(), n_rows=(200, 300), n_features=(4, 12))
NOISE = replace(SMALL, nuisance=NuisanceConfig(p_noise_features=1.0))
CONTAMINATED = replace(SMALL, nuisance=NuisanceConfig(p_contamination=1.0, contamination_fraction=(0.05, 0.05)))


def _numeric(ds) -> list[int]:
    return [j for j in range(ds.X.shape[1]) if j not in ds.categorical]


def test_off_by_default_and_zero_probabilities_give_the_papers_draws():
    assert not PriorConfig().nuisance.enabled
    zero = replace(SMALL, nuisance=NuisanceConfig(p_noise_features=0.0, p_contamination=0.0))
    for seed in range(5):
        a, b = sample_dataset(seed, config=SMALL), sample_dataset(seed, config=zero)
        np.testing.assert_array_equal(a.X, b.X)
        np.testing.assert_array_equal(a.y, b.y)
        assert b.meta["noise_columns"] == () and b.meta["contaminated_rows"] == ()


def test_with_nuisances_on_a_table_whose_plan_draws_none_is_the_papers_table():
    some = replace(SMALL, nuisance=NuisanceConfig(p_noise_features=0.3, p_contamination=0.3))
    inactive = 0
    for seed in range(40):
        plan = plan_nuisance(nuisance_rng(seed), 1, 1, some.nuisance)  # the draws that decide: N and D aside
        ds = sample_dataset(seed, config=some)
        if ds.meta["noise_columns"] or ds.meta["contaminated_rows"]:
            continue
        assert plan.n_contaminated == 0
        inactive += 1
        paper = sample_dataset(seed, config=SMALL)
        np.testing.assert_array_equal(ds.X, paper.X)
        np.testing.assert_array_equal(ds.y, paper.y)
        assert ds.categorical == paper.categorical
    assert 10 < inactive < 30  # about 0.7 * 0.7 of the seeds


@pytest.mark.parametrize("config", [NOISE, CONTAMINATED], ids=["noise", "contaminated"])
def test_nuisances_keep_each_seeds_n_d_k_and_mechanism(config):
    for seed in range(8):
        plain, spec = sample_dataset(seed, config=SMALL), spec_for_seed(seed, config=SMALL)
        ds = sample_dataset(seed, config=config)
        assert ds.X.shape == plain.X.shape == (spec.n_rows, spec.n_features)
        assert ds.n_clusters == spec.n_clusters and ds.meta["mechanism"] == spec.mechanism
        assert np.array_equal(np.unique(ds.y), np.arange(spec.n_clusters))


def test_noise_columns_are_numeric_normalised_and_carry_no_cluster_information():
    for seed in range(12):
        ds = sample_dataset(seed, config=NOISE)
        noise = list(ds.meta["noise_columns"])
        d = ds.X.shape[1]
        assert 1 <= len(noise) <= d - 2  # two columns of the paper's table stay
        assert not set(noise) & set(ds.categorical)
        assert ds.meta["n_continuous"] == d - len(ds.categorical)
        assert ds.meta["params"] is None  # the GMM's mixture no longer describes X
        cols = ds.X[:, noise].astype(np.float64)
        np.testing.assert_allclose(cols.mean(0), 0.0, atol=1e-5)
        np.testing.assert_allclose(cols.std(0), 1.0, atol=1e-4)
        # share of each noise column's variance between clusters: ~ (K - 1) / N for columns unrelated to y
        means = np.stack([cols[ds.y == c].mean(0) for c in range(ds.n_clusters)])
        sizes = np.bincount(ds.y)[:, None]
        between = (sizes * means**2).sum(0) / len(ds.y)
        assert between.max() < 0.15, (seed, between)


def test_noise_families_all_occur_and_discrete_columns_take_few_levels():
    cols = noise_columns(np.random.default_rng(0), 2000, 200)
    assert np.all(np.isfinite(cols))
    levels = np.array([len(np.unique(c)) for c in cols.T])
    skew, kurtosis = (cols**3).mean(0), (cols**4).mean(0)
    discrete = levels <= 6
    lognormal = ~discrete & (skew > 1.0)
    uniform = ~discrete & ~lognormal & (kurtosis < 2.2)  # 1.8 for a uniform, 3 for a Gaussian
    gaussian = ~discrete & ~lognormal & (np.abs(kurtosis - 3.0) < 0.5) & (np.abs(skew) < 0.3)
    assert np.all(levels >= 2)
    for family in (discrete, lognormal, uniform, gaussian):
        assert 30 < family.sum() < 70  # a quarter of 200 each
    assert (discrete | lognormal | uniform | gaussian).all()


def test_noise_columns_keep_zeus_categorical_columns_and_their_cardinalities_aligned():
    zeus = replace(NOISE, n_features=(8, 16))
    seen = 0
    for seed in range(30):
        ds = sample_dataset(seed, kind="zeus", config=zeus)
        if not ds.categorical:
            continue
        seen += 1
        assert len(ds.meta["cardinalities"]) == len(ds.categorical)
        for j, card in zip(ds.categorical, ds.meta["cardinalities"]):
            codes = ds.X[:, j]
            assert np.array_equal(codes, np.round(codes)) and codes.min() >= 0 and codes.max() < card
    assert seen >= 10


def test_a_zeus_table_keeps_the_continuous_columns_its_mechanism_needs():
    cfg = replace(PriorConfig(), n_rows=(100, 120), n_features=(4, 6), zeus=ZeusConfig(min_cont_features=4),
                  nuisance=NuisanceConfig(p_noise_features=1.0, noise_fraction=(0.4, 0.5)))
    for seed in range(10):
        ds = sample_dataset(seed, kind="zeus", config=cfg)
        assert ds.X.shape[1] - len(ds.meta["noise_columns"]) >= 4


def test_contaminated_rows_keep_their_cluster_and_move_out_from_its_centre():
    cfg = CONTAMINATED.nuisance
    for seed in range(6):
        plain, ds = sample_dataset(seed, config=SMALL), sample_dataset(seed, config=CONTAMINATED)
        np.testing.assert_array_equal(ds.y, plain.y)
        rows = np.array(ds.meta["contaminated_rows"])
        assert len(rows) == round(0.05 * len(ds.y))
        num = _numeric(ds)
        x0, x1 = plain.X[:, num].astype(np.float64), ds.X[:, num].astype(np.float64)
        # the other rows are only re-normalised: one affine map per column takes the paper's values to these
        keep = np.setdiff1d(np.arange(len(ds.y)), rows)
        scale = x1[keep].std(0) / x0[keep].std(0)
        shift = x1[keep].mean(0) - scale * x0[keep].mean(0)
        np.testing.assert_allclose(x1[keep], scale * x0[keep] + shift, atol=1e-4)
        back = (x1[rows] - shift) / scale  # the moved rows in the paper's coordinates
        centres = np.stack([x0[ds.y == c].mean(0) for c in range(ds.n_clusters)])[ds.y[rows]]
        ratio = np.linalg.norm(back - centres, axis=1) / np.linalg.norm(x0[rows] - centres, axis=1)
        lo, hi = cfg.contamination_scale
        assert np.all((ratio > lo - 1e-3) & (ratio < hi + 1e-3)), ratio
        assert ds.meta["bayes_labels"] is None
        # the numeric columns are normalised again; categorical codes are untouched
        np.testing.assert_allclose(x1.mean(0), 0.0, atol=1e-5)
        np.testing.assert_allclose(x1.std(0), 1.0, atol=1e-4)
        cat = list(ds.categorical)
        np.testing.assert_array_equal(ds.X[:, cat], plain.X[:, cat])


def test_rows_of_a_one_row_cluster_are_never_picked_to_move():
    cfg = replace(PriorConfig(), n_rows=(10, 10), n_features=(3, 3), n_clusters=(10, 10), min_cluster_size=1,
                  nuisance=NuisanceConfig(p_contamination=1.0, contamination_fraction=(0.5, 0.5)))
    for seed in range(5):
        ds = sample_dataset(seed, kind="gmm", config=cfg)
        assert ds.meta["contaminated_rows"] == ()  # ten clusters of one row: nothing can move
        np.testing.assert_array_equal(ds.X, sample_dataset(seed, kind="gmm", config=replace(
            cfg, nuisance=NuisanceConfig())).X)


def test_plan_draws_within_its_ranges_and_noise_needs_three_columns():
    cfg = NuisanceConfig(p_noise_features=1.0, noise_fraction=(0.2, 0.4), p_contamination=1.0,
                         contamination_fraction=(0.01, 0.02))
    rng = np.random.default_rng(1)
    for _ in range(200):
        plan = plan_nuisance(rng, 1000, 40, cfg)
        assert 8 <= plan.n_noise <= 16 and 10 <= plan.n_contaminated <= 20
    assert plan_nuisance(rng, 1000, 2, cfg).n_noise == 0
    assert plan_nuisance(np.random.default_rng(1), 1000, 5, cfg, min_informative=5).n_noise == 0
    assert plan_nuisance(np.random.default_rng(1), 1000, 40, cfg, min_informative=36).n_noise == 4
    half = NuisanceConfig(p_noise_features=0.5)
    share = np.mean([plan_nuisance(rng, 500, 20, half).n_noise > 0 for _ in range(2000)])
    assert 0.45 < share < 0.55


@pytest.mark.parametrize(("change", "match"), [
    ({"p_noise_features": 1.5}, "p_noise_features"),
    ({"p_contamination": -0.1}, "p_contamination"),
    ({"noise_fraction": (0.0, 0.5)}, "noise_fraction"),
    ({"noise_fraction": (0.2, 1.0)}, "noise_fraction"),
    ({"contamination_fraction": (0.01, 0.6)}, "contamination_fraction"),
    ({"contamination_scale": (0.5, 2.0)}, "contamination_scale"),
    ({"contamination_scale": (1.0, 1.0)}, "contamination_scale"),
    ({"contamination_scale": (3.0, 1e300)}, "contamination_scale"),
    ({"min_informative": 0}, "min_informative"),
])
def test_bad_nuisance_settings_are_refused_naming_the_field(change, match):
    with pytest.raises(ValueError, match=match):
        NuisanceConfig(**change)
    with pytest.raises(TypeError, match="nuisance"):
        PriorConfig(nuisance={"p_contamination": 0.5})  # type: ignore[arg-type]



def test_min_informative_one_draws_gmm_tables_whose_clusters_live_in_one_column_beside_noise():
    """The case the paper's prior never draws: every column but one is noise. The labels then depend on that
    column only, and the default (2) leaves every seed's table as it was."""
    one = replace(SMALL, n_features=(2, 6), nuisance=NuisanceConfig(p_noise_features=1.0, noise_fraction=(0.6, 0.95),
                                                                   min_informative=1))
    seen = 0
    for seed in range(60):
        ds = sample_dataset(seed, kind="gmm", config=one)
        informative = [j for j in range(ds.X.shape[1]) if j not in ds.meta["noise_columns"]]
        assert len(informative) >= 1
        if len(informative) == 1:
            seen += 1
            x = ds.X[:, informative[0]]
            assert np.ptp([x[ds.y == k].mean() for k in np.unique(ds.y)]) > 0.5  # the clusters differ there
    assert seen >= 5
    for seed in range(5):
        np.testing.assert_array_equal(sample_dataset(seed, kind="gmm", config=NOISE).X, sample_dataset(
            seed, kind="gmm", config=replace(NOISE, nuisance=NuisanceConfig(p_noise_features=1.0,
                                                                            min_informative=2))).X)


COARSE = replace(SMALL, nuisance=NuisanceConfig(p_discrete=1.0))


def test_coarse_columns_change_no_other_draw_of_the_seed():
    both = replace(SMALL, nuisance=NuisanceConfig(p_noise_features=1.0, p_contamination=1.0, p_discrete=1.0))
    for seed in range(8):
        a, b = sample_dataset(seed, config=replace(both, nuisance=replace(both.nuisance, p_discrete=0.0))), \
            sample_dataset(seed, config=both)
        np.testing.assert_array_equal(a.y, b.y)
        assert a.meta["noise_columns"] == b.meta["noise_columns"]
        assert a.meta["contaminated_rows"] == b.meta["contaminated_rows"]
        coarse = set(b.meta["discrete_columns"])
        assert coarse and not coarse & set(b.meta["noise_columns"]) and not coarse & set(b.categorical)
        same = [j for j in range(a.X.shape[1]) if j not in coarse]
        np.testing.assert_array_equal(a.X[:, same], b.X[:, same])  # every other column as it was


def test_coarse_columns_take_few_values_keep_their_order_and_drop_the_mixture():
    from scipy.stats import spearmanr

    plain = replace(SMALL, p_gmm=1.0)
    coarse = replace(plain, nuisance=NuisanceConfig(p_discrete=1.0, discrete_levels=(2, 6)))
    distinct, rho = [], []
    for seed in range(20):
        a, b = sample_dataset(seed, config=plain), sample_dataset(seed, config=coarse)
        cols = b.meta["discrete_columns"]
        lo, hi = coarse.nuisance.discrete_fraction
        d = len(_numeric(b))
        assert max(1, int(np.floor(lo * d))) <= len(cols) <= int(np.ceil(hi * d))
        assert b.meta["params"] is None and b.meta["bayes_labels"] is None and a.meta["params"] is not None
        for j in cols:
            col = b.X[:, j].astype(np.float64)
            assert abs(col.mean()) < 1e-5 and abs(col.std() - 1.0) < 1e-4
            distinct.append(len(np.unique(col)))
            rho.append(spearmanr(a.X[:, j], col)[0])
    # ordinal and rounded columns hold at most 6 levels; counts a few more
    assert np.median(distinct) <= 6 and max(distinct) < 60
    assert np.median(rho) > 0.8  # a coarse reading of the same values, in the same order (counts: noisily)


def test_every_measurement_occurs_and_half_the_tables_at_p_one_half():
    from priors.nuisance import MEASUREMENTS, discretise

    rng = np.random.default_rng(0)
    x = rng.standard_normal((400, 30))
    _, cols = discretise(rng, x, NuisanceConfig(p_discrete=1.0, discrete_fraction=(1.0, 1.0)))
    assert cols == list(range(30))
    out, _ = discretise(np.random.default_rng(1), x, NuisanceConfig(p_discrete=1.0, discrete_fraction=(1.0, 1.0),
                                                                    discrete_levels=(3, 3)))
    counts = [len(np.unique(out[:, j])) for j in range(30)]
    assert 3 in counts and max(counts) > 3  # ordinal or rounded at 3 levels, and counts
    assert len(MEASUREMENTS) == 3
    half = replace(SMALL, nuisance=NuisanceConfig(p_discrete=0.5))
    share = np.mean([bool(sample_dataset(s, config=half).meta["discrete_columns"]) for s in range(60)])
    assert 0.3 < share < 0.7


@pytest.mark.parametrize("change, match", [({"p_discrete": 1.5}, "p_discrete"),
                                           ({"discrete_fraction": (0.0, 0.5)}, "discrete_fraction"),
                                           ({"discrete_levels": (1, 4)}, "discrete_levels")])
def test_bad_coarse_settings_are_refused(change, match):
    with pytest.raises(ValueError, match=match):
        NuisanceConfig(**change)


SKEWED = replace(SMALL, p_gmm=1.0, nuisance=NuisanceConfig(p_skewed=1.0))


def test_skewed_columns_change_no_other_draw_of_the_seed():
    both = replace(SMALL, nuisance=NuisanceConfig(p_noise_features=1.0, p_contamination=1.0, p_discrete=1.0,
                                                  p_skewed=1.0))
    for seed in range(8):
        a = sample_dataset(seed, config=replace(both, nuisance=replace(both.nuisance, p_skewed=0.0)))
        b = sample_dataset(seed, config=both)
        np.testing.assert_array_equal(a.y, b.y)
        assert a.meta["noise_columns"] == b.meta["noise_columns"]
        assert a.meta["contaminated_rows"] == b.meta["contaminated_rows"]
        assert a.meta["discrete_columns"] == b.meta["discrete_columns"]  # the coarse draws are their own stream
        skewed = set(b.meta["skewed_columns"])
        assert skewed and not skewed & set(b.meta["noise_columns"]) and not skewed & set(b.categorical)
        same = [j for j in range(a.X.shape[1]) if j not in skewed]
        np.testing.assert_array_equal(a.X[:, same], b.X[:, same])  # every other column as it was


def test_skewed_columns_get_a_long_right_tail_in_the_same_order_and_drop_the_mixture():
    from scipy.stats import skew, spearmanr

    plain = replace(SKEWED, nuisance=NuisanceConfig())
    before, after = [], []
    for seed in range(20):
        a, b = sample_dataset(seed, config=plain), sample_dataset(seed, config=SKEWED)
        cols = b.meta["skewed_columns"]
        lo, hi = SKEWED.nuisance.skewed_fraction
        d = len(_numeric(b))
        assert max(1, int(np.floor(lo * d))) <= len(cols) <= int(np.ceil(hi * d))
        assert b.meta["params"] is None and b.meta["bayes_labels"] is None and a.meta["params"] is not None
        for j in cols:
            col = b.X[:, j].astype(np.float64)
            assert abs(col.mean()) < 1e-5 and abs(col.std() - 1.0) < 1e-4
            assert spearmanr(a.X[:, j], col)[0] > 0.999  # a monotone reading of the same values
            before.append(skew(a.X[:, j])), after.append(skew(col))
    assert np.median(after) > np.median(before) + 0.5  # a right tail that the plain columns lack


@pytest.mark.parametrize("change, match", [({"p_skewed": -0.1}, "p_skewed"),
                                           ({"skewed_fraction": (0.0, 0.5)}, "skewed_fraction"),
                                           ({"skew_strength": (0.0, 1.0)}, "skew_strength"),
                                           ({"skew_strength": (0.5, 5.0)}, "skew_strength")])
def test_bad_skew_settings_are_refused(change, match):
    with pytest.raises(ValueError, match=match):
        NuisanceConfig(**change)
