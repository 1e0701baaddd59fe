"""The main job, end to end: `rankbridge demo` in a temporary directory, offline, on a real embedding model."""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rankbridge as rb
from rankbridge.cli import main
from rankbridge.demo import (
    BASELINE,
    DENSE,
    HYBRID,
    LANGCHAIN_BM25,
    RERANKED,
    DemoResult,
    TrigramEmbedding,
    build_strategies,
    demo_golden_set,
    load_wordllama,
    run_demo,
    wordllama_embedding,
)
from rankbridge.fusion import reciprocal_rank_fusion
from rankbridge.store import RunStore

pytest.importorskip("llama_index.retrievers.bm25", reason="the demo needs the demo extra (LlamaIndex BM25)")
pytest.importorskip("langchain_community.retrievers", reason="the demo needs the demo extra (LangChain BM25)")
pytest.importorskip("wordllama", reason="the demo needs the demo extra (wordllama)")

README = Path(__file__).resolve().parents[1] / "README.md"
STRATEGIES = {BASELINE, RERANKED, LANGCHAIN_BM25, DENSE, HYBRID}
CANDIDATES = 20  # the demo's reranker sees BM25's top 2 * k


class NetworkUsed(AssertionError):
    pass


def _no_network(*args: Any, **kwargs: Any) -> Any:
    raise NetworkUsed(f"network access attempted: {args!r}")


