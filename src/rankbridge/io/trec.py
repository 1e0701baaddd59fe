"""TREC qrels and run files, read as trec_eval reads them.

* Qrels: ``qid iter docno label`` separated by any whitespace. Labels are integers (negative allowed).
* Run: ``qid Q0 docno rank score tag [anything else]``. The rank column is ignored (trec_eval re-ranks
  by score, ties by docno descending); columns after the tag are ignored, as trec_eval does.
* Both: CRLF line endings, blank lines, whole-line ``#`` comments and unsorted lines are accepted. A ``#``
  inside an id is part of the id. A UTF-8 byte-order mark at the start is skipped. Lines end at LF (a lone
  CR is whitespace, as in trec_eval).

What trec_eval would read differently from Python is refused, naming the file and line: fields separated by
Unicode whitespace (``U+00A0``, ``U+2003``: trec_eval splits on ASCII spaces and tabs only), labels that are
not ASCII integers fitting in 64 bits (``٣``, ``1_0``, ``2**63``), and scores that are not finite ASCII
numbers (``inf``, ``nan``, ``1_0``, a number too large for a float).

Duplicate rule: a (query, doc) pair that appears twice is an error naming both lines (trec_eval refuses
such files too), unless ``duplicates="first"``, which keeps the first line and counts the others in
``Run.duplicates``. In qrels, a repeated pair with the same label is harmless and kept once; with a
different label it is an error.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from itertools import chain, groupby, repeat
from pathlib import Path
from typing import Any, Literal, TextIO

import numpy as np

from rankbridge.errors import ParseError, _LineReaderNeeded
from rankbridge.io._atomic import atomic_write
from rankbridge.io._open import _OTHER_SPACE, ENCODING, clip, decode_error, label_problem, parse_label, unicode_space
from rankbridge.types import Qrels, Run

__all__ = ["read_qrels", "read_run", "write_qrels", "write_run"]


def _lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number, fields) of every non-blank, non-comment line.

    Lines end at LF only and fields are split on ASCII whitespace, as trec_eval splits them: a lone CR is
    a space. A line that Python would split elsewhere (a Unicode space, an ASCII information separator
    ``\\x1c``-``\\x1f``) or that holds a NUL is refused. The check runs once per block of lines, and per
    line only in a block that holds such a character.
    """
    try:
        fh = open(path, encoding=ENCODING, newline="\n")
    except OSError as exc:
        raise ParseError(f"cannot open file: {exc.strerror}", source=str(path)) from None
    lineno = 0
    with fh:
        try:
            while lines := fh.readlines(1 << 20):
                block = "".join(lines)
                suspect = not block.isascii() or any(c in block for c in _SUSPECT)
                for line in lines:
                    lineno += 1
                    fields = line.split()
                    if suspect and fields:
                        _check_separators(line, str(path), lineno)
                    if not fields or fields[0].startswith("#"):
                        continue
                    yield lineno, fields
        except UnicodeDecodeError as exc:
            raise decode_error(path, exc) from None


_SUSPECT = ("\x00", "\x1c", "\x1d", "\x1e", "\x1f")


def _check_separators(line: str, src: str, lineno: int) -> None:
    if "\x00" in line:
        raise ParseError(f"found a NUL character in {clip(line.rstrip())}", source=src, line=lineno)
    space = unicode_space(line)
    if space is not None:
        raise ParseError(
            f"found the whitespace character {space} in {clip(line.rstrip())}; trec_eval separates fields with "
            "ASCII spaces and tabs only, so this line means something else to it",
            source=src,
            line=lineno,
        )


def _columns(f: list[str]) -> str:
    return clip(" ".join(f))


def read_qrels(path: str | os.PathLike[str], *, name: str | None = None) -> Qrels:
    """Read a TREC qrels file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "qrels.txt"
    >>> _ = p.write_text("# judged by hand\\nq1 0 d1 2\\r\\nq1 0 d2 0\\n")
    >>> read_qrels(p)["q1"]
    {'d1': 2, 'd2': 0}
    """
    fast = _bulk_qrels(path, name)
    if fast is not None:
        return fast
    src = str(path)
    data: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    labels: dict[str, int] = {}  # label text -> label: a file holds a handful of distinct labels
    for lineno, f in _lines(path):
        if len(f) != 4:
            raise ParseError(
                f"expected 4 columns 'query iteration doc label', found {len(f)}: {_columns(f)}",
                source=src,
                line=lineno,
            )
        qid, _, doc, label_text = f
        label = labels.get(label_text)
        if label is None:
            label = parse_label(label_text)
            if label is None:
                raise ParseError(label_problem(label_text), source=src, line=lineno)
            labels[label_text] = label
        docs = data.setdefault(qid, {})
        old = docs.get(doc)
        if old is not None and old != label:
            raise ParseError(
                f"doc {clip(doc)} of query {clip(qid)} is judged {label} here but {old} on line "
                f"{first_line[(qid, doc)]}",
                source=src,
                line=lineno,
            )
        if old is None:
            first_line[(qid, doc)] = lineno
            docs[doc] = label
    if not data:
        raise ParseError("no judgments found (the file is empty or has only comments)", source=src)
    return Qrels._trusted(data, name=name or Path(path).name)


