"""docs/bring-your-own-app.md: its Python snippets run as written, in order, offline, and print what they say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "bring-your-own-app.md"

pytest.importorskip("llama_index.core", reason="the page builds a LlamaIndex app (dev extra)")
pytest.importorskip("langchain.agents", reason="the page builds a LangChain agent (dev extra)")


def test_page_snippets_run_and_print_what_their_comments_say(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used-offline")
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 8
    namespace: dict[str, object] = {"__name__": "byoa"}
    printed: list[str] = []
    for i, block in enumerate(blocks):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, f"bring-your-own-app.md python block {i + 1}", "exec"), namespace)
        printed.append(out.getvalue())
        # a "# value" comment on a print line says what it prints: check each one
        expected = [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+#\s*(.+)$", block, flags=re.M)]
        lines = out.getvalue().splitlines()
        for want in expected:
            head = want.split(" ...")[0].split(":")[0].strip()
            assert any(head in line for line in lines), (i + 1, want, lines)
    text = "\n".join(printed)
    assert "Under id_from='ref_doc_id'" in text and "Pass id_from=" in text
