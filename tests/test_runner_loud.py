"""The runner is loud where the audits of LangChain / LlamaIndex apps found it quiet or misleading.

Each test builds the framework objects as an app builds them, offline (the shipped golden set's passages over
a deterministic local embedding), and checks what the user is told: which function refused the run, that a
``k`` deeper than every list says so, that an MMR retriever's ``fetch_k`` follows a deeper ``k``, and that a
query engine the runner cannot unwrap points at :func:`rankbridge.run_app`.
"""

from __future__ import annotations

import asyncio

import pytest

import rankbridge as rb
from rankbridge import GoldenSet
from rankbridge.demo import demo_golden_set
from rankbridge.errors import RetrievalError


@pytest.fixture(scope="module")
def golden() -> GoldenSet:
    return demo_golden_set()


# -- 1. a refusal names the function the user called ------------------------------------------------------------
def test_a_refused_app_run_names_run_app_not_run_retriever(golden: GoldenSet) -> None:
    def app(question: str) -> str:  # an app f(question) whose store is down
        raise ConnectionError("vector store unreachable")

    n = len(golden.queries)
    for call, name in (
        (lambda: rb.run_app(app, golden, frameworks=()), "run_app"),
        (lambda: asyncio.run(rb.arun_app(app, golden, frameworks=())), "arun_app"),
    ):
        with pytest.raises(RetrievalError) as raised:
            call()
        text = str(raised.value)
        assert text.startswith(f"{name}: {n} of {n} queries failed with the same error"), text
        assert "run_retriever" not in text

    def search(query: str, k: int) -> list[str]:
        raise ConnectionError("vector store unreachable")

    with pytest.raises(RetrievalError, match=r"^run_retriever: .*failed with the same error"):
        rb.run_retriever(search, golden, retries=0, progress=False, check_ids=False)
