"""Golden sets from tables: JSON Lines, CSV, Parquet, a pandas DataFrame, an HF ``datasets.Dataset``, rows.

One row per question. Columns are found by name unless you name them:

================  ===============================================================  ==================
role              guessed from the column names                                    parameter
================  ===============================================================  ==================
question          ``question``, ``query``, ``user_input``, ``text``                ``question_column``
query id          ``id``, ``query_id``, ``_id``, ``qid``                           ``id_column``
relevant ids      ``relevant_ids``, ``relevant_doc_ids``, ``relevant_chunk_ids``,  ``relevant_column``
                  ``reference_context_ids``, ``relevant_docs``
graded labels     ``labels``, ``relevance``, ``qrels``, ``graded_relevance``       ``labels_column``
category          ``category``                                                     ``category_column``
reference answer  ``reference``, ``answer``, ``ground_truth``,                     ``reference_column``
                  ``reference_answer``
================  ===============================================================  ==================

Rules (the same for every table form):

* A parameter names the column and overrides the guess; a column named for one role is not guessed for
  another. Two candidate columns for one role (``question`` and ``query``) is an error naming both.
* **Relevant ids** are a list (JSON array, Python list, numpy/Arrow array). In a text cell (CSV) they are a
  JSON array (``["d1", "d2"]``, also the Python repr pandas writes) or ids separated by ``;``
  (``d1;d2``). Each listed id gets label 1. A text cell with ``,`` and no ``;`` is read as one id, with a
  :class:`GoldenSetWarning` naming its rows (``d1,d2`` was most likely meant as two).
* **Graded labels** are a ``{doc_id: label}`` mapping (a JSON object in a text cell); they are merged over
  the relevant ids. Labels are integers (numpy integers and integral floats are accepted).
* **Query ids**, when there is no id column, are generated from the question text:
  ``"q" + sha1(question)[:12]`` (:func:`stable_query_id`), so they stay the same when rows are reordered
  or added; a repeated question gets ``-2``, ``-3``... in row order.
* A question with no relevant ids stays in ``golden.queries`` unjudged, and a
  :class:`GoldenSetWarning` names its rows.
* Judgments may come from a separate qrels table instead (``qrels=``: a :class:`~rankbridge.Qrels`,
  ``{qid: {doc: label}}``, ``{qid: [doc, ...]}``, a qrels file, or a table with ``query-id``/``corpus-id``/
  ``score`` columns as BEIR and MTEB put them on the HF hub). Then the queries table needs only ids and
  questions, and, as BEIR does, only the judged queries are kept.
* Every other column goes to ``Query.metadata``. Missing cells (``None``, NaN, ``pd.NA``, empty text) are
  skipped. A column name given twice in a header is an error.

Errors are :class:`~rankbridge.errors.ParseError` naming the file and line (JSONL, CSV) or the row
(0-based position, as ``df.iloc``), the column, what was expected and what was found.

Examples
--------
>>> golden = golden_from_rows([
...     {"query": "what causes scurvy?", "relevant_ids": ["d1", "d7"], "category": "medical"},
...     {"query": "who wrote Hamlet?", "relevant_ids": "d3", "answer": "Shakespeare"},
... ])
>>> [(q.id, q.text, q.category) for q in golden.queries]  # doctest: +NORMALIZE_WHITESPACE
[('q32f53d8b6db8', 'what causes scurvy?', 'medical'), ('q068888fe4d51', 'who wrote Hamlet?', None)]
>>> golden.qrels["q32f53d8b6db8"], golden.queries[1].reference
({'d1': 1, 'd7': 1}, 'Shakespeare')
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import hashlib
import json
import operator
import os
import warnings
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from rankbridge.errors import GoldenSetWarning, InputError, MissingExtraError, ParseError
from rankbridge.io import load_qrels  # rankbridge.io loads this module lazily, so the package is complete here
from rankbridge.io._keywords import keywords
from rankbridge.io._open import (
    check_label,
    clip,
    decode_error,
    file_stem,
    iter_jsonl_any,
    label_problem,
    names,
    open_text,
    parse_label,
    plain_suffix,
    user_stacklevel,
)
from rankbridge.types import GoldenSet, Qrels, Query

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack is 3.11+

__all__ = [
    "GoldenOptions",
    "GoldenSetWarning",
    "golden_from_hf",
    "golden_from_pandas",
    "golden_from_rows",
    "read_golden_csv",
    "read_golden_jsonl",
    "read_golden_parquet",
    "stable_query_id",
]

#: Column names guessed for each role, in the order they are listed in errors.
CANDIDATES: dict[str, tuple[str, ...]] = {
    "question": ("question", "query", "user_input", "text"),
    "id": ("id", "query_id", "_id", "qid"),
    "relevant": (
        "relevant_ids",
        "relevant_doc_ids",
        "relevant_chunk_ids",
        "reference_context_ids",
        "relevant_docs",
    ),
    "labels": ("labels", "relevance", "qrels", "graded_relevance"),
    "category": ("category",),
    "reference": ("reference", "answer", "ground_truth", "reference_answer"),
}
_ROLE_NAMES = {
    "question": "question",
    "id": "query id",
    "relevant": "relevant ids",
    "labels": "graded labels",
    "category": "category",
    "reference": "reference answer",
}
#: Flat qrels tables (one judgment per row), as BEIR / MTEB datasets on the HF hub have them.
QRELS_CANDIDATES: dict[str, tuple[str, ...]] = {
    "id": ("query-id", "query_id", "qid"),
    "doc": ("corpus-id", "corpus_id", "doc_id", "docid", "doc-id"),
    "label": ("score", "relevance", "label", "rel"),
}
#: Corpus tables (one document per row).
CORPUS_CANDIDATES: dict[str, tuple[str, ...]] = {
    "id": ("_id", "id", "doc_id", "corpus-id", "corpus_id", "docid"),
    "text": ("text", "contents", "content", "page_content"),
    "title": ("title",),
}
#: The tables given beside the questions: their candidate columns, the roles they must have, and the words
#: of the error when one is missing.
_SIDE_TABLES: dict[str, tuple[Mapping[str, tuple[str, ...]], tuple[str, ...], str]] = {
    "qrels": (
        QRELS_CANDIDATES,
        ("id", "doc"),
        "a qrels table with a query id column (query-id, query_id, qid) and a doc id column "
        "(corpus-id, corpus_id, doc_id, docid)",
    ),
    "corpus": (
        CORPUS_CANDIDATES,
        ("id", "text"),
        "a corpus table with an id column (_id, id, doc_id, corpus-id) and a text column "
        "(text, contents, content, page_content)",
    ),
}


# -- cells -------------------------------------------------------------------------------------------
def is_missing(value: object) -> bool:
    """None, NaN, ``pd.NA`` / ``NaT`` or blank text.

    Examples
    --------
    >>> [is_missing(v) for v in (None, float("nan"), " ", "x", 0, [])]
    [True, True, True, False, False, False]
    """
    if value is None:
        return True
    if isinstance(value, float):
        return value != value
    if isinstance(value, str):
        return not value.strip()
    return type(value).__name__ in ("NAType", "NaTType")


def _plain(value: Any) -> Any:
    """numpy / Arrow scalars and arrays as Python values (``tolist``); anything else unchanged."""
    if not isinstance(value, (str, bytes)) and hasattr(value, "tolist") and callable(value.tolist):
        return value.tolist()
    if hasattr(value, "as_py") and callable(value.as_py):  # a pyarrow scalar
        return value.as_py()
    return value


def as_id(value: Any) -> str:
    """An id from str, any integral number (numpy included) or an integral float; else InputError.

    Examples
    --------
    >>> as_id("d1"), as_id(7), as_id(3.0)
    ('d1', '7', '3')
    >>> as_id(2.5)
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: expected an id (str or integer), found float 2.5
    """
    value = _plain(value)
    if isinstance(value, str):
        if not value.strip():
            raise InputError("expected an id (str or integer), found an empty string")
        return value
    if not isinstance(value, bool):
        try:
            return str(operator.index(value))
        except TypeError:
            pass
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
    raise InputError(f"expected an id (str or integer), found {type(value).__name__} {value!r}")


def as_label(value: Any) -> int:
    """An integer relevance label (64 bits) from any integral number, an integral float or ASCII integer text.

    Examples
    --------
    >>> as_label(2), as_label(1.0), as_label(" 3 ")
    (2, 1, 3)
    >>> as_label("\u0663")
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: expected an integer relevance label in ASCII digits, found '٣'
    """
    value = _plain(value)
    if not isinstance(value, bool):
        number: int | None = None
        try:
            number = operator.index(value)
        except TypeError:
            if isinstance(value, float) and value.is_integer():
                number = int(value)
            elif isinstance(value, str):
                number = parse_label(value.strip())
                if number is None and any(c.isdigit() for c in value):  # say why '٣' or 2**63 is refused
                    raise InputError(label_problem(value.strip())) from None
        if number is not None:
            try:
                return check_label(number)
            except ValueError as exc:
                raise InputError(str(exc)) from None
    raise InputError(f"expected an integer relevance label, found {type(value).__name__} {clip(value)}")


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(f"expected a JSON value, found one nested too deeply to read: {clip(text, 60)}") from None
    except ValueError:  # invalid JSON, or an integer too long to read
        pass
    try:
        return ast.literal_eval(text)  # the Python repr pandas writes for list columns
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise InputError(f"expected a JSON value, found {clip(text, 60)}") from None


def parse_id_list(value: Any) -> list[str]:
    """Relevant ids from a cell: a list/array, a JSON array in text, ``;``-separated text, or one id.

    Examples
    --------
    >>> parse_id_list(["d1", 2]), parse_id_list('["d1", "d2"]'), parse_id_list("d1; d2"), parse_id_list("d9")
    (['d1', '2'], ['d1', 'd2'], ['d1', 'd2'], ['d9'])
    """
    value = _plain(value)
    if is_missing(value):
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            value = _literal(text)
        else:
            return [part.strip() for part in text.split(";") if part.strip()]
    if isinstance(value, Mapping):
        raise InputError("expected a list of ids, found a mapping (use labels_column= for {doc: label})")
    if isinstance(value, (list, tuple, set, frozenset)):
        return [as_id(v) for v in value]
    return [as_id(value)]


def parse_labels(value: Any) -> dict[str, int]:
    """Graded labels from a cell: a ``{doc: label}`` mapping or a JSON object in text.

    Arrow and HF datasets store a mapping column as a struct with every key of the column, so absent keys
    come back as None: those are skipped.
    """
    value = _plain(value)
    if is_missing(value):
        return {}
    if isinstance(value, str):
        value = _literal(value.strip())
    if not isinstance(value, Mapping):
        raise InputError(f"expected a mapping of doc id -> label, found {type(value).__name__} {value!r}")
    out: dict[str, int] = {}
    for doc, label in value.items():
        if label is None:
            continue
        out[as_id(doc)] = as_label(label)
    return out


def stable_query_id(question: str) -> str:
    """The id given to a question that has none: ``"q"`` and the first 12 hex digits of its SHA-1.

    Examples
    --------
    >>> stable_query_id("what causes scurvy?")
    'q32f53d8b6db8'
    """
    return "q" + hashlib.sha1(question.strip().encode("utf-8")).hexdigest()[:12]


# -- where a row came from ---------------------------------------------------------------------------
class _Loc:
    """A row's position: a file line (JSONL, CSV) or a 0-based row index (DataFrame, Dataset, list)."""

    __slots__ = ("line", "row", "source")

    def __init__(self, source: str, *, line: int | None = None, row: int | None = None) -> None:
        self.source = source
        self.line = line
        self.row = row

    def __str__(self) -> str:
        return f"line {self.line}" if self.line is not None else f"row {self.row}"

    def full(self) -> str:
        """``file:line`` or ``source row i``."""
        return f"{self.source}:{self.line}" if self.line is not None else f"{self.source} row {self.row}"

    def error(self, message: str, column: str | None = None) -> ParseError:
        col = f"column {column!r}: " if column is not None else ""
        if self.line is not None:
            return ParseError(f"{col}{message}", source=self.source, line=self.line)
        return ParseError(f"row {self.row}, {col}{message}", source=self.source)


