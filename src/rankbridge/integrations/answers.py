"""Answers from the user's own RAG pipeline, with the contexts each answer was generated from.

RAGAS faithfulness asks "is every claim of the answer supported by the contexts?". That question is only
fair when the contexts are the ones the generator actually saw, so :func:`generate_answers` captures
them *in the same call* that produced the answer:

* a **LlamaIndex query engine** (anything with ``.query(str)`` returning a ``Response``): the answer is
  ``response.response`` and the contexts are ``response.source_nodes``;
* a **LangChain runnable** (anything with ``.invoke``): the output may be a string, a message, or a dict
  with the answer (``"answer"``, ``"result"``, ``"output"``...) and the documents it used (``"context"``,
  ``"source_documents"``...) -- what ``create_retrieval_chain`` and ``RetrievalQA`` return;
* a **callable** ``f(question)`` returning ``(answer, contexts)``, a string, or a dict as above.

Contexts may be LlamaIndex nodes, LangChain documents, :class:`~rankbridge.Hit` objects, ``(id, text)``
pairs or plain strings (texts with no ids: fine for faithfulness, but ID-based metrics then have nothing
to compare). Ids are resolved with the same ``id_from`` rules as the retriever adapters, so they line up
with the qrels.

Frameworks are never imported here: objects are recognised by what they have.

Examples
--------
>>> def pipeline(question):
...     return "Vitamin C deficiency.", [("d1", "Scurvy is caused by a lack of vitamin C.")]
>>> answers = generate_answers(pipeline, {"q1": "What causes scurvy?"})
>>> answers["q1"].response, answers["q1"].context_ids
('Vitamin C deficiency.', ('d1',))
>>> answers.to_run().ranking("q1")
['d1']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rankbridge import batch
from rankbridge.errors import InputError
from rankbridge.retriever import normalize_hits
from rankbridge.types import GoldenSet, Hit, Query, Run, _DictView

__all__ = ["Answer", "Answers", "generate_answers"]

_ANSWER_KEYS = ("answer", "result", "output", "response", "text")
_CONTEXT_KEYS = ("context", "source_documents", "contexts", "documents", "source_nodes", "docs")


@dataclass(frozen=True, slots=True)
class Answer:
    """One generated answer and the contexts it was generated from.

    Attributes
    ----------
    response:
        The answer text; ``None`` when generation failed (see :attr:`error`).
    contexts:
        The context texts the generator saw, in the order it got them; empty when not captured.
    context_ids:
        Their doc ids, aligned with :attr:`contexts`; empty when the contexts carried no ids.
    error:
        Why generation failed, or ``None``.
    latency:
        Seconds the pipeline call took.

    Examples
    --------
    >>> Answer("42", contexts=("the answer is 42",), context_ids=("d7",)).captured
    True
    """

    response: str | None
    contexts: tuple[str, ...] = ()
    context_ids: tuple[str, ...] = ()
    error: str | None = None
    latency: float | None = None

    @property
    def captured(self) -> bool:
        """True when the contexts the answer was generated from were captured."""
        return bool(self.contexts)


class Answers(_DictView[Answer]):
    """Query id -> :class:`Answer`, as :func:`generate_answers` returns them.

    Pass it as ``responses=`` to :func:`rankbridge.integrations.ragas.evaluate_ragas`: faithfulness is then
    judged against each answer's own contexts. :meth:`to_run` turns the captured contexts into a
    :class:`~rankbridge.Run`, so the contexts the generator saw can be scored with ranking metrics too.

    Examples
    --------
    >>> a = Answers({"q1": Answer("yes"), "q2": Answer(None, error="error: boom")})
    >>> a.responses(), a.errors
    ({'q1': 'yes'}, {'q2': 'error: boom'})
    """

    def __init__(self, answers: Mapping[str, Answer], *, name: str = "answers") -> None:
        self._data = dict(answers)
        self.name = name

    def __repr__(self) -> str:
        return f"Answers(name={self.name!r}, answers={len(self._data)}, errors={len(self.errors)})"

    @property
    def errors(self) -> dict[str, str]:
        """``{qid: message}`` of the queries whose generation failed."""
        return {q: a.error for q, a in self._data.items() if a.error is not None}

    def responses(self) -> dict[str, str]:
        """``{qid: answer text}`` of the queries that got an answer."""
        return {q: a.response for q, a in self._data.items() if a.response is not None}

    def to_run(self, name: str | None = None) -> Run:
        """A ranked :class:`~rankbridge.Run` of the captured contexts (in the order the generator got them).

        Contexts without ids cannot be ranked and make the query fail with a message saying so; a failed
        generation is recorded as a failed query.
        """
        run = Run(name=name or self.name)
        for qid, ans in self._data.items():
            if ans.error is not None and not ans.contexts:
                run.add_error(qid, ans.error, latency=ans.latency)
            elif ans.contexts and len(ans.context_ids) != len(ans.contexts):
                run.add_error(qid, "invalid result: the captured contexts carry no doc ids", latency=ans.latency)
            else:
                hits = [Hit(i, None, t) for i, t in zip(ans.context_ids, ans.contexts, strict=True)]
                run.add(qid, hits, latency=ans.latency)
        return run


# -- reading a pipeline's output ------------------------------------------------------------------
def _message_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    content = getattr(value, "content", None)  # a LangChain message
    if isinstance(content, str):
        return content
    return None


def _from_mapping(out: Mapping[str, Any], answer_key: str | None, context_key: str | None) -> tuple[str, Any]:
    keys = (answer_key,) if answer_key else _ANSWER_KEYS
    answer = next((out[k] for k in keys if k in out), None)
    text = _message_text(answer)
    if text is None:
        raise InputError(
            f"the pipeline returned a dict without an answer under {', '.join(map(repr, keys))} "
            f"(keys: {', '.join(map(repr, out))}); pass answer_key="
        )
    ckeys = (context_key,) if context_key else _CONTEXT_KEYS
    contexts = next((out[k] for k in ckeys if k in out), None)
    return text, contexts


def _parse_output(out: Any, answer_key: str | None, context_key: str | None) -> tuple[str, Any]:
    """(answer text, raw contexts or None) from whatever the pipeline returned."""
    text = _message_text(out)
    if text is not None:
        return text, None
    if isinstance(out, tuple) and len(out) == 2:
        text = _message_text(out[0])
        if text is not None:
            return text, out[1]
    if hasattr(out, "source_nodes") and hasattr(out, "response"):  # a LlamaIndex Response
        response = out.response
        return ("" if response is None else str(response)), out.source_nodes
    if isinstance(out, Mapping):
        return _from_mapping(out, answer_key, context_key)
    raise InputError(
        f"the pipeline returned a {type(out).__name__}; expected a string, an (answer, contexts) pair, a dict "
        "with an answer and its context documents, or a LlamaIndex Response"
    )


def _parse_contexts(
    raw: Any, id_from: Any, doc_map: Mapping[str, str] | Callable[[str], str | None] | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(texts, ids) of captured contexts; ids are empty when the contexts are plain strings."""
    if raw is None:
        return (), ()
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Iterable):
        raise InputError(f"the pipeline's contexts are a {type(raw).__name__}; expected a list")
    items = list(raw)
    if not items:
        return (), ()
    if all(isinstance(i, str) for i in items):
        return tuple(items), ()
    pairs = [
        Hit(str(i[0]), None, i[1])
        if isinstance(i, tuple) and len(i) == 2 and isinstance(i[0], (str, int)) and isinstance(i[1], str)
        else i
        for i in items
    ]
    hits, _ = normalize_hits(pairs, k=len(pairs), id_from=id_from)
    texts: list[str] = []
    ids: list[str] = []
    for rank, h in enumerate(hits, 1):
        if h.text is None:
            raise InputError(f"the context at position {rank} (doc {h.doc_id!r}) has no text")
        mapped = None
        if doc_map is not None:
            mapped = doc_map(h.doc_id) if callable(doc_map) else doc_map.get(h.doc_id)
        texts.append(h.text)
        ids.append(h.doc_id if mapped is None else str(mapped))
    return tuple(texts), tuple(ids)


