"""``rankbridge judge``: grade the pooled top k of run files 0-3 with your LLM (cached).

Supplying an LLM on the command line
------------------------------------
``--llm MODULE:ATTR`` names an object in an importable module (or a ``path/to/file.py``): a LangChain chat
model, a LlamaIndex LLM, or a callable ``f(prompt) -> str``, used as is. ``--llm MODULE:FACTORY()`` (note
the parentheses) calls ``FACTORY`` with no arguments and uses what it returns -- handy when building the
model needs keys from the environment; a class or a function that takes no argument is called so even
without the parentheses (:mod:`rankbridge.cli._loader`, the same for every ``module:attr`` option). The
current directory is importable. Example ``my_llm.py``::

    from langchain_openai import ChatOpenAI
    judge = ChatOpenAI(model="gpt-4o-mini", temperature=0)

    def make():                      # for --llm my_llm:make()
        return ChatOpenAI(model="gpt-4o-mini", temperature=0)

then ``rankbridge judge --llm my_llm:judge --data ./my_beir --run bm25.txt --run dense.txt -o judged.qrels``.

Exit codes: 0 done; 2 bad input or usage; 3 incomplete (the budget or the error limit stopped the batch,
or some items failed) -- what was finished is written and cached, so running again continues.

Examples
--------
>>> from rankbridge.cli import build_parser
>>> args = build_parser().parse_args(["judge", "--llm", "m:f", "--data", "beir", "--run", "a.txt", "--run", "b.txt"])
>>> args.run, args.k, args.concurrency
(['a.txt', 'b.txt'], 10, 4)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rankbridge.cli._common import EXIT_INCOMPLETE, add_command, add_llm_options, call_policy, load_llm
from rankbridge.errors import InputError, ModelIdRequired
from rankbridge.io import load_qrels, load_run, read_beir_corpus, read_beir_queries, write_qrels
from rankbridge.io._atomic import atomic_write

__all__ = ["add_cli"]


def _label_map(text: str | None) -> dict[int, int] | None:
    if not text:
        return None
    out: dict[int, int] = {}
    for part in text.split(","):
        a, sep, b = part.partition(":")
        try:
            out[int(a)] = int(b)
        except ValueError:
            raise InputError(f"--human-map: expected FROM:TO pairs like '4:3,3:2,2:1,1:0', got {text!r}") from None
        if not sep:
            raise InputError(f"--human-map: expected FROM:TO pairs like '4:3,3:2,2:1,1:0', got {text!r}")
    return out


def _inputs(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, dict[str, Any]] | None]:
    queries_path = args.queries or (Path(args.data) / "queries.jsonl" if args.data else None)
    corpus_path = args.corpus or (Path(args.data) / "corpus.jsonl" if args.data else None)
    queries = {q.id: q.text for q in read_beir_queries(queries_path).values()} if queries_path else {}
    corpus = read_beir_corpus(corpus_path) if corpus_path else None
    return queries, corpus


def _cmd_judge(args: argparse.Namespace) -> int:
    # lazy: the judge package (and asyncio) loads only for `rankbridge judge`, so --help stays fast
    from rankbridge.judge.grading import Judge, agreement, merge_qrels

    if not (args.data or args.queries):
        raise InputError("rankbridge judge: give --data BEIR_FOLDER, or --queries (and --corpus)")
    queries, corpus = _inputs(args)
    runs = [load_run(path) for path in args.run]
    human = load_qrels(args.human) if args.human else None
    if human is None and args.agreement:
        if not args.data:
            raise InputError("rankbridge judge: --agreement reads the qrels of --data; give --data or --human")
        human = load_qrels(Path(args.data) / "qrels" / f"{args.split}.tsv")
    human_map = _label_map(args.human_map)
    cache = None if args.no_cache else args.cache
    llm = load_llm(args)
    try:  # --no-cache: grades are not kept, so a one-off id is fine
        judge = Judge(llm, model_id=args.model_id, cache=cache, policy=call_policy(args), anonymous=args.no_cache)
    except ModelIdRequired as exc:
        what = str(exc).removeprefix("model_id: ").split(" does not say")[0]
        raise InputError(
            f"--model-id is required: --llm {args.llm} is {what}, which does not say which model it is, and the "
            "judge cache keys grades by model. Give --model-id NAME (the model and its settings, e.g. "
            "gpt-4o-mini@temperature=0), or --no-cache"
        ) from None
    with judge:
        result = judge.judge_runs(runs, queries, corpus, k=args.k, skip=human if args.skip_human else None)
    print(result.report)
    if args.output:
        write_qrels(result.qrels, args.output)
        print(f"judged qrels ({result.qrels.name}) written to {args.output}")
    if args.records:
        with atomic_write(args.records) as fh:
            for rec in result.records():
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        print(f"grades with reasons written to {args.records}")
    if human is not None:
        if not args.skip_human:
            print(agreement(human, result, human_map=human_map))
        if args.merged:
            merged = merge_qrels(human, result, human_map=human_map)
            write_qrels(merged.qrels, args.merged)
            counts = merged.counts()
            print(
                f"merged qrels ({counts.get('human', 0)} human, {counts.get('llm', 0)} judged labels) "
                f"written to {args.merged}"
            )
    return 0 if result.report.complete else EXIT_INCOMPLETE


def add_cli(subparsers: Any) -> None:
    """Register ``rankbridge judge`` on an ``argparse`` subparsers object."""
    j = add_command(
        subparsers,
        "judge",
        _cmd_judge,
        help="grade the pooled top-k of run files 0-3 with an LLM (cached)",
        description="Judge each (query, document) pair of the pooled top k of the runs once, with your LLM.\n"
        "Grades are cached in SQLite: running again pays only for pairs not yet judged.",
        epilog="--llm MODULE:ATTR names a LangChain chat model, a LlamaIndex LLM or a callable f(prompt) -> str\n"
        "in an importable module or a .py file; MODULE:FACTORY() calls FACTORY() to build it, and so does\n"
        "naming a class or a zero-argument function without the parentheses.\n"
        "examples:\n"
        "  rankbridge judge --llm my_llm:judge --data ./beir --run bm25.txt --run dense.txt -o judged.qrels\n"
        "  rankbridge judge --llm my_llm:make() --queries q.jsonl --corpus c.jsonl --run run.txt --max-calls 500\n"
        "  rankbridge judge --llm my_llm:judge --data ./beir --run bm25.txt --agreement --human-map 4:3,3:2,2:1,1:0\n"
        "exit codes: 0 done, 2 bad input, 3 incomplete (budget reached or failures; run again to continue)",
    )
    add_llm_options(j)
    src = j.add_argument_group("inputs")
    src.add_argument("--data", metavar="DIR", help="a BEIR folder (queries.jsonl, corpus.jsonl, qrels/)")
    src.add_argument("--split", default="test", help="qrels split of --data used by --agreement (default test)")
    src.add_argument("--queries", help="queries.jsonl (BEIR: _id, text); overrides --data")
    src.add_argument("--corpus", help="corpus.jsonl (BEIR: _id, title, text); overrides --data")
    src.add_argument("--run", action="append", required=True, help="run file (TREC or .jsonl), repeatable")
    src.add_argument("-k", type=int, default=10, help="judge the top k of every run (default 10)")
    out = j.add_argument_group("outputs")
    out.add_argument("-o", "--output", help="write the judged labels as TREC qrels")
    out.add_argument("--records", help="write every grade with its reason, model and prompt as JSON Lines")
    out.add_argument("--cache", default=".rankbridge/judge.sqlite", help="SQLite cache (default %(default)s)")
    out.add_argument("--no-cache", action="store_true", help="keep grades in memory only")
    hum = j.add_argument_group("human labels")
    hum.add_argument("--human", help="human qrels: print agreement (Cohen's kappa, confusion matrix)")
    hum.add_argument("--agreement", action="store_true", help="use the qrels of --data/--split as --human")
    hum.add_argument("--human-map", metavar="FROM:TO,...", help="map human labels onto 0-3 first")
    hum.add_argument("--skip-human", action="store_true", help="do not judge pairs the human qrels label")
    hum.add_argument("--merged", help="write human + judged qrels (human wins) as TREC qrels")
