"""A CI quality gate: save a baseline, then fail the build when a change makes retrieval significantly worse.

The gate fails only when the metric dropped by more than ``max_drop`` *and* a paired test on the
per-query values says the drop is real -- so it neither lets a regression through nor flakes on noise.
Shown twice: from Python (:func:`rankbridge.gate`) and as the command a CI job runs
(``rankbridge gate``, exit code 1 on a failed gate). In a test suite, use the pytest plugin's
``rankbridge_gate`` fixture instead (see examples/README.md).

Runs offline with only rankbridge installed: ``python examples/ci_gate.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

from vitamins import CORPUS, golden_set  # the examples' shared tiny golden set

import rankbridge as rb
from rankbridge.analysis import gate
from rankbridge.io import write_qrels, write_run


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2}


def search_main(query: str, k: int) -> list[tuple[str, float]]:
    """The retriever on the main branch: ranks documents by the words they share with the query."""
    q = _words(query)
    scored = sorted(((len(q & _words(text)), doc_id) for doc_id, text in CORPUS.items()), reverse=True)
    return [(doc_id, float(score)) for score, doc_id in scored[:k]]


def search_branch(query: str, k: int) -> list[tuple[str, float]]:
    """A "harmless refactor" of the tokenizer that only looks at the query's first two words."""
    return search_main(" ".join(query.split()[:2]), k)


def main() -> None:
    golden = golden_set()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store_path = folder / "history.sqlite"

        # On main: evaluate and save the baseline (in CI: `rankbridge gate ... --save main` on the main branch).
        main_run = rb.run_retriever(search_main, golden, k=10, name="main", progress=False)
        with rb.RunStore(store_path) as store:
            record = store.save(rb.evaluate(golden.qrels, main_run, ["ndcg@10", "recall@10"]), run=main_run)
        print(f"saved baseline 'main' as record {record} in {store_path.name}")

        # On a branch: gate the new run against the newest 'main' record.
        branch_run = rb.run_retriever(search_branch, golden, k=10, name="branch", progress=False)
        result = gate(branch_run, "main", golden.qrels, metric="ndcg@10", max_drop=0.01, store=store_path)
        print("\nfrom Python:")
        print(result)
        print(f"passed={result.passed}, exit code {result.exit_code}")

        # The same from the command line, as a CI step runs it.
        write_qrels(golden.qrels, folder / "qrels.txt")
        write_run(branch_run, folder / "branch.txt")
        write_run(main_run, folder / "main.txt")
        for run_file in ("main.txt", "branch.txt"):
            cmd = [sys.executable, "-m", "rankbridge", "gate", "--baseline", "main", "--store", str(store_path)]
            cmd += ["--qrels", str(folder / "qrels.txt"), str(folder / run_file), "-m", "ndcg@10", "--max-drop", "0.01"]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            print(f"\n$ rankbridge gate --baseline main ... {run_file} -m ndcg@10 --max-drop 0.01")
            print(proc.stdout.rstrip())
            print(f"exit code: {proc.returncode}")


if __name__ == "__main__":
    main()
