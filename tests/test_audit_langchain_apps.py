"""Drop-in audit: LangChain apps built the usual way, scored by rankbridge and by pytrec_eval on the framework's output.

Every app here is built as a LangChain user builds one, offline: the shipped golden set's passages split by
``RecursiveCharacterTextSplitter`` (chunks carry ``metadata["doc_id"]``, no ids), indexed in an
``InMemoryVectorStore`` (UUID ids) over a local deterministic embedding and in ``BM25Retriever``; wrapped in
``EnsembleRetriever``, ``ContextualCompressionRetriever`` with a compressor pipeline, ``MultiQueryRetriever``
with a scripted rewriting chat model, LCEL chains called with ``invoke`` / ``batch`` / ``abatch`` / ``ainvoke``,
a ``RunnableParallel`` hybrid chain and a ``create_agent`` agent with two retriever tools.

The expected numbers never come from rankbridge: each test calls the framework object itself, reads the corpus
ids the framework's own Documents carry (a chunk of an already listed document keeps its first place, as a
document-level judgment means), and scores those lists with pytrec_eval (hit rate, which trec_eval lacks, by
hand). Queries whose retrieval failed are scored 0, as a runner run is.
"""

from __future__ import annotations

import asyncio
import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pytest

import rankbridge as rb
from rankbridge import GoldenSet, Qrels, Query, Run
from rankbridge.capture import query_id
from rankbridge.demo import TrigramEmbedding, demo_golden_set
from rankbridge.errors import IdMismatchError, IdMismatchWarning, RetrievalError

pytrec_eval = pytest.importorskip("pytrec_eval")
pytest.importorskip("langchain_core")
pytest.importorskip("langchain_text_splitters")
pytest.importorskip("langchain_community.retrievers")

from langchain_community.retrievers import BM25Retriever  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.language_models.fake_chat_models import FakeListChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import Runnable, RunnableParallel, RunnablePassthrough  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from langchain_text_splitters import RecursiveCharacterTextSplitter  # noqa: E402

from rankbridge.frameworks.langchain.capture import (  # noqa: E402
    RankbridgeAsyncCallbackHandler,
    RankbridgeCallbackHandler,
)

#: rankbridge's names -> pytrec_eval's (trec_eval's) measures; lists here are at most 12 deep
TREC = {
    "ndcg@10": "ndcg_cut_10",
    "ndcg@3": "ndcg_cut_3",
    "recall@10": "recall_10",
    "P@5": "P_5",
    "map@10": "map_cut_10",
}
METRICS = [*TREC, "hit_rate@5"]


class LocalEmbeddings(TrigramEmbedding, Embeddings):  # type: ignore[misc]
    """A deterministic local embedding (no download) standing in for the app's model."""


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    full = demo_golden_set()
    return GoldenSet(full.queries[:16], full.qrels, corpus=full.corpus, name="lumen-16")


@pytest.fixture(scope="module")
def app(golden: GoldenSet) -> dict[str, Any]:
    assert golden.corpus is not None
    emb = LocalEmbeddings(dim=256)
    docs = [Document(page_content=d["text"], metadata={"doc_id": i}) for i, d in golden.corpus.items()]
    chunks = RecursiveCharacterTextSplitter(chunk_size=150, chunk_overlap=20).split_documents(docs)
    assert len(chunks) > 2 * len(docs) and all(c.id is None for c in chunks)
    store = InMemoryVectorStore(emb)
    store.add_documents(chunks)  # no ids: UUIDs, the corpus id lives in metadata
    return {
        "emb": emb,
        "chunks": chunks,
        "store": store,
        "dense": store.as_retriever(search_kwargs={"k": 6}),
        "bm25": BM25Retriever.from_documents(chunks, k=6),
    }


# -- the reference: the framework's own Documents, scored by pytrec_eval ------------------------------------
def doc_ids(documents: Iterable[Any], key: Callable[[Any], str] | None = None) -> list[str]:
    """The corpus ids of LangChain Documents in rank order, a document listed once (its first chunk's place)."""
    out: list[str] = []
    for d in documents:
        did = key(d) if key is not None else d.metadata["doc_id"]
        if did not in out:
            out.append(did)
    return out


