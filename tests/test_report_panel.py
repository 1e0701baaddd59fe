"""The Databricks panel of the report (issue 20 points 2 and 7, issue 18 point 8).

Recommended strategy, with/without reranker, relevance distribution and mean relevance, failed questions,
trends from the history store with a run selector; readings that stay true; hostile ids and texts in the
terminal and Markdown. The HTML is opened in headless Chromium (skipped, saying why, where it is absent).
"""

from __future__ import annotations

import io
import json
import math
import subprocess
from pathlib import Path

import pytest

from rankbridge.analysis import compare
from rankbridge.evaluate import evaluate
from rankbridge.reports import Report, build_report, plain_reading
from rankbridge.reports.markdown import escape as md_escape
from rankbridge.store import RunStore
from rankbridge.types import GoldenSet, Qrels, Query, Run

CHROMIUM = "/usr/bin/chromium"
STAMP = "2024-06-01T12:00:00+00:00"
N = 20
QIDS = [f"q{i:02d}" for i in range(N)]
ESC = "\x1b]8;;http://evil.example\x07click\x1b]8;;\x07\x1b[2J"
LINK = "[click](http://evil.example) ![img](http://evil.example/x.png)"


def _qrels() -> dict[str, dict[str, int]]:
    return {q: {f"{q}-a": 3, f"{q}-b": 2, f"{q}-c": 1, f"{q}-x": 0} for q in QIDS}


def _run(name: str, order: str, *, swap: set[str] = frozenset()) -> Run:  # type: ignore[assignment]
    """Every question gets the docs in ``order``; those in ``swap`` get its first two swapped."""
    ranked = {}
    for q in QIDS:
        docs = list(order)
        if q in swap:
            docs[0], docs[1] = docs[1], docs[0]
        ranked[q] = [f"{q}-{d}" for d in docs]
    return Run.from_ranked(ranked, name=name)


# --------------------------------------------------------------------------------------------------
# Recommended strategy
# --------------------------------------------------------------------------------------------------


def test_recommendation_by_dcg_computed_from_the_hit_tables() -> None:
    # "good" puts label 3 first on every question, "bad" label 0 first: dcg@10 is not among the metrics
    runs = {"bad": _run("bad", "xcba"), "good": _run("good", "abcx")}
    cmp = compare(runs, _qrels(), ["mrr@10"], n_resamples=500)
    rec = build_report(cmp).recommendation
    assert rec is not None and rec.metric == "dcg@10" and rec.run == "good" and rec.runner_up == "bad"
    # by hand: good 3 + 2/log2(3) + 1/log2(4) = 4.762; bad 0 + 1/log2(3) + 2/log2(4) + 3/log2(5) = 2.923
    good = 3 + 2 / math.log2(3) + 1 / 2
    bad = 1 / math.log2(3) + 2 / 2 + 3 / math.log2(5)
    assert rec.value.estimate == pytest.approx(good)
    assert rec.difference is not None and rec.difference.estimate == pytest.approx(good - bad)
    # dcg@10 is not in the comparison: one paired test of its own between the two (unadjusted)
    assert rec.significant is True and rec.adjusted is False and rec.test == "permutation"
    assert rec.text.startswith("Recommended: good, the best dcg@10 (4.762 ")
    assert "significantly better than the runner-up bad" in rec.text
    assert any("return at most 4 results" in n for n in rec.notes)  # the real cut-off is named
    by_mrr = build_report(cmp, recommend_by="MRR@10").recommendation
    assert by_mrr is not None and by_mrr.metric == "mrr@10"
    assert by_mrr.adjusted is True and by_mrr.pvalue == cmp.paired["mrr@10"]["good"].pvalue_adjusted
    assert "p adj" in by_mrr.text


def test_recommendation_between_two_non_baselines_runs_its_own_paired_test() -> None:
    swap = set(QIDS[:2])  # "b" differs from "a" on two questions only: not significant
    runs = {"base": _run("base", "xcba"), "a": _run("a", "abcx"), "b": _run("b", "abcx", swap=swap)}
    cmp = compare(runs, _qrels(), ["ndcg@10"], n_resamples=500)
    rec = build_report(cmp, recommend_by="ndcg@10").recommendation
    assert rec is not None and (rec.run, rec.runner_up) == ("a", "b")
    assert rec.adjusted is False and rec.pvalue is not None and rec.pvalue > 0.05 and rec.significant is False
    assert "not significantly better than the runner-up b" in rec.text and "cannot be told apart" in rec.text
    tied = build_report(compare({"x": runs["a"], "y": runs["a"]}, _qrels(), ["mrr"])).recommendation
    assert tied is not None and "tied with y" in tied.text and tied.significant is False


