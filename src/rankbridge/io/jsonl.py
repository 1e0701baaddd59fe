"""JSON Lines readers and writers for runs and qrels.

Run JSONL, one object per query::

    {"query_id": "q1", "hits": [{"doc_id": "d3", "score": 0.8, "text": "...", "metadata": {...}}, ...],
     "error": null, "latency": 0.012}

The hits are in rank order (a ranked run). Qrels JSONL, one object per judgment::

    {"query_id": "q1", "doc_id": "d3", "relevance": 2}
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rankbridge.errors import InputError, ParseError
from rankbridge.io._atomic import atomic_write
from rankbridge.types import Hit, Qrels, Run, _check_id, _check_label

__all__ = ["iter_jsonl", "read_qrels_jsonl", "read_run_jsonl", "write_qrels_jsonl", "write_run_jsonl"]


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; a bad line raises ParseError with file:line."""
    src = str(path)
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise ParseError(f"cannot open file: {exc.strerror}", source=src) from None
    with fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ParseError(
                    f"expected a JSON object, found invalid JSON ({exc.msg})", source=src, line=lineno
                ) from None
            if not isinstance(obj, dict):
                raise ParseError(f"expected a JSON object, found {type(obj).__name__}", source=src, line=lineno)
            yield lineno, obj


def _field(obj: Mapping[str, Any], key: str, src: str, lineno: int) -> Any:
    if key not in obj:
        raise ParseError(f"missing field {key!r} (found fields: {', '.join(obj) or 'none'})", source=src, line=lineno)
    return obj[key]


def read_run_jsonl(path: str | os.PathLike[str], *, name: str | None = None) -> Run:
    """Read a ranked run from JSON Lines (see the module docstring for the layout)."""
    src = str(path)
    run = Run(name=name or Path(path).stem)
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        try:
            qid = _check_id(_field(obj, "query_id", src, lineno), "query id", "query_id")
            if qid in seen:
                raise ParseError(f"query {qid!r} appears twice (first on line {seen[qid]})", source=src, line=lineno)
            seen[qid] = lineno
            latency = obj.get("latency")
            if obj.get("error"):
                run.add_error(qid, str(obj["error"]), latency=latency)
                continue
            hits_raw = _field(obj, "hits", src, lineno)
            if not isinstance(hits_raw, list):
                raise ParseError(f"'hits' must be a list, found {type(hits_raw).__name__}", source=src, line=lineno)
            hits = []
            for h in hits_raw:
                if isinstance(h, dict):
                    hits.append(Hit(_field(h, "doc_id", src, lineno), h.get("score"), h.get("text"), h.get("metadata")))
                else:
                    hits.append(h)
            run.add(qid, hits, latency=latency)
        except ParseError:
            raise
        except InputError as exc:
            raise ParseError(str(exc), source=src, line=lineno) from None
    if not seen:
        raise ParseError("no queries found (the file is empty)", source=src)
    return run


def write_run_jsonl(run: Run, path: str | os.PathLike[str]) -> None:
    """Write a run as JSON Lines (atomically), errors and latencies included."""
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
            fh.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")


def read_qrels_jsonl(path: str | os.PathLike[str], *, name: str | None = None) -> Qrels:
    """Read qrels from JSON Lines: ``{"query_id", "doc_id", "relevance"}`` per line."""
    src = str(path)
    data: dict[str, dict[str, int]] = {}
    for lineno, obj in iter_jsonl(path):
        try:
            qid = _check_id(_field(obj, "query_id", src, lineno), "query id", "query_id")
            doc = _check_id(_field(obj, "doc_id", src, lineno), "doc id", "doc_id")
            label = _check_label(_field(obj, "relevance", src, lineno), "relevance")
        except ParseError:
            raise
        except InputError as exc:
            raise ParseError(str(exc), source=src, line=lineno) from None
        old = data.setdefault(qid, {}).get(doc)
        if old is not None and old != label:
            raise ParseError(f"doc {doc!r} of query {qid!r} judged both {old} and {label}", source=src, line=lineno)
        data[qid][doc] = label
    if not data:
        raise ParseError("no judgments found (the file is empty)", source=src)
    return Qrels._trusted(data, name=name or Path(path).stem)


def write_qrels_jsonl(qrels: Qrels, path: str | os.PathLike[str]) -> None:
    """Write qrels as JSON Lines (atomically)."""
    with atomic_write(path) as fh:
        for qid, docs in qrels.items():
            for doc, label in docs.items():
                fh.write(json.dumps({"query_id": qid, "doc_id": doc, "relevance": label}, ensure_ascii=False) + "\n")