def reference(
    golden: GoldenSet, lists: Mapping[str, Sequence[str]], over: Iterable[str] | None = None
) -> dict[str, float]:
    """pytrec_eval's means of ranked ``{qid: [doc ids]}`` over ``over`` (default: every golden question; a
    question without a list, or with an empty one, scores 0 as a failed or missing one does)."""
    qids = list(over) if over is not None else [q.id for q in golden.queries]
    qrels = {q: {d: int(label) for d, label in golden.qrels[q].items()} for q in qids}
    run = {q: {d: float(len(lists[q]) - i) for i, d in enumerate(lists[q])} for q in qids if lists.get(q)}
    per = pytrec_eval.RelevanceEvaluator(
        {q: qrels[q] for q in run}, {"ndcg_cut.3,10", "recall.10", "P.5", "map_cut.10"}
    ).evaluate(run)
    means = {m: sum(per[q][t] for q in run) / len(qids) for m, t in TREC.items()}
    hits = sum(any(qrels[q].get(d, 0) > 0 for d in lists.get(q, [])[:5]) for q in qids)
    means["hit_rate@5"] = hits / len(qids)
    return means


def assert_scores(golden: GoldenSet, run: Run, lists: Mapping[str, Sequence[str]], **options: Any) -> None:
    """rankbridge's means of ``run`` equal pytrec_eval's on ``lists``, and the run ranks exactly those lists."""
    over = options.pop("over", None)
    for qid in over if over is not None else (q.id for q in golden.queries):
        if qid in run.errors:  # a failed question has no ranking; it scores 0
            assert not lists.get(qid), qid
            continue
        assert list(run.ranking(qid)) == list(lists.get(qid, [])), qid
    ev = rb.evaluate(golden, run, METRICS, **options)
    expected = reference(golden, lists, over)
    got = {m: ev.mean[str(rb.parse_measure(m))] for m in METRICS}
    assert got == pytest.approx(expected, abs=1e-12), (got, expected)
    assert expected["ndcg@10"] > 0.1  # a test that scores nothing could not tell a right number from a wrong one


def chain_over(*retrievers: Runnable[Any, Any]) -> Runnable[Any, Any]:
    """``{"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt | llm | parser``."""

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    contexts = {f"context{i}": r | format_docs for i, r in enumerate(retrievers)}
    prompt = ChatPromptTemplate.from_template(
        "Answer from the context.\n" + "".join(f"{{{c}}}\n" for c in contexts) + "Question: {question}"
    )
    parallel = RunnableParallel(**contexts, question=RunnablePassthrough())
    return parallel | prompt | FakeListChatModel(responses=["(a scripted answer)"]) | StrOutputParser()


# -- retrievers over split chunks ----------------------------------------------------------------------------
def test_split_chunks_in_a_vector_store_and_bm25_equal_pytrec_eval(golden: GoldenSet, app: dict[str, Any]) -> None:
    qs = golden.queries
    for name in ("dense", "bm25"):
        retriever = app[name]
        direct = {q.id: retriever.invoke(q.text) for q in qs}
        run = rb.run_retriever(retriever, golden, progress=False)
        assert run.config["id_from"] == "metadata:doc_id", name  # UUIDs match nothing: resolved to the metadata
        assert run.config["id_resolution"]["auto"] is True
        lists = {qid: doc_ids(docs) for qid, docs in direct.items()}
        assert_scores(golden, run, lists)
        # the later chunks of an already ranked document are dropped, and counted
        dropped = sum(len(docs) - len(lists[qid]) for qid, docs in direct.items())
        assert dropped > 0 and sum(run.duplicates.values()) == dropped, name
    # the store itself, asked deeper than its retriever: its similarity scores are kept, the ranking is its order
    store = app["store"]
    run = rb.run_retriever(store, golden, k=10, progress=False)
    scored = {q.id: store.similarity_search_with_score(q.text, k=10) for q in qs}
    assert_scores(golden, run, {qid: doc_ids(d for d, _ in pairs) for qid, pairs in scored.items()})
    first = qs[0].id
    assert run.hits(first)[0].score == pytest.approx(scored[first][0][1])
    # k on a copy: the app's retriever keeps its own k
    deeper = rb.run_retriever(app["dense"], golden, k=10, progress=False)
    assert app["dense"].search_kwargs == {"k": 6} and deeper.config["configured_k"] == 6
    assert_scores(golden, deeper, {q.id: doc_ids(store.similarity_search(q.text, k=10)) for q in qs})


