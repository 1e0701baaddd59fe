"""Adapter for LangChain: any ``langchain_core`` retriever or vector store.

``langchain_core`` is imported when an adapter is built, never when :mod:`rankbridge` is imported.

Examples
--------
>>> from rankbridge.frameworks.langchain.adapter import LangChainRetriever
>>> LangChainRetriever.framework
'LangChain'

With langchain-core installed (not run here)::

    from langchain_core.vectorstores import InMemoryVectorStore
    r = LangChainRetriever(store)                       # scores kept via similarity_search_with_score
    r = LangChainRetriever(bm25, id_from="metadata:doc_id")

    # a compression retriever: scored on the compressed list, the base retriever's list kept as "retrieved"
    r = LangChainRetriever(ContextualCompressionRetriever(base_compressor=f, base_retriever=bm25))
    # an ensemble: scored on the fused list, each member's list kept as "retriever:0", "retriever:1", ...
    r = LangChainRetriever(EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5]))
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from rankbridge.errors import InputError, MissingExtraError
from rankbridge.frameworks.base import DEFAULT_K, AdapterBase, CopiesByK, Staged
from rankbridge.retriever import IdSpec

__all__ = ["LangChainRetriever"]


def _import_bases() -> tuple[Any, Any, Any]:
    try:
        # lazy: the framework, only when an adapter is built (import rankbridge stays framework-free)
        from langchain_core.retrievers import BaseRetriever
        from langchain_core.vectorstores import VectorStore, VectorStoreRetriever
    except ImportError as exc:
        raise MissingExtraError("langchain-core", "langchain", "LangChainRetriever") from exc
    return BaseRetriever, VectorStore, VectorStoreRetriever


#: The stage name of a ``ContextualCompressionRetriever``'s base retriever list (before compression).
RETRIEVED = "retrieved"
#: The stage name of ``EnsembleRetriever.retrievers[i]``'s list (before fusion): ``"retriever:0"``, ...
ENSEMBLE_MEMBER = "retriever:{i}"
#: ``VectorStoreRetriever`` passes ``search_kwargs`` to ``similarity_search``, whose default k is 4.
VECTOR_STORE_RETRIEVER_K = 4
#: The candidates ``max_marginal_relevance_search`` fetches when ``search_kwargs`` has no ``fetch_k``
#: (langchain-core's default: 20 for its k of 4).
MMR_FETCH_K = 20

# ``langchain_classic`` (and ``langchain`` < 1.0) hold the two wrappers; they are recognised by class name
# and module, so this module never imports them and works without them installed.
_WRAPPER_MODULES = ("langchain_classic.", "langchain.")


def _kind(obj: Any) -> str | None:
    """``"compression"`` (a ContextualCompressionRetriever), ``"ensemble"`` (an EnsembleRetriever) or None."""
    for cls in type(obj).__mro__:
        if not (cls.__module__ or "").startswith(_WRAPPER_MODULES):
            continue
        if cls.__name__ == "ContextualCompressionRetriever" and hasattr(obj, "base_retriever"):
            return "compression"
        if cls.__name__ == "EnsembleRetriever" and isinstance(getattr(obj, "retrievers", None), list):
            return "ensemble"
    return None


def _field_k(r: Any) -> int | None:
    if "k" not in getattr(type(r), "model_fields", {}):
        return None
    k = getattr(r, "k", None)
    return k if isinstance(k, int) and not isinstance(k, bool) else None


def _mmr_fetch_k(r: Any, k: int) -> dict[str, int]:
    """``{"fetch_k": ...}`` for an MMR retriever set to ``k``, when its candidates are fewer than ``k``.

    MMR picks its ``k`` among ``fetch_k`` candidates, so a ``k`` above ``fetch_k`` would give lists ``fetch_k``
    deep. The app's ratio of candidates to results is kept (``fetch_k=10`` for ``k=4`` -> 75 for 30), so the
    lists are as diverse as the app makes them; a ``fetch_k`` already ``>= k`` is the app's and is kept.
    """
    if r.search_type != "mmr":
        return {}
    fetch_k = r.search_kwargs.get("fetch_k", MMR_FETCH_K)
    app_k = r.search_kwargs.get("k", VECTOR_STORE_RETRIEVER_K)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (fetch_k, app_k)) or fetch_k >= k:
        return {}
    return {"fetch_k": max(k, -(-k * fetch_k // app_k))}


@functools.cache
def _collector_class() -> type:
    # lazy: the framework, only when a wrapper retriever is called
    from langchain_core.callbacks import BaseCallbackHandler

    class _StageCollector(BaseCallbackHandler):  # type: ignore[misc]
        """Records every retriever (and runnable) run under one call: its parent, tags and output."""

        run_inline = True  # called in the event loop's thread, in order, also from async managers

        def __init__(self) -> None:
            self.runs: dict[Any, dict[str, Any]] = {}
            self.root: Any = None

        def _start(self, run_id: Any, parent_run_id: Any, tags: Any) -> None:
            node: dict[str, Any] = {"tags": list(tags or ()), "children": [], "docs": None}
            self.runs[run_id] = node
            parent = self.runs.get(parent_run_id)
            if parent is not None:
                parent["children"].append(run_id)
            elif self.root is None:
                self.root = run_id

        def _end(self, run_id: Any, output: Any) -> None:
            node = self.runs.get(run_id)
            if node is not None and isinstance(output, list):
                node["docs"] = list(output)  # a copy: the wrapper may build on the list it got

        def on_retriever_start(
            self, serialized: Any, query: str, *, run_id: Any, parent_run_id: Any = None, tags: Any = None, **kw: Any
        ) -> None:
            self._start(run_id, parent_run_id, tags)

        def on_retriever_end(self, documents: Any, *, run_id: Any, **kw: Any) -> None:
            self._end(run_id, documents)

        def on_chain_start(
            self, serialized: Any, inputs: Any, *, run_id: Any, parent_run_id: Any = None, tags: Any = None, **kw: Any
        ) -> None:
            self._start(run_id, parent_run_id, tags)  # a runnable used as a member (RetrieverLike)

        def on_chain_end(self, outputs: Any, *, run_id: Any, **kw: Any) -> None:
            self._end(run_id, outputs)

    return _StageCollector


def _stages(obj: Any, runs: Mapping[Any, dict[str, Any]], run_id: Any, prefix: str = "") -> dict[str, Any]:
    """The inner lists of one wrapper run, named by stage; nested wrappers' stages are joined with ``/``."""
    node = runs.get(run_id)
    kind = _kind(obj)
    if node is None or kind is None:
        return {}
    children = node["children"]
    pairs: list[tuple[str, Any, Any]] = []
    if kind == "compression" and children:
        pairs.append((RETRIEVED, children[0], obj.base_retriever))  # the compressor runs after it
    elif kind == "ensemble":
        for i, member in enumerate(obj.retrievers):
            tag = f"retriever_{i + 1}"  # the tag EnsembleRetriever gives each member's run
            child = next((c for c in children if tag in runs[c]["tags"]), None)
            if child is None and len(children) == len(obj.retrievers):
                child = children[i]
            if child is not None:
                pairs.append((ENSEMBLE_MEMBER.format(i=i), child, member))
    out: dict[str, Any] = {}
    for name, child, member in pairs:
        if runs[child]["docs"] is not None:
            out[prefix + name] = runs[child]["docs"]
            out.update(_stages(member, runs, child, prefix + name + "/"))
    return out


