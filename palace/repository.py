"""SurrealQL for wings, rooms and drawers. The only module of the palace that talks to the store.

Rows come back as plain dicts whose `id` is the record key (a UUID string). Counts are read by
key from the `wing_rooms`, `room_tally` and `wing_tally` aggregate tables that the database
maintains from `room` and `drawer` (see schema 0001), never by paging rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from surrealdb import RecordID

from memcastle_project.store import Store

WING_FIELDS = "id, name, description, created_at"
ROOM_FIELDS = "id, wing, name, description, created_at"
DRAWER_LISTING_FIELDS = (
    "id, wing, room, name, tags, source, valid_from, valid_to, supersedes, superseded_by, "
    "created_at, string::slice(content, 0, 130) AS head, string::len(content) AS length"
)


class PalaceRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    # Wings

    def wing_by_name(self, name: str) -> dict[str, Any] | None:
        rows = self.store.one(f"SELECT {WING_FIELDS} FROM wing WHERE name = $name", {"name": name})
        return rows[0] if rows else None

    def wing_by_id(self, wing_id: str) -> dict[str, Any] | None:
        return self.store.one(
            f"SELECT {WING_FIELDS} FROM ONLY type::record('wing', $id)", {"id": wing_id}
        )

    def list_wings(self) -> list[dict[str, Any]]:
        return self.store.one(f"SELECT {WING_FIELDS} FROM wing ORDER BY name")

    def create_wing(self, record: dict[str, Any]) -> dict[str, Any]:
        """Raises `UniqueViolation` when the name is taken."""
        return self.store.one(
            f"CREATE ONLY type::record('wing', $id) CONTENT $record RETURN {WING_FIELDS}",
            {"id": record["id"], "record": {k: v for k, v in record.items() if k != "id"}},
        )

    def wing_counts(self, wing_ids: Iterable[str]) -> dict[str, dict[str, int]]:
        """`{wing_id: {rooms, drawers}}` for the given wings, in one round trip."""
        ids = list(wing_ids)
        if not ids:
            return {}
        rooms, tallies = self.store.query(
            "SELECT wing, rooms FROM $rooms; SELECT wing, drawers FROM $tallies;",
            {
                "rooms": [RecordID("wing_rooms", [wing_id]) for wing_id in ids],
                "tallies": [RecordID("wing_tally", [wing_id]) for wing_id in ids],
            },
        )
        counts = {wing_id: {"rooms": 0, "drawers": 0} for wing_id in ids}
        for row in rooms:
            counts[row["wing"]]["rooms"] = row["rooms"]
        for row in tallies:
            counts[row["wing"]]["drawers"] = row["drawers"]
        return counts

    def delete_wing(self, wing_id: str) -> dict[str, int]:
        """Drawers, rooms and the wing, in one transaction."""
        return self.store.transaction(
            "LET $rooms = count((SELECT VALUE id FROM room WHERE wing = $wing));"
            "LET $drawers = count((SELECT VALUE id FROM drawer WHERE wing = $wing));"
            "DELETE drawer WHERE wing = $wing;"
            "DELETE room WHERE wing = $wing;"
            "DELETE type::record('wing', $wing);"
            "RETURN {wings: 1, rooms: $rooms, drawers: $drawers};",
            {"wing": wing_id},
        )

    # Rooms

    def room_by_name(self, wing_id: str, name: str) -> dict[str, Any] | None:
        rows = self.store.one(
            f"SELECT {ROOM_FIELDS} FROM room WHERE wing = $wing AND name = $name",
            {"wing": wing_id, "name": name},
        )
        return rows[0] if rows else None

    def room_by_id(self, room_id: str) -> dict[str, Any] | None:
        return self.store.one(
            f"SELECT {ROOM_FIELDS} FROM ONLY type::record('room', $id)", {"id": room_id}
        )

    def list_rooms(self, wing_id: str) -> list[dict[str, Any]]:
        return self.store.one(
            f"SELECT {ROOM_FIELDS} FROM room WHERE wing = $wing ORDER BY name", {"wing": wing_id}
        )

    def create_room(self, record: dict[str, Any]) -> dict[str, Any]:
        """Raises `UniqueViolation` when the wing already has a room of that name."""
        return self.store.one(
            f"CREATE ONLY type::record('room', $id) CONTENT $record RETURN {ROOM_FIELDS}",
            {"id": record["id"], "record": {k: v for k, v in record.items() if k != "id"}},
        )

    def room_drawer_counts(self, wing_id: str, room_ids: Iterable[str]) -> dict[str, int]:
        ids = list(room_ids)
        if not ids:
            return {}
        rows = self.store.one(
            "SELECT room, drawers FROM $tallies",
            {"tallies": [RecordID("room_tally", [wing_id, room_id]) for room_id in ids]},
        )
        counts = dict.fromkeys(ids, 0)
        for row in rows:
            counts[row["room"]] = row["drawers"]
        return counts

    def delete_room(self, room_id: str) -> dict[str, int]:
        return self.store.transaction(
            "LET $drawers = count((SELECT VALUE id FROM drawer WHERE room = $room));"
            "DELETE drawer WHERE room = $room;"
            "DELETE type::record('room', $room);"
            "RETURN {wings: 0, rooms: 1, drawers: $drawers};",
            {"room": room_id},
        )

    # Drawers

    def drawer_by_id(self, drawer_id: str) -> dict[str, Any] | None:
        return self.store.one("SELECT * FROM ONLY type::record('drawer', $id)", {"id": drawer_id})

    def drawer_by_name(self, room_id: str, name: str) -> dict[str, Any] | None:
        rows = self.store.one(
            "SELECT * FROM drawer WHERE room = $room AND name = $name",
            {"room": room_id, "name": name},
        )
        return rows[0] if rows else None

    def drawer_at(self, wing: str, room: str, name: str) -> dict[str, Any] | None:
        """The drawer at `wing/room/name`, all three by name, in one round trip."""
        rows = self.store.query(
            "LET $w = (SELECT VALUE meta::id(id) FROM wing WHERE name = $wing)[0];"
            "LET $r = (SELECT VALUE meta::id(id) FROM room WHERE wing = $w AND name = $room)[0];"
            "SELECT * FROM drawer WHERE room = $r AND name = $name;",
            {"wing": wing, "room": room, "name": name},
        )[-1]
        return rows[0] if rows else None

    def current_drawer_with_hash(self, room_id: str, digest: str) -> dict[str, Any] | None:
        """A drawer of this room with exactly this content that is valid now."""
        rows = self.store.one(
            "SELECT * FROM drawer WHERE room = $room AND content_hash = $hash "
            "AND (valid_to = NONE OR valid_to > time::now()) ORDER BY created_at LIMIT 1",
            {"room": room_id, "hash": digest},
        )
        return rows[0] if rows else None

    def list_drawers(self, room_id: str, *, limit: int, offset: int) -> list[dict[str, Any]]:
        return self.store.one(
            f"SELECT {DRAWER_LISTING_FIELDS} FROM drawer WHERE room = $room "
            "ORDER BY created_at, id LIMIT $limit START $offset",
            {"room": room_id, "limit": limit, "offset": offset},
        )

    def create_drawer(self, record: dict[str, Any]) -> dict[str, Any]:
        """Raises `UniqueViolation` when the room has a drawer of that name."""
        return self.store.one(
            "CREATE ONLY type::record('drawer', $id) CONTENT $record RETURN AFTER",
            {"id": record["id"], "record": {k: v for k, v in record.items() if k != "id"}},
        )

    def delete_drawer(self, drawer_id: str) -> None:
        self.store.query("DELETE type::record('drawer', $id)", {"id": drawer_id})

    def drawer_total(self) -> int:
        wing_ids = self.store.one("SELECT VALUE meta::id(id) FROM wing")
        return sum(counts["drawers"] for counts in self.wing_counts(wing_ids).values())
