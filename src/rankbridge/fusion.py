"""Rank fusion: combine the rankings of several runs into one.

Reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009): a doc's fused score is
``sum over runs of 1 / (k + rank)``, with ``k = 60`` as in the paper (and in LangChain's
``EnsembleRetriever``, Elasticsearch and Azure AI Search). Ties in the fused score keep the order of first
appearance across the input runs, in the order the runs are given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rankbridge.errors import InputError
from rankbridge.types import Hit, Run

__all__ = ["reciprocal_rank_fusion"]


def reciprocal_rank_fusion(
    runs: Sequence[Run] | Mapping[str, Run],
    *,
    k: int = 60,
    depth: int | None = None,
    weights: Sequence[float] | None = None,
    name: str = "rrf",
) -> Run:
    """Fuse ranked runs with reciprocal rank fusion.

    Parameters
    ----------
    runs:
        Two or more runs (a list, or a dict name -> run).
    k:
        The RRF constant (60 in the paper).
    depth:
        Keep this many fused hits per query (default: all).
    weights:
        One weight per run (default 1 each); the score is ``sum(w / (k + rank))``.
    name:
        Name of the fused run.

    Returns
    -------
    Run
        A ranked run whose hits carry the fused score. A query that failed in every input run fails
        here too; one that failed in some runs is fused from the others and noted in ``config``.

    Examples
    --------
    >>> a = Run.from_ranked({"q": ["d1", "d2", "d3"]})
    >>> b = Run.from_ranked({"q": ["d3", "d1"]})
    >>> reciprocal_rank_fusion([a, b]).ranking("q")
    ['d1', 'd3', 'd2']
    """
    inputs = list(runs.values()) if isinstance(runs, Mapping) else list(runs)
    if len(inputs) < 2:
        raise InputError(f"reciprocal_rank_fusion: expected at least 2 runs, found {len(inputs)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise InputError(f"k must be an int >= 0. Got {k!r} instead.")
    w = [1.0] * len(inputs) if weights is None else [float(x) for x in weights]
    if len(w) != len(inputs):
        raise InputError(f"weights: expected {len(inputs)} values (one per run), found {len(w)}")
    fused = Run(name=name, config={"fusion": "rrf", "k": k, "inputs": [r.name for r in inputs], "weights": w})
    partial: dict[str, list[str]] = {}
    query_ids: list[str] = []
    for run in inputs:
        for qid in run.query_ids():
            if qid not in query_ids:
                query_ids.append(qid)
    for qid in query_ids:
        scores: dict[str, float] = {}
        texts: dict[str, Hit] = {}
        failed = []
        for run, weight in zip(inputs, w, strict=True):
            if qid not in run:
                failed.append(run.name)
                continue
            for rank, hit in enumerate(run.hits(qid), 1):
                scores[hit.doc_id] = scores.get(hit.doc_id, 0.0) + weight / (k + rank)
                texts.setdefault(hit.doc_id, hit)
        if len(failed) == len(inputs):
            fused.add_error(qid, "; ".join(f"{r.name}: {r.errors.get(qid, 'no result')}" for r in inputs))
            continue
        if failed:
            partial[qid] = failed
        # sorted() is stable: equal scores keep first-appearance order
        order = sorted(scores, key=lambda d: -scores[d])[:depth]
        fused.add(qid, [Hit(d, scores[d], texts[d].text, texts[d].metadata) for d in order])
    if partial:
        fused.config["partial"] = partial
    return fused