Rows = list[tuple[_Loc, Mapping[str, Any]]]


def _module_of(obj: object) -> str:
    return type(obj).__module__.split(".", 1)[0]


def table_rows(table: Any, *, source: str | None = None) -> tuple[list[str], Rows, str]:
    """``(columns, [(location, row)], source)`` of a DataFrame, an HF / Arrow table or a list of mappings."""
    mod = _module_of(table)
    if mod == "pandas" and hasattr(table, "to_dict"):
        src = source or "<DataFrame>"
        columns = [str(c) for c in table.columns]
        _unique_columns(columns, src)  # to_dict("records") would keep only the last of two
        records = table.to_dict("records")
        return columns, [(_Loc(src, row=i), {str(k): v for k, v in r.items()}) for i, r in enumerate(records)], src
    if mod == "datasets" and hasattr(table, "column_names") and not isinstance(table.column_names, Mapping):
        src = source or "<Dataset>"
        return list(table.column_names), [(_Loc(src, row=i), r) for i, r in enumerate(table)], src
    if mod == "pyarrow" and hasattr(table, "to_pylist"):
        src = source or "<Table>"
        _unique_columns(list(table.column_names), src)  # to_pylist would keep only the last of two
        return list(table.column_names), [(_Loc(src, row=i), r) for i, r in enumerate(table.to_pylist())], src
    if isinstance(table, (list, tuple)):
        src = source or "<rows>"
        rows: Rows = []
        keys: dict[str, None] = {}
        for i, r in enumerate(table):
            if not isinstance(r, Mapping):
                raise ParseError(
                    f"row {i}: expected a mapping of column -> value, found {type(r).__name__}", source=src
                )
            keys.update(dict.fromkeys(str(k) for k in r))
            rows.append((_Loc(src, row=i), {str(k): v for k, v in r.items()}))
        return list(keys), rows, src
    raise InputError(
        f"expected a table (pandas DataFrame, datasets.Dataset, pyarrow Table or a list of dicts), "
        f"found {type(table).__name__}"
    )


