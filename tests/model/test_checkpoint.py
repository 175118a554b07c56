"""model/checkpoint.py: round trip and every refusal case."""

from __future__ import annotations

import collections
import dataclasses
import enum

import numpy as np
import pytest
import torch

from model.checkpoint import (
    FORMAT_VERSION,
    CheckpointError,
    load_checkpoint,
    read_checkpoint,
    save_checkpoint,
    weights_sha256,
)
from model.config import ModelConfig
from tests.model.conftest import make_tiny_net


def _batch(seed: int = 0, n: int = 20, d: int = 3):
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(1, n, d, generator=gen)
    X[0, :, 2] = torch.randint(0, 3, (n,), generator=gen).float()
    cat_mask = torch.tensor([[False, False, True]])
    return X, torch.ones(1, n, dtype=torch.bool), torch.ones(1, d, dtype=torch.bool), cat_mask


def test_round_trip_gives_the_same_outputs_and_metadata(tmp_path):
    net = make_tiny_net(3)
    meta = {"steps": 12, "tasks_seen": 96, "hardware": "cpu", "val_ari": [0.1, 0.2], "lr": torch.tensor(1e-3)}
    path = save_checkpoint(tmp_path / "sub" / "m.pt", net, meta)
    loaded, meta2 = load_checkpoint(path)
    assert loaded.cfg == net.cfg and not loaded.training
    assert meta2["steps"] == 12 and meta2["val_ari"] == [0.1, 0.2]
    with torch.no_grad():
        a, b = net.infer(*_batch()), loaded.infer(*_batch())
    torch.testing.assert_close(a.probs, b.probs, rtol=0, atol=0)
    torch.testing.assert_close(a.k_logits, b.k_logits, rtol=0, atol=0)


def test_file_is_a_plain_versioned_dict_loadable_with_weights_only(tmp_path):
    net = make_tiny_net()
    save_checkpoint(tmp_path / "m.pt", net)
    payload = torch.load(tmp_path / "m.pt", weights_only=True)
    assert payload["format_version"] == FORMAT_VERSION
    assert payload["model_config"] == net.cfg.to_dict()
    assert payload["sha256"] == weights_sha256(net.state_dict())
    assert list(tmp_path.iterdir()) == [tmp_path / "m.pt"]  # no temporary file left behind


def test_sha256_depends_on_every_weight_and_not_on_key_order():
    net = make_tiny_net()
    state = net.state_dict()
    reordered = dict(reversed(list(state.items())))
    assert weights_sha256(reordered) == weights_sha256(state)
    changed = dict(state)
    key = sorted(state)[-1]
    changed[key] = state[key].clone().flatten().index_add(0, torch.tensor([0]), torch.tensor([1e-3])) \
        .view_as(state[key])
    assert weights_sha256(changed) != weights_sha256(state)


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="not a file"):
        load_checkpoint(tmp_path / "absent.pt")
    with pytest.raises(CheckpointError, match="not a file"):
        load_checkpoint(tmp_path)  # a directory


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", b"PK\x03\x04garbage"])
def test_corrupt_file_is_refused(tmp_path, content):
    path = tmp_path / "bad.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(path)


