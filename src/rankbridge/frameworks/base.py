"""What every framework's room shares, framework-free.

* :class:`Framework` -- how a framework's objects are recognised (the modules and names of their classes)
  and which package provides it; each ``frameworks/<name>/__init__.py`` declares one;
* :class:`AdapterBase` (with :class:`Staged` and :data:`DEFAULT_K`) -- the base every retriever adapter
  shares: error mapping at the boundary, k handling, result normalisation; :class:`CopiesByK`, the
  framework adapters' copies of the wrapped retriever set up for each k;
* :class:`LLMReply` and the model-id helpers the LLM wrappers share (:data:`OUTPUT_PARAMS`,
  :func:`output_params`, :func:`format_model_id`).

The adapter base lives here, next to the adapters that extend it, rather than in :mod:`rankbridge.retriever`:
``retriever.py`` is the protocol any object may implement (and the hit normalisation every stage uses);
the base is how *rankbridge* wraps a foreign object, which is framework work.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankbridge.errors import InputError, RankbridgeError, RetrievalError
from rankbridge.retriever import IdSpec, _normalize, _normalize_spec
from rankbridge.types import Hit

__all__ = [
    "DEFAULT_K",
    "NAME_FIELDS",
    "OUTPUT_PARAMS",
    "AdapterBase",
    "CopiesByK",
    "Framework",
    "LLMReply",
    "Normalized",
    "Staged",
    "as_int",
    "format_model_id",
    "ignored_k",
    "output_params",
    "safe_attr",
    "safe_call",
]

#: What :meth:`AdapterBase.normalize` returns: the final hits (at most k), notes, and every other stage's hits
#: (sequences of Hits, kept compact where they can be: a Run stores them without a Hit object per hit).
Normalized = tuple[Sequence[Hit], list[str], dict[str, Sequence[Hit]]]


@dataclass(frozen=True)
class Framework:
    """How rankbridge recognises one framework's objects without importing it, and where it comes from.

    Objects are recognised by the classes in their MRO: their ``__module__`` prefixes and names. Reading
    ``type(obj).__mro__`` costs nothing and never imports the framework (``isinstance`` against the
    framework's classes would need it imported first, about a second for LlamaIndex).

    Attributes
    ----------
    name, label:
        The registry key (``"llamaindex"``) and the name shown to users (``"LlamaIndex"``).
    modules:
        Module prefixes of the framework's classes: an object with one in its MRO is adapted by its adapter.
    core, package, extra:
        The module that must be importable, its pip package, and rankbridge's extra that installs it.
    llm_module, llm_classes:
        An object whose MRO has a class of one of these names, from a module under ``llm_module``, is an LLM.
    app_modules, app_kinds:
        Modules of the framework's ecosystem (a class from one makes an object "a framework object"), and
        ``(module prefixes, class name, kind)`` triples that say what an object is to :mod:`rankbridge.apps`.
    """

    name: str
    label: str
    modules: tuple[str, ...]
    core: str
    package: str
    extra: str
    llm_module: str
    llm_classes: frozenset[str]
    app_modules: tuple[str, ...]
    app_kinds: tuple[tuple[tuple[str, ...], str, str], ...]


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


class CopiesByK:
    """The wrapped retriever set up for each ``k``: made once per k, then reused, thread-safe.

    ``get(k, make)`` returns the retriever for ``k``, calling ``make(k)`` the first time only (under a lock):
    a copy with that k, or the retriever itself when it already returns k. A k already made takes no lock
    (the runner asks once per query, from many threads). ``make`` is passed per call, not kept, so that an
    adapter holding this cache and a bound method of its own is no reference cycle.

    Examples
    --------
    >>> copies = CopiesByK()
    >>> copies.get(5, lambda k: f"retriever with k={k}"), copies.get(5, lambda k: "not called again")
    ('retriever with k=5', 'retriever with k=5')
    """

    __slots__ = ("_by_k", "_lock")

    def __init__(self) -> None:
        self._by_k: dict[int, Any] = {}
        self._lock = threading.Lock()

    def get(self, k: int, make: Callable[[int], Any]) -> Any:
        r = self._by_k.get(k)
        if r is not None:
            return r
        with self._lock:
            r = self._by_k.get(k)
            if r is None:
                r = self._by_k[k] = make(k)
            return r


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

    def k_cap(self, k: int) -> str | None:
        """Why every list may be shorter than an explicit ``k``: the retriever's own top-k setting, which ``k``
        does not reach; ``None`` when ``k`` was set on that setting (the store then holds fewer matches)."""
        return ignored_k(k)

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

    def fetch(self, query: str, k: int | None) -> Any:
        """The wrapped object's raw results for ``query`` (a list, or a :class:`Staged`), not yet hits.

        The first half of :meth:`retrieve_with_notes`; the runner times it apart from :meth:`normalize`
        (the retriever's latency is this call only). A framework's exception becomes a
        :class:`~rankbridge.RetrievalError` (the original is its ``__cause__``). ``k`` is not checked here.
        """
        try:
            return self._fetch(query, k)
        except RankbridgeError:
            raise
        except Exception as exc:
            raise self._failed(exc) from exc

    async def afetch(self, query: str, k: int | None) -> Any:
        """Async :meth:`fetch`."""
        try:
            return await self._afetch(query, k)
        except RankbridgeError:
            raise
        except Exception as exc:
            raise self._failed(exc) from exc

    def normalize(self, raw: Any, k: int | None) -> Normalized:
        """The second half: hits of the final list (at most ``k``), notes, and the hits of every other stage
        (uncut), from what :meth:`fetch` returned."""
        stages: dict[str, Sequence[Hit]] = {}
        if isinstance(raw, Staged):
            for name, items in raw.stages.items():
                stages[name] = self._hits(items, None)[0]
            raw = raw.final
        hits, notes = self._hits(raw, k)
        return hits, notes, stages

    def _hits(self, items: Any, k: int | None) -> tuple[Sequence[Hit], list[str]]:
        limit = k if k is not None else 1 << 62
        return _normalize(items, k=limit, id_from=self.id_from, doc_map=self.doc_map, keep_text=self.keep_text)

    # -- the Retriever protocol -------------------------------------------------------------------
    def retrieve_with_notes(self, query: str, k: int | None) -> tuple[list[Hit], list[str]]:
        """The top ``k`` hits for ``query`` and notes on what was changed or guessed."""
        _check_k(k)
        hits, notes, _ = self.normalize(self.fetch(query, k), k)
        return list(hits), notes

    async def aretrieve_with_notes(self, query: str, k: int | None) -> tuple[list[Hit], list[str]]:
        """Async :meth:`retrieve_with_notes`."""
        _check_k(k)
        hits, notes, _ = self.normalize(await self.afetch(query, k), k)
        return list(hits), notes

    def retrieve(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` hits for ``query`` in rank order."""
        return self.retrieve_with_notes(query, k)[0]

    async def aretrieve(self, query: str, k: int) -> list[Hit]:
        """Async :meth:`retrieve`."""
        return (await self.aretrieve_with_notes(query, k))[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, id_from={list(map(_label, self.id_from))!r})"


def ignored_k(k: int) -> str:
    """The likely cause of lists all shorter than ``k`` from a retriever that was passed ``k`` itself."""
    return (
        f"the retriever returns its own number of results whatever k it is passed (a function f(query, k) that "
        f"ignores k, a store's own top-k: similarity_top_k, search_kwargs={{'k': ...}}); have it return at least {k}"
    )


def _label(source: Any) -> str:
    return source if isinstance(source, str) else getattr(source, "__name__", repr(source))


def _check_k(k: int | None) -> None:
    if k is None:
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError(f"k must be an int >= 1, or None (the retriever's own setting). Got {k!r} instead.")


# -- what the LLM wrappers share ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LLMReply:
    """What one LLM call returned.

    ``input_tokens`` / ``output_tokens`` are the framework's usage when it reports one, else None.
    """

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


def as_int(value: Any) -> int | None:
    """``value`` when it is an int (not a bool), else None: token counts as frameworks report them."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


#: Parameters that change what a model replies, read from a framework model's fields and its
#: ``_identifying_params`` / ``_get_ls_params()`` (LangChain) into its derived model id. Credentials,
#: endpoints, timeouts and retry settings are never read.
OUTPUT_PARAMS: tuple[str, ...] = (
    "temperature", "top_p", "top_k", "min_p", "typical_p", "tfs_z", "mirostat", "mirostat_eta",
    "mirostat_tau", "max_tokens", "max_completion_tokens", "max_output_tokens", "max_new_tokens",
    "num_predict", "num_ctx", "n", "seed", "stop", "stop_sequences", "presence_penalty",
    "frequency_penalty", "repetition_penalty", "repeat_penalty", "repeat_last_n", "logit_bias",
    "reasoning_effort", "reasoning", "thinking", "thinking_budget", "response_format", "format",
    "model_version", "system_prompt", "model_kwargs", "additional_kwargs",
)  # fmt: skip
#: Fields that name the model, tried in order when the framework's own name for it is missing.
NAME_FIELDS = ("model_name", "model", "model_id", "deployment_name", "azure_deployment", "repo_id", "endpoint_name")
#: LangSmith parameter names (``_get_ls_params()``) of output parameters.
_LS_PARAMS = {"ls_temperature": "temperature", "ls_max_tokens": "max_tokens", "ls_stop": "stop"}
_MAX_ID_PARAMS = 160
_DROP = object()


def _plain(value: Any) -> Any:
    """``value`` when it is JSON made of str/int/float/bool (lists, dicts), else a marker that drops it."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _DROP
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return _DROP if any(v is _DROP for v in items) else items
    if isinstance(value, dict):
        out = {str(k): _plain(v) for k, v in value.items()}
        return _DROP if any(v is _DROP for v in out.values()) else out
    return _DROP  # SecretStr, clients, callables, enums...: not part of the id


def safe_attr(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)``, also None when the attribute raises (a property on a half-built model)."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def safe_call(fn: Any) -> Any:
    """``fn()`` when it is callable and does not raise, else None."""
    try:
        return fn() if callable(fn) else None
    except Exception:
        return None


def output_params(obj: Any, sources: list[Any]) -> dict[str, Any]:
    """The :data:`OUTPUT_PARAMS` of a model: from the dicts in ``sources`` first, then its attributes.

    Only JSON-plain values are kept (no secrets, clients or callables), sorted by name; empty ones are left out.
    """
    params: dict[str, Any] = {}
    for source in sources:
        if isinstance(source, dict):
            for key, value in source.items():
                name = _LS_PARAMS.get(key, key)
                if name in OUTPUT_PARAMS and name not in params:
                    params[name] = value
    for name in OUTPUT_PARAMS:
        if name not in params:
            params[name] = safe_attr(obj, name)
    out: dict[str, Any] = {}
    for name in sorted(params):
        value = _plain(params[name])
        if value is _DROP or value is None or value == {} or value == []:
            continue
        out[name] = value
    return out


def format_model_id(prefix: str, name: str, params: dict[str, Any]) -> str:
    """``prefix:name?k=v&...`` (JSON values); a parameter list longer than 160 characters becomes a hash."""
    if not params:
        return f"{prefix}:{name}"
    text = "&".join(
        f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':'), ensure_ascii=False)}" for k, v in params.items()
    )
    if len(text) > _MAX_ID_PARAMS:
        text = "params=" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return f"{prefix}:{name}?{text}"
