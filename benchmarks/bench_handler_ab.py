"""The capture handlers of a git revision against the working tree's, side by side in one process.

A change to a handler's hot path is judged by what it costs inside the application's call; on a shared,
loaded machine two runs of ``bench_capture.py`` minutes apart differ by more than such a change. Here both
versions run in the same process, alternating, on bench_capture's handler floors (the handler methods alone on
a prebuilt result list, hot caches: ``handler_floor`` and ``handler_floor_golden``): each round times every
floor once per version (``--reps`` repetitions of 1,000 retrievals, median), the order of the versions
flipping from round to round, and the medians over rounds are compared.

The revision's handler modules (``frameworks/langchain/capture.py``, ``frameworks/llamaindex/capture.py`` and
its ``_capture_common.py``) are read with ``git show REV:...`` into a scratch directory and imported under
other names; they run on the working tree's capture core (``rankbridge.capture``), so the comparison is of the
handler code. The revision must have the ``frameworks/`` layout. (``capture_ab.py`` compares two trees'
whole ``bench_capture.py`` runs, in-app figures included, in separate processes.)

Usage: ``.venv/bin/python benchmarks/bench_handler_ab.py [--ref HEAD] [--rounds 12] [--reps 5]`` (a few
minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import bench_capture as bc
import rankbridge.frameworks.langchain.capture as lc
import rankbridge.frameworks.llamaindex.capture as li

ROOT = Path(__file__).resolve().parents[1]
#: (path in the repository, module name in the scratch directory)
MODULES = [
    ("src/rankbridge/frameworks/llamaindex/_capture_common.py", "ref_li_common"),
    ("src/rankbridge/frameworks/llamaindex/capture.py", "ref_li_capture"),
    ("src/rankbridge/frameworks/langchain/capture.py", "ref_lc_capture"),
]
#: (floor, label) of each figure compared
FIGURES = [
    ("floor", "LangChain handler"),
    ("floor", "LlamaIndex handler (retrieve span + enclosing span)"),
    ("golden", "LlamaIndex handler, `capture()`"),
    ("golden", "LlamaIndex handler, `capture(golden)`"),
]


def load_ref(ref: str, where: Path) -> dict[str, ModuleType]:
    """The revision's handler modules, imported from ``where`` (the common module under its scratch name)."""
    for path, name in MODULES:
        text = subprocess.run(
            ["git", "show", f"{ref}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        text = text.replace("rankbridge.frameworks.llamaindex._capture_common", "ref_li_common")
        (where / f"{name}.py").write_text(text)
    sys.path.insert(0, str(where))
    return {name: importlib.import_module(name) for _, name in MODULES}


def patch(side: tuple[Any, Any, Any]) -> None:
    """Put one version's handler classes where bench_capture's floors import them from."""
    lc.RankbridgeCallbackHandler, li.RankbridgeSpanHandler, li._Tap = side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="HEAD", help="the git revision to compare with (default HEAD)")
    parser.add_argument("--rounds", type=int, default=12, help="rounds; each times both versions once")
    parser.add_argument("--reps", type=int, default=5, help="repetitions of each floor per round")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    bc.logging_quiet()
    with tempfile.TemporaryDirectory() as scratch:
        ref = load_ref(args.ref, Path(scratch))
        sides = {
            args.ref: (
                ref["ref_lc_capture"].RankbridgeCallbackHandler,
                ref["ref_li_capture"].RankbridgeSpanHandler,
                ref["ref_li_capture"]._Tap,
            ),
            "working tree": (lc.RankbridgeCallbackHandler, li.RankbridgeSpanHandler, li._Tap),
        }
        ours = sides["working tree"]
        docs = bc.corpus()
        got: dict[str, list[tuple[float, ...]]] = {side: [] for side in sides}
        try:
            for r in range(args.rounds):
                order = list(sides) if r % 2 == 0 else list(sides)[::-1]
                for side in order:
                    patch(sides[side])
                    floors = {
                        "floor": bc.handler_floor(docs, reps=args.reps, n=1000),
                        "golden": bc.handler_floor_golden(docs, reps=args.reps, n=1000),
                    }
                    got[side].append(tuple(floors[floor][label] for floor, label in FIGURES))
                print(
                    f"round {r + 1}: "
                    + "; ".join(f"{side} " + " / ".join(bc.us(x) for x in got[side][-1]) for side in sides),
                    flush=True,
                )
        finally:
            patch(ours)
    print(f"\nMedians over {args.rounds} rounds, µs per retrieval (CPU time):\n")
    print(f"| handler | {args.ref} | working tree | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for i, (_, label) in enumerate(FIGURES):
        before = statistics.median(x[i] for x in got[args.ref])
        after = statistics.median(x[i] for x in got["working tree"])
        print(f"| {label} | {bc.us(before)} | {bc.us(after)} | {after / before:.2f} |")


if __name__ == "__main__":
    main()
