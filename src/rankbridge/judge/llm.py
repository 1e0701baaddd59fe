"""The user's LLM behind one small interface, and the call policy shared by the judge and the generator.

:func:`as_llm` wraps

* a LangChain chat model or LLM (``langchain_core.language_models.BaseChatModel`` / ``BaseLLM``), called
  through ``invoke`` / ``ainvoke`` with the prompt as one human message;
* a LlamaIndex LLM (``llama_index.core.llms.LLM``), called through ``chat`` / ``achat`` when
  ``metadata.is_chat_model`` is true, otherwise ``complete`` / ``acomplete``;
* any callable ``f(prompt: str) -> str``, sync or ``async``.

Frameworks are recognised by the classes in the object's MRO, so nothing is imported to find out; the one
framework import (LlamaIndex's ``ChatMessage``) happens in the call. The token usage a framework reports
is read (LangChain ``usage_metadata``, OpenAI-style ``usage`` in LlamaIndex ``raw``); otherwise tokens are
estimated as characters / 4 and the estimate is flagged.

:class:`CallPolicy` and :class:`Session` hold what every batch of calls obeys: bounded concurrency, a rate
limit, per-call timeout, retries with exponential backoff, a budget of calls or tokens with a clear stop,
and the parse-then-repair loop.

Examples
--------
>>> from rankbridge.judge.llm import as_llm
>>> def shout(prompt):
...     return prompt.upper()
>>> llm = as_llm(shout, model_id="shout-1")
>>> llm.framework, llm.model_id
('callable', 'shout-1')
>>> llm.complete("hi").text
'HI'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rankbridge.errors import InputError, MissingExtraError, RankbridgeError

__all__ = [
    "BudgetExhausted",
    "CallPolicy",
    "LLMClient",
    "LLMError",
    "LLMReply",
    "ReplyParseError",
    "Session",
    "Usage",
    "as_llm",
    "run_sync",
]

T = TypeVar("T")


class LLMError(RankbridgeError):
    """The user's LLM raised, timed out, or kept returning replies that could not be read."""


class ReplyParseError(InputError):
    """A reply that does not have the expected shape (triggers the repair step)."""


class BudgetExhausted(RankbridgeError):
    """Raised inside a batch when the call or token budget (or the error limit) stops new calls."""


class _CallTimeout(RankbridgeError):
    """One call outlived ``CallPolicy.timeout``."""


@dataclass(frozen=True, slots=True)
class LLMReply:
    """What one LLM call returned.

    ``input_tokens`` / ``output_tokens`` are the framework's usage when it reports one, else None.
    """

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


def _mro_has(obj: object, module_prefix: str, names: set[str]) -> bool:
    return any(c.__module__.startswith(module_prefix) and c.__name__ in names for c in type(obj).__mro__)


def _is_langchain(obj: object) -> bool:
    return _mro_has(obj, "langchain_core.language_models", {"BaseLanguageModel", "BaseChatModel", "BaseLLM"})


def _is_llamaindex(obj: object) -> bool:
    return _mro_has(obj, "llama_index.core", {"LLM", "BaseLLM"})


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return None


def _langchain_reply(msg: Any) -> LLMReply:
    if isinstance(msg, str):  # a BaseLLM returns text
        return LLMReply(msg)
    content = getattr(msg, "content", None)
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):  # content blocks
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        text = "".join(parts)
    else:
        raise LLMError(f"the LangChain model returned {type(msg).__name__}; expected a message with text content")
    usage = getattr(msg, "usage_metadata", None) or {}
    return LLMReply(text, _as_int(usage.get("input_tokens")), _as_int(usage.get("output_tokens")))


