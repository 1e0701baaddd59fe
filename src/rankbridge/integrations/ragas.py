"""The RAGAS bridge: the same :class:`~rankbridge.Run` scored by RAGAS, joined per query with ranking metrics.

Three steps, each usable alone:

1. **Export** -- :func:`to_ragas` / :func:`to_hf_dataset` / :func:`ragas_rows` turn a run and a golden set
   into one RAGAS row per query: ``user_input``, ``retrieved_contexts`` (each hit's own text, or the golden
   set's corpus text when the hit carries none -- the ``context_source`` column says which),
   ``retrieved_context_ids``, ``reference_context_ids`` (the relevant docs of the qrels, or
   ``Query.reference_context_ids``), ``reference_contexts``, ``reference`` and ``response``. Ids are
   strings, and every row is validated (RAGAS itself checks only the first).
2. **Answers** -- :func:`rankbridge.integrations.answers.generate_answers` asks the user's own pipeline
   and keeps the contexts each answer was generated from.
3. **Scoring** -- :func:`evaluate_ragas` runs RAGAS (through ``ragas.evaluate``) with the user's LLM and
   embeddings and returns a :class:`RagasEvaluation`: a :class:`~rankbridge.Evaluation` whose ``values``
   hold ``"ragas.<metric>"`` columns aligned to the sorted query ids, so :func:`join` puts them beside
   ``ndcg@10`` and every downstream tool (intervals, comparisons, slices, reports) reads them alike.

Which metrics
-------------
====================================================  =======  =============================================
metric (column ``ragas.<name>``)                      needs    what it measures
====================================================  =======  =============================================
``context_precision``                                 LLM      AP-like rank quality of LLM-judged "useful"
``context_recall``                                    LLM      share of the reference's claims in the contexts
``faithfulness``                                      LLM      share of the answer's claims the contexts support
``answer_relevancy``                                  LLM+emb  does the answer address the question
``id_based_context_precision``                        --       \\|retrieved ∩ reference\\| / \\|retrieved\\| (sets)
``id_based_context_recall``                           --       \\|retrieved ∩ reference\\| / \\|reference\\| (sets)
``non_llm_context_precision_with_reference``          --       AP-like, string similarity to reference contexts
``non_llm_context_recall``                            --       share of reference contexts matched by a context
====================================================  =======  =============================================

**RAGAS context precision is not precision@k.** It is an average-precision-like sum over the ranks of
the contexts judged useful, divided by the number of useful contexts *retrieved* -- not by k, and not by
the number of relevant documents as trec_eval's AP does (on one list: 0.833 for RAGAS, 0.556 for AP; see
METRICS.md). The ID-based variants are plain set precision and recall over the whole retrieved list, with
no rank and no cut-off (pass ``k=`` to score the top k only). Compare them with ``precision@k`` and
``recall@k`` only on the same k.

Failures are shown, never averaged away
---------------------------------------
A row RAGAS could not score (the LLM raised, timed out, returned unparsable output, the budget ran out,
or an input was missing) holds NaN; :attr:`RagasEvaluation.mean` averages over the scored rows only,
:attr:`RagasEvaluation.counts` says how many, and :attr:`RagasEvaluation.failures` keeps the reason per
query (``"error: ..."``, ``"timeout: ..."``, ``"budget: ..."``, ``"no input: ..."``, ``"undefined: ..."``).

Offline and private by default
------------------------------
``RAGAS_DO_NOT_TRACK=true`` is set before ragas is imported (unless you set the variable yourself), and no
model client is ever built for you: an LLM metric without ``llm=``, or answer relevancy without
``embeddings=``, is an error, never a silent OpenAI client. (ragas 0.4.3 still writes a random user id
under ``$XDG_DATA_HOME/ragas`` even with tracking off; nothing is sent.)

Examples
--------
>>> from rankbridge import GoldenSet, Hit, Qrels, Query, Run
>>> golden = GoldenSet([Query("q1", "What causes scurvy?", reference="Lack of vitamin C.")], Qrels({"q1": {"d1": 1}}))
>>> run = Run.from_ranked({"q1": [Hit("d1", text="Scurvy: vitamin C deficiency."), Hit("d2", text="Rickets.")]})
>>> row = ragas_rows(run, golden)[0]
>>> row["retrieved_context_ids"], row["reference_context_ids"], row["context_source"]
(['d1', 'd2'], ['d1'], 'hit')
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import importlib
import json
import math
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rankbridge import batch
from rankbridge.batch import Failure
from rankbridge.errors import BudgetExceededError, InputError, MissingExtraError
from rankbridge.evaluate import Evaluation
from rankbridge.integrations.answers import Answer, responses_of
from rankbridge.io._atomic import atomic_path, atomic_write
from rankbridge.types import GoldenSet, Run

if TYPE_CHECKING:
    from datasets import Dataset  # type: ignore[import-untyped]
    from ragas import EvaluationDataset

__all__ = [
    "LLM_METRICS",
    "MODEL_FREE_METRICS",
    "PREFIX",
    "RAGAS_METRICS",
    "Budget",
    "BudgetExceededError",
    "MetricSpec",
    "RagasEvaluation",
    "aevaluate_ragas",
    "evaluate_ragas",
    "join",
    "ragas_rows",
    "to_hf_dataset",
    "to_ragas",
    "write_dataset",
]

#: Prefix of every RAGAS column in :attr:`Evaluation.values`.
PREFIX = "ragas."

ReferenceFrom = Literal["qrels", "query"]

_CONFIGURE_LLM = (
    "pass llm= (a LangChain chat model, a LlamaIndex LLM, or ragas.llms.llm_factory(model, client=...)); "
    "on the command line: --llm module:attr"
)
_CONFIGURE_EMB = (
    "pass embeddings= (LangChain or LlamaIndex embeddings, or a ragas embeddings object); "
    "on the command line: --embeddings module:attr"
)


@dataclass(frozen=True)
class MetricSpec:
    """A RAGAS metric the bridge knows: where its class lives and what it needs.

    Attributes
    ----------
    name:
        RAGAS' column name (ours is ``"ragas." + name``).
    target:
        ``"module:Class"`` of the classic ragas metric (the only kind ``ragas.evaluate`` accepts).
    needs_llm, needs_embeddings:
        Whether a model must be configured.
    columns:
        The row fields it reads.
    doc:
        One line for reports.
    """

    name: str
    target: str
    needs_llm: bool
    needs_embeddings: bool
    columns: tuple[str, ...]
    doc: str

    @property
    def column(self) -> str:
        """Our column name, ``"ragas.<name>"``."""
        return PREFIX + self.name


_SPECS = (
    MetricSpec(
        "context_precision",
        "ragas.metrics._context_precision:ContextPrecision",
        True,
        False,
        ("user_input", "retrieved_contexts", "reference"),
        "AP-like rank quality of the contexts an LLM judges useful for the reference (not precision@k)",
    ),
    MetricSpec(
        "context_recall",
        "ragas.metrics._context_recall:ContextRecall",
        True,
        False,
        ("user_input", "retrieved_contexts", "reference"),
        "share of the reference answer's claims an LLM attributes to the contexts",
    ),
    MetricSpec(
        "faithfulness",
        "ragas.metrics._faithfulness:Faithfulness",
        True,
        False,
        ("user_input", "response", "retrieved_contexts"),
        "share of the answer's claims the contexts support",
    ),
    MetricSpec(
        "answer_relevancy",
        "ragas.metrics._answer_relevance:AnswerRelevancy",
        True,
        True,
        ("user_input", "response"),
        "similarity of the question to questions an LLM derives from the answer",
    ),
    MetricSpec(
        "id_based_context_precision",
        "ragas.metrics._context_precision:IDBasedContextPrecision",
        False,
        False,
        ("retrieved_context_ids", "reference_context_ids"),
        "set precision of retrieved ids against reference ids (no rank, no cut-off)",
    ),
    MetricSpec(
        "id_based_context_recall",
        "ragas.metrics._context_recall:IDBasedContextRecall",
        False,
        False,
        ("retrieved_context_ids", "reference_context_ids"),
        "set recall of reference ids among retrieved ids (no rank, no cut-off)",
    ),
    MetricSpec(
        "non_llm_context_precision_with_reference",
        "ragas.metrics._context_precision:NonLLMContextPrecisionWithReference",
        False,
        False,
        ("retrieved_contexts", "reference_contexts"),
        "AP-like, a context counts when its string similarity to a reference context is >= 0.5",
    ),
    MetricSpec(
        "non_llm_context_recall",
        "ragas.metrics._context_recall:NonLLMContextRecall",
        False,
        False,
        ("retrieved_contexts", "reference_contexts"),
        "share of reference contexts matched (string similarity > 0.5) by a retrieved context",
    ),
)

#: Every metric the bridge knows, by RAGAS name.
RAGAS_METRICS: dict[str, MetricSpec] = {s.name: s for s in _SPECS}
#: The metrics that need a model (run only with ``llm=``; answer relevancy also needs ``embeddings=``).
LLM_METRICS: tuple[str, ...] = ("context_precision", "context_recall", "faithfulness", "answer_relevancy")
#: The metrics that need no model (the non-LLM ones need ``rapidfuzz``).
MODEL_FREE_METRICS: tuple[str, ...] = (
    "id_based_context_precision",
    "id_based_context_recall",
    "non_llm_context_precision_with_reference",
    "non_llm_context_recall",
)

_ROW_FIELDS = (
    "user_input",
    "retrieved_contexts",
    "retrieved_context_ids",
    "reference_context_ids",
    "reference_contexts",
    "reference",
    "response",
)
_LIST_FIELDS = frozenset({"retrieved_contexts", "retrieved_context_ids", "reference_context_ids", "reference_contexts"})
#: Fields whose value, for the generation metrics, comes from the contexts the answer was generated from.
_GENERATION_FIELDS = ("retrieved_contexts", "retrieved_context_ids")


# -- importing ragas (lazily, privately) ------------------------------------------------------------
_RAGAS_DEPRECATIONS = (
    r"(?:a?evaluate\(\) is deprecated"
    r"|\w+Wrapper is deprecated"
    r"|Importing \w+ from 'ragas\.metrics' is deprecated"
    r"|Direct usage of LangChain LLMs with Ragas prompts is deprecated"
    r"|Legacy embedding_factory interface is deprecated)"
)


@contextlib.contextmanager
def _quiet_ragas() -> Iterator[None]:
    """Silence ragas' own deprecation notices about the classic API it still ships (and we must use)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_RAGAS_DEPRECATIONS, category=DeprecationWarning)
        yield


