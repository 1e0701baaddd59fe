"""Import cost of ``rankbridge``: wall time of ``python -c "import rankbridge"`` and what it pulls in.

Times three fresh interpreters, interleaved, ``--runs`` times each (after one untimed warm-up run of
each, so the OS file cache is warm): ``python -c "pass"`` (interpreter start-up), ``python -c "import
numpy"`` (the floor: rankbridge's one dependency) and ``python -c "import rankbridge"``. Then checks that
importing rankbridge loads no framework, pandas, numba or rich module, and lists the slowest modules of
the import (``python -X importtime``).

Target: ``python -c "import rankbridge"`` under 0.3 s (median). Exits 1 if a forbidden module is loaded.

Usage: ``.venv/bin/python benchmarks/bench_import.py [--write]`` (about 10 seconds).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from _synthetic import command_line, environment, median, table, write_section

TARGET_S = 0.3
COMMANDS = {
    "python -c 'pass'": "pass",
    "python -c 'import numpy'": "import numpy",
    "python -c 'import rankbridge'": "import rankbridge",
}
# Top-level packages that a bare `import rankbridge` must not load (frameworks load only on use).
FORBIDDEN = (
    "llama_index",
    "langchain",
    "langchain_core",
    "langchain_community",
    "ragas",
    "datasets",
    "transformers",
    "torch",
    "openai",
    "pandas",
    "pyarrow",
    "numba",
    "llvmlite",
    "rich",
    "ranx",
    "pytrec_eval",
    "scipy",
)


def run_once(code: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one fresh ``python -c code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def loaded_modules() -> list[str]:
    code = "import sys, json, rankbridge; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def slowest_imports(n: int) -> list[tuple[str, int, int]]:
    """(module, self us, cumulative us) of rankbridge's own modules and numpy, largest cumulative first."""
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import rankbridge"], check=True, capture_output=True, text=True
    ).stderr
    rows: dict[str, tuple[str, int, int]] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cum_us, name = line[len("import time:") :].split("|")
        name = name.strip()
        if (name.startswith("rankbridge") or name == "numpy") and int(cum_us) > rows.get(name, ("", 0, -1))[2]:
            rows[name] = (name, int(self_us), int(cum_us))  # a module can be listed twice: keep the larger
    return sorted(rows.values(), key=lambda r: -r[2])[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed runs of each command")
    ap.add_argument("--write", action="store_true", help="update the bench_import section of docs/benchmarks.md")
    args = ap.parse_args()

    for code in COMMANDS.values():  # warm the file cache (and .pyc files)
        run_once(code)
    times: dict[str, list[float]] = {label: [] for label in COMMANDS}
    cpu: dict[str, list[float]] = {label: [] for label in COMMANDS}
    for _ in range(args.runs):
        for label, code in COMMANDS.items():
            wall, used = run_once(code)
            times[label].append(wall)
            cpu[label].append(used)
    med = {label: median(ts) for label, ts in times.items()}
    base, floor, ours = med.values()

    modules = loaded_modules()
    bad = sorted(m for m in modules if m.split(".")[0] in FORBIDDEN)
    top = slowest_imports(10)
    top_rows = [[f"`{m}`", f"{s / 1000:.1f}", f"{c / 1000:.1f}"] for m, s, c in top]

    rows = [
        [f"`{label}`", f"{med[label]:.3f}", f"{min(ts):.3f}", f"{max(ts):.3f}", f"{median(cpu[label]):.3f}"]
        for label, ts in times.items()
    ]
    met = ours < TARGET_S
    targets = [
        [
            "`python -c 'import rankbridge'` wall time (median)",
            f"< {TARGET_S:g} s",
            f"{ours:.3f} s",
            "met" if met else "NOT met",
        ],
        [
            "no framework, pandas, numba, rich (...) module after `import rankbridge`",
            "none loaded",
            ", ".join(bad) if bad else f"none of {len(FORBIDDEN)} checked ({len(modules)} modules loaded in all)",
            "met" if not bad else "NOT met",
        ],
    ]
    body = "\n\n".join(
        [
            "### Import time (`bench_import.py`)",
            environment(command_line()),
            f"Wall time of a fresh interpreter, {args.runs} interleaved runs of each after one warm-up run "
            "(CPU = user + system time of the child, less sensitive to other load on the machine):",
            table(["command", "median wall (s)", "min wall (s)", "max wall (s)", "median CPU (s)"], rows),
            f"`import rankbridge` costs {ours - base:.3f} s over a bare interpreter start, of which numpy is "
            f"{floor - base:.3f} s: rankbridge's own modules add {ours - floor:.3f} s "
            f"({ours / floor:.2f}x the `import numpy` floor).",
            table(["target", "goal", "measured", ""], targets),
            "Where the import time goes: rankbridge's own modules and numpy, largest cumulative time first "
            "(`python -X importtime -c 'import rankbridge'`, one run; cumulative includes what a module imports):"
            "\n\n" + table(["module", "self (ms)", "cumulative (ms)"], top_rows),
            "Checked absent: " + ", ".join(f"`{m}`" for m in FORBIDDEN) + ".",
        ]
    )
    print(body)
    print(f"\ntargets: {'all met' if met and not bad else 'NOT all met'}")
    if args.write:
        write_section("bench_import", body)
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
