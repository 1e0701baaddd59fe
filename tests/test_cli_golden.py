"""The commands that take qrels take a golden set too (a BEIR folder, a golden .jsonl or .csv), and check ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankbridge.cli import main
from rankbridge.io import write_beir
from rankbridge.types import GoldenSet, Qrels, Query

QUESTIONS = {f"q{i}": f"question {i}" for i in range(24)}


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    qrels = {q: {f"doc-{i}": 1} for i, q in enumerate(QUESTIONS)}
    corpus = {f"doc-{i}": {"title": "", "text": f"passage {i}"} for i in range(30)}
    golden = GoldenSet([Query(q, t) for q, t in QUESTIONS.items()], Qrels(qrels), corpus=corpus, name="toy")
    write_beir(golden, tmp_path / "beir")
    rows = [{"query_id": q, "question": t, "relevant_ids": [f"doc-{i}"]} for i, (q, t) in enumerate(QUESTIONS.items())]
    (tmp_path / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "good.txt").write_text(
        "".join(f"{q} Q0 doc-{i} 1 2.0 good\n{q} Q0 doc-{i + 1} 2 1.0 good\n" for i, q in enumerate(QUESTIONS))
    )
    (tmp_path / "uuids.txt").write_text(
        "".join(f"{q} Q0 uuid-{i}-{j} {j + 1} {1 - j / 10} uuids\n" for i, q in enumerate(QUESTIONS) for j in range(3))
    )
    return tmp_path


@pytest.mark.parametrize("judgments", ["beir", "golden.jsonl"])
def test_evaluate_compare_gate_and_report_read_a_golden_set(
    files: Path, judgments: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", judgments, "good.txt", "-m", "mrr@10", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean"]["mrr@10"] == 1.0 and out["num_queries"] == len(QUESTIONS)
    assert main(["compare", judgments, "good.txt", "good.txt", "-m", "mrr@10"]) == 0
    capsys.readouterr()
    assert main(["gate", "--baseline", "good.txt", "--qrels", judgments, "good.txt", "-m", "mrr@10"]) == 0
    capsys.readouterr()
    assert main(["report", judgments, "good.txt", "-m", "mrr@10", "-o", "report.md"]) == 0
    assert "mrr@10" in (files / "report.md").read_text()


def test_a_golden_set_with_a_corpus_refuses_ids_it_does_not_know(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", "beir", "uuids.txt", "-m", "mrr@10"]) == 2
    err = capsys.readouterr().err
    assert "rankbridge: error: evaluate: run 'uuids': 0 of 72 (0%) retrieved ids are in the golden set" in err
    assert "check_ids=False" in err and "judge them" not in err
