"""How a table's cells are read: numbers written as text, missing-value markers and missing-value codes.

A text cell is a number when it parses as one (``"1.5"``) or is written as a formatted one (``"$1,234.50"``,
``"12%"``, ``"(700)"``, or with a decimal comma, ``"1.234,50 €"``: :func:`formatted_number`; which decimal mark a
column uses, :func:`decimal_mark`); it marks a missing value when it is one of
:data:`MISSING_MARKERS` or punctuation alone (``"?"``, ``"-"``: :func:`is_missing_marker`); it is a code for a missing
value when the user names it (``missing_values``: :func:`checked_codes`, :func:`without_codes`).
:func:`classify_objects` applies these to an object column and says whether it is numeric or categorical;
:class:`model.preprocessing.TablePreprocessor` types every column with it, and the batch job's table checks
(``pipeline.tables``) read text columns with :func:`read_numbers`, so the two cannot disagree.
"""

from __future__ import annotations

import numbers
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

#: Strings that mark a missing value among numbers (``"?"`` in UCI files, ``"."`` in SAS exports, ``"NA"`` in R's),
#: compared stripped and case-folded (:func:`is_missing_marker`)
MISSING_MARKERS = frozenset({"na", "n/a", "n.a.", "nan", "null", "none", "nil", "missing", "unknown", "#n/a",
                             "not available"})
#: A formatted number by its decimal mark: a sign, a currency sign, digits in groups of three (or none) split by the
#: other mark, decimals, a percent sign, a currency sign after the number (``"1.234,50 €"``, as much of Europe writes)
_FORMATTED = {".": re.compile(r"[+-]?[$€£¥]?[+-]?(\d{1,3}(?:,\d{3})+|\d*)(\.\d*)?%?[$€£¥]?"),
              ",": re.compile(r"[+-]?[$€£¥]?[+-]?(\d{1,3}(?:\.\d{3})+|\d*)(,\d*)?%?[$€£¥]?")}
#: Spaces between a number's thousands (``"1 234,5"``: a space, a no-break space, a narrow no-break space)
_SPACES = str.maketrans("", "", " \u00a0\u202f")


def user_stacklevel() -> int:
    """``stacklevel`` that makes a warning raised by the caller point at the first frame outside the ``model``
    package and scikit-learn (the user's line, whether it called the preprocessor or the estimator)."""
    package = str(Path(__file__).resolve().parent)
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(package)
                                 or f"{os.sep}sklearn{os.sep}" in frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def is_missing_marker(value: Any) -> bool:
    """Whether ``value`` is a string that marks a missing value among numbers: one of :data:`MISSING_MARKERS`, or
    punctuation alone (``"?"``, ``"-"``, ``"."``, ``""``), stripped and case-folded."""
    if not isinstance(value, str):
        return False
    text = value.strip().casefold()
    return text in MISSING_MARKERS or not any(ch.isalnum() for ch in text)


def formatted_number(value: Any, decimal: str = ".") -> float:
    """A string written as a formatted number (``"$1,234.50"``, ``"12.5%"``, ``"-€3"``; with ``decimal=","``:
    ``"1.234,50"``, ``"12,5 %"``, ``"3 €"``) -> that number; NaN for any other value. Currency signs, the marks
    between thousands (in groups of three; spaces too) and a percent sign are dropped: the column is z-normalised, so
    its unit does not matter."""
    if not isinstance(value, str):
        return np.nan
    text = value.translate(_SPACES)
    negative = len(text) > 2 and text[0] == "(" and text[-1] == ")"  # an accountant's negative: (1,234)
    found = _FORMATTED[decimal].fullmatch(text[1:-1] if negative else text)
    if found is None or not any(ch.isdigit() for ch in found.group(0)):
        return np.nan
    written = found.group(0)
    if written.count("-") + written.count("+") > (0 if negative else 1) or sum(map(written.count, "$€£¥")) > 1:
        return np.nan
    thousands = "," if decimal == "." else "."
    number = float(found.group(1).replace(thousands, "") + (found.group(2) or "").replace(",", "."))
    return -number if ("-" in written) != negative else number


