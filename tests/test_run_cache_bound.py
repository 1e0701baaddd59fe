"""A Run keeps a bounded number of hit tables, however often it is evaluated (memory stays bounded)."""

from __future__ import annotations

import rankbridge as rb
from rankbridge.evaluate import _TABLES_KEPT


def _tables(run: rb.Run) -> list[object]:
    return [k for k in run._cache if type(k) is tuple and k[:1] == ("table",)]


def test_a_run_evaluated_in_a_loop_against_dict_qrels_keeps_a_few_tables() -> None:
    run = rb.Run.from_scores({f"q{i}": {"a": 0.9, "b": 0.5, "c": 0.1} for i in range(50)})
    qrels = {f"q{i}": {"b": 1} for i in range(50)}
    first = rb.evaluate(qrels, run, ["mrr", "ndcg@10"]).mean
    for _ in range(3 * _TABLES_KEPT):
        assert rb.evaluate(qrels, run, ["mrr", "ndcg@10"]).mean == first  # a new Qrels wrapper each call
    assert first["mrr"] == 0.5
    assert 1 <= len(_tables(run)) <= _TABLES_KEPT


def test_the_same_qrels_object_reuses_its_table() -> None:
    run = rb.Run.from_scores({"q1": {"a": 0.9, "b": 0.5}, "q2": {"c": 1.0}})
    qrels = rb.Qrels({"q1": {"b": 1}, "q2": {"c": 2}})
    rb.evaluate(qrels, run, ["mrr"])
    (key,) = _tables(run)
    table = run._cache[key][1]
    others = [rb.Qrels({"q1": {"a": 1}}) for _ in range(_TABLES_KEPT - 1)]
    for other in others:
        rb.evaluate(other, run, ["mrr"], missing="skip")
    assert run._cache[key][1] is table  # still kept: the newest few qrels objects are
    assert rb.evaluate(qrels, run, ["mrr"]).mean == {"mrr": 0.75}
    assert run._cache[key][1] is table
