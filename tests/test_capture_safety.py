"""Capture is safe inside someone else's app: never raises into it, never blocks its event loop, bounded
memory with a clear drop count, sampling, near-zero work when paused, no leaks, lazy framework imports."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
import time
from types import MappingProxyType
from typing import Any

import pytest

from capture_data import CORPUS
from rankbridge import InputError, MissingExtraError
from rankbridge.capture import CaptureRecord, Recorder, capture

recorder_mod = importlib.import_module("rankbridge.capture")  # the module (rankbridge.capture is the function)

TEXTS = [f"{w} {i}" for i, w in enumerate(["scurvy vitamin", "citrus oranges", "dogs at night", "bread yeast"] * 5)]


# -- import hygiene and validation (framework-free) -----------------------------------------------
def test_import_does_not_import_frameworks() -> None:
    code = (
        "import sys, rankbridge, rankbridge.capture; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('llama_index', 'langchain_core', 'langchain')]; "
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sample_rate": 0.0}, "sample_rate must be a float in (0, 1]. Got 0.0 instead."),
        ({"sample_rate": 1.5}, "sample_rate must be a float in (0, 1]. Got 1.5 instead."),
        ({"max_records": 0}, "max_records must be an int >= 1. Got 0 instead."),
        ({"id_from": "title"}, "id_from: expected"),
    ],
)
def test_bad_arguments_fail_before_attaching(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as info:
        capture(frameworks=(), **kwargs)
    assert message in str(info.value)


def test_missing_framework(monkeypatch: pytest.MonkeyPatch) -> None:
    import rankbridge.frameworks as cb

    monkeypatch.setattr(cb, "_installed", lambda module: False)
    with capture() as cap:
        pass
    assert cap.attached == ()
    with pytest.raises(MissingExtraError, match=r"pip install 'rankbridge\[llamaindex\]'"):
        capture(frameworks=["llamaindex"])


def test_recorder_cap_and_sampling_are_counted() -> None:
    rec = Recorder(max_records=3, sample_rate=0.5, seed=7)
    admitted = 0
    for i in range(200):
        if rec.admit():
            admitted += 1
            rec.add(CaptureRecord(framework="t", query=f"q{i}", run_id=str(i), retriever="R"))
    assert len(rec.records) == 3
    assert rec.sampled_out + rec.dropped + 3 == 200
    assert 60 < rec.sampled_out < 140


# -- frameworks -------------------------------------------------------------------------------------
def langchain_app() -> tuple[Any, Any]:
    pytest.importorskip("langchain_core")
    pytest.importorskip("rank_bm25")
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate

    retriever = BM25Retriever.from_texts(list(CORPUS.values()), ids=list(CORPUS), k=2)
    prompt = ChatPromptTemplate.from_template("{context}")
    # the parrot model echoes its prompt, so the app's answer shows which documents it was given
    chain = (
        retriever
        | (lambda docs: {"context": "|".join(d.id for d in docs)})
        | prompt
        | ParrotFakeChatModel()
        | StrOutputParser()
    )
    return chain, retriever


def llamaindex_app() -> tuple[Any, Any]:
    pytest.importorskip("llama_index.core")
    pytest.importorskip("llama_index.retrievers.bm25")
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever

    nodes = [TextNode(text=t, id_=d) for d, t in CORPUS.items()]
    retriever = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=2)
    qe = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(max_tokens=4))

    class App:
        def invoke(self, text: str) -> str:
            r = qe.query(text)
            return str(r) + "|" + "|".join(n.node.node_id for n in r.source_nodes)

    return App(), retriever


APPS = {"langchain": langchain_app, "llamaindex": llamaindex_app}


@pytest.fixture(params=sorted(APPS))
def app(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    for var in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2"):
        monkeypatch.delenv(var, raising=False)
    name = request.param
    application, _ = APPS[name]()
    return name, application


def answers(application: Any) -> list[str]:
    out = [application.invoke(t) for t in TEXTS]
    assert all("|d" in a or a.startswith("d") for a in out)  # the answers carry the retrieved ids
    return out


@pytest.mark.parametrize(
    ("target", "attr"),
    [
        (Recorder, "add"),
        (Recorder, "admit"),
        (CaptureRecord, "set_items"),
        (recorder_mod, "small_tags"),
    ],
)
def test_bookkeeping_failure_leaves_the_answer_unchanged(
    app: tuple[str, Any], target: Any, attr: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, application = app
    expected = answers(application)

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("rankbridge bookkeeping bug")

    monkeypatch.setattr(target, attr, boom)
    if attr == "set_items" and name == "llamaindex":  # its fast path snapshots plain TextNode results itself
        import rankbridge.frameworks.llamaindex.capture as li_capture

        monkeypatch.setattr(li_capture, "_snapshot_text_nodes", boom)
    if target is recorder_mod:  # the handler modules imported the function by name
        import importlib

        where = {
            "llamaindex": "rankbridge.frameworks.llamaindex.capture",
            "llamaindex_legacy": "rankbridge.frameworks.llamaindex.capture_legacy",
            "langchain": "rankbridge.frameworks.langchain.capture",
        }
        modules = [where[name]] + (["rankbridge.frameworks.llamaindex._capture_common"] if name == "llamaindex" else [])
        for module in modules:
            if hasattr(importlib.import_module(module), attr):
                monkeypatch.setattr(importlib.import_module(module), attr, boom)
    with capture(frameworks=[name]) as cap:
        got = answers(application)
    assert got == expected
    assert cap.recorder.internal_errors >= len(TEXTS)
    assert "rankbridge bookkeeping bug" in (cap.summary()["last_internal_error"] or "")


def test_even_counting_failures_stay_silent(app: tuple[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    name, application = app
    expected = answers(application)

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug")

    monkeypatch.setattr(Recorder, "add", boom)
    monkeypatch.setattr(Recorder, "internal_error", boom)
    with capture(frameworks=[name]):
        assert answers(application) == expected


def test_cap_keeps_the_first_records_and_counts_the_rest(app: tuple[str, Any]) -> None:
    name, application = app
    with capture(frameworks=[name], max_records=3) as cap:
        answers(application)
    assert [r.query for r in cap.records] == TEXTS[:3]
    s = cap.summary()
    assert (s["records"], s["dropped"]) == (3, len(TEXTS) - 3)
    assert cap.run.config["dropped"] == len(TEXTS) - 3


def test_sampling(app: tuple[str, Any]) -> None:
    name, application = app
    with capture(frameworks=[name], sample_rate=0.5, seed=3) as cap:
        answers(application)
    s = cap.summary()
    assert s["records"] + s["sampled_out"] == len(TEXTS)
    assert 0 < s["records"] < len(TEXTS)
    assert cap.run.config["sample_rate"] == 0.5


def test_paused_capture_records_nothing_and_tracks_nothing(app: tuple[str, Any]) -> None:
    name, application = app
    with capture(frameworks=[name]) as cap:
        cap.enabled = False
        answers(application)
        assert cap.records == []
        assert not open_state(name)
        cap.enabled = True
        application.invoke(TEXTS[0])
    assert [r.query for r in cap.records] == [TEXTS[0]]


def open_state(name: str) -> int:
    """How many entries the attached tap tracks right now (open spans/runs, waiting records)."""
    if name == "langchain":
        from rankbridge.frameworks.langchain.capture import _slots

        taps = [s.handler._tap for s in _slots if s.handler is not None]
        return sum(len(t._open) + len(t._parents) for t in taps)
    from llama_index.core.instrumentation import get_dispatcher

    from rankbridge.frameworks.llamaindex.capture import RankbridgeSpanHandler

    taps = [h.tap for h in get_dispatcher().span_handlers if isinstance(h, RankbridgeSpanHandler)]
    return sum(len(t._open) + len(t._waiting) for t in taps)


def test_no_state_left_after_requests(app: tuple[str, Any]) -> None:
    name, application = app
    with capture(frameworks=[name]) as cap:
        answers(application)
        assert open_state(name) == 0
    assert len(cap.records) == len(TEXTS)


def test_event_loop_is_not_blocked() -> None:
    """50 concurrent async retrievals that each await 50 ms finish together, capture on or off."""
    pytest.importorskip("langchain_core")
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Slow(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
            raise NotImplementedError

        async def _aget_relevant_documents(
            self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
        ) -> list[Document]:
            await asyncio.sleep(0.05)
            return [Document(page_content=query, id=query)]

    r = Slow()

    async def main() -> float:
        t0 = time.perf_counter()
        await asyncio.gather(*(r.ainvoke(f"q{i}") for i in range(50)))
        return time.perf_counter() - t0

    with capture(golden={f"q{i}": f"q{i}" for i in range(50)}, frameworks=["langchain"]) as cap:
        elapsed = asyncio.run(main())
    assert elapsed < 1.0  # serialised it would take 2.5 s
    assert sorted(cap.run) == sorted(f"q{i}" for i in range(50))
    assert all(cap.run.ranking(q) == [q] for q in cap.run)


def test_nested_captures_across_frameworks() -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    lc_app, _ = langchain_app()
    li_app, _ = llamaindex_app()
    with capture(frameworks=["langchain", "llamaindex"]) as outer:
        lc_app.invoke(TEXTS[0])
        with capture(frameworks=["llamaindex"]) as inner:
            li_app.invoke(TEXTS[1])
    assert [(r.framework, r.query) for r in outer.records] == [("langchain", TEXTS[0]), ("llamaindex", TEXTS[1])]
    assert [(r.framework, r.query) for r in inner.records] == [("llamaindex", TEXTS[1])]


def test_bad_retain_fails_before_attaching() -> None:
    with pytest.raises(InputError, match=r"retain must be 'light' or 'objects'\. Got 'all' instead\."):
        capture(frameworks=(), retain="all")  # type: ignore[arg-type]


@pytest.mark.parametrize("retain", ["light", "objects"])
def test_retain_modes_give_the_same_run(app: tuple[str, Any], retain: str) -> None:
    from rankbridge.capture import Snapshot

    name, application = app
    with capture(frameworks=[name], retain=retain) as light, capture(frameworks=[name], retain="objects") as objects:  # type: ignore[arg-type]
        answers(application)
    assert [r.to_dict()["retrieved"] for r in light.records] == [r.to_dict()["retrieved"] for r in objects.records]
    assert [[h.text for h in r.hits] for r in light.records] == [[h.text for h in r.hits] for r in objects.records]
    assert all(light.run.ranking(q) == objects.run.ranking(q) for q in light.queries)
    # light records keep plain values, not the framework's result objects
    kept = [type(r._items) is Snapshot for r in light.records]
    assert all(kept) if retain == "light" else not any(kept)
    if retain == "light":
        for r in light.records:
            # (an empty metadata dict is replaced by one shared read-only mapping; LlamaIndex's carries the scores)
            plain = (str, dict, MappingProxyType, float)
            assert all(v is None or isinstance(v, plain) for v in r._items)  # type: ignore[union-attr]


def test_snapshot_keeps_odd_results_as_objects() -> None:
    from rankbridge.capture import CaptureRecord, Snapshot, snapshot

    class Doc:
        def __init__(self, id: str, text: str) -> None:
            self.id, self.page_content, self.metadata = id, text, {"k": 1}

    class Other(Doc):
        pass

    assert snapshot([]) is None
    assert snapshot(["d1", "d2"]) is None  # ids, not framework objects
    assert snapshot([Doc("d1", "a"), Other("d2", "b")]) is None  # mixed classes
    rec = Recorder()
    r = CaptureRecord(framework="test", query="q", run_id="r1", retriever="Static")
    r.set_items([Doc("d1", "a"), Doc("", "b")], None, rec)
    assert type(r._items) is Snapshot
    # resolution sees what it would have seen on the objects, error message and all
    assert r.retrieved == [] and r.resolve_error is not None and "(Doc)" in r.resolve_error
    r.set_items([Doc("d1", "a")], None, rec)
    assert [(h.doc_id, h.text, h.metadata) for h in r.retrieved] == [("d1", "a", {"k": 1})]
    # a callable id source needs the objects themselves
    rec2 = Recorder(id_from=lambda d: d.id.upper())
    assert not rec2.light
    r2 = CaptureRecord(framework="test", query="q", run_id="r2", retriever="Static")
    r2.set_items([Doc("d1", "a")], None, rec2)
    rec2.add(r2)
    assert type(r2._items) is list and [h.doc_id for h in r2.retrieved] == ["D1"]
    # content_hash needs the text even when the hits do not keep it
    rec3 = Recorder(id_from="content_hash", keep_text=False)
    r3 = CaptureRecord(framework="test", query="q", run_id="r3", retriever="Static")
    r3.set_items([Doc("", "a")], None, rec3)
    rec3.add(r3)
    assert type(r3._items) is Snapshot
    assert [(h.doc_id.startswith("sha256:"), h.text) for h in r3.retrieved] == [(True, None)]


def test_paused_langchain_capture_is_not_added_to_new_runs() -> None:
    pytest.importorskip("langchain_core")
    from rankbridge.frameworks.langchain.capture import _slots

    with capture(frameworks=["langchain"]) as cap:
        slot = next(s for s in _slots if s.handler is not None and s.handler.recorder is cap.recorder)
        assert slot.get() is slot.handler
        cap.enabled = False
        assert slot.get() is None
        cap.enabled = True
        assert slot.get() is slot.handler


def test_paused_llamaindex_capture_takes_its_handlers_off_the_dispatcher() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.instrumentation import get_dispatcher

    from rankbridge.frameworks.llamaindex.capture import RankbridgeSpanHandler

    dispatcher = get_dispatcher()

    def ours() -> list[str]:
        handlers = [*dispatcher.span_handlers, *dispatcher.event_handlers]
        return sorted(h.class_name() for h in handlers if isinstance(h, RankbridgeSpanHandler))

    before = (list(dispatcher.span_handlers), list(dispatcher.event_handlers))
    with capture(frameworks=["llamaindex"]) as cap:
        assert ours() == ["RankbridgeSpanHandler"]
        cap.enabled = False  # LlamaIndex then does not call them at all
        assert ours() == []
        cap.enabled = False  # idempotent
        cap.enabled = True
        cap.enabled = True
        assert ours() == ["RankbridgeSpanHandler"]
    assert (dispatcher.span_handlers, dispatcher.event_handlers) == before
