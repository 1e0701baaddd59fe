"""The core data model: :class:`Qrels`, :class:`Hit`, :class:`Run`, :class:`Query`, :class:`GoldenSet`.

Every stage of rankbridge speaks these few types, so a run read from a TREC file, produced by the
runner, or captured from a framework callback is evaluated the same way.

A :class:`Run` holds, per query, one of two kinds of result:

* **scored** -- a ``{doc_id: score}`` mapping (TREC run files, plain dicts). The ranking is derived
  from the scores exactly as trec_eval does: score descending, then doc id descending.
* **ranked** -- a list of :class:`Hit` in the order a retriever returned them (frameworks, the runner,
  live capture). The list order *is* the ranking; scores are kept but never re-sorted. A repeated doc id
  keeps its first (best) position; later copies are dropped and counted in :attr:`Run.duplicates`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from rankbridge.errors import InputError

__all__ = ["GoldenSet", "Hit", "Qrels", "Query", "Run"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved item.

    Parameters
    ----------
    doc_id:
        The id that qrels judge (a document or chunk id).
    score:
        The retriever's score, when it gives one (LangChain documents carry none).
    text:
        The retrieved text, when known (RAGAS needs it).
    metadata:
        Anything else the framework attached to the hit.

    Examples
    --------
    >>> Hit("doc-1", score=0.83)
    Hit(doc_id='doc-1', score=0.83, text=None, metadata=None)
    """

    doc_id: str
    score: float | None = None
    text: str | None = None
    metadata: Mapping[str, Any] | None = None


