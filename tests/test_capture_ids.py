"""Live capture of apps whose results carry UUID ids: the doc-id check, its resolution and its errors.

Apps are built as apps build them: LlamaIndex ``VectorStoreIndex.from_documents`` with a
``SentenceSplitter`` (chunks get UUID node ids, the corpus id is ``ref_doc_id``), queried through
``as_retriever()`` and ``as_query_engine(llm=MockLLM())``; LangChain ``InMemoryVectorStore.add_documents``
without ids (UUIDs, the corpus id in ``metadata["doc_id"]``) and ``BM25Retriever.from_documents`` (no ids
at all). Embeddings are local and deterministic; nothing touches the network.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("langchain_core")

from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import TextNode

import rankbridge
from capture_data import CORPUS, GOLDEN, QRELS, QUERIES
from rankbridge import GoldenSet, Query, Run, idmatch
from rankbridge.capture import Capture, capture
from rankbridge.errors import IdMismatchError

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: the shared questions and qrels, with the corpus: every doc id the results should name is known
GOLDEN_CORPUS = GoldenSet(
    [Query(q, t) for q, t in QUERIES.items()], QRELS, corpus={d: {"text": t} for d, t in CORPUS.items()}
)


def long_text(doc_id: str) -> str:
    """Each corpus document as three sentences, so that a small SentenceSplitter makes several chunks of it."""
    words = CORPUS[doc_id].rstrip(".").split()
    return (
        f"{CORPUS[doc_id]} In short, {' '.join(words[:5])}. Also, {' '.join(words[3:])}. "
        f"To repeat it once more: {CORPUS[doc_id]} Or, in other words, {' '.join(words[::-1])}."
    )


# -- a local deterministic embedding for LlamaIndex (bag of hashed words) -----------------------------------
def hash_vector(text: str, dim: int = 64) -> list[float]:
    v = [0.0] * dim
    for word in re.findall(r"[a-z]+", text.lower()):
        v[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


class HashEmbedding(BaseEmbedding):
    """Deterministic bag-of-words hashing embedding: no model, no network."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return hash_vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return hash_vector(text)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used-offline")
    monkeypatch.setattr(Settings, "_llm", MockLLM(max_tokens=8))
    monkeypatch.setattr(Settings, "_embed_model", None)
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(autouse=True)
def _close_stray_event_loop() -> Iterator[None]:
    """LlamaIndex's sync token counting sets an event loop it never closes; close it here."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)


def llama_index(metadata: Callable[[str], dict[str, Any]] | None = None, doc_ids: bool = True) -> VectorStoreIndex:
    docs = [
        Document(text=long_text(d), **({"doc_id": d} if doc_ids else {}), metadata=metadata(d) if metadata else {})
        for d in CORPUS
    ]
    return VectorStoreIndex.from_documents(
        docs, embed_model=HashEmbedding(), transformations=[SentenceSplitter(chunk_size=50, chunk_overlap=0)]
    )


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    return llama_index()


def lc_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents([LCDocument(page_content=t, metadata={"doc_id": d}) for d, t in CORPUS.items()])
    return store


def hits(run: Run) -> dict[str, list[tuple[str, float | None, str | None]]]:
    return {q: [(h.doc_id, h.score, h.text) for h in run.hits(q)] for q in run}


def assert_same_run(a: Run, b: Run) -> None:
    assert sorted(a) == sorted(b)
    assert hits(a) == hits(b)
    assert a.duplicates == b.duplicates
    assert a.errors == b.errors


def run_app(app: Callable[[str], Any], golden: Any = GOLDEN_CORPUS, **kwargs: Any) -> Capture:
    with capture(golden, **kwargs) as cap:
        for text in QUERIES.values():
            app(text)
    return cap


# -- LlamaIndex -------------------------------------------------------------------------------------------------
def test_llamaindex_index_has_uuid_chunks_and_several_per_document(index: VectorStoreIndex) -> None:
    """The premise: node ids are UUIDs, ref_doc_id is the corpus id, and documents have several chunks."""
    nodes = index.as_retriever(similarity_top_k=10).retrieve("scurvy")
    assert all(UUID.match(n.node.node_id) for n in nodes)
    assert {n.node.ref_doc_id for n in nodes} <= set(CORPUS)
    assert len(index.docstore.docs) >= 2 * len(CORPUS)


@pytest.mark.parametrize("app", ["retriever", "query_engine"])
def test_llamaindex_uuid_chunks_resolve_to_ref_doc_id(index: VectorStoreIndex, app: str) -> None:
    call: Callable[[str], Any]
    if app == "retriever":
        call = index.as_retriever(similarity_top_k=4).retrieve
    else:
        call = index.as_query_engine(llm=MockLLM(max_tokens=8), similarity_top_k=4).query
    cap = run_app(call)
    explicit = run_app(call, id_from="ref_doc_id")
    run = cap.run
    # the same run as with the right id_from passed explicitly (chunks collapsed to their document)
    assert_same_run(run, explicit.run)
    assert sum(run.duplicates.values()) > 0  # a test that collapses nothing would prove little
    assert all(h.doc_id in CORPUS for q in run for h in run.hits(q))
    res = run.config["id_resolution"]
    assert (res["from"], res["to"], res["auto"], res["shares"]["id"], res["shares"]["ref_doc_id"]) == (
        "id",
        "ref_doc_id",
        True,
        0.0,
        1.0,
    )
    assert run.config["id_from"] == "ref_doc_id"
    assert "id_resolution" not in explicit.run.config and "id_check" not in explicit.run.config
    check = cap.summary()["id_check"]
    assert (check["status"], check["action"], check["chosen"]) == ("resolved", "resolved", "ref_doc_id")
    assert "id_from='ref_doc_id'" in check["message"]
    assert explicit.summary()["id_check"]["status"] == "ok"
    # and the scores are real ones, where the raw UUID run scores 0
    raw = cap.to_run(check_ids=False)
    assert rankbridge.evaluate(QRELS, run, ["recall@4"]).mean["recall@4"] > 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # evaluate may warn about the UUIDs itself: not what is tested here
        assert rankbridge.evaluate(QRELS, raw, ["recall@4"], missing="zero").mean["recall@4"] == 0.0


def test_llamaindex_check_ids_false_gives_the_raw_run(index: VectorStoreIndex) -> None:
    retriever = index.as_retriever(similarity_top_k=4)
    cap = run_app(retriever.retrieve)
    raw = cap.to_run(check_ids=False)
    assert all(UUID.match(h.doc_id) for q in raw for h in raw.hits(q))
    assert "id_resolution" not in raw.config and raw.config["id_from"] is None
    check = raw.config["id_check"]
    assert (check["status"], check["chosen"], check["current"]) == ("resolved", "ref_doc_id", "id")
    # the same run as a capture with no golden doc ids, which checks nothing
    plain = run_app(retriever.retrieve, golden=list(GOLDEN_CORPUS.queries))
    assert hits(raw) == hits(plain.run)
    assert "id_check" not in plain.run.config and plain.summary()["id_check"] is None
    # the capture-wide switch does the same for cap.run
    off = run_app(retriever.retrieve, check_ids=False)
    assert hits(off.run) == hits(raw) and off.run.config["id_check"]["status"] == "resolved"
    assert off.summary()["id_check"]["action"] == "none"


def test_llamaindex_explicit_wrong_id_from_raises_naming_the_right_one(index: VectorStoreIndex) -> None:
    cap = run_app(index.as_retriever(similarity_top_k=4).retrieve, id_from="id")
    with pytest.raises(IdMismatchError) as info:
        _ = cap.run
    err = info.value
    assert err.suggestion == "ref_doc_id"
    assert "id_from='ref_doc_id'" in str(err) and "id_from='id'" in str(err) and "check_ids=False" in str(err)
    assert isinstance(err.run, Run) and all(UUID.match(h.doc_id) for q in err.run for h in err.run.hits(q))
    assert isinstance(err.report, idmatch.IdReport) and err.report.status == "resolved"
    assert cap.summary()["id_check"]["action"] == "raise"
    # opting out still works
    assert hits(cap.to_run(check_ids=False)) == hits(err.run)


def test_llamaindex_documents_without_ids_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    """No source of the results names a corpus doc (ref_doc_id is a UUID too): raise, suggest nothing."""
    index = llama_index(doc_ids=False)
    cap = run_app(index.as_retriever(similarity_top_k=4).retrieve)
    with pytest.raises(IdMismatchError) as info:
        cap.to_run(stage="retrieved")
    assert info.value.suggestion is None and info.value.report.status == "mismatch"  # type: ignore[attr-defined]
    assert "No id source of the results matches" in str(info.value)
    assert cap.summary()["id_check"]["action"] == "raise"


def test_llamaindex_two_matching_sources_with_different_ids_are_ambiguous() -> None:
    order = list(CORPUS)
    index = llama_index(metadata=lambda d: {"see_also": order[(order.index(d) + 1) % len(order)]})
    cap = run_app(index.as_retriever(similarity_top_k=4).retrieve)
    with pytest.raises(IdMismatchError) as info:
        _ = cap.run
    assert info.value.report.status == "ambiguous"  # type: ignore[attr-defined]
    assert "id_from='ref_doc_id'" in str(info.value) and "id_from='metadata:see_also'" in str(info.value)


def test_llamaindex_metadata_with_the_same_ids_is_not_ambiguous() -> None:
    index = llama_index(metadata=lambda d: {"doc_id": d})
    cap = run_app(index.as_retriever(similarity_top_k=4).retrieve)
    assert cap.run.config["id_resolution"]["to"] == "ref_doc_id"  # LlamaIndex's own link preferred


def test_llamaindex_retain_objects_resolves_the_same(index: VectorStoreIndex) -> None:
    retriever = index.as_retriever(similarity_top_k=4)
    light = run_app(retriever.retrieve)
    objects = run_app(retriever.retrieve, retain="objects")
    assert objects.recorder.light is False
    assert_same_run(objects.run, light.run)
    assert objects.run.config["id_resolution"]["to"] == "ref_doc_id"


def test_matching_ids_give_ok_and_no_config_change() -> None:
    """Hand-made nodes with corpus ids: nothing to resolve, nothing added to the config."""
    nodes = [TextNode(id_=d, text=t) for d, t in CORPUS.items()]
    retriever = VectorStoreIndex(nodes, embed_model=HashEmbedding()).as_retriever(similarity_top_k=3)
    cap = run_app(retriever.retrieve)
    run = cap.run
    assert all(h.doc_id in CORPUS for q in run for h in run.hits(q))
    assert "id_resolution" not in run.config and "id_check" not in run.config and run.config["id_from"] is None
    assert run.duplicates == {}
    check = cap.summary()["id_check"]
    assert (check["status"], check["action"]) == ("ok", "none")
    assert hits(run) == hits(run_app(retriever.retrieve, golden=QUERIES).run)


def test_a_few_unknown_ids_stay_allowed() -> None:
    """A corpus smaller than the index (one doc in ten unknown): ok, ids kept."""
    nodes = [TextNode(id_=d, text=t) for d, t in CORPUS.items()]
    retriever = VectorStoreIndex(nodes, embed_model=HashEmbedding()).as_retriever(similarity_top_k=3)
    corpus = {d: {"text": t} for d, t in CORPUS.items() if d != "d9"}
    qrels = rankbridge.Qrels({q: {d: g for d, g in docs.items() if d != "d9"} for q, docs in QRELS.items()})
    golden = GoldenSet(list(GOLDEN.queries), qrels, corpus=corpus)
    cap = run_app(retriever.retrieve, golden=golden)
    run = cap.run
    assert "d9" in {h.doc_id for q in run for h in run.hits(q)}
    assert cap.summary()["id_check"]["status"] == "ok" and "id_resolution" not in run.config


# -- LangChain --------------------------------------------------------------------------------------------------
def test_langchain_vector_store_uuids_resolve_to_metadata() -> None:
    retriever = lc_store().as_retriever(search_kwargs={"k": 4})

    def fmt(docs: list[LCDocument]) -> str:
        return "\n".join(d.page_content for d in docs)

    chain = retriever | RunnableLambda(fmt)
    cap = run_app(chain.invoke)
    explicit = run_app(chain.invoke, id_from="metadata:doc_id")
    run = cap.run
    assert_same_run(run, explicit.run)
    raw = cap.to_run(check_ids=False)
    assert all(UUID.match(h.doc_id) for q in raw for h in raw.hits(q))
    assert all(h.doc_id in CORPUS for q in run for h in run.hits(q))
    res = run.config["id_resolution"]
    assert (res["from"], res["to"], res["auto"]) == ("id", "metadata:doc_id", True)
    assert cap.summary()["id_check"]["action"] == "resolved"
    assert "id_resolution" not in explicit.run.config


def test_langchain_records_stay_light_with_a_golden_set() -> None:
    """Copying ref_doc_id must not push LangChain Documents (which have none) off the light snapshot."""
    retriever = lc_store().as_retriever(search_kwargs={"k": 4})
    cap = run_app(retriever.invoke)
    assert cap.recorder.snap_ref is True
    assert all(type(r._items).__name__ == "Snapshot" for r in cap.records)
    assert cap.run.config["id_resolution"]["to"] == "metadata:doc_id"


def test_langchain_qrels_only_golden_set_resolves_too() -> None:
    """Qrels alone (no corpus): the low QRELS_SHARE threshold, with enough results to judge (25 >= 20)."""
    retriever = lc_store().as_retriever(search_kwargs={"k": 5})
    cap = run_app(retriever.invoke, golden=GOLDEN)
    run = cap.run
    assert run.config["id_resolution"]["to"] == "metadata:doc_id"
    assert_same_run(run, run_app(retriever.invoke, golden=GOLDEN, id_from="metadata:doc_id").run)


def test_langchain_bm25_documents_without_ids_resolve_instead_of_erroring() -> None:
    pytest.importorskip("langchain_community")
    pytest.importorskip("rank_bm25")
    from langchain_community.retrievers import BM25Retriever

    docs = [LCDocument(page_content=t, metadata={"source": f"{d}.txt", "doc_id": d}) for d, t in CORPUS.items()]
    retriever = BM25Retriever.from_documents(docs, k=3)
    cap = run_app(retriever.invoke)
    raw = cap.to_run(check_ids=False)
    assert len(raw.errors) == len(QUERIES)  # no id at all: every query an error, as before
    run = cap.run
    assert run.errors == {} and run.config["id_resolution"]["to"] == "metadata:doc_id"
    assert_same_run(run, run_app(retriever.invoke, id_from="metadata:doc_id").run)


def test_explicit_doc_map_is_checked_not_switched() -> None:
    retriever = lc_store().as_retriever(search_kwargs={"k": 4})
    good = run_app(retriever.invoke, id_from="metadata:doc_id", doc_map={"d0": "d0"})
    assert "id_resolution" not in good.run.config and good.summary()["id_check"]["status"] == "ok"
    bad = run_app(retriever.invoke, doc_map={"nothing": "d0"})
    with pytest.raises(IdMismatchError) as info:
        _ = bad.run
    assert info.value.suggestion == "metadata:doc_id" and "id_from='metadata:doc_id'" in str(info.value)


# -- cost and placement of the check -----------------------------------------------------------------------------
def test_check_runs_once_per_read_on_a_bounded_sample_never_in_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = idmatch.check_results

    def counting(results: Any, golden: Any, **kw: Any) -> idmatch.IdReport:
        results = list(results)
        calls.append(len(results))
        return real(results, golden, **kw)

    monkeypatch.setattr(idmatch, "check_results", counting)
    monkeypatch.setattr(idmatch, "SAMPLE_HITS", 6)
    retriever = lc_store().as_retriever(search_kwargs={"k": 4})
    cap = run_app(retriever.invoke)
    assert calls == []  # nothing during the app's retrievals
    run = cap.run
    assert calls == [6]  # one check per read, at most SAMPLE_HITS results
    assert run.config["id_resolution"]["results"] == 6
    cap.to_run(check_ids=False)
    assert calls == [6, 6]


def test_no_golden_doc_ids_keeps_the_default_path() -> None:
    """A Query list / {id: text} / no golden set: nothing checked, no ref_doc_id copied (LlamaIndex fast path)."""
    for golden in (None, QUERIES, list(GOLDEN.queries), GoldenSet(list(GOLDEN.queries), rankbridge.Qrels({}))):
        cap = capture(golden, frameworks=())
        assert cap.recorder.snap_ref is False and cap.golden is None
    assert capture(GOLDEN, frameworks=()).recorder.snap_ref is True
    assert capture(GOLDEN, frameworks=(), id_from="ref_doc_id").recorder.snap_ref is True


# -- partial captures ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("golden", [GOLDEN_CORPUS, QUERIES, None])
def test_partial_capture_config_counts_missing_golden_questions(golden: Any) -> None:
    retriever = lc_store().as_retriever(search_kwargs={"k": 4})
    asked = ["q1", "q2", "q3"]
    with capture(golden, id_from="metadata:doc_id") as cap:
        for q in asked:
            retriever.invoke(QUERIES[q])
        retriever.invoke("a question no golden set has")
    config = cap.run.config
    assert config["source"] == "capture"
    if golden is None:
        assert "golden_size" not in config and "golden_missing" not in config
    else:
        assert (config["golden_size"], config["golden_missing"]) == (5, 2)
        assert sorted(cap.summary()["missing"]) == ["q4", "q5"]
