"""SurrealQL of the graph's reads (graph.md section 7): entities, their counts, mentions and
candidates, an entity's assertions with the links around them, a fact's links, a neighbourhood
and the overview; and what a search's expansion reads around its hits (search.md section 4)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from surrealdb import RecordID

from graph.neighbourhood import DEFAULT_CONFIDENCE, Neighbourhood, Relationship
from graph.repositories.records import count, entity_record, rows_by_id
from kernel.store import Store
from palace.repositories.hierarchy import DRAWER_LISTING_FIELDS

# A relationship held at some instant of [$start, $end) (nanoseconds), the drawers' rule.
_HELD = (
    "time::nano(valid_from) < $end "
    "AND (valid_to = NONE OR valid_to = NULL OR time::nano(valid_to) > $start)"
)
# The seeds' entities, the relationships of those held in the period (either direction), and
# the drawers mentioning the seeds' entities. Only keys and numbers come back: decoding record
# ids and datetimes costs more than the engine's work here.
_NEIGHBOURHOOD = """
LET $rows = SELECT id, ->mentions->entity AS entities FROM $seeds;
LET $shared = array::distinct(array::flatten($rows.entities));
LET $held = SELECT in, out, confidence, time::nano(valid_from) AS since,
        (IF valid_to THEN time::nano(valid_to) ELSE NONE END) AS until
    FROM array::distinct(array::flatten(
        (SELECT VALUE array::concat(->relates_to, <-relates_to) FROM $shared)))
    WHERE {held};
RETURN {{
    seeds: $rows.map(|$r| [record::id($r.id), $r.entities.map(|$e| record::id($e))]),
    relationships: $held.map(
        |$r| [record::id($r.in), record::id($r.out), $r.confidence, $r.since, $r.until]),
    drawers: (SELECT VALUE [record::id(id), (<-mentions<-drawer).map(|$d| record::id($d))]
        FROM $shared)
}};
"""
# The drawers mentioning the hops read, and the entities of the drawers that share an entity
# with a seed (to credit them with the hops left unread).
_AROUND = """
RETURN {
    drawers: (SELECT VALUE [record::id(id), (<-mentions<-drawer).map(|$d| record::id($d))]
        FROM $entities),
    entities: (SELECT VALUE [record::id(id), (->mentions->entity).map(|$e| record::id($e))]
        FROM $drawers)
};
"""


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

    # Around a search's hits

    def neighbourhood(self, seeds: Sequence[str], window: tuple[int, int] | None) -> Neighbourhood:
        """The entities the seeds (drawer ids) mention, the relationships of those entities held
        in `window` (`[start, end)` in nanoseconds; None: ever), either direction, and the
        drawers that mention each of the seeds' entities: one round trip."""
        sql = _NEIGHBOURHOOD.format(held="true" if window is None else _HELD)
        variables: dict[str, Any] = {"seeds": [RecordID("drawer", seed) for seed in seeds]}
        if window is not None:
            variables["start"], variables["end"] = window
        answer = self.store.one(sql, variables)
        relationships = [
            Relationship(
                subject=str(subject),
                object=str(obj),
                valid_from=int(since),
                valid_to=None if until is None else int(until),
                confidence=DEFAULT_CONFIDENCE if confidence is None else float(confidence),
            )
            for subject, obj, confidence, since, until in answer["relationships"]
        ]
        return Neighbourhood(
            seed_entities={str(seed): _keys(entities) for seed, entities in answer["seeds"]},
            relationships=relationships,
            mentioned_by={str(entity): _keys(drawers) for entity, drawers in answer["drawers"]},
        )

    def mentions_around(
        self, entities: Iterable[str], drawers: Iterable[str]
    ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """The drawers that mention each of `entities`, and the entities each of `drawers`
        mentions: one round trip."""
        answer = self.store.one(
            _AROUND,
            {
                "entities": [entity_record(entity) for entity in entities],
                "drawers": [RecordID("drawer", drawer) for drawer in drawers],
            },
        )
        return (
            {str(entity): _keys(found) for entity, found in answer["drawers"]},
            {str(drawer): _keys(found) for drawer, found in answer["entities"]},
        )

    def entity_names(self, entities: Iterable[str]) -> dict[str, str]:
        """Each entity's name: one round trip, none for no entity."""
        ids = [entity_record(entity) for entity in sorted(set(entities))]
        if not ids:
            return {}
        rows = self.store.one("SELECT VALUE [record::id(id), name] FROM $ids", {"ids": ids})
        return {str(key): str(name) for key, name in rows if name is not None}


def _keys(values: Any) -> list[str]:
    return [str(value) for value in values or () if value is not None]
