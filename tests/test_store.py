"""Run history: bit-exact round trips, ordering, crash safety, concurrency, clear errors, the CLI."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

import rankbridge.store as store_module
from rankbridge import Evaluation, InputError, Run, evaluate
from rankbridge.cli.history import add_cli
from rankbridge.metrics.measures import parse_measure
from rankbridge.store import (
    METRIC_DEFINITIONS_VERSION,
    SCHEMA_VERSION,
    MixedDefinitionsWarning,
    RunStore,
)

QRELS = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}, "q3": {"d4": 1}}
METRICS = ["ndcg@10", "mrr@10", "P@1"]
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def _run(name: str = "bm25") -> Run:
    run = Run.from_ranked({"q1": ["d2", "d1"], "q2": ["d3"], "q9": ["d5"]}, name=name)
    run.config["k"] = 10
    run.add_error("q3", "timeout after 5s")
    run.latency.update({"q1": 0.1, "q2": 0.3})
    return run


def _evaluation(name: str = "bm25") -> tuple[Evaluation, Run]:
    run = _run(name)
    return evaluate(QRELS, run, METRICS), run


def _synthetic(values: dict[str, np.ndarray], query_ids: tuple[str, ...], name: str = "synthetic") -> Evaluation:
    measures = tuple(parse_measure(m) for m in values)
    return Evaluation(measures, query_ids, {str(parse_measure(m)): v for m, v in values.items()}, run_name=name)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype == np.float64 and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "history.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[RunStore]:
    with RunStore(path) as s:
        yield s


# -- round trip ------------------------------------------------------------------------------------


def test_round_trip_of_a_real_evaluation(store: RunStore) -> None:
    ev, run = _evaluation()
    before = datetime.now(timezone.utc)
    rid = store.save(ev, run=run, config={"reranker": None}, tags=["nightly", "abc123"], qrels_name="golden")
    loaded = store.load(rid)

    assert loaded.measures == ev.measures
    assert loaded.query_ids == ev.query_ids == ("q1", "q2", "q3")
    assert list(loaded.values) == list(ev.values)
    for name in ev.values:
        assert _same_bits(loaded.values[name], ev.values[name])
    assert loaded.mean == ev.mean
    assert (loaded.missing, loaded.failed, loaded.unjudged, loaded.no_relevant) == (
        ev.missing,
        ev.failed,
        ev.unjudged,
        ev.no_relevant,
    )
    assert loaded.failed == ("q3",) and loaded.unjudged == ("q9",)
    assert loaded.missing_policy == "zero" and loaded.run_name == "bm25"
    assert loaded.summary() == ev.summary()
    assert loaded.values["mrr@10"].flags.writeable  # a normal array, not a view on the blob

    record = store.get(rid)
    assert record.name == "bm25"
    assert record.config == {"k": 10, "reranker": None}  # run.config, merged with the config given
    assert record.tags == ("nightly", "abc123")
    assert record.qrels_name == "golden"
    assert record.metric_definitions_version == METRIC_DEFINITIONS_VERSION
    assert record.rankbridge_version == __import__("rankbridge").__version__
    assert record.timestamp.tzinfo == timezone.utc and before <= record.timestamp <= datetime.now(timezone.utc)
    assert (record.num_queries, record.num_missing, record.num_failed, record.num_unjudged) == (3, 0, 1, 1)
    assert record.metrics == ("ndcg@10", "mrr@10", "precision@1")
    assert record.mean == ev.mean
    assert record.latency_mean == pytest.approx(0.2)
    assert record.latency_p95 == pytest.approx(0.29)
    assert store.errors(rid) == {"q3": "timeout after 5s"}


def test_round_trip_is_bit_exact_for_awkward_floats(store: RunStore) -> None:
    special = np.array(
        [np.nan, -0.0, 0.0, np.inf, -np.inf, 5e-324, np.finfo(np.float64).max, 1 / 3, 0.1 + 0.2], dtype=np.float64
    )
    payload = np.frombuffer(np.array([0x7FF8_0000_DEAD_BEEF], dtype=np.uint64).tobytes(), dtype=np.float64)
    values = np.concatenate([special, payload, np.random.default_rng(7).random(990)])
    qids = tuple(f"q-{i}-é" for i in range(len(values)))
    rng = np.random.default_rng(1)
    ev = _synthetic({"ndcg@10": values, "recall@100": rng.random(len(values))}, qids)
    loaded = store.load(store.save(ev))
    assert loaded.query_ids == qids
    assert _same_bits(loaded.values["ndcg@10"], values)  # NaN payload and -0.0 survive
    assert _same_bits(loaded.values["recall@100"], ev.values["recall@100"])
    record = store.get(1)
    assert np.isnan(record.mean["ndcg@10"])  # the mean over a NaN is NaN, stored as NULL


def test_empty_evaluation_round_trips(store: RunStore) -> None:
    ev = _synthetic({"mrr": np.empty(0)}, ())
    loaded = store.load(store.save(ev, name="empty"))
    assert loaded.query_ids == () and loaded.values["mrr"].shape == (0,)
    assert np.isnan(store.get(1).mean["mrr"])


def test_save_rejects_bad_input_before_writing(store: RunStore) -> None:
    ev, _ = _evaluation()
    with pytest.raises(InputError, match="config must be JSON-serialisable"):
        store.save(ev, config={"retriever": object()})
    with pytest.raises(InputError, match="timezone-aware"):
        store.save(ev, timestamp=datetime(2024, 1, 1))
    broken = _synthetic({"mrr": np.zeros(2)}, ("q1", "q2", "q3"))
    with pytest.raises(InputError, match=r"must have shape \(3,\)"):
        store.save(broken)
    assert store.list() == []


def test_an_error_mid_save_rolls_back(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    ev, _ = _evaluation()
    store.save(ev, name="kept")
    calls = []

    def failing(values: np.ndarray) -> bytes:  # called inside the transaction, once per metric
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return np.ascontiguousarray(values, dtype="<f8").tobytes()

    monkeypatch.setattr(store_module, "_to_blob", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.save(ev, name="lost")
    monkeypatch.undo()
    assert [r.name for r in store.list()] == ["kept"]
    assert store._db.execute("SELECT COUNT(*) FROM metric_values").fetchone() == (3,)
    assert store.save(ev, name="next") == 2  # not even the id sequence remembers the rolled-back save


# -- list / latest / get / delete / trend -------------------------------------------------------------


def _fill(store: RunStore) -> dict[str, int]:
    ev, _ = _evaluation()
    other = _synthetic({"ndcg@10": np.array([0.5, 0.7]), "mrr@10": np.array([1.0, 0.0])}, ("q1", "q2"))
    # saved out of time order, to check that time (not insertion order) decides
    return {
        "b2": store.save(ev, name="bm25", timestamp=T0 + timedelta(days=2)),
        "d1": store.save(other, name="dense", timestamp=T0 + timedelta(days=1)),
        "b0": store.save(ev, name="bm25", timestamp=T0),
        "d3": store.save(other, name="dense", timestamp=T0 + timedelta(days=3)),
    }


def test_list_is_newest_first_with_filters(store: RunStore) -> None:
    ids = _fill(store)
    assert [r.id for r in store.list()] == [ids["d3"], ids["b2"], ids["d1"], ids["b0"]]
    assert [r.id for r in store.list("bm25")] == [ids["b2"], ids["b0"]]
    assert [r.id for r in store.list(limit=2)] == [ids["d3"], ids["b2"]]
    assert [r.id for r in store.list("dense", limit=1)] == [ids["d3"]]
    assert store.list("nobody") == []
    assert store.list(limit=0) == []
    assert store.list()[0].timestamp == T0 + timedelta(days=3)
    with pytest.raises(InputError, match="limit must be an int >= 0"):
        store.list(limit=-1)


def test_same_timestamp_ties_break_by_id(store: RunStore) -> None:
    ev, _ = _evaluation()
    first, second = store.save(ev, timestamp=T0), store.save(ev, timestamp=T0)
    assert [r.id for r in store.list()] == [second, first]
    assert [p.record_id for p in store.trend("mrr@10")] == [first, second]


def test_latest(store: RunStore) -> None:
    assert store.latest() is None
    ids = _fill(store)
    latest_bm25 = store.latest("bm25")
    assert latest_bm25 is not None and latest_bm25.id == ids["b2"]
    latest_any = store.latest()
    assert latest_any is not None and latest_any.id == ids["d3"]
    assert store.latest("nobody") is None


def test_timestamps_are_stored_in_utc(store: RunStore) -> None:
    ev, _ = _evaluation()
    paris = timezone(timedelta(hours=2))
    rid = store.save(ev, timestamp=datetime(2024, 5, 1, 14, 0, tzinfo=paris))
    assert store.get(rid).timestamp == T0
    assert store.get(rid).timestamp.tzinfo == timezone.utc


def test_delete(store: RunStore) -> None:
    ids = _fill(store)
    store.delete(ids["b2"])
    assert [r.id for r in store.list()] == [ids["d3"], ids["d1"], ids["b0"]]
    assert store._db.execute("SELECT COUNT(*) FROM metric_values WHERE record_id = ?", (ids["b2"],)).fetchone() == (0,)
    with pytest.raises(InputError, match=f"no record with id {ids['b2']}"):
        store.load(ids["b2"])
    with pytest.raises(InputError, match="no record with id 99"):
        store.delete(99)
    with pytest.raises(InputError, match="no record with id 99"):
        store.get(99)
    with pytest.raises(InputError, match="no record with id 99"):
        store.errors(99)
    ev, _ = _evaluation()
    assert store.save(ev) == 5  # ids are never reused


def test_trend_is_oldest_first_per_metric(store: RunStore) -> None:
    ids = _fill(store)
    ev, _ = _evaluation()
    points = store.trend("nDCG@10")  # any spelling of the metric
    assert [p.record_id for p in points] == [ids["b0"], ids["d1"], ids["b2"], ids["d3"]]
    assert [p.timestamp for p in points] == [T0 + timedelta(days=d) for d in range(4)]
    assert points[0].mean == ev.mean["ndcg@10"]
    assert points[1].mean == pytest.approx(0.6)
    timestamp, rid, mean = points[-1]  # a plain (timestamp, record id, mean) tuple
    assert (timestamp, rid, mean) == (T0 + timedelta(days=3), ids["d3"], pytest.approx(0.6))
    assert [p.record_id for p in store.trend("ndcg_cut_10", name="bm25")] == [ids["b0"], ids["b2"]]
    assert [p.record_id for p in store.trend("P@1")] == [ids["b0"], ids["b2"]]  # only records that have it
    assert store.trend("recall@5") == []
    with pytest.raises(InputError, match="unknown metric"):
        store.trend("nope@3")


def test_trend_warns_when_metric_definitions_changed(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    ev, _ = _evaluation()
    store.save(ev, timestamp=T0)
    monkeypatch.setattr(store_module, "METRIC_DEFINITIONS_VERSION", "2")
    store.save(ev, timestamp=T0 + timedelta(days=1))
    assert [r.metric_definitions_version for r in store.list()] == ["2", "1"]
    with pytest.warns(MixedDefinitionsWarning, match="versions 1, 2"):
        store.trend("mrr@10")


def test_saving_a_run_name_and_evaluation_name(store: RunStore) -> None:
    ev, run = _evaluation("dense")
    assert store.get(store.save(ev)).name == "dense"  # evaluation.run_name
    assert store.get(store.save(ev, run=_run("hybrid"))).name == "hybrid"  # run.name wins over it
    assert store.get(store.save(ev, run=run, name="dense-v2")).name == "dense-v2"  # name= wins over all
    assert store.get(store.save(ev, tags="one-tag")).tags == ("one-tag",)
    with pytest.raises(InputError, match="name must be a non-empty str"):
        store.save(ev, name="")


def test_closed_store_refuses_and_close_is_idempotent(path: Path) -> None:
    s = RunStore(path)
    s.close()
    s.close()
    assert "closed" in repr(s)
    with pytest.raises(Exception, match="closed"):
        s.list()


def test_memory_store(tmp_path: Path) -> None:
    ev, _ = _evaluation()
    with RunStore(":memory:") as s:
        assert s.load(s.save(ev)).mean == ev.mean
    assert list(tmp_path.iterdir()) == []


# -- files that are not a history ------------------------------------------------------------------


def test_a_garbage_file_is_a_clear_error(path: Path) -> None:
    path.write_bytes(b"qid\titer\tdoc\trel\n" * 200)
    with pytest.raises(InputError, match="not a rankbridge run history \\(not a SQLite database file"):
        RunStore(path)
    assert path.read_bytes() == b"qid\titer\tdoc\trel\n" * 200  # left untouched


def test_another_applications_database_is_refused(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.close()
    with pytest.raises(InputError, match=r"a SQLite database but not a rankbridge run history.*invoices"):
        RunStore(path)


def test_a_newer_schema_is_a_clear_error(path: Path) -> None:
    RunStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE rankbridge_schema SET version = ?, written_by = '9.0.0'", (SCHEMA_VERSION + 1,))
    conn.close()
    with pytest.raises(InputError, match=r"newer rankbridge \(9\.0\.0, history schema version 2\).*pip install -U"):
        RunStore(path)


def test_a_missing_file_with_create_false(path: Path) -> None:
    with pytest.raises(InputError, match="no run history here"):
        RunStore(path, create=False)
    assert not path.exists()
    with pytest.raises(InputError, match="found a directory"):
        RunStore(path.parent)


def test_creates_parent_folders_and_reopens(tmp_path: Path) -> None:
    nested = tmp_path / "ci" / "history" / "runs.sqlite"
    ev, _ = _evaluation()
    with RunStore(nested) as s:
        rid = s.save(ev)
    with RunStore(nested, create=False) as s:
        assert _same_bits(s.load(rid).values["ndcg@10"], ev.values["ndcg@10"])
        assert s._db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# -- crash safety ---------------------------------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from rankbridge.evaluate import Evaluation
    from rankbridge.metrics.measures import parse_measure
    from rankbridge.store import RunStore

    n = 200_000
    names = ["ndcg@10", "mrr@10", "precision@5", "recall@100", "map", "hit_rate@10"]
    rng = np.random.default_rng(0)
    ev = Evaluation(tuple(parse_measure(m) for m in names), tuple(f"q{i:06d}" for i in range(n)),
                    {m: rng.random(n) for m in names}, run_name="doomed")
    store = RunStore(sys.argv[1])
    conn = store._conn
    conn.execute("PRAGMA cache_size = 20")  # a tiny page cache: the open transaction spills into the WAL
    seen = []

    def trace(sql):
        if sql.startswith("INSERT INTO metric_values"):
            seen.append(sql)
            if len(seen) == len(names):  # five 1.6 MB blobs written, the last one about to be
                print("paused in transaction" if conn.in_transaction else "NOT in a transaction", flush=True)
                time.sleep(300)

    conn.set_trace_callback(trace)
    store.save(ev)
    print("committed", flush=True)
    """
)


