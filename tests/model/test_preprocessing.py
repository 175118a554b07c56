"""model/preprocessing.py: column typing, imputation, dropping, normalisation, PCA and the refusals."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from model.cells import decimal_mark, formatted_number
from model.preprocessing import IDENTIFIER, TablePreprocessor


def test_numeric_columns_are_z_normalised():
    rng = np.random.default_rng(0)
    X = rng.normal(loc=[5.0, -3.0], scale=[2.0, 0.1], size=(200, 2))
    Z, cat_mask = TablePreprocessor().fit_transform(X)
    assert Z.dtype == np.float32 and not cat_mask.any()
    np.testing.assert_allclose(Z.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(Z.std(0), 1.0, atol=1e-5)


def test_dataframe_category_object_bool_columns_become_codes():
    df = pd.DataFrame({
        "num": [0.5, 1.5, 2.5, 3.5],
        "obj": ["b", "a", "c", "a"],
        "flag": [True, False, True, True],
        "cat": pd.Categorical(["hi", "lo", "lo", "hi"], categories=["lo", "hi", "unused"]),
    })
    Z, cat_mask = TablePreprocessor().fit_transform(df)
    assert cat_mask.tolist() == [False, True, True, True]
    np.testing.assert_array_equal(Z[:, 1], [1, 0, 2, 0])  # sorted order of the strings
    np.testing.assert_array_equal(Z[:, 2], [1, 0, 1, 1])  # False < True
    np.testing.assert_array_equal(Z[:, 3], [1, 0, 0, 1])  # category order, unused category skipped


def test_object_column_of_numeric_strings_is_numeric():
    df = pd.DataFrame({"s": ["1.0", "2.0", "3.0", None], "x": [1.0, 0.0, 1.0, 0.0]})
    pre = TablePreprocessor().fit(df)
    assert not pre.cat_mask_[0]
    Z, _ = pre.transform(df)
    assert np.isfinite(Z).all()


def test_numbers_mixed_with_non_numeric_strings_is_refused_naming_the_column():
    df = pd.DataFrame({"age": np.array([31.0, 40.0, "old", "?", 22.0], dtype=object), "x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    with pytest.raises(ValueError, match=r"'age'.*non-numeric strings \(e\.g\. 'old'\)"):
        TablePreprocessor().fit(df)


@pytest.mark.parametrize("marker", ["?", "NA", " n/a ", "-", ".", "", "Missing", "--"])
def test_missing_value_markers_among_numbers_are_read_as_missing_and_named(marker):
    numbers = [31.0, 40.0, np.nan, 22.0, 35.0, np.nan]
    as_nan = pd.DataFrame({"age": numbers, "x": [1.0, 2.0, 3.0, 4.0, 5.0, 9.0]})
    for written in (np.array(["31", "40", marker, "22", "35", marker], dtype=object),  # text, as a CSV reader gives
                    np.array([31.0, 40.0, marker, 22.0, 35.0, None], dtype=object)):  # numbers and a marker
        df = as_nan.assign(age=written)
        with pytest.warns(UserWarning, match=r"column 'age': .* read as missing, as the column's other values are"):
            pre = TablePreprocessor().fit(df)
        assert not pre.cat_mask_.any() and list(pre.missing_markers_) == ["column 'age'"]
        np.testing.assert_array_equal(pre.transform(df)[0], TablePreprocessor().fit(as_nan).transform(as_nan)[0])
        # new rows: the marker reads as missing there too, and a row of markers and NaN holds no value
        new = pd.DataFrame({"age": [marker, "25"], "x": [np.nan, 2.0]})
        np.testing.assert_array_equal(pre.transform(new)[0], pre.transform(new.assign(age=[np.nan, 25.0]))[0])
        assert pre.empty_rows(new).tolist() == [True, False]


@pytest.mark.parametrize(("text", "number"), [("$1,234.50", 1234.5), ("12.5%", 12.5), ("-€3", -3.0), ("€-3", -3.0),
                                              ("12,345,678", 12345678.0), ("(1,234)", -1234.0), ("£ 0.5", 0.5),
                                              ("+$5", 5.0), (".5", 0.5)])
def test_formatted_numbers_are_read_as_their_numbers(text, number):
    assert formatted_number(text) == number


@pytest.mark.parametrize("text", ["1,23", "1.234,5", "--3", "$-(3)", "abc", "12 kg", "$", "%", "1,2345", ""])
def test_strings_that_are_not_formatted_numbers_are_not_read_as_numbers(text):
    assert np.isnan(formatted_number(text))


@pytest.mark.parametrize(("text", "number"), [("1.234,5", 1234.5), ("825,68", 825.68), ("1.234.567", 1234567.0),
                                              ("-1.427,17", -1427.17), ("12,5%", 12.5), ("1 234,50 €", 1234.5),
                                              ("1\u202f234,5", 1234.5), ("(1.234,5)", -1234.5), ("1.234", 1234.0)])
def test_numbers_written_with_a_decimal_comma_are_read_as_their_numbers(text, number):
    assert formatted_number(text, decimal=",") == pytest.approx(number, rel=1e-12)


@pytest.mark.parametrize("text", ["1,234.5", "1.5", "1.2.3", "12,34,5", "1.2345,6", "€1€", ""])
def test_strings_that_are_no_decimal_comma_numbers_are_not_read_with_one(text):
    assert np.isnan(formatted_number(text, decimal=","))


@pytest.mark.parametrize(("texts", "mark"), [(["1.234,5", "825,68", "?"], ","), (["1.234.567", "12"], ","),
                                             (["1,234", "2,500"], "."), (["1.5", "825,68"], "."),
                                             (["$1,234.50", "3"], "."), (["a", "b"], ".")])
def test_a_columns_decimal_mark_is_the_comma_only_when_some_cell_reads_only_with_it(texts, mark):
    assert decimal_mark(np.array(texts, dtype=object)) == mark


def test_a_column_written_with_decimal_commas_is_numeric_and_new_rows_are_read_the_same_way():
    plain = pd.DataFrame({"price": [1427.17, 825.68, np.nan, 12000.0, 5.25, -700.0], "x": [1.0, 2, 3, 4, 5, 9]})
    written = plain.assign(price=["1.427,17", "825,68", "?", "12.000", "5,25", "-700"])  # a German spreadsheet's
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pre = TablePreprocessor().fit(written)
    said = [str(w.message) for w in caught]
    assert any(m.startswith("column 'price': numbers written with a decimal comma (e.g. '1.427,17', 5 cells)")
               for m in said), said
    assert not pre.cat_mask_.any() and pre.missing_markers_ == {"column 'price'": ["?"]}
    np.testing.assert_array_equal(pre.transform(written)[0], TablePreprocessor().fit(plain).transform(plain)[0])
    # new rows whose cells alone would read with a point ("1.500") are read with the column's fitted comma
    np.testing.assert_array_equal(pre.transform(pd.DataFrame({"price": ["1.500"], "x": [1.0]}))[0],
                                  pre.transform(pd.DataFrame({"price": [1500.0], "x": [1.0]}))[0])
    with pytest.raises(ValueError, match=r"column 'price' is numeric but holds the non-numeric value '1,234.5'"):
        pre.transform(pd.DataFrame({"price": ["1,234.5"], "x": [1.0]}))


def test_a_column_of_formatted_numbers_is_numeric_with_a_warning():
    plain = pd.DataFrame({"revenue": [1234.5, 99.0, np.nan, 12000.0, 5.25, -700.0], "x": [1.0, 2, 3, 4, 5, 9]})
    written = plain.assign(revenue=["$1,234.50", "$99", "?", "$12,000", "5.25", "($700)"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pre = TablePreprocessor().fit(written)
    said = [str(w.message) for w in caught]
    assert any(m.startswith("column 'revenue': formatted numbers (e.g. '$1,234.50', 4 cells) read as") for m in said)
    assert any(m.startswith("column 'revenue': '?' (1 cell) read as missing") for m in said) and len(said) == 2
    assert not pre.cat_mask_.any() and pre.missing_markers_ == {"column 'revenue'": ["?"]}
    np.testing.assert_array_equal(pre.transform(written)[0], TablePreprocessor().fit(plain).transform(plain)[0])
    np.testing.assert_array_equal(pre.transform(pd.DataFrame({"revenue": ["$2,000"], "x": [1.0]}))[0],
                                  pre.transform(pd.DataFrame({"revenue": [2000.0], "x": [1.0]}))[0])


def test_missing_value_codes_are_read_as_missing_in_every_kind_of_column():
    table = pd.DataFrame({"age": [31.0, -999.0, 22.0, 40.0, -999.0, 35.0],
                          "text": ["1.5", "-999", "2.5", "3", "4", "-999.0"],
                          "region": pd.Categorical(["n", "s", "unknown", "n", "s", " unknown "]),
                          "flag": [True, False, True, True, False, True]})
    as_nan = table.assign(age=[31.0, np.nan, 22.0, 40.0, np.nan, 35.0], text=["1.5", None, "2.5", "3", "4", None],
                          region=pd.Categorical(["n", "s", None, "n", "s", None]))
    pre = TablePreprocessor(missing_values=(-999, "unknown")).fit(table)
    np.testing.assert_array_equal(pre.transform(table)[0], TablePreprocessor().fit(as_nan).transform(as_nan)[0])
    assert pre.columns_[2].categories == ("n", "s")  # "unknown" is no category
    assert pre.empty_rows(pd.DataFrame({"age": [-999.0], "text": ["-999"], "region": ["unknown"],
                                        "flag": [None]})).tolist() == [True]
    assert TablePreprocessor().fit(table).columns_[2].categories == (" unknown ", "n", "s", "unknown")
    as_text = TablePreprocessor(missing_values=("-999", "unknown")).fit(table)  # a number written as text
    np.testing.assert_array_equal(as_text.transform(table)[0], pre.transform(table)[0])


@pytest.mark.parametrize("codes", [[np.nan], [True], [None], [np.inf], [[1, 2]]])
def test_missing_value_codes_must_be_finite_numbers_or_strings(codes):
    with pytest.raises(ValueError, match="missing_values holds .* give the codes as finite numbers or strings"):
        TablePreprocessor(missing_values=codes)


def test_strings_that_are_not_markers_keep_a_text_column_categorical():
    df = pd.DataFrame({"grade": ["1", "2", "A", "2", "?", "1"], "x": [1.0, 2.0, 3.0, 4.0, 5.0, 9.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pre = TablePreprocessor().fit(df)
    assert pre.cat_mask_.tolist() == [True, False] and pre.missing_markers_ == {}
    only = pd.DataFrame({"x": ["?", "?", "-"], "y": [1.0, 2.0, 3.0]})  # markers and no number: a text column
    assert TablePreprocessor().fit(only).cat_mask_.tolist() == [True, False]


def test_list_input_mixing_numbers_and_strings_keeps_numbers_numeric():
    rows = [[1.0, "a"], [2.0, "b"], [3.0, "a"]]
    _, cat_mask = TablePreprocessor().fit_transform(rows)
    assert cat_mask.tolist() == [False, True]


def test_non_numeric_string_at_transform_in_a_numeric_column_is_refused():
    df = pd.DataFrame({"x": ["1", "2", "3"], "y": [1.0, 2.0, 4.0]})
    pre = TablePreprocessor().fit(df)
    bad = pd.DataFrame({"x": ["1", "oops", "3"], "y": [1.0, 2.0, 4.0]})
    with pytest.raises(ValueError, match=r"'x'.*'oops'"):
        pre.transform(bad)


def test_missing_values_imputed_with_median_and_most_frequent():
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0, 10.0], "c": ["u", None, "v", "v"]})
    pre = TablePreprocessor().fit(df)
    Z, _ = pre.transform(df)
    num = pre.columns_[0]
    assert num.fill == 3.0  # median of 1, 3, 10
    assert Z[1, 0] == pytest.approx((3.0 - num.center) / num.scale)
    assert Z[1, 1] == 1  # "v" (code 1) is the most frequent


def test_constant_and_all_missing_columns_are_dropped():
    X = np.array([[1.0, 7.0, np.nan, 0.0], [2.0, 7.0, np.nan, 1.0], [3.0, 7.0, np.nan, 0.0]])
    pre = TablePreprocessor().fit(X)
    assert pre.dropped_ == {"column 1": "constant", "column 2": "entirely missing"}
    Z, _ = pre.transform(X)
    assert Z.shape == (3, 2)


@pytest.mark.parametrize("unit", [1e-13, 1.0, 1e300])
def test_columns_are_kept_and_z_normalised_whatever_their_unit(unit):
    """Whether a column is constant is judged against its own magnitude: capacitances in farads are not
    dropped, and values near the float64 range neither overflow nor turn into zeros."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 1))
    X = np.c_[x * unit + 3 * unit, np.full(50, 7 * unit), rng.normal(size=50)]
    pre = TablePreprocessor().fit(X)
    assert pre.dropped_ == {"column 1": "constant"}
    Z, _ = pre.transform(X)
    expected = (x[:, 0] - x[:, 0].mean()) / x[:, 0].std()
    np.testing.assert_allclose(Z[:, 0], expected, atol=1e-5)