def _import_ragas() -> Any:
    """Import ragas with telemetry off (unless the user set RAGAS_DO_NOT_TRACK); map failures to ours."""
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    try:
        with _quiet_ragas():
            import ragas
            from ragas import _analytics
    except ModuleNotFoundError as exc:
        missing = exc.name or "ragas"
        if missing.startswith("langchain_community"):
            raise MissingExtraError(
                "langchain-community<0.4",
                "ragas",
                f"ragas (which fails to import beside langchain-community 0.4: no module {missing!r})",
            ) from exc
        raise MissingExtraError(missing.split(".")[0], "ragas", "The RAGAS bridge") from exc
    if os.environ.get("RAGAS_DO_NOT_TRACK", "").lower() == "true" and not _analytics.do_not_track():
        _analytics.do_not_track.cache_clear()  # ragas was imported (and asked) before the variable was set
    # ragas 0.4.3 reads its uuid.json without closing it (a ResourceWarning in the host app) the first time
    # any event object is built; the result is cached, so read it once here with that warning silenced.
    get_userid = getattr(_analytics, "get_userid", None)
    if get_userid is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            get_userid()
            gc.collect()  # the leaked file object is finalised here, inside the silenced block
    return ragas


def _import_datasets() -> Any:
    try:
        import datasets
    except ModuleNotFoundError as exc:
        raise MissingExtraError("datasets", "ragas", "Exporting a RAGAS dataset") from exc
    return datasets


def _class(target: str) -> Any:
    """The class named ``"module:Class"`` (its module imported on first use)."""
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)


def _metric_class(spec: MetricSpec) -> Any:
    _import_ragas()
    with _quiet_ragas():
        return _class(spec.target)


def _has_rapidfuzz() -> bool:
    try:
        import rapidfuzz  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True


# -- rows ---------------------------------------------------------------------------------------------
@dataclass
class _Rows:
    """RAGAS rows per query, and why a field is missing where it is."""

    query_ids: list[str]
    rows: dict[str, dict[str, Any]]
    generation_rows: dict[str, dict[str, Any]]
    source: dict[str, str]
    missing: dict[str, dict[str, str]]  # field -> {qid: why}
    no_result: dict[str, str]  # qid -> why the run has nothing for it
    captured: set[str] = field(default_factory=set)  # generation rows that use the answer's own contexts


def _doc_text(doc: Mapping[str, Any]) -> str | None:
    text = doc.get("text")
    if not isinstance(text, str):
        return None
    title = doc.get("title")
    return f"{title}\n{text}" if isinstance(title, str) and title.strip() else text


def _check_k(k: int | None) -> None:
    batch.check_number("k", k, integer=True, minimum=1, strict=False, none=True)


