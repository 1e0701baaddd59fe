"""Live capture: record the retrievals a running LlamaIndex or LangChain app makes, as a :class:`~rankbridge.Run`.

``capture()`` attaches a handler to every installed framework (LlamaIndex instrumentation, LangChain
callbacks; LlamaIndex's legacy ``CallbackManager`` with ``frameworks=["llamaindex_legacy"]``), lets the
application run as usual, and detaches on exit::

    with rankbridge.capture(golden=golden, id_from="ref_doc_id") as cap:
        query_engine.query("What causes scurvy?")          # LlamaIndex, nested in a query engine
        chain.invoke("what causes scurvy",                  # LangChain, nested in a chain
                     config={"metadata": {"rankbridge_query_id": "q1"}})
    rankbridge.evaluate(golden.qrels, cap.run, ["ndcg@10"])
    cap.summary()        # matched by id / by text, unmatched, dropped, sampled out, internal errors

Matching captured queries to the golden set
-------------------------------------------
1. By id, when the application passes one:

   * any framework: ``with query_id("q1"): app(...)`` (``from rankbridge.capture import query_id``; a
     context variable: it follows ``await`` and tasks created inside the block, not threads started by hand);
   * LangChain: ``config={"metadata": {"rankbridge_query_id": "q1"}}`` or the tag
     ``"rankbridge_query_id=q1"``;
   * LlamaIndex: ``with instrument_tags({"rankbridge_query_id": "q1"}):`` (from
     ``llama_index_instrumentation.dispatcher``; LlamaIndex copies those tags onto every event).
     ``QueryBundle`` has no metadata field, so a query engine call cannot carry the id by itself.

2. Else by normalised text (:func:`normalize_query`: case, spacing, punctuation ignored).
3. Else the query is kept under :func:`query_key` of its text and listed in :attr:`Capture.unmatched`.

Records, lists and export
-------------------------
``cap.records`` are the raw :class:`CaptureRecord` objects (query, ids of the run, its parent and its
trace -- LangChain: with ``capture(trace=True)`` --, retriever class, ``retrieved`` and ``final`` hits,
latency, error, ``nested`` retrievals).
``cap.run`` is a ranked :class:`~rankbridge.Run` of the list the app used (``final`` when a reranker or
node postprocessor changed it, else ``retrieved``); ``cap.to_run(stage="retrieved")`` gives the
retriever's own lists. Export with ``cap.write_trec(path)`` / ``cap.write_jsonl(path)``, or keep it in
the history store: ``RunStore(path).save(rankbridge.evaluate(qrels, cap.run, metrics), run=cap.run)``.
No qrels? ``grades = cap.judge(llm)`` has an LLM grade the top results 0-3 (:mod:`rankbridge.judge`), then
``rankbridge.evaluate(grades.qrels, cap.run, metrics)``.

Doc ids and partial captures
----------------------------
With a :class:`~rankbridge.GoldenSet` that has a corpus or qrels, reading the run checks a sample of the
captured results' ids against them (:mod:`rankbridge.idmatch`). UUID chunk ids (LlamaIndex
``SentenceSplitter`` nodes, LangChain ``add_documents`` without ids) are resolved to the one source that
names known documents (``ref_doc_id``, ``metadata:KEY``) when ``id_from`` was not given
(``run.config["id_resolution"]``, ``cap.summary()["id_check"]``); otherwise, and whenever an explicit
``id_from`` / ``doc_map`` does not match, reading raises :class:`~rankbridge.errors.IdMismatchError`
(``cap.to_run(check_ids=False)`` returns the run as it is). The run's config carries ``"golden_size"``
and ``"golden_missing"``: :func:`rankbridge.evaluate` scores a capture run on the questions it saw, not
the missing ones as 0 (``missing="zero"`` does that). See :meth:`Capture.to_run`.

Safety inside someone else's app
--------------------------------
Handlers never raise into the host (their failures are counted in ``cap.summary()["internal_errors"]``),
never do I/O, hold a lock only to append a record, keep at most ``max_records`` records (the rest are
counted as dropped), sample with ``sample_rate``, and are not called at all while ``cap.enabled`` is
``False`` (LlamaIndex's are taken off the dispatcher; LangChain's is given to no new run). Results are
turned into hits (doc ids resolved with ``id_from``) only when :attr:`Capture.run` or
:attr:`Capture.records` is read. When a retrieval ends, records copy each result's own id, score, text
and metadata and let the framework's objects go (``retain="objects"``, or a callable ``id_from``, keeps
the objects until the run is read instead).

Examples
--------
The framework-free parts (the frameworks are exercised in ``tests/test_capture_*.py``):

>>> with capture(frameworks=(), golden={"q1": "What causes scurvy?"}) as cap:
...     pass
>>> cap.attached, len(cap.run), cap.summary()["missing"]
((), 0, ['q1'])
>>> normalize_query("What causes SCURVY?")
'what causes scurvy'

The core (records, the bounded recorder, query matching)
--------------------------------------------------------

Handlers (:mod:`rankbridge.frameworks.llamaindex.capture`, :mod:`rankbridge.frameworks.langchain.capture`) run
inside the host application, on its threads and its event loop. Everything they call here is therefore

* cheap -- no I/O; a record copies a few plain values of each result (its own id, text, a reference to
  its metadata, its score: a :class:`Snapshot`) so that the framework's objects can be freed, and is
  turned into :class:`~rankbridge.Hit` objects (doc ids resolved) only when the run is read;
* bounded -- at most ``max_records`` records are kept, later ones are counted in
  :attr:`Recorder.dropped`, and at most ``max_text_bytes`` of result texts (counted in characters), later
  texts are counted in :attr:`Recorder.texts_dropped`;
* thread- and task-safe -- one short lock guards the record list and the counters, never held
  across a call into user code;
* never raising -- :func:`guarded` wraps every handler method, so a failure of rankbridge's own
  bookkeeping is counted in :attr:`Recorder.internal_errors` and the host carries on.

Examples
--------
>>> rec = Recorder(max_records=1)
>>> r = CaptureRecord(framework="test", query="What causes scurvy?", run_id="r1", retriever="Static")
>>> r.set_items([{"id": "d1", "score": 2.0}, {"id": "d2", "score": 1.0}])
>>> rec.add(r), rec.add(r)
(True, False)
>>> rec.dropped
1
>>> [h.doc_id for h in rec.records[0].retrieved]
['d1', 'd2']
>>> normalize_query("  What causes   SCURVY? ")
'what causes scurvy'
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import functools
import hashlib
import itertools
import operator
import os
import random
import threading
import time
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, ParamSpec, TypeVar

from rankbridge import idmatch
from rankbridge.errors import GoldenSetWarning, IdMismatchError, InputError, RankbridgeError
from rankbridge.io.jsonl import write_run_jsonl
from rankbridge.io.trec import write_run
from rankbridge.retriever import IdSpec, id_sources, normalize_hits, result_attributes
from rankbridge.types import GoldenSet, Hit, Query, Run

if TYPE_CHECKING:
    from rankbridge.idmatch import IdReport
    from rankbridge.judge import Judgments

__all__ = [
    "DEFAULT_MAX_TEXT_BYTES",
    "EMPTY_METADATA",
    "MAX_RESULTS",
    "NOT_RECORDED",
    "QUERY_ID_KEY",
    "Capture",
    "CaptureRecord",
    "PlainAttrs",
    "QueryMatcher",
    "Recorder",
    "RecorderRuns",
    "Unrecorded",
    "capture",
    "current_query_id",
    "guarded",
    "normalize_query",
    "own_recorder",
    "query_id",
    "query_key",
    "snapshot",
]


#: The metadata key (LangChain ``config={"metadata": {...}}``, LlamaIndex ``instrument_tags``) and tag
#: prefix (LangChain ``tags=["rankbridge_query_id=q7"]``) that carry a golden-set query id.
QUERY_ID_KEY = "rankbridge_query_id"

_current_query_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("rankbridge_query_id", default=None)

_NO_TAGS: Mapping[str, Any] = MappingProxyType({})
#: Results a record keeps of one list, in rank order (the rest are cut, counted in ``Recorder.results_truncated``):
#: copying a list is work inside the host's call, so it is bounded (tests/test_capture_memory.py counts the copies)
MAX_RESULTS = 10_000
#: Default budget of :class:`Recorder` for kept result texts (``len`` of each text; see ``max_text_bytes``).
DEFAULT_MAX_TEXT_BYTES = 256 * 2**20
#: What a snapshot may keep instead of a result's own empty metadata dict (one less object kept alive per
#: result); read back as a new empty dict, as the result had.
EMPTY_METADATA: Mapping[str, Any] = MappingProxyType({})


class Unrecorded(enum.Enum):
    """What a handler's map of open retrievals holds for one it does not record.

    A retrieval sampled out, over the cap, or nested in such a one stays in the map until it ends (so that
    the retrievals nested in it are not recorded either); this marks its place. A dedicated value, unlike
    ``None``, cannot be mistaken for "no such retrieval open".
    """

    NOT_RECORDED = "not recorded"


#: The one :class:`Unrecorded` value.
NOT_RECORDED: Final = Unrecorded.NOT_RECORDED

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def query_id(qid: str) -> Iterator[None]:
    """Tag every retrieval made inside the block with a golden-set query id (any framework).

    The id lives in a :mod:`contextvars` variable, so it follows the code into ``await`` and into
    tasks created inside the block, but not into threads started by hand (set it inside the thread).

    Examples
    --------
    >>> with query_id("q7"):
    ...     current_query_id()
    'q7'
    >>> current_query_id() is None
    True
    """
    if not isinstance(qid, str) or not qid:
        raise InputError(f"query_id must be a non-empty str. Got {qid!r} instead.")
    token = _current_query_id.set(qid)
    try:
        yield
    finally:
        _current_query_id.reset(token)


def current_query_id() -> str | None:
    """The id set by the innermost :func:`query_id` block, or ``None``."""
    return _current_query_id.get()


def guarded(method: Callable[P, R]) -> Callable[P, R | None]:
    """Wrap a handler method so that no exception of ours reaches the host application.

    The exception is counted on ``self._recorder`` (:meth:`Recorder.internal_error`) and ``None`` is
    returned. ``KeyboardInterrupt`` and ``SystemExit`` still propagate.

    Examples
    --------
    >>> class H:
    ...     def __init__(self):
    ...         self._recorder = Recorder()
    ...     @guarded
    ...     def on_event(self):
    ...         raise RuntimeError("bookkeeping bug")
    >>> h = H()
    >>> h.on_event() is None, h._recorder.internal_errors
    (True, 1)
    """

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            # even if the counting fails, stay silent: the host comes first
            with contextlib.suppress(Exception):
                args[0]._recorder.internal_error(method.__name__, exc)  # type: ignore[attr-defined]
            return None

    return wrapper


def normalize_query(text: str) -> str:
    """The form used to match a captured query to a golden-set query by text.

    Unicode NFKC, case folded, punctuation removed, whitespace collapsed.

    Examples
    --------
    >>> normalize_query("Qu'est-ce que   le SCORBUT ?")
    'quest ce que le scorbut'
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    chars = []
    for ch in folded:
        cat = unicodedata.category(ch)
        if cat[0] == "P":
            chars.append(" " if ch in "-_/" else "")
        else:
            chars.append(ch)
    return " ".join("".join(chars).split())


