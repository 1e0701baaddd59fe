"""Overhead of live capture per retrieval: the same offline pipelines with and without the handlers.

Pipelines (all offline, over the same 200-passage synthetic corpus, BM25, top 10):

* ``LangChain retriever``: ``BM25Retriever.invoke(q)`` (langchain_community, rank-bm25).
* ``LangChain LCEL chain``: ``retriever | format (RunnableLambda) | prompt | FakeListChatModel |
  StrOutputParser`` (6 runs per call).
* ``LlamaIndex retriever``: ``BM25Retriever.retrieve(q)`` (llama-index-retrievers-bm25).
* ``LlamaIndex query engine``: ``RetrieverQueryEngine.query(q)`` with ``MockLLM``.

Each pipeline runs in these modes, interleaved over repetitions (a fresh random order each repetition):
``off`` (no capture attached), ``on`` (``capture()`` with its defaults, recording every retrieval), ``noop``
(handlers that do nothing, attached where ``capture()`` attaches its own: the framework's price for calling a
handler), ``paused`` (attached, ``cap.enabled = False``), ``objects`` (``capture(retain="objects")``: records
keep the framework's result objects instead of a light snapshot) and, for LangChain, ``trace``
(``capture(trace=True)``: the handler rides on every run of the chain, to give each record its ``trace_id``).
A block is ``--n`` calls; a repetition gives one mean time per call for every mode, and the overhead of a mode
is the median over repetitions of its paired difference with ``off`` in the same repetition, with a 95%
percentile-bootstrap interval of that median. The ``read`` column is the cost, outside the application's call,
of turning one record into hits when ``cap.run`` is read. ``handler floor`` times the handler methods alone on
a prebuilt result list (no framework around them), the part of the overhead that is rankbridge's code.

Usage: ``.venv/bin/python benchmarks/bench_capture.py [--reps 30] [--n 200] [--write]``
(about four minutes on 2 cores). ``--write`` replaces the capture section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import gc
import os
import platform
import random
import re
import statistics
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

from rankbridge.callbacks import Recorder, capture

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
START, END = "<!-- capture:start -->", "<!-- capture:end -->"
TARGET_US = 50.0

WORDS = [
    "scurvy",
    "vitamin",
    "citrus",
    "orange",
    "lemon",
    "sailor",
    "voyage",
    "ration",
    "diet",
    "deficiency",
    "disease",
    "rickets",
    "sunlight",
    "bread",
    "yeast",
    "flour",
    "water",
    "salt",
    "cat",
    "dog",
    "garden",
    "night",
    "house",
    "stranger",
    "climate",
    "warm",
    "fruit",
    "mat",
    "hunt",
    "sleep",
    "bark",
]


def corpus(n: int = 200, seed: int = 0) -> dict[str, str]:
    rng = random.Random(seed)
    return {f"d{i}": " ".join(rng.choice(WORDS) for _ in range(30)) for i in range(n)}


def queries(n: int = 50, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, 3)) for _ in range(n)]


# -- pipelines ------------------------------------------------------------------------------------
def langchain_pipelines(docs: dict[str, str]) -> dict[str, Callable[[str], Any]]:
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda

    retriever = BM25Retriever.from_texts(list(docs.values()), ids=list(docs), k=10)
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\nQuestion: {question}")

    def to_prompt_input(ds: list[Any]) -> dict[str, str]:
        return {"context": "\n".join(d.page_content for d in ds), "question": "q"}

    # retriever | prompt | model, sequential (a RunnableParallel would add thread-pool noise to the timings)
    chain = (
        retriever
        | RunnableLambda(to_prompt_input)
        | prompt
        | FakeListChatModel(responses=["an answer"])
        | StrOutputParser()
    )
    return {"LangChain retriever": retriever.invoke, "LangChain LCEL chain": chain.invoke}


def llamaindex_pipelines(docs: dict[str, str]) -> dict[str, Callable[[str], Any]]:
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    Settings.llm = MockLLM(max_tokens=8)
    nodes = [TextNode(text=t, id_=d) for d, t in docs.items()]
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))
    return {"LlamaIndex retriever": retriever.retrieve, "LlamaIndex query engine": engine.query}


# -- timing ---------------------------------------------------------------------------------------
_gc_clock = [0.0, 0.0]  # CPU seconds spent in garbage collections, start of the current one


def _gc_timer(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _gc_clock[1] = time.process_time()
    else:
        _gc_clock[0] += time.process_time() - _gc_clock[1]


def block(fn: Callable[[str], Any], qs: list[str], n: int) -> tuple[float, float]:
    """Mean (CPU seconds, wall seconds) per call over ``n`` calls cycling through ``qs``.

    The CPU seconds spent in garbage collections meanwhile are left in ``_gc_clock[0]`` (per call).
    """
    gc.collect()
    m = len(qs)
    _gc_clock[0] = 0.0
    gc.callbacks.append(_gc_timer)
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        for i in range(n):
            fn(qs[i % m])
        cpu, wall = (time.process_time() - c0) / n, (time.perf_counter() - t0) / n
    finally:
        gc.callbacks.remove(_gc_timer)
    _gc_clock[0] /= n
    return cpu, wall


def paired(on: list[float], off: list[float], *, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Median of the paired differences ``on - off`` and its 95% percentile-bootstrap interval."""
    diffs = [a - b for a, b in zip(on, off, strict=True)]
    rng = random.Random(seed)
    boot = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(resamples))
    return statistics.median(diffs), boot[int(0.025 * resamples)], boot[int(0.975 * resamples) - 1]


