"""Live capture: record the retrievals a running LlamaIndex or LangChain app makes, as a :class:`~rankbridge.Run`.

``capture()`` attaches a handler to every installed framework (LlamaIndex instrumentation, LangChain
callbacks; LlamaIndex's legacy ``CallbackManager`` with ``frameworks=["llamaindex_legacy"]``), lets the
application run as usual, and detaches on exit::

    with rankbridge.callbacks.capture(golden=golden, id_from="ref_doc_id") as cap:
        query_engine.query("What causes scurvy?")          # LlamaIndex, nested in a query engine
        chain.invoke("what causes scurvy",                  # LangChain, nested in a chain
                     config={"metadata": {"rankbridge_query_id": "q1"}})
    rankbridge.evaluate(golden.qrels, cap.run, ["ndcg@10"])
    cap.summary()        # matched by id / by text, unmatched, dropped, sampled out, internal errors

Matching captured queries to the golden set
-------------------------------------------
1. By id, when the application passes one:

   * any framework: ``with rankbridge.callbacks.query_id("q1"): app(...)`` (a context variable; it
     follows ``await`` and tasks created inside the block, not threads started by hand);
   * LangChain: ``config={"metadata": {"rankbridge_query_id": "q1"}}`` or the tag
     ``"rankbridge_query_id=q1"``;
   * LlamaIndex: ``with instrument_tags({"rankbridge_query_id": "q1"}):`` (from
     ``llama_index_instrumentation.dispatcher``; LlamaIndex copies those tags onto every event).
     ``QueryBundle`` has no metadata field, so a query engine call cannot carry the id by itself.

2. Else by normalised text (:func:`normalize_query`: case, spacing, punctuation ignored).
3. Else the query is kept under :func:`query_key` of its text and listed in :attr:`Capture.unmatched`.

Records, lists and export
-------------------------
``cap.records`` are the raw :class:`CaptureRecord` objects (query, ids of the run, its parent and its
trace -- LangChain: with ``capture(trace=True)`` --, retriever class, ``retrieved`` and ``final`` hits,
latency, error, ``nested`` retrievals).
``cap.run`` is a ranked :class:`~rankbridge.Run` of the list the app used (``final`` when a reranker or
node postprocessor changed it, else ``retrieved``); ``cap.to_run(stage="retrieved")`` gives the
retriever's own lists. Export with ``cap.write_trec(path)`` / ``cap.write_jsonl(path)``, or keep it in
the history store: ``RunStore(path).save(rankbridge.evaluate(qrels, cap.run, metrics), run=cap.run)``.
No qrels? ``grades = cap.judge(llm)`` has an LLM grade the top results 0-3 (:mod:`rankbridge.judge`), then
``rankbridge.evaluate(grades.qrels, cap.run, metrics)``.

Doc ids and partial captures
----------------------------
With a :class:`~rankbridge.GoldenSet` that has a corpus or qrels, reading the run checks a sample of the
captured results' ids against them (:mod:`rankbridge.idmatch`). UUID chunk ids (LlamaIndex
``SentenceSplitter`` nodes, LangChain ``add_documents`` without ids) are resolved to the one source that
names known documents (``ref_doc_id``, ``metadata:KEY``) when ``id_from`` was not given
(``run.config["id_resolution"]``, ``cap.summary()["id_check"]``); otherwise, and whenever an explicit
``id_from`` / ``doc_map`` does not match, reading raises :class:`~rankbridge.errors.IdMismatchError`
(``cap.to_run(check_ids=False)`` returns the run as it is). The run's config carries ``"golden_size"``
and ``"golden_missing"``: :func:`rankbridge.evaluate` scores a capture run on the questions it saw, not
the missing ones as 0 (``missing="zero"`` does that). See :meth:`Capture.to_run`.

Safety inside someone else's app
--------------------------------
Handlers never raise into the host (their failures are counted in ``cap.summary()["internal_errors"]``),
never do I/O, hold a lock only to append a record, keep at most ``max_records`` records (the rest are
counted as dropped), sample with ``sample_rate``, and are not called at all while ``cap.enabled`` is
``False`` (LlamaIndex's are taken off the dispatcher; LangChain's is given to no new run). Results are
turned into hits (doc ids resolved with ``id_from``) only when :attr:`Capture.run` or
:attr:`Capture.records` is read. When a retrieval ends, records copy each result's own id, score, text
and metadata and let the framework's objects go (``retain="objects"``, or a callable ``id_from``, keeps
the objects until the run is read instead).

Examples
--------
The framework-free parts (the frameworks are exercised in ``tests/test_capture_*.py``):

>>> with capture(frameworks=(), golden={"q1": "What causes scurvy?"}) as cap:
...     pass
>>> cap.attached, len(cap.run), cap.summary()["missing"]
((), 0, ['q1'])
>>> normalize_query("What causes SCURVY?")
'what causes scurvy'
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from rankbridge.callbacks._recorder import (
    DEFAULT_MAX_TEXT_BYTES,
    QUERY_ID_KEY,
    CaptureRecord,
    QueryMatcher,
    Recorder,
    _resolve_items,
    current_query_id,
    normalize_query,
    query_id,
    query_key,
)
from rankbridge.errors import IdMismatchError, InputError, MissingExtraError
from rankbridge.retriever import IdSpec
from rankbridge.types import GoldenSet, Query, Run

if TYPE_CHECKING:
    from rankbridge.idmatch import IdReport
    from rankbridge.judge import Judgments

__all__ = [
    "QUERY_ID_KEY",
    "Capture",
    "CaptureRecord",
    "QueryMatcher",
    "Recorder",
    "capture",
    "current_query_id",
    "normalize_query",
    "query_id",
    "query_key",
]

_FRAMEWORKS: dict[str, tuple[str, str, str]] = {
    # name: (module to look for, pip package, rankbridge extra)
    "llamaindex": ("llama_index.core", "llama-index-core", "llamaindex"),
    "llamaindex_legacy": ("llama_index.core", "llama-index-core", "llamaindex"),
    "langchain": ("langchain_core", "langchain-core", "langchain"),
}

Stage = Literal["final", "retrieved"]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _has_instrumentation() -> bool:
    """Does the installed LlamaIndex have the instrumentation module (0.10.20 and later)?

    Looked up on disk: ``find_spec("llama_index.core.instrumentation")`` would import llama_index.core
    (about a second).
    """
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        return False
    return spec is not None and any(
        os.path.isdir(os.path.join(location, "instrumentation")) for location in (spec.submodule_search_locations or ())
    )


def _auto_frameworks() -> list[str]:
    chosen = []
    if _installed("llama_index.core"):
        chosen.append("llamaindex" if _has_instrumentation() else "llamaindex_legacy")
    if _installed("langchain_core"):
        chosen.append("langchain")
    return chosen


def _attach(framework: str, recorder: Recorder, trace: bool) -> Callable[[], None]:
    if framework == "llamaindex":
        from rankbridge.callbacks import llamaindex

        return llamaindex.attach(recorder)
    if framework == "llamaindex_legacy":
        from rankbridge.callbacks import llamaindex_legacy

        return llamaindex_legacy.attach(recorder)
    from rankbridge.callbacks import langchain

    return langchain.attach(recorder, trace=trace)


def _has_doc_ids(golden: GoldenSet) -> bool:
    """Does the golden set name documents (a corpus, or qrels with at least one judged doc)?"""
    return bool(golden.corpus) or any(bool(docs) for docs in golden.qrels.values())


def _report_dict(report: IdReport) -> dict[str, Any]:
    """The JSON-friendly part of an :class:`~rankbridge.idmatch.IdReport`, as run configs keep it."""
    return {
        "status": report.status,
        "current": report.current,
        "chosen": report.chosen,
        "shares": dict(report.shares),
        "results": report.results,
        "message": report.message(),
    }


def _mismatch_text(report: IdReport, id_from: Any, doc_map: Any) -> str:
    text = report.message()
    if report.status == "resolved" and report.chosen is not None:
        given = f"id_from={id_from!r}" if doc_map is None else "doc_map="
        text += (
            f" You passed {given} explicitly, so it is not switched: pass id_from={report.chosen!r} to capture() "
            "to score the documents."
        )
    text += " to_run(check_ids=False) returns the run as it is (this error's .run holds it too)."
    return "captured results: " + text


class Capture:
    """Records retrievals while attached; reads them back as a :class:`~rankbridge.Run`.

    Build it with :func:`capture`. Use it as a context manager, or call :meth:`start` and :meth:`stop`
    around a long-running app.

    Attributes
    ----------
    recorder:
        The :class:`Recorder` the handlers write to (counters: ``dropped``, ``sampled_out``,
        ``internal_errors``).
    matcher:
        The :class:`QueryMatcher` built from the golden set.
    attached:
        The frameworks the handlers are attached to right now.
    """

    def __init__(
        self,
        recorder: Recorder,
        matcher: QueryMatcher,
        *,
        frameworks: Sequence[str],
        name: str = "capture",
        trace: bool = False,
        golden: GoldenSet | None = None,
        check_ids: bool = True,
    ) -> None:
        self.recorder = recorder
        self.trace = trace
        self.matcher = matcher
        self.name = name
        #: the golden set whose corpus / qrels ids the results are checked against (None: nothing to check)
        self.golden = golden if golden is not None and _has_doc_ids(golden) else None
        self.check_ids = bool(check_ids)
        self._frameworks = tuple(frameworks)
        self._detach: list[tuple[str, Callable[[], None]]] = []

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> Capture:
        """Attach the handlers (idempotent)."""
        if self._detach:
            return self
        try:
            for fw in self._frameworks:
                self._detach.append((fw, _attach(fw, self.recorder, self.trace)))
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Detach every handler; the records stay readable."""
        while self._detach:
            _, detach = self._detach.pop()
            detach()

    def __enter__(self) -> Capture:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def attached(self) -> tuple[str, ...]:
        """The frameworks the handlers are attached to."""
        return tuple(fw for fw, _ in self._detach)

    @property
    def enabled(self) -> bool:
        """Set ``False`` to pause the capture (nothing is recorded; the frameworks do not even call the
        handlers), ``True`` to resume it. Retrievals running at the moment of a pause are not recorded."""
        return self.recorder.enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        self.recorder.enabled = bool(value)
        # LlamaIndex calls every handler on the dispatcher for every span and event: a paused capture
        # takes its handlers off (LangChain's slot already hands a paused handler to no new run)
        for _, detach in self._detach:
            set_active = getattr(detach, "set_active", None)
            if set_active is not None:
                set_active(self.recorder.enabled)

    # -- reading --------------------------------------------------------------------------------
    @property
    def records(self) -> list[CaptureRecord]:
        """The raw records (top-level retrievals; nested ones under ``record.nested``), in finish order."""
        return self.recorder.records

    def _assign(self) -> list[tuple[CaptureRecord, str, str]]:
        return [(r, *self.matcher.match(r.query, r.query_id)) for r in self.recorder.records]

    def _chosen(self, repeats: str) -> tuple[dict[str, CaptureRecord], set[str]]:
        chosen: dict[str, CaptureRecord] = {}
        for record, qid, _ in self._assign():
            if repeats == "last" or qid not in chosen:
                chosen[qid] = record
        return chosen, set(chosen)

    def to_run(
        self,
        *,
        stage: Stage = "final",
        name: str | None = None,
        repeats: Literal["first", "last"] = "first",
        check_ids: bool | None = None,
    ) -> Run:
        """The captured retrievals as a ranked :class:`~rankbridge.Run`, one entry per query id.

        Parameters
        ----------
        stage:
            ``"final"`` (default): the list the application used -- after a reranker or node
            postprocessor when there was one. ``"retrieved"``: what the retriever itself returned.
        name:
            The run's name (default: the capture's name).
        repeats:
            Which capture of a query asked more than once (the same text, or one query id over several
            retrievals, as when an agent searches again) makes its entry: ``"first"`` (default) or
            ``"last"``. Every retrieval stays in :attr:`records`; ``summary()["repeats"]`` counts them.
        check_ids:
            Check the results' doc ids against the golden set's corpus and qrels ids (default: the
            ``capture(check_ids=...)`` setting, ``True``). ``False`` returns the run under ``id_from`` as it
            is, with the check's verdict in ``run.config["id_check"]``.

        Raises
        ------
        IdMismatchError
            Most results name no document the golden set knows, and either no id source of the results
            does, two do with different ids, or ``id_from`` / ``doc_map`` was passed explicitly (an
            explicit choice is never switched away from: the message names the ``id_from=`` that matches).
            ``exc.run`` is the unresolved run, ``exc.report`` the :class:`~rankbridge.idmatch.IdReport`.

        Notes
        -----
        A retrieval that raised, or whose results had no doc id under ``id_from``, is an error of the
        run (it scores 0).

        **Doc ids.** With a :class:`~rankbridge.GoldenSet` that has a corpus or qrels, the ids of (at most
        :data:`rankbridge.idmatch.SAMPLE_HITS`) captured results are checked once per call, here, never
        inside the app (:func:`rankbridge.idmatch.check_results`). Results with UUID ids (LlamaIndex
        ``SentenceSplitter`` chunks, LangChain ``add_documents`` without ids) whose ``ref_doc_id`` or a
        ``metadata:KEY`` names the golden set's documents are, when ``id_from`` was not given, turned into
        those documents' ids (chunks of one document collapse to its first, as with that ``id_from``
        passed explicitly): ``run.config["id_from"]`` is the source used and
        ``run.config["id_resolution"]`` says what was done (``{"from", "to", "shares", "results",
        "auto": True, "message"}``). A few unknown ids (pooling, a larger corpus) are fine.

        **Partial captures.** ``run.config`` carries ``"source": "capture"``, ``"golden_size"`` (golden
        questions) and ``"golden_missing"`` (golden questions the capture never saw; with a golden set).
        :func:`rankbridge.evaluate` scores a capture run on the questions it saw, and reports how many
        were missing; ``missing="zero"`` scores the missing ones 0 instead.
        """
        if stage not in ("final", "retrieved"):
            raise InputError(f"stage must be 'final' or 'retrieved'. Got {stage!r} instead.")
        if repeats not in ("first", "last"):
            raise InputError(f"repeats must be 'first' or 'last'. Got {repeats!r} instead.")
        chosen, seen = self._chosen(repeats)
        config = {**self._config(stage), "repeats": repeats}
        golden_ids = self.matcher.golden_ids() if self.matcher.ids is not None else None
        if golden_ids is not None:
            config["golden_size"] = len(golden_ids)
            config["golden_missing"] = sum(1 for q in golden_ids if q not in seen)
        run = self._build(chosen, stage, name or self.name, config)
        report = self._id_report(chosen, stage, run)
        if report is None:
            return run
        if not (self.check_ids if check_ids is None else check_ids):
            run.config["id_check"] = _report_dict(report)
            return run
        if report.status in ("ok", "unchecked"):
            return run
        rec = self.recorder
        explicit = rec.id_from is not None or rec.doc_map is not None
        if report.status == "resolved" and report.chosen is not None and not explicit:
            to = report.chosen
            resolve = functools.partial(_resolve_items, id_from=to, doc_map=None, keep_text=rec.keep_text)
            config = {**config, "id_from": to}
            config["id_resolution"] = {
                "from": report.current,
                "to": to,
                "shares": dict(report.shares),
                "results": report.results,
                "auto": True,
                "message": report.message(),
            }
            return self._build(chosen, stage, name or self.name, config, resolve)
        raise IdMismatchError(
            _mismatch_text(report, rec.id_from, rec.doc_map),
            suggestion=report.chosen if report.status == "resolved" else None,
            report=report,
            run=run,
        )

    def _build(
        self,
        chosen: Mapping[str, CaptureRecord],
        stage: str,
        name: str,
        config: dict[str, Any],
        resolve: Callable[[list[Any]], Any] | None = None,
    ) -> Run:
        run = Run(name=name, config=config)
        for qid, record in chosen.items():
            if record.error is not None:
                run.add_error(qid, f"retrieval failed: {record.error}", latency=record.latency)
                continue
            if resolve is None:
                hits = record.retrieved if stage == "retrieved" else record.hits
                problem = record.resolve_error
            else:
                hits, problem = record.hits_under(resolve, stage=stage)
            if problem is not None:
                run.add_error(qid, f"captured results have no usable doc id: {problem}", latency=record.latency)
                continue
            run.add(qid, hits, latency=record.latency)
        return run

    def _id_report(self, chosen: Mapping[str, CaptureRecord], stage: str, run: Run | None) -> IdReport | None:
        """Check (a sample of) the results' ids against the golden set; ``None`` when there is nothing to check."""
        golden = self.golden
        if golden is None:
            return None
        from rankbridge import idmatch

        rec = self.recorder
        if rec.doc_map is not None:
            # the ids in use are doc_map's: judge the run's own ids (alternatives from the hits' metadata)
            if run is None:
                run = self._build(chosen, stage, self.name, self._config(stage))
            return idmatch.check_run(run, golden)
        sample: list[Any] = []
        for record in chosen.values():
            if record.error is not None:
                continue
            which = "final" if stage == "final" and record.final is not None else "retrieved"
            sample.extend(record.results(which) or ())
            if len(sample) >= idmatch.SAMPLE_HITS:
                del sample[idmatch.SAMPLE_HITS :]
                break
        return idmatch.check_results(sample, golden, id_from=rec.id_from)

    @property
    def run(self) -> Run:
        """:meth:`to_run` with the defaults: the final lists, named after the capture."""
        return self.to_run()

    @property
    def queries(self) -> dict[str, str]:
        """``{query_id: captured query text}`` of the run's queries (first capture of each id)."""
        out: dict[str, str] = {}
        for record, qid, _ in self._assign():
            out.setdefault(qid, record.query)
        return out

    @property
    def unmatched(self) -> list[str]:
        """Query texts that matched no golden-set query (by id or text), in capture order, once each."""
        seen: dict[str, None] = {}
        for record, _, how in self._assign():
            if how in ("unmatched", "unknown_id"):
                seen.setdefault(record.query, None)
        return list(seen)

    def summary(self) -> dict[str, Any]:
        """Counts for a report: what was captured, how it matched, and what was lost.

        Keys: ``records``, ``queries``, ``matched_by_id``, ``matched_by_text``, ``unmatched``,
        ``unknown_ids`` (ids the app passed that the golden set lacks), ``missing`` (golden ids never
        seen), ``repeats``, ``errors``, ``resolve_errors``, ``reranked`` (records whose final list
        differs), ``dropped``, ``sampled_out``, ``texts_dropped`` (result texts not kept: over
        ``max_text_bytes``), ``cancelled`` (retrievals whose asyncio task was cancelled before they ended,
        recorded with that error), ``results_truncated`` (result lists longer than 10,000 of which the
        first 10,000 were kept), ``internal_errors``, ``last_internal_error``,
        ``frameworks``, ``id_check`` (``None`` without golden doc ids to check against, else
        ``{"status", "current", "chosen", "action", "message"}`` of the doc-id check that :meth:`to_run`
        makes on the final lists: ``action`` is ``"none"``, ``"resolved"`` (the run uses ``chosen``) or
        ``"raise"`` (reading the run raises :class:`~rankbridge.errors.IdMismatchError`)).
        """
        assigned = self._assign()
        seen: set[str] = set()
        counts = {"id": 0, "text": 0, "unmatched": 0, "unknown_id": 0}
        repeats = errors = resolve_errors = reranked = 0
        unknown: dict[str, None] = {}
        for record, qid, how in assigned:
            if qid in seen:
                repeats += 1
                continue
            seen.add(qid)
            counts[how] += 1
            if how == "unknown_id":
                unknown.setdefault(qid, None)
            if record.error is not None:
                errors += 1
            elif record.resolve_error is not None:
                resolve_errors += 1
            elif record.final is not None:
                reranked += 1
        rec = self.recorder
        return {
            "records": len(assigned),
            "queries": len(seen),
            "matched_by_id": counts["id"],
            "matched_by_text": counts["text"],
            "unmatched": counts["unmatched"],
            "unknown_ids": list(unknown),
            "missing": [q for q in self.matcher.golden_ids() if q not in seen],
            "repeats": repeats,
            "errors": errors,
            "resolve_errors": resolve_errors,
            "reranked": reranked,
            "dropped": rec.dropped,
            "sampled_out": rec.sampled_out,
            "texts_dropped": rec.texts_dropped,
            "cancelled": rec.cancelled,
            "results_truncated": rec.results_truncated,
            "internal_errors": rec.internal_errors,
            "last_internal_error": rec.last_internal_error,
            "frameworks": list(self._frameworks),
            "id_check": self._id_summary(),
        }

    def _id_summary(self) -> dict[str, Any] | None:
        chosen, _ = self._chosen("first")
        report = self._id_report(chosen, "final", None)
        if report is None:
            return None
        out = _report_dict(report)
        explicit = self.recorder.id_from is not None or self.recorder.doc_map is not None
        if not self.check_ids or report.status in ("ok", "unchecked"):
            out["action"] = "none"
        elif report.status == "resolved" and not explicit:
            out["action"] = "resolved"
            out["message"] += f" The run uses id_from={report.chosen!r} (run.config['id_resolution'])."
        else:
            out["action"] = "raise"
            out["message"] = _mismatch_text(report, self.recorder.id_from, self.recorder.doc_map)
        return out

    def _config(self, stage: str) -> dict[str, Any]:
        rec = self.recorder
        return {
            "source": "capture",
            "stage": stage,
            "frameworks": list(self._frameworks),
            "sample_rate": rec.sample_rate,
            "max_records": rec.max_records,
            "dropped": rec.dropped,
            "sampled_out": rec.sampled_out,
            "max_text_bytes": rec.max_text_bytes,
            "texts_dropped": rec.texts_dropped,
            "id_from": rec.id_from if isinstance(rec.id_from, (str, type(None))) else repr(rec.id_from),
        }

    # -- judging without qrels -------------------------------------------------------------------
    def judge(
        self,
        llm: Any,
        *,
        k: int = 10,
        documents: Mapping[str, Any] | None = None,
        stage: Stage = "final",
        cache: str | os.PathLike[str] | None = None,
        model_id: str | None = None,
        **policy: Any,
    ) -> Judgments:
        """Grade the captured results 0-3 with an LLM judge, for an app that has no qrels.

        The top ``k`` of every captured query (:meth:`to_run` with ``stage``) is judged against the query
        text the retriever received (:attr:`queries`), using each result's own text (kept unless
        ``capture(keep_text=False)``) or ``documents`` (``{doc_id: text}``) when given. It is
        :func:`rankbridge.judge.judge_runs` on the captured run: same prompt, cache, budget and report.
        Evaluate with the grades as qrels: ``rankbridge.evaluate(result.qrels, cap.run, metrics)``; they
        are LLM labels, so say so wherever the figures go (the qrels are named ``llm-judge:<model>:...``).

        Parameters
        ----------
        llm:
            A LangChain chat model or LLM, a LlamaIndex LLM, or a callable ``prompt -> reply``
            (see :func:`rankbridge.judge.as_llm`).
        k:
            Judge the top ``k`` of each query.
        documents:
            Full document texts, used instead of the captured (chunk) texts.
        stage:
            ``"final"`` (the list the app used) or ``"retrieved"``.
        cache:
            A SQLite file of earlier grades (same query, text, model and prompt are not asked again).
        model_id:
            The model's id for the cache and the report (read from the model when omitted).
        policy:
            :class:`rankbridge.judge.CallPolicy` fields: ``concurrency``, ``max_calls``, ``max_tokens``,
            ``timeout``...

        Examples
        --------
        >>> cap = capture(frameworks=())
        >>> rec = CaptureRecord(framework="test", query="what is tea?", run_id="r1", retriever="Static")
        >>> rec.set_items([{"id": "d1", "text": "Tea is a drink."}, {"id": "d2", "text": "Bread."}])
        >>> _ = cap.recorder.add(rec)
        >>> def llm(prompt):  # a stand-in LLM: 2 for the tea passage, 0 otherwise
        ...     return '{"reason": "scripted", "grade": %d}' % (2 if "Tea is a drink" in prompt else 0)
        >>> result = cap.judge(llm, model_id="scripted")
        >>> result.qrels.to_dict()
        {'q:d2a2f754e671': {'d1': 2, 'd2': 0}}
        """
        from rankbridge.judge import judge_runs

        run = self.to_run(stage=stage)
        return judge_runs(run, self.queries, documents, llm, k=k, cache=cache, model_id=model_id, **policy)

    # -- export ---------------------------------------------------------------------------------
    def write_trec(self, path: str | os.PathLike[str], *, stage: Stage = "final", tag: str | None = None) -> None:
        """Write the run as a TREC run file (rank order kept; see :func:`rankbridge.io.write_run`)."""
        from rankbridge.io.trec import write_run

        write_run(self.to_run(stage=stage), path, tag=tag)

    def write_jsonl(self, path: str | os.PathLike[str], *, stage: Stage = "final") -> None:
        """Write the run as JSON Lines with texts, latencies and errors (:func:`rankbridge.io.write_run_jsonl`)."""
        from rankbridge.io.jsonl import write_run_jsonl

        write_run_jsonl(self.to_run(stage=stage), path)

    def clear(self) -> None:
        """Forget every record and reset the counters (the handlers stay attached)."""
        self.recorder.clear()

    def __repr__(self) -> str:
        rec = self.recorder
        return (
            f"Capture(name={self.name!r}, attached={self.attached}, records={len(rec.records)}, "
            f"dropped={rec.dropped}, internal_errors={rec.internal_errors})"
        )