def decimal_mark(texts: np.ndarray) -> str:
    """The decimal mark of a column's numbers written as text: ``","`` when some of them read only with a decimal
    comma (``"825,68"``, ``"1.234,5"``, ``"1.234.567"``) and none only with a decimal point (``"1.5"``,
    ``"1,234.5"``, ``"1e3"``); else ``"."``. A column of numbers both read (``"1,234"``) keeps the point."""
    point = comma = False
    for text in pd.unique(np.asarray([t for t in texts if isinstance(t, str)], dtype=object)):
        as_point = not np.isnan(formatted_or_number(text))
        as_comma = not np.isnan(formatted_number(text, ","))
        point |= as_point and not as_comma
        comma |= as_comma and not as_point
        if point:
            return "."
    return "," if comma else "."


def each_distinct(fn, cells: np.ndarray) -> np.ndarray:
    """``fn`` of every cell, computed once per distinct value (a text column repeats a few values many times)."""
    if len(cells) == 0:
        return np.empty(0, object)
    seen = {value: fn(value) for value in pd.unique(cells)}
    return np.array([seen[value] for value in cells], dtype=object)


class Reading(NamedTuple):
    """An object column read as numbers (:func:`read_numbers`)."""

    numbers: np.ndarray  # float64, NaN where missing or not a number
    formatted: np.ndarray  # bool: cells read as formatted numbers (:func:`formatted_number`)
    markers: np.ndarray  # bool: present cells that mark a missing value (:func:`is_missing_marker`)
    words: np.ndarray  # bool: present cells that are none of these
    decimal: str  # the column's decimal mark (:func:`decimal_mark`)


def read_numbers(values: np.ndarray, decimal: str | None = None) -> Reading:
    """Object values -> their :class:`Reading`: the numbers, which cells were formatted numbers, which are
    missing-value markers and which are neither. ``decimal``: the decimal mark of the text cells, found from them
    when None (:func:`decimal_mark`); with ``","`` every text cell is read with a decimal comma (``"1.234"`` is
    1234), cells that are numbers already stay as they are."""
    parsed = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(np.float64, copy=True)
    unread = np.isnan(parsed) & ~pd.isna(values)
    formatted = np.zeros(len(values), bool)
    markers = np.zeros(len(values), bool)
    if decimal is None:
        decimal = decimal_mark(values) if unread.any() else "."  # numbers that all parse keep the point
    if decimal == ",":
        texts = np.array([isinstance(v, str) for v in values], bool)
        parsed[texts] = np.nan
        unread |= texts
    if unread.any():
        read = each_distinct(lambda v: formatted_number(v, decimal), values[unread]).astype(np.float64)
        formatted[unread] = ~np.isnan(read)
        parsed[formatted] = read[~np.isnan(read)]
        unread &= ~formatted
        markers[unread] = each_distinct(is_missing_marker, values[unread]).astype(bool)
    return Reading(parsed, formatted, markers, unread & ~markers, decimal)


def checked_codes(codes: Any) -> tuple:
    """``missing_values`` as a tuple of real numbers and strings; anything else raises ``ValueError``."""
    if codes is None:
        return ()
    if isinstance(codes, (str, numbers.Number)):
        codes = (codes,)
    out = tuple(codes)
    for code in out:
        if isinstance(code, (bool, np.bool_)) or not isinstance(code, (str, numbers.Real)) \
                or (isinstance(code, numbers.Real) and not np.isfinite(code)):
            raise ValueError(f"missing_values holds {code!r}: give the codes as finite numbers or strings, e.g. "
                             "[-999, 'unknown'] (NaN is read as missing without it)")
    return out


