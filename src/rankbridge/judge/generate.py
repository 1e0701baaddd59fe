"""Generate a golden set from documents: sample documents, ask an LLM for one query each.

Each generated query's source document is relevant by construction (label ``label``, 3 by default, the
top of the judge's 0-3 scale) and the query's style (``"natural"``, ``"keyword"``, or your own) is its
category, so every metric can be sliced by style. Other documents may answer the query too; judge the
pooled results of your strategies (:class:`~rankbridge.judge.Judge`) to find them.

Examples
--------
>>> from rankbridge.judge import generate_queries
>>> def scripted(prompt):
...     if "(keyword)" in prompt:
...         return '{"query": "vitamin c deficiency disease"}'
...     return '{"query": "What causes scurvy?"}'
>>> corpus = {"d1": "Scurvy is caused by a lack of vitamin C.", "d2": "Sailors got scurvy without fresh fruit."}
>>> golden = generate_queries(corpus, scripted, n=2, seed=1, model_id="scripted")
>>> [(q.id, q.text, q.category, q.reference_context_ids) for q in golden.queries]
[('gen-1', 'What causes scurvy?', 'natural', ('d1',)), ('gen-2', 'vitamin c deficiency disease', 'keyword', ('d2',))]
>>> golden.qrels.to_dict()
{'gen-1': {'d1': 3}, 'gen-2': {'d2': 3}}
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rankbridge import batch
from rankbridge.errors import GenerationError, InputError
from rankbridge.judge.grading import _doc_text, _json_objects, _repair_builder, _run_items
from rankbridge.judge.llm import (
    CallPolicy,
    LLMClient,
    ReplyParseError,
    Session,
    Usage,
    _policy_of,
    as_llm,
    describe_llm,
    run_sync,
)
from rankbridge.judge.prompts import QUERY_STYLES, QUERY_V1, Prompt
from rankbridge.types import GoldenSet, Qrels, Query

__all__ = [
    "GenerateReport",
    "GenerationError",
    "GenerationResult",
    "agenerate_golden_set",
    "generate_golden_set",
    "generate_queries",
    "parse_query",
]

_QUERY_SHAPE = '{"query": "<the query>"}'


def parse_query(text: str) -> str:
    """Read the query from a reply: ``{"query": "..."}``, or a bare one-line reply without braces.

    Raises
    ------
    ReplyParseError
        Anything else (the generator then asks the model to repair its reply).

    Examples
    --------
    >>> parse_query('{"query": "  scurvy cause "}')
    'scurvy cause'
    >>> parse_query('"what causes scurvy?"')
    'what causes scurvy?'
    >>> parse_query('{"q": 1}')
    Traceback (most recent call last):
    ...
    rankbridge.errors.ReplyParseError: expected a JSON object with a non-empty "query" string
    """
    if "{" in text:
        for obj in _json_objects(text):
            if isinstance(obj, dict):
                value = obj.get("query", obj.get("question"))
                if isinstance(value, str) and value.strip():
                    return " ".join(value.split())
        raise ReplyParseError('expected a JSON object with a non-empty "query" string')
    line = text.strip().strip("\"'`").strip()
    if not line or "\n" in line or len(line) > 300:
        raise ReplyParseError('expected a JSON object {"query": "..."} (or one short line)')
    return " ".join(line.split())


@dataclass
class GenerateReport:
    """What a generation batch did.

    Attributes
    ----------
    requested:
        Documents sampled (``n``).
    generated:
        Queries produced.
    failed:
        ``{doc_id: error}`` for documents whose calls failed for good.
    not_generated:
        Documents left when the batch stopped (budget or error limit).
    duplicates:
        Generated queries whose text (case-insensitive) repeats an earlier one; they are kept.
    stopped:
        Why the batch stopped early, or None.
    usage:
        Calls and tokens spent.
    """

    requested: int = 0
    generated: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    not_generated: list[str] = field(default_factory=list)
    duplicates: int = 0
    stopped: str | None = None
    usage: Usage = field(default_factory=Usage)

    @property
    def complete(self) -> bool:
        """True when every sampled document produced a query."""
        return self.generated == self.requested

    def __str__(self) -> str:
        text = f"{self.generated} of {self.requested} queries generated"
        if self.failed:
            doc, msg = next(iter(self.failed.items()))
            text += f"; {len(self.failed)} failed (e.g. {doc}: {msg})"
        if self.duplicates:
            text += f"; {self.duplicates} duplicate query texts"
        if self.stopped:
            text += f"; STOPPED: {self.stopped}, {len(self.not_generated)} documents left"
        return f"{text}. {self.usage}."


@dataclass
class GenerationResult:
    """A generated golden set and the report of how it was made."""

    golden: GoldenSet
    report: GenerateReport


def _corpus_entries(corpus: Mapping[str, Any] | GoldenSet) -> dict[str, dict[str, Any]]:
    if isinstance(corpus, GoldenSet):
        if corpus.corpus is None:
            raise InputError(f"golden set {corpus.name!r} has no corpus; read it with load_corpus=True")
        source: Mapping[str, Any] = corpus.corpus
    elif isinstance(corpus, Mapping):
        source = corpus
    else:
        raise InputError(
            f"corpus: expected {{doc_id: text}} or a GoldenSet with a corpus, found {type(corpus).__name__}"
        )
    out: dict[str, dict[str, Any]] = {}
    for doc, value in source.items():
        if isinstance(value, str):
            out[str(doc)] = {"title": "", "text": value, "metadata": {}}
        elif isinstance(value, Mapping):
            out[str(doc)] = dict(value)
        else:
            raise InputError(f"corpus[{doc!r}]: expected the text or a {{'title', 'text'}} dict, found {value!r}")
    return out


async def agenerate_golden_set(
    corpus: Mapping[str, Any] | GoldenSet,
    llm: Any,
    n: int,
    styles: Sequence[str] = ("natural", "keyword"),
    *,
    seed: int = 0,
    model_id: str | None = None,
    prompt: Prompt = QUERY_V1,
    style_instructions: Mapping[str, str] | None = None,
    label: int = 3,
    min_chars: int = 1,
    id_prefix: str = "gen",
    name: str = "generated",
    policy: CallPolicy | None = None,
    **policy_fields: Any,
) -> GenerationResult:
    """Async :func:`generate_golden_set`."""
    # no cache here: the model id is provenance only, so a callable's qualified name will do
    client: LLMClient = as_llm(llm, model_id=model_id or describe_llm(llm))
    pol = _policy_of(policy, policy_fields, "generate_queries")
    batch.check_number("n", n, integer=True, minimum=1, strict=False, none=False)
    batch.check_number("label", label, integer=True, minimum=1, strict=False, none=False)
    batch.check_number("min_chars", min_chars, integer=True, minimum=0, strict=False, none=False)
    if isinstance(styles, str):
        styles = (styles,)
    if not styles:
        raise InputError("styles must name at least one style")
    known = {**QUERY_STYLES, **(style_instructions or {})}
    unknown = [s for s in styles if s not in known]
    if unknown:
        raise InputError(
            f"unknown query style {unknown[0]!r}; known: {', '.join(sorted(known))} "
            "(describe new ones with style_instructions={name: description})"
        )
    entries = _corpus_entries(corpus)
    texts = {doc: _doc_text(entry) or "" for doc, entry in entries.items()}
    eligible = sorted((d for d, t in texts.items() if t.strip() and len(t) >= max(min_chars, 1)), key=_id_sort_key)
    if n > len(eligible):
        raise InputError(f"n must be <= the number of usable documents ({len(eligible)}). Got {n} instead.")
    rng = random.Random(seed)
    chosen = rng.sample(eligible, n)
    plan = [(doc, styles[i % len(styles)]) for i, doc in enumerate(chosen)]

    session = Session(client, pol)
    repair = _repair_builder(_QUERY_SHAPE)
    report = GenerateReport(requested=n)
    results: dict[int, str] = {}

    def build(doc: str, style: str) -> str:
        return prompt.render({"document": texts[doc]}, style=style, style_text=known[style])

    async def ask(item: tuple[str, str]) -> str:
        doc, style = item
        text, _ = await session.ask(functools.partial(build, doc, style), parse_query, repair)
        return text

    def record(i: int, outcome: batch.Outcome) -> None:  # with the engine's lock held
        failure = outcome.failure
        if failure is None:
            results[i] = outcome.value
        elif failure.kind == batch.BUDGET:
            report.not_generated.append(plan[i][0])
        else:
            report.failed[plan[i][0]] = failure.detail
            session.note_failure()

    # the session makes each call (timeout, pacing, retries, budget); the engine runs the documents
    try:
        await _run_items(plan, ask, record, pol.concurrency)
    finally:
        session.close()
    width = len(str(n))
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    seen_texts: set[str] = set()
    for i, (doc, style) in enumerate(plan):
        if i not in results:
            continue
        text = results[i]
        if text.casefold() in seen_texts:
            report.duplicates += 1
        seen_texts.add(text.casefold())
        qid = f"{id_prefix}-{i + 1:0{width}d}"
        meta = {"source_doc": doc, "style": style, "model": client.model_id, "prompt": prompt.id, "seed": seed}
        queries.append(Query(qid, text, category=style, reference_context_ids=(doc,), metadata=meta))
        qrels[qid] = {doc: label}
    report.generated = len(queries)
    report.stopped = session.stopped
    report.usage = session.usage
    golden = GoldenSet(queries, Qrels._trusted(qrels, name=f"{name}:source-docs"), corpus=entries, name=name)
    return GenerationResult(golden, report)


def _id_sort_key(doc: str) -> tuple[int, int, str]:
    """Numeric ids in numeric order, then the rest: the sample does not depend on dict order."""
    return (0, int(doc), "") if doc.isdigit() else (1, 0, doc)


def generate_golden_set(
    corpus: Mapping[str, Any] | GoldenSet,
    llm: Any,
    n: int,
    styles: Sequence[str] = ("natural", "keyword"),
    *,
    seed: int = 0,
    model_id: str | None = None,
    prompt: Prompt = QUERY_V1,
    style_instructions: Mapping[str, str] | None = None,
    label: int = 3,
    min_chars: int = 1,
    id_prefix: str = "gen",
    name: str = "generated",
    policy: CallPolicy | None = None,
    **policy_fields: Any,
) -> GenerationResult:
    """Generate queries and return the golden set with a :class:`GenerateReport` (never raises on a
    partial result). Parameters as :func:`generate_queries`."""
    return run_sync(
        lambda: agenerate_golden_set(
            corpus,
            llm,
            n,
            styles,
            seed=seed,
            model_id=model_id,
            prompt=prompt,
            style_instructions=style_instructions,
            label=label,
            min_chars=min_chars,
            id_prefix=id_prefix,
            name=name,
            policy=policy,
            **policy_fields,
        )
    )


def generate_queries(
    corpus: Mapping[str, Any] | GoldenSet,
    llm: Any,
    n: int,
    styles: Sequence[str] = ("natural", "keyword"),
    *,
    seed: int = 0,
    model_id: str | None = None,
    prompt: Prompt = QUERY_V1,
    style_instructions: Mapping[str, str] | None = None,
    label: int = 3,
    min_chars: int = 1,
    id_prefix: str = "gen",
    name: str = "generated",
    on_error: Literal["raise", "skip"] = "raise",
    policy: CallPolicy | None = None,
    **policy_fields: Any,
) -> GoldenSet:
    """Sample ``n`` documents and generate one query for each, cycling through ``styles``.

    Parameters
    ----------
    corpus:
        ``{doc_id: text}``, a BEIR-style ``{doc_id: {"title", "text"}}``, or a GoldenSet with a corpus.
    llm:
        A LangChain chat model, a LlamaIndex LLM or a callable ``f(prompt) -> str`` (sync or async).
    n:
        Queries to generate (one per sampled document, sampled without replacement).
    styles:
        Query styles, assigned in turn (``n=10`` with two styles gives five of each); each becomes the
        query's category.
    seed:
        Seeds the document sample (the LLM's own randomness is its own).
    model_id, prompt:
        Recorded in every query's metadata (see :func:`~rankbridge.judge.llm.as_llm`).
    style_instructions:
        ``{style: description}`` for styles beyond :data:`~rankbridge.judge.prompts.QUERY_STYLES`.
    label:
        The source document's label in the qrels.
    min_chars:
        Documents shorter than this (and empty ones) are never sampled.
    id_prefix, name:
        Query ids are ``<id_prefix>-<i>``; ``name`` names the golden set.
    on_error:
        ``"raise"`` (default): raise :class:`GenerationError` when any document produced no query;
        ``"skip"``: return the queries that were generated.
    policy, **policy_fields:
        A :class:`~rankbridge.judge.llm.CallPolicy` or its fields (``concurrency``, ``max_calls``, ...).

    Returns
    -------
    GoldenSet
        Queries (category = style, ``reference_context_ids`` = the source doc, metadata with model,
        prompt and seed), qrels ``{query: {source_doc: label}}``, and the corpus.
    """
    if on_error not in ("raise", "skip"):
        raise InputError(f"on_error must be 'raise' or 'skip'. Got {on_error!r} instead.")
    result = generate_golden_set(
        corpus,
        llm,
        n,
        styles,
        seed=seed,
        model_id=model_id,
        prompt=prompt,
        style_instructions=style_instructions,
        label=label,
        min_chars=min_chars,
        id_prefix=id_prefix,
        name=name,
        policy=policy,
        **policy_fields,
    )
    if on_error == "raise" and not result.report.complete:
        raise GenerationError(f"query generation incomplete: {result.report}", result)
    return result.golden
