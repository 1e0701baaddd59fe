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

import rankbridge as rb

# -- a tiny golden set, shipped inline: documents, questions and graded judgments (2 = answers it) ------
CORPUS = {
    "d01": "Scurvy is caused by a lack of vitamin C; sailors on long voyages suffered bleeding gums.",
    "d02": "Citrus fruits such as lemons and limes are rich in vitamin C and kept navy crews free of scurvy.",
    "d03": "Rickets softens the bones of children and results from too little vitamin D or calcium.",
    "d04": "Sunlight lets the skin produce vitamin D, which helps the body absorb calcium.",
    "d05": "Beriberi is a thiamine deficiency, common where polished white rice is the staple food.",
    "d06": "Night blindness is an early sign of vitamin A deficiency; carrots and liver supply vitamin A.",
    "d07": "Iron deficiency anaemia makes people tired because red blood cells carry less oxygen.",
    "d08": "Goitre, a swelling of the thyroid gland, is prevented by adding iodine to table salt.",
    "d09": "Pellagra, caused by a lack of niacin, brings dermatitis, diarrhoea and dementia.",
    "d10": "Folic acid taken before and during pregnancy lowers the risk of neural tube birth defects.",
    "d11": "Vitamin K is needed for blood clotting; newborn babies receive an injection of it.",
    "d12": "Calcium and vitamin D together keep the bones of older adults strong.",
}
QUESTIONS = {
    "q01": "what causes scurvy",
    "q02": "which fruit prevents scurvy",
    "q03": "why do children get rickets",
    "q04": "how does the skin make vitamin D",
    "q05": "deficiency linked to eating white rice",
    "q06": "vitamin A and night blindness",
    "q07": "why is iodine added to salt",
    "q08": "tired because of low iron",
    "q09": "symptoms of niacin deficiency",
    "q10": "supplement in pregnancy against birth defects",
    "q11": "which vitamin helps blood clotting",
    "q12": "keeping bones strong in old age",
}
QRELS = {
    "q01": {"d01": 2, "d02": 1},
    "q02": {"d02": 2, "d01": 1},
    "q03": {"d03": 2, "d04": 1, "d12": 1},
    "q04": {"d04": 2},
    "q05": {"d05": 2},
    "q06": {"d06": 2},
    "q07": {"d08": 2},
    "q08": {"d07": 2},
    "q09": {"d09": 2},
    "q10": {"d10": 2},
    "q11": {"d11": 2},
    "q12": {"d12": 2, "d03": 1},
}


def main() -> None:
    docs = [Document(id=doc_id, page_content=text, metadata={"doc_id": doc_id}) for doc_id, text in CORPUS.items()]

    # Your app's retrievers, unchanged.
    bm25 = BM25Retriever.from_documents(docs, k=5)  # rank-bm25: documents come back without ids or scores
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents(docs)  # a vector store keeps the ids; scores come from similarity_search_with_score

    golden = rb.GoldenSet([rb.Query(q, t) for q, t in QUESTIONS.items()], rb.Qrels(QRELS), name="vitamins")
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
