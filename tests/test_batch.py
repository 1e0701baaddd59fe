"""The batch engine: typed failures, jittered backoff, rate-limit waits, one budget for sync and async."""

from __future__ import annotations

import asyncio
import pickle
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import pytest

from rankbridge import batch
from rankbridge.batch import Budget, Failure, Outcome, Policy, Task, arun_block, run_async, run_block, run_sync
from rankbridge.errors import BudgetExceededError, InputError
from rankbridge.judge import Judge
from rankbridge.judge.llm import BudgetExhausted, CallPolicy, Session, as_llm

httpx = pytest.importorskip("httpx")
openai = pytest.importorskip("openai")


def _response(status: int, headers: dict[str, str] | None = None) -> Any:
    return httpx.Response(status, headers=headers or {}, request=httpx.Request("POST", "http://localhost/v1/chat"))


def _openai_429(headers: dict[str, str]) -> Any:
    return openai.RateLimitError("Rate limit reached", response=_response(429, headers), body=None)


# -- typed failures ------------------------------------------------------------------------------------
def test_failures_are_typed_records_with_kind_and_detail() -> None:
    def call(x: int) -> int:
        if x == 1:
            raise ConnectionError("reset")
        return x

    def convert(raw: int) -> int:
        if raw == 2:
            raise ValueError("not a list")
        return raw * 10

    block = run_block([Task("a", 0), Task("b", 1), Task("c", 2)], call, Policy(retries=1, backoff=0), convert=convert)
    fails = block.failures()
    assert block.values() == {"a": 0}
    assert fails["b"] == Failure("error", "ConnectionError: reset", attempts=2)
    assert fails["b"].message == "error: ConnectionError: reset (after 2 attempts)"
    assert fails["c"] == Failure("invalid result", "ValueError: not a list", attempts=1)  # never retried
    (b_outcome,) = [o for o in block.outcomes if o.key == "b"]
    assert b_outcome.retried == (Failure("error", "ConnectionError: reset"),)


def test_parse_reads_back_messages_from_outside() -> None:
    for f in [Failure("timeout", "no result within 5 s", 3), Failure("invalid result", "x: y"), Failure("budget", "z")]:
        assert Failure.parse(f.message) == f
    assert Failure.parse("something else").kind == "other"


def test_sync_timeout_is_a_timeout_failure_and_the_batch_goes_on() -> None:
    release = threading.Event()

    def call(x: str) -> str:
        if x == "hang":
            release.wait(5)
        return x

    t0 = time.perf_counter()
    block = run_block([Task("a", "hang"), Task("b", "ok")], call, Policy(concurrency=1, timeout=0.1, retries=0))
    release.set()
    assert time.perf_counter() - t0 < 2
    assert block.values() == {"b": "ok"}
    assert block.failures()["a"] == Failure("timeout", "no result within 0.1 s")


def test_async_timeout_and_errors() -> None:
    async def acall(x: str) -> str:
        if x == "slow":
            await asyncio.sleep(5)
        if x == "bad":
            raise KeyError("k")
        return x

    block = asyncio.run(
        arun_block([Task("a", "slow"), Task("b", "bad"), Task("c", "ok")], acall, Policy(timeout=0.1, retries=0))
    )
    assert block.values() == {"c": "ok"}
    assert block.failures()["a"].kind == "timeout"
    assert block.failures()["b"] == Failure("error", "KeyError: 'k'")


def test_block_result_pickles() -> None:
    block = run_block([Task("a", 1)], lambda x: x + 1, Policy())
    again = pickle.loads(pickle.dumps(block))
    assert again.values() == {"a": 2} and again.charges == block.charges
    budget = pickle.loads(pickle.dumps(Budget(max_calls=3)))
    budget.admit()
    assert budget.calls == 1


# -- backoff, jitter, rate limits -----------------------------------------------------------------------
def test_jitter_is_bounded_and_never_shortens_the_wait() -> None:
    p = Policy(backoff=0.2, jitter=0.5, max_backoff=1.0)
    for attempt, base in [(1, 0.2), (2, 0.4), (3, 0.8), (4, 1.0), (9, 1.0)]:
        waits = [p.delay(attempt) for _ in range(500)]
        assert min(waits) >= base
        assert max(waits) <= base * 1.5
        assert len(set(waits)) > 100  # really random, not one fixed stretch
    assert Policy(backoff=0.0).delay(3) == 0.0
    assert Policy(backoff=1.0, jitter=0.25).delay(1, rng=lambda: 1.0) == 1.25


