"""Capture memory is bounded in bytes (issue 18 point 4).

* a LlamaIndex retrieval inside a span that stays open does not keep the host's ``NodeWithScore`` objects
  (and their embeddings) alive: only the snapshot (ids, scores, texts, metadata references) waits for the
  enclosing span's final list, unless ``retain="objects"`` was asked;
* kept texts are bounded by ``max_text_bytes``; the texts not kept are counted;
* cancelled LangChain retrievals are recorded as cancelled and leave the open map;
* the LangChain configure hook never raises into the host.
"""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from rankbridge.capture import capture

DIM = 1536
K = 10


class EmbeddedRetriever(BaseRetriever):
    """Fresh nodes each call, each with a 1536-float embedding (as a vector store returns them)."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                node=TextNode(text=f"passage {i} about {query_bundle.query_str}", id_=f"d{i}", embedding=[0.5] * DIM),
                score=float(K - i),
            )
            for i in range(K)
        ]


def _held_open_run(retain: str, n: int = 20) -> tuple[list[weakref.ref[Any]], int, Any]:
    """``n`` retrievals inside one span that is still open when they are measured.

    Returns weak references to every ``NodeWithScore`` retrieved, the bytes still allocated (tracemalloc)
    when the span is about to close, and the capture.
    """
    dispatcher = get_dispatcher("tests.capture_memory")
    retriever = EmbeddedRetriever()
    refs: list[weakref.ref[Any]] = []
    measured: list[int] = []
    alive: list[weakref.ref[Any]] = []

    @dispatcher.span  # type: ignore[misc]
    def step(text: str) -> str:  # a tool-like span: returns text, so the records wait for the outer span
        nodes = retriever.retrieve(text)
        refs.extend(weakref.ref(x) for x in nodes)
        return f"{len(nodes)} passages"

    @dispatcher.span  # type: ignore[misc]
    def request() -> str:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            step(f"question {i}")
        gc.collect()
        measured.append(tracemalloc.get_traced_memory()[0] - before)
        alive.extend(r for r in refs if r() is not None)  # the span is still open here
        return "done"

    with capture(frameworks=["llamaindex"], retain=retain) as cap:  # type: ignore[arg-type]
        tracemalloc.start()
        try:
            request()
        finally:
            tracemalloc.stop()
    assert len(refs) == n * K
    return alive, measured[0], cap


def test_nodes_are_collectable_while_the_enclosing_span_is_open() -> None:
    n = 20
    alive, kept, cap = _held_open_run("light", n)
    assert len(cap.records) == n
    assert alive == []  # every NodeWithScore (with its embedding) was freed while the span was open
    per_retrieval = kept / n
    # one embedding alone is 1536 pointers (12 kB) per node, 120 kB per retrieval: the snapshot is far below
    assert per_retrieval < 20_000, per_retrieval
    assert [h.doc_id for h in cap.records[0].retrieved] == [f"d{i}" for i in range(K)]
    assert cap.records[0].retrieved[0].text == "passage 0 about question 0"


def test_retain_objects_keeps_the_nodes() -> None:
    n = 5
    alive, kept, _ = _held_open_run("objects", n)
    assert len(alive) == n * K  # asked for: the records keep the objects
    assert kept / n > 100_000


# -- a byte budget for kept texts ----------------------------------------------------------------------------
class TextRetriever(BaseRetriever):
    """Ten 1000-character passages per call."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text=str(i) * 1000, id_=f"d{i}"), score=float(K - i)) for i in range(K)]


