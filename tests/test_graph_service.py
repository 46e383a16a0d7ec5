"""The graph's services on a real (in-memory) store: the extract job's seam (`ExtractionRecords`:
`record_extraction`, `close_facts_of`, `link_successor_facts`), checkpoint facts
(`FactService.apply_fact`), a person's mentions and aliases (`EntityService`) and the reads with
their lifecycle (`GraphReads`). The end-to-end behaviour over HTTP is in test_graph_api.py."""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from graph.entities import EmptyLabel, EntityNotFound, EntityService
from graph.extraction_records import ExtractionRecords
from graph.facts import FactService, RelationshipNotFound, check_fact_labels
from graph.reads import GraphReads
from graph.repositories.entities import EntityRepository
from graph.repositories.extraction import ExtractionRepository
from graph.repositories.facts import FactRepository
from graph.repositories.reads import GraphReadRepository
from kernel.context import RequestContext
from kernel.errors import InputInvalid, ModeForbidden
from kernel.events import EventBus
from kernel.store import Store
from palace.filing import Filing
from palace.hierarchy import DrawerNotFound
from tests.support.clock import Clock
from tests.support.palace_services import Palace, build

T0 = dt.datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=dt.UTC)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@dataclass(frozen=True)
class Graph:
    """The graph's services on one store, clock and event bus, wired as the composition root
    wires them."""

    entities: EntityService
    facts: FactService
    records: ExtractionRecords
    reads: GraphReads
    events: EventBus


def build_graph(store: Store, clock: Clock, events: EventBus | None = None) -> Graph:
    bus = events or EventBus()
    entities = EntityService(EntityRepository(store), bus, clock=clock)
    return Graph(
        entities=entities,
        facts=FactService(FactRepository(store), entities, bus, clock=clock),
        records=ExtractionRecords(ExtractionRepository(store), entities, bus, clock=clock),
        reads=GraphReads(GraphReadRepository(store), clock=clock),
        events=bus,
    )


@pytest.fixture
def graph(store: Store, clock: Clock) -> Graph:
    return build_graph(store, clock)


@pytest.fixture
def palace(store: Store, clock: Clock) -> Palace:
    return build(store, clock=clock)


def drawer(palace: Palace, ctx: RequestContext, content: str, **source: Any) -> dict:
    filed, _ = palace.filing.file(
        ctx, "graph", "notes", Filing(content=content, source={"kind": "manual", **source})
    )
    return filed


def mined(palace: Palace, ctx: RequestContext, content: str, document: str) -> dict:
    record = drawer(palace, ctx, content)
    record["source"] = {
        "kind": "file",
        "origin": {
            "source_id": "src-1",
            "source": "directory",
            "document": document,
            "chunk": 0,
            "revision": "rev-1",
        },
    }
    return record


def rels(graph: Graph, ctx: RequestContext, entity_id: str, **options: Any) -> list:
    return graph.reads.relationships(ctx, entity_id, **options)["relationships"]


def entity_id(graph: Graph, name: str, kind: str = "other") -> str:
    return graph.entities.resolve(name, kind).entity["id"]