# --------------------------------------------------------------------------------------------------
# With and without reranker
# --------------------------------------------------------------------------------------------------


def test_rerank_pairs_by_name_and_by_stage() -> None:
    engine = _run("engine", "abcx")
    engine.stages["retrieved"] = _run("engine:retrieved", "cxab")
    runs = {"bm25": _run("bm25", "xcba"), "bm25+rerank": _run("bm25+rerank", "abxc"), "engine": engine}
    cmp = compare(runs, _qrels(), ["ndcg@10"], n_resamples=500)
    rr = build_report(cmp, runs=runs, qrels=_qrels()).rerank
    assert rr is not None and rr.metric == "dcg@10" and len(rr.paired) == 2
    by = {row.strategy: row for row in rr.rows}
    assert (by["bm25"].without, by["bm25"].with_, by["bm25"].source) == ("bm25", "bm25+rerank", "name")
    assert (by["engine"].without, by["engine"].source) == ("engine (retrieved stage)", "stage")
    # the stage is scored here: c(1) x(0) a(3) b(2) -> 1 + 0 + 3/2 + 2/log2(5)
    assert by["engine"].values["without"].estimate == pytest.approx(1 + 1.5 + 2 / math.log2(5))
    assert by["engine"].difference is not None and by["engine"].significant is True
    # mean relevance: every list holds the same four labels -> 1.5 with and without
    assert by["bm25"].relevance["with"].estimate == pytest.approx(1.5)
    md = build_report(cmp, runs=runs, qrels=_qrels(), generated_at=STAMP).to_markdown()
    assert "## With and without reranker" in md
    assert "| engine | engine (retrieved stage) | engine |" in md


def test_no_reranker_says_so_everywhere() -> None:
    runs = {"bm25": _run("bm25", "xcba"), "dense": _run("dense", "abcx")}
    report = build_report(compare(runs, _qrels(), ["ndcg@10"], n_resamples=500), runs=runs, generated_at=STAMP)
    assert report.rerank is not None and not report.rerank.paired
    assert report.rerank.note.startswith("No strategy has a reranker variant.")
    assert "No strategy has a reranker variant." in report.to_markdown()
    assert "No strategy has a reranker variant." in report.to_text()
    assert json.loads(report.to_json())["rerank"]["paired"] == 0


# --------------------------------------------------------------------------------------------------
# Relevance distribution, failed questions
# --------------------------------------------------------------------------------------------------


def test_failed_questions_are_top_results_judged_zero() -> None:
    qrels = {"q1": {"a": 2, "z": 0}, "q2": {"b": 1}, "q3": {"c": 1}, "q4": {"d": 1}}
    run = Run.from_ranked({"q1": ["z", "a"], "q2": ["u", "b"], "q3": ["c"], "q4": []}, name="r")
    report = build_report(compare({"r": run}, qrels, ["mrr"]), runs={"r": run}, qrels=qrels)
    (f,) = report.failed_top1
    assert (f.count, f.unjudged, f.empty, f.num_queries) == (1, 1, 1, 4)  # q1 failed; q2 unjudged; q4 empty
    assert [(i.query_id, i.expected, i.first_relevant_rank) for i in f.items] == [("q1", ("a",), 2)]


def test_relevance_distribution_json_golden() -> None:
    qrels = {"q1": {"a": 3, "b": 2, "c": 1, "d": 0}, "q2": {"e": 3}}
    run = {"q1": ["a", "b", "c", "d"], "q2": ["e", "u"]}
    rel = json.loads(build_report(compare({"r": run}, qrels, ["ndcg@10"]), generated_at=STAMP).to_json())["relevance"]
    assert (rel["high_label"], rel["relevant_label"], rel["depth"]) == (3, 2, 4)
    (p,) = rel["profiles"]
    assert p["counts"] == {"highly relevant": 2, "relevant": 1, "not relevant": 2, "unjudged": 1}
    assert p["relevant_plus"] == pytest.approx(3 / 6)
    # q1: (3 + 2 + 1 + 0) / 4 = 1.5; q2: (3 + 0) / 2 = 1.5
    assert p["mean_relevance"]["estimate"] == pytest.approx(1.5)