def _unique_columns(columns: Sequence[str], source: str, *, line: int | None = None) -> None:
    """Refuse a table whose header names one column twice (a row read as a mapping keeps only one of them).

    Unnamed columns (``a,b,c,,`` as spreadsheets export them) are left alone: they name no role.

    Examples
    --------
    >>> _unique_columns(["id", "question", "labels", "labels"], "golden.csv", line=1)
    Traceback (most recent call last):
    ...
    rankbridge.errors.ParseError: golden.csv:1: expected each column name once, found 'labels' twice (columns 3 and 4)
    """
    first: dict[str, int] = {}
    for i, column in enumerate(columns, 1):
        if column in first and column:
            raise ParseError(
                f"expected each column name once, found {clip(column)} twice (columns {first[column]} and {i})",
                source=source,
                line=line,
            )
        first[column] = i


def _jsonl_rows(path: str | os.PathLike[str]) -> tuple[list[str], Rows, str]:
    src = str(path)
    rows: Rows = []
    columns: dict[str, None] = {}
    for lineno, obj in iter_jsonl_any(path):
        columns.update(dict.fromkeys(obj))
        rows.append((_Loc(src, line=lineno), obj))
    return list(columns), rows, src


def _csv_rows(path: str | os.PathLike[str], delimiter: str | None) -> tuple[list[str], Rows, str]:
    src = str(path)
    if delimiter is None:
        delimiter = "\t" if plain_suffix(path) == ".tsv" else ","
    rows: Rows = []
    with open_text(path) as fh:
        # skipinitialspace: in `id, question, relevant_ids` (a space after each comma) a quoted cell such as
        # `, "[""d1""]"` is read as a quoted cell, not as the text with its quotes (one id that matches nothing)
        reader = csv.reader(fh, delimiter=delimiter, skipinitialspace=True)
        start = 1
        try:
            try:
                header = next(reader)
            except StopIteration:
                raise ParseError("expected a header line, found an empty file", source=src) from None
            header = [h.strip().lstrip("\ufeff") for h in header]
            _unique_columns(header, src, line=reader.line_num)
            start = reader.line_num + 1
            for cells in reader:
                if not any(c.strip() for c in cells):
                    start = reader.line_num + 1
                    continue
                loc = _Loc(src, line=start)
                if len(cells) != len(header):
                    raise loc.error(f"expected {len(header)} fields (as in the header), found {len(cells)}")
                # `q1 ,` is the id 'q1', as the header's names are stripped: an id kept as 'q1 ' matches no run
                rows.append((loc, dict(zip(header, map(str.strip, cells), strict=True))))
                start = reader.line_num + 1
        except UnicodeDecodeError as exc:
            raise decode_error(path, exc) from None
        except csv.Error as exc:  # a field over the size limit, a NUL byte, a stray quote (strict dialects)
            raise ParseError(f"expected CSV, found {exc}", source=src, line=start) from None
        except (OSError, EOFError, zlib.error) as exc:  # a truncated or non-gzip .gz
            raise ParseError(f"cannot read file: {exc}", source=src) from None
    return header, rows, src


