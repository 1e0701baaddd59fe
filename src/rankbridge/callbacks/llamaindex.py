"""LlamaIndex instrumentation handlers that record every retrieval.

Importing this module imports ``llama_index.core``; :mod:`rankbridge` and :mod:`rankbridge.callbacks`
import it only when a capture attaches to LlamaIndex.

Two handlers go on the root dispatcher (``llama_index.core.instrumentation.get_dispatcher()``), which
every LlamaIndex module's dispatcher propagates to:

* an **event handler** reads ``RetrievalStartEvent`` / ``RetrievalEndEvent`` (paired by their
  ``span_id``): the query, the retriever's class (from the span id ``"BM25Retriever.retrieve-<uuid>"``),
  the nodes and their scores, the latency;
* a **span handler** keeps the parent of each open span, which gives a retrieval its parent and trace
  ids, tells a retriever nested in another one (fusion, recursive, auto-merging) from a top-level one,
  turns a dropped retrieval span into an error record, and picks up the *final* list: the first
  enclosing span that returns nodes or a response with ``source_nodes`` (a query engine's ``_query``,
  a chat engine's ``chat``) gives the list after node postprocessors and rerankers.

LlamaIndex swallows handler exceptions, and every handler body here is wrapped anyway.

Passing a golden-set query id: ``with instrument_tags({"rankbridge_query_id": "q7"}):`` (from
``llama_index_instrumentation.dispatcher``) or ``with rankbridge.callbacks.query_id("q7"):``.

Examples
--------
With llama-index-core installed (not run here)::

    from rankbridge.callbacks import Recorder
    from rankbridge.callbacks import llamaindex as li_capture

    rec = Recorder(id_from="ref_doc_id")
    detach = li_capture.attach(rec)
    query_engine.query("what causes scurvy?")
    detach()
    rec.records[0].retrieved, rec.records[0].final
"""

from __future__ import annotations

import threading
import time
from typing import Any

from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from llama_index.core.schema import NodeWithScore, TextNode

from rankbridge.callbacks._llamaindex_common import MAX_OPEN as _MAX_OPEN
from rankbridge.callbacks._llamaindex_common import node_scores as _scores
from rankbridge.callbacks._llamaindex_common import open_retrieval
from rankbridge.callbacks._llamaindex_common import query_text as _query_text
from rankbridge.callbacks._recorder import CaptureRecord, Recorder, Snapshot, error_text, guarded

__all__ = ["RankbridgeEventHandler", "RankbridgeSpanHandler", "attach"]

_OTHER, _START, _END = 0, 1, 2
_EVENT_KINDS: dict[type, int] = {}  # event class -> which retrieval event it is (LlamaIndex sends ~12 per query)


def _event_kind(event: Any) -> int:
    kind = (
        _START if isinstance(event, RetrievalStartEvent) else _END if isinstance(event, RetrievalEndEvent) else _OTHER
    )
    if len(_EVENT_KINDS) < 10_000:
        _EVENT_KINDS[type(event)] = kind
    return kind


_FIELDS = ("id", "metadata")
_FIELDS_TEXT = ("id", "metadata", "text")


def _snapshot_text_nodes(nodes: Any, text: bool) -> tuple[Snapshot, list[Any]] | None:
    """The snapshot and scores of a list of ``NodeWithScore`` over plain ``TextNode`` objects, in one pass.

    The common case (BM25, vector stores) read without the generic per-class machinery: a record is made
    inside the application's call, where every instruction runs with cold caches. ``None`` for anything
    else (other node classes, subclasses that may override ``get_content``), which takes the generic path.
    """
    if type(nodes) is not list or not nodes:
        return None
    out = Snapshot()
    scores: list[Any] = []
    add = out.append
    add_score = scores.append
    for n in nodes:
        if type(n) is not NodeWithScore:
            return None
        node = n.node
        if type(node) is not TextNode:
            return None
        add(node.id_)  # BaseNode.node_id returns id_, TextNode.get_content() returns text (see PLAIN_ATTRS)
        add(node.metadata)
        if text:
            add(node.text)
        add_score(n.score)
    out.cls = TextNode
    out.fields = _FIELDS_TEXT if text else _FIELDS
    return out, scores


