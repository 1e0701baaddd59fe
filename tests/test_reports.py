"""rankbridge.reports: the report model, its readings, and the terminal / Markdown / HTML / JSON renderings.

The HTML report is also opened in headless Chromium (Debian's ``chromium``): it must render, show its plots
(inline SVG) and show a chunk text holding ``<script>`` as text. That test skips when Chromium is absent.
"""

from __future__ import annotations

import io
import json
import math
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rankbridge.analysis import compare, failures
from rankbridge.cli import main
from rankbridge.errors import InputError, MissingExtraError
from rankbridge.evaluate import Evaluation, evaluate
from rankbridge.reports import Report, build_report, plain_reading
from rankbridge.reports.markdown import escape as md_escape
from rankbridge.types import GoldenSet, Hit, Qrels, Query, Run

PAYLOAD = "<script>alert(1)</script>"
STAMP = "2024-06-01T12:00:00+00:00"
CHROMIUM = "/usr/bin/chromium"

N = 20
QIDS = [f"q{i:02d}" for i in range(N)]


# --------------------------------------------------------------------------------------------------
# Toy data
# --------------------------------------------------------------------------------------------------


def _binary_qrels() -> dict[str, dict[str, int]]:
    return {q: {f"rel-{q}": 1, f"nr-{q}": 0} for q in QIDS}


def _ranked(first: set[str]) -> dict[str, list[str]]:
    """The relevant doc at rank 1 for queries in ``first``, at rank 2 for the others."""
    return {q: ([f"rel-{q}", f"nr-{q}"] if q in first else [f"nr-{q}", f"rel-{q}"]) for q in QIDS}


def _binary_runs() -> dict[str, dict[str, list[str]]]:
    return {
        "bad": _ranked(set()),  # mrr 0.5, hit_rate@1 0
        "good": _ranked(set(QIDS)),  # mrr 1.0, hit_rate@1 1
        "mixed": _ranked(set(QIDS[::2])),  # 1.0 on even queries, 0.5 on odd
    }


@pytest.fixture(scope="module")
def binary_report() -> Report:
    cmp = compare(_binary_runs(), _binary_qrels(), ["mrr@10", "hit_rate@1"], baseline="bad", n_resamples=2000)
    return build_report(cmp, generated_at=STAMP, title="Toy report")


def _graded_golden() -> tuple[GoldenSet, dict[str, Run]]:
    """Graded labels 0-3, categories, texts with markup, and a top chunk holding the script payload."""
    queries, qrels, corpus = [], {}, {}
    for i, q in enumerate(QIDS):
        queries.append(
            Query(q, f"How do I <b>configure</b> feature {i} & retries?", category=["setup", "billing"][i % 2])
        )
        qrels[q] = {f"{q}-a": 3, f"{q}-b": 2, f"{q}-c": 1, f"{q}-x": 0}
        for d in ("a", "b", "c", "x", "y"):
            corpus[f"{q}-{d}"] = {"title": "", "text": f"Chunk {d} of {q}.", "metadata": {}}
    corpus["q01-y"]["text"] = f"Danger: {PAYLOAD} injected"
    golden = GoldenSet(queries, Qrels(qrels), corpus=corpus, name="toy")
    rng = np.random.default_rng(7)
    runs: dict[str, Run] = {}
    for name, order in (("bm25", ["y", "x", "c", "b", "a"]), ("dense", ["a", "b", "y", "c", "x"])):
        ranked = {}
        for q in QIDS:
            docs = list(order)
            if rng.random() < 0.3:
                rng.shuffle(docs)
            ranked[q] = [f"{q}-{d}" for d in docs]
        runs[name] = Run.from_ranked(ranked, name=name)
    # q01's top chunk is the payload in both runs; q03 fails in bm25
    runs["bm25"]._data["q01"] = [Hit(f"q01-{d}") for d in ("y", "x", "c", "b", "a")]  # type: ignore[index]
    runs["dense"]._data["q01"] = [Hit(f"q01-{d}") for d in ("y", "a", "b", "c", "x")]  # type: ignore[index]
    del runs["bm25"]._data["q03"]
    runs["bm25"].add_error("q03", "timeout after 5 s")
    return golden, runs


