"""Reading back what a handler added by hand recorded: ``to_run``, ``summary``, ``as_capture``, ``clear``.

Shared by the LangChain handlers (:mod:`rankbridge.callbacks.langchain`) and the LlamaIndex ones
(:mod:`rankbridge.callbacks.llamaindex`, :mod:`rankbridge.callbacks.llamaindex_legacy`). Framework-free: it
imports no framework, and :class:`~rankbridge.callbacks.Capture` only when a reading is asked for. Nothing
here runs on the host's call path.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from rankbridge.callbacks._recorder import Recorder
from rankbridge.errors import InputError

if TYPE_CHECKING:
    from rankbridge.callbacks import Capture
    from rankbridge.retriever import IdSpec
    from rankbridge.types import GoldenSet, Query, Run

__all__ = ["RecorderRuns", "own_recorder"]


def own_recorder(
    recorder: Recorder | None,
    id_from: IdSpec | None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None,
    keep_text: bool,
) -> Recorder:
    """The recorder a handler writes to: ``recorder``, or a new one with the given doc-id settings.

    Examples
    --------
    >>> own_recorder(None, "ref_doc_id", None, True).id_from
    'ref_doc_id'
    >>> rec = Recorder()
    >>> own_recorder(rec, None, None, True) is rec
    True
    """
    if recorder is None:
        return Recorder(id_from=id_from, doc_map=doc_map, keep_text=keep_text)
    if id_from is not None or doc_map is not None or keep_text is not True:
        raise InputError(
            "id_from, doc_map and keep_text configure the handler's own Recorder: give them to the Recorder you "
            "pass, or pass no recorder"
        )
    return recorder


class RecorderRuns:
    """What a handler a user adds by hand reads back: ``to_run``, ``summary``, ``as_capture``, ``clear``.

    Every reading goes through a :class:`~rankbridge.callbacks.Capture` over the handler's recorder (attached
    to nothing), so the query matching, the error policy and the counts are those of ``capture()``. A class
    using it has a ``_recorder``, or overrides :meth:`_runs_recorder`, and names its framework in
    :meth:`_runs_framework` (the run's ``config["frameworks"]``).
    """

    def _runs_recorder(self) -> Recorder:
        return self._recorder  # type: ignore[attr-defined,no-any-return]

    def _runs_framework(self) -> str:
        raise NotImplementedError  # each handler names its framework

    def as_capture(
        self, golden: GoldenSet | Iterable[Query] | Mapping[str, str] | None = None, *, name: str = "callbacks"
    ) -> Capture:
        """A :class:`~rankbridge.callbacks.Capture` reading this handler's records, with ``capture()``'s matching.

        It attaches to nothing (its ``start()`` does nothing): the handler records only where the app puts it.
        Use it for what :meth:`to_run` and :meth:`summary` do not give: ``records``, ``queries``, ``unmatched``,
        ``judge``, ``write_trec``, ``write_jsonl``.
        """
        from rankbridge.callbacks import Capture, QueryMatcher
        from rankbridge.types import GoldenSet

        options: dict[str, Any] = {}
        if isinstance(golden, GoldenSet) and "golden" in inspect.signature(Capture).parameters:
            options["golden"] = golden  # its doc ids are checked as capture() checks them
        return Capture(self._runs_recorder(), QueryMatcher(golden), frameworks=(), name=name, **options)

    def to_run(
        self,
        golden: GoldenSet | Iterable[Query] | Mapping[str, str] | None = None,
        *,
        stage: Literal["final", "retrieved"] = "final",
        name: str | None = None,
        repeats: Literal["first", "last"] = "first",
        **options: Any,
    ) -> Run:
        """The retrievals recorded so far as a ranked :class:`~rankbridge.Run`, one entry per query id.

        Exactly :meth:`rankbridge.callbacks.Capture.to_run` over this handler's records: a retrieval is matched
        to a golden query by the id the app passed (``with rankbridge.callbacks.query_id(qid):`` around the
        call; LangChain ``config={"metadata": {"rankbridge_query_id": qid}}`` or a ``"rankbridge_query_id=qid"``
        tag; LlamaIndex ``instrument_tags({"rankbridge_query_id": qid})``), else by normalised text; an
        unmatched query keeps :func:`~rankbridge.callbacks.query_key` of its text.

        Parameters
        ----------
        golden:
            The golden set (a :class:`~rankbridge.GoldenSet`, a list of :class:`~rankbridge.Query`, or
            ``{query_id: text}``); ``None`` keeps the ids the app passed and names other queries by their text.
        stage:
            ``"final"`` (the list the app used, after node postprocessors and rerankers, or a compressor or
            reranker retriever) or ``"retrieved"`` (the retriever's own list, the inner one's for a wrapper).
        name:
            The run's name (default ``"callbacks"``).
        repeats:
            ``"first"`` or ``"last"``: which retrieval of a query asked more than once makes its entry.
        options:
            Further keywords of :meth:`rankbridge.callbacks.Capture.to_run`.

        Returns
        -------
        Run
            ``run.config["source"]`` is ``"callbacks"``.
        """
        run = self.as_capture(golden, name=name or "callbacks").to_run(stage=stage, repeats=repeats, **options)
        run.config.update({"source": "callbacks", "frameworks": [self._runs_framework()]})
        return run

    def summary(self, golden: GoldenSet | Iterable[Query] | Mapping[str, str] | None = None) -> dict[str, Any]:
        """:meth:`rankbridge.callbacks.Capture.summary` of this handler's records (matched, unmatched, missing,
        errors, dropped...)."""
        out = self.as_capture(golden).summary()
        out["frameworks"] = [self._runs_framework()]
        return out

    def clear(self) -> None:
        """Forget every record and reset the counters (before the next batch of questions, say)."""
        self._runs_recorder().clear()
