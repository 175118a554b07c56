"""Batch clustering: table discovery and validation, the per-table function, and the Ray run end to end."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from model.refinement import DEFAULT_REFINE, REFINES
from pipeline.batch_cluster import (
    SUMMARY_COLUMNS,
    ClusterJobConfig,
    UsageError,
    _log_mlflow,
    _run_on_actors,
    _start_tracking,
    _write_output,
    check_checkpoint,
    cluster_table,
    load_estimator,
    run_batch,
    worker_count,
)
from pipeline.tables import TableError, discover_tables, prepare_features, read_table, table_names


def _blobs(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 3)) + 4.0 * y[:, None]
    return pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=y)


@pytest.fixture()
def table_dir(tmp_path):
    """Two good tables and one of each kind of bad table."""
    d = tmp_path / "tables"
    d.mkdir()
    _blobs().to_csv(d / "good.csv", index=False)
    mixed = _blobs(seed=1).assign(colour=pd.Categorical(np.random.default_rng(1).choice(["r", "g"], 60)),
                                  customer=[f"c{i:03d}" for i in range(60)])  # free text: --ignore-columns
    mixed.to_parquet(d / "mixed.parquet", index=False)
    (d / "unreadable.parquet").write_bytes(b"this is not parquet")
    (d / "empty.csv").write_text("")
    (d / "header_only.csv").write_text("a,b,label\n")
    _blobs().head(1).to_csv(d / "one_row.csv", index=False)
    rng = np.random.default_rng(2)
    garbage = _blobs().assign(note=["".join(rng.choice(list("xyzqwk"), 8)) for _ in range(60)])
    garbage.to_csv(d / "garbage.csv", index=False)
    pd.DataFrame({"a": [np.nan] * 5, "b": [np.nan] * 5, "label": [0, 1, 0, 1, 0]}).to_csv(d / "all_missing.csv",
                                                                                         index=False)
    wide = pd.DataFrame(np.random.default_rng(3).normal(size=(10, 12)), columns=[f"w{j}" for j in range(12)])
    wide.assign(label=0).to_csv(d / "wide.csv", index=False)
    return d


BAD_REASONS = {
    "unreadable": "unreadable PARQUET",
    "empty": "empty",
    "header_only": "empty (no rows)",
    "one_row": "only 1 row",
    "garbage": "free text",
    "all_missing": "every feature value is missing",
    "wide": "exceed the limit of 10",
}


def test_discover_tables_expands_dirs_globs_and_files(tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.parquet").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("skip me")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "c.csv").write_text("x\n1\n")
    found = discover_tables([str(tmp_path), str(tmp_path / "sub" / "*.csv"), str(tmp_path / "a.csv")])
    assert [p.name for p in found] == ["a.csv", "b.parquet", "c.csv"]  # de-duplicated, .txt skipped
    with pytest.raises(ValueError, match="no CSV or Parquet tables"):
        discover_tables([str(tmp_path / "nothing*.csv")])


def test_an_existing_file_with_glob_characters_is_taken_as_itself(tmp_path):
    run = tmp_path / "run[1]"
    run.mkdir()
    (run / "t.csv").write_text("x\n1\n")
    (tmp_path / "a*b?.csv").write_text("x\n1\n")
    (tmp_path / "ab1.csv").write_text("x\n1\n")  # what "a*b?.csv" would match as a pattern
    found = discover_tables([str(run / "t.csv"), str(tmp_path / "a*b?.csv")])
    assert found == [(run / "t.csv").resolve(), (tmp_path / "a*b?.csv").resolve()]


def test_table_names_are_unique_when_stems_collide(tmp_path):
    from pathlib import Path

    paths = [Path("x/t.csv"), Path("x/t.parquet"), Path("y/t.csv"), Path("y/u.csv")]
    assert table_names(paths) == ["t_csv", "t_parquet", "t_csv_2", "u"]


@pytest.mark.parametrize("name", sorted(BAD_REASONS))
def test_bad_tables_are_refused_with_the_reason(table_dir, name):
    path = next(table_dir.glob(f"{name}.*"))
    with pytest.raises(TableError, match=BAD_REASONS[name].replace("(", r"\(").replace(")", r"\)")):
        prepare_features(read_table(path), label_column="label", max_columns=10)


@pytest.mark.parametrize(("text", "columns", "first"), [
    ("a;b;name\n1,5;2;x\n3,25;4;y\n", ["a", "b", "name"], [1.5, 2, "x"]),  # a European spreadsheet's export
    ("a\tb\n1.5\t2\n3\t4\n", ["a", "b"], [1.5, 2]),
    ("a|b\n1.5|2\n3|4\n", ["a", "b"], [1.5, 2]),
    ('"x;y",b\n1.5,2\n3,4\n', ["x;y", "b"], [1.5, 2]),  # a separator inside a quoted name does not count
    ("a\n1.5\n3\n", ["a"], [1.5]),
    ("a;;b,c\n1.5,2\n", ["a;;b", "c"], [1.5, 2]),  # more ";" than "," in the header, but not in the rows
])
def test_a_csv_tables_separator_and_decimal_mark_are_read_off_its_header(tmp_path, text, columns, first):
    path = tmp_path / "t.csv"
    path.write_text(text)
    table = read_table(path)
    assert list(table.columns) == columns and table.iloc[0].tolist() == first


def test_a_european_export_with_thousands_points_is_clustered_as_its_numbers(tmp_path):
    from model.preprocessing import TablePreprocessor

    plain = _blobs(60, seed=2)
    path = tmp_path / "t.csv"
    with open(path, "w", encoding="utf-8") as fh:  # "1.234,56", "825,68": pandas leaves such a column as text
        fh.write("a;b;label\n")
        for a, b, label in plain[["a", "b", "label"]].itertuples(index=False):
            fh.write(f"{a * 1000:,.2f}".translate(str.maketrans(",.", ".,")) + f";{b:.3f}".replace(".", ",")
                     + f";{label}\n")
    table = read_table(path)
    assert not pd.api.types.is_numeric_dtype(table["a"]) and any("." in v and "," in v for v in table["a"])
    features, _ = prepare_features(table, label_column="label")  # numbers, not free text
    with pytest.warns(UserWarning, match="column 'a': numbers written with a decimal comma"):
        read = TablePreprocessor().fit(features)
    expected = plain[["a", "b"]].assign(a=(plain["a"] * 1000).round(2), b=plain["b"].round(3))
    np.testing.assert_allclose(read.transform(features)[0], TablePreprocessor().fit(expected).transform(expected)[0],
                               atol=1e-5)


def test_an_excel_workbook_is_read_from_its_one_sheet_with_data_and_clustered(tmp_path, tiny_checkpoint):
    df = _blobs(60, seed=3).assign(colour=["red", "blue", "green"] * 20)
    path = tmp_path / "sales.xlsx"
    with pd.ExcelWriter(path) as book:
        pd.DataFrame().to_excel(book, sheet_name="notes", index=False)  # an empty sheet beside the table
        df.to_excel(book, sheet_name="data", index=False)
    pd.testing.assert_frame_equal(read_table(path), df, check_dtype=False)
    assert discover_tables([str(tmp_path)]) == [path]
    row, out = cluster_table(load_estimator(tiny_checkpoint, 3, 0), path, "sales", label_column="label")
    assert row["status"] == "ok" and len(out) == 60 and row["ari"] is not None
    with pd.ExcelWriter(path) as book:  # two tables in one workbook: neither is chosen for the user
        df.to_excel(book, sheet_name="2025", index=False)
        df.to_excel(book, sheet_name="2026", index=False)
    with pytest.raises(TableError, match=r"the workbook holds 2 sheets with data \('2025', '2026'\); save each"):
        read_table(path)
    path.write_text("not a workbook")
    with pytest.raises(TableError, match="unreadable XLSX file"):
        read_table(path)


def test_a_csv_in_windows_encoding_is_read_with_its_accents_and_euro_signs(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes("ville;prix\nOrléans;€1,5\nParis;€3\n".encode("cp1252"))  # an Excel export on Windows
    table = read_table(path)
    assert table["ville"].tolist() == ["Orléans", "Paris"] and table["prix"].tolist() == ["€1,5", "€3"]
    path.write_bytes(b"a,b\n1,\x81\n2,x\n")  # a byte cp1252 leaves undefined: Latin-1 still reads the table
    assert read_table(path)["b"].tolist() == ["\x81", "x"]


def test_prepare_features_keeps_columns_unchanged_and_splits_the_label():
    df = _blobs().assign(colour=pd.Categorical(["r", "g"] * 30), code=["1", "2.5"] * 30)
    features, truth = prepare_features(df, label_column="label")
    pd.testing.assert_frame_equal(features, df.drop(columns=["label"]))
    pd.testing.assert_series_equal(truth, df["label"])
    with pytest.raises(TableError, match="label column 'nope' not found"):
        prepare_features(df, label_column="nope")


@pytest.mark.parametrize("written", ["%Y-%m-%d", "%d/%m/%Y %H:%M", "%d %b %Y"])
def test_a_column_of_dates_is_refused_as_dates_naming_the_option_that_leaves_it_out(written):
    df = _blobs().assign(when=pd.date_range("2020-01-01", periods=60, freq="D").strftime(written))
    with pytest.raises(TableError, match=r"column 'when' holds dates \(60 distinct, .*--ignore-columns when"):
        prepare_features(df, label_column="label")
    features, _ = prepare_features(df, label_column="label", ignore_columns=("when",))
    assert "when" not in features


def test_ignored_columns_are_kept_out_of_the_features_where_a_table_has_them():
    df = _blobs().assign(name=[f"customer {i}" for i in range(60)])
    with pytest.raises(TableError, match="'name' holds free text .* --ignore-columns name"):
        prepare_features(df, label_column="label")
    features, truth = prepare_features(df, label_column="label", ignore_columns=("name", "absent"))
    pd.testing.assert_frame_equal(features, df.drop(columns=["label", "name"]))
    with pytest.raises(TableError, match=r"no feature columns besides the ignored \['a', 'b'\]"):
        prepare_features(df[["a", "b", "label"]], label_column="label", ignore_columns=("a", "b"))


def test_an_ignored_column_is_not_clustered_but_kept_in_the_output(tmp_path, tiny_checkpoint):
    df = _blobs(80, seed=4)
    path = tmp_path / "t.csv"
    df.assign(name=[f"customer {i}" for i in range(80)]).to_csv(path, index=False)
    est = load_estimator(tiny_checkpoint, None, 0)
    refused, _ = cluster_table(est, path, "t", label_column="label")
    assert refused["status"] == "failed" and "--ignore-columns name" in refused["error"]
    row, out = cluster_table(est, path, "t", label_column="label", ignore_columns=("name",))
    assert row["status"] == "ok" and "column 'name'" in json.loads(row["ignored_columns"])
    assert out["name"].tolist() == [f"customer {i}" for i in range(80)]
    alone = tmp_path / "alone.csv"
    df.to_csv(alone, index=False)
    _, without = cluster_table(est, alone, "alone", label_column="label")
    np.testing.assert_array_equal(out["cluster"], without["cluster"])


def test_missing_value_codes_reach_the_estimator_of_every_worker(tmp_path, tiny_checkpoint):
    df = _blobs(80, seed=6)
    gaps = df.assign(a=df["a"].where(df.index % 9 != 0))
    path, reference = tmp_path / "coded.csv", tmp_path / "gaps.csv"
    gaps.fillna({"a": -999}).to_csv(path, index=False)
    gaps.to_csv(reference, index=False)
    est = load_estimator(tiny_checkpoint, None, 0, missing_values=(-999.0,))
    assert est.missing_values == [-999.0]
    _, coded = cluster_table(est, path, "coded", label_column="label")
    _, plain = cluster_table(load_estimator(tiny_checkpoint, None, 0), reference, "gaps", label_column="label")
    np.testing.assert_array_equal(coded["cluster"], plain["cluster"])


def test_a_table_with_output_column_names_is_refused(tmp_path, tiny_checkpoint):
    path = tmp_path / "again.csv"
    _blobs().assign(cluster=0).to_csv(path, index=False)
    row, out = cluster_table(load_estimator(tiny_checkpoint, None, 0), path, "again")
    assert out is None and row["status"] == "failed" and "already has column(s) ['cluster']" in row["error"]


def test_a_parquet_tables_own_index_is_kept_in_the_output(tmp_path, tiny_checkpoint):
    df = _blobs(30).set_index(pd.Index([f"id{i}" for i in range(30)], name="id"))
    df.to_parquet(tmp_path / "indexed.parquet")
    row, out = cluster_table(load_estimator(tiny_checkpoint, None, 0), tmp_path / "indexed.parquet", "indexed")
    _write_output(tmp_path, row, out)
    written = pd.read_parquet(tmp_path / "indexed.parquet")
    pd.testing.assert_index_equal(written.index, df.index)
    pd.testing.assert_frame_equal(written[list(df.columns)], df)


def test_numeric_column_with_words_among_the_numbers_is_refused_and_with_markers_passes():
    df = pd.DataFrame({"x": ["1.0", "2.0", "?", "4.0", "low", "6.0"], "y": range(6)})
    with pytest.raises(TableError, match="numeric but holds non-numeric strings \\(e.g. 'low'\\)"):
        prepare_features(df)
    marked = df.assign(x=["1.0", "2.0", "?", "4.0", "n/a", "6.0"])
    features, _ = prepare_features(marked)
    pd.testing.assert_frame_equal(features, marked)
    money = df.assign(x=[f"${v:,.2f}" for v in (1e3, 2e4, 3.5, 4e5, 5e6, 6e7)])  # as text: 6 levels in 6 rows
    pd.testing.assert_frame_equal(prepare_features(money)[0], money)


def test_the_summary_names_the_markers_read_as_missing(tmp_path, tiny_checkpoint):
    rng = np.random.default_rng(7)
    table = pd.DataFrame({"a": rng.normal(size=200).round(3), "b": rng.normal(size=200)}).astype({"a": object})
    table.loc[:4, "a"] = "?"
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    with pytest.warns(UserWarning, match="read as missing"):
        row, out = cluster_table(load_estimator(tiny_checkpoint, 2, 0), path, "t")
    assert row["status"] == "ok" and json.loads(row["missing_markers"]) == {"column 'a'": ["?"]} and len(out) == 200
    failed, _ = cluster_table(load_estimator(tiny_checkpoint, 2, 0), tmp_path / "missing.csv", "missing")
    assert failed["missing_markers"] is None


def test_cluster_table_equals_a_fresh_estimator_with_the_same_seed(tmp_path, tiny_checkpoint):
    from model import TabClustPFN

    df = _blobs(80, seed=5)
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    est = load_estimator(tiny_checkpoint, None, 7)
    _blobs(40, seed=9).drop(columns="label").pipe(est.fit)  # a previous table on the same (reused) estimator
    row, out = cluster_table(est, path, "t", label_column="label")
    fresh = TabClustPFN(checkpoint=tiny_checkpoint, random_state=7).fit(pd.read_csv(path).drop(columns="label"))
    assert row["status"] == "ok" and row["error"] == ""
    np.testing.assert_array_equal(out["cluster"].to_numpy(), fresh.labels_)
    probs = out[[f"prob_{k}" for k in range(fresh.n_clusters_)]].to_numpy()
    np.testing.assert_allclose(probs, fresh.probabilities_, rtol=1e-5, atol=1e-6)
    assert row["n_clusters"] == fresh.n_clusters_
    assert fresh.k_posterior_ is None and json.loads(row["k_posterior"]) == {}  # 3 columns: BIC, no network
    pd.testing.assert_frame_equal(out[list(df.columns)], pd.read_csv(path))  # input rows kept, label included
    from sklearn.metrics import adjusted_rand_score

    assert row["ari"] == pytest.approx(adjusted_rand_score(df["label"], fresh.labels_), abs=1e-6)


def test_the_summary_carries_the_networks_posterior_over_k(tmp_path, tiny_checkpoint):
    from model import TabClustPFN

    rng = np.random.default_rng(3)  # 6 columns: wider than the BIC path, so the network runs
    y = rng.integers(0, 3, 90)
    df = pd.DataFrame(rng.normal(size=(90, 6)) + 4.0 * y[:, None]).add_prefix("x").assign(label=y)
    path = tmp_path / "wide.csv"
    df.to_csv(path, index=False)
    row, _ = cluster_table(load_estimator(tiny_checkpoint, None, 0), path, "wide", label_column="label")
    fresh = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0).fit(df.drop(columns="label"))
    assert json.loads(row["k_posterior"]) == pytest.approx({str(k): v for k, v in fresh.k_posterior_.items()},
                                                           abs=1e-6)


def test_the_output_holds_the_partition_at_the_next_most_probable_k(tmp_path, tiny_checkpoint):
    from model import TabClustPFN

    df = _blobs(60, seed=0)
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    row, out = cluster_table(load_estimator(tiny_checkpoint, None, 0), path, "t", label_column="label")
    fresh = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0).fit(df.drop(columns="label"))
    ranked = sorted(fresh.k_probabilities_, key=lambda k: -fresh.k_probabilities_[k])
    assert ranked[0] == fresh.k_chosen_ == row["n_clusters"]  # the table's K; the runner-up is the next
    assert row["k_next"] == ranked[1] and row["k_next_probability"] == pytest.approx(
        fresh.k_probabilities_[ranked[1]], abs=1e-6)
    np.testing.assert_array_equal(out["cluster_next"].to_numpy(),
                                  fresh.predict(df.drop(columns="label"), n_clusters=ranked[1]))
    assert out["cluster_next"].nunique() == ranked[1]
    given, out = cluster_table(load_estimator(tiny_checkpoint, 2, 0), path, "t", label_column="label")
    assert given["k_next"] is None and given["k_next_probability"] is None and "cluster_next" not in out
    df.head(3).to_csv(path, index=False)  # 3 rows: K = 2 is the only K a fit can weigh
    alone, out = cluster_table(load_estimator(tiny_checkpoint, None, 0), path, "t", label_column="label")
    assert alone["status"] == "ok" and alone["k_next"] is None and "cluster_next" not in out
    df.assign(cluster_next=0).to_csv(path, index=False)
    taken, _ = cluster_table(load_estimator(tiny_checkpoint, None, 0), path, "t", label_column="label")
    assert taken["status"] == "failed" and "cluster_next" in taken["error"]


def test_k_selection_and_max_clusters_reach_the_estimator(tmp_path, tiny_checkpoint):
    path = tmp_path / "t.csv"
    _blobs().to_csv(path, index=False)
    est = load_estimator(tiny_checkpoint, None, 0, k_selection="posterior_mode", max_clusters=2)
    assert est.k_selection == "posterior_mode" and est.max_clusters == 2
    row, out = cluster_table(est, path, "t", label_column="label")
    assert row["status"] == "ok" and row["n_clusters"] == 2 and out["cluster"].between(0, 1).all()


def test_the_summary_says_where_k_came_out_at_the_top_of_its_range(tmp_path):
    from sklearn.datasets import make_blobs

    from model import KRangeWarning

    six = make_blobs(n_samples=600, n_features=6, centers=6, cluster_std=0.5, random_state=3)[0]
    path = tmp_path / "six.csv"
    pd.DataFrame(six, columns=[f"x{j}" for j in range(6)]).to_csv(path, index=False)
    with pytest.warns(KRangeWarning, match="K = 3, the most clusters"):
        capped, _ = cluster_table(load_estimator(None, None, 0, max_clusters=3), path, "six")
    assert capped["status"] == "ok" and capped["n_clusters"] == 3 and capped["k_at_top"] is True
    free, _ = cluster_table(load_estimator(None, None, 0), path, "six")
    assert free["k_at_top"] is False and free["n_clusters"] < 10
    given, _ = cluster_table(load_estimator(None, 3, 0), path, "six")
    assert given["k_at_top"] is False  # K given: no range was searched
    failed, _ = cluster_table(load_estimator(None, None, 0), tmp_path / "missing.csv", "missing")
    assert failed["k_at_top"] is None


def test_allow_single_cluster_reaches_the_estimator_and_a_one_mode_table_gets_one_cluster(tmp_path, tiny_checkpoint):
    path = tmp_path / "cloud.csv"
    pd.DataFrame(np.random.default_rng(2).standard_t(3, size=(400, 3)), columns=list("abc")).to_csv(path, index=False)
    assert not load_estimator(tiny_checkpoint, None, 0).allow_single_cluster
    est = load_estimator(tiny_checkpoint, None, 0, allow_single_cluster=True)
    row, out = cluster_table(est, path, "cloud")
    assert est.structure_score_ > est.single_cluster_z  # one heavy-tailed cloud (score about 6.6)
    assert row["status"] == "ok" and row["n_clusters"] == 1 and (out["cluster"] == 0).all()
    assert row["structure_score"] == pytest.approx(est.structure_score_, abs=1e-4)  # why K = 1, in summary.csv
    plain, _ = cluster_table(load_estimator(tiny_checkpoint, None, 0), path, "cloud")
    assert plain["structure_score"] is None and plain["n_clusters"] >= 2


def test_screen_noise_reaches_the_estimator_and_the_summary_names_the_ignored_columns(tmp_path, tiny_checkpoint):
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], 200)
    table = pd.DataFrame({"signal": 6.0 * y + rng.normal(size=400), "n1": rng.normal(size=400),
                          "n2": rng.normal(size=400), "constant": 1.0})
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    assert load_estimator(tiny_checkpoint, 2, 0).screen_noise == "auto"  # the estimator's default
    row, _ = cluster_table(load_estimator(tiny_checkpoint, 2, 0), path, "t")  # a two-mode column: screened
    assert row["status"] == "ok"
    assert json.loads(row["ignored_columns"]) == ["column 'constant'", "column 'n1'", "column 'n2'"]
    plain, _ = cluster_table(load_estimator(tiny_checkpoint, 2, 0, screen_noise=False), path, "t")
    assert json.loads(plain["ignored_columns"]) == ["column 'constant'"]


def test_the_summary_counts_the_rows_with_no_value_in_any_column(tmp_path, tiny_checkpoint):
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1], 100)
    table = pd.DataFrame({"a": 8.0 * y + rng.normal(size=200), "b": rng.normal(size=200), "c": rng.normal(size=200)})
    table.loc[[5, 50, 150], :] = np.nan
    table.loc[7, ["a", "b"]] = np.nan  # one value left: not empty
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    with pytest.warns(UserWarning, match="3 of the 200 rows have no value in any usable column"):
        row, out = cluster_table(load_estimator(tiny_checkpoint, 2, 0), path, "t")
    assert row["status"] == "ok" and row["empty_rows"] == 3 and len(out) == 200
    assert json.loads(row["fenced_values"]) == {}
    failed, _ = cluster_table(load_estimator(tiny_checkpoint, 2, 0), tmp_path / "missing.csv", "missing")
    assert failed["empty_rows"] is None and failed["fenced_values"] is None


def test_the_summary_counts_the_gross_values_read_at_a_fence(tmp_path, tiny_checkpoint):
    rng = np.random.default_rng(5)
    table = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300)})
    table.loc[:1, "a"] = 1e7  # two entry errors: under 1 % of the column, read at its upper fence
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    row, _ = cluster_table(load_estimator(tiny_checkpoint, 2, 0), path, "t")
    assert row["status"] == "ok" and json.loads(row["fenced_values"]) == {"column 'a'": 2}
    assert json.loads(row["likely_codes"]) == {}


def test_the_summary_names_likely_missing_value_codes_which_a_worker_only_warns_of(tmp_path, tiny_checkpoint):
    rng = np.random.default_rng(6)
    table = pd.DataFrame({"age": rng.normal(40, 10, size=300).round(), "b": rng.normal(size=300)})
    table.loc[:9, "age"] = -999.0
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    with pytest.warns(UserWarning, match="-999"):
        row, _ = cluster_table(load_estimator(tiny_checkpoint, 2, 0), path, "t")
    assert row["status"] == "ok" and json.loads(row["likely_codes"]) == {"column 'age'": [-999.0]}
    failed, _ = cluster_table(load_estimator(tiny_checkpoint, 2, 0), tmp_path / "missing.csv", "missing")
    assert failed["likely_codes"] is None


def test_power_transform_reaches_the_estimator_of_every_worker(tmp_path, tiny_checkpoint):
    from model.power import DEFAULT_POWER_TRANSFORM
    from pipeline.batch_cluster import TableClusterer

    assert load_estimator(tiny_checkpoint, 2, 0).power_transform is DEFAULT_POWER_TRANSFORM
    assert load_estimator(tiny_checkpoint, 2, 0, power_transform=False).power_transform is False
    assert TableClusterer(tiny_checkpoint, 2, 0, None, 64, power_transform=False)._estimator.power_transform is False
    assert ClusterJobConfig(power_transform="TRUE").power_transform is True  # as a command line gives it
    with pytest.raises(ValueError, match="power_transform"):
        ClusterJobConfig(power_transform="yes")


def test_impute_reaches_the_estimator_of_every_worker(tmp_path, tiny_checkpoint):
    from model.preprocessing import DEFAULT_IMPUTE
    from pipeline.batch_cluster import TableClusterer

    assert load_estimator(tiny_checkpoint, 2, 0).impute == DEFAULT_IMPUTE == "neighbors"
    assert load_estimator(tiny_checkpoint, 2, 0, impute="median").impute == "median"
    assert TableClusterer(tiny_checkpoint, 2, 0, None, 64, impute="median")._estimator.impute == "median"
    with pytest.raises(ValueError, match="unknown impute 'mean': use one of"):
        ClusterJobConfig(impute="mean")


def test_the_summary_gives_the_chosen_ks_probability_where_a_calibrated_ranker_chose_it(tmp_path, tiny_checkpoint):
    from model.estimator import default_checkpoint_path

    path = tmp_path / "t.csv"
    _blobs().to_csv(path, index=False)
    row, _ = cluster_table(load_estimator(tiny_checkpoint, None, 0, "expected_ari"), path, "t", label_column="label")
    assert row["status"] == "ok" and row["k_probability"] is None  # K by a rule without probabilities
    est = load_estimator(tiny_checkpoint, None, 0)  # a table of few columns: the BIC path's probabilities
    row, _ = cluster_table(est, path, "t", label_column="label")
    assert est.k_selection_ == "bic" and row["k_probability"] == pytest.approx(max(est.k_probabilities_.values()),
                                                                                   abs=1e-6)  # 6 decimals
    if not default_checkpoint_path().is_file():
        pytest.skip("no shipped checkpoint in this checkout")
    est = load_estimator(None, None, 0)
    row, _ = cluster_table(est, path, "t", label_column="label")
    assert row["k_probability"] == pytest.approx(est.k_probabilities_[est.k_chosen_], abs=1e-6)
    assert row["k_probability"] == pytest.approx(max(est.k_probabilities_.values()), abs=1e-6)


def test_refine_reaches_the_estimator_and_none_keeps_its_default(tiny_checkpoint):
    assert load_estimator(tiny_checkpoint, None, 0, n_estimators=1).refine == DEFAULT_REFINE
    for refine in REFINES:
        assert load_estimator(tiny_checkpoint, None, 0, n_estimators=1, refine=refine).refine == refine


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"k_selection": "silhouette"}, "unknown k_selection 'silhouette'"),
        ({"max_clusters": 1}, "max_clusters must be >= 2"),
        ({"n_clusters": 5, "max_clusters": 3}, "n_clusters=5 is larger than max_clusters=3"),
        ({"seed": -1}, r"seed must be in 0\.\.4294967295"),
        ({"seed": 2**32}, r"seed must be in 0\.\.4294967295"),
        ({"max_retries": -1}, "max_retries must be >= 0, got -1"),
        ({"refine": "spectral"}, "unknown refine 'spectral'"),
        ({"ignore_columns": "id"}, r"ignore_columns must be a sequence of column names, e\.g\. \('id',\)"),
        ({"missing_values": (float("nan"),)}, "missing_values holds nan"),
    ],
)
def test_bad_k_settings_are_refused_by_the_config(params, match):
    with pytest.raises(ValueError, match=match):
        ClusterJobConfig(**params)


def test_max_clusters_above_the_checkpoints_k_max_is_refused_before_any_work(tiny_checkpoint):
    with pytest.raises(ValueError, match=r"max_clusters=11 is outside 2\.\.10"):
        check_checkpoint(tiny_checkpoint, None, 11)


@pytest.mark.parametrize("case", ["output_is_input_dir", "output_overwrites_input", "output_is_a_file"])
def test_outputs_that_would_overwrite_an_input_are_refused_before_any_work(tmp_path, tiny_checkpoint, case):
    d = tmp_path / "in"
    d.mkdir()
    _blobs().to_parquet(d / "t.parquet")
    inputs, output, match = {
        "output_is_input_dir": ((str(d),), d / ".", "is the input folder"),
        "output_overwrites_input": ((str(d / "t.parquet"),), d, "would overwrite the input table"),
        "output_is_a_file": ((str(d),), d / "t.parquet", "is an existing file, not a folder"),
    }[case]
    cfg = ClusterJobConfig(inputs=inputs, output_dir=str(output), checkpoint=tiny_checkpoint, progress=False)
    with pytest.raises(UsageError, match=match):
        run_batch(cfg)
    assert sorted(p.name for p in d.iterdir()) == ["t.parquet"]


def test_worker_count_is_capped_at_the_clusters_cpus(caplog):
    with caplog.at_level("WARNING", logger="pipeline.batch_cluster"):
        assert worker_count(8, tables=10, free_cpus=2, total_cpus=2) == 2
    assert "8 Ray workers requested, but the cluster has 2 CPUs" in caplog.text
    assert worker_count(None, tables=10, free_cpus=3, total_cpus=4) == 3  # default: one per free CPU
    assert worker_count(3, tables=10, free_cpus=1, total_cpus=4) == 3  # the others start as CPUs free up
    assert worker_count(4, tables=2, free_cpus=4, total_cpus=4) == 2  # at most one per table
    assert worker_count(None, tables=5, free_cpus=0, total_cpus=4) == 1


def _summary(names: list[str]) -> pd.DataFrame:
    summary = pd.DataFrame([{"table": n, "status": "ok", "rows": 10, "columns": 2, "n_clusters": i + 2,
                             "k_posterior": "{}", "seconds": 0.1, "ari": 0.5, "nmi": 0.5, "error": "", "path": n}
                            for i, n in enumerate(names)], columns=SUMMARY_COLUMNS)
    summary.attrs = {"num_workers": 1, "startup_seconds": 1.0, "clustering_seconds": 1.0}
    return summary


def test_mlflow_metric_keys_are_valid_and_unique_for_any_table_name(tmp_path, tracking_uri):
    import mlflow

    names = ["..weird", "L" * 245, "a+b", "a_b", "sales 2024 (v2)", "ü/x"]
    summary = _summary(names)
    summary.to_csv(tmp_path / "summary.csv", index=False)
    cfg = ClusterJobConfig(inputs=("x",), tracking_uri=tracking_uri)
    run_id = _log_mlflow(cfg, summary, tmp_path / "summary.csv", _start_tracking(cfg))
    assert run_id is not None
    metrics = mlflow.MlflowClient(tracking_uri).get_run(run_id).data.metrics
    k_keys = sorted(k for k in metrics if k.endswith(".n_clusters"))
    assert len(k_keys) == len(names)  # none collide
    assert [metrics[k] for k in k_keys] == [float(i + 2) for i in range(len(names))]  # in summary order
    assert k_keys[2:4] == ["2_a_b.n_clusters", "3_a_b.n_clusters"]


def test_an_mlflow_failure_is_a_warning_not_an_error(tmp_path, tracking_uri, monkeypatch, caplog):
    import mlflow

    cfg = ClusterJobConfig(inputs=("x",), tracking_uri=tracking_uri)
    experiment_id = _start_tracking(cfg)
    summary = _summary(["t"])
    summary.to_csv(tmp_path / "summary.csv", index=False)

    def broken(*args, **kwargs):
        raise OSError("artifact store is full")

    monkeypatch.setattr(mlflow, "log_artifact", broken)
    with caplog.at_level("WARNING", logger="pipeline.batch_cluster"):
        assert _log_mlflow(cfg, summary, tmp_path / "summary.csv", experiment_id) is None
    assert "MLflow logging failed (OSError: artifact store is full)" in caplog.text

    mlflow.MlflowClient(tracking_uri).delete_experiment(experiment_id)
    caplog.clear()
    with caplog.at_level("WARNING", logger="pipeline.batch_cluster"):
        assert _start_tracking(cfg) is None  # a deleted experiment: found before any table is clustered
    assert "MLflow tracking is off for this run" in caplog.text and "restore or delete the experiment" in caplog.text


@pytest.fixture()
def hog_cpus(ray_local):
    """Reserve CPUs of the session Ray in a placement group, as other jobs on a shared cluster would."""
    from ray.util.placement_group import placement_group, remove_placement_group

    groups = []

    def hog(leave_free: int) -> None:
        total = int(ray_local.cluster_resources()["CPU"])
        group = placement_group([{"CPU": 1}] * (total - leave_free))
        ray_local.get(group.ready(), timeout=120)
        groups.append(group)

    yield hog
    for group in groups:
        remove_placement_group(group)


def _jobs(tmp_path, n: int) -> list:
    jobs = []
    for i in range(n):
        path = tmp_path / f"t{i}.csv"
        _blobs(30, seed=i).to_csv(path, index=False)
        jobs.append((path, f"t{i}"))
    return jobs


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_actors_that_cannot_start_do_not_hold_up_the_others(hog_cpus, tmp_path, tiny_checkpoint):
    hog_cpus(leave_free=1)  # room for 1 of the 2 actors
    cfg = ClusterJobConfig(checkpoint=tiny_checkpoint, n_estimators=1)
    rows = []
    _run_on_actors(cfg, _jobs(tmp_path, 3), 2, lambda row, out: rows.append(row))
    assert sorted(r["table"] for r in rows) == ["t0", "t1", "t2"] and all(r["status"] == "ok" for r in rows)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_no_actor_able_to_start_is_a_clear_error_not_a_hang(hog_cpus, tmp_path, tiny_checkpoint):
    hog_cpus(leave_free=0)
    cfg = ClusterJobConfig(checkpoint=tiny_checkpoint, n_estimators=1)
    with pytest.raises(RuntimeError, match=r"no Ray worker started within 2 s: 1 wait for 1 CPU each and the "
                                           r"cluster has 0 free; free CPUs or pass a smaller --num-workers"):
        _run_on_actors(cfg, _jobs(tmp_path, 1), 1, lambda row, out: None, start_timeout=2)


@pytest.mark.slow
def test_run_batch_reports_bad_tables_and_completes_the_rest(ray_local, table_dir, tmp_path, tiny_checkpoint,
                                                             tracking_uri, caplog):
    import mlflow

    out_dir = tmp_path / "out"
    (out_dir).mkdir()
    (out_dir / "wide.parquet").write_text("stale output of an earlier run")
    cfg = ClusterJobConfig(inputs=(str(table_dir),), output_dir=str(out_dir), label_column="label",
                           ignore_columns=("customer", "Customer"), missing_values=(-999.0, "unknown"),
                           checkpoint=tiny_checkpoint, num_workers=2,
                           seed=3, max_columns=10, max_clusters=3, tracking_uri=tracking_uri, progress=False)
    with caplog.at_level("WARNING", logger="pipeline.batch_cluster"):
        summary = run_batch(cfg)
    assert "--ignore-columns 'Customer': no clustered table has such a column" in caplog.text  # 'customer' matched
    assert "column 'customer'" in json.loads(summary.set_index("table").at["mixed", "ignored_columns"])
    on_disk = pd.read_csv(out_dir / "summary.csv")
    assert list(on_disk["table"]) == list(summary["table"])
    status = dict(zip(summary["table"], summary["status"]))
    assert {t for t, s in status.items() if s == "ok"} == {"good", "mixed"}
    errors = dict(zip(summary["table"], summary["error"]))
    for name, reason in BAD_REASONS.items():
        assert status[name] == "failed" and reason in errors[name], (name, errors[name])
        assert not (out_dir / f"{name}.parquet").exists()
    for name in ("good", "mixed"):
        out = pd.read_parquet(out_dir / f"{name}.parquet")
        k, k_next = summary.set_index("table").loc[name, ["n_clusters", "k_next"]]
        added = ["cluster"] + [f"prob_{j}" for j in range(int(k))] + ([] if pd.isna(k_next) else ["cluster_next"])
        assert list(out.columns[-len(added):]) == added
        k = int(k)
        assert len(out) == 60 and out["cluster"].between(0, k - 1).all()
        np.testing.assert_allclose(out[[f"prob_{j}" for j in range(k)]].sum(axis=1), 1.0, atol=1e-4)
    assert summary.set_index("table").loc[["good", "mixed"], "ari"].notna().all()
    assert summary.set_index("table").loc[["good", "mixed"], "n_clusters"].le(3).all()  # max_clusters reached them
    assert summary.attrs["num_workers"] == 2 and summary.attrs["clustering_seconds"] > 0

    client = mlflow.MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name("cluster").experiment_id])
    assert len(runs) == 1
    m = runs[0].data.metrics
    assert m["tables_ok"] == 2 and m["tables_failed"] == len(BAD_REASONS)
    position = {name: i for i, name in enumerate(summary["table"])}
    good, mixed = f"{position['good']}_good", f"{position['mixed']}_mixed"
    assert {f"{good}.ari", f"{good}.nmi", f"{good}.n_clusters", f"{mixed}.seconds"} <= set(m)
    assert runs[0].info.run_id == summary.attrs["mlflow_run_id"]
    assert runs[0].data.params["max_clusters"] == "3" and runs[0].data.params["k_selection"] == "auto"
    assert runs[0].data.params["ignore_columns"] == "customer,Customer"
    assert runs[0].data.params["missing_values"] == "-999.0,unknown"
    artifacts = [a.path for a in client.list_artifacts(runs[0].info.run_id)]
    assert "summary.csv" in artifacts


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc): this test's own Ray, never another user's."""
    parent = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        parent[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [p for p, pp in parent.items() if pp in frontier]
        found += children
        frontier = children
    return found


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_worker_killed_mid_batch_loses_no_table(ray_local, tmp_path, tiny_checkpoint, caplog):
    tables = tmp_path / "tables"
    tables.mkdir()
    names = [f"t{i:02d}" for i in range(40)]
    for i, name in enumerate(names):
        _blobs(400, seed=i).to_csv(tables / f"{name}.csv", index=False)
    out_dir = tmp_path / "out"
    cfg = ClusterJobConfig(inputs=(str(tables),), output_dir=str(out_dir), checkpoint=tiny_checkpoint,
                           num_workers=2, n_estimators=1, tracking_uri=f"sqlite:///{tmp_path / 'mlruns.db'}",
                           progress=False)
    killed: list[str] = []

    def kill_a_busy_worker() -> None:
        """SIGKILL a worker of this test's Ray while it clusters a table, once a few tables are written."""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if len(list(out_dir.glob("*.parquet"))) >= 5:
                for pid in _descendants(os.getpid()):
                    title = _title(pid)
                    if title.startswith("ray::TableClusterer.run"):
                        os.kill(pid, signal.SIGKILL)
                        killed.append(title)
                        return
            time.sleep(0.002)

    killer = threading.Thread(target=kill_a_busy_worker, daemon=True)
    killer.start()
    with caplog.at_level(logging.WARNING, logger="pipeline.batch_cluster"):
        summary = run_batch(cfg)
    killer.join(timeout=10)
    assert killed, "no busy worker was found to kill"
    assert "retrying it on another worker" in caplog.text  # the killed worker had a table in flight
    on_disk = pd.read_csv(out_dir / "summary.csv")
    assert sorted(on_disk["table"]) == names and on_disk["table"].is_unique
    assert (on_disk["status"] == "ok").all(), on_disk[on_disk["status"] != "ok"]
    assert sorted(p.stem for p in out_dir.iterdir() if p.suffix == ".parquet") == names
    for name in names:
        assert len(pd.read_parquet(out_dir / f"{name}.parquet")) == 400


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("max_retries", [0, 2])
def test_only_a_table_that_kills_its_worker_every_time_fails(ray_local, tmp_path, tiny_checkpoint, max_retries):
    from pipeline.batch_cluster import TableClusterer

    class DiesOnPoison(TableClusterer):
        """A worker that dies (as out of memory would kill it) on the table named ``poison``."""

        def run(self, path: str, name: str):
            if name == "poison":
                os._exit(1)
            return super().run(path, name)

    jobs = _jobs(tmp_path, 5)
    jobs.insert(2, (jobs[0][0], "poison"))
    cfg = ClusterJobConfig(checkpoint=tiny_checkpoint, n_estimators=1, max_retries=max_retries)
    results = []
    _run_on_actors(cfg, jobs, 2, lambda row, out: results.append((row, out)), body=DiesOnPoison)
    assert sorted(row["table"] for row, _ in results) == sorted(name for _, name in jobs)  # each exactly once
    rows = {row["table"]: (row, out) for row, out in results}
    poison, out = rows.pop("poison")
    assert poison["status"] == "failed" and out is None
    assert poison["error"].startswith(f"the worker process died {max_retries + 1} times while clustering this table")
    assert all(row["status"] == "ok" and out is not None for row, out in rows.values())


@pytest.mark.slow
def test_the_driver_holds_no_output_after_handing_it_on(ray_local, tmp_path, tiny_checkpoint):
    """Outputs are streamed: when a table's result arrives, no earlier table's output is alive in the driver."""
    import gc
    import weakref

    alive_at_each_result = []
    refs: list[weakref.ref] = []

    def on_result(row: dict, out: pd.DataFrame | None) -> None:
        gc.collect()
        alive_at_each_result.append(sum(r() is not None for r in refs))
        refs.append(weakref.ref(out))

    cfg = ClusterJobConfig(checkpoint=tiny_checkpoint, n_estimators=1)
    _run_on_actors(cfg, _jobs(tmp_path, 8), 2, on_result)
    assert alive_at_each_result == [0] * 8
