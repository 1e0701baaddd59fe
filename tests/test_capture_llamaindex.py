"""Live capture from real, offline LlamaIndex pipelines.

A ``RetrieverQueryEngine`` over llama-index-retrievers-bm25 with the framework's ``MockLLM`` (no
embeddings, no network) runs as an application would; the captured run must equal what the retriever
returns when called directly, query by query, and the final list must equal the response's source nodes
when a node postprocessor changes it.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.bm25")

from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.chat_engine import ContextChatEngine
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import Document, NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.bm25 import BM25Retriever
from llama_index_instrumentation.dispatcher import instrument_tags

from capture_data import CORPUS, GOLDEN, QUERIES
from rankbridge import Run
from rankbridge.capture import capture, query_id
from rankbridge.io import read_run, read_run_jsonl


@pytest.fixture(autouse=True)
def _offline_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """MockLLM everywhere; no embedding model (BM25 needs none), so nothing can reach OpenAI."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used-offline")
    monkeypatch.setattr(Settings, "_llm", MockLLM(max_tokens=8))
    monkeypatch.setattr(Settings, "_embed_model", None)


@pytest.fixture(autouse=True)
def _close_stray_event_loop() -> Iterator[None]:
    """LlamaIndex's sync token counting (``asyncio_run``) sets an event loop it never closes; close it here
    so its ResourceWarning does not fire at a random later garbage collection."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # none set
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture(scope="module")
def nodes() -> list[TextNode]:
    return [TextNode(text=t, id_=d) for d, t in CORPUS.items()]


@pytest.fixture
def retriever(nodes: list[TextNode]) -> BM25Retriever:
    return BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)


def engine(retriever: BaseRetriever, **kwargs: Any) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8), **kwargs)


def direct(retriever: BaseRetriever, text: str) -> list[tuple[str, float | None]]:
    return [(n.node.node_id, n.score) for n in retriever.retrieve(text)]


def pairs(run: Run, qid: str) -> list[tuple[str, float | None]]:
    return [(h.doc_id, h.score) for h in run.hits(qid)]


def assert_run_equals_direct(run: Run, retriever: BaseRetriever, queries: dict[str, str]) -> None:
    assert sorted(run) == sorted(queries)
    for qid, text in queries.items():
        assert pairs(run, qid) == direct(retriever, text), qid


def test_query_engine_capture_equals_direct_calls(retriever: BM25Retriever) -> None:
    qe = engine(retriever)
    plain = [str(qe.query(t)) for t in QUERIES.values()]
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        assert cap.attached == ("llamaindex",)
        answers = [str(qe.query(t)) for t in QUERIES.values()]
    assert answers == plain
    assert_run_equals_direct(cap.run, retriever, QUERIES)
    rec = cap.records[0]
    assert (rec.framework, rec.retriever, rec.query) == ("llamaindex", "BM25Retriever", QUERIES["q1"])
    assert rec.parent_id is not None and rec.parent_id.startswith("RetrieverQueryEngine._query-")
    assert rec.trace_id is not None and rec.trace_id.startswith("RetrieverQueryEngine.query-")
    assert rec.final is None and rec.error is None and rec.latency is not None
    assert rec.retrieved[0].text == CORPUS[rec.retrieved[0].doc_id]
    s = cap.summary()
    assert (s["matched_by_text"], s["unmatched"], s["internal_errors"]) == (5, 0, 0)


def test_handlers_removed_on_exit(retriever: BM25Retriever) -> None:
    from llama_index.core.instrumentation.span_handlers import NullSpanHandler

    from rankbridge.frameworks.llamaindex.capture import RankbridgeSpanHandler

    d = get_dispatcher()
    before = (list(d.event_handlers), list(d.span_handlers))
    assert [type(h) for h in before[1]] == [NullSpanHandler]  # LlamaIndex's default: a handler that does nothing
    with capture(frameworks=["llamaindex"]) as cap:
        # one span handler does it all, in the place of the NullSpanHandler; no event handler is added
        assert list(d.event_handlers) == before[0]
        assert [isinstance(h, RankbridgeSpanHandler) for h in d.span_handlers] == [True]
        retriever.retrieve("bread")
    retriever.retrieve("scurvy")
    assert list(d.event_handlers) == before[0]
    assert len(d.span_handlers) == 1 and d.span_handlers[0] is before[1][0]
    assert [r.query for r in cap.records] == ["bread"]


def test_attaching_keeps_other_handlers_and_restores_the_list_in_any_order(retriever: BM25Retriever) -> None:
    from llama_index.core.instrumentation.span_handlers import NullSpanHandler, SimpleSpanHandler

    d = get_dispatcher()
    null = d.span_handlers[0]
    assert type(null) is NullSpanHandler
    try:
        _attach_in_any_order(d, null, retriever, SimpleSpanHandler())
    finally:
        d.span_handlers = [null]


def _attach_in_any_order(d: Any, null: Any, retriever: BM25Retriever, users: Any) -> None:
    a = capture(frameworks=["llamaindex"]).__enter__()
    b = capture(frameworks=["llamaindex"]).__enter__()  # no NullSpanHandler left to stand in for: appended
    d.span_handlers = [*d.span_handlers, users]  # the app adds its own handler meanwhile
    retriever.retrieve("bread")
    a.__exit__(None, None, None)  # not the reverse order of attaching
    assert d.span_handlers[0] is null and d.span_handlers[2] is users and len(d.span_handlers) == 3
    retriever.retrieve("scurvy")
    b.__exit__(None, None, None)
    assert len(d.span_handlers) == 2 and d.span_handlers[0] is null and d.span_handlers[1] is users
    assert [r.query for r in a.records] == ["bread"]
    assert [r.query for r in b.records] == ["bread", "scurvy"]
    # a root dispatcher without a NullSpanHandler: the handler is added, then removed
    d.span_handlers = [users]
    with capture(frameworks=["llamaindex"]) as c:
        assert len(d.span_handlers) == 2 and d.span_handlers[0] is users
        retriever.retrieve("bread")
    assert d.span_handlers == [users] and [r.query for r in c.records] == ["bread"]


class ReverseAndCut(BaseNodePostprocessor):
    """A node postprocessor that changes the list (stands in for a reranker)."""

    keep: int = 2

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return [NodeWithScore(node=n.node, score=float(i)) for i, n in enumerate(reversed(nodes[-self.keep :]), 1)]


def test_postprocessor_gives_retrieved_and_final_lists(retriever: BM25Retriever) -> None:
    qe = engine(retriever, node_postprocessors=[ReverseAndCut()])
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        responses = {q: qe.query(t) for q, t in QUERIES.items()}
    for qid, text in QUERIES.items():
        final = [(n.node.node_id, n.score) for n in responses[qid].source_nodes]
        assert pairs(cap.run, qid) == final
        assert pairs(cap.to_run(stage="retrieved"), qid) == direct(retriever, text)
    assert cap.summary()["reranked"] == 5


class RescoreInPlace(BaseNodePostprocessor):
    """Changes the scores of the same node objects, in place, keeping their order (as some rerankers do)."""

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        for i, n in enumerate(nodes):
            n.score = 100.0 - i
        return nodes


def test_scores_changed_in_place_give_a_final_list(retriever: BM25Retriever) -> None:
    qe = engine(retriever, node_postprocessors=[RescoreInPlace()])
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        response = qe.query(QUERIES["q1"])
    (rec,) = cap.records
    assert pairs(cap.to_run(stage="retrieved"), "q1") == direct(retriever, QUERIES["q1"])
    assert rec.final is not None and [(h.doc_id, h.score) for h in rec.final] == [
        (n.node.node_id, n.score) for n in response.source_nodes
    ]
    assert [h.score for h in rec.final] == [100.0, 99.0, 98.0]


def test_chat_engine(retriever: BM25Retriever) -> None:
    from llama_index.core.memory import ChatMemoryBuffer

    # an explicit memory: the default one opens an aiosqlite connection that is never closed
    memory = ChatMemoryBuffer.from_defaults(token_limit=1000)
    chat = ContextChatEngine.from_defaults(retriever=retriever, llm=MockLLM(max_tokens=8), memory=memory)
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        chat.chat(QUERIES["q2"])
    (rec,) = cap.records
    assert rec.trace_id is not None and rec.trace_id.startswith("ContextChatEngine.chat-")
    assert pairs(cap.run, "q2") == direct(retriever, QUERIES["q2"])


def test_query_id_from_instrument_tags_and_context(retriever: BM25Retriever) -> None:
    qe = engine(retriever)
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        with instrument_tags({"rankbridge_query_id": "q1"}):
            qe.query("a paraphrase about scurvy")
        with query_id("q2"):
            qe.query("oranges and citrus")
        qe.query("something nobody asked")
    assert pairs(cap.run, "q1") == direct(retriever, "a paraphrase about scurvy")
    assert pairs(cap.run, "q2") == direct(retriever, "oranges and citrus")
    s = cap.summary()
    assert (s["matched_by_id"], s["unmatched"]) == (2, 1)
    assert cap.unmatched == ["something nobody asked"]


class Wrapper(BaseRetriever):
    """A retriever around one other (like auto-merging): retrieves, then keeps the best two."""

    def __init__(self, base: BaseRetriever) -> None:
        super().__init__()
        self._base = base

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._base.retrieve(query_bundle)[:2]


def test_nested_retrievers(retriever: BM25Retriever, nodes: list[TextNode]) -> None:
    wrapper = Wrapper(retriever)
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        engine(wrapper).query(QUERIES["q1"])
    (rec,) = cap.records
    assert rec.retriever == "Wrapper" and [n.retriever for n in rec.nested] == ["BM25Retriever"]
    assert [(h.doc_id, h.score) for h in rec.retrieved] == direct(retriever, QUERIES["q1"])
    assert pairs(cap.run, "q1") == direct(wrapper, QUERIES["q1"])

    other = BM25Retriever.from_defaults(nodes=nodes[::-1], similarity_top_k=2)
    fusion = QueryFusionRetriever([retriever, other], llm=MockLLM(), num_queries=1, use_async=False)
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap2:
        engine(fusion).query(QUERIES["q2"])
    (rec2,) = cap2.records
    assert rec2.retriever == "QueryFusionRetriever" and len(rec2.nested) == 2
    assert all(n.trace_id == rec2.trace_id for n in rec2.nested)
    assert pairs(cap2.run, "q2") == direct(fusion, QUERIES["q2"])


class TwoStage(BaseRetriever):
    """A retriever that calls a wrapper (itself around a retriever) and then a retriever of its own."""

    def __init__(self, first: BaseRetriever, second: BaseRetriever) -> None:
        super().__init__()
        self._first, self._second = first, second

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._first.retrieve(query_bundle) + self._second.retrieve(query_bundle)


def test_retrievals_nested_two_deep_stay_nested_after_an_inner_one_ends(
    retriever: BM25Retriever, nodes: list[TextNode]
) -> None:
    """The innermost open retrieval is a context variable: an inner retrieval that ends hands it back to the
    one around it, so the second retriever called by ``TwoStage`` is still nested in it."""
    other = BM25Retriever.from_defaults(nodes=nodes[::-1], similarity_top_k=2)
    two = TwoStage(Wrapper(retriever), other)
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        engine(two).query(QUERIES["q1"])
        retriever.retrieve(QUERIES["q2"])  # afterwards, in the same context: a top-level retrieval
    top, after = cap.records
    assert [n.retriever for n in top.nested] == ["Wrapper", "BM25Retriever"]
    assert [n.retriever for n in top.nested[0].nested] == ["BM25Retriever"]
    assert all(n.trace_id == top.trace_id for n in (*top.nested, top.nested[0].nested[0]))
    assert after.retriever == "BM25Retriever" and after.nested == () and after.trace_id == after.run_id
    assert pairs(cap.run, "q1") == direct(two, QUERIES["q1"])
    assert pairs(cap.run, "q2") == direct(retriever, QUERIES["q2"])


def test_nested_retrievals_in_asyncio_tasks(retriever: BM25Retriever, nodes: list[TextNode]) -> None:
    """A fusion retriever that runs its retrievers as asyncio tasks: the context variable follows them."""
    other = BM25Retriever.from_defaults(nodes=nodes[::-1], similarity_top_k=2)
    fusion = QueryFusionRetriever([retriever, other], llm=MockLLM(), num_queries=1, use_async=True)

    async def ask() -> None:
        await asyncio.gather(*(engine(fusion).aquery(QUERIES[q]) for q in ("q1", "q2")))

    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        asyncio.run(ask())
    assert sorted(r.query for r in cap.records) == sorted([QUERIES["q1"], QUERIES["q2"]])
    for rec in cap.records:
        assert rec.retriever == "QueryFusionRetriever" and len(rec.nested) == 2
        assert all(n.trace_id == rec.trace_id and n.query == rec.query for n in rec.nested)
        assert rec.trace_id is not None and rec.trace_id.startswith("RetrieverQueryEngine.aquery-")
    for q in ("q1", "q2"):
        assert pairs(cap.run, q) == direct(fusion, QUERIES[q])


def test_final_list_from_the_outermost_span_when_the_parent_returns_no_nodes(retriever: BM25Retriever) -> None:
    """A tool-like span between the app and the retriever returns text; the app's own span (outermost)
    returns a response whose source nodes were reranked: that is the final list."""
    from llama_index.core.base.response.schema import Response

    dispatcher = get_dispatcher("tests.capture")
    found: list[NodeWithScore] = []

    @dispatcher.span  # type: ignore[misc]
    def tool(text: str) -> str:
        found[:] = retriever.retrieve(text)
        return f"found {len(found)} passages"

    @dispatcher.span  # type: ignore[misc]
    def answer(text: str) -> Response:
        summary = tool(text)
        reranked = [NodeWithScore(node=n.node, score=float(i)) for i, n in enumerate(found[::-1], 1)]
        return Response(summary, source_nodes=reranked)

    @dispatcher.span  # type: ignore[misc]
    def answer_twice(text: str) -> Response:
        tool(text)
        return answer(text)

    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        responses = {qid: answer(QUERIES[qid]) for qid in ("q1", "q2")}
    for rec, qid in zip(cap.records, responses, strict=True):
        assert rec.parent_id is not None and rec.parent_id.startswith(f"{tool.__qualname__}-")
        assert rec.trace_id is not None and rec.trace_id.startswith(f"{answer.__qualname__}-")
        assert [(h.doc_id, h.score) for h in rec.retrieved] == direct(retriever, QUERIES[qid])
        assert rec.final is not None
        assert [(h.doc_id, h.score) for h in rec.final] == [
            (n.node.node_id, n.score) for n in responses[qid].source_nodes
        ]

    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap2:
        answer_twice(QUERIES["q3"])
    # two retrievals wait on the outermost span: which list is whose is unknown, so neither gets it
    assert [r.final for r in cap2.records] == [None, None]
    assert len({r.trace_id for r in cap2.records}) == 1


def test_capture_started_inside_an_open_span_falls_back_to_the_parent_for_the_trace(
    retriever: BM25Retriever,
) -> None:
    """The outermost span opened before the handler was on: the trace is the retrieval's parent."""
    dispatcher = get_dispatcher("tests.capture")
    caps: list[Any] = []

    @dispatcher.span  # type: ignore[misc]
    def request(text: str) -> None:
        with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
            caps.append(cap)
            retriever.retrieve(text)

    request(QUERIES["q3"])
    (rec,) = caps[0].records
    assert rec.parent_id is not None and rec.trace_id == rec.parent_id
    assert pairs(caps[0].run, "q3") == direct(retriever, QUERIES["q3"])


