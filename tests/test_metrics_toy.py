"""Hand-worked toy cases for every metric, the edge cases of shared/METRICS.md, and registry invariants.

Every expected value is derived by hand in the comment above it; the formulas in the assertions repeat that
arithmetic with ``math`` and never call rankbridge.
"""

from __future__ import annotations

import math
import random
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankbridge import Evaluation, Hit, InputError, Qrels, Run, evaluate
from rankbridge.errors import RunCoverageWarning
from rankbridge.metrics.measures import MEASURES, Measure, parse_measure

# Random runs may retrieve no judged doc at all: that is what these tests explore, not an id mismatch.
pytestmark = pytest.mark.filterwarnings("ignore::rankbridge.evaluate.IdMismatchWarning")


def lg(x: float) -> float:
    return math.log2(x)


def one(ev: Evaluation, metric: str, qid: str = "q") -> float:
    return ev.per_query[str(parse_measure(metric))][qid]


# --------------------------------------------------------------------------------------------------
# One graded query, every metric by hand
# --------------------------------------------------------------------------------------------------
#
# qrels: a=3, b=2, c=1, d=0, e=-1        R (label >= 1) = {a, b, c}, |R| = 3; R(rel=2) = {a, b}
# ranked list, with labels:
#   rank 1  d   0
#   rank 2  c   1
#   rank 3  x   unjudged (0)
#   rank 4  a   3
#   rank 5  e   -1 (non-relevant, gain 0)
#   rank 6  b   2
TOY_QRELS = {"q": {"a": 3, "b": 2, "c": 1, "d": 0, "e": -1}}
TOY_RANKING = ["d", "c", "x", "a", "e", "b"]
TOY_EXPECTED = {
    # first relevant within the top k
    "hit_rate@1": 0.0,
    "hit_rate@2": 1.0,
    "hit_rate@3(rel=2)": 0.0,  # a (label 3) is at rank 4
    "hit_rate@4(rel=2)": 1.0,
    # 1 / rank of the first relevant: c at rank 2; with rel=2, a at rank 4
    "mrr": 1 / 2,
    "mrr@1": 0.0,
    "mrr@3": 1 / 2,
    "mrr(rel=2)": 1 / 4,
    "mrr@3(rel=2)": 0.0,
    # |R ∩ L_k| / k; the list has 6 items, so @10 is padded with non-relevant: 3/10
    "precision@1": 0.0,
    "precision@2": 1 / 2,
    "precision@4": 2 / 4,
    "precision@6": 3 / 6,
    "precision@10": 3 / 10,
    "precision@4(rel=2)": 1 / 4,
    "precision@6(rel=2)": 2 / 6,
    # |R ∩ L_k| / |R|
    "recall@2": 1 / 3,
    "recall@4": 2 / 3,
    "recall@6": 3 / 3,
    "recall@4(rel=2)": 1 / 2,
    # AP = (P@2 + P@4 + P@6) / |R| = (1/2 + 2/4 + 3/6) / 3 = 0.5
    "map": (1 / 2 + 2 / 4 + 3 / 6) / 3,
    # AP@4 = (P@2 + P@4) / |R| = (1/2 + 2/4) / 3 = 1/3 (divided by |R|, not min(k, |R|))
    "map@4": (1 / 2 + 2 / 4) / 3,
    # rel=2: relevant at ranks 4 (a) and 6 (b): (1/4 + 2/6) / 2
    "map(rel=2)": (1 / 4 + 2 / 6) / 2,
    # precision at rank |R| = 3: only c in {d, c, x}; with rel=2 |R| = 2 and {d, c} holds neither a nor b
    "r_precision": 1 / 3,
    "r_precision(rel=2)": 0.0,
    # DCG: c (1) at rank 2, a (3) at rank 4, b (2) at rank 6; e (-1) gains 0
    #   DCG = 1/log2(3) + 3/log2(5) + 2/log2(7)
    # IDCG over positive qrels labels sorted (3, 2, 1): 3/log2(2) + 2/log2(3) + 1/log2(4)
    "ndcg": (1 / lg(3) + 3 / lg(5) + 2 / lg(7)) / (3 + 2 / lg(3) + 1 / 2),
    # cut at 4: DCG@4 = 1/log2(3) + 3/log2(5); IDCG@4 has only the 3 positive labels
    "ndcg@4": (1 / lg(3) + 3 / lg(5)) / (3 + 2 / lg(3) + 1 / 2),
    # cut at 2: DCG@2 = 1/log2(3); IDCG@2 = 3 + 2/log2(3)
    "ndcg@2": (1 / lg(3)) / (3 + 2 / lg(3)),
    # nothing relevant at rank 1
    "ndcg@1": 0.0,
    # exponential gain 2^l - 1: c -> 1, a -> 7, b -> 3
    #   DCG@4 = 1/log2(3) + 7/log2(5); IDCG@4 = 7 + 3/log2(3) + 1/log2(4)
    "ndcg_exp@4": (1 / lg(3) + 7 / lg(5)) / (7 + 3 / lg(3) + 1 / 2),
    "ndcg_exp": (1 / lg(3) + 7 / lg(5) + 3 / lg(7)) / (7 + 3 / lg(3) + 1 / 2),
    # unnormalised DCG
    "dcg@1": 0.0,
    "dcg@4": 1 / lg(3) + 3 / lg(5),
    "dcg@10": 1 / lg(3) + 3 / lg(5) + 2 / lg(7),
    "dcg_exp@4": 1 / lg(3) + 7 / lg(5),
    # judged share of the top k: top 4 = d, c, x, a -> 3 judged; top 10 holds d, c, a, e, b -> 5/10
    "judged@4": 3 / 4,
    "judged@10": 5 / 10,
    "judged@1": 1.0,
    # ranx hits@k: relevant docs in the top k (c, a in the top 4; a alone with rel=2)
    "hits@4": 2.0,
    "hits@4(rel=2)": 1.0,
    "hits@10": 3.0,
    # f1@k = 2PR / (P + R): top 4 has P = 2/4, R = 2/3 -> 4/7; rel=2: P = 1/4, R = 1/2 -> 1/3
    "f1@4": 4 / 7,
    "f1@4(rel=2)": 1 / 3,
    # set measures over the whole list of 6: P = 3/6, R = 3/3; rel=2: P = 2/6, R = 2/2
    "set_precision": 3 / 6,
    "set_precision(rel=2)": 2 / 6,
    "set_recall": 1.0,
    "set_recall(rel=2)": 1.0,
    "set_f1": 2 / 3,
    "set_f1(rel=2)": 1 / 2,
    # bpref: judged non-relevant are d (rel=1; e's negative label is left out, as in trec_eval) and d, c
    # (rel=2); every relevant doc has all of them above it, so every term is 1 - 1 = 0
    "bpref": 0.0,
    "bpref(rel=2)": 0.0,
    # counts
    "num_ret": 6.0,
    "num_rel": 3.0,
    "num_rel(rel=2)": 2.0,
    "num_rel(rel=3)": 1.0,
    "num_rel_ret": 3.0,
    "num_rel_ret(rel=3)": 1.0,
}