def _llamaindex_usage(resp: Any) -> tuple[int | None, int | None]:
    for source in (getattr(resp, "raw", None), getattr(resp, "additional_kwargs", None)):
        if source is None:
            continue
        usage = source.get("usage", source) if isinstance(source, dict) else getattr(source, "usage", None)
        if usage is None:
            continue
        get = usage.get if isinstance(usage, dict) else (lambda key, u=usage: getattr(u, key, None))
        inp = _as_int(get("prompt_tokens")) or _as_int(get("input_tokens"))
        out = _as_int(get("completion_tokens")) or _as_int(get("output_tokens"))
        if inp is not None or out is not None:
            return inp, out
    return None, None


def _llamaindex_reply(resp: Any) -> LLMReply:
    message = getattr(resp, "message", None)
    text = getattr(message, "content", None) if message is not None else getattr(resp, "text", None)
    if not isinstance(text, str):
        text = "" if text is None and message is not None else text
    if not isinstance(text, str):
        raise LLMError(f"the LlamaIndex LLM returned {type(resp).__name__} without text")
    return LLMReply(text, *_llamaindex_usage(resp))


def _plain_reply(value: Any) -> LLMReply:
    if isinstance(value, str):
        return LLMReply(value)
    if isinstance(value, LLMReply):
        return value
    for attr in ("content", "text"):
        inner = getattr(value, attr, None)
        if isinstance(inner, str):
            return LLMReply(inner)
    raise LLMError(f"the LLM callable returned {type(value).__name__}; expected str")


class LLMClient:
    """One LLM behind ``complete`` / ``acomplete`` (prompt in, :class:`LLMReply` out).

    Build it with :func:`as_llm`. ``model_id`` names the model in the cache key and in the provenance
    of every judged label, so give each distinct model (and temperature, if it matters) its own id.
    """

    def __init__(self, obj: Any, *, framework: str, model_id: str) -> None:
        self.obj = obj
        self.framework = framework
        self.model_id = model_id

    def __repr__(self) -> str:
        return f"LLMClient(framework={self.framework!r}, model_id={self.model_id!r})"

    async def acomplete(self, prompt: str, *, executor: concurrent.futures.Executor | None = None) -> LLMReply:
        """Send ``prompt`` and return the reply (framework errors propagate unchanged).

        A sync callable runs on ``executor`` (default: the loop's default executor).
        """
        obj = self.obj
        if self.framework == "langchain":
            return _langchain_reply(await obj.ainvoke(prompt))
        if self.framework == "llamaindex":
            if getattr(getattr(obj, "metadata", None), "is_chat_model", False):
                return _llamaindex_reply(await obj.achat([_llama_message(prompt)]))
            return _llamaindex_reply(await obj.acomplete(prompt))
        if _is_async_callable(obj):
            return _plain_reply(await obj(prompt))
        value = await asyncio.get_running_loop().run_in_executor(executor, obj, prompt)
        if inspect.isawaitable(value):
            value = await value
        return _plain_reply(value)

    def complete(self, prompt: str) -> LLMReply:
        """Sync :meth:`acomplete` (works inside a running event loop too)."""
        obj = self.obj
        if self.framework == "langchain":
            return _langchain_reply(obj.invoke(prompt))
        if self.framework == "llamaindex":
            if getattr(getattr(obj, "metadata", None), "is_chat_model", False):
                return _llamaindex_reply(obj.chat([_llama_message(prompt)]))
            return _llamaindex_reply(obj.complete(prompt))
        if _is_async_callable(obj):
            return run_sync(lambda: self.acomplete(prompt))
        value = obj(prompt)
        if inspect.isawaitable(value):
            return run_sync(lambda: _await_reply(value))
        return _plain_reply(value)


async def _await_reply(value: Awaitable[Any]) -> LLMReply:
    return _plain_reply(await value)


def _llama_message(prompt: str) -> Any:
    try:
        from llama_index.core.llms import ChatMessage
    except ImportError as exc:  # pragma: no cover - the object came from llama_index
        raise MissingExtraError("llama-index-core", "llamaindex", "Judging with a LlamaIndex LLM") from exc
    return ChatMessage(role="user", content=prompt)


