"""Search expansion through the knowledge graph (search.md section 4, api.md "Expansion", issue 7
item 6): the ranking of related drawers as a pure function, then the real store, indexes and
`SearchService` in this process, with a clock of the tests' own so validity instants are exact.

The graph records are written here with plain SurrealQL (an entity, a `mentions` edge, a
`relates_to` edge with its validity), so these tests depend only on the schema; the end-to-end
tests over HTTP (`test_graph_expansion_api.py`) write them through the daemon's routes and jobs.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from surrealdb import RecordID

from graph.neighbourhood import Relationship
from palace.search import expansion
from palace.search.expansion import Related, held, rank_related
from palace.search.query import to_ns
from palace.search.scope import OPEN
from tests.support.clock import Clock
from tests.support.instants import rfc3339
from tests.support.search_palace import STANDIN, SearchPalace, instant

NOW = instant(400)
MICRO = dt.timedelta(microseconds=1)


def everywhere(_drawer_id: str) -> bool:
    return True


def rel(
    subject: str, obj: str, since: int = 0, until: int = OPEN, confidence: float = 1.0
) -> Relationship:
    return Relationship(subject, obj, since, until, confidence)


# The pure ranking -------------------------------------------------------------------------------


def test_a_drawer_sharing_an_entity_with_a_hit_is_related() -> None:
    related = rank_related(
        ["hit"], {"hit": ["alice"]}, [], {"alice": ["hit", "other"]}, everywhere, None, 10
    )
    assert related == [Related("other", 1.0, ("alice",), 0)]


def test_a_drawer_one_hop_away_is_related_in_either_direction() -> None:
    mentioned_by = {"alice": ["hit"], "acme": ["a"], "bob": ["b"]}
    relationships = [rel("alice", "acme", confidence=0.6), rel("bob", "alice")]
    related = rank_related(
        ["hit"], {"hit": ["alice"]}, relationships, mentioned_by, everywhere, None, 10
    )
    assert related == [
        Related("b", 0.5, ("alice", "bob"), 0),
        Related("a", 0.3, ("acme", "alice"), 0),
    ]


def test_a_hop_is_taken_once_from_a_seed_entity_and_never_between_them() -> None:
    # alice and acme are both the hit's: the relationship between them adds nothing, and a
    # drawer mentioning acme shares it (1), it is not one hop from alice (0.5).
    related = rank_related(
        ["hit"],
        {"hit": ["alice", "acme"]},
        [rel("alice", "acme")],
        {"acme": ["a"], "alice": ["hit"]},
        everywhere,
        None,
        10,
    )
    assert related == [Related("a", 1.0, ("acme",), 0)]


def test_best_first_by_graph_signal_then_seed_rank_then_id() -> None:
    seeds = ["first", "second"]
    seed_entities = {"first": ["x"], "second": ["y", "z"]}
    mentioned_by = {
        "x": ["b-from-first", "a-from-first"],
        "y": ["both", "from-second"],
        "z": ["both"],
    }
    related = rank_related(seeds, seed_entities, [], mentioned_by, everywhere, None, 10)
    assert [(r.drawer_id, r.graph, r.seed_rank) for r in related] == [
        ("both", 2.0, 1),
        ("a-from-first", 1.0, 0),
        ("b-from-first", 1.0, 0),
        ("from-second", 1.0, 1),
    ]
    assert related[0].via == ("y", "z")


def test_seeds_out_of_scope_drawers_and_the_limit() -> None:
    mentioned_by = {"e": ["hit", "other-hit", "in-1", "in-2", "in-3", "outside"]}
    related = rank_related(
        ["hit", "other-hit"],
        {"hit": ["e"]},
        [],
        mentioned_by,
        lambda drawer: drawer != "outside",
        None,
        2,
    )
    assert [r.drawer_id for r in related] == ["in-1", "in-2"]
    assert rank_related(["hit"], {"hit": ["e"]}, [], mentioned_by, everywhere, None, 0) == []
    assert rank_related([], {}, [], mentioned_by, everywhere, None, 10) == []


def test_a_relationship_is_followed_only_when_it_held_in_the_period() -> None:
    closed = rel("alice", "acme", since=100, until=200)
    assert held(closed, None)
    assert held(closed, (100, 101))
    assert held(closed, (199, 200))
    assert not held(closed, (200, 201))  # closed exactly then
    assert not held(closed, (99, 100))  # opened exactly at the end of the window
    assert held(closed, (50, 150))
    assert held(closed, (150, 500))
    assert not held(closed, (300, 400))
    assert held(rel("alice", "acme", since=100), (10**18, 10**18 + 1))

    def related(window: tuple[int, int] | None) -> list[str]:
        found = rank_related(
            ["hit"],
            {"hit": ["alice"]},
            [closed],
            {"alice": ["hit"], "acme": ["a"]},
            everywhere,
            window,
            10,
        )
        return [r.drawer_id for r in found]

    assert related((150, 151)) == ["a"]
    assert related((250, 251)) == []
    assert related(None) == ["a"]


def test_both_sides_of_a_conflict_are_followed() -> None:
    # Two open assertions of a single-valued predicate with different objects: both hold.
    relationships = [rel("alice", "berlin", confidence=0.9), rel("alice", "paris", confidence=0.4)]
    related = rank_related(
        ["hit"],
        {"hit": ["alice"]},
        relationships,
        {"alice": ["hit"], "berlin": ["b"], "paris": ["p"]},
        everywhere,
        (1000, 1001),
        10,
    )
    assert [(r.drawer_id, r.graph) for r in related] == [("b", 0.45), ("p", 0.2)]


# Through the real store and search -------------------------------------------------------------


class Graph:
    """Entities, mentions and relationships written straight into a palace's store."""

    def __init__(self, palace: SearchPalace) -> None:
        self.store = palace.store
        self.names: dict[str, str] = {}

    def entity(self, name: str, kind: str = "tool") -> str:
        entity_id = str(uuid.uuid4())
        self.store.query(
            "CREATE type::record('entity', $id) CONTENT $row",
            {"id": entity_id, "row": {"name": name, "kind": kind, "key": name.lower()}},
        )
        self.names[entity_id] = name
        return entity_id

    def mention(self, drawer: dict[str, Any], *entity_ids: str) -> None:
        for entity_id in entity_ids:
            self.store.query(
                "RELATE $d->mentions->$e CONTENT {created_at: time::now()}",
                {"d": RecordID("drawer", drawer["id"]), "e": RecordID("entity", entity_id)},
            )

    def relate(
        self,
        subject: str,
        obj: str,
        *,
        since: dt.datetime,
        until: dt.datetime | None = None,
        confidence: float | None = 0.6,
    ) -> None:
        row: dict[str, Any] = {"predicate": "uses", "valid_from": since}
        if until is not None:
            row["valid_to"] = until
        if confidence is not None:
            row["confidence"] = confidence
        self.store.query(
            "RELATE $s->relates_to->$o CONTENT $row",
            {"s": RecordID("entity", subject), "o": RecordID("entity", obj), "row": row},
        )


