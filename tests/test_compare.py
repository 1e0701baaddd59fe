"""rankbridge.analysis: compare(), slices(), failures() and the ``compare`` subcommand on toy runs."""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rankbridge as rb
from rankbridge.analysis import (
    Comparison,
    compare,
    failures,
    slices,
)
from rankbridge.cli.compare import add_cli
from rankbridge.errors import InputError, RunCoverageWarning
from rankbridge.metrics.stats import holm, paired_t_test, permutation_test, wilcoxon_test
from rankbridge.types import GoldenSet, Qrels, Query, Run

N = 20
QIDS = [f"q{i:02d}" for i in range(N)]


def _qrels() -> dict[str, dict[str, int]]:
    return {q: {f"rel-{q}": 1, f"nr-{q}": 0} for q in QIDS}


def _ranked(first: set[str]) -> dict[str, list[str]]:
    """The relevant doc at rank 1 for queries in ``first``, at rank 2 for the others."""
    return {q: ([f"rel-{q}", f"nr-{q}"] if q in first else [f"nr-{q}", f"rel-{q}"]) for q in QIDS}


@pytest.fixture
def runs() -> dict[str, dict[str, list[str]]]:
    return {
        "bad": _ranked(set()),  # mrr 0.5 everywhere
        "good": _ranked(set(QIDS)),  # mrr 1.0 everywhere
        "mixed": _ranked(set(QIDS[::2])),  # 1.0 on even queries, 0.5 on odd
    }


# --------------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------------


