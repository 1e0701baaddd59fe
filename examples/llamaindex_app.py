"""Evaluate the retriever of a LlamaIndex app: BM25 over a small corpus -> run -> metrics with intervals.

Runs offline with no API key: ``python examples/llamaindex_app.py`` (needs ``pip install
'rankbridge[llamaindex]' llama-index-retrievers-bm25``). Swap in your own retriever, index or query engine
and your own golden set; everything else stays the same.
"""

from __future__ import annotations

from llama_index.core.schema import TextNode
from llama_index.retrievers.bm25 import BM25Retriever
from vitamins import CORPUS, QUESTIONS, golden_set  # the examples' shared tiny golden set

import rankbridge as rb
from rankbridge.metrics.stats import confidence_interval


def main() -> None:
    # Your app's retriever, unchanged: LlamaIndex BM25 over nodes whose ids are the corpus ids.
    nodes = [TextNode(id_=doc_id, text=text) for doc_id, text in CORPUS.items()]
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=5)

    golden = golden_set()
    run = rb.run_retriever(retriever, golden, k=5, name="llamaindex-bm25", progress=False)
    print(rb.summarize(run))

    ev = rb.evaluate(golden.qrels, run, ["ndcg@5", "mrr@5", "recall@5", "hit_rate@1"])
    print(f"\n{run.name} on {ev.num_queries} queries ({ev.summary()}):")
    for metric, values in ev.values.items():
        iv = confidence_interval(values, bounds=(0.0, 1.0))
        print(f"  {metric:<11} {iv.estimate:.3f}  95% CI [{iv.low:.3f}, {iv.high:.3f}]")

    worst = sorted(ev.query_ids, key=lambda q: ev.per_query["ndcg@5"][q])[:3]
    print("\nweakest queries (ndcg@5):")
    for qid in worst:
        print(f"  {qid} {QUESTIONS[qid]!r}: {ev.per_query['ndcg@5'][qid]:.3f}  top hits {run.ranking(qid)[:3]}")


if __name__ == "__main__":
    main()
