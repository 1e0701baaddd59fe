"""rankbridge on a real local Ray cluster (2 CPUs): results equal the local path exactly (issue 21, point 4)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import rankbridge as rb
from rankbridge.errors import InputError, RetrievalError
from rankbridge.evaluate import Evaluation, evaluate
from rankbridge.judge.grading import judge_runs
from rankbridge.runner import run_retriever

ray = pytest.importorskip("ray")
pd = pytest.importorskip("pandas")

from rankbridge.integrations.ray import RayExecutor  # noqa: E402

# the retrievers below travel to the workers by value (the workers cannot import this test module)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

METRICS = ["ndcg@10", "P@5", "recall@20", "map", "mrr@10"]

# Ray Data warns about its own deprecated settings when it starts: not ours to fix
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
    pytest.mark.filterwarnings("ignore::FutureWarning:ray"),
]


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    """One local cluster for the module (starting Ray takes seconds here), logs in a temporary folder."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report over the network
    tmp = tempfile.mkdtemp(prefix="rbray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",  # loopback only
        _temp_dir=tmp,
        log_to_driver=False,
        configure_logging=False,
        ignore_reinit_error=False,
    )
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


# -- data --------------------------------------------------------------------------------------------


def _golden(n: int = 40) -> rb.GoldenSet:
    rng = np.random.default_rng(3)
    queries = [rb.Query(f"q{i:03d}", f"question number {i}", category="ab"[i % 2]) for i in range(n)]
    qrels = {
        q.id: {f"d{int(d)}": int(rng.integers(0, 4)) for d in rng.choice(50, size=5, replace=False)} for q in queries
    }
    corpus = {f"d{i}": {"text": f"text of document {i}"} for i in range(50)}
    return rb.GoldenSet(queries, rb.Qrels(qrels), corpus=corpus)


def search(query: str, k: int) -> list[tuple[str, float]]:
    """A deterministic retriever; question 7 always fails (a failure record, not a failed block)."""
    n = int(query.rsplit(" ", 1)[1])
    if n == 7:
        raise ValueError("index unavailable")
    return [(f"d{(n * 7 + j * 3) % 50}", float(k - j)) for j in range(k)]


