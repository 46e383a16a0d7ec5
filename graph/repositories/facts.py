"""SurrealQL of a checkpoint's facts: assertions (`relates_to`) and the explicit decisions
between them (`fact_link`): asserting, superseding, invalidating and linking."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from graph.repositories.records import edge_rows, relationship_record, rows_by_id
from kernel.store import Store


class FactRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def relationships_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return rows_by_id(self.store, "relates_to", ids)

    def insert_relationships(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.store.query(
                "INSERT RELATION IGNORE INTO relates_to $rows RETURN NONE;",
                {"rows": edge_rows("relates_to", rows, "entity>entity")},
            )

    def insert_links(self, links: list[dict[str, Any]]) -> None:
        if links:
            self.store.query("INSERT IGNORE INTO fact_link $links RETURN NONE;", {"links": links})

    def supersede(
        self,
        target_id: str,
        replacement: dict[str, Any],
        link: dict[str, Any],
        at: dt.datetime,
    ) -> None:
        """Close the target (if open), create the replacement from the same instant and link
        them, in one transaction; a replay (the replacement exists) changes nothing."""
        self.store.transaction(
            "IF (SELECT VALUE id FROM ONLY $new) = NONE {"
            " UPDATE $old SET valid_to = $at WHERE valid_to = NONE OR valid_to > $at;"
            " INSERT RELATION IGNORE INTO relates_to [$replacement] RETURN NONE;"
            " INSERT IGNORE INTO fact_link [$link] RETURN NONE;"
            "};",
            {
                "old": relationship_record(target_id),
                "new": relationship_record(replacement["id"]),
                "replacement": edge_rows("relates_to", [replacement], "entity>entity")[0],
                "link": link,
                "at": at,
            },
        )

    def invalidate(self, target_id: str, link: dict[str, Any], at: dt.datetime) -> None:
        """Close the target (if open) and record the decision; a replay changes nothing."""
        self.store.transaction(
            "IF (SELECT VALUE id FROM ONLY type::record('fact_link', $link.id)) = NONE {"
            " UPDATE $old SET valid_to = $at WHERE valid_to = NONE OR valid_to > $at;"
            " INSERT IGNORE INTO fact_link [$link] RETURN NONE;"
            "};",
            {"old": relationship_record(target_id), "link": link, "at": at},
        )
