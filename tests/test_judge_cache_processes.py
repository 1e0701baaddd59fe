"""One judge cache file shared by processes: created, upgraded, written and read by several at once.

Parallel CI jobs, pytest-xdist workers and notebook kernels point the judge at one cache file. The race
tests start real processes (``subprocess``, so each has its own SQLite connection and file locks), hold
them at a start line until all are ready, and let them race; others stop a child inside its opening
transaction, or hold the write lock from a second connection. Every child is waited for with a timeout:
a hang fails the test instead of hanging CI.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rankbridge import InputError
from rankbridge.judge import Grade, JudgeCacheError, JudgeCacheMigrated, JudgmentCache, doc_hash
from rankbridge.judge.grading import _SCHEMA, _SCHEMA_VERSION
from rankbridge.store import RunStore

WORKERS = 6
OWN = 30  # grades each worker writes under its own keys
SHARED = 15  # grades every worker writes under the same keys (the same grade): one row each, never two
DEADLINE = 60.0  # seconds for a whole group of children; they finish in a few seconds

# The keys and grades, defined once for the children and the checks below.
_KEYS = textwrap.dedent(
    """
    def own(worker, i):
        return (f"q{worker}-{i}", doc_hash(f"doc {worker} {i}"), "house-v1", "relevance/v1"), Grade(
            (worker + i) % 4, f"worker {worker} item {i}"
        )

    def shared(i):
        return (f"shared-{i}", doc_hash(f"shared doc {i}"), "house-v1", "relevance/v1"), Grade(i % 4, f"shared {i}")
    """
)

_WORKER = (
    textwrap.dedent(
        """
        import json, random, sys, time, warnings
        from pathlib import Path
        from rankbridge.judge import Grade, JudgeCacheMigrated, JudgmentCache, doc_hash

        path, sync, worker, workers, own_n, shared_n = sys.argv[1], Path(sys.argv[2]), *map(int, sys.argv[3:])
        """
    )
    + _KEYS
    + textwrap.dedent(
        """
        def failed(*info):  # tell the others at once, so that they stop waiting for this one
            (sync / f"failed-{worker}").touch()
            sys.__excepthook__(*info)

        sys.excepthook = failed

        def wait_for(ready, what):
            deadline = time.monotonic() + 30
            while not ready():
                if time.monotonic() > deadline or any(sync.glob("failed-*")):
                    sys.exit(f"worker {worker}: gave up waiting for {what}")
                time.sleep(0.001)

        (sync / f"ready-{worker}").touch()
        wait_for((sync / "go").exists, "the start")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cache = JudgmentCache(path)  # every worker opens the same file at the same moment
        warned = sum(issubclass(w.category, JudgeCacheMigrated) for w in caught)
        rng = random.Random(worker)
        wrong, seen = [], 0
        for i in range(max(own_n, shared_n)):
            if i < own_n:
                cache.put(*own(worker, i)[0], own(worker, i)[1], raw=f"raw {worker} {i}")
            if i < shared_n:
                cache.put(*shared(i)[0], shared(i)[1])
            key, grade = own(rng.randrange(workers), rng.randrange(own_n))  # another worker's, written or not yet
            got = cache.get(*key)
            if got is not None:
                seen += 1
                if got != grade:
                    wrong.append([list(key), repr(got), repr(grade)])
        (sync / f"written-{worker}").touch()
        wait_for(lambda: len(list(sync.glob("written-*"))) == workers, "the other writers")
        for v in range(workers):
            for i in range(own_n):
                key, grade = own(v, i)
                got = cache.get(*key)
                if got != grade:
                    wrong.append([list(key), repr(got), repr(grade)])
        for i in range(shared_n):
            key, grade = shared(i)
            if cache.get(*key) != grade:
                wrong.append([list(key), repr(cache.get(*key)), repr(grade)])
        rows = len(cache)
        cache.close()
        print(json.dumps({"worker": worker, "migrated": cache.migrated, "warned": warned, "seen": seen,
                          "wrong": wrong, "rows": rows}))
        """
    )
)

namespace: dict[str, Any] = {"Grade": Grade, "doc_hash": doc_hash}
exec(_KEYS, namespace)  # the same key functions the children run
own, shared = namespace["own"], namespace["shared"]


def _finish(children: Sequence[subprocess.Popen[str]], deadline: float) -> list[tuple[str, str]]:
    """Wait for every child until ``deadline`` (then kill it); assert each exited 0; their stdout and stderr."""
    try:
        outputs = [c.communicate(timeout=max(1.0, deadline - time.monotonic())) for c in children]
    finally:
        for c in children:  # a hang or a failed assertion: no child outlives the test
            if c.poll() is None:
                c.kill()
                c.communicate()
    failures = [
        f"worker {w} exited {c.returncode}:\n{err}"
        for w, (c, (_, err)) in enumerate(zip(children, outputs, strict=True))
        if c.returncode != 0
    ]
    assert not failures, "\n".join(failures)
    return outputs


def _race(path: Path, sync: Path, workers: int = WORKERS) -> list[dict[str, Any]]:
    """Start ``workers`` children on ``path``, release them at once, and return what each one printed."""
    sync.mkdir()
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(path), str(sync), str(w), str(workers), str(OWN), str(SHARED)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(workers)
    ]
    deadline = time.monotonic() + DEADLINE
    try:
        while len(list(sync.glob("ready-*"))) < workers:  # every child imported rankbridge: a fair start
            if time.monotonic() > deadline or any(c.poll() is not None for c in children):
                break
            time.sleep(0.005)
    finally:
        (sync / "go").touch()
    outputs = _finish(children, deadline)
    return [json.loads(out) for out, _ in outputs]


def _rows(path: Path, table: str = "judgments") -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT query, doc_hash, model, prompt, grade, reason FROM {table}").fetchall()
    finally:
        conn.close()


def _check_all_written(path: Path, results: Sequence[dict[str, Any]], extra_rows: int = 0) -> None:
    """Every grade any worker wrote, read back by every worker and in the file: none lost, none doubled."""
    assert [r["wrong"] for r in results] == [[]] * len(results)
    expected = {own(w, i) for w in range(len(results)) for i in range(OWN)} | {shared(i) for i in range(SHARED)}
    rows = _rows(path)
    written = [(r[:4], Grade(r[4], r[5])) for r in rows if r[2] == "house-v1" and r[0].startswith(("q", "shared-"))]
    assert len(written) == len(expected)  # no key twice
    assert set(written) == expected  # no grade lost, none changed
    assert all(r["rows"] == len(expected) + extra_rows for r in results)
    assert sum(r["seen"] for r in results) > 0  # the workers did read each other's grades while writing


def test_processes_create_one_new_cache_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "judge.sqlite"  # neither the folder nor the file exists yet
    results = _race(path, tmp_path / "sync")
    _check_all_written(path, results)
    assert all(r["migrated"] == 0 and r["warned"] == 0 for r in results)
    with JudgmentCache(path) as cache:
        assert len(cache) == WORKERS * OWN + SHARED


def _schema_1_file(path: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """A cache as rankbridge wrote it before schema 2: grades under derived model ids and under given ones."""
    derived = [
        (f"old {i}", doc_hash(f"old doc {i}"), model, "relevance/v1", i % 4, f"old reason {i}")
        for i, model in enumerate(["callable:app.<lambda>", "langchain:gpt-4o", "llamaindex:local"] * 20)
    ]
    given = [(f"old {i}", doc_hash(f"old doc {i}"), "house-v0", "relevance/v1", 3 - i % 4, "kept") for i in range(25)]
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(_SCHEMA)
        conn.executemany("INSERT INTO judgments VALUES (?, ?, ?, ?, ?, ?, '', 0)", derived + given)
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    return derived, given


def test_processes_open_an_old_cache_while_another_upgrades_it(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    derived, given = _schema_1_file(path)
    results = _race(path, tmp_path / "sync")
    # one process upgraded the file; the others opened it after (waiting for the upgrade), moving nothing
    assert sorted(r["migrated"] for r in results) == [0] * (WORKERS - 1) + [len(derived)]
    assert sorted(r["warned"] for r in results) == [0] * (WORKERS - 1) + [1]
    _check_all_written(path, results, extra_rows=len(given))
    assert sorted(_rows(path, "legacy_judgments")) == sorted(derived)  # set aside once, not twice
    assert sorted(r for r in _rows(path) if r[2] == "house-v0") == sorted(given)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


# A child that opens a fresh judge cache and a fresh run history per round, each round started together
# with the others (a barrier of files, so no round is won by a head start). Both files open the same way
# (rankbridge.store._SQLiteFile._prepare).
_OPENER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from rankbridge import evaluate
    from rankbridge.judge import Grade, JudgmentCache, doc_hash
    from rankbridge.store import RunStore

    folder, worker, workers, rounds = Path(sys.argv[1]), *map(int, sys.argv[2:])
    ev = evaluate({"q": {"d": 1}}, {"q": ["x", "d"]}, ["mrr"])

    def failed(*info):  # tell the others at once, so that they stop waiting for this one
        (folder / f"failed-{worker}").touch()
        sys.__excepthook__(*info)

    sys.excepthook = failed
    for r in range(rounds):
        (folder / f"ready-{r}-{worker}").touch()
        deadline = time.monotonic() + 30
        while len(list(folder.glob(f"ready-{r}-*"))) < workers:  # spin: leave the barrier side by side
            if time.monotonic() > deadline or any(folder.glob("failed-*")):
                sys.exit(f"worker {worker}: gave up waiting for round {r}")
        with JudgmentCache(folder / f"cache-{r}.sqlite") as cache:
            cache.put(f"q{worker}", doc_hash("d"), "m", "p", Grade(worker % 4, f"round {r}"))
        with RunStore(folder / f"history-{r}.sqlite") as store:
            store.save(ev, name=f"worker {worker}")
    """
)


