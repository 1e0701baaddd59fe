"""JSON Lines readers and writers for runs and qrels.

Run JSONL, one object per query::

    {"query_id": "q1", "hits": [{"doc_id": "d3", "score": 0.8, "text": "...", "metadata": {...}}, ...],
     "error": null, "latency": 0.012, "run": "bm25", "duplicates": 1, "answer": "..."}

The hits are in rank order (a ranked run). ``hits`` and ``query_id`` are required; ``run`` (the run's
name), ``duplicates`` (repeated hits that were dropped), ``answer`` (an application's answer) and the
hit fields other than ``doc_id`` are optional. Qrels JSONL, one object per judgment::

    {"query_id": "q1", "doc_id": "d3", "relevance": 2}

Ids are non-empty strings (or integers); scores finite numbers; ``text`` a string or absent; ``metadata`` an
object or absent; ``latency`` a finite number of seconds >= 0; labels integers that fit in 64 bits. Anything
else, invalid UTF-8 and JSON nested too deeply to read are a :class:`~rankbridge.errors.ParseError` naming
the file and line. A UTF-8 byte-order mark at the start is skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rankbridge.errors import InputError, ParseError
from rankbridge.io._atomic import atomic_write
from rankbridge.io._open import ENCODING, check_label, check_score, clip, jsonl_objects, names
from rankbridge.types import Hit, Qrels, Run, _check_label

__all__ = ["iter_jsonl", "read_qrels_jsonl", "read_run_jsonl", "write_qrels_jsonl", "write_run_jsonl"]


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; a bad line raises ParseError with file:line."""
    src = str(path)
    try:
        fh = open(path, encoding=ENCODING)
    except OSError as exc:
        raise ParseError(f"cannot open file: {exc.strerror}", source=src) from None
    with fh:
        yield from jsonl_objects(fh, path)


def _field(obj: Mapping[str, Any], key: str, src: str, lineno: int, where: str = "") -> Any:
    if key not in obj:
        at = f" in {where}" if where else ""
        raise ParseError(f"missing field {key!r}{at} (found fields: {names(obj)})", source=src, line=lineno)
    return obj[key]


def _json_default(value: Any) -> Any:
    """numpy scalars and arrays become numbers and lists; sets and tuples lists; anything else its str()."""
    if hasattr(value, "dtype") and hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


def _number(value: Any, key: str, src: str, lineno: int) -> float:
    try:
        seconds = check_score(value, "latency in seconds")
    except ValueError as exc:
        raise ParseError(f"{key!r}: {exc}", source=src, line=lineno) from None
    if seconds < 0:
        raise ParseError(f"{key!r}: expected a latency in seconds >= 0, found {clip(value)}", source=src, line=lineno)
    return seconds


def _id(value: Any, what: str, key: str, src: str, lineno: int) -> str:
    """A non-empty id: a str, or an int written as one."""
    if type(value) is str:
        if value.strip():
            return value
        raise ParseError(f"{key!r}: expected a {what}, found {clip(value)} (empty)", source=src, line=lineno)
    if type(value) is int:
        return str(value)
    raise _wrong_type(repr(key), f"a {what} as a string (or integer)", value, src, lineno)


def _hit(h: Any, i: int, src: str, lineno: int) -> Hit:
    """One entry of ``hits``: ``{"doc_id", "score"?, "text"?, "metadata"?}`` or a bare doc id."""
    if type(h) is not dict:
        if type(h) is str or type(h) is int:
            return Hit(_id(h, "doc id", f"hits[{i}]", src, lineno))
        raise _wrong_type(f"hits[{i}]", "an object with a 'doc_id' (or a doc id)", h, src, lineno)
    doc = _id(_field(h, "doc_id", src, lineno, f"hits[{i}]"), "doc id", f"hits[{i}].doc_id", src, lineno)
    score = h.get("score")
    if score is not None and not (type(score) is float and -_INF < score < _INF):
        try:
            score = check_score(score)
        except ValueError as exc:
            raise ParseError(f"hits[{i}].score: {exc}", source=src, line=lineno) from None
    text = h.get("text")
    if text is not None and type(text) is not str:
        raise _wrong_type(f"hits[{i}].text", "a string or null", text, src, lineno)
    meta = h.get("metadata")
    if meta is not None and type(meta) is not dict:
        raise _wrong_type(f"hits[{i}].metadata", "an object or null", meta, src, lineno)
    return Hit(doc, score, text, meta)


def _wrong_type(where: str, expected: str, value: Any, src: str, lineno: int) -> ParseError:
    """The error for a field of the wrong type (the callers check inline: _hit runs for every hit)."""
    found = f"{type(value).__name__} {clip(value)}"
    return ParseError(f"{where}: expected {expected}, found {found}", source=src, line=lineno)


_INF = float("inf")