def test_retry_after_from_real_httpx_and_openai_errors() -> None:
    assert batch.retry_after(_openai_429({"retry-after": "3"})) == 3.0
    assert batch.retry_after(_openai_429({"retry-after-ms": "250", "retry-after": "3"})) == 0.25
    assert batch.is_rate_limited(_openai_429({}))
    assert batch.retry_after(_openai_429({})) is None
    when = datetime.now(timezone.utc) + timedelta(seconds=30)
    date_wait = batch.retry_after(_openai_429({"Retry-After": format_datetime(when, usegmt=True)}))
    assert date_wait is not None and 25 <= date_wait <= 31
    status_error = httpx.HTTPStatusError(
        "429", request=httpx.Request("GET", "http://x"), response=_response(429, {"Retry-After": "2"})
    )
    assert batch.retry_after(status_error) == 2.0 and batch.is_rate_limited(status_error)
    # a 500 with the header is not a rate limit; a wrapped 429 is found through the cause
    assert (
        batch.retry_after(openai.InternalServerError("x", response=_response(500, {"retry-after": "9"}), body=None))
        is None
    )
    try:
        try:
            raise _openai_429({"retry-after": "4"})
        except openai.RateLimitError as inner:
            raise RuntimeError("the framework wrapped it") from inner
    except RuntimeError as outer:
        assert batch.retry_after(outer) == 4.0 and batch.is_rate_limited(outer)
    assert batch.retry_after(ValueError("no")) is None and not batch.is_rate_limited(ValueError("no"))


def test_retry_after_is_honoured_by_the_engines() -> None:
    wait = 0.3
    for mode in ("sync", "async"):
        calls: list[float] = []

        def call(x: int, calls: list[float] = calls) -> int:
            calls.append(time.perf_counter())
            if len(calls) == 1:
                raise _openai_429({"retry-after": str(wait)})
            return x

        async def acall(x: int, call: Any = call) -> int:
            return call(x)

        policy = Policy(retries=2, backoff=0.001, jitter=0.0)
        tasks = [Task("a", 1)]
        block = run_block(tasks, call, policy) if mode == "sync" else asyncio.run(arun_block(tasks, acall, policy))
        assert block.values() == {"a": 1}, mode
        assert calls[1] - calls[0] >= wait - 0.01, mode  # not the 1 ms backoff
        (outcome,) = block.outcomes
        assert outcome.retried[0].rate_limited and outcome.retried[0].kind == "error"


def test_retry_after_is_capped_by_max_backoff() -> None:
    p = Policy(backoff=0.1, jitter=0.0, max_backoff=2.0)
    assert p.delay(1, _openai_429({"retry-after": "600"})) == 2.0
    assert p.delay(1, _openai_429({"retry-after": "0.05"})) == 0.1  # the backoff when it is longer


def test_rate_limit_spaces_call_starts() -> None:
    starts: list[float] = []
    lock = threading.Lock()

    def call(x: int) -> int:
        with lock:
            starts.append(time.monotonic())
        return x

    run_block([Task(str(i), i) for i in range(5)], call, Policy(concurrency=4, rate_limit=20.0))
    starts.sort()
    assert starts[-1] - starts[0] >= 4 / 20 - 0.02


# -- the budget ------------------------------------------------------------------------------------------
def test_budget_is_exact_with_concurrency_and_reports_typed_budget_failures() -> None:
    budget = Budget(max_calls=3)
    block = run_block([Task(str(i), i) for i in range(8)], lambda x: x, Policy(concurrency=4), budget=budget)
    assert len(block.values()) == 3 and budget.calls == 3 and block.charges.calls == 3
    assert {f.kind for f in block.failures().values()} == {"budget"}
    assert block.stopped == "budget reached: max_calls=3"


def test_one_budget_shared_by_sync_and_async_batches() -> None:
    budget = Budget(max_calls=10)
    seen: list[Outcome] = []
    lock = threading.Lock()

    def sink(o: Outcome) -> None:
        seen.append(o)

    async def acall(x: int) -> int:
        await asyncio.sleep(0.001)
        return x

    def call(x: int) -> int:
        time.sleep(0.001)
        return x

    def sync_side() -> None:
        run_sync([Task(f"s{i}", i) for i in range(10)], call, sink, Policy(concurrency=3), budget=budget)

    thread = threading.Thread(target=sync_side)
    thread.start()
    asyncio.run(run_async([Task(f"a{i}", i) for i in range(10)], acall, sink, Policy(concurrency=3), budget=budget))
    thread.join()
    with lock:
        ok = [o for o in seen if o.ok]
        refused = [o for o in seen if not o.ok]
    assert len(ok) == 10 and budget.calls == 10  # exact across the two engines
    assert len(refused) == 10 and all(o.failure is not None and o.failure.kind == "budget" for o in refused)


