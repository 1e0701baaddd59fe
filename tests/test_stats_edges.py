"""Edge cases of rankbridge.metrics.stats (issues 20.5 and 21.5), checked against scipy and by simulation.

* Wilcoxon: differences equal to within floating-point noise tie (and are zeros); without noise the
  result is scipy's.
* Intervals of a mean whose values all sit at a bound are Clopper-Pearson, with coverage (exact
  binomial expectation of the simulation for 0/1 metrics; a seeded simulation for graded ones).
* ``ci="auto"`` switches to the t interval at ``BCA_BELOW`` queries; its coverage there is checked.
* The permutation test's lazily generated, bit-packed flips give the p-values of the former
  implementation (kept below as ``_reference_permutation_pvalue``, the code as it was before the change),
  in bounded memory.
* The power figure is the noncentral t's, against ``scipy.stats.nct``.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

from rankbridge.metrics import stats
from rankbridge.metrics.stats import (
    confidence_interval,
    confidence_intervals,
    paired_power,
    permutation_test,
    permutation_tests,
    sample_size_warning,
    wilcoxon_test,
)

scipy_stats = pytest.importorskip("scipy.stats")


# --------------------------------------------------------------------------------------------------
# Wilcoxon: ties within floating-point noise
# --------------------------------------------------------------------------------------------------


def _grid_pairs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Values on a 1/8 grid: every difference is exact, ties and zeros are real ones."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 9, n) / 8
    b = np.clip(a - rng.integers(-2, 4, n) / 8, 0, 1)
    return a, b


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
@pytest.mark.parametrize(("n", "method"), [(12, "exact"), (90, "asymptotic")])
def test_wilcoxon_without_noise_is_scipys(zero_method: str, n: int, method: str) -> None:
    a, b = _grid_pairs(n, n)
    ours = wilcoxon_test(a, b, zero_method=zero_method)  # type: ignore[arg-type]
    ref = scipy_stats.wilcoxon(a, b, zero_method=zero_method)
    assert ours.method == method
    assert ours.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert ours.pvalue == pytest.approx(ref.pvalue, rel=1e-9)


def test_wilcoxon_ties_differences_equal_up_to_rounding() -> None:
    # Five queries improve by 1/5; on two of them the 1/5 comes out of a subtraction (0.6 - 0.4 is
    # 0.19999999999999996), on the others it is 0.2. Two lose 0.1 (0.3 - 0.2 = 0.09999999999999998), and
    # one difference is 0.1 + 0.2 - 0.3 = 5.6e-17, a zero in exact arithmetic.
    a = np.array([0.6, 0.9, 0.2, 0.2, 0.2, 0.2, 0.3, 0.1 + 0.2, 0.5, 0.7, 0.4, 0.8])
    b = np.array([0.4, 0.7, 0.0, 0.0, 0.0, 0.3, 0.4, 0.3, 0.1, 0.1, 0.9, 0.0])
    d = a - b
    assert len(np.unique(np.abs(d))) > len(np.unique(np.round(np.abs(d), 12)))  # the noise is there
    exact = np.round(d, 12)  # the same differences, without the noise
    ours = wilcoxon_test(a, b)
    assert ours.n == 11  # the 5.6e-17 is a zero
    ref = scipy_stats.wilcoxon(exact)
    assert ours.statistic == pytest.approx(ref.statistic) and ours.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    assert wilcoxon_test(exact, np.zeros_like(exact)) == ours
    # scipy on the noisy differences ranks the 1/5s apart and keeps the near-zero: another answer.
    noisy = scipy_stats.wilcoxon(d, method="exact" if len(d) <= 50 else "auto")
    assert (noisy.statistic, noisy.pvalue) != pytest.approx((ref.statistic, ref.pvalue))
    for zero_method in ("pratt", "zsplit"):
        mine = wilcoxon_test(a, b, zero_method=zero_method, method="asymptotic")  # type: ignore[arg-type]
        theirs = scipy_stats.wilcoxon(exact, zero_method=zero_method, method="approx")
        assert mine.pvalue == pytest.approx(theirs.pvalue, rel=1e-9)


def test_wilcoxon_tolerance_is_relative_to_the_scale() -> None:
    # Real differences smaller than 1e-9 of the scale are noise; on a tiny scale they are not.
    scale = 1e-12
    a = np.array([3.0, 2.0, 5.0, 4.0, 6.0, 7.5]) * scale
    b = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0]) * scale
    assert wilcoxon_test(a, b) == wilcoxon_test(a / scale, b / scale)
    assert wilcoxon_test(a, b).n == 6
    tiny = np.array([1.0, 1.0 + 1e-12, 1.0 + 2e-12, 1.0 + 3e-12, 2.0, 3.0])
    snapped = stats._snap_ties(tiny, stats.WILCOXON_TIE_RTOL * 3.0)
    assert len(np.unique(snapped)) == 3  # the four within 1e-12 chain into one group of ties


# --------------------------------------------------------------------------------------------------
# Intervals at a bound
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 5, 30, 200, 20_000])
def test_all_at_a_bound_is_clopper_pearson(n: int) -> None:
    ones = confidence_interval(np.ones(n), bounds=(0, 1))
    zeros = confidence_interval(np.zeros(n), bounds=(0, 1))
    ref = scipy_stats.binomtest(n, n).proportion_ci(confidence_level=0.95, method="exact")
    assert ones.method == zeros.method == "clopper-pearson"
    assert ones.low == pytest.approx(ref.low, rel=1e-9) and ones.high == 1.0
    assert zeros.low == 0.0 and zeros.high == pytest.approx(1 - ref.low, rel=1e-9)
    assert ones.width > 0 and zeros.width > 0
    # differences at +1 on [-1, 1]: the share of queries below +1 bounds the mean.
    up = confidence_interval(np.ones(n), bounds=(-1, 1))
    assert up.low == pytest.approx(1 - 2 * (1 - ref.low), rel=1e-9)
    # a constant inside the range, or no bounds given: unchanged (the value).
    assert confidence_interval(np.full(n, 0.5), bounds=(0, 1)).width == 0.0
    assert confidence_interval(np.ones(n)).width == 0.0


def test_at_bound_columns_and_unbounded_side() -> None:
    x = np.column_stack([np.ones(50), np.zeros(50), np.linspace(0, 1, 50)])
    ivs = confidence_intervals(x, bounds=([0, 0, 0], [1, math.inf, 1]), n_resamples=500)
    assert [iv.method for iv in ivs] == ["clopper-pearson", "clopper-pearson", "bca"]
    assert ivs[1].low == 0.0 and ivs[1].high == math.inf  # an all-zero DCG: nothing bounds it above
    assert ivs[1].to_dict()["high"] is None


def _binary_coverage(n: int, p: float, interval: object) -> float:
    """Exact coverage of p by an interval of 0/1 values: the simulation's expectation, summed over counts."""
    ks = np.arange(n + 1)
    pmf = scipy_stats.binom.pmf(ks, n, p)
    keep = pmf > 1e-12
    total = 0.0
    for k in ks[keep]:
        iv = interval(np.r_[np.ones(k), np.zeros(n - k)])  # type: ignore[operator]
        total += float(pmf[k]) * iv.contains(p)
    return total


