"""Run history: every evaluated run, kept in one embedded SQLite file, to list, reload and trend.

Why SQLite (the standard library's :mod:`sqlite3`): the history must live beside a project or a CI job
as one file, with no server to run, and survive crashes. SQLite gives atomic, durable transactions
(a save is all or nothing, even when the process is killed mid-write), lets readers and a writer work at
once in WAL mode, and is readable by every language and by the ``sqlite3`` shell for ad-hoc queries.

What is kept per saved evaluation (a *record*): the run name, its config (JSON), free-form tags, the
qrels name, :data:`METRIC_DEFINITIONS_VERSION`, the rankbridge version, a UTC timestamp, the missing
policy, the query counts and the missing/failed/unjudged/no-relevant query lists, the failure messages
and latency summary of the run, and for every metric its mean and its per-query values.

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
"""

from __future__ import annotations

import argparse
import builtins
import json
import math
import os
import sqlite3
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from rankbridge.errors import InputError, RankbridgeError
from rankbridge.metrics.measures import METRIC_DEFINITIONS_VERSION as _METRIC_DEFINITIONS_VERSION

if TYPE_CHECKING:
    from rankbridge.evaluate import Evaluation
    from rankbridge.types import Run

__all__ = [
    "DEFAULT_STORE_PATH",
    "METRIC_DEFINITIONS_VERSION",
    "SCHEMA_VERSION",
    "MixedDefinitionsWarning",
    "RunRecord",
    "RunStore",
    "TrendPoint",
    "add_cli",
]

#: Re-exported from :mod:`rankbridge.metrics.measures`, where the definitions live; read at save time.
METRIC_DEFINITIONS_VERSION = _METRIC_DEFINITIONS_VERSION

#: Version of the file layout written by this module; a file with a higher version is refused.
SCHEMA_VERSION = 1

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

# Columns list() and latest() read: everything but the (possibly large) query lists.
_RECORD_COLUMNS = (
    "id, name, created_at, config, tags, qrels_name, metric_definitions_version, rankbridge_version, "
    "missing_policy, num_queries, num_missing, num_failed, num_unjudged, num_no_relevant, duplicates, "
    "latency_mean, latency_p95"
)


class MixedDefinitionsWarning(UserWarning):
    """A trend joins records saved under different :data:`METRIC_DEFINITIONS_VERSION` values."""


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

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (timestamp as ISO 8601 text, NaN as None)."""
        out = asdict(self)
        out["timestamp"] = self.timestamp.isoformat()
        out["tags"] = builtins.list(self.tags)
        out["metrics"] = builtins.list(self.metrics)
        out["mean"] = {k: _finite_or_none(v) for k, v in self.mean.items()}
        out["config"] = dict(self.config)
        return out


class TrendPoint(NamedTuple):
    """One point of :meth:`RunStore.trend`: when, which record, and the metric's mean."""

    timestamp: datetime
    record_id: int
    mean: float


