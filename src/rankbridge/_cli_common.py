"""Small pieces the subcommands share (argument parsing conventions), so every command reads alike."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["split_metric_args", "unique_run_names"]


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
