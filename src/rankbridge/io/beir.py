"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

The qrels TSV has a header line (``query-id corpus-id score``) and tab-separated rows; CRLF line endings
and a UTF-8 byte-order mark are accepted; ids must not be empty and scores are ASCII integers that fit in
64 bits. Ids (``_id``) are non-empty strings or integers and ``text`` is a string (``title`` may be null).
Documents keep ``title``, ``text``, ``metadata`` and any other field. Queries may carry,
beside BEIR's ``_id``, ``text`` and ``metadata``, a ``category``, a ``reference`` answer and
``reference_context_ids`` (top level, or the first two in ``metadata``).

:func:`write_beir` writes a :class:`~rankbridge.GoldenSet` as such a folder and :func:`read_beir` reads it
back equal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rankbridge.errors import InputError, ParseError
from rankbridge.io._atomic import atomic_dir, atomic_write
from rankbridge.io._open import ENCODING, clip, decode_error, label_problem, parse_label
from rankbridge.io.jsonl import _json_default, iter_jsonl
from rankbridge.types import GoldenSet, Qrels, Query, _check_id

__all__ = [
    "read_beir",
    "read_beir_corpus",
    "read_beir_qrels",
    "read_beir_queries",
    "write_beir",
    "write_beir_qrels",
]


def _qrels_rows(fh: Iterable[str], src: str, path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """The judgments of a BEIR qrels TSV opened as ``fh`` (shared by the plain and the ``.gz`` reader)."""
    data: dict[str, dict[str, int]] = {}
    labels: dict[str, int] = {}  # label text -> label: a file holds a handful of distinct labels
    try:
        for lineno, line in enumerate(fh, 1):
            fields = line.rstrip("\r\n").split("\t")
            if not line.strip():
                continue
            if lineno == 1 and fields[0].strip().lower() in ("query-id", "query_id", "qid"):
                continue
            if len(fields) != 3:
                raise ParseError(
                    f"expected 3 tab-separated columns 'query-id corpus-id score', found {len(fields)}: "
                    f"{clip(line.rstrip())}",
                    source=src,
                    line=lineno,
                )
            qid, doc, label_text = (f.strip() for f in fields)
            if not qid or not doc:
                missing = "query id" if not qid else "corpus id"
                raise ParseError(
                    f"expected a {missing}, found an empty column: {clip(line.rstrip())}",
                    source=src,
                    line=lineno,
                )
            label = labels.get(label_text)
            if label is None:
                label = parse_label(label_text)
                if label is None:
                    problem = label_problem(label_text).replace("relevance label", "score")
                    raise ParseError(problem, source=src, line=lineno)
                labels[label_text] = label
            old = data.setdefault(qid, {}).get(doc)
            if old is not None and old != label:
                raise ParseError(
                    f"doc {clip(doc)} of query {clip(qid)} judged both {old} and {label}", source=src, line=lineno
                )
            data[qid][doc] = label
    except UnicodeDecodeError as exc:
        raise decode_error(path, exc) from None
    if not data:
        raise ParseError("no judgments found", source=src)
    return data


def read_beir_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read a BEIR ``qrels/<split>.tsv`` file."""
    src = str(path)
    try:
        fh = open(path, encoding=ENCODING, newline=None)
    except OSError as exc:
        raise ParseError(f"cannot open file: {exc.strerror}", source=src) from None
    with fh:
        data = _qrels_rows(fh, src, path)
    return Qrels._trusted(data, name=Path(path).stem)


def _entry_id(obj: Mapping[str, Any], what: str, src: str, lineno: int) -> str:
    """``obj["_id"]``, a non-empty string or an integer."""
    if "_id" not in obj or "text" not in obj:
        found = clip(", ".join(obj) or "none")
        raise ParseError(f"expected fields '_id' and 'text' (found fields: {found})", source=src, line=lineno)
    value = obj["_id"]
    if type(value) is str and value.strip():
        return value
    if type(value) is int:
        return str(value)
    raise ParseError(f"'_id': expected a {what} (a non-empty string), found {clip(value)}", source=src, line=lineno)


def _text(obj: Mapping[str, Any], key: str, src: str, lineno: int, *, optional: bool = False) -> str:
    value = obj.get(key)
    if type(value) is str:
        return value
    if value is None and optional:
        return ""
    raise ParseError(
        f"{key!r}: expected a string, found {'null' if value is None else type(value).__name__ + ' ' + clip(value)}",
        source=src,
        line=lineno,
    )


def query_from_json(obj: Mapping[str, Any], src: str, lineno: int) -> Query:
    """A :class:`~rankbridge.Query` from one ``queries.jsonl`` object (see the module docstring)."""
    qid = _entry_id(obj, "query id", src, lineno)
    text = _text(obj, "text", src, lineno)
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict):
        meta = {}
    # optional extras beside BEIR's fields: a category and a reference answer, top level or in metadata
    category = obj.get("category", meta.get("category"))
    reference = obj.get("reference", meta.get("reference", meta.get("answer")))
    context_ids = obj.get("reference_context_ids") or []
    if not isinstance(context_ids, list) or not all((type(c) is str and c) or (type(c) is int) for c in context_ids):
        raise ParseError(
            f"'reference_context_ids' must be a list of ids, found {clip(context_ids)}", source=src, line=lineno
        )
    return Query(
        qid,
        text,
        category=None if category is None else str(category),
        reference=None if reference is None else str(reference),
        reference_context_ids=tuple(str(c) for c in context_ids),
        metadata=meta,
    )


def doc_from_json(obj: Mapping[str, Any], src: str, lineno: int) -> tuple[str, dict[str, Any]]:
    """``(doc id, {"title", "text", "metadata", ...})`` from one ``corpus.jsonl`` object."""
    doc = _entry_id(obj, "doc id", src, lineno)
    text = _text(obj, "text", src, lineno)
    title = _text(obj, "title", src, lineno, optional=True)
    meta = obj.get("metadata") or {}
    extra = {k: v for k, v in obj.items() if k not in ("_id", "title", "text", "metadata")}
    return doc, {"title": title, "text": text, "metadata": meta, **extra}


def queries_from_lines(lines: Iterable[tuple[int, Mapping[str, Any]]], src: str) -> dict[str, Query]:
    """``{id: Query}`` from the ``(line number, object)`` pairs of a ``queries.jsonl`` file named ``src``."""
    out: dict[str, Query] = {}
    for lineno, obj in lines:
        query = query_from_json(obj, src, lineno)
        if query.id in out:
            raise ParseError(f"query id {clip(query.id)} appears twice", source=src, line=lineno)
        out[query.id] = query
    return out


def corpus_from_lines(lines: Iterable[tuple[int, Mapping[str, Any]]], src: str) -> dict[str, dict[str, Any]]:
    """``{doc_id: {"title", "text", "metadata", ...}}`` from the ``(line number, object)`` pairs of a corpus file."""
    out: dict[str, dict[str, Any]] = {}
    for lineno, obj in lines:
        doc, entry = doc_from_json(obj, src, lineno)
        if doc in out:
            raise ParseError(f"doc id {clip(doc)} appears twice", source=src, line=lineno)
        out[doc] = entry
    return out


def judged_queries(qrels: Qrels, queries: Mapping[str, Query], queries_file: str, qrels_src: str) -> list[Query]:
    """The queries the qrels judge, in the qrels' order: each must be in ``queries_file`` with a question.

    A judged query with a blank text is refused: a retriever asked "" scores it as noise.
    """
    unknown = [q for q in qrels if q not in queries]
    if unknown:
        raise ParseError(
            f"{len(unknown)} judged queries have no text in {queries_file} (e.g. {unknown[0]!r})", source=qrels_src
        )
    blank = [q for q in qrels if not queries[q].text.strip()]
    if blank:
        raise ParseError(
            f"{len(blank)} judged queries have a blank text in {queries_file} (e.g. {blank[0]!r}): expected the "
            "question",
            source=qrels_src,
        )
    return [queries[q] for q in qrels]


def read_beir_queries(path: str | os.PathLike[str]) -> dict[str, Query]:
    """Read ``queries.jsonl`` (``_id``, ``text``, optional ``metadata``) into ``{id: Query}``."""
    return queries_from_lines(iter_jsonl(path), str(path))


def read_beir_corpus(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Read ``corpus.jsonl`` into ``{doc_id: {"title", "text", "metadata"}}``."""
    return corpus_from_lines(iter_jsonl(path), str(path))


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
    golden = judged_queries(qrels, read_beir_queries(root / "queries.jsonl"), "queries.jsonl", str(qrels_path))
    corpus = read_beir_corpus(root / "corpus.jsonl") if load_corpus else None
    qrels.name = f"{root.name}/{split}"
    return GoldenSet(golden, qrels, corpus=corpus, name=root.name)


def _tsv_id(value: str, what: str, where: str) -> str:
    if not value or any(c in value for c in "\t\r\n") or value != value.strip():
        raise InputError(
            f"{where}: a {what} in a BEIR qrels file cannot be empty, hold tabs or line breaks, "
            f"or start or end with spaces; found {value!r}"
        )
    return value


def write_beir_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]], path: str | os.PathLike[str]) -> None:
    """Write a BEIR qrels TSV (header ``query-id corpus-id score``) atomically.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "test.tsv"
    >>> write_beir_qrels(Qrels({"q1": {"d1": 2}}), p)
    >>> p.read_text()
    'query-id\\tcorpus-id\\tscore\\nq1\\td1\\t2\\n'
    >>> read_beir_qrels(p).to_dict()
    {'q1': {'d1': 2}}
    """
    data = qrels if isinstance(qrels, Qrels) else Qrels(qrels)
    for qid, docs in data.items():
        _tsv_id(qid, "query id", f"qrels[{qid!r}]")
        for doc in docs:
            _tsv_id(doc, "doc id", f"qrels[{qid!r}][{doc!r}]")
    with atomic_write(path) as fh:
        _write_qrels_rows(fh, data, list(data))


