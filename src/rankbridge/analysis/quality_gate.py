"""A quality gate for CI: fail when a metric dropped by more than a threshold *and* the drop is significant.

:func:`gate` compares a run with a baseline on the same queries. It fails only when both hold:

1. the mean of the metric dropped by more than ``max_drop`` (``baseline - run > max_drop``), and
2. a paired test on the per-query values (permutation by default, two-sided) finds the difference
   significant at ``alpha``.

A drop beyond the threshold that could be noise passes (with a note on how many queries it would take
to tell), and so does a significant drop smaller than the threshold: the threshold says how much you
care, the test says whether to believe it. The result carries the interval of the difference and a
plain explanation, and :func:`assert_retrieval_quality` raises it as an ``AssertionError`` for test
suites (see :mod:`rankbridge.pytest_plugin`).

The baseline may be an :class:`~rankbridge.Evaluation`, a :class:`~rankbridge.Run` (evaluated against
the same qrels), or the name of a record in a :class:`~rankbridge.RunStore` (its newest record with that
name). Per-query values pair up by query id; queries only one side has are left out and said so.

The metric may be a joined column of an :class:`~rankbridge.Evaluation`, such as ``"ragas.faithfulness"``
from :func:`rankbridge.integrations.ragas.join`: the paired test is then over the rows scored on both
sides, and the gate refuses (an :class:`~rankbridge.errors.InputError` naming the failures) when more
than ``max_unscored`` of the shared queries have no score on one side -- a verdict over the rest would be
about other questions than the ones asked.

Command line (exit codes: 0 passed, 1 failed, 2 bad input)::

    rankbridge gate --baseline main --store history.sqlite --qrels qrels.txt run.txt -m ndcg@10 --max-drop 0.01

Examples
--------
>>> import rankbridge as rb
>>> from rankbridge.analysis import gate
>>> qrels = {f"q{i}": {f"d{i}": 1} for i in range(12)}
>>> good = {f"q{i}": [f"d{i}", "x"] for i in range(12)}          # relevant doc first
>>> worse = {f"q{i}": ["x", f"d{i}"] for i in range(12)}         # relevant doc second
>>> result = gate(worse, good, qrels, metric="mrr@10", max_drop=0.05)
>>> result.passed, round(result.drop, 4), result.significant
(False, 0.5, True)
>>> print(result.headline())
FAIL mrr@10: 0.5000 vs baseline 1.0000, change -0.5000 [95% CI -0.5000, -0.5000]
>>> gate(good, good, qrels, metric="mrr@10", max_drop=0.05).passed
True
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rankbridge._numbers import JsonFields, fmt_number, fmt_p
from rankbridge.analysis.paired import paired_differences, unscored_reasons
from rankbridge.errors import InputError
from rankbridge.evaluate import Evaluation, evaluate
from rankbridge.io import load_run
from rankbridge.metrics.measures import column_facts, column_name
from rankbridge.metrics.stats import (
    _TESTS,
    MIN_QUERIES,
    CIMethod,
    Interval,
    PairedTestResult,
    TestName,
    _check_alpha,
    _check_choice,
    confidence_interval,
    sample_size_warning,
)
from rankbridge.types import GoldenSet, Qrels, Run

if TYPE_CHECKING:
    from rankbridge.store import RunStore

__all__ = ["EXIT_FAILED", "EXIT_PASSED", "GateResult", "assert_retrieval_quality", "gate"]

#: Exit code of ``rankbridge gate`` when every gate passed.
EXIT_PASSED = 0
#: Exit code of ``rankbridge gate`` when a gate failed (2 is bad input, as for every command).
EXIT_FAILED = 1

QrelsLike = Qrels | Mapping[str, Mapping[str, int]] | GoldenSet
RunOrEvaluation = Run | Mapping[str, Any] | Evaluation
Mismatch = Literal["intersect", "error"]


@dataclass(frozen=True)
class GateResult(JsonFields):
    """The verdict of :func:`gate`: pure data, printable, JSON-ready; truthy when the gate passed.

    Attributes
    ----------
    passed:
        False only when the mean dropped by more than ``max_drop`` and the drop is significant.
    metric:
        Canonical metric name.
    run, baseline:
        Names of the two sides (``baseline`` says which store record, when it came from one).
    run_mean, baseline_mean:
        Means over the paired queries.
    difference:
        ``mean(run - baseline)`` with its confidence interval (resampling queries, pairs kept).
    test:
        The paired test of ``mean(run - baseline) = 0`` (two-sided).
    max_drop, alpha:
        The threshold and the significance level.
    num_queries:
        Queries the comparison is over (both sides have a value).
    wins, ties, losses:
        Queries where the run scores higher than, the same as, or lower than the baseline.
    effect_size:
        Cohen's d_z of the per-query differences.
    notes:
        Everything worth knowing that is not the verdict: queries left out, failed retrievals or RAGAS
        rows, too few queries for a reliable test.
    higher_is_better:
        The metric's direction (from :func:`rankbridge.metrics.measures.column_facts`); for a metric where
        lower is better, the "drop" is a rise.
    left_out:
        Shared queries without a value on one side (failed RAGAS rows), not in the test.
    """

    passed: bool
    metric: str
    run: str
    baseline: str
    run_mean: float
    baseline_mean: float
    difference: Interval
    test: PairedTestResult
    max_drop: float
    alpha: float
    num_queries: int
    wins: int
    ties: int
    losses: int
    effect_size: float
    notes: tuple[str, ...] = field(default=())
    higher_is_better: bool = True
    left_out: int = 0

    def __bool__(self) -> bool:
        return self.passed

    @property
    def drop(self) -> float:
        """How much worse the run is: ``baseline_mean - run_mean`` (the reverse where lower is better);
        negative when the run improved."""
        return -self.difference.estimate if self.higher_is_better else self.difference.estimate

    @property
    def pvalue(self) -> float:
        """The paired test's p-value."""
        return self.test.pvalue

    @property
    def significant(self) -> bool:
        """Whether the difference is significant at ``alpha`` (a NaN p-value, from too few queries, is not)."""
        return bool(self.test.pvalue < self.alpha)

    @property
    def exit_code(self) -> int:
        """:data:`EXIT_PASSED` (0) or :data:`EXIT_FAILED` (1)."""
        return EXIT_PASSED if self.passed else EXIT_FAILED

    def headline(self) -> str:
        """One line: verdict, means, change and its interval."""
        iv = self.difference
        level = f"{iv.level:.0%}"
        return (
            f"{'PASS' if self.passed else 'FAIL'} {self.metric}: {fmt_number(self.run_mean)} vs baseline "
            f"{fmt_number(self.baseline_mean)}, change {fmt_number(iv.estimate, sign=True)} "
            f"[{level} CI {fmt_number(iv.low, sign=True)}, {fmt_number(iv.high, sign=True)}]"
        )

    def explanation(self) -> str:
        """Why the gate passed or failed, in plain words."""
        p = f"p={fmt_p(self.pvalue)}, {self.test.test} test, {self.num_queries} queries"
        limit = f"the allowed drop of {self.max_drop:.4f}"
        if self.drop <= self.max_drop:
            if self.drop <= 0:
                what = "did not drop" if self.drop == 0 else f"improved by {-self.drop:.4f}"
                return f"{self.run!r} {what} against {self.baseline!r} ({p}): passed."
            return f"the drop of {self.drop:.4f} is within {limit} ({p}): passed."
        if not self.significant:
            why = "too few queries to test" if math.isnan(self.pvalue) else f"not significant at alpha={self.alpha:g}"
            return (
                f"the drop of {self.drop:.4f} exceeds {limit} but is {why} ({p}): it may be noise, so the gate "
                "passed. More queries would tell."
            )
        return (
            f"the drop of {self.drop:.4f} exceeds {limit} and is significant (p={fmt_p(self.pvalue)} < "
            f"alpha={self.alpha:g}, {self.test.test} test over {self.num_queries} queries; {self.losses} worse, "
            f"{self.wins} better): failed."
        )

    def __str__(self) -> str:
        lines = [self.headline(), f"  {self.explanation()}"]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    _json_keys = (
        "passed",
        "metric",
        "run",
        "baseline",
        "run_mean",
        "baseline_mean",
        "drop",
        "max_drop",
        "alpha",
        "difference",
        "test",
        "significant",
        "num_queries",
        "wins",
        "ties",
        "losses",
        "effect_size",
        "higher_is_better",
        "left_out",
        "explanation",
        "notes",
    )

    def _json_extra(self) -> dict[str, Any]:
        # the threshold as the caller gave it (max_drop=0 stays 0), and the verdict in words
        return {"max_drop": self.max_drop, "explanation": self.explanation()}


