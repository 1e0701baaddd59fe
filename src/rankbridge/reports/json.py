"""The report as JSON: :meth:`Report.to_dict` written out (non-finite numbers become ``null``).

Examples
--------
>>> import json
>>> from rankbridge.analysis import compare
>>> from rankbridge.reports import build_report
>>> cmp = compare({"a": {"q1": ["d1"]}}, {"q1": {"d1": 1}}, ["P@1"])
>>> data = json.loads(render(build_report(cmp, generated_at="2024-01-01")))
>>> data["headlines"][0]["reading"], data["strategies"][0]["mean"]["estimate"]
('the top chunk is relevant for 100% of questions', 1.0)
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from rankbridge.reports.model import Report

__all__ = ["render"]


def render(report: Report, *, indent: int | None = 2) -> str:
    """The report as JSON text (UTF-8 characters kept, no NaN or Infinity)."""
    return json.dumps(report.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)
