"""``rankbridge mlflow log``: evaluate (one run) or compare (several) and log the result into MLflow.

MLflow itself is imported only when something is logged (:func:`rankbridge.integrations.mlflow.log_evaluation`),
so building the parser does not import it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rankbridge.analysis import Comparison, compare
from rankbridge.cli._common import add_command, add_run_arguments, options_of, paired_test_options, read_run_inputs
from rankbridge.evaluate import Evaluation, evaluate
from rankbridge.integrations.mlflow import DEFAULT_EXPERIMENT, log_evaluation

__all__ = ["add_cli"]

#: The options of ``mlflow log`` named as the keyword arguments of :func:`log_evaluation` they set.
_LOG_OPTIONS = ("experiment", "run_name", "tracking_uri", "level", "n_resamples", "seed")


def _cmd_log(args: argparse.Namespace) -> int:
    inputs = read_run_inputs(args)
    result: Evaluation | Comparison
    if len(inputs.runs) == 1:
        name, run = next(iter(inputs.runs.items()))
        run.name = name
        result = evaluate(inputs.judgments, run, inputs.measures)
    else:
        result = compare(
            inputs.runs, inputs.judgments, inputs.measures, baseline=args.baseline, **paired_test_options(args)
        )
    logged = log_evaluation(
        result,
        run=args.run_id,
        golden=inputs.golden,
        qrels=inputs.qrels,
        runs=inputs.runs,
        report=not args.no_report,
        **options_of(args, _LOG_OPTIONS),
    )
    if args.json:
        print(json.dumps(logged.to_dict(), indent=2))
    else:
        where = f" (local store {logged.local_store})" if logged.local_store else ""
        print(
            f"logged {len(logged.metrics)} metrics, {len(logged.params)} params and "
            f"{len(logged.artifacts)} artifacts to MLflow run {logged.run_id} at {logged.tracking_uri}{where}"
        )
        if logged.truncated_params:
            print(f"params cut at MLflow's length limit: {', '.join(logged.truncated_params)}")
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``rankbridge mlflow log`` on an ``argparse`` subparsers object.

    Examples
    --------
    >>> from rankbridge.cli import build_parser
    >>> args = build_parser().parse_args(["mlflow", "log", "qrels.txt", "a.txt", "-m", "ndcg@10", "--tracking-uri", "sqlite:///x.db"])
    >>> args.run, args.metric, args.tracking_uri, args.no_report
    (['a.txt'], ['ndcg@10'], 'sqlite:///x.db', False)
    """
    p = subparsers.add_parser(
        "mlflow",
        help="log evaluations and comparisons into MLflow",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="One run is evaluated, several are compared with the first (or --baseline); see 'mlflow log --help'.\n"
        "examples:\n"
        "  rankbridge mlflow log qrels.txt bm25.txt -m ndcg@10 -m mrr@10\n"
        "  rankbridge mlflow log qrels.txt bm25.txt dense.txt --experiment retrieval --run-name nightly",
    )
    sub = p.add_subparsers(dest="mlflow_command", metavar="{log}")
    sub.required = True
    lg = add_command(
        sub,
        "log",
        _cmd_log,
        help="evaluate (one run) or compare (several) and log the result into an MLflow run",
        epilog="Without --tracking-uri (and without MLFLOW_TRACKING_URI) the run goes to a local SQLite store,\n"
        "./mlflow.db, with artifacts in ./mlruns. Set MLFLOW_DISABLE_TELEMETRY=true to turn off MLflow's telemetry.\n"
        "examples:\n"
        "  rankbridge mlflow log qrels.txt bm25.txt -m ndcg@10 -m mrr@10\n"
        "  rankbridge mlflow log qrels.txt bm25.txt dense.txt --tracking-uri http://localhost:5000",
    )
    add_run_arguments(lg)
    lg.add_argument("--tracking-uri", help="MLflow tracking URI (default: configured, else sqlite:///./mlflow.db)")
    lg.add_argument("--experiment", default=DEFAULT_EXPERIMENT, help=f"experiment name (default: {DEFAULT_EXPERIMENT})")
    lg.add_argument("--run-name", help="name of the new MLflow run")
    lg.add_argument("--run-id", help="log into this existing MLflow run instead of a new one")
    lg.add_argument("--no-report", action="store_true", help="do not log the HTML report")
    lg.add_argument("--json", action="store_true", help="print what was logged as JSON")