def test_record_extraction_writes_everything_once(
    graph: Graph, palace: Palace, ctx: RequestContext, store: Store
) -> None:
    source = mined(palace, ctx, "Alice works on MemCastle. MemCastle uses SurrealDB.", "team.md")
    entities = [
        {"name": "Alice", "kind": "person"},
        {"name": "MemCastle", "kind": "project"},
        {"name": "SurrealDB", "kind": "tool"},
        {"name": "Memcastle", "kind": "project"},  # a spelling of the same entity
    ]
    relations = [
        {"subject": "Alice", "predicate": "works_on", "object": "MemCastle", "confidence": 0.6},
        {"subject": "MemCastle", "predicate": "uses", "object": "SurrealDB", "confidence": 0.6},
        {"subject": "Memcastle", "predicate": "uses", "object": "SurrealDB", "confidence": 0.6},
        {"subject": "Alice", "predicate": "uses", "object": "Alice", "confidence": 0.6},
        {"subject": "Alice", "predicate": "owns", "object": "Nobody", "confidence": 0.6},
    ]
    counts = graph.records.record_extraction(
        source, entities, relations, extractor="heuristic", job_id="job-1", valid_from=T0
    )
    assert counts == (3, 2)
    again = graph.records.record_extraction(
        source, entities, relations, extractor="heuristic", job_id="job-1", valid_from=T0
    )
    assert again == (3, 2)
    assert len(store.one("SELECT * FROM relates_to")) == 2
    assert len(store.one("SELECT * FROM mentions")) == 3
    assert len(store.one("SELECT * FROM entity")) == 3
    marker = ExtractionRepository(store).marker(source["id"])
    assert (marker["extractor"], marker["entities"], marker["relations"], marker["job"]) == (
        "heuristic",
        3,
        2,
        "job-1",
    )
    alice = entity_id(graph, "Alice", "person")
    [works_on] = rels(graph, ctx, alice)
    assert works_on["predicate"] == "works_on"
    assert works_on["provenance"] == {
        "drawer": source["id"],
        "extractor": "heuristic",
        "job_id": "job-1",
        "extracted_at": T0,
        "origin": {
            "source_id": "src-1",
            "source": "directory",
            "provider": "directory",
            "document": "team.md",
            "chunk": 0,
            "revision": "rev-1",
        },
    }
    assert "assertion" not in works_on
    assert works_on["lifecycle"] == {"state": "current", "links": []}
    [mention] = graph.reads.mentions(ctx, alice)["mentions"]
    assert mention["observation"] == {"name": "Alice", "rule": "new", "confidence": 1.0}
    assert mention["drawer"]["id"] == source["id"]
    assert mention["provenance"]["drawer"] == source["id"]


def test_an_empty_answer_still_writes_the_marker(
    graph: Graph, palace: Palace, ctx: RequestContext, store: Store
) -> None:
    source = drawer(palace, ctx, "nothing to see")
    assert graph.records.record_extraction(
        source, [], [], extractor="command", job_id=None, valid_from=T0
    ) == (0, 0)
    marker = ExtractionRepository(store).marker(source["id"])
    assert (marker["entities"], marker["relations"], "job" in marker) == (0, 0, False)


def test_extracted_validity_is_never_later_than_now(
    graph: Graph, palace: Palace, ctx: RequestContext, clock: Clock
) -> None:
    source = drawer(palace, ctx, "A uses B")
    graph.records.record_extraction(
        source,
        [{"name": "Aaa", "kind": "tool"}, {"name": "Bbb", "kind": "tool"}],
        [{"subject": "Aaa", "predicate": "uses", "object": "Bbb", "confidence": 0.5}],
        extractor="heuristic",
        job_id=None,
        valid_from=T0 + dt.timedelta(days=30),
    )
    [row] = rels(graph, ctx, entity_id(graph, "Aaa", "tool"))
    assert row["valid_from"] == T0


def located(graph: Graph, source: dict, place: str, confidence: float = 0.6) -> None:
    located_from(graph, source, place, source["valid_from"], confidence=confidence)