def test_known_outcomes(runs: dict[str, Any]) -> None:
    cmp = compare(runs, _qrels(), ["mrr@10", "hit_rate@1"], baseline="bad")
    assert cmp.runs == ("bad", "good", "mixed") and cmp.baseline == "bad" and cmp.num_queries == N
    assert cmp.means["mrr@10"]["bad"].estimate == 0.5
    assert cmp.means["mrr@10"]["good"].estimate == 1.0
    assert cmp.means["hit_rate@1"]["mixed"].estimate == 0.5
    good = cmp.paired["mrr@10"]["good"]
    assert (good.wins, good.ties, good.losses) == (N, 0, 0)
    assert good.difference.estimate == 0.5 and good.relative_change == 1.0
    assert good.test.method == "monte-carlo" and good.pvalue < 0.001 and good.significant
    assert good.effect_size == math.inf and good.warning is None
    mixed = cmp.paired["hit_rate@1"]["mixed"]
    assert (mixed.wins, mixed.ties, mixed.losses) == (N // 2, N // 2, 0)
    assert mixed.difference.estimate == 0.5
    assert mixed.difference.low > 0  # every non-tied query improves
    assert "bad" not in cmp.paired["mrr@10"]
    assert cmp.best("mrr@10") == "good" and cmp.best("MRR@10") == "good"


def test_default_baseline_is_first_and_unknown_baseline_is_an_error(runs: dict[str, Any]) -> None:
    assert compare(runs, _qrels(), "mrr").baseline == "bad"
    assert compare(runs, _qrels(), "mrr", baseline="mixed").baseline == "mixed"
    with pytest.raises(
        InputError, match=r"baseline: expected one of the run names 'bad', 'good', 'mixed', found 'bm25'"
    ):
        compare(runs, _qrels(), "mrr", baseline="bm25")


def test_values_pair_by_query_whatever_the_input_order(runs: dict[str, Any]) -> None:
    shuffled = {name: dict(reversed(list(run.items()))) for name, run in runs.items()}
    a = compare(runs, _qrels(), "mrr", baseline="bad")
    b = compare(shuffled, _qrels(), "mrr", baseline="bad")
    assert a.to_dict() == b.to_dict()
    # The difference is the mean of per-query differences matched by query id.
    pq = {name: rb.evaluate(_qrels(), run, ["mrr"]).per_query["mrr"] for name, run in runs.items()}
    by_hand = np.mean([pq["mixed"][q] - pq["bad"][q] for q in QIDS])
    assert a.paired["mrr"]["mixed"].difference.estimate == pytest.approx(by_hand)


def test_tests_and_holm_across_comparisons(runs: dict[str, Any]) -> None:
    qrels = _qrels()
    metrics = ["mrr@10", "hit_rate@1", "ndcg@10"]
    for test in ("permutation", "t", "wilcoxon"):
        cmp = compare(runs, qrels, metrics, test=test, seed=3)  # type: ignore[arg-type]
        raw, adjusted = [], []
        for m in metrics:
            base = cmp.evaluations["bad"].values[m]
            for r in ("good", "mixed"):
                other = cmp.evaluations[r].values[m]
                pc = cmp.paired[m][r]
                expected = {
                    "permutation": permutation_test(other, base, seed=3),
                    "t": paired_t_test(other, base),
                    "wilcoxon": wilcoxon_test(other, base),
                }[test]
                assert pc.test.pvalue == pytest.approx(expected.pvalue, rel=1e-12)
                assert pc.test.test == test
                raw.append(pc.pvalue)
                adjusted.append(pc.pvalue_adjusted)
        assert adjusted == pytest.approx(holm(raw).tolist())
    per_metric = compare(runs, qrels, metrics, family="metric")
    raw_m = [per_metric.paired["ndcg@10"][r].pvalue for r in ("good", "mixed")]
    assert [per_metric.paired["ndcg@10"][r].pvalue_adjusted for r in ("good", "mixed")] == pytest.approx(
        holm(raw_m).tolist()
    )
    none = compare(runs, qrels, metrics, correction="none")
    assert all(pc.pvalue_adjusted == pc.pvalue for m in metrics for pc in none.paired[m].values())


def test_identical_runs_tie_everywhere(runs: dict[str, Any]) -> None:
    cmp = compare({"a": runs["mixed"], "b": runs["mixed"]}, _qrels(), ["mrr", "ndcg@10"])
    for m in ("mrr", "ndcg@10"):
        pc = cmp.paired[m]["b"]
        assert (pc.wins, pc.ties, pc.losses) == (0, N, 0)
        assert pc.pvalue == 1.0 and pc.effect_size == 0.0 and not pc.significant and pc.warning is None
        assert pc.difference.estimate == 0.0 and pc.difference.low == pc.difference.high == 0.0
    for test in ("t", "wilcoxon"):
        assert (
            compare({"a": runs["mixed"], "b": runs["mixed"]}, _qrels(), "mrr", test=test).paired["mrr"]["b"].pvalue
            == 1.0
        )  # type: ignore[arg-type]


def test_one_query() -> None:
    qrels = {"q1": {"a": 1}}
    cmp = compare({"x": {"q1": ["a"]}, "y": {"q1": ["z", "a"]}}, qrels, "mrr")
    iv = cmp.means["mrr"]["x"]
    assert iv.estimate == 1.0 and math.isnan(iv.low) and math.isnan(iv.high)
    pc = cmp.paired["mrr"]["y"]
    assert pc.pvalue == 1.0 and (pc.wins, pc.ties, pc.losses) == (0, 0, 1) and math.isnan(pc.effect_size)
    assert any("only 1 query" in w for w in cmp.warnings)
    t = compare({"x": {"q1": ["a"]}, "y": {"q1": ["z", "a"]}}, qrels, "mrr", test="t")
    assert math.isnan(t.paired["mrr"]["y"].pvalue_adjusted) and not t.paired["mrr"]["y"].significant
    json.dumps(t.to_dict(), allow_nan=False)
    assert "n/a" in str(t)


def test_a_run_missing_queries_scores_zero_on_them(runs: dict[str, Any]) -> None:
    partial = {q: v for q, v in runs["good"].items() if q not in QIDS[:5]}
    failing = Run.from_ranked(runs["good"], name="failing")
    failing.add_error(QIDS[5], "timeout")
    cmp = compare({"good": runs["good"], "partial": partial, "failing": failing}, _qrels(), "mrr")
    values = cmp.evaluations["partial"].values["mrr"]
    assert values[:5].tolist() == [0.0] * 5 and values[5:].tolist() == [1.0] * (N - 5)
    pc = cmp.paired["mrr"]["partial"]
    assert (pc.wins, pc.ties, pc.losses) == (0, N - 5, 5)
    assert cmp.paired["mrr"]["failing"].losses == 1
    assert "run 'partial': 5 missing queries scored 0" in cmp.warnings
    assert "run 'failing': 1 failed queries scored 0" in cmp.warnings


def test_run_inputs_evaluations_and_lists(runs: dict[str, Any]) -> None:
    qrels = Qrels(_qrels())
    evs = {name: rb.evaluate(qrels, run, ["mrr", "P@1"]) for name, run in runs.items()}
    from_evals = compare(evs, None, ["mrr"])
    assert from_evals.to_dict() == compare(runs, qrels, ["mrr"]).to_dict()
    with pytest.raises(InputError, match="no values for ndcg@10"):
        compare(evs, None, ["ndcg@10"])
    skipped = {"a": evs["good"], "b": rb.evaluate(qrels, {QIDS[0]: ["x"]}, ["mrr"], missing="skip")}
    with pytest.raises(InputError, match=r"runs\['b'\]: evaluated over 1 queries"):
        compare(skipped, None, ["mrr"])
    run_list = [Run.from_ranked(runs["bad"], name="bm25"), Run.from_ranked(runs["good"], name="dense")]
    assert compare(run_list, qrels, "mrr").runs == ("bm25", "dense")
    with pytest.raises(InputError, match="two runs are named 'bm25'"):
        compare([run_list[0], run_list[0]], qrels, "mrr")
    with pytest.raises(InputError, match="at least one run"):
        compare({}, qrels, "mrr")
    with pytest.raises(InputError, match="no queries"):
        compare(runs, {}, "mrr")
    with pytest.raises(InputError, match="test must be one of"):
        compare(runs, qrels, "mrr", test="sign")  # type: ignore[arg-type]


def test_reproducible_seeded_and_bounded() -> None:
    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(60)]
    qrels = {q: {"r": 1} for q in qids}
    a = {q: {"r": float(rng.random()), "x": float(rng.random())} for q in qids}
    b = {q: {"r": float(rng.random()), "x": float(rng.random())} for q in qids}
    one = compare({"a": a, "b": b}, qrels, ["mrr", "dcg@3"])
    two = compare({"a": a, "b": b}, qrels, ["mrr", "dcg@3"])
    assert one.to_dict() == two.to_dict()
    assert one.means["mrr"]["a"].method == "bca"
    other = compare({"a": a, "b": b}, qrels, ["mrr"], seed=1)
    assert other.means["mrr"]["a"] != one.means["mrr"]["a"]
    assert other.means["mrr"]["a"].estimate == one.means["mrr"]["a"].estimate
    for iv in one.means["mrr"].values():
        assert 0.0 <= iv.low <= iv.estimate <= iv.high <= 1.0


