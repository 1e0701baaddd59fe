"""The report model: one pure-data object that every report format is drawn from.

:func:`build_report` turns a :class:`~rankbridge.analysis.Comparison` (plus, optionally, failure lists,
per-category slices and a trend from the run history) into a :class:`Report`: frozen dataclasses holding
only strings, numbers, tuples and dicts. Nothing here draws or imports a drawing library; the renderers
(:mod:`.terminal`, :mod:`.markdown`, :mod:`.html`, :mod:`.json`) read the model and nothing else.

What a report holds:

* headline numbers (the best run per metric), each with a plain-language reading (:func:`plain_reading`)
  and its difference to the baseline;
* the per-strategy table: means with intervals, paired differences, raw and adjusted p-values, effect
  sizes and wins/ties/losses;
* metrics by rank cut-off (hit rate, nDCG, recall, precision at k = 1, 3, 5, 10, 20), computed from each
  evaluation's hit table;
* a per-category table, failure lists, best and worst queries, a trend over saved runs;
* the relevance profile of the results (mean label by rank position, and the share of results that are
  highly relevant / relevant / not relevant / unjudged), and RAGAS columns with a note on what they mean.

Examples
--------
>>> from rankbridge.analysis import compare
>>> qrels = {f"q{i}": {f"d{i}": 1} for i in range(10)}
>>> bm25 = {f"q{i}": [f"x{i}", f"d{i}"] for i in range(10)}       # relevant chunk at rank 2
>>> dense = {f"q{i}": [f"d{i}", f"x{i}"] for i in range(10)}      # relevant chunk at rank 1
>>> report = build_report(compare({"bm25": bm25, "dense": dense}, qrels, ["mrr@10"]), generated_at="2024-01-01")
>>> report.headlines[0].run, report.headlines[0].value.estimate
('dense', 1.0)
>>> plain_reading("mrr@10", 0.5)
'the first relevant chunk typically sits at rank 2'
>>> plain_reading("hit_rate@5", 0.8)
'4 in 5 questions get a relevant chunk in the top 5'
"""

from __future__ import annotations

import math
import os
import re
import warnings as _warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rankbridge._numbers import JsonFields
from rankbridge._version import __version__
from rankbridge.analysis import Comparison, FailedQuery, Failures, QueryRow, SliceTable
from rankbridge.analysis import failures as compute_failures
from rankbridge.analysis.failed import ranked_summary, relevant_ids
from rankbridge.analysis.relevance import (
    label_scale,
    relevance_classes,
    relevance_depth,
    top_labels,
)
from rankbridge.errors import InputError
from rankbridge.evaluate import Evaluation, evaluate
from rankbridge.io._atomic import atomic_write
from rankbridge.metrics.measures import Measure, column_facts, parse_measure
from rankbridge.metrics.ranking import HitTable, compute
from rankbridge.metrics.stats import Interval
from rankbridge.reports import html as _html
from rankbridge.reports import json as _json
from rankbridge.reports import markdown as _markdown
from rankbridge.reports import terminal as _terminal
from rankbridge.reports.cells import escape_controls as escape_controls  # still importable from here
from rankbridge.reports.cells import fmt_ci, fmt_diff, fmt_p, fmt_pct, fmt_value
from rankbridge.store import RunStore, TrendPoint
from rankbridge.types import GoldenSet, Qrels, Run

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

__all__ = [
    "CategoryRow",
    "CategoryTable",
    "CutoffTable",
    "FailedTop1",
    "FailureList",
    "Headline",
    "PerQuerySection",
    "QueryItem",
    "RagasSection",
    "Recommendation",
    "RelevanceProfile",
    "RelevanceSection",
    "Report",
    "RerankRow",
    "RerankSection",
    "RunFailureSummary",
    "RunQueries",
    "SeriesPoint",
    "StrategyRow",
    "TrendPoint",
    "TrendSeries",
    "build_report",
    "plain_reading",
    "trend_from_history",
]

#: Rank cut-offs of the "metric by rank cut-off" table (those deeper than every run are left out).
DEFAULT_CUTOFFS = (1, 3, 5, 10, 20)
#: Measures of the "metric by rank cut-off" table.
CUTOFF_MEASURES = ("hit_rate", "ndcg", "recall", "precision")
#: Column prefix of RAGAS scores in :attr:`Evaluation.values`.
RAGAS_PREFIX = "ragas."
#: Share of questions with a relevant chunk from which an MRR reading names a "typical" rank (1 / MRR).
TYPICAL_FOUND = 0.8
#: The metric that picks the recommended strategy by default (Databricks' headline).
RECOMMEND_BY = "dcg@10"
#: The stage of a run that holds its list before a reranker or postprocessor (see :attr:`Run.stages`).
RERANK_STAGE = "retrieved"
#: Rows of the per-query table by default (when the comparison has RAGAS columns).
PER_QUERY_ROWS = 20
#: Share of unjudged results (in the relevance depth) above which the report warns.
UNJUDGED_WARNING = 0.3
Format = Literal["terminal", "md", "html", "json", "text"]

RAGAS_NOTE = (
    "RAGAS context precision is not precision@k. RAGAS averages precision@i over the ranks i of the contexts "
    "an LLM judged useful and divides by the number of useful contexts it retrieved; precision@k divides "
    "the relevant chunks in the top k by k, and AP divides by all relevant chunks in the qrels. On the same "
    "list RAGAS can give 0.83 where AP gives 0.56. RAGAS ID-based precision and recall are set measures over "
    "the whole retrieved list (no rank, no cut-off). RAGAS means are over the queries it could score (n)."
)


# --------------------------------------------------------------------------------------------------
# Formatting helpers shared by the renderers
# --------------------------------------------------------------------------------------------------


def _nan(x: float | None) -> bool:
    return x is None or not math.isfinite(x)


# --------------------------------------------------------------------------------------------------
# Plain-language readings
# --------------------------------------------------------------------------------------------------


def _nice_fraction(v: float) -> tuple[int, int] | None:
    """``(a, b)`` with b <= 10 and a/b within 0.005 of ``v`` (smallest b), else None."""
    for b in range(2, 11):
        a = round(v * b)
        if 0 < a < b and abs(v - a / b) <= 0.005:
            return a, b
    return None


def _relevant_word(rel: int) -> str:
    return "a relevant chunk" if rel == 1 else f"a chunk with label >= {rel}"


def plain_reading(
    metric: str | Measure,
    value: float,
    *,
    num_queries: int | None = None,
    found: float | None = None,
    depth: int | None = None,
) -> str:
    """What a metric's mean says in plain words, for a reader who does not know the metric.

    Parameters
    ----------
    metric:
        A metric name (``"mrr@10"``, ``"hit_rate@5"``) or a RAGAS column (``"ragas.faithfulness"``).
    value:
        The mean.
    num_queries:
        The number of questions the mean is over; adds counts such as "(8 of 10)" to hit rates.
    found:
        The share of questions with a relevant chunk within the metric's cut-off in the run (its hit rate
        there). An MRR reading says where the first relevant chunk "typically" sits only when at least
        :data:`TYPICAL_FOUND` of the questions have one; otherwise it says what share has none.
    depth:
        The longest list the run returned: a cut-off beyond it is named as such ("the top 10 (the run
        returns at most 5)").

    Returns
    -------
    str
        One sentence fragment, without a trailing period.

    Examples
    --------
    >>> plain_reading("mrr", 0.5)
    'the first relevant chunk typically sits at rank 2'
    >>> plain_reading("hit_rate@5", 0.8, num_queries=10)
    '4 in 5 questions (8 of 10) get a relevant chunk in the top 5'
    >>> plain_reading("precision@5", 0.4)
    'on average 2.0 of the top 5 chunks are relevant'
    >>> print(plain_reading("recall@10", 0.7))
    the top 10 holds 70% of a question's relevant chunks, on average
    >>> print(plain_reading("mrr@10", 0.3, found=0.4))
    60% of questions have no relevant chunk in the top 10; for the others the first one typically sits around rank 1.3
    >>> print(plain_reading("hit_rate@10", 0.5, depth=5))
    1 in 2 questions get a relevant chunk in the top 10 (the run returns at most 5)
    """
    if isinstance(metric, str) and metric.startswith(RAGAS_PREFIX):
        return _ragas_reading(metric[len(RAGAS_PREFIX) :], value)
    m = parse_measure(metric)
    if _nan(value):
        return "undefined (no query could be scored)"
    k = m.k
    short = f" (the run returns at most {depth})" if depth is not None and k is not None and depth < k else ""
    top = f"the top {k}{short}" if k is not None else "the list"
    rel = "relevant" if m.rel == 1 else f"relevant (label >= {m.rel})"
    pct = fmt_pct(value)
    if m.name == "hit_rate":
        what = f"get {_relevant_word(m.rel)} in {top}"
        count = f" ({round(value * num_queries)} of {num_queries})" if num_queries else ""
        if value >= 1.0:
            return f"every question{count} gets {_relevant_word(m.rel)} in {top}"
        if value <= 0.0:
            return f"no question{count} gets {_relevant_word(m.rel)} in {top}"
        frac = _nice_fraction(value)
        lead = f"{frac[0]} in {frac[1]} questions" if frac else f"{pct} of questions"
        return f"{lead}{count} {what}"
    if m.name == "mrr":
        where = ""
        if value <= 0.0:
            return f"no question has {_relevant_word(m.rel)} in {top}"
        if found is not None and not _nan(found) and 0 < found < TYPICAL_FOUND:
            # most of the mean is zeros: 1/MRR would be a rank almost no question has
            rank = min(value / found, 1.0) ** -1
            at = f"at rank {round(rank)}" if abs(rank - round(rank)) < 0.05 else f"around rank {rank:.1f}"
            return (
                f"{fmt_pct(1 - found)} of questions have no {rel} chunk in {top}; "
                f"for the others the first one typically sits {at}"
            )
        if value >= 0.95:
            return f"the first {rel} chunk is almost always at rank 1{where}"
        rank = 1.0 / value
        if abs(rank - round(rank)) < 0.05:
            return f"the first {rel} chunk typically sits at rank {round(rank)}{where}"
        return f"the first {rel} chunk typically sits around rank {rank:.1f}{where}"
    if m.name == "precision":
        if k == 1:
            return f"the top chunk is {rel} for {pct} of questions"
        return f"on average {value * (k or 1):.1f} of the top {k} chunks are {rel}{short}"
    if m.name == "recall":
        return f"{top} holds {pct} of a question's {rel} chunks, on average"
    if m.name in ("ndcg", "ndcg_exp"):
        gain = " (exponential gain)" if m.name == "ndcg_exp" else ""
        return f"the order of {top} reaches {pct} of the best possible ordering{gain}; 1.0 = best chunks first"
    if m.name == "map":
        return f"average precision at the ranks of the {rel} chunks in {top}; 1.0 = all of them ranked first"
    if m.name in ("dcg", "dcg_exp"):
        return f"graded gain collected in {top}, discounted by rank (unnormalised; higher is better)"
    if m.name == "r_precision":
        return f"of the top R results (R = a question's number of relevant chunks), {pct} are {rel}"
    if m.name == "judged":
        return f"{pct} of {top} has a relevance judgment; unjudged chunks count as not relevant"
    if m.name == "num_ret":
        return f"{value:.1f} chunks retrieved per question"
    if m.name == "num_rel":
        return f"{value:.1f} {rel} chunks per question in the judgments"
    if m.name == "num_rel_ret":
        return f"{value:.1f} {rel} chunks retrieved per question"
    return m.description  # pragma: no cover - every measure is handled above


