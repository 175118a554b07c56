"""Checkpoints made from checkpoints without training (weight averages, CIN grafts) and the lineage they record.

A checkpoint's ``metadata["lineage"]`` lists the phases that produced its weights, oldest first. Each phase is a
plain dict with at least ``phase`` (1-based position), ``run``, ``steps``, ``tasks`` (prior tasks it trained on),
``wall_s`` and ``device``; a training phase also records its ``seed``. Two kinds of phase train on nothing:

* ``average`` (:func:`average_checkpoints`): the weighted mean of runs continued from one parent. The parent's
  phases stay in the lineage once; each run's own phases become one of the phase's ``branches``, so
  :func:`phase_tasks` counts the runs' tasks and ``total_tasks_seen`` counts the parent's only once.
* ``graft-cin`` (:func:`graft_cin`): one checkpoint's partition network with another's CIN copied in. The phase
  names the donor file, the sha256 of its CIN weights and the donor's whole lineage (``cin_lineage``), so the
  seeds its CIN trained with stay known.

The weight arithmetic and the metadata for each live here together; the metadata functions are pure, so they
can be tested on dicts alone.
"""

from __future__ import annotations

import math
import os
from typing import Any

import torch

from model.checkpoint import CheckpointError, load_checkpoint, weights_sha256
from model.config import ModelConfig
from model.network import TabClustNet


def phase_tasks(phase: dict[str, Any]) -> int:
    """Tasks one lineage phase trained on: its own, plus its branches' when it is an average of runs.

    An ``average`` phase trains on nothing itself (``tasks`` 0); the runs it averages are its ``branches``, which
    may hold averages in turn.
    """
    return int(phase.get("tasks", 0)) + sum(phase_tasks(p) for br in phase.get("branches", []) for p in br)