@pytest.fixture
def palace(tmp_path: Path) -> Iterator[SearchPalace]:
    opened = SearchPalace(tmp_path, Clock(NOW))
    yield opened
    opened.close()


@pytest.fixture
def graph(palace: SearchPalace) -> Graph:
    return Graph(palace)


def ids(answer: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in answer["results"]]


def expanded(answer: dict[str, Any]) -> list[tuple[str, float, list[str]]]:
    return [
        (hit["id"], hit["signals"]["graph"], hit["via"])
        for hit in answer["results"]
        if "via" in hit
    ]


def test_expansion_appends_related_drawers_after_the_direct_hits(
    palace: SearchPalace, graph: Graph
) -> None:
    hit = palace.file("work", "people", "Alice reviews the payment code", valid_from=instant(1))
    other = palace.file("work", "people", "Alice's favourite editor is vim", valid_from=instant(1))
    far = palace.file("work", "tools", "Acme builds the card terminal", valid_from=instant(1))
    alice, acme = graph.entity("Alice", "person"), graph.entity("Acme", "organization")
    graph.mention(hit, alice)
    graph.mention(other, alice)
    graph.mention(far, acme)
    graph.relate(alice, acme, since=instant(2), confidence=0.8)

    plain = palace.search(q="payment")
    assert ids(plain) == [hit["id"]]
    assert "via" not in plain["results"][0]
    answer = palace.search(q="payment", expand="true")
    assert answer["results"][0] == plain["results"][0]
    assert expanded(answer) == [(other["id"], 1.0, ["Alice"]), (far["id"], 0.4, ["Acme", "Alice"])]
    tail = answer["results"][1]
    assert tail["score"] == 1.0
    assert tail["signals"] == {"graph": 1.0}
    assert tail["content"] == other["content"]
    assert tail["valid_from"] == instant(1)