_RAGAS_READINGS = {
    "context_precision": "RAGAS' AP-like score over the contexts an LLM judged useful (not precision@k)",
    "context_recall": "share of the reference answer's claims an LLM finds in the contexts",
    "faithfulness": "share of the answer's claims that the retrieved contexts support",
    "answer_relevancy": "how closely the answer addresses the question (LLM and embeddings)",
    "id_based_context_precision": "share of the retrieved ids that are reference ids (a set measure, no rank)",
    "id_based_context_recall": "share of the reference ids that were retrieved (a set measure, no rank)",
    "non_llm_context_precision_with_reference": "AP-like, contexts matched to references by string similarity",
    "non_llm_context_recall": "share of reference contexts matched by a retrieved context (string similarity)",
}


def _ragas_reading(name: str, value: float) -> str:
    what = _RAGAS_READINGS.get(name, "a RAGAS score in [0, 1]")
    return what if _nan(value) else f"{what}: {fmt_pct(value)}"


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Headline(JsonFields):
    """One headline number: the best run on a metric, what it means, and how it compares with the baseline.

    Attributes
    ----------
    metric, run:
        The metric and the best run on it.
    value:
        The run's mean with its interval.
    reading:
        A plain-language reading of the mean (:func:`plain_reading`).
    versus:
        The difference to the baseline in words, or None when the best run is the baseline (or alone).
    significant:
        Whether that difference is significant (adjusted p below alpha); None without a comparison.
    """

    metric: str
    run: str
    value: Interval
    reading: str
    versus: str | None = None
    significant: bool | None = None


@dataclass(frozen=True)
class StrategyRow(JsonFields):
    """One (metric, run) row of the per-strategy table; the paired fields are None for the baseline."""

    metric: str
    run: str
    baseline: bool
    mean: Interval
    reading: str
    difference: Interval | None = None
    relative_change: float | None = None
    pvalue: float | None = None
    pvalue_adjusted: float | None = None
    significant: bool | None = None
    effect_size: float | None = None
    wins: int | None = None
    ties: int | None = None
    losses: int | None = None
    warning: str | None = None
    unscored: int = 0
    unscored_reasons: str | None = None
    paired_n: int | None = None
    left_out: int = 0

    @property
    def scored_note(self) -> str | None:
        """``"n=10 of 12; 2 not scored: 2 error"`` for a mean over fewer than all questions (a RAGAS column)."""
        if not self.unscored:
            return None
        total = self.mean.n + self.unscored
        why = f": {self.unscored_reasons}" if self.unscored_reasons else ""
        return f"n={self.mean.n} of {total}; {self.unscored} not scored{why}"

    def _json_extra(self) -> dict[str, Any]:
        return {"n": self.mean.n}


_ROW_FIELDS = tuple(f.name for f in fields(StrategyRow))
#: A row's numbers that are its paired comparison's own, under the same names: its fields from ``difference``
#: to ``warning`` (None on the baseline's row).
_PAIRED_NUMBERS = _ROW_FIELDS[_ROW_FIELDS.index("difference") : _ROW_FIELDS.index("warning") + 1]
#: What a row's JSON writes right after the mean: the questions it is over (n) and how many were scored.
_SCORED_COUNTS = ("n", "unscored", "unscored_reasons", "paired_n", "left_out")
StrategyRow._json_keys = (
    *_ROW_FIELDS[: _ROW_FIELDS.index("mean") + 1],
    *_SCORED_COUNTS,
    *(name for name in _ROW_FIELDS[_ROW_FIELDS.index("mean") + 1 :] if name not in _SCORED_COUNTS),
)


@dataclass(frozen=True)
class CutoffTable(JsonFields):
    """Metrics by rank cut-off: ``values[measure][run][i]`` is the mean at ``ks[i]``.

    Attributes
    ----------
    measures:
        Measure names (``"hit_rate"``, ``"ndcg"``, ``"recall"``, ``"precision"``).
    ks:
        The cut-offs, ascending.
    values:
        Measure -> run -> means, one per cut-off.
    depth:
        The longest retrieved list of any run (cut-offs beyond it are left out).
    """

    measures: tuple[str, ...]
    ks: tuple[int, ...]
    values: dict[str, dict[str, tuple[float, ...]]]
    depth: int

    _json_keys = ("measures", "ks", "depth", "values")


@dataclass(frozen=True)
class CategoryRow(JsonFields):
    """One category: its size, ``values[metric][run]`` means with intervals, and a small-sample warning."""

    name: str
    n: int
    values: dict[str, dict[str, Interval]]
    warning: str | None = None


@dataclass(frozen=True)
class CategoryTable(JsonFields):
    """Means per query category (or any metadata field, named in ``by``)."""

    by: str
    metrics: tuple[str, ...]
    runs: tuple[str, ...]
    rows: tuple[CategoryRow, ...]


@dataclass(frozen=True)
class QueryItem(JsonFields):
    """One query in a list (best, worst, a failure list), with what was expected and what came back.

    ``top_text`` is the text of the first retrieved chunk when known (from the golden set's corpus, the
    run's hits or ``doc_texts``), shortened.
    """

    query_id: str
    query: str | None
    run: str
    value: float | None = None
    expected: tuple[str, ...] = ()
    retrieved: tuple[str, ...] = ()
    top_score: float | None = None
    first_relevant_rank: int | None = None
    top_text: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class FailureList(JsonFields):
    """One failure list of one run: ``count`` queries, the first few in ``items``."""

    key: str
    label: str
    title: str
    count: int
    items: tuple[QueryItem, ...]


@dataclass(frozen=True)
class RunFailureSummary(JsonFields):
    """A run's failure lists (zero hit, top-1 irrelevant, ranked low, mostly unjudged, failed)."""

    run: str
    k: int
    num_queries: int
    lists: tuple[FailureList, ...]


@dataclass(frozen=True)
class RunQueries(JsonFields):
    """A run's best and worst queries by ``metric``."""

    run: str
    metric: str
    best: tuple[QueryItem, ...]
    worst: tuple[QueryItem, ...]


@dataclass(frozen=True)
class SeriesPoint(JsonFields):
    """A :class:`~rankbridge.store.TrendPoint` as a report shows it: the time as ISO 8601 text (a point given
    by hand may carry any label), the history record (None for such a point), and the mean."""

    timestamp: str
    record_id: int | None
    mean: float


@dataclass(frozen=True)
class TrendSeries(JsonFields):
    """A metric's mean across saved runs (of one run name, or all when ``name`` is None), oldest first.

    ``group`` names the comparable group of history records the points come from (the store's
    :attr:`~rankbridge.store.HistorySeries.label`: one qrels fingerprint, one metric definitions version);
    ``current`` is False for a group other than the newest one (its means are not comparable with it).
    """

    metric: str
    name: str | None
    points: tuple[SeriesPoint, ...]
    group: str | None = None
    current: bool = True

    def __post_init__(self) -> None:
        # store TrendPoints and (timestamp, record_id, mean) tuples become the report's SeriesPoints
        object.__setattr__(self, "points", tuple(_trend_point(p) for p in self.points))

    @property
    def label(self) -> str:
        """``"ndcg@10 (dense)"``, or the metric alone; a series that is not the current one names its group."""
        base = self.metric if self.name is None else f"{self.metric} ({self.name})"
        return base if self.current or self.group is None else f"{base}, {self.group}"

    _json_keys = ("metric", "name", "group", "current", "points")


@dataclass(frozen=True)
class RelevanceProfile(JsonFields):
    """How relevant one run's results are, by rank position and overall (top ``depth`` results).

    Attributes
    ----------
    run:
        The run.
    mean_by_rank:
        Mean label at rank 1, 2, ..., ``depth`` (unjudged and negative labels count as 0), over the
        questions with a result at that rank (NaN where none has one).
    shares:
        Share of the returned results (top ``depth`` of every question) in each of
        :data:`RELEVANCE_CLASSES`, Databricks' classes: highly relevant (label >= the section's
        ``high_label``, 3 on a 0-3 scale), relevant (from ``relevant_label``, 2 on a 0-3 scale, up to the
        high label), not relevant (judged below ``relevant_label``: 0-1 on a 0-3 scale) and unjudged (no
        judgment, apart). "highly relevant" is 0 for binary judgments. The shares add up to 1.
    counts:
        The same as counts of results.
    mean_relevance:
        Mean relevance score with its interval: per question, the mean label of its top ``depth``
        results (unjudged and negative labels count 0, a question without results scores 0), averaged over
        the questions.
    """

    run: str
    mean_by_rank: tuple[float, ...]
    shares: dict[str, float]
    counts: dict[str, int]
    mean_relevance: Interval | None = None

    @property
    def relevant_plus(self) -> float:
        """Share of results relevant or better ("relevant+": highly relevant and relevant together)."""
        return self.shares["highly relevant"] + self.shares["relevant"]

    _json_keys = ("run", "mean_by_rank", "shares", "relevant_plus", "counts", "mean_relevance")