# --------------------------------------------------------------------------------------------------
# Readings that stay true (point 7)
# --------------------------------------------------------------------------------------------------


def test_mrr_reading_when_many_questions_have_no_relevant_chunk() -> None:
    # 5 of 20 questions find their relevant chunk, at rank 1: MRR 0.25 -- "typically at rank 4" would be false
    qrels = {q: {f"{q}-a": 1} for q in QIDS}
    run = {q: ([f"{q}-a"] if i < 5 else ["junk"]) for i, q in enumerate(QIDS)}
    head = build_report(compare({"r": run}, qrels, ["mrr@10"])).headlines[0]
    assert "rank 4" not in head.reading
    assert head.reading.startswith("75% of questions have no relevant chunk in the top 10 (the run returns at most 1)")
    assert head.reading.endswith("for the others the first one typically sits at rank 1")
    assert plain_reading("mrr@10", 0.5, found=0.9) == "the first relevant chunk typically sits at rank 2"


def test_readings_name_the_real_depth() -> None:
    qrels = {q: {f"{q}-a": 1} for q in QIDS}
    run = {q: [f"{q}-x", f"{q}-a"] for q in QIDS}  # depth 2, scored at @5
    report = build_report(compare({"r": run}, qrels, ["hit_rate@5", "precision@5"]))
    readings = [r.reading for r in report.strategies]
    assert readings[0] == "every question (20 of 20) gets a relevant chunk in the top 5 (the run returns at most 2)"
    assert readings[1].endswith("(the run returns at most 2)")


# --------------------------------------------------------------------------------------------------
# Hostile ids and texts (issue 18 point 8)
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile() -> Report:
    qrels = {q: {f"{q}-a": 1, f"{q}-x": 0} for q in QIDS[:12]}
    queries = [Query(q, f"question {ESC} {LINK}") for q in QIDS[:12]]
    corpus = {f"{q}-x": {"title": "", "text": f"chunk {ESC} {LINK} `code`", "metadata": {}} for q in QIDS[:12]}
    golden = GoldenSet(queries, Qrels(qrels), corpus=corpus, name="hostile")
    evil = f"run{ESC}[x](http://evil.example)"
    runs = {
        evil: Run.from_ranked({q: [f"{q}-x", f"{q}-a"] for q in QIDS[:12]}, name=evil),
        "ok": Run.from_ranked({q: [f"{q}-a"] for q in QIDS[:12]}, name="ok"),
    }
    return build_report(compare(runs, golden, ["mrr@10"], n_resamples=300), runs=runs, golden=golden)


def test_terminal_escapes_control_sequences(hostile: Report) -> None:
    from rich.console import Console

    buf = io.StringIO()
    hostile.print(Console(file=buf, width=250, color_system=None, force_terminal=False))
    out = buf.getvalue() + hostile.to_text(width=250)
    assert "\x1b" not in out and "\x07" not in out
    assert "run\\x1b]8;;http://evil.example\\x07click" in out  # shown, as visible escapes
    assert out.count("\\x1b") > 4  # the question texts and chunk texts too


def test_terminal_escapes_c1_and_bidi_controls() -> None:
    name = "a\x9b31mb\u202ec\rd"
    report = build_report(compare({name: {"q1": ["d"]}}, {"q1": {"d": 1}}, ["mrr"]))
    text = report.to_text()
    assert "\x9b" not in text and "\u202e" not in text and "\r" not in text
    assert "a\\x9b31mb\\u202ec\\x0dd" in text


def test_markdown_renders_links_images_and_controls_as_text(hostile: Report) -> None:
    md = hostile.to_markdown()
    assert "\x1b" not in md and "\x07" not in md
    assert "](http" not in md and "![" not in md and "<http" not in md
    assert "\\[click\\]\\(http\\://evil.example) \\!\\[img\\]\\(http\\://evil.example/x.png)" in md
    assert "\\`code\\`" in md
    assert "run\\\\x1b\\]8;;http\\://evil.example\\\\x07click" in md  # ESC shown as \x1b (its backslash escaped)
    assert md_escape("see www.evil.example or me@evil.example; mrr@10 [0.400, 0.600]") == (
        "see www\\.evil.example or me\\@evil.example; mrr@10 [0.400, 0.600]"
    )


