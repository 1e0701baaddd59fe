"""LlamaIndex's retrieval evaluation data, read without importing LlamaIndex.

* A saved ``EmbeddingQAFinetuneDataset`` (``generate_question_context_pairs(...).save_json(path)``, removed
  from llama-index-core in 0.14.21): JSON ``{"queries": {id: text}, "corpus": {id: text},
  "relevant_docs": {id: [doc ids]}, "mode": "text"}``. :func:`read_golden_llamaindex` reads the file,
  :func:`golden_from_llamaindex` the same mapping or the dataset object itself.
* ``RetrieverEvaluator`` results (``RetrievalEvalResult`` objects or their dicts, as ``evaluate_dataset``
  returned them, one per query in the dataset's order): :func:`qrels_run_from_llamaindex` turns their
  ``expected_ids`` / ``retrieved_ids`` into qrels and a ranked run.

Examples
--------
>>> import json, tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "qa_dataset.json"
>>> _ = p.write_text(json.dumps({
...     "queries": {"q1": "What causes scurvy?"},
...     "corpus": {"n1": "Scurvy is caused by a lack of vitamin C.", "n2": "Hamlet is a play."},
...     "relevant_docs": {"q1": ["n1"]},
...     "mode": "text",
... }))
>>> golden = read_golden_llamaindex(p)
>>> golden.name, golden.texts(), golden.qrels.to_dict(), sorted(golden.corpus)
('qa_dataset', {'q1': 'What causes scurvy?'}, {'q1': {'n1': 1}}, ['n1', 'n2'])
>>> results = [{"query": "What causes scurvy?", "expected_ids": ["n1"], "retrieved_ids": ["n2", "n1"]}]
>>> qrels, run = qrels_run_from_llamaindex(results, queries=golden)
>>> qrels.to_dict(), run.ranking("q1")
({'q1': {'n1': 1}}, ['n2', 'n1'])
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rankbridge.errors import InputError, ParseError
from rankbridge.io._open import clip, json_line, names, read_text
from rankbridge.io.tables import as_id, parse_id_list, stable_query_id
from rankbridge.types import GoldenSet, Qrels, Query, Run

__all__ = ["golden_from_llamaindex", "qrels_run_from_llamaindex", "read_golden_llamaindex"]

_KEYS = ("queries", "corpus", "relevant_docs")


def _str_map(obj: Any, key: str, source: str) -> dict[str, str]:
    value = obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)
    if not isinstance(value, Mapping):
        raise ParseError(f"{key!r}: expected an object of id -> text, found {type(value).__name__}", source=source)
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(v, str):
            raise ParseError(f"{key}[{clip(k)}]: expected text, found {type(v).__name__} {clip(v)}", source=source)
        try:
            out[as_id(k)] = v
        except InputError as exc:
            raise ParseError(f"{key}[{clip(k)}]: {exc}", source=source) from None
    return out


def golden_from_llamaindex(data: Any, *, name: str = "llamaindex", source: str | None = None) -> GoldenSet:
    """A golden set from an ``EmbeddingQAFinetuneDataset`` (the object, or its JSON as a mapping).

    Every query must have relevant docs and every relevant doc must be in the corpus; errors name the
    key. ``mode`` other than ``"text"`` (an image dataset) is refused.
    """
    src = source or f"<{type(data).__name__}>"
    if isinstance(data, Mapping):
        missing = [k for k in _KEYS if k not in data]
        if missing:
            raise ParseError(
                f"expected an EmbeddingQAFinetuneDataset with 'queries', 'corpus' and 'relevant_docs'; "
                f"missing {', '.join(map(repr, missing))} (found keys: {names(data, quote=True)})",
                source=src,
            )
        mode = data.get("mode", "text")
        relevant_raw = data["relevant_docs"]
    else:
        if not all(hasattr(data, k) for k in _KEYS):
            raise InputError(f"expected an EmbeddingQAFinetuneDataset (queries, corpus, relevant_docs), found {src}")
        mode = getattr(data, "mode", "text")
        relevant_raw = data.relevant_docs
    if mode not in (None, "text"):
        raise ParseError(f"'mode': expected 'text', found {clip(mode)}", source=src)
    queries = _str_map(data, "queries", src)
    corpus = _str_map(data, "corpus", src)
    if not isinstance(relevant_raw, Mapping):
        raise ParseError(
            f"'relevant_docs': expected an object of id -> [doc ids], found {clip(relevant_raw)}", source=src
        )
    relevant: dict[str, dict[str, int]] = {}
    for qid, docs in relevant_raw.items():
        try:
            ids = parse_id_list(docs)
        except InputError as exc:
            raise ParseError(f"relevant_docs[{clip(qid)}]: {exc}", source=src) from None
        try:
            q = as_id(qid)
        except InputError as exc:
            raise ParseError(f"relevant_docs[{clip(qid)}]: {exc}", source=src) from None
        if q not in queries:
            raise ParseError(f"relevant_docs[{clip(qid)}]: expected a query id of 'queries', found none", source=src)
        unknown = [d for d in ids if d not in corpus]
        if unknown:
            raise ParseError(f"relevant_docs[{clip(qid)}]: doc {clip(unknown[0])} is not in 'corpus'", source=src)
        relevant[q] = dict.fromkeys(ids, 1)
    unjudged = [q for q in queries if not relevant.get(q)]
    if unjudged:
        raise ParseError(
            f"relevant_docs: expected relevant docs for every query; {len(unjudged)} have none "
            f"(e.g. {clip(unjudged[0])})",
            source=src,
        )
    blank = [q for q in queries if not queries[q].strip()]  # a retriever asked "" scores the query as noise
    if blank:
        raise ParseError(
            f"queries[{clip(blank[0])}]: expected the question text, found {clip(queries[blank[0]])}", source=src
        )
    golden = [Query(q, queries[q], reference_context_ids=tuple(relevant[q])) for q in queries]
    docs = {d: {"title": "", "text": t, "metadata": {}} for d, t in corpus.items()}
    return GoldenSet(golden, Qrels._trusted(relevant, name=name), corpus=docs, name=name)


def read_golden_llamaindex(path: str | os.PathLike[str], *, name: str | None = None) -> GoldenSet:
    """Read a saved ``EmbeddingQAFinetuneDataset`` JSON file (see the module docstring)."""
    src = str(path)
    data = json_line(read_text(path), src, None, "JSON")
    if not isinstance(data, dict):
        raise ParseError(f"expected a JSON object, found {type(data).__name__}", source=src)
    return golden_from_llamaindex(data, name=name or Path(path).stem, source=src)


def _field(result: Any, key: str, where: str) -> Any:
    if isinstance(result, Mapping):
        if key not in result:
            raise InputError(f"{where}: missing field {key!r} (found fields: {names(result)})")
        return result[key]
    if not hasattr(result, key):
        raise InputError(f"{where}: expected a RetrievalEvalResult with {key!r}, found {type(result).__name__}")
    return getattr(result, key)


def qrels_run_from_llamaindex(
    results: Iterable[Any],
    *,
    queries: GoldenSet | Mapping[str, str] | None = None,
    name: str = "llamaindex",
) -> tuple[Qrels, Run]:
    """Qrels and a ranked run from LlamaIndex ``RetrieverEvaluator`` results.

    Parameters
    ----------
    results:
        ``RetrievalEvalResult`` objects (or dicts with ``query``, ``expected_ids``, ``retrieved_ids``).
    queries:
        The golden set or ``{query id: text}`` the results were computed on: each result's ``query`` text
        is looked up there to get its id. Without it, ids are :func:`~rankbridge.io.tables.stable_query_id`
        of the text (what the table readers generate for a question without an id).
    name:
        The run's and the qrels' name.

    Returns
    -------
    (Qrels, Run)
        Expected ids as label 1; retrieved ids in rank order (result lists carry no scores).
    """
    by_text: dict[str, list[str]] = {}
    if queries is not None:
        texts = queries.texts() if isinstance(queries, GoldenSet) else {as_id(k): v for k, v in queries.items()}
        for qid, text in texts.items():
            by_text.setdefault(text.strip(), []).append(qid)
    data: dict[str, dict[str, int]] = {}
    ranked: dict[str, list[str]] = {}
    for i, result in enumerate(results):
        where = f"results[{i}]"
        text = _field(result, "query", where)
        if not isinstance(text, str):
            raise InputError(f"{where}: 'query': expected the query text, found {type(text).__name__}")
        if queries is not None:
            ids = by_text.get(text.strip(), [])
            if len(ids) != 1:
                found = "no query" if not ids else f"{len(ids)} queries ({', '.join(map(repr, ids))})"
                raise InputError(f"{where}: 'query' {text[:60]!r} matches {found} of the golden set by text")
            qid = ids[0]
        else:
            qid = stable_query_id(text)
        if qid in data:
            raise InputError(f"{where}: query {qid!r} ({text[:60]!r}) appears twice")
        try:
            expected = parse_id_list(_field(result, "expected_ids", where))
            retrieved = parse_id_list(_field(result, "retrieved_ids", where))
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        data[qid] = dict.fromkeys(expected, 1)
        ranked[qid] = retrieved
    if not data:
        raise InputError("results: expected at least one RetrievalEvalResult, found none")
    return Qrels._trusted(data, name=name), Run.from_ranked(ranked, name=name)
