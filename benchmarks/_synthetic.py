"""Shared by the benchmark scripts: MS MARCO-shaped synthetic data, and writing docs/benchmarks.md.

* ``num_queries`` queries (6,980 in MS MARCO dev), query ids drawn from MS MARCO's id range, as strings.
* qrels: every judgment has label 1; most queries have one relevant passage, some 2-4 (mean about 1.1).
* run: ``depth`` passages per query (1,000 in a BM25 dev run), passage ids as strings from the
  8,841,823-passage collection, float scores.
* For ``found_rate`` of the queries (70% here; BM25 finds about 60-85% at depth 1,000) the run holds the
  relevant passage(s) at random ranks, drawn log-uniformly over ``1..depth`` (about a third land in the
  top 10, like a real first-stage ranker's head-heavy distribution).
* Scores have no ties, not even as float32: each is a distinct multiple of 2**-18 in ``[0, 64)``, exact
  in float32. So the ranking is unambiguous for every tool (trec_eval compares C floats; ranx breaks ties
  its own way).

Two layouts of the same run (same contents, different dict insertion order):

* ``"random"``: each query's dict filled in random order relative to the scores (a run merged from
  shards, or built from a set);
* ``"ranked"``: each query's dict filled best-first (score descending), as a retriever returns hits.

Each layout gets its own str/float objects, created in the order they are inserted and each doc id
next to its score, as a file reader or a retriever creates them. (The heap layout matters at this size:
the cost of iterating the dicts, the "bare iteration" floor, depends on it.)
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import re
import statistics
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

NUM_PASSAGES = 8_841_823  # MS MARCO passage collection
MAX_QUERY_ID = 1_102_432  # MS MARCO query ids are below this
SCALE = 2.0**-18  # scores are distinct ints below 2**24 times this: exact in float32, so never tied
# Relevant passages per query: MS MARCO dev has 7,437 judgments over 6,980 queries (~1.07).
REL_COUNTS = (1, 2, 3, 4)
REL_PROBS = (0.93, 0.055, 0.01, 0.005)


@dataclass
class Dataset:
    qrels: dict[str, dict[str, int]]
    run_random: dict[str, dict[str, float]]
    run_ranked: dict[str, dict[str, float]]
    found_rate: float  # share of queries with at least one relevant passage in the run

    @property
    def num_entries(self) -> int:
        return sum(len(d) for d in (self.run_ranked or self.run_random).values())

    @property
    def num_judgments(self) -> int:
        return sum(len(d) for d in self.qrels.values())

    def layout(self, name: str) -> dict[str, dict[str, float]]:
        return {"random": self.run_random, "ranked": self.run_ranked}[name]


def _distinct_rows(rng: np.random.Generator, high: int, rows: int, cols: int) -> np.ndarray:
    """``(rows, cols)`` random ints in ``[0, high)``, distinct within each row (rows with a repeat redrawn)."""
    out = rng.integers(0, high, size=(rows, cols))
    while True:
        ordered = np.sort(out, axis=1)
        bad = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if not len(bad):
            return out
        out[bad] = rng.integers(0, high, size=(len(bad), cols))


def make_dataset(
    num_queries: int = 6_980,
    depth: int = 1_000,
    *,
    found_rate: float = 0.7,
    seed: int = 0,
    layouts: tuple[str, ...] = ("random", "ranked"),
) -> Dataset:
    """Build qrels and the run in the requested layouts (unrequested layouts are left empty)."""
    rng = np.random.default_rng(seed)
    kmax = max(REL_COUNTS)
    qids = [str(q) for q in rng.choice(MAX_QUERY_ID, size=num_queries, replace=False).tolist()]
    n_rel = rng.choice(REL_COUNTS, size=num_queries, p=REL_PROBS)
    found = rng.random(num_queries) < found_rate
    # Passage ids: the first kmax of each row are the candidates for the query's relevant passages, the
    # rest its retrieved passages in rank order (best first).
    ids = _distinct_rows(rng, NUM_PASSAGES, num_queries, depth + kmax)
    rel_ids, ranked_ids = ids[:, :kmax], ids[:, kmax:]
    # Scores: distinct integers below 2**24 scaled by 2**-18, i.e. distinct floats in [0, 64) that float32
    # represents exactly -- so there are no ties even after trec_eval's float conversion. Best first.
    scores = np.sort(_distinct_rows(rng, 2**24, num_queries, depth), axis=1)[:, ::-1]  # x SCALE below
    # Retrieved relevant passages: the first one of each "found" query, each further one with probability
    # 1/2, at log-uniform ranks in 1..depth (a later one may overwrite an earlier one at the same rank).
    for j in range(kmax):
        take = found & (j < n_rel) & ((j == 0) | (rng.random(num_queries) < 0.5))
        ranks = np.exp(rng.random(num_queries) * np.log(depth)).astype(np.int64).clip(1, depth)
        rows = np.flatnonzero(take)
        ranked_ids[rows, ranks[rows] - 1] = rel_ids[rows, j]

    qrels = {qid: {str(d): 1 for d in rel_ids[i, : n_rel[i]].tolist()} for i, qid in enumerate(qids)}
    runs: dict[str, dict[str, dict[str, float]]] = {"random": {}, "ranked": {}}
    chunk = 2_000  # convert to Python objects a block of queries at a time (bounded temporary memory)
    for lo in range(0, num_queries, chunk):
        hi = min(lo + chunk, num_queries)
        for layout in layouts:
            block_ids, block_scores = ranked_ids[lo:hi], scores[lo:hi]
            if layout == "random":
                perm = np.argsort(rng.random((hi - lo, depth)), axis=1)
                block_ids = np.take_along_axis(block_ids, perm, axis=1)
                block_scores = np.take_along_axis(block_scores, perm, axis=1)
            run = runs[layout]
            for qid, row_ids, row_scores in zip(qids[lo:hi], block_ids.tolist(), block_scores.tolist(), strict=True):
                # Each entry's str and float are created together, as a file reader or a retriever does.
                run[qid] = {str(d): s * SCALE for d, s in zip(row_ids, row_scores, strict=True)}
    return Dataset(qrels, runs["random"], runs["ranked"], float(found.mean()))


def make_beir_dataset(
    num_queries: int = 300, depth: int = 100, *, judged_per_query: int = 40, seed: int = 0
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """A BEIR-shaped graded set (NFCorpus-like): ``judged_per_query`` judgments per query, labels 0-2.

    The run retrieves ``depth`` docs per query; about a third of the judged docs are among them, at
    random ranks. Scores are distinct multiples of ``SCALE`` (no ties, even as float32).
    """
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(num_queries):
        ids = _distinct_rows(rng, 3_600, 1, depth + judged_per_query)[0].tolist()
        judged = ids[depth:]
        retrieved = ids[:depth]
        for j in rng.choice(depth, size=judged_per_query // 3, replace=False).tolist():
            retrieved[j] = judged[j % judged_per_query]
        retrieved = list(dict.fromkeys(retrieved))
        labels = rng.choice(3, size=judged_per_query, p=(0.3, 0.4, 0.3)).tolist()
        qrels[f"PLAIN-{q}"] = {f"MED-{d}": int(lab) for d, lab in zip(judged, labels, strict=True)}
        scores = np.sort(rng.choice(2**24, size=len(retrieved), replace=False))[::-1] * SCALE
        run[f"PLAIN-{q}"] = {f"MED-{d}": float(sc) for d, sc in zip(retrieved, scores.tolist(), strict=True)}
    return qrels, run


# --------------------------------------------------------------------------------------------------
# Reporting: environment line, markdown tables, and one section of docs/benchmarks.md per script
# --------------------------------------------------------------------------------------------------

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
SECTIONS = ("bench_metrics", "bench_growth", "bench_arrays", "bench_files", "bench_memory", "bench_import", "bench_cli")
DOC_HEADER = """# Benchmarks

