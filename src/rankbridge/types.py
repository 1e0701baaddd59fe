"""The core data model: :class:`Qrels`, :class:`Hit`, :class:`Run`, :class:`Query`, :class:`GoldenSet`.

Every stage of rankbridge speaks these few types, so a run read from a TREC file, produced by the
runner, or captured from a framework callback is evaluated the same way.

A :class:`Run` holds, per query, one of two kinds of result:

* **scored** -- a ``{doc_id: score}`` mapping (TREC run files, plain dicts). The ranking is derived
  from the scores exactly as trec_eval does: score descending, then doc id descending.
* **ranked** -- a list of :class:`Hit` in the order a retriever returned them (frameworks, the runner,
  live capture). The list order *is* the ranking; scores are kept but never re-sorted. A repeated doc id
  keeps its first (best) position; later copies are dropped and counted in :attr:`Run.duplicates`.

A ranked result given as doc ids, ``(doc_id, float)`` pairs or clean Hits (and what the runner
retrieves) is kept as columns -- ids, scores, texts, metadata -- until someone reads its hits: the
metrics read the ids with no Python object per hit, and ``run[qid]`` / :meth:`Run.hits` give
:class:`Hit` objects equal to the ones the list would have made.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import operator
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, pairwise, repeat
from typing import Any, TypeVar, final

import numpy as np

from rankbridge.errors import InputError, MissingExtraError, RankColumnWarning

__all__ = ["GoldenSet", "Hit", "Qrels", "Query", "Run", "RunColumns"]


@dataclass(frozen=True, slots=True, repr=False)
class Hit:
    """One retrieved item.

    Parameters
    ----------
    doc_id:
        The id that qrels judge (a document or chunk id).
    score:
        The retriever's score, when it gives one (LangChain documents carry none).
    text:
        The retrieved text, when known (RAGAS needs it).
    metadata:
        Anything else the framework attached to the hit.

    Examples
    --------
    >>> Hit("doc-1", score=0.83)
    Hit(doc_id='doc-1', score=0.83, text=None, metadata=None)
    """

    doc_id: str
    score: float | None = None
    text: str | None = None
    metadata: Mapping[str, Any] | None = None

    def __repr__(self) -> str:
        # a hit's text is a whole chunk: printing a list of hits must not print the corpus
        return (
            f"Hit(doc_id={_short(self.doc_id)}, score={self.score!r}, text={_short(self.text)}, "
            f"metadata={_short(self.metadata)})"
        )


def _short(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to about ``limit`` characters (for reprs that must stay one short line)."""
    if isinstance(value, str):
        return repr(value if len(value) <= limit else value[: limit - 3] + "...")
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, Mapping):
        keys = ", ".join(str(k) for k in list(value)[:5])
        return f"<{len(value)} keys: {_short(keys, limit - 12)[1:-1]}{'...' if len(value) > 5 else ''}>"
    return text[: limit - 3] + "..."


def _is_bool(value: object) -> bool:
    """True for ``bool`` and numpy's ``bool_`` (which is no ``bool`` subclass)."""
    return isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b"


def _describe(value: object) -> str:
    """``type value`` for an error message, with a hint for the usual culprits of data frames."""
    text = f"{type(value).__name__} {value!r}"
    if value is None:
        return f"{text} (a missing value?)"
    if isinstance(value, float) or getattr(getattr(value, "dtype", None), "kind", None) == "f":
        f = float(value)  # type: ignore[arg-type]
        if f != f:
            return f"{text} (a missing value?)"
        return f"{text} (ids read as floats because a column has missing values? convert the column to int or str)"
    return text


def _check_id(value: object, what: str, where: str) -> str:
    if type(value) is str:
        return value
    if isinstance(value, str):  # numpy.str_ and other str subclasses: a plain str
        return str.__str__(value)
    if not _is_bool(value):
        try:
            return str(operator.index(value))  # type: ignore[arg-type]  # int, numpy and Arrow integers
        except TypeError:
            pass
    raise InputError(f"{where}: expected a {what} as str (or int), found {_describe(value)}")


def _check_label(value: object, where: str) -> int:
    if type(value) is int:
        return value
    if not _is_bool(value):
        if isinstance(value, float) or getattr(getattr(value, "dtype", None), "kind", None) == "f":
            f = float(value)  # type: ignore[arg-type]
            if f.is_integer():
                return int(f)
            hint = " (a missing value?)" if f != f else ""
            raise InputError(f"{where}: expected an integer relevance label, found {value!r}{hint}")
        try:
            return operator.index(value)  # type: ignore[arg-type]  # numpy and Arrow integers, int subclasses
        except TypeError:
            pass
    raise InputError(f"{where}: expected an integer relevance label, found {value!r}")