_INF = float("inf")


def _score_problem(text: str) -> str:
    if not text.isascii() or "_" in text:
        return f"expected a score in ASCII digits (as trec_eval reads it), found {clip(text)}"
    if float(text) != float(text):
        return f"expected a numeric score in column 5, found NaN ({clip(text)})"
    if text.strip("+-").lower().startswith("inf"):
        return f"expected a finite score in column 5, found {clip(text)}"
    return f"expected a score in column 5 that fits in a float, found a number of {len(text)} characters"


# --------------------------------------------------------------------------------------------------
# Bulk parsing: a block of lines at a time by C-level string methods, no Python loop per line. It
# handles the common file (UTF-8 without odd whitespace, exactly the columns of the format on every
# line, no comment or blank line, plain scores, no repeated pair) and gives up (None) on anything else,
# which the line-by-line readers above then read again -- and refuse with the file and line.
# --------------------------------------------------------------------------------------------------

#: Ends every line before a block is split, so that each line's fields are followed by this one token:
#: a block whose every (columns + 1)-th token is it has exactly ``columns`` fields on every line.
_EOL = "\x01"
#: Characters read at a time. Small blocks keep a block's token list and strings in the CPU cache: one
#: ``split`` of a 4 M-character block was measured slower than Python's loop over the lines, one of
#: 64 K characters faster (``bench_files.py``, "From TREC files" in docs/benchmarks.md).
_BLOCK = 1 << 16
_SEPARATORS = ("\x1c", "\x1d", "\x1e", "\x1f")  # ASCII characters Python splits on and trec_eval does not


def _token_blocks(path: str | os.PathLike[str], columns: int) -> Iterator[tuple[list[str], bool]]:
    """Each block of whole lines split once: ``columns`` fields and the end-of-line token per line.

    Also whether the block is plain (ASCII without ``_``: its scores need no further check). A block
    with anything else on a line (other columns, a blank or comment line, whitespace trec_eval reads
    differently) raises :class:`_LineReaderNeeded`.
    """
    width = columns + 1
    try:
        with open(path, encoding=ENCODING, newline="\n") as fh:
            while block := fh.read(_BLOCK):
                if not block.endswith("\n"):
                    block += fh.readline()  # end the block at a line's end
                    if not block.endswith("\n"):
                        block += "\n"  # the file's last line has no newline
                if _EOL in block or "\x00" in block:
                    raise _LineReaderNeeded
                ascii_only = block.isascii()
                odd = not ascii_only or any(c in block for c in _SEPARATORS)
                if odd and _OTHER_SPACE.search(block):  # whitespace trec_eval does not split on
                    raise _LineReaderNeeded
                tokens = block.replace("\n", f" {_EOL} ").split()
                lines = block.count("\n")
                if len(tokens) != width * lines or tokens[columns::width].count(_EOL) != lines:
                    raise _LineReaderNeeded  # a line with other columns, a blank or comment line
                if "#" in block and any(map(str.startswith, tokens[0::width], repeat("#"))):
                    raise _LineReaderNeeded  # a comment line (that happens to have as many fields as a data line)
                yield tokens, ascii_only and "_" not in block
    except (OSError, UnicodeDecodeError):
        raise _LineReaderNeeded from None


def _scores(texts: list[str], plain: bool) -> np.ndarray:
    """Scores as float64 (one C-level ``float`` each); :class:`_LineReaderNeeded` unless all are finite ASCII
    numbers without ``_`` (``float`` reads ``1_0`` and non-ASCII digits; trec_eval does not)."""
    if not plain:
        joined = "".join(texts)
        if not joined.isascii() or "_" in joined:
            raise _LineReaderNeeded
    try:
        values = np.fromiter(map(float, texts), dtype=np.float64, count=len(texts))
    except ValueError:
        raise _LineReaderNeeded from None
    if not bool(np.isfinite(values).all()):
        raise _LineReaderNeeded
    return values


