"""One engine for every batch of calls: the runner's retrievals, the judge's LLM calls, answers, RAGAS.

What it provides
----------------
* :class:`Policy` -- how calls are made: ``concurrency``, per-call ``timeout``, ``retries`` with
  exponential backoff (``backoff * 2**(attempt-1)`` seconds, capped at ``max_backoff``) plus a bounded
  random ``jitter`` (the wait is stretched by at most that fraction, never shortened), an optional
  ``rate_limit`` (calls started per second), and a rate-limit error's ``Retry-After`` honoured (see
  :func:`retry_after`).
* :class:`Budget` -- one budget model: calls (prompts) and tokens used, checked before each call starts
  (so ``max_calls`` is exact with concurrency), and items failed for good (``max_errors``). Thread-safe,
  so one budget can be shared by sync and async batches. It raises :class:`BudgetExceededError`.
* :class:`Failure` -- a failure as data: ``kind`` (``"timeout"``, ``"error"``, ``"invalid result"``,
  ``"budget"``), ``detail`` and ``attempts``; :attr:`Failure.message` is the text users see
  (``"timeout: no result within 5 s (after 3 attempts)"``). Code decides on ``kind``, never on the text.
* Entry points: :func:`run_sync` (worker threads and a watchdog: a call that outlives its timeout
  cannot be stopped, so it is abandoned and a fresh worker takes its place; at most ``max_hung``
  abandoned calls are held, after which the remaining items fail as not run), :func:`run_async` (worker
  coroutines on the running loop), and :func:`run_block` / :func:`arun_block`, which run one block of
  items and return a picklable :class:`BlockResult` (outcomes and budget charges) -- the unit an
  executor (Ray) ships to a worker and merges at the driver.

Examples
--------
>>> from rankbridge.batch import Policy, Task, run_block
>>> def square(x):
...     if x < 0:
...         raise ValueError("negative")
...     return x * x
>>> block = run_block([Task("a", 3), Task("b", -1)], square, Policy(concurrency=2, retries=1, backoff=0))
>>> block.values()
{'a': 9}
>>> block.failures()["b"].message
'error: ValueError: negative (after 2 attempts)'
>>> block.charges.calls
3
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import random
import sys
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, TypeVar

from rankbridge.errors import BudgetExceededError, CallTimeout, InputError, RankbridgeError

T = TypeVar("T")

__all__ = [
    "ERROR",
    "INVALID",
    "TIMEOUT",
    "BlockResult",
    "Budget",
    "BudgetExceededError",
    "CallTimeout",
    "Charges",
    "Control",
    "Failure",
    "Outcome",
    "Pacer",
    "Policy",
    "Task",
    "arun_block",
    "check_number",
    "describe",
    "is_rate_limited",
    "retry_after",
    "run_async",
    "run_block",
    "run_sync",
    "within",
]

#: Failure kinds. ``BUDGET`` items were not tried because the budget (or the error limit) stopped the batch.
TIMEOUT, ERROR, INVALID, BUDGET = "timeout", "error", "invalid result", "budget"
KINDS = (TIMEOUT, ERROR, INVALID, BUDGET)


# -- failures as data --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Failure:
    """Why an item (or one attempt of it) failed.

    Attributes
    ----------
    kind:
        One of :data:`KINDS` (or a caller's own kind).
    detail:
        What happened, for a person.
    attempts:
        Attempts made, this one included.
    rate_limited:
        The error was a rate-limit answer (HTTP 429).

    Examples
    --------
    >>> Failure("timeout", "no result within 5 s", attempts=3).message
    'timeout: no result within 5 s (after 3 attempts)'
    >>> Failure.parse("invalid result: the retriever returned None").kind
    'invalid result'
    """

    kind: str
    detail: str
    attempts: int = 1
    rate_limited: bool = False

    @property
    def text(self) -> str:
        """``"kind: detail"``, without the attempt count (two items failing alike compare equal)."""
        return f"{self.kind}: {self.detail}"

    @property
    def message(self) -> str:
        """The text users see: :attr:`text` plus ``" (after N attempts)"`` when there were several."""
        return self.text + (f" (after {self.attempts} attempts)" if self.attempts > 1 else "")

    @classmethod
    def parse(cls, message: str) -> Failure:
        """A failure from a message written by :attr:`message` (a checkpoint, a run read from disk).

        Only for text that comes from outside the process; kind ``"other"`` when no known kind leads.
        """
        attempts = 1
        cut = message.rfind(" (after ")
        if cut > 0 and message.endswith(" attempts)"):
            count = message[cut + 8 : -len(" attempts)")]
            if count.isdigit():
                attempts, message = int(count), message[:cut]
        for kind in KINDS:
            if message.startswith(kind + ": "):
                return cls(kind, message[len(kind) + 2 :], attempts)
        return cls("other", message, attempts)


def describe(exc: BaseException) -> str:
    """``"Type: message"`` for a foreign exception; our own errors read as their message."""
    cause = exc.__cause__ if isinstance(exc, RankbridgeError) and exc.__cause__ is not None else None
    text = str(exc) if cause is not None or isinstance(exc, RankbridgeError) else f"{type(exc).__name__}: {exc}"
    return text.rstrip() or type(exc).__name__


# -- rate-limit errors ---------------------------------------------------------------------------------
def _chain(exc: BaseException) -> Iterable[BaseException]:
    """``exc`` and what it wraps (a framework re-raising a client's error ``from`` it), a few levels deep."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 5:
        yield cur
        seen += 1
        cur = cur.__cause__ or cur.__context__


def _status(exc: BaseException) -> int | None:
    for source in (exc, getattr(exc, "response", None)):
        for attr in ("status_code", "status"):
            value = getattr(source, attr, None)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def is_rate_limited(exc: BaseException) -> bool:
    """True for a rate-limit answer: HTTP 429 on the error or its ``response`` (openai, httpx, anthropic).

    Examples
    --------
    >>> class RateLimitError(Exception):
    ...     status_code = 429
    >>> is_rate_limited(RateLimitError("slow down")), is_rate_limited(ValueError("x"))
    (True, False)
    """
    return any(_status(e) == 429 for e in _chain(exc))


def _header(headers: Any, name: str) -> str | None:
    try:
        value = headers.get(name)  # httpx.Headers / requests' CaseInsensitiveDict ignore case
        if value is None and isinstance(headers, Mapping):
            value = next((v for k, v in headers.items() if str(k).lower() == name), None)
    except Exception:  # a headers object of some other shape: no hint
        return None
    return value if isinstance(value, str) else None


def retry_after(exc: BaseException, *, now: float | None = None) -> float | None:
    """Seconds the server asked to wait before the next call, from a rate-limit or busy error, or None.

    Read from the error's (or its cause's) ``response.headers`` or ``headers``: ``retry-after-ms``
    (OpenAI), then ``Retry-After`` as seconds or as an HTTP date. Only errors with status 429 or 503
    count (other answers may carry the header for other reasons).

    Examples
    --------
    >>> class Busy(Exception):
    ...     status_code = 429
    ...     headers = {"Retry-After": "7"}
    >>> retry_after(Busy())
    7.0
    """
    for e in _chain(exc):
        if _status(e) not in (429, 503):
            continue
        response = getattr(e, "response", None)
        headers = getattr(response, "headers", None) or getattr(e, "headers", None)
        if headers is None:
            continue
        ms = _header(headers, "retry-after-ms")
        if ms is not None:
            try:
                return max(float(ms) / 1000.0, 0.0)
            except ValueError:
                pass
        value = _header(headers, "retry-after")
        if value is None:
            continue
        try:
            return max(float(value), 0.0)
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        return max(when.timestamp() - (time.time() if now is None else now), 0.0)
    return None


# -- the policy ----------------------------------------------------------------------------------------
def check_number(name: str, value: Any, *, integer: bool, minimum: float, strict: bool, none: bool) -> None:
    """Refuse ``value`` unless it is an int (``integer``) or a number, above ``minimum`` (``strict``) or at
    least it, or None when ``none``: ``"<name> must be an int >= 1. Got 0 instead."`` (every policy's check).
    """
    if value is None and none:
        return
    ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    usable = ok and not isinstance(value, bool) and not (isinstance(value, float) and math.isnan(value))
    if usable and (value > minimum or (not strict and value == minimum)):
        return
    what = "an int" if integer else "a number"
    bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
    raise InputError(f"{name} must be {what} {bound}{' or None' if none else ''}. Got {value!r} instead.")


@dataclass(frozen=True)
class Policy:
    """How a batch of calls is made.

    Parameters
    ----------
    concurrency:
        Calls in flight at once.
    timeout:
        Seconds one attempt may take (None: no limit).
    retries:
        Further attempts after an exception or a timeout.
    backoff:
        Seconds before the first retry; doubled for each further one, capped at ``max_backoff``.
    max_backoff:
        The longest wait between two attempts, also for a server's ``Retry-After``.
    jitter:
        Each wait is stretched by a random fraction in ``[0, jitter]`` (never shortened), so that calls
        that failed together do not all retry at the same instant.
    rate_limit:
        At most this many calls started per second (None: no limit).
    max_hung:
        Sync calls abandoned after a timeout that may still hold a thread; past it, the remaining items
        fail as not run. Default ``max(16, 2 * concurrency)``.

    Examples
    --------
    >>> p = Policy(backoff=1.0, jitter=0.0)
    >>> [p.delay(a) for a in (1, 2, 3)]
    [1.0, 2.0, 4.0]
    """

    concurrency: int = 8
    timeout: float | None = None
    retries: int = 2
    backoff: float = 0.5
    max_backoff: float = 60.0
    jitter: float = 0.1
    rate_limit: float | None = None
    max_hung: int | None = None

    def __post_init__(self) -> None:
        check_number("concurrency", self.concurrency, integer=True, minimum=1, strict=False, none=False)
        check_number("timeout", self.timeout, integer=False, minimum=0, strict=True, none=True)
        check_number("retries", self.retries, integer=True, minimum=0, strict=False, none=False)
        check_number("backoff", self.backoff, integer=False, minimum=0, strict=False, none=False)
        check_number("max_backoff", self.max_backoff, integer=False, minimum=0, strict=False, none=False)
        check_number("jitter", self.jitter, integer=False, minimum=0, strict=False, none=False)
        check_number("rate_limit", self.rate_limit, integer=False, minimum=0, strict=True, none=True)
        check_number("max_hung", self.max_hung, integer=True, minimum=0, strict=False, none=True)

    @property
    def hung_limit(self) -> int:
        """Abandoned calls allowed to hold a thread (:attr:`max_hung` or its default)."""
        return self.max_hung if self.max_hung is not None else max(16, 2 * self.concurrency)

    def delay(
        self, attempt: int, error: BaseException | None = None, *, rng: Callable[[], float] = random.random
    ) -> float:
        """Seconds to wait before retry number ``attempt`` (1 = the first retry) after ``error``.

        ``backoff * 2**(attempt-1)`` capped at :attr:`max_backoff`, stretched by up to :attr:`jitter`;
        at least the ``Retry-After`` a rate-limit error asks for (capped at :attr:`max_backoff` too).
        """
        base = min(self.backoff * 2.0 ** (attempt - 1), self.max_backoff)
        wait = base * (1.0 + self.jitter * rng()) if base > 0 else 0.0
        if error is not None:
            asked = retry_after(error)
            if asked is not None:
                wait = max(wait, min(asked, self.max_backoff))
        return wait


class Pacer:
    """Start times spaced ``1 / rate`` apart; shared by threads and coroutines (the lock is never awaited)."""

    def __init__(self, rate: float | None) -> None:
        self.interval = 0.0 if rate is None else 1.0 / rate
        self.next_start = 0.0
        self.lock = threading.Lock()

    def reserve(self) -> float:
        """Book the next start; the seconds to wait for it."""
        if not self.interval:
            return 0.0
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_start)
            self.next_start = start + self.interval
            return start - now

    async def turn(self) -> None:
        """Wait (asynchronously) for this call's start."""
        wait = self.reserve()
        if wait > 0:
            await asyncio.sleep(wait)


async def within(aw: Awaitable[T], timeout: float | None) -> T:
    """``await aw``, or :class:`~rankbridge.errors.CallTimeout` after ``timeout`` seconds (it is cancelled).

    Unlike ``asyncio.wait_for``, a ``TimeoutError`` raised by the callee itself propagates as it is, so
    it never reads as our timeout.
    """
    if timeout is None:
        return await aw
    task = asyncio.ensure_future(aw)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise CallTimeout(f"timed out after {timeout:g} s")
    return task.result()


# -- the budget ----------------------------------------------------------------------------------------
#: How a budget says why it stopped; ``{limit}`` and ``{used}`` are filled in. The judge's wording.
STOP_MESSAGES: Mapping[str, str] = {
    "calls": "budget reached: max_calls={limit}",
    "tokens": "budget reached: max_tokens={limit} ({used} used)",
    "errors": "{used} items failed (max_errors={limit}); check the LLM's configuration",
}


@dataclass(frozen=True, slots=True)
class Charges:
    """What a batch (or a block of it) spent: calls started, tokens used, items failed for good."""

    calls: int = 0
    tokens: int = 0
    errors: int = 0


class Budget:
    """Calls and tokens a batch may use, and items it may fail, shared by every thread and coroutine.

    :meth:`admit` is called before each call starts and counts it, so ``max_calls`` is exact with any
    concurrency; tokens are known only when a call returns (:meth:`charge`), so calls in flight may pass
    ``max_tokens`` by what they use. Once a limit is reached, :attr:`stopped` says why (the first reason
    is kept) and every :meth:`admit` raises :class:`~rankbridge.errors.BudgetExceededError`.

    Parameters
    ----------
    max_calls, max_tokens:
        Limits (None: none).
    max_errors:
        Stop after this many items failed for good (:meth:`note_failure`).
    messages:
        The stop reasons, by limit (``"calls"``, ``"tokens"``, ``"errors"``); default :data:`STOP_MESSAGES`.

    Examples
    --------
    >>> b = Budget(max_calls=2)
    >>> b.admit(); b.admit()
    >>> b.admit()
    Traceback (most recent call last):
    ...
    rankbridge.errors.BudgetExceededError: budget reached: max_calls=2
    >>> b.charges
    Charges(calls=2, tokens=0, errors=0)
    """

    def __init__(
        self,
        max_calls: int | None = None,
        max_tokens: int | None = None,
        max_errors: int | None = None,
        *,
        messages: Mapping[str, str] | None = None,
    ) -> None:
        check_number("max_calls", max_calls, integer=True, minimum=0, strict=False, none=True)
        check_number("max_tokens", max_tokens, integer=True, minimum=0, strict=False, none=True)
        check_number("max_errors", max_errors, integer=True, minimum=1, strict=False, none=True)
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.max_errors = max_errors
        self.messages = dict(STOP_MESSAGES if messages is None else {**STOP_MESSAGES, **messages})
        self.calls = 0
        self.tokens = 0
        self.errors = 0
        self.stopped: str | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"Budget(max_calls={self.max_calls}, max_tokens={self.max_tokens}, max_errors={self.max_errors}; "
            f"used {self.calls} calls, {self.tokens} tokens, {self.errors} errors)"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]  # a lock does not pickle; a copy shipped to a worker gets its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def charges(self) -> Charges:
        """What was spent so far."""
        return Charges(self.calls, self.tokens, self.errors)

    def _stop(self, limit: str, value: int, used: int) -> None:  # caller holds the lock
        if self.stopped is None:
            self.stopped = self.messages[limit].format(limit=value, used=used)

    def stop(self, reason: str) -> None:
        """Stop the batch for a reason of the caller's (the first reason given is kept)."""
        with self._lock:
            if self.stopped is None:
                self.stopped = reason

    def admit(self) -> None:
        """Count one call about to start, or raise :class:`BudgetExceededError` when none may start."""
        with self._lock:
            if self.stopped is None and self.max_calls is not None and self.calls >= self.max_calls:
                self._stop("calls", self.max_calls, self.calls)
            if self.stopped is None and self.max_tokens is not None and self.tokens >= self.max_tokens:
                self._stop("tokens", self.max_tokens, self.tokens)
            if self.stopped is not None:
                raise BudgetExceededError(self.stopped)
            self.calls += 1

    def charge(self, tokens: int = 0) -> None:
        """Add the tokens a finished call used."""
        if tokens:
            with self._lock:
                self.tokens += tokens

    def note_failure(self) -> None:
        """Count an item that failed for good; stops the batch at ``max_errors``."""
        with self._lock:
            self.errors += 1
            if self.max_errors is not None and self.errors >= self.max_errors:
                self._stop("errors", self.max_errors, self.errors)

    def remaining(self) -> Budget:
        """A fresh budget with what is left of this one's limits (for a block run elsewhere).

        Merge what the block spent back with :meth:`absorb`.
        """
        with self._lock:
            left = Budget(
                None if self.max_calls is None else max(self.max_calls - self.calls, 0),
                None if self.max_tokens is None else max(self.max_tokens - self.tokens, 0),
                None if self.max_errors is None else max(self.max_errors - self.errors, 1),
                messages=self.messages,
            )
            left.stopped = self.stopped
        return left

    def absorb(self, spent: Charges, stopped: str | None = None) -> None:
        """Add what a block run elsewhere spent (and why it stopped, if it did)."""
        with self._lock:
            self.calls += spent.calls
            self.tokens += spent.tokens
            self.errors += spent.errors
            if self.stopped is None:
                if self.max_calls is not None and self.calls >= self.max_calls:
                    self._stop("calls", self.max_calls, self.calls)
                elif self.max_tokens is not None and self.tokens >= self.max_tokens:
                    self._stop("tokens", self.max_tokens, self.tokens)
                elif self.max_errors is not None and self.errors >= self.max_errors:
                    self._stop("errors", self.max_errors, self.errors)
                elif stopped is not None:
                    self.stopped = stopped