_noop_slot: Any = None


@contextlib.contextmanager
def noop_handlers(framework: str) -> Iterator[None]:
    """Handlers that do nothing, attached where ``capture()`` attaches its own: the framework's price for
    calling any handler at those points (LlamaIndex: a span and an event handler on the root dispatcher;
    LangChain: a callback handler on retriever runs, through the same configure hook and stack check)."""
    global _noop_slot
    if framework == "llamaindex":
        from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
        from llama_index.core.instrumentation.event_handlers import BaseEventHandler
        from llama_index.core.instrumentation.span_handlers import BaseSpanHandler

        class NoopEvents(BaseEventHandler):  # type: ignore[misc]
            def handle(self, event: Any, **kwargs: Any) -> None:
                return None

        class NoopSpans(BaseSpanHandler[Any]):  # type: ignore[misc]
            def span_enter(
                self,
                id_: str,
                bound_args: Any,
                instance: Any = None,
                parent_id: str | None = None,
                tags: dict[str, Any] | None = None,
                **kwargs: Any,
            ) -> None:
                return None

            def span_exit(
                self, id_: str, bound_args: Any, instance: Any = None, result: Any = None, **kwargs: Any
            ) -> None:
                return None

            def span_drop(self, *args: Any, **kwargs: Any) -> None:
                return None

            def new_span(self, *args: Any, **kwargs: Any) -> None:
                return None

            def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
                return None

            def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
                return None

        d = get_dispatcher()
        events, spans = NoopEvents(), NoopSpans()
        d.span_handlers = [*d.span_handlers, spans]
        d.event_handlers = [*d.event_handlers, events]
        try:
            yield
        finally:
            d.event_handlers = [h for h in d.event_handlers if h is not events]
            d.span_handlers = [h for h in d.span_handlers if h is not spans]
        return
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.tracers.context import register_configure_hook

    from rankbridge.callbacks.langchain import _configuring_retriever

    class Noop(BaseCallbackHandler):
        run_inline = True
        ignore_llm = ignore_chain = ignore_agent = ignore_chat_model = ignore_retry = ignore_custom_event = True

        def on_retriever_start(self, *args: Any, **kwargs: Any) -> None:
            return None

        def on_retriever_end(self, *args: Any, **kwargs: Any) -> None:
            return None

    class Slot:
        handler: Any = None

        def get(self, default: Any = None) -> Any:
            return self.handler if self.handler is not None and _configuring_retriever(1) else None

    if _noop_slot is None:
        _noop_slot = Slot()
        register_configure_hook(_noop_slot, True)
    _noop_slot.handler = Noop()
    try:
        yield
    finally:
        _noop_slot.handler = None


