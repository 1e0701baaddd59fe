"""``rankbridge demo``: several retrieval strategies from both frameworks, evaluated end to end, offline.

On the golden set shipped with rankbridge (the docs of *Lumen*, a fictional cloud platform: 252 passages,
108 questions with categories, graded 0-3 labels and reference answers) -- or on any BEIR folder with
``--beir PATH`` -- the demo

1. builds four strategies: LlamaIndex BM25, LangChain BM25, a LangChain vector store with a local
   deterministic embedding (character trigrams hashed into 512 dimensions: no model download, no key), and
   reciprocal rank fusion of LlamaIndex BM25 and the vector store;
2. runs every question through each with :func:`rankbridge.run_retriever` (the frameworks' own objects,
   unchanged);
3. evaluates them with the trec_eval-exact core, compares them with paired tests against the first
   strategy, slices by category, lists failures, adds RAGAS' ID-based context precision and recall (no
   LLM needed), prints the comparison, writes an HTML report, and saves every run to the history store.

Everything runs on this machine; nothing is sent anywhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from rankbridge.errors import InputError, MissingExtraError
from rankbridge.io.beir import read_beir
from rankbridge.types import GoldenSet, Run

__all__ = ["DEMO_METRICS", "DemoResult", "TrigramEmbedding", "demo_golden_set", "run_demo"]

DEMO_METRICS = ["ndcg@10", "mrr@10", "hit_rate@5", "recall@10", "precision@5(rel=2)", "map@10", "dcg@10"]
BASELINE = "llamaindex-bm25"
_WORD = re.compile(r"\w+")


def demo_golden_set() -> GoldenSet:
    """The golden set shipped with rankbridge (a BEIR folder inside the package)."""
    folder = resources.files("rankbridge") / "data" / "demo"
    with resources.as_file(folder) as path:
        return read_beir(path, split="test")


class TrigramEmbedding:
    """A deterministic local embedding: hashed character trigrams of each word, L2-normalised.

    It stands in for a real embedding model in the demo and in tests: same text, same vector, on any
    machine, with no download. Being sub-word it matches ``priced`` to ``price``, which BM25 does not.

    Examples
    --------
    >>> e = TrigramEmbedding(dim=64)
    >>> v = e.embed_query("pricing")
    >>> len(v), round(sum(x * x for x in v), 6)
    (64, 1.0)
    >>> e.embed_query("pricing") == v
    True
    """

    def __init__(self, dim: int = 512):
        self.dim = dim

    def _vector(self, text: str) -> list[float]:
        vec = np.zeros(self.dim)
        for word in _WORD.findall(text.lower()):
            padded = f"#{word}#"
            for i in range(len(padded) - 2):
                h = hashlib.blake2b(padded[i : i + 3].encode(), digest_size=8).digest()
                vec[int.from_bytes(h[:4], "little") % self.dim] += 1.0 if h[4] & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        out: list[float] = (vec / norm if norm else vec).tolist()
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def _doc_text(doc: dict[str, Any]) -> str:
    title = doc.get("title") or ""
    return f"{title}. {doc['text']}" if title else str(doc["text"])


def _need(module: str, package: str, extra: str, feature: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise MissingExtraError(package, extra, feature) from None


def build_strategies(golden: GoldenSet, *, k: int = 10) -> dict[str, Any]:
    """The demo's retrievers, built with the frameworks' own classes over ``golden.corpus``."""
    if not golden.corpus:
        raise InputError("the golden set has no corpus to build retrievers from")
    _need("llama_index.retrievers.bm25", "llama-index-retrievers-bm25", "dev", "The demo's LlamaIndex BM25")
    _need("langchain_community.retrievers", "langchain-community", "dev", "The demo's LangChain BM25")
    from langchain_community.retrievers import BM25Retriever as LangChainBM25
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever as LlamaBM25

    ids = list(golden.corpus)
    texts = [_doc_text(golden.corpus[d]) for d in ids]
    nodes = [TextNode(id_=d, text=t) for d, t in zip(ids, texts, strict=True)]
    docs = [Document(id=d, page_content=t, metadata={"doc_id": d}) for d, t in zip(ids, texts, strict=True)]

    class _LangChainTrigrams(TrigramEmbedding, Embeddings):
        pass

    store = InMemoryVectorStore(embedding=_LangChainTrigrams())
    store.add_documents(docs, ids=ids)
    return {
        "llamaindex-bm25": LlamaBM25.from_defaults(nodes=nodes, similarity_top_k=k),
        "langchain-bm25": LangChainBM25.from_documents(docs, k=k),
        "langchain-vector": store,
    }


@dataclass
class DemoResult:
    """What the demo produced (returned by :func:`run_demo`; the CLI prints it)."""

    golden: GoldenSet
    runs: dict[str, Run]
    comparison: Any
    failures: Any
    slices: Any
    ragas: dict[str, Any] = field(default_factory=dict)
    report: Any = None
    report_path: Path | None = None
    store_path: Path | None = None
    record_ids: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def run_demo(
    *,
    beir: str | os.PathLike[str] | None = None,
    split: str = "test",
    out: str | os.PathLike[str] = "rankbridge-demo",
    k: int = 10,
    metrics: Sequence[str] = DEMO_METRICS,
    max_queries: int | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
) -> DemoResult:
    """Run the whole demo and write its outputs under ``out`` (report, run files, history store).

    Parameters
    ----------
    beir:
        A BEIR folder to use instead of the shipped golden set (e.g. ``../shared/data/scifact``).
    out:
        Output folder: ``report.html``, ``runs/<strategy>.jsonl``, ``history.sqlite``.
    max_queries:
        Use only the first N queries (a quick look at a big set).
    """
    from rankbridge.compare import compare, failures, slices
    from rankbridge.evaluate import evaluate
    from rankbridge.fusion import reciprocal_rank_fusion
    from rankbridge.io.jsonl import write_run_jsonl
    from rankbridge.runner import run_retriever
    from rankbridge.store import RunStore

    t0 = time.perf_counter()
    golden = demo_golden_set() if beir is None else read_beir(beir, split=split)
    if max_queries is not None:
        keep = golden.queries[:max_queries]
        kept = {q.id for q in keep}
        from rankbridge.types import Qrels

        golden = GoldenSet(
            keep, Qrels({q: d for q, d in golden.qrels.items() if q in kept}), corpus=golden.corpus, name=golden.name
        )
    log(f"golden set {golden.name!r}: {len(golden)} questions, {len(golden.corpus or {})} passages")
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {"load": time.perf_counter() - t0}

    t = time.perf_counter()
    log("building the retrievers (LlamaIndex BM25, LangChain BM25, LangChain vector store)...")
    strategies = build_strategies(golden, k=k)
    timings["index"] = time.perf_counter() - t
    runs: dict[str, Run] = {}
    for name, retriever in strategies.items():
        t = time.perf_counter()
        runs[name] = run_retriever(
            retriever, golden, k=k, name=name, progress=progress, id_from=["id", "metadata:doc_id"]
        )
        timings[f"retrieve {name}"] = time.perf_counter() - t
    runs["rrf(llamaindex-bm25+vector)"] = reciprocal_rank_fusion(
        [runs["llamaindex-bm25"], runs["langchain-vector"]], depth=k, name="rrf(llamaindex-bm25+vector)"
    )

    t = time.perf_counter()
    evaluations: dict[str, Any] = {name: evaluate(golden.qrels, run, list(metrics)) for name, run in runs.items()}
    timings["evaluate"] = time.perf_counter() - t
    notes: list[str] = []
    ragas: dict[str, Any] = {}
    t = time.perf_counter()
    try:
        from rankbridge.integrations.ragas import evaluate_ragas, join

        log("scoring RAGAS' ID-based context precision and recall (no LLM needed)...")
        for name, run in runs.items():
            ragas[name] = evaluate_ragas(
                run, golden, metrics=["id_based_context_precision", "id_based_context_recall"], k=k
            )
            evaluations[name] = join(evaluations[name], ragas[name])
    except MissingExtraError as exc:
        notes.append(f"RAGAS columns skipped: {exc}")
    timings["ragas"] = time.perf_counter() - t

    t = time.perf_counter()
    log("comparing the strategies (paired permutation tests, bootstrap intervals)...")
    comparison = compare(evaluations, golden, list(metrics), baseline=BASELINE, golden=golden)
    fails = failures(runs, golden.qrels, golden=golden, k=k)
    by_category = slices(evaluations[BASELINE], golden, by="category", metrics=list(metrics)[:3])
    timings["statistics"] = time.perf_counter() - t
    result = DemoResult(golden, runs, comparison, fails, by_category, ragas=ragas, notes=notes, timings=timings)

    (outdir / "runs").mkdir(exist_ok=True)
    for name, run in runs.items():
        write_run_jsonl(run, outdir / "runs" / f"{_slug(name)}.jsonl")
    result.store_path = outdir / "history.sqlite"
    with RunStore(result.store_path) as store:
        for name, run in runs.items():
            result.record_ids[name] = store.save(
                comparison.evaluations[name], run=run, name=name, config={"k": k, "golden": golden.name}, qrels=golden
            )
    log("building the report...")
    result.report_path = _write_report(result, outdir)
    timings["total"] = time.perf_counter() - t0
    return result


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


def _write_report(result: DemoResult, outdir: Path) -> Path | None:
    """Build the report (kept on ``result.report``) and write it as HTML when its extra is installed."""
    from rankbridge.reports import build_report

    result.report = build_report(
        result.comparison,
        failures=result.failures,
        slices=result.slices,
        runs=result.runs,
        golden=result.golden,
        title=f"rankbridge demo: {result.golden.name}",
    )
    path = outdir / "report.html"
    try:
        result.report.save(path)
    except MissingExtraError as exc:
        result.notes.append(f"HTML report skipped: {exc}")
        return None
    return path
