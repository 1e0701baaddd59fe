"""Runs from tables: one row per hit, as runs sit in Parquet / Delta tables.

:func:`run_from_table` reads a pandas DataFrame, a pyarrow Table (or RecordBatch) or a polars DataFrame
with ``query_id``, ``doc_id`` and ``score`` (or ``rank``) columns; :func:`read_run_parquet` reads such a
table from a Parquet file, and :func:`write_run_parquet` writes one that reads back as the run. The
columns are converted whole into a columnar :class:`~rankbridge.Run`
(:meth:`~rankbridge.Run.from_columns`), with no Python loop per row. Golden sets from tables (one row per
question) are :mod:`rankbridge.io.tables`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from itertools import compress
from pathlib import Path
from typing import Any

import numpy as np

from rankbridge.errors import InputError, MissingExtraError, ParseError
from rankbridge.io._atomic import atomic_path
from rankbridge.io._open import file_stem, user_stacklevel
from rankbridge.metrics.arrays import repeated_rows
from rankbridge.types import (
    ORDER_MARK,
    Run,
    RunColumns,
    _marked_by_rank,
    _rank_disagreement,
    _warn_rank_disagreement,
)

__all__ = ["read_run_parquet", "run_from_table", "write_run_parquet"]

_RUN_FEATURE = "run table"


def _table_kind(table: Any) -> str | None:
    """``"pandas"``, ``"arrow"`` (a pyarrow Table or RecordBatch) or ``"polars"``; None for anything else.

    Told by the type's module, so that neither library is imported to ask.
    """
    module = type(table).__module__.split(".")[0]
    if module == "pandas" and hasattr(table, "columns") and hasattr(table, "iloc"):
        return "pandas"
    if module == "pyarrow" and hasattr(table, "column_names") and hasattr(table, "column"):
        return "arrow"
    if module == "polars" and hasattr(table, "to_arrow"):
        return "polars"
    return None


def _encoded_ids(column: Any, kind: str, name: str, what: str) -> tuple[np.ndarray, list[str]]:
    """(codes per row, distinct ids as str) of an id column: factorized in C, ids checked once each."""
    listed = False  # True: the values come from a dictionary the table holds, which may list one twice
    if kind == "pandas":
        pd = _import_module("pandas")
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        codes = np.asarray(codes, dtype=np.int64)
        values = list(uniques.tolist() if hasattr(uniques, "tolist") else uniques)
    else:
        pa = _import_module("pyarrow")
        pc = _import_module("pyarrow.compute")
        column = column.combine_chunks() if hasattr(column, "combine_chunks") else column
        # a dictionary column is encoded already (a value listed twice in its dictionary is merged below)
        listed = pa.types.is_dictionary(column.type)
        encoded = column if listed else pc.dictionary_encode(column)
        indices = encoded.indices
        codes = np.asarray(indices.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        values = encoded.dictionary.to_pylist()
    missing = np.flatnonzero(codes < 0)
    if len(missing):
        raise InputError(
            f"{_RUN_FEATURE}: row {int(missing[0])}, column {name!r}: expected a {what}, found a missing value"
        )
    if listed and len(codes):  # the dictionary's order is not the rows': renumber in order of appearance
        # a value's first row starts a run of equal codes: only those rows are searched
        heads = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        _, first = np.unique(codes[heads], return_index=True)
        used = codes[heads[np.sort(first)]]
        renumber = np.empty(len(values), dtype=np.int64)
        renumber[used] = np.arange(len(used), dtype=np.int64)
        codes, values = renumber[codes], list(map(values.__getitem__, used.tolist()))
    kinds = set(map(type, values))  # one C-level pass over the distinct values
    if kinds <= {str}:
        ids = values
    elif kinds <= {int}:
        ids = list(map(str, values))
    else:
        ids = []
        for value in values:
            if type(value) is str:
                ids.append(value)
                continue
            if isinstance(value, int) and not isinstance(value, bool):
                ids.append(str(value))
                continue
            row = int(np.flatnonzero(codes == len(ids))[0])
            hint = " (ids read as floats because the column has missing values? convert it to int or str)"
            raise InputError(
                f"{_RUN_FEATURE}: row {row}, column {name!r}: expected a {what} as str (or int), found "
                f"{type(value).__name__} {value!r}{hint if isinstance(value, float) else ''}"
            )
    if not listed and len(kinds) < 2:  # distinct values of one type: distinct ids
        return codes, ids
    # 7 and "7" in one column (or a value a dictionary lists twice) are one id: their codes are merged
    distinct = dict(zip(dict.fromkeys(ids), range(len(ids)), strict=False))
    if len(distinct) < len(ids):
        codes = np.fromiter(map(distinct.__getitem__, ids), dtype=np.int64, count=len(ids))[codes]
        ids = list(distinct)
    return codes, ids


def _doc_rows(column: Any, kind: str, name: str) -> tuple[np.ndarray | None, list[str]]:
    """The doc id column as ``(None, id per row)``, or as ``(codes, distinct ids)`` by :func:`_encoded_ids`.

    A run's doc ids are mostly distinct (millions in a deep run): hashing them all (:func:`_encoded_ids`)
    costs several times more than reading them as str, so a column of str or int ids (or a dictionary of
    them) is read row by row in C, and only a column of other values (missing ones, floats: the errors,
    or mixed types) is encoded.
    """
    if kind == "arrow":
        pa = _import_module("pyarrow")
        kind_of = column.type
        if column.null_count == 0 and (pa.types.is_string(kind_of) or pa.types.is_large_string(kind_of)):
            return None, column.to_pylist()
        if column.null_count == 0 and pa.types.is_integer(kind_of):
            return None, list(map(str, column.to_numpy().tolist()))
        if column.null_count == 0 and pa.types.is_dictionary(kind_of):
            # each row's id from its chunk's dictionary (which may list a value twice: the rows compare as
            # str), chunk by chunk: combining the chunks would hash every value to unify the dictionaries
            rows: list[str] = []
            for chunk in getattr(column, "chunks", [column]):
                values = chunk.dictionary.to_pylist()
                kinds = set(map(type, values))
                if not (kinds <= {str} or kinds <= {int}):
                    break
                vocab = np.empty(len(values), dtype=object)
                vocab[:] = values if kinds <= {str} else list(map(str, values))
                rows += vocab[np.asarray(chunk.indices.to_numpy(), dtype=np.int64)].tolist()
            else:
                return None, rows
    elif str(column.dtype) in ("object", "str", "string") or column.dtype.kind in "iu":
        values = column.tolist()
        kinds = set(map(type, values))
        if kinds <= {str}:
            return None, values
        if kinds <= {int}:
            return None, list(map(str, values))
    return _encoded_ids(column, kind, name, "doc id")


def _import_module(name: str) -> Any:
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        package = name.split(".")[0]
        raise MissingExtraError(package, "pandas", f"Reading a run from a {package} table") from None


def _numbers_column(column: Any, name: str, what: str, *, integral: bool, missing_ok: bool = False) -> np.ndarray:
    """A score or rank column as a float64 / int64 array; the first bad row named.

    NaN (a missing value) is refused unless ``missing_ok`` (the scores beside a rank column: a hit may
    have none); infinities always are, as the TREC and JSON Lines readers refuse them (an infinite rank
    cast to int64 would become the most negative integer and rank first).
    """
    values = column.to_numpy()  # pandas and Arrow alike (Arrow nulls become NaN, refused below)
    try:
        out = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        for i, v in enumerate(values):
            try:
                float(v)
            except (TypeError, ValueError):
                raise InputError(f"{_RUN_FEATURE}: row {i}, column {name!r}: expected a {what}, found {v!r}") from None
        raise
    if out.ndim != 1:
        raise InputError(f"{_RUN_FEATURE}: column {name!r}: expected one {what} per row, found shape {out.shape}")
    if not missing_ok:
        bad = np.flatnonzero(np.isnan(out))
        if len(bad):
            raise InputError(
                f"{_RUN_FEATURE}: row {int(bad[0])}, column {name!r}: expected a {what}, found NaN (a missing value?)"
            )
    infinite = np.flatnonzero(np.isinf(out))
    if len(infinite):
        i = int(infinite[0])
        raise InputError(f"{_RUN_FEATURE}: row {i}, column {name!r}: expected a finite {what}, found {float(out[i])!r}")
    if integral:
        whole = out == np.round(out)
        if not whole.all():
            i = int(np.flatnonzero(~whole)[0])
            raise InputError(
                f"{_RUN_FEATURE}: row {i}, column {name!r}: expected an integer {what}, found {float(out[i])!r}"
            )
        return out.astype(np.int64)
    return out


def run_from_table(
    table: Any,
    *,
    query_column: str = "query_id",
    doc_column: str = "doc_id",
    score_column: str | None = "score",
    rank_column: str | None = None,
    name: str = "run",
    duplicates: str = "error",
) -> Run:
    """A run from a table with one row per hit: a pandas DataFrame, a pyarrow Table, a polars DataFrame.

    The columns are converted whole into a columnar :class:`~rankbridge.Run`
    (:meth:`~rankbridge.Run.from_columns`), with no Python loop per row: query ids by ``pandas.factorize``
    / pyarrow ``dictionary_encode`` (each distinct id checked once), doc ids read as str in C (the run
    holds one per row), scores and ranks as numpy arrays; rows are grouped and checked by numpy.
    :func:`rankbridge.evaluate` calls this for a table passed as the run.

    Parameters
    ----------
    table:
        The hits, rows in any order.
    query_column, doc_column:
        The query id and doc id columns (str or int values; ints are kept as str).
    score_column:
        The score column. The run is *scored* (ranked by score descending, ties by doc id descending,
        as trec_eval ranks) unless ``rank_column`` is given or the table has no such column.
    rank_column:
        An integer rank column (1 = best): the run is *ranked* in this order. When neither this nor the
        score column is there, a column named ``rank`` is used; so is the ``rank`` column of
        :meth:`rankbridge.Run.to_pandas`' frame while its mark holds (the frame reads back as the run;
        a Parquet file pandas wrote keeps the mark). Otherwise, when an unchosen ``rank`` column orders
        some query otherwise than the scores do, a :class:`~rankbridge.errors.RankColumnWarning` names
        how many, the first, and the fix (``rank_column="rank"``).
    name:
        The run's name.
    duplicates:
        ``"error"``: a (query, doc) pair on two rows is an error naming both rows. ``"first"``: the first
        row is kept and the others counted in :attr:`~rankbridge.Run.duplicates`.

    Raises
    ------
    InputError
        A missing column (the message lists the table's columns), a missing id, score or rank, a score
        that is not a number, NaN or infinite, a rank that is not a finite integer or given twice in a query, or a
        duplicate pair: each names the row (0-based position) and column.
    MissingExtraError
        The table's library is not importable (it is needed to read the columns).

    Examples
    --------
    >>> import pandas as pd
    >>> import rankbridge as rb
    >>> hits = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"], "score": [0.2, 0.9, 1.0]})
    >>> run_from_table(hits, name="bm25").ranking("q1")
    ['b', 'a']
    >>> rb.evaluate({"q1": {"a": 1}, "q2": {"a": 1}}, hits, ["mrr"]).mean
    {'mrr': 0.75}
    """
    kind = _table_kind(table)
    if kind is None:
        raise InputError(
            f"{_RUN_FEATURE}: expected a pandas DataFrame, a pyarrow Table or a polars DataFrame, "
            f"found {type(table).__name__}"
        )
    if duplicates not in ("error", "first"):
        raise ValueError(f"duplicates must be 'error' or 'first'. Got {duplicates!r} instead.")
    if kind == "polars":
        table, kind = table.to_arrow(), "arrow"
    names = [str(c) for c in (table.columns if kind == "pandas" else table.column_names)]
    have = ", ".join(map(repr, names)) or "none"
    if rank_column is None and (score_column is None or score_column not in names) and "rank" in names:
        rank_column = "rank"
    may_be_marked = rank_column is None and score_column == "score" and {"rank", "score"} <= set(names)
    if may_be_marked and _marked_by_rank(
        _table_mark(table, kind), _column_values(table, kind, "rank"), _column_values(table, kind, "score")
    ):
        rank_column = "rank"  # Run.to_pandas()' frame, unchanged: its order is its rank column
    wanted = {"query_column": query_column, "doc_column": doc_column}
    if rank_column is not None:
        wanted["rank_column"] = rank_column
    elif score_column is not None:
        wanted["score_column"] = score_column
    else:
        raise InputError(f"{_RUN_FEATURE}: give score_column (a scored run) or rank_column (a ranked run)")
    for param, col in wanted.items():
        if col not in names:
            raise InputError(f"{_RUN_FEATURE}: {param}={col!r} is not a column of the table; its columns are: {have}")

    def get(col: str) -> Any:
        return table[col] if kind == "pandas" else table.column(col)

    q_codes, q_ids = _encoded_ids(get(query_column), kind, query_column, "query id")
    d_codes, d_ids = _doc_rows(get(doc_column), kind, doc_column)
    scores = None
    if score_column is not None and score_column in names and rank_column is None:
        try:
            scores = _numbers_column(get(score_column), score_column, "numeric score", integral=False)
        except InputError as exc:
            if "rank" not in names or "NaN" not in str(exc):
                raise
            raise InputError(  # what a ranked run's to_pandas() gives: ranks, and no scores
                f"{exc}; the table has a 'rank' column: run_from_table(table, rank_column='rank') ranks by it"
            ) from None
    ranks = None
    if rank_column is not None:
        ranks = _numbers_column(get(rank_column), rank_column, "rank", integral=True)
        if score_column is not None and score_column in names:
            scores = _numbers_column(get(score_column), score_column, "numeric score", integral=False, missing_ok=True)
    cols, dropped = _columns(q_codes, q_ids, d_codes, d_ids, scores, ranks, rank_column or "rank")
    if dropped and duplicates == "error":
        # the message names the first pair in (query, doc) order, both coded in the order they first appear
        per_row = d_ids if d_codes is None else list(map(d_ids.__getitem__, d_codes.tolist()))
        index = dict(zip(dict.fromkeys(per_row), range(len(per_row)), strict=False))
        d_codes = np.fromiter(map(index.__getitem__, per_row), dtype=np.int64, count=len(per_row))
        d_ids = list(index)
        key = q_codes * len(d_ids) + d_codes
        order = np.argsort(key, kind="stable")
        same = np.flatnonzero(key[order][1:] == key[order][:-1])
        first, second = int(order[same[0]]), int(order[same[0] + 1])
        raise InputError(
            f"{_RUN_FEATURE}: rows {first} and {second}: doc {d_ids[d_codes[first]]!r} appears twice for query "
            f"{q_ids[q_codes[first]]!r}; pass duplicates='first' to keep the first row"
        )
    run = Run(name=name)
    run._columns = cols  # as Run.from_columns sets them: the rows were checked and grouped here
    run.duplicates.update(dropped)
    if scores is not None and rank_column is None and "rank" in names and len(q_codes) > 1:
        try:
            ranks = _numbers_column(get("rank"), "rank", "rank", integral=False)
        except (InputError, TypeError):  # not a ranking to compare
            return run

        def docs_at(rows: np.ndarray) -> np.ndarray:  # asked only if two scores of a query tie
            vocab = np.empty(len(d_ids), dtype=object)
            vocab[:] = d_ids
            out: np.ndarray = vocab[rows if d_codes is None else d_codes[rows]]
            return out

        differ, first = _rank_disagreement(q_codes, ranks, scores, docs_at)
        if differ:
            _warn_rank_disagreement(_RUN_FEATURE, "rank_column", differ, len(q_ids), q_ids[first], user_stacklevel())
    return run


def _table_mark(table: Any, kind: str) -> Any:
    """The :data:`~rankbridge.types.ORDER_MARK` entry of a table: a DataFrame's ``attrs``, or the ``attrs``
    pandas wrote into an Arrow schema's metadata (``df.to_parquet``); None without one."""
    if kind == "pandas":
        return getattr(table, "attrs", {}).get(ORDER_MARK)
    raw = (getattr(table.schema, "metadata", None) or {}).get(b"PANDAS_ATTRS")
    try:
        attrs = json.loads(raw) if raw else None
    except ValueError:
        return None
    return attrs.get(ORDER_MARK) if isinstance(attrs, dict) else None


def _column_values(table: Any, kind: str, name: str) -> Any:
    """A column as a numpy array (an Arrow null as NaN)."""
    column = table[name] if kind == "pandas" else table.column(name)
    return column.to_numpy() if kind == "pandas" else column.to_numpy(zero_copy_only=False)


def _columns(
    q_codes: np.ndarray,
    q_ids: list[str],
    d_codes: np.ndarray | None,
    d_ids: list[str],
    scores: np.ndarray | None,
    ranks: np.ndarray | None,
    rank_name: str = "rank",
) -> tuple[RunColumns, dict[str, int]]:
    """What :meth:`RunColumns.build` makes of the rows, computed by numpy on the query codes.

    Each distinct query id was checked once (:func:`_encoded_ids`) and the doc ids are str: no row is
    looked at again. The rows are grouped by query (a ranked run's by rank, a scored run's in row order),
    a rank given twice in a query is refused (naming both rows and the column ``rank_name``), and a doc
    repeated within a query is found (on the doc codes by :func:`~rankbridge.metrics.arrays.repeated_rows`
    when the column was encoded, else by one set per query) and all but its first row dropped (counted
    per query).

    ``d_codes`` None: ``d_ids`` is the doc id of each row; else the distinct ids ``d_codes`` index.
    """
    n = len(q_codes)
    values = scores if scores is not None else np.full(n, np.nan)
    rows = d_codes
    if rows is None:
        rows = np.empty(n, dtype=object)
        rows[:] = d_ids
    order: np.ndarray | None = None
    if ranks is not None:
        step = np.diff(q_codes)
        if n > 1 and not bool(np.all((step > 0) | ((step == 0) & (np.diff(ranks) >= 0)))):
            order = np.lexsort((ranks, q_codes))
    elif n > 1 and bool(np.any(q_codes[1:] < q_codes[:-1])):
        order = np.argsort(q_codes, kind="stable")  # group by query, rows of a query in row order
    if order is not None:
        q_codes, rows, values = q_codes[order], rows[order], values[order]
        ranks = ranks[order] if ranks is not None else None
    if ranks is not None:
        same = np.flatnonzero((q_codes[1:] == q_codes[:-1]) & (ranks[1:] == ranks[:-1]))
        if len(same):
            i = int(same[0])
            row_a, row_b = sorted((int(order[i]), int(order[i + 1])) if order is not None else (i, i + 1))
            raise InputError(
                f"{_RUN_FEATURE}: rows {row_a} and {row_b}, column {rank_name!r}: query "
                f"{q_ids[q_codes[i]]!r} has rank {ranks[i]} twice; ranks must differ within a query"
            )
    lengths = np.bincount(q_codes, minlength=len(q_ids))
    offsets = np.zeros(len(q_ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if d_codes is not None:
        vocab = np.empty(len(d_ids), dtype=object)
        vocab[:] = d_ids
        repeats = _repeated_segments(rows, lengths)
        docs: list[str] = vocab[rows].tolist()  # the distinct str objects, shared by rows
    else:
        docs = rows.tolist()
        segments = map(docs.__getitem__, map(slice, offsets[:-1].tolist(), offsets[1:].tolist()))
        repeats = np.fromiter(map(len, map(set, segments)), dtype=np.int64, count=len(q_ids)) != lengths
    dropped: dict[str, int] = {}
    if repeats.any():
        keep = np.ones(n, dtype=bool)
        for i in np.flatnonzero(repeats).tolist():
            lo, hi = int(offsets[i]), int(offsets[i + 1])
            first = dict(zip(reversed(docs[lo:hi]), range(hi - 1, lo - 1, -1), strict=True))
            keep[lo:hi] = False
            keep[list(first.values())] = True
            if hi - lo > len(first):
                dropped[q_ids[i]] = hi - lo - len(first)
        docs = list(compress(docs, keep.tolist()))
        values = values[keep]
        np.cumsum(np.bincount(q_codes[keep], minlength=len(q_ids)), out=offsets[1:])
    index = dict(zip(q_ids, range(len(q_ids)), strict=True))
    return RunColumns(q_ids, offsets, docs, values, ranks is not None, index), dropped


def _repeated_segments(codes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``(Q,)`` bool: the queries whose (grouped) rows hold a doc code twice.

    The rows as a ``(queries x longest)`` matrix, padded with -1, checked by
    :func:`~rankbridge.metrics.arrays.repeated_rows`; a run whose lists differ much in length by one sort
    of (query, doc) keys instead.
    """
    n_q = len(lengths)
    if not n_q or not len(codes):
        return np.zeros(n_q, dtype=bool)
    longest = int(lengths.max())
    if longest == int(lengths.min()):  # every query has as many rows (a run cut at a fixed depth)
        return repeated_rows(codes.reshape(n_q, longest), 0)
    if n_q * longest <= 2 * len(codes):
        starts = np.cumsum(lengths) - lengths
        query = np.repeat(np.arange(n_q), lengths)
        matrix = np.full((n_q, longest), -1, dtype=codes.dtype)
        matrix[query, np.arange(len(codes)) - starts[query]] = codes
        return repeated_rows(matrix, -1)
    width = int(codes.max()) + 1
    key = np.sort(np.repeat(np.arange(n_q, dtype=np.int64), lengths) * width + codes)
    out = np.zeros(n_q, dtype=bool)
    out[key[1:][key[1:] == key[:-1]] // width] = True
    return out


def read_run_parquet(
    path: str | os.PathLike[str],
    *,
    query_column: str = "query_id",
    doc_column: str = "doc_id",
    score_column: str | None = "score",
    rank_column: str | None = None,
    name: str | None = None,
    duplicates: str = "error",
) -> Run:
    """A run from a Parquet file (or dataset directory) with one row per hit (:func:`run_from_table`).

    Only the named columns are read. Needs pyarrow (``pip install pyarrow``).

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.parquet"
    >>> pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "rank": [2, 1]}).to_parquet(path)
    >>> read_run_parquet(path).ranking("q1")
    ['b', 'a']
    """
    pq = _import_module("pyarrow.parquet")
    try:
        present = set(pq.read_schema(path).names) if not Path(path).is_dir() else None
        wanted = [query_column, doc_column, score_column, rank_column, "rank"]
        columns = [c for c in dict.fromkeys(wanted) if c is not None and (present is None or c in present)]
        table = pq.read_table(path, columns=columns if present is not None else None)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ParseError(f"cannot read Parquet file: {exc}", source=str(path)) from None
    return run_from_table(
        table,
        query_column=query_column,
        doc_column=doc_column,
        score_column=score_column,
        rank_column=rank_column,
        name=name or file_stem(path),
        duplicates=duplicates,
    )


def write_run_parquet(run: Run | Mapping[str, Mapping[str, float]], path: str | os.PathLike[str]) -> None:
    """Write a run as a Parquet table of one row per hit (atomically: a failure leaves no partial file).

    The table is :meth:`rankbridge.Run.to_pandas`' frame -- ``query_id``, ``rank``, ``doc_id``, ``score``
    (NaN when missing) and ``text`` when a hit has one -- with its mark, so :func:`read_run_parquet` (and
    :func:`rankbridge.io.load_run`) read it back as the run: the same rankings and scores, a reranked
    run's order included (the texts are in the file for other tools; the reader reads none). Errors,
    latencies and hit metadata are not written (JSON Lines keeps them).
    Needs pandas and pyarrow (``pip install rankbridge[pandas]``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from rankbridge import Hit
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.parquet"
    >>> write_run_parquet(Run.from_ranked({"q1": [Hit("d2", 0.1), Hit("d1", 0.9)]}), p)
    >>> read_run_parquet(p).ranking("q1")
    ['d2', 'd1']
    """
    pa, pq = _import_module("pyarrow"), _import_module("pyarrow.parquet")
    frame = (run if isinstance(run, Run) else Run.from_scores(run)).to_pandas()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    # the mark where pandas >= 2.1 keeps df.attrs, written here so that older pandas writes it too
    metadata = {**(table.schema.metadata or {}), b"PANDAS_ATTRS": json.dumps(frame.attrs).encode()}
    with atomic_path(path) as tmp:
        pq.write_table(table.replace_schema_metadata(metadata), tmp)
