"""From TREC files on disk to the means, against pytrec_eval's own parse + evaluate (issue 21.6).

MS MARCO-shaped data (``_synthetic.make_dataset``, rank-ordered run files as a ranker writes them:
``qid Q0 doc rank score tag``) written to a temporary directory, then, in one process, interleaved, CPU
time, medians:

* rankbridge: ``evaluate(read_qrels(q), read_run(r), METRICS)`` (default settings, id check on);
* pytrec_eval: ``parse_qrel`` + ``parse_run`` + ``RelevanceEvaluator(qrels, measures).evaluate(run)``;
* rankbridge's reading alone (``read_qrels`` + ``read_run``) and its evaluation alone (files already read);
* floors, for context: a bare ``for line in f: line.split()`` loop over the run file, one ``str.split`` per
  block of the run file as the reader splits it, and ``float()`` of every score string (already split). Split
  + float is what any reader of the file's text in Python pays before it groups or evaluates anything: its
  ratio to pytrec_eval's time bounds the speed-up a Python reader can reach.

``--stages`` times instead the stages of ``read_run`` one after the other (and the alternatives measured and
not kept: 4 M-character blocks, a numpy tokenizer over the bytes, numpy's float parsing, a columnar Run built
by the reader), printing a table; docs/benchmarks.md quotes it below the generated section.

Usage: ``.venv/bin/python benchmarks/bench_files.py [--sizes 10000x10,100000x10,6980x1000] [--reps 3] [--write]
[--stages]``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
import pytrec_eval

from _synthetic import command_line, environment, make_dataset, median, table, write_section
from rankbridge.evaluate import evaluate
from rankbridge.io import trec
from rankbridge.io.trec import read_qrels, read_run
from rankbridge.types import Run, RunColumns

METRICS = ["ndcg@10", "mrr@10", "P@5", "recall@100", "map@100", "hit_rate@10"]
TREC = {"ndcg_cut_10", "recip_rank", "P_5", "recall_100", "map_cut_100", "success_10"}
TARGET = 2.0  # rankbridge at least this many times faster than pytrec_eval, end to end


def write_files(n_q: int, depth: int, where: Path) -> tuple[Path, Path, int]:
    ds = make_dataset(n_q, depth, layouts=("ranked",))
    run_path, qrels_path = where / f"run_{n_q}x{depth}.txt", where / f"qrels_{n_q}x{depth}.txt"
    with open(run_path, "w") as f:
        for q, docs in ds.run_ranked.items():
            f.writelines(f"{q} Q0 {d} {r} {s!r} bm25\n" for r, (d, s) in enumerate(docs.items(), 1))
    with open(qrels_path, "w") as f:
        for q, docs in ds.qrels.items():
            f.writelines(f"{q} 0 {d} {label}\n" for d, label in docs.items())
    return qrels_path, run_path, ds.num_entries


def _columnar_run(path: Path) -> Run:
    """The alternative not kept: the reader's columns as a RunColumns (a set per query checks repeats)."""
    qids, counts, (docs, score_blocks), tag = trec._bulk_columns(path, 6, (2, 4), trec._scores)
    offsets = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    bounds = offsets.tolist()
    distinct = list(map(len, map(set, map(docs.__getitem__, map(slice, bounds[:-1], bounds[1:])))))
    index = dict(zip(qids, range(len(qids)), strict=True))
    assert distinct == counts and len(index) == len(qids), "the benchmark's files repeat no pair or query"
    run = Run(name=tag)
    run._columns = RunColumns(qids, offsets, docs, np.concatenate(score_blocks), False, index)
    return run


