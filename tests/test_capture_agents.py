"""Live capture of the retrievals made by real agents, offline.

LlamaIndex's workflow agents (``ReActAgent``, ``FunctionAgent``, ``AgentWorkflow``) and LangChain's
``create_agent`` (a LangGraph graph) run with a ``search`` tool over a BM25 retriever. Their LLMs are scripted
but go through the frameworks' own code: the ReAct output parser reads the scripted text, the function-calling
agent and LangGraph's tool node read the scripted tool calls, and the tools call the retriever as an
application's tools would. The agent, not the user, writes the query the retriever receives.

For every agent the captured run must equal what the retriever returns when called directly with the query the
agent sent; the record must be tied to the agent run that made it (its parent inside the agent's tool call, its
trace the agent's outermost span or run); and the agent's answer (which lists the documents its tool returned)
must be the same with and without capture, also when several agent runs go at once.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import UUID, uuid4

import pytest

from capture_data import CORPUS
from rankbridge import Run
from rankbridge.capture import CaptureRecord, capture, query_id

#: the user's question -> the queries the scripted LLM sends to the search tool, one per step, before answering
SCRIPT: dict[str, tuple[str, ...]] = {
    "Why did sailors on long voyages fall ill?": ("scurvy sailors long voyages",),
    "Which fruits give you vitamin C?": ("vitamin C citrus oranges",),
    "Why do dogs make noise after dark?": ("dogs bark night",),
    "How do I bake bread at home?": ("bread flour yeast",),
}
#: a search, then a second one after reading the first's result
TWO_SEARCHES = "Compare scurvy and rickets."
#: three searches in one reply (parallel tool calls) from the tool-calling models; one per step from ReAct
IN_PARALLEL = "What do scurvy, rickets and bread have to do with diet?"
ALL_SCRIPTS: dict[str, tuple[str, ...]] = {
    **SCRIPT,
    TWO_SEARCHES: ("scurvy vitamin C", "rickets vitamin D sunlight"),
    IN_PARALLEL: ("scurvy vitamin C", "rickets vitamin D sunlight", "bread flour yeast"),
}

#: a golden set of the queries the agents send to the retriever (captures match it by text)
TOOL_QUERIES = {f"q{i}": queries[0] for i, queries in enumerate(SCRIPT.values(), 1)}
#: a golden set of the users' questions (captures match it by the id the app passes around the agent run)
USER_QUESTIONS = {f"u{i}": question for i, question in enumerate(ALL_SCRIPTS, 1)}

# the frameworks' own deprecation warnings (pytest turns warnings into errors here): llama-index-workflows 2.26
# lists the members of an agent, a pydantic model, with inspect.getmembers, which reads pydantic's deprecated
# attributes; llama-index-core 0.14.25's ReActAgent asks ``ctx.is_running`` inside a step
pytestmark = [
    pytest.mark.filterwarnings("ignore:The `__fields:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Accessing the 'model_:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning"),
]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No tracing service, no usable API key: nothing here may reach the network."""
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used-offline")


# -- the scripted "LLM" (framework-free) ------------------------------------------------------------------------
def sources(observation: str) -> str:
    """The ids of the corpus documents quoted in a tool's output, in the order they appear."""
    found = {doc: observation.find(text) for doc, text in CORPUS.items() if text in observation}
    return " ".join(sorted(found, key=found.__getitem__))


def next_step(question: str, observations: list[str], *, parallel: bool = False) -> tuple[list[str], str]:
    """What the scripted LLM does next: ``(queries, "")`` to search, or ``([], answer)`` once every search is done.

    ``observations`` are the tool outputs so far; ``parallel``: the model can call tools in parallel. The answer
    lists the documents each search returned (sorted: parallel calls finish in any order), so it changes if the
    agent's retrievals do.
    """
    queries = ALL_SCRIPTS[question]
    if len(observations) >= len(queries):
        return [], "Sources: " + " | ".join(sorted(sources(o) for o in observations))
    if parallel and question == IN_PARALLEL:
        return list(queries), ""
    return [queries[len(observations)]], ""


def expected_answer(question: str, direct_ids: Any) -> str:
    """The answer when every search returned what the retriever returns when called directly."""
    return "Sources: " + " | ".join(sorted(" ".join(direct_ids(q)) for q in ALL_SCRIPTS[question]))


# == LlamaIndex ===================================================================================================
LI_AGENTS = ["react", "function", "workflow"]


