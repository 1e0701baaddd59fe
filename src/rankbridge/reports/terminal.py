"""The report in the terminal: rich tables (rich is imported only here, when printing).

Strings from data go into rich ``Text`` objects, never into markup, so a query holding ``[bold]`` or
``<script>`` prints as it is.

Examples
--------
>>> from rankbridge.analysis import compare
>>> from rankbridge.reports import build_report
>>> cmp = compare({"bm25": {"q1": ["x", "d1"]}}, {"q1": {"d1": 1}}, ["mrr@10"])
>>> text = render_text(build_report(cmp, generated_at="2024-01-01"))
>>> "the first relevant chunk typically sits at rank 2" in text
True
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

from rankbridge.errors import MissingExtraError
from rankbridge.reports.cells import escape_controls, fmt_ci, fmt_diff, fmt_p, fmt_pct, fmt_value

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

    from rankbridge.reports.model import QueryItem, Report

__all__ = ["print_report", "render_text"]


def _t(text: object, style: str = "") -> Any:
    """A rich ``Text`` of a string with its control characters shown as escapes (never markup)."""
    from rich.text import Text

    return Text(escape_controls(text), style=style)


def _rich() -> Any:
    try:
        import rich
    except ImportError as exc:
        raise MissingExtraError("rich", "report", "The terminal report") from exc
    return rich


def _query_table(title: str, items: tuple[QueryItem, ...], metric: str | None) -> Any:
    from rich.table import Table

    table = Table(title=_t(title), title_justify="left", show_lines=False, expand=False)
    table.add_column("question", overflow="fold", max_width=48)
    if metric:
        table.add_column(metric, justify="right")
    table.add_column("1st rel", justify="right")
    table.add_column("expected", overflow="fold", max_width=24)
    table.add_column("retrieved", overflow="fold", max_width=30)
    table.add_column("top chunk", overflow="fold", max_width=40)
    for it in items:
        q = it.query_id + (f": {it.query}" if it.query else "")
        cells = [_t(q)]
        if metric:
            cells.append(_t(fmt_value(it.value)))
        cells += [
            _t("-" if it.first_relevant_rank is None else str(it.first_relevant_rank)),
            _t(", ".join(it.expected[:5]) or "-"),
            _t(", ".join(it.retrieved) or "-"),
            _t(f"error: {it.error}" if it.error else (it.top_text or "-"), style="dim"),
        ]
        table.add_row(*cells)
    return table


def print_report(report: Report, console: Console | None = None) -> None:
    """Print the report with rich; plain Markdown when rich is not installed."""
    try:
        _rich()
    except MissingExtraError:
        print(report.to_markdown())
        return
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:  # piped: don't squeeze the tables into 80 columns
            console = Console(width=max(console.width, 140))
    s = report.settings
    level = f"{s['level']:.0%}"
    console.rule(_t(report.title, style="bold"))
    console.print(
        _t(
            f"{report.num_queries} questions · runs: {', '.join(report.runs)} · baseline {report.baseline} · "
            f"{level} intervals · {s['test']} test, "
            f"{'Holm-adjusted' if s['correction'] == 'holm' else 'unadjusted'} p (alpha {s['alpha']:g})",
            style="dim",
        )
    )

    rec = report.recommendation
    if rec is not None:
        console.print()
        console.print(_t(rec.text, style="bold green" if rec.significant else "bold"))
        for n in rec.notes:
            console.print(_t(f"  {n}", style="dim"))

    console.print()
    console.print(_t("Headlines", style="bold underline"))
    for h in report.headlines:
        line = _t("  ")
        line.append(f"{h.metric} {fmt_value(h.value.estimate)}", style="bold")
        line.append(f" {fmt_ci(h.value)} ", style="dim")
        line.append(escape_controls(f"({h.run}) "))
        line.append(escape_controls(h.reading))
        if h.versus:
            line.append("\n    " + escape_controls(h.versus), style="green" if h.significant else "dim")
        console.print(line)
    if report.warnings:
        console.print()
        for w in report.warnings:
            console.print(_t("warning: ", style="yellow").append(_t(w)))

    table = Table(title="Strategies", title_justify="left", caption=f"* significant at alpha {s['alpha']:g}")
    partial = any(r.unscored or r.left_out for r in report.strategies)
    columns = ["metric", "run", "mean", f"{level} CI", f"vs {report.baseline}", "CI", "p", "p adj", "d", "W/T/L"]
    for col in columns + (["scored"] if partial else []):
        table.add_column(_t(col), justify="left" if col in ("metric", "run", "scored") else "right")
    metrics_seen: set[str] = set()
    for i, r in enumerate(report.strategies):
        last = i + 1 == len(report.strategies) or report.strategies[i + 1].metric != r.metric
        cells: list[Any] = [
            _t("" if r.metric in metrics_seen else r.metric),
            _t(r.run + (" (base)" if r.baseline else "")),
            _t(fmt_value(r.mean.estimate)),
            _t(fmt_ci(r.mean), style="dim"),
        ]
        metrics_seen.add(r.metric)
        if r.difference is None:
            cells += [_t("")] * 6
        else:
            style = ("bold green" if r.difference.estimate > 0 else "bold red") if r.significant else ""
            cells += [
                _t(fmt_diff(r.difference.estimate) + (" *" if r.significant else ""), style=style),
                _t(fmt_ci(r.difference, sign=True), style="dim"),
                _t(fmt_p(r.pvalue)),
                _t(fmt_p(r.pvalue_adjusted)),
                _t(fmt_value(r.effect_size, 2)),
                _t(f"{r.wins}/{r.ties}/{r.losses}"),
            ]
        if partial:
            note = r.scored_note or f"n={r.mean.n}"
            if r.left_out:
                note += f"; paired over {r.paired_n}, {r.left_out} left out"
            cells.append(_t(note, style="yellow" if r.unscored or r.left_out else "dim"))
        table.add_row(*cells, end_section=last)
    console.print()
    console.print(table)

    if report.cutoffs is not None:
        c = report.cutoffs
        t = Table(title="By rank cut-off", title_justify="left")
        t.add_column("measure")
        t.add_column("run")
        for k in c.ks:
            t.add_column(f"@{k}", justify="right")
        for m in c.measures:
            runs = list(c.values[m])
            for j, run in enumerate(runs):
                t.add_row(
                    _t(m if j == 0 else ""),
                    _t(run),
                    *(_t(fmt_value(v)) for v in c.values[m][run]),
                    end_section=j == len(runs) - 1,
                )
        console.print()
        console.print(t)

    if report.categories is not None:
        cat = report.categories
        t = Table(title=_t(f"By {cat.by}"), title_justify="left")
        t.add_column(_t(cat.by))
        t.add_column("n", justify="right")
        for m in cat.metrics:
            for run in cat.runs:
                t.add_column(_t(m).append("\n").append(_t(run)), justify="right")
        for row in cat.rows:
            cells = [_t(row.name + (" (small)" if row.warning else "")), _t(str(row.n))]
            for m in cat.metrics:
                for run in cat.runs:
                    iv = row.values[m].get(run)
                    cells.append(_t("-" if iv is None else fmt_value(iv.estimate)))
            t.add_row(*cells)
        console.print()
        console.print(t)

    if report.rerank is not None:
        _print_rerank(console, report)

    if report.relevance is not None:
        rel = report.relevance
        t = Table(title=f"Relevance of the top {rel.depth} results", title_justify="left", caption=_t(rel.reading))
        t.add_column("run")
        if rel.graded:
            t.add_column(f"highly relevant (= {rel.high_label})", justify="right")
            t.add_column(f"relevant+ (>= {rel.relevant_label})", justify="right")
            t.add_column(f"not relevant (< {rel.relevant_label})", justify="right")
        else:
            t.add_column("relevant", justify="right")
            t.add_column("not relevant", justify="right")
        t.add_column("unjudged", justify="right")
        t.add_column("mean relevance", justify="right")
        if rel.graded:
            for i in range(1, rel.depth + 1):
                t.add_column(f"r{i}", justify="right")
        for p in rel.profiles:
            cells = [_t(p.run)]
            if rel.graded:
                cells += [_t(fmt_pct(p.shares["highly relevant"])), _t(fmt_pct(p.relevant_plus))]
            else:
                cells.append(_t(fmt_pct(p.shares["relevant"])))
            cells += [_t(fmt_pct(p.shares["not relevant"])), _t(fmt_pct(p.shares["unjudged"]))]
            mr = p.mean_relevance
            cells.append(_t("-" if mr is None else f"{fmt_value(mr.estimate, 2)} {fmt_ci(mr, 2)}"))
            if rel.graded:
                cells += [_t(fmt_value(v, 1)) for v in p.mean_by_rank]
            t.add_row(*cells)
        console.print()
        console.print(t)

    if report.ragas is not None:
        rg = report.ragas
        t = Table(title="RAGAS", title_justify="left")
        for col in ("column", "run", "mean", "CI", "n", f"vs {report.baseline}", "p adj", "left out"):
            t.add_column(_t(col), justify="left" if col in ("column", "run", "n") else "right")
        for col in rg.columns:
            for run, iv in rg.values[col].items():
                k = rg.unscored.get(col, {}).get(run, 0)
                cells = [_t(col), _t(run), _t(fmt_value(iv.estimate)), _t(fmt_ci(iv), style="dim")]
                cells.append(_t(rg.scored_note(col, run), style="yellow" if k else ""))
                d = rg.differences.get(col, {}).get(run)
                if d is None:
                    cells += [_t("")] * 3
                else:
                    left = rg.left_out[col].get(run, 0)
                    cells += [
                        _t(f"{fmt_diff(d.estimate)} {fmt_ci(d, sign=True)}"),
                        _t(fmt_p(rg.pvalues_adjusted[col].get(run))),
                        _t(f"{left} (paired over {d.n})" if left else "0"),
                    ]
                t.add_row(*cells)
        console.print()
        console.print(t)
        console.print(_t(rg.note, style="dim"))

    if report.per_query is not None:
        _print_per_query(console, report)

    if report.trend_notes:
        console.print()
        for n in report.trend_notes:
            console.print(_t("trend: ", style="yellow").append(_t(n)))
    if report.trend:
        t = Table(title=_t(f"Trend of {report.trend_metric} over saved runs"), title_justify="left")
        for col in ("series", "saved", "mean"):
            t.add_column(col, justify="right" if col == "mean" else "left")
        for series in report.trend:
            for pt in series.points:
                t.add_row(_t(series.label), _t(pt.timestamp), _t(fmt_value(pt.mean)))
        console.print()
        console.print(t)

    for rq in report.queries:
        if rq.worst:
            console.print(_query_table(f"{rq.run}: worst by {rq.metric}", rq.worst[:5], rq.metric))
    if report.failed_top1:
        t = Table(title="Failed questions: top result judged not relevant", title_justify="left")
        for col in ("run", "failed", "share", "top result unjudged", "no result"):
            t.add_column(col, justify="left" if col == "run" else "right")
        for f in report.failed_top1:
            share = fmt_pct(f.count / f.num_queries if f.num_queries else None)
            t.add_row(_t(f.run), _t(str(f.count)), _t(share), _t(str(f.unjudged)), _t(str(f.empty)))
        console.print()
        console.print(t)
        for f in report.failed_top1:
            if f.items:
                console.print(_query_table(f"{f.run}: top result judged 0", f.items[:5], None))
    if report.failures:
        t = Table(title=f"Failures (hit = a relevant chunk in the top {report.failures_k})", title_justify="left")
        t.add_column("run")
        for fl in report.failures[0].lists:
            t.add_column(_t(fl.label), justify="right")
        for rf in report.failures:
            t.add_row(_t(rf.run), *(_t(str(fl.count)) for fl in rf.lists))
        console.print()
        console.print(t)
        if len(report.runs) > 1 and report.unsolved:
            console.print(_query_table("No strategy solves", report.unsolved, None))
    console.print()
    for note in report.notes:
        console.print(_t(f"· {note}", style="dim"))


def _print_per_query(console: Any, report: Report) -> None:
    from rich.table import Table

    pq = report.per_query
    assert pq is not None
    shown = len(pq.rows)
    which = f"the {shown} worst by {pq.by}" if shown < pq.total else f"all {pq.total}, worst by {pq.by} first"
    t = Table(title=_t(f"Per question: {which} of {pq.total}"), title_justify="left", caption="– = not scored")
    t.add_column("question", overflow="fold", max_width=48)
    for m in pq.metrics:
        for run in pq.runs:
            t.add_column(_t(f"{m}\n{run}"), justify="right")
    unscored: list[str] = []
    for row in pq.rows:
        cells = [_t(row.query_id + (f": {row.query}" if row.query else ""))]
        for m in pq.metrics:
            for run in pq.runs:
                v = row.values[m][run]
                if math.isnan(v):
                    cells.append(_t("–", style="yellow"))
                    unscored.append(f"{row.query_id}, {m}, {run}: {row.reasons.get(m, {}).get(run, 'not scored')}")
                else:
                    cells.append(_t(fmt_value(v)))
        t.add_row(*cells)
    console.print()
    console.print(t)
    if unscored:
        console.print(_t("not scored:", style="yellow"))
        for line in unscored:
            console.print(_t(f"  {line}"))


def _print_rerank(console: Any, report: Report) -> None:
    from rich.table import Table

    rr = report.rerank
    assert rr is not None
    console.print()
    if not rr.paired:
        console.print(_t("With and without reranker", style="bold underline"))
        console.print(_t(rr.note, style="dim"))
        return
    t = Table(title="With and without reranker", title_justify="left", caption=_t(rr.note))
    for col in ("strategy", "without reranker", "with reranker"):
        t.add_column(col)
    for col in (f"{rr.metric} without", f"{rr.metric} with", "difference", "p"):
        t.add_column(col, justify="right")
    t.add_column(f"mean rel. without (top {rr.depth})", justify="right")
    t.add_column("mean rel. with", justify="right")
    for row in rr.rows:
        m0, r0 = row.values["without"], row.relevance["without"]
        m1, r1 = row.values.get("with"), row.relevance.get("with")
        diff = "-" if row.difference is None else fmt_diff(row.difference.estimate) + (" *" if row.significant else "")
        t.add_row(
            _t(row.strategy),
            _t(row.without),
            _t(row.with_ or "-"),
            _t(f"{fmt_value(m0.estimate)} {fmt_ci(m0)}"),
            _t("-" if m1 is None else f"{fmt_value(m1.estimate)} {fmt_ci(m1)}"),
            _t(diff),
            _t(fmt_p(row.pvalue)),
            _t(fmt_value(r0.estimate, 2)),
            _t("-" if r1 is None else fmt_value(r1.estimate, 2)),
        )
    console.print(t)


def render_text(report: Report, *, width: int = 120) -> str:
    """The terminal rendering as plain text (no colour codes), e.g. for a log file.

    Raises
    ------
    MissingExtraError
        When rich is not installed.
    """
    _rich()
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False, record=False)
    print_report(report, console=console)
    return buf.getvalue()
