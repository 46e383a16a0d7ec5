"""Search expansion through the knowledge graph (search.md section 4, api.md "Expansion").

The direct hits of a search are the seeds. A drawer is related to them when it mentions an
entity a seed mentions (a shared entity), or an entity one relationship hop away from one of
those (`seed -> mentions -> entity -> relates_to -> entity <- mentions <- drawer`, the hop taken
in either direction). A hop is followed only when its relationship held at some instant of the
search's period, by the same half-open rule as a drawer's validity: closed relationships are not
followed at a later instant, and both sides of an unresolved conflict are, since both are open.
A related drawer must itself pass the search's scope and period, the same predicate as the
direct hits (the search catalog's mask), and is never one of the direct hits.

Best first, deterministically: by the graph signal (1 for each entity the drawer shares with a
seed, plus half the best confidence of the relationship for each entity it reaches by a hop),
then by the rank of the best seed it connects to, then by drawer id. `via` names the connecting
entities, sorted: the drawer's own entities that connect it and, for a hop, the seeds' entities
at the other end.

The search service drives it; the graph is read through the graph's reads (`GraphReads`), by
record id through the graph edges (never a table scan), in two queries per search: the seeds'
entities, the relationships of those entities held in the period and the
drawers that mention the seeds' entities; then the drawers that mention the entities one hop
away. Only the best `HOP_ENTITIES_PER_RESULT` times `limit` of those have their drawers read (by
the hop's weight, then the rank of the seed, then the entity id, the order of the ranking): the
cost of listing drawers grows with the entities reached (ten hits in a dense part of the graph
reach hundreds), while the answer needs `limit` drawers. The same query reads the entities of
the drawers that share an entity with a seed, so their signal still counts every hop they
mention: a drawer reached only through a hop left unread is not appended, and such a hop may be
missing from the signal of a drawer found only through another hop. A third query names the
entities of the drawers kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graph.neighbourhood import DEFAULT_CONFIDENCE, Neighbourhood, Relationship
from palace.search.scope import Scope

if TYPE_CHECKING:
    from graph.reads import GraphReads
    from palace.search.catalog import Catalog

SHARED_WEIGHT = 1.0
"""What an entity a related drawer shares with a seed adds to its graph signal."""
HOP_WEIGHT = 0.5
"""What an entity one relationship hop away adds, times the relationship's confidence."""
HOP_ENTITIES_PER_RESULT = 3
"""How many entities one hop away have their drawers read, per related drawer asked for."""


@dataclass(frozen=True)
class Related:
    """A drawer expansion appends: its graph signal, the connecting entities (ids from
    `rank_related`, names from `expand`; sorted) and the 0-based rank of the best direct hit
    it connects to."""

    drawer_id: str
    graph: float
    via: tuple[str, ...]
    seed_rank: int


def held(relationship: Relationship, window: tuple[int, int] | None) -> bool:
    """Whether the relationship held at some instant of `[start, end)` (None: at any time),
    by the drawers' rule (`palace/search/scope.py`): it began before the end of the window and
    had not ended by its start."""
    if window is None:
        return True
    start, end = window
    return relationship.valid_from < end and (
        relationship.valid_to is None or relationship.valid_to > start
    )


Hops = dict[str, tuple[float, int, set[str]]]


def reach(
    seeds: Sequence[str],
    seed_entities: Mapping[str, Iterable[str]],
    relationships: Iterable[Relationship],
    window: tuple[int, int] | None,
) -> tuple[dict[str, int], Hops]:
    """The entities the seeds mention, each with the rank of the best seed mentioning it, and
    those one hop from them by a relationship held in `window`, each with the best hop weight,
    the best seed rank and the seeds' entities at the near end."""
    shared: dict[str, int] = {}
    for rank, seed in enumerate(seeds):
        for entity in seed_entities.get(seed, ()):
            if entity not in shared:
                shared[entity] = rank
    hopped: Hops = {}
    for relationship in relationships:
        if not held(relationship, window):
            continue
        for near, far in (
            (relationship.subject, relationship.object),
            (relationship.object, relationship.subject),
        ):
            if near not in shared or far in shared:
                continue
            confidence = relationship.confidence
            weight = HOP_WEIGHT * (DEFAULT_CONFIDENCE if confidence is None else confidence)
            best_weight, best_rank, ends = hopped.get(far, (0.0, len(seeds), set()))
            ends.add(near)
            hopped[far] = (max(best_weight, weight), min(best_rank, shared[near]), ends)
    return shared, hopped


def best_hops(hopped: Hops, count: int) -> list[str]:
    """The `count` entities one hop away that the ranking puts first: by hop weight, then the
    rank of the seed they connect to, then id."""
    ordered = sorted(hopped.items(), key=lambda item: (-item[1][0], item[1][1], item[0]))
    return [entity for entity, _ in ordered[: max(count, 0)]]