@pytest.fixture(scope="module")
def graded() -> tuple[GoldenSet, dict[str, Run]]:
    return _graded_golden()


@pytest.fixture(scope="module")
def full_report(graded: tuple[GoldenSet, dict[str, Run]]) -> Report:
    golden, runs = graded
    cmp = compare(runs, golden, ["ndcg@5", "mrr@5", "hit_rate@1"], n_resamples=2000)
    t0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
    trend = {("ndcg@5", "bm25"): [(t0 + timedelta(days=i), i + 1, 0.4 + 0.05 * i) for i in range(4)]}
    return build_report(cmp, runs=runs, golden=golden, trend=trend, generated_at=STAMP, k=3)


# --------------------------------------------------------------------------------------------------
# Readings
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "value", "n", "expected"),
    [
        ("mrr", 0.5, None, "the first relevant chunk typically sits at rank 2"),
        ("MRR@10", 0.25, None, "the first relevant chunk typically sits at rank 4"),
        ("mrr@10", 0.4, None, "the first relevant chunk typically sits around rank 2.5"),
        ("mrr@10", 0.97, None, "the first relevant chunk is almost always at rank 1"),
        ("mrr@10", 0.0, None, "no question has a relevant chunk in the top 10"),
        ("hit_rate@5", 0.8, None, "4 in 5 questions get a relevant chunk in the top 5"),
        ("hit_rate@5", 0.8, 50, "4 in 5 questions (40 of 50) get a relevant chunk in the top 5"),
        ("success@3", 0.75, None, "3 in 4 questions get a relevant chunk in the top 3"),
        ("hit_rate@5", 0.58, None, "58% of questions get a relevant chunk in the top 5"),
        ("hit_rate@5", 1.0, 12, "every question (12 of 12) gets a relevant chunk in the top 5"),
        ("hit_rate@5(rel=2)", 0.5, None, "1 in 2 questions get a chunk with label >= 2 in the top 5"),
        ("P@5", 0.4, None, "on average 2.0 of the top 5 chunks are relevant"),
        ("P@1", 0.35, None, "the top chunk is relevant for 35% of questions"),
        ("recall@10", 0.7, None, "the top 10 holds 70% of a question's relevant chunks, on average"),
        (
            "ndcg@10",
            0.62,
            None,
            "the order of the top 10 reaches 62% of the best possible ordering; 1.0 = best chunks first",
        ),
        ("judged@10", 0.4, None, "40% of the top 10 has a relevance judgment; unjudged chunks count as not relevant"),
        ("ragas.faithfulness", 0.9, None, "share of the answer's claims that the retrieved contexts support: 90%"),
        ("mrr", math.nan, None, "undefined (no query could be scored)"),
    ],
)
def test_plain_reading(metric: str, value: float, n: int | None, expected: str) -> None:
    assert plain_reading(metric, value, num_queries=n) == expected


def test_every_measure_has_a_reading() -> None:
    from rankbridge.metrics.measures import MEASURES

    for name, spec in MEASURES.items():
        metric = f"{name}@5" if spec.k == "required" else name
        text = plain_reading(metric, 0.5)
        assert text and "undefined" not in text, name


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------


def test_headlines_pick_the_best_run_and_compare_it(binary_report: Report) -> None:
    mrr, hit = binary_report.headlines
    assert (mrr.metric, mrr.run, mrr.value.estimate) == ("mrr@10", "good", 1.0)
    assert mrr.reading == "the first relevant chunk is almost always at rank 1"
    assert mrr.significant is True
    assert mrr.versus is not None
    assert re.fullmatch(r"\+0\.500 \(\+100%\) vs bad \[\+0\.500, \+0\.500\], p adj [<0-9.]+: significant", mrr.versus)
    assert hit.reading == "every question (20 of 20) gets a relevant chunk in the top 1"


