"""Input tables of the batch job: finding them, reading them, and refusing the ones that cannot be clustered.

Every refusal is a :class:`TableError` whose message names the problem and what to do; the batch job
(:mod:`pipeline.batch_cluster`) turns it into a failed summary row and goes on with the other tables.
"""

from __future__ import annotations

import glob
import logging
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from model.cells import read_numbers

logger = logging.getLogger(__name__)

TABLE_SUFFIXES = (".csv", ".parquet", ".pq", ".xlsx")
#: Field separators a CSV table may use (:func:`csv_dialect`)
CSV_SEPARATORS = (",", ";", "\t", "|")
#: Encodings a CSV table is read in, the first that decodes it: UTF-8, then Windows' (a spreadsheet's "CSV" export
#: there: "€", "é"), then Latin-1, which decodes any bytes
CSV_ENCODINGS = ("utf-8", "cp1252", "latin-1")
#: Default limit on feature columns. The estimator projects a table wider than its 64 features onto principal
#: components of the numeric + one-hot columns (up to 16 per categorical), whose covariance grows with the
#: square of that width: 512 categorical columns give 8,192 design columns, a 0.5 GB covariance per worker.
MAX_COLUMNS = 512
#: A text column with more distinct values than this (or than half its rows) is free text, not a category.
MAX_CATEGORY_LEVELS = 50


class TableError(ValueError):
    """A table that cannot be clustered; the message names the problem and what to do."""


def csv_dialect(path: Path) -> dict[str, str]:
    """``pd.read_csv`` keywords for the file's field separator: of ``,`` ``;`` tab and ``|``, the one found most often
    outside quotes in the header line and as often in the next line (``,`` on a tie, or when none is). A
    ``;``-separated file is the European export of a spreadsheet, whose decimal mark is ``,``: ``decimal=","`` too
    (a value written ``1.5`` there stays text, which the estimator still reads as a number)."""
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        lines = [fh.readline(1 << 16) for _ in range(2)]  # the header and the first row (64 KB each at most)

    def outside_quotes(line: str) -> str:
        return "".join(part for i, part in enumerate(line.split('"')) if i % 2 == 0)

    header, row = (outside_quotes(line) for line in lines)
    found = [sep for sep in CSV_SEPARATORS
             if header.count(sep) and (not row.strip() or row.count(sep) == header.count(sep))]
    if not found:
        return {}
    sep = max(found, key=lambda c: (header.count(c), c == ","))
    return {} if sep == "," else {"sep": sep, "decimal": ","} if sep == ";" else {"sep": sep}


