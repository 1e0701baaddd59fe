"""BEIR folders whose files may be gzip-compressed: ``corpus.jsonl[.gz]``, ``queries.jsonl[.gz]``,
``qrels/<split>.tsv[.gz]`` (BEIR's zips and the HF hub ship ``.jsonl.gz``).

A folder without ``.gz`` files is read by :func:`rankbridge.io.read_beir` itself; a folder with some reads
the same way (same fields, same checks, same result), with errors naming the ``.gz`` file and line.

Examples
--------
>>> import gzip, json, tempfile, pathlib
>>> root = pathlib.Path(tempfile.mkdtemp()) / "scurvy"
>>> (root / "qrels").mkdir(parents=True)
>>> with gzip.open(root / "queries.jsonl.gz", "wt") as fh:
...     _ = fh.write(json.dumps({"_id": "q1", "text": "what causes scurvy?"}) + "\\n")
>>> with gzip.open(root / "corpus.jsonl.gz", "wt") as fh:
...     _ = fh.write(json.dumps({"_id": "d1", "title": "Scurvy", "text": "A lack of vitamin C."}) + "\\n")
>>> _ = (root / "qrels" / "test.tsv").write_text("query-id\\tcorpus-id\\tscore\\nq1\\td1\\t1\\n")
>>> golden = read_golden_beir(root)
>>> golden.name, golden.qrels.to_dict(), golden.corpus["d1"]["title"]
('scurvy', {'q1': {'d1': 1}}, 'Scurvy')
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from rankbridge.errors import ParseError
from rankbridge.io._open import iter_jsonl_any, open_text
from rankbridge.io.beir import _qrels_rows, corpus_from_lines, judged_queries, queries_from_lines, read_beir
from rankbridge.types import GoldenSet, Qrels

__all__ = ["find_beir_file", "is_beir_folder", "read_golden_beir"]


def find_beir_file(folder: str | os.PathLike[str], name: str) -> Path | None:
    """``folder/name`` or ``folder/name.gz``, whichever exists (the plain file first); None if neither."""
    for candidate in (Path(folder) / name, Path(folder) / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def is_beir_folder(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a folder with ``queries.jsonl[.gz]`` and a ``qrels`` folder."""
    p = Path(path)
    return p.is_dir() and find_beir_file(p, "queries.jsonl") is not None and (p / "qrels").is_dir()


def _qrels(path: Path) -> Qrels:
    with open_text(path) as fh:
        try:
            data = _qrels_rows(fh, str(path), path)
        except (OSError, EOFError, zlib.error) as exc:  # a truncated or non-gzip .gz
            raise ParseError(f"cannot read file: {exc}", source=str(path)) from None
    return Qrels._trusted(data)


def read_golden_beir(path: str | os.PathLike[str], *, split: str = "test", load_corpus: bool = True) -> GoldenSet:
    """Read a BEIR folder, plain or with ``.gz`` files, into a :class:`~rankbridge.GoldenSet`.

    Parameters
    ----------
    path:
        The folder with ``queries.jsonl[.gz]``, ``corpus.jsonl[.gz]`` and ``qrels/<split>.tsv[.gz]``.
    split:
        The qrels split; only the queries judged in it are kept, as BEIR evaluates them.
    load_corpus:
        Read the corpus too (False skips a large file when only queries and qrels are needed).
    """
    root = Path(path)
    qrels_path = find_beir_file(root / "qrels", f"{split}.tsv")
    queries_path = find_beir_file(root, "queries.jsonl")
    corpus_path = find_beir_file(root, "corpus.jsonl") if load_corpus else None
    if qrels_path is None:
        qdir = root / "qrels"
        found = sorted({p.name.split(".")[0] for p in qdir.glob("*.tsv*")}) if qdir.is_dir() else []
        raise ParseError(
            f"expected a BEIR folder with qrels/{split}.tsv (or .tsv.gz); found splits: {', '.join(found) or 'none'}",
            source=str(root),
        )
    if queries_path is None:
        raise ParseError("expected queries.jsonl (or queries.jsonl.gz) in the BEIR folder", source=str(root))
    if load_corpus and corpus_path is None:
        raise ParseError(
            "expected corpus.jsonl (or corpus.jsonl.gz) in the BEIR folder (load_corpus=False skips it)",
            source=str(root),
        )
    paths = [p for p in (qrels_path, queries_path, corpus_path) if p is not None]
    if not any(p.suffix.lower() == ".gz" for p in paths):
        return read_beir(root, split=split, load_corpus=load_corpus)
    qrels = _qrels(qrels_path)
    queries = queries_from_lines(iter_jsonl_any(queries_path), str(queries_path))
    golden = judged_queries(qrels, queries, queries_path.name, str(qrels_path))
    corpus = corpus_from_lines(iter_jsonl_any(corpus_path), str(corpus_path)) if corpus_path is not None else None
    qrels.name = f"{root.name}/{split}"
    return GoldenSet(golden, qrels, corpus=corpus, name=root.name)