class CrashingSearch:
    """Kills its worker (as an out-of-memory kill would) on question 13 while a marker file exists."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self, query: str, k: int) -> list[tuple[str, float]]:
        if os.path.exists(self.marker) and query.endswith(" 13"):
            os._exit(1)
        return search(query, k)


def scripted_llm(prompt: str) -> str:
    """A judge whose grade depends on the document only (the prompt's random boundary aside)."""
    found = re.search(r"text of document (\d+)", prompt)
    grade = int(found.group(1)) % 4 if found else 0
    return f'{{"grade": {grade}, "reason": "scripted"}}'


def _same_eval(a: Evaluation, b: Evaluation) -> None:
    assert a.query_ids == b.query_ids
    assert list(a.values) == list(b.values)
    for name in a.values:
        assert a.values[name].tobytes() == b.values[name].tobytes(), name
    for attr in ("missing", "failed", "unjudged", "no_relevant", "duplicates", "notes", "missing_policy", "run_name"):
        assert getattr(a, attr) == getattr(b, attr), attr
    assert a.table is not None and b.table is not None
    assert np.array_equal(a.table.hit_rank, b.table.hit_rank) and np.array_equal(a.table.n_ret, b.table.n_ret)


def _same_run(a: rb.Run, b: rb.Run) -> None:
    assert sorted(a) == sorted(b)  # the local runner records queries as they finish; Ray's keep the given order
    assert dict(a) == dict(b)
    assert a.errors == b.errors
    assert set(a.latency) == set(b.latency)
    keys = ("k", "failures", "problems", "k_requested")
    assert {k: a.config.get(k) for k in keys} == {k: b.config.get(k) for k in keys}


# -- evaluate ----------------------------------------------------------------------------------------


def test_evaluate_run_equals_local() -> None:
    golden = _golden()
    run = run_retriever(search, golden, k=12, keep_going=True, progress=False)
    run.add("q_unjudged", ["d1"])
    local = evaluate(golden, run, METRICS)
    _same_eval(RayExecutor(block_size=7).evaluate(golden, run, METRICS), local)
    _same_eval(evaluate(golden, run, METRICS, executor=RayExecutor(block_size=11)), local)


def test_evaluate_dataset_equals_local() -> None:
    """Run rows in a Ray Dataset (as read from Parquet): grouped by query hash, evaluated per block."""
    golden = _golden()
    rng = np.random.default_rng(0)
    rows = [
        (q, f"d{int(d)}", float(rng.integers(0, 4)))  # integer scores: ties broken by doc id
        for q in list(golden.qrels)[:-3]
        for d in rng.choice(50, size=15, replace=False)
    ]
    df = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    ds = ray.data.from_pandas([df.iloc[:200], df.iloc[200:]])  # two blocks that split queries
    local = evaluate(golden.qrels, rb.Run.from_pandas(df), METRICS)
    merged = evaluate(golden.qrels, ds, METRICS, executor=RayExecutor(block_size=5))
    _same_eval(merged, local)
    cmp_ray = rb.compare({"r": merged}, None, METRICS, n_resamples=500)
    cmp_local = rb.compare({"r": local}, None, METRICS, n_resamples=500)
    assert cmp_ray.to_dict() == cmp_local.to_dict()
    with pytest.raises(InputError, match="columns query_id, doc_id and score"):
        evaluate(golden.qrels, ray.data.from_pandas(df.rename(columns={"doc_id": "doc"})), METRICS)


# -- run_retriever -----------------------------------------------------------------------------------


def test_run_retriever_equals_local() -> None:
    golden = _golden()
    local = run_retriever(search, golden, k=8, keep_going=True, progress=False)
    remote = run_retriever(search, golden, k=8, keep_going=True, executor=RayExecutor(block_size=6))
    _same_run(remote, local)
    assert list(remote) == [q.id for q in golden.queries if q.id in remote]  # in the questions' order
    assert "ValueError: index unavailable" in remote.errors["q007"]
    plain = RayExecutor(block_size=9).run_retriever(search, golden.texts(), k=8, keep_going=True)
    _same_run(plain, run_retriever(search, golden.texts(), k=8, keep_going=True, progress=False))


def test_resume_after_a_failed_block(tmp_path: Path) -> None:
    golden = _golden(30)
    marker = tmp_path / "crash"
    marker.touch()
    crashing_search = CrashingSearch(str(marker))
    ckpt = tmp_path / "run.jsonl"
    executor = RayExecutor(block_size=5, max_in_flight=1, max_retries=0)
    with pytest.raises(RetrievalError, match="a block failed") as info:
        executor.run_retriever(crashing_search, golden, k=6, keep_going=True, checkpoint=ckpt)
    partial = info.value.run  # type: ignore[attr-defined]
    assert set(partial.query_ids()) == {f"q{i:03d}" for i in range(10)}  # blocks 1-2 finished, 3 died
    assert len(ckpt.read_text().splitlines()) == 10
    marker.unlink()
    resumed = executor.run_retriever(crashing_search, golden, k=6, keep_going=True, checkpoint=ckpt)
    assert resumed.config["resumed"] == 9  # the 10 in the file, less q007's failure: run again (retry_failed)
    _same_run(resumed, run_retriever(crashing_search, golden, k=6, keep_going=True, progress=False))
    assert len(ckpt.read_text().splitlines()) == 30
    with pytest.raises(InputError, match="k=6"):  # the file's k is kept
        executor.run_retriever(search, {"zz": "question number 99", **golden.texts()}, k=7, checkpoint=ckpt)


def test_unpicklable_retriever_refused() -> None:
    lock = threading.Lock()

    def locked(query: str, k: int) -> list[str]:
        with lock:
            return []

    with pytest.raises(InputError, match=r"the retriever .*locked.* cannot be sent to Ray workers"):
        RayExecutor().run_retriever(locked, {"q1": "x"}, k=3)


def referring_search(query: str, k: int) -> list[rb.Hit]:
    """Refers to the package module itself (rb.Hit): it must travel to the workers too."""
    return [rb.Hit(doc, score) for doc, score in search(query, k)]


def test_retriever_referring_to_the_package() -> None:
    texts = {f"q{i}": f"question {i}" for i in range(8)}
    run = RayExecutor(block_size=3).run_retriever(referring_search, texts, k=4, keep_going=True)
    assert dict(run) == dict(run_retriever(referring_search, texts, k=4, keep_going=True, progress=False))


def test_keep_going_applies_to_the_merged_run() -> None:
    def broken(query: str, k: int) -> list[str]:
        raise ConnectionError("refused")

    with pytest.raises(RetrievalError, match="failed with the same error"):
        RayExecutor(block_size=4).run_retriever(broken, {f"q{i}": f"x {i}" for i in range(12)}, k=3)


# -- judge -------------------------------------------------------------------------------------------


def test_judge_equals_local_and_budget_holds(tmp_path: Path) -> None:
    golden = _golden(24)
    run = run_retriever(search, golden, k=4, keep_going=True, progress=False)
    docs = {d: v["text"] for d, v in (golden.corpus or {}).items()}
    local = judge_runs(run, golden, docs, scripted_llm, k=4, model_id="scripted", backoff=0)
    remote = judge_runs(
        run, golden, docs, scripted_llm, k=4, model_id="scripted", backoff=0, executor=RayExecutor(block_size=5)
    )
    assert {p: j.grade for p, j in remote.labels.items()} == {p: j.grade for p, j in local.labels.items()}
    assert (remote.report.pairs, remote.report.judged, remote.report.new) == (
        local.report.pairs,
        local.report.judged,
        local.report.new,
    )
    assert remote.report.usage.calls == local.report.usage.calls and remote.report.complete

    start = time.perf_counter()
    capped = RayExecutor(block_size=5).judge_runs(
        run, golden, docs, scripted_llm, k=4, model_id="scripted", backoff=0, max_calls=17
    )
    assert time.perf_counter() - start < 60
    # one ledger (a Ray actor) admits every block's calls: exact, as across threads in one process
    local_capped = judge_runs(run, golden, docs, scripted_llm, k=4, model_id="scripted", backoff=0, max_calls=17)
    assert capped.report.usage.calls == local_capped.report.usage.calls == 17
    assert len(capped.labels) == len(local_capped.labels) == 17
    assert capped.report.stopped == local_capped.report.stopped
    assert capped.report.stopped is not None and "max_calls=17" in capped.report.stopped
    assert capped.report.pairs == local.report.pairs
    assert len(capped.labels) + len(capped.report.not_judged) == local.report.pairs
    for pair, j in capped.labels.items():
        assert j.grade == local.labels[pair].grade

    cache = tmp_path / "judge.sqlite"  # resume: a second batch pays no pair twice
    first = RayExecutor(block_size=5).judge_runs(
        run, golden, docs, scripted_llm, k=4, model_id="scripted", backoff=0, cache=cache, max_calls=17
    )
    again = RayExecutor(block_size=5).judge_runs(
        run, golden, docs, scripted_llm, k=4, model_id="scripted", backoff=0, cache=cache
    )
    assert again.report.from_cache == len(first.labels) and again.report.complete
    assert {p: j.grade for p, j in again.labels.items()} == {p: j.grade for p, j in local.labels.items()}