def test_nothing_left_after_dropping_is_refused():
    X = np.array([[np.nan, 1.0], [np.nan, 1.0], [np.nan, 1.0]])
    with pytest.raises(ValueError, match="no usable column"):
        TablePreprocessor().fit(X)


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.zeros((0, 3)), "empty table"),
        (np.zeros((1, 3)), "at least 2 rows"),
        (np.zeros((4, 3, 2)), "3-D array"),
        (np.zeros(5), "Reshape your data"),
        (np.array([[1.0, 2.0], [np.inf, 1.0], [0.0, 3.0]]), "column 0 contains inf"),
        (np.zeros((4, 0)), r"0 feature\(s\)"),
        (pd.DataFrame(np.zeros((4, 3)), columns=["a", "b", "a"]), r"column names \['a'\] occur more than once"),
        (pd.DataFrame(np.zeros((1, 2)), columns=["a", "a"]), "at least 2 rows"),  # the shape is said first
    ],
)
def test_bad_shapes_and_values_are_refused(X, match):
    with pytest.raises(ValueError, match=match):
        TablePreprocessor().fit(X)


def test_inf_at_transform_is_refused():
    pre = TablePreprocessor().fit(np.arange(6.0).reshape(3, 2))
    with pytest.raises(ValueError, match="inf"):
        pre.transform(np.array([[0.0, -np.inf]]))


