"""Exporting: a run's training state to the model format that the estimator loads, and the model as an MLflow
pyfunc that loads without this project."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from model import TabClustPFN
from model.checkpoint import load_checkpoint
from pipeline.config import train_preset
from pipeline.export import export_run
from pipeline.tables import TableError, prepare_features
from pipeline.train_loop import run_local
from tests.job_scripts import load_job

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A finished tiny run with checkpoints at steps 2 and 4 (read-only: copy it to change it)."""
    cfg = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=4, checkpoint_every=2, val_tasks=0)
    run_dir = tmp_path_factory.mktemp("export") / "run"
    return cfg, run_local(cfg, run_dir=run_dir), run_dir


def test_export_writes_the_newest_state_with_its_provenance(tmp_path, tiny_run):
    cfg, result, run_dir = tiny_run
    out = export_run(run_dir, tmp_path / "model.pt", metadata={"note": "phase 1"})
    net, meta = load_checkpoint(out)
    assert meta["step"] == 4 and meta["source_run"] == "run" and meta["note"] == "phase 1"
    assert meta["tasks_seen"] == 4 * cfg.global_batch
    for key, value in result.net.state_dict().items():
        assert torch.equal(net.state_dict()[key], value), key
    X = np.random.default_rng(0).normal(size=(40, 3))
    assert TabClustPFN(checkpoint=str(out), random_state=0).fit(X).labels_.shape == (40,)


def test_export_refuses_a_run_without_checkpoints(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no training checkpoint"):
        export_run(tmp_path / "empty", tmp_path / "model.pt")


@pytest.fixture(scope="module")
def export_job():
    return load_job("export_model")


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--metadata", "[1]"], "argument --metadata: must be a JSON object such as"),
        (["--metadata", "notjson"], "argument --metadata: is not valid JSON"),
        (["--step", "0"], "argument --step: must be >= 1 (a checkpoint step of the run), got 0"),
        (["--output-is-a-dir"], "is a directory: give a file path, e.g."),
    ],
)
def test_export_job_refuses_unusable_options_with_exit_status_2(export_job, tiny_run, tmp_path, capsys, flags,
                                                                match):
    output = str(tmp_path / "model.pt")
    if flags == ["--output-is-a-dir"]:
        flags, output = [], str(tmp_path)
    with pytest.raises(SystemExit) as exc:
        export_job.main([str(tiny_run[2]), output, *flags])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage:") and match in err and "Traceback" not in err


def test_export_job_names_a_truncated_state_and_the_step_to_export(export_job, tiny_run, tmp_path, capsys):
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run[2], run_dir)
    state = run_dir / "checkpoint_step000000004" / "train_state.pt"
    state.write_bytes(state.read_bytes()[:1000])  # a crash while it was written
    assert export_job.main([str(run_dir), str(tmp_path / "model.pt")]) == 1
    err = capsys.readouterr().err
    assert "the training state of step 4" in err and "is unreadable" in err and "--step 2" in err
    assert export_job.main([str(run_dir), str(tmp_path / "model.pt"), "--step", "2"]) == 0
    assert load_checkpoint(tmp_path / "model.pt")[1]["step"] == 2


def test_export_names_the_steps_a_run_has(tiny_run, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no training checkpoint at step 3 in .*; it has steps \[2, 4\]"):
        export_run(tiny_run[2], tmp_path / "model.pt", step=3)


def _pyfunc(checkpoint: str):
    from pipeline.pyfunc import ARTIFACT_KEY, TabClustPFNPyfunc

    model = TabClustPFNPyfunc()
    model.load_context(SimpleNamespace(artifacts={ARTIFACT_KEY: checkpoint}))
    return model


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    return pd.DataFrame(rng.normal(size=(n, 2)) + 4.0 * y[:, None], columns=["a", "b"])


def test_pyfunc_is_seeded_on_tables_over_n_context_rows(tiny_checkpoint):
    table = _table(1100)  # more rows than n_context=1000: the context rows are drawn with random_state
    model = _pyfunc(tiny_checkpoint)
    labels = model.predict(None, table)
    np.testing.assert_array_equal(model.predict(None, table), labels)
    seeded = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0).fit_predict(table)
    np.testing.assert_array_equal(labels, seeded)  # random_state defaults to 0
    other = TabClustPFN(checkpoint=tiny_checkpoint, random_state=7).fit_predict(table)
    np.testing.assert_array_equal(model.predict(None, table, params={"random_state": 7}), other)