def query_key(text: str) -> str:
    """The query id given to a captured query that no golden-set query matches.

    ``"q:"`` and 12 hex digits of the SHA-256 of :func:`normalize_query` of the text, so the same
    question asked twice (or with other spacing and case) gets the same id.

    Examples
    --------
    >>> query_key("What causes scurvy?") == query_key("what causes  scurvy")
    True
    >>> query_key("What causes scurvy?")
    'q:6073f433fe96'
    """
    return "q:" + hashlib.sha256(normalize_query(text).encode("utf-8")).hexdigest()[:12]


# -- light snapshots of framework results ---------------------------------------------------------
#: What a handler may tell :func:`snapshot` about its framework's classes: method or property -> the plain
#: attribute it returns (LlamaIndex: ``TextNode.get_content`` -> ``"text"``), read directly instead of called.
PlainAttrs = Mapping[Any, str]
_NO_PLAIN_ATTRS: PlainAttrs = MappingProxyType({})

_NOT_FRAMEWORK = (str, bytes, bytearray, int, float, Hit, Mapping, tuple, list)
#: (class, text?, ref?, id of the plain-attribute map) -> (getter, field names), or None for a class that is
#: not snapshotted
_GETTERS: dict[tuple[type, bool, bool, int], tuple[Callable[[Any], Any], tuple[str, ...]] | None] = {}


class Snapshot(list):  # type: ignore[type-arg]
    """What a record keeps of a result list in ``retain="light"`` mode: a flat list of plain values.

    ``len(fields)`` entries per result, in rank order: the object's own id (``node_id`` / ``id``), its
    metadata mapping, and, when needed, its text and its ``ref_doc_id``; a framework's fast path may add the
    result's ``score`` (then the record keeps no separate score list). Every result is of class
    ``cls``. Ids and texts are strings, which the garbage collector does not track, so a record no
    longer keeps the framework's objects (and their many dicts) alive until the run is read.
    """

    __slots__ = ("cls", "fields")
    cls: type
    fields: tuple[str, ...]


class _SnapDoc:
    """A result rebuilt from a :class:`Snapshot`, shaped so that ``normalize_hits`` reads it exactly as
    it read the original object (own id under ``id``, text under ``text``, ``metadata``, ``ref_doc_id``)."""

    __slots__ = ("id", "metadata", "ref_doc_id", "text")

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.id = values.get("id")
        text = values.get("text")
        self.text = text if isinstance(text, str) else None
        metadata = values.get("metadata")
        self.metadata = {} if metadata is EMPTY_METADATA else metadata
        self.ref_doc_id = values.get("ref_doc_id")


_SNAP_TYPES: dict[str, type[_SnapDoc]] = {}


def _snap_type(name: str) -> type[_SnapDoc]:
    # named after the original class, so that error messages ("result at rank 2 (Document) ...") are unchanged
    cls = _SNAP_TYPES.get(name)
    if cls is None:
        if len(_SNAP_TYPES) >= 1000:
            return _SnapDoc
        cls = _SNAP_TYPES[name] = type(name, (_SnapDoc,), {"__slots__": ()})
    return cls


def _attrs(*names: str) -> Callable[[Any], tuple[Any, ...]]:
    get = operator.attrgetter(*names)
    return get if len(names) > 1 else lambda obj: (get(obj),)  # type: ignore[return-value]


def _getter(obj: Any, text: bool, ref: bool, plain: PlainAttrs) -> tuple[Callable[[Any], Any], tuple[str, ...]] | None:
    """How to snapshot objects of ``type(obj)``: read the attributes ``normalize_hits`` would read.

    ``None`` for anything that is not a framework object (ids, dicts, hits...: kept as they are) or
    whose text needs a method call other than a known plain ``get_content``.
    """
    cls = type(obj)
    out: tuple[Callable[[Any], Any], tuple[str, ...]] | None = None
    if obj is not None and not isinstance(obj, _NOT_FRAMEWORK):
        attributes = result_attributes(obj)  # exactly what normalize_hits reads
        id_kind, text_kind = attributes if attributes is not None else (None, None)
        if text_kind == "get_content":
            text_kind = plain.get(getattr(cls, "get_content", None), text_kind)
        if id_kind is not None:
            id_kind = plain.get(getattr(cls, id_kind, None), id_kind)
        if id_kind is not None and text_kind is not None and (text_kind != "get_content" or not text):
            # a class without ref_doc_id (LangChain's Document) snapshots without it, as it reads without it
            ref = ref and hasattr(obj, "ref_doc_id")
            names = [id_kind, "metadata"] + ([text_kind] if text else []) + (["ref_doc_id"] if ref else [])
            fields = ("id", "metadata") + (("text",) if text else ()) + (("ref_doc_id",) if ref else ())
            out = (_attrs(*names), fields)
    if len(_GETTERS) < 10_000:
        _GETTERS[(cls, text, ref, id(plain))] = out
    return out


def snapshot(
    objs: Sequence[Any], *, text: bool = True, ref: bool = False, plain: PlainAttrs = _NO_PLAIN_ATTRS
) -> Snapshot | None:
    """Copy what doc-id resolution needs from framework results (see :class:`Snapshot`).

    ``plain``: methods of the results' classes known to return a plain attribute (see :data:`PlainAttrs`),
    so that a class whose text is read by a method can be snapshotted too.

    ``None`` (the caller keeps the objects) when the list is empty, mixes classes, or holds anything
    that is not a framework object or cannot be read.

    Examples
    --------
    >>> class Doc:
    ...     def __init__(self, id, page_content):
    ...         self.id, self.page_content, self.metadata = id, page_content, {}
    >>> snap = snapshot([Doc("d1", "hello")])
    >>> list(snap), snap.fields, snap.cls.__name__
    (['d1', {}, 'hello'], ('id', 'metadata', 'text'), 'Doc')
    >>> snapshot(["d1"]) is None
    True
    """
    if not objs:
        return None
    cls = type(objs[0])
    try:
        how = _GETTERS.get((cls, text, ref, id(plain)), False)
        if how is False:
            how = _getter(objs[0], text, ref, plain)
        if how is None:
            return None
        get, fields = how  # type: ignore[misc]
        out = Snapshot()
        add = out.extend
        for obj in objs:
            if type(obj) is not cls:
                return None
            add(get(obj))
    except Exception:
        return None
    out.cls = cls
    out.fields = fields
    return out


