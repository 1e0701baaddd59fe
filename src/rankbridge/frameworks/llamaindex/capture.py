"""LlamaIndex instrumentation handler that records every retrieval.

Importing this module imports ``llama_index.core``; :mod:`rankbridge` and :mod:`rankbridge.capture`
import it only when a capture attaches to LlamaIndex.

One span handler goes on the root dispatcher (``llama_index.core.instrumentation.get_dispatcher()``),
which every LlamaIndex module's dispatcher propagates to, in the place of the dispatcher's do-nothing
``NullSpanHandler`` while attached (see :class:`_Attachment`). ``BaseRetriever.retrieve`` / ``aretrieve`` are
spans (the same calls that send ``RetrievalStartEvent`` / ``RetrievalEndEvent``), so one handler sees it all:

* a retrieval span's enter gives the query (its ``str_or_query_bundle`` argument), the retriever's class
  (the span's instance), the parent span and the instrument tags; its exit gives the nodes (their scores
  are copied then, since rerankers may change them in place), its drop the error;
* two context variables, which follow a request across asyncio tasks as LlamaIndex's own
  ``active_span_id`` does, give a retrieval its trace id (the outermost span, noted when a span without a
  parent opens) and tell a retriever nested in another one (fusion, recursive, auto-merging) from a
  top-level one (the innermost open retrieval);
* the *final* list: the retrieval's parent span, when it returns nodes or a response with ``source_nodes``
  (a query engine's ``retrieve``/``_query``, a chat engine's ``chat``), gives the list after node
  postprocessors and rerankers; when it returns something else (a tool's output), the outermost span's
  result is tried instead.

Why no event handler: LlamaIndex sends about as many events as spans (12 each in a ``RetrieverQueryEngine``
query), and a second handler would be called for every one of them only to ignore all but two; the span
handler is called anyway (it must see every span that may hold a final list), so it does the whole job.

LlamaIndex swallows handler exceptions, and every handler body here is wrapped anyway.

Passing a golden-set query id: ``with instrument_tags({"rankbridge_query_id": "q7"}):`` (from
``llama_index_instrumentation.dispatcher``) or ``with query_id("q7"):``.

Examples
--------
With llama-index-core installed (not run here)::

    from rankbridge.capture import Recorder
    from rankbridge.frameworks.llamaindex import capture as li_capture

    rec = Recorder(id_from="ref_doc_id")
    detach = li_capture.attach(rec)
    query_engine.query("what causes scurvy?")
    detach()
    rec.records[0].retrieved, rec.records[0].final
    detach.to_run(golden)       # the records as a Run, matched to the golden set as capture() matches them

or a handler put on the dispatcher by the app itself (it sees every retrieval of the process while there)::

    from llama_index.core.instrumentation import get_dispatcher

    handler = RankbridgeSpanHandler.create(id_from="ref_doc_id")
    get_dispatcher().add_span_handler(handler)
    for qid, question in golden.texts().items():
        with query_id(qid):
            chat_engine.chat(question)
    run = handler.to_run(golden)                  # also handler.summary(golden), handler.as_capture(golden)
    get_dispatcher().span_handlers.remove(handler)
"""

from __future__ import annotations

import contextlib
import operator
import threading
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler, NullSpanHandler
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

from rankbridge.capture import (
    EMPTY_METADATA,
    NOT_RECORDED,
    QUERY_ID_KEY,
    CaptureRecord,
    Recorder,
    RecorderRuns,
    Snapshot,
    Unrecorded,
    error_text,
    guarded,
    open_record,
    own_recorder,
    small_tags,
)
from rankbridge.capture import (
    MAX_RESULTS as _MAX_RESULTS,
)
from rankbridge.frameworks.llamaindex._capture_common import MAX_OPEN as _MAX_OPEN
from rankbridge.frameworks.llamaindex._capture_common import PLAIN_ATTRS
from rankbridge.frameworks.llamaindex._capture_common import node_scores as _scores
from rankbridge.frameworks.llamaindex._capture_common import query_text as _query_text

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from rankbridge.retriever import IdSpec

__all__ = ["RankbridgeSpanHandler", "attach"]

