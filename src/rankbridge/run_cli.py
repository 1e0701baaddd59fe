"""``rankbridge run``: run your own retriever, named ``module:attr``, over a set of queries into a run file.

The retriever is whatever :func:`rankbridge.adapt` accepts (a LlamaIndex retriever / index / query
engine, a LangChain retriever / vector store, a function ``f(query, k)``, or an object with
``retrieve``/``aretrieve``), named by where it lives:

``module:attr``
    ``attr`` (dotted paths work) of an importable module; the current directory is importable.
``path/to/file.py:attr``
    the same, from a file.
``module:factory()``
    call ``factory`` with no arguments and use what it returns. A zero-argument function or a class
    named without ``()`` is called too (a factory); a function that takes arguments is the retriever.

Queries come from a BEIR folder (the queries judged in ``--split``; every query when there are no
qrels), a ``queries.jsonl`` (``_id``/``id``/``query_id`` and ``text``/``query``), or a TSV of
``id<TAB>text`` lines (a header line is skipped). The run is written atomically when every query has
finished: ``.jsonl`` keeps hit texts, latencies and errors; any other name is a TREC run file.
Progress is kept in ``OUTPUT.partial.jsonl`` as queries finish; ``--resume`` continues from it (or from an
existing ``.jsonl`` output), so an interrupted or extended run redoes only what is missing or failed.

Exit codes: 0 every query succeeded; 2 bad input; 3 the run was written but some queries failed;
130 interrupted (progress kept for ``--resume``).

Examples
--------
>>> import argparse
>>> parser = argparse.ArgumentParser(prog="rankbridge")
>>> add_cli(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["run", "app:retriever", "--queries", "queries.jsonl", "-k", "5", "-o", "run.jsonl"])
>>> args.retriever, args.k, args.output, args.concurrency
('app:retriever', 5, 'run.jsonl', 8)
>>> split_spec("pkg.app:make_retriever()")
('pkg.app', 'make_retriever', True)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from rankbridge.errors import InputError, ParseError
from rankbridge.types import Query, Run

__all__ = ["add_cli", "load_queries", "load_retriever", "split_spec"]

_ID_KEYS = ("_id", "id", "query_id", "qid")
_TEXT_KEYS = ("text", "query", "question")
_HEADER_IDS = {"_id", "id", "qid", "query-id", "query_id"}

#: Exit code when the run was written but some queries failed (as for every command: 3 = incomplete).
EXIT_INCOMPLETE = 3
EXIT_INTERRUPTED = 130


# -- the retriever -------------------------------------------------------------------------------------
def split_spec(spec: str) -> tuple[str, str, bool]:
    """Split ``"module:attr"`` / ``"file.py:attr"`` / ``"module:factory()"`` into (where, attr, call).

    Examples
    --------
    >>> split_spec("app:retriever")
    ('app', 'retriever', False)
    >>> split_spec("src/app.py:Search.build()")
    ('src/app.py', 'Search.build', True)
    >>> split_spec("app")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: retriever: expected 'module:attr', ... or 'module:factory()', got 'app'
    """
    where, sep, attr = spec.strip().rpartition(":")
    call = attr.endswith("()")
    if call:
        attr = attr[:-2]
    if not sep or not where or not attr or not all(part.isidentifier() for part in attr.split(".")):
        raise InputError(f"retriever: expected 'module:attr', 'path/file.py:attr' or 'module:factory()', got {spec!r}")
    return where, attr, call


def _import(where: str) -> ModuleType:
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    is_file = where.endswith(".py") or os.sep in where or "/" in where
    try:
        if not is_file:
            return importlib.import_module(where)
        path = Path(where).resolve()
        if not path.is_file():
            raise InputError(f"retriever: no such file {where!r}")
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)  # so the file's own sibling imports work
        name = f"rankbridge_user_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise InputError(f"retriever: cannot import {where!r} as Python")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    except InputError:
        raise
    except ImportError as exc:
        raise InputError(f"retriever: cannot import {where!r}: {exc}") from exc
    except Exception as exc:
        raise InputError(f"retriever: importing {where!r} raised {type(exc).__name__}: {exc}") from exc


def _is_factory(obj: Any) -> bool:
    """A class, or a function whose every parameter has a default (a retriever function takes a query)."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return False
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params) and not any(
        p.kind == p.VAR_POSITIONAL for p in params
    )


