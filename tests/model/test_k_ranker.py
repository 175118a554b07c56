"""The learned choice of K: candidate features (model.k_features), the ranker (model.k_ranker), and how the
estimator, checkpoints and training treat a network that carries one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from sklearn.datasets import make_blobs
from sklearn.metrics import silhouette_score

from model.checkpoint import load_checkpoint, save_checkpoint, weights_sha256
from model.estimator import TabClustPFN
from model.k_features import (FEATURE_SETS, FEATURES, candidate_features, candidate_mixtures, member_agreement,
                              partition_log_likelihood, silhouettes, within_ratios)
from model.k_ranker import (KRanker, chosen_ari, distinct_fraction, fit_ranker, fit_temperature,
                            fit_temperature_slope, input_width, k_probabilities, ranker_inputs, reliability,
                            table_temperature)
from model.lineage import average_checkpoints
from model.network import TabClustNet
from tests.model.conftest import make_tiny_net


def test_silhouettes_match_sklearn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    labels = np.stack([rng.integers(0, k, 60) for k in (2, 3, 5)])
    labels[2, 0] = 7  # a singleton cluster scores 0, as in scikit-learn
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    ours = silhouettes(d, labels)
    for lab, s in zip(labels, ours):
        assert s == pytest.approx(silhouette_score(X, lab), abs=1e-10)
    assert silhouettes(d, np.zeros((1, 60), int))[0] == 0.0


def test_within_ratios_are_the_unexplained_share_of_variance():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 4))
    lab = rng.integers(0, 3, 50)
    total = ((X - X.mean(0)) ** 2).sum()
    within = sum(((X[lab == c] - X[lab == c].mean(0)) ** 2).sum() for c in range(3))
    assert within_ratios(X, lab[None])[0] == pytest.approx(within / total)
    assert within_ratios(X, np.zeros((1, 50), int))[0] == pytest.approx(1.0)


def test_candidate_features_see_the_right_k_of_clean_blobs():
    X, y = make_blobs(n_samples=300, centers=3, cluster_std=0.5, random_state=0)
    labels = []
    from sklearn.cluster import KMeans
    for k in range(2, 6):
        labels.append(KMeans(k, n_init=4, random_state=0).fit_predict(X))
    labels = np.stack(labels)
    k_max = 5
    probs = np.zeros((k_max - 1, 300, k_max))
    for c, lab in enumerate(labels):
        probs[c, np.arange(300), lab] = 1.0
    posterior = np.full(k_max - 1, 0.25)
    scores = np.linspace(0.1, 0.4, k_max - 1)
    f = candidate_features(X, labels, probs, posterior, scores, k_hi=5)
    assert f.shape == (4, len(FEATURES))
    col = {n: f[:, i] for i, n in enumerate(FEATURES)}
    assert np.argmax(col["silhouette"]) == 1  # K = 3
    assert np.argmax(col["drop"][1:]) + 1 == 1  # the within-cluster variance falls most up to K = 3
    assert np.allclose(col["moved"], 0.0) and np.allclose(col["crisp"], 1.0)
    assert np.allclose(col["exp_ari"], scores) and np.allclose(col["log_post"], np.log(0.25))
    assert np.argmax(col["mix_bic"]) == 1  # the penalised mixture likelihood is best at K = 3 too
    assert np.all(np.diff(col["mix_ll"] - col["mix_bic"]) > 0)  # the penalty grows with K
    assert np.allclose(candidate_features(X, labels, probs, posterior, scores, 5, candidate_mixtures(X, labels, 5)),
                       f)  # mixtures fitted once (as the estimator does) give the same features
    without = candidate_features(X, labels, probs, posterior, scores, 5, with_mixture=False)  # for a set-1 ranker
    mixture = [FEATURES.index("mix_ll"), FEATURES.index("mix_bic")]
    rest = [i for i in range(len(FEATURES)) if i not in mixture]
    assert np.isnan(without[:, mixture]).all() and np.array_equal(without[:, rest], f[:, rest])
    assert np.array_equal(col["agree"], np.ones(4))  # no members given: nothing to disagree
    members = np.stack([probs, probs[..., ::-1]])  # two orderings, the same partitions under other cluster names
    agreed = candidate_features(X, labels, probs, posterior, scores, 5, member_probs=members)
    assert np.allclose(agreed[:, FEATURES.index("agree")], 1.0)


def test_member_agreement_of_two_members_is_sklearns_adjusted_rand_index():
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(2, 200))
        a = rng.integers(0, int(rng.integers(1, 6)), n)
        b = a.copy() if rng.random() < 0.2 else rng.integers(0, int(rng.integers(1, 6)), n)
        members = np.zeros((2, 1, n, 6))
        members[0, 0, np.arange(n), a] = 1.0
        members[1, 0, np.arange(n), b] = 1.0
        assert member_agreement(members, 1)[0] == pytest.approx(adjusted_rand_score(a, b), abs=1e-12)
    single = np.zeros((2, 1, 5, 2))
    single[..., 0] = 1.0  # both members: every row in one cluster
    assert member_agreement(single, 1)[0] == 1.0


def test_member_agreement_is_high_where_the_orderings_agree_and_near_zero_where_they_do_not():
    rng = np.random.default_rng(1)
    n, k_max = 600, 4
    stable = rng.integers(0, 2, n)  # K = 2: every member the same split (under its own cluster names)
    members = np.zeros((3, k_max - 1, n, k_max))
    for m in range(3):
        members[m, 0, np.arange(n), (stable + m) % 2] = 1.0
        for c in (1, 2):  # K = 3, 4: each member an unrelated split
            members[m, c, np.arange(n), rng.integers(0, c + 2, n)] = 1.0
    agree = member_agreement(members, 3)
    assert agree[0] == pytest.approx(1.0) and np.all(np.abs(agree[1:]) < 0.05)
    assert np.array_equal(member_agreement(members[:1], 3), np.ones(3))  # one member: nothing to disagree
    assert np.array_equal(member_agreement(None, 2), np.ones(2))


def test_partition_likelihood_is_the_mixed_type_mixture_density_of_the_rows():
    """Numeric columns: a Gaussian per cluster (its mean and variance); a categorical column: the cluster's smoothed
    category frequencies; clusters weighted by their share of the rows."""
    from scipy.stats import norm

    from model.k_features import CATEGORY_PSEUDOCOUNT
    from model.refinement import design, one_hot_blocks, one_hot_widths

    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 40)
    Z = np.column_stack([labels * 3.0 + rng.normal(size=40), rng.integers(0, 3, 40)])
    cat = np.array([False, True])
    widths = one_hot_widths(Z, cat)
    X, blocks = design(Z, cat, widths), one_hot_blocks(cat, widths)
    assert blocks == [(1, 4)] and X.shape == (40, 4)
    dens = np.zeros(40)
    for c in range(2):
        x = Z[labels == c, 0]
        counts = np.bincount(Z[labels == c, 1].astype(int), minlength=3) + CATEGORY_PSEUDOCOUNT
        dens += (labels == c).mean() * norm.pdf(Z[:, 0], x.mean(), x.std()) * (counts / counts.sum())[
            Z[:, 1].astype(int)]
    total, params = partition_log_likelihood(X, labels, 2, blocks)
    assert total == pytest.approx(np.log(dens).sum())
    assert params == 2 * (2 + 2) + 1  # per cluster: mean and variance, 2 free category frequencies; 1 weight


def test_bic_feature_does_not_reward_splitting_a_noise_category():
    """Two groups in a numeric column beside a categorical column of 4 levels drawn at random: cutting each group by
    the category (K = 8) buys almost no likelihood under the categorical model, so K = 2 has the better penalised
    likelihood; a Gaussian on the one-hot codes would have rewarded the cut."""
    from model.refinement import design, one_hot_blocks, one_hot_widths

    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 600)
    Z = np.column_stack([4.0 * y + rng.normal(size=600), rng.normal(size=600), rng.integers(0, 4, 600)])
    Z[:, :2] = (Z[:, :2] - Z[:, :2].mean(0)) / Z[:, :2].std(0)
    cat = np.array([False, False, True])
    widths = one_hot_widths(Z, cat)
    X, blocks = design(Z, cat, widths), one_hot_blocks(cat, widths)
    cut = y * 4 + Z[:, 2].astype(int)
    two, eight = (partition_log_likelihood(X, lab, k, blocks) for lab, k in ((y, 2), (cut, 8)))
    bic = [ll - params * np.log(600) / 2 for ll, params in (two, eight)]
    assert bic[0] > bic[1]
    gaussian = [partition_log_likelihood(X, lab, k)[0] for lab, k in ((y, 2), (cut, 8))]  # one-hot as numbers
    assert gaussian[1] - gaussian[0] > 10 * (eight[0] - two[0])


def test_bic_feature_prefers_the_split_of_the_one_informative_column():
    """Two groups 6 SD apart in column 0 beside 5 pure-noise columns: the 2-way split of column 0 has the best
    penalised mixture likelihood; splitting it further by noise columns gains less than its parameters cost."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 600)
    X = np.column_stack([6.0 * y + rng.normal(size=600), rng.normal(size=(600, 5))])
    X = (X - X.mean(0)) / X.std(0)
    labels = [y]
    for k in range(3, 6):  # further splits: each group cut by the sign of noise columns
        labels.append(y * (k - 1) + np.minimum((X[:, 1] > 0) + (X[:, 2] > 0) * (k > 3) + (X[:, 3] > 0) * (k > 4),
                                               k - 2) * (y == 0))
    labels = np.stack([np.unique(lab, return_inverse=True)[1] for lab in labels])
    mix = candidate_mixtures(X, labels, 5)
    probs = np.zeros((4, 600, 5))
    f = candidate_features(X, labels, probs, np.full(4, 0.25), np.zeros(4), 5, mix)
    col = {n: f[:, i] for i, n in enumerate(FEATURES)}
    assert np.argmax(col["mix_bic"]) == 0 and np.argmax(col["mix_ll"]) > 0  # unpenalised, more K fits better


