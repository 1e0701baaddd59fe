"""``rankbridge demo``: retrieval strategies from both frameworks on a real embedding model, end to end, offline.

On the golden set shipped with rankbridge (the docs of *Lumen*, a fictional cloud platform: 252 passages,
108 questions with categories, graded 0-3 labels and reference answers) -- or on any golden set with
``--golden PATH`` -- the demo

1. builds the strategies with the frameworks' own classes: LlamaIndex BM25; the same BM25 inside a
   LlamaIndex ``RetrieverQueryEngine`` whose node postprocessor reranks BM25's top 20 by a real dense
   embedding and keeps the top 10; LangChain BM25; a LlamaIndex ``VectorStoreIndex`` on that embedding;
   and reciprocal rank fusion (:mod:`rankbridge.fusion`) of BM25 and the vector index. The embedding is
   `WordLlama <https://github.com/dleemiller/WordLlama>`_ (``pip install wordllama``, MIT; its 19 MB wheel
   carries the 16 MB ``l2_supercat_256`` weights and the tokenizer, so nothing is downloaded at run time),
   wrapped as the LlamaIndex ``BaseEmbedding`` an app would write (:func:`wordllama_embedding`);
2. runs every question through each with :func:`rankbridge.run_retriever` (the frameworks' objects,
   unchanged): the query engine's run is scored on the reranked list and keeps BM25's own top 20 as
   ``run.stages["retrieved"]``, which is also the ``llamaindex-bm25`` strategy (cut at 10), so each BM25
   strategy is shown with and without the reranker;
3. evaluates them with the trec_eval-exact core, compares them with paired tests against BM25, slices by
   category, lists failures, adds RAGAS' ID-based context precision and recall (no LLM needed), saves every
   run to the history store (``out/history.sqlite``, kept between runs: each demo adds a point to the
   trend), and prints and writes (HTML) the report: the recommended strategy (best DCG@10, tested against
   the runner-up), each BM25 strategy with and without the reranker (``x`` / ``x+rerank``), and the trend
   across the demo runs saved in the store.

:class:`TrigramEmbedding` (hashed character trigrams, no model at all) is the test double: same interface
as the WordLlama model (``embed(texts, norm=True)``), for tests that need an embedding but not a good one.

Everything runs on this machine; nothing is sent anywhere.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from rankbridge.batch import check_number
from rankbridge.errors import InputError, MissingExtraError
from rankbridge.io.beir import read_beir
from rankbridge.types import GoldenSet, Qrels, Run

__all__ = [
    "DEMO_METRICS",
    "DemoResult",
    "TrigramEmbedding",
    "demo_golden_set",
    "embedding_reranker",
    "load_wordllama",
    "run_demo",
    "wordllama_embedding",
]

DEMO_METRICS = ["ndcg@10", "mrr@10", "hit_rate@5", "recall@10", "precision@5(rel=2)", "map@10", "dcg@10"]
BASELINE = "llamaindex-bm25"
RERANKED = "llamaindex-bm25+rerank"
LANGCHAIN_BM25 = "langchain-bm25"
DENSE = "wordllama-vector"
HYBRID = "rrf(bm25+wordllama)"
WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIM = 256
_WORD = re.compile(r"\w+")


def demo_golden_set() -> GoldenSet:
    """The golden set shipped with rankbridge (a BEIR folder inside the package)."""
    folder = resources.files("rankbridge") / "data" / "demo"
    with resources.as_file(folder) as path:
        return read_beir(path, split="test")


class TrigramEmbedding:
    """A deterministic local embedding: hashed character trigrams of each word, L2-normalised.

    The test double for the demo's embedding model: same text, same vector, on any machine, with no model
    at all. Being sub-word it matches ``priced`` to ``price``, which BM25 does not; it knows no synonyms.
    It offers LangChain's ``embed_documents`` / ``embed_query`` and WordLlama's ``embed(texts, norm=True)``,
    so it stands in for the WordLlama model in :func:`wordllama_embedding` and in LangChain vector stores.

    Examples
    --------
    >>> e = TrigramEmbedding(dim=64)
    >>> v = e.embed_query("pricing")
    >>> len(v), round(sum(x * x for x in v), 6)
    (64, 1.0)
    >>> e.embed_query("pricing") == v
    True
    >>> e.embed(["pricing", "limits"], norm=True).shape
    (2, 64)
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

    def embed(self, texts: str | list[str], norm: bool = True) -> np.ndarray:
        """Vectors of ``texts`` as an array (rows are always unit length: ``norm`` is accepted for parity)."""
        return np.asarray([self._vector(t) for t in ([texts] if isinstance(texts, str) else texts)], dtype=float)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def _need(module: str, package: str, extra: str, feature: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(package, extra, feature) from None


@contextlib.contextmanager
def _logging_left_alone() -> Iterator[None]:
    """Undo what an import does to the root logger (handlers, level): the app's logging stays as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
        root.setLevel(level)


@functools.lru_cache(maxsize=1)
def load_wordllama() -> Any:
    """The WordLlama ``l2_supercat_256`` model from the files inside its wheel, never from the network.

    ``WordLlama.load()`` finds the weights in the package but looks for the tokenizer in
    ``wordllama/tokenizer/`` while the wheel ships it in ``wordllama/tokenizers/``, and then downloads it from
    Hugging Face (wordllama 0.4.0). Pointing ``cache_dir`` at the installed package makes its cache lookup
    (``cache_dir/tokenizers/...``) find the shipped file, and ``disable_download=True`` turns any missing
    file into an error instead of a download.

    Raises
    ------
    MissingExtraError
        When wordllama is not installed (``pip install 'rankbridge[demo]'``).
    """
    with _logging_left_alone():  # wordllama calls logging.basicConfig(level=INFO) when imported
        _need("wordllama", "wordllama", "demo", "The demo's dense embedding")
        package = importlib.import_module("wordllama")
    return package.WordLlama.load(
        WORDLLAMA_CONFIG, dim=WORDLLAMA_DIM, cache_dir=Path(str(package.__file__)).parent, disable_download=True
    )


@functools.lru_cache(maxsize=1)
def _llamaindex_classes() -> tuple[type[Any], type[Any]]:
    """The LlamaIndex embedding and reranker classes (defined on first use: LlamaIndex loads lazily)."""
    _need("llama_index.core", "llama-index-core", "demo", "The demo's LlamaIndex embedding")
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import NodeWithScore, QueryBundle

    class WordLlamaEmbedding(BaseEmbedding):  # type: ignore[misc]
        """A LlamaIndex embedding over a WordLlama model's ``embed(texts, norm=True)`` (unit vectors)."""

        _model: Any = PrivateAttr()

        def __init__(self, model: Any, **kwargs: Any) -> None:
            kwargs.setdefault("model_name", f"wordllama-{WORDLLAMA_CONFIG}-{WORDLLAMA_DIM}")
            super().__init__(**kwargs)
            self._model = model

        @classmethod
        def class_name(cls) -> str:
            return "WordLlamaEmbedding"

        def _vectors(self, texts: list[str]) -> list[list[float]]:
            out: list[list[float]] = np.asarray(self._model.embed(texts, norm=True), dtype=float).tolist()
            return out

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._vectors([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._vectors([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._vectors(texts)

    class EmbeddingReranker(BaseNodePostprocessor):  # type: ignore[misc]
        """Reorders the retrieved nodes by cosine similarity of their text to the query; keeps ``top_n``."""

        top_n: int = Field(default=10, description="how many nodes to keep")
        _embed_model: Any = PrivateAttr()

        def __init__(self, embed_model: Any, top_n: int = 10) -> None:
            super().__init__()
            self.top_n = top_n
            self._embed_model = embed_model

        @classmethod
        def class_name(cls) -> str:
            return "EmbeddingReranker"

        def _postprocess_nodes(
            self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
        ) -> list[NodeWithScore]:
            if query_bundle is None or not nodes:
                return nodes[: self.top_n]
            query = np.asarray(self._embed_model.get_query_embedding(query_bundle.query_str))
            docs = np.asarray(self._embed_model.get_text_embedding_batch([n.node.get_content() for n in nodes]))
            similarity = docs @ query
            order = sorted(range(len(nodes)), key=lambda i: -similarity[i])  # stable: ties keep BM25's order
            return [NodeWithScore(node=nodes[i].node, score=float(similarity[i])) for i in order[: self.top_n]]

    return WordLlamaEmbedding, EmbeddingReranker


def wordllama_embedding(model: Any = None) -> Any:
    """A LlamaIndex ``BaseEmbedding`` over WordLlama (:func:`load_wordllama`), or over ``model``.

    ``model`` is anything with ``embed(texts, norm=True)`` returning one row per text, e.g. a
    :class:`TrigramEmbedding` in tests. Use it as any LlamaIndex embedding:
    ``VectorStoreIndex(nodes, embed_model=wordllama_embedding())``.
    """
    embedding_class, _ = _llamaindex_classes()
    return embedding_class(load_wordllama() if model is None else model)


def embedding_reranker(embed_model: Any, *, top_n: int = 10) -> Any:
    """A LlamaIndex node postprocessor that reranks by ``embed_model``'s similarity to the query.

    Put it in a query engine: ``RetrieverQueryEngine.from_args(bm25, node_postprocessors=[reranker])``.
    """
    _, reranker_class = _llamaindex_classes()
    return reranker_class(embed_model, top_n=top_n)


def _doc_text(doc: dict[str, Any]) -> str:
    title = doc.get("title") or ""
    return f"{title}. {doc['text']}" if title else str(doc["text"])


def build_strategies(
    golden: GoldenSet, *, k: int = 10, candidates: int | None = None, embed_model: Any = None
) -> dict[str, Any]:
    """The demo's retrievers, built with the frameworks' own classes over ``golden.corpus``.

    Returns ``{name: object}``: the query engine ``RERANKED`` (BM25's top ``candidates``, default ``2 * k``,
    reranked by the embedding to the top ``k``), LangChain BM25 (top ``k``), and the vector index retriever
    ``DENSE`` (top ``candidates``, for the fusion). ``embed_model`` replaces the WordLlama embedding (a
    LlamaIndex embedding; tests pass ``wordllama_embedding(TrigramEmbedding())``).
    """
    if not golden.corpus:
        raise InputError("the golden set has no corpus to build retrievers from")
    check_number("k", k, integer=True, minimum=1, strict=False, none=False)
    depth = 2 * k if candidates is None else candidates
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < k:
        raise InputError(f"candidates must be an int >= k ({k}). Got {candidates!r} instead.")
    _need("llama_index.retrievers.bm25", "llama-index-retrievers-bm25", "demo", "The demo's LlamaIndex BM25")
    _need("langchain_community.retrievers", "langchain-community", "demo", "The demo's LangChain BM25")
    from langchain_community.retrievers import BM25Retriever as LangChainBM25
    from langchain_core.documents import Document
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever as LlamaBM25

    embed = wordllama_embedding() if embed_model is None else embed_model
    ids = list(golden.corpus)
    texts = [_doc_text(golden.corpus[d]) for d in ids]
    nodes = [TextNode(id_=d, text=t) for d, t in zip(ids, texts, strict=True)]
    docs = [Document(id=d, page_content=t, metadata={"doc_id": d}) for d, t in zip(ids, texts, strict=True)]
    bm25 = LlamaBM25.from_defaults(nodes=nodes, similarity_top_k=depth)
    # The app's engine: an LLM would write the answer from the reranked nodes; the demo only retrieves.
    engine = RetrieverQueryEngine.from_args(
        bm25, llm=MockLLM(), node_postprocessors=[embedding_reranker(embed, top_n=k)]
    )
    index = VectorStoreIndex(nodes, embed_model=embed)
    return {
        RERANKED: engine,
        LANGCHAIN_BM25: LangChainBM25.from_documents(docs, k=k),
        DENSE: index.as_retriever(similarity_top_k=depth),
    }


def _cut(run: Run, k: int, name: str, note: str) -> Run:
    """A copy of ``run`` keeping the top ``k`` of each query (errors and latencies kept)."""
    out = Run(name=name, config={**run.config, "strategy": note, "k": k})
    for qid in run.query_ids():
        latency = run.latency.get(qid)
        if qid in run.errors:
            out.add_error(qid, run.errors[qid], latency=latency)
        else:
            out.add(qid, run.hits(qid)[:k], latency=latency)
    return out


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
    #: The deeper lists the reranker and the fusion worked on: ``{"bm25": ..., "dense": ...}`` (``2 * k`` deep).
    candidates: dict[str, Run] = field(default_factory=dict)

    @property
    def recommendation(self) -> Any:
        """The report's recommended strategy (best DCG@10 against the runner-up), or None without a report."""
        return None if self.report is None else self.report.recommendation


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
    embed_model: Any = None,
) -> DemoResult:
    """Run the whole demo and write its outputs under ``out`` (report, run files, history store).

    Parameters
    ----------
    beir:
        A BEIR folder to use instead of the shipped golden set (e.g. an unpacked BEIR download such as ``scifact/``).
    out:
        Output folder: ``report.html``, ``runs/<strategy>.jsonl``, ``history.sqlite``. The history store
        is kept between runs (each demo adds one record per strategy: the report's trend); the report and
        run files are replaced.
    max_queries:
        Use only the first N queries (a quick look at a big set).
    embed_model:
        A LlamaIndex embedding to use instead of WordLlama (tests pass the trigram double).
    """
    # lazy: `rankbridge --help` imports this module; what only a demo run needs loads when it runs
    from rankbridge.analysis import compare, failures, slices
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
        golden = GoldenSet(
            keep, Qrels({q: d for q, d in golden.qrels.items() if q in kept}), corpus=golden.corpus, name=golden.name
        )
    log(f"golden set {golden.name!r}: {len(golden)} questions, {len(golden.corpus or {})} passages")
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {"load": time.perf_counter() - t0}

    t = time.perf_counter()
    log(
        "building the retrievers (LlamaIndex BM25 and a query engine reranking it by WordLlama, LangChain BM25, "
        "a LlamaIndex vector index on WordLlama)..."
    )
    strategies = build_strategies(golden, k=k, embed_model=embed_model)
    timings["index"] = time.perf_counter() - t
    raw: dict[str, Run] = {}
    for name, retriever in strategies.items():
        t = time.perf_counter()
        # The engine and the vector index run as built (k=None): BM25's and the index's own depth, the
        # reranker's top k; an explicit k would cut the engine's BM25 to k before the reranker sees it.
        raw[name] = run_retriever(
            retriever,
            golden,
            k=k if name == LANGCHAIN_BM25 else None,
            name=name,
            progress=progress,
            id_from=["id", "metadata:doc_id"],
        )
        timings[f"retrieve {name}"] = time.perf_counter() - t
    engine_run = raw[RERANKED]
    bm25_candidates = engine_run.to_stage("retrieved")
    dense_candidates = raw[DENSE]
    # Every compared list is k deep: the candidates are deeper, and a deeper list would win at cut-offs past k.
    runs: dict[str, Run] = {
        BASELINE: _cut(bm25_candidates, k, BASELINE, f"BM25, the query engine's 'retrieved' stage cut at {k}"),
        RERANKED: engine_run,
        LANGCHAIN_BM25: raw[LANGCHAIN_BM25],
        DENSE: _cut(dense_candidates, k, DENSE, "VectorStoreIndex on WordLlama"),
        HYBRID: reciprocal_rank_fusion([bm25_candidates, dense_candidates], depth=k, name=HYBRID),
    }

    t = time.perf_counter()
    evaluations: dict[str, Any] = {name: evaluate(golden.qrels, run, list(metrics)) for name, run in runs.items()}
    timings["evaluate"] = time.perf_counter() - t
    notes: list[str] = []
    ragas: dict[str, Any] = {}
    t = time.perf_counter()
    try:
        from rankbridge.integrations.ragas import evaluate_ragas, join  # lazy: the ragas extra

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
    result = DemoResult(
        golden,
        runs,
        comparison,
        fails,
        by_category,
        ragas=ragas,
        notes=notes,
        timings=timings,
        candidates={"bm25": bm25_candidates, "dense": dense_candidates},
    )

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
    """Build the report (kept on ``result.report``) and write it as HTML when its extra is installed.

    The report recommends a strategy (best DCG@10), pairs ``x`` with ``x+rerank``, and draws the trend of
    the runs saved in the history store (this demo's and the earlier ones).
    """
    from rankbridge.reports import build_report  # lazy: jinja2 and matplotlib only for the report

    result.report = build_report(
        result.comparison,
        failures=result.failures,
        slices=result.slices,
        runs=result.runs,
        golden=result.golden,
        history=result.store_path,
        title=f"rankbridge demo: {result.golden.name}",
    )
    path = outdir / "report.html"
    try:
        result.report.save(path)
    except MissingExtraError as exc:
        result.notes.append(f"HTML report skipped: {exc}")
        return None
    return path
