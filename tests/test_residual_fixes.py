"""Fixes for what the input-form audit (tests/test_audit_forms.py) found outside the files it owned."""

from __future__ import annotations

import argparse
import re
import typing
import warnings
from pathlib import Path

import numpy as np
import pytest

import rankbridge as rb
from rankbridge.analysis import compare
from rankbridge.capture import Capture, CaptureRecord, capture, query_key
from rankbridge.cli import build_parser, main
from rankbridge.errors import InputError, UngradedPairsWarning
from rankbridge.metrics import table_from_arrays

TREC = {"ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "P@5": "P_5", "recall@10": "recall_10", "map": "map"}


# -- 1. table_from_arrays: a row whose query has no judgment is not evaluated, as on the dict path ---------------
def _arrays(seed: int) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_q, depth, n_docs = 30, 10, 25
    docs = np.array([rng.choice(n_docs, size=depth, replace=False) for _ in range(n_q)])
    docs[rng.random((n_q, depth)) < 0.2] = -1
    docs = np.array([np.r_[row[row >= 0], row[row < 0]] for row in docs])  # padding ends a row
    docs[rng.random(n_q) < 0.1] = -1  # a few empty lists
    jq, jd, jl = [], [], []
    for q in range(n_q):
        n = int(rng.integers(0, 5)) if rng.random() < 0.7 else 0  # about a third of the rows unjudged
        for d in rng.choice(n_docs, size=n, replace=False).tolist():
            jq.append(q)
            jd.append(d)
            jl.append(int(rng.integers(0, 3)))
    perm = rng.permutation(len(jq))
    qids = [f"q{i:02d}" for i in range(n_q)]  # sorted as strings too, so the means add in the same order
    return qids, docs, *(np.array(a, dtype=np.int64)[perm] for a in (jq, jd, jl))  # type: ignore[return-value]


def _dicts(qids, docs, jq, jd, jl):  # type: ignore[no-untyped-def]
    qrels: dict[str, dict[str, int]] = {}
    for q, d, label in zip(jq.tolist(), jd.tolist(), jl.tolist(), strict=True):
        qrels.setdefault(qids[q], {})[f"d{d}"] = label
    ranked = {qids[i]: [f"d{d}" for d in row if d >= 0] for i, row in enumerate(docs.tolist())}
    return qrels, ranked


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("missing", ["zero", "skip"])
def test_arrays_count_the_queries_the_dict_path_counts(seed: int, missing: str) -> None:
    qids, docs, jq, jd, jl = _arrays(seed)
    qrels, ranked = _dicts(qids, docs, jq, jd, jl)
    assert len(qrels) < len(qids)  # the case: rows without judgments
    table = table_from_arrays(qids, docs, jq, jd, jl)
    ev = rb.evaluate(None, table, list(TREC), missing=missing)
    ref = rb.evaluate(qrels, ranked, list(TREC), missing=missing, check_ids=False)
    assert ev.query_ids == ref.query_ids == tuple(sorted(qrels))
    assert ev.mean == ref.mean
    assert ev.per_query == ref.per_query
    assert ev.unjudged == ref.unjudged == tuple(q for q in qids if q not in qrels)
    assert ev.no_relevant == ref.no_relevant
    assert ev.summary() == ref.summary()


@pytest.mark.parametrize("seed", range(4))
def test_arrays_equal_pytrec_eval(seed: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qids, docs, jq, jd, jl = _arrays(seed)
    qrels, ranked = _dicts(qids, docs, jq, jd, jl)
    run = {q: {d: float(len(docs[0]) - i) for i, d in enumerate(lst)} for q, lst in ranked.items() if lst}
    trec = pytrec_eval.RelevanceEvaluator(qrels, set(TREC.values())).evaluate(run)
    ev = rb.evaluate(None, table_from_arrays(qids, docs, jq, jd, jl), list(TREC))
    # trec_eval evaluates the queries in both; with missing="zero" (its -c) the judged empty rows score 0
    assert set(trec) == {q for q in qrels if q in run}
    assert set(ev.query_ids) == set(qrels)
    for name, trec_name in TREC.items():
        per_query = ev.per_query[str(rb.metrics.parse_measure(name))]
        for q in qrels:
            expected = trec[q][trec_name] if q in trec else 0.0
            assert per_query[q] == pytest.approx(expected, abs=1e-12), (name, q)
        pooled = sum(trec[q][trec_name] for q in trec) / len(qrels)
        assert ev.mean[str(rb.metrics.parse_measure(name))] == pytest.approx(pooled, abs=1e-12)


def test_arrays_with_every_row_judged_return_every_row_in_order() -> None:
    ranked = np.array([[4, 2, 7], [1, -1, -1], [3, 5, 6]])
    table = table_from_arrays(["b", "a", "c"], ranked, np.array([2, 0, 1]), np.array([6, 2, 5]), np.array([1, 1, 0]))
    assert table.query_ids == ("b", "a", "c")
    ev = rb.evaluate(None, table, ["mrr"])
    assert ev.per_query["mrr"] == {"b": 0.5, "a": 0.0, "c": pytest.approx(1 / 3)}
    assert ev.unjudged == () and ev.no_relevant == ("a",)


def test_arrays_rows_left_out_keep_the_others_hits_and_counts() -> None:
    # rows 0 and 2 unjudged: the kept rows are renumbered, their hits, depths and |R| follow them
    ranked = np.array([[1, 2, 3], [4, 5, -1], [6, 7, 8], [9, 4, 5]])
    table = table_from_arrays(list("wxyz"), ranked, np.array([3, 1, 1]), np.array([5, 5, 9]), np.array([1, 2, 1]))
    assert table.query_ids == ("x", "z")
    assert table.n_ret.tolist() == [2, 3]
    assert table.hit_query.tolist() == [0, 1] and table.hit_rank.tolist() == [2, 3]
    assert table.num_relevant(1).tolist() == [2, 1]
    assert rb.evaluate(None, table, ["num_ret"]).unjudged == ("w", "y")


def test_evaluate_annotation_takes_none_for_a_table() -> None:
    hints = typing.get_type_hints(rb.evaluate)
    assert type(None) in typing.get_args(hints["qrels"])


# -- 2. a golden set whose question ids are not the qrels' says so, not "the qrels are empty" -----------------------
def _beir(root: Path, ids: list[str]) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text('{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": "b"}\n')
    (root / "queries.jsonl").write_text("".join(f'{{"_id": "{q}", "text": "question {q}"}}\n' for q in ids))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\td1\t1\n" for q in ids))
    return root


def test_report_golden_without_a_common_query_id_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\nq3 0 d1 1\nq4 0 d2 1\n")
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 1.0 r\nq2 Q0 d2 1 1.0 r\n")
    golden = _beir(tmp_path / "beir", ["x1", "x2"])
    assert main(["report", str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), "--golden", str(golden)]) == 2
    err = capsys.readouterr().err
    assert "the qrels are empty" not in err
    assert "no query id in common between the golden set 'beir' (2 questions, e.g. 'x1', 'x2')" in err
    assert "the qrels (4 queries, e.g. 'q1', 'q2', 'q3', ...)" in err


def test_compare_with_nothing_in_common_names_the_input_at_fault() -> None:
    with pytest.raises(InputError, match=r"the qrels are empty"):
        compare({"r": {"q1": ["a"]}}, {}, "mrr")
    capture = rb.Run.from_ranked({"z1": ["a"], "z2": ["b"]}, name="cap")
    capture.config["source"] = "capture"  # scored over the questions it saw (missing="skip")
    with pytest.raises(
        InputError,
        match=r"runs\['live'\]: no query id in common with the qrels \(the run's: e\.g\. "
        r"'z1', 'z2'; the qrels' 1: e\.g\. 'q1'\)",
    ):
        compare({"live": capture}, {"q1": {"a": 1}}, "mrr")


# -- 3. a judge whose replies cannot be read says so, instead of returning no labels quietly -----------------------
def _captured() -> Capture:
    cap = capture(frameworks=())
    for run_id, query, docs in (("r1", "what is tea?", ["Tea is a drink.", "Bread."]), ("r2", "coffee?", ["Beans."])):
        rec = CaptureRecord(framework="test", query=query, run_id=run_id, retriever="Static")
        rec.set_items([{"id": f"{run_id}-{i}", "text": text} for i, text in enumerate(docs)])
        cap.recorder.add(rec)
    return cap


def test_capture_judge_with_unreadable_replies_warns_with_the_counts_and_a_reply() -> None:
    cap = _captured()
    with pytest.warns(UngradedPairsWarning) as caught:
        result = cap.judge(lambda prompt: "Sure! The passage is quite relevant.", model_id="scripted", repairs=1)
    assert result.labels == {}
    msg = str(caught[0].message)
    assert "judge: 3 of the 3 pairs tried got no grade (3 failed, e.g. " in msg
    assert "unreadable reply (no JSON object found in the reply)" in msg
    assert "last reply: 'Sure! The passage is quite relevant.'" in msg
    assert "; 0 have one." in msg


def test_judge_warns_when_most_pairs_fail_and_not_when_few_do() -> None:
    def mostly_junk(prompt: str) -> str:
        return '{"reason": "fits", "grade": 2}' if "Tea is a drink" in prompt else '{"grade": "high"}'

    with pytest.warns(UngradedPairsWarning, match=r"2 of the 3 pairs tried got no grade .*; 1 have one\."):
        assert len(_captured().judge(mostly_junk, model_id="scripted", repairs=0).labels) == 1

    def mostly_fine(prompt: str) -> str:
        return "no idea" if "Bread" in prompt else '{"reason": "fits", "grade": 2}'

    with warnings.catch_warnings():
        warnings.simplefilter("error", UngradedPairsWarning)
        result = _captured().judge(mostly_fine, model_id="scripted", repairs=0)
    assert len(result.labels) == 2 and len(result.report.failed) == 1  # still in the report


# -- 4. a captured result that cannot be read is reported by its actual problem -------------------------------------
def test_captured_non_numeric_score_is_not_blamed_on_the_doc_id() -> None:
    cap = capture(frameworks=())
    for run_id, query, item in (("r1", "tea?", {"id": "d1", "score": "high"}), ("r2", "bread?", {"id": "", "x": 1})):
        rec = CaptureRecord(framework="test", query=query, run_id=run_id, retriever="Static")
        rec.set_items([item])
        cap.recorder.add(rec)
    score, doc_id = (cap.run.errors[query_key(q)] for q in ("tea?", "bread?"))
    assert score == "captured results could not be read as hits: result at rank 1 has a non-numeric score 'high'"
    assert doc_id.startswith("captured results could not be read as hits: result at rank 1 (dict) has no doc id")
    errors = [score, doc_id]
    assert not any("no usable doc id: result at rank 1 has a non-numeric score" in e for e in errors)


# -- 5. every command's --help has examples, as the README says (test_audit_forms parses every example) ------------
def test_every_command_the_readme_lists_has_examples_in_its_help() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"`rankbridge ([a-z |\n]+)`; each has `--help` with examples", readme)
    assert listed is not None
    (sub,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(re.split(r"\s*\|\s*", listed[1])) == set(sub.choices)
    for name, parser in sub.choices.items():
        lines = parser.format_help().partition("examples:\n")[2].splitlines()
        assert [line for line in lines[:1] if line.startswith(f"  rankbridge {name}")], name
