"""Production traces -> Run: spans made in-process by the real OpenInference instrumentors, LangSmith runs made by
LangChain's own tracer, read back and compared with what ``rankbridge.capture()`` recorded for the same
calls (both attached at once). Embeddings are local and deterministic; nothing touches the network.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("langchain_core")
pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("openinference.instrumentation.llama_index")
pytest.importorskip("openinference.instrumentation.langchain")

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import BaseDocumentCompressor
from langchain_core.documents import Document as LCDocument
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.retrievers import BaseRetriever as LCBaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import Settings
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor import SimilarityPostprocessor, StructuredLLMRerank
from openinference.instrumentation import using_metadata
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from capture_data import CORPUS, GOLDEN, QUERIES
from rankbridge import Query, Run
from rankbridge.capture import Capture, capture
from rankbridge.errors import IdMismatchError, InputError, ParseError
from rankbridge.io.traces import langsmith_capture, openinference_capture, read_langsmith, read_openinference
from test_capture_ids import GOLDEN_CORPUS, UUID, _close_stray_event_loop, llama_index  # noqa: F401 (a fixture)

DOCS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "traces.md"


# -- the tracer and the instrumentors (the real ones), on for this module only ---------------------------------
@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    exp = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    li, lc = LlamaIndexInstrumentor(), LangChainInstrumentor()
    li.instrument(tracer_provider=provider)
    lc.instrument(tracer_provider=provider)
    exp.provider = provider  # type: ignore[attr-defined]
    try:
        yield exp
    finally:
        li.uninstrument()
        lc.uninstrument()
        provider.shutdown()


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> InMemorySpanExporter:
    exporter.clear()
    return exporter


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used-offline")
    monkeypatch.setattr(Settings, "_llm", MockLLM(max_tokens=8))
    monkeypatch.setattr(Settings, "_embed_model", None)
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def index() -> Any:
    # the corpus id goes into each Document's metadata (LlamaIndex copies it into every chunk): spans carry a
    # chunk's id, text, score and metadata, not its ref_doc_id
    return llama_index(metadata=lambda d: {"doc_id": d})


def lc_store(ids: bool = False) -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    docs = [LCDocument(page_content=t, metadata={"doc_id": d}) for d, t in CORPUS.items()]
    store.add_documents(docs, ids=list(CORPUS) if ids else None)
    return store


def hits(run: Run) -> dict[str, list[tuple[str, float | None, str | None]]]:
    return {q: [(h.doc_id, h.score, h.text) for h in run.hits(q)] for q in run}


def assert_same(read: Run, captured: Run) -> None:
    assert sorted(read) == sorted(captured)
    assert hits(read) == hits(captured)
    assert read.errors == captured.errors
    assert read.duplicates == captured.duplicates


class OverlapLLM(CustomLLM):
    """A scripted LLM for StructuredLLMRerank: relevance = 1 + words shared by the question and the document."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="overlap")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        question = re.search(r"Question: (.*)", prompt)
        words = set(re.findall(r"[a-z]+", question.group(1).lower())) if question else set()
        docs = re.findall(r"Document (\d+):\n(.*?)(?=\n\nDocument \d+:|\nQuestion:)", prompt, flags=re.S)
        scored = [
            {"document_number": int(n), "relevance": 1 + len(words & set(re.findall(r"[a-z]+", t.lower())))}
            for n, t in docs
        ]
        return CompletionResponse(text=json.dumps({"documents": scored}))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def both(app: Callable[[str, str], Any], golden: Any = GOLDEN_CORPUS, **kwargs: Any) -> Capture:
    """Run every question through ``app(qid, text)`` under capture() while the instrumentors record spans."""
    with capture(golden, **kwargs) as cap:
        for qid, text in QUERIES.items():
            app(qid, text)
    return cap


# -- 1. OpenInference spans from the real instrumentors == capture ----------------------------------------------
def test_llamaindex_retriever_spans_equal_capture(index: Any, spans: InMemorySpanExporter) -> None:
    retriever = index.as_retriever(similarity_top_k=3)
    cap = both(lambda qid, text: retriever.retrieve(text))
    run = read_openinference(spans.get_finished_spans(), golden=GOLDEN_CORPUS)
    assert_same(run, cap.run)
    # the chunks' own ids are UUIDs; the corpus id was found in their metadata, as capture found ref_doc_id
    assert run.config["id_resolution"]["to"] == "metadata:doc_id"
    raw = read_openinference(spans, golden=GOLDEN_CORPUS, check_ids=False)
    assert all(UUID.match(h.doc_id) for q in raw for h in raw.hits(q))
    summary = run.config["summary"]
    assert (summary["matched_by_text"], summary["unmatched"], summary["missing"]) == (5, 0, [])
    # LlamaIndex's inner VectorIndexRetriever._retrieve span is the same retrieval, not a second one
    assert summary["retrieval_spans"] == 5 and summary["spans"] > 5