def test_tokens_errors_remaining_and_absorb() -> None:
    b = Budget(
        max_tokens=100, max_errors=2, messages={"tokens": "the budget of {limit} tokens is used up ({used} used)"}
    )
    b.admit()
    b.charge(tokens=120)
    with pytest.raises(BudgetExceededError, match=r"the budget of 100 tokens is used up \(120 used\)"):
        b.admit()
    c = Budget(max_calls=5, max_errors=2)
    c.note_failure()
    c.note_failure()
    assert c.stopped == "2 items failed (max_errors=2); check the LLM's configuration"
    shared = Budget(max_calls=5)
    shared.admit()
    part = shared.remaining()
    assert part.max_calls == 4
    spent = run_block([Task(str(i), i) for i in range(6)], lambda x: x, Policy(), budget=part).charges
    shared.absorb(spent)
    assert shared.calls == 5 and shared.stopped == "budget reached: max_calls=5"


def test_policy_refuses_bad_settings() -> None:
    with pytest.raises(InputError, match=r"concurrency must be an int >= 1\. Got 0 instead\."):
        Policy(concurrency=0)
    with pytest.raises(InputError, match="jitter must be a number >= 0"):
        Policy(jitter=-1)
    with pytest.raises(InputError, match="timeout must be a number > 0 or None"):
        Policy(timeout=0)
    with pytest.raises(InputError, match="max_calls must be an int >= 0 or None"):
        Budget(max_calls=-1)


# -- the users ------------------------------------------------------------------------------------------
def test_the_judge_waits_for_retry_after_and_shares_a_budget() -> None:
    assert BudgetExhausted is BudgetExceededError
    calls: list[float] = []

    def llm(prompt: str) -> str:
        calls.append(time.perf_counter())
        if len(calls) == 1:
            raise _openai_429({"retry-after": "0.3"})
        return '{"grade": 2, "reason": "on topic"}'

    with Judge(llm, model_id="m", retries=1, backoff=0.001, concurrency=1) as judge:
        res = judge.judge_pairs([("q1", "d1")], {"q1": "tea?"}, {"d1": "Tea is a drink."})
    assert res.report.complete and res.report.usage.retries == 1
    assert calls[1] - calls[0] >= 0.29  # the server's wait, not the 1 ms backoff

    # two sessions (two judges) on one budget: the limit holds for both together
    shared = Budget(max_calls=3)
    client = as_llm(lambda prompt: "ok", model_id="m")
    a, b = Session(client, CallPolicy(), budget=shared), Session(client, CallPolicy(), budget=shared)

    async def ask(session: Session) -> str:
        return (await session.call("hi")).text

    async def main() -> list[Any]:
        return await asyncio.gather(*(ask(s) for s in (a, b, a, b)), return_exceptions=True)

    got = asyncio.run(main())
    assert got.count("ok") == 3 and sum(isinstance(g, BudgetExceededError) for g in got) == 1
    assert a.stopped == b.stopped == "budget reached: max_calls=3"


def test_a_callees_own_timeout_error_is_its_error_not_ours() -> None:
    async def acall(x: str) -> str:
        raise TimeoutError("upstream read timed out")

    # on Python 3.10 asyncio.wait_for's timeout is a TimeoutError too, so a callee's cannot be told apart
    for timeout in (None, 5.0) if sys.version_info >= (3, 11) else (None,):
        block = asyncio.run(arun_block([Task("a", "x")], acall, Policy(timeout=timeout, retries=0)))
        assert block.failures()["a"] == Failure("error", "TimeoutError: upstream read timed out"), timeout


def test_a_budget_error_raised_inside_a_call_is_not_retried() -> None:
    budget = Budget(max_calls=1)

    def call(x: int) -> int:
        budget.admit()  # the callee spends the budget itself (as the judge's calls do)
        return x

    async def acall(x: int) -> int:
        return call(x)

    for run in (
        lambda: run_block([Task("a", 1), Task("b", 2)], call, Policy(concurrency=1, retries=3, backoff=0)),
        lambda: asyncio.run(arun_block([Task("c", 1)], acall, Policy(retries=3, backoff=0))),
    ):
        block = run()
        (failure,) = block.failures().values()
        assert failure == Failure("budget", "budget reached: max_calls=1", attempts=1)


def test_a_short_timeout_is_seen_on_time_by_the_watchdog() -> None:
    def call(x: int) -> int:
        time.sleep(0.6)
        return x

    t0 = time.perf_counter()
    block = run_block([Task("a", 1)], call, Policy(timeout=0.05, retries=0))
    assert block.failures()["a"] == Failure("timeout", "no result within 0.05 s")
    assert time.perf_counter() - t0 < 0.45  # the watchdog's wait is not a fixed 0.5 s
