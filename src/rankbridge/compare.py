"""Compare retrieval strategies on the same queries: intervals, paired tests, slices, failures.

* :func:`compare` evaluates several runs against one set of qrels and, per metric, gives every run's
  mean with a confidence interval and every run's paired difference to a baseline with its interval, a
  significance test (permutation by default), a Holm-adjusted p-value, an effect size and per-query
  wins/ties/losses, plus a warning when the queries are too few to detect a difference of the size seen.
* :func:`slices` splits an :class:`~rankbridge.Evaluation` by query category or any metadata field.
* :func:`failures` lists the queries a run gets wrong, and those no run gets right.

All randomness is seeded: the same inputs and ``seed`` give the same numbers. The statistics live in
:mod:`rankbridge.metrics.stats` (pure numpy, checked against scipy in the tests).

Examples
--------
>>> import rankbridge as rb
>>> from rankbridge.compare import compare
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
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rankbridge.errors import InputError
from rankbridge.evaluate import Evaluation, evaluate
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
    MIN_QUERIES,
    CIMethod,
    Interval,
    PairedTestResult,
    TestName,
    _check_alpha,
    _check_choice,
    confidence_intervals,
    holm,
    paired_effect_size,
    paired_power,
    paired_t_test,
    permutation_tests,
    sample_size_warning,
    wilcoxon_test,
)
from rankbridge.types import GoldenSet, Hit, Qrels, Query, Run

if TYPE_CHECKING:  # pragma: no cover
    from rankbridge.reports import Report

__all__ = [
    "Comparison",
    "FailedQuery",
    "Failures",
    "PairedComparison",
    "QueryRow",
    "RunFailures",
    "Slice",
    "SliceTable",
    "compare",
    "failures",
    "slices",
]

RunLike = Run | Mapping[str, Any] | Evaluation
#: A joined column's values may sit this far outside its bounds (float rounding) before it is an error.
_BOUND_SLACK = 1e-9
#: Per-query differences smaller than this count as ties (metric values carry float rounding).
TIE_TOLERANCE = 1e-12


def _json_float(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(x)


def _fmt(x: float, digits: int = 4, sign: bool = False) -> str:
    if math.isnan(x):
        return "n/a"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _fmt_p(p: float) -> str:
    if math.isnan(p):
        return "n/a"
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def _fmt_ci(iv: Interval, sign: bool = False) -> str:
    if math.isnan(iv.low):
        return "n/a"
    return f"[{_fmt(iv.low, sign=sign)}, {_fmt(iv.high, sign=sign)}]"


# --------------------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedComparison:
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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "metric": self.metric,
            "run": self.run,
            "baseline": self.baseline,
            "baseline_mean": _json_float(self.baseline_mean),
            "difference": self.difference.to_dict(),
            "relative_change": _json_float(self.relative_change),
            "test": self.test.to_dict(),
            "pvalue": _json_float(self.pvalue),
            "pvalue_adjusted": _json_float(self.pvalue_adjusted),
            "significant": self.significant,
            "effect_size": _json_float(self.effect_size),
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "power": _json_float(self.power),
            "warning": self.warning,
            "num_queries": self.num_queries,
            "left_out": self.left_out,
        }


@dataclass(frozen=True)
class QueryRow:
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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN values become ``None``)."""
        return {
            "query_id": self.query_id,
            "query": self.query,
            "values": {m: {r: _json_float(v) for r, v in runs.items()} for m, runs in self.values.items()},
            "reasons": {m: dict(runs) for m, runs in self.reasons.items()},
        }