def test_ranker_inputs_relative_to_the_best_admissible_candidate():
    f = torch.zeros(1, 3, len(FEATURES))
    f[0, :, FEATURES.index("silhouette")] = torch.tensor([0.2, 0.5, 0.9])
    admissible = torch.tensor([[True, True, False]])
    x = ranker_inputs(f, admissible)
    assert x.shape[-1] == input_width(1) == len(FEATURE_SETS[1]) + 3 + 1
    rel = x[0, :, len(FEATURE_SETS[1]) + 2]  # silhouette relative to the best admissible one (0.5, not 0.9)
    assert torch.allclose(rel, torch.tensor([-0.3, 0.0, 0.0]))
    assert torch.allclose(x[0, :, -1], torch.tensor([0.2, 0.3, 0.4]))
    f[0, :, FEATURES.index("mix_bic")] = torch.tensor([-1.0, -0.5, 3.0])
    assert torch.equal(ranker_inputs(f, admissible, 1), x)  # set 1 never reads the mixture features
    f[0, :, FEATURES.index("agree")] = torch.tensor([0.9, 0.4, 0.1])
    assert torch.equal(ranker_inputs(f, admissible, 1), x)  # nor the orderings' agreement
    x2 = ranker_inputs(f, admissible, 2)
    assert x2.shape[-1] == input_width(2) == len(FEATURE_SETS[2]) + 4 + 1
    assert torch.allclose(x2[0, :, len(FEATURE_SETS[2]) + 3], torch.tensor([-0.5, 0.0, 0.0]))  # mix_bic relative
    x3 = ranker_inputs(f, admissible, 3)  # set 1's features and the agreement, also relative to its best
    assert x3.shape[-1] == input_width(3) == len(FEATURE_SETS[1]) + 1 + 4 + 1
    assert torch.allclose(x3[0, :, len(FEATURE_SETS[3]) + 3], torch.tensor([0.0, -0.5, 0.0]))
    assert torch.equal(x3[0, :, : len(FEATURE_SETS[1])], x[0, :, : len(FEATURE_SETS[1])])
    with pytest.raises(ValueError, match="unknown K ranker feature set 9"):
        ranker_inputs(f, admissible, 9)
    with pytest.raises(ValueError, match="columns of model.k_features.FEATURES"):
        ranker_inputs(f[..., :9], admissible, 1)


