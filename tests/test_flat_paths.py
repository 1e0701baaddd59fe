"""evaluate's flat input paths (issue 21.1) give exactly what the one-query-at-a-time reference gives.

Every run form -- score dicts (the run's queries in the qrels' order, or not), a Run stored as columns,
ranked id lists, ``(id, score)`` lists, a Run of Hits -- is evaluated on random data with ties (also
ties only as float32), deep and shallow lists mixed, empty results, queries missing from either side,
and compared value for value with ``evaluate`` on the table ``_generic_table`` builds. Bad input is
refused by every path alike.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankbridge as rb
from rankbridge.errors import InputError
from rankbridge.metrics.ranking import _generic_table

METRICS = ["mrr", "mrr@3", "ndcg@5", "ndcg", "map", "P@3", "recall@70", "r_precision", "num_ret", "bpref", "judged@5"]

docs_st = st.sampled_from([f"d{i}" for i in range(12)])
scores_st = st.sampled_from([0.5, 1.0, 1.5, 1.0 + 1e-9, 2.0, -0.25, 3.0])  # ties, and ties only as float32
qids_st = st.sampled_from([f"q{i}" for i in range(8)])
qrels_st = st.dictionaries(qids_st, st.dictionaries(docs_st, st.integers(-1, 3), max_size=6), min_size=1, max_size=8)


def _reference(qrels: dict[str, dict[str, int]], run: dict[str, Any], single_precision: bool = False) -> dict:
    """Per-query values from the generic (per-query) table over all qrels queries (trec_eval -c)."""
    table = _generic_table(qrels, run, tuple(sorted(qrels)), single_precision=single_precision)
    return rb.evaluate(qrels, table, METRICS).per_query


def _close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].keys() == b[name].keys(), name
        for q in a[name]:
            assert math.isclose(a[name][q], b[name][q], rel_tol=1e-12, abs_tol=1e-12), (name, q, a[name][q], b[name][q])


@st.composite
def scored_runs(draw: st.DrawFn, qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """Score dicts over some qrels queries (and an unjudged one), shallow or deep (> 64 docs)."""
    out: dict[str, dict[str, float]] = {}
    for qid in draw(st.lists(qids_st | st.just("unjudged"), unique=True, max_size=9)):
        docs = draw(st.lists(docs_st, unique=True, max_size=12))
        if draw(st.booleans()) and draw(st.booleans()):  # a deep list: padding docs below and above
            docs = docs + [f"pad{i}" for i in range(70)]
        out[qid] = {d: draw(scores_st) for d in docs}
    return out


@pytest.mark.filterwarnings("ignore::rankbridge.errors.RunCoverageWarning")  # random runs miss most queries
@settings(max_examples=150, deadline=None)
@given(data=st.data(), single_precision=st.booleans())
def test_score_dicts_and_columns_match_reference(data: st.DataObject, single_precision: bool) -> None:
    qrels = data.draw(qrels_st)
    run = data.draw(scored_runs(qrels))
    ref = _reference(qrels, run, single_precision)
    kw: dict[str, Any] = {"single_precision": single_precision, "check_ids": False}
    _close(rb.evaluate(qrels, run, METRICS, **kw).per_query, ref)
    # the run's queries are exactly the qrels' in the qrels' order: the path that looks up no query id
    aligned = {q: run.get(q, {}) for q in qrels}
    _close(rb.evaluate(qrels, aligned, METRICS, **kw).per_query, _reference(qrels, aligned, single_precision))
    # the same rows as columns, shuffled (a Run stores them grouped by query)
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    perm = data.draw(st.permutations(range(len(rows))))
    rows = [rows[i] for i in perm]
    cols = rb.Run.from_columns([r[0] for r in rows], [r[1] for r in rows], np.array([r[2] for r in rows]))
    with_rows = {q for q in run if run[q]}
    ref_cols = _reference(qrels, {q: run[q] for q in with_rows}, single_precision)
    _close(rb.evaluate(qrels, cols, METRICS, **kw).per_query, ref_cols)


@st.composite
def ranked_runs(draw: st.DrawFn) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for qid in draw(st.lists(qids_st | st.just("unjudged"), unique=True, max_size=9)):
        out[qid] = draw(st.lists(docs_st, max_size=14))  # repeats allowed: the first one counts
    return out


@pytest.mark.filterwarnings("ignore::rankbridge.errors.RunCoverageWarning")  # random runs miss most queries
@settings(max_examples=150, deadline=None)
@given(qrels=qrels_st, run=ranked_runs(), data=st.data())
def test_ranked_forms_match_reference(qrels: dict, run: dict[str, list[str]], data: st.DataObject) -> None:
    deduped = {q: list(dict.fromkeys(ids)) for q, ids in run.items()}
    ref = _reference(qrels, deduped)
    dropped = sum(len(ids) - len(deduped[q]) for q, ids in run.items() if q in qrels)
    scores = {q: [data.draw(scores_st) for _ in ids] for q, ids in run.items()}
    pairs = {q: list(zip(ids, scores[q], strict=True)) for q, ids in run.items()}
    forms: dict[str, Any] = {
        "ids": run,
        "pairs": pairs,
        "numpy pairs": {q: [(d, np.float32(s)) for d, s in p] for q, p in pairs.items()},
        "Run": rb.Run.from_ranked(pairs),
        "Hits": {q: [rb.Hit(d, s) for d, s in p] for q, p in pairs.items()},
    }
    rows = [(q, d, r) for q, ids in deduped.items() for r, d in enumerate(ids, 1)]
    forms["columns"] = rb.Run.from_columns([r[0] for r in rows], [r[1] for r in rows], ranks=[r[2] for r in rows])
    for name, form in forms.items():
        ev = rb.evaluate(qrels, form, METRICS, check_ids=False)
        want = ref if name != "columns" else _reference(qrels, {q: ids for q, ids in deduped.items() if ids})
        _close(ev.per_query, want)
        if name != "columns":
            assert ev.duplicates == dropped, name


def test_queries_missing_from_either_side_and_empty_results() -> None:
    qrels = {"a": {"d1": 1}, "b": {"d2": 1}, "c": {"d3": 2}, "e": {}}
    run = {"c": {"d3": 0.5, "d9": 0.9}, "a": {}, "x": {"d1": 1.0}, "e": {"d1": 0.1}}
    ev = rb.evaluate(qrels, run, ["mrr", "num_ret"], check_ids=False)
    assert ev.query_ids == ("a", "b", "c", "e")
    assert ev.missing == ("b",) and ev.unjudged == ("x",) and ev.no_relevant == ("e",)
    assert ev.per_query["mrr"] == {"a": 0.0, "b": 0.0, "c": 0.5, "e": 0.0}
    assert ev.per_query["num_ret"] == {"a": 0.0, "b": 0.0, "c": 2.0, "e": 1.0}
    skip = rb.evaluate(qrels, run, ["mrr"], missing="skip", check_ids=False)
    assert skip.query_ids == ("a", "c", "e") and skip.missing == ("b",)
    failed = rb.Run.from_scores({"c": {"d3": 1.0}})
    failed.add_error("a", "timeout")
    failed.add_error("zz", "timeout")
    ev = rb.evaluate(qrels, failed, ["mrr"], check_ids=False)
    assert ev.failed == ("a",) and ev.missing == ("b", "e") and ev.unjudged == ("zz",)


def test_numpy_scores_and_non_string_ids() -> None:
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": {"a": np.float32(0.5), "b": np.float64(0.75), "c": np.int64(1)}}
    assert rb.evaluate(qrels, run, ["mrr", "map"], check_ids=False).mean == {"mrr": 0.5, "map": pytest.approx(7 / 12)}
    with pytest.raises(InputError, match="doc ids as str"):
        rb.evaluate(qrels, {"q": {1: 0.5, 2: 0.1}}, ["mrr"], check_ids=False)
    # int doc ids in ranked lists become str (as Run.add makes them)
    assert rb.evaluate({"q": {"7": 1}}, {"q": [3, 7]}, ["mrr"], check_ids=False).mean == {"mrr": 0.5}
    # int query ids too
    assert rb.evaluate({"1": {"a": 1}}, {1: {"a": 0.3}}, ["mrr"], check_ids=False).mean == {"mrr": 1.0}


@pytest.mark.parametrize(
    "run",
    [
        {"q": {"a": float("nan"), "b": 0.1}},
        {"q": {"a": 0.5, "b": float("nan")}},
        {"q": {"a": "high", "b": 0.1}},
        {"q": [("a", float("nan"))]},
        {"q": [("a", "high")]},
    ],
)
def test_bad_scores_are_refused(run: dict) -> None:
    with pytest.raises(InputError, match="numeric score"):
        rb.evaluate({"q": {"a": 1}}, run, ["mrr"], check_ids=False)


def test_tie_break_is_doc_id_descending_in_every_scored_form() -> None:
    qrels = {"q": {"a": 1}}
    scores = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5}  # trec_eval order: c, b, a, d
    deep = {**scores, **{f"z{i:02d}": 0.25 for i in range(80)}}
    for run in (scores, deep):
        assert rb.evaluate(qrels, {"q": run}, ["mrr"], check_ids=False).mean == {"mrr": 1 / 3}
        cols = rb.Run.from_columns(["q"] * len(run), list(run), list(run.values()))
        assert rb.evaluate(qrels, cols, ["mrr"], check_ids=False).mean == {"mrr": 1 / 3}


@settings(max_examples=60, deadline=None)
@given(data=st.data(), single_precision=st.booleans())
def test_deep_lists_with_many_judged_docs(data: st.DataObject, single_precision: bool) -> None:
    """Long results holding many judged docs (the BEIR shape) are ranked by one sort per query."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(data.draw(st.integers(1, 4))):
        docs = [f"d{i}" for i in range(data.draw(st.integers(60, 120)))]
        run[f"q{q}"] = {d: data.draw(scores_st) for d in docs}
        judged = data.draw(st.lists(st.sampled_from([*docs, "unretrieved"]), min_size=5, max_size=30, unique=True))
        qrels[f"q{q}"] = {d: data.draw(st.integers(0, 3)) for d in judged}
    kw: dict[str, Any] = {"single_precision": single_precision, "check_ids": False}
    ref = _reference(qrels, run, single_precision)
    _close(rb.evaluate(qrels, run, METRICS, **kw).per_query, ref)
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    cols = rb.Run.from_columns([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
    _close(rb.evaluate(qrels, cols, METRICS, **kw).per_query, ref)
