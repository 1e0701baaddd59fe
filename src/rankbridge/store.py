"""Run history: every evaluated run, kept in one embedded SQLite file, to list, reload and trend.

Why SQLite (the standard library's :mod:`sqlite3`): the history must live beside a project or a CI job
as one file, with no server to run, and survive crashes. SQLite gives atomic, durable transactions
(a save is all or nothing, even when the process is killed mid-write), lets readers and a writer work at
once in WAL mode, and is readable by every language and by the ``sqlite3`` shell for ad-hoc queries.

What is kept per saved evaluation (a *record*): the run name, its config (JSON), free-form tags, the
qrels name and the qrels' fingerprint (:func:`~rankbridge.fingerprint.qrels_fingerprint`, when ``save``
was given the qrels), a fingerprint of the evaluated query set, :data:`METRIC_DEFINITIONS_VERSION`, the
rankbridge version, a UTC timestamp, the missing policy, the query counts and the
missing/failed/unjudged/no-relevant query lists, the failure messages and latency summary of the run,
and for every metric its mean and its per-query values.

A trend (:meth:`RunStore.trend`) never joins means that are not comparable: it splits the records into
series of one qrels fingerprint and one metric definitions version, leaves out records of unknown qrels
when records of known qrels exist, says how many queries differ along a series (or splits there, with
``queries="same"``), and gives the reasons in :attr:`Trend.notes`.

Files written before fingerprints were kept are migrated in place when opened: the columns are added in
one transaction (the schema version stays 1, so older rankbridge versions still read and write the file),
the query-set fingerprints are computed from the stored query ids, and the qrels fingerprints stay NULL
("unknown qrels") until :meth:`RunStore.attach_qrels` sets them.

Another process writing to the file makes a writer wait up to ``timeout`` seconds (default
:data:`DEFAULT_TIMEOUT`), then raises :class:`StoreLockedError`, which names the file.

Per-query values are stored as one blob per (record, metric): the little-endian float64 bytes of the
array, aligned with the record's query ids (kept once per record). A normalized row per
(record, metric, query) was rejected because SQLite stores a NaN REAL as NULL (a blob keeps every bit,
NaN payloads and -0.0 included, so :meth:`RunStore.load` is bit-exact), and because it costs a row,
a repeated query id and an index entry per value: 1,000 queries x 10 metrics would be 10,000 rows per
save instead of 10. Means are stored in their own column, so listing and trending never read the blobs.

Examples
--------
>>> import os, tempfile
>>> import rankbridge as rb
>>> ev = rb.evaluate({"q1": {"d1": 1}, "q2": {"d2": 1}}, {"q1": ["d1"], "q2": ["d3", "d2"]}, ["mrr"])
>>> with tempfile.TemporaryDirectory() as tmp, RunStore(os.path.join(tmp, "history.sqlite")) as store:
...     first = store.save(ev, name="bm25", config={"k": 10}, tags=["nightly"])
...     second = store.save(ev, name="bm25")
...     [r.id for r in store.list()]
...     store.latest("bm25").mean
...     store.load(first).per_query
...     [(rid, mean) for _, rid, mean in store.trend("MRR")]
[2, 1]
{'mrr': 0.75}
{'mrr': {'q1': 1.0, 'q2': 0.5}}
[(1, 0.75), (2, 0.75)]

With the qrels given to ``save``, a trend joins only records scored on the same judgments:

>>> import warnings
>>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
>>> with RunStore(":memory:") as store, warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     _ = store.save(ev, name="bm25", qrels=qrels)
...     _ = store.save(ev, name="bm25", qrels={**qrels, "q2": {"d2": 1, "d4": 1}})  # new judgments
...     trend = store.trend("mrr")
>>> [p.record_id for p in trend], len(trend.series), caught[0].category.__name__
([2], 2, 'TrendSplitWarning')
>>> print(trend.notes[0].split(" (")[0])
split into 2 series: the records were scored on 2 different qrels
"""

from __future__ import annotations

import builtins
import functools
import itertools
import json
import math
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, TypeVar

import numpy as np

from rankbridge._numbers import json_float
from rankbridge._version import __version__
from rankbridge.errors import (
    InputError,
    MetricError,
    MixedDefinitionsWarning,
    RankbridgeError,
    StoreError,
    StoreLockedError,
    TrendSplitWarning,
)
from rankbridge.evaluate import Evaluation
from rankbridge.fingerprint import qrels_fingerprint, query_set_fingerprint, short_fingerprint
from rankbridge.metrics.measures import METRIC_DEFINITIONS_VERSION as _METRIC_DEFINITIONS_VERSION
from rankbridge.metrics.measures import parse_measure
from rankbridge.types import GoldenSet, Qrels, Run

__all__ = [
    "DEFAULT_STORE_PATH",
    "DEFAULT_TIMEOUT",
    "METRIC_DEFINITIONS_VERSION",
    "SCHEMA_VERSION",
    "HistorySeries",
    "MixedDefinitionsWarning",
    "RunRecord",
    "RunStore",
    "StoreError",
    "StoreLockedError",
    "Trend",
    "TrendPoint",
    "TrendSplitWarning",
    "qrels_fingerprint",
]

#: Re-exported from :mod:`rankbridge.metrics.measures`, where the definitions live; read at save time.
METRIC_DEFINITIONS_VERSION = _METRIC_DEFINITIONS_VERSION

#: Version of the file layout written by this module; a file with a higher version is refused. Additive
#: changes (new nullable columns, listed in ``_ADDED_COLUMNS``) keep the version, so that an older
#: rankbridge still reads and writes the file (its records get NULL there), and are applied in place
#: when a file without them is opened.
SCHEMA_VERSION = 1

#: Seconds a writer waits for another process's write lock before :class:`StoreLockedError`.
DEFAULT_TIMEOUT = 5.0

#: Exit code of ``rankbridge history`` when the file is locked by another process (EX_TEMPFAIL: try again).
EXIT_LOCKED = 75

#: Where the history lives when no path is given (the CLI's ``--store`` default).
DEFAULT_STORE_PATH = "rankbridge-history.sqlite"

_SCHEMA_TABLE = "rankbridge_schema"
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f+00:00"  # fixed width, UTC: sorts as text in time order

