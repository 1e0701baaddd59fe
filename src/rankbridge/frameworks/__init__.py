"""Framework knowledge, one room per framework, behind one registry.

``frameworks/llamaindex/`` and ``frameworks/langchain/`` each hold everything rankbridge knows about that
framework: how its objects are recognised (:class:`~rankbridge.frameworks.base.Framework`), the retriever
adapter, the live-capture handlers and the LLM wrapper the judge uses. ``frameworks/plain.py`` is the same
for plain functions (:class:`~rankbridge.frameworks.plain.CallableRetriever`), ``frameworks/base.py`` what
they share. They are the only code that imports a framework, and only when an adapter is built, a capture
attaches or an LLM is called: ``import rankbridge`` (and this registry) stays framework-free.

The registry
------------
=======================================  ===================================================================
:func:`detect`                           the framework of an object's class (``"llamaindex"``,
                                         ``"langchain"`` or ``None``), read from its MRO, importing nothing
:func:`adapt`                            the retriever adapter that fits an object
:func:`detect_llm` / :func:`llm_wrapper` the framework of an LLM object / its wrapper module
                                         (``complete``, ``acomplete``, ``model_id``, ``describe``)
:func:`app_kinds`                        what an object is to :func:`rankbridge.run_app` (chat engine,
                                         agent, workflow, graph, runnable, retriever, query engine)
:func:`capture_modes` /                  the capture handlers to attach (``"auto"``: every installed
:func:`attach_capture`                   framework) / attach one to a :class:`~rankbridge.capture.Recorder`
=======================================  ===================================================================

Examples
--------
>>> from rankbridge.frameworks import adapt, detect
>>> r = adapt(lambda query, k: ["d1", "d2", "d3"][:k])
>>> type(r).__name__, [h.doc_id for h in r.retrieve("q", k=2)]
('CallableRetriever', ['d1', 'd2'])
>>> detect(r) is None, detect("text") is None
(True, True)
>>> adapt(42)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rankbridge.errors.InputError: adapt: cannot use a int as a retriever. Expected one of: ...
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rankbridge.errors import InputError, MissingExtraError
from rankbridge.frameworks import langchain as _langchain
from rankbridge.frameworks import llamaindex as _llamaindex
from rankbridge.frameworks.base import DEFAULT_K, AdapterBase, Framework, Staged
from rankbridge.frameworks.langchain import llm as _langchain_llm
from rankbridge.frameworks.langchain.adapter import LangChainRetriever
from rankbridge.frameworks.llamaindex import llm as _llamaindex_llm
from rankbridge.frameworks.llamaindex.adapter import LlamaIndexRetriever
from rankbridge.frameworks.plain import CallableRetriever
from rankbridge.retriever import IdSpec, Retriever

if TYPE_CHECKING:
    from rankbridge.capture import Recorder

__all__ = [
    "DEFAULT_K",
    "FRAMEWORKS",
    "AdapterBase",
    "CallableRetriever",
    "Framework",
    "LangChainRetriever",
    "LlamaIndexRetriever",
    "Staged",
    "adapt",
    "app_kinds",
    "attach_capture",
    "capture_modes",
    "detect",
    "detect_llm",
    "llm_wrapper",
]

#: Every framework rankbridge knows, by name.
FRAMEWORKS: Mapping[str, Framework] = {fw.name: fw for fw in (_llamaindex.FRAMEWORK, _langchain.FRAMEWORK)}

_ADAPTERS: Mapping[str, Callable[..., AdapterBase]] = {
    "llamaindex": LlamaIndexRetriever,
    "langchain": LangChainRetriever,
}
_LLM_WRAPPERS: Mapping[str, ModuleType] = {"llamaindex": _llamaindex_llm, "langchain": _langchain_llm}

#: Capture handlers: mode -> (framework, module with ``attach(recorder, *, trace)``). Two for LlamaIndex: its
#: instrumentation (0.10.20 and later) and the legacy ``CallbackManager``.
_CAPTURE_MODES: Mapping[str, tuple[str, str]] = {
    "llamaindex": ("llamaindex", "rankbridge.frameworks.llamaindex.capture"),
    "llamaindex_legacy": ("llamaindex", "rankbridge.frameworks.llamaindex.capture_legacy"),
    "langchain": ("langchain", "rankbridge.frameworks.langchain.capture"),
}

_ACCEPTS = (
    "a LlamaIndex BaseRetriever, index or query engine; a LangChain BaseRetriever or VectorStore; "
    "a function f(query, k) (sync or async); or an object with retrieve(query, k) and aretrieve(query, k)"
)


# -- detection ------------------------------------------------------------------------------------
def detect(obj: Any) -> str | None:
    """The framework whose module one of the classes in ``type(obj).__mro__`` comes from, or ``None``.

    The nearest class decides (a user's subclass of a LangChain retriever is LangChain's). Nothing is
    imported: only the classes' ``__module__`` strings are read.
    """
    for cls in type(obj).__mro__:
        module = cls.__module__ or ""
        for fw in FRAMEWORKS.values():
            if module.startswith(fw.modules):
                return fw.name
    return None


def detect_llm(obj: Any) -> str | None:
    """The framework of an LLM object (a LangChain chat model or LLM, a LlamaIndex LLM), or ``None``."""
    for fw in FRAMEWORKS.values():
        if any(c.__name__ in fw.llm_classes and c.__module__.startswith(fw.llm_module) for c in type(obj).__mro__):
            return fw.name
    return None


def llm_wrapper(framework: str) -> ModuleType:
    """The module that calls a framework's LLM: ``complete(obj, prompt)``, ``acomplete``, ``model_id(obj)``,
    ``describe(obj)`` (see :mod:`rankbridge.frameworks.langchain.llm`)."""
    return _LLM_WRAPPERS[framework]


def app_kinds(obj: Any) -> tuple[bool, frozenset[str]]:
    """Whether ``obj`` is a framework object, and the app kinds its classes name (see :mod:`rankbridge.apps`).

    Kinds: ``"retriever"`` (retrievers, indexes, vector stores), ``"chat"``, ``"agent"``, ``"workflow"``,
    ``"graph"``, ``"runnable"``, ``"query_engine"``; several when the MRO has several (a LangChain retriever
    is also a ``Runnable``): :mod:`rankbridge.apps` decides which one counts.
    """
    seen = False
    kinds: set[str] = set()
    for cls in type(obj).__mro__:
        module = cls.__module__ or ""
        for fw in FRAMEWORKS.values():
            if not module.startswith(fw.app_modules):
                continue
            seen = True
            for prefixes, name, kind in fw.app_kinds:
                if cls.__name__ == name and module.startswith(prefixes):
                    kinds.add(kind)
    return seen, frozenset(kinds)


# -- adapters ------------------------------------------------------------------------------------
def adapt(
    obj: Any,
    *,
    id_from: IdSpec | None = None,
    doc_map: Mapping[str, str] | Callable[[str], str | None] | None = None,
    keep_text: bool = True,
    name: str | None = None,
) -> Retriever:
    """Wrap ``obj`` in the adapter that fits it; a ready retriever is returned as it is.

    Parameters
    ----------
    obj:
        A LlamaIndex retriever / index / query engine, a LangChain retriever / vector store, a function
        ``f(query, k)``, or anything that already implements :class:`~rankbridge.retriever.Retriever`.
    id_from, doc_map, keep_text, name:
        Passed to the adapter (see :mod:`rankbridge.retriever` for id sources). They cannot be applied to
        an object that is already a retriever.

    Raises
    ------
    InputError
        ``obj`` is none of the above.
    MissingExtraError
        ``obj`` is a framework object but the framework's core package cannot be imported.
    """
    options: dict[str, Any] = {"id_from": id_from, "doc_map": doc_map, "keep_text": keep_text, "name": name}
    framework = detect(obj)
    if framework is not None:
        return _ADAPTERS[framework](obj, **options)
    if callable(getattr(obj, "retrieve", None)) and callable(getattr(obj, "aretrieve", None)):
        if id_from is None and doc_map is None and keep_text and name is None:
            return obj  # type: ignore[no-any-return]
        raise InputError(
            f"adapt: {type(obj).__name__} is already a retriever; id_from/doc_map/keep_text/name apply only to "
            "objects rankbridge wraps (configure the retriever itself instead)"
        )
    if callable(obj):
        return CallableRetriever(obj, **options)
    raise InputError(f"adapt: cannot use a {type(obj).__name__} as a retriever. Expected one of: {_ACCEPTS}")


# -- capture handlers ----------------------------------------------------------------------------------
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


def capture_modes(frameworks: str | Sequence[str] = "auto") -> list[str]:
    """The capture handlers ``capture(frameworks=...)`` attaches: validated, installed, each once.

    ``"auto"``: every installed framework (LlamaIndex through instrumentation when it has it, else the legacy
    ``CallbackManager``). Otherwise the names given, of ``"llamaindex"``, ``"llamaindex_legacy"``,
    ``"langchain"``.

    Raises
    ------
    InputError
        An unknown name, or both LlamaIndex modes (each retrieval would be recorded twice).
    MissingExtraError
        A named framework is not installed.

    Examples
    --------
    >>> capture_modes(())
    []
    """
    if isinstance(frameworks, str):
        if frameworks != "auto":
            frameworks = [frameworks]
        else:
            frameworks = []
            if _installed(_llamaindex.FRAMEWORK.core):
                frameworks.append("llamaindex" if _has_instrumentation() else "llamaindex_legacy")
            if _installed(_langchain.FRAMEWORK.core):
                frameworks.append("langchain")
    chosen: list[str] = []
    for mode in frameworks:
        if mode not in _CAPTURE_MODES:
            raise InputError(
                "frameworks must be 'auto' or a list of 'llamaindex', 'llamaindex_legacy', 'langchain'. "
                f"Got {mode!r} instead."
            )
        fw = FRAMEWORKS[_CAPTURE_MODES[mode][0]]
        if not _installed(fw.core):
            raise MissingExtraError(fw.package, fw.extra, f"capture(frameworks=[{mode!r}])")
        if mode not in chosen:
            chosen.append(mode)
    if "llamaindex" in chosen and "llamaindex_legacy" in chosen:
        raise InputError(
            "frameworks: 'llamaindex' and 'llamaindex_legacy' both record every LlamaIndex retrieval (each "
            "would be recorded twice); choose one."
        )
    return chosen


def attach_capture(mode: str, recorder: Recorder, *, trace: bool = False) -> Callable[[], None]:
    """Attach the capture handler of ``mode`` (see :func:`capture_modes`) to ``recorder``; returns its detach.

    The handler module is imported here, and with it the framework.
    """
    # lazy: the handler module imports its framework
    return importlib.import_module(_CAPTURE_MODES[mode][1]).attach(recorder, trace=trace)  # type: ignore[no-any-return]
