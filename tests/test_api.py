"""The public surface: exports, import cost, the data model's validation."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rankbridge as rb
from rankbridge.errors import InputError, RunCoverageWarning


def test_all_is_sorted_and_importable() -> None:
    assert list(rb.__all__) == sorted(rb.__all__)
    for name in rb.__all__:
        assert hasattr(rb, name), name


def test_import_pulls_in_no_framework() -> None:
    code = (
        "import sys, rankbridge\n"
        "heavy = [m for m in ('llama_index', 'langchain_core', 'ragas', 'pandas', 'numba', 'rich', 'datasets')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_qrels_validation_names_the_key() -> None:
    with pytest.raises(InputError, match=r"qrels\['q1'\]\['d1'\]: expected an integer relevance label, found 'yes'"):
        rb.Qrels({"q1": {"d1": "yes"}})
    with pytest.raises(InputError, match=r"found 1\.5"):
        rb.Qrels({"q1": {"d1": 1.5}})
    assert rb.Qrels({1: {2: 1.0}}).to_dict() == {"1": {"2": 1}}


def test_run_validation_names_the_key() -> None:
    with pytest.raises(InputError, match=r"run\['q1'\]\['d1'\]: expected a numeric score, found 'x'"):
        rb.Run.from_scores({"q1": {"d1": "x"}})
    with pytest.raises(InputError, match="NaN"):
        rb.Run.from_scores({"q1": {"d1": float("nan")}})
    with pytest.raises(InputError, match="expected a Hit, a doc id"):
        rb.Run.from_ranked({"q1": [object()]})  # type: ignore[list-item]


def test_plain_dict_run_bad_scores_are_reported() -> None:
    with pytest.raises(InputError, match=r"run\['q1'\]\['d2'\]: expected a numeric score, found 'high'"):
        rb.evaluate({"q1": {"d1": 1}}, {"q1": {"d1": 0.5, "d2": "high"}}, ["P@1"])
    with pytest.raises(InputError, match="expected doc ids as str"):
        rb.evaluate({"q1": {"1": 1}}, {"q1": {1: 0.5}}, ["P@1"])


def test_int_query_ids_in_dicts_are_matched() -> None:
    ev = rb.evaluate({1: {"a": 1}}, {1: {"a": 1.0}}, ["P@1"])
    assert ev.per_query["precision@1"] == {"1": 1.0}


def test_run_cache_reused_and_invalidated() -> None:
    qrels = rb.Qrels({"q": {"a": 1}})
    run = rb.Run.from_ranked({"q": ["b", "a"]})
    first = rb.evaluate(qrels, run, ["mrr"])
    second = rb.evaluate(qrels, run, ["P@1"])
    assert first.table is second.table  # converted once, reused
    run.add("q", ["a"])
    assert rb.evaluate(qrels, run, ["mrr"]).mean["mrr"] == 1.0


def test_hit_table_input_skips_conversion() -> None:
    ev = rb.evaluate({"q": {"a": 1}}, {"q": {"a": 0.2, "b": 0.9}}, ["mrr"])
    assert ev.table is not None
    again = rb.evaluate({"q": {"a": 1}}, ev.table, ["mrr", "P@2"])
    assert again.mean == {"mrr": 0.5, "precision@2": 0.5}


def test_empty_run_scores_zero_without_exception() -> None:
    with pytest.warns(RunCoverageWarning, match=r"1 of the 1 queries evaluated are missing from the run"):
        ev = rb.evaluate({"q": {"a": 1}}, {}, ["ndcg@10", "mrr"])  # an empty run: loud, not an exception
    assert ev.mean == {"ndcg@10": 0.0, "mrr": 0.0}
    assert ev.missing == ("q",)


def test_plain_dict_run_nan_is_reported_on_every_path() -> None:
    nan = float("nan")
    # one judged doc retrieved (the fast path), the NaN on another doc or on the judged one
    for scores in ({"d1": 0.5, "d2": nan}, {"d1": nan, "d2": 0.5}):
        with pytest.raises(InputError, match=r"expected a numeric score, found NaN"):
            rb.evaluate({"q1": {"d1": 1}}, {"q1": scores}, ["P@1"])
    # several judged docs (the general path)
    with pytest.raises(InputError, match=r"run\['q1'\]\['d3'\]: expected a numeric score, found NaN"):
        rb.evaluate({"q1": {"d1": 1, "d2": 0}}, {"q1": {"d1": 0.5, "d2": 0.1, "d3": nan}}, ["P@1"])


def test_exported_functions_are_not_shadowed_by_their_modules() -> None:
    # `rankbridge.compare` and `rankbridge.gate` are both modules and functions; importing the modules
    # first (as the CLI and the demo do) must leave the package attributes bound to the functions.
    code = (
        "import rankbridge.compare, rankbridge.gate, rankbridge.demo\n"
        "import rankbridge as rb, types\n"
        "bad = [n for n in rb.__all__ if n != 'integrations' and isinstance(getattr(rb, n), types.ModuleType)]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