def test_toy_expectations_cover_every_registry_measure() -> None:
    assert {parse_measure(m).name for m in TOY_EXPECTED} == set(MEASURES)


@pytest.mark.parametrize("metric", list(TOY_EXPECTED))
def test_toy_graded_query(metric: str) -> None:
    ev = evaluate(TOY_QRELS, {"q": TOY_RANKING}, [metric])
    assert one(ev, metric) == pytest.approx(TOY_EXPECTED[metric], abs=1e-12)


def test_toy_numbers_spelled_out() -> None:
    """A few of the values above as decimals, to catch a wrong formula in the table itself."""
    ev = evaluate(TOY_QRELS, {"q": TOY_RANKING}, ["ndcg", "ndcg@4", "dcg@4", "map(rel=2)", "ndcg_exp@4"])
    assert ev.mean["ndcg"] == pytest.approx(0.553434, abs=1e-6)
    assert ev.mean["ndcg@4"] == pytest.approx(0.403825, abs=1e-6)
    assert ev.mean["dcg@4"] == pytest.approx(1.922959, abs=1e-6)
    assert ev.mean["map(rel=2)"] == pytest.approx(0.291667, abs=1e-6)
    assert ev.mean["ndcg_exp@4"] == pytest.approx(0.388135, abs=1e-6)


