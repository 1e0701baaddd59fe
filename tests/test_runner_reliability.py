"""The runner never hangs: checkpoint writes that fail, retrievers that raise SystemExit, retrievers that hang.

Each case runs the runner in a thread joined with a deadline, so a hang fails the test instead of stalling
the suite.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rankbridge as rb
from rankbridge import Hit
from rankbridge.errors import CheckpointError
from rankbridge.io import read_run_jsonl

QUERIES = {f"q{i}": f"question {i}" for i in range(12)}


def finishes(fn: Callable[[], Any], within: float = 30.0) -> Any:
    """``fn()`` run in a thread; fails the test if it does not return (or raise) within ``within`` seconds."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(within)
    assert not t.is_alive(), f"the runner did not return within {within} s (a hang)"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_metadata_json_cannot_encode_is_written_encodable_and_resumes(tmp_path: Path, mode: str) -> None:
    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop

    def search(query: str, k: int) -> list[Hit]:
        return [Hit("d1", 1.0, "text", {("page", 1): "tuple key", "cycle": loop}), Hit("d2", 0.5)]

    async def asearch(query: str, k: int) -> list[Hit]:
        return search(query, k)

    path = tmp_path / "run.jsonl"
    fn = search if mode == "sync" else asearch
    run = finishes(lambda: rb.run_retriever(fn, QUERIES, checkpoint=path, progress=False))
    assert run.errors == {} and len(run) == len(QUERIES)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == len(QUERIES)
    meta = lines[0]["hits"][0]["metadata"]
    assert meta["('page', 1)"] == "tuple key" and meta["cycle"]["name"] == "loop"
    calls: list[str] = []

    def counting(query: str, k: int) -> list[Hit]:
        calls.append(query)
        return search(query, k)

    again = rb.run_retriever(counting, QUERIES, checkpoint=path, progress=False)
    assert calls == [] and again.config["resumed"] == len(QUERIES)
    assert read_run_jsonl(path).ranking("q0") == ["d1", "d2"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full to fill a disk")
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_full_disk_ends_the_run_promptly_with_what_finished(mode: str) -> None:
    def search(query: str, k: int) -> list[str]:
        return ["d1"]

    async def asearch(query: str, k: int) -> list[str]:
        return ["d1"]

    fn = search if mode == "sync" else asearch
    with pytest.raises(CheckpointError, match=r"could not write the checkpoint /dev/full: OSError.*No space") as info:
        finishes(lambda: rb.run_retriever(fn, QUERIES, checkpoint="/dev/full", progress=False, concurrency=2))
    run = info.value.run
    assert isinstance(run, rb.Run) and 1 <= len(run) <= len(QUERIES)  # what finished is kept
    with pytest.raises(CheckpointError):
        finishes(lambda: asyncio.run(rb.arun_retriever(fn, QUERIES, checkpoint="/dev/full", progress=False)))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt()])
def test_a_retriever_raising_system_exit_fails_its_query_and_the_run_goes_on(mode: str, exc: BaseException) -> None:
    def search(query: str, k: int) -> list[str]:
        if query.endswith(" 3"):
            raise exc
        return ["d1"]

    async def asearch(query: str, k: int) -> list[str]:
        return search(query, k)

    fn = search if mode == "sync" else asearch
    run = finishes(lambda: rb.run_retriever(fn, QUERIES, timeout=None, retries=0, progress=False))
    assert set(run.errors) == {"q3"} and type(exc).__name__ in run.errors["q3"]
    assert len(run) == len(QUERIES) - 1


def test_a_retriever_that_hangs_costs_a_bounded_number_of_threads() -> None:
    release = threading.Event()
    queries = {f"q{i}": f"question {i}" for i in range(80)}

    def hangs(query: str, k: int) -> list[str]:
        release.wait(60)
        return ["d1"]

    before = threading.active_count()
    try:
        run = finishes(
            lambda: rb.run_retriever(
                hangs, queries, timeout=0.05, retries=0, concurrency=2, progress=False, keep_going=True
            )
        )
        started = threading.active_count() - before
    finally:
        release.set()
    assert len(run.errors) == 80 and all(m.startswith("timeout: ") for m in run.errors.values())
    assert started <= 16 + 2  # max(16, 2 * concurrency) abandoned calls at most, not one per query
    assert sum("not run:" in m and "seem" in m for m in run.errors.values()) >= 80 - 18
