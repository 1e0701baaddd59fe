"""Compact ranked results: a Run keeps plain hits as columns until they are read (issue 21, points 1 and 6).

Whatever form a retriever returns, the run the runner makes reads exactly like the run built from the
Hits that ``normalize_hits``' general loop makes; the checks refuse the same inputs with the same
messages; and every public behaviour of Run (equality, ``run[qid]``, pickling, merge, evaluate...) is
the one of a run of Hit lists.
"""

from __future__ import annotations

import math
import pickle
import re
from typing import Any

import pytest

import rankbridge as rb
from rankbridge import Hit, Run
from rankbridge.errors import InputError
from rankbridge.idmatch import check_run
from rankbridge.retriever import _normalize, normalize_hits
from rankbridge.runner import run_retriever
from rankbridge.types import _Ranked


class Node:  # the shape of a LlamaIndex TextNode, without LlamaIndex
    def __init__(self, node_id: str, text: str, metadata: Any) -> None:
        self.node_id, self.text, self.metadata = node_id, text, metadata

    def get_content(self) -> str:
        return self.text


class NodeWithScore:  # the shape of a LlamaIndex NodeWithScore
    def __init__(self, node: Node, score: float | None) -> None:
        self.node, self.score = node, score


class Document:  # the shape of a LangChain Document
    def __init__(self, id: str, page_content: str, metadata: Any) -> None:
        self.id, self.page_content, self.metadata = id, page_content, metadata


#: What a retriever returns, by form: duplicates, int and NaN scores, texts and metadata included.
FORMS: dict[str, list[Any]] = {
    "ids": ["d1", "d2", "d1", "d3"],
    "pairs": [("d1", 2.0), ("d2", 1), ("d1", 0.5), ("d3", math.nan)],
    "hits": [Hit("d1", 2.0, "t1", {"m": 1}), Hit("d2"), Hit("d1", 0.5)],
    "dicts": [
        {"id": "d1", "score": 2.0, "text": "a", "metadata": {"m": 1}},
        {"id": "d2", "score": 1, "page_content": "p"},
        {"id": "d1", "score": math.nan},
    ],
    "dicts by doc_id": [{"doc_id": "d1", "id": "x"}, {"doc_id": "d2"}],
    "nodes": [NodeWithScore(Node("n1", "a", {"k": 1}), 0.9), NodeWithScore(Node("n2", "b", {}), None)],
    "documents": [Document("c1", "a", {"s": 1}), Document("c2", "b", {})],
    "document pairs": [(Document("c1", "a", {}), 0.3), (Document("c2", "b", None), 0.1)],
}


def _general(items: list[Any]) -> list[Hit]:
    # a doc_map that maps nothing sends every item through the general loop, ids unchanged
    return normalize_hits(items, k=100, doc_map=lambda doc_id: None)[0]


def _expected(items: list[Any]) -> Run:
    run = Run(name="ref")
    run.add("q1", _general(items))
    return run


@pytest.mark.parametrize("form", list(FORMS))
def test_each_form_is_kept_compact_and_reads_as_its_hits(form: str) -> None:
    items = FORMS[form]

    def search(query: str, k: int) -> list[Any]:
        return items

    for _ in range(2):  # the second time framework types are known and the fast path reads them
        run = run_retriever(search, {"q1": "x"}, k=10, progress=False)
    assert type(run._dict["q1"]) is _Ranked  # no Hit object made yet
    ref = _expected(items)
    assert run.ranking("q1") == ref.ranking("q1")
    assert run.duplicates == ref.duplicates
    assert run.hits("q1") == ref.hits("q1")
    assert [type(h.score) for h in run.hits("q1")] == [type(h.score) for h in ref.hits("q1")]
    assert run["q1"] == ref["q1"]
    assert run["q1"] is run["q1"]  # read once: its Hits are stored, as a list of Hits is


