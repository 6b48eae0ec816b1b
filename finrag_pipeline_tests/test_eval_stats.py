"""Bootstrap CIs and paired comparisons on hand-made data."""

from __future__ import annotations

import numpy as np
import pytest

from finrag_pipeline.core.evaluation.stats import bootstrap_ci, paired_comparison


def test_bootstrap_is_seeded_and_brackets_the_mean():
    vals = [0, 1, 1, 0, 1, 1, 1, 0, 1, 1]
    a = bootstrap_ci(vals, n_boot=500, seed=3)
    b = bootstrap_ci(vals, n_boot=500, seed=3)
    assert a == b
    assert a.mean == pytest.approx(0.7)
    assert a.ci_low < 0.7 < a.ci_high
    assert a.ci_low >= 0.3 and a.ci_high <= 1.0


def test_bootstrap_missing_values_lower_coverage_not_the_mean():
    ci = bootstrap_ci([1.0, None, 0.0, float("nan")], n_boot=200)
    assert ci.mean == 0.5 and ci.n_total == 4 and ci.n_scored == 2 and ci.coverage == 0.5


def test_bootstrap_degenerate_cases():
    assert bootstrap_ci([]).mean is None and bootstrap_ci([]).coverage is None
    one = bootstrap_ci([0.4])
    assert (one.mean, one.ci_low, one.ci_high) == (0.4, 0.4, 0.4)
    const = bootstrap_ci([1.0] * 20)
    assert (const.ci_low, const.ci_high) == (1.0, 1.0)


def test_ci_narrows_with_more_data():
    rng = np.random.default_rng(0)
    small = bootstrap_ci(rng.integers(0, 2, 20).tolist(), n_boot=1000)
    large = bootstrap_ci(rng.integers(0, 2, 2000).tolist(), n_boot=1000)
    assert (large.ci_high - large.ci_low) < (small.ci_high - small.ci_low)


def test_identical_configs_are_indistinguishable():
    a = [0.0, 1.0, 0.5, 1.0, 0.0]
    res = paired_comparison(a, list(a), n_boot=200, n_perm=500)
    assert res.mean_diff == 0 and res.p_value == 1.0 and res.ci_low == res.ci_high == 0 and res.n_pairs == 5


def test_known_shift_is_detected():
    rng = np.random.default_rng(1)
    a = rng.uniform(0, 0.5, 60)
    b = a + 0.2 + rng.normal(0, 0.02, 60)
    res = paired_comparison(a.tolist(), b.tolist(), n_boot=1000, n_perm=2000, seed=0)
    assert res.mean_diff == pytest.approx(0.2, abs=0.01)
    assert res.ci_low > 0.17 and res.ci_high < 0.23
    assert res.p_value == pytest.approx(1 / 2001)  # no sign flip beats the observed shift


def test_symmetric_noise_is_not_significant():
    # b beats a on half the questions and loses by the same amount on the other half
    a = [0.5] * 20
    b = [0.6, 0.4] * 10
    res = paired_comparison(a, b, n_boot=500, n_perm=2000)
    assert res.mean_diff == pytest.approx(0.0, abs=1e-12)
    assert res.p_value > 0.9
    assert res.ci_low < 0 < res.ci_high or res.ci_low == res.ci_high == 0


def test_paired_drops_pairs_with_a_missing_side():
    res = paired_comparison([1, None, 0], [1, 1, None], n_boot=100, n_perm=100)
    assert res.n_pairs == 1 and res.mean_diff == 0
    with pytest.raises(ValueError):
        paired_comparison([1], [1, 2])


@pytest.mark.parametrize("d", [
    [0.5, 0.2, -0.1, 0.3],            # exact p = 4/16
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],   # only the all-plus and all-minus flips reach |mean| = 1: 2/64
    [0.3, -0.3, 0.1, 0.0, 0.2],       # a zero difference flips to itself
])
def test_sign_flip_p_value_matches_exact_enumeration(d):
    import itertools

    observed = abs(np.mean(d))
    flips = list(itertools.product([-1.0, 1.0], repeat=len(d)))
    exact = sum(abs(np.mean(np.array(s) * d)) >= observed - 1e-12 for s in flips) / len(flips)
    res = paired_comparison([0.0] * len(d), d, n_boot=200, n_perm=40_000, seed=1)
    assert res.p_value == pytest.approx(exact, abs=0.01)



@pytest.mark.parametrize("n", [1, 7, 8, 9, 50, 385])
@pytest.mark.parametrize("kind", ["ties", "thirds", "normal"])
def test_sign_flip_counts_equal_unpacked_signs_from_the_same_bytes(n, kind):
    """The byte-table sum (stats._sign_flip_extremes) against signs unpacked one by one from the same
    random bytes (1,200 flips: one block): the same count of |mean| >= observed, exact ties included."""
    from finrag_pipeline.core.evaluation.stats import _sign_flip_extremes

    r = np.random.default_rng(n)
    d = {"ties": r.integers(-1, 2, n).astype(float), "thirds": r.integers(-3, 4, n) / 3.0,
         "normal": r.normal(size=n)}[kind]
    observed = abs(float(d.mean()))
    random_bytes = np.random.default_rng(0).integers(0, 256, size=(1200, (n + 7) // 8), dtype=np.uint8)
    signs = 2.0 * np.unpackbits(random_bytes, axis=1, count=n) - 1.0
    expected = int(np.sum(np.abs((signs * d).sum(axis=1) / n) >= observed - 1e-12))
    assert 0 < expected <= 1200
    assert _sign_flip_extremes(d, observed, 1200, np.random.default_rng(0)) == expected