# -- inputs ------------------------------------------------------------------------------------------
#: The largest share of shared queries a metric may lack a value for on either side (failed RAGAS rows).
MAX_UNSCORED = 0.2
#: The numbers of a :class:`GateResult` that are the kernel's as they are (a
#: :class:`~rankbridge.analysis.paired.PairedDifference`); the gate adds the threshold and the verdict.
_FROM_KERNEL = ("run_mean", "baseline_mean", "difference", "test", "wins", "ties", "losses", "effect_size")


def _qrels_of(qrels: QrelsLike | None) -> Qrels | Mapping[str, Mapping[str, int]] | None:
    return qrels.qrels if isinstance(qrels, GoldenSet) else qrels


def _evaluation_of(
    side: str, value: RunOrEvaluation, qrels: Qrels | Mapping[str, Mapping[str, int]] | None, metric: str
) -> Evaluation:
    if isinstance(value, Evaluation):
        return value
    if not isinstance(value, (Run, Mapping)):
        raise InputError(
            f"{side}: expected a Run, a {{qid: ranking}} dict or an Evaluation, got {type(value).__name__}"
        )
    if column_facts(metric).source != "ranking":
        raise InputError(
            f"{side}: {metric} cannot be computed from a run; pass an Evaluation that has it, e.g. "
            "rankbridge.integrations.ragas.join(evaluate(golden, run, metrics), evaluate_ragas(run, golden, ...))"
        )
    if qrels is None:
        raise InputError(f"{side}: qrels are needed to evaluate a run (or pass an Evaluation)")
    return evaluate(qrels, value, [metric], missing="zero")