def test_pausing_and_resuming_leaves_the_context_as_it_was(retriever: BM25Retriever) -> None:
    """The handler's two context variables are the process's, not one pair per attachment: switching a
    capture on and off around each query leaves no values behind in the app's context."""
    import contextvars

    qe = engine(retriever)
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap:
        qe.query(QUERIES["q1"])
        size = len(contextvars.copy_context())
        for _ in range(50):
            cap.enabled = False
            qe.query(QUERIES["q2"])
            cap.enabled = True
            qe.query(QUERIES["q3"])
        assert len(contextvars.copy_context()) == size
    assert [r.query for r in cap.records] == [QUERIES["q1"]] + [QUERIES["q3"]] * 50
    assert all(r.trace_id is not None and r.trace_id.startswith("RetrieverQueryEngine.query-") for r in cap.records)


def test_threads_capture_every_query(retriever: BM25Retriever) -> None:
    qe = engine(retriever)
    texts = {f"t{i}": f"{QUERIES[q]} {i}" for i, q in enumerate(list(QUERIES) * 10)}

    def ask(item: tuple[str, str]) -> str:
        with query_id(item[0]):
            return str(qe.query(item[1]))

    with capture(frameworks=["llamaindex"]) as cap, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, texts.items()))
    assert len(answers) == len(texts)
    assert_run_equals_direct(cap.run, retriever, texts)
    assert len({r.trace_id for r in cap.records}) == len(texts)


