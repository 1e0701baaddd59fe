"""LangChain callback handlers that record every retrieval (sync and async).

Importing this module imports ``langchain_core``; :mod:`rankbridge` and :mod:`rankbridge.capture` import
it only when a capture attaches to LangChain.

:func:`attach` registers the handler process-wide through ``langchain_core``'s configure hooks (the mechanism
behind ``collect_runs``), so every retriever run in any thread or task, alone or nested in a chain, a tool or
an agent, sees it without the application passing ``callbacks=``. By default it rides on retriever runs only;
``trace=True`` puts it on every run, to follow chains up to the outermost one. The handler runs inline
(``run_inline = True``): its methods only copy references and read the clock, so LangChain need not hop to a
thread pool to call it from async code.

Passing a golden-set query id: ``chain.invoke(q, config={"metadata": {"rankbridge_query_id": "q7"}})``,
a tag ``"rankbridge_query_id=q7"``, or ``with query_id("q7"):`` around the call.

Handlers passed by hand
-----------------------
An app that already passes ``config={"callbacks": [...]}`` can add a handler of its own instead of a
process-wide :func:`rankbridge.capture.capture`; it records the retrievals of the runs it is given to (and
of their child runs), and reads them back with the same query matching as ``capture()``:
:meth:`~RankbridgeCallbackHandler.to_run` (a :class:`~rankbridge.Run`), :meth:`~RankbridgeCallbackHandler.summary`,
:meth:`~RankbridgeCallbackHandler.as_capture` (every other reading of :class:`~rankbridge.capture.Capture`:
``records``, ``unmatched``, ``judge``, ``write_trec``...).

Examples
--------
With langchain-core installed (not run here)::

    from rankbridge.frameworks.langchain.capture import RankbridgeCallbackHandler

    handler = RankbridgeCallbackHandler(id_from="metadata:doc_id")
    for qid, question in golden.texts().items():
        chain.invoke(question, config={"callbacks": [handler], "metadata": {"rankbridge_query_id": qid}})
    run = handler.to_run(golden)                  # final lists; to_run(golden, stage="retrieved") too
    rankbridge.evaluate(golden.qrels, run, ["ndcg@10"])
    handler.summary(golden)                       # matched by id / by text, unmatched, missing, errors
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from asyncio import events as _events
from collections.abc import Callable, Mapping, Sequence
from types import CodeType
from typing import TYPE_CHECKING, Any, cast
from uuid import UUID

from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler, manager
from langchain_core.retrievers import BaseRetriever
from langchain_core.tracers.context import register_configure_hook

from rankbridge.capture import (
    NOT_RECORDED,
    QUERY_ID_KEY,
    CaptureRecord,
    Recorder,
    RecorderRuns,
    Unrecorded,
    error_text,
    guarded,
    open_record,
    own_recorder,
    small_tags,
)

if TYPE_CHECKING:
    from rankbridge.retriever import IdSpec

__all__ = ["RankbridgeAsyncCallbackHandler", "RankbridgeCallbackHandler", "attach"]

#: Bound on open (started, not yet ended) runs tracked for parent/trace ids.
_MAX_OPEN = 100_000


class _Tap:
    """The bookkeeping shared by the sync and async handlers (plain Python, no LangChain types)."""

    framework = "langchain"

    def __init__(self, recorder: Recorder, *, trace: bool = True) -> None:
        self._recorder = recorder
        self.trace = trace
        # open retriever runs: run id -> record (NOT_RECORDED: sampled out, over the cap, or nested in such a one)
        self._open: dict[UUID, CaptureRecord | Unrecorded] = {}
        # open chain/tool runs: run id -> parent run id (for the trace id)
        self._parents: dict[UUID, UUID | None] = {}
        # open retriever runs started inside an asyncio task: task -> their run ids, and run id -> task. LangChain
        # reports no end for a run whose task is cancelled (ainvoke catches Exception, not CancelledError): when
        # the task is done, its runs still open are recorded as cancelled and leave the open map (_task_done)
        self._by_task: dict[asyncio.Task[Any], set[UUID]] = {}
        self._task_of: dict[UUID, asyncio.Task[Any]] = {}

    def run_start(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        if self._recorder.enabled and len(self._parents) < _MAX_OPEN:
            self._parents[run_id] = parent_run_id

    def run_end(self, run_id: UUID) -> None:
        self._parents.pop(run_id, None)

    @guarded
    def guarded_run_start(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        self.run_start(run_id, parent_run_id)

    @guarded
    def guarded_run_end(self, run_id: UUID) -> None:
        self.run_end(run_id)

    def _trace(self, parent_run_id: UUID) -> UUID:
        cur = parent_run_id
        for _ in range(256):
            parent = self._parents.get(cur)
            if parent is None:
                break
            cur = parent
        return cur

    def _opened(self, run_id: UUID) -> None:
        """A retrieval went into the open map: inside an event loop, watch its task (see :meth:`_task_done`)."""
        # (outside an event loop, one C call: sync apps pay nothing more)
        loop = _events._get_running_loop()
        if loop is not None:
            self._watch(run_id, loop)

    def _watch(self, run_id: UUID, loop: asyncio.AbstractEventLoop) -> None:
        """Note the task an open retrieval runs in; the first of a task adds one done callback to it."""
        task = asyncio.current_task(loop)
        if task is None:
            return
        runs = self._by_task.get(task)
        if runs is None:
            if len(self._by_task) >= _MAX_OPEN:
                return
            runs = self._by_task[task] = set()
            task.add_done_callback(self._task_done)
        runs.add(run_id)
        self._task_of[run_id] = task

    def _unwatch(self, run_id: UUID) -> None:
        task = self._task_of.pop(run_id, None)
        if task is not None:
            runs = self._by_task.get(task)
            if runs is not None:
                runs.discard(run_id)

    @guarded
    def _task_done(self, task: asyncio.Task[Any]) -> None:
        """A task ended: its retrievals still open will not end (cancelled, or abandoned): record them so."""
        runs = self._by_task.pop(task, None)
        if not runs:
            return
        cancelled = task.cancelled()
        for run_id in list(runs):
            self._task_of.pop(run_id, None)
            record = self._open.pop(run_id, NOT_RECORDED)
            if record is NOT_RECORDED:  # not recorded (or already ended)
                continue
            record.latency = time.perf_counter() - record._t0
            record.error = "CancelledError: retrieval cancelled" if cancelled else "retrieval never ended (task done)"
            if not record._is_nested:
                self._recorder.cancel(record)

    def retriever_start(
        self,
        query: Any,
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: Sequence[str] | None,
        metadata: dict[str, Any] | None,
        name: Any,
    ) -> None:
        rec = self._recorder
        if not rec.enabled:
            return
        parent = self._open.get(parent_run_id) if parent_run_id is not None else None
        if parent is NOT_RECORDED:  # nested in a retrieval that is not recorded
            self._open[run_id] = NOT_RECORDED
            self._opened(run_id)
            return
        nested = parent is not None
        if not nested and not rec.admit():
            if len(self._open) < _MAX_OPEN:
                self._open[run_id] = NOT_RECORDED
                self._opened(run_id)
            return
        qid: Any = None
        if metadata:
            qid = metadata.get(QUERY_ID_KEY)
        if qid is None and tags:
            for tag in tags:
                if (
                    isinstance(tag, str)
                    and tag.startswith(QUERY_ID_KEY)
                    and tag[len(QUERY_ID_KEY) : len(QUERY_ID_KEY) + 1] in "=:"
                ):
                    qid = tag[len(QUERY_ID_KEY) + 1 :] or None
                    break
        if parent is not None:  # nested: parent is the open record of the retrieval this one runs inside
            trace_id: Any = parent._trace_id
        elif not self.trace:
            trace_id = None
        else:
            trace_id = self._trace(parent_run_id) if parent_run_id is not None else run_id
        record = open_record(
            "langchain",
            query if isinstance(query, str) else str(query),
            run_id,
            str(name) if name else "Retriever",
            qid,
            parent_run_id,
            trace_id,
            small_tags(metadata),
            parent,
        )
        if len(self._open) < _MAX_OPEN:
            self._open[run_id] = record
            self._opened(run_id)
        elif not nested:
            rec.dropped += 1

    def retriever_end(self, documents: Sequence[Any], run_id: UUID) -> None:
        if self._task_of:
            self._unwatch(run_id)
        record = self._open.pop(run_id, NOT_RECORDED)
        if record is NOT_RECORDED:
            return
        record.latency = time.perf_counter() - record._t0
        record.set_items(documents, None, self._recorder)
        if record._is_nested:
            return
        if record.nested:
            # a wrapper around one retriever (reranking / compression): first stage, then final list
            record.promote_nested()
        self._recorder.add(record)

    def retriever_error(self, error: BaseException, run_id: UUID) -> None:
        if self._task_of:
            self._unwatch(run_id)
        record = self._open.pop(run_id, NOT_RECORDED)
        if record is NOT_RECORDED:
            return
        record.latency = time.perf_counter() - record._t0
        record.error = error_text(error)
        if not record._is_nested:
            self._recorder.add(record)


class _HandlerSettings(RecorderRuns):
    """What the sync and async handlers share: the recorder, which events LangChain may skip, and the
    reading of what they recorded (``to_run``, ``summary``, ``as_capture``, ``clear``: :class:`RecorderRuns`,
    never called by LangChain).

    Listed first among the bases, so these properties take precedence over LangChain's defaults.
    """

    _recorder: Recorder
    _tap: _Tap

    def __init__(
        self,
        recorder: Recorder | None = None,
        *,
        trace: bool = True,
        id_from: IdSpec | None = None,
        doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
        keep_text: bool = True,
    ) -> None:
        self._recorder = own_recorder(recorder, id_from, doc_map, keep_text)
        self._tap = _Tap(self._recorder, trace=trace)

    @property
    def recorder(self) -> Recorder:
        """The recorder this handler writes to."""
        return self._recorder

    def _runs_framework(self) -> str:
        return "langchain"

    # events we never need: LangChain skips the call entirely
    @property
    def ignore_llm(self) -> bool:
        return True

    @property
    def ignore_chat_model(self) -> bool:
        return True

    @property
    def ignore_retry(self) -> bool:
        return True

    @property
    def ignore_custom_event(self) -> bool:
        return True

    # while paused (or without trace), LangChain does not call us at all
    @property
    def ignore_retriever(self) -> bool:
        return not self._recorder.enabled

    @property
    def ignore_chain(self) -> bool:
        return not (self._tap.trace and self._recorder.enabled)

    @property
    def ignore_agent(self) -> bool:
        return not (self._tap.trace and self._recorder.enabled)


class RankbridgeCallbackHandler(_HandlerSettings, BaseCallbackHandler):
    """A LangChain callback handler that records retrievals into a :class:`~rankbridge.capture.Recorder`.

    Works for sync and async runs (it runs inline: its methods never block). Every method is wrapped
    so that a failure of rankbridge's bookkeeping is counted, never raised into the application.

    Parameters
    ----------
    recorder:
        Where records go; a new default :class:`~rankbridge.capture.Recorder` when omitted.
    trace:
        Follow chain and tool runs to give each retrieval the id of its outermost run (``trace_id``).
        ``False`` skips those events (less overhead on long chains; ``trace_id`` is then ``None``).
    id_from, doc_map, keep_text:
        How results become hits when the records are read (see :func:`rankbridge.capture.capture`); they
        configure the handler's own recorder, so they cannot be combined with ``recorder``.

    Examples
    --------
    >>> handler = RankbridgeCallbackHandler(id_from="metadata:doc_id")
    >>> len(handler.to_run({"q1": "What causes scurvy?"})), handler.summary()["missing"]
    (0, [])
    >>> handler.summary({"q1": "What causes scurvy?"})["missing"]
    ['q1']
    """

    run_inline = True
    raise_error = False

    @guarded
    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open a record for this retrieval."""
        name = kwargs.get("name") or (serialized or {}).get("name")
        self._tap.retriever_start(query, run_id, parent_run_id, tags, metadata, name)

    @guarded
    def on_retriever_end(self, documents: Sequence[Any], *, run_id: UUID, **kwargs: Any) -> None:
        """Close the record with the documents, in rank order."""
        self._tap.retriever_end(documents, run_id)

    @guarded
    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Close the record with the error."""
        self._tap.retriever_error(error, run_id)

    # chain and tool events come for every run of a chain: their bookkeeping (a dict insert and a pop)
    # is inlined, and a failure goes through the guarded methods of _Tap, which count it
    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the chain's parent (for the trace id)."""
        try:
            tap = self._tap
            if self._recorder.enabled and len(tap._parents) < _MAX_OPEN:
                tap._parents[run_id] = parent_run_id
        except Exception:
            self._tap.guarded_run_start(run_id, parent_run_id)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the chain."""
        try:
            self._tap._parents.pop(run_id, None)
        except Exception:
            self._tap.guarded_run_end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the chain."""
        try:
            self._tap._parents.pop(run_id, None)
        except Exception:
            self._tap.guarded_run_end(run_id)

    @guarded
    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the tool's parent (an agent calling a retriever tool)."""
        self._tap.run_start(run_id, parent_run_id)

    @guarded
    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the tool."""
        self._tap.run_end(run_id)

    @guarded
    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Forget the tool."""
        self._tap.run_end(run_id)


