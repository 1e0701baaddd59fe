"""Plots of a :class:`~rankbridge.reports.model.Report`, drawn with matplotlib as inline SVG strings.

Figures are built with the object-oriented API on an Agg canvas (no pyplot, so the user's backend and
global figure state are never touched) and saved as SVG with text kept as text. The SVG is trimmed for
inlining in HTML: no XML declaration, no DOCTYPE, no metadata, no namespace URLs, and it scales to the
page width. matplotlib escapes every label it writes, and math parsing is off, so a run or category name
is drawn literally.

Examples
--------
>>> from rankbridge.analysis import compare
>>> from rankbridge.reports import build_report
>>> cmp = compare({"a": {"q1": ["d1"]}, "b": {"q1": ["x"]}}, {"q1": {"d1": 1}}, ["P@1"])
>>> svgs = render_plots(build_report(cmp, generated_at="2024-01-01"))
>>> sorted(svgs), svgs["metrics"].startswith("<svg")
(['cutoffs', 'metrics', 'relevance'], True)
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rankbridge.errors import MissingExtraError
from rankbridge.reports.cells import RELEVANCE_CLASSES, fmt_value

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from rankbridge.reports.model import Report

__all__ = ["render_plots"]

#: Colours of the runs, in order (colour-blind friendly, from the Okabe-Ito palette).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
RELEVANCE_COLORS = {
    "highly relevant": "#1a7f37",
    "relevant": "#7cc48a",
    "not relevant": "#d9d9d9",
    "unjudged": "#f2c46d",
}
_RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "rankbridge",
    "text.parse_math": False,
    "font.family": "sans-serif",
    "font.size": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10.0,
    "axes.titleweight": "bold",
    "axes.grid": True,
    "grid.color": "#e5e5e5",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "axes.edgecolor": "#888888",
    "legend.frameon": False,
}


def _require() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingExtraError("matplotlib", "report", "plots in the HTML report") from exc
    return matplotlib


@contextmanager
def _style() -> Iterator[None]:
    mpl = _require()
    with mpl.rc_context(_RC):
        yield


def _figure(width: float, height: float) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


_STRIP = [
    re.compile(r"<\?xml[^>]*\?>\s*"),
    re.compile(r"<!DOCTYPE[^>]*>\s*", re.IGNORECASE),
    re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL),
    re.compile(r'\s+xmlns(:\w+)?="[^"]*"'),
]


def _svg(fig: Figure, label: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    for pattern in _STRIP:
        text = pattern.sub("", text)
    # Scale with the page (the viewBox keeps the aspect ratio), but never much above the drawn size.
    size = re.search(r'<svg\s+width="([\d.]+)pt"\s+height="[^"]*"', text)
    if size is not None:
        max_px = float(size.group(1)) * 4 / 3 * 1.1
        text = text[: size.start()] + f'<svg class="plot" style="max-width:{max_px:.0f}px"' + text[size.end() :]
    return text.replace("<svg ", f'<svg role="img" aria-label="{_attr(label)}" ', 1).strip()


def _attr(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _short(name: str, limit: int = 18) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _grid(n: int, cols: int = 4) -> tuple[int, int]:
    c = min(n, cols)
    return math.ceil(n / c), c


def metric_bars(report: Report) -> str:
    """One panel per metric: a bar per run with its confidence interval as a whisker."""
    metrics = report.metrics
    rows, cols = _grid(len(metrics))
    fig = _figure(2.6 * cols + 0.6, 2.5 * rows + 0.5)
    axes = fig.subplots(rows, cols, squeeze=False)
    runs = report.runs
    for idx, metric in enumerate(metrics):
        ax = axes[idx // cols][idx % cols]
        by_run = {r.run: r for r in report.strategies if r.metric == metric}
        est = [by_run[r].mean.estimate for r in runs]
        lo = [
            max(0.0, e - by_run[r].mean.low) if not math.isnan(by_run[r].mean.low) else 0.0
            for e, r in zip(est, runs, strict=True)
        ]
        hi = [
            max(0.0, by_run[r].mean.high - e) if not math.isnan(by_run[r].mean.high) else 0.0
            for e, r in zip(est, runs, strict=True)
        ]
        x = list(range(len(runs)))
        bars = ax.bar(
            x,
            est,
            yerr=[lo, hi],
            color=[_color(i) for i in x],
            width=0.65,
            capsize=4,
            error_kw={"elinewidth": 1.1, "ecolor": "#333333"},
        )
        for i, (b, e) in enumerate(zip(bars, est, strict=True)):
            if math.isnan(e):
                continue
            mark = "*" if by_run[runs[i]].significant else ""
            ax.annotate(
                f"{fmt_value(e)}{mark}",
                (b.get_x() + b.get_width() / 2, e + hi[i]),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=8,
                color="#222222",
            )
        ax.set_xticks(x, [""] * len(x))
        ax.tick_params(axis="x", length=0)
        ax.set_title(metric)
        ax.grid(axis="x", visible=False)
        top = max([e + h for e, h in zip(est, hi, strict=True) if not math.isnan(e)] or [1.0])
        ax.set_ylim(0, 1.12 if top <= 1.0 else top * 1.15)
    for idx in range(len(metrics), rows * cols):
        axes[idx // cols][idx % cols].set_visible(False)
    from matplotlib.patches import Patch

    handles = [Patch(color=_color(i), label=_short(r, 40)) for i, r in enumerate(runs)]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(runs), 4), fontsize=8.5)
    level = report.settings.get("level", 0.95)
    fig.suptitle(
        f"Mean per strategy with {level:.0%} intervals (* = significant vs {_short(report.baseline)})", fontsize=10
    )
    return _svg(fig, "mean of each metric per strategy with confidence intervals")


def cutoff_lines(report: Report) -> str | None:
    """One panel per measure: the mean at each rank cut-off, a line per run."""
    c = report.cutoffs
    if c is None:
        return None
    fig = _figure(2.6 * len(c.measures) + 0.6, 2.6)
    axes = fig.subplots(1, len(c.measures), squeeze=False)[0]
    pos = list(range(len(c.ks)))
    for ax, measure in zip(axes, c.measures, strict=True):
        for i, run in enumerate(c.values[measure]):
            ax.plot(
                pos, c.values[measure][run], marker="o", markersize=4, linewidth=1.6, color=_color(i), label=_short(run)
            )
        ax.set_xticks(pos, [str(k) for k in c.ks])
        ax.set_xlabel("k (rank cut-off)")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{measure}@k")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncol=min(len(labels), 6), fontsize=8.5)
    return _svg(fig, "metrics by rank cut-off")


def category_heatmap(report: Report) -> str | None:
    """One heatmap per metric (up to four): categories by runs, each cell annotated with its mean."""
    cat = report.categories
    if cat is None or not cat.rows:
        return None
    metrics = cat.metrics[:4]
    runs = cat.runs
    n_rows = len(cat.rows)
    rows, cols = _grid(len(metrics), cols=2)
    panel_w = min(5.2, max(2.8, 0.85 * len(runs) + 1.8))
    fig = _figure(panel_w * cols + 0.9, rows * (0.36 * n_rows + 1.0) + 0.2)
    grid_axes = fig.subplots(rows, cols, squeeze=False)
    axes = [grid_axes[i // cols][i % cols] for i in range(len(metrics))]
    for i in range(len(metrics), rows * cols):
        grid_axes[i // cols][i % cols].set_visible(False)
    import numpy as np

    image = None
    for j, (ax, metric) in enumerate(zip(axes, metrics, strict=True)):
        grid = np.full((n_rows, len(runs)), np.nan)
        for r, row in enumerate(cat.rows):
            for c, run in enumerate(runs):
                iv = row.values[metric].get(run)
                if iv is not None:
                    grid[r, c] = iv.estimate
        finite = grid[np.isfinite(grid)]
        vmax = 1.0 if finite.size == 0 or finite.max() <= 1.0 else float(finite.max())
        image = ax.imshow(grid, cmap="YlGnBu", vmin=0.0, vmax=vmax, aspect="auto")
        for r in range(n_rows):
            for c in range(len(runs)):
                v = grid[r, c]
                if math.isfinite(v):
                    ax.text(
                        c,
                        r,
                        fmt_value(v, 2),
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if v > 0.6 * vmax else "#222222",
                    )
        ax.set_xticks(
            range(len(runs)),
            [_short(r, 22) for r in runs],
            rotation=25 if len(runs) > 2 else 0,
            ha="right" if len(runs) > 2 else "center",
        )
        labels = [f"{_short(row.name, 24)} ({row.n})" for row in cat.rows]
        ax.set_yticks(range(n_rows), labels if j % cols == 0 else [""] * n_rows)
        ax.grid(False)
        ax.set_title(metric)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.9, pad=0.02, aspect=30)
    return _svg(fig, f"metrics per {cat.by}")


def relevance_plot(report: Report) -> str | None:
    """Stacked shares of highly relevant / relevant / not relevant / unjudged results per run, and for
    graded judgments the mean label by rank position."""
    rel = report.relevance
    if rel is None:
        return None
    panels = 2 if rel.graded else 1
    fig = _figure(5.2 * panels + 0.4, 0.45 * len(rel.profiles) + 1.7 if not rel.graded else 2.8)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    ax = axes[0]
    classes = [c for c in RELEVANCE_CLASSES if rel.graded or c != "highly relevant"]
    names = [p.run for p in rel.profiles]
    y = list(range(len(names)))[::-1]
    left = [0.0] * len(names)
    for c in classes:
        shares = [0.0 if math.isnan(p.shares[c]) else p.shares[c] for p in rel.profiles]
        label = f"highly relevant (>= {rel.high_label})" if c == "highly relevant" else c
        ax.barh(y, shares, left=left, color=RELEVANCE_COLORS[c], label=label, height=0.6, edgecolor="white")
        for yi, l0, s in zip(y, left, shares, strict=True):
            if s >= 0.08:
                ax.text(l0 + s / 2, yi, f"{100 * s:.0f}%", ha="center", va="center", fontsize=8, color="#222222")
        left = [a + b for a, b in zip(left, shares, strict=True)]
    ax.set_yticks(y, [_short(n, 28) for n in names])
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(_percent())
    ax.set_title(f"What the top {rel.depth} results are")
    ax.grid(axis="y", visible=False)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=len(classes), fontsize=7.5)
    if rel.graded:
        ax2 = axes[1]
        ranks = list(range(1, rel.depth + 1))
        for i, p in enumerate(rel.profiles):
            ax2.plot(
                ranks,
                p.mean_by_rank,
                marker="o",
                markersize=3.5,
                linewidth=1.6,
                color=_color(i),
                label=_short(p.run, 32),
            )
        ax2.set_xticks(ranks)
        ax2.set_xlabel("rank position")
        ax2.set_ylim(0, rel.max_label)
        ax2.set_title(f"Mean relevance label by rank (0-{rel.max_label})")
        ax2.legend(loc="upper right", fontsize=8)
    return _svg(fig, "relevance of the retrieved results")


def _percent() -> Any:
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(xmax=1.0, decimals=0)


def trend_plot(report: Report) -> str | None:
    """Each trend series' mean over saved runs, oldest first."""
    series = [s for s in report.trend if s.points and s.current]
    if not series:
        return None
    fig = _figure(9.0, 2.8)
    ax = fig.subplots()
    stamps: list[str] = sorted({p.timestamp for s in series for p in s.points})
    index = {t: i for i, t in enumerate(stamps)}
    for i, s in enumerate(series):
        xs = [index[p.timestamp] for p in s.points]
        ax.plot(
            xs,
            [p.mean for p in s.points],
            marker="o",
            markersize=4,
            linewidth=1.6,
            color=_color(i),
            label=_short(s.label, 32),
        )
    step = max(1, math.ceil(len(stamps) / 10))
    ticks = list(range(0, len(stamps), step))
    ax.set_xticks(ticks, [_day(stamps[t]) for t in ticks], rotation=20)
    ax.set_title("Trend over saved runs")
    ax.legend(loc="best", fontsize=8)
    return _svg(fig, "metric trend over saved runs")


