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

import operator
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from typing import Any

import numpy as np

from rankbridge.errors import InputError
from rankbridge.metrics.measures import Measure
from rankbridge.types import Hit, Run, RunColumns

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
            top = int(r.max()) + 1 if int(r.min()) >= 0 else 0
            if top and int(q.max()) < 2**62 // top:
                # one int64 key: a stable sort merges the sorted runs it is usually made of (a lexsort
                # of two keys costs about 20x more)
                order = np.argsort(q * top + r, kind="stable")
            else:
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


_FOUND_MEASURES = frozenset(
    {"hit_rate", "precision", "recall", "num_rel_ret", "hits", "f1", "set_precision", "set_recall", "set_f1"}
)


def _bpref(table: HitTable, rel: int) -> np.ndarray:
    """trec_eval's bpref: (1/|R|) Σ over relevant retrieved docs of 1 - min(n, |R|) / min(|N|, |R|).

    ``n`` is the number of judged non-relevant docs (labels 0 .. rel-1) ranked above the relevant doc and
    ``N`` those the qrels hold; docs with a negative label are left out, as trec_eval leaves them out.
    """
    q, label = table.hit_query, table.hit_label
    nonrel = (label >= 0) & (label < rel)
    before: np.ndarray = np.cumsum(nonrel) - nonrel  # judged non-relevant docs ahead, over the whole table
    start = np.arange(len(q), dtype=_INT) - _position_in_group(q) + 1
    above: np.ndarray = (before - before[start] if len(q) else before).astype(np.float64)
    nrel = table.num_relevant(rel).astype(np.float64)
    jl = table.judged_label
    n_nonrel = np.bincount(table.judged_query[(jl >= 0) & (jl < rel)], minlength=table.num_queries)
    sel = label >= rel
    qs = q[sel]
    denom = np.minimum(n_nonrel[qs], nrel[qs]).astype(np.float64)
    term = 1.0 - _safe_div(np.minimum(above[sel], nrel[qs]), denom)
    return _safe_div(table._per_query(qs, term), nrel)


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
    if name in _FOUND_MEASURES:
        sel = (label >= rel) & within
        found = table._per_query(q[sel])
        if name == "hit_rate":
            return (found > 0).astype(np.float64)
        if name == "precision":
            return found / k  # type: ignore[operator]
        if name in ("num_rel_ret", "hits"):
            return found
        if name in ("recall", "set_recall"):
            return _safe_div(found, table.num_relevant(rel))
        # f1@k and set_f1: P = found / k (or / retrieved), R = found / |R|, computed as ranx does
        p = found / k if k is not None else _safe_div(found, table.n_ret.astype(np.float64))
        if name == "set_precision":
            return p
        r = _safe_div(found, table.num_relevant(rel))
        return 2 * _safe_div(p * r, p + r)
    if name == "bpref":
        return _bpref(table, rel)
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
    if len(found) == 1 and not single_precision:
        # The common case (one judged doc retrieved, e.g. MS MARCO): plain ints, fewest numpy calls.
        # struct reads a dict's float values about twice as fast as np.fromiter.
        try:
            packed = np.frombuffer(struct.pack(f"{n}d", *scores_of.values()), dtype=np.float64)
        except struct.error:
            pass  # a non-numeric score: the general path below names it
        else:
            s = float(found[0])
            n_gt = int(np.count_nonzero(packed > s))
            n_eq = int(np.count_nonzero(packed == s))
            if n_eq == 0 or n_gt + n_eq + int(np.count_nonzero(packed < s)) != n:  # NaN compares false
                bad = next(d for d, v in scores_of.items() if v != v)
                raise InputError(f"run[{qid!r}][{bad!r}]: expected a numeric score, found NaN")
            rank = n_gt + 1
            if n_eq > 1:  # equal scores: trec_eval puts the larger doc id first
                doc = docs[0]
                rank += sum(1 for d, v in scores_of.items() if v == s and d > doc)
            return np.array([rank], dtype=_INT)
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
    if single_precision:  # trec_eval compares scores as C floats (beyond float32 range: inf, as in C)
        with np.errstate(over="ignore"):
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
    sequence of hits/doc ids in rank order, whose doc ids are distinct (a :class:`~rankbridge.Run`'s
    are; :func:`rankbridge.evaluate` drops repeats before it gets here). A query absent from ``run``
    retrieved nothing. ``single_precision=True`` compares scores as float32, as trec_eval does.

    Plain dicts of floats and lists of str ids or :class:`~rankbridge.Hit` are converted without a
    Python loop per query or per hit (C-level ``map`` over the dicts, then numpy); anything else --
    and any input with a bad score, whose error names the query and doc -- goes one query at a time.

    Examples
    --------
    >>> t = build_table({"q": {"a": 1, "b": 2}}, {"q": ["c", "b", "a"]}, ["q"])
    >>> t.hit_rank.tolist(), t.hit_label.tolist(), t.n_ret.tolist()
    ([2, 3], [2, 1], [3])
    """
    return _convert(qrels, run, query_ids, single_precision, checked=False)


def convert_checked(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Any],
    query_ids: Sequence[str],
    single_precision: bool,
    order: np.ndarray | None = None,
) -> HitTable:
    """:func:`build_table` for a run whose lists are known to hold distinct str ids or Hits (evaluate's).

    ``order``: ``query_ids[i] == list(qrels)[order[i]]``, when the query ids are all the qrels' queries.
    """
    return _convert(qrels, run, query_ids, single_precision, checked=True, order=order)


def _convert(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Any],
    query_ids: Sequence[str],
    single_precision: bool,
    checked: bool,
    order: np.ndarray | None = None,
) -> HitTable:
    """A columnar run from its columns; else the C-level path, and the generic one for what that declines."""
    if isinstance(run, Run) and run.columns is not None:
        return _columns_table(qrels, run.columns, query_ids, single_precision)
    table = _fast_table(qrels, run, query_ids, single_precision, checked=checked, order=order)
    if table is None:
        table = _generic_table(qrels, run, query_ids, single_precision=single_precision)
    return table


_EMPTY: Mapping[str, Any] = {}
_DOC_ID = operator.attrgetter("doc_id")
_FIRST = operator.itemgetter(0)
#: Score comparisons done at once when ranking judged docs (bounds the temporary arrays to ~20 MB).
_CELLS = 1 << 20
#: Results longer than this are ranked one query at a time (one sort, then a binary search per judged doc),
_HUGE = 1 << 16
#: and so are results longer than _DEEP in which more than _FEW judged docs were retrieved.
_DEEP = 64
_FEW = 8

_Hits = tuple[np.ndarray, np.ndarray, np.ndarray]  # (query index, rank, label) of retrieved judged docs


def _index_of(query_ids: Sequence[str]) -> dict[str, int]:
    return dict(zip(query_ids, range(len(query_ids)), strict=True))


def _judgments(
    qrels: Mapping[str, Mapping[str, int]], where: list[int | None] | np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(query index, label) of every judgment of the evaluated queries, in the qrels' order (None: not dicts).

    ``where[i]`` is the query index of the qrels' ``i``-th query (None: not evaluated).
    """
    if isinstance(where, list) and None in where:
        kept = list(map(operator.is_not, where, repeat(None)))
        docs: list[Any] = list(compress(qrels.values(), kept))
        where = list(compress(where, kept))
    else:
        docs = list(qrels.values())
    if not set(map(type, docs)) <= {dict}:
        return None
    counts = np.fromiter(map(len, docs), dtype=_INT, count=len(docs))
    query = np.repeat(np.asarray(where, dtype=_INT), counts)
    label = np.fromiter(chain.from_iterable(map(dict.values, docs)), dtype=_INT, count=int(counts.sum()))
    return query, label


def _fast_table(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Any],
    query_ids: Sequence[str],
    single_precision: bool,
    checked: bool = False,
    order: np.ndarray | None = None,
) -> HitTable | None:
    """:func:`build_table` by C-level iteration and numpy; None when the input needs the generic path.

    It works in the run's own order, not in ``query_ids``' (sorted) one: the dicts then sit in memory in
    the order they are read, which makes reading them several times faster at 10^5 queries and more.
    ``checked``: the lists are known to hold distinct str ids or Hits (evaluate validated them).
    ``order``: ``query_ids[i] == list(qrels)[order[i]]`` (the query ids are the qrels' queries, sorted);
    when the run then lists the qrels' queries in the qrels' order, no query id is looked up at all.
    """
    n_q = len(query_ids)
    keys = list(run)
    results = list(run.values())
    judged: list[Any]
    if order is not None and len(keys) == n_q and keys == list(qrels):
        position = np.empty(n_q, dtype=_INT)
        position[order] = np.arange(n_q, dtype=_INT)
        judgments = _judgments(qrels, position)
        judged = list(qrels.values())
    else:
        index = _index_of(query_ids)
        where = list(map(index.get, keys))
        if None in where:  # queries in the run that are not evaluated
            kept = list(map(operator.is_not, where, repeat(None)))
            keys, results, where = (list(compress(x, kept)) for x in (keys, results, where))
        position = np.array(where, dtype=_INT)
        judgments = _judgments(qrels, list(map(index.get, qrels)))
        judged = list(map(qrels.get, keys, repeat(_EMPTY)))
    if judgments is None or not set(map(type, judged)) <= {dict}:
        return None
    lengths = np.fromiter(map(len, results), dtype=_INT, count=len(results))
    n_ret = np.zeros(n_q, dtype=_INT)
    n_ret[position] = lengths
    n_judged = np.fromiter(map(len, judged), dtype=_INT, count=len(judged))
    kinds = set(map(type, results))
    if kinds == {dict}:
        parts = [_scored_hits(results, judged, lengths, n_judged, single_precision)]
    elif kinds <= {list, tuple}:
        parts = [_ranked_hits(results, judged, n_judged, checked)]
    elif kinds <= {dict, list, tuple}:
        is_dict = np.fromiter(map(isinstance, results, repeat(dict)), dtype=bool, count=len(results))
        parts = []
        for sel, scored in ((np.flatnonzero(is_dict), True), (np.flatnonzero(~is_dict), False)):
            rows = sel.tolist()
            res, jud = list(map(results.__getitem__, rows)), list(map(judged.__getitem__, rows))
            got = (
                _scored_hits(res, jud, lengths[sel], n_judged[sel], single_precision)
                if scored
                else _ranked_hits(res, jud, n_judged[sel], checked)
            )
            parts.append(None if got is None else (sel[got[0]], got[1], got[2]))
    else:
        return None  # another Mapping or sequence type
    if any(p is None for p in parts):
        return None
    local, hit_rank, hit_label = (np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[index]
    return HitTable(
        query_ids=tuple(query_ids),
        n_ret=n_ret,
        hit_query=position[local],
        hit_rank=hit_rank,
        hit_label=hit_label,
        judged_query=judgments[0],
        judged_label=judgments[1],
    )


def _per_judged(values: list[Any], n_judged: np.ndarray) -> list[Any] | np.ndarray:
    """``values[i]`` repeated ``n_judged[i]`` times (an object array: repeated by numpy, not by Python)."""
    if len(n_judged) and n_judged.min() == 1 == n_judged.max():
        return values
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.repeat(n_judged)


def _scored_hits(
    results: list[dict[str, Any]],
    judged: list[dict[str, int]],
    lengths: np.ndarray,
    n_judged: np.ndarray,
    single_precision: bool,
) -> _Hits | None:
    """Ranks of the judged docs in ``{doc: score}`` results (None: a score needs the generic path).

    Each judged doc's score is looked up in its query's dict (``map(dict.get, ...)``: one lookup per
    judgment, not per hit); the scores of the queries with a judged doc retrieved are read into one array,
    and each judged doc's rank is counted there (higher scores, then equal ones with a larger doc id).
    """
    active = np.flatnonzero((n_judged > 0) & (lengths > 0))
    empty = np.zeros(0, dtype=_INT)
    if not len(active):
        return empty, empty, empty
    if len(active) < len(results):
        rows = active.tolist()
        results, judged = list(map(results.__getitem__, rows)), list(map(judged.__getitem__, rows))
        lengths, n_judged = lengths[active], n_judged[active]
    docs = list(chain.from_iterable(judged))
    label = np.fromiter(chain.from_iterable(map(dict.values, judged)), dtype=_INT, count=len(docs))
    got = list(map(dict.get, _per_judged(results, n_judged), docs))
    found = np.fromiter(map(operator.is_not, got, repeat(None)), dtype=bool, count=len(got))
    owner = np.repeat(np.arange(len(results), dtype=_INT), n_judged)
    hit = np.zeros(len(results), dtype=bool)
    hit[owner[found]] = True
    # A query none of whose judged docs was retrieved: its doc ids must be str (else nothing could match).
    missed = map(results.__getitem__, np.flatnonzero(~hit).tolist())
    if not all(map(isinstance, map(next, map(iter, missed)), repeat(str))):
        return None
    if not hit.any():
        return empty, empty, empty
    try:
        pivot = np.array(list(compress(got, found.tolist())), dtype=np.float64)
    except (TypeError, ValueError):
        return None
    owner, label = owner[found], label[found]
    docs = list(compress(docs, found.tolist()))
    hit_queries = np.flatnonzero(hit)
    hit_lengths = lengths[hit_queries]
    try:
        scores = np.fromiter(
            chain.from_iterable(map(dict.values, map(results.__getitem__, hit_queries.tolist()))),
            dtype=np.float64,
            count=int(hit_lengths.sum()),
        )
    except (TypeError, ValueError):
        return None
    if np.isnan(scores).any():
        return None  # the generic path names the query and doc
    seg = np.searchsorted(hit_queries, owner)  # each found doc's query, as an index into hit_queries
    starts = np.cumsum(hit_lengths) - hit_lengths
    rank = _ranks_in_segments(
        scores, starts[seg], hit_lengths[seg], pivot, single_precision, lambda i: list(results[hit_queries[seg[i]]])
    )
    _break_ties(rank, docs)
    return active[owner], rank[0], label


def _ranks_in_segments(
    scores: np.ndarray,
    start: np.ndarray,
    length: np.ndarray,
    pivot: np.ndarray,
    single_precision: bool,
    segment_docs: Any,
) -> tuple[np.ndarray, list[tuple[int, list[str], np.ndarray]]]:
    """1 + how many scores of each doc's segment ``scores[start:start+length]`` exceed its own ``pivot``.

    Also the docs whose score is tied with another in their segment: ``(i, the segment's doc ids, mask
    of the tied scores)``, for :func:`_break_ties`. Segments of similar length are compared all at once
    (``_CELLS`` scores at a time); a long segment holding many of the docs, or a very long one, is sorted
    once and searched.
    """
    if single_precision:  # trec_eval compares scores as C floats (beyond float32 range: inf, as in C)
        with np.errstate(over="ignore"):
            scores, pivot = scores.astype(np.float32), pivot.astype(np.float32)
    n = len(pivot)
    gt = np.zeros(n, dtype=_INT)
    eq = np.zeros(n, dtype=_INT)
    # Long segments holding many of the docs (BEIR: ~13 of 100), or very long ones: one sort per segment.
    _, segment_of, per_segment = np.unique(start, return_inverse=True, return_counts=True)
    by_segment = ((length > _DEEP) & (per_segment[segment_of] > _FEW)) | (length > _HUGE)
    if by_segment.any():
        members = np.flatnonzero(by_segment)
        members = members[np.argsort(segment_of[members], kind="stable")]
        bounds = np.flatnonzero(np.r_[True, np.diff(segment_of[members]) != 0, True])
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            docs_here = members[lo:hi]
            first = docs_here[0]
            row = np.sort(scores[start[first] : start[first] + length[first]])
            left = np.searchsorted(row, pivot[docs_here], "left")
            right = np.searchsorted(row, pivot[docs_here], "right")
            gt[docs_here] = len(row) - right
            eq[docs_here] = right - left
    # The rest by width class (lengths within a factor of 2), each compared in blocks of _CELLS scores.
    width_class = np.ceil(np.log2(np.maximum(length, 1))).astype(_INT)
    width_class[by_segment] = -1
    last = max(len(scores) - 1, 0)
    for c in np.unique(width_class[width_class >= 0]).tolist():
        members = np.flatnonzero(width_class == c)
        width = int(length[members].max())
        cols = np.arange(width, dtype=_INT)
        step = max(1, _CELLS // max(width, 1))
        for lo in range(0, len(members), step):
            rows = members[lo : lo + step]
            cells = np.minimum(start[rows, None] + cols, last)
            valid = cols < length[rows, None]
            values, p = scores[cells], pivot[rows, None]
            gt[rows] = np.count_nonzero((values > p) & valid, axis=1)
            eq[rows] = np.count_nonzero((values == p) & valid, axis=1)
    tied = []
    for i in np.flatnonzero(eq > 1).tolist():
        row = scores[start[i] : start[i] + length[i]]
        tied.append((i, segment_docs(i), row == pivot[i]))
    return gt + 1, tied


def _break_ties(rank: tuple[np.ndarray, list[tuple[int, list[str], np.ndarray]]], docs: Sequence[str]) -> None:
    """Equal scores: trec_eval puts the larger doc id first (strcmp, i.e. code-point order)."""
    ranks, tied = rank
    for i, segment, same in tied:
        doc = docs[i]
        ranks[i] += sum(1 for j in np.flatnonzero(same).tolist() if segment[j] > doc)


def _ranked_hits(results: list[Any], judged: list[dict[str, int]], n_judged: np.ndarray, checked: bool) -> _Hits | None:
    """Ranks of the judged docs in lists of str ids or of Hits, in rank order (None: mixed items).

    A doc's rank is its first position + 1 (a repeated doc counts once, at its first rank). Each query is
    ranked the cheaper of two ways (see :func:`_by_lookup`): scanning its list once per judged doc, or
    looking each hit up in its judgments.
    """
    empty = np.zeros(0, dtype=_INT)
    lengths = np.fromiter(map(len, results), dtype=_INT, count=len(results))
    active = np.flatnonzero((n_judged > 0) & (lengths > 0))
    if not len(active):
        return empty, empty, empty
    lists, jud = _take(results, active), _take(judged, active)
    n_judged, lengths = n_judged[active], lengths[active]
    of_hits = np.fromiter(map(isinstance, map(_FIRST, lists), repeat(Hit)), dtype=bool, count=len(lists))
    if of_hits.any():  # lists of Hits (a Run's): their doc ids
        hit_rows = np.flatnonzero(of_hits).tolist()
        hit_lists = list(map(lists.__getitem__, hit_rows))
        if not checked and set(map(type, chain.from_iterable(hit_lists))) != {Hit}:
            return None
        ids = list(map(list, map(map, repeat(_DOC_ID), hit_lists)))
        if of_hits.all():
            lists = ids
        else:
            lists = list(lists)
            for i, row in zip(hit_rows, ids, strict=True):
                lists[i] = row
    if not checked and not of_hits.all():
        str_lists = map(lists.__getitem__, np.flatnonzero(~of_hits).tolist())
        if set(map(type, chain.from_iterable(str_lists))) != {str}:
            return None
    lookup = _by_lookup(n_judged, lengths)
    if not lookup.any():
        return _scanned_hits(lists, jud, n_judged, active)
    if lookup.all():
        return _looked_up_hits(lists, jud, n_judged, lengths, active)
    scan = np.flatnonzero(~lookup)
    look = np.flatnonzero(lookup)
    scanned = _scanned_hits(_take(lists, scan), _take(jud, scan), n_judged[scan], active[scan])
    looked_up = _looked_up_hits(_take(lists, look), _take(jud, look), n_judged[look], lengths[look], active[look])
    query, rank, label = (np.concatenate(pair) for pair in zip(scanned, looked_up, strict=True))
    return query, rank, label


#: Which way is cheaper, in units of one string comparison of a scan (C, mostly a length and a few
#: bytes): a scan costs one per hit and judged doc plus _SCAN_CALL per judged doc; a lookup about
#: _LOOKUP_HIT per hit (it hashes each hit's str, a lookup and a pop). Fitted on 10..1,000 hits x 1..40
#: judgments per query (bench_growth.py's crossover table): a lookup is cheaper from 4-8 judgments on
#: (the model: 4 at depth 10, 5 at depth 100 and more); MS MARCO's 1-2 judgments are scanned.
_SCAN_CALL = 6
_LOOKUP_HIT = 5


def _by_lookup(n_judged: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Which queries are cheaper ranked by one lookup per hit than by a scan per judged doc."""
    return n_judged * (lengths + _SCAN_CALL) > lengths * _LOOKUP_HIT  # type: ignore[no-any-return]


def _take(values: list[Any], rows: np.ndarray) -> list[Any]:
    """``values[rows]`` for a list (the list itself when ``rows`` are all of it)."""
    return values if len(rows) == len(values) else list(map(values.__getitem__, rows.tolist()))


def _scanned_hits(lists: list[list[str]], jud: list[dict[str, int]], n_judged: np.ndarray, owners: np.ndarray) -> _Hits:
    """:func:`_ranked_hits` by ``operator.countOf`` / ``indexOf``: the list scanned in C for each judged doc.

    Cheaper than hashing every hit when a query has few judgments (MS MARCO: one or two); ``indexOf``
    finds a doc's first position. Hits in the order of ``owners``, then of the judgments.
    """
    docs = list(chain.from_iterable(jud))
    label = np.fromiter(chain.from_iterable(map(dict.values, jud)), dtype=_INT, count=len(docs))
    per_judged = _per_judged(lists, n_judged)
    counts = list(map(operator.countOf, per_judged, docs))
    found = np.fromiter(map(bool, counts), dtype=bool, count=len(counts))
    owner = np.repeat(np.arange(len(lists), dtype=_INT), n_judged)[found]
    mask = found.tolist()
    rank = np.fromiter(
        map(operator.indexOf, compress(per_judged, mask), compress(docs, mask)), dtype=_INT, count=len(owner)
    )
    return owners[owner], rank + 1, label[found]


_ABSENT = object()
_POP = operator.attrgetter("pop")


def _looked_up_hits(
    lists: list[list[str]], jud: list[dict[str, int]], n_judged: np.ndarray, lengths: np.ndarray, owners: np.ndarray
) -> _Hits:
    """:func:`_ranked_hits` by one lookup of each hit in its query's judgments (C-level ``map``).

    Each hit is popped from a copy of its query's judgments, so a doc repeated in a list is found at its
    first position only, as the scan's ``indexOf`` finds it. Hits in the order of ``owners``, then of
    rank.
    """
    left = list(map(dict.copy, jud))
    try:
        got = list(chain.from_iterable(map(map, map(_POP, left), lists, repeat(repeat(_ABSENT)))))
    except TypeError:  # an id that cannot be hashed (a Hit's, unchecked): the scan compares it, matching nothing
        return _scanned_hits(lists, jud, n_judged, owners)
    found = np.fromiter(map(operator.is_not, got, repeat(_ABSENT)), dtype=bool, count=len(got))
    row = np.flatnonzero(found)
    label = np.fromiter(compress(got, found.tolist()), dtype=_INT, count=len(row))
    ends = np.cumsum(lengths)
    owner = np.searchsorted(ends, row, "right")
    return owners[owner], row - (ends - lengths)[owner] + 1, label


def _columns_table(
    qrels: Mapping[str, Mapping[str, int]], cols: RunColumns, query_ids: Sequence[str], single_precision: bool
) -> HitTable:
    """:func:`build_table` for a run stored as columns (:meth:`Run.from_columns`): numpy over the rows.

    Each row's doc is looked up in its query's judgments (one ``dict.get`` per row, by C-level ``map``);
    a ranked run's rank is the row's place in its query, a scored run's is counted among its scores.
    """
    n_q = len(query_ids)
    index = _index_of(query_ids)
    judgments = _judgments(qrels, list(map(index.get, qrels)))
    if judgments is None:
        raise InputError("qrels: expected {qid: {doc: label}} dicts")
    where = list(map(index.get, cols.query_ids))
    judged: list[Any] = list(map(qrels.get, cols.query_ids, repeat(_EMPTY)))
    if None in where:  # queries of the run that are not evaluated: no judgments, no n_ret
        judged = [_EMPTY if w is None else j for w, j in zip(where, judged, strict=True)]
    offsets = cols.offsets
    lengths = np.diff(offsets)
    evaluated = np.fromiter(map(operator.is_not, where, repeat(None)), dtype=bool, count=len(where))
    position = np.array([w if w is not None else -1 for w in where] if not evaluated.all() else where, dtype=_INT)
    n_ret = np.zeros(n_q, dtype=_INT)
    n_ret[position[evaluated]] = lengths[evaluated]
    got = list(map(dict.get, chain.from_iterable(map(repeat, judged, lengths.tolist())), cols.doc_ids))
    found = np.fromiter(map(operator.is_not, got, repeat(None)), dtype=bool, count=len(got))
    row = np.flatnonzero(found)
    label = np.array(list(compress(got, found.tolist())), dtype=_INT)
    query = np.searchsorted(offsets, row, "right") - 1
    if cols.ranked:
        rank = row - offsets[query] + 1
    else:
        docs = cols.doc_ids
        found_docs = list(map(docs.__getitem__, row.tolist()))
        start, length = offsets[query], lengths[query]
        counted = _ranks_in_segments(
            cols.scores,
            start,
            length,
            cols.scores[row],
            single_precision,
            lambda i: docs[start[i] : start[i] + length[i]],
        )
        _break_ties(counted, found_docs)
        rank = counted[0]
    return HitTable(
        query_ids=tuple(query_ids),
        n_ret=n_ret,
        hit_query=position[query],
        hit_rank=rank.astype(_INT),
        hit_label=label,
        judged_query=judgments[0],
        judged_label=judgments[1],
    )


def _generic_table(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Any],
    query_ids: Sequence[str],
    *,
    single_precision: bool = False,
) -> HitTable:
    """:func:`build_table` one query at a time: any mapping or sequence, and the errors for bad input.

    The reference the vectorised path (:func:`_fast_table`) is tested against, and where every input
    that path declines goes (non-dict mappings, mixed items, non-numeric or NaN scores).
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
        if type(result) is dict or isinstance(result, Mapping):  # the exact-type test is the cheap one
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
