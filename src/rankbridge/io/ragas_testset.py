"""Golden sets from RAGAS testsets, whose reference contexts are *texts*: matched to corpus ids.

A RAGAS testset row has ``user_input`` (the question), ``reference`` (the answer) and
``reference_contexts`` (the passages the answer comes from, as text). To score a retriever by id, each
context is matched to the corpus, in three steps, the first that finds one wins:

1. **exact**: the context equals a document's text (or its ``title`` and text);
2. **normalized**: equal after case folding, Unicode NFKC, punctuation removed and whitespace collapsed;
3. **fuzzy**: the most similar normalized document by ``rapidfuzz.fuzz.ratio`` (0-100), if at least
   ``fuzzy_threshold`` (default 90; ``None`` turns the step off). Needs ``rapidfuzz``
   (``pip install 'rankbridge[ragas]'``), imported only when a context is left after step 2.

Documents with the same text are all relevant (a retriever returning either is right). Every matched
document gets label 1; a row that already has ``reference_context_ids`` uses them as they are.

Nothing is dropped silently: :func:`match_ragas_contexts` returns a :class:`ContextMatch` listing every
context with how (and whether) it matched; :func:`golden_from_ragas` warns with
:class:`UnmatchedContextsWarning` (or raises :class:`ContextMatchError` with ``unmatched="error"``) when a
context found no document. Questions none of whose contexts matched stay in ``golden.queries``, unjudged.

Query ids come from an ``id``/``query_id``/``_id`` column when there is one, else from the question text
(:func:`~rankbridge.io.tables.stable_query_id`). ``synthesizer_name`` becomes the query's category.

Examples
--------
>>> corpus = {"d1": "Scurvy is caused by a lack of vitamin C.", "d2": "Hamlet was written by Shakespeare."}
>>> rows = [
...     {"user_input": "What causes scurvy?", "reference": "Lack of vitamin C.",
...      "reference_contexts": ["scurvy is caused by a lack of Vitamin C"]},
...     {"user_input": "Who wrote Hamlet?", "reference": "Shakespeare.",
...      "reference_contexts": ["Hamlet was written by Shakespeare.", "An unrelated passage."]},
... ]
>>> match = match_ragas_contexts(rows, corpus)
>>> [(m.method, m.doc_ids) for m in match.contexts]
[('normalized', ('d1',)), ('exact', ('d2',)), (None, ())]
>>> match.counts
{'exact': 1, 'normalized': 1, 'fuzzy': 0, 'unmatched': 1}
>>> match.golden.qrels.to_dict()
{'qaec0abca4489': {'d1': 1}, 'q870ea222f34a': {'d2': 1}}
"""

from __future__ import annotations

import os
import re
import unicodedata
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rankbridge.errors import (
    ContextMatchError,
    GoldenSetWarning,
    InputError,
    MissingExtraError,
    ParseError,
    UnmatchedContextsWarning,
)
from rankbridge.io._open import names, plain_suffix, user_stacklevel
from rankbridge.io.tables import (
    _csv_rows,
    _jsonl_rows,
    _listed,
    _literal,
    _Loc,
    _plain,
    coerce_corpus,
    is_missing,
    parse_id_list,
    question_rows,
    resolve_columns,
    table_rows,
)
from rankbridge.types import GoldenSet, Qrels, Query

__all__ = [
    "ContextMatch",
    "ContextMatchError",
    "MatchedContext",
    "UnmatchedContextsWarning",
    "golden_from_ragas",
    "match_ragas_contexts",
    "normalize_text",
    "read_golden_ragas",
]

_PUNCT = re.compile(r"[\W_]+", re.UNICODE)


def normalize_text(text: str) -> str:
    """Text as compared in the ``normalized`` step: NFKC, case folded, punctuation and runs of space as one space.

    Examples
    --------
    >>> normalize_text("  Scurvy -- is caused\\n by a LACK of vitamin C. ")
    'scurvy is caused by a lack of vitamin c'
    """
    return _PUNCT.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