def test_ensemble_and_compression_pipeline_equal_pytrec_eval(golden: GoldenSet, app: dict[str, Any]) -> None:
    classic = pytest.importorskip("langchain_classic.retrievers")
    compressors = pytest.importorskip("langchain_classic.retrievers.document_compressors")
    transformers = pytest.importorskip("langchain_community.document_transformers")
    qs, dense, bm25 = golden.queries, app["dense"], app["bm25"]
    # the default id_key fuses by page_content, as most apps leave it
    ensemble = classic.EnsembleRetriever(retrievers=[bm25, dense], weights=[0.4, 0.6])
    run = rb.run_retriever(ensemble, golden, progress=False)
    assert_scores(golden, run, {q.id: doc_ids(ensemble.invoke(q.text)) for q in qs})
    assert_scores(golden, run.to_stage("retriever:0"), {q.id: doc_ids(bm25.invoke(q.text)) for q in qs})
    assert_scores(golden, run.to_stage("retriever:1"), {q.id: doc_ids(dense.invoke(q.text)) for q in qs})

    pipeline = compressors.DocumentCompressorPipeline(
        transformers=[
            transformers.EmbeddingsRedundantFilter(embeddings=app["emb"], similarity_threshold=0.9),
            compressors.EmbeddingsFilter(embeddings=app["emb"], k=3),
        ]
    )
    compressed = classic.ContextualCompressionRetriever(base_compressor=pipeline, base_retriever=bm25)
    run = rb.run_retriever(compressed, golden, progress=False)
    lists = {q.id: doc_ids(compressed.invoke(q.text)) for q in qs}
    assert_scores(golden, run, lists)
    before = {q.id: doc_ids(bm25.invoke(q.text)) for q in qs}
    assert_scores(golden, run.to_stage("retrieved"), before)
    assert lists != before  # the compressor changed what the app hands its LLM


class Rewriter(BaseChatModel):
    """A scripted query-rewriting model: the question, its second half and its first half, one a line.

    It reads the question from the prompt (not from a list of replies consumed in call order), so every call
    for one question gets the same rewrites, whoever calls first."""

    @property
    def _llm_type(self) -> str:
        return "scripted-rewriter"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        match = re.search(r"Original question: (.*)", str(messages[-1].content))
        assert match is not None
        words = match.group(1).strip().split()
        half = len(words) // 2
        text = "\n".join([" ".join(words), " ".join(words[half:]), " ".join(words[:half])])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def test_multi_query_retriever_with_a_scripted_rewriter(golden: GoldenSet, app: dict[str, Any]) -> None:
    classic = pytest.importorskip("langchain_classic.retrievers")
    multi = classic.MultiQueryRetriever.from_llm(retriever=app["dense"], llm=Rewriter())
    qs = golden.queries[:8]
    golden = GoldenSet(qs, golden.qrels, corpus=golden.corpus, name="lumen-8")
    lists = {q.id: doc_ids(multi.invoke(q.text)) for q in qs}
    assert max(len(v) for v in lists.values()) > 6  # the union of three searches: deeper than one
    for mode in ("sync", "async"):
        assert_scores(golden, rb.run_retriever(multi, golden, progress=False, mode=mode), lists)
    with rb.capture(golden) as cap:  # the three inner searches are nested in the outer retrieval
        multi.batch([q.text for q in qs], config={"max_concurrency": 4})
    assert cap.summary()["matched_by_text"] == len(qs) and cap.summary()["repeats"] == 0
    assert_scores(golden, cap.run, lists)


