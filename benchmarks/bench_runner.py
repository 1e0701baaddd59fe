"""Runner benchmarks: per-query overhead on an instant retriever, and throughput on a 50 ms one.

Run:  .venv/bin/python benchmarks/bench_runner.py [--quick] [--only llamaindex,langchain] [--queries N] [--repeats R]
      .venv/bin/python benchmarks/bench_runner.py --calls   (cProfile call counts per query, all threads)

1. Overhead: the runner (default settings, no progress bar) over a retriever that returns 10 hits
   instantly, minus calling that retriever directly in a loop; per query, median of repeats. The same on
   a LlamaIndex BaseRetriever stub, beside LlamaIndex's RetrieverEvaluator loop over it (when
   llama-index-core is installed).
2. Throughput: 1,000 queries, a retriever that sleeps 50 ms per call, concurrency 32; ideal
   1000 * 0.05 / 32 = 1.5625 s. Sync (thread) and async retrievers through the runner, and LangChain's
   ``abatch(max_concurrency=32)`` over equivalent LangChain retrievers (when langchain-core is installed).
3. ``--calls``: how many Python-level calls one query makes through ``run_retriever`` at concurrency 1 on
   the LlamaIndex and LangChain stubs (cProfile in every thread, 1,000 queries): rankbridge's own
   functions, the calls made from rankbridge code, and everything. Counts are deterministic, so they show
   what a change removed where the timings on a shared machine move by more than the change.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import os
import pstats
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rankbridge import Hit
from rankbridge.runner import run_retriever

warnings.simplefilter("ignore", DeprecationWarning)

HITS = [Hit(f"d{i}", 1.0 - i / 10, f"text {i}") for i in range(10)]


PAIRS = [(h.doc_id, h.score) for h in HITS]
IDS = [h.doc_id for h in HITS]


def pairs_fn(query: str, k: int) -> list[tuple[str, float]]:
    return PAIRS[:k]


def ids_fn(query: str, k: int) -> list[str]:
    return IDS[:k]


def hits_fn(query: str, k: int) -> list[Hit]:
    return HITS[:k]


DICTS = [{"id": h.doc_id, "score": h.score, "text": h.text} for h in HITS]


def dicts_fn(query: str, k: int) -> list[dict[str, Any]]:
    return DICTS[:k]


async def async_pairs_fn(query: str, k: int) -> list[tuple[str, float]]:
    return PAIRS[:k]


#: The forms of a plain retriever function, by what it returns (ten results each).
FUNCTIONS = {
    "10 (id, score) pairs": pairs_fn,
    "10 id strings": ids_fn,
    "10 Hits": hits_fn,
    "10 dicts {id, score, text}": dicts_fn,
    "10 (id, score) pairs, async def": async_pairs_fn,
}


class Instant:
    native_async = False
    name = "instant"

    def retrieve(self, query: str, k: int) -> list[Hit]:
        return HITS[:k]

    async def aretrieve(self, query: str, k: int) -> list[Hit]:
        return HITS[:k]


class InstantAsync(Instant):
    native_async = True


class Sleepy:
    name = "sleepy"

    def __init__(self, delay: float, native_async: bool) -> None:
        self.delay = delay
        self.native_async = native_async

    def retrieve(self, query: str, k: int) -> list[Hit]:
        time.sleep(self.delay)
        return HITS[:k]

    async def aretrieve(self, query: str, k: int) -> list[Hit]:
        await asyncio.sleep(self.delay)
        return HITS[:k]


def median_time(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process, every thread) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


#: One overhead row: label, wall µs per query, CPU µs per query.
Row = tuple[str, float, float]


def paired_overheads(
    n: int, repeats: int, baseline: Callable[[], Any], variants: list[tuple[str, Callable[[], Any]]]
) -> list[Row]:
    """Per-query overhead of each variant over the baseline: each repeat times the baseline and every
    variant back to back, so a busy machine slows both; the median over repeats of the differences.

    Wall time and the process's CPU time (all threads) are both reported: on a loaded machine wall time
    includes waiting for a core, CPU time is the work done."""
    base: list[tuple[float, float]] = []
    diffs: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in variants}
    for _ in range(repeats):
        b_wall, b_cpu = _timed(baseline)
        base.append((b_wall, b_cpu))
        for label, fn in variants:
            wall, cpu = _timed(fn)
            diffs[label].append((wall - b_wall, cpu - b_cpu))

    def med(pairs: list[tuple[float, float]], i: int) -> float:
        return statistics.median(p[i] for p in pairs) / n * 1e6

    rows = [("baseline (direct calls)", med(base, 0), med(base, 1))]
    rows += [(label, med(d, 0), med(d, 1)) for label, d in diffs.items()]
    return rows


#: The sections of the overhead table (``--only``).
SECTIONS = ("plain", "llamaindex", "langchain", "throughput")


def overhead(n: int, repeats: int, only: tuple[str, ...] = SECTIONS) -> list[Row]:
    queries = {f"q{i}": f"query {i}" for i in range(n)}
    texts = list(queries.values())
    rows: list[Row] = _plain_rows(n, repeats, queries, texts) if "plain" in only else []
    if "llamaindex" in only:
        rows += _llamaindex_rows(n, repeats, queries, texts)
    if "langchain" in only:
        rows += _langchain_rows(n, repeats, queries, texts)
    return rows


def _plain_rows(n: int, repeats: int, queries: dict[str, str], texts: list[str]) -> list[Row]:
    stub = Instant()
    rows = paired_overheads(
        n,
        repeats,
        lambda: [stub.retrieve(t, 10) for t in texts],
        [
            (
                f"run_retriever overhead, sync stub, concurrency {c}{' (default)' if c == 8 else ''}",
                lambda r=r, c=c: run_retriever(r, queries, k=10, concurrency=c, progress=False),
            )
            for r, c in [(Instant(), 8), (Instant(), 1)]
        ]
        + [
            (
                "run_retriever overhead, async stub, concurrency 8",
                lambda: run_retriever(InstantAsync(), queries, k=10, concurrency=8, progress=False),
            )
        ]
        + [
            (
                f"run_retriever overhead, plain function f(query, k) -> {form}, concurrency {c}",
                lambda fn=fn, c=c: run_retriever(fn, queries, k=10, concurrency=c, progress=False),
            )
            for form, fn in FUNCTIONS.items()
            for c in (8, 1)
        ],
    )
    rows[0] = ("instant stub: " + rows[0][0], *rows[0][1:])
    return rows


def _llamaindex_stub() -> Any:
    """A LlamaIndex ``BaseRetriever`` returning ten ``NodeWithScore`` instantly (None without llama-index-core)."""
    try:
        from llama_index.core.base.base_retriever import BaseRetriever
        from llama_index.core.schema import NodeWithScore, TextNode
    except ImportError:
        print("llama-index-core not installed: skipping the LlamaIndex rows", file=sys.stderr)
        return None
    nodes = [NodeWithScore(node=TextNode(id_=f"d{i}", text=f"text {i}"), score=1.0 - i / 10) for i in range(10)]

    class LIStub(BaseRetriever):
        def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            return nodes

    return LIStub()


def _langchain_stub() -> Any:
    """A LangChain ``BaseRetriever`` returning ten ``Document`` instantly (None without langchain-core)."""
    try:
        from langchain_core.callbacks import CallbackManagerForRetrieverRun
        from langchain_core.documents import Document
        from langchain_core.retrievers import BaseRetriever
    except ImportError:
        print("langchain-core not installed: skipping the LangChain rows", file=sys.stderr)
        return None
    docs = [Document(page_content=h.text or "", id=h.doc_id) for h in HITS]

    class LCStub(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Any]:
            return docs

    return LCStub()


def _llamaindex_rows(n: int, repeats: int, queries: dict[str, str], texts: list[str]) -> list[Row]:
    li = _llamaindex_stub()
    if li is None:
        return []
    from llama_index.core.evaluation import RetrieverEvaluator

    evaluator = RetrieverEvaluator.from_metric_names(["mrr", "hit_rate"], retriever=li)
    li_rows = paired_overheads(
        n,
        repeats,
        lambda: [li.retrieve(t) for t in texts],
        [
            (
                "LlamaIndex stub: run_retriever overhead (adapter + runner), concurrency 8 (default)",
                lambda: run_retriever(li, queries, k=10, progress=False),
            ),
            (
                "LlamaIndex stub: run_retriever overhead (adapter + runner), concurrency 1",
                lambda: run_retriever(li, queries, k=10, concurrency=1, progress=False),
            ),
            (
                "LlamaIndex stub: RetrieverEvaluator.evaluate loop overhead",
                lambda: [evaluator.evaluate(t, expected_ids=["d3"]) for t in texts],
            ),
        ],
    )
    li_rows[0] = ("LlamaIndex stub: " + li_rows[0][0], *li_rows[0][1:])
    return li_rows


def _langchain_rows(n: int, repeats: int, queries: dict[str, str], texts: list[str]) -> list[Row]:
    lc = _langchain_stub()
    if lc is None:
        return []
    rows = paired_overheads(
        n,
        repeats,
        lambda: [lc.invoke(t) for t in texts],
        [
            (
                f"LangChain stub (10 Documents): run_retriever overhead (adapter + runner), concurrency {c}",
                lambda c=c: run_retriever(lc, queries, k=10, concurrency=c, progress=False),
            )
            for c in (8, 1)
        ],
    )
    rows[0] = ("LangChain stub: " + rows[0][0], *rows[0][1:])
    return rows


def call_counts(n: int = 1000) -> list[tuple[str, float, float, float]]:
    """Per query through ``run_retriever`` at concurrency 1, cProfile in every thread (the engine's workers
    too): (label, calls of rankbridge's functions, calls made from rankbridge code, all calls)."""
    rows: list[tuple[str, float, float, float]] = []
    queries = {f"q{i}": f"query {i}" for i in range(n)}
    for label, stub in [
        ("LlamaIndex stub (10 NodeWithScore)", _llamaindex_stub()),
        ("LangChain stub (10 Documents)", _langchain_stub()),
    ]:
        if stub is None:
            continue
        run_retriever(stub, queries, k=10, concurrency=1, progress=False)  # types learned, copies made
        stats = _profiled(functools.partial(run_retriever, stub, queries, k=10, concurrency=1, progress=False))
        ours = mine = every = 0
        for (path, _line, _name), (_cc, calls, _tt, _ct, callers) in stats.stats.items():  # type: ignore[attr-defined]
            every += calls
            ours += calls if _is_ours(path) else 0
            mine += sum(c[1] for (caller, _l, _n), c in callers.items() if _is_ours(caller))
        rows.append((label, ours / n, mine / n, every / n))
    return rows


def _is_ours(path: str) -> bool:
    return f"{os.sep}rankbridge{os.sep}" in path


def _profiled(fn: Callable[[], Any]) -> pstats.Stats:
    """cProfile statistics of ``fn()`` over every thread it starts (``threading.Thread.run`` profiled)."""
    profiles: list[cProfile.Profile] = []
    original = threading.Thread.run

    def run(self: threading.Thread) -> None:
        profile = cProfile.Profile()
        profiles.append(profile)
        profile.enable()
        try:
            original(self)
        finally:
            profile.disable()

    main = cProfile.Profile()
    threading.Thread.run = run  # type: ignore[method-assign]
    try:
        main.enable()
        fn()
        main.disable()
    finally:
        threading.Thread.run = original  # type: ignore[method-assign]
    return pstats.Stats(main, *profiles)


def throughput(n: int, delay: float, concurrency: int, repeats: int) -> list[tuple[str, float]]:
    queries = {f"q{i}": f"query {i}" for i in range(n)}
    rows: list[tuple[str, float]] = []
    for label, native in [("run_retriever, sync retriever (threads)", False), ("run_retriever, async retriever", True)]:
        r = Sleepy(delay, native)
        t = median_time(lambda r=r: run_retriever(r, queries, k=10, concurrency=concurrency, progress=False), repeats)
        rows.append((label, t))
    try:
        from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
        from langchain_core.documents import Document
        from langchain_core.retrievers import BaseRetriever
    except ImportError:
        print("langchain-core not installed: skipping the LangChain comparison", file=sys.stderr)
        return rows
    docs = [Document(page_content=h.text or "", id=h.doc_id) for h in HITS]

    class LCSync(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Any]:
            time.sleep(delay)
            return docs

    class LCAsync(LCSync):
        async def _aget_relevant_documents(
            self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
        ) -> list[Any]:
            await asyncio.sleep(delay)
            return docs

    texts = list(queries.values())
    for label, lc in [("LangChain abatch, sync retriever", LCSync()), ("LangChain abatch, async retriever", LCAsync())]:
        t = median_time(lambda lc=lc: asyncio.run(lc.abatch(texts, config={"max_concurrency": concurrency})), repeats)
        rows.append((label, t))
        t = median_time(
            lambda lc=lc: run_retriever(lc, queries, k=10, concurrency=concurrency, progress=False), repeats
        )
        rows.append((f"run_retriever on the same LangChain {label.split(', ')[1]}", t))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries and repeats (a smoke run)")
    parser.add_argument("--write", action="store_true", help="replace the runner section of docs/benchmarks.md")
    parser.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated sections to run, of {', '.join(SECTIONS)}"
    )
    parser.add_argument("--queries", type=int, help="queries per run (default 5000; --quick 2000)")
    parser.add_argument("--repeats", type=int, help="paired repeats (default 9; --quick 3)")
    parser.add_argument("--calls", action="store_true", help="print cProfile call counts per query and stop")
    args = parser.parse_args()
    if args.calls:
        print("| calls per query, concurrency 1 | rankbridge functions | calls from rankbridge code | all calls |")
        print("| --- | ---: | ---: | ---: |")
        for label, ours, mine, every in call_counts():
            print(f"| {label} | {ours:.1f} | {mine:.1f} | {every:.1f} |")
        return
    only = tuple(x.strip() for x in args.only.split(",") if x.strip())
    if set(only) - set(SECTIONS):
        parser.error(f"--only: unknown section(s) {sorted(set(only) - set(SECTIONS))}; choose from {SECTIONS}")
    n, repeats = (2000, 3) if args.quick else (5000, 9)
    n, repeats = args.queries or n, args.repeats or repeats
    if args.write and (set(only) != set(SECTIONS) or args.queries or args.repeats):
        parser.error("--write replaces the whole runner section: run every section with the default sizes")
    out: list[str] = []

    def say(line: str) -> None:
        print(line)
        out.append(line)

    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    say(f"Python {sys.version.split()[0]}; overhead over {n} queries, median of {repeats} paired runs")
    say(f"(load average at the start {load})")
    say("")
    say("| what | wall µs / query | CPU µs / query |")
    say("| --- | ---: | ---: |")
    rows = overhead(n, repeats, only)
    for label, wall, cpu in rows:
        say(f"| {label} | {wall:.1f} | {cpu:.1f} |")
    runner_rows = [(cpu, label) for label, _, cpu in rows if "run_retriever overhead" in label]
    if runner_rows:
        worst, worst_label = max(runner_rows)
        say("")
        say(f"Largest CPU overhead of the runner over these forms: {worst:.1f} µs per query ({worst_label}).")
    if "throughput" not in only:
        return
    delay, conc, nq = 0.05, 32, 1000
    ideal = nq * delay / conc
    reps = 1 if args.quick else 3
    say("")
    say(
        f"Throughput: {nq} queries x {delay * 1000:.0f} ms at concurrency {conc}; ideal {ideal:.4f} s; median of {reps}"
    )
    say("")
    say("| what | seconds | x ideal |")
    say("| --- | ---: | ---: |")
    for label, t in throughput(nq, delay, conc, reps):
        say(f"| {label} | {t:.3f} | {t / ideal:.2f} |")
    if args.write:
        _write_section(out, args.quick)