def inherited_lineage(metadata: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The phases and total tasks a run continued from a checkpoint with ``metadata`` inherits.

    ``total_tasks_seen`` as recorded (older checkpoints only have ``tasks_seen``, their single phase's).
    """
    total = metadata.get("total_tasks_seen", metadata.get("tasks_seen", 0))
    return list(metadata.get("lineage", [])), int(total)


def averaged_metadata(metadatas: list[dict[str, Any]], sources: list[str], weights: list[float],
                      note: str = "") -> dict[str, Any]:
    """Checkpoint metadata for the weight average of runs (:func:`average_checkpoints`).

    The lineages' common prefix (the shared parent's phases) is kept once; the phases after it become the
    ``branches`` of one new ``average`` phase, so ``total_tasks_seen`` counts the parent's tasks once and every
    branch's new tasks.

    Parameters
    ----------
    metadatas : list of dict
        Each averaged checkpoint's metadata, in the order of ``sources`` and ``weights``.
    sources : list of str
        The averaged files, as the phase should name them.
    weights : list of float
        Mixing weights (recorded normalised to sum 1).
    note : str
        What this average is (default: a generic description).
    """
    lineages = [list(m.get("lineage", [])) for m in metadatas]
    prefix = 0
    while all(len(lin) > prefix for lin in lineages) and all(lin[prefix] == lineages[0][prefix] for lin in lineages):
        prefix += 1
    common = lineages[0][:prefix]
    branches = [lin[prefix:] for lin in lineages]
    branch_tasks = sum(phase_tasks(ph) for br in branches for ph in br)
    total = sum(phase_tasks(ph) for ph in common) + branch_tasks
    mix = [float(w) / sum(weights) for w in weights]
    phase = {"phase": prefix + 1, "run": "average", "steps": 0, "tasks": 0, "wall_s": 0,
             "device": "none (arithmetic on weights)",
             "what": note or f"weighted mean of the weights of {len(sources)} runs from one parent",
             "sources": [str(s) for s in sources], "weights": [round(w, 6) for w in mix], "branches": branches}
    return {"step": 0, "tasks_seen": branch_tasks, "total_tasks_seen": total, "lineage": [*common, phase],
            "train_config": metadatas[0].get("train_config", {}), "hardware": metadatas[0].get("hardware", "")}


def grafted_metadata(partitions_meta: dict[str, Any], cin_meta: dict[str, Any], partitions: str, cin_source: str,
                     cin_sha256: str, note: str = "") -> dict[str, Any]:
    """Checkpoint metadata for a CIN graft (:func:`graft_cin`): the partition network's lineage and one
    ``graft-cin`` phase naming where the CIN came from (file, the sha256 of its CIN weights, the donor's last
    phase, and the donor's whole lineage as ``cin_lineage``, so that the seeds its CIN trained with stay known to
    ``pipeline.config.seeds_used``). It trains on nothing, so ``total_tasks_seen`` is the partition network's."""
    lineage = list(partitions_meta.get("lineage", []))
    donor_lineage = cin_meta.get("lineage", [])
    phase = {"phase": len(lineage) + 1, "run": "graft-cin", "steps": 0, "tasks": 0, "wall_s": 0,
             "device": "none (weights copied)",
             "what": note or f"CIN copied unchanged from {cin_source}; every other weight is {partitions}'s",
             "sources": [str(partitions), str(cin_source)], "cin_sha256": cin_sha256,
             "cin_source_last_phase": donor_lineage[-1] if donor_lineage else None,
             "cin_lineage": list(donor_lineage)}
    total = sum(phase_tasks(ph) for ph in lineage)
    return {"step": 0, "tasks_seen": 0, "total_tasks_seen": total, "lineage": [*lineage, phase],
            "train_config": partitions_meta.get("train_config", {}), "hardware": partitions_meta.get("hardware", "")}


def _config_difference(a: ModelConfig, b: ModelConfig) -> dict[str, tuple[Any, Any]]:
    """The fields where two model configs differ: name -> (a's value, b's value)."""
    return {k: (v, getattr(b, k)) for k, v in a.to_dict().items() if getattr(b, k) != v}


def average_checkpoints(paths: list[str | os.PathLike], weights: list[float] | None = None, *, note: str = ""
                        ) -> tuple[TabClustNet, dict[str, Any]]:
    """The weighted mean of the weights of several checkpoints of one architecture (a "model soup").

    Averaging runs fine-tuned from one parent (same init, different prior tasks) usually lands in a flatter
    region of the loss than either run alone; averaging unrelated runs does not work, so check the result.

    Parameters
    ----------
    paths : list of paths
        At least two checkpoints with equal model configs.
    weights : list of float, optional
        Finite non-negative mixing weights, not all 0 (normalised to sum 1); default: equal.
    note : str
        What this average is, for its lineage phase.

    Returns
    -------
    net : TabClustNet
        The averaged network, in eval mode on the CPU.
    metadata : dict
        Its checkpoint metadata (:func:`averaged_metadata`): the parent's phases once, then one ``average``
        phase whose branches are each run's own phases.

    Raises
    ------
    CheckpointError
        Fewer than two paths, an unusable file, different model configs, or non-float tensors (buffers) that
        differ between the files.
    ValueError
        Bad ``weights``.
    """
    if len(paths) < 2:
        raise CheckpointError(f"averaging needs at least two checkpoints, got {len(paths)}")
    if weights is None:
        weights = [1.0] * len(paths)
    if len(weights) != len(paths) or not all(math.isfinite(w) and w >= 0 for w in weights) or max(weights) <= 0:
        # an infinite weight would normalise to inf/inf = NaN and write a NaN model
        raise ValueError(f"weights must be {len(paths)} finite non-negative numbers with a positive sum, got {weights}")
    top = max(float(w) for w in weights)  # scaled first: a sum of huge finite weights could overflow
    mix = [float(w) / top for w in weights]
    mix = [w / sum(mix) for w in mix]
    # an average is a new network: the K rankers fitted to its parents are dropped (fit one to it)
    loaded = [(net.without_k_ranker(), meta) for net, meta in (load_checkpoint(p) for p in paths)]
    base_cfg = loaded[0][0].cfg
    for p, (net, _) in zip(paths[1:], loaded[1:]):
        if net.cfg != base_cfg:
            raise CheckpointError(f"cannot average {paths[0]} and {p}: their model configs differ in "
                                  f"{_config_difference(base_cfg, net.cfg)}")
    states = [net.state_dict() for net, _ in loaded]
    averaged = {}
    for key, first in states[0].items():
        if torch.is_floating_point(first):
            averaged[key] = sum(w * s[key].double() for w, s in zip(mix, states)).to(first.dtype)
        else:
            if any(not torch.equal(first, s[key]) for s in states[1:]):
                raise CheckpointError(f"cannot average: the non-float tensor {key!r} differs between the files")
            averaged[key] = first.clone()
    net = TabClustNet(base_cfg)
    net.load_state_dict(averaged, strict=True)
    net.eval()
    metadata = averaged_metadata([meta for _, meta in loaded], [os.fspath(p) for p in paths], mix, note)
    return net, metadata


def graft_cin(partitions: str | os.PathLike, cin_source: str | os.PathLike, *, note: str = ""
              ) -> tuple[TabClustNet, dict[str, Any]]:
    """One checkpoint's partition network with another's cardinality network (CIN) copied in unchanged.

    CIN reads only the partitions' Gram fingerprints, so a CIN fitted to a parent network can serve a network
    continued from it; whether it serves it better than a refit is for the caller to measure.

    Parameters
    ----------
    partitions : path
        The checkpoint whose every weight outside ``cin`` is kept.
    cin_source : path
        The checkpoint whose ``cin`` weights are copied; its model config must equal the first's.
    note : str
        What this graft is, for its lineage phase.

    Returns
    -------
    net : TabClustNet
        The grafted network, in eval mode on the CPU.
    metadata : dict
        Its checkpoint metadata (:func:`grafted_metadata`): the partition network's lineage and one ``graft-cin``
        phase naming the donor and the sha256 of the copied CIN weights.

    Raises
    ------
    CheckpointError
        An unusable file or different model configs.
    """
    net, meta = load_checkpoint(partitions)
    donor, donor_meta = load_checkpoint(cin_source)
    # a new CIN changes the posterior a K ranker reads: the partition network's ranker is dropped (fit one again)
    net, donor = net.without_k_ranker(), donor.without_k_ranker()
    if donor.cfg != net.cfg:
        raise CheckpointError(f"cannot graft the CIN of {cin_source} onto {partitions}: their model configs differ "
                              f"in {_config_difference(net.cfg, donor.cfg)}")
    net.cin.load_state_dict(donor.cin.state_dict(), strict=True)
    net.eval()
    metadata = grafted_metadata(meta, donor_meta, os.fspath(partitions), os.fspath(cin_source),
                                weights_sha256(net.cin.state_dict()), note)
    return net, metadata
