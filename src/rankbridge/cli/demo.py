"""``rankbridge demo``: the offline demo (several strategies, both frameworks, statistics, HTML report)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rankbridge.cli._common import add_command
from rankbridge.demo import run_demo

__all__ = ["add_cli"]


def _cmd_demo(args: argparse.Namespace) -> int:
    """The main job: several strategies from both frameworks on one golden set, end to end, offline."""
    result = run_demo(
        beir=args.beir, split=args.split, out=args.out, k=args.k, max_queries=args.max_queries, progress=True
    )
    if result.report is not None:
        result.report.print()
    else:  # the report extra (jinja2, matplotlib) is missing: the comparison alone
        print(result.comparison)
    for note in result.notes:
        print(f"note: {note}")
    if result.report_path is not None:
        print(f"HTML report: {result.report_path}")
    print(f"runs: {Path(args.out) / 'runs'}    history: {result.store_path} (rankbridge history --store ...)")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``rankbridge demo`` on an ``argparse`` subparsers object."""
    de = add_command(
        subparsers,
        "demo",
        _cmd_demo,
        help="run the offline demo: five strategies, both frameworks, statistics, RAGAS ids, HTML report",
        epilog="examples:\n  rankbridge demo\n  rankbridge demo --beir path/to/scifact --out scifact-demo",
    )
    de.add_argument(
        "--golden",
        "--beir",
        dest="beir",
        help="a golden set to use instead of the shipped one: a BEIR folder, golden .jsonl/.csv/.parquet, ...",
    )
    de.add_argument("--split", default="test", help="qrels split of the BEIR folder (default: test)")
    de.add_argument("--out", default="rankbridge-demo", help="output folder (default: rankbridge-demo)")
    de.add_argument("-k", type=int, default=10, help="hits per query (default: 10)")
    de.add_argument("--max-queries", type=int, help="use only the first N queries")
