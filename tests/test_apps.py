"""``rankbridge.apps``: apps that answer (chat engines, query engines as apps, LCEL chains, agents, ``f(question)``)
run per question, their retrievals captured and scored.

Apps are built as applications build them: LlamaIndex ``VectorStoreIndex.from_documents`` (``SentenceSplitter``
chunks with UUID node ids, the corpus id in ``ref_doc_id``) over a local deterministic embedding, LangChain
``InMemoryVectorStore.add_documents`` without ids (UUIDs; the corpus id in metadata). LLMs are scripted but go
through the frameworks' own code; their answers name the documents of the context they were given, so an answer
changes if the retrievals do. Every expected list is what the retriever (or the engine's own retrieve path)
returns when called directly with the same query.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from capture_data import CORPUS
from rankbridge import GoldenSet, Qrels, Query, Run
from rankbridge.apps import arun_app, is_app, run_app
from rankbridge.errors import InputError
from test_capture_agents import (
    ALL_SCRIPTS,
    SCRIPT,
    TWO_SEARCHES,
    _close_stray_event_loop,
    expected_answer,
    lc_agent,
    li_agent,
    sources,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:The `__fields:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Accessing the 'model_:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning"),
]

QUESTIONS = {
    "q1": "What causes scurvy?",
    "q2": "Which fruits are rich in vitamin C?",
    "q3": "Why do dogs bark at night?",
    "q4": "How is bread made?",
}
#: the agents' golden set: their users' questions (the agent writes the queries the retriever gets)
AGENT_QUESTIONS = {"u1": next(iter(SCRIPT)), "u2": list(SCRIPT)[2], "u5": TWO_SEARCHES}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used-offline")


def assert_detached() -> None:
    """No rankbridge handler is left on LangChain's configure hooks or LlamaIndex's dispatcher."""
    import sys

    if "rankbridge.frameworks.langchain.capture" in sys.modules:
        from rankbridge.frameworks.langchain.capture import _slots

        assert all(s.handler is None for s in _slots)
    if "rankbridge.frameworks.llamaindex.capture" in sys.modules:
        from llama_index.core.instrumentation import get_dispatcher

        from rankbridge.frameworks.llamaindex.capture import RankbridgeSpanHandler

        assert not [h for h in get_dispatcher().span_handlers if isinstance(h, RankbridgeSpanHandler)]


# == framework-free ===============================================================================================
def test_is_app_tells_apps_from_retrievers() -> None:
    import functools

    class Bot:
        def __call__(self, question: str) -> str:
            return "yes"

    class Search:
        def __call__(self, query: str, k: int) -> list[str]:
            return []

    async def aanswer(question: str) -> str:
        return "yes"

    def search(query: str, k: int = 10) -> list[str]:
        return []

    def answer_with(question: str, *, style: str = "short") -> str:
        return "yes"

    assert [is_app(x) for x in (Bot(), aanswer, answer_with, functools.partial(search, k=3))] == [True] * 4
    assert [is_app(x) for x in (Search(), search, lambda *args: None, Bot, "text", None, 3)] == [False] * 7


def test_run_app_failures_are_errors_of_the_run() -> None:
    """A raising app, a slow one, one that answers without retrieving: each an error, the others unharmed."""
    release = threading.Event()

    def app(question: str) -> str:
        if question == "boom":
            raise ConnectionError("LLM endpoint down")
        if question == "slow":
            release.wait(5)
        return f"answer to {question}"

    run = run_app(app, {"a": "boom", "b": "slow", "c": "fine"}, timeout=0.3, frameworks=())
    release.set()
    assert run.errors == {
        "a": "error: ConnectionError: LLM endpoint down",
        "b": "timeout: the app did not answer within 0.3 s",
        "c": "invalid result: the app answered without retrieving (no retrieval was captured while it answered) "
        "(no capture was attached: rankbridge sees retrievals made through LlamaIndex or LangChain only)",
    }
    assert run.answers == {"c": "answer to fine"}
    assert run.config["failures"] == {"error": 1, "timeout": 1, "invalid result": 1}
    assert run.config["retrievals"] == {"a": 0, "b": 0, "c": 0}
    assert run.to_stage("retrieved").errors == run.errors
    assert 0.3 <= run.latency["b"] < 2


def test_run_app_refuses_retrievers_and_bad_options() -> None:
    with pytest.raises(InputError, match="cannot ask a int questions"):
        run_app(3, {"q": "x"}, frameworks=())
    with pytest.raises(InputError, match=r"retrieval must be one of 'final', 'first', 'last', 'merge', 'all'"):
        run_app(lambda q: q, {"q": "x"}, retrieval="best", frameworks=())  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"concurrency must be an int >= 1\. Got 0 instead\."):
        run_app(lambda q: q, {"q": "x"}, concurrency=0, frameworks=())


# == LlamaIndex ===================================================================================================
def token_vector(text: str, dim: int = 64) -> list[float]:
    """A bag of words hashed into ``dim`` buckets, L2-normalised: deterministic, local, and it ranks by word overlap."""
    vec = [0.0] * dim
    for word in re.findall(r"[a-z]+", text.lower()):
        if len(word) > 2:
            vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


@pytest.fixture
def li(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """LlamaIndex installed, offline: no default LLM or embedding model may be built."""
    pytest.importorskip("llama_index.core")
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM

    monkeypatch.setattr(Settings, "_llm", MockLLM(max_tokens=8))
    monkeypatch.setattr(Settings, "_embed_model", None)
    yield
    _close_stray_event_loop()


def li_embedding() -> Any:
    from llama_index.core.embeddings import BaseEmbedding

    class TokenEmbedding(BaseEmbedding):  # type: ignore[misc]
        def _get_query_embedding(self, query: str) -> list[float]:
            return token_vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return token_vector(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return token_vector(text)

    return TokenEmbedding(model_name="token-hash")


def li_index(**kwargs: Any) -> Any:
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter

    documents = [Document(text=text, id_=doc) for doc, text in CORPUS.items()]
    return VectorStoreIndex.from_documents(
        documents,
        transformations=[SentenceSplitter(chunk_size=128, chunk_overlap=16)],
        embed_model=li_embedding(),
        **kwargs,
    )


def sources_llm() -> Any:
    """A ``CustomLLM`` answering ``"Sources: <ids>"``: the corpus documents quoted in its prompt, in prompt order."""
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    class Sources(CustomLLM):  # type: ignore[misc]
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted-sources")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text="Sources: " + sources(prompt))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            def gen() -> Iterator[CompletionResponse]:
                text = "Sources: " + sources(prompt)
                yield CompletionResponse(text=text, delta=text)

            return gen()

    return Sources()


def li_ids(nodes: Any) -> list[str]:
    return [n.node.ref_doc_id for n in nodes]


@pytest.mark.usefixtures("li")
@pytest.mark.parametrize("mode", ["context", "condense_plus_context"])
def test_llamaindex_chat_engine(mode: str) -> None:
    from llama_index.core.memory import ChatMemoryBuffer

    index = li_index()
    # an explicit memory: LlamaIndex's default one opens an aiosqlite connection that it never closes
    memory = ChatMemoryBuffer.from_defaults(token_limit=4000)
    engine = index.as_chat_engine(chat_mode=mode, llm=sources_llm(), similarity_top_k=3, memory=memory)
    assert is_app(engine)
    direct = {qid: li_ids(index.as_retriever(similarity_top_k=3).retrieve(q)) for qid, q in QUESTIONS.items()}
    assert all(len(set(ids)) == 3 for ids in direct.values())
    run = run_app(engine, QUESTIONS, id_from="ref_doc_id", concurrency=4)
    assert_detached()
    assert run.errors == {}
    assert {qid: run.ranking(qid) for qid in QUESTIONS} == direct
    assert {qid: run.to_stage("retrieved").ranking(qid) for qid in QUESTIONS} == direct
    assert run.answers == {qid: "Sources: " + " ".join(ids) for qid, ids in direct.items()}
    assert [h.text for h in run.hits("q1")] == [CORPUS[d] for d in direct["q1"]]
    cfg = run.config
    assert (cfg["call"], cfg["retrieval"], cfg["retrievals"], cfg["concurrency"]) == (
        "chat",
        "final",
        dict.fromkeys(QUESTIONS, 1),
        1,  # a chat engine's memory is shared by its calls: one question at a time
    )
    assert cfg["sequential"].startswith("a chat engine keeps one memory")
    assert (cfg["unbound_retrievals"], cfg["internal_errors"], cfg["frameworks"]) == (0, 0, ["llamaindex", "langchain"])


@pytest.mark.usefixtures("li")
def test_llamaindex_query_engine_with_postprocessor_runs_as_app_on_request() -> None:
    """``is_app`` leaves a query engine to the retriever adapters; ``run_app`` runs it as an app: final list
    after the node postprocessor (scored), the retriever's own list in ``stages["retrieved"]``, the answers."""
    from llama_index.core.postprocessor import LongContextReorder
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import QueryBundle

    retriever = li_index().as_retriever(similarity_top_k=4)
    engine = RetrieverQueryEngine.from_args(retriever, llm=sources_llm(), node_postprocessors=[LongContextReorder()])
    assert not is_app(engine)
    final = {qid: li_ids(engine.retrieve(QueryBundle(q))) for qid, q in QUESTIONS.items()}
    first = {qid: li_ids(retriever.retrieve(q)) for qid, q in QUESTIONS.items()}
    assert all(final[q] != first[q] and sorted(final[q]) == sorted(first[q]) for q in QUESTIONS)  # reordered
    run = asyncio.run(arun_app(engine, QUESTIONS, id_from="ref_doc_id"))
    assert_detached()
    assert {qid: run.ranking(qid) for qid in QUESTIONS} == final
    assert {qid: run.to_stage("retrieved").ranking(qid) for qid in QUESTIONS} == first
    assert run.answers == {qid: "Sources: " + " ".join(ids) for qid, ids in final.items()}
    assert (run.config["call"], run.config["retrievals"]) == ("query", dict.fromkeys(QUESTIONS, 1))
    sync = run_app(engine, QUESTIONS, id_from="ref_doc_id", k=2)
    assert {qid: sync.ranking(qid) for qid in QUESTIONS} == {q: ids[:2] for q, ids in final.items()}
    assert sync.answers == run.answers


