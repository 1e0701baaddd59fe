"""The README's Python snippets run as written, in order, offline (so the README tells the truth)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

pytest.importorskip("llama_index.retrievers.bm25", reason="the README quickstart uses LlamaIndex BM25 (dev extra)")
pytest.importorskip("langchain_core", reason="the README quickstart uses LangChain (dev extra)")
pytest.importorskip("ragas", reason="the README quickstart uses the RAGAS bridge (dev extra)")


def test_readme_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 5
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"README.md python block {i + 1}", "exec"), namespace)
    assert (tmp_path / "report.html").is_file()
    # the last block: DCG = 1/log2(2) + 2/log2(4) = 2; IDCG = 2 + 1/log2(3); nDCG = 0.76019
    ev = namespace["ev"]
    assert ev.mean["ndcg@10"] == pytest.approx(2 / (2 + 1 / math.log2(3)))  # type: ignore[attr-defined]
