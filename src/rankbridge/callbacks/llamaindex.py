"""LlamaIndex instrumentation handler that records every retrieval.

Importing this module imports ``llama_index.core``; :mod:`rankbridge` and :mod:`rankbridge.callbacks`
import it only when a capture attaches to LlamaIndex.

One span handler goes on the root dispatcher (``llama_index.core.instrumentation.get_dispatcher()``),
which every LlamaIndex module's dispatcher propagates to, in the place of the dispatcher's do-nothing
``NullSpanHandler`` while attached (see :class:`_Attachment`). ``BaseRetriever.retrieve`` / ``aretrieve`` are
spans (the same calls that send ``RetrievalStartEvent`` / ``RetrievalEndEvent``), so one handler sees it all:

* a retrieval span's enter gives the query (its ``str_or_query_bundle`` argument), the retriever's class
  (the span's instance), the parent span and the instrument tags; its exit gives the nodes (their scores
  are copied then, since rerankers may change them in place), its drop the error;
* every span's parent is kept while it is open, which gives a retrieval its trace id (the outermost open
  span), tells a retriever nested in another one (fusion, recursive, auto-merging) from a top-level one,
  and picks up the *final* list: the first enclosing span that returns nodes or a response with
  ``source_nodes`` (a query engine's ``retrieve``/``_query``, a chat engine's ``chat``) gives the list after
  node postprocessors and rerankers.

Why no event handler: LlamaIndex sends about as many events as spans (12 each in a ``RetrieverQueryEngine``
query), and a second handler would be called for every one of them only to ignore all but two; the span
handler is called anyway (it must see every span for the parent chain), so it does the whole job.

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

import contextlib
import threading
import time
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler, NullSpanHandler
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rankbridge.callbacks._llamaindex_common import MAX_OPEN as _MAX_OPEN
from rankbridge.callbacks._llamaindex_common import node_scores as _scores
from rankbridge.callbacks._llamaindex_common import open_retrieval
from rankbridge.callbacks._llamaindex_common import query_text as _query_text
from rankbridge.callbacks._recorder import (
    EMPTY_METADATA,
    CaptureRecord,
    Recorder,
    Snapshot,
    error_text,
    guarded,
    snapshot_scores,
)

__all__ = ["RankbridgeSpanHandler", "attach"]

#: class of a span's instance -> the id prefixes of its retrieve/aretrieve spans, ``None`` for a class that is
#: not a retriever (LlamaIndex opens ~12 spans per query; this is looked up for each)
_RETRIEVE_PREFIXES: dict[type, tuple[str, ...] | None] = {}
_UNSEEN: Any = object()


def _retrieve_prefixes(cls: type) -> tuple[str, ...] | None:
    """Span ids of a retriever's ``retrieve``/``aretrieve`` are ``"<class name>.<method>-<uuid4>"``."""
    prefixes = (f"{cls.__name__}.retrieve-", f"{cls.__name__}.aretrieve-") if issubclass(cls, BaseRetriever) else None
    if len(_RETRIEVE_PREFIXES) < 10_000:
        _RETRIEVE_PREFIXES[cls] = prefixes
    return prefixes


def _failed(tap: Any, where: str, exc: Exception) -> None:
    """Count a failure of our own bookkeeping (see :func:`rankbridge.callbacks._recorder.guarded`)."""
    with contextlib.suppress(Exception):
        tap._recorder.internal_error(where, exc)


_FIELDS = ("id", "metadata", "score")
_FIELDS_TEXT = ("id", "metadata", "text", "score")


def _snapshot_text_nodes(nodes: Any, text: bool) -> Snapshot | None:
    """The snapshot of a list of ``NodeWithScore`` over plain ``TextNode`` objects, scores included, in one pass.

    The common case (BM25, vector stores) read without the generic per-class machinery: a record is made
    inside the application's call, where every instruction runs with cold caches. ``None`` for anything
    else (other node classes, subclasses that may override ``get_content``), which takes the generic path.
    The scores ride in the snapshot and an empty metadata dict is not kept (each node has its own): every
    object a record keeps alive brings the garbage collector round sooner inside the app.
    """
    if type(nodes) is not list or not nodes:
        return None
    out = Snapshot()
    add = out.extend
    for n in nodes:
        if type(n) is not NodeWithScore:
            return None
        node = n.node
        if type(node) is not TextNode:
            return None
        # BaseNode.node_id returns id_, TextNode.get_content() returns text (see PLAIN_ATTRS)
        meta = node.metadata or EMPTY_METADATA
        add((node.id_, meta, node.text, n.score) if text else (node.id_, meta, n.score))
    out.fields = _FIELDS_TEXT if text else _FIELDS
    out.cls = TextNode
    return out