def test_small_difference_gets_a_power_warning() -> None:
    rng = np.random.default_rng(1)
    qids = [f"q{i}" for i in range(40)]
    qrels = {q: {"r": 1} for q in qids}
    base = {q: ["r"] if rng.random() < 0.5 else ["x", "r"] for q in qids}
    other = {q: (["r"] if i == 0 else list(v)) for i, (q, v) in enumerate(base.items())}
    cmp = compare({"base": base, "other": other}, qrels, "mrr")
    pc = cmp.paired["mrr"]["other"]
    assert not pc.significant
    assert pc.warning is not None and "only 40 queries" in pc.warning and "would be needed" in pc.warning
    assert pc.warning in str(cmp)


def test_str_and_dict(runs: dict[str, Any]) -> None:
    cmp = compare(runs, _qrels(), ["mrr@10", "recall@10"])
    text = str(cmp)
    assert "baseline 'bad'" in text and "mrr@10" in text and "recall@10" in text and "W/T/L" in text
    assert "20/0/0" in text
    data = json.loads(json.dumps(cmp.to_dict(per_query=True), allow_nan=False))
    assert data["paired"]["mrr@10"]["good"]["wins"] == N
    assert data["per_query"]["good"]["mrr@10"] == [1.0] * N
    assert data["means"]["mrr@10"]["bad"]["estimate"] == 0.5
    assert isinstance(cmp, Comparison) and cmp.rows()[0]["baseline"] is True


# --------------------------------------------------------------------------------------------------
# slices
# --------------------------------------------------------------------------------------------------


