"""Pure-noise columns (model.screening) and the preprocessing option that drops them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from model.estimator import TabClustPFN, default_checkpoint_path
from model.preprocessing import TablePreprocessor
from model.screening import associated_columns, dependent_columns, multimodal, noise_columns


def _z(X: np.ndarray) -> np.ndarray:
    return (X - X.mean(0)) / X.std(0)


def _groups_in_first_column(n_noise: int, seed: int = 0, shift: float = 6.0, n: int = 600) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return np.c_[shift * y + rng.normal(size=n), rng.normal(size=(n, n_noise))]


@pytest.mark.parametrize("n_noise", [1, 3, 7])
def test_noise_columns_beside_a_column_with_two_groups_are_flagged_and_that_column_is_not(n_noise):
    X = _z(_groups_in_first_column(n_noise, seed=n_noise + 10))
    flagged = noise_columns(X, np.zeros(X.shape[1], bool))
    assert flagged.tolist() == [False] + [True] * n_noise


def test_a_table_with_no_structure_anywhere_loses_no_column():
    """Independent Gaussian columns only: no column shows structure, so none is singled out as noise."""
    X = _z(np.random.default_rng(1).normal(size=(500, 6)))
    assert not noise_columns(X, np.zeros(6, bool)).any()


def test_clusters_without_linear_correlation_make_their_columns_dependent():
    """Three clusters in a triangle: the two columns' linear correlation is about 0, and neither column alone has
    two clear modes, yet they depend on each other (through the distance from the centre) and are kept."""
    rng = np.random.default_rng(2)
    centres = np.array([[0.0, 0.0], [3.0, 0.0], [1.5, 2.6]])
    y = rng.integers(0, 3, 900)
    X = _z(np.c_[centres[y] + 0.6 * rng.normal(size=(900, 2)), rng.normal(size=900)])
    assert abs(np.corrcoef(X[:, 0], X[:, 1])[0, 1]) < 0.1
    assert dependent_columns(X, np.zeros(3, bool)).tolist() == [True, True, False]
    assert noise_columns(X, np.zeros(3, bool)).tolist() == [False, False, True]


@pytest.mark.parametrize("n_noise", [1, 3, 7])
def test_the_modes_trigger_screens_a_table_whose_structure_has_a_second_mode(n_noise):
    X = _z(_groups_in_first_column(n_noise, seed=n_noise + 10))
    flagged = noise_columns(X, np.zeros(X.shape[1], bool), trigger="modes")
    assert flagged.tolist() == [False] + [True] * n_noise


def test_the_modes_trigger_keeps_every_column_where_clusters_differ_a_little_in_every_column():
    """Two clusters 1 SD apart in each of 8 columns: no column has a second mode, but they depend on each other.
    The default trigger singles out the 2 pure-noise columns beside them; the modes trigger screens nothing."""
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 800)
    X = _z(np.c_[y[:, None] + rng.normal(size=(800, 8)), rng.normal(size=(800, 2))])
    assert not any(multimodal(X[:, j]) for j in range(10))
    assert noise_columns(X, np.zeros(10, bool)).tolist() == [False] * 8 + [True] * 2
    assert not noise_columns(X, np.zeros(10, bool), trigger="modes").any()


def test_an_unknown_trigger_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="evidence.*modes"):
        noise_columns(np.zeros((30, 2)), np.zeros(2, bool), trigger="always")


def test_independent_columns_are_rarely_called_dependent():
    """Under independence each column is called dependent at most at the test's level (0.01), over many tables."""
    rng = np.random.default_rng(3)
    calls = [dependent_columns(_z(rng.normal(size=(300, 8))), np.zeros(8, bool)) for _ in range(60)]
    assert np.mean(calls) <= 0.01


def test_categorical_and_few_level_columns_are_never_dropped():
    rng = np.random.default_rng(4)
    n = 600
    y = rng.integers(0, 2, n)
    X = np.c_[6.0 * y + rng.normal(size=n), rng.integers(0, 3, n), rng.integers(0, 5, n), rng.normal(size=n)]
    X[:, [0, 2, 3]] = _z(X[:, [0, 2, 3]])
    flagged = noise_columns(X, np.array([False, True, False, False]))
    assert flagged.tolist() == [False, False, False, True]


