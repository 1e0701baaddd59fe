"""``rankbridge run``: run your own retriever, named ``module:attr``, over a set of queries into a run file.

The retriever is whatever :func:`rankbridge.adapt` accepts (a LlamaIndex retriever / index / query
engine, a LangChain retriever / vector store, a function ``f(query, k)``, or an object with
``retrieve``/``aretrieve``), named as every ``module:attr`` option is (:mod:`rankbridge.cli._loader`):
``module:attr``, ``path/to/file.py:attr``, or ``module:factory()``; a class or a zero-argument function
is called to build it, a function that takes the query is the retriever.

Queries are read by :func:`rankbridge.io.queries.load_queries` (a BEIR folder, ``queries.jsonl`` or a
TSV). The run is written atomically when every query has finished: ``.jsonl`` keeps hit texts,
latencies and errors; ``.parquet`` is a table of one row per hit; any other name is a TREC run file
(:func:`rankbridge.io.write_run`). Progress is kept in ``OUTPUT.partial.jsonl`` as
queries finish; ``--resume`` continues from it (or from an existing ``.jsonl`` output), so an interrupted
or extended run redoes only what is missing or failed.

Exit codes: 0 every query succeeded; 2 bad input; 3 the run was written but some queries failed;
130 interrupted (progress kept for ``--resume``).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
from pathlib import Path
from typing import Any

from rankbridge.cli._common import EXIT_INCOMPLETE, EXIT_INTERRUPTED, add_command
from rankbridge.cli._loader import SPEC_HELP, load_object
from rankbridge.errors import RetrievalError
from rankbridge.io import _run_format, write_run
from rankbridge.io.queries import load_queries

__all__ = ["add_cli"]


def _cmd_run(args: argparse.Namespace) -> int:
    # lazy: the runner (asyncio, the framework registry) loads only for `rankbridge run`, so --help stays fast
    from rankbridge import runner

    output = Path(args.output)
    _run_format(output, "--output")  # a name write_run refuses is refused before the queries run
    checkpoint = output.with_name(output.name + ".partial.jsonl")
    queries = load_queries(args.queries, split=args.split)
    retriever = load_object(args.retriever, "retriever")
    if args.resume:
        if not checkpoint.exists() and output.suffix.lower() == ".jsonl" and output.is_file():
            shutil.copyfile(output, checkpoint)  # extend or repair a finished run
    elif checkpoint.exists():
        checkpoint.unlink()
    try:
        run = runner.run_retriever(  # through the module: tests stand in for it there
            retriever,
            queries,
            k=args.k,
            concurrency=args.concurrency,
            timeout=args.timeout if 0 < args.timeout < float("inf") else None,
            retries=args.retries,
            checkpoint=checkpoint,
            name=args.name or output.stem,
            id_from=args.id_from,
            keep_text=not args.no_text,
            progress=not args.quiet,
            keep_going=args.keep_going,
        )
    except RetrievalError as exc:
        failed_run = getattr(exc, "run", None)
        if failed_run is None:
            raise
        print(runner.summarize(failed_run))
        print(f"rankbridge: {exc}\nrankbridge: nothing written; progress is in {checkpoint}", file=sys.stderr)
        return EXIT_INCOMPLETE
    summary = runner.summarize(run)
    print(summary)
    if run.config.get("interrupted"):
        print(
            f"rankbridge: interrupted; {summary.unfinished} queries not run. Progress is in {checkpoint}: "
            "run the same command with --resume to finish",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    write_run(run, output)  # by suffix: .jsonl keeps texts, latencies and errors; .parquet; else TREC
    with contextlib.suppress(OSError):
        checkpoint.unlink()
    print(f"wrote {output} ({len(run.query_ids())} queries, k={run.config['k']})")
    if run.errors:
        if output.suffix.lower() != ".jsonl":
            print(
                f"rankbridge: {len(run.errors)} failed queries are not in the TREC file (they score 0 when evaluated); "
                "write .jsonl to keep their errors",
                file=sys.stderr,
            )
        return EXIT_INCOMPLETE
    return 0


def _timeout(text: str) -> float:
    """``--timeout``: seconds >= 0 (0 or ``inf`` for none); a negative number or NaN is a usage error."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds >= 0 (0 for none), found {text[:40]!r}"
        ) from None
    if not seconds >= 0:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0 (0 for none), found {text[:40]!r}")
    return seconds


def add_cli(subparsers: Any) -> None:
    """Register ``rankbridge run`` on an ``argparse`` subparsers object.

    Examples
    --------
    >>> from rankbridge.cli import build_parser
    >>> args = build_parser().parse_args(["run", "app:retriever", "--queries", "q.jsonl", "-k", "5", "-o", "run.jsonl"])
    >>> args.retriever, args.k, args.output, args.concurrency
    ('app:retriever', 5, 'run.jsonl', 8)
    """
    p = add_command(
        subparsers,
        "run",
        _cmd_run,
        help="run your retriever (module:attr) over a set of queries into a run file",
        description="Import a retriever (LlamaIndex, LangChain, a function f(query, k), or a Retriever) and "
        "retrieve the top k for every query, concurrently, with timeouts and retries.",
        epilog="RETRIEVER: module:attr | path/file.py:attr | module:factory()  (the current directory is importable;\n"
        "  a class or a zero-argument function is called to build the retriever)\n"
        "QUERIES: a BEIR folder, a queries.jsonl (_id/id + text) or a TSV of id<TAB>text\n"
        "OUTPUT: .jsonl (hits with texts, latencies, errors), .parquet (one row per hit) or any other name for\n"
        "  a TREC run file (.json, .csv and other formats are refused)\n"
        "exit codes: 0 ok, 2 bad input, 3 some queries failed (written), or the first ones all failed alike\n"
        "  (stopped, nothing written; --keep-going runs every query), 130 interrupted (use --resume)\n"
        "examples:\n"
        "  rankbridge run app:retriever --queries data/scifact -k 10 -o bm25.jsonl\n"
        "  rankbridge run app.py:build_index() --queries queries.tsv -k 20 -o run.txt --concurrency 4\n"
        "  rankbridge run app:retriever --queries queries.jsonl -o run.jsonl --resume --id-from ref_doc_id",
    )
    p.add_argument("retriever", help=SPEC_HELP)
    p.add_argument("--queries", required=True, help="BEIR folder, queries.jsonl or queries.tsv")
    p.add_argument("-o", "--output", required=True, help="run file to write (.jsonl, .parquet or TREC)")
    p.add_argument("-k", type=int, default=None, help="hits per query (default: the retriever's own setting, else 10)")
    p.add_argument("--concurrency", type=int, default=8, help="queries in flight at once (default: 8)")
    p.add_argument("--timeout", type=_timeout, default=60.0, help="seconds per attempt, 0 for none (default: 60)")
    p.add_argument("--retries", type=int, default=2, help="further attempts after an error or timeout (default: 2)")
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="run every query even when the first ones all fail with the same error (they score 0)",
    )
    p.add_argument("--resume", action="store_true", help="continue an interrupted (or extend a finished .jsonl) run")
    p.add_argument("--split", default="test", help="BEIR qrels split whose queries to run (default: test)")
    p.add_argument("--name", help="the run's name (default: the output file's stem)")
    p.add_argument(
        "--id-from", help="where doc ids come from: id, ref_doc_id, metadata:KEY, content_hash (default: id)"
    )
    p.add_argument("--no-text", action="store_true", help="do not keep hit texts in a .jsonl run")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
