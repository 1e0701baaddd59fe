"""End-to-end metric evaluation from Python dicts: rankbridge vs pytrec_eval vs ranx, MS MARCO dev shape.

Every tool starts from the same ``{qid: {doc: label}}`` qrels and ``{qid: {doc: score}}`` run dicts and
ends with the mean of each metric, in one process, interleaved over several repetitions; the figures are
medians. What each timing covers:

* ``rankbridge``: ``rankbridge.evaluate(qrels, run, METRICS).mean``.
* ``rankbridge, HitTable reuse``: ``evaluate`` on a table prebuilt with ``build_table`` (the kernels only).
* ``rankbridge build_table``: the dicts -> HitTable conversion alone (for profiling).
* ``pytrec_eval``: ``RelevanceEvaluator(qrels, measures).evaluate(run)`` plus the means over queries.
  pytrec_eval has no cut-off for the reciprocal rank, so it computes ``recip_rank`` (uncut) where the
  others compute ``mrr@10``; the agreement check compares it with rankbridge's uncut ``mrr``.
* ``ranx``: ``Qrels.from_dict`` + ``Run.from_dict`` + ``ranx.evaluate`` (its numba JIT compiled before
  timing; numba uses every core). Building ranx's Qrels/Run is part of its end-to-end cost from dicts.
* ``bare iteration``: ``for q, d in run.items(): for doc, s in d.items(): pass`` -- a floor for anything
  that reads every entry of the run from Python.

Usage: ``.venv/bin/python benchmarks/bench_metrics.py [--write]`` (about 2-3 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import pytrec_eval
import ranx

import rankbridge
from _synthetic import Dataset, command_line, environment, make_dataset, median, table, write_section
from rankbridge.metrics import build_table, parse_measure

# Our metric -> (pytrec_eval measure, ranx metric)
METRICS = {
    "ndcg@10": ("ndcg_cut_10", "ndcg@10"),
    "mrr@10": ("recip_rank", "mrr@10"),  # pytrec_eval: recip_rank has no cut-off
    "P@5": ("P_5", "precision@5"),
    "recall@100": ("recall_100", "recall@100"),
    "map@100": ("map_cut_100", "map@100"),
    "hit_rate@10": ("success_10", "hit_rate@10"),
}
CANON = {m: str(parse_measure(m)) for m in METRICS}
TREC_MEASURES = {t for t, _ in METRICS.values()}
RANX_METRICS = [r for _, r in METRICS.values()]
TOL = 1e-6

TARGETS = {"random": 10.0, "ranked": 6.0}  # minimum speed-up over pytrec_eval and ranx
BARE_TARGET = 2.0  # rankbridge within this factor of the bare iteration

Result = dict[str, float]


# -- one end-to-end call per tool; each returns {our metric: mean} -----------------------------------


def run_rankbridge(qrels: dict, run: dict) -> Result:
    mean = rankbridge.evaluate(qrels, run, list(METRICS)).mean
    return {m: mean[CANON[m]] for m in METRICS}


def run_rankbridge_table(qrels: dict, table_: Any) -> Result:
    mean = rankbridge.evaluate(qrels, table_, list(METRICS)).mean
    return {m: mean[CANON[m]] for m in METRICS}


def run_build_table(qrels: dict, run: dict) -> Result:
    build_table(rankbridge.Qrels(qrels), run, tuple(sorted(qrels)))
    return {}


def run_pytrec(qrels: dict, run: dict) -> Result:
    per_query = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES).evaluate(run)
    n = len(per_query)
    return {m: sum(v[t] for v in per_query.values()) / n for m, (t, _) in METRICS.items()}


def run_ranx(qrels: dict, run: dict) -> Result:
    q, r = ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run)
    means = ranx.evaluate(q, r, RANX_METRICS)
    return {m: float(means[x]) for m, (_, x) in METRICS.items()}


def run_bare(qrels: dict, run: dict) -> Result:
    for _q, d in run.items():
        for _doc, _s in d.items():
            pass
    return {}


# -- agreement ----------------------------------------------------------------------------------------


def agreement(ds: Dataset, layout: str, got: dict[str, Result]) -> tuple[str, float]:
    """Markdown table of the three tools' means; the largest difference where definitions agree."""
    run = ds.layout(layout)
    rb = got["rankbridge"]
    rb_mrr = rankbridge.evaluate(ds.qrels, run, ["mrr"]).mean["mrr"]  # uncut, as pytrec's recip_rank
    rows, worst = [], 0.0
    for m, (t, x) in METRICS.items():
        ours = rb[m]
        trec = got["pytrec_eval"][m]
        trec_ref = rb_mrr if t == "recip_rank" else ours
        d_trec, d_ranx = abs(trec - trec_ref), abs(got["ranx"][m] - ours)
        worst = max(worst, d_trec, d_ranx)
        trec_cell = f"{trec:.6f} ({t}{'; vs rankbridge mrr = ' + format(rb_mrr, '.6f') if t == 'recip_rank' else ''})"
        rows.append([m, f"{ours:.6f}", trec_cell, f"{d_trec:.1e}", f"{got['ranx'][m]:.6f} ({x})", f"{d_ranx:.1e}"])
    header = ["metric", "rankbridge", "pytrec_eval", "abs diff", "ranx", "abs diff"]
    return table(header, rows), worst


