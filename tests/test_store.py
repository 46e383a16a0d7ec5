"""The store: migrations with a watermark, transactions, and the palace lock."""

from __future__ import annotations

import datetime as dt
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kernel import clock
from kernel.errors import StoreFailed
from kernel.store import Store, UniqueViolation, bundled_migrations
from tests.support.waits import wait_for


def test_migrations_are_numbered_in_order() -> None:
    versions = [migration.version for migration in bundled_migrations()]
    assert versions == sorted(versions) == list(range(1, len(versions) + 1))


def test_migrate_records_a_watermark_and_is_idempotent(store: Store) -> None:
    state = store.migration_state()
    assert state.pending == 0
    assert state.applied == len(bundled_migrations())
    rows = store.one("SELECT version, name, checksum FROM schema_migration ORDER BY version")
    assert [row["version"] for row in rows] == [m.version for m in bundled_migrations()]
    assert [row["checksum"] for row in rows] == [m.checksum for m in bundled_migrations()]
    assert store.migrate().as_dict() == state.as_dict()


def test_a_fresh_store_has_everything_pending() -> None:
    fresh = Store("mem://")
    fresh.open()
    try:
        assert fresh.migration_state().pending == len(bundled_migrations())
    finally:
        fresh.close()


def test_a_failing_statement_rolls_the_transaction_back(store: Store) -> None:
    store.query("CREATE wing:one SET name = 'taken'")
    # Inside a transaction the engine reports the other statements as "not executed", so the
    # failure surfaces as a store failure rather than as the unique violation itself.
    with pytest.raises((StoreFailed, UniqueViolation)):
        store.transaction(
            "CREATE wing:two SET name = 'fresh'; CREATE wing:three SET name = 'taken';"
        )
    assert store.one("SELECT VALUE name FROM wing ORDER BY name") == ["taken"]


def test_a_held_palace_cannot_be_opened_twice(tmp_path: Path) -> None:
    url = f"surrealkv://{tmp_path / 'db'}?sync=every"
    first = Store(url, palace_path=tmp_path)
    first.open()
    try:
        second = Store(url, palace_path=tmp_path)
        with pytest.raises(StoreFailed) as caught:
            second.open()
        assert caught.value.code == "memcastle::store::backend_failed"
        assert str(tmp_path) in caught.value.message
        assert "daemon probably holds it" in caught.value.message
    finally:
        first.close()


def test_a_palace_gives_back_its_memory_and_goes_on_answering(tmp_path: Path) -> None:
    """`release_memory` opens the engine again while other threads query it: each of their
    queries is answered, before, between and after the releases, and every write stays."""
    store = Store(f"surrealkv://{tmp_path / 'db'}?sync=every", palace_path=tmp_path)
    store.open()
    answered = [0] * 4
    failures: list[Exception] = []
    stop = threading.Event()

    def ask(thread: int) -> None:
        while not stop.is_set():
            try:
                assert store.one("SELECT VALUE name FROM wing:kept") == ["kept"]
            except Exception as exc:
                failures.append(exc)
                return
            answered[thread] += 1

    try:
        store.query("CREATE wing:kept SET name = 'kept'")
        askers = [threading.Thread(target=ask, args=(n,)) for n in range(4)]
        for asker in askers:
            asker.start()
        for _ in range(3):
            before = list(answered)
            store.release_memory()
            wait_for(
                lambda before=before: all(a > b for a, b in zip(answered, before, strict=True)),
                timeout=30,
                what="every thread to be answered again",
            )
        stop.set()
        for asker in askers:
            asker.join(timeout=30)
        assert failures == []
        store.query("CREATE wing:after SET name = 'after'")
        assert sorted(store.one("SELECT VALUE name FROM wing")) == ["after", "kept"]
    finally:
        stop.set()
        store.close()


def test_a_palace_in_memory_keeps_its_data_when_asked_for_memory() -> None:
    """Opening `mem://` again would empty it: it is left as it is."""
    store = Store("mem://")
    store.open()
    try:
        store.query("CREATE wing:kept SET name = 'kept'")
        store.release_memory()
        assert store.one("SELECT VALUE name FROM wing") == ["kept"]
    finally:
        store.close()


def test_a_closed_palace_opens_again_with_its_data(tmp_path: Path) -> None:
    url = f"surrealkv://{tmp_path / 'db'}?sync=every"
    first = Store(url, palace_path=tmp_path)
    first.open()
    first.migrate()
    first.query("CREATE wing:kept SET name = 'kept'")
    first.close()
    again = Store(url, palace_path=tmp_path)
    again.open()
    try:
        assert again.one("SELECT VALUE name FROM wing") == ["kept"]
        assert again.migration_state().pending == 0
    finally:
        again.close()


# A writer that reports each committed write, then is killed with SIGKILL by the test.
KILLED_WRITER = """
import sys
from kernel.store import Store
store = Store(sys.argv[1])
store.open()
for n in range(int(sys.argv[2])):
    store.one("CREATE ONLY type::record('item', $n) CONTENT {pad: $pad} RETURN NONE",
              {"n": n, "pad": "x" * 20000})
print("written", flush=True)
sys.stdin.read()
"""


def test_opening_a_killed_palace_writes_its_log_out(tmp_path: Path) -> None:
    """The engine recovers a killed process's writes from its write-ahead log, and can lose a
    later process's when it is killed in turn while that log is large (kernel/store.py): so
    opening writes the recovered log out, and the log starts empty."""
    db = tmp_path / "db"
    url = f"surrealkv://{db}?sync=every"
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, url, "500"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "written"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    logged = sum(f.stat().st_size for f in (db / "wal").iterdir())
    assert logged > 10_000_000, "the killed writer's writes are not in its log"

    store = Store(url, palace_path=tmp_path)
    store.open()
    try:
        assert store.one("SELECT count() FROM item GROUP ALL") == [{"count": 500}]
        assert sum(f.stat().st_size for f in (db / "wal").iterdir()) < 1_000_000
    finally:
        store.close()


def test_the_engine_still_misorders_whole_seconds_in_index_scans(store: Store) -> None:
    """Why `kernel.clock` never records a whole second (surrealdb/surrealdb#7493).

    When this fails, the engine collates datetimes correctly and the clock's nudge can go.
    """
    store.query("DEFINE TABLE probe SCHEMALESS; DEFINE INDEX probe_at ON probe FIELDS k, at")
    base = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    for name, at in (("whole", base), ("later", base + dt.timedelta(microseconds=1))):
        store.query(
            "CREATE type::record('probe', $name) CONTENT {k: 1, at: $at}", {"name": name, "at": at}
        )
    in_index_order = store.one("SELECT VALUE record::id(id) FROM probe WHERE k = 1 ORDER BY at")
    assert in_index_order == ["later", "whole"]


def test_the_clock_never_records_a_whole_second() -> None:
    whole = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    assert clock.off_whole_second(whole) == whole + dt.timedelta(microseconds=1)
    later = whole + dt.timedelta(microseconds=7)
    assert clock.off_whole_second(later) == later