def test_expand_false_or_nothing_to_follow_changes_nothing(
    palace: SearchPalace, graph: Graph
) -> None:
    first = palace.file("work", "db", "postgres replication lag alert", valid_from=instant(1))
    second = palace.file("work", "db", "postgres vacuum schedule", valid_from=instant(1))
    palace.file("work", "db", "mysql was retired", valid_from=instant(1))
    plain = palace.search(q="postgres")
    assert palace.search(q="postgres", expand="false") == plain
    # Mentions that connect nothing new: the drawers are direct hits already.
    pg = graph.entity("Postgres")
    graph.mention(first, pg)
    graph.mention(second, pg)
    assert palace.search(q="postgres", expand="true") == plain
    assert ids(plain) and set(ids(plain)) == {first["id"], second["id"]}
    # No direct hit, nothing to expand from.
    assert palace.search(q="oracle", expand="true")["results"] == []


def test_the_direct_hits_keep_their_order_and_the_tail_respects_the_limit(
    palace: SearchPalace, graph: Graph
) -> None:
    hits = [
        palace.file("work", "db", f"index tuning note {i} " + "index " * i, valid_from=instant(1))
        for i in range(1, 4)
    ]
    shared = graph.entity("Postgres")
    for drawer in hits:
        graph.mention(drawer, shared)
    related = []
    for i in range(5):
        drawer = palace.file("work", "db", f"unrelated words {i}", valid_from=instant(1))
        graph.mention(drawer, shared)
        related.append(drawer["id"])
    plain = palace.search(q="index", limit="3")
    answer = palace.search(q="index", limit="3", expand="true")
    assert answer["results"][:3] == plain["results"]
    assert ids(answer)[3:] == sorted(related)[:3]
    assert len(answer["results"]) == 6
    # Never a direct hit twice: with a wider page the hits are direct, the rest related.
    wide = palace.search(q="index", limit="10", expand="true")
    assert ids(wide)[:3] == ids(plain)
    assert ids(wide)[3:] == sorted(related)


def test_related_drawers_keep_to_the_wing_and_room(palace: SearchPalace, graph: Graph) -> None:
    hit = palace.file("work", "db", "the database is postgres", valid_from=instant(1))
    same_room = palace.file("work", "db", "replicas lag at night", valid_from=instant(1))
    other_room = palace.file("work", "ops", "the nightly backup job", valid_from=instant(1))
    other_wing = palace.file("home", "db", "my own server at home", valid_from=instant(1))
    pg = graph.entity("Postgres")
    graph.mention(hit, pg)
    for drawer in (same_room, other_room, other_wing):
        graph.mention(drawer, pg)

    def related(**scope: str) -> set[str]:
        return {item[0] for item in expanded(palace.search(q="database", expand="true", **scope))}

    assert related() == {same_room["id"], other_room["id"], other_wing["id"]}
    assert related(wing="work") == {same_room["id"], other_room["id"]}
    assert related(wing="work", room="db") == {same_room["id"]}
    assert related(room="db") == {same_room["id"], other_wing["id"]}
    assert related(wing="home") == set()  # no direct hit there


