"""SurrealQL for wings, rooms and the drawers they hold, as the hierarchy reads and deletes them.

On an embedded palace counts are read by key from the `wing_rooms`, `room_tally` and `wing_tally`
aggregate tables that the database maintains from `room` and `drawer` (see schema 0001), never by
paging rows. On a remote palace they are counted through the indexes instead: the engine keeps
aggregate views a little low when several processes write one palace at once (24 connections
filing 2,400 drawers into one room left `room_tally` 3-6 short), and a room's listing pages by
its count (docs/benchmarks.md, "Crash safety"). An embedded palace has one writing process,
whose queries the SDK runs one at a time, so its views stay exact.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from surrealdb import RecordID

from kernel.store import Store

WING_FIELDS = "id, name, description, created_at"
ROOM_FIELDS = "id, wing, name, description, created_at"
DRAWER_LISTING_FIELDS = (
    "id, wing, room, name, tags, source, valid_from, valid_to, supersedes, superseded_by, "
    "created_at, string::slice(content, 0, 130) AS head, string::len(content) AS length"
)
# A drawer valid now: not closed, or closed in the future.
CURRENT = "(valid_to = NONE OR valid_to > time::now())"
# A room's drawers and a wing's drawers and rooms, counted through the indexes (`$room`, `$wing`).
# Counted inside a closure (`array::map`), as here, 14,000 drawers of a room took 6-10 ms; the
# same SELECT as a statement or a LET 74-122 ms (engine 3.2.4, docs/benchmarks.md).
ROOM_DRAWERS = "((SELECT count() FROM drawer WHERE room = $room GROUP ALL)[0].count ?? 0)"
WING_DRAWERS = "((SELECT count() FROM drawer WHERE wing = $wing GROUP ALL)[0].count ?? 0)"
WING_ROOMS = "((SELECT count() FROM room WHERE wing = $wing GROUP ALL)[0].count ?? 0)"


class HierarchyRepository:
    def __init__(self, store: Store) -> None:
        self.store = store
        # Whether counts are counted (remote) or read from the aggregate views (embedded).
        self.exact_counts = store.mode == "remote"

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
        if self.exact_counts:
            counted = self.store.one(
                "RETURN array::map($wings, |$wing| {"
                f"wing: $wing, rooms: {WING_ROOMS}, drawers: {WING_DRAWERS}"
                "});",
                {"wings": ids},
            )
            return {
                row["wing"]: {"rooms": row["rooms"], "drawers": row["drawers"]} for row in counted
            }
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
            "DELETE similar_to WHERE in.wing = $wing OR out.wing = $wing;"
            "DELETE dedup_key WHERE room IN (SELECT VALUE record::id(id) FROM room "
            "WHERE wing = $wing);"
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

    def rooms_by_names(
        self, places: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], dict[str, Any]]:
        """The existing rooms among `(wing name, room name)` pairs, in one round trip."""
        wanted = set(places)
        # Two flat statements: naming each room's wing with a subquery per row took 5.6 ms for
        # 16 places, these 2.1 ms.
        rows, wings = self.store.query(
            "LET $wings = (SELECT record::id(id) AS id, name FROM wing WHERE name IN $names);"
            f"SELECT {ROOM_FIELDS} FROM room WHERE wing IN $wings.id AND name IN $rooms;"
            "RETURN $wings;",
            {
                "names": sorted({wing for wing, _ in wanted}),
                "rooms": sorted({room for _, room in wanted}),
            },
        )[1:]
        wing_names = {wing["id"]: wing["name"] for wing in wings}
        found = {}
        for row in rows:
            place = (wing_names[row["wing"]], row["name"])
            if place in wanted:
                found[place] = row
        return found

    def rooms_named(self, name: str) -> list[dict[str, Any]]:
        """The rooms of that name, in every wing."""
        return self.store.one(f"SELECT {ROOM_FIELDS} FROM room WHERE name = $name", {"name": name})

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
        if self.exact_counts:
            counted = self.store.one(
                f"RETURN array::map($rooms, |$room| {ROOM_DRAWERS});", {"rooms": ids}
            )
            return dict(zip(ids, counted, strict=True))
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
            "DELETE similar_to WHERE in.room = $room OR out.room = $room;"
            "DELETE dedup_key WHERE room = $room;"
            "DELETE drawer WHERE room = $room;"
            "DELETE type::record('room', $room);"
            "RETURN {wings: 0, rooms: 1, drawers: $drawers};",
            {"room": room_id},
        )

    def pending_job_kinds(self) -> list[dict[str, Any]]:
        """The `kind` (type and parameters) of every queued, running or paused job."""
        return self.store.one(
            "SELECT VALUE kind FROM job WHERE status IN ['queued', 'running', 'paused']"
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

    def current_drawers_with_uri(
        self, wing: str, places: list[tuple[str, str]]
    ) -> list[list[dict[str, Any]]]:
        """For each `(room, uri)` of `wing` (names), the current drawers of that room filed
        with that source uri, in one round trip, each read through the `drawer_room_uri`
        index (a room resolved inside the condition would read the whole room)."""
        rooms = {room: j for j, room in enumerate(sorted({room for room, _uri in places}))}
        values: dict[str, Any] = {"wing": wing}
        lets = ["LET $w = (SELECT VALUE meta::id(id) FROM wing WHERE name = $wing)[0];"]
        for room, j in rooms.items():
            values[f"room{j}"] = room
            lets.append(
                f"LET $r{j} = (SELECT VALUE meta::id(id) FROM room "
                f"WHERE wing = $w AND name = $room{j})[0];"
            )
        selects = []
        for i, (room, uri) in enumerate(places):
            values[f"uri{i}"] = uri
            selects.append(
                f"(SELECT * FROM drawer WHERE room = $r{rooms[room]} "
                f"AND source.uri = $uri{i} AND valid_to = NONE)"
            )
        return self.store.query("".join(lets) + f"RETURN [{', '.join(selects)}];", values)[-1]

    def drawers_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self.store.one(
            "SELECT * FROM $ids", {"ids": [RecordID("drawer", drawer_id) for drawer_id in ids]}
        )
        return {row["id"]: row for row in rows}

    def existing_drawer_ids(self, ids: Iterable[str]) -> set[str]:
        return set(
            self.store.one(
                "SELECT VALUE record::id(id) FROM $ids",
                {"ids": [RecordID("drawer", drawer_id) for drawer_id in ids]},
            )
        )

    def drawers_page(
        self, wing_id: str, room_id: str, *, limit: int, offset: int
    ) -> tuple[list[dict[str, Any]], int]:
        """A page of a room's drawers, oldest first, and how many the room holds, read in one
        transaction. A page past the middle of the room is read from the end of the index,
        backwards: the index skips the entries before a page one by one (52 ms for a page at
        offset 13,950 of 14,000 in-process, 1.4 ms backwards)."""
        # Both reads are bound by LET, not written inside IF: a block holding a subquery that
        # reads one row gives back the row, not a list of it.
        total = (
            f"array::map([$room], |$room| {ROOM_DRAWERS})[0]"
            if self.exact_counts
            else "(SELECT VALUE drawers FROM ONLY $tally) ?? 0"
        )
        answer = self.store.transaction(
            f"LET $total = {total};"
            "LET $backward = $offset * 2 > $total AND $offset < $total;"
            "LET $end = math::min([$offset + $limit, $total]);"
            "LET $ahead = IF $backward { 0 } ELSE { $limit };"
            "LET $behind = IF $backward { $end - $offset } ELSE { 0 };"
            f"LET $after = (SELECT {DRAWER_LISTING_FIELDS} FROM drawer WHERE room = $room"
            " ORDER BY created_at, id LIMIT $ahead START $offset);"
            f"LET $before = (SELECT {DRAWER_LISTING_FIELDS} FROM drawer WHERE room = $room"
            " ORDER BY created_at DESC, id DESC LIMIT $behind START $total - $end);"
            "RETURN {rows: IF $backward { array::reverse($before) } ELSE { $after },"
            " total: $total};",
            {
                "tally": RecordID("room_tally", [wing_id, room_id]),
                "room": room_id,
                "limit": limit,
                "offset": offset,
            },
        )
        return answer["rows"], int(answer["total"])

    def delete_drawer(self, drawer_id: str) -> None:
        self.store.transaction(
            "DELETE similar_to WHERE in = $d OR out = $d; DELETE $d;",
            {"d": RecordID("drawer", drawer_id)},
        )

    def drawer_total(self) -> int:
        if self.exact_counts:
            # The table's own count, not one through an index: 5 ms for 14,000 drawers here.
            return int(
                self.store.one("RETURN (SELECT count() FROM drawer GROUP ALL)[0].count ?? 0")
            )
        wing_ids = self.store.one("SELECT VALUE meta::id(id) FROM wing")
        return sum(counts["drawers"] for counts in self.wing_counts(wing_ids).values())
