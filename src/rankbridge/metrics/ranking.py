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
from rankbridge.types import Hit

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
    table = _fast_table(qrels, run, query_ids, single_precision)
    if table is None:
        table = _generic_table(qrels, run, query_ids, single_precision=single_precision)
    return table


_EMPTY: Mapping[str, Any] = {}
_DOC_ID = operator.attrgetter("doc_id")
_FIRST = operator.itemgetter(0)
#: Score comparisons done at once when ranking judged docs (bounds the temporary arrays to ~20 MB).
_CELLS = 1 << 20


def _fast_table(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Any],
    query_ids: Sequence[str],
    single_precision: bool,
) -> HitTable | None:
    """:func:`build_table` by C-level iteration and numpy; None when the input needs the generic path.

    Per query it only looks up the judged docs (``map(dict.get, ...)`` for score dicts,
    ``operator.countOf`` / ``indexOf`` for ranked lists, whichever side is shorter being scanned by C
    code); the scores of the queries with a judged doc retrieved are read into one array, and each
    judged doc's rank is counted there (higher scores, then equal ones with a larger doc id).
    """
    # Work in the run's own order, not in query_ids' (sorted) one: the dicts then sit in memory in the
    # order they are read, which makes reading them several times faster at 10^5 queries and more.
    n_q = len(query_ids)
    index = dict(zip(query_ids, range(n_q), strict=True))
    where = list(map(index.get, run))
    evaluated = np.fromiter(map(operator.is_not, where, repeat(None)), dtype=bool, count=len(where))
    keys: list[str] = list(compress(run, evaluated.tolist())) if not evaluated.all() else list(run)
    position = np.fromiter(compress(where, evaluated.tolist()), dtype=_INT, count=int(evaluated.sum()))
    results = list(map(run.__getitem__, keys))
    judged: list[Any] = list(map(qrels.get, keys, repeat(_EMPTY)))
    # every judgment of the evaluated queries, in the qrels' own order (for |R| and the ideal DCG)
    qrels_where = list(map(index.get, qrels))
    in_qrels = np.fromiter(map(operator.is_not, qrels_where, repeat(None)), dtype=bool, count=len(qrels_where))
    all_judged: list[Any] = list(compress(qrels.values(), in_qrels.tolist()))
    if not all(map(isinstance, judged, repeat(dict))) or not all(map(isinstance, all_judged, repeat(dict))):
        return None
    counts = np.fromiter(map(len, all_judged), dtype=_INT, count=len(all_judged))
    judged_query = np.repeat(np.fromiter(compress(qrels_where, in_qrels.tolist()), dtype=_INT), counts)
    judged_label = np.fromiter(chain.from_iterable(map(dict.values, all_judged)), dtype=_INT, count=int(counts.sum()))

    lengths = np.fromiter(map(len, results), dtype=_INT, count=len(results))
    n_judged = np.fromiter(map(len, judged), dtype=_INT, count=len(judged))
    n_ret = np.zeros(n_q, dtype=_INT)
    n_ret[position] = lengths
    is_dict = np.fromiter(map(isinstance, results, repeat(dict)), dtype=bool, count=len(results))
    is_seq = np.fromiter(map(isinstance, results, repeat((list, tuple))), dtype=bool, count=len(results))
    if not np.all(is_dict | is_seq):
        return None  # another Mapping or sequence type
    active = (n_judged > 0) & (lengths > 0)
    parts = [
        _fast_scored(results, judged, lengths, n_judged, np.flatnonzero(active & is_dict), single_precision),
        _fast_ranked(results, judged, n_judged, np.flatnonzero(active & is_seq)),
    ]
    if parts[0] is None or parts[1] is None:
        return None
    local, hit_rank, hit_label = (np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[index]
    return HitTable(
        query_ids=tuple(query_ids),
        n_ret=n_ret,
        hit_query=position[local],
        hit_rank=hit_rank,
        hit_label=hit_label,
        judged_query=judged_query,
        judged_label=judged_label,
    )


_Hits = tuple[np.ndarray, np.ndarray, np.ndarray]  # (query index, rank, label) of retrieved judged docs


def _judged_lookup(
    res: list[Any], jud: list[dict[str, int]], counts: np.ndarray, look: Any
) -> tuple[list[Any], list[str], np.ndarray, np.ndarray]:
    """``look(res[i], doc)`` for every judged doc of every query ``i``: (values, docs, i, label)."""
    docs = list(chain.from_iterable(jud))
    values = list(map(look, chain.from_iterable(map(repeat, res, counts.tolist())), docs))
    labels = np.fromiter(chain.from_iterable(map(dict.values, jud)), dtype=_INT, count=len(docs))
    return values, docs, np.repeat(np.arange(len(res), dtype=_INT), counts), labels


def _fast_scored(
    results: list[Any],
    judged: list[dict[str, int]],
    n_ret: np.ndarray,
    n_judged: np.ndarray,
    queries: np.ndarray,
    single_precision: bool,
) -> _Hits | None:
    """Ranks of the judged docs in ``{doc: score}`` results (None: a score needs the generic path)."""
    empty = np.zeros(0, dtype=_INT)
    if not len(queries):
        return empty, empty, empty
    res = list(map(results.__getitem__, queries.tolist()))
    jud = list(map(judged.__getitem__, queries.tolist()))
    got, docs, local, label = _judged_lookup(res, jud, n_judged[queries], dict.get)
    found = np.fromiter(map(operator.is_not, got, repeat(None)), dtype=bool, count=len(got))
    hit = np.zeros(len(queries), dtype=bool)
    hit[local[found]] = True
    # A query none of whose judged docs was retrieved: its doc ids must be str (else nothing could match)
    missed = map(res.__getitem__, np.flatnonzero(~hit).tolist())
    if not all(map(isinstance, map(next, map(iter, missed)), repeat(str))):
        return None
    if not hit.any():
        return empty, empty, empty
    local, label = local[found], label[found]
    docs = list(compress(docs, found.tolist()))
    hit_queries = np.flatnonzero(hit)  # local indices of the queries with a judged doc retrieved
    res = list(map(res.__getitem__, hit_queries.tolist()))
    lengths = n_ret[queries[hit_queries]]
    found_scores = list(compress(got, found.tolist()))
    seg = np.searchsorted(hit_queries, local)  # each found judged doc's query, in res / lengths
    rank = np.zeros(len(local), dtype=_INT)
    deep = lengths[seg] > _DEEP
    if deep.any():
        # Deep lists (a first-stage run, depth 1,000): one query at a time, where numpy's per-call cost is
        # small against the list's length; the shallow ones are counted all at once below.
        bounds = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1], True])
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            if deep[lo]:
                try:
                    rank[lo:hi] = _ranks_from_scores(
                        "", res[seg[lo]], docs[lo:hi], found_scores[lo:hi], single_precision
                    )
                except (InputError, TypeError, ValueError):
                    return None  # the generic path names the bad score
    shallow = np.flatnonzero(~deep)
    if len(shallow):
        got_rank = _shallow_ranks(
            [res[i] for i in np.unique(seg[shallow]).tolist()],
            seg[shallow],
            [docs[i] for i in shallow.tolist()],
            [found_scores[i] for i in shallow.tolist()],
            lengths,
            single_precision,
        )
        if got_rank is None:
            return None
        rank[shallow] = got_rank
    return queries[local].astype(_INT), rank, label


