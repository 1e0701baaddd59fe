"""``rankbridge compare``: runs side by side with confidence intervals and paired significance tests."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rankbridge._numbers import fmt_ci, fmt_number, fmt_p
from rankbridge.analysis import Comparison, compare
from rankbridge.cli._common import add_command, add_run_arguments, paired_test_options, read_run_inputs

__all__ = ["add_cli"]


def _print_rich(cmp: Comparison) -> bool:
    try:  # lazy: rich is an extra; without it the comparison prints as plain text
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        return False
    console = Console()
    if not console.is_terminal:  # piped or captured: don't squeeze the table into 80 columns
        console = Console(width=max(console.width, 140))
    corr = "Holm-adjusted" if cmp.correction == "holm" else "unadjusted"
    table = Table(
        title=f"{len(cmp.runs)} runs, {cmp.num_queries} queries, baseline {cmp.baseline!r}",
        caption=f"{cmp.test} test, {corr} p, {cmp.level:.0%} intervals; * significant at alpha={cmp.alpha:g}",
    )
    for col in ("metric", "run", "mean", "CI", f"vs {cmp.baseline}", "CI", "p", "p adj", "d", "W/T/L"):
        table.add_column(col, justify="left" if col in ("metric", "run") else "right")
    for metric in cmp.metrics:
        for i, run in enumerate(cmp.runs):
            iv = cmp.means[metric][run]
            pc = cmp.paired[metric].get(run)
            cells = [
                metric if i == 0 else "",
                run + (" (base)" if run == cmp.baseline else ""),
                cmp._mean_cell(iv),
                fmt_ci(iv),
            ]
            if pc is None:
                cells += ["", "", "", "", "", ""]
            else:
                diff = fmt_number(pc.difference.estimate, sign=True)
                if pc.significant:
                    diff = f"[bold {'green' if pc.difference.estimate > 0 else 'red'}]{diff}[/]"
                cells += [
                    diff,
                    fmt_ci(pc.difference, sign=True),
                    fmt_p(pc.pvalue),
                    fmt_p(pc.pvalue_adjusted) + (" *" if pc.significant else ""),
                    fmt_number(pc.effect_size, 2),
                    f"{pc.wins}/{pc.ties}/{pc.losses}",
                ]
            table.add_row(*cells, end_section=i == len(cmp.runs) - 1)
    console.print(table)
    notes = list(cmp.warnings) + [
        f"{pc.metric}, {pc.run}: {pc.warning}" for m in cmp.metrics for pc in cmp.paired[m].values() if pc.warning
    ]
    for note in notes:
        console.print(f"[yellow]warning:[/yellow] {note}", highlight=False)
    return True


def _cmd_compare(args: argparse.Namespace) -> int:
    inputs = read_run_inputs(args)
    result = compare(
        inputs.runs, inputs.judgments, inputs.measures, baseline=args.baseline, **paired_test_options(args)
    )
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    elif not _print_rich(result):
        print(result)
    return 0


def add_cli(subparsers: Any) -> None:
    """Register the ``compare`` subcommand on an ``argparse`` subparsers object.

    Examples
    --------
    >>> from rankbridge.cli import build_parser
    >>> args = build_parser().parse_args(["compare", "qrels.txt", "a.txt", "b.txt", "-m", "ndcg@10", "--test", "t"])
    >>> args.run, args.test, args.baseline
    (['a.txt', 'b.txt'], 't', None)
    """
    p = add_command(
        subparsers,
        "compare",
        _cmd_compare,
        help="compare runs with confidence intervals and paired significance tests",
        epilog="Each run is compared with the baseline (default: the first run) on the same queries.\n"
        "examples:\n"
        "  rankbridge compare qrels.txt bm25.txt dense.txt -m ndcg@10 -m mrr@10\n"
        "  rankbridge compare qrels.txt bm25.txt dense.txt hybrid.txt --baseline bm25 --test wilcoxon\n"
        "  rankbridge compare qrels.txt bm25.txt dense.txt --format json",
    )
    add_run_arguments(p)
    p.add_argument("--format", choices=["table", "json"], default="table")
