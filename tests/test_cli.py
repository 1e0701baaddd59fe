"""The command line: outputs in each format, exit codes, errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rankbridge.cli import main

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq3 0 d4 1\n"
RUN = "q1 Q0 d2 1 0.9 bm25\nq1 Q0 d1 2 0.8 bm25\nq2 Q0 d3 1 0.7 bm25\nq9 Q0 d3 1 0.7 bm25\n"


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    return str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt")


def test_trec_format_per_query_and_all(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", *files, "-m", "RR", "-m", "P@1", "--format", "trec", "--per-query"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    got = {(m.strip(), q): v for m, q, v in lines}
    # q1: first relevant at rank 2; q2 at rank 1; q3 missing -> 0 (counted by default); trec_eval's names
    assert got[("recip_rank", "q1")] == "0.5000"
    assert got[("recip_rank", "q2")] == "1.0000"
    assert got[("recip_rank", "q3")] == "0.0000"
    assert got[("recip_rank", "all")] == "0.5000"
    assert got[("P_1", "all")] == "0.3333"


def test_missing_skip_matches_trec_eval_default(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", *files, "-m", "mrr", "--format", "json", "--missing", "skip"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["mean"] == {"mrr": 0.75}
    assert payload["num_queries"] == 2
    assert payload["missing"] == ["q3"]
    assert payload["unjudged"] == ["q9"]


def test_table_format_mentions_summary(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", *files, "-m", "ndcg@10,hit_rate@1"]) == 0
    out = capsys.readouterr().out
    assert "ndcg@10" in out and "hit_rate@1" in out
    assert "3 queries evaluated; 1 missing from the run (scored 0)" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["-m", "nope@3"], "unknown metric 'nope@3'"),
        (["-m", "P@0"], "k must be an int >= 1"),
        (["-m", "ndcg@10(rel=2)"], "takes no relevance threshold"),
    ],
)
def test_bad_metric_exit_2(
    files: tuple[str, str], args: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", *files, *args]) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert "Traceback" not in err


def test_bad_file_exit_2_with_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "q.txt").write_text(QRELS)
    (tmp_path / "r.txt").write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 x 0.4\n")
    assert main(["evaluate", str(tmp_path / "q.txt"), str(tmp_path / "r.txt")]) == 2
    assert f"{tmp_path / 'r.txt'}:2: expected 6 columns" in capsys.readouterr().err


def test_console_script_module_entry(files: tuple[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rankbridge", "evaluate", *files, "-m", "P@1", "--format", "trec"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("0.3333")


def test_unexpected_errors_are_one_line_unless_debugging(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rankbridge.cli.evaluate as cli

    def boom(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(cli, "evaluate", boom)
    monkeypatch.delenv("RANKBRIDGE_DEBUG", raising=False)
    assert main(["evaluate", *files, "-m", "P@1"]) == 70
    err = capsys.readouterr().err
    assert "unexpected error (a bug, please report it): ZeroDivisionError: simulated bug" in err
    assert "Traceback" not in err
    monkeypatch.setenv("RANKBRIDGE_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["evaluate", *files, "-m", "P@1"])


def test_unwritable_output_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "q.txt").write_text(QRELS)
    assert main(["evaluate", str(tmp_path / "q.txt"), str(tmp_path)]) == 2  # a folder given as the run file
    assert "rankbridge: error:" in capsys.readouterr().err
