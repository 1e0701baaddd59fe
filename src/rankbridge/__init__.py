"""rankbridge: how well does the retriever inside your RAG app find the right chunks?

Examples
--------
>>> import rankbridge as rb
>>> ev = rb.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.9, "d2": 0.3}}, ["ndcg@10", "mrr@10"])
>>> ev.mean
{'ndcg@10': 1.0, 'mrr@10': 1.0}
"""

from rankbridge.errors import (
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

__version__ = "0.1.0"

__all__ = [
    "Evaluation",
    "GoldenSet",
    "Hit",
    "InputError",
    "Measure",
    "MetricError",
    "MissingExtraError",
    "ParseError",
    "Qrels",
    "Query",
    "RankbridgeError",
    "RetrievalError",
    "Run",
    "__version__",
    "evaluate",
    "load_qrels",
    "load_run",
    "parse_measure",
]