_SCHEMA = f"""
CREATE TABLE {_SCHEMA_TABLE} (
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
    errors TEXT NOT NULL,                  -- JSON object: query id -> failure message
    qrels_fingerprint TEXT,                -- added later (_ADDED_COLUMNS): qrels_fingerprint(qrels); NULL: unknown
    query_set_fingerprint TEXT             -- added later: query_set_fingerprint(query_ids); NULL: compute it
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

# Columns added to ``records`` after schema version 1 was first written, in order (see _migrate).
_ADDED_COLUMNS = (("qrels_fingerprint", "TEXT"), ("query_set_fingerprint", "TEXT"))

# Columns list() and latest() read: everything but the (possibly large) query lists. Each is the
# RunRecord field of its name, but created_at (the timestamp) and the JSON texts config and tags.
_RECORD_COLUMNS = (
    "id",
    "name",
    "created_at",
    "config",
    "tags",
    "qrels_name",
    "metric_definitions_version",
    "rankbridge_version",
    "missing_policy",
    "num_queries",
    "num_missing",
    "num_failed",
    "num_unjudged",
    "num_no_relevant",
    "duplicates",
    "latency_mean",
    "latency_p95",
    "qrels_fingerprint",
    "query_set_fingerprint",
)


@dataclass(frozen=True)
class RunRecord:
    """What the store knows about one saved evaluation, without its per-query values.

    Load the values with :meth:`RunStore.load`.

    Attributes
    ----------
    id:
        The record id (``save`` returned it); never reused after a delete.
    name:
        The run name (a strategy, a release).
    timestamp:
        When it was saved, timezone-aware UTC.
    config:
        The settings that produced the run (decoded JSON).
    tags:
        Free-form labels given to ``save``.
    qrels_name:
        The name of the judgments evaluated against, when given.
    metric_definitions_version:
        :data:`METRIC_DEFINITIONS_VERSION` at save time.
    rankbridge_version:
        The rankbridge version that saved it.
    missing_policy:
        ``"zero"`` or ``"skip"`` (see :func:`rankbridge.evaluate`).
    num_queries, num_missing, num_failed, num_unjudged, num_no_relevant:
        Query counts of the evaluation.
    duplicates:
        Duplicate hits dropped in the evaluated queries.
    latency_mean, latency_p95:
        Retrieval seconds per query (mean, 95th percentile) when the run carried latencies.
    metrics:
        Canonical metric names, in the order asked for.
    mean:
        Metric name -> mean (NaN when no query was evaluated).
    qrels_fingerprint:
        :func:`~rankbridge.fingerprint.qrels_fingerprint` of the judgments, None when unknown (saved
        without ``qrels=``, or by an older rankbridge).
    query_set_fingerprint:
        :func:`~rankbridge.fingerprint.query_set_fingerprint` of the evaluated query ids.
    """

    id: int
    name: str
    timestamp: datetime
    config: Mapping[str, Any]
    tags: tuple[str, ...]
    qrels_name: str | None
    metric_definitions_version: str
    rankbridge_version: str
    missing_policy: str
    num_queries: int
    num_missing: int
    num_failed: int
    num_unjudged: int
    num_no_relevant: int
    duplicates: int
    latency_mean: float | None
    latency_p95: float | None
    metrics: tuple[str, ...] = ()
    mean: Mapping[str, float] = field(default_factory=dict)
    qrels_fingerprint: str | None = None
    query_set_fingerprint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (timestamp as ISO 8601 text, NaN as None)."""
        out = asdict(self)
        out["timestamp"] = self.timestamp.isoformat()
        out["tags"] = builtins.list(self.tags)
        out["metrics"] = builtins.list(self.metrics)
        out["mean"] = {k: json_float(v) for k, v in self.mean.items()}
        out["config"] = dict(self.config)
        return out


class TrendPoint(NamedTuple):
    """One point of a trend (:meth:`RunStore.trend`): when, which record, and the metric's mean.

    The one trend point of rankbridge: a report draws these (as :class:`~rankbridge.reports.SeriesPoint`
    rows, whose time is ISO 8601 text).
    """

    timestamp: datetime
    record_id: int
    mean: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the time as ISO 8601 text, NaN as None)."""
        return {"timestamp": self.timestamp.isoformat(), "record_id": self.record_id, "mean": json_float(self.mean)}


@dataclass(frozen=True)
class HistorySeries:
    """Records whose means may be joined in one line: one qrels fingerprint, one metric definitions version.

    The tuples ``names``, ``num_queries``, ``queries_added`` and ``queries_removed`` are aligned with
    ``points``; ``queries_added[i]`` / ``queries_removed[i]`` count the query ids of point ``i`` that the
    previous point lacks / has that point ``i`` lacks (0 for the first point).

    Attributes
    ----------
    metric:
        The canonical metric name.
    qrels_fingerprint:
        The judgments' fingerprint, None for records of unknown qrels.
    qrels_names:
        The qrels names the records were saved with (a name alone never decides a join).
    metric_definitions_version:
        :data:`METRIC_DEFINITIONS_VERSION` the records were saved under.
    points:
        ``(timestamp, record_id, mean)``, oldest first.
    """

    metric: str
    qrels_fingerprint: str | None
    qrels_names: tuple[str, ...]
    metric_definitions_version: str
    points: tuple[TrendPoint, ...]
    names: tuple[str, ...]
    num_queries: tuple[int, ...]
    queries_added: tuple[int, ...]
    queries_removed: tuple[int, ...]

    @property
    def label(self) -> str:
        """``"qrels 3f2a9c, definitions v1"`` (``"qrels unknown, ..."`` for unknown qrels)."""
        qrels = "unknown" if self.qrels_fingerprint is None else short_fingerprint(self.qrels_fingerprint)
        names = f" ({', '.join(self.qrels_names)})" if self.qrels_names else ""
        return f"qrels {qrels}{names}, definitions v{self.metric_definitions_version}"

    @property
    def query_set_changes(self) -> int:
        """How many points have a query set different from the previous point's."""
        return sum(1 for a, r in zip(self.queries_added, self.queries_removed, strict=True) if a or r)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN as None)."""
        return {
            "metric": self.metric,
            "qrels_fingerprint": self.qrels_fingerprint,
            "qrels_names": builtins.list(self.qrels_names),
            "metric_definitions_version": self.metric_definitions_version,
            "points": [
                {
                    **p.to_dict(),
                    "name": name,
                    "num_queries": n,
                    "queries_added": added,
                    "queries_removed": removed,
                }
                for p, name, n, added, removed in zip(
                    self.points, self.names, self.num_queries, self.queries_added, self.queries_removed, strict=True
                )
            ],
        }


class Trend(builtins.list[TrendPoint]):
    """What :meth:`RunStore.trend` returns: the points of one comparable series, and why others are not in it.

    As a list it holds the *current* series' points (the series of the newest record of known qrels;
    of the newest record when no qrels are known), oldest first, so code that reads a trend as a list of
    ``(timestamp, record_id, mean)`` keeps working and never joins incomparable means.

    Attributes
    ----------
    metric:
        The canonical metric name.
    name:
        The run name the trend was restricted to, or None.
    series:
        Every comparable series found, ordered by their newest point (the current one is ``series[current]``).
    current:
        Index of the listed series in ``series`` (None when no record has the metric).
    left_out:
        Ids of records of unknown qrels left out because records of known qrels exist.
    notes:
        One sentence per reason the trend was split, left records out, or may still mislead (unknown qrels,
        a changing query set). Empty when every record was joined and nothing is in doubt.
    """

    __slots__ = ("current", "left_out", "metric", "name", "notes", "series")

    def __init__(
        self,
        points: Iterable[TrendPoint] = (),
        *,
        metric: str,
        name: str | None = None,
        series: Sequence[HistorySeries] = (),
        current: int | None = None,
        left_out: Sequence[int] = (),
        notes: Sequence[str] = (),
    ) -> None:
        super().__init__(points)
        self.metric = metric
        self.name = name
        self.series = tuple(series)
        self.current = current
        self.left_out = tuple(left_out)
        self.notes = tuple(notes)

    @property
    def complete(self) -> bool:
        """True when the list holds every record that has the metric (no split, nothing left out)."""
        return len(self.series) <= 1 and not self.left_out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: metric, name, current, series, left_out, notes."""
        return {
            "metric": self.metric,
            "name": self.name,
            "current": self.current,
            "series": [s.to_dict() for s in self.series],
            "left_out": builtins.list(self.left_out),
            "notes": builtins.list(self.notes),
        }

    def __repr__(self) -> str:
        return (
            f"Trend({self.metric!r}, points={len(self)}, series={len(self.series)}, "
            f"left_out={len(self.left_out)}, notes={len(self.notes)})"
        )


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
    text = str(exc)
    return "database is locked" in text or "database table is locked" in text or "busy" in text


