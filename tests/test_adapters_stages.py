"""Adapters of wrapper objects: scored on the list the app hands on, with the inner lists kept as stages.

Every object is built the way apps build them (``VectorStoreIndex.from_documents`` with UUID node ids,
``RetrieverQueryEngine.from_args`` with real postprocessors, ``BM25Retriever.from_documents``,
``ContextualCompressionRetriever`` with a real compressor, ``EnsembleRetriever``), and every expectation is
computed by calling the framework itself. Checked at the level the runner drives (``fetch`` / ``afetch`` +
``normalize``) and end to end through :func:`rankbridge.run_retriever`.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from capture_data import CORPUS, QUERIES
from rankbridge.frameworks import CallableRetriever, LangChainRetriever, LlamaIndexRetriever
from rankbridge.frameworks.base import DEFAULT_K, Staged
from rankbridge.runner import run_retriever

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def tokens(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2}


def staged(adapter: Any, query: str, k: int | None) -> tuple[list[Any], dict[str, list[Any]]]:
    """What the runner gets for one query: the final hits and each stage's hits."""
    hits, _, stages = adapter.normalize(adapter.fetch(query, k), k)
    return hits, stages


def astaged(adapter: Any, query: str, k: int | None) -> tuple[list[Any], dict[str, list[Any]]]:
    hits, _, stages = adapter.normalize(asyncio.run(adapter.afetch(query, k)), k)
    return hits, stages


def pairs(hits: list[Any]) -> list[tuple[str, float | None]]:
    return [(h.doc_id, h.score) for h in hits]


def approx_pairs(expected: list[tuple[str, float | None]]) -> list[tuple[str, Any]]:
    return [(d, s if s is None else pytest.approx(s)) for d, s in expected]


# == LlamaIndex ===================================================================================
@pytest.fixture(scope="module")
def li() -> Any:
    pytest.importorskip("llama_index.core", reason="llama-index-core not installed")
    from llama_index.core import Document, VectorStoreIndex

    from ragas_fakes import make_llamaindex_embedding

    docs = [Document(text=t, doc_id=d) for d, t in CORPUS.items()]
    index = VectorStoreIndex.from_documents(docs, embed_model=make_llamaindex_embedding())
    nodes = list(index.docstore.docs.values())
    assert all(n.node_id not in CORPUS and n.ref_doc_id in CORPUS for n in nodes)  # UUIDs, as apps have
    return index


def _reranker(top_n: int) -> Any:
    from llama_index.core.postprocessor.types import BaseNodePostprocessor

    class OverlapReranker(BaseNodePostprocessor):
        """Reorders like a cross-encoder and, like ``SentenceTransformerRerank``, writes scores in place."""

        top_n: int = 3

        def _postprocess_nodes(self, nodes: list[Any], query_bundle: Any = None) -> list[Any]:
            q = tokens(query_bundle.query_str)
            for n in nodes:  # in place, on the retriever's NodeWithScore objects
                text = n.node.get_content()
                n.score = len(q & tokens(text)) + 1.0 / len(text)  # shorter texts first on ties
            return sorted(nodes, key=lambda n: -n.score)[: self.top_n]

    return OverlapReranker(top_n=top_n)