def _noise_categorical_beside(y: np.ndarray, X: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """X with a 3-level categorical column of noise (codes 0..2) and one that follows the clusters ``y``
    appended -> (table, cat_mask)."""
    noise = rng.integers(0, 3, len(y))
    tied = np.where(rng.random(len(y)) < 0.8, y, rng.integers(0, 2, len(y)))
    return np.c_[X, noise, tied], np.r_[np.zeros(X.shape[1], bool), True, True]


def test_categorical_screening_drops_a_noise_category_where_the_screening_runs_and_keeps_a_tied_one():
    rng = np.random.default_rng(12)
    y = rng.integers(0, 2, 600)
    X, cat = _noise_categorical_beside(y, _z(np.c_[6.0 * y + rng.normal(size=600), rng.normal(size=600)]), rng)
    for trigger in ("evidence", "modes"):
        assert noise_columns(X, cat, trigger=trigger).tolist() == [False, True, False, False]
        for setting in (True, "always"):
            assert noise_columns(X, cat, trigger=trigger, categorical=setting).tolist() == [False, True, True,
                                                                                            False]


def test_always_drops_a_noise_category_where_the_modes_trigger_keeps_every_continuous_column():
    """Clusters 1 SD apart in each of 6 columns (no second mode, so the modes trigger screens nothing): only
    ``categorical="always"`` drops the categorical noise column, and it keeps the one tied to the clusters and
    every continuous column."""
    rng = np.random.default_rng(13)
    y = rng.integers(0, 2, 800)
    X, cat = _noise_categorical_beside(y, _z(y[:, None] + rng.normal(size=(800, 6))), rng)
    assert not noise_columns(X, cat, trigger="modes", categorical=True).any()
    assert noise_columns(X, cat, trigger="modes", categorical="always").tolist() == [False] * 6 + [True, False]


def test_always_drops_nothing_where_no_column_shows_structure():
    rng = np.random.default_rng(14)
    X = np.c_[_z(rng.normal(size=(500, 4))), rng.integers(0, 3, 500)]
    assert not noise_columns(X, np.r_[np.zeros(4, bool), True], trigger="modes", categorical="always").any()


def test_the_modes_trigger_skips_the_mode_test_of_a_dependent_column_and_answers_as_testing_every_mode(monkeypatch):
    """With the modes trigger a column that depends on another is kept whatever its modes, so past the first
    two-mode column its mode test is not run: the answer is the definition's (every continuous column's mode
    test first; dependence tested on the eligible columns without a second mode), on tables with two-mode,
    dependent, noise and categorical columns."""
    import model.screening as screening

    def definition(X, cat, categorical):
        continuous = np.array([not cat[j] and len(np.unique(X[:, j])) >= screening.MIN_DISTINCT
                               for j in range(X.shape[1])])
        modes = np.array([bool(c) and multimodal(X[:, j]) for j, c in enumerate(continuous)])
        eligible = continuous | (cat if categorical else False)
        if not modes.any():
            return noise_columns(X, cat, trigger="modes", categorical=categorical)  # no skipping before the trigger
        return eligible & ~(dependent_columns(X, cat, only=eligible & ~modes) | modes)

    rng = np.random.default_rng(5)
    skipped = 0
    for _ in range(12):
        n = int(rng.integers(150, 600))
        y = rng.integers(0, 2, n)
        blocks = [6.0 * y[:, None] + rng.normal(size=(n, int(rng.integers(1, 3)))),  # two modes, dependent
                  y[:, None] + rng.normal(size=(n, int(rng.integers(0, 4)))),  # dependent, one mode
                  rng.normal(size=(n, int(rng.integers(1, 5))))]  # noise
        X = _z(np.concatenate(blocks, axis=1))
        X = X[:, rng.permutation(X.shape[1])]
        cat = np.zeros(X.shape[1] + 1, bool)
        cat[-1] = True
        X = np.c_[X, np.where(rng.random(n) < 0.7, y, rng.integers(0, 2, n))]
        for categorical in (False, "always"):
            calls = []  # the mode tests noise_columns runs (the definition calls the function itself)
            monkeypatch.setattr(screening, "multimodal", lambda x, *a: calls.append(1) or multimodal(x, *a))
            got = noise_columns(X, cat, trigger="modes", categorical=categorical)
            skipped += int((~cat).sum()) - len(calls)
            monkeypatch.undo()
            assert got.tolist() == definition(X, cat, categorical).tolist()
    assert skipped > 0


def test_an_unknown_categorical_screening_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="categorical must be one of"):
        noise_columns(np.zeros((30, 2)), np.zeros(2, bool), categorical="sometimes")
    with pytest.raises(ValueError, match="screen_categorical must be one of"):
        TablePreprocessor(screen_categorical="sometimes")


def test_a_categorical_column_tied_to_the_clusters_is_associated_and_a_noise_category_is_not():
    """Levels 0 and 2 in one cluster, 1 in the other (equal mean codes): the chi-square test of the levels
    against the clusters finds the tie; a noise category is not associated."""
    rng = np.random.default_rng(15)
    labels = np.repeat([0, 1], 400)
    tied = np.where(labels == 0, rng.choice([0, 2], 800), 1).astype(float)
    noise = rng.integers(0, 3, 800).astype(float)
    assert associated_columns(np.c_[tied, noise], labels, categorical=np.array([True, True])).tolist() == [True,
                                                                                                          False]


def test_associated_categorical_columns_hold_their_level_on_noise():
    rng = np.random.default_rng(16)
    labels = rng.integers(0, 3, 400)
    calls = [associated_columns(rng.integers(0, 4, (400, 3)).astype(float), labels, categorical=np.ones(3, bool))
             for _ in range(80)]
    assert np.mean(calls) <= 0.05 + 0.025