def load_retriever(spec: str) -> Any:
    """Import the object ``spec`` names (see the module docstring); call it when it is a factory.

    Raises
    ------
    InputError
        The module or attribute cannot be found, importing raised, or the factory raised.

    Examples
    --------
    >>> load_retriever("os.path:join") is __import__("os").path.join
    True
    >>> load_retriever("os.path:nope")
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: retriever: 'os.path' has no attribute 'nope'
    """
    where, attr, call = split_spec(spec)
    obj: Any = _import(where)
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"retriever: {where!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if call or _is_factory(obj):
        if not callable(obj):
            raise InputError(f"retriever: {spec!r} asks to call {attr!r}, which is a {type(obj).__name__}")
        try:
            obj = obj()
        except Exception as exc:
            raise InputError(f"retriever: {where}:{attr}() raised {type(exc).__name__}: {exc}") from exc
    return obj


# -- the queries ---------------------------------------------------------------------------------------
def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in obj:
            return obj[key]
    return None


def _queries_jsonl(path: Path) -> list[Query]:
    from rankbridge.io._open import clip
    from rankbridge.io.jsonl import iter_jsonl

    out: list[Query] = []
    for lineno, obj in iter_jsonl(path):
        qid, text = _first(obj, _ID_KEYS), _first(obj, _TEXT_KEYS)
        if qid is None or not isinstance(text, str):
            raise ParseError(
                f"expected an id ({'/'.join(_ID_KEYS)}) and a text ({'/'.join(_TEXT_KEYS)})",
                source=str(path),
                line=lineno,
            )
        if not ((type(qid) is str and qid.strip()) or type(qid) is int):
            raise ParseError(
                f"expected a query id (a non-empty string), found {clip(qid)}", source=str(path), line=lineno
            )
        raw = obj.get("metadata")
        meta: dict[str, Any] = raw if isinstance(raw, dict) else {}
        category = meta.get("category")
        out.append(Query(str(qid), text, category=None if category is None else str(category), metadata=meta))
    return out


def _queries_tsv(path: Path) -> list[Query]:
    from rankbridge.io._open import ENCODING, clip, decode_error

    out: list[Query] = []
    try:
        fh = open(path, encoding=ENCODING, newline=None)
    except OSError as exc:
        raise ParseError(f"cannot open file: {exc.strerror}", source=str(path)) from None
    with fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                fields = line.rstrip("\r\n").split("\t")
                if lineno == 1 and fields[0].strip().lower() in _HEADER_IDS:
                    continue
                if len(fields) < 2 or not fields[0].strip():
                    raise ParseError(
                        f"expected 'id<TAB>text', found {clip(line.rstrip())}", source=str(path), line=lineno
                    )
                out.append(Query(fields[0].strip(), "\t".join(fields[1:]).strip()))
        except UnicodeDecodeError as exc:
            raise decode_error(path, exc) from None
    return out


