"""PubMedQA end to end: BM25 retrieval, answers from a scripted generator, RAGAS scoring, one Evaluation.

Data: ../shared/data/pubmedqa (SOURCES.md section 4): 500 PubMedQA PQA-L test questions in BEIR layout
(one passage per abstract section; a question is relevant to every section of its own abstract), plus
``rag.jsonl`` with the reference answer (the abstract's conclusion) and reference context ids. Twenty
questions keep the test quick; retrieval runs over the whole 1,689-passage corpus.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rankbridge as rb
from rankbridge import GoldenSet, Hit, Qrels, Query, Run

pytest.importorskip("ragas", reason="needs the ragas extra: pip install 'rankbridge[ragas]'")
pytest.importorskip("langchain_core", reason="the scripted chat model is a LangChain BaseChatModel")

import ragas_fakes as fakes
from rankbridge.integrations import ragas as rr
from rankbridge.integrations.answers import generate_answers

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pubmedqa"
N_QUESTIONS = 20
DEPTH = 5

pytestmark = pytest.mark.skipif(
    not (DATA / "rag.jsonl").exists() or not (DATA / "qrels" / "test.tsv").exists(),
    reason=f"PubMedQA test data not found at {DATA} (see shared/data/SOURCES.md, section 4)",
)


@pytest.fixture(scope="module", autouse=True)
def _ragas_user_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    fakes.isolate_ragas_user_dir(tmp_path_factory.mktemp("ragas_home"))


def tokens(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in fakes.STOP and len(w) > 1]


class BM25:
    """Okapi BM25 (k1=1.2, b=0.75) over a {doc_id: text} corpus; ties broken by doc id."""

    def __init__(self, docs: dict[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        self.texts = docs
        self.tf = {d: Counter(tokens(t)) for d, t in docs.items()}
        self.length = {d: sum(c.values()) for d, c in self.tf.items()}
        self.avg = sum(self.length.values()) / len(self.length)
        df: Counter[str] = Counter()
        for c in self.tf.values():
            df.update(c.keys())
        n = len(docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}
        self.postings: dict[str, list[str]] = {}
        for d, c in self.tf.items():
            for w in c:
                self.postings.setdefault(w, []).append(d)
        self.k1, self.b = k1, b

    def search(self, query: str, k: int) -> list[Hit]:
        scores: dict[str, float] = {}
        for w in set(tokens(query)):
            for d in self.postings.get(w, ()):
                f = self.tf[d][w]
                norm = f + self.k1 * (1 - self.b + self.b * self.length[d] / self.avg)
                scores[d] = scores.get(d, 0.0) + self.idf[w] * f * (self.k1 + 1) / norm
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return [Hit(d, s, self.texts[d]) for d, s in best]


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    full = GoldenSet.from_beir(str(DATA), split="test")
    rows: list[dict[str, Any]] = []
    with open(DATA / "rag.jsonl", encoding="utf-8") as fh:
        for line in fh:
            rows.append(json.loads(line))
            if len(rows) == N_QUESTIONS:
                break
    queries = [
        Query(
            str(r["id"]),
            r["question"],
            category=r["final_decision"],
            reference=r["ground_truth"],
            reference_context_ids=tuple(r["reference_context_ids"]),
        )
        for r in rows
    ]
    qrels = Qrels({q.id: full.qrels[q.id] for q in queries}, name="pubmedqa/test")
    for q in queries:  # the two sources of reference ids agree (SOURCES.md)
        assert sorted(q.reference_context_ids) == sorted(d for d, lab in qrels[q.id].items() if lab >= 1)
    return GoldenSet(queries, qrels, corpus=full.corpus, name="pubmedqa-20")


@pytest.fixture(scope="module")
def bm25(golden: GoldenSet) -> BM25:
    assert golden.corpus is not None
    return BM25({d: doc["text"] for d, doc in golden.corpus.items()})


def test_pubmedqa_retrieval_answers_and_ragas_in_one_evaluation(golden: GoldenSet, bm25: BM25) -> None:
    run = Run.from_ranked({q.id: bm25.search(q.text, DEPTH) for q in golden.queries}, name="bm25")
    n_ret = np.array([len(run.hits(q)) for q in sorted(run)], dtype=float)
    assert np.all((n_ret >= 1) & (n_ret <= DEPTH))  # "Is halofantrine ototoxic?" matches only 3 passages

    script = fakes.Script()
    chat = fakes.make_chat_model(script)

    def pipeline(question: str) -> tuple[str, list[Hit]]:
        hits = bm25.search(question, 3)
        context = "\n".join(h.text or "" for h in hits)
        prompt = f"Context information is below.\n---------------------\n{context}\n---------------------\n"
        prompt += f"Query: {question}\nAnswer: "
        return str(chat.invoke(prompt).content), hits

    answers = generate_answers(pipeline, golden, max_workers=4)
    assert not answers.errors
    assert all(len(a.contexts) == 3 for a in answers.values())

    ranking = rb.evaluate(golden.qrels, run, ["ndcg@10", "recall@5", "P@5", "mrr@10"])
    scored = rr.evaluate_ragas(
        run,
        golden,
        llm=chat,
        embeddings=fakes.make_embeddings(),
        responses=answers,
        query_ids=ranking.query_ids,
        max_workers=8,
    )
    both = rr.join(ranking, scored)

    # one Evaluation: ranking measures and every RAGAS column, per query, aligned
    assert both.query_ids == tuple(sorted(q.id for q in golden.queries))
    assert [str(m) for m in both.measures] == ["ndcg@10", "recall@5", "precision@5", "mrr@10"]
    assert set(both.values) == {str(m) for m in both.measures} | {"ragas." + n for n in rr.RAGAS_METRICS}
    assert both.counts == {name: N_QUESTIONS for name in both.values}  # nothing failed, nothing hidden
    assert not both.failures and not both.skipped
    assert both.context_source == {"hit": N_QUESTIONS}

    # ID-based RAGAS metrics are set precision/recall over the (at most 5) hits: recall@5 exactly, and
    # precision over the hits returned where P@5 divides by 5 (METRICS.md)
    np.testing.assert_allclose(both["ragas.id_based_context_recall"], both["recall@5"], atol=1e-12)
    np.testing.assert_allclose(both["ragas.id_based_context_precision"] * n_ret, both["P@5"] * DEPTH, atol=1e-12)
    # a retrieved passage that *is* a reference passage always matches by string similarity
    assert np.all(both["ragas.non_llm_context_recall"] >= both["ragas.id_based_context_recall"] - 1e-12)

    # the LLM metrics equal the scripted judge's rules applied directly, on every row
    queries = {q.id: q for q in golden.queries}
    for i, qid in enumerate(both.query_ids):
        q, ctx = queries[qid], [h.text or "" for h in run.hits(qid)]
        assert q.reference is not None
        assert both["ragas.context_precision"][i] == pytest.approx(fakes.expected_context_precision(ctx, q.reference))
        assert both["ragas.context_recall"][i] == pytest.approx(fakes.expected_context_recall(ctx, q.reference))
        answer = answers[qid].response
        assert answer is not None
        assert both["ragas.answer_relevancy"][i] == pytest.approx(fakes.expected_answer_relevancy(q.text, answer))
    # the generator quotes its own contexts, and faithfulness is judged against exactly those
    assert np.all(both["ragas.faithfulness"] == 1.0)
    assert any("generated from" in n for n in both.notes)

    # retrieval quality shows in both families: BM25 finds the question's own abstract for most questions
    assert both.mean["mrr@10"] > 0.5
    assert 0.0 < both.mean["ragas.context_recall"] <= 1.0
    report = both.describe()
    assert "ndcg@10" in report and "ragas.faithfulness" in report and "not precision@k" in report
    assert both.usage["prompts"] > 0
