"""Run a golden set through a retriever: :func:`run_retriever` / :func:`arun_retriever` -> :class:`~rankbridge.Run`.

What the runner guarantees
--------------------------
* **Every query ends in the run**, with hits or with an error message (it then scores 0 in
  :func:`~rankbridge.evaluate`); one flaky query never kills the run.
* **Bounded concurrency**: ``concurrency`` calls at a time, on asyncio for retrievers with a native
  ``aretrieve`` and on worker threads for sync ones.
* **Per-query timeout and retries** with exponential backoff (``backoff * 2**(attempt-1)`` seconds).
  A sync call that outlives its timeout cannot be stopped: it is abandoned (its late result ignored)
  and a fresh worker takes its place, so the run goes on.
* **Faults are recorded, classified and summarised**: error messages start with their kind --
  ``"timeout: "``, ``"error: "`` (the retriever raised) or ``"invalid result: "`` (None, wrong types,
  hits without ids) -- ``run.config["failures"]`` counts them, ``run.config["problems"]`` keeps per-query
  notes on what was repaired (a list longer than k, content-hash ids, retries), and :func:`summarize`
  says it in one paragraph.
* **Resume**: with ``checkpoint="run.jsonl"`` each finished query is appended (and flushed) as one JSON
  line in the layout of :func:`rankbridge.io.read_run_jsonl`; running again with the same file skips the
  queries already done (failed ones are retried unless ``retry_failed=False``), and a last line cut by a
  crash is dropped.
* **Ctrl-C** stops :func:`run_retriever` and returns what finished (``run.config["interrupted"]``); the
  queries not finished are missing from the run and score 0 until resumed.
* **Works inside a running event loop** (Jupyter, an async app): :func:`run_retriever` then drives async
  retrievers on a loop in a worker thread; in async code prefer ``await arun_retriever(...)``.

Examples
--------
>>> from rankbridge.runner import run_retriever, summarize
>>> def search(query, k):
...     return None if query == "boom" else ["d1", "d2"]
>>> run = run_retriever(search, {"q1": "scurvy cause", "q2": "boom"}, k=10, progress=False)
>>> run.ranking("q1"), run.errors["q2"]
(['d1', 'd2'], 'invalid result: the retriever returned None; expected a list of hits')
>>> print(summarize(run))
2 queries: 1 succeeded, 1 failed (invalid result: 1).
  e.g. query 'q2': invalid result: the retriever returned None; expected a list of hits
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import math
import os
import sys
import threading
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import IO, Any, Literal

from rankbridge.errors import InputError, ParseError, RankbridgeError
from rankbridge.retriever import normalize_hits
from rankbridge.types import GoldenSet, Hit, Query, Run, _check_id

__all__ = ["RunSummary", "arun_retriever", "run_retriever", "summarize"]

Mode = Literal["auto", "async", "sync"]
QueriesLike = GoldenSet | Mapping[Any, str] | Iterable[Query | tuple[Any, str]]

FAILURE_KINDS = ("timeout", "error", "invalid result")


# -- inputs ----------------------------------------------------------------------------------------
def _as_queries(queries: Any) -> list[tuple[str, str]]:
    if isinstance(queries, GoldenSet):
        items: Iterable[Any] = [(q.id, q.text) for q in queries.queries]
    elif isinstance(queries, Mapping):
        items = queries.items()
    elif isinstance(queries, (str, bytes)) or not isinstance(queries, Iterable):
        raise InputError(
            f"queries: expected a GoldenSet, a list of Query, or {{query_id: text}}, got {type(queries).__name__}"
        )
    else:
        items = queries
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        if isinstance(item, Query):
            qid, text = item.id, item.text
        elif isinstance(item, tuple) and len(item) == 2:
            qid, text = item
        else:
            raise InputError(f"queries[{i}]: expected a Query or a (query_id, text) pair, got {item!r}")
        qid = _check_id(qid, "query id", f"queries[{i}]")
        if not isinstance(text, str):
            raise InputError(f"query {qid!r}: expected the text as str, got {type(text).__name__} {text!r}")
        if qid in seen:
            raise InputError(f"query id {qid!r} appears twice in queries")
        seen.add(qid)
        out.append((qid, text))
    return out


def _check_options(k: Any, concurrency: Any, timeout: Any, retries: Any, backoff: Any) -> None:
    def _int(name: str, value: Any, low: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InputError(f"{name} must be an int >= {low}. Got {value!r} instead.")

    _int("k", k, 1)
    _int("concurrency", concurrency, 1)
    _int("retries", retries, 0)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise InputError(f"timeout must be a number of seconds > 0, or None. Got {timeout!r} instead.")
    if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or backoff < 0:
        raise InputError(f"backoff must be a number of seconds >= 0. Got {backoff!r} instead.")


# -- checkpoint ----------------------------------------------------------------------------------
def _hit_json(h: Hit) -> dict[str, Any]:
    d: dict[str, Any] = {"doc_id": h.doc_id}
    if h.score is not None:
        d["score"] = h.score
    if h.text is not None:
        d["text"] = h.text
    if h.metadata:
        d["metadata"] = dict(h.metadata)
    return d


def _load_checkpoint(
    path: Path, k: int, wanted: set[str], retry_failed: bool, run: Run, problems: dict[str, list[str]]
) -> tuple[int, bool]:
    """Fill ``run`` from a checkpoint; returns (queries resumed, whether the file must be rewritten)."""
    src = str(path)
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    entries: dict[str, tuple[int, dict[str, Any]]] = {}
    rewrite = False
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict) or "query_id" not in obj:
                raise ValueError("not a run line")
        except ValueError:
            if i == last:  # a line cut short by a crash: redo that query
                rewrite = True
                continue
            raise ParseError(
                "expected a JSON object with 'query_id' (is this a rankbridge checkpoint?)", source=src, line=i + 1
            ) from None
        if obj.get("k") not in (None, k):
            raise InputError(
                f"{src}:{i + 1}: the checkpoint was written with k={obj['k']}, this run asks k={k}; "
                "use the same k or another checkpoint file"
            )
        qid = str(obj["query_id"])
        if qid in entries:
            rewrite = True
        entries[qid] = (i, obj)
    resumed = 0
    for qid, (i, obj) in entries.items():
        if obj.get("error") and retry_failed:
            rewrite = True
            continue
        if qid not in wanted:
            continue
        try:
            if obj.get("error"):
                run.add_error(qid, str(obj["error"]), latency=obj.get("latency"))
            else:
                hits = [Hit(h["doc_id"], h.get("score"), h.get("text"), h.get("metadata")) for h in obj["hits"]]
                run.add(qid, hits, latency=obj.get("latency"))
        except (KeyError, TypeError, InputError) as exc:
            raise ParseError(f"unusable run line ({exc})", source=src, line=i + 1) from None
        if obj.get("notes"):
            problems[qid] = list(obj["notes"])
        resumed += 1
    if rewrite:
        from rankbridge.io._atomic import atomic_write

        with atomic_write(path) as out:
            for _i, obj in sorted(entries.values(), key=lambda e: e[0]):
                if obj.get("error") and retry_failed:
                    continue
                out.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    return resumed, rewrite


# -- progress bar ----------------------------------------------------------------------------------
class _Bar:
    """A rich progress bar when rich is installed and output is a terminal or Jupyter; otherwise nothing."""

    def __init__(self, enabled: bool, total: int, done: int, name: str) -> None:
        self._progress: Any = None
        self._task: Any = None
        if not enabled:
            return
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        except ImportError:
            return
        console = Console(stderr=True)
        if not (console.is_terminal or console.is_jupyter):
            return
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]} failed"),
            TimeRemainingColumn(),
            console=console,
        )
        self._task = self._progress.add_task(name, total=total, completed=done, failed=0)
        self._progress.start()

    def advance(self, failed: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=1, failed=failed)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


# -- shared bookkeeping ----------------------------------------------------------------------------
class _Job:
    __slots__ = ("attempt", "errors", "not_before", "qid", "text")

    def __init__(self, qid: str, text: str) -> None:
        self.qid = qid
        self.text = text
        self.attempt = 0
        self.not_before = 0.0
        self.errors: list[str] = []


class _Recorder:
    """Writes finished queries into the run, the checkpoint and the bar; decides retries. Thread-safe."""

    def __init__(
        self,
        run: Run,
        k: int,
        retries: int,
        backoff: float,
        checkpoint: IO[str] | None,
        bar: _Bar,
        problems: dict[str, list[str]],
    ) -> None:
        self.run = run
        self.k = k
        self.retries = retries
        self.backoff = backoff
        self.checkpoint = checkpoint
        self.bar = bar
        self.problems = problems
        self.lock = threading.Lock()
        self.closed = False
        self.failed = 0

    def _write(self, obj: dict[str, Any]) -> None:
        if self.checkpoint is not None:
            self.checkpoint.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
            self.checkpoint.flush()

    def success(self, job: _Job, hits: list[Hit], notes: list[str], latency: float) -> None:
        """Record hits (caller holds the lock)."""
        if self.closed:
            return
        if job.errors:
            notes = [*notes, f"succeeded on attempt {job.attempt + 1} after: {'; '.join(job.errors)}"]
        try:
            self.run.add(job.qid, hits, latency=latency)
        except InputError as exc:
            self._final(job, "invalid result", str(exc), latency)
            return
        if notes:
            self.problems[job.qid] = notes
        if self.checkpoint is not None:
            obj: dict[str, Any] = {"query_id": job.qid, "hits": [_hit_json(h) for h in self.run.hits(job.qid)]}
            obj["latency"] = latency
            obj["k"] = self.k
            if notes:
                obj["notes"] = notes
            self._write(obj)
        self.bar.advance(self.failed)

    def failure(self, job: _Job, kind: str, detail: str, latency: float, *, retryable: bool) -> bool:
        """Record a failed attempt (caller holds the lock); True when the job should be tried again."""
        if self.closed:
            return False
        if retryable and job.attempt < self.retries:
            job.errors.append(f"{kind}: {detail}")
            job.attempt += 1
            job.not_before = perf_counter() + self.backoff * 2 ** (job.attempt - 1)
            return True
        self._final(job, kind, detail, latency)
        return False

    def _final(self, job: _Job, kind: str, detail: str, latency: float) -> None:
        attempts = job.attempt + 1
        message = f"{kind}: {detail}" + (f" (after {attempts} attempts)" if attempts > 1 else "")
        self.run.add_error(job.qid, message, latency=latency)
        self.failed += 1
        self._write({"query_id": job.qid, "hits": [], "error": message, "latency": latency, "k": self.k})
        self.bar.advance(self.failed)


def _describe(exc: BaseException) -> str:
    cause = exc.__cause__ if isinstance(exc, RankbridgeError) and exc.__cause__ is not None else None
    text = str(exc) if cause is not None or isinstance(exc, RankbridgeError) else f"{type(exc).__name__}: {exc}"
    return text.rstrip() or type(exc).__name__


# -- the sync engine: worker threads + a watchdog for timeouts ------------------------------------
class _Slot:
    __slots__ = ("abandoned", "deadline", "job")

    def __init__(self) -> None:
        self.job: _Job | None = None
        self.deadline = math.inf
        self.abandoned = False


class _SyncEngine:
    def __init__(
        self,
        call: Callable[[str, int], Any],
        normalize: Callable[[Any, int], tuple[list[Hit], list[str]]],
        jobs: list[_Job],
        rec: _Recorder,
        concurrency: int,
        timeout: float | None,
    ) -> None:
        self.call = call
        self.normalize = normalize
        self.pending: deque[_Job] = deque(jobs)
        self.rec = rec
        self.concurrency = concurrency
        self.timeout = timeout
        self.cond = threading.Condition(rec.lock)
        self.slots: list[_Slot] = []
        self.live = 0
        self.stop = threading.Event()

    def _spawn(self) -> None:  # caller holds the lock
        slot = _Slot()
        self.slots.append(slot)
        self.live += 1
        threading.Thread(target=self._worker, args=(slot,), daemon=True, name="rankbridge-runner").start()

    def _worker(self, slot: _Slot) -> None:
        call, normalize, rec, k, timeout = self.call, self.normalize, self.rec, self.rec.k, self.timeout
        pending, lock = self.pending, self.rec.lock
        while True:
            with lock:
                if rec.closed or not pending:
                    self.live -= 1
                    self.slots.remove(slot)
                    self.cond.notify()
                    return
                job = pending.popleft()
                slot.job = job
            delay = job.not_before - perf_counter()
            if delay > 0 and self.stop.wait(delay):
                continue
            t0 = perf_counter()
            if timeout is not None:
                slot.deadline = t0 + timeout
            raw: Any = None
            exc: BaseException | None = None
            try:
                raw = call(job.text, k)
            except Exception as e:
                exc = e
            latency = perf_counter() - t0
            result: tuple[list[Hit], list[str]] | None = None
            bad: BaseException | None = None
            if exc is None:
                try:
                    result = normalize(raw, k)
                except Exception as e:
                    bad = e
            with lock:
                if slot.abandoned:  # the watchdog timed this call out and replaced this worker
                    return
                slot.job = None
                slot.deadline = math.inf
                if exc is not None:
                    if rec.failure(job, "error", _describe(exc), latency, retryable=True):
                        pending.appendleft(job)
                elif bad is not None:
                    rec.failure(job, "invalid result", _describe(bad), latency, retryable=False)
                elif result is not None:
                    rec.success(job, result[0], result[1], latency)

    def run(self) -> None:
        try:
            with self.cond:
                for _ in range(min(self.concurrency, len(self.pending))):
                    self._spawn()
                while self.live > 0 and not self.rec.closed:
                    now = perf_counter()
                    nxt = math.inf
                    if self.timeout is not None:
                        for slot in list(self.slots):
                            if slot.job is None:
                                continue
                            if slot.deadline <= now:
                                self._abandon(slot, slot.job)
                            else:
                                nxt = min(nxt, slot.deadline)
                    self.cond.wait(min(max(nxt - now, 0.001), 0.5))
        finally:
            with self.rec.lock:
                self.rec.closed = True
            self.stop.set()

    def _abandon(self, slot: _Slot, job: _Job) -> None:  # caller holds the lock
        slot.abandoned = True
        self.slots.remove(slot)
        self.live -= 1
        assert self.timeout is not None
        if self.rec.failure(job, "timeout", f"no result within {self.timeout:g} s", self.timeout, retryable=True):
            self.pending.appendleft(job)
        if self.pending:
            self._spawn()


# -- the async engine: worker coroutines on one loop ------------------------------------------------
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


async def _run_async(
    acall: Callable[[str, int], Awaitable[Any]],
    normalize: Callable[[Any, int], tuple[list[Hit], list[str]]],
    jobs: list[_Job],
    rec: _Recorder,
    concurrency: int,
    timeout: float | None,
) -> None:
    pending: deque[_Job] = deque(jobs)
    k = rec.k
    lock = rec.lock
    # Timeouts: on 3.11+ one watchdog task cancels calls past their deadline (a timer per call costs
    # ~10 us); on 3.10, asyncio.wait_for.
    watchdog = timeout is not None and hasattr(asyncio.Task, "uncancel")
    deadlines: dict[asyncio.Task[Any], float] = {}
    timed_out: set[asyncio.Task[Any]] = set()

    async def worker() -> None:
        me = asyncio.current_task()
        assert me is not None
        while pending and not rec.closed:
            job = pending.popleft()
            delay = job.not_before - perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            t0 = perf_counter()
            kind = ""
            detail = ""
            try:
                if timeout is None:
                    raw = await acall(job.text, k)
                elif watchdog:
                    deadlines[me] = t0 + timeout
                    try:
                        raw = await acall(job.text, k)
                    finally:
                        del deadlines[me]
                    if me in timed_out:  # the call swallowed the cancellation: still too late
                        raise asyncio.CancelledError
                else:
                    raw = await _with_timeout(acall(job.text, k), timeout)
            except asyncio.CancelledError:
                if me not in timed_out:
                    raise
                timed_out.discard(me)
                me.uncancel()  # type: ignore[attr-defined]  # 3.11+, checked above
                kind, detail = "timeout", f"no result within {timeout:g} s"
            except TimeoutError:
                kind, detail = "timeout", f"no result within {timeout:g} s"
            except Exception as e:
                kind, detail = "error", _describe(e)
            latency = perf_counter() - t0
            if kind:
                with lock:
                    if rec.failure(job, kind, detail, latency, retryable=True):
                        pending.appendleft(job)
                continue
            try:
                hits, notes = normalize(raw, k)
            except Exception as e:
                with lock:
                    rec.failure(job, "invalid result", _describe(e), latency, retryable=False)
                continue
            with lock:
                rec.success(job, hits, notes, latency)

    async def police() -> None:
        assert timeout is not None
        interval = min(timeout / 10, 0.05)
        while True:
            await asyncio.sleep(interval)
            now = perf_counter()
            for task, deadline in list(deadlines.items()):
                if deadline <= now and task not in timed_out:
                    timed_out.add(task)
                    task.cancel()

    guard = asyncio.ensure_future(police()) if watchdog else None
    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(pending)))))
    finally:
        if guard is not None:
            guard.cancel()
        with lock:
            rec.closed = True


def _run_async_in_thread(factory: Callable[[], Awaitable[None]], rec: _Recorder, concurrency: int) -> bool:
    """Run the async engine on a fresh loop in a daemon thread; True if Ctrl-C stopped it."""
    state: dict[str, Any] = {}
    started = threading.Event()
    done = threading.Event()

    def target() -> None:
        loop = asyncio.new_event_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(concurrency, "rankbridge-runner"))
        try:
            task: asyncio.Task[None] = loop.create_task(factory())  # type: ignore[arg-type]
            state["loop"], state["task"] = loop, task
            started.set()
            loop.run_until_complete(task)
        except BaseException as exc:
            state["exc"] = exc
        finally:
            started.set()
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()
            done.set()

    thread = threading.Thread(target=target, daemon=True, name="rankbridge-runner-loop")
    thread.start()
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        with rec.lock:
            rec.closed = True
        started.wait()
        if "task" in state:
            with contextlib.suppress(RuntimeError):
                state["loop"].call_soon_threadsafe(state["task"].cancel)
        done.wait(2.0)
        return True
    exc = state.get("exc")
    if exc is not None and not isinstance(exc, asyncio.CancelledError):
        raise exc
    return False


# -- public API ------------------------------------------------------------------------------------
@dataclass
class _Prepared:
    run: Run
    jobs: list[_Job]
    rec: _Recorder
    mode: str
    retriever: Any
    checkpoint_fh: IO[str] | None
    bar: _Bar
    problems: dict[str, list[str]] = field(default_factory=dict)


def _prepare(
    retriever: Any,
    queries: Any,
    *,
    k: int,
    concurrency: int,
    timeout: float | None,
    retries: int,
    backoff: float,
    progress: bool,
    checkpoint: str | os.PathLike[str] | None,
    retry_failed: bool,
    name: str | None,
    mode: Mode,
    id_from: Any,
    doc_map: Any,
    keep_text: bool,
) -> _Prepared:
    from rankbridge.adapters import adapt

    _check_options(k, concurrency, timeout, retries, backoff)
    if mode not in ("auto", "async", "sync"):
        raise InputError(f"mode must be 'auto', 'async' or 'sync'. Got {mode!r} instead.")
    items = _as_queries(queries)
    r = adapt(retriever, id_from=id_from, doc_map=doc_map, keep_text=keep_text)
    chosen = mode if mode != "auto" else ("async" if getattr(r, "native_async", False) else "sync")
    run_name = name or getattr(r, "name", None) or type(r).__name__
    run = Run(
        name=str(run_name),
        config={
            "retriever": f"{type(r).__name__}({getattr(r, 'name', '')})",
            "k": k,
            "concurrency": concurrency,
            "timeout": timeout,
            "retries": retries,
            "mode": chosen,
        },
    )
    problems: dict[str, list[str]] = {}
    resumed = 0
    fh: IO[str] | None = None
    if checkpoint is not None:
        path = Path(checkpoint)
        if path.exists() and path.stat().st_size > 0:
            resumed, _ = _load_checkpoint(path, k, {q for q, _ in items}, retry_failed, run, problems)
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a", encoding="utf-8")  # closed in _finish
        run.config["checkpoint"] = str(path)
    run.config["resumed"] = resumed
    done = set(run.query_ids())
    jobs = [_Job(q, t) for q, t in items if q not in done]
    bar = _Bar(progress and bool(jobs), len(items), len(items) - len(jobs), str(run_name))
    rec = _Recorder(run, k, retries, backoff, fh, bar, problems)
    return _Prepared(run, jobs, rec, chosen, r, fh, bar, problems)


def _calls(p: _Prepared) -> tuple[Any, Callable[[Any, int], tuple[list[Hit], list[str]]]]:
    from rankbridge.adapters import AdapterBase

    r = p.retriever
    keep_text = True
    if isinstance(r, AdapterBase):
        return (r._acall if p.mode == "async" else r._call), r._normalize

    def normalize(raw: Any, k: int) -> tuple[list[Hit], list[str]]:
        return normalize_hits(raw, k=k, keep_text=keep_text)

    return (r.aretrieve if p.mode == "async" else r.retrieve), normalize


def _finish(p: _Prepared, interrupted: bool, total: int) -> Run:
    p.bar.close()
    if p.checkpoint_fh is not None:
        with p.rec.lock:
            p.checkpoint_fh.close()
    run = p.run
    with p.rec.lock:
        p.rec.closed = True
        failures = Counter(_kind(msg) for msg in run.errors.values())
        run.config["failures"] = dict(failures)
        run.config["problems"] = dict(p.problems)
        unfinished = total - len(run.query_ids())
        if interrupted or unfinished:
            run.config["interrupted"] = True
            run.config["unfinished"] = unfinished
    return run


def run_retriever(
    retriever: Any,
    queries: QueriesLike,
    *,
    k: int = 10,
    concurrency: int = 8,
    timeout: float | None = 60.0,
    retries: int = 2,
    backoff: float = 0.5,
    progress: bool = True,
    checkpoint: str | os.PathLike[str] | None = None,
    retry_failed: bool = True,
    name: str | None = None,
    mode: Mode = "auto",
    id_from: Any = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    keep_text: bool = True,
) -> Run:
    """Retrieve the top ``k`` for every query and return them as a :class:`~rankbridge.Run`.

    Parameters
    ----------
    retriever:
        A LlamaIndex retriever / index / query engine, a LangChain retriever / vector store, a function
        ``f(query, k)``, or a :class:`~rankbridge.retriever.Retriever` (see :func:`rankbridge.adapt`).
    queries:
        A :class:`~rankbridge.GoldenSet`, a list of :class:`~rankbridge.Query` (or ``(id, text)`` pairs),
        or ``{query_id: text}``.
    k:
        Hits per query; a longer list is cut (and noted).
    concurrency:
        Calls in flight at once.
    timeout:
        Seconds one attempt may take (``None``: no limit).
    retries:
        Further attempts after an exception or a timeout (an invalid result is not retried).
    backoff:
        Seconds before the first retry; doubled for each further one.
    progress:
        Show a progress bar (needs ``rich``; shown only in a terminal or Jupyter).
    checkpoint:
        A JSONL file to append each finished query to, and to resume from (see the module docstring).
    retry_failed:
        On resume, run again the queries the checkpoint records as failed.
    name:
        The run's name (default: the retriever's).
    mode:
        ``"auto"`` (asyncio when the retriever has a native ``aretrieve``, threads otherwise),
        ``"async"`` or ``"sync"``.
    id_from, doc_map, keep_text:
        Doc-id resolution for objects the runner wraps (see :mod:`rankbridge.retriever`).

    Returns
    -------
    Run
        Hits in the order the retriever returned them, per-query latency (seconds, of the last attempt),
        errors, and ``config`` with the settings, ``failures`` (kind -> count), ``problems``
        (qid -> notes), ``resumed`` and, after Ctrl-C, ``interrupted``/``unfinished``.

    Examples
    --------
    >>> from rankbridge.runner import run_retriever
    >>> def search(query, k):
    ...     return [("d1", 2.0), ("d2", 1.0)] if "scurvy" in query else []
    >>> run = run_retriever(search, {"q1": "scurvy?", "q2": "other"}, k=5, progress=False)
    >>> run.ranking("q1"), run.ranking("q2"), sorted(run.latency)
    (['d1', 'd2'], [], ['q1', 'q2'])
    """
    p = _prepare(
        retriever, queries, k=k, concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
        progress=progress, checkpoint=checkpoint, retry_failed=retry_failed, name=name, mode=mode,
        id_from=id_from, doc_map=doc_map, keep_text=keep_text,
    )  # fmt: skip
    total = len(p.jobs) + p.run.config["resumed"]
    interrupted = False
    call, normalize = _calls(p)
    try:
        if not p.jobs:
            pass
        elif p.mode == "async":
            interrupted = _run_async_in_thread(
                lambda: _run_async(call, normalize, p.jobs, p.rec, concurrency, timeout), p.rec, concurrency
            )
        else:
            try:
                _SyncEngine(call, normalize, p.jobs, p.rec, concurrency, timeout).run()
            except KeyboardInterrupt:
                interrupted = True
    finally:
        run = _finish(p, interrupted, total)
    return run


async def arun_retriever(
    retriever: Any,
    queries: QueriesLike,
    *,
    k: int = 10,
    concurrency: int = 8,
    timeout: float | None = 60.0,
    retries: int = 2,
    backoff: float = 0.5,
    progress: bool = True,
    checkpoint: str | os.PathLike[str] | None = None,
    retry_failed: bool = True,
    name: str | None = None,
    mode: Mode = "auto",
    id_from: Any = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    keep_text: bool = True,
) -> Run:
    """Async :func:`run_retriever`, on the caller's event loop (same parameters and result).

    Async retrievers run as tasks on the running loop; sync ones on worker threads. Cancelling the
    awaiting task stops the run and re-raises ``CancelledError``; with a ``checkpoint`` what finished is
    kept and a later call resumes.

    Examples
    --------
    >>> import asyncio
    >>> from rankbridge.runner import arun_retriever
    >>> async def search(query, k):
    ...     await asyncio.sleep(0)
    ...     return ["d1", "d2", "d3"][:k]
    >>> run = asyncio.run(arun_retriever(search, {"q1": "anything"}, k=2, progress=False))
    >>> run.ranking("q1")
    ['d1', 'd2']
    """
    p = _prepare(
        retriever, queries, k=k, concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
        progress=progress, checkpoint=checkpoint, retry_failed=retry_failed, name=name, mode=mode,
        id_from=id_from, doc_map=doc_map, keep_text=keep_text,
    )  # fmt: skip
    total = len(p.jobs) + p.run.config["resumed"]
    call, normalize = _calls(p)
    try:
        if not p.jobs:
            pass
        elif p.mode == "async":
            await _run_async(call, normalize, p.jobs, p.rec, concurrency, timeout)
        else:
            engine = _SyncEngine(call, normalize, p.jobs, p.rec, concurrency, timeout)
            await asyncio.get_running_loop().run_in_executor(None, engine.run)
    except asyncio.CancelledError:
        with p.rec.lock:
            p.rec.closed = True
        _finish(p, True, total)
        raise
    return _finish(p, False, total)


# -- summary ---------------------------------------------------------------------------------------
def _kind(message: str) -> str:
    for kind in FAILURE_KINDS:
        if message.startswith(kind + ":"):
            return kind
    return "other"


@dataclass(frozen=True)
class RunSummary:
    """How a run went: how many queries succeeded, failed (and why), were repaired or left unfinished.

    Attributes
    ----------
    failures:
        Failure kind (``"timeout"``, ``"error"``, ``"invalid result"``, ``"other"``) -> count.
    examples:
        Failure kind -> the message of its first query, as an example.
    with_notes:
        Queries whose result was repaired or guessed at (see ``run.config["problems"]``).
    """

    name: str
    queries: int
    succeeded: int
    failed: int
    failures: dict[str, int]
    examples: dict[str, str]
    with_notes: int
    duplicates: int
    interrupted: bool
    unfinished: int
    resumed: int
    latency_median: float | None

    def __str__(self) -> str:
        parts = [f"{self.queries} queries: {self.succeeded} succeeded, {self.failed} failed"]
        if self.failures:
            parts[0] += " (" + ", ".join(f"{k}: {n}" for k, n in sorted(self.failures.items())) + ")"
        if self.unfinished:
            parts.append(f"{self.unfinished} unfinished (interrupted; resume with the same checkpoint)")
        if self.resumed:
            parts.append(f"{self.resumed} resumed from the checkpoint")
        if self.with_notes:
            parts.append(f"{self.with_notes} with notes (see run.config['problems'])")
        if self.duplicates:
            parts.append(f"{self.duplicates} duplicate hits dropped")
        text = "; ".join(parts) + "."
        for _, msg in sorted(self.examples.items()):
            text += f"\n  e.g. {msg}"
        return text


def summarize(run: Run) -> RunSummary:
    """Summarise a run produced by the runner (any :class:`~rankbridge.Run` works).

    Examples
    --------
    >>> from rankbridge import Run
    >>> run = Run(name="x")
    >>> run.add("q1", ["d1"])
    >>> run.add_error("q2", "timeout: no result within 5 s")
    >>> s = summarize(run)
    >>> s.failures, s.succeeded
    ({'timeout': 1}, 1)
    """
    failures: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for qid in sorted(run.errors):
        kind = _kind(run.errors[qid])
        failures[kind] += 1
        examples.setdefault(kind, f"query {qid!r}: {run.errors[qid]}")
    lat = sorted(run.latency.values())
    median = None
    if lat:
        mid = len(lat) // 2
        median = lat[mid] if len(lat) % 2 else (lat[mid - 1] + lat[mid]) / 2
    problems = run.config.get("problems") or {}
    unfinished = int(run.config.get("unfinished", 0))
    return RunSummary(
        name=run.name,
        queries=len(run.query_ids()) + unfinished,
        succeeded=sum(1 for q in run if q not in run.errors),
        failed=len(run.errors),
        failures=dict(failures),
        examples=examples,
        with_notes=len(problems),
        duplicates=sum(run.duplicates.values()),
        interrupted=bool(run.config.get("interrupted", False)),
        unfinished=unfinished,
        resumed=int(run.config.get("resumed", 0)),
        latency_median=median,
    )