def _build_rows(
    run: Run,
    golden: GoldenSet,
    responses: Mapping[str, str | Answer] | None,
    *,
    k: int | None,
    reference_from: ReferenceFrom,
    query_ids: Sequence[str] | None,
) -> _Rows:
    if not isinstance(run, Run):
        raise InputError(f"run: expected a rankbridge Run, found {type(run).__name__}")
    if not isinstance(golden, GoldenSet):
        raise InputError(f"golden: expected a rankbridge GoldenSet, found {type(golden).__name__}")
    if reference_from not in ("qrels", "query"):
        raise InputError(f"reference_from must be 'qrels' or 'query'. Got {reference_from!r} instead.")
    _check_k(k)
    by_id = {q.id: q for q in golden.queries}
    if responses is None:
        # an app's run (rankbridge.apps.run_app) carries its answers; those of queries outside the golden set
        # are not the caller's mistake, so they are left out rather than refused
        answers = {q: a for q, a in responses_of(getattr(run, "answers", None)).items() if q in by_id}
    else:
        answers = responses_of(responses)
    if query_ids is None:
        qids = sorted(by_id)
    else:
        qids = sorted(str(q) for q in query_ids)
        unknown = [q for q in qids if q not in by_id]
        if unknown:
            raise InputError(
                f"query_ids: {len(unknown)} ids are not in the golden set {golden.name!r} (e.g. {unknown[0]!r})"
            )
    extra = sorted(q for q in answers if q not in by_id)
    if extra:
        raise InputError(f"responses: {len(extra)} query ids are not in the golden set (e.g. {extra[0]!r})")
    corpus = golden.corpus or {}
    out = _Rows(qids, {}, {}, {}, {f: {} for f in _ROW_FIELDS}, {})
    for qid in qids:
        q = by_id[qid]
        row: dict[str, Any] = {"user_input": q.text}
        if qid in run:
            hits = run.hits(qid)
        else:
            hits = []
            out.no_result[qid] = (
                f"retrieval failed ({run.errors[qid]})" if qid in run.errors else "the query is not in the run"
            )
        if k is not None:
            hits = hits[:k]
        row["retrieved_context_ids"] = [h.doc_id for h in hits]
        texts: list[str] = []
        unresolved: list[str] = []
        used: set[str] = set()
        for h in hits:
            if h.text is not None:
                texts.append(h.text)
                used.add("hit")
                continue
            doc = corpus.get(h.doc_id)
            text = _doc_text(doc) if doc is not None else None
            if text is None:
                unresolved.append(h.doc_id)
            else:
                texts.append(text)
                used.add("corpus")
        out.source[qid] = "+".join(sorted(used, key=("hit", "corpus").index)) or "none"
        if unresolved:
            out.missing["retrieved_contexts"][qid] = (
                f"no text for {len(unresolved)} retrieved doc(s) (e.g. {unresolved[0]!r}): the hit carries none "
                "and golden.corpus does not have it"
            )
        else:
            row["retrieved_contexts"] = texts
        qrels_ids = [
            d for d, lab in sorted(golden.qrels.get(qid, {}).items(), key=lambda kv: (-kv[1], kv[0])) if lab >= 1
        ]
        query_ids_ = list(q.reference_context_ids)
        first, second = (qrels_ids, query_ids_) if reference_from == "qrels" else (query_ids_, qrels_ids)
        ref_ids = first or second
        if ref_ids:
            row["reference_context_ids"] = ref_ids
            ref_texts = [_doc_text(corpus[d]) if d in corpus else None for d in ref_ids]
            if all(t is not None for t in ref_texts):
                row["reference_contexts"] = ref_texts
            else:
                out.missing["reference_contexts"][qid] = "a reference context id has no text in golden.corpus"
        else:
            why = "no relevant doc in the qrels and no Query.reference_context_ids"
            out.missing["reference_context_ids"][qid] = why
            out.missing["reference_contexts"][qid] = why
        if q.reference is not None:
            row["reference"] = q.reference
        else:
            out.missing["reference"][qid] = "no reference answer (Query.reference)"
        ans = answers.get(qid)
        if ans is not None and ans.response is not None:
            row["response"] = ans.response
        elif ans is not None:
            out.missing["response"][qid] = f"generation failed ({ans.error})"
        else:
            out.missing["response"][qid] = "no response given"
        _validate_row(qid, row)
        out.rows[qid] = row
        gen = dict(row)
        if ans is not None and ans.captured:
            gen["retrieved_contexts"] = list(ans.contexts)
            gen["retrieved_context_ids"] = list(ans.context_ids)
            _validate_row(qid, gen)
            out.captured.add(qid)
        out.generation_rows[qid] = gen
    return out


def _validate_row(qid: str, row: Mapping[str, Any]) -> None:
    """Check every field of one row (RAGAS checks only the first row of a dataset)."""
    for name, value in row.items():
        where = f"row of query {qid!r}, field {name!r}"
        if name in _LIST_FIELDS:
            if not isinstance(value, list):
                raise InputError(f"{where}: expected a list of strings, found {type(value).__name__}")
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    raise InputError(f"{where}[{i}]: expected a string, found {type(item).__name__} {item!r}")
        elif not isinstance(value, str):
            raise InputError(f"{where}: expected a string, found {type(value).__name__} {value!r}")
    if not row.get("user_input", "").strip():
        raise InputError(f"row of query {qid!r}: the question (user_input) is empty")


def ragas_rows(
    run: Run,
    golden: GoldenSet,
    responses: Mapping[str, str | Answer] | None = None,
    *,
    k: int | None = None,
    reference_from: ReferenceFrom = "qrels",
    query_ids: Sequence[str] | None = None,
    allow_partial: bool = False,
) -> list[dict[str, Any]]:
    """One plain dict per golden query (sorted by id): the RAGAS fields plus ``query_id`` and ``context_source``.

    Parameters
    ----------
    run:
        The retrieval results. A query missing from the run, or whose retrieval failed, gets empty
        ``retrieved_contexts`` / ``retrieved_context_ids``.
    golden:
        Questions, qrels, reference answers (``Query.reference``) and, optionally, the corpus that gives
        the text of hits that carry none.
    responses:
        ``{qid: answer text}`` or the :class:`~rankbridge.integrations.answers.Answers` of
        :func:`~rankbridge.integrations.answers.generate_answers`. Default: the run's own
        :attr:`~rankbridge.Run.answers` (those of an app run by :func:`rankbridge.apps.run_app`), if any.
    k:
        Keep only the top ``k`` hits of each query (default: all).
    reference_from:
        Where ``reference_context_ids`` come from: ``"qrels"`` (default; the docs labelled >= 1, best label
        first) or ``"query"`` (``Query.reference_context_ids``). The other source fills in when the first
        is empty for a query.
    query_ids:
        Only these queries (default: every query of the golden set).
    allow_partial:
        A query whose hits have no text (neither on the hit nor in ``golden.corpus``) is an error by default,
        because RAGAS would then judge a list of contexts with holes; ``True`` writes ``None`` for its
        ``retrieved_contexts`` instead. Other fields a query lacks (no reference answer, no response, no
        relevant doc, reference texts not in the corpus) are written as ``None``; :func:`evaluate_ragas`
        leaves such rows out of the metrics that read the field, and says so.

    Returns
    -------
    list of dict
        ``context_source`` is ``"hit"`` (texts from the run's hits), ``"corpus"`` (from
        ``golden.corpus``), ``"hit+corpus"``, or ``"none"`` (no hits).

    Examples
    --------
    >>> from rankbridge import GoldenSet, Qrels, Query, Run
    >>> golden = GoldenSet([Query("q1", "scurvy?")], Qrels({"q1": {"d1": 1}}), corpus={"d1": {"text": "Vitamin C."}})
    >>> ragas_rows(Run.from_ranked({"q1": ["d1"]}), golden)
    [{'user_input': 'scurvy?', 'retrieved_context_ids': ['d1'], 'retrieved_contexts': ['Vitamin C.'], \
'reference_context_ids': ['d1'], 'reference_contexts': ['Vitamin C.'], 'query_id': 'q1', 'context_source': 'corpus'}]
    """
    built = _build_rows(run, golden, responses, k=k, reference_from=reference_from, query_ids=query_ids)
    present = {f for row in built.rows.values() for f in row}
    rows: list[dict[str, Any]] = []
    for qid in built.query_ids:
        row = dict(built.rows[qid])
        for f in _ROW_FIELDS:
            if f in present and f not in row:
                if f == "retrieved_contexts" and not allow_partial:
                    why = built.missing[f]
                    raise InputError(
                        f"field {f!r} is missing for {len(why)} of {len(built.query_ids)} queries "
                        f"(e.g. query {qid!r}: {why.get(qid, 'missing')}); RAGAS would judge incomplete context "
                        "lists. Give the hits text (or golden.corpus), or pass allow_partial=True"
                    )
                row[f] = None
        row["query_id"] = qid
        row["context_source"] = built.source[qid]
        rows.append(row)
    return rows


