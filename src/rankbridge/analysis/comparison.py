"""Compare retrieval strategies on the same queries: intervals and paired tests per metric.

* :func:`compare` evaluates several runs against one set of qrels and, per metric, gives every run's
  mean with a confidence interval and every run's paired difference to a baseline with its interval, a
  significance test (permutation by default), a Holm-adjusted p-value, an effect size and per-query
  wins/ties/losses, plus a warning when the queries are too few to detect a difference of the size seen.

The paired numbers come from the kernel in :mod:`rankbridge.analysis.paired` (shared with the gate); all
randomness is seeded: the same inputs and ``seed`` give the same numbers. The statistics live in
:mod:`rankbridge.metrics.stats` (pure numpy, checked against scipy in the tests).

Examples
--------
>>> import rankbridge as rb
>>> from rankbridge.analysis import compare
>>> qrels = {f"q{i}": {f"d{i}": 1} for i in range(12)}
>>> bm25 = {f"q{i}": {f"d{i}": 0.5, "x": 0.9} for i in range(12)}    # relevant doc at rank 2
>>> dense = {f"q{i}": {f"d{i}": 0.9, "x": 0.5} for i in range(12)}   # relevant doc at rank 1
>>> result = compare({"bm25": bm25, "dense": dense}, qrels, ["mrr@10"], baseline="bm25")
>>> pc = result.paired["mrr@10"]["dense"]
>>> pc.difference.estimate, (pc.wins, pc.ties, pc.losses), pc.test.pvalue < 0.05
(0.5, (12, 0, 0), True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rankbridge._numbers import JsonFields, fmt_ci, fmt_number, fmt_p, json_float, text_rows
from rankbridge.analysis.paired import (
    TIE_TOLERANCE,
    PairedDifference,
    column_intervals,
    paired_differences,
    unscored_reasons,
    why_unscored,
)
from rankbridge.analysis.slicing import SliceTable, slices
from rankbridge.errors import InputError
from rankbridge.evaluate import Evaluation, _import_pandas, evaluate
from rankbridge.metrics.measures import (
    ColumnFacts,
    Measure,
    column_facts,
    column_name,
    is_joined_column,
    parse_measure,
    parse_measures,
)
from rankbridge.metrics.stats import (
    _TESTS,
    MIN_QUERIES,
    CIMethod,
    Interval,
    PairedTestResult,
    TestName,
    _check_alpha,
    _check_choice,
    holm,
    sample_size_warning,
)
from rankbridge.types import GoldenSet, Qrels, Query, Run

if TYPE_CHECKING:  # pragma: no cover
    from rankbridge.reports import Report

__all__ = ["TIE_TOLERANCE", "Comparison", "PairedComparison", "QueryRow", "compare"]

RunLike = Run | Mapping[str, Any] | Evaluation
#: A joined column's values may sit this far outside its bounds (float rounding) before it is an error.
_BOUND_SLACK = 1e-9
#: The numbers of a :class:`PairedComparison` that are the kernel's as they are (a
#: :class:`~rankbridge.analysis.paired.PairedDifference`); :func:`compare` adds the correction and the warning.
_FROM_KERNEL = (
    "baseline_mean",
    "difference",
    "test",
    "effect_size",
    "wins",
    "ties",
    "losses",
    "power",
    "num_queries",
    "left_out",
)


@dataclass(frozen=True)
class PairedComparison(JsonFields):
    """One run against the baseline on one metric, over the same queries.

    Attributes
    ----------
    metric, run, baseline:
        What was compared.
    baseline_mean:
        The baseline's mean, for relative changes.
    difference:
        ``mean(run - baseline)`` over queries, with its interval (resampling queries, pairs kept).
    test:
        The paired test's result (raw p-value in ``test.pvalue``).
    pvalue_adjusted:
        The p-value after the multiple-comparison correction (Holm by default).
    effect_size:
        Cohen's d_z, ``mean(d) / sd(d)``.
    wins, ties, losses:
        Queries where the run scores higher than, the same as, or lower than the baseline.
    power:
        Approximate power to detect a difference of the observed size with this many queries.
    warning:
        Set when the difference is not significant and the queries are too few to detect one this size.
    alpha:
        The significance level.
    num_queries:
        The queries the difference, the test and W/T/L are over: those with a value on both sides. For a
        ranking metric every query; for a RAGAS column the rows scored for both runs.
    left_out:
        Queries left out because one side (or both) has no value (a failed RAGAS row); said in
        :attr:`Comparison.warnings` too. ``baseline_mean`` is over the same paired queries.
    """

    metric: str
    run: str
    baseline: str
    baseline_mean: float
    difference: Interval
    test: PairedTestResult
    pvalue_adjusted: float
    effect_size: float
    wins: int
    ties: int
    losses: int
    power: float
    warning: str | None
    alpha: float
    num_queries: int
    left_out: int = 0

    @property
    def pvalue(self) -> float:
        """The unadjusted p-value."""
        return self.test.pvalue

    @property
    def significant(self) -> bool:
        """Whether the adjusted p-value is below ``alpha``."""
        return bool(self.pvalue_adjusted < self.alpha)

    @property
    def relative_change(self) -> float:
        """``difference / baseline_mean`` (NaN when the baseline mean is 0)."""
        if self.baseline_mean == 0:
            return math.nan
        return self.difference.estimate / self.baseline_mean

    _json_keys = (
        "metric",
        "run",
        "baseline",
        "baseline_mean",
        "difference",
        "relative_change",
        "test",
        "pvalue",
        "pvalue_adjusted",
        "significant",
        "effect_size",
        "wins",
        "ties",
        "losses",
        "power",
        "warning",
        "num_queries",
        "left_out",
    )
    _json_omit = ("alpha",)  # the comparison's, written there


@dataclass(frozen=True)
class QueryRow(JsonFields):
    """One query of :meth:`Comparison.per_query_table`: its values on every run, ranking and RAGAS columns alike.

    Attributes
    ----------
    query_id, query:
        The id and, with a golden set, the question's text.
    values:
        ``values[metric][run]``; NaN where the run has no value for the query (a failed RAGAS row).
    reasons:
        ``reasons[metric][run]`` -- why a value is NaN (the RAGAS failure, e.g. ``"error: TimeoutError"``);
        only for the NaN cells.
    """

    query_id: str
    query: str | None
    values: dict[str, dict[str, float]]
    reasons: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Comparison(JsonFields):
    """The result of :func:`compare`: pure data, printable, JSON-ready.

    Attributes
    ----------
    runs:
        Run names, baseline included, in the order given.
    metrics:
        Canonical metric names: ranking measures and joined columns (``"ragas.faithfulness"``).
    baseline:
        The run every other run is compared with.
    means:
        ``means[metric][run]`` -- the run's mean with its confidence interval, over the queries that have
        a value (``Interval.n`` of them: fewer than :attr:`num_queries` for a RAGAS column with failed rows;
        an interval of NaN with ``n=0`` and method ``"none"`` when no row was scored).
    paired:
        ``paired[metric][run]`` -- the run against the baseline (every run except the baseline), over the
        queries both have a value for (:attr:`PairedComparison.num_queries`).
    evaluations:
        ``evaluations[run]`` -- per-query values, aligned by position (same ``query_ids``).
    query_ids:
        The queries every run was evaluated on.
    warnings:
        Plain-language notes on the queries (too few, missing or failed in a run, RAGAS rows not scored
        and left out of a paired test...).
    test, correction, alpha, level, ci_method, n_resamples, seed:
        How the numbers were computed.
    golden:
        The golden set, when given (for :meth:`slices`).
    unscored:
        ``unscored[metric][run]`` -- the queries without a value (NaN), only where there are some.
    """

    runs: tuple[str, ...]
    metrics: tuple[str, ...]
    baseline: str
    means: dict[str, dict[str, Interval]]
    paired: dict[str, dict[str, PairedComparison]]
    evaluations: dict[str, Evaluation] = field(repr=False)
    query_ids: tuple[str, ...] = field(repr=False)
    warnings: tuple[str, ...] = ()
    test: str = "permutation"
    correction: str = "holm"
    alpha: float = 0.05
    level: float = 0.95
    ci_method: str = "auto"
    n_resamples: int = 10_000
    seed: int = 0
    golden: GoldenSet | None = field(default=None, repr=False)
    unscored: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict, repr=False)

    @property
    def num_queries(self) -> int:
        """How many queries the runs were evaluated on (a RAGAS mean may be over fewer: ``Interval.n``)."""
        return len(self.query_ids)

    def best(self, metric: str | Measure) -> str:
        """The run with the best mean on ``metric`` (highest, or lowest where lower is better; the first one
        given on a tie; a run without any value is never best unless all are without)."""
        name = self._metric(metric)
        sign = 1.0 if column_facts(name).higher_is_better else -1.0

        def key(r: str) -> tuple[float, int]:
            est = self.means[name][r].estimate
            return (-math.inf if math.isnan(est) else sign * est, -self.runs.index(r))

        return max(self.runs, key=key)

    def _metric(self, metric: str | Measure) -> str:
        name = column_name(metric)
        if name not in self.means:
            raise InputError(f"metric {name!r} is not in this comparison; it has {', '.join(self.metrics)}")
        return name

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per (metric, run), in display order -- what tables are drawn from.

        Keys: ``metric``, ``run``, ``baseline``, ``mean`` (an Interval), ``n`` (queries the mean is over),
        ``unscored`` (queries without a value), ``paired`` (a PairedComparison, None on the baseline).
        """
        out: list[dict[str, Any]] = []
        for metric in self.metrics:
            for run in self.runs:
                iv = self.means[metric][run]
                row: dict[str, Any] = {"metric": metric, "run": run, "baseline": run == self.baseline, "mean": iv}
                row["n"] = iv.n
                row["unscored"] = len(self.unscored.get(metric, {}).get(run, ()))
                row["paired"] = self.paired[metric].get(run)
                out.append(row)
        return out

    def per_query_table(
        self, metrics: Sequence[str | Measure] | None = None, *, golden: GoldenSet | None = None
    ) -> list[QueryRow]:
        """One row per query with every run's value on each metric: ranking measures and RAGAS columns side by side.

        Parameters
        ----------
        metrics:
            Columns to show (ranking measures or joined columns such as ``"ragas.faithfulness"``). Default:
            this comparison's metrics, then any other joined column every run's evaluation has (RAGAS
            columns joined but not compared).
        golden:
            For the question texts (default: the comparison's golden set, if any).

        Returns
        -------
        list of QueryRow
            In :attr:`query_ids` order. A NaN value is a query the run has no value for; ``reasons``
            says why (the RAGAS failure, or ``"retrieval failed"``).

        Examples
        --------
        >>> import numpy as np
        >>> from rankbridge import evaluate
        >>> from rankbridge.integrations.ragas import RagasEvaluation, join
        >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
        >>> ev = evaluate(qrels, {"q1": ["a"], "q2": ["x", "b"]}, ["mrr"])
        >>> scores = RagasEvaluation((), ("q1", "q2"), {"ragas.faithfulness": np.array([0.8, np.nan])},
        ...                          failures={"ragas.faithfulness": {"q2": "error: timeout"}})
        >>> cmp = compare({"app": join(ev, scores)}, None, ["mrr", "ragas.faithfulness"])
        >>> [(r.query_id, r.values["mrr"]["app"], r.values["ragas.faithfulness"]["app"]) for r in cmp.per_query_table()]
        [('q1', 1.0, 0.8), ('q2', 0.5, nan)]
        >>> cmp.per_query_table()[1].reasons
        {'ragas.faithfulness': {'app': 'error: timeout'}}
        """
        if metrics is None:
            names = list(self.metrics)
            evs = [self.evaluations[r] for r in self.runs]
            for col in evs[0].values:
                if is_joined_column(col) and col not in names and all(col in ev.values for ev in evs):
                    names.append(col)
        else:
            names = list(dict.fromkeys(column_name(m) for m in metrics))
            for name in names:
                if not any(name in self.evaluations[r].values for r in self.runs):
                    known = sorted({c for ev in self.evaluations.values() for c in ev.values})
                    raise InputError(f"metrics: no run has values for {name!r}; they have {', '.join(known)}")
        gs = golden if golden is not None else self.golden
        texts = gs.texts() if gs is not None else {}
        columns: dict[tuple[str, str], list[float]] = {}
        for name in names:
            for r in self.runs:
                ev = self.evaluations[r]
                columns[name, r] = ev.values[name].tolist() if name in ev.values else [math.nan] * self.num_queries
        out = []
        for i, qid in enumerate(self.query_ids):
            values: dict[str, dict[str, float]] = {}
            reasons: dict[str, dict[str, str]] = {}
            for name in names:
                values[name] = {}
                for r in self.runs:
                    v = columns[name, r][i]
                    values[name][r] = v
                    if math.isnan(v):
                        reasons.setdefault(name, {})[r] = why_unscored(self.evaluations[r], name, qid)
            out.append(QueryRow(qid, texts.get(qid), values, reasons))
        return out

    def slices(
        self, by: str | Callable[[Query], Any] = "category", *, golden: GoldenSet | None = None
    ) -> dict[str, SliceTable]:
        """:func:`slices` of every run's evaluation, with this comparison's settings."""
        gs = golden if golden is not None else self.golden
        if gs is None:
            raise InputError("slices need a golden set (queries with categories or metadata); pass golden=")
        return {
            run: slices(
                self.evaluations[run],
                gs,
                by=by,
                metrics=self.metrics,
                level=self.level,
                method=self.ci_method,  # type: ignore[arg-type]
                n_resamples=self.n_resamples,
                seed=self.seed,
            )
            for run in self.runs
        }

    def __str__(self) -> str:
        corr = "Holm-adjusted" if self.correction == "holm" else "unadjusted"
        lines = [
            f"{len(self.runs)} runs on {self.num_queries} queries; baseline {self.baseline!r}; "
            f"{self.test} test, {corr} p; {self.level:.0%} intervals",
        ]
        header = ["run", "mean", "CI", f"vs {self.baseline}", "CI", "p", "p adj", "d", "W/T/L"]
        for metric in self.metrics:
            table = [header]
            for row in self.rows():
                if row["metric"] != metric:
                    continue
                iv: Interval = row["mean"]
                pc: PairedComparison | None = row["paired"]
                cells = [row["run"] + (" (base)" if row["baseline"] else ""), self._mean_cell(iv), fmt_ci(iv)]
                if pc is None:
                    cells += ["", "", "", "", "", ""]
                else:
                    mark = " *" if pc.significant else ""
                    cells += [
                        fmt_number(pc.difference.estimate, sign=True),
                        fmt_ci(pc.difference, sign=True),
                        fmt_p(pc.pvalue),
                        fmt_p(pc.pvalue_adjusted) + mark,
                        fmt_number(pc.effect_size, 2),
                        f"{pc.wins}/{pc.ties}/{pc.losses}",
                    ]
                table.append(cells)
            lines.append("")
            lines.append(metric)
            lines.extend(text_rows(table))
        lines.append("")
        lines.append(
            f"* significant at alpha={self.alpha:g}; d = Cohen's d_z; W/T/L = queries won/tied/lost vs the baseline"
        )
        if self.unscored:
            lines.append(
                "(n=...) = a mean over the queries scored, fewer than all; W/T/L over those scored on both sides"
            )
        notes = list(self.warnings) + [
            f"{pc.metric}, {pc.run}: {pc.warning}" for m in self.metrics for pc in self.paired[m].values() if pc.warning
        ]
        if notes:
            lines.append("warnings:")
            lines.extend(f"  - {w}" for w in notes)
        return "\n".join(lines)

    def _mean_cell(self, iv: Interval) -> str:
        """The mean, with its ``n`` when it is over fewer queries than all (failed RAGAS rows)."""
        return fmt_number(iv.estimate) + (f" (n={iv.n})" if iv.n != self.num_queries else "")

    def interval(self, values: np.ndarray, bounds: tuple[float, float] | None = None) -> Interval:
        """The interval of ``mean(values)`` (per-query, NaN = no value) with this comparison's settings.

        ``bounds`` clip it (a column's :attr:`~rankbridge.metrics.measures.ColumnFacts.bounds`); no value at
        all gives an interval of NaN with ``n=0``.
        """
        lo, hi = bounds if bounds is not None else (-math.inf, math.inf)
        (iv,) = column_intervals(
            [np.asarray(values, dtype=np.float64)],
            [lo],
            [hi],
            level=self.level,
            method=self.ci_method,  # type: ignore[arg-type]
            n_resamples=self.n_resamples,
            seed=self.seed,
        )
        return iv

    def paired_difference(self, a: np.ndarray, b: np.ndarray, span: float = math.inf) -> PairedDifference:
        """``a`` against ``b`` query by query with this comparison's test and interval settings (unadjusted p).

        The same kernel as :attr:`paired` (:func:`rankbridge.analysis.paired.paired_differences`), for pairs
        the comparison did not make (two runs that are not the baseline, a run before and after a reranker).
        """
        (pd,) = paired_differences(
            [(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))],
            [span],
            test=self.test,  # type: ignore[arg-type]
            level=self.level,
            ci=self.ci_method,  # type: ignore[arg-type]
            n_resamples=self.n_resamples,
            seed=self.seed,
            alpha=self.alpha,
        )
        return pd

    def report(self, **kwargs: Any) -> Report:
        """A :class:`~rankbridge.reports.Report` of this comparison (``.save("report.html")``, ``.print()``).

        Keyword arguments go to :func:`rankbridge.reports.build_report` (``runs=``, ``golden=`` ...).
        """
        # lazy: a display hook (reports sit above analysis; the contract lists this import as allowed)
        from rankbridge.reports import build_report

        return build_report(self, **kwargs)

    def _repr_html_(self) -> str | None:
        """Notebook display: the report as an HTML fragment (a display hook, through :meth:`report`)."""
        return self.report()._repr_html_()

    def to_pandas(self) -> Any:
        """One row per (run, metric) as a pandas DataFrame (pandas is imported only here).

        Columns: ``run``, ``metric``, ``baseline`` (True on the baseline's rows), ``mean``, ``ci_low``,
        ``ci_high`` (the interval at :attr:`level`), ``delta`` (mean difference with the baseline),
        ``delta_low``, ``delta_high``, ``pvalue``, ``pvalue_adjusted`` (after :attr:`correction`),
        ``significant``, ``effect_size``, ``wins``, ``ties``, ``losses`` (queries better, equal, worse than
        the baseline), ``n`` (queries the mean is over: fewer than all for a RAGAS column with failed rows),
        ``left_out`` (queries the paired test left out: no value on one side). The paired columns are empty
        (NaN, ``<NA>``) on the baseline's rows.

        Raises
        ------
        MissingExtraError
            pandas is not installed (``pip install pandas``).

        Examples
        --------
        >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
        >>> runs = {"bm25": {"q1": ["a"], "q2": ["x", "b"], "q3": ["x"]},
        ...         "dense": {"q1": ["a"], "q2": ["b"], "q3": ["c"]}}
        >>> df = compare(runs, qrels, ["mrr"], baseline="bm25", n_resamples=200).to_pandas()
        >>> df[["run", "metric", "mean", "delta", "wins", "ties", "losses"]]
             run metric  mean  delta  wins  ties  losses
        0   bm25    mrr   0.5    NaN  <NA>  <NA>    <NA>
        1  dense    mrr   1.0    0.5     2     1       0
        """
        pd = _import_pandas("Comparison.to_pandas()")
        nan = math.nan
        records: list[dict[str, Any]] = []
        for run in self.runs:
            for metric in self.metrics:
                iv = self.means[metric][run]
                pc = self.paired[metric].get(run)
                records.append(
                    {
                        "run": run,
                        "metric": metric,
                        "baseline": run == self.baseline,
                        "mean": iv.estimate,
                        "ci_low": iv.low,
                        "ci_high": iv.high,
                        "delta": pc.difference.estimate if pc else nan,
                        "delta_low": pc.difference.low if pc else nan,
                        "delta_high": pc.difference.high if pc else nan,
                        "pvalue": pc.pvalue if pc else nan,
                        "pvalue_adjusted": pc.pvalue_adjusted if pc else nan,
                        "significant": pc.significant if pc else None,
                        "effect_size": pc.effect_size if pc else nan,
                        "wins": pc.wins if pc else None,
                        "ties": pc.ties if pc else None,
                        "losses": pc.losses if pc else None,
                        "n": iv.n,
                        "left_out": pc.left_out if pc else None,
                    }
                )
        columns = ["run", "metric", "baseline", "mean", "ci_low", "ci_high", "delta", "delta_low", "delta_high"]
        columns += ["pvalue", "pvalue_adjusted", "significant", "effect_size", "wins", "ties", "losses", "n"]
        columns += ["left_out"]
        df = pd.DataFrame.from_records(records, columns=columns)
        for col in ("wins", "ties", "losses", "left_out"):
            df[col] = pd.array(df[col].tolist(), dtype="Int64")
        df["significant"] = pd.array(df["significant"].tolist(), dtype="boolean")
        return df

    _json_keys = (
        "runs",
        "metrics",
        "baseline",
        "num_queries",
        "test",
        "correction",
        "alpha",
        "level",
        "ci_method",
        "n_resamples",
        "seed",
        "means",
        "paired",
        "warnings",
        "unscored",
    )
    _json_omit = ("evaluations", "query_ids", "golden")  # the inputs, not the result; per_query=True adds the values

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """A JSON-ready dict; ``per_query=True`` adds every run's per-query values."""
        out = super().to_dict()
        if per_query:  # a query without a value (a failed RAGAS row) is null, never NaN
            out["query_ids"] = list(self.query_ids)
            out["per_query"] = {
                r: {m: [json_float(v) for v in ev.values[m].tolist()] for m in self.metrics}
                for r, ev in self.evaluations.items()
            }
        return out


