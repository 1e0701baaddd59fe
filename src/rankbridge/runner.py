"""Run a golden set through a retriever: :func:`run_retriever` / :func:`arun_retriever` -> :class:`~rankbridge.Run`.

What the runner guarantees
--------------------------
* **Every query ends in the run**, with hits or with an error message (it then scores 0 in
  :func:`~rankbridge.evaluate`); one flaky query never kills the run.
* **Bounded concurrency**: ``concurrency`` calls at a time, on asyncio for retrievers with a native
  ``aretrieve`` and on worker threads for sync ones.
* **Per-query timeout and retries** on the batch engine (:mod:`rankbridge.batch`): exponential backoff
  (``backoff * 2**(attempt-1)`` seconds, stretched by up to 10 % of jitter), at least the ``Retry-After``
  of a rate-limit error. A sync call that outlives its timeout cannot be stopped: it is abandoned (its
  late result ignored) and a fresh worker takes its place, so the run goes on.
* **Faults are recorded, classified and summarised**: each failure is a typed record
  (:class:`rankbridge.batch.Failure`) whose kind leads its message -- ``"timeout: "``, ``"error: "``
  (the retriever raised) or ``"invalid result: "`` (None, wrong types, hits without ids) --
  ``run.config["failures"]`` counts them by kind, ``run.config["problems"]`` keeps per-query
  notes on what was repaired (a list longer than k, content-hash ids, retries), and :func:`summarize`
  says it in one paragraph.
* **Resume**: with ``checkpoint="run.jsonl"`` each finished query is appended (and flushed) as one JSON
  line in the layout of :func:`rankbridge.io.read_run_jsonl`; running again with the same file skips the
  queries already done (failed ones are retried unless ``retry_failed=False``), and a last line cut by a
  crash is dropped.
* **Loud when the run is broken**: when the first 5 queries to finish all fail with the same error (no doc
  id, an unreachable store), the run stops and raises :class:`~rankbridge.RetrievalError` with that
  error (``keep_going=True`` runs on); with a golden set, doc ids that match nothing it knows are found
  on the first queries, before the run (see ``check_ids``).
* **No hang**: a checkpoint that cannot be written (a full disk) stops the run at once with
  :class:`~rankbridge.errors.CheckpointError`, which carries what finished; a line ``json`` cannot encode
  as is (a tuple key in metadata) is written with its metadata made encodable; a retriever raising
  ``SystemExit`` fails its query; calls that hang past their timeout hold at most ``max(16, 2 *
  concurrency)`` threads, after which the remaining queries fail as not run.
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
import copy
import json
import os
import threading
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from rankbridge import apps, batch
from rankbridge.batch import BlockResult, Failure, Outcome, Policy, Task
from rankbridge.errors import (
    CheckpointError,
    IdMismatchError,
    InputError,
    ParseError,
    RetrievalError,
    RunCoverageWarning,
)
from rankbridge.evaluate import count_clauses
from rankbridge.frameworks import DEFAULT_K, AdapterBase, Staged, adapt
from rankbridge.frameworks.base import ignored_k
from rankbridge.idmatch import check_results, check_run
from rankbridge.io._atomic import atomic_write
from rankbridge.retriever import _normalize, _spec_name
from rankbridge.types import GoldenSet, Hit, Query, Run, _check_id

__all__ = ["RunSummary", "arun_retriever", "run_retriever", "summarize"]

Mode = Literal["auto", "async", "sync"]
QueriesLike = GoldenSet | Mapping[Any, str] | Iterable[Query | tuple[Any, str]]

#: The kinds a query's failure has (:class:`rankbridge.batch.Failure`); ``"other"`` for unknown messages.
FAILURE_KINDS = (batch.TIMEOUT, batch.ERROR, batch.INVALID)
#: The run stops (unless ``keep_going=True``) when its first this-many finished queries all failed alike.
FAIL_FAST = 5
#: Queries retrieved before the run to check that their doc ids are the ones the golden set judges.
ID_PROBE = 5

#: What the engines get from normalising one raw result: final hits, notes, and hits per other stage (kept
#: compact where they can be: the run stores them without a Hit object per hit).
Normalized = tuple[Sequence[Hit], list[str], dict[str, Sequence[Hit]]]


# -- inputs ----------------------------------------------------------------------------------------
def _as_queries(queries: Any) -> list[tuple[str, str]]:
    if isinstance(queries, GoldenSet):
        items: Iterable[Any] = [(q.id, q.text) for q in queries.queries]
    elif isinstance(queries, Mapping):
        if set(map(type, queries)) <= {str} and set(map(type, queries.values())) <= {str}:
            return list(queries.items())  # the common case, checked by C-level passes: str ids, unique as keys
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

    if k is not None:
        _int("k", k, 1)
    _int("concurrency", concurrency, 1)
    _int("retries", retries, 0)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise InputError(f"timeout must be a number of seconds > 0, or None. Got {timeout!r} instead.")
    if isinstance(backoff, bool) or not isinstance(backoff, (int, float)) or backoff < 0:
        raise InputError(f"backoff must be a number of seconds >= 0. Got {backoff!r} instead.")


# -- checkpoint ----------------------------------------------------------------------------------
def _hits_of(items: list[dict[str, Any]]) -> list[Hit]:
    return [Hit(h["doc_id"], h.get("score"), h.get("text"), h.get("metadata")) for h in items]


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
    path: Path, k: int | None, wanted: set[str], retry_failed: bool, run: Run, problems: dict[str, list[str]]
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
                run.add(qid, _hits_of(obj["hits"]), latency=obj.get("latency"))
                for stage, items in (obj.get("stages") or {}).items():
                    _stage_run(run, stage).add(qid, _hits_of(items), latency=obj.get("latency"))
        except (KeyError, TypeError, AttributeError, InputError) as exc:
            raise ParseError(f"unusable run line ({exc})", source=src, line=i + 1) from None
        if obj.get("notes"):
            problems[qid] = list(obj["notes"])
        resumed += 1
    if rewrite:
        with atomic_write(path) as out:
            for _i, obj in sorted(entries.values(), key=lambda e: e[0]):
                if obj.get("error") and retry_failed:
                    continue
                out.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    return resumed, rewrite


def _stage_run(run: Run, stage: str) -> Run:
    found = run.stages.get(stage)
    if found is None:
        found = run.stages[stage] = Run(name=f"{run.name}:{stage}", config={**run.config, "stage": stage})
    return found


# -- progress bar ----------------------------------------------------------------------------------
class _Bar:
    """A rich progress bar when rich is installed and output is a terminal or Jupyter; otherwise nothing."""

    def __init__(self, enabled: bool, total: int, done: int, name: str) -> None:
        self._progress: Any = None
        self._task: Any = None
        self.shown = False  # read per query: without a bar, the recorder makes no call to advance it
        if not enabled:
            return
        try:  # lazy: rich is an extra, needed only for a bar on a terminal
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
        self.shown = True

    def advance(self, failed: int) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=1, failed=failed)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


# -- shared bookkeeping ----------------------------------------------------------------------------
class _Recorder:
    """The engine's sink: writes finished queries into the run, the checkpoint and the bar.

    Called by :mod:`rankbridge.batch` with ``control.lock`` held; stops the batch (``control.closed``) when
    the first queries all fail alike or the checkpoint cannot be written.
    """

    def __init__(
        self,
        run: Run,
        k: int | None,
        checkpoint: IO[str] | None,
        bar: _Bar,
        problems: dict[str, list[str]],
        failures: dict[str, Failure],
    ) -> None:
        self.run = run
        self.k = k  # what each call asks for; None: as the retriever is configured
        self.checkpoint_k = run.config.get("k")
        self.checkpoint = checkpoint
        self.bar = bar
        self.problems = problems
        #: qid -> why it failed (typed), for every failed query of the run (resumed ones too)
        self.failures = failures
        self.control = batch.Control()
        self.lock = self.control.lock
        self.failed = 0
        self.succeeded = 0
        self.keep_going = True
        #: set when the run stopped early because its first queries all failed alike: (count, message)
        self.aborted: tuple[int, str] | None = None
        self._first_failures: Counter[str] = Counter()
        #: why the checkpoint could not be written; the run stops when it is set
        self.write_error: str | None = None

    @property
    def closed(self) -> bool:
        return self.control.closed

    def close(self) -> None:
        with self.lock:
            self.control.closed = True

    def _write(self, obj: dict[str, Any]) -> None:
        """Append one line to the checkpoint (caller holds the lock); never raises into an engine.

        A line that ``json`` cannot encode as is (a tuple key or a cycle in a hit's metadata) is written
        with its metadata made encodable (:func:`_jsonable`). A failing write (a full disk) stops the run:
        the engine sees ``closed`` and ``_check_outcome`` raises :class:`CheckpointError` with the run.
        """
        if self.checkpoint is None or self.write_error is not None:
            return
        try:
            try:
                line = json.dumps(obj, ensure_ascii=False, default=str)
            except (TypeError, ValueError, RecursionError):
                line = json.dumps(_jsonable(obj), ensure_ascii=False, default=str)
            self.checkpoint.write(line + "\n")
            self.checkpoint.flush()
        except Exception as exc:  # OSError (ENOSPC, EIO), or anything else: the run cannot be resumed past here
            self.write_error = f"{type(exc).__name__}: {exc}"
            self.control.closed = True

    def __call__(self, outcome: Outcome) -> None:
        """Record one finished query (caller holds the lock)."""
        if outcome.failure is not None:
            self._final(outcome.key, outcome.failure, outcome.latency)
            return
        qid, latency, retried = outcome.key, outcome.latency, outcome.retried
        hits, notes, stages = outcome.value
        if retried:
            done = "; ".join(f.text for f in retried)
            notes = [*notes, f"succeeded on attempt {len(retried) + 1} after: {done}"]
        try:
            self.run.add(qid, hits, latency=latency)
            for stage, stage_hits in stages.items():
                _stage_run(self.run, stage).add(qid, stage_hits, latency=latency)
        except InputError as exc:
            self._final(qid, Failure(batch.INVALID, str(exc), len(retried) + 1), latency)
            return
        self.succeeded += 1
        if notes:
            self.problems[qid] = notes
        if self.checkpoint is not None:
            obj: dict[str, Any] = {"query_id": qid, "hits": [_hit_json(h) for h in self.run.hits(qid)]}
            if stages:
                obj["stages"] = {st: [_hit_json(h) for h in self.run.stages[st].hits(qid)] for st in stages}
            obj["latency"] = latency
            obj["k"] = self.checkpoint_k
            if notes:
                obj["notes"] = notes
            self._write(obj)
        if self.bar.shown:
            self.bar.advance(self.failed)

    def _final(self, qid: str, failure: Failure, latency: float) -> None:
        message = failure.message
        self.run.add_error(qid, message, latency=latency)
        self.failures[qid] = failure
        self.failed += 1
        self._write({"query_id": qid, "hits": [], "error": message, "latency": latency, "k": self.checkpoint_k})
        self.bar.advance(self.failed)
        if not self.keep_going and self.succeeded == 0:
            self._first_failures[failure.text] += 1
            if self.failed >= FAIL_FAST and len(self._first_failures) == 1:
                self.aborted = (self.failed, failure.text)
                self.control.closed = True  # the engine stops taking queries; calls in flight are ignored


def _jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` with mapping keys made strings and cycles or very deep nesting cut, for a checkpoint line."""
    if depth > 50:
        return repr(value)[:200]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    return value


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
        rec.close()
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
    tasks: list[Task]
    rec: _Recorder
    policy: Policy
    mode: str
    retriever: Any
    checkpoint_fh: IO[str] | None
    bar: _Bar
    golden: GoldenSet | None
    check_ids: bool
    explicit_id_from: bool
    problems: dict[str, list[str]]
    #: queries in all: to run, and resumed from the checkpoint
    total: int
    #: the engine's call (query text -> raw result) and convert (raw result -> hits, notes, stages)
    call: Callable[[str], Any]
    convert: Callable[[Any], Normalized]


def _call_k(r: Any, k: int | None) -> tuple[int | None, int | None, int | None]:
    """(k passed to each call, the retriever's own setting, the k the run records).

    An adapter takes ``k=None`` as "as the app configured it" (and picks a default itself where a call
    needs a number); a bare :class:`~rankbridge.retriever.Retriever` always gets a number. A recorded
    ``None`` means the lists were kept as the retriever returned them, uncut.
    """
    if not isinstance(r, AdapterBase):
        return (k or DEFAULT_K), None, (k or DEFAULT_K)
    return k, r.configured_k, r.depth(k)


def _prepare(
    retriever: Any,
    queries: Any,
    *,
    retrieval: Any,
    k: int | None,
    concurrency: int,
    timeout: float | None,
    retries: int | None,
    backoff: float,
    progress: bool,
    checkpoint: str | os.PathLike[str] | None,
    retry_failed: bool,
    name: str | None,
    mode: Mode,
    id_from: Any,
    doc_map: Any,
    keep_text: bool,
    keep_going: bool,
    check_ids: bool,
) -> _Prepared:
    """Check the options and set the run up: its checkpoint read, its tasks, recorder, calls."""
    if retrieval is not None:
        raise InputError(
            f"retrieval={retrieval!r} chooses among an app's retrievals; {type(retriever).__name__} is a retriever"
        )
    retries = 2 if retries is None else retries
    _check_options(k, concurrency, timeout, retries, backoff)
    if mode not in ("auto", "async", "sync"):
        raise InputError(f"mode must be 'auto', 'async' or 'sync'. Got {mode!r} instead.")
    policy = Policy(concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff)
    items = _as_queries(queries)
    r = adapt(retriever, id_from=id_from, doc_map=doc_map, keep_text=keep_text)
    if isinstance(r, AdapterBase) and r is retriever:
        r = copy.copy(r)  # an id source found by the probe must not change the caller's adapter
    chosen = mode if mode != "auto" else ("async" if getattr(r, "native_async", False) else "sync")
    run_name = name or getattr(r, "name", None) or type(r).__name__
    call_k, configured_k, run_k = _call_k(r, k)
    run = Run(
        name=str(run_name),
        config={
            "retriever": f"{type(r).__name__}({getattr(r, 'name', '')})",
            "k": run_k,
            "k_requested": k,
            "configured_k": configured_k,
            "concurrency": concurrency,
            "timeout": timeout,
            "retries": retries,
            "mode": chosen,
        },
    )
    if isinstance(r, AdapterBase):
        run.config["id_from"] = _id_label(r.id_from)
    problems: dict[str, list[str]] = {}
    failures: dict[str, Failure] = {}
    resumed = 0
    fh: IO[str] | None = None
    if checkpoint is not None:
        path = Path(checkpoint)
        if path.exists() and path.stat().st_size > 0:
            resumed, _ = _load_checkpoint(path, run_k, {q for q, _ in items}, retry_failed, run, problems)
            # the file holds messages only: their kinds are read back once, here
            failures.update({qid: Failure.parse(msg) for qid, msg in run.errors.items()})
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "a", encoding="utf-8")  # closed in _finish
        run.config["checkpoint"] = str(path)
    run.config["resumed"] = resumed
    done = set(run.query_ids())
    tasks = [Task(q, t) for q, t in items if q not in done]
    bar = _Bar(progress and bool(tasks), len(items), len(items) - len(tasks), str(run_name))
    rec = _Recorder(run, call_k, fh, bar, problems, failures)
    rec.keep_going = keep_going
    golden = queries if isinstance(queries, GoldenSet) else None
    call, convert = _calls(r, chosen, call_k)
    return _Prepared(
        run, tasks, rec, policy, chosen, r, fh, bar, golden, check_ids, id_from is not None, problems,
        len(tasks) + resumed, call, convert,
    )  # fmt: skip