def test_inferred_confirms_and_contradicts(
    graph: Graph, palace: Palace, ctx: RequestContext, clock: Clock
) -> None:
    first = drawer(palace, ctx, "Alice is based in Berlin.")
    located(graph, first, "Berlin")
    clock.advance(days=1)
    second = drawer(palace, ctx, "Alice lives in Berlin now.")
    located(graph, second, "Berlin")
    clock.advance(days=1)
    third = drawer(palace, ctx, "Alice is based in Paris.")
    located(graph, third, "Paris", confidence=0.8)
    alice = entity_id(graph, "Alice", "person")
    listed = {(r["provenance"]["drawer"], r["to"]): r for r in rels(graph, ctx, alice)}
    assert len(listed) == 3
    paris = next(r for r in listed.values() if r["provenance"]["drawer"] == third["id"])
    assert paris["lifecycle"]["state"] == "conflicting"
    assert paris["lifecycle"]["preferred"] == paris["id"]
    assert paris["lifecycle"]["basis"] == ["explicit", "confidence"]
    kinds = sorted((link["kind"], link["origin"]) for link in paris["lifecycle"]["links"])
    assert kinds == [("contradicts", "inferred"), ("contradicts", "inferred")]
    assert {link["reason"] for link in paris["lifecycle"]["links"]} == {
        "v1: different objects for a single-valued predicate"
    }
    berlin = next(r for r in listed.values() if r["provenance"]["drawer"] == second["id"])
    assert sorted(link["kind"] for link in berlin["lifecycle"]["links"]) == [
        "confirms",
        "contradicts",
    ]
    confirms = next(link for link in berlin["lifecycle"]["links"] if link["kind"] == "confirms")
    assert confirms["reason"] == "v1: same resolved subject, predicate and object"
    assert confirms["evidence"] == second["id"]
    # Before Paris was stated, no conflict: the inferred link counts, but Paris was not open.
    before = rels(graph, ctx, alice, as_of=(T0 + dt.timedelta(hours=30)).isoformat())
    assert {r["lifecycle"]["state"] for r in before} == {"current"}
    assert len(before) == 2


def test_multi_valued_predicates_get_no_contradiction(
    graph: Graph, palace: Palace, ctx: RequestContext
) -> None:
    for tool in ("Python", "Rust"):
        graph.records.record_extraction(
            drawer(palace, ctx, f"Alice uses {tool}."),
            [{"name": "Alice", "kind": "person"}, {"name": tool, "kind": "tool"}],
            [{"subject": "Alice", "predicate": "uses", "object": tool, "confidence": 0.6}],
            extractor="heuristic",
            job_id=None,
            valid_from=T0,
        )
    for row in rels(graph, ctx, entity_id(graph, "Alice", "person")):
        assert row["lifecycle"] == {"state": "current", "links": []}


def test_a_superseded_drawer_closes_its_facts_and_the_successor_supersedes_them(
    graph: Graph, palace: Palace, ctx: RequestContext, clock: Clock
) -> None:
    old = drawer(palace, ctx, "Alice is based in Berlin.")
    located(graph, old, "Berlin")
    closed_at = clock.advance(days=2)
    new = drawer(palace, ctx, "Alice is based in Paris.")
    new["valid_from"] = closed_at
    closed = graph.records.close_facts_of(old["id"], closed_at)
    assert [(r["valid_to"], r["provenance"]["drawer"]) for r in closed] == [(closed_at, old["id"])]
    assert graph.records.close_facts_of(old["id"], closed_at) == []
    located(graph, new, "Paris")
    assert graph.records.link_successor_facts(old["id"], new["id"]) == 1
    again = graph.records.link_successor_facts(old["id"], new["id"])
    assert again == 1  # found made, not duplicated
    alice = entity_id(graph, "Alice", "person")
    assert [r["to"] for r in rels(graph, ctx, alice)] == [entity_id(graph, "Paris", "place")]
    everything = rels(graph, ctx, alice, include_expired="true")
    states = {r["provenance"]["drawer"]: r["lifecycle"]["state"] for r in everything}
    assert states == {old["id"]: "superseded", new["id"]: "current"}
    berlin = next(r for r in everything if r["provenance"]["drawer"] == old["id"])
    [link] = [link for link in berlin["lifecycle"]["links"] if link["kind"] == "supersedes"]
    assert (link["origin"], link["reason"], link["evidence"]) == (
        "inferred",
        "v1: successor drawer replaced this source's earlier assertion",
        new["id"],
    )
    # At the old instant, Berlin was current and Paris did not hold yet.
    then = rels(graph, ctx, alice, as_of=(T0 + dt.timedelta(days=1)).isoformat())
    assert [(r["to"], r["lifecycle"]["state"]) for r in then] == [
        (entity_id(graph, "Berlin", "place"), "current")
    ]