# -- timing -------------------------------------------------------------------------------------------


def time_layout(ds: Dataset, layout: str, reps: int, slow_reps: int) -> tuple[dict, dict, dict]:
    """Interleaved timings of every tool on one layout: (wall times, CPU times, first results)."""
    run = ds.layout(layout)
    prebuilt = build_table(rankbridge.Qrels(ds.qrels), run, tuple(sorted(ds.qrels)))
    tools: dict[str, tuple[Callable[[dict, Any], Result], Any, int]] = {
        "rankbridge": (run_rankbridge, run, reps),
        "rankbridge, HitTable reuse": (run_rankbridge_table, prebuilt, reps),
        "rankbridge build_table only": (run_build_table, run, reps),
        "bare iteration": (run_bare, run, reps),
        "pytrec_eval": (run_pytrec, run, slow_reps),
        "ranx": (run_ranx, run, slow_reps),
    }
    times: dict[str, list[float]] = {name: [] for name in tools}
    cpu: dict[str, list[float]] = {name: [] for name in tools}
    first: dict[str, Result] = {}
    names = list(tools)
    for rep in range(max(reps, slow_reps)):
        order = names[rep % len(names) :] + names[: rep % len(names)]  # rotate to spread any drift
        for name in order:
            fn, arg, n = tools[name]
            if len(times[name]) >= n:
                continue
            gc.collect()
            c0, t0 = time.process_time(), time.perf_counter()
            out = fn(ds.qrels, arg)
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            first.setdefault(name, out)
        done = ", ".join(f"{k} {v[-1]:.3f}s" for k, v in times.items() if len(v) > rep)
        print(f"  [{layout}] rep {rep + 1}: {done}", file=sys.stderr)
    return times, cpu, first