def without_codes(frame: pd.DataFrame, codes: tuple) -> pd.DataFrame:
    """``frame`` with the cells equal to one of ``codes`` (:func:`checked_codes`) set missing: a number (or a string
    that reads as one) matches a numeric cell of that value and a text cell that reads as it (``"-999"``,
    ``"-999.0"``); a string matches a text or category cell that is that string, stripped. The frame itself when
    nothing matches, else a copy."""
    if not codes:
        return frame
    read = [float(c) if not isinstance(c, str) else formatted_or_number(c) for c in codes]  # "-999" is -999 too
    values = np.array([v for v in read if np.isfinite(v)], np.float64)
    texts = {c.strip() for c in codes if isinstance(c, str)}

    def is_code(cell: Any) -> bool:
        if isinstance(cell, str):
            return cell.strip() in texts or (values.size > 0 and bool(np.isin(formatted_or_number(cell), values)))
        return isinstance(cell, numbers.Real) and not isinstance(cell, (bool, np.bool_)) and bool(np.isin(cell, values))

    out = None
    for j in range(frame.shape[1]):
        col = frame.iloc[:, j]
        if pd.api.types.is_bool_dtype(col.dtype) or pd.api.types.is_complex_dtype(col.dtype):
            continue
        if pd.api.types.is_numeric_dtype(col.dtype) and not isinstance(col.dtype, pd.CategoricalDtype):
            hit = np.isin(col.to_numpy(np.float64, na_value=np.nan), values) if values.size else None
        else:
            cells = col.to_numpy(object)
            present = ~pd.isna(cells)
            hit = np.zeros(len(cells), bool)
            hit[present] = each_distinct(is_code, cells[present]).astype(bool)
        if hit is not None and hit.any():
            out = frame.copy() if out is None else out
            out.isetitem(j, col.mask(hit))
    return frame if out is None else out


def formatted_or_number(text: str) -> float:
    """A string read as a number, plain (``"1e3"``) or formatted (:func:`formatted_number`); NaN if neither."""
    try:
        return float(text)
    except ValueError:
        return formatted_number(text)


def classify_objects(values: np.ndarray, label: str) -> tuple[bool, np.ndarray, tuple[str, ...], str]:
    """Object column -> (is_categorical, values, markers, decimal); numeric values (formatted ones among them,
    :func:`formatted_number`) come back as float64, the missing-value markers among them (:func:`is_missing_marker`)
    as NaN, both named in a warning; ``decimal``: the decimal mark they were read with (:func:`decimal_mark`)."""
    missing = pd.isna(values)
    present = values[~missing]
    kinds = {type(v) for v in present}
    for kind in kinds:
        if not issubclass(kind, (str, numbers.Number)):
            raise TypeError(f"{label}: argument must be a string or a real number, not {kind.__name__!r}")
        if issubclass(kind, numbers.Complex) and not issubclass(kind, numbers.Real):
            raise ValueError(f"{label}: Complex data not supported; pass real-valued features.")
    if kinds and all(issubclass(k, (bool, np.bool_)) for k in kinds):
        return True, values, (), "."
    parsed, formatted, marked, words, decimal = read_numbers(values)
    if not (formatted.any() or marked.any() or words.any()):
        return False, parsed, (), decimal
    if not words.any() and marked.sum() < (~missing).sum():  # numbers, and markers of a missing value beside them
        if decimal == ",":
            example = values[formatted & np.array([isinstance(v, str) and "," in v for v in values], bool)]
            warnings.warn(f"{label}: numbers written with a decimal comma (e.g. "
                          f"{str((example if len(example) else values[formatted])[0])!r}, {int(formatted.sum())} "
                          "cells) read as numbers, the points or spaces between their thousands, currency and percent "
                          "signs dropped.", UserWarning, stacklevel=user_stacklevel())
        elif formatted.any():
            warnings.warn(f"{label}: formatted numbers (e.g. {str(values[formatted][0])!r}, {int(formatted.sum())} "
                          "cells) read as numbers, their currency signs, thousands commas and percent signs dropped.",
                          UserWarning, stacklevel=user_stacklevel())
        if not marked.any():
            return False, parsed, (), decimal
        found, counts = np.unique(values[marked].astype(str), return_counts=True)
        found = [str(v) for v in found]
        named = ", ".join(f"{v!r} ({c} cell{'s' if c > 1 else ''})" for v, c in zip(found, counts))
        warnings.warn(f"{label}: {named} read as missing, as the column's other values are numbers; write a "
                      "missing value as NaN or an empty cell to silence this, or cast the column to 'category' to "
                      "cluster on those strings.", UserWarning, stacklevel=user_stacklevel())
        return False, parsed, tuple(found), decimal
    if any(not issubclass(k, str) for k in kinds):
        bad = values[np.flatnonzero(words)[0]]
        raise ValueError(f"{label} mixes numbers with non-numeric strings (e.g. {bad!r}); replace those "
                         "strings with NaN if they mean 'missing', or cast the column to 'category' to treat it "
                         "as categorical.")
    return True, values, (), "."
