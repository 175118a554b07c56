"""The shipped checkpoint (issue 7): small enough for the repository, loaded safely by default, carrying its
training record, and described by the model card next to it."""

from __future__ import annotations

import pytest

from model.checkpoint import load_checkpoint, weights_sha256
from model.config import ModelConfig
from model.estimator import default_checkpoint_path

SHIPPED = default_checkpoint_path()
CARD = SHIPPED.parent / "MODEL_CARD.md"
pytestmark = pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped checkpoint in this checkout")


def _tasks(phase: dict) -> int:
    """A lineage phase's tasks, with those of the runs it averages (as model.lineage.phase_tasks counts them)."""
    return int(phase.get("tasks", 0)) + sum(_tasks(p) for branch in phase.get("branches", []) for p in branch)


def test_the_shipped_file_is_the_small_preset_within_25_mb_and_records_how_it_was_trained():
    assert SHIPPED.stat().st_size <= 25 * 2**20
    net, meta = load_checkpoint(SHIPPED)  # torch.load(weights_only=True) inside
    assert net.cfg == ModelConfig.preset("small", k_ranker=True, k_ranker_temperature=net.cfg.k_ranker_temperature,
                                         k_ranker_temperature_slope=net.cfg.k_ranker_temperature_slope)
    assert net.k_ranker is not None and net.cfg.k_ranker_temperature > 0  # a calibrated ranker
    lineage = meta["lineage"]
    assert [p["phase"] for p in lineage] == list(range(1, len(lineage) + 1))
    for phase in lineage:
        assert {"steps", "tasks", "wall_s", "device"} <= set(phase), phase.get("phase")
    assert meta["total_tasks_seen"] == sum(_tasks(p) for p in lineage) > 0
    assert meta["hardware"]


def test_the_model_card_names_the_shipped_weights_and_their_task_count():
    net, meta = load_checkpoint(SHIPPED)
    card = CARD.read_text()
    assert f"`{weights_sha256(net.state_dict())[:12]}...`" in card
    assert f"{meta['total_tasks_seen']:,}" in card