def combined(lists: list[list[str]], how: str) -> list[str]:
    """The expected combination of several searches' lists (written out independently of rankbridge.apps)."""
    if how == "first":
        order = lists[0]
    elif how == "last":
        order = lists[-1]
    elif how == "merge":
        order = [x[i] for i in range(max(map(len, lists))) for x in lists if i < len(x)]
    else:
        order = [d for x in lists for d in x]
    return list(dict.fromkeys(order))


@pytest.mark.usefixtures("li")
@pytest.mark.parametrize("how", ["final", "first", "last", "merge", "all"])
def test_llamaindex_function_agent_searching_twice(how: str) -> None:
    retriever = li_index().as_retriever(similarity_top_k=3)
    agent, _ = li_agent("function", retriever)
    assert is_app(agent)

    def direct(q: str) -> list[str]:
        return li_ids(retriever.retrieve(q))

    first, second = (direct(q) for q in ALL_SCRIPTS[TWO_SEARCHES])
    assert first != second and set(first) & set(second)  # overlapping searches: the combinations differ
    run = run_app(agent, AGENT_QUESTIONS, id_from="ref_doc_id", retrieval=how)  # type: ignore[arg-type]
    assert_detached()
    assert run.errors == {}
    assert run.config["retrievals"] == {"u1": 1, "u2": 1, "u5": 2}
    assert (run.config["call"], run.config["retrieval"]) == ("run", how)
    assert run.ranking("u5") == combined([first, second], how)
    for qid in ("u1", "u2"):
        assert run.ranking(qid) == direct(ALL_SCRIPTS[AGENT_QUESTIONS[qid]][0])
    assert run.answers == {qid: expected_answer(q, direct) for qid, q in AGENT_QUESTIONS.items()}
    if how == "all":
        assert sorted(run.stages) == ["retrieved", "search:1", "search:2"]
        assert run.to_stage("search:1").ranking("u5") == first
        assert run.to_stage("search:2").ranking("u5") == second
        assert sorted(run.to_stage("search:1")) == ["u1", "u2", "u5"] and list(run.to_stage("search:2")) == ["u5"]
    else:
        assert sorted(run.stages) == ["retrieved"]


