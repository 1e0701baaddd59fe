"""Golden sets from `ir_datasets <https://ir-datasets.com>`_ dataset objects.

Anything with ``queries_iter()`` and ``qrels_iter()`` (and ``docs_iter()`` for the corpus) is read: an
``ir_datasets.load(...)`` result, a local ``ir_datasets.datasets.base.Dataset`` built over your own files,
or your own object with those methods. ``ir_datasets`` itself is imported only when a dataset is given by
name (``golden_from_ir_datasets("beir/scifact/test")``, which downloads on first use, as ir_datasets does).

Queries use ``default_text()`` (ir_datasets' choice of field, e.g. a TREC topic's title) unless
``query_field=`` names one (``"description"``); documents keep ``text`` and ``title`` and put their other
fields in ``metadata``. Only judged queries are kept, as BEIR evaluates them.

Examples
--------
>>> from collections import namedtuple
>>> Q, R, D = namedtuple("Q", "query_id text"), namedtuple("R", "query_id doc_id relevance iteration"), \\
...     namedtuple("D", "doc_id text")
>>> class Local:
...     def queries_iter(self): return iter([Q("1", "what causes scurvy?"), Q("2", "unjudged")])
...     def qrels_iter(self): return iter([R("1", "d1", 2, "0")])
...     def docs_iter(self): return iter([D("d1", "A lack of vitamin C.")])
>>> golden = golden_from_ir_datasets(Local(), name="local")
>>> golden.texts(), golden.qrels.to_dict(), golden.corpus["d1"]["text"]
({'1': 'what causes scurvy?'}, {'1': {'d1': 2}}, 'A lack of vitamin C.')
"""

from __future__ import annotations

from typing import Any

from rankbridge.errors import InputError, MissingExtraError
from rankbridge.io.tables import as_id, as_label
from rankbridge.types import GoldenSet, Qrels, Query

__all__ = ["golden_from_ir_datasets"]


def _fields(item: Any) -> tuple[str, ...]:
    return tuple(getattr(item, "_fields", ()) or ())


def _item_id(item: Any, field: str, what: str, where: str) -> str:
    """``item.<field>`` as an id (``query_id`` of a query, ``doc_id`` of a doc); InputError naming ``where``."""
    try:
        return as_id(getattr(item, field))
    except (AttributeError, InputError) as exc:
        raise InputError(f"{where}: expected {what} with a {field}, found {item!r} ({exc})") from None


def _dataset_name(dataset: Any) -> str | None:
    try:
        name = dataset.dataset_id()
    except Exception:  # a hand-built Dataset has no metadata component
        return None
    return name if isinstance(name, str) else None


def golden_from_ir_datasets(
    dataset: Any,
    *,
    load_corpus: bool = True,
    query_field: str | None = None,
    name: str | None = None,
) -> GoldenSet:
    """A golden set from an ``ir_datasets`` dataset (queries, qrels and, optionally, docs).

    Parameters
    ----------
    dataset:
        An object with ``queries_iter()`` and ``qrels_iter()`` (``docs_iter()`` when ``load_corpus``), or
        an ir_datasets name for ``ir_datasets.load``.
    load_corpus:
        Read ``docs_iter()`` into ``golden.corpus`` (skipped when the dataset has no docs).
    query_field:
        The query field holding the question (default: ``default_text()``, else ``text``).
    name:
        The golden set's name (default: the dataset id, else ``"ir_datasets"``).
    """
    if isinstance(dataset, str):
        try:
            import ir_datasets  # type: ignore[import-untyped]
        except ImportError:
            raise MissingExtraError("ir_datasets", "ir-datasets", "Loading an ir_datasets dataset by name") from None
        name = name or dataset
        dataset = ir_datasets.load(dataset)
    for method in ("queries_iter", "qrels_iter"):
        if not callable(getattr(dataset, method, None)):
            raise InputError(
                f"expected an ir_datasets dataset with queries_iter() and qrels_iter(), found "
                f"{type(dataset).__name__} without {method}()"
            )
    name = name or _dataset_name(dataset) or "ir_datasets"

    data: dict[str, dict[str, int]] = {}
    for i, qrel in enumerate(dataset.qrels_iter()):
        where = f"{name}: qrels_iter() item {i}"
        try:
            qid, doc = as_id(qrel.query_id), as_id(qrel.doc_id)
            label = as_label(qrel.relevance)
        except AttributeError:
            raise InputError(f"{where}: expected a qrel with query_id, doc_id and relevance, found {qrel!r}") from None
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        old = data.setdefault(qid, {}).get(doc)
        if old is not None and old != label:
            raise InputError(f"{where}: doc {doc!r} of query {qid!r} judged both {old} and {label}")
        data[qid][doc] = label
    if not data:
        raise InputError(f"{name}: expected judgments, found an empty qrels_iter()")

    texts: dict[str, Query] = {}
    for i, q in enumerate(dataset.queries_iter()):
        where = f"{name}: queries_iter() item {i}"
        qid = _item_id(q, "query_id", "a query", where)
        if qid not in data:
            continue
        if query_field is not None:
            if not hasattr(q, query_field):
                raise InputError(
                    f"{where}: query_field={query_field!r} is not a field of {type(q).__name__}; "
                    f"fields: {', '.join(_fields(q)) or 'unknown'}"
                )
            text = getattr(q, query_field)
        elif callable(getattr(q, "default_text", None)):
            text = q.default_text()
        else:
            text = getattr(q, "text", None)
        if not isinstance(text, str) or not text.strip():
            field = query_field or "default_text()"
            raise InputError(f"{where} (query {qid!r}): expected the question text in {field}, found {text!r}")
        if qid in texts:  # a second text would silently replace the first
            if texts[qid].text == text:
                continue
            raise InputError(
                f"{where}: query id {qid!r} appears twice with different texts ({texts[qid].text!r}, then {text!r})"
            )
        meta = {f: getattr(q, f) for f in _fields(q) if f not in ("query_id", query_field or "text")}
        texts[qid] = Query(
            qid, text, reference_context_ids=tuple(d for d, v in data[qid].items() if v > 0), metadata=meta
        )
    no_text = [q for q in data if q not in texts]
    if no_text:
        raise InputError(f"{name}: {len(no_text)} judged queries are not in queries_iter() (e.g. {no_text[0]!r})")

    corpus: dict[str, dict[str, Any]] | None = None
    if load_corpus and callable(getattr(dataset, "docs_iter", None)):
        has_docs = getattr(dataset, "has_docs", None)
        if not callable(has_docs) or has_docs():
            corpus = {}
            for i, d in enumerate(dataset.docs_iter()):
                where = f"{name}: docs_iter() item {i}"
                doc_id = _item_id(d, "doc_id", "a doc", where)
                text = getattr(d, "text", None)
                if not isinstance(text, str) and callable(getattr(d, "default_text", None)):
                    text = d.default_text()
                if not isinstance(text, str):
                    raise InputError(f"{where} (doc {doc_id!r}): expected the document text, found {text!r}")
                if doc_id in corpus:
                    raise InputError(f"{where}: doc id {doc_id!r} appears twice")
                title = getattr(d, "title", None)
                meta = {f: getattr(d, f) for f in _fields(d) if f not in ("doc_id", "text", "title")}
                corpus[doc_id] = {"title": title if isinstance(title, str) else "", "text": text, "metadata": meta}
    qrels = Qrels._trusted(data, name=name)
    return GoldenSet([texts[q] for q in data], qrels, corpus=corpus, name=name)