def located_from(
    graph: Graph,
    source: dict,
    place: str,
    valid_from: dt.datetime,
    *,
    confidence: float = 0.6,
    predecessor: str | None = None,
) -> None:
    """`source` read as saying Alice is located in `place`, from `valid_from`."""
    graph.records.record_extraction(
        source,
        [{"name": "Alice", "kind": "person"}, {"name": place, "kind": "place"}],
        [
            {
                "subject": "Alice",
                "predicate": "located_in",
                "object": place,
                "confidence": confidence,
            }
        ],
        extractor="heuristic",
        job_id=None,
        valid_from=valid_from,
        predecessor=predecessor,
    )


def link_kinds(row: dict) -> list[str]:
    return sorted(link["kind"] for link in row["lifecycle"]["links"])


def test_assertions_whose_validity_does_not_overlap_neither_contradict_nor_confirm(
    graph: Graph, palace: Palace, ctx: RequestContext, clock: Clock
) -> None:
    berlin = drawer(palace, ctx, "Alice is based in Berlin.")
    located(graph, berlin, "Berlin")
    moved_at = clock.advance(days=2)
    graph.records.close_facts_of(berlin["id"], moved_at)
    # Another drawer (no lineage between them) states where Alice is from the day she moved.
    paris = drawer(palace, ctx, "Alice is based in Paris.")
    located_from(graph, paris, "Paris", moved_at)
    again = drawer(palace, ctx, "Alice was based in Berlin.")
    located_from(graph, again, "Berlin", moved_at)
    alice = entity_id(graph, "Alice", "person")
    every = {r["provenance"]["drawer"]: r for r in rels(graph, ctx, alice, include_expired="1")}
    # Berlin ended where Paris began (the end is exclusive): they never held together.
    assert link_kinds(every[berlin["id"]]) == []
    assert every[berlin["id"]]["lifecycle"]["state"] == "historical"
    # The two open ones did hold together, and disagree.
    assert link_kinds(every[paris["id"]]) == ["contradicts"]
    assert every[paris["id"]]["lifecycle"]["state"] == "conflicting"
    assert every[again["id"]]["lifecycle"]["state"] == "conflicting"
    for at in (T0, T0 + dt.timedelta(days=1)):
        then = rels(graph, ctx, alice, as_of=at.isoformat())
        assert [(r["provenance"]["drawer"], r["lifecycle"]["state"]) for r in then] == [
            (berlin["id"], "current")
        ]


def test_a_revision_supersedes_its_predecessors_facts_and_never_contradicts_them(
    graph: Graph, palace: Palace, ctx: RequestContext, clock: Clock
) -> None:
    # A file said Berlin; it was edited on day 1 (its `occurred_at`) and mined again on day 2,
    # which closed the old drawer's facts then: the two revisions' facts overlap on day 1.
    old = drawer(palace, ctx, "Alice is based in Berlin.")
    located(graph, old, "Berlin")
    edited_at = T0 + dt.timedelta(days=1)
    remined_at = clock.advance(days=2)
    graph.records.close_facts_of(old["id"], remined_at)
    new = drawer(palace, ctx, "Alice is based in Paris.")
    located_from(graph, new, "Paris", edited_at, predecessor=old["id"])
    assert graph.records.link_successor_facts(old["id"], new["id"]) == 1
    alice = entity_id(graph, "Alice", "person")
    every = {r["provenance"]["drawer"]: r for r in rels(graph, ctx, alice, include_expired="1")}
    assert link_kinds(every[old["id"]]) == ["supersedes"]
    assert (every[old["id"]]["lifecycle"]["state"], every[new["id"]]["lifecycle"]["state"]) == (
        "superseded",
        "current",
    )
    between = rels(graph, ctx, alice, as_of=(edited_at + dt.timedelta(hours=1)).isoformat())
    assert {r["provenance"]["drawer"]: r["lifecycle"]["state"] for r in between} == {
        old["id"]: "current",
        new["id"]: "current",
    }
    # A third drawer, no revision of either, does contradict the open one.
    other = drawer(palace, ctx, "Alice is based in Rome.")
    located(graph, other, "Rome")
    every = {r["provenance"]["drawer"]: r for r in rels(graph, ctx, alice, include_expired="1")}
    assert link_kinds(every[new["id"]]) == ["contradicts", "supersedes"]
    assert link_kinds(every[old["id"]]) == ["supersedes"]