# --------------------------------------------------------------------------------------------------
# Trends from the history store, and the HTML in Chromium
# --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trend_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    qrels = _qrels()
    evil = "<script>alert('trend')</script>"
    path = tmp_path_factory.mktemp("history") / "h.sqlite"
    runs = {"bm25": _run("bm25", "xcba"), evil: _run(evil, "abcx")}
    with RunStore(path) as store:
        for i in range(3):
            for name in runs:
                swapped = _run(name, "xcba" if name == "bm25" else "abcx", swap=set(QIDS[: i * 5]))
                store.save(evaluate(qrels, swapped, ["dcg@10", "ndcg@10"]), name=name, qrels=qrels)
    engine = _run("engine", "abcx")
    engine.stages["retrieved"] = _run("engine:retrieved", "cxab")
    runs["engine"] = engine
    cmp = compare(runs, qrels, ["ndcg@10", "mrr@10"], n_resamples=500)
    return build_report(cmp, runs=runs, qrels=qrels, history=path, generated_at=STAMP)


def test_trend_from_history_store(trend_report: Report) -> None:
    r = trend_report
    assert r.trend_metric == "dcg@10"
    assert [s.name for s in r.trend] == ["bm25", "<script>alert('trend')</script>"]
    assert all(len(s.points) == 3 and s.current for s in r.trend)
    assert r.trend[0].points[0].mean == pytest.approx(1 / math.log2(3) + 1 + 3 / math.log2(5))
    page = r.to_html()
    assert page.count("<script>") == 1  # the selector, and nothing from data
    assert "&lt;script&gt;alert(&#39;trend&#39;)&lt;/script&gt;" in page
    assert page.count('<option value="') == 3  # all runs, bm25, the hostile name
    assert page.count("<figure data-series=") == 3
    md = r.to_markdown()
    assert "## Trend over saved runs" in md and "Metric: dcg@10" in md


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
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


#: Appended to a copy of the page: measures every plot and the trend figures, switches the selector by a
#: real change event, and writes what it saw into the DOM for --dump-dom.
PROBE = """<script>
window.addEventListener('load', function () {
  var out = {plots: [], before: [], after: []};
  document.querySelectorAll('svg.plot').forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    out.plots.push({w: box.width, paths: svg.querySelectorAll('path').length,
                    texts: svg.querySelectorAll('text').length,
                    hidden: svg.closest('figure') ? svg.closest('figure').hidden : false});
  });
  var figs = function () { return Array.prototype.map.call(
      document.querySelectorAll('#rb-trend figure[data-series]'), function (f) { return f.hidden; }); };
  out.before = figs();
  var s = document.getElementById('rb-trend-select');
  s.value = '1'; s.dispatchEvent(new Event('change'));
  out.after = figs();
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason=f"headless Chromium not found at {CHROMIUM} (install it with: apt-get install -y chromium)",
)
def test_panel_renders_and_selector_switches_in_chromium(trend_report: Report, tmp_path: Path) -> None:
    import re

    page = trend_report.to_html()
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", PROBE + "</body>"))
    done = _chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.DOTALL)
    assert found is not None, done.stdout[-2000:]
    seen = json.loads(found.group(1).replace("&quot;", '"'))
    visible = [p for p in seen["plots"] if not p["hidden"]]
    # metrics, reranker bars, cut-offs, relevance, and the trend shown: every one laid out and drawn
    assert len(seen["plots"]) == 7 and len(visible) == 5
    assert all(p["w"] > 100 and p["paths"] > 5 and p["texts"] > 3 for p in visible), seen["plots"]
    assert seen["before"] == [False, True, True]  # "all runs" first
    assert seen["after"] == [True, True, False]  # the change event showed the hostile-named run's figure
    # the address picks a run on load too; the hostile run name stays text
    plain = tmp_path / "report.html"
    trend_report.save(plain)
    done = _chromium(tmp_path, "--dump-dom", plain.as_uri() + "#trend=0")
    dom = done.stdout
    assert re.search(r'<figure data-series="0">', dom) and re.search(r'<figure data-series="all" hidden="">', dom)
    assert "<script>alert(" not in dom and "&lt;script&gt;alert('trend')&lt;/script&gt;" in dom
    assert dom.count("<script") == 1
    assert 'id="rb-recommendation"' in dom and 'id="rb-rerank"' in dom and 'id="rb-failed"' in dom
