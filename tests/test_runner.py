"""The runner: concurrency, timeouts, retries, faults, checkpoint/resume, Ctrl-C, event loops."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rankbridge import GoldenSet, Hit, InputError, MissingExtraError, ParseError, Qrels, Query, evaluate
from rankbridge.frameworks import CallableRetriever, adapt
from rankbridge.io import read_run_jsonl
from rankbridge.retriever import Retriever, StaticRetriever, content_hash, normalize_hits, resolve_id
from rankbridge.runner import arun_retriever, run_retriever, summarize

MODES = ["sync", "async"]
QUERIES = {f"q{i}": f"text {i}" for i in range(20)}


def ranked(i: int) -> list[Hit]:
    return [Hit(f"d{i}-{j}", float(10 - j), f"passage {j}") for j in range(5)]


class Scripted:
    """A retriever whose behaviour per query text is scripted: a list, an exception, a hang, a value."""

    def __init__(self, script: dict[str, Any], *, native_async: bool, delay: float = 0.0) -> None:
        self.script = script
        self.native_async = native_async
        self.delay = delay
        self.calls: dict[str, int] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.name = "scripted"

    def _enter(self, query: str) -> Any:
        with self.lock:
            self.calls[query] = self.calls.get(query, 0) + 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            n = self.calls[query]
        action = self.script.get(query, [])
        if callable(action) and not isinstance(action, type):
            action = action(n)
        return action

    def _leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def retrieve(self, query: str, k: int) -> Any:
        action = self._enter(query)
        try:
            if self.delay:
                time.sleep(self.delay)
            if action == "hang":
                self.release.wait(10)
                return []
            if isinstance(action, BaseException):
                raise action
            return action
        finally:
            self._leave()

    async def aretrieve(self, query: str, k: int) -> Any:
        action = self._enter(query)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if action == "hang":
                await asyncio.sleep(10)
                return []
            if isinstance(action, BaseException):
                raise action
            return action
        finally:
            self._leave()


def scripted(mode: str, script: dict[str, Any] | None = None, **kw: Any) -> Scripted:
    base: dict[str, Any] = {text: ranked(i) for i, text in enumerate(QUERIES.values())}
    base.update(script or {})
    return Scripted(base, native_async=(mode == "async"), **kw)


def run(r: Any, queries: Any = QUERIES, **kw: Any) -> Any:
    kw.setdefault("progress", False)
    kw.setdefault("backoff", 0.0)
    return run_retriever(r, queries, **kw)


# -- basics ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_every_query_in_order_with_latency(mode: str) -> None:
    r = scripted(mode)
    out = run(r, k=3, concurrency=4)
    assert out.config["mode"] == mode
    assert sorted(out) == sorted(QUERIES)
    for i, qid in enumerate(QUERIES):
        assert out.ranking(qid) == [f"d{i}-0", f"d{i}-1", f"d{i}-2"]
        assert [h.score for h in out.hits(qid)] == [10.0, 9.0, 8.0]
        assert out.hits(qid)[0].text == "passage 0"
        assert out.latency[qid] >= 0
    assert out.errors == {} and out.config["failures"] == {}
    assert out.name == "scripted"


@pytest.mark.parametrize(
    "queries",
    [
        {"a": "x", "b": "y"},
        [Query("a", "x"), Query("b", "y")],
        [("a", "x"), ("b", "y")],
        GoldenSet([Query("a", "x"), Query("b", "y")], Qrels({"a": {"d1": 1}})),
    ],
    ids=["dict", "queries", "pairs", "golden"],
)
def test_query_inputs(queries: Any) -> None:
    out = run(StaticRetriever({"x": ["d1"], "y": ["d2"]}), queries)
    assert out.ranking("a") == ["d1"] and out.ranking("b") == ["d2"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be an int >= 1. Got 0 instead."),
        ({"concurrency": 0}, "concurrency must be an int >= 1"),
        ({"timeout": -1}, "timeout must be a number of seconds > 0"),
        ({"retries": -1}, "retries must be an int >= 0"),
        ({"backoff": -0.5}, "backoff must be a number of seconds >= 0"),
        ({"mode": "fast"}, "mode must be 'auto', 'async' or 'sync'"),
    ],
)
def test_bad_options(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        run(StaticRetriever({}), **kwargs)


def test_bad_queries() -> None:
    with pytest.raises(InputError, match="appears twice"):
        run(StaticRetriever({}), [("a", "x"), ("a", "y")])
    with pytest.raises(InputError, match="expected a GoldenSet"):
        run(StaticRetriever({}), "just a string")
    with pytest.raises(InputError, match="expected the text as str"):
        run(StaticRetriever({}), {"a": 3})
    with pytest.raises(InputError, match=r"queries\[0\]: expected a Query"):
        run(StaticRetriever({}), ["text only"])


@pytest.mark.parametrize("mode", MODES)
def test_concurrency_is_bounded_and_used(mode: str) -> None:
    r = scripted(mode, delay=0.02)
    out = run(r, k=5, concurrency=4)
    assert len(out) == len(QUERIES)
    assert r.max_in_flight == 4


def test_run_evaluates_like_the_hits() -> None:
    r = StaticRetriever({"x": ["d1", "d2"], "y": ["d9"]})
    out = run(r, {"a": "x", "b": "y", "c": "z"})
    ev = evaluate({"a": {"d2": 1}, "b": {"d1": 1}, "c": {"d1": 1}}, out, ["mrr"])
    assert ev.per_query["mrr"] == {"a": 0.5, "b": 0.0, "c": 0.0}


# -- faults ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_faults_are_recorded_per_query(mode: str) -> None:
    texts = list(QUERIES.values())
    r = scripted(
        mode,
        {
            texts[0]: ValueError("index is down"),
            texts[1]: "hang",
            texts[2]: None,
            texts[3]: [Hit(f"x{j}") for j in range(12)],
            texts[4]: [Hit("a"), Hit("b"), Hit("a"), Hit("c"), Hit("b")],
            texts[5]: [Hit("a"), {"text": "no id here"}],
            texts[6]: [Hit("a"), 3.5],
            texts[7]: {"doc_id": "a"},
            texts[8]: [Hit("a", score=float("nan"))],
        },
    )
    out = run(r, k=10, timeout=0.3, retries=1, concurrency=4)
    r.release.set()
    q = list(QUERIES)
    assert out.errors[q[0]] == "error: ValueError: index is down (after 2 attempts)"
    assert out.errors[q[1]] == "timeout: no result within 0.3 s (after 2 attempts)"
    assert out.errors[q[2]] == "invalid result: the retriever returned None; expected a list of hits"
    assert out.ranking(q[3]) == [f"x{j}" for j in range(10)]
    assert out.config["problems"][q[3]] == ["returned 12 hits for k=10; kept the first 10"]
    assert out.ranking(q[4]) == ["a", "b", "c"] and out.duplicates[q[4]] == 2
    assert out.errors[q[5]].startswith("invalid result: result at rank 2 (dict) has no doc id from 'id'")
    assert out.errors[q[6]].startswith("invalid result: result at rank 2 is a float (3.5)")
    assert out.errors[q[7]] == "invalid result: the retriever returned a dict; expected a list of hits"
    assert out.errors[q[8]].startswith("invalid result: ") and "NaN" in out.errors[q[8]]
    # invalid results are deterministic: not retried; exceptions and timeouts are
    assert r.calls[texts[2]] == 1 and r.calls[texts[0]] == 2 and r.calls[texts[1]] == 2
    assert set(out.query_ids()) == set(QUERIES)  # nothing dropped
    assert out.config["failures"] == {"error": 1, "timeout": 1, "invalid result": 5}
    s = summarize(out)
    assert (s.queries, s.succeeded, s.failed) == (20, 13, 7)
    text = str(s)
    assert text.startswith("20 queries: 13 succeeded, 7 failed (error: 1, invalid result: 5, timeout: 1)")
    assert "2 duplicate hits dropped" in text and "with notes" in text
    ev = evaluate({qid: {"a": 1} for qid in QUERIES}, out, ["P@1"])
    assert ev.num_queries == 20 and len(ev.failed) == 7


@pytest.mark.parametrize("mode", MODES)
def test_flaky_query_succeeds_on_retry_and_is_noted(mode: str) -> None:
    def flaky(n: int) -> Any:
        return ConnectionError("reset") if n == 1 else [Hit("d1")]

    r = scripted(mode, {"text 0": flaky})
    out = run(r, retries=2)
    assert out.ranking("q0") == ["d1"] and "q0" not in out.errors
    assert out.config["problems"]["q0"] == ["succeeded on attempt 2 after: error: ConnectionError: reset"]


@pytest.mark.parametrize("mode", MODES)
def test_backoff_waits_between_attempts(mode: str) -> None:
    r = scripted(mode, {"text 0": RuntimeError("boom")})
    t0 = time.perf_counter()
    out = run(r, {"q0": "text 0"}, retries=2, backoff=0.05)
    assert time.perf_counter() - t0 >= 0.05 + 0.1 - 0.01
    assert out.errors["q0"] == "error: RuntimeError: boom (after 3 attempts)"


def test_sync_hang_does_not_block_the_run() -> None:
    r = scripted("sync", {"text 0": "hang", "text 1": "hang"})
    t0 = time.perf_counter()
    out = run(r, timeout=0.2, retries=0, concurrency=2)
    r.release.set()
    assert time.perf_counter() - t0 < 2
    assert out.errors.keys() == {"q0", "q1"}
    assert len(out) == 18


# -- checkpoint and resume -------------------------------------------------------------------------
def test_checkpoint_then_resume_skips_done(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    r = scripted("sync", {"text 3": RuntimeError("down")})
    first = run(r, checkpoint=path, retries=0)
    assert first.errors.keys() == {"q3"}
    lines = path.read_text().splitlines()
    assert len(lines) == 20 and all(json.loads(line)["k"] == 10 for line in lines)
    # the checkpoint is a run file
    assert read_run_jsonl(path).ranking("q5") == first.ranking("q5")

    r2 = scripted("sync")
    second = run(r2, checkpoint=path)
    assert r2.calls == {"text 3": 1}  # only the failed query runs again
    assert second.config["resumed"] == 19
    assert second.errors == {} and second.hits("q3") == ranked(3) and len(second) == 20
    assert [h.doc_id for h in second.hits("q5")] == first.ranking("q5")
    assert len(path.read_text().splitlines()) == 20
    assert read_run_jsonl(path).errors == {}


def test_resume_keeps_failures_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    run(scripted("sync", {"text 3": RuntimeError("down")}), checkpoint=path, retries=0)
    r2 = scripted("sync")
    again = run(r2, checkpoint=path, retry_failed=False)
    assert r2.calls == {} and again.errors == {"q3": "error: RuntimeError: down"}


def test_resume_tolerates_a_truncated_last_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    run(scripted("sync"), checkpoint=path)
    text = path.read_text()
    last = json.loads(text.splitlines()[-1])["query_id"]
    path.write_text(text[: len(text) - 25])  # a crash in the middle of the last line
    r2 = scripted("sync")
    out = run(r2, checkpoint=path)
    assert list(r2.calls) == [QUERIES[last]] and len(out) == 20
    assert len(read_run_jsonl(path)) == 20


def test_resume_rejects_a_corrupt_middle_line_and_another_k(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    run(scripted("sync"), checkpoint=path, k=3)
    with pytest.raises(InputError, match="written with k=3, this run asks k=10"):
        run(scripted("sync"), checkpoint=path, k=10)
    lines = path.read_text().splitlines()
    lines[2] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=r"run.jsonl:3: expected a JSON object"):
        run(scripted("sync"), checkpoint=path, k=3)


# -- Ctrl-C ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_ctrl_c_keeps_what_finished(mode: str, tmp_path: Path) -> None:
    def interrupt(n: int) -> Any:
        os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does
        return [Hit("late")]

    texts = list(QUERIES.values())
    r = scripted(mode, {texts[5]: interrupt}, delay=0.02)
    path = tmp_path / "run.jsonl"
    out = run(r, checkpoint=path, concurrency=1)
    assert out.config["interrupted"] is True
    assert 5 <= len(out.query_ids()) < 20
    assert out.config["unfinished"] == 20 - len(out.query_ids())
    assert "unfinished (interrupted" in str(summarize(out))
    done = len(path.read_text().splitlines())
    assert done == len(out.query_ids())
    r2 = scripted(mode)
    rest = run(r2, checkpoint=path)
    assert len(rest) == 20 and rest.config["resumed"] == done and len(r2.calls) == 20 - done


# -- event loops -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_sync_api_inside_a_running_loop(mode: str) -> None:
    async def app() -> Any:
        return run(scripted(mode), k=2)

    out = asyncio.run(app())
    assert len(out) == 20 and out.ranking("q1") == ["d1-0", "d1-1"]


@pytest.mark.parametrize("mode", MODES)
def test_async_api_matches_sync(mode: str) -> None:
    sync_run = run(scripted(mode), k=4, concurrency=3)
    async_run = asyncio.run(arun_retriever(scripted(mode), QUERIES, k=4, concurrency=3, progress=False))
    assert async_run.config["mode"] == mode
    assert {q: async_run.hits(q) for q in async_run} == {q: sync_run.hits(q) for q in sync_run}


def test_async_cancellation_reraises_and_keeps_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    async def main() -> None:
        task = asyncio.ensure_future(
            arun_retriever(scripted("async", delay=0.05), QUERIES, checkpoint=path, concurrency=2, progress=False)
        )
        await asyncio.sleep(0.18)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    n = len(path.read_text().splitlines())
    assert 2 <= n < 20


# -- progress bar ----------------------------------------------------------------------------------
def test_progress_without_rich_or_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    out = run(StaticRetriever({"x": ["d1"]}), {"a": "x"}, progress=True)  # not a terminal: no bar
    assert out.ranking("a") == ["d1"]
    monkeypatch.setitem(sys.modules, "rich.progress", None)
    out = run(StaticRetriever({"x": ["d1"]}), {"a": "x"}, progress=True)
    assert out.ranking("a") == ["d1"]


def test_progress_bar_in_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("rich")
    from rich.console import Console

    monkeypatch.setattr(Console, "is_terminal", property(lambda self: True))
    out = run(StaticRetriever({"x": ["d1"]}), {"a": "x", "b": "x"}, progress=True)
    assert len(out) == 2


# -- retriever protocol, normalisation, ids ----------------------------------------------------------
def test_static_retriever_is_a_retriever() -> None:
    r = StaticRetriever({"q": ["a", "b"]}, delay=0.0)
    assert isinstance(r, Retriever)
    assert adapt(r) is r
    with pytest.raises(InputError, match="delay must be >= 0"):
        StaticRetriever({}, delay=-1)
    replay = StaticRetriever.from_run(run(r, {"x1": "q"}), {"x1": "q"})
    assert [h.doc_id for h in replay.retrieve("q", 5)] == ["a", "b"]


def test_resolve_id_sources() -> None:
    class Node:
        node_id = "chunk-1"
        ref_doc_id = "doc-1"

        def __init__(self) -> None:
            self.metadata = {"source": "a.pdf"}

        def get_content(self) -> str:
            return "text"

    n = Node()
    assert resolve_id(n) == ("chunk-1", "id")
    assert resolve_id(n, "ref_doc_id") == ("doc-1", "ref_doc_id")
    assert resolve_id(n, "metadata:source") == ("a.pdf", "metadata:source")
    assert resolve_id(n, ["metadata:missing", "content_hash"]) == (content_hash("text"), "content_hash")
    assert resolve_id(n, lambda o: o.node_id.upper()) == ("CHUNK-1", "<lambda>")
    assert resolve_id(n, "metadata:missing") == (None, None)
    with pytest.raises(InputError, match="id_from: expected 'id'"):
        resolve_id(n, "title")
    with pytest.raises(InputError, match="at least one id source"):
        resolve_id(n, [])


def test_normalize_hits_doc_map_and_hash_notes() -> None:
    items = [({"id": "c1"}, 0.9), ({"id": "c2"}, 0.8), ({"text": "orphan"}, 0.7), ({"id": "c3"}, 0.6)]
    hits, notes = normalize_hits(
        items, k=10, id_from=["id", "content_hash"], doc_map={"c1": "D1", "c2": "D1", "c3": "D2"}
    )
    assert [(h.doc_id, h.score) for h in hits] == [("D1", 0.9), (content_hash("orphan"), 0.7), ("D2", 0.6)]
    assert notes == [
        "1 hit had no id; used content_hash of the text",
        "1 hit mapped to a document already ranked higher (first occurrence kept)",
    ]
    hits, _ = normalize_hits(["a", ("b", 2)], k=5, doc_map=lambda c: c.upper())
    assert [h.doc_id for h in hits] == ["A", "B"]
    hits, _ = normalize_hits([Hit("a", 1.0, "long text")], k=5, keep_text=False)
    assert hits == [Hit("a", 1.0)]


def test_callable_adapter_forms() -> None:
    assert CallableRetriever(lambda q, k: ["a", "b", "c"]).retrieve("x", 2) == [Hit("a"), Hit("b")]
    assert CallableRetriever(lambda q: ["a", "b", "c"]).retrieve("x", 1) == [Hit("a")]
    assert CallableRetriever(lambda q, *, k: ["z"] * k).retrieve("x", 2) == [Hit("z"), Hit("z")]

    async def asearch(query: str, k: int) -> list[str]:
        return ["a", "b"][:k]

    r = CallableRetriever(asearch, name="mine")
    assert r.native_async and r.name == "mine"
    assert r.retrieve("x", 1) == [Hit("a")]  # sync call of an async function
    assert asyncio.run(r.aretrieve("x", 2)) == [Hit("a"), Hit("b")]

    def broken(query: str, k: int) -> list[str]:
        raise KeyError("shard 3")

    from rankbridge import RetrievalError

    with pytest.raises(RetrievalError, match="callable retriever 'broken' raised KeyError") as info:
        CallableRetriever(broken).retrieve("x", 3)
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(InputError, match="k must be an int >= 1"):
        CallableRetriever(broken).retrieve("x", 0)


def test_adapt_refuses_options_for_ready_retrievers_and_unknown_objects() -> None:
    with pytest.raises(InputError, match="already a retriever"):
        adapt(StaticRetriever({}), id_from="ref_doc_id")
    with pytest.raises(InputError, match="cannot use a int as a retriever"):
        adapt(3)


def test_missing_framework_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from rankbridge.frameworks import LangChainRetriever, LlamaIndexRetriever

    monkeypatch.setitem(sys.modules, "llama_index.core.base.base_retriever", None)
    monkeypatch.setitem(sys.modules, "langchain_core.retrievers", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'rankbridge\[llamaindex\]'"):
        LlamaIndexRetriever(object())
    with pytest.raises(MissingExtraError, match=r"pip install 'rankbridge\[langchain\]'"):
        LangChainRetriever(object())


def test_import_stays_framework_free() -> None:
    code = (
        "import sys, rankbridge, rankbridge.runner, rankbridge.frameworks, rankbridge.retriever\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('llama_index', 'langchain_core', 'langchain_community', 'rich', 'pandas'))\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
