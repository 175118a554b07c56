"""Exact distribution function of Gaussian quadratic forms (private numerical core of :mod:`priors.overlap`).

A form is ``T = sum_j [a_j (w_j1^2 + ... + w_jm^2) + linear terms]`` with ``w ~ N(0, I)``: group j holds
``m_j`` squares with the same coefficient ``a_j`` and linear terms whose squared coefficients sum to ``B_j``
(a spherical pair is a single group with ``m = D``). Only ``a``, ``m`` and ``B`` enter the characteristic function

    phi(t) = prod_j (1 - 2i a_j t)^(-m_j / 2) exp(-B_j t^2 / (2 (1 - 2i a_j t))),

which never divides by ``a_j``: ``a_j = 0`` (an eigenvalue equal to 1) is a normal term and ``a_j`` near 0 is
exact, with no huge non-centralities. ``P(T < x)`` is evaluated for many forms at once by

1. a closed form when every ``a_j`` is 0 (``T`` is normal);
2. Chernoff bounds from the cumulant generating function: a probability whose bound is below ``1e-14`` is
   exactly 0 (or 1) to double precision, which settles well-separated pairs without quadrature;
3. Gil-Pelaez inversion, ``P(T < x) = 1/2 - (1/pi) int_0^inf Im(exp(-i t x) phi(t)) / t dt``, by Davies'
   trapezoidal rule (step ``2 pi / R``, R from the Chernoff bounds so that the aliasing error is below ``tol``),
   truncated where a bound on the remaining tail is below ``tol``; all nodes of all forms in one vectorised pass.
   Forms whose ``|phi|`` decays slowly (few terms, near-central) integrate ``[0, t_c]`` with Gauss-Legendre
   panels and the tail along the ray ``t_c - i sign(q) r``, where the integrand decays like ``exp(-|q| r)``;
   nearly flat groups (``a_j`` tiny) are left out of ``t_c`` and evaluated exactly on the ray. Forms far wider
   than their integrand's reach (a huge curvature next to a normal part) use Gauss-Legendre panels sized by
   local phase rates instead of a trapezoidal step too fine to afford.
"""

from __future__ import annotations

import logging

import numpy as np
from scipy.special import ndtr

logger = logging.getLogger(__name__)

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)
_GL_NODES.setflags(write=False)
_GL_WEIGHTS.setflags(write=False)
_U_GRID = np.geomspace(1e-3, 1.0, 16)  # Chernoff grid, relative to a reach in 1/sd units ...
_U_GRID.setflags(write=False)
_U_NEAR = 1.0 - np.geomspace(1e-12, 0.5, 8)  # ... plus points approaching a pole of the CGF
_U_NEAR.setflags(write=False)

_T_NEAR = np.geomspace(0.25, 2e3, 14)  # truncation-point grid in 1/sd units, most forms end here ...
_T_NEAR.setflags(write=False)
_T_FAR = np.geomspace(2e3 * 1.9, 1e12, 16)  # ... slowly decaying ones here ...
_T_FAR.setflags(write=False)
_T_FARTHEST = np.geomspace(1e12 * 1.9, 1e18, 16)  # ... and a normal part far narrower than the sd here
_T_FARTHEST.setflags(write=False)

_SETTLED = 1e-14  # a Chernoff bound below this settles the probability as exactly 0 or 1
_GEOM_RATIO = 1.5  # Gauss-Legendre panel edges grow geometrically near t = 0 (width 0.5 t) ...
_PERIODS_PER_PANEL = 1.0  # ... and are at most this many oscillation periods wide further out
_TRAP_CHECK = 600  # a form needing more trapezoidal nodes than this may use a rotated-ray tail ...
_KAPPA = 2.0  # ... starting at t_c where every curved term is asymptotic: 2 |a_j| t_c >= _KAPPA
_RAY_OVERHEAD = 400  # the cost of one rotated-ray evaluation (a Python call), in nodes
_MAX_NODES = 2_000_000  # per form; beyond this the tail bound is relaxed (logged), not reached in practice
_CHUNK = 4_000_000  # node x group elements evaluated per vectorised chunk


