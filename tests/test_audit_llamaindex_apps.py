"""A drop-in audit on LlamaIndex apps built the usual way: every number checked against pytrec_eval.

The app: the golden set shipped with rankbridge, its passages as ``Document(text, doc_id="lumen/<id>.md")``
indexed by ``VectorStoreIndex.from_documents`` with a ``SentenceSplitter`` (UUID node ids, the document in
``ref_doc_id``) over a local deterministic embedding and by llama-index-retrievers-bm25 over the same docstore
(and by ``HierarchicalNodeParser`` leaves for auto-merging), queried through
``as_retriever``, a ``QueryFusionRetriever``, a ``RetrieverQueryEngine`` with a similarity cut-off and a
reranker-like postprocessor that reorders without rescoring, a ``SubQuestionQueryEngine`` and a
``RouterQueryEngine`` over a scripted LLM, and read back through ``run_retriever``, ``run_app``, live capture
(span handler and legacy callbacks) and the handlers an app adds by hand.

The expected values never come from rankbridge: each query's list is what the framework itself returns when
called directly, mapped to documents by hand (first chunk of a document kept), and scored by pytrec_eval
with scores that encode that order. Suspicious input (ids of another build, failures) must be loud.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.bm25")
pytrec_eval = pytest.importorskip("pytrec_eval")

import rankbridge as rb  # noqa: E402
from rankbridge import GoldenSet, IdMismatchError, Qrels, RetrievalError, Run  # noqa: E402
from rankbridge.demo import TrigramEmbedding, demo_golden_set  # noqa: E402
from rankbridge.evaluate import IdMismatchWarning, RunCoverageWarning  # noqa: E402
from rankbridge.idmatch import check_run, remap_ids  # noqa: E402
from rankbridge.retriever import content_hash  # noqa: E402

#: rankbridge name -> pytrec_eval measure (mrr@10 is recip_rank on lists of at most 10 documents)
MEASURES = {
    "ndcg@10": "ndcg_cut_10",
    "ndcg@3": "ndcg_cut_3",
    "precision@5": "P_5",
    "recall@10": "recall_10",
    "map@10": "map_cut_10",
    "hit_rate@3": "success_3",
    "mrr@10": "recip_rank",
}


def doc_id(passage: str) -> str:
    return f"lumen/{passage}.md"


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    full = demo_golden_set()
    assert full.corpus is not None
    queries = full.queries[:30]
    qrels = Qrels({q.id: {doc_id(d): label for d, label in full.qrels[q.id].items()} for q in queries})
    corpus = {doc_id(d): doc for d, doc in full.corpus.items()}
    return GoldenSet(queries, qrels, corpus=corpus, name="lumen-docs-30")


def _embedding() -> Any:
    from llama_index.core.embeddings import BaseEmbedding

    class LocalEmbedding(BaseEmbedding):  # type: ignore[misc]
        def _get_query_embedding(self, query: str) -> list[float]:
            return TrigramEmbedding(dim=256).embed_query(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return TrigramEmbedding(dim=256).embed_query(text)

    return LocalEmbedding()


def _documents(golden: GoldenSet) -> list[Any]:
    from llama_index.core import Document

    assert golden.corpus is not None
    # metadata a real app keeps (the product), none of it a document id
    return [
        Document(text=d["text"], doc_id=i, metadata={"product": i.split("/")[1].split("-")[0]})
        for i, d in golden.corpus.items()
    ]


def _splitter() -> Any:
    from llama_index.core.node_parser import SentenceSplitter

    return SentenceSplitter(chunk_size=24, chunk_overlap=0)


@pytest.fixture(scope="module")
def index(golden: GoldenSet) -> Any:
    from llama_index.core import VectorStoreIndex

    return VectorStoreIndex.from_documents(_documents(golden), transformations=[_splitter()], embed_model=_embedding())


@pytest.fixture(scope="module")
def nodes(index: Any) -> list[Any]:
    """The chunks the index made (what BM25 and the hierarchy tests index alike)."""
    return list(index.docstore.docs.values())


@pytest.fixture(scope="module")
def bm25(index: Any) -> Any:
    from llama_index.retrievers.bm25 import BM25Retriever

    return BM25Retriever.from_defaults(docstore=index.docstore, similarity_top_k=10)


# -- the reference: the framework's own lists, by hand, scored by pytrec_eval ------------------------
def by_document(results: Iterable[Any]) -> list[str]:
    """The documents of a framework's result list in rank order, a document's first chunk kept."""
    return list(dict.fromkeys(n.node.ref_doc_id for n in results))


def reference(golden: GoldenSet, lists: dict[str, list[str]], measures: Iterable[str]) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values (name -> {qid -> value}) of ranked lists; scores encode the order."""
    qrels = {q: {d: int(label) for d, label in golden.qrels[q].items()} for q in lists}
    run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in lists.items()}
    assert all(len(docs) <= 10 for docs in lists.values())  # recip_rank is then mrr@10
    names = list(measures)
    got = pytrec_eval.RelevanceEvaluator(qrels, {MEASURES[m] for m in names}).evaluate(run)
    return {m: {q: got.get(q, {}).get(MEASURES[m], 0.0) for q in lists} for m in names}


