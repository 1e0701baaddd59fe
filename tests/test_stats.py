"""rankbridge.metrics.stats against scipy.stats on the same per-query values.

How close each comparison is, and why:

* Bootstrap intervals: with the same ``np.random.default_rng(seed)`` and the same batch size, scipy
  draws *the same resampling indices* as we do (``rng.integers(0, n, (batch, n))``), so the intervals
  agree to rounding (rtol 1e-9). One caveat, handled on purpose: a resample whose mean equals the
  observed mean in exact arithmetic (frequent with lumpy metric values) can land one ulp either side
  of it depending on summation order; BCa's bias correction counts such resamples, and we count them as
  ties where scipy lets the rounding decide. The parity tests therefore use values on a 1/256 grid
  (still lumpy, but every mean is exact in floating point); on other values BCa bounds may differ from
  scipy's by a few bootstrap order statistics. A further test compares intervals from *different*
  seeds, which can only agree up to Monte Carlo error.
* Permutation test: exact enumeration (2**n <= n_resamples) is deterministic and must agree to 1e-12.
  Monte Carlo p-values use different random flips than scipy, so they are compared within 5 binomial
  standard errors.
* t-test, t interval, Wilcoxon (exact and normal approximation): deterministic, rtol 1e-9.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np
import pytest

from rankbridge.errors import InputError
from rankbridge.metrics import stats
from rankbridge.metrics.stats import (
    Interval,
    bootstrap_ci,
    confidence_interval,
    confidence_intervals,
    holm,
    paired_difference_ci,
    paired_effect_size,
    paired_power,
    paired_t_test,
    paired_test,
    permutation_test,
    permutation_tests,
    queries_needed,
    sample_size_warning,
    t_ci,
    wilcoxon_test,
)

scipy_stats = pytest.importorskip("scipy.stats")


def _rng_kwargs(func: Any, seed: int) -> dict[str, Any]:
    """scipy >= 1.15 takes ``rng=``; older releases ``random_state=`` (same Generator either way)."""
    name = "rng" if "rng" in inspect.signature(func).parameters else "random_state"
    return {name: np.random.default_rng(seed)}


def _metric_like(rng: np.random.Generator, n: int) -> np.ndarray:
    """Values shaped like a ranking metric: a lump at 0, a lump at 1, and some in between."""
    kind = rng.random(n)
    return np.where(kind < 0.3, 0.0, np.where(kind < 0.55, 1.0, np.round(rng.random(n) * 256) / 256))


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(x - y, axis=axis)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------------
# bootstrap
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize(("n", "seed"), [(12, 0), (40, 1), (150, 7)])
def test_bootstrap_matches_scipy_with_same_resamples(method: str, n: int, seed: int) -> None:
    x = _metric_like(np.random.default_rng(100 + n), n)
    ours = bootstrap_ci(x, method=method, n_resamples=3000, seed=seed)  # type: ignore[arg-type]
    ref = scipy_stats.bootstrap(
        (x,),
        np.mean,
        method=method,
        n_resamples=3000,
        confidence_level=0.95,
        **_rng_kwargs(scipy_stats.bootstrap, seed),
    ).confidence_interval
    assert ours.method == method
    assert ours.low == pytest.approx(ref.low, rel=1e-9, abs=1e-12)
    assert ours.high == pytest.approx(ref.high, rel=1e-9, abs=1e-12)
    assert ours.estimate == pytest.approx(x.mean())


def test_bootstrap_blocks_match_scipy_batches() -> None:
    # n large enough that the resamples are drawn in several blocks: scipy with batch=<block> agrees.
    n, b = 3000, 1000
    block = stats._BLOCK_CELLS // n
    assert block < b
    x = _metric_like(np.random.default_rng(5), n)
    for method in ("percentile", "bca"):
        ours = bootstrap_ci(x, method=method, n_resamples=b, seed=3)  # type: ignore[arg-type]
        ref = scipy_stats.bootstrap(
            (x,), np.mean, method=method, n_resamples=b, batch=block, **_rng_kwargs(scipy_stats.bootstrap, 3)
        ).confidence_interval
        assert ours.low == pytest.approx(ref.low, rel=1e-9)
        assert ours.high == pytest.approx(ref.high, rel=1e-9)


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_agrees_with_scipy_across_seeds_statistically(method: str) -> None:
    # Different seeds: only Monte Carlo agreement is possible. The spread of a bound over seeds, measured
    # on scipy itself, sets the tolerance (4 standard deviations of the difference of two bounds).
    x = _metric_like(np.random.default_rng(11), 60)
    ours = bootstrap_ci(x, method=method, n_resamples=4000, seed=0)  # type: ignore[arg-type]
    refs = [
        scipy_stats.bootstrap(
            (x,), np.mean, method=method, n_resamples=4000, **_rng_kwargs(scipy_stats.bootstrap, 1000 + s)
        ).confidence_interval
        for s in range(8)
    ]
    lows, highs = np.array([r.low for r in refs]), np.array([r.high for r in refs])
    for mine, theirs in ((ours.low, lows), (ours.high, highs)):
        tol = 4 * math.sqrt(2) * max(theirs.std(ddof=1), 1e-4)
        assert abs(mine - theirs.mean()) < tol


def test_bootstrap_is_reproducible_and_seeded() -> None:
    x = _metric_like(np.random.default_rng(2), 80)
    a = bootstrap_ci(x, seed=4, n_resamples=2000)
    assert bootstrap_ci(x, seed=4, n_resamples=2000) == a
    assert bootstrap_ci(x, seed=5, n_resamples=2000) != a


def test_batched_columns_equal_single_columns() -> None:
    rng = np.random.default_rng(9)
    m = np.column_stack([_metric_like(rng, 70) for _ in range(5)])
    for method in ("bca", "percentile", "t"):
        together = confidence_intervals(m, method=method, n_resamples=1500, seed=2)  # type: ignore[arg-type]
        for j, iv in enumerate(together):
            alone = confidence_interval(m[:, j], method=method, n_resamples=1500, seed=2)  # type: ignore[arg-type]
            assert iv.estimate == alone.estimate and iv.method == alone.method
            assert iv.low == pytest.approx(alone.low, rel=1e-12) and iv.high == pytest.approx(alone.high, rel=1e-12)


def test_degenerate_inputs() -> None:
    constant = confidence_interval([0.5] * 40, method="bca")
    assert (constant.low, constant.high) == (0.5, 0.5)
    one = confidence_interval([0.7])
    assert one.estimate == 0.7 and math.isnan(one.low) and math.isnan(one.high)
    assert Interval(0.7, math.nan, math.nan, 0.95, "t", 1).to_dict()["low"] is None
    # All values equal except one: BCa stays finite.
    skew = confidence_interval([0.0] * 39 + [1.0], method="bca")
    assert 0.0 <= skew.low <= skew.estimate <= skew.high <= 1.0


def test_auto_uses_t_for_few_queries_and_bca_for_many() -> None:
    assert confidence_interval(np.linspace(0, 1, stats.T_BELOW - 1)).method == "t"
    assert confidence_interval(np.linspace(0, 1, stats.T_BELOW)).method == "bca"


def test_bounds_clip_intervals() -> None:
    x = [1.0] * 9 + [0.0]
    assert confidence_interval(x, method="t").high > 1.0
    assert confidence_interval(x, method="t", bounds=(0, 1)).high == 1.0


# --------------------------------------------------------------------------------------------------
# t interval and t-test
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 8, 31, 500])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_t_interval_matches_scipy(n: int, level: float) -> None:
    x = np.random.default_rng(n).random(n)
    ours = t_ci(x, level=level)
    lo, hi = scipy_stats.t.interval(level, n - 1, loc=x.mean(), scale=scipy_stats.sem(x))
    assert ours.low == pytest.approx(lo, rel=1e-9, abs=1e-12)
    assert ours.high == pytest.approx(hi, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("df", [1, 2, 3, 7, 29, 300, 6999])
@pytest.mark.parametrize("p", [0.25, 0.025, 0.005, 1e-6])
def test_t_quantile_and_tail(df: int, p: float) -> None:
    assert stats._t_ppf_upper(p, float(df)) == pytest.approx(scipy_stats.t.isf(p, df), rel=1e-10)
    for t in (0.0, 0.3, 2.0, 15.0):
        assert stats._t_sf(t, float(df)) == pytest.approx(scipy_stats.t.sf(t, df), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize(("n", "shift"), [(5, 0.1), (30, 0.05), (200, 0.02), (60, 0.5)])
def test_paired_t_test_matches_ttest_rel(alternative: str, n: int, shift: float) -> None:
    rng = np.random.default_rng(n)
    a = _metric_like(rng, n)
    b = np.clip(a - shift + rng.normal(0, 0.2, n), 0, 1)
    ours = paired_t_test(a, b, alternative=alternative)  # type: ignore[arg-type]
    ref = scipy_stats.ttest_rel(a, b, alternative=alternative)
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-9)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    assert ours.n == n and ours.test == "t"


def test_paired_t_test_zero_and_constant_differences() -> None:
    same = paired_t_test([0.1, 0.5, 0.9], [0.1, 0.5, 0.9])
    assert (same.statistic, same.pvalue) == (0.0, 1.0)
    shifted = paired_t_test([0.5, 0.75, 1.0], [0.25, 0.5, 0.75])
    assert shifted.statistic == math.inf and shifted.pvalue == 0.0
    assert math.isnan(paired_t_test([0.5], [0.1]).pvalue)


# --------------------------------------------------------------------------------------------------
# permutation test
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [2, 4, 9, 13])
def test_exact_permutation_matches_scipy(alternative: str, n: int) -> None:
    rng = np.random.default_rng(n)
    a = _metric_like(rng, n)
    b = _metric_like(rng, n)
    b[: n // 3] = a[: n // 3]  # some zero differences, as ranking metrics have
    ours = permutation_test(a, b, alternative=alternative)  # type: ignore[arg-type]
    ref = scipy_stats.permutation_test(
        (a, b), _mean_diff, permutation_type="samples", vectorized=True, alternative=alternative, n_resamples=10_000
    )
    assert ours.method == "exact"
    assert ours.pvalue == pytest.approx(ref.pvalue, abs=1e-12)
    assert ours.statistic == pytest.approx(ref.statistic)


@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
@pytest.mark.parametrize("shift", [0.0, 0.05, 0.12])
def test_monte_carlo_permutation_agrees_with_scipy(alternative: str, shift: float) -> None:
    rng = np.random.default_rng(int(shift * 100))
    n = 50
    a = _metric_like(rng, n)
    b = np.clip(a - shift + rng.normal(0, 0.25, n), 0, 1)
    ours = permutation_test(a, b, n_resamples=9999, seed=1, alternative=alternative)  # type: ignore[arg-type]
    ref = scipy_stats.permutation_test(
        (a, b),
        _mean_diff,
        permutation_type="samples",
        vectorized=True,
        alternative=alternative,
        n_resamples=9999,
        **_rng_kwargs(scipy_stats.permutation_test, 2),
    )
    assert ours.method == "monte-carlo"
    p = max(ref.pvalue, 1e-3)
    se = math.sqrt(2 * p * (1 - min(p, 0.5)) / 9999) * (2 if alternative == "two-sided" else 1)
    assert abs(ours.pvalue - ref.pvalue) < 5 * se + 2e-4


def test_permutation_monte_carlo_converges_to_exact() -> None:
    rng = np.random.default_rng(3)
    a, b = _metric_like(rng, 16), _metric_like(rng, 16)
    exact = permutation_test(a, b, n_resamples=1 << 16)
    mc = permutation_test(a, b, n_resamples=20_000, seed=8)
    assert exact.method == "exact" and mc.method == "monte-carlo"
    assert abs(exact.pvalue - mc.pvalue) < 5 * math.sqrt(exact.pvalue * (1 - exact.pvalue) / 20_000) * 2 + 1e-3


def test_permutation_all_zero_differences_and_one_query_give_one() -> None:
    assert permutation_test([0.9], [0.1]).pvalue == 1.0  # 2 sign patterns: +0.8 and -0.8
    assert permutation_test([0.9], [0.1], alternative="greater").pvalue == 0.5
    x = np.linspace(0, 1, 40)
    assert permutation_test(x, x).pvalue == 1.0
    assert permutation_tests(np.zeros((40, 3)), n_resamples=500)[2].pvalue == 1.0


def test_permutation_is_reproducible_and_column_independent() -> None:
    rng = np.random.default_rng(4)
    d = rng.normal(0.02, 0.2, (60, 4))
    together = permutation_tests(d, n_resamples=3000, seed=6)
    alone = [permutation_tests(d[:, j], n_resamples=3000, seed=6)[0] for j in range(4)]
    assert together == alone
    assert permutation_tests(d, n_resamples=3000, seed=7) != together


# --------------------------------------------------------------------------------------------------
# Wilcoxon
# --------------------------------------------------------------------------------------------------


def _wilcoxon_data(n: int, seed: int, *, ties: bool, zeros: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = np.round(rng.random(n) * 256) / 256
    d = rng.normal(0.05, 0.2, n)
    if ties:  # on a 1/8 grid, so that a - (a - d) gives d back exactly and scipy sees the ties too
        d = np.round(d * 8) / 8
        d[d == 0] = 0.125
    d[:zeros] = 0.0
    return a, a - d


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [5, 20, 50])
def test_wilcoxon_exact_without_ties_matches_scipy(alternative: str, n: int) -> None:
    a, b = _wilcoxon_data(n, n, ties=False, zeros=0)
    ours = wilcoxon_test(a, b, alternative=alternative)  # type: ignore[arg-type]
    ref = scipy_stats.wilcoxon(a, b, alternative=alternative)
    assert ours.method == "exact"
    assert ours.statistic == ref.statistic
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
@pytest.mark.parametrize("alternative", ["two-sided", "greater"])
def test_wilcoxon_exact_with_ties_and_zeros_matches_scipy_permutation(zero_method: str, alternative: str) -> None:
    # scipy's "auto" computes the exact permutation distribution for n <= 13 with ties or zeros.
    a, b = _wilcoxon_data(12, 3, ties=True, zeros=3)
    ours = wilcoxon_test(a, b, zero_method=zero_method, alternative=alternative)  # type: ignore[arg-type]
    ref = scipy_stats.wilcoxon(a, b, zero_method=zero_method, alternative=alternative)
    assert ours.method == "exact"
    assert ours.statistic == pytest.approx(ref.statistic)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


def test_wilcoxon_exact_with_ties_beyond_scipy_auto_matches_full_enumeration() -> None:
    # 14 differences with ties: scipy's auto would use the normal approximation; its permutation method
    # with every one of the 2**14 sign patterns gives the exact p that we compute by convolution.
    a, b = _wilcoxon_data(14, 8, ties=True, zeros=0)
    ours = wilcoxon_test(a, b, method="exact")
    assert wilcoxon_test(a, b) == ours  # "auto" is exact up to 50 differences, ties or not
    ref = scipy_stats.wilcoxon(a, b, method=scipy_stats.PermutationMethod(n_resamples=1 << 14))
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
@pytest.mark.parametrize("correction", [False, True])
@pytest.mark.parametrize("alternative", ["two-sided", "less"])
def test_wilcoxon_asymptotic_matches_scipy(zero_method: str, correction: bool, alternative: str) -> None:
    a, b = _wilcoxon_data(80, 5, ties=True, zeros=9)
    ours = wilcoxon_test(
        a,
        b,
        zero_method=zero_method,  # type: ignore[arg-type]
        correction=correction,
        alternative=alternative,  # type: ignore[arg-type]
    )
    ref = scipy_stats.wilcoxon(a, b, zero_method=zero_method, correction=correction, alternative=alternative)
    assert ours.method == "asymptotic"
    assert ours.statistic == pytest.approx(ref.statistic)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


def test_wilcoxon_all_zero_differences_give_one() -> None:
    x = [0.1, 0.2, 0.3]
    r = wilcoxon_test(x, x)
    assert (r.pvalue, r.n) == (1.0, 0)


def test_wilcoxon_exact_refuses_huge_inputs() -> None:
    a, b = _wilcoxon_data(600, 1, ties=False, zeros=0)
    with pytest.raises(InputError, match="use method='asymptotic'"):
        wilcoxon_test(a, b, method="exact")


# --------------------------------------------------------------------------------------------------
# Holm, effect size, power
# --------------------------------------------------------------------------------------------------


def test_holm_by_hand() -> None:
    # sorted: 0.005 (x4) = 0.02, 0.01 (x3) = 0.03, 0.03 (x2) = 0.06, 0.04 (x1) -> max(0.04, 0.06) = 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]).tolist() == [1.0, 1.0]
    assert holm([]).tolist() == []
    out = holm([0.01, math.nan, 0.02])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)


def test_holm_properties() -> None:
    p = np.random.default_rng(0).random(25) ** 3
    adj = holm(p)
    assert (adj >= p).all() and (adj <= 1).all()
    order = np.argsort(p)
    assert (np.diff(adj[order]) >= 0).all()
    assert adj.min() == pytest.approx(min(1.0, p.min() * len(p)))
    with pytest.raises(InputError, match="between 0 and 1"):
        holm([0.5, 1.5])


def test_effect_size() -> None:
    a = np.array([0.9, 0.8, 0.7, 0.9])
    b = np.array([0.5, 0.7, 0.6, 0.6])
    d = a - b
    assert paired_effect_size(a, b) == pytest.approx(d.mean() / d.std(ddof=1))
    assert paired_effect_size(a, a) == 0.0
    assert paired_effect_size(a, a - 0.1) == math.inf
    assert math.isnan(paired_effect_size([1.0], [0.0]))


@pytest.mark.parametrize(("d", "n"), [(0.2, 50), (0.5, 20), (0.5, 40), (0.3, 120), (1.0, 10), (0.8, 8), (0.1, 800)])
def test_power_approximation_is_close_to_exact_t_power(d: float, n: int) -> None:
    # The exact power of the two-sided paired t-test uses the noncentral t; the shifted-normal
    # approximation we use as a heuristic is within 0.04 of it from 8 queries up.
    crit = scipy_stats.t.isf(0.025, n - 1)
    nc = d * math.sqrt(n)
    exact = scipy_stats.nct.sf(crit, n - 1, nc) + scipy_stats.nct.cdf(-crit, n - 1, nc)
    assert paired_power(d, n) == pytest.approx(exact, abs=0.04)


def test_queries_needed_reaches_the_power() -> None:
    for d in (0.1, 0.25, 0.5, 0.8):
        need = queries_needed(d)
        assert need is not None
        assert paired_power(d, need) >= 0.8 > paired_power(d, need - 1)
    assert queries_needed(0.0) is None


def test_sample_size_warning() -> None:
    assert sample_size_warning(3) is not None and "only 3 queries" in sample_size_warning(3)  # type: ignore[operator]
    assert sample_size_warning(1) == "only 1 query: too few for a reliable interval or test (fewer than 10)"
    assert sample_size_warning(100, 0.1) is not None
    assert sample_size_warning(100, 0.5) is None
    assert sample_size_warning(100, 0.0) is None
    assert sample_size_warning(100) is None


# --------------------------------------------------------------------------------------------------
# Validation and dispatch
# --------------------------------------------------------------------------------------------------


def test_validation_errors_say_what_was_expected() -> None:
    with pytest.raises(InputError, match=r"same length .* found 3 and 2"):
        permutation_test([0.1, 0.2, 0.3], [0.1, 0.2])
    with pytest.raises(InputError, match="finite numbers"):
        confidence_interval([0.1, math.nan])
    with pytest.raises(InputError, match=r"level must be .* Got 95"):
        confidence_interval([0.1, 0.2], level=95)
    with pytest.raises(InputError, match=r"method must be one of"):
        confidence_interval([0.1, 0.2], method="normal")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"n_resamples must be an int >= 1. Got 0"):
        permutation_test([0.1], [0.2], n_resamples=0)
    with pytest.raises(InputError, match="alternative must be one of"):
        paired_t_test([0.1, 0.2], [0.2, 0.1], alternative="both")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="test must be one of"):
        paired_test([0.1], [0.2], "sign")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="1-D array"):
        confidence_interval([[0.1, 0.2]])
    with pytest.raises(InputError, match="at least one query"):
        confidence_interval([])


def test_paired_test_dispatch_and_difference_ci() -> None:
    rng = np.random.default_rng(12)
    a, b = _metric_like(rng, 35), _metric_like(rng, 35)
    assert paired_test(a, b, "t") == paired_t_test(a, b)
    assert paired_test(a, b, "wilcoxon") == wilcoxon_test(a, b)
    assert paired_test(a, b, seed=3) == permutation_test(a, b, seed=3)
    iv = paired_difference_ci(a, b, seed=1)
    assert iv == confidence_interval(a - b, seed=1)
    assert iv.estimate == pytest.approx((a - b).mean())
    assert iv.to_dict()["method"] == "bca"
