"""Reading the knowledge graph (graph.md section 7): the graph reads.

Entities (listed, shown with their counts), the drawers that mention one, the entities that may
be it under another spelling, its relationships, a fact's history, and the graph at a glance or
around an entity. Each checks the memory mode first; the lifecycle of every assertion is
computed on read (`graph.lifecycle`), at the instant asked about.

A search's expansion (`palace.search.expansion`) reads the graph around its direct hits here
too: the neighbourhood, the drawers around the entities it reaches, and their names. The search
checked the memory mode already.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from graph import lifecycle
from graph.entities import EntityNotFound, entity_ref, entity_values
from graph.facts import RelationshipNotFound, relationship_values
from graph.neighbourhood import Neighbourhood
from graph.repositories.reads import GraphReadRepository
from graph.shapes import (
    EntityCandidates,
    EntityList,
    EntityMentions,
    EntityRelationships,
    EntityShown,
    FactHistory,
    Graph,
)
from kernel.clock import utc_now
from kernel.context import RequestContext
from kernel.errors import InputInvalid
from kernel.validation import parse_instant, parse_limit, parse_uuid
from palace.shapes import listing_values

ENTITY_LIST_LIMIT = 50
MENTION_LIST_LIMIT = 200
OVERVIEW_TOP = 20
NEIGHBOURHOOD_LIMIT = 200
MAX_DEPTH = 3
HISTORY_ROUNDS = 100


class GraphReads:
    def __init__(
        self, repository: GraphReadRepository, *, clock: Callable[[], dt.datetime] = utc_now
    ) -> None:
        self._repository = repository
        self.clock = clock

    def _entity(self, entity_id: str) -> dict[str, Any]:
        found = self._repository.entity(parse_uuid(entity_id, "id"))
        if found is None:
            raise EntityNotFound(f"entity {entity_id!r} does not exist")
        return found

    def _relationship(self, relationship_id: str) -> dict[str, Any]:
        found = self._repository.relationships_by_ids([relationship_id]).get(relationship_id)
        if found is None:
            raise RelationshipNotFound(f"relationship {relationship_id!r} does not exist")
        return found

    def list_entities(
        self, ctx: RequestContext, *, name: object = None, kind: object = None, limit: object = None
    ) -> dict[str, Any]:
        ctx.require_read("list_entities")
        size = parse_limit(limit, default=ENTITY_LIST_LIMIT)
        if name is not None and not isinstance(name, str):
            raise InputInvalid("name", "must be a string")
        if kind is not None and not isinstance(kind, str):
            raise InputInvalid("kind", "must be a string")
        kind_label = kind.strip().lower() if kind else None
        rows = self._repository.list_entities(name or None, kind_label or None, size)
        return EntityList.render({"entities": [entity_values(row) for row in rows], "limit": size})

    def show_entity(self, ctx: RequestContext, entity_id: str) -> dict[str, Any]:
        ctx.require_read("show_entity")
        entity = self._entity(entity_id)
        counts = self._repository.entity_counts(entity["id"])
        return EntityShown.render({**entity_values(entity), "counts": counts})

    def relationships(
        self,
        ctx: RequestContext,
        entity_id: str,
        *,
        include_expired: object = None,
        as_of: object = None,
    ) -> dict[str, Any]:
        """An entity's assertions (either end), each with its lifecycle: those valid now, all of
        them with `include_expired`, or those valid at `as_of` with their state then."""
        ctx.require_read("entity_relationships")
        expired = _flag(include_expired, "include_expired")
        instant = _instant(as_of)
        if expired and instant is not None:
            raise InputInvalid(
                "as_of",
                "cannot be combined with `include_expired`: as_of and include_expired "
                "each say which relationships to read",
            )
        key = parse_uuid(entity_id, "id")
        found = self._repository.entity_graph(key)
        if not found or found.get("entity") is None:
            raise EntityNotFound(f"entity {entity_id!r} does not exist")
        at = instant or self.clock()
        rows = {row["id"]: row for row in found["relationships"]}
        if not expired:
            rows = {k: row for k, row in rows.items() if lifecycle.is_open(row, at)}
        assertions = {
            **{r["id"]: r for r in found["peers"]},
            **{r["id"]: r for r in found["relationships"]},
        }
        listed = self._with_lifecycle(list(rows.values()), found["links"], assertions, at)
        return EntityRelationships.render(
            {
                "entity": entity_values(found["entity"]),
                "as_of": instant,
                "include_expired": expired,
                "relationships": listed,
                "entities": {row["id"]: entity_ref(row) for row in found["entities"]},
            }
        )

    @staticmethod
    def _with_lifecycle(
        rows: Sequence[Mapping[str, Any]],
        links: Sequence[Mapping[str, Any]],
        assertions: Mapping[str, Mapping[str, Any]],
        at: dt.datetime,
    ) -> list[dict[str, Any]]:
        by_assertion: dict[str, list[Mapping[str, Any]]] = {}
        for link in {link["id"]: link for link in links}.values():
            by_assertion.setdefault(link["from_id"], []).append(link)
            if link["to_id"] != link["from_id"]:
                by_assertion.setdefault(link["to_id"], []).append(link)
        ordered = sorted(rows, key=lambda row: (row["valid_from"], row["id"]))
        return [
            {
                **relationship_values(row),
                "lifecycle": lifecycle.lifecycle(
                    row, by_assertion.get(row["id"], []), assertions, at
                ),
            }
            for row in ordered
        ]

    def mentions(
        self, ctx: RequestContext, entity_id: str, *, limit: object = None
    ) -> dict[str, Any]:
        """The drawers that mention an entity, with each mention's provenance and observation."""
        ctx.require_read("entity_mentions")
        size = parse_limit(limit, default=MENTION_LIST_LIMIT)
        entity = self._entity(entity_id)
        edges = self._repository.mentions_of(entity["id"], size)
        drawers = self._repository.drawer_listings(edge["in"] for edge in edges)
        listed = []
        for edge in edges:
            drawer = drawers.get(edge["in"])
            if drawer is None:
                continue
            entry: dict[str, Any] = {
                "drawer": listing_values(drawer),
                "observation": edge.get("observation"),
                "created_at": edge.get("created_at"),
            }
            if edge.get("provenance"):
                entry["provenance"] = edge["provenance"]
            listed.append(entry)
        return EntityMentions.render({"entity": entity_values(entity), "mentions": listed})

    def candidates(self, ctx: RequestContext, entity_id: str) -> dict[str, Any]:
        """The entities that may be this one under another spelling (`possibly_same_as`)."""
        ctx.require_read("entity_candidates")
        entity = self._entity(entity_id)
        edges = self._repository.candidates_of(entity["id"])
        others = self._repository.entities_by_ids(
            edge["out"] if edge["in"] == entity["id"] else edge["in"] for edge in edges
        )
        listed = []
        for edge in edges:
            older = edge["in"] == entity["id"]
            other = others.get(edge["out"] if older else edge["in"])
            if other is None:
                continue
            listed.append(
                {
                    "entity": entity_values(other),
                    "side": "older" if older else "newer",
                    "similarity": edge.get("similarity"),
                    "created_at": edge.get("created_at"),
                }
            )
        return EntityCandidates.render({"entity": entity_values(entity), "candidates": listed})

    def history(
        self, ctx: RequestContext, relationship_id: str, *, as_of: object = None
    ) -> dict[str, Any]:
        """An assertion and every assertion reachable from it over fact links (a bounded walk
        of 100 rounds), ordered by the start of validity, each with its lifecycle; with
        `as_of`, at that instant, without the assertions that start after it."""
        ctx.require_read("fact_history")
        instant = _instant(as_of)
        key = parse_uuid(relationship_id, "id")
        start = self._relationship(key)
        seen = {start["id"]}
        frontier = {start["id"]}
        links: dict[str, Mapping[str, Any]] = {}
        for _ in range(HISTORY_ROUNDS):
            found = self._repository.links_touching(frontier)
            for link in found:
                links[link["id"]] = link
            reached = {end for link in found for end in (link["from_id"], link["to_id"])}
            frontier = reached - seen
            if not frontier:
                break
            seen |= frontier
        assertions = self._repository.relationships_by_ids(seen)
        at = instant or self.clock()
        kept = [
            row for row in assertions.values() if instant is None or row["valid_from"] <= instant
        ]
        listed = self._with_lifecycle(kept, list(links.values()), assertions, at)
        ends = self._repository.entities_by_ids(
            end for row in assertions.values() for end in (row["in"], row["out"])
        )
        return FactHistory.render(
            {
                "relationship": start["id"],
                "as_of": instant,
                "assertions": listed,
                "entities": {k: entity_ref(row) for k, row in sorted(ends.items())},
            }
        )

    def overview(
        self,
        ctx: RequestContext,
        *,
        entity: object = None,
        depth: object = None,
        limit: object = None,
        as_of: object = None,
    ) -> dict[str, Any]:
        """The graph at a glance (counts and the most connected entities), or with `entity`
        the neighbourhood of an entity up to `depth` (1 to 3) hops over the relationships
        valid now (or at `as_of`)."""
        ctx.require_read("graph")
        instant = _instant(as_of)
        if entity is None or entity == "":
            if depth not in (None, ""):
                raise InputInvalid("depth", "needs `entity`")
            return Graph.render(self._at_a_glance(parse_limit(limit, default=OVERVIEW_TOP)))
        if not isinstance(entity, str):
            raise InputInvalid("entity", "must be an entity id")
        hops = _depth(depth)
        size = parse_limit(limit, default=NEIGHBOURHOOD_LIMIT)
        return Graph.render(self._around(entity, hops, size, instant))

    def _at_a_glance(self, size: int) -> dict[str, Any]:
        """The counts, and the `size` entities with the most relationships valid now."""
        counts = self._repository.overview()
        degree = counts.pop("degree")
        top = sorted(degree.items(), key=lambda item: (-item[1], item[0]))[:size]
        rows = self._repository.entities_by_ids(entity_id for entity_id, _ in top)
        return {
            "counts": counts,
            "top": [
                {**entity_values(rows[entity_id]), "relationships": n}
                for entity_id, n in top
                if entity_id in rows
            ],
        }

    def _around(
        self, entity_id: str, hops: int, size: int, instant: dt.datetime | None
    ) -> dict[str, Any]:
        """The entities up to `hops` away from an entity (at most `size` of them) over the
        relationships valid at `instant` (None: now), each relationship with its lifecycle."""
        center = self._entity(entity_id)
        at = instant or self.clock()
        reached, relationships, truncated = self._walk(center["id"], hops, size, at)
        links = self._repository.links_touching(relationships)
        peer_ids = {e for link in links for e in (link["from_id"], link["to_id"])} - set(
            relationships
        )
        assertions = {**self._repository.relationships_by_ids(peer_ids), **relationships}
        rows = self._repository.entities_by_ids(reached)
        return {
            "entity": entity_values(center),
            "depth": hops,
            "as_of": instant,
            "entities": [
                {**entity_values(rows[k]), "distance": reached[k]}
                for k in sorted(
                    reached, key=lambda k: (reached[k], rows[k]["name"] if k in rows else "", k)
                )
                if k in rows
            ],
            "relationships": self._with_lifecycle(
                list(relationships.values()), links, assertions, at
            ),
            "truncated": truncated,
        }

    def _walk(
        self, start: str, hops: int, size: int, at: dt.datetime
    ) -> tuple[dict[str, int], dict[str, dict[str, Any]], bool]:
        """Breadth first from `start` over the relationships open at `at`, oldest first: the
        entities reached with their distance, the relationships followed, and whether a
        relationship was left out because its ends would pass `size` entities."""
        reached = {start: 0}
        frontier = {start}
        relationships: dict[str, dict[str, Any]] = {}
        truncated = False
        for hop in range(1, hops + 1):
            found = [
                row
                for row in self._repository.relationships_around(frontier)
                if lifecycle.is_open(row, at)
            ]
            following: set[str] = set()
            for row in sorted(found, key=lambda row: (row["valid_from"], row["id"])):
                ends = [end for end in (row["in"], row["out"]) if end not in reached]
                if len(reached) + len(set(ends)) > size:
                    truncated = True
                    continue
                for end in ends:
                    reached[end] = hop
                    following.add(end)
                relationships[row["id"]] = row
            frontier = following
            if not frontier:
                break
        return reached, relationships, truncated

    # Around a search's hits (search.md section 4)

    def neighbourhood(self, seeds: Sequence[str], window: tuple[int, int] | None) -> Neighbourhood:
        """The entities the seeds (drawer ids) mention, the relationships of those entities held
        in `window` (`[start, end)` in nanoseconds; None: ever), and the drawers that mention
        each of the seeds' entities: one round trip."""
        return self._repository.neighbourhood(seeds, window)

    def mentions_around(
        self, entities: Iterable[str], drawers: Iterable[str]
    ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """The drawers that mention each of `entities`, and the entities each of `drawers`
        mentions: one round trip."""
        return self._repository.mentions_around(entities, drawers)

    def entity_names(self, entities: Iterable[str]) -> dict[str, str]:
        """Each entity's name: one round trip."""
        return self._repository.entity_names(entities)


def _flag(raw: object, field: str) -> bool:
    if raw is None or raw == "":
        return False
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "1", "yes"):
        return True
    if isinstance(raw, str) and raw.strip().lower() in ("false", "0", "no"):
        return False
    raise InputInvalid(field, f"must be true or false (got {raw!r})")


def _instant(raw: object) -> dt.datetime | None:
    if raw is None or raw == "":
        return None
    return parse_instant(raw, "as_of")


def _depth(raw: object) -> int:
    if raw is None or raw == "":
        return 1
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InputInvalid("depth", f"must be 1, 2 or 3 (got {raw!r})") from None
    if not 1 <= value <= MAX_DEPTH:
        raise InputInvalid("depth", f"must be 1, 2 or 3 (got {raw!r})")
    return value