def _id_label(specs: tuple[Any, ...]) -> str | list[str]:
    names = [_spec_name(s) for s in specs]
    return names[0] if len(names) == 1 else names


def _calls(r: Any, mode: str, k: int | None) -> tuple[Callable[[str], Any], Callable[[Any], Normalized]]:
    """The engine's call (query text -> raw result) and convert (raw result -> hits, notes, stages).

    The retriever's latency is the call alone; normalising its result is timed apart.
    """
    if isinstance(r, AdapterBase):
        fetch = r.afetch if mode == "async" else r.fetch
        normalize = r.normalize
        return (lambda text: fetch(text, k)), (lambda raw: normalize(raw, k))
    retrieve = r.aretrieve if mode == "async" else r.retrieve
    limit = k if k is not None else 1 << 62

    def convert(raw: Any) -> Normalized:
        hits, notes = _normalize(raw, k=limit, id_from=None, doc_map=None, keep_text=True)
        return hits, notes, {}

    return (lambda text: retrieve(text, k)), convert


def _run_sync_engine(p: _Prepared, call: Callable[[str], Any], convert: Callable[[Any], Normalized]) -> None:
    batch.run_sync(p.tasks, call, p.rec, p.policy, convert=convert, control=p.rec.control, callee="the retriever")


async def _run_async_engine(
    p: _Prepared, acall: Callable[[str], Awaitable[Any]], convert: Callable[[Any], Normalized]
) -> None:
    await batch.run_async(
        p.tasks, acall, p.rec, p.policy, convert=convert, control=p.rec.control, callee="the retriever"
    )


