"""Do a run's doc ids name the documents the golden set judges? Detect, explain and resolve id mismatches.

Apps built the usual way do not hand back the ids a golden set judges: ``SentenceSplitter`` and
``VectorStoreIndex.from_documents`` give chunks UUID node ids (the corpus id is the node's
``ref_doc_id``), and ``InMemoryVectorStore.add_documents`` without ids gives documents UUIDs (the corpus
id is in their metadata, if the app put it there). Scored as they are, such runs get 0.000 everywhere --
a silently wrong number. This module tells a real score from that:

* the **known ids** are the golden set's corpus ids and every doc id its qrels judge;
* with a corpus, results **match** when at least :data:`CORPUS_SHARE` of their ids are known. A few
  unmatched ids (pooling, an index holding more than the golden set's corpus) are fine;
* with qrels alone, results match unless *none* of at least :data:`MIN_HITS_QRELS_ONLY` sampled ids is
  judged anywhere in the qrels: sparse qrels (BEIR lists only the relevant documents) judge a tiny share
  of what a good retriever returns, so any lower bar would flag real runs;
* when the ids in use do not match, every other **id source** a result offers -- the object's own id,
  ``ref_doc_id``, each ``metadata:KEY`` with a string or integer value -- is tried on the same results.
  One that matches (and is not tied with another that gives different ids) is the resolution;
  otherwise the mismatch is reported with what the results carry;
* a source that matches is still **not an id** when the evidence says it names something else: with a
  corpus that has texts, the results' texts must be in the documents it names (a page number that happens
  to be a numeric corpus id names documents that do not contain the chunk); without texts to compare, a
  source of numbers must not name far fewer distinct ids than there are distinct results (12 page numbers
  over 48 distinct chunks). Such a source is never chosen automatically; the report says why, and ``id_from=`` naming it
  still uses it.

:func:`check_results` judges raw framework results (the runner's probe, live capture);
:func:`check_run` judges a finished :class:`~rankbridge.Run` from its hits' ids and metadata.

Examples
--------
>>> from rankbridge import GoldenSet, Hit, Qrels, Query, Run
>>> golden = GoldenSet([Query("q1", "scurvy")], Qrels({"q1": {"doc-1": 1}}),
...                    corpus={"doc-1": {"text": "..."}, "doc-2": {"text": "..."}})
>>> chunks = [Hit("5f0c-uuid", 0.9, metadata={"doc_id": "doc-2"}), Hit("77ab-uuid", 0.8, metadata={"doc_id": "doc-1"})]
>>> report = check_run(Run.from_ranked({"q1": chunks}), golden)
>>> report.status, report.chosen, report.shares["id"], report.shares["metadata:doc_id"]
('resolved', 'metadata:doc_id', 0.0, 1.0)
>>> print(report.message())  # doctest: +NORMALIZE_WHITESPACE
0 of 2 (0%) retrieved ids are in the golden set (corpus or qrels), e.g. '5f0c-uuid', '77ab-uuid'; the
golden set's ids look like 'doc-1'. Under id_from='metadata:doc_id' 2 of 2 (100%) are.
"""

from __future__ import annotations

import heapq
import itertools
import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rankbridge.types import GoldenSet, Hit, Qrels, Run

__all__ = [
    "CORPUS_SHARE",
    "QRELS_MIN_MATCHES",
    "IdReport",
    "candidate_ids",
    "check_results",
    "check_run",
    "known_ids",
    "remap_ids",
]

