"""Tables of categories only (model/latent_class.py): latent class models run to convergence, K by BIC."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from model.latent_class import CategoricalMixture, choose, latent_class_em, n_parameters
from model.refinement import design, one_hot_blocks, one_hot_widths


def _latent_classes(seed: int = 0, k: int = 3, n: int = 600, d: int = 8, levels: int = 3
                    ) -> tuple[np.ndarray, list[tuple[int, int]], np.ndarray]:
    """One-hot rows of ``d`` categorical columns drawn from ``k`` latent classes whose level probabilities differ
    clearly (each class favours its own level of every column), their blocks and the classes."""
    rng = np.random.default_rng(seed)  # the classes' level probabilities first: the same for any n
    probs = np.full((d, k, levels), 0.15 / (levels - 1))
    for j in range(d):
        probs[j, np.arange(k), rng.permutation(levels)[:k] if k <= levels else rng.integers(0, levels, k)] = 0.85
    rows = np.random.default_rng([seed, n])
    y = rows.permutation(np.arange(n) % k)
    codes = np.array([[rows.choice(levels, p=probs[j, c]) for j in range(d)] for c in y], float)
    cat_mask = np.ones(d, bool)
    widths = one_hot_widths(codes, cat_mask)
    return design(codes, cat_mask, widths), one_hot_blocks(cat_mask, widths), y


def test_the_parameter_count_is_a_latent_class_models():
    assert n_parameters(1, np.array([3, 2])) == 3  # level probabilities only: 2 + 1
    assert n_parameters(2, np.array([3, 2])) == 1 + 2 * 3
    assert n_parameters(4, np.array([2, 2, 5])) == 3 + 4 * 6


def test_level_probabilities_sum_to_one_per_column_and_the_likelihood_is_the_product_of_them():
    X, blocks, y = _latent_classes(seed=1)
    _, model, ll = latent_class_em(X, y, 3, blocks)
    for start, stop in blocks:
        np.testing.assert_allclose(model.means[:, start:stop].sum(1), 1.0)
    assert np.all(model.means > 0)  # the pseudo-count: a level no row of a class shows stays possible
    # one row's log-likelihood by hand: the mixture over classes of the product of its levels' probabilities
    row = X[0]
    by_class = np.exp(model.log_weights) * np.prod(np.where(row > 0, model.means, 1.0), axis=1)
    np.testing.assert_allclose(model.posterior(X[:1])[0][0], by_class / by_class.sum(), rtol=1e-9)
    total = sum(np.log((np.exp(model.log_weights) * np.prod(np.where(r > 0, model.means, 1.0), axis=1)).sum())
                for r in X)
    assert ll == pytest.approx(total, rel=1e-9)


def test_em_recovers_planted_classes_from_a_poor_start_and_raises_the_likelihood():
    X, blocks, y = _latent_classes(seed=2)
    rng = np.random.default_rng(0)
    start = np.where(rng.random(len(y)) < 0.4, rng.integers(0, 3, len(y)), y)  # 40 % of the rows scrambled
    labels, _, ll = latent_class_em(X, start, 3, blocks)
    _, _, one_step = latent_class_em(X, start, 3, blocks, max_steps=1)
    assert ll > one_step
    assert adjusted_rand_score(y, labels) > 0.95


def test_bic_chooses_the_number_of_latent_classes_and_its_probabilities_say_so():
    X, blocks, y = _latent_classes(seed=3, k=3)
    rng = np.random.default_rng(1)
    starts = {k: [rng.integers(0, k, len(y)), rng.integers(0, k, len(y))] for k in range(2, 7)}
    choice = choose(X, blocks, starts)
    assert choice.k == 3 and adjusted_rand_score(y, choice.labels) > 0.95
    assert list(choice.ks) == [2, 3, 4, 5, 6] and int(np.argmin(choice.bic)) == 1
    assert choice.probabilities.argmax() == 1 and choice.probabilities.sum() == pytest.approx(1.0)
    assert set(choice.mixtures) == {2, 3, 4, 5, 6} and isinstance(choice.mixture, CategoricalMixture)
    # new rows go where the model says: rows drawn as the table's are assigned their class
    X_new, _, y_new = _latent_classes(seed=3, k=3, n=90)  # the same classes (same seed), fewer rows
    assert adjusted_rand_score(y_new, choice.mixture.labels(X_new)) > 0.9


def test_one_class_of_rows_is_not_split_by_bic():
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 3, size=(500, 6)).astype(float)  # independent columns: one latent class
    cat_mask = np.ones(6, bool)
    widths = one_hot_widths(codes, cat_mask)
    X, blocks = design(codes, cat_mask, widths), one_hot_blocks(cat_mask, widths)
    starts = {k: [rng.integers(0, k, len(X))] for k in range(2, 6)}
    assert choose(X, blocks, starts).k == 2  # the fewest it may answer: more classes are not worth their parameters


def test_bad_input_is_refused_with_what_to_do():
    X, blocks, y = _latent_classes(seed=5, n=60)
    with pytest.raises(ValueError, match="cover every one"):
        latent_class_em(X, y, 3, blocks[:-1])
    with pytest.raises(ValueError, match="labels must be"):
        latent_class_em(X, y + 1, 3, blocks)
    with pytest.raises(ValueError, match="at least one K"):
        choose(X, blocks, {})


def test_aic3_charges_three_per_parameter_so_it_never_chooses_fewer_classes_than_bic():
    X, blocks, y = _latent_classes(seed=6, k=3, n=400)
    rng = np.random.default_rng(2)
    starts = {k: [rng.integers(0, k, len(y))] for k in range(2, 7)}
    bic, aic3 = choose(X, blocks, starts), choose(X, blocks, starts, criterion="aic3")
    widths = np.array([stop - start for start, stop in blocks])
    params = np.array([n_parameters(k, widths) for k in range(2, 7)])
    # the same converged models (same starts), only the penalty differs: log N per parameter against 3
    np.testing.assert_allclose(aic3.bic - bic.bic, params * (3.0 - np.log(len(y))))
    assert aic3.k >= bic.k and aic3.k == 3
    with pytest.raises(ValueError, match="criterion must be one of"):
        choose(X, blocks, starts, criterion="icl")
