"""Queries alone (no qrels): a BEIR folder, a ``queries.jsonl``, or a TSV of ``id<TAB>text`` lines.

:func:`load_queries` reads what ``rankbridge run --queries`` accepts: a BEIR folder (the queries judged
in ``split``; every query when there are no qrels), a ``.jsonl`` file (``_id``/``id``/``query_id``/``qid``
and ``text``/``query``/``question``, with an optional ``metadata.category``), or a TSV file of
``id<TAB>text`` lines (a header line is skipped). Query ids must be unique.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rankbridge.errors import InputError, ParseError
from rankbridge.io._open import ENCODING, clip, decode_error
from rankbridge.io.beir import read_beir
from rankbridge.io.jsonl import iter_jsonl
from rankbridge.types import Query

__all__ = ["load_queries"]

_ID_KEYS = ("_id", "id", "query_id", "qid")
_TEXT_KEYS = ("text", "query", "question")
_HEADER_IDS = {"_id", "id", "qid", "query-id", "query_id"}


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def _check_query(qid: str, text: str, seen: dict[str, int], path: Path, lineno: int) -> None:
    """A query's text is not blank (a retriever asked "" answers nothing useful) and its id is new."""
    if not text.strip():
        raise ParseError(
            f"query {qid!r}: expected the question text, found {clip(text)}", source=str(path), line=lineno
        )
    if qid in seen:
        raise ParseError(f"query id {qid!r} appears twice (first on line {seen[qid]})", source=str(path), line=lineno)
    seen[qid] = lineno


def _queries_jsonl(path: Path) -> list[Query]:
    out: list[Query] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        qid, text = _first(obj, _ID_KEYS), _first(obj, _TEXT_KEYS)
        if qid is None or not isinstance(text, str):
            raise ParseError(
                f"expected an id ({'/'.join(_ID_KEYS)}) and a text ({'/'.join(_TEXT_KEYS)})",
                source=str(path),
                line=lineno,
            )
        if not ((type(qid) is str and qid.strip()) or type(qid) is int):
            raise ParseError(
                f"expected a query id (a non-empty string), found {clip(qid)}", source=str(path), line=lineno
            )
        _check_query(str(qid), text, seen, path, lineno)
        raw = obj.get("metadata")
        meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        category = meta.get("category")
        out.append(Query(str(qid), text, category=None if category is None else str(category), metadata=meta))
    return out


def _queries_tsv(path: Path) -> list[Query]:
    out: list[Query] = []
    seen: dict[str, int] = {}
    try:
        fh = open(path, encoding=ENCODING, newline=None)
    except OSError as exc:
        raise ParseError(f"cannot open file: {exc.strerror}", source=str(path)) from None
    with fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                fields = line.rstrip("\r\n").split("\t")
                if lineno == 1 and fields[0].strip().lower() in _HEADER_IDS:
                    continue
                if len(fields) < 2 or not fields[0].strip():
                    raise ParseError(
                        f"expected 'id<TAB>text', found {clip(line.rstrip())}", source=str(path), line=lineno
                    )
                qid, text = fields[0].strip(), "\t".join(fields[1:]).strip()
                _check_query(qid, text, seen, path, lineno)
                out.append(Query(qid, text))
        except UnicodeDecodeError as exc:
            raise decode_error(path, exc) from None
    return out


def load_queries(path: str | os.PathLike[str], *, split: str = "test") -> list[Query]:
    """Read queries from a BEIR folder, a ``.jsonl`` file, or a TSV file (see the module docstring).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "queries.tsv"
    >>> _ = p.write_text("qid\\ttext\\nq1\\twhat causes scurvy?\\n")
    >>> [(q.id, q.text) for q in load_queries(p)]
    [('q1', 'what causes scurvy?')]
    """
    root = Path(path)
    if root.is_dir():
        if (root / "qrels" / f"{split}.tsv").exists():
            queries = read_beir(root, split=split, load_corpus=False).queries
        elif (root / "queries.jsonl").exists():
            queries = _queries_jsonl(root / "queries.jsonl")
        else:
            raise InputError(f"--queries {path}: expected a BEIR folder with queries.jsonl")
    elif not root.exists():
        raise InputError(f"--queries {path}: no such file or folder")
    elif root.suffix.lower() in (".jsonl", ".json"):
        queries = _queries_jsonl(root)
    else:
        queries = _queries_tsv(root)
    if not queries:
        raise ParseError("no queries found", source=str(path))
    seen: set[str] = set()
    for q in queries:
        if q.id in seen:
            raise ParseError(f"query id {q.id!r} appears twice", source=str(path))
        seen.add(q.id)
    return queries