def _unsnap(snap: Snapshot, scores: list[Any] | None) -> list[tuple[_SnapDoc, Any]]:
    fields = snap.fields
    stride = len(fields)
    make = _snap_type(snap.cls.__name__)
    out = []
    for i in range(0, len(snap), stride):
        values = dict(zip(fields, snap[i : i + stride], strict=True))
        # a snapshot may carry the scores itself (a "score" field) instead of a separate list
        score = values.get("score") if scores is None else scores[i // stride]
        out.append((make(values), score))
    return out


class CaptureRecord:
    """One captured retrieval, as the framework reported it.

    Attributes
    ----------
    framework:
        ``"llamaindex"`` or ``"langchain"``.
    query:
        The query text the retriever received.
    run_id:
        The framework's id of this retrieval (LlamaIndex span id, LangChain run id).
    retriever:
        The retriever's class (or run) name.
    query_id:
        The golden-set id the application passed, if any (see :func:`query_id`).
    parent_id:
        The id of the span or run that called the retriever (query engine, chain, tool...).
    trace_id:
        The id of the outermost span or run of the same request.
    started:
        Wall-clock start time (``time.time()``).
    latency:
        Seconds the retriever took (``time.perf_counter`` difference).
    error:
        ``"ExceptionType: message"`` when the retriever raised.
    nested:
        Retrievals made inside this one (the base retriever of a reranking or fusion retriever).
    tags:
        Framework tags and metadata seen at the start (small scalar values only).

    Notes
    -----
    Ids are kept as the framework gave them (LangChain ``UUID`` objects) and turned into strings when
    read: formatting them would be work on the host's call path (see docs/benchmarks.md).
    """

    __slots__ = (
        "_cache",
        "_final_items",
        "_final_scores",
        "_is_nested",
        "_items",
        "_parent_id",
        "_resolve",
        "_run_id",
        "_scores",
        "_t0",
        "_trace_id",
        "error",
        "framework",
        "latency",
        "nested",
        "query",
        "query_id",
        "retriever",
        "started",
        "tags",
    )

    # positional-or-keyword: the handlers pass them by position, which is cheaper than keywords on the host's
    # call path
    def __init__(
        self,
        framework: str,
        query: str,
        run_id: Any,
        retriever: str,
        query_id: str | None = None,
        parent_id: Any = None,
        trace_id: Any = None,
        started: float = 0.0,
        tags: Mapping[str, Any] | None = None,
    ) -> None:
        self.framework = framework
        self.query = query
        self._run_id = run_id
        self.retriever = retriever
        self.query_id = query_id
        self._parent_id = parent_id
        self._trace_id = trace_id
        self.started = started
        self.latency: float | None = None
        self.error: str | None = None
        # allocations are kept few on the host's call path: each one brings garbage collections closer
        self.nested: Sequence[CaptureRecord] = ()
        self.tags: Mapping[str, Any] = tags if tags is not None else _NO_TAGS
        self._items: list[Any] | None = None
        self._scores: list[Any] | None = None
        self._final_items: list[Any] | None = None
        self._final_scores: list[Any] | None = None
        self._resolve: Callable[[list[Any]], tuple[list[Hit], list[str]]] | None = None
        self._cache: dict[str, Any] | None = None
        self._t0 = 0.0  # perf_counter() at the start, for the latency
        self._is_nested = False  # made inside another recorded retrieval (recorded with it, not on its own)

    @property
    def run_id(self) -> str:
        """The framework's id of this retrieval."""
        return str(self._run_id)

    @property
    def parent_id(self) -> str | None:
        """The id of the calling span or run, if any."""
        return None if self._parent_id is None else str(self._parent_id)

    @property
    def trace_id(self) -> str | None:
        """The id of the outermost span or run of the same request."""
        return None if self._trace_id is None else str(self._trace_id)

    def __repr__(self) -> str:
        return (
            f"CaptureRecord(framework={self.framework!r}, query={self.query!r}, retriever={self.retriever!r}, "
            f"query_id={self.query_id!r}, run_id={self.run_id!r}, latency={self.latency!r}, error={self.error!r}, "
            f"nested={len(self.nested)})"
        )

    # -- filled in by handlers (cheap: list copies of references and score snapshots) --------------
    def set_items(
        self,
        items: Iterable[Any],
        scores: list[Any] | None = None,
        recorder: Recorder | None = None,
        plain: PlainAttrs = _NO_PLAIN_ATTRS,
    ) -> None:
        """Keep the retrieved list (rank order): framework objects, or objects plus a snapshot of scores.

        ``scores`` (one per item) are paired with ``item.node`` (LlamaIndex ``NodeWithScore``) or the
        item itself when the hits are built; rerankers mutate scores in place, so handlers copy them.
        With a ``recorder`` in ``retain="light"`` mode the objects are replaced by a :class:`Snapshot`
        (``plain``: what the handler knows of its framework's classes, see :func:`snapshot`).
        """
        self._items, self._scores = _keep(items, scores, recorder, plain)
        self._cache = None

    def set_snapshot(self, snap: Snapshot, scores: list[Any] | None) -> None:
        """Keep a snapshot a handler already took (a framework's fast path to :meth:`set_items`)."""
        self._items, self._scores = snap, scores
        self._cache = None

    def set_final(
        self,
        items: Iterable[Any],
        scores: list[Any] | None = None,
        recorder: Recorder | None = None,
        plain: PlainAttrs = _NO_PLAIN_ATTRS,
    ) -> None:
        """Keep the list that reached the application after post-processing (reranking, filtering)."""
        self._final_items, self._final_scores = _keep(items, scores, recorder, plain)
        self._cache = None

    def add_nested(self, record: CaptureRecord) -> None:
        """Attach a retrieval made inside this one."""
        if isinstance(self.nested, list):
            self.nested.append(record)
        else:
            self.nested = [record]

    def promote_nested(self) -> None:
        """A wrapper around exactly one retriever: its list becomes ``retrieved``, this one's ``final``."""
        if len(self.nested) == 1 and self.nested[0]._items is not None:
            inner = self.nested[0]
            self._final_items, self._final_scores = self._items, self._scores
            self._items, self._scores = inner._items, inner._scores
            self._cache = None

    # -- read side (may be slow: resolves doc ids) --------------------------------------------------
    def results(self, which: str = "retrieved") -> list[Any] | None:
        """The kept results of ``which`` (``"retrieved"`` or ``"final"``) as doc-id resolution reads them.

        Result objects (or ``(object, score)`` pairs); with ``retain="light"``, stand-ins rebuilt from the
        snapshot with the same own id, metadata, text and (when it was copied) ``ref_doc_id``. ``None``
        when the framework reported no such list. This is what :mod:`rankbridge.idmatch` checks.
        """
        if which == "retrieved":
            items, scores = self._items, self._scores
        else:
            items, scores = self._final_items, self._final_scores
        if items is None:
            return None
        if type(items) is Snapshot:
            return _unsnap(items, scores)  # type: ignore[return-value]
        if scores is not None:
            return [(getattr(i, "node", i), sc) for i, sc in zip(items, scores, strict=False)]
        return items

    def _compute(
        self, which: str, resolve: Callable[[list[Any]], tuple[list[Hit], list[str]]] | None
    ) -> tuple[list[Hit], list[str], str | None]:
        items = self.results(which)
        if items is None:
            return [], [], None
        try:
            hits, notes = (resolve or self._resolve or _default_resolve)(items)
        except RankbridgeError as exc:
            return [], [], str(exc)
        return hits, notes, None

    def _hits(self, which: str) -> list[Hit]:
        cache = self._cache
        if cache is None:
            cache = self._cache = {}
        if which in cache:
            return cache[which]  # type: ignore[no-any-return]
        hits, notes, error = self._compute(which, None)
        if error is not None:
            cache[which + ":error"] = error
        cache[which] = hits
        cache[which + ":notes"] = notes
        return hits

    def hits_under(
        self, resolve: Callable[[list[Any]], tuple[list[Hit], list[str]]], *, stage: str = "final"
    ) -> tuple[list[Hit], str | None]:
        """``(hits, resolve error)`` of ``stage`` with another resolver (another ``id_from``), not cached.

        ``"final"`` follows the rule of :attr:`hits`: the final list when it differs from the retrieved
        one under that resolver, else the retrieved one.
        """
        retrieved, _, error = self._compute("retrieved", resolve)
        if stage == "retrieved" or self._final_items is None:
            return retrieved, error
        final, _, final_error = self._compute("final", resolve)
        error = error or final_error
        if [(h.doc_id, h.score) for h in final] == [(h.doc_id, h.score) for h in retrieved]:
            return retrieved, error
        return final, error

    @property
    def retrieved(self) -> list[Hit]:
        """What the retriever returned, as hits in rank order."""
        return self._hits("retrieved")

    @property
    def final(self) -> list[Hit] | None:
        """What reached the application after a reranker or node postprocessor changed the list.

        ``None`` when nothing changed it (or the framework does not report it).
        """
        if self._final_items is None:
            return None
        final = self._hits("final")
        retrieved = self.retrieved
        if [(h.doc_id, h.score) for h in final] == [(h.doc_id, h.score) for h in retrieved]:
            return None
        return final

    @property
    def hits(self) -> list[Hit]:
        """The list the application used: :attr:`final` when there is one, else :attr:`retrieved`."""
        final = self.final
        return self.retrieved if final is None else final

    @property
    def resolve_error(self) -> str | None:
        """Why the doc ids of the results could not be read (see ``id_from``), or ``None``."""
        self._hits("retrieved")
        if self._final_items is not None:
            self._hits("final")
        cache = self._cache or {}
        return cache.get("retrieved:error") or cache.get("final:error")

    @property
    def notes(self) -> list[str]:
        """Notes from doc-id resolution (content hashes used, chunks collapsed to documents)."""
        self._hits("retrieved")
        return list((self._cache or {}).get("retrieved:notes", []))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly view: ids, scores, timing and errors (texts left out).

        Examples
        --------
        >>> r = CaptureRecord(framework="test", query="q", run_id="r1", retriever="Static")
        >>> r.set_items(["d1"])
        >>> r.to_dict()["retrieved"]
        [['d1', None]]
        """
        final = self.final
        return {
            "framework": self.framework,
            "query": self.query,
            "query_id": self.query_id,
            "run_id": self.run_id,
            "parent_id": self.parent_id,
            "trace_id": self.trace_id,
            "retriever": self.retriever,
            "started": self.started,
            "latency": self.latency,
            "error": self.error,
            "resolve_error": self.resolve_error,
            "retrieved": [[h.doc_id, h.score] for h in self.retrieved],
            "final": None if final is None else [[h.doc_id, h.score] for h in final],
            "nested": [n.to_dict() for n in self.nested],
        }


def _keep(
    items: Iterable[Any], scores: list[Any] | None, recorder: Recorder | None, plain: PlainAttrs
) -> tuple[list[Any], Any]:
    """The list a record keeps: a :class:`Snapshot` when the recorder allows it, else the objects."""
    if not isinstance(items, (list, tuple)):
        items = list(itertools.islice(items, MAX_RESULTS + 1))
    if len(items) > MAX_RESULTS:  # bounded work inside the host's call
        items = items[:MAX_RESULTS]
        scores = None if scores is None else scores[:MAX_RESULTS]
        if recorder is not None:
            recorder.truncated()
    if recorder is not None and recorder.light:
        objs = items if scores is None else [getattr(i, "node", i) for i in items]
        snap = snapshot(objs, text=recorder.snap_text, ref=recorder.snap_ref, plain=plain)
        if snap is not None:
            return snap, scores
    return list(items), scores


def _text_chars(snap: Any) -> int:
    """Characters of text a light snapshot keeps (``len`` of each, summed in C); 0 for anything else.

    Every snapshot that copies texts has them third (``("id", "metadata", "text", ...)``).
    """
    if type(snap) is not Snapshot:
        return 0
    fields = snap.fields
    if len(fields) < 3 or fields[2] != "text":
        return 0
    texts = snap[2 :: len(fields)]
    try:
        return sum(map(len, texts))
    except TypeError:  # a text that is not a string (read as None)
        return sum(len(t) for t in texts if type(t) is str)


def _default_resolve(items: list[Any]) -> tuple[list[Hit], list[str]]:
    return normalize_hits(items, k=max(len(items), 1))


class Recorder:
    """A bounded, sampled, thread-safe store of :class:`CaptureRecord` objects.

    Parameters
    ----------
    max_records:
        Keep at most this many top-level records; later ones are counted in :attr:`dropped`.
    sample_rate:
        Fraction of top-level retrievals recorded (0 < rate <= 1); the others are counted in
        :attr:`sampled_out`. Retrievals nested in a sampled one are always kept with it.
    id_from, doc_map, keep_text:
        How results become hits (see :func:`rankbridge.retriever.normalize_hits`), applied when the
        records are read, never inside the host's call.
    keep_ref:
        Also copy each result's ``ref_doc_id`` into light snapshots even when ``id_from`` does not use it
        (:func:`~rankbridge.capture.capture` asks for it when the golden set has doc ids to check the
        results against, so that ``ref_doc_id`` can be offered as the matching source). The LlamaIndex
        handler's fast snapshot of plain ``TextNode`` results copies it too (read from ``relationships``).
    seed:
        Seed of the sampling generator, for reproducible sampling.
    max_text_bytes:
        Budget for the result texts light snapshots keep, over all records (default 256 MiB). Counted as
        ``len(text)``, characters standing in for bytes (exact for ASCII; CPython stores other text in 2 or 4
        bytes a character), when a top-level record is added. A text that does not fit is not kept: its hit
        keeps its id and score, with ``text`` ``None``; :attr:`texts_dropped` counts them. Texts an
        ``id_from="content_hash"`` reads ids from are counted but always kept, and ``retain="objects"``
        records keep the framework's objects (their texts are not counted).
    retain:
        ``"light"`` (default): when a retrieval ends, copy each result's own id, text, metadata (and
        ``ref_doc_id`` when ``id_from`` uses it) and let the framework's objects go, which keeps the
        garbage collector's work (part of the overhead inside the app) down. ``"objects"``: keep
        references to the result objects until the records are read. A callable ``id_from`` needs the
        objects, so it implies ``"objects"``.

    Attributes
    ----------
    enabled:
        When ``False`` handlers return at their first line (a paused capture).
    dropped, sampled_out, internal_errors:
        Counters; ``last_internal_error`` keeps the text of the latest internal error.
    text_chars, texts_dropped:
        Characters of result text kept so far, and texts not kept (over ``max_text_bytes``).
    cancelled:
        Top-level retrievals whose task was cancelled before they ended (recorded with that error).
    results_truncated:
        Result lists longer than :data:`MAX_RESULTS` (10,000), of which only the first ones were kept.
    """

    def __init__(
        self,
        *,
        max_records: int = 10_000,
        sample_rate: float = 1.0,
        id_from: IdSpec | None = None,
        doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
        keep_text: bool = True,
        seed: int | None = None,
        retain: str = "light",
        keep_ref: bool = False,
        max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
    ) -> None:
        if retain not in ("light", "objects"):
            raise InputError(f"retain must be 'light' or 'objects'. Got {retain!r} instead.")
        if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1:
            raise InputError(f"max_records must be an int >= 1. Got {max_records!r} instead.")
        if isinstance(max_text_bytes, bool) or not isinstance(max_text_bytes, int) or max_text_bytes < 0:
            raise InputError(f"max_text_bytes must be an int >= 0. Got {max_text_bytes!r} instead.")
        if (
            isinstance(sample_rate, bool)
            or not isinstance(sample_rate, (int, float))
            or not 0.0 < float(sample_rate) <= 1.0
        ):
            raise InputError(f"sample_rate must be a float in (0, 1]. Got {sample_rate!r} instead.")
        # validate id_from now, not inside the host's call
        normalize_hits([], k=1, id_from=id_from)
        self.max_records = max_records
        self.sample_rate = float(sample_rate)
        self.id_from = id_from
        self.doc_map = doc_map
        self.keep_text = keep_text
        self.retain = retain
        specs = id_sources(id_from)
        # what a light snapshot must copy; a callable id source needs the object itself
        self.light = retain == "light" and not any(callable(sp) for sp in specs)
        self.snap_text = bool(keep_text) or "content_hash" in specs
        self.snap_ref = "ref_doc_id" in specs or bool(keep_ref)
        self.max_text_bytes = max_text_bytes
        # texts that are ids (content hashes) are never dropped
        self._drop_texts = "content_hash" not in specs
        self.text_chars = 0
        self.texts_dropped = 0
        self.cancelled = 0
        self.results_truncated = 0
        self.enabled = True
        self.dropped = 0
        self.sampled_out = 0
        self.internal_errors = 0
        self.last_internal_error: str | None = None
        self._records: list[CaptureRecord] = []
        self._lock = threading.Lock()
        self._random = random.Random(seed)
        self.resolve: Callable[[list[Any]], tuple[list[Hit], list[str]]] = functools.partial(
            _resolve_items, id_from=id_from, doc_map=doc_map, keep_text=keep_text
        )

    def admit(self) -> bool:
        """Decide whether a new top-level retrieval is recorded (sampling, then the cap)."""
        if self.sample_rate < 1.0 and self._random.random() >= self.sample_rate:
            with self._lock:
                self.sampled_out += 1
            return False
        if len(self._records) >= self.max_records:
            with self._lock:
                self.dropped += 1
            return False
        return True

    def add(self, record: CaptureRecord) -> bool:
        """Keep a finished top-level record; ``False`` (and one more :attr:`dropped`) when full.

        Its snapshots' texts are counted against ``max_text_bytes`` (see :func:`_text_chars`): the sum is
        taken before the lock, the texts are blanked (:meth:`_trim`) only once the budget is reached.
        """
        record._resolve = self.resolve
        items = record._items
        chars = _text_chars(items)
        with self._lock:
            if len(self._records) >= self.max_records:
                self.dropped += 1
                return False
            if chars:
                if self.text_chars + chars <= self.max_text_bytes or not self._drop_texts:
                    self.text_chars += chars
                else:
                    self._trim(items)
            final = record._final_items
            if final is not None and final is not items:  # (set before the record ends: a wrapper's)
                self._budget(final)
            if record.nested:
                # (a wrapper's retrieved list is its inner record's: each snapshot is counted once)
                seen = {id(items), id(final)}
                stack = list(record.nested)
                while stack:
                    r = stack.pop()
                    r._resolve = self.resolve
                    if id(r._items) not in seen:
                        seen.add(id(r._items))
                        self._budget(r._items)
                    stack.extend(r.nested)
            self._records.append(record)
            return True

    def _budget(self, snap: Any) -> None:
        """Count the texts of a snapshot against ``max_text_bytes``, blanking those that do not fit (under the lock)."""
        chars = _text_chars(snap)
        if not chars:
            return
        if self.text_chars + chars <= self.max_text_bytes or not self._drop_texts:
            self.text_chars += chars
        else:
            self._trim(snap)

    def _trim(self, snap: Any) -> None:
        """Keep the texts of ``snap`` that still fit in the budget, in rank order; blank and count the others."""
        stride = len(snap.fields)
        for i in range(2, len(snap), stride):
            text = snap[i]
            if type(text) is not str:
                continue
            if self.text_chars + len(text) <= self.max_text_bytes:
                self.text_chars += len(text)
            else:
                snap[i] = None
                self.texts_dropped += 1

    def truncated(self) -> None:
        """Count a result list cut to :data:`MAX_RESULTS`."""
        with self._lock:
            self.results_truncated += 1

    def cancel(self, record: CaptureRecord) -> bool:
        """Keep a top-level record whose retrieval was cancelled (counted in :attr:`cancelled`)."""
        with self._lock:
            self.cancelled += 1
        return self.add(record)

    def internal_error(self, where: str, exc: BaseException) -> None:
        """Count a failure of rankbridge's own bookkeeping (never raised into the host)."""
        with self._lock:
            self.internal_errors += 1
            self.last_internal_error = f"{where}: {type(exc).__name__}: {exc}"

    @property
    def records(self) -> list[CaptureRecord]:
        """A snapshot of the kept top-level records, in the order they finished."""
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        """Forget every record and reset the counters."""
        with self._lock:
            self._records.clear()
            self.dropped = self.sampled_out = self.internal_errors = 0
            self.text_chars = self.texts_dropped = self.cancelled = self.results_truncated = 0
            self.last_internal_error = None