def test_asyncio_tasks_capture_every_query(retriever: BM25Retriever) -> None:
    qe = engine(retriever, node_postprocessors=[ReverseAndCut()])
    texts = {f"t{i}": f"{QUERIES[q]} {i}" for i, q in enumerate(list(QUERIES) * 10)}

    async def main() -> dict[str, Any]:
        async def one(qid: str, text: str) -> Any:
            with query_id(qid):
                return await qe.aquery(text)

        results = await asyncio.gather(*(one(q, t) for q, t in texts.items()))
        return dict(zip(texts, results, strict=True))

    with capture(frameworks=["llamaindex"]) as cap:
        responses = asyncio.run(main())
    assert sorted(cap.run) == sorted(texts)
    for qid, text in texts.items():
        assert pairs(cap.to_run(stage="retrieved"), qid) == direct(retriever, text)
        assert pairs(cap.run, qid) == [(n.node.node_id, n.score) for n in responses[qid].source_nodes]


class Failing(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        raise ConnectionError("index offline")


def test_retriever_error_is_recorded_and_still_raised() -> None:
    with capture(golden=GOLDEN, frameworks=["llamaindex"]) as cap, pytest.raises(ConnectionError):
        engine(Failing()).query(QUERIES["q3"])
    assert cap.run.errors == {"q3": "retrieval failed: ConnectionError: index offline"}


def test_ref_doc_id_and_export(tmp_path: Path) -> None:
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    docs = [Document(text=t + " " + t, id_=d) for d, t in CORPUS.items()]
    chunks = SentenceSplitter(chunk_size=20, chunk_overlap=0).get_nodes_from_documents(docs)
    r = BM25Retriever.from_defaults(nodes=chunks, similarity_top_k=4)
    with capture(golden=GOLDEN, frameworks=["llamaindex"], id_from="ref_doc_id") as cap:
        for t in QUERIES.values():
            r.retrieve(t)
    for qid, text in QUERIES.items():
        expected: list[str] = []
        for n in r.retrieve(text):
            if n.node.ref_doc_id not in expected:
                expected.append(n.node.ref_doc_id)  # type: ignore[arg-type]
        assert cap.run.ranking(qid) == expected
    cap.write_trec(tmp_path / "run.txt")
    cap.write_jsonl(tmp_path / "run.jsonl")
    assert read_run(tmp_path / "run.txt").ranking("q1") == cap.run.ranking("q1")
    assert read_run_jsonl(tmp_path / "run.jsonl").ranking("q1") == cap.run.ranking("q1")


def test_capture_from_another_thread_is_process_wide(retriever: BM25Retriever) -> None:
    with capture(frameworks=["llamaindex"]) as cap:
        t = threading.Thread(target=lambda: retriever.retrieve("bread yeast"))
        t.start()
        t.join()
    assert [r.query for r in cap.records] == ["bread yeast"]


def test_light_records_keep_no_nodes_and_read_like_the_nodes(retriever: BM25Retriever) -> None:
    from rankbridge.capture import Snapshot

    class Shouting(TextNode):
        def get_content(self, metadata_mode: Any = None) -> str:  # type: ignore[override]
            return self.text.upper()

    class Static(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=Shouting(text="scurvy", id_="s1"), score=1.0)]

    with capture(frameworks=["llamaindex"]) as cap:
        engine(retriever).query(QUERIES["q1"])
        Static().retrieve("anything")
    plain, shouting = cap.records
    assert type(plain._items) is Snapshot
    assert plain._final_items is None  # the engine handed the retriever's own nodes on: no second copy
    assert [(h.doc_id, h.text) for h in plain.retrieved] == [
        (n.node.node_id, n.node.get_content()) for n in retriever.retrieve(QUERIES["q1"])
    ]
    # an overridden get_content is called, as when the nodes are read later
    assert type(shouting._items) is list
    assert [(h.doc_id, h.text) for h in shouting.retrieved] == [("s1", "SCURVY")]