def trend_groups(report: Report) -> list[tuple[str, list[Any]]]:
    """The trend series grouped by run name, in the report's order: ``[(name or metric, [series...])]``."""
    groups: dict[str, list[Any]] = {}
    for series in report.trend:
        if series.points:
            groups.setdefault(series.name if series.name is not None else series.metric, []).append(series)
    return list(groups.items())


def trend_plot_of(report: Report, name: str, series: Sequence[Any]) -> str:
    """One run name's trend: every comparable group of its saved runs, the current one solid."""
    fig = _figure(9.0, 2.8)
    ax = fig.subplots()
    stamps: list[str] = sorted({p.timestamp for s in series for p in s.points})
    index = {t: i for i, t in enumerate(stamps)}
    for i, s in enumerate(series):
        ax.plot(
            [index[p.timestamp] for p in s.points],
            [p.mean for p in s.points],
            marker="o",
            markersize=4,
            linewidth=1.6,
            linestyle="-" if s.current else "--",
            color=_color(i),
            label=_short(s.label if len(series) > 1 else s.metric, 48),
        )
    step = max(1, math.ceil(len(stamps) / 10))
    ticks = list(range(0, len(stamps), step))
    ax.set_xticks(ticks, [_day(stamps[t]) for t in ticks], rotation=20)
    ax.set_xlabel("saved run")
    ax.set_title(f"{report.trend_metric or series[0].metric} over saved runs: {_short(name, 40)}")
    ax.legend(loc="best", fontsize=8)
    return _svg(fig, f"trend over saved runs of {name}")


