"""The :class:`Retriever` protocol, a static test double, and result normalisation.

A retriever, for rankbridge, is anything with ``retrieve(query, k)`` (and ``aretrieve(query, k)``) that
returns the top ``k`` hits for a query string as :class:`~rankbridge.Hit` objects in rank order. The
adapters in :mod:`rankbridge.frameworks` turn LlamaIndex and LangChain objects and plain functions into
one; :class:`StaticRetriever` answers from a table, for tests (like ``httpx.MockTransport``).

Doc-id resolution
-----------------
Frameworks return objects, qrels judge ids. Which attribute of a result is *the* id is a choice the user
makes explicitly with an ``id_from`` spec -- one source or a list tried in order:

``"id"`` / ``"node_id"``
    The object's own id: ``node.node_id`` (LlamaIndex), ``Document.id`` (LangChain), ``Hit.doc_id``,
    a string result itself, ``"doc_id"``/``"id"``/``"_id"`` of a dict.
``"ref_doc_id"``
    LlamaIndex's source-document id of a chunk (``None`` for hand-built nodes).
``"metadata:KEY"``
    ``metadata[KEY]`` of the result.
``"content_hash"``
    :func:`content_hash` of the text: the last resort. Every use is counted and reported per query.
a callable
    ``f(obj) -> str | None`` on the raw framework object.

A source that yields nothing (``None`` or ``""``) passes to the next one; when none yields an id, the
query fails with a message that says which sources were tried. ``doc_map`` then maps chunk ids to
document ids (a mapping or a callable) for qrels that judge whole documents; the first chunk of a
document keeps its rank and later chunks of the same document are dropped (and counted).

Examples
--------
>>> r = StaticRetriever({"scurvy": ["d1", ("d2", 0.4)]})
>>> [h.doc_id for h in r.retrieve("scurvy", k=10)]
['d1', 'd2']
>>> hits, notes = normalize_hits([{"id": "c1", "text": "a"}, {"id": "c2"}], k=5, doc_map={"c1": "D", "c2": "D"})
>>> [h.doc_id for h in hits], notes
(['D'], ['1 hit mapped to a document already ranked higher (first occurrence kept)'])
"""

from __future__ import annotations

import asyncio
import hashlib
import numbers
import operator
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, Protocol, runtime_checkable

from rankbridge.errors import InputError, RetrievalError
from rankbridge.types import Hit, _Ranked

__all__ = [
    "IdSpec",
    "Retriever",
    "StaticRetriever",
    "content_hash",
    "id_sources",
    "normalize_hits",
    "resolve_id",
    "result_attributes",
]

#: One id source (see the module docstring) or a sequence of them, tried in order.
IdSpec = str | Callable[[Any], Any] | Sequence[str | Callable[[Any], Any]]

_ID_SOURCES = ("id", "node_id", "ref_doc_id", "content_hash")


@runtime_checkable
class Retriever(Protocol):
    """What the runner needs: the top ``k`` hits for a query, sync and async.

    Implementations return :class:`~rankbridge.Hit` objects in rank order (best first). An optional
    ``native_async`` attribute tells :func:`~rankbridge.run_retriever` which path is the efficient one
    (``True``: asyncio; otherwise a thread pool), and an optional ``name`` names the run.
    """

    def retrieve(self, query: str, k: int) -> Sequence[Hit]:
        """Return the top ``k`` hits for ``query``."""
        ...

    async def aretrieve(self, query: str, k: int) -> Sequence[Hit]:
        """Async :meth:`retrieve`."""
        ...