def _check_score(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:  # numpy scalars and other number types
            value = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InputError(f"{where}: expected a numeric score, found {value!r}") from None
    f = float(value)
    if math.isnan(f):
        raise InputError(f"{where}: expected a numeric score, found NaN")
    return f


def _import_pandas(feature: str) -> Any:
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise MissingExtraError("pandas", "pandas", feature) from None


#: The key of the mark :meth:`Run.to_pandas` leaves in a frame's ``attrs`` (pandas keeps it in a Parquet
#: file's metadata): ``{"order": "rank", "check": <digest of the rank and score columns>}``.
ORDER_MARK = "rankbridge"


def _order_check(ranks: np.ndarray, scores: np.ndarray) -> str:
    """A digest of a frame's ``rank`` and ``score`` columns, row by row (:data:`ORDER_MARK`).

    The readers rank by the ``rank`` column of a marked frame only while both columns are the ones
    :meth:`Run.to_pandas` wrote: a frame re-scored, filtered or re-sorted is read by the default rules.
    """
    values = np.array(scores, dtype=np.float64)  # a copy: NaN is made one bit pattern below
    values[np.isnan(values)] = np.nan  # whatever NaN came back (Arrow stores a missing score as null)
    digest = hashlib.blake2b(np.ascontiguousarray(ranks, dtype=np.float64).tobytes(), digest_size=16)
    digest.update(values.tobytes())
    return digest.hexdigest()


def _marked_by_rank(mark: Any, ranks: Any, scores: Any) -> bool:
    """Whether ``mark`` (a frame's :data:`ORDER_MARK` entry) says the ``ranks`` and ``scores`` columns
    (array-likes) are unchanged from :meth:`Run.to_pandas`, which ranked them by rank."""
    if not isinstance(mark, Mapping) or mark.get("order") != "rank" or not isinstance(mark.get("check"), str):
        return False
    try:
        r, s = np.asarray(ranks, dtype=np.float64), np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return r.ndim == 1 and r.shape == s.shape and bool(mark["check"] == _order_check(r, s))


def _rank_disagreement(q_codes: np.ndarray, ranks: np.ndarray, scores: np.ndarray, docs_at: Any) -> tuple[int, int]:
    """``(queries, first)``: how many queries a ``rank`` column orders otherwise than trec_eval's score
    order (score descending, ties by doc id descending), and the smallest such query code (-1: none).

    ``q_codes`` (query codes in order of appearance), ``ranks`` and ``scores`` (finite) hold one value per
    row; ``docs_at(rows)`` gives the doc ids (str or int) of an array of rows, asked only for the pairs of
    rows whose scores tie. A rank given twice in a query makes the column no ranking to compare: (0, -1).
    All numpy: the rows sorted by (query, rank) once, then each neighbouring pair compared.
    """
    if len(q_codes) < 2:
        return 0, -1
    step = np.diff(q_codes)
    if bool(np.all((step > 0) | ((step == 0) & (ranks[1:] > ranks[:-1])))):  # in order already (to_pandas)
        order, q, r, s = np.arange(len(q_codes)), q_codes, ranks, scores
    else:
        order = np.lexsort((ranks, q_codes))
        q, r, s = q_codes[order], ranks[order], scores[order]
    same = q[1:] == q[:-1]
    if bool(np.any(same & (r[1:] == r[:-1]))):
        return 0, -1
    wrong = same & (s[1:] > s[:-1])  # a better score ranked below a worse one
    tied = np.flatnonzero(same & (s[1:] == s[:-1]))
    if len(tied):  # trec_eval puts the greater doc id first
        ids = np.asarray(docs_at(order[np.concatenate([tied, tied + 1])])).astype(str)
        wrong[tied[ids[: len(tied)] < ids[len(tied) :]]] = True
    differ = np.unique(q[1:][wrong])
    return len(differ), int(differ[0]) if len(differ) else -1


def _frame_rank_check(df: Any, feature: str, query_col: str, doc_col: str, scores: list[Any]) -> None:
    """Warn when the ``rank`` column of a frame ranked by ``scores`` (one per row) orders a query otherwise."""
    pd = _import_pandas(feature)
    if not isinstance(df["rank"], pd.Series):  # two columns named 'rank': no one ranking to compare
        return
    codes, queries = pd.factorize(df[query_col])
    try:
        ranks = pd.to_numeric(df["rank"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        values = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):  # values of another kind: no comparison
        return
    if ranks.ndim != 1 or not bool(np.all(np.isfinite(ranks))):  # not a ranking to compare
        return
    differ, first = _rank_disagreement(
        np.asarray(codes, dtype=np.int64), ranks, values, df[doc_col].to_numpy().__getitem__
    )
    if differ:
        _warn_rank_disagreement(feature, "rank_col", differ, len(queries), str(queries[first]), 3)


def _warn_rank_disagreement(feature: str, keyword: str, queries: int, of: int, first: str, stacklevel: int) -> None:
    """Warn that a table's ``rank`` column, not chosen, orders ``queries`` of ``of`` queries otherwise
    than the scores that ranked the run (:class:`~rankbridge.errors.RankColumnWarning`)."""
    warnings.warn(
        f"{feature}: the run is ranked by the 'score' column (trec_eval's convention: score descending, "
        f"ties by doc id descending), but the table's 'rank' column orders {queries} of {of} queries "
        f"otherwise (the first: {first!r}); pass {keyword}='rank' to rank by the 'rank' column, or evaluate "
        "the Run itself rather than its table",
        RankColumnWarning,
        stacklevel=stacklevel + 1,
    )


def _frame_columns(
    df: Any, columns: Mapping[str, str | None], feature: str, hint: str | None = None
) -> tuple[list[Any], dict[str, list[Any]]]:
    """The row labels and ``{parameter: column values}`` of a DataFrame; a missing column names the others.

    ``hint`` (what the caller could pass instead) ends the message of a frame refused.
    """
    pd = _import_pandas(feature)

    def refuse(message: str) -> InputError:
        return InputError(f"{message}; {hint}" if hint else message)

    if not isinstance(df, pd.DataFrame):
        polars = " (a polars frame: pass frame.to_pandas())" if type(df).__module__.startswith("polars") else ""
        raise refuse(f"{feature}: expected a pandas DataFrame, found {type(df).__name__}{polars}")
    have = ", ".join(repr(c) for c in df.columns) or "none"
    out: dict[str, list[Any]] = {}
    for param, col in columns.items():
        if col is None:
            continue
        if col not in df.columns:
            raise refuse(f"{feature}: {param}={col!r} is not a column of the frame; its columns are: {have}")
        out[param] = df[col].tolist()
    return df.index.tolist(), out


def _cell(feature: str, row: Any, column: str | None) -> str:
    """Where a value of a frame is, for a message: ``feature: row R, column 'C'``."""
    return f"{feature}: row {row!r}, column {column!r}"


def _frame_rows(
    feature: str, rows: list[Any], cols: Mapping[str, list[Any]], query_col: str, doc_col: str
) -> Iterator[tuple[int, Any, str, str]]:
    """``(i, row label, query id, doc id)`` for each row of :func:`_frame_columns`' output, ids made str.

    A bad id is refused naming its row and column.
    """
    for i, (row, q, d) in enumerate(zip(rows, cols["query_col"], cols["doc_col"], strict=True)):
        if type(q) is not str:
            q = _check_id(q, "query id", _cell(feature, row, query_col))
        if type(d) is not str:
            d = _check_id(d, "doc id", _cell(feature, row, doc_col))
        yield i, row, q, d


def _missing(value: object) -> bool:
    """None, NaN or pandas' NA (what a frame holds where a value is missing)."""
    if value is None or (isinstance(value, float) and value != value):
        return True
    return type(value).__name__ in ("NAType", "NaTType")


def _plain_judgments(data: dict[Any, Any]) -> bool:
    """True when ``data`` is ``{str: {str: int}}`` throughout (exact types): nothing to convert or check."""
    docs = data.values()
    return (
        set(map(type, data)) <= {str}
        and set(map(type, docs)) <= {dict}
        and set(map(type, chain.from_iterable(docs))) <= {str}
        and set(map(type, chain.from_iterable(map(dict.values, docs)))) <= {int}
    )


_V_co = TypeVar("_V_co", covariant=True)


class _DictView(Mapping[str, _V_co]):
    """A read-only mapping over the subclass's dict ``_data`` (:class:`Qrels`, ``integrations.answers.Answers``)."""

    __slots__ = ()
    _data: Mapping[str, _V_co]

    def __getitem__(self, key: str) -> _V_co:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class Qrels(_DictView[Mapping[str, int]]):
    """Relevance judgments: query id -> {doc id -> integer label}.

    Label 0 (or negative) means judged non-relevant; labels >= 1 are relevant, graded labels (0-3, as an
    LLM judge or Databricks use them) are kept as given.

    Parameters
    ----------
    data:
        ``{query_id: {doc_id: label}}``, or binary judgments ``{query_id: [relevant doc ids]}`` (a list,
        tuple, set or numpy array; each doc gets label 1). Ids may be str, int or numpy str/int values
        (all become str); labels must be integers: Python, numpy or Arrow ints, or an integral float
        (``2.0`` is accepted, ``2.5`` and NaN are not, nor booleans).
    name:
        Where the judgments came from, for reports.

    Examples
    --------
    >>> qrels = Qrels({"q1": {"d1": 2, "d2": 0}})
    >>> qrels["q1"]["d1"]
    2
    >>> qrels.num_relevant("q1")
    1
    >>> Qrels({"q1": ["d1", "d2"], "q2": {"d7"}}).to_dict()
    {'q1': {'d1': 1, 'd2': 1}, 'q2': {'d7': 1}}
    >>> import numpy as np
    >>> Qrels({np.int64(7): {np.str_("d1"): np.int64(2)}}).to_dict()
    {'7': {'d1': 2}}
    """

    __slots__ = ("_cache", "_data", "name")

    def __init__(self, data: Mapping[Any, Any] | None = None, *, name: str = "qrels"):
        self.name = name
        self._cache: dict[Any, Any] = {}
        if type(data) is dict and _plain_judgments(data):  # the common case, checked by C-level passes
            self._data: dict[str, dict[str, int]] = dict(zip(data, map(dict.copy, data.values()), strict=True))
            return
        clean: dict[str, dict[str, int]] = {}
        for qid, docs in data.items() if data is not None else ():
            q = _check_id(qid, "query id", f"qrels[{qid!r}]")
            if q in clean:
                raise InputError(f"qrels[{qid!r}]: query id {q!r} appears twice (as different types of key)")
            inner: dict[str, int] = {}
            clean[q] = inner
            if isinstance(docs, Mapping):
                for doc, label in docs.items():
                    if type(doc) is str and type(label) is int:  # the common case, checked without a call
                        inner[doc] = label
                        continue
                    where = f"qrels[{qid!r}][{doc!r}]"
                    d = _check_id(doc, "doc id", where)
                    if d in inner and type(doc) is not str:
                        raise InputError(f"{where}: doc id {d!r} appears twice (as different types of key)")
                    inner[d] = _check_label(label, where)
                continue
            if (
                isinstance(docs, (str, bytes))
                or not isinstance(docs, Iterable)
                or type(docs).__module__.startswith("pandas")
            ):
                hint = (
                    " (a pandas Series: pass .tolist() for relevant doc ids or .to_dict() for {doc: label})"
                    if type(docs).__module__.startswith("pandas")
                    else ""
                )
                raise InputError(
                    f"qrels[{qid!r}]: expected a mapping of doc id -> label or a list of relevant doc ids, "
                    f"found {type(docs).__name__}{hint}"
                )
            for i, doc in enumerate(docs):  # binary judgments: every listed doc is relevant
                inner[doc if type(doc) is str else _check_id(doc, "doc id", f"qrels[{qid!r}][{i}]")] = 1
        self._data = clean

    @classmethod
    def _trusted(cls, data: dict[str, dict[str, int]], *, name: str = "qrels") -> Qrels:
        """Wrap already-validated data without copying (used by the readers)."""
        self = cls.__new__(cls)
        self.name = name
        self._cache = {}
        self._data = data
        return self

    def __repr__(self) -> str:
        n = sum(len(d) for d in self._data.values())
        return f"Qrels(name={_short(self.name)}, queries={len(self._data)}, judgments={n})"

    def num_relevant(self, qid: str, rel: int = 1) -> int:
        """Number of docs of ``qid`` with a label >= ``rel``."""
        return sum(1 for v in self._data.get(qid, {}).values() if v >= rel)

    def to_dict(self) -> dict[str, dict[str, int]]:
        """A plain ``{qid: {doc: label}}`` copy."""
        return {q: dict(d) for q, d in self._data.items()}

    def to_pandas(self) -> Any:
        """A long DataFrame, one row per judgment: ``query_id``, ``doc_id``, ``relevance``.

        Needs pandas (imported here only). :meth:`from_pandas` reads it back.

        Examples
        --------
        >>> Qrels({"q1": {"d1": 2, "d2": 0}}).to_pandas()
          query_id doc_id  relevance
        0       q1     d1          2
        1       q1     d2          0
        """
        pd = _import_pandas("Qrels.to_pandas()")
        qids = [q for q, docs in self._data.items() for _ in docs]
        docs = [d for ds in self._data.values() for d in ds]
        labels = np.fromiter((v for ds in self._data.values() for v in ds.values()), dtype=np.int64, count=len(docs))
        return pd.DataFrame({"query_id": qids, "doc_id": docs, "relevance": labels})

    @classmethod
    def from_ranx(cls, qrels: Any, *, name: str | None = None) -> Qrels:
        """Qrels from a ``ranx.Qrels`` (or its ``to_dict()``) (:func:`rankbridge.io.qrels_from_ranx`)."""
        from rankbridge.io.ranx import qrels_from_ranx  # lazy: reader hook (io is above types)

        return qrels_from_ranx(qrels, name=name)

    def to_ranx(self) -> Any:
        """A ``ranx.Qrels`` of these judgments (queries without judgments are left out: ranx has no place)."""
        from rankbridge.io.ranx import to_ranx  # lazy: reader hook (io is above types)

        return to_ranx(self)

    @classmethod
    def from_pandas(
        cls,
        df: Any,
        *,
        query_col: str = "query_id",
        doc_col: str = "doc_id",
        label_col: str | None = "relevance",
        name: str = "qrels",
    ) -> Qrels:
        """Qrels from a long DataFrame, one row per judgment.

        Parameters
        ----------
        df:
            A pandas DataFrame.
        query_col, doc_col:
            The columns of query ids and doc ids (str, int or numpy values).
        label_col:
            The column of integer labels; ``None`` reads every row as relevant (label 1). BEIR / MTEB
            frames call it ``"score"`` (with ``query_col="query-id", doc_col="corpus-id"``).
        name:
            The qrels' name.

        Raises
        ------
        InputError
            A missing column (the message lists the frame's columns), a bad id or label (naming the row
            and column), or a (query, doc) pair judged twice with different labels (naming both rows).

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"qid": ["q1", "q1", "q2"], "doc": [10, 11, 10], "rel": [2, 0, 1]})
        >>> Qrels.from_pandas(df, query_col="qid", doc_col="doc", label_col="rel").to_dict()
        {'q1': {'10': 2, '11': 0}, 'q2': {'10': 1}}
        >>> Qrels.from_pandas(df, query_col="qid", doc_col="doc")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rankbridge.errors.InputError: Qrels.from_pandas: label_col='relevance' is not a column of the frame; ...
        """
        feature = "Qrels.from_pandas"
        no_labels = label_col is not None and label_col not in getattr(df, "columns", ())
        rows, cols = _frame_columns(
            df,
            {"query_col": query_col, "doc_col": doc_col, "label_col": label_col},
            feature,
            "label_col=None reads every row as relevant (label 1)" if no_labels else None,
        )
        labels = cols.get("label_col")
        data: dict[str, dict[str, int]] = {}
        first: dict[tuple[str, str], Any] = {}
        for i, row, q, d in _frame_rows(feature, rows, cols, query_col, doc_col):
            if labels is None:
                label = 1
            else:
                label = labels[i]
                if type(label) is not int:
                    label = _check_label(label, _cell(feature, row, label_col))
            docs = data.setdefault(q, {})
            old = docs.get(d)
            if old is None:
                docs[d] = label
                first[(q, d)] = row
            elif old != label:
                raise InputError(
                    f"{feature}: row {row!r}: doc {d!r} of query {q!r} is judged {label} here "
                    f"but {old} on row {first[(q, d)]!r}"
                )
        return cls._trusted(data, name=name)


_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)
_DOC_ID = operator.attrgetter("doc_id")
_SCORE = operator.attrgetter("score")


@final
@dataclass(slots=True, eq=False, repr=False)
class _Ranked(Sequence[Hit]):
    """One query's ranked hits kept as parallel columns: a :class:`Hit` is made only when one is read.

    What :meth:`Run.add` keeps for hits already checked (the plain forms -- doc ids, ``(doc_id, float)``
    pairs, clean Hits -- and the runner's normalised results): the metrics read ``ids`` directly, with no
    Python object per hit, and ``run[qid]`` / :meth:`Run.hits` build the Hits when a user reads them.

    Invariants, established by whoever builds one (:meth:`of_items` here, the fast paths of
    :func:`rankbridge.retriever.normalize_hits`): ``ids`` are str, ``scores`` (None: no hit has one)
    float or None and never NaN, ``texts`` str or None, ``metadata`` mappings or None. A doc id may
    still repeat: :meth:`Run.add` drops the repeats (:meth:`distinct`). ``given``: the Hit objects the
    columns came from, when they came from Hits (kept as they are, read back as they were given).
    """

    ids: Sequence[str]
    scores: Sequence[float | None] | None = None
    texts: Sequence[str | None] | None = None
    metadata: Sequence[Mapping[str, Any] | None] | None = None
    given: list[Hit] | None = None

    @classmethod
    def of_items(cls, items: Sequence[Any]) -> _Ranked | None:
        """``items`` when all are str ids, all ``(str, float)`` pairs or all clean Hits; else None.

        The checks of :meth:`Run.add` done by C-level passes (no loop per hit); None sends the list to
        its per-item loop, which converts what it can and names what it cannot.
        """
        kinds = set(map(type, items))
        if kinds == {str}:
            return cls(tuple(items))
        if kinds == {tuple}:
            if set(map(len, items)) != {2}:
                return None
            ids, scores = zip(*items, strict=True)
            if set(map(type, ids)) != {str} or set(map(type, scores)) != {float}:
                return None
        elif kinds == {Hit}:
            ids, scores = tuple(map(_DOC_ID, items)), tuple(map(_SCORE, items))
            if set(map(type, ids)) != {str} or not set(map(type, scores)) <= {float, type(None)}:
                return None
            return None if any(map(operator.ne, scores, scores)) else cls(ids, scores, given=list(items))
        else:
            return cls(()) if not items else None
        return None if any(map(operator.ne, scores, scores)) else cls(ids, scores)  # NaN: unequal to itself

    def distinct(self) -> tuple[_Ranked, int]:
        """This entry without repeated doc ids (the first kept), and how many were dropped."""
        ids = self.ids
        if len(set(ids)) == len(ids):
            return self, 0
        first: dict[str, int] = {}
        for i, d in enumerate(ids):
            first.setdefault(d, i)
        keep = list(first.values())

        def pick(column: Sequence[Any] | None) -> Any:
            return None if column is None else [column[i] for i in keep]

        out = _Ranked(pick(ids), pick(self.scores), pick(self.texts), pick(self.metadata), pick(self.given))
        return out, len(ids) - len(keep)

    def hits(self) -> list[Hit]:
        """The hits as :class:`Hit` objects (a new list each call)."""
        if self.given is not None:
            return list(self.given)
        none = repeat(None)
        if self.metadata is not None:
            return list(map(Hit, self.ids, self.scores or none, self.texts or none, self.metadata))
        if self.texts is not None:
            return list(map(Hit, self.ids, self.scores or none, self.texts))
        if self.scores is not None:
            return list(map(Hit, self.ids, self.scores))
        return list(map(Hit, self.ids))

    def head(self, depth: int) -> Sequence[Any]:
        """The first ``depth`` hits for the id check: doc ids when the hits carry no metadata, else Hits."""
        if self.given is None and self.metadata is None:
            return self.ids[:depth]
        return self.hits()[:depth]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: Any) -> Any:
        return self.hits()[index]

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits())

    def __repr__(self) -> str:
        return f"_Ranked({len(self.ids)} hits)"


