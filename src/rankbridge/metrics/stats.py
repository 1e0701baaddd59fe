"""Statistics over per-query metric values: confidence intervals, paired tests, corrections, power.

Everything here is plain numpy (plus :mod:`math` and :mod:`statistics` from the standard library) and
is checked against :mod:`scipy.stats` in the tests. Every random procedure takes a ``seed`` and gives
the same answer for the same input, seed and ``n_resamples``, whatever else is computed alongside it.

Intervals (the unit of resampling is the query)
    * ``"bca"`` -- bias-corrected and accelerated bootstrap (Efron & Tibshirani 1993, 14.3), as
      :func:`scipy.stats.bootstrap` computes it. Second-order accurate; handles the skew of metrics
      that pile up at 0 and 1.
    * ``"percentile"`` -- the plain percentile bootstrap.
    * ``"t"`` -- Student's t interval, mean +- t * sd / sqrt(n).
    * ``"auto"`` (default) -- ``"t"`` below :data:`T_BELOW` queries, ``"bca"`` from there up to
      :data:`BCA_BELOW`, ``"t"`` again from there on. With few queries the bootstrap intervals are too
      narrow (the resampled spread misses the n/(n-1) factor and uses normal rather than t tails;
      Hesterberg 2015, "What teachers should know about the bootstrap"), while the t interval keeps
      its nominal coverage well for bounded metrics. With many, BCa's skewness correction shrinks as
      1/sqrt(n) and the t interval gives the same coverage without n x n_resamples draws.
    * ``"clopper-pearson"`` -- not a choice but a result: when ``bounds`` are given and every value
      sits at one of them (all 1.0, all 0.0), the interval is the exact binomial one, never zero-width.

Paired tests (``a[i]`` and ``b[i]`` are two systems' values on query ``i``; ``d = a - b``)
    * :func:`permutation_test` -- the randomization test (sign flips of ``d``, statistic ``mean(d)``),
      the default: it assumes nothing about the shape of ``d``, which for ranking metrics is lumpy.
      Exact (all ``2**n`` flips) when ``2**n <= n_resamples``, otherwise Monte Carlo with the
      ``(count + 1) / (n_resamples + 1)`` estimate, as :func:`scipy.stats.permutation_test`.
    * :func:`paired_t_test` -- as :func:`scipy.stats.ttest_rel`.
    * :func:`wilcoxon_test` -- the signed-rank test, as :func:`scipy.stats.wilcoxon`; see its docstring
      for how zero differences and ties are handled.

Multiple comparisons: :func:`holm`. Effect size: :func:`paired_effect_size` (Cohen's d_z). Power:
:func:`paired_power`, :func:`queries_needed`, :func:`sample_size_warning`.

Examples
--------
>>> import numpy as np
>>> a = np.array([0.9, 0.8, 1.0, 0.7, 0.6, 0.9, 0.8, 1.0])
>>> b = np.array([0.5, 0.8, 0.7, 0.4, 0.6, 0.5, 0.6, 0.9])
>>> print(t_ci(a - b))
0.2125 [0.0752, 0.3498] (95% t, n=8)
>>> permutation_test(a, b).pvalue
0.03125
>>> holm([0.01, 0.04, 0.03]).tolist()
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from rankbridge._numbers import fmt_number, json_float
from rankbridge.errors import InputError

__all__ = [
    "BCA_BELOW",
    "MIN_QUERIES",
    "T_BELOW",
    "WILCOXON_TIE_RTOL",
    "Interval",
    "PairedTestResult",
    "bootstrap_ci",
    "confidence_interval",
    "confidence_intervals",
    "holm",
    "paired_difference_ci",
    "paired_effect_size",
    "paired_power",
    "paired_t_test",
    "paired_test",
    "permutation_test",
    "permutation_tests",
    "queries_needed",
    "sample_size_warning",
    "t_ci",
    "wilcoxon_test",
]

CIMethod = Literal["auto", "bca", "percentile", "t"]
Alternative = Literal["two-sided", "greater", "less"]
TestName = Literal["permutation", "t", "wilcoxon"]
ZeroMethod = Literal["wilcox", "pratt", "zsplit"]

#: Below this many queries a warning says that intervals and tests have little to go on.
MIN_QUERIES = 10
#: ``method="auto"`` uses the t interval below this many queries and BCa from there on ...
T_BELOW = 30
#: ... up to this many queries, and the t interval again from here on (see :func:`confidence_intervals`).
BCA_BELOW = 10_000
#: Resampling works on blocks of at most this many (resample x query) cells, to bound memory.
_BLOCK_CELLS = 1 << 20
#: From this many queries on, Monte Carlo sign flips stay packed as bits (see ``_count_tails``).
_PLANES_FROM = 1024
#: Bit planes of the differences used by the packed-bit null means (at most; fewer on a grid).
_PLANE_BITS = 16
#: Grids (1 / step) on which ranking-metric differences often lie exactly: binary, graded, @k, 1/rank.
_GRIDS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 10, 20, 100, 1000, 2520)
#: Size of the buffer of packed flip rows processed at once.
_CHUNK_BYTES = 1 << 23
#: ... and the slice of it that passes through every bit plane while it is in cache.
_CACHE_BYTES = 1 << 17
#: ``wilcoxon_test(method="auto")`` is exact up to this many non-zero differences.
_WILCOXON_EXACT_MAX = 50
_WILCOXON_EXACT_LIMIT = 500
#: ``wilcoxon_test`` treats differences within this much of each other, relative to the values' scale
#: (the largest ``|a|``, ``|b|``), as ties, and differences this close to 0 as zeros.
WILCOXON_TIE_RTOL = 1e-9

_NORMAL = NormalDist()
_CI_METHODS = ("auto", "bca", "percentile", "t")
_ALTERNATIVES = ("two-sided", "greater", "less")
_TESTS = ("permutation", "t", "wilcoxon")

FloatArray = npt.NDArray[np.float64]


# --------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with a confidence interval.

    Attributes
    ----------
    estimate:
        The mean over queries (of the values, or of the paired differences).
    low, high:
        The interval's bounds; NaN when there is too little data for one (a single query).
    level:
        The confidence level, e.g. 0.95.
    method:
        ``"bca"``, ``"percentile"`` or ``"t"`` (never ``"auto"``: the method actually used).
    n:
        The number of queries.

    Examples
    --------
    >>> iv = Interval(0.5, 0.4, 0.6, 0.95, "t", 40)
    >>> print(iv)
    0.5000 [0.4000, 0.6000] (95% t, n=40)
    >>> round(iv.width, 2), iv.contains(0.45)
    (0.2, True)
    """

    estimate: float
    low: float
    high: float
    level: float
    method: str
    n: int

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies inside the interval (bounds included)."""
        return bool(self.low <= value <= self.high)

    def __str__(self) -> str:
        return (
            f"{fmt_number(self.estimate)} [{fmt_number(self.low)}, {fmt_number(self.high)}] "
            f"({self.level:.0%} {self.method}, n={self.n})"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite numbers become ``None``)."""
        return {
            "estimate": json_float(self.estimate),
            "low": json_float(self.low),
            "high": json_float(self.high),
            "level": self.level,
            "method": self.method,
            "n": self.n,
        }


