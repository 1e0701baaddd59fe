"""Run an application that *answers* -- a chat engine, a chain, an agent, ``f(question) -> answer`` -- and score
the retrievals it makes while answering.

:func:`run_app` asks the app every golden-set question inside one live capture
(:func:`rankbridge.capture.capture`), each call under ``query_id(qid)``, so every retrieval the app makes
while answering -- in a chain, a tool, a sub-agent, an asyncio task or a worker thread the framework starts --
is bound to the question. The :class:`~rankbridge.Run` it returns holds, per question:

* the list the app used (after node postprocessors and rerankers), which is scored;
* the retriever's own list in ``run.stages["retrieved"]`` (``run.to_stage("retrieved")``);
* the app's answer in ``run.answers[qid]``, which the RAGAS bridge
  (:func:`rankbridge.integrations.ragas.evaluate_ragas`) uses when no ``responses=`` are given.

What counts as an app (:func:`is_app`)
--------------------------------------
Frameworks are never imported to decide; the class's ancestry is read by module and class name.

=================================================  =========================================================
object                                             how each question is asked
=================================================  =========================================================
LlamaIndex chat engine (``BaseChatEngine``, also   ``chat(q, chat_history=[])`` / ``achat``: one question at a
the older ``BaseAgent``)                           time, each with an empty history (the engine has one
                                                   memory for all its calls)
LlamaIndex workflow agent, ``AgentWorkflow``, any  ``await app.run(user_msg=q)`` (``input_key`` renames the
``Workflow``                                       argument)
LangGraph graph (``create_agent``)                 ``invoke({"messages": [{"role": "user", "content": q}]})``;
                                                   the answer is the last message
LangChain ``Runnable`` (an LCEL chain), not a      ``invoke(q)`` / ``ainvoke`` (``input_key``:
``BaseRetriever`` or ``VectorStore``               ``invoke({input_key: q})``)
a callable with exactly one positional parameter   ``f(q)`` (awaited when it is a coroutine function); one
                                                   that returns a list of results rather than an answer is
                                                   scored on that list, as a retriever
=================================================  =========================================================

A callable ``f(query, k)`` (two positional parameters) is a retriever, as before; so are LlamaIndex and
LangChain retrievers, indexes and vector stores. **A LlamaIndex query engine is not an app by default**: the
retriever adapters score its ``retrieve`` path without calling the LLM. ``run_app(query_engine, ...)`` runs it
as an app instead (``query(q)`` / ``aquery``), which keeps its answers.

Several retrievals for one question
-----------------------------------
An agent may search twice, a chain may retrieve from two stores. ``retrieval=`` decides what is scored; the
retrievals of one question are taken in the order they started. Each retrieval contributes its final list
(``run``) and its retriever's list (``run.stages["retrieved"]``), combined the same way:

* ``"final"`` (default): the contexts the answer was built from -- every retrieval's list, concatenated in
  order, a repeated doc keeping its first place. This is what LlamaIndex puts in an agent response's
  ``source_nodes`` and what a RAGAS ``retrieved_contexts`` holds for that answer; with one retrieval (a
  chat engine, a chain) it is simply that retrieval's list.
* ``"first"``: the first retrieval only (the user's question as the app first searched it).
* ``"last"``: the last retrieval only (an agent's refined search).
* ``"merge"``: the lists interleaved rank by rank (the first of each retrieval, then the second of each...),
  a repeated doc keeping its first place: every search gets its top results near the top.
* ``"all"``: scored as ``"final"``, and each retrieval is also kept as a stage of its own: ``search:1``,
  ``search:2``, ... (``run.to_stage("search:2")``; a question that searched once is not in ``search:2``).

``run.config["retrieval"]`` records the choice and ``run.config["retrievals"]`` the number of retrievals of
every question.

Failures
--------
A question whose app call raised is an error of the run (``"error: ..."``), one that took longer than
``timeout`` too (``"timeout: ..."``; a sync call cannot be stopped and is abandoned, and once
``max(16, 2 * concurrency)`` abandoned calls still hang, the remaining questions fail as not run), and so is
one the app answered *without retrieving* (``"invalid result: the app answered without retrieving ..."``; its
answer is kept). A failed retrieval inside a call that still answered is an error too. Questions are asked
through :mod:`rankbridge.batch` and not retried (an answer costs the app's LLM calls);
``run.config["failures"]`` counts the failures by kind. Errors score 0 in :func:`~rankbridge.evaluate`.
When more than half the questions (and at least 5) failed with the same error -- an unreachable vector
store, an LLM quota -- the run is refused as :func:`rankbridge.run_retriever` refuses it: a
:class:`~rankbridge.RetrievalError` names the error and carries the run as ``.run``; ``keep_going=True``
returns such a run. The capture is detached when the function returns or raises.

Only retrievals made through LlamaIndex or LangChain are seen (their callback systems carry the question
id); an app that retrieves otherwise has nothing to capture.

Examples
--------
The framework-free part (frameworks in ``tests/test_apps.py``):

>>> is_app(lambda question: "an answer")
True
>>> is_app(lambda query, k: ["d1", "d2"][:k])
False
>>> run = run_app(lambda question: "no search needed", {"q1": "What causes scurvy?"}, frameworks=())
>>> run.errors["q1"]  # doctest: +ELLIPSIS
'invalid result: the app answered without retrieving ...'
>>> run.answers, run.config["retrievals"]
({'q1': 'no search needed'}, {'q1': 0})
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

# runner imports this module too (run_retriever hands an app to run_app): both import the other as a module,
# so either may be loaded first
from rankbridge import batch, frameworks, runner
from rankbridge.capture import capture, query_id
from rankbridge.errors import IdMismatchError, InputError, RankbridgeError
from rankbridge.retriever import normalize_hits
from rankbridge.types import GoldenSet, Hit, Query, Run

if TYPE_CHECKING:
    from rankbridge.capture import Capture, CaptureRecord
    from rankbridge.retriever import IdSpec

__all__ = ["RETRIEVAL_CHOICES", "arun_app", "is_app", "run_app"]

Retrieval = Literal["final", "first", "last", "merge", "all"]
#: The values of ``retrieval=`` (see the module docstring).
RETRIEVAL_CHOICES: tuple[str, ...] = ("final", "first", "last", "merge", "all")

QueriesLike = GoldenSet | Mapping[Any, str] | Iterable[Query | tuple[Any, str]]

_ANSWER_KEYS = ("answer", "result", "output", "response", "text")
_APP_KINDS = ("chat", "agent", "workflow", "graph", "runnable", "callable")


# -- what is an app ---------------------------------------------------------------------------------
def _kind(obj: Any) -> str | None:
    """``"chat"``, ``"agent"``, ``"workflow"``, ``"graph"``, ``"runnable"``, ``"callable"``, ``"query_engine"``,
    ``"retriever"`` (framework retrievers, indexes, vector stores) or ``None`` (nothing rankbridge can ask).

    The framework's classes are read by :func:`rankbridge.frameworks.app_kinds`; the most specific kind wins.
    """
    if obj is None or isinstance(obj, type):
        return None
    framework, kinds = frameworks.app_kinds(obj)
    # most specific first: a legacy LlamaIndex agent is a chat engine and a query engine; a retriever is a Runnable
    for kind in ("retriever", "chat", "agent", "workflow", "graph", "runnable", "query_engine"):
        if kind in kinds:
            return kind
    if framework:
        return None
    if callable(obj) and _one_positional(obj):
        return "callable"
    return None


def _one_positional(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = 0
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return False
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional == 1


def is_app(obj: Any) -> bool:
    """Is ``obj`` an application that answers questions (rather than a retriever that returns hits)?

    ``True`` for a LlamaIndex chat engine, workflow agent or workflow, a LangGraph graph (``create_agent``), a
    LangChain ``Runnable`` that is not a ``BaseRetriever`` or ``VectorStore`` (an LCEL chain), and a callable
    with exactly one positional parameter (``f(question) -> answer``). ``False`` for retrievers, indexes,
    vector stores, a callable ``f(query, k)``, and a LlamaIndex query engine, which the retriever adapters
    score without calling its LLM (pass it to :func:`run_app` to run it as an app). No framework is imported.

    Examples
    --------
    >>> is_app(lambda question: "yes"), is_app(lambda query, k: []), is_app("text")
    (True, False, False)
    >>> async def answer(question: str, *, temperature: float = 0.0) -> str:
    ...     return "yes"
    >>> is_app(answer)
    True
    """
    return _kind(obj) in _APP_KINDS


# -- how to ask it ------------------------------------------------------------------------------------
@dataclass
class _Call:
    method: str  # for run.config: "chat", "query", "run", "invoke", "call"
    sync: Callable[[str], Any] | None
    asynchronous: Callable[[str], Awaitable[Any]] | None
    sequential: str | None = None  # why the questions go one at a time


def _resolve(app: Any, kind: str, input_key: str | None) -> _Call:
    if kind == "chat":
        achat = getattr(app, "achat", None)

        async def ask_chat(q: str) -> Any:
            return await achat(q, chat_history=[])  # type: ignore[misc]

        return _Call(
            "chat",
            lambda q: app.chat(q, chat_history=[]),
            ask_chat if callable(achat) else None,
            "a chat engine keeps one memory for all its calls: questions are asked one at a time, each with an "
            "empty history",
        )
    if kind == "query_engine":
        aquery = getattr(app, "aquery", None)
        return _Call("query", app.query, aquery if callable(aquery) else None)
    if kind in ("agent", "workflow"):
        key = input_key or "user_msg"

        async def ask_workflow(q: str) -> Any:
            return await app.run(**{key: q})

        return _Call("run", None, ask_workflow)
    if kind in ("graph", "runnable"):

        def payload(q: str) -> Any:
            if input_key is not None:
                return {input_key: q}
            if kind == "graph":
                return {"messages": [{"role": "user", "content": q}]}
            return q

        async def ask_runnable(q: str) -> Any:
            return await app.ainvoke(payload(q))

        return _Call("invoke", lambda q: app.invoke(payload(q)), ask_runnable)
    if kind == "callable":
        if input_key is not None:
            raise InputError("input_key applies to chains, graphs and workflows, not to a callable f(question)")
        if inspect.iscoroutinefunction(app) or inspect.iscoroutinefunction(getattr(app, "__call__", None)):  # noqa: B004
            return _Call("call", None, app)
        return _Call("call", app, None)
    raise InputError(_refusal(app, kind))


def _refusal(app: Any, kind: str | None) -> str:
    if kind == "retriever":
        return (
            f"run_app: {type(app).__name__} is a retriever, not an app that answers; run it with "
            "rankbridge.run_retriever"
        )
    return (
        f"run_app: cannot ask a {type(app).__name__} questions. Expected a LlamaIndex chat engine, query engine, "
        "agent or workflow, a LangChain Runnable (an LCEL chain) or LangGraph graph (create_agent), or a callable "
        "f(question) -> answer"
    )


# -- reading the answer -------------------------------------------------------------------------------
def _answer_text(out: Any, answer_key: str | None = None, depth: int = 0) -> str | None:
    """The answer text of whatever the app returned, or ``None`` when there is none to read."""
    if depth > 4 or out is None:
        return None
    if isinstance(out, str):
        return out
    if isinstance(out, Mapping):
        if answer_key is not None:
            return _answer_text(out.get(answer_key), None, depth + 1)
        messages = out.get("messages")
        if isinstance(messages, Sequence) and not isinstance(messages, str) and messages:
            return _answer_text(messages[-1], None, depth + 1)  # a LangGraph state: the last message
        for key in _ANSWER_KEYS:
            if key in out:
                return _answer_text(out[key], None, depth + 1)
        return None
    if isinstance(out, tuple) and len(out) == 2:
        return _answer_text(out[0], answer_key, depth + 1)
    content = getattr(out, "content", None)  # a LangChain or LlamaIndex chat message
    if isinstance(content, str):
        return content
    if content is not None:
        text = getattr(out, "text", None)  # LangChain message with content blocks
        if isinstance(text, str):
            return text
    response = getattr(out, "response", None)  # LlamaIndex Response / AgentChatResponse / AgentOutput
    if response is not None and response is not out:
        return _answer_text(response, None, depth + 1)
    return None


# -- the engine: rankbridge.batch, one task per question ---------------------------------------------
@dataclass
class _State:
    """The batch's sink: each question's :class:`~rankbridge.batch.Outcome`, as the engine reports it.

    Called by :mod:`rankbridge.batch` with ``control.lock`` held.
    """

    timeout: float | None = None
    bar: Any = None
    outcomes: dict[str, batch.Outcome] = field(default_factory=dict)
    failed: int = 0
    control: batch.Control = field(default_factory=batch.Control)

    def __call__(self, outcome: batch.Outcome) -> None:
        failure = outcome.failure
        if failure is not None:
            # a call that ran past its timeout reads in the app's words; an item never started because every
            # worker is stuck in a hung call (latency 0) keeps the engine's "not run: ..." detail
            if failure.kind == batch.TIMEOUT and outcome.latency > 0:
                detail = f"the app did not answer within {self.timeout} s"
                outcome = replace(outcome, failure=replace(failure, detail=detail))
            self.failed += 1
        self.outcomes[outcome.key] = outcome
        if self.bar is not None:
            self.bar.advance(self.failed)


def _ask_sync(fn: Callable[[str], Any]) -> Callable[[tuple[str, str]], Any]:
    """``fn(text)`` under ``query_id(qid)``, for a worker thread of :func:`rankbridge.batch.run_sync`.

    The id is set inside the worker thread (a context variable does not follow a thread started by hand).
    """

    def ask(payload: tuple[str, str]) -> Any:
        qid, text = payload
        with query_id(qid):
            value = fn(text)
            if inspect.isawaitable(value):  # a sync-looking callable that returned a coroutine
                value = asyncio.run(_awaited(value))
        return value

    return ask


def _ask_async(fn: Callable[[str], Awaitable[Any]]) -> Callable[[tuple[str, str]], Awaitable[Any]]:
    """``await fn(text)`` under ``query_id(qid)``: the tasks the app starts copy the context, id included."""

    async def ask(payload: tuple[str, str]) -> Any:
        qid, text = payload
        with query_id(qid):
            return await fn(text)

    return ask


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _tasks(plan: _Plan) -> list[batch.Task]:
    return [batch.Task(qid, (qid, text)) for qid, text in plan.questions]


def _ask_all(plan: _Plan) -> bool:
    """Ask every question from sync code (the app's sync method where it has one); True when Ctrl-C stopped it."""
    call, state = plan.call, plan.state
    if call.sync is not None:
        try:
            batch.run_sync(
                _tasks(plan), _ask_sync(call.sync), state, plan.policy, control=state.control, callee="the app"
            )
        except KeyboardInterrupt:
            return True
        return False
    assert call.asynchronous is not None
    acall = _ask_async(call.asynchronous)
    return _run_coroutine(
        lambda: batch.run_async(_tasks(plan), acall, state, plan.policy, control=state.control, callee="the app")
    )


async def _aask_all(plan: _Plan) -> None:
    """Ask every question on the running loop (the app's async method where it has one, else worker threads)."""
    call, state = plan.call, plan.state
    if call.asynchronous is not None:
        acall = _ask_async(call.asynchronous)
        await batch.run_async(_tasks(plan), acall, state, plan.policy, control=state.control, callee="the app")
        return
    assert call.sync is not None
    work = functools.partial(
        batch.run_sync, _tasks(plan), _ask_sync(call.sync), state, plan.policy, control=state.control, callee="the app"
    )
    try:
        await asyncio.get_running_loop().run_in_executor(None, work)
    except asyncio.CancelledError:
        with state.control.lock:  # the engine's thread stops taking questions; calls in flight are ignored
            state.control.closed = True
        raise


def _run_coroutine(factory: Callable[[], Awaitable[None]]) -> bool:
    """Run the engine to the end from sync code; ``True`` when Ctrl-C stopped it.

    Inside a running event loop (Jupyter, an async app) the engine gets a loop of its own on a worker thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        try:
            asyncio.run(_awaited(factory()))
        except KeyboardInterrupt:
            return True
        return False
    box: dict[str, Any] = {}

    def main() -> None:
        loop = asyncio.new_event_loop()
        box["loop"] = loop
        try:
            task = box["task"] = loop.create_task(_awaited(factory()))
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass
        except BaseException as exc:
            box["error"] = exc
        finally:
            loop.close()

    worker = threading.Thread(target=main, name="rankbridge-app-loop", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
    except KeyboardInterrupt:
        loop, task = box.get("loop"), box.get("task")
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(task.cancel)
        worker.join()
        return True
    if "error" in box:
        raise box["error"]
    return False


# -- building the run ---------------------------------------------------------------------------------
def _combine(lists: Sequence[Sequence[Hit]], how: str) -> list[Hit]:
    if how == "first":
        lists = lists[:1]
    elif how == "last":
        lists = lists[-1:]
    if how == "merge":
        order: list[Hit] = []
        for rank in range(max((len(x) for x in lists), default=0)):
            order.extend(x[rank] for x in lists if rank < len(x))
    else:
        order = [h for x in lists for h in x]
    seen: set[str] = set()
    out: list[Hit] = []
    for hit in order:
        if hit.doc_id not in seen:
            seen.add(hit.doc_id)
            out.append(hit)
    return out


@dataclass
class _Plan:
    app: Any
    call: _Call
    questions: list[tuple[str, str]]
    retrieval: str
    concurrency: int
    timeout: float | None
    name: str
    answer_key: str | None
    cap: Capture
    policy: batch.Policy
    state: _State
    k: int | None = None
    attached: tuple[str, ...] = ()


def _prepare(
    app: Any,
    queries: QueriesLike,
    *,
    retrieval: str,
    concurrency: int,
    timeout: float | None,
    name: str | None,
    id_from: IdSpec | None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None,
    keep_text: bool,
    input_key: str | None,
    answer_key: str | None,
    frameworks: str | Sequence[str],
    k: int | None,
) -> _Plan:
    if retrieval not in RETRIEVAL_CHOICES:
        raise InputError(
            f"retrieval must be one of {', '.join(map(repr, RETRIEVAL_CHOICES))}. Got {retrieval!r} instead."
        )
    batch.check_number("concurrency", concurrency, integer=True, minimum=1, strict=False, none=False)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise InputError(f"timeout must be a number of seconds > 0, or None. Got {timeout!r} instead.")
    batch.check_number("k", k, integer=True, minimum=1, strict=False, none=True)
    call = _resolve(app, _kind(app) or "", input_key)
    questions = runner._as_queries(queries)
    if call.sequential is not None:
        concurrency = 1
    cap = capture(
        # a golden set with doc ids also lets the capture check (and resolve) the results' ids
        golden=queries if isinstance(queries, GoldenSet) else dict(questions),
        id_from=id_from,
        doc_map=doc_map,
        keep_text=keep_text,
        frameworks=frameworks,
        max_records=max(10_000, 100 * len(questions)),
        name=name or type(app).__name__,
    )
    # not retried: an answer costs the app's LLM calls, which may have side effects
    policy = batch.Policy(concurrency=concurrency, timeout=timeout, retries=0)
    return _Plan(
        app, call, questions, retrieval, concurrency, timeout, cap.name, answer_key, cap, policy, _State(timeout), k
    )


def _id_resolution(
    plan: _Plan, by_qid: Mapping[str, list[CaptureRecord]]
) -> tuple[Callable[[list[Any]], Any] | None, dict[str, Any]]:
    """The resolver to read the records with when their ids match nothing the golden set knows but another id
    source does (``id_from`` not given), as :meth:`rankbridge.capture.Capture.to_run` does; raise when none
    does. ``(None, {})`` when the ids are fine or there is nothing to check against."""
    cap = plan.cap
    every = {f"{qid}#{i}": r for qid, records in by_qid.items() for i, r in enumerate(records)}
    report = cap._id_report(every, "final", None)
    if report is None or report.status in ("ok", "unchecked"):
        return None, {}
    rec = cap.recorder
    if report.status == "resolved" and report.chosen is not None and rec.id_from is None and rec.doc_map is None:
        resolve = cap._switched_to(report.chosen)
        resolution = {"from": report.current, "to": report.chosen, "shares": dict(report.shares), "auto": True}
        return resolve, {"id_from": report.chosen, "id_resolution": {**resolution, "message": report.message()}}
    hint = f" Pass id_from={report.chosen!r}." if report.status == "resolved" else ""
    raise IdMismatchError(
        f"run_app: the doc ids the app retrieved do not match the golden set: {report.message()}{hint}",
        suggestion=report.chosen,
        report=report,
    )


def _build(plan: _Plan, interrupted: bool) -> Run:
    cap, state = plan.cap, plan.state
    wanted = {qid for qid, _ in plan.questions}
    by_qid: dict[str, list[CaptureRecord]] = {}
    unbound = by_text = 0
    for record in cap.records:
        qid = record.query_id
        if qid is None:
            # no id reached it (a thread the app started without copying the context): the question's own text
            # still names it, as capture() matches
            qid, how = cap.matcher.match(record.query, None)
            by_text += how == "text"
        if qid in wanted:
            by_qid.setdefault(qid, []).append(record)
        else:
            unbound += 1
    resolve, id_config = _id_resolution(plan, by_qid)

    def hits_of(record: CaptureRecord, stage: str) -> tuple[list[Hit], str | None]:
        if resolve is None:
            return (record.hits if stage == "final" else record.retrieved), record.resolve_error
        return record.hits_under(resolve, stage=stage)

    run = Run(name=plan.name)
    retrieved = Run(name=f"{plan.name}:retrieved")
    run.stages["retrieved"] = retrieved
    counts: dict[str, int] = {}
    problems: dict[str, list[str]] = {}
    kinds: Counter[str] = Counter()
    if not plan.attached:
        hint = " (no capture was attached: rankbridge sees retrievals made through LlamaIndex or LangChain only)"
    elif unbound:
        hint = (
            f" ({unbound} retrieval(s) during the run carried no question id and matched no question's text: one "
            "made on a thread the app started by hand does not see rankbridge.capture.query_id)"
        )
    else:
        hint = ""

    def fail(qid: str, failure: batch.Failure, latency: float | None) -> None:
        kinds[failure.kind] += 1
        run.add_error(qid, failure.message, latency=latency)
        retrieved.add_error(qid, failure.message, latency=latency)

    for qid, _ in plan.questions:
        outcome = state.outcomes.get(qid)
        if outcome is None:  # not asked (interrupted)
            continue
        records = sorted(by_qid.get(qid, ()), key=lambda r: r.started)
        counts[qid] = len(records)
        if outcome.failure is not None:
            fail(qid, outcome.failure, outcome.latency)
            continue
        output = outcome.value
        if not records and plan.call.method == "call" and isinstance(output, list):
            # f(query) that returns its results instead of an answer: a retriever, scored on what it returned
            try:
                hits, notes = normalize_hits(
                    output, k=plan.k or 1 << 62, id_from=cap.recorder.id_from,
                    doc_map=cap.recorder.doc_map, keep_text=cap.recorder.keep_text,
                )  # fmt: skip
            except RankbridgeError as exc:
                fail(qid, batch.Failure(batch.INVALID, str(exc)), outcome.latency)
                continue
            run.add(qid, hits, latency=outcome.latency)
            if notes:
                problems.setdefault(qid, []).extend(notes)
            continue
        answer = _answer_text(output, plan.answer_key)
        if answer is None:
            problems.setdefault(qid, []).append(
                f"no answer text could be read from the app's {type(output).__name__} output"
            )
        else:
            run.answers[qid] = answer
        if not records:
            detail = "the app answered without retrieving (no retrieval was captured while it answered)" + hint
            fail(qid, batch.Failure(batch.INVALID, detail), outcome.latency)
            continue
        chosen = records[:1] if plan.retrieval == "first" else records[-1:] if plan.retrieval == "last" else records
        broken = next((r for r in chosen if r.error is not None), None)
        if broken is not None:
            fail(qid, batch.Failure(batch.ERROR, f"retrieval failed: {broken.error}"), outcome.latency)
            continue
        finals = [hits_of(r, "final") for r in chosen]
        unusable = next((error for _, error in finals if error is not None), None)
        if unusable is not None:
            detail = f"captured results have no usable doc id: {unusable}"
            fail(qid, batch.Failure(batch.INVALID, detail), outcome.latency)
            continue
        run.add(qid, _combine([h for h, _ in finals], plan.retrieval)[: plan.k], latency=outcome.latency)
        retrieved.add(
            qid,
            _combine([hits_of(r, "retrieved")[0] for r in chosen], plan.retrieval)[: plan.k],
            latency=sum(r.latency or 0.0 for r in chosen),
        )
        if plan.retrieval == "all":
            for i, (hits, _) in enumerate(finals, 1):
                stage = run.stages.setdefault(f"search:{i}", Run(name=f"{plan.name}:search:{i}"))
                stage.add(qid, hits[: plan.k], latency=chosen[i - 1].latency)
    rec = cap.recorder
    run.config.update(
        {
            "source": "app",
            "app": type(plan.app).__name__,
            "call": plan.call.method,
            "retrieval": plan.retrieval,
            "retrievals": counts,
            "stage": "final",
            "frameworks": list(plan.attached),
            "id_from": rec.id_from if isinstance(rec.id_from, (str, type(None))) else repr(rec.id_from),
            "concurrency": plan.concurrency,
            "sequential": plan.call.sequential,
            "timeout": plan.timeout,
            "k": plan.k,
            "failures": dict(kinds),
            "problems": problems,
            "matched_by_text": by_text,
            "unbound_retrievals": unbound,
            "dropped": rec.dropped,
            "internal_errors": rec.internal_errors,
            **id_config,
        }
    )
    retrieved.config.update({**run.config, "stage": "retrieved"})
    if interrupted:
        done = set(state.outcomes)
        run.config["interrupted"] = True
        run.config["unfinished"] = [qid for qid, _ in plan.questions if qid not in done]
    return run


def _refuse_failed(run: Run, keep_going: bool, caller: str) -> Run:
    """The run, unless most questions failed alike: the runner's rule (and message), so that an app run and a
    retriever run stop on the same failures."""
    return runner._refuse_suspicious(run, None, check_ids=False, keep_going=keep_going, caller=caller)


@contextlib.contextmanager
def _asking(plan: _Plan, progress: bool) -> Iterator[None]:
    """The progress bar and the attached capture while the questions are asked (sync or async)."""
    bar = plan.state.bar = runner._Bar(progress and bool(plan.questions), len(plan.questions), 0, plan.name)
    try:
        with plan.cap:
            plan.attached = plan.cap.attached
            yield
    finally:
        bar.close()


# -- public entry points ------------------------------------------------------------------------------
def run_app(
    app: Any,
    queries: QueriesLike,
    *,
    retrieval: Retrieval = "final",
    concurrency: int = 4,
    timeout: float | None = 120.0,
    name: str | None = None,
    id_from: IdSpec | None = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    keep_text: bool = True,
    progress: bool = False,
    input_key: str | None = None,
    answer_key: str | None = None,
    frameworks: str | Sequence[str] = "auto",
    k: int | None = None,
    keep_going: bool = False,
) -> Run:
    """Ask an app every question and score the retrievals it made while answering, as a :class:`~rankbridge.Run`.

    Parameters
    ----------
    app:
        A LlamaIndex chat engine, query engine, agent or workflow, a LangChain ``Runnable`` (an LCEL chain), a
        LangGraph graph (``create_agent``), or a callable ``f(question) -> answer`` (see the module docstring
        for how each is called).
    queries:
        A :class:`~rankbridge.GoldenSet`, a list of :class:`~rankbridge.Query` (or ``(id, text)`` pairs), or
        ``{query_id: text}``.
    retrieval:
        Which retrieval(s) of a question are scored when it made several: ``"final"`` (default: all of them,
        concatenated in order, as the answer saw them), ``"first"``, ``"last"``, ``"merge"`` (interleaved rank
        by rank) or ``"all"`` (as ``"final"``, plus a stage ``search:i`` per retrieval). See the module
        docstring.
    concurrency:
        Questions asked at once (a chat engine is always asked one question at a time).
    timeout:
        Seconds one answer may take (``None``: no limit); a sync call that outlives it is abandoned.
    name:
        The run's name (default: the app's class name).
    id_from, doc_map, keep_text:
        How captured results become hits (see :func:`rankbridge.capture.capture`).
    progress:
        Show a progress bar (needs ``rich``; only in a terminal or Jupyter).
    input_key:
        Ask ``{input_key: question}`` instead of the bare question (chains and graphs; for workflows, the
        keyword of ``run``, default ``user_msg``).
    answer_key:
        Where the answer is in a dict output (default: the last of ``"messages"``, else ``"answer"``,
        ``"result"``, ``"output"``, ``"response"``, ``"text"``).
    frameworks:
        Which frameworks to capture (see :func:`rankbridge.capture.capture`; default every installed one).
    k:
        Keep the top ``k`` of each scored and retrieved list (default ``None``: the lists as the app had them,
        with its own top-k).
    keep_going:
        ``False`` (default): when more than half the questions (and at least 5) failed with the same error,
        raise :class:`~rankbridge.RetrievalError` with that error (the run is on the exception's ``.run``), as
        :func:`rankbridge.run_retriever` does. ``True``: return the run with its failures (they score 0).

    Returns
    -------
    Run
        Final lists (scored), ``stages["retrieved"]`` (the retrievers' own lists), ``answers`` (per question),
        errors, latency (seconds per answer) and ``config`` with ``retrieval``, ``retrievals`` (per-question
        counts), ``call``, ``failures``, ``problems``, ``matched_by_text`` (retrievals that carried no question
        id, bound to a question by their query text) and ``unbound_retrievals`` (retrievals captured during the
        run that belong to no question: other activity of the process).

    Raises
    ------
    InputError
        ``app`` is not something rankbridge can ask (a retriever goes to :func:`rankbridge.run_retriever`), or
        an option is invalid.
    RetrievalError
        Most questions failed alike (see ``keep_going``).

    Examples
    --------
    >>> def app(question):
    ...     raise RuntimeError("LLM quota exceeded")
    >>> run = run_app(app, {"q1": "Why?"}, frameworks=())
    >>> run.errors, run.config["failures"]
    ({'q1': 'error: RuntimeError: LLM quota exceeded'}, {'error': 1})
    """
    plan = _prepare(
        app, queries, retrieval=retrieval, concurrency=concurrency, timeout=timeout, name=name, id_from=id_from,
        doc_map=doc_map, keep_text=keep_text, input_key=input_key, answer_key=answer_key, frameworks=frameworks, k=k,
    )  # fmt: skip
    with _asking(plan, progress):
        interrupted = _ask_all(plan)
    return _refuse_failed(_build(plan, interrupted), keep_going, "run_app")


async def arun_app(
    app: Any,
    queries: QueriesLike,
    *,
    retrieval: Retrieval = "final",
    concurrency: int = 4,
    timeout: float | None = 120.0,
    name: str | None = None,
    id_from: IdSpec | None = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    keep_text: bool = True,
    progress: bool = False,
    input_key: str | None = None,
    answer_key: str | None = None,
    frameworks: str | Sequence[str] = "auto",
    k: int | None = None,
    keep_going: bool = False,
) -> Run:
    """Async :func:`run_app`, on the caller's event loop (same parameters and result).

    The app's async method is used where it has one (``achat``, ``aquery``, ``ainvoke``, a coroutine function,
    a workflow's ``run``); a sync-only app runs on worker threads. Cancelling the awaiting task detaches the
    capture and re-raises ``CancelledError``.

    Examples
    --------
    >>> import asyncio
    >>> async def app(question):
    ...     return "42"
    >>> run = asyncio.run(arun_app(app, {"q1": "The answer?"}, frameworks=()))
    >>> run.answers, run.config["call"]
    ({'q1': '42'}, 'call')
    """
    plan = _prepare(
        app, queries, retrieval=retrieval, concurrency=concurrency, timeout=timeout, name=name, id_from=id_from,
        doc_map=doc_map, keep_text=keep_text, input_key=input_key, answer_key=answer_key, frameworks=frameworks, k=k,
    )  # fmt: skip
    with _asking(plan, progress):
        await _aask_all(plan)
    return _refuse_failed(_build(plan, False), keep_going, "arun_app")