# -- the id probe: are the retrieved ids the ones the golden set judges? ------------------------------
def _probe_tasks(p: _Prepared) -> list[Task]:
    if p.golden is None or not p.check_ids or not isinstance(p.retriever, AdapterBase):
        return []
    if p.retriever.doc_map is not None:  # the ids to check are doc_map's: the finished run is checked instead
        return []
    # copies: the run proper counts its own attempts on the originals
    return [Task(t.key, t.payload) for t in p.tasks[:ID_PROBE]]


def _probe_policy(p: _Prepared, n: int) -> Policy:
    # one attempt each: a failing query fails again in the run proper
    return Policy(concurrency=min(n, 8), timeout=p.policy.timeout, retries=0)


def _raw_results(raw: Any) -> list[Any]:
    if isinstance(raw, Staged):
        raw = raw.final
    return list(raw) if isinstance(raw, (list, tuple)) else []


def _apply_probe(p: _Prepared, tasks: list[Task], block: BlockResult) -> None:
    """Decide the id source from the probe's raw results; raise before the run when nothing matches."""
    assert p.golden is not None
    got = block.values()
    raws = [got[t.key] for t in tasks if t.key in got]
    r = p.retriever
    results = [item for raw in raws for item in _raw_results(raw)]
    report = check_results(results, p.golden, id_from=r.id_from)
    if report.status in ("ok", "unchecked"):
        return
    if report.status == "resolved" and not p.explicit_id_from:
        assert report.chosen is not None
        r.id_from = (report.chosen,)
        p.run.config["id_from"] = report.chosen
        p.run.config["id_resolution"] = {
            "from": report.current,
            "to": report.chosen,
            "auto": True,
            "shares": {s: round(v, 4) for s, v in report.shares.items()},
            "probe_queries": len(raws),
            "message": report.message(),
        }
        return
    hint = f" Pass id_from={report.chosen!r}." if report.status == "resolved" else ""
    raise IdMismatchError(
        f"run_retriever: the retrieved doc ids do not match the golden set {p.golden.name!r} (checked on the first "
        f"{len(raws)} queries, before the run): {report.message()}{hint} (check_ids=False runs anyway.)",
        suggestion=report.chosen,
        report=report,
    )