@dataclass(frozen=True)
class RelevanceSection(JsonFields):
    """The relevance profile of every run.

    Attributes
    ----------
    graded:
        Whether the judgments have more than one relevant grade (a label above 1).
    max_label:
        The highest label in the judgments.
    high_label:
        The label from which a result is "highly relevant" (3, or the top grade when it is lower);
        None for binary judgments.
    relevant_label:
        The label from which a result is "relevant" (2 when the scale reaches 3, as Databricks counts
        "relevant+ >= 2"; else 1).
    depth:
        How many top results of each question are counted.
    profiles:
        One per run.
    reading:
        A sentence on the first run's profile.
    """

    graded: bool
    max_label: int
    high_label: int | None
    depth: int
    profiles: tuple[RelevanceProfile, ...]
    reading: str
    relevant_label: int = 1

    _json_keys = ("graded", "max_label", "high_label", "relevant_label", "depth", "profiles", "reading")


@dataclass(frozen=True)
class RagasSection(JsonFields):
    """RAGAS columns found in the evaluations.

    Attributes
    ----------
    columns:
        The RAGAS columns, compared ones first.
    values:
        ``values[column][run]`` -- the mean with its interval over the scored rows (``Interval.n``): for a
        column in the comparison it is ``Comparison.means[column][run]`` itself.
    readings:
        What each column measures.
    compared:
        The columns that are in the comparison's metrics (with paired tests in the strategy table).
    num_queries:
        The questions of the comparison.
    unscored:
        ``unscored[column][run]`` -- how many rows RAGAS could not score (never averaged as NaN).
    reasons:
        ``reasons[column][run]`` -- why, grouped (``"2 error: TimeoutError"``); only where rows are unscored.
    differences, pvalues_adjusted, left_out:
        From ``Comparison.paired[column][run]`` (runs other than the baseline, compared columns only): the
        paired difference, its adjusted p-value, and the questions left out of the pair (no value on a side).
    """

    columns: tuple[str, ...]
    values: dict[str, dict[str, Interval]]
    readings: dict[str, str]
    note: str = RAGAS_NOTE
    compared: tuple[str, ...] = ()
    num_queries: int = 0
    unscored: dict[str, dict[str, int]] = field(default_factory=dict)
    reasons: dict[str, dict[str, str]] = field(default_factory=dict)
    differences: dict[str, dict[str, Interval]] = field(default_factory=dict)
    pvalues_adjusted: dict[str, dict[str, float]] = field(default_factory=dict)
    left_out: dict[str, dict[str, int]] = field(default_factory=dict)

    def scored_note(self, column: str, run: str) -> str:
        """``"n=10 of 12; 2 not scored: 2 error: ScriptedFailure"`` (or ``"n=12 of 12"``)."""
        iv = self.values[column][run]
        k = self.unscored.get(column, {}).get(run, 0)
        total = self.num_queries or iv.n + k
        if not k:
            return f"n={iv.n} of {total}"
        why = self.reasons.get(column, {}).get(run)
        return f"n={iv.n} of {total}; {k} not scored" + (f": {why}" if why else "")


@dataclass(frozen=True)
class PerQuerySection(JsonFields):
    """The per-query table: one row per question, the headline metrics and RAGAS columns side by side.

    Bounded: the ``len(rows)`` worst questions by ``by`` (mean over the runs that scored it; a question no
    run could score comes first), of ``total``.

    Attributes
    ----------
    metrics, runs:
        The columns and the runs.
    by:
        The metric the rows are picked and ordered by (the first ranking metric of the comparison).
    total:
        The questions of the comparison.
    rows:
        :class:`~rankbridge.analysis.QueryRow` s (question text shortened); a NaN value is an unscored cell,
        its reason in ``reasons``.
    unscored:
        ``unscored[metric]`` -- unscored cells of that metric over all questions and runs.
    """

    metrics: tuple[str, ...]
    runs: tuple[str, ...]
    by: str
    total: int
    rows: tuple[QueryRow, ...]
    unscored: dict[str, int] = field(default_factory=dict)

    _json_keys = ("metrics", "runs", "by", "total", "shown", "rows", "unscored")

    def _json_extra(self) -> dict[str, Any]:
        return {"shown": len(self.rows)}


def _flip(iv: Interval) -> Interval:
    """The interval of ``-x`` (a difference read the other way round)."""
    return Interval(-iv.estimate, -iv.high, -iv.low, iv.level, iv.method, iv.n)


@dataclass(frozen=True)
class Recommendation(JsonFields):
    """The recommended strategy: the best mean on :attr:`metric`, and whether it beats the runner-up.

    Attributes
    ----------
    metric:
        The metric that decides (``build_report(recommend_by=...)``, default ``dcg@10``).
    run, value:
        The best run and its mean with interval.
    runner_up, runner_up_value:
        The second best run and its mean (None with one run).
    difference:
        ``mean(best - runner-up)`` over the same questions, with its interval.
    pvalue:
        The paired test's p-value for that difference: the comparison's Holm-adjusted one when one of the
        two is the baseline and the metric is in the comparison (``adjusted`` True), else one more paired
        test between the two (``adjusted`` False, the comparison's test and seed).
    significant:
        ``pvalue < alpha`` (None with one run).
    text:
        The headline sentence.
    notes:
        Why the metric differs from the one asked for, how deep the runs are...
    """

    metric: str
    run: str
    value: Interval
    runner_up: str | None
    runner_up_value: Interval | None
    difference: Interval | None
    pvalue: float | None
    adjusted: bool
    significant: bool | None
    test: str
    text: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RerankRow(JsonFields):
    """One strategy with and without its reranker (or postprocessor).

    Attributes
    ----------
    strategy:
        The strategy's name without the reranker (``"bm25"`` for ``"bm25+rerank"``).
    without, with_:
        The run names compared (``"<run> (retrieved stage)"`` for a run's pre-reranker stage); ``with_`` is None
        for a strategy without a reranker variant.
    source:
        ``"stage"`` (the run's ``stages["retrieved"]``), ``"name"`` (``x`` / ``x+rerank``), ``"given"``
        (``build_report(reranker_pairs=...)``), or None.
    metric:
        The headline metric (the recommendation's).
    values, relevance:
        ``{"without": Interval, "with": Interval}``: the metric's mean and the mean relevance label.
    difference, pvalue, significant:
        ``with - without`` over the same questions, its paired test (unadjusted), and ``pvalue < alpha``.
    """

    strategy: str
    without: str
    with_: str | None
    source: str | None
    metric: str
    values: dict[str, Interval]
    relevance: dict[str, Interval]
    difference: Interval | None = None
    pvalue: float | None = None
    significant: bool | None = None

    _json_keys = (
        "strategy",
        "without",
        "with",
        "source",
        "metric",
        "values",
        "relevance",
        "difference",
        "pvalue",
        "significant",
    )
    _json_omit = ("with_",)  # written as "with" (the field's underscore only dodges the keyword)

    def _json_extra(self) -> dict[str, Any]:
        return {"with": self.with_}


@dataclass(frozen=True)
class RerankSection(JsonFields):
    """Every strategy with and without reranker: ``rows`` (paired ones first), and how runs were paired."""

    metric: str
    depth: int
    rows: tuple[RerankRow, ...]
    note: str

    @property
    def paired(self) -> tuple[RerankRow, ...]:
        """The rows that have a reranker variant."""
        return tuple(r for r in self.rows if r.with_ is not None)

    _json_keys = ("metric", "depth", "rows", "paired", "note")

    def _json_extra(self) -> dict[str, Any]:
        return {"paired": len(self.paired)}  # how many rows have a reranker variant


@dataclass(frozen=True)
class FailedTop1(JsonFields):
    """A run's failed questions as Databricks counts them: the top result is judged not relevant (label 0).

    Attributes
    ----------
    run:
        The run.
    count:
        Questions whose first result is judged 0 (or below).
    unjudged:
        Questions whose first result has no judgment (not counted as failed; judge them).
    empty:
        Questions with no result at all.
    num_queries:
        Questions in the run's evaluation.
    items:
        The first few failed questions.
    """

    run: str
    count: int
    unjudged: int
    empty: int
    num_queries: int
    items: tuple[QueryItem, ...]