def assert_equal_to_reference(golden: GoldenSet, run: Run, lists: dict[str, list[str]], **kwargs: Any) -> None:
    """The run holds exactly these lists, and rankbridge's values equal pytrec_eval's query by query."""
    assert {q: run.ranking(q) for q in lists} == lists
    ev = rb.evaluate(golden, run, list(MEASURES), **kwargs)
    expected = reference(golden, lists, MEASURES)
    got = ev.per_query
    for m in MEASURES:
        assert got[m].keys() == expected[m].keys(), m
        for q, value in expected[m].items():
            assert math.isclose(got[m][q], value, rel_tol=1e-12, abs_tol=1e-12), (m, q, got[m][q], value)
    means = {m: sum(v.values()) / len(v) for m, v in expected.items()}
    assert all(math.isclose(ev.mean[m], means[m], abs_tol=1e-12) for m in MEASURES)
    assert 0.05 < means["ndcg@10"] < 0.999  # neither empty nor perfect: the comparison can tell lists apart


def direct(golden: GoldenSet, call: Callable[[str], Iterable[Any]]) -> dict[str, list[str]]:
    return {q.id: by_document(call(q.text)) for q in golden.queries}


# -- retrievers ---------------------------------------------------------------------------------------
def test_the_app_is_built_the_usual_way(golden: GoldenSet, nodes: list[Any]) -> None:
    assert golden.corpus is not None
    assert len(nodes) > 1.5 * len(golden.corpus)  # documents split into several chunks
    assert all(n.node_id not in golden.corpus and n.ref_doc_id in golden.corpus for n in nodes)
    assert len({n.node_id for n in nodes}) == len(nodes)


def test_vector_retriever_equals_pytrec_eval_on_its_own_lists(golden: GoldenSet, index: Any) -> None:
    retriever = index.as_retriever(similarity_top_k=10)
    lists = direct(golden, retriever.retrieve)
    run = rb.run_retriever(retriever, golden, progress=False)
    assert run.config["id_from"] == "ref_doc_id" and run.config["id_resolution"]["auto"] is True
    assert_equal_to_reference(golden, run, lists)
    chunks = sum(len(retriever.retrieve(q.text)) for q in golden.queries)
    assert sum(run.duplicates.values()) == chunks - sum(map(len, lists.values())) > 0
    for mode in ("async", "sync"):  # the other engines give the same run
        assert_equal_to_reference(golden, rb.run_retriever(retriever, golden, progress=False, mode=mode), lists)


def test_explicit_k_is_a_copy_and_equals_the_framework_at_that_k(golden: GoldenSet, index: Any) -> None:
    retriever = index.as_retriever(similarity_top_k=4)
    deeper = rb.run_retriever(retriever, golden, k=10, progress=False)
    assert retriever.similarity_top_k == 4 and deeper.config["configured_k"] == 4 and deeper.config["k"] == 10
    assert_equal_to_reference(golden, deeper, direct(golden, index.as_retriever(similarity_top_k=10).retrieve))
    own = rb.run_retriever(retriever, golden, progress=False)
    assert_equal_to_reference(golden, own, direct(golden, retriever.retrieve))