def resolve_columns(
    columns: Sequence[str],
    explicit: Mapping[str, str | None],
    candidates: Mapping[str, tuple[str, ...]],
    source: str,
    *,
    param: str = "{role}_column",
) -> dict[str, str | None]:
    """Pick the column of each role: the explicit one, else the single candidate present.

    Examples
    --------
    >>> resolve_columns(["query", "relevant_ids"], {}, CANDIDATES, "<rows>")["question"]
    'query'
    >>> resolve_columns(["query", "question", "relevant_ids"], {}, CANDIDATES, "<rows>")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.ParseError: <rows>: columns 'question' and 'query' could both be the question; ...
    """
    have = set(columns)
    out: dict[str, str | None] = {}
    taken: set[str] = set()
    for role, name in explicit.items():
        if name is None:
            continue
        if name not in have:
            raise ParseError(
                f"{param.format(role=role)}={clip(name)}: no such column; found columns: {names(columns)}",
                source=source,
            )
        out[role] = name
        taken.add(name)
    for role, options in candidates.items():
        if role in out:
            continue
        found = [c for c in options if c in have and c not in taken]
        if len(found) > 1:
            what = _ROLE_NAMES.get(role, role)
            raise ParseError(
                f"columns {clip(found[0])} and {clip(found[1])} could both be the {what}; "
                f"pass {param.format(role=role)}= to choose",
                source=source,
            )
        out[role] = found[0] if found else None
        if found:
            taken.add(found[0])
    return out


def question_rows(
    rows: Rows, question_column: str, id_column: str | None
) -> Iterator[tuple[_Loc, Mapping[str, Any], str, str]]:
    """``(location, row, query id, question)`` for each row of a table of questions.

    The question is non-empty text; the id comes from ``id_column`` (each once), else from the question
    (:func:`stable_query_id`, ``-2``, ``-3``... for a question asked again). Anything else is a
    ParseError naming the row and the column.
    """
    first_seen: dict[str, _Loc] = {}
    generated: dict[str, int] = {}
    for loc, row in rows:
        text = _plain(row.get(question_column))
        if not isinstance(text, str) or not text.strip():
            raise loc.error(f"expected the question as non-empty text, found {text!r}", question_column)
        if id_column is not None:
            try:
                qid = as_id(row.get(id_column))
            except InputError as exc:
                raise loc.error(str(exc), id_column) from None
            if qid in first_seen:
                raise loc.error(f"query id {qid!r} appears twice (first at {first_seen[qid]})", id_column)
        else:
            base = stable_query_id(text)
            n = generated[base] = generated.get(base, 0) + 1
            qid = base if n == 1 else f"{base}-{n}"
        first_seen[qid] = loc
        yield loc, row, qid, text


