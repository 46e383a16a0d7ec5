"""SurrealQL for the search indexes: what a rebuild scans and what following the store reads.
The only module of `palace.search` that talks to the store."""

from __future__ import annotations

from typing import Any

from surrealdb import RecordID

from kernel.store import Store

# A drawer as the indexes hold it (`palace.search.indexes.indexed`).
DRAWER_FIELDS = (
    "id, wing, room, content, tags, source.kind AS source_kind, valid_from, valid_to, "
    "source.uri AS source_uri, source.origin.chunk AS chunk, created_at"
)
# What orders a conversation's turns (`palace.search.turns`).
TURN_FIELDS = "id, valid_from, created_at, source.origin.chunk AS chunk"


class SearchRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def release_memory(self) -> None:
        """Have the embedded engine give back what it holds of a whole palace read at opening
        (`Store.release_memory`)."""
        self.store.release_memory()

    def drawer_count(self) -> int:
        """Every drawer, counted by a scan (a rebuild's progress, and the check that the
        indexes hold as many as the store)."""
        counted = self.store.one("SELECT count() AS n FROM drawer GROUP ALL")
        return counted[0]["n"] if counted else 0

    def drawers(self, offset: int, limit: int) -> list[dict[str, Any]]:
        """A page of every drawer, in the store's order."""
        return self.store.one(f"SELECT {DRAWER_FIELDS} FROM drawer START {offset} LIMIT {limit}")

    def drawers_by_ids(self, ids: list[str]) -> list[dict[str, Any]]:
        """The drawers of `ids` that exist, as a scan reads them."""
        return self.store.one(
            f"SELECT {DRAWER_FIELDS} FROM $ids",
            {"ids": [RecordID("drawer", drawer_id) for drawer_id in ids]},
        )

    def conversations(self, keys: list[tuple[str, str]]) -> list[list[dict[str, Any]]]:
        """For each `(room, uri)`, the drawers of that room filed with that source uri: what
        orders them, not their text. One round trip; each conversation is read through the
        `drawer_room_uri` index (an `IN` over several uris would read the whole room)."""
        selects = ", ".join(
            f"(SELECT {TURN_FIELDS} FROM drawer WHERE room = $room{i} AND source.uri = $uri{i})"
            for i in range(len(keys))
        )
        values: dict[str, Any] = {}
        for i, (room, uri) in enumerate(keys):
            values[f"room{i}"], values[f"uri{i}"] = room, uri
        return self.store.one(f"RETURN [{selects}]", values)

    def vectors(self, profile: str, drawer_ids: list[str]) -> list[dict[str, Any]]:
        """The stored vectors of `profile` of those of `drawer_ids` that have one, read by
        their record ids. (A page of the table by `START` read every row before it again:
        8 s for a page near the end of 100,000 vectors, quadratic over a rebuild.)"""
        return self.store.one(
            "SELECT drawer, profile, vectors, provenance FROM $ids",
            {"ids": [RecordID("embedding", [drawer_id, profile]) for drawer_id in drawer_ids]},
        )

    def changes(self, since: int, limit: int) -> list[tuple[int, str, str, dict[str, Any]]]:
        """The change feed from versionstamp `since` on: `(versionstamp, table, action,
        record)`, at most `limit` of them."""
        return self.store.changes(since, limit)