@dataclass(frozen=True)
class Report(JsonFields):
    """Everything a retrieval report shows, as plain data; render it with the ``to_*`` methods.

    Build one with :func:`build_report` (or ``Report.from_comparison``). The object is frozen and holds
    no reference to runs, evaluations or drawing libraries.

    Attributes
    ----------
    title:
        The report's title.
    generated_at:
        When it was built (ISO 8601), or the string given to :func:`build_report`.
    rankbridge_version:
        The version that built it.
    qrels_name:
        The judgments' name, when known.
    num_queries:
        How many questions every number is over.
    runs, baseline, metrics:
        The strategies (in the order given), the one every other is compared with, and the metrics.
    settings:
        How the statistics were computed (test, correction, alpha, level, interval method, resamples, seed).
    headlines:
        One per metric: the best run, its reading, and its difference to the baseline.
    strategies:
        The per-strategy table, one row per (metric, run).
    cutoffs:
        Metrics by rank cut-off, when the evaluations kept their hit tables.
    categories:
        Means per query category, when the golden set has categories (or slices were given).
    queries:
        Best and worst queries per run.
    failures:
        Failure lists per run, when runs or a :class:`~rankbridge.analysis.Failures` were given.
    unsolved:
        Queries no run has a relevant chunk for in its top ``failures_k``.
    failures_k:
        The cut-off that defines a hit in the failure lists.
    trend:
        Metric means over saved runs.
    relevance:
        The relevance profile of the results.
    ragas:
        RAGAS columns, when the evaluations carry any.
    per_query:
        The per-query table (the worst questions by the first ranking metric, every metric and RAGAS
        column per run), unless ``per_query=0``.
    warnings:
        Everything the reader should be warned about (too few queries, failed queries, unjudged results...).
    notes:
        How to read the report.
    recommendation:
        The recommended strategy (best ``recommend_by``, default dcg@10) against the runner-up.
    rerank:
        Each strategy with and without its reranker (paired by stage or by name), when judgments allow.
    failed_top1:
        Per run, the questions whose top result is judged not relevant (Databricks' failed queries).
    trend_metric:
        The metric of the trend series.
    trend_notes:
        Why saved runs were left out of a trend or split into several series.
    """

    title: str
    generated_at: str
    rankbridge_version: str
    qrels_name: str | None
    num_queries: int
    runs: tuple[str, ...]
    baseline: str
    metrics: tuple[str, ...]
    settings: dict[str, Any]
    headlines: tuple[Headline, ...]
    strategies: tuple[StrategyRow, ...]
    cutoffs: CutoffTable | None = None
    categories: CategoryTable | None = None
    queries: tuple[RunQueries, ...] = ()
    failures: tuple[RunFailureSummary, ...] = ()
    unsolved: tuple[QueryItem, ...] = ()
    failures_k: int | None = None
    trend: tuple[TrendSeries, ...] = ()
    relevance: RelevanceSection | None = None
    ragas: RagasSection | None = None
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    per_query: PerQuerySection | None = None
    recommendation: Recommendation | None = None
    rerank: RerankSection | None = None
    failed_top1: tuple[FailedTop1, ...] = ()
    trend_metric: str | None = None
    trend_notes: tuple[str, ...] = ()

    # -- construction -------------------------------------------------------------------------------

    @classmethod
    def from_comparison(cls, comparison: Comparison, **kwargs: Any) -> Report:
        """The same as :func:`build_report` (``Report.from_comparison(cmp, runs=runs)``)."""
        return build_report(comparison, **kwargs)

    # -- access -------------------------------------------------------------------------------------

    def rows(self, metric: str | None = None) -> list[StrategyRow]:
        """The per-strategy rows, of one metric or all.

        Examples
        --------
        >>> from rankbridge.analysis import compare
        >>> cmp = compare({"a": {"q1": ["d1"]}, "b": {"q1": ["x"]}}, {"q1": {"d1": 1}}, ["P@1"])
        >>> [(r.run, r.mean.estimate) for r in build_report(cmp).rows("precision@1")]
        [('a', 1.0), ('b', 0.0)]
        """
        if metric is None:
            return list(self.strategies)
        name = metric if metric.startswith(RAGAS_PREFIX) else str(parse_measure(metric))
        if name not in self.metrics:
            raise InputError(f"metric {name!r} is not in this report; it has {', '.join(self.metrics)}")
        return [r for r in self.strategies if r.metric == name]

    # -- output -------------------------------------------------------------------------------------

    def to_json(self, *, indent: int | None = 2) -> str:
        """The report as JSON text (see :mod:`rankbridge.reports.json`)."""
        return _json.render(self, indent=indent)

    def to_markdown(self) -> str:
        """The report as Markdown (see :mod:`rankbridge.reports.markdown`)."""
        return _markdown.render(self)

    def to_html(self, *, plots: bool = True, fragment: bool = False) -> str:
        """The report as one self-contained HTML file (see :mod:`rankbridge.reports.html`).

        Needs the ``report`` extra (Jinja2, and matplotlib for ``plots=True``).
        """
        return _html.render(self, plots=plots, fragment=fragment)

    def to_text(self, *, width: int = 120) -> str:
        """The terminal rendering as plain text, without colour (needs rich)."""
        return _terminal.render_text(self, width=width)

    def print(self, console: Console | None = None) -> None:
        """Print the report to the terminal with rich tables (plain Markdown when rich is missing)."""
        _terminal.print_report(self, console=console)

    def save(self, path: str | os.PathLike[str], format: Format | None = None) -> None:
        """Write the report atomically; the format comes from ``format`` or the file's suffix.

        ``.html``/``.htm`` -> HTML, ``.md`` -> Markdown, ``.json`` -> JSON, anything else -> plain text.
        """
        fmt = format or _format_from_suffix(os.fspath(path))
        if fmt == "html":
            text = self.to_html()
        elif fmt == "md":
            text = self.to_markdown()
        elif fmt == "json":
            text = self.to_json()
        elif fmt in ("terminal", "text"):
            text = self.to_text()
        else:
            raise InputError(f"format must be one of terminal, md, html, json. Got {fmt!r} instead.")
        with atomic_write(path) as fh:
            fh.write(text if text.endswith("\n") else text + "\n")

    def _repr_html_(self) -> str | None:
        """Notebook rendering: the HTML report as a fragment (no plots when matplotlib is missing)."""
        try:
            import jinja2  # noqa: F401
        except ImportError:
            return None
        try:
            import matplotlib  # noqa: F401

            plots = True
        except ImportError:
            plots = False
        return self.to_html(plots=plots, fragment=True)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def __str__(self) -> str:
        return self.to_markdown()


# A report's JSON: its fields in order, but the per-query table last (it came after the other sections).
Report._json_keys = (*(f.name for f in fields(Report) if f.name != "per_query"), "per_query")


def _format_from_suffix(path: str) -> Format:
    lower = path.lower()
    if lower.endswith((".html", ".htm")):
        return "html"
    if lower.endswith((".md", ".markdown")):
        return "md"
    if lower.endswith(".json"):
        return "json"
    return "text"


# --------------------------------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------------------------------


def _settings(cmp: Comparison) -> dict[str, Any]:
    return {
        "test": cmp.test,
        "correction": cmp.correction,
        "alpha": cmp.alpha,
        "level": cmp.level,
        "ci_method": cmp.ci_method,
        "n_resamples": cmp.n_resamples,
        "seed": cmp.seed,
    }


def _versus(cmp: Comparison, metric: str, run: str) -> tuple[str | None, bool | None]:
    pc = cmp.paired[metric].get(run)
    if pc is None:
        return None, None
    rel = pc.relative_change
    rel_txt = "" if _nan(rel) else f" ({100 * rel:+.0f}%)"
    verdict = "significant" if pc.significant else "not significant"
    text = (
        f"{fmt_diff(pc.difference.estimate)}{rel_txt} vs {cmp.baseline} "
        f"{fmt_ci(pc.difference, sign=True)}, p adj {fmt_p(pc.pvalue_adjusted)}: {verdict}"
    )
    return text, pc.significant


def _run_reading(cmp: Comparison, metric: str, run: str, value: float) -> str:
    """:func:`plain_reading` of one run's mean, naming its real depth and, for MRR, how many find anything."""
    table = cmp.evaluations[run].table
    if metric.startswith(RAGAS_PREFIX) or table is None or not table.num_queries:
        return plain_reading(metric, value, num_queries=cmp.num_queries)
    m = parse_measure(metric)
    depth = int(table.n_ret.max())
    found = None
    if m.name == "mrr":
        found = float(compute(table, Measure("hit_rate", m.k or max(depth, 1), m.rel)).mean())
    return plain_reading(metric, value, num_queries=cmp.num_queries, found=found, depth=depth)


def _headlines(cmp: Comparison) -> tuple[Headline, ...]:
    out = []
    for metric in cmp.metrics:
        best = cmp.best(metric)
        if cmp.means[metric][cmp.baseline].estimate == cmp.means[metric][best].estimate:
            best = cmp.baseline  # on a tie, the baseline is the headline
        iv = cmp.means[metric][best]
        versus, sig = _versus(cmp, metric, best)
        if versus is None and len(cmp.runs) > 1:
            versus = "the baseline is the best run"
        out.append(
            Headline(
                metric=metric,
                run=best,
                value=iv,
                reading=_run_reading(cmp, metric, best, iv.estimate),
                versus=versus,
                significant=sig,
            )
        )
    return tuple(out)


def _strategies(cmp: Comparison, reasons: Mapping[str, Mapping[str, str]]) -> tuple[StrategyRow, ...]:
    rows = []
    for metric in cmp.metrics:
        for run in cmp.runs:
            iv = cmp.means[metric][run]
            pc = cmp.paired[metric].get(run)  # None for the baseline: its paired fields stay None
            paired: dict[str, Any] = {}
            if pc is not None:
                paired = {name: getattr(pc, name) for name in ("left_out", *_PAIRED_NUMBERS)}
                paired["paired_n"] = pc.num_queries
            rows.append(
                StrategyRow(
                    metric,
                    run,
                    run == cmp.baseline,
                    iv,
                    _run_reading(cmp, metric, run, iv.estimate),
                    unscored=len(cmp.unscored.get(metric, {}).get(run, ())),
                    unscored_reasons=reasons.get(metric, {}).get(run),
                    **paired,
                )
            )
    return tuple(rows)


def _tables(cmp: Comparison) -> dict[str, HitTable]:
    return {run: ev.table for run, ev in cmp.evaluations.items() if ev.table is not None}


def _cutoffs(cmp: Comparison, ks: Sequence[int]) -> CutoffTable | None:
    tables = _tables(cmp)
    if not tables or len(tables) != len(cmp.runs):
        return None
    depth = max((int(t.n_ret.max()) if t.num_queries else 0) for t in tables.values())
    kept = tuple(k for k in sorted(set(ks)) if k <= max(depth, 1))
    if not kept:
        kept = (1,)
    values: dict[str, dict[str, tuple[float, ...]]] = {}
    for name in CUTOFF_MEASURES:
        values[name] = {}
        for run in cmp.runs:
            t = tables[run]
            values[name][run] = tuple(
                float(compute(t, Measure(name, k)).mean()) if t.num_queries else math.nan for k in kept
            )
    return CutoffTable(measures=CUTOFF_MEASURES, ks=kept, values=values, depth=depth)


