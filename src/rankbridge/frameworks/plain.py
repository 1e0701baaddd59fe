"""Adapter for a plain function: ``f(query, k) -> results`` (sync or async).

A function is the third kind of object :func:`rankbridge.frameworks.adapt` wraps, so its adapter sits
beside the LlamaIndex and LangChain ones and shares their base (:class:`~rankbridge.frameworks.base.AdapterBase`:
error mapping, k handling, normalisation); it imports no framework. (An object that already has
``retrieve`` / ``aretrieve`` needs no adapter: :mod:`rankbridge.retriever` is the protocol it implements.)

Examples
--------
>>> from rankbridge.frameworks import CallableRetriever
>>> def search(query, k):
...     return [("d1", 0.9), ("d2", 0.5), ("d3", 0.1)][:k]
>>> r = CallableRetriever(search)
>>> [(h.doc_id, h.score) for h in r.retrieve("anything", k=2)]
[('d1', 0.9), ('d2', 0.5)]
>>> async def asearch(query):           # no k parameter: the list is cut at k
...     return ["a", "b", "c"]
>>> import asyncio
>>> [h.doc_id for h in asyncio.run(CallableRetriever(asearch).aretrieve("q", k=2))]
['a', 'b']
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from rankbridge.errors import InputError
from rankbridge.frameworks.base import DEFAULT_K, AdapterBase
from rankbridge.retriever import IdSpec

__all__ = ["CallableRetriever"]


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def _k_style(fn: Callable[..., Any]) -> str:
    """How ``fn`` takes k: ``"positional"`` (f(query, k)), ``"keyword"`` (f(query, *, k)) or ``"none"``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "positional"
    positional = 0
    for p in sig.parameters.values():
        if p.name == "k" and p.kind is p.KEYWORD_ONLY:
            return "keyword"
        if p.kind is p.VAR_POSITIONAL:
            return "positional"
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            positional += 1
    return "positional" if positional >= 2 else "none"


def run_coroutine_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion from sync code, even when an event loop is running in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


class CallableRetriever(AdapterBase):
    """A function as a retriever: ``f(query, k)`` or ``f(query)``, sync or ``async def``.

    The function may return :class:`~rankbridge.Hit` objects, doc-id strings, ``(doc_id, score)``
    pairs, dicts with a ``doc_id``/``id`` key, or LlamaIndex / LangChain result objects.

    Parameters
    ----------
    fn:
        The function. Called with ``(query, k)`` when it takes two positional parameters or ``*args``,
        with ``(query, k=k)`` when ``k`` is keyword-only, otherwise with ``(query)`` (its list is then cut
        at ``k``).
    id_from:
        Where each result's doc id comes from (see :mod:`rankbridge.retriever`). Default ``"id"``.
    doc_map:
        Chunk id -> document id, for qrels that judge documents (first occurrence wins).
    keep_text:
        Keep hit texts (RAGAS needs them).
    name:
        The run name; defaults to the function's name.

    Notes
    -----
    A function has no k setting rankbridge can read, so :attr:`configured_k` is ``None``. With
    ``k=None`` ("as the app configured it") a function that takes k is called with ``DEFAULT_K`` (10)
    and its list is kept as returned; a function without a k parameter is called with the query alone
    and its list is not cut. An explicit ``k`` is passed on (and a function without k has its list cut).
    """

    framework = "callable"

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        id_from: IdSpec | None = None,
        doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
        keep_text: bool = True,
        name: str | None = None,
    ) -> None:
        if not callable(fn):
            raise InputError(f"CallableRetriever: expected a function f(query, k), got {type(fn).__name__}")
        super().__init__(
            id_from=id_from, doc_map=doc_map, keep_text=keep_text, name=name or getattr(fn, "__name__", None)
        )
        self.fn = fn
        self.native_async = _is_async(fn)
        self._k_style = _k_style(fn)

    def depth(self, k: int | None) -> int | None:
        """``k``, else ``DEFAULT_K`` for a function that takes k (``None`` for one that does not)."""
        if k is not None:
            return k
        return None if self._k_style not in ("positional", "keyword") else DEFAULT_K

    def _invoke(self, query: str, k: int | None) -> Any:
        if k is None:
            k = DEFAULT_K  # only reaches a function that takes k; the list is not cut (k=None downstream)
        if self._k_style == "positional":
            return self.fn(query, k)
        return self.fn(query, k=k) if self._k_style == "keyword" else self.fn(query)

    def _fetch(self, query: str, k: int | None) -> Any:
        out = self._invoke(query, k)
        if type(out) is not list and inspect.isawaitable(out):  # a list, the common result, is no awaitable
            out = run_coroutine_sync(_await(out))
        return out

    async def _afetch(self, query: str, k: int | None) -> Any:
        if not self.native_async:
            return await asyncio.to_thread(self._fetch, query, k)
        out = self._invoke(query, k)
        return await out if inspect.isawaitable(out) else out


async def _await(awaitable: Any) -> Any:
    return await awaitable