def test_pyfunc_passes_every_param_to_the_estimator(tiny_checkpoint, monkeypatch):
    import model.estimator

    seen = []

    class Recording(model.estimator.TabClustPFN):
        def fit(self, X, y=None):
            seen.append(self.get_params())
            return super().fit(X, y)

    monkeypatch.setattr(model.estimator, "TabClustPFN", Recording)
    params = {"max_clusters": 2, "k_selection": "posterior_mode", "n_estimators": 1, "random_state": 5}
    served = _pyfunc(tiny_checkpoint)  # its load_context fits once to load the network
    labels = served.predict(None, _table(60), params=params)
    assert {k: seen[-1][k] for k in params} == params and seen[-1]["n_clusters"] is None
    assert set(np.unique(labels)) <= {0, 1}
    served.predict(None, _table(60), params={"n_clusters": 3, "n_estimators": 1})  # the others back to defaults
    assert seen[-1]["n_clusters"] == 3 and seen[-1]["max_clusters"] is None and seen[-1]["random_state"] == 0
    assert seen[-1]["k_selection"] == "auto"  # the estimator's default


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_clusters": 1}, "param 'n_clusters' must be 0 (not set) or at least 2, got 1"),
        ({"max_clusters": -2}, "param 'max_clusters' must be 0 (not set) or at least 2, got -2"),
        ({"n_clusters": "3"}, "param 'n_clusters' must be an integer, got '3'"),
        ({"seed": 1}, "unknown param(s) ['seed']: use ['n_clusters', 'max_clusters'"),
        # the estimator's own bounds, in its words
        ({"n_clusters": 4, "max_clusters": 3}, "n_clusters=4 is larger than max_clusters=3; give one of them."),
        ({"k_selection": "silhouette"}, "The 'k_selection' parameter of TabClustPFN must be a str among"),
        ({"n_estimators": 0}, "The 'n_estimators' parameter of TabClustPFN must be an int in the range [1, inf)"),
        ({"n_clusters": 11}, "n_clusters=11 is outside 2..10 (K_max of the checkpoint)"),
    ],
)
def test_pyfunc_refuses_bad_params_naming_them(tiny_checkpoint, params, match):
    from mlflow.exceptions import MlflowException

    with pytest.raises(MlflowException) as exc:
        _pyfunc(tiny_checkpoint).predict(None, _table(20), params=params)
    assert match in exc.value.message and exc.value.error_code == "INVALID_PARAMETER_VALUE"


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (_table(1), "table has only 1 row; clustering needs at least 2"),
        (pd.DataFrame({"a": [0.1, 2.0, 3.5], "name": ["alice", "bob", "carol"]}), "column 'name' holds free text"),
        (pd.DataFrame({"a": [np.nan] * 4}), "every feature value is missing"),
    ],
)
def test_pyfunc_refuses_the_tables_the_batch_job_refuses(tiny_checkpoint, table, match):
    from mlflow.exceptions import MlflowException

    with pytest.raises(MlflowException) as exc:
        _pyfunc(tiny_checkpoint).predict(None, table)
    with pytest.raises(TableError) as batch:
        prepare_features(table)
    assert exc.value.message == str(batch.value) and match in exc.value.message