def content_hash(text: str) -> str:
    """The id rankbridge gives a result with no usable id: ``"sha256:"`` and 16 hex digits of its text.

    Build qrels with the same function when your judged chunks have no stable id.

    Examples
    --------
    >>> content_hash("hello")
    'sha256:2cf24dba5fb0a30e'
    """
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# -- reading framework objects without importing frameworks (duck typing) ------------------------
_WRAPPER: dict[type, bool] = {}  # type -> is it a LlamaIndex-style NodeWithScore (decided once per type)
_TEXT_KIND: dict[type, str] = {}
_ID_KIND: dict[type, str] = {}
#: Accessors of LlamaIndex's node classes that return one plain attribute (llama-index-core 0.14
#: ``schema.py``): ``TextNode.get_content()`` in its default metadata mode (``NONE``) returns ``self.text``,
#: ``BaseNode.node_id`` returns ``self.id_``. Rows: (module, class, accessor, the attribute it returns).
#: Classes are recognised by module and name in a result's MRO, so this module never imports LlamaIndex.
_PLAIN_ACCESSORS = (
    ("llama_index.core.schema", "TextNode", "get_content", "text"),
    ("llama_index.core.schema", "BaseNode", "node_id", "id_"),
)
#: The accessors of :data:`_PLAIN_ACCESSORS` met so far -> the attribute each returns. Keys are the accessors
#: themselves: a class that inherits one is read through the attribute (one C-level lookup instead of a
#: Python call per result); a class that overrides it (``Document``'s ``get_content``, a custom node) is
#: called as before.
_PLAIN_READS: dict[Any, str] = {}


def _plain_reads_of(cls: type) -> dict[Any, str]:
    """The accessors of :data:`_PLAIN_ACCESSORS` that the classes in ``cls``'s MRO define -> their attributes."""
    out: dict[Any, str] = {}
    for base in cls.__mro__:
        for module, name, accessor, attr in _PLAIN_ACCESSORS:
            if base.__module__ == module and base.__qualname__ == name and accessor in base.__dict__:
                out[base.__dict__[accessor]] = attr
    return out


def _plain_kind(cls: type, kind: str) -> str:
    """The attribute that ``cls``'s accessor ``kind`` returns, when it is a known plain one; else ``kind``.

    Called once per class and kind (the first reading of the class): it learns the plain accessors of the
    class's MRO itself, so a plain function returning LlamaIndex nodes reads them as an adapter does.
    """
    try:
        _PLAIN_READS.update(_plain_reads_of(cls))
        return _PLAIN_READS.get(getattr(cls, kind, None), kind)
    except Exception:  # an unhashable class attribute, a class whose getattr raises: read as before
        return kind


def _unwrap(item: Any) -> tuple[Any, float | None]:
    """(object, score) of a result item: NodeWithScore, (Document, score) pairs, Hits, dicts..."""
    cls = type(item)
    if cls is tuple and len(item) == 2:
        return item[0], item[1]
    wrapper = _WRAPPER.get(cls)
    if wrapper is None:
        wrapper = _WRAPPER[cls] = not isinstance(item, (Hit, Mapping, str, tuple)) and (
            hasattr(item, "score") and hasattr(getattr(item, "node", None), "node_id")
        )
    if wrapper:
        return item.node, item.score
    if isinstance(item, Hit):
        return item, item.score
    if isinstance(item, Mapping):
        return item, item.get("score")
    if isinstance(item, tuple) and len(item) == 2:
        return item[0], item[1]
    return item, None


def _own_id(obj: Any) -> Any:
    if isinstance(obj, str):
        return obj
    if isinstance(obj, Hit):
        return obj.doc_id
    if isinstance(obj, Mapping):
        for key in ("doc_id", "id", "_id"):
            if obj.get(key) not in (None, ""):
                return obj[key]
        return None
    if isinstance(obj, numbers.Integral) and not isinstance(obj, bool):  # np.int64 from a DataFrame too
        return str(int(obj))
    cls = type(obj)
    kind = _ID_KIND.get(cls)
    if kind is None:
        kind = "node_id" if hasattr(obj, "node_id") else "id"
        kind = _ID_KIND[cls] = _plain_kind(cls, kind)
    return getattr(obj, kind, None)


def _text(obj: Any) -> str | None:
    if isinstance(obj, Hit):
        return obj.text
    if isinstance(obj, Mapping):
        t = obj.get("text", obj.get("page_content"))
        return t if isinstance(t, str) else None
    cls = type(obj)
    kind = _TEXT_KIND.get(cls)
    if kind is None:
        if isinstance(getattr(obj, "page_content", None), str):
            kind = "page_content"
        elif callable(getattr(obj, "get_content", None)):
            kind = _plain_kind(cls, "get_content")
        else:
            kind = "text"
        _TEXT_KIND[cls] = kind
    if kind == "get_content":
        try:
            t = obj.get_content()
        except Exception:  # a node whose content cannot be read simply has no text
            return None
    else:
        t = getattr(obj, kind, None)
    return t if isinstance(t, str) else None


