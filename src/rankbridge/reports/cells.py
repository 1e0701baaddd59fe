"""How report cells print: numbers, intervals, p-values, shares, and text made safe for a terminal.

An undefined number (NaN, ``None``) is an empty cell, ``"-"``. The numbers go through
:mod:`rankbridge._numbers`, the one formatter every output of rankbridge uses.
"""

from __future__ import annotations

import math
import re

from rankbridge._numbers import fmt_ci as _fmt_ci
from rankbridge._numbers import fmt_number, json_float
from rankbridge._numbers import fmt_p as _fmt_p
from rankbridge.analysis.relevance import RELEVANCE_CLASSES
from rankbridge.metrics.stats import Interval

__all__ = [
    "EMPTY",
    "RELEVANCE_CLASSES",
    "escape_controls",
    "fmt_ci",
    "fmt_diff",
    "fmt_p",
    "fmt_pct",
    "fmt_value",
    "json_float",
]

#: An empty cell: a value that is undefined (NaN) or absent.
EMPTY = "-"

#: Characters escaped before printing: C0 controls (ESC starts CSI/OSC sequences), DEL, C1 controls
#: (U+009B is a one-byte CSI), the Unicode line/paragraph separators and the bidirectional overrides and
#: isolates (they reorder what is shown: "Trojan source").
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _control_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: object) -> str:
    r"""Show control characters as visible escapes, so that printing a data string cannot steer a terminal.

    ESC (and with it every CSI / OSC sequence: colours, cursor moves, window titles, hyperlinks), the other
    C0 and C1 controls (tab, newline and carriage return included), DEL, the Unicode line separators and the
    bidirectional overrides become ``\x1b``, ``\x0a``, ``\u202e``...; everything else is kept.

    Examples
    --------
    >>> print(escape_controls("run\x1b]8;;http://x\x07name\x1b[2J"))
    run\x1b]8;;http://x\x07name\x1b[2J
    >>> print(escape_controls("a\u202eb\nc"), escape_controls("plain text, é"))
    a\u202eb\x0ac plain text, é
    """
    return _CONTROLS.sub(_control_escape, str(text))


def fmt_value(x: float | None, digits: int = 3) -> str:
    """A value for a table cell (``"-"`` when undefined).

    Examples
    --------
    >>> fmt_value(0.51234), fmt_value(float("nan"))
    ('0.512', '-')
    """
    return fmt_number(x, digits, missing=EMPTY)


def fmt_diff(x: float | None, digits: int = 3) -> str:
    """A signed difference (``"+0.120"``)."""
    return fmt_number(x, digits, sign=True, missing=EMPTY)


def fmt_ci(iv: Interval | None, digits: int = 3, sign: bool = False) -> str:
    """``"[low, high]"`` of an interval (``"-"`` when it has no bounds).

    Examples
    --------
    >>> fmt_ci(Interval(0.5, 0.4, 0.6, 0.95, "t", 20))
    '[0.400, 0.600]'
    """
    return _fmt_ci(iv, digits, sign=sign, missing=EMPTY)


def fmt_p(p: float | None) -> str:
    """A p-value (``"<0.001"`` below 0.001).

    Examples
    --------
    >>> fmt_p(0.0312), fmt_p(0.00001)
    ('0.031', '<0.001')
    """
    return _fmt_p(p, 3, missing=EMPTY)


def fmt_pct(x: float | None) -> str:
    """A share as a percentage (``"42%"``)."""
    return EMPTY if x is None or not math.isfinite(x) else f"{100 * x:.0f}%"