def test_a_checkpoint_says_which_features_its_ranker_reads(tmp_path):
    """A checkpoint written before feature set 2 (no ``k_ranker_features`` in its config) loads as set 1; a set-2
    ranker round-trips as set 2."""
    net = make_tiny_net(0)
    for feature_set in FEATURE_SETS:
        ranked = TabClustNet(dataclasses.replace(net.cfg, k_ranker=True, k_ranker_features=feature_set))
        ranked.load_state_dict({**net.state_dict(), **{f"k_ranker.{k}": v
                                                        for k, v in KRanker(feature_set).state_dict().items()}})
        path = tmp_path / f"set{feature_set}.pt"
        save_checkpoint(path, ranked, {"steps": 0})
        loaded, _ = load_checkpoint(path)
        assert loaded.k_ranker.feature_set == feature_set == loaded.cfg.k_ranker_features
    payload = torch.load(tmp_path / "set1.pt", weights_only=True)
    del payload["model_config"]["k_ranker_features"]  # as written before the key existed
    torch.save(payload, tmp_path / "old.pt")
    assert load_checkpoint(tmp_path / "old.pt")[0].k_ranker.feature_set == 1


def _synthetic_records(n: int, seed: int):
    """Tables whose best candidate is the one of highest silhouette, while the expected ARI points elsewhere."""
    rng = np.random.default_rng(seed)
    c = 6
    feats = rng.normal(size=(n, c, len(FEATURES)))
    best = rng.integers(0, c, n)
    ari = rng.uniform(0.0, 0.4, size=(n, c))
    ari[np.arange(n), best] = 0.9
    feats[..., FEATURES.index("silhouette")] = rng.uniform(0.0, 0.3, size=(n, c))
    feats[np.arange(n), best, FEATURES.index("silhouette")] = 0.6
    feats[np.arange(n), (best + 1) % c, FEATURES.index("exp_ari")] = 5.0
    ari[rng.random(n) < 0.3, -1] = np.nan  # some tables have fewer admissible candidates
    ari[np.isnan(ari[:, -1]) & (best == c - 1), -1] = 0.9
    return feats, ari