def result_attributes(obj: Any) -> tuple[str, str] | None:
    """Which attributes :func:`normalize_hits` reads on results of ``type(obj)``: ``(own id, text)``.

    The own id is ``"node_id"`` or ``"id"``; the text is ``"page_content"``, ``"text"`` or
    ``"get_content"`` (a method, called without arguments); an accessor a framework adapter declared
    plain is replaced by the attribute it returns (LlamaIndex nodes: ``"id_"``, ``"text"``). ``None`` for
    plain values (strings, ints, mappings, :class:`~rankbridge.Hit`), which are read without attributes.
    Live capture uses this to copy exactly those attributes when a retrieval ends.

    Examples
    --------
    >>> class Doc:
    ...     def __init__(self):
    ...         self.id, self.page_content, self.metadata = "d1", "hello", {}
    >>> result_attributes(Doc()), result_attributes("d1")
    (('id', 'page_content'), None)
    """
    if isinstance(obj, (str, Hit, Mapping, numbers.Integral)):
        return None
    _own_id(obj)
    _text(obj)
    cls = type(obj)
    return _ID_KIND[cls], _TEXT_KIND[cls]


def id_sources(id_from: IdSpec | None) -> tuple[str | Callable[[Any], Any], ...]:
    """``id_from`` as the tuple of sources tried in order (``("id",)`` when ``None``), validated.

    Examples
    --------
    >>> id_sources(None), id_sources(["metadata:doc_id", "id"])
    (('id',), ('metadata:doc_id', 'id'))
    """
    return _normalize_spec(id_from)


def _metadata(obj: Any) -> Mapping[str, Any] | None:
    if isinstance(obj, Hit):
        return obj.metadata
    meta = obj.get("metadata") if isinstance(obj, Mapping) else getattr(obj, "metadata", None)
    return meta if isinstance(meta, Mapping) else None


def _spec_name(source: str | Callable[[Any], Any]) -> str:
    return source if isinstance(source, str) else getattr(source, "__name__", repr(source))


def _normalize_spec(id_from: IdSpec | None) -> tuple[str | Callable[[Any], Any], ...]:
    if id_from is None:
        return ("id",)
    specs: tuple[str | Callable[[Any], Any], ...]
    specs = (id_from,) if isinstance(id_from, str) or callable(id_from) else tuple(id_from)
    if not specs:
        raise InputError("id_from: expected at least one id source, got an empty sequence")
    for s in specs:
        if callable(s):
            continue
        if not isinstance(s, str) or not (s in _ID_SOURCES or (s.startswith("metadata:") and len(s) > 9)):
            raise InputError(
                "id_from: expected 'id', 'node_id', 'ref_doc_id', 'metadata:KEY', 'content_hash' or a callable, "
                f"got {s!r}"
            )
    return specs


def resolve_id(obj: Any, id_from: IdSpec | None = None) -> tuple[str | None, str | None]:
    """Find the doc id of one result object.

    Parameters
    ----------
    obj:
        A framework result (LlamaIndex node, LangChain ``Document``), a :class:`~rankbridge.Hit`, a
        dict or a string.
    id_from:
        An id source or a list of them tried in order (see the module docstring). Default ``"id"``.

    Returns
    -------
    (doc_id, source)
        The id as a string and the name of the source that gave it; ``(None, None)`` if none did.

    Examples
    --------
    >>> resolve_id({"id": None, "metadata": {"source": "a.pdf"}}, ["id", "metadata:source"])
    ('a.pdf', 'metadata:source')
    >>> resolve_id({"text": "hi"}, ["id", "content_hash"])
    ('sha256:8f434346648f6b96', 'content_hash')
    """
    return _resolve(obj, _normalize_spec(id_from))