def test_dcg_on_a_zero_to_three_scale() -> None:
    # The Databricks headline: labels 0..3 from a judge, linear gain, unnormalised.
    # ranking p(3) q(2) r(3) s(0) t(1)
    #   dcg@3 = 3/log2(2) + 2/log2(3) + 3/log2(4) = 3 + 1.261860 + 1.5 = 5.761860
    #   dcg@5 = dcg@3 + 0/log2(5) + 1/log2(6)    = 5.761860 + 0.386853 = 6.148713
    # ideal order 3, 3, 2, 1: idcg@5 = 3 + 3/log2(3) + 2/log2(4) + 1/log2(5) = 3 + 1.892789 + 1 + 0.430677
    qrels = {"q": {"p": 3, "q": 2, "r": 3, "s": 0, "t": 1}}
    ev = evaluate(qrels, {"q": ["p", "q", "r", "s", "t"]}, ["dcg@3", "dcg@5", "ndcg@5", "dcg_exp@3"])
    assert one(ev, "dcg@3") == pytest.approx(3 + 2 / lg(3) + 3 / 2, abs=1e-12)
    assert one(ev, "dcg@3") == pytest.approx(5.761860, abs=1e-6)
    assert one(ev, "dcg@5") == pytest.approx(6.148713, abs=1e-6)
    assert one(ev, "ndcg@5") == pytest.approx(6.148713 / (3 + 3 / lg(3) + 2 / 2 + 1 / lg(5)), abs=1e-6)
    # exponential gain: 7/1 + 3/log2(3) + 7/2
    assert one(ev, "dcg_exp@3") == pytest.approx(7 + 3 / lg(3) + 7 / 2, abs=1e-12)


def test_threshold_for_precision_and_mrr_like_databricks() -> None:
    # labels along the list: 1, 0, 2, 3, 1 -> rel=1 counts 4 of the top 5, rel=2 counts 2 of them
    qrels = {"q": {"a": 1, "b": 0, "c": 2, "d": 3, "e": 1}}
    ev = evaluate(qrels, {"q": ["a", "b", "c", "d", "e"]}, ["P@5", "P@5(rel=2)", "mrr", "mrr(rel=2)"])
    assert one(ev, "P@5") == 4 / 5
    assert one(ev, "P@5(rel=2)") == 2 / 5
    assert one(ev, "mrr") == 1.0  # a, label 1, at rank 1
    assert one(ev, "mrr(rel=2)") == 1 / 3  # c, label 2, at rank 3


def test_ndcg_ignores_relevance_of_binary_threshold() -> None:
    """nDCG has graded gains and no threshold: label-1 docs still gain (trec_eval -l does not touch ndcg)."""
    qrels = {"q": {"a": 1, "b": 2}}
    ev = evaluate(qrels, {"q": ["a", "b"]}, ["ndcg@2"])
    # DCG = 1/1 + 2/log2(3); IDCG = 2/1 + 1/log2(3)
    assert one(ev, "ndcg@2") == pytest.approx((1 + 2 / lg(3)) / (2 + 1 / lg(3)), abs=1e-12)


# --------------------------------------------------------------------------------------------------
# Edge cases (shared/METRICS.md)
# --------------------------------------------------------------------------------------------------


def test_ties_broken_by_doc_id_descending() -> None:
    # Three-way tie: trec_eval ranks c, b, a (doc id descending), so a sits at rank 3: RR = 1/3.
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}
    assert Run.from_scores(run).ranking("q") == ["c", "b", "a"]
    ev = evaluate({"q": {"a": 1}}, run, ["mrr", "P@1", "ndcg@3"])
    assert one(ev, "mrr") == 1 / 3
    assert one(ev, "P@1") == 0.0
    assert one(ev, "ndcg@3") == pytest.approx(1 / lg(4), abs=1e-12)  # 1/log2(3+1) / 1


def test_tie_break_is_code_point_order_not_natural_order() -> None:
    # strcmp order: "d2" > "d10" > "d1" and "a" > "B" (lower case sorts after upper case)
    scores = {"d1": 0.5, "d10": 0.5, "d2": 0.5, "B": 0.5, "a": 0.5, "top": 0.9, "low": 0.1}
    assert Run.from_scores({"q": scores}).ranking("q") == ["top", "d2", "d10", "d1", "a", "B", "low"]
    ev = evaluate({"q": {"d10": 1}}, {"q": scores}, ["mrr"])
    assert one(ev, "mrr") == 1 / 3


