"""Configuration of the synthetic priors: every range and probability of the paper's App. A.1 is a field here.

The defaults reproduce the paper. Ablations override fields with :func:`dataclasses.replace`, e.g. a GMM-only
prior is ``replace(PriorConfig(), p_gmm=1.0)`` and smaller tasks ``replace(PriorConfig(), n_rows=(100, 200))``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

__all__ = ["GMMConfig", "ZeusConfig", "NuisanceConfig", "PriorConfig"]


def _check_range(name: str, value: tuple, low: float | None = None, *, integer: bool = False) -> None:
    """A (min, max) pair with min <= max (and min >= low when given)."""
    if not (isinstance(value, tuple) and len(value) == 2):
        raise ValueError(f"{name} must be a (min, max) tuple, got {value!r}")
    if integer and not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{name} must hold integers, got {value!r}")
    if not all(isinstance(v, numbers.Real) and math.isfinite(v) for v in value):
        raise ValueError(f"{name} must hold finite numbers, got {value!r}")
    if not value[0] <= value[1]:
        raise ValueError(f"{name} must satisfy min <= max, got {value!r}")
    if low is not None and value[0] < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}")


def _check_int(name: str, value: int, low: int) -> None:
    """An integer (not a bool) >= low."""
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= low):
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def _check_probability(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")


@dataclass(frozen=True)
class GMMConfig:
    """MixSim-style Gaussian mixtures with a controlled maximum pairwise overlap.

    Attributes
    ----------
    omega_min : float
        Lower end of the target Omega_max ~ U[omega_min, min(omega_cap, omega_dim_coef / D ** omega_dim_exp)].
    omega_cap, omega_dim_coef, omega_dim_exp : float
        The dimension-dependent upper end (0.8, 1.5, 0.82 in the paper).
    p_spherical : float
        P(covariances are multiples of the identity), else ellipsoidal.
    p_homoscedastic : float
        P(all components share one covariance).
    max_eccentricity : float
        Ellipsoidal covariances are flattened to sqrt(1 - lambda_min / lambda_max) <= this (MixSim's ecc).
    mean_range : tuple of float
        Means are uniform in this interval in every coordinate.
    dirichlet_alpha : float
        Mixing proportions are ``min_weight + (1 - K min_weight) w`` with ``w ~ Dirichlet(alpha)``, so every
        proportion is at least ``min_weight`` (all equal when ``K min_weight >= 1``).
    min_weight : float
        MixSim's PiLow.
    omega_tol : float
        The achieved Omega_max is within this of the target.
    overlap_tol : float
        Accuracy of every overlap probability (numerical inversion).
    max_redraws : int
        Candidate mixtures tried for one target before the target itself is redrawn (MixSim's resN).
    """

    omega_min: float = 0.01
    omega_cap: float = 0.8
    omega_dim_coef: float = 1.5
    omega_dim_exp: float = 0.82
    p_spherical: float = 0.5
    p_homoscedastic: float = 0.5
    max_eccentricity: float = 0.9
    mean_range: tuple[float, float] = (-1.0, 1.0)
    dirichlet_alpha: float = 2.0
    min_weight: float = 0.1
    omega_tol: float = 1e-6
    overlap_tol: float = 1e-9
    max_redraws: int = 100

    def __post_init__(self) -> None:
        if not 0.0 < self.omega_min <= self.omega_cap < 1.0:
            raise ValueError(f"need 0 < omega_min <= omega_cap < 1, got {self.omega_min}, {self.omega_cap}")
        if self.omega_dim_coef <= 0.0 or self.omega_dim_exp < 0.0:
            raise ValueError("omega_dim_coef must be positive and omega_dim_exp non-negative")
        _check_probability("p_spherical", self.p_spherical)
        _check_probability("p_homoscedastic", self.p_homoscedastic)
        if not 0.0 < self.max_eccentricity < 1.0:
            raise ValueError(f"max_eccentricity must be in (0, 1), got {self.max_eccentricity}")
        _check_range("mean_range", self.mean_range)
        if self.mean_range[0] == self.mean_range[1]:
            raise ValueError("mean_range must be a non-empty interval")
        if not 0.0 < self.dirichlet_alpha < math.inf:
            raise ValueError(f"dirichlet_alpha must be positive and finite, got {self.dirichlet_alpha}")
        if not 0.0 <= self.min_weight < 1.0:
            raise ValueError(f"min_weight must be in [0, 1), got {self.min_weight}")
        if not 0.0 < self.overlap_tol <= self.omega_tol < 1e-2:
            raise ValueError("need 0 < overlap_tol <= omega_tol < 0.01")
        _check_int("max_redraws", self.max_redraws, 1)

    def omega_upper(self, n_features: int) -> float:
        """Upper end of the target range for D features: min(omega_cap, coef / D ** exp), at least omega_min."""
        return max(self.omega_min, min(self.omega_cap, self.omega_dim_coef / n_features**self.omega_dim_exp))


@dataclass(frozen=True)
class ZeusConfig:
    """The ZEUS prior: separated Gaussian clusters, an optional random iResNet, categorical columns.

    Attributes
    ----------
    dirichlet_alpha : float
        Mixing proportions ~ Dirichlet(alpha).
    min_cont_features : int
        D_cont ~ U{min_cont_features..D}; the other D - D_cont columns are categorical.
    eigen_range : tuple of float
        Covariance eigenvalues are uniform in (low, high) ...
    p_wide_spectrum : float
        ... with probability p_wide_spectrum, else in (high - low, high) (nearly spherical).
    p_flatten : float
        P(a few directions (up to a third) get eigenvalues below ``eigen_range[0]``).
    w2_range : tuple of float
        Each new component keeps a squared 2-Wasserstein distance of at least U(w2_range) to the earlier ones.
    p_iresnet : float
        P(the continuous features pass through a random invertible residual network).
    lipschitz_range : tuple of float
        Lip(g) of every residual branch, h ~ U(lipschitz_range); must stay below 1.
    blocks_base : int
        Number of blocks b = blocks_base + round(b~), b~ ~ N(mu, sigma^2) truncated to [0, inf), ...
    blocks_mean_range, blocks_std_range : tuple of float
        ... log mu ~ U(log of blocks_mean_range), log sigma ~ U(log of blocks_std_range).
    hidden_factor : int
        Width of each residual branch as a multiple of D_cont.
    cardinality_range : tuple of int
        Categorical cardinality C_j ~ U{low..high}.
    category_alpha : float
        Each cluster's category probabilities ~ Dirichlet(category_alpha).
    """

    dirichlet_alpha: float = 2.0
    min_cont_features: int = 2
    eigen_range: tuple[float, float] = (0.005, 0.5)
    p_wide_spectrum: float = 0.25
    p_flatten: float = 0.2
    w2_range: tuple[float, float] = (0.5, 1.0)
    p_iresnet: float = 0.5
    lipschitz_range: tuple[float, float] = (0.1, 0.9)
    blocks_base: int = 3
    blocks_mean_range: tuple[float, float] = (3.0, 8.0)
    blocks_std_range: tuple[float, float] = (0.01, 1.0)
    hidden_factor: int = 4
    cardinality_range: tuple[int, int] = (2, 5)
    category_alpha: float = 0.5

    def __post_init__(self) -> None:
        if not (0.0 < self.dirichlet_alpha < math.inf and 0.0 < self.category_alpha < math.inf):
            raise ValueError("dirichlet_alpha and category_alpha must be positive and finite")
        _check_int("min_cont_features", self.min_cont_features, 1)
        _check_range("eigen_range", self.eigen_range, 0.0)
        if self.eigen_range[0] <= 0.0 or 2.0 * self.eigen_range[0] > self.eigen_range[1]:
            raise ValueError(f"eigen_range needs 0 < 2 low <= high, got {self.eigen_range}")
        _check_probability("p_wide_spectrum", self.p_wide_spectrum)
        _check_probability("p_flatten", self.p_flatten)
        _check_range("w2_range", self.w2_range, 0.0)
        _check_probability("p_iresnet", self.p_iresnet)
        _check_range("lipschitz_range", self.lipschitz_range, 0.0)
        if self.lipschitz_range[1] >= 1.0:
            raise ValueError(f"lipschitz_range must stay below 1 for invertibility, got {self.lipschitz_range}")
        _check_int("blocks_base", self.blocks_base, 0)
        _check_range("blocks_mean_range", self.blocks_mean_range, 1e-12)
        _check_range("blocks_std_range", self.blocks_std_range, 1e-12)
        _check_int("hidden_factor", self.hidden_factor, 1)
        _check_range("cardinality_range", self.cardinality_range, 2, integer=True)


@dataclass(frozen=True)
class NuisanceConfig:
    """Noise columns, contaminated rows and coarsely measured columns (:mod:`priors.nuisance`): not in the paper,
    off by default.

    Attributes
    ----------
    p_noise_features : float
        P(a table with D >= 3 has noise columns); 0 turns them off.
    noise_fraction : tuple of float
        Their share of the table's D columns ~ U(noise_fraction), rounded, at least 1, and at most D - 2.
    p_contamination : float
        P(a table has contaminated rows); 0 turns them off.
    contamination_fraction : tuple of float
        Their share of the N rows ~ U(contamination_fraction) (at least one row).
    contamination_scale : tuple of float
        Each contaminated row's distance from its cluster's centre is multiplied by lambda ~ U(this); low >= 1,
        1 < high <= 1000.
    min_informative : int
        Fewest columns of a GMM table that carry its clusters when it gets noise columns (>= 1; ZEUS tables keep
        ``zeus.min_cont_features``). 1 covers tables whose clusters live in one column beside noise ones.
    p_discrete : float
        P(a table's continuous columns are partly measured coarsely: ordinal levels, rounded values or counts);
        0 turns it off.
    discrete_fraction : tuple of float
        The share of the table's continuous cluster-carrying columns so measured ~ U(discrete_fraction), at least
        one column.
    discrete_levels : tuple of int
        An ordinal or rounded column's number of levels ~ U{discrete_levels} (>= 2).
    p_skewed : float
        P(a table's continuous columns are partly measured on a multiplicative scale: prices, amounts,
        concentrations); 0 turns it off.
    skewed_fraction : tuple of float
        The share of the table's continuous cluster-carrying columns so measured ~ U(skewed_fraction), at least one.
    skew_strength : tuple of float
        Such a column is ``exp(a z)`` of its z-scores z, a ~ U(skew_strength) (> 0; a = 1: log-normal with
        sigma 1 where z is Gaussian).
    """

    p_noise_features: float = 0.0
    noise_fraction: tuple[float, float] = (0.1, 0.5)
    p_contamination: float = 0.0
    contamination_fraction: tuple[float, float] = (0.005, 0.05)
    contamination_scale: tuple[float, float] = (3.0, 8.0)
    min_informative: int = 2
    p_discrete: float = 0.0
    discrete_fraction: tuple[float, float] = (0.2, 1.0)
    discrete_levels: tuple[int, int] = (2, 10)
    p_skewed: float = 0.0
    skewed_fraction: tuple[float, float] = (0.5, 1.0)
    skew_strength: tuple[float, float] = (0.3, 1.0)

    def __post_init__(self) -> None:
        if not (isinstance(self.min_informative, int) and self.min_informative >= 1):
            raise ValueError(f"min_informative must be an integer >= 1, got {self.min_informative!r}")
        _check_probability("p_noise_features", self.p_noise_features)
        _check_probability("p_contamination", self.p_contamination)
        _check_range("noise_fraction", self.noise_fraction, 0.0)
        if not (0.0 < self.noise_fraction[0] and self.noise_fraction[1] < 1.0):
            raise ValueError(f"noise_fraction must lie in (0, 1), got {self.noise_fraction}")
        _check_range("contamination_fraction", self.contamination_fraction, 0.0)
        if not (0.0 < self.contamination_fraction[0] and self.contamination_fraction[1] <= 0.5):
            raise ValueError(f"contamination_fraction must lie in (0, 0.5], got {self.contamination_fraction}")
        _check_probability("p_discrete", self.p_discrete)
        _check_range("discrete_fraction", self.discrete_fraction, 0.0)
        if not (0.0 < self.discrete_fraction[0] and self.discrete_fraction[1] <= 1.0):
            raise ValueError(f"discrete_fraction must lie in (0, 1], got {self.discrete_fraction}")
        _check_range("discrete_levels", self.discrete_levels, 2, integer=True)
        _check_probability("p_skewed", self.p_skewed)
        _check_range("skewed_fraction", self.skewed_fraction, 0.0)
        if not (0.0 < self.skewed_fraction[0] and self.skewed_fraction[1] <= 1.0):
            raise ValueError(f"skewed_fraction must lie in (0, 1], got {self.skewed_fraction}")
        _check_range("skew_strength", self.skew_strength, 0.0)
        if not (0.0 < self.skew_strength[0] and self.skew_strength[1] <= 3.0):
            raise ValueError(f"skew_strength must lie in (0, 3], got {self.skew_strength}")
        _check_range("contamination_scale", self.contamination_scale, 1.0)
        if not (self.contamination_scale[1] > 1.0 and self.contamination_scale[1] <= 1e3):
            raise ValueError(f"contamination_scale must reach above 1 (rows must move) and stay <= 1e3, got "
                             f"{self.contamination_scale}")

    @property
    def enabled(self) -> bool:
        return (self.p_noise_features > 0.0 or self.p_contamination > 0.0 or self.p_discrete > 0.0
                or self.p_skewed > 0.0)


@dataclass(frozen=True)
class PriorConfig:
    """Dataset-level distribution of the pretraining prior (paper Sec. 3.1 and App. A.1).

    Attributes
    ----------
    n_rows : tuple of int
        N ~ U{low..high}.
    n_features : tuple of int
        D ~ U{low..high} (at least 2).
    n_clusters : tuple of int
        K_min and K_max; K = K_min with probability ``p_k_min``, else U{K_min + 1..K_max} (always K_min when
        both are equal).
    p_k_min : float
        P(K = K_min); 0.3 in the paper, where K_min = 2.
    p_gmm : float
        P(mechanism = GMM), else ZEUS (0.4 in the paper). ``kind="gmm"``/``"zeus"`` overrides it.
    min_cluster_size : int
        Every cluster gets at least this many rows (rows move from the largest cluster when a draw falls short).
    gmm, zeus : GMMConfig, ZeusConfig
        The two mechanisms.
    nuisance : NuisanceConfig
        Noise columns and contaminated rows on top of either mechanism (off by default: the paper's prior).
    """

    n_rows: tuple[int, int] = (500, 1000)
    n_features: tuple[int, int] = (2, 64)
    n_clusters: tuple[int, int] = (2, 10)
    p_k_min: float = 0.3
    p_gmm: float = 0.4
    min_cluster_size: int = 5
    gmm: GMMConfig = field(default_factory=GMMConfig)
    zeus: ZeusConfig = field(default_factory=ZeusConfig)
    nuisance: NuisanceConfig = field(default_factory=NuisanceConfig)

    def __post_init__(self) -> None:
        _check_range("n_rows", self.n_rows, 1, integer=True)
        _check_range("n_features", self.n_features, 2, integer=True)
        _check_range("n_clusters", self.n_clusters, 2, integer=True)
        _check_probability("p_k_min", self.p_k_min)
        _check_probability("p_gmm", self.p_gmm)
        _check_int("min_cluster_size", self.min_cluster_size, 1)
        if self.n_rows[0] < self.n_clusters[1] * self.min_cluster_size:
            raise ValueError(
                f"n_rows min {self.n_rows[0]} cannot give {self.n_clusters[1]} clusters of "
                f"min_cluster_size {self.min_cluster_size}; raise n_rows or lower min_cluster_size"
            )
        if self.zeus.min_cont_features > self.n_features[0]:
            raise ValueError("zeus.min_cont_features cannot exceed the smallest n_features")
        if not isinstance(self.gmm, GMMConfig) or not isinstance(self.zeus, ZeusConfig):
            raise TypeError("gmm and zeus must be GMMConfig and ZeusConfig instances")
        if not isinstance(self.nuisance, NuisanceConfig):
            raise TypeError("nuisance must be a NuisanceConfig instance")
