"""The LlamaIndex handler's fast snapshot copies ``ref_doc_id`` exactly as the generic path reads it.

A golden set with doc ids makes a capture keep each result's ``ref_doc_id`` (so that UUID chunk ids can be
resolved to the golden set's documents when the run is read). The span handler reads it from the nodes'
``relationships`` on its fast path; these tests hold it to what ``node.ref_doc_id`` gives, on chunks built
the usual way (``SentenceSplitter``, ``VectorStoreIndex.from_documents`` with a deterministic local
embedding) and on hand-made nodes, and hold a ``capture(golden)`` run to the ``id_from="ref_doc_id"`` one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import pytest

from capture_data import CORPUS, GOLDEN, QUERIES
from rankbridge import GoldenSet

pytest.importorskip("llama_index.core")

from llama_index.core.schema import (
    Document,
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)

from rankbridge.capture import CaptureRecord, Recorder, Snapshot, capture
from rankbridge.frameworks.llamaindex._capture_common import node_scores
from rankbridge.frameworks.llamaindex.capture import _snapshot_text_nodes

pytestmark = [
    pytest.mark.filterwarnings("ignore:The `__fields:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Accessing the 'model_:DeprecationWarning"),
]

GOLDEN_WITH_CORPUS = GoldenSet(GOLDEN.queries, GOLDEN.qrels, corpus={d: {"text": t} for d, t in CORPUS.items()})


def token_vector(text: str, dim: int = 64) -> list[float]:
    vec = [0.0] * dim
    for word in re.findall(r"[a-z]+", text.lower()):
        if len(word) > 2:
            vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A vector index over the shared corpus, chunked by ``SentenceSplitter``; offline (no default models)."""
    from llama_index.core import Settings, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.node_parser import SentenceSplitter

    monkeypatch.setattr(Settings, "_llm", MockLLM(max_tokens=8))
    monkeypatch.setattr(Settings, "_embed_model", None)

    class TokenEmbedding(BaseEmbedding):  # type: ignore[misc]
        def _get_query_embedding(self, query: str) -> list[float]:
            return token_vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return token_vector(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return token_vector(text)

    # long documents (each corpus text three times) in small chunks: several chunks per document
    documents = [Document(text=" ".join([text] * 3), id_=doc) for doc, text in CORPUS.items()]
    yield VectorStoreIndex.from_documents(
        documents,
        transformations=[SentenceSplitter(chunk_size=24, chunk_overlap=4)],
        embed_model=TokenEmbedding(model_name="token-hash"),
    )


def entries(snap: Snapshot) -> list[dict[str, Any]]:
    stride = len(snap.fields)
    return [dict(zip(snap.fields, snap[i : i + stride], strict=True)) for i in range(0, len(snap), stride)]


def generic(nodes: list[Any], **options: Any) -> CaptureRecord:
    """A record of ``nodes`` taken through the generic snapshot (``set_items``), read as ``options`` say."""
    record = CaptureRecord("llamaindex", "q", "generic", "R")
    rec = Recorder(**options)
    record.set_items(nodes, node_scores(nodes), rec)
    rec.add(record)
    return record


def fast(nodes: list[Any], **options: Any) -> CaptureRecord:
    rec = Recorder(**options)
    snap = _snapshot_text_nodes(nodes, rec.snap_text, rec.snap_ref)
    assert snap is not None
    record = CaptureRecord("llamaindex", "q", "fast", "R")
    record.set_snapshot(snap, None)
    rec.add(record)
    return record


@pytest.mark.parametrize("keep_text", [True, False])
def test_fast_snapshot_copies_ref_doc_id_of_split_chunks(index: Any, keep_text: bool) -> None:
    retriever = index.as_retriever(similarity_top_k=6)
    nodes = retriever.retrieve(QUERIES["q1"])
    assert len(nodes) == 6 and all(type(n.node) is TextNode for n in nodes)
    assert len({n.node.ref_doc_id for n in nodes}) < len(nodes)  # chunks of one document among them
    assert all(n.node.node_id not in CORPUS and n.node.ref_doc_id in CORPUS for n in nodes)
    snap = _snapshot_text_nodes(nodes, keep_text, True)
    assert snap is not None and snap.fields[-1] == "score" and "ref_doc_id" in snap.fields
    assert [e["ref_doc_id"] for e in entries(snap)] == [n.node.ref_doc_id for n in nodes]
    assert [e["id"] for e in entries(snap)] == [n.node.node_id for n in nodes]
    assert [e["score"] for e in entries(snap)] == [n.score for n in nodes]
    # read under ref_doc_id, under the node's own id and with the golden set's automatic choice alike
    for options in ({"id_from": "ref_doc_id"}, {"keep_ref": True}, {"id_from": "ref_doc_id", "retain": "objects"}):
        a, b = fast(nodes, keep_text=keep_text, **options), generic(nodes, keep_text=keep_text, **options)
        assert a.retrieved == b.retrieved and a.retrieved, options
        assert a.notes == b.notes
        assert [(type(d).__name__, d.ref_doc_id, s) for d, s in a.results()] == [  # type: ignore[union-attr]
            (type(n.node).__name__, n.node.ref_doc_id, n.score) for n in nodes
        ]


def test_fast_snapshot_ref_of_hand_made_nodes() -> None:
    source = RelatedNodeInfo(node_id="doc-7")
    nodes = [
        NodeWithScore(node=TextNode(text="no source", id_="n0"), score=0.9),
        NodeWithScore(
            node=TextNode(text="sourced", id_="n1", relationships={NodeRelationship.SOURCE: source}), score=0.8
        ),
        NodeWithScore(
            node=TextNode(
                text="next only", id_="n2", relationships={NodeRelationship.NEXT: RelatedNodeInfo(node_id="n3")}
            ),
            score=0.7,
        ),
        NodeWithScore(node=TextNode(text="no score", id_="n3", metadata={"k": "v"}), score=None),
    ]
    snap = _snapshot_text_nodes(nodes, True, True)
    assert snap is not None
    assert (
        [e["ref_doc_id"] for e in entries(snap)]
        == [n.node.ref_doc_id for n in nodes]
        == [
            None,
            "doc-7",
            None,
            None,
        ]
    )
    for options in ({"keep_ref": True}, {"id_from": "ref_doc_id"}, {"id_from": "ref_doc_id", "keep_text": False}):
        a, b = fast(nodes, **options), generic(nodes, **options)
        assert (a.retrieved, a.resolve_error, a.notes) == (b.retrieved, b.resolve_error, b.notes), options
    # a source entry the property would refuse (a list) or may read otherwise (a subclass): the generic path
    listed = TextNode(text="x", id_="n4")
    listed.relationships[NodeRelationship.SOURCE] = [source]
    with pytest.raises(ValueError, match="single RelatedNodeInfo"):
        listed.ref_doc_id  # noqa: B018

    class Info(RelatedNodeInfo):
        pass

    odd = TextNode(text="y", id_="n5", relationships={NodeRelationship.SOURCE: Info(node_id="doc-8")})
    for node in (listed, odd):
        assert _snapshot_text_nodes([NodeWithScore(node=node, score=1.0)], True, True) is None
    assert _snapshot_text_nodes([], True, True) is None
    assert _snapshot_text_nodes([object()], True, True) is None
    assert _snapshot_text_nodes([NodeWithScore(node=Document(text="d", id_="d"), score=1.0)], True, True) is None
    # without ref the snapshot stays as it was
    plain = _snapshot_text_nodes(nodes, True)
    assert plain is not None and plain.fields == ("id", "metadata", "text", "score")


def snapshot_of(cap: Any) -> list[Any]:
    return [r._items for r in cap.records]


def hits_by_query(run: Any) -> dict[str, list[tuple[str, float | None, str | None]]]:
    return {qid: [(h.doc_id, h.score, h.text) for h in run.hits(qid)] for qid in run}


def test_golden_capture_takes_the_fast_path_and_equals_id_from_ref_doc_id(index: Any) -> None:
    engine = index.as_query_engine(similarity_top_k=4)
    retriever = index.as_retriever(similarity_top_k=4)
    runs = {}
    for label, options in (
        ("golden", {}),
        ("explicit", {"id_from": "ref_doc_id"}),
        ("objects", {"retain": "objects"}),
    ):
        with capture(GOLDEN_WITH_CORPUS, frameworks=["llamaindex"], **options) as cap:  # type: ignore[arg-type]
            for text in QUERIES.values():
                engine.query(text)
                retriever.retrieve(text)
        assert cap.recorder.internal_errors == 0, cap.recorder.last_internal_error
        assert len(cap.records) == 2 * len(QUERIES)
        if label != "objects":
            # the handler's own snapshot (score in it), with ref_doc_id: not the generic path's
            assert all(
                type(items) is Snapshot and items.fields[-2:] == ("ref_doc_id", "score") for items in snapshot_of(cap)
            )
        runs[label] = cap
    golden_run = runs["golden"].run
    assert golden_run.config["id_from"] == "ref_doc_id"
    assert golden_run.config["id_resolution"]["auto"] is True
    expected = hits_by_query(runs["explicit"].run)
    assert hits_by_query(golden_run) == expected == hits_by_query(runs["objects"].run)
    assert set(expected) == set(QUERIES) and all(doc in CORPUS for hits in expected.values() for doc, _, _ in hits)
    for stage in ("retrieved", "final"):
        assert hits_by_query(runs["golden"].to_run(stage=stage)) == hits_by_query(runs["explicit"].to_run(stage=stage))
    # record by record, both stages
    for a, b in zip(runs["golden"].records, runs["explicit"].records, strict=True):
        assert a.hits_under(runs["explicit"].recorder.resolve) == b.hits_under(runs["explicit"].recorder.resolve)