def _resolve_items(
    items: list[Any],
    *,
    id_from: IdSpec | None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None,
    keep_text: bool,
) -> tuple[list[Hit], list[str]]:
    return normalize_hits(items, k=max(len(items), 1), id_from=id_from, doc_map=doc_map, keep_text=keep_text)


class QueryMatcher:
    """Map captured queries to golden-set query ids: by the id the app passed, else by normalised text.

    Parameters
    ----------
    golden:
        A :class:`~rankbridge.GoldenSet`, a list of :class:`~rankbridge.Query`, ``{query_id: text}``, or
        ``None`` (every query keeps the id it was given, or gets :func:`query_key` of its text).

    Examples
    --------
    >>> m = QueryMatcher({"q1": "What causes scurvy?"})
    >>> m.match("what causes scurvy", None), m.match("anything", "q1"), m.match("new question", None)
    (('q1', 'text'), ('q1', 'id'), ('q:53aea55d2003', 'unmatched'))
    >>> m.match("x", "q9")
    ('q9', 'unknown_id')
    """

    def __init__(self, golden: GoldenSet | Iterable[Query] | Mapping[str, str] | None = None) -> None:
        self.ids: set[str] | None = None
        self.by_text: dict[str, str] = {}
        self.ambiguous: dict[str, list[str]] = {}
        if golden is None:
            return
        pairs: list[tuple[str, str]]
        if isinstance(golden, GoldenSet):
            pairs = [(q.id, q.text) for q in golden.queries]
        elif isinstance(golden, Mapping):
            pairs = [(str(k), str(v)) for k, v in golden.items()]
        else:
            pairs = []
            for q in golden:
                if not isinstance(q, Query):
                    raise InputError(
                        f"golden must be a GoldenSet, a list of Query or a {{query_id: text}} mapping; "
                        f"found a {type(q).__name__} in the list"
                    )
                pairs.append((q.id, q.text))
        self.ids = {qid for qid, _ in pairs}
        texts: dict[str, str] = {}
        for qid, text in pairs:
            key = normalize_query(text)
            if key in self.by_text:
                self.ambiguous.setdefault(key, [self.by_text[key]]).append(qid)
                continue
            self.by_text[key] = qid
            texts[qid] = text
        if self.ambiguous:
            self._warn_ambiguous(texts)

    def _warn_ambiguous(self, texts: Mapping[str, str]) -> None:
        """Golden questions with one text: a retrieval that carries no id is matched by text to the first alone."""
        groups = list(self.ambiguous.values())
        shown = "; ".join(f"{texts[ids[0]][:80]!r}: {', '.join(map(repr, ids))}" for ids in groups[:3]) + (
            "; ..." if len(groups) > 3 else ""
        )
        first, second = groups[0][0], groups[0][1]
        warnings.warn(
            GoldenSetWarning(
                f"{len(groups)} question text(s) of the golden set belong to more than one query id ({shown}). "
                f"A retrieval captured without a query id is matched by its text to the first id alone "
                f"({first!r}), and the others ({second!r}...) show as missing: give each question a text of "
                "its own, or ask each under rankbridge.capture.query_id(qid)"
            ),
            stacklevel=4,  # the caller of capture() (of the function that made this matcher)
        )

    def match(self, text: str, explicit_id: str | None) -> tuple[str, str]:
        """``(query_id, how)`` with how in ``"id"``, ``"unknown_id"``, ``"text"``, ``"unmatched"``."""
        if explicit_id is not None:
            if self.ids is None or explicit_id in self.ids:
                return explicit_id, "id"
            return explicit_id, "unknown_id"
        if self.ids is not None:
            qid = self.by_text.get(normalize_query(text))
            if qid is not None:
                return qid, "text"
        return query_key(text), "unmatched"

    def golden_ids(self) -> Sequence[str]:
        """The golden-set query ids (empty without a golden set)."""
        return sorted(self.ids or ())


