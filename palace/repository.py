"""SurrealQL for wings, rooms and drawers. The only module of the palace that talks to the store.

Rows come back as plain dicts whose `id` is the record key (a UUID string). Counts are read by
key from the `wing_rooms`, `room_tally` and `wing_tally` aggregate tables that the database
maintains from `room` and `drawer` (see schema 0001), never by paging rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from surrealdb import RecordID

from kernel.errors import StoreFailed
from kernel.store import Statement, Store, UniqueViolation
from palace import dedup

WING_FIELDS = "id, name, description, created_at"
ROOM_FIELDS = "id, wing, name, description, created_at"
DRAWER_LISTING_FIELDS = (
    "id, wing, room, name, tags, source, valid_from, valid_to, supersedes, superseded_by, "
    "created_at, string::slice(content, 0, 130) AS head, string::len(content) AS length"
)


# Lists the drawers `$drawers` (each with its id, room and `dedup.LOOKUP_KEYS`) in `dedup_key`,
# the newest `dedup.KEY_DRAWERS` a key. The rows are made here from the drawers (sending them,
# their record ids encoded by the SDK in pure Python, took 0.75 ms for 10 drawers); rows of the
# same key are merged in order. Returns nothing: the merged rows were decoded for nothing.
KEY_UPSERT = (
    "INSERT INTO dedup_key array::flatten(array::map($drawers, |$drawer| ["
    + ", ".join(
        f"{{id: type::record('dedup_key', [$drawer.room, '{kind}', $drawer.{kind}]), "
        "room: $drawer.room, drawers: [$drawer.id]}"
        for kind in dedup.LOOKUP_KEYS
    )
    + "])) ON DUPLICATE KEY UPDATE "
    f"drawers = array::slice(array::union(drawers ?? [], $input.drawers), -{dedup.KEY_DRAWERS}) "
    "RETURN NONE;"
)
# The drawers listed by the `dedup_key` records of the keys `$keys`, and those records.
COPY_CANDIDATES = (
    "LET $lists = (SELECT id, drawers FROM "
    "array::map($keys, |$key| type::record('dedup_key', $key)));"
    "SELECT * FROM array::map(array::distinct(array::flatten($lists.drawers)), "
    "|$drawer| type::record('drawer', $drawer));"
    "RETURN $lists;"
)


def _key(drawer: Mapping[str, Any], kind: str) -> tuple[str, str, str]:
    """The id of a `dedup_key` record, `[room, kind, value]`."""
    return (drawer["room"], kind, drawer[kind])


def _copies(
    drawer: Mapping[str, Any],
    agent: str | None,
    listed: Mapping[tuple, list[str]],
    found: Mapping[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """The drawers `listed` under `drawer`'s keys that are valid now in its room (of `agent`,
    for a diary), oldest first; never the drawer itself."""
    now = dt.datetime.now(dt.UTC)
    ids = {
        drawer_id for kind in dedup.LOOKUP_KEYS for drawer_id in listed.get(_key(drawer, kind), [])
    }
    rows = [found[drawer_id] for drawer_id in ids if drawer_id in found]
    return [
        row
        for row in sorted(rows, key=lambda row: row["created_at"])
        if row["id"] != drawer.get("id")
        and row["room"] == drawer["room"]
        and (row.get("valid_to") is None or row["valid_to"] > now)
        and (agent is None or (row.get("source") or {}).get("agent") == agent)
    ]


# A drawer valid now: not closed, or closed in the future.
CURRENT = "(valid_to = NONE OR valid_to > time::now())"


def _without_id(record: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key != "id"}


@dataclass(frozen=True)
class BeforeFiling:
    """What filing a batch of drawers reads first: each drawer's likely copies, the drawers
    holding the batch's names by `(room, name)`, and which of the rooms asked about exist."""

    candidates: list[list[dict[str, Any]]]
    holders: dict[tuple[str, str], dict[str, Any]]
    rooms: set[str]


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

    def before_filing(
        self,
        drawers: list[tuple[Mapping[str, Any], str | None]],
        names: Iterable[tuple[str, str]] = (),
        rooms: Iterable[str] = (),
    ) -> BeforeFiling:
        """Everything filing `drawers` reads, in one round trip (these were three: the key
        records, their drawers, the name holders).

        For each (drawer, agent): the drawers valid now in its room (of `agent`, for a diary)
        that may be copies of it: they share its fingerprint (so the same bytes too), or the
        start or end of its normalized text (the newest `dedup.KEY_DRAWERS` of each), found
        through the `dedup_key` records by id. The holders of `names`, `(room id, name)` pairs:
        a statement a pair (50 took 16 ms here; `name IN [...]` scanned the whole room, 222 ms).
        And which of `rooms` (ids) still exist.
        """
        key_ids = list(
            {_key(drawer, kind): None for drawer, _ in drawers for kind in dedup.LOOKUP_KEYS}
        )
        pairs = sorted(set(names))
        room_ids = sorted(set(rooms))
        sql = COPY_CANDIDATES if key_ids else ""
        variables: dict[str, Any] = {
            "keys": [list(key) for key in key_ids],
            "rooms": room_ids,
        }
        for n, (room, name) in enumerate(pairs):
            variables[f"room{n}"], variables[f"name{n}"] = room, name
            sql += f"SELECT * FROM drawer WHERE room = $room{n} AND name = $name{n};"
        if room_ids:
            sql += (
                "RETURN array::filter($rooms, |$room| record::exists(type::record('room', $room)));"
            )
        results = iter(self.store.query(sql, variables) if sql else [])
        candidates: list[list[dict[str, Any]]] = [[] for _ in drawers]
        if key_ids:
            next(results)
            found = {row["id"]: row for row in next(results)}
            listed = {tuple(row["id"]): row["drawers"] for row in next(results)}
            candidates = [_copies(drawer, agent, listed, found) for drawer, agent in drawers]
        holders = {}
        for _ in pairs:
            for row in next(results):
                holders[(row["room"], row["name"])] = row
        return BeforeFiling(candidates, holders, set(next(results)) if room_ids else set())

    def create_drawers(
        self,
        batch: list[tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]],
        then: Statement | None = None,
    ) -> Any:
        """Create drawers and their `similar_to` links to older drawers, and list them in
        `dedup_key`, in one transaction, then run `then` (a write that must commit with them)
        in it; returns what `then` returned. The drawers are not read back (that cost 0.3 ms a
        drawer): the records are what was stored.

        Raises `UniqueViolation` when a drawer's name is taken in its room.
        """
        statements = ""
        variables: dict[str, Any] = {}
        if batch:
            # One INSERT for the drawers and one for their links: a CREATE or RELATE statement
            # apiece took 7.4 ms for 10 drawers and 2 links here, the two INSERTs 5.4 ms.
            statements = "INSERT INTO drawer $drawers RETURN NONE;"
            variables.update(drawers=[record for record, _ in batch])
            edges = [
                {**edge, "in": RecordID("drawer", record["id"]), "out": RecordID("drawer", older)}
                for record, links in batch
                for older, edge in links
            ]
            if edges:
                statements += "INSERT RELATION INTO similar_to $edges RETURN NONE;"
                variables["edges"] = edges
            statements += KEY_UPSERT
        if then is not None:
            statements += then.sql
            variables.update(then.variables)
        try:
            ran = self.store.transaction(statements, variables)
        except StoreFailed:
            for record, _ in batch:
                if record.get("name") is not None:
                    holder = self.drawer_by_name(record["room"], record["name"])
                    if holder is not None:
                        raise UniqueViolation(f"drawer name {record['name']!r} is taken") from None
            raise
        return ran if then is not None else None

    def link_similar(self, newer: str, older: str, edge: Mapping[str, Any]) -> None:
        """`newer -similar_to-> older`; a pair already linked is left as it is."""
        self.store.query(
            "IF !(SELECT VALUE id FROM similar_to WHERE in = $newer AND out = $older) "
            "{ RELATE $newer->similar_to->$older CONTENT $edge };",
            {
                "newer": RecordID("drawer", newer),
                "older": RecordID("drawer", older),
                "edge": dict(edge),
            },
        )

    def similar_edges(self, drawer_id: str) -> list[dict[str, Any]]:
        return self.store.one(
            "SELECT * FROM similar_to WHERE in = $d OR out = $d ORDER BY created_at",
            {"d": RecordID("drawer", drawer_id)},
        )

    def existing_drawer_ids(self, ids: Iterable[str]) -> set[str]:
        return set(
            self.store.one(
                "SELECT VALUE record::id(id) FROM $ids",
                {"ids": [RecordID("drawer", drawer_id) for drawer_id in ids]},
            )
        )

    def drawers_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        rows = self.store.one(
            "SELECT * FROM $ids", {"ids": [RecordID("drawer", drawer_id) for drawer_id in ids]}
        )
        return {row["id"]: row for row in rows}

    def supersede(
        self, old_id: str, replacement: Mapping[str, Any] | None, now: dt.datetime
    ) -> dict[str, Any] | None:
        """Close `old_id` at `now` and file `replacement` from `now`, linked both ways, in one
        transaction; without a replacement the drawer is only invalidated. Returns the closed
        drawer, or None when it was already closed."""
        variables: dict[str, Any] = {"old": old_id, "now": now}
        if replacement is None:
            # An invalidated drawer gives up its name too, as a superseded one does: the name
            # is free for what is true now.
            return self.store.one(
                "UPDATE ONLY type::record('drawer', $old) SET valid_to = $now, updated_at = $now, "
                "name = NONE WHERE valid_to = NONE RETURN AFTER",
                variables,
            )
        variables.update(
            new=replacement["id"], record=_without_id(replacement), drawers=[replacement]
        )
        try:
            return self.store.transaction(
                "LET $closed = (UPDATE ONLY type::record('drawer', $old) SET valid_to = $now, "
                "updated_at = $now, superseded_by = $new, name = NONE "
                "WHERE valid_to = NONE RETURN AFTER);"
                "IF $closed = NONE { THROW 'the drawer was already superseded' };"
                "CREATE ONLY type::record('drawer', $new) CONTENT $record RETURN NONE;"
                f"{KEY_UPSERT}"
                "SELECT * FROM ONLY type::record('drawer', $old);",
                variables,
            )
        except StoreFailed:
            closed = self.drawer_by_id(old_id)
            if closed is not None and closed.get("valid_to") is not None:
                return None
            raise

    def diary_entries(self, agent: str, wing_id: str | None, limit: int) -> list[dict[str, Any]]:
        """An agent's current diary drawers (in `<wing>/diary`, or every wing's), newest
        first."""
        wing = " AND wing = $wing" if wing_id is not None else ""
        return self.store.query(
            f"LET $rooms = (SELECT VALUE record::id(id) FROM room WHERE name = 'diary'{wing});"
            "SELECT * FROM drawer WHERE source.agent = $agent AND room IN $rooms "
            f"AND {CURRENT} ORDER BY created_at DESC LIMIT $limit;",
            {"agent": agent, "wing": wing_id, "limit": limit},
        )[-1]

    def checkpoint_highlights(self, wing_id: str | None, limit: int) -> list[dict[str, Any]]:
        """Current drawers written by checkpoint jobs (in one wing, or all), newest first."""
        wing = " AND wing = $wing" if wing_id is not None else ""
        return self.store.query(
            "LET $jobs = (SELECT VALUE record::id(id) FROM job WHERE kind.type = 'checkpoint');"
            f"SELECT * FROM drawer WHERE provenance.job_id IN $jobs{wing} AND {CURRENT} "
            "ORDER BY created_at DESC LIMIT $limit;",
            {"wing": wing_id, "limit": limit},
        )[-1]

    def pending_job_kinds(self) -> list[dict[str, Any]]:
        """The `kind` (type and parameters) of every queued, running or paused job."""
        return self.store.one(
            "SELECT VALUE kind FROM job WHERE status IN ['queued', 'running', 'paused']"
        )

    def drawers_without_dedup_keys(self, limit: int) -> list[dict[str, Any]]:
        return self.store.one(
            "SELECT id, room, content, fingerprint FROM drawer WHERE dedup_keyed = NONE "
            "LIMIT $limit",
            {"limit": limit},
        )

    def index_dedup_keys(self, drawers: list[Mapping[str, Any]]) -> None:
        """List drawers that are already stored in `dedup_key` (bulk loads)."""
        self.store.query(KEY_UPSERT, {"drawers": drawers})

    def set_dedup_keys(self, rows: list[dict[str, Any]]) -> None:
        """Give drawers their `dedup_head`/`dedup_tail` and list them in `dedup_key`."""
        self.store.transaction(
            "FOR $row IN $drawers { UPDATE type::record('drawer', $row.id) "
            "SET dedup_head = $row.dedup_head, dedup_tail = $row.dedup_tail, "
            "dedup_keyed = true };" + KEY_UPSERT,
            {"drawers": rows},
        )

    def unpaired_closed_drawers(self) -> list[dict[str, Any]]:
        """Drawers closed without a successor link: invalidated ones, and those superseded
        before the links existed."""
        return self.store.one(
            "SELECT id, room, valid_to FROM drawer WHERE valid_to != NONE AND superseded_by = NONE"
        )

    def successor_candidates(self, instants: list[Any]) -> list[dict[str, Any]]:
        """Unlinked drawers valid from any of `instants`: one scan for every closed drawer,
        where a query per drawer (a scan of its room) took 45-49 s for 1,018 of them at 100,000
        drawers."""
        return self.store.one(
            "SELECT record::id(id) AS id, room, valid_from FROM drawer "
            "WHERE supersedes = NONE AND valid_from IN $instants",
            {"instants": instants},
        )

    def pair(self, old_id: str, new_id: str) -> None:
        self.store.transaction(
            "UPDATE type::record('drawer', $old) SET superseded_by = $new;"
            "UPDATE type::record('drawer', $new) SET supersedes = $old;",
            {"old": old_id, "new": new_id},
        )

    def list_drawers(self, room_id: str, *, limit: int, offset: int) -> list[dict[str, Any]]:
        return self.store.one(
            f"SELECT {DRAWER_LISTING_FIELDS} FROM drawer WHERE room = $room "
            "ORDER BY created_at, id LIMIT $limit START $offset",
            {"room": room_id, "limit": limit, "offset": offset},
        )

    def delete_drawer(self, drawer_id: str) -> None:
        self.store.transaction(
            "DELETE similar_to WHERE in = $d OR out = $d; DELETE $d;",
            {"d": RecordID("drawer", drawer_id)},
        )

    def drawer_total(self) -> int:
        wing_ids = self.store.one("SELECT VALUE meta::id(id) FROM wing")
        return sum(counts["drawers"] for counts in self.wing_counts(wing_ids).values())