def rank_related(
    seeds: Sequence[str],
    seed_entities: Mapping[str, Iterable[str]],
    relationships: Iterable[Relationship],
    mentioned_by: Mapping[str, Iterable[str]],
    in_scope: Callable[[str], bool],
    window: tuple[int, int] | None,
    limit: int,
) -> list[Related]:
    """The related drawers, best first, at most `limit`, with the entity ids that connect them.

    `seeds` are the direct hits in rank order; `seed_entities` maps a seed to the entities it
    mentions; `relationships` are (at least) those touching a seed's entity; `mentioned_by`
    maps an entity to the drawers that mention it; `in_scope` says whether a drawer passes the
    search's scope and period; `window` is that period in nanoseconds (None: all of time).
    """
    if limit <= 0:
        return []
    seed_set = set(seeds)
    shared, hopped = reach(seeds, seed_entities, relationships, window)
    # The drawers mentioning any of them, with what connects each.
    found: dict[str, tuple[list[float], int, set[str]]] = {}
    reached: list[tuple[str, float, int, Iterable[str]]] = [
        (entity, SHARED_WEIGHT, rank, ()) for entity, rank in shared.items()
    ]
    reached += [(entity, weight, rank, ends) for entity, (weight, rank, ends) in hopped.items()]
    for entity, weight, rank, ends in sorted(reached, key=lambda item: item[0]):
        for drawer_id in mentioned_by.get(entity, ()):
            if drawer_id in seed_set or not in_scope(drawer_id):
                continue
            weights, best_rank, via = found.get(drawer_id, ([], len(seeds), set()))
            weights.append(weight)
            via.add(entity)
            via.update(ends)
            found[drawer_id] = (weights, min(best_rank, rank), via)
    related = [
        Related(drawer_id, round(sum(weights), 6), tuple(sorted(via)), rank)
        for drawer_id, (weights, rank, via) in found.items()
    ]
    related.sort(key=lambda item: (-item.graph, item.seed_rank, item.drawer_id))
    return related[:limit]


# Reading the graph ---------------------------------------------------------------------------


def neighbourhood(
    graph: GraphReads, seeds: Sequence[str], window: tuple[int, int] | None, limit: int
) -> Neighbourhood:
    """The seeds' entities, the relationships of those held in `window` (None: ever), and the
    drawers that mention each of the seeds' entities and of the best `HOP_ENTITIES_PER_RESULT`
    times `limit` entities one hop away (`best_hops`), in two queries. A hop left unread is
    listed with the drawers sharing an entity with a seed that mention it."""
    found = graph.neighbourhood(seeds, window)
    _, hopped = reach(seeds, found.seed_entities, found.relationships, window)
    hops = best_hops(hopped, HOP_ENTITIES_PER_RESULT * limit)
    if not hops:
        return found
    unread = set(hopped) - set(hops)
    sharing = (
        sorted(
            {drawer for drawers in found.mentioned_by.values() for drawer in drawers} - set(seeds)
        )
        if unread
        else []
    )
    hop_drawers, sharing_entities = graph.mentions_around(hops, sharing)
    mentioned_by = {**found.mentioned_by, **hop_drawers}
    for drawer, entities in sharing_entities.items():
        for entity in entities:
            if entity in unread:
                mentioned_by.setdefault(entity, []).append(drawer)
    return Neighbourhood(found.seed_entities, found.relationships, mentioned_by)


def expand(
    graph: GraphReads,
    seeds: Sequence[str],
    in_scope: Callable[[str], bool],
    window: tuple[int, int] | None,
    limit: int,
) -> list[Related]:
    """The drawers related to the direct hits `seeds` (in rank order), best first, at most
    `limit`, none of them a seed; `in_scope` and `window` are the search's scope and period.
    `via` holds entity names."""
    if not seeds or limit <= 0:
        return []
    found = neighbourhood(graph, seeds, window, limit)
    related = rank_related(
        seeds,
        found.seed_entities,
        found.relationships,
        found.mentioned_by,
        in_scope,
        window,
        limit,
    )
    names = graph.entity_names({entity for item in related for entity in item.via})
    return [
        Related(
            item.drawer_id,
            item.graph,
            tuple(sorted({names.get(entity, entity) for entity in item.via})),
            item.seed_rank,
        )
        for item in related
    ]


# In a search ---------------------------------------------------------------------------------


def in_catalog(catalog: Catalog, scope: Scope) -> Callable[[str], bool]:
    """Whether a drawer passes `scope`, by the search catalog's mask: the very predicate the
    direct hits passed. Call it under the indexes' lock; the answer is a snapshot (a drawer
    the catalog gains afterwards is out of it)."""
    mask = catalog.mask(scope)
    rows = catalog.rows

    def passes(drawer_id: str) -> bool:
        row = rows.get(drawer_id)
        return row is not None and row < len(mask) and bool(mask[row])

    return passes