# -- LCEL chains, every way they are called -------------------------------------------------------------------
def test_lcel_chain_scored_the_same_however_it_is_called(golden: GoldenSet, app: dict[str, Any]) -> None:
    qs, dense = golden.queries, app["dense"]
    chain = chain_over(dense)
    lists = {q.id: doc_ids(dense.invoke(q.text)) for q in qs}
    assert_scores(golden, rb.run_retriever(chain, golden, progress=False), lists)
    ran = rb.run_app(chain, golden, concurrency=4)
    assert_scores(golden, ran, lists)
    assert ran.answers[qs[0].id] == "(a scripted answer)"

    with rb.capture(golden) as cap:
        chain.batch([q.text for q in qs], config={"max_concurrency": 4})
        chain.invoke(qs[0].text)  # asked again, after the first answer: a repeat, not a concurrent one
    summary = cap.summary()
    assert summary["matched_by_text"] == len(qs) and summary["repeats"] == 1 and summary["concurrent_repeats"] == []
    assert "concurrent_repeats" not in cap.run.config
    assert_scores(golden, cap.run, lists)

    async def asked() -> tuple[Any, Any]:
        with rb.capture(golden) as batched:
            await chain.abatch([q.text for q in qs], config={"max_concurrency": 5})

        async def one(q: Query) -> str:
            with query_id(q.id):
                return str(await chain.ainvoke(q.text))

        with rb.capture(golden) as gathered:
            await asyncio.gather(*(one(q) for q in qs))
        return batched, gathered

    batched, gathered = asyncio.run(asked())
    assert_scores(golden, batched.run, lists)
    assert gathered.summary()["matched_by_id"] == len(qs)
    assert_scores(golden, gathered.run, lists)


def test_handlers_in_callbacks_with_chunk_ids_read_back_right(golden: GoldenSet, app: dict[str, Any]) -> None:
    qs = golden.queries
    # the app names its chunks "<doc>#<n>": not corpus ids, the corpus id still in metadata
    counts: dict[str, int] = {}
    ids = []
    for c in app["chunks"]:
        n = counts[c.metadata["doc_id"]] = counts.get(c.metadata["doc_id"], -1) + 1
        ids.append(f"{c.metadata['doc_id']}#{n}")
    store = InMemoryVectorStore(app["emb"])
    store.add_documents(app["chunks"], ids=ids)
    retriever = store.as_retriever(search_kwargs={"k": 8})
    lists = {q.id: doc_ids(retriever.invoke(q.text)) for q in qs}
    assert doc_ids(retriever.invoke(qs[0].text), key=lambda d: d.id.split("#")[0]) == lists[qs[0].id]
    run = rb.run_retriever(retriever, golden, progress=False)
    assert run.config["id_from"] == "metadata:doc_id"
    assert_scores(golden, run, lists)
    assert_scores(golden, rb.run_retriever(retriever, golden, progress=False, doc_map=lambda i: i.split("#")[0]), lists)

    handler = RankbridgeCallbackHandler()
    retriever.batch([q.text for q in qs], config={"callbacks": [handler], "max_concurrency": 4})
    assert_scores(golden, handler.to_run(golden), lists)

    # async handler, one config per item carrying the golden id; the app asks reworded questions
    reworded = {q.id: q.text.upper() + " ?!" for q in qs}
    async_handler = RankbridgeAsyncCallbackHandler()
    configs = [{"callbacks": [async_handler], "metadata": {"rankbridge_query_id": q.id}} for q in qs]
    asyncio.run(retriever.abatch([reworded[q.id] for q in qs], config=configs))  # type: ignore[arg-type]
    assert async_handler.summary(golden)["matched_by_id"] == len(qs)
    assert_scores(golden, async_handler.to_run(golden), {q.id: doc_ids(retriever.invoke(reworded[q.id])) for q in qs})


