"""The bulk TREC readers give exactly what the line-by-line readers give, or leave the file to them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from rankbridge.errors import ParseError
from rankbridge.evaluate import evaluate
from rankbridge.io import trec


def _slow_run(path: Path, monkeypatch: pytest.MonkeyPatch, **kw: str) -> object:
    with monkeypatch.context() as m:
        m.setattr(trec, "_bulk_run", lambda *a: None)
        return trec.read_run(path, **kw)  # type: ignore[arg-type]


def _slow_qrels(path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    with monkeypatch.context() as m:
        m.setattr(trec, "_bulk_qrels", lambda *a: None)
        return trec.read_qrels(path)


def _score_text(rng: np.random.Generator) -> str:
    x = float(rng.normal() * 10.0 ** int(rng.integers(-3, 4)))
    return str(rng.choice([repr(x), f"{x:.3f}", f"{x:e}", str(int(x)), f"{x:+.2E}", "0", "-0.0", ".5", "7."]))


def _random_files(tmp_path: Path, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    eol = "\r\n" if seed % 3 == 0 else "\n"
    sep = "\t" if seed % 4 == 1 else " "
    lines, judged = [], []
    for q in rng.permutation(30):
        docs = rng.choice(60, size=rng.integers(1, 15), replace=False)
        for rank, d in enumerate(docs, 1):
            doc = f"d#{d}" if d % 7 == 0 else f"D-{d}"  # '#' inside an id is part of it
            lines.append(sep.join([f"q{q}", "Q0", doc, str(rank), _score_text(rng), "tag1"]))
        for d in rng.choice(60, size=rng.integers(0, 6), replace=False):
            doc = f"d#{d}" if d % 7 == 0 else f"D-{d}"
            judged.append(f"q{q} 0 {doc} {int(rng.integers(-1, 4))}")
    order = rng.permutation(len(lines)) if seed % 2 else np.arange(len(lines))  # interleaved queries too
    run_text = eol.join(lines[i] for i in order) + ("" if seed % 5 == 0 else eol)
    run = tmp_path / f"run{seed}.txt"
    qrels = tmp_path / f"qrels{seed}.txt"
    run.write_bytes((b"\xef\xbb\xbf" if seed % 6 == 2 else b"") + run_text.encode())
    qrels.write_text("\n".join(judged) + "\n")
    return run, qrels


@pytest.mark.parametrize("seed", range(24))
def test_bulk_equals_line_by_line_and_pytrec_eval(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    run_path, qrels_path = _random_files(tmp_path, seed)
    fast = trec.read_run(run_path)
    assert trec._bulk_run(run_path, None, "error") is not None, "the common file should take the bulk path"
    slow = _slow_run(run_path, monkeypatch)
    assert fast.to_scores() == slow.to_scores()  # type: ignore[attr-defined]  # exact floats
    assert fast.name == slow.name == "tag1"  # type: ignore[attr-defined]
    if qrels_path.read_text().strip():
        q_fast = trec.read_qrels(qrels_path)
        assert q_fast.to_dict() == _slow_qrels(qrels_path, monkeypatch).to_dict()  # type: ignore[attr-defined]
        metrics = ["ndcg@10", "map", "mrr", "P@5", "recall@10", "bpref", "num_ret"]
        for sp in (True, False):
            a = evaluate(q_fast, fast, metrics, missing="skip", single_precision=sp)
            b = evaluate(q_fast, slow, metrics, missing="skip", single_precision=sp)  # type: ignore[arg-type]
            for m in a.values:
                np.testing.assert_array_equal(a.values[m], b.values[m], err_msg=m)
        names = {"ndcg_cut_10", "map", "recip_rank", "P_5", "recall_10", "bpref", "num_ret"}
        with open(qrels_path) as fq, open(run_path, encoding="utf-8-sig") as fr:
            ref = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fq), names).evaluate(pytrec_eval.parse_run(fr))
        ev = evaluate(q_fast, fast, metrics, missing="skip", single_precision=True)
        ours = ev.per_query
        pairs = {"ndcg_cut_10": "ndcg@10", "map": "map", "recip_rank": "mrr", "P_5": "precision@5"}
        pairs |= {"recall_10": "recall@10", "bpref": "bpref", "num_ret": "num_ret"}
        for qid, values in ref.items():
            for trec_name, ours_name in pairs.items():
                assert ours[ours_name][qid] == pytest.approx(values[trec_name], abs=1e-12), (qid, trec_name)


@pytest.mark.parametrize(
    "text",
    [
        "q1 Q0 d1 1 0.5 t\n# a comment\nq1 Q0 d2 2 0.4 t\n",
        "q1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.4 t\n",
        "q1 Q0 d1 1 0.5 t extra columns\nq1 Q0 d2 2 0.4 t\n",
        "# c o m m e n t\nq1 Q0 d1 1 0.5 t\n",  # a comment with six fields
        "q1 Q0 d\u00e9 1 0.5 t\n",  # UTF-8 ids
    ],
)
def test_files_the_bulk_path_leaves_to_the_line_reader(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.txt"
    path.write_text(text, encoding="utf-8")
    assert trec._bulk_run(path, None, "error") is None or "\u00e9" in text
    assert trec.read_run(path).to_scores() == _slow_run(path, monkeypatch).to_scores()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", "doc 'd1' appears twice for query 'q1' (first on line 1)"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 nan t\n", "expected a numeric score in column 5, found NaN"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 inf t\n", "expected a finite score in column 5"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 1_0 t\n", "expected a score in ASCII digits"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0x1 t\n", "expected a numeric score in column 5, found '0x1'"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 1e999 t\n", "expected a score in column 5 that fits in a float"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2\n", "expected 6 columns"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0\u00a0d2 2 0.5 t\n", "found the whitespace character U+00A0"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0\x1fd2 2 0.5 t\n", "found the whitespace character U+001F"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d\x002 2 0.5 t\n", "found a NUL character"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d\x012 2 0.5 t extra\n", None),  # \x01 is an ordinary id byte
    ],
)
def test_errors_still_name_the_file_and_line(tmp_path: Path, text: str, message: str | None) -> None:
    path = tmp_path / "run.txt"
    path.write_bytes(text.encode())
    if message is None:
        assert trec.read_run(path).ranking("q1") == ["d1", "d\x012"]
        return
    with pytest.raises(ParseError) as err:
        trec.read_run(path)
    assert str(err.value).startswith(f"{path}:2: ")
    assert message in str(err.value)


def test_duplicates_first_counts_the_same_in_bulk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.9 t\nq2 Q0 d1 1 0.1 t\nq1 Q0 d2 3 0.2 t\n")
    fast = trec.read_run(path, duplicates="first")
    slow = _slow_run(path, monkeypatch, duplicates="first")
    assert fast.to_scores() == slow.to_scores() == {"q1": {"d1": 0.5, "d2": 0.2}, "q2": {"d1": 0.1}}  # type: ignore[attr-defined]
    assert fast.duplicates == slow.duplicates == {"q1": 1}  # type: ignore[attr-defined]


def test_qrels_repeats_and_errors_go_to_the_line_reader(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d1 1\nq2 0 d3 2\n")
    assert trec.read_qrels(path).to_dict() == {"q1": {"d1": 1}, "q2": {"d3": 2}}
    path.write_text("q1 0 d1 1\nq2 0 d3 2\nq1 0 d1 0\n")
    with pytest.raises(ParseError, match=r"qrels\.txt:3: doc 'd1' of query 'q1' is judged 0 here but 1 on line 1"):
        trec.read_qrels(path)
    path.write_text("q1 0 d1 1\nq1 0 d2 1.0\n")
    with pytest.raises(ParseError, match="expected an integer relevance label"):
        trec.read_qrels(path)


@pytest.mark.parametrize("seed", range(6))
def test_blocks_split_a_query_and_give_the_same_run(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Blocks of a few lines: a query's lines run over block ends, and (odd seeds) queries come back later.
    run_path, qrels_path = _random_files(tmp_path, seed)
    slow_run, slow_qrels = _slow_run(run_path, monkeypatch), _slow_qrels(qrels_path, monkeypatch)
    monkeypatch.setattr(trec, "_BLOCK", 40)
    assert trec._bulk_run(run_path, None, "error") is not None
    fast = trec.read_run(run_path)
    assert fast.to_scores() == slow_run.to_scores()  # type: ignore[attr-defined]
    assert list(fast) == list(slow_run)  # type: ignore[call-overload]  # queries in the order they first appear
    assert fast.name == "tag1"
    if qrels_path.read_text().strip():
        assert trec.read_qrels(qrels_path).to_dict() == slow_qrels.to_dict()  # type: ignore[attr-defined]


def test_a_bad_score_in_a_later_block_is_named_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.txt"
    lines = [f"q{i // 3} Q0 d{i} {i % 3 + 1} {1.0 / (i + 1)!r} t" for i in range(30)]
    lines[25] = "q8 Q0 d25 2 1_5 t"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(trec, "_BLOCK", 64)
    with pytest.raises(ParseError) as err:
        trec.read_run(path)
    assert str(err.value).startswith(f"{path}:26: ")
