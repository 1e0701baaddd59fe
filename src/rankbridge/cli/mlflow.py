"""``rankbridge mlflow log``: evaluate (one run) or compare (several) and log the result into MLflow.

MLflow itself is imported only when something is logged (:func:`rankbridge.integrations.mlflow.log_evaluation`),
so building the parser does not import it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rankbridge.analysis import Comparison, compare
from rankbridge.cli._common import (
    JUDGMENTS_HELP,
    add_test_arguments,
    load_judgments,
    split_metric_args,
    unique_run_names,
)
from rankbridge.evaluate import Evaluation, evaluate
from rankbridge.integrations.mlflow import DEFAULT_EXPERIMENT, log_evaluation
from rankbridge.io import load_run
from rankbridge.metrics.measures import parse_measures

__all__ = ["DEFAULT_MLFLOW_METRICS", "add_cli"]

DEFAULT_MLFLOW_METRICS = ["ndcg@10", "mrr@10", "recall@10", "hit_rate@5"]


def _cmd_log(args: argparse.Namespace) -> int:
    metrics = parse_measures(split_metric_args(args.metric, DEFAULT_MLFLOW_METRICS))
    qrels, golden = load_judgments(args.qrels)
    loaded = [load_run(p) for p in args.run]
    named = dict(zip(unique_run_names([r.name for r in loaded], args.run), loaded, strict=True))
    judged: Any = golden if golden is not None else qrels
    result: Evaluation | Comparison
    if len(named) == 1:
        name, run = next(iter(named.items()))
        run.name = name
        result = evaluate(judged, run, metrics)
    else:
        result = compare(
            named,
            judged,
            metrics,
            baseline=args.baseline,
            test=args.test,
            alpha=args.alpha,
            level=args.level,
            seed=args.seed,
            n_resamples=args.n_resamples,
        )
    logged = log_evaluation(
        result,
        run=args.run_id,
        golden=golden,
        qrels=qrels,
        runs=named,
        report=not args.no_report,
        experiment=args.experiment,
        run_name=args.run_name,
        tracking_uri=args.tracking_uri,
        level=args.level,
        n_resamples=args.n_resamples,
        seed=args.seed,
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
    >>> parser = argparse.ArgumentParser(prog="rankbridge")
    >>> add_cli(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["mlflow", "log", "qrels.txt", "a.txt", "-m", "ndcg@10", "--tracking-uri", "sqlite:///x.db"])
    >>> args.run, args.metric, args.tracking_uri, args.no_report
    (['a.txt'], ['ndcg@10'], 'sqlite:///x.db', False)
    """
    p = subparsers.add_parser("mlflow", help="log evaluations and comparisons into MLflow")
    sub = p.add_subparsers(dest="mlflow_command", metavar="{log}")
    sub.required = True
    lg = sub.add_parser(
        "log",
        help="evaluate (one run) or compare (several) and log the result into an MLflow run",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Without --tracking-uri (and without MLFLOW_TRACKING_URI) the run goes to a local SQLite store,\n"
        "./mlflow.db, with artifacts in ./mlruns. Set MLFLOW_DISABLE_TELEMETRY=true to turn off MLflow's telemetry.\n"
        "examples:\n"
        "  rankbridge mlflow log qrels.txt bm25.txt -m ndcg@10 -m mrr@10\n"
        "  rankbridge mlflow log qrels.txt bm25.txt dense.txt --tracking-uri http://localhost:5000",
    )
    lg.add_argument("qrels", help=JUDGMENTS_HELP)
    lg.add_argument("run", nargs="+", help="run files (TREC or .jsonl); named by their run tag, else file name")
    lg.add_argument(
        "-m",
        "--metric",
        action="append",
        help=f"metric, repeatable or comma-separated (default: {','.join(DEFAULT_MLFLOW_METRICS)})",
    )
    lg.add_argument("--baseline", help="name of the baseline run (default: the first)")
    add_test_arguments(lg)
    lg.add_argument("--tracking-uri", help="MLflow tracking URI (default: configured, else sqlite:///./mlflow.db)")
    lg.add_argument("--experiment", default=DEFAULT_EXPERIMENT, help=f"experiment name (default: {DEFAULT_EXPERIMENT})")
    lg.add_argument("--run-name", help="name of the new MLflow run")
    lg.add_argument("--run-id", help="log into this existing MLflow run instead of a new one")
    lg.add_argument("--no-report", action="store_true", help="do not log the HTML report")
    lg.add_argument("--json", action="store_true", help="print what was logged as JSON")
    lg.set_defaults(func=_cmd_log)