def _reuse_probe(p: _Prepared, block: BlockResult) -> None:
    """Record the probe's successful queries in the run, so that the run proper does not ask them again.

    A retriever that calls an LLM (query rewriting, HyDE) pays each question once, and a scripted one is not
    shifted by the extra calls. The raw results are converted now, under the id source the probe chose, and
    timed as the run proper times them (the call alone). A query that failed in the probe (one attempt, no
    retries) is left to the run proper, which asks it again with its retries.
    """
    outcomes: list[Outcome] = []
    for o in block.outcomes:
        if o.failure is not None:
            continue
        try:
            outcomes.append(Outcome(o.key, p.convert(o.value), None, o.latency))
        except Exception as exc:  # as the engine records a result it cannot convert: invalid, not retried
            outcomes.append(Outcome(o.key, None, Failure(batch.INVALID, batch.describe(exc)), o.latency))
    with p.rec.lock:
        for outcome in outcomes:
            if not p.rec.control.closed:
                p.rec(outcome)
    done = {o.key for o in outcomes}
    p.tasks[:] = [t for t in p.tasks if t.key not in done]


def _probe_sync(p: _Prepared, call: Callable[[str], Any]) -> None:
    tasks = _probe_tasks(p)
    if tasks:
        block = batch.run_block(tasks, call, _probe_policy(p, len(tasks)))
        _apply_probe(p, tasks, block)
        _reuse_probe(p, block)


