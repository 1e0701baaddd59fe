"""Overhead of live capture per retrieval: the same offline pipelines with and without the handlers.

Pipelines (all offline, over the same 200-passage synthetic corpus, BM25, top 10):

* ``LangChain retriever``: ``BM25Retriever.invoke(q)`` (langchain_community, rank-bm25).
* ``LangChain LCEL chain``: ``retriever | format (RunnableLambda) | prompt | FakeListChatModel |
  StrOutputParser`` (6 runs per call).
* ``LlamaIndex retriever``: ``BM25Retriever.retrieve(q)`` (llama-index-retrievers-bm25).
* ``LlamaIndex query engine``: ``RetrieverQueryEngine.query(q)`` with ``MockLLM``.

Each pipeline runs in three modes, interleaved over repetitions (the order rotates each repetition):
``off`` (no capture attached), ``on`` (``capture()`` attached and recording every retrieval) and
``paused`` (attached, ``cap.enabled = False``), ``objects`` (``capture(retain="objects")``: records keep
the framework's result objects instead of a light snapshot) and, for LangChain, ``notrace``
(``capture(trace=False)``). A block is ``--n`` calls; the figure per mode is the
median over repetitions of the mean time per call, and the overhead is ``on - off`` (and
``paused - off``). The ``read`` column is the cost, outside the application's call, of turning one
record into hits when ``cap.run`` is read. ``handler floor`` times the handler methods alone on a
prebuilt result list (no framework around them), the part of the overhead that is rankbridge's code.

Usage: ``.venv/bin/python benchmarks/bench_capture.py [--reps 15] [--n 200] [--write]``
(about a minute on 2 cores). ``--write`` replaces the capture section of docs/benchmarks.md.
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
from collections.abc import Callable
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
    # retriever | prompt | model, sequential (a RunnableParallel would add thread-pool noise to the timings)
    chain = (
        retriever
        | RunnableLambda(lambda ds: {"context": "\n".join(d.page_content for d in ds), "question": "q"})
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


def measure(name: str, fn: Callable[[str], Any], qs: list[str], *, reps: int, n: int) -> dict[str, Any]:
    framework = "langchain" if name.startswith("LangChain") else "llamaindex"
    for q in qs[:20]:  # warm up caches, lazy imports, JIT-free but first-call costs
        fn(q)
    modes = ["off", "on", "paused", "objects"] + (["notrace"] if framework == "langchain" else [])
    times: dict[str, list[float]] = {m: [] for m in modes}
    walls: dict[str, list[float]] = {m: [] for m in modes}
    gcs: dict[str, list[float]] = {m: [] for m in modes}
    reads: list[float] = []
    k = len(modes)
    for r in range(reps):
        for mode in modes[r % k :] + modes[: r % k]:
            if mode == "off":
                cpu, wall = block(fn, qs, n)
            else:
                with capture(
                    frameworks=[framework],
                    max_records=n + 10,
                    trace=mode != "notrace",
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
        "notrace_overhead": med["notrace"] - med["off"] if "notrace" in med else None,
        "name": name,
        "off": med["off"],
        "on": med["on"],
        "paused": med["paused"],
        "overhead": med["on"] - med["off"],
        "paused_overhead": med["paused"] - med["off"],
        "objects_overhead": med["objects"] - med["off"],
        "paired": statistics.median(a - b for a, b in zip(times["on"], times["off"], strict=True)),
        "wall_off": statistics.median(walls["off"]),
        "wall_overhead": statistics.median(walls["on"]) - statistics.median(walls["off"]),
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
        f"- Method: {args.reps} repetitions x {args.n} calls per mode, modes interleaved; medians over "
        "repetitions of the mean time per call. 200 synthetic passages, BM25, top 10, 50 distinct queries.",
        "- Times are CPU time of the process (`time.process_time`), because the machine is shared and wall "
        "time swings by more than the overhead; the wall-time overhead is shown for reference.",
        "",
        "Per retrieval, microseconds of CPU time (target: capture overhead < 50 µs):",
        "",
        "| pipeline | off | on | overhead (on - off) | paired median | `trace=False` - off | "
        '`retain="objects"` - off | paused - off | wall: off / overhead | read (per record) |',
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        notrace = "n/a" if r["notrace_overhead"] is None else us(r["notrace_overhead"])
        lines.append(
            f"| {r['name']} | {us(r['off'])} | {us(r['on'])} | **{us(r['overhead'])}** | {us(r['paired'])} | "
            f"{notrace} | {us(r['objects_overhead'])} | {us(r['paused_overhead'])} | "
            f"{us(r['wall_off'])} / {us(r['wall_overhead'])} | "
            f"{us(r['read'])} |"
        )
    lines += [
        "",
        "Garbage collection during the calls, µs of CPU time per call (median over repetitions; steadier than "
        "the differences above):",
        "",
        '| pipeline | off | on | `retain="objects"` |',
        "| --- | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r['name']} | {us(r['gc']['off'])} | {us(r['gc']['on'])} | {us(r['gc']['objects'])} |" for r in results
    ]
    lines += ["", "Handler methods alone (no framework around them), per retrieval, CPU time:", ""]
    lines += ["| handler | µs |", "| --- | ---: |"]
    lines += [f"| {k} | {us(v)} |" for k, v in floor.items()]
    met = [r["name"] for r in results if r["overhead"] * 1e6 < TARGET_US]
    borderline = [r["name"] for r in results if r["name"] in met and r["paired"] * 1e6 >= TARGET_US]
    lines += [
        "",
        f"Pipelines within the {TARGET_US:.0f} µs target (on - off): {len(met)} of {len(results)} "
        f"({', '.join(met) or 'none'})"
        + (f"; not by the paired median: {', '.join(borderline)}" if borderline else "")
        + ". What the overhead is made of:",
        "",
        "1. rankbridge's own handler code: the handler table above (a few µs per retrieval).",
        "2. The framework carrying one more handler through every run: LangChain adds it to the callback "
        "manager of every run of a chain and calls it for chain events (skipped with `capture(trace=False)`), "
        "LlamaIndex calls the span handler for every span and the event handler for every event. A paused "
        "capture is not added to new LangChain runs at all, so its `paused - off` is LlamaIndex's part alone.",
        "3. The garbage collector: records keep a light snapshot of each result (own id, text, metadata "
        "reference, score) and let the framework's objects go. Keeping the objects instead "
        '(`retain="objects"`, what records did before the snapshot) makes Python run young-generation '
        "collections during the app's calls (LlamaIndex builds fresh nodes for every retrieval): that column "
        "shows the cost.",
        "",
        "The LCEL chain stays above the target: most of its overhead is LangChain carrying any extra handler "
        "through the chain's six runs (new callback managers per run; the chat model checks every handler "
        "against a runtime protocol to decide whether to stream), not rankbridge's code. Before paused "
        "captures were left out of new runs, that part alone measured about 40 µs (`paused - off` with the "
        "handler attached). `capture(trace=False)` saves the chain events (and `trace_id`).",
        "",
        "Figures are medians on a shared 2-core machine under load; differences of 10-30 µs between runs are "
        "noise (a negative figure means noise exceeded the overhead). `read` is paid when `cap.run` is read, "
        "never inside the application's call.",
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
    parser.add_argument("--reps", type=int, default=15)
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
            f"{name:28s} off {us(r['off'])} µs  on {us(r['on'])} µs  overhead {us(r['overhead'])} µs  "
            f"paired {us(r['paired'])} µs  paused {us(r['paused_overhead'])} µs  read {us(r['read'])} µs  "
            f"gc on/objects {us(r['gc']['on'])}/{us(r['gc']['objects'])} µs",
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