def test_values_that_are_neither_numbers_nor_strings_raise_type_error():
    X = np.arange(6.0).reshape(3, 2).astype(object)
    X[0, 0] = {"foo": "bar"}
    with pytest.raises(TypeError, match="must be a string or a real number"):
        TablePreprocessor().fit(X)


def test_transform_reuses_fitted_statistics():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3))
    pre = TablePreprocessor().fit(X)
    Z_new, _ = pre.transform(X[:5] + 1.0)
    Z_old, _ = pre.transform(X[:5])
    expected = np.broadcast_to(1.0 / np.array([c.scale for c in pre.columns_]), Z_new.shape)
    np.testing.assert_allclose(Z_new - Z_old, expected, rtol=1e-4)


def test_unseen_category_maps_to_most_frequent_code_and_says_so():
    df = pd.DataFrame({"c": ["a", "b", "b", "b"], "x": [0.0, 1.0, 2.0, 3.0]})
    pre = TablePreprocessor().fit(df)
    with pytest.warns(UserWarning, match=r"column 'c': 2 row\(s\) hold 'zzz', 'yyy', read as its most frequent "
                                         r"category 'b'"):
        Z, _ = pre.transform(pd.DataFrame({"c": ["zzz", "a", "yyy"], "x": [0.0, 1.0, 2.0]}))
    assert Z[:, 0].tolist() == [1.0, 0.0, 1.0]


def test_seen_categories_and_missing_values_transform_without_a_warning():
    df = pd.DataFrame({"c": ["a", "b", "b", None], "x": [0.0, 1.0, 2.0, 3.0]})
    pre = TablePreprocessor().fit(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pre.transform(pd.DataFrame({"c": ["a", None], "x": [0.0, 1.0]}))


def test_high_cardinality_column_pools_rare_categories_into_other_code():
    values = ["common"] * 30 + [f"rare{i}" for i in range(20) for _ in range(2)]
    df = pd.DataFrame({"c": values, "x": np.arange(70.0)})
    pre = TablePreprocessor(max_categories=4).fit(df)
    Z, _ = pre.transform(df)
    codes = Z[:, 0].astype(int)
    assert codes.max() == 3 and len(np.unique(codes)) == 4  # 3 kept categories + "other"
    assert len(set(codes[:30])) == 1  # the frequent category keeps its own code
    with warnings.catch_warnings():  # read as the rare categories are, so nothing to warn of
        warnings.simplefilter("error")
        unseen, _ = pre.transform(pd.DataFrame({"c": ["never-seen"], "x": [0.0]}))
    assert unseen[0, 0] == pre.columns_[0].other_code


def test_category_of_one_row_joins_the_pool_rather_than_take_a_code():
    # 3 codes to give (max_categories 4, one kept for "other"): the two shared categories take two, and the
    # singletons, first in sorted order though they are, do not take the third
    values = ["a0", "a1", "a2"] + ["b"] * 5 + ["c"] * 4 + [f"z{i}" for i in range(10)]
    df = pd.DataFrame({"c": values, "x": np.arange(len(values), dtype=float)})
    col = TablePreprocessor(max_categories=4).fit(df).columns_[0]
    assert col.categories == ("b", "c") and col.other_code == 2


def test_categorical_identifier_column_is_dropped_with_a_warning():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"name": [f"person {i}" for i in range(40)], "x": rng.normal(size=40),
                       "c": rng.choice(["a", "b"], size=40)})
    with pytest.warns(UserWarning, match="'name' is dropped: every one of its 40 values is distinct"):
        pre = TablePreprocessor().fit(df)
    assert pre.dropped_ == {"column 'name'": IDENTIFIER}
    Z, cat_mask = pre.transform(df)
    assert Z.shape == (40, 2) and cat_mask.tolist() == [False, True]
    # two distinct values are a split, not an identifier; nor is a column with any value shared
    kept = TablePreprocessor().fit(pd.DataFrame({"c": ["a", "b"], "x": [0.0, 1.0]}))
    assert not kept.dropped_
    shared = [f"p{i}" for i in range(39)] + ["p0"]
    assert not TablePreprocessor().fit(df.assign(name=shared)).dropped_
    with pytest.raises(ValueError, match="entirely missing, constant or an identifier"), pytest.warns(UserWarning):
        TablePreprocessor().fit(df[["name"]])


