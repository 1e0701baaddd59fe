"""Handlers an app passes by hand (``config={"callbacks": [handler]}``, ``CallbackManager([handler])``,
``dispatcher.add_span_handler(handler)``) read back as a :class:`~rankbridge.Run` with ``capture()``'s matching.

Apps as in ``test_apps.py``: ``InMemoryVectorStore.add_documents`` without ids (the corpus id in metadata), an
LCEL chain, ``VectorStoreIndex.from_documents`` chunks (UUID node ids, ``ref_doc_id``), a ``RetrieverQueryEngine``
with a node postprocessor, a chat engine. No process-wide capture is attached anywhere here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from rankbridge import GoldenSet, Qrels, Query
from rankbridge.capture import Recorder, query_id, query_key
from rankbridge.errors import InputError
from test_apps import QUESTIONS, lc_ids, lc_store_retriever, lcel_chain, li_ids, li_index, sources_llm
from test_capture_agents import _close_stray_event_loop

#: what the app asks: the golden questions, and one question of its own (matched by nothing)
OFF_SCRIPT = "Do cats hunt at night?"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used-offline")


# == LangChain ====================================================================================================
@pytest.fixture
def lc() -> None:
    pytest.importorskip("langchain_core")


@pytest.mark.usefixtures("lc")
def test_langchain_handler_in_a_chains_callbacks() -> None:
    from rankbridge.frameworks.langchain.capture import RankbridgeCallbackHandler

    retriever = lc_store_retriever()
    chain = lcel_chain(retriever)
    direct = {qid: lc_ids(retriever.invoke(q)) for qid, q in QUESTIONS.items()}
    handler = RankbridgeCallbackHandler(id_from="metadata:doc_id")
    for question in [*QUESTIONS.values(), OFF_SCRIPT]:
        chain.invoke(question, config={"callbacks": [handler]})
    run = handler.to_run(QUESTIONS)
    assert {qid: run.ranking(qid) for qid in QUESTIONS} == direct
    assert run.ranking(query_key(OFF_SCRIPT)) == lc_ids(retriever.invoke(OFF_SCRIPT))  # kept under its text
    assert (run.name, run.config["source"], run.config["frameworks"]) == ("callbacks", "callbacks", ["langchain"])
    assert handler.to_run(QUESTIONS, stage="retrieved").ranking("q1") == direct["q1"]  # no compressor: the same
    s = handler.summary(QUESTIONS)
    assert (s["records"], s["matched_by_text"], s["unmatched"], s["missing"], s["frameworks"]) == (
        5,
        4,
        1,
        [],
        ["langchain"],
    )
    assert handler.as_capture(QUESTIONS).unmatched == [OFF_SCRIPT]
    handler.clear()
    assert handler.summary(QUESTIONS)["missing"] == sorted(QUESTIONS)


@pytest.mark.usefixtures("lc")
def test_langchain_handler_on_a_retriever_with_query_ids() -> None:
    """``retriever.invoke(q, config={"callbacks": [handler], "metadata": {...}})``: matched by the id, not the text."""
    from rankbridge.frameworks.langchain.capture import RankbridgeCallbackHandler

    retriever = lc_store_retriever(k=4)
    handler = RankbridgeCallbackHandler(id_from="metadata:doc_id")
    paraphrases = {"q1": "scurvy: what brings it on", "q3": "barking dogs after dark"}
    for qid, text in paraphrases.items():
        retriever.invoke(text, config={"callbacks": [handler], "metadata": {"rankbridge_query_id": qid}})
    with query_id("q4"):  # the context variable works as well
        retriever.invoke("loaf baking", config={"callbacks": [handler]})
    golden = GoldenSet(
        [Query(q, t) for q, t in QUESTIONS.items()], Qrels({q: {"d0": 1, "d4": 1, "d7": 1} for q in QUESTIONS})
    )
    run = handler.to_run(golden)
    assert sorted(run) == ["q1", "q3", "q4"]
    assert run.ranking("q1") == lc_ids(retriever.invoke(paraphrases["q1"]))
    assert run.ranking("q3") == lc_ids(retriever.invoke(paraphrases["q3"]))
    assert run.ranking("q4") == lc_ids(retriever.invoke("loaf baking"))
    s = handler.summary(golden)
    assert (s["matched_by_id"], s["matched_by_text"], s["missing"]) == (3, 0, ["q2"])


@pytest.mark.usefixtures("lc")
def test_langchain_async_handler_in_ainvoke() -> None:
    from rankbridge.frameworks.langchain.capture import RankbridgeAsyncCallbackHandler

    retriever = lc_store_retriever()
    chain = lcel_chain(retriever)
    handler = RankbridgeAsyncCallbackHandler(id_from="metadata:doc_id")

    async def ask_all() -> list[str]:
        return list(
            await asyncio.gather(*(chain.ainvoke(q, config={"callbacks": [handler]}) for q in QUESTIONS.values()))
        )

    answers = asyncio.run(ask_all())
    run = handler.to_run(QUESTIONS)
    direct = {qid: lc_ids(retriever.invoke(q)) for qid, q in QUESTIONS.items()}
    assert {qid: run.ranking(qid) for qid in QUESTIONS} == direct
    assert answers == ["Sources: " + " ".join(direct[q]) for q in QUESTIONS]
    assert handler.summary(QUESTIONS)["internal_errors"] == 0


@pytest.mark.usefixtures("lc")
def test_handler_settings_go_to_its_own_recorder_only() -> None:
    from rankbridge.frameworks.langchain.capture import RankbridgeCallbackHandler
    from rankbridge.frameworks.llamaindex.capture_legacy import RankbridgeLlamaIndexCallback

    assert RankbridgeCallbackHandler(keep_text=False).recorder.keep_text is False
    for make in (RankbridgeCallbackHandler, RankbridgeLlamaIndexCallback):
        with pytest.raises(InputError, match="configure the handler's own Recorder"):
            make(Recorder(), id_from="ref_doc_id")


# == LlamaIndex ===================================================================================================
@pytest.fixture
def li(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM

    monkeypatch.setattr(Settings, "_llm", MockLLM(max_tokens=8))
    monkeypatch.setattr(Settings, "_embed_model", None)
    yield
    _close_stray_event_loop()


def engine_with_reorder(retriever: Any, **kwargs: Any) -> Any:
    from llama_index.core.postprocessor import LongContextReorder
    from llama_index.core.query_engine import RetrieverQueryEngine

    return RetrieverQueryEngine.from_args(
        retriever, llm=sources_llm(), node_postprocessors=[LongContextReorder()], **kwargs
    )


@pytest.mark.usefixtures("li")
def test_llamaindex_legacy_handler_in_a_callback_manager() -> None:
    """``CallbackManager([handler])`` given to the retriever and the engine; questions under ``query_id``."""
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.schema import QueryBundle

    from rankbridge.frameworks.llamaindex.capture_legacy import RankbridgeLlamaIndexCallback

    handler = RankbridgeLlamaIndexCallback(id_from="ref_doc_id")
    manager = CallbackManager([handler])
    retriever = li_index(callback_manager=manager).as_retriever(similarity_top_k=4)  # the index passes it on
    engine = engine_with_reorder(retriever, callback_manager=manager)
    final = {qid: li_ids(engine.retrieve(QueryBundle(q))) for qid, q in QUESTIONS.items()}
    first = {qid: li_ids(retriever.retrieve(q)) for qid, q in QUESTIONS.items()}
    assert all(final[q] != first[q] for q in QUESTIONS)
    handler.clear()  # the direct calls above went through the handler too
    answers = {}
    for qid, question in QUESTIONS.items():
        with query_id(qid):
            answers[qid] = str(engine.query(question))
    run = handler.to_run(QUESTIONS)
    assert {qid: run.ranking(qid) for qid in QUESTIONS} == final
    assert {qid: handler.to_run(QUESTIONS, stage="retrieved").ranking(qid) for qid in QUESTIONS} == first
    assert answers == {qid: "Sources: " + " ".join(ids) for qid, ids in final.items()}
    assert run.config["frameworks"] == ["llamaindex_legacy"]
    s = handler.summary(QUESTIONS)
    assert (s["matched_by_id"], s["reranked"], s["missing"]) == (4, 4, [])


@pytest.mark.usefixtures("li")
def test_llamaindex_span_handler_added_to_the_dispatcher() -> None:
    """``RankbridgeSpanHandler.create()`` on the root dispatcher around a chat engine's calls, then taken off."""
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.memory import ChatMemoryBuffer

    from rankbridge.frameworks.llamaindex.capture import RankbridgeSpanHandler

    index = li_index()
    memory = ChatMemoryBuffer.from_defaults(token_limit=4000)  # the default memory leaves an aiosqlite connection
    chat = index.as_chat_engine(chat_mode="context", llm=sources_llm(), similarity_top_k=3, memory=memory)
    direct = {qid: li_ids(index.as_retriever(similarity_top_k=3).retrieve(q)) for qid, q in QUESTIONS.items()}
    handler = RankbridgeSpanHandler.create(id_from="ref_doc_id")
    dispatcher = get_dispatcher()
    dispatcher.add_span_handler(handler)
    try:
        answers = {qid: str(chat.chat(q, chat_history=[])) for qid, q in QUESTIONS.items()}
    finally:
        dispatcher.span_handlers.remove(handler)
    chat.chat(OFF_SCRIPT)  # not seen: the handler is off
    run = handler.to_run(QUESTIONS)
    assert {qid: run.ranking(qid) for qid in QUESTIONS} == direct
    assert answers == {qid: "Sources: " + " ".join(ids) for qid, ids in direct.items()}
    assert [h.text is not None for h in run.hits("q1")] == [True] * 3
    s = handler.summary(QUESTIONS)
    assert (s["records"], s["matched_by_text"], s["frameworks"]) == (4, 4, ["llamaindex"])


@pytest.mark.usefixtures("li")
def test_llamaindex_attach_reads_back_as_a_run() -> None:
    from llama_index.core.schema import QueryBundle

    from rankbridge.frameworks.llamaindex import capture as li_capture

    engine = engine_with_reorder(li_index().as_retriever(similarity_top_k=4))
    final = li_ids(engine.retrieve(QueryBundle(QUESTIONS["q2"])))
    detach = li_capture.attach(Recorder(id_from="ref_doc_id"))
    try:
        engine.query(QUESTIONS["q2"])
    finally:
        detach()
    assert detach.to_run(QUESTIONS).ranking("q2") == final
    assert detach.summary(QUESTIONS)["missing"] == ["q1", "q3", "q4"]