def test_a_process_killed_mid_save_leaves_the_store_as_it_was(path: Path) -> None:
    ev, run = _evaluation()
    with RunStore(path) as s:
        committed = [s.save(ev, run=run), s.save(ev, name="second")]
    size_before = path.stat().st_size

    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        assert line == "paused in transaction", child.stderr.read() if child.stderr else ""
        wal = path.with_name(path.name + "-wal")
        assert wal.stat().st_size > 4_000_000  # uncommitted pages really reached the disk
        # While the writer holds its lock, a reader opens the store and sees only committed records.
        with RunStore(path, create=False) as reader:
            assert [r.id for r in reader.list()] == committed[::-1]
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    assert child.returncode == -signal.SIGKILL

    with RunStore(path, create=False) as s:
        assert [r.id for r in s.list()] == committed[::-1]
        assert [r.name for r in s.list()] == ["second", "bm25"]
        assert _same_bits(s.load(committed[0]).values["ndcg@10"], ev.values["ndcg@10"])
        assert s._db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert s._db.execute("SELECT COUNT(*) FROM metric_values").fetchone() == (6,)
    assert path.stat().st_size == size_before  # closing checkpointed nothing of the lost transaction
    with RunStore(path, create=False) as s:
        assert s.save(ev, name="after") == 3  # the write lock died with the process