def _is_readonly(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF == 8  # SQLITE_READONLY
    return "readonly" in str(exc)


def _json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} must be JSON-serialisable (str, numbers, lists, dicts). Got: {exc}") from None


def _format_time(ts: datetime) -> str:
    if ts.tzinfo is None or ts.utcoffset() is None:
        raise InputError(f"timestamp must be timezone-aware (e.g. datetime.now(timezone.utc)). Got {ts!r}.")
    return ts.astimezone(timezone.utc).strftime(_TIME_FORMAT)


def _parse_time(text: str) -> datetime:
    return datetime.strptime(text, _TIME_FORMAT).replace(tzinfo=timezone.utc)


def _to_blob(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values, dtype="<f8").tobytes()


def _from_blob(blob: bytes) -> np.ndarray:
    # frombuffer is read-only and little-endian; astype copies into a writable native float64 array.
    return np.frombuffer(blob, dtype="<f8").astype(np.float64, copy=True)


_Self = TypeVar("_Self", bound="_Closing")


class _Closing:
    """``with obj:`` closes ``obj`` at the end (the run history; the judge and its cache)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@contextmanager
def _immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction that takes the write lock at once (``BEGIN IMMEDIATE``, waiting up to the
    connection's busy timeout); rolled back when anything inside raises, so a write is all or nothing."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class _SQLiteFile(_Closing):
    """An SQLite connection behind a lock, set by the subclass (the run history; the judge cache).

    Both files are opened by :meth:`_prepare` and differ only in their schema (``_check_schema``).
    """

    path: str
    timeout: float  # seconds to wait for another connection's write lock (also the connection's busy timeout)
    _lock: threading.Lock | threading.RLock
    _conn: sqlite3.Connection | None

    def _check_schema(self, conn: sqlite3.Connection, *, may_create: bool) -> bool:
        """True when the file holds the current schema; creates it in an empty file, or migrates an older one,
        when allowed (``may_create``: the caller holds the write lock)."""
        raise NotImplementedError

    def _wal(self, conn: sqlite3.Connection) -> None:
        """Switch the file to WAL mode (persistent: once per file), waiting up to ``timeout`` for other openers.

        SQLite makes the switch under a read lock that it then upgrades to a write lock, and such an upgrade
        never waits (the busy timeout does not apply: two upgrading readers would wait for each other), so
        when several processes open a new file at once, those that meet another's switch get "database is
        locked" at once. They try again here until the file is in WAL mode (another process may have
        switched it) or ``timeout`` has passed.
        """
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            try:
                conn.execute("PRAGMA journal_mode = WAL").fetchone()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(2 * pause, 0.05)
            else:
                return  # switched, or a file system without shared memory that keeps its mode

    def _failure(self, exc: sqlite3.DatabaseError, doing: str) -> Exception | None:
        """The library's error for an SQLite error met while ``doing`` something (None: raise it as it is)."""
        raise NotImplementedError

    def _closed(self) -> Exception:
        """The error for a call after :meth:`close`."""
        raise NotImplementedError

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise self._closed()
        return self._conn

    @contextmanager
    def _sqlite(self, doing: str) -> Iterator[sqlite3.Connection]:
        """The open connection, under the lock; SQLite errors become the library's (``_failure``), naming the file."""
        with self._lock:
            db = self._connection()
            try:
                yield db
            except sqlite3.DatabaseError as exc:
                failure = self._failure(exc, doing)
                if failure is None:
                    raise
                raise failure from None

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Put the file in WAL mode and make sure it holds the current schema; SQLite errors pass through.

        The schema is checked under a read snapshot first, so opening a ready file never waits for another
        process's write. A new or older file is created or migrated in one ``BEGIN IMMEDIATE`` transaction and
        checked again once the lock is held: of several processes opening it at once, one does the work and
        the others find it done; a failure or a kill rolls all of it back.
        """
        # The first read of the header: a file that is not SQLite fails here.
        conn.execute("PRAGMA schema_version").fetchone()
        if self.path != ":memory:":
            self._wal(conn)
        conn.execute("BEGIN")
        try:
            ready = self._check_schema(conn, may_create=False)
        finally:
            conn.execute("COMMIT")
        if not ready:
            with _immediate(conn):
                self._check_schema(conn, may_create=True)

    def close(self) -> None:
        """Close the file (idempotent). The last connection to close checkpoints a WAL into the file."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class RunStore(_SQLiteFile):
    """A history of evaluations in one SQLite file (created on first use).

    Each :meth:`save` is one transaction: a crash or a kill mid-save leaves the file as it was. The file
    runs in WAL mode, so readers (other processes, threads, ``RunStore`` objects) never block a writer or
    each other; two writers take turns, waiting up to ``timeout`` seconds for the lock, then
    :class:`StoreLockedError`. One ``RunStore`` may be shared between threads (its calls are serialised).
    Close it with :meth:`close` or use it as a context manager. A file written by an older schema is
    migrated in place on opening (see the module docstring).

    Parameters
    ----------
    path:
        The SQLite file (``":memory:"`` for a throw-away store).
    create:
        Create the file when it does not exist (default). With ``False`` a missing file is an
        :class:`~rankbridge.errors.InputError`, for commands that only read.
    timeout:
        Seconds to wait for another process's write lock before giving up (default
        :data:`DEFAULT_TIMEOUT`); a save takes milliseconds, so only a stuck or very long writer waits it out.

    Raises
    ------
    InputError
        When ``path`` is not a SQLite file, is another application's database, or was written by a newer
        rankbridge (a newer schema version).
    StoreLockedError
        When another process holds the lock longer than ``timeout`` (on opening only when the file must be
        created or migrated; afterwards on any write).
    StoreError
        When SQLite cannot write the file (read-only, disk full).

    Examples
    --------
    >>> import os, tempfile
    >>> import rankbridge as rb
    >>> ev = rb.evaluate({"q1": {"d1": 1}}, {"q1": ["d2", "d1"]}, ["ndcg@10", "mrr"])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with RunStore(os.path.join(tmp, "h.sqlite")) as store:
    ...         rid = store.save(ev, name="dense", qrels_name="golden-v3")
    ...     with RunStore(os.path.join(tmp, "h.sqlite"), create=False) as store:
    ...         record = store.latest("dense")
    ...         loaded = store.load(rid)
    >>> record.name, record.qrels_name, record.num_queries
    ('dense', 'golden-v3', 1)
    >>> loaded.mean == ev.mean
    True
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_STORE_PATH,
        *,
        create: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.path = os.fspath(path)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise InputError(f"timeout must be a number of seconds >= 0. Got {timeout!r} instead.")
        self.timeout = float(timeout)
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        memory = self.path == ":memory:"
        if not memory:
            target = Path(self.path)
            if target.is_dir():
                raise InputError(f"{self.path}: expected a history file, found a directory")
            if not target.exists():
                if not create:
                    raise InputError(f"{self.path}: no run history here (the file does not exist)")
                target.parent.mkdir(parents=True, exist_ok=True)
        try:
            # isolation_level=None: no implicit transactions; every write opens its own BEGIN IMMEDIATE.
            # check_same_thread=False: calls are serialised by self._lock instead.
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise InputError(f"{self.path}: cannot open the run history: {exc}") from None
        try:
            self._setup(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn

    # -- opening ---------------------------------------------------------------------------------
    def _setup(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            self._prepare(conn)
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise StoreLockedError(self.path, timeout=self.timeout, doing="open it") from None
            if _is_readonly(exc):
                raise StoreError(
                    f"{self.path}: this run history was written by an older rankbridge and needs its one-time "
                    f"upgrade in place (new columns for qrels fingerprints), but the file is read-only: {exc}",
                    path=self.path,
                ) from None
            raise InputError(f"{self.path}: cannot read the run history: {exc}") from None
        except sqlite3.DatabaseError as exc:
            code = getattr(exc, "sqlite_errorname", "")
            if code in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or "not a database" in str(exc):
                raise InputError(
                    f"{self.path}: not a rankbridge run history (not a SQLite database file, or a damaged one): {exc}"
                ) from None
            raise InputError(f"{self.path}: cannot read the run history: {exc}") from None

    def _check_schema(self, conn: sqlite3.Connection, *, may_create: bool) -> bool:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        tables.discard("sqlite_sequence")
        if _SCHEMA_TABLE not in tables:
            if tables:
                raise InputError(
                    f"{self.path}: a SQLite database but not a rankbridge run history "
                    f"(it has tables {', '.join(sorted(tables))} and no {_SCHEMA_TABLE} table)"
                )
            if not may_create:
                return False
            for statement in _SCHEMA.split(";\n"):  # not executescript(): it would COMMIT our transaction
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                f"INSERT INTO {_SCHEMA_TABLE} (version, written_by) VALUES (?, ?)", (SCHEMA_VERSION, __version__)
            )
            return True
        row = conn.execute(f"SELECT version, written_by FROM {_SCHEMA_TABLE}").fetchone()
        if row is None or not isinstance(row[0], int):
            raise InputError(f"{self.path}: damaged run history: no schema version in {_SCHEMA_TABLE}")
        version, written_by = row
        if version > SCHEMA_VERSION:
            raise InputError(
                f"{self.path}: written by a newer rankbridge ({written_by}, history schema version {version}); "
                f"this rankbridge reads schema versions up to {SCHEMA_VERSION}. "
                "Upgrade rankbridge: pip install -U rankbridge"
            )
        columns = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
        missing = [(c, kind) for c, kind in _ADDED_COLUMNS if c not in columns]
        if missing:
            if not may_create:
                return False  # migrate under the write lock (the caller takes it and calls again)
            self._migrate(conn, missing)
        return True

    @staticmethod
    def _migrate(conn: sqlite3.Connection, missing: Sequence[tuple[str, str]]) -> None:
        """Add the columns a file written by an older rankbridge lacks, inside the caller's transaction.

        Old records keep ``qrels_fingerprint`` NULL ("unknown qrels": the qrels' content was never stored);
        their ``query_set_fingerprint`` is computed from the stored query ids.
        """
        for column, kind in missing:
            conn.execute(f"ALTER TABLE records ADD COLUMN {column} {kind}")
        ids = [row[0] for row in conn.execute("SELECT id FROM records WHERE query_set_fingerprint IS NULL")]
        for rid in ids:  # one record at a time: query id lists may be long
            (query_ids,) = conn.execute("SELECT query_ids FROM records WHERE id = ?", (rid,)).fetchone()
            conn.execute(
                "UPDATE records SET query_set_fingerprint = ? WHERE id = ?",
                (query_set_fingerprint(json.loads(query_ids)), rid),
            )

    def _failure(self, exc: sqlite3.DatabaseError, doing: str) -> Exception:
        if isinstance(exc, sqlite3.OperationalError):
            if _is_busy(exc):
                return StoreLockedError(self.path, timeout=self.timeout, doing=doing)
            return StoreError(f"{self.path}: cannot {doing}: {exc}", path=self.path)
        return StoreError(f"{self.path}: cannot {doing} (a damaged run history?): {exc}", path=self.path)

    def _closed(self) -> Exception:
        return RankbridgeError(f"{self.path}: the run history is closed")

    @property
    def _db(self) -> sqlite3.Connection:
        return self._connection()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else "open"
        return f"RunStore({self.path!r}, {state})"

    # -- writing ---------------------------------------------------------------------------------
    def save(
        self,
        evaluation: Evaluation,
        *,
        run: Run | None = None,
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        tags: Iterable[str] | None = None,
        qrels: Qrels | GoldenSet | Mapping[Any, Any] | None = None,
        qrels_name: str | None = None,
        timestamp: datetime | None = None,
    ) -> int:
        """Save an evaluation (one transaction) and return its record id.

        Parameters
        ----------
        evaluation:
            What :func:`rankbridge.evaluate` returned. Its per-query values are stored as float64.
        run:
            The evaluated :class:`~rankbridge.Run`, for its name, config, failure messages and latency.
        name:
            The record's name; default ``run.name``, else ``evaluation.run_name``.
        config:
            Settings to keep with the record (JSON-serialisable); merged over ``run.config``.
        tags:
            Free-form labels (e.g. a git commit, ``"nightly"``).
        qrels:
            The judgments the evaluation was scored on (a :class:`~rankbridge.Qrels`, a
            :class:`~rankbridge.GoldenSet` or a dict). Their fingerprint is kept, so that a trend joins
            only records scored on the same judgments; without it the record's qrels are unknown and a
            trend leaves it out beside records of known qrels. Every evaluated query must be judged in them.
        qrels_name:
            Which judgments the run was evaluated against (display only; default ``qrels.name``).
        timestamp:
            When the evaluation happened (timezone-aware); default now. Give it to import older runs.

        Returns
        -------
        int
            The new record's id.

        Raises
        ------
        InputError
            When the config is not JSON-serialisable, a timestamp is naive, the evaluation's arrays
            do not match its query ids, or it evaluated queries that ``qrels`` does not have.
        StoreLockedError
            When another process held the write lock for longer than ``timeout``.

        Examples
        --------
        >>> import rankbridge as rb
        >>> qrels = rb.Qrels({"q1": {"d1": 1}}, name="golden-v1")
        >>> ev = rb.evaluate(qrels, {"q1": ["d1"]}, ["mrr"])
        >>> with RunStore(":memory:") as store:
        ...     record = store.get(store.save(ev, name="bm25", qrels=qrels))
        >>> record.qrels_name, record.qrels_fingerprint == rb.store.qrels_fingerprint(qrels)
        ('golden-v1', True)
        """
        # Everything is validated and encoded before the transaction opens, so it stays short.
        record_name = name if name is not None else (run.name if run is not None else evaluation.run_name)
        if not isinstance(record_name, str) or not record_name:
            raise InputError(f"name must be a non-empty str. Got {record_name!r} instead.")
        merged: dict[str, Any] = dict(run.config) if run is not None else {}
        merged.update(config or {})
        tag_list = [tags] if isinstance(tags, str) else builtins.list(tags or ())
        if not all(isinstance(t, str) for t in tag_list):
            raise InputError(f"tags must be strings. Got {tag_list!r} instead.")
        errors = dict(run.errors) if run is not None else {}
        latencies = np.fromiter(run.latency.values(), dtype=np.float64) if run is not None else np.empty(0)
        latency_mean = float(latencies.mean()) if len(latencies) else None
        latency_p95 = float(np.percentile(latencies, 95)) if len(latencies) else None

        fingerprint = getattr(evaluation, "qrels_fingerprint", None)  # if evaluations ever carry one
        if qrels is not None:
            judged = qrels.qrels if isinstance(qrels, GoldenSet) else qrels
            if not isinstance(judged, Qrels):
                judged = Qrels(judged)
            unknown = [q for q in evaluation.query_ids if q not in judged]
            if unknown:
                raise InputError(
                    f"qrels must be the judgments the evaluation was scored on; {len(unknown)} evaluated "
                    f"queries are not in them (e.g. {', '.join(map(repr, unknown[:3]))})"
                )
            fingerprint = qrels_fingerprint(judged)
            if qrels_name is None and judged.name != "qrels":  # "qrels" is Qrels' default name
                qrels_name = judged.name
        if fingerprint is not None and not isinstance(fingerprint, str):
            raise InputError(f"qrels fingerprint must be a str. Got {fingerprint!r} instead.")

        n = len(evaluation.query_ids)
        metric_rows = []
        for position, (metric, values) in enumerate(evaluation.values.items()):
            array = np.asarray(values, dtype=np.float64)
            if array.shape != (n,):
                raise InputError(
                    f"evaluation.values[{metric!r}] must have shape ({n},) to match query_ids. Got {array.shape}."
                )
            average = float(array.mean()) if n else math.nan
            metric_rows.append((position, str(metric), None if math.isnan(average) else average, n, array))

        record = (
            record_name,
            _format_time(timestamp if timestamp is not None else datetime.now(timezone.utc)),
            _json(merged, "config"),
            _json(tag_list, "tags"),
            qrels_name,
            METRIC_DEFINITIONS_VERSION,
            __version__,
            evaluation.missing_policy,
            n,
            len(evaluation.missing),
            len(evaluation.failed),
            len(evaluation.unjudged),
            len(evaluation.no_relevant),
            int(evaluation.duplicates),
            latency_mean,
            latency_p95,
            _json(builtins.list(evaluation.query_ids), "query ids"),
            _json(builtins.list(evaluation.missing), "missing"),
            _json(builtins.list(evaluation.failed), "failed"),
            _json(builtins.list(evaluation.unjudged), "unjudged"),
            _json(builtins.list(evaluation.no_relevant), "no_relevant"),
            _json(errors, "run.errors"),
            fingerprint,
            query_set_fingerprint(evaluation.query_ids),
        )
        # _immediate: take the write lock now, not on the first INSERT
        with self._sqlite("save a record") as db, _immediate(db):
            cursor = db.execute(
                "INSERT INTO records (name, created_at, config, tags, qrels_name, metric_definitions_version, "
                "rankbridge_version, missing_policy, num_queries, num_missing, num_failed, num_unjudged, "
                "num_no_relevant, duplicates, latency_mean, latency_p95, query_ids, missing, failed, unjudged, "
                "no_relevant, errors, qrels_fingerprint, query_set_fingerprint) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                record,
            )
            record_id = cursor.lastrowid
            assert record_id is not None  # an INSERT into a rowid table always sets it
            for position, metric, mean, count, array in metric_rows:
                db.execute(
                    "INSERT INTO metric_values (record_id, position, metric, mean, num_values, per_query) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (record_id, position, metric, mean, count, _to_blob(array)),
                )
        return int(record_id)

    def delete(self, record_id: int) -> None:
        """Delete one record and its values (one transaction).

        Raises
        ------
        InputError
            When there is no record ``record_id``.
        StoreLockedError
            When another process held the write lock for longer than ``timeout``.
        """
        with self._sqlite(f"delete record {record_id}") as db, _immediate(db):
            db.execute("DELETE FROM metric_values WHERE record_id = ?", (record_id,))
            deleted = db.execute("DELETE FROM records WHERE id = ?", (record_id,)).rowcount
            if deleted == 0:
                raise InputError(f"{self.path}: no record with id {record_id}")

    def attach_qrels(self, record_ids: int | Iterable[int], qrels: Qrels | GoldenSet | Mapping[Any, Any]) -> int:
        """Record which judgments saved records were scored on (for records of unknown qrels).

        The way to bring records saved without ``qrels=`` (or by an older rankbridge) into trends. One
        transaction for all ids. A record that already has these qrels is left as it is.

        Parameters
        ----------
        record_ids:
            One record id or several.
        qrels:
            The judgments they were scored on; every query a record evaluated must be judged in them.

        Returns
        -------
        int
            How many records were changed.

        Raises
        ------
        InputError
            When a record does not exist, already has other qrels, or evaluated queries the qrels lack.

        Examples
        --------
        >>> import rankbridge as rb
        >>> qrels = {"q1": {"d1": 1}}
        >>> with RunStore(":memory:") as store:
        ...     rid = store.save(rb.evaluate(qrels, {"q1": ["d1"]}, ["mrr"]), name="old")
        ...     store.attach_qrels(rid, qrels), store.get(rid).qrels_fingerprint == qrels_fingerprint(qrels)
        (1, True)
        """
        ids = [record_ids] if isinstance(record_ids, int) else builtins.list(record_ids)
        judged = qrels.qrels if isinstance(qrels, GoldenSet) else qrels
        if not isinstance(judged, Qrels):
            judged = Qrels(judged)
        fingerprint = qrels_fingerprint(judged)
        name = judged.name if judged.name != "qrels" else None
        changed = 0
        with self._sqlite("attach qrels") as db, _immediate(db):
            for rid in ids:
                row = db.execute("SELECT qrels_fingerprint, query_ids FROM records WHERE id = ?", (rid,)).fetchone()
                if row is None:
                    raise InputError(f"{self.path}: no record with id {rid}")
                if row[0] == fingerprint:
                    continue
                if row[0] is not None:
                    raise InputError(
                        f"{self.path}: record {rid} was saved with other qrels (fingerprint "
                        f"{short_fingerprint(row[0])}, these are {short_fingerprint(fingerprint)}); not changed"
                    )
                unknown = [q for q in json.loads(row[1]) if q not in judged]
                if unknown:
                    raise InputError(
                        f"{self.path}: record {rid} evaluated {len(unknown)} queries these qrels do not judge "
                        f"(e.g. {', '.join(map(repr, unknown[:3]))}): not the qrels it was scored on"
                    )
                db.execute(
                    "UPDATE records SET qrels_fingerprint = ?, qrels_name = COALESCE(qrels_name, ?) WHERE id = ?",
                    (fingerprint, name, rid),
                )
                changed += 1
        return changed

    # -- reading ---------------------------------------------------------------------------------
    def _read(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        with self._sqlite("read the run history") as db:
            return db.execute(sql, params).fetchall()

    def _records(self, where: str, params: Sequence[Any], limit: int | None) -> builtins.list[RunRecord]:
        sql = f"SELECT {', '.join(_RECORD_COLUMNS)} FROM records {where} ORDER BY created_at DESC, id DESC"
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise InputError(f"limit must be an int >= 0. Got {limit!r} instead.")
            sql += f" LIMIT {limit}"
        with self._sqlite("read the run history") as db:
            db.execute("BEGIN")  # one snapshot for both queries
            try:
                rows = db.execute(sql, params).fetchall()
                means: dict[int, builtins.list[tuple[str, float]]] = {}
                if rows:
                    ids = [row[0] for row in rows]
                    marks = ", ".join("?" * len(ids))
                    for rid, metric, mean in db.execute(
                        f"SELECT record_id, metric, mean FROM metric_values WHERE record_id IN ({marks}) "
                        "ORDER BY record_id, position",
                        ids,
                    ):
                        means.setdefault(rid, []).append((metric, math.nan if mean is None else float(mean)))
            finally:
                db.execute("COMMIT")
        return [self._record(row, means.get(row[0], [])) for row in rows]

    @staticmethod
    def _record(row: tuple[Any, ...], means: Sequence[tuple[str, float]]) -> RunRecord:
        """A row of :data:`_RECORD_COLUMNS` and the record's ``(metric, mean)`` pairs as a :class:`RunRecord`."""
        fields = dict(zip(_RECORD_COLUMNS, row, strict=True))
        created_at, config, tags = fields.pop("created_at"), fields.pop("config"), fields.pop("tags")
        return RunRecord(
            timestamp=_parse_time(created_at),
            config=json.loads(config),
            tags=tuple(json.loads(tags)),
            metrics=tuple(m for m, _ in means),
            mean=dict(means),
            **fields,
        )

    def list(self, name: str | None = None, limit: int | None = None) -> builtins.list[RunRecord]:
        """Saved records, newest first (by timestamp, then id).

        Parameters
        ----------
        name:
            Only records with this name.
        limit:
            At most this many (the newest).
        """
        if name is None:
            return self._records("", (), limit)
        return self._records("WHERE name = ?", (name,), limit)

    def latest(self, name: str | None = None) -> RunRecord | None:
        """The newest record (with this name, when given), or None when there is none."""
        records = self.list(name, limit=1)
        return records[0] if records else None

    def get(self, record_id: int) -> RunRecord:
        """The record ``record_id`` (without per-query values).

        Raises
        ------
        InputError
            When there is no such record.
        """
        records = self._records("WHERE id = ?", (record_id,), None)
        if not records:
            raise InputError(f"{self.path}: no record with id {record_id}")
        return records[0]

    def load(self, record_id: int) -> Evaluation:
        """Rebuild the :class:`~rankbridge.Evaluation` saved as ``record_id``.

        Per-query values equal the saved ones bit for bit. The evaluation's hit table is not stored,
        so ``table`` is None.

        Raises
        ------
        InputError
            When there is no such record.
        """
        with self._sqlite(f"read record {record_id}") as db:
            db.execute("BEGIN")  # one snapshot: the record and its values
            try:
                row = db.execute(
                    "SELECT name, missing_policy, duplicates, query_ids, missing, failed, unjudged, no_relevant "
                    "FROM records WHERE id = ?",
                    (record_id,),
                ).fetchone()
                metric_rows = db.execute(
                    "SELECT metric, per_query FROM metric_values WHERE record_id = ? ORDER BY position", (record_id,)
                ).fetchall()
            finally:
                db.execute("COMMIT")
        if row is None:
            raise InputError(f"{self.path}: no record with id {record_id}")
        name, policy, duplicates, query_ids, missing, failed, unjudged, no_relevant = row
        try:
            # "ragas.faithfulness" and other namespaced columns were joined in; they stay values only
            measures = tuple(parse_measure(metric) for metric, _ in metric_rows if "." not in metric.split("@")[0])
        except InputError as exc:
            raise InputError(
                f"{self.path}: record {record_id} has a metric this rankbridge does not know: {exc}"
            ) from None
        return Evaluation(
            measures=measures,
            query_ids=tuple(json.loads(query_ids)),
            values={metric: _from_blob(blob) for metric, blob in metric_rows},
            missing=tuple(json.loads(missing)),
            failed=tuple(json.loads(failed)),
            unjudged=tuple(json.loads(unjudged)),
            no_relevant=tuple(json.loads(no_relevant)),
            missing_policy=policy,
            run_name=name,
            duplicates=duplicates,
        )

    def errors(self, record_id: int) -> dict[str, str]:
        """The failure messages of the saved run: ``{query id: message}`` (empty when none failed)."""
        rows = self._read("SELECT errors FROM records WHERE id = ?", (record_id,))
        if not rows:
            raise InputError(f"{self.path}: no record with id {record_id}")
        result: dict[str, str] = json.loads(rows[0][0])
        return result

    def trend(self, metric: str, name: str | None = None, *, queries: str = "join") -> Trend:
        """The mean of ``metric`` across saved records, oldest first, joining only comparable records.

        Records are comparable when they were scored on the same qrels (the same
        :func:`~rankbridge.fingerprint.qrels_fingerprint`) under the same metric definitions
        (:data:`METRIC_DEFINITIONS_VERSION`, and the same canonical metric: ``precision@5`` and
        ``precision@5(rel=2)`` are different metrics). The records of each such group form a
        :class:`HistorySeries`; the returned :class:`Trend` lists the points of the series of the newest
        record and keeps the others in ``series``. Records of unknown qrels (saved without ``qrels=``, or
        by an older rankbridge) never join records of known qrels: when both exist they are left out
        (``left_out``); when no record has known qrels they form their own series, with a note. A changing
        query set is said in ``notes`` and in each series' ``queries_added`` / ``queries_removed``, or,
        with ``queries="same"``, splits the series.

        Parameters
        ----------
        metric:
            A metric name in any accepted spelling (``"nDCG@10"``, ``"ndcg_cut_10"``), or a joined column
            (``"ragas.faithfulness"``).
        name:
            Only records with this name.
        queries:
            ``"join"`` (default): records on different query sets of the same qrels join, and the notes say
            how many queries differ; ``"same"``: a series also needs the same query set.

        Returns
        -------
        Trend
            A list of ``(timestamp, record_id, mean)`` points of one comparable series, ordered by time
            (then id), with ``series``, ``left_out`` and ``notes``.

        Warns
        -----
        TrendSplitWarning
            When records were left out or split into several series (the message gives the reasons).
        MixedDefinitionsWarning
            The same, when (among other reasons) the records were saved under different metric
            definitions versions.

        Examples
        --------
        >>> import warnings
        >>> import rankbridge as rb
        >>> qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
        >>> with RunStore(":memory:") as store, warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", TrendSplitWarning)  # the same reasons are in trend.notes
        ...     _ = store.save(rb.evaluate(qrels, {"q1": ["d1"]}, ["mrr"]), name="a")  # unknown qrels
        ...     _ = store.save(rb.evaluate(qrels, {"q1": ["d1"]}, ["mrr"]), name="a", qrels=qrels)
        ...     _ = store.save(rb.evaluate(qrels, {"q2": ["d2"]}, ["mrr"]), name="a", qrels=qrels)
        ...     trend = store.trend("MRR")
        >>> [(p.record_id, p.mean) for p in trend], trend.left_out
        ([(2, 0.5), (3, 0.5)], (1,))
        >>> print(trend.notes[0].split(" (")[0])
        1 record of unknown qrels left out
        """
        if queries not in ("join", "same"):
            raise InputError(f"queries must be 'join' or 'same'. Got {queries!r} instead.")
        canonical = _canonical_metric(metric)
        with self._sqlite("read the run history") as db:
            db.execute("BEGIN")  # one snapshot: the rows and the query ids they are compared on
            try:
                stored = [m for (m,) in db.execute("SELECT DISTINCT metric FROM metric_values")]
                matching = [m for m in stored if _stored_metric_key(m) == canonical]
                rows: builtins.list[_TrendRow] = []
                if matching:
                    sql = (
                        "SELECT r.created_at, r.id, r.name, m.mean, r.metric_definitions_version, "
                        "r.qrels_fingerprint, r.qrels_name, r.query_set_fingerprint, r.num_queries "
                        "FROM metric_values m JOIN records r ON r.id = m.record_id "
                        f"WHERE m.metric IN ({', '.join('?' * len(matching))})"
                    )
                    params: builtins.list[Any] = builtins.list(matching)
                    if name is not None:
                        sql += " AND r.name = ?"
                        params.append(name)
                    seen: set[int] = set()
                    for row in db.execute(sql + " ORDER BY r.created_at, r.id", params):
                        if row[1] not in seen:  # two stored spellings of one metric: the first counts
                            seen.add(row[1])
                            rows.append(_TrendRow(*row))
                result = _build_trend(canonical, name, rows, queries, lambda rid: _query_ids(db, rid))
            finally:
                db.execute("COMMIT")
        warning = _trend_warning(result, len(rows))
        if warning is not None:
            warnings.warn(warning, stacklevel=2)
        return result


class _TrendRow(NamedTuple):
    created_at: str
    id: int
    name: str
    mean: float | None
    definitions: str
    qrels_fingerprint: str | None
    qrels_name: str | None
    query_set_fingerprint: str | None
    num_queries: int


def _query_ids(db: sqlite3.Connection, record_id: int) -> frozenset[str]:
    (text,) = db.execute("SELECT query_ids FROM records WHERE id = ?", (record_id,)).fetchone()
    return frozenset(json.loads(text))


def _canonical_metric(metric: str) -> str:
    """The canonical name of a metric asked for; a joined column (``ragas.faithfulness``) as given."""
    if not isinstance(metric, str):
        raise InputError(f"metric must be a str such as 'ndcg@10'. Got {metric!r} instead.")
    try:
        return str(parse_measure(metric))
    except MetricError:
        if "." in metric.split("@")[0]:
            return metric
        raise


@functools.lru_cache(maxsize=1024)
def _stored_metric_key(stored: str) -> str | None:
    """The canonical name of a stored metric under today's parser (a spelling may have changed since)."""
    try:
        return str(parse_measure(stored))
    except MetricError:
        return stored if "." in stored.split("@")[0] else None


def _ids_text(ids: Sequence[int], limit: int = 5) -> str:
    shown = ", ".join(str(i) for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _build_trend(
    metric: str,
    name: str | None,
    rows: Sequence[_TrendRow],
    queries: str,
    query_ids: Callable[[int], frozenset[str]],
) -> Trend:
    """Group trend rows into comparable series and say why (see :meth:`RunStore.trend`)."""
    known = [r for r in rows if r.qrels_fingerprint is not None]
    unknown = [r for r in rows if r.qrels_fingerprint is None]
    left_out = [r.id for r in unknown] if known else []
    pool = known if known else builtins.list(rows)
    notes: builtins.list[str] = []
    if left_out:
        notes.append(
            f"{_plural(len(left_out), 'record')} of unknown qrels left out (id {_ids_text(left_out)}): saved "
            "without qrels= or by an older rankbridge, they cannot be joined with records of known qrels; "
            "to include them, attach the qrels they were scored on and re-run "
            "(RunStore.attach_qrels(ids, qrels), or rankbridge history attach-qrels QRELS ID...)"
        )
    elif len(unknown) > 1:
        notes.append(
            f"qrels unknown for all {len(unknown)} records: the trend cannot check that they were scored on "
            "the same judgments (save with qrels=, or attach them: rankbridge history attach-qrels QRELS ID...)"
        )

    def key(r: _TrendRow) -> tuple[str | None, ...]:
        return (r.qrels_fingerprint, r.definitions) + ((r.query_set_fingerprint,) if queries == "same" else ())

    groups: dict[tuple[str | None, ...], builtins.list[_TrendRow]] = {}
    for r in pool:
        groups.setdefault(key(r), []).append(r)
    ordered = sorted(groups.values(), key=lambda g: (g[-1].created_at, g[-1].id))

    sets: dict[str | None, frozenset[str]] = {}  # by query-set fingerprint, loaded only when a set changes

    def ids_of(r: _TrendRow) -> frozenset[str]:
        if r.query_set_fingerprint is None:
            return query_ids(r.id)
        if r.query_set_fingerprint not in sets:
            sets[r.query_set_fingerprint] = query_ids(r.id)
        return sets[r.query_set_fingerprint]

    series: builtins.list[HistorySeries] = []
    for group in ordered:
        added, removed = [0], [0]
        for prev, cur in itertools.pairwise(group):
            if prev.query_set_fingerprint is not None and prev.query_set_fingerprint == cur.query_set_fingerprint:
                added.append(0)
                removed.append(0)
                continue
            a, b = ids_of(prev), ids_of(cur)
            added.append(len(b - a))
            removed.append(len(a - b))
        series.append(
            HistorySeries(
                metric=metric,
                qrels_fingerprint=group[0].qrels_fingerprint,
                qrels_names=tuple(dict.fromkeys(r.qrels_name for r in group if r.qrels_name)),
                metric_definitions_version=group[0].definitions,
                points=tuple(
                    TrendPoint(_parse_time(r.created_at), r.id, math.nan if r.mean is None else float(r.mean))
                    for r in group
                ),
                names=tuple(r.name for r in group),
                num_queries=tuple(r.num_queries for r in group),
                queries_added=tuple(added),
                queries_removed=tuple(removed),
            )
        )

    if len(series) > 1:
        reasons = []
        fingerprints = builtins.list(dict.fromkeys(s.qrels_fingerprint for s in series))
        if len(fingerprints) > 1:
            shown = ", ".join(short_fingerprint(f) for f in fingerprints)
            reasons.append(
                f"the records were scored on {len(fingerprints)} different qrels (fingerprints {shown}); "
                "means on different judgments are not comparable"
            )
        versions = sorted({s.metric_definitions_version for s in series})
        if len(versions) > 1:
            reasons.append(
                f"the records were saved under metric definitions versions {', '.join(versions)}; "
                "their means may not be comparable"
            )
        pairs = {(s.qrels_fingerprint, s.metric_definitions_version) for s in series}
        if len(series) > len(pairs):  # queries="same" split some of them
            reasons.append("the query set changes (queries='same' splits there)")
        notes.insert(0, f"split into {len(series)} series: " + "; ".join(reasons))

    multi = len(series) > 1
    for s in series:
        changes = [
            f"record {s.points[i].record_id} has {s.queries_added[i]} queries added and "
            f"{s.queries_removed[i]} removed vs record {s.points[i - 1].record_id}"
            for i in range(1, len(s.points))
            if s.queries_added[i] or s.queries_removed[i]
        ]
        if changes:
            where = f" of series '{s.label}'" if multi else ""
            more = f"; and {len(changes) - 3} more changes" if len(changes) > 3 else ""
            notes.append(
                f"the query set changes along the series{where} ({_plural(len(changes), 'change')}): "
                + "; ".join(changes[:3])
                + more
                + "; its means are over different queries (queries='same' splits there)"
            )

    current = len(series) - 1 if series else None
    points = series[current].points if current is not None else ()
    return Trend(points, metric=metric, name=name, series=series, current=current, left_out=left_out, notes=notes)


def _trend_warning(trend: Trend, total: int) -> Warning | None:
    """One warning when a trend is split or left records out (None when it holds every record)."""
    if trend.complete:
        return None
    versions = {s.metric_definitions_version for s in trend.series}
    category = MixedDefinitionsWarning if len(versions) > 1 else TrendSplitWarning
    where = f" ({trend.name})" if trend.name is not None else ""
    reasons = [n for n in trend.notes if n.startswith(("split into", f"{len(trend.left_out)} record"))]
    return category(f"the trend of {trend.metric}{where} keeps {len(trend)} of {total} records: " + "; ".join(reasons))