@dataclass(frozen=True, slots=True)
class PairedTestResult:
    """The outcome of a paired significance test.

    Attributes
    ----------
    test:
        ``"permutation"``, ``"t"`` or ``"wilcoxon"``.
    statistic:
        permutation: ``mean(a - b)``; t: the t statistic; wilcoxon: as :func:`scipy.stats.wilcoxon`
        (``min(R+, R-)`` two-sided, ``R+`` one-sided).
    pvalue:
        The p-value.
    n:
        Pairs that entered the test (for Wilcoxon with ``zero_method="wilcox"``, the non-zero ones).
    method:
        ``"exact"``, ``"monte-carlo"``, ``"asymptotic"`` (Wilcoxon's normal approximation) or ``"t"``.
    alternative:
        ``"two-sided"``, ``"greater"`` (a > b) or ``"less"``.
    """

    test: str
    statistic: float
    pvalue: float
    n: int
    method: str
    alternative: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite numbers become ``None``)."""
        return {
            "test": self.test,
            "statistic": json_float(self.statistic),
            "pvalue": json_float(self.pvalue),
            "n": self.n,
            "method": self.method,
            "alternative": self.alternative,
        }


# --------------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------------


def _vector(values: npt.ArrayLike, name: str) -> FloatArray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected a 1-D array of numbers, found {type(values).__name__}") from None
    if arr.ndim != 1:
        raise InputError(f"{name}: expected a 1-D array of per-query values, found shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(f"{name}: expected finite numbers, found NaN or infinity at index {_first_bad(arr)}")
    return arr


def _matrix(values: npt.ArrayLike, name: str) -> FloatArray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected a 2-D array of numbers, found {type(values).__name__}") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise InputError(f"{name}: expected shape (queries, columns), found shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise InputError(f"{name}: expected finite numbers, found NaN or infinity")
    return arr


def _first_bad(arr: FloatArray) -> int:
    return int(np.flatnonzero(~np.isfinite(arr))[0])


def _pair(a: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    x, y = _vector(a, "a"), _vector(b, "b")
    if len(x) != len(y):
        raise InputError(
            f"paired values: a and b must have the same length (one value per query), found {len(x)} and {len(y)}"
        )
    return x - y


def _check_level(level: float) -> None:
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise InputError(f"level must be a number strictly between 0 and 1. Got {level!r} instead.")


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise InputError(f"alpha must be a number strictly between 0 and 1. Got {alpha!r} instead.")


def _check_resamples(n_resamples: int) -> None:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise InputError(f"n_resamples must be an int >= 1. Got {n_resamples!r} instead.")


def _check_choice(value: str, allowed: Sequence[str], name: str) -> None:
    if value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(map(repr, allowed))}. Got {value!r} instead.")


# --------------------------------------------------------------------------------------------------
# Distributions (standard normal via the standard library; Student's t via the incomplete beta)
# --------------------------------------------------------------------------------------------------


def _norm_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _norm_ppf(p: float) -> float:
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return _NORMAL.inv_cdf(p)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes 6.4)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return h


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """Regularized incomplete beta I_x(a, b), with ``y = 1 - x`` passed to avoid cancellation."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = a * math.log(x) + b * math.log(y) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, y) / b