def test_ranked_run_keeps_retriever_order_despite_scores() -> None:
    # A ranked list is the ranking; its scores (here increasing) are never re-sorted.
    run = Run.from_ranked({"q": [Hit("a", 0.1), Hit("b", 0.9)]})
    ev = evaluate({"q": {"a": 1}}, run, ["mrr"])
    assert one(ev, "mrr") == 1.0
    scored = evaluate({"q": {"a": 1}}, {"q": {"a": 0.1, "b": 0.9}}, ["mrr"])
    assert one(scored, "mrr") == 1 / 2


def test_duplicates_keep_first_and_are_counted() -> None:
    run = Run.from_ranked({"q": ["a", "b", "a", "c", "b"], "p": ["c", "c"]})
    assert run.ranking("q") == ["a", "b", "c"]
    assert run.duplicates == {"q": 2, "p": 1}
    qrels = {"q": {"c": 1}, "p": {"c": 1}}
    ev = evaluate(qrels, run, ["mrr", "num_ret", "P@2"])
    # c is at rank 3 once the repeats are dropped (not rank 4)
    assert one(ev, "mrr") == 1 / 3
    assert one(ev, "num_ret") == 3.0
    # p: c counted once, P@2 = 1/2 (not 2/2)
    assert one(ev, "P@2", "p") == 1 / 2
    assert ev.duplicates == 3
    assert "3 duplicate hits dropped" in ev.summary()


def test_duplicates_from_a_plain_dict_of_lists_are_counted() -> None:
    ev = evaluate({"q": {"a": 1}}, {"q": ["a", "a", "b"]}, ["map", "ndcg", "num_ret"])
    assert one(ev, "map") == 1.0
    assert one(ev, "ndcg") == 1.0  # never above 1 (LlamaIndex would count a twice)
    assert one(ev, "num_ret") == 2.0
    assert ev.duplicates == 1


def test_duplicates_of_queries_outside_the_evaluation_are_not_counted() -> None:
    run = Run.from_ranked({"q": ["a"], "unjudged": ["x", "x"]})
    ev = evaluate({"q": {"a": 1}}, run, ["mrr"])
    assert ev.duplicates == 0
    assert ev.unjudged == ("unjudged",)


def test_query_missing_from_run_zero_vs_skip() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}}
    run = {"q1": {"a": 1.0}}
    zero = evaluate(qrels, run, ["mrr", "num_rel", "num_ret"])  # default: missing="zero" (trec_eval -c)
    assert zero.query_ids == ("q1", "q2")
    assert zero.missing == ("q2",)
    assert zero.per_query["mrr"] == {"q1": 1.0, "q2": 0.0}
    assert zero.per_query["num_rel"]["q2"] == 2.0
    assert zero.per_query["num_ret"]["q2"] == 0.0
    assert zero.mean["mrr"] == 0.5
    assert zero.counts["mrr"] == 2
    assert "1 missing from the run (scored 0)" in zero.summary()

    skip = evaluate(qrels, run, ["mrr"], missing="skip")
    assert skip.query_ids == ("q1",)
    assert skip.missing == ("q2",)  # still reported
    assert skip.mean["mrr"] == 1.0
    assert "skipped" in skip.summary()


def test_query_in_run_not_in_qrels_is_reported_not_evaluated() -> None:
    ev = evaluate({"q1": {"a": 1}}, {"q1": {"a": 1.0}, "q9": {"a": 1.0}}, ["mrr"])
    assert ev.query_ids == ("q1",)
    assert ev.unjudged == ("q9",)
    assert ev.mean["mrr"] == 1.0