def checkpoint_drawer(palace: Palace, ctx: RequestContext, text: str) -> dict:
    return drawer(palace, ctx, text)


def test_checkpoint_add_supersede_invalidate_link(
    graph: Graph, palace: Palace, ctx: RequestContext, clock: Clock, store: Store
) -> None:
    evidence = checkpoint_drawer(palace, ctx, "The backend is deployed on Fly.")
    fact = {"op": "add", "subject": "backend", "predicate": " Deployed_On ", "object": "Fly"}
    added = graph.facts.apply_fact(evidence, fact, "http")
    assert graph.facts.apply_fact(evidence, fact, "http") == added  # a replay adds nothing
    assert len(store.one("SELECT * FROM relates_to")) == 1
    backend = entity_id(graph, "backend")
    [row] = rels(graph, ctx, backend)
    assert (row["predicate"], row["confidence"], row["assertion"]) == (
        "deployed_on",
        1.0,
        evidence["id"],
    )
    assert "provenance" not in row

    t_supersede = clock.advance(days=1)
    correction = checkpoint_drawer(palace, ctx, "The backend moved to Hetzner.")
    superseded = graph.facts.apply_fact(
        correction,
        {
            "op": "supersede",
            "relationship_id": added["relationship"],
            "to": "Hetzner",
            "confidence": 0.9,
            "reason": "moved in January",
        },
        "http",
    )
    clock.advance(days=1)
    assert (
        graph.facts.apply_fact(
            correction,
            {"op": "supersede", "relationship_id": added["relationship"], "to": "Hetzner"},
            "http",
        )
        == superseded
    )
    [current] = rels(graph, ctx, backend)
    assert (current["id"], current["to"], current["predicate"], current["valid_from"]) == (
        superseded["relationship"],
        entity_id(graph, "Hetzner"),
        "deployed_on",
        t_supersede,
    )
    history = graph.reads.history(ctx, added["relationship"])
    assert [(a["id"], a["lifecycle"]["state"]) for a in history["assertions"]] == [
        (added["relationship"], "superseded"),
        (superseded["relationship"], "current"),
    ]
    old = history["assertions"][0]
    assert old["valid_to"] == t_supersede
    [link] = old["lifecycle"]["links"]
    assert (link["kind"], link["origin"], link["reason"], link["evidence"], link["at"]) == (
        "supersedes",
        "explicit",
        "moved in January",
        correction["id"],
        t_supersede,
    )
    # The same history from the successor; and at a past instant, the old state.
    assert (
        graph.reads.history(ctx, superseded["relationship"])["assertions"] == history["assertions"]
    )
    past = graph.reads.history(
        ctx, added["relationship"], as_of=(T0 + dt.timedelta(hours=12)).isoformat()
    )
    assert [(a["id"], a["lifecycle"]["state"]) for a in past["assertions"]] == [
        (added["relationship"], "current")
    ]

    t_invalidate = clock.advance(days=1)
    retraction = checkpoint_drawer(palace, ctx, "We no longer deploy the backend anywhere.")
    graph.facts.apply_fact(
        retraction, {"op": "invalidate", "relationship_id": superseded["relationship"]}, "http"
    )
    assert rels(graph, ctx, backend) == []
    [*_, last] = graph.reads.history(ctx, added["relationship"])["assertions"]
    assert (last["lifecycle"]["state"], last["valid_to"]) == ("invalidated", t_invalidate)
    invalidates = [x for x in last["lifecycle"]["links"] if x["kind"] == "invalidates"]
    assert [(x["reason"], x["evidence"]) for x in invalidates] == [
        ("invalidated by a checkpoint", retraction["id"])
    ]


