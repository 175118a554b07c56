"""priors.overlap and its numerical core: exact misclassification probabilities of Gaussian mixture pairs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, stats

from priors._quadform import quad_form_cdf
from priors.overlap import max_overlap, pair_forms, pairwise_overlap

# vendored copy of ../shared/benchmarks/mixsim/mixsim_reference.json (R MixSim 1.1-8), see data/MIXSIM_README.md
REFERENCE = Path(__file__).resolve().parent / "data" / "mixsim_reference.json"


@pytest.fixture(scope="module")
def reference() -> dict:
    return json.loads(REFERENCE.read_text())


def _normal_closed_form(pi_i, pi_j, delta):
    """o_{j|i} for equal covariances: Phi(-Delta / 2 + log(pi_j / pi_i) / Delta)."""
    return stats.norm.cdf(-delta / 2.0 + np.log(pi_j / pi_i) / delta)


def _spherical_truth(pi, mu, var, i, j):
    """o_{j|i} for S_k = var_k I from first principles (noncentral chi-square or normal), independent of priors."""
    d = mu.shape[1]
    diff = mu[i] - mu[j]
    if var[i] == var[j]:
        return _normal_closed_form(pi[i], pi[j], np.linalg.norm(diff) / np.sqrt(var[i]))
    # x = mu_i + sqrt(v_i) z is assigned to j iff lam |z + delta|^2 - |z|^2 < c, lam = v_i / v_j
    lam = var[i] / var[j]
    delta = diff / np.sqrt(var[i])
    c = 2 * np.log(pi[j] / pi[i]) + d * np.log(var[i] / var[j])
    # lam |z + delta|^2 - |z|^2 = (lam - 1) |z + lam delta / (lam - 1)|^2 - lam |delta|^2 / (lam - 1)
    ncp = np.sum((lam * delta / (lam - 1)) ** 2)
    bound = (c + lam * np.sum(delta**2) / (lam - 1)) / (lam - 1)
    chi = stats.ncx2(d, ncp)
    return chi.cdf(bound) if lam > 1 else chi.sf(bound)


def test_overlap_cases_reproduce_mixsim_to_its_accuracy(reference):
    """MixSim's Davies routine is accurate to about 1e-6 absolute (eps = 1e-6): allow 2e-6."""
    for case in reference["overlap_cases"]:
        expected = np.array(case["OmegaMap"], dtype=float)
        np.fill_diagonal(expected, 0.0)  # MixSim stores 1 on the diagonal; ours is 0
        got = pairwise_overlap(case["Pi"], case["Mu"], case["S"])
        assert got.shape == expected.shape
        assert np.allclose(got, expected, atol=2e-6, rtol=0.0), f"case {case['id']}: {np.abs(got - expected).max()}"
        assert np.all(np.diagonal(got) == 0.0)
        assert max_overlap(got)[0] == pytest.approx(case["MaxOmega"], abs=4e-6)


def test_equal_covariances_match_the_normal_closed_form():
    rng = np.random.default_rng(3)
    for k, d in [(2, 2), (4, 7), (6, 30)]:
        pi = rng.dirichlet(np.full(k, 2.0))
        mu = rng.uniform(-1, 1, size=(k, d))
        a = rng.standard_normal((d, d))
        cov = 0.05 * (a @ a.T / d + np.eye(d))
        got = pairwise_overlap(pi, mu, np.repeat(cov[None], k, axis=0))
        prec = np.linalg.inv(cov)
        for i in range(k):
            for j in range(k):
                if i != j:
                    delta = np.sqrt((mu[i] - mu[j]) @ prec @ (mu[i] - mu[j]))
                    assert got[i, j] == pytest.approx(_normal_closed_form(pi[i], pi[j], delta), abs=1e-9)