def capture(
    golden: GoldenSet | Iterable[Query] | Mapping[str, str] | None = None,
    *,
    id_from: IdSpec | None = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    sample_rate: float = 1.0,
    max_records: int = 10_000,
    keep_text: bool = True,
    frameworks: str | Sequence[str] = "auto",
    name: str = "capture",
    seed: int | None = None,
    trace: bool = False,
    retain: Literal["light", "objects"] = "light",
    check_ids: bool = True,
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
) -> Capture:
    """Record the retrievals of a running LlamaIndex / LangChain app; use as ``with capture() as cap:``.

    Parameters
    ----------
    golden:
        Golden-set queries to match captured queries to (a :class:`~rankbridge.GoldenSet`, a list of
        :class:`~rankbridge.Query`, or ``{query_id: text}``); ``None`` keeps the ids the app passes and
        names other queries by :func:`query_key` of their text.
    id_from:
        Where a result's doc id comes from: ``"id"`` (default: LlamaIndex ``node_id``, LangChain
        ``Document.id``), ``"ref_doc_id"``, ``"metadata:KEY"``, ``"content_hash"``, a callable, or a list
        tried in order (see :mod:`rankbridge.retriever`).
    doc_map:
        Chunk id -> document id, for qrels that judge whole documents.
    sample_rate:
        Fraction of top-level retrievals to record, in (0, 1].
    max_records:
        Keep at most this many records; later ones are counted in ``summary()["dropped"]``.
    keep_text:
        Keep result texts in the hits (RAGAS needs them).
    frameworks:
        ``"auto"`` (every installed one of ``"llamaindex"``, ``"langchain"``), or the names to attach to;
        naming a framework that is not installed raises :class:`~rankbridge.MissingExtraError`.
        ``"llamaindex"`` uses LlamaIndex instrumentation (every retriever of the process);
        ``"llamaindex_legacy"`` adds a handler to ``Settings.callback_manager`` instead
        (:mod:`rankbridge.callbacks.llamaindex_legacy`: for LlamaIndex releases before the
        instrumentation module, which ``"auto"`` then picks; it sees only components that share that
        manager, so start the capture before the app builds its retrievers). Not both at once: each
        retrieval would be recorded twice.
    name:
        The name of the captured run.
    seed:
        Seed for the sampling decisions.
    trace:
        LangChain: also follow chain, tool and agent runs so that each record has the id of its
        outermost run (``trace_id``). By default (``False``) the handler rides only on retriever runs
        (and runs inside them): ``parent_id`` is still recorded (the run that called the retriever, the
        same id LangSmith shows), ``trace_id`` is ``None``, and a chain pays far less (LangChain charges
        every handler on every run it is attached to: see docs/benchmarks.md). LlamaIndex always tracks
        spans (they also give the final list, nesting and errors) and always records ``trace_id``.
    retain:
        ``"light"`` (default): when a retrieval ends, copy each result's id, score, text and metadata and
        let the framework's objects go (less garbage-collector work inside the app). ``"objects"``: keep
        the result objects until the run is read. A callable ``id_from`` implies ``"objects"``.
    check_ids:
        With a :class:`~rankbridge.GoldenSet` that has a corpus or qrels: check, whenever the run is read,
        that the results' doc ids name documents the golden set knows, resolve UUID chunk ids to
        ``ref_doc_id`` / ``metadata:KEY`` when ``id_from`` was not given and exactly one source matches,
        and raise :class:`~rankbridge.errors.IdMismatchError` otherwise (see :meth:`Capture.to_run`).
        ``False``: return the runs as they are (the verdict goes in ``run.config["id_check"]``). Such a
        golden set also makes records copy each result's ``ref_doc_id`` (read from the node's
        relationships on the fast path; its cost is in docs/benchmarks.md), so that it can be offered; a
        list of queries or ``{id: text}`` has no doc ids and changes nothing.
    max_text_bytes:
        Budget for the result texts the records keep, over the whole capture (default 256 MiB), counted as
        ``len(text)`` (characters stand in for bytes: exact for ASCII text). Texts beyond it are not kept
        (their hits keep id and score, ``text`` is ``None``) and are counted in ``summary()["texts_dropped"]``
        and ``run.config["texts_dropped"]``. ``0`` keeps no texts. See docs/capture.md.

    Partial captures: questions of ``golden`` the app never asked are not scored as 0 by
    :func:`rankbridge.evaluate` (it scores a capture run on the questions seen and reports how many were
    missing; ``missing="zero"`` counts them as 0): ``run.config["golden_missing"]`` and
    ``["golden_size"]`` carry the counts.

    Returns
    -------
    Capture
        Not attached yet: ``with`` (or :meth:`Capture.start`) attaches it.

    Examples
    --------
    >>> cap = capture(frameworks=(), sample_rate=0.5, max_records=100)
    >>> cap.recorder.sample_rate, cap.recorder.max_records
    (0.5, 100)
    >>> capture(frameworks=["tensorflow"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.InputError: frameworks must be 'auto' or a list of ... Got 'tensorflow' instead.
    """
    if isinstance(frameworks, str):
        if frameworks != "auto":
            frameworks = [frameworks]
        else:
            frameworks = _auto_frameworks()
    chosen: list[str] = []
    for fw in frameworks:
        if fw not in _FRAMEWORKS:
            raise InputError(
                "frameworks must be 'auto' or a list of 'llamaindex', 'llamaindex_legacy', 'langchain'. "
                f"Got {fw!r} instead."
            )
        module, package, extra = _FRAMEWORKS[fw]
        if not _installed(module):
            raise MissingExtraError(package, extra, f"capture(frameworks=[{fw!r}])")
        if fw not in chosen:
            chosen.append(fw)
    if "llamaindex" in chosen and "llamaindex_legacy" in chosen:
        raise InputError(
            "frameworks: 'llamaindex' and 'llamaindex_legacy' both record every LlamaIndex retrieval (each "
            "would be recorded twice); choose one."
        )
    recorder = Recorder(
        max_records=max_records,
        sample_rate=sample_rate,
        id_from=id_from,
        doc_map=doc_map,
        keep_text=keep_text,
        seed=seed,
        retain=retain,
        max_text_bytes=max_text_bytes,
        # decided here, once: only a golden set with doc ids makes the check (and the ref_doc_id copy) worth it
        keep_ref=isinstance(golden, GoldenSet) and _has_doc_ids(golden),
    )
    return Capture(
        recorder,
        QueryMatcher(golden),
        frameworks=chosen,
        name=name,
        trace=trace,
        golden=golden if isinstance(golden, GoldenSet) else None,
        check_ids=check_ids,
    )