class LangChainRetriever(AdapterBase):
    """A LangChain retriever or vector store as a retriever.

    Parameters
    ----------
    obj:
        A ``langchain_core`` ``BaseRetriever`` (called through ``invoke`` / ``ainvoke``), or a
        ``VectorStore`` (called through ``similarity_search_with_score``, so scores are kept). A
        ``VectorStoreRetriever`` with ``search_type="similarity"`` is read through its store, with its
        ``search_kwargs``, unless ``scores=False``. A ``ContextualCompressionRetriever`` or
        ``EnsembleRetriever`` (``langchain-classic``) is scored on its own output and keeps its inner
        lists as stages (see Notes).
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

    Attributes
    ----------
    configured_k:
        The number of documents the object returns as the app built it: a ``k`` field (``BM25Retriever``),
        ``search_kwargs["k"]`` of a ``VectorStoreRetriever`` (4 when unset, LangChain's default), the base
        retriever's for a ``ContextualCompressionRetriever`` (the compressed list has at most that many),
        the sum of the members' for an ``EnsembleRetriever`` (the most its fused list can hold; ``None``
        when a member's is unknown); ``None`` for a bare ``VectorStore`` and anything else.

    Notes
    -----
    **Stages.** A wrapper retriever is scored on the list it returns, the one the app hands on, and the
    lists inside it are kept from the same call (each inner retriever runs once):

    - ``ContextualCompressionRetriever``: final = the compressed list; ``"retrieved"`` = what
      ``base_retriever`` returned, before the compressor.
    - ``EnsembleRetriever``: final = the fused (weighted reciprocal rank) list; ``"retriever:0"``,
      ``"retriever:1"``, ... = the list of ``retrievers[0]``, ``retrievers[1]``, ... before fusion.
    - Nested wrappers join names with ``/``: ``"retriever:1/retrieved"`` is the base list of a compression
      retriever that is the ensemble's second member.

    The inner lists are read from LangChain's callback events (``on_retriever_end`` of the inner runs),
    through one handler added to the call's ``callbacks``: the wrapper is invoked as the app invokes it, and
    tracing and the app's own callbacks see the same runs. An inner runnable that emits no retriever or
    chain events leaves its stage out.

    **k.** ``k=None`` calls the object as the app configured it (no copy, no cut); a bare ``VectorStore``
    has no such setting and gets ``DEFAULT_K`` (10). An explicit ``k`` is passed per call to vector stores;
    a retriever with a ``k`` field or ``search_kwargs`` is used through a copy with that k (cached per k),
    never changed in place; for a wrapper, the copy is of its inner retrievers (each ensemble member
    returns k, the fused list is cut at k). Any other retriever is called as it is and its list cut at
    ``k``. An MMR ``VectorStoreRetriever`` whose ``fetch_k`` is below ``k`` gets a ``fetch_k`` in the app's
    ratio of candidates to results on the copy (else MMR could return only ``fetch_k``). LangChain
    documents carry no score; hits from a plain retriever have ``score=None``.
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
        self._vs_retriever = vs_retriever
        self.store: Any = None
        self.retriever: Any = None
        self._search_kwargs: dict[str, Any] = {}
        if isinstance(obj, vector_store):
            self.store = obj
            self.configured_k = None
        elif isinstance(obj, vs_retriever) and scores and obj.search_type == "similarity":
            self.store = obj.vectorstore
            self._search_kwargs = {key: v for key, v in obj.search_kwargs.items() if key != "k"}
            self.configured_k = self._configured_k(obj)
        elif isinstance(obj, base_retriever):
            self.retriever = obj
            self.configured_k = self._configured_k(obj)
        else:
            raise InputError(
                f"LangChainRetriever: expected a langchain_core BaseRetriever or VectorStore, got {type(obj).__name__}"
            )
        super().__init__(id_from=id_from, doc_map=doc_map, keep_text=keep_text, name=name or type(obj).__name__)
        self.obj = obj
        self._staged = self.retriever is not None and _kind(self.retriever) is not None
        if self.store is not None:
            self.native_async = (
                type(self.store).asimilarity_search_with_score is not vector_store.asimilarity_search_with_score
            )
        else:
            self.native_async = (
                type(self.retriever)._aget_relevant_documents is not base_retriever._aget_relevant_documents
            )
        self._copies = CopiesByK()

    def _configured_k(self, r: Any) -> int | None:
        if isinstance(r, self._vs_retriever):
            k = r.search_kwargs.get("k", VECTOR_STORE_RETRIEVER_K)
            return k if isinstance(k, int) and not isinstance(k, bool) else None
        if _kind(r) == "compression":
            return self._configured_k(r.base_retriever)
        if _kind(r) == "ensemble":
            ks = [self._configured_k(m) for m in r.retrievers]
            return None if not ks or None in ks else sum(k for k in ks if k is not None)
        return _field_k(r)

    def _retriever_for(self, k: int) -> Any:
        """The app's retriever set up for ``k`` (see :meth:`_with_k`)."""
        return self._with_k(self.retriever, k)

    def _with_k(self, r: Any, k: int) -> Any:
        """``r`` set up to return ``k`` documents: ``r`` itself, or a copy (its inner retrievers copied)."""
        if isinstance(r, self._vs_retriever):
            if r.search_kwargs.get("k") == k:
                return r
            return r.model_copy(update={"search_kwargs": {**r.search_kwargs, **_mmr_fetch_k(r, k), "k": k}})
        kind = _kind(r)
        if kind == "compression":
            inner = self._with_k(r.base_retriever, k)
            return r if inner is r.base_retriever else r.model_copy(update={"base_retriever": inner})
        if kind == "ensemble":
            members = [self._with_k(m, k) for m in r.retrievers]
            same = all(a is b for a, b in zip(members, r.retrievers, strict=True))
            return r if same else r.model_copy(update={"retrievers": members})
        if "k" in getattr(type(r), "model_fields", {}) and getattr(r, "k", None) != k:
            return r.model_copy(update={"k": k})
        return r

    def k_cap(self, k: int) -> str | None:
        """The retriever's own top-k when ``k`` does not reach it (no ``k`` field or ``search_kwargs``, here or in
        a wrapper's members); ``None`` when ``k`` was passed to the store or set on the retriever."""
        if self.store is not None or self._reaches(self.retriever):
            return None
        return (
            f"{type(self.retriever).__name__} has no k that rankbridge can set (a k field, "
            f"search_kwargs={{'k': ...}}), so k={k} does not reach it: its own top-k caps the lists; build it to "
            f"return at least {k}"
        )

    def _reaches(self, r: Any) -> bool:
        """Whether :meth:`_with_k` sets ``r``'s depth (for a wrapper: every inner retriever's)."""
        kind = _kind(r)
        if kind == "compression":
            return self._reaches(r.base_retriever)
        if kind == "ensemble":
            return all(self._reaches(m) for m in r.retrievers)
        return isinstance(r, self._vs_retriever) or "k" in getattr(type(r), "model_fields", {})

    def for_k(self, k: int | None) -> Any:
        """The LangChain retriever used for a given ``k`` (a cached copy when ``k`` differs).

        ``k=None`` is the retriever as the app configured it.
        """
        return self.retriever if k is None else self._copies.get(k, self._retriever_for)

    def depth(self, k: int | None) -> int | None:
        """``k``, else the configured k; a bare vector store is asked for ``DEFAULT_K``."""
        return self._store_k(k) if self.store is not None else super().depth(k)

    def _store_k(self, k: int | None) -> int:
        if k is not None:
            return k
        return self.configured_k if self.configured_k is not None else DEFAULT_K

    def _staged_result(self, retriever: Any, docs: Any, collector: Any) -> Staged:
        return Staged(final=docs, stages=_stages(retriever, collector.runs, collector.root))

    def _fetch(self, query: str, k: int | None) -> Any:
        if self.store is not None:
            return self.store.similarity_search_with_score(query, k=self._store_k(k), **self._search_kwargs)
        r = self.for_k(k)
        if not self._staged:
            return r.invoke(query)
        collector = _collector_class()()
        docs = r.invoke(query, config={"callbacks": [collector]})
        return self._staged_result(r, docs, collector)

    async def _afetch(self, query: str, k: int | None) -> Any:
        if self.store is not None:
            return await self.store.asimilarity_search_with_score(query, k=self._store_k(k), **self._search_kwargs)
        r = self.for_k(k)
        if not self._staged:
            return await r.ainvoke(query)
        collector = _collector_class()()
        docs = await r.ainvoke(query, config={"callbacks": [collector]})
        return self._staged_result(r, docs, collector)
