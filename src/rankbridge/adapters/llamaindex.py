"""Adapter for LlamaIndex: any ``llama_index.core`` retriever, index or query engine.

``llama_index`` is imported when an adapter is built, never when :mod:`rankbridge` is imported.

Examples
--------
>>> from rankbridge.adapters.llamaindex import LlamaIndexRetriever
>>> LlamaIndexRetriever.framework
'LlamaIndex'

With llama-index-core installed (not run here)::

    from llama_index.retrievers.bm25 import BM25Retriever
    r = LlamaIndexRetriever(BM25Retriever.from_defaults(nodes=nodes), id_from="ref_doc_id")
    hits = r.retrieve("what causes scurvy?", k=10)
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import Any

from rankbridge.adapters._base import AdapterBase
from rankbridge.errors import InputError, MissingExtraError
from rankbridge.retriever import IdSpec

__all__ = ["LlamaIndexRetriever"]


def _import_base() -> Any:
    try:
        from llama_index.core.base.base_retriever import BaseRetriever
    except ImportError as exc:
        raise MissingExtraError("llama-index-core", "llamaindex", "LlamaIndexRetriever") from exc
    return BaseRetriever


class LlamaIndexRetriever(AdapterBase):
    """A LlamaIndex retriever, index (``as_retriever``) or query engine (its ``.retriever``), as a retriever.

    Parameters
    ----------
    obj:
        A ``llama_index.core`` ``BaseRetriever``; an index (anything with ``as_retriever``, called with
        ``similarity_top_k=k``); or a query engine with a ``retriever`` attribute.
    id_from:
        Where each node's doc id comes from: ``"id"`` (``node.node_id``, the default), ``"ref_doc_id"``
        (the source document of a chunk), ``"metadata:KEY"``, a callable on the node, or
        ``"content_hash"``; a list is tried in order (see :mod:`rankbridge.retriever`).
    doc_map:
        Chunk id -> document id, for qrels that judge documents (first occurrence wins).
    keep_text:
        Keep node texts (RAGAS needs them).
    name:
        The run name; defaults to the retriever's class name.

    Notes
    -----
    ``k`` is honoured by the retriever's ``similarity_top_k`` when it has one: the adapter works on a
    shallow copy with ``similarity_top_k=k`` (cached per k), never on the object you passed. Retrievers
    without it are called as they are and their list is cut at ``k``. Calls go through ``retrieve`` and
    ``aretrieve``, so LlamaIndex instrumentation and callbacks see them; the runner uses ``aretrieve``
    only when the class implements ``_aretrieve`` itself (otherwise it would block the event loop).
    """

    framework = "LlamaIndex"

    def __init__(
        self,
        obj: Any,
        *,
        id_from: IdSpec | None = None,
        doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
        keep_text: bool = True,
        name: str | None = None,
    ) -> None:
        base = _import_base()
        self._factory: Callable[[int], Any] | None = None
        if isinstance(obj, base):
            retriever = obj
        elif callable(getattr(obj, "as_retriever", None)):
            index = obj
            self._factory = lambda k: index.as_retriever(similarity_top_k=k)
            retriever = index.as_retriever()
        elif isinstance(getattr(obj, "retriever", None), base):
            retriever = obj.retriever
        else:
            raise InputError(
                "LlamaIndexRetriever: expected a llama_index BaseRetriever, an index with as_retriever(), or a "
                f"query engine with a .retriever, got {type(obj).__name__}"
            )
        super().__init__(id_from=id_from, doc_map=doc_map, keep_text=keep_text, name=name or type(retriever).__name__)
        self.obj = obj
        self.retriever = retriever
        self.native_async = type(retriever)._aretrieve is not base._aretrieve
        self._by_k: dict[int, Any] = {}
        self._lock = threading.Lock()

    def for_k(self, k: int) -> Any:
        """The LlamaIndex retriever used for a given ``k`` (a cached copy when ``k`` differs)."""
        r = self._by_k.get(k)
        if r is not None:
            return r
        with self._lock:
            if k in self._by_k:
                return self._by_k[k]
            if self._factory is not None:
                r = self._factory(k)
            elif isinstance(getattr(self.retriever, "similarity_top_k", None), int):
                if self.retriever.similarity_top_k == k:
                    r = self.retriever
                else:
                    r = copy.copy(self.retriever)
                    r.similarity_top_k = k
            else:
                r = self.retriever
            self._by_k[k] = r
            return r

    def _fetch(self, query: str, k: int) -> Any:
        return self.for_k(k).retrieve(query)

    async def _afetch(self, query: str, k: int) -> Any:
        return await self.for_k(k).aretrieve(query)