def test_truncated_file_is_refused(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", make_tiny_net())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(path)


class _Payload:
    """Unpickling this object would create the marker file: a stand-in for code hidden in a checkpoint."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_checkpoint_with_python_objects_is_refused_without_running_them(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    torch.save({"format_version": FORMAT_VERSION, "payload": _Payload(marker)}, path)
    with pytest.raises(CheckpointError, match=r"holds a Python object \(.*open\).*not unpickled") as info:
        load_checkpoint(path)
    assert "weights_only=False" not in str(info.value)  # torch's advice to load it anyway is not passed on
    assert not marker.exists()


def _rewrite(tmp_path, mutate):
    path = save_checkpoint(tmp_path / "m.pt", make_tiny_net())
    payload = torch.load(path, weights_only=True)
    mutate(payload)
    torch.save(payload, path)
    return path


def test_wrong_format_version_is_refused(tmp_path):
    path = _rewrite(tmp_path, lambda p: p.update(format_version=FORMAT_VERSION + 1))
    with pytest.raises(CheckpointError, match="format version"):
        load_checkpoint(path)


def test_missing_keys_are_refused(tmp_path):
    path = _rewrite(tmp_path, lambda p: p.pop("sha256"))
    with pytest.raises(CheckpointError, match=r"lacks keys \['sha256'\]"):
        load_checkpoint(path)


def test_not_a_dict_is_refused(tmp_path):
    path = tmp_path / "list.pt"
    torch.save([1, 2, 3], path)
    with pytest.raises(CheckpointError, match="expected a dict"):
        load_checkpoint(path)


def test_sha256_mismatch_is_refused(tmp_path):
    def tamper(payload):
        key = sorted(payload["state_dict"])[0]
        payload["state_dict"][key] = payload["state_dict"][key] + 1.0

    with pytest.raises(CheckpointError, match="sha256 mismatch"):
        load_checkpoint(_rewrite(tmp_path, tamper))


def test_unknown_config_key_is_refused(tmp_path):
    path = _rewrite(tmp_path, lambda p: p["model_config"].update(warp_drive=True))
    with pytest.raises(CheckpointError, match="warp_drive"):
        load_checkpoint(path)


def test_config_that_does_not_match_weight_shapes_is_refused(tmp_path):
    other = dataclasses.replace(ModelConfig.preset("tiny"), cin_hidden=16)
    path = _rewrite(tmp_path, lambda p: p.update(model_config=other.to_dict()))
    with pytest.raises(CheckpointError, match="shape mismatches"):
        load_checkpoint(path)


def test_config_with_missing_parameters_is_refused(tmp_path):
    bigger = dataclasses.replace(ModelConfig.preset("tiny"), dec_blocks=2)
    path = _rewrite(tmp_path, lambda p: p.update(model_config=bigger.to_dict()))
    with pytest.raises(CheckpointError, match="missing parameters"):
        load_checkpoint(path)


@pytest.mark.parametrize("key, value", [("proto_competition", "false"), ("k_max", 10.0), ("col_dim", True),
                                        ("decoder", None)])
def test_config_values_of_the_wrong_type_are_refused(tmp_path, key, value):
    """A string "false" for a flag is truthy: it used to load as True, a different network on the same weights
    (``proto_competition`` has no weights to disagree with); a float size failed inside torch with a TypeError."""
    path = _rewrite(tmp_path, lambda p: p["model_config"].update({key: value}))
    with pytest.raises(CheckpointError, match=key):
        load_checkpoint(path)


def test_numpy_and_path_metadata_is_stored_as_plain_values(tmp_path):
    meta = {"wall_s": np.float64(1.5), "curve": np.array([0.1, 0.2]), "run_dir": tmp_path,
            "nested": [{"k": np.int64(3)}]}
    path = save_checkpoint(tmp_path / "m.pt", make_tiny_net(), meta)
    _, loaded = load_checkpoint(path)
    assert loaded == {"wall_s": 1.5, "curve": [0.1, 0.2], "run_dir": str(tmp_path), "nested": [{"k": 3}]}
    assert type(loaded["nested"][0]["k"]) is int


class _Mode(str, enum.Enum):
    FAST = "fast"


class _Level(enum.IntEnum):
    HIGH = 3


def test_metadata_enums_and_named_tuples_are_stored_as_plain_values(tmp_path):
    """Subclasses of str, int and tuple pass for plain values but pickle as their class, which weights_only then
    refuses: a checkpoint saved without complaint that could never be loaded. They are stored as plain values."""
    pair = collections.namedtuple("pair", "lo hi")
    meta = {"mode": _Mode.FAST, "level": _Level.HIGH, "range": pair(1, 2), "by_mode": {_Mode.FAST: 1}}
    _, loaded = load_checkpoint(save_checkpoint(tmp_path / "m.pt", make_tiny_net(), meta))
    assert loaded == {"mode": "fast", "level": 3, "range": (1, 2), "by_mode": {"fast": 1}}
    assert type(next(iter(loaded["by_mode"]))) is str
    assert [type(loaded[k]) for k in ("mode", "level", "range")] == [str, int, tuple]


def test_metadata_that_would_not_load_with_weights_only_is_refused_at_save(tmp_path):
    with pytest.raises(TypeError, match="weights_only"):
        save_checkpoint(tmp_path / "m.pt", make_tiny_net(), {"when": object()})
    assert not any(tmp_path.iterdir())


def test_read_checkpoint_returns_the_validated_dict_without_building_a_net(tmp_path):
    net = make_tiny_net(1)
    path = save_checkpoint(tmp_path / "m.pt", net, {"steps": 5})
    payload = read_checkpoint(path)
    assert payload["sha256"] == weights_sha256(net.state_dict())
    assert payload["metadata"] == {"steps": 5}
