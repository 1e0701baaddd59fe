"""Everything rankbridge knows about LlamaIndex, in one room.

* :mod:`.adapter` -- :class:`~rankbridge.frameworks.llamaindex.adapter.LlamaIndexRetriever`: a retriever, index
  or query engine as a rankbridge retriever;
* :mod:`.capture` -- the instrumentation span handler of live capture; :mod:`.capture_legacy` the
  ``CallbackManager`` handler for releases without instrumentation;
* :mod:`.llm` -- a LlamaIndex LLM behind the judge's ``complete`` / ``acomplete``;
* :data:`FRAMEWORK` -- how its objects are recognised (by the modules and names of their classes).

Importing this package (and :mod:`.adapter`, :mod:`.llm`) imports no LlamaIndex module; the capture handlers
do, and are loaded only when a capture attaches (:func:`rankbridge.frameworks.attach_capture`).
"""

from __future__ import annotations

from rankbridge.frameworks.base import Framework

__all__ = ["FRAMEWORK"]

FRAMEWORK = Framework(
    name="llamaindex",
    label="LlamaIndex",
    modules=("llama_index.",),
    core="llama_index.core",
    package="llama-index-core",
    extra="llamaindex",
    llm_module="llama_index.core",
    llm_classes=frozenset({"LLM", "BaseLLM"}),
    # (llama-index-workflows ships Workflow and its agents under the top-level package ``workflows``)
    app_modules=("llama_index.", "workflows."),
    app_kinds=(
        (("llama_index.", "workflows."), "BaseRetriever", "retriever"),
        (("llama_index.", "workflows."), "BaseIndex", "retriever"),
        (("llama_index.", "workflows."), "BasePydanticVectorStore", "retriever"),
        (("llama_index.", "workflows."), "VectorStore", "retriever"),
        (("llama_index.", "workflows."), "BaseChatEngine", "chat"),
        (("llama_index.", "workflows."), "BaseWorkflowAgent", "agent"),
        (("llama_index.", "workflows."), "AgentWorkflow", "agent"),
        (("llama_index.", "workflows."), "Workflow", "workflow"),
        (("llama_index.", "workflows."), "BaseQueryEngine", "query_engine"),
    ),
)