def _resolve(obj: Any, specs: tuple[str | Callable[[Any], Any], ...]) -> tuple[str | None, str | None]:
    for source in specs:
        value: Any
        if callable(source):
            value = source(obj)
        elif source in ("id", "node_id"):
            value = _own_id(obj)
        elif source == "ref_doc_id":
            value = getattr(obj, "ref_doc_id", None)
            if value is None and isinstance(obj, Mapping):
                value = obj.get("ref_doc_id")
        elif source == "content_hash":
            text = _text(obj)
            value = content_hash(text) if text is not None else None
        else:  # metadata:KEY
            meta = _metadata(obj)
            value = meta.get(source[9:]) if meta is not None else None
        if value is None or value == "":
            continue
        if type(value) is str:
            return value, _spec_name(source)
        if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
            raise RetrievalError(
                f"id source {_spec_name(source)!r} gave a {type(value).__name__} ({value!r}); expected a str id "
                "(or an integer, read as its digits)"
            )
        # any integral (np.int64 from a DataFrame) as its decimal digits, as rankbridge.idmatch reads it
        return (str(value) if isinstance(value, str) else str(int(value))), _spec_name(source)
    return None, None


def _no_id_hint(obj: Any, specs: tuple[str | Callable[[Any], Any], ...]) -> str:
    """What to pass when ``obj`` gives no id under ``specs``: a source it carries, after the ones tried."""
    names = [_spec_name(s) for s in specs]
    try:
        keys = [key for key in list(_metadata(obj) or {})[:50] if isinstance(key, str)]
    except Exception:  # metadata that cannot be listed gives no hint; the error it belongs to is raised
        keys = []
    # LlamaIndex's chunk -> document link first, the object's own id (often a UUID) last
    carried = []
    for source in ("ref_doc_id", *(f"metadata:{key}" for key in keys), "id"):
        try:
            if source not in names and _resolve(obj, (source,))[0] is not None:
                carried.append(source)
        except RetrievalError:  # a value that is no id (a float, a list) is no hint
            pass
    last = "or add 'content_hash' as a last resort"
    if not carried:
        return f"pass id_from= (a 'metadata:KEY' the results carry, a callable, {last})"
    has = ", ".join(repr(c) for c in carried[:3])
    # with sources in use, they stay first: a list tries them in order and the next one names the other results
    if names == ["id"]:
        return f"it carries {has}: pass id_from={carried[0]!r} (or a callable, {last})"
    spec = [*names, carried[0]]
    return f"it carries {has}: pass id_from={spec!r} (a list tries sources in order; or a callable, {last})"


def normalize_hits(
    items: Any,
    *,
    k: int,
    id_from: IdSpec | None = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    keep_text: bool = True,
) -> tuple[list[Hit], list[str]]:
    """Turn what a retriever returned into at most ``k`` :class:`~rankbridge.Hit` objects, with notes.

    Parameters
    ----------
    items:
        A list of results in rank order: ``Hit``, doc-id strings, ``(obj, score)`` pairs, dicts with an
        id key, LlamaIndex ``NodeWithScore`` or LangChain ``Document`` objects.
    k:
        Keep the first ``k`` (a longer list is truncated and noted).
    id_from:
        Where the doc id comes from (see the module docstring).
    doc_map:
        Chunk id -> document id (mapping or callable); ids it does not know are kept as they are. Later
        hits of a document already ranked are dropped (first occurrence wins) and noted.
    keep_text:
        Keep each hit's text (needed by RAGAS; drop it to save memory).

    Returns
    -------
    (hits, notes)
        The hits in rank order, and human-readable notes on anything that was changed or guessed
        (truncation, content-hash ids, collapsed chunks). Repeated ids are left for
        :meth:`~rankbridge.Run.add`, which keeps the first and counts them.

    Raises
    ------
    RetrievalError
        The result is not a list, or an item has no id under ``id_from`` or has the wrong type.
    """
    hits, notes = _normalize(items, k=k, id_from=id_from, doc_map=doc_map, keep_text=keep_text)
    return (hits.hits() if type(hits) is _Ranked else hits), notes