async def _probe_async(p: _Prepared, acall: Callable[[str], Awaitable[Any]]) -> None:
    tasks = _probe_tasks(p)
    if tasks:
        block = await batch.arun_block(tasks, acall, _probe_policy(p, len(tasks)))
        _apply_probe(p, tasks, block)
        _reuse_probe(p, block)


def _finish(p: _Prepared, interrupted: bool, total: int) -> Run:
    p.bar.close()
    if p.checkpoint_fh is not None:
        with p.rec.lock:
            try:
                p.checkpoint_fh.close()
            except OSError as exc:  # the last flush: a full disk shows here when the lines were buffered
                if p.rec.write_error is None:
                    p.rec.write_error = f"{type(exc).__name__}: {exc}"
    run = p.run
    with p.rec.lock:
        p.rec.control.closed = True
        typed = p.rec.failures  # every failed query has its record; a message is parsed only as a fallback
        failures = Counter((typed.get(qid) or Failure.parse(msg)).kind for qid, msg in run.errors.items())
        run.config["failures"] = dict(failures)
        run.config["problems"] = dict(p.problems)
        unfinished = total - len(run.query_ids())
        if p.rec.aborted is not None:
            run.config["aborted"] = p.rec.aborted[1]
        elif interrupted or unfinished:
            run.config["interrupted"] = True
        if interrupted or unfinished:
            run.config["unfinished"] = unfinished
    for stage in run.stages.values():
        stage.config.update({key: run.config[key] for key in ("failures", "problems") if key in run.config})
    return run


def _check_outcome(p: _Prepared, run: Run, caller: str) -> Run:
    if p.rec.write_error is not None:
        done = len(run.query_ids())
        raise CheckpointError(
            f"{caller}: could not write the checkpoint {run.config.get('checkpoint')}: {p.rec.write_error}. "
            f"The run stopped; the {done} queries that finished are on this exception's .run, and a call with "
            "the same checkpoint resumes after the last line written",
            run=run,
        )
    _refuse_suspicious(
        run,
        p.golden,
        check_ids=p.check_ids,
        keep_going=p.rec.keep_going,
        aborted=p.rec.aborted,
        failures=p.rec.failures,
        caller=caller,
    )
    return _note_short_lists(p, run, caller)


