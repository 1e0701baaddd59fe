"""Array input (interned ids) gives exactly what the dict path gives."""

from __future__ import annotations

import numpy as np
import pytest

import rankbridge as rb
from rankbridge.errors import InputError
from rankbridge.metrics import MEASURES, Measure, compute, table_from_arrays
from rankbridge.metrics import arrays as arrays_module

ALL = [Measure(n, 10 if spec.k == "required" else None) for n, spec in MEASURES.items()] + [
    Measure("ndcg", 5),
    Measure("map", 3),
    Measure("mrr", 2, rel=2),
    Measure("precision", 5, rel=2),
]


@pytest.mark.parametrize("seed", range(20))
def test_arrays_equal_ranked_dict_path(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_q, depth, n_docs = 15, 12, 40
    docs = rng.integers(0, n_docs, size=(n_q, depth))
    docs[rng.random((n_q, depth)) < 0.15] = -1  # padding
    # padding only at the end of a row, as an index returns it
    docs = np.array([np.r_[row[row >= 0], row[row < 0]] for row in docs])
    jq, jd, jl = [], [], []
    for q in range(n_q):
        for d in rng.choice(n_docs, size=rng.integers(0, 8), replace=False):
            jq.append(q)
            jd.append(int(d))
            jl.append(int(rng.integers(-1, 4)))
    qids = [f"q{i}" for i in range(n_q)]
    table = table_from_arrays(qids, docs, np.array(jq, dtype=int), np.array(jd, dtype=int), np.array(jl, dtype=int))
    qrels = rb.Qrels(_qrels_dict(qids, jq, jd, jl))  # a row without judgments: a query the qrels lack
    run = rb.Run.from_ranked({qids[i]: [f"d{d}" for d in row if d >= 0] for i, row in enumerate(docs)})
    ev = rb.evaluate(qrels, run, ALL)
    assert sorted(table.query_ids) == list(ev.query_ids)  # the same queries evaluated
    order = [ev.query_ids.index(qid) for qid in table.query_ids]  # evaluate sorts query ids as strings
    for m in ALL:  # num_ret too: a doc repeated in a row counts once, as in a ranked run
        np.testing.assert_allclose(compute(table, m), ev[m][order], rtol=0, atol=1e-12, err_msg=str(m))


def _qrels_dict(qids: list[str], jq: list[int], jd: list[int], jl: list[int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for q, d, label in zip(jq, jd, jl, strict=True):
        out.setdefault(qids[q], {})[f"d{d}"] = label
    return out


def test_array_input_errors() -> None:
    with pytest.raises(InputError, match="2-d integer array"):
        table_from_arrays(["q"], np.array([0.5]), np.array([0]), np.array([0]), np.array([1]))
    with pytest.raises(InputError, match="2 rows but 1 query ids"):
        table_from_arrays(["q"], np.zeros((2, 3), dtype=int), np.array([0]), np.array([0]), np.array([1]))
    with pytest.raises(InputError, match="same \\(query, doc\\) pair twice"):
        table_from_arrays(["q"], np.zeros((1, 3), dtype=int), np.array([0, 0]), np.array([1, 1]), np.array([1, 0]))


def _random_case(seed: int, *, n_q: int = 15, depth: int = 12, n_docs: int = 40, max_judged: int = 8, dups: bool):
    rng = np.random.default_rng(seed)
    docs = rng.integers(0, n_docs, size=(n_q, depth))
    if not dups:  # distinct ids per row, as FAISS returns them
        docs = np.array([rng.choice(n_docs, size=depth, replace=False) for _ in range(n_q)])
    docs[rng.random((n_q, depth)) < 0.15] = -1
    docs = np.array([np.r_[row[row >= 0], row[row < 0]] for row in docs])
    jq, jd, jl = [], [], []
    for q in range(n_q):
        for d in rng.choice(n_docs, size=rng.integers(0, max_judged + 1), replace=False):
            jq.append(q)
            jd.append(int(d))
            jl.append(int(rng.integers(-1, 4)))
    perm = rng.permutation(len(jq))  # judgments in any order
    arrays = tuple(np.array(a, dtype=int)[perm] for a in (jq, jd, jl))
    qids = [f"q{i}" for i in range(n_q)]
    qrels = rb.Qrels(_qrels_dict(qids, jq, jd, jl))  # a row without judgments: a query the qrels lack
    run = rb.Run.from_ranked({qids[i]: [f"d{d}" for d in row if d >= 0] for i, row in enumerate(docs)})
    return qids, docs, arrays, qrels, run


def _assert_equal_to_dict_path(table, qids, qrels, run) -> None:  # type: ignore[no-untyped-def]
    ev = rb.evaluate(qrels, run, ALL, check_ids=False)
    assert sorted(table.query_ids) == list(ev.query_ids)  # the same queries evaluated
    order = [ev.query_ids.index(qid) for qid in table.query_ids]
    for m in ALL:
        np.testing.assert_allclose(compute(table, m), ev[m][order], rtol=0, atol=1e-12, err_msg=str(m))


@pytest.mark.parametrize("way", ["compare", "filter"])
@pytest.mark.parametrize("seed", range(12))
def test_both_join_strategies_equal_the_dict_path(seed: int, way: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # "compare": each row against its query's judged docs; "filter": the hash filter over the matrix
    if way == "filter":
        monkeypatch.setattr(arrays_module, "_MAX_SLOTS", 0)
    else:
        monkeypatch.setattr(arrays_module, "_COMPARE_FACTOR", 10**6)
    for dups, check in ((True, True), (False, True), (False, False)):
        qids, docs, (jq, jd, jl), qrels, run = _random_case(seed, dups=dups, max_judged=1 + seed % 8)
        table = table_from_arrays(qids, docs, jq, jd, jl, check_duplicates=check)
        _assert_equal_to_dict_path(table, qids, qrels, run)


def test_filter_path_with_ids_beyond_the_filter_and_int64_keys() -> None:
    # doc ids near 2**61: the (query, doc) key no longer fits one int64 and the filter sees only low bits
    qids, docs, (jq, jd, jl), qrels, run = _random_case(3, dups=False, max_judged=30, depth=30)
    big = 2**61 + 7
    shifted = np.where(docs >= 0, docs * 2**20 + big, -1)
    table = table_from_arrays(qids, shifted, jq, jd * 2**20 + big, jl)
    _assert_equal_to_dict_path(table, qids, qrels, run)


def test_unsigned_and_narrow_dtypes() -> None:
    qids, docs, (jq, jd, jl), qrels, run = _random_case(5, dups=True)
    for dtype in (np.int32, np.int16):
        _assert_equal_to_dict_path(table_from_arrays(qids, docs.astype(dtype), jq, jd, jl), qids, qrels, run)
    full = np.array([np.r_[row[row >= 0], np.full((row < 0).sum(), 39)] for row in docs])
    full_run = rb.Run.from_ranked({qids[i]: [f"d{d}" for d in row] for i, row in enumerate(full)})
    table = table_from_arrays(qids, full.astype(np.uint64), jq.astype(np.uint32), jd, jl)
    _assert_equal_to_dict_path(table, qids, qrels, full_run)


def test_unchecked_rows_refuse_a_judged_doc_found_twice() -> None:
    docs = np.array([[3, 1, 3], [2, 0, -1]])
    with pytest.raises(InputError, match=r"row 0 \('a'\) holds doc 3 twice \(columns \[0, 2\]\)"):
        table_from_arrays(["a", "b"], docs, np.array([0]), np.array([3]), np.array([1]), check_duplicates=False)
    # checked (the default): the first copy is the hit, the repeat counts once
    t = table_from_arrays(["a", "b"], docs, np.array([0, 1]), np.array([3, 5]), np.array([1, 1]))
    assert t.n_ret.tolist() == [2, 2] and t.hit_rank.tolist() == [1]


def test_padding_must_end_its_row_and_ids_must_be_valid() -> None:
    one = (np.array([0]), np.array([1]), np.array([1]))
    with pytest.raises(InputError, match="row 1: -1 at column 0 is followed by doc ids"):
        table_from_arrays(["a", "b"], np.array([[1, 2], [-1, 2]]), *one)
    with pytest.raises(InputError, match="expected doc indices >= 0 or -1 as padding, found -2"):
        table_from_arrays(["a"], np.array([[1, -2]]), *one)
    with pytest.raises(InputError, match=r"qrels_query: expected query indices in \[0, 1\), found 0..3"):
        table_from_arrays(["a"], np.array([[1, 2]]), np.array([0, 3]), np.array([1, 2]), np.array([1, 1]))
    with pytest.raises(InputError, match="qrels_doc: expected a 1-d integer array"):
        table_from_arrays(["a"], np.array([[1, 2]]), np.array([0]), np.array([1.5]), np.array([1]))
    with pytest.raises(InputError, match="query index 0, doc 1"):
        table_from_arrays(["a"], np.array([[1, 2]]), np.array([0, 0]), np.array([1, 1]), np.array([1, 1]))


def test_evaluate_takes_the_table_and_the_public_paths() -> None:
    t = table_from_arrays(
        ("q0", "q1"), np.array([[4, 2, 7], [1, -1, -1]]), np.array([0, 1]), np.array([2, 5]), np.array([1, 1])
    )
    ev = rb.evaluate(None, t, ["mrr", "num_ret"])
    assert ev.per_query["mrr"] == {"q0": 0.5, "q1": 0.0}
    assert ev["num_ret"].tolist() == [3.0, 1.0]
    assert rb.metrics.table_from_arrays is arrays_module.table_from_arrays


@pytest.mark.parametrize("seed", range(8))
def test_repeated_rows_pairwise_and_sorted_agree(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # shallow rows compare every column pair (in blocks of rows), deep ones sort: the same rows either way
    rng = np.random.default_rng(seed)
    depth = 2 + seed * 2
    full = rng.integers(0, 3 * depth, size=(200, depth))
    padded = np.where(rng.random(full.shape) < 0.1, -1, full)
    padded = np.array([np.r_[row[row >= 0], row[row < 0]] for row in padded])  # padding at the ends
    for docs in (full, padded):
        expected = np.array([len(set(r[r >= 0].tolist())) < (r >= 0).sum() for r in docs])
        assert expected.any() and not expected.all()
        monkeypatch.setattr(arrays_module, "_SHIFT_BLOCK", 7 * depth)  # several blocks, the last one short
        shallow = arrays_module.repeated_rows(docs, int(docs.min()))
        monkeypatch.setattr(arrays_module, "_SHIFT_DEPTH", 0)
        by_sort = arrays_module.repeated_rows(docs, int(docs.min()))
        monkeypatch.undo()
        np.testing.assert_array_equal(shallow, expected)
        np.testing.assert_array_equal(by_sort, expected)
