"""rankbridge: how well does the retriever inside your RAG app find the right chunks?

Examples
--------
>>> import rankbridge as rb
>>> ev = rb.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.9, "d2": 0.3}}, ["ndcg@10", "mrr@10"])
>>> ev.mean
{'ndcg@10': 1.0, 'mrr@10': 1.0}
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from rankbridge._version import __version__
from rankbridge.analysis import (
    Comparison,
    GateResult,
    assert_retrieval_quality,
    compare,
    failures,
    gate,
    slices,
)
from rankbridge.errors import (
    CheckpointError,
    IdMismatchError,
    InputError,
    MetricError,
    MissingExtraError,
    ParseError,
    RankbridgeError,
    RetrievalError,
)
from rankbridge.evaluate import Evaluation, evaluate
from rankbridge.io import load_qrels, load_run
from rankbridge.metrics import Measure, parse_measure
from rankbridge.types import GoldenSet, Hit, Qrels, Query, Run

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs; loaded lazily at run time
    from rankbridge import integrations
    from rankbridge.apps import arun_app, is_app, run_app
    from rankbridge.capture import capture
    from rankbridge.frameworks import adapt
    from rankbridge.judge import Judge, generate_queries, judge_runs
    from rankbridge.retriever import Retriever, StaticRetriever
    from rankbridge.runner import RunSummary, arun_retriever, run_retriever, summarize
    from rankbridge.store import RunStore

# Names served on first use, so `import rankbridge` stays light (no asyncio, threads, sqlite, frameworks).
# (compare and gate are imported above instead: they share their names with the deprecated modules
# rankbridge.compare and rankbridge.gate; see _Package below.)
_LAZY = {
    "adapt": "rankbridge.frameworks",
    "arun_app": "rankbridge.apps",
    "is_app": "rankbridge.apps",
    "run_app": "rankbridge.apps",
    "Retriever": "rankbridge.retriever",
    "StaticRetriever": "rankbridge.retriever",
    "RunSummary": "rankbridge.runner",
    "arun_retriever": "rankbridge.runner",
    "run_retriever": "rankbridge.runner",
    "summarize": "rankbridge.runner",
    "RunStore": "rankbridge.store",
    "capture": "rankbridge.capture",
    "Judge": "rankbridge.judge",
    "generate_queries": "rankbridge.judge",
    "judge_runs": "rankbridge.judge",
}
_LAZY_MODULES = {"integrations"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _LAZY_MODULES:
        return importlib.import_module(f"rankbridge.{name}")
    raise AttributeError(f"module 'rankbridge' has no attribute {name!r}")


# (``rankbridge.capture`` is the live-capture module and the function ``capture()`` it defines)
_FUNCTIONS_NAMED_LIKE_MODULES = frozenset({"capture", "compare", "gate"})


class _Package(ModuleType):
    """The package's module type: importing a submodule binds it on its package (``rankbridge.gate = <module>``)
    once it is loaded; the deprecated modules ``rankbridge.compare`` and ``rankbridge.gate``, and the capture
    module ``rankbridge.capture``, must not replace the functions of the same names (``capture`` is then
    served by ``__getattr__``: ``from rankbridge.capture import ...`` reads the module)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FUNCTIONS_NAMED_LIKE_MODULES and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # pickled by name, as plain modules are: cloudpickle (Ray, Spark, multiprocessing) would otherwise
        # try to copy the package itself whenever a user's function refers to `rankbridge`
        return importlib.import_module, (self.__name__,)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | _LAZY_MODULES)


__all__ = [
    "CheckpointError",
    "Comparison",
    "Evaluation",
    "GateResult",
    "GoldenSet",
    "Hit",
    "IdMismatchError",
    "InputError",
    "Judge",
    "Measure",
    "MetricError",
    "MissingExtraError",
    "ParseError",
    "Qrels",
    "Query",
    "RankbridgeError",
    "RetrievalError",
    "Retriever",
    "Run",
    "RunStore",
    "RunSummary",
    "StaticRetriever",
    "__version__",
    "adapt",
    "arun_app",
    "arun_retriever",
    "assert_retrieval_quality",
    "capture",
    "compare",
    "evaluate",
    "failures",
    "gate",
    "generate_queries",
    "integrations",
    "is_app",
    "judge_runs",
    "load_qrels",
    "load_run",
    "parse_measure",
    "run_app",
    "run_retriever",
    "slices",
    "summarize",
]