def _golden() -> GoldenSet:
    queries = []
    for i, q in enumerate(QIDS[:-1]):  # the last query is in the qrels but not in the golden set
        category = None if i == 0 else ("howto" if i % 2 else "faq")
        tags = ["billing", "api"] if i % 3 == 0 else ["api"]
        queries.append(
            Query(
                q,
                f"question {i}" + "?" * i,
                category=category,
                metadata={"lang": "en" if i < 12 else "de", "tags": tags},
            )
        )
    return GoldenSet(queries, Qrels(_qrels()))


def test_slices_by_category_with_hand_means(runs: dict[str, Any]) -> None:
    golden = _golden()
    ev = rb.evaluate(golden.qrels, runs["mixed"], ["mrr", "hit_rate@1"])
    table = slices(ev, golden)
    assert table.names() == ["faq", "howto", "(none)"]
    hit = dict(zip(ev.query_ids, ev.values["hit_rate@1"].tolist(), strict=True))
    for s in table:
        assert s.means["hit_rate@1"].estimate == pytest.approx(np.mean([hit[q] for q in s.query_ids]))
        assert (s.warning is not None) == (s.n < 10)
        for iv in s.means.values():
            assert 0.0 <= iv.low <= iv.high <= 1.0 or math.isnan(iv.low)
    assert set(table["(none)"].query_ids) == {QIDS[0], QIDS[-1]}
    assert table["faq"].means["hit_rate@1"].estimate == 1.0  # even queries are solved at rank 1
    assert table["howto"].means["hit_rate@1"].estimate == 0.0
    assert table.overall["mrr"].estimate == pytest.approx(ev.mean["mrr"])
    assert "faq" in str(table) and "(all)" in str(table)
    json.dumps(table.to_dict(), allow_nan=False)


def test_slices_by_metadata_lists_and_callables(runs: dict[str, Any]) -> None:
    golden = _golden()
    ev = rb.evaluate(golden.qrels, runs["good"], ["mrr"])
    by_lang = slices(ev, golden, "lang")
    assert by_lang.names() == ["de", "en", "(none)"] and by_lang["en"].n == 12 and by_lang["en"].warning is None
    by_tag = slices(ev, golden.queries, "tags")
    assert by_tag["api"].n == N - 1 and by_tag["billing"].n == 7
    by_len = slices(ev, golden, lambda q: "long" if len(q.text) > 15 else "short")
    assert by_len.by == "<lambda>" and sum(s.n for s in by_len) == N
    with pytest.raises(InputError, match=r"metadata field 'topic'; known fields: category, lang, tags"):
        slices(ev, golden, "topic")
    with pytest.raises(InputError, match="no values for 'ndcg@10'"):
        slices(ev, golden, metrics=["ndcg@10"])


def test_comparison_slices_use_the_golden_set(runs: dict[str, Any]) -> None:
    golden = _golden()
    cmp = compare(runs, golden, ["mrr"])
    tables = cmp.slices("category")
    assert set(tables) == {"bad", "good", "mixed"}
    assert tables["good"]["faq"].means["mrr"].estimate == 1.0
    with pytest.raises(InputError, match="golden set"):
        compare(runs, _qrels(), ["mrr"]).slices()


# --------------------------------------------------------------------------------------------------
# failures
# --------------------------------------------------------------------------------------------------


def _failure_case() -> tuple[Qrels, Run, Run, GoldenSet]:
    qrels = Qrels(
        {
            "q1": {"a": 1},
            "q2": {"b": 1},
            "q3": {"c": 1},
            "q4": {"d": 1, "nr": 0},
            "q5": {"e": 1},
            "q6": {"f": 0},
            "q7": {"g": 1, "h": 2},
            "q8": {"i": 1},
        }
    )
    run = Run.from_ranked(
        {
            "q1": [("a", 9.0), ("x", 1.0)],
            "q2": [("x", 5.0), ("b", 4.0)],
            "q3": ["x", "y", "z", "w", "c"],
            "q4": [],
            "q6": ["f"],
            "q7": ["u1", "u2", "u3"],
        },
        name="bm25",
    )
    run.add_error("q5", "timeout after 10s")
    other = Run.from_ranked({"q3": ["c"], "q1": ["a"]}, name="dense")
    golden = GoldenSet([Query(q, f"text of {q}") for q in qrels], qrels)
    return qrels, run, other, golden