def test_bare_chunks_uuid_ids_are_refused_and_a_doc_map_fixes_them(golden: GoldenSet, app: dict[str, Any]) -> None:
    qs = golden.queries
    bare = [Document(page_content=c.page_content) for c in app["chunks"]]  # no metadata at all
    store = InMemoryVectorStore(app["emb"])
    uuids = store.add_documents(bare)
    to_doc = {u: c.metadata["doc_id"] for u, c in zip(uuids, app["chunks"], strict=True)}
    retriever = store.as_retriever(search_kwargs={"k": 6})
    with pytest.raises(IdMismatchError, match="do not match the golden set"):
        rb.run_retriever(retriever, golden, progress=False)
    with rb.capture(golden) as cap:
        retriever.batch([q.text for q in qs])
    with pytest.raises(IdMismatchError):
        cap.to_run()
    assert cap.summary()["id_check"]["action"] == "raise"
    unresolved = cap.to_run(check_ids=False)
    with pytest.warns(IdMismatchWarning):  # qrels alone: a warning and a note, not a silent 0
        ev = rb.evaluate(Qrels({q.id: golden.qrels[q.id] for q in qs}), unresolved, ["ndcg@10"])
    assert ev.notes and ev.mean["ndcg@10"] == 0.0
    lists = {q.id: doc_ids(retriever.invoke(q.text), key=lambda d: to_doc[d.id]) for q in qs}
    assert_scores(golden, rb.run_retriever(retriever, golden, progress=False, doc_map=to_doc), lists)


# -- several retrievals per question ------------------------------------------------------------------------
class Slow(BaseRetriever):
    """The app's retriever behind a delay, so that it finishes after a sibling that started later."""

    inner: Any
    delay: float = 0.05

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        time.sleep(self.delay)
        return list(self.inner.invoke(query, config={"callbacks": run_manager.get_child()}))


def test_hybrid_chain_two_retrievers_in_parallel(golden: GoldenSet, app: dict[str, Any]) -> None:
    qs, dense, bm25 = golden.queries, app["dense"], app["bm25"]
    slow_dense = Slow(inner=dense)
    chain = chain_over(slow_dense, bm25)
    dense_lists = {q.id: doc_ids(dense.invoke(q.text)) for q in qs}
    bm25_lists = {q.id: doc_ids(bm25.invoke(q.text)) for q in qs}
    ran = rb.run_app(chain, golden, retrieval="all", concurrency=4)
    assert set(ran.config["retrievals"].values()) == {2}
    # "final": both lists concatenated in the order the searches started, a document keeping its first place
    assert_scores(golden, ran, {q.id: list(dict.fromkeys([*dense_lists[q.id], *bm25_lists[q.id]])) for q in qs})
    assert_scores(golden, ran.to_stage("search:1"), dense_lists)
    assert_scores(golden, ran.to_stage("search:2"), bm25_lists)

    # a capture of the same traffic, matched by text: two retrievals per question, one scored ("first" to start)
    with rb.capture(golden) as cap:
        chain.batch([q.text for q in qs], config={"max_concurrency": 4})
    assert cap.summary()["repeats"] == len(qs)
    first = {}
    for record in cap.records:
        if record.query not in first or record.started < first[record.query].started:
            first[record.query] = record
    expected = {q.id: dense_lists[q.id] if first[q.text].retriever == "Slow" else bm25_lists[q.id] for q in qs}
    # the slow dense search starts first in most questions and ends last: finish order would pick BM25
    assert sum(first[q.text].retriever == "Slow" for q in qs) >= len(qs) // 2
    assert_scores(golden, cap.run, expected)
    # and says so: the list scored is one of the two the app used (on a loaded machine a branch may run after
    # the other has ended: then it was not at the same time)
    spans = {q.text: sorted((r.started, r.started + r.latency) for r in cap.records if r.query == q.text) for q in qs}
    overlapping = [q.id for q in qs if spans[q.text][1][0] < spans[q.text][0][1]]
    assert len(overlapping) >= len(qs) // 2
    assert sorted(cap.summary()["concurrent_repeats"]) == overlapping
    assert cap.run.config["concurrent_repeats"] == len(overlapping)
    note = f"{len(overlapping)} captured questions had retrievals that ran at the same time"
    assert any(note in n for n in rb.evaluate(golden, cap.run, METRICS).notes)
    last = cap.to_run(repeats="last")
    assert all(
        list(last.ranking(q.id)) == (bm25_lists if first[q.text].retriever == "Slow" else dense_lists)[q.id] for q in qs
    )