def quad_form_cdf(a, b2, x, mult=None, *, tol: float = 1e-9) -> np.ndarray:
    """``P(T < x)`` for P quadratic forms at once.

    Parameters
    ----------
    a : ndarray, shape (P, M)
        Coefficient of the squares in each group.
    b2 : ndarray, shape (P, M)
        Sum of the squared linear coefficients in each group (non-negative).
    x : ndarray, shape (P,)
        Thresholds.
    mult : ndarray, shape (P, M), optional
        Number of squares in each group (default 1; 0 pads a row).
    tol : float
        Bound on the truncation and aliasing errors of the inversion.

    Returns
    -------
    ndarray, shape (P,)
        The probabilities, clipped to [0, 1].
    """
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    b2 = np.atleast_2d(np.asarray(b2, dtype=np.float64))
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    m = np.ones_like(a) if mult is None else np.atleast_2d(np.asarray(mult, dtype=np.float64))
    if not (a.shape == b2.shape == m.shape and a.shape[0] == x.shape[0]):
        raise ValueError(f"a {a.shape}, b2 {b2.shape}, mult {m.shape} must be (P, M) and x {x.shape} (P,)")
    if not (np.isfinite(a).all() and np.isfinite(b2).all() and np.isfinite(x).all()):
        raise ValueError("quadratic form coefficients and thresholds must be finite")
    if (b2 < 0).any() or (m < 0).any():
        raise ValueError("squared linear coefficients and multiplicities must be non-negative")
    a = np.where(m > 0.0, a, 0.0)
    scale = np.sqrt(np.sum(2.0 * m * a**2 + b2, axis=1))  # sd of T
    a = np.where(np.abs(a) <= 1e-13 * scale[:, None], 0.0, a)  # a negligible curvature is a normal term
    out = np.empty(x.shape[0])
    degenerate = scale == 0.0  # T == 0
    out[degenerate] = (x[degenerate] > 0.0).astype(np.float64)
    normal = ~degenerate & np.all(a == 0.0, axis=1)
    out[normal] = ndtr(x[normal] / np.sqrt(np.sum(b2[normal], axis=1)))
    rest = np.flatnonzero(~degenerate & ~normal)
    if rest.size:
        form = (a[rest], b2[rest], m[rest])
        low, high, radius = _chernoff(*form, x[rest], scale[rest], tol)
        out[rest[low < _SETTLED]] = 0.0
        out[rest[high < _SETTLED]] = 1.0
        keep = (low >= _SETTLED) & (high >= _SETTLED)
        if keep.any():
            todo = rest[keep]
            out[todo] = _gil_pelaez(a[todo], b2[todo], m[todo], x[todo], scale[todo], radius[keep], tol)
    return np.clip(out, 0.0, 1.0)


def quad_form_upper_bound(a, b2, x, mult=None) -> np.ndarray:
    """Chernoff upper bound on ``P(T < x)`` (same arguments as :func:`quad_form_cdf`), cheap; shape (P,)."""
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    b2 = np.atleast_2d(np.asarray(b2, dtype=np.float64))
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    m = np.ones_like(a) if mult is None else np.atleast_2d(np.asarray(mult, dtype=np.float64))
    a = np.where(m > 0.0, a, 0.0)
    scale = np.sqrt(np.sum(2.0 * m * a**2 + b2, axis=1))
    out = (x > 0.0).astype(np.float64)  # T == 0
    live = scale > 0.0
    if live.any():
        out[live] = _chernoff(a[live], b2[live], m[live], x[live], scale[live], 1e-9)[0]
    return out


