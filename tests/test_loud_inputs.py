"""Suspicious input is loud: a number that rests on it comes with a warning or a note, or is refused.

Each case is one an audit of LangChain apps found returned quietly: an app run that mostly failed, a subset of a
golden set's questions scored against its full qrels, a live capture that mostly failed, cut-offs deeper than
every list, golden questions sharing a text, and a capture summary counting resolve errors the run does not
have. Every case also checks the quiet neighbour (a deep run, a few failures), so that the warning is precise.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import pytest

import rankbridge as rb
from rankbridge import GoldenSet, Qrels, Query, Run
from rankbridge.capture import QueryMatcher
from rankbridge.demo import demo_golden_set
from rankbridge.errors import GoldenSetWarning, RetrievalError, RunCoverageWarning
from rankbridge.evaluate import Evaluation

pytrec_eval = pytest.importorskip("pytrec_eval")
pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def full() -> GoldenSet:
    return demo_golden_set()


@pytest.fixture(scope="module")
def golden(full: GoldenSet) -> GoldenSet:
    return GoldenSet(full.queries[:16], full.qrels, corpus=full.corpus, name="lumen-16")


def _judged_first(golden: GoldenSet, qid: str, depth: int) -> list[str]:
    """A list that puts the query's relevant docs first, then other corpus docs, ``depth`` long."""
    assert golden.corpus is not None
    relevant = [d for d, label in golden.qrels[qid].items() if label > 0]
    others = [d for d in golden.corpus if d not in relevant]
    return [*relevant, *random.Random(qid).sample(others, depth)][:depth]


class Flaky(BaseRetriever):
    """A LangChain retriever whose store is unreachable for the questions in ``down``; else the judged docs."""

    golden: Any
    down: frozenset[str]

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        if query in self.down:
            raise ConnectionError("vector store unreachable")
        qid = next(q.id for q in self.golden.queries if q.text == query)
        return [Document(page_content="...", metadata={"doc_id": d}) for d in _judged_first(self.golden, qid, 5)]


def _capture(golden: GoldenSet, retriever: BaseRetriever) -> Any:
    """A live capture of an app that asks every question and carries on when its store fails."""
    with rb.capture(golden, id_from="metadata:doc_id") as cap:
        for q in golden.queries:
            with contextlib.suppress(ConnectionError):  # the app handles it; the capture records the failure
                retriever.invoke(q.text)
    return cap


def _app(retriever: BaseRetriever) -> Any:
    def answer(question: str) -> str:  # an app f(question): it searches, then answers
        return f"{len(retriever.invoke(question))} passages"

    return answer


# -- 1. an app run that mostly failed stops as a retriever run does -------------------------------------------
def test_run_app_refuses_a_run_that_mostly_failed_as_run_retriever_does(golden: GoldenSet) -> None:
    down = frozenset(q.text for q in golden.queries[2:13])  # 11 of 16
    app = _app(Flaky(golden=golden, down=down))
    pattern = r"11 of 16 queries failed with the same error \(pass keep_going=True.*ConnectionError: vector store"
    with pytest.raises(RetrievalError, match=pattern) as raised:
        rb.run_app(app, golden, id_from="metadata:doc_id")
    assert len(raised.value.run.errors) == 11  # type: ignore[attr-defined]
    with pytest.raises(RetrievalError, match=pattern):
        asyncio.run(rb.arun_app(app, golden, id_from="metadata:doc_id"))
    for kept in (
        rb.run_app(app, golden, id_from="metadata:doc_id", keep_going=True),
        asyncio.run(rb.arun_app(app, golden, id_from="metadata:doc_id", keep_going=True)),
        rb.run_retriever(app, golden, id_from="metadata:doc_id", keep_going=True, progress=False),
    ):
        assert kept.config["failures"] == {"error": 11} and len(kept.answers) == 5
    with pytest.raises(RetrievalError, match=pattern):  # run_retriever hands the app to run_app: the same stop
        rb.run_retriever(app, golden, id_from="metadata:doc_id", progress=False)
    # a few failures are a run's ordinary weather: kept, scored 0
    few = rb.run_app(_app(Flaky(golden=golden, down=frozenset(list(down)[:4]))), golden, id_from="metadata:doc_id")
    assert few.config["failures"] == {"error": 4}