@pytest.mark.parametrize(("n", "p"), [(12, 0.99), (40, 0.995), (40, 0.005), (300, 0.999)])
def test_binary_coverage_near_a_bound(n: int, p: float) -> None:
    def ours(v: np.ndarray) -> stats.Interval:
        return confidence_interval(v, bounds=(0, 1), n_resamples=1000)

    def zero_width(v: np.ndarray) -> stats.Interval:  # the former behaviour at a bound
        iv = ours(v)
        return (
            stats.Interval(iv.estimate, iv.estimate, iv.estimate, 0.95, "t", n)
            if iv.method == "clopper-pearson"
            else iv
        )

    assert _binary_coverage(n, p, ours) >= 0.94
    assert _binary_coverage(n, p, zero_width) < 0.5  # the check can fail: without the fix it does


def test_graded_metric_coverage_near_the_top_by_simulation() -> None:
    # nDCG-like values: 1.0 on 98% of queries, otherwise uniform on [0, 1); true mean 0.99. Fixed seed
    # and budget; the simulation's binomial error at 400 draws is about 0.011.
    rng = np.random.default_rng(20)
    n, reps, share = 30, 400, 0.98
    truth = share + (1 - share) * 0.5
    hits = 0
    at_bound = 0
    for _ in range(reps):
        v = np.where(rng.random(n) < share, 1.0, rng.random(n))
        iv = confidence_interval(v, bounds=(0, 1), n_resamples=500, seed=int(rng.integers(1 << 30)))
        hits += iv.contains(truth)
        at_bound += iv.method == "clopper-pearson"
    assert at_bound > reps / 3  # the case under test is frequent here
    assert hits / reps >= 0.93


