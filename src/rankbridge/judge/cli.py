"""``rankbridge judge`` and ``rankbridge generate``.

Supplying an LLM on the command line
------------------------------------
``--llm MODULE:ATTR`` names an object in an importable module (or a ``path/to/file.py``): a LangChain chat
model, a LlamaIndex LLM, or a callable ``f(prompt) -> str``, used as is. ``--llm MODULE:FACTORY()`` (note
the parentheses) calls ``FACTORY`` with no arguments and uses what it returns -- handy when building the
model needs keys from the environment. The current directory is importable. Example ``my_llm.py``::

    from langchain_openai import ChatOpenAI
    judge = ChatOpenAI(model="gpt-4o-mini", temperature=0)

    def make():                      # for --llm my_llm:make()
        return ChatOpenAI(model="gpt-4o-mini", temperature=0)

then ``rankbridge judge --llm my_llm:judge --data ./my_beir --run bm25.txt --run dense.txt -o judged.qrels``.

Exit codes: 0 done; 2 bad input or usage; 3 incomplete (the budget or the error limit stopped the batch,
or some items failed) -- what was finished is written and cached, so running again continues.

Examples
--------
>>> import argparse
>>> from rankbridge.judge.cli import add_cli
>>> parser = argparse.ArgumentParser(prog="rankbridge")
>>> add_cli(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["generate", "--llm", "m:f", "--corpus", "c.jsonl", "-n", "5", "--out", "gen"])
>>> args.n, args.style, args.seed
(5, None, 0)
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from rankbridge.errors import InputError

__all__ = ["EXIT_INCOMPLETE", "add_cli", "load_llm"]

#: Exit code when a batch stopped early or some items failed.
EXIT_INCOMPLETE = 3


def load_llm(spec: str) -> Any:
    """The object named by ``MODULE:ATTR`` / ``path/file.py:ATTR`` (``ATTR()`` calls a factory).

    Examples
    --------
    >>> load_llm("json:dumps")("hi")
    '"hi"'
    >>> load_llm("json")
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: --llm: expected MODULE:ATTR (or path/to/file.py:ATTR), got 'json'
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"--llm: expected MODULE:ATTR (or path/to/file.py:ATTR), got {spec!r}")
    factory = attr.endswith("()")
    attr = attr[:-2] if factory else attr
    try:
        if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
            path = Path(module_name)
            if not path.is_file():
                raise InputError(f"--llm: file not found: {module_name}")
            mod_spec = importlib.util.spec_from_file_location(f"_rankbridge_llm_{path.stem}", path)
            if mod_spec is None or mod_spec.loader is None:
                raise InputError(f"--llm: cannot load {module_name}")
            module: Any = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(module)
        else:
            if "" not in sys.path and str(Path.cwd()) not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(module_name)
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"--llm: importing {module_name!r} failed: {type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"--llm: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if factory:
        try:
            obj = obj()
        except Exception as exc:
            raise InputError(f"--llm: calling {attr}() failed: {type(exc).__name__}: {exc}") from exc
    return obj


def _add_llm_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("LLM and budget")
    g.add_argument("--llm", required=True, metavar="MODULE:ATTR", help="the LLM object (see the module docs)")
    g.add_argument(
        "--model-id",
        help="the model and its settings, naming it in the cache and provenance (default: derived from a "
        "LangChain/LlamaIndex model's name and parameters; required for a plain callable unless --no-cache)",
    )
    g.add_argument("--concurrency", type=int, default=4, help="calls in flight (default 4)")
    g.add_argument("--rate-limit", type=float, help="at most this many calls per second")
    g.add_argument("--retries", type=int, default=2, help="retries after an error (default 2)")
    g.add_argument("--timeout", type=float, help="seconds per call")
    g.add_argument("--max-calls", type=int, help="budget: stop starting calls after this many")
    g.add_argument("--max-tokens", type=int, help="budget: stop starting calls after this many tokens")


def _policy(args: argparse.Namespace) -> Any:
    from rankbridge.judge.llm import CallPolicy

    return CallPolicy(
        concurrency=args.concurrency,
        rate_limit=args.rate_limit,
        retries=args.retries,
        timeout=args.timeout,
        max_calls=args.max_calls,
        max_tokens=args.max_tokens,
    )


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
    from rankbridge.io import read_beir_corpus, read_beir_queries

    queries_path = args.queries or (Path(args.data) / "queries.jsonl" if args.data else None)
    corpus_path = args.corpus or (Path(args.data) / "corpus.jsonl" if args.data else None)
    queries = {q.id: q.text for q in read_beir_queries(queries_path).values()} if queries_path else {}
    corpus = read_beir_corpus(corpus_path) if corpus_path else None
    return queries, corpus


