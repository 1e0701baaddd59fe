"""The ``rankbridge`` command: one module per subcommand, parsing and printing only.

Each ``rankbridge.cli.<command>`` module registers its subcommand with ``add_cli(subparsers)`` and calls
the library; nothing in the library imports this package. Options that name a Python object
(``rankbridge run RETRIEVER``, ``--llm``, ``--embeddings``) go through one loader,
:func:`rankbridge.cli._loader.load_object`.

=============================  ===========================
command                        module
=============================  ===========================
``evaluate``                   :mod:`rankbridge.cli.evaluate`
``metrics``                    :mod:`rankbridge.cli.metrics`
``compare``                    :mod:`rankbridge.cli.compare`
``report``                     :mod:`rankbridge.cli.report`
``gate``                       :mod:`rankbridge.cli.gate`
``history ...``                :mod:`rankbridge.cli.history`
``run``                        :mod:`rankbridge.cli.run`
``judge``                      :mod:`rankbridge.cli.judge`
``generate``                   :mod:`rankbridge.cli.generate`
``ragas export|score``         :mod:`rankbridge.cli.ragas`
``mlflow log``                 :mod:`rankbridge.cli.mlflow`
``demo``                       :mod:`rankbridge.cli.demo`
=============================  ===========================

Exit codes: 0 success; 1 a quality gate failed (``rankbridge gate``); 2 bad input or usage (the message
says what and where); 3 incomplete (a budget was reached, or some queries or items failed); 70 an
unexpected error (a bug; ``RANKBRIDGE_DEBUG=1`` shows the traceback); 75 the history file is locked by
another process (try again); 130 interrupted. Errors are printed as one message, never as a traceback;
the library's warnings as one ``rankbridge: warning:`` line each.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from rankbridge._version import __version__
from rankbridge.cli import (
    compare,
    demo,
    evaluate,
    gate,
    generate,
    history,
    judge,
    metrics,
    mlflow,
    ragas,
    report,
    run,
)
from rankbridge.cli._common import EXIT_BUG, EXIT_INTERRUPTED, EXIT_LOCKED, EXIT_OK, EXIT_USAGE, error, warn
from rankbridge.errors import RankbridgeError, StoreLockedError

__all__ = ["build_parser", "main"]

#: The subcommands, in the order ``rankbridge --help`` lists them.
COMMANDS = (evaluate, metrics, demo, compare, history, ragas, judge, generate, run, gate, report, mlflow)


def build_parser() -> argparse.ArgumentParser:
    """The ``rankbridge`` argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="rankbridge",
        description="Measure how well a retriever finds the right chunks (trec_eval-exact metrics).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  rankbridge demo\n"
        "  rankbridge evaluate qrels.txt run.txt -m ndcg@10 -m P@5 --per-query --format trec\n"
        "  rankbridge compare qrels.txt bm25.txt dense.txt -m ndcg@10 --baseline bm25\n"
        "  rankbridge report qrels.txt bm25.txt dense.txt -m ndcg@10 -o report.html\n"
        "  rankbridge gate --baseline main --qrels qrels.txt run.jsonl -m ndcg@10 --max-drop 0.01\n"
        "  rankbridge run app:retriever --queries queries.jsonl -o run.jsonl\n"
        "MODULE:ATTR options (run RETRIEVER, --llm, --embeddings): module:attr, path/file.py:attr or\n"
        "  module:factory(); a class or a zero-argument function is called to build the object\n"
        "exit codes: 0 ok, 1 gate failed, 2 bad input or usage, 3 incomplete (budget reached or some\n"
        "queries failed), 70 unexpected error (RANKBRIDGE_DEBUG=1 shows the traceback), 75 history file\n"
        "locked (try again), 130 interrupted",
    )
    parser.add_argument("--version", action="version", version=f"rankbridge {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rankbridge`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    with warnings.catch_warnings(record=True) as caught:
        # the library's warnings (a golden set with unjudged questions, a trend split...) become one line
        # each on stderr, whatever the interpreter's warning filters say
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return _run(args)
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, UserWarning)):
                warn(message)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except StoreLockedError as exc:  # another process is writing the history: try again (EX_TEMPFAIL)
        error(str(exc))
        return EXIT_LOCKED
    except RankbridgeError as exc:
        error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("rankbridge: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `rankbridge evaluate ... | head`
        return EXIT_OK
    except OSError as exc:  # a file that cannot be read or written: the user's input, not our bug
        where = f" ({exc.filename})" if exc.filename else ""
        error(f"{exc.strerror or exc}{where}")
        return EXIT_USAGE
    except Exception as exc:  # a bug: one line by default, the traceback on request
        if os.environ.get("RANKBRIDGE_DEBUG"):
            raise
        print(
            f"rankbridge: unexpected error (a bug, please report it): {type(exc).__name__}: {exc}\n"
            "rankbridge: set RANKBRIDGE_DEBUG=1 to see the traceback",
            file=sys.stderr,
        )
        return EXIT_BUG