def _is_async_callable(obj: Any) -> bool:
    return inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(getattr(obj, "__call__", None))  # noqa: B004


def _default_model_id(obj: Any, framework: str) -> str:
    if framework == "langchain":
        for attr in ("model_name", "model", "model_id"):
            value = getattr(obj, attr, None)
            if isinstance(value, str) and value:
                return f"langchain:{value}"
        llm_type = getattr(obj, "_llm_type", None)
        return f"langchain:{llm_type if isinstance(llm_type, str) else type(obj).__name__}"
    if framework == "llamaindex":
        name = getattr(getattr(obj, "metadata", None), "model_name", None)
        return f"llamaindex:{name if isinstance(name, str) and name else type(obj).__name__}"
    value = getattr(obj, "model_id", None)
    if isinstance(value, str) and value:
        return value
    target = obj if inspect.isfunction(obj) or inspect.ismethod(obj) else type(obj)
    return f"callable:{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"


def as_llm(obj: Any, *, model_id: str | None = None) -> LLMClient:
    """Wrap a LangChain chat model, a LlamaIndex LLM or a callable ``f(prompt) -> str`` (sync or async).

    Parameters
    ----------
    obj:
        The LLM. An :class:`LLMClient` is returned as is (with ``model_id`` replaced when given).
    model_id:
        The name recorded with every judged label and used in the cache key. Defaults to the framework's
        model name (``langchain:gpt-4o-mini``, ``llamaindex:...``), a callable's ``model_id`` attribute,
        or its qualified name.

    Examples
    --------
    >>> async def my_llm(prompt):
    ...     return '{"grade": 2, "reason": "close"}'
    >>> as_llm(my_llm, model_id="scripted").complete("grade this").text
    '{"grade": 2, "reason": "close"}'
    >>> as_llm(42)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: llm: expected a LangChain chat model, ... found int
    """
    if isinstance(obj, LLMClient):
        return obj if model_id is None else LLMClient(obj.obj, framework=obj.framework, model_id=model_id)
    if _is_langchain(obj):
        framework = "langchain"
    elif _is_llamaindex(obj):
        framework = "llamaindex"
    elif callable(obj):
        framework = "callable"
    else:
        raise InputError(
            "llm: expected a LangChain chat model, a LlamaIndex LLM or a callable f(prompt) -> str, "
            f"found {type(obj).__name__}"
        )
    return LLMClient(obj, framework=framework, model_id=model_id or _default_model_id(obj, framework))


def run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``factory()`` to completion, also when an event loop is already running.

    Inside a running loop (Jupyter, an async app) the coroutine runs on a fresh loop in a worker thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="rankbridge-judge") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _check_positive(name: str, value: float | None, *, integer: bool, allow_none: bool, minimum: float) -> None:
    if value is None and allow_none:
        return
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if not ok or isinstance(value, bool) or value < minimum or (isinstance(value, float) and math.isnan(value)):  # type: ignore[operator]
        kind = "an int" if integer else "a number"
        extra = " or None" if allow_none else ""
        raise InputError(f"{name} must be {kind} >= {minimum:g}{extra}. Got {value!r} instead.")


