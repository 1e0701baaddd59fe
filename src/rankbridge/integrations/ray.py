"""Fan rankbridge's work out on a Ray cluster: retrieval, the LLM judge and metric passes (``rankbridge[ray]``).

Every unit of work is a **block of queries** run by the normal local engine inside a Ray task, and the
blocks' results are merged at the driver exactly (:meth:`rankbridge.Run.merge`,
:meth:`rankbridge.Evaluation.merge`), so a result equals the one-process result:

* ``RayExecutor().run_retriever(retriever, golden)`` (or ``run_retriever(..., executor=RayExecutor())``):
  the questions are cut into blocks of ``block_size``; each block is ``run_retriever(retriever, block,
  ...)`` in a task (same concurrency, timeouts, retries and per-query failure records inside the block).
  With ``checkpoint=``, the driver appends a finished block's queries to the JSONL checkpoint (the runner's
  format) as soon as the block is back; a later call skips the queries the file holds (failed ones are
  run again under ``retry_failed=True``), so a failed block costs only its own queries.
* ``RayExecutor().judge_runs(runs, queries, documents, llm, ...)``: the pooled pairs are cut by query into
  blocks, each judged by the local :class:`~rankbridge.judge.Judge` in a task; ``max_calls`` /
  ``max_tokens`` hold for the whole batch (see :meth:`RayExecutor.judge_runs` for the exact rule).
* ``RayExecutor().evaluate(qrels, run, metrics)`` (or ``evaluate(..., executor=)``), and ``evaluate(qrels,
  dataset, metrics)`` for a Ray Dataset of run rows (``query_id``, ``doc_id``, ``score`` or ``rank``): rows
  are grouped by a hash of the query id into blocks (Ray Data ``groupby(...).map_groups``), each block is
  evaluated by ``evaluate(..., queries=block)`` and the parts merged.

Ray is imported when this module is; ``import rankbridge`` never imports it. Connect to a cluster first
(``ray.init(address="auto")``); without it, Ray starts a local one on first use. See ``docs/ray.md``.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rankbridge.batch import Budget, check_number
from rankbridge.errors import BudgetExceededError, IdMismatchError, InputError, MissingExtraError, RetrievalError
from rankbridge.evaluate import (
    Evaluation,
    MissingPolicy,
    _as_qrels,
    _check_ids,
    _evaluate_block,
    _qrels_fingerprint,
    _subset_run,
    merge_evaluations,
)
from rankbridge.judge.grading import JudgeReport, JudgmentCache, Judgments, _run_list, judge_runs, pool
from rankbridge.judge.llm import CallPolicy, Usage
from rankbridge.runner import _as_queries, _hit_json, _load_checkpoint, _refuse_suspicious, run_retriever
from rankbridge.types import GoldenSet, Qrels, Run

try:
    import ray
    from ray import cloudpickle
except ImportError as exc:  # pragma: no cover - the extra is installed in the dev environment
    raise MissingExtraError("ray", "ray", "rankbridge.integrations.ray") from exc

__all__ = ["RayBudget", "RayExecutor", "check_picklable"]


#: run rows' columns read from a Ray Dataset
_ROW_COLUMNS = ("query_id", "doc_id", "score", "rank")


def check_picklable(obj: Any, what: str) -> None:
    """Refuse, naming ``obj``, what cloudpickle cannot send to a Ray worker (a live client, a lock, a socket).

    Raises
    ------
    InputError
        ``obj`` cannot be pickled; the message names its type and the reason.
    """
    try:
        cloudpickle.dumps(obj)  # type: ignore[no-untyped-call]
    except Exception as exc:
        raise InputError(
            f"RayExecutor: the {what} {type(obj).__module__}.{type(obj).__qualname__} ({_short(obj)}) cannot be "
            f"sent to Ray workers: cloudpickle failed with {type(exc).__name__}: {exc}. Pass an object that "
            "pickles (a module-level function, a class that opens its clients lazily), or run it locally"
        ) from exc


def _short(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 80 else text[:77] + "..."


def _blocks(ids: Sequence[str], size: int) -> list[list[str]]:
    return [list(ids[i : i + size]) for i in range(0, len(ids), size)]


def _block_of(qid: str, n_blocks: int) -> int:
    """The block a query id belongs to: a hash every process agrees on (not Python's salted ``hash``)."""
    return zlib.crc32(qid.encode("utf-8", "surrogatepass")) % n_blocks


def _subset_queries(queries: Any, ids: list[str]) -> Any:
    """The golden set cut to ``ids`` (its qrels and corpus kept for the id check), or ``[(id, text)]``."""
    if isinstance(queries, GoldenSet):
        wanted = set(ids)
        return replace(queries, queries=[q for q in queries.queries if q.id in wanted])
    return queries  # already a block of (id, text) pairs


# -- tasks (module level, so that cloudpickle sends them by reference) ---------------------------------


def _retrieve_block(retriever: Any, queries: Any, ids: list[str], options: dict[str, Any]) -> Run:
    return run_retriever(retriever, _subset_queries(queries, ids), **options)


def _judge_block(llm: Any, args: dict[str, Any]) -> Judgments:
    return judge_runs(llm=llm, **args)


def _evaluate_task(
    qrels: Any,
    run: Any,
    metrics: Any,
    ids: list[str],
    missing: MissingPolicy | None,
    single_precision: bool,
    fingerprint: tuple[str, int],
) -> Evaluation:
    return _evaluate_block(qrels, run, metrics, ids, missing, single_precision, False, fingerprint=fingerprint)


@dataclass(frozen=True)
class RayExecutor:
    """Run rankbridge's per-query work as Ray tasks, one block of queries per task, merged exactly.

    Parameters
    ----------
    block_size:
        Queries per block (a task). ``None``: enough blocks for four per CPU of the cluster, at least one
        query and at most 10,000 per block. Smaller blocks resume finer and balance better; each task costs
        a few milliseconds of Ray's own.
    num_cpus:
        CPUs each task reserves (``ray.remote(num_cpus=...)``); the runner's ``concurrency`` threads run
        inside it, so an I/O-bound retriever can take 1 CPU and ``concurrency=32``.
    max_in_flight:
        Blocks submitted at once (``None``: the cluster's CPUs divided by ``num_cpus``). The driver writes
        each finished block to the checkpoint before it submits another.
    max_retries:
        Ray's retries of a task whose worker died (a lost node, an out-of-memory kill). An exception raised
        in the block is not retried by Ray: the runner's own retries apply per query inside it.

    Examples
    --------
    >>> RayExecutor(block_size=500, num_cpus=1)
    RayExecutor(block_size=500, num_cpus=1, max_in_flight=None, max_retries=3)
    """

    block_size: int | None = None
    num_cpus: float = 1
    max_in_flight: int | None = None
    max_retries: int = 3

    def __post_init__(self) -> None:
        check_number("block_size", self.block_size, integer=True, minimum=1, strict=False, none=True)
        check_number("num_cpus", self.num_cpus, integer=False, minimum=0, strict=True, none=False)
        check_number("max_in_flight", self.max_in_flight, integer=True, minimum=1, strict=False, none=True)

    # -- plumbing ---------------------------------------------------------------------------------
    def _cpus(self) -> float:
        if not ray.is_initialized():
            ray.init()  # Ray's own default: a local cluster, as its first remote call would start
        return float(ray.cluster_resources().get("CPU", 1.0))  # type: ignore[no-untyped-call]

    def _size(self, n: int) -> int:
        if self.block_size is not None:
            return self.block_size
        return max(1, min(10_000, math.ceil(n / max(1.0, 4 * self._cpus()))))

    def _slots(self) -> int:
        if self.max_in_flight is not None:
            return self.max_in_flight
        return max(1, int(self._cpus() // self.num_cpus))

    def _remote(self, fn: Any) -> Any:
        return ray.remote(num_cpus=self.num_cpus, max_retries=self.max_retries)(fn)

    def _map(self, fn: Any, calls: Iterable[tuple[Any, ...]]) -> Iterator[tuple[int, Any]]:
        """Submit ``fn(*args)`` per call, at most :meth:`_slots` at once; yield (index, result) as they finish.

        A block that raised re-raises its exception here (Ray's wrapper unwrapped); blocks still in flight
        are cancelled.
        """
        remote = self._remote(fn)
        pending: dict[Any, int] = {}
        todo = iter(enumerate(calls))
        slots = self._slots()
        try:
            while True:
                while len(pending) < slots:
                    nxt = next(todo, None)
                    if nxt is None:
                        break
                    pending[remote.remote(*nxt[1])] = nxt[0]
                if not pending:
                    return
                done, _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(done[0])
                try:
                    result = ray.get(done[0])
                except ray.exceptions.RayTaskError as exc:
                    cause = exc.as_instanceof_cause()  # type: ignore[no-untyped-call]
                    raise (cause if isinstance(cause, Exception) else exc) from None
                yield index, result
        finally:
            for ref in pending:
                ray.cancel(ref)

    # -- evaluate ---------------------------------------------------------------------------------
    def evaluate(
        self,
        qrels: GoldenSet | Qrels | Mapping[str, Mapping[str, int]],
        run: Any,
        metrics: Any,
        *,
        missing: MissingPolicy | None = None,
        single_precision: bool = False,
        check_ids: bool = True,
    ) -> Evaluation:
        """``evaluate(qrels, run, metrics)`` in blocks on Ray; equal to the local result bit for bit.

        ``run`` is a :class:`~rankbridge.Run`, a dict run, or a Ray Dataset of rows ``query_id``,
        ``doc_id`` and ``score`` (trec_eval's order) or ``rank`` (1 = best). The id check runs once at
        the driver (on the whole run; for a Dataset on its first 1,000 rows).
        """
        if type(run).__module__.startswith("ray.data"):
            return self._evaluate_dataset(qrels, run, metrics, missing, single_precision, check_ids)
        q = _as_qrels(qrels)
        fingerprint = (_qrels_fingerprint(q), len(q))
        if isinstance(run, Run):
            run_ids = run.query_ids()
        elif isinstance(run, Mapping):
            run_ids = [str(qid) for qid in run]
        else:
            raise InputError(f"run: expected a Run, a dict or a Ray Dataset, found {type(run).__name__}")
        ids = sorted({*q, *run_ids})
        notes = self._id_note(qrels, q, run, check_ids)
        calls = []
        for block in _blocks(ids, self._size(len(ids))):
            wanted = set(block)
            block_qrels = Qrels._trusted({k: v for k, v in q._data.items() if k in wanted}, name=q.name)
            calls.append(
                (block_qrels, _subset_run(run, wanted), metrics, block, missing, single_precision, fingerprint)
            )
        parts = [ev for _, ev in self._map(_evaluate_task, calls)]
        return _with_notes(merge_evaluations(parts), notes)

    def _id_note(self, qrels: Any, q: Qrels, run: Any, check_ids: bool) -> tuple[str, ...]:
        if not check_ids or not run:
            return ()
        if isinstance(run, Run):
            note = _check_ids(qrels if isinstance(qrels, GoldenSet) else q, run._data, run)
        else:
            note = _check_ids(qrels if isinstance(qrels, GoldenSet) else q, run, None)
        return () if note is None else (note,)

    def _evaluate_dataset(
        self,
        qrels: Any,
        ds: Any,
        metrics: Any,
        missing: MissingPolicy | None,
        single_precision: bool,
        check_ids: bool,
    ) -> Evaluation:
        names = list(ds.schema().names)
        if "query_id" not in names or "doc_id" not in names or not ({"score", "rank"} & set(names)):
            raise InputError(
                f"evaluate: a Ray Dataset of run rows needs the columns query_id, doc_id and score (or rank); "
                f"it has {names}"
            )
        q = _as_qrels(qrels)
        fingerprint = (_qrels_fingerprint(q), len(q))
        n_blocks = max(1, math.ceil(len(q) / self._size(len(q)))) if self.block_size else max(1, int(4 * self._cpus()))
        by_block: list[dict[str, Any]] = [{} for _ in range(n_blocks)]
        for qid, docs in q._data.items():
            by_block[_block_of(qid, n_blocks)][qid] = docs
        refs = [ray.put(Qrels._trusted(block, name=q.name)) for block in by_block]
        rank = "rank" in names
        options = {"refs": refs, "metrics": metrics, "missing": missing, "single_precision": single_precision}
        options.update({"fingerprint": fingerprint, "rank": rank, "n_blocks": n_blocks})
        keep = [c for c in _ROW_COLUMNS if c in names]
        grouped = (
            ds.select_columns(keep)
            .map_batches(_tag_blocks, batch_format="pandas", fn_kwargs={"n_blocks": n_blocks})
            .groupby("_rb_block")
            .map_groups(_evaluate_group, batch_format="pandas", fn_kwargs=options, num_cpus=self.num_cpus)
        )
        parts: dict[int, Evaluation] = {}
        for row in grouped.take_all():
            parts[int(row["block"])] = pickle.loads(row["evaluation"])
        for b in range(n_blocks):  # blocks whose queries the run never answered: all missing
            if b not in parts:
                parts[b] = _evaluate_block(
                    Qrels._trusted(by_block[b], name=q.name), {}, metrics, list(by_block[b]), missing,
                    single_precision, False, fingerprint=fingerprint,
                )  # fmt: skip
        notes: tuple[str, ...] = ()
        if check_ids:
            sample = Run.from_pandas(ds.select_columns(keep).limit(1000).to_pandas(), **_frame_options(rank))
            notes = self._id_note(qrels, q, sample, True)
        return _with_notes(merge_evaluations(parts[b] for b in sorted(parts)), notes)

    # -- run_retriever ----------------------------------------------------------------------------
    def run_retriever(
        self,
        retriever: Any,
        queries: Any,
        *,
        checkpoint: str | os.PathLike[str] | None = None,
        retry_failed: bool = True,
        keep_going: bool = False,
        check_ids: bool = True,
        **options: Any,
    ) -> Run:
        """``run_retriever(retriever, queries, ...)`` in blocks on Ray, merged; every option is the runner's.

        Semantics, beside the local runner's:

        * Each block is ``run_retriever(retriever, block, ...)`` in one Ray task: ``concurrency``,
          ``timeout``, ``retries`` and ``backoff`` apply inside it per query, and a query that fails for good
          is recorded in ``run.errors`` as locally.
        * ``checkpoint``: the driver appends each finished block's queries (the runner's JSONL lines) and
          skips, on a later call, the queries the file holds. A block that raised (its retriever object
          cannot be built on the worker, a worker lost more than ``max_retries`` times) stops the run with
          :class:`~rankbridge.RetrievalError`, the merged run of the finished blocks on its ``.run``.
        * ``keep_going`` (the first-failures stop) and the id check are applied to the merged run, as the
          local runner applies them to its run: inside the blocks every query runs.
        * ``progress`` is off in the tasks (their output goes to the Ray worker logs).

        Raises
        ------
        InputError
            The retriever cannot be pickled (the message names it).
        """
        check_picklable(retriever, "retriever")
        items = _as_queries(queries)
        golden = queries if isinstance(queries, GoldenSet) else None
        done = Run(name=options.get("name") or "run")
        path = Path(checkpoint) if checkpoint is not None else None
        k_file = None
        if path is not None and path.exists():
            k_file = _checkpoint_k(path)
            problems: dict[str, list[str]] = {}
            _load_checkpoint(path, k_file, {qid for qid, _ in items}, retry_failed, done, problems)
            done.config["problems"] = problems
        todo = [qid for qid, _ in items if qid not in done._data and qid not in done.errors]
        texts = dict(items)
        source = ray.put(golden) if golden is not None else None
        block_options = {**options, "progress": False, "keep_going": True, "checkpoint": None}
        block_options["check_ids"] = check_ids
        shared = ray.put(retriever)  # sent once: every task reads the same object
        calls = []
        for block in _blocks(todo, self._size(len(todo))):
            payload = source if source is not None else [(qid, texts[qid]) for qid in block]
            calls.append((shared, payload, block, block_options))
        parts: list[Run] = []
        try:
            for _, part in self._map(_retrieve_block, calls):
                if path is not None:
                    _append_checkpoint(path, part)
                parts.append(part)
        except IdMismatchError:
            raise
        except Exception as exc:
            merged = _merge_runs(done, parts, items, k_file)
            err = RetrievalError(
                f"run_retriever on Ray: a block failed ({type(exc).__name__}: {exc}); the {len(merged.query_ids())} "
                "queries of the finished blocks are on this exception's .run"
                + (f" and in the checkpoint {path}, and a call with it resumes after them" if path else "")
            )
            err.run = merged  # type: ignore[attr-defined]
            raise err from exc
        merged = _merge_runs(done, parts, items, k_file)
        merged.config["resumed"] = len(done.query_ids())
        merged.config["executor"] = repr(self)
        return _refuse_suspicious(merged, golden, check_ids=False, keep_going=keep_going)

    # -- judge --------------------------------------------------------------------------------------
    def judge_runs(
        self,
        runs: Any,
        queries: Any,
        documents: Any,
        llm: Any,
        *,
        k: int = 10,
        cache: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> Judgments:
        """``judge_runs(...)`` in blocks of queries on Ray; the same labels and report as one process.

        Semantics, beside the local judge's:

        * The pooled pairs are cut by query into blocks; each block is ``judge_runs(...)`` in a task with
          the same prompt, policy (concurrency, timeouts, retries, repairs) and ``cache``. The cache must
          be a path every worker can open (one machine, or storage every node mounts): each task reads
          and writes it as the local judge does, so a later call pays no pair twice (that is the resume).
        * One budget for the whole batch: ``max_calls``, ``max_tokens`` and ``max_errors`` live in one
          :class:`~rankbridge.batch.Budget` held by a Ray actor, and every call of every block is admitted
          by it before it starts -- so ``max_calls`` is exact across blocks as it is across threads, and
          ``max_tokens`` may be passed by what the calls in flight use (now those of every block in
          flight). Which pairs a stopped batch judged can differ from one process (blocks run side by
          side); every grade given is the same.
        * The report is the blocks' reports added up (pairs, judged, new, from cache, usage; failures,
          flags and pairs not judged joined).
        """
        check_picklable(llm, "LLM")
        run_list = _run_list(runs)
        pairs = pool(run_list, k)
        qids = list(pairs)
        policy = options.pop("policy", None) or CallPolicy(
            **{key: v for key, v in options.items() if key not in _JUDGE_ARGS}
        )
        options = {key: v for key, v in options.items() if key in _JUDGE_ARGS}
        ledger = _Ledger.options(num_cpus=0).remote(policy.max_calls, policy.max_tokens, policy.max_errors)  # type: ignore[attr-defined]
        budget = RayBudget(ledger, policy.max_calls, policy.max_tokens, policy.max_errors)
        cache_arg = os.fspath(cache) if cache is not None else None
        if cache_arg is not None:
            # created (schema written) here, once: two tasks creating the file at the same moment would
            # see each other's half-made schema
            JudgmentCache(cache_arg).close()
        base = {"k": k, "cache": cache_arg, "policy": policy, "budget": budget, **options}
        shared = ray.put(llm)  # sent once: every task reads the same object
        texts = queries.texts() if isinstance(queries, GoldenSet) else queries
        calls = []
        for block in _blocks(qids, self._size(len(qids))):
            wanted = set(block)
            query_block = {q: texts[q] for q in block if q in texts} if isinstance(texts, Mapping) else texts
            docs = documents
            if isinstance(documents, Mapping):  # only the block's pooled documents travel to its task
                docs = {d: documents[d] for q in block for d in pairs[q] if d in documents}
            cut = [_subset_run(r, wanted) for r in run_list]
            calls.append((shared, {**base, "runs": cut, "queries": query_block, "documents": docs}))
        try:
            results = [j for _, j in sorted(self._map(_judge_block, calls), key=lambda r: r[0])]
        finally:
            ray.kill(ledger)  # type: ignore[arg-type]
        if not results:
            return judge_runs(run_list, queries, documents, llm, k=k, policy=policy, **options)
        return _merge_judgments(results)


#: judge_runs' own arguments (the rest of its keywords are CallPolicy fields)
_JUDGE_ARGS = ("model_id", "prompt", "skip", "injection", "anonymous")


class _LedgerState:
    """The one :class:`~rankbridge.batch.Budget` of a batch judged in blocks (the body of a Ray actor)."""

    def __init__(self, max_calls: int | None, max_tokens: int | None, max_errors: int | None) -> None:
        self.budget = Budget(max_calls, max_tokens, max_errors)

    def admit(self) -> str | None:
        try:
            self.budget.admit()
        except BudgetExceededError as exc:
            return str(exc)
        return None

    def charge(self, tokens: int) -> None:
        self.budget.charge(tokens)

    def note_failure(self) -> None:
        self.budget.note_failure()

    def stop(self, reason: str) -> None:
        self.budget.stop(reason)

    def state(self) -> tuple[int, int, int, str | None]:
        b = self.budget
        return b.calls, b.tokens, b.errors, b.stopped


_Ledger = ray.remote(_LedgerState)


def _actor_count(index: int) -> Any:
    """A :class:`RayBudget` count read from its actor's ``state()``; an assignment (the base class's
    ``__init__``) is ignored."""
    return property(lambda self: self._state()[index], lambda self, value: None)


class RayBudget(Budget):
    """A :class:`~rankbridge.batch.Budget` whose counts live in a Ray actor, shared by every block's session.

    Each call's admission is one round trip to the actor (about a millisecond on one machine), so the
    limits hold across processes and nodes exactly as across threads. Charges and failures are sent
    without waiting; the actor applies them in the order one worker sent them.
    """

    def __init__(self, actor: Any, max_calls: int | None, max_tokens: int | None, max_errors: int | None) -> None:
        super().__init__(max_calls, max_tokens, max_errors)
        self._actor = actor

    def _state(self) -> tuple[int, int, int, str | None]:
        return ray.get(self._actor.state.remote())  # type: ignore[no-any-return]

    # the counts are the actor's (in the order of its state()); the base class's own fields are never used
    calls = _actor_count(0)
    tokens = _actor_count(1)
    errors = _actor_count(2)
    stopped = _actor_count(3)

    def admit(self) -> None:
        reason = ray.get(self._actor.admit.remote())
        if reason is not None:
            raise BudgetExceededError(reason)

    def charge(self, tokens: int = 0) -> None:
        if tokens:
            self._actor.charge.remote(tokens)

    def note_failure(self) -> None:
        self._actor.note_failure.remote()

    def stop(self, reason: str) -> None:
        self._actor.stop.remote(reason)


def _with_notes(ev: Evaluation, notes: tuple[str, ...]) -> Evaluation:
    if notes:
        ev.notes = tuple(dict.fromkeys((*ev.notes, *notes)))
    return ev


def _frame_options(rank: bool) -> dict[str, Any]:
    return {"rank_col": "rank"} if rank else {}


def _tag_blocks(batch: Any, n_blocks: int) -> Any:
    ids = batch["query_id"].astype(str)
    batch["query_id"] = ids
    batch["_rb_block"] = [_block_of(qid, n_blocks) for qid in ids]
    return batch


def _evaluate_group(group: Any, **options: Any) -> Any:
    block = int(group["_rb_block"].iloc[0])
    run = Run.from_pandas(group.drop(columns=["_rb_block"]), **_frame_options(options["rank"]))
    qrels = ray.get(options["refs"][block])
    ids = sorted({*qrels, *run.query_ids()})
    ev = _evaluate_block(
        qrels, run, options["metrics"], ids, options["missing"], options["single_precision"], False,
        fingerprint=options["fingerprint"],
    )  # fmt: skip
    return {"block": np.array([block]), "evaluation": np.array([pickle.dumps(ev)], dtype=object)}


def _checkpoint_k(path: Path) -> int | None:
    """The ``k`` the checkpoint's lines were written with (the loader checks every line against it)."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and "query_id" in obj:
                return obj.get("k")  # type: ignore[no-any-return]
    return None


def _append_checkpoint(path: Path, part: Run) -> None:
    """The block's queries as the runner's checkpoint lines, appended and flushed in one write."""
    k = part.config.get("k")
    problems = part.config.get("problems") or {}
    lines = []
    for qid in part.query_ids():
        latency = part.latency.get(qid)
        if qid in part.errors and qid not in part._data:
            obj: dict[str, Any] = {"query_id": qid, "hits": [], "error": part.errors[qid], "latency": latency, "k": k}
        else:
            obj = {"query_id": qid, "hits": [_hit_json(h) for h in part.hits(qid)]}
            stages = {st: [_hit_json(h) for h in r.hits(qid)] for st, r in part.stages.items() if qid in r}
            if stages:
                obj["stages"] = stages
            obj.update({"latency": latency, "k": k})
            if problems.get(qid):
                obj["notes"] = problems[qid]
        lines.append(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(lines))
        fh.flush()
        os.fsync(fh.fileno())


def _merge_runs(done: Run, parts: list[Run], items: list[tuple[str, str]], k_done: int | None) -> Run:
    """The resumed queries and the blocks' runs as one run, in the order the queries were given."""
    if not parts:
        return done
    first = parts[0]
    if done.query_ids():
        # the resumed part takes the blocks' name and settings; its own bookkeeping is merged
        done.name = first.name
        done.config = {**first.config, "failures": {}, "problems": done.config.get("problems", {})}
        for stage, r in first.stages.items():
            done.stages.setdefault(stage, Run(name=r.name, config=r.config))
        if k_done is not None and k_done != first.config.get("k"):
            raise InputError(
                f"the checkpoint was written with k={k_done}, this run asks k={first.config.get('k')}; "
                "use the same k or another checkpoint file"
            )
        parts = [done, *parts]
    for part in parts[1:]:
        for stage, r in first.stages.items():
            part.stages.setdefault(stage, Run(name=r.name, config=r.config))
    merged = Run.merge(parts)
    order = {qid: i for i, (qid, _) in enumerate(items)}
    merged._data = dict(sorted(merged._data.items(), key=lambda kv: order.get(kv[0], len(order))))
    for stage_run in merged.stages.values():
        stage_run._data = dict(sorted(stage_run._data.items(), key=lambda kv: order.get(kv[0], len(order))))
    return merged


def _merge_judgments(parts: list[Judgments]) -> Judgments:
    """One batch's judgments from its blocks' (the same model and prompt; disjoint queries)."""
    first = parts[0]
    labels = {}
    report = JudgeReport()
    usage = Usage()
    for part in parts:
        if (part.model, part.prompt_key) != (first.model, first.prompt_key):
            raise InputError(
                f"judge on Ray: a block judged with {part.model}/{part.prompt_key}, another with "
                f"{first.model}/{first.prompt_key}"
            )
        labels.update(part.labels)
        r = part.report
        report.pairs += r.pairs
        report.judged += r.judged
        report.from_cache += r.from_cache
        report.new += r.new
        report.skipped += r.skipped
        report.missing_text.update(r.missing_text)
        report.failed.update(r.failed)
        report.not_judged.extend(r.not_judged)
        report.flagged.update(r.flagged)
        report.stopped = report.stopped or r.stopped
        for name in ("calls", "retries", "repairs", "input_tokens", "output_tokens", "estimated_calls"):
            setattr(usage, name, getattr(usage, name) + getattr(r.usage, name))
    report.usage = usage
    return replace(first, labels=labels, report=report)
