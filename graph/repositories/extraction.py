"""SurrealQL of the extract job: what it selects (the current mined drawers and notes, the
`drawer_extraction` markers of those read, the drawers that stopped being current, the mined
documents' times) and what it records (a drawer's mentions, assertions and inferred links with
its marker, the peers a new assertion is compared with, and the facts of a drawer that stopped
being current)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from surrealdb import RecordID

from graph.repositories.records import edge_rows, entity_record
from kernel.store import Store
from palace.repositories.hierarchy import CURRENT

DRAWER_FIELDS = (
    "record::id(id) AS id, wing, room, name, source, valid_from, valid_to, supersedes, "
    "superseded_by, created_at"
)


class ExtractionRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    # What the job selects

    def read_drawers(self) -> set[str]:
        """The drawers with a `drawer_extraction` marker."""
        return set(self.store.one("SELECT VALUE record::id(id) FROM drawer_extraction"))

    def readable(self, wing_id: str | None) -> list[tuple[Any, str]]:
        """`(created_at, id)` of every current mined drawer and note, of one wing or all."""
        where = f"{CURRENT} AND (source.origin != NONE OR source.kind = 'note')"
        if wing_id is not None:
            where += " AND wing = $wing"
        rows = self.store.one(
            f"SELECT record::id(id) AS id, created_at FROM drawer WHERE {where}", {"wing": wing_id}
        )
        return [(row["created_at"], row["id"]) for row in rows]

    def closed_drawers(self, wing_id: str | None) -> list[dict[str, Any]]:
        """`{id, valid_to}` of every drawer that stopped being current (not in the future)."""
        where = "valid_to != NONE AND valid_to <= time::now()"
        if wing_id is not None:
            where += " AND wing = $wing"
        return self.store.one(
            f"SELECT record::id(id) AS id, valid_to FROM drawer WHERE {where}", {"wing": wing_id}
        )

    def with_open_facts(self, drawer_ids: list[str]) -> set[str]:
        """Those of `drawer_ids` that some open extracted fact was read from."""
        if not drawer_ids:
            return set()
        rows = self.store.one(
            "SELECT provenance.drawer AS drawer FROM relates_to WHERE provenance.drawer IN $ids "
            "AND valid_to = NONE GROUP BY drawer",
            {"ids": drawer_ids},
        )
        return {row["drawer"] for row in rows}

    def drawers(self, drawer_ids: Iterable[str], *, content: bool = False) -> dict[str, dict]:
        ids = [RecordID("drawer", drawer_id) for drawer_id in drawer_ids]
        if not ids:
            return {}
        extra = ", content" if content else ""
        rows = self.store.one(f"SELECT {DRAWER_FIELDS}{extra} FROM $ids", {"ids": ids})
        return {row["id"]: row for row in rows}

    def documents(self, keys: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
        """`{id, revision, occurred_at}` of the mined documents of these `(source_id, document)`
        keys (an `id` is its key as a list)."""
        return self.store.one(
            "SELECT id, revision, occurred_at FROM $ids",
            {"ids": [RecordID("source_document", list(key)) for key in keys]},
        )

    def is_read(self, drawer_id: str) -> bool:
        """Whether the drawer has a `drawer_extraction` marker."""
        return (
            self.store.one(
                "SELECT VALUE id FROM ONLY type::record('drawer_extraction', $d)", {"d": drawer_id}
            )
            is not None
        )

    def any_note(self, drawer_ids: list[str]) -> bool:
        """Whether one of the drawers is a note."""
        return bool(
            self.store.one(
                "SELECT VALUE record::id(id) FROM $ids WHERE source.kind = 'note' LIMIT 1",
                {"ids": [RecordID("drawer", drawer) for drawer in drawer_ids]},
            )
        )

    def marked_by(self, job_id: str) -> list[str]:
        return self.store.one(
            "SELECT VALUE record::id(id) FROM drawer_extraction WHERE job = $job", {"job": job_id}
        )

    # What the job records

    def record_extraction(
        self,
        mentions: list[dict[str, Any]],
        relationships: list[dict[str, Any]],
        links: list[dict[str, Any]],
        marker: dict[str, Any],
    ) -> None:
        """Mentions, assertions and links create-if-absent, then the marker, atomically."""
        self.store.transaction(
            "INSERT RELATION IGNORE INTO mentions $mentions RETURN NONE;"
            "INSERT RELATION IGNORE INTO relates_to $relationships RETURN NONE;"
            "INSERT IGNORE INTO fact_link $links RETURN NONE;"
            "UPSERT type::record('drawer_extraction', $marker.drawer) CONTENT $marker "
            "RETURN NONE;",
            {
                "mentions": edge_rows("mentions", mentions, "drawer>entity"),
                "relationships": edge_rows("relates_to", relationships, "entity>entity"),
                "links": links,
                "marker": marker,
            },
        )

    def marker(self, drawer_id: str) -> dict[str, Any] | None:
        return self.store.one(
            "SELECT * FROM ONLY type::record('drawer_extraction', $d)", {"d": drawer_id}
        )

    def peers(self, pairs: list[tuple[str, str, str | None]]) -> list[list[dict[str, Any]]]:
        """For each `(subject, predicate, object?)`: the assertions with that subject and
        predicate (and object, when given), in one round trip."""
        if not pairs:
            return []
        statements = []
        variables: dict[str, Any] = {}
        for n, (subject, predicate, obj) in enumerate(pairs):
            variables[f"s{n}"], variables[f"p{n}"] = entity_record(subject), predicate
            clause = ""
            if obj is not None:
                variables[f"o{n}"] = entity_record(obj)
                clause = f" AND out = $o{n}"
            statements.append(
                f"SELECT * FROM relates_to WHERE in = $s{n} AND predicate = $p{n}{clause};"
            )
        return self.store.query("".join(statements), variables)

    def insert_links(self, links: list[dict[str, Any]]) -> None:
        if links:
            self.store.query("INSERT IGNORE INTO fact_link $links RETURN NONE;", {"links": links})

    def facts_of_drawer(self, drawer_id: str) -> list[dict[str, Any]]:
        return self.store.one(
            "SELECT * FROM relates_to WHERE provenance.drawer = $d ORDER BY id", {"d": drawer_id}
        )

    def close_facts_of(self, drawer_id: str, at: dt.datetime) -> list[dict[str, Any]]:
        """Close the open assertions read from a drawer at `at` (never before they start)."""
        return self.store.one(
            "UPDATE relates_to SET valid_to = IF valid_from > $at { valid_from } ELSE { $at } "
            "WHERE provenance.drawer = $d AND valid_to = NONE RETURN AFTER",
            {"d": drawer_id, "at": at},
        )
