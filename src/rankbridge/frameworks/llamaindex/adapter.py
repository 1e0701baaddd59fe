"""Adapter for LlamaIndex: any ``llama_index.core`` retriever, index or query engine.

``llama_index`` is imported when an adapter is built, never when :mod:`rankbridge` is imported.

Examples
--------
>>> from rankbridge.frameworks.llamaindex.adapter import LlamaIndexRetriever
>>> LlamaIndexRetriever.framework
'LlamaIndex'

With llama-index-core installed (not run here)::

    from llama_index.retrievers.bm25 import BM25Retriever
    r = LlamaIndexRetriever(BM25Retriever.from_defaults(nodes=nodes), id_from="ref_doc_id")
    hits = r.retrieve("what causes scurvy?", k=10)

    # a query engine: scored on the list after its node postprocessors (what the LLM sees);
    # the retriever's own list is kept as the stage "retrieved"
    engine = RetrieverQueryEngine.from_args(retriever, node_postprocessors=[reranker])
    run = rankbridge.run_retriever(engine, golden, k=None, id_from="ref_doc_id")
    run.to_stage("retrieved")                           # the same pass, before the reranker
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from rankbridge.errors import InputError, MissingExtraError
from rankbridge.frameworks.base import AdapterBase, CopiesByK, Staged
from rankbridge.retriever import IdSpec, _plain_reads_of

__all__ = ["LlamaIndexRetriever", "plain_node_attrs"]


def _import_base() -> Any:
    try:
        # lazy: the framework, only when an adapter is built (import rankbridge stays framework-free)
        from llama_index.core.base.base_retriever import BaseRetriever
    except ImportError as exc:
        raise MissingExtraError("llama-index-core", "llamaindex", "LlamaIndexRetriever") from exc
    return BaseRetriever


def plain_node_attrs() -> Mapping[Any, str]:
    """LlamaIndex's node accessors that return one plain attribute, read directly instead of called.

    ``TextNode.get_content()`` in its default metadata mode (``NONE``) returns ``self.text`` (llama-index-core
    0.14 ``schema.py``), ``BaseNode.node_id`` returns ``self.id_``. Keys are the accessors themselves, so a
    node class that overrides one (``Document``'s ``get_content``, a custom node) is still called. Empty when
    the schema differs (an older release): every accessor is then called. The table is
    :mod:`rankbridge.retriever`'s, which reads result nodes by it with or without an adapter.
    """
    try:
        # lazy: the framework, only when a capture handler is built
        from llama_index.core.schema import TextNode

        return MappingProxyType(_plain_reads_of(TextNode))
    except Exception:  # pragma: no cover - an older schema
        return MappingProxyType({})


def _import_query_types() -> tuple[Any, Any, Any]:
    # lazy: the framework, only when an adapter is built
    from llama_index.core.base.base_query_engine import BaseQueryEngine
    from llama_index.core.schema import NodeWithScore, QueryBundle

    return BaseQueryEngine, QueryBundle, NodeWithScore


#: Query engines whose ``retrieve(query_bundle)`` is exactly "the retriever, then each node postprocessor
#: in order". For these (and subclasses that do not override ``retrieve``) the adapter runs the same two
#: steps itself so that it can keep the retriever's list too.
_RETRIEVE_THEN_POSTPROCESS = frozenset(
    {
        "llama_index.core.query_engine.retriever_query_engine.RetrieverQueryEngine.retrieve",
        "llama_index.core.query_engine.citation_query_engine.CitationQueryEngine.retrieve",
        "llama_index.core.query_engine.multi_modal.SimpleMultiModalQueryEngine.retrieve",
    }
)

#: The stage name under which a query engine's retriever list (before the node postprocessors) is kept.
RETRIEVED = "retrieved"


def _qualname(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"


def _defined_with(cls: type, name: str, other: str) -> bool:
    """Whether ``cls.name`` exists and is defined in the class that defines ``cls.other``, or below it."""
    owners = {attr: next((i for i, c in enumerate(cls.__mro__) if attr in c.__dict__), None) for attr in (name, other)}
    mine, theirs = owners[name], owners[other]
    return mine is not None and theirs is not None and mine <= theirs


def _top_k(retriever: Any) -> int | None:
    k = getattr(retriever, "similarity_top_k", None)
    return k if isinstance(k, int) and not isinstance(k, bool) else None


class LlamaIndexRetriever(AdapterBase):
    """A LlamaIndex retriever, index (``as_retriever``) or query engine, as a retriever.

    Parameters
    ----------
    obj:
        A ``llama_index.core`` ``BaseRetriever``; an index (anything with ``as_retriever``, called with
        ``similarity_top_k=k``); or a query engine: a ``RetrieverQueryEngine`` (``index.as_query_engine()``,
        ``RetrieverQueryEngine.from_args(retriever, node_postprocessors=[...])``), a ``CitationQueryEngine``,
        any engine with a ``retriever`` and ``_node_postprocessors``, or one that implements
        ``retrieve(QueryBundle)`` itself.
    id_from:
        Where each node's doc id comes from: ``"id"`` (``node.node_id``, the default), ``"ref_doc_id"``
        (the source document of a chunk), ``"metadata:KEY"``, a callable on the node, or
        ``"content_hash"``; a list is tried in order (see :mod:`rankbridge.retriever`).
    doc_map:
        Chunk id -> document id, for qrels that judge documents (first occurrence wins).
    keep_text:
        Keep node texts (RAGAS needs them).
    name:
        The run name; defaults to the retriever's class name (the engine's class name for a query engine).

    Attributes
    ----------
    configured_k:
        The ``similarity_top_k`` of the retriever as the app built it (for a query engine: its
        retriever's; for an index: ``as_retriever()``'s default), or ``None`` when it has none.
    postprocessors:
        A query engine's node postprocessors, in the order they run (empty otherwise).

    Notes
    -----
    **Query engines are scored on what they hand the LLM.** For a query engine the final list (the one
    scored) is the list *after* its node postprocessors (rerankers, similarity cut-offs, ...), exactly what
    ``engine.retrieve(QueryBundle(query))`` returns. The same pass also keeps the retriever's own list,
    before any postprocessor, as the stage ``"retrieved"`` (``run.to_stage("retrieved")``). The adapter
    calls ``engine.retriever.retrieve(query_bundle)`` and then each postprocessor's ``postprocess_nodes``
    the way ``RetrieverQueryEngine`` does, so the retriever runs once and LlamaIndex instrumentation sees
    the same spans and events as when the app queries the engine. The ``"retrieved"`` list is a snapshot
    taken before the postprocessors run (rerankers that rewrite scores in place do not change it). An
    engine that overrides ``retrieve`` in another way is called through its own ``retrieve``; it has no
    ``"retrieved"`` stage.

    **k.** ``k=None`` calls the object exactly as the app configured it: no copy, no cut. An explicit
    ``k`` is honoured by the retriever's ``similarity_top_k`` when it has one: the adapter works on a
    shallow copy with ``similarity_top_k=k`` (cached per k), never on the object you passed. Retrievers
    without it are called as they are and their list is cut at ``k``. For a query engine the copy is of
    its retriever, and the postprocessors run after it, so the final list may be shorter than ``k`` (a
    reranker's ``top_n``, a cut-off): that is what the engine would hand the LLM with that retriever. A
    reranker's ``top_n`` is not changed and is not part of :attr:`configured_k`.

    Calls go through ``retrieve`` and ``aretrieve``, so LlamaIndex instrumentation and callbacks see them;
    the runner uses ``aretrieve`` only when the retriever class implements ``_aretrieve`` itself
    (otherwise it would block the event loop).
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
        base_engine, self._query_bundle, self._node_with_score = _import_query_types()
        self._factory: Callable[[int], Any] | None = None
        #: ``None`` (a retriever or index), ``"staged"`` (retriever then postprocessors, done here) or
        #: ``"opaque"`` (an engine with its own ``retrieve``: called as it is).
        self._engine_mode: str | None = None
        self.postprocessors: list[Any] = []
        retriever: Any = None
        if isinstance(obj, base):
            retriever = obj
        elif callable(getattr(obj, "as_retriever", None)):
            index = obj
            self._factory = lambda k: index.as_retriever(similarity_top_k=k)
            retriever = index.as_retriever()
        elif isinstance(getattr(obj, "retriever", None), base):
            retriever = obj.retriever
            own_retrieve = getattr(type(obj), "retrieve", None)
            postprocessors = getattr(obj, "_node_postprocessors", None)
            if isinstance(postprocessors, list) and (
                own_retrieve is None or _qualname(own_retrieve) in _RETRIEVE_THEN_POSTPROCESS
            ):
                self._engine_mode = "staged"
                self.postprocessors = list(postprocessors)
            elif own_retrieve is not None and own_retrieve is not base_engine.retrieve:
                self._engine_mode = "opaque"
        elif isinstance(obj, base_engine) and type(obj).retrieve is not base_engine.retrieve:
            self._engine_mode = "opaque"
        elif isinstance(obj, base_engine):  # SubQuestionQueryEngine, RouterQueryEngine: retrieve only inside query()
            raise InputError(
                f"LlamaIndexRetriever: {type(obj).__name__} is a query engine with no .retriever and no retrieve() "
                "of its own: it retrieves only while it answers (through its tools or sub-engines). Ask it every "
                "question with rankbridge.run_app(engine, golden), which scores the retrievals captured while it "
                "answers, or pass the retriever or query engine it wraps to run_retriever"
            )
        else:
            raise InputError(
                "LlamaIndexRetriever: expected a llama_index BaseRetriever, an index with as_retriever(), or a "
                f"query engine with a .retriever or its own retrieve(), got {type(obj).__name__}"
            )
        default_name = type(obj if self._engine_mode else retriever).__name__
        super().__init__(id_from=id_from, doc_map=doc_map, keep_text=keep_text, name=name or default_name)
        self.obj = obj
        self.retriever = retriever
        self.configured_k = _top_k(retriever) if retriever is not None else None
        if self._engine_mode == "opaque":
            self.native_async = False
        else:
            self.native_async = type(retriever)._aretrieve is not base._aretrieve
        self._copies = CopiesByK()

    def for_k(self, k: int | None) -> Any:
        """The LlamaIndex retriever used for a given ``k`` (a cached copy when ``k`` differs).

        ``k=None`` is the retriever as the app configured it (for an index: ``as_retriever()``).
        """
        return self.retriever if k is None else self._copies.get(k, self._retriever_for)

    def k_cap(self, k: int) -> str | None:
        """The retriever's own top-k when ``k`` does not reach it (no ``similarity_top_k``, an engine's own
        ``retrieve``); ``None`` when ``k`` was set as its ``similarity_top_k``."""
        if self._engine_mode == "opaque":
            return (
                f"{type(self.obj).__name__} retrieves in its own retrieve(), which k does not reach: the "
                f"similarity_top_k of the retrievers it was built with caps the lists; build them with at least {k}"
            )
        if self._factory is not None or _top_k(self.retriever) is not None:
            return None
        return (
            f"{type(self.retriever).__name__} has no similarity_top_k, so k={k} does not reach it: the top-k of "
            "what it wraps caps the lists (e.g. the similarity_top_k of the vector retriever under an "
            f"AutoMergingRetriever, or a custom BaseRetriever's own); set that to at least {k}"
        )

    def _retriever_for(self, k: int) -> Any:
        """The retriever for ``k``: the index's ``as_retriever(similarity_top_k=k)``, a shallow copy with that
        ``similarity_top_k``, or the retriever itself (it already returns k, or has no such setting)."""
        if self._factory is not None:
            return self._factory(k)
        if _top_k(self.retriever) is None or self.retriever.similarity_top_k == k:
            return self.retriever
        r = copy.copy(self.retriever)
        r.similarity_top_k = k
        return r

    def _snapshot(self, nodes: Any) -> list[Any]:
        """The retriever's list as it was before the postprocessors ran (they may rewrite it in place)."""
        make = self._node_with_score
        return [make(node=n.node.model_copy(), score=n.score) for n in nodes]

    def _fetch(self, query: str, k: int | None) -> Any:
        if self._engine_mode is None:
            return self.for_k(k).retrieve(query)
        bundle = self._query_bundle(query)
        if self._engine_mode == "opaque":
            return self.obj.retrieve(bundle)
        nodes = self.for_k(k).retrieve(bundle)
        retrieved = self._snapshot(nodes)
        apply = getattr(self.obj, "_apply_node_postprocessors", None)
        if callable(apply):
            nodes = apply(nodes, query_bundle=bundle)
        else:
            for postprocessor in self.postprocessors:
                nodes = postprocessor.postprocess_nodes(nodes, query_bundle=bundle)
        return Staged(final=nodes, stages={RETRIEVED: retrieved})

    async def _afetch(self, query: str, k: int | None) -> Any:
        if self._engine_mode is None:
            return await self.for_k(k).aretrieve(query)
        bundle = self._query_bundle(query)
        if self._engine_mode == "opaque":
            if _defined_with(type(self.obj), "aretrieve", "retrieve"):
                return await self.obj.aretrieve(bundle)
            return await asyncio.to_thread(self.obj.retrieve, bundle)  # its aretrieve would do something else
        nodes = await self.for_k(k).aretrieve(bundle)
        retrieved = self._snapshot(nodes)
        apply = getattr(self.obj, "_async_apply_node_postprocessors", None)
        if callable(apply):
            nodes = await apply(nodes, query_bundle=bundle)
        else:
            for postprocessor in self.postprocessors:
                nodes = await postprocessor.apostprocess_nodes(nodes, query_bundle=bundle)
        return Staged(final=nodes, stages={RETRIEVED: retrieved})