def _values(side: str, ev: Evaluation, metric: str) -> dict[str, float]:
    try:
        values = ev[metric]
    except (KeyError, InputError):
        raise InputError(f"{side}: has no values for {metric}; it has {', '.join(ev.values) or 'no metrics'}") from None
    return dict(zip(ev.query_ids, np.asarray(values, dtype=np.float64).tolist(), strict=True))


def _open_store(store: RunStore | str | os.PathLike[str] | None) -> tuple[RunStore, bool]:
    # lazy: the run history (sqlite3, threads) loads only for a baseline given by name, not on `import rankbridge`
    from rankbridge.store import DEFAULT_STORE_PATH, RunStore

    if isinstance(store, RunStore):
        return store, False
    return RunStore(store if store is not None else DEFAULT_STORE_PATH, create=False), True


def _baseline_from_store(name: str, store: RunStore | str | os.PathLike[str] | None) -> tuple[Evaluation, str]:
    db, owned = _open_store(store)
    try:
        record = db.latest(name)
        if record is None:
            names = sorted({r.name for r in db.list()})
            known = f"names in it: {', '.join(names)}" if names else "it is empty"
            raise InputError(
                f"baseline: no record named {name!r} in {db.path} ({known}); save one first, e.g. "
                f"`rankbridge gate ... --missing-baseline pass --save {name}`"
            )
        return db.load(record.id), f"{name} (record {record.id}, {record.timestamp:%Y-%m-%d %H:%M} UTC)"
    finally:
        if owned:
            db.close()


