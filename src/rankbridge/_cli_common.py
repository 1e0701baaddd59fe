"""Small pieces the subcommands share (argument parsing conventions), so every command reads alike."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

__all__ = ["add_run_arguments", "add_test_arguments", "split_metric_args", "unique_run_names"]


def add_run_arguments(p: argparse.ArgumentParser, default_metrics: Sequence[str], *, baseline: bool = True) -> None:
    """``qrels``, ``run...``, ``-m/--metric`` and (unless ``baseline=False``) ``--baseline``, as ``evaluate``,
    ``compare`` and ``report`` read them."""
    p.add_argument("qrels", help="relevance judgments file (TREC, BEIR .tsv or .jsonl)")
    p.add_argument("run", nargs="+", help="run files (TREC or .jsonl); named by their run tag, else file name")
    p.add_argument(
        "-m",
        "--metric",
        action="append",
        help=f"metric, repeatable or comma-separated (default: {','.join(default_metrics)})",
    )
    if baseline:
        p.add_argument("--baseline", help="name of the baseline run (default: the first)")


def add_test_arguments(p: argparse.ArgumentParser) -> None:
    """The paired test and interval options ``compare`` and ``report`` share."""
    p.add_argument(
        "--test",
        choices=["permutation", "t", "wilcoxon"],
        default="permutation",
        help="paired test (default: permutation)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default: 0.05)")
    p.add_argument("--level", type=float, default=0.95, help="confidence level of the intervals (default: 0.95)")
    p.add_argument("--n-resamples", type=int, default=10_000, help="bootstrap/permutation resamples (default: 10000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")


def split_metric_args(values: Sequence[str] | None, default: Sequence[str]) -> list[str]:
    """``-m`` values, each repeatable or comma-separated, in order; ``default`` when none were given.

    Examples
    --------
    >>> split_metric_args(["ndcg@10,P@5", " mrr "], ["map"])
    ['ndcg@10', 'P@5', 'mrr']
    >>> split_metric_args(None, ["map"])
    ['map']
    """
    if not values:
        return list(default)
    return [part for v in values for part in (p.strip() for p in v.split(",")) if part]


def unique_run_names(names: Sequence[str], paths: Sequence[str]) -> list[str]:
    """Run tags as names; the file stem when a tag is empty or repeated, then a suffix if still taken.

    Examples
    --------
    >>> unique_run_names(["bm25", "bm25", ""], ["a/bm25.txt", "b/dense.txt", "c/x.txt"])
    ['bm25', 'dense', 'x']
    """
    out: list[str] = []
    for i, name in enumerate(names):
        if not name or names.count(name) > 1:
            name = Path(paths[i]).stem
        if name in out:
            name = f"{name}-{i + 1}"
        out.append(name)
    return out