def _bulk_columns(
    path: str | os.PathLike[str], columns: int, keep: tuple[int, ...], convert: Callable[[list[str], bool], Any]
) -> tuple[list[str], list[int], list[list[Any]], str]:
    """The file's lines grouped by query, in the file's order, and the fields ``keep`` of every line.

    Returns the query id and line count of each run of consecutive lines of one query, per kept field the
    values of every line (the last kept field passed through ``convert`` block by block, so its strings
    are not all kept at once), and the last field of the first line (a run's tag).
    """
    width = columns + 1
    qids: list[str] = []
    counts: list[int] = []
    fields: list[list[Any]] = [[] for _ in keep]
    first_tag = ""
    for tokens, plain in _token_blocks(path, columns):
        groups = groupby(tokens[0::width])  # a run of one query's lines: one comparison per line, in C
        qid, lines = next(groups)
        if qids and qids[-1] == qid:  # the block goes on with the previous block's last query
            counts[-1] += len(list(lines))
        else:
            qids.append(qid)
            counts.append(len(list(lines)))
        for qid, lines in groups:
            qids.append(qid)
            counts.append(len(list(lines)))
        for out, col in zip(fields[:-1], keep[:-1], strict=True):
            out += tokens[col::width]
        fields[-1].append(convert(tokens[keep[-1] :: width], plain))
        first_tag = first_tag or tokens[columns - 1]
    if not qids:
        raise _LineReaderNeeded
    return qids, counts, fields, first_tag


def _grouped(
    qids: list[str], counts: list[int], docs: list[str], values: list[Any]
) -> dict[str, dict[str, Any]] | None:
    """``{qid: {doc: value}}`` from the runs of lines of each query (one C-level ``dict(zip(...))`` per run;
    a query whose lines come back later is merged); None if a (query, doc) pair is repeated."""
    out: dict[str, dict[str, Any]] = {}
    hi = 0
    for qid, n in zip(qids, counts, strict=True):
        lo, hi = hi, hi + n
        docs_of = out.get(qid)
        if docs_of is None:
            out[qid] = dict(zip(docs[lo:hi], values[lo:hi], strict=True))
        else:
            docs_of.update(zip(docs[lo:hi], values[lo:hi], strict=True))
    if sum(map(len, out.values())) != len(docs):
        return None  # a pair given twice: the line-by-line reader tells whether that is allowed
    return out


def _label_texts(texts: list[str], plain: bool) -> list[str]:
    return texts


def _bulk_qrels(path: str | os.PathLike[str], name: str | None) -> Qrels | None:
    """:func:`read_qrels` in bulk; None when the file needs the line-by-line reader (or has a repeated pair)."""
    try:
        qids, counts, (docs, label_blocks), _ = _bulk_columns(path, 4, (2, 3), _label_texts)
    except _LineReaderNeeded:
        return None
    label_texts = list(chain.from_iterable(label_blocks))
    labels: dict[str, int | None] = {text: parse_label(text) for text in set(label_texts)}
    if None in labels.values():
        return None
    out = _grouped(qids, counts, docs, list(map(labels.__getitem__, label_texts)))
    return None if out is None else Qrels._trusted(out, name=name or Path(path).name)


def _bulk_run(path: str | os.PathLike[str], name: str | None, duplicates: str) -> Run | None:
    """:func:`read_run` in bulk; None when the file needs the line-by-line reader (or repeats a pair).

    The run is built as ``{qid: {doc: score}}`` dicts (one C-level ``dict(zip(...))`` per query), which
    the metrics' dict path reads: measured as fast end to end as a columnar Run (``bench_files.py``).
    """
    try:
        qids, counts, (docs, score_blocks), tag = _bulk_columns(path, 6, (2, 4), _scores)
    except _LineReaderNeeded:
        return None
    out = _grouped(qids, counts, docs, np.concatenate(score_blocks).tolist())
    if out is None:
        return None  # repeats: the line-by-line reader keeps the first (duplicates="first") or names both lines
    return Run.from_scores(out, name=name or tag or Path(path).name, copy=False)