def _relevance(cmp: Comparison, depth: int) -> RelevanceSection | None:
    tables = _tables(cmp)
    if not tables:
        return None
    max_label = label_scale(tables.values())
    if max_label < 1:
        return None
    d = relevance_depth(tables.values(), depth)
    graded = max_label >= 2
    high = min(3, max_label) if graded else None
    relevant_label = 2 if max_label >= 3 else 1
    profiles = []
    for run in cmp.runs:
        t = tables.get(run)
        if t is None:
            continue
        top = top_labels(t, d)
        counts = relevance_classes(top.distribution, high=high, relevant=relevant_label)
        total = top.total
        shares = {k: (v / total if total else math.nan) for k, v in counts.items()}
        mean_rel = cmp.interval(top.per_query, (0.0, float(max_label)))
        mean_by_rank = top.mean_by_rank
        profiles.append(RelevanceProfile(run, mean_by_rank, shares, counts, mean_rel))
    if not profiles:
        return None
    first = profiles[0]
    parts = []
    if graded:
        parts.append(f"{fmt_pct(first.shares['highly relevant'])} highly relevant (label >= {high})")
        parts.append(f"{fmt_pct(first.relevant_plus)} relevant or better (label >= {relevant_label})")
        parts.append(f"{fmt_pct(first.shares['not relevant'])} not relevant (judged below {relevant_label})")
    else:
        parts.append(f"{fmt_pct(first.shares['relevant'])} relevant")
        parts.append(f"{fmt_pct(first.shares['not relevant'])} judged not relevant")
    parts.append(f"{fmt_pct(first.shares['unjudged'])} unjudged")
    reading = f"In the top {d} of {first.run}, " + ", ".join(parts[:-1]) + f" and {parts[-1]}"
    if first.mean_relevance is not None and not _nan(first.mean_relevance.estimate):
        reading += f"; mean relevance {fmt_value(first.mean_relevance.estimate, 2)} {fmt_ci(first.mean_relevance, 2)}"
    finite = [v for v in first.mean_by_rank if not _nan(v)]
    if graded and len(finite) > 1:
        reading += f", going from {finite[0]:.2f} at rank 1 to {finite[-1]:.2f} at rank {len(finite)}"
    return RelevanceSection(
        graded=graded,
        max_label=max_label,
        high_label=high,
        depth=d,
        profiles=tuple(profiles),
        reading=reading + ".",
        relevant_label=relevant_label,
    )


def _values_of(cmp: Comparison, ev: Evaluation, measure: Measure) -> np.ndarray | None:
    """Per-question values of ``measure`` for one evaluation (from its values, else its hit table)."""
    name = str(measure)
    if name in ev.values:
        return np.asarray(ev.values[name], dtype=np.float64)
    if ev.table is not None:
        return np.asarray(compute(ev.table, measure), dtype=np.float64)
    return None


def _bounds(measure: Measure) -> tuple[float, float]:
    return column_facts(str(measure)).bounds


def _paired(cmp: Comparison, a: np.ndarray, b: np.ndarray, measure: Measure) -> tuple[Interval, float]:
    """``mean(a - b)`` with its interval and the comparison's paired test (unadjusted p), from the kernel."""
    pd = cmp.paired_difference(a, b, column_facts(str(measure)).span)
    return pd.difference, float(pd.test.pvalue)


def _recommendation(cmp: Comparison, recommend_by: str) -> Recommendation | None:
    asked = parse_measure(recommend_by)
    measure, notes = asked, []
    values = {r: _values_of(cmp, cmp.evaluations[r], asked) for r in cmp.runs}
    if any(v is None for v in values.values()):
        measure = parse_measure(cmp.metrics[0]) if not cmp.metrics[0].startswith(RAGAS_PREFIX) else None  # type: ignore[assignment]
        if measure is None:
            return None
        notes.append(
            f"{asked} cannot be computed from these evaluations (no hit tables); the recommendation uses {measure}"
        )
        values = {r: _values_of(cmp, cmp.evaluations[r], measure) for r in cmp.runs}
        if any(v is None for v in values.values()):
            return None
    vals: dict[str, np.ndarray] = {r: v for r, v in values.items() if v is not None}
    name = str(measure)
    if name in cmp.means:
        means = {r: cmp.means[name][r] for r in cmp.runs}
    else:
        means = {r: cmp.interval(vals[r], _bounds(measure)) for r in cmp.runs}
    order = sorted(cmp.runs, key=lambda r: (-means[r].estimate, cmp.runs.index(r)))
    best = order[0]
    depths = [int(t.n_ret.max()) for t in _tables(cmp).values() if t.num_queries]
    if measure.k is not None and depths and max(depths) < measure.k:
        notes.append(
            f"the runs return at most {max(depths)} results, so {name} counts their top {max(depths)} "
            f"(a deeper list could score higher)"
        )
    iv = means[best]
    lead = f"Recommended: {best}, the best {name} ({fmt_value(iv.estimate)} {fmt_ci(iv)})"
    if len(order) == 1:
        return Recommendation(
            name, best, iv, None, None, None, None, False, None, cmp.test, lead + "; the only strategy.", tuple(notes)
        )
    second = order[1]
    adjusted = False
    if name in cmp.paired and cmp.baseline in (best, second):
        other = second if best == cmp.baseline else best
        pc = cmp.paired[name][other]
        diff = pc.difference if best == other else _flip(pc.difference)
        p, adjusted = pc.pvalue_adjusted, True
    else:
        diff, p = _paired(cmp, vals[best], vals[second], measure)
    significant = bool(p < cmp.alpha) and diff.estimate > 0
    p_text = f"p adj {fmt_p(p)}" if adjusted else f"p {fmt_p(p)}, {cmp.test} test"
    versus = f"{fmt_diff(diff.estimate)} {fmt_ci(diff, sign=True)}, {p_text}"
    if means[best].estimate == means[second].estimate:
        text = f"{lead}, tied with {second}: the two cannot be told apart ({versus})."
        significant = False
    elif significant:
        text = f"{lead}, significantly better than the runner-up {second} ({versus})."
    else:
        text = (
            f"{lead}, but not significantly better than the runner-up {second} ({versus}): on these "
            f"{cmp.num_queries} questions the two cannot be told apart."
        )
    return Recommendation(
        name, best, iv, second, means[second], diff, p, adjusted, significant, cmp.test, text, tuple(notes)
    )


#: Run names that say "this is ``x`` after a reranker": ``x+rerank``, ``x + reranker``, ``x+rerank(...)``,
#: ``x (reranked)``, case-insensitive.
RERANK_NAME = re.compile(r"^(?P<base>.+?)(?:\s*\+\s*rerank(?:ed|er)?(?:\s*[:(\[].*)?|\s+\(reranked\))$", re.IGNORECASE)


def _rerank_pairs(
    cmp: Comparison, runs: Mapping[str, Run] | None, given: Mapping[str, str] | None, stage: str
) -> list[tuple[str, str, str | None, str]]:
    """``(strategy, without, with, source)``: given pairs, then name pairs, then stages."""
    out: list[tuple[str, str, str | None, str]] = []
    used: set[str] = set()
    for with_, without in (given or {}).items():
        if with_ not in cmp.runs or without not in cmp.runs:
            raise InputError(
                f"reranker_pairs: {with_!r} -> {without!r} names a run the comparison lacks; it has "
                f"{', '.join(map(repr, cmp.runs))}"
            )
        out.append((without, without, with_, "given"))
        used.update((with_, without))
    for run in cmp.runs:
        m = RERANK_NAME.match(run)
        if run in used or m is None:
            continue
        base = m.group("base").strip()
        if base in cmp.runs and base not in used:
            out.append((base, base, run, "name"))
            used.update((run, base))
    for run in cmp.runs:
        if run in used or runs is None or not isinstance(runs.get(run), Run) or stage not in runs[run].stages:
            continue
        m = RERANK_NAME.match(run)
        base = m.group("base").strip() if m else run
        out.append((base, f"{run} ({stage} stage)", run, "stage"))
        used.add(run)
    return out


def _rerank(
    cmp: Comparison,
    rec: Recommendation | None,
    runs: Mapping[str, Run] | None,
    judgments: Any,
    given: Mapping[str, str] | None,
    stage: str,
    depth: int,
) -> RerankSection | None:
    tables = _tables(cmp)
    if rec is None or len(tables) != len(cmp.runs):
        return None
    measure = parse_measure(rec.metric)
    d = relevance_depth(tables.values(), depth)
    scale = float(max(label_scale(tables.values()), 1))
    pairs = _rerank_pairs(cmp, runs, given, stage)

    def stats(ev: Evaluation) -> tuple[np.ndarray, Interval, Interval]:
        v = _values_of(cmp, ev, measure)
        assert v is not None and ev.table is not None  # every evaluation has a table here
        iv = cmp.means[rec.metric][ev_name[id(ev)]] if rec.metric in cmp.means and id(ev) in ev_name else None
        return (
            v,
            iv or cmp.interval(v, _bounds(measure)),
            cmp.interval(top_labels(ev.table, d).per_query, (0.0, scale)),
        )

    ev_name = {id(cmp.evaluations[r]): r for r in cmp.runs}
    rows: list[RerankRow] = []
    paired_runs: set[str] = set()
    skipped: list[str] = []
    for strategy, without, with_, source in pairs:
        ev_with = cmp.evaluations[with_]  # type: ignore[index]
        if source == "stage":
            if judgments is None:
                skipped.append(f"{with_} (no judgments to score its {stage!r} stage: pass qrels= or golden=)")
                continue
            pre = runs[with_].to_stage(stage)  # type: ignore[index]
            ev_without = evaluate(judgments, pre, [measure])
            if ev_without.query_ids != cmp.query_ids or ev_without.table is None:
                skipped.append(f"{with_} (its {stage!r} stage covers other questions)")
                continue
        else:
            ev_without = cmp.evaluations[without]
        v0, m0, r0 = stats(ev_without)
        v1, m1, r1 = stats(ev_with)
        diff, p = _paired(cmp, v1, v0, measure)
        rows.append(
            RerankRow(
                strategy,
                without,
                with_,
                source,
                rec.metric,
                {"without": m0, "with": m1},
                {"without": r0, "with": r1},
                diff,
                p,
                bool(p < cmp.alpha),
            )
        )
        paired_runs.update((without, with_))  # type: ignore[arg-type]
    for run in cmp.runs:
        if run in paired_runs:
            continue
        _, m0, r0 = stats(cmp.evaluations[run])
        rows.append(RerankRow(run, run, None, None, rec.metric, {"without": m0}, {"without": r0}))
    how = (
        f"Runs are paired by their {stage!r} stage (the list before the reranker or postprocessor, "
        "Run.stages) or by name ('x' with 'x+rerank', 'x+reranker', 'x+rerank(...)' or 'x (reranked)')"
    )
    n_paired = sum(1 for r in rows if r.with_ is not None)
    if n_paired == 0:
        note = f"No strategy has a reranker variant. {how}."
    else:
        note = (
            f"{n_paired} strateg{'y' if n_paired == 1 else 'ies'} with and without reranker. {how}; the "
            f"difference is with - without on the same questions, {cmp.test} test, not adjusted."
        )
    if skipped:
        note += " Not paired: " + "; ".join(skipped) + "."
    rows.sort(key=lambda r: r.with_ is None)
    return RerankSection(metric=rec.metric, depth=d, rows=tuple(rows), note=note)