@dataclass(frozen=True)
class CallPolicy:
    """How a batch of LLM calls is made.

    Parameters
    ----------
    concurrency:
        Items (pairs, documents) in flight at once.
    rate_limit:
        At most this many calls started per second (None: no limit).
    retries:
        Extra attempts after a call raises or times out, waiting ``backoff * 2**(attempt-1)`` seconds.
    backoff:
        Base wait between attempts, in seconds.
    timeout:
        Seconds one call may take (None: no limit). A sync LLM that overruns is abandoned, not stopped.
    max_calls:
        Budget: no call is started once this many have been made (retries and repairs count).
        Exact, also with concurrency.
    max_tokens:
        Budget: no call is started once this many tokens (input + output) were used. Calls in flight
        finish, so the total may pass it by at most ``concurrency`` calls.
    max_errors:
        Stop after this many items failed for good (a wrong key or model name fails every call).
    repairs:
        Repair calls allowed per item when a reply cannot be parsed.
    """

    concurrency: int = 4
    rate_limit: float | None = None
    retries: int = 2
    backoff: float = 1.0
    timeout: float | None = None
    max_calls: int | None = None
    max_tokens: int | None = None
    max_errors: int | None = 10
    repairs: int = 1

    def __post_init__(self) -> None:
        _check_positive("concurrency", self.concurrency, integer=True, allow_none=False, minimum=1)
        _check_positive("rate_limit", self.rate_limit, integer=False, allow_none=True, minimum=1e-9)
        _check_positive("retries", self.retries, integer=True, allow_none=False, minimum=0)
        _check_positive("backoff", self.backoff, integer=False, allow_none=False, minimum=0)
        _check_positive("timeout", self.timeout, integer=False, allow_none=True, minimum=1e-9)
        _check_positive("max_calls", self.max_calls, integer=True, allow_none=True, minimum=0)
        _check_positive("max_tokens", self.max_tokens, integer=True, allow_none=True, minimum=0)
        _check_positive("max_errors", self.max_errors, integer=True, allow_none=True, minimum=1)
        _check_positive("repairs", self.repairs, integer=True, allow_none=False, minimum=0)


@dataclass
class Usage:
    """What a batch spent.

    Attributes
    ----------
    calls:
        LLM calls started (including retries and repairs).
    retries, repairs:
        How many of those were retries after an error, and repair requests after an unreadable reply.
    input_tokens, output_tokens:
        Tokens, as reported by the framework or estimated (characters / 4).
    estimated_calls:
        Calls whose tokens were estimated because the framework reported no usage.
    """

    calls: int = 0
    retries: int = 0
    repairs: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_calls: int = 0

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __str__(self) -> str:
        est = f" ({self.estimated_calls} calls estimated at 4 characters per token)" if self.estimated_calls else ""
        return f"{self.calls} LLM calls ({self.retries} retries, {self.repairs} repairs), {self.tokens} tokens{est}"


def _estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