@dataclass(frozen=True)
class Comparison:
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
                        reasons.setdefault(name, {})[r] = _why_unscored(self.evaluations[r], name, qid)
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
                cells = [row["run"] + (" (base)" if row["baseline"] else ""), self._mean_cell(iv), _fmt_ci(iv)]
                if pc is None:
                    cells += ["", "", "", "", "", ""]
                else:
                    mark = " *" if pc.significant else ""
                    cells += [
                        _fmt(pc.difference.estimate, sign=True),
                        _fmt_ci(pc.difference, sign=True),
                        _fmt_p(pc.pvalue),
                        _fmt_p(pc.pvalue_adjusted) + mark,
                        _fmt(pc.effect_size, 2),
                        f"{pc.wins}/{pc.ties}/{pc.losses}",
                    ]
                table.append(cells)
            widths = [max(len(r[i]) for r in table) for i in range(len(header))]
            lines.append("")
            lines.append(metric)
            for r in table:
                lines.append(
                    "  "
                    + "  ".join(
                        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
                    ).rstrip()
                )
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
        return _fmt(iv.estimate) + (f" (n={iv.n})" if iv.n != self.num_queries else "")

    def report(self, **kwargs: Any) -> Report:
        """A :class:`~rankbridge.reports.Report` of this comparison (``.save("report.html")``, ``.print()``).

        Keyword arguments go to :func:`rankbridge.reports.build_report` (``runs=``, ``golden=`` ...).
        """
        from rankbridge.reports import build_report

        return build_report(self, **kwargs)

    def _repr_html_(self) -> str | None:
        """Notebook display: the report as an HTML fragment."""
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
        try:
            import pandas as pd  # type: ignore[import-untyped]
        except ImportError as exc:
            from rankbridge.errors import MissingExtraError

            err = MissingExtraError("pandas", "pandas", "Comparison.to_pandas()")
            err.msg = (  # ImportError prints .msg: name the plain install, as there is no pandas extra
                "Comparison.to_pandas() needs the 'pandas' package, which is not installed. "
                "Install it with: pip install pandas"
            )
            err.args = (err.msg,)
            raise err from exc
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

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """A JSON-ready dict; ``per_query=True`` adds every run's per-query values."""
        out: dict[str, Any] = {
            "runs": list(self.runs),
            "metrics": list(self.metrics),
            "baseline": self.baseline,
            "num_queries": self.num_queries,
            "test": self.test,
            "correction": self.correction,
            "alpha": self.alpha,
            "level": self.level,
            "ci_method": self.ci_method,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "means": {m: {r: iv.to_dict() for r, iv in runs.items()} for m, runs in self.means.items()},
            "paired": {m: {r: pc.to_dict() for r, pc in runs.items()} for m, runs in self.paired.items()},
            "warnings": list(self.warnings),
            "unscored": {m: {r: list(q) for r, q in runs.items()} for m, runs in self.unscored.items()},
        }
        if per_query:  # a query without a value (a failed RAGAS row) is null, never NaN
            out["query_ids"] = list(self.query_ids)
            out["per_query"] = {
                r: {m: [_json_float(v) for v in ev.values[m].tolist()] for m in self.metrics}
                for r, ev in self.evaluations.items()
            }
        return out


# --------------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------------


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


def _intervals(
    columns: Sequence[np.ndarray],
    floor: Sequence[float],
    ceil: Sequence[float],
    **settings: Any,
) -> list[Interval]:
    """:func:`confidence_intervals` of every column, each over the rows where it is not NaN.

    Columns with the same rows share one call, so columns without NaN (every ranking metric) keep the
    shared bootstrap resamples exactly as before; a column over fewer rows gets the interval
    :func:`~rankbridge.metrics.stats.confidence_interval` gives its scored values alone. No scored row:
    an interval of NaN with ``n=0`` and method ``"none"``.
    """
    out: list[Interval | None] = [None] * len(columns)
    groups: dict[bytes, list[int]] = {}
    masks: dict[bytes, np.ndarray] = {}
    for j, col in enumerate(columns):
        mask = ~np.isnan(col)
        key = np.packbits(mask).tobytes() + len(mask).to_bytes(8, "little")
        groups.setdefault(key, []).append(j)
        masks[key] = mask
    for key, cols in groups.items():
        mask = masks[key]
        if not mask.any():
            for j in cols:
                out[j] = Interval(math.nan, math.nan, math.nan, settings["level"], "none", 0)
            continue
        rows = slice(None) if mask.all() else mask
        matrix = np.column_stack([columns[j][rows] for j in cols])
        bounds = ([floor[j] for j in cols], [ceil[j] for j in cols])
        for j, iv in zip(cols, confidence_intervals(matrix, bounds=bounds, **settings), strict=True):
            out[j] = iv
    return [iv for iv in out if iv is not None]


def _paired_tests(diff_cols: Sequence[np.ndarray], test: str, *, n_resamples: int, seed: int) -> list[PairedTestResult]:
    """The paired test of every difference column over its rows that are not NaN (scored on both sides).

    Permutation tests of columns over the same rows share their sign flips, as
    :func:`~rankbridge.metrics.stats.permutation_tests` does; each result equals the test of that column's
    paired values alone. No row scored on both sides: a p-value of NaN (left out of Holm's family).
    """
    out: list[PairedTestResult | None] = [None] * len(diff_cols)
    if test == "permutation":
        groups: dict[bytes, list[int]] = {}
        masks: dict[bytes, np.ndarray] = {}
        for j, d in enumerate(diff_cols):
            mask = ~np.isnan(d)
            key = np.packbits(mask).tobytes() + len(mask).to_bytes(8, "little")
            groups.setdefault(key, []).append(j)
            masks[key] = mask
        for key, cols in groups.items():
            mask = masks[key]
            if not mask.any():
                continue
            rows = slice(None) if mask.all() else mask
            results = permutation_tests(
                np.column_stack([diff_cols[j][rows] for j in cols]), n_resamples=n_resamples, seed=seed
            )
            for j, res in zip(cols, results, strict=True):
                out[j] = res
    else:
        for j, d_all in enumerate(diff_cols):
            d = d_all[~np.isnan(d_all)]
            if len(d):
                zeros = np.zeros(len(d))
                out[j] = paired_t_test(d, zeros) if test == "t" else wilcoxon_test(d, zeros)
    return [
        res if res is not None else PairedTestResult(test, math.nan, math.nan, 0, "none", "two-sided") for res in out
    ]