# -- concurrency ----------------------------------------------------------------------------------


def test_concurrent_readers_while_a_writer_saves(path: Path) -> None:
    rng = np.random.default_rng(3)
    qids = tuple(f"q{i}" for i in range(5_000))
    evaluations = [_synthetic({"ndcg@10": rng.random(5_000), "mrr@10": rng.random(5_000)}, qids) for _ in range(4)]
    n_saves = 40
    problems: list[str] = []
    done = threading.Event()

    def writer() -> None:
        try:
            with RunStore(path) as s:
                for i in range(n_saves):
                    s.save(evaluations[i % 4], name=f"w{i % 4}")
        except Exception as exc:  # reported, not swallowed
            problems.append(f"writer: {exc!r}")
        finally:
            done.set()

    def reader(k: int) -> None:
        reads = 0
        try:
            with RunStore(path) as s:
                while not done.is_set() or reads < 3:
                    records = s.list()
                    ids = [r.id for r in records]
                    if ids != sorted(ids, reverse=True):
                        problems.append(f"reader {k}: order {ids}")
                    for r in records[:2]:
                        if r.metrics != ("ndcg@10", "mrr@10"):  # a half-written record would show here
                            problems.append(f"reader {k}: record {r.id} has {r.metrics}")
                        loaded = s.load(r.id)
                        expected = evaluations[int(r.name[1:])]
                        if not _same_bits(loaded.values["ndcg@10"], expected.values["ndcg@10"]):
                            problems.append(f"reader {k}: record {r.id} differs")
                    reads += 1
        except Exception as exc:
            problems.append(f"reader {k}: {exc!r}")

    with RunStore(path):  # create the file before the threads race
        pass
    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert problems == []
    with RunStore(path) as s:
        assert len(s.list()) == n_saves