class Table:
    """A Retriever-protocol object (not adapted: the runner normalises what it returns itself)."""

    native_async = False

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def retrieve(self, query: str, k: int) -> list[Any]:
        return self.items

    async def aretrieve(self, query: str, k: int) -> list[Any]:
        return self.items


@pytest.mark.parametrize("form", ["ids", "pairs", "hits", "dicts"])
def test_a_retriever_object_is_read_as_a_function_is(form: str) -> None:
    items = FORMS[form]
    run = run_retriever(Table(items), {"q1": "x"}, k=10, progress=False)
    assert type(run._dict["q1"]) is _Ranked
    ref = _expected(items)
    assert (run["q1"], run.duplicates) == (ref["q1"], ref.duplicates)
    bad = run_retriever(Table([Hit("d1", math.nan)]), {"q1": "x"}, k=10, progress=False, keep_going=True)
    assert bad.errors["q1"] == "invalid result: run['q1'][0]: expected a numeric score, found NaN"


def test_hits_a_retriever_returns_are_kept_as_given() -> None:
    hits = [Hit("d1", 1.0, "t", {"m": 1}), Hit("d2", None)]
    run = run_retriever(lambda q, k: hits, {"q1": "x"}, k=10, progress=False)
    assert all(a is b for a, b in zip(run["q1"], hits, strict=True))


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([Hit("d1", math.nan)], r"run\['q1'\]\[0\]: expected a numeric score, found NaN"),
        ([("", 1.0)], "result at rank 1 .* has no doc id"),
        (["d1", ""], "result at rank 2 .* has no doc id"),
        ([{"id": "d1"}, {"text": "no id"}], "result at rank 2 .* has no doc id"),
        ([("d1", "high")], "result at rank 1 has a non-numeric score 'high'"),
        ([True], "result at rank 1 is a bool"),
    ],
)
def test_bad_results_fail_their_query_as_before(items: list[Any], message: str) -> None:
    run = run_retriever(lambda q, k: items, {"q1": "x"}, k=10, progress=False, keep_going=True)
    assert "q1" not in run
    assert run.errors["q1"].startswith("invalid result: ")
    assert re.search(message, run.errors["q1"]), run.errors["q1"]


def test_run_add_refuses_what_it_refused() -> None:
    run = Run()
    with pytest.raises(InputError, match=r"run\['q'\]\[1\]: expected a numeric score, found NaN"):
        run.add("q", [("a", 1.0), ("b", math.nan)])
    with pytest.raises(InputError, match=r"run\['q'\]\[0\]: expected a Hit, a doc id or a \(doc_id, score\) pair"):
        run.add("q", [1.5])
    with pytest.raises(InputError, match=r"run\['q'\]\[0\]: expected a numeric score, found NaN"):
        run.add("q", [Hit("a", math.nan)])
    with pytest.raises(InputError, match="found a mapping of doc -> score"):
        run.add("q", {"a": 1.0})
    run.add("q", [("a", 1), ("b", 2.0)])  # an int score: converted by the per-item loop, as before
    assert run.hits("q") == [Hit("a", 1.0), Hit("b", 2.0)]
    assert type(run.hits("q")[0].score) is float


def _pair_runs() -> tuple[Run, Run]:
    data: dict[str, list[Any]] = {
        "q1": [("d1", 3.0), ("d2", 2.0), ("d1", 1.0)],
        "q2": ["d3", "d4"],
        "q3": [Hit("d5", 0.5, "text", {"doc": "D"}), Hit("d6")],
        "q4": [],
    }
    compact = Run.from_ranked(data, name="r")
    compact.add_error("q5", "timeout: 1 s")
    hits = Run(name="r")
    for qid, items in data.items():
        hits._data[qid] = Run._checked_hits(qid, items)[0]  # the per-item loop: a list of Hits
    hits.duplicates["q1"] = 1
    hits.add_error("q5", "timeout: 1 s")
    return compact, hits


