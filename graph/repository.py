"""SurrealQL for the knowledge graph. The only module of the graph that talks to the store.

Rows come back plain (`kernel.store.plain`): a record id is its key, so an edge's `in`
and `out` are entity ids and a relationship's `id` is its UUID. Every write a job can replay
goes to a derived id and is create-if-absent (`INSERT ... IGNORE`), so a replay writes nothing
twice and never moves an instant.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from surrealdb import RecordID

from kernel.store import Store
from palace.repositories.hierarchy import DRAWER_LISTING_FIELDS

# The derivation strings are persisted: changing one needs a data migration.
NAMESPACE = "memcastle-graph"


def derived_id(*parts: str) -> str:
    """A version-8 UUID from SHA-256 over the parts, for records a replay must find again."""
    text = "\x00".join((NAMESPACE, *parts))
    digest = bytearray(hashlib.sha256(text.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x80
    digest[8] = (digest[8] & 0x3F) | 0x80
    return str(uuid.UUID(bytes=bytes(digest)))


def _entity(entity_id: str) -> RecordID:
    return RecordID("entity", entity_id)


def _relationship(relationship_id: str) -> RecordID:
    return RecordID("relates_to", relationship_id)


def _edge_rows(table: str, rows: Iterable[Mapping[str, Any]], ends: str) -> list[dict[str, Any]]:
    """Rows for `INSERT RELATION`: ids, `in` and `out` as record ids (`ends` names the tables
    of `in` and `out`, `drawer>entity` or `entity>entity`)."""
    source, target = ends.split(">")
    return [
        {
            **row,
            "id": RecordID(table, row["id"]),
            "in": RecordID(source, row["in"]),
            "out": RecordID(target, row["out"]),
        }
        for row in rows
    ]


# File entities under terms: one row a term, merged with the entities already under it.
TERM_UPSERT = (
    "INSERT INTO entity_term $terms ON DUPLICATE KEY UPDATE "
    "entities = array::union(entities ?? [], $input.entities) RETURN NONE;"
)


def _term_ids(role: str, terms: Iterable[str]) -> list[RecordID]:
    return [RecordID("entity_term", [role, term]) for term in terms]


def _term_rows(entity_id: str, terms: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    return [
        {"id": RecordID("entity_term", [role, term]), "entities": [entity_id]}
        for role, term in terms
    ]


def _count(rows: list[dict[str, Any]]) -> int:
    """The answer of `SELECT count() ... GROUP ALL`: no row when nothing matched."""
    return rows[0]["count"] if rows else 0


class GraphRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    # Entities

    def entity(self, entity_id: str) -> dict[str, Any] | None:
        return self.store.one("SELECT * FROM ONLY $e", {"e": _entity(entity_id)})

    def entities_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        rows = self.store.one("SELECT * FROM $ids", {"ids": [_entity(i) for i in wanted]})
        return {row["id"]: row for row in rows}

    def resolution_pool(self, names: Iterable[str], keys: Iterable[str]) -> list[dict[str, Any]]:
        """The entities with one of these names, keys, or an alias of one of these keys: one
        round trip."""
        keys = sorted(set(keys))
        by_name, by_key, aliased = self.store.query(
            "SELECT * FROM entity WHERE name IN $names;"
            "SELECT * FROM entity WHERE key IN $keys;"
            "SELECT * FROM array::distinct(array::flatten((SELECT VALUE entities FROM $terms)))"
            ".map(|$id| type::record('entity', $id));",
            {"names": sorted(set(names)), "keys": keys, "terms": _term_ids("alias", keys)},
        )
        unique = {row["id"]: row for row in [*by_name, *by_key, *aliased]}
        return [unique[key] for key in sorted(unique)]

    def entities_near(self, terms: Iterable[str]) -> list[dict[str, Any]]:
        """The entities filed under one of `terms` (fuzzy terms): one round trip."""
        wanted = sorted(set(terms))
        if not wanted:
            return []
        return self.store.one(
            "SELECT * FROM array::distinct(array::flatten((SELECT VALUE entities FROM $terms)))"
            ".map(|$id| type::record('entity', $id));",
            {"terms": _term_ids("fuzzy", wanted)},
        )

    def create_entities(
        self,
        entities: list[tuple[Mapping[str, Any], list[tuple[str, str]]]],
        candidates: list[dict[str, Any]],
    ) -> None:
        """New entities with their terms, and their `possibly_same_as` links, in one
        transaction; fails (StoreFailed or UniqueViolation) when a name is taken for its kind,
        and then writes nothing."""
        terms: dict[tuple[str, str], list[str]] = {}
        for record, filed_under in entities:
            for term in filed_under:
                terms.setdefault(term, []).append(record["id"])
        self.store.transaction(
            "INSERT INTO entity $records RETURN NONE;"
            + TERM_UPSERT
            + "INSERT RELATION IGNORE INTO possibly_same_as $candidates RETURN NONE;",
            {
                "records": [{**record, "id": _entity(record["id"])} for record, _ in entities],
                "terms": [
                    {"id": RecordID("entity_term", list(term)), "entities": ids}
                    for term, ids in sorted(terms.items())
                ],
                "candidates": _edge_rows("possibly_same_as", candidates, "entity>entity"),
            },
        )

    def entity_by_name_kind(self, name: str, kind: str) -> dict[str, Any] | None:
        rows = self.store.one(
            "SELECT * FROM entity WHERE name = $name AND kind = $kind", {"name": name, "kind": kind}
        )
        return rows[0] if rows else None

    def add_alias(self, entity_id: str, alias: str, alias_key: str) -> dict[str, Any] | None:
        """Append a spelling (and its key) unless recorded, and file the entity under the key;
        returns the entity after."""
        statements = (
            "UPDATE ONLY $e SET aliases = array::union(aliases ?? [], [$alias]), "
            "alias_keys = array::union(alias_keys ?? [], [$alias_key]) RETURN AFTER;"
        )
        terms = _term_rows(entity_id, [("alias", alias_key)] if alias_key else [])
        if terms:
            statements = TERM_UPSERT + statements
        return self.store.transaction(
            statements,
            {"e": _entity(entity_id), "alias": alias, "alias_key": alias_key, "terms": terms},
        )

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
            {"e": _entity(entity_id)},
        )
        return {
            "mentions": _count(mentions),
            "relationships": _count(subject) + _count(obj),
        }

    # Mentions

    def mention(self, mention_id: str) -> dict[str, Any] | None:
        return self.store.one("SELECT * FROM ONLY $m", {"m": RecordID("mentions", mention_id)})

    def mention_between(self, drawer_id: str, entity_id: str) -> dict[str, Any] | None:
        rows = self.store.one(
            "SELECT * FROM mentions WHERE in = $d AND out = $e",
            {"d": RecordID("drawer", drawer_id), "e": _entity(entity_id)},
        )
        return rows[0] if rows else None

    def insert_mentions(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.store.query(
                "INSERT RELATION IGNORE INTO mentions $rows RETURN NONE;",
                {"rows": _edge_rows("mentions", rows, "drawer>entity")},
            )

    def mentions_of(self, entity_id: str, limit: int) -> list[dict[str, Any]]:
        return self.store.one(
            "SELECT * FROM mentions WHERE out = $e ORDER BY created_at, id LIMIT $limit",
            {"e": _entity(entity_id), "limit": limit},
        )

    def drawer_listings(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        rows = self.store.one(
            f"SELECT {DRAWER_LISTING_FIELDS} FROM $ids",
            {"ids": [RecordID("drawer", i) for i in wanted]},
        )
        return {row["id"]: row for row in rows}

    def candidates_of(self, entity_id: str) -> list[dict[str, Any]]:
        return self.store.one(
            "SELECT * FROM possibly_same_as WHERE in = $e OR out = $e ORDER BY created_at, id",
            {"e": _entity(entity_id)},
        )

    # Relationships

    def relationships_by_ids(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        rows = self.store.one("SELECT * FROM $ids", {"ids": [_relationship(i) for i in wanted]})
        return {row["id"]: row for row in rows}

    def insert_relationships(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.store.query(
                "INSERT RELATION IGNORE INTO relates_to $rows RETURN NONE;",
                {"rows": _edge_rows("relates_to", rows, "entity>entity")},
            )

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
                "mentions": _edge_rows("mentions", mentions, "drawer>entity"),
                "relationships": _edge_rows("relates_to", relationships, "entity>entity"),
                "links": links,
                "marker": marker,
            },
        )

    def peers(self, pairs: list[tuple[str, str, str | None]]) -> list[list[dict[str, Any]]]:
        """For each `(subject, predicate, object?)`: the assertions with that subject and
        predicate (and object, when given), in one round trip."""
        if not pairs:
            return []
        statements = []
        variables: dict[str, Any] = {}
        for n, (subject, predicate, obj) in enumerate(pairs):
            variables[f"s{n}"], variables[f"p{n}"] = _entity(subject), predicate
            clause = ""
            if obj is not None:
                variables[f"o{n}"] = _entity(obj)
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
                "old": _relationship(target_id),
                "new": _relationship(replacement["id"]),
                "replacement": _edge_rows("relates_to", [replacement], "entity>entity")[0],
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
            {"old": _relationship(target_id), "link": link, "at": at},
        )

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
        ids = [_entity(i) for i in sorted(set(entity_ids))]
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
            "entities": _count(entities),
            "relationships": _count(relationships),
            "mentions": _count(mentions),
            "fact_links": _count(links),
            "degree": degree,
        }

    def marker(self, drawer_id: str) -> dict[str, Any] | None:
        return self.store.one(
            "SELECT * FROM ONLY type::record('drawer_extraction', $d)", {"d": drawer_id}
        )