def test_bm25_and_query_fusion_equal_pytrec_eval(golden: GoldenSet, index: Any, bm25: Any) -> None:
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    assert_equal_to_reference(golden, rb.run_retriever(bm25, golden, progress=False), direct(golden, bm25.retrieve))
    fusion = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=8), bm25],
        similarity_top_k=10,
        num_queries=1,  # no generated queries: the LLM is never asked
        mode="reciprocal_rerank",
        use_async=False,
        llm=MockLLM(),
    )
    lists = direct(golden, fusion.retrieve)
    run = rb.run_retriever(fusion, golden, progress=False)
    assert run.config["id_from"] == "ref_doc_id"
    assert_equal_to_reference(golden, run, lists)
    # live capture of the same calls scores the fused list, not its members' (nested) lists
    with rb.capture(golden) as cap:
        for q in golden.queries:
            fusion.retrieve(q.text)
    assert cap.summary()["matched_by_text"] == len(golden)
    assert_equal_to_reference(golden, cap.run, lists)


# -- query engines: the list after the postprocessors, and the retriever's own ------------------------
def _reverse_top(top_n: int) -> Any:
    from llama_index.core.postprocessor.types import BaseNodePostprocessor

    class ReverseTop(BaseNodePostprocessor):  # type: ignore[misc]
        """Reranker-like: reorders (here: reverses) without rescoring, keeps ``top_n``."""

        keep: int = top_n

        def _postprocess_nodes(self, nodes: list[Any], query_bundle: Any = None) -> list[Any]:
            return list(reversed(nodes))[: self.keep]

    return ReverseTop()


@pytest.fixture(scope="module")
def engine(bm25: Any) -> Any:
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor import SimilarityPostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine

    postprocessors = [SimilarityPostprocessor(similarity_cutoff=1.0), _reverse_top(6)]
    return RetrieverQueryEngine.from_args(bm25, node_postprocessors=postprocessors, llm=MockLLM())


def _engine_lists(golden: GoldenSet, engine: Any) -> dict[str, list[str]]:
    from llama_index.core.schema import QueryBundle

    return direct(golden, lambda text: engine.retrieve(QueryBundle(text)))


def test_query_engine_scored_in_the_order_it_hands_the_llm(golden: GoldenSet, engine: Any, bm25: Any) -> None:
    final = _engine_lists(golden, engine)
    retrieved = direct(golden, bm25.retrieve)
    assert final != retrieved and any(len(final[q]) < len(retrieved[q]) for q in final)  # reordered and cut
    run = rb.run_retriever(engine, golden, progress=False)
    assert_equal_to_reference(golden, run, final)
    assert_equal_to_reference(golden, run.to_stage("retrieved"), retrieved)
    # the scores were not rewritten: ranked by score the lists would differ, and so would the numbers
    assert any([h.score for h in run.hits(q)] != sorted((h.score for h in run.hits(q)), reverse=True) for q in final)
    by_score = {q: {h.doc_id: h.score for h in run.hits(q)} for q in final}
    assert rb.evaluate(golden, by_score, ["ndcg@10"]).mean != rb.evaluate(golden, run, ["ndcg@10"]).mean


def test_query_engine_capture_equals_the_runner(golden: GoldenSet, engine: Any, bm25: Any) -> None:
    final, retrieved = _engine_lists(golden, engine), direct(golden, bm25.retrieve)
    with rb.capture(golden) as cap:
        answers = [str(engine.query(q.text)) for q in golden.queries]
    assert len(answers) == len(golden)
    assert cap.run.config["id_from"] == "ref_doc_id"
    assert_equal_to_reference(golden, cap.run, final)
    assert_equal_to_reference(golden, cap.to_run(stage="retrieved"), retrieved)


def test_legacy_callback_capture_equals_the_runner(golden: GoldenSet, nodes: list[Any]) -> None:
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.retrievers.bm25 import BM25Retriever

    before = Settings._callback_manager
    try:
        with rb.capture(golden, frameworks=["llamaindex_legacy"]) as cap:
            # built inside the capture: the components take the global callback manager, as the docs say
            bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
            bm25.callback_manager = Settings.callback_manager
            engine = RetrieverQueryEngine.from_args(bm25, node_postprocessors=[_reverse_top(5)], llm=MockLLM())
            for q in golden.queries:
                engine.query(q.text)
    finally:
        Settings._callback_manager = before
    assert cap.summary()["frameworks"] == ["llamaindex_legacy"]
    assert_equal_to_reference(golden, cap.run, _engine_lists(golden, engine))
    assert_equal_to_reference(golden, cap.to_run(stage="retrieved"), direct(golden, bm25.retrieve))