def test_llamaindex_query_engine_reranker_spans_equal_capture(index: Any, spans: InMemorySpanExporter) -> None:
    engine = index.as_query_engine(
        similarity_top_k=4, node_postprocessors=[StructuredLLMRerank(llm=OverlapLLM(), top_n=3, choice_batch_size=4)]
    )
    cap = both(lambda qid, text: engine.query(text))
    run = read_openinference(spans.get_finished_spans(), golden=GOLDEN_CORPUS)
    assert run.config["summary"]["reranker_spans"] == 5
    assert_same(run, cap.run)  # the reranker's output, with its scores
    assert_same(run.to_stage("retrieved"), cap.to_run(stage="retrieved"))  # the retriever's own list
    final, first = hits(run), hits(run.to_stage("retrieved"))
    assert any(final[q] != first[q] for q in final)  # the reranker did change lists: the comparison means something
    chunks = read_openinference(spans, golden=GOLDEN_CORPUS, check_ids=False)  # UUID chunk ids, nothing collapsed
    assert {len(chunks.hits(q)) for q in chunks} == {3}
    assert {len(chunks.to_stage("retrieved").hits(q)) for q in chunks} == {4}
    retrieved_only = read_openinference(spans, golden=GOLDEN_CORPUS, stage="retrieved")
    assert hits(retrieved_only) == first


def test_a_postprocessor_without_reranker_span_leaves_the_retrieved_list(
    index: Any, spans: InMemorySpanExporter
) -> None:
    # SimilarityPostprocessor emits no RERANKER span (only a CHAIN span whose output is a repr): the spans hold the
    # retriever's list, which is capture's stage "retrieved", not its final list
    engine = index.as_query_engine(
        similarity_top_k=4, node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.45)]
    )
    cap = both(lambda qid, text: engine.query(text))
    run = read_openinference(spans, golden=GOLDEN_CORPUS)
    assert_same(run, cap.to_run(stage="retrieved"))
    assert hits(run) != hits(cap.run)
    assert run.stages == {}


def test_langchain_retriever_and_chain_spans_equal_capture(spans: InMemorySpanExporter) -> None:
    retriever = lc_store().as_retriever(search_kwargs={"k": 3})
    chain = {"context": retriever, "question": RunnablePassthrough()} | RunnableLambda(lambda x: len(x["context"]))

    def app(qid: str, text: str) -> Any:
        if qid in ("q1", "q2"):  # a bare retriever, matched by text
            return retriever.invoke(text)
        return chain.invoke(text, config={"metadata": {"rankbridge_query_id": qid}})  # an LCEL chain, by id

    cap = both(app)
    run = read_openinference(spans.get_finished_spans(), golden=GOLDEN_CORPUS)
    assert_same(run, cap.run)
    summary, live = run.config["summary"], cap.summary()
    assert (
        (summary["matched_by_id"], summary["matched_by_text"])
        == (live["matched_by_id"], live["matched_by_text"])
        == (3, 2)
    )
    assert run.config["id_resolution"]["to"] == cap.run.config["id_resolution"]["to"] == "metadata:doc_id"


def test_langchain_document_ids_come_from_output_value(spans: InMemorySpanExporter) -> None:
    # the LangChain instrumentor writes no retrieval.documents.N.document.id; Document.id is in output.value
    retriever = lc_store(ids=True).as_retriever(search_kwargs={"k": 3})
    cap = both(lambda qid, text: retriever.invoke(text), golden=GOLDEN)
    finished = spans.get_finished_spans()
    assert not any(".document.id" in key for s in finished for key in (s.attributes or {}))
    run = read_openinference(finished, golden=GOLDEN)
    assert_same(run, cap.run)
    assert set(run.ranking("q1")) <= set(CORPUS)
    # without output.value the documents have no id under id_from='id': the query fails, saying so
    stripped = [span_dict(s, drop=("output.value",)) for s in finished]
    failed = read_openinference(stripped, golden=GOLDEN)
    assert len(failed) == 0 and "no doc id from 'id'" in failed.errors["q1"]