def test_failure_lists() -> None:
    qrels, run, _, golden = _failure_case()
    f = failures(run, qrels, golden=golden, k=3, metric="mrr@3")["bm25"]
    ids = {
        name: [item.query_id for item in getattr(f, name)]
        for name in ("zero_hit", "top1_irrelevant", "top1_unjudged", "ranked_low", "mostly_unjudged", "failed")
    }
    assert ids == {
        "zero_hit": ["q3", "q4", "q5", "q6", "q7", "q8"],  # q6: every judged doc is 0, so nothing can be found
        "top1_irrelevant": [],
        "top1_unjudged": ["q2"],  # its top result 'x' has no judgment: not counted as judged irrelevant
        "ranked_low": ["q3"],
        "mostly_unjudged": ["q3", "q7"],
        "failed": ["q4", "q5", "q8"],
    }
    assert f.no_relevant == ("q6",)
    q2 = f.top1_unjudged[0]
    assert (q2.query, q2.expected, q2.retrieved, q2.top_score, q2.first_relevant_rank) == (
        "text of q2",
        ("b",),
        ("x", "b"),
        5.0,
        2,
    )
    q3 = f.ranked_low[0]
    assert (
        q3.first_relevant_rank == 5
        and q3.retrieved == ("x", "y", "z", "w", "c")
        and q3.judged_share == pytest.approx(0.0)
    )
    assert [it.error for it in f.failed] == ["empty result", "timeout after 10s", "no result"]
    assert f.zero_hit[3].query_id == "q6" and f.zero_hit[3].expected == ()
    assert f.zero_hit[4].expected == ("h", "g")  # highest label first
    assert [it.query_id for it in f.best] == ["q1", "q2", "q3", "q4", "q5"]
    assert f.best[0].value == 1.0 and f.best[1].value == 0.5
    assert [it.query_id for it in f.worst][:2] == ["q3", "q4"] and f.worst[0].value == 0.0
    assert f.counts()["zero_hit"] == 6 and "q6" in [it.query_id for it in f.worst]
    text = str(f)
    assert "q2 'text of q2': first relevant at 2" in text and "timeout after 10s" in text


def test_unsolved_across_runs_and_input_shapes() -> None:
    qrels, run, other, golden = _failure_case()
    with pytest.warns(RunCoverageWarning, match="6 of the 8 queries evaluated are missing from the run 'dense'"):
        f = failures({"bm25": run, "dense": other}, qrels, golden=golden, k=3)
    assert [it.query_id for it in f.unsolved] == ["q4", "q5", "q6", "q7", "q8"]
    assert f["dense"].zero_hit[0].query_id == "q2"
    with pytest.warns(RunCoverageWarning, match="run 'dense'"):
        assert failures([run, other], golden=golden, k=3).to_dict() == f.to_dict()
    plain = {"bm25": {"q1": ["a"], "q2": ["b"]}, "dense": {"q1": ["x"]}}
    several = failures(plain, {"q1": {"a": 1}, "q2": {"b": 1}}, k=1)
    assert set(several.runs) == {"bm25", "dense"} and [it.query_id for it in several.unsolved] == []
    single = failures({"q1": {"a": 0.2, "x": 0.9}}, {"q1": {"a": 1}}, k=1)
    assert list(single.runs) == ["run"] and single["run"].zero_hit[0].top_score == 0.9
    with pytest.raises(InputError, match="expected one of 'run', found 'bm25'"):
        single["bm25"]
    with pytest.raises(InputError, match=r"k must be an int >= 1\. Got 0"):
        failures(run, qrels, k=0)
    with pytest.raises(InputError, match="qrels"):
        failures(run)
    json.dumps(f.to_dict(), allow_nan=False)
    assert "no run has a relevant doc in the top 3: 5" in str(f)


def test_top_result_judged_not_relevant_and_unjudged_are_apart() -> None:
    qrels = Qrels({"q1": {"a": 1, "n": 0}, "q2": {"a": 1}, "q3": {"a": 2, "n": 1}})
    run = Run.from_ranked({"q1": ["n", "a"], "q2": ["u", "a"], "q3": ["n", "a"]}, name="r")
    f = failures(run, qrels, k=3)["r"]
    assert [it.query_id for it in f.top1_irrelevant] == ["q1"]  # 'n' is judged 0
    assert [it.query_id for it in f.top1_unjudged] == ["q2"]  # 'u' has no judgment
    # q3's top result is judged relevant: no list
    assert f.counts()["top1_irrelevant"] == 1 and f.counts()["top1_unjudged"] == 1