#: class of a span's instance -> the id prefixes of its retrieve/aretrieve spans, ``None`` for a class that is
#: not a retriever
_RETRIEVE_PREFIXES: dict[type, tuple[str, ...] | None] = {}
#: classes of span instances that are not retrievers (``NoneType``: a decorated function): the span handler
#: tests every span's instance against it, and a set lookup by type is much cheaper than a prefix test on the
#: span id (docs/benchmarks.md, "handler floor")
_NOT_RETRIEVERS: set[type] = {type(None)}
#: "not in this cache / map" (``None`` is a value of both)
_UNSEEN: Any = object()


class _Stamp:
    """Marks the outermost spans one handler noted during one stay on the dispatcher.

    While on, a handler sees every span, so the outermost span it last noted in a context is that context's
    current one. Once it is off, that span may end and the next one open unseen: it then notes with a new
    stamp, and a note whose stamp is no longer ``live`` is not trusted (any live stamp is: its handler was on
    all along, so what it noted is current, whichever handler reads it).
    """

    __slots__ = ("live",)

    def __init__(self) -> None:
        self.live = True


#: The outermost span of the request (with the stamp of the handler that noted it, when a span without a
#: parent opened) and the innermost open retrieval span. They follow a request across asyncio tasks and copied
#: contexts exactly as LlamaIndex's own ``active_span_id`` does, from which the parent ids come. One pair for
#: the process (context variables belong at module level): every attached handler sees the same spans and
#: would set the same values; each reads the retrieval through its own map of open ones (a retrieval one
#: capture samples out, another may record). Values are never reset (a ContextVar.set copies the context's
#: map): a retrieval id left behind reads as "none open" once it is out of that map.
_TRACE: ContextVar[tuple[_Stamp, str] | None] = ContextVar("rankbridge_llamaindex_trace", default=None)
_RETRIEVAL: ContextVar[str | None] = ContextVar("rankbridge_llamaindex_retrieval", default=None)


def _retrieve_prefixes(cls: type) -> tuple[str, ...] | None:
    """Span ids of a retriever's ``retrieve``/``aretrieve`` are ``"<class name>.<method>-<uuid4>"``."""
    prefixes = (f"{cls.__name__}.retrieve-", f"{cls.__name__}.aretrieve-") if issubclass(cls, BaseRetriever) else None
    if len(_RETRIEVE_PREFIXES) < 10_000:
        _RETRIEVE_PREFIXES[cls] = prefixes
        if prefixes is None:
            _NOT_RETRIEVERS.add(cls)
    return prefixes


def _failed(tap: Any, where: str, exc: Exception) -> None:
    """Count a failure of our own bookkeeping (see :func:`rankbridge.capture.guarded`)."""
    with contextlib.suppress(Exception):
        tap._recorder.internal_error(where, exc)


#: C getters for reading many nodes under map(). Inside the app's call each bytecode is an indirect branch
#: the CPU mispredicts (cold predictors): a per-node Python loop costs more there than hot timings show
_node_dict = operator.attrgetter("__dict__")
_score_of = operator.itemgetter("score")

_FIELDS = ("id", "metadata", "score")
_FIELDS_TEXT = ("id", "metadata", "text", "score")
_FIELDS_REF = ("id", "metadata", "ref_doc_id", "score")
_FIELDS_TEXT_REF = ("id", "metadata", "text", "ref_doc_id", "score")
_SOURCE = NodeRelationship.SOURCE


