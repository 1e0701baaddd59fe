"""How numbers are printed and written to JSON, in one place (a leaf: imports nothing of rankbridge).

* :func:`fmt_number` -- a value with a fixed number of decimals, optionally signed;
* :func:`fmt_p` -- a p-value (``"<0.0001"`` below the smallest printed value);
* :func:`fmt_ci` -- an interval's bounds, ``"[low, high]"``;
* :func:`json_float` -- a float for JSON: ``None`` for NaN, infinities and ``None`` (JSON has no NaN);
* :func:`text_rows` -- a table of such cells as aligned plain-text lines.

An undefined value (NaN, ``None``) prints as :data:`MISSING` everywhere; report tables, whose empty cells
are ``"-"``, pass ``missing="-"``.

Examples
--------
>>> fmt_number(0.51234), fmt_number(0.5, 3, sign=True), fmt_number(float("nan"))
('0.5123', '+0.500', 'n/a')
>>> fmt_p(0.03125), fmt_p(0.00001), fmt_p(0.00001, 3), fmt_p(float("nan"), missing="-")
('0.0312', '<0.0001', '<0.001', '-')
>>> from rankbridge.metrics.stats import Interval
>>> fmt_ci(Interval(0.5, 0.4, 0.6, 0.95, "t", 20), 3), fmt_ci(Interval(0.5, float("nan"), float("nan"), 0.95, "t", 1))
('[0.400, 0.600]', 'n/a')
>>> text_rows([["run", "mean"], ["bm25", "0.5"], ["dense", "0.75"]])
['  run    mean', '  bm25    0.5', '  dense  0.75']
>>> json_float(float("inf")), json_float(None), json_float(0.25)
(None, None, 0.25)
"""

from __future__ import annotations

import math
from typing import Protocol

__all__ = ["MISSING", "fmt_ci", "fmt_number", "fmt_p", "json_float", "text_rows"]

#: What an undefined value (NaN, None) prints as.
MISSING = "n/a"


class _Bounds(Protocol):
    """What :func:`fmt_ci` reads (a :class:`~rankbridge.metrics.stats.Interval`)."""

    @property
    def low(self) -> float: ...

    @property
    def high(self) -> float: ...


def json_float(x: float | None) -> float | None:
    """``float(x)``, or ``None`` when ``x`` is None, NaN or infinite (JSON has no NaN)."""
    return None if x is None or not math.isfinite(x) else float(x)


def fmt_number(x: float | None, digits: int = 4, *, sign: bool = False, missing: str = MISSING) -> str:
    """``x`` with ``digits`` decimals (``+``/``-`` always shown when ``sign``); ``missing`` when undefined."""
    if x is None or not math.isfinite(x):
        return missing
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def fmt_p(p: float | None, digits: int = 4, *, missing: str = MISSING) -> str:
    """A p-value with ``digits`` decimals, ``"<0.0001"`` (for 4 digits) below what they can show."""
    if p is None or not math.isfinite(p):
        return missing
    floor = 10.0**-digits
    return f"<{floor:.{digits}f}" if p < floor else f"{p:.{digits}f}"


def fmt_ci(iv: _Bounds | None, digits: int = 4, *, sign: bool = False, missing: str = MISSING) -> str:
    """``"[low, high]"`` of an interval, each bound as :func:`fmt_number` prints it; ``missing`` without bounds."""
    if iv is None or not (math.isfinite(iv.low) and math.isfinite(iv.high)):
        return missing
    return f"[{fmt_number(iv.low, digits, sign=sign)}, {fmt_number(iv.high, digits, sign=sign)}]"


def text_rows(table: list[list[str]], indent: str = "  ") -> list[str]:
    """The rows of ``table`` (a header first) as lines: the first column left-aligned, the others right."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return [
        indent
        + "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    ]