def test_an_estimator_param_without_a_declared_spec_is_served_under_its_name(monkeypatch):
    """A param the estimator gains (here a fake ``refine``) becomes a request param with its default and type."""
    import model
    from pipeline import pyfunc

    class WithRefine(model.TabClustPFN):
        def __init__(self, n_clusters=None, *, refine=True, **kwargs):
            super().__init__(n_clusters, **kwargs)
            self.refine = refine

    monkeypatch.setattr(model, "TabClustPFN", WithRefine)
    extra = pyfunc._other_estimator_params()
    assert extra == (("refine", "boolean", True),)
    monkeypatch.setattr(pyfunc, "PARAMS", pyfunc.DECLARED_PARAMS + extra)
    assert pyfunc.estimator_params({"refine": False})["refine"] is False


@pytest.fixture(scope="module")
def logged_model(tiny_checkpoint, tmp_path_factory):
    """The tiny checkpoint logged with :func:`log_pyfunc_model` (not registered); returns (model URI, store)."""
    import mlflow

    from pipeline.pyfunc import log_pyfunc_model
    from pipeline.tracking import setup_tracking

    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlruns.db'}"
    setup_tracking(uri, experiment="pyfunc")
    with mlflow.start_run():
        info = log_pyfunc_model(tiny_checkpoint, registered_model_name=None)
    return info.model_uri, uri


def test_logged_model_pins_its_requirements_and_carries_its_code(logged_model, tmp_path):
    import mlflow
    import sklearn

    uri, tracking_uri = logged_model
    mlflow.set_tracking_uri(tracking_uri)
    local = Path(mlflow.artifacts.download_artifacts(uri, dst_path=str(tmp_path)))
    requirements = (local / "requirements.txt").read_text().split()
    assert f"torch=={torch.__version__.split('+')[0]}" in requirements
    assert f"scikit-learn=={sklearn.__version__}" in requirements
    assert {r.split("==")[0] for r in requirements} >= {"torch", "numpy", "pandas", "scikit-learn", "mlflow"}
    assert all("==" in r for r in requirements if not r.startswith("-"))
    assert (local / "code" / "model" / "estimator.py").is_file() and not (local / "code" / "model" / "weights").exists()
    assert (local / "code" / "pipeline" / "pyfunc.py").is_file()


def test_logged_model_is_code_not_a_pickle(logged_model, tmp_path):
    """Models from code: MLflow runs the logged script; no Python object is pickled into the model."""
    import mlflow
    import yaml

    from pipeline.pyfunc import MODEL_CODE, MODEL_CODE_FILE

    uri, tracking_uri = logged_model
    mlflow.set_tracking_uri(tracking_uri)
    local = Path(mlflow.artifacts.download_artifacts(uri, dst_path=str(tmp_path)))
    flavor = yaml.safe_load((local / "MLmodel").read_text())["flavors"]["python_function"]
    assert flavor["loader_module"] == "mlflow.pyfunc.loaders.code_model"
    assert Path(flavor["model_code_path"]).name == MODEL_CODE_FILE
    assert (local / MODEL_CODE_FILE).read_text() == MODEL_CODE
    assert not [p.name for p in local.rglob("*") if p.suffix in (".pkl", ".pickle")]
    (weights,) = (local / "artifacts").iterdir()
    torch.load(weights, weights_only=True)  # plain tensors and values: loads without unpickling any object


# Runs in a fresh interpreter with the project hidden: no PYTHONPATH, cwd elsewhere, the editable install's
# finder and any path to the repository removed, as where only the logged model and its requirements exist.
LOAD_WITHOUT_PROJECT = """
import json, sys
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path = [p for p in sys.path if p not in ("", ".", {repo!r})]  # the venv may live inside the repository
try:
    import model
    sys.exit("the project is still importable from " + model.__file__)
except ImportError:
    pass
import mlflow, numpy as np, pandas as pd
rng = np.random.default_rng(0)
y = rng.integers(0, 3, 60)
table = pd.DataFrame(rng.normal(size=(60, 2)) + 4.0 * y[:, None], columns=["a", "b"])
loaded = mlflow.pyfunc.load_model({uri!r})
labels = loaded.predict(table, params={{"max_clusters": 2, "n_estimators": 1}})
print(json.dumps({{"labels": np.asarray(labels).tolist(), "model": sys.modules["model"].__file__}}))
"""


