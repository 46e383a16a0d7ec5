"""SurrealQL of entity resolution: looking names up, creating entities with the terms they are
found by and their `possibly_same_as` candidates, recording aliases, and a drawer's mentions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from surrealdb import RecordID

from graph.repositories.records import edge_rows, entity_record, rows_by_id
from kernel.store import Store
from palace.repositories.hierarchy import DRAWER_LISTING_FIELDS

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


class EntityRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def entity(self, entity_id: str) -> dict[str, Any] | None:
        return self.store.one("SELECT * FROM ONLY $e", {"e": entity_record(entity_id)})

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
                "records": [
                    {**record, "id": entity_record(record["id"])} for record, _ in entities
                ],
                "terms": [
                    {"id": RecordID("entity_term", list(term)), "entities": ids}
                    for term, ids in sorted(terms.items())
                ],
                "candidates": edge_rows("possibly_same_as", candidates, "entity>entity"),
            },
        )

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
            {"e": entity_record(entity_id), "alias": alias, "alias_key": alias_key, "terms": terms},
        )

    # A drawer's mentions

    def drawer_listings(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        return rows_by_id(self.store, "drawer", ids, DRAWER_LISTING_FIELDS)

    def mention_between(self, drawer_id: str, entity_id: str) -> dict[str, Any] | None:
        rows = self.store.one(
            "SELECT * FROM mentions WHERE in = $d AND out = $e",
            {"d": RecordID("drawer", drawer_id), "e": entity_record(entity_id)},
        )
        return rows[0] if rows else None

    def insert_mentions(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.store.query(
                "INSERT RELATION IGNORE INTO mentions $rows RETURN NONE;",
                {"rows": edge_rows("mentions", rows, "drawer>entity")},
            )