Figures measured by the scripts in `benchmarks/` (see `benchmarks/README.md`). Each section below is
rewritten by its own script run with `--write`; everything between a section's `BEGIN`/`END` markers is
generated, so edit the scripts rather than the figures.
"""


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_LOAD_AT_IMPORT = os.getloadavg() if hasattr(os, "getloadavg") else None


def load_average() -> str:
    """The 1/5/15-minute load average when the script started."""
    return "n/a" if _LOAD_AT_IMPORT is None else " / ".join(f"{x:.2f}" for x in _LOAD_AT_IMPORT)


def environment(command: str) -> str:
    """The markdown lines saying how, when and where the figures were measured."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "\n".join(
        [
            f"- Command: `{command}`",
            f"- Date: {now}",
            f"- Versions: Python {platform.python_version()}, numpy {version('numpy')}, "
            f"rankbridge {version('rankbridge')}, pytrec_eval-terrier {version('pytrec-eval-terrier')}, "
            f"ranx {version('ranx')} (numba {version('numba')})",
            f"- Machine: {platform.system()} {platform.machine()}, nproc={os.cpu_count()}, {cpu_model()}; "
            f"load average at start {load_average()} (other processes share the machine; figures are wall time)",
        ]
    )


def command_line() -> str:
    script = Path(sys.argv[0])
    with contextlib.suppress(ValueError):
        script = script.resolve().relative_to(Path.cwd())
    return " ".join([".venv/bin/python", str(script), *sys.argv[1:]])


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace the ``name`` section of docs/benchmarks.md (creating the file or section as needed)."""
    assert name in SECTIONS, name
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    block = f"{begin}\n{body.strip()}\n{end}"
    text = doc.read_text() if doc.exists() else DOC_HEADER
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        # Keep the sections in a fixed order: insert before the first later section that exists.
        later = [f"<!-- BEGIN {s} -->" for s in SECTIONS[SECTIONS.index(name) + 1 :]]
        at = min((text.index(m) for m in later if m in text), default=None)
        if at is None:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        else:
            text = text[:at] + block + "\n\n" + text[at:]
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
    print(f"wrote the {name} section of {doc}")
