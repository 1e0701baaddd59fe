"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

The qrels TSV has a header line (``query-id corpus-id score``) and tab-separated rows; CRLF line endings
are accepted. Documents keep ``title``, ``text`` and ``metadata``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rankbridge.errors import ParseError
from rankbridge.io.jsonl import iter_jsonl
from rankbridge.types import GoldenSet, Qrels, Query

__all__ = ["read_beir", "read_beir_corpus", "read_beir_qrels", "read_beir_queries"]


def read_beir_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read a BEIR ``qrels/<split>.tsv`` file."""
    src = str(path)
    data: dict[str, dict[str, int]] = {}
    try:
        fh = open(path, encoding="utf-8", newline=None)
    except OSError as exc:
        raise ParseError(f"cannot open file: {exc.strerror}", source=src) from None
    with fh:
        for lineno, line in enumerate(fh, 1):
            fields = line.rstrip("\r\n").split("\t")
            if not line.strip():
                continue
            if lineno == 1 and fields[0].strip().lower() in ("query-id", "query_id", "qid"):
                continue
            if len(fields) != 3:
                raise ParseError(
                    f"expected 3 tab-separated columns 'query-id corpus-id score', found {len(fields)}",
                    source=src,
                    line=lineno,
                )
            qid, doc, label_text = (f.strip() for f in fields)
            try:
                label = int(label_text)
            except ValueError:
                raise ParseError(f"expected an integer score, found {label_text!r}", source=src, line=lineno) from None
            old = data.setdefault(qid, {}).get(doc)
            if old is not None and old != label:
                raise ParseError(f"doc {doc!r} of query {qid!r} judged both {old} and {label}", source=src, line=lineno)
            data[qid][doc] = label
    if not data:
        raise ParseError("no judgments found", source=src)
    return Qrels._trusted(data, name=Path(path).stem)


def read_beir_queries(path: str | os.PathLike[str]) -> dict[str, Query]:
    """Read ``queries.jsonl`` (``_id``, ``text``, optional ``metadata``) into ``{id: Query}``."""
    src = str(path)
    out: dict[str, Query] = {}
    for lineno, obj in iter_jsonl(path):
        if "_id" not in obj or "text" not in obj:
            raise ParseError("expected fields '_id' and 'text'", source=src, line=lineno)
        qid = str(obj["_id"])
        if qid in out:
            raise ParseError(f"query id {qid!r} appears twice", source=src, line=lineno)
        meta = obj.get("metadata") or {}
        if not isinstance(meta, dict):
            meta = {}
        # optional extras beside BEIR's fields: a category and a reference answer, top level or in metadata
        category = obj.get("category", meta.get("category"))
        reference = obj.get("reference", meta.get("reference", meta.get("answer")))
        out[qid] = Query(
            qid,
            str(obj["text"]),
            category=None if category is None else str(category),
            reference=None if reference is None else str(reference),
            metadata=meta,
        )
    return out


def read_beir_corpus(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Read ``corpus.jsonl`` into ``{doc_id: {"title", "text", "metadata"}}``."""
    src = str(path)
    out: dict[str, dict[str, Any]] = {}
    for lineno, obj in iter_jsonl(path):
        if "_id" not in obj or "text" not in obj:
            raise ParseError("expected fields '_id' and 'text'", source=src, line=lineno)
        doc = str(obj["_id"])
        if doc in out:
            raise ParseError(f"doc id {doc!r} appears twice", source=src, line=lineno)
        out[doc] = {"title": obj.get("title") or "", "text": obj["text"], "metadata": obj.get("metadata") or {}}
    return out


def read_beir(path: str | os.PathLike[str], *, split: str = "test", load_corpus: bool = True) -> GoldenSet:
    """Read a BEIR folder into a :class:`~rankbridge.GoldenSet` (queries judged in ``split`` only)."""
    root = Path(path)
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        found = sorted(p.stem for p in (root / "qrels").glob("*.tsv")) if (root / "qrels").is_dir() else []
        raise ParseError(
            f"expected a BEIR folder with qrels/{split}.tsv; found splits: {', '.join(found) or 'none'}",
            source=str(root),
        )
    qrels = read_beir_qrels(qrels_path)
    queries = read_beir_queries(root / "queries.jsonl")
    unknown = [q for q in qrels if q not in queries]
    if unknown:
        raise ParseError(
            f"{len(unknown)} judged queries have no text in queries.jsonl (e.g. {unknown[0]!r})", source=str(qrels_path)
        )
    corpus = read_beir_corpus(root / "corpus.jsonl") if load_corpus else None
    golden = [queries[q] for q in qrels]
    qrels.name = f"{root.name}/{split}"
    return GoldenSet(golden, qrels, corpus=corpus, name=root.name)
