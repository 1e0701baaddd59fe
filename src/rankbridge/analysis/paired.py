"""The paired-comparison kernel: one run against a baseline, query by query, for compare and gate alike.

:func:`paired_differences` takes pairs of per-query columns (``a`` = the run, ``b`` = the baseline, NaN
where a side has no value: a failed RAGAS row) and gives, for each pair, over the queries both sides have a
value for: ``mean(a - b)`` with its confidence interval, the paired test, Cohen's d_z, the power to detect a
difference of that size, and the queries won, tied and lost (:data:`TIE_TOLERANCE` apart). Pairs over the
same queries share one bootstrap and one set of permutation sign flips; each result equals the one of that
pair alone. :func:`~rankbridge.analysis.compare` adds the multiple-comparison correction and its notes;
:func:`~rankbridge.analysis.gate` adds the drop threshold.

:func:`column_intervals` is the interval of each column's mean over its scored rows, shared the same way.
The statistics themselves are :mod:`rankbridge.metrics.stats` (pure numpy, checked against scipy).

Examples
--------
>>> import numpy as np
>>> a, b = np.array([1.0, 1.0, 0.5, np.nan]), np.array([0.5, 1.0, 0.5, 0.5])
>>> (pd,) = paired_differences([(a, b)], spans=[1.0], test="t")
>>> pd.difference.estimate, (pd.wins, pd.ties, pd.losses), pd.num_queries, pd.left_out
(0.16666666666666666, (1, 2, 0), 3, 1)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankbridge.evaluate import Evaluation
from rankbridge.metrics.stats import (
    CIMethod,
    Interval,
    PairedTestResult,
    TestName,
    confidence_intervals,
    paired_effect_size,
    paired_power,
    paired_test,
    permutation_tests,
)

__all__ = [
    "TIE_TOLERANCE",
    "PairedDifference",
    "column_intervals",
    "paired_differences",
    "unscored_reasons",
    "why_unscored",
]

#: Per-query differences smaller than this count as ties (metric values carry float rounding).
TIE_TOLERANCE = 1e-12


@dataclass(frozen=True)
class PairedDifference:
    """One run against the baseline on one column, over the queries both have a value for.

    Attributes
    ----------
    difference:
        ``mean(a - b)`` with its confidence interval (resampling queries, pairs kept), bounded by the
        column's span.
    test:
        The two-sided paired test of ``mean(a - b) = 0`` (NaN p-value when no query has both values).
    effect_size:
        Cohen's d_z (NaN below 2 queries).
    wins, ties, losses:
        Queries where ``a`` is higher than, within :data:`TIE_TOLERANCE` of, or lower than ``b``.
    run_mean, baseline_mean:
        The two means over the paired queries.
    num_queries:
        The paired queries (a value on both sides).
    left_out:
        Queries without a value on one side (or both).
    alpha:
        The significance level :attr:`power` is for.
    """

    difference: Interval
    test: PairedTestResult
    effect_size: float
    wins: int
    ties: int
    losses: int
    run_mean: float
    baseline_mean: float
    num_queries: int
    left_out: int
    alpha: float = 0.05

    @property
    def power(self) -> float:
        """Approximate power to detect a difference of this size with this many queries (computed on use)."""
        return paired_power(self.effect_size, self.num_queries, alpha=self.alpha)


def _mask_key(mask: np.ndarray) -> bytes:
    return np.packbits(mask).tobytes() + len(mask).to_bytes(8, "little")


def _groups(columns: Sequence[np.ndarray]) -> list[tuple[np.ndarray, list[int]]]:
    """Columns grouped by the rows where they are not NaN: ``(mask, column indices)``, first seen first."""
    groups: dict[bytes, tuple[np.ndarray, list[int]]] = {}
    for j, col in enumerate(columns):
        mask = ~np.isnan(col)
        groups.setdefault(_mask_key(mask), (mask, []))[1].append(j)
    return list(groups.values())


def column_intervals(
    columns: Sequence[np.ndarray],
    floor: Sequence[float],
    ceil: Sequence[float],
    *,
    level: float,
    method: CIMethod,
    n_resamples: int,
    seed: int,
) -> list[Interval]:
    """:func:`~rankbridge.metrics.stats.confidence_intervals` of every column, each over its rows that are not NaN.

    Columns with the same rows share one call (one bootstrap), so columns without NaN (every ranking metric)
    share their resamples; a column over fewer rows gets the interval
    :func:`~rankbridge.metrics.stats.confidence_interval` gives its scored values alone. No scored row: an
    interval of NaN with ``n=0`` and method ``"none"``. ``floor`` / ``ceil`` bound each column's mean.
    """
    out: list[Interval | None] = [None] * len(columns)
    for mask, cols in _groups(columns):
        if not mask.any():
            for j in cols:
                out[j] = Interval(math.nan, math.nan, math.nan, level, "none", 0)
            continue
        rows = slice(None) if mask.all() else mask
        matrix = np.column_stack([columns[j][rows] for j in cols])
        bounds = ([floor[j] for j in cols], [ceil[j] for j in cols])
        ivs = confidence_intervals(
            matrix, bounds=bounds, level=level, method=method, n_resamples=n_resamples, seed=seed
        )
        for j, iv in zip(cols, ivs, strict=True):
            out[j] = iv
    return [iv for iv in out if iv is not None]


def _tests(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]],
    diffs: Sequence[np.ndarray],
    test: TestName,
    n_resamples: int,
    seed: int,
) -> list[PairedTestResult]:
    """The paired test of every pair over its rows scored on both sides.

    Permutation tests of differences over the same rows share their sign flips
    (:func:`~rankbridge.metrics.stats.permutation_tests`); each result equals the test of that pair alone.
    The t and Wilcoxon tests get the two sides (Wilcoxon's tie tolerance scales with the values, not their
    differences). No row scored on both sides: a p-value of NaN.
    """
    out: list[PairedTestResult | None] = [None] * len(diffs)
    if test == "permutation":
        for mask, cols in _groups(diffs):
            if not mask.any():
                continue
            rows = slice(None) if mask.all() else mask
            matrix = np.column_stack([diffs[j][rows] for j in cols])
            for j, res in zip(cols, permutation_tests(matrix, n_resamples=n_resamples, seed=seed), strict=True):
                out[j] = res
    else:
        for j, ((a, b), d) in enumerate(zip(pairs, diffs, strict=True)):
            ok = ~np.isnan(d)
            if ok.any():
                out[j] = paired_test(a[ok], b[ok], test)
    return [
        res if res is not None else PairedTestResult(test, math.nan, math.nan, 0, "none", "two-sided") for res in out
    ]


def paired_differences(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]],
    spans: Sequence[float],
    *,
    test: TestName = "permutation",
    level: float = 0.95,
    ci: CIMethod = "auto",
    n_resamples: int = 10_000,
    seed: int = 0,
    alpha: float = 0.05,
    intervals: Sequence[Interval] | None = None,
) -> list[PairedDifference]:
    """Each ``(a, b)`` pair of per-query columns compared over the queries where neither is NaN.

    Parameters
    ----------
    pairs:
        ``(run values, baseline values)`` per comparison, aligned by query; NaN = no value.
    spans:
        Per pair, the widest a difference can be (``upper - lower`` of the column's bounds): the
        interval of the difference is clipped to ``[-span, span]``.
    test, level, ci, n_resamples, seed:
        The paired test and the interval (see :mod:`rankbridge.metrics.stats`); same seed, same numbers.
    alpha:
        For the power.
    intervals:
        The differences' intervals when the caller computed them already, in one :func:`column_intervals`
        call with other columns over the same queries (one bootstrap for all: :func:`compare` does so for
        the means and the differences).

    Returns
    -------
    list of PairedDifference
        One per pair, in order.
    """
    diffs = [a - b for a, b in pairs]
    if intervals is None:
        intervals = column_intervals(
            diffs, [-s for s in spans], list(spans), level=level, method=ci, n_resamples=n_resamples, seed=seed
        )
    tests = _tests(pairs, diffs, test, n_resamples, seed)
    out = []
    for (a, b), d_all, iv, res in zip(pairs, diffs, intervals, tests, strict=True):
        ok = ~np.isnan(d_all)
        d = d_all[ok]
        n = len(d)
        effect = paired_effect_size(a[ok], b[ok]) if n >= 2 else math.nan
        out.append(
            PairedDifference(
                difference=iv,
                test=res,
                effect_size=effect,
                wins=int(np.count_nonzero(d > TIE_TOLERANCE)),
                ties=int(np.count_nonzero(np.abs(d) <= TIE_TOLERANCE)),
                losses=int(np.count_nonzero(d < -TIE_TOLERANCE)),
                run_mean=float(a[ok].mean()) if n else math.nan,
                baseline_mean=float(b[ok].mean()) if n else math.nan,
                num_queries=n,
                left_out=len(d_all) - n,
                alpha=alpha,
            )
        )
    return out


# -- why a value is missing ------------------------------------------------------------------------------
def _failure_reasons(ev: Evaluation, column: str) -> Mapping[str, str]:
    """Query id -> why ``column`` has no value, as a RagasEvaluation records it (empty for others)."""
    failures: Any = getattr(ev, "failures", None)
    if isinstance(failures, Mapping):
        reasons = failures.get(column)
        if isinstance(reasons, Mapping):
            return reasons
    return {}


def why_unscored(ev: Evaluation, column: str, qid: str) -> str:
    """Why query ``qid`` has no value of ``column`` (the RAGAS failure, ``"retrieval failed"``, ``"not scored"``)."""
    reason = _failure_reasons(ev, column).get(qid)
    if reason:
        return reason
    if qid in ev.failed:
        return "retrieval failed"
    return "not scored"


def unscored_reasons(ev: Evaluation, column: str, qids: Sequence[str]) -> str:
    """``"2 error, 1 timeout"``: the kinds of failure of the given queries (the text before the colon)."""
    kinds: dict[str, int] = {}
    for qid in qids:
        kind = why_unscored(ev, column, qid).split(":", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