@dataclass
class Session:
    """One batch of calls under a :class:`CallPolicy`: budget accounting, pacing, retries, repair.

    Items run inside :meth:`slot` (bounded by ``concurrency``); :meth:`ask` makes the call(s) of one
    item and raises :class:`BudgetExhausted` once the budget (or the error limit) stopped the batch;
    :attr:`stopped` then says why.
    """

    llm: LLMClient
    policy: CallPolicy
    usage: Usage = field(default_factory=Usage)
    stopped: str | None = None
    failures: int = 0
    _next_start: float = 0.0
    _sem: asyncio.Semaphore | None = None
    _pace_lock: asyncio.Lock | None = None
    _executor: concurrent.futures.ThreadPoolExecutor | None = None

    def close(self) -> None:
        """Release the worker threads; a sync call abandoned after a timeout is not waited for."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def _threads(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            # room for abandoned (timed-out) calls besides the `concurrency` live ones
            self._executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=2 * self.policy.concurrency + 2, thread_name_prefix="rankbridge-llm"
            )
        return self._executor

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the ``concurrency`` slots."""
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.policy.concurrency)
        async with self._sem:
            yield

    def stop(self, reason: str) -> None:
        """Stop the batch: no new call starts; the first reason given is kept."""
        if self.stopped is None:
            self.stopped = reason

    def note_failure(self) -> None:
        """Count an item that failed for good; stops the batch at ``max_errors``."""
        self.failures += 1
        limit = self.policy.max_errors
        if limit is not None and self.failures >= limit:
            self.stop(f"{self.failures} items failed (max_errors={limit}); check the LLM's configuration")

    def _admit(self) -> None:
        p = self.policy
        if self.stopped is None and p.max_calls is not None and self.usage.calls >= p.max_calls:
            self.stop(f"budget reached: max_calls={p.max_calls}")
        if self.stopped is None and p.max_tokens is not None and self.usage.tokens >= p.max_tokens:
            self.stop(f"budget reached: max_tokens={p.max_tokens} ({self.usage.tokens} used)")
        if self.stopped is not None:
            raise BudgetExhausted(self.stopped)

    async def _pace(self) -> None:
        rate = self.policy.rate_limit
        if rate is None:
            return
        if self._pace_lock is None:
            self._pace_lock = asyncio.Lock()
        async with self._pace_lock:
            now = time.monotonic()
            wait = self._next_start - now
            if wait > 0:
                await asyncio.sleep(wait)
            self._next_start = max(now, self._next_start) + 1.0 / rate

    async def call(self, prompt: str, *, repair: bool = False) -> LLMReply:
        """One call with retries; raises :class:`LLMError` after the last attempt fails."""
        p = self.policy
        last: BaseException | None = None
        for attempt in range(p.retries + 1):
            self._admit()
            self.usage.calls += 1  # counted when started, so max_calls holds with calls in flight
            if attempt:
                self.usage.retries += 1
            elif repair:
                self.usage.repairs += 1
            try:
                await self._pace()
                reply = await self._complete(prompt)
            except Exception as exc:
                if isinstance(exc, RankbridgeError) and not isinstance(exc, (LLMError, _CallTimeout)):
                    raise
                last = exc
                self.usage.input_tokens += _estimate_tokens(prompt)
                self.usage.estimated_calls += 1
            else:
                self._account(prompt, reply)
                return reply
            if attempt < p.retries and p.backoff > 0:
                await asyncio.sleep(p.backoff * 2**attempt)
        assert last is not None
        what = str(last) if isinstance(last, _CallTimeout) else f"raised {type(last).__name__}: {last}"
        raise LLMError(f"{self.llm.model_id} {what} (after {p.retries + 1} attempts)") from last

    async def _complete(self, prompt: str) -> LLMReply:
        timeout = self.policy.timeout
        if timeout is None:
            return await self.llm.acomplete(prompt, executor=self._threads())
        # not asyncio.wait_for: a TimeoutError raised by the LLM itself must not read as our timeout
        task = asyncio.ensure_future(self.llm.acomplete(prompt, executor=self._threads()))
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise _CallTimeout(f"timed out after {timeout:g} s")
        return task.result()

    def _account(self, prompt: str, reply: LLMReply) -> None:
        if reply.input_tokens is None and reply.output_tokens is None:
            self.usage.estimated_calls += 1
            self.usage.input_tokens += _estimate_tokens(prompt)
            self.usage.output_tokens += _estimate_tokens(reply.text)
        else:
            self.usage.input_tokens += reply.input_tokens or 0
            self.usage.output_tokens += reply.output_tokens or 0

    async def ask(
        self,
        build: Callable[[], str],
        parse: Callable[[str], T],
        repair: Callable[[str, str], str] | None,
    ) -> tuple[T, str]:
        """Call with ``build()``, parse the reply, and on :class:`ReplyParseError` ask for a repair.

        Returns the parsed value and the raw reply text it came from.
        """
        reply = await self.call(build())
        try:
            return parse(reply.text), reply.text
        except ReplyParseError as exc:
            error = exc
        text = reply.text
        for _ in range(self.policy.repairs if repair is not None else 0):
            assert repair is not None
            text = (await self.call(repair(text, str(error)), repair=True)).text
            try:
                return parse(text), text
            except ReplyParseError as exc:
                error = exc
        shown = text if len(text) <= 200 else text[:200] + "..."
        raise LLMError(f"unreadable reply ({error}); last reply: {shown!r}")