@pytest.fixture
def span_handler() -> Iterator[Any]:
    from llama_index.core.instrumentation import get_dispatcher

    from rankbridge.frameworks.llamaindex.capture import RankbridgeSpanHandler

    handler = RankbridgeSpanHandler.create()  # no id_from: the app does not know about ids
    dispatcher = get_dispatcher()
    dispatcher.add_span_handler(handler)
    try:
        yield handler
    finally:
        dispatcher.span_handlers.remove(handler)


def test_hand_added_span_handler_resolves_chunk_uuids(golden: GoldenSet, engine: Any, span_handler: Any) -> None:
    """A handler made without id_from meets the golden set only in to_run(golden): ref_doc_id must be there."""
    for q in golden.queries:
        engine.query(q.text)
    run = span_handler.to_run(golden)
    assert run.config["id_from"] == "ref_doc_id"
    assert_equal_to_reference(golden, run, _engine_lists(golden, engine))


def test_hand_passed_legacy_callback_resolves_chunk_uuids(golden: GoldenSet, nodes: list[Any]) -> None:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.retrievers.bm25 import BM25Retriever

    from rankbridge.frameworks.llamaindex.capture_legacy import RankbridgeLlamaIndexCallback

    handler = RankbridgeLlamaIndexCallback()
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
    bm25.callback_manager = CallbackManager([handler])
    for q in golden.queries:
        bm25.retrieve(q.text)
    run = handler.to_run(golden)
    assert run.config["id_from"] == "ref_doc_id" and run.config["id_resolution"]["to"] == "ref_doc_id"
    assert_equal_to_reference(golden, run, direct(golden, bm25.retrieve))


# -- engines that route or split the question, over a scripted LLM -------------------------------------
def _scripted_llm() -> Any:
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    class Scripted(CustomLLM):  # type: ignore[misc]
        """Sub-questions: the question and its first three words (both to bm25_docs); routes to tool 2."""

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted")

        @llm_completion_callback()  # type: ignore[misc]
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            if "<User Question>" in prompt:
                question = prompt.rsplit("<User Question>", 1)[1].split("<Output>")[0].strip()
                subs = [
                    {"sub_question": question, "tool_name": "bm25_docs"},
                    {"sub_question": " ".join(question.split()[:3]), "tool_name": "bm25_docs"},
                ]
                return CompletionResponse(text="```json\n" + json.dumps(subs) + "\n```")
            if "choice" in prompt.lower():
                return CompletionResponse(text=json.dumps([{"choice": 2, "reason": "keywords"}]))
            return CompletionResponse(text="(a scripted answer)")

        @llm_completion_callback()  # type: ignore[misc]
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            yield self.complete(prompt)

    return Scripted()


@pytest.fixture(scope="module")
def tools(index: Any, nodes: list[Any]) -> tuple[Any, list[Any], Any]:
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.tools import QueryEngineTool, ToolMetadata
    from llama_index.retrievers.bm25 import BM25Retriever

    llm = _scripted_llm()
    keywords = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=4)
    vector = index.as_query_engine(similarity_top_k=4, llm=llm)
    tools = [
        QueryEngineTool(vector, ToolMetadata(name="vector_docs", description="semantic search of the docs")),
        QueryEngineTool(
            RetrieverQueryEngine.from_args(keywords, llm=llm),
            ToolMetadata(name="bm25_docs", description="keyword search of the docs"),
        ),
    ]
    return llm, tools, keywords