# -- qrels and corpus given beside the questions -----------------------------------------------------
def _side_columns(kind: str, columns: Sequence[str], source: str) -> tuple[list[str], dict[str, str | None]]:
    """The columns of the required roles, and of every role, of a qrels or corpus table (``kind``; guessed only).

    A required role with no column is a ParseError saying what the table needs (``_SIDE_TABLES``).
    """
    candidates, required, expected = _SIDE_TABLES[kind]
    cols = resolve_columns(columns, {}, candidates, source)
    found = [col for col in (cols[role] for role in required) if col is not None]
    if len(found) < len(required):
        raise ParseError(f"expected {expected}; found columns: {names(columns)}", source=source)
    return found, cols


def coerce_qrels(qrels: Any, *, source: str = "qrels") -> Qrels:
    """A :class:`~rankbridge.Qrels` from qrels, a mapping, a qrels file or a flat qrels table.

    Examples
    --------
    >>> coerce_qrels({"q1": ["d1", "d2"], "q2": {"d3": 2}}).to_dict()
    {'q1': {'d1': 1, 'd2': 1}, 'q2': {'d3': 2}}
    >>> coerce_qrels([{"query-id": "q1", "corpus-id": 5, "score": 1}]).to_dict()
    {'q1': {'5': 1}}
    """
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, (str, os.PathLike)):
        return load_qrels(qrels)
    if isinstance(qrels, Mapping) and _module_of(qrels) != "datasets":
        data: dict[str, dict[str, int]] = {}
        for qid, docs in qrels.items():
            where = f"{source}[{qid!r}]"
            try:
                q = as_id(qid)
                docs = _plain(docs)
                if isinstance(docs, Mapping):
                    data[q] = {as_id(d): as_label(v) for d, v in docs.items()}
                elif isinstance(docs, (list, tuple, set, frozenset)):
                    data[q] = dict.fromkeys((as_id(d) for d in docs), 1)
                else:
                    raise InputError(f"expected {{doc: label}} or a list of doc ids, found {type(docs).__name__}")
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
        return Qrels._trusted(data, name=source)
    columns, rows, src = table_rows(qrels, source=source)
    (id_col, doc_col), cols = _side_columns("qrels", columns, src)
    out: dict[str, dict[str, int]] = {}
    for loc, row in rows:
        col: str | None = id_col
        try:
            q = as_id(row.get(id_col))
            col = doc_col
            d = as_id(row.get(doc_col))
            col = cols["label"]
            label = 1 if col is None else as_label(row.get(col))
        except InputError as exc:
            raise loc.error(str(exc), col) from None
        old = out.setdefault(q, {}).get(d)
        if old is not None and old != label:
            raise loc.error(f"doc {d!r} of query {q!r} judged both {old} and {label}")
        out[q][d] = label
    if not out:
        raise ParseError("expected judgments, found an empty qrels table", source=src)
    return Qrels._trusted(out, name=source)


def coerce_corpus(corpus: Any, *, source: str = "corpus") -> dict[str, dict[str, Any]] | None:
    """``{doc_id: {"title", "text", "metadata"}}`` (the BEIR layout) from the forms a corpus comes in.

    A GoldenSet (its corpus), ``{id: text}`` or ``{id: {"text": ..., "title": ...}}``, a BEIR folder or
    ``corpus.jsonl[.gz]``, or a table with ``_id``/``id``/``doc_id`` and ``text`` columns.

    Examples
    --------
    >>> coerce_corpus({"d1": "Scurvy is caused by a lack of vitamin C."})["d1"]["text"]
    'Scurvy is caused by a lack of vitamin C.'
    """
    if corpus is None:
        return None
    if isinstance(corpus, GoldenSet):
        if corpus.corpus is None:
            raise InputError(f"{source}: the golden set {corpus.name!r} has no corpus")
        return corpus.corpus
    if isinstance(corpus, (str, os.PathLike)):
        path = Path(corpus)
        if path.is_dir():
            for name in ("corpus.jsonl", "corpus.jsonl.gz"):
                if (path / name).exists():
                    path = path / name
                    break
            else:
                raise ParseError("expected corpus.jsonl or corpus.jsonl.gz in the folder", source=str(corpus))
        suffix = plain_suffix(path)
        if suffix == ".parquet":
            columns, rows, src = _parquet_rows(path)
        elif suffix in (".csv", ".tsv"):
            columns, rows, src = _csv_rows(path, None)
        else:
            columns, rows, src = _jsonl_rows(path)
    elif isinstance(corpus, Mapping) and _module_of(corpus) != "datasets":
        out: dict[str, dict[str, Any]] = {}
        for doc, value in corpus.items():
            d = as_id(doc)
            value = _plain(value)
            if isinstance(value, str):
                out[d] = {"title": "", "text": value, "metadata": {}}
            elif isinstance(value, Mapping) and isinstance(value.get("text"), str):
                out[d] = {
                    "title": value.get("title") or "",
                    "text": value["text"],
                    "metadata": dict(value.get("metadata") or {}),
                }
            else:
                raise InputError(f"{source}[{doc!r}]: expected the document text or {{'text': ...}}, found {value!r}")
        return out
    else:
        columns, rows, src = table_rows(corpus, source=source)
    (id_col, text_col), cols = _side_columns("corpus", columns, src)
    used = {c for c in cols.values() if c is not None}
    docs: dict[str, dict[str, Any]] = {}
    for loc, row in rows:
        try:
            d = as_id(row.get(id_col))
        except InputError as exc:
            raise loc.error(str(exc), id_col) from None
        text = _plain(row.get(text_col))
        if not isinstance(text, str):
            raise loc.error(f"expected the document text, found {type(text).__name__}", text_col)
        if d in docs:
            raise loc.error(f"doc id {d!r} appears twice", id_col)
        title = row.get(cols["title"]) if cols["title"] else None
        meta = row.get("metadata") if "metadata" not in used else None
        extra = {k: _plain(v) for k, v in row.items() if k not in used and k != "metadata" and not is_missing(v)}
        docs[d] = {
            "title": "" if is_missing(title) else str(title),
            "text": text,
            "metadata": {**(dict(meta) if isinstance(meta, Mapping) else {}), **extra},
        }
    return docs


