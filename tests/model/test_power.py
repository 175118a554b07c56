"""model/power.py: the Yeo-Johnson transform and its maximum-likelihood exponent, against scipy's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import skew, yeojohnson

from model.power import fit_lambda, transform, yeo_johnson

KINDS = ["normal", "lognormal", "negative-lognormal", "two-groups", "t3", "uniform", "zeros"]


def _column(kind: str) -> np.ndarray:
    rng = np.random.default_rng(5)
    x = {"normal": rng.normal(size=500), "lognormal": rng.lognormal(size=300),
         "negative-lognormal": -rng.lognormal(size=300),
         "two-groups": np.r_[rng.normal(size=400), 6 + rng.normal(size=100)],
         "t3": rng.standard_t(3, size=300), "uniform": rng.uniform(size=200), "zeros": np.zeros(50)}[kind]
    return (x - x.mean()) / max(x.std(), 1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_yeo_johnson_equals_scipys(kind):
    """The transform at the fitted exponent (the logarithms computed once) is scipy's, bit for bit."""
    x = _column(kind)
    np.testing.assert_array_equal(yeo_johnson(x), yeojohnson(x)[0])


@pytest.mark.parametrize("kind", KINDS[:-1])
def test_fit_lambda_is_scipys_exponent_and_transform_applies_it_to_new_values(kind):
    x = _column(kind)
    lam = fit_lambda(x)
    assert lam == yeojohnson(x)[1]
    new = np.linspace(-4.0, 4.0, 9)  # values the fit never saw: the same function
    np.testing.assert_allclose(transform(new, lam), yeojohnson(new, lmbda=lam), rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(transform(new, lam)) > 0)  # monotone: the order of the rows is kept


def test_a_long_right_tail_is_pulled_in_and_a_symmetric_column_left_nearly_alone():
    rng = np.random.default_rng(0)
    tail = rng.lognormal(sigma=1.0, size=2000)
    z = (tail - tail.mean()) / tail.std()
    assert skew(z) > 3 and abs(skew(yeo_johnson(z))) < 0.3
    gauss = rng.normal(size=2000)
    assert abs(fit_lambda(gauss) - 1.0) < 0.1  # lambda = 1 is the identity
    np.testing.assert_allclose(transform(gauss, 1.0), gauss, rtol=1e-12, atol=1e-12)


def test_non_finite_input_is_refused():
    with pytest.raises(ValueError, match="finite"):
        fit_lambda(np.array([0.0, 1.0, np.inf]))
