"""RAGAS columns in every report: the numbers are the comparison's, unscored rows are counted and shown.

The comparison is built from ``join(ev, evaluate_ragas(...))`` with scripted models through RAGAS' real
code path (ragas_fakes.py); each run's judge fails on two questions, so faithfulness has unscored rows
that differ by run. The renderers are checked against ``cmp.means`` / ``cmp.paired`` formatted by hand.
"""

from __future__ import annotations

import dataclasses
import html as html_lib
import json
import re

import pytest

from rankbridge import GoldenSet
from rankbridge.analysis import Comparison, compare
from rankbridge.errors import InputError
from rankbridge.reports import build_report
from rankbridge.reports.model import Report, fmt_ci, fmt_diff, fmt_p, fmt_value

pytest.importorskip("ragas", reason="needs the ragas extra: pip install 'rankbridge[ragas]'")
pytest.importorskip("langchain_core", reason="the scripted chat model is a LangChain BaseChatModel")

import ragas_fakes as fakes
from ragas_golden import NOT_SCORED, N, build, joined_runs

METRICS = ["ndcg@10", "mrr@10", "ragas.faithfulness", "ragas.context_recall"]
HOSTILE = "<script>alert(1)</script> | [x](javascript:alert(1)) \x1b[31mred\u202e"


def hostile_golden(golden: GoldenSet) -> GoldenSet:
    """q01's question carries markup, a Markdown link, an ANSI escape and a bidi override."""
    queries = [dataclasses.replace(q, text=q.text + " " + HOSTILE) if q.id == "q01" else q for q in golden.queries]
    return GoldenSet(queries, golden.qrels, corpus=golden.corpus)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Comparison, GoldenSet]:
    fakes.isolate_ragas_user_dir(tmp_path_factory.mktemp("ragas_home"))
    golden, bm25, dense = build()
    golden = hostile_golden(golden)
    joined = joined_runs(golden, (bm25, dense))
    return compare(joined, golden, METRICS, n_resamples=2000), golden


@pytest.fixture(scope="module")
def report(setup: tuple[Comparison, GoldenSet]) -> Report:
    cmp, golden = setup
    return build_report(cmp, golden=golden, generated_at="2024-01-01T00:00:00+00:00")


def test_the_setup_has_unscored_rows(setup: tuple[Comparison, GoldenSet]) -> None:
    cmp, _ = setup
    for run, qids in NOT_SCORED.items():
        assert cmp.unscored["ragas.faithfulness"][run] == tuple(sorted(qids))
        assert cmp.means["ragas.faithfulness"][run].n == N - 2
    assert cmp.paired["ragas.faithfulness"]["dense"].left_out == 3  # q01, q04, q09: unscored on a side


def test_the_model_reads_the_comparison(setup: tuple[Comparison, GoldenSet], report: Report) -> None:
    cmp, _ = setup
    rg = report.ragas
    assert rg is not None and rg.compared == ("ragas.faithfulness", "ragas.context_recall")
    for col in rg.compared:
        for run in cmp.runs:
            assert rg.values[col][run] is cmp.means[col][run]  # the same object: nothing recomputed
        pc = cmp.paired[col]["dense"]
        assert rg.differences[col]["dense"] is pc.difference
        assert rg.pvalues_adjusted[col]["dense"] == pc.pvalue_adjusted
        assert rg.left_out[col]["dense"] == pc.left_out
    assert rg.unscored == {"ragas.faithfulness": {"bm25": 2, "dense": 2}}
    assert rg.reasons["ragas.faithfulness"]["bm25"].startswith("2 error: ScriptedFailure")
    assert rg.scored_note("ragas.faithfulness", "bm25").startswith("n=10 of 12; 2 not scored: 2 error")
    assert rg.scored_note("ragas.context_recall", "bm25") == "n=12 of 12"
    assert "RAGAS context precision is not precision@k" in rg.note
    rows = {(r.metric, r.run): r for r in report.strategies}
    faith = rows["ragas.faithfulness", "dense"]
    assert (faith.mean.n, faith.unscored, faith.left_out, faith.paired_n) == (10, 2, 3, 9)
    assert faith.pvalue_adjusted == cmp.paired["ragas.faithfulness"]["dense"].pvalue_adjusted
    assert rows["ndcg@10", "dense"].unscored == 0 and rows["ndcg@10", "dense"].left_out == 0


