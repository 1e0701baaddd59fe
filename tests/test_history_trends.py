"""History that cannot mislead: qrels fingerprints, comparable series, migration of old files, locks, 80 columns."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

import rankbridge.store as store_module
from rankbridge import Evaluation, GoldenSet, InputError, Qrels, Run, evaluate
from rankbridge.cli.history import add_cli
from rankbridge.errors import RunCoverageWarning
from rankbridge.fingerprint import qrels_fingerprint, query_set_fingerprint, short_fingerprint
from rankbridge.metrics.measures import METRIC_DEFINITIONS_VERSION
from rankbridge.store import (
    DEFAULT_TIMEOUT,
    EXIT_LOCKED,
    MixedDefinitionsWarning,
    RunStore,
    StoreLockedError,
    Trend,
    TrendSplitWarning,
)

QRELS = Qrels({"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}, "q3": {"d4": 1}}, name="golden-v1")
QRELS_V2 = Qrels({"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 2}, "q3": {"d4": 1}}, name="golden-v2")  # d2 relabelled
RUN = {"q1": ["d2", "d1"], "q2": ["d3"], "q3": ["d9", "d4"]}
METRICS = ["ndcg@10", "mrr@10", "precision@5", "precision@5(rel=2)"]
T0 = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def _ev(qrels: Qrels = QRELS, run: dict[str, list[str]] | None = None, name: str = "bm25") -> Evaluation:
    return evaluate(qrels, Run.from_ranked(run if run is not None else RUN, name=name), METRICS)


def _day(i: int) -> datetime:
    return T0 + timedelta(days=i)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "history.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[RunStore]:
    with RunStore(path) as s:
        yield s


def _quiet_trend(store: RunStore, metric: str, **kwargs: object) -> Trend:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrendSplitWarning)
        return store.trend(metric, **kwargs)  # type: ignore[arg-type]


# -- the fingerprint ------------------------------------------------------------------------------


def test_fingerprint_depends_on_content_only() -> None:
    fp = qrels_fingerprint(QRELS)
    assert len(fp) == 64 and int(fp, 16) >= 0
    reordered = {"q3": {"d4": 1}, "q2": {"d3": 2}, "q1": {"d2": 0, "d1": 1}}
    assert qrels_fingerprint(reordered) == fp  # dict order
    assert qrels_fingerprint(Qrels(reordered, name="something else")) == fp  # the name
    assert qrels_fingerprint(GoldenSet(queries=[], qrels=QRELS)) == fp  # a golden set: its qrels
    assert qrels_fingerprint({1: {2: 1}}) == qrels_fingerprint({"1": {"2": 1}})  # ids read as Qrels reads them
    assert qrels_fingerprint({"q": ["a", "b"]}) == qrels_fingerprint({"q": {"b": 1, "a": 1}})  # binary form
    assert qrels_fingerprint({"q": {"a": np.int64(2)}}) == qrels_fingerprint({"q": {"a": 2}})


@pytest.mark.parametrize(
    "changed",
    [
        {"q1": {"d1": 1, "d2": 1}, "q2": {"d3": 2}, "q3": {"d4": 1}},  # a label
        {"q1": {"d1": 1}, "q2": {"d3": 2}, "q3": {"d4": 1}},  # a judged-0 doc dropped
        {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}, "q3": {"d5": 1}},  # a doc id
        {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}, "q4": {"d4": 1}},  # a query id
        {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}, "q3": {"d4": 1}, "q5": {}},  # a query without judgments
        {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}},  # a query dropped
        {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q3": {"d4": 1}},  # a judgment moved to another query
    ],
)
def test_fingerprint_changes_with_any_judgment(changed: dict[str, dict[str, int]]) -> None:
    assert qrels_fingerprint(changed) != qrels_fingerprint(QRELS)


def test_fingerprint_is_unambiguous_about_separators() -> None:
    # ids containing the characters a naive "qid:doc=label" join would use must not collide
    assert qrels_fingerprint({"a,b": {"c": 1}}) != qrels_fingerprint({"a": {"b,c": 1}})
    assert qrels_fingerprint({"a": {"b": 1, "c": 1}}) != qrels_fingerprint({"a": {"b": 1}, "c": {}})
    assert query_set_fingerprint(["a", "b"]) != query_set_fingerprint(["a,b"])
    assert short_fingerprint(qrels_fingerprint(QRELS)) == qrels_fingerprint(QRELS)[:6]


def test_fingerprint_refuses_what_qrels_refuse() -> None:
    with pytest.raises(InputError):
        qrels_fingerprint({"q1": {"d1": 0.5}})


# -- saving with qrels ----------------------------------------------------------------------------


def test_save_keeps_the_fingerprint_and_the_qrels_name(store: RunStore) -> None:
    rid = store.save(_ev(), qrels=QRELS)
    record = store.get(rid)
    assert record.qrels_fingerprint == qrels_fingerprint(QRELS)
    assert record.qrels_name == "golden-v1"  # taken from the Qrels
    assert record.query_set_fingerprint == query_set_fingerprint(["q1", "q2", "q3"])
    assert store.get(store.save(_ev(), qrels=QRELS, qrels_name="mine")).qrels_name == "mine"
    plain = store.get(store.save(_ev(), qrels=QRELS.to_dict()))  # a dict: no name
    assert plain.qrels_fingerprint == record.qrels_fingerprint and plain.qrels_name is None
    unknown = store.get(store.save(_ev()))
    assert unknown.qrels_fingerprint is None
    assert record.to_dict()["qrels_fingerprint"] == record.qrels_fingerprint


def test_save_refuses_qrels_that_were_not_the_ones_scored_on(store: RunStore) -> None:
    with pytest.raises(InputError, match=r"2 evaluated queries are not in them \(e\.g\. 'q2', 'q3'\)"):
        store.save(_ev(), qrels={"q1": {"d1": 1}})
    assert store.list() == []


# -- trends ---------------------------------------------------------------------------------------


def test_one_qrels_one_series_and_no_warning(store: RunStore) -> None:
    ids = [store.save(_ev(), qrels=QRELS, timestamp=_day(i)) for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trend = store.trend("ndcg@10")
    assert [p.record_id for p in trend] == ids
    assert trend.complete and trend.left_out == () and trend.notes == ()
    assert len(trend.series) == 1 and trend.current == 0
    series = trend.series[0]
    assert series.qrels_fingerprint == qrels_fingerprint(QRELS) and series.qrels_names == ("golden-v1",)
    assert series.metric_definitions_version == METRIC_DEFINITIONS_VERSION
    assert series.queries_added == series.queries_removed == (0, 0, 0)


def test_different_qrels_never_join(store: RunStore) -> None:
    old = [store.save(_ev(QRELS), qrels=QRELS, timestamp=_day(i)) for i in range(2)]
    new = [store.save(_ev(QRELS_V2), qrels=QRELS_V2, timestamp=_day(2 + i)) for i in range(2)]
    back = store.save(_ev(QRELS), qrels=QRELS, timestamp=_day(4))  # judgments reverted: joins the first ones
    with pytest.warns(TrendSplitWarning, match=r"keeps 3 of 5 records: split into 2 series") as caught:
        trend = store.trend("precision@5")
    assert len(caught) == 1
    assert [p.record_id for p in trend] == [*old, back]  # the series of the newest record
    assert [[p.record_id for p in s.points] for s in trend.series] == [new, [*old, back]]
    assert trend.current == 1 and not trend.complete
    assert trend.series[0].qrels_fingerprint == qrels_fingerprint(QRELS_V2)
    assert trend.notes[0].startswith("split into 2 series: the records were scored on 2 different qrels")
    assert short_fingerprint(qrels_fingerprint(QRELS_V2)) in trend.notes[0]
    # the qrels' names do not decide: same content under another name joins, other content under the same splits
    renamed = Qrels(QRELS.to_dict(), name="golden-v2")
    store.save(_ev(renamed), qrels=renamed, timestamp=_day(5))
    assert len(_quiet_trend(store, "precision@5")) == 4


def test_unknown_qrels_never_join_known_ones(store: RunStore) -> None:
    unknown = [store.save(_ev(), timestamp=_day(i)) for i in range(3)]
    known = store.save(_ev(), qrels=QRELS, timestamp=_day(3))
    with pytest.warns(TrendSplitWarning, match="3 records of unknown qrels left out"):
        trend = store.trend("mrr@10")
    assert [p.record_id for p in trend] == [known]
    assert trend.left_out == tuple(unknown)
    assert len(trend.series) == 1
    (note,) = trend.notes
    assert note.startswith("3 records of unknown qrels left out (id 1, 2, 3)")
    assert "attach-qrels" in note and "attach_qrels" in note
    # the newest record of unknown qrels does not make the unknown ones the current series either
    store.save(_ev(), timestamp=_day(9))
    assert [p.record_id for p in _quiet_trend(store, "mrr@10")] == [known]


def test_all_unknown_qrels_join_with_a_note(store: RunStore) -> None:
    ids = [store.save(_ev(), timestamp=_day(i)) for i in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the list is complete: a note, no warning
        trend = store.trend("mrr@10")
    assert [p.record_id for p in trend] == ids and trend.complete
    assert trend.series[0].qrels_fingerprint is None
    assert trend.notes == (
        "qrels unknown for all 2 records: the trend cannot check that they were scored on the same judgments "
        "(save with qrels=, or attach them: rankbridge history attach-qrels QRELS ID...)",
    )


def test_metric_definitions_split_the_series(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    first = store.save(_ev(), qrels=QRELS, timestamp=_day(0))
    monkeypatch.setattr(store_module, "METRIC_DEFINITIONS_VERSION", "999")
    second = store.save(_ev(), qrels=QRELS, timestamp=_day(1))
    with pytest.warns(MixedDefinitionsWarning, match=f"versions {METRIC_DEFINITIONS_VERSION}, 999") as caught:
        trend = store.trend("ndcg@10")
    assert len(caught) == 1 and issubclass(MixedDefinitionsWarning, TrendSplitWarning)
    assert [p.record_id for p in trend] == [second]
    assert [s.metric_definitions_version for s in trend.series] == [METRIC_DEFINITIONS_VERSION, "999"]
    assert [p.record_id for p in trend.series[0].points] == [first]
    assert "metric definitions versions" in trend.notes[0]


def test_parameterised_metrics_never_join(store: RunStore) -> None:
    """precision@5 and precision@5(rel=2) are different measures: each trend reads its own."""
    both = store.save(_ev(), qrels=QRELS, timestamp=_day(0))
    only_rel2 = evaluate(QRELS, RUN, ["precision@5(rel=2)"])
    rel2 = store.save(only_rel2, qrels=QRELS, timestamp=_day(1))
    assert [p.record_id for p in store.trend("P@5")] == [both]
    assert [p.record_id for p in store.trend("P(rel=2)@5")] == [both, rel2]  # any spelling of it
    assert store.trend("P@5")[0].mean != store.trend("P(rel=2)@5")[0].mean
    assert store.trend("recall@5") == [] and store.trend("recall@5").current is None


def test_a_stored_spelling_is_read_under_todays_canonical_name(store: RunStore) -> None:
    """A record saved when the canonical string was spelled otherwise still joins (same definitions)."""
    first = store.save(_ev(), qrels=QRELS, timestamp=_day(0))
    second = store.save(_ev(), qrels=QRELS, timestamp=_day(1))
    store._db.execute(
        "UPDATE metric_values SET metric = 'P_5' WHERE record_id = ? AND metric = 'precision@5'", (first,)
    )
    assert [p.record_id for p in store.trend("precision@5")] == [first, second]


def test_a_changing_query_set_is_counted_or_split(store: RunStore) -> None:
    q4 = Qrels({**QRELS.to_dict(), "q4": {"d8": 1}, "q5": {"d9": 1}})
    skip = {"q1": ["d1"], "q2": ["d3"]}
    a = store.save(evaluate(q4, RUN, METRICS), qrels=q4, timestamp=_day(0))  # q1..q5
    b = store.save(evaluate(q4, skip, METRICS, missing="skip"), qrels=q4, timestamp=_day(1))  # q1, q2
    c = store.save(evaluate(q4, skip, METRICS, missing="skip"), qrels=q4, timestamp=_day(2))  # q1, q2
    d = store.save(evaluate(q4, RUN, METRICS), qrels=q4, timestamp=_day(3))  # q1..q5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # joined (complete), the change is a note
        trend = store.trend("mrr@10")
    assert [p.record_id for p in trend] == [a, b, c, d]
    series = trend.series[0]
    assert series.num_queries == (5, 2, 2, 5)
    assert series.queries_added == (0, 0, 0, 3) and series.queries_removed == (0, 3, 0, 0)
    assert series.query_set_changes == 2
    assert trend.notes == (
        f"the query set changes along the series (2 changes): record {b} has 0 queries added and 3 removed vs "
        f"record {a}; record {d} has 3 queries added and 0 removed vs record {c}; its means are over different "
        "queries (queries='same' splits there)",
    )
    with pytest.warns(TrendSplitWarning, match="the query set changes"):
        same = store.trend("mrr@10", queries="same")
    assert [[p.record_id for p in s.points] for s in same.series] == [[b, c], [a, d]]
    assert [p.record_id for p in same] == [a, d]
    with pytest.raises(InputError, match="queries must be 'join' or 'same'"):
        store.trend("mrr@10", queries="some")


def test_trend_by_name_and_json(store: RunStore) -> None:
    store.save(_ev(name="bm25"), qrels=QRELS, timestamp=_day(0))
    dense = store.save(_ev(name="dense"), qrels=QRELS, timestamp=_day(1))
    trend = store.trend("ndcg@10", "dense")
    assert [p.record_id for p in trend] == [dense] and trend.name == "dense"
    payload = json.loads(json.dumps(trend.to_dict()))
    assert payload["metric"] == "ndcg@10" and payload["current"] == 0 and payload["left_out"] == []
    (point,) = payload["series"][0]["points"]
    assert point["record_id"] == dense and point["name"] == "dense" and point["num_queries"] == 3
    assert "Trend('ndcg@10', points=1, series=1" in repr(trend)


def test_the_report_reads_the_reasons_as_notes(path: Path) -> None:
    """rankbridge report --history records trend warnings as report notes: the split reaches the report."""
    from rankbridge.cli.report import _trend_from_store

    with RunStore(path) as s:
        s.save(_ev(), qrels=QRELS, timestamp=_day(0))
        s.save(_ev(QRELS_V2), qrels=QRELS_V2, timestamp=_day(1))
    trend, notes = _trend_from_store(str(path), ["ndcg@10"], ["bm25"])
    found = trend[("ndcg@10", "bm25")]
    assert [p.record_id for p in found] == [2]
    # the report shows each series with its notes (the store's warning would repeat them)
    assert any("split into 2 series" in n for n in [*notes, *found.notes])


# -- attaching qrels to old records ---------------------------------------------------------------


def test_attach_qrels(store: RunStore) -> None:
    old = [store.save(_ev(), timestamp=_day(i)) for i in range(2)]
    store.save(_ev(), qrels=QRELS, timestamp=_day(2))
    assert len(_quiet_trend(store, "mrr@10")) == 1
    with pytest.raises(InputError, match="record 1 evaluated 2 queries these qrels do not judge"):
        store.attach_qrels(old, {"q1": {"d1": 1}})
    with pytest.raises(InputError, match="no record with id 99"):
        store.attach_qrels([old[0], 99], QRELS)
    assert store.get(old[0]).qrels_fingerprint is None  # one transaction: nothing changed
    assert store.attach_qrels(old, QRELS) == 2
    assert store.attach_qrels(old[0], QRELS) == 0  # already so
    assert store.get(old[0]).qrels_name == "golden-v1"
    trend = store.trend("mrr@10")
    assert [p.record_id for p in trend] == [1, 2, 3] and trend.complete
    with pytest.raises(InputError, match="record 1 was saved with other qrels"):
        store.attach_qrels(old[0], QRELS_V2)


# -- a file written by the old schema -------------------------------------------------------------

# The layout of schema version 1 before fingerprints, as `git show 0f50532:src/rankbridge/store.py` has it.
_OLD_DDL = """
CREATE TABLE rankbridge_schema (
    version INTEGER NOT NULL,
    written_by TEXT NOT NULL
);
CREATE TABLE records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- AUTOINCREMENT: a deleted record's id is never reused
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,              -- UTC, ISO 8601, fixed width (sorts in time order)
    config TEXT NOT NULL,                  -- JSON object
    tags TEXT NOT NULL,                    -- JSON array of str
    qrels_name TEXT,
    metric_definitions_version TEXT NOT NULL,
    rankbridge_version TEXT NOT NULL,
    missing_policy TEXT NOT NULL,
    num_queries INTEGER NOT NULL,
    num_missing INTEGER NOT NULL,
    num_failed INTEGER NOT NULL,
    num_unjudged INTEGER NOT NULL,
    num_no_relevant INTEGER NOT NULL,
    duplicates INTEGER NOT NULL,
    latency_mean REAL,                     -- seconds per query, NULL when the run had no latencies
    latency_p95 REAL,
    query_ids TEXT NOT NULL,               -- JSON array; the order of every per_query blob
    missing TEXT NOT NULL,                 -- JSON arrays of query ids
    failed TEXT NOT NULL,
    unjudged TEXT NOT NULL,
    no_relevant TEXT NOT NULL,
    errors TEXT NOT NULL                   -- JSON object: query id -> failure message
);
CREATE INDEX records_by_time ON records (created_at, id);
CREATE INDEX records_by_name_time ON records (name, created_at, id);
CREATE TABLE metric_values (
    record_id INTEGER NOT NULL REFERENCES records (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,             -- the order the metrics were asked for
    metric TEXT NOT NULL,                  -- canonical name, str(Measure)
    mean REAL,                             -- NULL for NaN (no query evaluated)
    num_values INTEGER NOT NULL,
    per_query BLOB NOT NULL,               -- little-endian float64, aligned with records.query_ids
    PRIMARY KEY (record_id, metric)
);
CREATE INDEX metric_values_by_metric ON metric_values (metric, record_id);
"""

_OLD_INSERT = (
    "INSERT INTO records (name, created_at, config, tags, qrels_name, metric_definitions_version, "
    "rankbridge_version, missing_policy, num_queries, num_missing, num_failed, num_unjudged, "
    "num_no_relevant, duplicates, latency_mean, latency_p95, query_ids, missing, failed, unjudged, "
    "no_relevant, errors) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _old_insert(conn: sqlite3.Connection, ev: Evaluation, name: str, day: int) -> int:
    """One save as the old RunStore wrote it (the same statements, without the new columns)."""
    created = _day(day).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")
    cursor = conn.execute(
        _OLD_INSERT,
        (name, created, "{}", "[]", "golden-v1", METRIC_DEFINITIONS_VERSION, "0.0.9", ev.missing_policy,
         len(ev.query_ids), 0, 0, 0, 0, 0, None, None, json.dumps(list(ev.query_ids)), "[]", "[]", "[]", "[]",
         "{}"),
    )  # fmt: skip
    rid = int(cursor.lastrowid or 0)
    for position, (metric, values) in enumerate(ev.values.items()):
        conn.execute(
            "INSERT INTO metric_values (record_id, position, metric, mean, num_values, per_query) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (rid, position, metric, float(values.mean()), len(values), values.astype("<f8").tobytes()),
        )
    return rid


@pytest.fixture
def old_file(path: Path) -> Path:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")  # as the old RunStore left its files
    for statement in _OLD_DDL.split(";\n"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT INTO rankbridge_schema (version, written_by) VALUES (1, '0.0.9')")
    _old_insert(conn, _ev(), "bm25", 0)
    with pytest.warns(RunCoverageWarning):  # a record of a run that has 1 of the 3 queries
        _old_insert(conn, _ev(run={"q1": ["d1"]}), "bm25", 1)
    conn.close()
    return path


def _columns(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        cols = [(row[1], row[2]) for row in conn.execute("PRAGMA table_info(records)")]
    conn.close()
    return cols


def test_an_old_file_is_migrated_in_place_and_still_loads(old_file: Path, tmp_path: Path) -> None:
    before = _ev()
    with RunStore(old_file, create=False) as s:
        records = s.list()
        assert [r.id for r in records] == [2, 1]
        assert all(r.qrels_fingerprint is None for r in records)  # unknown qrels: never guessed
        assert records[1].query_set_fingerprint == query_set_fingerprint(["q1", "q2", "q3"])  # computed
        loaded = s.load(1)
        for metric in before.values:
            assert loaded.values[metric].tobytes() == before.values[metric].tobytes()
        assert s.get(1).qrels_name == "golden-v1"
        new = s.save(_ev(), qrels=QRELS, timestamp=_day(2))
        with pytest.warns(TrendSplitWarning, match="2 records of unknown qrels left out"):
            trend = s.trend("ndcg@10")
        assert [p.record_id for p in trend] == [new] and trend.left_out == (1, 2)
        assert s._db.execute("SELECT version FROM rankbridge_schema").fetchone() == (1,)  # older readers welcome
        assert s._db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with RunStore(tmp_path / "fresh.sqlite") as fresh:
        fresh.save(_ev())
    assert _columns(old_file) == _columns(tmp_path / "fresh.sqlite")  # the same layout as a new file


def test_an_older_rankbridge_can_still_write_a_migrated_file(old_file: Path) -> None:
    RunStore(old_file).close()  # migrate
    conn = sqlite3.connect(old_file, isolation_level=None)
    skipped = evaluate(QRELS, {"q1": ["d1"]}, METRICS, missing="skip")  # one query evaluated
    rid = _old_insert(conn, skipped, "bm25", 5)  # no new columns: NULL there
    conn.close()
    with RunStore(old_file) as s:
        assert s.get(rid).query_set_fingerprint is None and s.get(rid).qrels_fingerprint is None
        trend = s.trend("mrr@10")  # the query set is then read from the stored ids
        assert [p.record_id for p in trend] == [1, 2, rid]
        assert trend.series[0].num_queries == (3, 3, 1)
        assert trend.series[0].queries_removed == (0, 0, 2)


def test_a_failed_migration_leaves_the_old_file(old_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ids: object) -> str:
        raise RuntimeError("power cut")

    monkeypatch.setattr(store_module, "query_set_fingerprint", broken)
    with pytest.raises(RuntimeError, match="power cut"):
        RunStore(old_file)
    assert "qrels_fingerprint" not in dict(_columns(old_file))  # ALTER TABLE rolled back with the rest
    monkeypatch.undo()
    with RunStore(old_file) as s:
        assert len(s.list()) == 2


def test_opening_an_old_file_while_another_process_writes(old_file: Path) -> None:
    holder = sqlite3.connect(old_file, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        start = time.monotonic()
        with pytest.raises(StoreLockedError, match=f"{old_file}: the run history is locked.*open it"):
            RunStore(old_file, timeout=0.2)
        assert time.monotonic() - start < 3
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_history_cli_on_an_old_file(old_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli("history", "--store", str(old_file), "trend", "mrr@10") == 0
    out = capsys.readouterr().out
    assert "mrr@10 over time (2 records)" in out and "qrels unknown for all 2 records" in out


# -- locks ----------------------------------------------------------------------------------------


def test_the_default_busy_timeout_is_short(path: Path) -> None:
    with RunStore(path) as s:
        assert s.timeout == DEFAULT_TIMEOUT == 5.0
    with pytest.raises(InputError, match=r"timeout must be a number of seconds >= 0\. Got -1"):
        RunStore(path, timeout=-1)


def test_a_write_lock_held_in_another_thread(store: RunStore, path: Path) -> None:
    rid = store.save(_ev(), qrels=QRELS)
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        locked.set()
        release.wait(30)
        conn.execute("ROLLBACK")
        conn.close()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert locked.wait(10)
        with RunStore(path, timeout=0.2) as s:
            start = time.monotonic()
            with pytest.raises(StoreLockedError) as info:
                s.save(_ev())
            assert time.monotonic() - start < 3
            assert info.value.path == str(path) and info.value.timeout == 0.2
            assert str(info.value).startswith(f"{path}: the run history is locked: another process is writing")
            assert "within 0.2 s (while trying to save a record)" in str(info.value)
            assert info.value.__cause__ is None and info.value.__suppress_context__  # not a raw sqlite3 error
            with pytest.raises(StoreLockedError, match="delete record 1"):
                s.delete(rid)
            with pytest.raises(StoreLockedError, match="attach qrels"):
                s.attach_qrels(rid, QRELS)
            assert [r.id for r in s.list()] == [rid]  # WAL: readers are not blocked
            assert s.load(rid).mean == _ev().mean
            assert len(s.trend("mrr@10")) == 1
    finally:
        release.set()
        thread.join(30)
    assert store.save(_ev()) == rid + 1  # nothing half-written behind the refusals


def test_an_exclusive_lock_blocks_readers_with_a_clear_error(store: RunStore, path: Path) -> None:
    store.save(_ev())
    store.close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("SELECT COUNT(*) FROM records").fetchone()
    try:
        with pytest.raises(StoreLockedError, match="locked"), RunStore(path, timeout=0.1) as s:
            s.list()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


_HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(60)
    """
)


