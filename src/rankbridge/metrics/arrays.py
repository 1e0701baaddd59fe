"""Array input: a ``(queries x depth)`` matrix of interned doc ids, as a vector index returns it.

:func:`table_from_arrays` turns that matrix and qrels given as three integer arrays into the
:class:`~rankbridge.metrics.ranking.HitTable` every measure is computed from, in a few passes over the
matrix and no Python object per hit:

* the judged cells are found by comparing each row with its query's judged docs (one broadcast
  comparison per judgment slot) when queries have few judgments, as in MS MARCO; otherwise by a small
  hash filter over the whole matrix whose candidates are then matched exactly;
* padding (``-1``) is located only where the matrix holds any (its minimum says so);
* the duplicate check (a doc repeated within a row) compares each cell with the cells to its right when
  rows are shallow (depth <= 16: ``depth - 1`` flat comparisons of a cache-sized block), and is one sort
  of the rows when they are deep; in 32-bit ids when they fit.

The figures, against a memory copy of the same matrix, are in ``docs/benchmarks.md``
(``benchmarks/bench_arrays.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress

import numpy as np

from rankbridge.errors import InputError
from rankbridge.metrics.ranking import HitTable

__all__ = ["table_from_arrays"]

_INT = np.int64
#: Rows compared with their queries' judged docs one slot at a time while the judgments per query are
#: at most this many and the comparisons at most ``_COMPARE_FACTOR`` x the matrix; else the hash filter.
_MAX_SLOTS = 16
_COMPARE_FACTOR = 3
#: Slots of the hash filter (a bool table that stays in the CPU cache).
_FILTER_BITS = 20
#: Rows at most this deep are checked for repeats by comparing column pairs, ``_SHIFT_BLOCK`` cells at a
#: time; deeper ones by a sort.
_SHIFT_DEPTH = 16
_SHIFT_BLOCK = 1 << 16


@dataclass(eq=False)
class _ArrayTable(HitTable):
    """A :class:`HitTable` that also names the rows left out because their query has no judgment.

    :func:`rankbridge.evaluate` lists them in :attr:`~rankbridge.Evaluation.unjudged`, as it lists the
    queries of a dict run that the qrels lack.
    """

    unjudged: tuple[str, ...] = ()


def table_from_arrays(
    query_ids: Sequence[str],
    ranked_docs: np.ndarray,
    qrels_query: np.ndarray,
    qrels_doc: np.ndarray,
    qrels_label: np.ndarray,
    *,
    check_duplicates: bool = True,
) -> HitTable:
    """Build a :class:`~rankbridge.metrics.ranking.HitTable` from interned integer ids.

    This is the input a vector index gives: FAISS ``index.search`` returns a ``(Q, k)`` matrix of doc
    indices in rank order. Pass the table to :func:`rankbridge.evaluate` in place of a run (the qrels are
    in the table), or to :func:`~rankbridge.metrics.compute` for one measure.

    Parameters
    ----------
    query_ids:
        The ``Q`` query ids; row ``i`` of ``ranked_docs`` and query index ``i`` in ``qrels_query`` belong
        to ``query_ids[i]``.
    ranked_docs:
        ``(Q, depth)`` integer doc indices in rank order (best first). ``-1`` pads a short list, at the
        end of its row. A doc repeated within a row keeps its first (best) rank and is counted once, as
        in any ranked run.
    qrels_query, qrels_doc, qrels_label:
        ``(J,)`` integer arrays, one judgment each: query index (into ``query_ids``), doc index (the
        same ids as ``ranked_docs``), label. A (query, doc) pair may be judged once.
    check_duplicates:
        Look for docs repeated within a row (pairwise comparisons for shallow rows, one sort of the
        matrix for deep ones): most of this function's time.
        ``False`` promises distinct ids per row, as FAISS returns them; a judged doc found twice in a
        row is still refused then, but an unjudged repeat would go unnoticed and shift the ranks below
        it and ``num_ret``.

    Returns
    -------
    HitTable
        The judged hits (query index, rank, label), docs retrieved per query and the judgments, over the
        queries with at least one judgment (in the order of ``query_ids``). A row whose query has no
        judgment is not evaluated, as trec_eval and :func:`rankbridge.evaluate` on dicts treat a query of
        the run that the qrels lack: ``evaluate(None, table)`` lists it in
        :attr:`~rankbridge.Evaluation.unjudged`. Every other row is a query of the run (a row of ``-1``
        is an empty list: 0 on every measure), so ``missing="zero"`` and ``"skip"`` agree.

    Raises
    ------
    InputError
        A matrix that is not 2-d integer or whose row count differs from ``len(query_ids)``, ids below
        -1 (-1 only as padding at a row's end), qrels arrays of different lengths, a query index out of
        range, a (query, doc) pair judged twice, or (``check_duplicates=False``) a judged doc repeated
        within a row. Each message names the array and the offending value.

    See Also
    --------
    rankbridge.evaluate : accepts the table in place of a run.

    Examples
    --------
    >>> import numpy as np
    >>> import rankbridge as rb
    >>> from rankbridge.metrics import table_from_arrays
    >>> ranked = np.array([[4, 2, 7], [1, -1, -1]])  # e.g. the ids from index.search(queries, 3)
    >>> table = table_from_arrays(["q0", "q1"], ranked, np.array([0, 1]), np.array([2, 5]), np.array([1, 1]))
    >>> ev = rb.evaluate(None, table, ["mrr", "recall@3"])
    >>> ev.per_query["mrr"], ev.mean["recall@3"]
    ({'q0': 0.5, 'q1': 0.0}, 0.5)
    """
    docs = np.asarray(ranked_docs)
    if docs.ndim != 2 or not np.issubdtype(docs.dtype, np.integer):
        raise InputError(
            f"ranked_docs: expected a 2-d integer array (queries x depth), found {docs.dtype} {docs.shape}"
        )
    n_q, depth = docs.shape
    if n_q != len(query_ids):
        raise InputError(f"ranked_docs has {n_q} rows but {len(query_ids)} query ids were given")
    jq, jd, jl = (np.asarray(a) for a in (qrels_query, qrels_doc, qrels_label))
    for what, arr in (("qrels_query", jq), ("qrels_doc", jd), ("qrels_label", jl)):
        if arr.ndim != 1 or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
            raise InputError(f"{what}: expected a 1-d integer array, found {arr.dtype} {arr.shape}")
    if not (len(jq) == len(jd) == len(jl)):
        raise InputError(f"qrels arrays differ in length: {len(jq)}, {len(jd)}, {len(jl)}")
    jq, jd, jl = jq.astype(_INT, copy=False), jd.astype(_INT, copy=False), jl.astype(_INT, copy=False)
    if len(jq) and (jq.min() < 0 or jq.max() >= n_q):
        raise InputError(f"qrels_query: expected query indices in [0, {n_q}), found {jq.min()}..{jq.max()}")
    if len(jd) and jd.min() < 0:
        raise InputError(f"qrels_doc: expected doc indices >= 0, found {jd.min()}")
    dmin = int(docs.min()) if docs.size else 0
    if docs.dtype.kind == "u":  # compared with int64 qrels ids below: make the matrix signed
        if docs.size and int(docs.max()) >= 2**63:
            raise InputError(f"ranked_docs: doc indices must fit in int64, found {int(docs.max())}")
        docs = docs.astype(_INT)
    if dmin < -1:
        raise InputError(f"ranked_docs: expected doc indices >= 0 or -1 as padding, found {dmin}")
    # The judgments grouped by query (and by doc within it), so a pair judged twice sits side by side.
    order, key = _judgment_order(jq, jd, n_q)
    if order is not None:
        jq, jd, jl = jq[order], jd[order], jl[order]
    if len(jq) > 1:
        if key is not None:
            key = key[order] if order is not None else key
            same = key[1:] == key[:-1]
        else:
            same = (jq[1:] == jq[:-1]) & (jd[1:] == jd[:-1])
        if same.any():
            i = int(np.flatnonzero(same)[0])
            raise InputError(f"qrels arrays judge the same (query, doc) pair twice: query index {jq[i]}, doc {jd[i]}")
    n_ret = _retrieved(docs, dmin)
    repeats = repeated_rows(docs, dmin) if check_duplicates and depth > 1 else None
    if repeats is not None and repeats.any():
        return _judged_only(_table_with_repeats(query_ids, docs, jq, jd, jl, n_ret, repeats))
    rows, cols, judgment = _judged_cells(docs, jq, jd)
    if len(rows) > 1 and not bool(np.all(judgment[1:] > judgment[:-1])) and np.bincount(judgment).max() > 1:
        # A judged doc found twice in one row (a judgment belongs to one row): only possible when the rows
        # were not checked. Refused, as the ranks of everything below the repeat would be off.
        j = int(np.argmax(np.bincount(judgment, minlength=len(jq))))
        r = int(jq[j])
        where = np.flatnonzero(docs[r] == jd[j]).tolist()
        raise InputError(
            f"ranked_docs row {r} ({query_ids[r]!r}) holds doc {jd[j]} twice (columns {where}); "
            "check_duplicates=False promises distinct ids per row"
        )
    table = _ArrayTable(
        query_ids=tuple(query_ids),
        n_ret=n_ret,
        hit_query=rows,
        hit_rank=cols + 1,
        hit_label=jl[judgment],
        judged_query=jq,
        judged_label=jl,
    )
    return _judged_only(table)


def _judged_only(table: _ArrayTable) -> _ArrayTable:
    """The table over the rows whose query has a judgment; the others named in ``unjudged``.

    As trec_eval and :func:`rankbridge.evaluate` on dicts: the queries evaluated are the qrels' queries, and
    a query of the run without a judgment is not evaluated (averaged in, it would score 0 and lower every
    mean). The rows kept stay in their order; the hits, sorted by row, stay sorted under the renumbering.
    """
    jq, n_q = table.judged_query, table.num_queries
    if len(jq) >= n_q and int(np.count_nonzero(jq[1:] != jq[:-1])) + 1 == n_q:  # the usual case (jq is sorted)
        return table
    judged = np.zeros(n_q, dtype=bool)
    judged[jq] = True
    row = np.cumsum(judged) - 1  # old row -> new row, for the rows kept
    return _ArrayTable(
        query_ids=tuple(compress(table.query_ids, judged.tolist())),
        n_ret=table.n_ret[judged],
        hit_query=row[table.hit_query],
        hit_rank=table.hit_rank,
        hit_label=table.hit_label,
        judged_query=row[jq],
        judged_label=table.judged_label,
        unjudged=tuple(sorted(compress(table.query_ids, (~judged).tolist()))),  # sorted, as evaluate lists them
    )


def _judgment_order(jq: np.ndarray, jd: np.ndarray, n_q: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The order that sorts the judgments by (query, doc) (None: sorted already) and their int64 keys."""
    if len(jq) < 2:
        return None, None
    top = int(jd.max()) + 1
    if n_q * top < 2**62:  # one int64 key: a check of order, else one (radix/merge) sort, not a lexsort
        key = jq * top + jd
        if bool(np.all(key[1:] >= key[:-1])):
            return None, key
        return np.argsort(key, kind="stable"), key
    return np.lexsort((jd, jq)), None


def _retrieved(docs: np.ndarray, dmin: int) -> np.ndarray:
    """Docs retrieved per row: the row's length less its padding (which must end the row)."""
    n_q, depth = docs.shape
    n_ret = np.full(n_q, depth, dtype=_INT)
    if dmin >= 0:  # no padding anywhere: nothing to count
        return n_ret
    pads = np.flatnonzero(docs.ravel() < 0)
    rows, cols = np.divmod(pads, depth)
    count = np.bincount(rows, minlength=n_q)
    inside = cols < depth - count[rows]  # a -1 with a doc after it in its row
    if inside.any():
        r, c = int(rows[inside][0]), int(cols[inside][0])
        raise InputError(
            f"ranked_docs row {r}: -1 at column {c} is followed by doc ids; -1 pads a short list at the end "
            "of its row only"
        )
    n_ret -= count
    return n_ret


def repeated_rows(docs: np.ndarray, dmin: int) -> np.ndarray:
    """``(Q,)`` bool: rows that hold a doc id twice (padding aside).

    Shallow rows (depth <= ``_SHIFT_DEPTH``): every pair of columns compared, a block of rows at a time;
    deeper rows: one sort of the rows.
    """
    dmax = int(docs.max()) if docs.size else 0
    # 32-bit ids compare and sort about twice as fast as 64-bit ones: narrow the matrix when the ids allow.
    narrow = np.dtype(np.int32) if dmax < 2**31 and docs.dtype.itemsize > 4 else docs.dtype
    if docs.shape[1] <= _SHIFT_DEPTH:
        return _repeated_shallow(docs, dmin, narrow)
    srt = np.sort(docs.astype(narrow, copy=False), axis=1)
    same = srt[:, 1:] == srt[:, :-1]
    if dmin < 0:
        same &= srt[:, 1:] >= 0
    if not same.any():  # the common case, told by one flat pass; rows only when there is a repeat
        return np.zeros(len(docs), dtype=bool)
    return np.asarray(same.any(axis=1))


def _repeated_shallow(docs: np.ndarray, dmin: int, dtype: np.dtype) -> np.ndarray:
    """:func:`repeated_rows` by comparing each cell with the cell ``s`` to its right, for every shift ``s``.

    No sort (a row sort costs far more per cell at this depth): a block of rows (a copy that stays in the
    CPU cache, in 32-bit ids when they fit) is compared with itself shifted by ``s`` cells as one flat
    array; the few equal pairs found are kept when both cells are in one row. Padding gets a distinct
    negative value per cell first, so that two -1 never count as a repeat.
    """
    n_q, depth = docs.shape
    out = np.zeros(n_q, dtype=bool)
    step = max(1, _SHIFT_BLOCK // depth)
    if dmin < 0:  # room for a distinct negative value per padding cell of a block
        dtype = np.promote_types(dtype, np.int32)
    for lo in range(0, n_q, step):
        flat = docs[lo : lo + step].astype(dtype).ravel()  # a copy: the padding is rewritten below
        if dmin < 0:
            pad = np.flatnonzero(flat < 0)
            flat[pad] = -2 - np.arange(len(pad), dtype=dtype)
        for shift in range(1, depth):
            same = flat[shift:] == flat[:-shift]
            if same.any():
                cell = np.flatnonzero(same)
                cell = cell[cell % depth < depth - shift]  # the pair's second cell is in the first's row
                out[lo + cell // depth] = True
    return out


def _judged_cells(docs: np.ndarray, jq: np.ndarray, jd: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every cell of ``docs`` holding a doc its row's query judged: (row, column, judgment index).

    ``jq``/``jd`` are sorted by query. Few judgments per query (MS MARCO: about one): each row is compared
    with its first judged doc, then the rows with a second one with theirs, and so on -- a broadcast
    comparison per slot, whose cost is judgments x depth. Many: one pass of a hash filter over the
    matrix, and an exact match of the (few) candidate cells by binary search.
    """
    n_q, depth = docs.shape
    empty = np.zeros(0, dtype=_INT)
    if not len(jq) or not docs.size:
        return empty, empty, empty
    new_query = np.empty(len(jq), dtype=bool)
    new_query[0] = True
    np.not_equal(jq[1:], jq[:-1], out=new_query[1:])
    starts = np.flatnonzero(new_query)  # each query's first judgment
    counts = np.diff(np.r_[starts, len(jq)])
    n_slots = int(counts.max())
    if n_slots <= _MAX_SLOTS and len(jq) * depth <= _COMPARE_FACTOR * docs.size + depth:
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for s in range(n_slots):
            # the judgments of slot s (each query's s-th), one per query: each compared with its query's row
            which = starts if s == 0 else starts[counts > s] + s
            qs = jq[which]
            if len(qs) == n_q:  # every query has one: compare the matrix in place
                eq = docs == jd[which][:, None]
            else:
                eq = docs[qs] == jd[which][:, None]
            local, cols = np.divmod(np.flatnonzero(eq), depth)
            found.append((qs[local], cols, which[local]))
        if len(found) == 1:
            return found[0]
        rows, cols, judgment = (np.concatenate([f[i] for f in found]) for i in range(3))
        # each slot's cells are in row order: a stable sort of one key merges them into (row, column) order
        order = np.argsort(rows * depth + cols, kind="stable")
        return rows[order], cols[order], judgment[order]
    # Hash filter: the low bits of every judged doc id mark a slot of a small bool table, which a gather
    # over the matrix reads; only cells whose slot is marked are matched exactly.
    size = 1 << min(_FILTER_BITS, max(10, int(len(jd) * 8).bit_length()))
    mark = np.zeros(size, dtype=bool)
    mark[jd & (size - 1)] = True
    flat = docs.ravel()
    cand = np.flatnonzero(mark[flat & (size - 1)])  # padding (-1) lands on the last slot: dropped below
    rows, cols = np.divmod(cand, depth)
    cand_docs = flat[cand].astype(_INT)
    # Exact match: the candidate's doc as a code among the judged docs, then (row, code) among the
    # judgments, whose keys are sorted because the judgments are sorted by query, then doc.
    ujd, inv = np.unique(jd, return_inverse=True)
    code = np.minimum(np.searchsorted(ujd, cand_docs), len(ujd) - 1)
    known = ujd[code] == cand_docs
    rows, cols = rows[known], cols[known]
    key = rows * len(ujd) + code[known]
    jkey = jq * len(ujd) + inv.astype(_INT)
    pos = np.minimum(np.searchsorted(jkey, key), len(jkey) - 1)
    match = jkey[pos] == key
    return rows[match].astype(_INT), cols[match].astype(_INT), pos[match].astype(_INT)


def _table_with_repeats(
    query_ids: Sequence[str],
    docs: np.ndarray,
    jq: np.ndarray,
    jd: np.ndarray,
    jl: np.ndarray,
    n_ret: np.ndarray,
    has_dup: np.ndarray,
) -> _ArrayTable:
    """The table when some rows repeat a doc: a repeat keeps its first rank and counts once.

    Rows without repeats go the fast way; the (rare) rows with repeats are deduplicated one by one.
    """
    n_ret = n_ret.copy()
    rows, cols, judgment = _judged_cells(docs, jq, jd)
    keep = np.ones(len(rows), dtype=bool)
    ranks = cols + 1
    for r in np.flatnonzero(has_dup).tolist():
        row = docs[r]
        valid = row[row >= 0]
        _, first = np.unique(valid, return_index=True)
        n_ret[r] = len(first)
        is_first = np.zeros(len(valid), dtype=bool)
        is_first[first] = True
        distinct_above = np.cumsum(is_first) - is_first  # distinct docs before each column
        mine = np.flatnonzero(rows == r)
        for i in mine.tolist():
            c = int(cols[i])
            if not is_first[c]:
                keep[i] = False  # a later copy of a judged doc: its first copy is the hit
            else:
                ranks[i] = int(distinct_above[c]) + 1
    return _ArrayTable(
        query_ids=tuple(query_ids),
        n_ret=n_ret,
        hit_query=rows[keep],
        hit_rank=ranks[keep],
        hit_label=jl[judgment[keep]],
        judged_query=jq,
        judged_label=jl,
    )