class MaintenanceRepository:
    """What an audit reads and a repair looks for: drawers and jobs that do not fit together."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def orphan_drawer_ids(self) -> list[str]:
        """Drawers whose room no longer exists."""
        return self.store.one(
            "SELECT VALUE record::id(id) FROM drawer "
            "WHERE !record::exists(type::record('room', room))"
        )

    def orphan_drawers(self) -> list[dict[str, Any]]:
        """The same drawers, with what a repair needs to remove and announce them."""
        return self.store.one(
            "SELECT id, wing, room, created_at FROM drawer "
            "WHERE !record::exists(type::record('room', room))"
        )

    def dangling_job_refs(self) -> list[str]:
        """Drawers filed by a job whose record no longer exists."""
        return self.store.one(
            "SELECT VALUE record::id(id) FROM drawer WHERE provenance.job_id != NONE "
            "AND !record::exists(type::record('job', provenance.job_id))"
        )

    def exhausted_and_running_jobs(self, own_id: str) -> tuple[list[str], int]:
        """The jobs that failed for having crashed too often, and how many jobs but `own_id`
        are running."""
        exhausted, running = self.store.query(
            "SELECT VALUE record::id(id) FROM job WHERE status = 'failed' "
            "AND error_code = 'memcastle::jobs::recovery_exhausted';"
            "SELECT count() AS n FROM job WHERE status = 'running' AND record::id(id) != $own_key "
            "GROUP ALL;",
            {"own_key": own_id},
        )
        return exhausted, running[0]["n"] if running else 0

    def drawers_and_embedded(
        self, scope: str | None, profile: str | None
    ) -> tuple[list[str], list[str]]:
        """The drawers of wing `scope` (all with None), and the drawers with a vector in
        `profile` (in any with None)."""
        drawers, embedded = self.store.query(
            "LET $wing = (SELECT VALUE record::id(id) FROM wing WHERE name = $scope)[0];"
            "SELECT VALUE record::id(id) FROM drawer WHERE $scope = NONE OR wing = $wing;"
            "SELECT VALUE drawer FROM embedding_key WHERE $profile = NONE OR profile = $profile;",
            {"scope": scope, "profile": profile},
        )[1:]
        return drawers, embedded