@dataclass(frozen=True)
class MatchedContext:
    """One reference context and what it matched.

    Attributes
    ----------
    query_id:
        The question the context belongs to.
    index:
        Its position in the row's ``reference_contexts``.
    text:
        The context text.
    doc_ids:
        The corpus ids it matched (empty when unmatched).
    method:
        ``"exact"``, ``"normalized"``, ``"fuzzy"``, ``"given"`` (the row had ids) or None (unmatched).
    score:
        The fuzzy similarity (0-100) of the best document, when the fuzzy step ran (also for an unmatched
        context, so you can see how far it was from the threshold).
    where:
        Where its row came from: ``file:line``, or ``<source> row i`` (0-based) for an object.
    """

    query_id: str
    index: int
    text: str
    doc_ids: tuple[str, ...]
    method: str | None
    score: float | None = None
    where: str = ""


@dataclass
class ContextMatch:
    """The result of matching a RAGAS testset's contexts to a corpus.

    Attributes
    ----------
    golden:
        The golden set (questions, qrels of the matched ids, the corpus).
    contexts:
        Every context, in row order, with its match.
    threshold:
        The fuzzy threshold used (None: no fuzzy step).
    """

    golden: GoldenSet
    contexts: list[MatchedContext] = field(default_factory=list)
    threshold: float | None = None

    @property
    def unmatched(self) -> list[MatchedContext]:
        """The contexts that matched no document."""
        return [c for c in self.contexts if c.method is None]

    @property
    def counts(self) -> dict[str, int]:
        """How many contexts each step matched (``given`` only when a row had ids), and how many none."""
        out = {"exact": 0, "normalized": 0, "fuzzy": 0, "unmatched": 0}
        for c in self.contexts:
            key = c.method or "unmatched"
            out[key] = out.get(key, 0) + 1
        return out

    def summary(self) -> str:
        """One line: the counts and the threshold."""
        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items())
        fuzzy = f"fuzzy threshold {self.threshold:g}" if self.threshold is not None else "no fuzzy step"
        return f"{len(self.contexts)} reference contexts: {counts} ({fuzzy})"

    def __repr__(self) -> str:
        return f"ContextMatch(golden={self.golden.name!r}, {self.summary()})"


def _testset_rows(testset: Any) -> tuple[list[str], list[tuple[_Loc, Mapping[str, Any]]], str]:
    if isinstance(testset, (str, os.PathLike)):
        if plain_suffix(testset) in (".csv", ".tsv"):
            return _csv_rows(testset, None)
        return _jsonl_rows(testset)
    if callable(getattr(testset, "to_evaluation_dataset", None)):  # ragas.testset.Testset
        rows = testset.to_list()
        return table_rows(rows, source=f"<{type(testset).__name__}>")
    if callable(getattr(testset, "to_list", None)) and hasattr(testset, "samples"):  # EvaluationDataset
        return table_rows(testset.to_list(), source=f"<{type(testset).__name__}>")
    return table_rows(list(testset) if not hasattr(testset, "columns") else testset)


def _contexts(value: Any, loc: _Loc, column: str) -> list[str]:
    value = _plain(value)
    if is_missing(value):
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith("["):
            return [value]  # one context
        try:
            value = _literal(text)
        except InputError as exc:
            raise loc.error(str(exc), column) from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise loc.error(f"expected a list of context texts, found {value!r}"[:200], column)
    return list(value)


class _Index:
    """Exact and normalized lookups over a corpus, and the fuzzy search (rapidfuzz) on demand."""

    def __init__(self, corpus: Mapping[str, Mapping[str, Any]]) -> None:
        self.exact: dict[str, list[str]] = {}
        self.norm: dict[str, list[str]] = {}
        for doc, entry in corpus.items():
            text = str(entry.get("text") or "")
            title = str(entry.get("title") or "")
            forms = [text] + ([f"{title} {text}", f"{title}\n{text}", f"{title}\n\n{text}"] if title else [])
            for form in forms:
                for key, table in ((form.strip(), self.exact), (normalize_text(form), self.norm)):
                    ids = table.setdefault(key, [])
                    if doc not in ids:
                        ids.append(doc)
        self._choices: list[str] | None = None

    def fuzzy(self, text: str) -> tuple[tuple[str, ...], float | None]:
        try:
            from rapidfuzz import fuzz, process
        except ImportError:
            raise MissingExtraError(
                "rapidfuzz", "ragas", "Fuzzy matching of RAGAS contexts (fuzzy_threshold=None turns it off)"
            ) from None
        if self._choices is None:
            self._choices = list(self.norm)
        best = process.extractOne(normalize_text(text), self._choices, scorer=fuzz.ratio)
        if best is None:
            return (), None
        choice, score, _ = best
        return tuple(self.norm[choice]), float(score)