@pytest.fixture
def li(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """LlamaIndex installed, offline (MockLLM as default, no embedding model); yields a log of every span."""
    pytest.importorskip("llama_index.core")
    pytest.importorskip("llama_index.retrievers.bm25")
    from llama_index.core import Settings
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.llms import MockLLM

    monkeypatch.setattr(Settings, "_llm", MockLLM(max_tokens=8))
    monkeypatch.setattr(Settings, "_embed_model", None)
    dispatcher = get_dispatcher()
    log = span_log()
    dispatcher.span_handlers = [*dispatcher.span_handlers, log]
    yield log
    dispatcher.span_handlers = [h for h in dispatcher.span_handlers if h is not log]
    _close_stray_event_loop()


def _close_stray_event_loop() -> None:
    """LlamaIndex's sync helpers may set an event loop they never close (see test_capture_llamaindex.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)


def span_log() -> Any:
    """A LlamaIndex span handler that notes every span's parent, and the user message of each workflow run."""
    from llama_index.core.instrumentation.span_handlers import BaseSpanHandler

    class SpanLog(BaseSpanHandler[Any]):  # type: ignore[misc]
        parents: dict[str, Any] = {}  # noqa: RUF012 - a pydantic field (copied per instance)
        questions: dict[str, Any] = {}  # noqa: RUF012

        @classmethod
        def class_name(cls) -> str:
            return "SpanLog"

        def span_enter(self, id_: str, bound_args: Any, instance: Any = None, parent_id: Any = None, **kw: Any) -> None:
            self.parents[id_] = parent_id
            start = bound_args.arguments.get("start_event") if ".run-" in id_ else None
            if start is not None:
                self.questions[id_] = start.get("user_msg")

        def ancestors(self, span: str) -> list[str]:
            """``span``, its parent, ... up to the outermost span."""
            chain = [span]
            while self.parents.get(chain[-1]) is not None:
                chain.append(self.parents[chain[-1]])
            return chain

        def new_span(self, *args: Any, **kwargs: Any) -> None:
            return None

        def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
            return None

        def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
            return None

    return SpanLog()


def react_llm(arg: str) -> Any:
    """A ``CustomLLM`` that writes ReAct steps: ``Thought/Action/Action Input`` per search, then ``Thought/Answer``.

    It reads the question and the observations from the prompt the agent's ReAct formatter built, so concurrent
    runs of one agent each get their own script. ``arg`` is the tool's argument name.
    """
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    class ScriptedReAct(CustomLLM):  # type: ignore[misc]
        arg: str

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted-react")

        def _reply(self, prompt: str) -> str:
            # the ReAct prompt is rendered as "system: ...\nuser: <question>\nassistant: ...\nuser: Observation: ..."
            question = next(q for q in ALL_SCRIPTS if f"\nuser: {q}\n" in prompt)
            observations = re.findall(r"\nuser: Observation: (.*?)(?=\nassistant: )", prompt, re.DOTALL)
            queries, answer = next_step(question, observations)
            if not queries:
                return f"Thought: I can answer without using any more tools.\nAnswer: {answer}"
            return f"Thought: I need to search.\nAction: search\nAction Input: {json.dumps({self.arg: queries[0]})}"

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text=self._reply(prompt))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            text = self._reply(prompt)
            cuts = [0, len(text) // 3, 2 * len(text) // 3, len(text)]

            def chunks() -> Iterator[CompletionResponse]:
                for a, b in itertools.pairwise(cuts):
                    yield CompletionResponse(text=text[:b], delta=text[a:b])

            return chunks()

    return ScriptedReAct(arg=arg)


def tool_calling_llm() -> Any:
    """A ``FunctionCallingLLM`` that answers with ``ToolCallBlock`` s (several at once for ``IN_PARALLEL``), then
    with the final text.

    The agent builds the chat through ``achat_with_tools`` / ``astream_chat_with_tools`` and reads the calls back
    with ``get_tool_calls_from_response``, as with a hosted model.
    """
    from llama_index.core.base.llms.types import (
        ChatMessage,
        ChatResponse,
        CompletionResponse,
        LLMMetadata,
        MessageRole,
        ToolCallBlock,
    )
    from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
    from llama_index.core.llms.function_calling import FunctionCallingLLM
    from llama_index.core.llms.llm import ToolSelection

    class ScriptedToolCalls(FunctionCallingLLM):  # type: ignore[misc]
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted-tools", is_chat_model=True, is_function_calling_model=True)

        def _reply(self, messages: Any) -> ChatMessage:
            question = next(m.content for m in messages if m.role == MessageRole.USER)
            observations = [m.content or "" for m in messages if m.role == MessageRole.TOOL]
            queries, answer = next_step(question, observations, parallel=True)
            if not queries:
                return ChatMessage(role=MessageRole.ASSISTANT, content=answer)
            calls = [
                ToolCallBlock(
                    tool_call_id=f"call_{len(observations) + i}", tool_name="search", tool_kwargs={"query": q}
                )
                for i, q in enumerate(queries, 1)
            ]
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=calls)

        @llm_chat_callback()
        def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
            return ChatResponse(message=self._reply(messages))

        @llm_chat_callback()
        async def achat(self, messages: Any, **kwargs: Any) -> ChatResponse:
            return ChatResponse(message=self._reply(messages))

        @llm_chat_callback()
        def stream_chat(self, messages: Any, **kwargs: Any) -> Any:
            message = self._reply(messages)

            def gen() -> Iterator[ChatResponse]:
                yield ChatResponse(message=message, delta=message.content or "")

            return gen()

        @llm_chat_callback()
        async def astream_chat(self, messages: Any, **kwargs: Any) -> Any:
            message = self._reply(messages)

            async def gen() -> Any:
                yield ChatResponse(message=message, delta=message.content or "")

            return gen()

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            raise NotImplementedError("a chat model")

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError("a chat model")

        @llm_completion_callback()
        async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            raise NotImplementedError("a chat model")

        @llm_completion_callback()
        async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError("a chat model")

        def _prepare_chat_with_tools(
            self, tools: Any, user_msg: Any = None, chat_history: Any = None, **kwargs: Any
        ) -> dict[str, Any]:
            messages = list(chat_history or [])
            if user_msg is not None:
                messages.append(
                    user_msg if isinstance(user_msg, ChatMessage) else ChatMessage(role="user", content=user_msg)
                )
            assert [t.metadata.name for t in tools] == ["search"]
            return {"messages": messages}

        def get_tool_calls_from_response(
            self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
        ) -> list[ToolSelection]:
            return [
                ToolSelection(tool_id=b.tool_call_id or "", tool_name=b.tool_name, tool_kwargs=b.tool_kwargs)
                for b in response.message.blocks
                if isinstance(b, ToolCallBlock)
            ]

    return ScriptedToolCalls()


