"""Scripted, offline stand-ins for the models RAGAS calls, and an oracle that recomputes RAGAS' scores.

The scripted "LLM" reads the prompt the way a model would: it finds the JSON schema each classic RAGAS
prompt asks for (``... JSON Schema:\\n{...}Do not use single quotes``), takes the schema's ``title`` to know
which question is asked, and parses the ``input: {...}`` block to answer it with a word-overlap rule:

* ``StatementGeneratorOutput`` (faithfulness, step 1): the answer's sentences are its statements;
* ``NLIStatementOutput`` (faithfulness, step 2): a statement is supported when most of its content words
  are in the context (more than half);
* ``Verification`` (context precision): a context is useful when it supports the reference;
* ``ContextRecallClassifications`` (context recall): each reference sentence is attributed when the
  contexts support it;
* ``ResponseRelevanceOutput`` (answer relevancy): the "generated question" is the response itself, and
  an answer starting with "I don't know" is noncommittal.

Prompts that are not RAGAS' (a query engine's QA prompt) get a "generator" answer: the first sentence of
the first context. The same rules, applied directly, give the expected scores (:func:`expected_scores`),
so tests check RAGAS' plumbing against an independent computation on every row.

``HashEmbeddings`` is a deterministic bag-of-words embedding (LangChain and LlamaIndex flavours).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

STOP = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be by for from has have in is it its of on or that the this to was were what which who "
        "with do does did not no",
    )
)

DIM = 256


def words(text: str) -> set[str]:
    """Lower-case content words (stopwords and 1-letter tokens dropped)."""
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) > 1}


def supports(context: str, statement: str) -> bool:
    """True when more than half of the statement's content words occur in the context."""
    sw = words(statement)
    if not sw:
        return False
    return len(sw & words(context)) / len(sw) > 0.5


def sentences(text: str) -> list[str]:
    """Split on sentence ends (". ", "? ", "! ") and drop empty pieces."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def embed(text: str) -> list[float]:
    """A deterministic, L2-normalised hashed bag of words."""
    vec = np.zeros(DIM)
    for w in sorted(words(text)):
        h = int(hashlib.md5(w.encode()).hexdigest(), 16)
        vec[h % DIM] += 1.0
    n = float(np.linalg.norm(vec))
    if n == 0.0:
        vec[0] = 1.0
        n = 1.0
    return [float(x) for x in vec / n]


def cosine(a: str, b: str) -> float:
    va, vb = np.asarray(embed(a)), np.asarray(embed(b))
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


# -- the scripted model ---------------------------------------------------------------------------
_SCHEMA = re.compile(r"JSON Schema:\n(\{.*?\})Do not use single quotes", re.S)


class ScriptedFailure(RuntimeError):
    """Raised by the scripted model when a test asks it to fail."""


def schema_title(prompt: str) -> str | None:
    m = _SCHEMA.search(prompt)
    if m is None:
        return None
    return str(json.loads(m.group(1)).get("title"))


def prompt_input(prompt: str) -> dict[str, Any]:
    block = prompt.rsplit("input: ", 1)[1].rsplit("\nOutput:", 1)[0]
    data = json.loads(block)
    assert isinstance(data, dict)
    return data


def generator_answer(prompt: str) -> str:
    """What the scripted generator says to a non-RAGAS (QA) prompt: the first sentence of the context."""
    m = re.search(r"-{5,}\n(.*?)\n-{5,}", prompt, re.S)
    context = m.group(1) if m else prompt
    lines = [ln for ln in context.splitlines() if ln.strip() and ":" not in ln[:20]]
    first = sentences(" ".join(lines) or context)
    return first[0] if first else "I don't know."


def scripted_reply(prompt: str) -> str:
    """The scripted model's reply to one prompt (see the module docstring)."""
    title = schema_title(prompt)
    if title is None:
        return generator_answer(prompt)
    data = prompt_input(prompt)
    out: dict[str, Any]
    if title == "StatementGeneratorOutput":
        out = {"statements": sentences(data["answer"])}
    elif title == "NLIStatementOutput":
        ctx = data["context"]
        out = {
            "statements": [
                {"statement": s, "reason": "overlap", "verdict": int(supports(ctx, s))} for s in data["statements"]
            ]
        }
    elif title == "Verification":
        out = {"reason": "overlap", "verdict": int(supports(data["context"], data["answer"]))}
    elif title == "ContextRecallClassifications":
        ctx = data["context"]
        out = {
            "classifications": [
                {"statement": s, "reason": "overlap", "attributed": int(supports(ctx, s))}
                for s in sentences(data["answer"])
            ]
        }
    elif title == "ResponseRelevanceOutput":
        response = data["response"]
        out = {"question": response, "noncommittal": int(response.lower().startswith("i don't know"))}
    elif title == "StringIO":
        out = {"text": data.get("output_string", "")}
    else:
        raise ScriptedFailure(f"unscripted RAGAS prompt asking for {title!r}")
    return json.dumps(out)


