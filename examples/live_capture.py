"""Live capture: record the retrievals a running app makes, then score them -- no change to the app.

``rankbridge.capture()`` attaches to LlamaIndex instrumentation and LangChain callbacks, lets
the app run as usual, and hands back what each retriever returned as a :class:`rankbridge.Run`. Captured
questions are matched to the golden set by id when the app passes one, else by their text.

Runs offline with no API key: ``python examples/live_capture.py`` (needs ``pip install
'rankbridge[llamaindex,langchain]' llama-index-retrievers-bm25 langchain-community rank-bm25``).
``MockLLM`` stands in for the app's LLM.
"""

from __future__ import annotations

import json

from langchain_community.retrievers import BM25Retriever as LangChainBM25
from langchain_core.documents import Document
from langchain_core.runnables import Runnable, RunnableLambda
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import TextNode
from llama_index.retrievers.bm25 import BM25Retriever
from vitamins import CORPUS, QUESTIONS, golden_set  # the examples' shared tiny golden set

import rankbridge as rb
from rankbridge.capture import capture, query_id


def llamaindex_app() -> RetrieverQueryEngine:
    """A question-answering app: BM25 retrieval, then an LLM (a mock here) writes the answer."""
    nodes = [TextNode(id_=doc_id, text=text) for doc_id, text in CORPUS.items()]
    return RetrieverQueryEngine.from_args(BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=5), llm=MockLLM())


def join_contexts(found: list[Document]) -> str:
    return "\n".join(d.page_content for d in found)


def langchain_app() -> Runnable[str, str]:
    """A LangChain chain: retrieve, then join the contexts into a prompt."""
    docs = [Document(page_content=text, metadata={"doc_id": doc_id}) for doc_id, text in CORPUS.items()]
    retriever = LangChainBM25.from_documents(docs, k=5)
    return retriever | RunnableLambda(join_contexts)


def main() -> None:
    golden = golden_set()

    # 1. LlamaIndex: the app answers questions as it always does; capture records each retrieval inside.
    engine = llamaindex_app()
    with capture(golden=golden, frameworks=["llamaindex"], name="llamaindex-app") as cap:
        for text in QUESTIONS.values():
            engine.query(text)  # matched to the golden set by its text
    li_run = cap.run
    print("llamaindex capture:", {k: v for k, v in cap.summary().items() if k in ("queries", "matched_by_text")})

    # 2. LangChain: here the app passes the golden query id (so rewritten or paraphrased questions still match).
    chain = langchain_app()
    with capture(golden=golden, frameworks=["langchain"], id_from="metadata:doc_id", name="langchain-app") as cap:
        for qid, text in QUESTIONS.items():
            with query_id(qid):
                chain.invoke(text)
    lc_run = cap.run
    print("langchain capture:", {k: v for k, v in cap.summary().items() if k in ("queries", "matched_by_id")})

    # 3. Captured runs are ordinary runs: evaluate, compare, save, report.
    print()
    for run in (li_run, lc_run):
        ev = rb.evaluate(golden.qrels, run, ["ndcg@5", "recall@5"])
        means = ", ".join(f"{m}={v:.3f}" for m, v in ev.mean.items())
        print(f"{run.name}: {means} over {ev.num_queries} queries; latency of q01 {run.latency['q01'] * 1000:.1f} ms")

    # 4. No golden set, no qrels (production traffic): capture anyway, then let an LLM grade what was found.
    with capture(frameworks=["llamaindex"], name="unlabelled") as cap:
        for text in list(QUESTIONS.values())[:4]:
            engine.query(text)
    grades = cap.judge(stand_in_llm, k=5, model_id="stand-in")  # pass your chat model, e.g. ChatOpenAI(...)
    ev = rb.evaluate(grades.qrels, cap.run, ["ndcg@5"])
    print(f"\nunlabelled traffic, graded by {grades.qrels.name}: ndcg@5={ev.mean['ndcg@5']:.3f}")


def stand_in_llm(prompt: str) -> str:
    """A stand-in for a real LLM judge, so this example runs offline: grades by shared words.

    rankbridge.judge sends a prompt with the query and one passage in a JSON data block; any LangChain or
    LlamaIndex LLM, or a function like this one, answers it with {"reason": ..., "grade": 0-3}.
    """
    block = prompt.rsplit("-----BEGIN DATA ", 1)[1]  # the data block: one JSON object on its own line
    data = json.loads(block.split("\n")[1])
    words = [{w.strip("?.,;:()").lower() for w in data[key].split()} for key in ("query", "document")]
    shared = words[0] & words[1]
    grade = min(3, len({w for w in shared if len(w) > 3}))
    return f'{{"reason": "{grade} shared content words", "grade": {grade}}}'


if __name__ == "__main__":
    main()