def test_fit_ranker_learns_which_feature_marks_the_best_candidate():
    feats, ari = _synthetic_records(400, 0)
    ranker = fit_ranker(feats, ari, epochs=300, seed=0)
    test_f, test_a = _synthetic_records(200, 1)
    picked = chosen_ari(ranker, test_f, test_a)
    assert np.nanmean(picked) > 0.8  # the expected-ARI feature would pick 0.2 on average
    assert not np.isnan(picked).any()  # never an inadmissible candidate
    k, scores = ranker.choose(test_f[0, :4])
    assert 2 <= k <= 5 and scores.shape == (4,)


def _ranked_checkpoint(tmp_path, seed: int = 0, candidates: str = "kmeans", feature_set: int = 1) -> str:
    net = make_tiny_net(0)
    with_ranker = TabClustNet(dataclasses.replace(net.cfg, k_ranker=True, k_ranker_candidates=candidates,
                                                  k_ranker_features=feature_set))
    torch.manual_seed(seed)
    ranker = KRanker(feature_set)
    with_ranker.load_state_dict({**net.state_dict(), **{f"k_ranker.{k}": v for k, v in ranker.state_dict().items()}})
    path = tmp_path / f"ranked{seed}-{candidates}-set{feature_set}.pt"
    save_checkpoint(path, with_ranker, {"steps": 0})
    return str(path)


def test_estimator_uses_the_checkpoints_ranker_and_says_so(tmp_path, tiny_checkpoint):
    X, _ = make_blobs(n_samples=120, centers=3, n_features=5, random_state=0)  # wider than the BIC path's 4
    path = _ranked_checkpoint(tmp_path)
    net, _ = load_checkpoint(path)
    est = TabClustPFN(checkpoint=path).fit(X)
    assert est.k_selection_ == "ranker"
    scores = np.array([est.k_scores_[k] for k in range(2, net.cfg.k_max + 1)])
    assert est.n_clusters_ == int(np.argmax(scores)) + 2  # the ranker's best score is the chosen K
    agreeing = TabClustPFN(checkpoint=_ranked_checkpoint(tmp_path, feature_set=3)).fit(X)  # reads the orderings'
    scores = np.array([agreeing.k_scores_[k] for k in range(2, net.cfg.k_max + 1)])  # agreement (set 3) too
    assert agreeing.k_selection_ == "ranker" and agreeing.n_clusters_ == int(np.argmax(scores)) + 2
    capped = TabClustPFN(checkpoint=path, max_clusters=3).fit(X)
    assert capped.n_clusters_ <= 3 and capped.k_scores_[4] == -np.inf
    assert TabClustPFN(checkpoint=path, k_selection="expected_ari").fit(X).k_selection_ == "expected_ari"
    assert TabClustPFN(checkpoint=path, refine="none").fit(X).k_selection_ == "expected_ari"  # auto
    gmm = TabClustPFN(checkpoint=path, refine="gmm").fit(X)  # the same candidates, the chosen one refined again
    assert gmm.k_selection_ == "ranker" and gmm.n_clusters_ == est.n_clusters_
    assert TabClustPFN(checkpoint=tiny_checkpoint).fit(X).k_selection_ == "expected_ari"  # no ranker: auto
    assert TabClustPFN(checkpoint=path, n_clusters=3).fit(X).k_selection_ == "given"