# -- the builder -------------------------------------------------------------------------------------
def _build(
    columns: Sequence[str],
    rows: Rows,
    source: str,
    *,
    name: str,
    options: GoldenOptions,
) -> GoldenSet:
    qrels, corpus, explicit = options.get("qrels"), options.get("corpus"), _explicit(options)
    given_qrels = coerce_qrels(qrels, source=f"{name}/qrels") if qrels is not None else None
    candidates = dict(CANDIDATES)
    if given_qrels is not None:
        if explicit.get("relevant") or explicit.get("labels"):
            raise InputError("pass either qrels= or relevant_column= / labels_column=, not both")
        candidates.pop("relevant")
        candidates.pop("labels")
    cols = resolve_columns(columns, explicit, candidates, source)
    qcol = cols.get("question")
    if qcol is None:
        raise ParseError(
            "expected a question column (question, query, user_input or text; or pass question_column=); "
            f"found columns: {names(columns)}",
            source=source,
        )
    if given_qrels is None and cols.get("relevant") is None and cols.get("labels") is None:
        raise ParseError(
            "expected a column of relevant ids ("
            + ", ".join(CANDIDATES["relevant"])
            + ") or of graded labels ("
            + ", ".join(CANDIDATES["labels"])
            + "), or qrels=; pass relevant_column= to name it; "
            f"found columns: {names(columns)}",
            source=source,
        )
    used = {c for c in cols.values() if c is not None}
    queries: list[Query] = []
    judged: dict[str, dict[str, int]] = {}
    unjudged: list[str] = []
    comma_cells: list[str] = []  # "d1,d2": one id as the ;-separated rule reads it, most likely meant as two
    for loc, row, qid, text in question_rows(rows, qcol, cols.get("id")):
        labels: dict[str, int] = {}
        for role, parse in (("relevant", parse_id_list), ("labels", parse_labels)):
            col = cols.get(role)
            if col is None:
                continue
            cell = row.get(col)
            try:
                parsed = parse(cell)
            except InputError as exc:
                raise loc.error(str(exc), col) from None
            if role == "relevant" and _comma_separated(cell):
                comma_cells.append(f"{loc} {clip(cell, 40)}")
            if isinstance(parsed, dict):
                labels.update(parsed)
            else:
                labels.update(dict.fromkeys(parsed, 1))
        if given_qrels is None:
            if labels:
                judged[qid] = labels
            else:
                unjudged.append(f"{loc} ({qid})")
        category = row.get(c) if (c := cols.get("category")) else None
        reference = row.get(c) if (c := cols.get("reference")) else None
        context_ids = tuple(d for d, v in labels.items() if v > 0)
        meta = {k: _plain(v) for k, v in row.items() if k not in used and not _blank(v)}
        queries.append(
            Query(
                qid,
                text,
                category=None if _blank(category) else str(_plain(category)),
                reference=None if _blank(reference) else str(_plain(reference)),
                reference_context_ids=context_ids,
                metadata=meta,
            )
        )
    if not queries:
        raise ParseError("expected at least one question, found none", source=source)
    if given_qrels is not None:
        known = {q.id for q in queries}
        no_text = [q for q in given_qrels if q not in known]
        if no_text:
            raise ParseError(
                f"{len(no_text)} judged queries have no question in the table (e.g. {no_text[0]!r})", source=source
            )
        queries = [
            dataclasses.replace(q, reference_context_ids=tuple(d for d, v in given_qrels[q.id].items() if v > 0))
            for q in queries
            if q.id in given_qrels
        ]
        out_qrels = given_qrels
        out_qrels.name = name
    else:
        out_qrels = Qrels._trusted(judged, name=name)
        if unjudged:
            warnings.warn(
                GoldenSetWarning(
                    f"{source}: {len(unjudged)} of {len(queries)} questions have no relevant ids and are not "
                    f"judged (kept in golden.queries): {_listed(unjudged)}"
                ),
                stacklevel=user_stacklevel(),
            )
    if comma_cells:
        warnings.warn(
            GoldenSetWarning(
                f"{source}: column {clip(cols.get('relevant'))}: {len(comma_cells)} cells hold ',' and no ';', each "
                f"read as one id (ids in a text cell are separated by ';', d1;d2, or written as a JSON array): "
                f"{_listed(comma_cells)}"
            ),
            stacklevel=user_stacklevel(),
        )
    return GoldenSet(queries, out_qrels, corpus=coerce_corpus(corpus, source=f"{name}/corpus"), name=name)