@pytest.mark.usefixtures("li")
def test_llamaindex_agent_async_and_merge_ordering() -> None:
    """``arun_app`` on the caller's loop; ``merge`` interleaves the two searches rank by rank."""
    retriever = li_index().as_retriever(similarity_top_k=3)
    agent, _ = li_agent("function", retriever)
    first, second = (li_ids(retriever.retrieve(q)) for q in ALL_SCRIPTS[TWO_SEARCHES])
    run = asyncio.run(arun_app(agent, {"u5": TWO_SEARCHES}, id_from="ref_doc_id", retrieval="merge"))
    expected = list(dict.fromkeys([first[0], second[0], first[1], second[1], first[2], second[2]]))
    assert run.ranking("u5") == expected
    assert run.to_stage("retrieved").ranking("u5") == expected  # no postprocessor: the same lists


# == LangChain ====================================================================================================
@pytest.fixture
def lc() -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("langchain.agents")
    pytest.importorskip("langgraph")


def lc_store_retriever(k: int = 3) -> Any:
    """``InMemoryVectorStore.add_documents`` without ids (UUIDs), the corpus id in ``metadata["doc_id"]``."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class TokenEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [token_vector(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return token_vector(text)

    store = InMemoryVectorStore(TokenEmbeddings())
    store.add_documents([Document(page_content=t, metadata={"doc_id": d}) for d, t in CORPUS.items()])
    return store.as_retriever(search_kwargs={"k": k})


def sources_chat_model() -> Any:
    """A ``BaseChatModel`` answering ``"Sources: <ids>"`` of the corpus documents quoted in its prompt."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Sources(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted-sources"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            prompt = "\n".join(str(m.content) for m in messages)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="Sources: " + sources(prompt)))])

    return Sources()


