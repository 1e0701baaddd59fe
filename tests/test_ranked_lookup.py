"""The two ways ranked lists are ranked give the same tables and values (issue 21.1, the BEIR shape).

``_ranked_hits`` finds the judged docs of a ranked list either by scanning the list once per judged doc
(``operator.countOf`` / ``indexOf``) or by one lookup per hit in the query's judgments, chosen per query by
``_by_lookup``. Here the choice is forced one way, the other, split at random between the queries, or left
to the cost model, on random runs (fixed seeds) with many judgments per query (BEIR-like), one or two (MS
MARCO-like), none, empty lists, queries the run lacks, repeated docs, str and Hit lists, graded labels:

* ``build_table`` (unchecked input, repeats kept) against a first-occurrence reference written out in
  Python, and the four ways against each other, field by field;
* ``evaluate`` on ranked ids, ``(id, score)`` pairs, Hit lists and a ``Run`` against pytrec_eval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
import pytrec_eval

import rankbridge as rb
from rankbridge.metrics import ranking
from rankbridge.metrics.measures import parse_measure
from rankbridge.metrics.ranking import build_table

FIELDS = ("n_ret", "hit_query", "hit_rank", "hit_label", "judged_query", "judged_label")
POOL = [f"MED-{i}" for i in range(800)] + ["a", "b", "B", "é", "d1", "d10"]
METRICS = [
    "map",
    "ndcg",
    "mrr",
    "r_precision",
    "P@5",
    "P@10",
    "recall@10",
    "recall@100",
    "ndcg@10",
    "map@100",
    "num_rel_ret",
    "num_ret",
    "hit_rate@10",
    "set_precision",
    "set_recall",
]
MODES = ("scan", "lookup", "split", "model")
#: (judgments, depth) ranges drawn from per kind of query; the others ("unjudged", "absent") are "few"
SHAPES = {
    "many": ((8, 45), (10, 120)),
    "deep": ((3, 12), (200, 600)),
    "empty": ((1, 3), (0, 1)),
    "few": ((1, 3), (3, 30)),
}


def make_case(
    seed: int, *, repeats: bool, labels: tuple[int, ...]
) -> tuple[dict[str, dict[str, int]], dict[str, list[Any]]]:
    """Random qrels and ranked lists of str ids or Hits mixing every kind of query."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[Any]] = {}
    kinds = ["many", "many", "few", "few", "few", "unjudged", "empty", "absent", "deep"]
    for q in range(60):
        qid = f"q{q}"
        kind = kinds[int(rng.integers(len(kinds)))]
        (j_lo, j_hi), (d_lo, d_hi) = SHAPES.get(kind, SHAPES["few"])
        n_judged, depth = int(rng.integers(j_lo, j_hi)), int(rng.integers(d_lo, d_hi))
        picked = [POOL[i] for i in rng.choice(len(POOL), size=n_judged + depth, replace=False).tolist()]
        judged, ranked = picked[:n_judged], picked[n_judged:]
        # about a third of the judged docs retrieved, at random ranks
        for j in range(len(judged)):
            if ranked and rng.random() < 0.35:
                ranked[int(rng.integers(len(ranked)))] = judged[j]
        ranked = list(dict.fromkeys(ranked))
        if repeats and ranked:  # a doc repeated later in its list: judged ones among them
            for _ in range(int(rng.integers(0, 4))):
                doc = ranked[int(rng.integers(len(ranked)))]
                ranked.insert(int(rng.integers(len(ranked) + 1)), doc)
        if kind != "unjudged":
            qrels[qid] = {d: int(rng.choice(labels)) for d in judged}
        if kind != "absent":
            run[qid] = [rb.Hit(d) for d in ranked] if rng.random() < 0.5 else ranked
    return qrels, run


def first_occurrence_hits(
    qrels: dict[str, dict[str, int]], run: dict[str, list[Any]], query_ids: list[str]
) -> list[tuple[int, int, int]]:
    """(query index, rank, label) of each judged doc at its first position in its list, sorted."""
    rows = []
    for qi, qid in enumerate(query_ids):
        judged = qrels.get(qid, {})
        seen: set[str] = set()
        for rank, item in enumerate(run.get(qid, ()), 1):
            doc = item if isinstance(item, str) else item.doc_id
            if doc in judged and doc not in seen:
                seen.add(doc)
                rows.append((qi, rank, judged[doc]))
    return sorted(rows)


@contextmanager
def forced(monkeypatch: pytest.MonkeyPatch, mode: str, seed: int = 0) -> Iterator[dict[str, int]]:
    """Force ``_by_lookup``'s choice (``model``: leave it) and count the queries each way ranks."""
    calls = {"scan": 0, "lookup": 0}
    rng = np.random.default_rng(seed)
    choices: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
        "scan": lambda n, _: np.zeros(len(n), dtype=bool),
        "lookup": lambda n, _: np.ones(len(n), dtype=bool),
        "split": lambda n, _: rng.random(len(n)) < 0.5,
    }
    with monkeypatch.context() as m:
        if mode in choices:
            m.setattr(ranking, "_by_lookup", choices[mode])
        scan, lookup = ranking._scanned_hits, ranking._looked_up_hits

        def counted_scan(lists: list[Any], *args: Any) -> Any:
            calls["scan"] += len(lists)
            return scan(lists, *args)

        def counted_lookup(lists: list[Any], *args: Any) -> Any:
            calls["lookup"] += len(lists)
            return lookup(lists, *args)

        m.setattr(ranking, "_scanned_hits", counted_scan)
        m.setattr(ranking, "_looked_up_hits", counted_lookup)
        yield calls