@pytest.mark.slow
def test_logged_model_loads_and_predicts_without_the_project(logged_model, tmp_path, tiny_checkpoint):
    uri, tracking_uri = logged_model
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MLFLOW_TRACKING_URI")}
    env.update(MLFLOW_TRACKING_URI=tracking_uri, PYTHONNOUSERSITE="1")
    proc = subprocess.run([sys.executable, "-c", LOAD_WITHOUT_PROJECT.format(repo=str(REPO), uri=uri)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not result["model"].startswith(str(REPO))  # the copy that travelled with the model
    table = _table(60)  # the same rows as in the subprocess
    expected = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, max_clusters=2, n_estimators=1)
    np.testing.assert_array_equal(result["labels"], expected.fit_predict(table))


def test_a_request_can_allow_one_cluster_for_a_table_without_structure(tiny_checkpoint):
    from pipeline.pyfunc import PARAMS

    assert ("allow_single_cluster", "boolean", False) in PARAMS  # served under the estimator's name and default
    cloud = pd.DataFrame(np.random.default_rng(2).standard_t(3, size=(400, 3)), columns=list("abc"))
    model = _pyfunc(tiny_checkpoint)
    assert len(np.unique(model.predict(None, cloud))) >= 2  # the network alone always splits
    labels = model.predict(None, cloud, params={"allow_single_cluster": True})
    assert (labels == 0).all()


def test_a_request_spreads_few_level_columns_only_when_asked(tiny_checkpoint):
    """``dequantize`` is served under the estimator's name and default (off): a request that sets it gets the
    estimator's answer with the few-level columns spread."""
    from pipeline.pyfunc import PARAMS

    assert ("dequantize", "boolean", False) in PARAMS
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1, 2], 100)
    table = pd.DataFrame(np.clip(np.round(y[:, None] * 1.5 + 1 + rng.normal(0, 0.8, (300, 4))), 1, 5),
                         columns=list("abcd"))
    model = _pyfunc(tiny_checkpoint)
    plain = TabClustPFN(3, checkpoint=tiny_checkpoint, random_state=0).fit_predict(table)
    spread = TabClustPFN(3, checkpoint=tiny_checkpoint, random_state=0, dequantize=True).fit_predict(table)
    assert not np.array_equal(plain, spread)
    np.testing.assert_array_equal(model.predict(None, table, params={"n_clusters": 3}), plain)
    np.testing.assert_array_equal(model.predict(None, table, params={"n_clusters": 3, "dequantize": True}), spread)


def test_a_request_keeps_long_tails_only_when_asked(tiny_checkpoint):
    """``power_transform`` is served under the estimator's name and default (on): a request that turns it off gets
    the estimator's answer on the untransformed columns."""
    from pipeline.pyfunc import PARAMS

    assert ("power_transform", "boolean", True) in PARAMS
    rng = np.random.default_rng(5)
    y = np.repeat([0, 1, 2], 100)  # three groups on a multiplicative scale: long right tails
    table = pd.DataFrame(np.exp(rng.normal(scale=1.0, size=(300, 6)) + 0.8 * y[:, None]), columns=list("abcdef"))
    model = _pyfunc(tiny_checkpoint)
    default = TabClustPFN(3, checkpoint=tiny_checkpoint, random_state=0).fit(table)
    kept = TabClustPFN(3, checkpoint=tiny_checkpoint, random_state=0, power_transform=False).fit_predict(table)
    assert default.preprocessor_.power_transformed_ and not np.array_equal(default.labels_, kept)
    np.testing.assert_array_equal(model.predict(None, table, params={"n_clusters": 3}), default.labels_)
    np.testing.assert_array_equal(model.predict(None, table, params={"n_clusters": 3, "power_transform": False}),
                                  kept)