class RankbridgeAsyncCallbackHandler(_HandlerSettings, AsyncCallbackHandler):
    """The async twin of :class:`RankbridgeCallbackHandler`, for ``config={"callbacks": [...]}`` in async code.

    Its coroutines do no I/O and never await, so they finish in one step of the event loop.
    (:func:`rankbridge.capture.capture` attaches the sync handler, which LangChain calls inline from
    both sync and async runs; use this one when you pass handlers yourself to async code only.)

    Parameters
    ----------
    recorder:
        Where records go; a new default :class:`~rankbridge.capture.Recorder` when omitted.
    trace, id_from, doc_map, keep_text:
        As for :class:`RankbridgeCallbackHandler`; it reads its records back with the same ``to_run``,
        ``summary``, ``as_capture`` and ``clear``.
    """

    raise_error = False
    # awaited in the run's own task, not in a task of an asyncio.gather (LangChain's way for other handlers):
    # they never await, and the task they see is the one whose cancellation ends the retrieval (_Tap._watch)
    run_inline = True

    async def on_retriever_start(  # type: ignore[override]
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open a record for this retrieval."""
        self._retriever_start(serialized, query, run_id, parent_run_id, tags, metadata, kwargs.get("name"))

    @guarded
    def _retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        run_id: UUID,
        parent_run_id: UUID | None,
        tags: list[str] | None,
        metadata: dict[str, Any] | None,
        name: Any,
    ) -> None:
        self._tap.retriever_start(query, run_id, parent_run_id, tags, metadata, name or (serialized or {}).get("name"))

    async def on_retriever_end(self, documents: Sequence[Any], *, run_id: UUID, **kwargs: Any) -> None:  # type: ignore[override]
        """Close the record with the documents, in rank order."""
        self._call(self._tap.retriever_end, documents, run_id)

    async def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:  # type: ignore[override]
        """Close the record with the error."""
        self._call(self._tap.retriever_error, error, run_id)

    async def on_chain_start(  # type: ignore[override]
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the chain's parent (for the trace id)."""
        self._call(self._tap.run_start, run_id, parent_run_id)

    async def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:  # type: ignore[override]
        """Forget the chain."""
        self._call(self._tap.run_end, run_id)

    async def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:  # type: ignore[override]
        """Forget the chain."""
        self._call(self._tap.run_end, run_id)

    async def on_tool_start(  # type: ignore[override]
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the tool's parent."""
        self._call(self._tap.run_start, run_id, parent_run_id)

    async def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:  # type: ignore[override]
        """Forget the tool."""
        self._call(self._tap.run_end, run_id)

    async def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:  # type: ignore[override]
        """Forget the tool."""
        self._call(self._tap.run_end, run_id)

    @guarded
    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        fn(*args)


# -- process-wide attachment ------------------------------------------------------------------------
# LangChain's public way to give a handler to every run of the process is ``register_configure_hook``: it
# calls the hook's ``get()`` (a ContextVar's, or our slot's) with no arguments at the start of every run.
# No public hook says which run is being configured (LangChain's callback API has none in langchain-core
# 1.x), and a handler on every run is what makes capture cost twice as much on a chain. So the slot looks
# at the code that starts the run, one frame up: once per code object it checks that the frames in between
# are langchain_core's own configure functions; on any other layout it gives the handler to every run
# (correct, only slower).
def _code(obj: Any) -> CodeType | None:
    func = getattr(obj, "__func__", obj)  # a classmethod's function
    code = getattr(func, "__code__", None)
    return code if isinstance(code, CodeType) else None


def _stack_layout() -> tuple[CodeType | None, frozenset[CodeType], frozenset[CodeType]]:
    """The code objects :func:`_configuring_retriever` looks for, read from the installed langchain_core."""
    configure = _code(getattr(manager, "_configure", None))
    methods = frozenset(
        c for c in (_code(manager.CallbackManager.configure), _code(manager.AsyncCallbackManager.configure)) if c
    )
    retriever = frozenset(c for c in (_code(BaseRetriever.invoke), _code(BaseRetriever.ainvoke)) if c)
    return configure, methods, retriever


_CONFIGURE, _CONFIGURE_METHODS, _RETRIEVER_INVOKE = _stack_layout()


_NOT_RETRIEVER, _RETRIEVER, _ASK_SELF = 0, 1, 2
#: code that starts a run -> what it tells (decided once per code object, from the stack layout)
_VERDICTS: dict[CodeType, int] = {}


def _verdict(caller: CodeType, depth: int) -> int:
    """Check the stack layout once for runs started by ``caller`` (``depth``: the frame of ``_configure``)."""
    if sys._getframe(depth).f_code is not _CONFIGURE or sys._getframe(depth + 1).f_code not in _CONFIGURE_METHODS:
        verdict = _RETRIEVER  # an unknown layout: give the handler to every run (correct, only slower)
    elif caller in _RETRIEVER_INVOKE:
        verdict = _RETRIEVER
    elif caller.co_name in ("invoke", "ainvoke"):
        verdict = _ASK_SELF  # a retriever overriding invoke? (EnsembleRetriever configures its own run)
    else:
        verdict = _NOT_RETRIEVER
    if len(_VERDICTS) < 10_000:
        _VERDICTS[caller] = verdict
    return verdict


def _configuring_retriever(depth: int) -> bool:
    """Is LangChain configuring the callbacks of a retriever's run? (``True`` when unsure.)

    Called from the configure hook's ``get()``, ``depth`` frames below langchain_core's ``_configure``,
    which ``CallbackManager.configure`` (or the async one) calls at the start of every run. The frame
    above that is the code starting the run: ``BaseRetriever.invoke`` / ``ainvoke``, or the
    ``invoke`` of a retriever that overrides it and configures its callbacks itself (as
    ``EnsembleRetriever`` does). Any other layout of the stack (another langchain_core release)
    answers ``True``: the handler then goes on every run, which is correct, only slower. The layout is
    checked once per calling code object; after that a call looks up one frame.
    """
    try:
        caller = sys._getframe(depth + 3)
        code = caller.f_code
        verdict = _VERDICTS.get(code)
        if verdict is None:
            verdict = _verdict(code, depth + 2)  # _configure, seen from one frame deeper
        if verdict == _ASK_SELF:
            return isinstance(caller.f_locals.get("self"), BaseRetriever)
        return verdict == _RETRIEVER
    except Exception:
        return True


class _HookSlot:
    """Stands in for the ContextVar of a langchain_core configure hook: ``get()`` returns our handler.

    A real ContextVar would not reach threads the application starts itself; a slot is process-wide.
    Hooks cannot be unregistered, so slots are registered once and reused; an empty slot (or one whose
    capture is paused) costs one method call per LangChain run.

    Without ``trace``, ``get()`` hands the handler only to retriever runs (see
    :func:`_configuring_retriever`); runs inside a retriever inherit it from there. LangChain charges
    every handler on every run of a chain, even one that ignores all their events, so keeping it off the
    other runs saves most of the capture's cost (``trace`` against the default on an LCEL chain:
    docs/benchmarks.md).
    """

    __slots__ = ("handler",)

    def __init__(self) -> None:
        self.handler: RankbridgeCallbackHandler | None = None

    def get(self, default: Any = None) -> RankbridgeCallbackHandler | None:
        # guarded like every handler method (LangChain calls it at the start of every run of the process):
        # a failure of ours is counted, and the run goes on without the handler
        handler = self.handler
        if handler is None:
            return None
        try:
            # a paused capture is not added to new runs at all (LangChain then has one handler less to
            # carry through every child run); runs configured while it was enabled keep it
            if not handler._recorder.enabled:
                return None
            if not handler._tap.trace and not _configuring_retriever(1):
                return None
        except Exception as exc:
            with contextlib.suppress(Exception):
                handler._recorder.internal_error("configure hook", exc)
            return None
        return handler


_slots: list[_HookSlot] = []
_slots_lock = threading.Lock()


def attach(recorder: Recorder, *, trace: bool = False) -> Callable[[], None]:
    """Record every LangChain retrieval of this process into ``recorder``; returns the detach function.

    ``trace=False`` (the default) puts the handler on retriever runs only (see :class:`_HookSlot`);
    ``trace=True`` on every run, to follow chains and tools up to each retrieval's outermost run.
    """
    handler = RankbridgeCallbackHandler(recorder, trace=trace)
    with _slots_lock:
        slot = next((s for s in _slots if s.handler is None), None)
        if slot is None:
            slot = _HookSlot()
            register_configure_hook(cast(Any, slot), True)
            _slots.append(slot)
        slot.handler = handler

    def detach() -> None:
        with _slots_lock:
            if slot.handler is handler:
                slot.handler = None

    return detach
