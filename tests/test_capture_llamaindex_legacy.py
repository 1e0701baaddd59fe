"""Live capture through LlamaIndex's legacy ``CallbackManager``, on real, offline pipelines.

A ``RetrieverQueryEngine`` over llama-index-retrievers-bm25 with the framework's ``MockLLM`` (no
embeddings, no network) runs as an application would, with :class:`RankbridgeLlamaIndexCallback` in the
``CallbackManager`` its retriever and engine hold. The records must equal what the retriever returns when
called directly, query by query; the final list must equal the response's source nodes when a node
postprocessor changes it; the application must see no difference (answers, exceptions).
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.bm25")

from llama_index.core import Settings
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager, CBEventType, EventPayload
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.retrievers.bm25 import BM25Retriever

from capture_data import CORPUS, GOLDEN, QUERIES
from rankbridge.capture import Capture, CaptureRecord, QueryMatcher, Recorder, capture, query_id
from rankbridge.errors import InputError
from rankbridge.frameworks.llamaindex import _capture_common as common
from rankbridge.frameworks.llamaindex import capture_legacy as legacy
from rankbridge.frameworks.llamaindex.capture_legacy import RankbridgeLlamaIndexCallback, attach

Pairs = list[tuple[str, float | None]]


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


@pytest.fixture
def fresh_settings_manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No global ``Settings.callback_manager`` during the test; the previous one (or None) is restored after."""
    before = Settings._callback_manager
    monkeypatch.setattr(Settings, "_callback_manager", None)
    yield
    monkeypatch.undo()
    assert Settings._callback_manager is before


@pytest.fixture(scope="module")
def nodes() -> list[TextNode]:
    return [TextNode(text=t, id_=d) for d, t in CORPUS.items()]


@pytest.fixture
def handler() -> RankbridgeLlamaIndexCallback:
    return RankbridgeLlamaIndexCallback(Recorder())


@pytest.fixture
def manager(handler: RankbridgeLlamaIndexCallback) -> CallbackManager:
    return CallbackManager([handler])


@pytest.fixture
def retriever(nodes: list[TextNode], manager: CallbackManager) -> BM25Retriever:
    # from_defaults takes no callback_manager: the constructor does; the retriever reports to its own manager
    return BM25Retriever(nodes=nodes, similarity_top_k=3, callback_manager=manager)


def engine(retriever: BaseRetriever, manager: CallbackManager | None, **kwargs: Any) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=8), callback_manager=manager, **kwargs)


def answer(response: Any) -> tuple[str, Pairs]:
    return str(response), [(n.node.node_id, n.score) for n in response.source_nodes]


def direct(retriever: BaseRetriever, handler: RankbridgeLlamaIndexCallback, text: str) -> Pairs:
    """The retriever called directly, with the handler paused (so the call itself is not recorded)."""
    rec = handler.recorder
    was, rec.enabled = rec.enabled, False
    try:
        return [(n.node.node_id, n.score) for n in retriever.retrieve(text)]
    finally:
        rec.enabled = was


def pairs(hits: Any) -> Pairs:
    return [(h.doc_id, h.score) for h in hits]


def open_state(handler: RankbridgeLlamaIndexCallback) -> int:
    return len(handler._parents) + len(handler._open) + len(handler._waiting)


