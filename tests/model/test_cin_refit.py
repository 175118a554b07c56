"""model.cin_refit: records reproduce what the network infers, the replayed K rule is the estimator's, and the
fit learns K from fingerprints that carry it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.cin_refit import CardinalityRecords, collect_records, fit_cin, member_posteriors, select_from_records, \
    summarize, task_record
from model.ensemble import combine_members, infer_members
from model.selection import select_k
from priors import PriorConfig, sample_dataset
from tests.model.conftest import make_tiny_net

SMALL = PriorConfig(n_rows=(50, 70), n_features=(2, 6))


def _tasks(n: int, first: int = 0):
    return [sample_dataset(first + i, config=SMALL) for i in range(n)]


def test_record_fingerprints_give_the_networks_posterior_and_the_rule_picks_the_estimators_k():
    net = make_tiny_net(3)
    for task in _tasks(4):
        rec = task_record(net, task.X, task.categorical, task.y, n_estimators=4)
        # CIN on the stored fingerprints = the posteriors the network computed on the table itself
        again = member_posteriors(net.cin, rec["fingerprints"][None])[0]
        np.testing.assert_allclose(again, rec["posteriors"], atol=1e-6)
        # the replayed expected-ARI rule chooses what select_k chooses on the full outputs
        member_probs, posteriors = infer_members(net, task.X, task.categorical, 4)
        probs, posterior, _ = combine_members(member_probs, posteriors)
        k, _ = select_k(probs, posterior, k_hi=10, members=(member_probs, posteriors))
        records = CardinalityRecords(rec["fingerprints"][None], np.array([task.n_clusters]), rec["cross"][None],
                                     rec["ari_k"][None], np.array([True]), np.array([0]))
        ari, chosen = select_from_records(records, rec["posteriors"][None])
        assert chosen[0] == k
        assert ari[0] == pytest.approx(rec["ari_k"][k - 2])


def test_tables_with_fewer_columns_than_orderings_repeat_their_members():
    net = make_tiny_net(3)
    task = next(t for t in _tasks(40) if t.X.shape[1] == 2)  # 2 columns: 2 distinct orderings
    rec = task_record(net, task.X, task.categorical, task.y, n_estimators=4)
    assert rec["fingerprints"].shape[0] == 4 and rec["cross"].shape[1] == 4
    np.testing.assert_array_equal(rec["fingerprints"][0], rec["fingerprints"][2])
    np.testing.assert_array_equal(rec["fingerprints"][1], rec["fingerprints"][3])


def test_records_round_trip_and_refuse_other_files(tmp_path):
    records = collect_records(make_tiny_net(1), _tasks(3), n_estimators=2)
    assert len(records) == 3 and records.fingerprints.dtype == np.float32
    assert list(records.n_clusters) == [t.n_clusters for t in _tasks(3)]
    records.save(tmp_path / "r.npz")
    back = CardinalityRecords.load(tmp_path / "r.npz")
    for name in ("fingerprints", "cross", "ari_k", "n_clusters", "is_gmm", "seeds"):
        np.testing.assert_array_equal(getattr(back, name), getattr(records, name))
    both = CardinalityRecords.concat([records, back.subset(np.array([2]))])
    assert len(both) == 4 and both.seeds[-1] == records.seeds[2]
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="not a CIN record file"):
        CardinalityRecords.load(tmp_path / "other.npz")


def _learnable(n: int, seed: int, width: int, m: int = 2) -> CardinalityRecords:
    """Fingerprints whose first entry encodes K (plus noise): a CIN can learn K from them."""
    rng = np.random.default_rng(seed)
    k = rng.integers(2, 11, size=n)
    fp = rng.normal(0, 0.1, size=(n, m, width)).astype(np.float32)
    fp[:, :, 0] += (k[:, None] - 6) / 2.0
    ari_k = np.where(np.arange(2, 11)[None] == k[:, None], 1.0, 0.2)
    cross = np.broadcast_to(np.eye(9)[None, :, None, :], (n, 9, m, 9)).copy()
    return CardinalityRecords(fp, k, cross, ari_k, np.zeros(n, bool), np.arange(n))


def test_fit_learns_k_keeps_the_best_epoch_and_leaves_the_input_untouched():
    net = make_tiny_net(0)
    width = net.cin.mlp[0].in_features
    train, held = _learnable(600, 0, width), _learnable(200, 1, width)
    original = {k: v.clone() for k, v in net.cin.state_dict().items()}
    before = summarize(held, member_posteriors(net.cin, held.fingerprints))
    cin, history = fit_cin(net.cin, train, epochs=15, lr=3e-3, batch_size=64, validation=held)
    after = summarize(held, member_posteriors(cin, held.fingerprints))
    assert after["cross_entropy"] < before["cross_entropy"] - 0.5
    assert after["k_accuracy"] > 0.6 and after["ari_mean"] > before["ari_mean"]
    assert after["cross_entropy"] == pytest.approx(min(r["val_cross_entropy"] for r in history))
    assert len(history) == 15 and not cin.training
    for key, value in net.cin.state_dict().items():
        torch.testing.assert_close(value, original[key])  # fit_cin trained a copy


def test_fit_refuses_bad_settings_and_the_ordinal_head():
    net = make_tiny_net(0)
    records = _learnable(10, 0, net.cin.mlp[0].in_features)
    with pytest.raises(ValueError, match="epochs"):
        fit_cin(net.cin, records, epochs=0, lr=1e-3)
    with pytest.raises(ValueError, match="lr"):
        fit_cin(net.cin, records, epochs=1, lr=0.0)
    ordinal = make_tiny_net(0, cin_head="ordinal")
    with pytest.raises(ValueError, match="categorical CIN head"):
        fit_cin(ordinal.cin, records, epochs=1, lr=1e-3)


def test_members_that_do_not_divide_the_orderings_weigh_as_in_the_estimator():
    # 2 columns, 3 orderings: members 0, 1, 0; each distinct member must still weigh 1/2, as in select_k
    net = make_tiny_net(3)
    for seed in (22, 29, 39, 48):  # 2-column tables on which equal slot weights chose another K
        task = sample_dataset(seed, config=SMALL)
        assert task.X.shape[1] == 2
        member_probs, posteriors = infer_members(net, task.X, task.categorical, 3)
        probs, posterior, _ = combine_members(member_probs, posteriors)
        k, _ = select_k(probs, posterior, k_hi=10, members=(member_probs, posteriors))
        records = collect_records(net, [task], n_estimators=3)
        assert records.n_members.tolist() == [2] and records.fingerprints.shape[1] == 3
        stored = member_posteriors(net.cin, records.fingerprints)
        assert select_from_records(records, stored)[1][0] == k
        truth = task.n_clusters - 2
        assert summarize(records, stored)["cross_entropy"] == pytest.approx(-np.log(posterior[truth]), abs=1e-5)


def test_records_written_without_n_members_load_with_the_period_of_their_repeats(tmp_path):
    records = collect_records(make_tiny_net(1), _tasks(8, first=14), n_estimators=3)
    assert 2 in records.n_members.tolist() and 3 in records.n_members.tolist()  # 2-column tables among them
    np.savez(tmp_path / "old.npz", **{f: getattr(records, f) for f in ("fingerprints", "n_clusters", "cross",
                                                                         "ari_k", "is_gmm", "seeds")})
    np.testing.assert_array_equal(CardinalityRecords.load(tmp_path / "old.npz").n_members, records.n_members)


def test_replayed_rule_breaks_near_ties_towards_the_smaller_k_as_select_k():
    cross = np.zeros((1, 3, 1, 3))
    cross[0, :, 0, 0] = [0.9, 0.9 + 1e-14, 0.1]  # K = 3 above K = 2 by rounding only
    records = CardinalityRecords(np.zeros((1, 1, 4), np.float32), np.array([3]), cross, np.array([[0.5, 0.7, 0.1]]),
                                 np.array([False]), np.array([0]))
    ari, k = select_from_records(records, np.array([[[1.0, 0.0, 0.0]]]))
    assert k.tolist() == [2] and ari.tolist() == [0.5]


def test_fit_refuses_tables_whose_k_the_network_cannot_infer():
    net = make_tiny_net(0, k_max=5)
    records = collect_records(net, _tasks(6), n_estimators=2)
    assert records.n_clusters.max() > 5
    with pytest.raises(ValueError, match=r"candidates are K = 2\.\.5"):
        fit_cin(net.cin, records, epochs=1, lr=1e-3)