def _failure_reasons(ev: Evaluation, column: str) -> Mapping[str, str]:
    """Query id -> why ``column`` has no value, as a RagasEvaluation records it (empty for others)."""
    failures = getattr(ev, "failures", None)
    if isinstance(failures, Mapping):
        reasons = failures.get(column)
        if isinstance(reasons, Mapping):
            return reasons
    return {}


def _why_unscored(ev: Evaluation, column: str, qid: str) -> str:
    reason = _failure_reasons(ev, column).get(qid)
    if reason:
        return reason
    if qid in ev.failed:
        return "retrieval failed"
    return "not scored"


def _reasons(ev: Evaluation, column: str, qids: Sequence[str]) -> str:
    """``"2 error, 1 timeout"``: the kinds of failure of the given queries (the text before the colon)."""
    kinds: dict[str, int] = {}
    for qid in qids:
        kind = _why_unscored(ev, column, qid).split(":", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))


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
    _check_choice(test, ("permutation", "t", "wilcoxon"), "test")
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
        raise InputError("qrels: no queries to compare over (the qrels are empty)")

    run_names = tuple(named)
    others = [r for r in run_names if r != baseline]
    # Means and differences share one bootstrap: columns = every (metric, run), then every (metric, other).
    # A column with queries that have no value (NaN: a failed RAGAS row) is over its scored queries alone,
    # and a difference over the queries scored on both sides (see _intervals).
    mean_cols = [evaluations[r].values[m] for m in names for r in run_names]
    diff_cols = [evaluations[r].values[m] - evaluations[baseline].values[m] for m in names for r in others]
    floor = [facts[m].lower for m in names for _ in run_names] + [-facts[m].span for m in names for _ in others]
    ceil = [facts[m].bounds[1] for m in names for _ in run_names] + [facts[m].span for m in names for _ in others]
    intervals = _intervals(
        mean_cols + diff_cols, floor, ceil, level=level, method=ci, n_resamples=n_resamples, seed=seed
    )
    means: dict[str, dict[str, Interval]] = {m: {} for m in names}
    it = iter(intervals)
    for m in names:
        for r in run_names:
            means[m][r] = next(it)
    diff_ivs = list(it)

    tests = _paired_tests(diff_cols, test, n_resamples=n_resamples, seed=seed)
    raw = np.array([t.pvalue for t in tests])
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
                why = _reasons(evaluations[r], m, qids)
                warnings.append(
                    f"{m}: run {r!r} has no value for {len(qids)} of {n} queries ({why}); "
                    f"its mean is over the {n - len(qids)} scored"
                )

    paired: dict[str, dict[str, PairedComparison]] = {m: {} for m in names}
    j = 0
    for m in names:
        base_values = evaluations[baseline].values[m]
        for r in others:
            d_all = diff_cols[j]
            ok = ~np.isnan(d_all)
            d = d_all[ok]
            n_pair = len(d)
            left_out = n - n_pair
            effect = paired_effect_size(d, np.zeros(n_pair)) if n_pair >= 2 else math.nan
            p_adj = float(adjusted[j])
            warn = None
            if not (p_adj < alpha) and n_pair >= MIN_QUERIES:
                warn = sample_size_warning(n_pair, effect, alpha=alpha)
            elif n_pair < MIN_QUERIES <= n:  # all queries are enough, the ones scored on both sides are not
                warn = sample_size_warning(n_pair)
            if left_out:
                warnings.append(
                    f"{m}, {r!r} vs {baseline!r}: {left_out} of {n} queries without a value on both sides were left "
                    f"out; the difference and the {test} test are over the {n_pair} scored on both"
                )
            paired[m][r] = PairedComparison(
                metric=m,
                run=r,
                baseline=baseline,
                baseline_mean=float(base_values[ok].mean()) if n_pair else math.nan,
                difference=diff_ivs[j],
                test=tests[j],
                pvalue_adjusted=p_adj,
                effect_size=effect,
                wins=int((d > TIE_TOLERANCE).sum()),
                ties=int((np.abs(d) <= TIE_TOLERANCE).sum()),
                losses=int((d < -TIE_TOLERANCE).sum()),
                power=paired_power(effect, n_pair, alpha=alpha),
                warning=warn,
                alpha=alpha,
                num_queries=n_pair,
                left_out=left_out,
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


# --------------------------------------------------------------------------------------------------
# Slices
# --------------------------------------------------------------------------------------------------

NO_VALUE = "(none)"


@dataclass(frozen=True)
class Slice:
    """The queries that share one value of a slicing field, with their means.

    Attributes
    ----------
    name:
        The field's value (``"(none)"`` for queries without one).
    query_ids:
        The slice's queries.
    means:
        Metric -> mean over the slice with its interval; ``Interval.n`` counts the slice's queries that have
        a value (fewer than :attr:`n` for a RAGAS column with failed rows).
    warning:
        Set when the slice is too small to trust.
    """

    name: str
    query_ids: tuple[str, ...]
    means: dict[str, Interval]
    warning: str | None = None

    @property
    def n(self) -> int:
        """How many queries the slice has."""
        return len(self.query_ids)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "name": self.name,
            "n": self.n,
            "query_ids": list(self.query_ids),
            "means": {m: iv.to_dict() for m, iv in self.means.items()},
            "warning": self.warning,
        }


