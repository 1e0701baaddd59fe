"""The user's LLM behind one small interface, and the call policy shared by the judge and the generator.

:func:`as_llm` wraps

* a LangChain chat model or LLM (``langchain_core.language_models.BaseChatModel`` / ``BaseLLM``), called
  through ``invoke`` / ``ainvoke`` with the prompt as one human message;
* a LlamaIndex LLM (``llama_index.core.llms.LLM``), called through ``chat`` / ``achat`` when
  ``metadata.is_chat_model`` is true, otherwise ``complete`` / ``acomplete``;
* any callable ``f(prompt: str) -> str``, sync or ``async``.

Frameworks are recognised by the classes in the object's MRO (:func:`rankbridge.frameworks.detect_llm`), so
nothing is imported to find out; the framework wrappers live in ``frameworks/<name>/llm.py``. The token usage
a framework reports is read (LangChain ``usage_metadata``, OpenAI-style ``usage`` in LlamaIndex ``raw``);
otherwise tokens are estimated as characters / 4 and the estimate is flagged.

:class:`CallPolicy` and :class:`Session` hold what every batch of LLM calls obeys, on the batch engine
(:mod:`rankbridge.batch`): bounded concurrency, a rate limit, per-call timeout, retries with jittered
exponential backoff that waits at least a rate-limit error's ``Retry-After``, a budget of calls or tokens
with a clear stop, and the parse-then-repair loop.

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
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from rankbridge import batch, frameworks
from rankbridge.errors import (
    BudgetExceededError,
    CallTimeout,
    InputError,
    LLMError,
    ModelIdRequired,
    RankbridgeError,
    ReplyParseError,
)
from rankbridge.frameworks.base import OUTPUT_PARAMS, LLMReply, safe_attr

__all__ = [
    "OUTPUT_PARAMS",
    "BudgetExhausted",
    "CallPolicy",
    "LLMClient",
    "LLMError",
    "LLMReply",
    "ModelIdRequired",
    "ReplyParseError",
    "Session",
    "Usage",
    "as_llm",
    "derived_model_id",
    "describe_llm",
    "run_sync",
]

T = TypeVar("T")


#: The former name of :class:`~rankbridge.errors.BudgetExceededError` (one budget error for every batch).
BudgetExhausted = BudgetExceededError


class LLMClient:
    """One LLM behind ``complete`` / ``acomplete`` (prompt in, :class:`LLMReply` out).

    Build it with :func:`as_llm`. ``model_id`` names the model in the cache key and in the provenance
    of every judged label, so give each distinct model (and temperature, if it matters) its own id.
    A framework's model is called through its wrapper (:func:`rankbridge.frameworks.llm_wrapper`); a
    callable directly.
    """

    def __init__(self, obj: Any, *, framework: str, model_id: str) -> None:
        self.obj = obj
        self.framework = framework
        self.model_id = model_id
        self._wrapper = None if framework == "callable" else frameworks.llm_wrapper(framework)

    def __repr__(self) -> str:
        return f"LLMClient(framework={self.framework!r}, model_id={self.model_id!r})"

    async def acomplete(self, prompt: str, *, executor: concurrent.futures.Executor | None = None) -> LLMReply:
        """Send ``prompt`` and return the reply (framework errors propagate unchanged).

        A sync callable runs on ``executor`` (default: the loop's default executor).
        """
        obj = self.obj
        if self._wrapper is not None:
            return await self._wrapper.acomplete(obj, prompt)  # type: ignore[no-any-return]
        if _is_async_callable(obj):
            return _plain_reply(await obj(prompt))
        value = await asyncio.get_running_loop().run_in_executor(executor, obj, prompt)
        if inspect.isawaitable(value):
            value = await value
        return _plain_reply(value)

    def complete(self, prompt: str) -> LLMReply:
        """Sync :meth:`acomplete` (works inside a running event loop too)."""
        obj = self.obj
        if self._wrapper is not None:
            return self._wrapper.complete(obj, prompt)  # type: ignore[no-any-return]
        if _is_async_callable(obj):
            return run_sync(lambda: self.acomplete(prompt))
        value = obj(prompt)
        if inspect.isawaitable(value):
            return run_sync(lambda: _await_reply(value))
        return _plain_reply(value)


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


async def _await_reply(value: Awaitable[Any]) -> LLMReply:
    return _plain_reply(await value)


def _is_async_callable(obj: Any) -> bool:
    return inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(getattr(obj, "__call__", None))  # noqa: B004


def derived_model_id(obj: Any) -> str | None:
    """The model id :func:`as_llm` derives for ``obj``, or None when it cannot derive a real one.

    * LangChain chat model / LLM: ``langchain:<model name>`` (``_get_ls_params()["ls_model_name"]``, else a
      ``model_name`` / ``model`` / ``model_id`` / ``deployment_name`` field), then ``?`` and the
      parameters that change replies (:data:`OUTPUT_PARAMS`, from the fields, ``_identifying_params`` and
      ``_get_ls_params()``), and the provider when the integration names it;
    * LlamaIndex LLM: ``llamaindex:<metadata.model_name>`` plus the same parameters;
    * a callable: its ``model_id`` attribute (a string), if it has one.

    None for a plain callable, and for a framework model with no model name (e.g. a fake or custom model
    class): then ``model_id=`` must be given. Long parameter lists are replaced by a hash.

    Examples
    --------
    >>> derived_model_id(lambda prompt: "3") is None
    True
    >>> class Named:
    ...     model_id = "house-model-v2"
    ...     def __call__(self, prompt):
    ...         return "3"
    >>> derived_model_id(Named())
    'house-model-v2'
    """
    framework = frameworks.detect_llm(obj)
    if framework is not None:
        return frameworks.llm_wrapper(framework).model_id(obj)  # type: ignore[no-any-return]
    value = safe_attr(obj, "model_id")
    return value if isinstance(value, str) and value else None


def describe_llm(obj: Any) -> str:
    """A name for ``obj`` in provenance (never None): its derived id, else a framework type or a qualified name.

    Not a cache key: two lambdas of one module get the same name. The query generator records it; the
    judge refuses it (see :func:`as_llm`).

    Examples
    --------
    >>> def my_llm(prompt):
    ...     return "x"
    >>> describe_llm(my_llm).split(".")[-1]
    'my_llm'
    """
    derived = derived_model_id(obj)
    if derived is not None:
        return derived
    framework = frameworks.detect_llm(obj)
    if framework is not None:
        return frameworks.llm_wrapper(framework).describe(obj)  # type: ignore[no-any-return]
    target = obj if inspect.isfunction(obj) or inspect.ismethod(obj) else type(obj)
    return f"callable:{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"


def as_llm(obj: Any, *, model_id: str | None = None, anonymous: bool = False) -> LLMClient:
    """Wrap a LangChain chat model, a LlamaIndex LLM or a callable ``f(prompt) -> str`` (sync or async).

    Parameters
    ----------
    obj:
        The LLM. An :class:`LLMClient` is returned as is (with ``model_id`` replaced when given).
    model_id:
        The name recorded with every judged label and used in the judge's cache key: grades are only
        reused for the same model id. Give the model and every setting that changes its replies
        (``"gpt-4o-mini@temperature=0"``). Defaults to :func:`derived_model_id` -- the framework's model
        name and output parameters (``langchain:gpt-4o-mini?temperature=0.0``), or a callable's
        ``model_id`` attribute. A plain callable has none: its name says where it was defined, not which
        model it calls (two lambdas of one module, two instances of a class, two ``functools.partial``
        objects would share grades), so ``model_id`` is then required.
    anonymous:
        Accept an LLM without a model id: it gets a one-off id (``anonymous:<name>#<random>``), so its
        grades are never reused by another judge or run.

    Raises
    ------
    ModelIdRequired
        No ``model_id``, none derivable, and ``anonymous`` is false.

    Examples
    --------
    >>> async def my_llm(prompt):
    ...     return '{"grade": 2, "reason": "close"}'
    >>> as_llm(my_llm, model_id="scripted").complete("grade this").text
    '{"grade": 2, "reason": "close"}'
    >>> as_llm(my_llm)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.ModelIdRequired: model_id: a plain callable (...my_llm) does not say which model it is, ...
    >>> as_llm(my_llm, anonymous=True).model_id.startswith("anonymous:")
    True
    >>> as_llm(42)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: llm: expected a LangChain chat model, ... found int
    """
    if model_id is not None and (not isinstance(model_id, str) or not model_id.strip()):
        raise InputError(f"model_id must be a non-empty string. Got {model_id!r} instead.")
    if isinstance(obj, LLMClient):
        return obj if model_id is None else LLMClient(obj.obj, framework=obj.framework, model_id=model_id)
    framework = frameworks.detect_llm(obj) or ("callable" if callable(obj) else None)
    if framework is None:
        raise InputError(
            "llm: expected a LangChain chat model, a LlamaIndex LLM or a callable f(prompt) -> str, "
            f"found {type(obj).__name__}"
        )
    if model_id is None:
        model_id = derived_model_id(obj)
    if model_id is None:
        name = describe_llm(obj)
        if not anonymous:
            what = (
                f"a plain callable ({name.removeprefix('callable:')})"
                if framework == "callable"
                else f"a {type(obj).__name__} with no model name ({name})"
            )
            raise ModelIdRequired(
                f"model_id: {what} does not say which model it is, and grades are cached by model: two "
                "lambdas, two instances of a class or two functools.partial objects would share them. Pass "
                "model_id='<the model and its settings, e.g. gpt-4o-mini@temperature=0>', or anonymous=True "
                "to judge without reusing grades across judges and runs"
            )
        model_id = f"anonymous:{name}#{secrets.token_hex(6)}"
    return LLMClient(obj, framework=framework, model_id=model_id)


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
        Extra attempts after a call raises or times out, waiting ``backoff * 2**(attempt-1)`` seconds
        (stretched by up to 10 % of jitter; at least the ``Retry-After`` of a rate-limit error, up to 60 s).
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
        # Building the engine's Policy and Budget checks the fields this policy shares with them
        # (concurrency, retries, backoff; the limits). Checked here first: rate_limit and timeout, which
        # this policy's messages give as ">= 1e-09", and the judge's own repairs.
        batch.check_number("rate_limit", self.rate_limit, integer=False, minimum=1e-9, strict=False, none=True)
        batch.check_number("timeout", self.timeout, integer=False, minimum=1e-9, strict=False, none=True)
        batch.check_number("repairs", self.repairs, integer=True, minimum=0, strict=False, none=False)
        self.batch_policy()
        self.budget()

    def batch_policy(self) -> batch.Policy:
        """The engine's :class:`~rankbridge.batch.Policy` for each call (timeout, retries, backoff, pacing)."""
        return batch.Policy(
            concurrency=self.concurrency,
            timeout=self.timeout,
            retries=self.retries,
            backoff=self.backoff,
            rate_limit=self.rate_limit,
        )

    def budget(self) -> batch.Budget:
        """A fresh :class:`~rankbridge.batch.Budget` with this policy's limits."""
        return batch.Budget(self.max_calls, self.max_tokens, self.max_errors)


def _policy_of(policy: CallPolicy | None, fields: Mapping[str, Any], caller: str) -> CallPolicy:
    """``policy``, or a :class:`CallPolicy` of the caller's keyword ``fields`` (never both); an unknown field
    is an :class:`~rankbridge.errors.InputError` naming it and ``caller``."""
    if policy is not None and fields:
        raise InputError("give either policy= or its fields as keywords, not both")
    try:
        return policy or CallPolicy(**fields)
    except TypeError as exc:
        raise InputError(f"{caller}: {exc}") from None


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


class Session:
    """One batch of calls under a :class:`CallPolicy`, on the batch engine (:mod:`rankbridge.batch`).

    Items run inside :meth:`slot` (bounded by ``concurrency``); :meth:`ask` makes the call(s) of one
    item -- each with the engine's timeout, pacing, and retries with jittered backoff that honours a
    rate-limit error's ``Retry-After`` -- and raises :class:`~rankbridge.errors.BudgetExceededError` once
    the engine's :class:`~rankbridge.batch.Budget` (calls, tokens, or the error limit) stopped the batch;
    :attr:`stopped` then says why. ``budget=`` shares one budget between sessions (sync or async).
    """

    def __init__(self, llm: LLMClient, policy: CallPolicy, *, budget: batch.Budget | None = None) -> None:
        self.llm = llm
        self.policy = policy
        self.usage = Usage()
        self.budget = budget if budget is not None else policy.budget()
        self._retry = policy.batch_policy()
        self._pacer = batch.Pacer(policy.rate_limit)
        self._sem: asyncio.Semaphore | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None

    @property
    def stopped(self) -> str | None:
        """Why the batch stopped (the budget, the error limit, a caller's reason), or None."""
        return self.budget.stopped

    @property
    def failures(self) -> int:
        """Items that failed for good."""
        return self.budget.errors

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
        self.budget.stop(reason)

    def note_failure(self) -> None:
        """Count an item that failed for good; stops the batch at ``max_errors``."""
        self.budget.note_failure()

    async def call(self, prompt: str, *, repair: bool = False) -> LLMReply:
        """One call with retries; raises :class:`LLMError` after the last attempt fails."""
        attempts = self._retry.retries + 1
        last: BaseException | None = None
        for attempt in range(attempts):
            self.budget.admit()  # counted when started, so max_calls holds with calls in flight
            self.usage.calls += 1
            if attempt:
                self.usage.retries += 1
            elif repair:
                self.usage.repairs += 1
            try:
                await self._pacer.turn()
                reply = await batch.within(self.llm.acomplete(prompt, executor=self._threads()), self._retry.timeout)
            except Exception as exc:
                if isinstance(exc, RankbridgeError) and not isinstance(exc, (LLMError, CallTimeout)):
                    raise
                last = exc
                self._spent(_estimate_tokens(prompt), 0, estimated=True)
            else:
                self._account(prompt, reply)
                return reply
            if attempt + 1 < attempts:
                wait = self._retry.delay(attempt + 1, last)
                if wait > 0:
                    await asyncio.sleep(wait)
        assert last is not None
        what = str(last) if isinstance(last, CallTimeout) else f"raised {type(last).__name__}: {last}"
        raise LLMError(f"{self.llm.model_id} {what} (after {attempts} attempts)") from last

    def _spent(self, input_tokens: int, output_tokens: int, *, estimated: bool) -> None:
        self.usage.input_tokens += input_tokens
        self.usage.output_tokens += output_tokens
        self.usage.estimated_calls += estimated
        self.budget.charge(tokens=input_tokens + output_tokens)

    def _account(self, prompt: str, reply: LLMReply) -> None:
        if reply.input_tokens is None and reply.output_tokens is None:
            self._spent(_estimate_tokens(prompt), _estimate_tokens(reply.text), estimated=True)
        else:
            self._spent(reply.input_tokens or 0, reply.output_tokens or 0, estimated=False)

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