def _named_runs(runs: Mapping[str, RunLike] | Sequence[Run]) -> dict[str, RunLike]:
    if isinstance(runs, Mapping):
        named = dict(runs)
        bad = [k for k in named if not isinstance(k, str)]
        if bad:
            raise InputError(f"runs: expected run names as str keys, found {bad[0]!r}")
        return named
    if isinstance(runs, (str, bytes)) or not isinstance(runs, Sequence):
        raise InputError(f"runs: expected a dict of name -> run, or a list of Run objects, found {type(runs).__name__}")
    named = {}
    for i, run in enumerate(runs):
        if not isinstance(run, Run):
            raise InputError(
                f"runs[{i}]: a list of runs must hold Run objects (their names are used), found {type(run).__name__}"
            )
        if run.name in named:
            raise InputError(f"runs: two runs are named {run.name!r}; pass a dict {{name: run}} to name them")
        named[run.name] = run
    return named


def _depth_warnings(evaluations: Mapping[str, Evaluation], measures: Sequence[Measure]) -> list[str]:
    """Runs that never return as many hits as a metric's cut-off: ranks they never filled count as misses."""
    depths = {
        name: int(ev.table.n_ret.max()) if ev.table is not None and len(ev.table.n_ret) else None
        for name, ev in evaluations.items()
    }
    deepest = max((d for d in depths.values() if d is not None), default=0)
    out = []
    for name, depth in depths.items():
        if depth is None:
            continue
        # Beside a deeper run, every cut-off past this run's depth favours the deeper one for its depth alone;
        # on its own, only measures that divide by k (precision@k) are pulled down by ranks never filled.
        cut = [
            str(m)
            for m in measures
            if m.k is not None and m.k > depth and (deepest > depth or m.name in ("precision", "f1"))
        ]
        if not cut:
            continue
        deeper = f" (the deepest run here returns {deepest})" if deepest > depth else ""
        out.append(
            f"run {name!r} returns at most {depth} results per query{deeper} but is scored at {', '.join(cut)}: "
            f"the ranks it never filled count as not relevant. Retrieve deeper (k=) or compare at a cut-off of {depth}"
        )
    return out


