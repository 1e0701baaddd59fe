"""What the subcommands share, so every command reads alike: how a command is registered, exit codes,
one-line messages, the run and paired-test options, reading judgments and run files, and the LLM options of
``judge`` and ``generate``.

Exit codes (every command): 0 success; 1 a quality gate failed (``rankbridge gate``); 2 bad input or
usage (the message says what and where); 3 incomplete (a budget was reached, or some queries or items
failed); 70 an unexpected error (a bug; ``RANKBRIDGE_DEBUG=1`` shows the traceback); 75 the history file
is locked by another process (try again); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rankbridge.analysis import EXIT_FAILED
from rankbridge.cli._loader import load_object
from rankbridge.io import load_qrels, load_run, read_golden
from rankbridge.io._open import open_text
from rankbridge.metrics.measures import Measure, parse_measures
from rankbridge.store import EXIT_LOCKED
from rankbridge.types import GoldenSet, Qrels, Run

if TYPE_CHECKING:
    from rankbridge.judge.llm import CallPolicy

__all__ = [
    "DEFAULT_COMPARE_METRICS",
    "EXIT_BUG",
    "EXIT_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_LOCKED",
    "EXIT_OK",
    "EXIT_USAGE",
    "JUDGMENTS_HELP",
    "RunInputs",
    "add_command",
    "add_llm_options",
    "add_run_arguments",
    "add_test_arguments",
    "call_policy",
    "error",
    "load_judgments",
    "load_llm",
    "options_of",
    "paired_test_options",
    "read_run_inputs",
    "split_metric_args",
    "unique_run_names",
    "warn",
]

EXIT_OK = 0
# EXIT_FAILED (1): ``rankbridge gate`` found a significant drop; defined beside gate().
EXIT_USAGE = 2
#: A budget was reached, or some queries or items failed (what finished is written).
EXIT_INCOMPLETE = 3
EXIT_BUG = 70
# EXIT_LOCKED (75): the history file is locked by another process; defined beside RunStore.
EXIT_INTERRUPTED = 130

#: The metrics ``compare``, ``report`` and ``mlflow log`` show when no ``-m`` is given.
DEFAULT_COMPARE_METRICS = ["ndcg@10", "mrr@10", "recall@10", "hit_rate@5"]


def add_command(
    subparsers: Any, name: str, func: Callable[[argparse.Namespace], int], **options: Any
) -> argparse.ArgumentParser:
    """Register subcommand ``name``, run as ``func(args)`` (its exit code) by :func:`rankbridge.cli.main`.

    ``options`` go to ``add_parser`` (``help``, ``description``, ``epilog``, ``parents``); a description or
    epilog prints as written, its line breaks and indented examples kept.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> p = add_command(parser.add_subparsers(), "hello", lambda args: EXIT_OK, help="say hello")
    >>> args = parser.parse_args(["hello"])
    >>> args.func(args)
    0
    """
    p: argparse.ArgumentParser = subparsers.add_parser(
        name, formatter_class=argparse.RawDescriptionHelpFormatter, **options
    )
    p.set_defaults(func=func)
    return p


def options_of(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """The options ``names`` of ``args`` as keyword arguments, for options named as the keywords they feed.

    Examples
    --------
    >>> options_of(argparse.Namespace(seed=7, k=5, out="x"), ("k", "seed"))
    {'k': 5, 'seed': 7}
    """
    return {name: getattr(args, name) for name in names}


def warn(message: str) -> None:
    """A warning as one ``rankbridge: warning:`` line on stderr."""
    print(f"rankbridge: warning: {message}", file=sys.stderr)


def error(message: str) -> None:
    """An error as one ``rankbridge: error:`` line on stderr."""
    print(f"rankbridge: error: {message}", file=sys.stderr)


JUDGMENTS_HELP = (
    "relevance judgments: qrels (TREC, BEIR .tsv, qrels .jsonl) or a golden set (BEIR folder, golden "
    ".jsonl/.csv/.parquet, LlamaIndex qa .json); a golden set's corpus ids also check the runs' doc ids"
)


def _first_json_object(path: Path) -> dict[str, object] | None:
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


def add_run_arguments(
    p: argparse.ArgumentParser, default_metrics: Sequence[str] = DEFAULT_COMPARE_METRICS, *, paired: bool = True
) -> None:
    """``qrels``, ``run...`` and ``-m/--metric`` (``default_metrics`` when none is given), as
    :func:`read_run_inputs` reads them; unless ``paired=False`` (``evaluate``) also ``--baseline`` and the
    paired test options (:func:`add_test_arguments`), as ``compare``, ``report`` and ``mlflow log`` compare
    the runs with the baseline."""
    p.add_argument("qrels", help=JUDGMENTS_HELP)
    p.add_argument("run", nargs="+", help="run files (TREC or .jsonl); named by their run tag, else file name")
    p.add_argument(
        "-m",
        "--metric",
        action="append",
        help=f"metric, repeatable or comma-separated (default: {','.join(default_metrics)})",
    )
    # the default the help names is the one read_run_inputs uses
    p.set_defaults(default_metrics=list(default_metrics))
    if paired:
        p.add_argument("--baseline", help="name of the baseline run (default: the first)")
        add_test_arguments(p)


#: The options of :func:`add_test_arguments`, named as the keyword arguments of ``compare()`` and ``gate()``.
_PAIRED_TEST_OPTIONS = ("test", "alpha", "level", "n_resamples", "seed")


def add_test_arguments(p: argparse.ArgumentParser) -> None:
    """The paired test and interval options of ``compare``, ``report``, ``gate`` and ``mlflow log``."""
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


def paired_test_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of :func:`add_test_arguments` as keyword arguments of :func:`rankbridge.analysis.compare`
    and :func:`rankbridge.analysis.gate`: ``test``, ``alpha``, ``level``, ``n_resamples`` and ``seed``.

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_test_arguments(p)
    >>> paired_test_options(p.parse_args(["--test", "t", "--seed", "7"]))
    {'test': 't', 'alpha': 0.05, 'level': 0.95, 'n_resamples': 10000, 'seed': 7}
    """
    return options_of(args, _PAIRED_TEST_OPTIONS)


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
    >>> unique_run_names(["n", "n-3", ""], ["a.txt", "b.txt", "c/n.txt"])
    ['n', 'n-3', 'n-4']
    """
    out: list[str] = []
    for i, name in enumerate(names):
        if not name or names.count(name) > 1:
            name = Path(paths[i]).stem
        unique, n = name, i + 1
        while unique in out:  # a suffixed name can be taken too: two runs under one name would merge
            unique, n = f"{name}-{n}", n + 1
        out.append(unique)
    return out


class RunInputs(NamedTuple):
    """What the options of :func:`add_run_arguments` name, read: the measures, the judgments, the runs."""

    measures: list[Measure]
    qrels: Qrels
    golden: GoldenSet | None
    #: The run files in the order given, keyed by :func:`unique_run_names`.
    runs: dict[str, Run]

    @property
    def judgments(self) -> Qrels | GoldenSet:
        """The golden set when the judgments are one (its corpus ids also check the runs' doc ids), else the qrels."""
        return self.golden if self.golden is not None else self.qrels


def read_run_inputs(args: argparse.Namespace, *, duplicates: str = "error") -> RunInputs:
    """The ``-m`` measures (the command's default metrics when none are given), then the judgments, then
    the run files.

    In that order, so a misspelt metric is reported before any file is read.
    """
    measures = parse_measures(split_metric_args(args.metric, args.default_metrics))
    qrels, golden = load_judgments(args.qrels)
    loaded = [load_run(path, duplicates=duplicates) for path in args.run]
    runs = dict(zip(unique_run_names([r.name for r in loaded], args.run), loaded, strict=True))
    return RunInputs(measures, qrels, golden, runs)


#: The call policy options of :func:`add_llm_options`: flag, type, default, help. Each flag names the
#: :class:`~rankbridge.judge.llm.CallPolicy` field it sets (``--rate-limit`` -> ``rate_limit``).
_CALL_POLICY_OPTIONS: tuple[tuple[str, type[int] | type[float], int | None, str], ...] = (
    ("--concurrency", int, 4, "calls in flight (default 4)"),
    ("--rate-limit", float, None, "at most this many calls per second"),
    ("--retries", int, 2, "retries after an error (default 2)"),
    ("--timeout", float, None, "seconds per call"),
    ("--max-calls", int, None, "budget: stop starting calls after this many"),
    ("--max-tokens", int, None, "budget: stop starting calls after this many tokens"),
)


_LLM_METAVAR = "MODULE:ATTR"


def add_llm_options(p: argparse.ArgumentParser) -> None:
    """``--llm`` and the call policy options of ``judge`` and ``generate``."""
    g = p.add_argument_group("LLM and budget")
    g.add_argument(
        "--llm",
        required=True,
        metavar=_LLM_METAVAR,
        help="the LLM: a LangChain chat model, a LlamaIndex LLM or a callable f(prompt) -> str, named as "
        "MODULE:ATTR, path/file.py:ATTR or MODULE:FACTORY(); a class or a zero-argument function is called to build it",
    )
    g.add_argument(
        "--model-id",
        help="the model and its settings, naming it in the cache and provenance (default: derived from a "
        "LangChain/LlamaIndex model's name and parameters; required for a plain callable unless --no-cache)",
    )
    for flag, kind, default, text in _CALL_POLICY_OPTIONS:
        g.add_argument(flag, type=kind, default=default, help=text)


def load_llm(args: argparse.Namespace) -> Any:
    """The LLM the ``--llm`` option of :func:`add_llm_options` names, loaded by
    :func:`~rankbridge.cli._loader.load_object` (a class or a zero-argument function is called)."""
    return load_object(args.llm, "--llm", metavar=_LLM_METAVAR)


def call_policy(args: argparse.Namespace) -> CallPolicy:
    """The :class:`~rankbridge.judge.llm.CallPolicy` the options of :func:`add_llm_options` describe."""
    # lazy: the judge package (and asyncio) load only for judge/generate, so `rankbridge --help` stays fast
    from rankbridge.judge.llm import CallPolicy

    fields = [flag.removeprefix("--").replace("-", "_") for flag, *_ in _CALL_POLICY_OPTIONS]
    return CallPolicy(**options_of(args, fields))