def test_query_without_relevant_docs_scores_zero_and_is_listed() -> None:
    qrels = {"none": {"a": 0, "b": -1}, "empty": {}, "ok": {"a": 1}}
    run = {"none": ["a", "b"], "empty": ["a"], "ok": ["a"]}
    measures = ["recall@2", "map", "ndcg", "ndcg@2", "mrr", "r_precision", "P@1", "hit_rate@1", "ndcg_exp"]
    ev = evaluate(qrels, run, measures)
    assert ev.no_relevant == ("empty", "none")
    for m in measures:
        assert one(ev, m, "none") == 0.0, m
        assert one(ev, m, "empty") == 0.0, m
        assert one(ev, m, "ok") == 1.0, m
    judged = evaluate(qrels, run, ["judged@2"])
    assert one(judged, "judged@2", "none") == 1.0  # both retrieved docs are judged (labels 0 and -1)
    assert one(judged, "judged@2", "empty") == 0.0


def test_all_negative_query() -> None:
    # The input that makes pytrec_eval hang on the next evaluator (see test_differential.py): every label
    # negative. Nothing is relevant, no gain is negative.
    qrels = {"q": {"a": -1, "b": -2}}
    ev = evaluate(qrels, {"q": ["a", "b"]}, ["ndcg", "dcg@2", "map", "P@2", "mrr", "judged@2"])
    assert ev.no_relevant == ("q",)
    assert ev.mean == {"ndcg": 0.0, "dcg@2": 0.0, "map": 0.0, "precision@2": 0.0, "mrr": 0.0, "judged@2": 1.0}


def all_measures(ks: tuple[int, ...] = (1, 3, 10)) -> list[Measure]:
    """Every registry measure at each allowed k, with rel=2 too where it takes a threshold."""
    out: list[Measure] = []
    for name, spec in MEASURES.items():
        kk: list[int | None] = [None] if spec.k == "none" else list(ks) if spec.k == "required" else [None, *ks]
        for k in kk:
            out.append(Measure(name, k))
            if spec.takes_rel:
                out.append(Measure(name, k, rel=2))
    return out


@pytest.mark.parametrize("empty", [{}, []], ids=["scores", "ranked"])
def test_empty_retrieval_scores_zero(empty: Any) -> None:
    qrels = {"q": {"a": 2, "b": 1, "c": 0}}
    ev = evaluate(qrels, {"q": empty}, all_measures())
    assert ev.query_ids == ("q",)
    assert ev.missing == ()
    for name, values in ev.per_query.items():
        want = {"num_rel": 2.0, "num_rel(rel=2)": 1.0}.get(name, 0.0)
        assert values["q"] == want, name


def test_empty_run_and_empty_qrels_do_not_raise() -> None:
    with pytest.warns(RunCoverageWarning, match="1 of the 1 queries evaluated are missing"):  # an empty run
        ev = evaluate({"q": {"a": 1}}, {}, ["ndcg@10", "mrr"])
    assert ev.per_query["ndcg@10"] == {"q": 0.0}
    assert ev.missing == ("q",)
    skip = evaluate({"q": {"a": 1}}, {}, ["ndcg@10"], missing="skip")
    assert skip.num_queries == 0
    assert math.isnan(skip.mean["ndcg@10"])  # documented: NaN when no query was evaluated
    none = evaluate({}, {"q": ["a"]}, ["mrr"])
    assert none.num_queries == 0
    assert none.unjudged == ("q",)


def test_negative_labels_are_non_relevant() -> None:
    qrels = {"q": {"a": -1, "b": 1}}
    ev = evaluate(qrels, {"q": ["a", "b"]}, ["mrr", "P@1", "ndcg@2", "dcg@1", "judged@1", "num_rel", "recall@1"])
    assert one(ev, "mrr") == 1 / 2
    assert one(ev, "P@1") == 0.0
    assert one(ev, "recall@1") == 0.0
    # DCG@2 = 0 (not -1) + 1/log2(3); IDCG@2 = 1
    assert one(ev, "ndcg@2") == pytest.approx(1 / lg(3), abs=1e-12)
    assert one(ev, "dcg@1") == 0.0
    assert one(ev, "judged@1") == 1.0  # judged, just not relevant
    assert one(ev, "num_rel") == 1.0