def _nothing_to_compare(
    qrels: Any, golden: GoldenSet | None, baseline: str, evaluations: Mapping[str, Evaluation]
) -> str:
    """Why no query is left to compare over, in the words of the input at fault (empty qrels are one case)."""
    ev = evaluations[baseline]
    judged = list(qrels) if isinstance(qrels, Mapping) else []
    if golden is not None and judged:
        asked = [q.id for q in golden.queries]
        if not set(asked).intersection(judged):
            return (
                f"golden: no query id in common between the golden set {golden.name!r} ({len(asked)} questions, "
                f"e.g. {_some(asked)}) and the qrels ({len(judged)} queries, e.g. {_some(judged)}), so no query "
                "is left to compare over; the golden set's questions must carry the qrels' query ids"
            )
        return (
            f"golden: none of the {len(asked)} questions of the golden set {golden.name!r} has a judgment in the "
            f"qrels ({len(judged)} queries, e.g. {_some(judged)}), so no query is left to compare over"
        )
    if qrels is not None and not judged:
        return "qrels: no queries to compare over (the qrels are empty)"
    if judged and ev.missing_policy == "skip":
        return (
            f"runs[{baseline!r}]: no query id in common with the qrels (the run's: e.g. {_some(ev.unjudged)}; "
            f"the qrels' {len(judged)}: e.g. {_some(judged)}), and a live capture is scored over the questions it "
            "saw, so no query is left to compare over"
        )
    return f"runs[{baseline!r}]: no query to compare over ({ev.summary()})"


