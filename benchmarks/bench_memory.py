"""Peak memory of one ``rankbridge.evaluate`` call on a large run: 100,000 queries x depth 100.

Each measurement runs in a fresh subprocess that first builds the qrels and run dicts (their own memory
is *not* counted), warms the tool up on a small dataset, then measures the evaluate call two ways:

* **peak RSS increase**: the kernel's high-water mark (``VmHWM``) is reset through
  ``/proc/self/clear_refs`` just before the call, and the figure is ``VmHWM`` after the call minus
  ``VmRSS`` before it. It counts everything: Python objects, numpy buffers, C and numba allocations.
* **tracemalloc peak**: the call repeated under ``tracemalloc`` (Python objects and numpy buffers only;
  allocations made in C by pytrec_eval or by numba are invisible to it, so it is shown for rankbridge only).

For context the same is measured for pytrec_eval and ranx (end to end from the same dicts, as in
``bench_metrics.py``). Target: rankbridge's peak increase under 250 MB.

Usage: ``.venv/bin/python benchmarks/bench_memory.py [--write] [--no-others]`` (about 2 minutes).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _synthetic import command_line, environment, make_dataset, table, write_section

MB = 1024 * 1024
TARGET_MB = 250.0
METRICS = ["ndcg@10", "mrr@10", "P@5", "recall@100", "map@100", "hit_rate@10"]
TREC_MEASURES = {"ndcg_cut_10", "recip_rank", "P_5", "recall_100", "map_cut_100", "success_10"}
HEADER = [
    "tool",
    "run layout",
    "peak RSS increase (MB)",
    "tracemalloc peak (MB)",
    "RSS kept after (MB)",
    "wall (s)",
    "CPU (s)",
]
RANX_METRICS = ["ndcg@10", "mrr@10", "precision@5", "recall@100", "map@100", "hit_rate@10"]


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        return False
    return True


def _tool(name: str) -> Callable[[dict, dict], Any]:
    """The end-to-end call of one tool: (qrels dict, run dict) -> means."""
    if name == "rankbridge":
        import rankbridge

        return lambda qrels, run: rankbridge.evaluate(qrels, run, METRICS).mean
    if name == "pytrec_eval":
        import pytrec_eval

        def trec(qrels: dict, run: dict) -> dict[str, float]:
            per_query = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)
            return {m: sum(v[m] for v in per_query.values()) / len(per_query) for m in TREC_MEASURES}

        return trec
    if name == "ranx":
        import ranx

        warnings.filterwarnings("ignore", message=".*unsafe cast.*")
        return lambda qrels, run: ranx.evaluate(ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run), RANX_METRICS)
    raise SystemExit(f"unknown tool {name}")


def child(tool: str, queries: int, depth: int, layout: str, traced: bool) -> None:
    """Measure one tool in this (fresh) process; print one JSON line."""
    fn = _tool(tool)
    small = make_dataset(64, 50, seed=1, layouts=(layout,))
    fn(small.qrels, small.layout(layout))  # warm up (ranx: numba JIT) before any measurement
    del small
    rss_start = _status_kb("VmRSS")
    t0 = time.perf_counter()
    ds = make_dataset(queries, depth, layouts=(layout,))
    gen_s = time.perf_counter() - t0
    qrels, run = ds.qrels, ds.layout(layout)
    gc.collect()
    rss0 = _status_kb("VmRSS")
    reset = _reset_peak()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn(qrels, run)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    hwm = _status_kb("VmHWM")
    rss1 = _status_kb("VmRSS")
    del out
    gc.collect()
    traced_peak = None
    if traced:
        tracemalloc.start()
        fn(qrels, run)
        traced_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    result = {
        "tool": tool,
        "layout": layout,
        "entries": ds.num_entries,
        "input_mb": (rss0 - rss_start) / 1024,
        "peak_rss_mb": (hwm - rss0) / 1024,
        "retained_mb": (rss1 - rss0) / 1024,
        "peak_reset": reset,
        "traced_peak_mb": None if traced_peak is None else traced_peak / MB,
        "seconds": elapsed,
        "cpu_seconds": cpu,
        "gen_seconds": gen_s,
    }
    print(json.dumps(result))


def measure(tool: str, args: argparse.Namespace, layout: str, traced: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", tool, "--queries", str(args.queries), "--depth", str(args.depth)]
    cmd += ["--layout", layout] + (["--traced"] if traced else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=os.environ.copy())
    if proc.returncode != 0:
        raise SystemExit(f"{tool} child failed:\n{proc.stderr}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    print(
        f"  {tool} ({layout}): peak +{res['peak_rss_mb']:.1f} MB RSS in {res['seconds']:.2f}s "
        f"(input dicts {res['input_mb']:.0f} MB, generated in {res['gen_seconds']:.1f}s)",
        file=sys.stderr,
    )
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--no-others", action="store_true", help="measure rankbridge only (skip pytrec_eval, ranx)")
    ap.add_argument("--write", action="store_true", help="update the bench_memory section of docs/benchmarks.md")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--layout", default="random", help=argparse.SUPPRESS)
    ap.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.queries, args.depth, args.layout, args.traced)
        return

    results = [measure("rankbridge", args, layout, traced=True) for layout in ("random", "ranked")]
    if not args.no_others:
        results += [measure(tool, args, "random", traced=False) for tool in ("pytrec_eval", "ranx")]

    rows = []
    for r in results:
        traced = "n/a (C/numba allocations)" if r["traced_peak_mb"] is None else f"{r['traced_peak_mb']:.1f}"
        rows.append(
            [
                r["tool"],
                r["layout"],
                f"{r['peak_rss_mb']:.1f}",
                traced,
                f"{r['retained_mb']:.1f}",
                f"{r['seconds']:.2f}",
                f"{r['cpu_seconds']:.2f}",
            ]
        )
    rb = [r for r in results if r["tool"] == "rankbridge"]
    worst = max(max(r["peak_rss_mb"], r["traced_peak_mb"] or 0.0) for r in rb)
    met = worst < TARGET_MB
    reset_ok = all(r["peak_reset"] for r in results)
    first = results[0]
    body = "\n\n".join(
        [
            "### Memory: peak increase of one evaluate call (`bench_memory.py`)",
            environment(command_line()),
            f"Synthetic MS MARCO-shaped data (`benchmarks/_synthetic.py`): {args.queries:,} queries x depth "
            f"{args.depth:,} = {first['entries']:,} run entries, metrics "
            + ", ".join(f"`{m}`" for m in METRICS)
            + f". The input dicts themselves take about {first['input_mb']:,.0f} MB of RSS and are built "
            "before measuring, so they are not counted. One fresh subprocess per row.",
            table(HEADER, rows),
            table(
                ["target", "goal", "measured", ""],
                [
                    [
                        "rankbridge.evaluate peak memory increase",
                        f"< {TARGET_MB:g} MB",
                        f"{worst:.1f} MB (largest of RSS and tracemalloc, both layouts)",
                        "met" if met else "NOT met",
                    ]
                ],
            ),
            "Notes:\n\n"
            "- Peak RSS increase: `VmHWM` after the call minus `VmRSS` before it, the high-water mark reset via "
            "`/proc/self/clear_refs` just before the call"
            + ("" if reset_ok else " (**reset failed on this machine: figures are upper bounds only**)")
            + ". The tool is warmed up on a small dataset first (for ranx: its numba JIT), so compilation "
            "is not counted.\n"
            "- tracemalloc peak: the same call repeated under `tracemalloc`; it sees Python objects and numpy "
            "buffers, not memory that pytrec_eval allocates in C or ranx in numba, hence n/a for them.\n"
            "- pytrec_eval and ranx rows are context, not targets (ranx: `Qrels.from_dict` + `Run.from_dict` + "
            "`evaluate`).",
        ]
    )
    print(body)
    print(f"\ntarget: {'met' if met else 'NOT met'} (rankbridge peak {worst:.1f} MB, goal < {TARGET_MB:g} MB)")
    if args.write:
        write_section("bench_memory", body)


if __name__ == "__main__":
    main()