def test_compare_warns_when_a_run_is_shallower_than_the_cut_off() -> None:
    qrels = {f"q{i}": {"a": 1} for i in range(5)}
    shallow = {f"q{i}": ["x", "a"] for i in range(5)}
    deep = {f"q{i}": ["x", "y", "a", "z", "w", "v"] for i in range(5)}
    cmp = compare({"shallow": shallow, "deep": deep}, qrels, ["ndcg@5", "mrr@2"])
    (warning,) = [w for w in cmp.warnings if "returns at most" in w]
    assert "run 'shallow' returns at most 2 results per query (the deepest run here returns 6)" in warning
    assert "scored at ndcg@5:" in warning and "mrr@2" not in warning
    alone = compare({"shallow": shallow}, qrels, ["ndcg@5", "precision@5"])
    (warning,) = [w for w in alone.warnings if "returns at most" in w]
    assert "scored at precision@5:" in warning  # on its own only precision@k is pulled down


def test_failures_reuse_a_given_evaluation() -> None:
    qrels, run, _, _ = _failure_case()
    ev = rb.evaluate(qrels, run, ["hit_rate@3", "mrr"])
    f = failures(run, qrels, evaluation=ev, k=3)
    assert f["bm25"].metric == "hit_rate@3"
    with pytest.raises(InputError, match="several runs need"):
        failures([run, Run(name="other")], qrels, evaluation=ev)


# --------------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------------


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="rankbridge")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


@pytest.fixture
def trec_folder(tmp_path: Path) -> Path:
    """12 queries with graded qrels and three TREC runs of different quality (seeded)."""
    rng = random.Random(7)
    docs = [f"chunk-{i:03d}" for i in range(60)]
    qrels = {f"q{q:02d}": dict(zip(rng.sample(docs, 6), [3, 2, 1, 1, 0, 0], strict=True)) for q in range(1, 13)}
    with open(tmp_path / "qrels.txt", "w") as fh:
        for qid, judged in qrels.items():
            fh.writelines(f"{qid} 0 {d} {label}\n" for d, label in judged.items())
    for name, quality in (("bm25", 0.45), ("dense", 0.6), ("hybrid", 0.75)):
        with open(tmp_path / f"run.{name}.txt", "w") as fh:
            for qid, judged in qrels.items():
                scored = {d: rng.random() for d in rng.sample(docs, 20)}
                for d, label in judged.items():
                    if label > 0 and rng.random() < quality:
                        scored[d] = 0.55 + 0.2 * label * rng.random()
                ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
                fh.writelines(f"{qid} Q0 {d} {r} {sc:.6f} {name}\n" for r, (d, sc) in enumerate(ranked, 1))
    return tmp_path


def test_cli_table_and_json(capsys: pytest.CaptureFixture[str], trec_folder: Path) -> None:
    folder = trec_folder
    files = [str(folder / "qrels.txt"), *(str(folder / f"run.{n}.txt") for n in ("bm25", "dense", "hybrid"))]
    assert _cli(["compare", *files, "-m", "ndcg@10,mrr@10", "--baseline", "dense", "--n-resamples", "500"]) == 0
    out = capsys.readouterr().out
    assert "ndcg@10" in out and "hybrid" in out and "dense (base)" in out
    assert _cli(["compare", *files, "-m", "ndcg@10", "--test", "wilcoxon", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["baseline"] == "bm25" and data["test"] == "wilcoxon"
    assert set(data["paired"]["ndcg@10"]) == {"dense", "hybrid"}
    with pytest.raises(InputError, match="baseline"):
        _cli(["compare", *files, "--baseline", "nope"])


def test_cli_without_rich(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, trec_folder: Path
) -> None:
    monkeypatch.setitem(sys.modules, "rich.console", None)
    folder = trec_folder
    files = [str(folder / "qrels.txt"), str(folder / "run.bm25.txt"), str(folder / "run.dense.txt")]
    assert _cli(["compare", *files, "-m", "mrr@10", "--n-resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 runs on 12 queries; baseline 'bm25'")