def stages(qrels_path: Path, run_path: Path, reps: int) -> list[list[str]]:
    """CPU s (medians) of read_run's stages one after the other, and of the alternatives not kept."""
    width = 7  # six fields and the end-of-line token

    def blocks_only() -> None:
        for _ in trec._token_blocks(run_path, 6):
            pass

    def blocks_float() -> None:
        for tokens, _ in trec._token_blocks(run_path, 6):
            np.fromiter(map(float, tokens[4::width]), dtype=np.float64)

    def blocks_groupby() -> None:
        for tokens, _ in trec._token_blocks(run_path, 6):
            for _, lines in groupby(tokens[0::width]):
                len(list(lines))

    def split_4m() -> None:
        with open(run_path) as fr:
            while block := fr.read(1 << 22):
                block.split()

    def numpy_tokens() -> None:
        with open(run_path, "rb") as fr:
            data = np.frombuffer(fr.read(), dtype=np.uint8)
        space = data <= 32
        np.flatnonzero(space[:-1] & ~space[1:])

    with open(run_path) as fr:
        score_texts = [line.split()[4] for line in fr]
    joined = " ".join(score_texts)
    as_bytes = np.array(score_texts, dtype="S")
    times: dict[str, list[float]] = {}

    def timed(label: str, f: Callable[..., Any], *args: Any) -> Any:
        gc.collect()
        t0 = time.process_time()
        out = f(*args)
        times.setdefault(label, []).append(time.process_time() - t0)
        return out

    def to_floats(blocks: list[np.ndarray]) -> list[float]:
        return np.concatenate(blocks).tolist()  # type: ignore[no-any-return]

    def as_run(data: dict[str, dict[str, float]], name: str) -> Run:
        return Run.from_scores(data, name=name, copy=False)

    def from_string(text: str) -> np.ndarray:
        return np.fromstring(text, sep=" ")

    qrels = read_qrels(qrels_path)
    for _ in range(reps):
        timed("read the blocks, check them, one str.split each (tokens dropped)", blocks_only)
        timed("read, check, split + float() of every score", blocks_float)
        timed("read, check, split + groupby over the query column", blocks_groupby)
        qids, counts, (docs, score_blocks), tag = timed(
            "all of _bulk_columns (split, groupby, doc column kept, float())",
            trec._bulk_columns,
            run_path,
            6,
            (2, 4),
            trec._scores,
        )
        values = timed("scores to Python floats (tolist)", to_floats, score_blocks)
        out = timed("one dict(zip(...)) per query", trec._grouped, qids, counts, docs, values)
        timed("Run.from_scores(copy=False)", as_run, out, tag)
        del qids, counts, docs, score_blocks, values, out
        timed("not kept: one str.split per 4 M-character block", split_4m)
        timed("not kept: numpy tokenizer (byte mask + flatnonzero of token starts)", numpy_tokens)
        timed("not kept: np.fromstring of the scores (joined by spaces)", from_string, joined)
        timed("not kept: bytes array of the scores .astype(float64)", as_bytes.astype, np.float64)
        timed("for reference: float() of every score string", np.fromiter, map(float, score_texts), np.float64)
        timed("not kept: columnar Run, read only", _columnar_run, run_path)
        timed("for reference: read_run (dicts), read only", read_run, run_path)
        timed("not kept: columnar Run, read + evaluate", lambda: evaluate(qrels, _columnar_run(run_path), METRICS))
        timed("for reference: read_run (dicts), read + evaluate", lambda: evaluate(qrels, read_run(run_path), METRICS))
    return [[k, f"{median(v):.3f}"] for k, v in times.items()]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000x10,100000x10,6980x1000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--stages", action="store_true")
    args = ap.parse_args()
    if args.stages:
        with tempfile.TemporaryDirectory() as tmp:
            for size in args.sizes.split(","):
                n_q, depth = (int(x) for x in size.split("x"))
                qrels_path, run_path, n = write_files(n_q, depth, Path(tmp))
                print(f"{n_q:,} q x {depth:,} ({n:,} lines), {environment(command_line())}\n")
                print(
                    table(
                        [f"stage of read_run ({n_q:,} q x {depth:,})", "CPU s"], stages(qrels_path, run_path, args.reps)
                    )
                )
        return 0
    rows, verdicts, agree = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            n_q, depth = (int(x) for x in size.split("x"))
            print(f"{size}: writing files", file=sys.stderr)
            qrels_path, run_path, n = write_files(n_q, depth, Path(tmp))

            def ours(q: Path = qrels_path, r: Path = run_path) -> dict[str, float]:
                return evaluate(read_qrels(q), read_run(r), METRICS).mean

            def reference(q: Path = qrels_path, r: Path = run_path) -> Any:
                with open(q) as fq, open(r) as fr:
                    qrels, run = pytrec_eval.parse_qrel(fq), pytrec_eval.parse_run(fr)
                return pytrec_eval.RelevanceEvaluator(qrels, TREC).evaluate(run)

            def reading(q: Path = qrels_path, r: Path = run_path) -> Any:
                return read_qrels(q), read_run(r)

            read_q, read_r = reading()

            def evaluating(q: Any = read_q, r: Any = read_r) -> Any:
                r._cache.clear()  # the table is built again, as in a fresh evaluate
                return evaluate(q, r, METRICS).mean

            def bare(r: Path = run_path) -> None:
                with open(r) as fr:
                    for line in fr:
                        line.split()

            def split_blocks(r: Path = run_path) -> None:
                with open(r) as fr:
                    while block := fr.read(trec._BLOCK):
                        block.split()

            with open(run_path) as fr:
                score_texts = [line.split()[4] for line in fr]

            def floats(texts: list[str] = score_texts) -> None:
                np.fromiter(map(float, texts), dtype=np.float64, count=len(texts))  # as read_run converts them

            fns: dict[str, Callable[[], Any]] = {
                "rankbridge: read_qrels + read_run + evaluate": ours,
                "pytrec_eval: parse_qrel + parse_run + evaluate": reference,
                "rankbridge: read_qrels + read_run only": reading,
                "rankbridge: evaluate only (files read)": evaluating,
                "floor: bare split loop over the run file": bare,
                "floor: one str.split per block of the run file": split_blocks,
                "floor: float() of every score string": floats,
            }
            times: dict[str, list[float]] = {k: [] for k in fns}
            for _ in range(args.reps):
                for k, f in fns.items():
                    gc.collect()
                    t0 = time.process_time()
                    f()
                    times[k].append(time.process_time() - t0)
            med = {k: median(v) for k, v in times.items()}
            got, ref = ours(), reference()
            mean_ref = {
                "ndcg@10": "ndcg_cut_10",
                "precision@5": "P_5",
                "recall@100": "recall_100",
                "map@100": "map_cut_100",
                "hit_rate@10": "success_10",
            }
            agree.append(
                all(
                    abs(got[ours_name] - sum(v[t] for v in ref.values()) / n_q) < 1e-9
                    for ours_name, t in mean_ref.items()
                )
            )
            label = f"{n_q:,} q x {depth:,} ({n:,} lines)"
            for k, v in med.items():
                rows.append([label, k, f"{v:.3f}", f"{v * 1e9 / n:,.0f}"])
            speedup = (
                med["pytrec_eval: parse_qrel + parse_run + evaluate"]
                / med["rankbridge: read_qrels + read_run + evaluate"]
            )
            floor = med["floor: one str.split per block of the run file"] + med["floor: float() of every score string"]
            bound = med["pytrec_eval: parse_qrel + parse_run + evaluate"] / floor
            verdicts.append([label, f"{speedup:.2f}x", "met" if speedup >= TARGET else "NOT met", f"{bound:.2f}x"])
            del read_q, read_r, score_texts
            gc.collect()
    body = "\n".join(
        [
            "### From TREC files (`bench_files.py`, issue 21.6)",
            "",
            environment(command_line()),
            "",
            "CPU seconds per call (and ns per run line), median of interleaved repetitions in one process:",
            "",
            table(["size", "call", "CPU s", "ns per line"], rows),
            "",
            f"Target: rankbridge end to end >= {TARGET:.0f}x faster than pytrec_eval end to end.",
            "",
            table(
                [
                    "size",
                    "pytrec_eval time / rankbridge time",
                    "target",
                    "pytrec_eval time / (block split + float() floors)",
                ],
                verdicts,
            ),
            "",
            f"Means equal to pytrec_eval's (1e-9): {'yes' if all(agree) else 'NO'}.",
        ]
    )
    print(body)
    if args.write:
        write_section("bench_files", body)
    return 0 if all(agree) else 1


if __name__ == "__main__":
    raise SystemExit(main())