def test_query_engine_capture_equals_direct_calls(
    retriever: BM25Retriever, manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    qe = engine(retriever, manager)
    rec = handler.recorder
    rec.enabled = False
    plain = [answer(qe.query(t)) for t in QUERIES.values()]
    rec.enabled = True
    answers = [answer(qe.query(t)) for t in QUERIES.values()]
    assert answers == plain
    records = rec.records
    assert [r.query for r in records] == list(QUERIES.values())
    for r, text in zip(records, QUERIES.values(), strict=True):
        assert pairs(r.retrieved) == direct(retriever, handler, text), text
        assert (r.framework, r.retriever, r.error, r.final, r.nested) == ("llamaindex", "BM25Retriever", None, None, ())
        # the parent is the query engine's QUERY event, the outermost event of the request
        assert r.parent_id is not None and r.trace_id == r.parent_id != r.run_id
        assert r.latency is not None and r.latency > 0
    assert len({r.trace_id for r in records}) == len(QUERIES)
    assert records[0].retrieved[0].text == CORPUS[records[0].retrieved[0].doc_id]
    assert rec.internal_errors == 0 and open_state(handler) == 0
    # read back as a run, matched to the golden set by text
    cap = Capture(rec, QueryMatcher(GOLDEN), frameworks=())
    assert sorted(cap.run) == sorted(QUERIES)
    for qid, text in QUERIES.items():
        assert pairs(cap.run.hits(qid)) == direct(retriever, handler, text)
    assert (cap.summary()["matched_by_text"], cap.summary()["unmatched"]) == (5, 0)


def test_async_queries(
    retriever: BM25Retriever, manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    qe = engine(retriever, manager, node_postprocessors=[ReverseAndCut()])
    texts = {f"t{i}": f"{QUERIES[q]} {i}" for i, q in enumerate(list(QUERIES) * 4)}

    async def main() -> dict[str, Any]:
        async def one(qid: str, text: str) -> Any:
            with query_id(qid):
                return await qe.aquery(text)

        results = await asyncio.gather(*(one(q, t) for q, t in texts.items()))
        return dict(zip(texts, results, strict=True))

    responses = asyncio.run(main())
    by_id = {str(r.query_id): r for r in handler.recorder.records}
    assert sorted(by_id) == sorted(texts)
    for qid, text in texts.items():
        r = by_id[qid]
        assert r.query == text and r.retriever == "BM25Retriever"
        assert pairs(r.retrieved) == direct(retriever, handler, text)
        assert pairs(r.hits) == answer(responses[qid])[1]
    assert open_state(handler) == 0


class ReverseAndCut(BaseNodePostprocessor):
    """A node postprocessor that changes the list (stands in for a reranker); it emits no event."""

    keep: int = 2

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return [NodeWithScore(node=n.node, score=float(i)) for i, n in enumerate(reversed(nodes[-self.keep :]), 1)]


class FakeRerank(BaseNodePostprocessor):
    """Reports a RERANKING event and rescores the nodes *in place*, as ``SentenceTransformerRerank`` does."""

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        with self.callback_manager.event(CBEventType.RERANKING, payload={EventPayload.NODES: nodes}) as event:
            for i, n in enumerate(nodes):
                n.score = 100.0 + i  # the last one comes first
            new_nodes = sorted(nodes, key=lambda n: -(n.score or 0.0))
            event.on_end(payload={EventPayload.NODES: new_nodes})
        return new_nodes


def test_postprocessor_gives_retrieved_and_final_lists(
    retriever: BM25Retriever, manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    qe = engine(retriever, manager, node_postprocessors=[ReverseAndCut()])
    responses = {q: qe.query(t) for q, t in QUERIES.items()}
    records = handler.recorder.records
    assert len(records) == len(QUERIES)
    for r, (qid, text) in zip(records, QUERIES.items(), strict=True):
        assert r.final is not None and pairs(r.final) == answer(responses[qid])[1]
        assert pairs(r.retrieved) == direct(retriever, handler, text)
    # a reranker that reports RERANKING, then a postprocessor that does not: the response's list is final
    handler.recorder.clear()
    qe2 = engine(retriever, manager, node_postprocessors=[FakeRerank(), ReverseAndCut(keep=2)])
    response = qe2.query(QUERIES["q1"])
    (r,) = handler.recorder.records
    assert pairs(r.final) == answer(response)[1]
    # the reranker rescored the retrieved nodes in place: the record kept the retriever's own scores
    assert pairs(r.retrieved) == direct(retriever, handler, QUERIES["q1"])
    assert open_state(handler) == 0


def test_reranking_event_gives_the_final_list_without_a_query_event(
    retriever: BM25Retriever, manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    """Retriever and reranker called from the application's own code, inside an event that ends without
    nodes (an agent's function call): the RERANKING event's list is the final one."""
    rerank = FakeRerank(callback_manager=manager)
    # inside a trace, as agents do (the first trace to start resets LlamaIndex's event stack to the root)
    with (
        manager.as_trace("agent"),
        manager.event(CBEventType.FUNCTION_CALL, payload={EventPayload.FUNCTION_CALL: "search"}) as call,
    ):
        reranked = rerank.postprocess_nodes(retriever.retrieve(QUERIES["q2"]), query_str=QUERIES["q2"])
        call.on_end(payload={EventPayload.FUNCTION_OUTPUT: "done"})
    (r,) = handler.recorder.records
    assert pairs(r.final) == [(n.node.node_id, n.score) for n in reranked]
    assert pairs(r.retrieved) == direct(retriever, handler, QUERIES["q2"])
    assert r.trace_id == r.parent_id
    # outside any event a retrieval has no final list (the root is shared by every thread)
    handler.recorder.clear()
    rerank.postprocess_nodes(retriever.retrieve(QUERIES["q3"]), query_str=QUERIES["q3"])
    (r,) = handler.recorder.records
    assert r.final is None and r.parent_id is None and r.trace_id == r.run_id
    assert open_state(handler) == 0


def test_query_bundle_payload_and_a_custom_retrieve_event(handler: RankbridgeLlamaIndexCallback) -> None:
    """Code that reports RETRIEVE itself may pass a QueryBundle as the query."""
    manager = CallbackManager([handler])
    found = [NodeWithScore(node=TextNode(text=CORPUS["d7"], id_="d7"), score=1.5)]
    with manager.event(CBEventType.RETRIEVE, payload={EventPayload.QUERY_STR: QueryBundle("bread?")}) as event:
        event.on_end(payload={EventPayload.NODES: found})
    (r,) = handler.recorder.records
    assert (r.query, r.retriever, pairs(r.retrieved)) == ("bread?", "Retriever", [("d7", 1.5)])


class Failing(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        raise ConnectionError("index offline")


class Wrapper(BaseRetriever):
    """A retriever around one other (like auto-merging): retrieves, then keeps the best two."""

    def __init__(self, base: BaseRetriever, callback_manager: CallbackManager | None = None) -> None:
        super().__init__(callback_manager=callback_manager)
        self._base = base

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._base.retrieve(query_bundle)[:2]


def raised(fn: Any) -> BaseException:
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def test_retriever_error_is_recorded_and_still_raised(
    manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    without = raised(lambda: engine(Failing(), None).query(QUERIES["q3"]))
    err = raised(lambda: engine(Failing(callback_manager=manager), manager).query(QUERIES["q3"]))
    assert (type(err), str(err), err.args) == (type(without), str(without), without.args)
    (r,) = handler.recorder.records
    assert (r.query, r.retriever, r.error) == (QUERIES["q3"], "Failing", "ConnectionError: index offline")
    assert r.latency is not None and r.retrieved == []
    cap = Capture(handler.recorder, QueryMatcher(GOLDEN), frameworks=())
    assert cap.run.errors == {"q3": "retrieval failed: ConnectionError: index offline"}
    # an enclosing retrieval ends with no payload (the inner event reported the exception): inner error kept
    handler.recorder.clear()
    wrapped = Wrapper(Failing(callback_manager=manager), callback_manager=manager)
    err2 = raised(lambda: wrapped.retrieve("anything"))
    assert isinstance(err2, ConnectionError)
    (outer,) = handler.recorder.records
    assert outer.retriever == "Wrapper" and outer.error == "ConnectionError: index offline"
    assert [n.error for n in outer.nested] == ["ConnectionError: index offline"]
    assert open_state(handler) == 0


def test_nested_retrievers(
    retriever: BM25Retriever, nodes: list[TextNode], manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    wrapper = Wrapper(retriever, callback_manager=manager)
    engine(wrapper, manager).query(QUERIES["q1"])
    (rec,) = handler.recorder.records
    assert rec.retriever == "Wrapper" and [n.retriever for n in rec.nested] == ["BM25Retriever"]
    assert rec.nested[0].parent_id == rec.run_id and rec.nested[0].trace_id == rec.trace_id == rec.parent_id
    # one retriever inside: its list is what was retrieved, the wrapper's output the final list
    assert pairs(rec.retrieved) == direct(retriever, handler, QUERIES["q1"])
    assert pairs(rec.hits) == direct(wrapper, handler, QUERIES["q1"])

    handler.recorder.clear()
    other = BM25Retriever(nodes=nodes[::-1], similarity_top_k=2, callback_manager=manager)
    fusion = QueryFusionRetriever(
        [retriever, other], llm=MockLLM(), num_queries=1, use_async=False, callback_manager=manager
    )
    engine(fusion, manager).query(QUERIES["q2"])
    (rec2,) = handler.recorder.records
    assert rec2.retriever == "QueryFusionRetriever" and len(rec2.nested) == 2
    assert all(n.trace_id == rec2.trace_id and n.parent_id == rec2.run_id for n in rec2.nested)
    assert pairs(rec2.hits) == direct(fusion, handler, QUERIES["q2"])
    assert open_state(handler) == 0


@pytest.mark.parametrize(
    ("target", "attr"),
    [
        (Recorder, "add"),
        (Recorder, "admit"),
        (CaptureRecord, "set_items"),
        (CaptureRecord, "set_final"),
        (common, "small_tags"),
        (legacy, "_retriever_name"),
        (legacy, "_result_nodes"),
    ],
)
def test_bookkeeping_failure_leaves_the_answer_unchanged(
    retriever: BM25Retriever,
    manager: CallbackManager,
    handler: RankbridgeLlamaIndexCallback,
    monkeypatch: pytest.MonkeyPatch,
    target: Any,
    attr: str,
) -> None:
    qe = engine(retriever, manager, node_postprocessors=[ReverseAndCut()])
    handler.recorder.enabled = False
    expected = [answer(qe.query(t)) for t in QUERIES.values()]
    handler.recorder.enabled = True

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("rankbridge bookkeeping bug")

    monkeypatch.setattr(target, attr, boom)
    assert [answer(qe.query(t)) for t in QUERIES.values()] == expected
    assert handler.recorder.internal_errors >= len(QUERIES)
    assert "rankbridge bookkeeping bug" in (handler.recorder.last_internal_error or "")


def test_even_counting_failures_stay_silent(
    retriever: BM25Retriever,
    manager: CallbackManager,
    handler: RankbridgeLlamaIndexCallback,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    qe = engine(retriever, manager)
    handler.recorder.enabled = False
    expected = answer(qe.query(QUERIES["q1"]))
    handler.recorder.enabled = True

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(Recorder, "add", boom)
    monkeypatch.setattr(Recorder, "internal_error", boom)
    assert answer(qe.query(QUERIES["q1"])) == expected


def test_paused_recorder_records_nothing_and_tracks_nothing(
    retriever: BM25Retriever, manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    qe = engine(retriever, manager, node_postprocessors=[FakeRerank()])
    handler.recorder.enabled = False
    for t in QUERIES.values():
        qe.query(t)
    assert handler.recorder.records == [] and open_state(handler) == 0
    handler.recorder.enabled = True
    qe.query(QUERIES["q5"])
    assert [r.query for r in handler.recorder.records] == [QUERIES["q5"]]


def test_sampling_and_cap(retriever: BM25Retriever, nodes: list[TextNode]) -> None:
    rec = Recorder(max_records=2)
    manager = CallbackManager([RankbridgeLlamaIndexCallback(rec)])
    wrapper = Wrapper(BM25Retriever(nodes=nodes, similarity_top_k=3, callback_manager=manager), manager)
    for t in QUERIES.values():
        wrapper.retrieve(t)
    assert [r.query for r in rec.records] == list(QUERIES.values())[:2]
    assert rec.dropped == len(QUERIES) - 2  # one per top-level retrieval, nested ones go with it
    assert all(len(r.nested) == 1 for r in rec.records)


def test_threads_capture_every_query(
    retriever: BM25Retriever, manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    qe = engine(retriever, manager, node_postprocessors=[ReverseAndCut()])
    texts = {f"t{i}": f"{QUERIES[q]} {i}" for i, q in enumerate(list(QUERIES) * 10)}

    def ask(item: tuple[str, str]) -> tuple[str, Pairs]:
        with query_id(item[0]):
            return answer(qe.query(item[1]))

    with ThreadPoolExecutor(8) as pool:
        answers = dict(zip(texts, pool.map(ask, texts.items()), strict=True))
    records = handler.recorder.records
    assert len(records) == len(texts)
    by_id = {str(r.query_id): r for r in records}
    assert sorted(by_id) == sorted(texts)  # every retrieval recorded once, with its own query id
    for qid, text in texts.items():
        r = by_id[qid]
        assert r.query == text
        assert pairs(r.retrieved) == direct(retriever, handler, text)
        assert pairs(r.hits) == answers[qid][1]
    assert len({r.trace_id for r in records}) == len(texts)
    assert open_state(handler) == 0 and handler.recorder.internal_errors == 0


def test_query_id_context_variable_and_instrument_tags(
    retriever: BM25Retriever, manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    from llama_index_instrumentation.dispatcher import instrument_tags

    qe = engine(retriever, manager)
    with query_id("q1"):
        qe.query("a paraphrase about scurvy")
    with instrument_tags({"rankbridge_query_id": "q2"}):
        qe.query("oranges and citrus")
    qe.query("something nobody asked")
    assert [r.query_id for r in handler.recorder.records] == ["q1", "q2", None]
    cap = Capture(handler.recorder, QueryMatcher(GOLDEN), frameworks=())
    assert pairs(cap.run.hits("q1")) == direct(retriever, handler, "a paraphrase about scurvy")
    s = cap.summary()
    assert (s["matched_by_id"], s["unmatched"]) == (2, 1)


def test_attach_to_settings_callback_manager(nodes: list[TextNode], fresh_settings_manager: None) -> None:
    rec = Recorder()
    detach = attach(rec)
    manager = Settings.callback_manager
    (handler,) = [h for h in manager.handlers if isinstance(h, RankbridgeLlamaIndexCallback)]
    assert handler.recorder is rec
    # built with default settings after attach: the retriever holds a new manager sharing the handler list,
    # the query engine holds the global manager itself
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)
    qe = RetrieverQueryEngine.from_args(retriever, node_postprocessors=[ReverseAndCut()])
    assert retriever.callback_manager.handlers is manager.handlers and qe.callback_manager is manager
    response = qe.query(QUERIES["q1"])
    retriever.retrieve(QUERIES["q2"])
    # a component with a manager of its own is not seen
    BM25Retriever(nodes=nodes, callback_manager=CallbackManager([RankbridgeLlamaIndexCallback()])).retrieve("bread")
    r1, r2 = rec.records
    assert (r1.query, r2.query) == (QUERIES["q1"], QUERIES["q2"])
    assert pairs(r1.retrieved) == direct(retriever, handler, QUERIES["q1"])
    assert pairs(r1.hits) == answer(response)[1]
    detach()
    assert handler not in manager.handlers
    retriever.retrieve(QUERIES["q3"])
    qe.query(QUERIES["q4"])
    BM25Retriever.from_defaults(nodes=nodes).retrieve(QUERIES["q5"])
    assert len(rec.records) == 2
    detach()  # idempotent


def test_attach_sees_components_built_before_it_only_through_the_global_manager(
    nodes: list[TextNode], fresh_settings_manager: None
) -> None:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    # built before the global manager exists: the retriever's own manager has a list of its own
    early = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)
    early_qe = RetrieverQueryEngine.from_args(early)  # creates Settings.callback_manager and holds it
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
    index_qe = index.as_query_engine(similarity_top_k=3)  # its retriever holds Settings.callback_manager
    rec = Recorder()
    detach = attach(rec)
    try:
        early_qe.query(QUERIES["q1"])
        index_qe.query(QUERIES["q2"])
    finally:
        detach()
    assert [(r.retriever, r.query) for r in rec.records] == [("VectorIndexRetriever", QUERIES["q2"])]


def test_detached_handler_records_nothing_even_where_a_list_still_holds_it(
    nodes: list[TextNode], fresh_settings_manager: None
) -> None:
    rec = Recorder()
    detach = attach(rec)
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)
    kept = list(Settings.callback_manager.handlers)
    retriever.callback_manager.set_handlers(kept)  # the app gave the retriever a copy of the list
    detach()
    retriever.retrieve(QUERIES["q1"])
    assert rec.records == []


def test_both_handlers_record_each_retrieval_twice(
    retriever: BM25Retriever, manager: CallbackManager, handler: RankbridgeLlamaIndexCallback
) -> None:
    """Why the module docstring says not to attach the legacy and the instrumentation handlers together."""
    with capture(frameworks=["llamaindex"]) as cap:
        engine(retriever, manager).query(QUERIES["q1"])
    assert [r.query for r in cap.records] == [r.query for r in handler.recorder.records] == [QUERIES["q1"]]
    assert pairs(cap.records[0].retrieved) == pairs(handler.recorder.records[0].retrieved)


def test_capture_with_the_legacy_handler(nodes: list[TextNode], fresh_settings_manager: None) -> None:
    """``capture(frameworks=["llamaindex_legacy"])``: the same records as the instrumentation capture."""
    with capture(frameworks=["llamaindex_legacy"]) as cap:
        assert cap.attached == ("llamaindex_legacy",)
        retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=3)  # built after the capture starts
        qe = RetrieverQueryEngine.from_args(retriever, node_postprocessors=[ReverseAndCut()])
        answers = [answer(qe.query(text)) for text in QUERIES.values()]
    assert Settings.callback_manager.handlers == []  # detached on exit
    with capture(frameworks=["llamaindex"]) as reference:
        assert [answer(qe.query(text)) for text in QUERIES.values()] == answers
    assert [r.query for r in cap.records] == list(QUERIES.values())
    for old_style, instrumented in zip(cap.records, reference.records, strict=True):
        assert pairs(old_style.retrieved) == pairs(instrumented.retrieved)
        assert pairs(old_style.hits) == pairs(instrumented.hits)
    assert sorted(cap.run) == sorted(reference.run) and len(cap.run) == len(QUERIES)
    assert all(cap.run.hits(q) == reference.run.hits(q) for q in cap.run)


def test_auto_picks_the_legacy_handler_only_without_instrumentation(
    monkeypatch: pytest.MonkeyPatch, fresh_settings_manager: None
) -> None:
    import rankbridge.frameworks as callbacks

    assert capture()._frameworks[0] == "llamaindex"  # llama-index-core 0.14 has instrumentation
    monkeypatch.setattr(callbacks, "_has_instrumentation", lambda: False)
    assert capture()._frameworks[0] == "llamaindex_legacy"
    with pytest.raises(InputError, match="recorded twice"):
        capture(frameworks=["llamaindex", "llamaindex_legacy"])
