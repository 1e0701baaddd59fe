"""The runner's per-query path for framework results: the same run by every route, and few objects kept.

Objects are built the way apps build them (``VectorStoreIndex.from_documents`` with a ``SentenceSplitter``
and a local hashing embedding; LangChain's ``InMemoryVectorStore`` and ``BM25Retriever.from_documents``), and
every expectation is read from the framework objects themselves: their accessors (``node_id``,
``get_content()``, ``Document.id``), or the general loop of the normalisation (a ``doc_map`` that maps nothing
sends every result through it).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from capture_data import CORPUS, QUERIES
from rankbridge.batch import Policy, Task, run_block
from rankbridge.runner import run_retriever

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _hits(run: Any) -> dict[str, list[tuple[Any, ...]]]:
    return {q: [(h.doc_id, h.score, h.text, h.metadata) for h in run.hits(q)] for q in run}


def _maps_nothing(doc_id: str) -> None:
    return None


# -- LlamaIndex nodes from a plain function, in a process where no LlamaIndexRetriever was built ------------
_FRESH = """
import json, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {tests!r})
from capture_data import CORPUS, QUERIES
from ragas_fakes import make_llamaindex_embedding
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import NodeWithScore, TextNode
import rankbridge.retriever as retriever
from rankbridge.runner import run_retriever

docs = [Document(text=" ".join([t] * 4), doc_id=d, metadata={{"source": d}}) for d, t in CORPUS.items()]
index = VectorStoreIndex.from_documents(
    docs, embed_model=make_llamaindex_embedding(), transformations=[SentenceSplitter(chunk_size=40, chunk_overlap=0)]
)
vector = index.as_retriever(similarity_top_k=6)

class Shouted(TextNode):  # overrides get_content: must still be called
    def get_content(self, metadata_mode=None):
        return self.text.upper()

shouted = [NodeWithScore(node=Shouted(text=f"quiet {{i}}", id_=f"s{{i}}"), score=1.0 - i / 10) for i in range(4)]

def search(query, k):
    return vector.retrieve(query)

def loud(query, k):
    return shouted

def hits(run):
    return {{q: [[h.doc_id, h.score, h.text, h.metadata] for h in run.hits(q)] for q in run}}

def direct(fn):
    read = lambda n: [n.node.node_id, n.score, n.node.get_content(), n.node.metadata]
    return {{q: [read(n) for n in fn(t, 6)] for q, t in QUERIES.items()}}

out = {{}}
for name, fn in (("search", search), ("loud", loud)):
    plain = run_retriever(fn, QUERIES, k=6, progress=False)
    general = run_retriever(fn, QUERIES, k=6, progress=False, doc_map=lambda d: None)
    out[name] = {{"plain": hits(plain), "general": hits(general), "direct": direct(fn)}}
