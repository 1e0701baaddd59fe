"""What the runner's normalisation of one result costs, by the form a retriever returns (no engine, one thread).

Run:  .venv/bin/python benchmarks/bench_normalise.py [--calls 200] [--repeats 300]

Each row is ``adapter.normalize(raw, 10)`` -- the half of a query the runner spends turning ten results into
the compact hits a Run keeps -- best of ``repeats`` timings of ``calls`` calls, in µs per call: short timings,
many of them, so that some miss every preemption on a shared machine. The framework rows also time the
framework's own accessors the normalisation reads (LlamaIndex's ``get_content()`` and ``node_id`` for ten
nodes), to show what part is theirs.
"""

from __future__ import annotations

import argparse
import operator
import sys
import timeit
import warnings
from collections.abc import Callable
from typing import Any

from rankbridge import Hit
from rankbridge.frameworks import adapt

warnings.simplefilter("ignore", DeprecationWarning)


def _plain_forms() -> dict[str, list[Any]]:
    hits = [Hit(f"d{i}", 1.0 - i / 10, f"text {i}") for i in range(10)]
    return {
        "10 (id, score) pairs": [(h.doc_id, h.score) for h in hits],
        "10 id strings": [h.doc_id for h in hits],
        "10 Hits": hits,
        "10 dicts {id, score, text}": [{"id": h.doc_id, "score": h.score, "text": h.text} for h in hits],
    }


def rows(calls: int, repeats: int) -> list[tuple[str, float]]:
    def best(fn: Callable[[], Any]) -> float:
        return min(timeit.repeat(fn, number=calls, repeat=repeats)) / calls * 1e6

    out: list[tuple[str, float]] = []
    for form, raw in _plain_forms().items():
        r = adapt(lambda q, k, raw=raw: raw)
        out.append((f"f(query, k) -> {form}", best(lambda r=r, raw=raw: r.normalize(raw, 10))))
    try:
        from llama_index.core.schema import NodeWithScore, TextNode
    except ImportError:
        print("llama-index-core not installed: skipping its rows", file=sys.stderr)
    else:
        nodes = [NodeWithScore(node=TextNode(id_=f"d{i}", text=f"text {i}"), score=1.0 - i / 10) for i in range(10)]
        objs = [n.node for n in nodes]
        for keep_text in (True, False):
            r = adapt(lambda q, k: nodes, keep_text=keep_text)
            r.normalize(nodes, 10)  # the first reading of a type learns its attributes
            label = "LlamaIndex: 10 NodeWithScore" + ("" if keep_text else ", keep_text=False")
            out.append((label, best(lambda r=r: r.normalize(nodes, 10))))
        content, node_id = operator.methodcaller("get_content"), operator.attrgetter("node_id")
        out.append(("  of which LlamaIndex's get_content() x 10", best(lambda: list(map(content, objs)))))
        out.append(("  of which LlamaIndex's node_id x 10", best(lambda: list(map(node_id, objs)))))
        # last: building the adapter tells the normalisation that TextNode's get_content() and node_id return
        # its text and id_ attributes (read directly from then on, in this process, by every path)
        from llama_index.core.base.base_retriever import BaseRetriever

        class Stub(BaseRetriever):
            def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
                return nodes

        for keep_text in (True, False):
            r = adapt(Stub(), keep_text=keep_text)
            r.normalize(nodes, 10)
            label = "LlamaIndexRetriever (the adapter): 10 NodeWithScore" + ("" if keep_text else ", keep_text=False")
            out.append((label, best(lambda r=r: r.normalize(nodes, 10))))
    try:
        from langchain_core.documents import Document
    except ImportError:
        print("langchain-core not installed: skipping its rows", file=sys.stderr)
    else:
        docs = [Document(page_content=f"text {i}", id=f"d{i}") for i in range(10)]
        r = adapt(lambda q, k: docs)
        r.normalize(docs, 10)
        out.append(("LangChain: 10 Documents", best(lambda: r.normalize(docs, 10))))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}; best of {args.repeats} x {args.calls} calls, one thread")
    print("")
    print("| normalising one result | µs per call |")
    print("| --- | ---: |")
    for label, us in rows(args.calls, args.repeats):
        print(f"| {label} | {us:.2f} |")


if __name__ == "__main__":
    main()