def test_quirk_q1_q2_give_the_true_values_not_mixsims(reference):
    quirks = {q["id"]: q for q in reference["quirk_cases"]}
    for name in ("Q1", "Q2"):
        q = quirks[name]
        pi, mu, cov = np.array(q["Pi"]), np.array(q["Mu"], float), np.array(q["S"], float)
        got = pairwise_overlap(pi, mu, cov)
        var = cov[:, 0, 0]
        truth = np.array([[_spherical_truth(pi, mu, var, i, j) if i != j else 0.0 for j in range(3)] for i in range(3)])
        assert np.allclose(got, truth, atol=1e-8), name
        assert np.all(got >= 0.0)  # MixSim returns -1 for the equal-covariance pair of Q2
    # MixSim's Q1 entries that involve the third component are wrong (normal formula applied to all pairs)
    stored = np.array(quirks["Q1"]["OmegaMap"])
    got_q1 = pairwise_overlap(quirks["Q1"]["Pi"], quirks["Q1"]["Mu"], quirks["Q1"]["S"])
    assert abs(got_q1[2, 0] - stored[2, 0]) > 0.05


def test_quirk_q3_extreme_separation_gives_zero(reference):
    q = {q["id"]: q for q in reference["quirk_cases"]}["Q3"]
    got = pairwise_overlap(q["Pi"], q["Mu"], q["S"])
    assert np.all(got <= 1e-12)  # MixSim's Davies routine returned 1 for two entries


def test_partially_equal_eigenvalues_use_a_normal_term():
    """The case that hangs MixSim: S_1 = I, S_2 = diag(2, 1), mean difference along the lambda = 1 axis."""
    pi = np.array([0.45, 0.55])
    mu = np.array([[0.0, 0.0], [0.7, 1.1]])
    cov = np.array([np.eye(2), np.diag([2.0, 1.0])])
    got = pairwise_overlap(pi, mu, cov)
    for i, j in [(0, 1), (1, 0)]:
        # o_{j|i} = E_{x1}[ P_{x2}(assigned to j | x1) ]: the condition is linear in x2 (equal variances there)
        ci, cj = np.diag(cov[i]), np.diag(cov[j])

        def inner(x1, i=i, j=j, ci=ci, cj=cj):
            # log pi_j N_j - log pi_i N_i = q(x1) + 0.5 ((x2 - m_i)^2 - (x2 - m_j)^2) > 0, equal x2 variances (1)
            q = (
                np.log(pi[j] / pi[i])
                - 0.5 * np.log(cj[0] / ci[0])
                - 0.5 * (x1 - mu[j, 0]) ** 2 / cj[0]
                + 0.5 * (x1 - mu[i, 0]) ** 2 / ci[0]
            )
            slope, const = mu[j, 1] - mu[i, 1], q + 0.5 * (mu[i, 1] ** 2 - mu[j, 1] ** 2)
            # slope * x2 + const > 0 with x2 ~ N(mu_i2, 1)
            return stats.norm.sf((-const / slope - mu[i, 1]) * np.sign(slope))

        truth, _ = integrate.quad(
            lambda x1: inner(x1) * stats.norm.pdf(x1, mu[i, 0], np.sqrt(ci[0])), -np.inf, np.inf, epsabs=1e-12
        )
        assert got[i, j] == pytest.approx(truth, abs=1e-8)


@pytest.mark.parametrize("d", [1, 2, 3, 5, 12, 64])
@pytest.mark.parametrize("a", [0.3, 2.0, -0.7])
def test_quad_form_matches_noncentral_chi_square(d, a):
    """a * chi2_d(ncp) written as a sum of squares with one linear term; includes slowly decaying (small d) forms."""
    ncp = 1.7
    for x in (-3.0, 0.5, 4.0, 30.0):
        b2 = np.zeros(d)
        b2[0] = (2 * a * np.sqrt(ncp)) ** 2
        got = quad_form_cdf(np.full((1, d), a), b2[None], np.array([x - a * ncp]))[0]
        truth = stats.ncx2.cdf(x / a, d, ncp) if a > 0 else stats.ncx2.sf(x / a, d, ncp)
        assert got == pytest.approx(truth, abs=1e-9)


def test_grouped_terms_equal_expanded_terms():
    rng = np.random.default_rng(0)
    a = rng.normal(size=4)
    b2 = rng.uniform(0, 2, size=4)
    m = np.array([3, 1, 5, 2])
    x = 0.7
    grouped = quad_form_cdf(a[None], b2[None], np.array([x]), m[None])[0]
    expanded_a = np.repeat(a, m)
    expanded_b2 = np.concatenate([np.r_[b, np.zeros(k - 1)] for b, k in zip(b2, m)])
    assert grouped == pytest.approx(quad_form_cdf(expanded_a[None], expanded_b2[None], np.array([x]))[0], abs=1e-10)


