"""Automatic id resolution on apps built the usual way: what it must refuse, and numpy ids it must read.

* A golden set with numeric corpus ids (BEIR-style ``"0".."251"``) and documents that carry no doc id but a
  small-integer metadata field (``metadata={"page": i % 12 + 1}``): ``metadata:page`` "matches" every corpus
  id it names, yet names pages, not documents. Taken automatically it scored ndcg@10 = 0.06 without a word.
  It must be refused as the automatic choice (the texts retrieved are not in the documents it names; without
  a corpus, 12 values over dozens of distinct chunks is a label), and still work when named explicitly.
* Documents built from a DataFrame carry ``np.int64`` doc ids in their metadata: read as their digits, with
  or without ``id_from``, by every path (runner, fast paths, live capture).
* A mixed index (some results without the resolved key) fails with a message naming the fallback list.

The expected lists come from the framework objects themselves (ids read by hand), scored by pytrec_eval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest

import rankbridge as rb
from rankbridge import GoldenSet, IdMismatchError, Qrels, RetrievalError, Run
from rankbridge.demo import TrigramEmbedding, demo_golden_set
from rankbridge.idmatch import check_results, check_run
from rankbridge.retriever import normalize_hits

pytrec_eval = pytest.importorskip("pytrec_eval")
pytest.importorskip("llama_index.core")
pytest.importorskip("llama_index.retrievers.bm25")
pytest.importorskip("langchain_core")
pytest.importorskip("langchain_community.retrievers")
pytest.importorskip("langchain_text_splitters")

from langchain_community.retrievers import BM25Retriever as LCBM25  # noqa: E402
from langchain_core.documents import Document as LCDocument  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from langchain_text_splitters import RecursiveCharacterTextSplitter  # noqa: E402
from llama_index.core import Document as LIDocument  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.retrievers.bm25 import BM25Retriever as LIBM25  # noqa: E402


class LocalEmbeddings(TrigramEmbedding, Embeddings):  # type: ignore[misc]
    """A deterministic local embedding (no download) standing in for the app's model."""


def numeric(with_corpus: bool = True) -> GoldenSet:
    """The shipped golden set with BEIR-style numeric corpus ids ``"0".."251"`` (30 questions)."""
    full = demo_golden_set()
    assert full.corpus is not None
    num = {d: str(i) for i, d in enumerate(full.corpus)}
    queries = full.queries[:30]
    qrels = Qrels({q.id: {num[d]: label for d, label in full.qrels[q.id].items()} for q in queries})
    corpus = {num[d]: doc for d, doc in full.corpus.items()} if with_corpus else None
    return GoldenSet(queries, qrels, corpus=corpus, name="numeric")


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    return numeric()


@pytest.fixture(scope="module")
def texts(golden: GoldenSet) -> list[str]:
    assert golden.corpus is not None
    return [golden.corpus[str(i)]["text"] for i in range(len(golden.corpus))]


def li_bm25(documents: list[Any], k: int = 10) -> Any:
    nodes = SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents(documents)
    assert len(nodes) > len(documents)  # chunks: UUID node ids
    return LIBM25.from_defaults(nodes=nodes, similarity_top_k=k)


def lc_chunks(documents: list[Any]) -> list[Any]:
    chunks = RecursiveCharacterTextSplitter(chunk_size=120, chunk_overlap=0).split_documents(documents)
    assert len(chunks) > len(documents) and all(c.id is None for c in chunks)
    return chunks


def first_seen(ids: Iterable[str]) -> list[str]:
    """Ids in rank order, a document listed once (its first chunk's place), as a document judgment means."""
    return list(dict.fromkeys(ids))


def reference(golden: GoldenSet, lists: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """pytrec_eval's ndcg@10 and recall@10 means of ranked lists over every question of ``golden``."""
    qrels = {q.id: {d: int(v) for d, v in golden.qrels[q.id].items()} for q in golden.queries}
    run = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} for q, ids in lists.items() if ids}
    per = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in run}, {"ndcg_cut.10", "recall.10"}).evaluate(run)
    n = len(golden.queries)
    return {
        "ndcg@10": sum(per[q]["ndcg_cut_10"] for q in run) / n,
        "recall@10": sum(per[q]["recall_10"] for q in run) / n,
    }