def test_processes_race_to_create_new_caches_round_after_round(tmp_path: Path) -> None:
    rounds = 5
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _OPENER, str(tmp_path), str(w), str(WORKERS), str(rounds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    _finish(children, time.monotonic() + DEADLINE)
    for r in range(rounds):
        rows = _rows(tmp_path / f"cache-{r}.sqlite")
        assert sorted(rows) == [(f"q{w}", doc_hash("d"), "m", "p", w % 4, f"round {r}") for w in range(WORKERS)]
        with RunStore(tmp_path / f"history-{r}.sqlite", create=False) as store:
            assert sorted(record.name for record in store.list()) == [f"worker {w}" for w in range(WORKERS)]


# A child that opens the cache and stops inside the opening at the statement that starts with argv[2],
# with its write lock held, until the file argv[3] appears (or it is killed).
_PAUSING = textwrap.dedent(
    """
    import sqlite3, sys, time
    from pathlib import Path

    path, statement, resume = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    real_connect = sqlite3.connect

    def connect(*args, **kwargs):
        conn = real_connect(*args, **kwargs)

        def trace(sql):
            if sql.startswith(statement):
                (resume.parent / "paused").write_text("in a transaction" if conn.in_transaction else "autocommit")
                deadline = time.monotonic() + 30
                while not resume.exists() and time.monotonic() < deadline:
                    time.sleep(0.005)

        conn.set_trace_callback(trace)
        return conn

    sqlite3.connect = connect
    from rankbridge.judge import JudgmentCache

    with JudgmentCache(path) as cache:
        print(len(cache), cache.migrated)
    """
)


def _pause(path: Path, sync: Path, statement: str) -> subprocess.Popen[str]:
    """A child opening ``path``, stopped at ``statement`` (``sync/"paused"`` says so; ``sync/"resume"`` goes on)."""
    sync.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", _PAUSING, str(path), statement, str(sync / "resume")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + DEADLINE
    while not (sync / "paused").exists():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            _, err = child.communicate()
            pytest.fail(f"the child did not reach {statement!r}: {err}")
        time.sleep(0.005)
    return child


def test_a_process_opening_a_new_cache_while_another_creates_it_waits_and_finds_it_made(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    sync = tmp_path / "sync"
    child = _pause(path, sync, f"PRAGMA user_version = {_SCHEMA_VERSION}")  # the table made, not yet numbered
    try:
        assert (sync / "paused").read_text() == "in a transaction"  # creating the file is one transaction
        opened: list[Any] = []
        opener = threading.Thread(target=lambda: opened.append(JudgmentCache(path)))
        opener.start()
        opener.join(0.5)
        assert opener.is_alive()  # it waits for the creator's lock instead of reading a half-made file
        (sync / "resume").touch()
        opener.join(DEADLINE)
        assert not opener.is_alive() and len(opened) == 1
        with opened[0] as cache:
            assert len(cache) == 0 and cache.migrated == 0
            cache.put("q", doc_hash("d"), "m", "p", Grade(1, "after"))
        assert _finish([child], time.monotonic() + DEADLINE)[0][0].split() == ["0", "0"]
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert _rows(path) == [("q", doc_hash("d"), "m", "p", 1, "after")]


def test_a_creator_killed_with_its_lock_held_leaves_no_half_made_file(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    child = _pause(path, tmp_path / "sync", f"PRAGMA user_version = {_SCHEMA_VERSION}")
    try:
        with pytest.raises(JudgeCacheError) as info:  # the lock outlasts the opener's patience
            JudgmentCache(path, timeout=0.3)
        message = str(info.value)
        assert message.startswith(f"cannot write the judge cache at {path}: locked by another process")
        assert "more than 0.3 s" in message and "timeout=SECONDS" in message
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=DEADLINE)
    assert child.returncode == -signal.SIGKILL
    conn = sqlite3.connect(path)
    try:  # what the killed process made is gone with it: an empty database, no table, no version
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []
        assert conn.execute("PRAGMA user_version").fetchone() == (0,)
    finally:
        conn.close()
    with JudgmentCache(path, timeout=0.3) as cache:  # the lock died with the process; the file is set up anew
        cache.put("q", doc_hash("d"), "m", "p", Grade(2, "ok"))
        assert len(cache) == 1


def test_an_upgrade_killed_halfway_leaves_the_old_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    derived, given = _schema_1_file(path)
    child = _pause(path, tmp_path / "sync", f"PRAGMA user_version = {_SCHEMA_VERSION}")  # grades moved, not numbered
    try:
        with pytest.raises(JudgeCacheError, match="locked by another process"):
            JudgmentCache(path, timeout=0.3)
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=DEADLINE)
    assert child.returncode == -signal.SIGKILL
    assert sorted(_rows(path)) == sorted(derived + given)  # every old grade where it was
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (1,)
        assert [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["judgments"]
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    with pytest.warns(JudgeCacheMigrated, match=f"{len(derived)} grades"), JudgmentCache(path) as cache:
        assert cache.migrated == len(derived) and len(cache) == len(given)
    assert sorted(_rows(path, "legacy_judgments")) == sorted(derived)


def test_a_writer_waits_for_the_lock_then_fails_clearly_and_readers_never_wait(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with JudgmentCache(path, timeout=0.3) as cache:
        cache.put("q", doc_hash("d"), "m", "p", Grade(1, "first"))
        other = sqlite3.connect(path, isolation_level=None)  # another writer, holding the write lock
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("INSERT INTO judgments VALUES ('q2', 'h', 'm', 'p', 3, 'not yet', '', 0)")
            assert cache.get("q", doc_hash("d"), "m", "p") == Grade(1, "first")  # WAL: the reader goes on
            assert len(cache) == 1  # and sees only what is committed
            started = time.monotonic()
            with pytest.raises(JudgeCacheError) as info:
                cache.put("q", doc_hash("d"), "m", "p", Grade(2, "second"))
            assert time.monotonic() - started >= 0.25  # it waited for the lock before giving up
            assert str(info.value).startswith(f"cannot write the judge cache at {path}: locked by another process")
            other.execute("COMMIT")
        finally:
            other.close()
        cache.put("q", doc_hash("d"), "m", "p", Grade(2, "second"))  # the lock is free again
        assert cache.get("q", doc_hash("d"), "m", "p") == Grade(2, "second") and len(cache) == 2


@pytest.mark.parametrize("timeout", [-1, "5", True, float("nan")])
def test_timeout_must_be_seconds(timeout: Any) -> None:
    with pytest.raises(InputError, match=f"timeout must be a number >= 0. Got {timeout!r}"):
        JudgmentCache(timeout=timeout)


@pytest.mark.parametrize("kind", [JudgmentCache, RunStore])
def test_opening_a_new_file_waits_for_a_lock_held_before_wal_mode(kind: Any, tmp_path: Path) -> None:
    # Another opener of the new file holds the write lock before any switched it to WAL mode: SQLite refuses
    # the switch at once, whatever the busy timeout; opening must still wait (up to timeout), not fail.
    path = tmp_path / "new.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        release = threading.Timer(0.3, other.execute, ("ROLLBACK",))
        started = time.monotonic()
        release.start()
        try:
            with kind(path, timeout=DEADLINE) as opened:
                assert time.monotonic() - started >= 0.25  # it waited for the lock
                assert opened._connection().execute("PRAGMA journal_mode").fetchone() == ("wal",)
        finally:
            release.cancel()
            release.join(DEADLINE)
    finally:
        other.close()


def test_a_cache_file_that_cannot_be_written_is_refused_on_opening(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A ready file opens without writing, so SQLite would take a read-only file and fail only on the first
    # grade stored; the cache refuses it at once, as it did when every opening wrote. (os.access stands in
    # for chmod, which does not stop root.)
    path = tmp_path / "c.sqlite"
    with JudgmentCache(path) as cache:
        cache.put("q", doc_hash("d"), "m", "p", Grade(1, "kept"))
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: mode != os.W_OK and real_access(p, mode))
    with pytest.raises(JudgeCacheError) as info:
        JudgmentCache(path)
    assert str(info.value) == (
        f"cannot write the judge cache at {path}: read-only file system (or no write permission) (the file is "
        "not writable); give another cache path, or no cache (cache=None / --no-cache)"
    )