def read_table(path: Path) -> pd.DataFrame:
    """Read a CSV (its separator from :func:`csv_dialect`, its encoding the first of :data:`CSV_ENCODINGS` that
    decodes it), Parquet or Excel file (the one sheet that holds data: :func:`read_workbook`), raising
    :class:`TableError` with the reason when that fails."""
    path = Path(path)
    if not path.is_file():
        raise TableError(f"file not found: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            dialect = csv_dialect(path)
            for encoding in CSV_ENCODINGS[:-1]:
                try:
                    return pd.read_csv(path, encoding=encoding, **dialect)
                except UnicodeDecodeError:
                    continue
            return pd.read_csv(path, encoding=CSV_ENCODINGS[-1], **dialect)
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix == ".xlsx":
            return read_workbook(path)
    except TableError:
        raise
    except pd.errors.EmptyDataError:
        raise TableError("table is empty (the file holds no header and no rows)") from None
    except Exception as exc:  # any parser error: report it, keep the batch going
        raise TableError(f"unreadable {suffix.lstrip('.').upper()} file ({type(exc).__name__}: {exc})") from None
    raise TableError(f"unsupported file type {suffix!r}: use .csv, .parquet or .xlsx")


def read_workbook(path: Path) -> pd.DataFrame:
    """The table of an Excel workbook: its one sheet that holds data, header row first. A workbook with several
    such sheets is refused, naming them, rather than one clustered and the others left unsaid."""
    sheets = {name: frame for name, frame in pd.read_excel(path, sheet_name=None).items() if len(frame.columns)}
    if not sheets:
        raise TableError("table is empty (the workbook's sheets hold no header and no rows)")
    if len(sheets) > 1:
        raise TableError(f"the workbook holds {len(sheets)} sheets with data ({', '.join(map(repr, sheets))}); save "
                         "each table as its own .xlsx or .csv file")
    return next(iter(sheets.values()))


def prepare_features(frame: pd.DataFrame, *, label_column: str | None = None, ignore_columns: tuple[str, ...] = (),
                     max_columns: int = MAX_COLUMNS) -> tuple[pd.DataFrame, pd.Series | None]:
    """Split a table into the features to cluster and the ground truth, refusing tables that cannot be clustered.

    The feature columns are passed on unchanged (the estimator types, imputes and normalises them itself), so a
    table's output equals ``TabClustPFN(...).fit(features)``. ``ignore_columns``: columns kept out of the features
    where the table has them (ids, names, free text). Refused: no rows, duplicate column names, fewer than 2 rows,
    an unknown label column, no feature column, more than ``max_columns`` feature columns, no observed value, and
    text columns that are not categories (see :func:`check_text_column`).

    Raises
    ------
    TableError
        With the reason and what to do.
    """
    if len(frame) == 0:
        raise TableError("table is empty (no rows)")
    duplicated = list(dict.fromkeys(frame.columns[frame.columns.duplicated()]))
    if duplicated:  # (a served request can have them; CSV readers rename them) frame[name] would be a frame
        raise TableError(f"duplicate column name(s) {duplicated[:5]}: every column needs its own name; rename "
                         "or drop the duplicates")
    truth = None
    if label_column is not None:
        if label_column not in frame.columns:
            raise TableError(f"label column {label_column!r} not found; the columns are {list(frame.columns)[:20]}")
        truth = frame[label_column]
        frame = frame.drop(columns=[label_column])
    ignore = set(ignore_columns)
    ignored = [c for c in frame.columns if c in ignore]
    if ignored:
        frame = frame.drop(columns=ignored)
    if frame.shape[1] == 0:
        raise TableError("table has no feature columns" + (f" besides the ignored {ignored[:5]}" if ignored else ""))
    if len(frame) < 2:
        raise TableError("table has only 1 row; clustering needs at least 2")
    if frame.shape[1] > max_columns:
        raise TableError(f"{frame.shape[1]} feature columns exceed the limit of {max_columns} (memory); select "
                         "or reduce columns (e.g. PCA) first, or raise --max-columns")
    if frame.isna().all(axis=None):
        raise TableError("every feature value is missing")
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_object_dtype(col.dtype) or pd.api.types.is_string_dtype(col.dtype):
            check_text_column(col)
    return frame, truth


def check_text_column(col: pd.Series) -> None:
    """Refuse a text column that is neither numbers nor a category with few levels.

    Numbers (formatted ones too, ``"$1,234"``: :func:`model.cells.formatted_number`) with missing-value
    markers beside them (``"?"``, ``"n/a"``: :func:`model.cells.is_missing_marker`) pass: the estimator
    reads the markers as missing and names them (``missing_markers`` in the summary). A column of mostly numbers
    with other strings (``"low"``) is refused so those strings are not taken as categories; a column with more than
    :data:`MAX_CATEGORY_LEVELS` distinct strings, or with more than half as many distinct strings as values, is free
    text (names, ids, garbage), not a feature.
    """
    present = col.dropna()
    if present.empty:
        return
    values = present.astype(str).to_numpy(object)
    _, _, markers, words, _ = read_numbers(values)  # as the estimator reads them: numbers, formatted ones too
    unread = markers | words
    if not unread.any() or (not unread.all() and not words.any()):
        return
    example = values[words if words.any() else unread][0][:40]  # (no words: markers alone, a text column of them)
    if 1.0 - unread.mean() >= 0.5:
        raise TableError(f"column {col.name!r} is numeric but holds non-numeric strings (e.g. {example!r}); "
                         "write missing values as empty cells or NaN, or cast the column to 'category'")
    levels = len(set(values))
    if levels > MAX_CATEGORY_LEVELS or levels > max(2, len(present) // 2):
        if written_as_dates(values[unread]):
            raise TableError(f"column {col.name!r} holds dates ({levels} distinct, e.g. {example!r}), which have no "
                             f"scale to cluster on: drop it (the batch job: --ignore-columns {col.name}), or write "
                             "it as numbers of the unit that matters (e.g. days since the first date)")
        raise TableError(f"column {col.name!r} holds free text ({levels} distinct strings, e.g. {example!r}); "
                         f"drop it (the batch job: --ignore-columns {col.name}), or encode it as a category with at "
                         f"most {MAX_CATEGORY_LEVELS} levels")


def written_as_dates(texts: np.ndarray) -> bool:
    """Whether nine in ten of the distinct strings are dates or times (``"2020-01-05"``, ``"01/05/2020 10:00"``,
    ``"5 Jan 2020"``), each at least 6 characters with a digit (not ``"1-2"``)."""
    distinct = pd.unique(pd.Series(texts, dtype=object).str.strip())
    if len(distinct) == 0:
        return False
    with warnings.catch_warnings():  # pandas says when it guesses a format per value: that is what is asked
        warnings.simplefilter("ignore")
        parsed = pd.to_datetime(pd.Series(distinct), errors="coerce", format="mixed").notna().to_numpy()
    shaped = np.array([len(t) >= 6 and any(ch.isdigit() for ch in t) for t in distinct], bool)
    return bool((parsed & shaped).mean() >= 0.9)


def discover_tables(inputs: tuple[str, ...] | list[str]) -> list[Path]:
    """Expand files, directories and glob patterns into a sorted, de-duplicated list of table paths.

    A named file is kept even when it does not exist or has another suffix (it then fails as unreadable, with
    the reason in the summary); a directory contributes its CSV/Parquet/Excel files; a pattern its matches. An existing
    file is taken as itself even when its name holds glob characters (``run[1]/t.csv``), never as a pattern.

    Raises
    ------
    ValueError
        When nothing at all is found, naming the inputs that matched nothing.
    """
    found: list[Path] = []
    empty: list[str] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            hits = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in TABLE_SUFFIXES)
        elif path.is_file():
            hits = [path]
        elif glob.has_magic(item):
            hits = sorted(Path(p) for p in glob.glob(item, recursive=True)
                          if Path(p).is_file() and Path(p).suffix.lower() in TABLE_SUFFIXES)
        else:
            hits = [path]
        if not hits:
            empty.append(item)
        found.extend(hits)
    unique = list(dict.fromkeys(p.resolve() for p in found))
    if not unique:
        raise ValueError(f"no CSV or Parquet tables found in {list(inputs) or '(no inputs)'}; pass files, "
                         "directories or glob patterns such as 'data/*.csv'")
    for item in empty:
        logger.warning("input %r holds no CSV or Parquet tables", item)
    return unique


def table_names(paths: list[Path]) -> list[str]:
    """Output names: each file's stem, made unique with the suffix and then a counter when stems collide."""
    stems = [p.stem for p in paths]
    names: list[str] = []
    for p in paths:
        name = p.stem if stems.count(p.stem) == 1 else f"{p.stem}_{p.suffix.lstrip('.').lower()}"
        base, i = name, 2
        while name in names:
            name, i = f"{base}_{i}", i + 1
        names.append(name)
    return names
