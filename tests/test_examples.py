"""Every script in examples/ runs offline in a fresh folder and prints what it promises."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

#: The packages each example imports, beyond rankbridge's core.
NEEDS = {
    "llamaindex_app": ["llama_index.core", "llama_index.retrievers.bm25"],
    "langchain_app": ["langchain_core", "langchain_community.retrievers", "rank_bm25"],
    "live_capture": ["llama_index.core", "llama_index.retrievers.bm25", "langchain_core", "rank_bm25"],
    "ranking_plus_ragas": ["ragas", "datasets"],
    "ci_gate": [],
}


def run_example(name: str, tmp_path: Path) -> str:
    """Run ``examples/<name>.py`` with cwd = a temp dir, no tracing, no telemetry; return its stdout."""
    for module in NEEDS[name]:
        pytest.importorskip(module)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LANGSMITH", "LANGCHAIN_", "OPENAI_")) and not k.startswith("PYTEST_")
    }
    env.update(
        RAGAS_DO_NOT_TRACK="true",
        XDG_DATA_HOME=str(tmp_path / "xdg"),  # ragas writes a user id file there even with tracking off
        HF_DATASETS_OFFLINE="1",
        HF_HUB_OFFLINE="1",
        PYTHONWARNINGS="error::DeprecationWarning:rankbridge,error::UserWarning:rankbridge",
    )
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stdout


def _metric(out: str, pattern: str) -> float:
    found = re.search(pattern, out)
    assert found, f"{pattern!r} not in:\n{out}"
    return float(found.group(1))


def test_every_example_is_tested() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.py") if p.stem != "vitamins") == sorted(NEEDS)
    readme = (EXAMPLES / "README.md").read_text()
    assert all(f"{name}.py" in readme for name in NEEDS)


def test_llamaindex_app(tmp_path: Path) -> None:
    out = run_example("llamaindex_app", tmp_path)
    assert "12 queries: 12 succeeded, 0 failed." in out
    ndcg = _metric(out, r"ndcg@5\s+(\d\.\d+)\s+95% CI \[\d\.\d+, \d\.\d+\]")
    assert 0.7 < ndcg <= 1.0  # BM25 finds most answers on this small, keyword-friendly set
    assert "weakest queries (ndcg@5):" in out
    assert [p.name for p in tmp_path.iterdir() if p.name != "xdg"] == []  # leaves no files behind


def test_langchain_app(tmp_path: Path) -> None:
    out = run_example("langchain_app", tmp_path)
    assert "bm25: 12 queries: 12 succeeded, 0 failed." in out
    assert "dense: 12 queries: 12 succeeded, 0 failed." in out
    assert "2 runs on 12 queries; baseline 'bm25'" in out
    assert re.search(r"dense vs bm25 on ndcg@5: [+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\], Holm-adjusted p=", out)


def test_live_capture_equals_running_the_retriever(tmp_path: Path) -> None:
    out = run_example("live_capture", tmp_path)
    assert "llamaindex capture: {'queries': 12, 'matched_by_text': 12}" in out
    assert "langchain capture: {'queries': 12, 'matched_by_id': 12}" in out
    captured = _metric(out, r"llamaindex-app: ndcg@5=(\d\.\d+)")
    # The same BM25 retriever run directly (llamaindex_app.py) scores the same: capture changes nothing.
    direct = _metric(run_example("llamaindex_app", tmp_path), r"ndcg@5\s+(\d\.\d+)")
    assert captured == direct
    assert _metric(out, r"langchain-app: ndcg@5=(\d\.\d+)") > 0
    # no qrels: the captured run is graded by the (stand-in) LLM judge and scored on those grades
    assert 0 < _metric(out, r"graded by llm-judge:stand-in:relevance/v1: ndcg@5=(\d\.\d+)") <= 1


def test_ranking_plus_ragas(tmp_path: Path) -> None:
    out = run_example("ranking_plus_ragas", tmp_path)
    lines = out.splitlines()
    header = lines[0].split()
    assert header == ["query", "ndcg@3", "precision@3", "recall@3", "ragas_id_precision", "ragas_id_recall"]
    rows = [line.split() for line in lines[1:14]]
    assert [r[0] for r in rows] == [f"q{i:02d}" for i in range(1, 13)] + ["mean"]
    for row in rows:
        values = dict(zip(header[1:], map(float, row[1:]), strict=True))
        # With 3 hits retrieved, RAGAS' ID-based recall is recall@3, and its precision is at least precision@3.
        assert values["ragas_id_recall"] == values["recall@3"]
        assert values["ragas_id_precision"] >= values["precision@3"]
    assert "12 queries evaluated" in out


def test_ci_gate(tmp_path: Path) -> None:
    out = run_example("ci_gate", tmp_path)
    assert "saved baseline 'main' as record 1" in out
    assert "passed=False, exit code 1" in out
    blocks = out.split("$ rankbridge gate")
    assert len(blocks) == 3
    assert "main.txt" in blocks[1] and "PASS ndcg@10" in blocks[1] and blocks[1].rstrip().endswith("exit code: 0")
    assert "branch.txt" in blocks[2] and "FAIL ndcg@10" in blocks[2] and blocks[2].rstrip().endswith("exit code: 1")
    assert "is significant (p=" in blocks[2]
