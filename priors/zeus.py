"""The ZEUS prior (Marszalek et al. 2025, as configured in the paper's App. A.1).

Continuous features: K Gaussian clusters with random covariances (eigenvalues in a range, random rotation),
placed one after another at the smallest distance from the origin that keeps a squared 2-Wasserstein distance
of at least ``U(w2_range)`` to every earlier cluster; with probability ``p_iresnet`` the standardised points pass
through a random invertible residual network (:class:`IResNet`) which, as in ZEUS, also sees the one-hot
cluster label, so each cluster is deformed by its own bijection. Categorical features: each column draws a
cardinality and, per cluster, category probabilities from a Dirichlet, so clusters prefer different categories.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from priors._common import assign_labels, random_rotation, standardize
from priors.config import ZeusConfig

__all__ = ["IResNet", "ZeusSample", "build_iresnet", "sample_zeus"]

_ACTIVATIONS = ("relu", "tanh", "elu")  # all 1-Lipschitz


def _activate(name: str, z: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(z, 0.0)
    if name == "tanh":
        return np.tanh(z)
    if name == "elu":
        return np.where(z > 0.0, z, np.expm1(np.minimum(z, 0.0)))
    raise ValueError(f"unknown activation {name!r}; use one of {_ACTIVATIONS}")


@dataclass(frozen=True)
class IResNet:
    """A random invertible residual network on R^D, conditioned on the cluster label as in ZEUS.

    Block b maps ``x -> A_b(x + g_b(x, e_y))`` where ``e_y`` is the one-hot label of the point,
    ``g_b(x, e) = h * act([x, e] W_in + c) W_out`` with spectral norms ``|W_in| = |W_out| = 1`` and a
    1-Lipschitz activation, so ``Lip(g_b) <= h < 1`` in (x, e) jointly and every block is a bijection of x for
    each label (inverted by fixed-point iteration). ``A_b`` is the per-feature standardisation fitted when the
    network was built, an invertible affine map. The label input gives each cluster its own deformation.

    Attributes
    ----------
    w_in, bias, w_out : tuple of ndarray
        Per block: (D + L, H), (H,), (H, D), for L labels.
    shift, scale : tuple of ndarray
        Per block: (D,) standardisation after the block.
    activation : str
        One of "relu", "tanh", "elu".
    lipschitz : float
        h, the Lipschitz bound of every residual branch.
    """

    w_in: tuple
    bias: tuple
    w_out: tuple
    shift: tuple
    scale: tuple
    activation: str
    lipschitz: float

    @property
    def n_blocks(self) -> int:
        """Number of residual blocks."""
        return len(self.w_in)

    def residual(self, block: int, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """``g_b(x, e_y)`` for points x of shape (N, D) with labels y of shape (N,)."""
        d = x.shape[1]
        w_in = self.w_in[block]
        hidden = _activate(self.activation, x @ w_in[:d] + w_in[d + y] + self.bias[block])
        return self.lipschitz * (hidden @ self.w_out[block])

    def residual_lipschitz_bound(self) -> np.ndarray:
        """``h * |W_out|_2 * |W_in|_2`` of every block (the activation is 1-Lipschitz); shape (n_blocks,)."""
        return np.array(
            [self.lipschitz * np.linalg.norm(wi, 2) * np.linalg.norm(wo, 2) for wi, wo in zip(self.w_in, self.w_out)]
        )

    def forward(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Map points x of shape (N, D) with labels y of shape (N,) through every block."""
        for b in range(self.n_blocks):
            x = (x + self.residual(b, x, y) - self.shift[b]) / self.scale[b]
        return x

    def inverse(self, z: np.ndarray, y: np.ndarray, *, tol: float = 1e-12, max_iter: int = 1000) -> np.ndarray:
        """Invert :meth:`forward` by the fixed-point iteration ``x <- v - g_b(x, e_y)`` of each block, last first.

        Converges geometrically at rate h < 1; raises RuntimeError if ``max_iter`` steps do not reach ``tol``.
        """
        for b in reversed(range(self.n_blocks)):
            v = z * self.scale[b] + self.shift[b]
            x = v.copy()
            for _ in range(max_iter):
                nxt = v - self.residual(b, x, y)
                step = float(np.max(np.abs(nxt - x))) if x.size else 0.0
                x = nxt
                if step <= tol * max(1.0, float(np.max(np.abs(v)))):
                    break
            else:
                raise RuntimeError(f"fixed-point inverse of block {b} did not converge in {max_iter} steps")
            z = x
        return z