def li_retriever() -> Any:
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    return BM25Retriever.from_defaults(nodes=[TextNode(text=t, id_=d) for d, t in CORPUS.items()], similarity_top_k=3)


def li_agent(kind: str, retriever: Any) -> tuple[Any, str]:
    """An agent with a ``search`` tool over ``retriever``, and the name of the tool's argument.

    ``react``: a ``ReActAgent`` with a ``QueryEngineTool`` (a ``RetrieverQueryEngine`` whose ``MockLLM`` echoes
    the context); ``function``: a ``FunctionAgent`` with a ``FunctionTool`` calling ``retriever.retrieve``
    (LlamaIndex runs the sync function in a worker thread); ``workflow``: an ``AgentWorkflow`` around a ReAct
    agent with that ``FunctionTool``.
    """
    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent, ReActAgent
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.tools import FunctionTool, QueryEngineTool

    def search(query: str) -> str:
        """Search the corpus; returns the best passages."""
        return "\n\n".join(n.node.get_content() for n in retriever.retrieve(query))

    function_tool = FunctionTool.from_defaults(fn=search, name="search")
    if kind == "react":
        engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
        tool = QueryEngineTool.from_defaults(engine, name="search", description="Search the corpus.")
        return ReActAgent(tools=[tool], llm=react_llm("input")), "input"
    if kind == "function":
        return FunctionAgent(tools=[function_tool], llm=tool_calling_llm()), "query"
    llm = react_llm("query")
    agent = ReActAgent(name="researcher", description="Searches the corpus.", tools=[function_tool], llm=llm)
    return AgentWorkflow(agents=[agent]), "query"


