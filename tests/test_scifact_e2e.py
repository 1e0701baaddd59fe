"""End to end on BEIR SciFact: each framework's BM25 over the corpus, the 300 test queries through the
runner, evaluated against the test qrels, and the run checked against the framework called directly."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import rankbridge as rb
from rankbridge.runner import arun_retriever, run_retriever, summarize

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
METRICS = ["ndcg@10", "recall@10", "mrr@10"]


@pytest.fixture(scope="module")
def golden() -> rb.GoldenSet:
    if not (DATA / "corpus.jsonl").exists():
        pytest.skip(f"SciFact not found at {DATA} (the shared data folder beside the repository)")
    g = rb.GoldenSet.from_beir(str(DATA), split="test")
    assert len(g) == 300 and g.corpus is not None and len(g.corpus) == 5183
    return g


def _text(doc: dict[str, Any]) -> str:
    return f"{doc.get('title', '')} {doc['text']}".strip()


def _check(golden: rb.GoldenSet, run: rb.Run, direct: dict[str, list[str]], lo: float, hi: float) -> None:
    assert run.errors == {}, summarize(run)
    assert sorted(run) == sorted(q.id for q in golden.queries)
    mismatched = [qid for qid in direct if run.ranking(qid) != direct[qid]]
    assert mismatched == [], f"{len(mismatched)} queries differ from the framework, e.g. {mismatched[:3]}"
    assert all(len(run.ranking(qid)) == 10 for qid in run)
    ev = rb.evaluate(golden.qrels, run, METRICS)
    assert ev.num_queries == 300 and not ev.missing and not ev.failed
    assert lo < ev.mean["ndcg@10"] < hi, ev.mean
    assert 0 < ev.mean["mrr@10"] <= 1 and 0 < ev.mean["recall@10"] <= 1


def test_llamaindex_bm25_on_scifact(golden: rb.GoldenSet) -> None:
    pytest.importorskip("llama_index.retrievers.bm25", reason="llama-index-retrievers-bm25 not installed")
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    assert golden.corpus is not None
    nodes = [TextNode(id_=d, text=_text(doc)) for d, doc in golden.corpus.items()]
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
    run = run_retriever(bm25, golden, k=10, progress=False, name="li-bm25")
    direct = {q.id: [n.node.node_id for n in bm25.retrieve(q.text)] for q in golden.queries}
    _check(golden, run, direct, 0.60, 0.76)  # bm25s reports ~0.69 nDCG@10 on SciFact
    scores = {q.id: [n.score for n in bm25.retrieve(q.text)] for q in golden.queries[:20]}
    assert all([h.score for h in run.hits(qid)] == pytest.approx(s) for qid, s in scores.items())
    again = asyncio.run(arun_retriever(bm25, golden, k=10, progress=False))
    assert {q: again.ranking(q) for q in again} == {q: run.ranking(q) for q in run}


def test_langchain_bm25_on_scifact(golden: rb.GoldenSet) -> None:
    pytest.importorskip("langchain_community.retrievers", reason="langchain-community not installed")
    pytest.importorskip("rank_bm25", reason="rank-bm25 not installed")
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document

    assert golden.corpus is not None
    docs = [Document(page_content=_text(doc), id=d) for d, doc in golden.corpus.items()]
    bm25 = BM25Retriever.from_documents(docs, k=10)
    run = run_retriever(bm25, golden.queries, k=10, progress=False, name="lc-bm25")
    # direct: LangChain's own batch (a thread pool over invoke), the same documents per query
    results = bm25.batch([q.text for q in golden.queries], config={"max_concurrency": 8})
    direct = {q.id: [d.id for d in docs_] for q, docs_ in zip(golden.queries, results, strict=True)}
    _check(golden, run, direct, 0.45, 0.60)  # whitespace tokens, no stemming: below bm25s
    assert all(h.score is None for qid in run for h in run.hits(qid))  # LangChain gives no score