def test_sub_question_engine_scores_every_sub_retrieval(golden: GoldenSet, tools: tuple[Any, list[Any], Any]) -> None:
    from llama_index.core.query_engine import SubQuestionQueryEngine
    from llama_index.core.question_gen import LLMQuestionGenerator

    from rankbridge.apps import run_app

    llm, engine_tools, keywords = tools
    sub = SubQuestionQueryEngine.from_defaults(
        query_engine_tools=engine_tools,
        llm=llm,
        question_gen=LLMQuestionGenerator.from_defaults(llm=llm),
        use_async=False,
    )
    first = direct(golden, keywords.retrieve)
    second = {q.id: by_document(keywords.retrieve(" ".join(q.text.split()[:3]))) for q in golden.queries}
    run = run_app(sub, golden, retrieval="all", progress=False)
    assert set(run.config["retrievals"].values()) == {2}
    # "final": both searches in order, a document keeping its first place
    assert_equal_to_reference(golden, run, {q: list(dict.fromkeys(first[q] + second[q])) for q in first})
    assert_equal_to_reference(golden, run.to_stage("search:1"), first)
    assert_equal_to_reference(golden, run.to_stage("search:2"), second)


def test_router_engine_scores_the_routed_retrieval(golden: GoldenSet, tools: tuple[Any, list[Any], Any]) -> None:
    from llama_index.core.query_engine import RouterQueryEngine
    from llama_index.core.selectors import LLMSingleSelector

    from rankbridge.apps import run_app

    llm, engine_tools, keywords = tools
    router = RouterQueryEngine(
        selector=LLMSingleSelector.from_defaults(llm=llm), query_engine_tools=engine_tools, llm=llm
    )
    run = run_app(router, golden, progress=False)
    assert set(run.config["retrievals"].values()) == {1}
    assert_equal_to_reference(golden, run, direct(golden, keywords.retrieve))


# -- id matching: documents, chunk texts, maps -------------------------------------------------------
def test_golden_set_naming_chunk_texts_scores_chunks(golden: GoldenSet, bm25: Any, nodes: list[Any]) -> None:
    """Qrels judging chunks by their text (content_hash), as a set built from the chunks themselves is.

    Some chunks repeat word for word across documents ("It is available in every Lumen region..."): one
    text, one id, so a repeat is a duplicate of the first and is dropped (and counted), as in the reference.
    """
    label_of = {(q, d): label for q, docs in golden.qrels.items() for d, label in docs.items()}
    chunk_qrels: dict[str, dict[str, int]] = {q.id: {} for q in golden.queries}
    for q in golden.queries:
        for n in nodes:
            if (q.id, n.ref_doc_id) in label_of:
                key = content_hash(n.text)
                chunk_qrels[q.id][key] = max(chunk_qrels[q.id].get(key, 0), label_of[(q.id, n.ref_doc_id)])
    chunk_golden = GoldenSet(golden.queries, Qrels(chunk_qrels), name="lumen-chunks")
    run = rb.run_retriever(bm25, chunk_golden, id_from="content_hash", progress=False)
    hashes = {q.id: [content_hash(n.node.get_content()) for n in bm25.retrieve(q.text)] for q in golden.queries}
    lists = {q: list(dict.fromkeys(v)) for q, v in hashes.items()}
    assert_equal_to_reference(chunk_golden, run, lists)
    repeats = sum(len(hashes[q]) - len(lists[q]) for q in lists)
    assert sum(run.duplicates.values()) == repeats > 0


def test_doc_map_and_remap_ids_give_the_ref_doc_id_run(golden: GoldenSet, bm25: Any, nodes: list[Any]) -> None:
    lists = direct(golden, bm25.retrieve)
    chunk_to_doc = {n.node_id: n.ref_doc_id for n in nodes}
    mapped = rb.run_retriever(bm25, golden, doc_map=chunk_to_doc, progress=False)
    assert "id_resolution" not in mapped.config  # the mapped ids were checked, and matched
    assert_equal_to_reference(golden, mapped, lists)
    raw = rb.run_retriever(bm25, golden, id_from="id", check_ids=False, progress=False)
    assert all(d not in golden.corpus for q in raw for d in raw.ranking(q))  # type: ignore[operator]
    report = check_run(raw, golden)
    assert report.status == "mismatch" and report.shares["id"] == 0.0  # nothing but the UUIDs on these hits
    fixed = remap_ids(raw, lambda hit: chunk_to_doc[hit.doc_id])
    assert_equal_to_reference(golden, fixed, lists)


