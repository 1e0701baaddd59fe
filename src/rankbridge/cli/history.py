"""``rankbridge history``: list, show, delete, trend and attach-qrels on the run history (SQLite).

Every subcommand exits with :data:`~rankbridge.store.EXIT_LOCKED` and one message when another process
holds the file's lock.
"""

from __future__ import annotations

import argparse
import builtins
import functools
import json
import math
import shutil
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from rankbridge._numbers import fmt_number, json_float
from rankbridge.cli._common import add_command, split_metric_args
from rankbridge.errors import StoreLockedError, TrendSplitWarning
from rankbridge.fingerprint import qrels_fingerprint, short_fingerprint
from rankbridge.io import load_qrels
from rankbridge.store import (
    DEFAULT_STORE_PATH,
    DEFAULT_TIMEOUT,
    EXIT_LOCKED,
    HistorySeries,
    RunRecord,
    RunStore,
    _canonical_metric,
    _plural,
)

__all__ = ["add_cli"]


def _fmt(value: float | None) -> str:
    return fmt_number(value, missing="-")  # a table's empty cell


def _short_time(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S")


def _compact_time(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M")


def _terminal_width() -> int:
    """Columns to fit tables in: the terminal's (``COLUMNS`` when set), 80 when unknown; at least 40."""
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def _ellipsize(text: str, width: int, *, middle: bool = False) -> str:
    """``text`` cut to ``width`` characters with an ellipsis; in the middle keeps both ends (run names).

    Examples
    --------
    >>> _ellipsize("dense-bge-small-rerank-v2", 12, middle=True), _ellipsize("nightly,abc", 8)
    ('dense-…nk-v2', 'nightly…')
    """
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    if middle:
        head = width // 2
        tail = width - 1 - head
        return text[:head] + "…" + (text[-tail:] if tail else "")
    return text[: width - 1] + "…"


def _fit_title(prefix: str, path: str, suffix: str, width: int) -> str:
    """``prefix + path + suffix`` in ``width`` characters, the path cut from the left (its end names it)."""
    room = width - len(prefix) - len(suffix)
    if len(path) > room:
        path = "…" + path[-max(room - 1, 8) :]
    return prefix + path + suffix


def _print_rows(
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    numeric_from: int,
    widths: Sequence[int] | None = None,
    width: int | None = None,
) -> None:
    """A table with rich when it is installed, aligned plain text otherwise; two spaces between columns.

    Cells are printed as given (never as rich markup); with ``widths`` the columns are exactly that wide.
    ``width`` is the line length the title must fit in (default: the terminal's).
    """
    if widths is None:
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    try:  # lazy: rich is an extra; the CLI works without it, just plainer
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text
    except ImportError:
        print(_ellipsize(title, width or _terminal_width()))

        def line(cells: Sequence[str]) -> str:
            return "  ".join(
                c.rjust(w) if i >= numeric_from else c.ljust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()

        print(line(header))
        for r in rows:
            print(line(r))
        return
    total = sum(widths) + 2 * (len(widths) - 1)
    table = Table(
        title=Text(title),
        title_justify="left",
        box=None,  # no dividers: two spaces between columns, as in plain text
        pad_edge=False,
        padding=(0, 1),
        header_style="bold",
    )
    for i, (h, w) in enumerate(zip(header, widths, strict=True)):
        table.add_column(
            Text(h), justify="right" if i >= numeric_from else "left", no_wrap=True, overflow="ellipsis", width=w
        )
    for r in rows:
        table.add_row(*(Text(c) for c in r))
    Console(width=max(total, width or _terminal_width()), soft_wrap=False).print(table)


def _print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False))


def _handles_lock(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """A history subcommand that exits with :data:`EXIT_LOCKED` and one message when the file is locked."""

    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except StoreLockedError as exc:
            print(f"rankbridge: error: {exc}", file=sys.stderr)
            return EXIT_LOCKED

    return wrapper


def _open(args: argparse.Namespace, *, create: bool = False) -> RunStore:
    return RunStore(args.store, create=create, timeout=getattr(args, "lock_timeout", DEFAULT_TIMEOUT))


def _list_layout(
    records: Sequence[RunRecord], metrics: Sequence[str], width: int
) -> tuple[builtins.list[str], builtins.list[builtins.list[str]], builtins.list[int], int, builtins.list[str]]:
    """Header, rows, column widths, first numeric column and the metrics left out, to fit in ``width``."""
    gap = 2
    has_tags = any(r.tags for r in records)
    ids = [str(r.id) for r in records]
    names = [r.name for r in records]
    tags = [",".join(r.tags) for r in records]
    qrels = [short_fingerprint(r.qrels_fingerprint) for r in records]
    counts = [str(r.num_queries) for r in records]
    id_w = max([2, *map(len, ids)])
    time_w = len("2024-05-04 12:00")
    qrels_w = max([5, *map(len, qrels)])
    count_w = max([7, *map(len, counts)])
    name_nat = max([4, *map(len, names)])
    tags_nat = max([4, *map(len, tags)]) if has_tags else 0
    name_min = min(name_nat, 14)
    fixed = [id_w, time_w, qrels_w, count_w]
    used = sum(fixed) + name_min + gap * len(fixed)  # the gaps between these five columns
    # Metrics come before tags: a tags column is shown only in the room the metrics leave.
    shown: builtins.list[str] = []
    metric_w: builtins.list[int] = []
    for m in metrics:
        w = max(len(m), 6)
        if used + gap + w > width:
            break
        shown.append(m)
        metric_w.append(w)
        used += gap + w
    left_out = builtins.list(metrics[len(shown) :])
    spare = max(0, width - used)
    name_w = min(name_nat, name_min + spare)
    spare -= name_w - name_min
    has_tags = has_tags and spare >= gap + 6
    tags_w = min(tags_nat, spare - gap) if has_tags else 0

    header = ["id", "saved (UTC)", "name", *(["tags"] if has_tags else []), "qrels", "queries", *shown]
    widths = [id_w, time_w, name_w, *([tags_w] if has_tags else []), qrels_w, count_w, *metric_w]
    rows = []
    for r, rid, name, tag, fp, count in zip(records, ids, names, tags, qrels, counts, strict=True):
        row = [rid, _compact_time(r.timestamp), _ellipsize(name, name_w, middle=True)]
        if has_tags:
            row.append(_ellipsize(tag, tags_w))
        row += [fp, count, *(_fmt(r.mean.get(m)) for m in shown)]
        rows.append(row)
    return header, rows, widths, len(header) - len(shown) - 1, left_out


@_handles_lock
def _cmd_list(args: argparse.Namespace) -> int:
    with _open(args) as store:
        records = store.list(args.name, limit=args.limit)
    if args.format == "json":
        _print_json([r.to_dict() for r in records])
        return 0
    metrics: builtins.list[str] = []
    if args.metric:
        metrics = [_canonical_metric(m) for m in split_metric_args(args.metric, [])]
    else:
        for r in records:
            metrics.extend(m for m in r.metrics if m not in metrics)
    width = _terminal_width()
    header, rows, widths, numeric_from, left_out = _list_layout(records, metrics, width)
    unknown = ", qrels ?: unknown"
    if not any(r.qrels_fingerprint is None for r in records):
        unknown = ""
    title = _fit_title("run history (", args.store, f"): {_plural(len(records), 'record')}{unknown}", width)
    _print_rows(title, header, rows, numeric_from, widths, width)
    if left_out:
        more = ", ".join(left_out[:3]) + (", ..." if len(left_out) > 3 else "")
        note = f"{_plural(len(left_out), 'more metric')} not shown ({more}): -m METRIC, or --format json"
        print(_ellipsize(note, width))
    return 0


@_handles_lock
def _cmd_show(args: argparse.Namespace) -> int:
    with _open(args) as store:
        record = store.get(args.id)
        evaluation = store.load(args.id)
        errors = store.errors(args.id)
    if args.format == "json":
        payload = record.to_dict()
        payload.update(
            missing=builtins.list(evaluation.missing),
            failed=builtins.list(evaluation.failed),
            unjudged=builtins.list(evaluation.unjudged),
            no_relevant=builtins.list(evaluation.no_relevant),
            errors=errors,
        )
        if args.per_query:
            payload["per_query"] = {
                m: {q: json_float(v) for q, v in values.items()} for m, values in evaluation.per_query.items()
            }
        _print_json(payload)
        return 0
    print(f"record {record.id}: {record.name}, saved {_short_time(record.timestamp)} UTC")
    print(f"config: {json.dumps(dict(record.config), sort_keys=True)}")
    if record.tags:
        print(f"tags: {', '.join(record.tags)}")
    if record.qrels_fingerprint is not None:
        named = f"{record.qrels_name}, " if record.qrels_name else ""
        print(f"qrels: {named}fingerprint {record.qrels_fingerprint}")
    else:
        named = f"{record.qrels_name}, " if record.qrels_name else ""
        print(f"qrels: {named}fingerprint unknown (trends leave this record out beside known ones)")
    print(
        f"rankbridge {record.rankbridge_version}, metric definitions v{record.metric_definitions_version}, "
        f"missing queries: {record.missing_policy}"
    )
    if record.latency_mean is not None:
        print(f"latency: mean {record.latency_mean:.4f}s, p95 {record.latency_p95:.4f}s")
    print(evaluation.summary())
    _print_rows("means", ["metric", "mean"], [[m, _fmt(v)] for m, v in record.mean.items()], 1)
    for qid, message in builtins.list(errors.items())[:10]:
        print(f"failed {qid}: {message}")
    if len(errors) > 10:
        print(f"... and {len(errors) - 10} more failures (--format json lists all)")
    if args.per_query:
        names = builtins.list(evaluation.values)
        rows = [[q, *(_fmt(float(evaluation.values[n][i])) for n in names)] for i, q in enumerate(evaluation.query_ids)]
        _print_rows("per query", ["query", *names], rows, 1)
    return 0


@_handles_lock
def _cmd_delete(args: argparse.Namespace) -> int:
    with _open(args) as store:
        store.delete(args.id)
    if args.format == "json":
        _print_json({"deleted": args.id})
    else:
        print(f"deleted record {args.id}")
    return 0


@_handles_lock
def _cmd_attach_qrels(args: argparse.Namespace) -> int:
    qrels = load_qrels(args.qrels)
    with _open(args) as store:
        changed = store.attach_qrels(args.ids, qrels)
        fingerprint = qrels_fingerprint(qrels)
    if args.format == "json":
        _print_json({"changed": changed, "record_ids": args.ids, "qrels_fingerprint": fingerprint})
    else:
        print(f"{_plural(changed, 'record')} now scored on qrels {short_fingerprint(fingerprint)} ({args.qrels})")
    return 0


def _series_rows(series: HistorySeries) -> builtins.list[builtins.list[str]]:
    rows = []
    previous: float | None = None
    for i, p in enumerate(series.points):
        change = "" if previous is None or math.isnan(previous) or math.isnan(p.mean) else f"{p.mean - previous:+.4f}"
        added, removed = series.queries_added[i], series.queries_removed[i]
        queries = str(series.num_queries[i]) + (f" +{added}/-{removed}" if added or removed else "")
        rows.append([_compact_time(p.timestamp), str(p.record_id), series.names[i], queries, _fmt(p.mean), change])
        previous = p.mean
    return rows


def _print_note(text: str, width: int, prefix: str = "note: ") -> None:
    print(textwrap.fill(text, width, initial_indent=prefix, subsequent_indent=" " * len(prefix)))


def _print_series(series: HistorySeries, title: str, width: int) -> None:
    rows = _series_rows(series)
    header = ["saved (UTC)", "id", "name", "queries", series.metric, "change"]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    spare = width - (sum(widths) + 2 * (len(widths) - 1))
    if spare < 0:  # the name gives way first
        widths[2] = max(8, widths[2] + spare)
        for r in rows:
            r[2] = _ellipsize(r[2], widths[2], middle=True)
    _print_rows(title, header, rows, 3, widths, width)


@_handles_lock
def _cmd_trend(args: argparse.Namespace) -> int:
    metric = _canonical_metric(args.metric)
    with _open(args) as store, warnings.catch_warnings():
        warnings.simplefilter("ignore", TrendSplitWarning)  # the same reasons are printed from trend.notes
        trend = store.trend(metric, args.name, queries=args.queries)
    if args.format == "json":
        payload = trend.to_dict()
        current = trend.series[trend.current] if trend.current is not None else None
        payload["points"] = current.to_dict()["points"] if current is not None else []
        _print_json(payload)
        return 0
    width = _terminal_width()
    if trend.current is None:
        print(f"{metric} over time (0 records)")
        for note in trend.notes:
            _print_note(note, width)
        return 0
    chosen = range(len(trend.series)) if args.all else [trend.current]
    for i in chosen:
        s = trend.series[i]
        which = f"series {i + 1} of {len(trend.series)}: " if len(trend.series) > 1 else ""
        _print_note(f"{which}{s.label}", width, prefix="")
        _print_series(s, f"{metric} over time ({_plural(len(s.points), 'record')})", width)
    for note in trend.notes:
        _print_note(note, width)
    if len(trend.series) > 1 and not args.all:
        others = [s for i, s in enumerate(trend.series) if i != trend.current]
        listed = "; ".join(f"{_plural(len(s.points), 'record')}, {s.label}" for s in others[:3])
        more = "; ..." if len(others) > 3 else ""
        _print_note(f"{_plural(len(others), 'other series')} not shown ({listed}{more}): --all shows them", width, "")
    return 0


def add_cli(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``rankbridge history`` (list, show, delete, trend, attach-qrels) on the CLI's subparsers.

    Each subcommand sets ``func`` (called with the parsed namespace, returning the exit code: 0, or
    :data:`EXIT_LOCKED` when another process holds the file's lock); other errors are raised as
    :class:`~rankbridge.errors.InputError` or :class:`StoreError`.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="rankbridge")
    >>> add_cli(parser.add_subparsers(dest="command", required=True))
    >>> args = parser.parse_args(["history", "--store", "h.sqlite", "trend", "nDCG@10", "--name", "bm25"])
    >>> args.store, args.metric, args.name, args.format, args.queries, args.lock_timeout
    ('h.sqlite', 'nDCG@10', 'bm25', 'table', 'join', 5.0)
    """
    history = subparsers.add_parser(
        "history",
        help="list, show, delete and trend saved evaluations",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="A trend joins only records scored on the same qrels (fingerprint) under the same metric\n"
        "definitions; it says when it splits them, leaves records of unknown qrels out, or the query set\n"
        "changes.\n"
        "examples:\n"
        "  rankbridge history list\n"
        "  rankbridge history list --name bm25 --limit 5 --format json\n"
        "  rankbridge history show 12 --per-query\n"
        "  rankbridge history trend ndcg@10 --name dense --all\n"
        "  rankbridge history attach-qrels qrels.txt 3 4 5\n"
        "  rankbridge history --store ci/history.sqlite delete 12\n"
        f"exit codes: 0 ok, 2 bad input, {EXIT_LOCKED} the file is locked by another process (try again)",
    )

    def lock_timeout(text: str) -> float:
        value = float(text)
        if not value >= 0:
            raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0. Got {text!r}.")
        return value

    history.add_argument("--store", default=DEFAULT_STORE_PATH, help=f"history file (default: {DEFAULT_STORE_PATH})")
    history.add_argument("--format", choices=["table", "json"], default="table")
    history.add_argument(
        "--lock-timeout",
        type=lock_timeout,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"wait this long for another process's write lock (default: {DEFAULT_TIMEOUT:g})",
    )
    # The same options after the subcommand; SUPPRESS keeps the value given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", default=argparse.SUPPRESS, help="history file")
    common.add_argument("--format", choices=["table", "json"], default=argparse.SUPPRESS)
    common.add_argument("--lock-timeout", type=lock_timeout, default=argparse.SUPPRESS, metavar="SECONDS")
    sub = history.add_subparsers(dest="history_command", required=True, metavar="{list,show,delete,trend,attach-qrels}")

    ls = add_command(sub, "list", _cmd_list, parents=[common], help="saved records, newest first")
    ls.add_argument("--name", help="only records with this name")
    ls.add_argument("--limit", type=int, help="at most this many")
    ls.add_argument("-m", "--metric", action="append", help="metric columns to show (default: all that fit)")

    sh = add_command(sub, "show", _cmd_show, parents=[common], help="one record: config, counts, means")
    sh.add_argument("id", type=int, help="record id (see `history list`)")
    sh.add_argument("--per-query", action="store_true", help="also print per-query values")

    de = add_command(sub, "delete", _cmd_delete, parents=[common], help="delete one record")
    de.add_argument("id", type=int, help="record id")

    tr = add_command(
        sub, "trend", _cmd_trend, parents=[common], help="a metric's mean across comparable saved records, oldest first"
    )
    tr.add_argument("metric", help="metric name, e.g. ndcg@10")
    tr.add_argument("--name", help="only records with this name")
    tr.add_argument("--all", action="store_true", help="print every series, not only the newest one")
    tr.add_argument(
        "--queries",
        choices=["join", "same"],
        default="join",
        help="join records on different query sets, saying how many differ (default), or split there",
    )

    at = add_command(
        sub,
        "attach-qrels",
        _cmd_attach_qrels,
        parents=[common],
        help="record the qrels that records of unknown qrels were scored on",
    )
    at.add_argument("qrels", help="the qrels file they were scored on (TREC, BEIR .tsv or .jsonl)")
    at.add_argument("ids", type=int, nargs="+", help="record ids")