def test_wide_table_is_reduced_with_pca_and_warns():
    rng = np.random.default_rng(2)
    latent = rng.normal(size=(300, 5))
    X = latent @ rng.normal(size=(5, 80)) + 0.01 * rng.normal(size=(300, 80))
    df = pd.DataFrame(X)
    df["c"] = rng.choice(["a", "b", "c"], size=300)
    pre = TablePreprocessor(max_features=64, pca_components="max_features")
    with pytest.warns(UserWarning, match="first 64 principal components"):
        Z, cat_mask = pre.fit_transform(df)
    assert Z.shape == (300, 64) and not cat_mask.any()
    np.testing.assert_allclose(Z.std(0), 1.0, atol=1e-3)
    np.testing.assert_allclose(Z.T @ Z / 300, np.eye(64), atol=1e-3)  # decorrelated components
    Z2, _ = pre.transform(df)
    np.testing.assert_array_equal(Z, Z2)  # deterministic projection


def test_pca_keeps_only_the_components_above_the_noise_edge_by_default():
    """Five latent factors behind 80 columns, beside a random categorical column: the default keeps the five
    directions that stand above the noise (not 64 unit-variance components, 59 of them noise)."""
    rng = np.random.default_rng(2)
    latent = rng.normal(size=(300, 5))
    df = pd.DataFrame(latent @ rng.normal(size=(5, 80)) + 0.01 * rng.normal(size=(300, 80)))
    df["c"] = rng.choice(["a", "b", "c"], size=300)
    with pytest.warns(UserWarning, match="above the noise level"):
        Z, _ = TablePreprocessor(max_features=64).fit_transform(df)
    assert Z.shape == (300, 5)
    # the kept components span the latent factors
    coef, *_ = np.linalg.lstsq(Z, latent - latent.mean(0), rcond=None)
    assert np.allclose(Z @ coef, latent - latent.mean(0), atol=0.05)


def test_pca_of_pure_noise_keeps_one_component():
    """No direction above the noise edge: the largest is kept."""
    X = np.random.default_rng(6).normal(size=(500, 100))
    with pytest.warns(UserWarning):
        Z, _ = TablePreprocessor(max_features=64).fit_transform(X)
    assert Z.shape == (500, 1)


def test_pca_keeps_the_one_direction_that_separates_two_groups_among_noise():
    """Two groups apart along one direction of 128 columns: that direction is kept and the groups stay apart."""
    rng = np.random.default_rng(7)
    y = np.repeat([0, 1], 300)
    X = rng.normal(size=(600, 128)) + 0.6 * y[:, None]
    with pytest.warns(UserWarning):
        Z, _ = TablePreprocessor(max_features=64).fit_transform(X)
    assert Z.shape[1] == 1  # the separating direction alone: no noise component beside it
    gap = np.abs(Z[y == 0].mean(0) - Z[y == 1].mean(0)).max()
    assert gap > 1.8  # in within-group SDs of the component, about 2 when the separating axis is kept


def test_pca_components_option_is_validated():
    with pytest.raises(ValueError, match="pca_components must be one of"):
        TablePreprocessor(pca_components="all")


def test_pca_keeps_fewer_components_when_rank_is_lower():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 70))  # rank <= 29
    with pytest.warns(UserWarning):
        Z, _ = TablePreprocessor(max_features=64).fit_transform(X)
    assert Z.shape[0] == 30 and Z.shape[1] <= 29


def test_pca_of_a_wide_table_from_few_rows_equals_the_covariance_route():
    """Fewer rows than features: the axes come from the rows' Gram matrix, not the P x P covariance; repeating
    every row leaves the mean and covariance alone and takes the covariance route, so both must agree."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 12)) @ rng.normal(size=(12, 150)) + 0.1 * rng.normal(size=(40, 150))
    with pytest.warns(UserWarning):
        wide = TablePreprocessor(max_features=16, pca_components="max_features").fit(X)
    with pytest.warns(UserWarning):
        tall = TablePreprocessor(max_features=16, pca_components="max_features").fit(np.tile(X, (4, 1)))
    np.testing.assert_allclose(wide.components_, tall.components_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(wide.transform(X)[0], tall.transform(X)[0], rtol=1e-4, atol=1e-5)


def test_pca_warning_points_at_the_callers_line():  # the estimator's case: tests/model/test_estimator.py
    X = np.random.default_rng(5).normal(size=(30, 70))
    with pytest.warns(UserWarning, match="principal components") as record:
        TablePreprocessor(max_features=64).fit(X)
    assert record[0].filename == __file__


def test_all_numeric_tables_read_in_one_block_match_the_column_by_column_path(monkeypatch):
    """Tables whose columns are all plain numeric skip pandas' per-column access: the same columns, statistics,
    dropped columns, encoding and refusals as the column-by-column path."""
    import model.preprocessing as preprocessing

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({
        "f": rng.normal(size=50),
        "i": rng.integers(0, 9, 50),
        "u": rng.integers(0, 200, 50).astype(np.uint8),
        "n": pd.array([None if j % 7 == 0 else j for j in range(50)], dtype="Int64"),
        "h": np.where(np.arange(50) % 5 == 0, np.nan, rng.normal(size=50)).astype(np.float32),
        "c": np.full(50, 3.0),
    })
    fast = TablePreprocessor().fit(frame)
    fast_out = fast.transform(frame.iloc[:20])
    monkeypatch.setattr(preprocessing, "_numeric_block", lambda frame: None)
    slow = TablePreprocessor().fit(frame)
    slow_out = slow.transform(frame.iloc[:20])
    assert fast.columns_ == slow.columns_ and fast.dropped_ == slow.dropped_ == {"column 'c'": "constant"}
    np.testing.assert_array_equal(fast_out[0], slow_out[0])
    np.testing.assert_array_equal(fast_out[1], slow_out[1])
    monkeypatch.undo()
    bad = frame.assign(h=np.where(np.arange(50) == 3, np.inf, frame["h"]))
    with pytest.raises(ValueError, match="column 'h' contains inf"):
        TablePreprocessor().fit(bad)
    with pytest.raises(ValueError, match="column 'h' contains inf"):
        fast.transform(bad)


def test_values_near_the_float64_range_and_extreme_new_rows_stay_finite():
    """A column spanning +-1.8e308: x - mean overflows unless divided first; a new row 1e300 SDs out is clipped
    at 1e6 instead of becoming inf in the model's float32 input."""
    df = pd.DataFrame({"x": [1.797693e308] * 3 + [-1.797693e308, 0.0], "y": [1.0, 2, 3, 4, 5]})
    pre = TablePreprocessor().fit(df)
    Z, _ = pre.transform(df)
    assert np.isfinite(Z).all()
    np.testing.assert_allclose(Z[:, 0].mean(), 0.0, atol=1e-6)
    np.testing.assert_allclose(Z[:, 0].std(), 1.0, atol=1e-6)
    far, _ = pre.transform(pd.DataFrame({"x": [1e308], "y": [1e300]}))
    assert np.isfinite(far).all() and far[0, 1] == 1e6