def test_the_cli_exits_75_with_one_message_when_another_process_holds_the_lock(path: Path) -> None:
    with RunStore(path) as s:
        s.save(_ev(), qrels=QRELS)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        start = time.monotonic()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "rankbridge",
                "history",
                "--store",
                str(path),
                "--lock-timeout",
                "0.3",
                "delete",
                "1",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert time.monotonic() - start < 20
        assert result.returncode == EXIT_LOCKED == 75, result.stderr
        assert result.stderr.startswith(f"rankbridge: error: {path}: the run history is locked")
        assert "Traceback" not in result.stderr and "OperationalError" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        listed = subprocess.run(
            [sys.executable, "-m", "rankbridge", "history", "--store", str(path), "list", "--format", "json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0 and len(json.loads(listed.stdout)) == 1  # reading still works
    finally:
        holder.kill()
        holder.communicate()


def test_main_maps_the_lock_through_the_history_command(path: Path) -> None:
    from rankbridge.cli import main

    with RunStore(path) as s:
        s.save(_ev())
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert main(["history", "--store", str(path), "delete", "1", "--lock-timeout", "0.1"]) == 75
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- the command line at 80 columns ---------------------------------------------------------------


def _cli(*argv: str) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="rankbridge")
    add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return int(args.func(args))


_LONG = "dense-bge-small-en-v1.5+cross-encoder-ms-marco-MiniLM-L-6-v2-rerank-top50-chunk512-overlap64"
_MANY_METRICS = ["ndcg@10", "mrr@10", "precision@5", "recall@100", "map", "hit_rate@10", "precision@5(rel=2)"]


@pytest.fixture
def crowded(tmp_path: Path) -> Path:
    deep = tmp_path / "a-rather-long-folder-name-for-ci-artifacts" / "nightly" / "rankbridge-history.sqlite"
    with RunStore(deep) as s:
        for i in range(30):
            ev = evaluate(QRELS, RUN, _MANY_METRICS)
            tags = ["nightly", f"commit-{i:040d}"]
            s.save(ev, name=f"{_LONG}-{i}", qrels=QRELS if i % 3 else None, tags=tags, timestamp=_day(i))
        s.save(evaluate(QRELS, RUN, _MANY_METRICS), name="[bold red]markup[/] is text", timestamp=_day(40))
    return deep


@pytest.mark.parametrize("with_rich", [True, False])
def test_history_list_fits_80_columns(
    crowded: Path, with_rich: bool, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    if not with_rich:
        monkeypatch.setitem(sys.modules, "rich.console", None)
    assert _cli("history", "--store", str(crowded), "list") == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, "\n".join(lines)
    rows = [line for line in lines if " 2024-" in line]
    assert len(rows) == 31  # one line per record: nothing wrapped
    assert rows[0].split()[1:3] == ["2024-06-10", "12:00"]  # compact: no seconds
    assert "[bold red]m" in rows[0]  # printed as text, never as rich markup
    assert "…" in rows[1] and rows[1].split()[3].startswith("dense-bge") and rows[1].split()[3].endswith("-29")
    assert "?" in rows[0].split() and short_fingerprint(qrels_fingerprint(QRELS)) in rows[1]
    assert any("more metrics not shown" in line for line in lines)
    assert lines[0].startswith("run history (…") and lines[0].endswith("31 records, qrels ?: unknown")


def test_history_list_uses_a_wide_terminal_and_picks_metrics(
    crowded: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    assert _cli("history", "--store", str(crowded), "list", "--limit", "3") == 0
    out = capsys.readouterr().out
    assert "not shown" not in out and "precision@5(rel=2)" in out and f"{_LONG}-29" in out
    monkeypatch.setenv("COLUMNS", "80")
    assert _cli("history", "--store", str(crowded), "list", "-m", "MAP,MRR@10", "--limit", "3") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[-2:] == ["map", "mrr@10"] and "not shown" not in "".join(lines)
    assert max(map(len, lines)) <= 80


def test_history_trend_text_and_json(
    store: RunStore, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    store.save(_ev(), timestamp=_day(0))
    store.save(_ev(QRELS_V2), qrels=QRELS_V2, timestamp=_day(1))
    for i in range(2, 4):
        store.save(_ev(name=_LONG), qrels=QRELS, timestamp=_day(i))
    path = store.path
    assert _cli("history", "--store", path, "trend", "ndcg@10") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, out
    assert "ndcg@10 over time (2 records)" in out
    assert f"series 2 of 2: qrels {short_fingerprint(qrels_fingerprint(QRELS))} (golden-v1)" in out
    assert "note: split into 2 series" in out and "note: 1 record of unknown qrels left out" in out
    assert "1 other series not shown" in out
    assert _cli("history", "--store", path, "trend", "ndcg@10", "--all") == 0
    assert capsys.readouterr().out.count("over time") == 2
    assert _cli("history", "--store", path, "trend", "ndcg@10", "--format", "json") == 0
    payload = json.loads(capsys.readouterr().out)
    assert [p["record_id"] for p in payload["points"]] == [3, 4]
    assert len(payload["series"]) == 2 and payload["left_out"] == [1] and len(payload["notes"]) == 2
    assert _cli("history", "--store", path, "trend", "recall@5") == 0
    assert "recall@5 over time (0 records)" in capsys.readouterr().out


def test_history_attach_qrels_and_show(store: RunStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rankbridge.io import write_qrels

    qrels_file = tmp_path / "qrels.txt"
    write_qrels(QRELS, qrels_file)
    old = store.save(_ev(), timestamp=_day(0))
    store.save(_ev(), qrels=QRELS, timestamp=_day(1))
    assert _cli("history", "--store", store.path, "show", str(old)) == 0
    assert "fingerprint unknown" in capsys.readouterr().out
    assert _cli("history", "--store", store.path, "attach-qrels", str(qrels_file), str(old)) == 0
    assert capsys.readouterr().out.strip() == (
        f"1 record now scored on qrels {short_fingerprint(qrels_fingerprint(QRELS))} ({qrels_file})"
    )
    assert [p.record_id for p in store.trend("mrr@10")] == [old, 2]
    assert _cli("history", "--store", store.path, "show", str(old)) == 0
    assert f"fingerprint {qrels_fingerprint(QRELS)}" in capsys.readouterr().out