def _snapshot_text_nodes(nodes: Any, text: bool, ref: bool = False) -> Snapshot | None:
    """The snapshot of a list of ``NodeWithScore`` over plain ``TextNode`` objects, scores included, in one pass.

    The common case (BM25, vector stores) read without the generic per-class machinery: a record is made
    inside the application's call, where every instruction runs with cold caches. ``None`` for anything
    else (other node classes, subclasses that may override ``get_content``), which takes the generic path.
    The scores ride in the snapshot and an empty metadata dict is not kept (each node has its own): every
    object a record keeps alive brings the garbage collector round sooner inside the app.

    ``ref``: also copy each node's ``ref_doc_id`` (its source document's id). ``BaseNode.ref_doc_id`` is a
    property over another property (``source_node``): ``None`` without a ``NodeRelationship.SOURCE`` entry in
    ``relationships``, else that entry's ``node_id``, and a ``ValueError`` when the entry is a list. The same is
    read here from the instance dicts, without the two property calls through pydantic's hooked attribute
    path. An entry that is not a plain ``RelatedNodeInfo`` (a list, a subclass that may override ``node_id``)
    gives ``None``: the generic path then reads ``ref_doc_id`` itself, exactly as it fails or succeeds there.
    """
    if type(nodes) is not list or not nodes:
        return None
    out = Snapshot()
    add = out.extend
    # capture()'s case (texts, no ref_doc_id) is tested first: per node it then runs what a function of its own
    # would, one test of a local and the row
    plain = text and not ref
    for n in nodes:
        if type(n) is not NodeWithScore:
            return None
        # the fields are read from the instance dicts: pydantic models define __getattr__, which makes every
        # attribute read go through CPython's slower hooked path; one dict per object costs one such read
        d = n.__dict__
        node = d["node"]
        if type(node) is not TextNode:
            return None
        nd = node.__dict__
        # BaseNode.node_id returns id_, TextNode.get_content() returns text (see PLAIN_ATTRS)
        meta = nd["metadata"] or EMPTY_METADATA
        if plain:
            add((nd["id_"], meta, nd["text"], d["score"]))
            continue
        if not ref:
            add((nd["id_"], meta, d["score"]))
            continue
        source = nd["relationships"].get(_SOURCE)
        if source is not None:
            if type(source) is not RelatedNodeInfo:
                return None
            # one hooked read of a field the instance dict holds: cheaper than going through its __dict__
            source = source.node_id
        add((nd["id_"], meta, nd["text"], source, d["score"]) if text else (nd["id_"], meta, source, d["score"]))
    # "score" last: finish_waiting reads it by position
    out.fields = (_FIELDS_TEXT_REF if ref else _FIELDS_TEXT) if text else (_FIELDS_REF if ref else _FIELDS)
    out.cls = TextNode
    return out


_node_of = operator.itemgetter("node")
_id_of = operator.itemgetter("id_")


def _same_nodes(final: list[Any], entry: tuple[Any, Any, Any]) -> bool:
    """Is ``final`` the list a waiting retrieval returned (same nodes, in the same order)?

    With the objects kept (``retain="objects"``), ``list ==`` compares the very same objects without calling
    their ``__eq__``. In light mode only the fast snapshot waits (see :meth:`_Tap.end`): the same node ids in
    the same order, read by C getters under ``map()``. A node a postprocessor edited in place reads the same
    either way; another node object with the same id and score reads as the same list, as its hits would.
    """
    nodes, snap = entry[1], entry[2]
    if nodes is not None:
        return final == nodes  # type: ignore[no-any-return]
    if type(snap) is not Snapshot:
        return False  # the generic snapshot: the final list is kept (and compared when read)
    stride = len(snap.fields)
    if len(final) * stride != len(snap):
        return False
    try:
        return list(map(_id_of, map(_node_dict, map(_node_of, map(_node_dict, final))))) == snap[::stride]
    except Exception:  # not NodeWithScore objects: not the list retrieved
        return False


def _result_nodes(result: Any) -> Any:
    if isinstance(result, list):
        return result if result else None
    return getattr(result, "source_nodes", None)


