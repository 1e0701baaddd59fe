"""Compare two retrievers of a LangChain app -- BM25 and a vector store -- with intervals and significance.

Runs offline with no API key: ``python examples/langchain_app.py`` (needs ``pip install
'rankbridge[langchain]' langchain-community rank-bm25``). ``DeterministicFakeEmbedding`` stands in for
your embedding model: its vectors are stable but carry no meaning, so here the vector store loses -- put
your real embeddings in and the same script tells you by how much, and whether to believe it.
"""

from __future__ import annotations

from langchain_community.retrievers import BM25Retriever
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from vitamins import CORPUS, golden_set  # the examples' shared tiny golden set

import rankbridge as rb


def main() -> None:
    docs = [Document(id=doc_id, page_content=text, metadata={"doc_id": doc_id}) for doc_id, text in CORPUS.items()]

    # Your app's retrievers, unchanged.
    bm25 = BM25Retriever.from_documents(docs, k=5)  # rank-bm25: documents come back without ids or scores
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents(docs)  # a vector store keeps the ids; scores come from similarity_search_with_score

    golden = golden_set()
    runs = {
        # BM25Retriever drops Document.id, so say where the id lives.
        "bm25": rb.run_retriever(bm25, golden, k=5, id_from="metadata:doc_id", name="bm25", progress=False),
        "dense": rb.run_retriever(store, golden, k=5, name="dense", progress=False),
    }
    for run in runs.values():
        print(f"{run.name}: {rb.summarize(run)}")

    result = rb.compare(runs, golden.qrels, ["ndcg@5", "mrr@5", "recall@5"], baseline="bm25")
    print()
    print(result)

    pc = result.paired["ndcg@5"]["dense"]
    verdict = "significant" if pc.significant else "not significant"
    print(
        f"\ndense vs bm25 on ndcg@5: {pc.difference.estimate:+.3f} "
        f"[{pc.difference.low:+.3f}, {pc.difference.high:+.3f}], Holm-adjusted p={pc.pvalue_adjusted:.4f} ({verdict}); "
        f"wins/ties/losses {pc.wins}/{pc.ties}/{pc.losses}"
    )


if __name__ == "__main__":
    main()