def lcel_chain(retriever: Any) -> Any:
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    def format_docs(docs: Any) -> str:
        return "\n\n".join(d.page_content for d in docs)

    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context:\n{context}"), ("human", "{question}")]
    )
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | sources_chat_model()
        | StrOutputParser()
    )


def lc_ids(docs: Any) -> list[str]:
    return [d.metadata["doc_id"] for d in docs]


@pytest.mark.usefixtures("lc")
def test_langchain_lcel_chain() -> None:
    retriever = lc_store_retriever()
    chain = lcel_chain(retriever)
    assert is_app(chain) and not is_app(retriever) and not is_app(retriever.vectorstore)
    direct = {qid: lc_ids(retriever.invoke(q)) for qid, q in QUESTIONS.items()}
    run = run_app(chain, QUESTIONS, id_from="metadata:doc_id", concurrency=4)
    assert_detached()
    assert run.errors == {}
    assert {qid: run.ranking(qid) for qid in QUESTIONS} == direct
    assert run.answers == {qid: "Sources: " + " ".join(ids) for qid, ids in direct.items()}
    assert (run.config["call"], run.config["retrievals"], run.config["concurrency"]) == (
        "invoke",
        dict.fromkeys(QUESTIONS, 1),
        4,
    )
    arun = asyncio.run(arun_app(chain, QUESTIONS, id_from="metadata:doc_id"))
    assert {qid: arun.ranking(qid) for qid in QUESTIONS} == direct and arun.answers == run.answers


