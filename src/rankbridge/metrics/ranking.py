"""Who computes the metrics: numpy kernels over one flat table of judged hits.

Every measure rankbridge offers is a function of, per query, (a) the rank and label of each *judged* doc
that was retrieved, (b) the number of docs retrieved, and (c) the query's qrels labels. So a run is
converted once into a :class:`HitTable` -- three flat arrays (query index, rank, label) sorted by query and
rank -- and each metric is then a handful of vectorised numpy operations over it.

The conversion is the only part that touches Python objects, and it touches as few as it can: for each
query it looks up only the judged docs in the run's ``{doc: score}`` dict, reads the scores with one
``np.fromiter``, and gets a judged doc's rank by *counting* the docs that rank above it (higher score, or
the same score and a larger doc id, as trec_eval breaks ties) instead of sorting the whole list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankbridge.errors import InputError
from rankbridge.metrics.measures import Measure

__all__ = ["HitTable", "build_table", "compute"]

_INT = np.int64


@dataclass(eq=False)
class HitTable:
    """The converted form of (qrels, run) over a fixed list of queries.

    Attributes
    ----------
    query_ids:
        The evaluated queries; index ``i`` in every per-query array is ``query_ids[i]``.
    n_ret:
        ``(Q,)`` number of docs retrieved per query (0 for a missing or failed query).
    hit_query, hit_rank, hit_label:
        ``(H,)`` one entry per retrieved *judged* doc, sorted by query index then rank (1-based).
    judged_query, judged_label:
        ``(J,)`` every qrels judgment of the evaluated queries (for |R| and the ideal DCG).
    """

    query_ids: tuple[str, ...]
    n_ret: np.ndarray
    hit_query: np.ndarray
    hit_rank: np.ndarray
    hit_label: np.ndarray
    judged_query: np.ndarray
    judged_label: np.ndarray
    _memo: dict[Any, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        q, r = self.hit_query, self.hit_rank
        if len(q) > 1 and not (np.all(q[1:] >= q[:-1]) and np.all((q[1:] > q[:-1]) | (r[1:] > r[:-1]))):
            order = np.lexsort((r, q))
            self.hit_query, self.hit_rank, self.hit_label = q[order], r[order], self.hit_label[order]

    @property
    def num_queries(self) -> int:
        return len(self.query_ids)

    def num_relevant(self, rel: int) -> np.ndarray:
        """``(Q,)`` |R| per query at relevance threshold ``rel``."""
        key = ("nrel", rel)
        if key not in self._memo:
            sel = self.judged_label >= rel
            self._memo[key] = np.bincount(self.judged_query[sel], minlength=self.num_queries).astype(_INT)
        return self._memo[key]

    def _ideal(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positive qrels labels sorted descending within each query: (query, position, label)."""
        key = ("ideal",)
        if key not in self._memo:
            sel = self.judged_label > 0
            q, lab = self.judged_query[sel], self.judged_label[sel]
            order = np.lexsort((-lab, q))
            q, lab = q[order], lab[order]
            self._memo[key] = np.stack([q, _position_in_group(q), lab])
        ideal: np.ndarray = self._memo[key]
        return ideal[0], ideal[1], ideal[2]

    def _per_query(self, index: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(index, weights=weights, minlength=self.num_queries).astype(np.float64)


def _position_in_group(group: np.ndarray) -> np.ndarray:
    """1-based position of each element within its run of equal, sorted group ids."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=_INT)
    idx = np.arange(n, dtype=_INT)
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(group[1:], group[:-1], out=starts[1:])
    return idx - np.maximum.accumulate(np.where(starts, idx, 0)) + 1


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num, dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _gain(labels: np.ndarray, exponential: bool) -> np.ndarray:
    pos: np.ndarray = np.maximum(labels, 0).astype(np.float64)
    return np.exp2(pos) - 1.0 if exponential else pos


def compute(table: HitTable, measure: Measure) -> np.ndarray:
    """Per-query values of ``measure``, a float64 array aligned with ``table.query_ids``.

    Examples
    --------
    >>> from rankbridge.metrics.measures import parse_measure
    >>> t = build_table({"q": {"a": 1, "b": 0}}, {"q": {"a": 0.1, "b": 0.9, "c": 0.5}}, ["q"])
    >>> float(compute(t, parse_measure("mrr"))[0])
    0.3333333333333333
    """
    name, k, rel = measure.name, measure.k, measure.rel
    q, rank, label = table.hit_query, table.hit_rank, table.hit_label
    within = rank <= k if k is not None else np.ones(len(rank), dtype=bool)
    if name in ("hit_rate", "precision", "recall", "num_rel_ret"):
        sel = (label >= rel) & within
        found = table._per_query(q[sel])
        if name == "hit_rate":
            return (found > 0).astype(np.float64)
        if name == "precision":
            return found / k  # type: ignore[operator]
        if name == "num_rel_ret":
            return found
        return _safe_div(found, table.num_relevant(rel))
    if name == "mrr":
        sel = (label >= rel) & within
        qs, rs = q[sel], rank[sel]
        out = np.zeros(table.num_queries)
        if len(qs):
            first = np.empty(len(qs), dtype=bool)
            first[0] = True
            np.not_equal(qs[1:], qs[:-1], out=first[1:])
            out[qs[first]] = 1.0 / rs[first]
        return out
    if name == "map":
        sel = (label >= rel) & within
        qs, rs = q[sel], rank[sel]
        precision_at_hit = _position_in_group(qs) / rs
        return _safe_div(table._per_query(qs, precision_at_hit), table.num_relevant(rel))
    if name == "r_precision":
        nrel = table.num_relevant(rel)
        sel = (label >= rel) & (rank <= nrel[q])
        return _safe_div(table._per_query(q[sel]), nrel)
    if name in ("ndcg", "ndcg_exp", "dcg", "dcg_exp"):
        exponential = name.endswith("_exp")
        sel = within & (label > 0)
        dcg = table._per_query(q[sel], _gain(label[sel], exponential) / np.log2(rank[sel] + 1.0))
        if name.startswith("dcg"):
            return dcg
        iq, ipos, ilab = table._ideal()
        isel = ipos <= k if k is not None else np.ones(len(ipos), dtype=bool)
        idcg = table._per_query(iq[isel], _gain(ilab[isel], exponential) / np.log2(ipos[isel] + 1.0))
        return _safe_div(dcg, idcg)
    if name == "judged":
        return table._per_query(q[within]) / k  # type: ignore[operator]
    if name == "num_ret":
        return table.n_ret.astype(np.float64)
    if name == "num_rel":
        return table.num_relevant(rel).astype(np.float64)
    raise AssertionError(f"no kernel for {name}")  # pragma: no cover - registry and kernels are in sync


# --------------------------------------------------------------------------------------------------
# Conversion: (qrels, run) -> HitTable
# --------------------------------------------------------------------------------------------------


def _ranks_from_scores(
    qid: str,
    scores_of: Mapping[str, float],
    docs: list[str],
    found: list[float],
    single_precision: bool,
) -> np.ndarray:
    """1-based trec_eval ranks of ``docs`` (whose scores are ``found``) within ``scores_of``."""
    n = len(scores_of)
    try:
        scores = np.fromiter(scores_of.values(), dtype=np.float64, count=n)
        mine = np.array(found, dtype=np.float64)
    except (TypeError, ValueError):
        for doc, s in scores_of.items():
            try:
                float(s)
            except (TypeError, ValueError):
                raise InputError(f"run[{qid!r}][{doc!r}]: expected a numeric score, found {s!r}") from None
        raise
    if np.isnan(scores).any():
        bad = next(d for d, s in scores_of.items() if s != s)
        raise InputError(f"run[{qid!r}][{bad!r}]: expected a numeric score, found NaN")
    if single_precision:  # trec_eval compares scores as C floats
        scores = scores.astype(np.float32)
        mine = mine.astype(np.float32)
    m = len(mine)
    if m == 1:
        s = mine[0]
        gt = np.array([np.count_nonzero(scores > s)], dtype=_INT)
        eq = np.array([np.count_nonzero(scores == s)], dtype=_INT)
    elif m <= 8:
        gt = np.count_nonzero(scores > mine[:, None], axis=1).astype(_INT)
        eq = np.count_nonzero(scores == mine[:, None], axis=1).astype(_INT)
    else:
        ordered = np.sort(scores)
        left = np.searchsorted(ordered, mine, "left")
        right = np.searchsorted(ordered, mine, "right")
        gt = (n - right).astype(_INT)
        eq = (right - left).astype(_INT)
    ranks = gt + 1
    tied = np.flatnonzero(eq > 1)
    if len(tied):
        # Equal scores: trec_eval puts the larger doc id first (strcmp, i.e. code-point order).
        keys = list(scores_of)
        for i in tied:
            same = np.flatnonzero(scores == mine[i])
            doc = docs[i]
            ranks[i] += sum(1 for j in same if keys[j] > doc)
    return ranks


def build_table(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Any],
    query_ids: Sequence[str],
    *,
    single_precision: bool = False,
) -> HitTable:
    """Convert ``(qrels, run)`` restricted to ``query_ids`` into a :class:`HitTable`.

    ``run[qid]`` may be a ``{doc: score}`` mapping (ranked by score, ties by doc id descending) or a
    sequence of hits/doc ids in rank order. A query absent from ``run`` retrieved nothing.
    ``single_precision=True`` compares scores as float32, as trec_eval does.
    """
    hit_query: list[int] = []
    hit_rank: list[np.ndarray | list[int]] = []
    hit_label: list[int] = []
    n_ret = np.zeros(len(query_ids), dtype=_INT)
    judged_query: list[int] = []
    judged_label: list[int] = []
    empty: Mapping[str, int] = {}
    for qi, qid in enumerate(query_ids):
        judged = qrels.get(qid, empty)
        if judged:
            judged_query.extend([qi] * len(judged))
            judged_label.extend(judged.values())
        result = run.get(qid)
        if result is None:
            continue
        n_ret[qi] = len(result)
        if not judged or not result:
            continue
        if isinstance(result, Mapping):
            docs: list[str] = []
            found: list[float] = []
            labels: list[int] = []
            get = result.get
            for doc, lab in judged.items():
                s = get(doc)
                if s is not None:
                    docs.append(doc)
                    found.append(s)
                    labels.append(lab)
            if not docs:
                first = next(iter(result))
                if not isinstance(first, str):
                    raise InputError(f"run[{qid!r}]: expected doc ids as str, found {type(first).__name__} {first!r}")
                continue
            hit_rank.append(_ranks_from_scores(qid, result, docs, found, single_precision))
            hit_query.extend([qi] * len(docs))
            hit_label.extend(labels)
        else:
            ranks: list[int] = []
            for i, item in enumerate(result, 1):
                doc = item if isinstance(item, str) else item.doc_id
                label = judged.get(doc)
                if label is not None:
                    ranks.append(i)
                    hit_label.append(label)
            hit_query.extend([qi] * len(ranks))
            hit_rank.append(ranks)
    ranks_flat = np.concatenate([np.asarray(r, dtype=_INT) for r in hit_rank]) if hit_rank else np.zeros(0, dtype=_INT)
    return HitTable(
        query_ids=tuple(query_ids),
        n_ret=n_ret,
        hit_query=np.asarray(hit_query, dtype=_INT),
        hit_rank=ranks_flat,
        hit_label=np.asarray(hit_label, dtype=_INT),
        judged_query=np.asarray(judged_query, dtype=_INT),
        judged_label=np.asarray(judged_label, dtype=_INT),
    )
