"""Failure lists: the queries a run gets wrong (no relevant hit, an irrelevant first hit, unjudged tops...),
and those no run gets right.

Examples
--------
>>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
>>> f = failures({"q1": ["a"], "q2": ["x", "y"]}, qrels, k=2)
>>> [q.query_id for q in f["run"].zero_hit]
['q2']
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rankbridge._numbers import JsonFields
from rankbridge.analysis.comparison import _named_runs
from rankbridge.errors import InputError
from rankbridge.evaluate import Evaluation, evaluate
from rankbridge.metrics.measures import Measure, parse_measure
from rankbridge.types import GoldenSet, Hit, Qrels, Run

__all__ = ["FailedQuery", "Failures", "RunFailures", "failures"]


@dataclass(frozen=True)
class FailedQuery(JsonFields):
    """One query in a failure list.

    Attributes
    ----------
    query_id, query:
        The id and, when a golden set was given, the text.
    run:
        The run the retrieved ids come from.
    expected:
        Relevant doc ids from the qrels, highest label first.
    retrieved:
        The first few retrieved doc ids, in rank order.
    top_score:
        The score of the first hit (``None`` without hits or scores).
    first_relevant_rank:
        1-based rank of the first relevant doc anywhere in the list, ``None`` if none was retrieved.
    judged_share:
        Share of the returned top-k that has any judgment in the qrels (NaN without hits).
    error:
        The retrieval error, ``"no result"`` for a query the run lacks, ``"empty result"`` for no hits.
    value:
        The metric value (best/worst lists).
    """

    query_id: str
    query: str | None
    run: str
    expected: tuple[str, ...]
    retrieved: tuple[str, ...]
    top_score: float | None
    first_relevant_rank: int | None
    judged_share: float
    error: str | None = None
    value: float | None = None

    def line(self) -> str:
        """One line for a text listing."""
        text = f" {self.query!r}" if self.query else ""
        rank = f"first relevant at {self.first_relevant_rank}" if self.first_relevant_rank else "no relevant retrieved"
        value = f" value={self.value:.4f}" if self.value is not None else ""
        err = f" error: {self.error}" if self.error else ""
        return (
            f"{self.query_id}{text}: {rank}; expected {', '.join(self.expected[:5]) or '-'}; "
            f"got {', '.join(self.retrieved) or '-'}{value}{err}"
        )


_LISTS = (
    "zero_hit",
    "top1_irrelevant",
    "top1_unjudged",
    "ranked_low",
    "mostly_unjudged",
    "failed",
    "best",
    "worst",
)


@dataclass(frozen=True)
class RunFailures(JsonFields):
    """Failure lists of one run (see :func:`failures` for the definitions)."""

    run: str
    k: int
    low_rank: int
    metric: str
    zero_hit: tuple[FailedQuery, ...]
    top1_irrelevant: tuple[FailedQuery, ...]
    ranked_low: tuple[FailedQuery, ...]
    mostly_unjudged: tuple[FailedQuery, ...]
    failed: tuple[FailedQuery, ...]
    best: tuple[FailedQuery, ...]
    worst: tuple[FailedQuery, ...]
    num_queries: int
    no_relevant: tuple[str, ...] = ()
    top1_unjudged: tuple[FailedQuery, ...] = ()

    def counts(self) -> dict[str, int]:
        """List name -> number of queries."""
        return {name: len(getattr(self, name)) for name in _LISTS}

    _json_keys = ("run", "k", "low_rank", "metric", "num_queries", "no_relevant", *_LISTS)

    def __str__(self) -> str:
        titles = {
            "zero_hit": f"no relevant doc in the top {self.k}",
            "top1_irrelevant": f"top result judged not relevant (a relevant one is in the top {self.k})",
            "top1_unjudged": f"top result unjudged (a relevant one is in the top {self.k})",
            "ranked_low": f"first relevant doc below rank {self.low_rank}",
            "mostly_unjudged": f"top {self.k} mostly unjudged (the metric cannot be trusted)",
            "failed": "retrieval failed or returned nothing",
            "best": f"best by {self.metric}",
            "worst": f"worst by {self.metric}",
        }
        lines = [f"{self.run}: {self.num_queries} queries"]
        for name in _LISTS:
            items = getattr(self, name)
            lines.append(f"  {titles[name]}: {len(items)}")
            lines.extend(f"    {item.line()}" for item in items[:10])
            if len(items) > 10:
                lines.append(f"    ... and {len(items) - 10} more")
        return "\n".join(lines)


@dataclass(frozen=True)
class Failures(JsonFields):
    """The result of :func:`failures`: per-run lists and the queries no run solves."""

    runs: dict[str, RunFailures]
    unsolved: tuple[FailedQuery, ...]
    k: int

    def __getitem__(self, run: str) -> RunFailures:
        try:
            return self.runs[run]
        except KeyError:
            raise InputError(f"run: expected one of {', '.join(map(repr, self.runs))}, found {run!r}") from None

    _json_keys = ("k", "runs", "unsolved")

    def __str__(self) -> str:
        parts = [str(rf) for rf in self.runs.values()]
        if len(self.runs) > 1:
            lines = [f"no run has a relevant doc in the top {self.k}: {len(self.unsolved)}"]
            lines.extend(f"  {item.line()}" for item in self.unsolved[:10])
            if len(self.unsolved) > 10:
                lines.append(f"  ... and {len(self.unsolved) - 10} more")
            parts.append("\n".join(lines))
        return "\n\n".join(parts)


def relevant_ids(judged: Mapping[str, int], rel: int = 1) -> tuple[str, ...]:
    """The doc ids judged ``rel`` or higher for a query, highest label first (then by id): what it expects."""
    return tuple(doc for doc, label in sorted(judged.items(), key=lambda t: (-t[1], t[0])) if label >= rel)


def ranked_summary(
    hits: Sequence[Hit], expected: Collection[str], show: int
) -> tuple[tuple[str, ...], float | None, int | None]:
    """``(the first show ids, the top score, the 1-based rank of the first expected id)`` of a ranked list."""
    wanted = set(expected)
    first = next((i + 1 for i, h in enumerate(hits) if h.doc_id in wanted), None)
    return tuple(h.doc_id for h in hits[:show]), (hits[0].score if hits else None), first


def _as_run(name: str, run: Run | Mapping[str, Any]) -> Run:
    if isinstance(run, Run):
        return run
    if not isinstance(run, Mapping):
        raise InputError(f"runs[{name!r}]: expected a Run or a dict, found {type(run).__name__}")
    if not run:
        return Run(name=name)
    first = next(iter(run.values()))
    if isinstance(first, Mapping):
        return Run.from_scores(run, name=name)  # type: ignore[arg-type]
    return Run.from_ranked(run, name=name)


def _several(run: Any) -> bool:
    """Whether ``run`` is ``{name: run}`` (or a list of Runs) rather than one run."""
    if isinstance(run, Run):
        return False
    if isinstance(run, (list, tuple)):
        return True
    if isinstance(run, Mapping) and run:
        first = next(iter(run.values()))
        if isinstance(first, Run):
            return True
        if isinstance(first, Mapping) and first:
            inner = next(iter(first.values()))
            return isinstance(inner, (Mapping, list, tuple))
    return False


def failures(
    run: Run | Mapping[str, Any] | Mapping[str, Run | Mapping[str, Any]] | Sequence[Run],
    qrels: Qrels | Mapping[str, Mapping[str, int]] | None = None,
    *,
    golden: GoldenSet | None = None,
    evaluation: Evaluation | Mapping[str, Evaluation] | None = None,
    k: int = 10,
    low_rank: int = 3,
    rel: int = 1,
    show: int = 5,
    n_best: int = 5,
    unjudged_share: float = 0.5,
    metric: str | Measure | None = None,
) -> Failures:
    """The queries a run gets wrong, each with its text, expected ids, retrieved ids and top score.

    Lists (a query can be in several):

    * ``zero_hit`` -- no relevant doc in the top ``k`` (``first_relevant_rank`` shows if one came later).
      A query whose judged docs are all below ``rel`` is here too (its ``expected`` is empty): no run can
      find a relevant doc for it, which is a failure of the golden set or the corpus to look at, not to
      hide; it is also in ``worst`` and in ``unsolved``.
    * ``top1_irrelevant`` -- a relevant doc is in the top ``k`` but the first result is *judged* not
      relevant: the cases a reranker can fix.
    * ``top1_unjudged`` -- a relevant doc is in the top ``k`` and the first result has no judgment: it
      may be relevant (judge it) or not.
    * ``ranked_low`` -- the first relevant doc is retrieved but below rank ``low_rank`` (inside or
      beyond the top ``k``), worst first.
    * ``mostly_unjudged`` -- more than ``unjudged_share`` of the returned top ``k`` has no judgment at
      all, so the metric says little (judge those pairs).
    * ``failed`` -- retrieval raised, the run has no result for the query, or an empty one (the item's
      ``error`` says which).
    * ``best`` / ``worst`` -- the ``n_best`` highest and lowest values of ``metric``.
    * ``unsolved`` (on the :class:`Failures`) -- queries no run has a relevant doc for in its top ``k``.

    Parameters
    ----------
    run:
        One run (a :class:`~rankbridge.Run` or plain dict), or several as ``{name: run}`` or a list of Runs.
    qrels:
        The judgments; default ``golden.qrels``.
    golden:
        Adds query texts.
    evaluation:
        Precomputed evaluation(s) for best/worst (one, or ``{name: Evaluation}``); computed if absent.
    k:
        The cut-off that defines a hit.
    low_rank:
        "Ranked low" means a first relevant rank above this.
    rel:
        Minimum label that counts as relevant.
    show:
        How many retrieved ids each item carries.
    n_best:
        Length of the best and worst lists.
    unjudged_share:
        Threshold of the ``mostly_unjudged`` list.
    metric:
        Metric for best/worst; default the evaluation's first metric, else ``ndcg@k``.

    Returns
    -------
    Failures
        ``failures(...)[run_name]`` gives a run's :class:`RunFailures`; ``.unsolved`` the shared misses.

    Examples
    --------
    >>> qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    >>> run = Run.from_ranked({"q1": ["a"], "q2": ["x", "y", "z", "b"], "q3": ["x"]}, name="bm25")
    >>> f = failures(run, qrels, k=3)
    >>> [q.query_id for q in f["bm25"].zero_hit], [q.query_id for q in f["bm25"].ranked_low]
    (['q2', 'q3'], ['q2'])
    >>> f["bm25"].ranked_low[0].first_relevant_rank
    4
    """
    for pname, value, lo in (("k", k, 1), ("low_rank", low_rank, 1), ("show", show, 0), ("n_best", n_best, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise InputError(f"{pname} must be an int >= {lo}. Got {value!r} instead.")
    if not (0 <= unjudged_share < 1):
        raise InputError(f"unjudged_share must be a number in [0, 1). Got {unjudged_share!r} instead.")
    if qrels is None:
        if golden is None:
            raise InputError("qrels: expected judgments (or golden=), found None")
        qrels = golden.qrels
    q = qrels if isinstance(qrels, Qrels) else Qrels(qrels)
    if _several(run):
        named = _named_runs(run)  # type: ignore[arg-type]
        runs = {name: _as_run(name, r) for name, r in named.items()}  # type: ignore[arg-type]
    else:
        single = _as_run(run.name if isinstance(run, Run) else "run", run)  # type: ignore[arg-type]
        runs = {single.name: single}
    if not runs:
        raise InputError("run: expected at least one run, found none")
    evals: dict[str, Evaluation] = {}
    if isinstance(evaluation, Evaluation):
        if len(runs) != 1:
            raise InputError("evaluation: several runs need {name: Evaluation}, found one Evaluation")
        evals[next(iter(runs))] = evaluation
    elif evaluation is not None:
        evals.update(evaluation)
    if metric is None:
        first = next(iter(evals.values()), None)
        metric_name = first.metric_names[0] if first is not None else f"ndcg@{k}"
    else:
        metric_name = str(parse_measure(metric))
    texts = golden.texts() if golden is not None else {}

    qids = sorted(q)
    relevant = {qid: relevant_ids(q[qid], rel) for qid in qids}
    no_relevant = tuple(qid for qid in qids if not relevant[qid])

    per_run: dict[str, RunFailures] = {}
    solved_by_any: set[str] = set()
    first_items: dict[str, FailedQuery] = {}
    for name, r in runs.items():
        ev = evals.get(name)
        if ev is None or metric_name not in ev.values:
            ev = evaluate(q, r, [metric_name])
        values = dict(zip(ev.query_ids, ev.values[metric_name].tolist(), strict=True))
        lists: dict[str, list[FailedQuery]] = {n: [] for n in _LISTS}
        scored: list[tuple[float, str, FailedQuery]] = []
        for qid in qids:
            hits: list[Hit] = r.hits(qid) if qid in r else []
            error = r.errors.get(qid) if qid not in r else None
            if qid not in r and error is None:
                error = "no result"
            elif qid in r and not hits:
                error = "empty result"
            judged = q[qid]
            retrieved, top_score, first_rel = ranked_summary(hits, relevant[qid], show)
            top = hits[:k]
            share = sum(1 for h in top if h.doc_id in judged) / len(top) if top else math.nan
            item = FailedQuery(
                query_id=qid,
                query=texts.get(qid),
                run=name,
                expected=relevant[qid],
                retrieved=retrieved,
                top_score=top_score,
                first_relevant_rank=first_rel,
                judged_share=share,
                error=error,
                value=values.get(qid),
            )
            first_items.setdefault(qid, item)
            if error is not None:
                lists["failed"].append(item)
            scored.append((values.get(qid, 0.0), qid, item))
            if first_rel is None or first_rel > k:
                lists["zero_hit"].append(item)
            else:
                solved_by_any.add(qid)
                if first_rel > 1:
                    top_judged = hits[0].doc_id in judged
                    lists["top1_irrelevant" if top_judged else "top1_unjudged"].append(item)
            if first_rel is not None and first_rel > low_rank:
                lists["ranked_low"].append(item)
            if top and share < 1.0 - unjudged_share:
                lists["mostly_unjudged"].append(item)
        lists["ranked_low"].sort(key=lambda it: (-(it.first_relevant_rank or 0), it.query_id))
        best = sorted(scored, key=lambda t: (-t[0], t[1]))[:n_best]
        worst = sorted(scored, key=lambda t: (t[0], t[1]))[:n_best]
        per_run[name] = RunFailures(
            run=name,
            k=k,
            low_rank=low_rank,
            metric=metric_name,
            zero_hit=tuple(lists["zero_hit"]),
            top1_irrelevant=tuple(lists["top1_irrelevant"]),
            ranked_low=tuple(lists["ranked_low"]),
            mostly_unjudged=tuple(lists["mostly_unjudged"]),
            top1_unjudged=tuple(lists["top1_unjudged"]),
            failed=tuple(lists["failed"]),
            best=tuple(t[2] for t in best),
            worst=tuple(t[2] for t in worst),
            num_queries=len(qids),
            no_relevant=no_relevant,
        )
    unsolved = tuple(first_items[qid] for qid in qids if qid not in solved_by_any)
    return Failures(runs=per_run, unsolved=unsolved, k=k)