def test_failed_queries_are_counted_and_score_zero() -> None:
    run = Run.from_ranked({"q1": ["a"]})
    run.add_error("q2", "timeout after 30 s")
    run.add("q3", ["c"])
    run.add_error("q3", "connection reset")  # an error replaces earlier results
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    ev = evaluate(qrels, run, ["mrr", "num_ret", "num_rel"])
    assert ev.failed == ("q2", "q3")
    assert ev.missing == ()
    assert ev.query_ids == ("q1", "q2", "q3")
    assert ev.per_query["mrr"] == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    assert ev.per_query["num_ret"]["q3"] == 0.0
    assert ev.per_query["num_rel"]["q2"] == 1.0
    assert ev.mean["mrr"] == pytest.approx(1 / 3, abs=1e-15)
    assert "2 failed (scored 0)" in ev.summary()
    with pytest.warns(RunCoverageWarning, match="2 of the 3 judged queries of the run 'run' failed"):
        skip = evaluate(qrels, run, ["mrr"], missing="skip")  # a mean over the 1 that worked
    assert skip.failed == ("q2", "q3")
    assert skip.query_ids == ("q1",)


def test_single_precision_ties_fall_back_to_doc_id() -> None:
    # 0.1 and the next double above it differ as float64 but round to the same float32.
    lo = 0.1
    hi = float(np.nextafter(lo, 1.0))
    assert hi > lo and np.float32(hi) == np.float32(lo)
    run = {"q": {"a": hi, "b": lo}}
    qrels = {"q": {"b": 1}}
    # float64: a (higher) first, b at rank 2
    assert one(evaluate(qrels, run, ["mrr"]), "mrr") == 1 / 2
    # float32 (trec_eval): a tie, broken by doc id descending: b, a
    assert one(evaluate(qrels, run, ["mrr"], single_precision=True), "mrr") == 1.0
    # and a pair that differs in float32 too is ranked by score either way
    run2 = {"q": {"a": 0.1 + 1e-6, "b": 0.1}}
    assert one(evaluate(qrels, run2, ["mrr"], single_precision=True), "mrr") == 1 / 2


def test_single_precision_with_many_judged_docs() -> None:
    # More than 8 judged docs retrieved takes the searchsorted path of the ranker: 1 + 2**-30 ties 1.0
    # in float32; the ten tied docs order by id descending: d9 ... d0, then the strictly lower ones.
    scores = {f"d{i}": (1.0 + 2**-30 if i % 2 else 1.0) for i in range(10)}
    scores |= {f"low{i}": 0.5 for i in range(3)}
    qrels = {"q": {f"d{i}": (1 if i == 0 else 0) for i in range(10)} | {f"low{i}": 0 for i in range(3)}}
    # float64: odd ids (higher) d9 d7 d5 d3 d1, then even ids d8 d6 d4 d2 d0 -> d0 at rank 10
    assert one(evaluate(qrels, {"q": scores}, ["mrr"]), "mrr") == 1 / 10
    # float32: all ten tie -> d9 d8 ... d0 -> d0 still at rank 10; make d1 the relevant one instead
    qrels["q"]["d0"], qrels["q"]["d1"] = 0, 1
    # float64: d9 d7 d5 d3 d1 -> rank 5; float32: d9 d8 ... d2 d1 -> rank 9
    assert one(evaluate(qrels, {"q": scores}, ["mrr"]), "mrr") == 1 / 5
    assert one(evaluate(qrels, {"q": scores}, ["mrr"], single_precision=True), "mrr") == 1 / 9