def test_the_preprocessing_screens_a_categorical_noise_column_when_asked():
    rng = np.random.default_rng(17)
    y = rng.integers(0, 3, 450)
    frame = pd.DataFrame(4.0 * y[:, None] + rng.normal(size=(450, 3)), columns=["a", "b", "c"])
    frame["region"] = pd.Categorical(rng.choice(["north", "south", "east"], 450))
    kept = TablePreprocessor(screen_noise="auto").fit(frame)
    assert kept.screened_ == [] and kept.screened_categorical.tolist() == []
    pre = TablePreprocessor(screen_noise="auto", screen_categorical="always").fit(frame)
    assert pre.screened_ == ["column 'region'"] and pre.screened_categorical.tolist() == [True]
    Z, cat_mask = pre.transform(frame)
    assert Z.shape == (450, 3) and not cat_mask.any()
    np.testing.assert_array_equal(pre.screened_values(frame)[:, 0], frame["region"].cat.codes.to_numpy())


def test_a_numeric_flag_of_noise_is_screened_as_a_category_only_with_screen_binary():
    """A 0/1 column has no second mode to show as a number (too few values), so only ``screen_binary`` tests it,
    as a category: dropped beside dependent columns, marked categorical for the put-back's chi-square; an
    informative flag (the clusters' own) stays."""
    rng = np.random.default_rng(17)
    y = rng.integers(0, 3, 450)
    frame = pd.DataFrame(4.0 * y[:, None] + rng.normal(size=(450, 3)), columns=["a", "b", "c"])
    frame["flag"] = rng.integers(0, 2, 450)
    frame["told"] = (y == 1).astype(int)  # depends on a, b and c
    settings = {"screen_noise": "auto", "screen_categorical": "always"}
    assert TablePreprocessor(**settings).fit(frame).screened_ == []
    pre = TablePreprocessor(**settings, screen_binary=True).fit(frame)
    assert pre.screened_ == ["column 'flag'"] and pre.screened_categorical.tolist() == [True]
    assert pre.transform(frame)[0].shape == (450, 4)
    assert TablePreprocessor(screen_noise="auto", screen_binary=True).fit(frame).screened_ == []  # categories kept


def test_a_numeric_column_of_few_levels_of_noise_is_screened_as_a_category_only_with_screen_levels():
    """A count or a rating (3-10 values) has no second mode to show as a number, so only ``screen_levels`` tests
    it, by its levels: dropped beside dependent columns, marked categorical for the put-back's chi-square; a column
    of levels that carries the clusters stays, and so does one of more values than ``screen_levels``."""
    rng = np.random.default_rng(17)
    y = rng.integers(0, 3, 450)
    frame = pd.DataFrame(4.0 * y[:, None] + rng.normal(size=(450, 3)), columns=["a", "b", "c"])
    frame["children"] = rng.integers(0, 5, 450)
    frame["told"] = y + rng.integers(0, 2, 450)  # 4 levels that follow the clusters
    frame["rating"] = rng.integers(1, 13, 450)  # 12 levels of noise
    settings = {"screen_noise": "auto", "screen_categorical": "always"}
    assert TablePreprocessor(**settings).fit(frame).screened_ == []
    pre = TablePreprocessor(**settings, screen_levels=10).fit(frame)
    assert pre.screened_ == ["column 'children'"] and pre.screened_categorical.tolist() == [True]
    assert pre.transform(frame)[0].shape == (450, 5)
    wider = TablePreprocessor(**settings, screen_levels=12).fit(frame)
    assert wider.screened_ == ["column 'children'", "column 'rating'"]
    assert TablePreprocessor(screen_noise="auto", screen_levels=10).fit(frame).screened_ == []  # categories kept
    with pytest.raises(ValueError, match="screen_levels must be an integer >= 0"):
        TablePreprocessor(screen_levels=-1)


def test_screen_levels_min_width_screens_levels_only_in_a_table_of_more_design_columns():
    """The width bound counts numeric columns and categorical codes before screening: at or below it a count of
    noise is kept (``screen_levels`` as off), above it dropped; a category's codes count by their number."""
    rng = np.random.default_rng(17)
    y = rng.integers(0, 3, 450)
    frame = pd.DataFrame(4.0 * y[:, None] + rng.normal(size=(450, 3)), columns=["a", "b", "c"])
    frame["children"] = rng.integers(0, 5, 450)  # 4 numeric columns in all
    settings = {"screen_noise": "auto", "screen_categorical": "always", "screen_levels": 10}
    assert TablePreprocessor(**settings, screen_levels_min_width=3).fit(frame).screened_ == ["column 'children'"]
    assert TablePreprocessor(**settings, screen_levels_min_width=4).fit(frame).screened_ == []
    told = frame.assign(group=pd.Categorical(np.array(["p", "q", "r"])[y]))  # 3 codes: a width of 7
    assert TablePreprocessor(**settings, screen_levels_min_width=6).fit(told).screened_ == ["column 'children'"]
    assert TablePreprocessor(**settings, screen_levels_min_width=7).fit(told).screened_ == []
    with pytest.raises(ValueError, match="screen_levels_min_width must be an integer >= 0"):
        TablePreprocessor(screen_levels_min_width=-1)