def test_langchain_compression_retriever_keeps_both_stages(spans: InMemorySpanExporter) -> None:
    from langchain_classic.retrievers import ContextualCompressionRetriever

    class Reverse(BaseDocumentCompressor):
        def compress_documents(self, documents: Sequence[LCDocument], query: str, callbacks: Any = None) -> Any:
            return list(reversed(documents))[:2]

    base = lc_store().as_retriever(search_kwargs={"k": 3})
    retriever = ContextualCompressionRetriever(base_compressor=Reverse(), base_retriever=base)
    cap = both(lambda qid, text: retriever.invoke(text))
    run = read_openinference(spans, golden=GOLDEN_CORPUS)
    assert_same(run, cap.run)
    assert_same(run.to_stage("retrieved"), cap.to_run(stage="retrieved"))
    assert run.ranking("q1") != run.to_stage("retrieved").ranking("q1")[:2]


def test_failed_retrieval_span_is_an_error_as_capture_records_it(spans: InMemorySpanExporter) -> None:
    class Broken(LCBaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> Any:
            raise RuntimeError("index offline")

    def app(qid: str, text: str) -> None:
        with contextlib.suppress(RuntimeError):
            Broken().invoke(text)

    cap = both(app, golden=GOLDEN)
    run = read_openinference(spans, golden=GOLDEN)
    assert run.errors.keys() == cap.run.errors.keys() == set(QUERIES)
    assert "RuntimeError: index offline" in run.errors["q1"] and "RuntimeError: index offline" in cap.run.errors["q1"]
    assert run.config["summary"]["errors"] == 5


def test_openinference_using_metadata_carries_the_query_id(index: Any, spans: InMemorySpanExporter) -> None:
    retriever = index.as_retriever(similarity_top_k=2)
    for qid, text in QUERIES.items():
        with using_metadata({"rankbridge_query_id": qid}):
            retriever.retrieve(text.upper() + " ???")  # text alone would not match exactly... but normalised would
            retriever.retrieve("something else entirely")
    cap = openinference_capture(spans, golden=GOLDEN_CORPUS)
    summary = cap.summary()
    assert summary["matched_by_id"] == 5 and summary["repeats"] == 5 and summary["unmatched"] == 0
    last = read_openinference(spans, golden=GOLDEN_CORPUS, repeats="last", check_ids=False)
    first = read_openinference(spans, golden=GOLDEN_CORPUS, repeats="first", check_ids=False)
    assert hits(last)["q1"] != hits(first)["q1"]


# -- the export forms of the same spans --------------------------------------------------------------------------
def span_dict(span: ReadableSpan, drop: Sequence[str] = ()) -> dict[str, Any]:
    out = json.loads(span.to_json())
    for key in drop:
        out["attributes"].pop(key, None)
    return out


def otlp_export(finished: Sequence[ReadableSpan], hex_ids: bool = False) -> dict[str, Any]:
    """The OTLP/JSON protobuf mapping of the spans, made by OpenTelemetry's own encoder (ids base64, or hex as the
    OTLP/JSON spec and the collector's file exporter write them)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    data = MessageToDict(encode_spans(finished))
    if hex_ids:
        import base64

        for rs in data["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64decode(span[key]).hex()
    return data


# Phoenix's span DataFrame: attributes are stored unflattened and read back with the OpenInference semantic
# conventions kept as dotted keys (phoenix.trace.dsl.query._flatten_semantic_conventions). This is what arize-phoenix
# 20.26.1 returned for PHOENIX_FLAT (checked once, by hand, with the real package; it is not a test dependency):
PHOENIX_FLAT = {
    "openinference.span.kind": "RETRIEVER",
    "input.value": "q?",
    "metadata": json.dumps({"rankbridge_query_id": "q1"}),
    "retrieval.documents.0.document.id": "a",
    "retrieval.documents.0.document.score": 0.5,
    "retrieval.documents.0.document.content": "A",
    "retrieval.documents.0.document.metadata": json.dumps({"doc_id": "d1"}),
    "retrieval.documents.1.document.id": "b",
    "retrieval.documents.1.document.score": 0.25,
    "retrieval.documents.1.document.content": "B",
    "gen_ai.retrieval.query.text": "q?",
    "gen_ai.retrieval.documents": json.dumps([{"id": "x", "score": 1.0}]),
    "gen_ai.operation.name": "retrieval",
    "tag.tags": ["a", "rankbridge_query_id=q1"],
    "reranker.output_documents.0.document.id": "b",
}
PHOENIX_COLUMNS = {
    "gen_ai": {
        "operation": {"name": "retrieval"},
        "retrieval": {"query": {"text": "q?"}},
        "retrieval.documents": '[{"id": "x", "score": 1.0}]',
    },
    "retrieval.documents": [
        {"document.content": "A", "document.score": 0.5, "document.metadata": {"doc_id": "d1"}, "document.id": "a"},
        {"document.content": "B", "document.score": 0.25, "document.id": "b"},
    ],
    "reranker.output_documents": [{"document.id": "b"}],
    "input.value": "q?",
    "openinference.span.kind": "RETRIEVER",
    "tag.tags": ["a", "rankbridge_query_id=q1"],
    "metadata": {"rankbridge_query_id": "q1"},
}


def phoenix_columns(flat: dict[str, Any]) -> dict[str, Any]:
    """Phoenix's layout of one span's attributes (see PHOENIX_COLUMNS)."""
    from openinference.semconv import trace

    conventions = sorted(
        (
            getattr(cls, name)
            for cls_name in dir(trace)
            if cls_name.endswith("Attributes")
            for cls in [getattr(trace, cls_name)]
            for name in dir(cls)
            if name.isupper()
        ),
        key=len,
        reverse=True,
    )
    json_keys = ("document.metadata", "metadata", "llm.prompt_template.variables", "tool.parameters")
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if key.endswith(json_keys) and isinstance(value, str):
            value = json.loads(value)
        m = re.match(r"^(retrieval\.documents|reranker\.(?:input|output)_documents)\.(\d+)\.(.+)$", key)
        if m:
            docs = out.setdefault(m.group(1), [])
            while len(docs) <= int(m.group(2)):
                docs.append({})
            docs[int(m.group(2))][m.group(3)] = value
            continue
        if any(key == c for c in conventions):
            out[key] = value
            continue
        parts = []
        rest = key
        while rest:  # split on dots, a semantic convention staying one part (Phoenix's prefix exclusions)
            head = next((c for c in conventions if rest == c or rest.startswith(c + ".")), None)
            head = head or rest.partition(".")[0]
            parts.append(head)
            rest = rest[len(head) + 1 :]
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def phoenix_dataframe(finished: Sequence[ReadableSpan]) -> Any:
    pd = pytest.importorskip("pandas")
    rows = []
    for s in finished:
        status = s.status.status_code.name
        rows.append(
            {
                "name": s.name,
                "span_kind": (s.attributes or {}).get("openinference.span.kind", "UNKNOWN"),
                "parent_id": None if s.parent is None else f"{s.parent.span_id:016x}",
                "start_time": pd.Timestamp(s.start_time, unit="ns", tz="UTC"),
                "end_time": pd.Timestamp(s.end_time, unit="ns", tz="UTC"),
                "status_code": "UNSET" if status == "UNSET" else status,
                "status_message": s.status.description or "",
                "events": [],
                "context.span_id": f"{s.context.span_id:016x}",
                "context.trace_id": f"{s.context.trace_id:032x}",
                **{f"attributes.{k}": v for k, v in phoenix_columns(dict(s.attributes or {})).items()},
            }
        )
    return pd.DataFrame(rows).set_index("context.span_id", drop=False)


def test_phoenix_layout_helper_is_phoenix_s() -> None:
    assert phoenix_columns(PHOENIX_FLAT) == PHOENIX_COLUMNS


def test_every_export_form_reads_back_the_same_run(index: Any, spans: InMemorySpanExporter, tmp_path: Path) -> None:
    engine = index.as_query_engine(
        similarity_top_k=4, node_postprocessors=[StructuredLLMRerank(llm=OverlapLLM(), top_n=3, choice_batch_size=4)]
    )
    cap = both(lambda qid, text: engine.query(text))
    finished = spans.get_finished_spans()
    expected = hits(cap.run)
    expected_first = hits(cap.to_run(stage="retrieved"))

    otlp = tmp_path / "traces.json"
    otlp.write_text(json.dumps(otlp_export(finished)), encoding="utf-8")
    collector = tmp_path / "collector.json"  # the collector's file exporter: one request per line, hex ids
    collector.write_text(
        "\n".join(json.dumps(otlp_export([s], hex_ids=True)) for s in finished) + "\n", encoding="utf-8"
    )
    lines = tmp_path / "spans.jsonl.gz"
    with gzip.open(lines, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(span_dict(s)) for s in finished))
    frame = phoenix_dataframe(finished)
    pytest.importorskip("pyarrow")
    parquet = tmp_path / "spans.parquet"
    frame.to_parquet(parquet)

    forms: dict[str, Any] = {
        "sdk spans": list(finished),
        "exporter": spans,
        "OTLP JSON": otlp,
        "OTLP JSON lines, hex ids": collector,
        "span dicts": [span_dict(s) for s in finished],
        "span JSONL.gz": lines,
        "Phoenix DataFrame": frame,
        "Phoenix Parquet": parquet,
        "Phoenix rows": frame.to_dict(orient="records"),
    }
    for form, source in forms.items():
        run = read_openinference(source, golden=GOLDEN_CORPUS)
        assert hits(run) == expected, form
        assert hits(run.to_stage("retrieved")) == expected_first, form
        assert run.config["summary"]["reranker_spans"] == 5, form


def test_genai_retrieval_spans(spans: InMemorySpanExporter) -> None:
    # no instrumentor here emits the GenAI retrieval attributes: spans are made by hand with the real SDK
    from opentelemetry.sdk.trace import TracerProvider as Provider

    exp = InMemorySpanExporter()
    provider = Provider()
    provider.add_span_processor(SimpleSpanProcessor(exp))
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span("retrieval kb") as span:
        span.set_attribute("gen_ai.operation.name", "retrieval")
        span.set_attribute("gen_ai.retrieval.query.text", "What causes scurvy?")
        span.set_attribute(
            "gen_ai.retrieval.documents",
            json.dumps([{"id": "d0", "score": 0.9, "content": CORPUS["d0"]}, {"id": "d8", "score": 0.7}]),
        )
    with tracer.start_as_current_span("retrieval kb") as span:
        span.set_attribute("gen_ai.operation.name", "retrieval")
        span.set_attribute("gen_ai.retrieval.query.text", "a question nobody asked")
        span.set_attribute("gen_ai.retrieval.documents", "[]")
    run = read_openinference(exp.get_finished_spans(), golden=GOLDEN)
    assert [(h.doc_id, h.score, h.text) for h in run.hits("q1")] == [("d0", 0.9, CORPUS["d0"]), ("d8", 0.7, None)]
    assert run.config["unmatched_queries"] == ["a question nobody asked"]
    summary = run.config["summary"]
    assert summary["unmatched"] == 1 and summary["missing"] == ["q2", "q3", "q4", "q5"]
    assert run.config["golden_missing"] == 4
    bad = [span_dict(s) for s in exp.get_finished_spans()]
    bad[0]["attributes"]["gen_ai.retrieval.documents"] = '{"id": "d0"}'
    with pytest.raises(ParseError, match=r"span [0-9a-f]{16}: expected gen_ai.retrieval.documents to be a JSON list"):
        read_openinference(bad)


# -- 4. doc ids and queries reported as capture reports them -----------------------------------------------------
def test_ids_that_match_nothing_raise_as_capture_does(index: Any, spans: InMemorySpanExporter) -> None:
    retriever = index.as_retriever(similarity_top_k=3)
    cap = both(lambda qid, text: retriever.retrieve(text), id_from="id")
    with pytest.raises(IdMismatchError) as live:
        cap.to_run()
    with pytest.raises(IdMismatchError, match=r"pass id_from='metadata:doc_id'") as read:
        read_openinference(spans, golden=GOLDEN_CORPUS, id_from="id")
    # capture offers ref_doc_id, which spans do not carry; the metadata key gives the same ids
    assert (live.value.suggestion, read.value.suggestion) == ("ref_doc_id", "metadata:doc_id")
    with pytest.raises(InputError, match=r"not LlamaIndex's ref_doc_id.*metadata:KEY"):
        read_openinference(spans, golden=GOLDEN_CORPUS, id_from="ref_doc_id")

    spans.clear()
    cap = both(lambda qid, text: retriever.retrieve(text), id_from="metadata:doc_id")
    assert_same(read_openinference(spans, golden=GOLDEN_CORPUS, id_from="metadata:doc_id"), cap.run)

    chunk_to_doc = {node_id: node.ref_doc_id for node_id, node in index.docstore.docs.items()}
    spans.clear()
    cap = both(lambda qid, text: retriever.retrieve(text), doc_map=chunk_to_doc)
    mapped = read_openinference(spans, golden=GOLDEN_CORPUS, doc_map=chunk_to_doc)
    assert_same(mapped, cap.run)
    assert all(h.doc_id in CORPUS for q in mapped for h in mapped.hits(q))
    assert mapped.duplicates or any(len(mapped.hits(q)) < 3 for q in mapped)  # chunks of one document collapsed


def test_unknown_ids_and_unmatched_texts_are_reported(spans: InMemorySpanExporter) -> None:
    retriever = lc_store(ids=True).as_retriever(search_kwargs={"k": 2})
    retriever.invoke("What causes scurvy?", config={"metadata": {"rankbridge_query_id": "q99"}})
    retriever.invoke("how tall is the eiffel tower")
    retriever.invoke("VITAMIN C, citrus & oranges!")
    with capture(GOLDEN) as cap:
        retriever.invoke("What causes scurvy?", config={"metadata": {"rankbridge_query_id": "q99"}})
        retriever.invoke("how tall is the eiffel tower")
        retriever.invoke("VITAMIN C, citrus & oranges!")
    read = openinference_capture(spans.get_finished_spans()[:3], golden=GOLDEN)
    keys = ("matched_by_id", "matched_by_text", "unmatched", "unknown_ids", "missing")
    assert {k: read.summary()[k] for k in keys} == {k: cap.summary()[k] for k in keys}
    assert read.summary()["unknown_ids"] == ["q99"] and read.summary()["matched_by_text"] == 1
    assert read.unmatched == cap.unmatched == ["What causes scurvy?", "how tall is the eiffel tower"]
    run = read_openinference(spans.get_finished_spans()[:3], golden=GOLDEN)
    assert run.config["golden_missing"] == 4 and run.config["golden_size"] == 5


def test_errors_name_what_was_expected_and_where(tmp_path: Path) -> None:
    good = {"context": {"span_id": "0x0a"}, "attributes": {"openinference.span.kind": "RETRIEVER", "input.value": "x"}}
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(good) + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"spans\.jsonl:3: expected one JSON object per line"):
        read_openinference(path)
    path.write_text(json.dumps(good) + "\n" + json.dumps({"foo": 1}) + "\n", encoding="utf-8")
    with pytest.raises(ParseError, match=r"spans\.jsonl:2: expected an OTLP export .* found keys \['foo'\]"):
        read_openinference(path)
    chain = {"context": {"span_id": "0x0b"}, "attributes": {"openinference.span.kind": "CHAIN"}}
    with pytest.raises(
        InputError, match=r"expected spans with openinference.span.kind = RETRIEVER .* kinds \['CHAIN'\]"
    ):
        read_openinference([chain])
    with pytest.raises(ParseError, match="no such file"):
        read_openinference(tmp_path / "missing.json")
    with pytest.raises(InputError, match="source must be a path"):
        read_openinference(42)
    otlp = {"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "0a" * 8, "attributes": {"k": 1}}]}]}]}
    otlp["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = "oops"
    with pytest.raises(ParseError, match=r"span 0a0a0a0a0a0a0a0a: expected span attributes as a list"):
        read_openinference(otlp)


def test_reranker_span_alone_gives_both_stages() -> None:
    rr = {
        "context": {"trace_id": "0x01", "span_id": "0x0c"},
        "attributes": {
            "openinference.span.kind": "RERANKER",
            "reranker.query": "What causes scurvy?",
            "reranker.input_documents.0.document.id": "d1",
            "reranker.input_documents.0.document.score": 0.2,
            "reranker.input_documents.1.document.id": "d0",
            "reranker.input_documents.1.document.score": 0.1,
            "reranker.output_documents.0.document.id": "d0",
            "reranker.output_documents.0.document.score": 3.0,
        },
    }
    run = read_openinference([rr], golden=GOLDEN)
    assert [(h.doc_id, h.score) for h in run.hits("q1")] == [("d0", 3.0)]
    assert run.to_stage("retrieved").ranking("q1") == ["d1", "d0"]
    assert run.config["summary"]["rerankers_standalone"] == 1
    # the same reranker called inside a retriever span: the retriever's own list is what it returned
    outer = {
        "context": {"trace_id": "0x01", "span_id": "0x0e"},
        "attributes": {"openinference.span.kind": "RETRIEVER", "input.value": "What causes scurvy?",
                       "retrieval.documents.0.document.id": "d0", "retrieval.documents.0.document.score": 3.0},
    }  # fmt: skip
    inner = {**rr, "parent_id": "0x0e"}
    run = read_openinference([inner, outer], golden=GOLDEN)
    assert [(h.doc_id, h.score) for h in run.hits("q1")] == [("d0", 3.0)] and run.stages == {}
    summary = run.config["summary"]
    assert (summary["records"], summary["rerankers_inside_retrievers"], summary["rerankers_standalone"]) == (1, 1, 0)


# -- 2. LangSmith runs (LangChain's own tracer objects, the langsmith schema) == capture ----------------------------
def export(runs: Sequence[Any]) -> list[dict[str, Any]]:
    """Runs as LangSmith's client hands them out (langsmith.schemas.Run, child runs nested), dumped to JSON."""
    from langsmith import schemas

    def as_schema(tree: Any) -> Any:
        fields = {k: getattr(tree, k) for k in schemas.Run.model_fields if hasattr(tree, k) and k != "child_runs"}
        return schemas.Run(**fields, child_runs=[as_schema(c) for c in tree.child_runs])

    return [json.loads(as_schema(r).model_dump_json()) for r in runs]


def test_langsmith_export_equals_capture(tmp_path: Path) -> None:
    pytest.importorskip("langsmith")
    from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

    collector = RunCollectorCallbackHandler()
    retriever = lc_store().as_retriever(search_kwargs={"k": 3})
    chain = {"context": retriever, "question": RunnablePassthrough()} | RunnableLambda(lambda x: len(x["context"]))
    with capture(GOLDEN_CORPUS) as cap:
        for qid, text in QUERIES.items():
            if qid in ("q1", "q2"):
                retriever.invoke(text, config={"callbacks": [collector]})
            else:
                chain.invoke(text, config={"callbacks": [collector], "metadata": {"rankbridge_query_id": qid}})
    runs = export(collector.traced_runs)
    assert [r["run_type"] for r in runs] == ["retriever", "retriever", "chain", "chain", "chain"]  # nested in traces
    as_json = tmp_path / "runs.json"
    as_json.write_text(json.dumps(runs), encoding="utf-8")
    as_jsonl = tmp_path / "runs.jsonl"
    # a flat export (client.list_runs): every run on its own line, children linked by parent_run_id
    flat: list[dict[str, Any]] = []
    stack = json.loads(json.dumps(runs))
    while stack:
        r = stack.pop()
        stack.extend(r.pop("child_runs") or [])
        flat.append(r)
    as_jsonl.write_text("\n".join(json.dumps(r) for r in flat), encoding="utf-8")
    for source in (runs, as_json, as_jsonl, collector.traced_runs):
        run = read_langsmith(source, golden=GOLDEN_CORPUS)
        assert_same(run, cap.run)
        summary = run.config["summary"]
        assert (summary["matched_by_id"], summary["matched_by_text"], summary["retriever_runs"]) == (3, 2, 5)
    assert run.config["id_resolution"]["to"] == "metadata:doc_id"


def test_langsmith_serialised_documents_and_nested_retrievers() -> None:
    pytest.importorskip("langsmith")
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_core.load import dumpd
    from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

    class Reverse(BaseDocumentCompressor):
        def compress_documents(self, documents: Sequence[LCDocument], query: str, callbacks: Any = None) -> Any:
            return list(reversed(documents))[:2]

    collector = RunCollectorCallbackHandler()
    base = lc_store(ids=True).as_retriever(search_kwargs={"k": 3})
    retriever = ContextualCompressionRetriever(base_compressor=Reverse(), base_retriever=base)
    with capture(GOLDEN) as cap:
        for text in QUERIES.values():
            retriever.invoke(text, config={"callbacks": [collector]})
    runs = export(collector.traced_runs)
    for root in runs:  # LangChain's serialised form of a Document ({"lc": 1, "type": "constructor", ...})
        for r in (root, *root["child_runs"]):
            r["outputs"]["documents"] = [dumpd(LCDocument(**d)) for d in r["outputs"]["documents"]]
    assert runs[0]["outputs"]["documents"][0]["lc"] == 1
    run = read_langsmith(runs, golden=GOLDEN)
    assert_same(run, cap.run)
    assert_same(run.to_stage("retrieved"), cap.to_run(stage="retrieved"))
    assert run.ranking("q1") != run.to_stage("retrieved").ranking("q1")[:2]


def test_langsmith_errors_and_reports() -> None:
    ok = {"id": "r1", "run_type": "retriever", "inputs": {"query": "bread yeast"}, "tags": ["rankbridge_query_id=q5"],
          "outputs": {"documents": [{"page_content": CORPUS["d7"], "metadata": {"doc_id": "d7"}}]}}  # fmt: skip
    failed = {"id": "r2", "run_type": "retriever", "inputs": {"query": "What causes scurvy?"},
              "error": "TimeoutError: slow", "outputs": None}  # fmt: skip
    running = {"id": "r3", "run_type": "retriever", "inputs": {"query": "x"}, "outputs": None}
    cap = langsmith_capture([ok, failed, running], golden=GOLDEN, id_from="metadata:doc_id")
    run = cap.to_run()
    assert run.ranking("q5") == ["d7"] and run.errors == {"q1": "retrieval failed: TimeoutError: slow"}
    summary = cap.summary()
    assert (summary["matched_by_id"], summary["matched_by_text"], summary["unfinished"], summary["errors"]) == (
        1,
        1,
        1,
        1,
    )
    with pytest.raises(ParseError, match=r"<runs>\[0\] run r4: expected outputs.documents"):
        read_langsmith([{"id": "r4", "run_type": "retriever", "inputs": {"query": "x"}, "outputs": {"docs": []}}])
    with pytest.raises(InputError, match=r"expected runs with run_type 'retriever'; found 1 runs of types \['chain'\]"):
        read_langsmith([{"id": "c1", "run_type": "chain"}])
    with pytest.raises(ParseError, match=r"expected a LangSmith run"):
        read_langsmith([3])


# -- docs/traces.md and the import cost ----------------------------------------------------------------------------
def test_docs_page_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exporter: Any) -> None:
    # the page instruments its own app: take this module's instrumentation off meanwhile, and put it back after
    monkeypatch.chdir(tmp_path)
    text = DOCS_PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 3
    assert "| `retrieval.documents.{i}.document.id` |" in text
    LlamaIndexInstrumentor().uninstrument()
    LangChainInstrumentor().uninstrument()
    namespace: dict[str, Any] = {"__name__": "traces_doc"}
    try:
        for i, block in enumerate(blocks):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block, f"traces.md python block {i + 1}", "exec"), namespace)
            expected = [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+#\s*(.+)$", block, flags=re.M)]
            assert expected, f"block {i + 1} says nothing it prints"
            printed = out.getvalue().splitlines()
            for want in expected:
                assert any(want in line for line in printed), (i + 1, want, printed)
    finally:
        LlamaIndexInstrumentor().uninstrument()
        LangChainInstrumentor().uninstrument()
        LlamaIndexInstrumentor().instrument(tracer_provider=exporter.provider)
        LangChainInstrumentor().instrument(tracer_provider=exporter.provider)


def test_reading_traces_imports_no_framework() -> None:
    code = (
        "import sys, rankbridge.io.traces\n"
        "heavy = [m for m in ('opentelemetry', 'openinference', 'langsmith', 'pandas', 'llama_index', 'langchain_core')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_queries_as_given_by_golden_list() -> None:
    span = {"context": {"span_id": "0x0d"}, "attributes": {"openinference.span.kind": "RETRIEVER",
            "input.value": json.dumps({"query_bundle": {"query_str": "Bread  YEAST"}}),
            "input.mime_type": "application/json",
            "retrieval.documents.0.document.id": "d7"}}  # fmt: skip
    run = read_openinference([span], golden=[Query("q5", "bread yeast")])
    assert run.ranking("q5") == ["d7"]


# the public signatures of the trace readers, as they were spelled out before the keywords were declared once
_TRACE_CAPTURE_KEYWORDS = {"golden": None, "id_from": None, "doc_map": None, "keep_text": True, "check_ids": True}
_TRACE_READERS: dict[Any, dict[str, Any]] = {
    openinference_capture: {**_TRACE_CAPTURE_KEYWORDS, "name": "openinference"},
    langsmith_capture: {**_TRACE_CAPTURE_KEYWORDS, "name": "langsmith"},
    read_openinference: {**_TRACE_CAPTURE_KEYWORDS, "name": "openinference", "stage": "final", "repeats": "first"},
    read_langsmith: {**_TRACE_CAPTURE_KEYWORDS, "name": "langsmith", "stage": "final", "repeats": "first"},
}


@pytest.mark.parametrize("reader", list(_TRACE_READERS), ids=lambda r: r.__name__)
def test_trace_readers_spell_out_their_keywords_and_refuse_any_other(reader: Any) -> None:
    """help() sees every keyword with its default; a misspelt one is Python's TypeError, before anything is read."""
    import inspect

    params = inspect.signature(reader).parameters
    assert next(iter(params)) == "source" and params["source"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    keyword_only = {n: p.default for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keyword_only == _TRACE_READERS[reader] and len(params) == len(keyword_only) + 1
    with pytest.raises(TypeError, match=rf"^{reader.__name__}\(\) got an unexpected keyword argument 'check_id'$"):
        reader([], check_id=False)


def test_trace_reader_defaults_and_keywords_reach_the_capture() -> None:
    """The defaults left out (name, keep_text, stage) and the keywords given (name, keep_text) are the ones used."""
    span = {
        "context": {"span_id": "0x0b"},
        "attributes": {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.retrieval.query.text": "tea",
            "gen_ai.retrieval.documents": '[{"id": "t1", "score": 0.8, "content": "Green tea"}]',
        },
    }
    run = read_openinference([span])
    qid = run.query_ids()[0]
    assert (run.name, run.config["source"], run.hits(qid)[0].text) == ("openinference", "openinference", "Green tea")
    named = read_openinference([span], name="traced", keep_text=False, golden={"q1": "tea"})
    assert (named.name, named.hits("q1")[0].text) == ("traced", None)
    ls = langsmith_capture(
        [{"id": "r1", "run_type": "retriever", "inputs": {"query": "tea"}, "outputs": {"documents": []}}]
    )
    assert (ls.name, ls.source) == ("langsmith", "langsmith")
