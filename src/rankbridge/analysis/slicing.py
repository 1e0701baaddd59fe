"""Slices: an evaluation's means per query category or any metadata field, each with its own interval.

Examples
--------
>>> from rankbridge import GoldenSet, Qrels, Query, evaluate
>>> golden = GoldenSet([Query("q1", "a", category="faq"), Query("q2", "b", category="how-to")],
...                    Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}}))
>>> ev = evaluate(golden.qrels, {"q1": ["d1"], "q2": ["x"]}, ["hit_rate@1"])
>>> slices(ev, golden).names()
['faq', 'how-to']
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rankbridge._numbers import JsonFields, fmt_ci, fmt_number, text_rows
from rankbridge.analysis.paired import column_intervals
from rankbridge.errors import InputError
from rankbridge.evaluate import Evaluation
from rankbridge.metrics.measures import Measure, column_facts, column_name
from rankbridge.metrics.stats import MIN_QUERIES, CIMethod, Interval, sample_size_warning
from rankbridge.types import GoldenSet, Query

__all__ = ["NO_VALUE", "Slice", "SliceTable", "slices"]

#: The slice of queries without a value of the slicing field.
NO_VALUE = "(none)"


@dataclass(frozen=True)
class Slice(JsonFields):
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

    _json_keys = ("name", "n", "query_ids", "means", "warning")


@dataclass(frozen=True)
class SliceTable(JsonFields):
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
        lines = [f"{self.run} by {self.by}", *text_rows(table)]
        warned = [f"  - {s.name}: {s.warning}" for s in self.slices if s.warning]
        if warned:
            lines.append("warnings:")
            lines.extend(warned)
        return "\n".join(lines)

    _json_keys = ("run", "by", "metrics", "slices", "overall")
    _json_omit = ("num_queries",)  # the JSON never carried it: each slice and overall mean has its own n


def _slice_cell(iv: Interval, n: int) -> str:
    scored = f" (n={iv.n})" if iv.n != n else ""
    return f"{fmt_number(iv.estimate)} {fmt_ci(iv)}{scored}"


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
    overall_ivs = column_intervals(columns, floor, ceil, **settings)
    out = []
    for name in order:
        rows = np.asarray(groups[name], dtype=np.int64)
        ivs = column_intervals([c[rows] for c in columns], floor, ceil, **settings)
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
