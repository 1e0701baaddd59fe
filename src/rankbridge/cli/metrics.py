"""``rankbridge metrics``: every metric, its spelling, and its trec_eval name."""

from __future__ import annotations

import argparse
from typing import Any

from rankbridge.cli._common import add_command
from rankbridge.metrics.measures import MEASURES

__all__ = ["add_cli"]


def _cmd_metrics(args: argparse.Namespace) -> int:
    for name, spec in MEASURES.items():
        k = {"required": "@k", "optional": "[@k]", "none": ""}[spec.k]
        rel = "(rel=N)" if spec.takes_rel else ""
        trec = f"  [trec_eval: {spec.trec.replace('{k}', 'k')}]" if spec.trec else ""
        print(f"{name}{k}{rel}".ljust(28) + spec.doc + trec)
    return 0


def add_cli(subparsers: Any) -> None:
    """Register ``rankbridge metrics`` on an ``argparse`` subparsers object."""
    add_command(
        subparsers,
        "metrics",
        _cmd_metrics,
        help="list the metrics and their trec_eval names",
        epilog="@k is a cut-off (in brackets: optional), (rel=N) the lowest label that counts as relevant\n"
        "(default 1). Every command's -m takes these names, their trec_eval names and short forms.\n"
        "examples:\n"
        "  rankbridge metrics\n"
        "  rankbridge evaluate qrels.txt run.txt -m ndcg@10 -m 'P@5(rel=2)' -m recip_rank\n"
        "  rankbridge compare qrels.txt bm25.txt dense.txt -m ndcg_cut_10 -m mrr@10",
    )
