"""The derived search indexes, and how they stay in step with the store.

SurrealDB is the system of record; the indexes are an accelerator that can always be rebuilt
from it (docs/search.md, "How it stays fast"). They follow the database's change feed: every
change to a drawer or an embedding has a monotonic versionstamp, and each index remembers the
last one it applied (its watermark). So:

- after a write, the next search (or the follower thread, within a quarter second) reads the
  feed from the watermark on and applies what it finds;
- at start-up each index is opened and brought forward from its watermark; one that is
  missing, unreadable or of another version is rebuilt from the store. The daemon rebuilds a
  large palace's indexes in the background while it serves, and search answers 503 until
  they are done (a rebuild takes about 40 s at 100,000 drawers, minutes with vectors);
- a `kill -9` loses at most what was applied since an index last saved its watermark, and that
  is read again from the feed (applying a change twice gives the same index). A watermark is
  written only after the index it describes is on disk.

On disk, under `<palace>/search/`: `lexical/` (tantivy) with `lexical.json`, and
`snapshot.pickle`: the catalog and the vectors, saved every few minutes and at shutdown.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import pickle
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kernel.errors import MemCastleError, StoreFailed
from palace.drawers import read_source
from palace.search import speakers, turns
from palace.search.catalog import Catalog
from palace.search.chatter import is_chatter
from palace.search.lexical import SCHEMA_VERSION, LexicalIndex
from palace.search.query import held_ns
from palace.search.repository import SearchRepository
from palace.search.scope import OPEN
from palace.search.vectors import VectorIndex

logger = logging.getLogger(__name__)

# 2: the catalog says which drawers are chatter; 3: who speaks in them. An older snapshot is
# rebuilt.
SNAPSHOT_VERSION = 3
FEED_PAGE = 1000
SCAN_PAGE = 2000
# Changes written while a rebuild scans the store are read again from the feed, from this long
# before the scan began.
REBUILD_MARGIN_MS = 60_000
FOLLOW_INTERVAL_SECS = 0.25
# Conversations a page of the feed touched, read from the store in one round trip.
CONVERSATIONS_AT_ONCE = 200
SNAPSHOT_EVERY_SECS = 300.0
SNAPSHOT_EVERY_CHANGES = 20_000
# A rebuild of a palace this large runs while the daemon serves; a smaller one (under a few
# seconds) before it does, so a search right after start-up is always answered.
BACKGROUND_REBUILD_DRAWERS = 20_000
# How long the start of a large palace waits for indexes found on disk to catch up with the
# feed before it serves anyway: usually a few changes, but drawers written while no daemon
# followed (a bulk load, a restore) can take minutes to read, which the CLI would not wait for.
START_CATCH_UP_SECS = 5.0


class IndexesBuilding(MemCastleError):
    """A search while the daemon rebuilds its indexes, or catches them up, at start-up."""

    status = 503
    code = "memcastle::search::indexing"
    help = "search again in a moment: GET /api/status shows the progress (search.state)"
    # A client polling through a rebuild logged an ERROR line a request (453 in 4.5 minutes).
    expected = True


class _Stopped(Exception):
    """The daemon stopped while the indexes were opening; the next start goes on from the
    watermarks (a rebuild starts again)."""


def indexed(drawer: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a drawer the indexes hold, validity in nanoseconds, from a drawer as the
    feed carries it or as a scan reads it (`DRAWER_FIELDS`); with its conversation, if any, and
    its place in it (`palace.search.turns`)."""
    source = drawer.get("source")
    if "source_kind" in drawer:
        kind, uri, chunk = drawer["source_kind"], drawer.get("source_uri"), drawer.get("chunk")
    else:
        stored = source if isinstance(source, Mapping) else {}
        kind, uri, chunk = stored.get("kind"), stored.get("uri"), stored.get("origin")
    valid_to = drawer.get("valid_to")
    valid_from = held_ns(_instant(drawer["valid_from"]))
    content = drawer.get("content") or ""
    return {
        "id": drawer["id"],
        "wing": drawer["wing"],
        "room": drawer["room"],
        "content": content,
        "chatter": is_chatter(content),
        "voices": speakers.voices(content),
        "tags": list(drawer.get("tags") or []),
        "source_kind": read_source({"kind": kind} if "source_kind" in drawer else source)["kind"],
        "valid_from": valid_from,
        "valid_to": OPEN if valid_to is None else held_ns(_instant(valid_to)),
        "conversation": turns.conversation(drawer["room"], uri),
        "order": _order(drawer, valid_from, chunk),
    }