#: Lists longer than this are ranked one query at a time (see _fast_scored).
_DEEP = 64


def _shallow_ranks(
    res: list[dict[str, Any]],
    seg: np.ndarray,
    docs: list[str],
    found: list[Any],
    lengths_all: np.ndarray,
    single_precision: bool,
) -> np.ndarray | None:
    """trec_eval ranks of judged docs ``docs`` (scores ``found``) in short score dicts, all at once.

    ``seg`` gives each doc's query as an index into ``lengths_all``; ``res`` holds those queries' dicts in
    order of ``np.unique(seg)``. Each doc is compared with every score of its query, ``_CELLS`` at a time.
    """
    segs, seg = np.unique(seg, return_inverse=True)
    lengths = lengths_all[segs]
    try:
        scores = np.fromiter(chain.from_iterable(map(dict.values, res)), dtype=np.float64, count=int(lengths.sum()))
        mine = np.array(found, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if np.isnan(scores).any():
        return None
    if single_precision:  # trec_eval compares scores as C floats (beyond float32 range: inf, as in C)
        with np.errstate(over="ignore"):
            scores, mine = scores.astype(np.float32), mine.astype(np.float32)
    start = (np.cumsum(lengths) - lengths)[seg]
    length = lengths[seg]
    gt = np.zeros(len(seg), dtype=_INT)
    eq = np.zeros(len(seg), dtype=_INT)
    ends = np.cumsum(length)
    lo = 0
    while lo < len(seg):
        hi = max(lo + 1, int(np.searchsorted(ends, ends[lo] - length[lo] + _CELLS, "right")))
        n = length[lo:hi]
        owner = np.repeat(np.arange(hi - lo), n)
        cell = np.arange(int(n.sum()), dtype=_INT) - np.repeat(np.cumsum(n) - n - start[lo:hi], n)
        values, pivot = scores[cell], mine[lo:hi][owner]
        gt[lo:hi] = np.bincount(owner[values > pivot], minlength=hi - lo)
        eq[lo:hi] = np.bincount(owner[values == pivot], minlength=hi - lo)
        lo = hi
    rank = gt + 1
    for i in np.flatnonzero(eq > 1).tolist():
        # Equal scores: trec_eval puts the larger doc id first (strcmp, i.e. code-point order).
        doc, row = docs[i], scores[start[i] : start[i] + length[i]]
        keys = list(res[seg[i]])
        rank[i] += sum(1 for j in np.flatnonzero(row == mine[i]).tolist() if keys[j] > doc)
    return rank


def _fast_ranked(
    results: list[Any], judged: list[dict[str, int]], n_judged: np.ndarray, queries: np.ndarray
) -> _Hits | None:
    """Ranks of the judged docs in lists of str ids or of Hits, in rank order (None: mixed items)."""
    empty = np.zeros(0, dtype=_INT)
    if not len(queries):
        return empty, empty, empty
    lists = list(map(results.__getitem__, queries.tolist()))
    of_hits = np.fromiter(map(isinstance, map(_FIRST, lists), repeat(Hit)), dtype=bool, count=len(lists))
    if of_hits.any():  # lists of Hits (a Run's): their doc ids
        hit_lists = list(map(lists.__getitem__, np.flatnonzero(of_hits).tolist()))
        if set(map(type, chain.from_iterable(hit_lists))) != {Hit}:
            return None
        ids = list(map(list, map(map, repeat(_DOC_ID), hit_lists)))
        if of_hits.all():
            lists = ids
        else:
            for i, row in zip(np.flatnonzero(of_hits).tolist(), ids, strict=True):
                lists[i] = row
    if not of_hits.all():
        str_lists = map(lists.__getitem__, np.flatnonzero(~of_hits).tolist())
        if set(map(type, chain.from_iterable(str_lists))) != {str}:
            return None
    jud = list(map(judged.__getitem__, queries.tolist()))
    counts, docs, local, label = _judged_lookup(lists, jud, n_judged[queries], operator.countOf)
    found = np.fromiter(map(bool, counts), dtype=bool, count=len(counts))
    local, label = local[found], label[found]
    rows = map(lists.__getitem__, local.tolist())
    rank = np.fromiter(map(operator.indexOf, rows, compress(docs, found.tolist())), dtype=_INT, count=len(local))
    return queries[local].astype(_INT), rank + 1, label


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