class _Tap:
    """The bookkeeping behind the handler (plain Python; no pydantic on the hot path).

    No map of every open span is kept: LlamaIndex opens ~12 spans per ``RetrieverQueryEngine`` query and
    hands each one's parent to ``span_enter`` only, so such a map costs a store and a pop per span, inside
    the app's call. The two context variables ``_TRACE`` and ``_RETRIEVAL`` say what a walk up that map
    would: the outermost span of the request and the innermost open retrieval.
    """

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._open: dict[str, CaptureRecord | Unrecorded] = {}  # open retrieval span -> its record
        # open nested retrieval span -> the open retrieval it is nested in (handed back to _RETRIEVAL at its end)
        self._nested_in: dict[str, str] = {}
        #: the stamp of the outermost spans this handler notes (see _Stamp); renewed whenever it goes back on
        self.stamp = _Stamp()
        # span -> finished records awaiting a final list, each with the list it retrieved (retain="objects" only:
        # in light mode None, so the host's nodes and their embeddings can be freed while the span stays open)
        # and its scores (or the snapshot that carries them, ids first). Empty most of the time: a span's end then
        # costs no lookup.
        self._waiting: dict[str, list[tuple[CaptureRecord, list[Any] | None, Any]]] = {}
        # the recorder's settings, read once (they are fixed when it is made)
        self._fast_snapshot = recorder.light
        self._snap_text = recorder.snap_text
        self._snap_ref = recorder.snap_ref

    def forget(self) -> None:
        """Drop every open retrieval and waiting record (the handler was taken off: their ends will not come)."""
        self._open.clear()
        self._nested_in.clear()
        self._waiting.clear()

    # -- called by the span handler inside its try block (a failure is counted there) -----------------
    # these run inside the application's call, where every instruction is paid several times over (cold
    # caches): they are kept flat, with few calls
    def start(self, id_: str, bound_args: Any, instance: Any, parent_id: str | None, tags: Any) -> None:
        """A span on an instance not known to be other than a retriever: open a record if it is a ``retrieve``.

        A retrieval inside an open one (fusion, recursive, auto-merging retrievers) is nested in the
        innermost one and shares its trace; inside an unrecorded one it is not recorded either. A top-level
        one is recorded only if ``Recorder.admit()`` says so (sampling, cap). The query id comes from
        ``tags`` (``rankbridge_query_id``), else from :func:`~rankbridge.capture.query_id`.
        """
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
        open_ = self._open
        if len(open_) >= _MAX_OPEN:
            return
        outer_id = _RETRIEVAL.get()
        # the variable may name a retrieval that has ended (a top-level one leaves its id; see end())
        outer = open_.get(outer_id, _UNSEEN) if outer_id is not None else _UNSEEN
        if outer is NOT_RECORDED:  # inside an unrecorded retrieval (the variable keeps naming that one)
            open_[id_] = NOT_RECORDED
            return
        if outer is _UNSEEN:
            if not self._recorder.admit():
                open_[id_] = NOT_RECORDED
                _RETRIEVAL.set(id_)
                return
            # (unknown when the outermost span opened before the handler was on: its parent is the best known)
            noted = _TRACE.get()
            if noted is not None and noted[0].live:
                trace = noted[1]
            else:
                trace = parent_id if parent_id is not None else id_
            outer = None
        else:
            trace = outer._trace_id
            self._nested_in[id_] = cast(str, outer_id)  # (an open retrieval was found under it)
        qid = tags.get(QUERY_ID_KEY) if tags else None
        open_[id_] = open_record("llamaindex", q, id_, cls.__name__, qid, parent_id, trace, small_tags(tags), outer)
        _RETRIEVAL.set(id_)

    def end(self, id_: str, nodes: Any) -> None:
        record = self._open.pop(id_, NOT_RECORDED)
        if record is NOT_RECORDED:  # (the variable may keep its id, as below)
            return
        record.latency = time.perf_counter() - record._t0
        if record._is_nested:
            # a nested one hands the variable back to the one around it; a top-level one leaves its own id
            # there, which reads as "none open" once it is out of _open (span ids are never reused), and
            # saves a ContextVar.set (it copies the context's map) in the common case
            self._hand_back(id_)
        if type(nodes) is list and len(nodes) > _MAX_RESULTS:  # bounded work inside the app's call
            nodes = nodes[:_MAX_RESULTS]
            self._recorder.truncated()
        snap = _snapshot_text_nodes(nodes, self._snap_text, self._snap_ref) if self._fast_snapshot else None
        scores: list[Any] | Snapshot | None  # (the snapshot stands for its scores until they are needed)
        if snap is not None:
            record.set_snapshot(snap, None)
            scores = snap
        else:
            scores = _scores(nodes)
            # copies what hits need
            record.set_items(nodes if nodes is not None else [], scores, self._recorder, PLAIN_ATTRS)
        if record._is_nested:
            return
        if record.nested:
            # a wrapper around one retriever (auto-merging, recursive): first stage, then its output
            record.promote_nested()
        parent = record._parent_id
        if parent is not None and type(nodes) is list and len(self._waiting) < _MAX_OPEN:
            # what waits for the enclosing span: in light mode the snapshot only, never the nodes (with their
            # embeddings: the enclosing span may stay open long after the retrieval, see docs/capture.md); the
            # objects only with retain="objects", which keeps them anyway
            kept = None if self._fast_snapshot else nodes
            waiting = self._waiting.get(parent)
            if waiting is None:
                self._waiting[parent] = [(record, kept, scores)]
            else:
                waiting.append((record, kept, scores))
        self._recorder.add(record)

    def finish_waiting(self, id_: str, result: Any) -> None:
        """The span ``id_`` ends: its result is the final list of the retrievals waiting on it.

        A result without nodes (a tool's output, an agent step) sends them on to wait for the outermost span
        (a chat engine's or agent's response with ``source_nodes``); the levels between are not looked at.
        """
        waiting = self._waiting.pop(id_, None)
        if not waiting:
            return
        final = result if type(result) is list else getattr(result, "source_nodes", None)
        if type(final) is list and len(final) > _MAX_RESULTS:  # as the retrieved lists are (see end)
            final = final[:_MAX_RESULTS]
        if len(waiting) == 1 and type(final) is list and final and _same_nodes(final, waiting[0]):
            # the common case: the nodes the retriever returned (a query engine without postprocessors); they
            # make a new final list only if a reranker changed their scores in place
            record, _, retrieved_scores = waiting[0]
            if type(retrieved_scores) is Snapshot:
                # plain NodeWithScore objects (see _snapshot_text_nodes), score last in each entry; read by C
                # getters under map(): no bytecode runs per node (see _node_dict)
                stride = len(retrieved_scores.fields)
                if list(map(_score_of, map(_node_dict, final))) == retrieved_scores[stride - 1 :: stride]:
                    return
            elif [n.score for n in final] == retrieved_scores:
                return
            record.set_final(final, [n.score for n in final], self._recorder, PLAIN_ATTRS)
            return
        final = _result_nodes(result)
        if type(final) is list and len(final) > _MAX_RESULTS:
            final = final[:_MAX_RESULTS]
        scores = _scores(final) if final is not None else None
        if scores is not None:
            if len(waiting) == 1:  # several retrievals under one result: which list is whose is unknown
                waiting[0][0].set_final(final, scores, self._recorder, PLAIN_ATTRS)  # other nodes than it retrieved
            return
        # (the outermost span ends after this one, its descendant, in the same context; should it have ended
        # already, as when a task outlives its request, the records wait until the capture ends, within the
        # bound on waiting spans)
        for entry in waiting:
            trace = entry[0]._trace_id
            if trace is not id_ and len(self._waiting) < _MAX_OPEN:
                self._waiting.setdefault(trace, []).append(entry)

    def _hand_back(self, id_: str) -> None:
        """A nested retrieval ends: the one it was nested in is the innermost open one again."""
        outer_id = self._nested_in.pop(id_, None)
        if outer_id is not None and _RETRIEVAL.get() is id_:
            _RETRIEVAL.set(outer_id)

    @guarded
    def span_drop(self, id_: str, err: BaseException | None) -> None:
        self._waiting.pop(id_, None)
        record = self._open.pop(id_, NOT_RECORDED)
        if record is NOT_RECORDED:
            return
        if record._is_nested:
            self._hand_back(id_)
        record.latency = time.perf_counter() - record._t0
        record.error = error_text(err) if err is not None else "retrieval span dropped"
        if not record._is_nested:
            self._recorder.add(record)


