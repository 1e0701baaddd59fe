"""Capture cost of two source trees of rankbridge: timed runs of ``bench_capture.py`` and a call count.

Timing on a shared machine moves by more than a restructure's effect, so this script gives two views:

1. ``bench_capture.py`` run from each tree, in alternation and side by side (both processes at once, so
   that they share the machine's load), printing each run's overhead rows;
2. the number of Python function calls per captured retrieval under ``cProfile``, in rankbridge's own
   code and in total, for every pipeline -- deterministic, so equal counts mean the same work per call.

Usage (the "before" tree from git, the "after" tree being this checkout)::

    git archive <rev> | tar -x -C /tmp/before
    .venv/bin/python benchmarks/capture_ab.py /tmp/before . --rounds 2
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import subprocess
import sys
from pathlib import Path

BENCH_ARGS = ["--n", "2000", "--gc-calls", "2000", "--reps", "20"]


def _bench(tree: Path, extra: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    cmd = [sys.executable, str(tree / "benchmarks" / "bench_capture.py"), *BENCH_ARGS, *extra]
    return subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, text=True)


def _rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if " overhead " in line or line.endswith(" µs")][:8]


def timed(before: Path, after: Path, rounds: int) -> None:
    for i in range(rounds):
        for label, tree in (("before", before), ("after", after)):
            out, _ = _bench(tree, []).communicate()
            print(f"== alternating {i + 1}, {label}", *_rows(out), sep="\n")
    for i in range(rounds):
        trees = (("before", before), ("after", after))
        procs = {label: _bench(tree, ["--only", "LlamaIndex"]) for label, tree in trees}
        for label, proc in procs.items():
            out, _ = proc.communicate()
            print(f"== side by side {i + 1}, {label}", *_rows(out), sep="\n")


def count_calls(retrievals: int = 200) -> None:
    """Run in a child process whose PYTHONPATH is one tree: calls per retrieval, off and captured."""
    import bench_capture as bc

    docs, qs = bc.corpus(), bc.queries()
    pipes = {**bc.langchain_pipelines(docs), **bc.llamaindex_pipelines(docs)}
    for name, fn in pipes.items():
        for q in qs:
            fn(q)  # warm caches and lazy imports
        for mode in ("off", "on"):
            cap = bc.capture() if mode == "on" else None
            if cap is not None:
                cap.__enter__()
            prof = cProfile.Profile()
            prof.enable()
            for i in range(retrievals):
                fn(qs[i % len(qs)])
            prof.disable()
            if cap is not None:
                cap.__exit__(None, None, None)
            stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
            own = sum(v[1] for k, v in stats.items() if "rankbridge" in k[0])
            total = sum(v[1] for k, v in stats.items())
            per = total / retrievals, own / retrievals
            print(f"{name:25s} {mode:3s}: calls per retrieval {per[0]:8.1f}, rankbridge's {per[1]:6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the reference tree (with src/ and benchmarks/)")
    parser.add_argument("after", type=Path, help="the tree under test")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs and side-by-side pairs each")
    parser.add_argument("--calls-only", action="store_true", help="skip the timed runs")
    parser.add_argument("--count-calls", action="store_true", help=argparse.SUPPRESS)  # the child's mode
    args = parser.parse_args()
    if args.count_calls:
        sys.path.insert(0, str(args.after / "benchmarks"))
        count_calls()
        return
    before, after = args.before.resolve(), args.after.resolve()
    for label, tree in (("before", before), ("after", after)):
        env = {**os.environ, "PYTHONPATH": str(tree / "src")}
        print(f"== calls, {label}", flush=True)
        subprocess.run([sys.executable, __file__, str(tree), str(tree), "--count-calls"], env=env, check=True)
    if not args.calls_only:
        timed(before, after, args.rounds)


if __name__ == "__main__":
    main()
