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

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rankbridge.errors import InputError
from rankbridge.metrics.measures import Measure

__all__ = ["HitTable", "build_table", "compute", "table_from_arrays"]

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


def table_from_arrays(
    query_ids: Sequence[str],
    ranked_docs: np.ndarray,
    qrels_query: np.ndarray,
    qrels_doc: np.ndarray,
    qrels_label: np.ndarray,
    *,
    check_duplicates: bool = True,
) -> HitTable:
    """Build a :class:`HitTable` from interned integer ids, without touching Python objects per hit.

    This is the input a vector index gives (e.g. FAISS ``index.search`` returns a ``(Q, k)`` matrix of
    doc indices in rank order).

    Parameters
    ----------
    query_ids:
        The ``Q`` query ids; row ``i`` of ``ranked_docs`` and query index ``i`` in the qrels arrays belong
        to ``query_ids[i]``.
    ranked_docs:
        ``(Q, depth)`` integer doc indices in rank order (best first); ``-1`` pads a short list. A doc
        repeated within a row keeps its first (best) rank, as for any ranked run.
    qrels_query, qrels_doc, qrels_label:
        ``(J,)`` integer arrays, one judgment each: query index, doc index, label.
    check_duplicates:
        Look for docs repeated within a row (one sort of the matrix, most of this function's time).
        Pass False only when the index guarantees distinct ids per row, as FAISS does.

    Examples
    --------
    >>> import numpy as np
    >>> from rankbridge.metrics.measures import parse_measure
    >>> t = table_from_arrays(["q0", "q1"], np.array([[4, 2, 7], [1, -1, -1]]),
    ...                       np.array([0, 1]), np.array([2, 5]), np.array([1, 1]))
    >>> compute(t, parse_measure("mrr")).tolist()
    [0.5, 0.0]
    """
    docs = np.asarray(ranked_docs)
    if docs.ndim != 2 or not np.issubdtype(docs.dtype, np.integer):
        raise InputError(
            f"ranked_docs: expected a 2-d integer array (queries x depth), found {docs.dtype} {docs.shape}"
        )
    n_q = len(query_ids)
    if docs.shape[0] != n_q:
        raise InputError(f"ranked_docs has {docs.shape[0]} rows but {n_q} query ids were given")
    jq = np.asarray(qrels_query, dtype=_INT)
    jd = np.asarray(qrels_doc, dtype=_INT)
    jl = np.asarray(qrels_label, dtype=_INT)
    if not (len(jq) == len(jd) == len(jl)):
        raise InputError(f"qrels arrays differ in length: {len(jq)}, {len(jd)}, {len(jl)}")
    if len(jq) and (jq.min() < 0 or jq.max() >= n_q):
        raise InputError(f"qrels_query: expected query indices in [0, {n_q}), found {jq.min()}..{jq.max()}")
    if len(jd) and jd.min() < 0:
        raise InputError(f"qrels_doc: expected doc indices >= 0, found {jd.min()}")
    if docs.size and docs.min() < -1:
        raise InputError(f"ranked_docs: expected doc indices >= 0 or -1 as padding, found {docs.min()}")
    n_docs = int(max(docs.max(initial=-1), jd.max(initial=-1))) + 1
    qkeys = jq * n_docs + jd
    order = np.argsort(qkeys, kind="stable")
    qkeys, qlabels = qkeys[order], jl[order]
    if len(qkeys) > 1 and np.any(qkeys[1:] == qkeys[:-1]):
        raise InputError("qrels arrays judge the same (query, doc) pair twice")
    n_ret = np.count_nonzero(docs >= 0, axis=1).astype(_INT)
    dup_rows: np.ndarray | None = None
    if check_duplicates and docs.shape[1] > 1:
        srt = np.sort(docs, axis=1)
        repeats = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)
        n_ret -= np.count_nonzero(repeats, axis=1).astype(_INT)  # distinct docs, as a ranked run counts them
        dup_rows = np.any(repeats, axis=1)
    # Prefilter with a per-doc mask (one gather), then join only candidate cells with a binary search.
    judged_doc = np.zeros(n_docs + 1, dtype=bool)  # the extra slot catches the -1 padding
    judged_doc[jd] = True
    rows, cols = np.nonzero(judged_doc[docs])
    if len(rows):
        keys = rows.astype(_INT) * n_docs + docs[rows, cols]
        pos = np.minimum(np.searchsorted(qkeys, keys), len(qkeys) - 1)
        match = qkeys[pos] == keys
        rows, cols, keys, pos = rows[match], cols[match], keys[match], pos[match]
        _, first = np.unique(keys, return_index=True)  # a doc repeated in a row keeps its best rank
        first.sort()
        rows, cols, pos = rows[first], cols[first], pos[first]
        # Ranks count only distinct docs above: subtract earlier duplicates in the same row.
        ranks = cols.astype(_INT) + 1
        if dup_rows is not None:
            ranks -= _duplicates_before(docs, rows, cols, dup_rows)
    else:
        ranks = np.zeros(0, dtype=_INT)
        pos = np.zeros(0, dtype=_INT)
    return HitTable(
        query_ids=tuple(query_ids),
        n_ret=n_ret,
        hit_query=rows.astype(_INT),
        hit_rank=ranks,
        hit_label=qlabels[pos] if len(pos) else np.zeros(0, dtype=_INT),
        judged_query=jq,
        judged_label=jl,
    )


def _duplicates_before(docs: np.ndarray, rows: np.ndarray, cols: np.ndarray, has_dup: np.ndarray) -> np.ndarray:
    """For each (row, col), how many earlier cells of the row repeat a doc seen before them.

    ``has_dup`` flags the rows with any repeat; they are rare (a well-behaved index returns distinct ids),
    so they are handled one by one.
    """
    out = np.zeros(len(rows), dtype=_INT)
    if not has_dup.any():
        return out
    for i in np.flatnonzero(has_dup[rows]):
        row = docs[rows[i], : cols[i]]
        row = row[row >= 0]
        out[i] = len(row) - len(np.unique(row))
    return out