def test_a_query_id_block_around_a_batch_is_counted_not_spread(golden: GoldenSet, app: dict[str, Any]) -> None:
    qs = golden.queries
    dense = app["dense"]
    texts = [q.text for q in qs[:4]]

    class FirstLast(BaseRetriever):  # the first question of the batch takes longest
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            if query == texts[0]:
                time.sleep(0.2)
            return list(dense.invoke(query, config={"callbacks": run_manager.get_child()}))

    with rb.capture(golden) as cap:
        with query_id(qs[0].id):  # wrong: every retrieval of the batch is tagged with the first question's id
            FirstLast().batch(texts, config={"max_concurrency": 4})
        FirstLast().batch([q.text for q in qs[4:]])
    summary = cap.summary()
    assert summary["repeats"] == 3 and summary["matched_by_id"] == 1
    assert summary["missing"] == [q.id for q in qs[1:4]] and summary["concurrent_repeats"] == [qs[0].id]
    ev = rb.evaluate(golden, cap.run, METRICS)
    assert list(ev.missing) == [q.id for q in qs[1:4]] and ev.num_queries == len(qs) - 3
    assert (
        "3 missing" in ev.summary() and "1 captured questions had retrievals that ran at the same time" in ev.summary()
    )
    # the question's entry is the retrieval that started first (as a rule its own), not the first to finish
    first = min((r for r in cap.records if r.query_id == qs[0].id), key=lambda r: r.started)
    seen = [q for q in qs if q.id not in ev.missing]
    lists = {q.id: doc_ids(dense.invoke(q.text)) for q in seen}
    lists[qs[0].id] = doc_ids(dense.invoke(first.query))
    assert_scores(golden, cap.run, lists, over=[q.id for q in seen])


class TwoTools(BaseChatModel):
    """Scripted tool-calling model: searches the dense tool, then the BM25 tool, with the question; then answers."""

    @property
    def _llm_type(self) -> str:
        return "scripted-agent"

    def bind_tools(self, tools: Any, **kwargs: Any) -> TwoTools:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        question = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done < 2:
            call = {"name": ("dense", "keyword")[done], "args": {"query": question}, "id": f"call-{done}"}
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="", tool_calls=[call]))])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="(a scripted answer)"))])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_agent_with_two_retriever_tools(golden: GoldenSet, app: dict[str, Any]) -> None:
    agents = pytest.importorskip("langchain.agents")
    tools = pytest.importorskip("langchain_core.tools")
    dense, bm25 = app["dense"], app["bm25"]
    agent = agents.create_agent(
        TwoTools(),
        [
            tools.create_retriever_tool(dense, "dense", "Search."),
            tools.create_retriever_tool(bm25, "keyword", "Search."),
        ],
    )
    qs = golden.queries[:8]
    part = GoldenSet(qs, golden.qrels, corpus=golden.corpus, name="lumen-8")
    ran = rb.run_app(agent, part, retrieval="all", concurrency=2)
    assert ran.config["id_from"] == "metadata:doc_id" and set(ran.config["retrievals"].values()) == {2}
    dense_lists = {q.id: doc_ids(dense.invoke(q.text)) for q in qs}
    bm25_lists = {q.id: doc_ids(bm25.invoke(q.text)) for q in qs}
    assert_scores(part, ran, {q.id: list(dict.fromkeys([*dense_lists[q.id], *bm25_lists[q.id]])) for q in qs})
    assert_scores(part, ran.to_stage("search:2"), bm25_lists)
    assert_scores(part, rb.run_app(agent, part, retrieval="first", concurrency=2), dense_lists)