def rerank_bars(report: Report) -> str | None:
    """The headline metric per strategy, without and with its reranker, each with its interval."""
    rr = report.rerank
    if rr is None or not rr.paired:
        return None
    rows = rr.rows
    fig = _figure(max(4.5, 1.3 * len(rows) + 1.5), 3.0)
    ax = fig.subplots()
    width = 0.38
    for j, (key, label, color) in enumerate(
        (("without", "without reranker", "#9ecae1"), ("with", "with reranker", PALETTE[0]))
    ):
        xs, est, lo, hi = [], [], [], []
        for i, row in enumerate(rows):
            iv = row.values.get(key)
            if iv is None:
                continue
            xs.append(i + (j - 0.5) * width if row.with_ is not None else i)
            est.append(iv.estimate)
            lo.append(0.0 if math.isnan(iv.low) else max(0.0, iv.estimate - iv.low))
            hi.append(0.0 if math.isnan(iv.high) else max(0.0, iv.high - iv.estimate))
        bars = ax.bar(
            xs,
            est,
            width=width,
            yerr=[lo, hi],
            color=color,
            label=label,
            capsize=3,
            error_kw={"elinewidth": 1.0, "ecolor": "#333333"},
        )
        for b, e, h in zip(bars, est, hi, strict=True):
            if not math.isnan(e):
                ax.annotate(
                    fmt_value(e),
                    (b.get_x() + b.get_width() / 2, e + h),
                    xytext=(0, 2),
                    textcoords="offset points",
                    ha="center",
                    va="bottom",
                    fontsize=7.5,
                )
    ax.set_xticks(range(len(rows)), [_short(r.strategy, 22) for r in rows], rotation=15 if len(rows) > 3 else 0)
    ax.grid(axis="x", visible=False)
    ax.set_title(
        f"{rr.metric} per strategy, without and with reranker ({report.settings.get('level', 0.95):.0%} intervals)"
    )
    ax.legend(loc="upper left", fontsize=8)
    return _svg(fig, f"{rr.metric} per strategy with and without reranker")


