"""Evaluations of blocks of queries merge into exactly the single-process evaluation (issue 21, point 3)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import rankbridge as rb
from rankbridge.errors import IdMismatchWarning, InputError
from rankbridge.evaluate import Evaluation, evaluate
from rankbridge.metrics.ranking import compute

METRICS = ["ndcg@10", "P@5", "recall@20", "map", "mrr@10", "hit_rate@3"]


def _data(seed: int = 7, n: int = 90) -> tuple[rb.GoldenSet, rb.Run, rb.Run]:
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(60)]
    queries, qrels = [], {}
    for i in range(n):
        qid = f"q{i:03d}"
        queries.append(rb.Query(qid, f"question {i}", category=rng.choice(["a", "b", "c"])))
        judged = rng.sample(docs, rng.randint(1, 8))
        qrels[qid] = {d: rng.choice([0, 1, 2, 3]) for d in judged}
    qrels["q_nothing"] = {"d1": 0}  # judged, no relevant doc
    queries.append(rb.Query("q_nothing", "nothing", category="a"))
    golden = rb.GoldenSet(queries, rb.Qrels(qrels))

    def one(name: str, scored: bool) -> rb.Run:
        run = rb.Run(name=name)
        for q in queries:
            roll = rng.random()
            if roll < 0.08:
                continue  # missing
            if roll < 0.14:
                run.add_error(q.id, "timeout: 60 s")
                continue
            ranked = rng.sample(docs, 15)
            if scored:
                run._data[q.id] = {d: float(rng.randint(0, 5)) for d in ranked}  # ties: doc-id tie-break
            else:
                run.add(q.id, [*ranked, ranked[0]])  # one duplicate dropped
        run.add("q_unjudged", ["d1", "d2"])
        return run

    return golden, one("bm25", scored=False), one("dense", scored=True)


def _blocks(ids: list[str], n: int, seed: int) -> list[list[str]]:
    ids = list(ids)
    random.Random(seed).shuffle(ids)
    return [ids[i::n] for i in range(n)]


def _all_ids(golden: rb.GoldenSet, *runs: rb.Run) -> list[str]:
    return sorted({*golden.qrels, *(q for r in runs for q in r.query_ids())})


def _assert_same(a: Evaluation, b: Evaluation) -> None:
    assert a.query_ids == b.query_ids
    assert list(a.values) == list(b.values)
    for name in a.values:
        assert a.values[name].dtype == b.values[name].dtype
        assert a.values[name].tobytes() == b.values[name].tobytes(), name  # to the last bit
    for attr in ("missing", "failed", "unjudged", "no_relevant", "missing_policy", "run_name", "duplicates", "notes"):
        assert getattr(a, attr) == getattr(b, attr), attr
    assert a.mean == b.mean
    assert a.summary() == b.summary()
    assert a.table is not None and b.table is not None
    for field in ("n_ret", "hit_query", "hit_rank", "hit_label"):
        x, y = getattr(a.table, field), getattr(b.table, field)
        assert x.dtype == y.dtype and np.array_equal(x, y), field
    # the judgments: the same per query (one process lists them in the qrels' order, the merge by query)
    for t in (a.table, b.table):
        assert t.judged_query.dtype == a.table.judged_query.dtype
    ka, kb = (np.argsort(t.judged_query, kind="stable") for t in (a.table, b.table))
    assert np.array_equal(a.table.judged_query[ka], b.table.judged_query[kb])
    assert np.array_equal(a.table.judged_label[ka], b.table.judged_label[kb])
    for m in a.measures:  # the merged table computes the same values again
        assert compute(a.table, m).tobytes() == compute(b.table, m).tobytes()


@pytest.mark.parametrize("missing", ["zero", "skip"])
@pytest.mark.parametrize("n_blocks", [1, 3, 7])
def test_merged_blocks_equal_the_whole(missing: str, n_blocks: int) -> None:
    golden, bm25, dense = _data()
    for run in (bm25, dense):
        whole = evaluate(golden.qrels, run, METRICS, missing=missing)  # type: ignore[arg-type]
        parts = [
            evaluate(golden.qrels, run, METRICS, missing=missing, queries=block)  # type: ignore[arg-type]
            for block in _blocks(_all_ids(golden, run), n_blocks, seed=n_blocks)
        ]
        merged = Evaluation.merge(reversed(parts))  # the parts' order does not matter
        _assert_same(merged, whole)
        assert merged.partition is None  # the whole is no block


def test_golden_set_and_plain_dicts() -> None:
    golden, bm25, dense = _data(seed=3)
    whole = evaluate(golden, bm25, METRICS)
    parts = [evaluate(golden, bm25, METRICS, queries=b) for b in _blocks(_all_ids(golden, bm25), 4, 0)]
    _assert_same(Evaluation.merge(parts), whole)
    scores = dense.to_scores()
    whole = evaluate(golden.qrels.to_dict(), scores, METRICS)
    ids = sorted({*golden.qrels, *scores})
    parts = [evaluate(golden.qrels.to_dict(), scores, METRICS, queries=b) for b in _blocks(ids, 5, 1)]
    _assert_same(Evaluation.merge(parts), whole)


def test_compare_slices_gate_inputs_equal() -> None:
    golden, bm25, dense = _data(seed=11)
    ids = _all_ids(golden, bm25, dense)
    merged = {
        run.name: Evaluation.merge(evaluate(golden, run, METRICS, queries=b) for b in _blocks(ids, 4, 2))
        for run in (bm25, dense)
    }
    whole = {run.name: evaluate(golden, run, METRICS) for run in (bm25, dense)}
    a = rb.compare(merged, None, METRICS, n_resamples=2000, seed=5)
    b = rb.compare(whole, None, METRICS, n_resamples=2000, seed=5)
    assert a.to_dict(per_query=True) == b.to_dict(per_query=True)  # means, intervals, p-values, wins
    ga = rb.gate(merged["dense"], merged["bm25"], metric="ndcg@10", max_drop=0.01, n_resamples=2000)
    gb = rb.gate(whole["dense"], whole["bm25"], metric="ndcg@10", max_drop=0.01, n_resamples=2000)
    assert ga.to_dict() == gb.to_dict()
    sa = rb.slices(merged["dense"], golden, "category", n_resamples=2000)
    sb = rb.slices(whole["dense"], golden, "category", n_resamples=2000)
    assert sa.to_dict() == sb.to_dict()


def test_refusals() -> None:
    golden, bm25, dense = _data(seed=5)
    ids = _all_ids(golden, bm25)
    b1, b2 = _blocks(ids, 2, 0)
    p1 = evaluate(golden.qrels, bm25, METRICS, queries=b1)
    p2 = evaluate(golden.qrels, bm25, METRICS, queries=b2)
    assert Evaluation.merge([p2, p1]).mean == evaluate(golden.qrels, bm25, METRICS).mean
    with pytest.raises(InputError, match="parts\\[0\\] and parts\\[1\\]; the blocks must be disjoint"):
        Evaluation.merge([p1, evaluate(golden.qrels, bm25, METRICS, queries=[*b2, b1[0]])])
    with pytest.raises(InputError, match="metrics"):
        Evaluation.merge([p1, evaluate(golden.qrels, bm25, ["ndcg@10"], queries=b2)])
    other = rb.Qrels({**golden.qrels.to_dict(), "q000": {"d59": 3}})
    with pytest.raises(InputError, match="qrels \\(fingerprint\\)"):
        Evaluation.merge([p1, evaluate(other, bm25, METRICS, queries=b2)])
    with pytest.raises(InputError, match="missing"):
        Evaluation.merge([p1, evaluate(golden.qrels, bm25, METRICS, queries=b2, missing="skip")])
    with pytest.raises(InputError, match="single_precision"):
        Evaluation.merge([p1, evaluate(golden.qrels, bm25, METRICS, queries=b2, single_precision=True)])
    with pytest.raises(InputError, match="run name"):
        Evaluation.merge([p1, evaluate(golden.qrels, dense, METRICS, queries=b2)])
    with pytest.raises(InputError, match=r"cover .* of the qrels' .* queries; a block is missing"):
        Evaluation.merge([p1])
    assert Evaluation.merge([p1], complete=False).num_queries == p1.num_queries
    with pytest.raises(InputError, match="not made on a block"):
        Evaluation.merge([p1, evaluate(golden.qrels, bm25, METRICS)])
    with pytest.raises(InputError, match="no evaluations"):
        Evaluation.merge([])
    with pytest.raises(InputError, match="single str"):
        evaluate(golden.qrels, bm25, METRICS, queries="q001")


def test_run_merge() -> None:
    _, bm25, _ = _data(seed=9)
    bm25.latency = {q: 0.01 * i for i, q in enumerate(bm25.query_ids())}
    bm25.answers = {q: f"answer {q}" for q in list(bm25)[:5]}
    bm25.config.update({"k": 10, "failures": {"timeout": len(bm25.errors)}, "resumed": 0})
    stage = rb.Run(name="bm25:retrieved")
    for q in bm25:
        stage.add(q, ["d0", "d1"])
    bm25.stages["retrieved"] = stage
    blocks = _blocks(bm25.query_ids(), 3, 4)
    parts = []
    for block in blocks:
        part = rb.Run(name="bm25", config={**bm25.config, "failures": {}, "resumed": 1})
        for q in block:
            if q in bm25.errors:
                part.add_error(q, bm25.errors[q], latency=bm25.latency[q])
            else:
                part.add(q, bm25.hits(q), latency=bm25.latency[q])
            if q in bm25.answers:
                part.answers[q] = bm25.answers[q]
        part.config["failures"] = {"timeout": len(part.errors)} if part.errors else {}
        st = rb.Run(name="bm25:retrieved")
        for q in block:
            if q in stage:
                st.add(q, stage.hits(q))
        part.stages["retrieved"] = st
        parts.append(part)
    merged = rb.Run.merge(parts)
    assert dict(merged) == dict(bm25)
    assert merged.errors == bm25.errors and merged.latency == bm25.latency and merged.answers == bm25.answers
    assert merged.config["failures"] == {"timeout": len(bm25.errors)} and merged.config["resumed"] == 3
    assert dict(merged.stages["retrieved"]) == dict(stage)
    with pytest.raises(InputError, match="is in parts\\[0\\] and parts\\[1\\]"):
        rb.Run.merge([parts[0], parts[0]])
    renamed = rb.Run.from_ranked({"zz": ["d1"]}, name="other")
    renamed.config.update(parts[0].config)
    with pytest.raises(InputError, match="named 'other'"):
        rb.Run.merge([parts[0], renamed])
    assert set(rb.Run.merge([parts[0], renamed], name="x")) == {*parts[0], "zz"}
    deeper = rb.Run(name="bm25", config={**parts[1].config, "k": 20})
    with pytest.raises(InputError, match="config\\['k'\\]"):
        rb.Run.merge([parts[0], deeper])


def test_id_check_of_a_block_reads_the_whole_qrels() -> None:
    """A block's docs may be judged only for another block's queries: that is no id mismatch."""
    qrels = {f"q{i}": {f"d{(i + 1) % 20}": 1} for i in range(20)}
    run = {f"q{i}": {f"d{(i + 1 + j) % 20}": 1.0 - j / 10 for j in range(1, 6)} for i in range(20)}
    whole = evaluate(qrels, run, ["P@5"])  # every retrieved doc is judged somewhere: no warning
    parts = [evaluate(qrels, run, ["P@5"], queries=block) for block in _blocks(list(qrels), 4, 0)]
    _assert_same(Evaluation.merge(parts), whole)
    stranger = {q: {f"x{j}": 1.0 for j in range(5)} for q in qrels}
    with pytest.warns(IdMismatchWarning):
        part = evaluate(qrels, stranger, ["P@5"], queries=list(qrels)[:10])
    assert part.notes and "doc ids do not match" in part.notes[0]
