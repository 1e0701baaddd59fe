"""ranx ``Qrels`` / ``Run`` objects to rankbridge's, and back.

:func:`qrels_from_ranx` and :func:`run_from_ranx` read anything with ``to_dict()`` (ranx objects) or a
plain ``{qid: {doc: value}}`` mapping, so they need no ranx; :func:`to_ranx` imports it
(``pip install ranx``).

A ranx run is scored: rankbridge ranks it as trec_eval does (score descending, then doc id descending).
A ranked rankbridge run goes to ranx with :meth:`~rankbridge.Run.to_scores`, whose scores keep its rank
order. ranx breaks score ties its own way, so a run with tied scores may rank differently in ranx.

Examples
--------
>>> class FakeRanxRun:  # what ranx.Run(...) gives: name and to_dict()
...     name = "bm25"
...     def to_dict(self): return {"q1": {"d1": 0.5, "d2": 0.9}}
>>> run = run_from_ranx(FakeRanxRun())
>>> run.name, run.ranking("q1")
('bm25', ['d2', 'd1'])
>>> qrels_from_ranx({"q1": {"d1": 2}}).to_dict()
{'q1': {'d1': 2}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rankbridge.errors import InputError, MissingExtraError
from rankbridge.io.tables import as_id, as_label
from rankbridge.types import Qrels, Run

__all__ = ["qrels_from_ranx", "run_from_ranx", "to_ranx"]


def _as_dict(obj: Any, what: str) -> Mapping[Any, Any]:
    if callable(getattr(obj, "to_dict", None)) and not isinstance(obj, Mapping):
        obj = obj.to_dict()
    if not isinstance(obj, Mapping):
        raise InputError(f"expected a ranx {what} (or a {{qid: {{doc: value}}}} mapping), found {type(obj).__name__}")
    return obj


def qrels_from_ranx(qrels: Any, *, name: str | None = None) -> Qrels:
    """A :class:`~rankbridge.Qrels` from a ``ranx.Qrels`` (or its ``to_dict()``)."""
    data: dict[str, dict[str, int]] = {}
    for qid, docs in _as_dict(qrels, "Qrels").items():
        where = f"qrels[{qid!r}]"
        if not isinstance(docs, Mapping):
            raise InputError(f"{where}: expected a mapping of doc id -> label, found {type(docs).__name__}")
        try:
            data[as_id(qid)] = {as_id(d): as_label(v) for d, v in docs.items()}
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
    label = name or getattr(qrels, "name", None) or "qrels"
    return Qrels._trusted(data, name=str(label))


def run_from_ranx(run: Any, *, name: str | None = None) -> Run:
    """A scored :class:`~rankbridge.Run` from a ``ranx.Run`` (or its ``to_dict()``); the name is kept."""
    label = name or getattr(run, "name", None) or "run"
    return Run.from_scores(_as_dict(run, "Run"), name=str(label))


def to_ranx(obj: Qrels | Run) -> Any:
    """A ``ranx.Qrels`` from :class:`~rankbridge.Qrels`, a ``ranx.Run`` from :class:`~rankbridge.Run`.

    Queries with no results (failed ones) or no judgments are left out: ranx has no place for them.
    """
    try:
        import ranx
    except ImportError:
        raise MissingExtraError("ranx", "ranx", "Converting to ranx objects") from None
    if isinstance(obj, Qrels):
        return ranx.Qrels({q: d for q, d in obj.to_dict().items() if d}, name=obj.name)
    if isinstance(obj, Run):
        scores = {q: s for q, s in obj.to_scores().items() if s}
        return ranx.Run(scores, name=obj.name)
    raise InputError(f"expected a rankbridge Qrels or Run, found {type(obj).__name__}")