def test_checkpoint_link_makes_an_explicit_conflict(
    graph: Graph, palace: Palace, ctx: RequestContext, clock: Clock
) -> None:
    one = checkpoint_drawer(palace, ctx, "Standups are at nine.")
    two = checkpoint_drawer(palace, ctx, "Standups are at ten.")
    a = graph.facts.apply_fact(
        one,
        {"op": "add", "subject": "standup", "predicate": "at", "object": "nine", "confidence": 0.4},
        "http",
    )["relationship"]
    b = graph.facts.apply_fact(
        two,
        {"op": "add", "subject": "standup", "predicate": "at", "object": "ten", "confidence": 0.7},
        "http",
    )["relationship"]
    standup = entity_id(graph, "standup")
    assert {r["lifecycle"]["state"] for r in rels(graph, ctx, standup)} == {"current"}
    linked_at = clock.advance(days=1)
    third = checkpoint_drawer(palace, ctx, "These disagree.")
    graph.facts.apply_fact(
        third,
        {
            "op": "link",
            "relationship_id": b,
            "other_id": a,
            "kind": "contradicts",
            "reason": " they disagree ",
        },
        "http",
    )
    now = rels(graph, ctx, standup)
    assert {r["lifecycle"]["state"] for r in now} == {"conflicting"}
    assert {r["lifecycle"]["preferred"] for r in now} == {b}
    [link] = now[0]["lifecycle"]["links"]
    assert (link["origin"], link["reason"], link["at"]) == ("explicit", "they disagree", linked_at)
    # Explicit links count from when they were made.
    before = rels(graph, ctx, standup, as_of=(linked_at - dt.timedelta(hours=1)).isoformat())
    assert {r["lifecycle"]["state"] for r in before} == {"current"}


@pytest.mark.parametrize(
    ("fact", "error"),
    [
        ({"op": "supersede", "relationship_id": "r"}, RelationshipNotFound),
        (
            {"op": "invalidate", "relationship_id": "00000000-0000-4000-8000-000000000000"},
            RelationshipNotFound,
        ),
        (
            {
                "op": "link",
                "relationship_id": "r",
                "other_id": "q",
                "kind": "refines",
                "reason": "x",
            },
            RelationshipNotFound,
        ),
        ({"op": "add", "subject": "s", "predicate": " ", "object": "o"}, EmptyLabel),
        (
            {"op": "add", "subject": {"name": "s", "kind": ""}, "predicate": "p", "object": "o"},
            EmptyLabel,
        ),
        ({"op": "add", "subject": "", "predicate": "p", "object": "o"}, InputInvalid),
        (
            {
                "op": "add",
                "subject": {"id": "00000000-0000-4000-8000-000000000000"},
                "predicate": "p",
                "object": "o",
            },
            EntityNotFound,
        ),
    ],
)
def test_bad_facts_fail(
    graph: Graph, palace: Palace, ctx: RequestContext, fact: dict, error: type
) -> None:
    evidence = checkpoint_drawer(palace, ctx, "evidence")
    with pytest.raises(error) as refused:
        graph.facts.apply_fact(evidence, fact, "http")
    if error is RelationshipNotFound:
        assert refused.value.code == "memcastle::graph::relationship_not_found"
        assert refused.value.status == 404