def test_a_request_fills_gaps_from_the_nearest_rows_unless_it_asks_for_the_median(tiny_checkpoint):
    """``impute`` is served under the estimator's name and default ("neighbors"): a request for "median" gets the
    estimator's answer with the gaps at the column medians."""
    from pipeline.pyfunc import PARAMS

    assert ("impute", "string", "neighbors") in PARAMS
    rng = np.random.default_rng(6)
    y = np.repeat([0, 1, 2], 100)
    values = 4.0 * y[:, None] + rng.normal(size=(300, 4))
    table = pd.DataFrame(np.where(rng.random((300, 4)) < 0.2, np.nan, values), columns=list("abcd"))
    model = _pyfunc(tiny_checkpoint)
    default = TabClustPFN(3, checkpoint=tiny_checkpoint, random_state=0).fit_predict(table)
    median = TabClustPFN(3, checkpoint=tiny_checkpoint, random_state=0, impute="median").fit_predict(table)
    assert not np.array_equal(default, median)
    np.testing.assert_array_equal(model.predict(None, table, params={"n_clusters": 3}), default)
    np.testing.assert_array_equal(model.predict(None, table, params={"n_clusters": 3, "impute": "median"}), median)


def test_a_request_screens_noise_columns_as_the_estimator_does(tiny_checkpoint):
    """``screen_noise`` is served under the estimator's name and default ("auto", a string param: the words
    "auto", "true", "false"): by default a request gets the estimator's answer without the noise columns beside a
    two-mode column; "false" keeps them, as the estimator does; another word is refused with the options."""
    from mlflow.exceptions import MlflowException

    from pipeline.pyfunc import PARAMS

    assert ("screen_noise", "string", "auto") in PARAMS
    rng = np.random.default_rng(4)
    y = np.repeat([0, 1], 150)
    table = pd.DataFrame({"signal": 6.0 * y + rng.normal(size=300), "n1": rng.normal(size=300),
                          "n2": rng.normal(size=300)})
    model = _pyfunc(tiny_checkpoint)
    alone = TabClustPFN(2, checkpoint=tiny_checkpoint, random_state=0).fit_predict(table[["signal"]])
    np.testing.assert_array_equal(model.predict(None, table, params={"n_clusters": 2}), alone)
    np.testing.assert_array_equal(model.predict(None, table, params={"screen_noise": "TRUE", "n_clusters": 2}), alone)
    kept = TabClustPFN(2, checkpoint=tiny_checkpoint, random_state=0, screen_noise=False).fit_predict(table)
    np.testing.assert_array_equal(model.predict(None, table, params={"screen_noise": "false", "n_clusters": 2}), kept)
    with pytest.raises(MlflowException, match="screen_noise must be 'auto', 'true' or 'false'"):
        model.predict(None, table, params={"screen_noise": "yes"})


def test_a_request_with_question_marks_and_formatted_numbers_is_answered_as_its_numbers(tiny_checkpoint):
    """A JSON request mixes numbers with "?" (a gap) and "$1,234" strings in one column: once refused as "numeric
    but holds non-numeric strings", now read as the numbers and the gaps they are."""
    table = _table(60, seed=2)
    plain = table.assign(a=(table["a"] * 1000).round().where(table.index % 7 != 0))  # whole numbers: exact as text
    sent = plain.assign(a=[("?" if np.isnan(v) else f"${v:,.2f}" if i % 2 else v) for i, v in enumerate(plain["a"])])
    assert sent["a"].map(type).nunique() == 2  # floats and strings in one column, as a JSON body gives them
    with pytest.warns(UserWarning, match="read as"):
        labels = _pyfunc(tiny_checkpoint).predict(None, sent)
    np.testing.assert_array_equal(labels, TabClustPFN(checkpoint=tiny_checkpoint, random_state=0).fit_predict(plain))