def read_run(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    duplicates: Literal["error", "first"] = "error",
) -> Run:
    """Read a TREC run file into a scored :class:`~rankbridge.Run`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.txt"
    >>> _ = p.write_text("q1 Q0 d1 1 0.9 bm25\\nq1 Q0 d2 2 0.4 bm25 junk\\n")
    >>> r = read_run(p)
    >>> r.name, r.ranking("q1")
    ('bm25', ['d1', 'd2'])
    """
    if duplicates not in ("error", "first"):
        raise ValueError(f"duplicates must be 'error' or 'first'. Got {duplicates!r} instead.")
    fast = _bulk_run(path, name, duplicates)
    if fast is not None:
        return fast
    src = str(path)
    data: dict[str, dict[str, float]] = {}
    seen_at: dict[tuple[str, str], int] = {}
    dup_count: dict[str, int] = {}
    tag: str | None = None
    for lineno, f in _lines(path):
        if len(f) < 6:
            raise ParseError(
                f"expected 6 columns 'query Q0 doc rank score tag', found {len(f)}: {_columns(f)}",
                source=src,
                line=lineno,
            )
        qid, doc, score_text = f[0], f[2], f[4]
        try:
            score = float(score_text)
        except ValueError:
            raise ParseError(
                f"expected a numeric score in column 5, found {clip(score_text)}", source=src, line=lineno
            ) from None
        if not -_INF < score < _INF or not score_text.isascii() or "_" in score_text:  # NaN fails the first
            raise ParseError(_score_problem(score_text), source=src, line=lineno)
        tag = tag or f[5]
        docs = data.setdefault(qid, {})
        if doc in docs:
            if duplicates == "error":
                raise ParseError(
                    f"doc {clip(doc)} appears twice for query {clip(qid)} (first on line {seen_at[(qid, doc)]}); "
                    "pass duplicates='first' (CLI: --duplicates first) to keep the first line",
                    source=src,
                    line=lineno,
                )
            dup_count[qid] = dup_count.get(qid, 0) + 1
            continue
        seen_at[(qid, doc)] = lineno
        docs[doc] = score
    if not data:
        raise ParseError("no results found (the file is empty or has only comments)", source=src)
    run = Run.from_scores(data, name=name or tag or Path(path).name, copy=False)
    run.duplicates.update(dup_count)
    return run


def _fmt_score(x: float) -> str:
    return repr(float(x))


def _write_run_lines(fh: TextIO, scores: Mapping[str, Mapping[str, float]], tag: str) -> None:
    for qid in scores:
        ranked = sorted(scores[qid].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        for rank, (doc, score) in enumerate(ranked, 1):
            fh.write(f"{qid} Q0 {doc} {rank} {_fmt_score(score)} {tag}\n")


def write_run(
    run: Run | Mapping[str, Mapping[str, float]], path: str | os.PathLike[str], *, tag: str | None = None
) -> None:
    """Write a TREC run file (atomically: a failure leaves no partial file), whatever the file's suffix.

    A ranked run keeps its order: see :meth:`rankbridge.Run.to_scores` for the scores written. Only ids,
    ranks and scores fit a TREC file; :func:`rankbridge.io.write_run` picks JSON Lines for a ``.jsonl``
    name, which keeps texts, metadata, errors and latencies too.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "run.txt"
    >>> write_run(Run.from_ranked({"q1": ["d2", "d1"]}, name="bm25"), p)
    >>> p.read_text()
    'q1 Q0 d2 1 2.0 bm25\\nq1 Q0 d1 2 1.0 bm25\\n'
    """
    scores = run.to_scores() if isinstance(run, Run) else run
    name = tag or (run.name if isinstance(run, Run) else "rankbridge")
    name = "_".join(name.split()) or "rankbridge"
    for qid, docs in scores.items():
        for doc in docs:
            if not qid.strip() or any(c.isspace() for c in qid + doc) or not doc:
                raise ParseError(f"ids cannot be empty or contain whitespace in a TREC file: {qid!r} {doc!r}")
    with atomic_write(path) as fh:
        _write_run_lines(fh, scores, name)


def write_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]], path: str | os.PathLike[str]) -> None:
    """Write a TREC qrels file (atomically) that :func:`read_qrels` reads back equal.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "qrels.txt"
    >>> write_qrels(Qrels({"q1": {"d1": 2, "d2": 0}}), p)
    >>> p.read_text()
    'q1 0 d1 2\\nq1 0 d2 0\\n'
    >>> read_qrels(p).to_dict()
    {'q1': {'d1': 2, 'd2': 0}}
    """
    data = qrels if isinstance(qrels, Qrels) else Qrels(qrels)
    for qid, docs in data.items():
        for doc in docs:
            if not qid or not doc or any(c.isspace() for c in qid + doc):
                raise ParseError(f"ids cannot be empty or contain whitespace in a TREC file: {qid!r} {doc!r}")
    with atomic_write(path) as fh:
        for qid, docs in data.items():
            for doc, label in docs.items():
                fh.write(f"{qid} 0 {doc} {label}\n")
