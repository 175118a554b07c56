"""Bad input, tried at random (issue 30 item 6): the batch job's reader and per-table function, and one Ray batch run
over a folder of generated bad tables under odd file names (``..``, unicode, control characters, glob characters).
Every table gets exactly one summary row, clustered or failed with a reason naming the problem, and nothing is
written outside the output folder."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.batch_cluster import (
    OUTPUT_CLUSTER_COLUMN,
    SUMMARY_COLUMNS,
    ClusterJobConfig,
    cluster_table,
    load_estimator,
    run_batch,
)
from pipeline.tables import TableError, prepare_features, read_table
from tests.bad_frames import assert_labels, assert_names_the_problem, bad_frames

PROPERTY = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SUFFIXES = (".csv", ".parquet", ".pq", ".CSV")
#: File stems that could escape the output folder or confuse a naming scheme if outputs were named carelessly.
ODD_STEMS = ("..", "...", ".", "..x", "a..b", "..\\..\\evil", "%2e%2e%2fevil", "~", "-rf", "[1]", "*", "?",
             "列", "🙂", "e\u0301", "\u00e9", "\u202eevil", "with space", "line\nbreak", "tab\t", "summary", "cluster",
             "x" * 200, "COM1", "con")
#: Any stem Linux allows: no "/" or NUL; not empty (".csv" is a hidden file without suffix, not a table).
STEMS = st.one_of(st.sampled_from(ODD_STEMS),
                  st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1,
                          max_size=12))


def _write(frame: pd.DataFrame, path: Path) -> Path:
    """``frame`` as ``path`` (CSV or Parquet), or as CSV beside it when Parquet cannot store it (mixed-type
    objects, duplicate or complex columns)."""
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            frame.to_parquet(path, index=False)
            return path
        except Exception:
            path.unlink(missing_ok=True)
            path = path.with_name(path.name + ".csv")
    frame.to_csv(path, index=False)
    return path


def _check_row(row: dict, out: pd.DataFrame | None, path: Path) -> None:
    """A summary row is clustered (an output with one integer label per input row) or failed with a reason."""
    assert set(row) == set(SUMMARY_COLUMNS)
    if row["status"] == "ok":
        assert out is not None and row["error"] == ""
        assert_labels(out[OUTPUT_CLUSTER_COLUMN].to_numpy(), int(row["rows"]))
        assert row["n_clusters"] >= 2
        return
    assert row["status"] == "failed" and out is None
    try:
        frame = read_table(path)
    except TableError:
        frame = None
    assert_names_the_problem(row["error"], frame)


@pytest.fixture(scope="module")
def estimator(tiny_checkpoint):
    return load_estimator(tiny_checkpoint, None, 0, n_estimators=1)


@PROPERTY
@given(bad_frames())
# regression: duplicate column names (a served request has them; CSV readers rename them) made prepare_features
# raise AttributeError ('DataFrame' object has no attribute 'dtype'), an HTTP 500 from the endpoint
@example((pd.DataFrame([[1.0, "x", 2.0], [2.0, "y", 3.0], [3.0, "x", 4.0]], columns=["a", "a", "b"]),
          ["float", "text", "float"]))
@example((pd.DataFrame([[1.0, 2.0]] * 3, columns=["列", "列"]), ["float", "float"]))
def test_the_table_checks_pass_or_refuse_any_table(case):
    frame, _ = case
    try:
        features, truth = prepare_features(frame)
    except TableError as exc:
        assert_names_the_problem(str(exc), frame)
        if len(frame) and frame.columns.duplicated().any():
            assert "duplicate column name" in str(exc)
        return
    assert features is frame and truth is None  # passed on unchanged
    assert len(frame) >= 2 and not frame.columns.duplicated().any()


@settings(PROPERTY, max_examples=60)
@given(bad_frames(max_rows=30), st.sampled_from(SUFFIXES))
@example((pd.DataFrame({"a": [1.0, 2.0, 3.0, 40.0], "b": ["x", "y", "x", "y"]}), ["float", "text"]), ".parquet")
def test_cluster_table_gives_one_row_for_any_table_file(estimator, tmp_path_factory, case, suffix):
    frame, _ = case
    path = _write(frame, tmp_path_factory.mktemp("table") / f"t{suffix}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row, out = cluster_table(estimator, path, "t")
    _check_row(row, out, path)


def _snapshot(root: Path, skip: tuple[Path, ...]) -> dict[str, str]:
    """Every file under ``root`` outside ``skip``, with its content's digest."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and not any(p.is_relative_to(s) for s in skip)}


