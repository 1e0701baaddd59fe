"""Adapter for LangChain: any ``langchain_core`` retriever or vector store.

``langchain_core`` is imported when an adapter is built, never when :mod:`rankbridge` is imported.

Examples
--------
>>> from rankbridge.adapters.langchain import LangChainRetriever
>>> LangChainRetriever.framework
'LangChain'

With langchain-core installed (not run here)::

    from langchain_core.vectorstores import InMemoryVectorStore
    r = LangChainRetriever(store)                       # scores kept via similarity_search_with_score
    r = LangChainRetriever(bm25, id_from="metadata:doc_id")
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from rankbridge.adapters._base import AdapterBase
from rankbridge.errors import InputError, MissingExtraError
from rankbridge.retriever import IdSpec

__all__ = ["LangChainRetriever"]


def _import_bases() -> tuple[Any, Any, Any]:
    try:
        from langchain_core.retrievers import BaseRetriever
        from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
    except ImportError as exc:
        raise MissingExtraError("langchain-core", "langchain", "LangChainRetriever") from exc
    return BaseRetriever, VectorStore, VectorStoreRetriever


class LangChainRetriever(AdapterBase):
    """A LangChain retriever or vector store as a retriever.

    Parameters
    ----------
    obj:
        A ``langchain_core`` ``BaseRetriever`` (called through ``invoke`` / ``ainvoke``), or a
        ``VectorStore`` (called through ``similarity_search_with_score``, so scores are kept). A
        ``VectorStoreRetriever`` with ``search_type="similarity"`` is read through its store, with its
        ``search_kwargs``, unless ``scores=False``.
    id_from:
        Where each document's id comes from: ``"id"`` (``Document.id``, the default; often ``None`` from
        vector stores), ``"metadata:KEY"``, a callable on the ``Document``, or ``"content_hash"``; a list
        is tried in order (see :mod:`rankbridge.retriever`).
    doc_map:
        Chunk id -> document id, for qrels that judge documents (first occurrence wins).
    keep_text:
        Keep page contents (RAGAS needs them).
    scores:
        Read a similarity ``VectorStoreRetriever`` through its store to keep scores.
    name:
        The run name; defaults to the class name.

    Notes
    -----
    LangChain documents carry no score; hits from a plain retriever have ``score=None``. ``k`` is passed
    per call to vector stores; a retriever with a ``k`` field (``BM25Retriever``) or ``search_kwargs`` is
    used through a copy with that k (cached per k), never changed in place; any other retriever is called
    as it is and its list cut at ``k``.
    """

    framework = "LangChain"

    def __init__(
        self,
        obj: Any,
        *,
        id_from: IdSpec | None = None,
        doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
        keep_text: bool = True,
        scores: bool = True,
        name: str | None = None,
    ) -> None:
        base_retriever, vector_store, vs_retriever = _import_bases()
        self.store: Any = None
        self.retriever: Any = None
        self._search_kwargs: dict[str, Any] = {}
        if isinstance(obj, vector_store):
            self.store = obj
        elif isinstance(obj, vs_retriever) and scores and obj.search_type == "similarity":
            self.store = obj.vectorstore
            self._search_kwargs = {key: v for key, v in obj.search_kwargs.items() if key != "k"}
        elif isinstance(obj, base_retriever):
            self.retriever = obj
        else:
            raise InputError(
                f"LangChainRetriever: expected a langchain_core BaseRetriever or VectorStore, got {type(obj).__name__}"
            )
        super().__init__(id_from=id_from, doc_map=doc_map, keep_text=keep_text, name=name or type(obj).__name__)
        self.obj = obj
        if self.store is not None:
            self.native_async = (
                type(self.store).asimilarity_search_with_score is not vector_store.asimilarity_search_with_score
            )
        else:
            self.native_async = (
                type(self.retriever)._aget_relevant_documents is not base_retriever._aget_relevant_documents
            )
        self._vs_retriever = vs_retriever
        self._by_k: dict[int, Any] = {}
        self._lock = threading.Lock()

    def for_k(self, k: int) -> Any:
        """The LangChain retriever used for a given ``k`` (a cached copy when ``k`` differs)."""
        r = self._by_k.get(k)
        if r is not None:
            return r
        with self._lock:
            r = self.retriever
            if isinstance(r, self._vs_retriever):
                if r.search_kwargs.get("k") != k:
                    r = r.model_copy(update={"search_kwargs": {**r.search_kwargs, "k": k}})
            elif "k" in type(r).model_fields and getattr(r, "k", None) != k:
                r = r.model_copy(update={"k": k})
            self._by_k[k] = r
            return r

    def _fetch(self, query: str, k: int) -> Any:
        if self.store is not None:
            return self.store.similarity_search_with_score(query, k=k, **self._search_kwargs)
        return self.for_k(k).invoke(query)

    async def _afetch(self, query: str, k: int) -> Any:
        if self.store is not None:
            return await self.store.asimilarity_search_with_score(query, k=k, **self._search_kwargs)
        return await self.for_k(k).ainvoke(query)
