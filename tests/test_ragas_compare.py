"""RAGAS columns in the analysis layer: ``compare``, ``slices``, ``gate`` and the per-query table.

The RAGAS scores come from the real ``ragas.evaluate`` path with scripted models (ragas_fakes.py); one
scripted model per run fails on chosen questions, so RAGAS returns NaN on different rows per run. Every
number is checked against :mod:`rankbridge.metrics.stats` on vectors filtered by hand, and means against
``numpy.nanmean`` with their counts.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import rankbridge as rb
from rankbridge import GoldenSet
from rankbridge.analysis import compare, gate, slices
from rankbridge.errors import InputError, MetricError
from rankbridge.metrics import stats
from rankbridge.metrics.measures import (
    JOINED_COLUMNS,
    ColumnFacts,
    column_facts,
    is_joined_column,
    register_column,
)

pytest.importorskip("ragas", reason="needs the ragas extra: pip install 'rankbridge[ragas]'")
pytest.importorskip("langchain_core", reason="the scripted chat model is a LangChain BaseChatModel")

import ragas_fakes as fakes
from ragas_golden import NOT_SCORED, N, build, joined_runs
from rankbridge.integrations import ragas as rr

# -- a golden set of 12 questions, two strategies, scored by RAGAS through its real code path -----------
METRICS = ["ndcg@10", "mrr@10", "ragas.faithfulness", "ragas.context_recall"]


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, rr.RagasEvaluation]:
    fakes.isolate_ragas_user_dir(tmp_path_factory.mktemp("ragas_home"))
    golden, bm25, dense = build()
    return joined_runs(golden, (bm25, dense))


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    return build()[0]


def _vec(ev: rb.Evaluation, metric: str) -> np.ndarray:
    return np.asarray(ev.values[metric], dtype=np.float64)


def test_the_scripted_failures_are_real_nan_rows(scored: dict[str, rr.RagasEvaluation]) -> None:
    for name, ev in scored.items():
        faith = _vec(ev, "ragas.faithfulness")
        nan_ids = {q for q, v in zip(ev.query_ids, faith.tolist(), strict=True) if math.isnan(v)}
        assert nan_ids == NOT_SCORED[name]
        assert set(ev.failures["ragas.faithfulness"]) == NOT_SCORED[name]
        assert all(r.startswith("error: ScriptedFailure") for r in ev.failures["ragas.faithfulness"].values())
        assert not np.isnan(_vec(ev, "ragas.context_recall")).any()


# -- compare ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ci", ["auto", "percentile"])
def test_means_are_over_scored_rows_with_n_and_the_intervals_of_those_rows(
    scored: dict[str, rr.RagasEvaluation], golden: GoldenSet, ci: str
) -> None:
    cmp = compare(scored, golden, METRICS, ci=ci, n_resamples=2000)  # type: ignore[arg-type]
    for name, ev in scored.items():
        faith = _vec(ev, "ragas.faithfulness")
        ok = ~np.isnan(faith)
        iv = cmp.means["ragas.faithfulness"][name]
        assert iv.estimate == pytest.approx(float(np.nanmean(faith)), abs=1e-15)
        assert iv.n == int(ok.sum()) == N - 2
        assert math.isfinite(iv.estimate)
        alone = stats.confidence_interval(faith[ok], method=ci, n_resamples=2000, seed=0, bounds=(0.0, 1.0))  # type: ignore[arg-type]
        assert (iv.low, iv.high, iv.method) == (pytest.approx(alone.low), pytest.approx(alone.high), alone.method)
        assert cmp.unscored["ragas.faithfulness"][name] == tuple(sorted(NOT_SCORED[name]))
        # ranking metrics are over every query, as before
        assert cmp.means["ndcg@10"][name].n == N
    assert "ragas.context_recall" not in cmp.unscored
    text = str(cmp)
    assert "0.5500 (n=10)" in text  # 9 answers with an unsupported sentence (0.5) and one without, over 10 scored
    assert "ragas.faithfulness: run 'bm25' has no value for 2 of 12 queries (2 error)" in text


def test_a_ragas_column_all_at_the_top_gets_the_clopper_pearson_interval(
    scored: dict[str, rr.RagasEvaluation], golden: GoldenSet
) -> None:
    recall = _vec(scored["bm25"], "ragas.context_recall")
    assert (recall == 1.0).all()  # every reference sentence is in bm25's contexts
    iv = compare(scored, golden, METRICS).means["ragas.context_recall"]["bm25"]
    assert iv.method == "clopper-pearson"
    assert (iv.low, iv.high) == (pytest.approx(0.025 ** (1 / N)), 1.0)


@pytest.mark.parametrize("test", ["permutation", "t", "wilcoxon"])
def test_paired_tests_pair_only_rows_scored_on_both_sides(
    scored: dict[str, rr.RagasEvaluation], golden: GoldenSet, test: str
) -> None:
    cmp = compare(scored, golden, METRICS, test=test, n_resamples=5000)  # type: ignore[arg-type]
    a, b = _vec(scored["dense"], "ragas.faithfulness"), _vec(scored["bm25"], "ragas.faithfulness")
    both = ~np.isnan(a) & ~np.isnan(b)
    assert int(both.sum()) == N - 3  # q01, q04, q09 are each missing on one side
    pc = cmp.paired["ragas.faithfulness"]["dense"]
    expected = stats.paired_test(a[both], b[both], test, n_resamples=5000, seed=0)  # type: ignore[arg-type]
    assert pc.test == expected
    assert (pc.num_queries, pc.left_out) == (N - 3, 3)
    d = a[both] - b[both]
    assert pc.difference == stats.confidence_interval(d, n_resamples=5000, seed=0, bounds=(-1.0, 1.0))
    assert (pc.wins, pc.ties, pc.losses) == (int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum()))
    assert pc.wins + pc.ties + pc.losses == N - 3
    assert pc.baseline_mean == pytest.approx(float(b[both].mean()))
    assert pc.effect_size == pytest.approx(stats.paired_effect_size(a[both], b[both]))
    assert any(
        "'dense' vs 'bm25': 3 of 12 queries without a value on both sides were left out" in w for w in cmp.warnings
    )
    # a ranking metric is still over every query
    assert cmp.paired["ndcg@10"]["dense"].num_queries == N
    assert cmp.paired["ndcg@10"]["dense"].left_out == 0


def test_holm_counts_the_ragas_comparisons_in_the_family(
    scored: dict[str, rr.RagasEvaluation], golden: GoldenSet
) -> None:
    cmp = compare(scored, golden, METRICS)
    raw = [cmp.paired[m]["dense"].pvalue for m in METRICS]
    adjusted = [cmp.paired[m]["dense"].pvalue_adjusted for m in METRICS]
    np.testing.assert_array_equal(adjusted, stats.holm(raw))
    p_faith = cmp.paired["ragas.faithfulness"]["dense"].pvalue
    assert p_faith == min(raw) < 0.05 / 4  # the smallest of four: Holm multiplies it by 4, not by 2
    assert cmp.paired["ragas.faithfulness"]["dense"].pvalue_adjusted == pytest.approx(4 * p_faith)
    per_metric = compare(scored, golden, METRICS, family="metric")
    assert per_metric.paired["ragas.faithfulness"]["dense"].pvalue_adjusted == p_faith  # a family of one


def test_best_and_errors_for_joined_columns(scored: dict[str, rr.RagasEvaluation], golden: GoldenSet) -> None:
    cmp = compare(scored, golden, METRICS)
    assert cmp.best("ragas.faithfulness") == "dense"
    assert cmp.best("ragas.context_recall") == "bm25"
    with pytest.raises(InputError, match=r"'ragas\.answer_relevancy' is not in this comparison"):
        cmp.best("ragas.answer_relevancy")
    _, bm25, dense = build()
    with pytest.raises(InputError, match=r"ragas\.faithfulness cannot be computed from a run; pass an Evaluation"):
        compare({"bm25": bm25, "dense": dense}, golden, ["ndcg@10", "ragas.faithfulness"])
    ranking_only = {n: rb.evaluate(golden, r, ["ndcg@10"]) for n, r in (("bm25", bm25), ("dense", dense))}
    with pytest.raises(InputError, match=r"no values for ragas\.faithfulness.*join\(ranking_eval, evaluate_ragas"):
        compare(ranking_only, golden, ["ndcg@10", "ragas.faithfulness"])
    with pytest.raises(MetricError, match=r"no facts .* 'ragas\.tone'.*register_column"):
        compare(scored, golden, ["ragas.tone"])


def test_json_has_null_for_unscored_rows_and_the_counts(
    scored: dict[str, rr.RagasEvaluation], golden: GoldenSet
) -> None:
    cmp = compare(scored, golden, METRICS)
    data = json.loads(json.dumps(cmp.to_dict(per_query=True), allow_nan=False))
    faith = data["per_query"]["bm25"]["ragas.faithfulness"]
    assert [data["query_ids"][i] for i, v in enumerate(faith) if v is None] == sorted(NOT_SCORED["bm25"])
    assert data["means"]["ragas.faithfulness"]["bm25"]["n"] == N - 2
    assert data["paired"]["ragas.faithfulness"]["dense"]["left_out"] == 3
    assert data["unscored"]["ragas.faithfulness"]["dense"] == sorted(NOT_SCORED["dense"])
    pd = pytest.importorskip("pandas")
    df = cmp.to_pandas()
    row = df[(df.run == "dense") & (df.metric == "ragas.faithfulness")].iloc[0]
    assert (row["n"], row["left_out"]) == (N - 2, 3)
    assert pd.isna(df[(df.run == "bm25") & (df.metric == "ragas.faithfulness")].iloc[0]["left_out"])


def test_per_query_table_puts_ragas_beside_ranking_with_reasons(
    scored: dict[str, rr.RagasEvaluation], golden: GoldenSet
) -> None:
    cmp = compare(scored, golden, ["ndcg@10"])  # RAGAS columns joined but not compared still show
    rows = cmp.per_query_table()
    assert [r.query_id for r in rows] == list(cmp.query_ids)
    assert set(rows[0].values) == {"ndcg@10", "ragas.faithfulness", "ragas.context_recall"}
    by_id = {r.query_id: r for r in rows}
    assert by_id["q01"].query == "Where does the heron live?"
    assert math.isnan(by_id["q01"].values["ragas.faithfulness"]["bm25"])
    assert by_id["q01"].values["ragas.faithfulness"]["dense"] == scored["dense"].per_query["ragas.faithfulness"]["q01"]
    assert by_id["q01"].reasons == {"ragas.faithfulness": {"bm25": "error: ScriptedFailure: scripted failure"}}
    assert by_id["q04"].reasons["ragas.faithfulness"].keys() == {"bm25", "dense"}
    assert by_id["q00"].reasons == {}
    assert by_id["q03"].values["ndcg@10"]["dense"] == scored["dense"].per_query["ndcg@10"]["q03"]
    assert json.dumps(by_id["q01"].to_dict(), allow_nan=False)
    only = cmp.per_query_table(["ragas.faithfulness"])
    assert set(only[0].values) == {"ragas.faithfulness"}
    with pytest.raises(InputError, match=r"no run has values for 'ragas\.answer_relevancy'"):
        cmp.per_query_table(["ragas.answer_relevancy"])


# -- slices -------------------------------------------------------------------------------------------
def test_slices_of_a_ragas_column_count_scored_rows_per_category(
    scored: dict[str, rr.RagasEvaluation], golden: GoldenSet
) -> None:
    cmp = compare(scored, golden, METRICS, n_resamples=2000)
    tables = cmp.slices()
    cats = {q.id: q.category for q in golden.queries}
    for name, ev in scored.items():
        faith = _vec(ev, "ragas.faithfulness")
        for cat in ("even", "odd"):
            rows = np.array([cats[q] == cat for q in ev.query_ids])
            part = faith[rows]
            s = tables[name][cat]
            assert s.n == int(rows.sum()) == 6
            iv = s.means["ragas.faithfulness"]
            assert iv.n == int((~np.isnan(part)).sum())
            assert iv.estimate == pytest.approx(float(np.nanmean(part)), abs=1e-15)
            alone = stats.confidence_interval(part[~np.isnan(part)], n_resamples=2000, seed=0, bounds=(0.0, 1.0))
            assert iv == alone
    # bm25 fails on q01 (odd) and q04 (even): 5 of 6 scored in each
    assert tables["bm25"]["odd"].means["ragas.faithfulness"].n == 5
    assert "(n=5)" in str(tables["bm25"]) and "(n=10)" in str(tables["bm25"])
    direct = slices(scored["dense"], golden, metrics=["ragas.faithfulness", "ndcg@10"], n_resamples=2000)
    assert direct["odd"].means["ragas.faithfulness"] == tables["dense"]["odd"].means["ragas.faithfulness"]


# -- gate ---------------------------------------------------------------------------------------------
def test_gate_on_a_ragas_column_pairs_scored_rows_and_refuses_when_too_many_failed(
    scored: dict[str, rr.RagasEvaluation],
) -> None:
    with pytest.raises(InputError, match=r"3 of 12 shared queries \(25%\) have no value on one side") as info:
        gate(scored["dense"], scored["bm25"], metric="ragas.faithfulness")
    assert "run: 2 (2 error); baseline: 2 (2 error)" in str(info.value)
    assert "max_unscored=0.2" in str(info.value)

    r = gate(scored["bm25"], scored["dense"], metric="ragas.faithfulness", max_unscored=0.3, max_drop=0.05)
    a, b = _vec(scored["bm25"], "ragas.faithfulness"), _vec(scored["dense"], "ragas.faithfulness")
    both = ~np.isnan(a) & ~np.isnan(b)
    assert (r.num_queries, r.left_out) == (N - 3, 3)
    assert r.test == stats.paired_test(a[both], b[both], "permutation", n_resamples=10_000, seed=0)
    assert r.run_mean == pytest.approx(float(a[both].mean()))
    assert r.drop == pytest.approx(float(b[both].mean() - a[both].mean()))
    assert r.significant and not r.passed  # bm25's unsupported sentences: a real drop in faithfulness
    assert any("3 of 12 queries without a value on one side were left out" in n for n in r.notes)
    assert gate(scored["dense"], scored["bm25"], metric="ragas.faithfulness", max_unscored=0.3).passed
    with pytest.raises(InputError, match="max_unscored must be a number in"):
        gate(scored["dense"], scored["bm25"], metric="ragas.faithfulness", max_unscored=2)
    _, bm25, _ = build()
    with pytest.raises(InputError, match="cannot be computed from a run"):
        gate(bm25, scored["bm25"], build()[0], metric="ragas.faithfulness")
    # a column without failures needs no allowance
    assert gate(scored["dense"], scored["bm25"], metric="ragas.context_recall").left_out == 0


# -- column facts, edge cases (hand-built evaluations) -------------------------------------------------
def _ragas_pair(a: list[float], b: list[float], column: str = "ragas.faithfulness") -> dict[str, rr.RagasEvaluation]:
    ids = tuple(f"q{i:02d}" for i in range(len(a)))
    qrels = {q: {"d": 1} for q in ids}
    out = {}
    for name, vals in (("base", a), ("cand", b)):
        # the candidate ranks the relevant doc second on every other query: mrr 0.5 there
        ranking = rb.evaluate(
            qrels, {q: ["x", "d"] if name == "cand" and i % 2 else ["d"] for i, q in enumerate(ids)}, ["mrr"]
        )
        out[name] = rr.join(ranking, rr.RagasEvaluation((), ids, {column: np.array(vals, dtype=np.float64)}))
    return out


def test_a_column_never_scored_has_no_mean_no_test_and_leaves_holms_family() -> None:
    nan = math.nan
    evs = _ragas_pair([0.2, 0.4, 0.6, 0.8, 0.5, 0.3], [nan] * 6)
    cmp = compare(evs, None, ["mrr", "ragas.faithfulness"])
    iv = cmp.means["ragas.faithfulness"]["cand"]
    assert (iv.n, iv.method) == (0, "none") and math.isnan(iv.estimate)
    pc = cmp.paired["ragas.faithfulness"]["cand"]
    assert math.isnan(pc.pvalue) and math.isnan(pc.pvalue_adjusted) and (pc.num_queries, pc.left_out) == (0, 6)
    mrr = cmp.paired["mrr"]["cand"]
    assert mrr.pvalue == 0.25 and mrr.pvalue_adjusted == 0.25  # a family of one: the NaN test is not counted
    assert cmp.best("ragas.faithfulness") == "base"
    with pytest.raises(InputError, match="share no query with a value"):
        gate(evs["cand"], evs["base"], metric="ragas.faithfulness", max_unscored=1.0)


def test_values_outside_the_bounds_are_an_error() -> None:
    evs = _ragas_pair([0.2, 0.4, 1.5], [0.1, 0.2, 0.3])
    with pytest.raises(
        InputError, match=r"runs\['base'\]: ragas.faithfulness must lie in \[0, 1\]; query 'q02' has 1.5"
    ):
        compare(evs, None, ["ragas.faithfulness"])
    ok = _ragas_pair([0.2, 0.4, 1.0 + 1e-12], [0.1, 0.2, 0.3])  # float rounding is not an error
    assert compare(ok, None, ["ragas.faithfulness"]).means["ragas.faithfulness"]["base"].n == 3


def test_lower_is_better_columns_turn_best_and_the_gates_drop_around() -> None:
    evs = _ragas_pair([0.1] * 6 + [0.2] * 6, [0.6] * 6 + [0.7] * 6, column="ragas.noise_sensitivity(mode=relevant)")
    facts = column_facts("ragas.noise_sensitivity(mode=relevant)")
    assert (facts.higher_is_better, facts.bounds) == (False, (0.0, 1.0))
    cmp = compare(evs, None, ["ragas.noise_sensitivity(mode=relevant)"])
    assert cmp.best("ragas.noise_sensitivity(mode=relevant)") == "base"
    r = gate(evs["cand"], evs["base"], metric="ragas.noise_sensitivity(mode=relevant)", max_drop=0.1)
    assert r.drop == pytest.approx(0.5) and not r.passed  # noise went up: worse
    assert gate(evs["base"], evs["cand"], metric="ragas.noise_sensitivity(mode=relevant)", max_drop=0.1).passed


def test_column_facts_come_from_one_registry() -> None:
    for name in rr.RAGAS_METRICS:  # every metric the bridge runs has its facts
        facts = column_facts(rr.PREFIX + name)
        assert (facts.bounds, facts.source, facts.may_be_missing) == ((0.0, 1.0), "ragas", True)
    assert column_facts("ndcg@10").bounds == (0.0, 1.0) and column_facts("bpref").bounds == (0.0, 1.0)
    assert column_facts("dcg@10").bounds == (0.0, math.inf) and not column_facts("ndcg@10").may_be_missing
    assert column_facts("ragas.faithfulness").aggregate(np.array([0.5, np.nan, 1.0])) == 0.75
    assert not is_joined_column("P.5") and not is_joined_column("ndcg_cut.10") and is_joined_column("ragas.x")
    register_column(ColumnFacts("ragas.tone_check", 0.0, 1.0, source="ragas", may_be_missing=True))
    try:
        evs = _ragas_pair([0.2, 0.4, 0.9], [0.1, 0.2, 0.3], column="ragas.tone_check")
        assert compare(evs, None, ["ragas.tone_check"]).means["ragas.tone_check"]["base"].n == 3
    finally:
        del JOINED_COLUMNS["ragas.tone_check"]
    with pytest.raises(MetricError, match=r"'<source>\.<name>'"):
        register_column(ColumnFacts("tone", 0.0, 1.0))


def test_statistics_doc_describes_ragas_columns() -> None:
    doc = (Path(__file__).parent.parent / "docs" / "statistics.md").read_text(encoding="utf-8")
    assert "## RAGAS columns" in doc and "max_unscored" in doc and "per_query_table" in doc