def match_ragas_contexts(
    testset: Any,
    corpus: Any,
    *,
    fuzzy_threshold: float | None = 90.0,
    name: str = "ragas",
    question_column: str | None = None,
    id_column: str | None = None,
) -> ContextMatch:
    """Match a RAGAS testset's reference contexts to corpus ids (see the module docstring).

    Parameters
    ----------
    testset:
        A ``ragas.testset.Testset`` or ``EvaluationDataset``, its ``to_pandas()`` DataFrame, a list of
        dicts, or a ``.jsonl`` file (``Testset.to_jsonl``).
    corpus:
        ``{doc_id: text}``, ``{doc_id: {"text", "title"}}``, a GoldenSet with a corpus, a BEIR folder or
        a corpus file or table.
    fuzzy_threshold:
        The least ``rapidfuzz.fuzz.ratio`` (0-100) of a fuzzy match; None: no fuzzy step.
    name:
        The golden set's name.
    question_column, id_column:
        Override the guessed question (``user_input``) and id columns.
    """
    if fuzzy_threshold is not None and not 0 <= fuzzy_threshold <= 100:
        raise InputError(f"fuzzy_threshold must be between 0 and 100 (or None). Got {fuzzy_threshold!r} instead.")
    docs = coerce_corpus(corpus, source=f"{name}/corpus")
    if not docs:
        raise InputError("corpus: expected the documents the contexts come from, found none")
    columns, rows, src = _testset_rows(testset)
    cols = resolve_columns(
        columns,
        {"question": question_column, "id": id_column},
        {
            "question": ("user_input", "question", "query"),
            "id": ("id", "query_id", "_id"),
            "contexts": ("reference_contexts",),
            "ids": ("reference_context_ids",),
            "reference": ("reference", "ground_truth", "answer"),
            "category": ("synthesizer_name", "category"),
        },
        src,
    )
    qcol = cols["question"]
    if qcol is None:
        raise ParseError(f"expected a RAGAS testset with 'user_input'; found columns: {names(columns)}", source=src)
    if cols["contexts"] is None and cols["ids"] is None:
        raise ParseError(
            f"expected 'reference_contexts' (or 'reference_context_ids'); found columns: {names(columns)}",
            source=src,
        )
    index = _Index(docs)
    used = {c for c in cols.values() if c is not None}
    queries: list[Query] = []
    judged: dict[str, dict[str, int]] = {}
    matches: list[MatchedContext] = []
    for loc, row, qid, text in question_rows(rows, qcol, cols["id"]):
        found: dict[str, int] = {}
        given = row.get(cols["ids"]) if cols["ids"] else None
        given_ids = _plain(given)
        if not is_missing(given_ids) and not (isinstance(given_ids, (list, tuple)) and not given_ids):
            try:
                ids = parse_id_list(given_ids)
            except InputError as exc:
                raise loc.error(str(exc), cols["ids"]) from None
            for i, d in enumerate(ids):
                matches.append(MatchedContext(qid, i, "", (d,), "given", where=loc.full()))
                found[d] = 1
        else:
            contexts = _contexts(row.get(cols["contexts"]), loc, cols["contexts"]) if cols["contexts"] else []
            for i, ctx in enumerate(contexts):
                method: str | None = None
                score: float | None = None
                doc_ids: tuple[str, ...] = ()
                if ctx.strip() in index.exact:
                    doc_ids, method = tuple(index.exact[ctx.strip()]), "exact"
                elif normalize_text(ctx) in index.norm:
                    doc_ids, method = tuple(index.norm[normalize_text(ctx)]), "normalized"
                elif fuzzy_threshold is not None:
                    best, score = index.fuzzy(ctx)
                    if score is not None and score >= fuzzy_threshold:
                        doc_ids, method = best, "fuzzy"
                matches.append(MatchedContext(qid, i, ctx, doc_ids, method, score, loc.full()))
                found.update(dict.fromkeys(doc_ids, 1))
        if found:
            judged[qid] = found
        reference = row.get(cols["reference"]) if cols["reference"] else None
        category = row.get(cols["category"]) if cols["category"] else None
        meta = {k: _plain(v) for k, v in row.items() if k not in used and not is_missing(_plain(v))}
        queries.append(
            Query(
                qid,
                text,
                category=None if is_missing(category) else str(category),
                reference=None if is_missing(reference) else str(reference),
                reference_context_ids=tuple(found),
                metadata=meta,
            )
        )
    if not queries:
        raise ParseError("expected at least one testset row, found none", source=src)
    golden = GoldenSet(queries, Qrels._trusted(judged, name=name), corpus=docs, name=name)
    return ContextMatch(golden, matches, fuzzy_threshold)


