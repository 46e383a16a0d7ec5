"""SurrealQL of what the extract job records: a drawer's mentions, assertions and inferred
links with its `drawer_extraction` marker, the peers a new assertion is compared with, and the
facts of a drawer that stopped being current."""

from __future__ import annotations

import datetime as dt
from typing import Any

from graph.repositories.records import edge_rows, entity_record
from kernel.store import Store


class ExtractionRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

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
