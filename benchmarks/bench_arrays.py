"""Array and table input against a memory copy of the same input, and pytrec_eval (issue 21.2).

On the MS MARCO shape (6,980 queries x 1,000 hits) and at 10^6 queries x 10, MS MARCO-shaped data
(``_synthetic``: ~1.07 judgments per query, 70% of queries with a judged doc retrieved at a log-uniform
rank, distinct doc ids per row), in one process, interleaved, CPU time, medians:

* memcpy: ``np.copyto`` of the doc matrix (and the qrels arrays) into preallocated arrays -- the bound;
* ``table_from_arrays(query_ids, docs, qrels_query, qrels_doc, qrels_label)`` with the duplicate check (the
  default) and with ``check_duplicates=False`` (query ids passed as a tuple, as HitTable keeps them);
* ``evaluate(None, table, METRICS)`` on the built table (the kernels, for context);
* a run as a table of one row per hit with str ids -- pandas DataFrame, pyarrow Table, pyarrow Table with
  dictionary-encoded id columns -- converted by ``run_from_table`` and through
  ``evaluate(qrels, table, METRICS, check_ids=False)`` (conversion and metrics), against a copy of the
  Arrow table's buffers (``np.copyto`` of each buffer into preallocated memory) and against pytrec_eval;
* pytrec_eval ``RelevanceEvaluator(qrels, measures).evaluate(run)`` on prebuilt dicts (its best case).

Usage: ``.venv/bin/python benchmarks/bench_arrays.py [--reps 5] [--no-tables] [--write]``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytrec_eval

from _synthetic import (
    NUM_PASSAGES,
    REL_COUNTS,
    REL_PROBS,
    _distinct_rows,
    command_line,
    environment,
    median,
    table,
    write_section,
)
from rankbridge.evaluate import evaluate
from rankbridge.io import run_from_table
from rankbridge.metrics import table_from_arrays

METRICS = ["ndcg@10", "mrr@10", "P@5", "recall@100", "map@100", "hit_rate@10"]
TREC = {"ndcg_cut_10", "recip_rank", "P_5", "recall_100", "map_cut_100", "success_10"}
TARGET = 5.0  # within this factor of the memory copy
SHAPES = [(6_980, 1_000), (1_000_000, 10)]


def make_arrays(n_q: int, depth: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    docs = _distinct_rows(rng, NUM_PASSAGES, n_q, depth)
    n_rel = rng.choice(REL_COUNTS, size=n_q, p=REL_PROBS)
    found = rng.random(n_q) < 0.7
    jq, jd = [], []
    for j in range(max(REL_COUNTS)):
        has = np.flatnonzero(j < n_rel)
        ranks = np.exp(rng.random(len(has)) * np.log(depth)).astype(np.int64).clip(1, depth) - 1
        # retrieved ones: a doc already in the row (so rows stay distinct); else a random passage
        hit = found[has] & ((j == 0) | (rng.random(len(has)) < 0.5))
        doc = np.where(hit, docs[has, ranks], rng.integers(0, NUM_PASSAGES, size=len(has)))
        jq.append(has)
        jd.append(doc)
    qrels_query, qrels_doc = np.concatenate(jq), np.concatenate(jd)
    key = qrels_query * NUM_PASSAGES + qrels_doc  # drop the (rare) pair drawn twice
    _, first = np.unique(key, return_index=True)
    qrels_query, qrels_doc = qrels_query[np.sort(first)], qrels_doc[np.sort(first)]
    qids = tuple(str(i) for i in range(n_q))
    return {
        "qids": qids,
        "docs": docs,
        "qq": qrels_query,
        "qd": qrels_doc,
        "ql": np.ones(len(qrels_query), dtype=np.int64),
    }


def as_dicts(a: dict[str, Any]) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    qids = a["qids"]
    qrels: dict[str, dict[str, int]] = {}
    for q, d in zip(a["qq"].tolist(), a["qd"].tolist(), strict=True):
        qrels.setdefault(qids[q], {})[str(d)] = 1
    depth = a["docs"].shape[1]
    scores = [float(depth - i) for i in range(depth)]  # rank order by score
    run = {qids[i]: dict(zip(map(str, row), scores, strict=True)) for i, row in enumerate(a["docs"].tolist())}
    return qrels, run


def as_frame(run: dict[str, dict[str, float]]) -> pd.DataFrame:
    n = sum(map(len, run.values()))
    return pd.DataFrame(
        {
            "query_id": [q for q, d in run.items() for _ in range(len(d))],
            "doc_id": [doc for d in run.values() for doc in d],
            "score": np.fromiter((s for d in run.values() for s in d.values()), dtype=np.float64, count=n),
        }
    )


def timed(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, float]:
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():  # interleaved: every tool sees the same machine load
            gc.collect()
            t0 = time.process_time()
            f()
            out[k].append(time.process_time() - t0)
    return {k: median(v) for k, v in out.items()}


def arrow_copy(t: pa.Table) -> Callable[[], Any]:
    buffers = [b for col in t.columns for chunk in col.chunks for b in chunk.buffers() if b is not None]
    targets = [np.empty(b.size, dtype=np.uint8) for b in buffers]
    views = [np.frombuffer(b, dtype=np.uint8) for b in buffers]

    def copy() -> None:
        for dst, src in zip(targets, views, strict=True):
            np.copyto(dst, src)

    return copy


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--table-reps", type=int, default=3)
    ap.add_argument("--no-tables", action="store_true")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    array_rows, table_rows, checks = [], [], []
    for n_q, depth in SHAPES:
        label = f"{n_q:,} q x {depth:,}"
        print(f"{label}: building data", file=sys.stderr)
        a = make_arrays(n_q, depth)
        docs = a["docs"]
        buf = np.empty_like(docs)
        qbufs = [np.empty_like(a[k]) for k in ("qq", "qd", "ql")]

        def memcpy(a: dict[str, Any] = a, buf: np.ndarray = buf, qbufs: list[np.ndarray] = qbufs) -> None:
            np.copyto(buf, a["docs"])
            for dst, k in zip(qbufs, ("qq", "qd", "ql"), strict=True):
                np.copyto(dst, a[k])

        args_ = (a["qids"], docs, a["qq"], a["qd"], a["ql"])
        built = table_from_arrays(*args_)
        qrels, run = as_dicts(a)
        fns: dict[str, Callable[[], Any]] = {
            "memcpy": memcpy,
            "table_from_arrays": lambda args_=args_: table_from_arrays(*args_),
            "table_from_arrays, check_duplicates=False": lambda args_=args_: table_from_arrays(
                *args_, check_duplicates=False
            ),
            "evaluate(None, table) (kernels only)": lambda built=built: evaluate(None, built, METRICS).mean,  # type: ignore[arg-type]
            "pytrec_eval (prebuilt dicts)": lambda qrels=qrels, run=run: pytrec_eval.RelevanceEvaluator(
                qrels, TREC
            ).evaluate(run),
        }
        med = timed(fns, args.reps)
        # the numbers agree
        ours = evaluate(qrels, run, METRICS, check_ids=False).mean
        from_arrays = evaluate(None, built, METRICS).mean  # type: ignore[arg-type]
        checks.append(all(abs(ours[k] - from_arrays[k]) < 1e-12 for k in ours))
        base = med["memcpy"]
        for k, v in med.items():
            ratio = v / base
            verdict = ""
            if k.startswith("table_from_arrays"):
                verdict = "met" if ratio <= TARGET else "NOT met"
            array_rows.append([label, k, f"{v * 1e3:,.1f}", f"{ratio:,.1f}x", verdict])
        if not args.no_tables:
            df = as_frame(run)
            arrow = pa.Table.from_pandas(df, preserve_index=False)
            arrow_dict = pa.table(
                {
                    "query_id": arrow["query_id"].dictionary_encode(),
                    "doc_id": arrow["doc_id"].dictionary_encode(),
                    "score": arrow["score"],
                }
            )
            tf: dict[str, Callable[[], Any]] = {
                "memcpy of the Arrow table's buffers": arrow_copy(arrow),
                "run_from_table(pandas DataFrame)": lambda df=df: run_from_table(df),
                "run_from_table(pyarrow Table)": lambda t=arrow: run_from_table(t),
                "evaluate(qrels, pandas DataFrame)": lambda df=df, q=qrels: (
                    evaluate(q, df, METRICS, check_ids=False).mean
                ),
                "evaluate(qrels, pyarrow Table)": lambda t=arrow, q=qrels: (
                    evaluate(q, t, METRICS, check_ids=False).mean
                ),
                "evaluate(qrels, pyarrow Table, dictionary ids)": lambda t=arrow_dict, q=qrels: (
                    evaluate(q, t, METRICS, check_ids=False).mean
                ),
                "pytrec_eval (prebuilt dicts)": fns["pytrec_eval (prebuilt dicts)"],
            }
            tmed = timed(tf, args.table_reps)
            for t in (df, arrow, arrow_dict):
                got = evaluate(qrels, t, METRICS, check_ids=False).mean
                checks.append(all(got[k] == ours[k] for k in ours))
            tbase = tmed["memcpy of the Arrow table's buffers"]
            for k, v in tmed.items():
                verdict = "" if k.startswith(("memcpy", "pytrec")) else ("met" if v / tbase <= TARGET else "NOT met")
                table_rows.append([label, k, f"{v * 1e3:,.1f}", f"{v / tbase:,.1f}x", verdict])
            del df, arrow, arrow_dict, tf
        del a, run, qrels, fns, built
        gc.collect()
    body = [
        "### Array and table input (`bench_arrays.py`, issue 21.2)",
        "",
        environment(command_line()),
        "",
        "CPU ms per call, median of interleaved repetitions in one process; ratio to the memory copy of the same "
        "input (`np.copyto` into preallocated arrays). Target: `table_from_arrays` within "
        f"{TARGET:.0f}x of the copy.",
        "",
        table(["shape", "call", "CPU ms", "x memcpy", "target"], array_rows),
        "",
    ]
    if table_rows:
        body += [
            "Runs as tables of one row per hit (str ids, as in a Parquet file), through `evaluate` (conversion "
            "to a columnar `Run`, then the metrics); ratio to a copy of the Arrow table's buffers:",
            "",
            table(["shape", "call", "CPU ms", "x buffer copy", "target"], table_rows),
            "",
        ]
    body += [
        f"Means equal between the dict path, the arrays and every table form: {'yes' if all(checks) else 'NO'}.",
    ]
    report = "\n".join(body)
    print(report)
    if args.write:
        write_section("bench_arrays", report)
    return 0 if all(checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
