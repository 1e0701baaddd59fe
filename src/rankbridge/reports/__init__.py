"""Reports: one pure-data model (:class:`Report`), rendered to the terminal, Markdown, HTML and JSON.

>>> from rankbridge.analysis import compare                                     # doctest: +SKIP
>>> report = build_report(compare(runs, qrels, ["ndcg@10", "mrr@10"]), runs=runs)  # doctest: +SKIP
>>> report.save("report.html")     # one self-contained file with plots           # doctest: +SKIP
>>> report.print()                 # rich tables in the terminal                  # doctest: +SKIP

Only :mod:`.model` is imported here (numpy and the standard library); rich, Jinja2 and matplotlib are
imported when a format needs them (the ``report`` extra: ``pip install 'rankbridge[report]'``).

The ``rankbridge report`` command (:mod:`rankbridge.cli.report`) builds a report from files.

Examples
--------
>>> from rankbridge.analysis import compare
>>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
>>> cmp = compare({"bm25": {"q1": ["d1"], "q2": ["x", "d2"]}}, qrels, ["mrr@10"])
>>> build_report(cmp, generated_at="2024-01-01").headlines[0].reading
'the first relevant chunk typically sits around rank 1.3'
"""

from __future__ import annotations

from rankbridge.reports import model
from rankbridge.reports.model import *  # noqa: F403 -- the package's public names are the model's

__all__ = list(model.__all__)