def test_related_drawers_must_be_valid_in_the_requested_time(
    palace: SearchPalace, graph: Graph
) -> None:
    hit = palace.file("work", "db", "the database is postgres", valid_from=instant(1))
    old = palace.file("work", "ops", "backups go to tape", valid_from=instant(1))
    pg = graph.entity("Postgres")
    graph.mention(hit, pg)
    graph.mention(old, pg)
    new = palace.supersede(old["id"], "backups go to object storage", instant(100))
    assert new is not None
    graph.mention(new, pg)
    palace.clock.set(NOW)

    def related(**when: str) -> set[str]:
        return {item[0] for item in expanded(palace.search(q="database", expand="true", **when))}

    assert related() == {new["id"]}
    assert related(as_of=rfc3339(instant(50))) == {old["id"]}
    assert related(as_of=rfc3339(instant(100) - MICRO)) == {old["id"]}
    assert related(as_of=rfc3339(instant(100))) == {new["id"]}
    assert related(include_historical="true") == {old["id"], new["id"]}
    window = {"from": rfc3339(instant(50)), "until": rfc3339(instant(150))}
    assert related(**window) == {old["id"], new["id"]}
    assert related(**{"from": rfc3339(instant(100)), "until": rfc3339(instant(150))}) == {new["id"]}


def test_a_relationship_closed_before_the_instant_is_not_followed(
    palace: SearchPalace, graph: Graph
) -> None:
    hit = palace.file("work", "team", "Alice leads the payments team", valid_from=instant(1))
    far = palace.file("work", "vendors", "Acme ships the terminals", valid_from=instant(1))
    alice, acme = graph.entity("Alice", "person"), graph.entity("Acme", "organization")
    graph.mention(hit, alice)
    graph.mention(far, acme)
    graph.relate(alice, acme, since=instant(10), until=instant(100), confidence=None)

    def related(**when: str) -> list[tuple[str, float, list[str]]]:
        return expanded(palace.search(q="payments", expand="true", **when))

    reached = [(far["id"], 0.5, ["Acme", "Alice"])]
    assert related() == []
    assert related(as_of=rfc3339(instant(50))) == reached
    assert related(as_of=rfc3339(instant(100) - MICRO)) == reached
    assert related(as_of=rfc3339(instant(100))) == []
    assert related(as_of=rfc3339(instant(10) - MICRO)) == []
    assert related(include_historical="true") == reached
    assert related(**{"from": rfc3339(instant(90)), "until": rfc3339(instant(200))}) == reached
    assert related(**{"from": rfc3339(instant(100)), "until": rfc3339(instant(200))}) == []


def test_expansion_works_for_every_ranking(palace: SearchPalace, graph: Graph) -> None:
    hit = palace.file("work", "db", "the database is postgres", valid_from=instant(1))
    other = palace.file("work", "ops", "nightly backups", valid_from=instant(1))
    palace.attach(hit["id"], [1.0] + [0.0] * 7)
    palace.attach(other["id"], [0.0, 1.0] + [0.0] * 6)
    pg = graph.entity("Postgres")
    graph.mention(hit, pg)
    graph.mention(other, pg)
    for ranking in ("semantic", "hybrid"):
        body = {
            "text": "database",
            "ranking": ranking,
            "limit": 1,
            "profile": STANDIN,
            "query_embedding": [1.0] + [0.0] * 7,
            "expand": True,
        }
        answer = palace.search_body(body)
        assert ids(answer) == [hit["id"], other["id"]], ranking
        assert answer["results"][1]["via"] == ["Postgres"]


def test_a_deleted_related_drawer_is_skipped(palace: SearchPalace, graph: Graph) -> None:
    hit = palace.file("work", "db", "the database is postgres", valid_from=instant(1))
    gone = palace.file("work", "db", "a drawer about to go", valid_from=instant(1))
    pg = graph.entity("Postgres")
    graph.mention(hit, pg)
    graph.mention(gone, pg)
    palace.store.query("DELETE $d", {"d": RecordID("drawer", gone["id"])})
    assert ids(palace.search(q="database", expand="true")) == [hit["id"]]