def _plain_ranked(run: Mapping[str, Any], lists: list[Any]) -> tuple[dict[str, list[str]], dict[str, int]] | None:
    """``{qid: [doc ids]}`` of ranked lists whose items are all str, all ``(str, float)`` or all Hits.

    What :meth:`Run.add` would keep -- the doc ids in rank order, a repeated one dropped after its first
    rank -- and ``{qid: dropped count}``, computed with C-level ``map`` and ``set`` (no object per hit).
    None when an item needs :meth:`Run.add` (another type, an id to convert, a bad score): it then
    validates the run and names the bad item.
    """
    kinds = set(map(type, chain.from_iterable(lists)))
    if kinds == {tuple}:
        if set(map(len, chain.from_iterable(lists))) != {2}:
            return None
        ids = list(map(list, map(map, repeat(_FIRST), lists)))
        if set(map(type, chain.from_iterable(ids))) != {str}:
            return None
        # The scores only need to be numbers (the list order is the ranking): what float() reads, as
        # Run.add accepts; anything else, and NaN, goes to Run.add, which names the item.
        n = sum(map(len, ids))
        try:
            values = np.fromiter(chain.from_iterable(map(map, repeat(_SECOND), lists)), dtype=np.float64, count=n)
        except (TypeError, ValueError):
            return None
        if np.isnan(values).any():
            return None
        scores: list[Any] = []
    elif kinds == {Hit}:
        ids = list(map(list, map(map, repeat(_DOC_ID), lists)))
        scores = list(chain.from_iterable(map(map, repeat(_SCORE), lists)))
        if set(map(type, chain.from_iterable(ids))) != {str} or not set(map(type, scores)) <= {float, type(None)}:
            return None
    elif kinds <= {str}:
        ids, scores = lists, []
    else:
        return None
    if any(map(operator.ne, scores, scores)):  # NaN, the one float unequal to itself
        return None
    out = dict(zip(run, ids, strict=True))
    dropped: dict[str, int] = {}
    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
    distinct = np.fromiter(map(len, map(set, ids)), dtype=np.int64, count=len(ids))
    repeated = np.flatnonzero(lengths != distinct).tolist()
    if repeated:  # rare: copy those lists without their repeats
        qids = list(run)
        for i in repeated:
            out[qids[i]] = list(dict.fromkeys(ids[i]))
            dropped[qids[i]] = int(lengths[i] - distinct[i])
    return out, dropped