def test_two_writers_take_turns(path: Path) -> None:
    ev, _ = _evaluation()
    problems: list[str] = []

    def writer(name: str) -> None:
        try:
            with RunStore(path) as s:
                for _ in range(25):
                    s.save(ev, name=name)
        except Exception as exc:
            problems.append(repr(exc))

    threads = [threading.Thread(target=writer, args=(n,)) for n in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert problems == []
    with RunStore(path) as s:
        assert sorted(r.id for r in s.list()) == list(range(1, 76))
        assert {n: len(s.list(n)) for n in "abc"} == {"a": 25, "b": 25, "c": 25}


def test_one_store_shared_between_threads(store: RunStore) -> None:
    ev, _ = _evaluation()
    problems: list[str] = []

    def work() -> None:
        try:
            for _ in range(20):
                store.load(store.save(ev))
                store.list(limit=3)
        except Exception as exc:
            problems.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert problems == []
    assert len(store.list()) == 80


# -- command line ---------------------------------------------------------------------------------


def _cli(*argv: str) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="rankbridge")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return int(args.func(args))


@pytest.fixture
def filled(path: Path) -> tuple[str, dict[str, int]]:
    with RunStore(path) as s:
        ids = _fill(s)
    return str(path), ids


def test_cli_list_json(filled: tuple[str, dict[str, int]], capsys: pytest.CaptureFixture[str]) -> None:
    path, ids = filled
    assert _cli("history", "--store", path, "list", "--format", "json") == 0
    payload = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in payload] == [ids["d3"], ids["b2"], ids["d1"], ids["b0"]]
    assert payload[0]["timestamp"] == "2024-05-04T12:00:00+00:00"
    assert payload[0]["mean"] == {"ndcg@10": pytest.approx(0.6), "mrr@10": 0.5}
    # the options work after the subcommand too
    assert _cli("history", "list", "--store", path, "--name", "bm25", "--limit", "1", "--format", "json") == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [ids["b2"]]