#: With a corpus, results match when at least this share of their ids are corpus or judged ids.
CORPUS_SHARE = 0.5
#: With qrels alone, an id source resolves a mismatch when at least this many sampled ids are judged.
QRELS_MIN_MATCHES = 3
#: Results looked at by :func:`check_run`: the top :data:`SAMPLE_DEPTH` of queries in run order.
SAMPLE_HITS = 20_000
SAMPLE_DEPTH = 100
#: Fewer results than this, with qrels only, say too little to call a mismatch.
MIN_HITS_QRELS_ONLY = 20
#: A result's text is in the document an id names when this share of its word trigrams occur there (a chunk
#: of the document: about all of them; a chunk of another document: about none, however long the document).
TEXT_SUPPORT = 0.5
#: A matching source whose ids are checked against corpus texts: at most this many results are compared,
#: and fewer than :data:`MIN_TEXT_CHECKS` comparable ones (texts of a few words, no texts) say nothing.
TEXT_CHECKS = 200
MIN_TEXT_CHECKS = 5
#: Without texts to compare: a source of numbers naming at most one distinct id per :data:`COARSE_RATIO`
#: distinct results, over at least :data:`COARSE_MIN_RESULTS` of them, is a label (a page number), not an id.
#: (Ids like "doc-3" do not coincide with labels; small integers do, with BEIR-style numeric corpus ids.)
COARSE_RATIO = 3
COARSE_MIN_RESULTS = 20

Status = Literal["ok", "resolved", "mismatch", "ambiguous", "unchecked"]


def known_ids(golden: GoldenSet | Qrels | Mapping[str, Mapping[str, Any]]) -> tuple[frozenset[str], bool]:
    """The ids a golden set knows (its corpus ids and every judged doc id), and whether it has a corpus.

    Examples
    --------
    >>> ids, with_corpus = known_ids({"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}})
    >>> sorted(ids), with_corpus
    (['d1', 'd2', 'd3'], False)
    """
    known, with_corpus = _known(golden)
    return (known.judged | frozenset(known.corpus) if known.corpus else known.judged), with_corpus


class _Known:
    """The ids a golden set knows, tested without building the union of its qrels' and its corpus' ids."""

    __slots__ = ("corpus", "judged")

    def __init__(self, judged: frozenset[str], corpus: Mapping[str, Any] | None) -> None:
        self.judged = judged
        self.corpus = corpus or None

    def __contains__(self, doc: object) -> bool:
        return doc in self.judged or (self.corpus is not None and doc in self.corpus)

    def __bool__(self) -> bool:
        return bool(self.judged) or self.corpus is not None

    def contains(self) -> Callable[[object], bool]:
        """``doc in self`` as a C-level function when there is no corpus (for ``map`` over many ids)."""
        return self.judged.__contains__ if self.corpus is None else self.__contains__

    def examples(self, n: int = 2) -> tuple[str, ...]:
        return tuple(heapq.nsmallest(n, self.judged if self.judged else self.corpus or ()))


def _known(golden: GoldenSet | Qrels | Mapping[str, Mapping[str, Any]]) -> tuple[_Known, bool]:
    qrels: Mapping[str, Mapping[str, Any]]
    corpus: Mapping[str, Any] | None = None
    if isinstance(golden, GoldenSet):
        qrels, corpus = golden.qrels, golden.corpus
    else:
        qrels = golden
    cached = qrels._cache.get("known_ids") if isinstance(qrels, Qrels) else None
    if cached is None:
        cached = frozenset(itertools.chain.from_iterable(qrels.values()))  # one C-level pass
        if isinstance(qrels, Qrels):
            qrels._cache["known_ids"] = cached  # read on every evaluate; qrels do not change
    return _Known(cached, corpus), bool(corpus)


def _scalar_id(value: Any) -> str | None:
    """A value that can be an id, as a str: a non-empty str, or any integral but a bool (``np.int64`` from a
    DataFrame too, as its decimal digits, which is how :func:`rankbridge.retriever.resolve_id` reads it)."""
    if isinstance(value, str):
        return value if value and len(value) <= 512 else None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    return None


