"""``rankbridge ragas export`` and ``rankbridge ragas score``: a run as RAGAS rows, or scored by RAGAS.

RAGAS itself is imported only when scoring (:func:`rankbridge.integrations.ragas.evaluate_ragas`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rankbridge._numbers import json_float
from rankbridge.cli._common import add_command, options_of
from rankbridge.cli._loader import SPEC_HELP, load_object
from rankbridge.errors import InputError
from rankbridge.evaluate import evaluate
from rankbridge.integrations.answers import Answer
from rankbridge.integrations.ragas import RAGAS_METRICS, evaluate_ragas, join, ragas_rows, write_dataset
from rankbridge.io import load_run
from rankbridge.io.jsonl import iter_jsonl
from rankbridge.types import GoldenSet, Run

__all__ = ["add_cli"]

#: The options of ``ragas score`` named as the keyword arguments of :func:`evaluate_ragas` they set.
_SCORE_OPTIONS = ("k", "timeout", "max_workers", "budget")


def _read_responses(path: str) -> dict[str, Answer]:
    """A JSONL file of ``{"query_id", "response", "contexts"?, "context_ids"?}`` lines."""
    out: dict[str, Answer] = {}
    for lineno, obj in iter_jsonl(path):
        qid = obj.get("query_id", obj.get("id"))
        response = obj.get("response")
        if qid is None or not isinstance(response, str):
            raise InputError(f"{path}:{lineno}: expected 'query_id' and a string 'response'")
        contexts = tuple(obj.get("contexts") or ())
        ids = tuple(str(i) for i in obj.get("context_ids") or ())
        out[str(qid)] = Answer(response, contexts, ids)
    return out


def _golden_and_run(args: argparse.Namespace) -> tuple[GoldenSet, Run]:
    golden = GoldenSet.from_beir(args.golden, split=args.split)
    run = load_run(args.run)
    return golden, run


def _cmd_export(args: argparse.Namespace) -> int:
    golden, run = _golden_and_run(args)
    responses = _read_responses(args.responses) if args.responses else None
    rows = ragas_rows(run, golden, responses, k=args.k, allow_partial=args.allow_partial)
    out = write_dataset(rows, args.output)
    sources: dict[str, int] = {}
    for r in rows:
        sources[r["context_source"]] = sources.get(r["context_source"], 0) + 1
    detail = ", ".join(f"{k}: {v}" for k, v in sorted(sources.items()))
    print(f"wrote {len(rows)} rows to {out} (context texts from {detail})", file=sys.stderr)
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    golden, run = _golden_and_run(args)
    responses = _read_responses(args.responses) if args.responses else None
    llm = load_object(args.llm, "--llm") if args.llm else None
    emb = load_object(args.embeddings, "--embeddings") if args.embeddings else None
    ranking = evaluate(golden.qrels, run, args.ranking_metric or ["ndcg@10", "recall@10"])
    result = evaluate_ragas(
        run,
        golden,
        llm=llm,
        embeddings=emb,
        metrics=args.metric or None,
        responses=responses,
        query_ids=ranking.query_ids,
        **options_of(args, _SCORE_OPTIONS),
    )
    both = join(ranking, result)
    if args.format == "json":
        payload: dict[str, Any] = {
            "run": both.run_name,
            "num_queries": both.num_queries,
            "mean": {k: json_float(v) for k, v in both.mean.items()},
            "counts": both.counts,
            "failures": both.failures,
            "not_run": both.skipped,
            "context_source": both.context_source,
            "usage": both.usage,
        }
        if args.per_query:
            payload["per_query"] = {
                name: {q: json_float(v) for q, v in vals.items()} for name, vals in both.per_query.items()
            }
        print(json.dumps(payload, indent=2))
    else:
        print(both.describe())
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``rankbridge ragas export`` and ``rankbridge ragas score`` on the main CLI's subparsers.

    Parameters
    ----------
    subparsers:
        What ``ArgumentParser.add_subparsers()`` returned. Each command sets ``func(args) -> int``.
    """
    parser = subparsers.add_parser(
        "ragas",
        help="export a run as a RAGAS dataset, or score it with RAGAS beside ranking metrics",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  rankbridge ragas export run.txt --golden my_beir_dir -o rows.parquet\n"
        "  rankbridge ragas score run.txt --golden my_beir_dir                 # model-free metrics only\n"
        "  rankbridge ragas score run.txt --golden my_beir_dir --llm myapp.models:judge "
        "--embeddings myapp.models:embed --responses answers.jsonl\n"
        "RAGAS context_precision is AP-like over LLM-judged useful contexts: it is not precision@k.",
    )
    sub = parser.add_subparsers(dest="ragas_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("run", help="run file (TREC or .jsonl)")
        p.add_argument("--golden", required=True, help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
        p.add_argument("--split", default="test", help="qrels split (default: test)")
        p.add_argument("-k", type=int, default=None, help="use only the top k hits of each query")
        p.add_argument(
            "--responses",
            help="JSONL of generated answers: {query_id, response, contexts?, context_ids?} per line",
        )

    ex = add_command(sub, "export", _cmd_export, help="write one RAGAS row per query to .jsonl or .parquet")
    common(ex)
    ex.add_argument("-o", "--output", required=True, help="output file: out.jsonl or out.parquet")
    ex.add_argument("--allow-partial", action="store_true", help="write null where a field is missing for some queries")

    sc = add_command(
        sub,
        "score",
        _cmd_score,
        help="score a run with RAGAS (model-free metrics unless --llm is given), joined with ranking metrics",
    )
    common(sc)
    sc.add_argument("--llm", help=f"the judge LLM: {SPEC_HELP}")
    sc.add_argument("--embeddings", help=f"the embeddings (for answer_relevancy): {SPEC_HELP}")
    sc.add_argument("-m", "--metric", action="append", help=f"RAGAS metric, repeatable: {', '.join(RAGAS_METRICS)}")
    sc.add_argument("--ranking-metric", action="append", help="ranking metric to join (default: ndcg@10, recall@10)")
    sc.add_argument("--timeout", type=float, default=120.0, help="seconds per metric and row (default 120)")
    sc.add_argument("--max-workers", type=int, default=8, help="concurrent RAGAS jobs (default 8)")
    sc.add_argument("--budget", type=int, default=None, help="most RAGAS prompts sent to the LLM")
    sc.add_argument("--format", choices=["table", "json"], default="table")
    sc.add_argument("--per-query", action="store_true", help="with --format json, add per-query values")