def test_markdown_shows_the_comparison_numbers_and_the_unscored_rows(
    setup: tuple[Comparison, GoldenSet], report: Report
) -> None:
    cmp, _ = setup
    md = report.to_markdown()
    section = md.split("## RAGAS", 1)[1].split("\n## ", 1)[0]
    for run in cmp.runs:
        iv = cmp.means["ragas.faithfulness"][run]
        line = f"| ragas.faithfulness | {run} | {fmt_value(iv.estimate)} | {fmt_ci(iv)} | n=10 of 12; 2 not scored: "
        line += "2 error"
        assert line in section, line
        assert "nan" not in section.lower()
    pc = cmp.paired["ragas.faithfulness"]["dense"]
    delta = f"{fmt_diff(pc.difference.estimate)} {fmt_ci(pc.difference, sign=True)}"
    assert f"| {delta} | {fmt_p(pc.pvalue_adjusted)} | 3 (paired over 9) |" in section
    # the strategy table says it too
    strat = md.split("## Strategies", 1)[1].split("\n## ", 1)[0]
    assert "n=10 of 12; 2 not scored: 2 error" in strat and "paired over 9, 3 left out" in strat


def test_json_carries_the_comparison_numbers(setup: tuple[Comparison, GoldenSet], report: Report) -> None:
    cmp, _ = setup
    data = json.loads(report.to_json())
    rg = data["ragas"]
    assert rg["values"]["ragas.faithfulness"]["bm25"] == cmp.means["ragas.faithfulness"]["bm25"].to_dict()
    assert rg["unscored"]["ragas.faithfulness"] == {"bm25": 2, "dense": 2}
    assert rg["left_out"]["ragas.faithfulness"]["dense"] == 3
    assert rg["pvalues_adjusted"]["ragas.faithfulness"]["dense"] == pytest.approx(
        cmp.paired["ragas.faithfulness"]["dense"].pvalue_adjusted
    )
    pq = data["per_query"]
    assert pq["by"] == "ndcg@10" and pq["total"] == N and pq["shown"] == N
    row = next(r for r in pq["rows"] if r["query_id"] == "q04")
    assert row["values"]["ragas.faithfulness"] == {"bm25": None, "dense": None}
    assert row["reasons"]["ragas.faithfulness"]["bm25"].startswith("error: ScriptedFailure")


def test_terminal_shows_the_comparison_numbers_and_the_unscored_rows(
    setup: tuple[Comparison, GoldenSet], report: Report
) -> None:
    pytest.importorskip("rich")
    cmp, _ = setup
    text = report.to_text(width=250)
    ragas = text.split("RAGAS", 1)[1]
    for run in cmp.runs:
        iv = cmp.means["ragas.faithfulness"][run]
        assert re.search(
            rf"ragas\.faithfulness +│ {run} +│ +{re.escape(fmt_value(iv.estimate))} │ +{re.escape(fmt_ci(iv))}", ragas
        )
    assert "n=10 of 12; 2 not scored: 2 error" in ragas
    assert "3 (paired over 9)" in ragas
    assert fmt_p(cmp.paired["ragas.faithfulness"]["dense"].pvalue_adjusted) in ragas
    # the per-query table lists why each "–" is not scored
    not_scored = text.split("not scored:", 1)[1]
    for run, qids in NOT_SCORED.items():
        for qid in qids:
            assert f"{qid}, ragas.faithfulness, {run}: error: ScriptedFailure" in not_scored
    assert "\x1b[31m" not in text and "\u202e" not in text and "\\x1b[31mred\\u202e" in text


