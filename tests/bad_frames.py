"""Hypothesis strategies for bad input tables (issue 30 item 6), shared by the estimator, batch-job and endpoint
property tests: DataFrames whose columns hold NaN, inf, 1e300, constants, booleans, datetimes, numbers mixed
with strings, single-level or many-level categories, under duplicate or unicode names, with 0 to a few hundred
rows; and the checks every answer must pass (labels, or a refusal that names the problem)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st

#: Column kinds :func:`bad_frames` draws from.
KINDS = ("float", "float_inf", "int", "constant", "bool", "bool_na", "datetime", "mixed", "text", "numeric_text",
         "category_1", "category_many", "all_nan", "complex")
SPECIAL_FLOATS = (np.nan, 1e300, -1e300, 1.7976931348623157e308, 1e-300, 0.0, -0.0, 5e-324)
#: Column names: unicode (combining marks, right-to-left, emoji, control characters), empty, lookalikes of the
#: output columns, path parts. Drawn with replacement, so duplicates happen.
ODD_NAMES = ("a", "a", "", " ", "naïve", "ﬁ", "e\u0301", "שלום", "列", "🙂", "..", "../x", "a/b", "C:\\t", "x\x00y",
             "\u202eevil", "nan", "None", "0", "cluster_", "prob", "\n")

#: Words of a refusal that say what is wrong (a message needs one of them).
PROBLEM_WORDS = re.compile(r"row|n_samples|column|feature|missing|constant|\binf|empty|dtype|categor|numeric|text|"
                           r"complex|string|value|unreadable|file", re.IGNORECASE)


@st.composite
def column(draw, n: int, kind: str | None = None) -> tuple[str, pd.Series | np.ndarray | list]:
    """(kind, values) of one column of ``n`` rows."""
    kind = kind or draw(st.sampled_from(KINDS))
    if kind in ("float", "float_inf"):  # NaN, huge and tiny values; and +-inf for float_inf
        specials = SPECIAL_FLOATS + ((np.inf, -np.inf) if kind == "float_inf" else ())
        values = draw(st.lists(st.one_of(st.sampled_from(specials), st.floats(allow_infinity=False)),
                               min_size=n, max_size=n))
        return kind, np.array(values, dtype=np.float64)
    if kind == "int":
        values = draw(st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n))
        return kind, np.array(values, dtype=np.int64)
    if kind == "constant":
        value = draw(st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=3),
                               st.booleans(), st.just(1e300)))
        return kind, [value] * n
    if kind == "bool":
        return kind, np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if kind == "bool_na":
        return kind, pd.array(draw(st.lists(st.one_of(st.booleans(), st.none()), min_size=n, max_size=n)),
                              dtype="boolean")
    if kind == "datetime":
        values = draw(st.lists(st.one_of(st.datetimes(min_value=datetime(1700, 1, 1), max_value=datetime(2200, 1, 1)),
                                         st.none()), min_size=n, max_size=n))
        return kind, pd.Series(pd.to_datetime(values), dtype="datetime64[ns]")
    if kind == "mixed":  # numbers and non-numeric strings in one object column
        values = draw(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5),
                                         st.sampled_from(["?", "n/a", "x", "1.5", "", "inf", "ß"]), st.none()),
                               min_size=n, max_size=n))
        return kind, np.array(values, dtype=object)
    if kind == "text":  # few levels, unicode
        levels = draw(st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=4))
        return kind, np.array([draw(st.sampled_from(levels)) for _ in range(n)], dtype=object)
    if kind == "numeric_text":  # numbers written as strings
        values = draw(st.lists(st.sampled_from(["1", "2.5", "-3e2", "1e300", "nan", "  4 ", "0x1"]), min_size=n,
                               max_size=n))
        return kind, np.array(values, dtype=object)
    if kind == "category_1":  # one level (possibly with missing values)
        values = draw(st.lists(st.sampled_from(["only", None]), min_size=n, max_size=n))
        return kind, pd.Categorical(values, categories=["only"])
    if kind == "category_many":  # hundreds of levels
        levels = [f"lvl{i}" for i in range(draw(st.integers(100, 400)))]
        codes = draw(st.lists(st.integers(0, len(levels) - 1), min_size=n, max_size=n))
        return kind, pd.Categorical.from_codes(codes, categories=levels)
    if kind == "all_nan":
        return kind, np.full(n, np.nan)
    if kind == "complex":
        return kind, np.arange(n) + 1j
    raise AssertionError(kind)


@st.composite
def bad_frames(draw, max_rows: int = 40, max_columns: int = 5, kinds: tuple[str, ...] = KINDS
               ) -> tuple[pd.DataFrame, list[str]]:
    """(frame, kinds of its columns): 0..max_rows rows (sometimes ~250 for many-level categories), 1..max_columns
    columns of the given kinds, under odd and sometimes duplicate names."""
    n = draw(st.one_of(st.sampled_from([0, 1, 2, 3]), st.integers(4, max_rows), st.just(250)))
    width = draw(st.integers(1, max_columns))
    names = draw(st.lists(st.one_of(st.sampled_from(ODD_NAMES), st.text(max_size=6)), min_size=width,
                          max_size=width))
    cols = [draw(column(n, draw(st.sampled_from(kinds)))) for _ in range(width)]
    frame = pd.DataFrame({i: values for i, (_, values) in enumerate(cols)}, index=range(n))
    frame.columns = names
    return frame, [kind for kind, _ in cols]


def column_labels(frame: pd.DataFrame) -> list[str]:
    """How the preprocessing and the table checks name each column in a message (``column 'x'`` / ``column 3``),
    also as a repr inside a message's dict (dropped columns)."""
    labels = [f"column {name!r}" for name in frame.columns] + [f"column {j}" for j in range(frame.shape[1])]
    return labels + [repr(label)[1:-1] for label in labels]


def assert_names_the_problem(message: str, frame: pd.DataFrame | None = None) -> None:
    """A refusal's message is non-empty, says what is wrong, and any column it names is one of the table's."""
    assert message and message.strip(), "empty refusal message"
    assert PROBLEM_WORDS.search(message), f"the refusal does not say what is wrong: {message!r}"
    assert "Traceback" not in message, message
    if frame is not None and re.search(r"\bcolumn ['\"\d]", message):
        assert any(label in message for label in column_labels(frame)), \
            f"the refusal names a column the table does not have: {message!r} (columns {list(frame.columns)!r})"


def assert_labels(labels: Any, n: int) -> None:
    """One integer label per row, none missing."""
    labels = np.asarray(labels)
    assert labels.shape == (n,), labels.shape
    assert labels.dtype.kind in "iu", labels.dtype
    assert labels.min() >= 0