def test_ranker_rule_refuses_what_cannot_give_it(tmp_path, tiny_checkpoint):
    X, _ = make_blobs(n_samples=60, centers=2, random_state=0)
    with pytest.raises(ValueError, match="has none: fit one with jobs/fit_k_ranker.py"):
        TabClustPFN(checkpoint=tiny_checkpoint, k_selection="ranker").fit(X)
    with pytest.raises(ValueError, match="needs refine='kmeans'"):
        TabClustPFN(checkpoint=_ranked_checkpoint(tmp_path), k_selection="ranker", refine="none").fit(X)


def test_without_k_ranker_keeps_every_other_weight(tmp_path):
    net, _ = load_checkpoint(_ranked_checkpoint(tmp_path))
    bare = net.without_k_ranker()
    assert bare.k_ranker is None and not bare.cfg.k_ranker
    assert weights_sha256(bare.state_dict()) == weights_sha256(make_tiny_net(0).state_dict())
    assert bare.without_k_ranker() is bare


def test_averaging_drops_the_parents_rankers(tmp_path):
    net, _ = average_checkpoints([_ranked_checkpoint(tmp_path, 0), _ranked_checkpoint(tmp_path, 1)])
    assert net.k_ranker is None and not net.cfg.k_ranker


def test_inputs_past_the_fitted_range_are_clipped():
    """A degenerate table's features (within-cluster variance 0, Calinski-Harabasz 1e12) reach the MLP clipped to
    +-INPUT_CLIP deviations, as a candidate just inside that range would."""
    from model.k_ranker import INPUT_CLIP

    ranker = KRanker()
    f = torch.zeros(1, 2, len(FEATURES))
    admissible = torch.ones(1, 2, dtype=torch.bool)
    f[0, 0, FEATURES.index("log_ch")] = 1e6
    far = ranker(f, admissible)
    f[0, 0, FEATURES.index("log_ch")] = INPUT_CLIP + 1.0  # std 1, mean 0: past the clip as well
    assert torch.allclose(far, ranker(f, admissible))


def test_ranker_features_of_the_mixture_stage_describe_the_mixtures_partitions():
    from model.k_features import candidate_mixtures, ranker_features
    from model.selection import select_k

    X, _ = make_blobs(n_samples=200, centers=3, random_state=1)
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(5), size=(4, 200))  # (K_max-1, N, K_max) for K_max = 5
    for c in range(4):  # the partition at K has K clusters
        probs[c, :, c + 2:] = 0.0
    posterior = np.full(4, 0.25)
    members = (probs[None], posterior[None])
    candidates = probs.argmax(-1)
    lloyd, _ = ranker_features(X, candidates, probs, posterior, members, 5, with_mixture=False)
    _, scores = select_k(probs, posterior, k_hi=5, members=members, candidates=candidates)
    assert np.array_equal(lloyd, candidate_features(X, candidates, probs, posterior, scores, 5, with_mixture=False),
                          equal_nan=True)
    gmm, mixtures = ranker_features(X, candidates, probs, posterior, members, 5, stage="gmm", with_mixture=False)
    parts = candidates.copy()
    parts[:4] = np.stack([part for part, _ in candidate_mixtures(X, candidates, 5)])
    _, scores = select_k(probs, posterior, k_hi=5, members=members, candidates=parts)
    assert mixtures is not None and np.array_equal(
        gmm, candidate_features(X, parts, probs, posterior, scores, 5, with_mixture=False), equal_nan=True)
    with pytest.raises(ValueError, match="unknown candidate stage 'x'"):
        ranker_features(X, candidates, probs, posterior, members, 5, stage="x")