def to_ragas(
    run: Run,
    golden: GoldenSet,
    responses: Mapping[str, str | Answer] | None = None,
    *,
    k: int | None = None,
    reference_from: ReferenceFrom = "qrels",
    query_ids: Sequence[str] | None = None,
) -> EvaluationDataset:
    """A RAGAS ``EvaluationDataset``: one validated row per golden query, sorted by query id.

    The dataset holds only RAGAS' own fields; :func:`ragas_rows` (or :func:`to_hf_dataset`) also gives
    each row's ``query_id`` and ``context_source``. Parameters are those of :func:`ragas_rows`.

    Raises
    ------
    MissingExtraError
        ragas is not installed (``pip install 'rankbridge[ragas]'``).
    InputError
        A row is invalid, or a field is present for some queries only.
    """
    rows = ragas_rows(run, golden, responses, k=k, reference_from=reference_from, query_ids=query_ids)
    ragas = _import_ragas()
    dataset: EvaluationDataset = ragas.EvaluationDataset.from_list([_ragas_fields(r) for r in rows])
    return dataset


def to_hf_dataset(
    run: Run,
    golden: GoldenSet,
    responses: Mapping[str, str | Answer] | None = None,
    *,
    k: int | None = None,
    reference_from: ReferenceFrom = "qrels",
    query_ids: Sequence[str] | None = None,
    allow_partial: bool = False,
) -> Dataset:
    """A Hugging Face ``datasets.Dataset`` of :func:`ragas_rows` (RAGAS fields, ``query_id``, ``context_source``).

    ``ragas.EvaluationDataset.from_hf_dataset`` reads it back (the two extra columns are ignored).
    """
    rows = ragas_rows(
        run, golden, responses, k=k, reference_from=reference_from, query_ids=query_ids, allow_partial=allow_partial
    )
    datasets = _import_datasets()
    return datasets.Dataset.from_list(rows)


