"""Small pieces the subcommands share (argument parsing conventions), so every command reads alike."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rankbridge.types import GoldenSet, Qrels

__all__ = ["add_run_arguments", "add_test_arguments", "load_judgments", "split_metric_args", "unique_run_names"]

JUDGMENTS_HELP = (
    "relevance judgments: qrels (TREC, BEIR .tsv, qrels .jsonl) or a golden set (BEIR folder, golden "
    ".jsonl/.csv/.parquet, LlamaIndex qa .json); a golden set's corpus ids also check the runs' doc ids"
)


def _first_json_object(path: Path) -> dict[str, object] | None:
    from rankbridge.io._open import open_text

    # a file that cannot be decoded or parsed here is left to the reader it falls to, which names the line
    try:
        with open_text(path) as fh:
            for line in fh:
                if line.strip():
                    obj = json.loads(line)
                    return obj if isinstance(obj, dict) else None
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return None


def load_judgments(path: str | os.PathLike[str]) -> tuple[Qrels, GoldenSet | None]:
    """Qrels from a qrels file, or a golden set (and its qrels) from anything :func:`read_golden` reads.

    A folder, ``.json``, ``.csv`` and ``.parquet`` are golden sets; a ``.jsonl`` is qrels when its first
    object has a ``doc_id`` (rankbridge's qrels JSON Lines), else a golden set; anything else (TREC, BEIR
    ``.tsv``) is qrels.
    """
    from rankbridge.io import load_qrels, read_golden

    p = Path(path)
    name = p.name.lower().removesuffix(".gz")
    suffix = Path(name).suffix
    golden = None
    if p.is_dir() or suffix in (".json", ".csv", ".parquet"):
        golden = read_golden(p)
    elif suffix == ".jsonl" and p.is_file():
        first = _first_json_object(p)
        if first is not None and "doc_id" not in first:
            golden = read_golden(p)
    if golden is not None:
        return golden.qrels, golden
    return load_qrels(p), None


def add_run_arguments(p: argparse.ArgumentParser, default_metrics: Sequence[str], *, baseline: bool = True) -> None:
    """``qrels``, ``run...``, ``-m/--metric`` and (unless ``baseline=False``) ``--baseline``, as ``evaluate``,
    ``compare`` and ``report`` read them."""
    p.add_argument("qrels", help=JUDGMENTS_HELP)
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