def test_estimator_ranks_the_candidates_its_ranker_was_fitted_on(tmp_path):
    """A ranker fitted on the mixtures' partitions is given their features; its best score is the chosen K."""
    from model.config import ModelConfig

    X, _ = make_blobs(n_samples=120, centers=3, n_features=5, random_state=0)  # wider than the BIC path's 4
    path = _ranked_checkpoint(tmp_path, candidates="gmm")
    net, _ = load_checkpoint(path)
    assert net.cfg.k_ranker_candidates == "gmm"
    est = TabClustPFN(checkpoint=path).fit(X)
    scores = np.array([est.k_scores_[k] for k in range(2, net.cfg.k_max + 1)])
    assert est.k_selection_ == "ranker" and est.n_clusters_ == int(np.argmax(scores)) + 2
    lloyd = TabClustPFN(checkpoint=_ranked_checkpoint(tmp_path)).fit(X)  # the same ranker weights, other features
    assert not np.allclose([lloyd.k_scores_[k] for k in range(2, net.cfg.k_max + 1)], scores)
    with pytest.raises(ValueError, match="unknown k_ranker_candidates 'em'"):
        ModelConfig(k_ranker_candidates="em")


def test_k_probabilities_keep_the_rankers_choice_and_give_nothing_to_inadmissible_k():
    scores = np.array([[1.0, 3.0, 2.0, -np.inf], [0.0, -1.0, -np.inf, -np.inf]])
    for temperature in (0.5, 2.0, 40.0):
        p = k_probabilities(scores, temperature)
        np.testing.assert_allclose(p.sum(1), 1.0)
        assert p.argmax(1).tolist() == [1, 0] and p[0, 3] == 0 and (p[1, 2:] == 0).all()
    flat, sharp = k_probabilities(scores, 40.0), k_probabilities(scores, 0.5)
    assert flat.max(1)[0] < sharp.max(1)[0]  # a higher temperature spreads the probability
    with pytest.raises(ValueError, match="temperature must be > 0"):
        k_probabilities(scores, 0.0)


def test_fit_temperature_recovers_the_temperature_the_labels_were_drawn_at():
    rng = np.random.default_rng(0)
    scores = rng.normal(scale=10.0, size=(4000, 9))
    p = k_probabilities(scores, 4.0)
    k_true = np.array([rng.choice(9, p=row) for row in p]) + 2
    assert fit_temperature(scores, k_true) == pytest.approx(4.0, rel=0.1)
    k_true[:10] = 1  # a labelled K outside the candidates is left out, not an error
    assert fit_temperature(scores, k_true) == pytest.approx(4.0, rel=0.1)
    with pytest.raises(ValueError, match="nothing to fit"):
        fit_temperature(scores[:3], np.array([1, 11, 1]))


def test_reliability_counts_the_top_choice_and_the_smallest_set_holding_the_level():
    probs = np.array([[0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.1, 0.1, 0.8]])
    r = reliability(probs, np.array([2, 3, 2]))  # right on the first only
    assert r["top_right"] == pytest.approx(1 / 3) and r["top_probability"] == pytest.approx(2.0 / 3)
    assert r["set_size"] == pytest.approx((2 + 2 + 1) / 3)  # {2, 3}, {2, 3}, {4}: 0.8 alone holds the level
    assert r["set_covered"] == pytest.approx(2 / 3)  # the third table's labelled K = 2 is outside {4}
    calibrated = reliability(np.tile([0.5, 0.5, 0.0], (4, 1)), np.array([2, 2, 2, 3]))
    assert calibrated["ece"] == pytest.approx(0.25)  # right on 3 of 4 at a probability of 0.5


def test_a_calibrated_rankers_probabilities_are_the_estimators_k_probabilities(tmp_path, tiny_checkpoint):
    X, _ = make_blobs(n_samples=120, centers=3, n_features=5, random_state=0)  # wider than the BIC path's 4
    path = _ranked_checkpoint(tmp_path)
    assert TabClustPFN(checkpoint=path).fit(X).k_probabilities_ is None  # not calibrated
    net, meta = load_checkpoint(path)
    calibrated = TabClustNet(dataclasses.replace(net.cfg, k_ranker_temperature=3.0))
    calibrated.load_state_dict(net.state_dict())
    save_checkpoint(tmp_path / "calibrated.pt", calibrated, meta)
    est = TabClustPFN(checkpoint=str(tmp_path / "calibrated.pt")).fit(X)
    scores = np.array([est.k_scores_[k] for k in range(2, net.cfg.k_max + 1)])
    probs = np.array([est.k_probabilities_[k] for k in range(2, net.cfg.k_max + 1)])
    np.testing.assert_allclose(probs, k_probabilities(scores, 3.0))
    assert int(np.argmax(probs)) + 2 == est.n_clusters_
    assert TabClustPFN(checkpoint=str(tmp_path / "calibrated.pt"), n_clusters=3).fit(X).k_probabilities_ is None
    assert TabClustPFN(checkpoint=tiny_checkpoint).fit(X).k_probabilities_ is None  # no ranker