@dataclass(frozen=True)
class SliceTable:
    """Per-slice means of one run (see :func:`slices`)."""

    run: str
    by: str
    metrics: tuple[str, ...]
    slices: tuple[Slice, ...]
    overall: dict[str, Interval]
    num_queries: int | None = None  # the evaluation's queries (a RAGAS column's overall mean may be over fewer)

    def __getitem__(self, name: str) -> Slice:
        for s in self.slices:
            if s.name == name:
                return s
        raise KeyError(name)

    def __iter__(self) -> Iterator[Slice]:
        return iter(self.slices)

    def __len__(self) -> int:
        return len(self.slices)

    def names(self) -> list[str]:
        """Slice names in display order."""
        return [s.name for s in self.slices]

    def __str__(self) -> str:
        header = ["slice", "n", *self.metrics]
        table = [header]
        for s in self.slices:
            table.append([s.name, str(s.n), *(_slice_cell(s.means[m], s.n) for m in self.metrics)])
        n_all = (
            self.num_queries if self.num_queries is not None else max((iv.n for iv in self.overall.values()), default=0)
        )
        table.append(["(all)", str(n_all), *(_slice_cell(self.overall[m], n_all) for m in self.metrics)])
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        lines = [f"{self.run} by {self.by}"]
        for r in table:
            lines.append(
                "  "
                + "  ".join(
                    c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
                ).rstrip()
            )
        warned = [f"  - {s.name}: {s.warning}" for s in self.slices if s.warning]
        if warned:
            lines.append("warnings:")
            lines.extend(warned)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "run": self.run,
            "by": self.by,
            "metrics": list(self.metrics),
            "slices": [s.to_dict() for s in self.slices],
            "overall": {m: iv.to_dict() for m, iv in self.overall.items()},
        }


def _slice_cell(iv: Interval, n: int) -> str:
    scored = f" (n={iv.n})" if iv.n != n else ""
    return f"{_fmt(iv.estimate)} {_fmt_ci(iv)}{scored}"


def _slice_values(query: Query | None, by: str | Callable[[Query], Any]) -> list[str]:
    if query is None:
        return [NO_VALUE]
    if callable(by):
        value = by(query)
    elif by == "category":
        value = query.category
    else:
        value = query.metadata.get(by) if query.metadata else None
    if value is None:
        return [NO_VALUE]
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted({str(v) for v in value if v is not None})
        return items or [NO_VALUE]
    if not isinstance(value, Hashable):
        raise InputError(f"slice by {_by_name(by)}: query {query.id!r} has an unhashable value {value!r}")
    return [str(value)]


def _by_name(by: str | Callable[[Query], Any]) -> str:
    return by if isinstance(by, str) else getattr(by, "__name__", "callable")


