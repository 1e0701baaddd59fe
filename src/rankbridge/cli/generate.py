"""``rankbridge generate``: a golden set from your corpus, one LLM-written query per sampled document.

``--llm`` is named as for ``rankbridge judge`` (see :mod:`rankbridge.cli.judge`).

Exit codes: 0 done; 2 bad input or usage; 3 incomplete (the budget was reached or some items failed).

Examples
--------
>>> from rankbridge.cli import build_parser
>>> args = build_parser().parse_args(["generate", "--llm", "m:f", "--corpus", "c.jsonl", "-n", "5", "--out", "gen"])
>>> args.n, args.style, args.seed
(5, None, 0)
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rankbridge.cli._common import EXIT_INCOMPLETE, add_command, add_llm_options, call_policy, load_llm
from rankbridge.errors import InputError
from rankbridge.io import read_beir_corpus, write_beir
from rankbridge.types import GoldenSet

__all__ = ["add_cli"]


def _cmd_generate(args: argparse.Namespace) -> int:
    # lazy: the judge package (and asyncio) loads only for `rankbridge generate`, so --help stays fast
    from rankbridge.judge.generate import generate_golden_set

    corpus_path = Path(args.corpus) if args.corpus else (Path(args.data) / "corpus.jsonl" if args.data else None)
    if corpus_path is None:
        raise InputError("rankbridge generate: give --corpus corpus.jsonl or --data BEIR_FOLDER")
    corpus = read_beir_corpus(corpus_path)
    llm = load_llm(args)
    result = generate_golden_set(
        corpus,
        llm,
        args.n,
        tuple(args.style or ("natural", "keyword")),
        seed=args.seed,
        model_id=args.model_id,
        label=args.label,
        id_prefix=args.id_prefix,
        name=Path(args.out).name,
        policy=call_policy(args),
    )
    # the folder is built aside and moved into place: a failure (a full disk, an interrupt) leaves no
    # half-written folder, and an earlier one stays as it was
    golden = result.golden
    golden = GoldenSet(golden.queries, golden.qrels, corpus=None if args.no_corpus else corpus, name=golden.name)
    write_beir(golden, args.out, overwrite=True)
    print(result.report)
    files = "queries.jsonl, qrels/test.tsv" + ("" if args.no_corpus else ", corpus.jsonl")
    print(f"golden set written to {args.out} (BEIR layout: {files})")
    return 0 if result.report.complete else EXIT_INCOMPLETE


def add_cli(subparsers: Any) -> None:
    """Register ``rankbridge generate`` on an ``argparse`` subparsers object."""
    g = add_command(
        subparsers,
        "generate",
        _cmd_generate,
        help="generate a golden set: one LLM-written query per sampled document",
        description="Sample documents, ask your LLM for one query each (styles in turn), and write a BEIR\n"
        "folder whose qrels mark each query's source document relevant.",
        epilog="examples:\n"
        "  rankbridge generate --llm my_llm:gen --data ./beir -n 100 --out ./golden\n"
        "  rankbridge generate --llm my_llm:gen --corpus c.jsonl -n 50 --style keyword --seed 7 --out ./kw\n"
        "exit codes: 0 done, 2 bad input, 3 incomplete (budget reached or failures)",
    )
    add_llm_options(g)
    g.add_argument("--data", metavar="DIR", help="a BEIR folder to read corpus.jsonl from")
    g.add_argument("--corpus", help="corpus.jsonl (BEIR: _id, title, text)")
    g.add_argument("-n", type=int, required=True, help="number of queries (documents sampled)")
    g.add_argument("--style", action="append", help="query style, repeatable (default: natural and keyword)")
    g.add_argument("--seed", type=int, default=0, help="seed of the document sample (default 0)")
    g.add_argument("--label", type=int, default=3, help="label of the source document (default 3)")
    g.add_argument("--id-prefix", default="gen", help="query ids are PREFIX-i (default gen)")
    g.add_argument("--out", required=True, help="output folder (BEIR layout)")
    g.add_argument("--no-corpus", action="store_true", help="do not copy corpus.jsonl into --out")