def _result_nodes(result: Any) -> Any:
    if isinstance(result, list):
        return result if result else None
    return getattr(result, "source_nodes", None)


class _Tap:
    """The bookkeeping behind the handler (plain Python; no pydantic on the hot path)."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._parents: dict[str, str | None] = {}  # open span -> parent span
        self._open: dict[str, CaptureRecord | None] = {}  # open retrieval span
        # span -> finished records awaiting a final list, each with the list it retrieved and its scores (or the
        # snapshot that carries them); the framework's objects are held only until the enclosing span ends (the
        # app holds them till then too)
        self._waiting: dict[str, list[tuple[CaptureRecord, list[Any], list[Any] | None]]] = {}
        # the recorder's settings, read once (they are fixed when it is made)
        self._fast_snapshot = recorder.light and not recorder.snap_ref
        self._snap_text = recorder.snap_text

    def forget(self) -> None:
        """Drop every open span and retrieval (the handler was taken off: their ends will not come)."""
        self._parents.clear()
        self._open.clear()
        self._waiting.clear()

    # -- called by the span handler inside its try block (a failure is counted there) -----------------
    # these run inside the application's call, where every instruction is paid several times over (cold
    # caches): they are kept flat, with few calls
    def start(self, id_: str, bound_args: Any, instance: Any, parent_id: str | None, tags: Any) -> None:
        """A span whose id holds ``"retrieve-"``: open a record if it is a retriever's ``retrieve``."""
        cls = type(instance)
        prefixes = _RETRIEVE_PREFIXES.get(cls, _UNSEEN)
        if prefixes is _UNSEEN:
            prefixes = _retrieve_prefixes(cls)
        if prefixes is None or not id_.startswith(prefixes) or not self._recorder.enabled:
            return
        arguments = bound_args.arguments
        q = arguments.get("str_or_query_bundle")
        if q is None:  # a subclass that renamed the parameter
            q = next(iter(arguments.values()), "")
        if type(q) is not str:
            q = q.query_str if type(q) is QueryBundle else _query_text(q)
        open_retrieval(self._recorder, self._parents, self._open, id_, parent_id, q, cls.__name__, tags)

    def end(self, id_: str, parent: str | None, nodes: Any) -> None:
        record = self._open.pop(id_, None)
        if record is None:
            return
        record.latency = time.perf_counter() - record._t0
        snap = _snapshot_text_nodes(nodes, self._snap_text) if self._fast_snapshot else None
        scores: list[Any] | Snapshot | None  # (the snapshot stands for its scores until they are needed)
        if snap is not None:
            record.set_snapshot(snap, None)
            scores = snap
        else:
            scores = _scores(nodes)
            record.set_items(nodes if nodes is not None else [], scores, self._recorder)  # copies what hits need
        if record._is_nested:
            return
        if record.nested:
            # a wrapper around one retriever (auto-merging, recursive): first stage, then its output
            record.promote_nested()
        if parent is not None and type(nodes) is list and len(self._waiting) < _MAX_OPEN:
            waiting = self._waiting.get(parent)
            if waiting is None:
                self._waiting[parent] = [(record, nodes, scores)]
            else:
                waiting.append((record, nodes, scores))
        self._recorder.add(record)

    def finish_waiting(self, id_: str, parent: str | None, result: Any) -> None:
        waiting = self._waiting.pop(id_, None)
        if not waiting:
            return
        final = result if type(result) is list else getattr(result, "source_nodes", None)
        if len(waiting) == 1 and type(final) is list and final and final == waiting[0][1]:
            # the common case: the nodes the retriever returned (a query engine without postprocessors;
            # list == compares the very same objects without calling their __eq__); they make a new final
            # list only if a reranker changed their scores in place
            record, _, retrieved_scores = waiting[0]
            if type(retrieved_scores) is Snapshot:
                retrieved_scores = snapshot_scores(retrieved_scores)
            if [n.score for n in final] != retrieved_scores:
                record.set_final(final, [n.score for n in final], self._recorder)
            return
        final = _result_nodes(result)
        scores = _scores(final) if final is not None else None
        if scores is not None:
            if len(waiting) == 1:  # several retrievals under one result: which list is whose is unknown
                waiting[0][0].set_final(final, scores, self._recorder)  # other nodes than it retrieved
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