@pytest.mark.parametrize("draw", [
    lambda rng, n: rng.normal(size=n),
    lambda rng, n: rng.lognormal(size=n),
    lambda rng, n: rng.exponential(size=n),
    lambda rng, n: rng.uniform(size=n),
], ids=["gaussian", "lognormal", "exponential", "uniform"])
def test_single_mode_columns_have_one_mode(draw):
    rng = np.random.default_rng(5)
    assert not any(multimodal(draw(rng, n)) for n in (300, 1000) for _ in range(20))


def test_two_separated_groups_have_two_modes_even_when_unequal():
    rng = np.random.default_rng(6)
    assert multimodal(np.r_[rng.normal(size=500), 5.0 + rng.normal(size=500)])
    assert multimodal(np.r_[rng.normal(size=800), 6.0 + rng.normal(size=200)])
    assert not multimodal(np.r_[rng.normal(size=990), 6.0 + rng.normal(size=10)])  # 1 % of the rows: no mode


def test_the_preprocessing_drops_screened_columns_and_transforms_new_rows_without_them():
    X = _groups_in_first_column(3, seed=7)
    frame = pd.DataFrame(X, columns=["signal", "n1", "n2", "n3"])
    pre = TablePreprocessor(screen_noise=True).fit(frame)
    assert pre.screened_ == ["column 'n1'", "column 'n2'", "column 'n3'"]
    assert set(pre.screened_) <= set(pre.dropped_)
    Z, cat = pre.transform(frame.iloc[:10])
    assert Z.shape == (10, 1) and not cat.any()
    np.testing.assert_allclose(Z[:, 0], (X[:10, 0] - X[:, 0].mean()) / X[:, 0].std(), rtol=1e-5)


def test_the_preprocessing_keeps_every_column_unless_asked_to_screen():
    frame = pd.DataFrame(_groups_in_first_column(3, seed=8))
    pre = TablePreprocessor().fit(frame)
    assert pre.transform(frame)[0].shape[1] == 4 and pre.screened_ == []


def test_a_column_that_differs_between_the_clusters_is_associated_and_a_noise_column_is_not():
    rng = np.random.default_rng(9)
    labels = np.repeat([0, 1, 2], 300)
    weak = 0.35 * labels + rng.normal(size=900)  # clusters differ a little in it
    spread = rng.normal(size=900) * np.where(labels == 1, 2.0, 1.0)  # only in spread
    noise = rng.normal(size=900)
    assert associated_columns(np.c_[weak, spread, noise], labels).tolist() == [True, True, False]


def test_associated_columns_hold_their_level_on_noise():
    rng = np.random.default_rng(10)
    labels = rng.integers(0, 4, 500)
    calls = np.array([associated_columns(rng.normal(size=(500, 5)), labels) for _ in range(80)])
    assert calls.mean() <= 0.05 + 0.02  # per column, at the default level 0.05
    strict = np.array([associated_columns(rng.normal(size=(500, 5)), labels, alpha=0.01, bonferroni=True)
                       for _ in range(80)])
    assert strict.any(axis=1).mean() <= 0.03  # per table, at level 0.01 over its columns