@pytest.mark.usefixtures("lc")
def test_langchain_chain_failures() -> None:
    """A chain whose retriever raises, one with no retriever, one whose results have no such metadata key."""
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever

    class Down(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
            raise ConnectionError("vector store down")

    run = run_app(lcel_chain(Down()), {"q1": QUESTIONS["q1"]})
    assert run.errors == {"q1": "error: ConnectionError: vector store down"}
    assert run.config["retrievals"] == {"q1": 1}

    no_rag = ChatPromptTemplate.from_messages([("human", "{question}")]) | sources_chat_model() | StrOutputParser()
    run = run_app(no_rag, {"q1": QUESTIONS["q1"]}, input_key="question")
    assert run.errors == {
        "q1": "invalid result: the app answered without retrieving (no retrieval was captured while it answered)"
    }
    assert run.answers == {"q1": "Sources: "}

    run = run_app(lcel_chain(lc_store_retriever()), {"q1": QUESTIONS["q1"]}, id_from="metadata:nope")
    assert run.errors["q1"].startswith("invalid result: captured results have no usable doc id: ")
    assert_detached()


@pytest.mark.usefixtures("lc")
@pytest.mark.parametrize("how", ["final", "last", "all"])
def test_langchain_create_agent_with_retriever_tool(how: str) -> None:
    retriever = lc_store_retriever()
    agent = lc_agent("retriever_tool", retriever)
    assert is_app(agent)

    def direct(q: str) -> list[str]:
        return lc_ids(retriever.invoke(q))

    first, second = (direct(q) for q in ALL_SCRIPTS[TWO_SEARCHES])
    assert first != second
    run = run_app(agent, AGENT_QUESTIONS, id_from="metadata:doc_id", retrieval=how)  # type: ignore[arg-type]
    assert_detached()
    assert run.errors == {}
    assert run.config["retrievals"] == {"u1": 1, "u2": 1, "u5": 2}
    assert run.ranking("u5") == combined([first, second], how)
    assert run.ranking("u2") == direct(ALL_SCRIPTS[AGENT_QUESTIONS["u2"]][0])
    assert run.answers == {qid: expected_answer(q, direct) for qid, q in AGENT_QUESTIONS.items()}
    assert ("search:2" in run.stages) == (how == "all")


@pytest.mark.usefixtures("lc")
def test_a_callable_app_in_threads_and_the_capture_detached_after_a_timeout() -> None:
    """``f(question)`` calling a LangChain retriever; the slow question times out, its late retrieval is not
    scored, and no handler is left attached."""
    retriever = lc_store_retriever()
    gate = threading.Event()

    def app(question: str) -> str:
        docs = retriever.invoke(question)
        if "bread" in question:
            gate.wait(5)
        return f"{len(docs)} passages"

    run = run_app(app, QUESTIONS, id_from="metadata:doc_id", timeout=0.5)
    assert_detached()
    gate.set()
    assert run.errors == {"q4": "timeout: the app did not answer within 0.5 s"}
    assert {q: run.ranking(q) for q in ("q1", "q2", "q3")} == {
        q: lc_ids(retriever.invoke(QUESTIONS[q])) for q in ("q1", "q2", "q3")
    }
    assert run.answers == {"q1": "3 passages", "q2": "3 passages", "q3": "3 passages"}


@pytest.mark.usefixtures("lc")
def test_retrievals_on_a_bare_thread_are_bound_by_their_text() -> None:
    """A thread started by hand does not carry ``query_id``: a retrieval of the question's own text is still bound
    to it; one of another text is not, and the error says why."""
    retriever = lc_store_retriever()

    def app(question: str) -> str:
        query = question if "scurvy" in question else question.upper() + " please"
        box: list[Any] = []
        worker = threading.Thread(target=lambda: box.append(retriever.invoke(query)))
        worker.start()
        worker.join()
        return f"{len(box[0])} passages"

    run = run_app(app, {"q1": QUESTIONS["q1"], "q3": QUESTIONS["q3"]}, id_from="metadata:doc_id")
    assert run.ranking("q1") == lc_ids(retriever.invoke(QUESTIONS["q1"]))
    assert run.errors == {
        "q3": "invalid result: the app answered without retrieving (no retrieval was captured while it answered) "
        "(1 retrieval(s) during the run carried no question id and matched no question's text: one made on a "
        "thread the app started by hand does not see rankbridge.capture.query_id)"
    }
    assert (run.config["matched_by_text"], run.config["unbound_retrievals"]) == (1, 1)
    assert run.answers == {"q1": "3 passages", "q3": "3 passages"}


# == RAGAS bridge and run_retriever ===============================================================================
@pytest.mark.usefixtures("lc")
def test_ragas_rows_use_the_apps_answers() -> None:
    from rankbridge.integrations.ragas import ragas_rows

    retriever = lc_store_retriever()
    golden = GoldenSet(
        [Query(q, t) for q, t in QUESTIONS.items()],
        Qrels({"q1": {"d0": 1}, "q2": {"d2": 1, "d6": 1}, "q3": {"d4": 1}, "q4": {"d7": 1}}),
        corpus={d: {"text": t} for d, t in CORPUS.items()},
    )
    run = run_app(lcel_chain(retriever), golden, id_from="metadata:doc_id")
    rows = ragas_rows(run, golden)
    assert [r["response"] for r in rows] == [run.answers[q] for q in sorted(QUESTIONS)]
    assert [r["retrieved_context_ids"] for r in rows] == [run.ranking(q) for q in sorted(QUESTIONS)]
    given = ragas_rows(run, golden, {"q1": "my own answer"})
    assert [r["response"] for r in given] == ["my own answer", None, None, None]  # responses= wins
    plain = Run.from_ranked({q: run.ranking(q) for q in QUESTIONS})
    assert "response" not in ragas_rows(plain, golden)[0]


@pytest.mark.usefixtures("lc")
def test_run_retriever_runs_an_app() -> None:
    """``rankbridge.run_retriever`` hands an app to ``run_app`` (wired in runner.py)."""
    import rankbridge

    retriever = lc_store_retriever()
    run = rankbridge.run_retriever(lcel_chain(retriever), QUESTIONS, id_from="metadata:doc_id", progress=False)
    assert run.config["source"] == "app"
    assert {qid: run.ranking(qid) for qid in QUESTIONS} == {
        qid: lc_ids(retriever.invoke(q)) for qid, q in QUESTIONS.items()
    }
    assert run.answers == {qid: "Sources: " + " ".join(run.ranking(qid)) for qid in QUESTIONS}