def test_texts_over_the_budget_are_not_kept_and_are_counted() -> None:
    budget = 25_000  # 2.5 retrievals of 10 x 1000 characters
    with capture(frameworks=["llamaindex"], max_text_bytes=budget) as cap:
        for i in range(5):
            TextRetriever().retrieve(f"question {i}")
    texts = [[h.text for h in r.retrieved] for r in cap.records]
    kept = sum(t is not None for row in texts for t in row)
    assert kept == 25
    assert cap.recorder.text_chars == 25_000 <= budget
    assert texts[0] == [str(i) * 1000 for i in range(K)]
    assert texts[2][:5] == [str(i) * 1000 for i in range(5)] and texts[2][5:] == [None] * 5
    assert texts[4] == [None] * K
    # ids and scores are kept whatever the budget
    assert [[(h.doc_id, h.score) for h in r.retrieved] for r in cap.records] == [
        [(f"d{i}", float(K - i)) for i in range(K)]
    ] * 5
    assert cap.summary()["texts_dropped"] == 25
    assert cap.run.config["texts_dropped"] == 25
    assert cap.run.config["max_text_bytes"] == budget


def test_default_budget_keeps_every_text_and_reports_zero() -> None:
    with capture(frameworks=["llamaindex"]) as cap:
        TextRetriever().retrieve("question")
    assert cap.recorder.max_text_bytes == 256 * 2**20
    assert all(h.text is not None for h in cap.records[0].retrieved)
    assert cap.summary()["texts_dropped"] == 0
    assert cap.recorder.text_chars == 10_000


def test_content_hash_ids_keep_their_texts() -> None:
    with capture(frameworks=["llamaindex"], id_from="content_hash", max_text_bytes=0) as cap:
        TextRetriever().retrieve("question")
    assert len({h.doc_id for h in cap.records[0].retrieved}) == K  # ids read from the texts
    assert cap.summary()["texts_dropped"] == 0


def test_generic_snapshot_path_is_budgeted_too() -> None:
    from rankbridge.capture import CaptureRecord, Recorder

    class Doc:
        def __init__(self, id: str, page_content: str) -> None:
            self.id, self.page_content = id, page_content
            self.metadata: dict[str, Any] = {}

    rec = Recorder(max_text_bytes=3)
    r = CaptureRecord("test", "q", "r1", "Static")
    r.set_items([Doc("a", "xy"), Doc("b", "zz"), Doc("c", "w")], None, rec)
    assert rec.add(r)
    assert [h.text for h in r.retrieved] == ["xy", None, "w"]
    assert (rec.text_chars, rec.texts_dropped) == (3, 1)
    rec.clear()
    assert (rec.text_chars, rec.texts_dropped) == (0, 0)


# -- LangChain: cancelled retrievals, the configure hook ----------------------------------------------------
def _slow_retriever() -> Any:
    lc_retrievers = pytest.importorskip("langchain_core.retrievers")
    from langchain_core.documents import Document

    class Slow(lc_retrievers.BaseRetriever):  # type: ignore[misc,name-defined]
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
            return [Document(page_content="x", id="d1")]

        async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
            import asyncio

            await asyncio.sleep(10)
            return [Document(page_content="x", id="d1")]

    return Slow()


@pytest.mark.parametrize("how", ["capture", "async handler"])
def test_cancelled_langchain_retrievals_are_recorded_and_leave_the_open_map(how: str) -> None:
    import asyncio

    pytest.importorskip("langchain_core")
    from rankbridge.frameworks.langchain.capture import RankbridgeAsyncCallbackHandler

    retriever = _slow_retriever()
    handler = RankbridgeAsyncCallbackHandler()
    config = {"callbacks": [handler]} if how == "async handler" else {}

    async def main() -> None:
        tasks = [asyncio.create_task(retriever.ainvoke(f"question {i}", config=config)) for i in range(100)]
        await asyncio.sleep(0.05)  # every retrieval has started and waits
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0)  # done callbacks run in the next loop step

    if how == "capture":
        from rankbridge.frameworks.langchain import capture as lc

        with capture(frameworks=["langchain"]) as cap:
            tap = next(s.handler._tap for s in lc._slots if s.handler and s.handler._recorder is cap.recorder)
            asyncio.run(main())
        summary, records = cap.summary(), cap.records
    else:
        asyncio.run(main())
        tap = handler._tap
        summary, records = handler.summary(), handler.as_capture().records
    assert tap._open == {} and tap._by_task == {} and tap._task_of == {}
    assert summary["cancelled"] == 100
    assert summary["records"] == 100 and summary["errors"] == 100
    assert {r.error for r in records} == {"CancelledError: retrieval cancelled"}
    assert all(r.latency is not None and r.retrieved == [] for r in records)