def build_iresnet(
    rng: np.random.Generator,
    x: np.ndarray,
    y: np.ndarray,
    n_labels: int,
    n_blocks: int,
    lipschitz: float,
    hidden_factor: int = 4,
) -> tuple[IResNet, np.ndarray]:
    """Draw a random :class:`IResNet` for points x (N, D) with labels y in 0..n_labels-1, fitting its
    standardisations on x. Returns the network and ``net.forward(x, y)``.
    """
    if not 0.0 <= lipschitz < 1.0:
        raise ValueError(f"lipschitz must be in [0, 1) for an invertible network, got {lipschitz}")
    d = x.shape[1]
    hidden = hidden_factor * d
    activation = _ACTIVATIONS[int(rng.integers(len(_ACTIVATIONS)))]
    parts: dict[str, list] = {"w_in": [], "bias": [], "w_out": [], "shift": [], "scale": []}
    for _ in range(n_blocks):
        w_in = rng.standard_normal((d + n_labels, hidden))
        w_out = rng.standard_normal((hidden, d))
        parts["w_in"].append(w_in / np.linalg.norm(w_in, 2))
        parts["w_out"].append(w_out / np.linalg.norm(w_out, 2))
        parts["bias"].append(rng.uniform(-1.0, 1.0, size=hidden))
        w_in, bias, w_out = parts["w_in"][-1], parts["bias"][-1], parts["w_out"][-1]
        branch = lipschitz * (_activate(activation, x @ w_in[:d] + w_in[d + y] + bias) @ w_out)
        x, shift, scale = standardize(x + branch)
        parts["shift"].append(shift)
        parts["scale"].append(scale)
    net = IResNet(**{k: tuple(v) for k, v in parts.items()}, activation=activation, lipschitz=float(lipschitz))
    return net, x


@dataclass(frozen=True)
class ZeusSample:
    """One ZEUS dataset before the feature permutation.

    Attributes
    ----------
    x : ndarray, shape (N, D)
        Standardised continuous columns first, then categorical codes 0..C_j-1.
    y : ndarray, shape (N,)
    n_continuous : int
    cardinalities : tuple of int
        Number of distinct codes of each categorical column.
    iresnet : IResNet or None
    weights, means, covariances : ndarray
        The latent mixture of the continuous columns (before standardisation and the network).
    """

    x: np.ndarray
    y: np.ndarray
    n_continuous: int
    cardinalities: tuple
    iresnet: IResNet | None
    weights: np.ndarray
    means: np.ndarray
    covariances: np.ndarray