def _failed_top1(
    cmp: Comparison,
    runs: Mapping[str, Run] | None,
    judgments: Any,
    query_texts: Mapping[str, str],
    texts: Mapping[str, str],
    max_items: int,
) -> tuple[FailedTop1, ...]:
    q = None
    if judgments is not None:
        q = (
            judgments.qrels
            if isinstance(judgments, GoldenSet)
            else (judgments if isinstance(judgments, Qrels) else Qrels(judgments))
        )
    out = []
    for run in cmp.runs:
        t = cmp.evaluations[run].table
        if t is None:
            continue
        first = t.hit_rank == 1
        top_label = np.full(t.num_queries, np.iinfo(np.int64).min, dtype=np.int64)
        top_label[t.hit_query[first]] = t.hit_label[first]
        judged_top = top_label != np.iinfo(np.int64).min
        failed = np.flatnonzero(judged_top & (top_label <= 0) & (t.n_ret > 0))
        unjudged = int(((~judged_top) & (t.n_ret > 0)).sum())
        items = []
        r = runs.get(run) if runs is not None else None
        for i in failed[:max_items]:
            qid = t.query_ids[int(i)]
            expected = relevant_ids(q[qid]) if q is not None and qid in q else ()
            retrieved: tuple[str, ...] = ()
            top_score = rank = None
            if isinstance(r, Run) and qid in r:
                retrieved, top_score, rank = ranked_summary(r.hits(qid), expected, 5)
            items.append(
                QueryItem(
                    query_id=qid,
                    query=query_texts.get(qid),
                    run=run,
                    expected=expected,
                    retrieved=retrieved,
                    top_score=top_score,
                    first_relevant_rank=rank,
                    top_text=_shorten(texts.get(retrieved[0])) if retrieved else None,
                )
            )
        out.append(FailedTop1(run, len(failed), unjudged, int((t.n_ret == 0).sum()), t.num_queries, tuple(items)))
    return tuple(out)


def _group_reasons(reasons: Sequence[str], limit: int = 3) -> str:
    """``"2 error: TimeoutError, 1 timeout"``: the distinct reasons with their counts, most frequent first."""
    counts: dict[str, int] = {}
    for reason in reasons:
        key = _shorten(reason, 80) or "not scored"
        counts[key] = counts.get(key, 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{n} {reason}" for reason, n in ordered[:limit])
    return text + (", ..." if len(ordered) > limit else "")


def _reasons_of(rows: Mapping[str, QueryRow], column: str, run: str, qids: Sequence[str]) -> str:
    """Why ``run`` has no value of ``column`` for ``qids`` (from the per-query table), grouped."""
    return _group_reasons(
        [rows[q].reasons.get(column, {}).get(run, "not scored") if q in rows else "not scored" for q in qids]
    )


def _unscored_reasons(cmp: Comparison, rows: Mapping[str, QueryRow]) -> dict[str, dict[str, str]]:
    """``{metric: {run: grouped reasons}}`` of the comparison's unscored cells."""
    out: dict[str, dict[str, str]] = {}
    for metric, by_run in cmp.unscored.items():
        for run, qids in by_run.items():
            if qids:
                out.setdefault(metric, {})[run] = _reasons_of(rows, metric, run, qids)
    return out


def _ragas(
    cmp: Comparison, rows: Mapping[str, QueryRow], reasons: Mapping[str, Mapping[str, str]]
) -> RagasSection | None:
    columns: list[str] = [m for m in cmp.metrics if m.startswith(RAGAS_PREFIX)]
    for ev in cmp.evaluations.values():
        columns.extend(c for c in ev.values if c.startswith(RAGAS_PREFIX) and c not in columns)
    if not columns:
        return None
    values: dict[str, dict[str, Interval]] = {}
    unscored: dict[str, dict[str, int]] = {}
    why: dict[str, dict[str, str]] = {}
    diffs: dict[str, dict[str, Interval]] = {}
    padj: dict[str, dict[str, float]] = {}
    left_out: dict[str, dict[str, int]] = {}
    for col in columns:
        values[col] = {}
        if col in cmp.means:  # compared: the comparison's own numbers, nothing recomputed
            for run in cmp.runs:
                values[col][run] = cmp.means[col][run]
                k = len(cmp.unscored.get(col, {}).get(run, ()))
                if k:
                    unscored.setdefault(col, {})[run] = k
                    why.setdefault(col, {})[run] = reasons.get(col, {}).get(run, "not scored")
            for run, pc in cmp.paired[col].items():
                diffs.setdefault(col, {})[run] = pc.difference
                padj.setdefault(col, {})[run] = pc.pvalue_adjusted
                left_out.setdefault(col, {})[run] = pc.left_out
            continue
        for run in cmp.runs:  # joined but not compared: a mean over the scored rows, no paired test
            ev = cmp.evaluations[run]
            if col not in ev.values:
                continue
            v = ev.values[col]
            nan = np.isnan(v)
            if nan.any():
                unscored.setdefault(col, {})[run] = int(nan.sum())
                qids = [q for q, bad in zip(ev.query_ids, nan.tolist(), strict=True) if bad]
                why.setdefault(col, {})[run] = _reasons_of(rows, col, run, qids)
            values[col][run] = cmp.interval(v, column_facts(col).bounds)  # over the scored rows
    readings = {c: _ragas_reading(c[len(RAGAS_PREFIX) :], math.nan) for c in columns}
    return RagasSection(
        columns=tuple(columns),
        values=values,
        readings=readings,
        compared=tuple(c for c in columns if c in cmp.means),
        num_queries=cmp.num_queries,
        unscored=unscored,
        reasons=why,
        differences=diffs,
        pvalues_adjusted=padj,
        left_out=left_out,
    )


def _per_query(cmp: Comparison, table: Sequence[QueryRow], limit: int) -> PerQuerySection | None:
    """The ``limit`` worst questions by the first ranking metric (mean over the runs that scored it)."""
    if limit <= 0 or not table:
        return None
    metrics = tuple(table[0].values)
    by = next((m for m in cmp.metrics if not m.startswith(RAGAS_PREFIX)), cmp.metrics[0])

    def key(item: tuple[int, QueryRow]) -> tuple[float, int]:
        vals = [v for v in item[1].values[by].values() if not math.isnan(v)]
        return (sum(vals) / len(vals) if vals else -math.inf, item[0])

    picked = sorted(enumerate(table), key=key)[:limit]
    rows = tuple(QueryRow(r.query_id, _shorten(r.query), r.values, r.reasons) for _, r in picked)
    unscored = {m: sum(1 for r in table for v in r.values[m].values() if math.isnan(v)) for m in metrics}
    return PerQuerySection(
        metrics=metrics,
        runs=cmp.runs,
        by=by,
        total=cmp.num_queries,
        rows=rows,
        unscored={m: k for m, k in unscored.items() if k},
    )


def _categories(tables: Mapping[str, SliceTable], runs: Sequence[str]) -> CategoryTable | None:
    if not tables:
        return None
    present = [r for r in runs if r in tables]
    first = tables[present[0]]
    names: list[str] = []
    for r in present:
        names.extend(n for n in tables[r].names() if n not in names)
    rows = []
    for name in names:
        values: dict[str, dict[str, Interval]] = {m: {} for m in first.metrics}
        n = 0
        warning = None
        for r in present:
            try:
                s = tables[r][name]
            except KeyError:
                continue
            n, warning = s.n, s.warning
            for m in first.metrics:
                if m in s.means:
                    values[m][r] = s.means[m]
        rows.append(CategoryRow(name=name, n=n, values=values, warning=warning))
    return CategoryTable(by=first.by, metrics=first.metrics, runs=tuple(present), rows=tuple(rows))


def _shorten(text: str | None, limit: int = 240) -> str | None:
    if text is None:
        return None
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1].rstrip() + "…"


#: The fields a listed query takes from a failure list's query as they are (the top chunk's text is added).
_FAILED_QUERY_FIELDS = (
    "query_id",
    "query",
    "run",
    "value",
    "expected",
    "retrieved",
    "top_score",
    "first_relevant_rank",
    "error",
)


def _item(fq: FailedQuery, texts: Mapping[str, str]) -> QueryItem:
    top = fq.retrieved[0] if fq.retrieved else None
    return QueryItem(
        **{name: getattr(fq, name) for name in _FAILED_QUERY_FIELDS},
        top_text=_shorten(texts.get(top)) if top is not None else None,
    )


_FAILURE_LABELS = {
    "zero_hit": "zero hit",
    "top1_irrelevant": "top-1 irrelevant",
    "top1_unjudged": "top-1 unjudged",
    "ranked_low": "ranked low",
    "mostly_unjudged": "mostly unjudged",
    "failed": "failed",
}
_FAILURE_TITLES = {
    "zero_hit": "no relevant chunk in the top {k}",
    "top1_irrelevant": "top result judged not relevant (a relevant one is in the top {k}): a reranker could fix these",
    "top1_unjudged": "top result unjudged (a relevant one is in the top {k}): judge it before calling it a miss",
    "ranked_low": "first relevant chunk below rank {low}",
    "mostly_unjudged": "top {k} mostly unjudged: the metric says little, judge these",
    "failed": "retrieval failed or returned nothing",
}


_ID_MISMATCH_TITLE = "top {k} mostly unjudged because the run's doc ids do not match the qrels' (see the warnings)"


