"""The main job, end to end: `rankbridge demo` in a temporary directory, offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rankbridge as rb
from rankbridge.cli import main
from rankbridge.demo import demo_golden_set, run_demo
from rankbridge.store import RunStore

pytest.importorskip("llama_index.retrievers.bm25", reason="the demo needs the dev extra (LlamaIndex BM25)")
pytest.importorskip("langchain_community.retrievers", reason="the demo needs the dev extra (LangChain BM25)")

STRATEGIES = {"llamaindex-bm25", "langchain-bm25", "langchain-vector", "rrf(llamaindex-bm25+vector)"}


def test_shipped_golden_set_is_complete() -> None:
    golden = demo_golden_set()
    assert len(golden) == 108
    assert golden.corpus is not None and len(golden.corpus) == 252
    assert {q.category for q in golden.queries} == {
        "overview",
        "pricing",
        "limits",
        "setup",
        "troubleshooting",
        "security",
        "integrations",
    }
    assert all(q.reference for q in golden.queries)
    labels = {label for judged in golden.qrels.values() for label in judged.values()}
    assert labels == {0, 1, 2, 3}
    # every judged doc exists in the corpus
    assert all(doc in golden.corpus for judged in golden.qrels.values() for doc in judged)


def test_demo_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo-out"
    assert main(["demo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for name in STRATEGIES:
        assert name in printed
    assert "ndcg@10" in printed
    # run files: one per strategy, readable, one line per question
    run_files = sorted(p.name for p in (out / "runs").glob("*.jsonl"))
    assert len(run_files) == 4
    for path in (out / "runs").glob("*.jsonl"):
        run = rb.load_run(path)
        assert len(run) == 108 and not run.errors
    # history: every strategy saved, reloadable with the same numbers
    with RunStore(out / "history.sqlite", create=False) as store:
        records = store.list()
        assert {r.name for r in records} == STRATEGIES
        bm25 = store.load(store.latest("llamaindex-bm25").id)  # type: ignore[union-attr]
    golden = demo_golden_set()
    direct = rb.evaluate(golden.qrels, rb.load_run(out / "runs" / "llamaindex-bm25.jsonl"), ["ndcg@10"])
    assert bm25.mean["ndcg@10"] == pytest.approx(direct.mean["ndcg@10"], abs=1e-12)


def test_demo_result_has_ragas_id_columns_and_sane_numbers(tmp_path: Path) -> None:
    result = run_demo(out=tmp_path, progress=False, log=lambda _: None)
    ev = result.comparison.evaluations["llamaindex-bm25"]
    assert "ragas.id_based_context_recall" in ev.values
    # RAGAS id recall over the top 10 is set recall of relevant ids: it equals our recall@10 per query
    assert ev.values["ragas.id_based_context_recall"] == pytest.approx(ev.values["recall@10"], abs=1e-12)
    means = {name: result.comparison.evaluations[name].mean["ndcg@10"] for name in STRATEGIES}
    assert all(0.3 < m < 1.0 for m in means.values()), means
    payload = json.dumps(result.comparison.to_dict())
    assert "llamaindex-bm25" in payload
