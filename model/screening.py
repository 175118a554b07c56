"""Which numeric columns of a table are pure noise: no sign of clusters in them, alone or with any other column.

A column can carry cluster information in two ways only: its own distribution has more than one mode, or it
depends on another column (clusters that differ in two columns make those columns dependent, linearly or
not). A continuous column that shows neither, while some other column shows one of them (or, with the trigger
``"modes"``, the estimator's default, while some continuous column has two modes), is treated as noise
(:func:`noise_columns`), and the preprocessing can drop it (``TablePreprocessor(screen_noise=...)``). Pure-noise
columns make up most of the distance between rows and bury a structure that lives in few columns.

* **Dependence**: each column is described by its rank scores (``r``, monotone dependence) and squared centred
  rank scores (``r**2``, dependence of spread or of the distance from the centre, such as three clusters in a
  triangle, whose linear correlation can be 0), a categorical column by its standardised level indicators (one
  level left out). A column depends on the others when, at level ``alpha`` (Bonferroni over its tests), either
  one correlation with another column's scores is too large (``|rho| sqrt(n)``, about standard normal under
  independence: one strong partner), or its scores are explained by the first ``JOINT_COMPONENTS`` principal
  components of all the other columns' scores more than chance allows (``n R**2``, about chi-square under
  independence: weak links to many columns, as when clusters differ a little in every column).
* **Modes**: a Gaussian kernel density at Silverman's bandwidth (the robust one) has two local maxima separated by
  a valley below ``valley`` times the lower maximum, each side of that valley holding at least ``min_mass`` of
  the rows; and so has the column after a Yeo-Johnson transform to symmetry (a skewed single mode, such as a
  log-normal column, shows bumps in its long tail that the transform removes). At the defaults, on simulated
  columns of 100 / 300 / 1,000 rows: never for Gaussian, exponential or log-normal (sigma 1) columns, 2 % / 0 / 0
  for uniform ones, 7 % / 0 / 0 for t(3); two unit-variance Gaussians 4 SD apart, equal weights: 82 % / 99 % /
  100 %; 5 SD apart, weights 0.8 / 0.2: 54 % / 98 % / 100 %.

Columns with fewer than ``MIN_DISTINCT`` distinct values (counts, levels, codes) and categorical columns are
never dropped: the kernel density of a few levels is a comb of modes.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import chi2, chi2_contingency, kruskal, rankdata

from model.power import yeo_johnson

__all__ = ["DEFAULT_SCREEN_NOISE", "MIN_DISTINCT", "TRIGGERS", "screen_noise_setting", "noise_columns",
           "dependent_columns", "multimodal", "associated_columns"]

MIN_DISTINCT = 20
ALPHA = 0.01
VALLEY = 0.7
MIN_MASS = 0.05
JOINT_COMPONENTS = 8
READMIT_ALPHA = 0.05
#: what makes a table one to screen (:func:`noise_columns`)
TRIGGERS = ("evidence", "modes")
_GRID = 512
#: ``TabClustPFN(screen_noise=)``: screen the tables with a two-mode continuous column (trigger "modes"), chosen on
#: development data and confirmed on a fresh draw of it (docs/results/choice-screening-modes*.md)
DEFAULT_SCREEN_NOISE = "auto"
_SETTINGS = {"auto": "auto", "true": True, "false": False}


def screen_noise_setting(value) -> bool | str:
    """``screen_noise`` as the estimator takes it ("auto", True or False) from a bool or one of the words "auto",
    "true", "false" (any case), as a command line or a served request gives it."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value.lower() in _SETTINGS:
        return _SETTINGS[value.lower()]
    raise ValueError(f"screen_noise must be 'auto', 'true' or 'false', got {value!r}")


def _standardise(block: np.ndarray) -> np.ndarray:
    block = block - block.mean(0)
    sd = block.std(0)
    keep = sd > 1e-12
    return block[:, keep] / sd[keep]


def _column_scores(z: np.ndarray, categorical: bool) -> np.ndarray:
    """(n, m) standardised scores whose correlations with another column's scores test dependence."""
    if categorical:
        codes = z.astype(np.int64)
        levels = np.unique(codes)[1:]  # one level left out: the indicators of all levels sum to 1
        return _standardise((codes[:, None] == levels[None, :]).astype(np.float64))
    r = rankdata(z)  # ties averaged
    r = (r - r.mean()) / max(r.std(), 1e-12)
    return _standardise(np.c_[r, r**2])


