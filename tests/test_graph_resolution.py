"""Entity resolution (palace.md section 8): the key, the five rules, candidates and the
`entity_fuzzy` switch, as pure functions and through `EntityService.resolve` on a real store."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from graph import resolution
from graph.entities import EmptyLabel, EntityService
from graph.repositories.entities import EntityRepository
from kernel.errors import InputInvalid
from kernel.events import EventBus
from kernel.store import Store


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Node.js", "nodejs"),
        ("NodeJS", "nodejs"),
        ("nodejs", "nodejs"),
        ("C++", "c++"),
        ("C#", "c#"),
        ("F# / C#", "f# c#"),
        ("O'Reilly", "oreilly"),
        ("O\u2019Reilly", "oreilly"),
        ("foo-bar", "foo bar"),
        ("  Foo   Bar  ", "foo bar"),
        ("foo_bar", "foo bar"),
        ("Zürich", "zürich"),
        ("v1.2.3", "v123"),
        ("...", ""),
    ],
)
def test_key(name: str, expected: str) -> None:
    assert resolution.key(name) == expected


@pytest.mark.parametrize(
    ("a", "b", "edits"),
    [
        ("kubernetes", "kubernetes", 0),
        ("kubernetes", "kubernets", 1),  # deletion
        ("kubernetes", "kubernetess", 1),  # insertion
        ("kubernetes", "kubernates", 1),  # substitution
        ("kubernetes", "kubrenetes", 1),  # adjacent transposition
        ("kubernetes", "kubrenetse", 2),
        ("kubernetes", "k8s", 3),  # more than the limit
    ],
)
def test_distance(a: str, b: str, edits: int) -> None:
    assert resolution.distance(a, b) == edits
    assert resolution.distance(b, a) == edits


def test_every_pair_within_two_edits_shares_a_term() -> None:
    """What makes the indexed lookup complete for rule 4 and the candidates."""
    stored = "postgresql"
    for near in ("postgresq", "postgrexql", "potsgresql", "pstgresqlx", "postgres", "pxstgresqy"):
        assert resolution.distance(stored, near) <= 2
        assert resolution.fuzzy_terms(stored) & resolution.lookup_terms(near), near
    short = "vuex"
    assert resolution.fuzzy_terms(short) & resolution.lookup_terms("vue")


def entity(key_: str, name: str | None = None, kind: str = "tool", **extra: Any) -> dict:
    name = name or key_
    return {"id": f"id-{name}-{kind}", "name": name, "kind": kind, "key": key_, **extra}


def test_rule_order_exact_then_key_then_alias() -> None:
    exact = entity("nodejs", "NodeJS")
    keyed = entity("nodejs", "Node.js")
    aliased = entity("node", "Node", alias_keys=["nodejs"])
    decision = resolution.decide(
        "NodeJS", "tool", by_name=[exact], by_key=[keyed, exact], by_alias=[aliased]
    )
    assert (decision.rule, decision.entity) == ("exact", exact)
    decision = resolution.decide("nodejs", "tool", by_key=[keyed], by_alias=[aliased])
    assert (decision.rule, decision.entity) == ("normalized", keyed)
    decision = resolution.decide("nodejs", "tool", by_alias=[aliased])
    assert (decision.rule, decision.entity) == ("alias", aliased)


def test_kinds_must_match_but_an_other_observation_matches_any() -> None:
    person = entity("alice", "Alice", kind="person")
    assert resolution.decide("Alice", "tool", by_name=[person]).rule == "new"
    assert resolution.decide("Alice", "other", by_name=[person]).entity == person
    # An existing `other` entity is not matched by a typed observation.
    other = entity("redis", "Redis", kind="other")
    assert resolution.decide("Redis", "tool", by_name=[other]).rule == "new"


def test_an_other_observation_prefers_its_own_kind_then_the_oldest() -> None:
    tool = entity("redis", "Redis", kind="tool", created_at="2026-01-02")
    person = entity("redis", "Redis", kind="person", created_at="2026-01-01")
    other = entity("redis", "Redis", kind="other", created_at="2026-01-03")
    assert resolution.decide("Redis", "other", by_name=[tool, person, other]).entity == other
    assert resolution.decide("Redis", "other", by_name=[tool, person]).entity == person


def test_typo_needs_six_characters_and_exactly_one_entity() -> None:
    postgres = entity("postgres")
    decision = resolution.decide("Postgress", "tool", nearby=[postgres])
    assert (decision.rule, decision.entity["name"]) == ("typo", "postgres")
    assert decision.confidence == pytest.approx(1 - 1 / 9, abs=1e-4)
    # Five characters: never a typo match, a candidate instead (1 edit, similarity 0.8).
    short = resolution.decide("reddis", "tool", nearby=[entity("redis")])
    assert short.rule == "typo"
    too_short = resolution.decide("Rediz", "tool", nearby=[entity("redis")])
    assert too_short.rule == "new"
    assert [(c.entity["key"], c.similarity) for c in too_short.candidates] == [("redis", 0.8)]
    # Two entities one edit away: a new entity linked to both.
    two = resolution.decide(
        "jasmine",
        "person",
        nearby=[entity("jasmina", kind="person"), entity("jazmine", kind="person")],
    )
    assert two.rule == "new"
    assert sorted(c.entity["key"] for c in two.candidates) == ["jasmina", "jazmine"]


def test_candidates_are_two_edits_at_three_quarters_similarity() -> None:
    decision = resolution.decide(
        "Kubernetse2",
        "tool",
        nearby=[entity("kubernetes"), entity("alicia"), entity("kubernetes2", "K2", kind="person")],
    )
    assert decision.rule == "new"
    assert [(c.entity["key"], c.similarity) for c in decision.candidates] == [
        ("kubernetes", round(1 - 2 / 11, 4))
    ]
    # Two edits in a seven-character name are below 0.75: no candidate.
    assert resolution.decide("Alexiaa", "tool", nearby=[entity("alicia")]).candidates == []


def test_fuzzy_off_keeps_rules_one_to_three_only() -> None:
    postgres = entity("postgres")
    decision = resolution.decide("Postgress", "tool", nearby=[postgres], fuzzy=False)
    assert (decision.rule, decision.candidates) == ("new", [])
    assert resolution.decide("postgres", "tool", by_key=[postgres], fuzzy=False).rule == (
        "normalized"
    )


# Through the service, on a real store.


@pytest.fixture
def events() -> EventBus:
    return EventBus()


@pytest.fixture
def graph(store: Store, events: EventBus) -> EntityService:
    return EntityService(EntityRepository(store), events)


def test_spellings_converge_and_are_recorded_as_aliases(graph: EntityService, store: Store) -> None:
    first = graph.resolve("Node.js", "tool")
    assert (first.rule, first.confidence) == ("new", 1.0)
    second = graph.resolve("NodeJS", "tool")
    third = graph.resolve("nodejs", "tool")
    again = graph.resolve("Node.js", "tool")
    assert {second.entity["id"], third.entity["id"], again.entity["id"]} == {first.entity["id"]}
    assert (second.rule, third.rule, again.rule) == ("normalized", "normalized", "exact")
    assert again.entity["name"] == "Node.js"  # never rewritten
    assert again.entity["aliases"] == ["NodeJS", "nodejs"]
    # An alias of another key converges too.
    graph.add_alias(ctx_full(), first.entity["id"], {"alias": "Node"})
    assert graph.resolve("node", "tool").rule == "alias"
    assert graph.resolve("NODE", "tool").entity["id"] == first.entity["id"]
    assert len(store.one("SELECT * FROM entity")) == 1


def ctx_full():
    from kernel.context import RequestContext

    return RequestContext.build()


def test_typo_and_candidates_through_the_store(graph: EntityService, store: Store) -> None:
    kubernetes = graph.resolve("Kubernetes", "tool").entity
    typo = graph.resolve("Kubernets", "tool")
    assert (typo.rule, typo.entity["id"]) == ("typo", kubernetes["id"])
    assert typo.entity["aliases"] == ["Kubernets"]
    # A different kind never matches.
    assert graph.resolve("Kubernets", "project").rule == "new"
    far = graph.resolve("Kubernetesxy", "tool")
    assert far.rule == "new"
    edges = store.one("SELECT * FROM possibly_same_as")
    assert [(e["in"], e["out"], e["similarity"]) for e in edges] == [
        (far.entity["id"], kubernetes["id"], round(1 - 2 / 12, 4))
    ]


def test_fuzzy_off_through_the_store(store: Store) -> None:
    graph = EntityService(EntityRepository(store), fuzzy=False)
    first = graph.resolve("Postgres", "tool").entity
    assert graph.resolve("Postgress", "tool").rule == "new"
    assert graph.resolve("POSTGRES", "tool").entity["id"] == first["id"]
    assert store.one("SELECT * FROM possibly_same_as") == []


def test_new_entities_are_announced_by_id_only(graph: EntityService, events: EventBus) -> None:
    import asyncio

    async def collect() -> list[dict]:
        subscription = events.subscribe()
        created = graph.resolve("Alice", "person").entity
        graph.resolve("alice", "person")
        found = []
        while (event := await subscription.next(0.01)) is not None:
            found.append(dict(event.data))
        return [created, *found]

    created, *seen = asyncio.run(collect())
    assert seen == [
        {"kind": "entity", "action": "created", "id": created["id"]},
        {"kind": "entity", "action": "updated", "id": created["id"]},
    ]


def test_blank_names_and_kinds_are_refused(graph: EntityService) -> None:
    with pytest.raises(InputInvalid):
        graph.resolve("   ", "tool")
    with pytest.raises(EmptyLabel) as refused:
        graph.resolve("Alice", "  ")
    assert refused.value.code == "memcastle::graph::empty_label"
    assert graph.resolve("Alice", " Person ").entity["kind"] == "person"


def test_names_of_one_answer_converge_on_each_other(graph: EntityService, store: Store) -> None:
    found = graph.resolve_many(
        [("Kubernetes", "tool"), ("Kubernets", "tool"), ("kubernetes", "tool"), ("Helm", "tool")]
    )
    assert [r.rule for r in found] == ["new", "typo", "normalized", "new"]
    assert len({r.entity["id"] for r in found[:3]}) == 1
    assert found[2].entity["aliases"] == ["Kubernets", "kubernetes"]
    assert len(store.one("SELECT * FROM entity")) == 2


def test_overlong_names_are_refused(graph: EntityService) -> None:
    with pytest.raises(InputInvalid):
        graph.resolve("x" * 501, "tool")


def test_the_new_entities_of_one_answer_are_filed_with_their_aliases(
    graph: EntityService, store: Store
) -> None:
    graph.resolve_many([("Kubernetes", "tool"), ("Kubernets", "tool"), ("Helm", "tool")])
    # The spelling became an alias before the entity was written, and is filed under its key.
    assert graph.resolve("kubernets", "tool").rule == "alias"
    assert graph.resolve("Helm", "tool").rule == "exact"
    assert len(store.one("SELECT * FROM entity")) == 2


class StaleLookups(EntityRepository):
    """Looks names up as they were before another writer created some of them."""

    def resolution_pool(self, names: Iterable[str], keys: Iterable[str]) -> list[dict[str, Any]]:
        if self.stale:
            self.stale = False
            return []
        return super().resolution_pool(names, keys)

    stale = True


def test_a_name_another_writer_created_meanwhile_resolves_to_theirs(
    graph: EntityService, store: Store, events: EventBus
) -> None:
    theirs = graph.resolve("Helm", "tool").entity
    racing = EntityService(StaleLookups(store), events, fuzzy=False)
    found = racing.resolve_many([("Kubernetes", "tool"), ("Helm", "tool"), ("HELM", "tool")])
    assert [r.rule for r in found] == ["new", "exact", "normalized"]
    assert found[1].entity["id"] == found[2].entity["id"] == theirs["id"]
    assert found[2].entity["aliases"] == ["HELM"]
    names = sorted(row["name"] for row in store.one("SELECT name FROM entity"))
    assert names == ["Helm", "Kubernetes"]


class CountingLookups(EntityRepository):
    """Counts the name lookups."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.lookups = 0

    def resolution_pool(self, names: Iterable[str], keys: Iterable[str]) -> list[dict[str, Any]]:
        self.lookups += 1
        return super().resolution_pool(names, keys)


def test_remembered_names_resolve_without_a_lookup(store: Store) -> None:
    repository = CountingLookups(store)
    graph = EntityService(repository)
    first = graph.resolve_many([("Helm", "tool"), ("helm", "tool")], remembered=True)
    assert [r.rule for r in first] == ["new", "normalized"]
    helm = first[0].entity["id"]
    # Helm of kind tool is remembered; an `other` observation (any kind matches it) and a
    # spelling are looked up.
    looked = repository.lookups
    again = graph.resolve_many(
        [("Helm", "tool"), ("Helm", "other"), ("helm", "tool")], remembered=True
    )
    assert [(r.rule, r.entity["id"]) for r in again] == [
        ("exact", helm),
        ("exact", helm),
        ("normalized", helm),
    ]
    assert repository.lookups == looked + 1
    assert graph.resolve_many([("Helm", "tool")], remembered=True)[0].entity["id"] == helm
    assert repository.lookups == looked + 1
    # Without `remembered` a name is always looked up, so its view has every alias.
    assert graph.resolve_many([("Helm", "tool")])[0].entity["aliases"] == ["helm"]
    assert repository.lookups == looked + 2