def _write_qrels_rows(fh: Any, qrels: Qrels, order: list[str]) -> None:
    fh.write("query-id\tcorpus-id\tscore\n")
    for qid in order:
        for doc, label in qrels[qid].items():
            fh.write(f"{qid}\t{doc}\t{label}\n")


def _dumps(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, default=_json_default) + "\n"


def _beir_entries(folder: Path) -> list[str]:
    """The entries of ``folder`` that a BEIR writer did not make (so overwriting it would lose them)."""
    ours = {"corpus.jsonl", "queries.jsonl", "qrels"}
    foreign = [p.name for p in folder.iterdir() if p.name not in ours]
    qrels_dir = folder / "qrels"
    if qrels_dir.is_dir():
        foreign += [f"qrels/{p.name}" for p in qrels_dir.iterdir() if p.suffix != ".tsv"]
    elif qrels_dir.exists():
        foreign.append("qrels")
    return sorted(foreign)


def write_beir(
    golden: GoldenSet, folder: str | os.PathLike[str], *, split: str = "test", overwrite: bool = False
) -> None:
    """Write a golden set as a BEIR folder that :func:`read_beir` reads back equal.

    Writes ``corpus.jsonl`` (when the golden set has a corpus), ``queries.jsonl`` and
    ``qrels/<split>.tsv``. Each query's category, reference answer and reference context ids are written
    beside BEIR's fields. The folder is built beside the target and renamed into place, so a failure
    leaves nothing half-written.

    Parameters
    ----------
    golden:
        The golden set. Every judged query must be one of its queries.
    folder:
        The folder to create. Read back with ``read_beir(folder, split=split)``, whose golden set is named
        after the folder.
    split:
        The qrels file's name (``qrels/<split>.tsv``).
    overwrite:
        Replace a non-empty folder. Only a folder that holds nothing but BEIR files (``corpus.jsonl``,
        ``queries.jsonl``, ``qrels/*.tsv``) is replaced; anything else is refused.

    Notes
    -----
    ``read_beir`` keeps only the queries judged in the split, as BEIR evaluates them: a query without
    judgments is written to ``queries.jsonl`` but not read back. Documents read back with ``title`` ``""``
    and ``metadata`` ``{}`` filled in when they had none. A golden set without a corpus is written
    without ``corpus.jsonl``: read it back with ``read_beir(folder, load_corpus=False)``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> golden = GoldenSet(
    ...     [Query("q1", "what causes scurvy?", category="medical")],
    ...     Qrels({"q1": {"d1": 1}}),
    ...     corpus={"d1": {"title": "Scurvy", "text": "Lack of vitamin C.", "metadata": {}}},
    ...     name="toy",
    ... )
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "toy"
    >>> write_beir(golden, folder)
    >>> sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    ['corpus.jsonl', 'qrels', 'qrels/test.tsv', 'queries.jsonl']
    >>> read_beir(folder) == golden
    True
    """
    if not isinstance(golden, GoldenSet):
        raise InputError(f"write_beir: expected a GoldenSet, found {type(golden).__name__}")
    if not split or any(c in split for c in "/\\\0") or split.startswith("."):
        raise InputError(f"write_beir: split must be a plain file name such as 'test'. Got {split!r} instead.")
    known = {q.id for q in golden.queries}
    unknown = [q for q in golden.qrels if q not in known]
    if unknown:
        raise InputError(
            f"write_beir: golden set {golden.name!r} judges {len(unknown)} queries it has no text for "
            f"(e.g. {unknown[0]!r}); read_beir would refuse the folder"
        )
    for qid, docs in golden.qrels.items():
        _tsv_id(qid, "query id", f"qrels[{qid!r}]")
        for doc in docs:
            _tsv_id(doc, "doc id", f"qrels[{qid!r}][{doc!r}]")
    query_lines = []
    for i, q in enumerate(golden.queries):
        obj: dict[str, Any] = {"_id": q.id, "text": q.text}
        meta = dict(q.metadata)
        if meta:
            obj["metadata"] = meta
        # read_beir falls back on metadata["category"/"reference"/"answer"]: write None to stop that
        if q.category is not None or "category" in meta:
            obj["category"] = q.category
        if q.reference is not None or "reference" in meta or "answer" in meta:
            obj["reference"] = q.reference
        if q.reference_context_ids:
            obj["reference_context_ids"] = list(q.reference_context_ids)
        try:
            query_lines.append(_dumps(obj))
        except (TypeError, ValueError) as exc:
            raise InputError(f"write_beir: query {i} ({q.id!r}) cannot be written as JSON: {exc}") from None
    corpus_lines = []
    for doc_id, entry in (golden.corpus or {}).items():
        where = f"corpus[{doc_id!r}]"
        if not isinstance(entry, Mapping) or "text" not in entry:
            if isinstance(entry, Mapping):
                found = f"fields {', '.join(map(str, entry)) or 'none'}"
            else:
                found = type(entry).__name__
            raise InputError(f"write_beir: {where}: expected a mapping with a 'text' field, found {found}")
        doc_obj = {"_id": _check_id(doc_id, "doc id", where), **{k: v for k, v in entry.items() if k != "_id"}}
        try:
            corpus_lines.append(_dumps(doc_obj))
        except (TypeError, ValueError) as exc:
            raise InputError(f"write_beir: {where} cannot be written as JSON: {exc}") from None
    with atomic_dir(folder, overwrite=overwrite, replaceable=_beir_entries) as tmp:
        (tmp / "qrels").mkdir()
        with open(tmp / "queries.jsonl", "w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(query_lines)
        if golden.corpus is not None:
            with open(tmp / "corpus.jsonl", "w", encoding="utf-8", newline="\n") as fh:
                fh.writelines(corpus_lines)
        order = [q.id for q in golden.queries if q.id in golden.qrels]
        with open(tmp / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="\n") as fh:
            _write_qrels_rows(fh, golden.qrels, order)