def measure(name: str, fn: Callable[[str], Any], qs: list[str], *, reps: int, n: int) -> dict[str, Any]:
    framework = "langchain" if name.startswith("LangChain") else "llamaindex"
    for q in qs[:20]:  # warm up caches, lazy imports, JIT-free but first-call costs
        fn(q)
    modes = ["off", "on", "noop", "paused", "objects"] + (["trace"] if framework == "langchain" else [])
    times: dict[str, list[float]] = {m: [] for m in modes}
    walls: dict[str, list[float]] = {m: [] for m in modes}
    gcs: dict[str, list[float]] = {m: [] for m in modes}
    reads: list[float] = []
    order_rng = random.Random(reps)
    for _ in range(reps):
        for mode in order_rng.sample(modes, len(modes)):
            if mode == "off":
                cpu, wall = block(fn, qs, n)
            elif mode == "noop":
                with noop_handlers(framework):
                    cpu, wall = block(fn, qs, n)
            else:
                with capture(
                    frameworks=[framework],
                    max_records=n + 10,
                    trace=mode == "trace",
                    retain="objects" if mode == "objects" else "light",
                ) as cap:
                    cap.enabled = mode != "paused"
                    cpu, wall = block(fn, qs, n)
            times[mode].append(cpu)
            gcs[mode].append(_gc_clock[0])
            walls[mode].append(wall)
            if mode == "on":
                records = cap.records
                assert len(records) == n, (name, len(records), n)
                assert cap.recorder.internal_errors == 0, cap.recorder.last_internal_error
                t0 = time.perf_counter()
                run = cap.to_run()
                for rec in records:
                    rec.retrieved  # noqa: B018 -- resolve every record, not only the first of each query
                reads.append((time.perf_counter() - t0) / n)
                assert len(run) > 0
    med = {m: statistics.median(v) for m, v in times.items()}
    return {
        "name": name,
        "off": med["off"],
        "on": med["on"],
        "overhead": paired(times["on"], times["off"]),
        "trace_overhead": paired(times["trace"], times["off"]) if "trace" in times else None,
        "noop_overhead": paired(times["noop"], times["off"]),
        "own": paired(times["on"], times["noop"]),
        "paused_overhead": paired(times["paused"], times["off"]),
        "objects_overhead": paired(times["objects"], times["off"]),
        "wall_off": statistics.median(walls["off"]),
        "wall_overhead": paired(walls["on"], walls["off"])[0],
        "read": statistics.median(reads),
        "gc": {m: statistics.median(v) for m, v in gcs.items()},
    }


def handler_floor(docs: dict[str, str], *, reps: int, n: int) -> dict[str, float]:
    """Seconds per retrieval spent in rankbridge's handler methods alone (start + end), per framework."""
    out: dict[str, float] = {}
    from langchain_core.documents import Document

    from rankbridge.callbacks.langchain import RankbridgeCallbackHandler

    lc_docs = [Document(page_content=t, id=d) for d, t in list(docs.items())[:10]]
    lc_times = []
    for _ in range(reps):
        handler = RankbridgeCallbackHandler(Recorder(max_records=n + 10))
        ids = [uuid.uuid4() for _ in range(n)]
        parent = uuid.uuid4()
        gc.collect()
        t0 = time.process_time()
        for rid in ids:
            handler.on_retriever_start(None, "scurvy vitamin", run_id=rid, parent_run_id=parent, metadata={})
            handler.on_retriever_end(lc_docs, run_id=rid, parent_run_id=parent)
        lc_times.append((time.process_time() - t0) / n)
        assert len(handler.recorder.records) == n
    out["LangChain handler"] = statistics.median(lc_times)

    from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
    from llama_index.core.schema import NodeWithScore, TextNode

    from rankbridge.callbacks.llamaindex import _Tap

    nodes = [NodeWithScore(node=TextNode(text=t, id_=d), score=1.0) for d, t in list(docs.items())[:10]]
    li_times = []
    for _ in range(reps):
        tap = _Tap(Recorder(max_records=n + 10))
        spans = [f"BM25Retriever.retrieve-{uuid.uuid4()}" for _ in range(n)]
        events = [
            (
                RetrievalStartEvent(str_or_query_bundle="q", span_id=s),
                RetrievalEndEvent(str_or_query_bundle="q", nodes=nodes, span_id=s),
            )
            for s in spans
        ]
        gc.collect()
        t0 = time.process_time()
        for s, (start, end) in zip(spans, events, strict=True):
            tap.span_enter(s, "RetrieverQueryEngine._query-x")
            tap.event(start)
            tap.event(end)
            tap.span_exit(s, None)
        li_times.append((time.process_time() - t0) / n)
        assert len(tap._recorder.records) == n
    out["LlamaIndex handler (2 events + 1 span)"] = statistics.median(li_times)
    return out


