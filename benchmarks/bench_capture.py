"""Overhead of live capture per retrieval: the same offline pipelines with and without the handlers.

Pipelines (all offline, over the same 200-passage synthetic corpus, BM25, top 10):

* ``LangChain retriever``: ``BM25Retriever.invoke(q)`` (langchain_community, rank-bm25).
* ``LangChain LCEL chain``: ``retriever | format (RunnableLambda) | prompt | FakeListChatModel |
  StrOutputParser`` (6 runs per call).
* ``LlamaIndex retriever``: ``BM25Retriever.retrieve(q)`` (llama-index-retrievers-bm25).
* ``LlamaIndex query engine``: ``RetrieverQueryEngine.query(q)`` with ``MockLLM``.

Each pipeline runs in these modes: ``off`` (no capture enabled), ``on`` (``capture()`` with its defaults,
recording every retrieval), ``noop`` (handlers that do nothing, put where ``capture()`` puts its own: the
framework's price for calling a handler there), ``objects`` (``capture(retain="objects")``: records keep the
framework's result objects instead of a light snapshot) and, for LangChain, ``trace`` (``capture(trace=True)``:
the handler rides on every run of the chain, to give each record its ``trace_id``).

Method: the modes are interleaved call by call in ``--n`` blocks; a block is one call per mode, in a shuffled
order, on the same query, so each mode is compared with ``off`` on the same query a few ms apart: neither the
queries' own costs (tens of µs apart) nor slow drifts of the shared machine enter the differences. Each
capture mode has one capture for the whole run, paused (``cap.enabled = False``) except during its own calls;
switching it on and off happens outside the timed region and touches little (LlamaIndex: the handler goes on
and off the dispatcher; LangChain: the hook slot hands the handler to new runs or not; a paused LangChain
capture still costs the hook a method call per run, in every mode alike, because LangChain hooks cannot be
unregistered). Each call's CPU time (``time.process_time_ns``) is one sample, with the garbage collector's CPU
time during it (``gc.callbacks``) taken out: a collection runs in whichever call crosses Python's allocation
threshold, whatever its mode, and a rare full one costs tens of ms. The in-call overhead of a mode is the
mean, over blocks, of its time minus ``off``'s, with a 95% percentile-bootstrap interval (blocks resampled);
the difference of medians is shown as a check. The collector's own cost is measured apart, over ``--gc-calls``
calls in a row without capture and with it, every record kept as an app keeps them until it reads the capture;
the overhead of ``capture()`` is the in-call difference plus the collector's extra time per call: the expected
CPU cost of a captured retrieval. Also reported: how many objects tracked by the collector a record keeps
alive. In the interleaved run, every 100 records a capture's records are checked (one per call, no error) and
cleared, so that the heap stays the same for every mode. ``read`` is the cost, outside the application's call,
of turning one record into hits when ``cap.run`` is read (a capture of 200 calls read in one go). ``handler
floor`` times the handler methods alone on a prebuilt result list (no framework around them, hot caches), the
part of the overhead that is rankbridge's code.

``--golden`` measures what a golden set with doc ids costs inside the app: ``capture(golden)`` makes records
copy each result's ``ref_doc_id`` as well. It runs the two LlamaIndex pipelines over chunk-like nodes (UUID
node ids, each with a ``NodeRelationship.SOURCE`` link to its passage, as ``SentenceSplitter`` makes them) in
three modes, ``off``, ``on`` (``capture()``) and ``golden`` (``capture(golden)``, a golden set with the corpus
and the 50 queries), by the same block design; ``golden`` is compared with ``off`` and, call for call in the
same blocks, with ``on``. Its ``read`` includes the id check and the resolution of the UUIDs to ``ref_doc_id``.

Usage: ``.venv/bin/python benchmarks/bench_capture.py [--n 3000] [--gc-calls 3000] [--golden] [--write]``
(about two minutes on 2 cores; ``--golden`` about as long).
``--write`` replaces the capture section of docs/benchmarks.md (with ``--golden``: its golden-set part only).
``--neighbour`` runs a memory-bound process on another core meanwhile (a busier machine); its figures are
quoted in docs/capture.md, not recorded.
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
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

import numpy as np

from rankbridge.capture import Recorder, capture

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
START, END = "<!-- capture:start -->", "<!-- capture:end -->"
GOLDEN_START, GOLDEN_END = "<!-- capture-golden:start -->", "<!-- capture-golden:end -->"
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


def chunk_nodes(docs: dict[str, str]) -> list[Any]:
    """One node per passage, shaped as ``SentenceSplitter`` chunks are: a UUID node id (fixed, for repeatable
    runs) and a ``SOURCE`` relationship naming the passage (its ``ref_doc_id``)."""
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    rng = random.Random(2)
    return [
        TextNode(
            text=t,
            id_=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=d)},
        )
        for d, t in docs.items()
    ]


def golden_set(docs: dict[str, str], qs: list[str]) -> Any:
    """The golden set ``--golden`` captures with: the benchmark's queries and its corpus (doc ids to check)."""
    from rankbridge import GoldenSet, Qrels, Query

    return GoldenSet(
        [Query(f"q{i}", q) for i, q in enumerate(qs)], Qrels({}), corpus={d: {"text": t} for d, t in docs.items()}
    )