def _normalize(
    items: Any,
    *,
    k: int,
    id_from: IdSpec | None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None,
    keep_text: bool,
) -> tuple[list[Hit] | _Ranked, list[str]]:
    """:func:`normalize_hits`, with the common forms kept compact: a ``_Ranked`` (no Hit made), as a Run stores it.

    The fast paths below establish what a ``_Ranked`` promises (str ids, float-or-None scores without
    NaN; see :class:`rankbridge.types._Ranked`), so :meth:`~rankbridge.Run.add` keeps it without checking
    again; anything else is read by the general loop into Hits, which ``Run.add`` checks.
    """
    seq: Sequence[Any]
    if type(items) is list or type(items) is tuple:  # the common case, without the ABC checks below
        seq = items
    elif items is None:
        raise RetrievalError("the retriever returned None; expected a list of hits")
    elif isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise RetrievalError(f"the retriever returned a {type(items).__name__}; expected a list of hits")
    else:
        seq = items if isinstance(items, (list, tuple)) else list(items)
    notes: list[str] = []
    if len(seq) > k:
        notes.append(f"returned {len(seq)} hits for k={k}; kept the first {k}")
        seq = seq[:k]
    # the default id source, as given or as an adapter keeps it normalised, skips re-checking the spec
    specs = _DEFAULT_SPEC if id_from is None or id_from == _DEFAULT_SPEC else _normalize_spec(id_from)
    fast = specs == _DEFAULT_SPEC and doc_map is None
    if fast and seq:
        first = type(seq[0])
        if first is dict:
            quick = _fast_dicts(seq, keep_text)
        else:
            kinds = set(map(type, seq))  # one pass, read by both fast paths
            # _fast_plain takes only lists of one plain type: a list led by anything else skips it
            quick = _fast_plain(seq, keep_text, kinds) if first in _PLAIN_TYPES else None
            if quick is None and first is not str:
                quick = _fast_framework(seq, keep_text, kinds)  # framework objects, or (object, score) pairs
        if quick is not None:
            return quick, notes
    hits: list[Hit] = []
    hashed = 0
    collapsed = 0
    mapped_seen: set[str] = set()
    for rank, item in enumerate(seq, 1):
        if fast and isinstance(item, Hit):
            if not isinstance(item.doc_id, str) or not item.doc_id:
                raise RetrievalError(f"hit at rank {rank} has no usable doc id ({item.doc_id!r})")
            hits.append(item if keep_text or item.text is None else Hit(item.doc_id, item.score, None, item.metadata))
            continue
        obj, score = _unwrap(item)
        if obj is None or isinstance(obj, (bool, float, bytes)):
            raise RetrievalError(
                f"result at rank {rank} is a {type(obj).__name__} ({obj!r}); expected a Hit, a doc id, "
                "a (doc, score) pair or a framework document"
            )
        doc_id, source = _resolve(obj, specs)
        if doc_id is None:
            tried = ", ".join(repr(_spec_name(s)) for s in specs)
            raise RetrievalError(
                f"result at rank {rank} ({type(obj).__name__}) has no doc id from {tried}; {_no_id_hint(obj, specs)}"
            )
        if source == "content_hash":
            hashed += 1
        if doc_map is not None:
            mapped = doc_map(doc_id) if callable(doc_map) else doc_map.get(doc_id)
            if mapped is not None:
                doc_id = str(mapped)
                if doc_id in mapped_seen:
                    collapsed += 1
                    continue
                mapped_seen.add(doc_id)
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            try:
                score = float(score)
            except (TypeError, ValueError):
                raise RetrievalError(f"result at rank {rank} has a non-numeric score {score!r}") from None
        if score is not None and score != score:  # NaN: the framework has no score to give
            score = None
        hits.append(
            Hit(
                doc_id,
                None if score is None else float(score),
                _text(obj) if keep_text else None,
                _metadata(obj),
            )
        )
    if hashed:
        notes.append(f"{hashed} hit{'s' if hashed > 1 else ''} had no id; used content_hash of the text")
    if collapsed:
        notes.append(
            f"{collapsed} hit{'s' if collapsed > 1 else ''} mapped to a document already ranked higher "
            "(first occurrence kept)"
        )
    return hits, notes


_DEFAULT_SPEC: tuple[str] = ("id",)
_NONE = type(None)
_NODE = operator.attrgetter("node")
_SCORE = operator.attrgetter("score")
_METADATA = operator.attrgetter("metadata")
_GET_CONTENT = operator.methodcaller("get_content")
#: The item types :func:`_fast_plain` takes (a list of one of them).
_PLAIN_TYPES = frozenset({str, tuple, Hit})
#: attribute name -> its ``operator.attrgetter``, made once (the kinds of id and text attribute are few).
_ATTR_GETTERS: dict[str, Callable[[Any], Any]] = {}

