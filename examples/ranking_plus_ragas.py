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

import rankbridge as rb
from rankbridge.integrations.ragas import evaluate_ragas, join

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


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2}


def keyword_search(query: str, k: int) -> list[rb.Hit]:
    """The app's retriever: a plain function ranking documents by shared words (any retriever works)."""
    q = _words(query)
    scored = sorted(((len(q & _words(text)), doc_id) for doc_id, text in CORPUS.items()), reverse=True)
    return [rb.Hit(doc_id, float(score), text=CORPUS[doc_id]) for score, doc_id in scored[:k] if score > 0]


def main() -> None:
    golden = rb.GoldenSet([rb.Query(q, t) for q, t in QUESTIONS.items()], rb.Qrels(QRELS), name="vitamins")
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
