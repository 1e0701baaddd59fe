"""The vectorised input paths give exactly what the per-query reference paths give.

* ``build_table``'s C-level path vs ``_generic_table`` (one query at a time) on random score dicts,
  id lists and Hit lists, with ties, float32 ties, queries missing from either side.
* ``evaluate`` on ``{qid: [ids]}``, ``{qid: [(id, score)]}`` and ``{qid: [Hit]}`` (no Run built) vs
  ``evaluate`` on the Run that ``Run.from_ranked`` builds from the same input, duplicates included.
* ``Qrels`` from a plain dict (checked by C-level passes) vs its per-judgment loop.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rankbridge as rb
from rankbridge.errors import InputError
from rankbridge.metrics import MEASURES, Measure
from rankbridge.metrics.ranking import _fast_table, _generic_table, build_table

ALL = [Measure(n, 10 if spec.k == "required" else None) for n, spec in MEASURES.items()] + [
    Measure("ndcg", 3),
    Measure("map", 2, rel=2),
    Measure("precision", 3, rel=2),
]
FIELDS = ("n_ret", "hit_query", "hit_rank", "hit_label", "judged_query", "judged_label")

docs_st = st.sampled_from([f"d{i}" for i in range(9)])
scores_st = st.sampled_from([0.5, 1.0, 1.5, 1.0 + 1e-9, 2.0, -0.25])  # ties, and ties only as float32
qids_st = st.sampled_from([f"q{i}" for i in range(6)])
qrels_st = st.dictionaries(qids_st, st.dictionaries(docs_st, st.integers(-1, 3), max_size=6), max_size=6)


@st.composite
def runs(draw: st.DrawFn) -> dict[str, object]:
    out: dict[str, object] = {}
    for qid in draw(st.lists(qids_st | st.just("unjudged"), unique=True, max_size=7)):
        ids = draw(st.lists(docs_st, unique=True, max_size=9))
        kind = draw(st.sampled_from(["scores", "ids", "hits"]))
        if kind == "scores":
            out[qid] = {d: draw(scores_st) for d in ids}
        elif kind == "ids":
            out[qid] = ids
        else:
            out[qid] = [rb.Hit(d, draw(scores_st)) for d in ids]
    return out


def _same_table(a: Any, b: Any) -> None:
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if f.startswith("judged"):  # judgments are a multiset (|R|, the ideal DCG): order is free
            x = x[np.lexsort((a.judged_label, a.judged_query))]
            y = y[np.lexsort((b.judged_label, b.judged_query))]
        np.testing.assert_array_equal(x, y, err_msg=f)


@settings(max_examples=400, deadline=None)
@given(qrels=qrels_st, run=runs(), single=st.booleans(), extra=st.lists(qids_st, max_size=3))
def test_fast_table_equals_generic(qrels: dict, run: dict, single: bool, extra: list[str]) -> None:
    query_ids = sorted(set(qrels) | set(extra))
    fast = _fast_table(qrels, run, query_ids, single)
    assert fast is not None
    _same_table(fast, _generic_table(qrels, run, query_ids, single_precision=single))


def test_fast_table_declines_what_needs_the_generic_path() -> None:
    qrels = {"q": {"a": 1}}
    for run in (
        {"q": {"a": float("nan")}},  # NaN: the generic path names it
        {"q": {"a": "high"}},  # not a number
        {"q": ["a", rb.Hit("b")]},  # mixed items
        {"q": {1: 0.5}},  # a non-str doc id
    ):
        assert _fast_table(qrels, run, ["q"], False) is None, run
    with pytest.raises(InputError, match="NaN"):
        build_table(qrels, {"q": {"a": float("nan"), "b": 1.0}}, ["q"])
    with pytest.raises(InputError, match="expected doc ids as str"):
        build_table(qrels, {"q": {1: 0.5}}, ["q"])


ranked_st = st.dictionaries(
    qids_st | st.just("unjudged"),
    st.lists(st.tuples(docs_st, scores_st), max_size=10),  # repeats allowed: the first one is kept
    max_size=7,
)


@pytest.mark.filterwarnings("ignore::rankbridge.errors.RunCoverageWarning")  # random runs miss most queries
@settings(max_examples=300, deadline=None)
@given(qrels=qrels_st, ranked=ranked_st, form=st.sampled_from(["ids", "pairs", "hits"]))
def test_plain_ranked_input_equals_run(qrels: dict, ranked: dict, form: str) -> None:
    if form == "ids":
        run = {q: [d for d, _ in items] for q, items in ranked.items()}
    elif form == "pairs":
        run = ranked
    else:
        run = {q: [rb.Hit(d, s) for d, s in items] for q, items in ranked.items()}
    reference = rb.evaluate(qrels, rb.Run.from_ranked(run), ALL, check_ids=False)
    got = rb.evaluate(qrels, run, ALL, check_ids=False)
    assert got.query_ids == reference.query_ids
    assert got.duplicates == reference.duplicates
    for attr in ("missing", "unjudged", "no_relevant"):
        assert getattr(got, attr) == getattr(reference, attr)
    for name, values in reference.values.items():
        np.testing.assert_array_equal(got.values[name], values, err_msg=name)


def test_plain_ranked_input_bad_items_are_named() -> None:
    with pytest.raises(InputError, match=r"run\['q'\]\[1\]: expected a numeric score, found NaN"):
        rb.evaluate({"q": {"a": 1}}, {"q": [("a", 1.0), ("b", math.nan)]}, ["mrr"])
    with pytest.raises(InputError, match=r"run\['q'\]\[0\]"):
        rb.evaluate({"q": {"a": 1}}, {"q": [None]}, ["mrr"])
    # ids that need converting still work (through a Run)
    assert rb.evaluate({"q": {"1": 1}}, {"q": [2, 1]}, ["mrr"]).mean["mrr"] == 0.5


@settings(max_examples=200, deadline=None)
@given(qrels=qrels_st)
def test_qrels_fast_construction_equals_loop(qrels: dict) -> None:
    fast = rb.Qrels(qrels)
    slow = rb.Qrels(MappingProxyType(qrels))  # not a dict: the per-judgment loop
    assert fast.to_dict() == slow.to_dict() == qrels
    copied = rb.Qrels(qrels)
    for docs in qrels.values():
        docs["zzz"] = 9  # the caller's dict changes; the Qrels keep their copy
    assert all("zzz" not in d for d in copied.values())


def test_qrels_fast_construction_keeps_every_check() -> None:
    with pytest.raises(InputError, match="integer relevance label"):
        rb.Qrels({"q": {"d": True}})
    with pytest.raises(InputError, match="integer relevance label"):
        rb.Qrels({"q": {"d": 1.5}})
    assert rb.Qrels({"q": {"d": 2.0}}).to_dict() == {"q": {"d": 2}}
    assert rb.Qrels({7: {8: 1}}).to_dict() == {"7": {"8": 1}}