def test_a_request_names_its_missing_value_codes_as_strings(tiny_checkpoint, logged_model):
    """``missing_values`` is an array param of strings: ``"-999"`` matches the numeric cells -999 too, so the labels
    are those of the table with gaps there; through MLflow's own param check (the logged model) as well."""
    import mlflow

    table = _table(90, seed=4)
    gaps = table.mask(np.random.default_rng(4).random(table.shape) < 0.1)
    coded = gaps.fillna(-999.0)
    expected = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, n_clusters=3).fit_predict(gaps)
    served = _pyfunc(tiny_checkpoint)
    assert not np.array_equal(served.predict(None, coded, params={"n_clusters": 3}), expected)  # -999 as a value
    np.testing.assert_array_equal(
        served.predict(None, coded, params={"n_clusters": 3, "missing_values": ["-999", "unknown"]}), expected)
    np.testing.assert_array_equal(served.predict(None, coded, params={"n_clusters": 3, "missing_values": "-999"}),
                                  expected)  # one code given bare
    loaded = mlflow.pyfunc.load_model(logged_model[0])
    np.testing.assert_array_equal(loaded.predict(coded, params={"n_clusters": 3, "missing_values": ["-999"]}),
                                  expected)


def test_a_request_with_a_code_that_is_no_number_or_string_is_refused(tiny_checkpoint):
    from mlflow.exceptions import MlflowException

    with pytest.raises(MlflowException) as exc:
        _pyfunc(tiny_checkpoint).predict(None, _table(20), params={"missing_values": [float("nan")]})
    assert "missing_values holds nan: give the codes as finite numbers or strings" in exc.value.message


def test_a_request_for_details_gets_the_labels_with_what_the_fit_says_of_k(tiny_checkpoint, logged_model):
    """``output="details"``: the labels of a plain request, the soft assignments, the probability of each K and the
    partition at the next most probable K, all from one fit (the estimator's own answers); through MLflow's param
    check too. A fit given K has no probabilities over K and no next K; another word is refused."""
    import mlflow
    from mlflow.exceptions import MlflowException

    table = _table(90, seed=3)
    served = _pyfunc(tiny_checkpoint)
    fitted = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0).fit(table)
    answer = served.predict(None, table, params={"output": "details"})
    json.dumps(answer)  # what the scoring server sends
    ranked = sorted(fitted.k_probabilities_, key=lambda k: (-fitted.k_probabilities_[k], k))
    assert answer["labels"] == served.predict(None, table).tolist() == fitted.labels_.tolist()
    assert answer["n_clusters"] == fitted.n_clusters_ == ranked[0]
    assert answer["k_at_top"] is fitted.k_at_top_ and isinstance(answer["k_at_top"], bool)
    np.testing.assert_allclose(answer["probabilities"], fitted.probabilities_, atol=1e-6)
    assert answer["k_probabilities"] == pytest.approx({str(k): p for k, p in fitted.k_probabilities_.items()},
                                                      abs=1e-6)
    assert answer["k_next"] == ranked[1]
    assert answer["labels_next"] == fitted.predict(table, n_clusters=ranked[1]).tolist()
    given = served.predict(None, table, params={"output": "details", "n_clusters": 3})
    assert given["k_probabilities"] == {} and given["k_next"] is None and given["labels_next"] is None
    assert given["k_at_top"] is False  # K given: no range searched
    capped = served.predict(None, table, params={"output": "details", "max_clusters": 3})
    fitted_capped = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, max_clusters=3).fit(table)
    assert capped["k_at_top"] is fitted_capped.k_at_top_ is (fitted_capped.k_chosen_ == 3)
    loaded = mlflow.pyfunc.load_model(logged_model[0])
    assert loaded.predict(table, params={"output": "details"})["labels_next"] == answer["labels_next"]
    with pytest.raises(MlflowException, match=r"param 'output' must be one of \['labels', 'details'\], got 'all'"):
        served.predict(None, table, params={"output": "all"})