def _cmd_judge(args: argparse.Namespace) -> int:
    from rankbridge.io import load_qrels, load_run, write_qrels
    from rankbridge.io._atomic import atomic_write
    from rankbridge.judge.grading import Judge, agreement, merge_qrels
    from rankbridge.judge.llm import ModelIdRequired

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
    llm = load_llm(args.llm)
    try:  # --no-cache: grades are not kept, so a one-off id is fine
        judge = Judge(llm, model_id=args.model_id, cache=cache, policy=_policy(args), anonymous=args.no_cache)
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


def _cmd_generate(args: argparse.Namespace) -> int:
    from rankbridge import GoldenSet
    from rankbridge.io import read_beir_corpus, write_beir
    from rankbridge.judge.generate import generate_golden_set

    corpus_path = Path(args.corpus) if args.corpus else (Path(args.data) / "corpus.jsonl" if args.data else None)
    if corpus_path is None:
        raise InputError("rankbridge generate: give --corpus corpus.jsonl or --data BEIR_FOLDER")
    corpus = read_beir_corpus(corpus_path)
    llm = load_llm(args.llm)
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
        policy=_policy(args),
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
    """Register ``rankbridge judge`` and ``rankbridge generate`` on an argparse subparsers object."""
    j = subparsers.add_parser(
        "judge",
        help="grade the pooled top-k of run files 0-3 with an LLM (cached)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Judge each (query, document) pair of the pooled top k of the runs once, with your LLM.\n"
        "Grades are cached in SQLite: running again pays only for pairs not yet judged.",
        epilog="--llm MODULE:ATTR names a LangChain chat model, a LlamaIndex LLM or a callable f(prompt) -> str\n"
        "in an importable module or a .py file; MODULE:FACTORY() calls FACTORY() to build it.\n"
        "examples:\n"
        "  rankbridge judge --llm my_llm:judge --data ./beir --run bm25.txt --run dense.txt -o judged.qrels\n"
        "  rankbridge judge --llm my_llm:make() --queries q.jsonl --corpus c.jsonl --run run.txt --max-calls 500\n"
        "  rankbridge judge --llm my_llm:judge --data ./beir --run bm25.txt --agreement --human-map 4:3,3:2,2:1,1:0\n"
        "exit codes: 0 done, 2 bad input, 3 incomplete (budget reached or failures; run again to continue)",
    )
    _add_llm_options(j)
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
    j.set_defaults(func=_cmd_judge)

    g = subparsers.add_parser(
        "generate",
        help="generate a golden set: one LLM-written query per sampled document",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Sample documents, ask your LLM for one query each (styles in turn), and write a BEIR\n"
        "folder whose qrels mark each query's source document relevant.",
        epilog="examples:\n"
        "  rankbridge generate --llm my_llm:gen --data ./beir -n 100 --out ./golden\n"
        "  rankbridge generate --llm my_llm:gen --corpus c.jsonl -n 50 --style keyword --seed 7 --out ./kw\n"
        "exit codes: 0 done, 2 bad input, 3 incomplete (budget reached or failures)",
    )
    _add_llm_options(g)
    g.add_argument("--data", metavar="DIR", help="a BEIR folder to read corpus.jsonl from")
    g.add_argument("--corpus", help="corpus.jsonl (BEIR: _id, title, text)")
    g.add_argument("-n", type=int, required=True, help="number of queries (documents sampled)")
    g.add_argument("--style", action="append", help="query style, repeatable (default: natural and keyword)")
    g.add_argument("--seed", type=int, default=0, help="seed of the document sample (default 0)")
    g.add_argument("--label", type=int, default=3, help="label of the source document (default 3)")
    g.add_argument("--id-prefix", default="gen", help="query ids are PREFIX-i (default gen)")
    g.add_argument("--out", required=True, help="output folder (BEIR layout)")
    g.add_argument("--no-corpus", action="store_true", help="do not copy corpus.jsonl into --out")
    g.set_defaults(func=_cmd_generate)