async def ask_li(agent: Any, question: str, qid: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """Run the agent on one question (under ``query_id(qid)`` when given): its answer and its tool calls."""
    if qid is None:
        output = await agent.run(user_msg=question)
    else:
        with query_id(qid):
            output = await agent.run(user_msg=question)
    return str(output), [call.tool_kwargs for call in output.tool_calls]


def li_direct(retriever: Any, text: str) -> list[tuple[str, float | None]]:
    return [(n.node.node_id, n.score) for n in retriever.retrieve(text)]


def li_pairs(hits: Any) -> list[tuple[str, float | None]]:
    return [(h.doc_id, h.score) for h in hits]


def check_li_record(rec: CaptureRecord, spans: Any, agent: Any, question: str) -> list[str]:
    """The record sits under the agent's tool call and its trace is the agent's own run span; returns the chain."""
    assert (rec.framework, rec.retriever, rec.error) == ("llamaindex", "BM25Retriever", None)
    chain = spans.ancestors(rec.run_id)
    assert rec.trace_id == chain[-1] != rec.run_id  # the outermost span, not the retrieval's own
    assert rec.trace_id.startswith(f"{type(agent).__name__}.run-")
    assert spans.questions[rec.trace_id] == question  # the run of that very question
    assert rec.parent_id == chain[1]
    assert any(".call_tool-" in span for span in chain), chain  # inside the agent's tool step
    return chain


@pytest.mark.parametrize("kind", LI_AGENTS)
def test_llamaindex_agent_retrievals_equal_direct_calls(li: Any, kind: str) -> None:
    retriever = li_retriever()
    agent, arg = li_agent(kind, retriever)

    def ask_all() -> list[tuple[str, list[dict[str, Any]]]]:
        return [asyncio.run(ask_li(agent, q)) for q in SCRIPT]

    plain = ask_all()
    with capture(golden=TOOL_QUERIES, frameworks=["llamaindex"]) as cap:
        answers = ask_all()
    assert answers == plain
    for (answer, calls), (question, queries) in zip(answers, SCRIPT.items(), strict=True):
        assert answer == expected_answer(question, lambda q: [d for d, _ in li_direct(retriever, q)])
        assert calls == [{arg: q} for q in queries]

    run = cap.run
    assert sorted(run) == sorted(TOOL_QUERIES)
    for qid, text in TOOL_QUERIES.items():
        assert li_pairs(run.hits(qid)) == li_direct(retriever, text), qid
    assert [r.query for r in cap.records] == list(TOOL_QUERIES.values())
    for rec, question in zip(cap.records, SCRIPT, strict=True):
        check_li_record(rec, li, agent, question)
        assert rec.final is None and rec.nested == ()
    assert len({r.trace_id for r in cap.records}) == len(SCRIPT)
    s = cap.summary()
    assert (s["records"], s["matched_by_text"], s["unmatched"], s["internal_errors"]) == (4, 4, 0, 0)


@pytest.mark.parametrize("kind", LI_AGENTS)
def test_llamaindex_concurrent_agent_runs_each_record_their_own_retrievals(li: Any, kind: str) -> None:
    """``asyncio.gather`` of agent runs, each under the id of its user question (the golden set holds the
    questions; the retriever only ever sees the queries the agent wrote)."""
    retriever = li_retriever()
    agent, _ = li_agent(kind, retriever)
    asks = [(uid, q) for uid, q in USER_QUESTIONS.items() if q in SCRIPT] * 2  # each question twice at once

    async def ask_all() -> list[tuple[str, list[dict[str, Any]]]]:
        return await asyncio.gather(*(ask_li(agent, q, uid) for uid, q in asks))

    plain = asyncio.run(ask_all())
    with capture(golden=USER_QUESTIONS, frameworks=["llamaindex"]) as cap:
        answers = asyncio.run(ask_all())
        assert li_open_state() == 0  # nothing left behind by finished agent runs
    assert answers == plain
    assert len(cap.records) == len(asks)
    traces = {r.trace_id for r in cap.records}
    assert len(traces) == len(asks)  # one agent run each
    for rec in cap.records:
        question = USER_QUESTIONS[str(rec.query_id)]
        assert rec.query == SCRIPT[question][0]
        check_li_record(rec, li, agent, question)
    run = cap.run
    for uid, question in set(asks):
        assert li_pairs(run.hits(uid)) == li_direct(retriever, SCRIPT[question][0]), uid
    s = cap.summary()
    assert (s["matched_by_id"], s["repeats"], s["missing"], s["internal_errors"]) == (4, 4, ["u5", "u6"], 0)


@pytest.mark.parametrize("kind", LI_AGENTS)
def test_llamaindex_two_searches_in_one_agent_run(li: Any, kind: str) -> None:
    retriever = li_retriever()
    agent, _ = li_agent(kind, retriever)
    uid = next(u for u, q in USER_QUESTIONS.items() if q == TWO_SEARCHES)
    with capture(golden=USER_QUESTIONS, frameworks=["llamaindex"]) as cap:
        answer, calls = asyncio.run(ask_li(agent, TWO_SEARCHES, uid))
    first, second = ALL_SCRIPTS[TWO_SEARCHES]
    assert len(calls) == 2
    assert answer == expected_answer(TWO_SEARCHES, lambda q: [d for d, _ in li_direct(retriever, q)])
    assert [r.query for r in cap.records] == [first, second]
    chains = [check_li_record(r, li, agent, TWO_SEARCHES) for r in cap.records]
    assert cap.records[0].trace_id == cap.records[1].trace_id  # one agent run
    assert cap.records[0].parent_id != cap.records[1].parent_id
    steps = [next(s for s in chain if ".call_tool-" in s) for chain in chains]
    assert steps[0] != steps[1]  # two tool calls of the agent
    for rec, text in zip(cap.records, (first, second), strict=True):
        assert li_pairs(rec.retrieved) == li_direct(retriever, text)
    # one id, two searches: the run keeps the first, the second is a repeat
    assert li_pairs(cap.run.hits(uid)) == li_direct(retriever, first)
    assert cap.summary()["repeats"] == 1


def test_llamaindex_parallel_tool_calls_in_one_agent_step(li: Any) -> None:
    """A function-calling model asks for three searches in one reply: the agent sends one ``ToolCall`` event each,
    its ``call_tool`` step (several workers) runs the sync tool in worker threads; each retrieval is recorded under
    its own tool call."""
    retriever = li_retriever()
    agent, _ = li_agent("function", retriever)
    plain = asyncio.run(ask_li(agent, IN_PARALLEL))
    with capture(frameworks=["llamaindex"]) as cap:
        answer, calls = asyncio.run(ask_li(agent, IN_PARALLEL))
    assert (answer, sorted(map(str, calls))) == (plain[0], sorted(map(str, plain[1])))
    assert answer == expected_answer(IN_PARALLEL, lambda q: [d for d, _ in li_direct(retriever, q)])
    assert sorted(r.query for r in cap.records) == sorted(ALL_SCRIPTS[IN_PARALLEL])
    chains = [check_li_record(r, li, agent, IN_PARALLEL) for r in cap.records]
    assert len({r.trace_id for r in cap.records}) == 1
    assert len({next(s for s in chain if ".call_tool-" in s) for chain in chains}) == 3
    for rec in cap.records:
        assert li_pairs(rec.retrieved) == li_direct(retriever, rec.query)
    assert li_open_state() == 0


@pytest.mark.parametrize("kind", LI_AGENTS)
def test_llamaindex_failing_retriever_inside_an_agent(li: Any, kind: str) -> None:
    """LlamaIndex agents turn a tool's exception into an error observation and go on: the answer has no sources,
    and the capture records the failed retrieval under the agent's run."""
    from llama_index.core.base.base_retriever import BaseRetriever

    class Failing(BaseRetriever):  # type: ignore[misc]
        def _retrieve(self, query_bundle: Any) -> list[Any]:
            raise ConnectionError("index offline")

    agent, arg = li_agent(kind, Failing())
    question = next(iter(SCRIPT))
    with capture(golden=TOOL_QUERIES, frameworks=["llamaindex"]) as cap:
        answer, calls = asyncio.run(ask_li(agent, question))
    assert answer.strip() == "Sources:" and calls == [{arg: SCRIPT[question][0]}]
    assert cap.run.errors == {"q1": "retrieval failed: ConnectionError: index offline"}
    (rec,) = cap.records
    assert rec.error == "ConnectionError: index offline"
    assert rec.trace_id == li.ancestors(rec.run_id)[-1] and rec.trace_id.startswith(f"{type(agent).__name__}.run-")
    assert li_open_state() == 0


def li_open_state() -> int:
    """Spans, retrievals and records the attached LlamaIndex taps still track (0 once every agent run is over)."""
    from llama_index.core.instrumentation import get_dispatcher

    from rankbridge.frameworks.llamaindex.capture import RankbridgeSpanHandler

    taps = [h.tap for h in get_dispatcher().span_handlers if isinstance(h, RankbridgeSpanHandler)]
    return sum(len(t._open) + len(t._waiting) for t in taps)


# == LangChain ====================================================================================================
LC_TOOLS = ["retriever_tool", "tool_function"]


@pytest.fixture
def lc() -> None:
    """langchain-core, langchain (create_agent, on LangGraph) and langchain-community's BM25Retriever installed."""
    pytest.importorskip("langchain_core")
    pytest.importorskip("langchain.agents")
    pytest.importorskip("langgraph")
    pytest.importorskip("langchain_community")
    pytest.importorskip("rank_bm25")


def scripted_chat_model() -> Any:
    """A ``BaseChatModel`` that replies with an ``AIMessage`` carrying tool calls (several at once for
    ``IN_PARALLEL``), then with the answer.

    ``bind_tools`` (which ``create_agent`` calls with the agent's tools) checks the tool and returns the model.
    """
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import BaseTool

    class ScriptedToolCaller(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted-tool-caller"

        def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
            assert [t.name for t in tools if isinstance(t, BaseTool)] == ["search"]
            return self

        def _generate(
            self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            question = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
            observations = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
            queries, answer = next_step(question, observations, parallel=True)
            calls = [
                {"name": "search", "args": {"query": q}, "id": f"call_{len(observations) + i}"}
                for i, q in enumerate(queries, 1)
            ]
            reply = AIMessage(content=answer, tool_calls=calls)
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return ScriptedToolCaller()


def lc_retriever() -> Any:
    from langchain_community.retrievers import BM25Retriever

    return BM25Retriever.from_texts(list(CORPUS.values()), ids=list(CORPUS), k=3)


def lc_agent(kind: str, retriever: Any) -> Any:
    """``create_agent`` with a ``search`` tool: ``create_retriever_tool`` (passes its callbacks to the
    retriever), or an ``@tool`` function calling ``retriever.invoke`` (config from the context)."""
    from langchain.agents import create_agent
    from langchain_core.tools import create_retriever_tool, tool

    if kind == "retriever_tool":
        search = create_retriever_tool(retriever, "search", "Search the corpus.")
    else:

        @tool("search")
        def search(query: str) -> str:
            """Search the corpus; returns the best passages."""
            return "\n\n".join(d.page_content for d in retriever.invoke(query))

    return create_agent(scripted_chat_model(), [search])


def lc_input(question: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": question}]}


def ask_lc(agent: Any, question: str, **config: Any) -> str:
    return str(agent.invoke(lc_input(question), config=config)["messages"][-1].content)


def lc_direct(retriever: Any, text: str) -> list[str]:
    return [str(d.id) for d in retriever.invoke(text)]


def assert_lc_run_equals_direct(run: Run, retriever: Any, queries: dict[str, str]) -> None:
    assert sorted(run) == sorted(queries)
    for qid, text in queries.items():
        assert run.ranking(qid) == lc_direct(retriever, text), qid


@pytest.mark.usefixtures("lc")
@pytest.mark.parametrize("kind", LC_TOOLS)
@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_langchain_agent_retrievals_equal_direct_calls(kind: str, trace: bool) -> None:
    retriever = lc_retriever()
    agent = lc_agent(kind, retriever)
    plain = [ask_lc(agent, q) for q in SCRIPT]
    roots = [uuid4() for _ in SCRIPT]
    with capture(golden=TOOL_QUERIES, frameworks=["langchain"], trace=trace) as cap:
        answers = [ask_lc(agent, q, run_id=root) for q, root in zip(SCRIPT, roots, strict=True)]
    assert answers == plain
    for answer, question in zip(answers, SCRIPT, strict=True):
        assert answer == expected_answer(question, lambda q: lc_direct(retriever, q))
    assert_lc_run_equals_direct(cap.run, retriever, TOOL_QUERIES)
    assert [r.query for r in cap.records] == list(TOOL_QUERIES.values())
    for rec, root in zip(cap.records, roots, strict=True):
        assert (rec.framework, rec.retriever, rec.error) == ("langchain", "BM25Retriever", None)
        assert rec.parent_id is not None and rec.parent_id not in (str(root), rec.run_id)  # the tool's run
        assert rec.trace_id == (str(root) if trace else None)
        assert [h.text for h in rec.retrieved] == [CORPUS[d] for d in lc_direct(retriever, rec.query)]
    assert len({r.parent_id for r in cap.records}) == len(SCRIPT)
    s = cap.summary()
    assert (s["records"], s["matched_by_text"], s["unmatched"], s["internal_errors"]) == (4, 4, 0, 0)


def run_log() -> Any:
    """A LangChain callback handler noting ``run id -> (parent run id, run type, name)`` of every run it sees."""
    from langchain_core.callbacks import BaseCallbackHandler

    class RunLog(BaseCallbackHandler):
        def __init__(self) -> None:
            self.runs: dict[UUID, tuple[UUID | None, str, str]] = {}

        def _note(self, kind: str, serialized: Any, run_id: UUID, parent_run_id: UUID | None, kw: Any) -> None:
            self.runs[run_id] = (parent_run_id, kind, str(kw.get("name") or (serialized or {}).get("name")))

        def on_chain_start(
            self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: Any = None, **kw: Any
        ) -> None:
            self._note("chain", serialized, run_id, parent_run_id, kw)

        def on_tool_start(
            self, serialized: Any, input_str: Any, *, run_id: UUID, parent_run_id: Any = None, **kw: Any
        ) -> None:
            self._note("tool", serialized, run_id, parent_run_id, kw)

        def on_retriever_start(
            self, serialized: Any, query: Any, *, run_id: UUID, parent_run_id: Any = None, **kw: Any
        ) -> None:
            self._note("retriever", serialized, run_id, parent_run_id, kw)

        def ancestors(self, run_id: UUID) -> list[UUID]:
            chain = [run_id]
            while self.runs.get(chain[-1], (None,))[0] is not None:
                chain.append(self.runs[chain[-1]][0])  # type: ignore[arg-type]
            return chain

    return RunLog()


@pytest.mark.usefixtures("lc")
@pytest.mark.parametrize("kind", LC_TOOLS)
@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_langchain_record_sits_under_the_agents_tool_run(kind: str, trace: bool) -> None:
    """The app's own callback handler sees the run tree: retriever run <- ``search`` tool run <- ... <- the root."""
    retriever = lc_retriever()
    agent = lc_agent(kind, retriever)
    log = run_log()
    root = uuid4()
    with capture(frameworks=["langchain"], trace=trace) as cap:
        ask_lc(agent, next(iter(SCRIPT)), run_id=root, callbacks=[log])
    (rec,) = cap.records
    (retrieval,) = [run for run, (_, kind_, _) in log.runs.items() if kind_ == "retriever"]
    assert rec.run_id == str(retrieval)
    chain = log.ancestors(retrieval)
    assert log.runs[chain[1]][1:] == ("tool", "search")
    assert rec.parent_id == str(chain[1])
    assert chain[-1] == root
    assert rec.trace_id == (str(root) if trace else None)
    assert [h.doc_id for h in rec.retrieved] == lc_direct(retriever, rec.query)


@pytest.mark.usefixtures("lc")
@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_langchain_agents_in_threads_record_each_retrieval_once(trace: bool) -> None:
    """Agent invocations from a thread pool, each with its question's id in the config's metadata."""
    retriever = lc_retriever()
    agent = lc_agent("retriever_tool", retriever)
    asks = [(f"t{i}", q, uuid4()) for i, q in enumerate(list(SCRIPT) * 4)]

    def ask(item: tuple[str, str, UUID]) -> str:
        tid, question, root = item
        return ask_lc(agent, question, run_id=root, metadata={"rankbridge_query_id": tid})

    plain = [ask_lc(agent, q) for _, q, _ in asks]
    with capture(frameworks=["langchain"], trace=trace) as cap:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(ask, asks))
        assert lc_open_state() == 0  # nothing left behind by finished agent runs
    assert answers == plain
    assert len(cap.records) == len(asks)
    assert sorted(str(r.query_id) for r in cap.records) == sorted(tid for tid, _, _ in asks)  # each once
    by_tid = {r.query_id: r for r in cap.records}
    for tid, question, root in asks:
        rec = by_tid[tid]
        assert rec.query == SCRIPT[question][0]
        assert rec.trace_id == (str(root) if trace else None)
        assert cap.run.ranking(tid) == lc_direct(retriever, rec.query)
    assert len({r.parent_id for r in cap.records}) == len(asks)
    assert cap.summary()["internal_errors"] == 0


@pytest.mark.usefixtures("lc")
@pytest.mark.parametrize("kind", LC_TOOLS)
@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_langchain_async_agents_under_query_ids(kind: str, trace: bool) -> None:
    """``ainvoke`` of several agents at once, each under ``query_id`` of its user question."""
    retriever = lc_retriever()
    agent = lc_agent(kind, retriever)
    asks = [(uid, q, uuid4()) for uid, q in USER_QUESTIONS.items() if q in SCRIPT]

    async def ask_all(roots: bool) -> list[str]:
        async def one(uid: str, question: str, root: UUID) -> str:
            config = {"run_id": root} if roots else {}
            with query_id(uid):
                out = await agent.ainvoke(lc_input(question), config=config)
            return str(out["messages"][-1].content)

        return await asyncio.gather(*(one(*item) for item in asks))

    plain = asyncio.run(ask_all(roots=False))
    with capture(golden=USER_QUESTIONS, frameworks=["langchain"], trace=trace) as cap:
        answers = asyncio.run(ask_all(roots=True))
    assert answers == plain
    assert len(cap.records) == len(asks)
    for uid, question, root in asks:
        (rec,) = [r for r in cap.records if r.query_id == uid]
        assert rec.query == SCRIPT[question][0]
        assert rec.trace_id == (str(root) if trace else None)
        assert cap.run.ranking(uid) == lc_direct(retriever, rec.query)
    s = cap.summary()
    assert (s["matched_by_id"], s["missing"], s["internal_errors"]) == (4, ["u5", "u6"], 0)


@pytest.mark.usefixtures("lc")
@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_langchain_two_searches_in_one_agent_run(trace: bool) -> None:
    retriever = lc_retriever()
    agent = lc_agent("retriever_tool", retriever)
    root = uuid4()
    with capture(golden=USER_QUESTIONS, frameworks=["langchain"], trace=trace) as cap:
        answer = ask_lc(agent, TWO_SEARCHES, run_id=root, metadata={"rankbridge_query_id": "u5"})
    first, second = ALL_SCRIPTS[TWO_SEARCHES]
    assert answer == expected_answer(TWO_SEARCHES, lambda q: lc_direct(retriever, q))
    assert [r.query for r in cap.records] == [first, second]
    assert [r.query_id for r in cap.records] == ["u5", "u5"]
    assert [r.trace_id for r in cap.records] == [str(root) if trace else None] * 2
    assert cap.records[0].parent_id != cap.records[1].parent_id  # two tool runs
    for rec, text in zip(cap.records, (first, second), strict=True):
        assert [h.doc_id for h in rec.retrieved] == lc_direct(retriever, text)
    assert cap.run.ranking("u5") == lc_direct(retriever, first)  # one id, two searches: the first is kept
    assert cap.summary()["repeats"] == 1


@pytest.mark.usefixtures("lc")
@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_langchain_parallel_tool_calls_in_one_agent_step(trace: bool) -> None:
    """Three tool calls in one ``AIMessage``: LangGraph's tool node runs them at once (a thread each)."""
    retriever = lc_retriever()
    agent = lc_agent("retriever_tool", retriever)
    plain = ask_lc(agent, IN_PARALLEL)
    root = uuid4()
    with capture(frameworks=["langchain"], trace=trace) as cap:
        answer = ask_lc(agent, IN_PARALLEL, run_id=root)
        assert lc_open_state() == 0
    assert answer == plain == expected_answer(IN_PARALLEL, lambda q: lc_direct(retriever, q))
    assert sorted(r.query for r in cap.records) == sorted(ALL_SCRIPTS[IN_PARALLEL])
    assert len({r.parent_id for r in cap.records}) == 3  # one tool run each
    assert [r.trace_id for r in cap.records] == [str(root) if trace else None] * 3
    for rec in cap.records:
        assert [h.doc_id for h in rec.retrieved] == lc_direct(retriever, rec.query)


@pytest.mark.usefixtures("lc")
@pytest.mark.parametrize("kind", LC_TOOLS)
@pytest.mark.parametrize("trace", [False, True], ids=["retriever-runs", "trace"])
def test_langchain_failing_retriever_inside_an_agent(kind: str, trace: bool) -> None:
    """``create_agent``'s tool node re-raises a tool's ``ConnectionError``: the app sees it unchanged, and the capture
    records the failed retrieval (with the agent's root run as its trace)."""
    from langchain_core.retrievers import BaseRetriever

    class Broken(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
            raise ConnectionError("vector store down")

    agent = lc_agent(kind, Broken())
    root = uuid4()
    with capture(golden=TOOL_QUERIES, frameworks=["langchain"], trace=trace) as cap:
        with pytest.raises(ConnectionError, match="vector store down"):
            ask_lc(agent, next(iter(SCRIPT)), run_id=root)
        assert lc_open_state() == 0
    assert cap.run.errors == {"q1": "retrieval failed: ConnectionError: vector store down"}
    (rec,) = cap.records
    assert rec.parent_id is not None and rec.trace_id == (str(root) if trace else None)


def lc_open_state() -> int:
    """Runs the attached LangChain taps still track (0 once every agent run is over)."""
    from rankbridge.frameworks.langchain.capture import _slots

    taps = [s.handler._tap for s in _slots if s.handler is not None]
    return sum(len(t._open) + len(t._parents) for t in taps)