def test_headline_tie_goes_to_the_baseline() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": ["a"], "q2": ["b"]}
    cmp = compare({"x": run, "base": dict(run)}, qrels, ["mrr"], baseline="base")
    assert build_report(cmp).headlines[0].run == "base"


def test_strategy_rows_carry_the_comparison(binary_report: Report) -> None:
    rows = binary_report.rows("MRR@10")
    assert [(r.run, r.baseline, r.mean.estimate) for r in rows] == [
        ("bad", True, 0.5),
        ("good", False, 1.0),
        ("mixed", False, 0.75),
    ]
    mixed = rows[2]
    assert (mixed.wins, mixed.ties, mixed.losses) == (10, 10, 0)
    assert mixed.difference is not None and mixed.difference.estimate == 0.25
    assert rows[0].difference is None and rows[0].pvalue is None
    with pytest.raises(InputError, match="not in this report"):
        binary_report.rows("ndcg@10")


def test_cutoffs_are_computed_from_the_hit_table(binary_report: Report) -> None:
    c = binary_report.cutoffs
    assert c is not None
    assert c.depth == 2 and c.ks == (1,)  # lists are 2 long: deeper cut-offs are left out
    assert c.values["hit_rate"] == {"bad": (0.0,), "good": (1.0,), "mixed": (0.5,)}
    assert c.values["precision"]["mixed"] == (0.5,)


def test_relevance_profile_by_hand() -> None:
    qrels = {"q1": {"a": 3, "b": 1, "c": 0}, "q2": {"d": 2}}
    run = {"q1": ["a", "b", "c", "u"], "q2": ["u", "d"]}  # u is unjudged
    report = build_report(compare({"r": run}, qrels, ["ndcg@10"]))
    rel = report.relevance
    assert rel is not None and rel.graded and rel.max_label == 3 and rel.high_label == 3 and rel.depth == 4
    (p,) = rel.profiles
    # rank 1: labels 3 and 0 (u) -> 1.5; rank 2: 1 and 2 -> 1.5; rank 3: 0; rank 4: 0 (only q1 reaches it)
    assert p.mean_by_rank == (1.5, 1.5, 0.0, 0.0)
    # Databricks' classes on a 0-3 scale: 3 highly relevant, 2 relevant, 0-1 not relevant, unjudged apart
    assert p.counts == {"highly relevant": 1, "relevant": 1, "not relevant": 2, "unjudged": 2}
    assert rel.relevant_label == 2 and p.relevant_plus == pytest.approx(2 / 6)
    assert p.shares["unjudged"] == pytest.approx(2 / 6)
    # mean relevance: q1 (3 + 1 + 0 + 0) / 4 = 1.0, q2 (0 + 2) / 2 = 1.0
    assert p.mean_relevance is not None and p.mean_relevance.estimate == pytest.approx(1.0)
    # binary judgments: no "highly relevant" class
    binary = build_report(compare({"r": {"q1": ["a", "x"]}}, {"q1": {"a": 1}}, ["mrr"])).relevance
    assert binary is not None and not binary.graded and binary.high_label is None
    assert binary.profiles[0].counts["highly relevant"] == 0


def test_full_report_sections(full_report: Report) -> None:
    r = full_report
    assert r.categories is not None and [row.name for row in r.categories.rows] == ["billing", "setup"]
    assert r.categories.rows[0].n == 10 and set(r.categories.rows[0].values["ndcg@5"]) == {"bm25", "dense"}
    assert r.failures and r.failures_k == 3
    bm25 = {fl.key: fl for fl in r.failures[0].lists}
    assert bm25["failed"].count == 1 and bm25["failed"].items[0].error == "timeout after 5 s"
    q01 = next(it for it in bm25["top1_unjudged"].items if it.query_id == "q01")  # q01-y has no judgment
    assert q01.top_text == f"Danger: {PAYLOAD} injected"
    assert q01.query == "How do I <b>configure</b> feature 1 & retries?"
    assert r.queries[0].run == "bm25" and len(r.queries[0].worst) == 5
    assert r.trend[0].label == "ndcg@5 (bm25)" and [p.record_id for p in r.trend[0].points] == [1, 2, 3, 4]
    assert r.trend[0].points[0].timestamp == "2024-05-01T00:00:00+00:00"
    assert any("failed" in w for w in r.warnings)