def _some(ids: Sequence[str], n: int = 3) -> str:
    """A few ids for a message: ``'q1', 'q2', 'q3', ...`` (sorted, so that messages are stable)."""
    if not ids:
        return "none"
    return ", ".join(map(repr, sorted(ids)[:n])) + (", ..." if len(ids) > n else "")


def _check_metrics_in(ev: Evaluation, names: Sequence[str], run: str) -> None:
    missing = [m for m in names if m not in ev.values]
    if missing:
        hint = ""
        if any(is_joined_column(m) for m in missing):
            hint = " (RAGAS columns come from rankbridge.integrations.ragas.join(ranking_eval, evaluate_ragas(...)))"
        raise InputError(
            f"runs[{run!r}]: the Evaluation has no values for {', '.join(missing)}; it has {', '.join(ev.values)}"
            + hint
        )


def _parse_columns(metrics: str | Measure | Sequence[str | Measure]) -> tuple[list[Measure], tuple[str, ...]]:
    """Ranking measures (to evaluate runs with) and every column's canonical name, in the order given."""
    items = [metrics] if isinstance(metrics, (str, Measure)) else list(metrics)
    if not items:
        parse_measures(items)  # the usual "no metrics given" error
    measures: list[Measure] = []
    names: list[str] = []
    for item in items:
        if isinstance(item, str) and is_joined_column(item):
            column_facts(item)  # an unknown joined column: say how to register it
            name = item
        else:
            measure = parse_measure(item)
            if measure not in measures:
                measures.append(measure)
            name = str(measure)
        if name not in names:
            names.append(name)
    return measures, tuple(names)