def _caller(pipeline: Any, input_key: str | None) -> Callable[[str], Any]:
    query = getattr(pipeline, "query", None)
    if callable(query) and type(pipeline).__module__.startswith("llama_index"):
        return query  # type: ignore[no-any-return]
    invoke = getattr(pipeline, "invoke", None)
    if callable(invoke):
        if input_key is None:
            return invoke  # type: ignore[no-any-return]
        return lambda q: invoke({input_key: q})
    if callable(query):  # a query-engine look-alike
        return query  # type: ignore[no-any-return]
    if callable(pipeline):
        if input_key is None:
            return pipeline  # type: ignore[no-any-return]
        return lambda q: pipeline({input_key: q})
    raise InputError(
        f"pipeline: expected a LlamaIndex query engine, a LangChain runnable or a callable, found "
        f"{type(pipeline).__name__}"
    )


def _as_questions(queries: GoldenSet | Mapping[str, str] | Iterable[Query]) -> list[tuple[str, str]]:
    if isinstance(queries, GoldenSet):
        return [(q.id, q.text) for q in queries.queries]
    if isinstance(queries, Mapping):
        return [(str(k), str(v)) for k, v in queries.items()]
    out: list[tuple[str, str]] = []
    for q in queries:
        if not isinstance(q, Query):
            raise InputError(f"queries: expected a GoldenSet, a {{qid: text}} dict or Query objects, found {q!r}")
        out.append((q.id, q.text))
    return out