def slices(
    evaluation: Evaluation,
    golden: GoldenSet | Iterable[Query],
    by: str | Callable[[Query], Any] = "category",
    *,
    metrics: Sequence[str | Measure] | None = None,
    level: float = 0.95,
    method: CIMethod = "auto",
    n_resamples: int = 10_000,
    seed: int = 0,
    min_queries: int = MIN_QUERIES,
) -> SliceTable:
    """Means per slice of queries, each with its own interval and a small-sample warning.

    Parameters
    ----------
    evaluation:
        Per-query values of one run.
    golden:
        The golden set (or its queries), which says each query's category and metadata.
    by:
        ``"category"`` (``Query.category``), any other string (a key of ``Query.metadata``), or a
        function ``Query -> value``. A list value puts the query in several slices; ``None`` (or a query
        missing from the golden set) puts it in ``"(none)"``.
    metrics:
        Metrics to slice (default: all in the evaluation).
    level, method, n_resamples, seed:
        Intervals, as in :func:`~rankbridge.metrics.stats.confidence_interval`.
    min_queries:
        Slices smaller than this get a warning.

    Returns
    -------
    SliceTable
        Slices sorted by name (``"(none)"`` last), and the overall means.

    Examples
    --------
    >>> from rankbridge import GoldenSet, Qrels, Query, evaluate
    >>> qs = [Query("q1", "a", category="how-to"), Query("q2", "b", category="how-to")]
    >>> qs.append(Query("q3", "c", category="faq"))
    >>> golden = GoldenSet(qs, Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}))
    >>> ev = evaluate(golden.qrels, {"q1": ["d1"], "q2": ["x"], "q3": ["d3"]}, ["hit_rate@1"])
    >>> table = slices(ev, golden)
    >>> [(s.name, s.n, s.means["hit_rate@1"].estimate) for s in table]
    [('faq', 1, 1.0), ('how-to', 2, 0.5)]
    """
    queries = golden.queries if isinstance(golden, GoldenSet) else list(golden)
    by_id = {q.id: q for q in queries}
    names = tuple(column_name(m) for m in metrics) if metrics is not None else tuple(evaluation.values)
    facts = [column_facts(m) for m in names]
    for m in names:
        if m not in evaluation.values:
            raise InputError(f"metrics: the evaluation has no values for {m!r}; it has {', '.join(evaluation.values)}")
    if isinstance(by, str) and by != "category" and not any(by in (q.metadata or {}) for q in queries):
        keys = sorted({k for q in queries for k in (q.metadata or {})})
        known = ", ".join(["category", *keys])
        raise InputError(f"by: no query in the golden set has the metadata field {by!r}; known fields: {known}")
    if not evaluation.query_ids:
        raise InputError("evaluation: no queries to slice")
    groups: dict[str, list[int]] = {}
    for i, qid in enumerate(evaluation.query_ids):
        for value in _slice_values(by_id.get(qid), by):
            groups.setdefault(value, []).append(i)
    order = sorted(groups, key=lambda s: (s == NO_VALUE, s))
    columns = [evaluation.values[m] for m in names]
    floor = [f.lower for f in facts]
    ceil = [f.bounds[1] for f in facts]
    settings: dict[str, Any] = {"level": level, "method": method, "n_resamples": n_resamples, "seed": seed}
    # a query without a value in a column (a failed RAGAS row) counts in the slice, not in that column's mean
    overall_ivs = _intervals(columns, floor, ceil, **settings)
    out = []
    for name in order:
        rows = np.asarray(groups[name], dtype=np.int64)
        ivs = _intervals([c[rows] for c in columns], floor, ceil, **settings)
        warn = sample_size_warning(len(rows), min_queries=min_queries)
        out.append(
            Slice(
                name=name,
                query_ids=tuple(evaluation.query_ids[i] for i in rows.tolist()),
                means=dict(zip(names, ivs, strict=True)),
                warning=warn,
            )
        )
    return SliceTable(
        run=evaluation.run_name,
        by=_by_name(by),
        metrics=names,
        slices=tuple(out),
        overall=dict(zip(names, overall_ivs, strict=True)),
        num_queries=len(evaluation.query_ids),
    )


# --------------------------------------------------------------------------------------------------
# Failure analysis
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailedQuery:
    """One query in a failure list.

    Attributes
    ----------
    query_id, query:
        The id and, when a golden set was given, the text.
    run:
        The run the retrieved ids come from.
    expected:
        Relevant doc ids from the qrels, highest label first.
    retrieved:
        The first few retrieved doc ids, in rank order.
    top_score:
        The score of the first hit (``None`` without hits or scores).
    first_relevant_rank:
        1-based rank of the first relevant doc anywhere in the list, ``None`` if none was retrieved.
    judged_share:
        Share of the returned top-k that has any judgment in the qrels (NaN without hits).
    error:
        The retrieval error, ``"no result"`` for a query the run lacks, ``"empty result"`` for no hits.
    value:
        The metric value (best/worst lists).
    """

    query_id: str
    query: str | None
    run: str
    expected: tuple[str, ...]
    retrieved: tuple[str, ...]
    top_score: float | None
    first_relevant_rank: int | None
    judged_share: float
    error: str | None = None
    value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "query_id": self.query_id,
            "query": self.query,
            "run": self.run,
            "expected": list(self.expected),
            "retrieved": list(self.retrieved),
            "top_score": _json_float(self.top_score),
            "first_relevant_rank": self.first_relevant_rank,
            "judged_share": _json_float(self.judged_share),
            "error": self.error,
            "value": _json_float(self.value),
        }

    def line(self) -> str:
        """One line for a text listing."""
        text = f" {self.query!r}" if self.query else ""
        rank = f"first relevant at {self.first_relevant_rank}" if self.first_relevant_rank else "no relevant retrieved"
        value = f" value={self.value:.4f}" if self.value is not None else ""
        err = f" error: {self.error}" if self.error else ""
        return (
            f"{self.query_id}{text}: {rank}; expected {', '.join(self.expected[:5]) or '-'}; "
            f"got {', '.join(self.retrieved) or '-'}{value}{err}"
        )


