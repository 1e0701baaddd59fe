"""A LlamaIndex *legacy callback* handler (``CallbackManager``) that records every retrieval.

Importing this module imports ``llama_index.core``; :mod:`rankbridge` and :mod:`rankbridge.capture`
import it only when a capture attaches to LlamaIndex this way.

When to use it
--------------
* LlamaIndex releases older than the instrumentation module (``llama_index.core.instrumentation``,
  added around 0.10.20), where ``CallbackManager`` is the only hook;
* applications that already route everything through a ``CallbackManager`` of their own (components
  built with ``callback_manager=CallbackManager([...])``) and want rankbridge to be one more handler in it.

Otherwise prefer :mod:`rankbridge.frameworks.llamaindex.capture` (instrumentation): it sees every retriever of the
process, whatever manager it holds, and its spans give the final list in more places (chat engines).

**Do not attach both for the same application.** Current LlamaIndex fires the instrumentation events *and*
the legacy ``CBEventType.RETRIEVE`` event for every retrieval (``BaseRetriever.retrieve``), so with both
handlers each retrieval would be recorded twice.

What it reads
-------------
``BaseRetriever.retrieve`` / ``aretrieve`` wrap the retriever in ``CallbackManager.event(CBEventType.RETRIEVE)``:
the start payload carries ``EventPayload.QUERY_STR``, the end payload ``EventPayload.NODES`` (the
``NodeWithScore`` list), or ``EventPayload.EXCEPTION`` when the retriever raised. An enclosing retrieval
whose inner one raised ends with no payload at all (LlamaIndex marks the exception as already reported);
such a record takes the inner error. The handler also keeps the parent of every open event (all but leaf,
templating, parsing and exception events), which gives a record its parent and trace ids and tells a
retriever nested in another one (fusion, recursive, a custom wrapper) from a top-level one. Parents come
from LlamaIndex's own event stack (a context variable: it follows ``await`` and asyncio tasks, not threads
started by hand). The first trace to start in a context (``retrieve`` and ``query`` each open one) resets
that stack, so an event the application opens *outside* any trace is not seen as a parent: open a trace
around it (``with manager.as_trace("agent"):``).

The *final* list (after node postprocessors and rerankers) comes from the first enclosing event that
ends with nodes: a query engine's ``CBEventType.QUERY`` event ends with the response, whose
``source_nodes`` are what the answer was built from. A ``CBEventType.RERANKING`` event (in llama-index-core
0.14: ``SentenceTransformerRerank``, ``StructuredLLMRerank``; node postprocessors in general report no event)
that ends under the same enclosing event gives the final list when no enclosing event ends with nodes
(an agent's function call, say). A retrieval with no enclosing event (``retriever.retrieve`` called
from plain code, ``ContextChatEngine``, which opens no legacy event) has no final list (``final`` is
``None``).

The retriever's class is taken from the active instrumentation span (``"BM25Retriever.retrieve-<uuid>"``)
where LlamaIndex has one; the legacy payload itself has no class, so older releases record ``"Retriever"``.

Passing a golden-set query id: ``with query_id("q7"):`` (or, on LlamaIndex with
the instrumentation module, ``with instrument_tags({"rankbridge_query_id": "q7"}):``).

Examples
--------
With llama-index-core installed (not run here)::

    from llama_index.core.callbacks import CallbackManager
    from rankbridge.capture import Recorder
    from rankbridge.frameworks.llamaindex.capture_legacy import RankbridgeLlamaIndexCallback

    rec = Recorder()
    manager = CallbackManager([RankbridgeLlamaIndexCallback(rec)])
    retriever = BM25Retriever(nodes=nodes, callback_manager=manager)   # the retriever needs it itself
    engine = RetrieverQueryEngine.from_args(retriever, callback_manager=manager)
    engine.query("what causes scurvy?")
    rec.records[0].retrieved, rec.records[0].final

or, for components built with LlamaIndex's default settings, :func:`attach` (see its caveats).

Reading the records back: ``handler.to_run(golden)`` gives a :class:`~rankbridge.Run` with the same query
matching as :func:`rankbridge.capture.capture` (the id passed with ``query_id(qid)``, else the normalised
text), ``handler.summary(golden)`` the counts, ``handler.as_capture(golden)`` every other reading of a
:class:`~rankbridge.capture.Capture`::

    handler = RankbridgeLlamaIndexCallback(id_from="ref_doc_id")
    manager = CallbackManager([handler])
    ...                                    # build the retriever and the engine with callback_manager=manager
    for qid, question in golden.texts().items():
        with query_id(qid):
            engine.query(question)
    rankbridge.evaluate(golden.qrels, handler.to_run(golden), ["ndcg@10"])
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from llama_index.core import Settings
from llama_index.core.callbacks.base_handler import BaseCallbackHandler
from llama_index.core.callbacks.schema import BASE_TRACE_EVENT, CBEventType, EventPayload

from rankbridge.capture import (
    NOT_RECORDED,
    CaptureRecord,
    Recorder,
    RecorderRuns,
    Unrecorded,
    error_text,
    guarded,
    own_recorder,
)
from rankbridge.frameworks.llamaindex._capture_common import MAX_OPEN as _MAX_OPEN
from rankbridge.frameworks.llamaindex._capture_common import PLAIN_ATTRS, open_retrieval
from rankbridge.frameworks.llamaindex._capture_common import node_scores as _scores
from rankbridge.frameworks.llamaindex._capture_common import query_text as _query_text

if TYPE_CHECKING:
    from rankbridge.retriever import IdSpec

__all__ = ["RankbridgeLlamaIndexCallback", "RecorderRuns", "attach"]


_active_span: Any = None  # ContextVar of the active instrumentation span id
_active_tags: Any = None  # ContextVar of the active instrument_tags
try:  # the instrumentation module (LlamaIndex >= ~0.10.20): retriever class and instrument_tags
    from llama_index.core.instrumentation.span import active_span_id as _active_span
    from llama_index_instrumentation.dispatcher import active_instrument_tags as _active_tags
except Exception:  # pragma: no cover - older LlamaIndex
    pass

_RETRIEVE = CBEventType.RETRIEVE
_RERANKING = getattr(CBEventType, "RERANKING", None)
#: Events not worth a call: leaf events (never a parent), templating and parsing (never around a retriever),
#: and EXCEPTION, which ``CallbackManager.as_trace`` starts and never ends (looked up by name: older
#: releases lack some of them).
_IGNORED = [
    getattr(CBEventType, name)
    for name in ("CHUNKING", "NODE_PARSING", "EMBEDDING", "LLM", "TEMPLATING", "EXCEPTION")
    if hasattr(CBEventType, name)
]
_NODES = EventPayload.NODES
_RESPONSE = EventPayload.RESPONSE
_EXCEPTION = EventPayload.EXCEPTION
_QUERY_STR = EventPayload.QUERY_STR


def _result_nodes(payload: Mapping[Any, Any] | None) -> Any:
    """Nodes an event ended with: ``NODES``, else the ``source_nodes`` of its ``RESPONSE``."""
    if not payload:
        return None
    nodes = payload.get(_NODES)
    if nodes is not None:
        return nodes
    return getattr(payload.get(_RESPONSE), "source_nodes", None)


def _retriever_name() -> str:
    """The class of the retriever being run, from the active instrumentation span, else ``"Retriever"``."""
    span = _active_span.get() if _active_span is not None else None
    if isinstance(span, str):
        cls, _, rest = span.partition(".")
        if rest.startswith(("retrieve-", "aretrieve-")) and cls:
            return cls
    return "Retriever"


def _nested_error(record: CaptureRecord) -> str | None:
    for inner in record.nested:
        if inner.error is not None:
            return inner.error
    return None


class RankbridgeLlamaIndexCallback(RecorderRuns, BaseCallbackHandler):
    """LlamaIndex legacy callback handler: records each retrieval into a :class:`~rankbridge.capture.Recorder`.

    Add it to the ``CallbackManager`` the retrievers (and query engines) hold::

        manager = CallbackManager([RankbridgeLlamaIndexCallback(recorder)])

    A retriever reports its events to its *own* manager: give the manager to the retriever as well as
    to the query engine (``RetrieverQueryEngine.from_args(callback_manager=...)`` does not pass it on to
    the retriever). Every method runs inline, does no I/O, and is wrapped so that a failure of
    rankbridge's bookkeeping is counted in :attr:`Recorder.internal_errors`, never raised into the app.

    Read the records back with :meth:`to_run`, :meth:`summary` and :meth:`as_capture` (see
    :class:`RecorderRuns`).

    Parameters
    ----------
    recorder:
        Where records go; a new :class:`~rankbridge.capture.Recorder` when omitted.
    id_from, doc_map, keep_text:
        How results become hits when read (see :func:`rankbridge.capture.capture`); they configure the
        handler's own recorder, so they cannot be combined with ``recorder``.

    Examples
    --------
    >>> handler = RankbridgeLlamaIndexCallback(id_from="ref_doc_id")
    >>> handler.recorder.id_from, len(handler.to_run()), handler.summary({"q1": "scurvy?"})["missing"]
    ('ref_doc_id', 0, ['q1'])
    """

    def __init__(
        self,
        recorder: Recorder | None = None,
        *,
        id_from: IdSpec | None = None,
        doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
        keep_text: bool = True,
    ) -> None:
        super().__init__(event_starts_to_ignore=list(_IGNORED), event_ends_to_ignore=list(_IGNORED))
        self._recorder = own_recorder(recorder, id_from, doc_map, keep_text)
        self._detached = False
        self._parents: dict[str, str | None] = {}  # open event -> its parent event (None at the root)
        self._open: dict[str, CaptureRecord | Unrecorded] = {}  # open retrieval event -> its record
        self._waiting: dict[str, list[CaptureRecord]] = {}  # event -> finished records awaiting a final list

    @property
    def recorder(self) -> Recorder:
        """The recorder this handler writes to."""
        return self._recorder

    def _runs_framework(self) -> str:
        return "llamaindex_legacy"

    # -- events ---------------------------------------------------------------------------------
    def on_event_start(
        self,
        event_type: CBEventType,
        payload: dict[str, Any] | None = None,
        event_id: str = "",
        parent_id: str = "",
        **kwargs: Any,
    ) -> str:
        """Remember the event's parent; open a record when a retrieval starts."""
        self._event_start(event_type, payload, event_id, parent_id)
        return event_id

    @guarded
    def _event_start(
        self, event_type: CBEventType, payload: dict[str, Any] | None, event_id: str, parent_id: str
    ) -> None:
        if not self._recorder.enabled or self._detached:
            return
        parent = parent_id if parent_id and parent_id != BASE_TRACE_EVENT else None
        if event_type == _RETRIEVE:
            self._start(payload, event_id, parent)
        elif len(self._parents) < _MAX_OPEN:
            self._parents[event_id] = parent

    @guarded
    def on_event_end(
        self,
        event_type: CBEventType,
        payload: dict[str, Any] | None = None,
        event_id: str = "",
        **kwargs: Any,
    ) -> None:
        """Close a retrieval's record, or hand an enclosing event's nodes to records waiting for them."""
        parent = self._parents.pop(event_id, None)
        if event_type == _RETRIEVE:
            self._end(payload, event_id, parent)
            return
        if event_type == _RERANKING and parent is not None and parent in self._waiting:
            self._reranked(payload, parent)
        if event_id in self._waiting:
            self._finish_waiting(event_id, parent, payload)

    @guarded
    def start_trace(self, trace_id: str | None = None) -> None:
        """Unused: parents come with each event."""
        return None

    @guarded
    def end_trace(self, trace_id: str | None = None, trace_map: dict[str, list[str]] | None = None) -> None:
        """Unused: open events are forgotten as they end."""
        return None

    # -- bookkeeping ----------------------------------------------------------------------------
    def _start(self, payload: Mapping[Any, Any] | None, event_id: str, parent: str | None) -> None:
        if len(self._parents) < _MAX_OPEN:
            self._parents[event_id] = parent
        open_retrieval(
            self._recorder,
            self._parents,
            self._open,
            event_id,
            parent,
            _query_text(payload.get(_QUERY_STR) if payload else None),
            _retriever_name(),
            _active_tags.get() if _active_tags is not None else None,
        )

    def _end(self, payload: Mapping[Any, Any] | None, event_id: str, parent: str | None) -> None:
        record = self._open.pop(event_id, NOT_RECORDED)
        if record is NOT_RECORDED:
            return
        record.latency = time.perf_counter() - record._t0
        nodes = payload.get(_NODES) if payload else None
        if nodes is not None:
            record.set_items(nodes, _scores(nodes), self._recorder, PLAIN_ATTRS)
        else:
            exc = payload.get(_EXCEPTION) if payload else None
            if exc is not None:
                record.error = error_text(exc)
            else:  # an inner event reported the exception already, or the task was cancelled
                record.error = _nested_error(record) or "retrieval ended without nodes"
        if record._is_nested:
            return
        if record.error is None:
            if record.nested:
                # a wrapper around one retriever (auto-merging, recursive): first stage, then its output
                record.promote_nested()
            if parent is not None and parent in self._parents and len(self._waiting) < _MAX_OPEN:
                self._waiting.setdefault(parent, []).append(record)
        self._recorder.add(record)

    def _reranked(self, payload: Mapping[Any, Any] | None, parent: str) -> None:
        """A reranker ended under the event a retrieval waits in: its list is final unless the event's own
        result says otherwise (a later postprocessor), which :meth:`_finish_waiting` then keeps."""
        waiting = self._waiting.get(parent)
        if not waiting or len(waiting) != 1:
            return
        nodes = payload.get(_NODES) if payload else None
        scores = _scores(nodes)
        if nodes is not None and scores is not None:
            waiting[0].set_final(nodes, scores, self._recorder, PLAIN_ATTRS)

    def _finish_waiting(self, event_id: str, parent: str | None, payload: Mapping[Any, Any] | None) -> None:
        waiting = self._waiting.pop(event_id, None)
        if not waiting:
            return
        final = _result_nodes(payload)
        scores = _scores(final) if final is not None else None
        if final is not None and scores is not None:
            if len(waiting) == 1:  # several retrievals under one result: which list is whose is unknown
                waiting[0].set_final(final, scores, self._recorder, PLAIN_ATTRS)
            return
        if parent is not None and parent in self._parents:
            self._waiting.setdefault(parent, []).extend(waiting)