def test_the_graph_is_read_in_nanoseconds_of_validity(palace: SearchPalace, graph: Graph) -> None:
    hit = palace.file("work", "db", "the database is postgres", valid_from=instant(1))
    pg, acme = graph.entity("Postgres"), graph.entity("Acme")
    graph.mention(hit, pg)
    graph.relate(pg, acme, since=instant(5), until=instant(6), confidence=0.5)
    found = expansion.neighbourhood(palace.graph, [hit["id"]], None, 10)
    assert found.seed_entities == {hit["id"]: [pg]}
    assert found.relationships == [
        Relationship(pg, acme, to_ns(instant(5)), to_ns(instant(6)), 0.5)
    ]
    assert found.mentioned_by == {pg: [hit["id"]], acme: []}
    window = (to_ns(instant(7)), to_ns(instant(7)) + 1)
    assert expansion.neighbourhood(palace.graph, [hit["id"]], window, 10).relationships == []
    assert palace.graph.entity_names([pg, acme]) == {pg: "Postgres", acme: "Acme"}


def test_only_the_best_hops_have_their_drawers_read(palace: SearchPalace, graph: Graph) -> None:
    hit = palace.file("work", "db", "the database is postgres", valid_from=instant(1))
    pg = graph.entity("Postgres")
    graph.mention(hit, pg)
    hops = {}
    for n, confidence in enumerate((0.5, 0.9, 0.7, 0.8, 0.6)):
        hops[confidence] = graph.entity(f"Tool{n}")
        graph.relate(pg, hops[confidence], since=instant(1), confidence=confidence)
        about = palace.file("work", "db", f"about tool {n}", valid_from=instant(1))
        graph.mention(about, hops[confidence])
    both = palace.file("work", "db", "postgres and tool 0", valid_from=instant(1))
    graph.mention(both, pg, hops[0.5])
    limit = 1
    assert expansion.HOP_ENTITIES_PER_RESULT * limit == 3
    read = expansion.neighbourhood(palace.graph, [hit["id"]], None, limit).mentioned_by
    assert set(read) == {pg, hops[0.9], hops[0.8], hops[0.7], hops[0.5]}
    # A hop left unread is listed with the drawers that share an entity with the hit only, so
    # their signal still counts it.
    assert read[hops[0.5]] == [both["id"]]
    (related,) = expansion.expand(palace.graph, [hit["id"]], everywhere, None, limit)
    assert (related.drawer_id, related.graph, related.via) == (
        both["id"],
        1.25,
        ("Postgres", "Tool0"),
    )
    # Asked for more, every hop is read and ranked.
    related = expansion.expand(palace.graph, [hit["id"]], everywhere, None, 6)
    assert [item.graph for item in related] == [1.25, 0.45, 0.4, 0.35, 0.3, 0.25]


def test_the_graph_reads_what_expansion_asks_for(palace: SearchPalace, graph: Graph) -> None:
    hit = palace.file("work", "db", "the database is postgres", valid_from=instant(1))
    other = palace.file("work", "ops", "postgres runs at acme", valid_from=instant(1))
    pg, acme = graph.entity("Postgres"), graph.entity("Acme")
    graph.mention(hit, pg)
    graph.mention(other, pg, acme)
    graph.relate(pg, acme, since=instant(5), confidence=None)
    found = palace.graph.neighbourhood([hit["id"]], None)
    assert found.seed_entities == {hit["id"]: [pg]}
    # An open relationship has no end; one that records no confidence counts as certain.
    assert found.relationships == [Relationship(pg, acme, to_ns(instant(5)), None, 1.0)]
    assert sorted(found.mentioned_by[pg]) == sorted([hit["id"], other["id"]])
    drawers, entities = palace.graph.mentions_around([acme], [other["id"]])
    assert drawers == {acme: [other["id"]]}
    assert sorted(entities[other["id"]]) == sorted([pg, acme])
    assert palace.graph.mentions_around([], []) == ({}, {})
    assert palace.graph.entity_names([]) == {}