def test_cli_list_table(filled: tuple[str, dict[str, int]], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = filled
    assert _cli("history", "--store", path, "list") == 0
    out = capsys.readouterr().out
    assert "4 records" in out and "bm25" in out and "dense" in out and "2024-05-04" in out


def test_cli_show(filled: tuple[str, dict[str, int]], capsys: pytest.CaptureFixture[str]) -> None:
    path, ids = filled
    assert _cli("history", "--store", path, "--format", "json", "show", str(ids["b0"]), "--per-query") == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["name"] == "bm25" and payload["unjudged"] == ["q9"]
    assert payload["per_query"]["mrr@10"] == {"q1": 0.5, "q2": 1.0, "q3": 0.0}
    assert _cli("history", "--store", path, "show", str(ids["b0"]), "--per-query") == 0
    out = capsys.readouterr().out
    assert f"record {ids['b0']}: bm25" in out
    assert "3 queries evaluated" in out and "precision@1" in out and "q3" in out


def test_cli_trend_and_delete(filled: tuple[str, dict[str, int]], capsys: pytest.CaptureFixture[str]) -> None:
    path, ids = filled
    assert _cli("history", "--store", path, "trend", "MRR@10", "--name", "dense", "--format", "json") == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["metric"] == "mrr@10"
    assert [(p["record_id"], p["name"], p["mean"]) for p in payload["points"]] == [
        (ids["d1"], "dense", 0.5),
        (ids["d3"], "dense", 0.5),
    ]
    assert _cli("history", "--store", path, "trend", "ndcg@10") == 0
    assert "ndcg@10 over time (4 records)" in capsys.readouterr().out
    assert _cli("history", "--store", path, "delete", str(ids["d1"])) == 0
    assert capsys.readouterr().out.strip() == f"deleted record {ids['d1']}"
    with pytest.raises(InputError, match=f"no record with id {ids['d1']}"):
        _cli("history", "--store", path, "show", str(ids["d1"]))


def test_cli_errors_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no run history here"):
        _cli("history", "--store", str(tmp_path / "nope.sqlite"), "list")
    assert not (tmp_path / "nope.sqlite").exists()  # reading never creates a file
    garbage = tmp_path / "run.txt"
    garbage.write_text("q1 Q0 d1 1 0.5 bm25\n" * 100)
    with pytest.raises(InputError, match="not a SQLite database file"):
        _cli("history", "--store", str(garbage), "list")


def test_cli_plain_text_without_rich(
    filled: tuple[str, dict[str, int]], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = filled
    monkeypatch.setitem(sys.modules, "rich.console", None)  # import rich.console -> ImportError
    assert _cli("history", "--store", path, "list") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("run history") and lines[1].split()[:3] == ["id", "saved", "(UTC)"]
    assert len(lines) == 6


def test_cli_through_a_subprocess_entry(filled: tuple[str, dict[str, int]]) -> None:
    """The CLI module has no hidden state: a fresh interpreter lists the same store."""
    path, ids = filled
    code = (
        "import argparse, sys; from rankbridge.cli.history import add_cli; p = argparse.ArgumentParser(); "
        "add_cli(p.add_subparsers(required=True)); a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "history", "--store", path, "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert len(json.loads(out.stdout)) == len(ids)
