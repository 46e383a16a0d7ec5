"""SurrealQL for filing drawers and deduplicating them: what a batch reads before it is judged,
the one transaction that writes it, the `similar_to` links and the `dedup_key` lists."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from surrealdb import RecordID

from kernel.errors import StoreFailed
from kernel.store import Statement, Store, UniqueViolation
from palace import dedup

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


@dataclass(frozen=True)
class BeforeFiling:
    """What filing a batch of drawers reads first: each drawer's likely copies, the drawers
    holding the batch's names by `(room, name)`, and which of the rooms asked about exist."""

    candidates: list[list[dict[str, Any]]]
    holders: dict[tuple[str, str], dict[str, Any]]
    rooms: set[str]


class FilingRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

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
                if record.get("name") is not None and self._name_held(
                    record["room"], record["name"]
                ):
                    raise UniqueViolation(f"drawer name {record['name']!r} is taken") from None
            raise
        return ran if then is not None else None

    def _name_held(self, room_id: str, name: str) -> bool:
        """Whether a drawer of the room holds `name` (why a batch's transaction failed)."""
        return bool(
            self.store.one(
                "SELECT VALUE id FROM drawer WHERE room = $room AND name = $name",
                {"room": room_id, "name": name},
            )
        )

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
