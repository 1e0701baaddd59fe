"""Readers and writers: TREC qrels/run files, BEIR folders, JSON Lines, and golden sets in every form.

Every reader raises :class:`~rankbridge.errors.ParseError` naming the file and line of a problem;
every writer is atomic (a failure leaves no partial file).

Golden sets: ``read_golden(path_or_obj)`` picks the reader by type, suffix and content; ``read_golden_*``
read a file, ``golden_from_*`` an object in memory (pandas, HF ``datasets``, ``ir_datasets``, LlamaIndex,
RAGAS), ``qrels_from_ranx`` / ``run_from_ranx`` / ``to_ranx`` convert ranx objects (see docs/data.md).
Traces: ``read_openinference`` (OTLP JSON, Phoenix DataFrames / Parquet, OpenTelemetry SDK spans) and
``read_langsmith`` (exported LangSmith runs) give the retrievals an app made as a run (docs/traces.md).
They are loaded on first use, so ``import rankbridge`` stays light.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rankbridge.errors import InputError
from rankbridge.io import trec as _trec
from rankbridge.io.beir import (
    read_beir,
    read_beir_corpus,
    read_beir_qrels,
    read_beir_queries,
    write_beir,
    write_beir_qrels,
)
from rankbridge.io.jsonl import read_qrels_jsonl, read_run_jsonl, write_qrels_jsonl, write_run_jsonl
from rankbridge.io.trec import read_qrels, read_run
from rankbridge.types import Qrels, Run

# name -> module, loaded on first use (the readers import pandas, datasets... only when they are called, but
# their modules are still more than `import rankbridge` needs)
_LAZY = {
    "read_golden": "golden",
    "read_golden_jsonl": "tables",
    "read_golden_csv": "tables",
    "read_golden_parquet": "tables",
    "read_run_parquet": "run_tables",
    "run_from_table": "run_tables",
    "write_run_parquet": "run_tables",
    "golden_from_rows": "tables",
    "golden_from_pandas": "tables",
    "golden_from_hf": "tables",
    "stable_query_id": "tables",
    "GoldenSetWarning": "tables",
    "read_golden_beir": "beir_gz",
    "golden_from_ir_datasets": "ir_datasets",
    "read_golden_llamaindex": "llamaindex_json",
    "golden_from_llamaindex": "llamaindex_json",
    "qrels_run_from_llamaindex": "llamaindex_json",
    "golden_from_ragas": "ragas_testset",
    "read_golden_ragas": "ragas_testset",
    "match_ragas_contexts": "ragas_testset",
    "ContextMatch": "ragas_testset",
    "MatchedContext": "ragas_testset",
    "UnmatchedContextsWarning": "ragas_testset",
    "ContextMatchError": "ragas_testset",
    "qrels_from_ranx": "ranx",
    "run_from_ranx": "ranx",
    "to_ranx": "ranx",
    "read_openinference": "traces",
    "read_langsmith": "traces",
    "openinference_capture": "traces",
    "langsmith_capture": "traces",
    "TraceCapture": "traces",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rankbridge.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"rankbridge.io.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ContextMatch",
    "ContextMatchError",
    "GoldenSetWarning",
    "MatchedContext",
    "TraceCapture",
    "UnmatchedContextsWarning",
    "golden_from_hf",
    "golden_from_ir_datasets",
    "golden_from_llamaindex",
    "golden_from_pandas",
    "golden_from_ragas",
    "golden_from_rows",
    "langsmith_capture",
    "load_qrels",
    "load_run",
    "match_ragas_contexts",
    "openinference_capture",
    "qrels_from_ranx",
    "qrels_run_from_llamaindex",
    "read_beir",
    "read_beir_corpus",
    "read_beir_qrels",
    "read_beir_queries",
    "read_golden",
    "read_golden_beir",
    "read_golden_csv",
    "read_golden_jsonl",
    "read_golden_llamaindex",
    "read_golden_parquet",
    "read_golden_ragas",
    "read_langsmith",
    "read_openinference",
    "read_qrels",
    "read_qrels_jsonl",
    "read_run",
    "read_run_jsonl",
    "read_run_parquet",
    "run_from_ranx",
    "run_from_table",
    "stable_query_id",
    "to_ranx",
    "write_beir",
    "write_beir_qrels",
    "write_qrels",
    "write_qrels_jsonl",
    "write_run",
    "write_run_jsonl",
    "write_run_parquet",
]


def _suffix(path: str | os.PathLike[str]) -> str:
    return Path(path).suffix.lower()


# Suffixes of formats no run reader or writer speaks: a TREC text file under such a name would be a lie to
# every other tool (and load_run would read a real one of them as a broken TREC file).
_NOT_RUN_SUFFIXES = frozenset(
    {".json", ".csv", ".xlsx", ".xls", ".feather", ".arrow", ".ipc", ".orc", ".avro", ".pq", ".parq"}
    | {".pkl", ".pickle", ".npy", ".npz", ".h5", ".hdf5", ".ndjson"}
)


def _run_format(path: str | os.PathLike[str], doing: str) -> str:
    """``"jsonl"``, ``"parquet"`` or ``"trec"`` by the file's suffix; a suffix of another format is refused."""
    suffix = _suffix(path)
    if suffix in (".jsonl", ".parquet"):
        return suffix[1:]
    if suffix in _NOT_RUN_SUFFIXES:
        raise InputError(
            f"{doing} {os.fspath(path)!r}: expected a run file named .jsonl (JSON Lines), .parquet (one row per "
            f"hit) or any other name for a TREC run file (.txt, .trec, .run, none), found {suffix!r}"
        )
    return "trec"