def check_ways(calls: dict[str, int], mode: str) -> None:
    if mode == "scan":
        assert calls["lookup"] == 0 < calls["scan"], calls
    elif mode == "lookup":
        assert calls["scan"] == 0 < calls["lookup"], calls
    else:
        assert calls["scan"] > 0 and calls["lookup"] > 0, calls


@pytest.mark.parametrize("seed", range(6))
def test_both_ways_give_the_first_occurrence_table(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    qrels, run = make_case(seed, repeats=True, labels=(-1, 0, 1, 2, 3))
    query_ids = sorted(set(qrels) | set(run))
    want = first_occurrence_hits(qrels, run, query_ids)
    tables = {}
    for mode in MODES:
        with forced(monkeypatch, mode, seed) as calls:
            table = build_table(qrels, run, query_ids)
        check_ways(calls, mode)
        got = list(zip(table.hit_query.tolist(), table.hit_rank.tolist(), table.hit_label.tolist(), strict=True))
        assert got == want, mode
        assert table.n_ret.tolist() == [len(run.get(q, ())) for q in query_ids]
        tables[mode] = table
    for mode in MODES[1:]:
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(tables[mode], f), getattr(tables["scan"], f), err_msg=f"{mode} {f}")
            assert getattr(tables[mode], f).dtype == getattr(tables["scan"], f).dtype


def _pytrec_run(run: dict[str, list[Any]]) -> dict[str, dict[str, float]]:
    """The ranked lists as distinct scores (first occurrence kept), the first rank highest."""
    out = {}
    for qid, items in run.items():
        ids = list(dict.fromkeys(item if isinstance(item, str) else item.doc_id for item in items))
        out[qid] = {doc: float(len(ids) - i) for i, doc in enumerate(ids)}
    return out


@pytest.mark.filterwarnings("ignore::rankbridge.evaluate.IdMismatchWarning")
@pytest.mark.parametrize("seed", range(3))
def test_evaluate_equals_pytrec_eval_both_ways(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    # Labels 0-3: a query with only negative labels breaks pytrec_eval (see test_differential.py).
    qrels, run = make_case(100 + seed, repeats=True, labels=(0, 1, 2, 3))
    measures = [parse_measure(m) for m in METRICS]
    trec = {str(m): str(m.trec_name) for m in measures}
    scores = _pytrec_run(run)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(trec.values())).evaluate(scores)
    ids = {q: [i if isinstance(i, str) else i.doc_id for i in items] for q, items in run.items()}
    forms: dict[str, Any] = {
        "ids": ids,
        "pairs": {q: [(d, scores[q][d]) for d in items] for q, items in ids.items()},
        "hits": {q: [rb.Hit(d) for d in items] for q, items in ids.items()},
        "mixed": run,
        "Run": rb.Run.from_ranked(ids),
    }
    for mode in MODES:
        for form, data in forms.items():
            if isinstance(data, rb.Run):
                data._cache.clear()  # a Run keeps its table: rebuild it under this mode
            with forced(monkeypatch, mode, seed) as calls:
                ev = rb.evaluate(qrels, data, measures, missing="skip", check_ids=False)
            check_ways(calls, mode)
            assert set(ev.query_ids) == set(theirs), (mode, form)
            ours = ev.per_query
            for qid, values in theirs.items():
                for m, name in trec.items():
                    want, got = values[name], ours[m][qid]
                    assert abs(got - want) <= 1e-12, f"{mode} {form} {m} on {qid}: ours {got!r}, pytrec_eval {want!r}"


def test_cost_model_keeps_the_scan_for_few_judgments() -> None:
    n_judged = np.array([1, 2, 1, 2, 40, 40, 13])
    depth = np.array([10, 10, 1000, 100, 100, 10, 100])
    assert ranking._by_lookup(n_judged, depth).tolist() == [False, False, False, False, True, True, True]


def test_unhashable_hit_ids_are_compared_as_the_scan_compares_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # build_table does not check a Hit's doc_id; a lookup cannot hash a list, so that query is scanned.
    qrels = {"q": {f"d{i}": i % 3 for i in range(20)}}
    run = {"q": [rb.Hit(["d1"]), rb.Hit("d3"), rb.Hit("d2"), rb.Hit("d3")]}  # type: ignore[arg-type]
    tables = []
    for mode in ("scan", "lookup"):
        with forced(monkeypatch, mode):
            tables.append(build_table(qrels, run, ["q"]))
    for table in tables:
        assert table.hit_rank.tolist() == [2, 3] and table.hit_label.tolist() == [0, 2]
