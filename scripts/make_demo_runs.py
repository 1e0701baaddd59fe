"""Regenerate the small demo qrels and runs shipped in src/rankbridge/data/demo (deterministic).

Placeholder data for `rankbridge demo` until the full demo golden set lands: 12 queries over a
60-chunk corpus, graded labels 0-3, and three strategies of different quality.
"""

from __future__ import annotations

import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "rankbridge" / "data" / "demo"


def main() -> None:
    rng = random.Random(7)
    docs = [f"chunk-{i:03d}" for i in range(60)]
    qrels: dict[str, dict[str, int]] = {}
    for q in range(1, 13):
        qid = f"q{q:02d}"
        judged = rng.sample(docs, 6)
        qrels[qid] = {d: label for d, label in zip(judged, [3, 2, 1, 1, 0, 0], strict=True)}
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "qrels.txt", "w") as fh:
        fh.write("# rankbridge demo qrels: query iteration chunk label (0-3)\n")
        for qid, judged in qrels.items():
            for d, label in judged.items():
                fh.write(f"{qid} 0 {d} {label}\n")
    # quality = chance that each relevant chunk is pulled towards the top
    for name, quality in (("bm25", 0.45), ("dense", 0.6), ("hybrid", 0.75)):
        with open(OUT / f"run.{name}.txt", "w") as fh:
            for qid, judged in qrels.items():
                pool = docs[:]
                rng.shuffle(pool)
                scored = {d: rng.random() for d in pool[:20]}
                for d, label in judged.items():
                    if label > 0 and rng.random() < quality:
                        scored[d] = 0.55 + 0.2 * label * rng.random()
                ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
                for rank, (d, s) in enumerate(ranked, 1):
                    fh.write(f"{qid} Q0 {d} {rank} {s:.6f} {name}\n")


if __name__ == "__main__":
    main()