def test_indefinite_two_term_forms_match_one_dimensional_integration():
    """P(a1 w1^2 + b1 w1 + a2 w2^2 + b2 w2 < x) by integrating the exact conditional probability over w1."""
    rng = np.random.default_rng(7)
    for scale_b in (1.0, 1.0, 1.0, 0.01, 0.01, 0.0):  # small linear terms: slowly decaying, near-central forms
        a = rng.normal(size=2)
        b = rng.normal(size=2) * scale_b
        x = rng.normal()

        def conditional(w1):
            c = x - a[0] * w1**2 - b[0] * w1  # need a2 w^2 + b2 w - c < 0
            disc = b[1] ** 2 + 4 * a[1] * c
            if disc <= 0 or (b[1] == 0 and c == 0):
                return 0.0 if a[1] > 0 else 1.0
            r1, r2 = sorted(((-b[1] - np.sqrt(disc)) / (2 * a[1]), (-b[1] + np.sqrt(disc)) / (2 * a[1])))
            inside = stats.norm.cdf(r2) - stats.norm.cdf(r1)
            return inside if a[1] > 0 else 1.0 - inside

        truth, _ = integrate.quad(lambda w: conditional(w) * stats.norm.pdf(w), -12, 12, epsabs=1e-12, limit=400)
        got = quad_form_cdf(a[None], (b**2)[None], np.array([x]))[0]
        assert got == pytest.approx(truth, abs=1e-8)


def test_pair_forms_rescale_like_the_covariances():
    """Overlaps at covariance scale c equal the overlaps of the mixture with covariances c * S."""
    rng = np.random.default_rng(1)
    k, d = 4, 6
    pi = rng.dirichlet(np.ones(k))
    mu = rng.uniform(-1, 1, size=(k, d))
    covs = []
    for _ in range(k):
        a = rng.standard_normal((d, d))
        covs.append(a @ a.T / d + 0.1 * np.eye(d))
    covs = np.array(covs)
    forms = pair_forms(pi, mu, covs)
    for c in (0.05, 0.7, 3.0):
        direct = pairwise_overlap(pi, mu, c * covs)
        assert np.allclose(forms.to_matrix(forms.overlaps(c)), direct, atol=1e-9)


def test_bad_inputs_are_rejected_with_a_clear_message():
    with pytest.raises(ValueError, match="weights"):
        pairwise_overlap([1.0], [[0.0]], [[[1.0]]])
    with pytest.raises(ValueError, match="means must have shape"):
        pairwise_overlap([0.5, 0.5], [[0.0, 0.0]], np.stack([np.eye(2)] * 2))
    with pytest.raises(ValueError, match="symmetric"):
        pairwise_overlap([0.5, 0.5], [[0.0, 0.0], [1.0, 0.0]], np.array([[[1.0, 0.5], [0.0, 1.0]], np.eye(2)]))
    with pytest.raises(np.linalg.LinAlgError, match=r"components \[0\] are not positive definite"):
        pairwise_overlap([0.5, 0.5], [[0.0, 0.0], [1.0, 0.0]], np.array([-np.eye(2), np.eye(2)]))



def _gauss_quadratic_above(coef2: float, coef1: float, const: float, mean: float, sd: float) -> float:
    """P(coef2 x^2 + coef1 x + const > 0) for x ~ N(mean, sd^2), from the roots of the quadratic."""
    if coef2 == 0.0:
        return float(stats.norm.sf((-const / coef1 - mean) / sd * np.sign(coef1)))
    disc = coef1**2 - 4.0 * coef2 * const
    if disc <= 0.0:
        return 1.0 if coef2 > 0.0 else 0.0
    r1, r2 = sorted(((-coef1 - np.sqrt(disc)) / (2 * coef2), (-coef1 + np.sqrt(disc)) / (2 * coef2)))
    between = stats.norm.cdf((r2 - mean) / sd) - stats.norm.cdf((r1 - mean) / sd)
    return float(1.0 - between if coef2 > 0.0 else between)