def _t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom."""
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    t2 = t * t
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t2), t2 / (df + t2))
    return tail if t >= 0 else 1.0 - tail


def _t_pdf(t: float, df: float) -> float:
    log = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log - (df + 1) / 2 * math.log1p(t * t / df))


@functools.lru_cache(maxsize=256)
def _t_ppf_upper(p: float, df: float) -> float:
    """The t with P(T > t) = p, for 0 < p < 0.5 (Newton from the normal quantile, bracketed)."""
    lo = -_norm_ppf(p)  # the t quantile is never below the normal one
    hi = max(2.0 * lo, 1.0)
    while _t_sf(hi, df) > p:
        lo, hi = hi, hi * 2.0
    t = lo
    for _ in range(200):
        f = _t_sf(t, df) - p
        step = f / _t_pdf(t, df)
        nxt = t + step
        if f > 0:
            lo = t
        else:
            hi = t
        if not (lo < nxt < hi):
            nxt = 0.5 * (lo + hi)
        if abs(nxt - t) <= 1e-15 * max(1.0, abs(t)):
            return nxt
        t = nxt
    return t


# --------------------------------------------------------------------------------------------------
# Confidence intervals
# --------------------------------------------------------------------------------------------------


def _blocks(total: int, n: int) -> list[tuple[int, int]]:
    """Split ``total`` resamples into blocks of at most ``_BLOCK_CELLS`` cells (a function of n only)."""
    size = max(1, min(total, _BLOCK_CELLS // max(n, 1)))
    return [(start, min(size, total - start)) for start in range(0, total, size)]


def _bootstrap_means(x: FloatArray, n_resamples: int, seed: int) -> FloatArray:
    """``(n_resamples, c)`` means of the columns of ``x`` over the same resamples of its rows.

    Row indices are drawn as ``default_rng(seed).integers(0, n, (block, n))``, block by block -- the
    very draws :func:`scipy.stats.bootstrap` makes with the same generator and ``batch=block``.
    A resample's means are ``counts @ x / n`` (counts of each query in the resample), one matrix
    product for all columns.
    """
    n, c = x.shape
    rng = np.random.default_rng(seed)
    out = np.empty((n_resamples, c))
    for start, size in _blocks(n_resamples, n):
        idx = rng.integers(0, n, (size, n))
        idx += (np.arange(size, dtype=np.int64) * n)[:, None]
        counts = np.bincount(idx.ravel(), minlength=size * n).reshape(size, n)
        out[start : start + size] = counts.astype(np.float64) @ x
    out /= n
    return out


def _col_means(x: FloatArray) -> FloatArray:
    """Column means, each summed as a contiguous 1-D array (so a column alone gives the same bits)."""
    out: FloatArray = np.ascontiguousarray(x.T).mean(axis=1)
    return out


def _linear_quantiles(sorted_cols: FloatArray, probs: FloatArray) -> FloatArray:
    """Quantile ``probs[j]`` of column ``j`` of an already sorted matrix (numpy's 'linear' method)."""
    b = sorted_cols.shape[0]
    pos = np.clip(probs, 0.0, 1.0) * (b - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, b - 1)
    frac = pos - lo
    cols = np.arange(sorted_cols.shape[1])
    low_v, high_v = sorted_cols[lo, cols], sorted_cols[hi, cols]
    out: FloatArray = low_v + (high_v - low_v) * frac
    return out


def _bootstrap_bounds(
    x: FloatArray, level: float, method: str, n_resamples: int, seed: int
) -> tuple[FloatArray, FloatArray]:
    c = x.shape[1]
    dist = _bootstrap_means(x, n_resamples, seed)
    dist.sort(axis=0)
    alpha = (1.0 - level) / 2.0
    if method == "percentile":
        p_lo = np.full(c, alpha)
        p_hi = np.full(c, 1.0 - alpha)
        return _linear_quantiles(dist, p_lo), _linear_quantiles(dist, p_hi)
    # BCa (Efron & Tibshirani 1993, eq. 14.10-14.15), written for the mean.
    theta = _col_means(x)
    # Resamples whose mean equals theta in exact arithmetic (common with lumpy metric values) can differ
    # from it by rounding; they count as ties, half below and half above.
    tol = 1e-10 * (np.abs(theta) + np.abs(x - theta).mean(axis=0))
    below = (dist < theta - tol).sum(axis=0) + (dist <= theta + tol).sum(axis=0)
    share = below / (2.0 * n_resamples)
    dev = x - theta  # for the mean, the jackknife's U_i = (n - 1)(theta_dot - theta_(i)) is x_i - mean
    num = (dev**3).sum(axis=0)
    den = (dev**2).sum(axis=0)
    z_alpha = _norm_ppf(alpha)
    p_lo = np.empty(c)
    p_hi = np.empty(c)
    for j in range(c):
        z0 = _norm_ppf(float(share[j]))
        if den[j] == 0.0 or not math.isfinite(z0):  # degenerate: fall back to percentile
            p_lo[j], p_hi[j] = alpha, 1.0 - alpha
            continue
        a_hat = float(num[j]) / (6.0 * float(den[j]) ** 1.5)
        n1 = z0 + z_alpha
        n2 = z0 - z_alpha
        p_lo[j] = _norm_cdf(z0 + n1 / (1.0 - a_hat * n1))
        p_hi[j] = _norm_cdf(z0 + n2 / (1.0 - a_hat * n2))
    return _linear_quantiles(dist, p_lo), _linear_quantiles(dist, p_hi)


def _t_bounds(x: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    n = x.shape[0]
    mean = _col_means(x)
    if n < 2:
        nan = np.full(x.shape[1], np.nan)
        return nan, nan.copy()
    half = (
        _t_ppf_upper((1.0 - level) / 2.0, float(n - 1)) * np.ascontiguousarray(x.T).std(axis=1, ddof=1) / math.sqrt(n)
    )
    lo: FloatArray = mean - half
    hi: FloatArray = mean + half
    return lo, hi


def confidence_intervals(
    columns: npt.ArrayLike,
    *,
    level: float = 0.95,
    method: CIMethod = "auto",
    n_resamples: int = 10_000,
    seed: int = 0,
    bounds: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
) -> list[Interval]:
    """Intervals for the mean of each column of ``columns`` (rows are queries), in one pass.

    All columns share the same bootstrap resamples of the rows, so this is what to call for many
    metrics or systems evaluated on the same queries (and it is as fast as one column). Each column's
    interval equals what :func:`confidence_interval` gives for that column alone (to the last bits of
    the bootstrap's matrix product).

    Parameters
    ----------
    columns:
        ``(n_queries, n_columns)`` values, or a 1-D array for one column.
    level:
        Confidence level, e.g. 0.95.
    method:
        ``"auto"`` (t below :data:`T_BELOW` queries, BCa otherwise), ``"bca"``, ``"percentile"``, ``"t"``.
    n_resamples:
        Bootstrap resamples.
    seed:
        Seed of the resampling; same input and seed, same interval.
    bounds:
        ``(lowest, highest)`` the mean can take, scalars or one per column (``(0, 1)`` for most ranking
        metrics); interval bounds outside are clipped. A t interval can otherwise reach past 1.

    Returns
    -------
    list of Interval
        One per column. With fewer than 2 queries the bounds are NaN; with constant values the
        interval is that value.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1.0, 0.0], [0.5, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> [str(iv) for iv in confidence_intervals(x, method="percentile", n_resamples=2000)]
    ['0.6250 [0.2500, 1.0000] (95% percentile, n=4)', '0.5000 [0.0000, 1.0000] (95% percentile, n=4)']
    """
    x = _matrix(columns, "columns")
    _check_level(level)
    _check_choice(method, _CI_METHODS, "method")
    _check_resamples(n_resamples)
    n, c = x.shape
    if n == 0:
        raise InputError("columns: expected values for at least one query, found none")
    used = ("bca" if T_BELOW <= n < BCA_BELOW else "t") if method == "auto" else method
    mean = _col_means(x)
    if n < 2:
        lo = hi = np.full(c, np.nan)
    elif used == "t":
        lo, hi = _t_bounds(x, level)
    else:
        lo, hi = _bootstrap_bounds(x, level, used, n_resamples, seed)
    if bounds is not None:
        floor = np.broadcast_to(np.asarray(bounds[0], dtype=np.float64), (c,))
        ceil = np.broadcast_to(np.asarray(bounds[1], dtype=np.float64), (c,))
        lo, hi = np.clip(lo, floor, ceil), np.clip(hi, floor, ceil)
    constant = (x == x[0]).all(axis=0) if n >= 2 else np.zeros(c, dtype=bool)
    out = []
    for j in range(c):
        m = float(mean[j])
        at_bound = None if bounds is None else _at_bound(x[:, j], float(floor[j]), float(ceil[j]), level)
        if at_bound is not None:
            out.append(Interval(m, at_bound[0], at_bound[1], level, "clopper-pearson", n))
        elif constant[j]:
            out.append(Interval(m, m, m, level, used, n))
        else:
            out.append(Interval(m, float(lo[j]), float(hi[j]), level, used, n))
    return out


def _at_bound(x: FloatArray, floor: float, ceil: float, level: float) -> tuple[float, float] | None:
    """The Clopper-Pearson interval when every value sits at ``floor`` or every one at ``ceil``, else None.

    With all n values at the top, the share of queries below it has the exact (Clopper-Pearson)
    upper bound ``q = 1 - ((1 - level) / 2) ** (1 / n)``; the mean is at least ``ceil - q * (ceil -
    floor)`` whatever the values below the top would be. For a 0/1 metric this is the Clopper-Pearson
    interval of the proportion itself; for any other metric in ``[floor, ceil]`` it is a conservative
    bound. Mirrored at the floor. The far end is the bound itself (infinite if that bound is).
    """
    if not (floor < ceil) or len(x) < 2:
        return None
    q = 1.0 - ((1.0 - level) / 2.0) ** (1.0 / len(x))
    span = ceil - floor
    if math.isfinite(ceil) and bool((x == ceil).all()):
        return (ceil - q * span if math.isfinite(span) else -math.inf), ceil
    if math.isfinite(floor) and bool((x == floor).all()):
        return floor, (floor + q * span if math.isfinite(span) else math.inf)
    return None


def confidence_interval(
    values: npt.ArrayLike,
    *,
    level: float = 0.95,
    method: CIMethod = "auto",
    n_resamples: int = 10_000,
    seed: int = 0,
    bounds: tuple[float, float] | None = None,
) -> Interval:
    """A confidence interval for the mean of per-query ``values``.

    Parameters
    ----------
    values:
        ``(n_queries,)`` per-query metric values.
    level, method, n_resamples, seed, bounds:
        As in :func:`confidence_intervals`.

    Returns
    -------
    Interval

    Examples
    --------
    >>> print(confidence_interval([1.0, 0.5, 0.0, 1.0, 0.5, 1.0]))
    0.6667 [0.2382, 1.0951] (95% t, n=6)
    >>> print(confidence_interval([1.0, 0.5, 0.0, 1.0, 0.5, 1.0], bounds=(0, 1)))
    0.6667 [0.2382, 1.0000] (95% t, n=6)
    >>> confidence_interval([1.0, 0.5, 0.0, 1.0] * 10).method
    'bca'
    """
    x = _vector(values, "values")
    return confidence_intervals(
        x[:, None], level=level, method=method, n_resamples=n_resamples, seed=seed, bounds=bounds
    )[0]


def bootstrap_ci(
    values: npt.ArrayLike,
    *,
    level: float = 0.95,
    method: Literal["bca", "percentile"] = "bca",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Interval:
    """A bootstrap interval for the mean of per-query ``values`` (resampling queries).

    Uses the same resamples as ``scipy.stats.bootstrap((values,), np.mean, method=method,
    n_resamples=n_resamples, rng=np.random.default_rng(seed), batch=B)`` where ``B`` is the block size
    this module uses (all resamples at once for up to ``2**20 / n`` resamples), so the two agree.

    Examples
    --------
    >>> iv = bootstrap_ci([0.0, 1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 1.0], n_resamples=5000)
    >>> iv.method, iv.low < 0.6875 < iv.high
    ('bca', True)
    """
    _check_choice(method, ("bca", "percentile"), "method")
    return confidence_interval(values, level=level, method=method, n_resamples=n_resamples, seed=seed)


def t_ci(values: npt.ArrayLike, *, level: float = 0.95) -> Interval:
    """Student's t interval for the mean of ``values``: mean +- t(n-1) * sd / sqrt(n).

    Examples
    --------
    >>> print(t_ci([0.2, 0.4, 0.6]))
    0.4000 [-0.0968, 0.8968] (95% t, n=3)
    """
    return confidence_interval(values, level=level, method="t")


def paired_difference_ci(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    level: float = 0.95,
    method: CIMethod = "auto",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Interval:
    """An interval for ``mean(a - b)``, resampling queries (pairs stay together).

    Examples
    --------
    >>> print(paired_difference_ci([0.9, 0.7, 0.8, 1.0], [0.6, 0.7, 0.5, 0.8]))
    0.2000 [-0.0250, 0.4250] (95% t, n=4)
    """
    return confidence_interval(_pair(a, b), level=level, method=method, n_resamples=n_resamples, seed=seed)


# --------------------------------------------------------------------------------------------------
# Paired tests
# --------------------------------------------------------------------------------------------------


def _tail_pvalues(le: FloatArray, ge: FloatArray, total: float, alternative: str, adjust: float) -> FloatArray:
    p_less = (le + adjust) / (total + adjust)
    p_greater = (ge + adjust) / (total + adjust)
    if alternative == "less":
        p = p_less
    elif alternative == "greater":
        p = p_greater
    else:
        p = 2.0 * np.minimum(p_less, p_greater)
    out: FloatArray = np.clip(p, 0.0, 1.0)
    return out


def _exact_flip_blocks(n: int) -> Iterator[FloatArray]:
    """0/1 "flip" matrices of every one of the 2**n patterns, a block of at most _BLOCK_CELLS at a time."""
    shifts = np.arange(n, dtype=np.int64)
    for start, size in _blocks(1 << n, n):
        codes = np.arange(start, start + size, dtype=np.int64)
        yield ((codes[:, None] >> shifts) & 1).astype(np.float64)


def _random_flip_bytes(n: int, n_resamples: int, seed: int) -> Iterator[npt.NDArray[np.uint8]]:
    """Random flips packed 8 to a byte (bit ``7 - i % 8`` of byte ``i // 8`` flips query ``i``), a block at a time.

    The draws are ``default_rng(seed).integers(0, 256, (block, ceil(n / 8)), dtype=uint8)`` block by
    block with the blocks of :func:`_blocks`, so the flips depend on n, n_resamples and seed only.
    """
    rng = np.random.default_rng(seed)
    nbytes = (n + 7) // 8
    for _, size in _blocks(n_resamples, n):
        yield rng.integers(0, 256, (size, nbytes), dtype=np.uint8)


def _float_nulls(raw: npt.NDArray[np.uint8], d: FloatArray, total_d: FloatArray) -> FloatArray:
    """Null means of the flips in ``raw`` (packed rows) for each column of ``d``, in floating point."""
    n = d.shape[0]
    flips = np.unpackbits(raw, axis=1, count=n).astype(np.float64)
    # s = 1 - 2 * flip is the sign of each d; mean(s * d) = (sum(d) - 2 * flip @ d) / n
    out: FloatArray = (total_d - 2.0 * (flips @ d)) / n
    return out


@dataclass(frozen=True, slots=True)
class _BitPlanes:
    """One column of differences as integers ``q = rint(d / scale)``, offset to ``u = q + offset >= 0``.

    ``masks[b]`` packs bit ``b`` of every ``u`` as the flip bytes pack queries (viewed as uint64 words);
    ``valid`` has a bit for every query. For a packed flip row ``w``,
    ``sum(bit_i * q_i) = sum_b 2**b * popcount(w & masks[b]) - offset * popcount(w & valid)``, exactly, in
    integers. ``slack`` bounds how far the null mean computed from ``q`` can lie from the one computed from
    ``d``: ``2 * sum(|d - scale * q|) / n``.
    """

    masks: npt.NDArray[np.uint64]
    valid: npt.NDArray[np.uint64]
    scale: float
    offset: int
    slack: float


def _pack_words(bits: npt.NDArray[np.bool_], nwords: int) -> npt.NDArray[np.uint64]:
    packed = np.zeros(nwords * 8, dtype=np.uint8)
    raw = np.packbits(bits)
    packed[: len(raw)] = raw
    return packed.view(np.uint64)


def _bit_planes(d: FloatArray, nwords: int) -> _BitPlanes:
    """Integer bit planes of one column (see :class:`_BitPlanes`); exact when ``d`` lies on a small grid."""
    n = len(d)
    top = float(np.abs(d).max())
    # About 2**-16 of the largest |d| per step (or the grid the values lie on, if they lie on one of the
    # grids ranking metrics produce): fine enough that few null means land within `slack` of a threshold.
    planes = min(_PLANE_BITS, 62 - max(1, n.bit_length()))
    scale = math.ldexp(1.0, math.frexp(top)[1] - (planes - 1)) if top > 0 else 1.0
    for grid in _GRIDS:
        q = np.rint(d * grid)
        if np.abs(q).max() < 2.0 ** (planes - 1) and np.array_equal(q / grid, d):
            scale = 1.0 / grid
            break
    else:
        q = np.rint(d / scale)
    qi = q.astype(np.int64)
    offset = -int(qi.min()) if len(qi) else 0
    u = qi + offset
    nbits = max(1, int(u.max()).bit_length())
    masks = np.stack([_pack_words(((u >> b) & 1).astype(bool), nwords) for b in range(nbits)])
    valid = _pack_words(np.ones(n, dtype=bool), nwords)
    slack = 2.0 * float(np.abs(d - q * scale).sum()) / n
    return _BitPlanes(masks, valid, scale, offset, slack)


def _popcount_rows(words: npt.NDArray[np.uint64], mask: npt.NDArray[np.uint64], tmp: Any, cnt: Any) -> Any:
    np.bitwise_and(words, mask, out=tmp)
    np.bitwise_count(tmp, out=cnt)
    return np.add.reduce(cnt, axis=1, dtype=np.int64)


def _count_tails(
    d: FloatArray, total_d: FloatArray, observed: FloatArray, gamma: FloatArray, n_resamples: int, seed: int
) -> tuple[FloatArray, FloatArray]:
    """Monte Carlo counts of null means ``<= observed + gamma`` and ``>= observed - gamma``, per column.

    Flip blocks are generated lazily (memory stays bounded by a few blocks, whatever n and n_resamples).
    For small n each block's null means are a floating-point matrix product, as they always were. From
    :data:`_PLANES_FROM` queries on, the flip bits stay packed: each null mean is first computed in
    integers from bit planes of the differences (popcounts, no n x resamples float matrix), and the
    few whose value lies within the planes' ``slack`` of either threshold are recomputed by the
    floating-point product -- so the counts are the ones the product alone gives.
    """
    n, c = d.shape
    le = np.zeros(c)
    ge = np.zeros(c)
    hi_thr = observed + gamma
    lo_thr = observed - gamma
    blocks = _random_flip_bytes(n, n_resamples, seed)
    if n < _PLANES_FROM:
        for raw in blocks:
            null = _float_nulls(raw, d, total_d)
            le += (null <= hi_thr).sum(axis=0)
            ge += (null >= lo_thr).sum(axis=0)
        return le, ge
    nbytes = (n + 7) // 8
    nwords = (nbytes + 7) // 8
    planes = [_bit_planes(np.ascontiguousarray(d[:, j]), nwords) for j in range(c)]
    rows = max(1, _CHUNK_BYTES // (nwords * 8))
    buf = np.zeros((rows, nwords * 8), dtype=np.uint8)
    sub = max(1, _CACHE_BYTES // (nwords * 8))
    tmp = np.empty((sub, nwords), dtype=np.uint64)
    cnt = np.empty((sub, nwords), dtype=np.uint8)

    def flush(filled: int) -> None:
        raw = buf[:filled, :nbytes]
        words = buf[:filled].view(np.uint64)
        sums = np.zeros((c, filled), dtype=np.int64)
        # A few rows at a time, so that they stay in cache across every plane of every column.
        for lo in range(0, filled, sub):
            hi = min(filled, lo + sub)
            w, t, k = words[lo:hi], tmp[: hi - lo], cnt[: hi - lo]
            for j, pl in enumerate(planes):
                acc = sums[j, lo:hi]
                for b in range(len(pl.masks)):
                    acc += _popcount_rows(w, pl.masks[b], t, k) << b
                acc -= pl.offset * _popcount_rows(w, pl.valid, t, k)
        for j, pl in enumerate(planes):
            null = (total_d[j] - 2.0 * pl.scale * sums[j].astype(np.float64)) / n
            # Rounding of either computation stays far below gamma / 2; the planes' own error is slack.
            margin = pl.slack + 0.5 * float(gamma[j])
            unsure = (np.abs(null - hi_thr[j]) <= margin) | (np.abs(null - lo_thr[j]) <= margin)
            if unsure.any():
                null[unsure] = _float_nulls(raw[unsure], d[:, j : j + 1], total_d[j : j + 1])[:, 0]
            le[j] += int((null <= hi_thr[j]).sum())
            ge[j] += int((null >= lo_thr[j]).sum())

    filled = 0
    for raw in blocks:
        size = len(raw)
        if filled + size > rows:
            flush(filled)
            filled = 0
        buf[filled : filled + size, :nbytes] = raw
        filled += size
    if filled:
        flush(filled)
    return le, ge


def permutation_tests(
    differences: npt.ArrayLike,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    alternative: Alternative = "two-sided",
) -> list[PairedTestResult]:
    """The paired randomization test on each column of ``differences`` (rows are queries).

    All columns share the same sign flips; each column's result equals :func:`permutation_test` on it.
    The flips are generated a block at a time, so memory stays bounded (a few MB) at any size.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.array([[0.3, 0.0], [0.1, 0.0], [0.2, 0.0], [0.4, 0.0]])
    >>> [(r.pvalue, r.method) for r in permutation_tests(d)]
    [(0.125, 'exact'), (1.0, 'exact')]
    """
    d = _matrix(differences, "differences")
    _check_resamples(n_resamples)
    _check_choice(alternative, _ALTERNATIVES, "alternative")
    n, c = d.shape
    if n == 0:
        raise InputError("differences: expected values for at least one query, found none")
    observed = _col_means(d)
    total_d = np.ascontiguousarray(d.T).sum(axis=1)
    # Null values that equal the observed one in exact arithmetic can differ from it by rounding; count
    # them as equal (scipy uses 100 eps |observed|; the rounding scales with the |d|, so we use both).
    gamma = 100 * np.finfo(np.float64).eps * (np.abs(observed) + np.abs(d).mean(axis=0))
    exact = n < 63 and (1 << n) <= n_resamples
    if exact:
        total = 1 << n
        le = np.zeros(c)
        ge = np.zeros(c)
        for flips in _exact_flip_blocks(n):
            null = (total_d - 2.0 * (flips @ d)) / n
            le += (null <= observed + gamma).sum(axis=0)
            ge += (null >= observed - gamma).sum(axis=0)
    else:
        total = n_resamples
        le, ge = _count_tails(d, total_d, observed, gamma, n_resamples, seed)
    p = _tail_pvalues(le, ge, float(total), alternative, 0.0 if exact else 1.0)
    method = "exact" if exact else "monte-carlo"
    return [PairedTestResult("permutation", float(observed[j]), float(p[j]), n, method, alternative) for j in range(c)]


def permutation_test(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
    alternative: Alternative = "two-sided",
) -> PairedTestResult:
    """Paired randomization test of ``mean(a - b) = 0``: randomly swap each query's two values.

    Under the null hypothesis the two systems are exchangeable on every query, so each difference
    keeps or flips its sign with probability 1/2. Exact (all ``2**n`` flips) when ``2**n <=
    n_resamples``; otherwise ``n_resamples`` random flips and p = (count + 1) / (n_resamples + 1).
    Two-sided p is twice the smaller one-sided p, capped at 1 -- as
    ``scipy.stats.permutation_test((a, b), mean_diff, permutation_type="samples")``.

    Parameters
    ----------
    a, b:
        ``(n_queries,)`` values of two systems on the same queries, in the same order.
    n_resamples:
        Random sign flips (also the limit for exact enumeration).
    seed:
        Seed of the flips.
    alternative:
        ``"two-sided"``, ``"greater"`` (a better) or ``"less"``.

    Returns
    -------
    PairedTestResult
        ``statistic`` is ``mean(a - b)``. All-zero differences give p = 1.

    Examples
    --------
    >>> r = permutation_test([0.9, 0.8, 0.7, 0.6, 0.5], [0.1, 0.2, 0.3, 0.4, 0.5])
    >>> round(r.statistic, 2), r.pvalue, r.method
    (0.4, 0.125, 'exact')
    """
    d = _pair(a, b)
    return permutation_tests(d[:, None], n_resamples=n_resamples, seed=seed, alternative=alternative)[0]


def paired_t_test(a: npt.ArrayLike, b: npt.ArrayLike, *, alternative: Alternative = "two-sided") -> PairedTestResult:
    """Paired t-test of ``mean(a - b) = 0``, as :func:`scipy.stats.ttest_rel`.

    With every difference equal the t statistic is undefined; p is 1 when they are all zero, and 0 when
    they are all the same non-zero value (t is infinite). Fewer than 2 queries give NaN.

    Examples
    --------
    >>> r = paired_t_test([0.9, 0.8, 0.7, 0.9], [0.5, 0.7, 0.6, 0.6])
    >>> round(r.statistic, 4), round(r.pvalue, 4)
    (3.0, 0.0577)
    """
    _check_choice(alternative, _ALTERNATIVES, "alternative")
    d = _pair(a, b)
    n = len(d)
    if n < 2:
        return PairedTestResult("t", math.nan, math.nan, n, "t", alternative)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        if mean == 0.0:
            return PairedTestResult("t", 0.0, 1.0, n, "t", alternative)
        t = math.copysign(math.inf, mean)
    else:
        t = mean / (sd / math.sqrt(n))
    df = float(n - 1)
    if alternative == "greater":
        p = _t_sf(t, df)
    elif alternative == "less":
        p = _t_sf(-t, df)
    else:
        p = min(1.0, 2.0 * _t_sf(abs(t), df))
    return PairedTestResult("t", t, p, n, "t", alternative)


def _average_ranks(x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """1-based average ranks of ``x`` and the size of each group of ties."""
    n = len(x)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    sizes = np.diff(np.r_[starts, n])
    avg = starts + (sizes + 1) / 2.0
    ranks = np.empty(n)
    ranks[order] = np.repeat(avg, sizes)
    return ranks, sizes.astype(np.float64)


def _snap_ties(d: FloatArray, tol: float) -> FloatArray:
    """``d`` with |d| <= tol set to 0 and each run of |d| values less than ``tol`` apart set to its smallest.

    Runs are chained: sorted values each within ``tol`` of the next form one tie group.
    """
    out = np.where(np.abs(d) <= tol, 0.0, d)
    mag = np.abs(out)
    order = np.argsort(mag, kind="stable")
    ms = mag[order]
    starts = np.r_[True, np.diff(ms) > tol]
    snapped = ms[np.flatnonzero(starts)[np.cumsum(starts) - 1]]
    res = np.empty_like(out)
    res[order] = snapped * np.sign(out[order])
    return res


def _signed_rank_exact(ranks: FloatArray, observed: float, alternative: str) -> float:
    """Exact p of the signed-rank sum ``observed`` (over ``ranks``, each added with probability 1/2).

    Ranks are multiples of 1/2 (average ranks of ties), so doubled they are integers and the null
    distribution is a convolution over at most n(n+1) + 1 integer sums.
    """
    doubled = np.rint(2.0 * ranks).astype(np.int64)
    size = int(doubled.sum()) + 1
    prob = np.zeros(size)
    prob[0] = 1.0
    for r in doubled.tolist():
        shifted = np.zeros(size)
        shifted[r:] = prob[: size - r]
        prob = 0.5 * (prob + shifted)
    obs = 2.0 * observed
    cdf = float(prob[: math.floor(obs + 1e-9) + 1].sum())  # P(S <= observed)
    sf = float(prob[math.ceil(obs - 1e-9) :].sum())  # P(S >= observed)
    if alternative == "less":
        return min(1.0, cdf)
    if alternative == "greater":
        return min(1.0, sf)
    return min(1.0, 2.0 * min(cdf, sf))


def wilcoxon_test(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    zero_method: ZeroMethod = "wilcox",
    method: Literal["auto", "exact", "asymptotic"] = "auto",
    correction: bool = False,
    alternative: Alternative = "two-sided",
) -> PairedTestResult:
    """Wilcoxon signed-rank test of the differences ``a - b``.

    Zero differences (both systems score the same on a query -- common with ranking metrics):

    * ``"wilcox"`` (default, as scipy): dropped before ranking; ``n`` counts the rest.
    * ``"pratt"``: ranked with the others, then dropped (their ranks count in neither sum).
    * ``"zsplit"``: ranked, and each zero's rank split half to R+ and half to R-.

    Differences equal to within floating-point noise are equal: two ``|d|`` within ``tol`` of each
    other (runs of them, chained) are one group of ties, and ``|d| <= tol`` is a zero, where ``tol =``
    :data:`WILCOXON_TIE_RTOL` ``* max(|a|, |b|)`` -- 1e-9 of the largest value, ~10^7 times the rounding
    of one subtraction and far below any real difference between metric values (0.6 - 0.4 and 0.2
    differ by 5.6e-17 and tie; scipy ranks them apart). On values without such noise the result is
    scipy's.

    Ties among ``|d|`` get average ranks. ``method="exact"`` uses the exact permutation distribution
    of R+ given those ranks (ties and zeros included), computed by convolution -- what scipy computes
    as ``method="exact"`` without ties and as its permutation method with them. ``"asymptotic"`` is
    the normal approximation with the tie correction (and, with ``correction=True``, the continuity
    correction), identical to scipy's. ``"auto"`` is exact up to 50 non-zero differences and
    asymptotic beyond; scipy's ``"auto"`` differs only for 14-50 differences with ties or zeros,
    where it falls back to the normal approximation while we keep the exact distribution.
    No non-zero difference at all gives p = 1 (scipy gives NaN).

    Examples
    --------
    >>> r = wilcoxon_test([0.9, 0.8, 0.7, 0.9, 0.6, 1.0], [0.5, 0.7, 0.75, 0.6, 0.3, 0.6])
    >>> r.statistic, round(r.pvalue, 4), r.method
    (1.0, 0.0625, 'exact')
    """
    _check_choice(alternative, _ALTERNATIVES, "alternative")
    _check_choice(zero_method, ("wilcox", "pratt", "zsplit"), "zero_method")
    _check_choice(method, ("auto", "exact", "asymptotic"), "method")
    x, y = _vector(a, "a"), _vector(b, "b")
    d = _pair(x, y)
    scale = max(float(np.abs(x).max(initial=0.0)), float(np.abs(y).max(initial=0.0)))
    d = _snap_ties(d, WILCOXON_TIE_RTOL * scale)
    if zero_method == "wilcox":
        d = d[d != 0.0]
    nonzero = d != 0.0
    n_nonzero = int(nonzero.sum())
    n_used = len(d) if zero_method != "pratt" else n_nonzero
    if n_nonzero == 0:
        return PairedTestResult("wilcoxon", 0.0, 1.0, n_used, "exact", alternative)
    ranks, ties = _average_ranks(np.abs(d))
    r_plus = float(ranks[d > 0].sum())
    r_minus = float(ranks[d < 0].sum())
    if zero_method == "zsplit":
        half_zero = float(ranks[~nonzero].sum()) / 2.0
        r_plus += half_zero
        r_minus += half_zero
    statistic = min(r_plus, r_minus) if alternative == "two-sided" else r_plus
    if method == "auto":
        method = "exact" if n_nonzero <= _WILCOXON_EXACT_MAX else "asymptotic"
    if method == "exact":
        if n_nonzero > _WILCOXON_EXACT_LIMIT:
            raise InputError(
                f"wilcoxon_test: method='exact' is limited to {_WILCOXON_EXACT_LIMIT} non-zero differences, "
                f"found {n_nonzero}; use method='asymptotic'"
            )
        plus_nonzero = float(ranks[d > 0].sum())
        p = _signed_rank_exact(ranks[nonzero], plus_nonzero, alternative)
        return PairedTestResult("wilcoxon", statistic, p, n_used, "exact", alternative)
    count = float(len(d))
    mean = count * (count + 1.0) / 4.0
    var = count * (count + 1.0) * (2.0 * count + 1.0)
    if zero_method == "pratt":
        n_zero = float(len(d) - n_nonzero)
        mean -= n_zero * (n_zero + 1.0) / 4.0
        var -= n_zero * (n_zero + 1.0) * (2.0 * n_zero + 1.0)
        if n_zero:  # the zeros form one tie group, which no longer counts
            ties = ties[1:]
    se = math.sqrt((var - float((ties**3 - ties).sum()) / 2.0) / 24.0)
    z = (r_plus - mean) / se
    if correction:
        sign = {"greater": 1.0, "less": -1.0}.get(alternative, math.copysign(1.0, z) if z else 0.0)
        z -= sign * 0.5 / se
    if alternative == "greater":
        p = _norm_cdf(-z)
    elif alternative == "less":
        p = _norm_cdf(z)
    else:
        p = min(1.0, 2.0 * _norm_cdf(-abs(z)))
    return PairedTestResult("wilcoxon", statistic, p, n_used, "asymptotic", alternative)


def paired_test(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    test: TestName = "permutation",
    *,
    alternative: Alternative = "two-sided",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> PairedTestResult:
    """Run the paired test named ``test``: ``"permutation"`` (default), ``"t"`` or ``"wilcoxon"``.

    Examples
    --------
    >>> a, b = [0.9, 0.8, 0.7, 0.9, 0.6], [0.5, 0.7, 0.6, 0.6, 0.3]
    >>> [paired_test(a, b, t).test for t in ("permutation", "t", "wilcoxon")]
    ['permutation', 't', 'wilcoxon']
    """
    _check_choice(test, _TESTS, "test")
    if test == "t":
        return paired_t_test(a, b, alternative=alternative)
    if test == "wilcoxon":
        return wilcoxon_test(a, b, alternative=alternative)
    return permutation_test(a, b, n_resamples=n_resamples, seed=seed, alternative=alternative)


# --------------------------------------------------------------------------------------------------
# Multiple comparisons, effect size, power
# --------------------------------------------------------------------------------------------------


def holm(pvalues: npt.ArrayLike) -> FloatArray:
    """Holm's step-down adjustment of a family of p-values (controls the family-wise error rate).

    The i-th smallest of m p-values becomes ``max over j <= i of min(1, (m - j + 1) * p_(j))``.
    NaN p-values (tests that could not run) stay NaN and do not count in m.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, 0.005]).tolist()
    [0.03, 0.06, 0.06, 0.02]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise InputError(f"pvalues: expected a 1-D array, found shape {p.shape}")
    ok = ~np.isnan(p)
    if ((p[ok] < 0) | (p[ok] > 1)).any():
        raise InputError("pvalues: expected values between 0 and 1")
    out = np.full(len(p), np.nan)
    valid = np.flatnonzero(ok)
    m = len(valid)
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def paired_effect_size(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Cohen's d_z for paired values: ``mean(a - b) / sd(a - b)`` (sd with ddof=1).

    Rough reading: 0.2 small, 0.5 medium, 0.8 large. All-zero differences give 0; identical non-zero
    differences give +-inf; a single query gives NaN.

    Examples
    --------
    >>> paired_effect_size([0.9, 0.8, 0.7, 0.9], [0.5, 0.7, 0.6, 0.6])
    1.5
    """
    d = _pair(a, b)
    if len(d) < 2:
        return math.nan
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    return mean / sd


_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _nct_two_sided_power(crit: float, df: float, delta: float) -> float:
    """``P(T > crit) + P(T < -crit)`` for T noncentral t with ``df`` degrees of freedom and noncentrality delta.

    ``T = (Z + delta) / S`` with ``S = sqrt(V / df)``, V chi-square(df), so the probability is
    ``E[Phi(delta - crit S) + Phi(-delta - crit S)]``. The expectation is a trapezoid sum over
    ``y = log S``, where the density ``exp(df y - df e^(2y) / 2)`` (normalised numerically) is smooth
    and decays on both sides: the trapezoid rule then converges geometrically in the step. The step
    is 1/24 of the narrower of the density's width ``1/sqrt(2 df)`` and the integrand's ``1/delta``;
    the range covers ``e^-60`` of the density. Agrees with ``scipy.stats.nct`` to about 1e-10.
    """
    width = 1.0 / math.sqrt(2.0 * df)
    step = min(width, 1.0 / (abs(delta) + crit + 1.0)) / 24.0
    lo = -60.0 / df - 12.0 * width
    hi = 12.0 * width + 1.0 / df
    step = max(step, (hi - lo) / 40_000)  # beyond d sqrt(n) ~ 10^4 the power is 1 to the last bit anyway
    y = np.arange(lo, hi + step, step)
    log_w = df * y - 0.5 * df * np.expm1(2.0 * y)
    w = np.exp(log_w - log_w.max())
    sv = np.exp(y)
    upper = _ERFC((crit * sv - delta) / math.sqrt(2.0)).astype(np.float64)
    lower = _ERFC((crit * sv + delta) / math.sqrt(2.0)).astype(np.float64)
    return float(0.5 * ((upper + lower) * w).sum() / w.sum())


def paired_power(effect_size: float, n: int, *, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test at level ``alpha`` to detect ``effect_size`` (d_z) with n queries.

    Exact: ``P(|T| > c)`` for T noncentral t with n - 1 degrees of freedom and noncentrality
    ``d sqrt(n)``, c the test's critical value -- computed by quadrature in numpy (see
    ``_nct_two_sided_power``; within 1e-9 of :mod:`scipy.stats` ``nct`` over n = 3..10^4, d = 0..2 in
    the tests). The power of the default permutation test is close to it. A heuristic for "enough
    queries?", not a substitute for a planned study.

    Examples
    --------
    >>> round(paired_power(0.5, 34), 3)
    0.808
    >>> round(paired_power(0.1, 8), 3)
    0.057
    """
    _check_alpha(alpha)
    if n < 2 or math.isnan(effect_size):
        return math.nan
    if math.isinf(effect_size):
        return 1.0
    crit = _t_ppf_upper(alpha / 2.0, float(n - 1))
    return min(1.0, _nct_two_sided_power(crit, float(n - 1), abs(effect_size) * math.sqrt(n)))


_NOISE_EFFECT = 1e-9
_NORMAL_THEORY_ABOVE = 1e7


def queries_needed(effect_size: float, *, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Queries needed for a two-sided paired test to detect ``effect_size`` (d_z) with ``power``.

    The smallest n with :func:`paired_power` (the noncentral t) >= ``power``, searched from the
    normal-theory ``((z_(1-alpha/2) + z_power) / d)^2``; ``None`` when the effect is 0 or NaN.

    Examples
    --------
    >>> queries_needed(0.5), queries_needed(0.2), queries_needed(0.0), queries_needed(-6.65e-18)
    (34, 199, None, None)
    """
    _check_alpha(alpha)
    if not (0 < power < 1):
        raise InputError(f"power must be a number strictly between 0 and 1. Got {power!r} instead.")
    # an effect within floating-point noise of 0 (two runs with equal means: differences summing to 1e-16)
    # is no effect; its "queries needed" would be ~1e35, where the power quadrature no longer resolves
    if math.isnan(effect_size) or abs(effect_size) < _NOISE_EFFECT:
        return None
    if math.isinf(effect_size):
        return 2
    need = ((_norm_ppf(1.0 - alpha / 2.0) + _norm_ppf(power)) / abs(effect_size)) ** 2
    if need > _NORMAL_THEORY_ABOVE:  # the noncentral t equals the normal here to far below one query
        return math.ceil(need)
    n = max(2, math.ceil(need - 1e-9))
    while n > 2 and paired_power(effect_size, n - 1, alpha=alpha) >= power:
        n -= 1
    while paired_power(effect_size, n, alpha=alpha) < power:
        n += 1
    return n


def sample_size_warning(
    n: int,
    effect_size: float | None = None,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    min_queries: int = MIN_QUERIES,
) -> str | None:
    """A plain-language warning when ``n`` queries are too few, or ``None``.

    Warns when ``n < min_queries``, and -- given the observed effect size (d_z) of a difference -- when
    ``n`` queries give less than ``power`` to detect a difference that large (see :func:`paired_power`).

    Examples
    --------
    >>> print(sample_size_warning(50, 0.1))  # doctest: +NORMALIZE_WHITESPACE
    only 50 queries: a difference this size (d=0.10) is detected about 11% of the time at alpha=0.05; about 787
    queries would be needed for 80%
    >>> print(sample_size_warning(400, 0.5))
    None
    >>> sample_size_warning(4)
    'only 4 queries: too few for a reliable interval or test (fewer than 10)'
    """
    if n < min_queries:
        noun = "query" if n == 1 else "queries"
        return f"only {n} {noun}: too few for a reliable interval or test (fewer than {min_queries})"
    if effect_size is None or math.isnan(effect_size) or abs(effect_size) < _NOISE_EFFECT or math.isinf(effect_size):
        return None  # no difference (or one within floating-point noise of none): nothing to detect
    achieved = paired_power(effect_size, n, alpha=alpha)
    if achieved >= power:
        return None
    need = queries_needed(effect_size, alpha=alpha, power=power)
    return (
        f"only {n} queries: a difference this size (d={abs(effect_size):.2f}) is detected about {achieved:.0%} "
        f"of the time at alpha={alpha:g}; about {need} queries would be needed for {power:.0%}"
    )
