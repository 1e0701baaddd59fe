"""The runner is loud where the audits of LangChain / LlamaIndex apps found it quiet or misleading.

Each test builds the framework objects as an app builds them, offline (the shipped golden set's passages over
a deterministic local embedding), and checks what the user is told: which function refused the run, that a
``k`` deeper than every list says so, that an MMR retriever's ``fetch_k`` follows a deeper ``k``, and that a
query engine the runner cannot unwrap points at :func:`rankbridge.run_app`.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

import rankbridge as rb
from rankbridge import GoldenSet
from rankbridge.demo import TrigramEmbedding, demo_golden_set
from rankbridge.errors import RetrievalError, RunCoverageWarning


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    return demo_golden_set()


# -- 1. a refusal names the function the user called ------------------------------------------------------------
def test_a_refused_app_run_names_run_app_not_run_retriever(golden: GoldenSet) -> None:
    def app(question: str) -> str:  # an app f(question) whose store is down
        raise ConnectionError("vector store unreachable")

    n = len(golden.queries)
    for call, name in (
        (lambda: rb.run_app(app, golden, frameworks=()), "run_app"),
        (lambda: asyncio.run(rb.arun_app(app, golden, frameworks=())), "arun_app"),
    ):
        with pytest.raises(RetrievalError) as raised:
            call()
        text = str(raised.value)
        assert text.startswith(f"{name}: {n} of {n} queries failed with the same error"), text
        assert "run_retriever" not in text

    def search(query: str, k: int) -> list[str]:
        raise ConnectionError("vector store unreachable")

    with pytest.raises(RetrievalError, match=r"^run_retriever: .*failed with the same error"):
        rb.run_retriever(search, golden, retries=0, progress=False, check_ids=False)


@pytest.fixture(scope="module")
def small(golden: GoldenSet) -> GoldenSet:
    """16 questions over the full corpus (252 documents): lists shorter than 20 are not the corpus's size."""
    return GoldenSet(golden.queries[:16], golden.qrels, corpus=golden.corpus, name="lumen-16")