def _comma_separated(cell: Any) -> bool:
    """A text cell of ids separated by ``,`` (which :func:`parse_id_list` reads as one id), not a JSON array."""
    return isinstance(cell, str) and "," in cell and ";" not in cell and not cell.lstrip().startswith("[")


def _listed(items: Sequence[str], limit: int = 5) -> str:
    """The first ``limit`` items of a warning's list, and how many more."""
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _blank(value: Any) -> bool:
    try:
        return is_missing(value) or (isinstance(value, (list, tuple, dict)) and not value)
    except (TypeError, ValueError):  # an array's truth value
        return False


class GoldenOptions(TypedDict, total=False):
    """The keywords every golden-table reader takes besides ``name`` (:func:`golden_from_rows` documents them).

    Each defaults to None: no qrels or corpus given apart, every column guessed.
    """

    qrels: Any
    corpus: Any
    id_column: str | None
    question_column: str | None
    relevant_column: str | None
    labels_column: str | None
    category_column: str | None
    reference_column: str | None


def _explicit(options: GoldenOptions) -> dict[str, str | None]:
    """The column named for each role (None: guess it), in the order a wrong name is reported."""
    return {
        "id": options.get("id_column"),
        "question": options.get("question_column"),
        "relevant": options.get("relevant_column"),
        "labels": options.get("labels_column"),
        "category": options.get("category_column"),
        "reference": options.get("reference_column"),
    }


# -- public readers ----------------------------------------------------------------------------------
@keywords(GoldenOptions)
def golden_from_rows(
    rows: Iterable[Mapping[str, Any]], *, name: str = "golden", **options: Unpack[GoldenOptions]
) -> GoldenSet:
    """A golden set from a list of dicts, one per question (see the module docstring for the columns).

    Parameters
    ----------
    rows:
        One mapping per question.
    qrels:
        Judgments given apart (a Qrels, a mapping, a qrels file or a flat qrels table); then only judged
        questions are kept and no relevant-ids column is looked for.
    corpus:
        The documents (a GoldenSet, ``{id: text}``, a BEIR folder, a corpus file or table), kept in
        ``golden.corpus``.
    name:
        The golden set's (and its qrels') name.
    id_column, question_column, relevant_column, labels_column, category_column, reference_column:
        The column of each role, overriding the guess.

    Every golden-table reader takes these keywords (``qrels`` to ``reference_column`` are the keys of
    :class:`GoldenOptions`, each None by default); one it does not take raises ``TypeError``.

    Examples
    --------
    >>> g = golden_from_rows([{"id": 1, "prompt": "scurvy?", "labels": {"d1": 2, "d2": 0}}], question_column="prompt")
    >>> g.queries[0].id, g.qrels.to_dict()
    ('1', {'1': {'d1': 2, 'd2': 0}})
    >>> golden_from_rows([{"id": 1, "prompt": "scurvy?", "relevant_ids": [1.5]}], question_column="prompt")
    Traceback (most recent call last):
    ...
    rankbridge.errors.ParseError: <rows>: row 0, column 'relevant_ids': expected an id (str or integer), found float 1.5
    """
    columns, table, src = table_rows(list(rows))
    return _build(columns, table, src, name=name, options=options)


@keywords(GoldenOptions)
def read_golden_jsonl(
    path: str | os.PathLike[str], *, name: str | None = None, **options: Unpack[GoldenOptions]
) -> GoldenSet:
    """Read a golden set from JSON Lines (``.jsonl`` or ``.jsonl.gz``), one question per line.

    Parameters are those of :func:`golden_from_rows`; ``name`` defaults to the file's stem. Errors name
    the file and line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "golden.jsonl"
    >>> _ = p.write_text('{"query_id": "q1", "question": "scurvy?", "relevant_chunk_ids": ["c1"]}\\n'
    ...                  '{"query_id": "q2", "question": "", "relevant_chunk_ids": ["c2"]}\\n')
    >>> read_golden_jsonl(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.ParseError: ...golden.jsonl:2: column 'question': expected the question as non-empty text, ...
    """
    columns, rows, src = _jsonl_rows(path)
    return _build(columns, rows, src, name=name or file_stem(path), options=options)