# --------------------------------------------------------------------------------------------------
# ci="auto" at scale
# --------------------------------------------------------------------------------------------------


def test_auto_switches_to_t_at_bca_below() -> None:
    x = np.linspace(0, 1, stats.BCA_BELOW)
    assert confidence_interval(x[:-1], n_resamples=200).method == "bca"
    assert confidence_interval(x).method == "t"
    assert confidence_interval(x, method="bca", n_resamples=200).method == "bca"  # still on request


def test_t_and_bca_agree_at_the_switch_on_skewed_values() -> None:
    # Binary values with p = 0.02 (skewness 6.9): BCa's skew correction is what t lacks. At the switch
    # the two intervals' bounds differ by a small fraction of a standard error.
    rng = np.random.default_rng(3)
    n = stats.BCA_BELOW
    x = (rng.random(n) < 0.02).astype(float)
    se = x.std(ddof=1) / math.sqrt(n)
    t = confidence_interval(x, method="t")
    bca = confidence_interval(x, method="bca", n_resamples=2000, seed=1)
    assert abs(t.low - bca.low) < 0.15 * se and abs(t.high - bca.high) < 0.15 * se


@pytest.mark.parametrize("p", [0.02, 0.1, 0.5])
def test_t_interval_coverage_from_the_switch(p: float) -> None:
    # Exact coverage of the t interval of a 0/1 metric at BCA_BELOW queries (binomial expectation).
    n = stats.BCA_BELOW
    ks = np.arange(n + 1)
    pmf = scipy_stats.binom.pmf(ks, n, p)
    keep = pmf > 1e-12
    k = ks[keep]
    mean = k / n
    sd = np.sqrt(mean * (1 - mean) * n / (n - 1))
    half = scipy_stats.t.isf(0.025, n - 1) * sd / math.sqrt(n)
    covered = (mean - half <= p) & (p <= mean + half)
    assert 0.94 <= float((pmf[keep] * covered).sum()) <= 0.96


# --------------------------------------------------------------------------------------------------
# Permutation test: same p-values as the former implementation, bounded memory
# --------------------------------------------------------------------------------------------------


