"""Differential tests: random qrels and runs, rankbridge against pytrec_eval (and ranx where it agrees).

pytrec_eval wraps trec_eval 9.0.x, our reference. It evaluates the queries in both the qrels and the run,
so it is compared with ``missing="skip"``; it stores scores as C floats, so the tie-heavy tests use scores
exactly representable in float32 (multiples of 1/8), and the arbitrary-double test passes
``single_precision=True``.

Two pytrec_eval pitfalls shape the generators:

* A query whose qrels hold only negative labels, evaluated with ``ndcg``, corrupts trec_eval's state: the
  *next* ``RelevanceEvaluator`` built in the process hangs forever (reproduced in isolation: qrels
  ``{"q0": {"d": -1}, "q1": {"d": 3}}``, run ``{"q0": {"d": 0.125}, "q1": {"d": 0.125}}``, measure
  ``{"ndcg"}``, build the evaluator twice). Every generated qrels query therefore gets an extra judged-0 doc
  that no run retrieves when all its labels are negative; that changes no measure. All-negative queries are
  covered without pytrec_eval in test_metrics_toy.py.
* A query with an empty judgment dict is dropped by pytrec_eval (it is "not in the qrels"); rankbridge
  evaluates it as a query with no relevant doc. Generated judgment dicts are never empty.

ranx breaks score ties by numpy order, not doc id, and filters nDCG gains by its relevance threshold, so it
is only used on tie-free runs, with the threshold on binary measures only, through ranx ``Qrels``/``Run``
objects (``evaluate(dict, dict)`` aligns queries by insertion order).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankbridge import Run, evaluate
from rankbridge.metrics.measures import MEASURES, Measure

# Random runs may retrieve no judged doc at all: that is what these tests explore, not an id mismatch.
pytestmark = pytest.mark.filterwarnings("ignore::rankbridge.evaluate.IdMismatchWarning")

KS = (1, 2, 3, 5, 10)
# Ids chosen to collide in the doc-id tie-break: prefixes (d1 < d10 < d2), case (B < a), digits vs
# letters, '#', and a non-ASCII id (strcmp on UTF-8 bytes orders like Python's code points).
DOC_POOL = ("a", "b", "B", "d1", "d10", "d2", "d#1", "10", "9", "é", "zz")
NEVER_RETRIEVED = "judged-only"  # not in DOC_POOL
# Multiples of 1/8: exact in float32, so pytrec_eval's single-precision scores tie exactly where ours do.
EXACT_SCORES = tuple(i / 8 for i in range(-8, 17))
PYTREC_MEASURES = {
    "map",
    "ndcg",
    "recip_rank",
    "Rprec",
    "set_P",
    "set_recall",
    "set_F",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    *(f"{family}.{','.join(map(str, KS))}" for family in ("P", "recall", "map_cut", "ndcg_cut", "success")),
}


def shared_measures(rel: int) -> dict[str, Measure]:
    """trec_eval name -> our Measure for every registry measure trec_eval has, at every K in ``KS``."""
    out: dict[str, Measure] = {}
    for name, spec in MEASURES.items():
        if spec.trec is None:
            continue
        for k in (None, *KS):
            if (k is None and spec.k == "required") or (k is not None and spec.k == "none"):
                continue
            trec = Measure(name, k).trec_name
            if trec is None:  # mrr@k: trec_eval only has it under -M k
                continue
            if trec == "bpref":  # pytrec_eval crashes (segfault) on bpref for some generated inputs; bpref
                continue  # is checked against trec_eval's own outputs in test_trec_conformance.py instead
            out[trec] = Measure(name, k, rel=rel) if spec.takes_rel else Measure(name, k)
    return out


def test_shared_measure_list_is_complete() -> None:
    """The differential test below covers every trec_eval measure we share (12 families, 5 cut-offs)."""
    names = set(shared_measures(1))
    assert names == {"map", "ndcg", "recip_rank", "Rprec", "set_P", "set_recall", "set_F"} | {
        "num_ret",
        "num_rel",
        "num_rel_ret",
    } | {f"{p}_{k}" for p in ("P", "recall", "map_cut", "ndcg_cut", "success") for k in KS}
    assert shared_measures(2)["P_5"] == Measure("precision", 5, rel=2)
    assert shared_measures(2)["ndcg_cut_5"] == Measure("ndcg", 5)


# --------------------------------------------------------------------------------------------------
# generators
# --------------------------------------------------------------------------------------------------

query_ids = st.sampled_from(["q1", "q2", "q10", "2", "Q1", "q#1", "topic-7"])


@st.composite
def evaluation_inputs(draw: Any, scores: st.SearchStrategy[float] | None = None) -> tuple:
    """(qrels, run, rel): a few queries, each judged, retrieved, or both (scores: multiples of 1/8 by default)."""
    if scores is None:
        scores = st.sampled_from(EXACT_SCORES)
    qids = draw(st.lists(query_ids, min_size=1, max_size=5, unique=True))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid in qids:
        where = draw(st.sampled_from(["both", "both", "both", "qrels only", "run only"]))
        if where != "run only":
            judged = draw(st.dictionaries(st.sampled_from(DOC_POOL), st.integers(-2, 3), min_size=1))
            if max(judged.values()) < 0:  # see the module docstring: keeps pytrec_eval from hanging
                judged[NEVER_RETRIEVED] = 0
            qrels[qid] = judged
        if where != "qrels only":
            run[qid] = draw(st.dictionaries(st.sampled_from(DOC_POOL), scores))  # may be empty
    rel = draw(st.sampled_from([1, 2]))
    return qrels, run, rel


@st.composite
def near_tie_scores(draw: Any) -> st.SearchStrategy[float]:
    """A score strategy over a few doubles and neighbours that differ from them only beyond float32."""
    bases = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), min_size=1, max_size=4))
    pool = []
    for b in bases:
        pool += [b, float(np.nextafter(b, math.inf)), b * (1 + 2**-40), float(np.float32(b))]
    return st.sampled_from(pool)


def _pytrec(qrels: dict, run: dict, rel: int) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES, relevance_level=rel)
    return evaluator.evaluate(run)


def _pytrec_value(values: dict[str, float], trec: str, judged: dict[str, int], ranked: dict, rel: int) -> float:
    """pytrec_eval's value, except num_rel of a query whose run dict is empty.

    For a query given an empty ranking (only possible through its API: a TREC file cannot hold a query
    with no lines) pytrec_eval's num_rel is unreliable: 0 or |R| depending on which query it evaluated
    before (``{"q1": {"a": 1, "b": 1}, "q2": {"a": 1}}`` with run ``{"q1": {}, "q2": {"b": 1.0}}`` gives
    num_rel 0 for q1; the same run with its keys in the other order gives 2). trec_eval itself counts the
    judged relevant docs of a query that retrieved nothing (out.test.aqc: ``num_rel 302 77`` for the topic
    missing under ``-c``), and so does rankbridge: that is the value expected here.
    """
    if trec == "num_rel" and not ranked:
        return float(sum(1 for label in judged.values() if label >= rel))
    return values[trec]


def _compare_with_pytrec(qrels: dict, run: dict, rel: int, *, single_precision: bool) -> None:
    theirs = _pytrec(qrels, run, rel)
    mapping = shared_measures(rel)
    ev = evaluate(qrels, run, list(mapping.values()), missing="skip", single_precision=single_precision)
    assert set(ev.query_ids) == set(theirs), "evaluated queries differ from pytrec_eval's (qrels ∩ run)"
    ours = ev.per_query
    for qid, values in theirs.items():
        for trec, measure in mapping.items():
            want, got = _pytrec_value(values, trec, qrels[qid], run[qid], rel), ours[str(measure)][qid]
            assert abs(got - want) <= 1e-9, f"{measure} ({trec}) on {qid}: ours {got!r}, pytrec_eval {want!r}"


# --------------------------------------------------------------------------------------------------
# pytrec_eval
# --------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(evaluation_inputs())
def test_matches_pytrec_eval_with_ties(case: tuple) -> None:
    qrels, run, rel = case
    _compare_with_pytrec(qrels, run, rel, single_precision=False)
    # The same run as a Run object, and as the ranked list its scores imply, gives the same numbers.
    mapping = shared_measures(rel)
    as_dict = evaluate(qrels, run, list(mapping.values()), missing="skip")
    scored = Run.from_scores(run)
    for other in (scored, Run.from_ranked({q: scored.ranking(q) for q in scored})):
        ev = evaluate(qrels, other, list(mapping.values()), missing="skip")
        assert ev.query_ids == as_dict.query_ids
        for name, values in as_dict.values.items():
            np.testing.assert_array_equal(ev.values[name], values, err_msg=name)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_matches_pytrec_eval_on_float32_ties(data: st.DataObject) -> None:
    """Doubles equal as float32 tie in trec_eval; single_precision=True reproduces that exactly."""
    scores = data.draw(near_tie_scores())
    qrels, run, rel = data.draw(evaluation_inputs(scores))
    _compare_with_pytrec(qrels, run, rel, single_precision=True)


@settings(max_examples=100, deadline=None)
@given(evaluation_inputs())
def test_missing_zero_extends_pytrec_eval_with_zeros(case: tuple) -> None:
    """missing="zero" (trec_eval -c): shared queries as pytrec_eval, run-less ones 0 except num_rel."""
    qrels, run, rel = case
    theirs = _pytrec(qrels, run, rel)
    mapping = shared_measures(rel)
    ev = evaluate(qrels, run, list(mapping.values()), missing="zero")
    assert ev.query_ids == tuple(sorted(qrels))
    assert set(ev.missing) == set(qrels) - set(run)
    ours = ev.per_query
    for qid in ev.query_ids:
        for trec, measure in mapping.items():
            got = ours[str(measure)][qid]
            if qid in theirs:
                want = _pytrec_value(theirs[qid], trec, qrels[qid], run[qid], rel)
            elif measure.name == "num_rel":
                want = sum(1 for label in qrels[qid].values() if label >= rel)
            else:
                want = 0.0
            assert abs(got - want) <= 1e-9, f"{measure} on {qid}: ours {got!r}, expected {want!r}"


# --------------------------------------------------------------------------------------------------
# ranx (tie-free inputs only)
# --------------------------------------------------------------------------------------------------


@st.composite
def tie_free_inputs(draw: Any) -> tuple:
    """Every query judged (labels 0..3, at least one relevant) and retrieved, with distinct scores."""
    qids = draw(st.lists(query_ids, min_size=1, max_size=4, unique=True))
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for qid in qids:
        judged = draw(st.dictionaries(st.sampled_from(DOC_POOL), st.integers(0, 3), min_size=1))
        if max(judged.values()) < 1:
            judged[draw(st.sampled_from(DOC_POOL))] = draw(st.integers(1, 3))
        qrels[qid] = judged
        order = draw(st.lists(st.sampled_from(DOC_POOL), min_size=1, unique=True))
        values = draw(st.lists(st.integers(-50, 50), min_size=len(order), max_size=len(order), unique=True))
        run[qid] = {doc: v / 4 for doc, v in zip(order, values, strict=True)}
    return qrels, run


# ranx name -> ours. Threshold-free; the binary ones are also checked with "-l2" against rel=2.
RANX_MEASURES = {
    **{f"ndcg@{k}": f"ndcg@{k}" for k in KS},
    **{f"ndcg_burges@{k}": f"ndcg_exp@{k}" for k in KS},
    **{f"dcg@{k}": f"dcg@{k}" for k in KS},
    **{f"dcg_burges@{k}": f"dcg_exp@{k}" for k in KS},
    "mrr": "mrr",
    "map": "map",
    **{f"mrr@{k}": f"mrr@{k}" for k in KS},
    **{f"precision@{k}": f"precision@{k}" for k in KS},
    **{f"recall@{k}": f"recall@{k}" for k in KS},
    **{f"hit_rate@{k}": f"hit_rate@{k}" for k in KS},
}
RANX_BINARY_L2 = {
    "mrr-l2": "mrr(rel=2)",
    "map-l2": "map(rel=2)",
    "precision@5-l2": "precision@5(rel=2)",
    "recall@5-l2": "recall@5(rel=2)",
    "hit_rate@3-l2": "hit_rate@3(rel=2)",
}


def _ranx_per_query(qrels: dict, run: dict, metrics: list[str]) -> dict[str, dict[str, float]]:
    with warnings.catch_warnings():
        # numba's JIT warns (NumbaTypeSafetyWarning etc.) while compiling ranx kernels: not ours.
        warnings.simplefilter("ignore")
        import ranx

        ranx_run = ranx.Run(run)
        ranx.evaluate(ranx.Qrels(qrels), ranx_run, metrics, return_mean=False, threads=1)
    return {m: {q: float(v) for q, v in ranx_run.scores[m].items()} for m in metrics}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tie_free_inputs())
def test_matches_ranx_without_ties(case: tuple) -> None:
    qrels, run = case
    metrics = {**RANX_MEASURES, **RANX_BINARY_L2}
    theirs = _ranx_per_query(qrels, run, list(metrics))
    ev = evaluate(qrels, run, list(metrics.values()))
    assert ev.query_ids == tuple(sorted(qrels))
    ours = ev.per_query
    for ranx_name, our_name in metrics.items():
        assert set(theirs[ranx_name]) == set(qrels)
        for qid, want in theirs[ranx_name].items():
            got = ours[our_name][qid]
            assert abs(got - want) <= 1e-9, f"{our_name} (ranx {ranx_name}) on {qid}: ours {got!r}, ranx {want!r}"
