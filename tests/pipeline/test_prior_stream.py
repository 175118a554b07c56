"""The prior stream: seeds, size buckets, layout, and the Ray Data actor pool (distinct, reproducible rows)."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

from pipeline.config import StreamConfig
from pipeline.prior_stream import (
    VAL_SEED_BASE,
    StreamLayout,
    build_prior_stream,
    generate_row,
    is_one_mode,
    regenerate_task,
    step_prior_config,
    task_seed,
    unpack_rows,
    validation_seeds,
)
from priors import PriorConfig

STREAM = StreamConfig(kind="gmm", prior=dataclasses.replace(PriorConfig(), n_rows=(60, 100), n_features=(2, 6)),
                      size_buckets=2, num_actors=2, actor_cpus=0.5)


def test_task_seeds_are_unique_and_never_validation_seeds():
    seeds = [task_seed(r, s, i) for r in (0, 1, 2**22 - 1) for s in (0, 1, 2**27 - 1) for i in (0, 1, 2**13 - 1)]
    assert len(set(seeds)) == len(seeds)
    assert max(seeds) < VAL_SEED_BASE <= min(validation_seeds(3))
    with pytest.raises(ValueError, match="task index"):
        task_seed(0, 0, 2**13)


def test_step_buckets_keep_the_priors_uniform_marginal_over_n():
    stream = dataclasses.replace(STREAM, prior=dataclasses.replace(STREAM.prior, n_rows=(60, 99)), size_buckets=4)
    lows = [step_prior_config(stream, 0, step).n_rows for step in range(4000)]
    assert {hi - lo + 1 for lo, hi in lows} == {10}
    _, counts = np.unique([lo for lo, _ in lows], return_counts=True)
    assert len(counts) == 4 and counts.min() > 0.8 * 1000  # each of the 4 equal buckets about 1000 times


def test_curriculum_ramps_the_largest_n():
    prior = dataclasses.replace(PriorConfig(), n_rows=(60, 400))
    stream = StreamConfig(prior=prior, size_buckets=1, curriculum_steps=100, curriculum_n_start=100)
    assert step_prior_config(stream, 0, 0).n_rows == (60, 100)
    assert step_prior_config(stream, 0, 50).n_rows == (60, 250)
    assert step_prior_config(stream, 0, 500).n_rows == (60, 400)
    from_smallest = dataclasses.replace(stream, curriculum_n_start=None)  # the ramp starts at the prior's smallest N
    assert step_prior_config(from_smallest, 0, 0).n_rows == (60, 60)
    assert step_prior_config(from_smallest, 0, 50).n_rows == (60, 230)
    assert step_prior_config(dataclasses.replace(from_smallest, curriculum_steps=0), 0, 0).n_rows == (60, 400)


def test_micro_batch_tasks_lie_in_the_step_bucket():
    row = generate_row(STREAM, 3, StreamLayout(4, 1, 1, 0, 1), 0)
    n_lo, n_hi = step_prior_config(STREAM, 3, 0).n_rows
    n = row["row_mask"].sum(1)
    assert row["X"].shape[0] == 4 and ((n >= n_lo) & (n <= n_hi)).all()


@pytest.mark.parametrize("world,accum,micro", [(2, 1, 2), (1, 2, 2), (2, 2, 1)])
def test_tasks_of_a_step_do_not_depend_on_how_the_batch_is_split(world, accum, micro):
    whole = StreamLayout(4, 1, 1, 0, 2)
    split = StreamLayout(micro, accum, world, 0, 2)
    seeds = lambda layout: [sorted(s for r in range(layout.rows_per_step * step, layout.rows_per_step * (step + 1))
                                   for s in generate_row(STREAM, 0, layout, r)["seed"]) for step in range(2)]
    assert seeds(split) == seeds(whole)


def test_a_task_regenerates_from_its_step_and_index():
    layout = StreamLayout(3, 1, 1, 5, 6)
    row = generate_row(STREAM, 7, layout, 0)
    task = regenerate_task(STREAM, 7, 5, 2)
    n, d = task.X.shape
    assert row["seed"][2] == task_seed(7, 5, 2)
    np.testing.assert_array_equal(row["X"][2, :n, :d], task.X)
    np.testing.assert_array_equal(row["y"][2, :n], task.y)


def test_a_share_of_one_mode_tables_joins_the_stream_and_the_papers_tasks_keep_their_seeds():
    one_mode = dataclasses.replace(STREAM, p_one_mode=0.4)
    seeds = [task_seed(2, step, i) for step in range(10) for i in range(40)]
    drawn = np.array([is_one_mode(s, 0.4) for s in seeds])
    assert 0.3 < drawn.mean() < 0.5 and not any(is_one_mode(s, 0.0) for s in seeds)
    assert all(is_one_mode(s, 1.0) for s in seeds)
    layout = StreamLayout(8, 1, 1, 0, 3)
    n_lo, n_hi = step_prior_config(one_mode, 2, 1).n_rows
    row = generate_row(one_mode, 2, layout, 1)
    flags = [is_one_mode(s, 0.4) for s in row["seed"]]
    assert any(flags) and not all(flags)
    for j, flag in enumerate(flags):
        task = regenerate_task(one_mode, 2, 1, j)
        n, d = task.X.shape
        np.testing.assert_array_equal(row["X"][j, :n, :d], task.X)
        assert n_lo <= n <= n_hi and (task.meta["mechanism"] == "onemode") == flag
        if flag:  # no cluster structure, answered K = 2 (labels: a cut of the first principal component)
            assert row["n_clusters"][j] == 2 and set(np.unique(task.y)) == {0, 1}
        else:  # the paper's task of the same seed, as the stream without one-mode tables draws it
            np.testing.assert_array_equal(task.X, regenerate_task(STREAM, 2, 1, j).X)
            assert row["n_clusters"][j] == regenerate_task(STREAM, 2, 1, j).n_clusters


def test_the_one_mode_share_must_be_a_probability():
    with pytest.raises(ValueError, match="p_one_mode"):
        dataclasses.replace(STREAM, p_one_mode=1.5)


def _consume(it, out):
    out.extend(r for b in it.iter_batches(batch_size=None) for r in unpack_rows(b))


def test_ray_stream_deals_distinct_reproducible_rows_to_workers_in_order(ray_local):
    layout = StreamLayout(micro_batch=2, accum_steps=2, world_size=2, start_step=3, end_step=6)
    ds = build_prior_stream(STREAM, 11, layout)
    received: list[list[dict]] = [[], []]
    splits = ds.streaming_split(2, equal=True)  # what Ray Train does with the "train" dataset
    threads = [threading.Thread(target=_consume, args=(s, out)) for s, out in zip(splits, received)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert [len(r) for r in received] == [6, 6]
    for rank, rows in enumerate(received):
        assert [int(r["rank"]) for r in rows] == [rank] * 6
        assert [(int(r["step"]), int(r["accum_index"])) for r in rows] == [(s, a) for s in (3, 4, 5) for a in (0, 1)]
    seeds = np.concatenate([r["seed"] for rows in received for r in rows])
    assert len(set(seeds.tolist())) == 24  # 3 steps x 8 tasks, none repeated across actors
    fingerprints = {r["X"][b].tobytes() for rows in received for r in rows for b in range(2)}
    assert len(fingerprints) == 24
    # every row is what the seed layout says, regenerated without Ray
    for rank, rows in enumerate(received):
        for k, r in enumerate(rows):
            expected = generate_row(STREAM, 11, layout, 2 * k + rank)
            for key in ("X", "y", "seed", "row_mask", "cat_mask"):
                np.testing.assert_array_equal(r[key], expected[key])