def small_tags(source: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """Copy the scalar entries of a tags/metadata mapping (bounded: 20 entries, 200-char strings)."""
    if not source:
        return _NO_TAGS
    out: dict[str, Any] = {}
    for key, value in source.items():
        if len(out) >= 20:
            break
        if isinstance(value, str):
            out[str(key)] = value[:200]
        elif value is None or isinstance(value, (bool, int, float)):
            out[str(key)] = value
    return out


def open_record(
    framework: str,
    query: str,
    run_id: Any,
    retriever: str,
    query_id: Any,
    parent_id: Any,
    trace_id: Any,
    tags: Mapping[str, Any],
    outer: CaptureRecord | None,
) -> CaptureRecord:
    """The record of a retrieval a handler saw start, its latency clock started: how every handler opens one.

    ``query_id``: the id the application passed through the framework (LangChain metadata or tags, LlamaIndex
    instrument tags), or ``None``: then the id of the :func:`query_id` block around the call, if any. ``tags``:
    what the record keeps of the framework's tags or metadata (:func:`small_tags` of them). ``outer``: the open
    record of the retrieval this one runs inside, which it is nested in. Runs inside the application's call:
    arguments by position.

    Examples
    --------
    >>> with query_id("q7"):
    ...     tags = small_tags({"user": "u1"})
    ...     record = open_record("test", "what is tea?", "r1", "Static", None, None, "r1", tags, None)
    >>> record.query_id, record.tags["user"], record.latency is None
    ('q7', 'u1', True)
    """
    if query_id is None:
        query_id = _current_query_id.get()
    record = CaptureRecord(
        framework,
        query,
        run_id,
        retriever,
        None if query_id is None else str(query_id),
        parent_id,
        trace_id,
        time.time(),
        tags,
    )  # by position (framework, query, run_id, retriever, query_id, parent_id, trace_id, started, tags)
    if outer is not None:
        outer.add_nested(record)
        record._is_nested = True
    record._t0 = time.perf_counter()
    return record


def now() -> tuple[float, float]:
    """(wall clock, perf counter) at this instant."""
    return time.time(), time.perf_counter()


def error_text(error: BaseException | str | None) -> str:
    """``"Type: message"`` of an exception (a string is kept)."""
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)


# -- reading back what a handler added by hand recorded ---------------------------------------------
def own_recorder(
    recorder: Recorder | None,
    id_from: IdSpec | None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None,
    keep_text: bool,
) -> Recorder:
    """The recorder a handler writes to: ``recorder``, or a new one with the given doc-id settings.

    Examples
    --------
    >>> own_recorder(None, "ref_doc_id", None, True).id_from
    'ref_doc_id'
    >>> rec = Recorder()
    >>> own_recorder(rec, None, None, True) is rec
    True
    """
    if recorder is None:
        # a hand-made handler meets its golden set only in to_run(golden): without an id_from of its own, copy
        # each result's ref_doc_id so that the id check there can offer it for SentenceSplitter chunks' UUIDs
        keep_ref = id_from is None and doc_map is None
        return Recorder(id_from=id_from, doc_map=doc_map, keep_text=keep_text, keep_ref=keep_ref)
    if id_from is not None or doc_map is not None or keep_text is not True:
        raise InputError(
            "id_from, doc_map and keep_text configure the handler's own Recorder: give them to the Recorder you "
            "pass, or pass no recorder"
        )
    return recorder


class RecorderRuns:
    """What a handler a user adds by hand reads back: ``to_run``, ``summary``, ``as_capture``, ``clear``.

    Every reading goes through a :class:`~rankbridge.capture.Capture` over the handler's recorder (attached
    to nothing), so the query matching, the error policy and the counts are those of ``capture()``. A class
    using it has a ``_recorder``, or overrides :meth:`_runs_recorder`, and names its framework in
    :meth:`_runs_framework` (the run's ``config["frameworks"]``).
    """

    def _runs_recorder(self) -> Recorder:
        return self._recorder  # type: ignore[attr-defined,no-any-return]

    def _runs_framework(self) -> str:
        raise NotImplementedError  # each handler names its framework

    def as_capture(
        self, golden: GoldenSet | Iterable[Query] | Mapping[str, str] | None = None, *, name: str = "callbacks"
    ) -> Capture:
        """A :class:`~rankbridge.capture.Capture` reading this handler's records, with ``capture()``'s matching.

        It attaches to nothing (its ``start()`` does nothing): the handler records only where the app puts it.
        Use it for what :meth:`to_run` and :meth:`summary` do not give: ``records``, ``queries``, ``unmatched``,
        ``judge``, ``write_trec``, ``write_jsonl``.
        """
        # a golden set's doc ids are checked as capture() checks them
        checked = golden if isinstance(golden, GoldenSet) else None
        return Capture(self._runs_recorder(), QueryMatcher(golden), frameworks=(), name=name, golden=checked)

    def to_run(
        self,
        golden: GoldenSet | Iterable[Query] | Mapping[str, str] | None = None,
        *,
        stage: Literal["final", "retrieved"] = "final",
        name: str | None = None,
        repeats: Literal["first", "last"] = "first",
        **options: Any,
    ) -> Run:
        """The retrievals recorded so far as a ranked :class:`~rankbridge.Run`, one entry per query id.

        Exactly :meth:`rankbridge.capture.Capture.to_run` over this handler's records: a retrieval is matched
        to a golden query by the id the app passed (``with query_id(qid):`` around the
        call; LangChain ``config={"metadata": {"rankbridge_query_id": qid}}`` or a ``"rankbridge_query_id=qid"``
        tag; LlamaIndex ``instrument_tags({"rankbridge_query_id": qid})``), else by normalised text; an
        unmatched query keeps :func:`~rankbridge.capture.query_key` of its text.

        Parameters
        ----------
        golden:
            The golden set (a :class:`~rankbridge.GoldenSet`, a list of :class:`~rankbridge.Query`, or
            ``{query_id: text}``); ``None`` keeps the ids the app passed and names other queries by their text.
        stage:
            ``"final"`` (the list the app used, after node postprocessors and rerankers, or a compressor or
            reranker retriever) or ``"retrieved"`` (the retriever's own list, the inner one's for a wrapper).
        name:
            The run's name (default ``"callbacks"``).
        repeats:
            ``"first"`` or ``"last"``: which retrieval of a query asked more than once makes its entry.
        options:
            Further keywords of :meth:`rankbridge.capture.Capture.to_run`.

        Returns
        -------
        Run
            ``run.config["source"]`` is ``"callbacks"``.
        """
        run = self.as_capture(golden, name=name or "callbacks").to_run(stage=stage, repeats=repeats, **options)
        run.config.update({"source": "callbacks", "frameworks": [self._runs_framework()]})
        return run

    def summary(self, golden: GoldenSet | Iterable[Query] | Mapping[str, str] | None = None) -> dict[str, Any]:
        """:meth:`rankbridge.capture.Capture.summary` of this handler's records (matched, unmatched, missing,
        errors, dropped...)."""
        out = self.as_capture(golden).summary()
        out["frameworks"] = [self._runs_framework()]
        return out

    def clear(self) -> None:
        """Forget every record and reset the counters (before the next batch of questions, say)."""
        self._runs_recorder().clear()


