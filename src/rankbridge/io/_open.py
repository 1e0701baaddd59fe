"""Open a text file that may be gzip-compressed (``.gz``), iterate JSON Lines from it, and check the values
every reader checks the same way.

Used by the golden-set loaders so that ``queries.jsonl.gz`` (as BEIR and the HF hub ship them) reads like
``queries.jsonl``, and by every reader for the rules below.

* Text is UTF-8; a byte-order mark at the start is skipped (:data:`ENCODING`). Bytes that are not UTF-8
  are a :class:`~rankbridge.errors.ParseError` naming the first line that holds them (:func:`decode_error`).
* JSON that nests too deeply or holds an integer too long for Python to read is a ParseError too
  (:func:`json_line`), as is invalid JSON.
* A relevance label written as text is an ASCII integer (``-1``, ``0``, ``+2``) that fits in 64 bits, as
  trec_eval's ``long`` holds it (:func:`parse_label`); ``1_0``, ``٣`` (an Arabic-Indic three), ``1.0`` and
  ``2**63`` are refused rather than read as Python's ``int()`` would read them.
* A score is a finite number (:func:`check_score`): ``inf``, ``NaN`` and numbers too large for a float
  are refused.
* Messages quote at most :data:`QUOTE_LIMIT` characters of a bad value (:func:`clip`).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from rankbridge.errors import ParseError

__all__ = [
    "ENCODING",
    "QUOTE_LIMIT",
    "check_label",
    "check_score",
    "clip",
    "decode_error",
    "file_stem",
    "iter_jsonl_any",
    "json_line",
    "jsonl_objects",
    "label_problem",
    "names",
    "open_text",
    "parse_label",
    "plain_suffix",
    "read_text",
    "unicode_space",
    "user_stacklevel",
]

#: The encoding every reader opens text with: UTF-8, skipping a byte-order mark at the start of the file.
ENCODING = "utf-8-sig"

#: At most this many characters of a bad value or line are quoted in an error message.
QUOTE_LIMIT = 80

#: Labels must fit trec_eval's (and numpy's) 64-bit integers.
_LABEL_MIN, _LABEL_MAX = -(2**63), 2**63 - 1
_ASCII_INT = re.compile(r"[+-]?[0-9]+")
# what str.split() splits on besides the ASCII space, tab, CR, LF, VT and FF that trec_eval splits on
_OTHER_SPACE = re.compile(r"[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def user_stacklevel() -> int:
    """The ``stacklevel`` of a warning about the caller's data: the first frame outside rankbridge.

    Readers are reached through wrappers (``read_golden``, the keyword check) at different depths, so a
    fixed ``stacklevel`` named a frame inside rankbridge on one path and none at all on another.
    """
    frame = sys._getframe(1)  # the function about to warn: stacklevel 1
    level = 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "rankbridge":
        frame = frame.f_back
        level += 1
    return level


def clip(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr`` of a value's first ``limit`` characters, with ``...`` when it was longer.

    Examples
    --------
    >>> clip("d1"), clip("x" * 100, 5)
    ("'d1'", "'xxxxx'...")
    """
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(text) if isinstance(value, str) else text
    return (repr(text[:limit]) if isinstance(value, str) else text[:limit]) + "..."


def names(items: Any, *, quote: bool = False, limit: int = 12) -> str:
    """Column or key names for a message: at most ``limit`` of them, each clipped to 40 characters.

    Examples
    --------
    >>> names(["id", "question"]), names([]), names(range(20), limit=2)
    ('id, question', 'none', '0, 1, ... (20 in all)')
    """
    items = list(items)
    shown = [clip(str(k), 40) if quote else clip(str(k), 40).strip("'\"") for k in items[:limit]]
    more = f", ... ({len(items)} in all)" if len(items) > limit else ""
    return ", ".join(shown) + more if items else "none"


def _first_undecodable_line(path: str | os.PathLike[str]) -> int | None:
    try:
        opener: Any = gzip.open if Path(path).suffix.lower() == ".gz" else open
        with opener(path, "rb") as fh:
            for lineno, raw in enumerate(fh, 1):  # b"\n" never occurs inside a UTF-8 sequence
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    return lineno
    except (OSError, EOFError, zlib.error):
        return None
    return None


def decode_error(path: str | os.PathLike[str], exc: UnicodeDecodeError) -> ParseError:
    """The ParseError for a file that is not UTF-8, naming the first line with a bad byte.

    Reading stops at the first bad chunk, so the file is scanned again (in binary) to find the line: this
    runs only when a file is already refused.
    """
    bad = exc.object[exc.start : exc.start + 1]
    return ParseError(
        f"expected UTF-8 text, found bytes that are not UTF-8 ({exc.reason}: {bytes(bad)!r}); "
        "re-save the file as UTF-8",
        source=str(path),
        line=_first_undecodable_line(path),
    )


def read_text(path: str | os.PathLike[str]) -> str:
    """The whole text of a file (``.gz`` decompressed, BOM skipped); any failure is a ParseError naming it."""
    with open_text(path) as fh:
        try:
            return fh.read()
        except UnicodeDecodeError as exc:
            raise decode_error(path, exc) from None
        except (OSError, EOFError, zlib.error) as exc:  # a truncated or non-gzip .gz
            raise ParseError(f"cannot read file: {exc}", source=str(path)) from None