def write_dataset(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Write :func:`ragas_rows` to ``.jsonl`` (plain JSON lines) or ``.parquet`` (via ``datasets``), atomically.

    Examples
    --------
    >>> import tempfile, json
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_dataset([{"user_input": "q", "query_id": "1"}], f"{d}/rows.jsonl")
    ...     json.loads(p.read_text())
    {'user_input': 'q', 'query_id': '1'}
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in (".jsonl", ".parquet"):
        raise InputError(f"output file: expected a .jsonl or .parquet name, got {str(out)!r}")
    # a temporary file beside the target, renamed over it at the end: a failure (a full disk, a value
    # JSON cannot hold, an interrupt) leaves the old file as it was and no temporary file behind
    if suffix == ".jsonl":
        with atomic_write(out) as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        datasets = _import_datasets()
        table = datasets.Dataset.from_list([dict(r) for r in rows])
        with atomic_path(out) as tmp:
            table.to_parquet(str(tmp))
    return out


def _ragas_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    return {f: row[f] for f in _ROW_FIELDS if row.get(f) is not None}


# -- budget and failure recording -----------------------------------------------------------------
@dataclass(frozen=True)
class Budget:
    """A limit on the model work one :func:`evaluate_ragas` call may do.

    Attributes
    ----------
    max_prompts:
        RAGAS prompts sent (each metric sends one or more per row, plus a repair prompt when a reply does
        not parse). Counted for every kind of LLM; a prompt asking for several answers (answer relevancy
        asks a LangChain model for 3) counts once.
    max_tokens:
        Total tokens the model *reported* (LangChain chat models that return usage). Models that report
        no usage are limited by ``max_prompts`` only.

    Once a limit is reached, every further prompt fails with ``"budget: ..."`` and its row is NaN, counted
    in :attr:`RagasEvaluation.failures`.

    Examples
    --------
    >>> Budget(max_prompts=200)
    Budget(max_prompts=200, max_tokens=None)
    """

    max_prompts: int | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        batch.check_number("max_prompts", self.max_prompts, integer=True, minimum=0, strict=False, none=True)
        batch.check_number("max_tokens", self.max_tokens, integer=True, minimum=0, strict=False, none=True)


#: The stop reasons of :class:`Budget`, in the bridge's words (prompts, not calls).
_STOP_MESSAGES = {
    "calls": "the budget of {limit} prompts is used up",
    "tokens": "the budget of {limit} tokens is used up ({used} used)",
}


class _Usage:
    """The prompts and tokens of one evaluation, on the batch engine's :class:`~rankbridge.batch.Budget`.

    RAGAS runs its own jobs and retries; the bridge counts each RAGAS prompt as one call of the budget
    (checked before the prompt starts, so ``max_prompts`` is exact) and adds the tokens the model reports.
    """

    def __init__(self, budget: Budget | None) -> None:
        limits = budget or Budget()
        self.meter = batch.Budget(limits.max_prompts, limits.max_tokens, messages=_STOP_MESSAGES)
        self.tokens_reported = False

    @property
    def prompts(self) -> int:
        return self.meter.calls

    @property
    def tokens(self) -> int:
        return self.meter.tokens

    def on_prompt(self) -> None:
        self.meter.admit()  # raises BudgetExceededError into RAGAS, which fails that prompt's row

    def on_llm_result(self, response: Any) -> None:
        total = 0
        output = getattr(response, "llm_output", None) or {}
        usage = output.get("token_usage") or output.get("usage") if isinstance(output, Mapping) else None
        if isinstance(usage, Mapping) and isinstance(usage.get("total_tokens"), int):
            total = int(usage["total_tokens"])
        else:
            for gens in getattr(response, "generations", None) or []:
                for g in gens:
                    meta = getattr(getattr(g, "message", None), "usage_metadata", None)
                    if isinstance(meta, Mapping) and isinstance(meta.get("total_tokens"), int):
                        total += int(meta["total_tokens"])
        if total:
            self.meter.charge(tokens=total)
            self.tokens_reported = True


def _failure(error: BaseException) -> Failure:
    """A metric's error on one row, as the batch engine's typed failure."""
    if isinstance(error, BudgetExceededError):
        return Failure(batch.BUDGET, str(error))
    if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
        return Failure(batch.TIMEOUT, "the metric did not finish within the timeout")
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    detail = type(error).__name__ + (f": {text[:300]}" if text else "")
    return Failure(batch.ERROR, detail, rate_limited=batch.is_rate_limited(error))


def _make_recorder(usage: _Usage) -> Any:
    """A LangChain callback handler that maps RAGAS' chain tree to (row, metric) errors and counts prompts."""
    from langchain_core.callbacks import BaseCallbackHandler

    class _Recorder(BaseCallbackHandler):  # type: ignore[misc]
        raise_error = True  # lets the budget stop a prompt; the handler itself never raises otherwise

        def __init__(self) -> None:
            self.nodes: dict[Any, tuple[str, str | None, Any, Any]] = {}
            self.errors: dict[tuple[int, str], Failure] = {}

        def on_chain_start(
            self,
            serialized: Any,
            inputs: Any,
            *,
            run_id: Any,
            parent_run_id: Any = None,
            metadata: Mapping[str, Any] | None = None,
            **kwargs: Any,
        ) -> None:
            meta = metadata or {}
            kind = meta.get("type")
            kind = str(getattr(kind, "value", kind))
            name = serialized.get("name") if isinstance(serialized, Mapping) else None
            self.nodes[run_id] = (kind, name, meta.get("row_index"), parent_run_id)
            if kind == "ragas_prompt":
                usage.on_prompt()

        def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
            node = self.nodes.get(run_id)
            if node is None or node[0] != "metric" or node[1] is None:
                return
            parent = node[3]
            for _ in range(50):
                up = self.nodes.get(parent)
                if up is None:
                    return
                if up[0] == "row" and isinstance(up[2], int):
                    self.errors.setdefault((up[2], node[1]), _failure(error))
                    return
                parent = up[3]

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            with contextlib.suppress(Exception):
                usage.on_llm_result(response)

    return _Recorder()


# -- models -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _ModelKind:
    """How the user's model of one kind reaches ragas' classic metrics (never a client we build)."""

    param: str  # the keyword, as errors name it
    expected: str
    native: tuple[str, ...]  # ragas' own classes ("module:Class"), taken as they are
    wrappers: tuple[tuple[str, str], ...]  # (a framework's base class, ragas' wrapper for it)


_LLM = _ModelKind(
    "llm",
    "a LangChain chat model, a LlamaIndex LLM or a ragas LLM (llm_factory)",
    ("ragas.llms.base:BaseRagasLLM", "ragas.llms.base:InstructorBaseRagasLLM"),
    (
        ("langchain_core.language_models:BaseLanguageModel", "ragas.llms.base:LangchainLLMWrapper"),
        ("llama_index.core.base.llms.base:BaseLLM", "ragas.llms.base:LlamaIndexLLMWrapper"),
    ),
)
_EMBEDDINGS = _ModelKind(
    "embeddings",
    "LangChain or LlamaIndex embeddings or a ragas embeddings object",
    ("ragas.embeddings.base:BaseRagasEmbeddings", "ragas.embeddings.base:BaseRagasEmbedding"),
    (
        ("langchain_core.embeddings:Embeddings", "ragas.embeddings.base:LangchainEmbeddingsWrapper"),
        ("llama_index.core.base.embeddings.base:BaseEmbedding", "ragas.embeddings.base:LlamaIndexEmbeddingsWrapper"),
    ),
)


def _resolve_model(obj: Any, kind: _ModelKind, **options: Any) -> Any:
    """``obj`` (None stays None) as ragas accepts a model of ``kind``; ``options`` go to ragas' wrapper."""
    if obj is None:
        return None
    if isinstance(obj, tuple(_class(target) for target in kind.native)):
        return obj
    for base, wrapper in kind.wrappers:
        # ragas depends on LangChain; LlamaIndex is looked at only when loaded (its objects imply it is)
        if base.startswith("llama_index.") and "llama_index.core" not in sys.modules:
            continue
        if isinstance(obj, _class(base)):
            with _quiet_ragas():
                return _class(wrapper)(obj, **options)
    raise InputError(f"{kind.param}: expected {kind.expected}, found {type(obj).__name__}")


# -- the plan: which metric, on which rows --------------------------------------------------------
@dataclass
class _Planned:
    column: str  # our column, "ragas.<name>"
    metric: Any  # a ragas metric instance
    columns: tuple[str, ...]
    generation: bool  # reads the answer's own contexts


def _plan(
    metrics: Sequence[str | Any] | None,
    *,
    has_llm: bool,
    has_embeddings: bool,
    rows: _Rows,
) -> tuple[list[_Planned], dict[str, str]]:
    """The metrics to run, and ``{column: why not run}`` for the default ones left out."""
    skipped: dict[str, str] = {}
    planned: list[_Planned] = []
    has = {f: any(f in r for r in rows.rows.values()) for f in _ROW_FIELDS}

    def add_spec(spec: MetricSpec) -> None:
        generation = "response" in spec.columns and "retrieved_contexts" in spec.columns
        planned.append(_Planned(spec.column, _metric_class(spec)(), spec.columns, generation))

    if metrics is None:
        for name in MODEL_FREE_METRICS:
            spec = RAGAS_METRICS[name]
            lacking = [c for c in spec.columns if not has[c]]
            if name.startswith("non_llm") and not _has_rapidfuzz():
                skipped[spec.column] = "needs the 'rapidfuzz' package (pip install 'rankbridge[ragas]')"
            elif lacking:
                skipped[spec.column] = f"no query has {', '.join(lacking)}"
            else:
                add_spec(spec)
        for name in LLM_METRICS:
            spec = RAGAS_METRICS[name]
            lacking = [c for c in spec.columns if not has[c]]
            if not has_llm:
                skipped[spec.column] = f"needs an LLM: {_CONFIGURE_LLM}"
            elif spec.needs_embeddings and not has_embeddings:
                skipped[spec.column] = f"needs embeddings: {_CONFIGURE_EMB}"
            elif lacking:
                hint = " (generate answers with rankbridge.integrations.answers.generate_answers)"
                skipped[spec.column] = f"no query has {', '.join(lacking)}" + (hint if "response" in lacking else "")
            else:
                add_spec(spec)
        return planned, skipped

    if isinstance(metrics, (str, bytes)):
        metrics = [metrics]
    seen: set[str] = set()
    for m in metrics:
        if isinstance(m, str):
            name = m[len(PREFIX) :] if m.startswith(PREFIX) else m
            spec_ = RAGAS_METRICS.get(name)
            if spec_ is None:
                raise InputError(f"unknown RAGAS metric {m!r}; known: {', '.join(RAGAS_METRICS)}")
            if spec_.needs_llm and not has_llm:
                raise InputError(f"RAGAS metric {name!r} needs an LLM: {_CONFIGURE_LLM}")
            if spec_.needs_embeddings and not has_embeddings:
                raise InputError(f"RAGAS metric {name!r} needs embeddings: {_CONFIGURE_EMB}")
            if name.startswith("non_llm") and not _has_rapidfuzz():
                raise MissingExtraError("rapidfuzz", "ragas", f"RAGAS metric {name!r}")
            if spec_.column in seen:
                continue
            seen.add(spec_.column)
            add_spec(spec_)
            continue
        mname = getattr(m, "name", None)
        if not isinstance(mname, str) or not hasattr(m, "single_turn_ascore"):
            raise InputError(
                f"metrics: expected RAGAS metric names ({', '.join(RAGAS_METRICS)}) or classic ragas single-turn "
                f"metric objects, found {type(m).__name__}"
            )
        from ragas.metrics.base import MetricType, MetricWithEmbeddings, MetricWithLLM

        if isinstance(m, MetricWithLLM) and m.llm is None and not has_llm:
            raise InputError(f"RAGAS metric {mname!r} needs an LLM: {_CONFIGURE_LLM}")
        if isinstance(m, MetricWithEmbeddings) and m.embeddings is None and not has_embeddings:
            raise InputError(f"RAGAS metric {mname!r} needs embeddings: {_CONFIGURE_EMB}")
        cols = tuple(sorted(m.get_required_columns().get(MetricType.SINGLE_TURN.name, set())))
        cols = tuple(c.split(":")[0] for c in cols)  # ragas marks optional columns as "name:optional"
        if PREFIX + mname in seen:
            raise InputError(f"metrics: {mname!r} is asked for twice")
        seen.add(PREFIX + mname)
        generation = "response" in cols and "retrieved_contexts" in cols
        planned.append(_Planned(PREFIX + mname, m, cols, generation))
    return planned, skipped


# -- the result -----------------------------------------------------------------------------------
@dataclass(repr=False)
class RagasEvaluation(Evaluation):
    """An :class:`~rankbridge.Evaluation` with RAGAS columns (``"ragas.<metric>"``) in :attr:`values`.

    RAGAS values are NaN where a row could not be scored; :attr:`mean` and :attr:`counts` are over the
    scored rows, and :attr:`failures` says why each other row was not. :attr:`measures` holds only ranking
    measures (after :func:`join`); RAGAS columns live in :attr:`values` alone.

    Attributes
    ----------
    failures:
        Column -> {query id -> reason}, for every NaN: ``"error: ..."``, ``"timeout: ..."``,
        ``"budget: ..."``, ``"no input: ..."`` (a field the metric reads is missing for the query) or
        ``"undefined: ..."`` (RAGAS returned NaN, e.g. no statements in the answer).
    skipped:
        Column -> why a default metric was not run (e.g. it needs an LLM, and how to configure one).
    context_source:
        How many rows took their context texts from the hits (``"hit"``), from ``golden.corpus``
        (``"corpus"``), both, or had none.
    usage:
        ``{"prompts": n, "tokens": m}``: RAGAS prompts sent, and tokens (the key is there only when the
        model reported usage).
    notes:
        Anything else the report should say.
    """

    failures: dict[str, dict[str, str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    context_source: dict[str, int] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def ragas_columns(self) -> list[str]:
        """The RAGAS columns of :attr:`values`."""
        return [n for n in self.values if n.startswith(PREFIX)]

    def summary(self) -> str:
        """One paragraph: the base summary, then per RAGAS column how many rows were not scored and why."""
        parts = [super().summary()]
        for name in self.ragas_columns:
            fails = self.failures.get(name, {})
            if fails:
                kinds: dict[str, int] = {}
                for reason in fails.values():
                    kind = reason.split(":", 1)[0]
                    kinds[kind] = kinds.get(kind, 0) + 1
                detail = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
                parts.append(f"{name}: {len(fails)} of {self.num_queries} not scored ({detail})")
        if self.skipped:
            parts.append(f"not run: {', '.join(self.skipped)}")
        return "; ".join(parts)

    def describe(self) -> str:
        """A plain-text report: means with counts, failures with examples, metrics not run and why."""
        lines = [f"{self.run_name}: {self.summary()}", ""]
        width = max((len(n) for n in self.values), default=10) + 2
        counts = self.counts
        for name, value in self.mean.items():
            lines.append(f"  {name:<{width}} {value:8.4f}  (n={counts[name]} of {self.num_queries})")
        for name in self.ragas_columns:
            for qid, reason in list(self.failures.get(name, {}).items())[:3]:
                lines.append(f"  {name}: query {qid!r}: {reason}")
        for name, reason in self.skipped.items():
            lines.append(f"  not run: {name}: {reason}")
        if self.context_source:
            lines.append(
                "  context texts from: "
                + ", ".join(f"{k} ({v} queries)" for k, v in sorted(self.context_source.items()))
            )
        if any(n.startswith(PREFIX + "context_precision") for n in self.values):
            lines.append(
                "  note: RAGAS context_precision is an AP-like score over the contexts an LLM judged useful, "
                "divided by the useful ones retrieved; it is not precision@k (see METRICS.md)."
            )
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def _values_from(
    rows: _Rows,
    planned: list[_Planned],
    scores: dict[str, dict[str, float]],
    errors: dict[str, dict[str, str]],
    not_eligible: dict[str, dict[str, str]],
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, str]]]:
    values: dict[str, np.ndarray] = {}
    failures: dict[str, dict[str, str]] = {}
    for p in planned:
        arr = np.full(len(rows.query_ids), np.nan, dtype=np.float64)
        fails: dict[str, str] = {}
        got = scores.get(p.column, {})
        for i, qid in enumerate(rows.query_ids):
            v = got.get(qid, math.nan)
            if not math.isnan(v):
                arr[i] = v
                continue
            reason = (
                not_eligible.get(p.column, {}).get(qid)
                or errors.get(p.column, {}).get(qid)
                or "undefined: RAGAS returned NaN for this row (e.g. no statements, no retrieved or reference ids)"
            )
            fails[qid] = reason
        values[p.column] = arr
        if fails:
            failures[p.column] = fails
    return values, failures


def _as_float(value: Any) -> float:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return math.nan
    return f


# -- running ragas ----------------------------------------------------------------------------------
@dataclass
class _Job:
    planned: list[_Planned]
    qids: list[str]
    dataset: Any


@dataclass
class _Prepared:
    rows: _Rows
    planned: list[_Planned]
    skipped: dict[str, str]
    jobs: list[_Job]
    not_eligible: dict[str, dict[str, str]]
    llm: Any
    embeddings: Any
    run_config: Any
    usage: _Usage
    run: Run


def _prepare(
    run: Run,
    golden: GoldenSet,
    *,
    llm: Any,
    embeddings: Any,
    metrics: Sequence[str | Any] | None,
    responses: Mapping[str, str | Answer] | None,
    k: int | None,
    reference_from: ReferenceFrom,
    query_ids: Sequence[str] | None,
    timeout: float,
    max_retries: int,
    max_wait: float,
    max_workers: int,
    budget: Budget | int | None,
) -> _Prepared:
    batch.check_number("timeout", timeout, integer=False, minimum=0, strict=True, none=False)
    batch.check_number("max_retries", max_retries, integer=True, minimum=0, strict=False, none=False)
    batch.check_number("max_wait", max_wait, integer=False, minimum=0, strict=False, none=False)
    batch.check_number("max_workers", max_workers, integer=True, minimum=1, strict=False, none=False)
    if isinstance(budget, int) and not isinstance(budget, bool):
        budget = Budget(max_prompts=budget)
    if budget is not None and not isinstance(budget, Budget):
        raise InputError(f"budget must be a Budget, an int (prompts) or None. Got {budget!r} instead.")
    rows = _build_rows(run, golden, responses, k=k, reference_from=reference_from, query_ids=query_ids)
    ragas = _import_ragas()
    from ragas.run_config import RunConfig

    run_config = RunConfig(timeout=timeout, max_retries=max_retries, max_wait=max_wait, max_workers=max_workers)  # type: ignore[arg-type]
    planned, skipped = _plan(metrics, has_llm=llm is not None, has_embeddings=embeddings is not None, rows=rows)
    ragas_llm = _resolve_model(llm, _LLM, run_config=run_config)
    ragas_emb = _resolve_model(embeddings, _EMBEDDINGS)

    # Which rows each metric can score; group metrics that read the same rows into one ragas call.
    not_eligible: dict[str, dict[str, str]] = {}
    groups: dict[tuple[bool, tuple[str, ...]], list[_Planned]] = {}
    for p in planned:
        source = rows.generation_rows if p.generation else rows.rows
        bad: dict[str, str] = {}
        for qid in rows.query_ids:
            row = source[qid]
            if (
                qid in rows.no_result
                and not (p.generation and qid in rows.captured)
                and any(c.startswith("retrieved_") for c in p.columns)
            ):
                bad[qid] = f"no input: {rows.no_result[qid]}"
                continue
            lacking = [c for c in p.columns if c not in row]
            if lacking:
                bad[qid] = f"no input: {rows.missing[lacking[0]].get(qid, lacking[0] + ' is missing')}"
        not_eligible[p.column] = bad
        ok = tuple(q for q in rows.query_ids if q not in bad)
        if ok:
            groups.setdefault((p.generation, ok), []).append(p)
    jobs: list[_Job] = []
    for (generation, qids), group in groups.items():
        source = rows.generation_rows if generation else rows.rows
        needed = {c for p in group for c in p.columns} | {"user_input"}
        data = [{f: v for f, v in source[q].items() if f in needed} for q in qids]
        with _quiet_ragas():
            dataset = ragas.EvaluationDataset.from_list(data)
        jobs.append(_Job(group, list(qids), dataset))
    usage = _Usage(budget)
    return _Prepared(rows, planned, skipped, jobs, not_eligible, ragas_llm, ragas_emb, run_config, usage, run)


def _kwargs(p: _Prepared, job: _Job, recorder: Any, progress: bool, batch_size: int | None) -> dict[str, Any]:
    return {
        "dataset": job.dataset,
        "metrics": [pl.metric for pl in job.planned],
        "llm": p.llm,
        "embeddings": p.embeddings,
        "callbacks": [recorder],
        "run_config": p.run_config,
        "raise_exceptions": False,
        "show_progress": progress,
        "batch_size": batch_size,
    }


def _collect(
    job: _Job, result: Any, recorder: Any, scores: dict[str, dict[str, float]], errors: dict[str, dict[str, str]]
) -> None:
    for i, qid in enumerate(job.qids):
        row_scores = result.scores[i] if i < len(result.scores) else {}
        for pl in job.planned:
            name = pl.column[len(PREFIX) :]
            scores.setdefault(pl.column, {})[qid] = _as_float(row_scores.get(name))
            err = recorder.errors.get((i, name))
            if err is not None:
                errors.setdefault(pl.column, {})[qid] = err.text


def _finish(p: _Prepared, scores: dict[str, dict[str, float]], errors: dict[str, dict[str, str]]) -> RagasEvaluation:
    rows = p.rows
    values, failures = _values_from(rows, p.planned, scores, errors, p.not_eligible)
    sources: dict[str, int] = {}
    for s in rows.source.values():
        sources[s] = sources.get(s, 0) + 1
    failed = tuple(q for q in rows.query_ids if q in p.run.errors and q not in p.run)
    missing = tuple(q for q in rows.query_ids if q not in p.run and q not in p.run.errors)
    notes: list[str] = []
    if rows.captured and any(pl.generation for pl in p.planned):
        notes.append("faithfulness was judged against the contexts each answer was generated from")
    return RagasEvaluation(
        measures=(),
        query_ids=tuple(rows.query_ids),
        values=values,
        missing=missing,
        failed=failed,
        run_name=p.run.name,
        failures=failures,
        skipped=p.skipped,
        context_source=sources,
        usage={"prompts": p.usage.prompts, **({"tokens": p.usage.tokens} if p.usage.tokens_reported else {})},
        notes=tuple(notes),
    )


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def evaluate_ragas(
    run: Run,
    golden: GoldenSet,
    *,
    llm: Any = None,
    embeddings: Any = None,
    metrics: Sequence[str | Any] | None = None,
    responses: Mapping[str, str | Answer] | None = None,
    k: int | None = None,
    reference_from: ReferenceFrom = "qrels",
    query_ids: Sequence[str] | None = None,
    timeout: float = 120.0,
    max_retries: int = 3,
    max_wait: float = 10.0,
    max_workers: int = 8,
    budget: Budget | int | None = None,
    batch_size: int | None = None,
    progress: bool = False,
) -> RagasEvaluation:
    """Score a run with RAGAS (through ``ragas.evaluate``) into one per-query :class:`RagasEvaluation`.

    Parameters
    ----------
    run:
        The retrieval results (their texts, or ``golden.corpus``, give the contexts).
    golden:
        Questions, qrels (reference context ids), reference answers (``Query.reference``) and corpus.
    llm:
        The judge: a LangChain chat model, a LlamaIndex LLM, or a ragas LLM (``ragas.llms.llm_factory``).
        Without it only the model-free metrics run, and :attr:`RagasEvaluation.skipped` says which metrics
        need an LLM and how to configure one. No client is ever built for you.
    embeddings:
        For answer relevancy: LangChain or LlamaIndex embeddings, or a ragas embeddings object.
    metrics:
        RAGAS metric names (see :data:`RAGAS_METRICS`; a ``"ragas."`` prefix is accepted) or classic ragas
        metric objects. Default: every model-free metric the data allows, plus the LLM metrics when
        ``llm`` is given (answer relevancy when ``embeddings`` is too; faithfulness and answer relevancy
        when ``responses`` are given). A metric asked for by name whose model is missing is an error.
    responses:
        ``{qid: answer}`` or the :class:`~rankbridge.integrations.answers.Answers` of
        :func:`~rankbridge.integrations.answers.generate_answers`. When an answer carries the contexts it
        was generated from, faithfulness is judged against those (not against the run's hits). Default: the
        run's own :attr:`~rankbridge.Run.answers` (an app run by :func:`rankbridge.apps.run_app` keeps each
        answer beside the retrievals made for it), if any.
    k:
        Score only the top ``k`` hits of each query (default: all the run has).
    reference_from:
        ``"qrels"`` (default) or ``"query"``: where reference context ids come from (see :func:`ragas_rows`).
    query_ids:
        Evaluate these queries (default: all golden queries). Pass ``ranking_eval.query_ids`` to
        :func:`join` with a ranking evaluation that covers the qrels' queries only.
    timeout:
        Seconds one metric may take on one row (RAGAS ``RunConfig.timeout``).
    max_retries, max_wait:
        Retries of a failed LLM call, and the longest wait between two (seconds).
    max_workers:
        Concurrent RAGAS jobs.
    budget:
        A :class:`Budget`, or an int: the most RAGAS prompts allowed. Rows past it are not scored.
    batch_size:
        RAGAS' batch size (default: no batching).
    progress:
        Show RAGAS' progress bar.

    Returns
    -------
    RagasEvaluation
        ``values["ragas.<metric>"]`` per sorted query id (NaN where not scored), ``failures`` with the
        reason per query, ``skipped`` metrics with how to enable them.

    Raises
    ------
    MissingExtraError
        ragas is not installed.
    InputError
        Bad arguments, an LLM metric asked for without ``llm=``, or invalid rows.

    Notes
    -----
    RAGAS context precision is not precision@k (see the module docstring and METRICS.md). Inside a running
    event loop (Jupyter, an async app) the evaluation runs on a worker thread; in async code prefer
    :func:`aevaluate_ragas`.
    """
    p = _prepare(
        run,
        golden,
        llm=llm,
        embeddings=embeddings,
        metrics=metrics,
        responses=responses,
        k=k,
        reference_from=reference_from,
        query_ids=query_ids,
        timeout=timeout,
        max_retries=max_retries,
        max_wait=max_wait,
        max_workers=max_workers,
        budget=budget,
    )
    ragas = _import_ragas()
    scores: dict[str, dict[str, float]] = {}
    errors: dict[str, dict[str, str]] = {}
    for job in p.jobs:
        recorder = _make_recorder(p.usage)
        kwargs = _kwargs(p, job, recorder, progress, batch_size)

        def call(kw: dict[str, Any] = kwargs) -> Any:
            with _quiet_ragas():
                return ragas.evaluate(**kw, allow_nest_asyncio=False)

        if _in_running_loop():
            with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
                result = pool.submit(call).result()
        else:
            result = call()
        _collect(job, result, recorder, scores, errors)
    return _finish(p, scores, errors)


async def aevaluate_ragas(
    run: Run,
    golden: GoldenSet,
    *,
    llm: Any = None,
    embeddings: Any = None,
    metrics: Sequence[str | Any] | None = None,
    responses: Mapping[str, str | Answer] | None = None,
    k: int | None = None,
    reference_from: ReferenceFrom = "qrels",
    query_ids: Sequence[str] | None = None,
    timeout: float = 120.0,
    max_retries: int = 3,
    max_wait: float = 10.0,
    max_workers: int = 8,
    budget: Budget | int | None = None,
    batch_size: int | None = None,
    progress: bool = False,
) -> RagasEvaluation:
    """Async :func:`evaluate_ragas` (awaits ``ragas.aevaluate`` on the running loop); same parameters."""
    p = _prepare(
        run,
        golden,
        llm=llm,
        embeddings=embeddings,
        metrics=metrics,
        responses=responses,
        k=k,
        reference_from=reference_from,
        query_ids=query_ids,
        timeout=timeout,
        max_retries=max_retries,
        max_wait=max_wait,
        max_workers=max_workers,
        budget=budget,
    )
    ragas = _import_ragas()
    scores: dict[str, dict[str, float]] = {}
    errors: dict[str, dict[str, str]] = {}
    for job in p.jobs:
        recorder = _make_recorder(p.usage)
        with _quiet_ragas():
            result = await ragas.aevaluate(**_kwargs(p, job, recorder, progress, batch_size))
        _collect(job, result, recorder, scores, errors)
    return _finish(p, scores, errors)


# -- joining ------------------------------------------------------------------------------------------
def join(ranking_eval: Evaluation, ragas_eval: Evaluation) -> RagasEvaluation:
    """Put RAGAS columns beside ranking metrics: one :class:`RagasEvaluation` over the same queries.

    Parameters
    ----------
    ranking_eval:
        From :func:`rankbridge.evaluate` (its measures, missing/failed queries and hit table are kept).
    ragas_eval:
        From :func:`evaluate_ragas`, over the same query ids.

    Raises
    ------
    InputError
        The two are over different queries (the message says which, and how to align them), or share a
        column name.

    Examples
    --------
    >>> import numpy as np, rankbridge as rb
    >>> ranking = rb.evaluate({"q1": {"d1": 1}, "q2": {"d2": 1}}, {"q1": {"d1": 1.0}}, ["ndcg@10"])
    >>> ragas_part = RagasEvaluation((), ("q1", "q2"), {"ragas.faithfulness": np.array([0.5, np.nan])},
    ...                              failures={"ragas.faithfulness": {"q2": "error: boom"}})
    >>> both = join(ranking, ragas_part)
    >>> both.mean, both.counts
    ({'ndcg@10': 0.5, 'ragas.faithfulness': 0.5}, {'ndcg@10': 2, 'ragas.faithfulness': 1})
    """
    if not isinstance(ranking_eval, Evaluation) or not isinstance(ragas_eval, Evaluation):
        raise InputError("join: expected two rankbridge Evaluation objects")
    a, b = tuple(ranking_eval.query_ids), tuple(ragas_eval.query_ids)
    if a != b:
        only_a = sorted(set(a) - set(b))
        only_b = sorted(set(b) - set(a))
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} only in the ranking evaluation (e.g. {only_a[0]!r})")
        if only_b:
            parts.append(f"{len(only_b)} only in the RAGAS evaluation (e.g. {only_b[0]!r})")
        detail = "; ".join(parts) or "the same ids in a different order"
        raise InputError(
            f"join: the evaluations are over different queries ({len(a)} vs {len(b)}): {detail}. "
            "Evaluate RAGAS with query_ids=ranking_eval.query_ids"
        )
    clash = sorted(set(ranking_eval.values) & set(ragas_eval.values))
    if clash:
        raise InputError(f"join: both evaluations have the column(s) {', '.join(clash)}")
    extra: dict[str, Any] = {
        "failures": {},
        "skipped": {},
        "context_source": {},
        "usage": {},
        "notes": (),
    }
    for ev in (ranking_eval, ragas_eval):
        if isinstance(ev, RagasEvaluation):
            extra["failures"].update(ev.failures)
            extra["skipped"].update(ev.skipped)
            extra["context_source"].update(ev.context_source)
            extra["usage"].update(ev.usage)
            extra["notes"] = extra["notes"] + ev.notes
    return RagasEvaluation(
        measures=ranking_eval.measures,
        query_ids=a,
        values={**ranking_eval.values, **ragas_eval.values},
        missing=ranking_eval.missing,
        failed=ranking_eval.failed,
        unjudged=ranking_eval.unjudged,
        no_relevant=ranking_eval.no_relevant,
        missing_policy=ranking_eval.missing_policy,
        run_name=ranking_eval.run_name,
        duplicates=ranking_eval.duplicates,
        table=ranking_eval.table,
        **extra,
    )