def load_qrels(path: str | os.PathLike[str], *, name: str | None = None) -> Qrels:
    """Read qrels by file type: ``.jsonl`` (JSON Lines), ``.tsv`` (BEIR), otherwise TREC.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "qrels.tsv"
    >>> write_qrels({"q1": {"d1": 2}}, p)
    >>> load_qrels(p).to_dict()
    {'q1': {'d1': 2}}
    """
    suffix = _suffix(path)
    if suffix == ".jsonl":
        return read_qrels_jsonl(path, name=name)
    if suffix == ".tsv":
        qrels = read_beir_qrels(path)
        if name is not None:
            qrels.name = name
        return qrels
    return read_qrels(path, name=name)


def load_run(path: str | os.PathLike[str], *, duplicates: str = "error", name: str | None = None) -> Run:
    """Read a run by file type: ``.jsonl`` (JSON Lines, rank order), ``.parquet`` (one row per hit:
    :func:`read_run_parquet`), otherwise TREC; what :func:`write_run` writes under each name.

    ``duplicates`` applies to TREC and Parquet files (see :func:`read_run`); a JSON Lines run keeps the
    first of repeated hits and counts the others in :attr:`Run.duplicates`. A name of another format
    (``.json``, ``.csv``, ...) is refused with an :class:`~rankbridge.errors.InputError`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> write_run(Run.from_ranked({"q1": ["d2", "d1"]}, name="bm25"), p)
    >>> load_run(p).ranking("q1")
    ['d2', 'd1']
    """
    form = _run_format(path, "load_run")
    if form == "jsonl":
        return read_run_jsonl(path, name=name)
    if form == "parquet":
        read_parquet: Any = __getattr__("read_run_parquet")  # run_tables: loaded on first use
        return read_parquet(path, duplicates=duplicates, name=name)  # type: ignore[no-any-return]
    return read_run(path, duplicates=duplicates, name=name)  # type: ignore[arg-type]


def write_run(
    run: Run | Mapping[str, Mapping[str, float]], path: str | os.PathLike[str], *, tag: str | None = None
) -> None:
    """Write a run by file type, so that :func:`load_run` reads it back: ``.jsonl``, ``.parquet`` or TREC.

    A ``.jsonl`` name gets JSON Lines (:func:`write_run_jsonl`: rank order, scores, texts, metadata,
    errors and latencies; ``tag`` renames the run). A ``.parquet`` name gets a table of one row per hit
    (:func:`write_run_parquet`: rank order and scores, read back as written, and texts for other tools;
    named after the file when read, so ``tag`` is refused). A name of another format (``.json``,
    ``.csv``, ``.feather``, ...) is refused with an :class:`~rankbridge.errors.InputError`. Any other
    name gets a TREC run file
    (:func:`rankbridge.io.trec.write_run`: ids and scores, rank order kept).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from rankbridge import Hit
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> run = Run.from_ranked({"q1": [Hit("d2", 0.2, "chunk text"), Hit("d1", 0.9)]}, name="dense")
    >>> write_run(run, p)
    >>> load_run(p).hits("q1") == run.hits("q1")
    True
    """
    form = _run_format(path, "write_run")
    if form == "jsonl":
        obj = run if isinstance(run, Run) else Run.from_scores(run, name="rankbridge")
        write_run_jsonl(obj, path, name=tag)
    elif form == "parquet":
        if tag is not None:
            raise InputError(
                f"write_run: tag={tag!r} names the run in TREC and JSON Lines files; a Parquet run has no "
                "place for it (read_run_parquet names the run after the file)"
            )
        __getattr__("write_run_parquet")(run, path)  # run_tables: loaded on first use
    else:
        _trec.write_run(run, path, tag=tag)


def write_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]], path: str | os.PathLike[str]) -> None:
    """Write qrels by file type, so that :func:`load_qrels` reads them back: ``.jsonl``, ``.tsv`` or TREC.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "qrels.jsonl"
    >>> write_qrels(Qrels({"q1": {"d1": 2, "d2": 0}}), p)
    >>> load_qrels(p).to_dict()
    {'q1': {'d1': 2, 'd2': 0}}
    """
    suffix = _suffix(path)
    if suffix == ".jsonl":
        write_qrels_jsonl(qrels, path)
    elif suffix == ".tsv":
        write_beir_qrels(qrels, path)
    else:
        _trec.write_qrels(qrels, path)
