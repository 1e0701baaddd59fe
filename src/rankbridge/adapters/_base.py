"""The base every adapter shares: error mapping at the boundary, k handling, result normalisation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rankbridge.errors import RankbridgeError, RetrievalError
from rankbridge.retriever import IdSpec, _normalize_spec, normalize_hits
from rankbridge.types import Hit

__all__ = ["DEFAULT_K", "AdapterBase", "Staged"]

#: The k used when neither the caller nor the wrapped object says how many results to return.
DEFAULT_K = 10


@dataclass(frozen=True)
class Staged:
    """What :meth:`AdapterBase._fetch` returns when one call produced more than one list.

    ``final`` is the list the application hands on (after a query engine's node postprocessors, a
    reranker, a compression step): it is what the run scores. ``stages`` maps a stage name (e.g.
    ``"retrieved"``: the retriever's own list before postprocessing) to its raw list; each is kept in
    :attr:`rankbridge.Run.stages` under that name.
    """

    final: Any
    stages: Mapping[str, Any] = field(default_factory=dict)


class AdapterBase:
    """Wraps one retriever-like object; subclasses implement :meth:`_fetch` (and :meth:`_afetch`).

    ``retrieve``/``aretrieve`` return hits; ``retrieve_with_notes``/``aretrieve_with_notes`` also return
    notes on anything that was changed or guessed (truncation to k, content-hash ids, collapsed chunks).
    Any exception from the framework is re-raised as :class:`~rankbridge.RetrievalError` (the original
    is its ``__cause__``).
    """

    framework = "callable"
    native_async = False
    #: The number of results the wrapped object returns as the app configured it (``similarity_top_k``,
    #: ``k``, ``search_kwargs["k"]``), or ``None`` when it has no such setting. Used when ``k=None``.
    configured_k: int | None = None

    def __init__(
        self,
        *,
        id_from: IdSpec | None = None,
        doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
        keep_text: bool = True,
        name: str | None = None,
    ) -> None:
        self.id_from = _normalize_spec(id_from)
        self.doc_map = doc_map
        self.keep_text = keep_text
        self.name = name or "retriever"

    def depth(self, k: int | None) -> int | None:
        """How many results one call asks for: ``k``, else the app's own setting (``None``: not known)."""
        return k if k is not None else self.configured_k

    # -- subclasses ---------------------------------------------------------------------------
    def _fetch(self, query: str, k: int | None) -> Any:
        """The raw results for ``query``: a list, or a :class:`Staged` when there are several lists.

        ``k=None`` means "as the application configured it": call the object unchanged.
        """
        raise NotImplementedError

    async def _afetch(self, query: str, k: int | None) -> Any:
        return await asyncio.to_thread(self._fetch, query, k)

    # -- the two halves the runner drives separately --------------------------------------------
    def _failed(self, exc: Exception) -> RetrievalError:
        return RetrievalError(f"{self.framework} retriever {self.name!r} raised {type(exc).__name__}: {exc}")

    def _call(self, query: str, k: int | None) -> Any:
        try:
            return self._fetch(query, k)
        except RankbridgeError:
            raise
        except Exception as exc:
            raise self._failed(exc) from exc

    async def _acall(self, query: str, k: int | None) -> Any:
        try:
            return await self._afetch(query, k)
        except RankbridgeError:
            raise
        except Exception as exc:
            raise self._failed(exc) from exc

    def _normalize(self, raw: Any, k: int | None) -> tuple[list[Hit], list[str]]:
        hits, notes, _ = self._normalize_staged(raw, k)
        return hits, notes

    def _normalize_staged(self, raw: Any, k: int | None) -> tuple[list[Hit], list[str], dict[str, list[Hit]]]:
        """Hits of the final list (at most ``k``), notes, and the hits of every other stage (uncut)."""
        stages: dict[str, list[Hit]] = {}
        if isinstance(raw, Staged):
            for name, items in raw.stages.items():
                stages[name] = self._hits(items, None)[0]
            raw = raw.final
        hits, notes = self._hits(raw, k)
        return hits, notes, stages

    def _hits(self, items: Any, k: int | None) -> tuple[list[Hit], list[str]]:
        limit = k if k is not None else 1 << 62
        return normalize_hits(items, k=limit, id_from=self.id_from, doc_map=self.doc_map, keep_text=self.keep_text)

    # -- the Retriever protocol -------------------------------------------------------------------
    def retrieve_with_notes(self, query: str, k: int | None) -> tuple[list[Hit], list[str]]:
        """The top ``k`` hits for ``query`` and notes on what was changed or guessed."""
        _check_k(k)
        return self._normalize(self._call(query, k), k)

    async def aretrieve_with_notes(self, query: str, k: int | None) -> tuple[list[Hit], list[str]]:
        """Async :meth:`retrieve_with_notes`."""
        _check_k(k)
        return self._normalize(await self._acall(query, k), k)

    def retrieve(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` hits for ``query`` in rank order."""
        return self.retrieve_with_notes(query, k)[0]

    async def aretrieve(self, query: str, k: int) -> list[Hit]:
        """Async :meth:`retrieve`."""
        return (await self.aretrieve_with_notes(query, k))[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, id_from={list(map(_label, self.id_from))!r})"


def _label(source: Any) -> str:
    return source if isinstance(source, str) else getattr(source, "__name__", repr(source))


def _check_k(k: int | None) -> None:
    if k is None:
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        from rankbridge.errors import InputError

        raise InputError(f"k must be an int >= 1, or None (the retriever's own setting). Got {k!r} instead.")