def test_build_report_validates_its_input(binary_report: Report) -> None:
    cmp = compare({"a": {"q1": ["d"]}}, {"q1": {"d": 1}}, ["mrr"])
    with pytest.raises(InputError, match="comparison: expected a rankbridge Comparison"):
        build_report(binary_report)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"k must be an int >= 1\. Got 0 instead\."):
        build_report(cmp, k=0)
    with pytest.raises(InputError, match="cutoffs must be ints >= 1"):
        build_report(cmp, cutoffs=[0])
    with pytest.raises(InputError, match="trend: expected"):
        build_report(cmp, trend=["x"])  # type: ignore[list-item]


def test_ragas_columns_get_a_section_and_the_precision_note() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    ev = evaluate(qrels, {"q1": ["a"], "q2": ["x", "b"], "q3": ["c"]}, ["mrr"])
    ev.values["ragas.context_precision"] = np.array([1.0, 0.5, math.nan])
    report = build_report(compare({"dense": ev}, None, ["mrr"]), generated_at=STAMP)
    assert report.ragas is not None and report.ragas.columns == ("ragas.context_precision",)
    iv = report.ragas.values["ragas.context_precision"]["dense"]
    assert (iv.estimate, iv.n) == (0.75, 2)
    md = report.to_markdown()
    assert "RAGAS context precision is not precision@k" in md
    assert "| ragas.context\\_precision" not in md  # underscores are not escaped
    assert "| ragas.context_precision | dense | 0.750 |" in md
    assert any("RAGAS context precision is not precision@k" in n for n in report.notes)


# --------------------------------------------------------------------------------------------------
# Markdown and JSON (golden-style)
# --------------------------------------------------------------------------------------------------


def test_markdown_golden_lines(binary_report: Report) -> None:
    md = binary_report.to_markdown()
    lines = md.splitlines()
    assert lines[0] == "# Toy report"
    assert lines[2].startswith("20 questions, 3 run(s): bad, good, mixed; baseline **bad**. 95% intervals, permutation")
    assert "Generated 2024-06-01T12:00:00+00:00" in lines[2]
    # hand-checked: mixed gains 0.5 on 10 of 20 queries -> mean +0.25, sd 0.2565, d_z 0.97, t(19) interval
    # 0.75 +- 2.093 * 0.2565 / sqrt(20) = [0.630, 0.870]; the p-values are seeded Monte Carlo (2000 resamples).
    # Means at a bound get Clopper-Pearson: 20 of 20 -> [0.025 ** (1 / 20), 1] = [0.832, 1]; 0 of 20 -> [0, 0.168]
    assert (
        "- **mrr@10 1.000** [0.832, 1.000] (good): the first relevant chunk is almost always at rank 1. "
        "+0.500 (+100%) vs bad [+0.500, +0.500], p adj 0.004: significant." in lines
    )
    assert (
        "- **hit_rate@1 1.000** [0.832, 1.000] (good): every question (20 of 20) gets a relevant chunk in the "
        "top 1. +1.000 vs bad [+0.663, +1.000], p adj 0.004: significant." in lines
    )
    table = lines[lines.index("## Strategies") + 2 :][:8]
    assert table == [
        "| metric | run | mean | CI | vs bad | CI | p | p adj | d | W/T/L |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| mrr@10 | bad (baseline) | 0.500 | [0.500, 0.500] |  |  |  |  |  |  |",
        "| mrr@10 | good | 1.000 | [0.832, 1.000] | +0.500 * | [+0.500, +0.500] | <0.001 | 0.004 | - | 20/0/0 |",
        "| mrr@10 | mixed | 0.750 | [0.630, 0.870] | +0.250 * | [+0.130, +0.370] | 0.003 | 0.006 | 0.97 | 10/10/0 |",
        "| hit_rate@1 | bad (baseline) | 0.000 | [0.000, 0.168] |  |  |  |  |  |  |",
        "| hit_rate@1 | good | 1.000 | [0.832, 1.000] | +1.000 * | [+0.663, +1.000] | <0.001 | 0.004 | - | 20/0/0 |",
        "| hit_rate@1 | mixed | 0.500 | [0.260, 0.740] | +0.500 * | [+0.260, +0.740] | 0.003 | 0.006 | 0.97 "
        "| 10/10/0 |",
    ]
    assert "| hit_rate | mixed | 0.500 |" in md
    assert md.endswith("\n") and "## How to read this report" in md


