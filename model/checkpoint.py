"""Checkpoint I/O: a versioned plain dict that loads with ``torch.load(weights_only=True)``.

Layout (``FORMAT_VERSION`` 1)::

    {
        "format_version": 1,
        "model_config": {...},      # ModelConfig.to_dict(): plain ints/strings
        "state_dict": {...},        # name -> CPU tensor
        "metadata": {...},          # training metadata: steps, tasks seen, hardware, wall time, curves ...
        "sha256": "hex digest",     # of the weights, see weights_sha256
    }

The metadata's ``lineage`` (the phases that produced the weights) and the checkpoints made from checkpoints
(averages, CIN grafts) are :mod:`model.lineage`'s.

Every way a file can be unusable raises :class:`CheckpointError` (a ``ValueError``) that says what is wrong.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import re
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from model.config import ModelConfig
from model.network import TabClustNet

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
REQUIRED_KEYS = ("format_version", "model_config", "state_dict", "metadata", "sha256")
_PLAIN_TYPES = (str, int, float, bool, type(None), torch.Tensor)


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used: unreadable, wrong version, incomplete or inconsistent."""


def weights_sha256(state_dict: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 over the tensors of ``state_dict`` in sorted key order (name, dtype, shape and raw bytes).

    Parameters
    ----------
    state_dict : Mapping[str, Tensor]

    Returns
    -------
    str
        Hex digest; the same weights give the same digest on any machine and device.
    """
    digest = hashlib.sha256()
    for key in sorted(state_dict):
        tensor = state_dict[key].detach().to("cpu").contiguous()
        digest.update(key.encode())
        digest.update(f"|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        if tensor.numel():
            digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _plain(value: Any, where: str) -> Any:
    """Copy of ``value`` that ``torch.load(weights_only=True)`` reads back (numpy values and paths converted)."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, (str, int)):
                raise TypeError(f"metadata key {where}[{key!r}] must be a str or int")
            out[_plain(key, where)] = _plain(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):  # a named tuple (pickled as its class) becomes a plain tuple
        items = [_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if not isinstance(value, _PLAIN_TYPES):
        raise TypeError(f"metadata value {where} has type {type(value).__name__}; use plain str/int/float/bool/"
                        "None, lists, dicts or tensors so the checkpoint loads with weights_only=True")
    for base in (str, int, float):  # subclasses (a str or int Enum) pickle as their class: weights_only refuses it
        if isinstance(value, base) and type(value) is not base and not isinstance(value, bool):
            return base.__str__(value) if base is str else base(value)
    return value


def save_checkpoint(path: str | os.PathLike, net: TabClustNet, metadata: dict[str, Any] | None = None) -> Path:
    """Write ``net`` (config, weights and their sha256) and ``metadata`` to ``path`` atomically.

    Parameters
    ----------
    path : str or PathLike
        Destination file; its directory is created if needed. A temporary file in the same directory is
        renamed over it, so readers never see a half-written checkpoint.
    net : TabClustNet
    metadata : dict, optional
        Training metadata: plain Python values and tensors; numpy scalars/arrays become Python numbers/lists
        and paths become strings. Anything else raises ``TypeError`` here rather than at load time.

    Returns
    -------
    Path
        The written path.
    """
    metadata = _plain(dict(metadata or {}), "metadata")
    state = {k: v.detach().to("cpu").clone() for k, v in net.state_dict().items()}
    payload = {
        "format_version": FORMAT_VERSION,
        "model_config": net.cfg.to_dict(),
        "state_dict": state,
        "metadata": metadata,
        "sha256": weights_sha256(state),
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(payload, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    logger.info("saved checkpoint %s (sha256 %s)", path, payload["sha256"][:12])
    return path


def read_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read and validate the checkpoint dict (format, keys, weight digest) without building the network.

    Raises
    ------
    CheckpointError
        If the file is missing or unreadable, has another format version, lacks keys or fails the sha256 check.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no checkpoint file at {path} (not a file)")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as exc:
        refused = re.search(r"Unsupported global: GLOBAL (\S+)", str(exc))
        if refused is None:  # a corrupt or non-torch file
            raise CheckpointError(f"cannot read checkpoint {path}: corrupt or not a TabClustPFN checkpoint "
                                  f"({type(exc).__name__})") from exc
        # weights_only refused an object: it is never loaded, whatever torch's message suggests
        raise CheckpointError(f"cannot read checkpoint {path}: it holds a Python object ({refused.group(1)}) "
                              "beyond tensors and plain containers, so it was not written by "
                              "model.checkpoint.save_checkpoint, and it is not unpickled (unsafe); re-save the "
                              "weights with save_checkpoint") from exc
    except Exception as exc:  # torch raises several types for truncated/corrupt/non-torch files
        raise CheckpointError(f"cannot read checkpoint {path}: corrupt or not a TabClustPFN checkpoint "
                              f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from exc
    if not isinstance(payload, dict):
        raise CheckpointError(f"checkpoint {path} holds a {type(payload).__name__}, expected a dict")
    missing = [k for k in REQUIRED_KEYS if k not in payload]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks keys {missing} (has {sorted(payload)})")
    if payload["format_version"] != FORMAT_VERSION:
        raise CheckpointError(f"checkpoint {path} has format version {payload['format_version']!r}; this code "
                              f"reads version {FORMAT_VERSION}. Re-save it with a matching version of the code.")
    state = payload["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"checkpoint {path}: state_dict must map names to tensors")
    if not isinstance(payload["model_config"], dict) or not isinstance(payload["metadata"], dict):
        raise CheckpointError(f"checkpoint {path}: model_config and metadata must be dicts")
    digest = weights_sha256(state)
    if digest != payload["sha256"]:
        raise CheckpointError(f"checkpoint {path}: sha256 mismatch (stored {str(payload['sha256'])[:12]}..., "
                              f"weights give {digest[:12]}...); the file is corrupt or was modified.")
    return payload


def load_checkpoint(
    path: str | os.PathLike, map_location: str | torch.device = "cpu"
) -> tuple[TabClustNet, dict[str, Any]]:
    """Rebuild the network saved by :func:`save_checkpoint`.

    Parameters
    ----------
    path : str or PathLike
    map_location : str or torch.device, default="cpu"
        Device for the returned network.

    Returns
    -------
    net : TabClustNet
        In eval mode, on ``map_location``.
    metadata : dict
        The training metadata stored with it.

    Raises
    ------
    CheckpointError
        Unreadable file, wrong format version, missing keys, sha256 mismatch, or a config that does not
        match the weights (unknown config keys, missing/unexpected parameters, shape mismatches).
    """
    payload = read_checkpoint(path, map_location="cpu")
    try:
        cfg = ModelConfig.from_dict(payload["model_config"])
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {path}: model_config does not fit this code's ModelConfig: "
                              f"{exc}") from exc
    net = TabClustNet(cfg)
    expected = net.state_dict()
    state = payload["state_dict"]
    problems = []
    if sorted(set(expected) - set(state)):
        problems.append(f"missing parameters {sorted(set(expected) - set(state))[:5]}")
    if sorted(set(state) - set(expected)):
        problems.append(f"unexpected parameters {sorted(set(state) - set(expected))[:5]}")
    shapes = [f"{k}: file {tuple(state[k].shape)} vs config {tuple(v.shape)}"
              for k, v in expected.items() if k in state and state[k].shape != v.shape]
    if shapes:
        problems.append(f"shape mismatches {shapes[:5]}")
    if problems:
        raise CheckpointError(f"checkpoint {path}: model_config does not match the state_dict: "
                              + "; ".join(problems))
    net.load_state_dict(state, strict=True)
    net.eval()
    return net.to(map_location), payload["metadata"]