def assert_scores(golden: GoldenSet, run: Run, lists: Mapping[str, Sequence[str]]) -> None:
    for q in golden.queries:
        assert list(run.ranking(q.id)) == list(lists[q.id]), q.id
    got = rb.evaluate(golden, run, ["ndcg@10", "recall@10"]).mean
    expected = reference(golden, lists)
    assert got == pytest.approx(expected, abs=1e-12)
    assert expected["ndcg@10"] > 0.1  # a list that scores nothing could not tell a right number from a wrong one


def direct_lists(
    golden: GoldenSet, call: Callable[[str], list[Any]], key: Callable[[Any], str]
) -> dict[str, list[str]]:
    return {q.id: first_seen(key(r) for r in call(q.text)) for q in golden.queries}


# -- 1. a coincidental small-integer metadata key is no doc id -----------------------------------------------
def test_llamaindex_page_numbers_over_numeric_corpus_ids_are_refused(golden: GoldenSet, texts: list[str]) -> None:
    docs = [LIDocument(text=t, metadata={"page": i % 12 + 1}) for i, t in enumerate(texts)]
    bm25 = li_bm25(docs)
    with pytest.raises(IdMismatchError) as info:
        rb.run_retriever(bm25, golden, progress=False)
    report = info.value.report  # type: ignore[attr-defined]
    assert report.status == "mismatch" and report.chosen is None and info.value.suggestion is None
    assert report.shares["metadata:page"] == 1.0  # every page number is a corpus id: the coincidence
    assert (
        "metadata:page" in report.refused and "not in the corpus documents it names" in report.refused["metadata:page"]
    )
    message = str(info.value)
    assert "'metadata:page' matches 50 of 50 (100%) but is not taken automatically" in message
    assert "pass id_from='metadata:page' explicitly" in message
    # named explicitly, it is what the user asked for: the pages, as the framework's nodes carry them
    run = rb.run_retriever(bm25, golden, id_from="metadata:page", progress=False)
    pages = direct_lists(golden, bm25.retrieve, lambda n: str(n.node.metadata["page"]))
    assert {q: run.ranking(q) for q in run} == pages
    # and a run of pages handed to evaluate is not "fixed" by a remap to the pages either
    raw = rb.run_retriever(bm25, golden, progress=False, check_ids=False)
    with pytest.raises(IdMismatchError) as ev_info:
        rb.evaluate(golden, raw, ["ndcg@10"])
    assert "remap_ids" not in str(ev_info.value) and ev_info.value.suggestion is None


def test_langchain_page_metadata_over_numeric_corpus_ids_is_refused(golden: GoldenSet, texts: list[str]) -> None:
    docs = [
        LCDocument(page_content=t, metadata={"source": "manual.pdf", "page": i % 12 + 1}) for i, t in enumerate(texts)
    ]
    bm25 = LCBM25.from_documents(lc_chunks(docs), k=10)
    with pytest.raises(IdMismatchError, match=r"'metadata:page' matches .* but is not taken automatically") as info:
        rb.run_retriever(bm25, golden, progress=False)
    assert set(info.value.report.refused) == {"metadata:page"}  # type: ignore[attr-defined]
    with rb.capture(golden) as cap:
        bm25.batch([q.text for q in golden.queries])
    with pytest.raises(IdMismatchError, match="not taken automatically"):
        _ = cap.run  # live capture resolves by the same rule


def test_a_coincidence_that_holds_on_the_probe_queries_is_caught_on_the_whole_run(
    golden: GoldenSet, texts: list[str]
) -> None:
    """Pages 0..11 are the corpus ids of the first 12 passages, the ones the first questions retrieve: the
    probe cannot tell them from ids, the finished run can."""
    docs = [LCDocument(page_content=t, metadata={"page": i % 12}) for i, t in enumerate(texts)]
    bm25 = LCBM25.from_documents(lc_chunks(docs), k=10)
    probe = [d for q in golden.queries[:5] for d in bm25.invoke(q.text)]
    assert check_results(probe, golden).chosen == "metadata:page"  # on those queries, page == corpus id
    with pytest.raises(IdMismatchError) as info:
        rb.run_retriever(bm25, golden, progress=False)
    err = info.value
    assert err.run is not None and err.run.config["id_resolution"]["to"] == "metadata:page"  # type: ignore[attr-defined]
    assert set(err.report.refused) == {"metadata:page"}  # type: ignore[attr-defined]
    assert "pass id_from='metadata:page' explicitly" in str(err)
    explicit = rb.run_retriever(bm25, golden, id_from="metadata:page", progress=False)  # asked for: kept
    assert {q: explicit.ranking(q) for q in explicit} == direct_lists(
        golden, bm25.invoke, lambda d: str(d.metadata["page"])
    )


