import numpy as np
import pytest

from priors import sample_dataset
from priors.regimes import AMORTIZED_N_ROWS, amortized_prior, cluster_pfn_prior, regime_prior


def test_amortized_draws_are_2d_full_covariance_mixtures_with_k_up_to_10():
    cfg = amortized_prior()
    draws = [sample_dataset(s, kind="gmm", config=cfg) for s in range(60)]
    assert all(d.X.shape[1] == 2 for d in draws)
    assert all(AMORTIZED_N_ROWS[0] <= d.X.shape[0] <= AMORTIZED_N_ROWS[1] for d in draws)
    ks = np.array([d.n_clusters for d in draws])
    assert ks.min() >= 2 and ks.max() <= 10 and len(np.unique(ks)) >= 6  # K varies over the whole range
    assert cfg.gmm.p_spherical == 0.0


@pytest.mark.parametrize("d", [2, 3, 4, 5])
def test_cluster_pfn_regime_has_exactly_d_features_and_500_rows(d):
    ds = sample_dataset(7, kind="gmm", config=cluster_pfn_prior(d))
    assert ds.X.shape == (500, d) and 2 <= ds.n_clusters <= 10


def test_unknown_regime_names_the_known_ones():
    with pytest.raises(ValueError, match="amortized"):
        regime_prior("nope")
    assert regime_prior("cluster-pfn").n_features == (2, 5)