# The compact columns below are tuples, not lists: a tuple of strs, floats or Nones leaves the garbage
# collector's lists at its first collection, a list never does, and a run keeps these columns for every
# query (lists would be walked again by each full collection while the run grows: docs/benchmarks.md).


def _attr_getter(name: str) -> Callable[[Any], Any]:
    get = _ATTR_GETTERS.get(name)
    if get is None:
        get = _ATTR_GETTERS[name] = _GET_CONTENT if name == "get_content" else operator.attrgetter(name)
    return get


def _fast_plain(seq: Sequence[Any], keep_text: bool, kinds: set[type]) -> _Ranked | None:
    """Doc-id strings, ``(doc_id, number)`` pairs or Hits, ids non-empty: kept compact (None: anything else).

    What the general loop makes of them (a pair's int score becomes float, a NaN score no score), by
    C-level passes over the list: the runner's cost for a plain function ``f(query, k)``. Strings and
    Hits get :meth:`Run.add`'s own checks (:meth:`~rankbridge.types._Ranked.of_items`). ``kinds``: the
    types of the items.
    """
    if kinds == {str} or (kinds == {Hit} and keep_text):  # without texts, the loop strips them
        entry = _Ranked.of_items(seq)
        return entry if entry is not None and all(entry.ids) else None
    if kinds != {tuple} or set(map(len, seq)) != {2}:
        return None
    ids, scores = zip(*seq, strict=True)  # two tuples (every item is a pair, checked above)
    score_types = set(map(type, scores))
    if set(map(type, ids)) != {str} or not all(ids) or not score_types <= {float, int}:
        return None
    if score_types != {float}:
        scores = tuple(map(float, scores))
    return _Ranked(ids, _no_nan(scores))


def _no_nan(scores: Sequence[float | None]) -> Sequence[float | None]:
    """``scores`` with NaN (a framework's "no score") as None."""
    if any(map(operator.ne, scores, scores)):  # NaN, the one float unequal to itself
        return tuple(None if s != s else s for s in scores)  # type: ignore[comparison-overlap]
    return scores


_DICT_ID_KEYS = ("doc_id", "id", "_id")


def _fast_dicts(seq: Sequence[Any], keep_text: bool) -> _Ranked | None:
    """Plain dicts that share one id key (``doc_id``/``id``/``_id``, a non-empty str), a float or int
    score, a dict or no metadata: kept compact, read by C-level ``map(dict.get, ...)`` passes.

    What the general loop makes of them; None for anything else (dicts with different id keys, an odd
    score or metadata), for the general loop to read or refuse.
    """
    if set(map(type, seq)) != {dict}:
        return None
    for key in _DICT_ID_KEYS:  # the first key that any of them has
        ids: tuple[Any, ...] = tuple(map(dict.get, seq, repeat(key)))
        if set(map(type, ids)) != {_NONE}:
            break
    if set(map(type, ids)) != {str} or not all(ids):
        return None
    scores: tuple[Any, ...] = tuple(map(dict.get, seq, repeat("score")))
    score_types = set(map(type, scores))
    if not score_types <= {float, _NONE}:
        if not score_types <= {float, int, _NONE}:
            return None
        scores = tuple([float(s) if type(s) is int else s for s in scores])
    texts: tuple[Any, ...] | None = None
    if keep_text:
        texts = tuple(map(dict.get, seq, repeat("text")))
        if set(map(type, texts)) != {str}:  # a missing text falls back to page_content
            texts = tuple(map(_text, seq))
    metadata = tuple(map(dict.get, seq, repeat("metadata")))
    meta_types = set(map(type, metadata))
    if not meta_types <= {dict, _NONE}:
        return None
    return _Ranked(ids, _no_nan(scores), texts, None if meta_types == {_NONE} else metadata)


