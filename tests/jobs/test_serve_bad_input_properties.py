"""Bad input, tried at random (issue 30 item 6), over HTTP: ``jobs/serve.py`` (the tiny checkpoint, started once for
the module) is sent generated tables (NaN/inf/1e300, 0-3 rows, constant, boolean, datetime, mixed-type, nested,
duplicate- and unicode-named columns, single-level and many-level categories). Each is answered 200 with one label
per row or 4xx with a message that says what is wrong and no stack trace; the server still answers afterwards."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.bad_frames import assert_labels, assert_names_the_problem, bad_frames
from tests.jobs.test_serve import Server

N_REQUESTS = 25


@pytest.fixture(scope="module")
def tiny_server(tiny_checkpoint, tmp_path_factory):
    server = Server(["--checkpoint", tiny_checkpoint], tmp_path_factory.mktemp("serve") / "server.log")
    yield server
    assert server.stop() == 0, server.output()


def _cell(value):
    """A cell as JSON carries it: NaN/inf as the NaN/Infinity tokens Python's json writes, datetimes as ISO text,
    complex numbers as [re, im] (a nested value), missing as null."""
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, (complex, np.complexfloating)):
        return [float(value.real), float(value.imag)]
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value


def _request(frame: pd.DataFrame) -> dict:
    rows = [[_cell(v) for v in row] for row in frame.astype(object).itertuples(index=False, name=None)]
    return {"dataframe_split": {"columns": [str(c) for c in frame.columns], "data": rows}}


#: Column kinds that alone need not be refused, for the half of the requests that should often be clustered.
MILD_KINDS = ("float", "int", "constant", "bool", "bool_na", "text", "numeric_text", "category_1", "category_many",
              "all_nan")


def _generated_frames(count: int) -> list[pd.DataFrame]:
    """``count`` tables drawn by hypothesis, the same on every run, half of them of :data:`MILD_KINDS` only (the first
    of each shape and column kinds among 4 * ``count`` examples: consecutive examples are often variations of one
    table)."""
    drawn: dict[tuple, pd.DataFrame] = {}

    @settings(max_examples=4 * count, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.one_of(bad_frames(max_rows=30), bad_frames(max_rows=30, kinds=MILD_KINDS)))
    def draw(case):
        frame, kinds = case
        drawn.setdefault((len(frame), tuple(kinds)), frame)

    draw()
    return list(drawn.values())[:count]


def _post(server: Server, body: dict) -> requests.Response:
    """POST ``body`` as JSON with NaN and Infinity written as Python's json writes them (requests refuses to)."""
    return requests.post(f"{server.url}/invocations", data=json.dumps(body, allow_nan=True).encode(), timeout=120,
                         headers={"Content-Type": "application/json"})


def _assert_answered(response: requests.Response, frame: pd.DataFrame | None, n: int | None) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:2000])
    assert "Traceback" not in response.text and "stack_trace" not in response.text, response.text[:2000]
    if response.status_code == 200:
        assert_labels(response.json()["predictions"], n)
        return
    assert 400 <= response.status_code < 500
    body = response.json()
    assert isinstance(body.get("message"), str) and body["message"].strip(), body
    assert_names_the_problem(body["message"], frame)


@pytest.mark.slow
def test_generated_bad_tables_get_labels_or_a_4xx_that_names_the_problem(tiny_server):
    frames = _generated_frames(N_REQUESTS)
    assert len(frames) == N_REQUESTS
    answers = []
    for frame in frames:
        response = _post(tiny_server, _request(frame))
        _assert_answered(response, frame, len(frame))
        answers.append(response.status_code)
    assert 200 in answers and any(400 <= code < 500 for code in answers)  # both kinds of answer were tried
    # regression: duplicate column names were an AttributeError in the table checks, an HTTP 500
    dup = pd.DataFrame([[0.0, 1.0], [0.1, 1.2], [5.0, 6.0], [5.2, 6.1]], columns=["a", "a"])
    response = _post(tiny_server, _request(dup))
    _assert_answered(response, dup, 4)
    assert response.status_code == 400 and "duplicate column name" in response.json()["message"]
    # requests that are not a table at all
    for body in ({"dataframe_split": {"columns": ["a", "b"], "data": [[1, 2, 3], [4]]}},
                 {"dataframe_split": {"columns": ["a"], "data": "not rows"}},
                 {"instances": [[math.pi]] * 2}, {"no_such_format": []}):
        response = _post(tiny_server, body)
        assert response.status_code < 500 and "Traceback" not in response.text, response.text[:2000]
    response = requests.post(f"{tiny_server.url}/invocations", data=b"{not json", timeout=120,
                             headers={"Content-Type": "application/json"})
    assert 400 <= response.status_code < 500 and "Traceback" not in response.text, response.text[:2000]

    # the server is still up and clusters a good table
    assert tiny_server.proc.poll() is None, tiny_server.output()
    assert requests.get(f"{tiny_server.url}/ping", timeout=30).status_code == 200
    rng = np.random.default_rng(0)
    good = pd.DataFrame(rng.normal(size=(40, 2)) + 5.0 * rng.integers(0, 3, 40)[:, None], columns=["x", "y"])
    response = _post(tiny_server, _request(good))
    assert response.status_code == 200, response.text[:2000]
    assert_labels(response.json()["predictions"], 40)