def _reference_permutation_pvalue(d: np.ndarray, n_resamples: int, seed: int, alternative: str) -> list[float]:
    """The Monte Carlo permutation test as it was before the lazy blocks (all flip blocks built first)."""
    n, c = d.shape
    observed = np.ascontiguousarray(d.T).mean(axis=1)
    total_d = np.ascontiguousarray(d.T).sum(axis=1)
    gamma = 100 * np.finfo(np.float64).eps * (np.abs(observed) + np.abs(d).mean(axis=0))
    rng = np.random.default_rng(seed)
    nbytes = (n + 7) // 8
    size = max(1, min(n_resamples, (1 << 20) // max(n, 1)))
    blocks = []
    for start in range(0, n_resamples, size):
        raw = rng.integers(0, 256, (min(size, n_resamples - start), nbytes), dtype=np.uint8)
        blocks.append(np.unpackbits(raw, axis=1, count=n).astype(np.float64))
    le = np.zeros(c)
    ge = np.zeros(c)
    for flips in blocks:
        null = (total_d - 2.0 * (flips @ d)) / n
        le += (null <= observed + gamma).sum(axis=0)
        ge += (null >= observed - gamma).sum(axis=0)
    p_less = (le + 1) / (n_resamples + 1)
    p_greater = (ge + 1) / (n_resamples + 1)
    p = {"less": p_less, "greater": p_greater}.get(alternative, 2 * np.minimum(p_less, p_greater))
    return np.clip(p, 0, 1).tolist()  # type: ignore[no-any-return]


def _difference_kinds(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    def grade(k: int) -> np.ndarray:
        return rng.integers(0, k + 1, n) / k

    return {
        "binary": (rng.random(n) < 0.3) * 1.0 - (rng.random(n) < 0.25),
        "grid-256": grade(256) - grade(256),
        "tenths": grade(10) - grade(10),  # not exact in binary: 0.3 - 0.2 and 0.1 differ by rounding
        "reciprocal-rank": 1 / rng.integers(1, 11, n) - 1 / rng.integers(1, 11, n),
        "continuous": rng.normal(0.01, 0.3, n),
        "sparse": np.where(rng.random(n) < 0.01, 0.6 - 0.4, 0.0) - np.where(rng.random(n) < 0.008, 0.2, 0.0),
        "ndcg-like": np.where(rng.random(n) < 0.4, 0.0, rng.random(n))
        - np.where(rng.random(n) < 0.4, 0.0, rng.random(n)),
    }


@pytest.mark.parametrize("n", [300, stats._PLANES_FROM, 2500])
@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_permutation_pvalues_equal_the_former_implementation(n: int, alternative: str) -> None:
    rng = np.random.default_rng(n)
    kinds = _difference_kinds(n, rng)
    for name, d in kinds.items():
        shifted = d + rng.choice([0.0, 0.02]) * (name == "continuous")
        ours = permutation_test(shifted, np.zeros(n), n_resamples=1500, seed=7, alternative=alternative)  # type: ignore[arg-type]
        ref = _reference_permutation_pvalue(shifted[:, None], 1500, 7, alternative)[0]
        assert ours.pvalue == ref, name
    m = np.column_stack(list(kinds.values()))
    together = [r.pvalue for r in permutation_tests(m, n_resamples=800, seed=2, alternative=alternative)]  # type: ignore[arg-type]
    assert together == _reference_permutation_pvalue(m, 800, 2, alternative)


def test_permutation_pvalues_equal_the_former_implementation_near_ties() -> None:
    # Lumpy differences whose observed mean is itself a frequent null value (many exact ties), and
    # values 1/3 apart that are never exact in floating point: the recheck path decides those.
    rng = np.random.default_rng(11)
    n = 4000
    for d in (rng.integers(-1, 2, n) / 3.0, np.r_[np.full(20, 0.6 - 0.4), np.full(20, -0.2), np.zeros(n - 40)]):
        for seed in (0, 1):
            assert permutation_test(d, np.zeros(n), n_resamples=1000, seed=seed).pvalue == pytest.approx(
                _reference_permutation_pvalue(d[:, None], 1000, seed, "two-sided")[0], abs=0
            )


def test_permutation_memory_is_bounded() -> None:
    # The former implementation held n x n_resamples float64 cells at once: 320 MB here.
    n, resamples = 20_000, 2_000
    d = np.random.default_rng(4).normal(0, 1, n)
    tracemalloc.start()
    try:
        permutation_test(d, np.zeros(n), n_resamples=resamples)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * 2**20
    assert n * resamples * 8 > 300 * 2**20


# --------------------------------------------------------------------------------------------------
# Power from the noncentral t
# --------------------------------------------------------------------------------------------------


def _nct_power(d: float, n: int, alpha: float = 0.05) -> float:
    crit = scipy_stats.t.isf(alpha / 2, n - 1)
    nc = d * math.sqrt(n)
    # P(T < -c) as the upper tail of -T (nct.cdf(-c) gives NaN far out in scipy 1.x)
    return float(scipy_stats.nct.sf(crit, n - 1, nc) + scipy_stats.nct.sf(crit, n - 1, -nc))


@pytest.mark.parametrize("n", [3, 4, 5, 8, 12, 30, 100, 500, 2000, 10_000])
def test_power_is_the_noncentral_t(n: int) -> None:
    for d in (0.0, 0.02, 0.1, 0.25, 0.5, 0.8, 1.2, 2.0):
        assert paired_power(d, n) == pytest.approx(_nct_power(d, n), abs=1e-9)
        assert paired_power(-d, n) == paired_power(d, n)
    assert paired_power(0.3, n, alpha=0.01) == pytest.approx(_nct_power(0.3, n, 0.01), abs=1e-9)


def test_power_figure_in_the_warning() -> None:
    assert paired_power(0.1, 8) == pytest.approx(0.0570, abs=5e-4)
    assert _nct_power(0.1, 8) == pytest.approx(0.0570, abs=5e-4)
    warning = sample_size_warning(50, 0.1)
    assert warning is not None and f"about {_nct_power(0.1, 50):.0%}" in warning
    need = stats.queries_needed(0.3)
    assert need is not None and _nct_power(0.3, need) >= 0.8 > _nct_power(0.3, need - 1)


def test_an_effect_within_float_noise_of_zero_needs_no_queries_and_returns_at_once() -> None:
    """Two runs with equal means give differences that sum to ~1e-16: no effect, and no endless search."""
    from rankbridge.metrics.stats import queries_needed, sample_size_warning

    assert queries_needed(-6.65e-18) is None and sample_size_warning(108, -6.65e-18) is None
    tiny = queries_needed(1e-4)  # a real but tiny effect: normal theory, returned at once
    assert tiny is not None and abs(tiny / ((1.959964 + 0.841621) / 1e-4) ** 2 - 1) < 1e-6