def test_a_compact_run_behaves_as_a_run_of_hit_lists() -> None:
    compact, hits = _pair_runs()
    assert {type(v) for v in compact._dict.values()} == {_Ranked}
    assert repr(compact) == repr(hits)
    assert compact.duplicates == hits.duplicates == {"q1": 1}
    assert compact.to_scores() == hits.to_scores()
    assert compact.query_ids() == hits.query_ids()
    assert [compact.is_scored(q) for q in compact] == [False] * 4
    assert [compact.ranking(q) for q in compact] == [hits.ranking(q) for q in hits]
    assert compact.to_pandas().equals(hits.to_pandas())
    assert compact == hits
    assert {type(v) for v in compact._dict.values()} == {list}  # equality read every query's hits


def test_pickle_copy_and_merge_keep_the_results() -> None:
    compact, hits = _pair_runs()
    again = pickle.loads(pickle.dumps(compact))
    assert type(again._dict["q1"]) is _Ranked
    assert again == hits
    left, right = Run(name="r"), Run(name="r")
    for qid in ["q1", "q2"]:
        left.add(qid, compact.hits(qid))
    for qid in ["q3", "q4"]:
        right.add(qid, compact.hits(qid))
    right.add_error("q5", "timeout: 1 s")
    merged = Run.merge([left, right])
    assert type(merged._dict["q3"]) is _Ranked
    assert merged == hits
    assert merged.errors == hits.errors


def test_evaluate_reads_the_ids_without_making_hits() -> None:
    compact, hits = _pair_runs()
    qrels = rb.Qrels({"q1": {"d2": 1, "d1": 2}, "q2": {"d4": 1}, "q3": {"d6": 3}, "q4": {"d1": 1}, "q5": {"d1": 1}})
    view = compact._metric_view()
    assert all(not isinstance(v, list) or not v or not isinstance(v[0], Hit) for v in view.values())
    got = rb.evaluate(qrels, compact, ["ndcg@10", "recip_rank", "P@1"])
    assert {type(v) for v in compact._dict.values()} == {_Ranked}  # still compact after evaluating
    want = rb.evaluate(qrels, hits, ["ndcg@10", "recip_rank", "P@1"])
    assert got.per_query == want.per_query
    assert got.mean == want.mean


def test_columns_turned_into_entries_stay_compact() -> None:
    run = Run.from_columns(["q1", "q1", "q2"], ["a", "b", "c"], [0.5, math.nan, 1.0], ranks=[1, 2, 1])
    run.add("q3", ["x"])  # a change: the columns become per-query entries
    assert run.columns is None
    assert {type(v) for v in run._dict.values()} == {_Ranked}
    assert run.hits("q1") == [Hit("a", 0.5), Hit("b", None)]
    assert run.ranking("q3") == ["x"]
    scored = Run.from_columns(["q1", "q1"], ["a", "b"], [0.5, 1.0])
    scored.add("q2", ["x"])
    assert scored["q1"] == {"a": 0.5, "b": 1.0}


def test_the_id_check_reads_metadata_of_compact_hits() -> None:
    golden = rb.GoldenSet(
        [rb.Query(f"q{i}", f"question {i}") for i in range(6)],
        rb.Qrels({f"q{i}": {f"doc{i}": 1} for i in range(6)}),
    )
    run = Run()
    for i in range(6):
        chunks = [{"id": f"chunk{i}-{j}", "metadata": {"doc_id": f"doc{i}"}} for j in range(4)]
        hits, _ = _normalize(chunks, k=10, id_from=None, doc_map=None, keep_text=True)
        run.add(f"q{i}", hits)
    assert type(run._dict["q0"]) is _Ranked
    report = check_run(run, golden)
    assert (report.status, report.chosen) == ("resolved", "metadata:doc_id")
    assert type(run._dict["q0"]) is _Ranked  # the check read a sample, the run stays compact