def test_finished_async_retrievals_leave_no_watch_behind() -> None:
    import asyncio

    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever as LcRetriever

    from rankbridge.frameworks.langchain.capture import RankbridgeAsyncCallbackHandler

    class Quick(LcRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
            return [Document(page_content="x", id="d1")]

    handler = RankbridgeAsyncCallbackHandler()

    async def main() -> None:
        for i in range(50):  # one long-lived task: one set entry, emptied as each retrieval ends
            await Quick().ainvoke(f"q{i}", config={"callbacks": [handler]})
        assert len(handler._tap._by_task) == 1 and handler._tap._task_of == {}
        assert all(not runs for runs in handler._tap._by_task.values())

    asyncio.run(main())
    assert handler._tap._by_task == {} and handler._tap._open == {}
    assert handler.summary()["cancelled"] == 0 and handler.summary()["errors"] == 0


def test_configure_hook_never_raises_into_the_host() -> None:
    pytest.importorskip("langchain_core")
    from rankbridge.frameworks.langchain import capture as lc

    handler = lc.RankbridgeCallbackHandler()
    slot = lc._HookSlot()
    slot.handler = handler

    class Exploding:
        @property
        def enabled(self) -> bool:
            raise RuntimeError("bookkeeping bug")

        def internal_error(self, where: str, exc: BaseException) -> None:
            real.internal_error(where, exc)

    real = handler._recorder
    handler._recorder = Exploding()  # type: ignore[assignment]
    try:
        assert slot.get() is None  # the run goes on without the handler
    finally:
        handler._recorder = real
    assert real.internal_errors == 1 and "configure hook" in (real.last_internal_error or "")
    assert slot.get() is handler


# -- very large result lists: bounded work inside the host's call ----------------------------------------------
def test_a_result_list_of_100k_is_copied_in_bounded_work() -> None:
    import copy

    from rankbridge.capture import MAX_RESULTS, Snapshot

    node, hit = TextNode(text="t", id_="d"), NodeWithScore(node=TextNode(text="t", id_="d"), score=0.0)
    big = []
    for i in range(100_000):  # copies of one node (building 10^5 through pydantic takes minutes)
        n, h = copy.copy(node), copy.copy(hit)
        n.__dict__["id_"] = f"d{i}"
        h.__dict__.update(node=n, score=float(-i))
        big.append(h)

    class Big(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return big

    with capture(frameworks=["llamaindex"]) as cap:
        got = Big().retrieve("question")
    assert len(got) == 100_000  # the app's list is untouched
    (record,) = cap.records
    # the work done inside the call is the copy: MAX_RESULTS entries, not 10^5
    assert type(record._items) is Snapshot and len(record._items) == MAX_RESULTS * len(record._items.fields)
    assert [h.doc_id for h in record.retrieved[:2]] == ["d0", "d1"]
    assert cap.summary()["results_truncated"] == 1


def test_generic_path_cuts_long_lists_and_generators() -> None:
    from rankbridge.capture import MAX_RESULTS, CaptureRecord, Recorder

    rec = Recorder()
    r = CaptureRecord("test", "q", "r1", "Static")
    pulled = []

    def ids() -> Any:
        for i in range(10 * MAX_RESULTS):
            pulled.append(i)
            yield f"d{i}"

    r.set_items(ids(), None, rec)
    assert len(pulled) == MAX_RESULTS + 1  # the generator is read only one past the cut
    assert len(r.retrieved) == MAX_RESULTS and rec.results_truncated == 1