class RankbridgeSpanHandler(RecorderRuns, BaseSpanHandler[Any]):  # type: ignore[misc]
    """Records retrieval spans, and the results of the spans around them (keeps no span objects).

    :func:`attach` makes one with :meth:`bound_to`: it is then of a subclass made for its tap, whose
    ``span_enter`` / ``span_exit`` reach the tap's maps through closure cells. An app that adds handlers to
    the dispatcher itself makes one with :meth:`create` and reads it back with :meth:`to_run`,
    :meth:`summary` and :meth:`as_capture` (see :class:`~rankbridge.capture.RecorderRuns`).
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
    def create(
        cls,
        recorder: Recorder | None = None,
        *,
        id_from: IdSpec | None = None,
        doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
        keep_text: bool = True,
    ) -> RankbridgeSpanHandler:
        """A handler for ``get_dispatcher().add_span_handler(...)``, recording into ``recorder`` (or its own).

        ``id_from``, ``doc_map`` and ``keep_text`` configure its own recorder (see
        :func:`rankbridge.capture.capture`). On the root dispatcher it sees every retrieval of the process
        until the app takes it off (``get_dispatcher().span_handlers.remove(handler)``).

        Examples
        --------
        >>> handler = RankbridgeSpanHandler.create(id_from="ref_doc_id")
        >>> handler.recorder.id_from, handler.summary()["records"]
        ('ref_doc_id', 0)
        """
        return cls.bound_to(_Tap(own_recorder(recorder, id_from, doc_map, keep_text)))

    @property
    def recorder(self) -> Recorder:
        """The recorder this handler writes to."""
        return self.tap._recorder  # type: ignore[no-any-return]

    def _runs_recorder(self) -> Recorder:
        return self.tap._recorder  # type: ignore[no-any-return]

    def _runs_framework(self) -> str:
        return "llamaindex"

    @classmethod
    def bound_to(cls, tap: _Tap) -> RankbridgeSpanHandler:
        """A handler that records into ``tap``.

        ``span_enter`` / ``span_exit`` run for every span of the app (12 per ``RetrieverQueryEngine``
        query), inside its call, with cold caches. They are closures over the tap's maps, so that most
        spans leave after a ``None`` test and a set lookup by class (enter) or two empty-dict tests (exit),
        without attribute lookups on this pydantic model (Python 3.11 does not specialise those: pydantic
        defines ``__getattr__``). A failure of ours is counted and swallowed.
        """
        # (few closure cells: each one is copied into every call's frame and released when it returns)
        open_, waiting = tap._open, tap._waiting

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
                """Note an outermost span; open a record when the span is a retriever's ``retrieve``."""
                try:
                    if parent_id is None:  # an outermost span: the trace of every retrieval under it
                        _TRACE.set((tap.stamp, id_))
                    if type(instance) not in _NOT_RETRIEVERS:  # most spans leave here
                        tap.start(id_, bound_args, instance, parent_id, tags)
                except Exception as exc:
                    _failed(tap, "span_enter", exc)

            def span_exit(
                self, id_: str, bound_args: Any, instance: Any = None, result: Any = None, **kwargs: Any
            ) -> None:
                """Close the span: finish its retrieval, or hand its result to retrievals waiting for a final list."""
                try:
                    # (most spans leave on the empty-dict tests, without hashing their id)
                    if open_ and id_ in open_:
                        tap.end(id_, result)
                    if waiting and id_ in waiting:
                        tap.finish_waiting(id_, result)
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


