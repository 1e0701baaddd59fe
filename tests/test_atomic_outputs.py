"""Every output is atomic: a failure mid-write leaves the old file (or folder) intact and nothing partial.

The writers are made to fail after some bytes are written (a monkeypatched writer raising ENOSPC, as a full
disk does), through the library and through the CLI; ``/dev/full`` is used where it exists.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from rankbridge import GoldenSet, Qrels, Query, Run
from rankbridge.cli import main
from rankbridge.integrations.ragas import write_dataset
from rankbridge.io import beir as beir_mod
from rankbridge.io import read_beir, write_beir, write_run

ROWS = [{"user_input": f"question {i}", "query_id": f"q{i}", "retrieved_contexts": ["x" * 100]} for i in range(50)]


def _full_disk(*_: Any, **__: Any) -> Any:
    raise OSError(errno.ENOSPC, "No space left on device")


def _leftovers(folder: Path, keep: set[str]) -> list[str]:
    """Entries of ``folder`` that are neither ``keep`` nor the test's own inputs (temporary files, folders)."""
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


class _FailAfter:
    """Wraps ``json.dumps``: the first ``n`` calls work (and are written), the next raises ENOSPC."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.real = json.dumps

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        if self.n == 0:
            _full_disk()
        self.n -= 1
        return self.real(*args, **kwargs)


# -- ragas export ----------------------------------------------------------------------------------------------
def test_jsonl_export_failing_mid_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "rows.jsonl"
    out.write_text("old\n")
    monkeypatch.setattr(json, "dumps", _FailAfter(20))
    with pytest.raises(OSError, match="No space"):
        write_dataset(ROWS, out)
    assert out.read_text() == "old\n"
    assert _leftovers(tmp_path, {"rows.jsonl"}) == []


def test_jsonl_export_to_a_new_name_leaves_nothing_after_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(json, "dumps", _FailAfter(3))
    with pytest.raises(OSError):
        write_dataset(ROWS, tmp_path / "rows.jsonl")
    assert _leftovers(tmp_path, set()) == []


def test_jsonl_export_replaces_the_old_file_when_it_succeeds(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    out.write_text("old\n")
    write_dataset(ROWS, out)
    assert [json.loads(line) for line in out.read_text().splitlines()] == ROWS
    assert _leftovers(tmp_path, {"rows.jsonl"}) == []


def test_parquet_export_failing_mid_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "rows.parquet"
    write_dataset(ROWS[:2], out)
    old = out.read_bytes()
    real = datasets.Dataset.to_parquet

    def half_then_full(self: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        real(self, path, *args, **kwargs)
        with open(path, "r+b") as fh:  # a few bytes on disk, then the disk fills
            fh.truncate(len(Path(path).read_bytes()) // 2)
        _full_disk()

    monkeypatch.setattr(datasets.Dataset, "to_parquet", half_then_full)
    with pytest.raises(OSError):
        write_dataset(ROWS, out)
    assert out.read_bytes() == old
    assert _leftovers(tmp_path, {"rows.parquet"}) == []
    monkeypatch.undo()
    write_dataset(ROWS, out)  # and a successful write replaces it
    assert datasets.Dataset.from_parquet(str(out)).num_rows == len(ROWS)
    assert _leftovers(tmp_path, {"rows.parquet"}) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_export_to_dev_full_fails_and_leaves_the_device(tmp_path: Path) -> None:
    link = tmp_path / "rows.jsonl"  # the writer wants a .jsonl name: a link to the device
    link.symlink_to("/dev/full")
    with pytest.raises(OSError) as info:
        write_dataset(ROWS * 200, link)  # more than a write buffer, so the full disk is seen
    assert info.value.errno == errno.ENOSPC
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode) and link.is_symlink()
    assert _leftovers(tmp_path, {"rows.jsonl"}) == []


def _beir_folder(root: Path) -> Path:
    golden = GoldenSet(
        [Query("q1", "what causes scurvy?"), Query("q2", "who wrote hamlet")],
        Qrels({"q1": {"d1": 1}, "q2": {"d2": 1}}),
        corpus={
            "d1": {"title": "", "text": "A lack of vitamin C.", "metadata": {}},
            "d2": {"title": "", "text": "Hamlet is a play.", "metadata": {}},
        },
        name="toy",
    )
    write_beir(golden, root / "toy")
    return root / "toy"


def test_cli_ragas_export_on_a_full_disk_is_exit_2_and_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = _beir_folder(tmp_path)
    run = tmp_path / "run.txt"
    write_run(Run.from_ranked({"q1": ["d1", "d2"], "q2": ["d2"]}, name="bm25"), run)
    out = tmp_path / "out"
    out.mkdir()
    (out / "rows.jsonl").write_text("old\n")
    argv = ["ragas", "export", str(run), "--golden", str(golden), "-o", str(out / "rows.jsonl")]
    monkeypatch.setattr(json, "dumps", _FailAfter(1))  # the first row is written, then the disk fills
    assert main(argv) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert (out / "rows.jsonl").read_text() == "old\n"
    assert _leftovers(out, {"rows.jsonl"}) == []
    monkeypatch.undo()
    assert main(argv) == 0
    assert len((out / "rows.jsonl").read_text().splitlines()) == 2
    assert _leftovers(out, {"rows.jsonl"}) == []


# -- generate --out --------------------------------------------------------------------------------------------
def _generate_inputs(tmp_path: Path) -> list[str]:
    corpus = {"d1": "A lack of vitamin C causes scurvy.", "d2": "Hamlet is a play.", "d3": "Citrus fruit."}
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in corpus.items()))
    (tmp_path / "gen_llm.py").write_text("import json\ndef gen(prompt):\n    return json.dumps({'query': 'a query'})\n")
    return ["generate", "--llm", f"{tmp_path / 'gen_llm.py'}:gen", "--corpus", str(tmp_path / "corpus.jsonl")]


def test_cli_generate_failing_mid_write_keeps_the_old_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _generate_inputs(tmp_path)
    out = tmp_path / "golden"
    base = [*argv, "-n", "2", "--seed", "1", "--model-id", "gen-1", "--out", str(out)]
    assert main(base) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real = beir_mod._write_qrels_rows

    def half_then_full(fh: Any, qrels: Any, order: list[str]) -> None:
        fh.write("query-id\tcorpus-id\tscore\n")  # some bytes, then the disk fills
        fh.flush()
        _full_disk()

    monkeypatch.setattr(beir_mod, "_write_qrels_rows", half_then_full)
    assert main([*argv, "-n", "3", "--seed", "2", "--model-id", "gen-1", "--out", str(out)]) == 2
    assert "No space left on device" in capsys.readouterr().err
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    keep = {"golden", "corpus.jsonl", "gen_llm.py", "__pycache__"}
    assert _leftovers(tmp_path, keep) == []
    monkeypatch.setattr(beir_mod, "_write_qrels_rows", real)
    assert main([*argv, "-n", "3", "--seed", "2", "--model-id", "gen-1", "--out", str(out)]) == 0
    assert len(read_beir(out).queries) == 3
    assert _leftovers(tmp_path, keep) == []


def test_cli_generate_to_a_new_folder_leaves_nothing_after_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = _generate_inputs(tmp_path)
    monkeypatch.setattr(beir_mod, "_write_qrels_rows", lambda *a: _full_disk())
    assert main([*argv, "-n", "2", "--model-id", "gen-1", "--out", str(tmp_path / "new")]) == 2
    assert _leftovers(tmp_path, {"corpus.jsonl", "gen_llm.py", "__pycache__"}) == []


def test_cli_generate_refuses_to_replace_a_folder_with_other_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _generate_inputs(tmp_path)
    out = tmp_path / "notes"
    out.mkdir()
    (out / "thesis.tex").write_text("mine")
    assert main([*argv, "-n", "1", "--model-id", "gen-1", "--out", str(out)]) == 2
    assert "thesis.tex" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]
