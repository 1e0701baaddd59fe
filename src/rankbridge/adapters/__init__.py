"""Adapters: turn a LlamaIndex or LangChain object, or a plain function, into a rankbridge retriever.

Only the adapter modules import a framework, and only when an adapter is built, so ``import rankbridge``
stays framework-free. :func:`adapt` picks the adapter from the object's type.

Examples
--------
>>> from rankbridge.adapters import adapt
>>> r = adapt(lambda query, k: ["d1", "d2", "d3"][:k])
>>> type(r).__name__, [h.doc_id for h in r.retrieve("q", k=2)]
('CallableRetriever', ['d1', 'd2'])
>>> adapt(42)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rankbridge.errors.InputError: adapt: cannot use a int as a retriever. Expected one of: ...
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import Any

from rankbridge.adapters._base import DEFAULT_K, AdapterBase, Staged
from rankbridge.adapters.callable import CallableRetriever
from rankbridge.adapters.langchain import LangChainRetriever
from rankbridge.adapters.llamaindex import LlamaIndexRetriever
from rankbridge.errors import InputError
from rankbridge.retriever import IdSpec, Retriever

# ``callable`` here would be the submodule rankbridge.adapters.callable, not the builtin.
_callable = builtins.callable

__all__ = [
    "DEFAULT_K",
    "AdapterBase",
    "CallableRetriever",
    "LangChainRetriever",
    "LlamaIndexRetriever",
    "Staged",
    "adapt",
]

_ACCEPTS = (
    "a LlamaIndex BaseRetriever, index or query engine; a LangChain BaseRetriever or VectorStore; "
    "a function f(query, k) (sync or async); or an object with retrieve(query, k) and aretrieve(query, k)"
)


def _framework_of(obj: Any) -> str | None:
    for cls in type(obj).__mro__:
        module = cls.__module__ or ""
        if module.startswith("llama_index."):
            return "llamaindex"
        if module.startswith(("langchain_core.", "langchain_community.", "langchain.")):
            return "langchain"
    return None


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
    framework = _framework_of(obj)
    if framework == "llamaindex":
        return LlamaIndexRetriever(obj, **options)
    if framework == "langchain":
        return LangChainRetriever(obj, **options)
    if _callable(getattr(obj, "retrieve", None)) and _callable(getattr(obj, "aretrieve", None)):
        if id_from is None and doc_map is None and keep_text and name is None:
            return obj  # type: ignore[no-any-return]
        raise InputError(
            f"adapt: {type(obj).__name__} is already a retriever; id_from/doc_map/keep_text/name apply only to "
            "objects rankbridge wraps (configure the retriever itself instead)"
        )
    if _callable(obj):
        return CallableRetriever(obj, **options)
    raise InputError(f"adapt: cannot use a {type(obj).__name__} as a retriever. Expected one of: {_ACCEPTS}")