# -- report ---------------------------------------------------------------------------------------
def _version(dist: str) -> str:
    try:
        return dist_version(dist)
    except PackageNotFoundError:
        return "not installed"


def _cpu() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def us(x: float) -> str:
    return f"{x * 1e6:,.1f}"


def report(results: list[dict[str, Any]], floor: dict[str, float], args: argparse.Namespace) -> str:
    command = " ".join([".venv/bin/python", "benchmarks/bench_capture.py", *sys.argv[1:]])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        "## Live capture overhead (`benchmarks/bench_capture.py`)",
        "",
        f"- Command: `{command}`",
        f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- Versions: Python {platform.python_version()}, llama-index-core {_version('llama-index-core')}, "
        f"llama-index-retrievers-bm25 {_version('llama-index-retrievers-bm25')}, langchain-core "
        f"{_version('langchain-core')}, langchain-community {_version('langchain-community')}, "
        f"rank-bm25 {_version('rank-bm25')}",
        f"- Machine: {platform.system()} {platform.machine()}, nproc={os.cpu_count()}, {_cpu()}; load average at "
        f"start {load:.2f} (wall time; other processes share the machine)",
        f"- Method: {args.reps} repetitions x {args.n} calls per mode, modes in a fresh random order each "
        "repetition; overhead = median over repetitions of the paired difference with `off`, [95% bootstrap "
        "interval]. 200 synthetic passages, BM25, top 10, 50 distinct queries.",
        "- Times are CPU time of the process (`time.process_time`), because the machine is shared and wall "
        "time swings by more than the overhead; the wall-time overhead is shown for reference.",
        "",
        f"Per retrieval, microseconds of CPU time (target: capture overhead < {TARGET_US:.0f} µs):",
        "",
        "| pipeline | off | overhead of `capture()` | no-op handlers | `capture()` - no-op | `trace=True` | "
        '`retain="objects"` | paused | wall: off / overhead | read (per record) |',
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def ci(x: tuple[float, float, float] | None) -> str:
        return "n/a" if x is None else f"{us(x[0])} [{us(x[1])}, {us(x[2])}]"

    for r in results:
        lines.append(
            f"| {r['name']} | {us(r['off'])} | **{ci(r['overhead'])}** | {ci(r['noop_overhead'])} | "
            f"{ci(r['own'])} | {ci(r['trace_overhead'])} | "
            f"{ci(r['objects_overhead'])} | {ci(r['paused_overhead'])} | "
            f"{us(r['wall_off'])} / {us(r['wall_overhead'])} | {us(r['read'])} |"
        )
    lines += [
        "",
        "Garbage collection during the calls, µs of CPU time per call (median over repetitions):",
        "",
        '| pipeline | off | on | `retain="objects"` |',
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r['name']} | {us(r['gc']['off'])} | {us(r['gc']['on'])} | {us(r['gc']['objects'])} |" for r in results
    ]
    lines += ["", "Handler methods alone (no framework around them, hot caches), per retrieval, CPU time:", ""]
    lines += ["| handler | µs |", "| --- | ---: |"]
    lines += [f"| {k} | {us(v)} |" for k, v in floor.items()]
    sure = [r["name"] for r in results if r["overhead"][2] * 1e6 < TARGET_US]
    point = [r["name"] for r in results if r["overhead"][0] * 1e6 < TARGET_US and r["name"] not in sure]
    over = [r["name"] for r in results if r["overhead"][0] * 1e6 >= TARGET_US]
    lines += [
        "",
        f"Against the {TARGET_US:.0f} µs target: within it, whole interval below: {', '.join(sure) or 'none'}; "
        f"median below but the interval reaches it: {', '.join(point) or 'none'}; above: {', '.join(over) or 'none'}.",
        "",
        "What the overhead is made of:",
        "",
        "1. rankbridge's own handler code: the handler table above, a few µs with hot caches; inside a "
        "pipeline the same code runs with cold caches and costs more.",
        "2. The framework calling one more handler: the `no-op handlers` column, handlers that do nothing "
        "attached where `capture()` attaches its own, and `capture() - no-op` the rest (rankbridge's code in "
        "place, and the garbage its records leave). LangChain charges every handler on every run it is "
        "attached to, even one that ignores their events (callback managers copied per run; the chat model "
        "checks each handler against a runtime protocol before deciding whether to stream). By default "
        "`capture()` hands its handler to retriever runs only (the configure hook looks at which code is "
        "starting the run), so a chain's other runs do not carry it; `trace=True` puts it on every run to "
        "record each retrieval's outermost run, the `trace=True` column. LlamaIndex calls the span handler for "
        "every span (12 in the query engine) and the event handler for every event (12); `paused` is about "
        "that part alone. A paused capture is not added to new LangChain runs at all.",
        "3. The garbage collector: records keep a light snapshot of each result (own id, text, metadata "
        'reference, score) and let the framework\'s objects go; `retain="objects"` keeps the objects, which '
        "makes Python run more collections during the app's calls when the framework builds fresh result "
        "objects for every retrieval (LlamaIndex does).",
        "",
        "Figures are medians on a shared 2-core machine; a negative figure means noise exceeded the overhead. "
        "`read` is paid when `cap.run` is read, never inside the application's call.",
    ]
    return "\n".join(lines)