def warm_up() -> None:
    """Compile ranx's numba functions (and touch the other tools) on a small dataset of the same shape."""
    small = make_dataset(64, 100, seed=1)  # >= 10 queries: ranx drops to 1 thread for fewer
    for layout in ("random", "ranked"):
        run = small.layout(layout)
        run_ranx(small.qrels, run)
        run_pytrec(small.qrels, run)
        run_rankbridge(small.qrels, run)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=6_980)
    ap.add_argument("--depth", type=int, default=1_000)
    ap.add_argument("--reps", type=int, default=11, help="repetitions of rankbridge and the bare iteration")
    ap.add_argument("--slow-reps", type=int, default=5, help="repetitions of pytrec_eval and ranx")
    ap.add_argument("--write", action="store_true", help="update the bench_metrics section of docs/benchmarks.md")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message=".*unsafe cast.*")  # ranx's numba kernels

    t0 = time.perf_counter()
    ds = make_dataset(args.queries, args.depth)
    print(f"generated {ds.num_entries:,} run entries in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    t0 = time.perf_counter()
    warm_up()
    print(f"warmed up (ranx JIT) in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

    sections, target_rows, worst_all, ok = [], [], 0.0, True
    for layout in ("random", "ranked"):
        times, cpu, first = time_layout(ds, layout, args.reps, args.slow_reps)
        med = {k: median(v) for k, v in times.items()}
        rb = med["rankbridge"]
        rows = []
        for name, ts in times.items():
            if name == "rankbridge":
                rel = "1.0x (reference)"
            elif name.startswith("rankbridge"):
                rel = f"{med[name] / rb:.2f}x rankbridge's time"
            elif name == "bare iteration":
                rel = f"rankbridge takes {rb / med[name]:.2f}x this"
            else:
                rel = f"rankbridge is **{med[name] / rb:.1f}x** faster"
            rows.append([name, f"{med[name]:.3f}", f"{min(ts):.3f}", f"{median(cpu[name]):.3f}", str(len(ts)), rel])
        agree, worst = agreement(ds, layout, first)
        worst_all = max(worst_all, worst)
        title = "random insertion order" if layout == "random" else "rank order (score descending)"
        sections.append(
            f"#### Run dicts filled in {title}\n\n"
            + table(["", "median (s)", "min (s)", "median CPU (s)", "reps", "ratio (medians)"], rows)
            + f"\n\nAgreement of the means (largest difference {worst:.1e}, tolerance {TOL:g}):\n\n"
            + agree
        )
        mc = {k: median(v) for k, v in cpu.items()}
        goal = TARGETS[layout]
        for other in ("pytrec_eval", "ranx"):
            r = med[other] / rb
            ok &= r >= goal
            cpu_note = " (its threads summed)" if other == "ranx" else ""
            target_rows.append(
                [
                    f"{layout}: rankbridge vs {other}",
                    f">= {goal:g}x faster",
                    f"{r:.1f}x",
                    f"{mc[other] / mc['rankbridge']:.1f}x{cpu_note}",
                    "met" if r >= goal else "NOT met",
                ]
            )
        r = rb / med["bare iteration"]
        ok &= r <= BARE_TARGET
        target_rows.append(
            [
                f"{layout}: rankbridge time / bare iteration time",
                f"<= {BARE_TARGET:g}x",
                f"{r:.2f}x",
                f"{mc['rankbridge'] / mc['bare iteration']:.2f}x",
                "met" if r <= BARE_TARGET else "NOT met",
            ]
        )

    data = (
        f"Synthetic data of MS MARCO passage dev shape (`benchmarks/_synthetic.py`): {args.queries:,} queries, "
        f"run depth {args.depth:,} ({ds.num_entries:,} run entries), {ds.num_judgments:,} relevant judgments "
        f"({ds.num_judgments / args.queries:.2f} per query), MS MARCO-style numeric string ids, float scores "
        f"without ties; {ds.found_rate:.0%} of queries have a relevant passage in the run, at log-uniform "
        "random ranks. Metrics: " + ", ".join(f"`{m}`" for m in METRICS) + "."
    )
    notes = """Notes:

- Each timing starts from the plain dicts and ends with the mean of every metric; all tools run in one
  process, interleaved, after `gc.collect()`. Wall-clock medians over the repetitions shown; targets are
  judged on them. "CPU" is the process CPU time of the call (for ranx it adds up its numba threads), a
  cross-check that is less sensitive to other load on the machine.
- pytrec_eval: `RelevanceEvaluator(qrels, {ndcg_cut_10, recip_rank, P_5, recall_100, map_cut_100,
  success_10}).evaluate(run)`, construction included. trec_eval has no cut-off reciprocal rank, so it
  computes `recip_rank` (uncut) where the others compute `mrr@10`; the check compares it with
  rankbridge's uncut `mrr`.
- ranx: `Qrels.from_dict` + `Run.from_dict` + `ranx.evaluate` (default `threads=0`, i.e. all cores),
  its numba JIT compiled by a warm-up call first. Building ranx's Qrels/Run from the dicts is most of
  its time, and it is part of the end-to-end cost.
- `HitTable reuse` is `rankbridge.evaluate` on a table prebuilt with `rankbridge.metrics.build_table`;
  `build_table only` is the conversion alone. Both are for reference, not targets."""
    body = "\n\n".join(
        [
            "### Metrics: end to end from Python dicts (`bench_metrics.py`)",
            environment(command_line()),
            data,
            *sections,
            "#### Targets\n\n"
            + table(["target", "goal", "wall-clock ratio", "CPU-time ratio", "verdict (wall)"], target_rows),
            notes,
        ]
    )
    print(body)
    print(f"\nagreement: {'OK' if worst_all <= TOL else 'FAILED'} (largest difference {worst_all:.1e})")
    print(f"targets: {'all met' if ok else 'NOT all met'}")
    if args.write:
        write_section("bench_metrics", body)
    if worst_all > TOL:
        sys.exit(1)


if __name__ == "__main__":
    main()