class _Attachment(RecorderRuns):
    """The handler on the root dispatcher: calling it detaches it; :meth:`set_active` pauses it.

    It reads its records back like a handler does (``to_run``, ``summary``, ``as_capture``, ``clear``).

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
            if active != self._on:
                # what the handler noted before may end unseen while it is off (see _Stamp)
                self._tap.stamp.live = False
                self._tap.stamp = _Stamp()
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

    @property
    def recorder(self) -> Recorder:
        """The recorder the handler writes to."""
        return self._tap._recorder

    def _runs_recorder(self) -> Recorder:
        return self._tap._recorder

    def _runs_framework(self) -> str:
        return "llamaindex"


def attach(recorder: Recorder, *, trace: bool = True) -> _Attachment:
    """Record every LlamaIndex retrieval of this process into ``recorder``; returns the detach function.

    ``trace`` is accepted for the registry's one signature (:func:`rankbridge.frameworks.attach_capture`):
    spans always give LlamaIndex records their ``trace_id``.

    The returned object also has ``set_active(bool)``, which :attr:`rankbridge.capture.Capture.enabled`
    uses to take the handler off the dispatcher while a capture is paused.
    """
    attachment = _Attachment(_Tap(recorder))
    attachment.set_active(recorder.enabled)
    return attachment