def test_html_shows_the_numbers_the_reasons_and_escapes_the_question(
    setup: tuple[Comparison, GoldenSet], report: Report
) -> None:
    pytest.importorskip("jinja2")
    cmp, _ = setup
    page = report.to_html(plots=False)
    ragas = page.split('<section id="rb-ragas">', 1)[1].split("</section>", 1)[0]
    for run in cmp.runs:
        iv = cmp.means["ragas.faithfulness"][run]
        assert f'<td>{fmt_value(iv.estimate)}</td><td class="ci">{fmt_ci(iv)}</td>' in ragas
    assert "n=10 of 12; 2 not scored: 2 error" in ragas
    pc = cmp.paired["ragas.faithfulness"]["dense"]
    assert f"<td>{fmt_p(pc.pvalue_adjusted)}</td><td>3 (paired over 9)</td>" in ragas
    pq = page.split('<section id="rb-per-query">', 1)[1].split("</section>", 1)[0]
    cells = re.findall(r'<td class="unscored" title="([^"]*)">&ndash;</td>', pq)
    assert len(cells) == 4 and all(html_lib.unescape(c).startswith("error: ScriptedFailure") for c in cells)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in pq


def test_markdown_per_query_table_footnotes_and_escaping(report: Report) -> None:
    md = report.to_markdown()
    pq = md.split("## Per question", 1)[1].split("\n## ", 1)[0]
    assert "| question | ndcg@10 bm25 | ndcg@10 dense | mrr@10 bm25 |" in pq
    q04 = next(line for line in pq.splitlines() if line.startswith("| q04"))
    assert q04.count("–[^rb") == 2  # faithfulness unscored for both runs
    ref = re.search(r"–\[\^(rb\d+)\]", q04)
    assert ref is not None
    assert re.search(rf"^\[\^{ref.group(1)}\]: not scored: error: ScriptedFailure", pq, re.M)
    q01 = next(line for line in pq.splitlines() if line.startswith("| q01"))
    assert "&lt;script&gt;" in q01 and "\\[x\\]\\(javascript" in q01 and "\\x1b" in q01 and "\\u202e" in q01
    assert "<script>" not in md and "\x1b" not in md


def test_per_query_is_bounded_and_ordered_worst_first(setup: tuple[Comparison, GoldenSet]) -> None:
    cmp, golden = setup
    small = build_report(cmp, golden=golden, per_query=3)
    assert small.per_query is not None and len(small.per_query.rows) == 3
    by_mean = {
        r.query_id: sum(r.values["ndcg@10"].values()) / len(cmp.runs) for r in cmp.per_query_table(golden=golden)
    }
    expected = sorted(by_mean, key=lambda q: (by_mean[q], list(by_mean).index(q)))[:3]
    assert [r.query_id for r in small.per_query.rows] == expected
    assert small.per_query.unscored == {"ragas.faithfulness": 4}
    md = small.to_markdown()
    assert "The 3 worst by ndcg@10 of 12 questions" in md
    assert build_report(cmp, golden=golden, per_query=0).per_query is None
    with pytest.raises(InputError, match="per_query"):
        build_report(cmp, golden=golden, per_query=-1)


def test_a_report_without_ragas_is_unchanged() -> None:
    runs = {"a": {"q1": ["d1", "x"], "q2": ["x", "d2"]}, "b": {"q1": ["x", "d1"], "q2": ["x", "y", "d2"]}}
    plain = compare(runs, {"q1": {"d1": 1}, "q2": {"d2": 1}}, ["mrr@10", "ndcg@10"], n_resamples=200)
    report = build_report(plain, generated_at="2024-01-01")
    assert report.ragas is None and report.per_query is None
    md = report.to_markdown()
    assert "## RAGAS" not in md and "## Per question" not in md and "| scored |" not in md
    assert "| metric | run | mean | CI | vs a | CI | p | p adj | d | W/T/L |" in md
    assert all(r.unscored == 0 and r.left_out == 0 for r in report.strategies)
    # asked for, the per-query table works on ranking metrics alone
    asked = build_report(plain, generated_at="2024-01-01", per_query=5)
    assert asked.per_query is not None and [r.query_id for r in asked.per_query.rows] == ["q2", "q1"]