def _generated_tables(count: int) -> list[tuple[pd.DataFrame, str, str]]:
    """``count`` (frame, file stem, suffix) drawn by hypothesis, the same ones on every run: the first of each
    stem among 4 * ``count`` examples (consecutive examples are often variations of one table)."""
    drawn: dict[str, tuple[pd.DataFrame, str, str]] = {}

    @settings(PROPERTY, max_examples=4 * count)
    @given(bad_frames(max_rows=30), STEMS, st.sampled_from(SUFFIXES))
    def draw(case, stem, suffix):
        drawn.setdefault(stem, (case[0], stem, suffix))

    draw()
    return list(drawn.values())[:count]


@pytest.mark.slow
def test_one_batch_over_generated_bad_tables_fails_only_the_bad_ones_and_writes_only_the_output(
        ray_local, tmp_path, tiny_checkpoint, estimator, monkeypatch):
    inputs, out_dir, tracking, cwd = (tmp_path / d for d in ("in", "out", "tracking", "cwd"))
    for d in (inputs, tracking, cwd):
        d.mkdir()
    rng = np.random.default_rng(0)
    blobs = pd.DataFrame(rng.normal(size=(40, 3)) + 5.0 * rng.integers(0, 3, 40)[:, None], columns=list("abc"))
    tables = _generated_tables(36) + [(blobs, "good..", ".csv"), (blobs, "good..", ".parquet"),
                                      (blobs, "..\\good", ".pq"), (blobs, "gööd 🙂", ".csv"),
                                      (blobs, "carriage\rreturn", ".csv")]  # summary.csv must quote the "\r"
    junk = {"empty.csv": b"", "header_only.csv": b"a,b\n", "garbage.parquet": b"not parquet",
            "binary.csv": bytes(range(256)), "ragged.csv": b"a,b\n1,2,3,4\n5\n", "..csv": b"a,b\n1,2\n"}
    latin1 = inputs / "latin1.csv"  # not UTF-8, but a table: read in Windows' encoding
    latin1.write_bytes("é,ß\n1,2\n3,4\n5,6\n".encode("latin-1"))
    paths = [latin1]
    for name, content in junk.items():
        (inputs / name).write_bytes(content)
        paths.append(inputs / name)
    for i, (frame, stem, suffix) in enumerate(tables):
        path = inputs / f"{stem}{suffix}"
        if path.exists() or path.with_name(path.name + ".csv").exists():
            path = inputs / f"{stem}_{i}{suffix}"  # no stem ends in _<i> of its own: i is unique
        paths.append(_write(frame, path))
    before = _snapshot(tmp_path, (out_dir, tracking))
    monkeypatch.chdir(cwd)  # anything written relative to the working directory would show here

    cfg = ClusterJobConfig(inputs=(str(inputs),), output_dir=str(out_dir), checkpoint=tiny_checkpoint,
                           n_estimators=1, num_workers=2, tracking_uri=f"sqlite:///{tracking / 'mlruns.db'}",
                           progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary = run_batch(cfg)

    # exactly one summary row per input file, the same on disk
    assert len(paths) == len(set(paths))
    assert sorted(map(str, set(p.resolve() for p in paths) - set(map(Path, summary["path"])))) == []
    assert len(summary) == len(paths)
    assert sorted(summary["path"]) == sorted(str(p.resolve()) for p in paths)
    assert summary["table"].is_unique
    on_disk = pd.read_csv(out_dir / "summary.csv", keep_default_na=False, dtype={"table": str})
    assert list(on_disk["table"]) == list(summary["table"]) and list(on_disk["status"]) == list(summary["status"])
    # each row as the per-table function gives it in this process: the good tables clustered, the bad ones failed
    # with the same reason
    for row in summary.to_dict("records"):
        path = Path(row["path"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected, _ = cluster_table(estimator, path, row["table"])
        assert (row["status"], row["error"]) == (expected["status"], expected["error"]), path.name
        output = out_dir / f"{row['table']}.parquet"
        if row["status"] == "ok":
            out = pd.read_parquet(output)
            assert len(out) == row["rows"]
            _check_row({**row, "rows": int(row["rows"])}, out, path)
        else:
            assert not output.exists()
            _check_row(row, None, path)
    status = summary.set_index("path")["status"]
    assert (status == "ok").sum() >= 4 and (status == "failed").sum() >= len(junk) - 1
    assert all(status[str((inputs / n).resolve())] == "failed" for n in junk if n != "..csv")
    assert status[str(latin1.resolve())] == "ok"
    # nothing written outside the output folder (and the tracking store): inputs unchanged, nothing in the cwd,
    # and the output folder holds summary.csv and one Parquet per clustered table, directly inside it
    assert _snapshot(tmp_path, (out_dir, tracking)) == before
    assert not any(cwd.iterdir())
    written = sorted(p.name for p in out_dir.iterdir())
    assert written == sorted(["summary.csv"] + [f"{t}.parquet" for t in summary.loc[summary["status"] == "ok",
                                                                                       "table"]])
    assert all(p.resolve().parent == out_dir.resolve() for p in out_dir.iterdir())
