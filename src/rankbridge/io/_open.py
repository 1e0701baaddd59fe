"""Open a text file that may be gzip-compressed (``.gz``), and iterate JSON Lines from it.

Used by the golden-set loaders so that ``queries.jsonl.gz`` (as BEIR and the HF hub ship them) reads like
``queries.jsonl``.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from rankbridge.errors import ParseError

__all__ = ["iter_jsonl_any", "open_text", "plain_suffix"]


def plain_suffix(path: str | os.PathLike[str]) -> str:
    """The file's suffix without a trailing ``.gz``, lower case.

    Examples
    --------
    >>> plain_suffix("corpus.JSONL.gz"), plain_suffix("golden.csv"), plain_suffix("data")
    ('.jsonl', '.csv', '')
    """
    p = Path(path)
    if p.suffix.lower() == ".gz":
        p = p.with_suffix("")
    return p.suffix.lower()


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """Open ``path`` for reading text (UTF-8, universal newlines); ``.gz`` files are decompressed.

    A file that cannot be opened raises :class:`~rankbridge.errors.ParseError` naming it.
    """
    try:
        if Path(path).suffix.lower() == ".gz":
            return gzip.open(path, "rt", encoding="utf-8", newline=None)
        return open(path, encoding="utf-8", newline=None)
    except OSError as exc:
        raise ParseError(f"cannot open file: {exc.strerror or exc}", source=str(path)) from None


def iter_jsonl_any(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a ``.jsonl`` or ``.jsonl.gz`` file.

    Examples
    --------
    >>> import gzip, tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "queries.jsonl.gz"
    >>> with gzip.open(p, "wt") as fh:
    ...     _ = fh.write('{"_id": "q1", "text": "scurvy"}\\n\\n[1]\\n')
    >>> rows = iter_jsonl_any(p)
    >>> next(rows)
    (1, {'_id': 'q1', 'text': 'scurvy'})
    >>> next(rows)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rankbridge.errors.ParseError: ...queries.jsonl.gz:3: expected a JSON object, found list
    """
    src = str(path)
    with open_text(path) as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ParseError(
                        f"expected a JSON object, found invalid JSON ({exc.msg})", source=src, line=lineno
                    ) from None
                if not isinstance(obj, dict):
                    raise ParseError(f"expected a JSON object, found {type(obj).__name__}", source=src, line=lineno)
                yield lineno, obj
        except (OSError, EOFError, UnicodeDecodeError) as exc:  # a truncated or non-gzip .gz, bad bytes
            raise ParseError(f"cannot read file: {exc}", source=src) from None
