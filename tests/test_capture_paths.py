"""Import paths: the framework rooms, the deprecated aliases of the old ones, and ``rb.capture`` staying the function.

``rankbridge.callbacks`` became :mod:`rankbridge.capture` (the core) and ``rankbridge.frameworks.<name>.capture``
(the handlers); ``rankbridge.adapters`` became :mod:`rankbridge.frameworks`. The old paths, shown in earlier
docs, keep working as aliases that warn once and hand out the very same objects.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import rankbridge as rb

# old path -> (new module, names that must be the same objects, framework the module needs)
ALIASES = {
    "rankbridge.callbacks": (
        "rankbridge.capture",
        ["capture", "Capture", "Recorder", "query_id", "QUERY_ID_KEY"],
        None,
    ),
    "rankbridge.callbacks.langchain": (
        "rankbridge.frameworks.langchain.capture",
        ["RankbridgeCallbackHandler", "RankbridgeAsyncCallbackHandler", "attach"],
        "langchain_core",
    ),
    "rankbridge.callbacks.llamaindex": (
        "rankbridge.frameworks.llamaindex.capture",
        ["RankbridgeSpanHandler", "attach"],
        "llama_index.core",
    ),
    "rankbridge.callbacks.llamaindex_legacy": (
        "rankbridge.frameworks.llamaindex.capture_legacy",
        ["RankbridgeLlamaIndexCallback", "attach"],
        "llama_index.core",
    ),
    "rankbridge.adapters": (
        "rankbridge.frameworks",
        ["adapt", "AdapterBase", "CallableRetriever", "LangChainRetriever", "LlamaIndexRetriever", "Staged"],
        None,
    ),
    "rankbridge.adapters.llamaindex": ("rankbridge.frameworks.llamaindex.adapter", ["LlamaIndexRetriever"], None),
    "rankbridge.adapters.langchain": ("rankbridge.frameworks.langchain.adapter", ["LangChainRetriever"], None),
    "rankbridge.adapters.callable": ("rankbridge.frameworks.plain", ["CallableRetriever"], None),
}


def _forget(name: str) -> None:
    """Drop ``name`` (and its submodules) from the import system, so the next import runs it again."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]
    parent, _, child = name.rpartition(".")
    if parent in sys.modules and isinstance(getattr(sys.modules[parent], child, None), type(sys)):
        delattr(sys.modules[parent], child)


@pytest.mark.parametrize("old", list(ALIASES))
def test_old_path_warns_and_reexports_the_same_objects(old: str) -> None:
    new, names, framework = ALIASES[old]
    if framework is not None:
        pytest.importorskip(framework)
    target = importlib.import_module(new)
    _forget(old.split(".")[0] + "." + old.split(".")[1])  # the alias package too: its own warning is expected
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        alias = importlib.import_module(old)
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert f"{old} is deprecated: import from {new} instead (same names)" in messages, messages
    for name in names:
        assert getattr(alias, name) is getattr(target, name), name
    assert set(names) <= set(alias.__all__)


def test_old_path_warns_once() -> None:
    _forget("rankbridge.callbacks")
    with pytest.warns(DeprecationWarning):
        importlib.import_module("rankbridge.callbacks")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.import_module("rankbridge.callbacks")  # cached: no second warning


def test_capture_stays_the_function_after_importing_the_module() -> None:
    # a fresh interpreter: the module is imported first, as `from rankbridge.capture import ...` in an app does
    code = (
        "import rankbridge.capture\n"
        "from rankbridge.capture import Recorder, capture\n"
        "import rankbridge as rb\n"
        "assert rb.capture is capture, rb.capture\n"
        "assert rankbridge.capture is capture\n"
        "with rb.capture(frameworks=()) as cap:\n"
        "    pass\n"
        "assert isinstance(cap.recorder, Recorder)\n"
        "import importlib\n"
        "assert importlib.import_module('rankbridge.capture').Recorder is Recorder\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_capture_and_adapt_in_this_process() -> None:
    module = importlib.import_module("rankbridge.capture")
    assert rb.capture is module.capture
    assert rb.adapt is importlib.import_module("rankbridge.frameworks").adapt


def test_framework_rooms_import_no_framework() -> None:
    code = (
        "import sys, rankbridge, rankbridge.capture, rankbridge.frameworks\n"
        "import rankbridge.frameworks.llamaindex.adapter, rankbridge.frameworks.llamaindex.llm\n"
        "import rankbridge.frameworks.langchain.adapter, rankbridge.frameworks.langchain.llm\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('llama_index', 'langchain_core', 'langchain')]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_detect_reads_the_mro_without_importing() -> None:
    from rankbridge.frameworks import app_kinds, detect, detect_llm

    def fake(module: str, name: str, *bases: type) -> object:
        return type(name, bases or (object,), {"__module__": module})()

    retriever = fake("langchain_core.retrievers", "BaseRetriever")
    assert detect(retriever) == "langchain"
    assert detect(fake("llama_index.core.base.base_retriever", "BaseRetriever")) == "llamaindex"
    assert detect(object()) is None
    assert detect_llm(fake("langchain_core.language_models.chat_models", "BaseChatModel")) == "langchain"
    assert detect_llm(fake("llama_index.core.llms.llm", "LLM")) == "llamaindex"
    assert detect_llm(retriever) is None
    assert app_kinds(fake("langgraph.pregel", "Pregel")) == (True, frozenset({"graph"}))
    assert app_kinds(fake("workflows.workflow", "Workflow")) == (True, frozenset({"workflow"}))
    assert app_kinds(object()) == (False, frozenset())