def test_distinct_fraction_is_one_for_measurements_and_lower_for_rounded_or_level_columns():
    rng = np.random.default_rng(0)
    measured = rng.normal(size=(200, 3))
    assert distinct_fraction(measured, np.zeros(3, bool)) == 1.0
    rounded = np.c_[measured[:, :2], np.round(measured[:, 2])]  # one column of a few levels
    assert distinct_fraction(rounded, np.zeros(3, bool)) == pytest.approx((2 + len(np.unique(rounded[:, 2])) / 200) / 3)
    assert distinct_fraction(rounded, np.array([False, False, True])) == 1.0  # categorical columns do not count
    assert distinct_fraction(np.zeros((10, 2)), np.ones(2, bool)) == 1.0  # no continuous column
    assert table_temperature(20.0, 2.0, 1.0) == 20.0 and table_temperature(20.0, 2.0, 0.5) == pytest.approx(
        20.0 * np.exp(1.0))


@pytest.mark.parametrize("slope", [0.0, 2.5])
def test_fit_temperature_slope_recovers_the_slope_the_labels_were_drawn_at(slope):
    rng = np.random.default_rng(1)
    scores = rng.normal(scale=10.0, size=(4000, 9))
    distinct = rng.uniform(0.1, 1.0, 4000)
    p = np.stack([k_probabilities(s, table_temperature(4.0, slope, d)) for s, d in zip(scores, distinct)])
    k_true = np.array([rng.choice(9, p=row) for row in p]) + 2
    assert fit_temperature_slope(scores, k_true, distinct, 4.0) == pytest.approx(slope, abs=0.25)


def test_the_estimators_k_probabilities_take_the_tables_temperature(tmp_path):
    """A rounded table gets flatter probabilities than a table of measurements, at the temperature its fraction of
    distinct values gives (the shipped checkpoint's slope, here doubled to make the difference plain)."""
    from model.estimator import default_checkpoint_path

    net, meta = load_checkpoint(default_checkpoint_path())
    assert net.cfg.k_ranker_temperature > 0 and net.cfg.k_ranker_temperature_slope > 0  # the shipped ranker's
    steep = TabClustNet(dataclasses.replace(net.cfg, k_ranker_temperature_slope=5.0))
    steep.load_state_dict(net.state_dict())
    save_checkpoint(tmp_path / "steep.pt", steep, meta)
    X, _ = make_blobs(n_samples=300, centers=3, n_features=5, cluster_std=0.6, random_state=2)
    tables = {"measured": X, "rounded": np.round(X)}
    for name, table in tables.items():
        est = TabClustPFN(checkpoint=str(tmp_path / "steep.pt"), random_state=0).fit(table)
        Z, cat = est.preprocessor_.transform(table)
        temperature = table_temperature(net.cfg.k_ranker_temperature, 5.0, distinct_fraction(Z, cat))
        scores = np.array([est.k_scores_[k] for k in range(2, net.cfg.k_max + 1)])
        probs = np.array([est.k_probabilities_[k] for k in range(2, net.cfg.k_max + 1)])
        np.testing.assert_allclose(probs, k_probabilities(scores, temperature))
        tables[name] = probs.max()
    assert tables["rounded"] < tables["measured"]


def test_a_network_without_its_ranker_drops_the_rankers_calibration_so_continuations_average(tmp_path):
    """Two networks that differ only in the calibration of rankers they no longer carry are the same kind of
    network: averaging the shipped weights with a run continued from an older calibration of them works."""
    from model.estimator import default_checkpoint_path

    net, meta = load_checkpoint(default_checkpoint_path())
    plain = net.without_k_ranker()
    assert not plain.cfg.k_ranker and plain.cfg.k_ranker_temperature == 0 == plain.cfg.k_ranker_temperature_slope
    older = TabClustNet(dataclasses.replace(net.cfg, k_ranker=False, k_ranker_temperature=5.0))
    older.load_state_dict(plain.state_dict())
    save_checkpoint(tmp_path / "older.pt", older, meta)
    averaged = average_checkpoints([str(default_checkpoint_path()), str(tmp_path / "older.pt")])[0]
    assert averaged.cfg == plain.cfg