def _fast_framework(seq: Sequence[Any], keep_text: bool, kinds: set[type]) -> _Ranked | None:
    """Framework results of one type seen before, with plain ids: read by C-level passes (None: anything odd).

    ``NodeWithScore`` (node and score), LangChain ``Document`` (no score) or ``(Document, score)`` pairs;
    the kinds of id and text attribute come from the general loop's first reading of the type. ``kinds``:
    the types of the items.
    """
    try:
        if len(kinds) != 1:
            return None
        (cls,) = kinds
        objs: Sequence[Any]
        scores: Sequence[Any] | None
        if cls is tuple:
            if set(map(len, seq)) != {2}:
                return None
            objs, scores = zip(*seq, strict=True)
        else:
            wrapper = _WRAPPER.get(cls)
            if wrapper:
                objs, scores = tuple(map(_NODE, seq)), tuple(map(_SCORE, seq))
            elif wrapper is False and cls in _ID_KIND:  # a bare framework object (a LangChain Document)
                objs, scores = seq, None
            else:
                return None
        obj_kinds = kinds if objs is seq else set(map(type, objs))
        if len(obj_kinds) != 1:
            return None
        (ocls,) = obj_kinds
        id_kind, text_kind = _ID_KIND.get(ocls), _TEXT_KIND.get(ocls)
        if id_kind is None or text_kind is None:
            return None
        ids = tuple(map(_ATTR_GETTERS.get(id_kind) or _attr_getter(id_kind), objs))
        if set(map(type, ids)) != {str} or not all(ids):
            return None
        if scores is not None:
            if not set(map(type, scores)) <= {float, _NONE}:
                return None
            scores = _no_nan(scores)
        texts: tuple[Any, ...] | None = None
        if keep_text:
            texts = tuple(map(_ATTR_GETTERS.get(text_kind) or _attr_getter(text_kind), objs))
            if not set(map(type, texts)) <= {str}:
                texts = tuple([t if isinstance(t, str) else None for t in texts])
        metadata = tuple(map(_METADATA, objs))
        meta_types = set(map(type, metadata))
        if not meta_types <= {dict, _NONE}:  # another Mapping (kept), or not one (dropped): the general loop
            return None
    except Exception:
        return None
    return _Ranked(ids, scores, texts, None if meta_types == {_NONE} else metadata)


class StaticRetriever:
    """A retriever that answers from a table: ``{query text: [results in rank order]}``.

    The test double of the :class:`Retriever` protocol (like ``httpx.MockTransport``): no framework, no
    network, deterministic.

    Parameters
    ----------
    results:
        Query text -> results (``Hit``, doc ids, ``(doc_id, score)`` pairs, dicts).
    default:
        What an unknown query returns (empty by default).
    delay:
        Seconds each call takes (``time.sleep`` / ``asyncio.sleep``), to stand in for a remote store.
    native_async:
        Whether the runner should drive it through ``aretrieve`` (asyncio) or ``retrieve`` (threads).
    name:
        The run name the runner uses.

    Examples
    --------
    >>> r = StaticRetriever({"q": [("a", 2.0), ("b", 1.0), ("c", 0.5)]})
    >>> [(h.doc_id, h.score) for h in r.retrieve("q", k=2)]
    [('a', 2.0), ('b', 1.0)]
    >>> import asyncio
    >>> [h.doc_id for h in asyncio.run(r.aretrieve("unknown", k=2))]
    []
    """

    def __init__(
        self,
        results: Mapping[str, Iterable[Any]],
        *,
        default: Iterable[Any] = (),
        delay: float = 0.0,
        native_async: bool = False,
        name: str = "static",
    ) -> None:
        if delay < 0:
            raise InputError(f"delay must be >= 0 seconds. Got {delay!r} instead.")
        self._results: dict[str, list[Hit]] = {q: self._hits(v) for q, v in results.items()}
        self._default = self._hits(default)
        self.delay = delay
        self.native_async = native_async
        self.name = name
        self.calls = 0

    @staticmethod
    def _hits(items: Iterable[Any]) -> list[Hit]:
        return normalize_hits(list(items), k=1 << 62)[0]

    @classmethod
    def from_run(cls, run: Any, texts: Mapping[str, str], **kwargs: Any) -> StaticRetriever:
        """Replay a :class:`~rankbridge.Run`: ``texts`` maps each query id of the run to its text."""
        return cls({texts[qid]: run.hits(qid) for qid in run if qid in texts}, **kwargs)

    def retrieve(self, query: str, k: int) -> list[Hit]:
        """The first ``k`` results stored for ``query``."""
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        return self._results.get(query, self._default)[:k]

    async def aretrieve(self, query: str, k: int) -> list[Hit]:
        """Async :meth:`retrieve` (sleeps with ``asyncio.sleep``)."""
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._results.get(query, self._default)[:k]