def load_queries(path: str | os.PathLike[str], *, split: str = "test") -> list[Query]:
    """Read queries from a BEIR folder, a ``.jsonl`` file, or a TSV file (see the module docstring).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "queries.tsv"
    >>> _ = p.write_text("qid\\ttext\\nq1\\twhat causes scurvy?\\n")
    >>> [(q.id, q.text) for q in load_queries(p)]
    [('q1', 'what causes scurvy?')]
    """
    root = Path(path)
    if root.is_dir():
        if (root / "qrels" / f"{split}.tsv").exists():
            from rankbridge.io.beir import read_beir

            queries = read_beir(root, split=split, load_corpus=False).queries
        elif (root / "queries.jsonl").exists():
            queries = _queries_jsonl(root / "queries.jsonl")
        else:
            raise InputError(f"--queries {path}: expected a BEIR folder with queries.jsonl")
    elif not root.exists():
        raise InputError(f"--queries {path}: no such file or folder")
    elif root.suffix.lower() in (".jsonl", ".json"):
        queries = _queries_jsonl(root)
    else:
        queries = _queries_tsv(root)
    if not queries:
        raise ParseError("no queries found", source=str(path))
    seen: set[str] = set()
    for q in queries:
        if q.id in seen:
            raise ParseError(f"query id {q.id!r} appears twice", source=str(path))
        seen.add(q.id)
    return queries


# -- the command -----------------------------------------------------------------------------------------
def _write(run: Run, output: Path) -> None:
    if output.suffix.lower() == ".jsonl":
        from rankbridge.io.jsonl import write_run_jsonl

        write_run_jsonl(run, output)
    else:
        from rankbridge.io.trec import write_run

        write_run(run, output)


def _cmd_run(args: argparse.Namespace) -> int:
    from rankbridge.errors import RetrievalError
    from rankbridge.runner import run_retriever, summarize

    output = Path(args.output)
    checkpoint = output.with_name(output.name + ".partial.jsonl")
    queries = load_queries(args.queries, split=args.split)
    retriever = load_retriever(args.retriever)
    if args.resume:
        if not checkpoint.exists() and output.suffix.lower() == ".jsonl" and output.is_file():
            shutil.copyfile(output, checkpoint)  # extend or repair a finished run
    elif checkpoint.exists():
        checkpoint.unlink()
    try:
        run = run_retriever(
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
        print(summarize(failed_run))
        print(f"rankbridge: {exc}\nrankbridge: nothing written; progress is in {checkpoint}", file=sys.stderr)
        return EXIT_INCOMPLETE
    summary = summarize(run)
    print(summary)
    if run.config.get("interrupted"):
        print(
            f"rankbridge: interrupted; {summary.unfinished} queries not run. Progress is in {checkpoint}: "
            "run the same command with --resume to finish",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    _write(run, output)
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
    """Register ``rankbridge run`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "run",
        help="run your retriever (module:attr) over a set of queries into a run file",
        description="Import a retriever (LlamaIndex, LangChain, a function f(query, k), or a Retriever) and "
        "retrieve the top k for every query, concurrently, with timeouts and retries.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="RETRIEVER: module:attr | path/file.py:attr | module:factory()  (the current directory is importable;\n"
        "  a zero-argument function or class is called to build the retriever)\n"
        "QUERIES: a BEIR folder, a queries.jsonl (_id/id + text) or a TSV of id<TAB>text\n"
        "OUTPUT: .jsonl (hits with texts, latencies, errors) or any other name for a TREC run file\n"
        "exit codes: 0 ok, 2 bad input, 3 some queries failed (written), or the first ones all failed alike\n"
        "  (stopped, nothing written; --keep-going runs every query), 130 interrupted (use --resume)\n"
        "examples:\n"
        "  rankbridge run app:retriever --queries data/scifact -k 10 -o bm25.jsonl\n"
        "  rankbridge run app.py:build_index() --queries queries.tsv -k 20 -o run.txt --concurrency 4\n"
        "  rankbridge run app:retriever --queries queries.jsonl -o run.jsonl --resume --id-from ref_doc_id",
    )
    p.add_argument("retriever", help="module:attr, path/file.py:attr or module:factory()")
    p.add_argument("--queries", required=True, help="BEIR folder, queries.jsonl or queries.tsv")
    p.add_argument("-o", "--output", required=True, help="run file to write (.jsonl or TREC)")
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
    p.set_defaults(func=_cmd_run)