# -- suspicious input is loud ---------------------------------------------------------------------------
def test_golden_ids_of_another_build_are_refused(golden: GoldenSet, bm25: Any) -> None:
    """A golden set made from the node ids of an earlier build: this build's UUIDs match none of them."""
    earlier = _splitter().get_nodes_from_documents(_documents(golden))  # the same documents again: new UUIDs
    old_qrels = {q.id: {n.node_id: 1 for n in earlier if n.ref_doc_id in golden.qrels[q.id]} for q in golden.queries}
    old = GoldenSet(golden.queries, Qrels(old_qrels), name="uuid-golden")
    with pytest.raises(IdMismatchError, match=r"0 of \d+ \(0%\)") as info:
        rb.run_retriever(bm25, old, progress=False)
    assert info.value.suggestion is None  # ref_doc_id names documents, not those chunks: nothing to offer
    raw = rb.run_retriever(bm25, old, progress=False, check_ids=False)
    with pytest.raises(IdMismatchError):
        rb.evaluate(old, raw, ["ndcg@10"])
    with pytest.warns(IdMismatchWarning):
        ev = rb.evaluate(old_qrels, raw, ["ndcg@10"])
    assert ev.mean["ndcg@10"] == 0.0 and "not a judging gap" in ev.summary()


def _flaky(bm25: Any, works: Callable[[str], bool]) -> Any:
    from llama_index.core.retrievers import BaseRetriever

    class Flaky(BaseRetriever):  # type: ignore[misc]
        def _retrieve(self, query_bundle: Any) -> list[Any]:
            if not works(query_bundle.query_str):
                raise ConnectionError("vector store unreachable")
            return bm25.retrieve(query_bundle)  # type: ignore[no-any-return]

    return Flaky()


def test_a_run_where_most_queries_failed_is_loud(golden: GoldenSet, bm25: Any) -> None:
    ok = {q.text for q in golden.queries[::6]}  # 5 of 30 work
    flaky = _flaky(bm25, ok.__contains__)
    with pytest.raises(RetrievalError, match="failed with the same error"):
        rb.run_retriever(flaky, golden, progress=False, retries=0)
    run = rb.run_retriever(flaky, golden, progress=False, retries=0, keep_going=True, id_from="ref_doc_id")
    assert len(run.errors) == 25
    ev = rb.evaluate(golden, run, ["ndcg@10"])
    assert "25 failed (scored 0)" in ev.summary()
    works = {q.id: by_document(bm25.retrieve(q.text)) for q in golden.queries if q.text in ok}
    expected = reference(golden, works, ["ndcg@10"])["ndcg@10"]
    assert math.isclose(ev.mean["ndcg@10"], sum(expected.values()) / len(golden), abs_tol=1e-12)


def test_a_capture_where_most_retrievals_failed_says_so(golden: GoldenSet, bm25: Any) -> None:
    """A capture is scored over what it saw; the failures it saw must not vanish quietly from the means."""
    ok = {q.text for q in golden.queries[::6]}
    flaky = _flaky(bm25, ok.__contains__)
    raised = 0
    with rb.capture(golden) as cap:
        for q in golden.queries:
            try:
                flaky.retrieve(q.text)
            except ConnectionError:
                raised += 1  # the app still gets its own error
    assert raised == cap.summary()["errors"] == 25
    with pytest.warns(RunCoverageWarning, match=r"25 of the 30 judged queries of the run 'capture' failed"):
        ev = rb.evaluate(golden, cap.run, ["ndcg@10"])  # a run that mostly failed: a warning with the counts
    assert len(ev.failed) == 25 and ev.num_queries == 5
    assert any("left out of the means" in n and "missing='zero'" in n for n in ev.notes)
    assert "warning: queries whose retrieval failed" in ev.summary()
    zero = rb.evaluate(golden, cap.run, ["ndcg@10"], missing="zero")
    assert zero.num_queries == 30 and zero.mean["ndcg@10"] < ev.mean["ndcg@10"]