def test_without_a_corpus_a_key_naming_few_ids_over_many_results_is_refused(texts: list[str]) -> None:
    qrels_only = numeric(with_corpus=False)
    docs = [LIDocument(text=t, metadata={"page": i % 12 + 1}) for i, t in enumerate(texts)]
    with pytest.raises(IdMismatchError) as info:
        rb.run_retriever(li_bm25(docs), qrels_only, progress=False)
    report = info.value.report  # type: ignore[attr-defined]
    assert report.status == "mismatch" and not report.with_corpus
    assert "distinct numbers over" in report.refused["metadata:page"]
    assert "pass id_from='metadata:page' explicitly" in str(info.value)


def test_a_real_document_id_still_resolves_when_few_documents_share_many_chunks(texts: list[str]) -> None:
    """Four long manuals split into many chunks: few distinct ids, but the texts are theirs, so it resolves."""
    manuals = {str(m): {"text": "\n\n".join(texts[m::4])} for m in range(4)}
    full = demo_golden_set()
    queries = full.queries[:30]
    # each question judges the manual that holds its relevant passage (passage i is in manual i % 4)
    num = {d: i for i, d in enumerate(full.corpus or {})}
    qrels = Qrels({q.id: {str(num[d] % 4): 1 for d, v in full.qrels[q.id].items() if v > 0} for q in queries})
    golden = GoldenSet(queries, qrels, corpus=manuals, name="manuals")
    docs = [
        LCDocument(page_content=m["text"], metadata={"manual": np.int64(i)}) for i, m in enumerate(manuals.values())
    ]
    bm25 = LCBM25.from_documents(lc_chunks(docs), k=10)
    run = rb.run_retriever(bm25, golden, progress=False)
    assert run.config["id_from"] == "metadata:manual"
    lists = {q.id: first_seen(str(d.metadata["manual"]) for d in bm25.invoke(q.text)) for q in queries}
    assert {q: run.ranking(q) for q in run} == lists
    # without the manuals' texts, nothing tells these 4 ids from page labels: refused, with what to pass
    bare = GoldenSet(queries, qrels, name="manuals-qrels")
    with pytest.raises(IdMismatchError, match=r"pass id_from='metadata:manual' explicitly"):
        rb.run_retriever(bm25, bare, progress=False)
    assert (
        rb.run_retriever(bm25, bare, id_from="metadata:manual", progress=False).ranking(queries[0].id)
        == lists[queries[0].id]
    )


def test_a_refused_key_tied_with_a_real_id_stays_ambiguous(golden: GoldenSet, texts: list[str]) -> None:
    """Documents with the corpus id *and* a page: two sources match with different ids, the user settles it."""
    docs = [LIDocument(text=t, doc_id=str(i), metadata={"page": i % 12 + 1}) for i, t in enumerate(texts)]
    results = [n for q in golden.queries[:5] for n in li_bm25(docs).retrieve(q.text)]
    report = check_results(results, golden)
    assert report.status == "ambiguous" and report.chosen is None
    assert set(report.tied) == {"ref_doc_id", "metadata:page"} and set(report.refused) == {"metadata:page"}
    assert "'metadata:page' looks like no id: the texts of" in report.message()


# -- 2. numpy integer ids, as DataFrames hand them out -------------------------------------------------------
def frame_documents(texts: list[str], make: Callable[[str, Any], Any]) -> list[Any]:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"doc_id": range(len(texts)), "text": texts})
    ids = df["doc_id"].to_numpy()
    assert isinstance(ids[0], np.int64)
    return [make(text, ids[i]) for i, text in enumerate(df["text"])]


def test_langchain_documents_from_a_dataframe_with_numpy_ids(golden: GoldenSet, texts: list[str]) -> None:
    docs = frame_documents(texts, lambda t, i: LCDocument(page_content=t, metadata={"doc_id": i}))
    store = InMemoryVectorStore(LocalEmbeddings(dim=256))
    store.add_documents(lc_chunks(docs))
    retriever = store.as_retriever(search_kwargs={"k": 8})
    lists = direct_lists(golden, retriever.invoke, lambda d: str(int(d.metadata["doc_id"])))
    auto = rb.run_retriever(retriever, golden, progress=False)
    assert auto.config["id_from"] == "metadata:doc_id"
    assert_scores(golden, auto, lists)
    assert_scores(golden, rb.run_retriever(retriever, golden, id_from="metadata:doc_id", progress=False), lists)
    with rb.capture(golden) as cap:
        retriever.batch([q.text for q in golden.queries], config={"max_concurrency": 4})
    assert_scores(golden, cap.run, lists)