def _as_list(column: Any) -> list[Any]:
    """A column (list, tuple, numpy array, pandas Series, Arrow array) as a list of Python values."""
    if type(column) is list:
        return column
    for method in ("tolist", "to_pylist"):
        convert = getattr(column, method, None)
        if convert is not None:
            return list(convert())
    return list(column)


def _id_column(values: list[Any], what: str, column: str) -> list[str]:
    """``values`` as str ids (checked by one C-level pass when they already are)."""
    if set(map(type, values)) <= {str}:
        return values
    return [
        v if type(v) is str else _check_id(v, what, f"Run.from_columns: {column}[{i}]") for i, v in enumerate(values)
    ]


@dataclass(frozen=True, eq=False, repr=False)
class RunColumns:
    """A run stored as columns grouped by query (built by :meth:`Run.from_columns`).

    Attributes
    ----------
    query_ids:
        The distinct query ids, in the order they first appear in the rows.
    offsets:
        ``(len(query_ids) + 1,)`` int64: query ``i``'s rows are ``offsets[i]:offsets[i + 1]``.
    doc_ids:
        Doc ids (str), grouped by query; a ranked run's in rank order, a scored run's in row order.
    scores:
        float64 scores aligned with ``doc_ids`` (NaN: no score, in a ranked run only).
    ranked:
        True when the row order is the ranking; False when the scores rank (as trec_eval does).
    """

    query_ids: list[str]
    offsets: np.ndarray
    doc_ids: list[str]
    scores: np.ndarray
    ranked: bool
    index: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.query_ids)

    @classmethod
    def build(
        cls,
        query_ids: Sequence[Any],
        doc_ids: Sequence[Any],
        scores: Sequence[Any] | None,
        ranks: Sequence[Any] | None,
        duplicates: str,
    ) -> tuple[RunColumns, dict[str, int]]:
        """Validate and group the columns; also ``{qid: dropped repeats}`` (``duplicates="first"``)."""
        feature = "Run.from_columns"
        if duplicates not in ("error", "first"):
            raise ValueError(f"duplicates must be 'error' or 'first'. Got {duplicates!r} instead.")
        if scores is None and ranks is None:
            raise InputError(f"{feature}: give scores (a scored run) or ranks (a ranked run); both are None")
        qs = _id_column(_as_list(query_ids), "query id", "query_ids")
        docs = _id_column(_as_list(doc_ids), "doc id", "doc_ids")
        n = len(docs)
        lengths = {"query_ids": len(qs), "doc_ids": n}
        if scores is not None:
            lengths["scores"] = len(scores)
        if ranks is not None:
            lengths["ranks"] = len(ranks)
        if len(set(lengths.values())) > 1:
            raise InputError(
                f"{feature}: the columns differ in length: " + ", ".join(f"{k} {v}" for k, v in lengths.items())
            )
        if scores is None:
            values = np.full(n, np.nan)
        else:
            try:
                values = np.asarray(
                    _as_list(scores) if not isinstance(scores, np.ndarray) else scores, dtype=np.float64
                )
            except (TypeError, ValueError):
                for i, s in enumerate(_as_list(scores)):
                    if not (ranks is not None and _missing(s)):
                        _check_score(s, f"{feature}: scores[{i}]")
                raise
            if values.shape != (n,):
                raise InputError(f"{feature}: scores must be one-dimensional, found shape {values.shape}")
            if ranks is None and np.isnan(values).any():
                i = int(np.flatnonzero(np.isnan(values))[0])
                raise InputError(
                    f"{feature}: scores[{i}] (query {qs[i]!r}, doc {docs[i]!r}): expected a numeric score, found NaN"
                )
        index = dict(zip(dict.fromkeys(qs), range(n), strict=False))
        codes = np.fromiter(map(index.__getitem__, qs), dtype=np.int64, count=n)
        order: Any = None
        if ranks is not None:
            raw = _as_list(ranks)
            if not set(map(type, raw)) <= {int}:
                raw = [r if type(r) is int else _check_label(r, f"{feature}: ranks[{i}]") for i, r in enumerate(raw)]
            rank = np.asarray(raw, dtype=np.int64)
            order = np.lexsort((rank, codes))
        elif n > 1 and np.any(codes[1:] < codes[:-1]):
            order = np.argsort(codes, kind="stable")  # group by query, rows of a query in row order
        if order is not None:
            codes, values = codes[order], values[order]
            docs = list(map(docs.__getitem__, order.tolist()))
        if ranks is not None:
            rank = rank[order]
            same = np.flatnonzero((codes[1:] == codes[:-1]) & (rank[1:] == rank[:-1]))
            if len(same):
                i = int(same[0])
                qid = list(index)[codes[i]]
                raise InputError(f"{feature}: query {qid!r} has rank {rank[i]} twice; ranks must differ within a query")
        offsets = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(np.bincount(codes, minlength=len(index)), out=offsets[1:])
        bounds = offsets.tolist()
        segments = list(map(slice, bounds[:-1], bounds[1:]))
        distinct = np.fromiter(map(len, map(set, map(docs.__getitem__, segments))), dtype=np.int64, count=len(index))
        dropped: dict[str, int] = {}
        repeated = np.flatnonzero(distinct != np.diff(offsets))
        if len(repeated):
            qids = list(index)
            if duplicates == "error":
                i = int(repeated[0])
                row = docs[segments[i]]
                doc = next(d for j, d in enumerate(row) if d in row[:j])
                raise InputError(
                    f"{feature}: doc {doc!r} appears twice for query {qids[i]!r}; "
                    "pass duplicates='first' to keep the first"
                )
            keep = np.ones(n, dtype=bool)
            for i in repeated.tolist():
                seen: set[str] = set()
                for j in range(bounds[i], bounds[i + 1]):
                    if docs[j] in seen:
                        keep[j] = False
                    seen.add(docs[j])
                dropped[qids[i]] = int(np.diff(offsets)[i] - distinct[i])
            docs = list(compress(docs, keep.tolist()))
            values = values[keep]
            np.cumsum(distinct, out=offsets[1:])
        return cls(list(index), offsets, docs, values, ranks is not None, index), dropped

    def _scores(self, lo: int, hi: int) -> list[float | None]:
        """Rows ``lo:hi``'s scores as Python floats (in a ranked run NaN means no score: None)."""
        scores: list[Any] = self.scores[lo:hi].tolist()
        if self.ranked and np.isnan(self.scores[lo:hi]).any():
            scores = [None if s != s else s for s in scores]
        return scores

    def _entry(self, docs: list[str], scores: list[Any]) -> dict[str, float] | _Ranked:
        return _Ranked(docs, scores) if self.ranked else dict(zip(docs, scores, strict=True))

    def query_dict(self, qid: str) -> dict[str, float] | list[Hit]:
        """One query's result as the mapping view holds it (KeyError for an unknown query)."""
        i = self.index[qid]
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        entry = self._entry(self.doc_ids[lo:hi], self._scores(lo, hi))
        return entry.hits() if type(entry) is _Ranked else entry

    def entries(self) -> dict[str, dict[str, float] | list[Hit] | _Ranked]:
        """What a :class:`Run` holds per query: ``{doc: score}`` (scored) or compact hits (ranked: no Hit made)."""
        bounds = self.offsets.tolist()
        scores = self._scores(0, len(self.doc_ids))
        return {
            qid: self._entry(self.doc_ids[lo:hi], scores[lo:hi])
            for qid, lo, hi in zip(self.query_ids, bounds[:-1], bounds[1:], strict=True)
        }

    def to_dict(self) -> dict[str, dict[str, float] | list[Hit]]:
        """The mapping view: ``{qid: {doc: score}}`` (scored) or ``{qid: [Hit, ...]}`` (ranked)."""
        return {q: v.hits() if type(v) is _Ranked else v for q, v in self.entries().items()}