def _note_short_lists(p: _Prepared, run: Run, caller: str) -> Run:
    """Note (in ``run.config["short_lists"]``) a run whose every list is shorter than the k it records, when
    the retriever's own top-k is the likely cause; with an explicit ``k``, a :class:`RunCoverageWarning` too.

    The likely cause is known for a framework retriever that ``k`` does not reach (no ``similarity_top_k``, no
    ``k`` field or ``search_kwargs``: :meth:`~rankbridge.frameworks.base.AdapterBase.k_cap`). A function
    ``f(query, k)`` may ignore its k or sit on a store that holds fewer matches: every list of one length
    (over two queries or more) is the sign of a top-k of its own. Quiet otherwise -- lists shorter because
    the store holds fewer matches, or as long as the golden set's corpus -- since
    :func:`~rankbridge.evaluate` already notes a cut-off deeper than every list. The list measured is the one
    ``k`` sets: a query engine's or a compression retriever's ``"retrieved"`` stage (a reranker's ``top_n``
    shortens the final list on purpose).
    """
    k = run.config.get("k")
    measured = run.stages.get("retrieved", run)
    # the entries' own lengths: reading run[q] would make Hit objects of the compact lists
    lengths = [len(hits) for q, hits in measured._entries.items() if q not in run.errors]
    deepest = max(lengths, default=0)
    if not isinstance(k, int) or not deepest or deepest >= k:
        return run
    if p.golden is not None and p.golden.corpus and deepest >= len(p.golden.corpus):
        return run
    r = p.retriever
    if isinstance(r, AdapterBase) and r.framework != "callable":
        cap = r.k_cap(k)
    else:  # k was passed to the call: its lists say whether it was honoured
        cap = ignored_k(k) if len(lengths) > 1 and min(lengths) == deepest else None
    if cap is None:
        return run
    explicit = run.config.get("k_requested") is not None
    cause = cap if explicit else f"k={k} is the default, not asked for; {cap}"
    message = f"every list is shorter than k={k}: the deepest has {deepest} hits, over {len(lengths)} queries; {cause}"
    run.config["short_lists"] = {"k": k, "deepest": deepest, "queries": len(lengths), "message": message}
    if explicit:
        warnings.warn(RunCoverageWarning(f"{caller}: {message}"), stacklevel=4)
    return run


def _refuse_suspicious(
    run: Run,
    golden: GoldenSet | None,
    *,
    check_ids: bool,
    keep_going: bool,
    aborted: tuple[int, str] | None = None,
    failures: Mapping[str, Failure] | None = None,
    caller: str = "run_retriever",
) -> Run:
    """Refuse a run that mostly failed alike, or whose ids match nothing the golden set knows.

    ``failures`` are the typed failures of a retriever run; an app run has only its messages. ``caller``
    (the public function the user called) leads the messages.
    """
    if aborted is not None:
        count, message = aborted
        err = RetrievalError(
            f"{caller}: the first {count} queries all failed with the same error, so the run was stopped "
            f"(pass keep_going=True to run every query anyway): {message}"
        )
        err.run = run  # type: ignore[attr-defined]
        raise err
    if not keep_going and run.errors:
        typed = failures or {}
        alike = Counter(
            (typed[qid] if qid in typed else Failure.parse(message)).text for qid, message in run.errors.items()
        )
        text, n = alike.most_common(1)[0]
        if n >= FAIL_FAST and n > len(run.query_ids()) / 2:
            err = RetrievalError(
                f"{caller}: {n} of {len(run.query_ids())} queries failed with the same error (pass "
                f"keep_going=True to keep such a run; it is on this exception's .run): {text}"
            )
            err.run = run  # type: ignore[attr-defined]
            raise err
    if golden is not None and check_ids:
        report = check_run(run, golden)
        if not report.ok:
            raise IdMismatchError(
                f"{caller}: the run's doc ids do not match the golden set {golden.name!r}: "
                f"{report.message()} (the run is on this exception's .run; check_ids=False keeps it.)",
                suggestion=report.chosen,
                report=report,
                run=run,
            )
    return run


def _check_app_options(checkpoint: Any, mode: Any, retries: Any) -> None:
    """Options of the retriever runner that an app run (:func:`rankbridge.apps.run_app`) cannot honour."""
    if checkpoint is not None:
        raise InputError(
            "checkpoint= resumes retriever runs; an app (chain, agent, chat engine, a function of the question "
            "alone) has no checkpoint. A function that retrieves should take k: f(query, k)"
        )
    if mode != "auto":
        raise InputError(f"mode={mode!r} applies to retrievers; an app is called the way it is built")
    if retries is not None:
        raise InputError("retries= applies to retrievers; an app's call is not retried (its LLM may have side effects)")