def test_fact_labels_checked_at_submission() -> None:
    check_fact_labels({"op": "add", "subject": "s", "predicate": "p", "object": "o"})
    check_fact_labels({"op": "link", "kind": "refines", "reason": "r"})
    for fact in (
        {"op": "add", "subject": "s", "object": "o"},
        {"op": "add", "subject": "s", "predicate": "  ", "object": "o"},
        {"op": "supersede", "relationship_id": "r", "predicate": ""},
        {"op": "add", "subject": {"name": "s", "kind": " "}, "predicate": "p", "object": "o"},
    ):
        with pytest.raises(EmptyLabel):
            check_fact_labels(fact)


def test_entities_can_be_named_by_id_or_by_name_and_kind(
    graph: Graph, palace: Palace, ctx: RequestContext
) -> None:
    alice = graph.entities.resolve("Alice", "person").entity["id"]
    evidence = checkpoint_drawer(palace, ctx, "Alice owns the roadmap.")
    added = graph.facts.apply_fact(
        evidence,
        {
            "op": "add",
            "subject": alice,
            "predicate": "owns",
            "object": {"name": "Roadmap", "kind": " Concept "},
        },
        "http",
    )
    [row] = rels(graph, ctx, alice)
    assert row["id"] == added["relationship"]
    assert graph.reads.show_entity(ctx, row["to"])["kind"] == "concept"


def test_an_entity_by_id(graph: Graph) -> None:
    alice = graph.entities.resolve("Alice", "person").entity
    assert graph.entities.entity(alice["id"])["name"] == "Alice"
    assert graph.entities.find(alice["id"].upper()) == graph.entities.entity(alice["id"])
    missing = "00000000-0000-4000-8000-000000000000"
    assert graph.entities.find(missing) is None
    with pytest.raises(EntityNotFound):
        graph.entities.entity(missing)
    with pytest.raises(InputInvalid):
        graph.entities.entity("not-an-id")


def test_reads_refuse_disabled_and_writes_refuse_read_only(
    graph: Graph, palace: Palace, ctx: RequestContext
) -> None:
    alice = graph.entities.resolve("Alice", "person").entity["id"]
    disabled = RequestContext.build(mode="disabled")
    read_only = RequestContext.build(mode="read_only")
    for read in (
        lambda c: graph.reads.list_entities(c),
        lambda c: graph.reads.show_entity(c, alice),
        lambda c: graph.reads.relationships(c, alice),
        lambda c: graph.reads.mentions(c, alice),
        lambda c: graph.reads.candidates(c, alice),
        lambda c: graph.reads.overview(c),
    ):
        read(read_only)
        with pytest.raises(ModeForbidden):
            read(disabled)
    source = drawer(palace, ctx, "Alice")
    with pytest.raises(ModeForbidden):
        graph.entities.mention(read_only, source["id"], {"name": "Alice", "kind": "person"})
    with pytest.raises(ModeForbidden):
        graph.entities.add_alias(read_only, alice, {"alias": "Ally"})


def test_mention_route_semantics(graph: Graph, palace: Palace, ctx: RequestContext) -> None:
    source = drawer(palace, ctx, "Node.js and NodeJS are one.")
    first = graph.entities.mention(ctx, source["id"], {"name": "Node.js", "kind": "Tool"})
    assert first["created"] and first["observation"]["rule"] == "new"
    second = graph.entities.mention(ctx, source["id"], {"name": "NodeJS", "kind": "tool"})
    assert not second["created"]
    assert second["entity"]["id"] == first["entity"]["id"]
    with pytest.raises(DrawerNotFound):
        graph.entities.mention(
            ctx, "00000000-0000-4000-8000-000000000000", {"name": "x", "kind": "y"}
        )
    with pytest.raises(EmptyLabel):
        graph.entities.mention(ctx, source["id"], {"name": "x", "kind": " "})
    with pytest.raises(InputInvalid):
        graph.entities.mention(ctx, source["id"], {"name": "x", "kind": "y", "extra": 1})


