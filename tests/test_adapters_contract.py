"""The contract every adapter passes, against real framework retrievers that run offline.

Each case builds a real retriever over the same small corpus and says how to call the framework
directly; the contract checks the adapter against that: same ids in the same order, k respected, scores
kept when the framework has them, framework errors mapped to RetrievalError, async == sync, and the
runner's run == the direct calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from capture_data import CORPUS
from rankbridge import RetrievalError
from rankbridge.frameworks import CallableRetriever, LangChainRetriever, LlamaIndexRetriever, adapt
from rankbridge.retriever import Retriever
from rankbridge.runner import run_retriever

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

QUERIES = {
    "q1": "what causes scurvy",
    "q2": "vitamin C citrus oranges",
    "q3": "dogs and cats at night",
    "q4": "deficiency disease diet",
    "q5": "bread yeast",
}


def hash_vector(text: str, dim: int = 64) -> list[float]:
    v = [0.0] * dim
    for tok in re.findall(r"\w+", text.lower()):
        v[int(hashlib.md5(tok.encode()).hexdigest(), 16) % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


@dataclass
class Case:
    name: str
    obj: Any  # the framework object handed to adapt()
    direct: Callable[[str, int], list[tuple[str, float | None]]]  # the framework called directly
    adapter: type
    has_scores: bool
    break_it: Callable[[pytest.MonkeyPatch], None]  # make the framework raise
    native_async: bool


def _llamaindex_bm25() -> Case:
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    nodes = [TextNode(id_=d, text=t) for d, t in CORPUS.items()]
    r = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=2)

    def direct(q: str, k: int) -> list[tuple[str, float | None]]:
        fresh = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=k)
        return [(n.node.node_id, n.score) for n in fresh.retrieve(q)]

    def break_it(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(BM25Retriever, "_retrieve", lambda self, qb: 1 / 0)

    return Case("llamaindex-bm25", r, direct, LlamaIndexRetriever, True, break_it, False)


def _llamaindex_vector() -> Case:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
    from llama_index.core.schema import TextNode

    class HashEmbedding(BaseEmbedding):
        """Deterministic bag-of-words hashing embedding: no model, no network."""

        def _get_query_embedding(self, query: str) -> list[float]:
            return hash_vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return hash_vector(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return hash_vector(text)

    nodes = [TextNode(id_=d, text=t) for d, t in CORPUS.items()]
    index = VectorStoreIndex(nodes, embed_model=HashEmbedding())

    def direct(q: str, k: int) -> list[tuple[str, float | None]]:
        return [(n.node.node_id, n.score) for n in index.as_retriever(similarity_top_k=k).retrieve(q)]

    def break_it(mp: pytest.MonkeyPatch) -> None:
        async def boom(self: Any, qb: Any) -> Any:
            raise ConnectionError("vector db unreachable")

        mp.setattr(VectorIndexRetriever, "_retrieve", lambda self, qb: 1 / 0)
        mp.setattr(VectorIndexRetriever, "_aretrieve", boom)

    return Case("llamaindex-vector", index, direct, LlamaIndexRetriever, True, break_it, True)


def _langchain_bm25() -> Case:
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document

    docs = [Document(page_content=t, id=d) for d, t in CORPUS.items()]
    r = BM25Retriever.from_documents(docs, k=2)

    def direct(q: str, k: int) -> list[tuple[str, float | None]]:
        return [(d.id, None) for d in BM25Retriever.from_documents(docs, k=k).invoke(q)]

    def break_it(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(BM25Retriever, "_get_relevant_documents", lambda self, q, *, run_manager: 1 / 0)

    return Case("langchain-bm25", r, direct, LangChainRetriever, False, break_it, False)


def _langchain_vector() -> Case:
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(page_content=t, id=d) for d, t in CORPUS.items()])

    def direct(q: str, k: int) -> list[tuple[str, float | None]]:
        return [(d.id, s) for d, s in store.similarity_search_with_score(q, k=k)]

    def break_it(mp: pytest.MonkeyPatch) -> None:
        def boom(self: Any, *a: Any, **kw: Any) -> Any:
            raise TimeoutError("store timed out")

        async def aboom(self: Any, *a: Any, **kw: Any) -> Any:
            raise TimeoutError("store timed out")

        mp.setattr(InMemoryVectorStore, "similarity_search_with_score", boom)
        mp.setattr(InMemoryVectorStore, "asimilarity_search_with_score", aboom)

    return Case("langchain-vector", store, direct, LangChainRetriever, True, break_it, True)


def _plain_callable() -> Case:
    def search(query: str, k: int) -> list[tuple[str, float]]:
        words = set(query.lower().split())
        scored = [(d, float(len(words & set(t.lower().split())))) for d, t in CORPUS.items()]
        return sorted(scored, key=lambda x: -x[1])[:k]

    state = {"broken": False}

    def maybe_broken(query: str, k: int) -> list[tuple[str, float]]:
        if state["broken"]:
            raise OSError("search service down")
        return search(query, k)

    def break_it(mp: pytest.MonkeyPatch) -> None:
        mp.setitem(state, "broken", True)

    return Case("callable", maybe_broken, lambda q, k: list(search(q, k)), CallableRetriever, True, break_it, False)


BUILDERS = {
    "llamaindex-bm25": _llamaindex_bm25,
    "llamaindex-vector": _llamaindex_vector,
    "langchain-bm25": _langchain_bm25,
    "langchain-vector": _langchain_vector,
    "callable": _plain_callable,
}
_cache: dict[str, Case] = {}


@pytest.fixture(params=list(BUILDERS))
def case(request: pytest.FixtureRequest) -> Iterator[Case]:
    name = request.param
    if name.startswith("llamaindex"):
        pytest.importorskip("llama_index.core", reason="llama-index-core not installed")
    if name.startswith("langchain"):
        pytest.importorskip("langchain_core", reason="langchain-core not installed")
    if name == "llamaindex-bm25":
        pytest.importorskip("llama_index.retrievers.bm25", reason="llama-index-retrievers-bm25 not installed")
    if name == "langchain-bm25":
        pytest.importorskip("langchain_community.retrievers", reason="langchain-community not installed")
        pytest.importorskip("rank_bm25", reason="rank-bm25 not installed")
    if name not in _cache:
        _cache[name] = BUILDERS[name]()
    yield _cache[name]


# -- the contract ----------------------------------------------------------------------------------
def test_adapt_picks_the_adapter(case: Case) -> None:
    r = adapt(case.obj)
    assert type(r) is case.adapter
    assert isinstance(r, Retriever)
    assert r.native_async is case.native_async  # type: ignore[attr-defined]


@pytest.mark.parametrize("k", [1, 3, 10])
def test_ids_order_and_scores_match_the_framework(case: Case, k: int) -> None:
    r = adapt(case.obj)
    for q in QUERIES.values():
        hits = r.retrieve(q, k)
        expected = case.direct(q, k)
        assert len(hits) <= k
        assert [h.doc_id for h in hits] == [d for d, _ in expected], q
        if case.has_scores:
            assert [h.score for h in hits] == pytest.approx([s for _, s in expected]), q
        else:
            assert all(h.score is None for h in hits)
        if case.name != "callable":
            assert [h.text for h in hits] == [CORPUS[d] for d, _ in expected]


def test_k_respected_without_touching_the_user_object(case: Case) -> None:
    before = getattr(case.obj, "similarity_top_k", getattr(case.obj, "k", None))
    r = adapt(case.obj)
    assert len(r.retrieve(QUERIES["q1"], 5)) == 5
    assert len(r.retrieve(QUERIES["q1"], 1)) == 1
    assert getattr(case.obj, "similarity_top_k", getattr(case.obj, "k", None)) == before


def test_async_equals_sync(case: Case) -> None:
    r = adapt(case.obj)
    for q in QUERIES.values():
        assert asyncio.run(r.aretrieve(q, 4)) == r.retrieve(q, 4)


def test_framework_errors_are_mapped(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    r = adapt(case.obj)
    case.break_it(monkeypatch)
    with pytest.raises(RetrievalError, match=rf"{r.framework} retriever .* raised") as sync_info:  # type: ignore[attr-defined]
        r.retrieve(QUERIES["q1"], 3)
    assert sync_info.value.__cause__ is not None
    with pytest.raises(RetrievalError) as async_info:
        asyncio.run(r.aretrieve(QUERIES["q1"], 3))
    assert async_info.value.__cause__ is not None
    run = run_retriever(r, QUERIES, k=3, retries=0, progress=False, keep_going=True)
    assert set(run.errors) == set(QUERIES)
    assert all(msg.startswith("error: ") and "raised" in msg for msg in run.errors.values())
    # by default a run whose first queries all fail alike stops, with that error
    with pytest.raises(RetrievalError, match=r"the first 5 queries all failed with the same error") as stop:
        run_retriever(r, QUERIES, k=3, retries=0, progress=False, concurrency=1)
    assert next(iter(run.errors.values())) in str(stop.value)
    assert len(stop.value.run.errors) == 5  # type: ignore[attr-defined]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_runner_equals_direct_calls(case: Case, mode: str) -> None:
    run = run_retriever(case.obj, QUERIES, k=3, concurrency=3, mode=mode, progress=False)  # type: ignore[arg-type]
    assert run.errors == {}
    for qid, q in QUERIES.items():
        assert run.ranking(qid) == [d for d, _ in case.direct(q, 3)]


# -- framework-specific id handling ----------------------------------------------------------------
def test_llamaindex_ref_doc_id_and_chunks() -> None:
    pytest.importorskip("llama_index.retrievers.bm25")
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.retrievers.bm25 import BM25Retriever

    docs = [Document(text=" ".join([t] * 6), doc_id=d) for d, t in CORPUS.items()]
    nodes = SentenceSplitter(chunk_size=40, chunk_overlap=0).get_nodes_from_documents(docs)
    assert len(nodes) > len(docs)
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
    by_node = LlamaIndexRetriever(bm25).retrieve("scurvy vitamin", 10)
    assert all(h.doc_id not in CORPUS for h in by_node)  # node ids are chunk uuids
    hits, notes = LlamaIndexRetriever(bm25, id_from="ref_doc_id", doc_map=lambda d: d).retrieve_with_notes(
        "scurvy vitamin", 10
    )
    ids = [h.doc_id for h in hits]
    assert set(ids) <= set(CORPUS) and len(ids) == len(set(ids))
    first_seen = list(dict.fromkeys(n.node.ref_doc_id for n in bm25.retrieve("scurvy vitamin")))
    assert ids == first_seen  # first occurrence wins
    assert any("already ranked higher" in n for n in notes)


def test_langchain_ids_from_metadata_and_missing_ids() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([Document(page_content=t, metadata={"doc_id": d}) for d, t in CORPUS.items()])
    hits = LangChainRetriever(store, id_from="metadata:doc_id").retrieve("scurvy", 3)
    assert all(h.doc_id in CORPUS and h.score is not None for h in hits)
    # a retriever over documents without ids: a clear, per-query error, never a silent guess
    from langchain_community.retrievers import BM25Retriever

    bm25 = BM25Retriever.from_documents([Document(page_content=t) for t in CORPUS.values()], k=3)
    with pytest.raises(RetrievalError, match=r"all failed with the same error.*has no doc id from 'id'.*id_from="):
        run_retriever(bm25, QUERIES, k=3, progress=False)
    run = run_retriever(bm25, QUERIES, k=3, progress=False, keep_going=True)
    assert set(run.errors) == set(QUERIES)
    assert "has no doc id from 'id'" in run.errors["q1"] and "id_from=" in run.errors["q1"]
    run = run_retriever(bm25, QUERIES, k=3, progress=False, id_from=["id", "content_hash"])
    assert run.errors == {} and run.hits("q1")[0].doc_id.startswith("sha256:")
    assert "used content_hash" in run.config["problems"]["q1"][0]


def test_langchain_vector_store_retriever_keeps_scores() -> None:
    pytest.importorskip("langchain_core")
    case = _langchain_vector()
    as_retriever = case.obj.as_retriever(search_kwargs={"k": 2})
    hits = LangChainRetriever(as_retriever).retrieve("citrus", 4)
    expected = case.direct("citrus", 4)
    assert [h.doc_id for h in hits] == [d for d, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected])
    plain = LangChainRetriever(as_retriever, scores=False).retrieve("citrus", 4)
    assert [h.doc_id for h in plain] == [h.doc_id for h in hits] and all(h.score is None for h in plain)


def test_llamaindex_query_engine_retriever() -> None:
    pytest.importorskip("llama_index.retrievers.bm25")
    case = _llamaindex_bm25()

    class Engine:  # stands in for a RetrieverQueryEngine: anything with a .retriever
        retriever = case.obj

    assert LlamaIndexRetriever(Engine()).retrieve("scurvy", 3) == LlamaIndexRetriever(case.obj).retrieve("scurvy", 3)


def test_wrong_objects_are_refused_clearly() -> None:
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from rankbridge import InputError

    with pytest.raises(InputError, match="expected a llama_index BaseRetriever"):
        LlamaIndexRetriever(object())
    with pytest.raises(InputError, match="expected a langchain_core BaseRetriever or VectorStore"):
        LangChainRetriever(object())


def test_llamaindex_nodes_read_as_get_content_and_node_id_return() -> None:
    # the adapter reads TextNode's text and id_ directly (no get_content() / node_id call per node); every
    # node class must still give exactly what its own accessors return, an override of them included
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import ImageNode, IndexNode, NodeWithScore, TextNode

    from rankbridge.retriever import result_attributes

    class Shouted(TextNode):
        def get_content(self, metadata_mode: Any = None) -> str:
            return self.text.upper()

    class Renamed(TextNode):
        @property
        def node_id(self) -> str:
            return "renamed-" + self.id_

    docs = [Document(text=" ".join([t] * 6), doc_id=d, metadata={"source": d}) for d, t in CORPUS.items()]
    chunks = SentenceSplitter(chunk_size=40, chunk_overlap=0).get_nodes_from_documents(docs)
    others = [
        [Document(text=f"doc {i}", doc_id=f"doc{i}", metadata={"i": i}) for i in range(3)],
        [ImageNode(text=f"a caption {i}", id_=f"img{i}", metadata={"k": 1}) for i in range(3)],
        [IndexNode(text=f"an index node {i}", id_=f"idx{i}", index_id="other") for i in range(3)],
        [Shouted(text=f"quiet words {i}", id_=f"shout{i}") for i in range(3)],
        [Renamed(text=f"renamed text {i}", id_=f"r{i}") for i in range(3)],
    ]
    for group in (chunks[:10], *others):
        results = [NodeWithScore(node=n, score=1.0 / (i + 1)) for i, n in enumerate(group)]

        class Stub(BaseRetriever):
            def _retrieve(self, query_bundle: Any, results: list[NodeWithScore] = results) -> list[NodeWithScore]:
                return results

        adapter = LlamaIndexRetriever(Stub())
        for _ in range(2):  # the first call learns the class, the second takes the compact path
            hits = adapter.retrieve("q", 10)
            assert [h.doc_id for h in hits] == [n.node_id for n in group]
            assert [h.text for h in hits] == [n.get_content() for n in group]
            assert [h.metadata for h in hits] == [n.metadata for n in group]
            assert [h.score for h in hits] == [r.score for r in results]
    assert result_attributes(chunks[0]) == ("id_", "text")
    assert result_attributes(Shouted(text="x")) == ("id_", "get_content")
    assert result_attributes(Renamed(text="x")) == ("node_id", "text")
    assert result_attributes(docs[0]) == ("id_", "get_content")  # Document's get_content reads text_resource