def attach(recorder: Recorder, *, trace: bool = True) -> Callable[[], None]:
    """Add a handler recording into ``recorder`` to ``Settings.callback_manager``; returns the detach function.

    ``trace`` is accepted for the registry's one signature (:func:`rankbridge.frameworks.attach_capture`):
    the event stack always gives records their ``trace_id``.

    Which components see it (checked on llama-index-core 0.14):

    * indexes and what they build (``index.as_retriever()``, ``index.as_query_engine()``) and query engines
      (``RetrieverQueryEngine.from_args``) built with default settings hold ``Settings.callback_manager``
      itself: seen, even when built before this call;
    * retrievers constructed directly (``BM25Retriever.from_defaults(...)``), chat engines and other
      components built with no manager hold a new ``CallbackManager()`` that *shares the handler list* of
      ``Settings.callback_manager`` -- but only if that global manager already existed when they were
      built (LlamaIndex creates it lazily, on first use). This function creates it if needed: attach
      before building the application, or such a retriever is not seen.

    Not seen either: components built with their own ``CallbackManager([...])`` (add a
    :class:`RankbridgeLlamaIndexCallback` to that manager yourself); components of an application that
    replaced the handler list (``set_handlers``) or the manager (``Settings.callback_manager = ...``) after
    this call; default components built while a LlamaIndex global handler (``set_global_handler``) is set
    (their new managers start from that handler, not from the shared list).

    The handler is appended to the shared list and detaching removes it in place (``remove_handler``), as
    LlamaIndex's own API does; detach while no query is running, or another thread's event dispatch may
    skip a handler added after this one for that one event. A detached handler records nothing more,
    even where some list still holds it.
    """
    manager = Settings.callback_manager
    handler = RankbridgeLlamaIndexCallback(recorder)
    manager.add_handler(handler)

    def detach() -> None:
        handler._detached = True
        with contextlib.suppress(ValueError):
            manager.remove_handler(handler)

    return detach