def _check_bounds(values: np.ndarray, query_ids: Sequence[str], facts: ColumnFacts, run: str) -> None:
    """A joined column's values must lie within its bounds (the intervals and Clopper-Pearson rely on them)."""
    lo, hi = facts.bounds
    ok = ~np.isnan(values)
    bad = ok & ((values < lo - _BOUND_SLACK) | (values > hi + _BOUND_SLACK))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"runs[{run!r}]: {facts.name} must lie in [{lo:g}, {hi:g}]; query {query_ids[i]!r} has "
            f"{float(values[i])!r} ({int(bad.sum())} values outside)"
        )


def compare(
    runs: Mapping[str, RunLike] | Sequence[Run],
    qrels: Qrels | Mapping[str, Mapping[str, int]] | GoldenSet | None,
    metrics: str | Measure | Sequence[str | Measure],
    *,
    baseline: str | None = None,
    test: TestName = "permutation",
    alpha: float = 0.05,
    level: float = 0.95,
    ci: CIMethod = "auto",
    correction: Literal["holm", "none"] = "holm",
    family: Literal["all", "metric"] = "all",
    golden: GoldenSet | None = None,
    seed: int = 0,
    n_resamples: int = 10_000,
) -> Comparison:
    """Compare runs on the same queries, with intervals and paired significance tests.

    Every run is evaluated as :func:`~rankbridge.evaluate` does by default: a query the run lacks, or
    failed on, scores 0, so all runs have the same queries and per-query values pair up by position. A
    live capture is scored over the questions it saw, so it pairs only with runs over those questions
    (otherwise an error says what to do). With a golden set, every run's doc ids are checked against it.

    Parameters
    ----------
    runs:
        ``{name: run}`` where a run is a :class:`~rankbridge.Run`, a plain ``{qid: {doc: score}}`` /
        ``{qid: [doc ids]}`` dict, or an already computed :class:`~rankbridge.Evaluation`; or a list of
        Run objects (named by ``run.name``).
    qrels:
        The judgments (or a :class:`~rankbridge.GoldenSet`, whose qrels are used). May be ``None``
        when ``golden`` is given or every run is an Evaluation.
    metrics:
        Metric names, e.g. ``["ndcg@10", "mrr@10", "recall@10"]``.
    baseline:
        The run to compare the others with; default the first run. An unknown name is an error.
    test:
        ``"permutation"`` (paired randomization test, default), ``"t"`` (paired t-test) or
        ``"wilcoxon"`` (signed-rank). All two-sided.
    alpha:
        Significance level for ``significant`` and the sample-size warning.
    level:
        Confidence level of the intervals.
    ci:
        Interval method: ``"auto"`` (t below 30 queries, BCa bootstrap from there), ``"bca"``,
        ``"percentile"``, ``"t"``.
    correction:
        ``"holm"`` (default) or ``"none"``.
    family:
        What Holm corrects over: ``"all"`` (every metric x run comparison, default) or ``"metric"``
        (each metric's comparisons separately).
    golden:
        Golden set, kept for :meth:`Comparison.slices`.
    seed, n_resamples:
        Bootstrap and permutation resampling; same seed, same numbers.

    Returns
    -------
    Comparison

    Raises
    ------
    InputError
        An unknown baseline, no runs, no queries, or Evaluations over different queries.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    >>> one = {"q1": ["a"], "q2": ["x", "b"], "q3": ["c"]}
    >>> two = {"q1": ["x", "a"], "q2": ["b"], "q3": ["c"]}
    >>> runs = {"one": one, "two": two}
    >>> cmp = compare(runs, qrels, "mrr")
    >>> cmp.baseline, cmp.means["mrr"]["one"].estimate == cmp.means["mrr"]["two"].estimate
    ('one', True)
    >>> pc = cmp.paired["mrr"]["two"]
    >>> (pc.wins, pc.ties, pc.losses), pc.pvalue
    ((1, 1, 1), 1.0)
    """
    _check_choice(test, _TESTS, "test")
    _check_choice(correction, ("holm", "none"), "correction")
    _check_choice(family, ("all", "metric"), "family")
    _check_alpha(alpha)
    named = _named_runs(runs)
    if not named:
        raise InputError("runs: expected at least one run, found none")
    if isinstance(qrels, GoldenSet):
        golden = golden or qrels
        qrels = qrels.qrels
    if qrels is None and golden is not None:
        qrels = golden.qrels
    # a golden set judges its own questions, and its corpus ids serve evaluate's id check
    judged_by: Any = golden if golden is not None and qrels is golden.qrels else qrels
    measures, names = _parse_columns(metrics)
    facts = {name: column_facts(name) for name in names}
    joined = [name for name in names if facts[name].source != "ranking"]
    if baseline is None:
        baseline = next(iter(named))
    elif baseline not in named:
        raise InputError(f"baseline: expected one of the run names {', '.join(map(repr, named))}, found {baseline!r}")

    evaluations: dict[str, Evaluation] = {}
    for name, run in named.items():
        if isinstance(run, Evaluation):
            _check_metrics_in(run, names, name)
            evaluations[name] = run
        else:
            if joined:
                raise InputError(
                    f"runs[{name!r}]: {', '.join(joined)} cannot be computed from a run; pass an Evaluation that has "
                    "it, e.g. rankbridge.integrations.ragas.join(evaluate(golden, run, metrics), "
                    "evaluate_ragas(run, golden, ...))"
                )
            if qrels is None:
                raise InputError(f"qrels: needed to evaluate run {name!r}, found None")
            evaluations[name] = evaluate(judged_by, run, measures)
    query_ids = evaluations[baseline].query_ids
    for name, ev in evaluations.items():
        if ev.query_ids != query_ids:
            capture = " (a live capture is scored over the questions it saw)" if ev.missing_policy == "skip" else ""
            raise InputError(
                f"runs[{name!r}]: evaluated over {ev.num_queries} queries{capture}, the baseline {baseline!r} over "
                f"{len(query_ids)}; per-query values only pair up over the same queries (evaluate with "
                "missing='zero' to score the missing ones 0, or compare on a golden set of the questions seen)"
            )
        for m in joined:
            _check_bounds(ev.values[m], ev.query_ids, facts[m], name)
    n = len(query_ids)
    if n == 0:
        raise InputError(_nothing_to_compare(qrels, golden if judged_by is golden else None, baseline, evaluations))

    run_names = tuple(named)
    others = [r for r in run_names if r != baseline]
    # A column with queries that have no value (NaN: a failed RAGAS row) is over its scored queries alone,
    # and a difference over the queries scored on both sides (see analysis.paired).
    settings: dict[str, Any] = {"level": level, "n_resamples": n_resamples, "seed": seed}
    # Means and differences share one bootstrap: columns = every (metric, run), then every (metric, other).
    pairs = [(evaluations[r].values[m], evaluations[baseline].values[m]) for m in names for r in others]
    spans = [facts[m].span for m in names for _ in others]
    intervals = column_intervals(
        [evaluations[r].values[m] for m in names for r in run_names] + [a - b for a, b in pairs],
        [facts[m].lower for m in names for _ in run_names] + [-s for s in spans],
        [facts[m].bounds[1] for m in names for _ in run_names] + spans,
        method=ci,
        **settings,
    )
    means: dict[str, dict[str, Interval]] = {m: {} for m in names}
    it = iter(intervals)
    for m in names:
        for r in run_names:
            means[m][r] = next(it)
    diffs = paired_differences(pairs, spans, test=test, ci=ci, alpha=alpha, intervals=list(it), **settings)
    raw = np.array([d.test.pvalue for d in diffs])
    if correction == "none" or not len(raw):
        adjusted = raw.copy()
    elif family == "all":
        adjusted = holm(raw)  # NaN p-values (no query scored on both sides) do not count in the family
    else:
        adjusted = np.empty(len(raw))
        per = len(others)
        for i in range(len(names)):
            adjusted[i * per : (i + 1) * per] = holm(raw[i * per : (i + 1) * per])

    warnings: list[str] = []
    small = sample_size_warning(n)
    if small:
        warnings.append(small)
    unscored: dict[str, dict[str, tuple[str, ...]]] = {}
    for m in names:
        for r in run_names:
            missing_rows = np.isnan(evaluations[r].values[m])
            if missing_rows.any():
                qids = tuple(q for q, miss in zip(query_ids, missing_rows.tolist(), strict=True) if miss)
                unscored.setdefault(m, {})[r] = qids
                why = unscored_reasons(evaluations[r], m, qids)
                warnings.append(
                    f"{m}: run {r!r} has no value for {len(qids)} of {n} queries ({why}); "
                    f"its mean is over the {n - len(qids)} scored"
                )

    paired: dict[str, dict[str, PairedComparison]] = {m: {} for m in names}
    j = 0
    for m in names:
        for r in others:
            pd = diffs[j]
            n_pair = pd.num_queries
            p_adj = float(adjusted[j])
            warn = None
            if not (p_adj < alpha) and n_pair >= MIN_QUERIES:
                warn = sample_size_warning(n_pair, pd.effect_size, alpha=alpha)
            elif n_pair < MIN_QUERIES <= n:  # all queries are enough, the ones scored on both sides are not
                warn = sample_size_warning(n_pair)
            if pd.left_out:
                warnings.append(
                    f"{m}, {r!r} vs {baseline!r}: {pd.left_out} of {n} queries without a value on both sides were "
                    f"left out; the difference and the {test} test are over the {n_pair} scored on both"
                )
            paired[m][r] = PairedComparison(
                metric=m,
                run=r,
                baseline=baseline,
                pvalue_adjusted=p_adj,
                warning=warn,
                alpha=alpha,
                **{name: getattr(pd, name) for name in _FROM_KERNEL},
            )
            j += 1

    warnings.extend(_depth_warnings(evaluations, measures))
    for name, ev in evaluations.items():
        notes = []
        if ev.failed:
            notes.append(f"{len(ev.failed)} failed")
        if ev.missing:
            notes.append(f"{len(ev.missing)} missing")
        if notes:
            verb = "scored 0" if ev.missing_policy == "zero" else "not scored (the means are over the rest)"
            warnings.append(f"run {name!r}: {' and '.join(notes)} queries {verb}")
        warnings.extend(f"run {name!r}: {note}" for note in ev.notes if name not in note)
        warnings.extend(note for note in ev.notes if name in note)
    no_rel = evaluations[baseline].no_relevant
    if no_rel and measures:
        warnings.append(
            f"{len(no_rel)} queries have no relevant document in the qrels (recall, AP, nDCG are 0 for every run)"
        )

    return Comparison(
        runs=run_names,
        metrics=names,
        baseline=baseline,
        means=means,
        paired=paired,
        evaluations=evaluations,
        query_ids=query_ids,
        warnings=tuple(warnings),
        test=test,
        correction=correction,
        alpha=alpha,
        level=level,
        ci_method=ci,
        n_resamples=n_resamples,
        seed=seed,
        golden=golden,
        unscored=unscored,
    )