@pytest.fixture(scope="module")
def offline() -> Iterator[None]:
    """Any connection or name lookup fails the test (the demo must not need one)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", _no_network)
        mp.setattr(socket.socket, "connect_ex", _no_network)
        mp.setattr(socket, "create_connection", _no_network)
        mp.setattr(socket, "getaddrinfo", _no_network)
        yield


@pytest.fixture(scope="module")
def golden() -> rb.GoldenSet:
    return demo_golden_set()


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory, offline: None) -> tuple[Path, str]:
    """`rankbridge demo` once, as `make demo` runs it: the output folder and what it printed."""
    out = tmp_path_factory.mktemp("demo") / "demo-out"
    buf = io.StringIO()  # capsys is function-scoped: redirect by hand
    with contextlib.redirect_stdout(buf):
        assert main(["demo", "--out", str(out)]) == 0
    return out, buf.getvalue()


@pytest.fixture(scope="module")
def second_run(first_run: tuple[Path, str], offline: None) -> DemoResult:
    """A second demo into the same folder (a second `make demo`)."""
    out, _ = first_run
    return run_demo(out=out, progress=False, log=lambda _: None)


def test_shipped_golden_set_is_complete(golden: rb.GoldenSet) -> None:
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


# == the embedding model ==========================================================================
def test_wordllama_ships_its_weights_under_mit_and_loads_offline(offline: None) -> None:
    dist = metadata.distribution("wordllama")
    assert "MIT" in (dist.metadata["License"] or "")
    licence = [f for f in dist.files or [] if "licen" in str(f).lower()]
    assert licence and "MIT License" in licence[0].read_text()
    weights = [f for f in dist.files or [] if str(f).endswith("l2_supercat_256.safetensors")]
    assert weights and 10e6 < Path(str(dist.locate_file(weights[0]))).stat().st_size < 30e6
    load_wordllama.cache_clear()  # load again here, with the network blocked
    model = load_wordllama()
    vectors = model.embed(["How much does storage cost?", "pricing of storage buckets", "the kernel panicked"])
    assert vectors.shape == (3, 256)


def test_wordllama_knows_synonyms_that_trigrams_do_not(offline: None) -> None:
    embed = wordllama_embedding()
    trigram = wordllama_embedding(TrigramEmbedding())

    def cos(e: Any, a: str, b: str) -> float:
        return float(np.dot(e.get_query_embedding(a), e.get_text_embedding(b)))

    # no shared trigram between "cost" and "price": only a real model puts them close
    assert cos(embed, "cost", "price") > cos(embed, "cost", "kernel") + 0.1
    assert abs(cos(trigram, "cost", "price")) < 0.2


def test_wordllama_dense_ranking_beats_the_trigram_double(golden: rb.GoldenSet, offline: None) -> None:
    real = build_strategies(golden)[DENSE]
    double = build_strategies(golden, embed_model=wordllama_embedding(TrigramEmbedding()))[DENSE]
    runs = {
        name: rb.run_retriever(r, golden, k=None, name=name, progress=False, id_from="id")
        for name, r in {"wordllama": real, "trigram": double}.items()
    }
    differ = sum(runs["wordllama"].ranking(q.id) != runs["trigram"].ranking(q.id) for q in golden.queries)
    assert differ > len(golden) // 2
    means = {name: rb.evaluate(golden, run, ["ndcg@10"]).mean["ndcg@10"] for name, run in runs.items()}
    assert means["wordllama"] > means["trigram"] + 0.05, means


# == the reranker =================================================================================
def test_reranker_run_is_the_engines_own_output_and_keeps_bm25_top_20(golden: rb.GoldenSet, offline: None) -> None:
    from llama_index.core.schema import QueryBundle

    engine = build_strategies(golden)[RERANKED]
    run = rb.run_retriever(engine, golden, k=None, name=RERANKED, progress=False, id_from="id")
    stage = run.to_stage("retrieved")
    reordered = 0
    for q in golden.queries[:40]:
        expected = [n.node.node_id for n in engine.retrieve(QueryBundle(q.text))]
        assert run.ranking(q.id) == expected
        bm25 = [n.node.node_id for n in engine.retriever.retrieve(q.text)]
        assert stage.ranking(q.id) == bm25 and len(bm25) == CANDIDATES
        assert len(expected) == 10 and set(expected) <= set(bm25)
        reordered += expected != bm25[:10]
    assert reordered > 20  # the reranker really reorders BM25's list


# == the demo =====================================================================================
def test_demo_end_to_end(first_run: tuple[Path, str], golden: rb.GoldenSet) -> None:
    out, printed = first_run
    for name in STRATEGIES:
        assert name in printed
    assert "ndcg@10" in printed
    assert "Recommended:" in printed and "With and without reranker" in printed
    # run files: one per strategy, readable, one line per question
    run_files = sorted(p.name for p in (out / "runs").glob("*.jsonl"))
    assert len(run_files) == len(STRATEGIES)
    for path in (out / "runs").glob("*.jsonl"):
        run = rb.load_run(path)
        assert len(run) == 108 and not run.errors
        assert max(len(run.ranking(q)) for q in run.query_ids()) == 10  # every compared list is k deep
    # history: every strategy saved, reloadable with the same numbers
    with RunStore(out / "history.sqlite", create=False) as store:
        records = store.list()
        assert {r.name for r in records} == STRATEGIES
        bm25 = store.load(store.latest(BASELINE).id)  # type: ignore[union-attr]
    direct = rb.evaluate(golden.qrels, rb.load_run(out / "runs" / f"{BASELINE}.jsonl"), ["ndcg@10"])
    assert bm25.mean["ndcg@10"] == pytest.approx(direct.mean["ndcg@10"], abs=1e-12)
    assert (out / "report.html").is_file()


def test_second_demo_adds_records_and_draws_a_trend(first_run: tuple[Path, str], second_run: DemoResult) -> None:
    out, _ = first_run
    with RunStore(out / "history.sqlite", create=False) as store:
        records = store.list()
        assert len(records) == 2 * len(STRATEGIES)
        for name in STRATEGIES:
            assert len(store.trend("ndcg@10", name)) == 2
    assert second_run.report is not None
    lines = {(s.metric, s.name): len(s.points) for s in second_run.report.trend}
    assert lines and all(n >= 2 for n in lines.values()), lines
    assert "trend over saved runs" in (out / "report.html").read_text(encoding="utf-8")


def test_demo_runs_carry_the_reranker_stage_and_the_comparison_has_both(second_run: DemoResult) -> None:
    runs = second_run.runs
    stage = runs[RERANKED].stages["retrieved"]
    for qid in runs[BASELINE].query_ids():
        assert len(stage.ranking(qid)) == CANDIDATES
        assert runs[BASELINE].ranking(qid) == stage.ranking(qid)[:10]  # "without" = BM25's own top 10
    assert {BASELINE, RERANKED} <= set(second_run.comparison.runs)
    # the dense strategy is the vector index's candidates cut at 10; the hybrid fuses both candidate lists
    bm25, dense = second_run.candidates["bm25"], second_run.candidates["dense"]
    assert bm25 is stage
    fused = reciprocal_rank_fusion([bm25, dense], depth=10)
    for qid in runs[HYBRID].query_ids():
        assert len(dense.ranking(qid)) == CANDIDATES
        assert runs[DENSE].ranking(qid) == dense.ranking(qid)[:10]
        assert runs[HYBRID].ranking(qid) == fused.ranking(qid)
    assert sum(runs[HYBRID].ranking(q) != runs[DENSE].ranking(q) for q in runs[HYBRID].query_ids()) > 50
    report = second_run.report
    assert report is not None and report.recommendation is not None
    assert report.recommendation.run in STRATEGIES
    assert [(r.without, r.with_) for r in report.rerank.paired] == [(BASELINE, RERANKED)]


def test_demo_numbers_are_sane_and_ragas_ids_agree(second_run: DemoResult) -> None:
    ev = second_run.comparison.evaluations[BASELINE]
    assert "ragas.id_based_context_recall" in ev.values
    # RAGAS id recall over the top 10 is set recall of relevant ids: it equals our recall@10 per query
    assert ev.values["ragas.id_based_context_recall"] == pytest.approx(ev.values["recall@10"], abs=1e-12)
    means = {name: second_run.comparison.evaluations[name].mean["ndcg@10"] for name in STRATEGIES}
    assert all(0.3 < m < 1.0 for m in means.values()), means
    # the real embedding and the reranker beat plain BM25 on this set
    assert means[DENSE] > means[BASELINE] and means[RERANKED] > means[BASELINE], means
    payload = json.dumps(second_run.comparison.to_dict())
    assert BASELINE in payload


def test_readme_excerpt_is_real_demo_output(first_run: tuple[Path, str]) -> None:
    _, printed = first_run
    section = README.read_text(encoding="utf-8").split("## What `make demo` shows", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```\n(.*?)```", section, flags=re.S)
    assert block is not None
    lines = [line.rstrip() for line in block.group(1).splitlines() if line.strip() and line.strip() != "..."]
    assert len(lines) >= 8
    printed_lines = {line.rstrip() for line in printed.splitlines()}
    missing = [line for line in lines if line not in printed_lines]
    assert not missing, missing