def json_line(text: str, src: str, lineno: int | None, what: str = "a JSON object") -> Any:
    """``json.loads(text)``; invalid JSON, too deep a nesting or too long an integer raise ParseError.

    ``lineno`` None means ``text`` is a whole file: invalid JSON is then reported at the line it is on.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = exc.lineno if lineno is None else lineno
        raise ParseError(f"expected {what}, found invalid JSON ({exc.msg})", source=src, line=where) from None
    except RecursionError:
        raise ParseError(f"expected {what}, found JSON nested too deeply to read", source=src, line=lineno) from None
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() digits
        raise ParseError(
            f"expected {what}, found an integer of more than {sys.get_int_max_str_digits()} digits",
            source=src,
            line=lineno,
        ) from None


def parse_label(text: str) -> int | None:
    """A relevance label from text (an ASCII integer that fits in 64 bits), or None when it is not one.

    Examples
    --------
    >>> parse_label("2"), parse_label("-1"), parse_label("+3"), parse_label(" 4 ")
    (2, -1, 3, None)
    >>> parse_label("\u0663"), parse_label("1_0"), parse_label("1.0"), parse_label(str(2**63))
    (None, None, None, None)
    """
    if not _ASCII_INT.fullmatch(text) or len(text.lstrip("+-0")) > 19:  # 2**63 has 19 digits
        return None
    value = int(text)
    return value if _LABEL_MIN <= value <= _LABEL_MAX else None


def label_problem(text: str) -> str:
    """Why ``text`` is not a relevance label (for the error message)."""
    if _ASCII_INT.fullmatch(text):
        return f"expected an integer relevance label that fits in 64 bits, found {clip(text)}"
    if text.strip() and all(c.isdigit() or c in "+-" for c in text.strip()) and not text.isascii():
        return f"expected an integer relevance label in ASCII digits, found {clip(text)}"
    return f"expected an integer relevance label, found {clip(text)}"


def check_label(value: int, what: str = "relevance label") -> int:
    """An int label checked to fit in 64 bits; ValueError with a message otherwise."""
    if not _LABEL_MIN <= value <= _LABEL_MAX:
        raise ValueError(f"expected a {what} that fits in 64 bits, found {clip(str(value), 40)}")
    return value


def check_score(value: Any, what: str = "score") -> float:
    """A finite float score from an int or float; ValueError with a message otherwise.

    Examples
    --------
    >>> check_score(1), check_score(0.5)
    (1.0, 0.5)
    >>> check_score(float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: expected a finite score, found inf
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a numeric {what}, found {type(value).__name__} {clip(value)}")
    try:
        f = float(value)
    except OverflowError:
        digits = len(str(value))
        raise ValueError(f"expected a {what} that fits in a float, found an integer of {digits} digits") from None
    if not math.isfinite(f):
        raise ValueError(f"expected a finite {what}, found {clip(value)}")
    return f


def unicode_space(line: str) -> str | None:
    """The first character of ``line`` that Python splits on but trec_eval does not (``U+00A0``...), or None.

    Examples
    --------
    >>> unicode_space("q1 0 d1\u00a01"), unicode_space("q1 0 d1 1")
    ('U+00A0', None)
    """
    m = _OTHER_SPACE.search(line)
    return None if m is None else f"U+{ord(m.group()):04X}"


def _without_gz(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p.with_suffix("") if p.suffix.lower() == ".gz" else p


def plain_suffix(path: str | os.PathLike[str]) -> str:
    """The file's suffix without a trailing ``.gz``, lower case.

    Examples
    --------
    >>> plain_suffix("corpus.JSONL.gz"), plain_suffix("golden.csv"), plain_suffix("data")
    ('.jsonl', '.csv', '')
    """
    return _without_gz(path).suffix.lower()


def file_stem(path: str | os.PathLike[str]) -> str:
    """The file's name without its suffix and a trailing ``.gz``: the default name of what a reader reads.

    Examples
    --------
    >>> file_stem("data/golden.jsonl.gz"), file_stem("bm25.parquet"), file_stem("runs")
    ('golden', 'bm25', 'runs')
    """
    return _without_gz(path).stem


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """Open ``path`` for reading text (UTF-8 without a BOM, universal newlines); ``.gz`` files are decompressed.

    A file that cannot be opened raises :class:`~rankbridge.errors.ParseError` naming it.
    """
    try:
        if Path(path).suffix.lower() == ".gz":
            return gzip.open(path, "rt", encoding=ENCODING, newline=None)
        return open(path, encoding=ENCODING, newline=None)
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
    with open_text(path) as fh:
        try:
            yield from jsonl_objects(fh, path)
        except (OSError, EOFError, zlib.error) as exc:  # a truncated or non-gzip .gz
            raise ParseError(f"cannot read file: {exc}", source=str(path)) from None


def jsonl_objects(fh: Iterable[str], path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of the JSON Lines file ``path`` opened as ``fh``.

    A line that is not a JSON object, or bytes that are not UTF-8, raise ParseError with file:line.
    """
    src = str(path)
    try:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            obj = json_line(line, src, lineno)
            if not isinstance(obj, dict):
                raise ParseError(f"expected a JSON object, found {type(obj).__name__}", source=src, line=lineno)
            yield lineno, obj
    except UnicodeDecodeError as exc:
        raise decode_error(path, exc) from None
