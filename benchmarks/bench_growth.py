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
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pytrec_eval
import ranx

import rankbridge
from _synthetic import command_line, environment, make_beir_dataset, make_dataset, median, table, write_section

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

On the BEIR shape the ranked-list forms (ids, pairs, a Run of Hits) scan each list once per judged doc
(`operator.countOf` / `indexOf`: cheapest when a query has one or two judgments, as in MS MARCO); with 40
judgments per query over 100 hits that is the slowest case here. A lookup per hit, as the columnar path
does, would suit that shape better (not done in this round)."""


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


def measure(qrels: dict, run: dict, reps: int, slow_reps: int) -> dict[str, float]:
    """Median CPU seconds per tool (interleaved repetitions)."""
    fns = tools(qrels, run)
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
    results[label] = measure(qrels, run, args.reps * 2, args.reps)
    hits[label] = sum(map(len, run.values()))
    columns.append(label)

    names = list(next(iter(results.values())))
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
            NOTES.format(lo=min(speedups), hi=max(speedups)),
        ]
    )
    print(body)
    if args.write:
        write_section("bench_growth", body)


if __name__ == "__main__":
    main()