def _write_section(lines: list[str], quick: bool) -> None:
    doc = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    start, end = "<!-- runner:start -->", "<!-- runner:end -->"
    load = os.getloadavg()
    body = "\n".join(
        [
            start,
            "## Runner (`benchmarks/bench_runner.py`)",
            "",
            f"Command: `.venv/bin/python benchmarks/bench_runner.py{' --quick' if quick else ''} --write`; "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; nproc={os.cpu_count()}; "
            f"load average at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}.",
            "Overheads are paired differences (each repeat times the direct calls and the variant back to back).",
            "",
            *lines,
            "",
            "Target (issue 21.6): <= 15 µs per query for every retriever form: a retriever object returning",
            "Hits, plain functions returning (id, score) pairs, id strings, Hits or dicts (sync and async), a",
            "LlamaIndex retriever returning NodeWithScore and a LangChain retriever returning Documents (the rows",
            "above). Wall time on a loaded machine includes waiting for a core; the CPU column (the process's CPU",
            "time over all threads, minus the direct calls') is the work the runner adds. A LlamaIndex or",
            "LangChain retriever is pure Python and holds the GIL for its whole call, so worker threads only",
            "contend for it: for a CPU-bound local retriever pass `concurrency=1`; the default of 8 is for",
            "retrievers that wait on a remote service. LangChain's `abatch` on a retriever with only a sync",
            "implementation runs in the event loop's default executor (min(32, CPUs + 4) threads), whatever",
            "`max_concurrency` says; the runner sizes its own pool.",
            end,
        ]
    )
    if start in text and end in text:
        text = text[: text.index(start)] + body + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    doc.write_text(text, encoding="utf-8")
    print(f"wrote the runner section of {doc}")


if __name__ == "__main__":
    main()