def _no_warnings(call: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the suite's setting, made explicit
        return call()


# -- 2. a k deeper than every list the retriever returns --------------------------------------------------------
def test_a_function_that_ignores_k_warns_and_the_summary_says_so(small: GoldenSet) -> None:
    ids = list(small.corpus or {})

    def fixed(query: str, k: int) -> list[str]:  # ignores k: its store's own top-4
        return ids[:4]

    with pytest.warns(RunCoverageWarning, match=r"^run_retriever: every list is shorter than k=20: the deepest") as w:
        run = rb.run_retriever(fixed, small, k=20, progress=False)
    assert len(w) == 1 and "has 4 hits, over 16 queries" in str(w[0].message)
    assert "ignores k" in str(w[0].message) and "similarity_top_k" in str(w[0].message)
    assert run.config["k"] == 20 and run.config["short_lists"]["deepest"] == 4
    assert "\n  depth: every list is shorter than k=20" in str(rb.summarize(run))
    with pytest.warns(RunCoverageWarning, match=r"^arun_retriever: every list is shorter than k=20"):
        asyncio.run(rb.arun_retriever(fixed, small, k=20, progress=False))
    # k not asked for (the default 10): noted, not warned
    quiet = _no_warnings(lambda: rb.run_retriever(fixed, small, progress=False))
    assert "k=10 is the default, not asked for" in quiet.config["short_lists"]["message"]

    def honest(query: str, k: int) -> list[str]:  # honours k; the store holds fewer matches for some queries
        return ids[: min(k, 2 + len(query) % 5)]

    for run in (
        _no_warnings(lambda: rb.run_retriever(honest, small, k=20, progress=False)),
        _no_warnings(lambda: rb.run_retriever(fixed, small, k=4, progress=False)),
    ):
        assert "short_lists" not in run.config and "depth:" not in str(rb.summarize(run))


def _llama_index(golden: GoldenSet) -> Any:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding

    class LocalEmbedding(BaseEmbedding):  # type: ignore[misc]
        def _get_query_embedding(self, query: str) -> list[float]:
            return TrigramEmbedding(dim=256).embed_query(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return TrigramEmbedding(dim=256).embed_query(text)

    assert golden.corpus is not None
    docs = [Document(text=d["text"], doc_id=i) for i, d in golden.corpus.items()]
    return VectorStoreIndex.from_documents(docs, embed_model=LocalEmbedding())


def test_llamaindex_retrievers_without_similarity_top_k_warn(small: GoldenSet) -> None:
    index = _llama_index(small)
    from llama_index.core import QueryBundle
    from llama_index.core.retrievers import AutoMergingRetriever, BaseRetriever
    from llama_index.core.schema import NodeWithScore

    inner = index.as_retriever(similarity_top_k=4)

    class Custom(BaseRetriever):  # type: ignore[misc]
        """An app's own retriever: its depth is its inner retriever's, which k cannot reach."""

        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return list(inner.retrieve(query_bundle))

    merging = AutoMergingRetriever(index.as_retriever(similarity_top_k=3), index.storage_context)
    for retriever, name in ((Custom(), "Custom"), (merging, "AutoMergingRetriever")):
        with pytest.warns(RunCoverageWarning, match=rf"k=20: .*; {name} has no similarity_top_k, so k=20") as w:
            run = rb.run_retriever(retriever, small, k=20, id_from="ref_doc_id", progress=False)
        assert f"the deepest has {run.config['short_lists']['deepest']} hits" in str(w[0].message)
        assert run.config["short_lists"]["deepest"] <= 4
    # similarity_top_k=20 set on a copy: k reaches the retriever, no warning (and as configured: k=None)
    for k in (20, None):
        run = _no_warnings(lambda k=k: rb.run_retriever(inner, small, k=k, id_from="ref_doc_id", progress=False))
        assert "short_lists" not in run.config


def _lc_store(golden: GoldenSet) -> Any:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class LocalEmbeddings(TrigramEmbedding, Embeddings):  # type: ignore[misc]
        """A deterministic local embedding (no download)."""

    assert golden.corpus is not None
    store = InMemoryVectorStore(LocalEmbeddings(dim=256))
    store.add_documents([Document(d["text"], metadata={"doc_id": i}) for i, d in golden.corpus.items()])
    return store


def test_langchain_retriever_without_k_warns(small: GoldenSet) -> None:
    store = _lc_store(small)
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    inner = store.as_retriever(search_kwargs={"k": 4})

    class Custom(BaseRetriever):  # type: ignore[misc]
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return list(inner.invoke(query))

    with pytest.warns(RunCoverageWarning, match=r"Custom has no k that rankbridge can set .*search_kwargs=\{'k'"):
        run = rb.run_retriever(Custom(), small, k=20, id_from="metadata:doc_id", progress=False)
    assert run.config["short_lists"]["deepest"] == 4
    for k in (20, None):
        run = _no_warnings(lambda k=k: rb.run_retriever(inner, small, k=k, id_from="metadata:doc_id", progress=False))
        assert "short_lists" not in run.config and max(len(run.ranking(q.id)) for q in small.queries) == (k or 4)


# -- 3. LangChain MMR: fetch_k follows a deeper k on the copy ---------------------------------------------------
def test_langchain_mmr_retriever_run_deeper_than_its_fetch_k(small: GoldenSet) -> None:
    store = _lc_store(small)
    mmr = store.as_retriever(search_type="mmr", search_kwargs={"k": 4, "fetch_k": 10})
    run = _no_warnings(lambda: rb.run_retriever(mmr, small, k=30, id_from="metadata:doc_id", progress=False))
    assert mmr.search_kwargs == {"k": 4, "fetch_k": 10}  # the app's retriever is not changed
    # LangChain itself, configured as the copy is: 30 among 75 candidates (the app's 10 for 4)
    same = store.as_retriever(search_type="mmr", search_kwargs={"k": 30, "fetch_k": 75})
    for q in small.queries:
        expected = [d.metadata["doc_id"] for d in same.invoke(q.text)]
        assert len(expected) == 30 and run.ranking(q.id) == expected
    # a fetch_k already >= k is the app's: kept
    wide = store.as_retriever(search_type="mmr", search_kwargs={"k": 4, "fetch_k": 40})
    run = rb.run_retriever(wide, small, k=30, id_from="metadata:doc_id", progress=False)
    as_built = store.as_retriever(search_type="mmr", search_kwargs={"k": 30, "fetch_k": 40})
    assert all(run.ranking(q.id) == [d.metadata["doc_id"] for d in as_built.invoke(q.text)] for q in small.queries)
    # no fetch_k: LangChain's default 20 for 4, in the same ratio
    plain = store.as_retriever(search_type="mmr")
    run = rb.run_retriever(plain, small, k=30, id_from="metadata:doc_id", progress=False)
    assert {len(run.ranking(q.id)) for q in small.queries} == {30}


# -- 4. a query engine the runner cannot unwrap points at run_app -----------------------------------------------
def test_sub_question_and_router_engines_point_at_run_app(small: GoldenSet) -> None:
    index = _llama_index(small)
    from llama_index.core import get_response_synthesizer
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RouterQueryEngine, SubQuestionQueryEngine
    from llama_index.core.question_gen import LLMQuestionGenerator
    from llama_index.core.selectors import LLMSingleSelector
    from llama_index.core.tools import QueryEngineTool, ToolMetadata

    llm = MockLLM()  # never called: the engines are refused before any question
    tools = [QueryEngineTool(index.as_query_engine(llm=llm), ToolMetadata(name="docs", description="the docs"))]
    sub = SubQuestionQueryEngine(
        question_gen=LLMQuestionGenerator.from_defaults(llm=llm),
        response_synthesizer=get_response_synthesizer(llm=llm),
        query_engine_tools=tools,
        use_async=False,
    )
    router = RouterQueryEngine(selector=LLMSingleSelector.from_defaults(llm=llm), query_engine_tools=tools, llm=llm)
    for engine in (sub, router):
        name = type(engine).__name__
        pattern = rf"{name} is a query engine with no \.retriever .*rankbridge\.run_app\(engine, golden\)"
        with pytest.raises(rb.InputError, match=pattern):
            rb.run_retriever(engine, small, progress=False)
        with pytest.raises(rb.InputError, match=pattern):
            asyncio.run(rb.arun_retriever(engine, small, progress=False))


# -- 5. the id check's queries are asked once -------------------------------------------------------------------
def test_the_id_check_results_are_the_runs_own(small: GoldenSet) -> None:
    """The id check retrieves the first queries before the run; the run keeps those results instead of asking
    again (an LLM-backed retriever would pay twice). Here the check also switches the id source (the store's
    UUIDs -> metadata doc_id), and the kept results are read under the new one."""
    store = _lc_store(small)
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    inner = store.as_retriever(search_kwargs={"k": 5})
    asked: list[str] = []
    flaky = {small.queries[1].text}  # fails once: the check does not retry, the run proper does

    class Counting(BaseRetriever):  # type: ignore[misc]
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            asked.append(query)
            if query in flaky:
                flaky.discard(query)
                raise ConnectionError("store busy")
            return list(inner.invoke(query))

        async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return self._get_relevant_documents(query, run_manager=run_manager)

    expected = {q.id: [d.metadata["doc_id"] for d in inner.invoke(q.text)] for q in small.queries}
    for mode in ("sync", "async"):
        asked.clear()
        flaky.add(small.queries[1].text)
        run = rb.run_retriever(Counting(), small, mode=mode, backoff=0.0, progress=False)
        assert run.config["id_resolution"]["to"] == "metadata:doc_id"
        assert len(asked) == len(small.queries) + 1, mode  # each question once, the failed one once more
        assert asked.count(small.queries[1].text) == 2 and not run.errors
        assert {q.id: run.ranking(q.id) for q in small.queries} == expected
        assert set(run.latency) == {q.id for q in small.queries}