def test_evaluation_accessors() -> None:
    ev = evaluate({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": ["a"], "q2": ["x", "b"]}, ["P@1", "mrr"])
    assert ev.metric_names == ["precision@1", "mrr"]
    np.testing.assert_array_equal(ev["P@1"], [1.0, 0.0])
    np.testing.assert_array_equal(ev["recip_rank"], [1.0, 0.5])
    assert ev.mean == {"precision@1": 0.5, "mrr": 0.75}
    assert ev.num_queries == 2


# --------------------------------------------------------------------------------------------------
# The three ways to give a run agree
# --------------------------------------------------------------------------------------------------


def _trec_order(scores: dict[str, float]) -> list[str]:
    """Score descending, then doc id descending, written out independently of rankbridge (two stable sorts)."""
    order = sorted(scores, reverse=True)  # doc id descending
    order.sort(key=lambda d: -scores[d])  # stable: equal scores keep the doc-id order
    return order


def test_trec_order_helper() -> None:
    assert _trec_order({"a": 1.0, "b": 1.0, "ab": 1.0, "z": 0.0, "y": 2.0}) == ["y", "b", "ab", "a", "z"]


def test_dict_scores_ranked_and_hits_agree_on_toy() -> None:
    scores = {"q": {"d": 0.9, "c": 0.8, "x": 0.8, "a": 0.5, "e": 0.1, "b": 0.1}}
    # ties: x > c at 0.8, e > b at 0.1 -> d, x, c, a, e, b
    order = ["d", "x", "c", "a", "e", "b"]
    assert _trec_order(scores["q"]) == order
    ms = all_measures()
    base = evaluate(TOY_QRELS, scores, ms)
    for run in (
        Run.from_scores(scores),
        Run.from_ranked({"q": order}),
        Run.from_ranked({"q": [Hit(d, scores["q"][d]) for d in order]}),
        Run.from_ranked({"q": [(d, scores["q"][d]) for d in order]}),
        {"q": order},
    ):
        ev = evaluate(TOY_QRELS, run, ms)
        assert ev.per_query == base.per_query
    # and mrr is the hand value: c (label 1) at rank 3
    assert one(base, "mrr") == 1 / 3


DOCS = ["a", "b", "c", "d", "e", "f", "g", "h", "B", "d1", "d10", "d2"]


@st.composite
def qrels_and_scores(draw: Any) -> tuple[dict, dict]:
    qids = draw(st.lists(st.sampled_from(["q1", "q2", "q3", "q10"]), min_size=1, max_size=3, unique=True))
    qrels = {q: draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3))) for q in qids}
    scores = {
        q: draw(st.dictionaries(st.sampled_from([*DOCS, "u1", "u2"]), st.sampled_from([0.0, 0.25, 0.5, 1.0, -1.0])))
        for q in qids
    }
    return qrels, scores


@settings(max_examples=60, deadline=None)
@given(qrels_and_scores())
def test_dict_from_scores_from_ranked_agree(case: tuple[dict, dict]) -> None:
    qrels, scores = case
    ms = all_measures()
    base = evaluate(qrels, scores, ms)
    ranked = {q: _trec_order(s) for q, s in scores.items()}
    for run in (Run.from_scores(scores), Run.from_ranked(ranked), ranked):
        ev = evaluate(Qrels(qrels), run, ms)
        assert ev.query_ids == base.query_ids
        assert ev.no_relevant == base.no_relevant
        for name, values in base.values.items():
            np.testing.assert_array_equal(ev.values[name], values, err_msg=name)


# --------------------------------------------------------------------------------------------------
# Registry-driven invariants
# --------------------------------------------------------------------------------------------------

UNBOUNDED = {"dcg", "dcg_exp", "hits", "num_ret", "num_rel", "num_rel_ret"}


def test_unbounded_set_is_in_registry() -> None:
    assert UNBOUNDED.issubset(MEASURES)


@st.composite
def ranked_case(draw: Any) -> tuple[dict[str, int], list[str]]:
    """One query: qrels over a pool, a ranked list of distinct docs (some unjudged)."""
    judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3)))
    ranking = draw(st.lists(st.sampled_from([*DOCS, "u1", "u2", "u3"]), unique=True, max_size=12))
    return judged, ranking


@settings(max_examples=100, deadline=None)
@given(ranked_case(), st.lists(st.sampled_from(DOCS), max_size=4))
def test_normalized_measures_lie_in_unit_interval(case: tuple, repeats: list[str]) -> None:
    judged, ranking = case
    ev = evaluate({"q": judged}, {"q": ranking + repeats}, all_measures())  # repeats: duplicates dropped
    for m in ev.measures:
        value = one(ev, str(m))
        if m.name in UNBOUNDED:
            assert value >= 0.0, m
        else:
            assert 0.0 <= value <= 1.0 + 1e-12, f"{m} = {value}"


def _is_relevant(judged: dict[str, int], doc: str) -> bool:
    return judged.get(doc, 0) >= 1