def _failure_sections(
    f: Failures,
    texts: Mapping[str, str],
    runs: Sequence[str],
    max_items: int,
    mismatched: Collection[str] = (),
) -> tuple[tuple[RunFailureSummary, ...], tuple[QueryItem, ...]]:
    out = []
    for run in [r for r in runs if r in f.runs] + [r for r in f.runs if r not in runs]:
        rf = f.runs[run]
        lists = []
        for key, title in _FAILURE_TITLES.items():
            if key == "mostly_unjudged" and run in mismatched:
                title = _ID_MISMATCH_TITLE  # an id problem, not a judging gap: judging would not help
            items = getattr(rf, key)
            lists.append(
                FailureList(
                    key=key,
                    label=_FAILURE_LABELS[key],
                    title=title.format(k=rf.k, low=rf.low_rank),
                    count=len(items),
                    items=tuple(_item(it, texts) for it in items[:max_items]),
                )
            )
        out.append(RunFailureSummary(run=run, k=rf.k, num_queries=rf.num_queries, lists=tuple(lists)))
    unsolved = tuple(_item(it, texts) for it in f.unsolved[:max_items])
    return tuple(out), unsolved


def _id_mismatched(comparison: Comparison) -> set[str]:
    """Runs whose evaluation found doc ids that do not match the qrels (:mod:`rankbridge.idmatch`)."""
    return {
        run for run, ev in comparison.evaluations.items() if any(n.startswith("doc ids do not match") for n in ev.notes)
    }


def _best_worst(
    cmp: Comparison, metric: str, n: int, query_texts: Mapping[str, str], f: Failures | None, texts: Mapping[str, str]
) -> tuple[RunQueries, ...]:
    out = []
    for run in cmp.runs:
        rf = f.runs.get(run) if f is not None else None
        if rf is not None and rf.metric == metric:
            best = tuple(_item(it, texts) for it in rf.best[:n])
            worst = tuple(_item(it, texts) for it in rf.worst[:n])
        else:
            ev = cmp.evaluations[run]
            vals = ev.values[metric].tolist()
            scored = [(v, q) for q, v in zip(ev.query_ids, vals, strict=True) if not math.isnan(v)]
            best = tuple(
                QueryItem(q, query_texts.get(q), run, v) for v, q in sorted(scored, key=lambda t: (-t[0], t[1]))[:n]
            )
            worst = tuple(
                QueryItem(q, query_texts.get(q), run, v) for v, q in sorted(scored, key=lambda t: (t[0], t[1]))[:n]
            )
        out.append(RunQueries(run=run, metric=metric, best=best, worst=worst))
    return tuple(out)


def _history_series(metric: str, name: str | None, trend: Any) -> list[TrendSeries]:
    """A store :class:`~rankbridge.store.Trend` as report series: one per comparable group, current first."""
    groups = list(getattr(trend, "series", ()))
    if not groups:
        return [TrendSeries(metric, name, tuple(_trend_point(p) for p in trend))] if len(trend) else []
    current = getattr(trend, "current", None)
    order = ([current] if current is not None else []) + [i for i in range(len(groups)) if i != current]
    return [
        TrendSeries(
            metric,
            name,
            tuple(_trend_point(p) for p in groups[i].points),
            group=str(groups[i].label),
            current=i == current or (current is None and i == order[0]),
        )
        for i in order
        if groups[i].points
    ]


def _trend_notes(trend: Any, metric: str, name: str | None) -> list[str]:
    who = f"{metric} ({name})" if name is not None else metric
    return [f"trend of {who}: {n}" for n in getattr(trend, "notes", ())]


def _trend_series(trend: Any) -> tuple[TrendSeries, ...]:
    return _trend_parts(trend)[0]


def _trend_parts(trend: Any) -> tuple[tuple[TrendSeries, ...], tuple[str, ...]]:
    """Report series and notes from what ``build_report(trend=...)`` accepts."""
    if trend is None:
        return (), ()
    if isinstance(trend, TrendSeries):
        return (trend,), ()
    if hasattr(trend, "series") and hasattr(trend, "metric"):  # one rankbridge.store.Trend
        return tuple(_history_series(str(trend.metric), trend.name, trend)), tuple(
            _trend_notes(trend, str(trend.metric), trend.name)
        )
    if isinstance(trend, Mapping):
        out: list[TrendSeries] = []
        notes: list[str] = []
        for key, points in trend.items():
            if isinstance(key, tuple):
                metric, name = str(key[0]), (None if key[1] is None else str(key[1]))
            else:
                metric, name = str(key), None
            if hasattr(points, "series"):  # a rankbridge.store.Trend: every comparable group, with its notes
                out.extend(_history_series(metric, name, points))
                notes.extend(_trend_notes(points, metric, name))
            else:
                out.append(TrendSeries(metric, name, tuple(_trend_point(p) for p in points)))
        return tuple(out), tuple(notes)
    if isinstance(trend, Sequence) and not isinstance(trend, (str, bytes)):
        if not all(isinstance(t, TrendSeries) for t in trend):
            raise InputError(
                "trend: expected {metric or (metric, name): [TrendPoint...]} or a list of TrendSeries, "
                f"found a list with {type(next(t for t in trend if not isinstance(t, TrendSeries))).__name__}"
            )
        return tuple(trend), ()
    raise InputError(
        f"trend: expected a dict of metric -> points or a list of TrendSeries, found {type(trend).__name__}"
    )


def trend_from_history(history: Any, metric: str, names: Sequence[str]) -> tuple[dict[tuple[str, str], Any], list[str]]:
    """Read ``metric``'s trend of each run name from a history store (a path or an open RunStore).

    Returns
    -------
    trends, notes
        ``{(metric, name): Trend}`` for the names with saved records, and the store's warnings.
    """
    trends: dict[tuple[str, str], Any] = {}
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        if isinstance(history, RunStore):
            for name in names:
                found = history.trend(metric, name)
                if found.series or len(found):
                    trends[(metric, name)] = found
        else:
            if not os.path.exists(os.fspath(history)):
                raise InputError(f"history: no history file at {os.fspath(history)}")
            with RunStore(history, create=False) as store:
                for name in names:
                    found = store.trend(metric, name)
                    if found.series or len(found):
                        trends[(metric, name)] = found
    # the store's warnings repeat the trends' notes, which the report shows per series
    notes = [] if trends else [str(w.message) for w in caught]
    return trends, notes


def _trend_point(p: Any) -> SeriesPoint:
    if isinstance(p, SeriesPoint):
        return p
    # rankbridge.store.TrendPoint (timestamp, record_id, mean) or any (timestamp, record_id, mean) tuple
    try:
        ts, rid, mean = p
    except (TypeError, ValueError):
        raise InputError(f"trend: expected (timestamp, record_id, mean) points, found {p!r}") from None
    stamp = ts.isoformat() if isinstance(ts, datetime) else str(ts)
    return SeriesPoint(stamp, None if rid is None else int(rid), float(mean))


def _doc_texts(
    golden: GoldenSet | None, runs: Mapping[str, Run] | None, doc_texts: Mapping[str, str] | None
) -> dict[str, str]:
    texts: dict[str, str] = {}
    if golden is not None and golden.corpus:
        for doc, entry in golden.corpus.items():
            text = entry.get("text") if isinstance(entry, Mapping) else None
            if isinstance(text, str):
                texts[doc] = text
    if runs:
        for run in runs.values():
            if not isinstance(run, Run):
                continue
            for qid in run:
                if run.is_scored(qid):
                    continue
                for hit in run.hits(qid):
                    if hit.text is not None:
                        texts.setdefault(hit.doc_id, hit.text)
    if doc_texts:
        texts.update(doc_texts)
    return texts


def _notes(cmp: Comparison, report_has_ragas: bool) -> tuple[str, ...]:
    corr = "Holm-adjusted across all comparisons" if cmp.correction == "holm" else "not adjusted"
    test = {"permutation": "a paired permutation test", "t": "a paired t-test", "wilcoxon": "a Wilcoxon signed-rank"}
    notes = [
        f"Every number is a mean over the same {cmp.num_queries} questions; a question a run missed or failed "
        "on scores 0 (it is not dropped).",
        f"Brackets are {cmp.level:.0%} confidence intervals (t below 30 questions, bootstrap from there when "
        f"the method is 'auto'; here {cmp.ci_method}); a wide interval means few or very uneven questions.",
        f"Differences are to the baseline '{cmp.baseline}', tested with {test.get(cmp.test, cmp.test)} on the "
        f"per-question values; p-values are {corr}. 'significant' means adjusted p < {cmp.alpha:g}.",
        "W/T/L counts the questions where a run scored higher than, the same as, or lower than the baseline; "
        "d is Cohen's d_z (mean difference / its standard deviation).",
        "Metrics follow trec_eval: precision@k divides by k, recall@k by all relevant chunks; unjudged chunks "
        "count as not relevant.",
    ]
    if report_has_ragas:
        notes.append(RAGAS_NOTE)
    return tuple(notes)