def _same_list(final: list[Any], scores: list[Any], retrieved: list[Any], retrieved_scores: list[Any] | None) -> bool:
    """The final list is the retrieved one: the same ``NodeWithScore`` objects, in order, with the same scores.

    (A query engine with no postprocessor hands its retriever's nodes on; then no second snapshot is taken.)
    """
    return (
        len(final) == len(retrieved)
        and scores == retrieved_scores
        and all(a is b for a, b in zip(final, retrieved, strict=True))
    )


def _result_nodes(result: Any) -> Any:
    if isinstance(result, list):
        return result if result else None
    return getattr(result, "source_nodes", None)


class _Tap:
    """The bookkeeping behind both handlers (plain Python; no pydantic on the hot path)."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._parents: dict[str, str | None] = {}  # open span -> parent span
        self._open: dict[str, CaptureRecord | None] = {}  # open retrieval span
        # span -> finished records awaiting a final list, each with the list (and scores) it retrieved; the
        # framework's objects are held only until the enclosing span ends (the app holds them till then too)
        self._waiting: dict[str, list[tuple[CaptureRecord, list[Any], list[Any] | None]]] = {}

    def forget(self) -> None:
        """Drop every open span and retrieval (the handlers were taken off: their ends will not come)."""
        self._parents.clear()
        self._open.clear()
        self._waiting.clear()

    # -- spans ----------------------------------------------------------------------------------
    # span_enter / span_exit run for every span of the app: the handler inlines their fast path
    @guarded
    def span_enter(self, id_: str, parent_id: str | None) -> None:
        if self._recorder.enabled and len(self._parents) < _MAX_OPEN:
            self._parents[id_] = parent_id

    @guarded
    def span_exit(self, id_: str, result: Any) -> None:
        parent = self._parents.pop(id_, None)
        if id_ in self._waiting:
            self._finish_waiting(id_, parent, result)

    @guarded
    def _finish_waiting(self, id_: str, parent: str | None, result: Any) -> None:
        waiting = self._waiting.pop(id_, None)
        if not waiting:
            return
        final = _result_nodes(result)
        scores = _scores(final) if final is not None else None
        if final is not None and scores is not None:
            if len(waiting) == 1:  # several retrievals under one result: which list is whose is unknown
                record, retrieved, retrieved_scores = waiting[0]
                if not _same_list(final, scores, retrieved, retrieved_scores):
                    record.set_final(final, scores, self._recorder)
            return
        if parent is not None and parent in self._parents:
            self._waiting.setdefault(parent, []).extend(waiting)

    @guarded
    def span_drop(self, id_: str, err: BaseException | None) -> None:
        self._parents.pop(id_, None)
        self._waiting.pop(id_, None)
        record = self._open.pop(id_, None)
        if record is None:
            return
        record.latency = time.perf_counter() - record._t0
        record.error = error_text(err) if err is not None else "retrieval span dropped"
        if not record._is_nested:
            self._recorder.add(record)

    # -- events ---------------------------------------------------------------------------------
    @guarded
    def event(self, event: Any) -> None:
        if isinstance(event, RetrievalStartEvent):
            self._start(event)
        elif isinstance(event, RetrievalEndEvent):
            self._end(event)

    @guarded
    def start(self, event: Any) -> None:
        self._start(event)

    @guarded
    def end(self, event: Any) -> None:
        self._end(event)

    def _start(self, event: Any) -> None:
        span = event.span_id
        if not self._recorder.enabled or span is None:
            return
        open_retrieval(
            self._recorder,
            self._parents,
            self._open,
            span,
            self._parents.get(span),
            query=_query_text(event.str_or_query_bundle),
            retriever=span.split(".", 1)[0] if "." in span else "Retriever",
            tags=event.tags,
        )

    def _end(self, event: Any) -> None:
        record = self._open.pop(event.span_id, None)
        if record is None:
            return
        record.latency = time.perf_counter() - record._t0
        nodes = event.nodes
        rec = self._recorder
        fast = _snapshot_text_nodes(nodes, rec.snap_text) if rec.light and not rec.snap_ref else None
        scores: list[Any] | None
        if fast is not None:
            record.set_snapshot(*fast)
            scores = fast[1]
        else:
            scores = _scores(nodes)
            record.set_items(nodes, scores, rec)  # copies what the hits need (see Recorder.retain)
        if record._is_nested:
            return
        if record.nested:
            # a wrapper around one retriever (auto-merging, recursive): first stage, then its output
            record.promote_nested()
        parent = self._parents.get(event.span_id)
        if parent is not None and isinstance(nodes, list) and len(self._waiting) < _MAX_OPEN:
            self._waiting.setdefault(parent, []).append((record, nodes, scores))
        self._recorder.add(record)


class RankbridgeEventHandler(BaseEventHandler):  # type: ignore[misc]
    """Receives LlamaIndex instrumentation events; forwards retrieval events to the recorder."""

    tap: Any = None

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "RankbridgeEventHandler"

    def handle(self, event: Any, **kwargs: Any) -> None:
        """Record retrieval start and end events (other events return at once)."""
        try:
            kind = _EVENT_KINDS.get(type(event))
            if kind is None:
                kind = _event_kind(event)
        except Exception:
            self.tap.event(event)  # the guarded path decides (and counts any failure)
            return
        if kind == _START:
            self.tap.start(event)
        elif kind == _END:
            self.tap.end(event)


class RankbridgeSpanHandler(BaseSpanHandler[Any]):  # type: ignore[misc]
    """Tracks span parents and results for :class:`RankbridgeEventHandler` (keeps no span objects)."""

    tap: Any = None

    def __init__(self, tap: Any) -> None:
        super().__init__()
        self.tap = tap

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "RankbridgeSpanHandler"

    def span_enter(
        self,
        id_: str,
        bound_args: Any,
        instance: Any = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the span's parent (inlined :meth:`_Tap.span_enter`: this runs for every span)."""
        try:
            tap = self.tap
            if tap._recorder.enabled and len(tap._parents) < _MAX_OPEN:
                tap._parents[id_] = parent_id
        except Exception:
            self.tap.span_enter(id_, parent_id)  # the guarded path counts the failure

    def span_exit(self, id_: str, bound_args: Any, instance: Any = None, result: Any = None, **kwargs: Any) -> None:
        """Hand the span's result to retrievals waiting for their final list (inlined fast path)."""
        try:
            tap = self.tap
            parent = tap._parents.pop(id_, None)
            if id_ in tap._waiting:
                tap._finish_waiting(id_, parent, result)
        except Exception:
            self.tap.span_exit(id_, result)

    def span_drop(
        self, id_: str, bound_args: Any, instance: Any = None, err: BaseException | None = None, **kwargs: Any
    ) -> None:
        """Turn a dropped retrieval span into an error record."""
        self.tap.span_drop(id_, err)

    def new_span(self, *args: Any, **kwargs: Any) -> None:
        """Unused: no span objects are kept."""
        return None

    def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
        """Unused."""
        return None

    def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
        """Unused."""
        return None