def test_markdown_escapes_data(full_report: Report) -> None:
    md = full_report.to_markdown()
    assert PAYLOAD not in md and "<b>" not in md
    assert "Danger: &lt;script&gt;alert(1)&lt;/script&gt; injected" in md
    assert md_escape("a | b\nc") == "a \\| b c"


def test_json_is_the_model(binary_report: Report, full_report: Report) -> None:
    data = json.loads(binary_report.to_json())
    assert data == json.loads(json.dumps(binary_report.to_dict()))
    assert data["title"] == "Toy report" and data["generated_at"] == STAMP
    assert data["runs"] == ["bad", "good", "mixed"] and data["baseline"] == "bad"
    assert data["headlines"][0]["value"]["estimate"] == 1.0
    row = next(r for r in data["strategies"] if r["run"] == "mixed" and r["metric"] == "mrr@10")
    assert (row["wins"], row["ties"], row["losses"], row["significant"]) == (10, 10, 0, True)
    assert data["cutoffs"]["values"]["hit_rate"]["good"] == [1.0]
    assert data["settings"]["test"] == "permutation"
    full = json.loads(full_report.to_json(indent=None))
    assert full["categories"]["by"] == "category"
    assert full["relevance"]["high_label"] == 3
    assert full["trend"][0]["points"][0]["mean"] == 0.4
    assert "NaN" not in full_report.to_json()


# --------------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full_html(full_report: Report) -> str:
    return full_report.to_html()


def test_html_escapes_every_data_string(full_html: str) -> None:
    assert PAYLOAD not in full_html
    assert "Danger: &lt;script&gt;alert(1)&lt;/script&gt; injected" in full_html
    assert "How do I &lt;b&gt;configure&lt;/b&gt; feature 1 &amp; retries?" in full_html
    assert "<script" not in full_html.lower()  # the report has no script at all
    assert "<b>configure</b>" not in full_html