# -- capture(): attach handlers, read the records back as a Run ---------------------------------------
Stage = Literal["final", "retrieved"]


def _attach(mode: str, recorder: Recorder, trace: bool) -> Callable[[], None]:
    # lazy: the frameworks' handlers sit above this core (they import it) and import their framework
    from rankbridge import frameworks

    return frameworks.attach_capture(mode, recorder, trace=trace)


def _has_doc_ids(golden: GoldenSet) -> bool:
    """Does the golden set name documents (a corpus, or qrels with at least one judged doc)?"""
    return bool(golden.corpus) or any(bool(docs) for docs in golden.qrels.values())


def _report_dict(report: IdReport) -> dict[str, Any]:
    """The JSON-friendly part of an :class:`~rankbridge.idmatch.IdReport`, as run configs keep it."""
    return {
        "status": report.status,
        "current": report.current,
        "chosen": report.chosen,
        "shares": dict(report.shares),
        "results": report.results,
        "message": report.message(),
    }


def _mismatch_text(report: IdReport, id_from: Any, doc_map: Any) -> str:
    text = report.message()
    if report.status == "resolved" and report.chosen is not None:
        given = f"id_from={id_from!r}" if doc_map is None else "doc_map="
        text += (
            f" You passed {given} explicitly, so it is not switched: pass id_from={report.chosen!r} to capture() "
            "to score the documents."
        )
    text += " to_run(check_ids=False) returns the run as it is (this error's .run holds it too)."
    return "captured results: " + text