class Script:
    """The shared brain of the fakes: replies, a call log, and failure injection."""

    def __init__(self, fail_if: Callable[[str], bool] | None = None) -> None:
        self.fail_if = fail_if
        self.titles: list[str | None] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.titles.append(schema_title(prompt))
        if self.fail_if is not None and self.fail_if(prompt):
            raise ScriptedFailure("scripted failure")
        return scripted_reply(prompt)


# -- LangChain ------------------------------------------------------------------------------------
def make_chat_model(script: Script | None = None) -> Any:
    """A LangChain ``BaseChatModel`` answering with :func:`scripted_reply`."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    brain = script or Script()

    class ScriptedChatModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            text = str(messages[-1].content)
            reply = brain(text)
            msg = AIMessage(
                content=reply,
                usage_metadata={
                    "input_tokens": len(text) // 4,
                    "output_tokens": len(reply) // 4,
                    "total_tokens": len(text) // 4 + len(reply) // 4,
                },
            )
            return ChatResult(generations=[ChatGeneration(message=msg)])

    model = ScriptedChatModel()
    model.__dict__["script"] = brain
    return model


def scripted_chat_model() -> Any:
    """A zero-argument factory, for ``rankbridge ragas score --llm ragas_fakes:scripted_chat_model``."""
    return make_chat_model()


def make_embeddings() -> Any:
    """LangChain embeddings from :func:`embed`."""
    from langchain_core.embeddings import Embeddings

    class HashEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [embed(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return embed(text)

    return HashEmbeddings()


# -- LlamaIndex -----------------------------------------------------------------------------------
def make_llamaindex_llm(script: Script | None = None) -> Any:
    """A LlamaIndex ``CustomLLM`` answering with :func:`scripted_reply`."""
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    brain = script or Script()

    class ScriptedLlamaLLM(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text=brain(prompt))

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            yield CompletionResponse(text=brain(prompt), delta=brain(prompt))

    llm = ScriptedLlamaLLM()
    object.__setattr__(llm, "_script", brain)
    return llm


def make_llamaindex_embedding() -> Any:
    """A LlamaIndex ``BaseEmbedding`` from :func:`embed`."""
    from llama_index.core.base.embeddings.base import BaseEmbedding

    class HashLlamaEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embed(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embed(text)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return embed(query)

    return HashLlamaEmbedding(model_name="hash")


# -- OpenAI over httpx.MockTransport --------------------------------------------------------------
def make_openai_client(script: Script | None = None, requests: list[dict[str, Any]] | None = None) -> Any:
    """An ``openai.OpenAI`` client whose HTTP transport answers every chat completion with the script."""
    import httpx
    from openai import OpenAI

    brain = script or Script()
    log = requests if requests is not None else []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        log.append(body)
        if request.url.path != "/v1/chat/completions":
            return httpx.Response(404, json={"error": {"message": f"unexpected path {request.url.path}"}})
        prompt = str(body["messages"][-1]["content"])
        try:
            content = brain(prompt)
        except ScriptedFailure as exc:
            return httpx.Response(500, json={"error": {"message": str(exc), "type": "server_error"}})
        return httpx.Response(
            200,
            json={
                "id": f"chatcmpl-{len(log)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "scripted"),
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            },
        )

    return OpenAI(
        api_key="sk-test-not-a-key",
        base_url="http://scripted.invalid/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        max_retries=0,
    )


# -- the oracle -----------------------------------------------------------------------------------
def expected_context_precision(contexts: Sequence[str], reference: str) -> float:
    verdicts = [int(supports(c, reference)) for c in contexts]
    num = sum(sum(verdicts[: i + 1]) / (i + 1) * v for i, v in enumerate(verdicts))
    return num / (sum(verdicts) + 1e-10)


def expected_context_recall(contexts: Sequence[str], reference: str) -> float:
    ctx = "\n".join(contexts)
    sents = sentences(reference)
    return sum(supports(ctx, s) for s in sents) / len(sents) if sents else math.nan


def expected_faithfulness(contexts: Sequence[str], response: str) -> float:
    ctx = "\n".join(contexts)
    sents = sentences(response)
    return sum(supports(ctx, s) for s in sents) / len(sents) if sents else math.nan


def expected_answer_relevancy(question: str, response: str) -> float:
    if response.lower().startswith("i don't know"):
        return 0.0
    return cosine(question, response)


def set_precision(retrieved: Iterable[str], reference: Iterable[str]) -> float:
    r, g = set(retrieved), set(reference)
    return len(r & g) / len(r) if r else math.nan


def set_recall(retrieved: Iterable[str], reference: Iterable[str]) -> float:
    r, g = set(retrieved), set(reference)
    return len(r & g) / len(g) if g else math.nan


# -- keeping ragas off the user's home directory ---------------------------------------------------
def isolate_ragas_user_dir(folder: Path) -> None:
    """Make ragas write its (unused, tracking is off) user-id file under ``folder``, once per process.

    ragas 0.4.3 reads that file with an unclosed ``open()`` when it already exists (a ResourceWarning, an
    error under ``-W error``); a fresh folder makes it create the file instead.
    """
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    old = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(folder)
    try:
        from ragas import _analytics

        _analytics.get_userid()
    finally:
        if old is None:
            os.environ.pop("XDG_DATA_HOME", None)
        else:
            os.environ["XDG_DATA_HOME"] = old
