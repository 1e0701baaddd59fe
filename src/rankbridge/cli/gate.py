"""``rankbridge gate``: the CI quality gate (exit 1 when a metric dropped significantly against a baseline)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rankbridge.analysis import EXIT_FAILED, EXIT_PASSED, gate
from rankbridge.cli._common import (
    JUDGMENTS_HELP,
    add_command,
    add_test_arguments,
    load_judgments,
    paired_test_options,
    split_metric_args,
)
from rankbridge.errors import InputError
from rankbridge.evaluate import evaluate
from rankbridge.io import load_run
from rankbridge.metrics.measures import column_facts, column_name
from rankbridge.store import DEFAULT_STORE_PATH, RunStore

__all__ = ["add_cli"]


def _cmd_gate(args: argparse.Namespace) -> int:
    metrics = split_metric_args(args.metric, ())
    if not metrics:
        raise InputError("gate: name the metric to gate on with -m, e.g. -m ndcg@10")
    canonical = [column_name(m) for m in metrics]
    joined = [m for m in canonical if column_facts(m).source != "ranking"]
    if joined:
        raise InputError(
            f"gate: {', '.join(joined)} cannot be computed from a run file; the command line gates ranking metrics. "
            "Gate a RAGAS column from Python: gate(join(ev, evaluate_ragas(...)), baseline_ev, metric=...)"
        )
    qrels, golden = load_judgments(args.qrels)
    run = load_run(args.run)
    if args.name:
        run.name = args.name
    ev = evaluate(golden if golden is not None else qrels, run, canonical, missing="zero")

    baseline: Any = None
    store: RunStore | None = None
    use_store = not Path(args.baseline).is_file()
    try:
        if use_store:
            if Path(args.store).exists() or args.save:
                store = RunStore(args.store, create=bool(args.save))
            if store is None or store.latest(args.baseline) is None:
                if args.missing_baseline == "error":
                    where = args.store if store is not None else f"{args.store} (no such file)"
                    raise InputError(
                        f"--baseline {args.baseline!r}: not a run file, and no record of that name in {where}. "
                        f"Save one with --missing-baseline pass --save {args.baseline}"
                    )
            else:
                baseline = args.baseline
        else:
            baseline = load_run(args.baseline)
        results = []
        if baseline is not None:
            for metric in canonical:
                results.append(
                    gate(
                        ev,
                        baseline,
                        qrels,
                        metric=metric,
                        max_drop=args.max_drop,
                        store=store,
                        **paired_test_options(args),
                    )
                )
        passed = all(r.passed for r in results)
        saved: int | None = None
        if args.save and passed:
            if store is None:
                store = RunStore(args.store)
            saved = store.save(ev, run=run, name=args.save, qrels=qrels)
    finally:
        if store is not None:
            store.close()

    if args.format == "json":
        payload = {
            "passed": passed,
            "exit_code": EXIT_PASSED if passed else EXIT_FAILED,
            "baseline_found": baseline is not None,
            "saved_record": saved,
            "gates": [r.to_dict() for r in results],
        }
        print(json.dumps(payload, indent=2))
    else:
        if baseline is None:
            print(f"no baseline {args.baseline!r} yet: nothing to compare, the gate passes (--missing-baseline pass)")
        for r in results:
            print(r)
        if args.save:
            if saved is not None:
                print(f"saved as {args.save!r} (record {saved}) in {args.store}")
            else:
                print(f"not saved as {args.save!r}: a failed run never becomes the baseline", file=sys.stderr)
    return EXIT_PASSED if passed else EXIT_FAILED


def add_cli(subparsers: Any) -> None:
    """Register ``rankbridge gate`` on an ``argparse`` subparsers object.

    Examples
    --------
    >>> from rankbridge.cli import build_parser
    >>> args = build_parser().parse_args(["gate", "--baseline", "main", "--qrels", "q.txt", "run.txt", "-m", "ndcg@10"])
    >>> args.baseline, args.run, args.metric, args.max_drop, args.alpha
    ('main', 'run.txt', ['ndcg@10'], 0.0, 0.05)
    """
    p = add_command(
        subparsers,
        "gate",
        _cmd_gate,
        help="CI quality gate: fail when a metric dropped significantly against a baseline",
        description="Compare RUN with a baseline on the same queries and fail when the metric's mean dropped by "
        "more than --max-drop AND a paired test finds the drop significant at --alpha. A drop that may be noise "
        "passes (with a note), so the gate does not flake on small query sets.",
        epilog="BASELINE is a run file when such a file exists, otherwise the name of a record in the history "
        "store (its newest record of that name).\n"
        "exit codes:\n"
        "  0  passed (no significant drop beyond --max-drop), or no baseline yet with --missing-baseline pass\n"
        "  1  failed: the metric dropped by more than --max-drop and the drop is significant\n"
        "  2  bad input or usage (unreadable files, unknown metric, unknown baseline name)\n"
        "examples:\n"
        "  rankbridge gate --baseline main --qrels qrels.txt run.txt -m ndcg@10 --max-drop 0.01\n"
        "  rankbridge gate --baseline main --missing-baseline pass --save main --qrels qrels.txt run.txt -m ndcg@10\n"
        "  rankbridge gate --baseline old_run.txt --qrels qrels.txt run.txt -m recall@10 --test t --format json",
    )
    p.add_argument("run", help="the candidate run file (TREC or .jsonl)")
    p.add_argument("--baseline", required=True, help="a run file, or the name of a record in --store")
    p.add_argument("--qrels", required=True, help=JUDGMENTS_HELP)
    p.add_argument(
        "-m", "--metric", action="append", help="metric to gate on, e.g. ndcg@10 (repeatable: every one must pass)"
    )
    p.add_argument("--max-drop", type=float, default=0.0, help="largest accepted drop of the mean (default: 0)")
    add_test_arguments(p)
    p.add_argument("--store", default=DEFAULT_STORE_PATH, help=f"history file (default: {DEFAULT_STORE_PATH})")
    p.add_argument("--save", metavar="NAME", help="when the gate passes, save the run to --store under NAME")
    p.add_argument("--name", help="the run's name (default: its run tag or file name)")
    p.add_argument(
        "--missing-baseline",
        choices=["error", "pass"],
        default="error",
        help="no record named BASELINE yet: error (exit 2, default) or pass (to bootstrap a new store)",
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
