"""Per-query cost at depth 10 as the number of queries grows, for every run form, against peers (issue 21).

For 10^3 .. 10^6 queries at depth 10 (MS MARCO-shaped, `_synthetic.make_dataset`) and on a BEIR shape
(300 queries x 100, graded, `_synthetic.make_beir_dataset`), CPU ns per query-hit (process CPU time of
one call / (queries x depth)), median over repetitions, in one process:

* rankbridge ``evaluate(qrels, run, METRICS).mean`` from plain dict qrels and each run form: score dicts
  ``{qid: {doc: score}}``, ranked ids ``{qid: [ids]}``, ``(id, score)`` lists, a ``Run`` of Hits (built by
  ``Run.from_ranked`` before timing) and a ``Run`` stored as columns (``Run.from_columns`` on the same
  rows, as the TREC and Arrow readers build it, before timing); default settings (id check on) and
  ``check_ids=False``;
* pytrec_eval ``RelevanceEvaluator(qrels, measures).evaluate(run)`` (score dicts, construction included);
* ranx ``Qrels.from_dict`` + ``Run.from_dict`` + ``evaluate`` (numba JIT compiled first; all cores);
* ir_measures ``calc_aggregate`` (its default backends) when installed;
* bare dict iteration ``for q, d in run.items(): for doc, s in d.items(): pass``.

On the BEIR shape the ranked-list forms are also timed with every list scanned once per judged doc (the
way they were all ranked before the per-hit lookup), side by side. A last table times the two ways alone
(``_scanned_hits`` / ``_looked_up_hits``) over a grid of judgments x depth, the measurement behind
``ranking._by_lookup``'s cost model.

Usage: ``.venv/bin/python benchmarks/bench_growth.py [--sizes 1000,10000,100000,1000000] [--write]``.
10^6 is skipped when less than 14 GB of memory is available.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pytrec_eval
import ranx

import rankbridge
from _synthetic import command_line, environment, make_beir_dataset, make_dataset, median, table, write_section
from rankbridge.metrics import ranking

METRICS = ["ndcg@10", "mrr@10", "P@5", "recall@100", "map@100", "hit_rate@10"]
TREC = {"ndcg_cut_10", "recip_rank", "P_5", "recall_100", "map_cut_100", "success_10"}
RANX = ["ndcg@10", "mrr@10", "precision@5", "recall@100", "map@100", "hit_rate@10"]
TARGET_PYTREC = 10.0  # rankbridge at least this many times faster than pytrec_eval
TARGET_BARE = 3.0  # rankbridge within this factor of the bare dict iteration


NOTES = """How to read this (issue 21.1). Every form is converted without a Python object per hit and without a
Python loop per query or per hit: C-level passes (`map`, `set`, `np.fromiter`) over the dicts in the run's
own order, then numpy. A judged doc of a score dict is looked up with `dict.get` (one lookup per judgment)
and ranked by comparing its score with its query's scores (queries of similar length at once; a long
result holding many judged docs by one sort), doc-id order consulted only where scores are equal; a Run
stored as columns (`Run.from_columns`) does one `dict.get` per row and ranks by numpy over its segments.
When the run lists the qrels' queries in the qrels' order, no query id is looked up at all.