class Capture:
    """Records retrievals while attached; reads them back as a :class:`~rankbridge.Run`.

    Build it with :func:`capture`. Use it as a context manager, or call :meth:`start` and :meth:`stop`
    around a long-running app.

    Attributes
    ----------
    recorder:
        The :class:`Recorder` the handlers write to (counters: ``dropped``, ``sampled_out``,
        ``internal_errors``).
    matcher:
        The :class:`QueryMatcher` built from the golden set.
    attached:
        The frameworks the handlers are attached to right now.
    """

    def __init__(
        self,
        recorder: Recorder,
        matcher: QueryMatcher,
        *,
        frameworks: Sequence[str],
        name: str = "capture",
        trace: bool = False,
        golden: GoldenSet | None = None,
        check_ids: bool = True,
    ) -> None:
        self.recorder = recorder
        self.trace = trace
        self.matcher = matcher
        self.name = name
        #: the golden set whose corpus / qrels ids the results are checked against (None: nothing to check)
        self.golden = golden if golden is not None and _has_doc_ids(golden) else None
        self.check_ids = bool(check_ids)
        self._frameworks = tuple(frameworks)
        self._detach: list[tuple[str, Callable[[], None]]] = []

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> Capture:
        """Attach the handlers (idempotent)."""
        if self._detach:
            return self
        try:
            for fw in self._frameworks:
                self._detach.append((fw, _attach(fw, self.recorder, self.trace)))
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Detach every handler; the records stay readable."""
        while self._detach:
            _, detach = self._detach.pop()
            detach()

    def __enter__(self) -> Capture:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def attached(self) -> tuple[str, ...]:
        """The frameworks the handlers are attached to."""
        return tuple(fw for fw, _ in self._detach)

    @property
    def enabled(self) -> bool:
        """Set ``False`` to pause the capture (nothing is recorded; the frameworks do not even call the
        handlers), ``True`` to resume it. Retrievals running at the moment of a pause are not recorded."""
        return self.recorder.enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        self.recorder.enabled = bool(value)
        # LlamaIndex calls every handler on the dispatcher for every span and event: a paused capture
        # takes its handlers off (LangChain's slot already hands a paused handler to no new run)
        for _, detach in self._detach:
            set_active = getattr(detach, "set_active", None)
            if set_active is not None:
                set_active(self.recorder.enabled)

    # -- reading --------------------------------------------------------------------------------
    @property
    def records(self) -> list[CaptureRecord]:
        """The raw records (top-level retrievals; nested ones under ``record.nested``), in finish order."""
        return self.recorder.records

    def _assign(self) -> list[tuple[CaptureRecord, str, str]]:
        # in start order, as run_app takes them: records are appended as retrievals finish, and retrievals of one
        # question that run at the same time (a RunnableParallel over two retrievers, parallel tool calls) finish
        # in any order, which made repeats="first" / "last" a pick by thread timing
        records = sorted(self.recorder.records, key=operator.attrgetter("started"))
        return [(r, *self.matcher.match(r.query, r.query_id)) for r in records]

    def _chosen(
        self, repeats: str, assigned: Iterable[tuple[CaptureRecord, str, str]] | None = None
    ) -> tuple[dict[str, CaptureRecord], set[str]]:
        chosen: dict[str, CaptureRecord] = {}
        for record, qid, _ in self._assign() if assigned is None else assigned:
            if repeats == "last" or qid not in chosen:
                chosen[qid] = record
        return chosen, set(chosen)

    def _concurrent(self, assigned: Iterable[tuple[CaptureRecord, str, str]]) -> list[str]:
        """Query ids with two retrievals that ran at the same time (``assigned`` in start order).

        A question asked again starts after its last retrieval ended; overlapping ones are one request searching
        several retrievers (a RunnableParallel, parallel tool calls) or one query id around several questions
        (a batch inside a ``query_id`` block): then no single retrieval is the list the app used.
        """
        ends: dict[str, float] = {}
        out: dict[str, None] = {}
        for record, qid, _ in assigned:
            if record.latency is None or not record.started:  # no timing (a trace without times): not known
                continue
            end = ends.get(qid)
            if end is not None and record.started < end:
                out.setdefault(qid, None)
            stop = record.started + record.latency
            ends[qid] = stop if end is None else max(end, stop)
        return list(out)

    def to_run(
        self,
        *,
        stage: Stage = "final",
        name: str | None = None,
        repeats: Literal["first", "last"] = "first",
        check_ids: bool | None = None,
    ) -> Run:
        """The captured retrievals as a ranked :class:`~rankbridge.Run`, one entry per query id.

        Parameters
        ----------
        stage:
            ``"final"`` (default): the list the application used -- after a reranker or node
            postprocessor when there was one. ``"retrieved"``: what the retriever itself returned.
        name:
            The run's name (default: the capture's name).
        repeats:
            Which capture of a query asked more than once (the same text, or one query id over several
            retrievals, as when an agent searches again) makes its entry: ``"first"`` (default) or
            ``"last"`` to start. Every retrieval stays in :attr:`records`; ``summary()["repeats"]`` counts them.
            Retrievals of one query that ran at the same time (a chain searching two retrievers in parallel,
            a batch inside one ``query_id`` block) are counted in ``run.config["concurrent_repeats"]``, and
            :func:`rankbridge.evaluate` notes them: :func:`rankbridge.run_app` scores such retrievals together.
        check_ids:
            Check the results' doc ids against the golden set's corpus and qrels ids (default: the
            ``capture(check_ids=...)`` setting, ``True``). ``False`` returns the run under ``id_from`` as it
            is, with the check's verdict in ``run.config["id_check"]``.

        Raises
        ------
        IdMismatchError
            Most results name no document the golden set knows, and either no id source of the results
            does, two do with different ids, or ``id_from`` / ``doc_map`` was passed explicitly (an
            explicit choice is never switched away from: the message names the ``id_from=`` that matches).
            ``exc.run`` is the unresolved run, ``exc.report`` the :class:`~rankbridge.idmatch.IdReport`.

        Notes
        -----
        A retrieval that raised, or whose results had no doc id under ``id_from``, is an error of the
        run (it scores 0).

        **Doc ids.** With a :class:`~rankbridge.GoldenSet` that has a corpus or qrels, the ids of (at most
        :data:`rankbridge.idmatch.SAMPLE_HITS`) captured results are checked once per call, here, never
        inside the app (:func:`rankbridge.idmatch.check_results`). Results with UUID ids (LlamaIndex
        ``SentenceSplitter`` chunks, LangChain ``add_documents`` without ids) whose ``ref_doc_id`` or a
        ``metadata:KEY`` names the golden set's documents are, when ``id_from`` was not given, turned into
        those documents' ids (chunks of one document collapse to its first, as with that ``id_from``
        passed explicitly): ``run.config["id_from"]`` is the source used and
        ``run.config["id_resolution"]`` says what was done (``{"from", "to", "shares", "results",
        "auto": True, "message"}``). A few unknown ids (pooling, a larger corpus) are fine.

        **Partial captures.** ``run.config`` carries ``"source": "capture"``, ``"golden_size"`` (golden
        questions) and ``"golden_missing"`` (golden questions the capture never saw; with a golden set).
        :func:`rankbridge.evaluate` scores a capture run on the questions it saw, and reports how many
        were missing; ``missing="zero"`` scores the missing ones 0 instead.
        """
        if stage not in ("final", "retrieved"):
            raise InputError(f"stage must be 'final' or 'retrieved'. Got {stage!r} instead.")
        if repeats not in ("first", "last"):
            raise InputError(f"repeats must be 'first' or 'last'. Got {repeats!r} instead.")
        assigned = self._assign()
        chosen, seen = self._chosen(repeats, assigned)
        config = {**self._config(stage), "repeats": repeats}
        concurrent = self._concurrent(assigned)
        if concurrent:
            config["concurrent_repeats"] = len(concurrent)
        golden_ids = self.matcher.golden_ids() if self.matcher.ids is not None else None
        if golden_ids is not None:
            config["golden_size"] = len(golden_ids)
            config["golden_missing"] = sum(1 for q in golden_ids if q not in seen)
        run = self._build(chosen, stage, name or self.name, config)
        report = self._id_report(chosen, stage, run)
        if report is None:
            return run
        if not (self.check_ids if check_ids is None else check_ids):
            run.config["id_check"] = _report_dict(report)
            return run
        if report.status in ("ok", "unchecked"):
            return run
        rec = self.recorder
        explicit = rec.id_from is not None or rec.doc_map is not None
        if report.status == "resolved" and report.chosen is not None and not explicit:
            to = report.chosen
            resolve = self._switched_to(to)
            config = {**config, "id_from": to}
            config["id_resolution"] = {
                "from": report.current,
                "to": to,
                "shares": dict(report.shares),
                "results": report.results,
                "auto": True,
                "message": report.message(),
            }
            return self._build(chosen, stage, name or self.name, config, resolve)
        raise IdMismatchError(
            _mismatch_text(report, rec.id_from, rec.doc_map),
            suggestion=report.chosen if report.status == "resolved" else None,
            report=report,
            run=run,
        )

    def _build(
        self,
        chosen: Mapping[str, CaptureRecord],
        stage: str,
        name: str,
        config: dict[str, Any],
        resolve: Callable[[list[Any]], Any] | None = None,
    ) -> Run:
        run = Run(name=name, config=config)
        for qid, record in chosen.items():
            if record.error is not None:
                run.add_error(qid, f"retrieval failed: {record.error}", latency=record.latency)
                continue
            if resolve is None:
                hits = record.retrieved if stage == "retrieved" else record.hits
                problem = record.resolve_error
            else:
                hits, problem = record.hits_under(resolve, stage=stage)
            if problem is not None:
                # the problem names itself (a doc id, a score...): the prefix must not guess which
                run.add_error(qid, f"captured results could not be read as hits: {problem}", latency=record.latency)
                continue
            run.add(qid, hits, latency=record.latency)
        return run

    def _switched_to(self, id_from: IdSpec) -> Callable[[list[Any]], tuple[list[Hit], list[str]]]:
        """The resolver of the results under ``id_from``, the id source a run switches to when the recorder's
        ids match nothing the golden set knows and ``id_from`` does."""
        return functools.partial(_resolve_items, id_from=id_from, doc_map=None, keep_text=self.recorder.keep_text)

    def _id_report(self, chosen: Mapping[str, CaptureRecord], stage: str, run: Run | None) -> IdReport | None:
        """Check (a sample of) the results' ids against the golden set; ``None`` when there is nothing to check."""
        golden = self.golden
        if golden is None:
            return None
        rec = self.recorder
        if rec.doc_map is not None:
            # the ids in use are doc_map's: judge the run's own ids (alternatives from the hits' metadata)
            if run is None:
                run = self._build(chosen, stage, self.name, self._config(stage))
            return idmatch.check_run(run, golden)
        sample: list[Any] = []
        for record in chosen.values():
            if record.error is not None:
                continue
            which = "final" if stage == "final" and record.final is not None else "retrieved"
            sample.extend(record.results(which) or ())
            if len(sample) >= idmatch.SAMPLE_HITS:
                del sample[idmatch.SAMPLE_HITS :]
                break
        return idmatch.check_results(sample, golden, id_from=rec.id_from)

    @property
    def run(self) -> Run:
        """:meth:`to_run` with the defaults: the final lists, named after the capture."""
        return self.to_run()

    @property
    def queries(self) -> dict[str, str]:
        """``{query_id: captured query text}`` of the run's queries (first capture of each id)."""
        out: dict[str, str] = {}
        for record, qid, _ in self._assign():
            out.setdefault(qid, record.query)
        return out

    @property
    def unmatched(self) -> list[str]:
        """Query texts that matched no golden-set query (by id or text), in capture order, once each."""
        seen: dict[str, None] = {}
        for record, _, how in self._assign():
            if how in ("unmatched", "unknown_id"):
                seen.setdefault(record.query, None)
        return list(seen)

    def summary(self) -> dict[str, Any]:
        """Counts for a report: what was captured, how it matched, and what was lost.

        Keys: ``records``, ``queries``, ``matched_by_id``, ``matched_by_text``, ``unmatched``,
        ``unknown_ids`` (ids the app passed that the golden set lacks), ``missing`` (golden ids never
        seen), ``repeats``, ``concurrent_repeats`` (query ids with retrievals that ran at the same time: one
        request searching several retrievers, or one query id around several questions; each is scored on one
        of them), ``errors``, ``resolve_errors``, ``reranked`` (records whose final list
        differs), ``dropped``, ``sampled_out``, ``texts_dropped`` (result texts not kept: over
        ``max_text_bytes``), ``cancelled`` (retrievals whose asyncio task was cancelled before they ended,
        recorded with that error), ``results_truncated`` (result lists longer than 10,000 of which the
        first 10,000 were kept), ``internal_errors``, ``last_internal_error``,
        ``frameworks``, ``id_check`` (``None`` without golden doc ids to check against, else
        ``{"status", "current", "chosen", "action", "message"}`` of the doc-id check that :meth:`to_run`
        makes on the final lists: ``action`` is ``"none"``, ``"resolved"`` (the run uses ``chosen``) or
        ``"raise"`` (reading the run raises :class:`~rankbridge.errors.IdMismatchError`)).
        """
        assigned = self._assign()
        seen: set[str] = set()
        counts = {"id": 0, "text": 0, "unmatched": 0, "unknown_id": 0}
        repeats = errors = resolve_errors = reranked = 0
        unknown: dict[str, None] = {}
        id_check, resolve = self._id_summary()
        for record, qid, how in assigned:
            if qid in seen:
                repeats += 1
                continue
            seen.add(qid)
            counts[how] += 1
            if how == "unknown_id":
                unknown.setdefault(qid, None)
            if record.error is not None:
                errors += 1
            elif (record.resolve_error if resolve is None else record.hits_under(resolve)[1]) is not None:
                resolve_errors += 1  # under the id source cap.run reads, which may not be id_from
            elif record.final is not None:
                reranked += 1
        rec = self.recorder
        return {
            "records": len(assigned),
            "queries": len(seen),
            "matched_by_id": counts["id"],
            "matched_by_text": counts["text"],
            "unmatched": counts["unmatched"],
            "unknown_ids": list(unknown),
            "missing": [q for q in self.matcher.golden_ids() if q not in seen],
            "repeats": repeats,
            "concurrent_repeats": self._concurrent(assigned),
            "errors": errors,
            "resolve_errors": resolve_errors,
            "reranked": reranked,
            "dropped": rec.dropped,
            "sampled_out": rec.sampled_out,
            "texts_dropped": rec.texts_dropped,
            "cancelled": rec.cancelled,
            "results_truncated": rec.results_truncated,
            "internal_errors": rec.internal_errors,
            "last_internal_error": rec.last_internal_error,
            "frameworks": list(self._frameworks),
            "id_check": id_check,
        }

    def _id_summary(self) -> tuple[dict[str, Any] | None, Callable[[list[Any]], tuple[list[Hit], list[str]]] | None]:
        """The summary's ``id_check``, and the resolver :attr:`run` reads the results with when it switches to
        another id source (else ``None``)."""
        chosen, _ = self._chosen("first")
        report = self._id_report(chosen, "final", None)
        if report is None:
            return None, None
        out = _report_dict(report)
        rec = self.recorder
        explicit = rec.id_from is not None or rec.doc_map is not None
        resolve = None
        if not self.check_ids or report.status in ("ok", "unchecked"):
            out["action"] = "none"
        elif report.status == "resolved" and not explicit:
            out["action"] = "resolved"
            out["message"] += f" The run uses id_from={report.chosen!r} (run.config['id_resolution'])."
            resolve = self._switched_to(report.chosen) if report.chosen is not None else None
        else:
            out["action"] = "raise"
            out["message"] = _mismatch_text(report, rec.id_from, rec.doc_map)
        return out, resolve

    def _config(self, stage: str) -> dict[str, Any]:
        rec = self.recorder
        return {
            "source": "capture",
            "stage": stage,
            "frameworks": list(self._frameworks),
            "sample_rate": rec.sample_rate,
            "max_records": rec.max_records,
            "dropped": rec.dropped,
            "sampled_out": rec.sampled_out,
            "max_text_bytes": rec.max_text_bytes,
            "texts_dropped": rec.texts_dropped,
            "id_from": rec.id_from if isinstance(rec.id_from, (str, type(None))) else repr(rec.id_from),
        }

    # -- judging without qrels -------------------------------------------------------------------
    def judge(
        self,
        llm: Any,
        *,
        k: int = 10,
        documents: Mapping[str, Any] | None = None,
        stage: Stage = "final",
        cache: str | os.PathLike[str] | None = None,
        model_id: str | None = None,
        **policy: Any,
    ) -> Judgments:
        """Grade the captured results 0-3 with an LLM judge, for an app that has no qrels.

        The top ``k`` of every captured query (:meth:`to_run` with ``stage``) is judged against the query
        text the retriever received (:attr:`queries`), using each result's own text (kept unless
        ``capture(keep_text=False)``) or ``documents`` (``{doc_id: text}``) when given. It is
        :func:`rankbridge.judge.judge_runs` on the captured run: same prompt, cache, budget and report.
        Evaluate with the grades as qrels: ``rankbridge.evaluate(result.qrels, cap.run, metrics)``; they
        are LLM labels, so say so wherever the figures go (the qrels are named ``llm-judge:<model>:...``).

        Parameters
        ----------
        llm:
            A LangChain chat model or LLM, a LlamaIndex LLM, or a callable ``prompt -> reply``
            (see :func:`rankbridge.judge.as_llm`).
        k:
            Judge the top ``k`` of each query.
        documents:
            Full document texts, used instead of the captured (chunk) texts.
        stage:
            ``"final"`` (the list the app used) or ``"retrieved"``.
        cache:
            A SQLite file of earlier grades (same query, text, model and prompt are not asked again).
        model_id:
            The model's id for the cache and the report (read from the model when omitted).
        policy:
            :class:`rankbridge.judge.CallPolicy` fields: ``concurrency``, ``max_calls``, ``max_tokens``,
            ``timeout``...

        Examples
        --------
        >>> cap = capture(frameworks=())
        >>> rec = CaptureRecord(framework="test", query="what is tea?", run_id="r1", retriever="Static")
        >>> rec.set_items([{"id": "d1", "text": "Tea is a drink."}, {"id": "d2", "text": "Bread."}])
        >>> _ = cap.recorder.add(rec)
        >>> def llm(prompt):  # a stand-in LLM: 2 for the tea passage, 0 otherwise
        ...     return '{"reason": "scripted", "grade": %d}' % (2 if "Tea is a drink" in prompt else 0)
        >>> result = cap.judge(llm, model_id="scripted")
        >>> result.qrels.to_dict()
        {'q:d2a2f754e671': {'d1': 2, 'd2': 0}}
        """
        # lazy: the judge sits above capture (it calls framework LLMs); this is a convenience hook onto it
        from rankbridge.judge import judge_runs

        run = self.to_run(stage=stage)
        return judge_runs(run, self.queries, documents, llm, k=k, cache=cache, model_id=model_id, **policy)

    # -- export ---------------------------------------------------------------------------------
    def write_trec(self, path: str | os.PathLike[str], *, stage: Stage = "final", tag: str | None = None) -> None:
        """Write the run as a TREC run file (rank order kept; see :func:`rankbridge.io.write_run`)."""
        write_run(self.to_run(stage=stage), path, tag=tag)

    def write_jsonl(self, path: str | os.PathLike[str], *, stage: Stage = "final") -> None:
        """Write the run as JSON Lines with texts, latencies and errors (:func:`rankbridge.io.write_run_jsonl`)."""
        write_run_jsonl(self.to_run(stage=stage), path)

    def clear(self) -> None:
        """Forget every record and reset the counters (the handlers stay attached)."""
        self.recorder.clear()

    def __repr__(self) -> str:
        rec = self.recorder
        return (
            f"Capture(name={self.name!r}, attached={self.attached}, records={len(rec.records)}, "
            f"dropped={rec.dropped}, internal_errors={rec.internal_errors})"
        )