def _describe_unmatched(match: ContextMatch, limit: int = 5) -> str:
    lost = match.unmatched
    shown = []
    for c in lost[:limit]:
        score = f", best fuzzy score {c.score:.1f}" if c.score is not None else ""
        shown.append(f"{c.where}: query {c.query_id!r} context {c.index} ({c.text[:50]!r}{score})")
    more = f"; and {len(lost) - limit} more" if len(lost) > limit else ""
    unjudged = sum(1 for q in match.golden.queries if q.id not in match.golden.qrels)
    tail = f"; {unjudged} questions have no matched context and are not judged" if unjudged else ""
    return (
        f"{len(lost)} of {len(match.contexts)} reference contexts matched no corpus document "
        f"({match.summary()}): {'; '.join(shown)}{more}{tail}. "
        "match_ragas_contexts(...).unmatched lists them all"
    )


def golden_from_ragas(
    testset: Any,
    corpus: Any,
    *,
    fuzzy_threshold: float | None = 90.0,
    unmatched: str = "warn",
    name: str = "ragas",
    question_column: str | None = None,
    id_column: str | None = None,
) -> GoldenSet:
    """A golden set from a RAGAS testset, its contexts matched to ``corpus`` ids.

    Parameters are those of :func:`match_ragas_contexts`, and ``unmatched``: ``"warn"`` (default: an
    :class:`UnmatchedContextsWarning` naming the unmatched contexts, which carries the full
    :class:`ContextMatch` as ``.match``) or ``"error"`` (a :class:`ContextMatchError`).

    Examples
    --------
    >>> corpus = {"d1": "Scurvy is caused by a lack of vitamin C."}
    >>> rows = [{"user_input": "What causes scurvy?", "reference_contexts": ["scurvy: caused by lack of vitamin C"]}]
    >>> golden_from_ragas(rows, corpus).qrels.to_dict()
    {'qaec0abca4489': {'d1': 1}}
    >>> golden_from_ragas([{"user_input": "x?", "reference_contexts": ["nothing alike"]}], corpus,
    ...                   unmatched="error")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.ContextMatchError: 1 of 1 reference contexts matched no corpus document ...
    """
    if unmatched not in ("warn", "error"):
        raise InputError(f"unmatched must be 'warn' or 'error'. Got {unmatched!r} instead.")
    match = match_ragas_contexts(
        testset,
        corpus,
        fuzzy_threshold=fuzzy_threshold,
        name=name,
        question_column=question_column,
        id_column=id_column,
    )
    if match.unmatched:
        message = _describe_unmatched(match)
        if unmatched == "error":
            raise ContextMatchError(message, match)
        warnings.warn(UnmatchedContextsWarning(message, match), stacklevel=user_stacklevel())
    else:  # every context matched; a row that had none is still not judged, which is said as the table readers say it
        golden = match.golden
        unjudged = [q.id for q in golden.queries if q.id not in golden.qrels]
        if unjudged:
            warnings.warn(
                GoldenSetWarning(
                    f"{len(unjudged)} of {len(golden.queries)} questions have no reference contexts and are not "
                    f"judged (kept in golden.queries): {_listed(list(map(repr, unjudged)))}"
                ),
                stacklevel=user_stacklevel(),
            )
    return match.golden


def read_golden_ragas(
    path: str | os.PathLike[str],
    corpus: Any,
    *,
    fuzzy_threshold: float | None = 90.0,
    unmatched: str = "warn",
    name: str | None = None,
) -> GoldenSet:
    """Read a RAGAS testset saved with ``to_jsonl`` (or ``to_csv``) and match it to ``corpus``.

    See :func:`golden_from_ragas`; ``name`` defaults to the file's stem.
    """
    from pathlib import Path

    stem = Path(path).name.split(".")[0]
    return golden_from_ragas(path, corpus, fuzzy_threshold=fuzzy_threshold, unmatched=unmatched, name=name or stem)