def _day(stamp: str) -> str:
    return stamp[:16].replace("T", " ")


def render_plots(report: Report, *, which: Sequence[str] | None = None) -> dict[str, str]:
    """Draw the report's plots: ``{name: svg}`` for the sections that have data.

    Names: ``metrics``, ``rerank``, ``cutoffs``, ``categories``, ``relevance``, ``trend`` (every run name's
    current series, when there are several names) and ``trend.<i>`` (the i-th run name of
    :func:`trend_groups`, every comparable group of its saved runs).

    Raises
    ------
    MissingExtraError
        When matplotlib is not installed (``pip install 'rankbridge[report]'``).
    """
    makers = {
        "metrics": metric_bars,
        "rerank": rerank_bars,
        "cutoffs": cutoff_lines,
        "categories": category_heatmap,
        "relevance": relevance_plot,
        "trend": trend_plot,
    }
    out: dict[str, str] = {}
    with _style():
        for name, make in makers.items():
            if which is not None and name not in which:
                continue
            svg = make(report)
            if svg is not None:
                out[name] = svg
        if which is None or "trend" in which:
            groups = trend_groups(report)
            if len(groups) < 2:
                out.pop("trend", None)  # one run name: its own plot is the whole trend
            for i, (label, series) in enumerate(groups):
                out[f"trend.{i}"] = trend_plot_of(report, label, series)
    return out