def test_a_column_of_subnormal_numbers_gets_z_scores_not_a_division_by_zero():
    tiny = np.finfo(np.float64).smallest_subnormal
    pre = TablePreprocessor().fit(np.array([[0.0], [0.0], [tiny], [tiny]]))
    Z, _ = pre.transform(np.array([[0.0], [tiny], [1.0]]))
    assert pre.columns_[0].scale == 0.0  # in the column's own units the spread underflows float64 ...
    assert Z[1, 0] - Z[0, 0] == pytest.approx(2.0, rel=1e-6)  # ... yet 0 and tiny are 2 SD apart (std 0.5 tiny)
    assert np.isfinite(Z).all() and Z[2, 0] == pytest.approx(1e6)  # a value far outside the column is clipped


def _skewed_table(n: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"price": rng.lognormal(3.0, 1.0, n),  # a long right tail
                         "gauss": rng.normal(size=n),
                         "levels": rng.integers(1, 6, n).astype(float),  # 5 levels: kept as they are
                         "group": pd.Categorical(rng.choice(["a", "b"], n))})


def test_power_transform_pulls_in_long_tails_of_highly_skewed_many_valued_numeric_columns_only():
    from scipy.stats import skew

    df = _skewed_table()
    plain, _ = TablePreprocessor().fit_transform(df)
    pre = TablePreprocessor(power_transform=True)
    Z, cat_mask = pre.fit_transform(df)
    assert list(pre.power_transformed_) == ["column 'price'"] and pre.power_min_skewness == 1.0
    assert cat_mask.tolist() == [False, False, False, True]
    assert skew(plain[:, 0]) > 2 and abs(skew(Z[:, 0])) < 0.5  # the tail pulled in (skewness 4.5 before)
    np.testing.assert_allclose(Z[:, 0].mean(), 0.0, atol=1e-5)
    np.testing.assert_allclose(Z[:, 0].std(), 1.0, atol=1e-4)
    np.testing.assert_array_equal(Z[:, 1:], plain[:, 1:])  # a symmetric column, few levels and codes untouched
    assert np.array_equal(np.argsort(Z[:, 0], kind="stable"), np.argsort(plain[:, 0], kind="stable"))  # monotone
    assert TablePreprocessor().fit(df).power_transformed_ == {}
    every = TablePreprocessor(power_transform=True, power_min_skewness=0.0)  # every column of many values
    Z_all, _ = every.fit_transform(df)
    assert list(every.power_transformed_) == ["column 'price'", "column 'gauss'"]
    assert np.corrcoef(Z_all[:, 1], plain[:, 1])[0, 1] > 0.995  # a Gaussian column nearly as it was
    with pytest.raises(ValueError, match="power_min_skewness"):
        TablePreprocessor(power_transform=True, power_min_skewness=-1.0)


def test_power_transform_only_in_tables_wider_than_power_min_width():
    df = _skewed_table()  # 3 numeric columns and a categorical one of 2 codes: 5 design columns
    assert list(TablePreprocessor(power_transform=True, power_min_width=4).fit(df).power_transformed_) == [
        "column 'price'"]
    assert TablePreprocessor(power_transform=True, power_min_width=5).fit(df).power_transformed_ == {}
    with pytest.raises(ValueError, match="power_min_width"):
        TablePreprocessor(power_transform=True, power_min_width=-1)


def test_power_transform_does_not_depend_on_the_unit_and_new_rows_get_the_fitted_exponents():
    df = _skewed_table()
    pre = TablePreprocessor(power_transform=True).fit(df)
    cents = df.assign(price=df["price"] * 100.0 + 7.0)  # another unit and origin: the same z-scores
    np.testing.assert_allclose(TablePreprocessor(power_transform=True).fit_transform(cents)[0],
                               pre.transform(df)[0], atol=1e-5)
    Z, _ = pre.transform(df)
    np.testing.assert_array_equal(pre.transform(df.iloc[:7])[0], Z[:7])  # rows alone: the fitted transform
    far = df.iloc[:2].assign(price=[1e300, -1e300])  # far outside the column: finite, on its side of the rest
    out, _ = pre.transform(far)
    assert np.isfinite(out).all() and out[0, 0] > Z[:, 0].max() and out[1, 0] < Z[:, 0].min()


def test_power_transform_leaves_a_skewed_column_of_two_modes_alone():
    from scipy.stats import skew

    rng = np.random.default_rng(1)  # a small cluster far to the right: skewed, and the skew is the clusters
    two = np.r_[rng.normal(0.0, 1.0, 450), rng.normal(7.0, 1.0, 50)]
    df = pd.DataFrame({"two_modes": two, "tail": rng.lognormal(0.0, 1.0, 500)})
    assert skew(two) > 1.0
    pre = TablePreprocessor(power_transform=True)
    Z, _ = pre.fit_transform(df)
    assert list(pre.power_transformed_) == ["column 'tail'"]
    np.testing.assert_array_equal(Z[:, 0], TablePreprocessor().fit_transform(df)[0][:, 0])
    both = TablePreprocessor(power_transform=True, power_keep_modes=False).fit(df)
    assert list(both.power_transformed_) == ["column 'two_modes'", "column 'tail'"]


