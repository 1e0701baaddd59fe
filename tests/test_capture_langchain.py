"""Live capture from real, offline LangChain pipelines.

An LCEL chain ``retriever | prompt | fake chat model`` over langchain_community's BM25Retriever runs as an
application would; the captured run must equal what the retriever returns when called directly, query by
query, from sync calls, threads, asyncio tasks and ``batch``, with the app's answers unchanged.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_community")
pytest.importorskip("rank_bm25")

from langchain_community.retrievers import BM25Retriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough

import rankbridge
from capture_data import CORPUS, GOLDEN, QRELS, QUERIES
from rankbridge import Qrels, Run
from rankbridge.capture import Recorder, capture, query_id
from rankbridge.frameworks.langchain.capture import RankbridgeAsyncCallbackHandler, RankbridgeCallbackHandler
from rankbridge.io import read_run, read_run_jsonl


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def retriever() -> BM25Retriever:
    return BM25Retriever.from_texts(list(CORPUS.values()), ids=list(CORPUS), k=3)


def make_chain(retriever: Runnable[Any, Any]) -> Runnable[Any, str]:
    """retriever | prompt | fake chat model, the LCEL shape of a RAG app."""

    def fmt(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    prompt = ChatPromptTemplate.from_template("Answer from the context.\n{context}\nQuestion: {question}")
    model = FakeListChatModel(responses=["It is in the context."])
    return {"context": retriever | fmt, "question": RunnablePassthrough()} | prompt | model | StrOutputParser()


def direct(retriever: BaseRetriever, text: str) -> list[str]:
    return [d.id for d in retriever.invoke(text)]  # type: ignore[misc]


def assert_run_equals_direct(run: Run, retriever: BaseRetriever, queries: dict[str, str]) -> None:
    assert sorted(run) == sorted(queries)
    for qid, text in queries.items():
        assert run.ranking(qid) == direct(retriever, text), qid


@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_chain_capture_equals_direct_calls(retriever: BM25Retriever, trace: bool) -> None:
    chain = make_chain(retriever)
    answers_plain = [chain.invoke(t) for t in QUERIES.values()]
    with capture(golden=GOLDEN, frameworks=["langchain"], trace=trace) as cap:
        assert cap.attached == ("langchain",)
        roots = [uuid4() for _ in QUERIES]
        answers = [chain.invoke(t, config={"run_id": root}) for t, root in zip(QUERIES.values(), roots, strict=True)]
    assert answers == answers_plain
    assert_run_equals_direct(cap.run, retriever, QUERIES)
    rec = cap.records[0]
    assert rec.framework == "langchain"
    assert rec.retriever == "BM25Retriever"
    assert rec.query == QUERIES["q1"]
    # nested in a RunnableParallel inside the sequence: the parent is a sub-chain, the trace the root run
    assert rec.parent_id is not None and rec.parent_id != str(roots[0])
    assert len({r.parent_id for r in cap.records}) == len(QUERIES)
    assert [r.trace_id for r in cap.records] == ([str(r) for r in roots] if trace else [None] * len(QUERIES))
    assert rec.latency is not None and rec.latency >= 0
    assert rec.final is None and rec.error is None
    assert [h.text for h in rec.retrieved] == [CORPUS[d] for d in direct(retriever, QUERIES["q1"])]
    s = cap.summary()
    assert s["matched_by_text"] == 5 and s["unmatched"] == 0 and s["missing"] == [] and s["internal_errors"] == 0
    assert cap.run.config["source"] == "capture"
    ev = rankbridge.evaluate(QRELS, cap.run, ["recall@3"])
    assert ev.mean["recall@3"] > 0


def test_detached_after_exit(retriever: BM25Retriever) -> None:
    with capture(frameworks=["langchain"]) as cap:
        retriever.invoke("bread")
    retriever.invoke("scurvy")
    assert [r.query for r in cap.records] == ["bread"]
    assert cap.attached == ()


def test_query_id_from_metadata_tags_and_context(retriever: BM25Retriever) -> None:
    chain = make_chain(retriever)
    with capture(golden=GOLDEN, frameworks=["langchain"]) as cap:
        chain.invoke("a paraphrase about scurvy", config={"metadata": {"rankbridge_query_id": "q1"}})
        chain.invoke("oranges and citrus", config={"tags": ["rankbridge_query_id=q2"]})
        with query_id("q3"):
            chain.invoke("cats and dogs")
        chain.invoke("bread yeast")  # by text
        chain.invoke("an unknown question")
        chain.invoke("x", config={"metadata": {"rankbridge_query_id": "q99"}})
    run = cap.run
    assert run.ranking("q1") == direct(retriever, "a paraphrase about scurvy")
    assert run.ranking("q2") == direct(retriever, "oranges and citrus")
    assert run.ranking("q3") == direct(retriever, "cats and dogs")
    assert run.ranking("q5") == direct(retriever, "bread yeast")
    s = cap.summary()
    assert (s["matched_by_id"], s["matched_by_text"], s["unmatched"]) == (3, 1, 1)
    assert s["unknown_ids"] == ["q99"] and s["missing"] == ["q4"]
    assert cap.unmatched == ["an unknown question", "x"]
    assert cap.queries["q1"] == "a paraphrase about scurvy"


def test_threads_capture_every_query(retriever: BM25Retriever) -> None:
    chain = make_chain(retriever)
    texts = {f"t{i}": f"{QUERIES[q]} {i}" for i, q in enumerate(list(QUERIES) * 12)}

    def ask(item: tuple[str, str]) -> str:
        return chain.invoke(item[1], config={"metadata": {"rankbridge_query_id": item[0]}})

    with capture(frameworks=["langchain"]) as cap, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, texts.items()))
    assert answers == ["It is in the context."] * len(texts)
    assert len(cap.records) == len(texts)
    assert_run_equals_direct(cap.run, retriever, texts)
    assert len({r.parent_id for r in cap.records}) == len(texts)


def test_asyncio_tasks_capture_every_query(retriever: BM25Retriever) -> None:
    chain = make_chain(retriever)
    texts = {f"t{i}": f"{QUERIES[q]} {i}" for i, q in enumerate(list(QUERIES) * 12)}

    async def main() -> list[str]:
        async def one(qid: str, text: str) -> str:
            with query_id(qid):
                return await chain.ainvoke(text)

        return await asyncio.gather(*(one(q, t) for q, t in texts.items()))

    with capture(frameworks=["langchain"]) as cap:
        answers = asyncio.run(main())
    assert len(answers) == len(texts)
    assert_run_equals_direct(cap.run, retriever, texts)


def test_batch_with_max_concurrency(retriever: BM25Retriever) -> None:
    chain = make_chain(retriever)
    with capture(golden=GOLDEN, frameworks=["langchain"]) as cap:
        chain.batch(list(QUERIES.values()), config={"max_concurrency": 3})
    assert_run_equals_direct(cap.run, retriever, QUERIES)


class Reranking(BaseRetriever):
    """A wrapper retriever (like ContextualCompressionRetriever): base retriever, then reverse and cut."""

    base: BaseRetriever
    keep: int = 2

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        docs = self.base.invoke(query, config={"callbacks": run_manager.get_child()})
        return list(reversed(docs))[: self.keep]


@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_nested_retriever_gives_retrieved_and_final_lists(retriever: BM25Retriever, trace: bool) -> None:
    wrapper = Reranking(base=retriever)
    chain = make_chain(wrapper)
    with capture(golden=GOLDEN, frameworks=["langchain"], trace=trace) as cap:
        chain.invoke(QUERIES["q1"])
    (rec,) = cap.records
    assert rec.retriever == "Reranking"
    assert [h.doc_id for h in rec.retrieved] == direct(retriever, QUERIES["q1"])
    assert rec.final is not None
    assert [h.doc_id for h in rec.final] == direct(wrapper, QUERIES["q1"])
    assert [n.retriever for n in rec.nested] == ["BM25Retriever"]
    assert rec.nested[0].trace_id == rec.trace_id and (rec.trace_id is not None) is trace
    assert rec.nested[0].parent_id == rec.run_id
    assert cap.run.ranking("q1") == direct(wrapper, QUERIES["q1"])
    assert cap.to_run(stage="retrieved").ranking("q1") == direct(retriever, QUERIES["q1"])
    assert cap.summary()["reranked"] == 1


@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_retriever_nested_in_a_tool_and_an_agent_like_chain(retriever: BM25Retriever, trace: bool) -> None:
    from langchain_core.tools import tool

    @tool
    def search(question: str) -> str:
        """Search the corpus."""
        return " | ".join(d.page_content for d in retriever.invoke(question))

    agent = RunnableLambda(lambda q: search.invoke(q)) | RunnableLambda(lambda s: s.upper())
    root = uuid4()
    with capture(golden=GOLDEN, frameworks=["langchain"], trace=trace) as cap:
        agent.invoke(QUERIES["q2"], config={"run_id": root})
    (rec,) = cap.records
    assert rec.trace_id == (str(root) if trace else None)
    assert rec.parent_id is not None and rec.parent_id != str(root)  # the tool's run
    assert cap.run.ranking("q2") == direct(retriever, QUERIES["q2"])


class Broken(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        raise ConnectionError("vector store down")


def test_retriever_error_is_recorded_and_still_raised() -> None:
    chain = make_chain(Broken())
    with capture(golden=GOLDEN, frameworks=["langchain"]) as cap, pytest.raises(ConnectionError):
        chain.invoke(QUERIES["q1"])
    run = cap.run
    assert run.errors == {"q1": "retrieval failed: ConnectionError: vector store down"}
    assert cap.summary()["errors"] == 1


def test_id_from_metadata_and_unresolvable_ids() -> None:
    docs = [Document(page_content=t, metadata={"doc_id": d}) for d, t in CORPUS.items()]
    r = BM25Retriever.from_documents(docs, k=3)
    with capture(golden=GOLDEN, frameworks=["langchain"], id_from="metadata:doc_id") as cap:
        r.invoke(QUERIES["q1"])
    assert cap.run.ranking("q1") == [d.metadata["doc_id"] for d in r.invoke(QUERIES["q1"])]
    with capture(golden=GOLDEN, frameworks=["langchain"]) as cap2:  # Document.id is None
        answer = r.invoke(QUERIES["q1"])
    assert len(answer) == 3
    assert "q1" in cap2.run.errors and "no doc id" in cap2.run.errors["q1"]
    assert cap2.summary()["resolve_errors"] == 1


def test_export_trec_and_jsonl(retriever: BM25Retriever, tmp_path: Path) -> None:
    with capture(golden=GOLDEN, frameworks=["langchain"], name="live bm25") as cap:
        for t in QUERIES.values():
            retriever.invoke(t)
    cap.write_trec(tmp_path / "run.txt")
    cap.write_jsonl(tmp_path / "run.jsonl")
    trec = read_run(tmp_path / "run.txt")
    jsonl = read_run_jsonl(tmp_path / "run.jsonl")
    for qid in QUERIES:
        assert trec.ranking(qid) == jsonl.ranking(qid) == cap.run.ranking(qid)
    assert trec.name == "live_bm25"
    assert jsonl.hits("q1")[0].text == CORPUS[cap.run.ranking("q1")[0]]
    assert set(jsonl.latency) == set(QUERIES)


def test_explicit_handlers_sync_and_async(retriever: BM25Retriever) -> None:
    sync_handler = RankbridgeCallbackHandler(Recorder())
    retriever.invoke("bread", config={"callbacks": [sync_handler]})
    assert [h.doc_id for h in sync_handler.recorder.records[0].retrieved] == direct(retriever, "bread")

    async_handler = RankbridgeAsyncCallbackHandler(Recorder())
    chain = make_chain(retriever)

    async def main() -> None:
        await asyncio.gather(*(chain.ainvoke(t, config={"callbacks": [async_handler]}) for t in QUERIES.values()))

    asyncio.run(main())
    got = {r.query: [h.doc_id for h in r.retrieved] for r in async_handler.recorder.records}
    assert got == {t: direct(retriever, t) for t in QUERIES.values()}
    assert all(r.trace_id is not None and r.trace_id != r.run_id for r in async_handler.recorder.records)


def test_nested_captures_both_record(retriever: BM25Retriever) -> None:
    with capture(frameworks=["langchain"]) as outer:
        retriever.invoke("bread")
        with capture(frameworks=["langchain"]) as inner:
            retriever.invoke("scurvy")
        retriever.invoke("dogs")
    assert [r.query for r in outer.records] == ["bread", "scurvy", "dogs"]
    assert [r.query for r in inner.records] == ["scurvy"]


def handlers_seen(chain_step_handlers: list[list[str]], retriever_handlers: list[list[str]]) -> Runnable[Any, Any]:
    """A chain whose steps note the handler classes of their own run and of the retriever's run."""

    class Spy(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            retriever_handlers.append([type(h).__name__ for h in run_manager.handlers])
            return [Document(page_content=CORPUS["d0"], id="d0")]

    def step(x: Any, config: Any) -> Any:
        chain_step_handlers.append([type(h).__name__ for h in config["callbacks"].handlers])
        return x

    return RunnableLambda(step) | Spy() | RunnableLambda(step)


@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_handler_rides_on_retriever_runs_unless_trace(trace: bool) -> None:
    steps: list[list[str]] = []
    retrievals: list[list[str]] = []
    chain = handlers_seen(steps, retrievals)
    with capture(golden=GOLDEN, frameworks=["langchain"], trace=trace) as cap:
        chain.invoke(QUERIES["q1"])
        asyncio.run(chain.ainvoke(QUERIES["q2"]))
    assert retrievals == [["RankbridgeCallbackHandler"]] * 2
    assert len(steps) == 4
    # by default LangChain does not carry the handler through the chain's other runs (they cost it time)
    assert all(("RankbridgeCallbackHandler" in seen) is trace for seen in steps)
    assert cap.run.ranking("q1") == cap.run.ranking("q2") == ["d0"]
    assert all(r.parent_id is not None and (r.trace_id is not None) is trace for r in cap.records)


def test_unknown_stack_layout_falls_back_to_every_run(
    monkeypatch: pytest.MonkeyPatch, retriever: BM25Retriever
) -> None:
    """Another langchain_core release may configure runs differently: the handler then goes on every run."""
    import rankbridge.frameworks.langchain.capture as lc

    monkeypatch.setattr(lc, "_CONFIGURE", None)
    monkeypatch.setattr(lc, "_VERDICTS", {})
    steps: list[list[str]] = []
    retrievals: list[list[str]] = []
    with capture(golden=GOLDEN, frameworks=["langchain"]) as cap:
        handlers_seen(steps, retrievals).invoke(QUERIES["q1"])
        make_chain(retriever).invoke(QUERIES["q2"])
    assert retrievals == [["RankbridgeCallbackHandler"]]
    assert all("RankbridgeCallbackHandler" in seen for seen in steps)
    assert cap.run.ranking("q2") == direct(retriever, QUERIES["q2"])


class SelfConfiguring(BaseRetriever):
    """Overrides ``invoke`` and configures its own callbacks, as langchain's EnsembleRetriever does."""

    first: BaseRetriever
    second: BaseRetriever

    def invoke(self, input: str, config: Any = None, **kwargs: Any) -> list[Document]:
        from langchain_core.callbacks import CallbackManager
        from langchain_core.runnables import ensure_config

        config = ensure_config(config)
        manager = CallbackManager.configure(config.get("callbacks"), None, inheritable_tags=config.get("tags"))
        run_manager = manager.on_retriever_start(None, input, name=self.get_name())
        docs = self._get_relevant_documents(input, run_manager=run_manager)
        run_manager.on_retriever_end(docs)
        return docs

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        a = self.first.invoke(query, config={"callbacks": run_manager.get_child()})
        b = self.second.invoke(query, config={"callbacks": run_manager.get_child()})
        seen: dict[str | None, Document] = {}
        for d in a + b:
            seen.setdefault(d.id, d)
        return list(seen.values())


def test_retriever_that_configures_its_own_run_is_captured(retriever: BM25Retriever) -> None:
    other = BM25Retriever.from_texts(list(CORPUS.values())[::-1], ids=list(CORPUS)[::-1], k=2)
    ensemble = SelfConfiguring(first=retriever, second=other)
    with capture(golden=GOLDEN, frameworks=["langchain"]) as cap:
        make_chain(ensemble).invoke(QUERIES["q4"])
    (rec,) = cap.records
    assert rec.retriever == "SelfConfiguring"
    assert [n.retriever for n in rec.nested] == ["BM25Retriever", "BM25Retriever"]
    assert cap.run.ranking("q4") == [d.id for d in ensemble.invoke(QUERIES["q4"])]


def test_save_to_the_history_store(retriever: BM25Retriever, tmp_path: Path) -> None:
    store_mod = pytest.importorskip("rankbridge.store")
    with capture(golden=GOLDEN, frameworks=["langchain"], name="live-bm25") as cap:
        for t in QUERIES.values():
            retriever.invoke(t)
    evaluation = rankbridge.evaluate(QRELS, cap.run, ["ndcg@10", "recall@3"])
    with store_mod.RunStore(tmp_path / "history.sqlite") as store:
        record_id = store.save(evaluation, run=cap.run)
        assert store.get(record_id) is not None
        assert store.load(record_id).mean == pytest.approx(evaluation.mean)


def grading_chat_model() -> Any:
    """A LangChain ``BaseChatModel`` subclass that grades by QRELS, routing on the texts in the judge's prompt."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class GradingChatModel(BaseChatModel):
        prompts: list[str] = []  # noqa: RUF012 - a pydantic field (copied per instance)

        @property
        def _llm_type(self) -> str:
            return "grading-fake"

        def _generate(
            self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            prompt = str(messages[-1].content)
            self.prompts.append(prompt)
            doc = next(d for d, text in CORPUS.items() if text in prompt)
            qid = next(q for q, text in QUERIES.items() if text in prompt)
            grade = QRELS.to_dict().get(qid, {}).get(doc, 0)
            reply = f'{{"reason": "scripted", "grade": {grade}}}'
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])

    return GradingChatModel()


def test_judge_a_captured_run_without_qrels(retriever: BM25Retriever, tmp_path: Path) -> None:
    """No golden set, no qrels: the app runs, the capture is judged by an LLM, the run is scored on its grades."""
    chain = make_chain(retriever)
    with capture(frameworks=["langchain"]) as cap:
        for text in QUERIES.values():
            chain.invoke(text)
    assert cap.summary()["unmatched"] == len(QUERIES)  # ids are hashes of the query texts
    model = grading_chat_model()
    result = cap.judge(model, k=3, cache=tmp_path / "grades.sqlite", model_id="grading-fake", concurrency=2)
    key_of = {cap.matcher.match(text, None)[0]: qid for qid, text in QUERIES.items()}
    truth = QRELS.to_dict()
    expected = {
        key: {doc: truth.get(qid, {}).get(doc, 0) for doc in direct(retriever, QUERIES[qid])}
        for key, qid in key_of.items()
    }
    assert result.qrels.to_dict() == expected
    assert result.report.complete and len(model.prompts) == 3 * len(QUERIES)
    judged = rankbridge.evaluate(result.qrels, cap.run, ["precision@3", "ndcg@3"])
    by_truth = rankbridge.evaluate(Qrels(expected), cap.run, ["precision@3", "ndcg@3"])
    assert judged.mean == pytest.approx(by_truth.mean)
    assert judged.mean["precision@3"] > 0
    again = cap.judge(model, k=3, cache=tmp_path / "grades.sqlite", model_id="grading-fake")
    assert again.report.from_cache == 3 * len(QUERIES) and len(model.prompts) == 3 * len(QUERIES)


def test_repeats_first_or_last(retriever: BM25Retriever) -> None:
    """One query id over several retrievals (an agent searching again): the first by default, or the last."""
    with capture(golden=GOLDEN, frameworks=["langchain"]) as cap, query_id("q1"):
        retriever.invoke("bread yeast")
        retriever.invoke("scurvy sailors")
    assert cap.run.ranking("q1") == direct(retriever, "bread yeast")
    assert cap.to_run(repeats="last").ranking("q1") == direct(retriever, "scurvy sailors")
    assert cap.summary()["repeats"] == 1 and len(cap.records) == 2
    with pytest.raises(rankbridge.InputError, match="repeats must be"):
        cap.to_run(repeats="all")  # type: ignore[arg-type]
