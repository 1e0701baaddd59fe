"""Everything rankbridge knows about LangChain, in one room.

* :mod:`.adapter` -- :class:`~rankbridge.frameworks.langchain.adapter.LangChainRetriever`: a retriever or vector
  store as a rankbridge retriever;
* :mod:`.capture` -- the callback handlers of live capture (process-wide through LangChain's configure hook,
  or passed by hand in ``config={"callbacks": [...]}``);
* :mod:`.llm` -- a LangChain chat model or LLM behind the judge's ``complete`` / ``acomplete``;
* :data:`FRAMEWORK` -- how its objects are recognised (by the modules and names of their classes).

Importing this package (and :mod:`.adapter`, :mod:`.llm`) imports no LangChain module; the capture handlers
do, and are loaded only when a capture attaches (:func:`rankbridge.frameworks.attach_capture`).
"""

from __future__ import annotations

from rankbridge.frameworks.base import Framework

__all__ = ["FRAMEWORK"]

FRAMEWORK = Framework(
    name="langchain",
    label="LangChain",
    modules=("langchain_core.", "langchain_community.", "langchain.", "langchain_classic."),
    core="langchain_core",
    package="langchain-core",
    extra="langchain",
    llm_module="langchain_core.language_models",
    llm_classes=frozenset({"BaseLanguageModel", "BaseChatModel", "BaseLLM"}),
    app_modules=("langchain_core.", "langchain.", "langchain_community.", "langgraph."),
    app_kinds=(
        (("langchain_core.",), "BaseRetriever", "retriever"),
        (("langchain_core.",), "VectorStore", "retriever"),
        (("langgraph.",), "Pregel", "graph"),
        (("langchain_core.",), "Runnable", "runnable"),
    ),
)