def read_run_jsonl(path: str | os.PathLike[str], *, name: str | None = None) -> Run:
    """Read a ranked run from JSON Lines (see the module docstring for the layout).

    The run's name is ``name``, else the ``run`` field of the first line, else the file's stem.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> _ = p.write_text('{"query_id": "q1", "hits": [{"doc_id": "d2", "score": 0.5}, {"doc_id": "d1"}]}\\n')
    >>> run = read_run_jsonl(p)
    >>> run.name, run.ranking("q1")
    ('run', ['d2', 'd1'])
    """
    src = str(path)
    run = Run(name=name or Path(path).stem)
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        try:
            qid = _id(_field(obj, "query_id", src, lineno), "query id", "query_id", src, lineno)
            if qid in seen:
                first = seen[qid]
                raise ParseError(f"query {clip(qid)} appears twice (first on line {first})", source=src, line=lineno)
            if not seen and name is None and isinstance(obj.get("run"), str):
                run.name = obj["run"]
            seen[qid] = lineno
            latency = obj.get("latency")
            if latency is not None:
                latency = _number(latency, "latency", src, lineno)
            if isinstance(obj.get("answer"), str):
                run.answers[qid] = obj["answer"]
            error = obj.get("error")
            if error:
                if type(error) is not str:
                    raise _wrong_type("'error'", "a message (a string) or null", error, src, lineno)
                run.add_error(qid, error, latency=latency)
                continue
            hits_raw = _field(obj, "hits", src, lineno)
            if not isinstance(hits_raw, list):
                raise ParseError(f"'hits' must be a list, found {type(hits_raw).__name__}", source=src, line=lineno)
            run.add(qid, [_hit(h, i, src, lineno) for i, h in enumerate(hits_raw)], latency=latency)
            dups = obj.get("duplicates")
            if dups:
                if isinstance(dups, bool) or not isinstance(dups, int) or dups < 0:
                    raise ParseError(f"'duplicates' must be a count >= 0, found {dups!r}", source=src, line=lineno)
                run.duplicates[qid] = run.duplicates.get(qid, 0) + dups
        except ParseError:
            raise
        except InputError as exc:
            raise ParseError(str(exc), source=src, line=lineno) from None
    if not seen:
        raise ParseError("no queries found (the file is empty)", source=src)
    return run


def write_run_jsonl(run: Run, path: str | os.PathLike[str], *, name: str | None = None) -> None:
    """Write a run as JSON Lines (atomically) that :func:`read_run_jsonl` reads back equal.

    Hits are written in rank order with their scores, texts and metadata; errors, latencies, dropped
    duplicate counts, answers and the run's name come along. A scored query is written in its ranking
    (trec_eval order), so it reads back as a ranked query with the same ranking and scores. The run's
    ``config`` and ``stages`` are not written. ``name`` replaces the run's name in the file. numpy
    values in metadata are written as numbers or lists; other values JSON cannot hold are written as
    their ``str()``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> run = Run.from_ranked({"q1": [Hit("d2", 0.5, "text"), Hit("d1", 0.7)]}, name="dense")
    >>> run.add_error("q2", "timeout", latency=5.0)
    >>> write_run_jsonl(run, p)
    >>> back = read_run_jsonl(p)
    >>> back.name, back.hits("q1") == run.hits("q1"), back.errors, back.latency
    ('dense', True, {'q2': 'timeout'}, {'q2': 5.0})
    """
    with atomic_write(path) as fh:
        for qid in run.query_ids():
            obj: dict[str, Any] = {"query_id": qid}
            if qid in run:
                obj["hits"] = [
                    {
                        k: v
                        for k, v in (
                            ("doc_id", h.doc_id),
                            ("score", h.score),
                            ("text", h.text),
                            ("metadata", dict(h.metadata) if h.metadata else None),
                        )
                        if v is not None
                    }
                    for h in run.hits(qid)
                ]
            else:
                obj["hits"] = []
            if qid in run.errors:
                obj["error"] = run.errors[qid]
            if qid in run.latency:
                obj["latency"] = run.latency[qid]
            if run.duplicates.get(qid):
                obj["duplicates"] = run.duplicates[qid]
            if qid in run.answers:
                obj["answer"] = run.answers[qid]
            obj["run"] = run.name if name is None else name
            fh.write(json.dumps(obj, ensure_ascii=False, default=_json_default) + "\n")


def read_qrels_jsonl(path: str | os.PathLike[str], *, name: str | None = None) -> Qrels:
    """Read qrels from JSON Lines: ``{"query_id", "doc_id", "relevance"}`` per line."""
    src = str(path)
    data: dict[str, dict[str, int]] = {}
    for lineno, obj in iter_jsonl(path):
        try:
            qid = _id(_field(obj, "query_id", src, lineno), "query id", "query_id", src, lineno)
            doc = _id(_field(obj, "doc_id", src, lineno), "doc id", "doc_id", src, lineno)
            label = check_label(_check_label(_field(obj, "relevance", src, lineno), "relevance"))
        except ParseError:
            raise
        except (InputError, ValueError) as exc:
            raise ParseError(str(exc), source=src, line=lineno) from None
        old = data.setdefault(qid, {}).get(doc)
        if old is not None and old != label:
            raise ParseError(
                f"doc {clip(doc)} of query {clip(qid)} judged both {old} and {label}", source=src, line=lineno
            )
        data[qid][doc] = label
    if not data:
        raise ParseError("no judgments found (the file is empty)", source=src)
    return Qrels._trusted(data, name=name or Path(path).stem)


def write_qrels_jsonl(qrels: Qrels | Mapping[str, Mapping[str, int]], path: str | os.PathLike[str]) -> None:
    """Write qrels as JSON Lines (atomically) that :func:`read_qrels_jsonl` reads back equal.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "qrels.jsonl"
    >>> write_qrels_jsonl(Qrels({"q1": {"d1": 2}}), p)
    >>> p.read_text()
    '{"query_id": "q1", "doc_id": "d1", "relevance": 2}\\n'
    """
    data = qrels if isinstance(qrels, Qrels) else Qrels(qrels)
    with atomic_write(path) as fh:
        for qid, docs in data.items():
            for doc, label in docs.items():
                fh.write(json.dumps({"query_id": qid, "doc_id": doc, "relevance": label}, ensure_ascii=False) + "\n")
