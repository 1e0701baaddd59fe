"""The report in the terminal: rich tables (rich is imported only here, when printing).

Strings from data go into rich ``Text`` objects, never into markup, so a query holding ``[bold]`` or
``<script>`` prints as it is.

Examples
--------
>>> from rankbridge.compare import compare
>>> from rankbridge.reports import build_report
>>> cmp = compare({"bm25": {"q1": ["x", "d1"]}}, {"q1": {"d1": 1}}, ["mrr@10"])
>>> text = render_text(build_report(cmp, generated_at="2024-01-01"))
>>> "the first relevant chunk typically sits at rank 2" in text
True
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from rankbridge.errors import MissingExtraError
from rankbridge.reports.model import (
    RELEVANCE_CLASSES,
    QueryItem,
    fmt_ci,
    fmt_diff,
    fmt_p,
    fmt_pct,
    fmt_value,
)

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

    from rankbridge.reports.model import Report

__all__ = ["print_report", "render_text"]


def _rich() -> Any:
    try:
        import rich
    except ImportError as exc:
        raise MissingExtraError("rich", "report", "The terminal report") from exc
    return rich


def _query_table(title: str, items: tuple[QueryItem, ...], metric: str | None) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title), title_justify="left", show_lines=False, expand=False)
    table.add_column("question", overflow="fold", max_width=48)
    if metric:
        table.add_column(metric, justify="right")
    table.add_column("1st rel", justify="right")
    table.add_column("expected", overflow="fold", max_width=24)
    table.add_column("retrieved", overflow="fold", max_width=30)
    table.add_column("top chunk", overflow="fold", max_width=40)
    for it in items:
        q = it.query_id + (f": {it.query}" if it.query else "")
        cells = [Text(q)]
        if metric:
            cells.append(Text(fmt_value(it.value)))
        cells += [
            Text("-" if it.first_relevant_rank is None else str(it.first_relevant_rank)),
            Text(", ".join(it.expected[:5]) or "-"),
            Text(", ".join(it.retrieved) or "-"),
            Text(f"error: {it.error}" if it.error else (it.top_text or "-"), style="dim"),
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
    from rich.text import Text

    if console is None:
        console = Console()
        if not console.is_terminal:  # piped: don't squeeze the tables into 80 columns
            console = Console(width=max(console.width, 140))
    s = report.settings
    level = f"{s['level']:.0%}"
    console.rule(Text(report.title, style="bold"))
    console.print(
        Text(
            f"{report.num_queries} questions · runs: {', '.join(report.runs)} · baseline {report.baseline} · "
            f"{level} intervals · {s['test']} test, "
            f"{'Holm-adjusted' if s['correction'] == 'holm' else 'unadjusted'} p (alpha {s['alpha']:g})",
            style="dim",
        )
    )

    console.print()
    console.print(Text("Headlines", style="bold underline"))
    for h in report.headlines:
        line = Text("  ")
        line.append(f"{h.metric} {fmt_value(h.value.estimate)}", style="bold")
        line.append(f" {fmt_ci(h.value)} ", style="dim")
        line.append(f"({h.run}) ")
        line.append(h.reading)
        if h.versus:
            line.append(f"\n    {h.versus}", style="green" if h.significant else "dim")
        console.print(line)
    if report.warnings:
        console.print()
        for w in report.warnings:
            console.print(Text("warning: ", style="yellow").append(Text(w)))

    table = Table(title="Strategies", title_justify="left", caption=f"* significant at alpha {s['alpha']:g}")
    for col in ("metric", "run", "mean", f"{level} CI", f"vs {report.baseline}", "CI", "p", "p adj", "d", "W/T/L"):
        table.add_column(col, justify="left" if col in ("metric", "run") else "right")
    metrics_seen: set[str] = set()
    for i, r in enumerate(report.strategies):
        last = i + 1 == len(report.strategies) or report.strategies[i + 1].metric != r.metric
        cells: list[Any] = [
            Text("" if r.metric in metrics_seen else r.metric),
            Text(r.run + (" (base)" if r.baseline else "")),
            Text(fmt_value(r.mean.estimate)),
            Text(fmt_ci(r.mean), style="dim"),
        ]
        metrics_seen.add(r.metric)
        if r.difference is None:
            cells += [Text("")] * 6
        else:
            style = ("bold green" if r.difference.estimate > 0 else "bold red") if r.significant else ""
            cells += [
                Text(fmt_diff(r.difference.estimate) + (" *" if r.significant else ""), style=style),
                Text(fmt_ci(r.difference, sign=True), style="dim"),
                Text(fmt_p(r.pvalue)),
                Text(fmt_p(r.pvalue_adjusted)),
                Text(fmt_value(r.effect_size, 2)),
                Text(f"{r.wins}/{r.ties}/{r.losses}"),
            ]
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
                    Text(m if j == 0 else ""),
                    Text(run),
                    *(Text(fmt_value(v)) for v in c.values[m][run]),
                    end_section=j == len(runs) - 1,
                )
        console.print()
        console.print(t)

    if report.categories is not None:
        cat = report.categories
        t = Table(title=f"By {cat.by}", title_justify="left")
        t.add_column(cat.by)
        t.add_column("n", justify="right")
        for m in cat.metrics:
            for run in cat.runs:
                t.add_column(f"{m}\n{run}", justify="right")
        for row in cat.rows:
            cells = [Text(row.name + (" (small)" if row.warning else "")), Text(str(row.n))]
            for m in cat.metrics:
                for run in cat.runs:
                    iv = row.values[m].get(run)
                    cells.append(Text("-" if iv is None else fmt_value(iv.estimate)))
            t.add_row(*cells)
        console.print()
        console.print(t)

    if report.relevance is not None:
        rel = report.relevance
        classes = [c for c in RELEVANCE_CLASSES if rel.graded or c != "highly relevant"]
        t = Table(title=f"Relevance of the top {rel.depth} results", title_justify="left", caption=rel.reading)
        t.add_column("run")
        for cls in classes:
            t.add_column(f"{cls} (>= {rel.high_label})" if cls == "highly relevant" else cls, justify="right")
        if rel.graded:
            for i in range(1, rel.depth + 1):
                t.add_column(f"r{i}", justify="right")
        for p in rel.profiles:
            cells = [Text(p.run), *(Text(fmt_pct(p.shares[c])) for c in classes)]
            if rel.graded:
                cells += [Text(fmt_value(v, 1)) for v in p.mean_by_rank]
            t.add_row(*cells)
        console.print()
        console.print(t)

    if report.ragas is not None:
        rg = report.ragas
        t = Table(title="RAGAS", title_justify="left")
        for col in ("column", "run", "mean", "CI", "n"):
            t.add_column(col, justify="left" if col in ("column", "run") else "right")
        for col in rg.columns:
            for run, iv in rg.values[col].items():
                t.add_row(Text(col), Text(run), Text(fmt_value(iv.estimate)), Text(fmt_ci(iv)), Text(str(iv.n)))
        console.print()
        console.print(t)
        console.print(Text(rg.note, style="dim"))

    if report.trend:
        t = Table(title="Trend over saved runs", title_justify="left")
        for col in ("series", "saved", "mean"):
            t.add_column(col, justify="right" if col == "mean" else "left")
        for series in report.trend:
            for pt in series.points:
                t.add_row(Text(series.label), Text(pt.timestamp), Text(fmt_value(pt.mean)))
        console.print()
        console.print(t)

    for rq in report.queries:
        if rq.worst:
            console.print(_query_table(f"{rq.run}: worst by {rq.metric}", rq.worst[:5], rq.metric))
    if report.failures:
        t = Table(title=f"Failures (hit = a relevant chunk in the top {report.failures_k})", title_justify="left")
        t.add_column("run")
        for fl in report.failures[0].lists:
            t.add_column(fl.label, justify="right")
        for rf in report.failures:
            t.add_row(Text(rf.run), *(Text(str(fl.count)) for fl in rf.lists))
        console.print()
        console.print(t)
        if len(report.runs) > 1 and report.unsolved:
            console.print(_query_table("No strategy solves", report.unsolved, None))
    console.print()
    for note in report.notes:
        console.print(Text(f"· {note}", style="dim"))


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
