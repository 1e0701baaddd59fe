"""Readers and writers: formats as trec_eval accepts them, clear errors with file:line, atomic writes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import rankbridge as rb
from rankbridge.errors import ParseError
from rankbridge.io import (
    load_qrels,
    load_run,
    read_beir,
    read_qrels,
    read_qrels_jsonl,
    read_run,
    read_run_jsonl,
    write_qrels,
    write_qrels_jsonl,
    write_run,
    write_run_jsonl,
)


def _write(tmp_path: Path, name: str, text: str, newline: str = "\n") -> Path:
    p = tmp_path / name
    p.write_bytes(text.replace("\n", newline).encode())
    return p


def test_qrels_comments_crlf_blank_lines_and_hash_in_ids(tmp_path: Path) -> None:
    p = _write(tmp_path, "q.txt", "# header\nq1 0 d#1 2\n\n   # indented comment\nq1 0 d2 -1\nq2 0 d3 0\n", "\r\n")
    qrels = read_qrels(p)
    assert qrels.to_dict() == {"q1": {"d#1": 2, "d2": -1}, "q2": {"d3": 0}}
    assert qrels.num_relevant("q1") == 1


def test_run_extra_columns_unsorted_and_rank_column_ignored(tmp_path: Path) -> None:
    # rank column says d1 first, but trec_eval ranks by score; columns after the tag are ignored
    p = _write(tmp_path, "r.txt", "q1 Q0 d1 1 0.2 tag junk here\nq2 Q0 x 1 5 tag\nq1 Q0 d2 2 0.9 tag\n")
    run = read_run(p)
    assert run.name == "tag"
    assert run.ranking("q1") == ["d2", "d1"]
    assert run.ranking("q2") == ["x"]


def test_run_ties_sorted_by_doc_id_descending(tmp_path: Path) -> None:
    p = _write(tmp_path, "r.txt", "q Q0 a 1 1.0 t\nq Q0 c 2 1.0 t\nq Q0 b 3 1.0 t\n")
    assert read_run(p).ranking("q") == ["c", "b", "a"]


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 columns"),
        ("q1 0 d1 1\nq1 0 d2 high\n", 2, "integer relevance label"),
        ("q1 0 d1 1\nq1 0 d1 0\n", 2, "judged 0 here but 1 on line 1"),
    ],
)
def test_qrels_errors_name_file_and_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    p = _write(tmp_path, "bad.qrels", text)
    with pytest.raises(ParseError) as info:
        read_qrels(p)
    assert info.value.line == line
    assert info.value.source == str(p)
    assert fragment in str(info.value)
    assert f"{p}:{line}:" in str(info.value)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("q1 Q0 d1 1 0.5\n", 1, "expected 6 columns"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 abc t\n", 2, "numeric score in column 5, found 'abc'"),
        ("q1 Q0 d1 1 nan t\n", 1, "NaN"),
        ("q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n", 2, "appears twice for query 'q1' (first on line 1)"),
    ],
)
def test_run_errors_name_file_and_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    p = _write(tmp_path, "bad.run", text)
    with pytest.raises(ParseError) as info:
        read_run(p)
    assert info.value.line == line
    assert fragment in str(info.value)


def test_run_duplicates_first_keeps_first_line_and_counts(tmp_path: Path) -> None:
    p = _write(tmp_path, "r.txt", "q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.9 t\nq1 Q0 d2 3 0.7 t\n")
    run = read_run(p, duplicates="first")
    assert run["q1"] == {"d1": 0.5, "d2": 0.7}
    assert run.duplicates == {"q1": 1}


def test_empty_files_are_errors(tmp_path: Path) -> None:
    p = _write(tmp_path, "empty.txt", "# only a comment\n\n")
    with pytest.raises(ParseError, match="no judgments"):
        read_qrels(p)
    with pytest.raises(ParseError, match="no results"):
        read_run(p)


def test_missing_file_and_binary_file(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="cannot open"):
        read_qrels(tmp_path / "nope.txt")
    p = tmp_path / "bin.txt"
    p.write_bytes(b"q1 0 \xff\xfe 1\n")
    with pytest.raises(ParseError, match="UTF-8"):
        read_qrels(p)


def test_trec_round_trip_keeps_ranked_order(tmp_path: Path) -> None:
    # scores that would reorder the list (a reranker's output) are replaced so the order survives
    run = rb.Run.from_ranked({"q1": [rb.Hit("a", 0.1), rb.Hit("b", 0.9), rb.Hit("c", 0.5)], "q2": ["z", "y"]})
    write_run(run, tmp_path / "out.run")
    back = read_run(tmp_path / "out.run")
    assert back.ranking("q1") == ["a", "b", "c"]
    assert back.ranking("q2") == ["z", "y"]
    # strictly decreasing scores are written as they are
    scored = rb.Run.from_ranked({"q": [rb.Hit("a", 3.5), rb.Hit("b", 1.25)]})
    write_run(scored, tmp_path / "s.run")
    assert read_run(tmp_path / "s.run")["q"] == {"a": 3.5, "b": 1.25}


def test_qrels_round_trip_trec_and_jsonl(tmp_path: Path) -> None:
    qrels = rb.Qrels({"q1": {"d1": 3, "d2": 0}, "q2": {"d9": -1}})
    write_qrels(qrels, tmp_path / "q.txt")
    write_qrels_jsonl(qrels, tmp_path / "q.jsonl")
    assert read_qrels(tmp_path / "q.txt").to_dict() == qrels.to_dict()
    assert read_qrels_jsonl(tmp_path / "q.jsonl").to_dict() == qrels.to_dict()
    assert load_qrels(tmp_path / "q.jsonl").to_dict() == qrels.to_dict()


def test_run_jsonl_round_trip_with_errors_latency_text(tmp_path: Path) -> None:
    run = rb.Run(name="dense")
    run.add("q1", [rb.Hit("d1", 0.9, "some <b>text</b>", {"page": 3}), rb.Hit("d2")], latency=0.25)
    run.add_error("q2", "TimeoutError: took longer than 5 s", latency=5.0)
    write_run_jsonl(run, tmp_path / "run.jsonl")
    back = load_run(tmp_path / "run.jsonl")
    assert back.hits("q1") == run.hits("q1")
    assert back.errors == {"q2": "TimeoutError: took longer than 5 s"}
    assert back.latency == {"q1": 0.25, "q2": 5.0}
    ev = rb.evaluate({"q1": {"d1": 1}, "q2": {"x": 1}}, back, ["hit_rate@1"])
    assert ev.failed == ("q2",)
    assert ev.mean["hit_rate@1"] == 0.5


def test_run_jsonl_errors(tmp_path: Path) -> None:
    p = _write(tmp_path, "r.jsonl", '{"query_id": "q1", "hits": []}\n{"query_id": "q2", "hits": [{"score": 1}]}\n')
    with pytest.raises(ParseError, match=r"r.jsonl:2: missing field 'doc_id'"):
        read_run_jsonl(p)
    p = _write(tmp_path, "r2.jsonl", '{"query_id": "q1", "hits": []}\n{not json\n')
    with pytest.raises(ParseError, match=r"r2.jsonl:2: expected a JSON object"):
        read_run_jsonl(p)
    p = _write(tmp_path, "r3.jsonl", '{"query_id": "q1", "hits": [{"doc_id": "a", "score": "high"}]}\n')
    with pytest.raises(ParseError, match=r"r3.jsonl:1: .*numeric score"):
        read_run_jsonl(p)


def test_atomic_write_leaves_nothing_behind_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "out.run"
    target.write_text("previous content\n")

    class Boom(rb.Run):
        def to_scores(self) -> dict[str, dict[str, float]]:
            return {"q1": {"a": 1.0}, "q 2": {"b": 1.0}}  # whitespace in an id: refused

    with pytest.raises(ParseError, match="whitespace"):
        write_run(Boom(), target)
    assert target.read_text() == "previous content\n"
    assert sorted(os.listdir(tmp_path)) == ["out.run"]


def test_beir_folder_crlf_header(tmp_path: Path) -> None:
    (tmp_path / "qrels").mkdir()
    _write(tmp_path, "qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\n", "\r\n")
    _write(tmp_path, "queries.jsonl", '{"_id": "q1", "text": "what?", "metadata": {}}\n{"_id": "q9", "text": "x"}\n')
    _write(tmp_path, "corpus.jsonl", '{"_id": "d1", "title": "T", "text": "body"}\n{"_id": "d2", "text": "b2"}\n')
    golden = read_beir(tmp_path)
    assert golden.qrels.to_dict() == {"q1": {"d1": 1, "d2": 2}}
    assert golden.texts() == {"q1": "what?"}  # only judged queries are kept
    assert golden.corpus is not None and golden.corpus["d1"]["title"] == "T"
    with pytest.raises(ParseError, match="found splits: test"):
        read_beir(tmp_path, split="dev")


SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


@pytest.mark.skipif(not SCIFACT.is_dir(), reason=f"reference data not found at {SCIFACT}")
def test_scifact_beir() -> None:
    golden = rb.GoldenSet.from_beir(str(SCIFACT), split="test", load_corpus=False)
    assert len(golden) == 300
    assert sum(len(d) for d in golden.qrels.values()) == 339
