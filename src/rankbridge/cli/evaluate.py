"""``rankbridge evaluate``: one or more run files against qrels, as a table, JSON or trec_eval's lines.

Examples
--------
>>> from rankbridge.cli import build_parser
>>> args = build_parser().parse_args(["evaluate", "qrels.txt", "run.txt", "-m", "ndcg@10", "--format", "trec"])
>>> args.run, args.metric, args.format, args.missing
(['run.txt'], ['ndcg@10'], 'trec', 'zero')
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from collections.abc import Sequence
from typing import Any

from rankbridge.cli._common import add_command, add_run_arguments, read_run_inputs, warn
from rankbridge.errors import MetricError
from rankbridge.evaluate import Evaluation, IdMismatchWarning, evaluate
from rankbridge.metrics.measures import Measure, parse_measure

__all__ = ["DEFAULT_METRICS", "add_cli"]

DEFAULT_METRICS = ["ndcg@10", "mrr@10", "precision@5", "recall@100", "map", "hit_rate@10"]


def _measure_of(name: str) -> Measure | None:
    """The measure behind a column of :attr:`Evaluation.values` (None for a joined column, e.g. RAGAS)."""
    try:
        return parse_measure(name)
    except MetricError:
        return None


def _aggregate(ev: Evaluation, name: str) -> float:
    """The 'all' value as trec_eval prints it: a sum or a mean, as the measure's definition says."""
    values = ev.values[name]
    measure = _measure_of(name)
    if measure is not None:
        return measure.aggregate(values)
    return float(values.mean()) if len(values) else math.nan


def _format_value(name: str, value: float, *, aggregate: bool = False) -> str:
    measure = _measure_of(name)
    return measure.format_value(value, aggregate=aggregate) if measure is not None else f"{value:.4f}"


def _trec_names(names: Sequence[str]) -> dict[str, str]:
    """Column -> the name trec_eval prints for it (``P_5``, ``recip_rank``), else the canonical name.

    A thresholded measure (``P@5(rel=2)``) takes trec_eval's name when every thresholded measure printed
    shares one level, as one ``trec_eval -l`` run would; a name that two columns would share is not used.
    """
    equivalents: dict[str, tuple[str, int | None] | None] = {}
    for name in names:
        measure = _measure_of(name)
        equivalents[name] = measure.trec_equivalent if measure is not None else None
    levels = {eq[1] for eq in equivalents.values() if eq is not None and eq[1] is not None}
    chosen = {
        name: eq[0] if eq is not None and (eq[1] is None or len(levels) == 1) else name
        for name, eq in equivalents.items()
    }
    taken = list(chosen.values())
    return {name: label if taken.count(label) == 1 else name for name, label in chosen.items()}


def _print_trec(ev: Evaluation, per_query: bool) -> None:
    printed = _trec_names(list(ev.values))
    width = max(22, *(len(n) for n in printed.values()))  # trec_eval pads names to 22 characters
    for name, values in ev.values.items():
        label = printed[name]
        if per_query:
            for qid, v in zip(ev.query_ids, values.tolist(), strict=True):
                print(f"{label:<{width}}\t{qid}\t{_format_value(name, v)}")
        print(f"{label:<{width}}\tall\t{_format_value(name, _aggregate(ev, name), aggregate=True)}")


def _json_payload(ev: Evaluation, per_query: bool) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "run": ev.run_name,
        "num_queries": ev.num_queries,
        "missing_policy": ev.missing_policy,
        "mean": ev.mean,
        "missing": list(ev.missing),
        "failed": list(ev.failed),
        "unjudged": list(ev.unjudged),
        "no_relevant": list(ev.no_relevant),
        "duplicates": ev.duplicates,
    }
    if per_query:
        payload["per_query"] = ev.per_query
    return payload