What is left is a fixed number of passes per query over objects scattered in memory, each costing tens to
hundreds of ns per query on this shared machine: the two `floor:` rows time two of them alone (sorting the
qrels' query ids, which `Evaluation.query_ids` promises, and reading every score once). Against
pytrec_eval's few µs per query at depth 10, that leaves rankbridge {lo:.1f}-{hi:.1f}x pytrec_eval's speed in
the table above (every form and size), not 10x; the bound is the per-query cost of touching Python objects,
which only compiled code over the dicts would remove (not done: numpy only, no build step). At depth 1,000
the per-hit work dominates instead: see the `bench_metrics.py` section for that shape.

The ranked-list forms (ids, pairs, a Run of Hits) find a query's judged docs one of two ways, chosen per
query by `ranking._by_lookup`: a scan of the list per judged doc (`operator.countOf` / `indexOf` in C,
cheapest with a few judgments: the MS MARCO-shaped queries with 1-3, 99.5% of them, are scanned), or one
lookup per hit in the query's judgments (`dict.pop` on a copy, by C-level `map`, as the columnar path
does; the pop keeps a repeated doc at its first rank). On the BEIR shape (40 judgments over 100 hits)
every query is looked up; the table after the targets times the same call with the scan forced, side by
side."""


def available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return 0.0


def tools(qrels: dict, run: dict) -> dict[str, Callable[[], Any]]:
    ids = {q: list(d) for q, d in run.items()}
    pairs = {q: list(d.items()) for q, d in run.items()}
    run_obj = rankbridge.Run.from_ranked(pairs)
    rows = [(q, doc, s) for q, d in run.items() for doc, s in d.items()]
    columns = rankbridge.Run.from_columns([r[0] for r in rows], [r[1] for r in rows], np.array([r[2] for r in rows]))
    del rows
    out: dict[str, Callable[[], Any]] = {
        "rankbridge, score dicts": lambda: rankbridge.evaluate(qrels, run, METRICS).mean,
        "rankbridge, ranked ids": lambda: rankbridge.evaluate(qrels, ids, METRICS).mean,
        "rankbridge, (id, score) lists": lambda: rankbridge.evaluate(qrels, pairs, METRICS).mean,
        "rankbridge, Run": lambda: rankbridge.evaluate(qrels, run_obj, METRICS).mean,
        "rankbridge, Run.from_columns": lambda: rankbridge.evaluate(qrels, columns, METRICS).mean,
        "rankbridge, score dicts, check_ids=False": lambda: (
            rankbridge.evaluate(qrels, run, METRICS, check_ids=False).mean
        ),
        "rankbridge, ranked ids, check_ids=False": lambda: (
            rankbridge.evaluate(qrels, ids, METRICS, check_ids=False).mean
        ),
        "rankbridge, Run, check_ids=False": lambda: rankbridge.evaluate(qrels, run_obj, METRICS, check_ids=False).mean,
        "rankbridge, Run.from_columns, check_ids=False": lambda: (
            rankbridge.evaluate(qrels, columns, METRICS, check_ids=False).mean
        ),
        "pytrec_eval": lambda: pytrec_eval.RelevanceEvaluator(qrels, TREC).evaluate(run),
        "ranx": lambda: ranx.evaluate(ranx.Qrels.from_dict(qrels), ranx.Run.from_dict(run), RANX),
    }
    try:
        import ir_measures

        measures = [ir_measures.parse_measure(m) for m in ("nDCG@10", "RR@10", "P@5", "R@100", "AP@100", "Success@10")]
        out["ir_measures"] = lambda: ir_measures.calc_aggregate(measures, qrels, run)
    except ImportError:
        pass
    return out


def bare(run: dict) -> None:
    for _q, d in run.items():
        for _doc, _s in d.items():
            pass


def scanned(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with every ranked list scanned once per judged doc (as before the per-hit lookup)."""

    def call() -> Any:
        chosen = ranking._by_lookup
        ranking._by_lookup = lambda n_judged, lengths: np.zeros(len(n_judged), dtype=bool)
        try:
            return fn()
        finally:
            ranking._by_lookup = chosen

    return call


SCANNED = ("ranked ids", "(id, score) lists", "Run", "ranked ids, check_ids=False", "Run, check_ids=False")