def test_llamaindex_nodes_with_numpy_ids_from_a_function(golden: GoldenSet, texts: list[str]) -> None:
    """LlamaIndex's own docstores refuse ``np.int64`` metadata (pydantic cannot serialise it); nodes an app
    builds itself and returns from a function keep it."""
    from llama_index.core.schema import NodeWithScore, TextNode

    nodes = frame_documents(texts, lambda t, i: TextNode(text=t, metadata={"doc_id": i}))
    bm25 = li_bm25([LIDocument(text=t, doc_id=str(i)) for i, t in enumerate(texts)])

    def search(query: str, k: int) -> list[Any]:  # the app's ranking, handed back as its own nodes
        return [NodeWithScore(node=nodes[int(n.node.ref_doc_id)], score=n.score) for n in bm25.retrieve(query)][:k]

    lists = direct_lists(golden, lambda q: search(q, 10), lambda n: str(int(n.node.metadata["doc_id"])))
    assert_scores(golden, rb.run_retriever(search, golden, k=10, progress=False), lists)
    assert_scores(golden, rb.run_retriever(search, golden, k=10, id_from="metadata:doc_id", progress=False), lists)


def test_plain_results_with_numpy_ids_read_as_their_digits() -> None:
    as_ints = [{"id": 3, "score": 1.0}, {"id": 11, "score": 0.5}]
    as_numpy = [{"id": np.int64(3), "score": 1.0}, {"id": np.int32(11), "score": 0.5}]
    assert normalize_hits(as_numpy, k=5) == normalize_hits(as_ints, k=5)
    assert [h.doc_id for h in normalize_hits([np.int64(3), np.uint16(4)], k=5)[0]] == ["3", "4"]
    meta = [{"id": "c1", "metadata": {"doc_id": np.int64(7)}}]
    assert normalize_hits(meta, k=5, id_from="metadata:doc_id")[0][0].doc_id == "7"
    for odd in (np.bool_(True), np.float64(7.0)):  # not integers: refused by name, never guessed
        with pytest.raises(RetrievalError, match="expected a str id"):
            normalize_hits([{"id": "c1", "metadata": {"doc_id": odd}}], k=5, id_from="metadata:doc_id")
    # a finished run whose hits carry numpy ids in metadata: the check reads them too
    qrels = {f"q{i}": {str(i): 1} for i in range(30)}
    run = Run.from_ranked({f"q{i}": [rb.Hit(f"uuid-{i}", metadata={"doc_id": np.int64(i)})] for i in range(30)})
    report = check_run(run, qrels)
    assert report.status == "resolved" and report.chosen == "metadata:doc_id"


# -- 3. a mixed index: the message names the fallback list ---------------------------------------------------
def test_a_mixed_index_names_the_fallback_list(golden: GoldenSet, texts: list[str]) -> None:
    docs = [LCDocument(page_content=t, metadata={"doc_id": str(i)}) for i, t in enumerate(texts)]
    # a few FAQ pages the golden set does not know, without a doc_id
    extra = [
        LCDocument(page_content=f"{q.text} (see the FAQ)", metadata={"source": f"faq-{i}"})
        for i, q in enumerate(golden.queries[5::3])
    ]
    store = InMemoryVectorStore(LocalEmbeddings(dim=256))
    store.add_documents([*lc_chunks(docs), *extra])
    retriever = store.as_retriever(search_kwargs={"k": 6})
    with pytest.raises(RetrievalError) as info:
        rb.run_retriever(retriever, golden, progress=False, retries=0)
    message = str(info.value)
    assert "has no doc id from 'metadata:doc_id'" in message
    assert "pass id_from=['metadata:doc_id', 'metadata:source']" in message
    assert "e.g. 'metadata:doc_id'" not in message  # the source already in use is not suggested again
    spec = ["metadata:doc_id", "metadata:source"]
    lists = direct_lists(golden, retriever.invoke, lambda d: d.metadata.get("doc_id") or d.metadata["source"])
    assert_scores(golden, rb.run_retriever(retriever, golden, id_from=spec, progress=False), lists)