def _print_table(evs: Sequence[Evaluation], per_query: bool, title: str) -> None:
    names = list(evs[0].values)
    try:  # lazy: rich is an extra, and the CLI works without it, just plainer
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(title)
        print("metric".ljust(16) + "".join(ev.run_name[:14].rjust(16) for ev in evs))
        for name in names:
            print(
                name.ljust(16)
                + "".join(_format_value(name, _aggregate(ev, name), aggregate=True).rjust(16) for ev in evs)
            )
        for ev in evs:
            print(f"{ev.run_name}: {ev.summary()}")
        return
    console = Console()
    table = Table(title=title)
    table.add_column("metric")
    for ev in evs:
        table.add_column(ev.run_name, justify="right")
    for name in names:
        table.add_row(name, *(_format_value(name, _aggregate(ev, name), aggregate=True) for ev in evs))
    console.print(table)
    for ev in evs:
        console.print(f"[bold]{ev.run_name}[/bold]: {ev.summary()}", highlight=False)
    if per_query:
        for ev in evs:
            pq = Table(title=f"{ev.run_name}: per query")
            pq.add_column("query")
            for name in names:
                pq.add_column(name, justify="right")
            for i, qid in enumerate(ev.query_ids):
                pq.add_row(qid, *(_format_value(n, float(ev.values[n][i])) for n in names))
            console.print(pq)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    inputs = read_run_inputs(args, duplicates=args.duplicates)
    for name, run in inputs.runs.items():
        run.name = name  # two files with the same run tag stay apart in the output
    with warnings.catch_warnings():
        # an id mismatch is in each evaluation's notes: said once below, not as a Python warning too
        warnings.simplefilter("ignore", IdMismatchWarning)
        evs = [
            evaluate(
                inputs.judgments, run, inputs.measures, missing=args.missing, single_precision=args.single_precision
            )
            for run in inputs.runs.values()
        ]
    if args.format != "table":  # the table prints each evaluation's summary, notes included
        for note in (n for ev in evs for n in ev.notes):
            warn(note)
    if args.format == "trec":
        for ev in evs:
            if len(evs) > 1:
                print(f"runid\tall\t{ev.run_name}")
            _print_trec(ev, args.per_query)
    elif args.format == "json":
        out = [_json_payload(ev, args.per_query) for ev in evs]
        print(json.dumps(out[0] if len(out) == 1 else out, indent=2))
    else:
        _print_table(evs, args.per_query, title=f"rankbridge evaluate ({inputs.qrels.name})")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``rankbridge evaluate`` on an ``argparse`` subparsers object."""
    ev = add_command(
        subparsers,
        "evaluate",
        _cmd_evaluate,
        help="evaluate one or more run files against qrels",
        epilog="QRELS may be TREC (qid iter doc label), BEIR .tsv, or .jsonl; RUN may be TREC or .jsonl.\n"
        "examples:\n"
        "  rankbridge evaluate qrels.txt run.txt -m ndcg@10 -m P@5 -m recall@100\n"
        "  rankbridge evaluate qrels.txt bm25.txt dense.txt -m 'precision@5(rel=2)' --format json\n"
        "  rankbridge evaluate qrels.txt run.txt -m map --missing skip --format trec   # like trec_eval",
    )
    add_run_arguments(ev, DEFAULT_METRICS, paired=False)
    ev.add_argument("--per-query", action="store_true", help="also print per-query values")
    ev.add_argument(
        "--missing",
        choices=["zero", "skip"],
        default="zero",
        help="queries in the qrels but not in the run: score 0 (default, trec_eval -c) or skip (trec_eval default)",
    )
    ev.add_argument("--format", choices=["table", "json", "trec"], default="table")
    ev.add_argument(
        "--single-precision",
        action="store_true",
        help="compare scores as float32 before the doc-id tie-break, exactly as trec_eval does",
    )
    ev.add_argument(
        "--duplicates",
        choices=["error", "first"],
        default="error",
        help="a doc listed twice for one query in a TREC run: error (default) or keep the first line",
    )