def measure(qrels: dict, run: dict, reps: int, slow_reps: int, with_scan: bool = False) -> dict[str, float]:
    """Median CPU seconds per tool (interleaved repetitions); ``with_scan``: also the forms scanned."""
    fns = tools(qrels, run)
    if with_scan:
        for form in SCANNED:
            fns[f"rankbridge, {form}, scan forced"] = scanned(fns[f"rankbridge, {form}"])
    fns["bare dict iteration"] = lambda: bare(run)
    # Two passes every evaluation from dicts makes, timed alone: the floor of this design in Python.
    fns["floor: sorted(qrels ids)"] = lambda: sorted(qrels)
    n = sum(map(len, run.values()))
    fns["floor: np.fromiter of every score"] = lambda: np.fromiter(
        chain.from_iterable(map(dict.values, run.values())), dtype=np.float64, count=n
    )
    slow = {"pytrec_eval", "ranx", "ir_measures"}
    times: dict[str, list[float]] = {k: [] for k in fns}
    for rep in range(max(reps, slow_reps)):
        for name, fn in fns.items():
            if len(times[name]) >= (slow_reps if name in slow else reps):
                continue
            gc.collect()
            c0 = time.process_time()
            fn()
            times[name].append(time.process_time() - c0)
        print(f"  rep {rep + 1} done", file=sys.stderr)
    return {k: median(v) for k, v in times.items() if v}