@settings(max_examples=100, deadline=None)
@given(ranked_case(), st.randoms(use_true_random=False))
def test_permuting_non_relevant_docs_changes_nothing(case: tuple, rnd: random.Random) -> None:
    """Shuffle judged non-relevant docs among their own positions, and unjudged ones among theirs."""
    judged, ranking = case
    permuted = list(ranking)
    for group in (
        [i for i, d in enumerate(ranking) if d in judged and judged[d] <= 0],
        [i for i, d in enumerate(ranking) if d not in judged],
    ):
        docs = [ranking[i] for i in group]
        rnd.shuffle(docs)
        for i, d in zip(group, docs, strict=True):
            permuted[i] = d
    ms = all_measures()
    a = evaluate({"q": judged}, {"q": ranking}, ms)
    b = evaluate({"q": judged}, {"q": permuted}, ms)
    # bpref leaves negative labels out (trec_eval reads -1 and -2 as unjudged), so 0 and -1 differ there
    assert {n: v for n, v in a.per_query.items() if not n.startswith("bpref")} == {
        n: v for n, v in b.per_query.items() if not n.startswith("bpref")
    }


@settings(max_examples=150, deadline=None)
@given(ranked_case(), st.data())
def test_moving_a_relevant_doc_up_never_decreases_any_measure(case: tuple, data: st.DataObject) -> None:
    """Swap a relevant doc with a non-relevant one ranked above it: no measure may go down."""
    judged, ranking = case
    pairs = [
        (i, j)
        for i, d in enumerate(ranking)
        if _is_relevant(judged, d)
        for j in range(i)
        if not _is_relevant(judged, ranking[j])
    ]
    if not pairs:
        return
    i, j = data.draw(st.sampled_from(pairs))
    moved = list(ranking)
    moved[i], moved[j] = moved[j], moved[i]
    ms = all_measures()
    before = evaluate({"q": judged}, {"q": ranking}, ms)
    after = evaluate({"q": judged}, {"q": moved}, ms)
    for name in before.values:
        if name.startswith("bpref(rel="):
            continue  # the doc moved up may be judged non-relevant at rel=2, which bpref (alone) penalises
        assert one(after, name) >= one(before, name) - 1e-12, f"{name}: {one(before, name)} -> {one(after, name)}"
    # and the binary measures the brief names strictly notice a move into the top 1
    if j == 0:
        for name in ("hit_rate@1", "mrr", "precision@1", "recall@1", "ndcg@1", "map"):
            assert one(after, name) > one(before, name), name


# --------------------------------------------------------------------------------------------------
# Regressions: bugs found by this suite and fixed
# --------------------------------------------------------------------------------------------------


def test_mixed_plain_dict_run_never_double_counts_duplicates() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    run = {"q1": {"a": 1.0}, "q2": ["a", "a", "b"]}
    ev = evaluate(qrels, run, ["P@2", "map", "ndcg", "num_ret"])
    # a, b after dropping the repeat: P@2 = 1/2, AP = 1, nDCG = 1, 2 retrieved
    assert ev.per_query["precision@2"]["q2"] == 0.5
    assert ev.per_query["map"]["q2"] == 1.0
    assert ev.per_query["ndcg"]["q2"] == 1.0
    assert ev.per_query["num_ret"]["q2"] == 2.0
    assert ev.duplicates == 1


def test_score_dict_in_a_mixed_plain_dict_run_is_ranked_by_score() -> None:
    qrels = {"q1": {"x": 1}, "q2": {"a": 1}}
    scores = {"b": 0.1, "a": 0.9}  # a ranks first by score; b comes first by insertion order
    ev = evaluate(qrels, {"q1": ["x"], "q2": scores}, ["mrr"])
    assert ev.per_query["mrr"] == {"q1": 1.0, "q2": 1.0}


def test_score_dict_is_refused_where_a_ranked_list_is_expected() -> None:
    with pytest.raises(InputError, match=r"run\['q2'\]: expected hits in rank order .* use Run.from_scores"):
        Run.from_ranked({"q2": {"b": 0.1, "a": 0.9}})  # type: ignore[dict-item]


def test_single_precision_with_scores_beyond_float32_range() -> None:
    # (float)1e300 == (float)1e299 == inf in C: a tie, broken by doc id descending -> b, a -> RR = 1/2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ev = evaluate({"q": {"a": 1}}, {"q": {"a": 1e300, "b": 1e299}}, ["mrr"], single_precision=True)
    assert one(ev, "mrr") == 1 / 2
