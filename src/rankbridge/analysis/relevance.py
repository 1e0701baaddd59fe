"""The relevance profile of a run's top results: which labels its first ``depth`` results carry.

One computation from a :class:`~rankbridge.metrics.ranking.HitTable` (the converted qrels and run that
:func:`~rankbridge.evaluate` keeps), used by the report's relevance section and by
:func:`rankbridge.judge.relevance_summary`:

* ``distribution`` -- label -> number of top-``depth`` results with that label, ``None`` for unjudged ones;
* ``per_query`` -- each question's mean label over its top ``depth`` (unjudged and negative count 0, a
  question without results scores 0): what the report's mean relevance and its interval are over;
* ``mean_by_rank`` -- at each rank, the mean label of the results at that rank (unjudged = 0);
* ``failed`` -- questions whose first result is judged 0, or that returned nothing.

:func:`relevance_classes` groups a distribution into Databricks' classes (highly relevant, relevant, not
relevant, unjudged).

Examples
--------
>>> from rankbridge.metrics.ranking import build_table
>>> t = build_table({"q1": {"a": 3, "b": 0}, "q2": {"c": 0}}, {"q1": ["a", "b", "x"], "q2": ["c"]}, ["q1", "q2"])
>>> top = top_labels(t, 3)
>>> top.distribution, top.judged_mean, top.failed
({0: 2, 3: 1, None: 1}, 1.0, ('q2',))
>>> top.per_query.tolist(), top.mean_by_rank
([1.0, 0.0], (1.5, 0.0, 0.0))
>>> relevance_classes(top.distribution, high=3, relevant=2)
{'highly relevant': 1, 'relevant': 0, 'not relevant': 2, 'unjudged': 1}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from rankbridge.metrics.ranking import HitTable

__all__ = ["RELEVANCE_CLASSES", "TopLabels", "label_scale", "relevance_classes", "relevance_depth", "top_labels"]

#: Databricks' classes of a result, in display order.
RELEVANCE_CLASSES = ("highly relevant", "relevant", "not relevant", "unjudged")


@dataclass(frozen=True)
class TopLabels:
    """The labels of every question's first ``depth`` results (see the module docstring)."""

    depth: int
    distribution: dict[int | None, int]
    per_query: np.ndarray
    mean_by_rank: tuple[float, ...]
    failed: tuple[str, ...]

    @property
    def total(self) -> int:
        """The results counted (judged or not)."""
        return sum(self.distribution.values())

    @property
    def judged_mean(self) -> float:
        """The mean label over the judged results, pooled over questions (NaN when none is judged)."""
        judged = [(lab, n) for lab, n in self.distribution.items() if lab is not None]
        count = sum(n for _, n in judged)
        return sum(lab * n for lab, n in judged) / count if count else math.nan


def top_labels(table: HitTable, depth: int) -> TopLabels:
    """The :class:`TopLabels` of ``table``'s first ``depth`` results per question."""
    sel = table.hit_rank <= depth
    ranks, raw = table.hit_rank[sel], table.hit_label[sel]
    shown = np.minimum(table.n_ret, depth)
    labels, counts = np.unique(raw, return_counts=True)
    distribution: dict[int | None, int] = {int(lab): int(n) for lab, n in zip(labels, counts, strict=True)}
    unjudged = int(shown.sum()) - int(sel.sum())
    if unjudged:
        distribution[None] = unjudged
    gains = np.maximum(raw, 0).astype(np.float64)
    sums = np.bincount(table.hit_query[sel], weights=gains, minlength=table.num_queries)[: table.num_queries]
    per_query = np.where(shown > 0, sums / np.maximum(shown, 1).astype(np.float64), 0.0)
    by_rank = np.bincount(ranks - 1, weights=gains, minlength=depth)[:depth]
    have = np.array([(table.n_ret >= r).sum() for r in range(1, depth + 1)], dtype=np.float64)
    mean_by_rank = tuple(float(s / h) if h > 0 else math.nan for s, h in zip(by_rank, have, strict=True))
    first = sel & (table.hit_rank == 1)
    top_label = np.full(table.num_queries, -1, dtype=np.int64)
    top_judged = np.zeros(table.num_queries, dtype=bool)
    top_label[table.hit_query[first]] = table.hit_label[first]
    top_judged[table.hit_query[first]] = True
    failed_rows = (table.n_ret == 0) | (top_judged & (top_label == 0))
    failed = tuple(table.query_ids[int(i)] for i in np.flatnonzero(failed_rows))
    return TopLabels(depth, distribution, per_query, mean_by_rank, failed)


def relevance_classes(distribution: Mapping[int | None, int], *, high: int | None, relevant: int) -> dict[str, int]:
    """Counts per class: label >= ``high`` (``None``: no such class), ``relevant`` up to it, below it, unjudged."""
    n_high = sum(n for lab, n in distribution.items() if lab is not None and high is not None and lab >= high)
    n_rel = sum(n for lab, n in distribution.items() if lab is not None and lab >= relevant) - n_high
    n_not = sum(n for lab, n in distribution.items() if lab is not None and lab < relevant)
    return {
        "highly relevant": n_high,
        "relevant": n_rel,
        "not relevant": n_not,
        "unjudged": distribution.get(None, 0),
    }


def label_scale(tables: Iterable[HitTable]) -> int:
    """The highest label any of the qrels behind ``tables`` gives (0 when there is none)."""
    return max((int(t.judged_label.max()) if len(t.judged_label) else 0) for t in tables)


def relevance_depth(tables: Iterable[HitTable], depth: int) -> int:
    """``depth`` cut to the deepest result list of ``tables`` (at least 1)."""
    deepest = max((int(t.n_ret.max()) if t.num_queries else 0) for t in tables)
    return max(1, min(depth, deepest))