def candidate_ids(obj: Any) -> dict[str, str]:
    """Every id source a result offers and the id it gives: ``{"id": ..., "ref_doc_id": ..., "metadata:KEY": ...}``.

    ``obj`` is a raw framework result (a LlamaIndex ``NodeWithScore`` or node, a LangChain ``Document`` or
    ``(Document, score)`` pair), a :class:`~rankbridge.Hit`, a dict or an id string. Metadata values count
    only when they are strings or integers (``np.int64`` too). A page number counts as well: it does not
    match, or when it happens to be a corpus id, :func:`check_results` tells it from an id.

    Examples
    --------
    >>> candidate_ids({"id": "c1", "metadata": {"source": "a.pdf", "page": 3, "tags": ["x"]}})
    {'id': 'c1', 'metadata:source': 'a.pdf', 'metadata:page': '3'}
    """
    # lazy: retriever.py loads asyncio; evaluate() reaches this module and `import rankbridge` stays without it
    from rankbridge.retriever import _metadata, _own_id, _unwrap

    item, _ = _unwrap(obj)
    out: dict[str, str] = {}
    own = _scalar_id(_own_id(item)) if not isinstance(item, (float, bool, bytes)) and item is not None else None
    if own is not None:
        out["id"] = own
    ref = getattr(item, "ref_doc_id", None)
    if ref is None and isinstance(item, Mapping):
        ref = item.get("ref_doc_id")
    ref = _scalar_id(ref)
    if ref is not None:
        out["ref_doc_id"] = ref
    meta = _metadata(item) if item is not None and not isinstance(item, (str, int, float, bytes)) else None
    if meta:
        for n, (key, value) in enumerate(meta.items()):
            if n >= 50:  # a metadata dict that large is not an id table
                break
            v = _scalar_id(value)
            if v is not None and isinstance(key, str):
                out[f"metadata:{key}"] = v
    return out


