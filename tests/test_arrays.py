"""Array input (interned ids) gives exactly what the dict path gives."""

from __future__ import annotations

import numpy as np
import pytest

import rankbridge as rb
from rankbridge.errors import InputError
from rankbridge.metrics import MEASURES, Measure, compute, table_from_arrays

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
    qrels = rb.Qrels({qid: {} for qid in qids} | _qrels_dict(qids, jq, jd, jl))
    run = rb.Run.from_ranked({qids[i]: [f"d{d}" for d in row if d >= 0] for i, row in enumerate(docs)})
    ev = rb.evaluate(qrels, run, ALL)
    order = [ev.query_ids.index(qid) for qid in qids]  # evaluate sorts query ids as strings
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
