"""``read_golden``: one call for every form a golden set comes in, chosen by type, suffix and content.

=====================================================  ==================================================
what you pass                                          read by
=====================================================  ==================================================
a folder (BEIR: ``queries.jsonl[.gz]``, ``qrels/``)     :func:`~rankbridge.io.beir_gz.read_golden_beir`
``*.json`` with ``queries``/``corpus``/``relevant_docs``  :func:`~rankbridge.io.llamaindex_json.read_golden_llamaindex`
``*.jsonl[.gz]``, ``*.csv``, ``*.tsv``, ``*.parquet``   :func:`~rankbridge.io.tables.read_golden_jsonl` /
                                                       ``read_golden_csv`` / ``read_golden_parquet``
... whose rows have ``reference_contexts`` (RAGAS)     :func:`~rankbridge.io.ragas_testset.golden_from_ragas`
                                                       (needs ``corpus=``)
a pandas DataFrame                                     :func:`~rankbridge.io.tables.golden_from_pandas`
an HF ``Dataset`` / ``DatasetDict``                    :func:`~rankbridge.io.tables.golden_from_hf`
a ragas ``Testset`` / ``EvaluationDataset``            :func:`~rankbridge.io.ragas_testset.golden_from_ragas`
an ir_datasets dataset (``queries_iter``...)           :func:`~rankbridge.io.ir_datasets.golden_from_ir_datasets`
an ``EmbeddingQAFinetuneDataset`` (or its dict)         :func:`~rankbridge.io.llamaindex_json.golden_from_llamaindex`
a list of dicts                                        :func:`~rankbridge.io.tables.golden_from_rows`
a :class:`~rankbridge.GoldenSet`                       returned as it is
=====================================================  ==================================================

A table whose rows have ``reference_contexts`` (texts) but no relevant-ids column is a RAGAS testset: its
contexts are matched to ``corpus=``. Keyword options go to the reader chosen; one it does not take is an
error naming it.

Examples
--------
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "golden.csv"
>>> _ = p.write_text("question,relevant_ids\\nwhat causes scurvy?,d1;d7\\n")
>>> read_golden(p).qrels.to_dict()
{'q32f53d8b6db8': {'d1': 1, 'd7': 1}}
>>> read_golden(p, split="dev")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
rankbridge.errors.InputError: read_golden: option 'split' does not apply to a CSV file (read by read_golden_csv); ...
"""

from __future__ import annotations

import csv
import inspect
import os
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rankbridge.errors import InputError, ParseError
from rankbridge.io import tables
from rankbridge.io._open import clip, decode_error, iter_jsonl_any, json_line, open_text, plain_suffix, read_text
from rankbridge.io.beir_gz import read_golden_beir
from rankbridge.io.ir_datasets import golden_from_ir_datasets
from rankbridge.io.llamaindex_json import golden_from_llamaindex, read_golden_llamaindex
from rankbridge.io.ragas_testset import golden_from_ragas
from rankbridge.io.tables import CANDIDATES
from rankbridge.types import GoldenSet

__all__ = ["read_golden"]

_LLAMAINDEX_KEYS = ("queries", "corpus", "relevant_docs")