# -- failures and depth -------------------------------------------------------------------------------------
def test_most_questions_failing_is_loud_and_failures_score_zero(golden: GoldenSet, app: dict[str, Any]) -> None:
    qs, dense = golden.queries, app["dense"]
    down = {q.text for q in qs[2:13]}  # 11 of 16

    class Flaky(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            if query in down:
                raise ConnectionError("vector store unreachable")
            return list(dense.invoke(query))

    ok = {q.id: doc_ids(dense.invoke(q.text)) for q in qs if q.text not in down}
    for target, options in ((Flaky(), {"retries": 0}), (chain_over(Flaky()), {})):  # an app is never retried
        # stopped early (the first 5 to finish all failed) or at the end (11 of 16 alike): by timing, loud either way
        with pytest.raises(RetrievalError, match=r"failed with the same error.*ConnectionError: vector store"):
            rb.run_retriever(target, golden, progress=False, **options)
        kept = rb.run_retriever(target, golden, progress=False, keep_going=True, **options)
        assert_scores(golden, kept, ok)  # the failed ones score 0
    with pytest.raises(RetrievalError, match=r"11 of 16 queries failed with the same error.*ConnectionError"):
        rb.run_app(chain_over(Flaky()), golden)  # run_app refuses such a run as run_retriever does
    ran = rb.run_app(chain_over(Flaky()), golden, keep_going=True)
    assert ran.config["failures"] == {"error": 11}
    ev = rb.evaluate(golden, ran, METRICS)
    assert len(ev.failed) == 11 and "11 failed" in ev.summary()
    assert_scores(golden, ran, ok)


def test_metrics_deeper_than_the_apps_k_count_the_missing_ranks(golden: GoldenSet, app: dict[str, Any]) -> None:
    qs, store = golden.queries, app["store"]
    shallow = store.as_retriever(search_kwargs={"k": 3})
    run = rb.run_retriever(shallow, golden, progress=False)  # k=None: the app's own top 3
    assert run.config["k"] == 3 and max(len(run.ranking(q.id)) for q in qs) == 3
    # P@5 and the @10 metrics of a 3-deep app are trec_eval's: the ranks it does not return are not relevant
    assert_scores(golden, run, {q.id: doc_ids(shallow.invoke(q.text)) for q in qs})


def test_tied_scores_keep_the_retrievers_order_through_a_trec_file(
    golden: GoldenSet, app: dict[str, Any], tmp_path: Any
) -> None:
    assert golden.corpus is not None
    q = golden.queries[0]
    top = app["store"].similarity_search(q.text, k=1)[0].metadata["doc_id"]
    twin = "zzz-" + top  # the same text under an id that sorts after: trec_eval puts it first on a tie
    docs = [Document(page_content=golden.corpus[top]["text"], metadata={"doc_id": d}) for d in (top, twin)]
    docs += [
        Document(page_content=v["text"], metadata={"doc_id": d})
        for d, v in list(golden.corpus.items())[:30]
        if d != top
    ]
    store = InMemoryVectorStore(app["emb"])
    store.add_documents(docs)
    pairs = store.similarity_search_with_score(q.text, k=5)
    assert pairs[0][1] == pairs[1][1] and [d.metadata["doc_id"] for d, _ in pairs[:2]] == [top, twin]
    corpus = {d.metadata["doc_id"]: {"text": d.page_content} for d in docs}
    one = GoldenSet([q], Qrels({q.id: {top: 3}}), corpus=corpus, name="tie")
    run = rb.run_retriever(store, one, k=5, progress=False)
    ev = rb.evaluate(one, run, ["mrr@10", "ndcg@10"])
    # the app's order is the ranking (documented: ranked runs are never re-sorted): what its LLM sees first
    assert ev.mean == {"mrr@10": 1.0, "ndcg@10": 1.0}
    by_score = pytrec_eval.RelevanceEvaluator({q.id: {top: 3}}, {"recip_rank"}).evaluate(
        {q.id: {d.metadata["doc_id"]: float(s) for d, s in pairs}}
    )
    assert by_score[q.id]["recip_rank"] == 0.5  # scored by the raw, tied scores trec_eval would say 0.5
    path = tmp_path / "run.trec"
    from rankbridge.io import write_run

    write_run(run, path)  # written with rank-based scores, so trec_eval reads the same order back
    assert rb.evaluate(one, rb.load_run(path), ["mrr@10", "ndcg@10"]).mean == ev.mean
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rb.evaluate(one, run, ["mrr@10"]).notes == ()


def test_an_index_with_documents_outside_the_corpus(golden: GoldenSet, app: dict[str, Any]) -> None:
    """Pages added to the index that the golden set does not know (no ``doc_id`` in their metadata)."""
    qs = golden.queries
    extra = [
        Document(page_content=f"{q.text} (see the FAQ)", metadata={"source": f"faq-{i}"}) for i, q in enumerate(qs)
    ]
    store = InMemoryVectorStore(app["emb"])
    store.add_documents([*app["chunks"], *extra])
    retriever = store.as_retriever(search_kwargs={"k": 6})
    direct = {q.id: retriever.invoke(q.text) for q in qs}
    assert all(any("doc_id" not in d.metadata for d in docs) for docs in direct.values())
    # resolved to metadata:doc_id, which the FAQ pages lack: every question fails, loudly
    with pytest.raises(RetrievalError, match="has no doc id from 'metadata:doc_id'"):
        rb.run_retriever(retriever, golden, progress=False, retries=0)
    # a fallback list names them: ranked where they were, judged non-relevant
    lists = {
        qid: doc_ids(docs, key=lambda d: d.metadata.get("doc_id") or d.metadata["source"])
        for qid, docs in direct.items()
    }
    spec = ["metadata:doc_id", "metadata:source"]
    assert_scores(golden, rb.run_retriever(retriever, golden, progress=False, id_from=spec), lists)
    with rb.capture(golden, id_from=spec) as cap:
        retriever.batch([q.text for q in qs], config={"max_concurrency": 4})
    assert_scores(golden, cap.run, lists)


def test_capture_of_a_compression_over_an_ensemble(golden: GoldenSet, app: dict[str, Any]) -> None:
    classic = pytest.importorskip("langchain_classic.retrievers")
    compressors = pytest.importorskip("langchain_classic.retrievers.document_compressors")
    qs, dense, bm25 = golden.queries, app["dense"], app["bm25"]
    ensemble = classic.EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5])
    compressed = classic.ContextualCompressionRetriever(
        base_compressor=compressors.EmbeddingsFilter(embeddings=app["emb"], k=3), base_retriever=ensemble
    )
    lists = {q.id: doc_ids(compressed.invoke(q.text)) for q in qs}
    fused = {q.id: doc_ids(ensemble.invoke(q.text)) for q in qs}
    for trace in (False, True):
        with rb.capture(golden, trace=trace) as cap:
            compressed.batch([q.text for q in qs], config={"max_concurrency": 4})
        assert_scores(golden, cap.run, lists)  # what the app's LLM gets
        assert_scores(golden, cap.to_run(stage="retrieved"), fused)  # the compressor's input
    run = rb.run_retriever(compressed, golden, progress=False)
    assert_scores(golden, run, lists)
    assert_scores(golden, run.to_stage("retrieved"), fused)
    assert_scores(golden, run.to_stage("retrieved/retriever:0"), {q.id: doc_ids(bm25.invoke(q.text)) for q in qs})


def test_inside_a_running_event_loop_as_in_a_notebook(golden: GoldenSet, app: dict[str, Any]) -> None:
    qs, dense = golden.queries[:8], app["dense"]
    part = GoldenSet(qs, golden.qrels, corpus=golden.corpus, name="lumen-8")
    chain = chain_over(dense)
    lists = {q.id: doc_ids(dense.invoke(q.text)) for q in qs}

    async def cell() -> list[Run]:  # a notebook cell: the loop is running, sync and async calls alike
        return [
            rb.run_retriever(dense, part, progress=False),
            rb.run_app(chain, part),
            await rb.arun_retriever(dense, part, progress=False),
            await rb.arun_app(chain, part),
        ]

    for run in asyncio.run(cell()):
        assert_scores(part, run, lists)
