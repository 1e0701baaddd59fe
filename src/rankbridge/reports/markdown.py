"""The report as Markdown (GitHub-flavoured tables), for pull requests, wikis and CI summaries.

Every string that came from data (run names, query texts, chunk texts, categories) is escaped: ``|`` cannot
break a table, and ``<``, ``>``, ``&`` become HTML entities, so a query holding markup shows as text in
renderers that allow raw HTML.

Examples
--------
>>> from rankbridge.analysis import compare
>>> from rankbridge.reports import build_report
>>> cmp = compare({"a|b": {"q1": ["d1"]}}, {"q1": {"d1": 1}}, ["P@1"])
>>> md = render(build_report(cmp, generated_at="2024-01-01"))
>>> md.splitlines()[0]
'# Retrieval report'
>>> "| precision@1 | a\\\\|b (baseline) | 1.000 |" in md
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rankbridge.reports.cells import escape_controls, fmt_ci, fmt_diff, fmt_p, fmt_pct, fmt_value

if TYPE_CHECKING:  # pragma: no cover
    from rankbridge.reports.model import QueryItem, Report, StrategyRow

__all__ = ["escape", "render"]


#: A confidence interval as the model formats it (``[0.400, 0.600]``, ``[+0.1, -]``): shown as it is.
_EMAIL_DOMAIN = re.compile(r"[\w-]+\.[\w-]")
_INTERVAL = re.compile(r"\\\[([+-]?\d+\.\d+|-), ([+-]?\d+\.\d+|-)\\\]")


def _escape_char(s: str, i: int) -> str:
    ch = s[i]
    prev = s[i - 1] if i else ""
    nxt = s[i + 1] if i + 1 < len(s) else ""
    if ch in "\\|`[]*~":
        return "\\" + ch
    if ch == "_":  # intraword underscores never emphasise (GFM): keep ``context_precision`` readable
        return "_" if prev.isalnum() and nxt.isalnum() else "\\_"
    if ch == "!" and nxt == "[":  # an image
        return "\\!"
    if ch == "(" and prev == "]":  # a link target
        return "\\("
    if ch == ":" and s.startswith("//", i + 1):  # an autolink (GFM links bare http://...)
        return "\\:"
    if ch == "." and s[max(0, i - 3) : i].lower() == "www":  # an autolink (GFM links bare www....)
        return "\\."
    if ch == "@" and _EMAIL_DOMAIN.match(s, i + 1):  # an e-mail autolink (not ``mrr@10``)
        return "\\@"
    return ch


def escape(text: object) -> str:
    r"""Make a data string inert inside Markdown text and table cells.

    * control characters (ESC, CSI / OSC sequences, C1 controls, bidi overrides) become visible escapes
      (:func:`~rankbridge.reports.model.escape_controls`), whitespace runs one space;
    * ``<``, ``>`` and ``&`` become HTML entities: no raw HTML, no ``<http://...>`` autolink, no entity;
    * ``\``, ``|``, backticks, ``[``, ``]``, ``*``, ``~`` and word-boundary ``_`` are backslash-escaped, as
      are ``!`` before ``[`` and ``(`` after ``]``, and the ``:`` of ``://``, the ``.`` of ``www.`` and
      ``@`` before a domain (GFM's bare autolinks): a link or an image in data shows as its text. An interval the report
      wrote (``[0.400, 0.600]``) is left as it is.

    Examples
    --------
    >>> escape("<script>alert(1)</script> | x")
    '&lt;script&gt;alert(1)&lt;/script&gt; \\| x'
    >>> print(escape("![x](http://evil.example/a.png) [click](javascript:alert(1)) `code` *b*"))
    \!\[x\]\(http\://evil.example/a.png) \[click\]\(javascript:alert(1)) \`code\` \*b\*
    >>> print(escape("id\x1b[31mred p adj 0.04 [+0.100, +0.300]"))
    id\\x1b\[31mred p adj 0.04 [+0.100, +0.300]
    """
    s = escape_controls(" ".join(str(text).split()))
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = "".join(_escape_char(s, i) for i in range(len(s)))
    return _INTERVAL.sub(r"[\1, \2]", s)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str = "") -> list[str]:
    """A GFM table; ``align`` has one letter per column (l or r), default: first left, rest right."""
    marks = align or "l" + "r" * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in marks) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _query(item: QueryItem) -> str:
    text = escape(item.query_id)
    if item.query:
        text += f": {escape(item.query)}"
    return text


def _query_rows(items: Sequence[QueryItem], with_value: bool) -> list[list[str]]:
    rows = []
    for it in items:
        rank = str(it.first_relevant_rank) if it.first_relevant_rank is not None else "-"
        row = [_query(it)]
        if with_value:
            row.append(fmt_value(it.value))
        row += [
            rank,
            escape(", ".join(it.expected[:5])) or "-",
            escape(", ".join(it.retrieved)) or "-",
            escape(it.top_text) if it.top_text else "-",
        ]
        if it.error:
            row[-1] = f"error: {escape(it.error)}"
        rows.append(row)
    return rows


def _query_list(run: str, title: str, items: Sequence[QueryItem], count: int) -> list[str]:
    """One run's list of questions under an italic title, saying when it shows only the first ones."""
    more = f" (first {len(items)} of {count})" if count > len(items) else ""
    return [
        f"*{escape(run)}: {title}{more}*",
        "",
        *_table(
            ["question", "first relevant", "expected", "retrieved", "top chunk"],
            _query_rows(items, False),
            "lrlll",
        ),
        "",
    ]


def _rerank(report: Report) -> list[str]:
    rr = report.rerank
    assert rr is not None
    out = ["## With and without reranker", "", escape(rr.note), ""]
    if not rr.paired:
        return out
    header = ["strategy", "without", "with", f"{rr.metric} without", f"{rr.metric} with", "difference", "CI", "p"]
    header += [f"mean relevance without (top {rr.depth})", "mean relevance with"]
    rows = []
    for row in rr.rows:
        m0, r0 = row.values["without"], row.relevance["without"]
        m1, r1 = row.values.get("with"), row.relevance.get("with")
        cells = [escape(row.strategy), escape(row.without), escape(row.with_) if row.with_ else "-"]
        cells += [
            f"{fmt_value(m0.estimate)} {fmt_ci(m0)}",
            "-" if m1 is None else f"{fmt_value(m1.estimate)} {fmt_ci(m1)}",
        ]
        if row.difference is None:
            cells += ["-", "-", "-"]
        else:
            star = " *" if row.significant else ""
            cells += [fmt_diff(row.difference.estimate) + star, fmt_ci(row.difference, sign=True), fmt_p(row.pvalue)]
        cells += [
            f"{fmt_value(r0.estimate, 2)} {fmt_ci(r0, 2)}",
            "-" if r1 is None else f"{fmt_value(r1.estimate, 2)} {fmt_ci(r1, 2)}",
        ]
        rows.append(cells)
    out += _table(header, rows, "lll" + "r" * 7)
    out.append("")
    return out


def _partial(report: Report) -> bool:
    """Whether any strategy row is over fewer than all questions (a RAGAS column with unscored rows)."""
    return any(r.unscored or r.left_out for r in report.strategies)


def _scored_cell(r: StrategyRow) -> str:
    text = r.scored_note or f"n={r.mean.n}"
    if r.left_out:
        text += f"; paired over {r.paired_n}, {r.left_out} left out"
    return text


def _per_query(report: Report) -> list[str]:
    pq = report.per_query
    assert pq is not None
    shown = len(pq.rows)
    which = f"The {shown} worst by {pq.by}" if shown < pq.total else f"All {pq.total}, worst by {pq.by} first,"
    out = ["## Per question", "", f"{which} of {pq.total} questions (mean over the runs that scored it). "]
    out[-1] += "– = not scored (see the notes below the table)."
    if pq.unscored:
        listed = ", ".join(f"{m}: {k}" for m, k in pq.unscored.items())
        out[-1] += f" Unscored cells over all questions: {escape(listed)}."
    out.append("")
    header = ["question", *(f"{m} {escape(run)}" for m in pq.metrics for run in pq.runs)]
    notes: dict[str, int] = {}
    rows = []
    for row in pq.rows:
        cells = [escape(row.query_id) + (f": {escape(row.query)}" if row.query else "")]
        for m in pq.metrics:
            for run in pq.runs:
                v = row.values[m][run]
                if math.isnan(v):
                    reason = row.reasons.get(m, {}).get(run, "not scored")
                    ref = notes.setdefault(reason, len(notes) + 1)
                    cells.append(f"–[^rb{ref}]")
                else:
                    cells.append(fmt_value(v))
        rows.append(cells)
    out += _table(header, rows)
    out.append("")
    for reason, ref in notes.items():
        out.append(f"[^rb{ref}]: not scored: {escape(reason)}")
    if notes:
        out.append("")
    return out


def render(report: Report) -> str:
    """The whole report as Markdown text."""
    out: list[str] = [f"# {escape(report.title)}", ""]
    s = report.settings
    corr = "Holm-adjusted" if s["correction"] == "holm" else "unadjusted"
    out.append(
        f"{report.num_queries} questions, {len(report.runs)} run(s): "
        + ", ".join(escape(r) for r in report.runs)
        + f"; baseline **{escape(report.baseline)}**. "
        f"{s['level']:.0%} intervals, {s['test']} test, p-values {corr}"
        f" (alpha {s['alpha']:g}). Generated {escape(report.generated_at)} by rankbridge {report.rankbridge_version}."
    )
    out.append("")

    rec = report.recommendation
    if rec is not None:
        out += ["## Recommended strategy", "", f"**{escape(rec.text)}**", ""]
        out += [f"- {escape(n)}" for n in rec.notes]
        if rec.notes:
            out.append("")

    out += ["## Headlines", ""]
    for h in report.headlines:
        line = (
            f"- **{h.metric} {fmt_value(h.value.estimate)}** {fmt_ci(h.value)} ({escape(h.run)}): {escape(h.reading)}."
        )
        if h.versus:
            line += f" {escape(h.versus)}."
        out.append(line)
    out.append("")

    if report.warnings:
        out += ["## Warnings", ""]
        out += [f"- {escape(w)}" for w in report.warnings]
        out.append("")

    out += ["## Strategies", ""]
    header = ["metric", "run", "mean", "CI", f"vs {escape(report.baseline)}", "CI", "p", "p adj", "d", "W/T/L"]
    partial = _partial(report)
    if partial:
        header.append("scored")
    rows = []
    for r in report.strategies:
        name = escape(r.run) + (" (baseline)" if r.baseline else "")
        cells = [r.metric, name, fmt_value(r.mean.estimate), fmt_ci(r.mean)]
        if r.difference is None:
            cells += ["", "", "", "", "", ""]
        else:
            star = " *" if r.significant else ""
            cells += [
                fmt_diff(r.difference.estimate) + star,
                fmt_ci(r.difference, sign=True),
                fmt_p(r.pvalue),
                fmt_p(r.pvalue_adjusted),
                fmt_value(r.effect_size, 2),
                f"{r.wins}/{r.ties}/{r.losses}",
            ]
        if partial:
            cells.append(escape(_scored_cell(r)))
        rows.append(cells)
    out += _table(header, rows, "ll" + "r" * 8 + ("l" if partial else ""))
    out += ["", f"\\* significant at alpha {s['alpha']:g} after correction.", ""]
    weak = [r for r in report.strategies if r.warning]
    if weak:
        out += ["Low power:", ""]
        out += [f"- {r.metric}, {escape(r.run)}: {escape(r.warning or '')}" for r in weak]
        out.append("")

    if report.rerank is not None:
        out += _rerank(report)

    if report.cutoffs is not None:
        c = report.cutoffs
        out += ["## By rank cut-off", ""]
        header = ["measure", "run", *(f"@{k}" for k in c.ks)]
        rows = [[m, escape(run), *(fmt_value(v) for v in c.values[m][run])] for m in c.measures for run in c.values[m]]
        out += _table(header, rows, "ll" + "r" * len(c.ks))
        out += ["", f"Deepest list: {c.depth} results; deeper cut-offs are left out.", ""]

    if report.categories is not None:
        cat = report.categories
        out += [f"## By {escape(cat.by)}", ""]
        header = [escape(cat.by), "n", *(f"{m} {escape(r)}" for m in cat.metrics for r in cat.runs)]
        rows = []
        for row in cat.rows:
            cells = [escape(row.name), str(row.n)]
            for m in cat.metrics:
                for run in cat.runs:
                    iv = row.values[m].get(run)
                    cells.append("-" if iv is None else f"{fmt_value(iv.estimate)} {fmt_ci(iv)}")
            rows.append(cells)
        out += _table(header, rows)
        out.append("")

    if report.relevance is not None:
        rel = report.relevance
        out += ["## Relevance of the results", "", escape(rel.reading), ""]
        header = ["run"]
        prows: list[list[str]] = []
        for prof in rel.profiles:
            prow = [escape(prof.run)]
            if rel.graded:
                prow += [fmt_pct(prof.shares["highly relevant"]), fmt_pct(prof.relevant_plus)]
            else:
                prow.append(fmt_pct(prof.shares["relevant"]))
            prow += [fmt_pct(prof.shares["not relevant"]), fmt_pct(prof.shares["unjudged"])]
            mr = prof.mean_relevance
            prow.append("-" if mr is None else f"{fmt_value(mr.estimate, 2)} {fmt_ci(mr, 2)}")
            prows.append(prow)
        if rel.graded:
            header += [f"highly relevant (= {rel.high_label})", f"relevant+ (>= {rel.relevant_label})"]
            header.append(
                f"not relevant (0-{rel.relevant_label - 1})" if rel.relevant_label > 1 else "not relevant (0)"
            )
        else:
            header += ["relevant (1)", "not relevant (0)"]
        header += ["unjudged", "mean relevance"]
        out += _table(header, prows)
        out += [
            "",
            f"Shares of the top {rel.depth} results of every question (they add up to 100% without relevant+, "
            "which counts highly relevant and relevant together). Mean relevance: per question the mean label "
            f"of its top {rel.depth} (unjudged = 0), averaged over questions, with its interval.",
            "",
        ]
        if rel.graded:
            out += ["Mean relevance label by rank (unjudged = 0):", ""]
            header = ["run", *(str(i) for i in range(1, rel.depth + 1))]
            out += _table(header, [[escape(p.run), *(fmt_value(v, 2) for v in p.mean_by_rank)] for p in rel.profiles])
            out.append("")

    if report.ragas is not None:
        rg = report.ragas
        out += ["## RAGAS", ""]
        rows = []
        for col in rg.columns:
            for run, iv in rg.values[col].items():
                d = rg.differences.get(col, {}).get(run)
                rcells = [
                    escape(col),
                    escape(run),
                    fmt_value(iv.estimate),
                    fmt_ci(iv),
                    escape(rg.scored_note(col, run)),
                ]
                if d is None:
                    rcells += ["", "", ""]
                else:
                    left = rg.left_out[col].get(run, 0)
                    rcells += [
                        f"{fmt_diff(d.estimate)} {fmt_ci(d, sign=True)}",
                        fmt_p(rg.pvalues_adjusted[col].get(run)),
                        f"{left} (paired over {d.n})" if left else "0",
                    ]
                rows.append(rcells)
        header = ["column", "run", "mean", "CI", "n", f"vs {escape(report.baseline)}", "p adj", "left out"]
        out += _table(header, rows, "llrrlrrr")
        out += [
            "",
            "Means are over the rows RAGAS scored (n); a row it could not score is counted, not averaged. "
            "Differences are paired over the questions scored for both runs (the others are left out).",
            "",
            f"> {escape(rg.note)}",
            "",
        ]

    if report.per_query is not None:
        out += _per_query(report)

    if report.trend or report.trend_notes:
        out += ["## Trend over saved runs", ""]
        if report.trend_metric:
            out += [f"Metric: {escape(report.trend_metric)}, one series per run name (and per comparable group).", ""]
        out += [f"- {escape(n)}" for n in report.trend_notes]
        if report.trend_notes:
            out.append("")
        rows = []
        for series in report.trend:
            for p in series.points:
                rid = "" if p.record_id is None else str(p.record_id)
                rows.append([escape(series.label), escape(p.timestamp), rid, fmt_value(p.mean)])
        if rows:
            out += _table(["series", "saved", "record", "mean"], rows, "lllr")
            out.append("")

    if report.queries:
        out += ["## Best and worst questions", ""]
        for rq in report.queries:
            for label, items in (("best", rq.best), ("worst", rq.worst)):
                if not items:
                    continue
                out += [f"**{escape(rq.run)}, {label} by {rq.metric}**", ""]
                out += _table(
                    ["question", rq.metric, "first relevant", "expected", "retrieved", "top chunk"],
                    _query_rows(items, True),
                    "lrrlll",
                )
                out.append("")

    if report.failed_top1:
        out += ["## Failed questions (top result judged not relevant)", ""]
        out += _table(
            ["run", "failed", "share", "top result unjudged", "no result"],
            [
                [
                    escape(f.run),
                    str(f.count),
                    fmt_pct(f.count / f.num_queries if f.num_queries else None),
                    str(f.unjudged),
                    str(f.empty),
                ]
                for f in report.failed_top1
            ],
        )
        out.append("")
        for f in report.failed_top1:
            if f.items:
                out += _query_list(f.run, "top result judged 0", f.items, f.count)

    if report.failures:
        out += [f"## Failures (hit = a relevant chunk in the top {report.failures_k})", ""]
        for rf in report.failures:
            counts = ", ".join(f"{fl.label}: {fl.count}" for fl in rf.lists)
            out += [f"**{escape(rf.run)}** ({rf.num_queries} questions): {counts}", ""]
            for fl in rf.lists:
                if fl.items:
                    out += _query_list(rf.run, fl.title, fl.items, fl.count)
        if len(report.runs) > 1:
            out += [f"Questions no run solves: {len(report.unsolved)}", ""]
            if report.unsolved:
                out += _table(
                    ["question", "first relevant", "expected", "retrieved", "top chunk"],
                    _query_rows(report.unsolved, False),
                    "lrlll",
                )
                out.append("")

    out += ["## How to read this report", ""]
    out += [f"- {escape(n)}" for n in report.notes]
    return "\n".join(out) + "\n"