def test_html_escapes_names_in_plots_too() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    evil = '<script>alert("run")</script>'
    cmp = compare({evil: {"q1": ["a"], "q2": ["b"]}, "$x^2$": {"q1": ["b"]}}, qrels, ["mrr"])
    page = build_report(cmp).to_html()
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(" in page
    assert "$x^2$" in page  # drawn literally, not as mathtext


def test_html_is_self_contained(full_html: str) -> None:
    assert full_html.startswith("<!DOCTYPE html>")
    assert "http://" not in full_html and "https://" not in full_html
    links = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", full_html)
    # in-page links, and images matplotlib embeds as data: URIs (heatmap, colour bar); nothing to fetch
    assert links and all(link.startswith(("#", "data:image/png;base64,")) for link in links), links
    assert "@import" not in full_html
    assert all(u.startswith("#") for u in re.findall(r"url\(\s*['\"]?([^)'\"]*)", full_html))  # clip paths only
    assert full_html.count("<svg") == 5  # metrics, cut-offs, categories, relevance, trend
    for section in ("rb-headlines", "rb-strategies", "rb-cutoffs", "rb-categories", "rb-relevance", "rb-trend"):
        assert f'id="{section}"' in full_html


def test_html_without_plots_and_as_fragment(full_report: Report) -> None:
    page = full_report.to_html(plots=False)
    assert "<svg" not in page and "Headlines" in page
    fragment = full_report._repr_html_()
    assert fragment is not None and fragment.startswith('<div class="rb-report">')
    assert "<html" not in fragment and fragment.count("<svg") == 5


def test_missing_extras_name_the_pip_command(full_report: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'rankbridge[report]'")):
        full_report.to_html()
    fragment = full_report._repr_html_()  # a notebook still gets the tables
    assert fragment is not None and "<svg" not in fragment
    monkeypatch.setitem(sys.modules, "jinja2", None)
    with pytest.raises(MissingExtraError, match="jinja2"):
        full_report.to_html(plots=False)
    assert full_report._repr_html_() is None


def test_import_stays_light() -> None:
    code = (
        "import sys, rankbridge, rankbridge.reports, rankbridge.cli\n"
        "rankbridge.cli.build_parser()\n"
        "print(','.join(m for m in ('matplotlib', 'jinja2', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def _chromium(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason=f"headless Chromium not found at {CHROMIUM} (install it with: apt-get install -y chromium)",
)
def test_html_renders_in_headless_chromium(full_report: Report, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    full_report.save(path)
    done = _chromium("--dump-dom", path.as_uri(), tmp=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    # it rendered the document, with every plot as an SVG element
    assert '<div class="rb-report">' in dom and "Headlines" in dom
    assert dom.count("<svg") == 5
    assert "<text" in dom  # plot labels are text elements
    # the payload is text in a table cell, never a script element
    assert "<script" not in dom.lower()
    assert "Danger: &lt;script&gt;alert(1)&lt;/script&gt; injected" in dom
    # and the page paints
    shot = tmp_path / "shot.png"
    done = _chromium(
        "--hide-scrollbars", "--window-size=1280,2400", f"--screenshot={shot}", path.as_uri(), tmp=tmp_path
    )
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as img:
        assert img.size == (1280, 2400)
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colors is not None and len(colors) > 50  # not a blank page


# --------------------------------------------------------------------------------------------------
# Terminal and saving
# --------------------------------------------------------------------------------------------------


def test_terminal_prints_data_literally(full_report: Report) -> None:
    from rich.console import Console

    buf = io.StringIO()
    full_report.print(Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    assert "Headlines" in out and "ndcg@5" in out and "Strategies" in out
    assert "How do I <b>configure</b>" in out  # not interpreted (rich would drop [b] markup)
    text = full_report.to_text()
    assert "By rank cut-off" in text and "\x1b[" not in text


def test_rich_markup_in_data_is_not_interpreted() -> None:
    golden = GoldenSet([Query("q1", "[bold red]boom[/]")], Qrels({"q1": {"a": 1}}))
    cmp = compare({"r": {"q1": ["x"]}}, golden, ["mrr"])
    report = build_report(cmp, runs={"r": Run.from_ranked({"q1": ["x"]}, name="r")}, golden=golden)
    assert "[bold red]boom[/]" in report.to_text()


def test_save_picks_the_format_from_the_suffix(binary_report: Report, tmp_path: Path) -> None:
    for name, marker in (("r.md", "# Toy report"), ("r.json", '"title": "Toy report"'), ("r.txt", "Headlines")):
        binary_report.save(tmp_path / name)
        assert marker in (tmp_path / name).read_text()
    binary_report.save(tmp_path / "r.html", format="html")
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    with pytest.raises(InputError, match="format must be one of"):
        binary_report.save(tmp_path / "x", format="pdf")  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.json", "r.md", "r.txt"]  # no temp files


def test_failed_save_leaves_the_old_file(
    binary_report: Report, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "r.html"
    target.write_text("old")

    def boom(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr("rankbridge.reports.html.render", boom)
    with pytest.raises(RuntimeError):
        binary_report.save(target)
    assert target.read_text() == "old"


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Any]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 rel-{q} 2\n{q} 0 nr-{q} 0\n" for q in QIDS))
    paths = []
    for name, runs in _binary_runs().items():
        path = tmp_path / f"{name}.txt"
        path.write_text(
            "".join(f"{q} Q0 {d} {i + 1} {2 - i} {name}\n" for q, docs in runs.items() for i, d in enumerate(docs))
        )
        paths.append(str(path))
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "queries.jsonl").write_text(
        "".join(
            json.dumps({"_id": q, "text": f"question {q} <i>x</i>", "metadata": {"category": "ab"[i % 2]}}) + "\n"
            for i, q in enumerate(QIDS)
        )
    )
    (beir / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"{k}-{q}", "text": f"{PAYLOAD} {k}"}) + "\n" for q in QIDS for k in ("rel", "nr"))
    )
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\trel-{q}\t2\n" for q in QIDS)
    )
    return {"qrels": str(qrels), "runs": paths, "beir": str(beir), "tmp": tmp_path}


def test_cli_json(files: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["report", files["qrels"], *files["runs"], "-m", "mrr@10", "--baseline", "bad", "--n-resamples", "500"]
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"] == ["bad", "good", "mixed"] and data["metrics"] == ["mrr@10"]
    assert data["headlines"][0]["run"] == "good"
    assert [f["run"] for f in data["failures"]] == ["bad", "good", "mixed"]


def test_cli_html_with_golden_set(files: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    out = files["tmp"] / "out" / "report.html"
    args = ["report", files["qrels"], *files["runs"], "-m", "mrr@10,hit_rate@1", "--golden", files["beir"]]
    assert main([*args, "--n-resamples", "500", "-o", str(out)]) == 0
    assert "wrote html report" in capsys.readouterr().err
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and 'id="rb-categories"' in page
    assert "question q00 &lt;i&gt;x&lt;/i&gt;" in page and "&lt;script&gt;alert(1)&lt;/script&gt; nr" in page
    assert "<script" not in page.lower()


def test_cli_markdown_terminal_and_history(files: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from rankbridge.store import RunStore

    store_path = files["tmp"] / "h.sqlite"
    qrels = {q: {f"rel-{q}": 2, f"nr-{q}": 0} for q in QIDS}
    with RunStore(store_path) as store:
        for run in ("bad", "good"):
            ev: Evaluation = evaluate(qrels, _binary_runs()[run], ["mrr@10"])
            store.save(ev, name=run)
    base = ["report", files["qrels"], *files["runs"], "-m", "mrr@10", "--n-resamples", "500"]
    assert main([*base, "--format", "md", "--history", str(store_path), "--title", "T | x"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# T \\| x\n") and "## Trend over saved runs" in md
    assert "| mrr@10 (good) |" in md
    assert main(base) == 0  # terminal
    assert "the first relevant chunk" in capsys.readouterr().out
    assert main([*base, "--history", str(files["tmp"] / "nope.sqlite")]) == 2
    assert "no history file" in capsys.readouterr().err


def test_cli_bad_metric_is_a_usage_error(files: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", files["qrels"], files["runs"][0], "-m", "nope@3"]) == 2
    assert "unknown metric" in capsys.readouterr().err


def test_failures_object_can_be_passed_directly(graded: tuple[GoldenSet, dict[str, Run]]) -> None:
    golden, runs = graded
    cmp = compare(runs, golden, ["mrr@10"], n_resamples=500)
    f = failures(runs, golden.qrels, golden=golden, k=1)
    report = build_report(cmp, failures=f, golden=golden, max_items=2)
    zero = next(fl for fl in report.failures[0].lists if fl.key == "zero_hit")
    assert zero.count == len(f["bm25"].zero_hit) and len(zero.items) == min(2, zero.count)
    assert report.failures_k == 1