def dependent_columns(Z: np.ndarray, cat_mask: np.ndarray, alpha: float = ALPHA, joint: bool = True,
                      only: np.ndarray | None = None) -> np.ndarray:
    """(D,) bool: columns that depend on the others (see the module docstring; ``joint=False``: the pairwise
    test alone, at level ``alpha``). ``only`` (D,) bool: test these columns alone (the others come out False)."""
    n, d = Z.shape
    if d < 2:
        return np.zeros(d, bool)
    scores = [_column_scores(Z[:, j], bool(cat_mask[j])) for j in range(d)]
    owner = np.concatenate([np.full(s.shape[1], j) for j, s in enumerate(scores)])
    S = np.concatenate(scores, axis=1)
    C = S.T @ S / n  # correlations of the scores
    level = alpha / 2.0 if joint else alpha  # split between the two tests
    out = np.zeros(d, bool)
    for j in range(d) if only is None else np.flatnonzero(only):
        mine, others = owner == j, owner != j
        tests = int(mine.sum() * others.sum())
        if tests == 0:
            continue
        bound = float(ndtri(1.0 - level / (2.0 * tests)))
        out[j] = bool(np.abs(C[np.ix_(mine, others)]).max() * np.sqrt(n) > bound)
        if out[j] or not joint:
            continue
        values, vectors = np.linalg.eigh(C[np.ix_(others, others)])
        top = np.argsort(values)[::-1][:JOINT_COMPONENTS]
        top = top[values[top] > 1e-8 * max(values[top[0]], 1e-300)]
        if n <= 4 * len(top):
            continue
        cov = C[np.ix_(mine, others)] @ vectors[:, top]  # each score of j against each component
        r2 = (cov**2 / values[top]).sum(1)  # the scores have unit variance
        out[j] = bool(chi2.sf(n * r2, len(top)).min() < level / mine.sum())
    return out


def multimodal(x: np.ndarray, valley: float = VALLEY, min_mass: float = MIN_MASS) -> bool:
    """Whether one continuous column has two modes apart by a deep valley, each side holding at least
    ``min_mass`` of the rows, as it is and after a Yeo-Johnson transform (see the module docstring)."""
    x = np.asarray(x, np.float64)
    if not _two_modes(x, valley, min_mass):
        return False
    with np.errstate(all="ignore"):
        t = yeo_johnson((x - x.mean()) / max(x.std(), 1e-12))
    return bool(np.all(np.isfinite(t)) and _two_modes(t, valley, min_mass))


def _two_modes(x: np.ndarray, valley: float, min_mass: float) -> bool:
    x = np.sort(x)
    n = len(x)
    sd = x.std()
    iqr = np.subtract(*np.percentile(x, [75, 25]))
    spread = min(sd, iqr / 1.349) if iqr > 0 else sd
    if spread <= 0:
        return False
    h = 0.9 * spread * n ** -0.2
    grid = np.linspace(x[0] - 3 * h, x[-1] + 3 * h, _GRID)
    # the density on the grid from a histogram of the rows on a fine grid, smoothed by the kernel
    step = grid[1] - grid[0]
    counts = np.bincount(np.clip(np.round((x - grid[0]) / step).astype(np.int64), 0, _GRID - 1), minlength=_GRID)
    half = int(np.ceil(4 * h / step))
    kernel = np.exp(-0.5 * (np.arange(-half, half + 1) * step / h) ** 2)
    density = np.convolve(counts.astype(np.float64), kernel, mode="same")
    cdf = np.searchsorted(x, grid, side="right") / n
    peaks = np.flatnonzero((density[1:-1] > density[:-2]) & (density[1:-1] >= density[2:])) + 1
    if len(peaks) < 2:
        return False
    # the deepest valley between a maximum to its left and one to its right, relative to the lower of the two
    left_max = np.maximum.accumulate(density)
    right_max = np.maximum.accumulate(density[::-1])[::-1]
    inner = np.arange(peaks[0], peaks[-1] + 1)
    ratio = density[inner] / np.maximum(np.minimum(left_max[inner], right_max[inner]), 1e-300)
    massive = (cdf[inner] >= min_mass) & (cdf[inner] <= 1.0 - min_mass)
    return bool(np.any((ratio < valley) & massive))


#: What :func:`noise_columns` does with categorical columns: keeps them (False), screens them where the trigger
#: lets the screening run (True), or wherever some column shows structure ("always").
CATEGORICAL_SCREENING = (False, True, "always")