def _scripted_rerank_llm() -> Any:
    """A CustomLLM answering LLMRerank's choice-select prompt: documents sharing words with the question."""
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    def answer(prompt: str) -> str:
        body = prompt.rsplit("Let's try this now:", 1)[1]
        question = body.rsplit("Question:", 1)[1].split("\nAnswer:")[0]
        docs = re.findall(r"Document (\d+):\n(.*?)(?=\n\nDocument \d+:|\nQuestion:)", body, re.S)
        scored = sorted(((len(tokens(question) & tokens(t)), -int(i)) for i, t in docs), reverse=True)
        return "\n".join(f"Doc: {-i}, Relevance: {min(10, 3 * s)}" for s, i in scored if s)

    class ScriptedRerankLLM(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted-rerank")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text=answer(prompt))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            yield CompletionResponse(text=answer(prompt), delta=answer(prompt))

    return ScriptedRerankLLM()


def _engines(index: Any) -> dict[str, Any]:
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor import LLMRerank, SimilarityPostprocessor
    from llama_index.core.query_engine import CitationQueryEngine, RetrieverQueryEngine

    llm = MockLLM()
    cutoff = SimilarityPostprocessor(similarity_cutoff=0.1)
    return {
        "from_args+cutoff+reranker": RetrieverQueryEngine.from_args(
            index.as_retriever(similarity_top_k=5), llm=llm, node_postprocessors=[cutoff, _reranker(3)]
        ),
        "as_query_engine+reranker": index.as_query_engine(
            llm=llm, similarity_top_k=6, node_postprocessors=[_reranker(2)]
        ),
        "from_args+LLMRerank": RetrieverQueryEngine.from_args(
            index.as_retriever(similarity_top_k=6),
            llm=llm,
            node_postprocessors=[LLMRerank(llm=_scripted_rerank_llm(), top_n=3, choice_batch_size=4)],
        ),
        "citation+cutoff": CitationQueryEngine.from_args(
            index, llm=llm, similarity_top_k=5, node_postprocessors=[cutoff, _reranker(4)]
        ),
    }


ENGINE_NAMES = ["from_args+cutoff+reranker", "as_query_engine+reranker", "from_args+LLMRerank", "citation+cutoff"]


@pytest.fixture(params=ENGINE_NAMES)
def engine(request: pytest.FixtureRequest, li: Any) -> Any:
    return _engines(li)[request.param]


def _ref_ids(nodes: list[Any]) -> list[tuple[str, float | None]]:
    return [(n.node.ref_doc_id, n.score) for n in nodes]


def _direct(engine: Any, query: str) -> tuple[list[tuple[str, float | None]], list[tuple[str, float | None]]]:
    """(final, retrieved) computed by the framework itself: the engine's retrieve, and its retriever's."""
    from llama_index.core.schema import QueryBundle

    return _ref_ids(engine.retrieve(QueryBundle(query))), _ref_ids(engine.retriever.retrieve(query))


def test_query_engine_is_scored_after_its_postprocessors(engine: Any) -> None:
    r = LlamaIndexRetriever(engine, id_from="ref_doc_id")
    assert r.configured_k == engine.retriever.similarity_top_k
    assert r.name == type(engine).__name__
    changed = 0
    for q in QUERIES.values():
        hits, stages = staged(r, q, None)
        final, retrieved = _direct(engine, q)
        assert set(stages) == {"retrieved"}
        assert pairs(hits) == approx_pairs(final), q
        assert pairs(stages["retrieved"]) == approx_pairs(retrieved), q
        assert len(stages["retrieved"]) == engine.retriever.similarity_top_k
        changed += pairs(hits) != pairs(stages["retrieved"])
    assert changed >= 3  # the postprocessors really reorder / drop / rescore: the two lists differ


def test_query_engine_async_equals_sync(engine: Any) -> None:
    r = LlamaIndexRetriever(engine, id_from="ref_doc_id")
    assert r.native_async  # the vector retriever implements _aretrieve
    for q in QUERIES.values():
        assert astaged(r, q, None) == staged(r, q, None)
        assert astaged(r, q, 3) == staged(r, q, 3)


def test_query_engine_explicit_k_copies_the_retriever_and_postprocesses_after(li: Any) -> None:
    from llama_index.core.schema import QueryBundle

    engine = _engines(li)["from_args+cutoff+reranker"]
    r = LlamaIndexRetriever(engine, id_from="ref_doc_id")
    for k in (1, 2, 8):
        with_k = engine.with_retriever(li.as_retriever(similarity_top_k=k))
        for q in QUERIES.values():
            hits, stages = staged(r, q, k)
            assert pairs(stages["retrieved"]) == approx_pairs(_ref_ids(li.as_retriever(similarity_top_k=k).retrieve(q)))
            assert pairs(hits) == approx_pairs(_ref_ids(with_k.retrieve(QueryBundle(q)))[:k])
            assert len(hits) <= min(k, 3)  # the reranker's top_n still applies: a shorter list is right
    assert engine.retriever.similarity_top_k == 5 and r.configured_k == 5  # the app's engine is untouched
    hits, stages = staged(r, QUERIES["q2"], None)
    assert len(stages["retrieved"]) == 5


def test_query_engine_retrieves_once_with_the_engines_own_events(li: Any) -> None:
    """The adapter's one pass emits the same LlamaIndex spans and events as ``engine.retrieve``."""
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler
    from llama_index.core.schema import QueryBundle

    log: list[str] = []

    class Events(BaseEventHandler):
        def handle(self, event: Any, **kwargs: Any) -> None:
            log.append(type(event).__name__)

    class Spans(SimpleSpanHandler):
        def new_span(self, id_: str, *args: Any, **kwargs: Any) -> Any:
            log.append("span:" + id_.split("-")[0])
            return super().new_span(id_, *args, **kwargs)

    engine = _engines(li)["from_args+LLMRerank"]
    r = LlamaIndexRetriever(engine, id_from="ref_doc_id")
    d = get_dispatcher()
    events, spans = Events(), Spans()
    d.add_event_handler(events)
    d.add_span_handler(spans)
    try:
        engine.retrieve(QueryBundle(QUERIES["q1"]))
        direct = list(log)
        log.clear()
        r.fetch(QUERIES["q1"], None)
        adapted = list(log)
    finally:
        d.event_handlers.remove(events)
        d.span_handlers.remove(spans)
    assert adapted == direct
    assert adapted.count("RetrievalStartEvent") == 1 and "span:LLMRerank._postprocess_nodes" in adapted
    assert adapted.count("LLMPredictStartEvent") == 2  # six nodes in batches of four: the real rerank path


def test_retrieved_stage_is_a_snapshot_before_in_place_rescoring(li: Any) -> None:
    engine = _engines(li)["as_query_engine+reranker"]
    raw = LlamaIndexRetriever(engine).fetch(QUERIES["q1"], None)
    assert isinstance(raw, Staged)
    before = _ref_ids(engine.retriever.retrieve(QUERIES["q1"]))
    assert _ref_ids(raw.stages["retrieved"]) == before  # cosine scores, not the reranker's
    assert [n.score for n in raw.final] != [s for _, s in before[:2]]


def test_query_engine_over_split_chunks_by_node_and_by_source_document() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import QueryBundle

    from ragas_fakes import make_llamaindex_embedding

    docs = [Document(text=" ".join([t] * 5), doc_id=d) for d, t in CORPUS.items()]
    index = VectorStoreIndex.from_documents(
        docs,
        transformations=[SentenceSplitter(chunk_size=40, chunk_overlap=0)],
        embed_model=make_llamaindex_embedding(),
    )
    assert len(index.docstore.docs) > len(docs)
    engine = _engine_from(index, top_k=8, postprocessors=[_reranker(4)])
    by_node = LlamaIndexRetriever(engine)
    by_doc = LlamaIndexRetriever(engine, id_from="ref_doc_id", doc_map=lambda d: d)  # chunks -> documents
    for q in QUERIES.values():
        final = engine.retrieve(QueryBundle(q))
        hits, stages = staged(by_node, q, None)
        assert [h.doc_id for h in hits] == [n.node.node_id for n in final]
        assert [h.doc_id for h in stages["retrieved"]] == [n.node.node_id for n in engine.retriever.retrieve(q)]
        hits, stages = staged(by_doc, q, None)
        assert [h.doc_id for h in hits] == list(dict.fromkeys(n.node.ref_doc_id for n in final))
        assert set(h.doc_id for h in stages["retrieved"]) <= set(CORPUS)


def _engine_from(index: Any, *, top_k: int, postprocessors: list[Any]) -> Any:
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine

    return RetrieverQueryEngine.from_args(
        index.as_retriever(similarity_top_k=top_k), llm=MockLLM(), node_postprocessors=postprocessors
    )


def test_engine_with_its_own_retrieve_is_called_as_it_is(li: Any) -> None:
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import QueryBundle

    class LastOnly(RetrieverQueryEngine):  # an app's engine that hands the LLM something else
        def retrieve(self, query_bundle: QueryBundle) -> list[Any]:
            return super().retrieve(query_bundle)[-1:]

    base = _engine_from(li, top_k=4, postprocessors=[_reranker(3)])
    engine = LastOnly(retriever=base.retriever, response_synthesizer=base._response_synthesizer)
    engine._node_postprocessors = base._node_postprocessors
    r = LlamaIndexRetriever(engine, id_from="ref_doc_id")
    for q in QUERIES.values():
        hits, stages = staged(r, q, None)
        assert pairs(hits) == approx_pairs(_ref_ids(engine.retrieve(QueryBundle(q)))) and len(hits) == 1
        assert stages == {}
        assert astaged(r, q, None)[0] == hits


def test_index_and_retriever_configured_k_and_k_none(li: Any) -> None:
    from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever

    r = LlamaIndexRetriever(li, id_from="ref_doc_id")
    default_k = li.as_retriever().similarity_top_k
    assert r.configured_k == default_k
    hits, stages = staged(r, QUERIES["q1"], None)
    assert len(hits) == default_k and stages == {}
    assert pairs(hits) == approx_pairs(_ref_ids(li.as_retriever().retrieve(QUERIES["q1"])))
    assert len(staged(r, QUERIES["q1"], 7)[0]) == 7
    mine = li.as_retriever(similarity_top_k=6)
    assert isinstance(mine, VectorIndexRetriever)
    r = LlamaIndexRetriever(mine)
    assert r.configured_k == 6 and r.for_k(None) is mine and len(staged(r, QUERIES["q1"], None)[0]) == 6
    assert len(staged(r, QUERIES["q1"], 3)[0]) == 3 and mine.similarity_top_k == 6


# == LangChain ====================================================================================
EXTRA = {"x1": "Lemons and limes are sour citrus.", "x2": "Night owls hunt mice in the dark."}


@pytest.fixture(scope="module")
def lc() -> dict[str, Any]:
    pytest.importorskip("langchain_core", reason="langchain-core not installed")
    pytest.importorskip("langchain_classic", reason="langchain-classic not installed")
    pytest.importorskip("langchain_community.retrievers", reason="langchain-community not installed")
    pytest.importorskip("rank_bm25", reason="rank-bm25 not installed")
    from langchain_classic.retrievers import ContextualCompressionRetriever, EnsembleRetriever
    from langchain_classic.retrievers.document_compressors import EmbeddingsFilter
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from ragas_fakes import make_embeddings

    class OverlapReranker(BaseDocumentCompressor):
        """A reranking compressor: documents sharing most words with the query first, top_n kept."""

        top_n: int = 3

        def compress_documents(self, documents: Any, query: str, callbacks: Any = None) -> list[Any]:
            q = tokens(query)
            ranked = sorted(documents, key=lambda d: (-len(q & tokens(d.page_content)), len(d.page_content)))
            return ranked[: self.top_n]

    docs = [Document(page_content=t, metadata={"doc_id": d}) for d, t in {**CORPUS, **EXTRA}.items()]
    bm25 = BM25Retriever.from_documents(docs, k=5)
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(docs)  # no ids: UUIDs, the corpus id lives in metadata
    dense = store.as_retriever(search_kwargs={"k": 4})
    filtered = ContextualCompressionRetriever(
        base_compressor=EmbeddingsFilter(embeddings=make_embeddings(), similarity_threshold=0.2), base_retriever=bm25
    )
    reranked = ContextualCompressionRetriever(base_compressor=OverlapReranker(top_n=2), base_retriever=dense)
    return {
        "docs": docs,
        "bm25": bm25,
        "store": store,
        "dense": dense,
        "filtered": filtered,
        "reranked": reranked,
        "ensemble": EnsembleRetriever(retrievers=[bm25, dense], weights=[0.6, 0.4], id_key="doc_id"),
        "nested": EnsembleRetriever(retrievers=[filtered, dense], id_key="doc_id"),
        "BM25Retriever": BM25Retriever,
    }


def _lc_ids(docs: list[Any]) -> list[str]:
    return [d.metadata["doc_id"] for d in docs]


def _ids(hits: list[Any]) -> list[str]:
    return [h.doc_id for h in hits]


@pytest.mark.parametrize("which", ["filtered", "reranked"])
def test_compression_retriever_scored_on_the_compressed_list(lc: dict[str, Any], which: str) -> None:
    obj = lc[which]
    r = LangChainRetriever(obj, id_from="metadata:doc_id")
    assert r.configured_k == (5 if which == "filtered" else 4)
    changed = 0
    for q in QUERIES.values():
        hits, stages = staged(r, q, None)
        assert set(stages) == {"retrieved"}
        assert _ids(hits) == _lc_ids(obj.invoke(q)), q
        assert _ids(stages["retrieved"]) == _lc_ids(obj.base_retriever.invoke(q)), q
        changed += _ids(hits) != _ids(stages["retrieved"])
        assert astaged(r, q, None) == (hits, stages)
    assert changed >= 3


def test_ensemble_scored_on_the_fused_list_members_kept(lc: dict[str, Any]) -> None:
    ens = lc["ensemble"]
    r = LangChainRetriever(ens, id_from="metadata:doc_id")
    assert r.configured_k == 5 + 4  # the fused list has at most the members' k together
    for q in QUERIES.values():
        hits, stages = staged(r, q, None)
        assert list(stages) == ["retriever:0", "retriever:1"]
        assert _ids(hits) == _lc_ids(ens.invoke(q)), q
        assert _ids(stages["retriever:0"]) == _lc_ids(lc["bm25"].invoke(q))
        assert _ids(stages["retriever:1"]) == _lc_ids(lc["dense"].invoke(q))
        assert len(hits) > len(stages["retriever:0"])  # fused: more than either member
        assert astaged(r, q, None) == (hits, stages)


def test_nested_wrappers_name_stages_by_path(lc: dict[str, Any]) -> None:
    nested = lc["nested"]
    r = LangChainRetriever(nested, id_from="metadata:doc_id")
    for q in QUERIES.values():
        hits, stages = staged(r, q, None)
        assert list(stages) == ["retriever:0", "retriever:0/retrieved", "retriever:1"]
        assert _ids(hits) == _lc_ids(nested.invoke(q))
        assert _ids(stages["retriever:0"]) == _lc_ids(lc["filtered"].invoke(q))
        assert _ids(stages["retriever:0/retrieved"]) == _lc_ids(lc["bm25"].invoke(q))
        assert _ids(stages["retriever:1"]) == _lc_ids(lc["dense"].invoke(q))
        assert astaged(r, q, None) == (hits, stages)


def test_wrapper_explicit_k_copies_the_inner_retrievers(lc: dict[str, Any]) -> None:
    from langchain_classic.retrievers import ContextualCompressionRetriever, EnsembleRetriever

    bm25_cls = lc["BM25Retriever"]
    for k in (1, 3, 7):
        bm25_k = bm25_cls.from_documents(lc["docs"], k=k)
        dense_k = lc["store"].as_retriever(search_kwargs={"k": k})
        filtered_k = ContextualCompressionRetriever(
            base_compressor=lc["filtered"].base_compressor, base_retriever=bm25_k
        )
        ensemble_k = EnsembleRetriever(retrievers=[bm25_k, dense_k], weights=[0.6, 0.4], id_key="doc_id")
        for q in QUERIES.values():
            hits, stages = staged(LangChainRetriever(lc["filtered"], id_from="metadata:doc_id"), q, k)
            assert _ids(stages["retrieved"]) == _lc_ids(bm25_k.invoke(q)) and len(stages["retrieved"]) == k
            assert _ids(hits) == _lc_ids(filtered_k.invoke(q))
            hits, stages = staged(LangChainRetriever(lc["ensemble"], id_from="metadata:doc_id"), q, k)
            assert _ids(stages["retriever:0"]) == _lc_ids(bm25_k.invoke(q))
            assert _ids(stages["retriever:1"]) == _lc_ids(dense_k.invoke(q))
            assert _ids(hits) == _lc_ids(ensemble_k.invoke(q))[:k]
    assert lc["bm25"].k == 5 and lc["dense"].search_kwargs == {"k": 4}  # the app's objects are untouched


def test_wrapper_call_shows_tracing_the_same_runs_and_runs_each_retriever_once(lc: dict[str, Any]) -> None:
    """Tracing (a context-var callback, as LangSmith uses) sees the same run tree as the app's own invoke."""
    from langchain_core.tracers.context import collect_runs

    def tree(run: Any) -> tuple[Any, ...]:
        out = run.outputs or {}
        return (run.name, run.run_type, len(out.get("documents", ())), tuple(map(tree, run.child_runs)))

    for which in ("filtered", "nested"):
        obj = lc[which]
        with collect_runs() as direct:
            obj.invoke(QUERIES["q2"])
        r = LangChainRetriever(obj, id_from="metadata:doc_id")
        with collect_runs() as adapted:
            r.fetch(QUERIES["q2"], None)
        with collect_runs() as adapted_async:
            asyncio.run(r.afetch(QUERIES["q2"], None))
        expected = [tree(run) for run in direct.traced_runs]
        assert len(expected) == 1 and expected[0][0] == type(obj).__name__
        assert [tree(run) for run in adapted.traced_runs] == expected
        assert [tree(run) for run in adapted_async.traced_runs] == expected
    assert str(expected).count("'BM25Retriever'") == 1  # the nested ensemble ran its bm25 once


def test_langchain_configured_k_and_k_none(lc: dict[str, Any]) -> None:
    store = lc["store"]
    r = LangChainRetriever(store, id_from="metadata:doc_id")
    assert r.configured_k is None
    hits, _ = staged(r, QUERIES["q2"], None)
    assert len(store.store) > DEFAULT_K and len(hits) == DEFAULT_K
    assert _ids(hits) == _lc_ids([d for d, _ in store.similarity_search_with_score(QUERIES["q2"], k=DEFAULT_K)])
    r = LangChainRetriever(lc["dense"], id_from="metadata:doc_id")  # read through the store, scores kept
    assert r.configured_k == 4 and len(staged(r, QUERIES["q2"], None)[0]) == 4
    r = LangChainRetriever(store.as_retriever(), id_from="metadata:doc_id")
    assert r.configured_k == 4 and len(staged(r, QUERIES["q2"], None)[0]) == 4
    r = LangChainRetriever(store.as_retriever(), id_from="metadata:doc_id", scores=False)
    assert r.configured_k == 4 and r.for_k(None) is r.obj and len(staged(r, QUERIES["q2"], None)[0]) == 4
    r = LangChainRetriever(lc["bm25"], id_from="metadata:doc_id")
    assert r.configured_k == 5 and r.for_k(None) is lc["bm25"]
    hits, stages = staged(r, QUERIES["q2"], None)
    assert _ids(hits) == _lc_ids(lc["bm25"].invoke(QUERIES["q2"])) and stages == {}


def test_langchain_adapter_works_without_langchain_classic() -> None:
    pytest.importorskip("langchain_community.retrievers")
    pytest.importorskip("rank_bm25")
    code = textwrap.dedent(
        """
        import sys
        sys.modules["langchain_classic"] = None  # not installed
        from langchain_community.retrievers import BM25Retriever
        from langchain_core.documents import Document
        from rankbridge.frameworks import LangChainRetriever
        r = LangChainRetriever(BM25Retriever.from_documents([Document(page_content="a b", id="d1")], k=1))
        print(r.configured_k, [h.doc_id for h in r.retrieve("a", 1)], "langchain_classic" in sys.modules)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "['d1']", "True"]


# == callable =====================================================================================
def test_callable_k_none_passes_default_k_and_keeps_the_list() -> None:
    seen: list[Any] = []

    def search(query: str, k: int) -> list[str]:
        seen.append(k)
        return [f"d{i}" for i in range(15)]

    def kw_search(query: str, *, k: int) -> list[str]:
        seen.append(k)
        return ["a"]

    def no_k(query: str) -> list[str]:
        return [f"d{i}" for i in range(15)]

    r = CallableRetriever(search)
    assert r.configured_k is None
    hits, stages = staged(r, "q", None)
    assert seen == [DEFAULT_K] and len(hits) == 15 and stages == {}
    assert len(staged(r, "q", 3)[0]) == 3 and seen[-1] == 3
    staged(CallableRetriever(kw_search), "q", None)
    assert seen[-1] == DEFAULT_K
    assert len(staged(CallableRetriever(no_k), "q", None)[0]) == 15
    assert len(staged(CallableRetriever(no_k), "q", 4)[0]) == 4


# == end to end through run_retriever (needs the runner to record stages) ============================
def test_run_retriever_on_a_query_engine_keeps_both_lists(li: Any) -> None:
    engine = _engines(li)["from_args+cutoff+reranker"]
    for mode in ("sync", "async"):
        run = run_retriever(engine, QUERIES, k=None, id_from="ref_doc_id", mode=mode, progress=False)  # type: ignore[arg-type]
        assert run.errors == {}
        assert run.config["configured_k"] == 5
        retrieved = run.to_stage("retrieved")
        for qid, q in QUERIES.items():
            final, before = _direct(engine, q)
            assert run.ranking(qid) == [d for d, _ in final]
            assert retrieved.ranking(qid) == [d for d, _ in before]
        run3 = run_retriever(engine, QUERIES, k=3, id_from="ref_doc_id", mode=mode, progress=False)  # type: ignore[arg-type]
        assert run3.config["k"] == 3 and run3.config["configured_k"] == 5
        assert all(len(run3.to_stage("retrieved").ranking(qid)) == 3 for qid in QUERIES)


def test_run_retriever_on_langchain_wrappers_keeps_inner_lists(lc: dict[str, Any]) -> None:
    run = run_retriever(lc["filtered"], QUERIES, k=None, id_from="metadata:doc_id", progress=False)
    assert run.errors == {} and run.config["configured_k"] == 5
    for qid, q in QUERIES.items():
        assert run.ranking(qid) == _lc_ids(lc["filtered"].invoke(q))
        assert run.to_stage("retrieved").ranking(qid) == _lc_ids(lc["bm25"].invoke(q))
    run = run_retriever(lc["ensemble"], QUERIES, k=None, id_from="metadata:doc_id", progress=False)
    assert set(run.stages) == {"retriever:0", "retriever:1"}
    for qid, q in QUERIES.items():
        assert run.ranking(qid) == _lc_ids(lc["ensemble"].invoke(q))
        assert run.to_stage("retriever:1").ranking(qid) == _lc_ids(lc["dense"].invoke(q))