def test_text_node_fast_path_reads_like_the_generic_path() -> None:
    from rankbridge.capture import CaptureRecord, Recorder
    from rankbridge.frameworks.llamaindex.capture import _scores, _snapshot_text_nodes

    nodes = [
        NodeWithScore(
            node=TextNode(text=f"text {i}", id_=f"n{i}", metadata={"doc_id": f"d{i % 2}"}), score=1.0 / (i + 1)
        )
        for i in range(4)
    ]
    for options in ({}, {"keep_text": False}, {"id_from": "metadata:doc_id"}):
        rec = Recorder(**options)  # type: ignore[arg-type]
        fast = _snapshot_text_nodes(nodes, rec.snap_text)
        assert fast is not None and fast.fields[-1] == "score"  # the scores ride in the snapshot
        a = CaptureRecord(framework="llamaindex", query="q", run_id="a", retriever="R")
        a.set_snapshot(fast, None)
        b = CaptureRecord(framework="llamaindex", query="q", run_id="b", retriever="R")
        b.set_items(nodes, _scores(nodes), Recorder(retain="objects", **options))  # type: ignore[arg-type]
        rec.add(a)
        rec.add(b)
        assert a.retrieved == b.retrieved and a.retrieved, options
    # an empty metadata dict is not kept (one shared read-only mapping instead), and reads the same
    bare = [NodeWithScore(node=TextNode(text="t", id_="n"), score=0.5)]
    snap = _snapshot_text_nodes(bare, True)
    assert snap is not None and snap[1] is not bare[0].node.metadata
    a = CaptureRecord(framework="llamaindex", query="q", run_id="a", retriever="R")
    a.set_snapshot(snap, None)
    b = CaptureRecord(framework="llamaindex", query="q", run_id="b", retriever="R")
    b.set_items(bare, _scores(bare), Recorder(retain="objects"))
    assert a.retrieved == b.retrieved and a.retrieved[0].metadata == {}
    # anything but a plain TextNode list takes the generic path
    assert _snapshot_text_nodes([NodeWithScore(node=Document(text="x", id_="d"), score=1.0)], True) is None
    assert _snapshot_text_nodes([], True) is None
    assert _snapshot_text_nodes([object()], True) is None  # not even a NodeWithScore: no attribute is read