def _chernoff(a, b2, m, x, scale, tol) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chernoff bounds from the CGF ``K(u)`` on a grid of u (every u gives a valid bound).

    Returns upper bounds on P(T < x) and P(T >= x), and a radius R with P(T < x - R) <= tol and
    P(T > x + R) <= tol: the aliasing error of the trapezoidal rule with step 2 pi / R.
    """
    reach = 1e2 * (1.0 + np.abs(x - np.sum(m * a, axis=1)) / scale) / scale
    grid = _U_GRID[None, :] * reach[:, None]  # (P, G) magnitudes of u
    a3, b3, m3 = a[:, None, :], b2[:, None, :], m[:, None, :]
    bounds, radii = [], []
    for sign in (-1.0, 1.0):
        toward = np.max(np.where(sign * a > 0.0, sign * a, 0.0), axis=1)  # pole at |u| = 1 / (2 toward)
        with np.errstate(divide="ignore"):
            pole = np.where(toward > 0.0, 0.5 / toward, np.inf)
        near = np.where(np.isfinite(pole), pole, reach)[:, None] * _U_NEAR[None, :]
        mags = np.concatenate([np.minimum(grid, near[:, :1]), near], axis=1)
        u = sign * mags[:, :, None]
        one_minus = 1.0 - 2.0 * a3 * u
        exponent = np.sum(-0.5 * m3 * np.log(one_minus) + 0.5 * b3 * u**2 / one_minus, axis=2)
        exponent -= sign * mags * x[:, None]  # K(u) - u x
        bounds.append(np.exp(np.minimum(np.min(exponent, axis=1), 0.0)))
        # P(T beyond x + sign r) <= exp(K(u) - u x - |u| r) <= tol once r >= (K(u) - u x - log tol) / |u|
        radii.append(np.min((exponent - np.log(tol)) / mags, axis=1))
    return bounds[0], bounds[1], np.maximum(np.maximum(radii[0], radii[1]), scale)


def _tail_bound(a, b2, m, t) -> np.ndarray:
    """Bound on (1/pi) int_t^inf |phi(s)| / s ds; a, b2, m (P, 1, M), t (P, G, 1) -> (P, G).

    With |phi| = exp(-L), dL/dlog s >= S = sum_j m_j y_j / (2 (1 + y_j)) + sum_{a_j = 0} B_j t^2 for s >= t
    (y_j = 4 a_j^2 t^2; both parts grow with s, the other terms of L never decrease), so the tail is at most
    exp(-L(t)) / (pi S).
    """
    y = 4.0 * a**2 * t**2
    log_env = np.sum(0.25 * m * np.log1p(y) + 0.5 * b2 * t**2 / (1.0 + y), axis=2)
    slope = np.sum(0.5 * m * y / (1.0 + y) + np.where(a == 0.0, b2 * t**2, 0.0), axis=2)
    with np.errstate(divide="ignore"):
        return np.exp(-log_env) / (np.pi * slope)


def _truncation_point(a, b2, m, scale, tol) -> np.ndarray:
    """Smallest U on a coarse, then a fine geometric grid whose tail bound is below tol; shape (P,).

    The coarse grid covers [0.25, 2e3] / sd first (enough for all but slowly decaying forms), then up to
    1e12 / sd, then 1e18 / sd for the forms not done yet (a huge curvature next to a normal part: sd is set by the
    curvature, the decay by the normal part).
    """
    rows = np.arange(a.shape[0])
    form = (a[:, None, :], b2[:, None, :], m[:, None, :])
    stages = (_T_NEAR, _T_FAR, _T_FARTHEST)
    coarse = np.zeros((a.shape[0], sum(g.size for g in stages)))
    ok = np.zeros(coarse.shape, dtype=bool)
    pending, offset = np.ones(a.shape[0], dtype=bool), 0
    for k, stage in enumerate(stages):
        cols = slice(offset, offset + stage.size)
        grid = stage[None, :] / scale[pending, None]
        hit = _tail_bound(a[pending, None, :], b2[pending, None, :], m[pending, None, :], grid[:, :, None]) <= tol
        if k == len(stages) - 1:
            hit[:, -1] = True  # give up at 1e18 / sd (the caller rotates the contour for such forms)
        coarse[pending, cols], ok[pending, cols] = grid, hit
        pending[pending] = ~hit.any(axis=1)
        offset += stage.size
        if not pending.any():
            break
    first = np.argmax(ok, axis=1)
    hi = coarse[rows, first]
    lo = np.where(first > 0, coarse[rows, np.maximum(first - 1, 0)], 0.5 * hi)
    fine = lo[:, None] * (hi / lo)[:, None] ** np.linspace(0.125, 1.0, 8)[None, :]  # (P, 8), ends at hi
    ok = _tail_bound(*form, fine[:, :, None]) <= tol
    ok[:, -1] = True
    return fine[rows, np.argmax(ok, axis=1)]


def _phase_rate_bound(a, b2, m, x, upper) -> float:
    """Bound on |d/dt (arg phi(t) - t x)| over [0, upper] for one form.

    Per group: m |a| / (1 + 4a^2t^2) <= m |a|, and B |a| t^2 (3 + 4a^2t^2) / (1 + 4a^2t^2)^2, which is
    (B / |a|) f(a^2 t^2) with f(y) = y (3 + 4y) / (1 + 4y)^2 rising to 9/32 at y = 3/4, then falling to 1/4.
    """
    abs_a = np.abs(a)
    y = (a * upper) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        quad = np.where(
            y <= 0.75, b2 * abs_a * upper**2 * (3.0 + 4.0 * y) / (1.0 + 4.0 * y) ** 2, b2 * 0.28125 / abs_a
        )
    return float(abs(x) + np.sum(m * abs_a) + np.sum(quad))


def _gl_panels(scale: float, upper: float, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """Composite 16-point Gauss-Legendre nodes and weights on [0, upper]."""
    width = _PERIODS_PER_PANEL * 2.0 * np.pi / max(rate, 1e-300)
    start = min(0.5 / scale, width, upper)
    switch = min(width / (_GEOM_RATIO - 1.0), upper)
    n_geo = int(np.floor(np.log(switch / start) / np.log(_GEOM_RATIO))) + 1 if switch > start else 1
    geo = start * _GEOM_RATIO ** np.arange(n_geo)
    n_uni = min(int(np.ceil((upper - geo[-1]) / width)), _MAX_NODES // _GL_NODES.size)
    edges = np.concatenate([[0.0], geo, np.linspace(geo[-1], upper, n_uni + 1)[1:]])
    half, mid = 0.5 * np.diff(edges), 0.5 * (edges[1:] + edges[:-1])
    return (mid[:, None] + half[:, None] * _GL_NODES).ravel(), (half[:, None] * _GL_WEIGHTS).ravel()


def _adaptive_panels(a, b2, m, x, scale, upper):
    """Gauss-Legendre panels on [0, upper] sized by local bounds on the integrand's rates, or None if too many.

    Cells [0, g_0], [g_k, 1.5 g_k] (g_0 = 0.5 / sd) are split into panels at most one period of the local rate
    wide: |x|, plus per group the phase rates m |a| / (1 + 4a^2t^2) and (B / |a|) f(a^2 t^2) <= min(3 B |a| t^2,
    9 B / (32 |a|)), plus the log-envelope slopes B t / (1 + 4a^2t^2)^2 <= B t and 2 m a^2 t / (1 + 4a^2t^2)
    <= min(2 m a^2 t, m / (2t)). For forms whose scale is set by a huge curvature and whose integrand lives at
    t well above 1 / sd (the trapezoidal step 2 pi / R would be far too fine there).
    """
    start = min(0.5 / scale, upper)
    n_cells = int(np.ceil(np.log(upper / start) / np.log(_GEOM_RATIO))) if upper > start else 0
    cuts = np.minimum(start * _GEOM_RATIO ** np.arange(n_cells + 1), upper)
    lo, hi = np.concatenate([[0.0], cuts[:-1]]), cuts  # (C,) cells
    abs_a, lo2, hi2 = np.abs(a)[None, :], lo[:, None], hi[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        quad = np.where(abs_a > 0.0, np.minimum(3.0 * b2 * abs_a * hi2**2, 0.28125 * b2 / abs_a), 0.0)
        curl = np.where(lo2 > 0.0, np.minimum(2.0 * m * abs_a**2 * hi2, 0.5 * m / lo2), 2.0 * m * abs_a**2 * hi2)
    rate = abs(x) + np.sum(m * abs_a / (1.0 + 4.0 * abs_a**2 * lo2**2) + quad + b2 * hi2 + curl, axis=1)
    per_cell = np.maximum(1, np.ceil((hi - lo) * rate / (2.0 * np.pi * _PERIODS_PER_PANEL))).astype(np.int64)
    if _GL_NODES.size * per_cell.sum() > _MAX_NODES:
        return None
    cell = np.repeat(np.arange(lo.size), per_cell)
    index = np.arange(cell.size) - np.repeat(np.cumsum(per_cell) - per_cell, per_cell)
    width = (hi - lo)[cell] / per_cell[cell]
    left = lo[cell] + index * width
    half, mid = 0.5 * width, left + 0.5 * width
    return (mid[:, None] + half[:, None] * _GL_NODES).ravel(), (half[:, None] * _GL_WEIGHTS).ravel()


def _gil_pelaez(a, b2, m, x, scale, radius, tol) -> np.ndarray:
    """Gil-Pelaez inversion of all forms (trapezoidal rule or panels plus a rotated ray), one vectorised pass."""
    n_forms = a.shape[0]
    upper = _truncation_point(a, b2, m, scale, tol)
    step = 2.0 * np.pi / radius
    n_trap = np.ceil(upper / step) + 1.0
    integral = np.zeros(n_forms)
    extra = []
    for p in np.flatnonzero(n_trap > _TRAP_CHECK):
        slow = _rotated(a[p], b2[p], m[p], x[p], scale[p], upper[p], tol, n_trap[p])
        if slow is not None:
            nodes, weights, ray = slow
            n_trap[p] = 0
            integral[p] += ray
            extra.append((nodes, weights, np.full(nodes.size, p)))
        elif n_trap[p] > _MAX_NODES:  # a wide distribution (fine trapezoidal step): panels follow the phase
            panels = _adaptive_panels(a[p], b2[p], m[p], x[p], scale[p], upper[p])
            if panels is not None:
                n_trap[p] = 0
                extra.append((*panels, np.full(panels[0].size, p)))
            else:
                logger.warning("quadratic form needs %d nodes; truncating at %d", n_trap[p], _MAX_NODES)
                n_trap[p] = _MAX_NODES
    counts = n_trap.astype(np.int64)
    owner = np.repeat(np.arange(n_forms), counts)
    k = np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts)
    t = np.concatenate([(k + 0.5) * step[owner]] + [e[0] for e in extra])
    w = np.concatenate([step[owner]] + [e[1] for e in extra])
    own = np.concatenate([owner] + [e[2] for e in extra])
    chunk = max(1, _CHUNK // a.shape[1])
    for lo in range(0, t.size, chunk):
        sl = slice(lo, lo + chunk)
        tt, oo = t[sl], own[sl]
        aa, bb, mm = a[oo], b2[oo], m[oo]  # (n, M)
        t1 = tt[:, None]
        y = 4.0 * aa**2 * t1**2
        log_env = np.sum(0.25 * mm * np.log1p(y) + 0.5 * bb * t1**2 / (1.0 + y), axis=1)
        theta = np.sum(0.5 * mm * np.arctan(2.0 * aa * t1) - aa * bb * t1**3 / (1.0 + y), axis=1)
        vals = np.exp(-log_env) * np.sin(theta - tt * x[oo]) / tt
        integral += np.bincount(oo, weights=vals * w[sl], minlength=n_forms)
    return 0.5 - integral / np.pi


def _rotated(a, b2, m, x, scale, upper, tol, n_trap):
    """Panels on [0, t_c] and the rotated-ray tail of one form, or None when invalid or not cheaper.

    The groups with ``|a_j| >= a_min`` are asymptotic on the ray: ``t_c = _KAPPA / (2 a_min)``. The smallest
    ``a_min`` (every curved group) is tried first; when the trapezoidal rule is out of reach, larger ones too,
    so that a few nearly flat groups (``a_j`` tiny, an eigenvalue ratio close to 1) do not push t_c out of reach.
    """
    curved = (a != 0.0) & (m > 0.0)
    for a_min in np.unique(np.abs(a[curved])):
        plan = _ray_plan(a, b2, m, x, scale, upper, tol, np.abs(a) >= a_min)
        if plan is not None and plan[-1] + _RAY_OVERHEAD < n_trap:
            return _ray_integral(a, b2, m, x, scale, *plan[:-1])
        if n_trap <= _MAX_NODES:  # the trapezoidal rule is within reach: only the plan with every group
            return None
    return None


def _ray_plan(a, b2, m, x, scale, upper, tol, big):
    """(t_c, sign, q, ray edges, phase rate, big, cost) of one split, or None when invalid or over _MAX_NODES.

    On the ray t = t_c - i s r (s = sign q, q = x + sum_j B_j / (4 a_j) over the big groups) every big factor is
    (1 - z)^(-m/2) exp(-i t B / (4a) + (B / (8 a^2)) z / (1 - z)), z = 2i a t, with |1 - z| >= 2 |a| |t| - 1:
    so |integrand| <= exp(-|q| r) prod_big (2 |a_j| |t| (1 - 1/_KAPPA))^(-m_j/2) / |t|, which sets the ray's end.
    The other groups (a = 0 or |a| tiny) are evaluated exactly; at depth r <= R below the real axis their factor
    is at most (1 - 2|a| R)^(-m/2) exp(B R^2 / (2 (1 - 2|a| R))), which must stay below e. Then the ray may be
    cut at R, closed by the horizontal line t = u - i s R (u >= t_c), whose integral is bounded as well.
    """
    big = big & (m > 0.0)
    small = ~big & (m > 0.0)
    ac, bc, mc = a[big], b2[big], m[big]
    t_c = _KAPPA / (2.0 * np.min(np.abs(ac)))
    if t_c >= upper:
        return None
    q = x + np.sum(bc / (4.0 * ac))
    rate = abs(q)
    log_c = -0.5 * np.sum(mc * np.log(2.0 * np.abs(ac) * (1.0 - 1.0 / _KAPPA)))
    power = float(np.sum(mc))
    grid = (0.5 * min(t_c, 1.0 / rate) if rate > 0.0 else 0.5 * t_c) * _GEOM_RATIO ** np.arange(120)
    with np.errstate(over="ignore", divide="ignore"):
        tail = np.exp(log_c) * (2.0 / power) * grid ** (-0.5 * power)
        if rate > 0.0:
            tail = np.minimum(tail, np.exp(log_c - rate * grid) * t_c ** (-1.0 - 0.5 * power) / rate)
        if small.any():  # the cut ray is closed by a horizontal line; factor e for the small groups
            line = np.minimum((2.0 / power) * t_c ** (-0.5 * power), 2.7 * grid ** (-0.5 * power))
            tail = np.maximum(tail, np.e * np.exp(log_c - rate * grid) * line)
    ok = tail <= tol
    edges = np.concatenate([[0.0], grid[: int(np.argmax(ok)) + 1 if ok.any() else grid.size]])
    reach = 2.0 * np.abs(a[small]) * edges[-1]
    if np.any(reach > 0.5):
        return None
    with np.errstate(over="ignore"):
        growth = np.sum(-0.5 * m[small] * np.log1p(-reach) + b2[small] * edges[-1] ** 2 / (2.0 * (1.0 - reach)))
    if not growth <= 1.0:
        return None
    rate_real = _phase_rate_bound(a, b2, m, x, t_c)
    width = 2.0 * np.pi * _PERIODS_PER_PANEL / max(rate_real, 1e-300)
    cost = _GL_NODES.size * (np.log(max(t_c * scale, 1.0)) / np.log(_GEOM_RATIO) + t_c / width + edges.size)
    if cost > _MAX_NODES:
        return None
    return t_c, (1.0 if q >= 0.0 else -1.0), q, edges, rate_real, big, cost


def _ray_integral(a, b2, m, x, scale, t_c, sign, q, edges, rate_real, big):
    """Gauss-Legendre nodes and weights on [0, t_c] (evaluated with the other nodes) and the ray's value."""
    nodes, weights = _gl_panels(scale, t_c, rate_real)
    half, mid = 0.5 * np.diff(edges), 0.5 * (edges[1:] + edges[:-1])
    r = (mid[:, None] + half[:, None] * _GL_NODES).ravel()
    w = (half[:, None] * _GL_WEIGHTS).ravel()
    t = t_c - 1j * sign * r
    ac, bc, mc = a[big], b2[big], m[big]
    z = 2j * ac[None, :] * t[:, None]
    log_h = -1j * q * t - np.log(t)
    log_h = log_h + np.sum(-0.5 * mc * np.log(1.0 - z) + (bc / (8.0 * ac**2)) * z / (1.0 - z), axis=1)
    small = ~big & (m > 0.0)
    if small.any():  # exact factors, log(1 - 2i a t) has a positive real part here
        one_minus = 1.0 - 2j * a[small][None, :] * t[:, None]
        log_h = log_h + np.sum(
            -0.5 * m[small] * np.log(one_minus) - b2[small] * t[:, None] ** 2 / (2.0 * one_minus), axis=1
        )
    ray = float(np.imag(np.sum(np.exp(log_h) * (-1j * sign) * w)))
    return nodes, weights, ray