def llamaindex_pipelines(docs: dict[str, str], *, chunks: bool = False) -> dict[str, Callable[[str], Any]]:
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    Settings.llm = MockLLM(max_tokens=8)
    nodes = chunk_nodes(docs) if chunks else [TextNode(text=t, id_=d) for d, t in docs.items()]
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8))
    return {"LlamaIndex retriever": retriever.retrieve, "LlamaIndex query engine": engine.query}


# -- timing ---------------------------------------------------------------------------------------
_gc_ns = [0, 0]  # CPU ns spent in garbage collections so far, start of the current one


def _gc_timer(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _gc_ns[1] = time.process_time_ns()
    else:
        _gc_ns[0] += time.process_time_ns() - _gc_ns[1]


def median_shift(
    on: np.ndarray, off: np.ndarray, *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """``median(on) - median(off)`` and its 95% percentile-bootstrap interval (each sample resampled alone)."""
    rng = np.random.default_rng(seed)
    a = np.median(on[rng.integers(0, len(on), size=(resamples, len(on)))], axis=1)
    b = np.median(off[rng.integers(0, len(off), size=(resamples, len(off)))], axis=1)
    lo, hi = np.percentile(a - b, [2.5, 97.5])
    return float(np.median(on) - np.median(off)), float(lo), float(hi)


def mean_shift(on: np.ndarray, off: np.ndarray, *, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """``mean(on - off)`` over blocks (``on[i]``, ``off[i]``: the same query, one block) and its 95%
    percentile-bootstrap interval (blocks resampled)."""
    rng = np.random.default_rng(seed)
    d = on - off
    means = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(d.mean()), float(lo), float(hi)


_noop_slot: Any = None


def noop_switch(framework: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """(put in place, take away) handlers that do nothing, where ``capture()`` puts its own: the framework's
    price for calling any handler at those points (LlamaIndex: a span handler on the root dispatcher, in
    the place of its ``NullSpanHandler``; LangChain: a callback handler on retriever runs, through the same
    configure hook and stack check)."""
    global _noop_slot
    if framework == "llamaindex":
        from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
        from llama_index.core.instrumentation.span_handlers import BaseSpanHandler, NullSpanHandler

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
        before = list(d.span_handlers)
        noop = NoopSpans()
        with_noop = [noop if type(h) is NullSpanHandler else h for h in before]
        if noop not in with_noop:
            with_noop.append(noop)

        def put() -> None:
            d.span_handlers = with_noop

        def take() -> None:
            d.span_handlers = before

        return put, take
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.tracers.context import register_configure_hook

    from rankbridge.frameworks.langchain.capture import _configuring_retriever

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
    slot, handler = _noop_slot, Noop()

    def put_lc() -> None:
        slot.handler = handler

    def take_lc() -> None:
        slot.handler = None

    return put_lc, take_lc


BATCH = 100  # records a capture keeps before the benchmark checks, reads and clears them


def _drain(cap: Any) -> int:
    """Check a capture's records (one per call, no internal error) and clear them."""
    records = cap.records
    assert cap.recorder.internal_errors == 0, cap.recorder.last_internal_error
    assert all(r.error is None and r.retrieved for r in records)
    cap.recorder.clear()
    return len(records)


def read_cost(
    framework: str, fn: Callable[[str], Any], qs: list[str], n: int = 200, **options: Any
) -> tuple[float, float]:
    """Seconds per record to read a capture of ``n`` calls as a run (outside the application's calls), and
    how many more objects tracked by the garbage collector the process holds per record while it is kept
    (against the same calls without capture). ``options`` go to ``capture()``."""

    def tracked_growth(cap: Any) -> int:
        gc.collect()
        before = len(gc.get_objects())
        if cap is not None:
            cap.__enter__()
        for i in range(n):
            fn(qs[i % len(qs)])
        if cap is not None:
            cap.__exit__(None, None, None)
        gc.collect()
        return len(gc.get_objects()) - before

    baseline = tracked_growth(None)
    cap = capture(frameworks=[framework], max_records=n, **options)
    kept = (tracked_growth(cap) - baseline) / n
    t0 = time.perf_counter()
    assert len(cap.to_run()) > 0
    for rec in cap.records:
        rec.retrieved  # noqa: B018 -- resolve every record, not only the first of each query
    return (time.perf_counter() - t0) / n, kept


def gc_cost(
    framework: str,
    fn: Callable[[str], Any],
    qs: list[str],
    n: int,
    variants: dict[str, dict[str, Any] | None] | None = None,
) -> dict[str, tuple[float, list[int]]]:
    """The garbage collector's CPU seconds per call and its collections per generation, over ``n`` calls in
    a row without capture, with ``capture()`` and with ``capture(retain="objects")`` (or the ``capture()``
    options of ``variants``, ``None`` for no capture), every record kept as an app keeps them until it reads
    the capture. (Collections run at points fixed by allocation counts, so the interleaved timing cannot say
    whose they are; these runs can.)"""
    out: dict[str, tuple[float, list[int]]] = {}
    if variants is None:
        variants = {"off": None, "on": {}, "objects": {"retain": "objects"}}
    for mode, kw in variants.items():
        cap = capture(frameworks=[framework], max_records=n, **kw) if kw is not None else None
        gc.collect()
        before = [g["collections"] for g in gc.get_stats()]
        g0 = _gc_ns[0]
        gc.callbacks.append(_gc_timer)
        try:
            if cap is not None:
                cap.__enter__()
            for i in range(n):
                fn(qs[i % len(qs)])
        finally:
            if cap is not None:
                cap.__exit__(None, None, None)
            gc.callbacks.remove(_gc_timer)
        after = [g["collections"] for g in gc.get_stats()]
        out[mode] = ((_gc_ns[0] - g0) / 1e9 / n, [b - a for a, b in zip(before, after, strict=True)])
        if cap is not None:
            assert len(cap.records) == n and cap.recorder.internal_errors == 0
        del cap
    return out


def measure(
    name: str, fn: Callable[[str], Any], qs: list[str], *, n: int, gc_calls: int, golden: Any = None
) -> dict[str, Any]:
    """The modes of one pipeline, interleaved in ``n`` blocks; with ``golden``, the ``off`` / ``on`` /
    ``golden`` modes only (``capture(golden)`` beside the default ``capture()``)."""
    framework = "langchain" if name.startswith("LangChain") else "llamaindex"
    for q in qs[:20]:  # warm up caches, lazy imports, first-call costs
        fn(q)
    options: dict[str, dict[str, Any]]
    if golden is not None:
        options = {"on": {}, "golden": {"golden": golden}}
        modes = ["off", *options]
    else:
        options = {"on": {}, "objects": {"retain": "objects"}}
        if framework == "langchain":
            options["trace"] = {"trace": True}
        modes = ["off", "noop", *options]
    # one capture per mode for the whole run, paused between its calls: switching a mode on and off is then
    # `cap.enabled` (LlamaIndex: the handler goes on and off the dispatcher; LangChain: the hook slot hands
    # the handler to new runs or not), which leaves the caches as they were before the call
    captures = {mode: capture(frameworks=[framework], max_records=BATCH + 10, **kw) for mode, kw in options.items()}
    for cap in captures.values():
        cap.__enter__()
        cap.enabled = False
    put_noop, take_noop = noop_switch(framework)
    times: dict[str, list[int]] = {m: [] for m in modes}
    gcs: dict[str, list[int]] = {m: [] for m in modes}
    counts = dict.fromkeys(captures, 0)
    # n blocks, each one call per mode in a shuffled order on the same query: the modes are compared call
    # for call on the same query a few ms apart, so neither the queries' own costs (they differ by tens of µs)
    # nor the machine's drifts enter the differences
    rng = random.Random(n)
    seq: list[str] = []
    for _ in range(n):
        block = list(modes)
        rng.shuffle(block)
        seq += block
    clock = time.process_time_ns
    gc.collect()
    gc.callbacks.append(_gc_timer)
    try:
        for i, mode in enumerate(seq):
            current = captures.get(mode)
            if current is not None:
                current.enabled = True
            elif mode == "noop":
                put_noop()
            q = qs[(i // len(modes)) % len(qs)]
            g0 = _gc_ns[0]
            c0 = clock()
            fn(q)
            c1 = clock()
            gcs[mode].append(_gc_ns[0] - g0)
            times[mode].append(c1 - c0)
            if current is not None:
                current.enabled = False
                if len(current.records) >= BATCH:  # keep the heap the same size for every mode
                    counts[mode] += _drain(current)
            elif mode == "noop":
                take_noop()
        for mode, cap in captures.items():
            counts[mode] += _drain(cap)
    finally:
        gc.callbacks.remove(_gc_timer)
        for cap in captures.values():
            cap.__exit__(None, None, None)
    assert all(c == n for c in counts.values()), (name, counts, n)
    arr = {m: np.array(v, dtype=float) / 1e9 for m, v in times.items()}
    # CPU time outside garbage collections: a collection (rare, up to tens of ms for a full one) lands on
    # whichever call crosses Python's threshold, whatever its mode, and would swamp a difference of means
    mutator = {m: arr[m] - np.array(gcs[m], dtype=float) / 1e9 for m in modes}
    off = arr["off"]
    if golden is not None:
        return _golden_result(name, framework, fn, qs, n, gc_calls, golden, arr, mutator)
    read, kept = read_cost(framework, fn, qs)
    collector = gc_cost(framework, fn, qs, gc_calls)
    return {
        "name": name,
        "n": n,
        "off": float(np.median(off)),
        "overhead": median_shift(arr["on"], off),
        "mean_overhead": mean_shift(mutator["on"], mutator["off"]),
        "kept": kept,
        "trace_overhead": mean_shift(mutator["trace"], mutator["off"]) if "trace" in arr else None,
        "noop_overhead": mean_shift(mutator["noop"], mutator["off"]),
        "objects_overhead": mean_shift(mutator["objects"], mutator["off"]),
        "read": read,
        "gc": collector,
        # the expected cost per call: CPU time outside collections, plus the collector's extra time per call
        "total": tuple(x + collector["on"][0] - collector["off"][0] for x in mean_shift(mutator["on"], mutator["off"])),
    }


def _golden_result(
    name: str,
    framework: str,
    fn: Callable[[str], Any],
    qs: list[str],
    n: int,
    gc_calls: int,
    golden: Any,
    arr: dict[str, np.ndarray],
    mutator: dict[str, np.ndarray],
) -> dict[str, Any]:
    """What ``measure`` reports in the ``--golden`` run: each capture mode against ``off``, and ``golden``
    against ``on`` call for call (the same blocks), each plus its collector's extra time per call."""
    read_on, kept_on = read_cost(framework, fn, qs)
    read_golden, kept_golden = read_cost(framework, fn, qs, golden=golden)
    collector = gc_cost(framework, fn, qs, gc_calls, {"off": None, "on": {}, "golden": {"golden": golden}})

    def plus(x: tuple[float, float, float], extra: float) -> tuple[float, float, float]:
        return (x[0] + extra, x[1] + extra, x[2] + extra)

    gc_on = collector["on"][0] - collector["off"][0]
    gc_golden = collector["golden"][0] - collector["off"][0]
    return {
        "name": name,
        "n": n,
        "off": float(np.median(arr["off"])),
        "on": plus(mean_shift(mutator["on"], mutator["off"]), gc_on),
        "golden": plus(mean_shift(mutator["golden"], mutator["off"]), gc_golden),
        "golden_vs_on": plus(mean_shift(mutator["golden"], mutator["on"]), gc_golden - gc_on),
        "golden_vs_on_in_call": mean_shift(mutator["golden"], mutator["on"]),
        "golden_vs_on_median": median_shift(arr["golden"], arr["on"]),
        "gc": collector,
        "kept": (kept_on, kept_golden),
        "read": (read_on, read_golden),
    }


def handler_floor_golden(docs: dict[str, str], *, reps: int, n: int) -> dict[str, float]:
    """Seconds per retrieval in the LlamaIndex handler methods alone, on chunk-like nodes: ``capture()``'s
    recorder, ``capture(golden)``'s (``keep_ref=True``), and the latter through the generic snapshot."""
    import inspect

    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.response.schema import Response
    from llama_index.core.schema import NodeWithScore, QueryBundle

    from rankbridge.frameworks.llamaindex.capture import RankbridgeSpanHandler, _Tap

    class FloorRetriever(BaseRetriever):  # type: ignore[misc]
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return []

    retriever = FloorRetriever()
    bound = inspect.signature(retriever.retrieve).bind("scurvy vitamin")
    nodes = [NodeWithScore(node=node, score=1.0) for node in chunk_nodes(dict(list(docs.items())[:10]))]
    variants = {
        "LlamaIndex handler, `capture()`": (False, True),
        "LlamaIndex handler, `capture(golden)`": (True, True),
        "LlamaIndex handler, `capture(golden)` through the generic snapshot (for reference)": (True, False),
    }
    out: dict[str, float] = {}
    for label, (keep_ref, fast_path) in variants.items():
        times = []
        for _ in range(reps):
            tap = _Tap(Recorder(max_records=n + 10, keep_ref=keep_ref))
            tap._fast_snapshot = fast_path
            handler = RankbridgeSpanHandler.bound_to(tap)
            spans = [
                (
                    f"FloorRetriever.retrieve-{uuid.uuid4()}",
                    f"RetrieverQueryEngine._query-{uuid.uuid4()}",
                    Response("a", source_nodes=list(nodes)),
                )
                for _ in range(n)
            ]
            gc.collect()
            t0 = time.process_time()
            for span, parent, response in spans:
                handler.span_enter(id_=parent, bound_args=bound, instance=None, parent_id=None, tags={})
                handler.span_enter(id_=span, bound_args=bound, instance=retriever, parent_id=parent, tags={})
                handler.span_exit(id_=span, bound_args=bound, instance=retriever, result=nodes)
                handler.span_exit(id_=parent, bound_args=bound, instance=None, result=response)
            times.append((time.process_time() - t0) / n)
            records = tap._recorder.records
            assert len(records) == n and tap._recorder.internal_errors == 0
            assert records[0].results()[0][0].ref_doc_id == ("d0" if keep_ref else None)  # type: ignore[index]
        out[label] = statistics.median(times)
    return out


def handler_floor(docs: dict[str, str], *, reps: int, n: int) -> dict[str, float]:
    """Seconds per retrieval spent in rankbridge's handler methods alone (start + end), per framework."""
    out: dict[str, float] = {}
    from langchain_core.documents import Document

    from rankbridge.frameworks.langchain.capture import RankbridgeCallbackHandler

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

    import inspect

    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.response.schema import Response
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from rankbridge.frameworks.llamaindex.capture import RankbridgeSpanHandler, _Tap

    class FloorRetriever(BaseRetriever):  # type: ignore[misc]
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return []

    retriever = FloorRetriever()
    bound = inspect.signature(retriever.retrieve).bind("scurvy vitamin")
    nodes = [NodeWithScore(node=TextNode(text=t, id_=d), score=1.0) for d, t in list(docs.items())[:10]]
    li_times = []
    for _ in range(reps):
        li_handler = RankbridgeSpanHandler.bound_to(_Tap(Recorder(max_records=n + 10)))
        spans = [
            (
                f"FloorRetriever.retrieve-{uuid.uuid4()}",
                f"RetrieverQueryEngine._query-{uuid.uuid4()}",
                Response("a", source_nodes=list(nodes)),  # the engine's response holds a copy of the list
            )
            for _ in range(n)
        ]
        gc.collect()
        t0 = time.process_time()
        for span, parent_span, response in spans:
            # the enclosing query-engine span, the retrieve span, and the response with its source nodes
            li_handler.span_enter(id_=parent_span, bound_args=bound, instance=None, parent_id=None, tags={})
            li_handler.span_enter(id_=span, bound_args=bound, instance=retriever, parent_id=parent_span, tags={})
            li_handler.span_exit(id_=span, bound_args=bound, instance=retriever, result=nodes)
            li_handler.span_exit(id_=parent_span, bound_args=bound, instance=None, result=response)
        li_times.append((time.process_time() - t0) / n)
        assert len(li_handler.tap._recorder.records) == n and li_handler.tap._recorder.internal_errors == 0
    out["LlamaIndex handler (retrieve span + enclosing span)"] = statistics.median(li_times)
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
        f"start {load:.2f} (other processes share the machine)"
        + ("; with a memory-bound neighbour process (`--neighbour`)" if args.neighbour else ""),
        f"- Method: {args.n} blocks of one call per mode, in a shuffled order, on the same query; each "
        "capture mode has one capture for the whole run, enabled only during its own calls (switched outside the "
        "timed region); CPU time per call (`time.process_time_ns`). Garbage collections are accounted apart: "
        "a collection runs in whichever call crosses Python's allocation threshold, whatever its mode, so the "
        "interleaved calls are compared on their CPU time outside collections (mean over blocks of the "
        "difference with `off`, [95% bootstrap interval, blocks resampled]), and the collector's own time is "
        f"measured over {args.gc_calls} calls in a row per mode, every record kept as an app keeps them until "
        "it reads the capture (`gc`: µs per call, and "
        "collections of generations 0/1/2). Overhead = the in-call difference plus the collector's extra time "
        "per call, i.e. the expected CPU cost per captured retrieval; the difference of medians is shown as a "
        "check. 200 synthetic passages, BM25, top 10, 50 distinct queries.",
        "",
        f"Per retrieval, microseconds of CPU time (target: capture overhead < {TARGET_US:.0f} µs):",
        "",
        "| pipeline | off (median) | **overhead of `capture()`** | in call (mean) | in call (median) | gc: off / on | "
        'no-op handlers | `trace=True` | `retain="objects"` (its gc) | objects kept per record | '
        "read (per record) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]

    def ci(x: tuple[float, float, float] | None) -> str:
        return "n/a" if x is None else f"{us(x[0])} [{us(x[1])}, {us(x[2])}]"

    def gcs(x: tuple[float, list[int]]) -> str:
        return f"{us(x[0])} ({'/'.join(map(str, x[1]))})"

    for r in results:
        lines.append(
            f"| {r['name']} | {us(r['off'])} | **{ci(r['total'])}** | {ci(r['mean_overhead'])} | {ci(r['overhead'])} | "
            f"{gcs(r['gc']['off'])} / {gcs(r['gc']['on'])} | {ci(r['noop_overhead'])} | {ci(r['trace_overhead'])} | "
            f"{ci(r['objects_overhead'])} ({gcs(r['gc']['objects'])}) | {r['kept']:.1f} | {us(r['read'])} |"
        )
    lines += ["", "Handler methods alone (no framework around them, hot caches), per retrieval, CPU time:", ""]
    lines += ["| handler | µs |", "| --- | ---: |"]
    lines += [f"| {k} | {us(v)} |" for k, v in floor.items()]
    sure = [r["name"] for r in results if r["total"][2] * 1e6 < TARGET_US]
    point = [r["name"] for r in results if r["total"][0] * 1e6 < TARGET_US and r["name"] not in sure]
    over = [r["name"] for r in results if r["total"][0] * 1e6 >= TARGET_US]
    lines += [
        "",
        f"Against the {TARGET_US:.0f} µs target: within it, whole interval below: "
        f"{', '.join(sure) or 'none'}; "
        f"median below but the interval reaches it: {', '.join(point) or 'none'}; above: {', '.join(over) or 'none'}.",
        "",
        "What the overhead is made of:",
        "",
        "1. rankbridge's own handler code: the handler table above, a few µs with hot caches; inside a "
        "pipeline the same code runs with cold caches and costs several times more.",
        "2. The framework calling one more handler: the `no-op handlers` column, handlers that do nothing "
        "put where `capture()` puts its own. LangChain charges every handler on every run it is attached to, "
        "even one that ignores their events (callback managers copied per run; the chat model checks each "
        "handler against a runtime protocol before deciding whether to stream). By default `capture()` hands "
        "its handler to retriever runs only (the configure hook looks at which code is starting the run), so a "
        "chain's other runs do not carry it; `trace=True` puts it on every run to record each retrieval's "
        "outermost run, the `trace=True` column. LlamaIndex calls every span handler for every span (12 in the "
        "query engine); `capture()` uses one span handler and no event handler, and puts it in the place of "
        "LlamaIndex's default `NullSpanHandler` (whose methods do nothing; it is put back on exit), so "
        "LlamaIndex calls as many handlers per span as without capture. A paused capture is not called at "
        "all (LlamaIndex: the handler is off the dispatcher; LangChain: it is not added to new runs).",
        "3. The garbage collector: records keep a light snapshot of each result (own id, text, metadata "
        'reference unless it is empty, score) and let the framework\'s objects go; `retain="objects"` keeps '
        "the objects, which makes Python run more collections during the app's calls when the framework builds "
        "fresh result objects for every retrieval (LlamaIndex does).",
        "",
        "Figures are on a shared 2-core machine; a negative figure means noise exceeded the overhead. "
        "`read` is paid when `cap.run` is read, never inside the application's call.",
    ]
    return "\n".join(lines)


def report_golden(results: list[dict[str, Any]], floor: dict[str, float], args: argparse.Namespace) -> str:
    command = " ".join([".venv/bin/python", "benchmarks/bench_capture.py", *sys.argv[1:]])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    def ci(x: tuple[float, float, float]) -> str:
        return f"{us(x[0])} [{us(x[1])}, {us(x[2])}]"

    def gcs(x: tuple[float, list[int]]) -> str:
        return f"{us(x[0])} ({'/'.join(map(str, x[1]))})"

    lines = [
        "### With a golden set (`--golden`)",
        "",
        f"- Command: `{command}`",
        f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- Versions: Python {platform.python_version()}, llama-index-core {_version('llama-index-core')}, "
        f"llama-index-retrievers-bm25 {_version('llama-index-retrievers-bm25')}",
        f"- Machine: {platform.system()} {platform.machine()}, nproc={os.cpu_count()}, {_cpu()}; load average at "
        f"start {load:.2f} (other processes share the machine)"
        + ("; with a memory-bound neighbour process (`--neighbour`)" if args.neighbour else ""),
        f"- Method: as above, {args.n} blocks of one call per mode (`off`, `on`: `capture()`, `golden`: "
        "`capture(golden)` with a golden set holding the corpus and the 50 queries, which makes records copy "
        "each result's `ref_doc_id`), collector measured over "
        f"{args.gc_calls} calls in a row per mode. The nodes are shaped as `SentenceSplitter` chunks: UUID node "
        "ids, each with a `NodeRelationship.SOURCE` link to its passage (BM25 rebuilds them for every query). "
        "`golden − default` compares the two capture modes call for call in the same blocks (in-call mean "
        "difference plus the collectors' difference). `read` with a golden set includes the id check and the "
        "resolution of the UUIDs to `ref_doc_id`.",
        "",
        "Per retrieval, microseconds of CPU time:",
        "",
        "| pipeline | off (median) | overhead of `capture()` | **overhead of `capture(golden)`** | "
        "**golden − default** | golden − default in call (mean) | golden − default in call (median) | "
        "gc: off / on / golden | objects kept per record: on / golden | read per record: on / golden |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r['name']} | {us(r['off'])} | {ci(r['on'])} | **{ci(r['golden'])}** | **{ci(r['golden_vs_on'])}** | "
            f"{ci(r['golden_vs_on_in_call'])} | {ci(r['golden_vs_on_median'])} | {gcs(r['gc']['off'])} / "
            f"{gcs(r['gc']['on'])} / {gcs(r['gc']['golden'])} | {r['kept'][0]:.1f} / {r['kept'][1]:.1f} | "
            f"{us(r['read'][0])} / {us(r['read'][1])} |"
        )
    lines += ["", "Handler methods alone (10 chunk-like nodes, hot caches), per retrieval, CPU time:", ""]
    lines += ["| handler | µs |", "| --- | ---: |"]
    lines += [f"| {k} | {us(v)} |" for k, v in floor.items()]
    sure = [r["name"] for r in results if r["golden"][2] * 1e6 < TARGET_US]
    lines += [
        "",
        f"Against the {TARGET_US:.0f} µs target with a golden set: whole interval below: {', '.join(sure) or 'none'}.",
        "Figures are on a shared 2-core machine; a negative figure means noise exceeded the difference.",
    ]
    return "\n".join(lines)


def write_section(body: str, start: str = START, end: str = END) -> None:
    block_text = f"{start}\n{body.strip()}\n{end}"
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"  # re-read right before writing
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block_text, text)
    elif start != START and END in text:  # the golden-set part goes right after the capture section
        text = text.replace(END, END + "\n\n" + block_text, 1)
    else:
        text = text.rstrip("\n") + "\n\n" + block_text + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
    print(f"wrote {start} ... {end} in {DOC}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="blocks (one call per mode each) per pipeline")
    parser.add_argument("--gc-calls", type=int, default=3000, help="calls in a row per mode for the collector's cost")
    parser.add_argument("--reps", type=int, default=30, help="repetitions of the handler floor")
    parser.add_argument("--only", default="", help="run only the pipelines whose name contains this text")
    parser.add_argument(
        "--golden",
        action="store_true",
        help="measure capture(golden) (records copy ref_doc_id) against capture() on the LlamaIndex pipelines",
    )
    parser.add_argument("--write", action="store_true", help="replace the capture section of docs/benchmarks.md")
    parser.add_argument(
        "--neighbour",
        action="store_true",
        help="run a memory-bound process on another core meanwhile (a busier machine: shared caches, memory bus)",
    )
    args = parser.parse_args()
    if args.write and (args.only or args.neighbour):
        parser.error("--write records every pipeline on the machine as it is: drop --only and --neighbour")
    neighbour = start_neighbour() if args.neighbour else None
    try:
        run(args)
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()


#: streams over a 256 MB array (far beyond any cache) until killed
NEIGHBOUR = "import numpy as np\na = np.ones(32 * 1024 * 1024)\nwhile True:\n    a *= 1.0000001\n"


def start_neighbour() -> subprocess.Popen[bytes]:
    """A memory-bound process beside the benchmark, as a busy shared machine has."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", NEIGHBOUR], env=env)
    time.sleep(1.0)  # let it allocate and start streaming
    return proc


def run(args: argparse.Namespace) -> None:
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
        os.environ.pop(var, None)
    warnings.simplefilter("ignore")
    logging_quiet()
    docs, qs = corpus(), queries()
    if args.golden:
        run_golden(args, docs, qs)
        return
    pipelines = {**langchain_pipelines(docs), **llamaindex_pipelines(docs)}
    results = []
    for name, fn in pipelines.items():
        if args.only not in name:
            continue
        r = measure(name, fn, qs, n=args.n, gc_calls=args.gc_calls)
        print(
            f"{name:28s} off {us(r['off'])} µs  overhead {us(r['total'][0])} µs "
            f"[{us(r['total'][1])}, {us(r['total'][2])}]  in call: mean {us(r['mean_overhead'][0])} µs, median "
            f"{us(r['overhead'][0])} µs  "
            f"noop {us(r['noop_overhead'][0])} µs  kept {r['kept']:.1f}  read {us(r['read'])} µs  "
            f"gc off/on/objects {us(r['gc']['off'][0])}/{us(r['gc']['on'][0])}/{us(r['gc']['objects'][0])} µs",
            flush=True,
        )
        results.append(r)
    floor = handler_floor(docs, reps=args.reps, n=1000)
    for k, v in floor.items():
        print(f"{k:40s} {us(v)} µs")
    body = report(results, floor, args)
    print(body)
    if args.write:
        write_section(body)
    asyncio.set_event_loop(None)


def run_golden(args: argparse.Namespace, docs: dict[str, str], qs: list[str]) -> None:
    golden = golden_set(docs, qs)
    results = []
    for name, fn in llamaindex_pipelines(docs, chunks=True).items():
        if args.only not in name:
            continue
        r = measure(name, fn, qs, n=args.n, gc_calls=args.gc_calls, golden=golden)
        print(
            f"{name:28s} off {us(r['off'])} µs  capture() {us(r['on'][0])} [{us(r['on'][1])}, {us(r['on'][2])}]  "
            f"capture(golden) {us(r['golden'][0])} [{us(r['golden'][1])}, {us(r['golden'][2])}]  golden - default "
            f"{us(r['golden_vs_on'][0])} [{us(r['golden_vs_on'][1])}, {us(r['golden_vs_on'][2])}] µs",
            flush=True,
        )
        results.append(r)
    floor = handler_floor_golden(docs, reps=args.reps, n=1000)
    for k, v in floor.items():
        print(f"{k:40s} {us(v)} µs")
    body = report_golden(results, floor, args)
    print(body)
    if args.write:
        write_section(body, GOLDEN_START, GOLDEN_END)
    asyncio.set_event_loop(None)


def logging_quiet() -> None:
    import logging

    logging.getLogger("bm25s").setLevel(logging.WARNING)


if __name__ == "__main__":
    main()
