"""Readers and writers: TREC qrels/run files, BEIR folders, JSON Lines.

Every reader raises :class:`~rankbridge.errors.ParseError` naming the file and line of a problem;
every writer is atomic (a failure leaves no partial file).
"""

from __future__ import annotations

import os
from pathlib import Path

from rankbridge.io.beir import read_beir, read_beir_corpus, read_beir_qrels, read_beir_queries
from rankbridge.io.jsonl import read_qrels_jsonl, read_run_jsonl, write_qrels_jsonl, write_run_jsonl
from rankbridge.io.trec import read_qrels, read_run, write_qrels, write_run
from rankbridge.types import Qrels, Run

__all__ = [
    "load_qrels",
    "load_run",
    "read_beir",
    "read_beir_corpus",
    "read_beir_qrels",
    "read_beir_queries",
    "read_qrels",
    "read_qrels_jsonl",
    "read_run",
    "read_run_jsonl",
    "write_qrels",
    "write_qrels_jsonl",
    "write_run",
    "write_run_jsonl",
]


def load_qrels(path: str | os.PathLike[str]) -> Qrels:
    """Read qrels by file type: ``.jsonl`` (JSON Lines), ``.tsv`` (BEIR), otherwise TREC."""
    suffix = Path(path).suffix.lower()
    if suffix == ".jsonl":
        return read_qrels_jsonl(path)
    if suffix == ".tsv":
        return read_beir_qrels(path)
    return read_qrels(path)


def load_run(path: str | os.PathLike[str], *, duplicates: str = "error") -> Run:
    """Read a run by file type: ``.jsonl`` (JSON Lines, rank order), otherwise TREC."""
    if Path(path).suffix.lower() == ".jsonl":
        return read_run_jsonl(path)
    return read_run(path, duplicates=duplicates)  # type: ignore[arg-type]