def _finite_or_none(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


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


class RunStore:
    """A history of evaluations in one SQLite file (created on first use).

    Each :meth:`save` is one transaction: a crash or a kill mid-save leaves the file as it was. The file
    runs in WAL mode, so readers (other processes, threads, ``RunStore`` objects) never block a writer or
    each other; two writers take turns, waiting up to ``timeout`` seconds for the lock. One ``RunStore``
    may be shared between threads (its calls are serialised). Close it with :meth:`close` or use it as a
    context manager.

    Parameters
    ----------
    path:
        The SQLite file (``":memory:"`` for a throw-away store).
    create:
        Create the file when it does not exist (default). With ``False`` a missing file is an
        :class:`~rankbridge.errors.InputError`, for commands that only read.
    timeout:
        Seconds to wait for another process's write lock before giving up.

    Raises
    ------
    InputError
        When ``path`` is not a SQLite file, is another application's database, or was written by a newer
        rankbridge (a newer schema version).

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
        timeout: float = 30.0,
    ) -> None:
        self.path = os.fspath(path)
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
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
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
            # The first read of the header: a file that is not SQLite fails here.
            conn.execute("PRAGMA schema_version").fetchone()
            conn.execute("PRAGMA foreign_keys = ON")
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if mode != "wal" and self.path != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")  # persistent: set once per file
            # Check under a read snapshot first: opening never waits for another process's write.
            conn.execute("BEGIN")
            try:
                ready = self._check_schema(conn, may_create=False)
            finally:
                conn.execute("COMMIT")
            if not ready:  # a new file: create the tables under the write lock (one creator wins)
                conn.execute("BEGIN IMMEDIATE")
                try:
                    self._check_schema(conn, may_create=True)
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
        except sqlite3.DatabaseError as exc:
            code = getattr(exc, "sqlite_errorname", "")
            if code in ("SQLITE_NOTADB", "SQLITE_CORRUPT") or "not a database" in str(exc):
                raise InputError(
                    f"{self.path}: not a rankbridge run history (not a SQLite database file, or a damaged one): {exc}"
                ) from None
            raise InputError(f"{self.path}: cannot read the run history: {exc}") from None

    def _check_schema(self, conn: sqlite3.Connection, *, may_create: bool) -> bool:
        """True when the file holds a schema this module reads; creates it in an empty file if allowed."""
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
            from rankbridge import __version__

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
        # Older versions would be migrated here (under BEGIN IMMEDIATE); version 1 is the first.
        return True

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RankbridgeError(f"{self.path}: the run history is closed")
        return self._conn

    def close(self) -> None:
        """Close the file (idempotent). The last connection to close checkpoints the WAL into the file."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

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
        qrels_name:
            Which judgments the run was evaluated against.
        timestamp:
            When the evaluation happened (timezone-aware); default now. Give it to import older runs.

        Returns
        -------
        int
            The new record's id.

        Raises
        ------
        InputError
            When the config is not JSON-serialisable, a timestamp is naive, or the evaluation's arrays
            do not match its query ids.
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

        from rankbridge import __version__

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
        )
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")  # take the write lock now, not on the first INSERT
            try:
                cursor = db.execute(
                    "INSERT INTO records (name, created_at, config, tags, qrels_name, metric_definitions_version, "
                    "rankbridge_version, missing_policy, num_queries, num_missing, num_failed, num_unjudged, "
                    "num_no_relevant, duplicates, latency_mean, latency_p95, query_ids, missing, failed, unjudged, "
                    "no_relevant, errors) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return int(record_id)

    def delete(self, record_id: int) -> None:
        """Delete one record and its values (one transaction).

        Raises
        ------
        InputError
            When there is no record ``record_id``.
        """
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("DELETE FROM metric_values WHERE record_id = ?", (record_id,))
                deleted = db.execute("DELETE FROM records WHERE id = ?", (record_id,)).rowcount
                if deleted == 0:
                    raise InputError(f"{self.path}: no record with id {record_id}")
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise

    # -- reading ---------------------------------------------------------------------------------
    def _read(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def _records(self, where: str, params: Sequence[Any], limit: int | None) -> builtins.list[RunRecord]:
        sql = f"SELECT {_RECORD_COLUMNS} FROM records {where} ORDER BY created_at DESC, id DESC"
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise InputError(f"limit must be an int >= 0. Got {limit!r} instead.")
            sql += f" LIMIT {limit}"
        with self._lock:
            db = self._db
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
        return RunRecord(
            id=row[0],
            name=row[1],
            timestamp=_parse_time(row[2]),
            config=json.loads(row[3]),
            tags=tuple(json.loads(row[4])),
            qrels_name=row[5],
            metric_definitions_version=row[6],
            rankbridge_version=row[7],
            missing_policy=row[8],
            num_queries=row[9],
            num_missing=row[10],
            num_failed=row[11],
            num_unjudged=row[12],
            num_no_relevant=row[13],
            duplicates=row[14],
            latency_mean=row[15],
            latency_p95=row[16],
            metrics=tuple(m for m, _ in means),
            mean=dict(means),
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
        from rankbridge.evaluate import Evaluation
        from rankbridge.metrics.measures import parse_measure

        with self._lock:
            db = self._db
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

    def trend(self, metric: str, name: str | None = None) -> builtins.list[TrendPoint]:
        """The mean of ``metric`` in every record that has it, oldest first.

        Parameters
        ----------
        metric:
            A metric name in any accepted spelling (``"nDCG@10"``, ``"ndcg_cut_10"``).
        name:
            Only records with this name.

        Returns
        -------
        list of TrendPoint
            ``(timestamp, record_id, mean)`` tuples ordered by time (then id).

        Warns
        -----
        MixedDefinitionsWarning
            When the points were saved under different metric definitions versions.
        """
        from rankbridge.metrics.measures import parse_measure

        canonical = str(parse_measure(metric))
        sql = (
            "SELECT r.created_at, r.id, m.mean, r.metric_definitions_version FROM metric_values m "
            "JOIN records r ON r.id = m.record_id WHERE m.metric = ?"
        )
        params: builtins.list[Any] = [canonical]
        if name is not None:
            sql += " AND r.name = ?"
            params.append(name)
        rows = self._read(sql + " ORDER BY r.created_at, r.id", params)
        versions = sorted({row[3] for row in rows})
        if len(versions) > 1:
            warnings.warn(
                f"the trend of {canonical} joins records saved under metric definitions versions "
                f"{', '.join(versions)}; their means may not be comparable",
                MixedDefinitionsWarning,
                stacklevel=2,
            )
        return [
            TrendPoint(_parse_time(ts), rid, math.nan if mean is None else float(mean)) for ts, rid, mean, _ in rows
        ]


# -- command line ------------------------------------------------------------------------------------


def _fmt(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.4f}"


def _short_time(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%d %H:%M:%S")


def _print_rows(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int) -> None:
    """A table with rich when it is installed, aligned plain text otherwise."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # the CLI works without rich, just plainer
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
        print(title)

        def line(cells: Sequence[str]) -> str:
            return "  ".join(
                c.rjust(w) if i >= numeric_from else c.ljust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )

        print(line(header))
        for r in rows:
            print(line(r))
        return
    table = Table(title=title)
    for i, h in enumerate(header):
        table.add_column(h, justify="right" if i >= numeric_from else "left", no_wrap=h in ("id", "saved (UTC)"))
    for r in rows:
        table.add_row(*r)
    Console().print(table)


def _print_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False))


def _cmd_list(args: argparse.Namespace) -> int:
    with RunStore(args.store, create=False) as store:
        records = store.list(args.name, limit=args.limit)
    if args.format == "json":
        _print_json([r.to_dict() for r in records])
        return 0
    metrics: builtins.list[str] = []
    for r in records:
        metrics.extend(m for m in r.metrics if m not in metrics)
    rows = [
        [str(r.id), _short_time(r.timestamp), r.name, ",".join(r.tags), str(r.num_queries)]
        + [_fmt(r.mean.get(m)) for m in metrics]
        for r in records
    ]
    _print_rows(
        f"run history ({args.store}): {len(records)} records",
        ["id", "saved (UTC)", "name", "tags", "queries", *metrics],
        rows,
        4,
    )
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    with RunStore(args.store, create=False) as store:
        record = store.get(args.id)
        evaluation = store.load(args.id)
        errors = store.errors(args.id)
    if args.format == "json":
        payload = record.to_dict()
        payload.update(
            missing=builtins.list(evaluation.missing),
            failed=builtins.list(evaluation.failed),
            unjudged=builtins.list(evaluation.unjudged),
            no_relevant=builtins.list(evaluation.no_relevant),
            errors=errors,
        )
        if args.per_query:
            payload["per_query"] = {
                m: {q: _finite_or_none(v) for q, v in values.items()} for m, values in evaluation.per_query.items()
            }
        _print_json(payload)
        return 0
    print(f"record {record.id}: {record.name}, saved {_short_time(record.timestamp)} UTC")
    print(f"config: {json.dumps(dict(record.config), sort_keys=True)}")
    if record.tags:
        print(f"tags: {', '.join(record.tags)}")
    if record.qrels_name:
        print(f"qrels: {record.qrels_name}")
    print(
        f"rankbridge {record.rankbridge_version}, metric definitions v{record.metric_definitions_version}, "
        f"missing queries: {record.missing_policy}"
    )
    if record.latency_mean is not None:
        print(f"latency: mean {record.latency_mean:.4f}s, p95 {record.latency_p95:.4f}s")
    print(evaluation.summary())
    _print_rows("means", ["metric", "mean"], [[m, _fmt(v)] for m, v in record.mean.items()], 1)
    for qid, message in builtins.list(errors.items())[:10]:
        print(f"failed {qid}: {message}")
    if len(errors) > 10:
        print(f"... and {len(errors) - 10} more failures (--format json lists all)")
    if args.per_query:
        names = builtins.list(evaluation.values)
        rows = [[q, *(_fmt(float(evaluation.values[n][i])) for n in names)] for i, q in enumerate(evaluation.query_ids)]
        _print_rows("per query", ["query", *names], rows, 1)
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    with RunStore(args.store, create=False) as store:
        store.delete(args.id)
    if args.format == "json":
        _print_json({"deleted": args.id})
    else:
        print(f"deleted record {args.id}")
    return 0


def _cmd_trend(args: argparse.Namespace) -> int:
    from rankbridge.metrics.measures import parse_measure

    metric = str(parse_measure(args.metric))
    with RunStore(args.store, create=False) as store:
        points = store.trend(metric, args.name)
        names = {r.id: r.name for r in store.list(args.name)} if points else {}
    if args.format == "json":
        _print_json(
            {
                "metric": metric,
                "points": [
                    {
                        "timestamp": p.timestamp.isoformat(),
                        "record_id": p.record_id,
                        "name": names.get(p.record_id),
                        "mean": _finite_or_none(p.mean),
                    }
                    for p in points
                ],
            }
        )
        return 0
    rows = []
    previous: float | None = None
    for p in points:
        change = "" if previous is None or math.isnan(previous) or math.isnan(p.mean) else f"{p.mean - previous:+.4f}"
        rows.append([_short_time(p.timestamp), str(p.record_id), names.get(p.record_id, ""), _fmt(p.mean), change])
        previous = p.mean
    _print_rows(f"{metric} over time ({len(points)} records)", ["saved (UTC)", "id", "name", metric, "change"], rows, 3)
    return 0


def add_cli(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``rankbridge history`` (list, show, delete, trend) on the CLI's subparsers.

    Each subcommand sets ``func`` (called with the parsed namespace, returning the exit code 0); errors
    are raised as :class:`~rankbridge.errors.InputError`.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="rankbridge")
    >>> add_cli(parser.add_subparsers(dest="command", required=True))
    >>> args = parser.parse_args(["history", "--store", "h.sqlite", "trend", "nDCG@10", "--name", "bm25"])
    >>> args.store, args.metric, args.name, args.format
    ('h.sqlite', 'nDCG@10', 'bm25', 'table')
    """
    history = subparsers.add_parser(
        "history",
        help="list, show, delete and trend saved evaluations",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  rankbridge history list\n"
        "  rankbridge history list --name bm25 --limit 5 --format json\n"
        "  rankbridge history show 12 --per-query\n"
        "  rankbridge history trend ndcg@10 --name dense\n"
        "  rankbridge history --store ci/history.sqlite delete 12",
    )
    history.add_argument("--store", default=DEFAULT_STORE_PATH, help=f"history file (default: {DEFAULT_STORE_PATH})")
    history.add_argument("--format", choices=["table", "json"], default="table")
    # The same options after the subcommand; SUPPRESS keeps the value given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--store", default=argparse.SUPPRESS, help="history file")
    common.add_argument("--format", choices=["table", "json"], default=argparse.SUPPRESS)
    sub = history.add_subparsers(dest="history_command", required=True, metavar="{list,show,delete,trend}")

    ls = sub.add_parser("list", parents=[common], help="saved records, newest first")
    ls.add_argument("--name", help="only records with this name")
    ls.add_argument("--limit", type=int, help="at most this many")
    ls.set_defaults(func=_cmd_list)

    sh = sub.add_parser("show", parents=[common], help="one record: config, counts, means")
    sh.add_argument("id", type=int, help="record id (see `history list`)")
    sh.add_argument("--per-query", action="store_true", help="also print per-query values")
    sh.set_defaults(func=_cmd_show)

    de = sub.add_parser("delete", parents=[common], help="delete one record")
    de.add_argument("id", type=int, help="record id")
    de.set_defaults(func=_cmd_delete)

    tr = sub.add_parser("trend", parents=[common], help="a metric's mean across saved records, oldest first")
    tr.add_argument("metric", help="metric name, e.g. ndcg@10")
    tr.add_argument("--name", help="only records with this name")
    tr.set_defaults(func=_cmd_trend)
