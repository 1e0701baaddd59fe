"""Run.from_columns: a run stored as columns, its mapping view, and its evaluation against the dict forms."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import rankbridge as rb
from rankbridge import Hit, Run
from rankbridge.errors import InputError

QRELS = {"q1": {"a": 1, "b": 2, "z": 0}, "q2": {"x": 1}, "q3": {"m": 1}}


def test_scored_columns_match_from_scores() -> None:
    rows = [("q2", "x", 0.5), ("q1", "a", 0.2), ("q1", "b", 0.9), ("q2", "y", 0.7), ("q1", "c", 0.9)]
    qs, ds, ss = (list(col) for col in zip(*rows, strict=True))
    run = Run.from_columns(qs, ds, ss, name="bm25")
    assert run.columns is not None and run.columns.query_ids == ["q2", "q1"]
    assert run.columns.offsets.tolist() == [0, 2, 5]
    assert len(run) == 2 and list(run) == ["q2", "q1"] and "q1" in run and "q9" not in run
    assert run.is_scored("q1") and run.ranking("q1") == ["c", "b", "a"]  # tie 0.9: larger doc id first
    assert run.columns is not None  # hits() and ranking() read the columns without converting the run
    ref = Run.from_scores({"q2": {"x": 0.5, "y": 0.7}, "q1": {"a": 0.2, "b": 0.9, "c": 0.9}})
    for metrics in (["mrr", "ndcg@10", "P@2", "map", "recall@1"],):
        assert rb.evaluate(QRELS, run, metrics).per_query == rb.evaluate(QRELS, ref, metrics).per_query
    assert run.to_scores() == ref.to_scores()
    assert run.columns is None  # the mapping view was asked for: the run is now dicts


def test_ranked_columns_keep_rank_order_and_missing_scores() -> None:
    run = Run.from_columns(np.array([1, 1, 2, 1]), np.array([5, 6, 7, 8]), [0.5, np.nan, 3.0, 0.1], ranks=[2, 1, 1, 3])
    assert run.hits("1") == [Hit("6", None), Hit("5", 0.5), Hit("8", 0.1)]
    assert not run.is_scored("2")
    ev = rb.evaluate({"1": {"5": 1}, "2": {"7": 1}}, run, ["mrr"], check_ids=False)
    assert ev.per_query["mrr"] == {"1": 0.5, "2": 1.0}


def test_duplicates_error_or_first() -> None:
    with pytest.raises(InputError, match="doc 'a' appears twice for query 'q'"):
        Run.from_columns(["q", "q"], ["a", "a"], [1.0, 2.0])
    run = Run.from_columns(["q", "q", "q"], ["a", "b", "a"], ranks=[1, 2, 3], duplicates="first")
    assert run.ranking("q") == ["a", "b"] and run.duplicates == {"q": 1}
    ev = rb.evaluate({"q": {"b": 1}}, run, ["mrr", "num_ret"], check_ids=False)
    assert ev.mean == {"mrr": 0.5, "num_ret": 2.0} and ev.duplicates == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scores": [float("nan")]}, "found NaN"),
        ({"scores": ["high"]}, "expected a numeric score"),
        ({"scores": [1.0, 2.0]}, "differ in length"),
        ({}, "give scores"),
        ({"ranks": [1.5]}, "integer"),
    ],
)
def test_bad_columns_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        Run.from_columns(["q"], ["a"], **kwargs)


def test_same_rank_twice_is_refused() -> None:
    with pytest.raises(InputError, match="rank 1 twice"):
        Run.from_columns(["q", "q"], ["a", "b"], ranks=[1, 1])


def test_add_after_columns_converts_and_keeps_data() -> None:
    run = Run.from_columns(["q1"], ["a"], [1.0])
    run.add("q2", ["b"])
    assert run.columns is None and run.ranking("q1") == ["a"] and run.ranking("q2") == ["b"]


def test_columnar_run_pickles_as_columns() -> None:
    run = Run.from_columns(["q1", "q1", "q2"], ["a", "b", "c"], [0.1, 0.2, 0.3], name="bm25")
    back = pickle.loads(pickle.dumps(run))
    assert back.columns is not None and back.ranking("q1") == ["b", "a"] and back.name == "bm25"
    assert rb.evaluate(QRELS, back, ["mrr"]).per_query == rb.evaluate(QRELS, run, ["mrr"]).per_query