def run_retriever(
    retriever: Any,
    queries: QueriesLike,
    *,
    k: int | None = None,
    concurrency: int = 8,
    timeout: float | None = 60.0,
    retries: int | None = None,
    backoff: float = 0.5,
    progress: bool = True,
    checkpoint: str | os.PathLike[str] | None = None,
    retry_failed: bool = True,
    name: str | None = None,
    mode: Mode = "auto",
    id_from: Any = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    keep_text: bool = True,
    keep_going: bool = False,
    check_ids: bool = True,
    retrieval: apps.Retrieval | None = None,
    executor: Any = None,
) -> Run:
    """Retrieve the top ``k`` for every query and return them as a :class:`~rankbridge.Run`.

    Parameters
    ----------
    retriever:
        A LlamaIndex retriever / index / query engine, a LangChain retriever / vector store, a function
        ``f(query, k)``, or a :class:`~rankbridge.retriever.Retriever` (see :func:`rankbridge.adapt`).
        A query engine is scored on the list it hands its LLM (after its node postprocessors and
        rerankers); the retriever's own list is kept in ``run.stages["retrieved"]``. An application that
        answers -- a chat engine, an LCEL chain, an agent, a function ``f(question)`` -- is asked every
        question and scored on the retrievals captured while it answered, its answers kept in
        ``run.answers`` (see :func:`rankbridge.apps.run_app`, which also says what happens when a question
        makes several retrievals).
    queries:
        A :class:`~rankbridge.GoldenSet`, a list of :class:`~rankbridge.Query` (or ``(id, text)`` pairs),
        or ``{query_id: text}``. With a golden set, the doc ids are checked against its corpus and qrels
        (see ``check_ids``).
    k:
        Hits per query. ``None`` (default) keeps the retriever's own setting (``similarity_top_k``,
        ``k``, ``search_kwargs["k"]``) and its lists uncut; a function ``f(query, k)``, a bare vector
        store and a :class:`~rankbridge.retriever.Retriever` get 10. An explicit ``k`` is applied to a
        copy of the retriever (the object you passed is never changed). ``run.config`` records ``k`` (the
        depth used; ``None``: as the retriever returned), ``k_requested`` and ``configured_k``.
    concurrency:
        Calls in flight at once.
    timeout:
        Seconds one attempt may take (``None``: no limit).
    retries:
        Further attempts after an exception or a timeout (an invalid result is not retried); ``None``
        (default) is 2.
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
    keep_going:
        ``False`` (default): when the first 5 queries to finish all failed with the same error, stop and
        raise :class:`~rankbridge.RetrievalError` with that error; also raise when more than half the
        queries (and at least 5) failed with one error (the run is on the exception's ``.run``).
        ``True``: run every query and record the failures (they score 0).
    check_ids:
        With a golden set: retrieve the first 5 queries before the run and check that the doc ids are
        ones the golden set knows (:mod:`rankbridge.idmatch`). When they are not and ``id_from`` was not
        given, an id source of the results that does match (``ref_doc_id``, ``metadata:KEY``) is used and
        recorded in ``run.config["id_resolution"]``; otherwise :class:`~rankbridge.IdMismatchError` is
        raised naming the ``id_from=`` to pass. Those 5 results are the run's (a query is asked once; one
        that failed there is asked again by the run, with its retries). The finished run is checked again.
        ``False`` skips both.
    retrieval:
        For an app that may retrieve several times per question (an agent): which retrievals are scored,
        ``"final"`` (default), ``"first"``, ``"last"``, ``"merge"`` or ``"all"`` (see
        :func:`rankbridge.apps.run_app`). Refused for a retriever.
    executor:
        Run blocks of the questions elsewhere and merge them, e.g.
        :class:`rankbridge.integrations.ray.RayExecutor` (each block is this function in a Ray task; see its
        ``run_retriever`` for checkpoints and failed blocks). The other options are passed on.

    Returns
    -------
    Run
        Hits in the order the retriever returned them, per-query latency (seconds, of the last attempt),
        errors, other stages in ``run.stages``, and ``config`` with the settings, ``failures`` (kind ->
        count), ``problems`` (qid -> notes), ``resumed`` and, after Ctrl-C, ``interrupted``/``unfinished``.

    Raises
    ------
    IdMismatchError
        The doc ids match nothing the golden set knows (see ``check_ids``).
    RetrievalError
        The queries failed alike (see ``keep_going``).

    Examples
    --------
    >>> from rankbridge.runner import run_retriever
    >>> def search(query, k):
    ...     return [("d1", 2.0), ("d2", 1.0)] if "scurvy" in query else []
    >>> run = run_retriever(search, {"q1": "scurvy?", "q2": "other"}, k=5, progress=False)
    >>> run.ranking("q1"), run.ranking("q2"), sorted(run.latency)
    (['d1', 'd2'], [], ['q1', 'q2'])
    """
    if executor is not None:
        return executor.run_retriever(  # type: ignore[no-any-return]
            retriever, queries, k=k, concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff,
            progress=progress, checkpoint=checkpoint, retry_failed=retry_failed, name=name, mode=mode,
            id_from=id_from, doc_map=doc_map, keep_text=keep_text, keep_going=keep_going, check_ids=check_ids,
            retrieval=retrieval,
        )  # fmt: skip
    if apps.is_app(retriever):
        _check_app_options(checkpoint, mode, retries)
        run = apps.run_app(
            retriever, queries, concurrency=concurrency, timeout=timeout, name=name, id_from=id_from,
            doc_map=doc_map, keep_text=keep_text, progress=progress, k=k, retrieval=retrieval or "final",
            keep_going=keep_going,
        )  # fmt: skip
        golden = queries if isinstance(queries, GoldenSet) else None
        return _refuse_suspicious(run, golden, check_ids=check_ids, keep_going=keep_going)
    p = _prepare(
        retriever, queries, retrieval=retrieval, k=k, concurrency=concurrency, timeout=timeout, retries=retries,
        backoff=backoff, progress=progress, checkpoint=checkpoint, retry_failed=retry_failed, name=name, mode=mode,
        id_from=id_from, doc_map=doc_map, keep_text=keep_text, keep_going=keep_going, check_ids=check_ids,
    )  # fmt: skip
    total, call, convert = p.total, p.call, p.convert
    interrupted = False
    try:
        if not p.tasks:
            pass
        elif p.mode == "async":

            async def main() -> None:
                await _probe_async(p, call)
                await _run_async_engine(p, call, convert)

            interrupted = _run_async_in_thread(main, p.rec, concurrency)
        else:
            try:
                _probe_sync(p, call)
                _run_sync_engine(p, call, convert)
            except KeyboardInterrupt:
                interrupted = True
    finally:
        run = _finish(p, interrupted, total)
    return _check_outcome(p, run, "run_retriever")