def _check_id(value: object, what: str, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise InputError(f"{where}: expected a {what} as str (or int), found {type(value).__name__} {value!r}")


def _check_label(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: expected an integer relevance label, found {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise InputError(f"{where}: expected an integer relevance label, found {value!r}")
        return int(value)
    return int(value)


def _check_score(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:  # numpy scalars and other number types
            value = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise InputError(f"{where}: expected a numeric score, found {value!r}") from None
    f = float(value)
    if math.isnan(f):
        raise InputError(f"{where}: expected a numeric score, found NaN")
    return f


class Qrels(Mapping[str, Mapping[str, int]]):
    """Relevance judgments: query id -> {doc id -> integer label}.

    Label 0 (or negative) means judged non-relevant; labels >= 1 are relevant, graded labels (0-3, as an
    LLM judge or Databricks use them) are kept as given.

    Parameters
    ----------
    data:
        ``{query_id: {doc_id: label}}``. Ids may be str or int (ints become str); labels must be
        integers (``2.0`` is accepted, ``2.5`` is not).
    name:
        Where the judgments came from, for reports.

    Examples
    --------
    >>> qrels = Qrels({"q1": {"d1": 2, "d2": 0}})
    >>> qrels["q1"]["d1"]
    2
    >>> qrels.num_relevant("q1")
    1
    """

    __slots__ = ("_cache", "_data", "name")

    def __init__(self, data: Mapping[Any, Mapping[Any, Any]] | None = None, *, name: str = "qrels"):
        self.name = name
        self._cache: dict[Any, Any] = {}
        clean: dict[str, dict[str, int]] = {}
        for qid, docs in (data or {}).items():
            q = _check_id(qid, "query id", f"qrels[{qid!r}]")
            if not isinstance(docs, Mapping):
                raise InputError(f"qrels[{qid!r}]: expected a mapping of doc id -> label, found {type(docs).__name__}")
            inner = clean.setdefault(q, {})
            for doc, label in docs.items():
                if type(doc) is str and type(label) is int:  # the common case, checked without a call
                    inner[doc] = label
                    continue
                where = f"qrels[{qid!r}][{doc!r}]"
                inner[_check_id(doc, "doc id", where)] = _check_label(label, where)
        self._data = clean

    @classmethod
    def _trusted(cls, data: dict[str, dict[str, int]], *, name: str = "qrels") -> Qrels:
        """Wrap already-validated data without copying (used by the readers)."""
        self = cls.__new__(cls)
        self.name = name
        self._cache = {}
        self._data = data
        return self

    def __getitem__(self, qid: str) -> Mapping[str, int]:
        return self._data[qid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        n = sum(len(d) for d in self._data.values())
        return f"Qrels(name={self.name!r}, queries={len(self._data)}, judgments={n})"

    def num_relevant(self, qid: str, rel: int = 1) -> int:
        """Number of docs of ``qid`` with a label >= ``rel``."""
        return sum(1 for v in self._data.get(qid, {}).values() if v >= rel)

    def to_dict(self) -> dict[str, dict[str, int]]:
        """A plain ``{qid: {doc: label}}`` copy."""
        return {q: dict(d) for q, d in self._data.items()}


class Run(Mapping[str, "Mapping[str, float] | Sequence[Hit]"]):
    """Retrieval results for a set of queries.

    Build one with :meth:`from_scores` (``{qid: {doc: score}}``, ranked like trec_eval),
    :meth:`from_ranked` (``{qid: [hits in rank order]}``, as a retriever returned them), or a reader in
    :mod:`rankbridge.io`.

    Attributes
    ----------
    name:
        The run's name (a TREC run tag, a strategy name).
    errors:
        ``{qid: message}`` for queries whose retrieval failed. A failed query stays in the evaluation and
        scores 0, so failures are never hidden by averaging.
    latency:
        ``{qid: seconds}`` spent retrieving each query, when known.
    duplicates:
        ``{qid: count}`` of repeated doc ids that were dropped (first occurrence kept).
    config:
        Free-form settings that produced the run (retriever, k, model...), saved with history.
    stages:
        ``{stage name: Run}``: other lists recorded in the same pass, e.g. ``"retrieved"`` -- what the
        retriever returned before a query engine's node postprocessors or a reranker produced this run's
        (final) lists. Read one with :meth:`to_stage`.
    answers:
        ``{qid: answer text}`` when the run came from an application that answers (a query or chat
        engine, a chain, an agent run by :func:`~rankbridge.run_retriever`): the RAGAS bridge uses them.

    Examples
    --------
    >>> run = Run.from_ranked({"q1": ["d3", "d1", "d3"]}, name="bm25")
    >>> [h.doc_id for h in run.hits("q1")]
    ['d3', 'd1']
    >>> run.duplicates
    {'q1': 1}
    >>> Run.from_scores({"q1": {"a": 1.0, "b": 2.0}}).ranking("q1")
    ['b', 'a']
    """

    def __init__(
        self,
        *,
        name: str = "run",
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.config: dict[str, Any] = dict(config or {})
        self._data: dict[str, dict[str, float] | list[Hit]] = {}
        self.errors: dict[str, str] = {}
        self.latency: dict[str, float] = {}
        self.duplicates: dict[str, int] = {}
        self.stages: dict[str, Run] = {}
        self.answers: dict[str, str] = {}
        self._cache: dict[Any, Any] = {}

    def to_stage(self, stage: str) -> Run:
        """The run of one recorded stage: ``"final"`` is this run, other names are in :attr:`stages`.

        Examples
        --------
        >>> run = Run.from_ranked({"q1": ["d2", "d1"]}, name="engine")
        >>> run.stages["retrieved"] = Run.from_ranked({"q1": ["d1", "d2", "d3"]}, name="engine:retrieved")
        >>> run.to_stage("retrieved").ranking("q1"), run.to_stage("final") is run
        (['d1', 'd2', 'd3'], True)
        >>> run.to_stage("reranked")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        rankbridge.errors.InputError: run 'engine' has no stage 'reranked'; it has: 'final', 'retrieved'
        """
        if stage == "final":
            return self
        found = self.stages.get(stage)
        if found is None:
            have = ", ".join(repr(s) for s in ["final", *self.stages])
            raise InputError(f"run {self.name!r} has no stage {stage!r}; it has: {have}")
        return found

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_scores(cls, data: Mapping[Any, Mapping[Any, Any]], *, name: str = "run", copy: bool = True) -> Run:
        """A scored run from ``{qid: {doc_id: score}}``; ties ranked by doc id descending (trec_eval).

        With ``copy=False`` the inner dicts are used as given (already validated by a reader).
        """
        run = cls(name=name)
        for qid, docs in data.items():
            q = _check_id(qid, "query id", f"run[{qid!r}]")
            if not isinstance(docs, Mapping):
                raise InputError(f"run[{qid!r}]: expected a mapping of doc id -> score, found {type(docs).__name__}")
            if copy:
                clean: dict[str, float] = {}
                for doc, score in docs.items():
                    where = f"run[{qid!r}][{doc!r}]"
                    clean[_check_id(doc, "doc id", where)] = _check_score(score, where)
                run._data[q] = clean
            else:
                run._data[q] = docs  # type: ignore[assignment]
        return run

    @classmethod
    def from_ranked(
        cls,
        data: Mapping[Any, Iterable[Hit | str | tuple[str, float]]],
        *,
        name: str = "run",
    ) -> Run:
        """A ranked run from ``{qid: [hit, ...]}`` in rank order (best first).

        Items may be :class:`Hit`, plain doc ids, or ``(doc_id, score)`` pairs.
        """
        run = cls(name=name)
        for qid, hits in data.items():
            run.add(qid, hits)
        return run

    def add(self, qid: Any, hits: Iterable[Hit | str | tuple[str, float]], *, latency: float | None = None) -> None:
        """Set the ranked hits of one query (rank order, best first); duplicates keep the first."""
        q = _check_id(qid, "query id", f"run[{qid!r}]")
        if isinstance(hits, (Mapping, str, bytes)):
            kind = "a mapping of doc -> score" if isinstance(hits, Mapping) else "a string"
            raise InputError(
                f"run[{qid!r}]: expected hits in rank order (a list), found {kind}; "
                "use Run.from_scores for {doc: score} results"
            )
        seen: set[str] = set()
        out: list[Hit] = []
        dropped = 0
        for i, item in enumerate(hits):
            where = f"run[{qid!r}][{i}]"
            if isinstance(item, Hit):
                hit = item
                if not isinstance(hit.doc_id, str):
                    hit = Hit(_check_id(hit.doc_id, "doc id", where), hit.score, hit.text, hit.metadata)
                score = hit.score
                if score is not None and (type(score) is not float or score != score):
                    _check_score(score, where)  # the common case (a finite float) skips the call
            elif isinstance(item, (str, int)) and not isinstance(item, bool):
                hit = Hit(_check_id(item, "doc id", where))
            elif isinstance(item, tuple) and len(item) == 2:
                hit = Hit(_check_id(item[0], "doc id", where), _check_score(item[1], where))
            else:
                raise InputError(f"{where}: expected a Hit, a doc id or a (doc_id, score) pair, found {item!r}")
            if hit.doc_id in seen:
                dropped += 1
                continue
            seen.add(hit.doc_id)
            out.append(hit)
        self._data[q] = out
        if dropped:
            self.duplicates[q] = dropped
        else:
            self.duplicates.pop(q, None)
        if latency is not None:
            self.latency[q] = float(latency)
        self._cache.clear()

    def add_error(self, qid: Any, message: str, *, latency: float | None = None) -> None:
        """Record that retrieval failed for ``qid``; it is evaluated as an empty result."""
        q = _check_id(qid, "query id", f"run[{qid!r}]")
        self.errors[q] = message
        self._data.pop(q, None)
        if latency is not None:
            self.latency[q] = float(latency)
        self._cache.clear()

    # -- access ---------------------------------------------------------------------------------
    def __getitem__(self, qid: str) -> Mapping[str, float] | Sequence[Hit]:
        return self._data[qid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Run(name={self.name!r}, queries={len(self._data)}, errors={len(self.errors)})"

    def is_scored(self, qid: str) -> bool:
        """True when ``qid`` holds a ``{doc: score}`` mapping (ranked by score), False for a hit list."""
        return isinstance(self._data[qid], dict)

    def hits(self, qid: str) -> list[Hit]:
        """The hits of ``qid`` in rank order (a scored query is sorted like trec_eval)."""
        value = self._data[qid]
        if isinstance(value, dict):
            order = sorted(value.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            return [Hit(doc, score) for doc, score in order]
        return list(value)

    def ranking(self, qid: str) -> list[str]:
        """The doc ids of ``qid`` in rank order."""
        return [h.doc_id for h in self.hits(qid)]

    def query_ids(self) -> list[str]:
        """Every query the run knows about: with results or with an error."""
        return list(self._data) + [q for q in self.errors if q not in self._data]

    def to_scores(self) -> dict[str, dict[str, float]]:
        """``{qid: {doc: score}}`` whose trec_eval ordering equals this run's ranking.

        A ranked query's scores are kept when they strictly decrease down the list; otherwise (no
        scores, ties, a reranker's reordering) they are replaced by ``n - rank + 1`` so that the rank
        order survives a round trip through a TREC file.
        """
        out: dict[str, dict[str, float]] = {}
        for qid, value in self._data.items():
            if isinstance(value, dict):
                out[qid] = dict(value)
                continue
            scores = [h.score for h in value]
            decreasing = all(s is not None for s in scores) and all(
                a > b  # type: ignore[operator]
                for a, b in pairwise(scores)
            )
            n = len(value)
            if decreasing:
                out[qid] = {h.doc_id: float(h.score) for h in value}  # type: ignore[arg-type]
            else:
                out[qid] = {h.doc_id: float(n - i) for i, h in enumerate(value)}
        return out


@dataclass(frozen=True, slots=True)
class Query:
    """One golden-set question.

    Examples
    --------
    >>> Query("q1", "what causes scurvy?", category="medical").category
    'medical'
    """

    id: str
    text: str
    category: str | None = None
    reference: str | None = None
    reference_context_ids: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class GoldenSet:
    """Queries with their judgments (and, optionally, categories and reference answers).

    Examples
    --------
    >>> g = GoldenSet([Query("q1", "scurvy cause")], Qrels({"q1": {"d1": 1}}))
    >>> g.texts()
    {'q1': 'scurvy cause'}
    """

    queries: list[Query]
    qrels: Qrels
    corpus: dict[str, dict[str, Any]] | None = None
    name: str = "golden"

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for q in self.queries:
            if q.id in seen:
                raise InputError(f"golden set {self.name!r}: query id {q.id!r} appears twice")
            seen.add(q.id)

    def texts(self) -> dict[str, str]:
        """``{query_id: text}``."""
        return {q.id: q.text for q in self.queries}

    def __len__(self) -> int:
        return len(self.queries)

    @classmethod
    def from_beir(cls, path: str, *, split: str = "test", load_corpus: bool = True) -> GoldenSet:
        """Read a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

        Only queries that have judgments in the split are kept, as BEIR evaluates them.
        """
        from rankbridge.io.beir import read_beir

        return read_beir(path, split=split, load_corpus=load_corpus)
