"""What the two LlamaIndex capture handlers share: node scores, query text, the event tree walk.

:mod:`rankbridge.frameworks.llamaindex.capture` (instrumentation spans) and
:mod:`rankbridge.frameworks.llamaindex.capture_legacy` (``CallbackManager`` events) read nodes and queries alike.
:func:`open_retrieval` walks the legacy handler's map of open events; the span handler keeps no such map
(context variables give it the same answers, see ``llamaindex._Tap.start``). It imports only
``llama_index.core.schema``, which every LlamaIndex release has (the legacy handler exists for releases
without the instrumentation module).
"""

from __future__ import annotations

from typing import Any

from rankbridge.capture import (
    NOT_RECORDED,
    QUERY_ID_KEY,
    CaptureRecord,
    PlainAttrs,
    Unrecorded,
    open_record,
    small_tags,
)
from rankbridge.frameworks.llamaindex.adapter import plain_node_attrs

#: What the handlers tell :func:`rankbridge.capture.snapshot` about LlamaIndex's node classes: snapshots of
#: result nodes read ``text`` and ``id_`` directly (subclasses that override the accessors are called).
PLAIN_ATTRS: PlainAttrs = plain_node_attrs()

#: Bound on open spans / events / retrievals / waiting lists tracked at once.
MAX_OPEN = 100_000
MAX_DEPTH = 256


def node_scores(nodes: Any) -> list[Any] | None:
    """The scores of a list of ``NodeWithScore``, copied now (rerankers mutate them in place); ``None``
    when it is not such a list. The nodes themselves are kept by reference."""
    if not isinstance(nodes, list):
        return None
    try:
        return [n.score if n.node is not None else None for n in nodes]
    except AttributeError:
        return None


def query_text(q: Any) -> str:
    """The query string of a ``str`` or ``QueryBundle``."""
    if isinstance(q, str):
        return q
    text = getattr(q, "query_str", None)
    return text if isinstance(text, str) else str(q)


def open_retrieval(
    rec: Any,
    parents: dict[str, str | None],
    open_: dict[str, CaptureRecord | Unrecorded],
    run_id: str,
    parent: str | None,
    query: str,
    retriever: str,
    tags: Any,
) -> None:
    """Open a record for a retrieval that starts under ``parent``, in ``open_`` under ``run_id``.

    Walks up ``parents`` for the trace (the outermost open span or event) and for an enclosing retrieval
    (the record is then nested in it and shares its trace; inside an unrecorded one it is not recorded
    either). A top-level retrieval is recorded only if ``rec.admit()`` says so (sampling, cap). The query
    id comes from ``tags`` (``rankbridge_query_id``), else from :func:`~rankbridge.capture.query_id`.
    Runs inside the application's call: the arguments are positional and the walk stops at the first
    enclosing retrieval.
    """
    outer: CaptureRecord | None = None
    trace = run_id
    cur = parent
    for _ in range(MAX_DEPTH):
        if cur is None:
            break
        if cur in open_:
            found = open_[cur]
            if found is NOT_RECORDED:
                if len(open_) < MAX_OPEN:
                    open_[run_id] = NOT_RECORDED
                return
            outer = found
            break
        trace = cur
        cur = parents.get(cur)
    if outer is None and not rec.admit():
        if len(open_) < MAX_OPEN:
            open_[run_id] = NOT_RECORDED
        return
    if outer is not None:
        trace = outer._trace_id
    qid = tags.get(QUERY_ID_KEY) if tags else None
    record = open_record("llamaindex", query, run_id, retriever, qid, parent, trace, small_tags(tags), outer)
    if len(open_) < MAX_OPEN:
        open_[run_id] = record