async def arun_retriever(
    retriever: Any,
    queries: QueriesLike,
    *,
    k: int | None = None,
    concurrency: int = 8,
    timeout: float | None = 60.0,
    retries: int | None = None,
    backoff: float = 0.5,
    progress: bool = True,
    checkpoint: str | os.PathLike[str] | None = None,
    retry_failed: bool = True,
    name: str | None = None,
    mode: Mode = "auto",
    id_from: Any = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    keep_text: bool = True,
    keep_going: bool = False,
    check_ids: bool = True,
    retrieval: apps.Retrieval | None = None,
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
    if apps.is_app(retriever):
        _check_app_options(checkpoint, mode, retries)
        run = await apps.arun_app(
            retriever, queries, concurrency=concurrency, timeout=timeout, name=name, id_from=id_from,
            doc_map=doc_map, keep_text=keep_text, progress=progress, k=k, retrieval=retrieval or "final",
            keep_going=keep_going,
        )  # fmt: skip
        golden = queries if isinstance(queries, GoldenSet) else None
        return _refuse_suspicious(run, golden, check_ids=check_ids, keep_going=keep_going)
    p = _prepare(
        retriever, queries, retrieval=retrieval, k=k, concurrency=concurrency, timeout=timeout, retries=retries,
        backoff=backoff, progress=progress, checkpoint=checkpoint, retry_failed=retry_failed, name=name, mode=mode,
        id_from=id_from, doc_map=doc_map, keep_text=keep_text, keep_going=keep_going, check_ids=check_ids,
    )  # fmt: skip
    total, call, convert = p.total, p.call, p.convert
    try:
        if not p.tasks:
            pass
        elif p.mode == "async":
            await _probe_async(p, call)
            await _run_async_engine(p, call, convert)
        else:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, _probe_sync, p, call)
            await loop.run_in_executor(None, _run_sync_engine, p, call, convert)
    except asyncio.CancelledError:
        p.rec.close()
        _finish(p, True, total)
        raise
    except BaseException:
        _finish(p, False, total)
        raise
    return _check_outcome(p, _finish(p, False, total), "arun_retriever")


# -- summary ---------------------------------------------------------------------------------------
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
    id_resolution:
        When the ids the retriever returned matched nothing the golden set knows and another id source of
        its results did: what was done (``run.config["id_resolution"]["message"]``), else ``None``.
    short_lists:
        When every list is shorter than the run's ``k``: the depth reached and the likely cause
        (``run.config["short_lists"]["message"]``), else ``None``.
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
    id_resolution: str | None = None
    short_lists: str | None = None

    def __str__(self) -> str:
        head = f"{self.queries} queries: {self.succeeded} succeeded, {self.failed} failed"
        if self.failures:
            head += " (" + ", ".join(f"{k}: {n}" for k, n in sorted(self.failures.items())) + ")"
        clauses = count_clauses(
            (self.unfinished, "unfinished (interrupted; resume with the same checkpoint)"),
            (self.resumed, "resumed from the checkpoint"),
            (self.with_notes, "with notes (see run.config['problems'])"),
            (self.duplicates, "duplicate hits dropped"),
        )
        text = "; ".join([head, *clauses]) + "."
        if self.id_resolution:
            text += f"\n  doc ids: {self.id_resolution}"
        if self.short_lists:
            text += f"\n  depth: {self.short_lists}"
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
        # any Run, also one read from a file, where an error is its message only: its kind leads it
        kind = Failure.parse(run.errors[qid]).kind
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
        id_resolution=(run.config.get("id_resolution") or {}).get("message"),
        short_lists=(run.config.get("short_lists") or {}).get("message"),
    )