def write_section(body: str) -> None:
    block_text = f"{START}\n{body.strip()}\n{END}"
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"  # re-read right before writing
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    text = (
        pattern.sub(lambda _: block_text, text)
        if pattern.search(text)
        else text.rstrip("\n") + "\n\n" + block_text + "\n"
    )
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
    print(f"wrote the capture section of {DOC}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--n", type=int, default=200, help="calls per timed block")
    parser.add_argument("--write", action="store_true", help="replace the capture section of docs/benchmarks.md")
    args = parser.parse_args()
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
        os.environ.pop(var, None)
    warnings.simplefilter("ignore")
    logging_quiet()
    docs, qs = corpus(), queries()
    pipelines = {**langchain_pipelines(docs), **llamaindex_pipelines(docs)}
    results = []
    for name, fn in pipelines.items():
        r = measure(name, fn, qs, reps=args.reps, n=args.n)
        print(
            f"{name:28s} off {us(r['off'])} µs  overhead {us(r['overhead'][0])} µs "
            f"[{us(r['overhead'][1])}, {us(r['overhead'][2])}]  paused {us(r['paused_overhead'][0])} µs  "
            f"read {us(r['read'])} µs  gc on/objects {us(r['gc']['on'])}/{us(r['gc']['objects'])} µs",
            flush=True,
        )
        results.append(r)
    floor = handler_floor(docs, reps=args.reps, n=max(args.n, 1000))
    for k, v in floor.items():
        print(f"{k:40s} {us(v)} µs")
    body = report(results, floor, args)
    print(body)
    if args.write:
        write_section(body)
    asyncio.set_event_loop(None)


def logging_quiet() -> None:
    import logging

    logging.getLogger("bm25s").setLevel(logging.WARNING)


if __name__ == "__main__":
    main()
