"""The connection to SurrealDB and the versioned schema migrations.

One process owns an embedded palace and opens it once: the engine locks its files exclusively, so
request threads and workers share this one connection. A remote store (`ws://`, `wss://`) is the
same API over the SurrealDB RPC protocol.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import gc
import hashlib
import itertools
import logging
import random
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from surrealdb import DoneFrame, ErrorFrame, NullType, RecordID, Surreal
from surrealdb.errors import SurrealError

from kernel import wire
from kernel.config import Config
from kernel.errors import MemCastleError, StoreFailed

logger = logging.getLogger(__name__)

NAMESPACE = "memcastle"
DATABASE = "palace"


# Two writers of one record (processes of a remote palace, threads of one daemon) make the
# engine refuse the later commit with "this transaction can be retried": it is tried again, a
# little later each time (a random wait up to 4 ms, doubling, at most 200 ms), since it was
# rolled back whole. Four processes filing into one room, whose items share a deduplication key,
# exhausted five tries (tests/test_cluster.py); a daemon and a worker mining and filing at once
# exhausted twelve within 2 s (bench/chaos.py --remote), so the tries last up to 20 s.
CONFLICT_WAIT_SECS = 0.004
CONFLICT_WAIT_MAX_SECS = 0.2
CONFLICT_RETRY_SECS = 20.0
RETRYABLE = "can be retried"
# What the engine says of the statements of a failed transaction that did not fail themselves.
NOT_THE_CAUSE = ("not executed due to a failed transaction", "was aborted due to a prior error")


def _wait_before_retry(attempt: int, started: float) -> bool:
    """Sleep before try `attempt + 1` of a write that lost a conflict; False when the tries
    have lasted long enough."""
    if time.monotonic() - started > CONFLICT_RETRY_SECS:
        return False
    time.sleep(random.uniform(0, min(CONFLICT_WAIT_SECS * 2**attempt, CONFLICT_WAIT_MAX_SECS)))
    return True


class UniqueViolation(Exception):
    """A write broke a unique index; the caller decides what that means in the domain."""


@dataclass(frozen=True)
class Statement:
    """A write that must commit with another, for that other write's transaction to carry (a
    job's end state, written with its last unit's drawers). Its variables' names must not be
    the carrier's own."""

    sql: str
    variables: Mapping[str, Any]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class MigrationState:
    applied: int
    available: int

    @property
    def pending(self) -> int:
        return self.available - self.applied

    def as_dict(self) -> dict[str, int]:
        return {"applied": self.applied, "available": self.available, "pending": self.pending}


def bundled_migrations() -> list[Migration]:
    """The `.surql` files under `kernel/schema`, ordered by their version prefix."""
    migrations = []
    for entry in resources.files("kernel.schema").iterdir():
        if not entry.name.endswith(".surql"):
            continue
        version, _, name = entry.name.removesuffix(".surql").partition("_")
        migrations.append(Migration(int(version), name, entry.read_text(encoding="utf-8")))
    return sorted(migrations, key=lambda m: m.version)