def crossover(reps: int) -> tuple[list[int], list[int], dict[tuple[int, int], tuple[float, float, bool]]]:
    """CPU ns per query of the scan and the lookup alone, and the model's choice, per (judgments, depth).

    Synthetic lists of distinct ids with about a third of the judged docs retrieved (as in the BEIR shape),
    each cell ~200,000 list entries; the two ways interleaved, medians.
    """
    rng = np.random.default_rng(0)
    judgments, depths = [1, 2, 4, 8, 16, 40], [10, 100, 1000]
    out = {}
    for depth in depths:
        for n_j in judgments:
            n_q = max(50, 200_000 // depth)
            lists, jud = [], []
            for _ in range(n_q):
                ids = [f"MED-{d}" for d in rng.choice(10 * (depth + n_j), size=depth + n_j, replace=False).tolist()]
                ranked, judged = ids[:depth], ids[depth:]
                for j in rng.choice(depth, size=min(depth, max(1, n_j // 3)), replace=False).tolist():
                    ranked[j] = judged[j % n_j]
                lists.append(list(dict.fromkeys(ranked)))
                jud.append({d: int(x) for d, x in zip(judged, rng.integers(0, 3, n_j).tolist(), strict=True)})
            lengths = np.fromiter(map(len, lists), dtype=np.int64, count=n_q)
            n_judged = np.full(n_q, n_j, dtype=np.int64)
            owners = np.arange(n_q)
            ways = {
                "scan": partial(ranking._scanned_hits, lists, jud, n_judged, owners),
                "lookup": partial(ranking._looked_up_hits, lists, jud, n_judged, lengths, owners),
            }
            times: dict[str, list[float]] = {k: [] for k in ways}
            for _ in range(reps):
                for name, fn in ways.items():
                    c0 = time.process_time()
                    fn()
                    times[name].append(time.process_time() - c0)
            chosen = bool(ranking._by_lookup(n_judged[:1], lengths[:1])[0])
            out[(n_j, depth)] = (median(times["scan"]) / n_q * 1e9, median(times["lookup"]) / n_q * 1e9, chosen)
        print(f"  crossover, depth {depth} done", file=sys.stderr)
    return judgments, depths, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    small = make_dataset(64, 10, seed=1, layouts=("ranked",))
    ranx.evaluate(ranx.Qrels.from_dict(small.qrels), ranx.Run.from_dict(small.run_ranked), RANX)  # JIT
    columns: list[str] = []
    results: dict[str, dict[str, float]] = {}
    hits: dict[str, int] = {}
    skipped: list[str] = []
    for n in [int(x) for x in args.sizes.split(",")]:
        label = f"{n:,} q x 10"
        if n >= 1_000_000 and available_gb() < 14:
            skipped.append(f"{label} (only {available_gb():.1f} GB available)")
            continue
        ds = make_dataset(n, 10, layouts=("ranked",))
        reps = args.reps if n < 1_000_000 else 1
        print(f"{label}", file=sys.stderr)
        results[label] = measure(ds.qrels, ds.run_ranked, reps, max(1, min(reps, 3)))
        hits[label] = ds.num_entries
        columns.append(label)
        del ds
        gc.collect()
    qrels, run = make_beir_dataset()
    label = "BEIR shape, 300 q x 100, graded"
    print(label, file=sys.stderr)
    results[label] = measure(qrels, run, args.reps * 2, args.reps, with_scan=True)
    hits[label] = sum(map(len, run.values()))
    columns.append(label)
    beir = results[label]
    scan_rows = [
        [
            form,
            f"{beir[f'rankbridge, {form}'] * 1e9 / hits[label]:,.0f}",
            f"{beir[f'rankbridge, {form}, scan forced'] * 1e9 / hits[label]:,.0f}",
            f"{beir['pytrec_eval'] / beir[f'rankbridge, {form}']:.2f}x",
            f"{beir['pytrec_eval'] / beir[f'rankbridge, {form}, scan forced']:.2f}x",
        ]
        for form in SCANNED
    ]
    judgments, depths, grid = crossover(max(3, args.reps * 2))
    grid_rows = [
        [
            str(n_j),
            *(
                f"{grid[n_j, d][0]:,.0f} / {grid[n_j, d][1]:,.0f}, {'lookup' if grid[n_j, d][2] else 'scan'}"
                + ("" if (grid[n_j, d][1] < grid[n_j, d][0]) == grid[n_j, d][2] else " (the other was cheaper)")
                for d in depths
            ),
        ]
        for n_j in judgments
    ]
    misses = sum((v[1] < v[0]) != v[2] for v in grid.values())

    names = [n for n in next(iter(results.values())) if not n.endswith("scan forced")]
    rows = [[name] + [f"{results[c][name] * 1e9 / hits[c]:,.0f}" for c in columns] for name in names]
    ratio_rows = []
    speedups = [results[c]["pytrec_eval"] / results[c][n] for n in names if n.startswith("rankbridge") for c in columns]
    for name in names:
        if not name.startswith("rankbridge"):
            continue
        cells = []
        for c in columns:
            r = results[c]
            vs_trec = r["pytrec_eval"] / r[name]
            vs_bare = r[name] / r["bare dict iteration"]
            ok = vs_trec >= TARGET_PYTREC and vs_bare <= TARGET_BARE
            cells.append(f"{vs_trec:.1f}x / {vs_bare:.1f}x {'met' if ok else 'NOT met'}")
        ratio_rows.append([name, *cells])
    body = "\n\n".join(
        [
            "### Per-query cost as queries grow, depth 10, every run form (`bench_growth.py`)",
            environment(command_line()),
            "CPU ns per query-hit (process CPU time of one call / run entries), medians "
            f"({args.reps} repetitions below 10^6 queries, 1 at 10^6; pytrec_eval, ranx, ir_measures at most 3):",
            table(["", *columns], rows),
            f"Targets (issue 21.1): >= {TARGET_PYTREC:g}x faster than pytrec_eval and <= {TARGET_BARE:g}x the bare "
            "dict iteration. Each cell: pytrec_eval time / rankbridge time, then rankbridge time / bare time.",
            table(["form", *columns], ratio_rows),
            ("Skipped: " + "; ".join(skipped)) if skipped else "",
            f"{label}, the ranked-list forms with each query's way chosen (as above) and with every list "
            "scanned once per judged doc (the code before the per-hit lookup), in the same repetitions: CPU ns "
            "per query-hit, then pytrec_eval time / rankbridge time.",
            table(
                ["form", "chosen", "scan forced", "vs pytrec_eval, chosen", "vs pytrec_eval, scan forced"], scan_rows
            ),
            "The two ways alone (`ranking._scanned_hits` / `_looked_up_hits` on synthetic lists, a third of the "
            "judged docs retrieved): CPU ns per query, scan / lookup, then the way `_by_lookup` picks; "
            f"it picks the cheaper one in {len(grid) - misses} of {len(grid)} cells.",
            table(["judgments per query", *(f"depth {d}" for d in depths)], grid_rows),
            NOTES.format(lo=min(speedups), hi=max(speedups)),
        ]
    )
    print(body)
    if args.write:
        write_section("bench_growth", body)


if __name__ == "__main__":
    main()
