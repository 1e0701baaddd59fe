"""Ranking metrics and RAGAS metrics side by side, per query, from the same run -- no LLM, no network.

RAGAS' ID-based context precision and recall need no model: they compare the ids of the retrieved
contexts with the reference context ids (here: the relevant docs of the qrels). Joined with nDCG and
recall@k they show where the two families agree, and where they do not (RAGAS' ID-based metrics are set
metrics: no rank, no cut-off beyond the list you give them).

Runs offline: ``python examples/ranking_plus_ragas.py`` (needs ``pip install 'rankbridge[ragas]'``).
rankbridge turns ragas' telemetry off (``RAGAS_DO_NOT_TRACK=true``) unless you set it yourself.
"""

from __future__ import annotations

import re

from vitamins import CORPUS, golden_set  # the examples' shared tiny golden set

import rankbridge as rb
from rankbridge.integrations.ragas import evaluate_ragas, join


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2}


def keyword_search(query: str, k: int) -> list[rb.Hit]:
    """The app's retriever: a plain function ranking documents by shared words (any retriever works)."""
    q = _words(query)
    scored = sorted(((len(q & _words(text)), doc_id) for doc_id, text in CORPUS.items()), reverse=True)
    return [rb.Hit(doc_id, float(score), text=CORPUS[doc_id]) for score, doc_id in scored[:k] if score > 0]


def main() -> None:
    golden = golden_set()
    run = rb.run_retriever(keyword_search, golden, k=3, name="keywords", progress=False)

    ranking = rb.evaluate(golden.qrels, run, ["ndcg@3", "precision@3", "recall@3"])
    ragas = evaluate_ragas(
        run, golden, metrics=["id_based_context_precision", "id_based_context_recall"], query_ids=ranking.query_ids
    )
    both = join(ranking, ragas)  # one Evaluation: every downstream tool reads the RAGAS columns alike

    columns = both.metric_names
    short = [c.replace("ragas.id_based_context_", "ragas_id_") for c in columns]
    print("query  " + "  ".join(f"{s:>17}" for s in short))
    for i, qid in enumerate(both.query_ids):
        print(f"{qid:<6} " + "  ".join(f"{both.values[c][i]:>17.3f}" for c in columns))
    print("mean   " + "  ".join(f"{both.mean[c]:>17.3f}" for c in columns))
    print(f"\n{both.summary()}")
    print(
        "\nprecision@3 divides by 3 even when fewer contexts came back; RAGAS' ID-based precision divides by the "
        "number retrieved -- compare them only on full lists."
    )


if __name__ == "__main__":
    main()