def _dependent(Z: np.ndarray, cat_mask: np.ndarray, alpha: float, categorical_alpha: float | None, joint: bool,
               only: np.ndarray | None = None) -> np.ndarray:
    """:func:`dependent_columns`, the categorical columns tested at ``categorical_alpha`` (None: at ``alpha``)."""
    if categorical_alpha is None or categorical_alpha == alpha:
        return dependent_columns(Z, cat_mask, alpha, joint, only=only)
    only = np.ones(Z.shape[1], bool) if only is None else only
    return (dependent_columns(Z, cat_mask, alpha, joint, only=only & ~cat_mask)
            | dependent_columns(Z, cat_mask, categorical_alpha, joint, only=only & cat_mask))


def noise_columns(Z: np.ndarray, cat_mask: np.ndarray, alpha: float = ALPHA, valley: float = VALLEY,
                  min_mass: float = MIN_MASS, joint: bool = True, trigger: str = "evidence",
                  categorical: bool | str = False, categorical_alpha: float | None = None) -> np.ndarray:
    """(D,) bool: the continuous columns that show no cluster structure, alone or with another column, in a table
    where some column does (none otherwise). ``Z``: the preprocessed table (z-scores and categorical codes).
    ``categorical``: ``True``: the categorical columns independent of every other column too, where the trigger
    lets the screening run (a category has no second mode to show; its levels are tested against the other
    columns as indicators); ``"always"``: those wherever some column shows a dependence or a second mode, even
    where the ``"modes"`` trigger keeps every continuous column. ``categorical_alpha``: the level of the
    categorical columns' dependence tests (None: ``alpha``); a larger one keeps a category on weaker evidence.

    ``trigger``: what "some column does" means. ``"evidence"``: some column depends on another or has a second
    mode. ``"modes"``: some continuous column has a second mode, a structure that lives in few columns; where the
    clusters differ a little in every column instead, every column depends on the others and none is dropped."""
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown trigger {trigger!r}: use one of {TRIGGERS}")
    if categorical not in CATEGORICAL_SCREENING:
        raise ValueError(f"categorical must be one of {CATEGORICAL_SCREENING}, got {categorical!r}")
    Z = np.asarray(Z, np.float64)
    cat_mask = np.asarray(cat_mask, bool)
    d = Z.shape[1]
    continuous = np.array([not cat_mask[j] and len(np.unique(Z[:, j])) >= MIN_DISTINCT for j in range(d)])
    eligible = continuous | (cat_mask if categorical else False)
    modes = np.zeros(d, bool)
    tested = np.zeros(d, bool)  # the columns whose mode test has run
    if trigger == "modes":  # the mode tests until one column has two modes: a table without one needs no other test
        for j in np.flatnonzero(continuous):
            tested[j] = True
            if multimodal(Z[:, j], valley, min_mass):
                modes[j] = True
                break
        if not modes.any():
            if categorical != "always" or not cat_mask.any():
                return np.zeros(d, bool)
            evidence = _dependent(Z, cat_mask, alpha, categorical_alpha, joint)  # the categorical columns alone may go
            return cat_mask & ~evidence if evidence.any() else np.zeros(d, bool)
    # with the modes trigger only the columns not yet shown to have two modes may be dropped: test those alone
    evidence = _dependent(Z, cat_mask, alpha, categorical_alpha, joint,
                          only=eligible & ~modes if trigger == "modes" else None)
    # no mode test where a dependence already shows: the column is kept either way (each column's dependence test
    # reads every column, so the answer is the one of testing every mode first)
    for j in np.flatnonzero(continuous & ~tested & ~evidence):
        modes[j] = multimodal(Z[:, j], valley, min_mass)
    evidence |= modes
    if not evidence.any():
        return np.zeros(d, bool)
    return eligible & ~evidence


def associated_columns(values: np.ndarray, labels: np.ndarray, alpha: float = READMIT_ALPHA,
                       bonferroni: bool = False, categorical: np.ndarray | None = None) -> np.ndarray:
    """(m,) bool: which columns of ``values`` (n, m) differ between the clusters ``labels`` (n,) found without
    them: a Kruskal-Wallis test of the column's rank scores and of its squared centred rank scores across the
    clusters, each column at level ``alpha`` (split between its two tests; ``bonferroni``: ``alpha`` over all
    the columns). A column in which clusters differ a little, which the screening cannot tell from noise on its
    own, shows it against a partition that is nearly right; a pure-noise column does not, and since the
    partition was found without it, the test holds its level. No multiplicity correction by default: a noise
    column put back costs what keeping every column costs, an informative column kept out can cost more.
    ``categorical`` (m,) bool: columns of category codes, tested by Pearson's chi-square test of independence of
    their levels and the clusters instead (at level ``alpha``: one test)."""
    values = np.asarray(values, np.float64)
    labels = np.asarray(labels)
    groups = [np.flatnonzero(labels == k) for k in np.unique(labels)]
    out = np.zeros(values.shape[1], bool)
    if len(groups) < 2:
        return out
    tests = values.shape[1] if bonferroni else 1
    for j in range(values.shape[1]):  # the scores of the dependence test (rank-based, so Kruskal-Wallis' too)
        if categorical is not None and categorical[j]:
            out[j] = bool(_independence_p(values[:, j], labels) < alpha / tests)
            continue
        p = min(kruskal(*[score[g] for g in groups]).pvalue for score in _column_scores(values[:, j], False).T)
        out[j] = bool(p < alpha / (2 * tests))
    return out