_LISTS = (
    "zero_hit",
    "top1_irrelevant",
    "top1_unjudged",
    "ranked_low",
    "mostly_unjudged",
    "failed",
    "best",
    "worst",
)


@dataclass(frozen=True)
class RunFailures:
    """Failure lists of one run (see :func:`failures` for the definitions)."""

    run: str
    k: int
    low_rank: int
    metric: str
    zero_hit: tuple[FailedQuery, ...]
    top1_irrelevant: tuple[FailedQuery, ...]
    ranked_low: tuple[FailedQuery, ...]
    mostly_unjudged: tuple[FailedQuery, ...]
    failed: tuple[FailedQuery, ...]
    best: tuple[FailedQuery, ...]
    worst: tuple[FailedQuery, ...]
    num_queries: int
    no_relevant: tuple[str, ...] = ()
    top1_unjudged: tuple[FailedQuery, ...] = ()

    def counts(self) -> dict[str, int]:
        """List name -> number of queries."""
        return {name: len(getattr(self, name)) for name in _LISTS}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out: dict[str, Any] = {
            "run": self.run,
            "k": self.k,
            "low_rank": self.low_rank,
            "metric": self.metric,
            "num_queries": self.num_queries,
            "no_relevant": list(self.no_relevant),
        }
        for name in _LISTS:
            out[name] = [item.to_dict() for item in getattr(self, name)]
        return out

    def __str__(self) -> str:
        titles = {
            "zero_hit": f"no relevant doc in the top {self.k}",
            "top1_irrelevant": f"top result judged not relevant (a relevant one is in the top {self.k})",
            "top1_unjudged": f"top result unjudged (a relevant one is in the top {self.k})",
            "ranked_low": f"first relevant doc below rank {self.low_rank}",
            "mostly_unjudged": f"top {self.k} mostly unjudged (the metric cannot be trusted)",
            "failed": "retrieval failed or returned nothing",
            "best": f"best by {self.metric}",
            "worst": f"worst by {self.metric}",
        }
        lines = [f"{self.run}: {self.num_queries} queries"]
        for name in _LISTS:
            items = getattr(self, name)
            lines.append(f"  {titles[name]}: {len(items)}")
            lines.extend(f"    {item.line()}" for item in items[:10])
            if len(items) > 10:
                lines.append(f"    ... and {len(items) - 10} more")
        return "\n".join(lines)


@dataclass(frozen=True)
class Failures:
    """The result of :func:`failures`: per-run lists and the queries no run solves."""

    runs: dict[str, RunFailures]
    unsolved: tuple[FailedQuery, ...]
    k: int

    def __getitem__(self, run: str) -> RunFailures:
        try:
            return self.runs[run]
        except KeyError:
            raise InputError(f"run: expected one of {', '.join(map(repr, self.runs))}, found {run!r}") from None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "k": self.k,
            "runs": {name: rf.to_dict() for name, rf in self.runs.items()},
            "unsolved": [item.to_dict() for item in self.unsolved],
        }

    def __str__(self) -> str:
        parts = [str(rf) for rf in self.runs.values()]
        if len(self.runs) > 1:
            lines = [f"no run has a relevant doc in the top {self.k}: {len(self.unsolved)}"]
            lines.extend(f"  {item.line()}" for item in self.unsolved[:10])
            if len(self.unsolved) > 10:
                lines.append(f"  ... and {len(self.unsolved) - 10} more")
            parts.append("\n".join(lines))
        return "\n\n".join(parts)