def capture(
    golden: GoldenSet | Iterable[Query] | Mapping[str, str] | None = None,
    *,
    id_from: IdSpec | None = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    sample_rate: float = 1.0,
    max_records: int = 10_000,
    keep_text: bool = True,
    frameworks: str | Sequence[str] = "auto",
    name: str = "capture",
    seed: int | None = None,
    trace: bool = False,
    retain: Literal["light", "objects"] = "light",
    check_ids: bool = True,
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
) -> Capture:
    """Record the retrievals of a running LlamaIndex / LangChain app; use as ``with capture() as cap:``.

    Parameters
    ----------
    golden:
        Golden-set queries to match captured queries to (a :class:`~rankbridge.GoldenSet`, a list of
        :class:`~rankbridge.Query`, or ``{query_id: text}``); ``None`` keeps the ids the app passes and
        names other queries by :func:`query_key` of their text.
    id_from:
        Where a result's doc id comes from: ``"id"`` (default: LlamaIndex ``node_id``, LangChain
        ``Document.id``), ``"ref_doc_id"``, ``"metadata:KEY"``, ``"content_hash"``, a callable, or a list
        tried in order (see :mod:`rankbridge.retriever`).
    doc_map:
        Chunk id -> document id, for qrels that judge whole documents.
    sample_rate:
        Fraction of top-level retrievals to record, in (0, 1].
    max_records:
        Keep at most this many records; later ones are counted in ``summary()["dropped"]``.
    keep_text:
        Keep result texts in the hits (RAGAS needs them).
    frameworks:
        ``"auto"`` (every installed one of ``"llamaindex"``, ``"langchain"``), or the names to attach to;
        naming a framework that is not installed raises :class:`~rankbridge.MissingExtraError`.
        ``"llamaindex"`` uses LlamaIndex instrumentation (every retriever of the process);
        ``"llamaindex_legacy"`` adds a handler to ``Settings.callback_manager`` instead
        (:mod:`rankbridge.frameworks.llamaindex.capture_legacy`: for LlamaIndex releases before the
        instrumentation module, which ``"auto"`` then picks; it sees only components that share that
        manager, so start the capture before the app builds its retrievers). Not both at once: each
        retrieval would be recorded twice.
    name:
        The name of the captured run.
    seed:
        Seed for the sampling decisions.
    trace:
        LangChain: also follow chain, tool and agent runs so that each record has the id of its
        outermost run (``trace_id``). By default (``False``) the handler rides only on retriever runs
        (and runs inside them): ``parent_id`` is still recorded (the run that called the retriever, the
        same id LangSmith shows), ``trace_id`` is ``None``, and a chain pays far less (LangChain charges
        every handler on every run it is attached to: see docs/benchmarks.md). LlamaIndex always tracks
        spans (they also give the final list, nesting and errors) and always records ``trace_id``.
    retain:
        ``"light"`` (default): when a retrieval ends, copy each result's id, score, text and metadata and
        let the framework's objects go (less garbage-collector work inside the app). ``"objects"``: keep
        the result objects until the run is read. A callable ``id_from`` implies ``"objects"``.
    check_ids:
        With a :class:`~rankbridge.GoldenSet` that has a corpus or qrels: check, whenever the run is read,
        that the results' doc ids name documents the golden set knows, resolve UUID chunk ids to
        ``ref_doc_id`` / ``metadata:KEY`` when ``id_from`` was not given and exactly one source matches,
        and raise :class:`~rankbridge.errors.IdMismatchError` otherwise (see :meth:`Capture.to_run`).
        ``False``: return the runs as they are (the verdict goes in ``run.config["id_check"]``). Such a
        golden set also makes records copy each result's ``ref_doc_id`` (read from the node's
        relationships on the fast path; its cost is in docs/benchmarks.md), so that it can be offered; a
        list of queries or ``{id: text}`` has no doc ids and changes nothing.
    max_text_bytes:
        Budget for the result texts the records keep, over the whole capture (default 256 MiB), counted as
        ``len(text)`` (characters stand in for bytes: exact for ASCII text). Texts beyond it are not kept
        (their hits keep id and score, ``text`` is ``None``) and are counted in ``summary()["texts_dropped"]``
        and ``run.config["texts_dropped"]``. ``0`` keeps no texts. See docs/capture.md.

    Partial captures: questions of ``golden`` the app never asked are not scored as 0 by
    :func:`rankbridge.evaluate` (it scores a capture run on the questions seen and reports how many were
    missing; ``missing="zero"`` counts them as 0): ``run.config["golden_missing"]`` and
    ``["golden_size"]`` carry the counts.

    Returns
    -------
    Capture
        Not attached yet: ``with`` (or :meth:`Capture.start`) attaches it.

    Examples
    --------
    >>> cap = capture(frameworks=(), sample_rate=0.5, max_records=100)
    >>> cap.recorder.sample_rate, cap.recorder.max_records
    (0.5, 100)
    >>> capture(frameworks=["tensorflow"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: frameworks must be 'auto' or a list of ... Got 'tensorflow' instead.
    """
    # lazy: the registry sits above this core (its handlers import it)
    from rankbridge.frameworks import capture_modes

    chosen = capture_modes(frameworks)
    recorder = Recorder(
        max_records=max_records,
        sample_rate=sample_rate,
        id_from=id_from,
        doc_map=doc_map,
        keep_text=keep_text,
        seed=seed,
        retain=retain,
        max_text_bytes=max_text_bytes,
        # decided here, once: only a golden set with doc ids makes the check (and the ref_doc_id copy) worth it
        keep_ref=isinstance(golden, GoldenSet) and _has_doc_ids(golden),
    )
    return Capture(
        recorder,
        QueryMatcher(golden),
        frameworks=chosen,
        name=name,
        trace=trace,
        golden=golden if isinstance(golden, GoldenSet) else None,
        check_ids=check_ids,
    )