# -- tasks, outcomes, control --------------------------------------------------------------------------
class Task:
    """One item of a batch: its key, the payload handed to the call, and its attempts so far."""

    __slots__ = ("_errors", "attempt", "key", "not_before", "payload")

    def __init__(self, key: str, payload: Any) -> None:
        self.key = key
        self.payload = payload
        self.attempt = 0  # retries made so far
        self.not_before = 0.0  # perf_counter() time before which the next attempt must not start
        # made on the first retried failure: a batch holds a Task per item for its whole length, and a list
        # each would be one more object per item for the garbage collector to walk
        self._errors: list[Failure] | None = None

    @property
    def errors(self) -> list[Failure]:
        """The failed attempts that were retried (a list, empty until one is)."""
        if self._errors is None:
            self._errors = []
        return self._errors

    def __repr__(self) -> str:
        return f"Task({self.key!r}, attempt={self.attempt})"


@dataclass(slots=True)
class Outcome:
    """How one item ended: its value, or its :class:`Failure`; seconds of its last attempt; retried errors."""

    key: str
    value: Any = None
    failure: Failure | None = None
    latency: float = 0.0
    retried: tuple[Failure, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the item produced a value."""
        return self.failure is None


#: Receives each finished item, with :attr:`Control.lock` held; may set ``control.closed`` to stop the batch.
Sink = Callable[[Outcome], None]


class Control:
    """The lock a batch's sink runs under, and the flag that stops it (set by the sink or from outside)."""

    __slots__ = ("closed", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        """Stop taking items; calls in flight finish and are ignored."""
        self.closed = True


class _Retrier:
    """Decides, under the control lock, whether a failed attempt is tried again, and reports the rest."""

    def __init__(self, policy: Policy, sink: Sink, control: Control) -> None:
        self.policy = policy
        self.sink = sink
        self.control = control

    def failed(
        self, task: Task, failure: Failure, latency: float, *, retryable: bool, error: BaseException | None
    ) -> bool:
        """Record a failed attempt (caller holds the lock); True when the task should be tried again."""
        if self.control.closed:
            return False
        if retryable and task.attempt < self.policy.retries:
            task.errors.append(failure)
            task.attempt += 1
            task.not_before = perf_counter() + self.policy.delay(task.attempt, error)
            return True
        final = Failure(failure.kind, failure.detail, task.attempt + 1, failure.rate_limited)
        retried = () if task._errors is None else tuple(task._errors)
        self.sink(Outcome(task.key, None, final, latency, retried))
        return False

    def done(self, task: Task, value: Any, latency: float) -> None:
        if not self.control.closed:
            retried = () if task._errors is None else tuple(task._errors)  # no list made for a task never retried
            self.sink(Outcome(task.key, value, None, latency, retried))


def _error_failure(exc: BaseException) -> Failure:
    if isinstance(exc, BudgetExceededError):
        return Failure(BUDGET, str(exc))
    return Failure(ERROR, describe(exc), rate_limited=is_rate_limited(exc))


def _admit(budget: Budget | None) -> Failure | None:
    if budget is None:
        return None
    try:
        budget.admit()
    except BudgetExceededError as exc:
        return Failure(BUDGET, str(exc))
    return None


# -- the sync engine: worker threads + a watchdog for timeouts -----------------------------------------
class _Slot:
    __slots__ = ("abandoned", "deadline", "task")

    def __init__(self) -> None:
        self.task: Task | None = None
        self.deadline = math.inf
        self.abandoned = False


class _SyncEngine:
    def __init__(
        self,
        tasks: Iterable[Task],
        call: Callable[[Any], Any],
        convert: Callable[[Any], Any] | None,
        retrier: _Retrier,
        budget: Budget | None,
        callee: str,
    ) -> None:
        self.callee = callee
        self.call = call
        self.convert = convert
        self.pending: deque[Task] = deque(tasks)
        self.retrier = retrier
        self.control = retrier.control
        self.policy = retrier.policy
        self.budget = budget
        self.pacer = Pacer(self.policy.rate_limit)
        self.cond = threading.Condition(self.control.lock)
        self.slots: list[_Slot] = []
        self.live = 0
        self.stop = threading.Event()
        #: threads still inside a call that timed out; past the bound no more are started (a callee that
        #: hangs on every call would otherwise cost a thread per item)
        self.hung = 0

    def _spawn(self) -> None:  # caller holds the lock
        slot = _Slot()
        self.slots.append(slot)
        self.live += 1
        threading.Thread(target=self._worker, args=(slot,), daemon=True, name="rankbridge-batch").start()

    def _take(self, slot: _Slot) -> Task | None:  # caller holds the lock
        """The slot's next task, or None when the worker should end (it is then unregistered)."""
        if self.control.closed or not self.pending:
            self.live -= 1
            self.slots.remove(slot)
            self.cond.notify()
            return None
        task = slot.task = self.pending.popleft()
        return task

    def _worker(self, slot: _Slot) -> None:
        call, convert, retrier, control = self.call, self.convert, self.retrier, self.control
        pending, lock, budget, pacer, timeout = self.pending, control.lock, self.budget, self.pacer, self.policy.timeout
        take = self._take
        with lock:
            task = take(slot)
        while task is not None:
            if task.not_before or pacer.interval:  # a retry's backoff, or a rate limit: wait for the start
                delay = max(task.not_before - perf_counter(), pacer.reserve())
                if delay > 0 and self.stop.wait(delay):
                    with lock:
                        task = take(slot)
                    continue
            if budget is not None:
                refused = _admit(budget)
                if refused is not None:
                    with lock:
                        slot.task = None
                        retrier.failed(task, refused, 0.0, retryable=False, error=None)
                        task = take(slot)
                    continue
            t0 = perf_counter()
            if timeout is not None:
                slot.deadline = t0 + timeout
            raw: Any = None
            exc: BaseException | None = None
            try:
                raw = call(task.payload)
            except Exception as e:
                exc = e
            except BaseException as e:  # SystemExit / KeyboardInterrupt raised by the callee itself
                exc = RankbridgeError(f"{self.callee} raised {type(e).__name__}({e})")
                exc.__cause__ = e
            latency = perf_counter() - t0
            value: Any = raw
            bad: BaseException | None = None
            if exc is None and convert is not None:
                try:
                    value = convert(raw)
                except Exception as e:
                    bad = e
            # one critical section records this task and takes the next (half the lock hand-offs)
            with lock:
                if slot.abandoned:  # the watchdog timed this call out and replaced this worker
                    self.hung -= 1
                    self.cond.notify()
                    return
                slot.task = None
                slot.deadline = math.inf
                if exc is not None:
                    failure = _error_failure(exc)
                    if retrier.failed(task, failure, latency, retryable=failure.kind != BUDGET, error=exc):
                        pending.appendleft(task)
                elif bad is not None:
                    retrier.failed(task, Failure(INVALID, describe(bad)), latency, retryable=False, error=None)
                else:
                    retrier.done(task, value, latency)
                task = take(slot)

    def run(self) -> None:
        timeout = self.policy.timeout
        try:
            with self.cond:
                for _ in range(min(self.policy.concurrency, len(self.pending))):
                    self._spawn()
                while self.live > 0 and not self.control.closed:
                    now = perf_counter()
                    nxt = math.inf
                    if timeout is not None:
                        for slot in list(self.slots):
                            if slot.task is None:
                                continue
                            if slot.deadline <= now:
                                self._abandon(slot, slot.task, timeout)
                            else:
                                nxt = min(nxt, slot.deadline)
                    # a call that starts while this waits ends its timeout at most `timeout` from now: wake
                    # by then (workers do not notify when they start a call)
                    self.cond.wait(min(max(nxt - now, 0.001), 0.5, timeout if timeout is not None else 0.5))
        finally:
            with self.control.lock:
                self.control.closed = True
            self.stop.set()

    def _abandon(self, slot: _Slot, task: Task, timeout: float) -> None:  # caller holds the lock
        slot.abandoned = True
        self.slots.remove(slot)
        self.live -= 1
        self.hung += 1
        failure = Failure(TIMEOUT, f"no result within {timeout:g} s")
        if self.retrier.failed(task, failure, timeout, retryable=True, error=None):
            self.pending.appendleft(task)
        if not self.pending:
            return
        if self.hung < self.policy.hung_limit:
            self._spawn()
        elif self.live == 0:  # every worker is stuck in a call: fail what is left rather than start more
            detail = (
                f"not run: {self.hung} calls are still running past the {timeout:g} s timeout ({self.callee} "
                "seems to hang); no more threads were started"
            )
            while self.pending:
                self.retrier.failed(self.pending.popleft(), Failure(TIMEOUT, detail), 0.0, retryable=False, error=None)


def run_sync(
    tasks: Iterable[Task],
    call: Callable[[Any], Any],
    sink: Sink,
    policy: Policy,
    *,
    convert: Callable[[Any], Any] | None = None,
    budget: Budget | None = None,
    control: Control | None = None,
    callee: str = "the call",
) -> None:
    """Run ``call(task.payload)`` for every task on up to ``policy.concurrency`` worker threads.

    Each finished task goes to ``sink`` (with ``control.lock`` held): its value -- ``convert(raw)`` when
    ``convert`` is given, whose exceptions are ``"invalid result"`` failures, not retried -- or its
    :class:`Failure` after the last attempt. Returns when every task ended or ``control.closed`` was set;
    a call still running then is abandoned (its result ignored). ``KeyboardInterrupt`` propagates.
    ``callee`` names what is called in messages (``"the retriever raised SystemExit(1)"``).
    """
    ctl = control or Control()
    _SyncEngine(tasks, call, convert, _Retrier(policy, sink, ctl), budget, callee).run()


# -- the async engine: worker coroutines on one loop ---------------------------------------------------
if sys.version_info >= (3, 11):

    async def _with_timeout(aw: Awaitable[Any], timeout: float) -> Any:
        async with asyncio.timeout(timeout):
            return await aw

else:  # pragma: no cover - Python 3.10

    async def _with_timeout(aw: Awaitable[Any], timeout: float) -> Any:
        try:
            return await asyncio.wait_for(aw, timeout)
        except asyncio.TimeoutError:  # not the builtin TimeoutError before 3.11
            raise TimeoutError from None


async def run_async(
    tasks: Iterable[Task],
    acall: Callable[[Any], Awaitable[Any]],
    sink: Sink,
    policy: Policy,
    *,
    convert: Callable[[Any], Any] | None = None,
    budget: Budget | None = None,
    control: Control | None = None,
    callee: str = "the call",
) -> None:
    """Async :func:`run_sync`: ``await acall(task.payload)`` on up to ``policy.concurrency`` coroutines.

    A call past its timeout is cancelled. Cancelling the awaiting task stops the batch and re-raises.
    """
    ctl = control or Control()
    retrier = _Retrier(policy, sink, ctl)
    pending: deque[Task] = deque(tasks)
    lock = ctl.lock
    timeout = policy.timeout
    pacer = Pacer(policy.rate_limit)
    # Timeouts: on 3.11+ one watchdog task cancels calls past their deadline (a timer per call costs
    # ~10 us); on 3.10, asyncio.wait_for.
    watchdog = timeout is not None and hasattr(asyncio.Task, "uncancel")
    deadlines: dict[asyncio.Task[Any], float] = {}
    timed_out: set[asyncio.Task[Any]] = set()

    async def worker() -> None:
        me = asyncio.current_task()
        assert me is not None
        while pending and not ctl.closed:
            task = pending.popleft()
            if task.not_before or pacer.interval:
                delay = max(task.not_before - perf_counter(), pacer.reserve())
                if delay > 0:
                    await asyncio.sleep(delay)
            if budget is not None:
                refused = _admit(budget)
                if refused is not None:
                    with lock:
                        retrier.failed(task, refused, 0.0, retryable=False, error=None)
                    continue
            t0 = perf_counter()
            failure: Failure | None = None
            error: BaseException | None = None
            try:
                if timeout is None:
                    raw = await acall(task.payload)
                elif watchdog:
                    deadlines[me] = t0 + timeout
                    try:
                        raw = await acall(task.payload)
                    finally:
                        del deadlines[me]
                    if me in timed_out:  # the call swallowed the cancellation: still too late
                        raise asyncio.CancelledError
                else:
                    raw = await _with_timeout(acall(task.payload), timeout)
            except asyncio.CancelledError:
                if me not in timed_out:
                    raise
                timed_out.discard(me)
                me.uncancel()  # type: ignore[attr-defined]  # 3.11+, checked above
                failure = Failure(TIMEOUT, f"no result within {timeout:g} s")
            except TimeoutError as e:
                if timeout is not None and not watchdog:  # asyncio.wait_for's (Python 3.10): ours
                    failure = Failure(TIMEOUT, f"no result within {timeout:g} s")
                else:  # the callee's own TimeoutError (ours arrive as a cancellation): an error it raised
                    failure, error = _error_failure(e), e
            except Exception as e:
                failure, error = _error_failure(e), e
            except (SystemExit, KeyboardInterrupt) as e:  # raised by the callee itself, not by a Ctrl-C here
                failure = Failure(ERROR, f"{callee} raised {type(e).__name__}({e})")
            latency = perf_counter() - t0
            if failure is not None:
                with lock:
                    if retrier.failed(task, failure, latency, retryable=failure.kind != BUDGET, error=error):
                        pending.appendleft(task)
                continue
            value = raw
            if convert is not None:
                try:
                    value = convert(raw)
                except Exception as e:
                    with lock:
                        retrier.failed(task, Failure(INVALID, describe(e)), latency, retryable=False, error=None)
                    continue
            with lock:
                retrier.done(task, value, latency)

    async def police() -> None:
        assert timeout is not None
        interval = min(timeout / 10, 0.05)
        while True:
            await asyncio.sleep(interval)
            now = perf_counter()
            for t, deadline in list(deadlines.items()):
                if deadline <= now and t not in timed_out:
                    timed_out.add(t)
                    t.cancel()

    guard = asyncio.ensure_future(police()) if watchdog else None
    try:
        await asyncio.gather(*(worker() for _ in range(min(policy.concurrency, len(pending)))))
    finally:
        if guard is not None:
            guard.cancel()
        with lock:
            ctl.closed = True


# -- one block, as plain data (the unit an executor ships and merges) ---------------------------------
@dataclass
class BlockResult:
    """What one block of a batch produced: its outcomes, in the order they finished, and what it spent.

    Picklable when the values are; merge it at the driver by feeding :attr:`outcomes` to the batch's
    sink and :meth:`Budget.absorb`-ing :attr:`charges`.
    """

    outcomes: list[Outcome] = field(default_factory=list)
    charges: Charges = field(default_factory=Charges)
    stopped: str | None = None

    def values(self) -> dict[str, Any]:
        """Key -> value of the items that succeeded."""
        return {o.key: o.value for o in self.outcomes if o.failure is None}

    def failures(self) -> dict[str, Failure]:
        """Key -> failure of the items that failed."""
        return {o.key: o.failure for o in self.outcomes if o.failure is not None}


class _Block:
    """A block being run: its result, its budget, and what the budget had spent before it started."""

    def __init__(self, meter: Budget) -> None:
        self.result = BlockResult()
        self.meter = meter
        self.before = meter.charges

    @classmethod
    def start(cls, budget: Budget | None) -> tuple[_Block, Budget]:
        block = cls(budget if budget is not None else Budget())  # no budget: one without limits, to count
        return block, block.meter

    def finish(self) -> BlockResult:
        after, before = self.meter.charges, self.before
        self.result.charges = Charges(
            after.calls - before.calls, after.tokens - before.tokens, after.errors - before.errors
        )
        self.result.stopped = self.meter.stopped
        return self.result


def run_block(
    tasks: Iterable[Task],
    call: Callable[[Any], Any],
    policy: Policy,
    *,
    convert: Callable[[Any], Any] | None = None,
    budget: Budget | None = None,
) -> BlockResult:
    """Run one block of tasks with :func:`run_sync` and return its outcomes and charges as data.

    ``budget`` counts calls here (give a block :meth:`Budget.remaining` of the shared budget); the
    charges in the result are this block's only.
    """
    block, meter = _Block.start(budget)
    run_sync(tasks, call, block.result.outcomes.append, policy, convert=convert, budget=meter)
    return block.finish()


async def arun_block(
    tasks: Iterable[Task],
    acall: Callable[[Any], Awaitable[Any]],
    policy: Policy,
    *,
    convert: Callable[[Any], Any] | None = None,
    budget: Budget | None = None,
) -> BlockResult:
    """Async :func:`run_block`, on :func:`run_async`."""
    block, meter = _Block.start(budget)
    await run_async(tasks, acall, block.result.outcomes.append, policy, convert=convert, budget=meter)
    return block.finish()