# ---------------------------------------------------------------- impute="neighbors"
def _two_groups_with_gaps(seed: int = 0, rate: float = 0.2) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Two tight groups 10 apart in 3 columns (300 rows) -> (the table with cells removed, the full one, labels)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 300)
    full = pd.DataFrame(10.0 * y[:, None] + rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    return full.mask(rng.random(full.shape) < rate), full, y


@pytest.mark.parametrize("chunk_rows", [2048, 7])  # the shipped block of rows, and blocks that split every table
def test_neighbor_fill_is_scikit_learns_knn_imputer(monkeypatch, chunk_rows):
    from sklearn.impute import KNNImputer

    import model.preprocessing
    from model.preprocessing import IMPUTE_NEIGHBORS, _neighbor_fill

    monkeypatch.setattr(model.preprocessing, "_IMPUTE_CHUNK_ROWS", chunk_rows)
    rng = np.random.default_rng(1)
    for n, p, rate in [(300, 4, 0.15), (200, 2, 0.45), (150, 6, 0.3)]:
        Z = rng.normal(size=(n, p))
        absent = rng.random((n, p)) < rate
        gappy = np.where(absent, np.nan, Z)
        expected = KNNImputer(n_neighbors=IMPUTE_NEIGHBORS).fit(gappy).transform(gappy)
        np.testing.assert_allclose(_neighbor_fill(Z, absent, gappy)[0], expected, atol=1e-9)


def test_neighbors_fill_a_gap_from_the_rows_own_group_and_leave_held_cells_alone():
    gappy, full, y = _two_groups_with_gaps()
    absent = gappy.isna().to_numpy()
    by_median, _ = TablePreprocessor().fit_transform(gappy)
    by_neighbors, _ = TablePreprocessor(impute="neighbors").fit_transform(gappy)
    np.testing.assert_array_equal(by_neighbors[~absent], by_median[~absent])
    # in z-scores the groups sit near -1 and +1: a row holding any cell gets its gaps filled on its own group's
    # side; the median puts every gap on one side (a row holding no cell gets the mean of the cells held)
    side = np.where(y == 1, 1.0, -1.0)[:, None] * np.ones((1, 3))
    informed = absent & ~absent.all(1, keepdims=True)
    assert informed.sum() > 100 and absent.all(1).any()
    assert (np.sign(by_neighbors) == side)[informed].all()
    held_mean = np.nanmean(np.where(absent, np.nan, by_median), axis=0)
    np.testing.assert_allclose(by_neighbors[absent.all(1)], np.broadcast_to(held_mean, (absent.all(1).sum(), 3)),
                               rtol=1e-5)
    assert (np.sign(by_median) == side)[informed].mean() < 0.6


def test_neighbors_change_nothing_in_a_table_without_gaps():
    _, full, _ = _two_groups_with_gaps()
    full["cat"] = pd.Categorical(np.where(np.arange(300) % 3 == 0, "u", "v"))
    a, mask_a = TablePreprocessor().fit_transform(full)
    b, mask_b = TablePreprocessor(impute="neighbors").fit_transform(full)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(mask_a, mask_b)


def test_neighbors_impute_new_rows_from_the_fitted_rows():
    gappy, full, y = _two_groups_with_gaps()
    pre = TablePreprocessor(impute="neighbors").fit(gappy)
    new = pd.DataFrame({"a": [10.0, 0.0], "b": [np.nan, np.nan], "c": [10.0, 0.0]})  # one row of each group
    Z, _ = pre.transform(new)
    assert Z[0, 1] > 0.7 and Z[1, 1] < -0.7
    np.testing.assert_array_equal(pre.fit_transform(gappy)[0], pre.fit(gappy).transform(gappy)[0])


def test_an_unknown_imputation_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="impute must be one of .*median.*neighbors"):
        TablePreprocessor(impute="mean")


