"""Narrow priors of the paper's controlled comparisons, as :class:`PriorConfig` values.

- :func:`amortized_prior`: the amortized-clustering regime (paper Sec. 5 "Comparison with amortized clustering",
  App. "Amortized clustering experiments details"): 2-D overlap-controlled Gaussian mixtures with full
  (rotated, correlated) covariances, K up to 10 varying within a batch. N follows the DAC/NCP setup the paper
  says it follows (100-500 points per set); K is uniform on 2..10 (this prior has no K = 1 draws).
- :func:`cluster_pfn_prior`: the Cluster-PFN regime (paper App. "Comparison with Cluster-PFN"): the paper's GMM
  prior at D features (2..5 there), N = 500, unknown K up to 10.

Both are drawn with ``kind="gmm"``; ``REGIMES`` names them for command lines (``--regime amortized``).
"""

from __future__ import annotations

import dataclasses

from priors.config import PriorConfig

__all__ = ["AMORTIZED_N_ROWS", "REGIMES", "amortized_prior", "cluster_pfn_prior", "regime_prior"]

#: Points per set in the amortized regime (DAC/NCP's 2-D mixtures).
AMORTIZED_N_ROWS = (100, 500)
_K_MAX = 10


def amortized_prior() -> PriorConfig:
    """2-D GMMs with full covariances (never spherical), N 100-500, K uniform on 2..10."""
    base = PriorConfig()
    return dataclasses.replace(
        base, n_rows=AMORTIZED_N_ROWS, n_features=(2, 2), n_clusters=(2, _K_MAX), p_k_min=1.0 / (_K_MAX - 1),
        p_gmm=1.0, gmm=dataclasses.replace(base.gmm, p_spherical=0.0))


def cluster_pfn_prior(n_features: int, n_rows: int = 500) -> PriorConfig:
    """The paper's GMM prior at exactly ``n_features`` features and ``n_rows`` rows, K uniform on 2..10."""
    if not 2 <= n_features:
        raise ValueError(f"the Cluster-PFN regime needs n_features >= 2, got {n_features}")
    return dataclasses.replace(PriorConfig(), n_rows=(n_rows, n_rows), n_features=(n_features, n_features),
                               n_clusters=(2, _K_MAX), p_k_min=1.0 / (_K_MAX - 1), p_gmm=1.0)


#: Regime name -> its prior (the Cluster-PFN regime pools D = 2..5 for training).
REGIMES = {
    "amortized": amortized_prior,
    "cluster-pfn": lambda: dataclasses.replace(cluster_pfn_prior(2), n_features=(2, 5)),
}


def regime_prior(name: str) -> PriorConfig:
    """The :class:`PriorConfig` of regime ``name`` (one of :data:`REGIMES`)."""
    try:
        return REGIMES[name]()
    except KeyError:
        raise ValueError(f"unknown regime {name!r}: choose one of {', '.join(REGIMES)}") from None