@keywords(GoldenOptions)
def read_golden_csv(
    path: str | os.PathLike[str],
    *,
    delimiter: str | None = None,
    name: str | None = None,
    **options: Unpack[GoldenOptions],
) -> GoldenSet:
    """Read a golden set from CSV (``,``; ``.tsv`` files: tab), a header line, one question per row.

    Relevant ids are ``;``-separated (``d1;d2``) or a JSON array; graded labels a JSON object. Other
    parameters are those of :func:`golden_from_rows`. Errors name the file and the row's first line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "golden.csv"
    >>> _ = p.write_text('id,query,relevant_ids,category\\nq1,what causes scurvy?,d1;d7,medical\\n')
    >>> g = read_golden_csv(p)
    >>> g.name, g.qrels.to_dict(), g.queries[0].category
    ('golden', {'q1': {'d1': 1, 'd7': 1}}, 'medical')
    >>> read_golden_csv(p, query_colum="query")
    Traceback (most recent call last):
    ...
    TypeError: read_golden_csv() got an unexpected keyword argument 'query_colum'
    """
    columns, rows, src = _csv_rows(path, delimiter)
    return _build(columns, rows, src, name=name or file_stem(path), options=options)


def _parquet_rows(path: str | os.PathLike[str]) -> tuple[list[str], Rows, str]:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise MissingExtraError("pyarrow", "pandas", "Reading Parquet files") from None
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ParseError(f"cannot read Parquet file: {exc}", source=str(path)) from None
    return table_rows(table, source=str(path))


@keywords(GoldenOptions)
def read_golden_parquet(
    path: str | os.PathLike[str], *, name: str | None = None, **options: Unpack[GoldenOptions]
) -> GoldenSet:
    """Read a golden set from a Parquet file (needs ``pyarrow``: ``pip install 'rankbridge[pandas]'``).

    Parameters are those of :func:`golden_from_rows`; errors name the file and the 0-based row.
    """
    columns, rows, src = _parquet_rows(path)
    return _build(columns, rows, src, name=name or file_stem(path), options=options)


@keywords(GoldenOptions)
def golden_from_pandas(df: Any, *, name: str = "golden", **options: Unpack[GoldenOptions]) -> GoldenSet:
    """A golden set from a pandas DataFrame, one question per row (columns as in :func:`golden_from_rows`).

    ``qrels`` and ``corpus`` may be DataFrames too (``query-id``/``corpus-id``/``score`` and
    ``_id``/``text`` columns). Errors name the 0-based row position (as ``df.iloc``) and the column.
    """
    if _module_of(df) != "pandas" or not hasattr(df, "columns"):
        raise InputError(f"expected a pandas DataFrame, found {type(df).__name__}")
    columns, rows, src = table_rows(df)
    return _build(columns, rows, src, name=name, options=options)


@keywords(GoldenOptions)
def golden_from_hf(
    data: Any, *, split: str = "test", name: str = "golden", **options: Unpack[GoldenOptions]
) -> GoldenSet:
    """A golden set from an HF ``datasets.Dataset`` (one question per row) or a ``DatasetDict``.

    BEIR and MTEB datasets on the hub come as three tables: queries (``_id``, ``text``), corpus (``_id``,
    ``title``, ``text``) and qrels (``query-id``, ``corpus-id``, ``score``). Pass them as
    ``golden_from_hf(queries, qrels=qrels, corpus=corpus)``, or one ``DatasetDict`` with the keys
    ``queries``, ``corpus`` (optional) and ``qrels`` or ``split``. Other parameters are those of
    :func:`golden_from_rows`.
    """
    if _module_of(data) != "datasets":
        raise InputError(f"expected a datasets.Dataset or DatasetDict, found {type(data).__name__}")
    if isinstance(data, Mapping):  # a DatasetDict
        keys = list(data)
        if "queries" not in data:
            raise InputError(
                f"expected a DatasetDict with 'queries' (and 'qrels' or {split!r}, optionally 'corpus'); "
                f"found {', '.join(map(repr, keys)) or 'no splits'}: pass one split, e.g. data[{keys[0]!r}]"
                if keys
                else "expected a DatasetDict with 'queries', found no splits"
            )
        if options.get("qrels") is None:
            options["qrels"] = data.get("qrels", data.get(split))
            others = [k for k in keys if k not in ("queries", "corpus")]
            judged_in_rows = (
                options.get("relevant_column")
                or options.get("labels_column")
                or any(c in data["queries"].column_names for c in CANDIDATES["relevant"] + CANDIDATES["labels"])
            )
            if options["qrels"] is None and others and not judged_in_rows:  # say which split, not "no qrels column"
                raise InputError(
                    f"expected a DatasetDict with 'qrels' or the split {split!r} (split=); found "
                    f"{', '.join(map(repr, keys))}: pass split={others[0]!r}"
                )
        if options.get("corpus") is None:
            options["corpus"] = data.get("corpus")
        data = data["queries"]
    columns, rows, src = table_rows(data)
    return _build(columns, rows, src, name=name, options=options)
