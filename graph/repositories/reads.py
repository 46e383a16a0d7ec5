"""SurrealQL of the graph's reads (graph.md section 7): entities, their counts, mentions and
candidates, an entity's assertions with the links around them, a fact's links, a neighbourhood
and the overview."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from graph.repositories.records import count, entity_record, rows_by_id
from kernel.store import Store
from palace.repository import DRAWER_LISTING_FIELDS


class GraphReadRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    # Entities

    def entity(self, entity_id: str) -> dict[str, Any] | None:
        return self.store.one("SELECT * FROM ONLY $e", {"e": entity_record(entity_id)})

    def entities_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return rows_by_id(self.store, "entity", ids)

    def list_entities(self, name: str | None, kind: str | None, limit: int) -> list[dict]:
        conditions = []
        if name:
            conditions.append("string::contains(string::lowercase(name), $name)")
        if kind:
            conditions.append("kind = $kind")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return self.store.one(
            f"SELECT * FROM entity{where} ORDER BY name, kind, id LIMIT $limit",
            {"name": (name or "").lower(), "kind": kind, "limit": limit},
        )

    def entity_counts(self, entity_id: str) -> dict[str, int]:
        mentions, subject, obj = self.store.query(
            "SELECT count() FROM mentions WHERE out = $e GROUP ALL;"
            "SELECT count() FROM relates_to WHERE in = $e GROUP ALL;"
            "SELECT count() FROM relates_to WHERE out = $e GROUP ALL;",
            {"e": entity_record(entity_id)},
        )
        return {
            "mentions": count(mentions),
            "relationships": count(subject) + count(obj),
        }

    # Mentions and candidates

    def mentions_of(self, entity_id: str, limit: int) -> list[dict[str, Any]]:
        return self.store.one(
            "SELECT * FROM mentions WHERE out = $e ORDER BY created_at, id LIMIT $limit",
            {"e": entity_record(entity_id), "limit": limit},
        )

    def drawer_listings(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return rows_by_id(self.store, "drawer", ids, DRAWER_LISTING_FIELDS)

    def candidates_of(self, entity_id: str) -> list[dict[str, Any]]:
        return self.store.one(
            "SELECT * FROM possibly_same_as WHERE in = $e OR out = $e ORDER BY created_at, id",
            {"e": entity_record(entity_id)},
        )

    # Assertions and their links

    def relationships_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return rows_by_id(self.store, "relates_to", ids)

    def links_touching(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        keys = sorted(set(ids))
        if not keys:
            return []
        found = self.store.query(
            "SELECT * FROM fact_link WHERE from_id IN $keys;"
            "SELECT * FROM fact_link WHERE to_id IN $keys;",
            {"keys": keys},
        )
        unique = {row["id"]: row for rows in found for row in rows}
        return [unique[key] for key in sorted(unique)]

    def entity_graph(self, entity_id: str) -> dict[str, Any] | None:
        """An entity, every assertion it is an end of, the links touching those, the other
        assertions the links name and the entities at the other ends: one round trip."""
        return self.store.query(
            "LET $e = type::record('entity', $id);"
            "LET $entity = (SELECT * FROM ONLY $e);"
            "LET $rels = array::concat((SELECT * FROM relates_to WHERE in = $e), "
            "(SELECT * FROM relates_to WHERE out = $e));"
            "LET $keys = array::distinct($rels.map(|$r| record::id($r.id)));"
            "LET $links = array::concat((SELECT * FROM fact_link WHERE from_id IN $keys), "
            "(SELECT * FROM fact_link WHERE to_id IN $keys));"
            "LET $peer_keys = array::complement("
            "array::distinct(array::concat($links.from_id, $links.to_id)), $keys);"
            "LET $peers = (SELECT * FROM $peer_keys.map(|$k| type::record('relates_to', $k)));"
            "LET $ends = (SELECT id, name, kind FROM "
            "array::distinct(array::concat($rels.in, $rels.out)));"
            "RETURN {entity: $entity, relationships: $rels, links: $links, peers: $peers, "
            "entities: $ends};",
            {"id": entity_id},
        )[-1]

    def relationships_around(self, entity_ids: Iterable[str]) -> list[dict[str, Any]]:
        ids = [entity_record(i) for i in sorted(set(entity_ids))]
        if not ids:
            return []
        found = self.store.query(
            "SELECT * FROM relates_to WHERE in IN $e; SELECT * FROM relates_to WHERE out IN $e;",
            {"e": ids},
        )
        unique = {row["id"]: row for rows in found for row in rows}
        return [unique[key] for key in sorted(unique)]

    def overview(self) -> dict[str, Any]:
        entities, relationships, mentions, links, by_subject, by_object = self.store.query(
            "SELECT count() FROM entity GROUP ALL;"
            "SELECT count() FROM relates_to GROUP ALL;"
            "SELECT count() FROM mentions GROUP ALL;"
            "SELECT count() FROM fact_link GROUP ALL;"
            "SELECT in AS entity, count() AS n FROM relates_to "
            "WHERE valid_to = NONE OR valid_to > time::now() GROUP BY entity;"
            "SELECT out AS entity, count() AS n FROM relates_to "
            "WHERE valid_to = NONE OR valid_to > time::now() GROUP BY entity;"
        )
        degree: dict[str, int] = {}
        for row in [*by_subject, *by_object]:
            degree[row["entity"]] = degree.get(row["entity"], 0) + row["n"]
        return {
            "entities": count(entities),
            "relationships": count(relationships),
            "mentions": count(mentions),
            "fact_links": count(links),
            "degree": degree,
        }