class _Attachment:
    """The handlers on the root dispatcher: calling it detaches them; :meth:`set_active` pauses them.

    The handler lists are replaced, not mutated, so a thread iterating them meanwhile is unaffected.
    """

    def __init__(self, tap: _Tap) -> None:
        self._dispatcher = get_dispatcher()
        self._tap = tap
        self._events = RankbridgeEventHandler(tap=tap)
        self._spans = RankbridgeSpanHandler(tap)
        self._lock = threading.Lock()
        self._on = False

    def set_active(self, active: bool) -> None:
        """Put the handlers on the dispatcher, or take them off.

        Off, LlamaIndex does not call them at all (a paused capture costs nothing). What was being tracked
        is forgotten: retrievals still running when the handlers come off are not recorded.
        """
        d = self._dispatcher
        with self._lock:
            if active and not self._on:
                d.span_handlers = [*d.span_handlers, self._spans]
                d.event_handlers = [*d.event_handlers, self._events]
            elif not active and self._on:
                d.event_handlers = [h for h in d.event_handlers if h is not self._events]
                d.span_handlers = [h for h in d.span_handlers if h is not self._spans]
                self._tap.forget()
            self._on = active

    def __call__(self) -> None:
        self.set_active(False)


def attach(recorder: Recorder) -> _Attachment:
    """Record every LlamaIndex retrieval of this process into ``recorder``; returns the detach function.

    The returned object also has ``set_active(bool)``, which :attr:`rankbridge.callbacks.Capture.enabled`
    uses to take the handlers off the dispatcher while a capture is paused.
    """
    attachment = _Attachment(_Tap(recorder))
    attachment.set_active(recorder.enabled)
    return attachment