def _turn_order(row: Mapping[str, Any]) -> turns.Order:
    """The place of a drawer as `SearchRepository.conversations` reads it."""
    return _order(row, held_ns(_instant(row["valid_from"])), row.get("chunk"))


def _order(drawer: Mapping[str, Any], valid_from: int, chunk: object) -> turns.Order:
    created_at = drawer.get("created_at")
    filed = held_ns(_instant(created_at)) if created_at is not None else 0
    return valid_from, filed, turns.chunk_index(chunk), drawer["id"]


def _instant(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC)
    return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))


class SearchIndexes:
    """The lexical index, the catalog and one vector index per embedding profile.

    `profiles` maps each configured profile's name to its dimensions: vectors of other
    profiles, or of another length, are not indexed."""

    def __init__(
        self, repository: SearchRepository, directory: Path, profiles: Mapping[str, int]
    ) -> None:
        self._repository = repository
        self.directory = directory
        self.profiles = dict(profiles)
        self.lock = threading.RLock()
        self.catalog = Catalog()
        self.vectors = {name: VectorIndex(size) for name, size in self.profiles.items()}
        self.lexical: LexicalIndex | None = None
        self.lexical_mark = 0
        self.snapshot_mark = 0
        self._unsaved = 0
        self._saved_at = time.monotonic()
        # One snapshot written at a time, outside `lock` (`_write_snapshot`). States are
        # numbered as they are taken, so that an older one never replaces a newer one.
        self._writing = threading.Lock()
        self._taken = 0
        self._written = 0
        self._stop = threading.Event()
        self._follower: threading.Thread | None = None
        # False only while `start` opens in the background; read without the lock.
        self.ready = True
        self._opened = threading.Event()
        self._rebuilding = False
        self._rebuilt = 0
        self._to_rebuild = 0
        self._changes_read = 0
        # Changes passed over because the indexes could not apply them (`_apply_or_skip`).
        self._skipped = 0
        # The conversation turns a page of the feed filed or changed, and the drawers it
        # deleted: indexed with their neighbours once the page is read (`_index_turns`).
        self._turns: dict[str, dict[str, Any]] = {}
        self._deleted: set[str] = set()
        self._beside_deleted: set[str] = set()

    # Opening -----------------------------------------------------------------------------

    def open(self) -> None:
        """Open or rebuild each index, then bring them all up to the feed's end."""
        with self.lock:
            self._finish_opening(*self._load())

    def start(self) -> None:
        """Open the indexes and follow the store, for the daemon. A palace of
        `BACKGROUND_REBUILD_DRAWERS` or more is opened by the follower thread while the daemon
        serves: a rebuild at once, a catch-up of indexes found on disk after at most
        `START_CATCH_UP_SECS`; until it is done, `refresh` refuses."""
        with self.lock:
            loaded = self._load()
            if self._repository.drawer_count() < BACKGROUND_REBUILD_DRAWERS:
                self._finish_opening(*loaded)
                self.start_following()
                return
            self.ready = False
        self._follow_in_background(lambda: self._open_then_follow(*loaded))
        if all(loaded):
            self._opened.wait(START_CATCH_UP_SECS)

    def _load(self) -> tuple[bool, bool]:
        """Open what is on disk: whether the lexical index and the snapshot could be used."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return self._open_lexical(), self._load_snapshot()

    def _finish_opening(self, lexical_ok: bool, snapshot_ok: bool) -> None:
        if not (lexical_ok and snapshot_ok):
            self._rebuild(lexical=not lexical_ok, snapshot=not snapshot_ok)
        try:
            self._catch_up()
        except ValueError as exc:
            # tantivy refused to commit to the index found on disk: a kill in the middle of a
            # commit can leave a file the next commit wants to create ("FileAlreadyExists",
            # bench/chaos.py --remote). The index is derived: it is read again from the store.
            logger.warning("the lexical index could not be written (%s): rebuilding it", exc)
            self._rebuild(lexical=True, snapshot=False)
            self._catch_up()
        if not self._consistent():
            logger.warning("search indexes disagree with the store: rebuilding them")
            self._rebuild(lexical=True, snapshot=True)
            self._catch_up()
        self._save_snapshot()

    def _open_then_follow(self, lexical_ok: bool, snapshot_ok: bool) -> None:
        try:
            with self.lock:
                self._finish_opening(lexical_ok, snapshot_ok)
                # Opening a large palace read every drawer (the count that checks the indexes,
                # and a rebuild every vector too), which the embedded engine would otherwise
                # hold for the daemon's life: 1.45 GiB of a million drawers, some 11 GiB after
                # a rebuild (docs/benchmarks.md, "A million drawers").
                self._repository.release_memory()
                self.ready = True
                self._opened.set()
        except _Stopped:
            logger.info("opening the search indexes stopped with the daemon")
            return
        self._follow()

    def _open_lexical(self) -> bool:
        path = self.directory / "lexical"
        mark = _read_json(self.directory / "lexical.json")
        if mark is not None and mark.get("version") == SCHEMA_VERSION and path.is_dir():
            try:
                self.lexical = LexicalIndex(path)
                self.lexical_mark = int(mark["watermark"])
                return True
            except (ValueError, OSError, KeyError) as exc:
                logger.warning("the lexical index could not be opened (%s): rebuilding it", exc)
        self.lexical = LexicalIndex.fresh(path)
        return False

    def _load_snapshot(self) -> bool:
        path = self.directory / "snapshot.pickle"
        try:
            with path.open("rb") as handle:
                state = pickle.load(handle)
        except FileNotFoundError:
            return False
        except Exception as exc:  # a torn or foreign file is rebuilt, whatever broke it
            logger.warning("the search snapshot could not be read (%s): rebuilding it", exc)
            return False
        if state.get("version") != SNAPSHOT_VERSION or state.get("profiles") != self.profiles:
            return False
        self.catalog = Catalog.restore(state["catalog"])
        self.vectors = {
            name: VectorIndex.restore(vectors) for name, vectors in state["vectors"].items()
        }
        self.snapshot_mark = int(state["watermark"])
        return True

    def _rebuild(self, *, lexical: bool, snapshot: bool) -> None:
        started = time.monotonic()
        mark = max(0, (time.time_ns() // 1_000_000 - REBUILD_MARGIN_MS) << 16)
        fresh = None
        if lexical:
            assert self.lexical is not None
            fresh = self.lexical = LexicalIndex.fresh(self.lexical.path)
            self.lexical_mark = mark
        if snapshot:
            self.catalog = Catalog()
            self.vectors = {name: VectorIndex(size) for name, size in self.profiles.items()}
            self.snapshot_mark = mark
        self._rebuilt = 0
        self._to_rebuild = self._repository.drawer_count()
        self._rebuilding = True
        # The turns of conversations wait for the whole scan: a turn is indexed with the one
        # before it, wherever the store's order put that one.
        conversations: dict[turns.Conversation, list[dict[str, Any]]] = {}
        drawer_ids: list[str] = []
        for page in self._scan(self._repository.drawers):
            for row in page:
                fields = indexed(row)
                if fresh is not None and fields["conversation"] is None:
                    fresh.put(fields)
                elif fresh is not None:
                    conversations.setdefault(fields["conversation"], []).append(fields)
                if snapshot:
                    self.catalog.put(fields)
                drawer_ids.append(fields["id"])
            self._rebuilt = len(drawer_ids)
        if fresh is not None:
            for members in conversations.values():
                for turn, before, answered in turns.in_order(members):
                    fresh.put(turn, before, answered=answered)
            fresh.commit()
            self._write_lexical_mark()
        if snapshot:
            for name in self.profiles:
                for start in range(0, len(drawer_ids), SCAN_PAGE):
                    if self._stop.is_set():
                        raise _Stopped
                    ids = drawer_ids[start : start + SCAN_PAGE]
                    for row in self._repository.vectors(name, ids):
                        self._put_vectors(row)
        self._rebuilding = False
        logger.info(
            "search indexes rebuilt from %d drawers in %.1f s (lexical %s, snapshot %s)",
            len(drawer_ids),
            time.monotonic() - started,
            lexical,
            snapshot,
        )

    def _scan(
        self, read: Callable[[int, int], list[dict[str, Any]]]
    ) -> Iterator[list[dict[str, Any]]]:
        """The pages `read(offset, limit)` returns, until an empty one; stops with the
        daemon."""
        offset = 0
        while True:
            if self._stop.is_set():
                raise _Stopped
            page = read(offset, SCAN_PAGE)
            if not page:
                return
            yield page
            offset += len(page)

    def _consistent(self) -> bool:
        """Whether the indexes hold as many drawers as the store: a cheap check that a feed
        that no longer reaches back to a watermark did not leave a hole."""
        stored = self._repository.drawer_count()
        assert self.lexical is not None
        return self.catalog.live == stored and self.lexical.size == stored

    # Following the feed ------------------------------------------------------------------

    def refresh(self) -> None:
        """Apply every change the indexes have not seen yet (opening them first, in a process
        that has not: a management command, a test). Refused while the daemon opens them in
        the background, without waiting for that work's lock: the request thread serves every
        route."""
        if not self.ready:
            raise IndexesBuilding(self._opening_progress())
        with self.lock:
            if self.lexical is None:
                self.open()
            self._catch_up()
            # Not while another is written: this search would wait for it; the next catch-up
            # finds it due again.
            due = (
                self._unsaved
                and not self._writing.locked()
                and (
                    self._unsaved >= SNAPSHOT_EVERY_CHANGES
                    or time.monotonic() - self._saved_at >= SNAPSHOT_EVERY_SECS
                )
            )
            taken = self._snapshot_state() if due else None
        if taken is None:
            return
        # Written without the lock: searches go on meanwhile (14.8 s for a million drawers'
        # snapshot, docs/benchmarks.md "A million drawers").
        try:
            self._write_snapshot(*taken)
        except BaseException:
            with self.lock:  # due again at the next catch-up
                self._unsaved = max(self._unsaved, 1)
                self._saved_at = float("-inf")
            raise

    def _catch_up(self) -> None:
        assert self.lexical is not None
        since = min(self.lexical_mark, self.snapshot_mark) + 1
        while True:
            if self._stop.is_set():
                raise _Stopped
            changes = self._repository.changes(since, FEED_PAGE)
            if not changes:
                break
            for versionstamp, table, action, record in changes:
                self._apply_or_skip(versionstamp, table, action, record)
            self._index_turns()
            self._changes_read += len(changes)
            last = changes[-1][0]
            since = last + 1
            # The lexical watermark moves only once its changes are committed to disk.
            self.lexical.commit()
            if last > self.lexical_mark:
                self.lexical_mark = last
                self._write_lexical_mark()
            self.snapshot_mark = max(self.snapshot_mark, last)

    def _apply_or_skip(
        self, versionstamp: int, table: str, action: str, record: dict[str, Any]
    ) -> None:
        """Apply one change; one the indexes cannot take is logged and passed over, so one odd
        record costs the search of that record, not of the palace (before, every later search
        failed on it, after a restart too)."""
        try:
            self._apply(versionstamp, table, action, record)
        except Exception:
            self._skipped += 1
            logger.exception(
                "the search indexes passed over a change they could not apply "
                "(versionstamp %d, %s %s of %s): it is not searchable until the indexes are "
                "rebuilt (remove <palace>/search and restart)",
                versionstamp,
                table,
                action,
                record.get("id"),
            )

    def _apply(self, versionstamp: int, table: str, action: str, record: dict[str, Any]) -> None:
        assert self.lexical is not None
        to_lexical = versionstamp > self.lexical_mark
        to_snapshot = versionstamp > self.snapshot_mark
        if table == "drawer":
            if action == "delete":
                if to_lexical:
                    self._remove_turn(record["id"])
                if to_snapshot:
                    self._remove_drawer(record["id"])
            else:
                fields = indexed(record)
                if to_lexical and fields["conversation"] is None:
                    self.lexical.put(fields)
                elif to_lexical:
                    self._turns[fields["id"]] = fields
                if to_snapshot:
                    self.catalog.put(fields)
        elif table == "embedding" and to_snapshot:
            if action == "delete":
                drawer_id, profile = record["id"]
                if profile in self.vectors and drawer_id in self.catalog.rows:
                    self.vectors[profile].remove(self.catalog.rows[drawer_id])
            else:
                self._put_vectors(record)
        if to_snapshot:
            self._unsaved += 1

    def _remove_turn(self, drawer_id: str) -> None:
        """Remove a drawer from the lexical index; the turns on each side of it are indexed
        again with the page (`_index_turns`)."""
        assert self.lexical is not None
        before = self.lexical.preceding(drawer_id)
        if before is not None:
            self._beside_deleted.add(before)
        self.lexical.remove(drawer_id)
        self._turns.pop(drawer_id, None)
        self._deleted.add(drawer_id)

    def _index_turns(self) -> None:
        """Index the turns of conversations a page of the feed filed or changed, each with the
        turn before it, and the turns after them again; and the turns that followed a deleted
        drawer. A conversation is read from the store (what orders it, then the text of the
        few drawers needed), not from the page: its other turns were filed before."""
        assert self.lexical is not None
        changed, beside = self._turns, self._beside_deleted
        self._turns, self._beside_deleted = {}, set()
        if self._deleted:
            beside.update(self.lexical.followers(sorted(self._deleted)))
            self._deleted = set()
        try:
            self._place_turns(changed, beside)
        except StoreFailed:
            raise  # the page is read again from the feed, its turns with it
        except Exception:
            # As `_apply_or_skip`: one conversation the indexes cannot place costs its turns
            # their context, not the following of the store.
            self._skipped += 1
            logger.exception("turns indexed without their context: their places were unreadable")
            for fields in changed.values():
                self.lexical.put(fields)

    def _place_turns(self, changed: dict[str, dict[str, Any]], beside: set[str]) -> None:
        assert self.lexical is not None
        unread = sorted(beside - changed.keys())
        for row in self._repository.drawers_by_ids(unread) if unread else []:
            fields = indexed(row)
            changed[fields["id"]] = fields
        by_conversation: dict[turns.Conversation, set[str]] = {}
        for fields in changed.values():
            if fields["conversation"] is not None:
                by_conversation.setdefault(fields["conversation"], set()).add(fields["id"])
        keys = sorted(by_conversation)
        for start in range(0, len(keys), CONVERSATIONS_AT_ONCE):
            chunk = keys[start : start + CONVERSATIONS_AT_ONCE]
            places: dict[str, turns.Place] = {}
            for key, rows in zip(chunk, self._repository.conversations(chunk), strict=True):
                members = [(_turn_order(row), row["id"]) for row in rows]
                places.update(turns.to_index(members, by_conversation[key]))
            needed = {*places, *(place.before for place in places.values() if place.before)}
            unread = sorted(needed - changed.keys())
            for row in self._repository.drawers_by_ids(unread) if unread else []:
                changed[row["id"]] = indexed(row)
            for drawer_id, (before, answered) in places.items():
                if drawer_id in changed:
                    before_fields = changed.get(before) if before else None
                    self.lexical.put(changed[drawer_id], before_fields, answered=answered)

    def _remove_drawer(self, drawer_id: str) -> None:
        row = self.catalog.rows.get(drawer_id)
        if row is None:
            return
        self.catalog.remove(drawer_id)
        for vectors in self.vectors.values():
            vectors.remove(row)

    def _put_vectors(self, record: Mapping[str, Any]) -> None:
        profile = record.get("profile")
        index = self.vectors.get(profile) if isinstance(profile, str) else None
        vectors = record.get("vectors") or []
        if index is None or not vectors or any(len(v) != index.dimensions for v in vectors):
            return
        index.put(self.catalog.row(record["drawer"]), vectors)

    # Saving ------------------------------------------------------------------------------

    def _write_lexical_mark(self) -> None:
        mark = {"version": SCHEMA_VERSION, "watermark": self.lexical_mark}
        _write_atomically(self.directory / "lexical.json", json.dumps(mark).encode())

    def _save_snapshot(self) -> None:
        """Save now, under the lock (opening, closing)."""
        self._write_snapshot(*self._snapshot_state())

    def _snapshot_state(self) -> tuple[int, dict[str, Any]]:
        """What a snapshot holds, as of now, and its number: taken under the lock, then the
        indexes' own arrays may change while it is written (`Catalog.state`,
        `VectorIndex.state`)."""
        state = {
            "version": SNAPSHOT_VERSION,
            "watermark": self.snapshot_mark,
            "profiles": self.profiles,
            "catalog": self.catalog.state(),
            "vectors": {name: index.state() for name, index in self.vectors.items()},
        }
        self._unsaved = 0
        self._saved_at = time.monotonic()
        self._taken += 1
        return self._taken, state

    def _write_snapshot(self, number: int, state: dict[str, Any]) -> None:
        with self._writing:
            if number < self._written:
                return
            _write_atomically(
                self.directory / "snapshot.pickle",
                pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL),
            )
            self._written = number

    # The follower thread -----------------------------------------------------------------

    def start_following(self) -> None:
        """Apply changes in the background too, so a search after a large write does not
        wait for all of it (and, on a shared remote store, other daemons' writes arrive)."""
        self._follow_in_background(self._follow)

    def _follow_in_background(self, target: Callable[[], None]) -> None:
        self._follower = threading.Thread(target=target, name="search-follower", daemon=True)
        self._follower.start()

    def _follow(self) -> None:
        while not self._stop.wait(FOLLOW_INTERVAL_SECS):
            try:
                self.refresh()
            except _Stopped:
                return
            except Exception:
                logger.exception("the search indexes could not follow the store")

    def close(self) -> None:
        """Stop following and save; a rebuild in progress stops at its next page and is not
        saved (the next start rebuilds)."""
        self._stop.set()
        if self._follower is not None:
            self._follower.join(timeout=10)
        with self.lock:
            if self.lexical is None:
                return
            if self.ready:
                self.lexical.commit()
            self.lexical.close()
            self.lexical = None
            if self.ready:
                self._save_snapshot()

    def _opening_progress(self) -> str:
        if self._rebuilding:
            return (
                f"the search indexes are being rebuilt ({self._rebuilt:,} of "
                f"{self._to_rebuild:,} drawers read)"
            )
        return (
            "the search indexes are catching up with drawers written while no daemon followed "
            f"the store ({self._changes_read:,} changes read)"
        )

    def status(self) -> dict[str, Any]:
        """What the status report says of the indexes (without waiting for a catch-up, nor
        for a rebuild)."""
        if not self.ready and self._rebuilding:
            return {"state": "rebuilding", "drawers_read": self._rebuilt, "of": self._to_rebuild}
        if not self.ready:
            return {"state": "catching_up", "changes_read": self._changes_read}
        with self.lock:
            return {
                "state": "ready",
                "drawers": self.catalog.live,
                "vectors": {name: len(index) for name, index in self.vectors.items()},
                "watermark": min(self.lexical_mark, self.snapshot_mark),
                "skipped": self._skipped,
            }


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary file, flush it to disk, then rename over `path`: a reader sees the
    old file or the new one, never half of one."""
    temporary = path.with_suffix(path.suffix + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