class RankbridgeSpanHandler(BaseSpanHandler[Any]):  # type: ignore[misc]
    """Records retrieval spans and tracks the parent of every open span (keeps no span objects).

    :func:`attach` makes one with :meth:`bound_to`: it is then of a subclass made for its tap, whose
    ``span_enter`` / ``span_exit`` reach the tap's maps through closure cells.
    """

    tap: Any = None

    def __init__(self, tap: Any) -> None:
        super().__init__()
        self.tap = tap

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "RankbridgeSpanHandler"

    @classmethod
    def bound_to(cls, tap: _Tap) -> RankbridgeSpanHandler:
        """A handler that records into ``tap``.

        ``span_enter`` / ``span_exit`` run for every span of the app (12 per ``RetrieverQueryEngine``
        query), inside its call, with cold caches. They are closures over the tap's maps, so that most
        spans leave after one dict store and a substring test (enter) or one ``pop`` and two membership
        tests (exit), without attribute lookups on this pydantic model (Python 3.11 does not specialise
        those: pydantic defines ``__getattr__``). A failure of ours is counted and swallowed.
        """
        parents, open_, waiting = tap._parents, tap._open, tap._waiting
        start, end, finish_waiting = tap.start, tap.end, tap.finish_waiting

        class BoundSpanHandler(cls):  # type: ignore[valid-type,misc]
            def span_enter(
                self,
                id_: str,
                bound_args: Any,
                instance: Any = None,
                parent_id: str | None = None,
                tags: dict[str, Any] | None = None,
                **kwargs: Any,
            ) -> None:
                """Remember the span's parent; open a record when the span is a retriever's ``retrieve``."""
                try:
                    if len(parents) < _MAX_OPEN:
                        parents[id_] = parent_id
                    if "retrieve-" in id_:  # most spans: a cheaper test than the class lookup in start()
                        start(id_, bound_args, instance, parent_id, tags)
                except Exception as exc:
                    _failed(tap, "span_enter", exc)

            def span_exit(
                self, id_: str, bound_args: Any, instance: Any = None, result: Any = None, **kwargs: Any
            ) -> None:
                """Close the span: finish its retrieval, or hand its result to retrievals waiting for a final list."""
                try:
                    parent = parents.pop(id_, None)
                    if id_ in open_:
                        end(id_, parent, result)
                    if id_ in waiting:
                        finish_waiting(id_, parent, result)
                except Exception as exc:
                    _failed(tap, "span_exit", exc)

        return BoundSpanHandler(tap)

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


#: every attachment edits the same list of the root dispatcher
_DISPATCHER_LOCK = threading.Lock()


class _Attachment:
    """The handler on the root dispatcher: calling it detaches it; :meth:`set_active` pauses it.

    While attached, the handler takes the place of LlamaIndex's default ``NullSpanHandler`` (a handler
    whose methods do nothing) when the root dispatcher has one, and puts it back on detach: LlamaIndex
    then calls as many span handlers per span as it does without capture, rather than one more on each
    of the app's spans (12 per ``RetrieverQueryEngine`` query). Without a ``NullSpanHandler`` the
    handler is appended.

    The handler list is replaced, not mutated, so a thread iterating it meanwhile is unaffected.
    """

    def __init__(self, tap: _Tap) -> None:
        self._dispatcher = get_dispatcher()
        self._tap = tap
        self._spans = RankbridgeSpanHandler.bound_to(tap)
        self._replaced: Any = None  # the NullSpanHandler the handler stands in for
        self._on = False

    def set_active(self, active: bool) -> None:
        """Put the handler on the dispatcher, or take it off.

        Off, LlamaIndex does not call it at all (a paused capture costs nothing). What was being tracked
        is forgotten: retrievals still running when the handler comes off are not recorded.
        """
        d = self._dispatcher
        with _DISPATCHER_LOCK:
            if active and not self._on:
                handlers = list(d.span_handlers)
                null = next((i for i, h in enumerate(handlers) if type(h) is NullSpanHandler), None)
                if null is None:
                    self._replaced = None
                    handlers.append(self._spans)
                else:
                    self._replaced = handlers[null]
                    handlers[null] = self._spans
                d.span_handlers = handlers
            elif not active and self._on:
                handlers = list(d.span_handlers)
                ours = next((i for i, h in enumerate(handlers) if h is self._spans), None)
                if ours is not None and self._replaced is not None:
                    handlers[ours] = self._replaced
                elif ours is not None:
                    del handlers[ours]
                d.span_handlers = handlers
                self._replaced = None
                self._tap.forget()
            self._on = active

    def __call__(self) -> None:
        self.set_active(False)


def attach(recorder: Recorder) -> _Attachment:
    """Record every LlamaIndex retrieval of this process into ``recorder``; returns the detach function.

    The returned object also has ``set_active(bool)``, which :attr:`rankbridge.callbacks.Capture.enabled`
    uses to take the handler off the dispatcher while a capture is paused.
    """
    attachment = _Attachment(_Tap(recorder))
    attachment.set_active(recorder.enabled)
    return attachment