def plain(value: Any) -> Any:
    """Turn SDK values into plain Python: record ids into their key, NULL into None.

    Every row a query returns goes through here, so the common cases come first: a job's row
    and a batch's copy candidates took 6% of a busy daemon's interpreter time here, most of it
    in rebuilding datetimes through `astimezone` and `timetuple`."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, RecordID):
        return value.id
    if isinstance(value, NullType):
        return None
    if isinstance(value, dt.datetime):
        return _utc(value)
    return value


def _utc(value: dt.datetime) -> dt.datetime:
    """A plain UTC datetime (the SDK's subclass keeps nanoseconds a datetime cannot hold)."""
    if value.tzinfo is not dt.UTC:
        value = value.astimezone(dt.UTC)
    return dt.datetime(
        value.year,
        value.month,
        value.day,
        value.hour,
        value.minute,
        value.second,
        value.microsecond,
        tzinfo=dt.UTC,
    )


class _Gate:
    """Queries pass side by side; `closed` waits for those in flight and holds back the next
    until it is done (`Store.release_memory`)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._passing = 0
        self._closed = False

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._closed)
            self._passing += 1
        try:
            yield
        finally:
            with self._changed:
                self._passing -= 1
                self._changed.notify_all()

    @contextlib.contextmanager
    def closed(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._closed)
            self._closed = True
            self._changed.wait_for(lambda: self._passing == 0)
        try:
            yield
        finally:
            with self._changed:
                self._closed = False
                self._changed.notify_all()


def _give_back_freed_memory() -> None:
    """glibc keeps what the engine's threads freed in its arenas until it is asked for it."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc: nothing to ask
        return
    libc.malloc_trim(0)


class Store:
    """A SurrealDB connection with the palace's namespace and database selected."""

    def __init__(
        self,
        url: str,
        *,
        namespace: str = NAMESPACE,
        database: str = DATABASE,
        username: str | None = None,
        password: str | None = None,
        palace_path: Path | None = None,
    ) -> None:
        self.url = url
        self.namespace = namespace
        self.database = database
        self._username = username
        self._password = password
        self.palace_path = palace_path
        self._db: Any = None
        self._gate = _Gate()

    @classmethod
    def from_config(cls, config: Config) -> Store:
        store = config.store
        if store.mode == "remote":
            return cls(
                store.url or "",
                namespace=store.namespace,
                database=store.database,
                username=store.username,
                password=store.password,
            )
        db_dir = config.palace_path / "db"
        return cls(f"surrealkv://{db_dir}?sync={store.sync}", palace_path=config.palace_path)

    @property
    def mode(self) -> str:
        return "remote" if self.url.startswith(("ws://", "wss://")) else "embedded"

    @property
    def releases_memory(self) -> bool:
        """Whether `release_memory` gives anything back: only an embedded engine on disk."""
        return self.url.startswith("surrealkv://")

    def open(self) -> None:
        if self.palace_path is not None:
            self.palace_path.mkdir(parents=True, exist_ok=True)
        if self.mode == "embedded":
            wire.install()
        db = self._connect()
        if self.url.startswith("surrealkv://"):
            # Closed once and opened again, so that what the engine recovered from its
            # write-ahead log is written out and the log starts empty. The engine (3.2.4) can
            # lose every write of a process killed while the log it recovered at open is still
            # pending: a writer killed at random moments lost all 1,602 writes of one of its
            # runs (its log 560 MB, never written out), and the crash benchmark one daemon's
            # writes in each of two runs (docs/benchmarks.md "Crash safety").
            db.close()
            db = self._connect()
        self._db = db

    def _connect(self) -> Any:
        try:
            db = Surreal(self.url)
        except SurrealError as exc:
            raise self._open_failed(exc) from None
        try:
            db.connect()
            if self._username is not None:
                db.signin({"username": self._username, "password": self._password or ""})
            db.use(self.namespace, self.database)
            # Opening proves nothing on a remote server that refuses anonymous queries: ask.
            db.query("RETURN 1").execute()
        except SurrealError as exc:
            with contextlib.suppress(Exception):
                db.close()
            raise self._open_failed(exc) from None
        return db

    def _open_failed(self, exc: Exception) -> MemCastleError:
        if "locked" in str(exc).lower():
            return StoreFailed(
                f"the palace at {self.palace_path} is locked by another process: "
                "a MemCastle daemon probably holds it",
                help="talk to the running daemon over its API (GET /api/status), or stop it first",
            )
        where = self.palace_path if self.palace_path is not None else self.url
        return StoreFailed(f"the datastore at {where} could not be opened: {exc}")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def release_memory(self) -> None:
        """Close the embedded engine and open it again, which gives back the memory it holds
        of what it has read.

        The engine keeps the blocks it reads, and this SDK has no setting that bounds them: at
        a million drawers, 1.1 GiB after reading 30,000 of them at random, 1.45 GiB after one
        scan of the drawers, about 8 GiB after reading every vector; the URL's
        `surrealkv_block_cache_capacity` (1 MiB to 1 GiB), a 3 GiB memory cgroup and
        `MALLOC_ARENA_MAX` changed none of it (docs/benchmarks.md, "A million drawers").
        Queries wait while it runs (0.14-0.21 s at a million drawers); a session the
        database console opened ends with it. A remote store keeps its memory on its server,
        and one in memory (`mem://`) would lose its data: both are left as they are."""
        if not self.releases_memory or self._db is None:
            return
        with self._gate.closed():
            self._db.close()
            # The engine's memory is freed with the SDK's connection, not at close, and the
            # connection holds reference cycles: only a collection frees it.
            self._db = None
            gc.collect()
            _give_back_freed_memory()
            self._db = self._connect()

    def query(self, sql: str, variables: Mapping[str, Any] | None = None) -> list[Any]:
        """Run one or more statements; returns one plain result per statement.

        A statement error raises: `UniqueViolation` for a unique index, `StoreFailed` otherwise
        (its detail is logged, the client sees a generic message). A query that lost a write
        conflict is run again whole, so statements outside a transaction must bear running
        twice (reads, conditional or idempotent writes).
        """
        if self._db is None:
            raise StoreFailed("the datastore is not open")
        started = time.monotonic()
        for attempt in itertools.count():
            try:
                with self._gate.open():
                    results = self._db.query(sql, dict(variables or {})).execute()
            except SurrealError as exc:
                text = str(exc)
                if "already contains" in text and "index" in text.lower():
                    raise UniqueViolation(text) from None
                if RETRYABLE in text and _wait_before_retry(attempt, started):
                    continue
                logger.error("datastore query failed: %s\n%s", text, sql.strip()[:2000])
                raise StoreFailed("the datastore failed to answer") from None
            return plain(results)
        raise AssertionError("unreachable: the loop returns or raises")

    def one(self, sql: str, variables: Mapping[str, Any] | None = None) -> Any:
        """The result of the last statement of `sql`."""
        return self.query(sql, variables)[-1]

    def transaction(self, sql: str, variables: Mapping[str, Any] | None = None) -> Any:
        """Run `sql` atomically; a failing statement rolls the whole block back.

        Returns the result of the block's last statement. A failure raises `StoreFailed`, its
        cause logged; a block that lost a write conflict is run again. The block is read
        statement by statement (`stream`): the SDK's plain answer to a failed transaction is the
        first statement's "not executed", which does not say whether a THROW, a type error or a
        conflict at COMMIT failed it.
        """
        if self._db is None:
            raise StoreFailed("the datastore is not open")
        block = f"BEGIN TRANSACTION;\n{sql}\nCOMMIT TRANSACTION;"
        started = time.monotonic()
        for attempt in itertools.count():
            values, errors = self._run_block(block, variables)
            if not errors:
                return plain(values[max(values) - 1])
            if any(RETRYABLE in error for error in errors) and _wait_before_retry(attempt, started):
                continue
            cause = next(
                (e for e in errors if not any(part in e for part in NOT_THE_CAUSE)), errors[0]
            )
            logger.error("datastore transaction failed: %s\n%s", cause, sql.strip()[:2000])
            raise StoreFailed("the datastore failed to answer")
        raise AssertionError("unreachable: the loop returns or raises")

    def _run_block(
        self, block: str, variables: Mapping[str, Any] | None
    ) -> tuple[dict[int, Any], list[str]]:
        """Each statement's result by its index, and the errors of those that failed."""
        assert self._db is not None
        values: dict[int, Any] = {}
        errors: list[str] = []
        try:
            with self._gate.open(), self._db.query(block, dict(variables or {})).stream() as frames:
                for frame in frames:
                    if isinstance(frame, DoneFrame):
                        values[frame.index] = frame.result.value
                    elif isinstance(frame, ErrorFrame):
                        errors.append(str(frame.error))
        except SurrealError as exc:
            errors.append(str(exc))
        return values, errors

    def changes(self, since: int, limit: int) -> list[tuple[int, str, str, dict[str, Any]]]:
        """The database's change feed from versionstamp `since` on (inclusive), at most `limit`
        entries: `(versionstamp, table, "update" | "delete", record)` for each record change,
        the record made plain (a delete carries only its id). Only tables defined with a
        `CHANGEFEED` appear."""
        # SHOW CHANGES takes literals only, not parameters.
        entries = self._raw(f"SHOW CHANGES FOR DATABASE SINCE {int(since)} LIMIT {int(limit)};")
        found = []
        for entry in entries[0]:
            for change in entry["changes"]:
                for action in ("update", "delete"):
                    record = change.get(action)
                    if record is not None:
                        table = record["id"].table_name
                        found.append((entry["versionstamp"], table, action, plain(record)))
        return found

    def _raw(self, sql: str) -> list[Any]:
        """`query` without `plain`: record ids keep their table."""
        if self._db is None:
            raise StoreFailed("the datastore is not open")
        try:
            with self._gate.open():
                return self._db.query(sql, {}).execute()
        except SurrealError as exc:
            logger.error("datastore query failed: %s\n%s", exc, sql.strip()[:2000])
            raise StoreFailed("the datastore failed to answer") from None

    def rpc(self, frame: bytes) -> bytes:
        """One SurrealDB RPC request (a CBOR frame) through the embedded engine, answered as a
        server would: the database console's way in. A frame naming no session runs in this
        store's own session, so the console always names one."""
        if self._db is None:
            raise StoreFailed("the datastore is not open")
        # The SDK's embedded connection keeps its engine handle here and sends its own requests
        # to it the same way (`BlockingEmbeddedSurrealConnection._send`).
        with self._gate.open():
            answer: bytes = self._db._db.execute(frame)
        return answer

    def healthy(self) -> tuple[bool, str | None]:
        try:
            self.one("RETURN 1")
        except MemCastleError as exc:
            return False, exc.message
        return True, None

    def _applied_versions(self) -> set[int]:
        return set(
            self.one(
                "DEFINE TABLE IF NOT EXISTS schema_migration SCHEMALESS; "
                "SELECT VALUE version FROM schema_migration"
            )
        )

    def migration_state(self) -> MigrationState:
        applied = self._applied_versions()
        return MigrationState(applied=len(applied), available=len(bundled_migrations()))

    def migrate(self) -> MigrationState:
        """Apply each bundled migration not yet recorded, each in its own transaction.

        The watermark row is written in the same transaction as the schema it records, so a
        crash leaves either both or neither.
        """
        applied = self._applied_versions()
        for migration in bundled_migrations():
            if migration.version in applied:
                continue
            logger.info("applying schema migration %04d %s", migration.version, migration.name)
            try:
                self.transaction(
                    f"{migration.text}\n"
                    "CREATE type::record('schema_migration', $version) CONTENT {version: $version, "
                    "name: $name, checksum: $checksum, applied_at: time::now()};",
                    {
                        "version": migration.version,
                        "name": migration.name,
                        "checksum": migration.checksum,
                    },
                )
            except (StoreFailed, UniqueViolation) as exc:
                raise MemCastleError(
                    f"schema migration {migration.version:04d} {migration.name} failed",
                    code="memcastle::migrate::failed",
                    help="read the daemon log for the statement that failed",
                ) from exc
        return self.migration_state()