# -- the gate ------------------------------------------------------------------------------------------
def gate(
    run_or_evaluation: RunOrEvaluation,
    baseline: RunOrEvaluation | str | os.PathLike[str],
    qrels: QrelsLike | None = None,
    *,
    metric: str,
    max_drop: float = 0.0,
    alpha: float = 0.05,
    test: TestName = "permutation",
    store: RunStore | str | os.PathLike[str] | None = None,
    level: float = 0.95,
    ci: CIMethod = "auto",
    mismatch: Mismatch = "intersect",
    n_resamples: int = 10_000,
    seed: int = 0,
    max_unscored: float = MAX_UNSCORED,
) -> GateResult:
    """Fail when ``metric`` dropped by more than ``max_drop`` against ``baseline`` and the drop is significant.

    Parameters
    ----------
    run_or_evaluation:
        The candidate: a :class:`~rankbridge.Run`, a ``{qid: ranking}`` dict, or an
        :class:`~rankbridge.Evaluation` that has ``metric``.
    baseline:
        What to compare with: a Run / dict / Evaluation as above, the name (``str``) of a record in
        ``store`` (the newest with that name), or a path (``pathlib.Path``) to a run file.
    qrels:
        Judgments (or a :class:`~rankbridge.GoldenSet`) to evaluate runs with; unused for Evaluations.
        Runs are evaluated with ``missing="zero"``: a query without results (or whose retrieval failed)
        scores 0.
    metric:
        The metric gated on, e.g. ``"ndcg@10"``, or a joined column such as ``"ragas.faithfulness"`` (both
        sides must then be Evaluations that have it). Bounds and direction come from
        :func:`rankbridge.metrics.measures.column_facts`.
    max_drop:
        The largest drop of the mean (in the metric's units, e.g. 0.01 nDCG) that is accepted whatever
        the test says. ``0`` fails on any significant drop.
    alpha:
        Significance level of the two-sided paired test.
    test:
        ``"permutation"`` (default: assumes nothing about the shape of the differences), ``"t"`` or
        ``"wilcoxon"``.
    store:
        A :class:`~rankbridge.RunStore` or its path, for a baseline given by name (default
        :data:`rankbridge.store.DEFAULT_STORE_PATH`).
    level, ci:
        Confidence level and method of the interval of the difference (see :mod:`rankbridge.metrics.stats`).
    mismatch:
        Queries only one side has: ``"intersect"`` (default) compares the shared ones and says so in
        :attr:`GateResult.notes`; ``"error"`` refuses.
    n_resamples, seed:
        Resampling of the permutation test and the bootstrap interval; same seed, same answer.
    max_unscored:
        The largest share of the shared queries that may lack a value on one side (failed RAGAS rows);
        above it the gate refuses with an :class:`~rankbridge.errors.InputError` saying how many failed
        and why. At or below it they are left out of the test and counted in :attr:`GateResult.left_out`.

    Returns
    -------
    GateResult
        Truthy when the gate passed; ``str()`` gives the explanation.

    Raises
    ------
    InputError
        Bad arguments, an unknown baseline name, a metric one side lacks, no shared queries, or more than
        ``max_unscored`` of them without a value on one side.

    Examples
    --------
    >>> qrels = {f"q{i}": {"a": 1} for i in range(10)}
    >>> base = {f"q{i}": ["a"] for i in range(10)}
    >>> cand = {f"q{i}": ["a"] if i else ["x", "a"] for i in range(10)}   # one query got worse
    >>> r = gate(cand, base, qrels, metric="mrr", max_drop=0.01)
    >>> r.passed, r.drop, r.losses
    (True, 0.05, 1)
    >>> r.explanation()  # doctest: +ELLIPSIS
    'the drop of 0.0500 exceeds the allowed drop of 0.0100 but is not significant at alpha=0.05 ...'
    """
    _check_alpha(alpha)
    _check_choice(test, _TESTS, "test")
    _check_choice(mismatch, ("intersect", "error"), "mismatch")
    if isinstance(max_drop, bool) or not isinstance(max_drop, (int, float)) or not max_drop >= 0:
        raise InputError(f"max_drop must be a number >= 0. Got {max_drop!r} instead.")
    if isinstance(max_unscored, bool) or not isinstance(max_unscored, (int, float)) or not 0 <= max_unscored <= 1:
        raise InputError(f"max_unscored must be a number in [0, 1]. Got {max_unscored!r} instead.")
    canonical = column_name(metric)
    facts = column_facts(canonical)
    q = _qrels_of(qrels)

    base_label: str | None = None
    if isinstance(baseline, str):
        base_ev, base_label = _baseline_from_store(baseline, store)
    elif isinstance(baseline, os.PathLike):
        base_run = load_run(baseline)
        base_ev = _evaluation_of("baseline", base_run, q, canonical)
        base_label = str(baseline)
    else:
        base_ev = _evaluation_of("baseline", baseline, q, canonical)
    run_ev = _evaluation_of("run", run_or_evaluation, q, canonical)

    run_values = _values("run", run_ev, canonical)
    base_values = _values("baseline", base_ev, canonical)
    notes: list[str] = []
    only_run = sorted(set(run_values) - set(base_values))
    only_base = sorted(set(base_values) - set(run_values))
    if (only_run or only_base) and mismatch == "error":
        raise InputError(
            f"run and baseline are over different queries: {len(only_run)} only in the run, {len(only_base)} "
            "only in the baseline; pass mismatch='intersect' to compare the shared ones"
        )
    if only_run:
        notes.append(f"{len(only_run)} queries only in the run were left out (e.g. {only_run[0]!r})")
    if only_base:
        notes.append(f"{len(only_base)} queries only in the baseline were left out (e.g. {only_base[0]!r})")
    shared = [qid for qid in run_values if qid in base_values]
    keep = [qid for qid in shared if math.isfinite(run_values[qid]) and math.isfinite(base_values[qid])]
    left_out = len(shared) - len(keep)
    if left_out:
        why = _unscored_detail(canonical, shared, run_values, base_values, run_ev, base_ev)
        if shared and left_out / len(shared) > max_unscored:
            raise InputError(
                f"gate on {canonical}: {left_out} of {len(shared)} shared queries ({left_out / len(shared):.0%}) have "
                f"no value on one side ({why}), more than max_unscored={max_unscored:g}: a verdict over the other "
                f"{len(keep)} would be about different questions. Fix the failures (RagasEvaluation.failures "
                "says why each row was not scored) or raise max_unscored"
            )
        notes.append(
            f"{left_out} of {len(shared)} queries without a value on one side were left out ({why}); "
            f"the test of {canonical} is over the {len(keep)} scored on both"
        )
    if not keep:
        raise InputError(f"run and baseline share no query with a value of {canonical}: nothing to compare")
    if run_ev.failed:
        notes.append(f"{len(run_ev.failed)} queries failed in the run and score 0 (e.g. {run_ev.failed[0]!r})")
    if run_ev.missing:
        verb = "score 0" if run_ev.missing_policy == "zero" else "are not scored"
        notes.append(f"{len(run_ev.missing)} queries are missing from the run and {verb}")
    notes.extend(run_ev.notes)

    a = np.array([run_values[qid] for qid in keep])
    b = np.array([base_values[qid] for qid in keep])
    (pd,) = paired_differences(
        [(a, b)], [facts.span], test=test, level=level, ci=ci, n_resamples=n_resamples, seed=seed, alpha=alpha
    )
    drop = -pd.difference.estimate if facts.higher_is_better else pd.difference.estimate
    significant = bool(pd.test.pvalue < alpha)
    passed = not (drop > max_drop and significant)
    if drop > max_drop and not significant:
        warning = sample_size_warning(len(keep), pd.effect_size, alpha=alpha)
        if warning:
            notes.append(warning)
    elif len(keep) < MIN_QUERIES:
        warning = sample_size_warning(len(keep))
        if warning:
            notes.append(warning)
    return GateResult(
        passed=passed,
        metric=canonical,
        run=run_ev.run_name,
        baseline=base_label or base_ev.run_name,
        max_drop=float(max_drop),
        alpha=float(alpha),
        num_queries=len(keep),
        notes=tuple(notes),
        higher_is_better=facts.higher_is_better,
        left_out=left_out,
        **{name: getattr(pd, name) for name in _FROM_KERNEL},
    )