@dataclass(frozen=True)
class IdReport:
    """The verdict on a sample of results: do their ids match the golden set, and if not, what would.

    Attributes
    ----------
    status:
        ``"ok"`` (the ids in use match), ``"resolved"`` (they do not, and :attr:`chosen` does),
        ``"mismatch"`` (nothing the results carry matches), ``"ambiguous"`` (two sources match but give
        different ids), ``"unchecked"`` (no results, or no known ids to compare with).
    current:
        The id source in use, as ``id_from`` would spell it (``"id"`` by default).
    chosen:
        The source to use: :attr:`current` when ``ok``, the resolution when ``resolved``, else ``None``.
    shares:
        Id source -> share of the results whose id under that source is known.
    results:
        How many results were looked at.
    with_corpus:
        Whether the golden set had a corpus (then a share of :data:`CORPUS_SHARE` matches; with qrels
        alone any judged id does).
    unmatched_examples, known_examples:
        A few ids in use that matched nothing, and a few ids the golden set knows.
    tied:
        With ``"ambiguous"``: the sources that match about equally well.
    refused:
        Sources that match but are not ids, never chosen automatically -> why (their ids name corpus
        documents that do not contain the results' texts, or far fewer distinct ids than results).
    """

    status: Status
    current: str
    chosen: str | None
    shares: dict[str, float] = field(default_factory=dict)
    results: int = 0
    with_corpus: bool = False
    unmatched_examples: tuple[str, ...] = ()
    known_examples: tuple[str, ...] = ()
    tied: tuple[str, ...] = ()
    refused: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True unless the ids in use are known not to match (``"mismatch"``, ``"ambiguous"``, ``"resolved"``)."""
        return self.status in ("ok", "unchecked")

    def _count(self, source: str) -> str:
        share = self.shares.get(source, 0.0)
        return f"{round(share * self.results)} of {self.results} ({share:.0%})"

    def message(self) -> str:
        """What was found, in two sentences: the ids in use, and what would match (or what the results carry)."""
        if self.status == "unchecked":
            return "doc ids not checked (no results, or a golden set without ids)"
        where = "in the golden set (corpus or qrels)" if self.with_corpus else "judged in the qrels"
        spec = "" if self.current == "id" else f" under id_from={self.current!r}"
        text = f"{self._count(self.current)} retrieved ids{spec} are {where}"
        if self.status == "ok":
            return text + "."
        if self.unmatched_examples:
            text += ", e.g. " + ", ".join(repr(x) for x in self.unmatched_examples[:2])
        if self.known_examples:
            whose = "the golden set's" if self.with_corpus else "the qrels'"
            text += f"; {whose} ids look like {self.known_examples[0]!r}"
        text += "."
        if self.status == "resolved" and self.chosen is not None:
            return text + f" Under id_from={self.chosen!r} {self._count(self.chosen)} are."
        if self.status == "ambiguous":
            options = " and ".join(f"id_from={s!r} ({self.shares[s]:.0%})" for s in self.tied)
            doubts = "".join(f" ({s!r} looks like no id: {why}.)" for s, why in self.refused.items() if s in self.tied)
            return text + f" Both {options} match but give different ids: pass the one your qrels judge.{doubts}"
        others = sorted((s for s in self.shares if s != self.current), key=lambda s: -self.shares[s])
        if self.refused and self.status == "mismatch":
            named = " ".join(
                f"{s!r} matches {self._count(s)} but is not taken automatically: {why}."
                for s, why in self.refused.items()
            )
            pick = next(iter(self.refused))
            return (
                text + f" {named} If it is the doc id your qrels judge, pass id_from={pick!r} explicitly; otherwise "
                "pass the id source (a callable on the result works too) or doc_map= that names them."
            )
        if others:
            best = ", ".join(f"{s!r} {self.shares[s]:.0%}" for s in others[:4])
            carried = f" No id source of the results matches (tried {best})."
        else:
            carried = " The results carry no other id (no ref_doc_id, no metadata)."
        return (
            text + carried + " Pass id_from= (a callable on the result works too) or doc_map= so that results "
            "name the ids your qrels judge; this is not a judging gap."
        )


_WORDS = re.compile(r"\w+")


def _trigrams(text: str) -> set[tuple[str, ...]]:
    words = _WORDS.findall(text.lower())
    return set(zip(words, words[1:], words[2:], strict=False))


def _doc_text(entry: Any) -> str | None:
    """The text of a corpus entry (``{"title": ..., "text": ...}`` or a str), ``None`` when it has none."""
    if isinstance(entry, str):
        return entry or None
    if isinstance(entry, Mapping):
        parts = [entry[key] for key in ("title", "text") if isinstance(entry.get(key), str)]
        return "\n".join(parts) or None
    return None


def _text_support(
    values: Sequence[str | None], texts: Sequence[str | None], corpus: Mapping[str, Any]
) -> tuple[int, int]:
    """(results compared, results whose text is in the corpus document their id names), up to ``TEXT_CHECKS``."""
    grams_of: dict[str, set[tuple[str, ...]]] = {}
    checked = supported = 0
    for doc, text in zip(values, texts, strict=True):
        if doc is None or text is None or doc not in corpus:
            continue
        grams = _trigrams(text)
        if len(grams) < 3:  # a text of a few words is in many documents
            continue
        doc_grams = grams_of.get(doc)
        if doc_grams is None:
            body = _doc_text(corpus[doc])
            doc_grams = grams_of[doc] = _trigrams(body) if body else set()
        if not doc_grams:
            continue
        checked += 1
        supported += len(grams & doc_grams) >= TEXT_SUPPORT * len(grams)
        if checked >= TEXT_CHECKS:
            break
    return checked, supported


def _text_verdict(values: Sequence[str | None], texts: Sequence[str | None], corpus: Mapping[str, Any]) -> str | None:
    """What the texts say of ids ``values``: ``""`` (theirs), why not, or ``None`` (too few to compare)."""
    checked, supported = _text_support(values, texts, corpus)
    if checked < MIN_TEXT_CHECKS:
        return None
    if supported >= CORPUS_SHARE * checked:
        return ""
    return (
        f"the texts of {checked - supported} of {checked} results compared are not in the corpus documents "
        "it names, so its values name something else (a page number, a position?)"
    )


def _not_an_id(
    source: str,
    candidates: Sequence[Mapping[str, str]],
    current: Sequence[str | None],
    texts: Sequence[str | None] | None,
    known: _Known,
) -> str | None:
    """Why ``source``, which matches, is not an id (``None``: nothing says so).

    With corpus texts and result texts, the texts decide: a chunk is in the document its id names. Without,
    a source of numbers naming few distinct ids over many distinct results is a label (page numbers, a
    position), not the id of what was retrieved: a coincidence with numeric corpus ids ("0".."251") would
    otherwise score pages as documents, a silently wrong number.
    """
    values = [cand.get(source) for cand in candidates]
    if texts is not None and known.corpus is not None:
        verdict = _text_verdict(values, texts, known.corpus)
        if verdict is not None:
            return verdict or None
    if source in ("id", "ref_doc_id"):  # an object's own id, LlamaIndex's chunk -> document link: ids by design
        return None
    named = {v for v in values if v is not None}
    if not all(v.isdigit() for v in named):  # only numbers coincide with ids by accident ("3": page or doc?)
        return None
    keys = [c if c is not None else t for c, t in zip(current, texts or itertools.repeat(None), strict=False)]
    distinct = len(set(keys) - {None})
    if distinct >= COARSE_MIN_RESULTS and len(named) * COARSE_RATIO <= distinct:
        return (
            f"it names {len(named)} distinct number{'s' if len(named) != 1 else ''} over {distinct} distinct "
            "results, a label (a page number, a position?) rather than the id of what was retrieved"
        )
    return None


def _decide(
    candidates: Sequence[Mapping[str, str]],
    current: Sequence[str | None],
    current_label: str,
    known: _Known,
    with_corpus: bool,
    texts: Sequence[str | None] | None = None,
) -> IdReport:
    n = len(current)
    if n == 0 or not known:
        return IdReport("unchecked", current_label, None, results=n, with_corpus=with_corpus)
    shares: dict[str, float] = {current_label: sum(1 for x in current if x is not None and x in known) / n}
    sources: dict[str, None] = {}
    for cand in candidates:
        for s in cand:
            sources.setdefault(s, None)
    for s in sources:
        if s != current_label:
            shares[s] = sum(1 for cand in candidates if cand.get(s) in known) / n
    unmatched = tuple(dict.fromkeys(x for x in current if x is not None and x not in known))[:3]
    examples = known.examples()
    base = {"shares": shares, "results": n, "with_corpus": with_corpus}
    mine = shares[current_label]
    if with_corpus:
        if mine >= CORPUS_SHARE:
            return IdReport("ok", current_label, current_label, **base)  # type: ignore[arg-type]
        better = [s for s in shares if s != current_label and shares[s] >= CORPUS_SHARE and shares[s] > 2 * mine]
    else:
        if mine > 0 or n < MIN_HITS_QRELS_ONLY:
            return IdReport("ok", current_label, current_label, **base)  # type: ignore[arg-type]
        better = [s for s in shares if s != current_label and shares[s] * n >= QRELS_MIN_MATCHES]
    refused: dict[str, str] = {}
    for s in better:
        why = _not_an_id(s, candidates, current, texts, known)
        if why is not None:
            refused[s] = why
    # prefer LlamaIndex's own chunk -> document link, then metadata keys in the order the results list them
    better.sort(key=lambda s: (-shares[s], s != "ref_doc_id"))
    accepted = [s for s in better if s not in refused]
    if not accepted:
        return IdReport(
            "mismatch", current_label, None, unmatched_examples=unmatched, known_examples=examples,
            refused=refused, **base,  # type: ignore[arg-type]
        )  # fmt: skip
    top = accepted[0]
    values = [cand.get(top) for cand in candidates]
    # a refused source still makes a tie: refusing one is a judgement, and a tie is the user's to settle
    tied = [
        s for s in better
        if s != top and abs(shares[top] - shares[s]) < 0.1 and [cand.get(s) for cand in candidates] != values
    ]  # fmt: skip
    if tied:
        return IdReport(
            "ambiguous", current_label, None, unmatched_examples=unmatched, known_examples=examples,
            tied=(top, *tied), refused=refused, **base,  # type: ignore[arg-type]
        )  # fmt: skip
    return IdReport("resolved", current_label, top, unmatched_examples=unmatched, known_examples=examples, **base)  # type: ignore[arg-type]


def check_results(
    results: Iterable[Any],
    golden: GoldenSet | Qrels | Mapping[str, Mapping[str, Any]],
    *,
    id_from: Any = None,
) -> IdReport:
    """Check raw results (framework objects, Hits, dicts) against a golden set's ids.

    Parameters
    ----------
    results:
        Results of a few queries, flattened (every result of every list).
    golden:
        The golden set (its corpus and qrels), or qrels alone.
    id_from:
        The id source in use (see :mod:`rankbridge.retriever`); ``None`` is ``"id"``. A source list counts
        as the first source that gives an id, as the adapters resolve it.

    Examples
    --------
    >>> qrels = {f"q{i}": {f"doc-{i}": 1, f"doc-{i + 100}": 0} for i in range(30)}
    >>> results = [{"id": f"uuid-{i}", "metadata": {"source": f"doc-{i}"}} for i in range(30)]
    >>> r = check_results(results, qrels)
    >>> r.status, r.chosen
    ('resolved', 'metadata:source')
    """
    # lazy: retriever.py loads asyncio; evaluate() reaches this module and `import rankbridge` stays without it
    from rankbridge.retriever import _resolve, _spec_name, _text, _unwrap, id_sources

    specs = id_sources(id_from)
    label = _spec_name(specs[0]) if len(specs) == 1 else repr([_spec_name(s) for s in specs])
    candidates: list[dict[str, str]] = []
    current: list[str | None] = []
    texts: list[str | None] = []
    for item in results:
        candidates.append(candidate_ids(item))
        obj = _unwrap(item)[0]
        try:
            current.append(_resolve(obj, specs)[0])
        except Exception:  # an id source that cannot read this result simply gives no id
            current.append(None)
        try:
            texts.append(None if isinstance(obj, str) else _text(obj))
        except Exception:  # a result whose text cannot be read has none to compare
            texts.append(None)
    known, with_corpus = _known(golden)
    return _decide(candidates, current, label, known, with_corpus, texts)


def _sample_hits(data: Mapping[str, Any], limit: int) -> list[Hit]:
    """Up to ``SAMPLE_DEPTH`` hits of each query, in the run's order of queries, ``limit`` in all.

    A scored query's ids are taken as stored, unsorted: a share of known ids does not depend on rank.
    """
    out: list[Hit] = []
    for value in data.values():
        if isinstance(value, Mapping):
            out.extend(Hit(doc) for doc in itertools.islice(value, SAMPLE_DEPTH))
        else:
            for item in itertools.islice(value, SAMPLE_DEPTH):
                out.append(item if isinstance(item, Hit) else Hit(str(item[0] if isinstance(item, tuple) else item)))
        if len(out) >= limit:
            return out[:limit]
    return out


def _sample_ids(data: Mapping[str, Any], limit: int) -> list[str]:
    """The ids :func:`_sample_hits` would give, without building a hit for each (the common, matching case)."""
    try:  # {doc: score} dicts and str id lists: one C-level pass
        head = list(
            itertools.islice(
                itertools.chain.from_iterable(map(itertools.islice, data.values(), itertools.repeat(SAMPLE_DEPTH))),
                limit,
            )
        )
    except TypeError:
        head = None
    if head is not None and set(map(type, head)) <= {str}:
        return head
    out: list[str] = []
    for value in data.values():
        if isinstance(value, Mapping):
            out.extend(itertools.islice(value, SAMPLE_DEPTH))
        else:
            for item in itertools.islice(value, SAMPLE_DEPTH):
                out.append(item.doc_id if isinstance(item, Hit) else str(item[0] if isinstance(item, tuple) else item))
        if len(out) >= limit:
            return out[:limit]
    return out


def _quick_ok(ids: Sequence[str], known: _Known, with_corpus: bool) -> bool:
    """The common case, decided without looking at other id sources: the ids in use match."""
    if not ids or not known:
        return True
    contains = known.contains()
    if with_corpus:
        return sum(map(contains, ids)) >= CORPUS_SHARE * len(ids)
    return len(ids) < MIN_HITS_QRELS_ONLY or any(map(contains, ids))


def check_run(
    run: Run | Mapping[str, Any],
    golden: GoldenSet | Qrels | Mapping[str, Mapping[str, Any]],
    *,
    sample: int = SAMPLE_HITS,
) -> IdReport:
    """Check a finished run's doc ids against a golden set; alternatives come from the hits' metadata.

    ``run`` is a :class:`~rankbridge.Run` or a plain ``{qid: {doc: score}}`` / ``{qid: [ids]}``. Looks at
    up to 100 hits of each query in run order, ``sample`` hits at most. See the module docstring for the
    rule. The common case (the ids match) costs one set lookup per sampled id.
    """
    data = run._id_sample(sample, SAMPLE_DEPTH) if isinstance(run, Run) else run
    config = run.config if isinstance(run, Run) else {}
    label = config.get("id_from") if isinstance(config.get("id_from"), str) else None
    known, with_corpus = _known(golden)
    ids = _sample_ids(data, sample)
    if _quick_ok(ids, known, with_corpus):
        share = sum(map(known.contains(), ids)) / len(ids) if ids else 0.0
        status: Status = "ok" if ids and known else "unchecked"
        chosen = (label or "id") if status == "ok" else None
        resolution = config.get("id_resolution")
        if status == "ok" and known.corpus is not None and isinstance(resolution, Mapping) and resolution.get("auto"):
            # chosen automatically on a few queries: the whole sample must bear it out (a page number that
            # equals the corpus id of the first documents, and not of the rest, is still no id)
            hits = _sample_hits(data, sample)
            hits = hits[:: max(1, len(hits) // TEXT_CHECKS)]  # spread over the sample, not its first queries
            why = _text_verdict([h.doc_id for h in hits], [h.text for h in hits], known.corpus)
            if why:
                return IdReport(
                    "mismatch", label or "id", None, {label or "id": share}, len(ids), with_corpus,
                    known_examples=known.examples(), refused={label or "id": why},
                )  # fmt: skip
        return IdReport(status, label or "id", chosen, {label or "id": share}, len(ids), with_corpus)
    hits = _sample_hits(data, sample)  # a mismatch: look at what else the hits carry
    candidates = [{k: v for k, v in candidate_ids(h).items() if k != "id"} for h in hits]
    return _decide(candidates, [h.doc_id for h in hits], label or "id", known, with_corpus, [h.text for h in hits])


def remap_ids(run: Run, id_from: str | Callable[[Hit], Any]) -> Run:
    """A copy of ``run`` whose doc ids come from ``id_from`` on each hit (``"metadata:KEY"`` or a callable).

    Hits that map to a document already ranked higher are dropped (first occurrence kept, counted in
    :attr:`Run.duplicates`), as chunk-to-document mapping does everywhere in rankbridge. A hit without
    that source keeps its id.

    Examples
    --------
    >>> from rankbridge import Hit, Run
    >>> run = Run.from_ranked({"q1": [Hit("c1", metadata={"doc": "A"}), Hit("c2", metadata={"doc": "A"}),
    ...                                Hit("c3", metadata={"doc": "B"})]})
    >>> fixed = remap_ids(run, "metadata:doc")
    >>> fixed.ranking("q1"), fixed.duplicates
    (['A', 'B'], {'q1': 1})
    """
    # lazy: retriever.py loads asyncio; evaluate() reaches this module and `import rankbridge` stays without it
    from rankbridge.retriever import _resolve

    spec: tuple[Any, ...] = (id_from,)
    out = Run(name=run.name, config={**run.config, "id_from": id_from if isinstance(id_from, str) else repr(id_from)})
    for qid in run.query_ids():
        if qid in run.errors and qid not in run:
            out.add_error(qid, run.errors[qid], latency=run.latency.get(qid))
            continue
        hits = []
        for h in run.hits(qid):
            new, _ = _resolve(h, spec)
            hits.append(h if new is None else Hit(new, h.score, h.text, h.metadata))
        out.add(qid, hits, latency=run.latency.get(qid))
    out.stages = dict(run.stages)
    out.answers = dict(run.answers)
    return out