def _groups_with_categories(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Two groups 10 apart in 2 numeric columns, a categorical column that names the group and one of pure noise
    (300 rows) -> (the table with a fifth of every column's cells removed, the full table, labels)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 300)
    full = pd.DataFrame(10.0 * y[:, None] + rng.normal(size=(300, 2)), columns=["a", "b"])
    full["group"] = pd.Categorical(np.where(y == 1, "p", "q"))
    full["noise"] = np.where(rng.random(300) < 0.5, "u", "v")
    gappy = full.copy()
    for name in gappy.columns:
        gappy[name] = gappy[name].mask(rng.random(300) < 0.2)
    return gappy, full, y


def test_impute_categorical_fills_a_missing_category_from_the_rows_own_group():
    gappy, full, _ = _groups_with_categories()
    gaps = gappy["group"].isna().to_numpy()
    truth, _ = TablePreprocessor().fit_transform(full)
    by_mode, _ = TablePreprocessor(impute="neighbors").fit_transform(gappy)
    mixed, _ = TablePreprocessor(impute="neighbors", impute_categorical=True).fit_transform(gappy)
    assert gaps.sum() > 40
    assert (mixed[gaps, 2] == truth[gaps, 2]).mean() >= 0.9  # the most frequent category: right on about half
    assert (by_mode[gaps, 2] == truth[gaps, 2]).mean() <= 0.7
    held = ~gappy.isna().to_numpy()
    np.testing.assert_array_equal(mixed[held], by_mode[held])


def test_impute_categorical_keeps_a_donor_that_shares_only_a_noise_column_from_looking_near():
    """The distance counts a column one of the two rows lacks at its average difference: scaled up from one shared
    noise column instead (``KNNImputer``'s rule), a donor without numeric values that matches the row's noise
    category would sit at distance 0."""
    gappy, full, y = _groups_with_categories()
    numeric_gaps = gappy[["a", "b"]].isna().to_numpy()
    truth, _ = TablePreprocessor().fit_transform(full)
    mixed, _ = TablePreprocessor(impute="neighbors", impute_categorical=True).fit_transform(gappy)
    side = np.where(y == 1, 1.0, -1.0)
    informed = numeric_gaps & ~numeric_gaps.all(1, keepdims=True)
    assert (np.sign(mixed[:, :2][informed]) == np.broadcast_to(side[:, None], (300, 2))[informed]).all()
    assert np.abs(mixed[:, :2] - truth[:, :2])[informed].mean() < 0.3


def test_impute_categorical_changes_nothing_without_gaps_and_fills_new_rows_and_pooled_categories():
    _, full, _ = _groups_with_categories()
    plain, _ = TablePreprocessor().fit_transform(full)
    np.testing.assert_array_equal(TablePreprocessor(impute="neighbors", impute_categorical=True)
                                  .fit_transform(full)[0], plain)
    pre = TablePreprocessor(impute="neighbors", impute_categorical=True).fit(full)
    new = pd.DataFrame({"a": [10.0, 0.0], "b": [10.0, 0.0], "group": [None, None], "noise": ["u", None]})
    Z, _ = pre.transform(new)
    assert Z[:, 2].tolist() == [0, 1]  # "p" (code 0) beside the group at 10, "q" beside the one at 0
    # a column of many categories, its rare ones pooled into "other": a gap among "other" rows becomes "other"
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 100)
    rare = np.array([f"r{i % 100}" for i in range(200)], dtype=object)
    table = pd.DataFrame({"x": 10.0 * y + rng.normal(size=200),
                          "c": np.where(y == 1, rare, np.where(np.arange(200) % 2 == 0, "a", "b"))})
    table.loc[[150, 151], "c"] = None
    pre = TablePreprocessor(max_categories=3, impute="neighbors", impute_categorical=True)
    Z, _ = pre.fit_transform(table)
    other = pre.columns_[1].other_code
    assert other is not None and Z[150, 1] == Z[151, 1] == other


def test_impute_average_gaps_keeps_a_donor_sharing_only_a_noise_column_from_looking_near_in_numeric_tables():
    """A numeric table: two groups 10 apart in ``a`` and ``b``, ``n`` pure noise, ``a`` missing in 40 % of the rows.
    ``KNNImputer``'s rescaling scores a donor that lacks ``a`` on ``n`` alone, scaled up: one close in noise sits
    at distance near 0 whatever its group. Counting ``a`` at its average difference instead keeps the fill of
    ``b`` on the row's own group's side."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    full = pd.DataFrame({"a": 10.0 * y + rng.normal(size=300), "b": 10.0 * y + rng.normal(size=300),
                         "n": 10.0 * rng.normal(size=300)})
    gappy = full.assign(a=full["a"].mask(rng.random(300) < 0.4), b=full["b"].mask(rng.random(300) < 0.2))
    gaps = (gappy["b"].isna() & gappy["a"].notna()).to_numpy()  # b to fill, the row's group readable from a
    side = np.where(y == 1, 1.0, -1.0)[gaps]
    rescaled, _ = TablePreprocessor(impute="neighbors").fit_transform(gappy)
    averaged, _ = TablePreprocessor(impute="neighbors", impute_average_gaps=True).fit_transform(gappy)
    assert gaps.sum() > 20
    assert (np.sign(averaged[gaps, 1]) == side).all()
    assert (np.sign(rescaled[gaps, 1]) == side).mean() < 0.8
    held = gappy.notna().to_numpy()
    np.testing.assert_array_equal(averaged[held], rescaled[held])
    # with categorical columns read the average difference is the rule already: the switch changes nothing there
    mixed = gappy.assign(c=pd.Categorical(np.where(rng.random(300) < 0.5, "u", "v")))
    a, _ = TablePreprocessor(impute="neighbors", impute_categorical=True).fit_transform(mixed)
    b, _ = TablePreprocessor(impute="neighbors", impute_categorical=True, impute_average_gaps=True).fit_transform(mixed)
    np.testing.assert_array_equal(a, b)


def test_empty_rows_are_those_without_a_value_in_any_usable_column():
    table = pd.DataFrame({"a": [1.0, np.nan, np.nan, 4.0, 5.0], "const": [7.0, 7.0, np.nan, 7.0, 7.0],
                          "c": pd.Categorical(["u", None, "v", None, "u"])})
    pre = TablePreprocessor().fit(table)
    assert list(pre.dropped_) == ["column 'const'"]
    # row 1: nothing; row 2: a category; row 3: a number; a value only in the dropped column does not count
    assert pre.empty_rows(table).tolist() == [False, True, False, False, False]
    assert pre.empty_rows(table.assign(a=np.nan)).tolist() == [False, True, False, True, False]
    # the cells filling supplies, per usable column (a, c): the dropped column's gap is not one
    np.testing.assert_array_equal(pre.absent_cells(table), [[False, False], [True, True], [True, False],
                                                            [False, True], [False, False]])


def test_set_aside_moves_kept_columns_among_the_screened_and_readmit_puts_them_back():
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"a": rng.normal(size=50), "b": rng.normal(size=50),
                          "sex": pd.Categorical(rng.choice(["f", "m"], 50)), "flag": rng.integers(0, 2, 50)})
    pre = TablePreprocessor().fit(table)
    full = pre.transform(table)[0]
    names = [c.name for c in pre.columns_]  # the columns' labels, as screened_ names them
    sex, flag = names[2], names[3]
    pre.set_aside(table, [sex, flag], "only splits", flags=(flag,))
    Z, cat_mask = pre.transform(table)
    assert Z.shape == (50, 2) and not cat_mask.any() and pre.screened_ == [sex, flag]
    np.testing.assert_array_equal(Z, full[:, :2])
    assert pre.dropped_[sex] == "only splits" and pre.screened_categorical.tolist() == [True, True]
    pre.readmit(table, [sex, flag])
    np.testing.assert_array_equal(pre.transform(table)[0], full)
    assert pre.screened_ == [] and sex not in pre.dropped_
    with pytest.raises(ValueError, match="not kept"):
        pre.set_aside(table, ["nope"], "x")
    with pytest.raises(ValueError, match="no column"):
        pre.set_aside(table, names, "x")


def test_clip_fences_keep_a_few_gross_values_from_setting_the_scale():
    rng = np.random.default_rng(0)
    x = rng.normal(size=300)
    gross = x.copy()
    gross[:5] = 999999.0
    df = pd.DataFrame({"x": gross, "y": rng.normal(size=300)})
    with pytest.warns(UserWarning, match="999999 \\(5 rows\\)"):  # named as a likely code either way
        plain = TablePreprocessor().fit_transform(df)[0]
        pre = TablePreprocessor(clip_fences=3.0).fit(df)
    assert plain[5:, 0].std() < 0.01  # without fences the 5 values are the column's whole spread
    q1, q3 = np.quantile(gross, [0.25, 0.75])
    col = pre.columns_[0]
    assert col.high == pytest.approx(q3 + 3 * (q3 - q1)) and col.low == pytest.approx(q1 - 3 * (q3 - q1))
    Z, _ = pre.transform(df)
    assert Z[5:, 0].std() > 0.5 and np.allclose(Z[:5, 0], Z[:5, 0].max())  # the gross values sit at the fence
    assert np.corrcoef(Z[5:, 0], x[5:])[0, 1] > 0.999  # the others keep their order and spacing
    np.testing.assert_array_equal(Z[:, 1], plain[:, 1])  # a column with nothing beyond its fences is as before
    beyond, _ = pre.transform(pd.DataFrame({"x": [-1e12], "y": [0.0]}))
    # a new row beyond a fence is read as the fence
    assert beyond[0, 0] == pytest.approx((col.low / col.unit - col.unit_center) / col.unit_scale, rel=1e-5)


def test_clip_fences_leave_columns_of_zero_iqr_and_refuse_a_non_positive_c():
    df = pd.DataFrame({"flag": [0.0] * 90 + [1.0] * 10, "x": np.arange(100.0)})
    pre = TablePreprocessor(clip_fences=3.0).fit(df)
    assert pre.columns_[0].high == np.inf  # most rows share one value: no fences, the 1s stay apart
    np.testing.assert_array_equal(pre.transform(df)[0], TablePreprocessor().fit_transform(df)[0])
    with pytest.raises(ValueError, match="clip_fences must be None or > 0"):
        TablePreprocessor(clip_fences=0.0)


def test_neighbour_filling_reads_values_at_their_fences():
    # the row with a gap is nearest to the row whose gross value the fence holds: it is filled from the fence
    x = np.r_[np.linspace(0.0, 1.0, 20), 1e9, np.nan]
    y = np.r_[np.linspace(0.0, 1.0, 20), 5.0, 5.0]
    pre = TablePreprocessor(impute="neighbors", clip_fences=3.0).fit(pd.DataFrame({"x": x, "y": y}))
    Z, _ = pre.transform(pd.DataFrame({"x": x, "y": y}))
    assert np.isfinite(Z).all() and Z[-1, 0] < Z[-2, 0] + 1e-6 and Z[-1, 0] > np.median(Z[:20, 0])


def test_a_value_shared_far_beyond_its_column_is_named_as_a_likely_missing_code():
    rng = np.random.default_rng(0)
    age = rng.normal(40, 10, size=200).round()
    age[:12] = -999.0
    with pytest.warns(UserWarning, match=r"column 'age': -999 \(12 rows\) lie more than 10 IQRs beyond"):
        pre = TablePreprocessor().fit(pd.DataFrame({"age": age, "x": rng.normal(size=200)}))
    assert pre.likely_codes_ == {"column 'age'": [-999.0]}
    one_off, tail = rng.normal(size=200), rng.normal(size=200)
    one_off[0] = 9999.0  # one row is not a code; a shared far value not in nines is a long tail (real tables')
    tail[:3] = 5001.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = TablePreprocessor().fit(pd.DataFrame({"x": one_off, "t": tail, "n": rng.poisson(3, 200).astype(float)}))
    assert quiet.likely_codes_ == {}


def test_fence_max_share_fences_a_few_gross_values_but_not_a_far_group():
    rng = np.random.default_rng(1)
    few, group = rng.normal(size=400), rng.normal(size=400)
    few[:3] = 1e6  # 0.75 % of the rows: gross values
    group[:40] = rng.normal(60.0, 1.0, size=40)  # 10 %: a far group, perhaps a cluster
    pre = TablePreprocessor(clip_fences=5.0, fence_max_share=0.01).fit(pd.DataFrame({"few": few, "g": group}))
    assert np.isfinite(pre.columns_[0].high) and pre.columns_[1].high == np.inf
    assert pre.fenced_ == {"column 'few'": 3}  # the far group is not fenced, so not counted
    assert TablePreprocessor().fit(pd.DataFrame({"few": few})).fenced_ == {}
    both = TablePreprocessor(clip_fences=5.0).fit(pd.DataFrame({"few": few, "g": group}))
    assert np.isfinite(both.columns_[1].high)  # without the share, the far group is fenced too
    with pytest.raises(ValueError, match="fence_max_share must be None or in"):
        TablePreprocessor(fence_max_share=1.5)


@pytest.mark.parametrize(("column", "kind"), [(pd.date_range("2020-01-01", periods=6), "dates"),
                                              (pd.to_timedelta(np.arange(6), unit="s"), "durations")])
def test_a_column_of_dates_or_durations_is_refused_saying_how_to_make_it_clusterable(column, kind):
    with pytest.raises(ValueError, match=rf"column 'when' holds {kind} \(.*\).*drop it, or turn it into numbers"):
        TablePreprocessor().fit(pd.DataFrame({"when": column, "x": np.arange(6.0)}))


def test_numeric_flags_are_cut_between_their_two_values_and_read_as_codes():
    from model.preprocessing import flag_cuts, flags_recoded

    Z = np.array([[-0.8, 0.0, 1.0, 2.0], [1.25, 1.0, 2.0, 0.5], [-0.8, 2.0, 3.0, 2.0], [1.25, 0.0, 1.0, 0.5]])
    cat_mask = np.array([False, True, False, False])  # column 1 holds category codes of three levels
    cuts = flag_cuts(Z, cat_mask)
    assert cuts[0] == pytest.approx(0.225) and cuts[3] == pytest.approx(1.25)
    assert np.isnan(cuts[1]) and np.isnan(cuts[2])  # a category, and a number of three values
    out = flags_recoded(Z, cuts)
    np.testing.assert_array_equal(out[:, 0], [0, 1, 0, 1])
    np.testing.assert_array_equal(out[:, 3], [1, 0, 1, 0])
    np.testing.assert_array_equal(out[:, 1:3], Z[:, 1:3])
    assert flags_recoded(Z, np.full(4, np.nan)) is Z  # no flag: the rows as they are
    new = flags_recoded(np.array([[0.1, 0.0, 5.0, 9.0]]), cuts)  # a new row between the values: by the cut
    np.testing.assert_array_equal(new[0, [0, 3]], [0, 1])


def test_category_codes_are_the_positions_pandas_get_indexer_gives():
    """The codes of a categorical column (``_category_codes``, on the fit and transform paths): each value's position
    among the kept categories, -1 for an unseen or missing value, as an object index's ``get_indexer`` gives them;
    strings, numbers and mixed columns, with None, NaN and pd.NA among them."""
    from model.preprocessing import _category_codes

    rng = np.random.default_rng(0)
    pools = [np.array(["a", "b", "c", "d", "e"], object), np.array([1, 2, 3, 4.5, 7], object),
             np.array(["x", 1, 2.5, "y", False], object)]
    for pool in pools:
        for _ in range(20):
            values = pool[rng.integers(0, len(pool), 50)].copy()
            values[rng.random(50) < 0.1] = [None, np.nan, pd.NA][int(rng.integers(0, 3))]
            categories = tuple(pool[rng.permutation(len(pool))[: int(rng.integers(1, len(pool)))]])
            expected = pd.Index(list(categories), dtype=object).get_indexer(values)
            np.testing.assert_array_equal(_category_codes(categories, values), expected)