def build_report(
    comparison: Comparison,
    *,
    failures: Failures | None = None,
    slices: Mapping[str, SliceTable] | SliceTable | None = None,
    trend: Mapping[Any, Sequence[Any]] | Sequence[TrendSeries] | None = None,
    runs: Mapping[str, Run] | None = None,
    qrels: Qrels | Mapping[str, Mapping[str, int]] | None = None,
    golden: GoldenSet | None = None,
    doc_texts: Mapping[str, str] | None = None,
    title: str | None = None,
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    relevance_depth: int = 10,
    by: str = "category",
    k: int = 10,
    n_queries: int = 5,
    max_items: int = 10,
    generated_at: str | datetime | None = None,
    extra_warnings: Sequence[str] = (),
    recommend_by: str = RECOMMEND_BY,
    history: str | os.PathLike[str] | Any | None = None,
    trend_metric: str | None = None,
    reranker_pairs: Mapping[str, str] | None = None,
    rerank_stage: str = RERANK_STAGE,
    per_query: int | None = None,
) -> Report:
    """Build a :class:`Report` from a comparison and whatever else is at hand.

    Parameters
    ----------
    comparison:
        From :func:`rankbridge.analysis.compare` (one run is fine).
    failures:
        From :func:`rankbridge.analysis.failures`; computed here when ``runs`` and judgments are given.
    slices:
        ``{run: SliceTable}`` (as :meth:`Comparison.slices` returns) or one run's table; computed here by
        ``by`` when the golden set has categories (or the metadata field ``by``).
    trend:
        ``{metric: points}`` or ``{(metric, run name): points}``, points as returned by
        :meth:`rankbridge.store.RunStore.trend`; or a list of :class:`TrendSeries`.
    runs:
        The runs themselves (``{name: Run}``): enables the failure lists and the chunk texts in them.
    qrels:
        Judgments for the failure lists (default: the golden set's).
    golden:
        The golden set (default: the comparison's): question texts, categories, and the corpus' texts.
    doc_texts:
        ``{doc id: text}``, to show what the top chunk of a failed question said.
    title:
        The report's title.
    cutoffs:
        Rank cut-offs of the "by rank cut-off" table; those deeper than every run's list are left out.
    relevance_depth:
        How many top results of each question the relevance profile counts.
    by:
        The slicing field when slices are computed here.
    k:
        The cut-off that defines a hit in the failure lists.
    n_queries:
        Length of the best and worst lists.
    max_items:
        At most this many questions are listed per failure list.
    generated_at:
        The time stamp to print (default: now, UTC); pass a fixed one for reproducible files.
    extra_warnings:
        More warnings to show (e.g. from loading a trend).
    recommend_by:
        The metric that picks the recommended strategy (default ``"dcg@10"``, Databricks' headline);
        computed from the evaluations' hit tables when the comparison lacks it. The recommendation says
        whether the best run is significantly better than the runner-up.
    history:
        A run history store (a path or an open :class:`~rankbridge.store.RunStore`): the trend of
        ``trend_metric`` for every run name of the comparison is read from it (unless ``trend`` is given).
    trend_metric:
        The metric of the trend read from ``history`` (default: ``recommend_by`` when the store has it,
        else the comparison's first metric).
    reranker_pairs:
        ``{run with reranker: run without}``, to pair runs whose names do not follow the convention.
        Otherwise ``"x"`` pairs with ``"x+rerank"`` / ``"x+reranker"`` / ``"x+rerank(...)"`` /
        ``"x (reranked)"``, and a run with a ``rerank_stage`` stage pairs with that stage.
    rerank_stage:
        The stage that holds a run's list before its reranker (``Run.stages``; default ``"retrieved"``).
    per_query:
        Rows of the per-query table: the worst questions by the first ranking metric, with every metric
        and RAGAS column per run and why a cell is not scored; 0 leaves the table out. Default:
        :data:`PER_QUERY_ROWS` when the evaluations carry RAGAS columns, else no table (a ranking-only
        report is as before).

    Returns
    -------
    Report

    Examples
    --------
    >>> from rankbridge.analysis import compare
    >>> qrels = {"q1": {"a": 3, "b": 1}, "q2": {"c": 2}}
    >>> cmp = compare({"bm25": {"q1": ["b", "a"], "q2": ["x", "c"]}}, qrels, ["hit_rate@1", "mrr@10"])
    >>> report = build_report(cmp, generated_at="2024-05-01T00:00:00+00:00")
    >>> [(h.metric, h.reading) for h in report.headlines]  # doctest: +NORMALIZE_WHITESPACE
    [('hit_rate@1', '1 in 2 questions (1 of 2) get a relevant chunk in the top 1'),
     ('mrr@10', 'the first relevant chunk typically sits around rank 1.3')]
    >>> report.relevance.high_label, report.relevance.profiles[0].mean_by_rank
    (3, (0.5, 2.5))
    """
    if not isinstance(comparison, Comparison):
        raise InputError(f"comparison: expected a rankbridge Comparison, found {type(comparison).__name__}")
    if per_query is not None and (isinstance(per_query, bool) or not isinstance(per_query, int) or per_query < 0):
        raise InputError(f"per_query must be an int >= 0. Got {per_query!r} instead.")
    for pname, value in (("relevance_depth", relevance_depth), ("k", k), ("n_queries", n_queries)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{pname} must be an int >= 1. Got {value!r} instead.")
    if isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 0:
        raise InputError(f"max_items must be an int >= 0. Got {max_items!r} instead.")
    bad_k = [c for c in cutoffs if isinstance(c, bool) or not isinstance(c, int) or c < 1]
    if bad_k or not cutoffs:
        raise InputError(f"cutoffs must be ints >= 1. Got {list(cutoffs)!r} instead.")
    gs = golden if golden is not None else comparison.golden
    query_texts = gs.texts() if gs is not None else {}
    texts = _doc_texts(gs, runs, doc_texts)
    primary = comparison.metrics[0]

    if failures is None and runs is not None:
        judgments = qrels if qrels is not None else (gs.qrels if gs is not None else None)
        if judgments is not None:
            named = {name: runs[name] for name in comparison.runs if name in runs}
            if named:
                failures = compute_failures(
                    named,
                    judgments,
                    golden=gs,
                    evaluation={n: comparison.evaluations[n] for n in named},
                    k=k,
                    n_best=n_queries,
                    metric=primary,
                )
    fail_sections: tuple[RunFailureSummary, ...] = ()
    unsolved: tuple[QueryItem, ...] = ()
    if failures is not None:
        fail_sections, unsolved = _failure_sections(
            failures, texts, comparison.runs, max_items, _id_mismatched(comparison)
        )

    slice_tables: dict[str, SliceTable] = {}
    if isinstance(slices, SliceTable):
        slice_tables = {slices.run if slices.run in comparison.runs else comparison.runs[0]: slices}
    elif slices is not None:
        slice_tables = dict(slices)
    elif gs is not None and any(
        (q.category is not None) if by == "category" else (by in (q.metadata or {})) for q in gs.queries
    ):
        slice_tables = comparison.slices(by, golden=gs)

    warnings = list(comparison.warnings) + [str(w) for w in extra_warnings]
    weak = [pc for m in comparison.metrics for pc in comparison.paired[m].values() if pc.warning]
    if weak:
        total = sum(len(comparison.paired[m]) for m in comparison.metrics)
        lowest = min(pc.power for pc in weak)
        warnings.append(
            f"{len(weak)} of {total} differences to the baseline are not significant, and {comparison.num_queries} "
            f"questions are too few to detect differences of their size (power as low as {fmt_pct(lowest)}); "
            "a non-significant difference here is not evidence of no difference"
        )
    categories = _categories(slice_tables, comparison.runs)
    if categories is not None:
        small = [row for row in categories.rows if row.warning]
        if small:
            listed = ", ".join(f"{row.name} (n={row.n})" for row in small[:8]) + (", ..." if len(small) > 8 else "")
            warnings.append(
                f"{len(small)} {categories.by} group(s) are small: {listed}; their intervals are wide and "
                "differences within them are unreliable"
            )
    relevance = _relevance(comparison, relevance_depth)
    if relevance is not None:
        heavy = [
            (p.run, p.shares["unjudged"])
            for p in relevance.profiles
            if not _nan(p.shares["unjudged"]) and p.shares["unjudged"] > UNJUDGED_WARNING
        ]
        mismatched = _id_mismatched(comparison)
        heavy = [(run, share) for run, share in heavy if run not in mismatched]  # not a judging gap: said above
        if heavy:
            listed = ", ".join(f"{run} {fmt_pct(share)}" for run, share in heavy)
            warnings.append(
                f"many of the top {relevance.depth} results are unjudged ({listed}) and count as not relevant; "
                "judge them (rankbridge judge) before trusting small differences"
            )
    has_ragas = any(c.startswith(RAGAS_PREFIX) for ev in comparison.evaluations.values() for c in ev.values)
    if per_query is None:
        per_query = PER_QUERY_ROWS if has_ragas else 0
    table = comparison.per_query_table(golden=gs) if (per_query or comparison.unscored or has_ragas) else []
    rows_by_id = {r.query_id: r for r in table}
    reasons = _unscored_reasons(comparison, rows_by_id)
    ragas = _ragas(comparison, rows_by_id, reasons)
    scored_by: Any = qrels if qrels is not None else gs
    recommendation = _recommendation(comparison, recommend_by)
    rerank = _rerank(comparison, recommendation, runs, scored_by, reranker_pairs, rerank_stage, relevance_depth)
    failed_top1 = _failed_top1(comparison, runs, scored_by, query_texts, texts, max_items)

    trend_series, trend_notes = _trend_parts(trend)
    chosen_trend_metric = None
    if trend is None and history is not None:
        wanted = [str(parse_measure(trend_metric))] if trend_metric is not None else []
        if not wanted:
            wanted = [recommendation.metric] if recommendation is not None else []
            wanted += [m for m in comparison.metrics if m not in wanted]
        read_notes: list[str] = []
        for metric_name in wanted:
            found, read_notes = trend_from_history(history, metric_name, comparison.runs)
            if found:
                trend_series, trend_notes = _trend_parts(found)
                chosen_trend_metric = metric_name
                break
        else:
            trend_notes = (
                f"the history has no saved run of {', '.join(comparison.runs)} with {' or '.join(wanted)}",
                *read_notes,
            )
    if chosen_trend_metric is None and trend_series:
        chosen_trend_metric = trend_series[0].metric

    if generated_at is None:
        stamp = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    elif isinstance(generated_at, datetime):
        stamp = generated_at.isoformat()
    else:
        stamp = str(generated_at)
    qrels_name = None
    if isinstance(qrels, Qrels):
        qrels_name = qrels.name
    elif gs is not None:
        qrels_name = gs.qrels.name
    if title is None:
        title = "Retrieval report" + (f": {qrels_name}" if qrels_name and qrels_name != "qrels" else "")
    return Report(
        title=title,
        generated_at=stamp,
        rankbridge_version=__version__,
        qrels_name=qrels_name,
        num_queries=comparison.num_queries,
        runs=comparison.runs,
        baseline=comparison.baseline,
        metrics=comparison.metrics,
        settings=_settings(comparison),
        headlines=_headlines(comparison),
        strategies=_strategies(comparison, reasons),
        cutoffs=_cutoffs(comparison, cutoffs),
        categories=categories,
        queries=_best_worst(comparison, primary, n_queries, query_texts, failures, texts),
        failures=fail_sections,
        unsolved=unsolved,
        failures_k=failures.k if failures is not None else None,
        trend=trend_series,
        relevance=relevance,
        ragas=ragas,
        warnings=tuple(dict.fromkeys(warnings)),
        notes=_notes(comparison, ragas is not None),
        recommendation=recommendation,
        rerank=rerank,
        failed_top1=failed_top1,
        trend_metric=chosen_trend_metric,
        trend_notes=tuple(dict.fromkeys(trend_notes)),
        per_query=_per_query(comparison, table, per_query),
    )