def _independence_p(codes: np.ndarray, labels: np.ndarray) -> float:
    """Pearson's chi-square test of independence of a categorical column's levels and the clusters: its p-value
    (1 where the column has one level)."""
    _, level = np.unique(codes, return_inverse=True)
    _, cluster = np.unique(labels, return_inverse=True)
    counts = np.zeros((level.max() + 1, cluster.max() + 1))
    np.add.at(counts, (level, cluster), 1.0)
    if counts.shape[0] < 2:
        return 1.0
    return float(chi2_contingency(counts, correction=False).pvalue)


def _row_groups(values: np.ndarray) -> np.ndarray:
    """(n,) int: the rows of ``values`` (n, c) grouped by their distinct values, each distinct row one label: the
    columns' labels crossed one column at a time, the codes kept compact so that no product of level counts is
    formed (a pandas MultiIndex gives the same groups, about 8 times slower on 33 columns of categories)."""
    values = np.asarray(values)
    groups = np.zeros(len(values), np.int64)
    if not len(values):
        return groups
    for column in (values if values.ndim == 2 else values[:, None]).T:
        _, inverse = np.unique(column, return_inverse=True)
        _, groups = np.unique(groups * (int(inverse.max()) + 1) + inverse.ravel(), return_inverse=True)
    return groups.ravel()


#: ``only_splits(strict=True)``: how much closer (ARI) the crossed partition must be than the levels alone
SPLIT_TIE = 0.05


def only_splits(with_them: np.ndarray, without: np.ndarray, level_values: np.ndarray, strict: bool = False) -> bool:
    """Whether columns only split the clusters found without them: the partition ``with_them`` (found with the
    columns) is closer, by ARI, to the partition ``without`` crossed with the columns' levels than to their levels
    alone. ``level_values`` (n, c): the columns' values on the same rows, each distinct row of values one level. A
    category that is noise, or a factor crossing the clusters, splits every cluster by its levels (three blobs and a
    noise column of three levels: nine clusters); one that carries the clusters is matched by them, levels and all.
    Ties say no. ``strict``: the crossed partition must also be closer to ``with_them`` than ``without`` alone is
    (the levels do split its clusters), and closer than the levels alone by more than :data:`SPLIT_TIE`; where the
    numeric columns are weak, weak informative categories otherwise read as a split of noise."""
    from sklearn.metrics import adjusted_rand_score

    levels = _row_groups(level_values)
    crossed = _row_groups(np.c_[np.asarray(without), levels])
    ari_crossed = adjusted_rand_score(with_them, crossed)
    if not strict:
        return adjusted_rand_score(with_them, levels) < ari_crossed
    return ari_crossed > max(adjusted_rand_score(with_them, levels) + SPLIT_TIE,
                             adjusted_rand_score(with_them, without))


def could_only_split(with_them: np.ndarray, level_values: np.ndarray, strict: bool = False) -> bool:
    """Whether :func:`only_splits` could say yes for some partition ``without``, asked before that partition is
    found: False means it says no whatever the clusters found without the columns are, so they need not be found.
    A partition crossed with the levels nests in them, so the pairs of rows it shares with ``with_them`` are at
    most the pairs that ``with_them`` crossed with the levels holds. Its ARI against ``with_them`` grows with
    the shared pairs and, once its own pairs pass that count, falls as they grow: no crossed partition is closer to
    ``with_them`` than ``with_them`` crossed with the levels, and the test (closer than the levels alone, by
    :data:`SPLIT_TIE` where ``strict``) is put to that bound."""
    from sklearn.metrics import adjusted_rand_score

    levels = _row_groups(level_values)
    bound = adjusted_rand_score(with_them, _row_groups(np.c_[np.asarray(with_them), levels]))
    return bound > adjusted_rand_score(with_them, levels) + (SPLIT_TIE if strict else 0.0)