# -- 2. a subset of a golden set's questions against its full qrels ----------------------------------------------
def test_most_queries_missing_from_the_run_warn_with_the_counts_and_the_cause(
    full: GoldenSet, golden: GoldenSet
) -> None:
    run = Run(name="dense")
    for q in golden.queries:
        run.add(q.id, _judged_first(golden, q.id, 10))
    n, asked = len(full.qrels), len(golden.queries)
    pattern = rf"{n - asked} of the {n} queries evaluated are missing from the run 'dense'.*pass the GoldenSet itself"
    with pytest.warns(RunCoverageWarning, match=pattern):
        ev = rb.evaluate(golden.qrels, run, ["ndcg@10"])
    assert len(ev.missing) == n - asked and f"{n - asked} of the {n}" in ev.notes[-1]
    assert f"warning: {n - asked} of the {n} queries" in ev.summary()
    right = rb.evaluate(golden, run, ["ndcg@10"])  # the golden set scores its own questions: quiet
    assert right.num_queries == asked and right.notes == ()
    assert right.mean["ndcg@10"] > 3 * ev.mean["ndcg@10"]  # the zeros the warning is about
    assert rb.evaluate(golden.qrels, run, ["ndcg@10"], missing="skip").notes == ()
    # missing='zero' passed asks for those zeros (trec_eval -c): the summary counts them, quietly
    asked_zero = rb.evaluate(golden.qrels, run, ["ndcg@10"], missing="zero")
    assert asked_zero.notes == () and asked_zero.mean == ev.mean
    # query ids spelled otherwise than the qrels': the warning names one
    renamed = Run.from_ranked({q.id.upper(): run.ranking(q.id) for q in golden.queries}, name="renamed")
    upper = golden.queries[0].id.upper()
    with pytest.warns(RunCoverageWarning, match=rf"{asked} of the run's queries are not in the qrels \(e.g. '{upper}'"):
        rb.evaluate(golden.qrels, renamed, ["ndcg@10"])
    # half missing is not most: quiet
    half = GoldenSet(full.queries[: n // 2], full.qrels, corpus=full.corpus)
    half_run = Run(name="half")
    for q in half.queries:
        half_run.add(q.id, _judged_first(half, q.id, 10))
    assert rb.evaluate(full.qrels, half_run, ["ndcg@10"]).notes == ()


def test_blocks_stay_quiet_and_their_merge_warns_as_the_whole_does(full: GoldenSet, golden: GoldenSet) -> None:
    run = Run(name="dense")
    for q in golden.queries:
        run.add(q.id, _judged_first(golden, q.id, 10))
    with pytest.warns(RunCoverageWarning) as whole_warnings:
        whole = rb.evaluate(full.qrels, run, ["ndcg@10", "P@5"])
    ids = sorted(full.qrels)
    parts = [rb.evaluate(full.qrels, run, ["ndcg@10", "P@5"], queries=ids[i::4]) for i in range(4)]  # quiet
    with pytest.warns(RunCoverageWarning) as merge_warnings:
        merged = Evaluation.merge(parts)
    assert [str(w.message) for w in merge_warnings] == [str(w.message) for w in whole_warnings]
    assert merged.notes == whole.notes and merged.summary() == whole.summary()


# -- 3. a live capture that mostly failed ----------------------------------------------------------------------
def test_a_capture_that_mostly_failed_warns_with_the_counts(golden: GoldenSet) -> None:
    down = frozenset(q.text for q in golden.queries[2:13])
    cap = _capture(golden, Flaky(golden=golden, down=down))
    assert len(cap.run.errors) == 11
    pattern = r"11 of the 16 judged queries of the run 'capture' failed.*over the 5 that worked"
    with pytest.warns(RunCoverageWarning, match=pattern):
        ev = rb.evaluate(golden, cap.run, ["ndcg@10"])  # a capture: missing='skip'
    assert ev.num_queries == 5 and ev.mean["ndcg@10"] == 1.0  # the 5 that worked: perfect lists, loudly partial
    assert any("queries whose retrieval failed" in note for note in ev.notes)
    # 4 of 16 failed: the note alone (the means are over the 12 that worked)
    few = _capture(golden, Flaky(golden=golden, down=frozenset(list(down)[:4])))
    quiet = rb.evaluate(golden, few.run, ["ndcg@10"])
    assert quiet.num_queries == 12 and len(quiet.notes) == 1


# -- 4. cut-offs deeper than every list --------------------------------------------------------------------------
def test_cut_offs_deeper_than_every_list_are_noted_and_scored_as_trec_eval(golden: GoldenSet) -> None:
    shallow, deep, four = Run(name="top2"), Run(name="mixed"), Run(name="top4")
    for i, q in enumerate(golden.queries):  # every question has 2 or 3 relevant docs
        shallow.add(q.id, _judged_first(golden, q.id, 2))
        deep.add(q.id, _judged_first(golden, q.id, 12 if i == 0 else 2))  # one list as deep as the cut-off
        four.add(q.id, _judged_first(golden, q.id, 4))
    metrics = ["P@10", "ndcg@10", "recall@10", "mrr@10", "P@2"]
    ev = rb.evaluate(golden, shallow, metrics)  # a note, no warning (pytest turns warnings into errors)
    (note,) = ev.notes
    assert "every list of the run 'top2' is shorter than the cut-off of precision@10, ndcg@10:" in note
    assert "the deepest has 2 hits" in note and "count as non-relevant" in note and note in ev.summary()
    assert "recall" not in note and "mrr" not in note and "precision@2" not in note  # not lowered by short lists
    # nDCG@10 of 4-deep lists: every ideal ranking (3 relevant docs at most) fits in them, so nDCG is not lowered
    assert rb.evaluate(golden, four, ["ndcg@10", "recall@10"]).notes == ()
    (p10,) = rb.evaluate(golden, four, ["ndcg@10", "P@10"]).notes
    assert "cut-off of precision@10: the deepest has 4 hits" in p10
    # the numbers stay trec_eval's
    qrels = {q.id: {d: int(v) for d, v in golden.qrels[q.id].items()} for q in golden.queries}
    scores = {q: {d: float(10 - r) for r, d in enumerate(shallow.ranking(q))} for q in qrels}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"P.10", "ndcg_cut.10"}).evaluate(scores)
    for ours, theirs in (("precision@10", "P_10"), ("ndcg@10", "ndcg_cut_10")):
        assert ev.mean[ours] == pytest.approx(sum(ref[q][theirs] for q in qrels) / len(qrels), abs=1e-12)
    assert rb.evaluate(golden, deep, metrics).notes == ()  # a deep run with short lists stays quiet


