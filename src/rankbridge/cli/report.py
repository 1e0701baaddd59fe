"""``rankbridge report``: a report comparing run files (terminal, Markdown, self-contained HTML, JSON)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rankbridge.analysis import compare
from rankbridge.cli._common import add_command, add_run_arguments, paired_test_options, read_run_inputs
from rankbridge.errors import InputError
from rankbridge.reports import build_report, trend_from_history
from rankbridge.types import GoldenSet

__all__ = ["add_cli"]
_SUFFIX_FORMATS = {".html": "html", ".htm": "html", ".md": "md", ".markdown": "md", ".json": "json"}


def _trend_from_store(path: str, metrics: Sequence[str], names: Sequence[str]) -> tuple[dict[Any, Any], list[str]]:
    """Every metric's trend of every run name (each with all its comparable groups and notes)."""
    trend: dict[Any, Any] = {}
    notes: list[str] = []
    for metric in metrics:
        found, read_notes = trend_from_history(path, metric, names)
        trend.update(found)
        notes.extend(read_notes)
    return trend, list(dict.fromkeys(notes))


def _cmd_report(args: argparse.Namespace) -> int:
    fmt = args.format
    if fmt is None:
        fmt = _SUFFIX_FORMATS.get(Path(args.output).suffix.lower(), "terminal") if args.output else "terminal"
    inputs = read_run_inputs(args)
    metrics = [str(m) for m in inputs.measures]
    qrels, runs = inputs.qrels, inputs.runs
    golden = GoldenSet.from_beir(args.golden, split=args.split) if args.golden else inputs.golden
    if golden is not None:
        golden = GoldenSet(golden.queries, qrels, corpus=golden.corpus, name=golden.name)
    cmp = compare(runs, qrels, metrics, baseline=args.baseline, golden=golden, **paired_test_options(args))
    trend: dict[Any, Any] = {}
    extra: list[str] = []
    if args.history:
        if not Path(args.history).exists():
            raise InputError(f"--history: no history file at {args.history}")
        trend, extra = _trend_from_store(args.history, metrics, list(runs))
    report = build_report(
        cmp,
        runs=runs,
        qrels=qrels,
        golden=golden,
        trend=trend or None,
        title=args.title,
        k=args.k,
        by=args.by,
        extra_warnings=extra,
    )
    if fmt == "terminal":
        if args.output:
            report.save(args.output, format="text")
        else:
            report.print()
        return 0
    if args.output:
        report.save(args.output, format=fmt)
        print(f"rankbridge: wrote {fmt} report to {args.output}", file=sys.stderr)
        return 0
    text = {"md": report.to_markdown, "json": report.to_json, "html": report.to_html}[fmt]()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register the ``report`` subcommand on an ``argparse`` subparsers object.

    Examples
    --------
    >>> from rankbridge.cli import build_parser
    >>> args = build_parser().parse_args(["report", "qrels.txt", "a.txt", "b.txt", "-m", "ndcg@10", "-o", "r.html"])
    >>> args.run, args.metric, args.output, args.format
    (['a.txt', 'b.txt'], ['ndcg@10'], 'r.html', None)
    """
    p = add_command(
        subparsers,
        "report",
        _cmd_report,
        help="write a report (terminal, Markdown, self-contained HTML with plots, JSON) comparing runs",
        epilog="The format comes from --format, else from the -o suffix (.html, .md, .json), else terminal.\n"
        "HTML needs the report extra: pip install 'rankbridge[report]'.\n"
        "examples:\n"
        "  rankbridge report qrels.txt bm25.txt dense.txt -m ndcg@10 -m mrr@10\n"
        "  rankbridge report qrels.txt bm25.txt dense.txt hybrid.txt --baseline bm25 -o report.html\n"
        "  rankbridge report qrels.txt run.txt --golden my_beir_set/ --format md -o report.md\n"
        "  rankbridge report qrels.txt run.txt --history rankbridge-history.sqlite --format json",
    )
    add_run_arguments(p)
    p.add_argument(
        "--golden",
        metavar="BEIR_DIR",
        help="BEIR folder (queries.jsonl, corpus.jsonl, qrels/) for question texts, categories and chunk texts",
    )
    p.add_argument("--split", default="test", help="qrels split of the BEIR folder (default: test)")
    p.add_argument(
        "--format",
        choices=["terminal", "md", "html", "json"],
        default=None,
        help="output format (default: from the -o suffix, else terminal)",
    )
    p.add_argument("-o", "--output", metavar="PATH", help="write to this file (atomically) instead of stdout")
    p.add_argument("--title", help="report title")
    p.add_argument("--by", default="category", help="metadata field for the per-category table (default: category)")
    p.add_argument(
        "-k", type=int, default=10, help="a hit is a relevant chunk in the top k (failure lists; default 10)"
    )
    p.add_argument("--history", metavar="STORE", help="run history file (rankbridge history) for trends over runs")