def _diagonal_truth(pi, mu, var, i, j, outer):
    """o_{j|i} of a two-dimensional mixture with diagonal covariances, independent of priors.

    Under component i the coordinates are independent and the event log pi_j N_j - log pi_i N_i > 0 is a sum
    of one quadratic per coordinate: the coordinate ``outer`` is integrated numerically (split where the inner
    quadratic's discriminant changes sign), the other one exactly from its roots.
    """
    inner = 1 - outer
    base = np.log(pi[j] / pi[i]) - 0.5 * np.sum(np.log(var[j] / var[i]))
    c2 = 0.5 * (1.0 / var[i] - 1.0 / var[j])  # x^2 coefficient of each coordinate
    c1 = mu[j] / var[j] - mu[i] / var[i]
    c0 = 0.5 * (mu[i] ** 2 / var[i] - mu[j] ** 2 / var[j])

    def const(v):
        return base + c0[0] + c0[1] + c1[outer] * v + c2[outer] * v**2

    def given(v):
        return _gauss_quadratic_above(c2[inner], c1[inner], const(v), mu[i, inner], np.sqrt(var[i, inner]))

    sd = np.sqrt(var[i, outer])
    lo, hi = mu[i, outer] - 12 * sd, mu[i, outer] + 12 * sd
    # discriminant c1^2 - 4 c2 const(v) = 0: a quadratic in v
    quadratic = [-4 * c2[inner] * c2[outer], -4 * c2[inner] * c1[outer], c1[inner] ** 2 - 4 * c2[inner] * const(0.0)]
    roots = np.roots(quadratic)
    cuts = sorted(r.real for r in np.atleast_1d(roots) if abs(r.imag) < 1e-12 and lo < r.real < hi)
    edges = [lo, *cuts, hi]
    return sum(
        integrate.quad(lambda v: given(v) * stats.norm.pdf(v, mu[i, outer], sd), a, b, epsabs=1e-14, limit=200)[0]
        for a, b in zip(edges[:-1], edges[1:])
    )


@pytest.mark.parametrize("eps", [1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11])
def test_nearly_shared_eigenvalue_is_exact(eps):
    """S_1 = I, S_2 = diag(2, 1 + eps), mean difference along the first axis only: the nearly equal variances of
    the second axis give a quadratic form with one tiny, almost central term (slowly decaying, once 6% off)."""
    pi = np.array([0.45, 0.55])
    mu = np.array([[0.0, 0.0], [0.7, 0.0]])
    var = np.array([[1.0, 1.0], [2.0, 1.0 + eps]])  # diagonal covariances
    got = pairwise_overlap(pi, mu, np.array([np.diag(v) for v in var]))
    for i, j in [(0, 1), (1, 0)]:
        assert got[i, j] == pytest.approx(_diagonal_truth(pi, mu, var, i, j, outer=1), abs=1e-8), (i, j)


@pytest.mark.parametrize("small", [1e-6, 1e-8, 1e-10, 1e-14])
def test_nearly_singular_covariance_is_exact(small):
    """S_1 = diag(1, small), S_2 = I, means apart along the first axis: an exact normal term next to a huge
    curvature (a distribution 1e6+ times wider than its normal part; the node budget once cut it short)."""
    pi = np.array([0.5, 0.5])
    mu = np.array([[0.0, 0.0], [1.0, 0.0]])
    var = np.array([[1.0, small], [1.0, 1.0]])
    got = pairwise_overlap(pi, mu, np.array([np.diag(v) for v in var]))
    for i, j in [(0, 1), (1, 0)]:
        truth = _diagonal_truth(pi, mu, var, i, j, outer=0)
        assert got[i, j] == pytest.approx(truth, abs=1e-9, rel=1e-6), (i, j)

def test_nearly_central_forms_with_tiny_terms_are_exact():
    """P(w1^2 + eps w2^2 < x): conditioning on w2 gives a chi-square(1) probability, smooth in w2."""
    for eps in (1e-7, 1e-9, 1e-11):
        for x in (0.05, 0.5, 3.0):
            got = quad_form_cdf(np.array([[1.0, eps]]), np.zeros((1, 2)), np.array([x]))[0]
            truth, _ = integrate.quad(
                lambda w: stats.chi2.cdf(max(x - eps * w * w, 0.0), 1) * stats.norm.pdf(w), -12, 12, epsabs=1e-13
            )
            assert got == pytest.approx(truth, abs=1e-8), (eps, x)