def _unscored_detail(
    metric: str,
    shared: list[str],
    run_values: Mapping[str, float],
    base_values: Mapping[str, float],
    run_ev: Evaluation,
    base_ev: Evaluation,
) -> str:
    """``"run: 3 (2 error, 1 timeout); baseline: 1 (1 not scored)"`` for the shared queries without a value."""
    parts = []
    for side, values, ev in (("run", run_values, run_ev), ("baseline", base_values, base_ev)):
        qids = [q for q in shared if not math.isfinite(values[q])]
        if qids:
            parts.append(f"{side}: {len(qids)} ({unscored_reasons(ev, metric, qids)})")
    return "; ".join(parts)


def assert_retrieval_quality(
    run: RunOrEvaluation,
    qrels: QrelsLike | None = None,
    *,
    metric: str,
    min_value: float | None = None,
    baseline: RunOrEvaluation | str | os.PathLike[str] | None = None,
    max_drop: float | None = None,
    alpha: float = 0.05,
    test: TestName = "permutation",
    store: RunStore | str | os.PathLike[str] | None = None,
    level: float = 0.95,
    seed: int = 0,
) -> Evaluation:
    """Assert that a run is good enough; raise ``AssertionError`` with a readable message otherwise.

    Two checks, either or both:

    * ``min_value``: the mean of ``metric`` must be at least ``min_value``;
    * ``baseline`` (with ``max_drop``, default 0): :func:`gate` must pass -- no drop larger than
      ``max_drop`` that is also statistically significant.

    The message gives the mean with its confidence interval, and for a baseline the change with its
    interval and p-value. Works in any test framework; :mod:`rankbridge.pytest_plugin` adds a fixture.

    Returns
    -------
    Evaluation
        The run's evaluation on ``metric``, for further checks.

    Examples
    --------
    >>> qrels = {f"q{i}": {"a": 1} for i in range(8)}
    >>> ev = assert_retrieval_quality({f"q{i}": ["a"] for i in range(8)}, qrels, metric="mrr", min_value=0.9)
    >>> ev.mean
    {'mrr': 1.0}
    >>> half = {f"q{i}": ["a"] if i % 2 else ["x", "y", "z"] for i in range(8)}
    >>> assert_retrieval_quality(half, qrels, metric="mrr", min_value=0.9)
    Traceback (most recent call last):
    ...
    AssertionError: mrr = 0.5000 [95% CI 0.0531, 0.9469] over 8 queries, below the required 0.9000 (run 'run')
    """
    if min_value is None and baseline is None:
        raise InputError("assert_retrieval_quality: give min_value, or a baseline (with max_drop), or both")
    if max_drop is not None and baseline is None:
        raise InputError("assert_retrieval_quality: max_drop needs a baseline")
    canonical = column_name(metric)
    ev = _evaluation_of("run", run, _qrels_of(qrels), canonical)
    values = np.asarray(ev[canonical], dtype=np.float64)
    values = values[np.isfinite(values)]
    problems: list[str] = []
    if min_value is not None:
        if not len(values):
            problems.append(f"{canonical}: no query has a value (run {ev.run_name!r})")
        else:
            iv = confidence_interval(values, level=level, seed=seed, bounds=column_facts(canonical).bounds)
            mean = float(values.mean())
            if not mean >= min_value:
                ci = f"{iv.level:.0%} CI {fmt_number(iv.low)}, {fmt_number(iv.high)}"
                problems.append(
                    f"{canonical} = {fmt_number(mean)} [{ci}] over {len(values)} queries, below the required "
                    f"{min_value:.4f} (run {ev.run_name!r})"
                )
    if baseline is not None:
        result = gate(
            ev,
            baseline,
            qrels,
            metric=canonical,
            max_drop=0.0 if max_drop is None else max_drop,
            alpha=alpha,
            test=test,
            store=store,
            level=level,
            seed=seed,
        )
        if not result.passed:
            problems.append(str(result))
    if problems:
        raise AssertionError("\n".join(problems))
    return ev
