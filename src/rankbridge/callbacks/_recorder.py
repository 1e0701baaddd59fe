"""The framework-free core of live capture: records, the bounded recorder, and query matching.

Handlers (:mod:`rankbridge.callbacks.llamaindex`, :mod:`rankbridge.callbacks.langchain`) run inside the
host application, on its threads and its event loop. Everything they call here is therefore

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
import functools
import hashlib
import itertools
import operator
import random
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, ParamSpec, TypeVar

from rankbridge.errors import InputError, RankbridgeError
from rankbridge.retriever import IdSpec, id_sources, normalize_hits, result_attributes
from rankbridge.types import GoldenSet, Hit, Query

__all__ = [
    "DEFAULT_MAX_TEXT_BYTES",
    "EMPTY_METADATA",
    "MAX_RESULTS",
    "QUERY_ID_KEY",
    "CaptureRecord",
    "QueryMatcher",
    "Recorder",
    "current_query_id",
    "guarded",
    "normalize_query",
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
#: copying a list is work inside the host's call, 10^4 results a few ms at most (10^5 would block its loop)
MAX_RESULTS = 10_000
#: Default budget of :class:`Recorder` for kept result texts (``len`` of each text; see ``max_text_bytes``).
DEFAULT_MAX_TEXT_BYTES = 256 * 2**20
#: What a snapshot may keep instead of a result's own empty metadata dict (one less object kept alive per
#: result); read back as a new empty dict, as the result had.
EMPTY_METADATA: Mapping[str, Any] = MappingProxyType({})

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
#: Methods and properties known to return a plain attribute, which the snapshot then reads directly:
#: LlamaIndex ``TextNode.get_content`` (called without arguments) returns ``self.text`` and the
#: ``BaseNode.node_id`` property returns ``self.id_`` (the LlamaIndex handler registers them).
PLAIN_ATTRS: dict[Any, str] = {}

_NOT_FRAMEWORK = (str, bytes, bytearray, int, float, Hit, Mapping, tuple, list)
#: (class, text?, ref?) -> (getter, field names), or None for a class that is not snapshotted
_GETTERS: dict[tuple[type, bool, bool], tuple[Callable[[Any], Any], tuple[str, ...]] | None] = {}


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


def _getter(obj: Any, text: bool, ref: bool) -> tuple[Callable[[Any], Any], tuple[str, ...]] | None:
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
            text_kind = PLAIN_ATTRS.get(getattr(cls, "get_content", None), text_kind)
        if id_kind is not None:
            id_kind = PLAIN_ATTRS.get(getattr(cls, id_kind, None), id_kind)
        if id_kind is not None and text_kind is not None and (text_kind != "get_content" or not text):
            # a class without ref_doc_id (LangChain's Document) snapshots without it, as it reads without it
            ref = ref and hasattr(obj, "ref_doc_id")
            names = [id_kind, "metadata"] + ([text_kind] if text else []) + (["ref_doc_id"] if ref else [])
            fields = ("id", "metadata") + (("text",) if text else ()) + (("ref_doc_id",) if ref else ())
            out = (_attrs(*names), fields)
    if len(_GETTERS) < 10_000:
        _GETTERS[(cls, text, ref)] = out
    return out


def snapshot(objs: Sequence[Any], *, text: bool = True, ref: bool = False) -> Snapshot | None:
    """Copy what doc-id resolution needs from framework results (see :class:`Snapshot`).

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
        how = _GETTERS.get((cls, text, ref), False)
        if how is False:
            how = _getter(objs[0], text, ref)
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
    read: formatting a UUID costs about 2 µs, three times per retrieval, on the host's call path.
    """

    __slots__ = (
        "_cache",
        "_final_items",
        "_final_scores",
        "_is_nested",
        "_items",
        "_outer",
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

    # positional-or-keyword: the handlers pass them by position on the host's call path (measured hot:
    # 243 ns by position, 541 ns with nine keywords)
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
        self._t0 = 0.0
        self._is_nested = False
        self._outer: Any = None  # the LlamaIndex span handler: id of the open retrieval this one is nested in

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
        self, items: Iterable[Any], scores: list[Any] | None = None, recorder: Recorder | None = None
    ) -> None:
        """Keep the retrieved list (rank order): framework objects, or objects plus a snapshot of scores.

        ``scores`` (one per item) are paired with ``item.node`` (LlamaIndex ``NodeWithScore``) or the
        item itself when the hits are built; rerankers mutate scores in place, so handlers copy them.
        With a ``recorder`` in ``retain="light"`` mode the objects are replaced by a :class:`Snapshot`.
        """
        self._items, self._scores = _keep(items, scores, recorder)
        self._cache = None

    def set_snapshot(self, snap: Snapshot, scores: list[Any] | None) -> None:
        """Keep a snapshot a handler already took (a framework's fast path to :meth:`set_items`)."""
        self._items, self._scores = snap, scores
        self._cache = None

    def set_final(
        self, items: Iterable[Any], scores: list[Any] | None = None, recorder: Recorder | None = None
    ) -> None:
        """Keep the list that reached the application after post-processing (reranking, filtering)."""
        self._final_items, self._final_scores = _keep(items, scores, recorder)
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


def _keep(items: Iterable[Any], scores: list[Any] | None, recorder: Recorder | None) -> tuple[list[Any], Any]:
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
        snap = snapshot(objs, text=recorder.snap_text, ref=recorder.snap_ref)
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
        (:func:`~rankbridge.callbacks.capture` asks for it when the golden set has doc ids to check the
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
        for qid, text in pairs:
            key = normalize_query(text)
            if key in self.by_text:
                self.ambiguous.setdefault(key, [self.by_text[key]]).append(qid)
                continue
            self.by_text[key] = qid

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


def now() -> tuple[float, float]:
    """(wall clock, perf counter) at this instant."""
    return time.time(), time.perf_counter()


def error_text(error: BaseException | str | None) -> str:
    """``"Type: message"`` of an exception (a string is kept)."""
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)