def test_readmitted_columns_come_back_in_input_order_for_new_rows_too():
    X = _groups_in_first_column(3, seed=11)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    pre = TablePreprocessor(screen_noise=True).fit(frame)
    assert pre.screened_ == ["column 'b'", "column 'c'", "column 'd'"]
    np.testing.assert_allclose(pre.screened_values(frame)[:, 1], (X[:, 2] - X[:, 2].mean()) / X[:, 2].std(),
                               rtol=1e-5, atol=1e-6)
    pre.readmit(frame, ["column 'c'"])
    assert pre.screened_ == ["column 'b'", "column 'd'"] and "column 'c'" not in pre.dropped_
    Z, _ = pre.transform(frame.iloc[:5])
    np.testing.assert_allclose(Z[:, 1], (X[:5, 2] - X[:, 2].mean()) / X[:, 2].std(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not screened"):
        pre.readmit(frame, ["column 'a'"])


def _diffuse_groups_with_a_faint_column(seed: int = 17, n: int = 600) -> tuple[pd.DataFrame, np.ndarray]:
    """Two groups 1.2 SD apart in 12 columns, 0.4 SD in one more (which the screening alone, in this draw, cannot
    tell from noise), and 3 pure-noise columns."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    X = np.c_[1.2 * y[:, None] + rng.normal(size=(n, 12)), 0.4 * y + rng.normal(size=n), rng.normal(size=(n, 3))]
    return pd.DataFrame(X).add_prefix("x"), y


@pytest.mark.skipif(not default_checkpoint_path().is_file(), reason="no shipped checkpoint in this checkout")
def test_the_estimator_screens_noise_and_puts_back_a_faint_column():
    """The faint column is screened, then differs between the clusters found without it and comes back; the
    noise columns stay out, and new rows are assigned with the columns the fit used."""
    from sklearn.metrics import adjusted_rand_score

    frame, y = _diffuse_groups_with_a_faint_column()
    pre = TablePreprocessor(screen_noise=True).fit(frame)
    assert "column 'x12'" in pre.screened_  # the faint column alone looks like noise
    est = TabClustPFN(random_state=0, screen_noise=True).fit(frame)
    assert est.preprocessor_.screened_ == ["column 'x13'", "column 'x14'", "column 'x15'"]
    assert adjusted_rand_score(y, est.labels_) >= 0.9
    np.testing.assert_array_equal(est.predict(frame.iloc[:50]), est.labels_[:50])
    assert TabClustPFN(random_state=0, screen_noise=False).fit(frame).preprocessor_.screened_ == []


def test_tables_wider_than_the_screening_limit_are_not_screened():
    from model.preprocessing import SCREEN_MAX_COLUMNS

    X = _groups_in_first_column(SCREEN_MAX_COLUMNS, seed=13, n=200)  # one column past the limit
    pre = TablePreprocessor(screen_noise=True, max_features=1000).fit(pd.DataFrame(X))
    assert pre.screened_ == [] and len(pre.columns_) == SCREEN_MAX_COLUMNS + 1
    narrower = TablePreprocessor(screen_noise=True).fit(pd.DataFrame(X[:, :20]))
    assert len(narrower.screened_) == 19  # the same kind of table within the limit


def test_auto_screens_only_a_table_with_a_two_mode_column():
    """``screen_noise="auto"`` (the estimator's default): the noise columns beside a two-mode column go, as with
    ``True``; where the clusters differ a little in many columns (none with two modes) ``True`` still drops the
    columns it cannot tell from noise and "auto" keeps every column."""
    frame = pd.DataFrame(_groups_in_first_column(3, seed=7), columns=["signal", "n1", "n2", "n3"])
    assert TablePreprocessor(screen_noise="auto").fit(frame).screened_ == ["column 'n1'", "column 'n2'", "column 'n3'"]
    diffuse, _ = _diffuse_groups_with_a_faint_column()
    assert not any(multimodal(diffuse[c].to_numpy()) for c in diffuse)
    assert "column 'x13'" in TablePreprocessor(screen_noise=True).fit(diffuse).screened_
    assert TablePreprocessor(screen_noise="auto").fit(diffuse).screened_ == []
    assert np.array_equal(noise_columns(_z(diffuse.to_numpy()), np.zeros(16, bool), trigger="modes"),
                          np.zeros(16, bool))
    with pytest.raises(ValueError, match="screen_noise must be 'auto', True or False"):
        TablePreprocessor(screen_noise="on")


def test_the_estimator_screens_by_default_and_takes_the_words_a_command_line_gives():
    from model.screening import DEFAULT_SCREEN_NOISE, screen_noise_setting

    assert TabClustPFN().screen_noise == DEFAULT_SCREEN_NOISE == "auto"
    assert [screen_noise_setting(v) for v in ("Auto", "TRUE", "false", True, np.bool_(False))] == \
        ["auto", True, False, True, False]
    with pytest.raises(ValueError, match="'auto', 'true' or 'false'"):
        screen_noise_setting("1")


@pytest.mark.parametrize("seed", range(4))
def test_where_a_column_has_two_modes_both_triggers_drop_the_same_columns(seed):
    """The modes trigger tests dependence only for the columns it may drop; where it fires, its answer is the
    evidence trigger's (what benchmarks/choose_screening.py's screen-modes measured)."""
    rng = np.random.default_rng(seed)
    n = 400
    y = rng.integers(0, 3, n)
    X = np.c_[5.0 * (y == 1) + rng.normal(size=n),  # two modes
              0.8 * y + rng.normal(size=n), 0.8 * y + rng.normal(size=n),  # dependent, one mode each
              rng.integers(0, 4, n),  # a categorical code
              rng.normal(size=(n, 3))]  # noise
    Z, cat = _z(X), np.array([False, False, False, True, False, False, False])
    Z[:, 3] = X[:, 3]
    modes = noise_columns(Z, cat, trigger="modes")
    assert np.array_equal(modes, noise_columns(Z, cat, trigger="evidence"))
    assert modes[4:].all() and not modes[:4].any()


def test_a_lenient_categorical_level_keeps_a_weakly_tied_category_more_often_and_leaves_the_rest_alone():
    """A category that follows the clusters on 14 % of the rows (noise on the rest): at the default level it is
    dropped on some draws; at ``categorical_alpha=0.2`` only on a subset of those, and the continuous columns'
    answers do not move."""
    dropped = {None: set(), 0.2: set()}
    for seed in range(20):
        rng = np.random.default_rng(seed)
        y = rng.integers(0, 2, 600)
        weak = np.where(rng.random(600) < 0.14, y, rng.integers(0, 2, 600))
        X = np.c_[_z(np.c_[6.0 * y + rng.normal(size=600), rng.normal(size=600)]), weak]
        cat = np.array([False, False, True])
        answers = {a: noise_columns(X, cat, trigger="modes", categorical="always", categorical_alpha=a)
                   for a in dropped}
        assert answers[None][:2].tolist() == answers[0.2][:2].tolist() == [False, True]  # the noise column goes
        for a, noise in answers.items():
            if noise[2]:
                dropped[a].add(seed)
    assert dropped[0.2] < dropped[None]  # a strict subset


class _KeepCategories(TabClustPFN):
    """The baseline the default was chosen against (``benchmarks/choose_categorical_screening.py``'s
    ``continuous``): categorical columns never screened nor set aside."""
    _screen_categorical = False
    _split_check = False
    _split_check_kept = False


def _blobs_and_a_category(informative: bool, seed: int = 0, n: int = 600) -> tuple[pd.DataFrame, np.ndarray]:
    """Three groups with a 3-level category beside two continuous columns: the groups 4 SD apart in the
    continuous columns and the category noise, or the groups in the category alone and the columns noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    shift = 0.0 if informative else 4.0
    frame = pd.DataFrame(rng.normal(size=(n, 2)) + shift * y[:, None], columns=["a", "b"])
    levels = y if informative else rng.integers(0, 3, n)
    return frame.assign(g=pd.Categorical(np.array(list("pqr"))[levels])), y


@pytest.mark.skipif(not default_checkpoint_path().is_file(), reason="no shipped checkpoint in this checkout")
def test_by_default_a_category_that_only_splits_the_clusters_stays_out():
    """A noise category splits each of three groups by its levels (K = 9 with it kept); screened and checked, as
    the defaults do, it stays out: its levels crossed with the groups found without it describe the partition found
    with it."""
    from sklearn.metrics import adjusted_rand_score

    frame, y = _blobs_and_a_category(informative=False)
    kept = _KeepCategories(random_state=0).fit(frame)
    assert kept.n_clusters_ > 3 and adjusted_rand_score(y, kept.labels_) < 0.6
    est = TabClustPFN(random_state=0).fit(frame)
    assert est.preprocessor_.screened_ == ["column 'g'"]
    assert est.n_clusters_ == 3 and adjusted_rand_score(y, est.labels_) > 0.95
    np.testing.assert_array_equal(est.predict(frame.iloc[:40]), est.labels_[:40])  # new rows without the column


@pytest.mark.skipif(not default_checkpoint_path().is_file(), reason="no shipped checkpoint in this checkout")
def test_by_default_the_split_check_brings_back_a_category_that_carries_the_clusters_alone(monkeypatch):
    """The groups live in the category alone, beside noise columns: where the screening takes the category out
    (here forced, as a chance dependence among noise columns can), the clusters found without it are noise, the
    put-back test cannot see the tie, and the split check brings it back: the partition with it matches its levels.
    """
    import model.screening
    from sklearn.metrics import adjusted_rand_score

    frame, y = _blobs_and_a_category(informative=True, seed=1)
    monkeypatch.setattr(model.screening, "noise_columns", lambda Z, cat_mask, **kw: np.asarray(cat_mask, bool))
    dropped = type("NoSplitCheck", (TabClustPFN,), {"_split_check": False})(random_state=0)
    assert dropped.fit(frame).preprocessor_.screened_ == ["column 'g'"]  # out: the groups are lost
    assert adjusted_rand_score(y, dropped.labels_) < 0.2
    est = TabClustPFN(random_state=0).fit(frame)
    assert est.preprocessor_.screened_ == []
    assert adjusted_rand_score(y, est.labels_) > 0.95


@pytest.mark.skipif(not default_checkpoint_path().is_file(), reason="no shipped checkpoint in this checkout")
@pytest.mark.parametrize("kind", ["bool", "yes/no", "0/1"])
def test_a_random_flag_beside_three_groups_is_dropped_however_it_is_stored(kind):
    """A random two-valued flag beside three groups 4 SD apart in 4 columns, stored as ``bool``, as text or as the
    numbers 0 and 1: screened by default (a 0/1 column as a category, ``_screen_binary``), K = 3. Kept, the 0/1
    column splits every group: K = 6; unscreened, the split check of kept columns sets it aside (K = 3)."""
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 600)
    frame = pd.DataFrame(rng.normal(size=(600, 4)) + 4.0 * y[:, None]).add_prefix("x")
    flag = rng.integers(0, 2, 600)
    frame["g"] = {"bool": flag.astype(bool), "yes/no": np.array(["no", "yes"])[flag], "0/1": flag}[kind]
    est = TabClustPFN(random_state=0).fit(frame)
    assert est.preprocessor_.screened_ == ["column 'g'"]
    assert est.n_clusters_ == 3 and adjusted_rand_score(y, est.labels_) > 0.95
    if kind == "0/1":
        kept = type("KeepFlags", (TabClustPFN,), {"_screen_binary": False, "_split_check_kept": False})
        kept = kept(random_state=0).fit(frame)
        assert kept.preprocessor_.screened_ == [] and kept.n_clusters_ == 6
        aside = type("UnscreenedFlags", (TabClustPFN,), {"_screen_binary": False})(random_state=0).fit(frame)
        assert aside.preprocessor_.screened_ == ["column 'g'"] and aside.n_clusters_ == 3


@pytest.mark.skipif(not default_checkpoint_path().is_file(), reason="no shipped checkpoint in this checkout")
def test_a_count_of_noise_beside_three_groups_splits_them_in_two_columns_and_is_dropped_beside_more():
    """Three groups 5 SD apart in two columns and an integer column of 3 levels independent of them. Kept, the BIC
    path reads the levels as clusters too (K = 9 with every group split by them), as the defaults do: they screen a
    count by its levels only in a design of more than 4 columns (``_screen_levels_min_width``). Screened in every
    table (``_screen_levels_min_width = 0``), it is dropped, K = 3; beside two noise columns (5 in all) the defaults
    drop it."""
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    frame = pd.DataFrame(np.array([[0, 0], [5, 0], [0, 5]])[y] + rng.normal(size=(300, 2)), columns=["a", "b"])
    frame["level"] = rng.integers(1, 4, 300)
    kept = type("KeepLevels", (TabClustPFN,), {"_screen_levels": 0})(random_state=0).fit(frame)
    assert kept.preprocessor_.screened_ == [] and (kept.k_selection_, kept.n_clusters_) == ("bic", 9)
    assert adjusted_rand_score(3 * y + frame["level"].to_numpy(), kept.labels_) > 0.9  # the groups x the levels
    est = type("ScreenLevels", (TabClustPFN,), {"_screen_levels": 10, "_screen_levels_min_width": 0}
               )(random_state=0).fit(frame)
    assert est.preprocessor_.screened_ == ["column 'level'"]
    assert est.n_clusters_ == 3 and adjusted_rand_score(y, est.labels_) > 0.9
    narrow = TabClustPFN(random_state=0).fit(frame)  # a design of 3 columns: the width bound leaves the count in
    assert narrow.preprocessor_.screened_ == [] and (narrow.k_selection_, narrow.n_clusters_) == ("bic", 9)
    noisy = frame.assign(n0=rng.normal(size=300), n1=rng.normal(size=300))  # 5 columns: screened
    assert "column 'level'" in TabClustPFN(random_state=0).fit(noisy).preprocessor_.screened_
    assert "column 'level'" not in kept.fit(noisy).preprocessor_.screened_


@pytest.mark.skipif(not default_checkpoint_path().is_file(), reason="no shipped checkpoint in this checkout")
def test_a_flag_that_carries_the_clusters_beside_noise_columns_is_kept():
    """Two groups told apart by a 0/1 column alone, four pure-noise columns beside it: no column shows structure
    but the flag, so nothing is screened, and the answer is the one without flag screening."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    frame = pd.DataFrame(rng.normal(size=(600, 4))).add_prefix("n").assign(flag=y)
    est = TabClustPFN(random_state=0).fit(frame)
    assert est.preprocessor_.screened_ == []
    kept = type("KeepFlags", (TabClustPFN,), {"_screen_binary": False})(random_state=0).fit(frame)
    np.testing.assert_array_equal(est.labels_, kept.labels_)


def test_only_splits_says_whether_a_partition_follows_the_clusters_crossed_with_the_levels_or_the_levels():
    from model.screening import only_splits

    clusters = np.repeat([0, 1, 2], 40)
    noise = np.tile([0, 1], 60)[:, None]  # a level that crosses every cluster
    crossed = clusters * 2 + noise[:, 0]
    assert only_splits(crossed, clusters, noise)  # the partition with it: the clusters split by its levels
    assert only_splits(clusters, clusters, noise)  # a column the partition ignores: it can do without it
    named = clusters[:, None]  # a category naming each cluster: with it, the clusters; a tie says no
    assert not only_splits(clusters, clusters, named)
    assert only_splits(crossed, clusters, np.column_stack([noise[:, 0], noise[:, 0]]))  # several columns, one level


def test_strict_only_splits_asks_that_the_levels_split_the_clusters_found_without_them_and_not_by_a_tie():
    """``only_splits(strict=True)``, the split check of kept categories (``_split_check_kept="crossing"``): a
    partition that is the clusters split by the levels still says yes; a column the partition ignores, and a
    category that carries the clusters where the numbers alone find little, say no (the plain test says yes to the
    second, by a hair: the noisy prior tables it lost on)."""
    from model.screening import only_splits

    clusters = np.repeat([0, 1, 2], 40)
    noise = np.tile([0, 1], 60)[:, None]
    assert only_splits(clusters * 2 + noise[:, 0], clusters, noise, strict=True)
    assert only_splits(clusters, clusters, noise) and not only_splits(clusters, clusters, noise, strict=True)
    level = np.repeat([0, 1], 200)
    without = np.tile(np.r_[1, np.zeros(9, int)], 40)  # a small group of the numeric columns' own
    with_them = np.where((without == 1) & (level == 0), 1, level)  # the category's groups, a few rows moved
    assert only_splits(with_them, without, level[:, None])
    assert not only_splits(with_them, without, level[:, None], strict=True)


def test_row_groups_are_the_distinct_rows_of_the_levels():
    """The levels of several columns as one partition (``_row_groups``, which the split tests read): two rows share a
    label exactly when they share every value, as a pandas MultiIndex groups them; one column or many."""
    from model.screening import _row_groups

    rng = np.random.default_rng(1)
    for _ in range(50):
        n, c = int(rng.integers(1, 300)), int(rng.integers(1, 30))
        values = rng.integers(0, int(rng.integers(1, 17)), (n, c)).astype(np.float32)
        groups = _row_groups(values if c > 1 else values[:, 0])
        pandas = pd.MultiIndex.from_arrays(list(values.T)).factorize()[0]
        assert len(set(zip(groups, pandas))) == len(set(groups)) == len(set(pandas))


def test_could_only_split_is_never_no_where_only_splits_says_yes():
    """``could_only_split`` bounds :func:`only_splits` from the partition with the columns alone: over random
    partitions, levels and partitions found without them (some built as the clusters split by the levels), it
    says no only where ``only_splits`` says no, plain and strict, and no crossed partition comes closer to the
    partition with the columns than that partition crossed with the levels."""
    from sklearn.metrics import adjusted_rand_score

    from model.screening import could_only_split, only_splits

    rng = np.random.default_rng(0)
    yes = no = 0
    for _ in range(150):
        n, k, n_levels = int(rng.integers(20, 200)), int(rng.integers(2, 8)), int(rng.integers(2, 5))
        without = rng.integers(0, k, n)
        levels = rng.integers(0, n_levels, (n, int(rng.integers(1, 3))))
        with_them = rng.integers(0, k * n_levels, n)
        if rng.random() < 0.5:  # the clusters split by the levels, some rows moved
            with_them = np.where(rng.random(n) < 0.1, with_them, without * 10 + levels[:, 0])
        if rng.random() < 0.3:  # levels nested in the partition with them, a few rows off
            levels[:, 0] = np.where(rng.random(n) < 0.9, with_them * n_levels + levels[:, 0], levels[:, 0])
        meet = pd.MultiIndex.from_arrays([with_them, *levels.T]).factorize()[0]
        crossed = pd.MultiIndex.from_arrays([without, *levels.T]).factorize()[0]
        assert adjusted_rand_score(with_them, crossed) <= adjusted_rand_score(with_them, meet) + 1e-12
        for strict in (False, True):
            if only_splits(with_them, without, levels, strict=strict):
                yes += 1
                assert could_only_split(with_them, levels, strict=strict)
            no += not could_only_split(with_them, levels, strict=strict)
    assert yes > 30 and no > 30  # both answers met


def test_the_kept_column_check_skips_the_second_clustering_only_where_its_test_cannot_pass(monkeypatch):
    """A category that names the clusters beside the numbers that find them: no partition crossed with its levels
    can come closer to the clusters than its levels do, so the table is clustered once, not again without it, and
    the answer is the one of the check that clusters again and keeps the column."""
    import model.estimator as estimator

    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2], 100)
    frame = pd.DataFrame(rng.normal(size=(300, 3)) + 6 * y[:, None]).add_prefix("x").assign(
        group=pd.Categorical(np.array(["a", "b", "c"])[y]))
    calls = []
    cluster = TabClustPFN._cluster
    monkeypatch.setattr(TabClustPFN, "_cluster", lambda self, *a: (calls.append(1), cluster(self, *a))[1])
    once = TabClustPFN(random_state=0).fit(frame)
    n_once = len(calls)
    monkeypatch.setattr(estimator, "could_only_split", lambda *a, **k: True)
    calls.clear()
    again = TabClustPFN(random_state=0).fit(frame)
    assert len(calls) == n_once + 1
    assert "group" not in once.preprocessor_.screened_ and "group" not in again.preprocessor_.screened_
    np.testing.assert_array_equal(once.labels_, again.labels_)
    assert once.n_clusters_ == 3


def test_an_unknown_split_check_of_kept_columns_is_refused_before_any_clustering():
    class Unknown(TabClustPFN):
        _split_check_kept = "each"

    with pytest.raises(ValueError, match="_split_check_kept='each'"):
        Unknown(checkpoint="no-such-file.pt").fit(np.zeros((5, 2)))