# -- 5. golden questions sharing a text ------------------------------------------------------------------------
def test_golden_questions_with_one_text_warn_naming_text_and_ids() -> None:
    queries = [Query("q1", "What is scurvy?"), Query("q2", "Who found it?"), Query("q3", "what is  SCURVY")]
    golden = GoldenSet(queries, Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}))
    pattern = (
        r"1 question text\(s\) of the golden set belong to more than one query id "
        r"\('What is scurvy\?': 'q1', 'q3'\)"
    )
    with pytest.warns(GoldenSetWarning, match=pattern):
        matcher = QueryMatcher(golden)
    assert matcher.ambiguous and matcher.match("what is scurvy?", None) == ("q1", "text")
    with pytest.warns(GoldenSetWarning, match=pattern):
        rb.capture(golden)
    QueryMatcher({"q1": "What is scurvy?", "q2": "Who found it?"})  # distinct texts: quiet


# -- 6. the capture summary counts what cap.run has ---------------------------------------------------------------
def test_summary_resolve_errors_count_under_the_id_source_the_run_uses(golden: GoldenSet) -> None:
    class NoIds(BaseRetriever):  # Documents without .id (as a compressor returns them), the corpus id in metadata
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            qid = next(q.id for q in golden.queries if q.text == query)
            return [Document(page_content="...", metadata={"doc_id": d}) for d in _judged_first(golden, qid, 3)]

    with rb.capture(golden) as cap:
        for q in golden.queries:
            NoIds().invoke(q.text)
    run, summary = cap.run, cap.summary()
    assert run.config["id_from"] == "metadata:doc_id" and run.errors == {}
    assert summary["id_check"]["action"] == "resolved" and summary["resolve_errors"] == len(run.errors) == 0