def _spectrum(rng: np.random.Generator, d: int, cfg: ZeusConfig) -> np.ndarray:
    """Covariance eigenvalues: wide or narrow range, sometimes a few flattened directions."""
    low, high = cfg.eigen_range
    start = low if rng.random() < cfg.p_wide_spectrum else high - low
    eig = rng.uniform(start, high, size=d)
    if rng.random() < cfg.p_flatten:
        n_flat = int(rng.integers(1, max(1, d // 3) + 1))
        eig[:n_flat] = rng.uniform(1e-3 * low, low, size=n_flat)
    return eig


def _bures(root_a: np.ndarray, cov_b: np.ndarray, tr_a: float) -> np.ndarray:
    """tr(A) + tr(B) - 2 tr((A^1/2 B A^1/2)^1/2) for one A (root given) and a stack of B; shape (J,)."""
    inner = np.linalg.eigvalsh(root_a[None] @ cov_b @ root_a[None])
    return tr_a + np.trace(cov_b, axis1=1, axis2=2) - 2.0 * np.sum(np.sqrt(np.clip(inner, 0.0, None)), axis=1)


def _place_means(rng: np.random.Generator, roots, covs, cfg: ZeusConfig) -> np.ndarray:
    """Means at the smallest distance from the origin, along a random direction, with W2^2 >= U(w2_range)."""
    k, d = covs.shape[0], covs.shape[1]
    means = np.zeros((k, d))
    traces = np.trace(covs, axis1=1, axis2=2)
    for j in range(1, k):
        need = rng.uniform(*cfg.w2_range) - _bures(roots[j], covs[:j], traces[j])  # required |mu_j - mu_i|^2
        u = rng.standard_normal(d)
        u /= np.linalg.norm(u)
        proj = means[:j] @ u
        disc = proj**2 - (np.sum(means[:j] ** 2, axis=1) - need)  # |t u - mu_i|^2 < need on (proj -+ sqrt(disc))
        inside = disc > 0.0
        left, right = proj - np.sqrt(np.where(inside, disc, 0.0)), proj + np.sqrt(np.where(inside, disc, 0.0))
        candidates = np.sort(np.concatenate([[0.0], right[inside & (right > 0.0)]]))
        for t in candidates:
            if not np.any(inside & (left < t - 1e-12) & (t < right - 1e-12)):
                break
        means[j] = t * u
    return means


def _categorical(rng: np.random.Generator, y: np.ndarray, n_cat: int, k: int, cfg: ZeusConfig):
    """Codes (N, n_cat) from cluster-specific Dirichlet category probabilities; no constant column."""
    codes = np.empty((y.size, n_cat))
    cards = []
    for col in range(n_cat):
        c = int(rng.integers(cfg.cardinality_range[0], cfg.cardinality_range[1] + 1))
        for _ in range(10):
            cum = np.cumsum(rng.dirichlet(np.full(c, cfg.category_alpha), size=k), axis=1)  # (K, C)
            code = np.sum(rng.random(y.size)[:, None] > cum[y, :-1], axis=1)
            if np.ptp(code) > 0:
                break
        else:  # astronomically rare: every row drew the same category
            code[int(rng.integers(y.size))] = (code[0] + 1) % c
        observed, dense = np.unique(code, return_inverse=True)  # codes 0..C_obs-1 without gaps
        codes[:, col] = dense
        cards.append(int(observed.size))
    return codes, tuple(cards)


def sample_zeus(
    rng: np.random.Generator, n_rows: int, n_features: int, n_clusters: int, cfg: ZeusConfig, min_cluster_size: int = 1
) -> ZeusSample:
    """One dataset of the ZEUS prior with N rows, D features (D_cont >= 2 continuous) and K clusters."""
    if n_features < cfg.min_cont_features:
        raise ValueError(f"ZEUS needs at least {cfg.min_cont_features} features, got {n_features}")
    d = int(rng.integers(cfg.min_cont_features, n_features + 1))
    weights = rng.dirichlet(np.full(n_clusters, cfg.dirichlet_alpha))
    eigs = np.stack([_spectrum(rng, d, cfg) for _ in range(n_clusters)])  # (K, d)
    rots = np.stack([random_rotation(rng, d) for _ in range(n_clusters)])  # (K, d, d)
    covs = (rots * eigs[:, None, :]) @ np.swapaxes(rots, 1, 2)
    roots = (rots * np.sqrt(eigs)[:, None, :]) @ np.swapaxes(rots, 1, 2)
    means = _place_means(rng, roots, covs, cfg)
    y = assign_labels(rng, weights, n_rows, min_cluster_size)
    z = rng.standard_normal((n_rows, d))
    x = np.empty_like(z)
    for c in range(n_clusters):
        rows = y == c
        x[rows] = means[c] + z[rows] @ roots[c]  # roots[c] is symmetric: covariance roots[c]^2 = covs[c]
    x, _, _ = standardize(x)
    net = None
    if rng.random() < cfg.p_iresnet:
        lip = float(rng.uniform(*cfg.lipschitz_range))
        net, x = build_iresnet(rng, x, y, n_clusters, _n_blocks(rng, cfg), lip, cfg.hidden_factor)
    codes, cards = _categorical(rng, y, n_features - d, n_clusters, cfg)
    return ZeusSample(np.concatenate([x, codes], axis=1), y, d, cards, net, weights, means, covs)


def _n_blocks(rng: np.random.Generator, cfg: ZeusConfig) -> int:
    """b = blocks_base + round(b~), b~ ~ N(mu, sigma^2) truncated to [0, inf), log-uniform mu and sigma."""
    mu = float(np.exp(rng.uniform(*np.log(cfg.blocks_mean_range))))
    sigma = float(np.exp(rng.uniform(*np.log(cfg.blocks_std_range))))
    for _ in range(1000):
        draw = rng.normal(mu, sigma)
        if draw >= 0.0:
            return cfg.blocks_base + int(round(draw))
    return cfg.blocks_base  # unreachable for mu > 0: P(draw < 0) <= 1/2 per try