node = search("scurvy", 6)[0].node
out["attributes"] = [list(retriever.result_attributes(node)), list(retriever.result_attributes(shouted[0].node))]
out["uuid_ids"] = all(d not in CORPUS for hs in out["search"]["plain"].values() for d, *_ in hs)
from rankbridge.frameworks import LlamaIndexRetriever
adapted = run_retriever(LlamaIndexRetriever(vector), QUERIES, k=6, progress=False)
out["adapter"] = hits(adapted)
print(json.dumps(out))
"""


def test_plain_function_returning_llamaindex_nodes_reads_them_as_the_adapter_does() -> None:
    # retriever._PLAIN_READS is process-global: a fresh interpreter shows what a plain function gets when no
    # LlamaIndexRetriever was built before it (the plain path learns TextNode's plain accessors itself)
    pytest.importorskip("llama_index.core", reason="llama-index-core not installed")
    code = textwrap.dedent(_FRESH).format(tests=str(Path(__file__).parent))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["attributes"] == [["id_", "text"], ["id_", "get_content"]]  # an override is still called
    assert out["uuid_ids"]  # SentenceSplitter chunks: UUID node ids, as apps have
    for name in ("search", "loud"):
        got = out[name]
        assert got["plain"] == got["general"] == got["direct"], name
        assert all(len(hs) > 0 for hs in got["plain"].values())
    assert out["loud"]["plain"]["q1"][0][2] == "QUIET 0"
    assert out["adapter"] == out["search"]["plain"]  # the adapter, built afterwards, gives the same run


# -- LangChain documents, through the adapter ---------------------------------------------------------------
def _langchain_retrievers() -> list[Any]:
    pytest.importorskip("langchain_community.retrievers", reason="langchain-community not installed")
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(  # no ids given: the store makes UUIDs, as apps have
        [Document(page_content=t, metadata={"doc_id": d, "n": i}) for i, (d, t) in enumerate(CORPUS.items())]
    )
    bm25 = BM25Retriever.from_documents(
        [Document(page_content=t, id=d, metadata={"source": d}) for d, t in CORPUS.items()], k=4
    )
    return [store.as_retriever(search_kwargs={"k": 4}), store, bm25]


@pytest.mark.parametrize("concurrency", [1, 8])
def test_langchain_runs_equal_the_general_loop_and_the_direct_calls(concurrency: int) -> None:
    for obj in _langchain_retrievers():
        run = run_retriever(obj, QUERIES, k=4, concurrency=concurrency, progress=False)
        general = run_retriever(obj, QUERIES, k=4, concurrency=concurrency, progress=False, doc_map=_maps_nothing)
        assert _hits(run) == _hits(general), type(obj).__name__
        assert run.errors == {} and run.duplicates == general.duplicates
        for qid, text in QUERIES.items():
            store = getattr(obj, "vectorstore", obj)  # a similarity VectorStoreRetriever is read through its store
            if hasattr(store, "similarity_search_with_score"):
                found = store.similarity_search_with_score(text, k=4)
                direct = [(d.id, s, d.page_content, d.metadata) for d, s in found]
            else:
                direct = [(d.id, None, d.page_content, d.metadata) for d in obj.invoke(text)][:4]
            assert _hits(run)[qid] == direct


def test_failures_and_id_checks_are_unchanged() -> None:
    pytest.importorskip("langchain_community.retrievers", reason="langchain-community not installed")
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document

    from rankbridge import RetrievalError

    bm25 = BM25Retriever.from_documents([Document(page_content=t) for t in CORPUS.values()], k=3)  # ids None
    run = run_retriever(bm25, QUERIES, k=3, progress=False, keep_going=True)
    assert set(run.errors) == set(QUERIES)
    assert run.errors["q1"].startswith("invalid result: result at rank 1 (Document) has no doc id from 'id'")
    with pytest.raises(RetrievalError, match=r"first 5 queries all failed with the same error"):
        run_retriever(bm25, QUERIES, k=3, progress=False)


# -- what a run keeps per query -------------------------------------------------------------------------
def _tracked_per_query(obj: Any, n: int) -> float:
    queries = {f"q{i}": f"query {i} scurvy" for i in range(n)}
    run_retriever(obj, queries, k=10, concurrency=1, progress=False)  # types learned, caches filled
    gc.collect()
    before = len(gc.get_objects())
    run = run_retriever(obj, queries, k=10, concurrency=1, progress=False)
    gc.collect()
    after = len(gc.get_objects())
    assert len(run.query_ids()) == n
    return (after - before) / n


def test_a_run_keeps_few_objects_for_the_collector_per_query() -> None:
    # The compact columns are tuples (a tuple of strs or floats leaves the collector's lists): a run of framework
    # results keeps its _Ranked entry and the metadata tuple per query, not four lists more to walk on every
    # full collection.
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from llama_index.core.base.base_retriever import BaseRetriever as LlamaBase
    from llama_index.core.schema import NodeWithScore, TextNode

    docs = [Document(page_content=f"text {i}", id=f"d{i}", metadata={"i": i}) for i in range(10)]
    nodes = [NodeWithScore(node=TextNode(id_=f"d{i}", text=f"text {i}"), score=1.0 - i / 10) for i in range(10)]

    class LangChainStub(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
            return docs

    class LlamaStub(LlamaBase):
        def _retrieve(self, query_bundle: Any) -> list[Any]:
            return nodes

    for obj in (LangChainStub(), LlamaStub()):
        assert _tracked_per_query(obj, 300) <= 2.2, type(obj).__name__


def test_task_errors_made_on_first_retry_only() -> None:
    task = Task("a", 1)
    assert task.errors == [] and task.errors is task.errors  # one list, made when first read
    calls: list[int] = []

    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise ConnectionError("down")
        return x * 2

    block = run_block([Task("a", 3), Task("b", 4)], flaky, Policy(concurrency=1, retries=1, backoff=0))
    assert block.values() == {"a": 6, "b": 8}
    retried = {o.key: o.retried for o in block.outcomes}
    assert [f.message for f in retried["a"]] == ["error: ConnectionError: down"] and retried["b"] == ()
