"""Start-up cost of the ``rankbridge`` command: ``rankbridge --help`` against ``import rankbridge``.

Times fresh interpreters, interleaved, ``--runs`` times each after one untimed warm-up run of each:
``python -c "import rankbridge"`` (the library floor), ``python -c "import rankbridge.cli"`` (every
command module, parser not built) and ``rankbridge --help`` (as ``main(["--help"])``: every subcommand's
parser built and the help printed). Then checks that building the parser loads none of the modules only
a command's run needs (the runner, the judge package, any framework, RAGAS, MLflow, rich): they are
imported when ``run``/``judge``/``generate``/... actually run.

The time ``--help`` adds over ``import rankbridge`` is the command modules' own imports (argparse, and
the library modules whose names the help shows: the RAGAS metric list, the history and report defaults).
Target: ``--help`` loads none of the run-only modules (exits 1 otherwise); the times are recorded.

Usage: ``.venv/bin/python benchmarks/bench_cli.py [--runs 10] [--write]`` (about 30 seconds).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from _synthetic import command_line, environment, median, table, write_section

HELP = "from rankbridge.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
COMMANDS = {
    "python -c 'import rankbridge'": "import rankbridge",
    "python -c 'import rankbridge.cli'": "import rankbridge.cli",
    "rankbridge --help": HELP,
}
# Loaded only when a command runs (lazy imports in rankbridge/cli/ and the library), never for --help.
RUN_ONLY = (
    "rankbridge.runner",
    "rankbridge.judge",
    "llama_index",
    "langchain_core",
    "ragas",
    "datasets",
    "mlflow",
    "rich",
    "pandas",
    "jinja2",
    "matplotlib",
)


def run_once(code: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return time.perf_counter() - t0


def loaded_by_help() -> list[str]:
    code = HELP + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed runs of each command")
    ap.add_argument("--write", action="store_true", help="update the bench_cli section of docs/benchmarks.md")
    args = ap.parse_args()

    for code in COMMANDS.values():  # warm the file cache (and .pyc files)
        run_once(code)
    times: dict[str, list[float]] = {label: [] for label in COMMANDS}
    for _ in range(args.runs):
        for label, code in COMMANDS.items():
            times[label].append(run_once(code))
    med = {label: median(ts) for label, ts in times.items()}
    lib, _, helped = med.values()

    modules = loaded_by_help()
    bad = sorted(m for m in modules if any(m == r or m.startswith(r + ".") for r in RUN_ONLY))
    body = "\n\n".join(
        [
            "### Command start-up (`bench_cli.py`)",
            environment(command_line()),
            f"Wall time of a fresh interpreter, {args.runs} interleaved runs of each after one warm-up run:",
            table(
                ["command", "median wall (s)", "min wall (s)", "max wall (s)"],
                [[f"`{k}`", f"{med[k]:.3f}", f"{min(v):.3f}", f"{max(v):.3f}"] for k, v in times.items()],
            ),
            f"`rankbridge --help` costs {helped - lib:.3f} s over `import rankbridge` (medians).",
            table(
                ["target", "goal", "measured", ""],
                [
                    [
                        "run-only modules loaded by `rankbridge --help` (" + ", ".join(RUN_ONLY) + ")",
                        "none",
                        ", ".join(bad) if bad else f"none of {len(RUN_ONLY)}",
                        "met" if not bad else "NOT met",
                    ]
                ],
            ),
        ]
    )
    print(body)
    if args.write:
        write_section("bench_cli", body)
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