def test_a_cut_off_that_empties_lists_scores_them_empty_everywhere(golden: GoldenSet, bm25: Any) -> None:
    """Nothing passes the cut-off for about half the questions: the LLM gets no context, and the run says so.

    A capture takes the final list from the engine's response: an empty one must not fall back to the
    retriever's list (which would score what the LLM never saw).
    """
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor import SimilarityPostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine

    tops = sorted(bm25.retrieve(q.text)[0].score for q in golden.queries)
    cutoff = tops[len(tops) // 2]  # the median best score: about half the lists end up empty
    engine = RetrieverQueryEngine.from_args(
        bm25, node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=cutoff)], llm=MockLLM()
    )
    final = _engine_lists(golden, engine)
    empty = [q for q, docs in final.items() if not docs]
    assert 5 < len(empty) < 25
    run = rb.run_retriever(engine, golden, progress=False)
    assert_equal_to_reference(golden, run, final)
    with rb.capture(golden) as cap:
        for q in golden.queries:
            engine.query(q.text)
    assert_equal_to_reference(golden, cap.run, final)
    assert all(cap.run.ranking(q) == [] and len(cap.to_run(stage="retrieved").ranking(q)) > 0 for q in empty)
    assert rb.evaluate(golden, cap.run, ["ndcg@10"]).num_queries == len(golden)  # empty lists count, as 0


def test_an_index_is_run_at_llamaindex_default_top_k_and_compare_says_so(golden: GoldenSet, index: Any) -> None:
    """``run_retriever(index)`` uses ``index.as_retriever()`` as LlamaIndex builds it: two chunks a question."""
    run = rb.run_retriever(index, golden, progress=False)
    assert run.config["k"] == run.config["configured_k"] == index.as_retriever().similarity_top_k == 2
    assert max(len(run.ranking(q)) for q in run) <= 2
    result = rb.compare({"index": run}, golden, ["precision@10", "ndcg@10"])
    assert any("returns at most 2 results per query" in w and "precision@10" in w for w in result.warnings)


def test_fusion_running_its_members_in_asyncio_is_scored_the_same(golden: GoldenSet, index: Any, bm25: Any) -> None:
    """``QueryFusionRetriever``'s default ``use_async=True`` runs its members as asyncio tasks, inside the runner's
    threads (sync) or its event loop (async) alike; the capture's retrieval spans follow those tasks."""
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever

    fusion = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=8), bm25], similarity_top_k=10, num_queries=1, mode="dist_based_score",
        llm=MockLLM(),
    )  # fmt: skip

    async def ask_all() -> list[list[str]]:
        return [by_document(r) for r in await asyncio.gather(*(fusion.aretrieve(q.text) for q in golden.queries))]

    # asked in a loop of its own: fusion.retrieve() outside any loop makes LlamaIndex open one it never closes
    with rb.capture(golden) as cap:
        answers = asyncio.run(ask_all())
    lists = {q.id: docs for q, docs in zip(golden.queries, answers, strict=True)}
    assert cap.summary()["matched_by_text"] == len(golden)
    assert_equal_to_reference(golden, cap.run, lists)
    assert_equal_to_reference(golden, rb.run_retriever(fusion, golden, progress=False, mode="async"), lists)


def test_auto_merging_retriever_scored_on_the_merged_list(golden: GoldenSet) -> None:
    """Leaves of a ``HierarchicalNodeParser`` retrieved, merged into their parents when enough of them came back:
    the merged list is scored (parents name their document through ``ref_doc_id`` too), by the runner and by
    a capture, whose nested leaf retrieval stays out of the run."""
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import HierarchicalNodeParser, get_leaf_nodes
    from llama_index.core.retrievers import AutoMergingRetriever

    hierarchy = HierarchicalNodeParser.from_defaults(chunk_sizes=[128, 48, 24], chunk_overlap=0)
    all_nodes = hierarchy.get_nodes_from_documents(_documents(golden))
    leaves = get_leaf_nodes(all_nodes)
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(all_nodes)
    leaf_index = VectorStoreIndex(leaves, storage_context=storage, embed_model=_embedding())
    merging = AutoMergingRetriever(leaf_index.as_retriever(similarity_top_k=10), storage)
    leaf_ids = {n.node_id for n in leaves}
    assert any(n.node.node_id not in leaf_ids for q in golden.queries for n in merging.retrieve(q.text))  # merged
    lists = direct(golden, merging.retrieve)
    run = rb.run_retriever(merging, golden, progress=False)
    assert run.config["id_from"] == "ref_doc_id"
    assert_equal_to_reference(golden, run, lists)
    with rb.capture(golden) as cap:
        for q in golden.queries:
            merging.retrieve(q.text)
    assert_equal_to_reference(golden, cap.run, lists)