def _as_run(name: str, run: Run | Mapping[str, Any]) -> Run:
    if isinstance(run, Run):
        return run
    if not isinstance(run, Mapping):
        raise InputError(f"runs[{name!r}]: expected a Run or a dict, found {type(run).__name__}")
    if not run:
        return Run(name=name)
    first = next(iter(run.values()))
    if isinstance(first, Mapping):
        return Run.from_scores(run, name=name)  # type: ignore[arg-type]
    return Run.from_ranked(run, name=name)


def _several(run: Any) -> bool:
    """Whether ``run`` is ``{name: run}`` (or a list of Runs) rather than one run."""
    if isinstance(run, Run):
        return False
    if isinstance(run, (list, tuple)):
        return True
    if isinstance(run, Mapping) and run:
        first = next(iter(run.values()))
        if isinstance(first, Run):
            return True
        if isinstance(first, Mapping) and first:
            inner = next(iter(first.values()))
            return isinstance(inner, (Mapping, list, tuple))
    return False


def failures(
    run: Run | Mapping[str, Any] | Mapping[str, Run | Mapping[str, Any]] | Sequence[Run],
    qrels: Qrels | Mapping[str, Mapping[str, int]] | None = None,
    *,
    golden: GoldenSet | None = None,
    evaluation: Evaluation | Mapping[str, Evaluation] | None = None,
    k: int = 10,
    low_rank: int = 3,
    rel: int = 1,
    show: int = 5,
    n_best: int = 5,
    unjudged_share: float = 0.5,
    metric: str | Measure | None = None,
) -> Failures:
    """The queries a run gets wrong, each with its text, expected ids, retrieved ids and top score.

    Lists (a query can be in several):

    * ``zero_hit`` -- no relevant doc in the top ``k`` (``first_relevant_rank`` shows if one came later).
      A query whose judged docs are all below ``rel`` is here too (its ``expected`` is empty): no run can
      find a relevant doc for it, which is a failure of the golden set or the corpus to look at, not to
      hide; it is also in ``worst`` and in ``unsolved``.
    * ``top1_irrelevant`` -- a relevant doc is in the top ``k`` but the first result is *judged* not
      relevant: the cases a reranker can fix.
    * ``top1_unjudged`` -- a relevant doc is in the top ``k`` and the first result has no judgment: it
      may be relevant (judge it) or not.
    * ``ranked_low`` -- the first relevant doc is retrieved but below rank ``low_rank`` (inside or
      beyond the top ``k``), worst first.
    * ``mostly_unjudged`` -- more than ``unjudged_share`` of the returned top ``k`` has no judgment at
      all, so the metric says little (judge those pairs).
    * ``failed`` -- retrieval raised, the run has no result for the query, or an empty one (the item's
      ``error`` says which).
    * ``best`` / ``worst`` -- the ``n_best`` highest and lowest values of ``metric``.
    * ``unsolved`` (on the :class:`Failures`) -- queries no run has a relevant doc for in its top ``k``.

    Parameters
    ----------
    run:
        One run (a :class:`~rankbridge.Run` or plain dict), or several as ``{name: run}`` or a list of Runs.
    qrels:
        The judgments; default ``golden.qrels``.
    golden:
        Adds query texts.
    evaluation:
        Precomputed evaluation(s) for best/worst (one, or ``{name: Evaluation}``); computed if absent.
    k:
        The cut-off that defines a hit.
    low_rank:
        "Ranked low" means a first relevant rank above this.
    rel:
        Minimum label that counts as relevant.
    show:
        How many retrieved ids each item carries.
    n_best:
        Length of the best and worst lists.
    unjudged_share:
        Threshold of the ``mostly_unjudged`` list.
    metric:
        Metric for best/worst; default the evaluation's first metric, else ``ndcg@k``.

    Returns
    -------
    Failures
        ``failures(...)[run_name]`` gives a run's :class:`RunFailures`; ``.unsolved`` the shared misses.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    >>> run = Run.from_ranked({"q1": ["a"], "q2": ["x", "y", "z", "b"], "q3": ["x"]}, name="bm25")
    >>> f = failures(run, qrels, k=3)
    >>> [q.query_id for q in f["bm25"].zero_hit], [q.query_id for q in f["bm25"].ranked_low]
    (['q2', 'q3'], ['q2'])
    >>> f["bm25"].ranked_low[0].first_relevant_rank
    4
    """
    for pname, value, lo in (("k", k, 1), ("low_rank", low_rank, 1), ("show", show, 0), ("n_best", n_best, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise InputError(f"{pname} must be an int >= {lo}. Got {value!r} instead.")
    if not (0 <= unjudged_share < 1):
        raise InputError(f"unjudged_share must be a number in [0, 1). Got {unjudged_share!r} instead.")
    if qrels is None:
        if golden is None:
            raise InputError("qrels: expected judgments (or golden=), found None")
        qrels = golden.qrels
    q = qrels if isinstance(qrels, Qrels) else Qrels(qrels)
    if _several(run):
        named = _named_runs(run)  # type: ignore[arg-type]
        runs = {name: _as_run(name, r) for name, r in named.items()}  # type: ignore[arg-type]
    else:
        single = _as_run(run.name if isinstance(run, Run) else "run", run)  # type: ignore[arg-type]
        runs = {single.name: single}
    if not runs:
        raise InputError("run: expected at least one run, found none")
    evals: dict[str, Evaluation] = {}
    if isinstance(evaluation, Evaluation):
        if len(runs) != 1:
            raise InputError("evaluation: several runs need {name: Evaluation}, found one Evaluation")
        evals[next(iter(runs))] = evaluation
    elif evaluation is not None:
        evals.update(evaluation)
    if metric is None:
        first = next(iter(evals.values()), None)
        metric_name = first.metric_names[0] if first is not None else f"ndcg@{k}"
    else:
        metric_name = str(parse_measure(metric))
    texts = golden.texts() if golden is not None else {}

    qids = sorted(q)
    relevant: dict[str, tuple[str, ...]] = {}
    for qid in qids:
        docs = [(label, doc) for doc, label in q[qid].items() if label >= rel]
        relevant[qid] = tuple(doc for _, doc in sorted(docs, key=lambda t: (-t[0], t[1])))
    no_relevant = tuple(qid for qid in qids if not relevant[qid])

    per_run: dict[str, RunFailures] = {}
    solved_by_any: set[str] = set()
    first_items: dict[str, FailedQuery] = {}
    for name, r in runs.items():
        ev = evals.get(name)
        if ev is None or metric_name not in ev.values:
            ev = evaluate(q, r, [metric_name])
        values = dict(zip(ev.query_ids, ev.values[metric_name].tolist(), strict=True))
        lists: dict[str, list[FailedQuery]] = {n: [] for n in _LISTS}
        scored: list[tuple[float, str, FailedQuery]] = []
        for qid in qids:
            hits: list[Hit] = r.hits(qid) if qid in r else []
            error = r.errors.get(qid) if qid not in r else None
            if qid not in r and error is None:
                error = "no result"
            elif qid in r and not hits:
                error = "empty result"
            judged = q[qid]
            rel_set = set(relevant[qid])
            first_rel = next((i + 1 for i, h in enumerate(hits) if h.doc_id in rel_set), None)
            top = hits[:k]
            share = sum(1 for h in top if h.doc_id in judged) / len(top) if top else math.nan
            item = FailedQuery(
                query_id=qid,
                query=texts.get(qid),
                run=name,
                expected=relevant[qid],
                retrieved=tuple(h.doc_id for h in hits[:show]),
                top_score=hits[0].score if hits else None,
                first_relevant_rank=first_rel,
                judged_share=share,
                error=error,
                value=values.get(qid),
            )
            first_items.setdefault(qid, item)
            if error is not None:
                lists["failed"].append(item)
            scored.append((values.get(qid, 0.0), qid, item))
            if first_rel is None or first_rel > k:
                lists["zero_hit"].append(item)
            else:
                solved_by_any.add(qid)
                if first_rel > 1:
                    top_judged = hits[0].doc_id in judged
                    lists["top1_irrelevant" if top_judged else "top1_unjudged"].append(item)
            if first_rel is not None and first_rel > low_rank:
                lists["ranked_low"].append(item)
            if top and share < 1.0 - unjudged_share:
                lists["mostly_unjudged"].append(item)
        lists["ranked_low"].sort(key=lambda it: (-(it.first_relevant_rank or 0), it.query_id))
        best = sorted(scored, key=lambda t: (-t[0], t[1]))[:n_best]
        worst = sorted(scored, key=lambda t: (t[0], t[1]))[:n_best]
        per_run[name] = RunFailures(
            run=name,
            k=k,
            low_rank=low_rank,
            metric=metric_name,
            zero_hit=tuple(lists["zero_hit"]),
            top1_irrelevant=tuple(lists["top1_irrelevant"]),
            ranked_low=tuple(lists["ranked_low"]),
            mostly_unjudged=tuple(lists["mostly_unjudged"]),
            top1_unjudged=tuple(lists["top1_unjudged"]),
            failed=tuple(lists["failed"]),
            best=tuple(t[2] for t in best),
            worst=tuple(t[2] for t in worst),
            num_queries=len(qids),
            no_relevant=no_relevant,
        )
    unsolved = tuple(first_items[qid] for qid in qids if qid not in solved_by_any)
    return Failures(runs=per_run, unsolved=unsolved, k=k)
