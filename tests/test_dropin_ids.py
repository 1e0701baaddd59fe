"""Apps built the usual way hand back ids the golden set does not judge: the runner and evaluate notice.

Every retriever here is built as an application builds it -- ``Document`` objects split by
``SentenceSplitter`` and indexed with ``VectorStoreIndex.from_documents`` or BM25 (UUID node ids, the corpus
id in ``ref_doc_id``), LangChain ``InMemoryVectorStore.add_documents`` without ids and
``BM25Retriever.from_documents`` (the corpus id in metadata, or nowhere) -- over the golden set shipped
with rankbridge. The expected runs come from running the same retrievers with the right ``id_from``
passed by hand.
"""

from __future__ import annotations

import hashlib
import math
import re
import warnings
from typing import Any

import pytest

import rankbridge as rb
from rankbridge import GoldenSet, Hit, IdMismatchError, Qrels, Query, RetrievalError, Run
from rankbridge.demo import demo_golden_set
from rankbridge.evaluate import IdMismatchWarning
from rankbridge.idmatch import check_run, remap_ids

METRICS = ["ndcg@10", "recall@10", "mrr@10"]


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    full = demo_golden_set()
    return GoldenSet(full.queries[:24], full.qrels, corpus=full.corpus, name="lumen-24")


def _vector(text: str, dim: int = 256) -> list[float]:
    v = [0.0] * dim
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        v[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


def _documents(golden: GoldenSet) -> list[Any]:
    from llama_index.core import Document

    assert golden.corpus is not None
    return [Document(text=doc["text"], doc_id=doc_id) for doc_id, doc in golden.corpus.items()]


@pytest.fixture(scope="module")
def li_index(golden: GoldenSet) -> Any:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.node_parser import SentenceSplitter

    class WordHashEmbedding(BaseEmbedding):  # type: ignore[misc]
        def _get_query_embedding(self, query: str) -> list[float]:
            return _vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return _vector(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return _vector(text)

    return VectorStoreIndex.from_documents(
        _documents(golden),
        transformations=[SentenceSplitter(chunk_size=24, chunk_overlap=0)],
        embed_model=WordHashEmbedding(),
    )


def _means(golden: GoldenSet, run: Run) -> dict[str, float]:
    return rb.evaluate(golden, run, METRICS).mean


# -- LlamaIndex: chunk nodes with UUIDs, the corpus id in ref_doc_id ---------------------------------------
def test_llamaindex_vector_index_chunks_resolve_to_ref_doc_id(golden: GoldenSet, li_index: Any) -> None:
    retriever = li_index.as_retriever(similarity_top_k=10)
    some = retriever.retrieve(golden.queries[0].text)
    assert all(n.node.node_id not in golden.corpus for n in some)  # UUIDs: scored as they are, 0.000
    assert len(li_index.docstore.docs) > len(golden.corpus)  # documents split into several chunks

    run = rb.run_retriever(retriever, golden, progress=False)
    by_hand = rb.run_retriever(retriever, golden, id_from="ref_doc_id", progress=False)
    assert {q: run.ranking(q) for q in run} == {q: by_hand.ranking(q) for q in by_hand}
    assert run.config["id_from"] == "ref_doc_id"
    resolution = run.config["id_resolution"]
    assert resolution["from"] == "id" and resolution["to"] == "ref_doc_id" and resolution["auto"] is True
    assert resolution["shares"]["id"] == 0.0 and resolution["shares"]["ref_doc_id"] == 1.0
    assert "id_from='ref_doc_id'" in resolution["message"]
    means = _means(golden, run)
    assert means == _means(golden, by_hand) and means["ndcg@10"] > 0.05
    raw = rb.run_retriever(retriever, golden, progress=False, check_ids=False)
    assert rb.evaluate(golden, raw, METRICS, check_ids=False).mean["ndcg@10"] == 0.0  # what users got before
    assert sum(run.duplicates.values()) > 0  # later chunks of a document already ranked: dropped, counted
    assert run.config["k"] == 10 and run.config["configured_k"] == 10 and run.config["k_requested"] is None


def test_unresolvable_ids_raise_before_the_run_with_what_to_pass(golden: GoldenSet, li_index: Any) -> None:
    calls: list[str] = []
    retriever = li_index.as_retriever(similarity_top_k=5)

    def uuids_only(query: str, k: int) -> list[dict[str, Any]]:
        calls.append(query)
        return [{"id": n.node.node_id, "text": n.node.get_content()} for n in retriever.retrieve(query)][:k]

    with pytest.raises(IdMismatchError) as info:
        rb.run_retriever(uuids_only, golden, progress=False)
    message = str(info.value)
    assert "0 of" in message and "(0%)" in message and "checked on the first 5 queries, before the run" in message
    assert "Pass id_from=" in message and "not a judging gap" in message and "judge them" not in message
    assert info.value.suggestion is None and info.value.report.status == "mismatch"
    assert len(calls) == 5  # the probe only: the other 19 questions were never asked
    # opting out gives the run as it is, and evaluate then refuses it
    raw = rb.run_retriever(uuids_only, golden, progress=False, check_ids=False)
    assert len(raw) == len(golden) and "id_resolution" not in raw.config
    with pytest.raises(IdMismatchError, match="Scores would be meaningless"):
        rb.evaluate(golden, raw, METRICS)
    assert rb.evaluate(golden, raw, METRICS, check_ids=False).mean["ndcg@10"] == 0.0


def test_an_explicit_id_from_is_never_switched(golden: GoldenSet, li_index: Any) -> None:
    retriever = li_index.as_retriever(similarity_top_k=5)
    with pytest.raises(IdMismatchError, match=r"Pass id_from='ref_doc_id'") as info:
        rb.run_retriever(retriever, golden, id_from="id", progress=False)
    assert info.value.suggestion == "ref_doc_id"


def test_async_runs_resolve_the_same(golden: GoldenSet, li_index: Any) -> None:
    import asyncio

    retriever = li_index.as_retriever(similarity_top_k=10)
    sync = rb.run_retriever(retriever, golden, progress=False, mode="sync")
    a = rb.run_retriever(retriever, golden, progress=False, mode="async")
    b = asyncio.run(rb.arun_retriever(retriever, golden, progress=False))
    for other in (a, b):
        assert other.config["id_from"] == "ref_doc_id"
        assert {q: other.ranking(q) for q in other} == {q: sync.ranking(q) for q in sync}


def test_readme_quickstart_on_splitter_nodes(golden: GoldenSet) -> None:
    """The README's quickstart, with nodes from SentenceSplitter instead of hand-set ids."""
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.retrievers.bm25 import BM25Retriever

    nodes = SentenceSplitter(chunk_size=24, chunk_overlap=0).get_nodes_from_documents(_documents(golden))
    assert len(nodes) > len(golden)
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
    run = rb.run_retriever(bm25, golden, progress=False)
    assert run.config["id_resolution"]["to"] == "ref_doc_id"
    ev = rb.evaluate(golden, run, METRICS)
    by_hand = rb.evaluate(golden, rb.run_retriever(bm25, golden, id_from="ref_doc_id", progress=False), METRICS)
    assert ev.mean == by_hand.mean and ev.mean["recall@10"] > 0.1


# -- LangChain: documents added without ids, the corpus id in metadata ----------------------------------------
def _lc_documents(golden: GoldenSet, with_metadata: bool = True) -> list[Any]:
    from langchain_core.documents import Document

    assert golden.corpus is not None
    return [
        Document(page_content=doc["text"], metadata={"source": "lumen-docs", "doc_id": d} if with_metadata else {})
        for d, doc in golden.corpus.items()
    ]


def test_langchain_store_without_ids_resolves_to_metadata(golden: GoldenSet) -> None:
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class WordHash(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [_vector(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return _vector(text)

    store = InMemoryVectorStore(WordHash())
    store.add_documents(_lc_documents(golden))  # no ids: the store assigns UUIDs
    hit = store.similarity_search(golden.queries[0].text, k=1)[0]
    assert hit.id not in golden.corpus
    retriever = store.as_retriever(search_kwargs={"k": 8})
    run = rb.run_retriever(retriever, golden, progress=False)
    assert run.config["id_resolution"]["to"] == "metadata:doc_id"
    assert run.config["k"] == 8 and run.config["configured_k"] == 8
    by_hand = rb.run_retriever(retriever, golden, id_from="metadata:doc_id", progress=False)
    assert {q: run.ranking(q) for q in run} == {q: by_hand.ranking(q) for q in by_hand}
    assert _means(golden, run) == _means(golden, by_hand)
    # the constant metadata key ("source") matches nothing and is not chosen
    assert run.config["id_resolution"]["shares"]["metadata:source"] == 0.0


def test_langchain_bm25_from_documents_without_any_id(golden: GoldenSet) -> None:
    from langchain_community.retrievers import BM25Retriever

    bm25 = BM25Retriever.from_documents(_lc_documents(golden, with_metadata=False), k=5)
    with pytest.raises(IdMismatchError, match=r"The results carry no other id"):
        rb.run_retriever(bm25, golden, progress=False)  # found by the probe, before the run
    with pytest.raises(RetrievalError, match=r"the first 5 queries all failed with the same error.*no doc id"):
        rb.run_retriever(bm25, golden, progress=False, check_ids=False)
    with pytest.raises(IdMismatchError, match=r"The results carry no other id"):
        rb.run_retriever(bm25, golden, id_from=["id", "content_hash"], progress=False)
    bm25 = BM25Retriever.from_documents(_lc_documents(golden), k=5)
    run = rb.run_retriever(bm25, golden, id_from=["id", "metadata:doc_id"], progress=False)
    assert run.errors == {} and "id_resolution" not in run.config  # the explicit list already matches


# -- evaluate: golden sets refuse, qrels warn, metadata suggests the fix ----------------------------------------
def _uuid_run(n: int = 30, metadata: bool = True) -> tuple[Qrels, Run]:
    qrels = Qrels({f"q{i}": {f"doc-{i}": 1, f"doc-{i + 1}": 0} for i in range(n)})
    run = Run(name="uuids")
    for i in range(n):
        hits = [
            Hit(f"uuid-{i}-{j}", 1.0 - j / 10, metadata={"doc_id": f"doc-{i + j}"} if metadata else None)
            for j in range(3)
        ]
        run.add(f"q{i}", hits)
    return qrels, run


def test_evaluate_warns_on_qrels_and_points_at_the_metadata() -> None:
    qrels, run = _uuid_run()
    with pytest.warns(IdMismatchWarning, match=r"remap_ids\(run, 'metadata:doc_id'\)"):
        ev = rb.evaluate(qrels, run, ["mrr@10"])
    assert ev.mean["mrr@10"] == 0.0
    assert ev.notes and ev.notes[0].startswith("doc ids do not match the qrels")
    assert "warning: doc ids do not match" in ev.summary()
    fixed = remap_ids(run, "metadata:doc_id")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        good = rb.evaluate(qrels, fixed, ["mrr@10"])
    assert good.mean["mrr@10"] == 1.0 and good.notes == ()
    assert check_run(fixed, qrels).status == "ok"


def test_evaluate_on_a_golden_set_refuses() -> None:
    qrels, run = _uuid_run(metadata=False)
    golden = GoldenSet([Query(q, q) for q in qrels], qrels, corpus={f"doc-{i}": {"text": ""} for i in range(40)})
    with pytest.raises(IdMismatchError, match=r"0 of 90 \(0%\) retrieved ids are in the golden set"):
        rb.evaluate(golden, run, ["mrr@10"])


def test_a_few_unjudged_ids_are_pooling_not_a_mismatch() -> None:
    qrels = Qrels({f"q{i}": {f"doc-{i}": 1} for i in range(30)})
    run = Run.from_ranked({f"q{i}": [f"new-{i}-{j}" for j in range(9)] + [f"doc-{i}"] for i in range(30)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ev = rb.evaluate(qrels, run, ["mrr@10"])  # 10% judged with qrels alone: a normal sparse-qrels run
    assert ev.notes == () and math.isclose(ev.mean["mrr@10"], 0.1)
    golden = GoldenSet([Query(q, q) for q in qrels], qrels, corpus={f"doc-{i}": {} for i in range(30)})
    with pytest.raises(IdMismatchError):  # with a corpus, 90% of ids outside it is not pooling
        rb.evaluate(golden, run, ["mrr@10"])


# -- failure is loud -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_most_queries_failing_alike_raise_with_the_run(mode: str) -> None:
    queries = {f"q{i}": f"question {i}" for i in range(12)}

    def flaky(query: str, k: int) -> list[str]:
        if int(query.split()[1]) % 4 == 0:  # 3 of 12 succeed, spread out so that the early stop does not fire
            return ["d1"]
        raise ConnectionError("vector store unreachable")

    async def aflaky(query: str, k: int) -> list[str]:
        return flaky(query, k)

    fn = flaky if mode == "sync" else aflaky
    with pytest.raises(RetrievalError, match=r"9 of 12 queries failed with the same error.*unreachable") as info:
        rb.run_retriever(fn, queries, retries=0, concurrency=1, progress=False)
    assert len(info.value.run.errors) == 9  # type: ignore[attr-defined]
    kept = rb.run_retriever(fn, queries, retries=0, concurrency=1, progress=False, keep_going=True)
    assert len(kept.errors) == 9 and kept.config["failures"] == {"error": 9}


# -- a capture saw part of the golden set: score what was seen ------------------------------------------------
def test_partial_capture_scores_only_what_was_seen() -> None:
    from rankbridge.capture import CaptureRecord, capture

    golden = GoldenSet(
        [Query(f"q{i}", f"question {i}") for i in range(10)], Qrels({f"q{i}": {"d1": 1} for i in range(10)})
    )
    with capture(golden, frameworks=()) as cap:
        for i in range(2):
            rec = CaptureRecord(framework="test", query=f"question {i}", run_id=f"r{i}", retriever="Static")
            rec.set_items([{"id": "d1"}, {"id": "d2"}])
            cap.recorder.add(rec)
    ev = rb.evaluate(golden.qrels, cap.run, ["mrr@10"])
    assert ev.num_queries == 2 and ev.mean["mrr@10"] == 1.0 and len(ev.missing) == 8
    assert "the capture saw 2 of the 10 golden questions" in ev.summary()
    zero = rb.evaluate(golden.qrels, cap.run, ["mrr@10"], missing="zero")
    assert zero.num_queries == 10 and zero.mean["mrr@10"] == 0.2
    cmp = rb.compare({"captured": ev}, None, ["mrr@10"])
    assert any("8 missing queries not scored" in w for w in cmp.warnings)


def test_a_function_of_the_question_alone_is_scored_on_what_it_returns() -> None:
    qrels = Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}})

    def search(query: str) -> list[str]:  # no k: run as an app, scored on the list it returns
        return ["d1", "d9"] if "scurvy" in query else ["d2"]

    run = rb.run_retriever(search, {"q1": "scurvy?", "q2": "rickets?"}, progress=False)
    assert run.ranking("q1") == ["d1", "d9"] and run.ranking("q2") == ["d2"] and run.errors == {}
    assert rb.evaluate(qrels, run, ["mrr@10"]).mean["mrr@10"] == 1.0
    with pytest.raises(rb.InputError, match=r"should take k: f\(query, k\)"):
        rb.run_retriever(search, {"q1": "scurvy?"}, progress=False, checkpoint="x.jsonl")


def test_retrieval_choice_is_for_apps_only() -> None:
    with pytest.raises(rb.InputError, match=r"retrieval='first' chooses among an app's retrievals"):
        rb.run_retriever(lambda query, k: ["d1"], {"q1": "x"}, retrieval="first", progress=False)
    assert rb.run_app is rb.apps.run_app and rb.is_app(lambda question: "answer")  # type: ignore[attr-defined]


def test_report_on_mismatched_ids_never_advises_judging() -> None:
    qrels, run = _uuid_run(metadata=False)
    with pytest.warns(IdMismatchWarning):
        ev = rb.evaluate(qrels, run, ["ndcg@10", "mrr@10"])
    cmp = rb.compare({"uuids": ev}, None, ["ndcg@10"])
    golden = GoldenSet([Query(q, q) for q in qrels], qrels)
    report = cmp.report(runs={"uuids": run}, golden=golden)
    for text in (report.to_markdown(), report.to_html(plots=False)):
        assert "doc ids do not match the qrels" in text
        assert "judge them" not in text and "judge these" not in text
        assert "doc ids do not match the qrels' (see the warnings)" in text.replace("&#39;", "'")


# -- the command line -------------------------------------------------------------------------------------------
def test_cli_says_ids_do_not_match_and_stops_on_identical_failures(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from rankbridge.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    (tmp_path / "qrels.txt").write_text("".join(f"q{i} 0 doc-{i} 1\n" for i in range(30)))
    (tmp_path / "run.txt").write_text(
        "".join(f"q{i} Q0 uuid-{i}-{j} {j + 1} {1 - j / 10} x\n" for i in range(30) for j in range(3))
    )
    assert main(["evaluate", "qrels.txt", "run.txt", "-m", "ndcg@10", "--format", "trec"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("rankbridge: warning: doc ids do not match the qrels") == 1
    assert "the qrels' ids look like 'doc-0'" in captured.err and "judge them" not in captured.err
    # `rankbridge run`: the first queries all failing alike stop the run (exit 3, nothing written)
    (tmp_path / "broken_app.py").write_text("def search(query, k):\n    raise ConnectionError('store down')\n")
    (tmp_path / "queries.tsv").write_text("".join(f"q{i}\tquestion {i}\n" for i in range(12)))
    args = ["run", "broken_app:search", "--queries", "queries.tsv", "-o", "out.jsonl", "-q", "--retries", "0"]
    assert main([*args, "--concurrency", "1"]) == 3
    err = capsys.readouterr().err
    assert "the first 5 queries all failed with the same error" in err and "store down" in err
    assert not (tmp_path / "out.jsonl").exists()
    assert main([*args, "--keep-going"]) == 3  # every query run, the failures written
    assert (tmp_path / "out.jsonl").exists()


def test_the_run_summary_says_which_ids_were_used(golden: GoldenSet, li_index: Any) -> None:
    run = rb.run_retriever(li_index.as_retriever(similarity_top_k=5), golden, progress=False)
    text = str(rb.summarize(run))
    assert "doc ids: 0 of" in text and "Under id_from='ref_doc_id'" in text


def test_evaluation_repr_is_short() -> None:
    qrels = {f"q{i}": {"d1": 1} for i in range(5000)}
    run = {f"q{i}": {"d1": 1.0, "d2": 0.5} for i in range(5000)}
    ev = rb.evaluate(qrels, run, ["ndcg@10", "mrr@10", "recall@10", "P@5", "map", "hit_rate@5"])
    text = repr(ev)
    assert len(text) < 300 and "queries=5000" in text and "'ndcg@10': 1.0000" in text and "..." in text


def test_a_doc_map_is_checked_on_the_mapped_ids_not_switched() -> None:
    golden = GoldenSet(
        [Query(f"q{i}", f"question {i}") for i in range(8)],
        Qrels({f"q{i}": {f"doc-{i}": 1} for i in range(8)}),
        corpus={f"doc-{i}": {"text": ""} for i in range(8)},
    )

    def search(query: str, k: int) -> list[dict[str, Any]]:
        i = int(query.split()[1])
        return [{"id": f"chunk-{i}-a", "ref_doc_id": "other"}, {"id": f"chunk-{i}-b", "ref_doc_id": "other"}]

    doc_map = {f"chunk-{i}-{s}": f"doc-{i}" for i in range(8) for s in "ab"}
    run = rb.run_retriever(search, golden, doc_map=doc_map, progress=False)
    assert run.ranking("q3") == ["doc-3"] and "id_resolution" not in run.config  # doc_map kept, not ref_doc_id