def _call(reader: Callable[..., GoldenSet], what: str, first: Any, options: Mapping[str, Any], *args: Any) -> GoldenSet:
    params = inspect.signature(reader).parameters
    takes = [n for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    for key in options:
        if key not in takes:
            raise InputError(
                f"read_golden: option {key!r} does not apply to {what} (read by {reader.__name__}); "
                f"it takes: {', '.join(takes) or 'no options'}"
            )
    return reader(first, *args, **options)


def _is_ragas(columns: list[str]) -> bool:
    judged = set(CANDIDATES["relevant"]) | set(CANDIDATES["labels"])
    return "reference_contexts" in columns and not judged & set(columns)


def _ragas(source: Any, what: str, options: dict[str, Any]) -> GoldenSet:
    corpus = options.pop("corpus", None)
    if corpus is None:
        raise InputError(
            f"read_golden: {what} is a RAGAS testset (its rows have 'reference_contexts' texts, no relevant ids); "
            "pass corpus= (a {id: text} mapping, a GoldenSet or a BEIR folder) to match the contexts to ids"
        )
    return _call(golden_from_ragas, f"{what} (a RAGAS testset)", source, options, corpus)


def _first_columns_jsonl(path: Path) -> list[str]:
    for _, obj in iter_jsonl_any(path):
        return list(obj)
    return []


def _first_columns_csv(path: Path) -> list[str]:
    with open_text(path) as fh:
        delimiter = "\t" if plain_suffix(path) == ".tsv" else ","
        try:
            return [c.strip().lstrip("\ufeff") for c in next(csv.reader(fh, delimiter=delimiter), [])]
        except UnicodeDecodeError as exc:
            raise decode_error(path, exc) from None
        except csv.Error as exc:
            raise ParseError(f"expected CSV, found {exc}", source=str(path), line=1) from None
        except (OSError, EOFError, zlib.error) as exc:  # a truncated or non-gzip .gz
            raise ParseError(f"cannot read file: {exc}", source=str(path)) from None


def _read_path(path: Path, options: dict[str, Any]) -> GoldenSet:
    if path.is_dir():
        return _call(read_golden_beir, "a BEIR folder", path, options)
    if not path.exists():
        raise InputError(f"read_golden: {path}: no such file or folder")
    suffix = plain_suffix(path)
    if suffix == ".json":
        data = json_line(read_text(path), str(path), None, "JSON")
        if isinstance(data, dict) and all(k in data for k in _LLAMAINDEX_KEYS):
            return _call(read_golden_llamaindex, "a LlamaIndex QA dataset", path, options)
        if isinstance(data, dict):
            found = ", ".join(clip(k, 40) for k in list(data)[:10]) + (", ..." if len(data) > 10 else "")
        else:
            found = type(data).__name__
        raise ParseError(
            "expected a LlamaIndex EmbeddingQAFinetuneDataset JSON ('queries', 'corpus', 'relevant_docs'); "
            f"found {found}. One question per line is .jsonl",
            source=str(path),
        )
    if suffix == ".jsonl":
        if _is_ragas(_first_columns_jsonl(path)):
            return _ragas(path, str(path), options)
        return _call(tables.read_golden_jsonl, "a JSON Lines file", path, options)
    if suffix in (".csv", ".tsv"):
        if _is_ragas(_first_columns_csv(path)):
            return _ragas(path, str(path), options)
        return _call(tables.read_golden_csv, "a CSV file", path, options)
    if suffix == ".parquet":
        return _call(tables.read_golden_parquet, "a Parquet file", path, options)
    raise InputError(
        f"read_golden: {path}: expected a BEIR folder or a .json, .jsonl, .jsonl.gz, .csv, .tsv or .parquet file; "
        f"found {suffix or 'no suffix'}"
    )


def read_golden(source: Any, **options: Any) -> GoldenSet:
    """Read a golden set from any supported form (see the module docstring's table).

    Parameters
    ----------
    source:
        A path (file or BEIR folder) or an object: DataFrame, HF Dataset, ragas testset, ir_datasets
        dataset, LlamaIndex QA dataset, list of dicts, GoldenSet.
    **options:
        Options of the reader chosen (``corpus=``, ``qrels=``, ``question_column=``, ``split=`` ...).
    """
    if isinstance(source, GoldenSet):
        if options:
            raise InputError(f"read_golden: a GoldenSet takes no options, found {', '.join(options)}")
        return source
    if isinstance(source, (str, os.PathLike)):
        return _read_path(Path(source), dict(options))
    module = type(source).__module__.split(".", 1)[0]
    if module == "pandas" and hasattr(source, "columns"):
        if _is_ragas([str(c) for c in source.columns]):
            return _ragas(source, "the DataFrame", dict(options))
        return _call(tables.golden_from_pandas, "a DataFrame", source, options)
    if module == "datasets":
        return _call(tables.golden_from_hf, "an HF dataset", source, options)
    if module == "ragas":
        return _ragas(source, f"the {type(source).__name__}", dict(options))
    if callable(getattr(source, "queries_iter", None)) and callable(getattr(source, "qrels_iter", None)):
        return _call(golden_from_ir_datasets, "an ir_datasets dataset", source, options)
    if (isinstance(source, Mapping) and all(k in source for k in _LLAMAINDEX_KEYS)) or (
        not isinstance(source, Mapping) and all(hasattr(source, k) for k in _LLAMAINDEX_KEYS)
    ):
        return _call(golden_from_llamaindex, "a LlamaIndex QA dataset", source, options)
    if isinstance(source, (list, tuple)):
        columns = list(source[0]) if source and isinstance(source[0], Mapping) else []
        if _is_ragas(columns):
            return _ragas(list(source), "the rows", dict(options))
        return _call(tables.golden_from_rows, "rows", source, options)
    kind = type(source).__name__ if module == "builtins" else f"{module}.{type(source).__name__}"
    raise InputError(
        "read_golden: expected a path, a DataFrame (pandas: a polars or pyarrow table's .to_pandas()), an HF "
        f"Dataset, a ragas testset, an ir_datasets dataset, a LlamaIndex QA dataset or a list of dicts; found {kind}"
    )