def generate_answers(
    pipeline: Any,
    queries: GoldenSet | Mapping[str, str] | Iterable[Query],
    *,
    input_key: str | None = None,
    answer_key: str | None = None,
    context_key: str | None = None,
    id_from: Any = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    max_workers: int = 4,
    timeout: float | None = None,
    name: str = "answers",
) -> Answers:
    """Ask the user's pipeline every question, keeping each answer with the contexts it was built from.

    Parameters
    ----------
    pipeline:
        A LlamaIndex query engine, a LangChain runnable, or a callable (see the module docstring).
    queries:
        A :class:`~rankbridge.GoldenSet`, ``{qid: question}``, or :class:`~rankbridge.Query` objects.
    input_key:
        Call the pipeline with ``{input_key: question}`` instead of the bare question (``"input"`` for
        ``create_retrieval_chain``, ``"query"`` for ``RetrievalQA``).
    answer_key, context_key:
        Where the answer and the context documents are in a dict output (default: the usual names).
    id_from:
        Where each context's doc id comes from (see :mod:`rankbridge.retriever`); default its own id.
    doc_map:
        Chunk id -> document id, when the qrels judge whole documents.
    max_workers:
        Questions asked at a time (threads). Must be >= 1.
    timeout:
        Seconds to wait for one answer; a call that takes longer is recorded as ``"timeout: ..."`` (the
        call itself cannot be stopped and finishes in the background).
    name:
        The name of the result (and of :meth:`Answers.to_run`).

    Returns
    -------
    Answers
        One :class:`Answer` per query; a failed call is kept with its ``error``, never dropped.

    Examples
    --------
    >>> answers = generate_answers(lambda q: q.upper(), {"q1": "why?", "q2": "how?"})
    >>> answers.responses()
    {'q1': 'WHY?', 'q2': 'HOW?'}
    """
    batch.check_number("max_workers", max_workers, integer=True, minimum=1, strict=False, none=False)
    batch.check_number("timeout", timeout, integer=False, minimum=0, strict=True, none=True)
    call = _caller(pipeline, input_key)
    questions = _as_questions(queries)

    def one(question: str) -> Answer:
        start = time.perf_counter()
        try:
            text, raw = _parse_output(call(question), answer_key, context_key)
            texts, ids = _parse_contexts(raw, id_from, doc_map)
        except Exception as exc:  # one failing question never stops the others
            return Answer(None, error=f"error: {type(exc).__name__}: {exc}", latency=time.perf_counter() - start)
        return Answer(text, texts, ids, latency=time.perf_counter() - start)

    done: dict[str, Answer] = {}

    def record(outcome: batch.Outcome) -> None:
        if outcome.failure is None:
            done[outcome.key] = outcome.value
        elif outcome.failure.kind == batch.TIMEOUT:  # the call cannot be stopped: it finishes unseen
            done[outcome.key] = Answer(None, error=f"timeout: no answer within {timeout} s", latency=timeout)
        else:  # raised past `one` (SystemExit from the pipeline)
            done[outcome.key] = Answer(None, error=outcome.failure.message, latency=outcome.latency)

    # not retried: the pipeline's LLM call may have side effects, and it costs
    policy = batch.Policy(concurrency=max_workers, timeout=timeout, retries=0)
    batch.run_sync([batch.Task(qid, text) for qid, text in questions], one, record, policy, callee="the pipeline")
    return Answers({qid: done[qid] for qid, _ in questions}, name=name)


def responses_of(responses: Mapping[str, str | Answer] | None) -> dict[str, Answer]:
    """Normalise ``responses=`` (``{qid: text}`` or ``{qid: Answer}``) into ``{qid: Answer}``.

    Examples
    --------
    >>> responses_of({"q1": "yes"})["q1"].response
    'yes'
    """
    out: dict[str, Answer] = {}
    for qid, value in (responses or {}).items():
        if isinstance(value, Answer):
            out[str(qid)] = value
        elif isinstance(value, str):
            out[str(qid)] = Answer(value)
        else:
            raise InputError(
                f"responses[{qid!r}]: expected an answer string or an Answer, found {type(value).__name__}"
            )
    return out