def test_as_of_and_include_expired_cannot_be_combined(graph: Graph, ctx: RequestContext) -> None:
    alice = graph.entities.resolve("Alice", "person").entity["id"]
    with pytest.raises(InputInvalid) as refused:
        graph.reads.relationships(ctx, alice, include_expired="true", as_of="2026-01-01")
    assert "as_of" in refused.value.message and "include_expired" in refused.value.message
    with pytest.raises(EntityNotFound):
        graph.reads.relationships(ctx, "00000000-0000-4000-8000-000000000000")


def test_neighbourhood_and_overview(graph: Graph, palace: Palace, ctx: RequestContext) -> None:
    source = drawer(palace, ctx, "chain")
    names = ["Aaaa", "Bbbb", "Cccc", "Dddd", "Eeee"]
    graph.records.record_extraction(
        source,
        [{"name": n, "kind": "concept"} for n in names],
        [
            {"subject": a, "predicate": "related_to", "object": b, "confidence": 0.5}
            for a, b in itertools.pairwise(names)
        ],
        extractor="heuristic",
        job_id=None,
        valid_from=T0,
    )
    start = entity_id(graph, "Aaaa", "concept")
    for depth, reached in ((1, 2), (2, 3), (3, 4)):
        answer = graph.reads.overview(ctx, entity=start, depth=str(depth))
        assert len(answer["entities"]) == reached
        assert len(answer["relationships"]) == reached - 1
        assert answer["entities"][0]["distance"] == 0
    with pytest.raises(InputInvalid):
        graph.reads.overview(ctx, entity=start, depth="4")
    overview = graph.reads.overview(ctx)
    assert overview["counts"] == {
        "entities": 5,
        "relationships": 4,
        "mentions": 5,
        "fact_links": 0,
    }
    assert [e["relationships"] for e in overview["top"]] == [2, 2, 2, 1, 1]


def test_graph_writes_are_announced_by_entity_id_only(
    store: Store, palace: Palace, ctx: RequestContext, clock: Clock
) -> None:
    import asyncio

    events = EventBus()
    graph = build_graph(store, clock, events)
    evidence = drawer(palace, ctx, "The api is written in Go.")

    async def run() -> list[dict[str, Any]]:
        subscription = events.subscribe()
        graph.facts.apply_fact(
            evidence,
            {"op": "add", "subject": "api", "predicate": "written_in", "object": "go"},
            "http",
        )
        seen = []
        while (event := await subscription.next(0.01)) is not None:
            seen.append(dict(event.data))
        return seen

    seen = asyncio.run(run())
    api, go = entity_id(graph, "api"), entity_id(graph, "go")
    assert {(e["kind"], e["action"], e["id"]) for e in seen} == {
        ("entity", "created", api),
        ("entity", "created", go),
        ("entity", "updated", api),
        ("entity", "updated", go),
    }
    assert all(set(e) == {"kind", "action", "id"} for e in seen)


def test_linking_a_successor_announces_the_entities_of_both_facts(
    graph: Graph, palace: Palace, ctx: RequestContext, clock: Clock
) -> None:
    import asyncio

    old = drawer(palace, ctx, "Alice is based in Berlin.")
    located(graph, old, "Berlin")
    closed_at = clock.advance(days=1)
    graph.records.close_facts_of(old["id"], closed_at)
    new = drawer(palace, ctx, "Alice is based in Paris.")
    located_from(graph, new, "Paris", closed_at, predecessor=old["id"])

    async def run() -> list[dict[str, Any]]:
        subscription = graph.events.subscribe()
        graph.records.link_successor_facts(old["id"], new["id"])
        seen = []
        while (event := await subscription.next(0.01)) is not None:
            seen.append(dict(event.data))
        return seen

    seen = asyncio.run(run())
    # Berlin's fact now reads `superseded`: a reader of any of the three must look again.
    ends = {
        entity_id(graph, name, kind)
        for name, kind in [("Alice", "person"), ("Berlin", "place"), ("Paris", "place")]
    }
    assert {(e["kind"], e["action"], e["id"]) for e in seen} == {
        ("entity", "updated", end) for end in ends
    }
