"""The ``rankbridge`` command.

Exit codes: 0 success; 1 a quality gate failed (``rankbridge gate``); 2 bad input or usage (the message
says what and where); 3 incomplete (a budget was reached, or some queries or items failed); 70 an
unexpected error (a bug; ``RANKBRIDGE_DEBUG=1`` shows the traceback); 130 interrupted.
Errors are printed as one message, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rankbridge import __version__
from rankbridge._cli_common import add_run_arguments, load_judgments, split_metric_args, unique_run_names
from rankbridge.errors import MetricError, RankbridgeError, StoreLockedError
from rankbridge.evaluate import Evaluation, IdMismatchWarning, evaluate
from rankbridge.io import load_run
from rankbridge.metrics.measures import MEASURES, Measure, parse_measure, parse_measures

__all__ = ["main"]

_FEATURE_CLIS = [
    "rankbridge.compare",
    "rankbridge.store",
    "rankbridge.integrations.ragas",
    "rankbridge.judge.cli",
    "rankbridge.run_cli",
    "rankbridge.gate",
    "rankbridge.reports",
    "rankbridge.integrations.mlflow",
]

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
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # the CLI works without rich, just plainer
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
    metrics = parse_measures(split_metric_args(args.metric, DEFAULT_METRICS))
    qrels, golden = load_judgments(args.qrels)
    runs = [load_run(path, duplicates=args.duplicates) for path in args.run]
    for run, name in zip(runs, unique_run_names([r.name for r in runs], args.run), strict=True):
        run.name = name  # two files with the same run tag stay apart in the output
    with warnings.catch_warnings():
        # an id mismatch is in each evaluation's notes: said once below, not as a Python warning too
        warnings.simplefilter("ignore", IdMismatchWarning)
        judged = golden if golden is not None else qrels
        evs = [
            evaluate(judged, run, metrics, missing=args.missing, single_precision=args.single_precision) for run in runs
        ]
    if args.format != "table":  # the table prints each evaluation's summary, notes included
        for note in (n for ev in evs for n in ev.notes):
            print(f"rankbridge: warning: {note}", file=sys.stderr)
    if args.format == "trec":
        for ev in evs:
            if len(evs) > 1:
                print(f"runid\tall\t{ev.run_name}")
            _print_trec(ev, args.per_query)
    elif args.format == "json":
        out = [_json_payload(ev, args.per_query) for ev in evs]
        print(json.dumps(out[0] if len(out) == 1 else out, indent=2))
    else:
        _print_table(evs, args.per_query, title=f"rankbridge evaluate ({qrels.name})")
    return 0


def _cmd_metrics(args: argparse.Namespace) -> int:
    for name, spec in MEASURES.items():
        k = {"required": "@k", "optional": "[@k]", "none": ""}[spec.k]
        rel = "(rel=N)" if spec.takes_rel else ""
        trec = f"  [trec_eval: {spec.trec.replace('{k}', 'k')}]" if spec.trec else ""
        print(f"{name}{k}{rel}".ljust(28) + spec.doc + trec)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    """The main job: several strategies from both frameworks on one golden set, end to end, offline."""
    from rankbridge.demo import run_demo

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rankbridge",
        description="Measure how well a retriever finds the right chunks (trec_eval-exact metrics).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  rankbridge demo\n"
        "  rankbridge evaluate qrels.txt run.txt -m ndcg@10 -m P@5 --per-query --format trec\n"
        "  rankbridge compare qrels.txt bm25.txt dense.txt -m ndcg@10 --baseline bm25\n"
        "  rankbridge report qrels.txt bm25.txt dense.txt -m ndcg@10 -o report.html\n"
        "  rankbridge gate --baseline main --qrels qrels.txt run.jsonl -m ndcg@10 --max-drop 0.01\n"
        "exit codes: 0 ok, 1 gate failed, 2 bad input or usage, 3 incomplete (budget reached or some\n"
        "queries failed), 70 unexpected error (RANKBRIDGE_DEBUG=1 shows the traceback), 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"rankbridge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser(
        "evaluate",
        help="evaluate one or more run files against qrels",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="QRELS may be TREC (qid iter doc label), BEIR .tsv, or .jsonl; RUN may be TREC or .jsonl.\n"
        "examples:\n"
        "  rankbridge evaluate qrels.txt run.txt -m ndcg@10 -m P@5 -m recall@100\n"
        "  rankbridge evaluate qrels.txt bm25.txt dense.txt -m 'precision@5(rel=2)' --format json\n"
        "  rankbridge evaluate qrels.txt run.txt -m map --missing skip --format trec   # like trec_eval",
    )
    add_run_arguments(ev, DEFAULT_METRICS, baseline=False)
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
    ev.set_defaults(func=_cmd_evaluate)

    me = sub.add_parser("metrics", help="list the metrics and their trec_eval names")
    me.set_defaults(func=_cmd_metrics)

    de = sub.add_parser(
        "demo",
        help="run the offline demo: four strategies, both frameworks, statistics, RAGAS ids, HTML report",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  rankbridge demo\n  rankbridge demo --beir ../shared/data/scifact --out scifact-demo",
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
    de.set_defaults(func=_cmd_demo)

    # Commands that live beside their feature; each module imports only the standard library and numpy
    # at module level, so building the parser stays fast.
    for module in _FEATURE_CLIS:
        importlib.import_module(module).add_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rankbridge`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings(record=True) as caught:
        # the library's warnings (a golden set with unjudged questions, a trend split...) become one line
        # each on stderr, whatever the interpreter's warning filters say
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return _run(args)
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, UserWarning)):
                print(f"rankbridge: warning: {message}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except StoreLockedError as exc:  # another process is writing the history: try again (EX_TEMPFAIL)
        print(f"rankbridge: error: {exc}", file=sys.stderr)
        return 75
    except RankbridgeError as exc:
        print(f"rankbridge: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rankbridge: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `rankbridge evaluate ... | head`
        return 0
    except OSError as exc:  # a file that cannot be read or written: the user's input, not our bug
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"rankbridge: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one line by default, the traceback on request
        if os.environ.get("RANKBRIDGE_DEBUG"):
            raise
        print(
            f"rankbridge: unexpected error (a bug, please report it): {type(exc).__name__}: {exc}\n"
            "rankbridge: set RANKBRIDGE_DEBUG=1 to see the traceback",
            file=sys.stderr,
        )
        return 70


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