class Run(Mapping[str, "Mapping[str, float] | Sequence[Hit]"]):
    """Retrieval results for a set of queries.

    Build one with :meth:`from_scores` (``{qid: {doc: score}}``, ranked like trec_eval),
    :meth:`from_ranked` (``{qid: [hits in rank order]}``, as a retriever returned them), or a reader in
    :mod:`rankbridge.io`.

    Attributes
    ----------
    name:
        The run's name (a TREC run tag, a strategy name).
    errors:
        ``{qid: message}`` for queries whose retrieval failed. A failed query stays in the evaluation and
        scores 0, so failures are never hidden by averaging.
    latency:
        ``{qid: seconds}`` spent retrieving each query, when known.
    duplicates:
        ``{qid: count}`` of repeated doc ids that were dropped (first occurrence kept).
    config:
        Free-form settings that produced the run (retriever, k, model...), saved with history.
    stages:
        ``{stage name: Run}``: other lists recorded in the same pass, e.g. ``"retrieved"`` -- what the
        retriever returned before a query engine's node postprocessors or a reranker produced this run's
        (final) lists. Read one with :meth:`to_stage`.
    answers:
        ``{qid: answer text}`` when the run came from an application that answers (a query or chat
        engine, a chain, an agent run by :func:`~rankbridge.run_retriever`): the RAGAS bridge uses them.

    Examples
    --------
    >>> run = Run.from_ranked({"q1": ["d3", "d1", "d3"]}, name="bm25")
    >>> [h.doc_id for h in run.hits("q1")]
    ['d3', 'd1']
    >>> run.duplicates
    {'q1': 1}
    >>> Run.from_scores({"q1": {"a": 1.0, "b": 2.0}}).ranking("q1")
    ['b', 'a']
    """

    def __init__(
        self,
        *,
        name: str = "run",
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.config: dict[str, Any] = dict(config or {})
        #: ``{qid: {doc: score} | [Hit, ...] | _Ranked}``: what each query holds, hits not read yet kept compact
        self._dict: dict[str, dict[str, float] | list[Hit] | _Ranked] = {}
        #: queries that may hold a :class:`_Ranked` (a superset: one read since is skipped)
        self._pending: set[str] = set()
        self._columns: RunColumns | None = None
        self.errors: dict[str, str] = {}
        self.latency: dict[str, float] = {}
        self.duplicates: dict[str, int] = {}
        self.stages: dict[str, Run] = {}
        self.answers: dict[str, str] = {}
        self._cache: dict[Any, Any] = {}

    @property
    def _entries(self) -> dict[str, dict[str, float] | list[Hit] | _Ranked]:
        """What each query holds, compact hits kept compact; a run built from columns is turned into it on first use."""
        if self._columns is not None:
            self._dict = self._columns.entries()
            self._pending = set(self._dict) if self._columns.ranked else set()
            self._columns = None
        return self._dict

    @property
    def _data(self) -> dict[str, dict[str, float] | list[Hit]]:
        """The mapping view ``{qid: {doc: score} | [Hit, ...]}``: compact hits are made into Hits (in place)."""
        entries = self._entries
        if self._pending:
            for qid in self._pending:
                value = entries.get(qid)
                if type(value) is _Ranked:
                    entries[qid] = value.hits()
            self._pending = set()
        return entries  # type: ignore[return-value]  # no _Ranked left

    @_data.setter
    def _data(self, value: dict[str, dict[str, float] | list[Hit]]) -> None:
        self._dict = value  # type: ignore[assignment]
        self._pending = set(value)  # whatever it holds: checked on the next read
        self._columns = None

    def _metric_view(self) -> dict[str, Any]:
        """``{qid: {doc: score} | [Hit, ...] | doc ids}`` for the metrics: a compact query gives its ids (no Hit made).

        The ids of a ranked query are distinct str in rank order, as :func:`rankbridge.metrics.build_table`
        expects of a checked run.
        """
        entries = self._entries
        if not self._pending:
            return entries  # no _Ranked in it
        return {q: v.ids if type(v) is _Ranked else v for q, v in entries.items()}

    @property
    def columns(self) -> RunColumns | None:
        """The run's columns when it was built by :meth:`from_columns` and not changed since (else None).

        The metrics read them directly (no Python object per hit); the mapping view (``run[qid]``,
        :meth:`hits`, :meth:`add`...) turns them into dicts and :class:`Hit` lists on first use.
        """
        return self._columns

    @classmethod
    def from_columns(
        cls,
        query_ids: Sequence[Any],
        doc_ids: Sequence[Any],
        scores: Sequence[Any] | None = None,
        *,
        ranks: Sequence[Any] | None = None,
        name: str = "run",
        duplicates: str = "error",
    ) -> Run:
        """A run from parallel columns, one row per hit, stored as columns (no Python object per hit).

        Parameters
        ----------
        query_ids, doc_ids:
            Per row, the query id and the doc id (str, or int / numpy values, kept as str). Rows may come
            in any order; a query's rows need not be contiguous.
        scores:
            Per row, the score (anything ``float()`` reads; NaN is refused). Without ``ranks`` the run is
            *scored*: ranked by score descending, ties by doc id descending, as trec_eval does.
        ranks:
            Per row, an integer rank (1 = best): the run is *ranked* in this order (as a retriever
            returned it); ``scores``, if given, are kept on the hits (NaN there means no score).
        name:
            The run's name.
        duplicates:
            ``"error"`` (a doc given twice for one query is an error naming it) or ``"first"`` (keep the
            first row, in rank order for a ranked run and in row order for a scored one, and count the
            others in :attr:`duplicates`).

        Raises
        ------
        InputError
            Columns of different lengths, a bad id, score or rank (naming the row), two rows with the
            same rank in one query, or a duplicate doc with ``duplicates="error"``.

        Examples
        --------
        >>> run = Run.from_columns(["q1", "q1", "q2"], ["a", "b", "a"], [0.2, 0.9, 1.0], name="bm25")
        >>> run.columns.offsets.tolist(), run.ranking("q1")
        ([0, 2, 3], ['b', 'a'])
        >>> Run.from_columns(["q1", "q1"], ["a", "b"], ranks=[2, 1]).ranking("q1")
        ['b', 'a']
        """
        run = cls(name=name)
        cols, dropped = RunColumns.build(query_ids, doc_ids, scores, ranks, duplicates)
        run._columns = cols
        run.duplicates.update(dropped)
        return run

    def _id_sample(self, limit: int, depth: int) -> Mapping[str, Any]:
        """The first queries' results, ``depth`` hits each and about ``limit`` hits in all (the id check's sample).

        A run built from columns gives doc id lists without turning itself into dicts, compact hits give
        their ids (or Hits, when they carry metadata the check may read ids from).
        """
        cols = self._columns
        if cols is None and not self._pending:
            return self._dict
        out: dict[str, Any] = {}
        total = 0
        if cols is None:
            for qid, value in self._dict.items():
                out[qid] = value.head(depth) if type(value) is _Ranked else value
                total += min(len(value), depth)
                if total >= limit:
                    break
            return out
        for i, qid in enumerate(cols.query_ids):
            lo, hi = int(cols.offsets[i]), int(cols.offsets[i + 1])
            out[qid] = cols.doc_ids[lo : min(hi, lo + depth)]
            total += len(out[qid])
            if total >= limit:
                break
        return out

    #: config keys that the runner's bookkeeping sets per run: merged by :meth:`merge` as stated there
    _MERGED_CONFIG = ("failures", "problems", "resumed", "unfinished", "interrupted", "aborted")

    @classmethod
    def merge(cls, parts: Iterable[Run], *, name: str | None = None) -> Run:
        """One run from runs of disjoint blocks of queries (e.g. blocks retrieved on several workers).

        Results, errors, latencies, duplicates, answers and stages are joined in the parts' order. The
        parts' configs must agree except for the runner's bookkeeping: ``failures`` (counts added),
        ``problems`` (joined), ``resumed`` and ``unfinished`` (added), ``interrupted`` (any), ``aborted``
        (the first).

        Raises
        ------
        InputError
            A query is in two parts, or the parts differ in name (unless ``name`` is given) or config.

        Examples
        --------
        >>> a = Run.from_ranked({"q1": ["d1", "d2"]}, name="bm25")
        >>> b = Run.from_ranked({"q2": ["d3"]}, name="bm25")
        >>> Run.merge([a, b]).ranking("q2")
        ['d3']
        >>> Run.merge([a, a])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rankbridge.errors.InputError: Run.merge: query 'q1' is in parts[0] and parts[1]; ...
        """
        parts = list(parts)
        if not parts:
            raise InputError("Run.merge: no runs to merge")
        for i, part in enumerate(parts):
            if not isinstance(part, Run):
                raise InputError(f"Run.merge: parts[{i}] is a {type(part).__name__}, not a Run")
        first = parts[0]
        owner: dict[str, int] = {}
        for i, part in enumerate(parts):
            if name is None and part.name != first.name:
                raise InputError(
                    f"Run.merge: parts[{i}] is named {part.name!r}, parts[0] {first.name!r} (name= names the merge)"
                )
            for key in set(part.config) | set(first.config):
                if key not in cls._MERGED_CONFIG and part.config.get(key) != first.config.get(key):
                    raise InputError(
                        f"Run.merge: parts[{i}] differs from parts[0] in config[{key!r}]: "
                        f"{_short(part.config.get(key))} != {_short(first.config.get(key))}"
                    )
            for qid in part.query_ids():
                j = owner.setdefault(qid, i)
                if j != i:
                    raise InputError(
                        f"Run.merge: query {qid!r} is in parts[{j}] and parts[{i}]; the blocks must be disjoint"
                    )
        out = cls(name=first.name if name is None else name, config=first.config)
        failures: dict[str, int] = {}
        for part in parts:
            out._dict.update(part._entries)
            out._pending |= part._pending
            out.errors.update(part.errors)
            out.latency.update(part.latency)
            out.duplicates.update(part.duplicates)
            out.answers.update(part.answers)
            for kind, n in (part.config.get("failures") or {}).items():
                failures[kind] = failures.get(kind, 0) + n
        present = [key for key in cls._MERGED_CONFIG if any(key in p.config for p in parts)]
        for key in present:
            values = [p.config[key] for p in parts if key in p.config]
            if key == "failures":
                out.config[key] = failures
            elif key == "problems":
                out.config[key] = {q: notes for v in values for q, notes in v.items()}
            elif key in ("resumed", "unfinished"):
                out.config[key] = sum(values)
            elif key == "interrupted":
                out.config[key] = any(values)
            else:
                out.config[key] = values[0]
        for stage in dict.fromkeys(s for p in parts for s in p.stages):
            out.stages[stage] = cls.merge([p.stages[stage] for p in parts if stage in p.stages])
        return out

    def to_stage(self, stage: str) -> Run:
        """The run of one recorded stage: ``"final"`` is this run, other names are in :attr:`stages`.

        Examples
        --------
        >>> run = Run.from_ranked({"q1": ["d2", "d1"]}, name="engine")
        >>> run.stages["retrieved"] = Run.from_ranked({"q1": ["d1", "d2", "d3"]}, name="engine:retrieved")
        >>> run.to_stage("retrieved").ranking("q1"), run.to_stage("final") is run
        (['d1', 'd2', 'd3'], True)
        >>> run.to_stage("reranked")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rankbridge.errors.InputError: run 'engine' has no stage 'reranked'; it has: 'final', 'retrieved'
        """
        if stage == "final":
            return self
        found = self.stages.get(stage)
        if found is None:
            have = ", ".join(repr(s) for s in ["final", *self.stages])
            raise InputError(f"run {self.name!r} has no stage {stage!r}; it has: {have}")
        return found

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_scores(cls, data: Mapping[Any, Mapping[Any, Any]], *, name: str = "run", copy: bool = True) -> Run:
        """A scored run from ``{qid: {doc_id: score}}``; ties ranked by doc id descending (trec_eval).

        With ``copy=False`` the inner dicts are used as given (already validated by a reader).
        """
        run = cls(name=name)
        for qid, docs in data.items():
            q = qid if type(qid) is str else _check_id(qid, "query id", f"run[{qid!r}]")
            if not isinstance(docs, Mapping):
                raise InputError(f"run[{qid!r}]: expected a mapping of doc id -> score, found {type(docs).__name__}")
            if q in run._data:
                raise InputError(f"run[{qid!r}]: query id {q!r} appears twice (as different types of key)")
            if copy:
                clean: dict[str, float] = {}
                for doc, score in docs.items():
                    if type(doc) is str and type(score) is float and score == score:  # the common case, no call
                        clean[doc] = score
                        continue
                    where = f"run[{qid!r}][{doc!r}]"
                    clean[_check_id(doc, "doc id", where)] = _check_score(score, where)
                if len(clean) != len(docs):
                    raise InputError(f"run[{qid!r}]: two doc ids are the same after conversion to str (e.g. 1 and '1')")
                run._data[q] = clean
            else:
                run._data[q] = docs  # type: ignore[assignment]
        return run

    @classmethod
    def from_ranked(
        cls,
        data: Mapping[Any, Iterable[Hit | str | tuple[str, float]]],
        *,
        name: str = "run",
    ) -> Run:
        """A ranked run from ``{qid: [hit, ...]}`` in rank order (best first).

        Items may be :class:`Hit`, plain doc ids, or ``(doc_id, score)`` pairs.
        """
        run = cls(name=name)
        for qid, hits in data.items():
            run.add(qid, hits)
        return run

    def add(self, qid: Any, hits: Iterable[Hit | str | tuple[str, float]], *, latency: float | None = None) -> None:
        """Set the ranked hits of one query (rank order, best first); duplicates keep the first."""
        q = qid if type(qid) is str else _check_id(qid, "query id", f"run[{qid!r}]")
        # Plain forms and the runner's normalised hits are kept compact (no Hit built until read); a
        # _Ranked comes checked from where it was made (Run's checks done once, there).
        entry: _Ranked | None
        if type(hits) is _Ranked:
            entry = hits
        else:
            if isinstance(hits, (Mapping, str, bytes)):
                kind = "a mapping of doc -> score" if isinstance(hits, Mapping) else "a string"
                raise InputError(
                    f"run[{qid!r}]: expected hits in rank order (a list), found {kind}; "
                    "use Run.from_scores for {doc: score} results"
                )
            entry = _Ranked.of_items(hits) if type(hits) is list else None
        value: list[Hit] | _Ranked
        if entry is not None:
            value, dropped = entry.distinct()
        else:
            value, dropped = self._checked_hits(qid, hits)
        entries = self._entries
        entries[q] = value
        if entry is not None:
            self._pending.add(q)
        if dropped:
            self.duplicates[q] = dropped
        else:
            self.duplicates.pop(q, None)
        if latency is not None:
            self.latency[q] = float(latency)
        self._cache.clear()

    @staticmethod
    def _checked_hits(qid: Any, hits: Iterable[Any]) -> tuple[list[Hit], int]:
        """Each item made a clean Hit (converted, or refused naming it), repeats dropped; (hits, dropped)."""
        seen: set[str] = set()
        out: list[Hit] = []
        dropped = 0
        for i, item in enumerate(hits):
            where = f"run[{qid!r}][{i}]"
            if isinstance(item, Hit):
                hit = item
                if type(hit.doc_id) is not str:
                    hit = Hit(_check_id(hit.doc_id, "doc id", where), hit.score, hit.text, hit.metadata)
                score = hit.score
                if score is not None and (type(score) is not float or score != score):
                    # the common case (a finite float) skips the call; numpy scores become float
                    hit = Hit(hit.doc_id, _check_score(score, where), hit.text, hit.metadata)
            elif type(item) is str:
                hit = Hit(item)
            elif isinstance(item, tuple) and len(item) == 2:
                hit = Hit(_check_id(item[0], "doc id", where), _check_score(item[1], where))
            else:
                try:
                    hit = Hit(_check_id(item, "doc id", where))
                except InputError:
                    raise InputError(
                        f"{where}: expected a Hit, a doc id or a (doc_id, score) pair, found {_describe(item)}"
                    ) from None
            if hit.doc_id in seen:
                dropped += 1
                continue
            seen.add(hit.doc_id)
            out.append(hit)
        return out, dropped

    def add_error(self, qid: Any, message: str, *, latency: float | None = None) -> None:
        """Record that retrieval failed for ``qid``; it is evaluated as an empty result."""
        q = _check_id(qid, "query id", f"run[{qid!r}]")
        self.errors[q] = message
        self._entries.pop(q, None)
        if latency is not None:
            self.latency[q] = float(latency)
        self._cache.clear()

    # -- access ---------------------------------------------------------------------------------
    def __getitem__(self, qid: str) -> Mapping[str, float] | Sequence[Hit]:
        entries = self._entries
        value = entries[qid]
        if type(value) is _Ranked:  # read: its Hits replace it (the same list on every read, as stored)
            value = entries[qid] = value.hits()
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns.query_ids if self._columns is not None else self._dict)

    def __len__(self) -> int:
        return len(self._columns.query_ids if self._columns is not None else self._dict)

    def __contains__(self, qid: object) -> bool:
        return qid in (self._columns.index if self._columns is not None else self._dict)

    def __repr__(self) -> str:
        cols = self._columns
        hits = len(cols.doc_ids) if cols is not None else sum(len(v) for v in self._dict.values())
        stages = f", stages={_short(list(self.stages))}" if self.stages else ""
        return f"Run(name={_short(self.name)}, queries={len(self)}, hits={hits}, errors={len(self.errors)}{stages})"

    def is_scored(self, qid: str) -> bool:
        """True when ``qid`` holds a ``{doc: score}`` mapping (ranked by score), False for a hit list."""
        cols = self._columns
        if cols is not None:
            cols.index[qid]  # a KeyError for an unknown query, as the mapping view gives
            return not cols.ranked
        return isinstance(self._dict[qid], dict)

    def hits(self, qid: str) -> list[Hit]:
        """The hits of ``qid`` in rank order (a scored query is sorted like trec_eval)."""
        cols = self._columns
        value = cols.query_dict(qid) if cols is not None else self._dict[qid]
        if isinstance(value, dict):
            order = sorted(value.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            return [Hit(doc, score) for doc, score in order]
        return value.hits() if type(value) is _Ranked else list(value)

    def ranking(self, qid: str) -> list[str]:
        """The doc ids of ``qid`` in rank order."""
        value = self._dict.get(qid) if self._columns is None else None
        if type(value) is _Ranked:
            return list(value.ids)
        return [h.doc_id for h in self.hits(qid)]

    def query_ids(self) -> list[str]:
        """Every query the run knows about: with results or with an error."""
        return list(self) + [q for q in self.errors if q not in self]

    def to_scores(self) -> dict[str, dict[str, float]]:
        """``{qid: {doc: score}}`` whose trec_eval ordering equals this run's ranking.

        A ranked query's scores are kept when they strictly decrease down the list; otherwise (no
        scores, ties, a reranker's reordering) they are replaced by ``n - rank + 1`` so that the rank
        order survives a round trip through a TREC file.
        """
        out: dict[str, dict[str, float]] = {}
        for qid, value in self._entries.items():
            if isinstance(value, dict):
                out[qid] = dict(value)
                continue
            if type(value) is _Ranked:
                ids, scores = value.ids, value.scores or [None] * len(value)
            else:
                ids, scores = [h.doc_id for h in value], [h.score for h in value]
            decreasing = all(s is not None for s in scores) and all(
                a > b  # type: ignore[operator]
                for a, b in pairwise(scores)
            )
            n = len(ids)
            if decreasing:
                out[qid] = dict(zip(ids, map(float, scores), strict=True))  # type: ignore[arg-type]
            else:
                out[qid] = {d: float(n - i) for i, d in enumerate(ids)}
        return out

    # -- data frames ----------------------------------------------------------------------------
    def to_pandas(self) -> Any:
        """A long DataFrame, one row per hit in rank order: ``query_id``, ``rank``, ``doc_id``, ``score``.

        ``rank`` starts at 1; a missing score is NaN. A ``text`` column is added when any hit has a text.
        Errors, latencies and hit metadata stay on the run (a failed query has no rows). Needs pandas
        (imported here only).

        The frame reads back as this run: :meth:`from_pandas`, :func:`rankbridge.io.run_from_table` and
        :func:`rankbridge.evaluate` give the same rankings and scores (NaN for a missing one). A table's
        order is normally its scores' (trec_eval's convention), and a ranked run's scores need not
        agree with its order (a reranker that kept the first stage's scores), so the frame of a run
        with ranked queries is marked in ``df.attrs["rankbridge"]`` (``{"order": "rank", ...}``, with a
        digest of the ``rank`` and ``score`` columns): the readers rank a marked frame by ``rank``
        while those two columns are unchanged. pandas keeps the mark through copies, slices and
        ``df.to_parquet`` (pandas >= 2.1; :func:`rankbridge.io.write_run_parquet` writes it on any
        pandas, and :func:`rankbridge.io.read_run_parquet` reads it); ``pa.Table.from_pandas``
        and polars drop it, and a frame re-scored, filtered or re-sorted loses it: such a table is
        ranked by score again, and a :class:`~rankbridge.errors.RankColumnWarning` says when its
        ``rank`` column orders some queries otherwise (pass ``rank_col="rank"`` to rank by it).

        Examples
        --------
        >>> Run.from_ranked({"q1": [Hit("d3", 0.5), Hit("d1", 0.9)]}).to_pandas()
          query_id  rank doc_id  score
        0       q1     1     d3    0.5
        1       q1     2     d1    0.9
        """
        pd = _import_pandas("Run.to_pandas()")

        qids: list[str] = []
        ranks: list[int] = []
        docs: list[str] = []
        scores: list[float] = []
        texts: list[str | None] = []
        nan = float("nan")
        for qid in self._entries:
            for rank, h in enumerate(self.hits(qid), 1):
                qids.append(qid)
                ranks.append(rank)
                docs.append(h.doc_id)
                scores.append(nan if h.score is None else h.score)
                texts.append(h.text)
        columns: dict[str, Any] = {
            "query_id": qids,
            "rank": np.asarray(ranks, dtype=np.int64),
            "doc_id": docs,
            "score": np.asarray(scores, dtype=np.float64),
        }
        if any(t is not None for t in texts):
            columns["text"] = pd.Series(texts, dtype=object)
        frame = pd.DataFrame(columns)
        if not all(isinstance(value, dict) for value in self._entries.values()):  # a scored run is in its scores' order
            frame.attrs[ORDER_MARK] = {"order": "rank", "check": _order_check(columns["rank"], columns["score"])}
        return frame

    @classmethod
    def from_ranx(cls, run: Any, *, name: str | None = None) -> Run:
        """A scored run from a ``ranx.Run`` (or its ``to_dict()``) (:func:`rankbridge.io.run_from_ranx`)."""
        from rankbridge.io.ranx import run_from_ranx  # lazy: reader hook (io is above types)

        return run_from_ranx(run, name=name)

    def to_ranx(self) -> Any:
        """A ``ranx.Run`` of this run (failed queries are left out: ranx has no place for them)."""
        from rankbridge.io.ranx import to_ranx  # lazy: reader hook (io is above types)

        return to_ranx(self)

    @classmethod
    def from_pandas(
        cls,
        df: Any,
        *,
        query_col: str = "query_id",
        doc_col: str = "doc_id",
        score_col: str | None = "score",
        rank_col: str | None = None,
        text_col: str | None = None,
        name: str = "run",
        duplicates: str = "error",
    ) -> Run:
        """A run from a long DataFrame, one row per hit.

        Parameters
        ----------
        df:
            A pandas DataFrame, rows in any order.
        query_col, doc_col:
            The columns of query ids and doc ids (str, int or numpy values).
        score_col:
            The column of scores. Without ``rank_col`` the run is *scored*: ranked by score descending,
            ties by doc id descending, as trec_eval does. With ``rank_col`` the scores are kept on the
            hits (a missing score is NaN or None) and the default ``"score"`` may be absent.
        rank_col:
            The column of integer ranks (1 = best): the run is *ranked* in this order, as a retriever
            returned it. Without it a ``rank`` column is read only by :meth:`to_pandas`' mark (its
            frame reads back as the run, see there); otherwise, when it orders some query otherwise
            than the scores do, a :class:`~rankbridge.errors.RankColumnWarning` names how many and the
            first (pass ``rank_col="rank"`` to rank by it).
        text_col:
            The column of hit texts (kept on the hits; a run with texts is a ranked run, in rank order or
            else in trec_eval's score order).
        name:
            The run's name.
        duplicates:
            ``"error"`` (a (query, doc) pair on two rows is an error naming both) or ``"first"`` (keep
            the first row and count the others in :attr:`duplicates`).

        Raises
        ------
        InputError
            A missing column (the message lists the frame's columns), a bad id, score or rank (naming the
            row and column), a rank given twice for one query, or a duplicate pair.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"], "score": [0.2, 0.9, 1.0]})
        >>> Run.from_pandas(df).ranking("q1")
        ['b', 'a']
        >>> df["rank"] = [1, 2, 1]
        >>> Run.from_pandas(df, rank_col="rank").ranking("q1")
        ['a', 'b']
        >>> Run.from_pandas(df, score_col="similarity")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rankbridge.errors.InputError: Run.from_pandas: score_col='similarity' is not a column of the frame; ...
        """
        feature = "Run.from_pandas"
        if duplicates not in ("error", "first"):
            raise ValueError(f"duplicates must be 'error' or 'first'. Got {duplicates!r} instead.")
        have = getattr(df, "columns", ())
        mark = getattr(df, "attrs", None)
        mark = mark.get(ORDER_MARK) if isinstance(mark, dict) else None
        may_be_marked = mark is not None and rank_col is None and score_col == "score" and "rank" in have
        if may_be_marked and "score" in have and _marked_by_rank(mark, df["rank"], df["score"]):
            rank_col = "rank"  # Run.to_pandas()' frame, unchanged: its order is its rank column
        wanted: dict[str, str | None] = {"query_col": query_col, "doc_col": doc_col, "rank_col": rank_col}
        wanted["text_col"] = text_col
        # with ranks, the default score column is optional
        optional_score = rank_col is not None and score_col == "score"
        if score_col is not None and not (optional_score and score_col not in getattr(df, "columns", ())):
            wanted["score_col"] = score_col
        if rank_col is None and score_col is None:
            raise InputError(f"{feature}: give score_col (a scored run) or rank_col (a ranked run); both are None")
        ranks_unused = rank_col is None and "rank" in getattr(df, "columns", ())
        hint = "pass rank_col='rank' to rank by the 'rank' column" if ranks_unused else None
        rows, cols = _frame_columns(df, wanted, feature, hint)
        scores, ranks, texts = cols.get("score_col"), cols.get("rank_col"), cols.get("text_col")
        run = cls(name=name)
        seen: dict[tuple[str, str], Any] = {}
        dropped: dict[str, int] = {}
        scored: dict[str, dict[str, float]] = {}
        ranked: dict[str, list[tuple[Any, Any, Hit]]] = {}
        for i, row, q, d in _frame_rows(feature, rows, cols, query_col, doc_col):
            key = (q, d)
            if key in seen:
                if duplicates == "error":
                    raise InputError(
                        f"{feature}: row {row!r}: doc {d!r} appears twice for query {q!r} (first on row "
                        f"{seen[key]!r}); pass duplicates='first' to keep the first row"
                    )
                dropped[q] = dropped.get(q, 0) + 1
                continue
            seen[key] = row
            score: float | None = None
            if scores is not None:
                raw = scores[i]
                if type(raw) is float and raw == raw:
                    score = raw
                elif ranks is not None and _missing(raw):
                    score = None
                else:
                    score = _check_score(raw, _cell(feature, row, score_col))
            if ranks is None and texts is None:
                scored.setdefault(q, {})[d] = score  # type: ignore[assignment]
                continue
            text = None
            if texts is not None:
                raw_text = texts[i]
                if not _missing(raw_text):
                    if not isinstance(raw_text, str):
                        raise InputError(
                            f"{_cell(feature, row, text_col)}: expected a text (str), found {_describe(raw_text)}"
                        )
                    text = str.__str__(raw_text)
            if ranks is not None:
                rank = _check_label(ranks[i], _cell(feature, row, rank_col)) if type(ranks[i]) is not int else ranks[i]
                order: Any = (rank,)
            else:
                order = (score, d)  # sorted descending below, as trec_eval ranks
            ranked.setdefault(q, []).append((order, row, Hit(d, score, text)))
        if scored:
            run._data.update(scored)
        for q, items in ranked.items():
            items.sort(key=lambda t: t[0], reverse=ranks is None)
            if ranks is not None:
                for (a, row_a, _), (b, row_b, _) in pairwise(items):
                    if a == b:
                        raise InputError(
                            f"{feature}: query {q!r} has rank {a[0]} on rows {row_a!r} and {row_b!r}; "
                            "ranks must differ within a query"
                        )
            run.add(q, [h for _, _, h in items])
        for q, n in dropped.items():
            run.duplicates[q] = run.duplicates.get(q, 0) + n
        if ranks is None and scores is not None and "rank" in have:
            _frame_rank_check(df, feature, query_col, doc_col, scores)
        return run


@dataclass(frozen=True, slots=True, repr=False)
class Query:
    """One golden-set question.

    ``id`` and ``reference_context_ids`` may be given as int or numpy values; they are kept as str.
    The repr is one short line (long texts are cut), so a list of queries prints readably.

    Examples
    --------
    >>> Query("q1", "what causes scurvy?", category="medical").category
    'medical'
    >>> import numpy as np
    >>> Query(np.int64(7), "scurvy?", reference_context_ids=[np.str_("d1")])
    Query(id='7', text='scurvy?', reference_context_ids=('d1',))
    """

    id: str
    text: str
    category: str | None = None
    reference: str | None = None
    reference_context_ids: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if type(self.id) is not str:
            object.__setattr__(self, "id", _check_id(self.id, "query id", f"Query(id={self.id!r})"))
        ids = self.reference_context_ids
        if type(ids) is not tuple or not all(type(c) is str for c in ids):
            if isinstance(ids, (str, bytes, Mapping)) or not isinstance(ids, Iterable):
                raise InputError(
                    f"Query {self.id!r}: reference_context_ids must be a list of doc ids, found {type(ids).__name__}"
                )
            where = f"Query {self.id!r}: reference_context_ids"
            clean = tuple(_check_id(c, "doc id", f"{where}[{i}]") for i, c in enumerate(ids))
            object.__setattr__(self, "reference_context_ids", clean)

    def __repr__(self) -> str:
        parts = [f"id={_short(self.id)}", f"text={_short(self.text)}"]
        if self.category is not None:
            parts.append(f"category={_short(self.category)}")
        if self.reference is not None:
            parts.append(f"reference={_short(self.reference, 40)}")
        if self.reference_context_ids:
            parts.append(f"reference_context_ids={_short(self.reference_context_ids, 40)}")
        if self.metadata:
            parts.append(f"metadata={_short(self.metadata, 40)}")
        return f"Query({', '.join(parts)})"


@dataclass(repr=False)
class GoldenSet:
    """Queries with their judgments (and, optionally, categories and reference answers).

    Its repr gives counts and names only (never the queries or the corpus).

    Examples
    --------
    >>> g = GoldenSet([Query("q1", "scurvy cause", category="medical")], Qrels({"q1": {"d1": 1}}))
    >>> g.texts()
    {'q1': 'scurvy cause'}
    >>> g
    GoldenSet(name='golden', queries=1, judged=1, judgments=1, corpus=None, categories=1)
    """

    queries: list[Query]
    qrels: Qrels
    corpus: dict[str, dict[str, Any]] | None = None
    name: str = "golden"

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for q in self.queries:
            if q.id in seen:
                raise InputError(f"golden set {self.name!r}: query id {q.id!r} appears twice")
            seen.add(q.id)

    def __repr__(self) -> str:
        judged = sum(1 for q in self.queries if self.qrels.get(q.id))
        judgments = sum(len(d) for d in self.qrels.values())
        corpus = "None" if self.corpus is None else f"{len(self.corpus)} docs"
        categories = len({q.category for q in self.queries if q.category is not None})
        return (
            f"GoldenSet(name={_short(self.name)}, queries={len(self.queries)}, judged={judged}, "
            f"judgments={judgments}, corpus={corpus}, categories={categories})"
        )

    def texts(self) -> dict[str, str]:
        """``{query_id: text}``."""
        return {q.id: q.text for q in self.queries}

    def __len__(self) -> int:
        return len(self.queries)

    @classmethod
    def from_beir(cls, path: str | os.PathLike[str], *, split: str = "test", load_corpus: bool = True) -> GoldenSet:
        """Read a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``; ``.gz`` too).

        Only queries that have judgments in the split are kept, as BEIR evaluates them.
        """
        from rankbridge.io.beir_gz import read_golden_beir  # lazy: reader hook (io is above types)

        return read_golden_beir(path, split=split, load_corpus=load_corpus)

    # The readers below live in rankbridge.io (docs/data.md has the table); these delegate to them.
    @classmethod
    def read(cls, source: Any, **options: Any) -> GoldenSet:
        """Read a golden set from whatever holds it: chosen by type, suffix and content.

        A BEIR folder, a golden ``.jsonl`` / ``.csv`` / ``.tsv`` / ``.parquet``, a LlamaIndex QA-dataset
        ``.json``, a RAGAS testset (with ``corpus=``), a pandas DataFrame, an HF ``Dataset``, an
        ``ir_datasets`` dataset... (:func:`rankbridge.io.read_golden`, which documents ``options``).
        """
        from rankbridge.io.golden import read_golden  # lazy: reader hook (io is above types)

        return read_golden(source, **options)

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike[str], **options: Any) -> GoldenSet:
        """A golden ``.jsonl`` (:func:`rankbridge.io.read_golden_jsonl`: column names guessed or given)."""
        from rankbridge.io.tables import read_golden_jsonl  # lazy: reader hook (io is above types)

        return read_golden_jsonl(path, **options)

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], **options: Any) -> GoldenSet:
        """A golden ``.csv`` / ``.tsv`` (:func:`rankbridge.io.read_golden_csv`)."""
        from rankbridge.io.tables import read_golden_csv  # lazy: reader hook (io is above types)

        return read_golden_csv(path, **options)

    @classmethod
    def from_parquet(cls, path: str | os.PathLike[str], **options: Any) -> GoldenSet:
        """A golden ``.parquet`` (:func:`rankbridge.io.read_golden_parquet`; needs pyarrow)."""
        from rankbridge.io.tables import read_golden_parquet  # lazy: reader hook (io is above types)

        return read_golden_parquet(path, **options)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]], **options: Any) -> GoldenSet:
        """Rows as dicts, one question each (:func:`rankbridge.io.golden_from_rows`)."""
        from rankbridge.io.tables import golden_from_rows  # lazy: reader hook (io is above types)

        return golden_from_rows(rows, **options)

    @classmethod
    def from_pandas(cls, df: Any, **options: Any) -> GoldenSet:
        """A pandas DataFrame, one question per row (:func:`rankbridge.io.golden_from_pandas`)."""
        from rankbridge.io.tables import golden_from_pandas  # lazy: reader hook (io is above types)

        return golden_from_pandas(df, **options)

    @classmethod
    def from_hf(cls, dataset: Any, **options: Any) -> GoldenSet:
        """An HF ``datasets.Dataset`` (or the BEIR-on-the-hub tables) (:func:`rankbridge.io.golden_from_hf`)."""
        from rankbridge.io.tables import golden_from_hf  # lazy: reader hook (io is above types)

        return golden_from_hf(dataset, **options)

    @classmethod
    def from_ir_datasets(cls, dataset: Any, **options: Any) -> GoldenSet:
        """An ``ir_datasets`` dataset: its queries, qrels and docs (:func:`rankbridge.io.golden_from_ir_datasets`)."""
        from rankbridge.io.ir_datasets import golden_from_ir_datasets  # lazy: reader hook (io is above types)

        return golden_from_ir_datasets(dataset, **options)

    @classmethod
    def from_llamaindex(cls, source: Any, **options: Any) -> GoldenSet:
        """A saved LlamaIndex ``EmbeddingQAFinetuneDataset`` (its ``.json`` path, or the object / dict).

        Read without importing LlamaIndex (:func:`rankbridge.io.read_golden_llamaindex`).
        """
        # lazy: reader hook (io is above types)
        from rankbridge.io.llamaindex_json import golden_from_llamaindex, read_golden_llamaindex

        if isinstance(source, (str, os.PathLike)):
            return read_golden_llamaindex(source, **options)
        return golden_from_llamaindex(source, **options)

    @classmethod
    def from_ragas(cls, testset: Any, corpus: Any, **options: Any) -> GoldenSet:
        """A RAGAS testset whose ``reference_contexts`` are texts, matched to ``corpus`` ids.

        Exactly, then by normalised text, then fuzzily; unmatched contexts are reported, never dropped
        (:func:`rankbridge.io.golden_from_ragas`).
        """
        from rankbridge.io.ragas_testset import golden_from_ragas  # lazy: reader hook (io is above types)

        return golden_from_ragas(testset, corpus, **options)
