"""The quality gate: verdicts worked out by hand, baselines from every source, the CLI's exit codes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import rankbridge as rb
from rankbridge.analysis import EXIT_FAILED, EXIT_PASSED, GateResult, assert_retrieval_quality, gate
from rankbridge.cli import main
from rankbridge.errors import InputError
from rankbridge.io import write_qrels, write_run
from rankbridge.store import RunStore

N = 20
QRELS = {f"q{i:02d}": {f"d{i}": 1} for i in range(N)}
GOOD = {f"q{i:02d}": [f"d{i}", "x", "y"] for i in range(N)}  # every relevant doc at rank 1: MRR 1.0


def worse(n_hurt: int) -> dict[str, list[str]]:
    """The first ``n_hurt`` queries get their relevant doc at rank 2 (MRR 0.5 there)."""
    return {f"q{i:02d}": (["x", f"d{i}", "y"] if i < n_hurt else [f"d{i}", "x", "y"]) for i in range(N)}


# -- verdicts ------------------------------------------------------------------------------------------
def test_large_significant_drop_fails() -> None:
    r = gate(worse(15), GOOD, QRELS, metric="MRR@10", max_drop=0.01)
    assert not r.passed and not r
    assert r.metric == "mrr@10"
    assert r.run_mean == pytest.approx(1 - 15 * 0.5 / N)
    assert r.baseline_mean == 1.0
    assert r.drop == pytest.approx(0.375)
    assert (r.wins, r.ties, r.losses) == (0, 5, 15)
    assert r.significant and r.pvalue < 0.001
    assert r.difference.high < 0  # the whole interval is a drop
    assert r.exit_code == EXIT_FAILED == 1
    assert "exceeds the allowed drop of 0.0100 and is significant" in r.explanation()
    assert str(r).startswith("FAIL mrr@10: 0.6250 vs baseline 1.0000, change -0.3750 [95% CI")


def test_significant_drop_within_threshold_passes() -> None:
    r = gate(worse(15), GOOD, QRELS, metric="mrr@10", max_drop=0.5)
    assert r.passed and r.significant
    assert "within the allowed drop of 0.5000" in r.explanation()


def test_drop_beyond_threshold_that_may_be_noise_passes_with_a_note() -> None:
    r = gate(worse(1), GOOD, QRELS, metric="mrr@10", max_drop=0.01)
    assert r.drop == pytest.approx(0.025)
    assert r.passed and not r.significant
    assert "may be noise" in r.explanation()
    assert any("queries would be needed" in n for n in r.notes)


def test_improvement_and_no_change_pass() -> None:
    up = gate(GOOD, worse(15), QRELS, metric="mrr@10")
    assert up.passed and up.drop < 0 and "improved by 0.3750" in up.explanation()
    same = gate(GOOD, GOOD, QRELS, metric="mrr@10")
    assert same.passed and same.pvalue == 1.0 and "did not drop" in same.explanation()


def test_max_drop_zero_fails_on_any_significant_drop() -> None:
    assert not gate(worse(10), GOOD, QRELS, metric="mrr@10").passed


@pytest.mark.parametrize("test", ["permutation", "t", "wilcoxon"])
def test_every_paired_test_is_available(test: str) -> None:
    r = gate(worse(15), GOOD, QRELS, metric="mrr@10", max_drop=0.01, test=test)  # type: ignore[arg-type]
    assert r.test.test == test and not r.passed


def test_same_seed_same_answer() -> None:
    a = gate(worse(3), GOOD, QRELS, metric="mrr@10", seed=7).to_dict()
    b = gate(worse(3), GOOD, QRELS, metric="mrr@10", seed=7).to_dict()
    assert a == b


def test_interval_of_a_unit_range_metric_stays_within_minus_one_and_one() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}, "q3": {"a": 1}}
    r = gate({"q1": ["x"], "q2": ["x"], "q3": ["a"]}, {"q1": ["a"], "q2": ["a"], "q3": ["x"]}, qrels, metric="mrr")
    assert -1.0 <= r.difference.low <= r.difference.high <= 1.0


def test_to_dict_is_json_ready() -> None:
    payload = json.loads(json.dumps(gate(worse(15), GOOD, QRELS, metric="ndcg@10", max_drop=0.1).to_dict()))
    assert payload["passed"] is False
    assert payload["metric"] == "ndcg@10"
    assert payload["difference"]["level"] == 0.95
    assert payload["explanation"].endswith("failed.")


# -- inputs: baselines and queries -----------------------------------------------------------------------
def test_evaluations_and_run_objects_are_accepted() -> None:
    base_ev = rb.evaluate(QRELS, GOOD, ["mrr@10", "ndcg@10"])
    run = rb.Run.from_ranked(worse(15), name="candidate")
    r = gate(run, base_ev, QRELS, metric="ndcg@10", max_drop=0.01)
    assert r.run == "candidate" and not r.passed
    run_ev = rb.evaluate(QRELS, run, ["ndcg@10"])
    assert gate(run_ev, base_ev, metric="ndcg@10", max_drop=0.01).to_dict() == r.to_dict()


def test_golden_set_gives_the_qrels() -> None:
    golden = rb.GoldenSet([rb.Query(q, "text") for q in QRELS], rb.Qrels(QRELS))
    assert not gate(worse(15), GOOD, golden, metric="mrr@10").passed


def test_baseline_by_name_from_a_store(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    with RunStore(path) as store:
        store.save(rb.evaluate(QRELS, worse(15), ["mrr@10"]), name="main")  # an older, worse record
        rid = store.save(rb.evaluate(QRELS, GOOD, ["mrr@10"]), name="main")  # the newest one is used
    r = gate(worse(15), "main", QRELS, metric="mrr@10", store=path)
    assert not r.passed and r.baseline.startswith(f"main (record {rid},")
    with RunStore(path) as store:  # an open store works too
        assert not gate(worse(15), "main", QRELS, metric="mrr@10", store=store).passed


def test_unknown_baseline_name_says_what_the_store_has(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite"
    with RunStore(path) as store:
        store.save(rb.evaluate(QRELS, GOOD, ["mrr@10"]), name="main")
    with pytest.raises(InputError, match=r"no record named 'nightly' .*names in it: main"):
        gate(GOOD, "nightly", QRELS, metric="mrr@10", store=path)
    with pytest.raises(InputError, match="no run history here"):
        gate(GOOD, "main", QRELS, metric="mrr@10", store=tmp_path / "absent.sqlite")


def test_baseline_run_file_by_path(tmp_path: Path) -> None:
    write_run(rb.Run.from_ranked(GOOD, name="base"), tmp_path / "base.txt")
    r = gate(worse(15), tmp_path / "base.txt", QRELS, metric="mrr@10")
    assert not r.passed and r.baseline == str(tmp_path / "base.txt")


def test_metric_missing_from_a_saved_evaluation_is_an_input_error() -> None:
    base_ev = rb.evaluate(QRELS, GOOD, ["mrr@10"])
    with pytest.raises(InputError, match=r"baseline: has no values for recall@10; it has mrr@10"):
        gate(GOOD, base_ev, QRELS, metric="recall@10")


def test_runs_need_qrels() -> None:
    with pytest.raises(InputError, match="qrels are needed"):
        gate(GOOD, GOOD, metric="mrr@10")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"max_drop": -0.1}, "max_drop must be a number >= 0"),
        ({"max_drop": math.nan}, "max_drop must be a number >= 0"),
        ({"alpha": 1.5}, "alpha"),
        ({"test": "anova"}, "test"),
        ({"mismatch": "ignore"}, "mismatch"),
        ({"metric": "nope@3"}, "unknown metric"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], fragment: str) -> None:
    args: dict[str, object] = {"metric": "mrr@10", **kwargs}
    with pytest.raises(InputError, match=fragment):
        gate(GOOD, GOOD, QRELS, **args)  # type: ignore[arg-type]


def test_different_query_sets_are_intersected_and_said_so() -> None:
    base_ev = rb.evaluate(QRELS, GOOD, ["mrr@10"])
    more = {**QRELS, "q99": {"d99": 1}}
    run_ev = rb.evaluate(more, worse(15), ["mrr@10"])  # q99 scores 0 (missing from the run)
    r = gate(run_ev, base_ev, metric="mrr@10")
    assert r.num_queries == N
    assert r.run_mean == pytest.approx(0.625)  # q99 left out
    assert any("1 queries only in the run were left out (e.g. 'q99')" in n for n in r.notes)
    with pytest.raises(InputError, match="different queries: 1 only in the run, 0 only in the baseline"):
        gate(run_ev, base_ev, metric="mrr@10", mismatch="error")


def test_nan_values_are_left_out() -> None:
    base_ev = rb.evaluate(QRELS, GOOD, ["mrr@10"])
    run_ev = rb.evaluate(QRELS, worse(15), ["mrr@10"])
    run_ev.values["mrr@10"] = run_ev.values["mrr@10"].copy()
    run_ev.values["mrr@10"][0] = np.nan
    r = gate(run_ev, base_ev, metric="mrr@10")
    assert r.num_queries == N - 1
    assert any("without a value on one side" in n for n in r.notes)


def test_failed_queries_score_zero_and_are_noted() -> None:
    run = rb.Run.from_ranked(GOOD)
    run.add_error("q00", "timeout: no result within 5 s")
    r = gate(run, GOOD, QRELS, metric="mrr@10")
    assert r.run_mean == pytest.approx(1 - 1 / N)
    assert any("1 queries failed in the run and score 0 (e.g. 'q00')" in n for n in r.notes)


def test_few_queries_are_warned_about() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}, "q3": {"a": 1}}
    r = gate({q: ["a"] for q in qrels}, {q: ["a"] for q in qrels}, qrels, metric="mrr")
    assert r.passed and any("only 3 queries" in n for n in r.notes)


def test_single_query_cannot_be_tested_and_passes() -> None:
    r = gate({"q1": ["x"]}, {"q1": ["a"]}, {"q1": {"a": 1}}, metric="mrr", test="t")
    assert r.passed and math.isnan(r.pvalue)
    assert "too few queries to test" in r.explanation()


# -- assert_retrieval_quality --------------------------------------------------------------------------
def test_assert_min_value() -> None:
    ev = assert_retrieval_quality(GOOD, QRELS, metric="mrr@10", min_value=0.9)
    assert ev.mean == {"mrr@10": 1.0}
    with pytest.raises(AssertionError, match=r"mrr@10 = 0\.6250 \[95% CI 0\.\d+, 0\.\d+\] over 20 queries, below"):
        assert_retrieval_quality(worse(15), QRELS, metric="mrr@10", min_value=0.9)


def test_assert_against_a_baseline() -> None:
    assert_retrieval_quality(worse(1), QRELS, metric="mrr@10", baseline=GOOD, max_drop=0.01)
    with pytest.raises(AssertionError) as info:
        assert_retrieval_quality(worse(15), QRELS, metric="mrr@10", baseline=GOOD, max_drop=0.01)
    message = str(info.value)
    assert message.startswith("FAIL mrr@10: 0.6250 vs baseline 1.0000, change -0.3750 [95% CI")
    assert "is significant (p=" in message


def test_assert_both_checks_report_both_problems() -> None:
    with pytest.raises(AssertionError) as info:
        assert_retrieval_quality(worse(15), QRELS, metric="mrr@10", min_value=0.9, baseline=GOOD)
    assert "below the required 0.9000" in str(info.value) and "FAIL mrr@10" in str(info.value)


def test_assert_needs_something_to_check() -> None:
    with pytest.raises(InputError, match="give min_value, or a baseline"):
        assert_retrieval_quality(GOOD, QRELS, metric="mrr@10")
    with pytest.raises(InputError, match="max_drop needs a baseline"):
        assert_retrieval_quality(GOOD, QRELS, metric="mrr@10", min_value=0.1, max_drop=0.1)


def test_gate_result_is_exported_type() -> None:
    assert isinstance(gate(GOOD, GOOD, QRELS, metric="mrr"), GateResult)


# -- the command line ----------------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    write_qrels(QRELS, tmp_path / "qrels.txt")
    write_run(rb.Run.from_ranked(GOOD, name="good"), tmp_path / "good.txt")
    write_run(rb.Run.from_ranked(worse(15), name="bad"), tmp_path / "bad.txt")
    write_run(rb.Run.from_ranked(worse(1), name="meh"), tmp_path / "meh.txt")
    return {
        "qrels": str(tmp_path / "qrels.txt"),
        "good": str(tmp_path / "good.txt"),
        "bad": str(tmp_path / "bad.txt"),
        "meh": str(tmp_path / "meh.txt"),
        "store": str(tmp_path / "history.sqlite"),
    }


def _gate(files: dict[str, str], run: str, *extra: str) -> list[str]:
    return ["gate", "--qrels", files["qrels"], "--store", files["store"], files[run], "-m", "mrr@10", *extra]


def test_cli_bootstrap_then_pass_then_fail(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    # No store yet: an error by default, so a typo in the baseline name cannot pass silently.
    assert main(_gate(files, "good", "--baseline", "main")) == 2
    assert "no record of that name" in capsys.readouterr().err
    # Bootstrap: pass and save the baseline.
    assert main(_gate(files, "good", "--baseline", "main", "--missing-baseline", "pass", "--save", "main")) == 0
    out = capsys.readouterr().out
    assert "no baseline 'main' yet" in out and "saved as 'main' (record 1)" in out
    # A small drop that may be noise passes; a large significant one fails and is not saved.
    assert main(_gate(files, "meh", "--baseline", "main", "--max-drop", "0.01")) == EXIT_PASSED
    assert "PASS mrr@10" in capsys.readouterr().out
    assert main(_gate(files, "bad", "--baseline", "main", "--max-drop", "0.01", "--save", "main")) == EXIT_FAILED
    captured = capsys.readouterr()
    assert "FAIL mrr@10: 0.6250 vs baseline 1.0000" in captured.out
    assert "a failed run never becomes the baseline" in captured.err
    with RunStore(files["store"]) as store:
        assert [r.id for r in store.list("main")] == [1]


def test_cli_baseline_run_file_and_json(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_gate(files, "bad", "--baseline", files["good"], "-m", "ndcg@10", "--format", "json")) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["passed"] is False and payload["exit_code"] == 1
    assert [g["metric"] for g in payload["gates"]] == ["mrr@10", "ndcg@10"]
    assert all(not g["passed"] for g in payload["gates"])
    assert not Path(files["store"]).exists()  # nothing was saved, no store was created


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["-m", "nope@3"], "unknown metric"),
        (["--alpha", "2"], "alpha"),
    ],
)
def test_cli_bad_input_exits_2(
    files: dict[str, str], capsys: pytest.CaptureFixture[str], extra: list[str], fragment: str
) -> None:
    assert main(_gate(files, "bad", "--baseline", files["good"], *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith("rankbridge: error:") and fragment in err and "Traceback" not in err


def test_cli_missing_run_file_exits_2(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["gate", "--qrels", files["qrels"], "--baseline", files["good"], "absent.txt", "-m", "mrr"]
    assert main(args) == 2
    assert "absent.txt" in capsys.readouterr().err


def test_cli_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["gate", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out and "1  failed" in out and "2  bad input" in out
